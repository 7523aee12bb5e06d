//! `omptarget-amdgpu`: a Rust drop-in for LLVM 16's AMDGPU offload plugin
//! (`libomptarget.rtl.amdgpu.so`), the library through which libomptarget
//! runs `#pragma omp target` regions on AMD GPUs via the HSA runtime.
//!
//! Layers, bottom up (see `shared/DESIGN.md`, "The plugin, inside"):
//!
//! - [`hsa`]: the result layer over the dlopened HSA runtime
//!   ([`hsa_sys::HsaApi`]): one wrapper per call, `Result<_, HsaError>`.
//! - [`signal`], [`queue`], [`memory`], [`pinned`], [`stream`]: owned handles
//!   (signals and their pool, AQL queues, memory pools and allocators,
//!   pinned host ranges, streams and events).
//! - [`device`] (one GPU agent) and [`plugin`] (the process-wide plugin, the
//!   host device, creation and teardown).
//! - [`rtl`]: the `extern "C" __tgt_rtl_*` entry points of LLVM 16's plugin
//!   ABI (spec `omptarget-plugin-abi.md` §2).
//!
//! Device-free helpers: [`abi`] (the C structs), [`handles`] (the
//! generation-counted tables behind event and stream handles),
//! [`memory_manager`] (the
//! size-class cache), [`launch`] (teams and threads), [`image`] (code object
//! inspection).

pub mod abi;
pub mod allocator;
pub mod device;
pub mod env;
pub mod error;
pub mod events;
/// The generation-counted handle tables (crate `handles/`), shared with the
/// virtual device, re-exported so `crate::handles::...` paths keep working.
pub use ::handles;
/// The safe HSA layer, now its own crate (`hsa/`), re-exported so
/// `crate::hsa::...` paths keep working.
pub use ::hsa;
pub mod image;
pub mod images;
pub mod info;
pub mod kernel;
pub mod launch;
pub mod logging;
pub mod memory;
pub mod memory_manager;
pub mod pinned;
pub mod plugin;
pub mod queue;
pub mod rpc_host;
pub mod rtl;
pub mod signal;
pub mod stream;
pub mod streams;
pub mod transfer;

pub use error::{Error, Result};
pub use hsa_sys;
