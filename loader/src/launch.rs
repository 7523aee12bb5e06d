//! Device setup and kernel launches: argv/envp in fine-grained memory, the
//! RPC server and its client object, `__llvm_libc_clock_freq`, the queue,
//! and `_begin` / `_start` / `_end` with code object v5 implicit arguments
//! (LLVM 19 `amdgpu/Loader.cpp`, `launch_kernel`).

use std::ffi::c_void;

use code_object::KernelMetadata;
use hsa::{Hsa, KernelDispatch};
use hsa_sys::*;

use crate::cli::LaunchParameters;
use crate::memory::{Heap, Pools, Region};
use crate::{c_string, exit_with, resources, Error};

/// `HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY` (ROCm's `hsa_ext_amd.h`, newer
/// than the headers in `include/`): the GPU clock counter's frequency in Hz.
const HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY: u32 = 0xA016;

/// Bytes of the code object v5 implicit (hidden) kernel arguments.
const IMPLICIT_ARGS_BYTES: usize = 256;

/// Private segment bytes given to a kernel with a dynamic call stack.
const DYNAMIC_STACK_BYTES: u32 = 16 * 1024;

/// Copies `strings` into one fine-grained block: a NULL-terminated array of
/// pointers followed by the NUL-terminated strings. Returns its address.
pub fn copy_strings(region: &Region, strings: &[String]) -> Result<u64, Error> {
    let table = (strings.len() + 1) * 8;
    let bytes: Vec<std::ffi::CString> = strings.iter().map(|s| c_string(s)).collect();
    let total = table
        + bytes
            .iter()
            .map(|b| b.as_bytes_with_nul().len())
            .sum::<usize>();
    let base = region.allocate(total)?;
    let mut block = vec![0u8; total];
    let mut at = table;
    for (i, b) in bytes.iter().enumerate() {
        let s = b.as_bytes_with_nul();
        block[i * 8..i * 8 + 8].copy_from_slice(&(base + at as u64).to_le_bytes());
        block[at..at + s.len()].copy_from_slice(s);
        at += s.len();
    }
    // SAFETY: `base` is a fresh block of `total` bytes from the CPU agent's
    // fine-grained pool, which the host may write directly.
    unsafe { std::ptr::copy_nonoverlapping(block.as_ptr(), base as usize as *mut u8, total) };
    Ok(base)
}

/// The loader's environment as `NAME=value` strings.
pub fn environment() -> Vec<String> {
    std::env::vars_os()
        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
        .collect()
}

/// Address of a device variable, or `None` when the image lacks it.
fn variable_address(
    hsa: &Hsa,
    exe: hsa_executable_t,
    gpu: hsa_agent_t,
    name: &str,
) -> Result<Option<u64>, Error> {
    let cname = c_string(name);
    match hsa.executable_symbol(exe, &cname, gpu) {
        Ok(sym) => Ok(Some(hsa.symbol_info::<u64>(
            sym,
            HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
        )?)),
        Err(e) if e.status == HSA_STATUS_ERROR_INVALID_SYMBOL_NAME => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Copies `bytes` to device address `dst` through a fine-grained staging
/// block.
fn write_device(region: &Region, dst: u64, bytes: &[u8]) -> Result<(), Error> {
    let staging = region.allocate(bytes.len())?;
    // SAFETY: `staging` is a fresh host-writable block of that size; `dst` is
    // the address of a device variable the runtime loaded, of at least
    // `bytes.len()` bytes (the caller's contract per variable).
    let r = unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), staging as usize as *mut u8, bytes.len());
        region.hsa().memory_copy(
            dst as usize as *mut c_void,
            staging as usize as *const c_void,
            bytes.len(),
        )
    };
    region.hsa().pool_free(staging)?;
    Ok(r?)
}

/// Reads `N` bytes at device address `src` through a staging block.
fn read_device<const N: usize>(region: &Region, src: u64) -> Result<[u8; N], Error> {
    let staging = region.allocate(N)?;
    let mut out = [0u8; N];
    // SAFETY: as `write_device`, the other way round.
    let r = unsafe {
        region
            .hsa()
            .memory_copy(
                staging as usize as *mut c_void,
                src as usize as *const c_void,
                N,
            )
            .map(|()| {
                std::ptr::copy_nonoverlapping(staging as usize as *const u8, out.as_mut_ptr(), N)
            })
    };
    region.hsa().pool_free(staging)?;
    r?;
    Ok(out)
}

