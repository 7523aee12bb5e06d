//! Memory pools of the loader (as LLVM 19's loader picks them): the CPU
//! agent's kernarg and fine-grained pools, the GPU agent's coarse-grained
//! pool; allocation with access granted to the GPU agent; the memory-fault
//! handler.

use std::ffi::c_void;
use std::ptr::NonNull;

use hsa::{Hsa, HsaResult};
use hsa_sys::*;

use crate::Error;

/// The three pools the loader uses.
#[derive(Debug, Clone, Copy)]
pub struct Pools {
    /// CPU agent, global flag KERNARG_INIT: kernel arguments.
    pub kernarg: hsa_amd_memory_pool_t,
    /// CPU agent, global flag FINE_GRAINED: argv/envp, the RPC buffer.
    pub fine_grained: hsa_amd_memory_pool_t,
    /// GPU agent, global flag COARSE_GRAINED: `main`'s return value, the
    /// device heap.
    pub coarse_grained: hsa_amd_memory_pool_t,
}

impl Pools {
    /// Finds the pools. Errors: a failing HSA call, or a missing pool.
    pub fn find(hsa: &Hsa, cpu: hsa_agent_t, gpu: hsa_agent_t) -> Result<Pools, Error> {
        let need = |agent, flag, what: &str| -> Result<hsa_amd_memory_pool_t, Error> {
            hsa.global_pool_with_flag(agent, flag)?
                .ok_or_else(|| Error::Missing(format!("no {what} memory pool")))
        };
        Ok(Pools {
            kernarg: need(cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT, "kernarg")?,
            fine_grained: need(
                cpu,
                HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
                "fine-grained",
            )?,
            coarse_grained: need(
                gpu,
                HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                "GPU coarse-grained",
            )?,
        })
    }
}

/// Allocations from one pool that the GPU agent may access.
#[derive(Debug, Clone)]
pub struct Region {
    hsa: Hsa,
    pool: hsa_amd_memory_pool_t,
    gpu: hsa_agent_t,
}

impl Region {
    /// Allocations from `pool`, accessible to `gpu`.
    pub fn new(hsa: &Hsa, pool: hsa_amd_memory_pool_t, gpu: hsa_agent_t) -> Region {
        Region {
            hsa: hsa.clone(),
            pool,
            gpu,
        }
    }

    /// `size` bytes (at least 1), with access granted to the GPU agent; the
    /// block's address.
    pub fn allocate(&self, size: usize) -> HsaResult<u64> {
        let p = self.hsa.pool_allocate(self.pool, size.max(1))? as u64;
        if let Err(e) = self.hsa.allow_access(&[self.gpu], p) {
            let _ = self.hsa.pool_free(p);
            return Err(e);
        }
        Ok(p)
    }

    /// The runtime this region allocates from.
    pub fn hsa(&self) -> &Hsa {
        &self.hsa
    }
}

impl rpc::SharedAllocator for Region {
    fn allocate(&mut self, size: usize) -> Result<NonNull<u8>, String> {
        let p = Region::allocate(self, size).map_err(|e| e.to_string())?;
        NonNull::new(p as usize as *mut u8).ok_or_else(|| "NULL block".to_string())
    }
    unsafe fn deallocate(&mut self, ptr: NonNull<u8>, _size: usize) {
        let _ = self.hsa.pool_free(ptr.as_ptr() as u64);
    }
}

/// MALLOC/FREE from the GPU's coarse-grained pool (LLVM 19's loader
/// callbacks). The server sees it through [`rpc::CheckedHeap`]: only live
/// blocks may be freed, and freed blocks are held back so that no malloc
/// aliases a live block.
pub struct Heap {
    region: Region,
}

impl Heap {
    /// The checked heap over `region`.
    pub fn new(region: Region) -> rpc::CheckedHeap<Heap> {
        rpc::CheckedHeap::new(Heap { region })
    }
}

impl rpc::BlockSource for Heap {
    fn allocate(&mut self, size: u64) -> Result<u64, String> {
        let size = usize::try_from(size).map_err(|_| format!("malloc({size}) is too large"))?;
        self.region.allocate(size).map_err(|e| e.to_string())
    }
    fn release(&mut self, address: u64) -> Result<(), String> {
        self.region
            .hsa()
            .pool_free(address)
            .map_err(|e| e.to_string())
    }
}

/// The reasons of `hsa_amd_memory_fault_reason_t`, in bit order.
const FAULT_REASONS: [(u32, &str); 8] = [
    (
        HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT as u32,
        "page not present or supervisor privilege",
    ),
    (
        HSA_AMD_MEMORY_FAULT_READ_ONLY as u32,
        "write to a read-only page",
    ),
    (
        HSA_AMD_MEMORY_FAULT_NX as u32,
        "execute on a no-execute page",
    ),
    (
        HSA_AMD_MEMORY_FAULT_HOST_ONLY as u32,
        "host-only page accessed by the GPU",
    ),
    (HSA_AMD_MEMORY_FAULT_DRAMECC as u32, "DRAM ECC failure"),
    (
        HSA_AMD_MEMORY_FAULT_IMPRECISE as u32,
        "imprecise fault (address may be wrong)",
    ),
    (HSA_AMD_MEMORY_FAULT_SRAMECC as u32, "SRAM ECC failure"),
    (HSA_AMD_MEMORY_FAULT_HANG as u32, "GPU hang"),
];

/// The words for a fault reason mask.
pub fn fault_reason_text(mask: u32) -> String {
    let words: Vec<&str> = FAULT_REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, w)| *w)
        .collect();
    if words.is_empty() {
        format!("unknown reason {mask:#x}")
    } else {
        words.join(", ")
    }
}

/// System event handler: a GPU memory fault prints the address and reason
/// and ends the process with status 1 (the C streams flushed first).
unsafe extern "C" fn on_system_event(
    event: *const hsa_amd_event_t,
    _data: *mut c_void,
) -> hsa_status_t {
    if event.is_null() {
        return HSA_STATUS_SUCCESS;
    }
    // SAFETY: the runtime passes a valid event for the duration of the call.
    let event = unsafe { &*event };
    if event.event_type != HSA_AMD_GPU_MEMORY_FAULT_EVENT {
        return HSA_STATUS_SUCCESS;
    }
    // SAFETY: `memory_fault` is the union member of memory fault events.
    let fault = unsafe { event.__bindgen_anon_1.memory_fault };
    let _ = std::panic::catch_unwind(|| {
        eprintln!(
            "amdhsa-loader: GPU memory fault at address {:#x}: {}",
            fault.virtual_address,
            fault_reason_text(fault.fault_reason_mask)
        );
    });
    // SAFETY: flush the C streams, then end the process without running
    // destructors (the runtime's threads may hold its locks).
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(1)
    }
}

/// Registers [`on_system_event`].
pub fn install_fault_handler(hsa: &Hsa) -> Result<(), Error> {
    // SAFETY: the handler is a plain function needing no data, callable for
    // the life of the process.
    unsafe { hsa.register_system_event_handler(Some(on_system_event), std::ptr::null_mut())? };
    Ok(())
}
