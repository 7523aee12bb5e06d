//! Host services for OpenMP target regions: the plugin's side of
//! `libcgpu.a` (`device/omp/cgpu.c`), which gives LLVM 16's device code
//! `printf`, `puts`, `malloc` and `free` over LLVM 19 libc's GPU RPC
//! protocol.
//!
//! When a loaded image defines [`rpc::CLIENT_SYMBOL`], the device gets one
//! [`ImageRpc`] for that image: a [`rpc::Server`] whose shared buffer lives
//! in fine-grained host memory every GPU agent may reach, whose client
//! object is written to the address the symbol holds, and whose device
//! heap hands out device memory for `malloc`; a [`rpc::Service`] thread
//! serves it. The thread sleeps (no CPU) until a kernel of that image is
//! launched: every launch of such a kernel holds a [`RpcInFlight`] in its
//! stream slot, so the thread polls until the stream completes
//! (`synchronize`, or a `query` that finds it done), then serves what is
//! left once more and sleeps again.
//!
//! Output ordering: each `printf`/`puts` of the client waits for the
//! server's answer, which is sent after the text was handed to the host's
//! `stdout` stream, so when a kernel completes every line it printed is
//! already in the host's `stdout` ahead of anything the host prints next.
//!
//! Images without the symbol get nothing of this: no buffer, no thread, and
//! their kernels carry `None`, one untaken branch per launch.

use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hsa_sys::{hsa_agent_t, hsa_executable_t};

use crate::error::{Error, Result};
use crate::host_device::HostDevice;
use crate::memory::PoolManager;
use crate::transfer::Transfers;
use hsa::Hsa;

/// Ports of each image's RPC buffer (LLVM 19 allows up to 4096). Every
/// wavefront holds at most one port at a time, so this bounds how many
/// wavefronts can talk to the host at once; the others wait for a port.
pub const PORT_COUNT: u32 = 1024;

/// Lanes of a gfx90a wavefront.
const LANE_SIZE: u32 = 64;

/// The shared buffer's memory: fine-grained host memory from the host
/// device's pool, made accessible to every GPU agent.
struct FineMemory {
    host: Arc<HostDevice>,
}

impl rpc::SharedAllocator for FineMemory {
    fn allocate(&mut self, size: usize) -> std::result::Result<NonNull<u8>, String> {
        let block = self.host.allocate_fine(size).map_err(|e| e.to_string())?;
        NonNull::new(block.addr() as *mut u8).ok_or_else(|| "the pool returned NULL".to_string())
    }

    unsafe fn deallocate(&mut self, ptr: NonNull<u8>, _size: usize) {
        if let Err(e) = self.host.free_fine(ptr.as_ptr() as u64) {
            log::debug!("freeing the RPC buffer: {e}");
        }
    }
}

/// Device `malloc`/`free`: blocks of the device's memory manager (coarse-
/// grained device memory), usable by the device until freed or the device
/// is torn down. The server sees it through [`rpc::CheckedHeap`], which
/// reports frees of anything but a live block and holds freed blocks back
/// so that no malloc aliases a live block.
struct DeviceMemory {
    memory: Arc<PoolManager>,
}

impl rpc::BlockSource for DeviceMemory {
    fn allocate(&mut self, size: u64) -> std::result::Result<u64, String> {
        let size = usize::try_from(size).map_err(|_| format!("{size} bytes"))?;
        // A failed allocation is NULL for the device, not a server error.
        match self.memory.allocate(size.max(1)) {
            Ok(addr) => Ok(addr),
            Err(e) => {
                log::debug!("device malloc of {size} bytes: {e}");
                Ok(0)
            }
        }
    }

    fn release(&mut self, address: u64) -> std::result::Result<(), String> {
        self.memory.free(address).map_err(|e| e.to_string())
    }
}

/// One image's RPC server and its thread.
#[derive(Debug)]
pub struct ImageRpc {
    service: rpc::Service,
    stop: Arc<AtomicBool>,
}

/// Held by the stream slot of a kernel that may call the host: the
/// image's server polls while one is alive.
pub struct RpcInFlight(#[allow(dead_code)] rpc::KernelGuard);

impl std::fmt::Debug for RpcInFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RpcInFlight")
    }
}

impl ImageRpc {
    /// Marks one kernel of the image in flight until the returned value
    /// drops.
    #[inline]
    pub fn kernel_started(&self) -> RpcInFlight {
        RpcInFlight(self.service.kernel_started())
    }

    /// Stops the thread: a transaction still waiting for a device that
    /// will never answer gives up, and what is pending is served once.
    pub fn shutdown(self) {
        self.stop.store(true, Ordering::Release);
        drop(self.service.stop());
    }
}

/// Sets up RPC for the image loaded in `exe` if it defines
/// [`rpc::CLIENT_SYMBOL`]; `Ok(None)` when it does not.
///
/// Errors: the symbol's address, the client pointer it holds or the buffer
/// cannot be read, allocated or written; the thread cannot be spawned.
pub fn setup(
    id: i32,
    agent: hsa_agent_t,
    hsa: &Hsa,
    host: &Arc<HostDevice>,
    memory: &Arc<PoolManager>,
    transfers: &Transfers,
    exe: hsa_executable_t,
) -> Result<Option<ImageRpc>> {
    let Ok(name) = CString::new(rpc::CLIENT_SYMBOL) else {
        return Ok(None);
    };
    let Ok(sym) = hsa.executable_symbol(exe, &name, agent) else {
        return Ok(None);
    };
    let symbol = hsa.symbol_variable(sym)?;
    let mut client_bytes = [0u8; 8];
    transfers.read_sync(symbol, &mut client_bytes)?;
    let client_addr = u64::from_le_bytes(client_bytes);
    if client_addr == 0 {
        return Err(Error::NullRpcClient(rpc::CLIENT_SYMBOL));
    }
    let mut server = rpc::Server::new(
        PORT_COUNT,
        LANE_SIZE,
        Box::new(FineMemory { host: host.clone() }),
    )
    .map_err(Error::RpcServer)?;
    server.set_device_heap(Box::new(rpc::CheckedHeap::new(DeviceMemory {
        memory: memory.clone(),
    })));
    let client = server.client_object();
    // The object the image's own pointer names (trusted as its code is).
    let target = symbol
        .image_pointer_target(client_addr, client.len())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} is {} bytes, not a pointer",
                rpc::CLIENT_SYMBOL,
                symbol.len()
            ))
        })?;
    transfers.write_sync(target, &client)?;
    let stop = server.stop_flag();
    let service = rpc::Service::start(server, move |event| match event {
        rpc::Event::Error(e) => log::error!("device {id}: RPC: {e}"),
        other => log::error!("device {id}: RPC request not supported in target regions: {other:?}"),
    })
    .map_err(Error::RpcThread)?;
    log::debug!("device {id}: RPC client at {client_addr:#x}, {PORT_COUNT} ports served");
    Ok(Some(ImageRpc { service, stop }))
}
