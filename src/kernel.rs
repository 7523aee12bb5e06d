//! A kernel of a loaded image (LLVM's `AMDGPUKernelTy` over
//! `GenericKernelTy`): built once from its `.kd` symbol and metadata
//! ([`Kernel::init`]), then launched ([`Kernel::launch`]): geometry from
//! the launch request, kernarg block, dispatch-limit check, AQL dispatch on
//! the stream of the async info (LLVM 16's `AMDGPUKernelTy::launchImpl`,
//! `plugins-nextgen/amdgpu/src/rtl.cpp`).

use crate::abi::{self, AsyncInfo, KernelArgs};
use crate::env;
use crate::error::{Error, Result};
use crate::image;
use crate::launch::{self, ExecMode, GridValues, LaunchRequest};
use crate::queue::Dispatch;
use crate::rpc_host::ImageRpc;
use crate::stream::Held;
use crate::streams::StreamPool;
use hsa::Hsa;
use hsa_sys::*;
use std::sync::Arc;

/// What one kernel dispatch may ask of the agent; a launch asking more is
/// refused before anything is queued (the packet processor would stop the
/// queue on it and report the error to the callback given to
/// `hsa_queue_create`, `hsa/hsa.h`).
#[derive(Debug, Clone, Copy)]
pub struct DispatchLimits {
    /// Work-items per workgroup (`HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`, and
    /// the x limit of `WORKGROUP_MAX_DIM`).
    pub workgroup_max: u32,
    /// Work-items of the grid in x (`HSA_AGENT_INFO_GRID_MAX_DIM`).
    pub grid_max: u32,
    /// Bytes of LDS per workgroup: the size of the agent's GROUP-segment
    /// memory pool (0 when the runtime reports none: then unchecked).
    pub group_segment_max: u32,
    /// Bytes of scratch per work-item.
    pub private_segment_max: u32,
}

impl DispatchLimits {
    /// Checks one dispatch of kernel `name` against the limits.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the limit and the request.
    #[inline]
    pub fn check(&self, name: &str, d: &Dispatch, static_lds: u32, dynamic_lds: u32) -> Result<()> {
        // The common case in a few compares; the messages are built apart.
        let fits = (self.group_segment_max == 0 || d.group_segment_size <= self.group_segment_max)
            && u32::from(d.workgroup_size) <= self.workgroup_max
            && d.grid_size <= self.grid_max
            && d.private_segment_size <= self.private_segment_max;
        if fits {
            return Ok(());
        }
        self.refuse(name, d, static_lds, dynamic_lds)
    }

    /// The error of a dispatch [`DispatchLimits::check`] found over a limit.
    #[cold]
    #[inline(never)]
    fn refuse(&self, name: &str, d: &Dispatch, static_lds: u32, dynamic_lds: u32) -> Result<()> {
        let refuse = |what: String| {
            Err(Error::InvalidArgument(format!(
                "kernel {name} cannot run on this device: {what}"
            )))
        };
        if self.group_segment_max != 0 && d.group_segment_size > self.group_segment_max {
            return refuse(format!(
                "it needs {} bytes of LDS per workgroup ({static_lds} static + {dynamic_lds} dynamic), \
                 the agent's group segment holds {} bytes",
                u64::from(static_lds) + u64::from(dynamic_lds),
                self.group_segment_max
            ));
        }
        if u32::from(d.workgroup_size) > self.workgroup_max {
            return refuse(format!(
                "workgroup of {} work-items, the agent allows {}",
                d.workgroup_size, self.workgroup_max
            ));
        }
        if d.grid_size > self.grid_max {
            return refuse(format!(
                "grid of {} work-items, the agent allows {}",
                d.grid_size, self.grid_max
            ));
        }
        if d.private_segment_size > self.private_segment_max {
            return refuse(format!(
                "it needs {} bytes of scratch per work-item, the maximum is {}",
                d.private_segment_size, self.private_segment_max
            ));
        }
        Ok(())
    }
}

/// What a launch uses of its device: its id (for messages), grid values, the
/// LDS every launch adds (`LIBOMPTARGET_SHARED_MEMORY_SIZE`), the agent's dispatch
/// limits and the streams the kernel is queued on ([`crate::device::Device::launch_target`]).
pub struct LaunchTarget<'a> {
    /// Device id.
    pub id: i32,
    /// The agent's grid values (teams and threads rules).
    pub grid: &'a GridValues,
    /// Bytes of dynamic LDS every launch gets at least.
    pub shared_memory_size: u32,
    /// What one dispatch may ask of the agent.
    pub limits: &'a DispatchLimits,
    /// The device's streams.
    pub streams: &'a StreamPool,
}

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

    /// `launch_kernel` (`GenericKernelTy::launch` in LLVM 16's `PluginInterface.cpp`)
    /// on `device`: teams/threads from `kargs`, a
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
        device: &LaunchTarget<'_>,
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
        let geometry = launch::compute_launch(&req, device.grid);
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
        let dynamic = kargs.dyn_cgroup_mem.max(device.shared_memory_size);
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
        device.streams.on_stream(info, |stream| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::max_private_segment;

    fn dispatch(workgroup: u16, grid: u32, lds: u32, scratch: u32) -> Dispatch {
        Dispatch {
            kernel_object: 0x1000,
            kernarg: 0,
            workgroup_size: workgroup,
            grid_size: grid,
            group_segment_size: lds,
            private_segment_size: scratch,
        }
    }

    /// Each limit refuses one unit over it, names itself and the request,
    /// and lets the value at the limit through.
    #[test]
    fn dispatch_limits_refuse_what_the_agent_cannot_run() {
        // gfx90a: 64 KiB of LDS, 1024 work-items per workgroup, waves of 64.
        let limits = DispatchLimits {
            workgroup_max: 1024,
            grid_max: u32::MAX - 1,
            group_segment_max: 65536,
            private_segment_max: max_private_segment(64),
        };
        // 8191 KiB per wave over 64 lanes.
        assert_eq!(limits.private_segment_max, 8191 * 1024 / 64);
        assert!(limits
            .check(
                "k",
                &dispatch(1024, u32::MAX - 1, 65536, 131_056),
                1024,
                64512
            )
            .is_ok());
        let cases = [
            (
                dispatch(64, 64, 65537, 0),
                1,
                65536,
                "65537 bytes of LDS per workgroup (1 static + 65536 dynamic)",
            ),
            (
                dispatch(64, 64, 65537, 0),
                1,
                65536,
                "group segment holds 65536 bytes",
            ),
            (
                dispatch(1025, 1025, 0, 0),
                0,
                0,
                "workgroup of 1025 work-items, the agent allows 1024",
            ),
            (
                dispatch(64, u32::MAX, 0, 0),
                0,
                0,
                "grid of 4294967295 work-items",
            ),
            (
                dispatch(64, 64, 0, 131_057),
                0,
                0,
                "131057 bytes of scratch per work-item, the maximum is 131056",
            ),
        ];
        for (d, static_lds, dynamic_lds, want) in cases {
            let e = limits
                .check("kern", &d, static_lds, dynamic_lds)
                .unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains("kernel kern") && text.contains(want),
                "{text}"
            );
        }
    }
}
