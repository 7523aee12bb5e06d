//! The libLLVM edge of the JIT: reading a module, optimising it and
//! generating an AMDGPU object, through LLVM 16's own library
//! (`libLLVM-16.so.1`, the one libomptarget 16 loads) by way of `inkwell`.
//!
//! Steps and their settings follow `JITEngine::backend` and its helpers in
//! LLVM 16's `openmp/libomptarget/plugins-nextgen/common/PluginInterface/JIT.cpp`:
//!
//! - the module is read as `parseIR` reads it (bitcode or textual IR);
//! - the target machine is made for the module's triple, the device's
//!   processor (`HSA_AGENT_INFO_NAME`, LLVM's "compute unit kind"), PIC
//!   relocations (what the AMDGPU target always uses: LLVM passes the
//!   module's `PIC Level` or nothing, and `AMDGPUTargetMachine` makes
//!   either PIC), the default code model, and the code generation level of
//!   `LIBOMPTARGET_JIT_OPT_LEVEL` (`CodeGenOpt::getLevel`);
//! - optimisation is the new pass manager's per-module default pipeline at
//!   that level (`default<On>`, which for `O0` is `buildO0DefaultPipeline`,
//!   as LLVM's `JITEngine::opt`);
//! - code generation emits an ELF object (`CGFT_ObjectFile`).
//!
//! One difference, on purpose: the target features are the agent's XNACK
//! and SRAMECC settings (from its ISA name), where LLVM 16 passes none; the
//! object's `e_flags` then name the agent's exact target ID.
//!
//! These functions are meant to run in a child process ([`super::isolate`]):
//! LLVM's fatal errors end that child with a message ([`contain`]), and
//! error diagnostics are collected and returned instead of letting LLVM
//! call `exit`. `inkwell` owns the C API except for those two handlers
//! (`LLVMInstallFatalErrorHandler`, `LLVMContextSetDiagnosticHandler`),
//! the only `unsafe` here.

use std::ffi::{c_char, c_void, CStr};
use std::path::Path;
use std::sync::Once;

use inkwell::llvm_sys::core::{
    LLVMContextSetDiagnosticHandler, LLVMDisposeMessage, LLVMGetDiagInfoDescription,
    LLVMGetDiagInfoSeverity,
};
use inkwell::llvm_sys::error_handling::LLVMInstallFatalErrorHandler;
use inkwell::llvm_sys::prelude::LLVMDiagnosticInfoRef;
use inkwell::llvm_sys::LLVMDiagnosticSeverity;
use parking_lot::Mutex;

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine,
};
use inkwell::OptimizationLevel;

use super::error::JitError;

/// Registers LLVM's AMDGPU target once per process: target info, target,
/// MC layer and assembly printer (what `init` in LLVM's `JIT.cpp`
/// registers), and also the assembly parser, which LLVM 16's plugin leaves
/// out, so that kernels with inline assembly compile (there LLVM stops with
/// "Inline asm not supported by this streamer because we don't have an asm
/// parser for this target").
fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        Target::initialize_amd_gpu(&InitializationConfig {
            asm_parser: true,
            asm_printer: true,
            base: true,
            disassembler: false,
            info: true,
            machine_code: true,
        });
    });
}

/// Makes LLVM's fatal errors (`report_fatal_error`) end the calling child
/// of [`super::isolate::run`] with the reason as its error, instead of
/// LLVM's `exit(1)`.
fn contain() {
    extern "C" fn on_fatal(reason: *const c_char) {
        let text = if reason.is_null() {
            String::from("(no reason given)")
        } else {
            // SAFETY: LLVM passes a NUL-terminated reason, alive for the call.
            unsafe { CStr::from_ptr(reason) }
                .to_string_lossy()
                .into_owned()
        };
        super::isolate::fail_in_child(&format!("JIT: LLVM stopped: {text}"));
    }
    // SAFETY: `on_fatal` is a plain function of this library, never
    // unmapped (`-z nodelete`), and never returns.
    unsafe { LLVMInstallFatalErrorHandler(Some(on_fatal)) };
}

