//! Shared helpers of the plugin's integration tests: where the built
//! libraries are, how to stage them under the names libomptarget and the
//! plugins look for, and how to compile and run OpenMP programs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// target/<profile>, holding this build's cdylibs.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

/// A fresh-enough scratch directory under CARGO_TARGET_TMPDIR.
pub fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Points `dir/name` at `target` for each name. Tests of one binary call
/// this in parallel, so each link is made under a name of its own and
/// renamed over the final one (atomic), never removed and recreated.
fn link(target: &Path, dir: &Path, names: &[&str]) {
    for name in names {
        let l = dir.join(name);
        let tmp = dir.join(format!(
            ".{name}.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(target, &tmp).expect("symlink");
        std::fs::rename(&tmp, &l).expect("rename symlink");
    }
}

/// The virtual device's cdylib (built by `cargo build -p sim`).
pub fn sim_library() -> PathBuf {
    let lib = profile_dir().join("libhsa_runtime64.so");
    assert!(
        lib.exists(),
        "{} is missing: run `cargo build -p sim` first (`cargo xtask test` does)",
        lib.display()
    );
    lib
}

/// Our plugin's cdylib.
pub fn plugin_library() -> PathBuf {
    let lib = profile_dir().join("libomptarget_amdgpu.so");
    assert!(lib.exists(), "{} is missing", lib.display());
    lib
}

/// A folder with our plugin under both names libomptarget 16 tries.
pub fn plugin_dir() -> PathBuf {
    let dir = scratch_dir("stage-plugin");
    link(
        &plugin_library(),
        &dir,
        &[
            "libomptarget.rtl.amdgpu.nextgen.so",
            "libomptarget.rtl.amdgpu.so",
        ],
    );
    dir
}

/// A folder with the virtual device under ROCm's two names.
pub fn sim_dir() -> PathBuf {
    let dir = scratch_dir("stage-sim");
    link(
        &sim_library(),
        &dir,
        &["libhsa-runtime64.so.1", "libhsa-runtime64.so"],
    );
    dir
}

/// Compiles `tests/programs/<name>.c` (or an `examples/` program when
/// `examples` is true) for gfx90a offload; returns the executable.
pub fn compile(name: &str, examples: bool, extra: &[&str]) -> PathBuf {
    compile_linked(name, examples, extra, &[])
}

/// [`compile`] with `libs` (`-L`, `-l` flags) after the source, where a
/// static archive must come to resolve the program's symbols.
pub fn compile_linked(name: &str, examples: bool, extra: &[&str], libs: &[&str]) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let src = if examples {
        root.join("examples").join(name)
    } else {
        root.join("tests/programs").join(name)
    };
    let stem = Path::new(name)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = scratch_dir("bin").join(format!(
        "{stem}{}{}",
        extra.join("").replace(['-', '=', '/'], "_"),
        if libs.is_empty() { "" } else { "_linked" }
    ));
    let compiler = if name.ends_with(".cpp") {
        "clang++-16"
    } else {
        "clang-16"
    };
    let mut args: Vec<&str> = vec![
        "-fopenmp",
        "--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
        "-O2",
        "-Wl,-rpath,/usr/lib/llvm-16/lib",
    ];
    if !extra.iter().any(|a| a.starts_with("--offload-arch")) {
        args.push("--offload-arch=gfx90a");
    }
    args.extend_from_slice(extra);
    let src_s = src.to_string_lossy().into_owned();
    // Built under a name of this process and thread, then renamed over
    // `out` (atomic): test binaries and their child processes compile the
    // same program at once, and one must never read an executable another
    // is still writing.
    let tmp = private_name(&out);
    let out_s = tmp.to_string_lossy().into_owned();
    args.extend_from_slice(&[src_s.as_str(), "-o", out_s.as_str()]);
    args.extend_from_slice(libs);
    let path = format!(
        "/usr/lib/llvm-16/bin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new(compiler)
        .args(&args)
        .env("PATH", path)
        .output()
        .expect("clang-16 runs");
    assert!(
        o.status.success(),
        "{compiler} {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::rename(&tmp, &out).expect("renaming the executable into place");
    out
}

/// A name beside `path` private to this process and thread, for building a
/// file that is then renamed over `path`.
fn private_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    ))
}

