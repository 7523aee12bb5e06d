//! HSA memory pools ([`MemoryPool`]), the block allocators the memory
//! managers cache blocks of ([`PoolAllocator`]), and the host side's pinned
//! blocks: [`HostPoolManager`] (a manager over a CPU agent's fine-grained
//! pool) and [`HostBlock`] (one of its blocks, with the [`HostSpan`] the
//! host copies through and the [`DeviceRange`] agents copy through, both
//! from the `hsa` crate's [`Hsa::memory_pool_allocate_host`]).

use crate::memory_manager::{BlockAllocator, MemoryManager, MemoryManagerError};
use hsa::{DeviceRange, HostPool, HostPoolBlock, HostSpan, Hsa, HsaError, HsaResult};
use hsa_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// One HSA memory pool of an agent, with the attributes the plugin uses
/// (`hsa_amd_memory_pool_info_t` in `hsa/hsa_ext_amd.h`).
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
            if let Err(free) = self.hsa.pool_free(addr) {
                log::debug!("freeing a block the agents could not reach: {free}");
            }
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

/// Allocates blocks of a host pool (a CPU agent's pool, checked by
/// [`Hsa::host_pool`]) through [`Hsa::memory_pool_allocate_host`], each
/// made accessible to a list of agents, and remembers each live block's
/// span and range by address, so that an address the memory manager hands
/// out leads back to the block the runtime returned.
#[derive(Debug)]
pub struct HostPoolAllocator {
    hsa: Hsa,
    pool: HostPool,
    /// Agents given access to every new block (`hsa_amd_agents_allow_access`).
    access: Vec<hsa_agent_t>,
    /// The live blocks by address.
    blocks: Mutex<HashMap<u64, HostPoolBlock>>,
}

impl HostPoolAllocator {
    /// An allocator over `pool`, opening each block to `access`.
    pub fn new(hsa: &Hsa, pool: HostPool, access: Vec<hsa_agent_t>) -> Self {
        HostPoolAllocator {
            hsa: hsa.clone(),
            pool,
            access,
            blocks: Mutex::new(HashMap::new()),
        }
    }

    /// Allocates a block of `size` bytes (`size > 0`) open to the agents.
    ///
    /// Errors: the failing HSA call.
    pub fn allocate_block(&self, size: usize) -> Result<HostPoolBlock, HsaError> {
        let block = self.hsa.memory_pool_allocate_host(&self.pool, size)?;
        if let Err(e) = self.hsa.allow_access(&self.access, block.addr()) {
            if let Err(free) = self.hsa.pool_free(block.addr()) {
                log::debug!("freeing a block the agents could not reach: {free}");
            }
            return Err(e);
        }
        self.blocks.lock().insert(block.addr(), block);
        Ok(block)
    }

    /// The live block at `addr`, as allocated.
    pub fn block(&self, addr: u64) -> Option<HostPoolBlock> {
        self.blocks.lock().get(&addr).copied()
    }
}

impl BlockAllocator for HostPoolAllocator {
    type Error = HsaError;

    fn allocate(&self, size: usize) -> Result<u64, HsaError> {
        self.allocate_block(size).map(|b| b.addr())
    }

    fn free(&self, addr: u64) -> Result<(), HsaError> {
        self.blocks.lock().remove(&addr);
        self.hsa.pool_free(addr)
    }
}

/// A memory manager over a host pool (a CPU agent's fine-grained or kernarg
/// pool): its blocks are system memory the host reads and writes directly
/// (staging buffers, kernarg blocks), handed out as [`HostBlock`]s.
#[derive(Debug)]
pub struct HostPoolManager {
    inner: MemoryManager<HostPoolAllocator>,
}

impl HostPoolManager {
    /// A manager caching blocks of at most `threshold` bytes of `pool` (a
    /// pool `agent` lists), each made accessible to `access`; `None` when
    /// `pool` is not a fine-grained global pool or not the host's memory
    /// ([`Hsa::host_pool`]).
    ///
    /// Errors: the failing HSA query.
    pub fn new(
        hsa: &Hsa,
        agent: hsa_agent_t,
        pool: &MemoryPool,
        access: Vec<hsa_agent_t>,
        threshold: usize,
    ) -> HsaResult<Option<HostPoolManager>> {
        if !pool.is_fine_grained() {
            return Ok(None);
        }
        Ok(hsa.host_pool(agent, pool.raw)?.map(|host| HostPoolManager {
            inner: MemoryManager::new(HostPoolAllocator::new(hsa, host, access), threshold),
        }))
    }
}

impl std::ops::Deref for HostPoolManager {
    type Target = MemoryManager<HostPoolAllocator>;

    fn deref(&self) -> &MemoryManager<HostPoolAllocator> {
        &self.inner
    }
}

/// A block of a [`HostPoolManager`] (a staging buffer, a kernarg block),
/// returned to it when dropped. The host reaches its bytes through
/// [`HostBlock::span`]; agents through [`HostBlock::range`].
#[derive(Debug)]
pub struct HostBlock {
    manager: Arc<HostPoolManager>,
    block: HostPoolBlock,
}

impl HostBlock {
    /// Allocates `size` bytes (`size > 0`) from `manager`: the first `size`
    /// bytes of a block its allocator got from the runtime (a cached block
    /// may be larger).
    ///
    /// Errors: the manager's failure (pool exhausted, HSA error, size 0).
    pub fn allocate(
        manager: &Arc<HostPoolManager>,
        size: usize,
    ) -> Result<HostBlock, MemoryManagerError<HsaError>> {
        let addr = manager.allocate(size)?;
        match manager.allocator().block(addr) {
            Some(block) if block.len() >= size => Ok(HostBlock {
                manager: manager.clone(),
                block: block.prefix(size),
            }),
            _ => {
                if let Err(e) = manager.free(addr) {
                    log::debug!("returning block {addr:#x}: {e}");
                }
                Err(MemoryManagerError::UnknownPointer(addr))
            }
        }
    }

    /// The block's address, for agents (kernarg pointers).
    pub fn addr(&self) -> u64 {
        self.block.addr()
    }

    /// The block's bytes, for agents (DMA copies; valid while the block
    /// lives).
    pub fn range(&self) -> DeviceRange {
        self.block.range()
    }

    /// The block's bytes, for the host (valid while the block lives).
    pub fn span(&self) -> HostSpan {
        self.block.span()
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.block.len()
    }

    /// Whether the block has no byte (never: blocks are at least 1 byte).
    pub fn is_empty(&self) -> bool {
        self.block.is_empty()
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        if let Err(e) = self.manager.free(self.addr()) {
            log::error!("releasing host block {:#x}: {e}", self.addr());
        }
    }
}
