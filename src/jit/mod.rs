//! JIT compilation of LLVM bitcode device images (`clang -fopenmp
//! --offload-arch=gfx90a -fopenmp-target-jit`), as LLVM 16's nextgen plugin
//! does it (`JITEngine` in
//! `openmp/libomptarget/plugins-nextgen/common/PluginInterface/JIT.cpp`,
//! `AMDGPUDeviceTy::doJITPostProcessing` in
//! `plugins-nextgen/amdgpu/src/rtl.cpp`), plus an on-disk cache.
//!
//! [`process`] turns the bitcode into an executable AMDGPU code object for
//! one agent, which `load_binary` then loads as any other image:
//!
//! 1. the object: `LIBOMPTARGET_JIT_REPLACEMENT_OBJECT`'s file when set,
//!    else the module (the image, or `LIBOMPTARGET_JIT_REPLACEMENT_MODULE`'s
//!    file, bitcode or textual IR) optimised and compiled by libLLVM 16
//!    ([`llvm`]) at `LIBOMPTARGET_JIT_OPT_LEVEL` (default 3) unless
//!    `LIBOMPTARGET_JIT_SKIP_OPT`, with the module printed to
//!    `LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE` / `LIBOMPTARGET_JIT_POST_OPT_IR_MODULE`
//!    before / after optimisation when those are set;
//! 2. the code object: that object linked by lld ([`link`]).
//!
//! Every libLLVM step (reading a module for its triple, compiling it) runs
//! in a forked child process ([`isolate`]): damaged bitcode that crashes
//! LLVM's reader, or a module that stops LLVM with a fatal error, fails the
//! image with a message instead of ending the program (LLVM 16's plugin
//! dies with it).
//!
//! An image is compiled once per process and target (LLVM keeps the same
//! per compute unit kind), and once per machine with the cache ([`cache`]):
//! a later process finds the code object on disk and runs no LLVM step and
//! no linker. The cache is skipped when any of the four module/object knobs
//! is set (their point is the side effect, or a file outside the key).
//!
//! Images that are not bitcode never reach this module (`load_binary`
//! checks the first bytes), so they pay nothing.

pub mod cache;
pub mod error;
pub mod isolate;
pub mod link;
pub mod llvm;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use parking_lot::Mutex;

use crate::env;
pub use error::JitError;

/// `LIBOMPTARGET_JIT_OPT_LEVEL`: optimisation and code generation level,
/// 0 to 3 (default 3).
pub const OPT_LEVEL: &str = "LIBOMPTARGET_JIT_OPT_LEVEL";
/// `LIBOMPTARGET_JIT_SKIP_OPT`: true skips the optimisation pipeline.
pub const SKIP_OPT: &str = "LIBOMPTARGET_JIT_SKIP_OPT";
/// `LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE`: file the module is printed to
/// (textual IR) before optimisation.
pub const PRE_OPT_IR_MODULE: &str = "LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE";
/// `LIBOMPTARGET_JIT_POST_OPT_IR_MODULE`: file it is printed to after.
pub const POST_OPT_IR_MODULE: &str = "LIBOMPTARGET_JIT_POST_OPT_IR_MODULE";
/// `LIBOMPTARGET_JIT_REPLACEMENT_MODULE`: a module file (bitcode or
/// textual IR) compiled instead of the image's.
pub const REPLACEMENT_MODULE: &str = "LIBOMPTARGET_JIT_REPLACEMENT_MODULE";
/// `LIBOMPTARGET_JIT_REPLACEMENT_OBJECT`: an object file linked instead of
/// compiling anything.
pub const REPLACEMENT_OBJECT: &str = "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT";

/// The JIT's settings, read from the environment (LLVM's `Envar`s of
/// `JITEngine`; a string knob counts when set, even empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// [`OPT_LEVEL`].
    pub opt_level: u32,
    /// [`SKIP_OPT`].
    pub skip_opt: bool,
    /// [`PRE_OPT_IR_MODULE`].
    pub pre_opt_ir: Option<PathBuf>,
    /// [`POST_OPT_IR_MODULE`].
    pub post_opt_ir: Option<PathBuf>,
    /// [`REPLACEMENT_MODULE`].
    pub replacement_module: Option<PathBuf>,
    /// [`REPLACEMENT_OBJECT`].
    pub replacement_object: Option<PathBuf>,
}

