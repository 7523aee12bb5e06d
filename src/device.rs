//! One GPU agent as an offload device (LLVM's `AMDGPUDeviceTy`): what the
//! agent is (grid values, dispatch limits, settings) and the parts that do
//! the work, each a type of its own that owns one concept:
//!
//! | part | type | owns |
//! | --- | --- | --- |
//! | [`Device::streams`] | [`StreamPool`] | streams, lending them to async infos |
//! | [`Device::events`] | [`EventTable`] | events by handle |
//! | [`Device::memory`] | [`DeviceAllocator`] | `data_alloc` / `data_delete`, the memory manager |
//! | [`Device::transfers`] | [`Transfers`] | H2D, D2H, D2D copies and their path policy |
//! | [`Device::images`] | [`ImageTable`] | loaded code objects, their [`crate::kernel::Kernel`]s |
//!
//! A kernel launch goes `rtl` → [`ImageTable::with_kernel`] →
//! `Kernel::launch` → [`StreamPool::on_stream`] → `Stream::push_kernel` →
//! `Queue::push_kernel`; a copy goes `rtl` (which builds the host span) →
//! [`Transfers::copy`] → `Stream::push_*`.

use crate::abi::DeviceEnvironment;
use crate::allocator::DeviceAllocator;
use crate::env;
use crate::error::{Error, Result};
use crate::events::EventTable;
use crate::host_device::HostDevice;
use crate::images::{ImageContext, ImageTable};
use crate::kernel::{DispatchLimits, LaunchTarget};
use crate::launch::{GridValues, LaunchEnv};
use crate::memory::{MemoryPool, PoolAllocator, PoolManager};
use crate::memory_manager::{self, MemoryManager};
use crate::queue::QueueSet;
use crate::record::{RecordConfig, RecordReplay};
use crate::signal::SignalPool;
use crate::stream::Stream;
use crate::streams::StreamPool;
use crate::transfer::Transfers;
use hsa::Hsa;
use hsa_sys::*;
use std::sync::Arc;