/// The error diagnostics LLVM reported on one context; warnings are
/// printed to stderr as LLVM's default handler prints them.
#[derive(Default)]
struct Diagnostics(Mutex<Vec<String>>);

impl Diagnostics {
    /// Installs `self` as `context`'s diagnostic handler. `self` must
    /// outlive every use of `context`.
    fn attach(&self, context: &Context) {
        extern "C" fn on_diagnostic(info: LLVMDiagnosticInfoRef, data: *mut c_void) {
            // SAFETY: LLVM passes a live diagnostic; its description is a
            // message we own and dispose of.
            let (severity, text) = unsafe {
                let d = LLVMGetDiagInfoDescription(info);
                let text = if d.is_null() {
                    String::new()
                } else {
                    let t = CStr::from_ptr(d).to_string_lossy().into_owned();
                    LLVMDisposeMessage(d);
                    t
                };
                (LLVMGetDiagInfoSeverity(info), text)
            };
            // SAFETY: `data` is the `Diagnostics` given to `attach`, which
            // outlives the context.
            let this = unsafe { &*(data as *const Diagnostics) };
            match severity {
                LLVMDiagnosticSeverity::LLVMDSError => this.0.lock().push(text),
                LLVMDiagnosticSeverity::LLVMDSWarning => {
                    use std::io::Write;
                    let _ = writeln!(std::io::stderr(), "warning: {text}");
                }
                _ => {}
            }
        }
        // SAFETY: `on_diagnostic` only reads the diagnostic and `self`,
        // which the caller keeps alive as long as the context.
        unsafe {
            LLVMContextSetDiagnosticHandler(
                context.raw(),
                Some(on_diagnostic),
                self as *const Diagnostics as *mut c_void,
            )
        };
    }

    /// `Err(step(messages))` when LLVM reported an error.
    fn check(&self, step: impl FnOnce(String) -> JitError) -> Result<(), JitError> {
        let errors = self.0.lock();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(step(errors.join("; ")))
        }
    }
}

/// LLVM's version, `(major, minor, patch)`, as the loaded library reports it.
pub fn version() -> (u32, u32, u32) {
    inkwell::support::get_llvm_version()
}

/// The target triple of the LLVM module in `bytes` (bitcode, raw or in
/// its wrapper), e.g. `amdgcn-amd-amdhsa`.
///
/// LLVM's plugin reads the triple from the module's IR symbol table
/// (`object::readIRSymtab` in `JITEngine::checkBitcodeImage`), which the C
/// API does not offer; this reads the module itself, so bitcode without a
/// symbol table is answered too.
///
/// Errors: [`JitError::Parse`] with LLVM's message when the bytes are not a
/// module LLVM 16 reads.
pub fn triple(bytes: &[u8]) -> Result<String, JitError> {
    contain();
    let diagnostics = Diagnostics::default();
    let context = Context::create();
    diagnostics.attach(&context);
    let module = parse(&context, bytes, "the device image")?;
    Ok(module.get_triple().as_str().to_string_lossy().into_owned())
}

/// Reads `bytes` (bitcode or textual IR) into a module of `context`.
fn parse<'c>(context: &'c Context, bytes: &[u8], what: &str) -> Result<Module<'c>, JitError> {
    // A copy: LLVM's IR lexer needs the buffer to end in a NUL.
    let buffer = MemoryBuffer::create_from_memory_range_copy(bytes, what);
    context
        .create_module_from_ir(buffer)
        .map_err(|e| JitError::Parse {
            what: what.to_string(),
            message: e.to_string(),
        })
}

