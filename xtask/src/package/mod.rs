//! `cargo xtask package [--test] [--staged]`: Debian packages of the staged files,
//! built with dpkg's own tools (`dpkg-shlibdeps`, `dpkg-gencontrol`,
//! `dpkg-deb`, all in `dpkg-dev`/`dpkg`, nothing from the network):
//!
//! - `omptarget-amdgpu`: our plugin, in the dynamic linker's default
//!   search path under both names libomptarget 16 tries, and in place of
//!   Debian's two AMDGPU plugin files in `/usr/lib/llvm-16/lib`, which its
//!   maintainer scripts divert (`packaging/omptarget-amdgpu.preinst`,
//!   `.postrm`; dpkg-divert(1));
//! - `omptarget-amdgpu-sim`: the virtual gfx90a in a directory of its own
//!   and `vgpu-run`, which runs a program on it (`packaging/vgpu-run`);
//! - `omptarget-amdgpu-loader`: `amdhsa-loader`, `amdgpu-cc` and the
//!   device libraries;
//! - one `-dbgsym` package for each, holding the debug information that
//!   stripping takes out of its ELF files, under
//!   `/usr/lib/debug/.build-id/` (the layout gdb searches, as Debian's
//!   automatic debug packages do).
//!
//! The packages' fields live in `packaging/control` and
//! `packaging/changelog` (the version); what goes where is [`FILES`] and
//! [`LINKS`]: a new staged file is one more row. The `.deb` files go to
//! `target/packages/`. Every step prints one line; the tools' own output
//! goes to `target/package.log` ([`log_path`]), named with its last lines
//! when a step fails. `--test` then installs them into a throw-away root
//! (see [`root`]).

mod root;

use crate::setup::logged_step;
use crate::stage::{target_dir, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

pub use root::run_inside as root_command;

/// The plugin's package.
const PLUGIN: &str = "omptarget-amdgpu";
/// The virtual device's package.
const SIM: &str = "omptarget-amdgpu-sim";
/// The loader's package.
const LOADER: &str = "omptarget-amdgpu-loader";
/// Every package, in `packaging/control`'s order.
pub const PACKAGES: [&str; 3] = [PLUGIN, SIM, LOADER];

/// What an installed file is, which decides its mode and its stripping.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A shared object: stripped of debug information and unneeded
    /// symbols, mode 0644 (Debian Policy 8.1 and 10.9).
    Library,
    /// An ELF executable: stripped of every symbol table, mode 0755.
    Program,
    /// A script: mode 0755, as it is.
    Script,
    /// Anything else (headers, device bitcode), or a folder of them,
    /// copied as it is, mode 0644.
    Data,
}

/// One file (or folder) of a package.
struct Entry {
    package: &'static str,
    /// Relative to the workspace root (`target/stage/...` for built files).
    from: &'static str,
    /// The installed path, without the leading `/`.
    to: &'static str,
    kind: Kind,
}

/// Every installed file (amd64's multiarch library folder, Debian Policy
/// 9.1.1, is `usr/lib/x86_64-linux-gnu`). The plugin is in the default search path because
/// libomptarget 16 `dlopen`s it by bare name from inside libLLVM, whose
/// run path is `/usr/lib` (README, "Using the plugin with ROCm"): no
/// other directory is searched with nothing on `LD_LIBRARY_PATH`.
const FILES: &[Entry] = &[
    Entry {
        package: PLUGIN,
        from: "target/stage/plugin/libomptarget.rtl.amdgpu.nextgen.so",
        to: "usr/lib/x86_64-linux-gnu/libomptarget.rtl.amdgpu.nextgen.so",
        kind: Kind::Library,
    },
    Entry {
        package: SIM,
        from: "target/stage/sim/libhsa-runtime64.so.1",
        to: "usr/lib/x86_64-linux-gnu/omptarget-amdgpu-sim/libhsa-runtime64.so.1",
        kind: Kind::Library,
    },
    Entry {
        package: SIM,
        from: "packaging/vgpu-run",
        to: "usr/bin/vgpu-run",
        kind: Kind::Script,
    },
    Entry {
        package: LOADER,
        from: "target/stage/bin/amdhsa-loader",
        to: "usr/bin/amdhsa-loader",
        kind: Kind::Program,
    },
    Entry {
        package: LOADER,
        from: "target/stage/bin/amdgpu-cc",
        to: "usr/lib/omptarget-amdgpu-loader/bin/amdgpu-cc",
        kind: Kind::Script,
    },
    Entry {
        package: LOADER,
        from: "target/stage/device",
        to: "usr/lib/omptarget-amdgpu-loader/device",
        kind: Kind::Data,
    },
];