impl Options {
    /// The settings of the environment now.
    ///
    /// Errors: [`JitError::Knob`] for an opt level above 3 (LLVM 16 stops
    /// on an assertion there).
    pub fn from_env() -> Result<Options, JitError> {
        let opt_level = env::u32_or(OPT_LEVEL, 3);
        if opt_level > 3 {
            return Err(JitError::Knob {
                knob: OPT_LEVEL,
                value: opt_level.to_string(),
                why: "the level must be 0, 1, 2 or 3",
            });
        }
        let path = |k: &str| std::env::var_os(k).map(PathBuf::from);
        Ok(Options {
            opt_level,
            skip_opt: env::bool_or(SKIP_OPT, false),
            pre_opt_ir: path(PRE_OPT_IR_MODULE),
            post_opt_ir: path(POST_OPT_IR_MODULE),
            replacement_module: path(REPLACEMENT_MODULE),
            replacement_object: path(REPLACEMENT_OBJECT),
        })
    }

    /// Whether a knob that makes the result depend on more than the image
    /// (or that must have its side effect) is set: then the disk cache is
    /// not used.
    fn bypasses_cache(&self) -> bool {
        self.pre_opt_ir.is_some()
            || self.post_opt_ir.is_some()
            || self.replacement_module.is_some()
            || self.replacement_object.is_some()
    }
}

/// The agent a bitcode image is compiled for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The processor (LLVM's compute unit kind), e.g. `gfx90a`.
    pub cpu: String,
    /// LLVM target features from the agent's XNACK and SRAMECC settings,
    /// e.g. `+sramecc,-xnack` (empty when it names neither).
    pub features: String,
}

impl Target {
    /// The target of an agent's target ID as its ISA name gives it
    /// (`gfx90a:sramecc+:xnack-`, or the full `amdgcn-amd-amdhsa--...`).
    ///
    /// Errors: [`JitError::NoProcessor`] when it names no processor.
    pub fn from_target_id(id: &str) -> Result<Target, JitError> {
        let t = code_object::TargetId::parse(id)
            .ok_or_else(|| JitError::NoProcessor(id.to_string()))?;
        let sign = |on: bool| if on { '+' } else { '-' };
        let mut features = Vec::new();
        if let Some(on) = t.sramecc {
            features.push(format!("{}sramecc", sign(on)));
        }
        if let Some(on) = t.xnack {
            features.push(format!("{}xnack", sign(on)));
        }
        Ok(Target {
            cpu: t.processor,
            features: features.join(","),
        })
    }
}

/// Whether `bytes` begin as LLVM bitcode does: raw (`BC` `0xC0DE`) or in
/// the bitcode wrapper (`0x0B17C0DE`, little endian). The first check of
/// [`crate::image::classify`], before anything reaches libLLVM.
pub fn has_bitcode_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(b"BC\xc0\xde") || bytes.starts_with(&[0xde, 0xc0, 0x17, 0x0b])
}

/// Whether the bitcode module in `bytes` targets `amdgcn` (its triple's
/// architecture), as LLVM's `JITEngine::checkBitcodeImage` decides; `false`
/// for anything libLLVM cannot read, with an error logged naming LLVM's
/// message (LLVM's plugin refuses such an image without a word).
pub fn is_amdgcn_bitcode(bytes: &[u8]) -> bool {
    if !has_bitcode_magic(bytes) {
        return false;
    }
    let triple = isolate::run("reading the device image", || {
        llvm::triple(bytes).map(String::into_bytes)
    });
    match triple {
        Ok(t) => t.split(|b| *b == b'-').next() == Some(b"amdgcn".as_slice()),
        Err(e) => {
            log::error!("device image not loaded: {e}");
            false
        }
    }
}

