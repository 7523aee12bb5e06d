//! `cargo xtask test`: the project's one test command (the README's, and CI's).
//!
//! Installs the system packages it needs, stages the release libraries
//! (`cargo xtask stage`; the end-to-end tests load them from there through
//! `OMPTARGET_STAGE_DIR`), then runs every test of the workspace with `cargo test`, and ends with the plain summary line
//! `N passed, N failed` counted from cargo's per-binary result lines.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Adds up cargo's `test result: ok. 12 passed; 0 failed; ...` lines.
fn count(line: &str, passed: &mut u64, failed: &mut u64) {
    let Some(rest) = line.trim().strip_prefix("test result: ") else {
        return;
    };
    for part in rest.split(';') {
        let words: Vec<&str> = part.split_whitespace().collect();
        for w in words.windows(2) {
            let n = w[0]
                .trim_start_matches("ok.")
                .trim_start_matches("FAILED.")
                .parse::<u64>();
            match (n, w[1]) {
                (Ok(n), "passed") => *passed += n,
                (Ok(n), "failed") => *failed += n,
                _ => {}
            }
        }
    }
}

/// `cargo xtask test [extra cargo test args]`.
pub fn run_command(args: &[String]) -> Result<(), String> {
    crate::setup::ensure_packages()?;
    // The end-to-end tests run the staged libraries, exactly as a user would.
    let staged = crate::stage::stage()?;
    let stage_root = staged
        .sim_dir
        .parent()
        .map(|p| p.to_path_buf())
        .ok_or("the stage directory has no parent")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Build first so the cdylibs the end-to-end tests load exist.
    let status = Command::new(&cargo)
        .current_dir(crate::stage::workspace_root())
        .args(["build", "--workspace"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build failed ({status})"));
    }
    let mut child = Command::new(&cargo)
        .current_dir(crate::stage::workspace_root())
        .args(["test", "--workspace", "--no-fail-fast"])
        .args(args)
        .env("OMPTARGET_STAGE_DIR", &stage_root)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    let (mut passed, mut failed) = (0u64, 0u64);
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            count(&line, &mut passed, &mut failed);
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo test: {e}"))?;
    println!("{passed} passed, {failed} failed");
    if status.success() && failed == 0 {
        Ok(())
    } else {
        Err(format!("tests failed ({status})"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_cargo_result_lines() {
        let (mut p, mut f) = (0, 0);
        super::count("test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s", &mut p, &mut f);
        super::count(
            "test result: FAILED. 3 passed; 2 failed; 0 ignored",
            &mut p,
            &mut f,
        );
        super::count("running 5 tests", &mut p, &mut f);
        assert_eq!((p, f), (15, 2));
    }
}
