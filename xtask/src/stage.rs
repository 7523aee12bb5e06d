//! `cargo xtask stage`: builds the plugin and the virtual device in release
//! mode and lays them out as `README.md` describes:
//!
//! - `target/stage/plugin/libomptarget.rtl.amdgpu.nextgen.so` and a
//!   symbolic link to it, `libomptarget.rtl.amdgpu.so` (the two names
//!   libomptarget 16 tries);
//! - `target/stage/sim/libhsa-runtime64.so.1` and a link to it,
//!   `libhsa-runtime64.so`;
//! - `target/stage/bin/amdhsa-loader` (the standalone loader) and
//!   `amdgpu-kernel-replay` (the kernel replay tool, `replay/`);
//! - the device side of the loader (`bin/amdgpu-cc`, `device/`, `oracle/`),
//!   see `device.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the parent of `xtask/`).
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).unwrap_or(here)
}

/// The cargo target directory (honours `CARGO_TARGET_DIR`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_absolute() {
                p
            } else {
                workspace_root().join(p)
            }
        })
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// Where the staged libraries go.
pub struct Staged {
    /// `target/stage/plugin`.
    pub plugin_dir: PathBuf,
    /// `target/stage/sim`.
    pub sim_dir: PathBuf,
    /// `target/stage/bin` (holds `amdhsa-loader`).
    pub bin_dir: PathBuf,
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    // Write to a temporary name and rename, so a running program never sees a half file.
    let tmp = to.with_extension(format!("tmp-stage-{}", std::process::id()));
    std::fs::copy(from, &tmp)
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), tmp.display()))?;
    std::fs::rename(&tmp, to)
        .map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), to.display()))
}

/// The plugin's two names, as libomptarget 16 tries them: the file, then a
/// symbolic link to it.
pub const PLUGIN_NAMES: [&str; 2] = [
    "libomptarget.rtl.amdgpu.nextgen.so",
    "libomptarget.rtl.amdgpu.so",
];

/// The virtual device's two names, ROCm's: the file (the SONAME, see
/// `sim/build.rs`), then the development link to it.
pub const SIM_NAMES: [&str; 2] = ["libhsa-runtime64.so.1", "libhsa-runtime64.so"];

/// Makes `link` a symbolic link to `target` (relative to the link's
/// directory), replacing whatever `link` was by a rename, so a program
/// starting meanwhile finds the old file or the new link, never nothing.
fn symlink(target: &str, link: &Path) -> Result<(), String> {
    let tmp = link.with_extension(format!("tmp-stage-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)
        .map_err(|e| format!("linking {} to {target}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, link)
        .map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), link.display()))
}

/// Builds (release) and stages both libraries and the loader.
pub fn stage() -> Result<Staged, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "omptarget-amdgpu",
            "-p",
            "sim",
            "-p",
            "amdhsa-loader",
            "-p",
            "amdgpu-kernel-replay",
        ])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build --release failed ({status})"));
    }
    let release = target_dir().join("release");
    let stage = target_dir().join("stage");
    let plugin_dir = stage.join("plugin");
    let sim_dir = stage.join("sim");
    let bin_dir = stage.join("bin");
    for d in [&plugin_dir, &sim_dir, &bin_dir] {
        std::fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    }
    copy(
        &release.join("libomptarget_amdgpu.so"),
        &plugin_dir.join(PLUGIN_NAMES[0]),
    )?;
    symlink(PLUGIN_NAMES[0], &plugin_dir.join(PLUGIN_NAMES[1]))?;
    copy(
        &release.join("libhsa_runtime64.so"),
        &sim_dir.join(SIM_NAMES[0]),
    )?;
    symlink(SIM_NAMES[0], &sim_dir.join(SIM_NAMES[1]))?;
    for tool in ["amdhsa-loader", "amdgpu-kernel-replay"] {
        copy(&release.join(tool), &bin_dir.join(tool))?;
    }
    crate::device::stage_device(&stage, &sim_dir)?;
    Ok(Staged {
        plugin_dir,
        sim_dir,
        bin_dir,
    })
}

/// `cargo xtask stage`.
pub fn run_command(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("stage takes no arguments (got {a:?})"));
    }
    let staged = stage()?;
    eprintln!("stage: plugin in {}", staged.plugin_dir.display());
    eprintln!("stage: virtual device in {}", staged.sim_dir.display());
    eprintln!(
        "stage: loader and replay tool in {}",
        staged.bin_dir.display()
    );
    Ok(())
}
