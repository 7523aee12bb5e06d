//! An HSA AQL queue and the two packet kinds the plugin pushes on it:
//! kernel dispatches and barrier-AND packets (`hsa/hsa.h`:
//! `hsa_kernel_dispatch_packet_t`, `hsa_barrier_and_packet_t`; LLVM 16's
//! `AMDGPUQueueTy` in `plugins-nextgen/amdgpu/src/rtl.cpp`).
//!
//! Producer protocol, under the queue's own lock: reserve a packet id with
//! `hsa_queue_add_write_index_relaxed`, wait until the ring has room, write
//! every byte of the packet except its first 32 bits, then publish the
//! header and setup word with one 32-bit release store, and ring the
//! doorbell with the packet id. The packet processor never sees a half
//! written packet: until the header store it reads INVALID.
//!
//! Failure handling: the runtime reports a queue error (a kernel that faults
//! or runs an instruction it cannot execute, a malformed packet) through the
//! callback given to `hsa_queue_create`, and then stops the queue without
//! completing the packets still in it. So that nobody waits forever on them,
//! the queue remembers the completion signals of the packets it published;
//! the callback marks every one still pending as failed (value -1) and the
//! queue refuses new packets from then on; [`QueueSet`] then replaces it
//! for the streams that used it.

use crate::error::{Error, Result};
use crate::signal::{Signal, SignalPool};
use hsa::{Hsa, HsaError};
use hsa_sys::*;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// Length of [`Shared::in_flight`] from which [`Queue::track`] also asks
/// the runtime whether the list's oldest signal has ended (so that work
/// nobody synchronizes cannot grow the list without bound).
const TRACK_CHECK_LEN: usize = 256;

/// State shared with the runtime's error callback.
#[derive(Debug, Default)]
struct Shared {
    /// Set once the runtime reported an error on the queue.
    broken: AtomicBool,
    /// Status of that error, for messages.
    status: AtomicU32,
    /// Completion signals of published packets, oldest first. Entries whose
    /// signal already completed are pruned on each push.
    in_flight: Mutex<VecDeque<Arc<Signal>>>,
    /// For the status text in the error message.
    hsa: Option<Hsa>,
}

/// Queue error callback given to `hsa_queue_create`; `data` is the queue's
/// `Shared`, kept alive until after `hsa_queue_destroy`.
unsafe extern "C" fn queue_error(status: hsa_status_t, _q: *mut hsa_queue_t, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: `data` is `Arc::into_raw` of the queue's `Shared`, released
    // only after the queue is destroyed, so it is alive here.
    let shared = unsafe { &*(data as *const Shared) };
    shared.status.store(status, Ordering::Relaxed);
    shared.broken.store(true, Ordering::Release);
    let text = shared
        .hsa
        .as_ref()
        .map_or_else(|| format!("status {status:#x}"), |h| h.status_text(status));
    log::error!("HSA queue error ({text}): the queue stopped; pending operations on it fail");
    for sig in shared.in_flight.lock().drain(..) {
        if !sig.has_ended() {
            sig.fail();
        }
    }
}

/// Raw queue pointer with the fields we read once at creation.
#[derive(Debug)]
struct RawQueue {
    queue: *mut hsa_queue_t,
    base: *mut u8,
    size: u32,
    doorbell: hsa_signal_t,
}

// SAFETY: the queue memory is owned by the HSA runtime and designed for
// concurrent producers; every write to it goes through `Queue::lock`.
unsafe impl Send for RawQueue {}
// SAFETY: as above.
unsafe impl Sync for RawQueue {}

/// One HSA AQL queue of a device (LLVM's `AMDGPUQueueTy`).
#[derive(Debug)]
pub struct Queue {
    hsa: Hsa,
    raw: RawQueue,
    shared: Arc<Shared>,
    /// Raw pointer given to the runtime as callback data (one `Arc` count).
    shared_raw: *const Shared,
    /// Serializes producers (steps 1–5 of the protocol).
    lock: Mutex<()>,
    /// The pool the tracked signals come from (finished ones go back there).
    signals: SignalPool,
}

