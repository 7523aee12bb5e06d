//! AQL queues and their packet processors (`hsa_queue_t` and the packet types
//! of `hsa/hsa.h`; ROCr 5.2's `src/core/runtime/amd_aql_queue.cpp`).
//!
//! A queue is an `amd_queue_t` block (whose first 40 bytes are the client's
//! `hsa_queue_t`) plus a ring of 64-byte AQL packet slots, both in runtime
//! memory the queue's agent can read, because device code reads the packet
//! (Dispatch Ptr) and the queue (Queue Ptr). A thread per queue, the packet
//! processor, consumes packets strictly in order:
//!
//! 1. It waits until the write index passes the read index and the slot's
//!    header is no longer INVALID. A store to the doorbell signal wakes it.
//!    It copies the slot out of the ring and [`crate::aql`] parses and checks
//!    it.
//! 2. KERNEL_DISPATCH runs the kernel to completion on the dispatcher;
//!    BARRIER_AND / BARRIER_OR wait (sleeping) until their dependency signals
//!    are observed at 0, all of them or any of them. Later packets never
//!    start before an earlier one completes, barrier bit or not.
//! 3. It then overwrites only the slot's 16-bit header with INVALID, advances
//!    the read index (release), and subtracts 1 from the completion signal.
//!
//! A malformed packet, or a kernel that faults, makes the queue inactive: it
//! reports the error (the system event handlers for memory faults, then the
//! queue's error callback) and consumes nothing more. The completion signal
//! of the failed packet is left untouched, as ROCr does.

use crate::aql::{self, Barrier, KernelDispatch, Packet};
use crate::clock::timestamp_ns;
use crate::dispatch::{DispatchError, DispatchRequest};
use crate::error::{SimError, SimResult};
use crate::memory::{AllocKind, Allocation};
use crate::signal::{MemoryOrder, Notifier, Signal};
use hsa_sys::*;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

/// Offsets inside `amd_queue_t` (amd_hsa_queue.h; checked against the bindings in a test).
pub mod offsets {
    /// `write_dispatch_id` (u64).
    pub const WRITE_DISPATCH_ID: usize = 56;
    /// `group_segment_aperture_base_hi` (u32).
    pub const GROUP_APERTURE_HI: usize = 64;
    /// `private_segment_aperture_base_hi` (u32).
    pub const PRIVATE_APERTURE_HI: usize = 68;
    /// `max_cu_id` (u32).
    pub const MAX_CU_ID: usize = 72;
    /// `max_wave_id` (u32).
    pub const MAX_WAVE_ID: usize = 76;
    /// `read_dispatch_id` (u64).
    pub const READ_DISPATCH_ID: usize = 128;
    /// `queue_properties` (u32).
    pub const QUEUE_PROPERTIES: usize = 180;
}

/// High dword of the shared (LDS) aperture base (KFD's GFX9 value: Linux's
/// `drivers/gpu/drm/amd/amdkfd/kfd_flat_memory.c`; AMDGPUUsage "Address Spaces").
pub const SHARED_APERTURE_HI: u32 = 0x0001_0000;
/// High dword of the private (scratch) aperture base.
pub const PRIVATE_APERTURE_HI: u32 = 0x0002_0000;

/// A queue error callback as `hsa_queue_create` receives it.
pub type QueueCallback = unsafe extern "C" fn(hsa_status_t, *mut hsa_queue_t, *mut c_void);

/// One AQL queue.
pub struct Queue {
    /// Owning agent index.
    pub agent: usize,
    /// Unique id (`hsa_queue_t.id`).
    pub id: u64,
    /// Ring size in packets (a power of two).
    pub size: u32,
    block: Arc<Allocation>,
    ring: Arc<Allocation>,
    /// The doorbell signal (its handle is in `hsa_queue_t.doorbell_signal`).
    pub doorbell: Arc<Signal>,
    /// Handle of the doorbell signal.
    pub doorbell_handle: u64,
    notifier: Arc<Notifier>,
    callback: Option<QueueCallback>,
    callback_data: usize,
    profiling: AtomicBool,
    stopping: AtomicBool,
    inactive: AtomicBool,
    /// The cancel flag of the dispatch running now, if one runs.
    running: Mutex<Option<Arc<AtomicBool>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Scratch bytes per lane of each wave's slot (see [`Queue::scratch_slot`]).
    scratch_per_lane: AtomicU32,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Queue(id {}, agent {}, {} packets)",
            self.id, self.agent, self.size
        )
    }
}

