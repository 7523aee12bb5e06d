//! The JIT's error type, below every other module of [`crate::jit`] (each
//! of them returns it).

use std::path::PathBuf;

/// Errors of the JIT; each names the step that failed and carries the
/// tool's own message.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The module could not be read (`parseIR`'s message).
    #[error("JIT: {what} is not an LLVM module that LLVM 16 reads: {message}")]
    Parse {
        /// Which module (the device image, a replacement module).
        what: String,
        /// LLVM's message.
        message: String,
    },
    /// The module is not valid IR (LLVM's verifier).
    #[error("JIT: {what} is not valid LLVM IR: {message}")]
    Verify {
        /// Which module.
        what: String,
        /// The verifier's message.
        message: String,
    },
    /// No target or target machine for the module.
    #[error("JIT: no AMDGPU target machine: {0}")]
    Target(String),
    /// The optimisation pipeline failed.
    #[error("JIT: optimisation failed: {0}")]
    Optimize(String),
    /// Code generation failed.
    #[error("JIT: code generation failed: {0}")]
    Codegen(String),
    /// Linking the object with lld failed.
    #[error("JIT: linking with {linker} failed: {message}")]
    Link {
        /// The linker program.
        linker: String,
        /// Its exit status and messages, or why it could not run.
        message: String,
    },
    /// A file could not be read or written.
    #[error("JIT: {what} ({}): {message}", path.display())]
    Io {
        /// What was being done.
        what: String,
        /// The file.
        path: PathBuf,
        /// The system's or LLVM's message.
        message: String,
    },
    /// A knob's value is out of range.
    #[error("JIT: {knob}={value}: {why}")]
    Knob {
        /// The variable.
        knob: &'static str,
        /// Its value.
        value: String,
        /// What is accepted.
        why: &'static str,
    },
    /// An error the LLVM child process reported ([`super::isolate`]), with its
    /// message as the child wrote it.
    #[error("{0}")]
    Reported(String),
    /// The LLVM child process died: LLVM crashed or stopped on the input.
    #[error("JIT: LLVM {how} while {what} (damaged bitcode, or a module LLVM 16 cannot handle)")]
    Crashed {
        /// The step, e.g. `reading the device image`.
        what: String,
        /// How it ended, e.g. `was killed by signal 6`.
        how: String,
    },
    /// The agent's target ID names no processor.
    #[error("JIT: the agent's target ID {0:?} names no processor")]
    NoProcessor(String),
}
