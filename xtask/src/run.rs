//! `cargo xtask run [options] PROGRAM.c|PROGRAM.cpp|BINARY [ARGS...]`: compile an
//! OpenMP offload program with clang-16 for gfx90a (when given a source) and run
//! it with a choice of plugin and device.
//!
//! Options:
//! - `--plugin ours|llvm` (default `ours`): our plugin from `target/stage/plugin`
//!   first on `LD_LIBRARY_PATH`, or Debian's LLVM C++ nextgen plugin;
//! - `--device virtual|rocm` (default `virtual`): the virtual gfx90a from
//!   `target/stage/sim` first on `LD_LIBRARY_PATH`, or whatever HSA runtime the
//!   system has (ROCm's);
//! - `--host`: run on the host instead (`OMP_TARGET_OFFLOAD=DISABLED`);
//! - `-O0|-O1|-O2|-O3` (default `-O2`): optimisation level of the compile;
//! - `--cgpu`: link the program with the device library for `printf`,
//!   `malloc` and `free` in target regions (`-Ltarget/stage/device/lib
//!   -lcgpu`, built by `cargo xtask stage`);
//! - `--llvm 16|19` (default 16): with `19`, compile with clang-19 and run
//!   through LLVM 19's libomptarget (its built-in AMDGPU plugin) on the
//!   virtual gfx90a, linked with `libcgpu-amdgpu.a` for `printf` and
//!   `malloc` (see `llvm19.rs`; `--plugin`, `--device` and `--cgpu` are
//!   LLVM 16's); `--llvm 19 --examples` runs every offloading program of
//!   `examples/` at -O0 and -O2 against the host, as `cargo xtask test` does.
//!
//! Offloading runs set `OMP_TARGET_OFFLOAD=MANDATORY` unless the environment
//! already sets it.

use crate::stage::{stage, target_dir, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Which plugin libomptarget should load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plugin {
    /// This project's plugin (`target/stage/plugin`).
    Ours,
    /// Debian's LLVM 16 C++ nextgen plugin.
    Llvm,
}

/// Which HSA runtime the plugin should find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// The virtual gfx90a (`target/stage/sim`).
    Virtual,
    /// The system's HSA runtime (ROCm's).
    Rocm,
}

/// How to run a program.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// `OMP_TARGET_OFFLOAD=DISABLED`.
    Host,
    /// Offload with the given plugin and device.
    Offload(Plugin, Device),
}

/// The LLVM 16 tools' directory, first on `PATH` for the offload toolchain.
pub const LLVM_BIN: &str = "/usr/lib/llvm-16/bin";
/// libomptarget 16 and LLVM's plugins.
pub const LLVM_LIB: &str = "/usr/lib/llvm-16/lib";
/// ROCm device libraries of Debian's rocm-device-libs.
pub const DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

/// Compiles `src` (C or C++) for the host and gfx90a into `target/xtask-run/`.
pub fn compile(src: &Path, opt: &str) -> Result<PathBuf, String> {
    compile_with(src, opt, false)
}

/// The link flags of the device library for `printf`/`malloc` in target
/// regions (`target/stage/device/lib/libcgpu.a`, staged by `stage`).
pub fn cgpu_link_flags() -> [String; 2] {
    [
        format!("-L{}", target_dir().join("stage/device/lib").display()),
        "-lcgpu".to_string(),
    ]
}

