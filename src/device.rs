//! One GPU agent as an offload device (LLVM's `AMDGPUDeviceTy`): its memory
//! pools and memory manager, HSA queues, signal / stream / event pools,
//! loaded images with their kernels and globals, and the operations the
//! entry points call: allocation, transfers, kernel launch.

use crate::abi::{self, DeviceEnvironment, OffloadEntry, TargetTable};
use crate::env;
use crate::error::{Error, Result};
use crate::handles::HandleTable;
use crate::hsa::Hsa;
use crate::image::{self, ImageKind};
use crate::launch::{self, ExecMode, GridValues, LaunchEnv, LaunchRequest};
use crate::memory::{MemoryPool, PoolAllocator, PoolManager};
use crate::memory_manager::{self, MemoryManager};
use crate::plugin::HostDevice;
use crate::queue::{Dispatch, QueueSet};
use crate::rpc_host::{self, ImageRpc};
use crate::signal::SignalPool;
use crate::stream::{Event, Held, ManagedBlock, Stream};
use hsa_sys::*;
use parking_lot::{Mutex, RwLock};
// FxHash: a fast, non-cryptographic hash for address-keyed maps (SipHash
// dominated the launch path); keys are not attacker-chosen.
use rustc_hash::FxHashMap as AddrMap;
use std::ffi::{c_void, CString};
use std::sync::Arc;

/// Per-device settings read from the environment at `init_device` (spec §6).
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

/// What one kernel dispatch may ask of the agent; a launch asking more is
/// refused before anything is queued (the packet processor would stop the
/// queue on it, spec `hsa-api-subset.md` §7.3).
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