/// Symbolic links: (package, link, target relative to the link's folder,
/// Debian Policy 10.5).
const LINKS: &[(&str, &str, &str)] = &[
    (
        PLUGIN,
        "usr/lib/x86_64-linux-gnu/libomptarget.rtl.amdgpu.so",
        "libomptarget.rtl.amdgpu.nextgen.so",
    ),
    // Debian's two plugin files, diverted by the package's preinst: a
    // program run with /usr/lib/llvm-16/lib on LD_LIBRARY_PATH (the usual
    // way to reach LLVM's plugins on Debian) gets ours as well.
    (
        PLUGIN,
        "usr/lib/llvm-16/lib/libomptarget.rtl.amdgpu.nextgen.so.16",
        "../../x86_64-linux-gnu/libomptarget.rtl.amdgpu.nextgen.so",
    ),
    (
        PLUGIN,
        "usr/lib/llvm-16/lib/libomptarget.rtl.amdgpu.so.16",
        "../../x86_64-linux-gnu/libomptarget.rtl.amdgpu.nextgen.so",
    ),
    (
        SIM,
        "usr/lib/x86_64-linux-gnu/omptarget-amdgpu-sim/libhsa-runtime64.so",
        "libhsa-runtime64.so.1",
    ),
    (
        LOADER,
        "usr/bin/amdgpu-cc",
        "../lib/omptarget-amdgpu-loader/bin/amdgpu-cc",
    ),
];

/// Debian's files the plugin package diverts (its preinst names them too).
pub const DIVERTED: [&str; 2] = [
    "/usr/lib/llvm-16/lib/libomptarget.rtl.amdgpu.nextgen.so.16",
    "/usr/lib/llvm-16/lib/libomptarget.rtl.amdgpu.so.16",
];

/// The system packages the build needs: `dpkg-dev` (dpkg-shlibdeps,
/// dpkg-gencontrol, dpkg-parsechangelog) and `binutils` (objcopy, readelf).
const TOOLS: &[&str] = &["dpkg-dev", "binutils"];

/// `target/package.log`: the output of every packaging command.
pub fn log_path() -> PathBuf {
    target_dir().join("package.log")
}

/// Where the `.deb` files go: `target/packages/`.
pub fn out_dir() -> PathBuf {
    target_dir().join("packages")
}

/// One built package.
#[derive(Debug, Clone)]
pub struct Deb {
    /// Its name (`omptarget-amdgpu-dbgsym`, ...).
    pub name: String,
    /// The `.deb` file.
    pub path: PathBuf,
    /// The file's size in bytes.
    pub bytes: u64,
}

fn step(what: &str, cmd: &mut Command) -> Result<(), String> {
    logged_step("package", &log_path(), what, cmd)
}

fn io<T>(r: std::io::Result<T>, what: &str, p: &Path) -> Result<T, String> {
    r.map_err(|e| format!("{what} {}: {e}", p.display()))
}

fn set_mode(p: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    io(
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)),
        "chmod",
        p,
    )
}

