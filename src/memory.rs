//! HSA memory pools ([`MemoryPool`]) and the block allocators the memory
//! managers cache blocks of ([`PoolAllocator`]).

use crate::hsa::{Hsa, HsaError, HsaResult};
use crate::memory_manager::{BlockAllocator, MemoryManager};
use hsa_sys::*;

/// One HSA memory pool of an agent, with the attributes the plugin uses
/// (`hsa-api-subset.md` §4.8).
#[derive(Debug, Clone)]
pub struct MemoryPool {
    /// The pool's handle.
    pub raw: hsa_amd_memory_pool_t,
    /// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT`.
    pub segment: hsa_amd_segment_t,
    /// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS` (0 for non-global pools).
    pub global_flags: u32,
    /// `HSA_AMD_MEMORY_POOL_INFO_SIZE`, bytes.
    pub size: usize,
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED`.
    pub alloc_allowed: bool,
}

impl MemoryPool {
    /// Reads a pool's attributes.
    ///
    /// Errors: the failing `hsa_amd_memory_pool_get_info`.
    pub fn query(hsa: &Hsa, raw: hsa_amd_memory_pool_t) -> HsaResult<MemoryPool> {
        let segment = hsa.pool_info::<u32>(raw, HSA_AMD_MEMORY_POOL_INFO_SEGMENT)?;
        let global_flags = if segment == HSA_AMD_SEGMENT_GLOBAL {
            hsa.pool_info::<u32>(raw, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS)?
        } else {
            0
        };
        let size = hsa.pool_info::<usize>(raw, HSA_AMD_MEMORY_POOL_INFO_SIZE)?;
        let alloc_allowed =
            hsa.pool_info::<u8>(raw, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED)? != 0;
        Ok(MemoryPool {
            raw,
            segment,
            global_flags,
            size,
            alloc_allowed,
        })
    }

    /// Every pool of `agent`, queried.
    ///
    /// Errors: the failing HSA call.
    pub fn all_of(hsa: &Hsa, agent: hsa_agent_t) -> HsaResult<Vec<MemoryPool>> {
        hsa.memory_pools(agent)?
            .into_iter()
            .map(|p| MemoryPool::query(hsa, p))
            .collect()
    }

    /// A global pool the runtime may allocate from.
    pub fn is_global_allocatable(&self) -> bool {
        self.segment == HSA_AMD_SEGMENT_GLOBAL && self.alloc_allowed
    }

    /// Global pool with the FINE_GRAINED flag.
    pub fn is_fine_grained(&self) -> bool {
        self.is_global_allocatable()
            && self.global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED != 0
    }

    /// Global pool with the COARSE_GRAINED flag.
    pub fn is_coarse_grained(&self) -> bool {
        self.is_global_allocatable()
            && self.global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED != 0
    }

    /// Global pool with the KERNARG_INIT flag.
    pub fn is_kernarg(&self) -> bool {
        self.is_global_allocatable()
            && self.global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT != 0
    }
}

/// Allocates blocks of one pool, optionally making each block accessible
/// to a list of agents right away (host pools are opened to every GPU).
#[derive(Debug, Clone)]
pub struct PoolAllocator {
    hsa: Hsa,
    pool: hsa_amd_memory_pool_t,
    /// Agents given access to every new block (`hsa_amd_agents_allow_access`).
    access: Vec<hsa_agent_t>,
}

impl PoolAllocator {
    /// An allocator over `pool`; `access` lists the agents that must reach
    /// each block besides the pool's owner (empty for device memory).
    pub fn new(hsa: &Hsa, pool: hsa_amd_memory_pool_t, access: Vec<hsa_agent_t>) -> Self {
        PoolAllocator {
            hsa: hsa.clone(),
            pool,
            access,
        }
    }
}

impl BlockAllocator for PoolAllocator {
    type Error = HsaError;

    fn allocate(&self, size: usize) -> Result<u64, HsaError> {
        let addr = self.hsa.pool_allocate(self.pool, size)? as u64;
        if let Err(e) = self.hsa.allow_access(&self.access, addr) {
            let _ = self.hsa.pool_free(addr);
            return Err(e);
        }
        Ok(addr)
    }

    fn free(&self, addr: u64) -> Result<(), HsaError> {
        self.hsa.pool_free(addr)
    }
}

/// A memory manager over one HSA pool (LLVM's `AMDGPUMemoryManagerTy` plus
/// the generic `MemoryManagerTy`).
pub type PoolManager = MemoryManager<PoolAllocator>;