/// What [`compile`] needs to know.
pub struct Backend<'a> {
    /// The processor, e.g. `gfx90a`.
    pub cpu: &'a str,
    /// LLVM target features, e.g. `+sramecc,-xnack` (may be empty).
    pub features: &'a str,
    /// `LIBOMPTARGET_JIT_OPT_LEVEL`, 0 to 3.
    pub opt_level: u32,
    /// `LIBOMPTARGET_JIT_SKIP_OPT`: no optimisation pipeline.
    pub skip_opt: bool,
    /// `LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE`: where the module is printed
    /// (textual IR) before optimisation.
    pub pre_opt_ir: Option<&'a Path>,
    /// `LIBOMPTARGET_JIT_POST_OPT_IR_MODULE`: where it is printed after.
    pub post_opt_ir: Option<&'a Path>,
}

/// Time spent in each step of [`compile`], in seconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// Reading the module.
    pub parse: f64,
    /// The optimisation pipeline.
    pub opt: f64,
    /// Code generation.
    pub codegen: f64,
}

/// Compiles the module in `source` (bitcode or textual IR; `what` names it
/// in errors) into an AMDGPU ELF relocatable object, as `JITEngine::backend`
/// does: target machine, pre-opt dump, optimisation (unless skipped),
/// post-opt dump, code generation.
///
/// Errors: [`JitError::Parse`] (not a module), [`JitError::Verify`] (the
/// module is not valid IR; LLVM's plugin would abort in code generation),
/// [`JitError::Target`] (no target for the triple, or no target machine),
/// [`JitError::Io`] (a dump file cannot be written),
/// [`JitError::Optimize`], [`JitError::Codegen`], each with LLVM's message.
pub fn compile(source: &[u8], what: &str, b: &Backend<'_>) -> Result<(Vec<u8>, Timings), JitError> {
    init();
    contain();
    let mut times = Timings::default();
    let t = std::time::Instant::now();
    let diagnostics = Diagnostics::default();
    let context = Context::create();
    diagnostics.attach(&context);
    let module = parse(&context, source, what)?;
    module.verify().map_err(|e| JitError::Verify {
        what: what.to_string(),
        message: e.to_string(),
    })?;
    times.parse = t.elapsed().as_secs_f64();
    let machine = target_machine(&module, b)?;
    if let Some(path) = b.pre_opt_ir {
        print(&module, path, "pre-optimisation")?;
    }
    let t = std::time::Instant::now();
    if !b.skip_opt {
        let pipeline = format!("default<O{}>", b.opt_level);
        module
            .run_passes(&pipeline, &machine, PassBuilderOptions::create())
            .map_err(|e| JitError::Optimize(e.to_string()))?;
        diagnostics.check(JitError::Optimize)?;
    }
    times.opt = t.elapsed().as_secs_f64();
    if let Some(path) = b.post_opt_ir {
        print(&module, path, "post-optimisation")?;
    }
    let t = std::time::Instant::now();
    let object = machine
        .write_to_memory_buffer(&module, FileType::Object)
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    diagnostics.check(JitError::Codegen)?;
    times.codegen = t.elapsed().as_secs_f64();
    Ok((object.as_slice().to_vec(), times))
}

/// The target machine of `createTargetMachine` in LLVM's `JIT.cpp`.
fn target_machine(module: &Module<'_>, b: &Backend<'_>) -> Result<TargetMachine, JitError> {
    let triple = module.get_triple();
    let target = Target::from_triple(&triple).map_err(|e| JitError::Target(format!("{e}")))?;
    let level = match b.opt_level {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    target
        .create_target_machine(
            &triple,
            b.cpu,
            b.features,
            level,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .ok_or_else(|| {
            JitError::Target(format!(
                "LLVM made no target machine for {} (processor {}, features {:?})",
                triple.as_str().to_string_lossy(),
                b.cpu,
                b.features
            ))
        })
}

/// Prints `module` as textual IR to `path` (LLVM's `Module::print`).
fn print(module: &Module<'_>, path: &Path, when: &str) -> Result<(), JitError> {
    module.print_to_file(path).map_err(|e| JitError::Io {
        what: format!("writing the {when} IR module"),
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}