/// Copies `from` (a file, following links, or a folder, recursively) to
/// `to` with folders 0755 and files `mode`.
fn copy_tree(from: &Path, to: &Path, mode: u32) -> Result<(), String> {
    if from.is_dir() {
        io(std::fs::create_dir_all(to), "creating", to)?;
        set_mode(to, 0o755)?;
        for e in io(std::fs::read_dir(from), "reading", from)? {
            let e = io(e, "reading", from)?;
            copy_tree(&e.path(), &to.join(e.file_name()), mode)?;
        }
        Ok(())
    } else {
        make_parent(to)?;
        io(std::fs::copy(from, to), "copying to", to)?;
        set_mode(to, mode)
    }
}

/// Creates `p`'s parent folders, each 0755 (the umask may say otherwise).
fn make_parent(p: &Path) -> Result<(), String> {
    let Some(dir) = p.parent() else {
        return Ok(());
    };
    if dir.is_dir() {
        return Ok(());
    }
    make_parent(dir)?;
    io(std::fs::create_dir(dir), "creating", dir)?;
    set_mode(dir, 0o755)
}

/// The GNU build ID of an ELF file, in hex, from `readelf -n`.
fn build_id(elf: &Path) -> Result<String, String> {
    let out = io(
        Command::new("readelf").arg("-n").arg(elf).output(),
        "readelf -n",
        elf,
    )?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .filter(|id| id.len() > 2 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| format!("{} has no GNU build ID", elf.display()))
}

