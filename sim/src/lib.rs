//! The virtual gfx90a device: an implementation of the HSA runtime C API
//! (`libhsa-runtime64.so`) whose one CPU agent and N gfx90a GPU agents run
//! real AMDGPU code objects on the host CPU.
//!
//! Layers, from the C ABI down:
//! - [`api`]: the exported `hsa_*` functions (thin, panic-proof, each checked
//!   at compile time against the prototype generated from `include/`);
//! - [`runtime`]: the global state between `hsa_init` and `hsa_shut_down`;
//! - [`agent`], [`memory`], [`signal`], [`queue`], [`copy`], [`executable`],
//!   [`loader`]: one module per HSA concept;
//! - [`aql`]: AQL packets, parsed and checked once for the packet processor;
//! - [`dispatch`]: running a kernel dispatch on the ISA engine;
//! - the `isa` crate: decoding and executing gfx90a instructions.
//!
//! Settings come from the environment (see [`config`]).

pub mod agent;
pub mod api;
pub mod aql;
pub mod clock;
pub mod config;
pub mod copy;
pub mod dispatch;
pub mod error;
pub mod executable;
pub mod handles;
pub mod host_guard;
pub mod host_memory;
pub mod loader;
pub mod memory;
pub mod queue;
pub mod runtime;
pub mod signal;
pub mod svm;

/// Starts `env_logger` once, from `RUST_LOG`, or at debug level when
/// `HSA_SIM_DEBUG` or `LIBOMPTARGET_DEBUG` is set to a non-zero value.
pub fn init_logging() {
    let debug = ["HSA_SIM_DEBUG", "LIBOMPTARGET_DEBUG"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.is_empty() && s != "0"));
    let mut b = env_logger::Builder::new();
    b.filter_level(if debug {
        log::LevelFilter::Debug
    } else {
        log::LevelFilter::Warn
    });
    if let Ok(spec) = std::env::var("RUST_LOG") {
        b.parse_filters(&spec);
    }
    let _ = b.try_init();
}

/// Puts the calling host thread's floating-point environment in the state the
/// ISA engine's host fast paths assume: round to nearest, no flush-to-zero, no
/// denormals-are-zero, every exception masked (MXCSR = 0x1F80, its reset value).
///
/// Threads the runtime creates (packet processors, dispatch helpers) inherit
/// the creating client thread's state, which a program built with fast-math
/// changes (FTZ/DAZ); kernels must not see the host program's FP mode.
pub fn reset_host_fp_env() {
    #[cfg(target_arch = "x86_64")]
    {
        let mxcsr: u32 = 0x1F80;
        // SAFETY: `ldmxcsr` reads 4 bytes from a live local holding a valid MXCSR
        // value (no reserved bits set); it changes only this thread's SSE mode.
        unsafe {
            std::arch::asm!("ldmxcsr [{0}]", in(reg) &mxcsr, options(nostack, readonly, preserves_flags));
        }
    }
}
