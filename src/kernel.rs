//! A kernel of a loaded image (LLVM's `AMDGPUKernelTy` over
//! `GenericKernelTy`): built once from its `.kd` symbol and metadata
//! ([`Kernel::init`]), then launched ([`Kernel::launch`]): geometry from
//! the launch request, kernarg block, dispatch-limit check, AQL dispatch on
//! the stream of the async info (spec §5).

use crate::abi::{self, AsyncInfo, KernelArgs};
use crate::device::Device;
use crate::env;
use crate::error::{Error, Result};
use crate::hsa::Hsa;
use crate::image;
use crate::launch::{self, ExecMode, LaunchRequest};
use crate::queue::Dispatch;
use crate::rpc_host::ImageRpc;
use crate::stream::Held;
use hsa_sys::*;
use std::sync::Arc;

/// A kernel of a loaded image; its address is the handle placed in the
/// target table (`OffloadEntry::addr`) and passed back to `launch_kernel`.
#[derive(Debug)]
pub struct Kernel {
    /// The kernel's name (without `.kd`).
    pub name: String,
    /// Address of the kernel descriptor (`KERNEL_OBJECT`).
    pub kernel_object: u64,
    /// `KERNARG_SEGMENT_SIZE` in bytes (8 per explicit argument for OpenMP).
    pub kernarg_size: u32,
    /// Static LDS bytes (`GROUP_SEGMENT_SIZE`).
    pub group_size: u32,
    /// Scratch bytes per work-item (`PRIVATE_SEGMENT_SIZE`).
    pub private_size: u32,
    /// From `<name>_exec_mode` (SPMD when absent, as LLVM 16).
    pub exec_mode: ExecMode,
    /// `.max_flat_workgroup_size` from the metadata, 0 when unknown.
    pub max_threads: u32,
    /// The RPC server of the kernel's image when the image defines the
    /// client symbol (`libcgpu.a` linked in), else `None`.
    pub rpc: Option<Arc<ImageRpc>>,
}

impl Kernel {
    /// The kernel `name` of the executable whose `.kd` symbol is `sym`:
    /// its descriptor address and segment sizes from the symbol, its exec
    /// mode from the image bytes, its workgroup limit from `metadata`.
    ///
    /// Errors: `sym` is not a kernel symbol; a failing symbol query; a bad
    /// exec-mode global.
    pub fn init(
        hsa: &Hsa,
        sym: hsa_executable_symbol_t,
        name: &str,
        bytes: &[u8],
        metadata: &[image::KernelInfo],
        rpc: Option<&Arc<ImageRpc>>,
    ) -> Result<Kernel> {
        let kind = hsa.symbol_info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE)?;
        if kind != HSA_SYMBOL_KIND_KERNEL {
            return Err(Error::NotAKernel(name.to_string()));
        }
        let max_threads = metadata
            .iter()
            .find(|k| k.name == name)
            .map(|k| k.max_flat_workgroup_size)
            .unwrap_or(0);
        Ok(Kernel {
            name: name.to_string(),
            kernel_object: hsa.symbol_info::<u64>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT)?,
            kernarg_size: hsa
                .symbol_info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE)?,
            group_size: hsa
                .symbol_info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE)?,
            private_size: hsa
                .symbol_info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE)?,
            exec_mode: image::kernel_exec_mode(bytes, name)?,
            max_threads,
            rpc: rpc.cloned(),
        })
    }

    /// `launch_kernel` (spec §5) on `device`: teams/threads from `kargs`, a
    /// kernarg block with `args` (8 bytes each) followed by the 56-byte
    /// implicit block, and an AQL dispatch on the stream of `info`.
    /// `info_flags` is the plugin's `LIBOMPTARGET_INFO` mask.
    ///
    /// `args` yields the argument values (`args.len()` of them), read while
    /// the block is filled.
    ///
    /// Errors: the kernel takes fewer kernarg bytes than `args` need; the
    /// grid overflows 32 bits; the dispatch exceeds the agent's limits; no
    /// kernarg memory; the queue is broken.
    pub fn launch(
        &self,
        device: &Device,
        args: impl ExactSizeIterator<Item = u64>,
        kargs: &KernelArgs,
        info: &mut AsyncInfo,
        info_flags: u32,
    ) -> Result<()> {
        let num_args = args.len();
        let explicit = num_args * 8;
        if (self.kernarg_size as usize) < explicit {
            return Err(Error::InvalidArgument(format!(
                "kernel {} takes {} bytes of arguments, {} given",
                self.name, self.kernarg_size, explicit
            )));
        }
        let req = LaunchRequest {
            num_teams: kargs.num_teams,
            thread_limit: kargs.thread_limit,
            loop_tripcount: kargs.tripcount,
            mode: self.exec_mode,
            kernel_max_threads: self.max_threads,
        };
        let geometry = launch::compute_launch(&req, &device.grid);
        let grid_size = geometry
            .num_teams
            .checked_mul(geometry.num_threads)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{} teams of {} threads exceed the 32-bit grid",
                    geometry.num_teams, geometry.num_threads
                ))
            })?;
        if info_flags & abi::OMP_INFOTYPE_PLUGIN_KERNEL != 0 && env::i32_or(env::DEBUG, 0) <= 0 {
            eprintln!(
                "{}",
                launch::launch_info_line(device.id, &self.name, &geometry, self.exec_mode)
            );
        }
        log::debug!(
            "device {}: launch {} ({:?}) with {} teams x {} threads, {} args",
            device.id,
            self.name,
            self.exec_mode,
            geometry.num_teams,
            geometry.num_threads,
            num_args
        );

        // Kernarg block: explicit arguments, then the zeroed implicit block.
        let block_size = (explicit + abi::IMPLICIT_ARGS_SIZE).max(self.kernarg_size as usize);
        let dynamic = kargs.dyn_cgroup_mem.max(device.config.shared_memory_size);
        let dispatch = Dispatch {
            kernel_object: self.kernel_object,
            kernarg: 0,
            workgroup_size: u16::try_from(geometry.num_threads).unwrap_or(u16::MAX),
            grid_size,
            group_segment_size: self.group_size.saturating_add(dynamic),
            private_segment_size: self.private_size,
        };
        // Checked on the stream, so that a refused launch fails the async
        // info's synchronization as any other failed launch does.
        device.streams().on_stream(info, |stream| {
            device
                .limits
                .check(&self.name, &dispatch, self.group_size, dynamic)?;
            let fill = |block: &mut [u8]| fill_kernargs(block, explicit, args);
            let Some(rpc) = &self.rpc else {
                return stream.push_kernel(&dispatch, block_size, fill);
            };
            // The server polls from before the kernel starts until its
            // stream completes.
            let in_flight = rpc.kernel_started();
            stream.push_kernel(&dispatch, block_size, fill)?;
            stream.hold_with_last(Held::Other(Box::new(in_flight)));
            Ok(())
        })
    }
}

/// Writes the explicit kernel arguments (8 bytes each) to the start of a
/// kernarg block and zeroes the rest (missing values, the implicit block and
/// padding); `explicit <= block.len()`.
#[inline(always)]
fn fill_kernargs(block: &mut [u8], explicit: usize, args: impl Iterator<Item = u64>) {
    let explicit = explicit.min(block.len());
    let mut filled = 0;
    for (chunk, a) in block[..explicit].chunks_exact_mut(8).zip(args) {
        chunk.copy_from_slice(&a.to_le_bytes());
        filled += 8;
    }
    block[filled..].fill(0);
}