/// Header value the processor leaves in a consumed slot: INVALID with the barrier bit (as ROCr).
pub const CONSUMED_HEADER: u16 =
    (HSA_PACKET_TYPE_INVALID as u16) | (1 << HSA_PACKET_HEADER_BARRIER);

/// What a queue asks of the runtime that owns it: its handle tables, the memory
/// map, system events, and the running of kernel dispatches. The runtime implements
/// it; the queue holds it weakly (a queue never keeps the runtime alive).
pub trait QueueHost: Send + Sync {
    /// Makes `signal` reachable by handle (the queue's doorbell); its handle.
    fn register_signal(&self, signal: Arc<Signal>) -> u64;
    /// A queue id not handed out before.
    fn next_queue_id(&self) -> u64;
    /// Records an allocation of the queue (its block and ring) in the memory map.
    fn add_allocation(&self, allocation: Arc<Allocation>);
    /// The live signal with `handle`.
    fn signal(&self, handle: u64) -> Option<Arc<Signal>>;
    /// Delivers a system event to the registered handlers.
    fn raise_event(&self, event: &hsa_amd_event_t);
    /// Runs one kernel dispatch to completion, or until `cancel` is raised.
    ///
    /// # Errors
    /// The dispatch's [`DispatchError`].
    fn dispatch(
        &self,
        req: &DispatchRequest,
        memory: &Arc<dyn isa::GlobalMemory>,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), DispatchError>;
}

/// What one queue is created with.
pub struct QueueSetup {
    /// The GPU agent's index.
    pub agent: usize,
    /// Ring size in packets (a power of two).
    pub size: u32,
    /// The client's error callback.
    pub callback: Option<QueueCallback>,
    /// Its user data.
    pub callback_data: usize,
    /// Compute units of the agent (for `max_cu_id`).
    pub compute_units: u32,
    /// Global memory as the agent's kernels see it.
    pub memory: Arc<dyn isa::GlobalMemory>,
    /// Scratch bytes per lane of each wave's slot before any dispatch grows it
    /// ([`Queue::scratch_slot`]).
    pub scratch_per_lane: u32,
}

impl Queue {
    /// Creates the queue `setup` describes for `host` and starts its processor.
    ///
    /// Errors: `OutOfResources` if memory or the thread cannot be had.
    pub fn create(host: &Arc<dyn QueueHost>, setup: QueueSetup) -> SimResult<Arc<Queue>> {
        let QueueSetup {
            agent,
            size,
            callback,
            callback_data,
            compute_units,
            memory,
            scratch_per_lane,
        } = setup;
        let block = Allocation::new(4096, AllocKind::Internal, agent, 1)?;
        let ring = Allocation::new(u64::from(size) * 64, AllocKind::Internal, agent, 1)?;
        // Every slot starts out INVALID.
        for i in 0..size as usize {
            // SAFETY: slot i lies inside the ring allocation (size * 64 bytes), 64-byte aligned.
            unsafe {
                std::ptr::write(
                    ring.ptr().add(i * 64) as *mut u16,
                    HSA_PACKET_TYPE_INVALID as u16,
                )
            };
        }
        let doorbell = Signal::new(0);
        let doorbell_handle = host.register_signal(doorbell.clone());
        let id = host.next_queue_id();
        let q = hsa_queue_t {
            type_: HSA_QUEUE_TYPE_MULTI,
            features: HSA_QUEUE_FEATURE_KERNEL_DISPATCH,
            base_address: ring.ptr() as *mut c_void,
            doorbell_signal: hsa_signal_t {
                handle: doorbell_handle,
            },
            size,
            reserved1: 0,
            id,
        };
        let b = block.ptr();
        // SAFETY: the block is a fresh, zeroed, page-aligned 4 KiB allocation; every
        // write below is inside the 256-byte amd_queue_t at its start.
        unsafe {
            std::ptr::write(b as *mut hsa_queue_t, q);
            std::ptr::write(
                b.add(offsets::GROUP_APERTURE_HI) as *mut u32,
                SHARED_APERTURE_HI,
            );
            std::ptr::write(
                b.add(offsets::PRIVATE_APERTURE_HI) as *mut u32,
                PRIVATE_APERTURE_HI,
            );
            std::ptr::write(
                b.add(offsets::MAX_CU_ID) as *mut u32,
                compute_units.saturating_sub(1),
            );
            std::ptr::write(b.add(offsets::MAX_WAVE_ID) as *mut u32, 31);
            std::ptr::write(b.add(offsets::QUEUE_PROPERTIES) as *mut u32, 1 << 1);
            // IS_PTR64
        }
        host.add_allocation(block.clone());
        host.add_allocation(ring.clone());
        let queue = Arc::new(Queue {
            agent,
            id,
            size,
            block,
            ring,
            doorbell: doorbell.clone(),
            doorbell_handle,
            notifier: Notifier::new(),
            callback,
            callback_data,
            profiling: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            inactive: AtomicBool::new(false),
            running: Mutex::new(None),
            thread: Mutex::new(None),
            scratch_per_lane: AtomicU32::new(scratch_per_lane),
        });
        doorbell.add_observer(&queue.notifier);
        let weak_host = Arc::downgrade(host);
        let qc = queue.clone();
        let handle = std::thread::Builder::new()
            .name(format!("hsa-queue-{id}"))
            .spawn(move || {
                crate::reset_host_fp_env();
                processor_loop(&qc, &weak_host, &memory)
            })
            .map_err(|e| SimError::OutOfResources(format!("starting the packet processor: {e}")))?;
        *queue.thread.lock() = Some(handle);
        Ok(queue)
    }