/// Code objects compiled in this process, by cache key.
static COMPILED: LazyLock<Mutex<HashMap<cache::Key, Arc<[u8]>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Serialises compilations (as LLVM's `ComputeUnitMapMutex`): two devices
/// loading the same image compile it once.
static COMPILING: Mutex<()> = Mutex::new(());

/// Where a code object of [`process`] came from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// Compiled (and linked) now; times in seconds.
    Compiled {
        /// libLLVM's steps.
        llvm: llvm::Timings,
        /// The linker run.
        link: f64,
        /// Where it was stored, when the cache is on.
        stored: Option<PathBuf>,
    },
    /// Read from the disk cache.
    Cached(PathBuf),
    /// Compiled earlier in this process.
    Memory,
}

/// The executable code object of bitcode image `bitcode` for device
/// `device` (a plugin device id, for messages) whose agent has target ID
/// `target_id`. When `info` is set (`LIBOMPTARGET_INFO` bit 0x10, as LLVM's
/// plugin prints its linker line), one line on stderr says how it was
/// obtained and how long it took.
///
/// Errors: [`JitError`], naming the failed step with the tool's message.
pub fn process(
    bitcode: &[u8],
    device: i32,
    target_id: &str,
    info: bool,
) -> Result<Arc<[u8]>, JitError> {
    let start = Instant::now();
    let target = Target::from_target_id(target_id)?;
    let options = Options::from_env()?;
    let linker = link::find_linker()?;
    let key = key(bitcode, &target, &options, &linker);
    let _serial = COMPILING.lock();
    let (image, origin) = obtain(bitcode, &target, &options, &linker, &key)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let what = match &origin {
        Origin::Compiled { llvm, link, stored } => format!(
            "compiled {} bytes of bitcode for {}{}{} at -O{}{} in {ms:.1} ms (read {:.1}, \
             optimisation {:.1}, code generation {:.1}, link {:.1} ms, {}){}",
            bitcode.len(),
            target.cpu,
            if target.features.is_empty() { "" } else { " " },
            target.features,
            options.opt_level,
            if options.skip_opt {
                " (optimisation skipped)"
            } else {
                ""
            },
            llvm.parse * 1e3,
            llvm.opt * 1e3,
            llvm.codegen * 1e3,
            link * 1e3,
            linker.display(),
            stored
                .as_ref()
                .map(|p| format!("; cached as {}", p.display()))
                .unwrap_or_default()
        ),
        Origin::Cached(p) => format!("image read from the cache ({}) in {ms:.1} ms", p.display()),
        Origin::Memory => "image compiled earlier in this process".to_string(),
    };
    log::debug!("device {device}: JIT {what}");
    if info {
        eprintln!("AMDGPU device {device} info: JIT {what}");
    }
    Ok(image)
}

/// The cache key of one compilation: the plugin's version and cache
/// format, LLVM's version, the linker, the target, the options and the
/// bitcode.
fn key(bitcode: &[u8], target: &Target, o: &Options, linker: &Path) -> cache::Key {
    let (major, minor, patch) = llvm::version();
    let llvm = format!("LLVM {major}.{minor}.{patch}");
    let lld = link::identity(linker);
    let opts = format!("O{} skip_opt={}", o.opt_level, o.skip_opt);
    // Only the in-process map sees these (the disk cache is off with them).
    let files = format!(
        "{:?} {:?} {:?} {:?}",
        o.pre_opt_ir, o.post_opt_ir, o.replacement_module, o.replacement_object
    );
    cache::Key::of(&[
        b"omptarget-amdgpu JIT cache 1",
        env!("CARGO_PKG_VERSION").as_bytes(),
        llvm.as_bytes(),
        lld.as_bytes(),
        target.cpu.as_bytes(),
        target.features.as_bytes(),
        opts.as_bytes(),
        files.as_bytes(),
        bitcode,
    ])
}

