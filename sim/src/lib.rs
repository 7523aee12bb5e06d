//! The virtual gfx90a device: an implementation of the HSA runtime C API
//! (`libhsa-runtime64.so`) whose one CPU agent and N gfx90a GPU agents run
//! real AMDGPU code objects on the host CPU.
//!
//! Layers, from the C ABI down:
//! - [`api`]: the exported `hsa_*` functions (thin, panic-proof, each checked
//!   at compile time against the prototype generated from `include/`);
//! - [`runtime`]: the global state between `hsa_init` and `hsa_shut_down`;
//! - [`agent`], [`memory`], [`signal`], [`queue`], [`copy`], [`executable`],
//!   [`loader`], [`dispatch`]: one module per HSA concept;
//! - the `isa` crate: decoding and executing gfx90a instructions.
//!
//! Settings come from the environment (see [`config`]).

pub mod agent;
pub mod api;
pub mod config;
pub mod copy;
pub mod dispatch;
pub mod error;
pub mod executable;
pub mod handles;
pub mod loader;
pub mod memory;
pub mod queue;
pub mod runtime;
pub mod signal;

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