    /// Scratch bytes per lane of each wave's slot for a dispatch whose packet
    /// asks for `private_segment_size`: the queue's, grown for good to the
    /// packet's rounded up to 16 when that is more, as ROCr's
    /// `AqlQueue::DynamicScratchHandler` grows a queue's scratch when the
    /// command processor finds it too small (`src/core/runtime/amd_aql_queue.cpp`).
    pub fn scratch_slot(&self, private_segment_size: u32) -> u32 {
        let need = private_segment_size.div_ceil(16).saturating_mul(16);
        self.scratch_per_lane
            .fetch_max(need, Ordering::Relaxed)
            .max(need)
    }

    /// Address of the client-visible `hsa_queue_t` (= the `amd_queue_t`).
    pub fn address(&self) -> u64 {
        self.block.base
    }

    fn index_word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: the offset is inside the queue block, 8-byte aligned, and the
        // block lives as long as `self`; all accesses to the word are atomic.
        unsafe { AtomicU64::from_ptr(self.block.ptr().add(offset) as *mut u64) }
    }

    /// The write index (`write_dispatch_id`).
    pub fn write_index(&self) -> &AtomicU64 {
        self.index_word(offsets::WRITE_DISPATCH_ID)
    }

    /// The read index (`read_dispatch_id`).
    pub fn read_index(&self) -> &AtomicU64 {
        self.index_word(offsets::READ_DISPATCH_ID)
    }

    /// Turns dispatch timestamps on or off.
    pub fn set_profiling(&self, on: bool) {
        self.profiling.store(on, Ordering::Release);
    }

    /// Whether the queue stopped on an error or by `hsa_queue_inactivate`.
    pub fn is_inactive(&self) -> bool {
        self.inactive.load(Ordering::Acquire)
    }

    /// Stops consuming packets (hsa_queue_inactivate); a dispatch running now is
    /// cancelled.
    pub fn inactivate(&self) {
        self.inactive.store(true, Ordering::Release);
        self.cancel_running();
        self.notifier.notify();
    }

    /// Cancels the dispatch running now, if any (after `stopping` or `inactive`
    /// was raised: a dispatch that starts later sees those under the same lock).
    fn cancel_running(&self) {
        if let Some(c) = self.running.lock().as_ref() {
            c.store(true, Ordering::SeqCst);
        }
    }

    /// Stops the processor and waits for it (unless called from it). A dispatch
    /// running now stops at its waves' next backward branch or barrier and is
    /// abandoned: its completion signal is left as it is and no error is reported,
    /// as when ROCr destroys a hardware queue under running waves.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.cancel_running();
        self.notifier.notify();
        if let Some(t) = self.thread.lock().take() {
            if t.thread().id() != std::thread::current().id() && t.join().is_err() {
                log::error!("the packet processor of queue {} panicked", self.id);
            }
        }
        self.doorbell.remove_observer(&self.notifier);
    }

    /// Memory blocks to release when the queue is destroyed.
    pub fn allocations(&self) -> [u64; 2] {
        [self.block.base, self.ring.base]
    }

    fn slot(&self, index: u64) -> *mut u8 {
        let i = (index % u64::from(self.size)) as usize;
        // SAFETY: i < size, so the slot lies inside the ring.
        unsafe { self.ring.ptr().add(i * 64) }
    }

    fn header(&self, index: u64) -> &AtomicU16 {
        // SAFETY: the slot's first two bytes, 64-byte aligned, inside the ring; the
        // client publishes headers with atomic stores.
        unsafe { AtomicU16::from_ptr(self.slot(index) as *mut u16) }
    }

    fn should_stop(&self) -> bool {
        self.stopping.load(Ordering::Acquire) || self.inactive.load(Ordering::Acquire)
    }

    fn report(&self, status: hsa_status_t, what: &str) {
        self.inactive.store(true, Ordering::Release);
        match self.callback {
            Some(cb) => {
                // SAFETY: the client gave this callback and data to hsa_queue_create;
                // the queue block stays alive during the call.
                unsafe {
                    cb(
                        status,
                        self.block.ptr() as *mut hsa_queue_t,
                        self.callback_data as *mut c_void,
                    )
                }
            }
            None => {
                eprintln!("virtual gfx90a: queue {} stopped: {what}", self.id);
            }
        }
    }
}

