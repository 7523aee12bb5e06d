//! Linking the JIT's relocatable object into an executable code object
//! with lld, as `AMDGPUDeviceTy::doJITPostProcessing` in LLVM 16's
//! `openmp/libomptarget/plugins-nextgen/amdgpu/src/rtl.cpp` does: the object
//! goes to a temporary file and lld runs as
//! `lld -flavor gnu --no-undefined -shared -plugin-opt=mcpu=<processor> -o OUT IN`.
//!
//! LLVM looks for a program named `lld` on `PATH`, which Debian does not
//! put there (lld-16 installs `ld.lld-16` on `PATH` and `lld` in LLVM 16's
//! own `bin/` directory). We look, in order, for the program named by
//! `OMPTARGET_AMDGPU_JIT_LINKER`, then `ld.lld-16`, `ld.lld` and `lld` on
//! `PATH`, then `/usr/lib/llvm-16/bin/lld` (Debian's package path); the
//! arguments are LLVM's (`-flavor gnu` selects the ELF linker whatever the
//! program's name).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::JitError;

/// `OMPTARGET_AMDGPU_JIT_LINKER`: ours; the lld program (a path, or a name
/// looked up on `PATH`) that links JIT objects.
pub const LINKER: &str = "OMPTARGET_AMDGPU_JIT_LINKER";

/// Names tried on `PATH` when [`LINKER`] is unset.
const NAMES: [&str; 3] = ["ld.lld-16", "ld.lld", "lld"];

/// Where Debian's lld-16 puts `lld` off `PATH`.
const DEBIAN_LLD: &str = "/usr/lib/llvm-16/bin/lld";

/// The linker program: [`LINKER`] when set, else the first of [`NAMES`]
/// found on `PATH`, else Debian's `lld`.
///
/// Errors: [`JitError::Link`] when none is found (the message names what
/// was looked for).
pub fn find_linker() -> Result<PathBuf, JitError> {
    if let Some(name) = std::env::var_os(LINKER) {
        let p = PathBuf::from(&name);
        return on_path(&p).ok_or_else(|| JitError::Link {
            linker: p.display().to_string(),
            message: format!("{LINKER} names a program that does not exist"),
        });
    }
    NAMES
        .iter()
        .find_map(|n| on_path(Path::new(n)))
        .or_else(|| {
            let p = PathBuf::from(DEBIAN_LLD);
            p.is_file().then_some(p)
        })
        .ok_or_else(|| JitError::Link {
            linker: "lld".into(),
            message: format!(
                "no linker found: none of {} on PATH, nor {DEBIAN_LLD} (install lld-16, or set {LINKER})",
                NAMES.join(", ")
            ),
        })
}

/// `p` itself when it has a directory part, else the first `PATH` entry
/// holding a file of that name.
fn on_path(p: &Path) -> Option<PathBuf> {
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(p))
        .find(|c| c.is_file())
}

/// A fingerprint of the linker program for the cache key: its path, size
/// and modification time (an upgraded lld changes it).
pub fn identity(linker: &Path) -> String {
    let meta = std::fs::metadata(linker).ok();
    let size = meta.as_ref().map_or(0, |m| m.len());
    let mtime = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{}:{size}:{mtime}", linker.display())
}

/// Links `object` (an AMDGPU ELF relocatable object) for processor `cpu`
/// into a shared, executable code object with `linker`, and returns its
/// bytes.
///
/// Errors: [`JitError::Io`] (temporary files), [`JitError::Link`] with
/// lld's exit status and messages when it fails.
pub fn link(linker: &Path, object: &[u8], cpu: &str) -> Result<Vec<u8>, JitError> {
    let io = |what: &str, path: &Path, e: std::io::Error| JitError::Io {
        what: what.to_string(),
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let dir = tempfile::Builder::new()
        .prefix("amdgpu-jit-")
        .tempdir()
        .map_err(|e| {
            io(
                "creating a temporary directory for the linker",
                &std::env::temp_dir(),
                e,
            )
        })?;
    let input = dir.path().join("image.o");
    let output = dir.path().join("image.out");
    std::fs::write(&input, object).map_err(|e| io("writing the JIT object", &input, e))?;
    let out = Command::new(linker)
        .args(["-flavor", "gnu", "--no-undefined", "-shared"])
        .arg(format!("-plugin-opt=mcpu={cpu}"))
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(|e| JitError::Link {
            linker: linker.display().to_string(),
            message: format!("cannot run it: {e}"),
        })?;
    if !out.status.success() {
        return Err(JitError::Link {
            linker: linker.display().to_string(),
            message: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    std::fs::read(&output).map_err(|e| io("reading the linked image", &output, e))
}
