//! The package test (`cargo xtask package --test`, and part of `cargo xtask
//! test`): installs the packages into a throw-away copy of this system,
//! runs programs through what they installed, removes them and checks that
//! Debian's files are back.
//!
//! The copy is an overlay of `/` whose writable layer is a tmpfs, mounted
//! in a mount namespace of its own (`unshare --mount`, util-linux) by a
//! second run of this xtask ([`run_inside`], as root: directly, or through
//! sudo); every command of the test runs `chroot`ed into it. Nothing the
//! test installs, diverts or removes reaches the real system, and the
//! whole copy vanishes with the namespace when that process ends.
//!
//! Each check prints one line (`check: NAME: ok` or `check: NAME: FAILED
//! (why)`) that [`test`] counts; the commands' output goes to
//! `target/package-test.log`, which a failure names.

use super::{Deb, DIVERTED};
use crate::setup::logged_step;
use crate::stage::{target_dir, workspace_root};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Where the test's files are inside the copy.
const INSIDE: &str = "/tmp/omptarget-package-test";

/// The test's files outside: `target/package-test/`.
fn test_dir() -> PathBuf {
    target_dir().join("package-test")
}

/// `target/package-test.log`.
pub fn log_path() -> PathBuf {
    target_dir().join("package-test.log")
}

/// Prepares the test's files (the `.deb`s, the OpenMP program
/// `packaging/check/which_plugin.c` compiled here, the loader's example),
/// then runs [`run_inside`] in a new mount namespace as root. Returns each
/// check's name and outcome; Err when the test could not run at all.
pub fn test(debs: &[Deb]) -> Result<Vec<(String, bool)>, String> {
    let dir = test_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    }
    let files = dir.join("files");
    crate::cmd::mkdir(&files)?;
    crate::cmd::mkdir(&dir.join("mnt"))?;
    for d in debs {
        let name = d.path.file_name().ok_or("a .deb without a name")?;
        std::fs::copy(&d.path, files.join(name))
            .map_err(|e| format!("copying {}: {e}", d.path.display()))?;
    }
    let root = workspace_root();
    let program = crate::run::compile(&root.join("packaging/check/which_plugin.c"), "-O1")?;
    std::fs::copy(&program, files.join("which_plugin"))
        .map_err(|e| format!("copying {}: {e}", program.display()))?;
    std::fs::copy(
        root.join("device/examples/hello_lanes.c"),
        files.join("hello_lanes.c"),
    )
    .map_err(|e| format!("copying hello_lanes.c: {e}"))?;
    let _ = std::fs::remove_file(log_path());
    // This very binary, through /proc: `cargo` run meanwhile by anyone may
    // replace target/debug/xtask, and the link still reaches this one.
    let me = format!("/proc/{}/exe", std::process::id());
    let dir_s = dir.display().to_string();
    let stage_sim = target_dir().join("stage/sim").display().to_string();
    let mut child = crate::setup::privileged(&[
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        &me,
        "package-root",
        &dir_s,
        &stage_sim,
    ])
    .stdout(Stdio::piped())
    .spawn()
    .map_err(|e| format!("cannot run unshare: {e}"))?;
    let mut checks = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("package test: {line}");
            if let Some(rest) = line.strip_prefix("check: ") {
                match rest.strip_suffix(": ok") {
                    Some(name) => checks.push((name.to_string(), true)),
                    None => {
                        let name = rest.split(": FAILED").next().unwrap_or(rest);
                        checks.push((name.to_string(), false));
                    }
                }
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the package test: {e}"))?;
    if !status.success() {
        checks.push(("the test ran to its end".into(), false));
        println!(
            "package test: ended with {status}; the commands' output is in {}",
            log_path().display()
        );
    }
    Ok(checks)
}

/// One run of a command in the copy: its output, also appended to the log.
fn capture(cmd: &mut Command) -> Result<Output, String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if let Ok(mut log) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path())
    {
        let _ = writeln!(log, "==== {shown}\n-- {}", out.status);
        let _ = log.write_all(&out.stdout);
        let _ = log.write_all(&out.stderr);
    }
    Ok(out)
}

/// The copy: its root folder, and a command chrooted into it.
struct Copy {
    root: PathBuf,
}

