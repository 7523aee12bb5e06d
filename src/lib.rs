//! `omptarget-amdgpu`: a Rust drop-in for LLVM 16's AMDGPU offload plugin
//! (`libomptarget.rtl.amdgpu.so`).
//!
//! This is the skeleton of the plugin; the `__tgt_rtl_*` entry points arrive
//! with issue 4. Today it only re-exports the HSA function table so that the
//! plugin's dlopen path is built and tested.

pub use hsa_sys;