/// Starts the RPC server when the image has `__llvm_libc_rpc_client`:
/// 4096 ports of `wavefront` lanes in fine-grained memory, MALLOC/FREE
/// from the GPU's coarse-grained pool, the client object written where the
/// symbol points, and the libc tests' own opcodes served
/// ([`crate::test_opcodes`]). EXIT and ABORT end the process from the
/// server thread, as LLVM's server does.
pub fn start_rpc(
    hsa: &Hsa,
    pools: &Pools,
    exe: hsa_executable_t,
    gpu: hsa_agent_t,
    wavefront: u32,
) -> Result<Option<rpc::Service>, Error> {
    let fine = Region::new(hsa, pools.fine_grained, gpu);
    let Some(symbol) = variable_address(hsa, exe, gpu, rpc::CLIENT_SYMBOL)? else {
        return Ok(None);
    };
    let mut server = rpc::Server::new(rpc::MAX_PORT_COUNT, wavefront, Box::new(fine.clone()))?;
    server.set_device_heap(Box::new(Heap::new(Region::new(
        hsa,
        pools.coarse_grained,
        gpu,
    ))));
    crate::test_opcodes::register(&mut server);
    let client = u64::from_le_bytes(read_device::<8>(&fine, symbol)?);
    if client == 0 {
        return Err(Error::Missing(format!(
            "{} is NULL in the image",
            rpc::CLIENT_SYMBOL
        )));
    }
    write_device(&fine, client, &server.client_object())?;
    let service = rpc::Service::start(server, |event| match event {
        rpc::Event::Exit(code) => exit_with(code),
        rpc::Event::Abort => {
            // SAFETY: flushing the C streams before aborting, as abort() in
            // LLVM's server leaves them (glibc flushes on abort too).
            unsafe { libc::fflush(std::ptr::null_mut()) };
            std::process::abort()
        }
        rpc::Event::Error(e) => {
            eprintln!("amdhsa-loader: RPC: {e}");
            exit_with(1)
        }
    })?;
    Ok(Some(service))
}

/// Writes the GPU clock counter's frequency to `__llvm_libc_clock_freq`
/// when the image has it (the agent's timestamp frequency, else the
/// system's).
pub fn set_clock_frequency(
    hsa: &Hsa,
    fine: &Region,
    exe: hsa_executable_t,
    gpu: hsa_agent_t,
) -> Result<(), Error> {
    let Some(address) = variable_address(hsa, exe, gpu, "__llvm_libc_clock_freq")? else {
        return Ok(());
    };
    let freq = match hsa.agent_info::<u64>(gpu, HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY) {
        Ok(f) => f,
        Err(_) => hsa.system_info_u64(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY)?,
    };
    write_device(fine, address, &freq.to_le_bytes())
}

/// The AQL queue: its error callback reports the failure and ends the
/// process (a failed dispatch never signals completion).
pub struct Queue {
    hsa: Hsa,
    queue: *mut hsa_queue_t,
}

unsafe extern "C" fn queue_error(status: hsa_status_t, _q: *mut hsa_queue_t, data: *mut c_void) {
    // SAFETY: `data` is the leaked `Hsa` given at creation, never freed.
    let hsa = unsafe { &*(data as *const Hsa) };
    let text = hsa.status_text(status);
    let _ = std::panic::catch_unwind(|| eprintln!("amdhsa-loader: kernel failed: {text}"));
    // SAFETY: flush the C streams, then end without destructors (the
    // runtime's thread calling us may hold its locks).
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(1)
    }
}

impl Queue {
    /// `hsa_queue_create` of `size` packets on `gpu`.
    pub fn create(hsa: &Hsa, gpu: hsa_agent_t, size: u32) -> Result<Queue, Error> {
        let data = Box::leak(Box::new(hsa.clone())) as *mut Hsa as *mut c_void;
        // SAFETY: `queue_error` accepts `data` (a leaked `Hsa`) at any time.
        let queue = unsafe { hsa.queue_create(gpu, size, Some(queue_error), data)? };
        Ok(Queue {
            hsa: hsa.clone(),
            queue,
        })
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: created by `create`, destroyed once here.
        let _ = unsafe { self.hsa.queue_destroy(self.queue) };
    }
}

/// What every launch needs.
pub struct Launcher<'a> {
    /// The runtime.
    pub hsa: &'a Hsa,
    /// The frozen executable.
    pub exe: hsa_executable_t,
    /// The GPU agent.
    pub gpu: hsa_agent_t,
    /// Pool for kernel arguments.
    pub kernarg_pool: hsa_amd_memory_pool_t,
    /// The queue.
    pub queue: &'a Queue,
    /// The RPC service, when the image uses RPC.
    pub service: Option<&'a rpc::Service>,
    /// The image's kernel metadata (for the implicit arguments' offset).
    pub metadata: &'a [KernelMetadata],
    /// The image bytes (for `--print-resource-usage`).
    pub image: &'a [u8],
    /// Print each kernel's resources before launching it.
    pub print_resource_usage: bool,
}