/// [`compile`], linking `libcgpu.a` when `cgpu` is set (the binary's name
/// then ends in `-cgpu`).
pub fn compile_with(src: &Path, opt: &str, cgpu: bool) -> Result<PathBuf, String> {
    let stem = src
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("the source has no file name")?;
    let dir = target_dir().join("xtask-run");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let suffix = if cgpu { "-cgpu" } else { "" };
    let out = dir.join(format!("{stem}{opt}{suffix}"));
    let cpp = matches!(
        src.extension().and_then(|e| e.to_str()),
        Some("cpp" | "cc" | "cxx")
    );
    let compiler = if cpp { "clang++-16" } else { "clang-16" };
    let path = format!("{LLVM_BIN}:{}", std::env::var("PATH").unwrap_or_default());
    let output = Command::new(compiler)
        .env("PATH", path)
        .args(["-fopenmp", "--offload-arch=gfx90a"])
        .arg(format!("--rocm-device-lib-path={DEVICE_LIBS}"))
        .arg(opt)
        .arg(src)
        .arg("-o")
        .arg(&out)
        .arg(format!("-Wl,-rpath,{LLVM_LIB}"))
        .args(if cpp { vec![] } else { vec!["-lm"] })
        .args(if cgpu {
            cgpu_link_flags().to_vec()
        } else {
            vec![]
        })
        .output()
        .map_err(|e| format!("cannot run {compiler}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{compiler} failed on {}:\n{}",
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(out)
}

/// The command that runs `binary` in `mode` (environment set, nothing run yet).
pub fn command(binary: &Path, args: &[String], mode: Mode) -> Command {
    let stage_dir = target_dir().join("stage");
    let mut cmd = Command::new(binary);
    cmd.args(args);
    let mut lib_path: Vec<String> = Vec::new();
    match mode {
        Mode::Host => {
            cmd.env("OMP_TARGET_OFFLOAD", "DISABLED");
        }
        Mode::Offload(plugin, device) => {
            if plugin == Plugin::Ours {
                lib_path.push(stage_dir.join("plugin").display().to_string());
            }
            if device == Device::Virtual {
                lib_path.push(stage_dir.join("sim").display().to_string());
            }
            if std::env::var_os("OMP_TARGET_OFFLOAD").is_none() {
                cmd.env("OMP_TARGET_OFFLOAD", "MANDATORY");
            }
        }
    }
    lib_path.push(LLVM_LIB.to_string());
    if let Ok(old) = std::env::var("LD_LIBRARY_PATH") {
        if !old.is_empty() {
            lib_path.push(old);
        }
    }
    cmd.env("LD_LIBRARY_PATH", lib_path.join(":"));
    cmd
}

/// Runs `binary` in `mode` and captures its output.
pub fn run_captured(
    binary: &Path,
    args: &[String],
    mode: Mode,
    extra_env: &[(&str, &str)],
) -> Result<Output, String> {
    let mut cmd = command(binary, args, mode);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))
}

/// `cargo xtask run`.
pub fn run_command(args: &[String]) -> Result<(), String> {
    let mut plugin = Plugin::Ours;
    let mut device = Device::Virtual;
    let mut host = false;
    let mut cgpu = false;
    let mut opt = "-O2".to_string();
    let mut llvm19 = false;
    let mut llvm16_only = None;
    let mut rest = args.iter();
    let program = loop {
        let Some(a) = rest.next() else {
            return Err("usage: cargo xtask run [--llvm 16|19] [--plugin ours|llvm] [--device virtual|rocm] [--host] [--cgpu] [-O0..-O3] PROGRAM [ARGS]".into());
        };
        if matches!(a.as_str(), "--plugin" | "--device" | "--cgpu") {
            llvm16_only = Some(a.clone());
        }
        match a.as_str() {
            "--llvm" => {
                llvm19 = match rest.next().map(String::as_str) {
                    Some("16") => false,
                    Some("19") => true,
                    other => return Err(format!("--llvm takes 16 or 19, not {other:?}")),
                }
            }
            "--plugin" => {
                plugin = match rest.next().map(String::as_str) {
                    Some("ours") => Plugin::Ours,
                    Some("llvm") => Plugin::Llvm,
                    other => return Err(format!("--plugin takes ours or llvm, not {other:?}")),
                }
            }
            "--device" => {
                device = match rest.next().map(String::as_str) {
                    Some("virtual") => Device::Virtual,
                    Some("rocm") => Device::Rocm,
                    other => return Err(format!("--device takes virtual or rocm, not {other:?}")),
                }
            }
            "--examples" if llvm19 => return crate::llvm19::examples_command(),
            "--host" => host = true,
            "--cgpu" => cgpu = true,
            o if o.starts_with("-O") && o.len() == 3 => opt = o.to_string(),
            _ => break PathBuf::from(a),
        }
    };
    let program_args: Vec<String> = rest.cloned().collect();
    let program = if program.is_relative() && !program.exists() {
        workspace_root().join(&program)
    } else {
        program
    };
    if llvm19 {
        if let Some(flag) = llvm16_only {
            return Err(format!(
                "{flag} is an LLVM 16 option; LLVM 19 has its plugin built in"
            ));
        }
        return crate::llvm19::run_program(&program, &opt, host, &program_args);
    }
    if !host || cgpu {
        stage()?;
    }
    let binary = match program.extension().and_then(|e| e.to_str()) {
        Some("c" | "cpp" | "cc" | "cxx") => compile_with(&program, &opt, cgpu)?,
        _ => program,
    };
    let mode = if host {
        Mode::Host
    } else {
        Mode::Offload(plugin, device)
    };
    let status = command(&binary, &program_args, mode)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} exited with {status}", binary.display()))
    }
}
