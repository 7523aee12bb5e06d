//! The CPU side of the plugin (LLVM's `AMDHostDeviceTy`): the host memory pools
//! every device shares, for staging, kernel arguments and host allocations.

use crate::error::{Error, Result};
use crate::memory::{HostPoolAllocator, HostPoolManager, MemoryPool};
use crate::memory_manager::BlockAllocator;
use crate::pinned::PinnedTable;
use hsa::{HostPoolBlock, Hsa};
use hsa_sys::*;
use std::sync::Arc;

/// Caching threshold of the host-side managers (staging buffers and kernarg
/// blocks): LLVM's AMDGPU memory managers cache up to 1 GiB.
const HOST_CACHE_THRESHOLD: usize = 1 << 30;

/// The CPU side (LLVM's `AMDHostDeviceTy`): the fine-grained host pool used
/// for staging and for HOST / SHARED allocations, the kernarg pool, their
/// memory managers, and the table of pinned host ranges.
#[derive(Debug)]
pub struct HostDevice {
    /// The CPU agents.
    pub cpu_agents: Vec<hsa_agent_t>,
    /// The first fine-grained global pool of the CPU agents.
    pub fine_pool: MemoryPool,
    /// The first fine-grained pool with KERNARG_INIT.
    pub kernarg_pool: MemoryPool,
    /// Staging buffers (fine-grained pool, accessible to every GPU).
    pub staging: Arc<HostPoolManager>,
    /// Kernarg blocks (kernarg pool, accessible to every GPU).
    pub kernargs: Arc<HostPoolManager>,
    /// Direct allocations of HOST / SHARED memory (not cached).
    fine_alloc: HostPoolAllocator,
    /// Pinned host ranges (locks and fine-grained allocations).
    pub pinned: Arc<PinnedTable>,
}

impl HostDevice {
    /// Finds the host pools of `cpu_agents` and builds the managers; every
    /// block is made accessible to `gpu_agents`.
    ///
    /// Errors: a failing HSA call; no fine-grained or kernarg pool.
    pub fn new(
        hsa: &Hsa,
        cpu_agents: Vec<hsa_agent_t>,
        gpu_agents: &[hsa_agent_t],
    ) -> Result<Self> {
        let mut pools = Vec::new();
        for &a in &cpu_agents {
            pools.extend(MemoryPool::all_of(hsa, a)?.into_iter().map(|p| (a, p)));
        }
        let (fine_agent, fine_pool) = pools
            .iter()
            .find(|(_, p)| p.is_fine_grained())
            .cloned()
            .ok_or(Error::MissingPool("fine-grained host"))?;
        let (kernarg_agent, kernarg_pool) = pools
            .iter()
            .find(|(_, p)| p.is_fine_grained() && p.is_kernarg())
            .cloned()
            .ok_or(Error::MissingPool("kernarg"))?;
        let gpus = gpu_agents.to_vec();
        let staging = HostPoolManager::new(
            hsa,
            fine_agent,
            &fine_pool,
            gpus.clone(),
            HOST_CACHE_THRESHOLD,
        )?
        .ok_or(Error::MissingPool("fine-grained host"))?;
        let kernargs = HostPoolManager::new(
            hsa,
            kernarg_agent,
            &kernarg_pool,
            gpus.clone(),
            HOST_CACHE_THRESHOLD,
        )?
        .ok_or(Error::MissingPool("kernarg"))?;
        let fine_host = hsa
            .host_pool(fine_agent, fine_pool.raw)?
            .ok_or(Error::MissingPool("fine-grained host"))?;
        Ok(HostDevice {
            cpu_agents,
            staging: Arc::new(staging),
            kernargs: Arc::new(kernargs),
            fine_alloc: HostPoolAllocator::new(hsa, fine_host, gpus),
            fine_pool,
            kernarg_pool,
            pinned: Arc::new(PinnedTable::new(hsa)),
        })
    }

    /// Allocates `size` bytes of fine-grained host memory every GPU can
    /// reach (HOST / SHARED kinds).
    ///
    /// Errors: the pool's failure.
    pub fn allocate_fine(&self, size: usize) -> Result<HostPoolBlock> {
        Ok(self.fine_alloc.allocate_block(size)?)
    }

    /// Bytes this plugin holds from the fine-grained host pool through its
    /// staging and kernarg managers (the kernarg pool is usually the same
    /// pool), for messages; direct HOST / SHARED blocks are not counted.
    pub fn fine_bytes_held(&self) -> usize {
        self.staging.held_bytes() + self.kernargs.held_bytes()
    }

    /// Frees a block of [`HostDevice::allocate_fine`].
    ///
    /// Errors: the pool's failure.
    pub fn free_fine(&self, addr: u64) -> Result<()> {
        Ok(self.fine_alloc.free(addr)?)
    }

    /// Frees the staging and kernarg blocks (process teardown); a failure
    /// is only logged, teardown goes on.
    pub(crate) fn teardown(&self) {
        for (what, r) in [
            ("staging", self.staging.release_all()),
            ("kernarg", self.kernargs.release_all()),
        ] {
            if let Err(e) = r {
                log::debug!("releasing {what} memory at teardown: {e}");
            }
        }
    }
}