/// Per-device settings read from the environment at `init_device` (LLVM 16's
/// `GenericDeviceTy` constructor and `AMDGPUDeviceTy::initImpl`).
#[derive(Debug, Clone)]
pub struct DeviceConfig {
    /// `LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES` (4), capped by QUEUES_MAX.
    pub num_queues: u32,
    /// `LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE` (512), capped by QUEUE_MAX_SIZE.
    pub queue_size: u32,
    /// `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES` (1 MiB).
    pub max_async_copy_bytes: usize,
    /// `LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS` (64).
    pub initial_signals: u32,
    /// `LIBOMPTARGET_DEVICE_RTL_DEBUG` (0).
    pub device_rtl_debug: u32,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE` (0 bytes).
    pub shared_memory_size: u32,
}

impl DeviceConfig {
    /// Reads the knobs (defaults as LLVM 16).
    pub fn from_env() -> DeviceConfig {
        DeviceConfig {
            num_queues: env::u32_or(env::NUM_HSA_QUEUES, 4).max(1),
            queue_size: env::u32_or(env::HSA_QUEUE_SIZE, 512),
            max_async_copy_bytes: env::u32_or(env::MAX_ASYNC_COPY_BYTES, 1 << 20) as usize,
            initial_signals: env::u32_or(env::NUM_INITIAL_HSA_SIGNALS, 64),
            device_rtl_debug: env::i32_or(env::DEVICE_RTL_DEBUG, 0) as u32,
            shared_memory_size: env::u32_or(env::SHARED_MEMORY_SIZE, 0),
        }
    }
}

/// Largest scratch (private segment) per work-item, in bytes, for waves of
/// `wave` lanes: GFX9's per-wave scratch size field (`WAVESIZE` of
/// `COMPUTE_TMPRING_SIZE`) has 13 bits in units of 1 KiB, so a wave gets at
/// most 8191 KiB, shared by its lanes.
pub fn max_private_segment(wave: u32) -> u32 {
    (8191 * 1024) / wave.max(1)
}

/// An initialised GPU device.
#[derive(Debug)]
pub struct Device {
    /// Plugin-local device id.
    pub id: i32,
    /// Number of devices of the plugin (for the device environment).
    pub num_devices: u32,
    /// The GPU agent.
    pub agent: hsa_agent_t,
    /// The device's grid values (`llvm/Frontend/OpenMP/OMPGridValues.h`, set by
    /// `AMDGPUDeviceTy::initImpl`).
    pub grid: GridValues,
    /// Settings from the environment.
    pub config: DeviceConfig,
    /// What a dispatch may ask of the agent (checked before launching).
    pub limits: DispatchLimits,
    streams: Arc<StreamPool>,
    events: EventTable,
    memory: DeviceAllocator,
    transfers: Arc<Transfers>,
    images: ImageTable,
    record: Option<RecordReplay>,
}

impl Device {
    /// Builds the device of `agent` (`__tgt_rtl_init_device`; LLVM 16's
    /// `AMDGPUDeviceTy::initImpl`): pools, memory
    /// manager, grid values, queues, signal pool, and the parts over them.
    ///
    /// Errors: a failing HSA call; no coarse-grained pool; unusable grid
    /// attributes (wavefront size not 32/64, zero limits).
    pub fn new(
        hsa: &Hsa,
        host: Arc<HostDevice>,
        id: i32,
        num_devices: u32,
        agent: hsa_agent_t,
    ) -> Result<Device> {
        let config = DeviceConfig::from_env();
        let pools = MemoryPool::all_of(hsa, agent)?;
        let coarse_pool = pools
            .iter()
            .find(|p| p.is_coarse_grained())
            .cloned()
            .ok_or(Error::MissingPool("coarse-grained device"))?;
        let (grid, limits) = agent_limits(hsa, agent, &pools)?;
        // Record/replay reserves its block first, as LLVM 16's
        // `GenericDeviceTy::init` does at the end of the device's set-up
        // (no device memory is allocated in between).
        let record = RecordConfig::from_env()
            .map(|c| RecordReplay::reserve(hsa, coarse_pool.raw, c))
            .transpose()?;

        let threshold = PoolManager::threshold_from_env(memory_manager::DEFAULT_THRESHOLD);
        let memory = Arc::new(MemoryManager::new(
            PoolAllocator::new(hsa, coarse_pool.raw, Vec::new()),
            threshold.unwrap_or(0),
        ));

        let queues_max = hsa.agent_info::<u32>(agent, HSA_AGENT_INFO_QUEUES_MAX)?;
        let queue_max_size = hsa.agent_info::<u32>(agent, HSA_AGENT_INFO_QUEUE_MAX_SIZE)?;
        let queue_size = config.queue_size.min(queue_max_size).max(1);
        let num_queues = config.num_queues.min(queues_max.max(1));
        let signals = SignalPool::new(hsa, config.initial_signals as usize)?;
        let queues = Arc::new(QueueSet::new(
            hsa,
            agent,
            num_queues,
            queue_size,
            signals.clone(),
        )?);
        let streams = Arc::new(StreamPool::new(
            id,
            hsa,
            agent,
            queues,
            signals,
            host.kernargs.clone(),
            handle_tag(HandleKind::Stream, id),
        ));
        let events = EventTable::new(handle_tag(HandleKind::Event, id), streams.clone());
        let transfers = Arc::new(Transfers::new(
            host.clone(),
            streams.clone(),
            config.max_async_copy_bytes,
        ));
        let images = ImageTable::new(
            hsa,
            ImageContext {
                id,
                agent,
                host: host.clone(),
                memory: memory.clone(),
                transfers: transfers.clone(),
                environment: DeviceEnvironment {
                    debug_kind: config.device_rtl_debug,
                    num_devices,
                    device_num: id as u32,
                    dynamic_memory_size: config.shared_memory_size,
                },
            },
        );
        Ok(Device {
            id,
            num_devices,
            agent,
            grid,
            config,
            limits,
            streams,
            events,
            memory: DeviceAllocator::new(coarse_pool, memory, host),
            transfers,
            images,
            record,
        })
    }

    /// The record/replay state, when `LIBOMPTARGET_RECORD` or
    /// `LIBOMPTARGET_REPLAY` is on ([`crate::record`]).
    #[inline]
    pub fn record_replay(&self) -> Option<&RecordReplay> {
        self.record.as_ref()
    }

    /// The device's streams and the async infos they are lent to.
    #[inline]
    pub fn streams(&self) -> &StreamPool {
        &self.streams
    }

    /// What a kernel launch uses of this device ([`crate::kernel::Kernel::launch`]).
    pub fn launch_target(&self) -> LaunchTarget<'_> {
        LaunchTarget {
            id: self.id,
            grid: &self.grid,
            shared_memory_size: self.config.shared_memory_size,
            limits: &self.limits,
            streams: &self.streams,
        }
    }

    /// The stream behind `info.queue`, lent first when it is NULL (see
    /// [`StreamPool::stream_for`]).
    ///
    /// Errors: as [`StreamPool::stream_for`].
    pub fn stream_for(&self, info: &mut crate::abi::AsyncInfo) -> Result<Arc<Stream>> {
        self.streams.stream_for(info)
    }

    /// The device's events.
    pub fn events(&self) -> &EventTable {
        &self.events
    }

    /// The device's allocator (`data_alloc`, `data_delete`).
    pub fn memory(&self) -> &DeviceAllocator {
        &self.memory
    }

    /// The device's transfers (`data_submit`, `data_retrieve`,
    /// `data_exchange`).
    pub fn transfers(&self) -> &Transfers {
        &self.transfers
    }

    /// The device's loaded images and kernels.
    #[inline]
    pub fn images(&self) -> &ImageTable {
        &self.images
    }

    /// Releases everything the device holds (process teardown): streams and
    /// events, loaded executables, device memory. Work still pending is
    /// waited for until `deadline` only: if a stream has not finished by
    /// then, nothing is released (the runtime may still be running it), a
    /// message says so, and `false` is returned so the caller leaves the
    /// HSA runtime up as well. Exit never blocks on a device.
    pub fn teardown(&self, deadline: std::time::Instant) -> bool {
        if !self.streams.teardown(deadline) {
            return false;
        }
        self.events.clear();
        self.images.teardown();
        self.memory.release_all(self.id);
        if let Some(r) = &self.record {
            r.release();
        }
        true
    }
}

/// The grid values and dispatch limits of `agent`, whose memory pools are
/// `pools`.
///
/// Errors: a failing agent query; unusable grid attributes.
fn agent_limits(
    hsa: &Hsa,
    agent: hsa_agent_t,
    pools: &[MemoryPool],
) -> Result<(GridValues, DispatchLimits)> {
    let wave = hsa.agent_info::<u32>(agent, HSA_AGENT_INFO_WAVEFRONT_SIZE)?;
    let wg_max = hsa.agent_info::<[u16; 3]>(agent, HSA_AGENT_INFO_WORKGROUP_MAX_DIM)?;
    let [grid_max_x, _, _] = hsa.agent_info::<[u32; 3]>(agent, HSA_AGENT_INFO_GRID_MAX_DIM)?;
    let cus = hsa.agent_info::<u32>(agent, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT)?;
    let grid = GridValues::from_agent(wave, wg_max[0], grid_max_x, cus, &LaunchEnv::from_env())
        .ok_or(Error::UnusableGrid {
            wavefront: wave,
            workgroup_max: wg_max[0],
            grid_max: grid_max_x,
        })?;
    let limits = DispatchLimits {
        workgroup_max: u32::from(wg_max[0])
            .min(hsa.agent_info::<u32>(agent, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE)?),
        grid_max: grid_max_x,
        group_segment_max: pools
            .iter()
            .filter(|p| p.segment == HSA_AMD_SEGMENT_GROUP)
            .map(|p| p.size)
            .max()
            .map_or(0, |s| u32::try_from(s).unwrap_or(u32::MAX)),
        private_segment_max: max_private_segment(wave),
    };
    Ok((grid, limits))
}

/// The kinds of plugin handle a device hands out.
#[derive(Clone, Copy)]
enum HandleKind {
    Stream = 0,
    Event = 1,
}

/// The handle-table tag of `kind` on device `id`: distinct per kind and
/// device (the device id's low 15 bits, plus one, so the tag is never 0).
fn handle_tag(kind: HandleKind, id: i32) -> u16 {
    ((kind as u16) << 15) | ((id as u32 as u16 & 0x7fff).wrapping_add(1) & 0x7fff)
}