// SAFETY: `shared_raw` is only turned back into an `Arc` in `Drop`.
unsafe impl Send for Queue {}
// SAFETY: as above; all shared state is behind locks or atomics.
unsafe impl Sync for Queue {}

/// Header word of a kernel dispatch: type KERNEL_DISPATCH, no barrier bit,
/// acquire and release fence scope SYSTEM (0x1402), setup = 1 dimension.
const KERNEL_HEADER_WORD: u32 = header(HSA_PACKET_TYPE_KERNEL_DISPATCH) | (1 << 16);
/// Header word of a barrier-AND: type BARRIER_AND, system scopes (0x1403).
const BARRIER_AND_HEADER_WORD: u32 = header(HSA_PACKET_TYPE_BARRIER_AND);

/// A packet header with system-scope acquire and release fences, no barrier bit.
const fn header(packet_type: u32) -> u32 {
    (packet_type << HSA_PACKET_HEADER_TYPE)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE)
}

/// What a kernel dispatch needs (`AMDGPUQueueTy::pushKernelLaunch` in LLVM 16's
/// `plugins-nextgen/amdgpu/src/rtl.cpp`).
#[derive(Debug, Clone, Copy)]
pub struct Dispatch {
    /// Address of the kernel descriptor (`KERNEL_OBJECT`).
    pub kernel_object: u64,
    /// Address of the kernarg block (host kernarg pool).
    pub kernarg: u64,
    /// Work-items per workgroup (threads), ≤ 1024.
    pub workgroup_size: u16,
    /// Total work-items = blocks × threads.
    pub grid_size: u32,
    /// Bytes of LDS per workgroup (static + dynamic).
    pub group_segment_size: u32,
    /// Bytes of scratch per work-item.
    pub private_segment_size: u32,
}

impl Queue {
    /// Creates a queue of `size` packets on `agent`, whose completion
    /// signals come from `signals`.
    ///
    /// Errors: the failing `hsa_queue_create`.
    pub fn new(hsa: &Hsa, agent: hsa_agent_t, size: u32, signals: SignalPool) -> Result<Queue> {
        let shared = Arc::new(Shared {
            hsa: Some(hsa.clone()),
            ..Shared::default()
        });
        let shared_raw = Arc::into_raw(shared.clone());
        // SAFETY: `queue_error` accepts `shared_raw` for as long as the
        // queue lives: the `Arc` count it holds is released in `Drop`, after
        // `hsa_queue_destroy`.
        let created =
            unsafe { hsa.queue_create(agent, size, Some(queue_error), shared_raw as *mut c_void) };
        let queue = match created {
            Ok(q) => q,
            Err(e) => {
                // SAFETY: the runtime did not keep the pointer (creation failed).
                drop(unsafe { Arc::from_raw(shared_raw) });
                return Err(e.into());
            }
        };
        // SAFETY: `queue` is a live `hsa_queue_t` returned by the runtime;
        // these fields never change after creation.
        let (base, qsize, doorbell) = unsafe {
            (
                (*queue).base_address as *mut u8,
                (*queue).size,
                (*queue).doorbell_signal,
            )
        };
        Ok(Queue {
            hsa: hsa.clone(),
            raw: RawQueue {
                queue,
                base,
                size: qsize,
                doorbell,
            },
            shared,
            shared_raw,
            lock: Mutex::new(()),
            signals,
        })
    }

    /// Whether the runtime reported an error on this queue.
    pub fn is_broken(&self) -> bool {
        self.shared.broken.load(Ordering::Acquire)
    }

    fn check_usable(&self) -> Result<()> {
        if self.is_broken() {
            let status = self.shared.status.load(Ordering::Relaxed);
            return Err(Error::Hsa(HsaError {
                call: "hsa_queue (asynchronous error)",
                status,
                text: self.hsa.status_text(status),
            }));
        }
        Ok(())
    }

