//! `cargo xtask setup`: installs the Debian packages the project needs
//! (DEVELOPERS.md lists them) when any is missing.

use crate::cmd::run;
use std::process::Command;

/// The Debian bookworm packages the build, the tests and the demo use.
pub const PACKAGES: &[&str] = &[
    "clang-16",
    "clang-tools-16",
    "lld-16",
    "llvm-16",
    "libomp-16-dev",
    "rocm-device-libs",
    "libclang-16-dev",
    "libhsa-runtime-dev",
    "libllvmlibc-19-dev",
    "llvm-16-tools",
];

/// What `cargo xtask libc-gpu` needs on top of [`PACKAGES`]: clang-19 and
/// its tools for the device build, Python's YAML module for the library's
/// header generator, and ROCm's HSA headers for LLVM's loader.
pub const LIBC_GPU_PACKAGES: &[&str] = &[
    "clang-19",
    "lld-19",
    "llvm-19",
    "libllvmlibc-19-dev",
    "libhsa-runtime-dev",
    "python3",
    "python3-yaml",
    "xz-utils",
];

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout).contains("install ok installed")
        })
        .unwrap_or(false)
}

pub(crate) fn privileged(args: &[&str]) -> Command {
    // SAFETY-free check of root: `id -u` prints 0 for root.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut c = if root {
        Command::new(args[0])
    } else {
        let mut c = Command::new("sudo");
        c.arg(args[0]);
        c
    };
    c.args(&args[1..]);
    c.env("DEBIAN_FRONTEND", "noninteractive");
    c
}

/// Installs whatever of [`PACKAGES`] is missing.
pub fn ensure_packages() -> Result<(), String> {
    ensure(PACKAGES)
}

/// Installs whatever of `packages` is missing (apt-get, as root or via sudo).
pub fn ensure(packages: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = packages.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        eprintln!(
            "setup: all {} system packages are installed",
            packages.len()
        );
        return Ok(());
    }
    eprintln!("setup: installing {}", missing.join(" "));
    run(&mut privileged(&["apt-get", "update", "-q"]))?;
    let mut args = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter());
    run(&mut privileged(&args))
}

/// `cargo xtask setup`.
pub fn run_command(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("setup takes no arguments (got {a:?})"));
    }
    ensure_packages()?;
    eprintln!(
        "setup: all {} system packages are installed",
        PACKAGES.len()
    );
    Ok(())
}