/// The code object for `key`: from this process, the disk cache, or a
/// compilation (then stored in both).
fn obtain(
    bitcode: &[u8],
    target: &Target,
    options: &Options,
    linker: &Path,
    key: &cache::Key,
) -> Result<(Arc<[u8]>, Origin), JitError> {
    if let Some(image) = COMPILED.lock().get(key) {
        return Ok((image.clone(), Origin::Memory));
    }
    let dir = if options.bypasses_cache() {
        None
    } else {
        cache::directory()
    };
    if let Some(d) = &dir {
        if let Some(bytes) = cache::get(d, key) {
            let image: Arc<[u8]> = bytes.into();
            COMPILED.lock().insert(*key, image.clone());
            return Ok((image, Origin::Cached(cache::entry(d, key))));
        }
    }
    let (object, llvm_times) = object(bitcode, target, options)?;
    let t = Instant::now();
    let linked = link::link(linker, &object, &target.cpu)?;
    let link_time = t.elapsed().as_secs_f64();
    let stored = dir.and_then(|d| match cache::put(&d, key, &linked) {
        Ok(p) => Some(p),
        Err(e) => {
            log::warn!("JIT cache not written: {e}");
            None
        }
    });
    let image: Arc<[u8]> = linked.into();
    COMPILED.lock().insert(*key, image.clone());
    Ok((
        image,
        Origin::Compiled {
            llvm: llvm_times,
            link: link_time,
            stored,
        },
    ))
}

/// The relocatable object: the replacement object's bytes, or the
/// (replacement) module compiled (`JITEngine::getOrCreateObjFile`).
fn object(
    bitcode: &[u8],
    target: &Target,
    o: &Options,
) -> Result<(Vec<u8>, llvm::Timings), JitError> {
    let read = |what: &str, path: &Path| {
        std::fs::read(path).map_err(|e| JitError::Io {
            what: format!("reading the {what}"),
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    };
    if let Some(p) = &o.replacement_object {
        return Ok((read("replacement object", p)?, llvm::Timings::default()));
    }
    let backend = llvm::Backend {
        cpu: &target.cpu,
        features: &target.features,
        opt_level: o.opt_level,
        skip_opt: o.skip_opt,
        pre_opt_ir: o.pre_opt_ir.as_deref(),
        post_opt_ir: o.post_opt_ir.as_deref(),
    };
    let replacement;
    let (source, what) = match &o.replacement_module {
        Some(p) => {
            replacement = read("replacement module", p)?;
            (
                replacement.as_slice(),
                format!("the replacement module {}", p.display()),
            )
        }
        None => (bitcode, "the device image".to_string()),
    };
    // In a child process: a module that crashes LLVM ends the load with an
    // error instead of the program (`isolate`). The answer is the three
    // step times (f64, little endian) followed by the object.
    let answer = isolate::run(&format!("compiling {what}"), || {
        let (object, t) = llvm::compile(source, &what, &backend)?;
        let mut out = Vec::with_capacity(24 + object.len());
        for v in [t.parse, t.opt, t.codegen] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&object);
        Ok(out)
    })?;
    let time = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&answer[i * 8..i * 8 + 8]);
        f64::from_le_bytes(w)
    };
    if answer.len() < 24 {
        return Err(JitError::Crashed {
            what: format!("compiling {what}"),
            how: "sent a truncated answer".into(),
        });
    }
    let times = llvm::Timings {
        parse: time(0),
        opt: time(1),
        codegen: time(2),
    };
    Ok((answer[24..].to_vec(), times))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_carry_the_agents_features() {
        let t = Target::from_target_id("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").expect("id");
        assert_eq!(t.cpu, "gfx90a");
        assert_eq!(t.features, "+sramecc,-xnack");
        let t = Target::from_target_id("gfx90a").expect("id");
        assert_eq!(t.features, "");
        assert!(Target::from_target_id("").is_err());
    }

    #[test]
    fn bitcode_magic() {
        assert!(has_bitcode_magic(b"BC\xc0\xde\x35\x14"));
        assert!(has_bitcode_magic(&[0xde, 0xc0, 0x17, 0x0b, 0, 0]));
        assert!(!has_bitcode_magic(b"\x7fELF"));
        assert!(!has_bitcode_magic(b"BC"));
        // Bitcode magic alone is no module: libLLVM refuses it.
        assert!(!is_amdgcn_bitcode(b"BC\xc0\xde"));
    }
}