/// Installs the ELF file `from` at `to`, stripped, and its debug
/// information (compressed) at `/usr/lib/debug/.build-id/xx/rest.debug`
/// under `dbg_root`, as dh_strip does. Returns the build ID.
fn strip_into(from: &Path, to: &Path, dbg_root: &Path, kind: Kind) -> Result<String, String> {
    let id = build_id(from)?;
    let name = from
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let debug = dbg_root
        .join("usr/lib/debug/.build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]));
    make_parent(&debug)?;
    step(
        &format!("debug information of {name}"),
        Command::new("objcopy")
            .args(["--only-keep-debug", "--compress-debug-sections"])
            .arg(from)
            .arg(&debug),
    )?;
    set_mode(&debug, 0o644)?;
    make_parent(to)?;
    let symbols = if kind == Kind::Library {
        "--strip-unneeded"
    } else {
        "--strip-all"
    };
    step(
        &format!("stripping {name}"),
        Command::new("objcopy")
            .args([
                symbols,
                "--remove-section=.comment",
                "--remove-section=.note",
            ])
            .arg(from)
            .arg(to),
    )?;
    set_mode(to, if kind == Kind::Library { 0o644 } else { 0o755 })?;
    Ok(id)
}

/// The version of `packaging/changelog` (`dpkg-parsechangelog`).
fn version(changelog: &Path) -> Result<String, String> {
    let out = io(
        Command::new("dpkg-parsechangelog")
            .args(["-S", "Version", "-l"])
            .arg(changelog)
            .output(),
        "dpkg-parsechangelog -l",
        changelog,
    )?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !v.is_empty() {
        Ok(v)
    } else {
        Err(format!("no version in {}", changelog.display()))
    }
}

/// Every regular file under `dir` except `DEBIAN/`, relative to `dir`.
fn files_under(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    for e in io(std::fs::read_dir(dir.join(rel)), "reading", dir)? {
        let e = io(e, "reading", dir)?;
        let r = rel.join(e.file_name());
        let t = io(e.file_type(), "reading", &e.path())?;
        if t.is_dir() {
            if r != Path::new("DEBIAN") {
                files_under(dir, &r, out)?;
            }
        } else if t.is_file() {
            out.push(r);
        }
    }
    Ok(())
}

/// Writes `DEBIAN/md5sums` of the package tree `tree` (as dh_md5sums).
fn md5sums(tree: &Path) -> Result<(), String> {
    let mut files = Vec::new();
    files_under(tree, Path::new(""), &mut files)?;
    files.sort();
    let out = io(
        Command::new("md5sum")
            .current_dir(tree)
            .arg("--")
            .args(&files)
            .output(),
        "md5sum in",
        tree,
    )?;
    if !out.status.success() {
        return Err(format!("md5sum failed in {}", tree.display()));
    }
    let path = tree.join("DEBIAN/md5sums");
    io(std::fs::write(&path, out.stdout), "writing", &path)?;
    set_mode(&path, 0o644)
}

/// `usr/share/doc/<package>/`: `copyright` and the gzipped `changelog`
/// (Debian Policy 12.5, 12.7).
fn docs(tree: &Path, package: &str, packaging: &Path) -> Result<(), String> {
    let doc = tree.join("usr/share/doc").join(package);
    copy_tree(&packaging.join("copyright"), &doc.join("copyright"), 0o644)?;
    let gz = doc.join("changelog.gz");
    let file = io(std::fs::File::create(&gz), "creating", &gz)?;
    let status = io(
        Command::new("gzip")
            .args(["-9", "-n", "-c"])
            .arg(packaging.join("changelog"))
            .stdout(file)
            .status(),
        "gzip into",
        &gz,
    )?;
    if !status.success() {
        return Err(format!("gzip failed writing {}", gz.display()));
    }
    set_mode(&gz, 0o644)
}

/// Builds every package from `target/stage/` (which must be staged) into
/// [`out_dir`]. Returns them, each main package followed by its
/// `-dbgsym`.
pub fn build() -> Result<Vec<Deb>, String> {
    crate::setup::ensure(TOOLS)?;
    let root = workspace_root();
    let packaging = root.join("packaging");
    let work = target_dir().join("package-build");
    let out = out_dir();
    for d in [&work, &out] {
        if d.exists() {
            io(std::fs::remove_dir_all(d), "removing", d)?;
        }
    }
    let debian = work.join("debian");
    io(std::fs::create_dir_all(&debian), "creating", &debian)?;
    io(std::fs::create_dir_all(&out), "creating", &out)?;
    let _ = std::fs::remove_file(log_path());
    for f in ["control", "changelog"] {
        io(
            std::fs::copy(packaging.join(f), debian.join(f)),
            "copying to",
            &debian,
        )?;
    }
    let version = version(&packaging.join("changelog"))?;
    let mut debs = Vec::new();
    for package in PACKAGES {
        let tree = debian.join(package);
        let dbg_name = format!("{package}-dbgsym");
        let dbg_tree = debian.join(&dbg_name);
        let mut ids = Vec::new();
        let mut elves = Vec::new();
        for e in FILES.iter().filter(|e| e.package == package) {
            let from = root.join(e.from);
            let to = tree.join(e.to);
            if !from.exists() {
                return Err(format!(
                    "{} is missing (cargo xtask stage makes it)",
                    from.display()
                ));
            }
            match e.kind {
                Kind::Library | Kind::Program => {
                    ids.push(strip_into(&from, &to, &dbg_tree, e.kind)?);
                    elves.push(to);
                }
                Kind::Script => copy_tree(&from, &to, 0o755)?,
                Kind::Data => copy_tree(&from, &to, 0o644)?,
            }
        }
        for (_, link, target) in LINKS.iter().filter(|l| l.0 == package) {
            let link = tree.join(link);
            make_parent(&link)?;
            io(std::os::unix::fs::symlink(target, &link), "linking", &link)?;
        }
        docs(&tree, package, &packaging)?;
        let scripts = io(std::fs::read_dir(&packaging), "reading", &packaging)?;
        let prefix = format!("{package}.");
        for s in scripts.filter_map(Result::ok) {
            let name = s.file_name().to_string_lossy().into_owned();
            if let Some(script) = name.strip_prefix(&prefix) {
                if ["preinst", "postinst", "prerm", "postrm"].contains(&script) {
                    copy_tree(&s.path(), &tree.join("DEBIAN").join(script), 0o755)?;
                }
            }
        }
        // dpkg-shlibdeps finds a binary's package by the DEBIAN folder
        // above it.
        make_parent(&tree.join("DEBIAN/control"))?;
        let substvars = format!("debian/{package}.substvars");
        if !elves.is_empty() {
            step(
                &format!("dpkg-shlibdeps {package}"),
                Command::new("dpkg-shlibdeps")
                    .current_dir(&work)
                    .arg(format!("-T{substvars}"))
                    .args(elves.iter().map(|e| e.strip_prefix(&work).unwrap_or(e))),
            )?;
        }
        make_parent(&tree.join("DEBIAN/control"))?;
        step(
            &format!("dpkg-gencontrol {package}"),
            Command::new("dpkg-gencontrol")
                .current_dir(&work)
                .arg(format!("-p{package}"))
                .arg(format!("-T{substvars}"))
                .arg(format!("-Pdebian/{package}")),
        )?;
        md5sums(&tree)?;
        debs.push(deb(&work, package, &version, &tree, &out)?);
        if ids.is_empty() {
            continue;
        }
        // The debug package's doc folder is a link to the main package's,
        // as debhelper makes it.
        let doc = dbg_tree.join("usr/share/doc").join(&dbg_name);
        make_parent(&doc)?;
        io(std::os::unix::fs::symlink(package, &doc), "linking", &doc)?;
        make_parent(&dbg_tree.join("DEBIAN/control"))?;
        step(
            &format!("dpkg-gencontrol {dbg_name}"),
            Command::new("dpkg-gencontrol")
                .current_dir(&work)
                .arg(format!("-p{package}"))
                .arg(format!("-T{substvars}"))
                .arg(format!("-Pdebian/{dbg_name}"))
                .arg(format!("-DPackage={dbg_name}"))
                .arg(format!("-DDepends={package} (= {version})"))
                .args([
                    "-DSection=debug",
                    "-DPriority=optional",
                    "-DAuto-Built-Package=debug-symbols",
                    "-URecommends",
                ])
                .arg(format!("-DBuild-Ids={}", ids.join(" ")))
                .arg(format!("-DDescription=debug symbols for {package}")),
        )?;
        md5sums(&dbg_tree)?;
        debs.push(deb(&work, &dbg_name, &version, &dbg_tree, &out)?);
    }
    Ok(debs)
}

/// `dpkg-deb --build` of `tree` into `out`, files owned by root.
fn deb(work: &Path, name: &str, version: &str, tree: &Path, out: &Path) -> Result<Deb, String> {
    let path = out.join(format!("{name}_{version}_amd64.deb"));
    step(
        &format!("dpkg-deb --build {name}"),
        Command::new("dpkg-deb")
            .current_dir(work)
            .args(["--root-owner-group", "--build"])
            .arg(tree)
            .arg(&path),
    )?;
    let bytes = io(std::fs::metadata(&path), "reading", &path)?.len();
    Ok(Deb {
        name: name.to_string(),
        path,
        bytes,
    })
}

/// `12.3 MB`, or `840 KB`.
pub fn size(bytes: u64) -> String {
    if bytes >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{} KB", bytes.div_ceil(1000))
    }
}

