//! `cargo xtask setup`: installs the Debian packages the project needs
//! ([`PACKAGES`] lists them, as does `README.md`) when any is missing.
//!
//! Every setup step (an `apt-get update`, one `apt-get install`, an
//! `apt-get source`, a `deb-src` entry) prints one line, and one line per
//! package installed; the commands' own output goes to `target/setup.log`
//! ([`log_path`]), which the error names when a step fails, with its last
//! lines.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The Debian bookworm packages the build, the tests and the demo use.
pub const PACKAGES: &[&str] = &[
    "clang-16",
    "clang-tools-16",
    "lld-16",
    "llvm-16",
    "llvm-16-dev",
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

/// The file every setup step's output is appended to: `target/setup.log`.
pub fn log_path() -> PathBuf {
    crate::stage::target_dir().join("setup.log")
}

/// Lines of the log an error shows.
const TAIL_LINES: usize = 12;

/// The last [`TAIL_LINES`] lines of the log at `path`, indented.
fn log_tail(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    lines[from..].iter().map(|l| format!("\n  | {l}")).collect()
}

/// Runs one setup step: prints `setup: WHAT ...` and, on the same line,
/// `ok (N s)` or `FAILED`; the command's stdout and stderr are appended to
/// [`log_path`] under a header naming the command.
///
/// Errors: the command cannot start or fails; the message names the step,
/// the exit status and the log, and shows the log's last lines.
pub(crate) fn step(what: &str, cmd: &mut Command) -> Result<(), String> {
    logged_step("setup", &log_path(), what, cmd)
}

/// [`step`] for another command: the line starts with `prefix:` and the
/// output goes to `path` (`cargo xtask package` logs to its own file).
pub(crate) fn logged_step(
    prefix: &str,
    path: &std::path::Path,
    what: &str,
    cmd: &mut Command,
) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        crate::cmd::mkdir(dir)?;
    }
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    let _ = writeln!(log, "==== {what}: {cmd:?}");
    let err_log = log
        .try_clone()
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    eprint!("{prefix}: {what} ... ");
    let _ = std::io::stderr().flush();
    let t0 = Instant::now();
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err_log))
        .status();
    match status {
        Ok(s) if s.success() => {
            eprintln!("ok ({:.0} s)", t0.elapsed().as_secs_f64());
            Ok(())
        }
        Ok(s) => {
            eprintln!("FAILED");
            Err(format!(
                "{what} failed ({s}); its output is in {}{}",
                path.display(),
                log_tail(path)
            ))
        }
        Err(e) => {
            eprintln!("FAILED");
            Err(format!("{what}: cannot run {cmd:?}: {e}"))
        }
    }
}

/// The installed version of `pkg`, if it is installed.
fn installed_version(pkg: &str) -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}|${Version}", pkg])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (status, version) = text.split_once('|')?;
    (out.status.success() && status.contains("install ok installed")).then(|| version.to_string())
}

/// Installs whatever of `packages` is missing (apt-get, as root or via
/// sudo): one line for the package index update, one for the install, one
/// per package installed (with its version).
///
/// Errors: a failing step (see [`step`]), or a package still missing after
/// the install.
pub fn ensure(packages: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = packages.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        eprintln!(
            "setup: all {} system packages are installed",
            packages.len()
        );
        return Ok(());
    }
    step(
        "apt-get update",
        &mut privileged(&["apt-get", "update", "-q"]),
    )?;
    let mut args = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter());
    step(
        &format!("installing {} package(s)", missing.len()),
        &mut privileged(&args),
    )?;
    for p in &missing {
        match installed_version(p) {
            Some(v) => eprintln!("setup:   {p} {v}"),
            None => {
                return Err(format!(
                    "{p} is still not installed; apt's output is in {}",
                    log_path().display()
                ))
            }
        }
    }
    Ok(())
}

/// Whether any APT source list has a `deb-src` entry.
fn has_deb_src() -> bool {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        files.extend(dir.filter_map(Result::ok).map(|e| e.path()));
    }
    files.iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|text| {
            text.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("deb-src ") || (l.starts_with("Types:") && l.contains("deb-src"))
            })
        })
    })
}

/// Makes `apt-get source` work: adds a `deb-src` entry for bookworm
/// (`/etc/apt/sources.list.d/omptarget-deb-src.sources`, the one `cargo
/// xtask lit` adds too) and updates the index, when no source list has one.
///
/// Errors: a failing step.
pub fn ensure_deb_src() -> Result<(), String> {
    if has_deb_src() {
        return Ok(());
    }
    let entry = "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";
    let tmp = crate::stage::target_dir().join("omptarget-deb-src.sources");
    if let Some(dir) = tmp.parent() {
        crate::cmd::mkdir(dir)?;
    }
    std::fs::write(&tmp, entry).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    let tmp_s = tmp.display().to_string();
    step(
        "adding a deb-src entry for bookworm",
        &mut privileged(&[
            "cp",
            &tmp_s,
            "/etc/apt/sources.list.d/omptarget-deb-src.sources",
        ]),
    )?;
    step(
        "apt-get update",
        &mut privileged(&["apt-get", "update", "-q"]),
    )
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
