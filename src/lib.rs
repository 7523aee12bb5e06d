//! `omptarget-amdgpu`: a Rust drop-in for LLVM 16's AMDGPU offload plugin
//! (`libomptarget.rtl.amdgpu.so`), the library through which libomptarget
//! runs `#pragma omp target` regions on AMD GPUs via the HSA runtime.
//!
//! Layers, bottom up (see `ARCHITECTURE.md`, "The plugin (`src/`)"):
//!
//! - [`hsa`]: the safe HSA layer over the dlopened runtime
//!   ([`hsa_sys::HsaApi`]): one wrapper per call, `Result<_, HsaError>`;
//!   also [`hsa::HostSpan`] and [`hsa::DeviceRange`], the caller's host
//!   memory and libomptarget's device memory as one value each, built once
//!   (unsafely) in [`rtl`] and used safely everywhere below.
//! - [`signal`], [`queue`], [`memory`], [`pinned`], [`stream`]: owned
//!   handles (signals and their pool, AQL queues and the ring writes,
//!   memory pools, allocators and host blocks, pinned host ranges, streams
//!   and events).
//! - [`device`] (one GPU agent), holding one type per concept, as LLVM's
//!   nextgen plugin does: [`streams`] (the stream pool and the async-info
//!   protocol), [`events`] (the event table), [`allocator`] (`data_alloc` /
//!   `data_delete`), [`transfer`] (H2D, D2H and D2D copies and their one
//!   path policy), [`images`] (loaded code objects) and [`kernel`] (a
//!   kernel's init and launch).
//! - [`plugin`]: the process-wide plugin, the host device, creation and
//!   teardown.
//! - [`rtl`]: the `extern "C" __tgt_rtl_*` entry points of LLVM 16's plugin
//!   ABI (LLVM 16's `openmp/libomptarget/include/omptargetplugin.h`): the edge where C pointers
//!   become Rust values.
//!
//! Where `unsafe` lives: [`rtl`] (the C ABI: libomptarget's host buffers
//! become [`hsa::HostSpan`]s and its device pointers [`hsa::DeviceRange`]s
//! there, once, with its contract beside them; the `atexit` registration
//! of the teardown), the `hsa` crate (the HSA function table; host spans;
//! the safe DMA copy [`hsa::Hsa::copy_async`] between device ranges, and
//! host pool memory handed out as a span and a range), and [`queue`] (the
//! AQL ring writes), and [`jit`] (the `fork`/pipe of its LLVM child
//! process, and LLVM's fatal-error and diagnostic handlers). Besides these, [`images`] declares its target table
//! `Send`/`Sync` (`unsafe impl`, no `unsafe` block).
//!
//! Device-free helpers: [`abi`] (the C structs), [`handles`] (the
//! generation-counted tables behind event and stream handles, shared with
//! the virtual device), [`memory_manager`] (the size-class cache),
//! [`launch`] (teams and threads), [`image`] (code object inspection),
//! [`jit`] (LLVM bitcode images compiled at load through libLLVM 16 and
//! lld, with a disk cache).

pub mod abi;
pub mod allocator;
pub mod device;
pub mod env;
pub mod error;
pub mod events;
pub mod host_device;
pub mod image;
pub mod images;
pub mod info;
pub mod jit;
pub mod kernel;
pub mod launch;
pub mod logging;
pub mod memory;
pub mod memory_manager;
pub mod pinned;
pub mod plugin;
pub mod queue;
pub mod record;
pub mod rpc_host;
pub mod rtl;
pub mod signal;
pub mod stream;
pub mod streams;
pub mod transfer;

pub use error::{Error, Result};
pub use hsa_sys;