    /// Pushes one 64-byte packet: `packet` supplies bytes 4..64, `word` the
    /// header and setup published last. Caller holds `self.lock`.
    fn push_locked<T: Copy>(&self, word: u32, packet: &T) {
        const { assert!(std::mem::size_of::<T>() == 64) };
        let q = &self.raw;
        // SAFETY: `q.queue` is live (destroyed only in Drop).
        let id = unsafe { self.hsa.queue_add_write_index(q.queue, 1) };
        // Wait for room: the processor frees a slot when it consumes it.
        loop {
            // SAFETY: as above.
            let read = unsafe { self.hsa.queue_load_read_index(q.queue) };
            if id.wrapping_sub(read) < u64::from(q.size) || self.is_broken() {
                break;
            }
            std::thread::yield_now();
        }
        let index = (id & (u64::from(q.size) - 1)) as usize;
        // SAFETY: `index < size`, the ring holds `size` 64-byte slots, and the
        // slot was reserved by the write index bump above. Bytes 4..64 are not
        // read by the processor until the header below says so. `T` is one
        // of the 64-byte AQL packet structs (size checked above), plain data
        // without padding, so its 64 bytes are readable.
        unsafe {
            let slot = q.base.add(index * 64);
            let bytes = packet as *const T as *const u8;
            std::ptr::copy_nonoverlapping(bytes.add(4), slot.add(4), 60);
            // Publish: the header and setup in one release store.
            AtomicU32::from_ptr(slot as *mut u32).store(word, Ordering::Release);
        }
        self.hsa.signal_store_relaxed(q.doorbell, id as i64);
    }

    /// Remembers `signal` as owed by this queue, so that a queue error
    /// fails it.
    ///
    /// Errors: the queue is broken. The check sits under the in-flight
    /// lock: the error callback sets `broken` before it takes that lock to
    /// fail the list, so a signal added here while `broken` is still false
    /// is failed by the callback, and one refused here is the caller's to
    /// fail. No signal can slip between the two.
    #[inline]
    fn track(&self, signal: &Arc<Signal>) -> Result<()> {
        let mut in_flight = self.shared.in_flight.lock();
        if self.is_broken() {
            drop(in_flight);
            return self.check_usable();
        }
        // A signal only this list still holds belongs to an operation its
        // stream already saw finish (streams release their slots after
        // completion): forget it without asking the runtime. Past
        // `TRACK_CHECK_LEN` entries the runtime is asked too (one
        // `hsa_signal_load`), as before, so that operations nobody
        // synchronizes yet cannot grow the list without bound.
        while let Some(front) = in_flight.front() {
            let finished = Arc::strong_count(front) == 1
                || (in_flight.len() >= TRACK_CHECK_LEN && front.has_ended());
            if !finished {
                break;
            }
            if let Some(done) = in_flight.pop_front() {
                self.signals.recycle(done);
            }
        }
        in_flight.push_back(signal.clone());
        Ok(())
    }

    /// Pushes a barrier-AND packet (no completion signal) that blocks the
    /// queue until every signal of `deps` (at most 5) is 0.
    fn push_barrier_locked(&self, deps: &[hsa_signal_t], completion: Option<&Arc<Signal>>) {
        let mut p = hsa_barrier_and_packet_t::default();
        for (slot, dep) in p.dep_signal.iter_mut().zip(deps) {
            *slot = *dep;
        }
        if let Some(c) = completion {
            p.completion_signal = c.raw();
        }
        self.push_locked(BARRIER_AND_HEADER_WORD, &p);
    }

