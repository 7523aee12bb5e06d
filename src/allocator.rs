//! The allocator of one device (LLVM's `allocate` / `free` of
//! `AMDGPUDeviceTy` with its memory manager): `data_alloc` and
//! `data_delete` by allocation kind.
//!
//! [`DeviceAllocator`] owns the device's coarse-grained memory through its
//! [`crate::memory_manager::MemoryManager`] (DEFAULT and DEVICE kinds) and
//! the record of the HOST and SHARED allocations it made from the host's
//! fine-grained pool, which are also registered as pinned ranges so
//! transfers reach them by DMA.

use crate::abi;
use crate::error::{Error, Result};
use crate::host_device::HostDevice;
use crate::memory::{MemoryPool, PoolManager};
use crate::memory_manager::MemoryManagerError;
use parking_lot::Mutex;
use rustc_hash::FxHashMap as AddrMap;
use std::sync::Arc;

/// A HOST or SHARED allocation (fine-grained host memory).
#[derive(Debug, Clone, Copy)]
struct HostAlloc {
    size: usize,
    /// TARGET_ALLOC_HOST or TARGET_ALLOC_SHARED.
    kind: i32,
}

/// Device and host allocations of one device.
#[derive(Debug)]
pub struct DeviceAllocator {
    /// Coarse-grained device memory (DEFAULT / DEVICE kinds).
    pool: MemoryPool,
    memory: Arc<PoolManager>,
    host: Arc<HostDevice>,
    /// HOST / SHARED allocations by address. Keyed with FxHash, a fast
    /// non-cryptographic hash: the keys are our own allocations' addresses,
    /// not attacker-chosen.
    host_allocs: Mutex<AddrMap<usize, HostAlloc>>,
}

impl DeviceAllocator {
    /// An allocator of `pool` (the device's coarse-grained pool) through
    /// `memory`, and of host memory through `host`.
    pub fn new(pool: MemoryPool, memory: Arc<PoolManager>, host: Arc<HostDevice>) -> Self {
        DeviceAllocator {
            pool,
            memory,
            host,
            host_allocs: Mutex::new(AddrMap::default()),
        }
    }

    /// The device memory manager (the RPC server's device heap uses it).
    pub fn device_memory(&self) -> &Arc<PoolManager> {
        &self.memory
    }

    /// `data_alloc` (`AMDGPUDeviceTy::allocate` in LLVM 16's
    /// `plugins-nextgen/amdgpu/src/rtl.cpp`; kinds: `TargetAllocTy`, `omptarget.h`):
    /// DEFAULT / DEVICE from the coarse pool
    /// through the memory manager; HOST and SHARED from the host's
    /// fine-grained pool, accessible to every GPU and recorded as pinned.
    ///
    /// Errors: size 0 or negative; unknown kind; allocation failure.
    pub fn alloc(&self, size: i64, kind: i32) -> Result<u64> {
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| Error::InvalidArgument(format!("allocation of {size} bytes")))?;
        match kind {
            abi::TARGET_ALLOC_DEFAULT | abi::TARGET_ALLOC_DEVICE => {
                self.memory.allocate(size).map_err(|e| {
                    let held = self.memory.held_bytes();
                    Error::AllocationFailed {
                        size,
                        what: "device memory",
                        free: self.pool.size.saturating_sub(held),
                        total: self.pool.size,
                        held,
                        source: Box::new(e.into()),
                    }
                })
            }
            abi::TARGET_ALLOC_HOST | abi::TARGET_ALLOC_SHARED => {
                let block = self.host.allocate_fine(size).map_err(|e| {
                    let held = self.host.fine_bytes_held();
                    Error::AllocationFailed {
                        size,
                        what: "host memory",
                        free: self.host.fine_pool.size.saturating_sub(held),
                        total: self.host.fine_pool.size,
                        held,
                        source: Box::new(e),
                    }
                })?;
                let addr = block.addr();
                self.host_allocs
                    .lock()
                    .insert(addr as usize, HostAlloc { size, kind });
                self.host.pinned.register_allocation(&block);
                Ok(addr)
            }
            other => Err(Error::InvalidArgument(format!("allocation kind {other}"))),
        }
    }

    /// `data_delete`: frees what [`DeviceAllocator::alloc`] returned. As
    /// LLVM 16's plugin, the kind matters in one direction: freeing with
    /// kind HOST what is not a HOST allocation fails (LLVM frees it, then
    /// fails to unregister it as a pinned host buffer; here nothing is
    /// freed), while DEFAULT / DEVICE / SHARED free whatever the pointer is.
    ///
    /// Errors: a pointer this device did not allocate (or freed twice); a
    /// HOST free of another kind's allocation.
    pub fn free(&self, addr: u64, kind: i32) -> Result<()> {
        let mut host_allocs = self.host_allocs.lock();
        if kind == abi::TARGET_ALLOC_HOST
            && host_allocs.get(&(addr as usize)).map(|a| a.kind) != Some(abi::TARGET_ALLOC_HOST)
        {
            return Err(Error::InvalidArgument(format!(
                "data_delete of {addr:#x} with kind HOST, but it is not a HOST allocation"
            )));
        }
        if let Some(a) = host_allocs.remove(&(addr as usize)) {
            drop(host_allocs);
            self.host.pinned.unregister_allocation(addr as usize);
            log::trace!("freeing {} bytes of host memory at {addr:#x}", a.size);
            return self.host.free_fine(addr);
        }
        drop(host_allocs);
        match self.memory.free(addr) {
            Ok(()) => Ok(()),
            Err(MemoryManagerError::UnknownPointer(p)) => Err(Error::UnknownHandle {
                what: "device pointer",
                addr: p as usize,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Frees every HOST / SHARED allocation and all device memory (process
    /// teardown); failures are logged.
    pub fn release_all(&self, id: i32) {
        for (addr, _) in self.host_allocs.lock().drain() {
            if let Err(e) = self.host.free_fine(addr as u64) {
                log::debug!("device {id}: freeing host memory at teardown: {e}");
            }
        }
        if let Err(e) = self.memory.release_all() {
            log::debug!("device {id}: releasing device memory: {e}");
        }
    }
}