/// Largest scratch (private segment) per work-item, in bytes, for waves of
/// `wave` lanes: GFX9's per-wave scratch size field (`WAVESIZE` of
/// `COMPUTE_TMPRING_SIZE`) has 13 bits in units of 1 KiB, so a wave gets at
/// most 8191 KiB, shared by its lanes.
pub fn max_private_segment(wave: u32) -> u32 {
    (8191 * 1024) / wave.max(1)
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

/// Owned storage of a target table: the entries and the table pointing at
/// them. Both live until the device is torn down (libomptarget caches the
/// table pointer and reads it at every launch).
#[derive(Debug)]
struct TableStorage {
    _entries: Box<[OffloadEntry]>,
    _table: Box<TargetTable>,
}

// SAFETY: the raw pointers inside are never dereferenced by the plugin after
// the table was built; they are only handed back to libomptarget.
unsafe impl Send for TableStorage {}
// SAFETY: as above; the storage is immutable after construction.
unsafe impl Sync for TableStorage {}

/// A code object loaded on the device.
#[derive(Debug)]
struct LoadedImage {
    executable: hsa_executable_t,
    code_object: hsa_code_object_t,
    tables: TableStorage,
    /// The image's RPC server, when it has a client.
    rpc: Option<Arc<ImageRpc>>,
}

/// One entry of an image's host entry table, read by `rtl` from the C side.
#[derive(Debug, Clone)]
pub struct EntryDesc {
    /// The entry as libomptarget passed it (copied into the target table).
    pub raw: OffloadEntry,
    /// Its name (`raw.name` read as a C string).
    pub name: String,
}

/// A HOST or SHARED allocation (fine-grained host memory).
#[derive(Debug, Clone, Copy)]
struct HostAlloc {
    size: usize,
    /// TARGET_ALLOC_HOST or TARGET_ALLOC_SHARED.
    kind: i32,
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
    hsa: Hsa,
    host: Arc<HostDevice>,
    /// The device's grid values (spec §5.2).
    pub grid: GridValues,
    /// Settings from the environment.
    pub config: DeviceConfig,
    /// Coarse-grained device memory (DEFAULT / DEVICE kinds).
    pub coarse_pool: MemoryPool,
    memory: Arc<PoolManager>,
    queues: Arc<QueueSet>,
    /// What a dispatch may ask of the agent (checked before launching).
    pub limits: DispatchLimits,
    signals: SignalPool,
    /// Every stream the device created. Streams stay until teardown.
    streams: RwLock<Vec<Arc<Stream>>>,
    /// The lent streams, by their `__tgt_async_info::Queue` handle: a
    /// stream gets a new handle each time it is lent, so the handle of a
    /// returned stream is stale.
    lent_streams: HandleTable<Stream>,
    /// The streams not lent.
    idle_streams: Mutex<Vec<Arc<Stream>>>,
    /// The live events, by the handle `create_event` returned.
    events: HandleTable<Event>,
    images: Mutex<Vec<LoadedImage>>,
    kernels: RwLock<AddrMap<usize, Arc<Kernel>>>,
    host_allocs: Mutex<AddrMap<usize, HostAlloc>>,
}

impl Device {
    /// Builds the device of `agent` (spec §2.1 `init_device`): pools, memory
    /// manager, grid values, queues, signal pool.
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

        let wave = hsa.agent_info::<u32>(agent, HSA_AGENT_INFO_WAVEFRONT_SIZE)?;
        let wg_max = hsa.agent_info::<[u16; 3]>(agent, HSA_AGENT_INFO_WORKGROUP_MAX_DIM)?;
        let grid_max = hsa.agent_info::<hsa_dim3_t>(agent, HSA_AGENT_INFO_GRID_MAX_DIM)?;
        let cus = hsa.agent_info::<u32>(agent, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT)?;
        let grid = GridValues::from_agent(wave, wg_max[0], grid_max.x, cus, &LaunchEnv::from_env())
            .ok_or(Error::UnusableGrid {
                wavefront: wave,
                workgroup_max: wg_max[0],
                grid_max: grid_max.x,
            })?;

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
        let limits = DispatchLimits {
            workgroup_max: u32::from(wg_max[0])
                .min(hsa.agent_info::<u32>(agent, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE)?),
            grid_max: grid_max.x,
            group_segment_max: pools
                .iter()
                .filter(|p| p.segment == HSA_AMD_SEGMENT_GROUP)
                .map(|p| p.size)
                .max()
                .map_or(0, |s| u32::try_from(s).unwrap_or(u32::MAX)),
            private_segment_max: max_private_segment(wave),
        };

        Ok(Device {
            id,
            num_devices,
            agent,
            hsa: hsa.clone(),
            host,
            grid,
            config,
            coarse_pool,
            memory,
            queues,
            limits,
            signals,
            streams: RwLock::new(Vec::new()),
            lent_streams: HandleTable::new(handle_tag(HandleKind::Stream, id)),
            idle_streams: Mutex::new(Vec::new()),
            events: HandleTable::new(handle_tag(HandleKind::Event, id)),
            images: Mutex::new(Vec::new()),
            kernels: RwLock::new(AddrMap::default()),
            host_allocs: Mutex::new(AddrMap::default()),
        })
    }

    // ----- streams and events -----

    fn new_stream(&self) -> Result<Arc<Stream>> {
        Ok(Arc::new(Stream::new(
            &self.hsa,
            self.agent,
            self.queues.clone(),
            self.queues.next_slot(),
            self.signals.clone(),
            self.host.kernargs.clone(),
        )?))
    }

    /// The stream behind `info.queue`, taking one from the pool (and storing
    /// its handle in `info.queue`) when it is NULL.
    ///
    /// Errors: `info.queue` is not a stream this device lent.
    #[inline]
    pub fn stream_for(&self, info: &mut abi::AsyncInfo) -> Result<Arc<Stream>> {
        if info.queue.is_null() {
            let idle = self.idle_streams.lock().pop();
            let stream = match idle {
                Some(s) => s,
                None => self.add_stream()?,
            };
            stream.set_lent(true);
            info.queue = self.lent_streams.insert(stream.clone()) as usize as *mut c_void;
            return Ok(stream);
        }
        self.lent_stream(info.queue as usize)
    }

    /// Creates a stream (recorded for teardown, not yet lent).
    #[cold]
    fn add_stream(&self) -> Result<Arc<Stream>> {
        let stream = self.new_stream()?;
        self.streams.write().push(stream.clone());
        Ok(stream)
    }

    /// The lent stream of handle `key`.
    ///
    /// Errors: `key` is not the live handle of a stream this device lent
    /// (never lent, returned since, or another device's).
    #[inline]
    fn lent_stream(&self, key: usize) -> Result<Arc<Stream>> {
        let found = self.lent_streams.get(key as u64);
        // A `match`, not `ok_or`: the error is built only when needed (this
        // runs on every launch and synchronization).
        match found {
            Some(f) => Ok(f),
            None => Err(Error::UnknownHandle {
                what: "stream (__tgt_async_info::Queue)",
                addr: key,
            }),
        }
    }

    /// Runs `op` on the stream of `info` (bound first when `info` has
    /// none). When `op` fails, the stream is marked failed, so that
    /// synchronizing or querying `info` reports the failure at once (the
    /// operation's own signal, if it took one, was failed too) instead of
    /// succeeding or waiting for something that never comes.
    ///
    /// Errors: as [`Device::stream_for`]; `op`'s error.
    #[inline]
    fn on_stream(
        &self,
        info: &mut abi::AsyncInfo,
        op: impl FnOnce(&Stream) -> Result<()>,
    ) -> Result<()> {
        let stream = self.stream_for(info)?;
        let r = op(&stream);
        if r.is_err() {
            stream.mark_failed();
        }
        r
    }

    /// Takes the stream of `info` back into the pool, once (its handle is
    /// stale from then on), and sets `info.queue = NULL`.
    #[inline]
    fn return_stream(&self, info: &mut abi::AsyncInfo) {
        if let Some(stream) = self.lent_streams.remove(info.queue as usize as u64) {
            stream.set_lent(false);
            self.idle_streams.lock().push(stream);
        }
        info.queue = std::ptr::null_mut();
    }

    /// `synchronize`: waits for the stream of `info`, releases it and sets
    /// `info.queue = NULL`. The stream is released even when an operation
    /// failed (the failure is returned).
    ///
    /// Errors: `info.queue` NULL or unknown; a failed operation.
    #[inline]
    pub fn synchronize(&self, info: &mut abi::AsyncInfo) -> Result<()> {
        if info.queue.is_null() {
            return Err(Error::InvalidArgument(
                "synchronize of an async info without a queue".into(),
            ));
        }
        let stream = self.lent_stream(info.queue as usize)?;
        let r = stream.synchronize();
        self.return_stream(info);
        r
    }

    /// `query_async`: like [`Device::synchronize`] when everything finished,
    /// else leaves `info` untouched.
    ///
    /// Errors: as [`Device::synchronize`].
    pub fn query(&self, info: &mut abi::AsyncInfo) -> Result<()> {
        if info.queue.is_null() {
            return Err(Error::InvalidArgument(
                "query_async of an async info without a queue".into(),
            ));
        }
        let stream = self.lent_stream(info.queue as usize)?;
        match stream.query() {
            Ok(true) => {
                self.return_stream(info);
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => {
                self.return_stream(info);
                Err(e)
            }
        }
    }

    /// Runs `op` on a private async info and synchronizes it (the
    /// synchronous entry points).
    pub fn run_sync(&self, op: impl FnOnce(&mut abi::AsyncInfo) -> Result<()>) -> Result<()> {
        let mut info = abi::AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        let r = op(&mut info);
        if info.queue.is_null() {
            return r;
        }
        let s = self.synchronize(&mut info);
        r.and(s)
    }

    /// `create_event`: a new event handle (generation-counted, see
    /// [`crate::handles`]; never NULL).
    pub fn create_event(&self) -> usize {
        self.events.insert(Arc::new(Event::default())) as usize
    }

    /// The live event of handle `key`.
    ///
    /// Errors: `key` unknown, destroyed or another device's.
    fn event(&self, key: usize) -> Result<Arc<Event>> {
        self.events.get(key as u64).ok_or(Error::UnknownHandle {
            what: "event",
            addr: key,
        })
    }

    /// `record_event`.
    ///
    /// Errors: unknown event or stream.
    pub fn record_event(&self, key: usize, info: &mut abi::AsyncInfo) -> Result<()> {
        let ev = self.event(key)?;
        let stream = self.stream_for(info)?;
        ev.record(&stream);
        Ok(())
    }

    /// `wait_event`.
    ///
    /// Errors: unknown event or stream; the event was never recorded.
    pub fn wait_event(&self, key: usize, info: &mut abi::AsyncInfo) -> Result<()> {
        let ev = self.event(key)?;
        if !ev.is_recorded() {
            // A caller's mistake, found before the stream is involved.
            return Err(Error::InvalidArgument(
                "wait on an event that was never recorded".into(),
            ));
        }
        self.on_stream(info, |stream| ev.wait(stream))
    }

    /// `sync_event`: blocks until the recorded point is reached.
    ///
    /// Errors: unknown event; the operation failed.
    pub fn sync_event(&self, key: usize) -> Result<()> {
        self.event(key)?.synchronize()
    }

    /// `destroy_event`.
    ///
    /// Errors: unknown event.
    pub fn destroy_event(&self, key: usize) -> Result<()> {
        self.events
            .remove(key as u64)
            .map(|_| ())
            .ok_or(Error::UnknownHandle {
                what: "event",
                addr: key,
            })
    }

    // ----- memory -----

    /// `data_alloc` (spec §2.1, §3.8): DEFAULT / DEVICE from the coarse pool
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
                        free: self.coarse_pool.size.saturating_sub(held),
                        total: self.coarse_pool.size,
                        held,
                        source: Box::new(e.into()),
                    }
                })
            }
            abi::TARGET_ALLOC_HOST | abi::TARGET_ALLOC_SHARED => {
                let addr = self.host.allocate_fine(size).map_err(|e| {
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
                self.host_allocs
                    .lock()
                    .insert(addr as usize, HostAlloc { size, kind });
                self.host.pinned.register_allocation(addr as usize, size);
                Ok(addr)
            }
            other => Err(Error::InvalidArgument(format!("allocation kind {other}"))),
        }
    }

    /// `data_delete`: frees what [`Device::alloc`] returned. As LLVM 16's
    /// plugin, the kind matters in one direction: freeing with kind HOST
    /// what is not a HOST allocation fails (LLVM frees it, then fails to
    /// unregister it as a pinned host buffer; here nothing is freed),
    /// while DEFAULT / DEVICE / SHARED free whatever the pointer is.
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
            Err(memory_manager::MemoryManagerError::UnknownPointer(p)) => {
                Err(Error::UnknownHandle {
                    what: "device pointer",
                    addr: p as usize,
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Copies `size` bytes from host `src` to device `dst` on the stream of
    /// `info` (spec §7.4): one DMA copy when `src` is pinned; locking `src`
    /// for the transfer from `MAX_ASYNC_COPY_BYTES` on; else through a
    /// staging buffer.
    ///
    /// # Safety
    /// `src..src+size` must be readable host memory that stays valid until
    /// `info` is synchronized.
    ///
    /// Errors: as the HSA calls; unknown stream.
    pub unsafe fn submit(
        &self,
        dst: u64,
        src: *const u8,
        size: usize,
        info: &mut abi::AsyncInfo,
    ) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        // SAFETY: forwarded from the caller's contract.
        self.on_stream(info, |stream| unsafe {
            self.submit_on(stream, dst, src, size)
        })
    }

    /// The body of [`Device::submit`] on its stream.
    ///
    /// # Safety
    /// As [`Device::submit`].
    unsafe fn submit_on(
        &self,
        stream: &Stream,
        dst: u64,
        src: *const u8,
        size: usize,
    ) -> Result<()> {
        if let Some(alias) = self.host.pinned.translate(src as usize, size) {
            // SAFETY: the alias is device-accessible for the pinned range.
            return unsafe { stream.push_copy(dst, alias as u64, size, Vec::new()) };
        }
        if size >= self.config.max_async_copy_bytes {
            // SAFETY: the caller keeps `src` valid until synchronization,
            // and the guard is held by the stream until then.
            match unsafe { self.host.pinned.lock_temporarily(src as usize, size) } {
                Ok((alias, guard)) => {
                    // SAFETY: as above.
                    return unsafe {
                        stream.push_copy(
                            dst,
                            alias as u64,
                            size,
                            vec![Held::Other(Box::new(guard))],
                        )
                    };
                }
                Err(e) => log::debug!("cannot lock {size} bytes at {src:?} ({e}); staging instead"),
            }
        }
        let staging = ManagedBlock::allocate(&self.host.staging, size)?;
        // SAFETY: per the caller's contract; `staging` holds `size` bytes.
        unsafe { stream.push_h2d_staged(dst, src, size, staging) }
    }

    /// Copies `size` bytes from device `src` to host `dst` on the stream of
    /// `info`; same paths as [`Device::submit`].
    ///
    /// # Safety
    /// `dst..dst+size` must be writable host memory that stays valid until
    /// `info` is synchronized.
    ///
    /// Errors: as [`Device::submit`].
    pub unsafe fn retrieve(
        &self,
        dst: *mut u8,
        src: u64,
        size: usize,
        info: &mut abi::AsyncInfo,
    ) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        // SAFETY: forwarded from the caller's contract.
        self.on_stream(info, |stream| unsafe {
            self.retrieve_on(stream, dst, src, size)
        })
    }

    /// The body of [`Device::retrieve`] on its stream.
    ///
    /// # Safety
    /// As [`Device::retrieve`].
    unsafe fn retrieve_on(
        &self,
        stream: &Stream,
        dst: *mut u8,
        src: u64,
        size: usize,
    ) -> Result<()> {
        if let Some(alias) = self.host.pinned.translate(dst as usize, size) {
            // SAFETY: the alias is device-accessible for the pinned range.
            return unsafe { stream.push_copy(alias as u64, src, size, Vec::new()) };
        }
        if size >= self.config.max_async_copy_bytes {
            // SAFETY: as in `submit`.
            match unsafe { self.host.pinned.lock_temporarily(dst as usize, size) } {
                Ok((alias, guard)) => {
                    // SAFETY: as above.
                    return unsafe {
                        stream.push_copy(
                            alias as u64,
                            src,
                            size,
                            vec![Held::Other(Box::new(guard))],
                        )
                    };
                }
                Err(e) => log::debug!("cannot lock {size} bytes at {dst:?} ({e}); staging instead"),
            }
        }
        let staging = ManagedBlock::allocate(&self.host.staging, size)?;
        // SAFETY: per the caller's contract; `staging` holds `size` bytes.
        unsafe { stream.push_d2h_staged(dst, src, size, staging) }
    }

    /// Copies `size` bytes from this device's `src` to `dst` on another
    /// device (or this one), on this device's stream of `info`.
    ///
    /// # Safety
    /// Both must be device ranges of at least `size` bytes, valid until
    /// `info` is synchronized.
    ///
    /// Errors: as the HSA calls.
    pub unsafe fn copy_device(
        &self,
        dst: u64,
        src: u64,
        size: usize,
        info: &mut abi::AsyncInfo,
    ) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        // SAFETY: forwarded from the caller's contract.
        self.on_stream(info, |stream| unsafe {
            stream.push_copy(dst, src, size, Vec::new())
        })
    }

    // ----- images -----

    /// `load_binary` (spec §4): loads `bytes` through HSA, writes the device
    /// environment, resolves every entry and returns the target table.
    ///
    /// Errors: not an AMDGPU ELF; HSA load failure; a kernel or global
    /// missing or of the wrong type or size; a bad exec-mode byte.
    pub fn load_binary(
        &self,
        bytes: &[u8],
        entries: &[EntryDesc],
        requires_usm: bool,
    ) -> Result<*mut TargetTable> {
        match image::classify(bytes) {
            ImageKind::AmdgpuElf => {}
            ImageKind::AmdgcnBitcode => {
                return Err(Error::InvalidArgument(
                    "the image is AMDGPU LLVM bitcode, which this plugin does not JIT-compile"
                        .into(),
                ))
            }
            ImageKind::Other => {
                image::check_amdgpu_elf(bytes)?;
                return Err(Error::InvalidArgument(
                    "the image is not an AMDGPU ELF code object".into(),
                ));
            }
        }
        let hsa = &self.hsa;
        let code_object = hsa.code_object_deserialize(bytes)?;
        let executable = match hsa.executable_create() {
            Ok(e) => e,
            Err(e) => {
                let _ = hsa.code_object_destroy(code_object);
                return Err(e.into());
            }
        };
        // From here on, failures destroy both.
        let cleanup = |err: Error| -> Error {
            let _ = hsa.executable_destroy(executable);
            let _ = hsa.code_object_destroy(code_object);
            err
        };
        let loaded = (|| -> Result<(Vec<OffloadEntry>, Option<Arc<ImageRpc>>)> {
            hsa.executable_load_code_object(executable, self.agent, code_object)?;
            hsa.executable_freeze(executable)?;
            let valid = hsa.executable_validate(executable)?;
            if valid != 0 {
                return Err(Error::InvalidExecutable(valid));
            }
            self.write_device_environment(executable)?;
            let rpc = rpc_host::setup(self, &self.hsa, &self.host, &self.memory, executable)?
                .map(Arc::new);
            let metadata = image::kernel_metadata(bytes).unwrap_or_default();
            let mut table = Vec::with_capacity(entries.len());
            for e in entries {
                table.push(self.resolve_entry(
                    executable,
                    bytes,
                    &metadata,
                    e,
                    requires_usm,
                    rpc.as_ref(),
                )?);
            }
            Ok((table, rpc))
        })();
        let (table_entries, rpc) = loaded.map_err(cleanup)?;
        if table_entries.is_empty() {
            if let Some(r) = rpc.and_then(|r| Arc::try_unwrap(r).ok()) {
                r.shutdown();
            }
            return Err(cleanup(Error::InvalidArgument(
                "the image has no offload entries".into(),
            )));
        }
        let mut entries_box: Box<[OffloadEntry]> = table_entries.into_boxed_slice();
        let begin = entries_box.as_mut_ptr();
        // SAFETY: one past the end of the boxed slice.
        let end = unsafe { begin.add(entries_box.len()) };
        let mut table = Box::new(TargetTable {
            entries_begin: begin,
            entries_end: end,
        });
        let table_ptr: *mut TargetTable = &mut *table;
        self.images.lock().push(LoadedImage {
            executable,
            code_object,
            tables: TableStorage {
                _entries: entries_box,
                _table: table,
            },
            rpc,
        });
        Ok(table_ptr)
    }

    /// Writes the 16-byte device environment into
    /// `__omp_rtl_device_environment` (spec §3.10); absent or mis-sized
    /// symbol: nothing to do, as LLVM.
    fn write_device_environment(&self, exe: hsa_executable_t) -> Result<()> {
        let Ok(name) = CString::new(abi::DEVICE_ENVIRONMENT_SYMBOL) else {
            return Ok(());
        };
        let Ok(sym) = self.hsa.executable_symbol(exe, &name, self.agent) else {
            log::debug!("image has no {}", abi::DEVICE_ENVIRONMENT_SYMBOL);
            return Ok(());
        };
        let addr = self
            .hsa
            .symbol_info::<u64>(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS)?;
        let size = self
            .hsa
            .symbol_info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE)?;
        if size != 16 {
            log::debug!(
                "{} has size {size}, not 16: not written",
                abi::DEVICE_ENVIRONMENT_SYMBOL
            );
            return Ok(());
        }
        let env = DeviceEnvironment {
            debug_kind: self.config.device_rtl_debug,
            num_devices: self.num_devices,
            device_num: self.id as u32,
            dynamic_memory_size: self.config.shared_memory_size,
        };
        let bytes = env.to_bytes();
        log::debug!(
            "device {}: device environment {env:?} -> {addr:#x}",
            self.id
        );
        self.run_sync(|info| {
            // SAFETY: `bytes` lives until `run_sync` synchronized; `addr` is
            // the 16-byte global's device address.
            unsafe { self.submit(addr, bytes.as_ptr(), bytes.len(), info) }
        })
    }

    fn resolve_entry(
        &self,
        exe: hsa_executable_t,
        bytes: &[u8],
        metadata: &[image::KernelInfo],
        e: &EntryDesc,
        requires_usm: bool,
        rpc: Option<&Arc<ImageRpc>>,
    ) -> Result<OffloadEntry> {
        let hsa = &self.hsa;
        let mut out = e.raw;
        if e.raw.addr.is_null() {
            return Err(Error::InvalidArgument(format!(
                "offload entry {} has a NULL address",
                e.name
            )));
        }
        if e.raw.size == 0 {
            let sym_name = CString::new(format!("{}.kd", e.name))
                .map_err(|_| Error::InvalidArgument(format!("bad kernel name {:?}", e.name)))?;
            let sym = hsa
                .executable_symbol(exe, &sym_name, self.agent)
                .map_err(|err| Error::MissingSymbol {
                    what: "kernel",
                    name: format!("{}.kd", e.name),
                    source: err,
                })?;
            let kind = hsa.symbol_info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE)?;
            if kind != HSA_SYMBOL_KIND_KERNEL {
                return Err(Error::NotAKernel(e.name.clone()));
            }
            let exec_mode = image::kernel_exec_mode(bytes, &e.name)?;
            let max_threads = metadata
                .iter()
                .find(|k| k.name == e.name)
                .map(|k| k.max_flat_workgroup_size)
                .unwrap_or(0);
            let kernel = Arc::new(Kernel {
                name: e.name.clone(),
                kernel_object: hsa
                    .symbol_info::<u64>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT)?,
                kernarg_size: hsa.symbol_info::<u32>(
                    sym,
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                )?,
                group_size: hsa.symbol_info::<u32>(
                    sym,
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                )?,
                private_size: hsa.symbol_info::<u32>(
                    sym,
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                )?,
                exec_mode,
                max_threads,
                rpc: rpc.cloned(),
            });
            log::debug!("device {}: kernel {kernel:?}", self.id);
            let key = Arc::as_ptr(&kernel) as usize;
            self.kernels.write().insert(key, kernel);
            out.addr = key as *mut c_void;
        } else {
            let sym_name = CString::new(e.name.as_str())
                .map_err(|_| Error::InvalidArgument(format!("bad global name {:?}", e.name)))?;
            let sym = hsa
                .executable_symbol(exe, &sym_name, self.agent)
                .map_err(|err| Error::MissingSymbol {
                    what: "global",
                    name: e.name.clone(),
                    source: err,
                })?;
            let addr = hsa.symbol_info::<u64>(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS)?;
            let size = hsa.symbol_info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE)?;
            if size as usize != e.raw.size {
                return Err(Error::GlobalSizeMismatch {
                    name: e.name.clone(),
                    device: size,
                    host: e.raw.size,
                });
            }
            if requires_usm {
                let host = e.raw.addr as *const u8;
                self.run_sync(|info| {
                    // SAFETY: libomptarget's entry describes a host global of
                    // `size` bytes; it outlives the synchronous copy.
                    unsafe { self.submit(addr, host, e.raw.size, info) }
                })?;
            }
            log::debug!(
                "device {}: global {} -> {addr:#x} ({size} bytes)",
                self.id,
                e.name
            );
            out.addr = addr as *mut c_void;
        }
        Ok(out)
    }

    // ----- launch -----

    /// The kernel behind a target-table handle.
    ///
    /// Errors: not a handle of this device.
    #[inline]
    pub fn kernel(&self, handle: usize) -> Result<Arc<Kernel>> {
        // A `match`, not `ok_or`: built only on failure (hot path).
        match self.kernels.read().get(&handle) {
            Some(k) => Ok(k.clone()),
            None => Err(Error::UnknownHandle {
                what: "kernel handle",
                addr: handle,
            }),
        }
    }

    /// `launch_kernel` (spec §5): teams/threads from `kargs`, a kernarg block
    /// with `args` (8 bytes each) followed by the 56-byte implicit block, and
    /// an AQL dispatch on the stream of `info`. `info_flags` is the plugin's
    /// `LIBOMPTARGET_INFO` mask.
    ///
    /// `args` yields the argument values (`args.len()` of them), read while
    /// the block is filled.
    ///
    /// Errors: the kernel takes fewer kernarg bytes than `args` need; no
    /// kernarg memory; the queue is broken.
    pub fn launch(
        &self,
        kernel: &Kernel,
        args: impl ExactSizeIterator<Item = u64>,
        kargs: &abi::KernelArgs,
        info: &mut abi::AsyncInfo,
        info_flags: u32,
    ) -> Result<()> {
        let num_args = args.len();
        let explicit = num_args * 8;
        if (kernel.kernarg_size as usize) < explicit {
            return Err(Error::InvalidArgument(format!(
                "kernel {} takes {} bytes of arguments, {} given",
                kernel.name, kernel.kernarg_size, explicit
            )));
        }
        let req = LaunchRequest {
            num_teams: kargs.num_teams,
            thread_limit: kargs.thread_limit,
            loop_tripcount: kargs.tripcount,
            mode: kernel.exec_mode,
            kernel_max_threads: kernel.max_threads,
        };
        let geometry = launch::compute_launch(&req, &self.grid);
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
                launch::launch_info_line(self.id, &kernel.name, &geometry, kernel.exec_mode)
            );
        }
        log::debug!(
            "device {}: launch {} ({:?}) with {} teams x {} threads, {} args",
            self.id,
            kernel.name,
            kernel.exec_mode,
            geometry.num_teams,
            geometry.num_threads,
            num_args
        );

        // Kernarg block: explicit arguments, then the zeroed implicit block.
        let block_size = (explicit + abi::IMPLICIT_ARGS_SIZE).max(kernel.kernarg_size as usize);
        let dynamic = kargs.dyn_cgroup_mem.max(self.config.shared_memory_size);
        let dispatch = Dispatch {
            kernel_object: kernel.kernel_object,
            kernarg: 0,
            workgroup_size: u16::try_from(geometry.num_threads).unwrap_or(u16::MAX),
            grid_size,
            group_segment_size: kernel.group_size.saturating_add(dynamic),
            private_segment_size: kernel.private_size,
        };
        // Checked on the stream, so that a refused launch fails the async
        // info's synchronization as any other failed launch does.
        self.on_stream(info, |stream| {
            self.limits
                .check(&kernel.name, &dispatch, kernel.group_size, dynamic)?;
            if let Some(rpc) = &kernel.rpc {
                // The server polls from before the kernel starts until its
                // stream completes.
                let in_flight = rpc.kernel_started();
                stream.push_kernel(&dispatch, block_size, |block| {
                    fill_kernargs(block, explicit, args)
                })?;
                stream.hold_with_last(Held::Other(Box::new(in_flight)));
                return Ok(());
            }
            stream.push_kernel(&dispatch, block_size, |block| {
                fill_kernargs(block, explicit, args)
            })
        })
    }

    /// Releases everything the device holds (process teardown): streams and
    /// events, loaded executables, device memory. Work still pending is
    /// waited for until `deadline` only: if a stream has not finished by
    /// then, nothing is released (the runtime may still be running it), a
    /// message says so, and `false` is returned so the caller leaves the
    /// HSA runtime up as well. Exit never blocks on a device.
    pub fn teardown(&self, deadline: std::time::Instant) -> bool {
        let streams = self.streams.read().clone();
        for s in &streams {
            if !s.is_lent() {
                continue;
            }
            match s.synchronize_until(deadline) {
                Ok(true) => {}
                Ok(false) => {
                    log::error!(
                        "device {}: work still pending at teardown after the bounded wait; \
                         leaving the device and the HSA runtime as they are",
                        self.id
                    );
                    return false;
                }
                Err(e) => log::debug!("device {}: at teardown: {e}", self.id),
            }
            s.set_lent(false);
        }
        drop(streams);
        self.streams.write().clear();
        self.lent_streams.clear();
        self.idle_streams.lock().clear();
        self.events.clear();
        self.kernels.write().clear();
        for img in self.images.lock().drain(..) {
            // Kernels are gone, so this is the last reference: the thread
            // stops before the executable and the buffer go.
            if let Some(r) = img.rpc.and_then(|r| Arc::try_unwrap(r).ok()) {
                r.shutdown();
            }
            let _ = self.hsa.executable_destroy(img.executable);
            let _ = self.hsa.code_object_destroy(img.code_object);
            drop(img.tables);
        }
        for (addr, _) in self.host_allocs.lock().drain() {
            let _ = self.host.free_fine(addr as u64);
        }
        if let Err(e) = self.memory.release_all() {
            log::debug!("device {}: releasing device memory: {e}", self.id);
        }
        true
    }

    /// Number of images loaded on the device.
    pub fn image_count(&self) -> usize {
        self.images.lock().len()
    }
}

/// Writes the explicit kernel arguments (8 bytes each) to the start of a
/// kernarg block and zeroes the rest (missing values, the implicit block and
/// padding); `explicit <= block.len()`.
#[inline(always)]
fn fill_kernargs(block: &mut [u8], explicit: usize, args: impl Iterator<Item = u64>) {
    let mut filled = 0;
    for (chunk, a) in block[..explicit].chunks_exact_mut(8).zip(args) {
        chunk.copy_from_slice(&a.to_le_bytes());
        filled += 8;
    }
    block[filled..].fill(0);
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

#[cfg(test)]
mod tests {
    use super::*;

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