impl Launcher<'_> {
    /// Launches kernel `name` with `explicit` argument bytes followed by the
    /// implicit arguments, and waits for it while the RPC server runs.
    pub fn launch(
        &self,
        name: &str,
        params: &LaunchParameters,
        explicit: &[u8],
    ) -> Result<(), Error> {
        let hsa = self.hsa;
        let symbol_name = c_string(&format!("{name}.kd"));
        let sym = hsa
            .executable_symbol(self.exe, &symbol_name, self.gpu)
            .map_err(|e| {
                if e.status == HSA_STATUS_ERROR_INVALID_SYMBOL_NAME {
                    Error::Missing(format!("the image has no kernel {name} ({e})"))
                } else {
                    e.into()
                }
            })?;
        let kernel_object: u64 = hsa.symbol_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT)?;
        let kernarg_size: u32 =
            hsa.symbol_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE)?;
        let group_size: u32 =
            hsa.symbol_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE)?;
        let private_size: u32 =
            hsa.symbol_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE)?;
        let dynamic_stack =
            hsa.symbol_info::<u8>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK)? != 0;

        // The implicit arguments start where the metadata puts
        // hidden_block_count_x, else after the explicit ones, 8-aligned.
        let implicit = self
            .metadata
            .iter()
            .find(|k| k.name == name)
            .and_then(|k| {
                k.args
                    .iter()
                    .find(|a| a.value_kind == "hidden_block_count_x")
            })
            .map(|a| a.offset as usize)
            .unwrap_or_else(|| explicit.len().div_ceil(8) * 8);
        let size = (kernarg_size as usize)
            .max(implicit + IMPLICIT_ARGS_BYTES)
            .max(explicit.len());
        let mut args = vec![0u8; size];
        args[..explicit.len()].copy_from_slice(explicit);
        for d in 0..3 {
            let at = implicit + 4 * d;
            args[at..at + 4].copy_from_slice(&params.blocks[d].to_le_bytes());
        }
        let mut workgroup = [0u16; 3];
        let mut grid = [0u32; 3];
        for d in 0..3 {
            workgroup[d] = u16::try_from(params.threads[d]).map_err(|_| {
                Error::Usage(format!(
                    "{} threads per block do not fit 16 bits",
                    params.threads[d]
                ))
            })?;
            grid[d] = params.blocks[d]
                .checked_mul(params.threads[d])
                .ok_or_else(|| {
                    Error::Usage("the grid has more than 2^32 work-items in a dimension".into())
                })?;
            let at = implicit + 12 + 2 * d;
            args[at..at + 2].copy_from_slice(&workgroup[d].to_le_bytes());
        }
        let dims: u16 = if grid[2] > 1 {
            3
        } else if grid[1] > 1 {
            2
        } else {
            1
        };
        args[implicit + 64..implicit + 66].copy_from_slice(&dims.to_le_bytes());

        let region = Region::new(hsa, self.kernarg_pool, self.gpu);
        let kernarg = region.allocate(size)?;
        // SAFETY: a fresh host-writable kernarg block of `size` bytes.
        unsafe { std::ptr::copy_nonoverlapping(args.as_ptr(), kernarg as usize as *mut u8, size) };

        if self.print_resource_usage {
            print_resources(name, self.image, params, dynamic_stack);
        }

        let signal = hsa.signal_create(1)?;
        let packet = KernelDispatch {
            dimensions: dims,
            workgroup_size: workgroup,
            grid_size: grid,
            private_segment_size: if dynamic_stack {
                DYNAMIC_STACK_BYTES
            } else {
                private_size
            },
            group_segment_size: group_size,
            kernel_object,
            kernarg_address: kernarg as usize as *mut c_void,
            completion_signal: signal,
        };
        let guard = self.service.map(|s| s.kernel_started());
        // SAFETY: the queue is live; the kernarg block and the executable
        // outlive the wait below.
        unsafe { hsa.dispatch_kernel(self.queue.queue, &packet) };
        hsa.signal_wait_done(signal);
        drop(guard);
        hsa.signal_destroy(signal)?;
        hsa.pool_free(kernarg)?;
        Ok(())
    }
}

fn print_resources(name: &str, image: &[u8], params: &LaunchParameters, dynamic_stack: bool) {
    let threads = params.threads.iter().product::<u32>();
    match resources::from_image(image, name) {
        Some(r) => eprintln!(
            "{name}: SGPRs {}, VGPRs {} (architectural {}, AGPRs at most {}), LDS {} bytes, scratch {} bytes per work-item{}, occupancy {} waves per SIMD",
            r.sgprs,
            r.vgprs_total,
            r.arch_vgprs,
            r.agprs,
            r.lds,
            r.scratch,
            if dynamic_stack { " (dynamic call stack: 16384 given)" } else { "" },
            r.occupancy(threads)
        ),
        None => eprintln!("{name}: no kernel descriptor {name}.kd in the image"),
    }
}