    /// Pushes a kernel dispatch completing `completion`; when `input` is
    /// given (the previous operation of the stream, still pending), a
    /// barrier-AND depending on it goes first so the kernel starts after it.
    ///
    /// Errors: the queue is broken (the runtime reported an error on it).
    pub fn push_kernel(
        &self,
        d: &Dispatch,
        completion: &Arc<Signal>,
        input: Option<&Arc<Signal>>,
    ) -> Result<()> {
        let _guard = self.lock.lock();
        self.check_usable()?;
        if let Some(dep) = input {
            self.push_barrier_locked(&[dep.raw()], None);
        }
        let p = hsa_kernel_dispatch_packet_t {
            header: 0,
            setup: 0,
            workgroup_size_x: d.workgroup_size,
            workgroup_size_y: 1,
            workgroup_size_z: 1,
            reserved0: 0,
            grid_size_x: d.grid_size,
            grid_size_y: 1,
            grid_size_z: 1,
            private_segment_size: d.private_segment_size,
            group_segment_size: d.group_segment_size,
            kernel_object: d.kernel_object,
            kernarg_address: d.kernarg as *mut c_void,
            reserved2: 0,
            completion_signal: completion.raw(),
        };
        self.track(completion)?;
        self.push_locked(KERNEL_HEADER_WORD, &p);
        Ok(())
    }

    /// Pushes a barrier-AND completing `completion` once every signal of
    /// `deps` is 0 (joins a stream with another stream's operation).
    ///
    /// Errors: the queue is broken.
    pub fn push_barrier(&self, deps: &[hsa_signal_t], completion: &Arc<Signal>) -> Result<()> {
        let _guard = self.lock.lock();
        self.check_usable()?;
        self.track(completion)?;
        self.push_barrier_locked(deps, Some(completion));
        Ok(())
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: the queue is not used after this point.
        if let Err(e) = unsafe { self.hsa.queue_destroy(self.raw.queue) } {
            log::debug!("while destroying an HSA queue: {e}");
        }
        // SAFETY: releases the count handed to the runtime in `new`; the
        // runtime no longer calls back for a destroyed queue.
        drop(unsafe { Arc::from_raw(self.shared_raw) });
    }
}

/// The HSA queues of one device, handed to streams round robin (LLVM
/// keeps a fixed set too). A queue the runtime stopped on an error is
/// replaced by a fresh one the next time a stream asks for its slot, so one
/// faulting kernel does not leave the device unusable: the stopped queue's
/// owed signals were failed by its error callback, and the streams that
/// used it report that failure once, then continue on the new queue.
#[derive(Debug)]
pub struct QueueSet {
    hsa: Hsa,
    agent: hsa_agent_t,
    /// Packets per queue.
    size: u32,
    signals: SignalPool,
    queues: parking_lot::RwLock<Vec<Arc<Queue>>>,
    next: std::sync::atomic::AtomicUsize,
}

impl QueueSet {
    /// Creates `count` (at least 1) queues of `size` packets on `agent`.
    ///
    /// Errors: the failing `hsa_queue_create`.
    pub fn new(
        hsa: &Hsa,
        agent: hsa_agent_t,
        count: u32,
        size: u32,
        signals: SignalPool,
    ) -> Result<QueueSet> {
        let mut queues = Vec::with_capacity(count.max(1) as usize);
        for _ in 0..count.max(1) {
            queues.push(Arc::new(Queue::new(hsa, agent, size, signals.clone())?));
        }
        Ok(QueueSet {
            hsa: hsa.clone(),
            agent,
            size,
            signals,
            queues: parking_lot::RwLock::new(queues),
            next: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The slot the next stream uses (round robin).
    pub fn next_slot(&self) -> usize {
        let n = self.queues.read().len().max(1);
        self.next.fetch_add(1, Ordering::Relaxed) % n
    }

    /// The queue of `slot`, replacing it first when the runtime stopped it.
    ///
    /// Errors: the failing `hsa_queue_create` of the replacement; `slot`
    /// out of range.
    pub fn get(&self, slot: usize) -> Result<Arc<Queue>> {
        {
            let queues = self.queues.read();
            let q = queues.get(slot).ok_or(Error::NoQueueSlot(slot))?;
            if !q.is_broken() {
                return Ok(q.clone());
            }
        }
        let mut queues = self.queues.write();
        let q = queues.get_mut(slot).ok_or(Error::NoQueueSlot(slot))?;
        if q.is_broken() {
            log::debug!("replacing HSA queue {slot}, stopped after an error");
            *q = Arc::new(Queue::new(
                &self.hsa,
                self.agent,
                self.size,
                self.signals.clone(),
            )?);
        }
        Ok(q.clone())
    }
}