/// `cargo xtask package [--test] [--staged]` (`--staged`: package what
/// `target/stage/` holds, without building it again).
pub fn run_command(args: &[String]) -> Result<(), String> {
    let mut test = false;
    let mut stage = true;
    for a in args {
        match a.as_str() {
            "--test" => test = true,
            "--staged" => stage = false,
            _ => {
                return Err(format!(
                    "usage: cargo xtask package [--test] [--staged] (got {a:?})"
                ))
            }
        }
    }
    if stage {
        crate::stage::stage()?;
    }
    let debs = build()?;
    for d in &debs {
        eprintln!(
            "package: {} {} ({})",
            d.name,
            d.path.display(),
            size(d.bytes)
        );
    }
    if test {
        let checks = root::test(&debs)?;
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.1)
            .map(|c| c.0.as_str())
            .collect();
        if !failed.is_empty() {
            return Err(format!("package test failed: {}", failed.join(", ")));
        }
        eprintln!("package test: all {} checks passed", checks.len());
    }
    Ok(())
}

/// The packages' part of `cargo xtask test`: [`build`] from the stage,
/// then the throw-away root test ([`root`]); adds one check per step of
/// that test to the counts (a build or a test that cannot run is one
/// failed check) and prints the time taken.
pub fn count_checks(passed: &mut u64, failed: &mut u64) {
    let t0 = std::time::Instant::now();
    match build().and_then(|debs| root::test(&debs)) {
        Ok(checks) => {
            for (_, ok) in checks {
                if ok {
                    *passed += 1;
                } else {
                    *failed += 1;
                }
            }
        }
        Err(why) => {
            println!("package: {why}");
            *failed += 1;
        }
    }
    println!(
        "package: built and tested in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `link`'s target, resolved against the link's folder (no `..` left).
    fn resolve(link: &str, target: &str) -> String {
        let mut parts: Vec<&str> = link.split('/').collect();
        parts.pop();
        for t in target.split('/') {
            match t {
                ".." => {
                    parts.pop();
                }
                "." => {}
                t => parts.push(t),
            }
        }
        parts.join("/")
    }

    #[test]
    fn every_link_reaches_a_file_of_its_package() {
        for (package, link, target) in LINKS {
            let to = resolve(link, target);
            assert!(
                FILES.iter().any(|f| f.package == *package && f.to == to),
                "{link} -> {target} ({to}) is no file of {package}"
            );
        }
        assert_eq!(
            resolve("usr/lib/llvm-16/lib/x.so.16", "../../x86_64-linux-gnu/y.so"),
            "usr/lib/x86_64-linux-gnu/y.so"
        );
    }

    #[test]
    fn the_diverted_files_are_replaced_and_named_by_both_scripts() {
        let dir = workspace_root().join("packaging");
        for script in ["omptarget-amdgpu.preinst", "omptarget-amdgpu.postrm"] {
            let text = std::fs::read_to_string(dir.join(script)).unwrap();
            for f in DIVERTED {
                let (folder, name) = f.rsplit_once('/').unwrap();
                assert!(text.contains(&format!("{folder}/$f")), "{script}: {folder}");
                assert!(text.contains(name), "{script} does not name {name}");
            }
            assert!(text.contains("--package omptarget-amdgpu"));
            let syntax = Command::new("sh")
                .arg("-n")
                .arg(dir.join(script))
                .status()
                .unwrap();
            assert!(syntax.success(), "{script} is not valid sh");
        }
        for f in DIVERTED {
            assert!(
                LINKS.iter().any(|l| l.0 == PLUGIN && l.1 == &f[1..]),
                "{f} is diverted but not replaced"
            );
        }
    }

    #[test]
    fn control_declares_the_packages_built() {
        let text = std::fs::read_to_string(workspace_root().join("packaging/control")).unwrap();
        let declared: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("Package: "))
            .collect();
        assert_eq!(declared, PACKAGES);
        for f in FILES {
            assert!(PACKAGES.contains(&f.package));
        }
    }

    #[test]
    fn vgpu_run_puts_the_device_first_and_keeps_the_callers_path() {
        let script = workspace_root().join("packaging/vgpu-run");
        let run = |before: Option<&str>| {
            let mut c = Command::new("sh");
            c.arg(&script)
                .args(["sh", "-c", "printf %s \"$LD_LIBRARY_PATH\""]);
            match before {
                Some(p) => c.env("LD_LIBRARY_PATH", p),
                None => c.env_remove("LD_LIBRARY_PATH"),
            };
            let out = c.output().unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap()
        };
        let dir = FILES
            .iter()
            .find(|f| f.package == SIM && f.kind == Kind::Library)
            .map(|f| format!("/{}", f.to.rsplit_once('/').unwrap().0))
            .unwrap();
        assert_eq!(run(None), dir);
        assert_eq!(run(Some("/opt/x:/opt/y")), format!("{dir}:/opt/x:/opt/y"));
        // Without a program it says how to use it and fails.
        let out = Command::new("sh").arg(&script).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage: vgpu-run"));
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(804_604), "805 KB");
        assert_eq!(size(5_103_300), "5.1 MB");
    }
}