/// What the processor does with the result of one packet.
enum Outcome {
    Done,
    Stopped,
    Failed(hsa_status_t, String, Option<(u64, u32)>),
}

fn processor_loop(q: &Arc<Queue>, host: &Weak<dyn QueueHost>, memory: &Arc<dyn isa::GlobalMemory>) {
    loop {
        let epoch = q.notifier.epoch();
        if q.should_stop() {
            return;
        }
        let read = q.read_index().load(Ordering::Relaxed);
        let write = q.write_index().load(Ordering::Acquire);
        if read >= write {
            q.notifier.wait(epoch, None);
            continue;
        }
        let header = q.header(read).load(Ordering::Acquire);
        if aql::is_invalid(header) {
            // Reserved but not yet published: the client rings the doorbell after
            // writing the header; poll gently in case it does not.
            q.notifier
                .wait(epoch, Some(std::time::Duration::from_micros(200)));
            continue;
        }
        let Some(rt) = host.upgrade() else { return };
        let slot = q.slot(read);
        // SAFETY: the slot is 64 bytes inside the ring, 64-byte aligned; the client
        // published it (header no longer INVALID, loaded with acquire) and does not
        // touch it until the read index passes it.
        let bytes = unsafe { std::ptr::read_volatile(slot as *const [u8; aql::PACKET_BYTES]) };
        let (outcome, completion) = match Packet::parse(&bytes) {
            Ok(packet) => {
                let outcome = match &packet {
                    Packet::KernelDispatch(k) => {
                        run_kernel(q, rt.as_ref(), memory, k, slot as u64, read)
                    }
                    Packet::BarrierAnd(b) => run_barrier(q, rt.as_ref(), b, true),
                    Packet::BarrierOr(b) => run_barrier(q, rt.as_ref(), b, false),
                };
                (outcome, packet.completion_signal())
            }
            Err(e) => (
                Outcome::Failed(e.hsa_status(), format!("packet {read}: {e}"), None),
                0,
            ),
        };
        match outcome {
            Outcome::Done => {
                std::sync::atomic::fence(Ordering::Release);
                q.header(read).store(CONSUMED_HEADER, Ordering::Release);
                q.read_index().store(read + 1, Ordering::Release);
                if completion != 0 {
                    match rt.signal(completion) {
                        Some(s) => s.subtract(1, MemoryOrder::Release),
                        None => log::error!("queue {}: packet {read} names unknown completion signal {completion:#x}", q.id),
                    }
                }
            }
            Outcome::Stopped => return,
            Outcome::Failed(status, what, fault) => {
                // Logged before the event: a handler may end the process (LLVM's
                // plugins abort on a memory fault), and the reason must be seen.
                log::error!("virtual gfx90a queue {}: {what}", q.id);
                if let Some((address, reason)) = fault {
                    rt.raise_event(&memory_fault_event(q.agent, address, reason));
                }
                q.report(status, &what);
                return;
            }
        }
    }
}

