//! Running external commands and making directories, with errors that say
//! what failed (shared by every xtask command).

use std::path::Path;
use std::process::Command;

/// Runs `cmd` with inherited stdio.
///
/// Errors: the program cannot be started, or exits unsuccessfully; the
/// message shows the command line and the exit status.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed with {status}"))
    }
}

/// Creates `d` and its parents. Errors: the path and the I/O error.
pub(crate) fn mkdir(d: &Path) -> Result<(), String> {
    std::fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))
}