/// Compiles `tests/programs/<name>` as plain host C (no OpenMP) with
/// `extra` flags; returns the executable.
pub fn compile_plain(name: &str, extra: &[&str]) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("tests/programs").join(name);
    let stem = Path::new(name)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = scratch_dir("bin").join(format!("{stem}_plain"));
    let tmp = private_name(&out);
    let o = Command::new("clang-16")
        .arg("-O2")
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&tmp)
        .output()
        .expect("clang-16 runs");
    assert!(
        o.status.success(),
        "clang-16 {name} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::rename(&tmp, &out).expect("renaming the executable into place");
    out
}

/// Which HSA runtime a program sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hsa {
    /// The virtual device with this many GPUs.
    Sim(usize),
    /// Debian's ROCm runtime (no GPU on this machine).
    Rocm,
}

/// A command for `bin` with our plugin (and the chosen HSA runtime) first
/// on LD_LIBRARY_PATH, mandatory offload, and our plugin announcing itself.
pub fn command(bin: &Path, hsa: Hsa) -> Command {
    let mut dirs = vec![plugin_dir()];
    if let Hsa::Sim(_) = hsa {
        dirs.push(sim_dir());
    }
    let mut path: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    path.push("/usr/lib/llvm-16/lib".into());
    let mut cmd = Command::new(bin);
    cmd.env("LD_LIBRARY_PATH", path.join(":"))
        .env("OMP_TARGET_OFFLOAD", "MANDATORY")
        .env("OMPTARGET_AMDGPU_ANNOUNCE", "1")
        .env_remove("LIBOMPTARGET_NEXTGEN_PLUGINS")
        .env_remove("OMPTARGET_AMDGPU_HSA_LIBRARY")
        .env_remove("LIBOMPTARGET_DEBUG")
        .env_remove("LIBOMPTARGET_INFO");
    if let Hsa::Sim(n) = hsa {
        cmd.env("HSA_SIM_GPUS", n.to_string());
    }
    cmd
}

/// Runs `cmd` and returns its output (with a watchdog so a hang fails the
/// test instead of blocking it forever).
pub fn run(cmd: &mut Command, timeout_s: u64) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("program starts");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(timeout_s)) {
        Ok(out) => out.expect("program output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("program {cmd:?} did not finish within {timeout_s} s");
        }
    }
}

/// The announcement our plugin prints with `OMPTARGET_AMDGPU_ANNOUNCE=1`.
pub fn announcement(devices: usize) -> String {
    format!("omptarget-amdgpu: Rust AMDGPU plugin initialised with {devices} device(s)")
}

/// stdout and stderr as text, for messages.
pub fn texts(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The staged files' directory (`OMPTARGET_STAGE_DIR`, else `target/stage`),
/// after checking that each of `needed` (paths below it) is there.
pub fn stage_dir_with(needed: &[&str]) -> PathBuf {
    let dir = std::env::var_os("OMPTARGET_STAGE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/stage"));
    for f in needed {
        assert!(
            dir.join(f).exists(),
            "{} is missing: run `cargo xtask stage` first",
            dir.join(f).display()
        );
    }
    dir
}

/// A command for `bin` through LLVM's C++ plugin (Debian's, found through
/// libLLVM's directory) on one virtual GPU, offload mandatory; our plugin
/// is not on the path (it would announce itself).
pub fn llvm_plugin_command(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env(
        "LD_LIBRARY_PATH",
        format!("{}:/usr/lib/llvm-16/lib", sim_dir().display()),
    )
    .env("OMP_TARGET_OFFLOAD", "MANDATORY")
    .env("OMPTARGET_AMDGPU_ANNOUNCE", "1")
    .env("HSA_SIM_GPUS", "1");
    cmd
}

/// Runs `bin` through LLVM's C++ plugin (Debian's, found through libLLVM's
/// directory) on one virtual GPU, within `timeout_s`; our plugin's
/// announcement must be absent.
pub fn run_llvm_plugin(bin: &Path, timeout_s: u64) -> Output {
    run_llvm_plugin_with(bin, &[], timeout_s)
}

/// [`run_llvm_plugin`] with more environment variables `env`.
pub fn run_llvm_plugin_with(bin: &Path, env: &[(&str, &str)], timeout_s: u64) -> Output {
    let mut cmd = llvm_plugin_command(bin);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd, timeout_s);
    let (_, stderr) = texts(&out);
    assert!(
        !stderr.contains("omptarget-amdgpu"),
        "our plugin ran: {stderr}"
    );
    out
}