/// Builds an `hsa_amd_event_t` for a GPU memory fault (`hsa/hsa_ext_amd.h`).
pub fn memory_fault_event(agent: usize, address: u64, reason: u32) -> hsa_amd_event_t {
    // SAFETY: hsa_amd_event_t is plain data for which all-zero bytes are valid.
    let mut event: hsa_amd_event_t = unsafe { std::mem::zeroed() };
    let p = &mut event as *mut hsa_amd_event_t as *mut u8;
    // SAFETY: offsets 0 (event_type u32), 8 (agent u64), 16 (virtual_address u64) and
    // 24 (fault_reason_mask u32) are inside the 32-byte struct (size checked in a test).
    unsafe {
        std::ptr::write_unaligned(p as *mut u32, HSA_AMD_GPU_MEMORY_FAULT_EVENT);
        std::ptr::write_unaligned(p.add(8) as *mut u64, crate::agent::agent_handle(agent));
        std::ptr::write_unaligned(p.add(16) as *mut u64, address);
        std::ptr::write_unaligned(p.add(24) as *mut u32, reason);
    }
    event
}

/// Waits until the dependencies of `barrier` are observed at 0, all of them
/// (`and`) or any of them.
fn run_barrier(q: &Queue, rt: &dyn QueueHost, barrier: &Barrier, and: bool) -> Outcome {
    let mut deps = Vec::new();
    for (k, h) in barrier.dependencies() {
        match rt.signal(h) {
            Some(s) => deps.push(s),
            None => {
                return Outcome::Failed(
                    HSA_STATUS_ERROR_INVALID_SIGNAL,
                    format!("barrier packet dependency {k} is an unknown signal {h:#x}"),
                    None,
                )
            }
        }
    }
    if deps.is_empty() {
        // AND over no dependency holds (an OR without one is rejected by the parser).
        return Outcome::Done;
    }
    for d in &deps {
        d.add_observer(&q.notifier);
    }
    let mut satisfied = vec![false; deps.len()];
    let outcome = loop {
        let epoch = q.notifier.epoch();
        if q.should_stop() {
            break Outcome::Stopped;
        }
        let mut negative = None;
        for (k, d) in deps.iter().enumerate() {
            if satisfied[k] {
                continue;
            }
            let v = d.load(MemoryOrder::Acquire);
            if v == 0 || d.is_destroyed() {
                satisfied[k] = true;
            } else if v < 0 {
                negative = Some((k, v));
            }
        }
        if let Some((k, v)) = negative {
            break Outcome::Failed(
                HSA_STATUS_ERROR,
                format!("barrier packet dependency {k} has the negative value {v}"),
                None,
            );
        }
        let done = if and {
            satisfied.iter().all(|&s| s)
        } else {
            satisfied.iter().any(|&s| s)
        };
        if done {
            break Outcome::Done;
        }
        q.notifier.wait(epoch, None);
    };
    for d in &deps {
        d.remove_observer(&q.notifier);
    }
    outcome
}

fn run_kernel(
    q: &Queue,
    rt: &dyn QueueHost,
    memory: &Arc<dyn isa::GlobalMemory>,
    packet: &KernelDispatch,
    packet_address: u64,
    index: u64,
) -> Outcome {
    let mut req = DispatchRequest::from_packet(packet, packet_address, q.address(), index);
    req.queue_scratch_per_lane = q.scratch_slot(req.private_segment_size);
    let profiling = q.profiling.load(Ordering::Acquire);
    let start = timestamp_ns();
    std::sync::atomic::fence(Ordering::Acquire);
    let cancel = Arc::new(AtomicBool::new(false));
    {
        let mut running = q.running.lock();
        // Raised before this dispatch registered: cancelled from the start.
        if q.should_stop() {
            cancel.store(true, Ordering::SeqCst);
        }
        *running = Some(cancel.clone());
    }
    let result = rt.dispatch(&req, memory, &cancel);
    *q.running.lock() = None;
    let end = timestamp_ns();
    match result {
        Err(e) if e.is_abort() && q.should_stop() => {
            log::debug!(
                "virtual gfx90a queue {}: dispatch {index} cancelled (queue destroyed or inactivated)",
                q.id
            );
            Outcome::Stopped
        }
        Ok(()) => {
            if profiling && packet.completion_signal != 0 {
                if let Some(s) = rt.signal(packet.completion_signal) {
                    s.set_dispatch_times(start, end);
                }
            }
            Outcome::Done
        }
        Err(e) => fault_outcome(&e, index),
    }
}

fn fault_outcome(e: &DispatchError, index: u64) -> Outcome {
    let status = e.hsa_status();
    let fault = if status == HSA_STATUS_ERROR_MEMORY_FAULT {
        e.fault_address()
            .map(|a| (a, HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT as u32))
    } else {
        None
    };
    Outcome::Failed(
        status,
        format!("kernel dispatch {index} failed: {e}"),
        fault,
    )
}