impl Copy {
    /// `chroot ROOT env -i PATH=... VARS... ARGS...`: a clean environment,
    /// nothing on `LD_LIBRARY_PATH` unless `vars` puts it there.
    fn command(&self, vars: &[&str], args: &[&str]) -> Command {
        let mut c = Command::new("chroot");
        c.arg(&self.root)
            .args(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin:/usr/sbin:/sbin"])
            .args(vars)
            .args(args);
        c
    }

    /// Runs a setup step in the copy (one line, output in the log).
    fn step(&self, what: &str, args: &[&str]) -> Result<(), String> {
        logged_step(
            "package test",
            &log_path(),
            what,
            &mut self.command(&[], args),
        )
    }

    /// A path of the copy, seen from outside.
    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }
}

/// Prints a check's line; returns whether it passed.
fn check(name: &str, outcome: Result<(), String>) -> bool {
    match outcome {
        Ok(()) => {
            println!("check: {name}: ok");
            true
        }
        Err(why) => {
            let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
            println!("check: {name}: FAILED ({why})");
            false
        }
    }
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// What `which_plugin` printed: the `mapped` paths, and whether it ran
/// its region on a device with the right sum.
struct Run {
    status_ok: bool,
    devices: Option<String>,
    mapped: Vec<String>,
    announced: bool,
}

fn which_plugin(copy: &Copy, vars: &[&str], vgpu: bool) -> Result<Run, String> {
    let program = format!("{INSIDE}/which_plugin");
    let mut args = vec![];
    if vgpu {
        args.push("vgpu-run");
    }
    args.push(&program);
    let mut all = vec!["OMPTARGET_AMDGPU_ANNOUNCE=1"];
    all.extend(vars);
    let out = capture(&mut copy.command(&all, &args))?;
    let (stdout, stderr) = text(&out);
    Ok(Run {
        status_ok: out.status.success(),
        devices: stdout
            .lines()
            .find(|l| l.starts_with("devices "))
            .map(str::to_string),
        mapped: stdout
            .lines()
            .filter_map(|l| l.strip_prefix("mapped "))
            .map(str::to_string)
            .collect(),
        announced: stderr.contains("omptarget-amdgpu: Rust AMDGPU plugin initialised"),
    })
}

/// The plugin and device files the package test expects a run through
/// the installed packages to map.
const OUR_PLUGIN: &str = "/usr/lib/x86_64-linux-gnu/libomptarget.rtl.amdgpu.nextgen.so";
const OUR_SIM: &str = "/usr/lib/x86_64-linux-gnu/omptarget-amdgpu-sim/libhsa-runtime64.so.1";

/// The check of a run through our installed plugin on the installed
/// virtual device.
fn ours_on_vgpu(r: &Run) -> Result<(), String> {
    let want = "devices 1 on_host 0 sum 500500";
    if !r.status_ok || r.devices.as_deref() != Some(want) {
        return Err(format!("printed {:?}, not {want:?}", r.devices));
    }
    if !r.announced {
        return Err("our plugin did not announce itself".into());
    }
    for f in [OUR_PLUGIN, OUR_SIM] {
        if !r.mapped.iter().any(|m| m == f) {
            return Err(format!("{f} not mapped (mapped: {:?})", r.mapped));
        }
    }
    if let Some(m) = r.mapped.iter().find(|m| m.contains("llvm-16")) {
        return Err(format!("Debian's {m} was mapped"));
    }
    Ok(())
}

/// `cargo xtask package-root DIR STAGE_SIM` (run by [`test`] inside a new
/// mount namespace): builds the copy under `DIR/mnt` and runs the checks.
pub fn run_inside(args: &[String]) -> Result<(), String> {
    let [dir, stage_sim] = args else {
        return Err(
            "usage: package-root DIR STAGE_SIM (run by `cargo xtask package --test`)".into(),
        );
    };
    let dir = PathBuf::from(dir);
    let mnt = dir.join("mnt");
    let m = |what: &str, args: &[&str]| -> Result<(), String> {
        logged_step(
            "package test",
            &log_path(),
            what,
            Command::new("mount").args(args),
        )
    };
    let mnt_s = mnt.display().to_string();
    m(
        "a tmpfs for the copy's changes",
        &["-t", "tmpfs", "tmpfs", &mnt_s],
    )?;
    for d in ["upper", "work", "root"] {
        crate::cmd::mkdir(&mnt.join(d))?;
    }
    let root = mnt.join("root");
    let opts = format!(
        "lowerdir=/,upperdir={0}/upper,workdir={0}/work",
        mnt.display()
    );
    m(
        "an overlay of / (the throw-away root)",
        &[
            "-t",
            "overlay",
            "overlay",
            "-o",
            &opts,
            &root.display().to_string(),
        ],
    )?;
    for fs in ["/proc", "/dev", "/sys"] {
        let to = root.join(&fs[1..]).display().to_string();
        m(&format!("{fs} in the copy"), &["--rbind", fs, &to])?;
    }
    let copy = Copy { root };
    let inside = copy.path(INSIDE);
    crate::cmd::mkdir(&inside)?;
    let mut debs = Vec::new();
    for e in std::fs::read_dir(dir.join("files")).map_err(|e| format!("reading files: {e}"))? {
        let e = e.map_err(|e| format!("reading files: {e}"))?;
        std::fs::copy(e.path(), inside.join(e.file_name()))
            .map_err(|err| format!("copying {}: {err}", e.path().display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".deb") {
            debs.push(format!("{INSIDE}/{name}"));
        }
    }
    debs.sort();
    let originals: Vec<Vec<u8>> = DIVERTED
        .iter()
        .map(|f| std::fs::read(f).unwrap_or_default())
        .collect();

    let mut install = vec!["dpkg", "-i"];
    install.extend(debs.iter().map(String::as_str));
    let installed = copy.step("dpkg -i (every package)", &install);
    check("install", installed.clone());
    installed?;

    check(
        "Debian's plugin files diverted",
        diverted(&copy, &originals),
    );
    let r = which_plugin(&copy, &["OMP_TARGET_OFFLOAD=MANDATORY"], true)?;
    check(
        "our plugin on the virtual gfx90a through vgpu-run, nothing on LD_LIBRARY_PATH",
        ours_on_vgpu(&r),
    );
    let r = which_plugin(
        &copy,
        &[
            "OMP_TARGET_OFFLOAD=MANDATORY",
            "LD_LIBRARY_PATH=/usr/lib/llvm-16/lib",
        ],
        true,
    )?;
    check(
        "our plugin through vgpu-run with /usr/lib/llvm-16/lib on LD_LIBRARY_PATH (Debian's files diverted)",
        ours_on_vgpu(&r),
    );
    let r = which_plugin(&copy, &[], false)?;
    check(
        "without vgpu-run the virtual device is not used",
        if r.mapped.iter().any(|m| m.contains("omptarget-amdgpu-sim")) {
            Err(format!("mapped {:?}", r.mapped))
        } else if !r.announced {
            Err("our plugin did not announce itself".into())
        } else {
            Ok(())
        },
    );
    check("amdgpu-cc and amdhsa-loader", loader(&copy));

    let mut remove = vec!["dpkg", "-r"];
    let names: Vec<String> = debs
        .iter()
        .filter_map(|d| d.rsplit('/').next()?.split('_').next().map(str::to_string))
        .collect();
    remove.extend(names.iter().map(String::as_str));
    let removed = copy.step("dpkg -r (every package)", &remove);
    check("remove", removed.clone());
    removed?;
    check("Debian's plugin files back", restored(&copy, &originals));
    let r = which_plugin(
        &copy,
        &[
            "OMP_TARGET_OFFLOAD=MANDATORY",
            &format!("LD_LIBRARY_PATH=/usr/lib/llvm-16/lib:{stage_sim}"),
        ],
        false,
    )?;
    check(
        "after removal, Debian's plugin runs again",
        if r.status_ok
            && !r.announced
            && r.devices.as_deref() == Some("devices 1 on_host 0 sum 500500")
            && r.mapped.iter().any(|m| m == DIVERTED[0])
        {
            Ok(())
        } else {
            Err(format!(
                "printed {:?}, mapped {:?}, ours announced: {}",
                r.devices, r.mapped, r.announced
            ))
        },
    );
    let mut purge = vec!["dpkg", "--purge"];
    purge.extend(names.iter().map(String::as_str));
    check("purge", copy.step("dpkg --purge (every package)", &purge));
    Ok(())
}

/// `dpkg-divert --list` of the copy.
fn diversions(copy: &Copy) -> Result<String, String> {
    let out = capture(&mut copy.command(&[], &["dpkg-divert", "--list"]))?;
    if !out.status.success() {
        return Err(format!("dpkg-divert --list failed ({})", out.status));
    }
    Ok(text(&out).0)
}

/// While installed: each of Debian's files diverted by our package to
/// `.distrib`, byte for byte Debian's, and its name now ours.
fn diverted(copy: &Copy, originals: &[Vec<u8>]) -> Result<(), String> {
    let list = diversions(copy)?;
    for (f, original) in DIVERTED.iter().zip(originals) {
        let line = format!("diversion of {f} to {f}.distrib by omptarget-amdgpu");
        if !list.lines().any(|l| l == line) {
            return Err(format!("no {line:?} in dpkg-divert --list"));
        }
        let moved = std::fs::read(copy.path(&format!("{f}.distrib"))).unwrap_or_default();
        if original.is_empty() || &moved != original {
            return Err(format!("{f}.distrib is not Debian's file"));
        }
        let link = std::fs::read_link(copy.path(f)).map_err(|e| format!("{f}: {e}"))?;
        if !link.ends_with("libomptarget.rtl.amdgpu.nextgen.so") {
            return Err(format!("{f} points to {}", link.display()));
        }
    }
    Ok(())
}

/// After removal: no diversion of ours, Debian's files under their names
/// with their bytes, owned by their package, and none of our files left.
fn restored(copy: &Copy, originals: &[Vec<u8>]) -> Result<(), String> {
    let list = diversions(copy)?;
    if let Some(l) = list.lines().find(|l| l.contains("omptarget-amdgpu")) {
        return Err(format!("still diverted: {l}"));
    }
    for (f, original) in DIVERTED.iter().zip(originals) {
        let now = std::fs::read(copy.path(f)).map_err(|e| format!("{f}: {e}"))?;
        if &now != original {
            return Err(format!("{f} is not Debian's file"));
        }
        if copy.path(&format!("{f}.distrib")).exists() {
            return Err(format!("{f}.distrib is left"));
        }
        let out = capture(&mut copy.command(&[], &["dpkg-query", "-S", f]))?;
        let owner = text(&out).0;
        if !owner.starts_with("libomp5-16") || owner.contains("diversion") {
            return Err(format!("dpkg-query -S {f}: {}", owner.trim()));
        }
    }
    for gone in [
        super::FILES[0].to,
        "usr/lib/x86_64-linux-gnu/libomptarget.rtl.amdgpu.so",
        "usr/lib/x86_64-linux-gnu/omptarget-amdgpu-sim",
        "usr/bin/vgpu-run",
        "usr/bin/amdhsa-loader",
        "usr/lib/omptarget-amdgpu-loader",
    ] {
        if copy.path(gone).symlink_metadata().is_ok() {
            return Err(format!("/{gone} is left"));
        }
    }
    Ok(())
}

/// The installed `amdgpu-cc` builds `hello_lanes.c` and the installed
/// `amdhsa-loader` runs it on the installed virtual device.
fn loader(copy: &Copy) -> Result<(), String> {
    let image = format!("{INSIDE}/hello_lanes.gpu");
    let src = format!("{INSIDE}/hello_lanes.c");
    let out = capture(&mut copy.command(&[], &["amdgpu-cc", "-O2", &src, "-o", &image]))?;
    if !out.status.success() {
        return Err(format!("amdgpu-cc failed: {}", text(&out).1.trim()));
    }
    let out = capture(&mut copy.command(
        &[],
        &[
            "vgpu-run",
            "amdhsa-loader",
            "--threads",
            "4",
            &image,
            "40",
            "2",
        ],
    ))?;
    let (stdout, stderr) = text(&out);
    for want in [
        "hello from main on the GPU: 4 threads, 3 arguments",
        "the numeric arguments add up to 42",
    ] {
        if !out.status.success() || !stdout.contains(want) {
            return Err(format!(
                "no {want:?} ({}): {} {}",
                out.status,
                stdout.trim(),
                stderr.trim()
            ));
        }
    }
    Ok(())
}
