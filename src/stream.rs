//! Streams and events: the asynchronous heart of the plugin (LLVM 16's
//! `AMDGPUStreamTy` / `AMDGPUEventTy` in `plugins-nextgen/amdgpu/src/rtl.cpp`).
//!
//! # The slot chain
//!
//! A [`Stream`] is what libomptarget's `__tgt_async_info::Queue` points to:
//! an ordered list of asynchronous operations on one device. Every operation
//! appended to it takes one *slot*. A slot owns the operation's completion
//! signal (set to 1, brought to 0 by whoever finishes the operation) and the
//! resources that must outlive the operation (a kernarg block, a staging
//! buffer, a temporarily locked host range, another stream's signal).
//!
//! Ordering comes from chaining: when an operation is appended, the signal of
//! the slot before it becomes its *input dependency*, so operation n starts
//! only after operation n-1 finished. How the dependency is expressed depends
//! on who executes the operation:
//!
//! - a kernel goes to the stream's HSA queue behind a barrier-AND packet that
//!   waits on the input signal (the queue does not start later packets while
//!   a barrier waits: the barrier bit of `hsa_barrier_and_packet_t`,
//!   `hsa/hsa.h`);
//! - a DMA copy passes the input signal in `hsa_amd_memory_async_copy`'s
//!   dependency list, so the copy engine starts it once the signal is 0;
//! - a host step (a `memcpy` between a user's pageable buffer and a pinned
//!   staging buffer) is registered with `hsa_amd_signal_async_handler` on the
//!   input signal: the runtime's handler thread runs it once the signal
//!   drops below 1, and it then completes its own slot's signal.
//!
//! An input whose signal is already 0 is dropped (no barrier, no dependency,
//! and a host step runs at once on the calling thread). Nothing here blocks
//! the caller: only [`Stream::synchronize`] waits, on the last slot's signal,
//! which by the chain implies all earlier ones. Completion (`synchronize`,
//! or a [`Stream::query`] that finds the last signal at 0) then releases each
//! slot's resources (the "post actions": staging buffers go back to their
//! memory manager, kernarg slots to the stream's own free list (so a launch
//! needs no memory-manager call once the stream is warm), locked ranges are
//! unlocked, signals return to the pool), empties the stream and starts a
//! new *sync cycle*.
//!
//! Failure travels the same chain: a copy whose dependency goes negative
//! fails and stores -1 in its own signal, a host step whose input is negative
//! skips its copy and stores -1, and a queue that stops on an error fails
//! every signal it still owed (see `queue.rs`). The last signal is then
//! negative and `synchronize` reports the failure instead of hanging.
//! An operation that cannot be queued at all fails its own signal if it
//! already took a slot (nobody else would ever complete it), and the device
//! marks the stream failed, so the async info reports the error at once
//! even when the refusal came before any slot was taken. A new operation
//! whose input already failed is refused instead of queued: a barrier on a
//! negative signal would stop the HSA queue for every stream on it. A
//! stream whose queue stopped moves to the replacement queue of its slot
//! (see [`QueueSet`]).
//!
//! # Events
//!
//! An [`Event`] records the last slot's signal of a stream (an `Arc`, so the
//! signal cannot be recycled under it). Another stream waits for it with a
//! barrier-AND on two signals: its own last one and the recorded one.

use crate::error::{Error, Result};
use crate::memory::{HostBlock, HostPoolManager};
use crate::queue::{Dispatch, Queue, QueueSet};
use crate::signal::{Signal, SignalPool};
use hsa::{DeviceRange, HostSpan, Hsa};
use hsa_sys::{hsa_agent_t, hsa_signal_t, hsa_signal_value_t, HSA_SIGNAL_CONDITION_LT};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Bytes of one kernarg slot: blocks up to this size (25 explicit
/// arguments plus the 56-byte implicit block) come from the stream's own
/// free list of slots; larger ones straight from the kernarg memory manager.
pub const KERNARG_SLOT_SIZE: usize = 256;

/// Something a slot keeps alive until its stream completes.
#[derive(Debug)]
pub enum Held {
    /// A host block (staging buffer).
    Block(HostBlock),
    /// A signal of another stream this one waits on.
    Signal(Arc<Signal>),
    /// Anything else with a `Drop` that releases it (a lock guard).
    Other(Box<dyn std::fmt::Debug + Send>),
}

/// One operation of a stream: its completion signal and what it holds.
#[derive(Debug)]
struct Slot {
    signal: Arc<Signal>,
    /// A kernel's kernarg block (no `Vec` needed on the launch path): a
    /// [`KERNARG_SLOT_SIZE`]-byte slot goes back to the stream's free list
    /// when the stream completes, a larger block to its manager.
    _kernarg: Option<HostBlock>,
    /// Released (dropped) when the stream completes.
    _held: Vec<Held>,
    /// The operation reads host memory but writes none (a host-to-device
    /// copy through a staging buffer): see [`State::pending_only_read_host`].
    reads_host_only: bool,
}

#[derive(Debug)]
struct State {
    slots: Vec<Slot>,
    /// Idle kernarg slots of this stream ([`KERNARG_SLOT_SIZE`] bytes
    /// each), returned to the kernarg manager when the stream is dropped.
    kernarg_free: Vec<HostBlock>,
    /// The HSA queue kernels and barriers go to (replaced when the runtime
    /// stopped it).
    queue: Arc<Queue>,
    /// Set when an operation could not be appended (refused before or
    /// after taking a slot): the next synchronization reports a failure
    /// even if every slot completed, and clears it.
    failed: bool,
}

impl State {
    /// Appends a slot completing `signal`; returns the input dependency: the
    /// previous slot's signal, unless that operation already completed
    /// successfully (a failed one stays, to pass its failure on).
    fn consume(&mut self, signal: Arc<Signal>, held: Vec<Held>) -> Option<Arc<Signal>> {
        self.consume_with(signal, None, held)
    }

    /// [`State::consume`] for a slot that may also hold a kernarg block.
    #[inline]
    fn consume_with(
        &mut self,
        signal: Arc<Signal>,
        kernarg: Option<HostBlock>,
        held: Vec<Held>,
    ) -> Option<Arc<Signal>> {
        let input = self
            .slots
            .last()
            .filter(|s| !s.signal.succeeded())
            .map(|s| s.signal.clone());
        self.slots.push(Slot {
            signal,
            _kernarg: kernarg,
            _held: held,
            reads_host_only: false,
        });
        input
    }

    /// True when no operation still pending may write host memory (every
    /// pending slot is a host-to-device copy), so reading host memory now
    /// gives what it would give once they completed. Slots complete in
    /// order, so the scan stops at the first completed one.
    fn pending_only_read_host(&self) -> bool {
        self.slots
            .iter()
            .rev()
            .take_while(|s| !s.signal.succeeded())
            .all(|s| s.reads_host_only)
    }

    fn last_signal(&self) -> Option<Arc<Signal>> {
        self.slots.last().map(|s| s.signal.clone())
    }
}

/// An ordered chain of asynchronous operations on one device; see the
/// module docs.
#[derive(Debug)]
pub struct Stream {
    hsa: Hsa,
    agent: hsa_agent_t,
    /// The device's queues and this stream's slot among them.
    queues: Arc<QueueSet>,
    queue_slot: usize,
    signals: SignalPool,
    /// Where kernarg blocks come from.
    kernargs: Arc<HostPoolManager>,
    state: Mutex<State>,
    /// Whether the stream is lent to an async info (kept by the device).
    lent: AtomicBool,
}

impl Stream {
    /// An empty stream of `agent` whose kernels go to the queue of slot
    /// `queue_slot` of `queues`, with completion signals from `signals` and
    /// kernarg blocks from `kernargs`.
    ///
    /// Errors: the queue of that slot had to be replaced and could not be.
    pub fn new(
        hsa: &Hsa,
        agent: hsa_agent_t,
        queues: Arc<QueueSet>,
        queue_slot: usize,
        signals: SignalPool,
        kernargs: Arc<HostPoolManager>,
    ) -> Result<Stream> {
        let queue = queues.get(queue_slot)?;
        Ok(Stream {
            hsa: hsa.clone(),
            agent,
            queues,
            queue_slot,
            signals,
            kernargs,
            state: Mutex::new(State {
                slots: Vec::new(),
                kernarg_free: Vec::new(),
                queue,
                failed: false,
            }),
            lent: AtomicBool::new(false),
        })
    }

    /// Marks the stream failed: its next synchronization (or query) reports
    /// a failure. Called by the device when appending an operation failed.
    pub fn mark_failed(&self) {
        self.state.lock().failed = true;
    }

    /// Replaces the stream's queue (`st.queue`) when the runtime stopped
    /// it. Caller holds the state lock.
    ///
    /// Errors: the replacement queue could not be created.
    #[inline]
    fn ensure_usable_queue(&self, st: &mut State) -> Result<()> {
        if st.queue.is_broken() {
            st.queue = self.queues.get(self.queue_slot)?;
        }
        Ok(())
    }

    /// Marks the stream lent (`true`) or idle; returns the previous state.
    #[inline]
    pub fn set_lent(&self, lent: bool) -> bool {
        self.lent.swap(lent, Ordering::AcqRel)
    }

    /// Whether the stream is lent to an async info.
    #[inline]
    pub fn is_lent(&self) -> bool {
        self.lent.load(Ordering::Acquire)
    }

    /// Number of operations since the last completion.
    pub fn len(&self) -> usize {
        self.state.lock().slots.len()
    }

    /// Whether the stream holds no operation.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a kernel dispatch of `d` (its `kernarg` field is ignored)
    /// with a kernarg block of `kernarg_size` bytes, which `fill` writes
    /// entirely before the packet is published; the block is released when
    /// the stream completes.
    ///
    /// Errors: no signal or kernarg memory available; the queue is broken.
    pub fn push_kernel(
        &self,
        d: &Dispatch,
        kernarg_size: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<()> {
        let out = self.signals.get()?;
        let mut st = self.state.lock();
        let kernarg = if kernarg_size <= KERNARG_SLOT_SIZE {
            match st.kernarg_free.pop() {
                Some(slot) => slot,
                None => HostBlock::allocate(&self.kernargs, KERNARG_SLOT_SIZE)?,
            }
        } else {
            HostBlock::allocate(&self.kernargs, kernarg_size)?
        };
        let addr = kernarg.addr();
        // The block is this stream's and idle (a free slot or a fresh
        // block); no packet refers to it before the one pushed below.
        kernarg.span().prefix(kernarg_size).fill_with(fill);
        let dispatch = Dispatch {
            kernarg: addr,
            ..*d
        };
        let usable = self.ensure_usable_queue(&mut st);
        let input = st.consume_with(out.clone(), Some(kernarg), Vec::new());
        let pushed = usable.and_then(|()| {
            refuse_after_failure(input.as_ref())?;
            st.queue.push_kernel(&dispatch, &out, input.as_ref())
        });
        if pushed.is_err() {
            // Nobody will ever complete `out`: fail it, so that waiting on
            // the stream reports the error at once instead of hanging.
            out.fail();
        }
        pushed
    }

    /// Keeps `held` alive until the stream completes, with the last
    /// operation appended (dropped at once when the stream is empty, i.e.
    /// everything already completed).
    pub fn hold_with_last(&self, held: Held) {
        let mut st = self.state.lock();
        if let Some(last) = st.slots.last_mut() {
            last._held.push(held);
        }
    }

    /// Appends a DMA copy of `size` bytes between two device ranges
    /// (device memory, pinned or locked host memory, a host block). `held`
    /// is kept until the stream completes.
    ///
    /// Both ranges stay valid until the stream completes: device pointers
    /// by libomptarget's contract for its buffers (vouched for at the C
    /// ABI, `rtl.rs`), locked aliases by the lock `held` (or the caller's
    /// `data_lock`), host blocks by `held` or the slot that holds them.
    ///
    /// Errors: no signal available; `size` exceeds a range;
    /// `hsa_amd_memory_async_copy` refused.
    pub fn push_copy(
        &self,
        dst: DeviceRange,
        src: DeviceRange,
        size: usize,
        held: Vec<Held>,
    ) -> Result<()> {
        let out = self.signals.get()?;
        let mut st = self.state.lock();
        let input = st.consume(out.clone(), held);
        self.issue_copy(dst, src, size, input.as_deref(), &out)
    }

    /// Issues one DMA copy completing `out`, after `input` when given; the
    /// ranges as [`Stream::push_copy`] requires.
    fn issue_copy(
        &self,
        dst: DeviceRange,
        src: DeviceRange,
        size: usize,
        input: Option<&Signal>,
        out: &Arc<Signal>,
    ) -> Result<()> {
        let deps: Vec<hsa_signal_t> = input.map(|s| s.raw()).into_iter().collect();
        let r = self
            .hsa
            .copy_async(&dst, &src, size, self.agent, &deps, out.raw());
        if let Err(e) = r {
            // The runtime will never complete `out`: mark it failed so the
            // stream's synchronization reports the error instead of hanging.
            out.fail();
            return Err(e.into());
        }
        Ok(())
    }

    /// Appends a host copy from `src` to `dst` run after the previous
    /// operation; at once on this thread when the stream is idle. Both
    /// spans must stay valid until the stream completes (their creators'
    /// promise, `HostSpan::new`).
    ///
    /// Errors: no signal available; `hsa_amd_signal_async_handler` refused.
    pub fn push_host_step(&self, dst: HostSpan, src: HostSpan, held: Vec<Held>) -> Result<()> {
        let mut st = self.state.lock();
        self.host_step_locked(&mut st, dst, src, held)
    }

    /// Host step under the stream lock; see [`Stream::push_host_step`].
    fn host_step_locked(
        &self,
        st: &mut State,
        dst: HostSpan,
        src: HostSpan,
        held: Vec<Held>,
    ) -> Result<()> {
        let pending = st
            .slots
            .last()
            .map(|s| s.signal.clone())
            .filter(|s| !s.succeeded());
        let Some(input) = pending else {
            // Everything before completed successfully: copy now.
            dst.copy_from(&src).map_err(host_memory_gone)?;
            drop(held);
            return Ok(());
        };
        let out = self.signals.get()?;
        st.consume(out.clone(), held);
        let raw_input = input.raw();
        let output = out.clone();
        // Run by the runtime's async-handler thread once the input's value
        // drops below 1: copies on success, passes a failure on. The input
        // is kept so its signal cannot return to the pool before then.
        let step = move |value: hsa_signal_value_t| {
            let _input = input;
            if value < 0 {
                output.fail();
                return;
            }
            match dst.copy_from(&src) {
                Ok(_) => output.complete(),
                Err(e) => {
                    log::error!("{}", host_memory_gone(e));
                    output.fail();
                }
            }
        };
        let r = self
            .hsa
            .on_signal_once(raw_input, HSA_SIGNAL_CONDITION_LT, 1, Box::new(step));
        if let Err(e) = r {
            // The step will never run: fail the slot so synchronization
            // reports it.
            out.fail();
            return Err(e.into());
        }
        Ok(())
    }

    /// Host → device through a pinned staging buffer: the user's bytes are
    /// copied into `staging` (at once when no pending operation may write
    /// host memory, else by a host step after the previous operation), then
    /// a DMA copy moves them to `dst` (a device range of `src.len()` bytes).
    /// `staging` returns to its manager when the stream completes.
    ///
    /// Errors: as [`Stream::push_host_step`] and [`Stream::push_copy`].
    pub fn push_h2d_staged(
        &self,
        dst: DeviceRange,
        src: HostSpan,
        staging: HostBlock,
    ) -> Result<()> {
        let inter = staging.span();
        let size = src.len();
        let mut st = self.state.lock();
        if st.pending_only_read_host() {
            // Read the caller's buffer now rather than when the stream gets
            // here: nothing pending can change it, and libomptarget 16 may
            // release the buffer before it synchronizes (its firstprivate
            // arguments live in `target()`'s frame; see the lit runner's
            // known LLVM 16 bugs).
            inter.copy_from(&src).map_err(host_memory_gone)?;
        } else {
            self.host_step_locked(&mut st, inter, src, Vec::new())?;
        }
        let out = self.signals.get()?;
        let range = staging.range();
        let input = st.consume(out.clone(), vec![Held::Block(staging)]);
        if let Some(slot) = st.slots.last_mut() {
            slot.reads_host_only = true;
        }
        self.issue_copy(dst, range, size, input.as_deref(), &out)
    }

    /// Device → host through a pinned staging buffer: a DMA copy from `src`
    /// (a device range of `dst.len()` bytes) into `staging`, then a host
    /// step copying into `dst`.
    ///
    /// Errors: as [`Stream::push_host_step`] and [`Stream::push_copy`].
    pub fn push_d2h_staged(
        &self,
        dst: HostSpan,
        src: DeviceRange,
        staging: HostBlock,
    ) -> Result<()> {
        let inter = staging.span();
        let mut st = self.state.lock();
        let out = self.signals.get()?;
        let input = st.consume(out.clone(), Vec::new());
        self.issue_copy(staging.range(), src, dst.len(), input.as_deref(), &out)?;
        // The staging buffer must live until the host step ran: hold it in
        // the host step's slot (or drop it right after an immediate copy).
        self.host_step_locked(&mut st, dst, inter, vec![Held::Block(staging)])
    }

    /// Makes this stream wait for `other` (a signal of another stream,
    /// recorded by an event): a barrier-AND on the stream's last signal and
    /// `other`. The other signal is held until this stream completes.
    ///
    /// Errors: no signal available; the queue is broken.
    pub fn wait_for(&self, other: Arc<Signal>) -> Result<()> {
        if other.succeeded() {
            return Ok(());
        }
        let out = self.signals.get()?;
        let mut st = self.state.lock();
        let other_raw = other.raw();
        let usable = self.ensure_usable_queue(&mut st);
        let input = st.consume(out.clone(), vec![Held::Signal(other.clone())]);
        let mut deps = vec![other_raw];
        if let Some(i) = &input {
            deps.push(i.raw());
        }
        let pushed = usable.and_then(|()| {
            refuse_after_failure(Some(&other))?;
            refuse_after_failure(input.as_ref())?;
            st.queue.push_barrier(&deps, &out)
        });
        if pushed.is_err() {
            // As in `push_kernel`: `out` would never complete.
            out.fail();
        }
        pushed
    }

    /// The last operation's signal (None when empty), for events.
    pub fn last_signal(&self) -> Option<Arc<Signal>> {
        self.state.lock().last_signal()
    }

    /// Releases every slot's resources, empties the stream and starts a new
    /// sync cycle. Caller holds the lock and knows the last operation ended.
    #[inline]
    fn complete(&self, st: &mut State) {
        while let Some(slot) = st.slots.pop() {
            let Slot {
                signal,
                _kernarg,
                _held,
                ..
            } = slot;
            if let Some(block) = _kernarg.filter(|b| b.len() == KERNARG_SLOT_SIZE) {
                st.kernarg_free.push(block);
            }
            self.signals.recycle(signal);
        }
    }

    /// Blocks until every operation finished, then completes the stream.
    ///
    /// Errors: [`Error::AsyncOperationFailed`] when an operation failed (its
    /// failure reached the last signal); the stream is completed anyway.
    #[inline]
    pub fn synchronize(&self) -> Result<()> {
        let mut st = self.state.lock();
        let failed = std::mem::take(&mut st.failed);
        let Some(last) = st.last_signal() else {
            return failed_result(failed, 0);
        };
        let v = last.wait();
        // Dropped first, so that `complete` can recycle the signal.
        drop(last);
        self.complete(&mut st);
        failed_result(failed, v)
    }

    /// [`Stream::synchronize`] that waits at most until `deadline`
    /// (process teardown). Returns `Ok(false)`, leaving the stream as it
    /// is, when the last operation is still pending then.
    ///
    /// Errors: as [`Stream::synchronize`].
    pub fn synchronize_until(&self, deadline: std::time::Instant) -> Result<bool> {
        let mut st = self.state.lock();
        let Some(last) = st.last_signal() else {
            return failed_result(std::mem::take(&mut st.failed), 0).map(|()| true);
        };
        let Some(v) = last.wait_until(deadline) else {
            return Ok(false);
        };
        drop(last);
        self.complete(&mut st);
        failed_result(std::mem::take(&mut st.failed), v).map(|()| true)
    }

    /// Non-blocking: completes the stream and returns `true` when every
    /// operation finished, else `false` and leaves it untouched.
    ///
    /// Errors: as [`Stream::synchronize`].
    pub fn query(&self) -> Result<bool> {
        let mut st = self.state.lock();
        let Some(last) = st.last_signal() else {
            return failed_result(std::mem::take(&mut st.failed), 0).map(|()| true);
        };
        let v = last.load();
        if v > 0 {
            return Ok(false);
        }
        drop(last);
        self.complete(&mut st);
        failed_result(std::mem::take(&mut st.failed), v).map(|()| true)
    }
}

/// The outcome of a stream whose last signal ended at `value`, with
/// `failed` its failure flag.
fn failed_result(failed: bool, value: hsa_signal_value_t) -> Result<()> {
    if failed || value < 0 {
        return Err(Error::AsyncOperationFailed("stream operation"));
    }
    Ok(())
}

/// Refuses to queue behind `input` when it already failed: a barrier on a
/// negative signal would stop the whole HSA queue (other streams' work
/// included), and the new operation could never run anyway.
///
/// Errors: [`Error::AsyncOperationFailed`] when `input` is negative.
#[inline]
fn refuse_after_failure(input: Option<&Arc<Signal>>) -> Result<()> {
    match input {
        Some(s) if s.load() < 0 => Err(Error::AsyncOperationFailed(
            "operation (the one before it on this stream)",
        )),
        _ => Ok(()),
    }
}

/// A recorded point of a stream that other streams can wait for.
#[derive(Debug, Default)]
pub struct Event {
    state: Mutex<EventState>,
}

#[derive(Debug, Default)]
enum EventState {
    /// Never recorded: waiting on it is an error (as LLVM).
    #[default]
    Unrecorded,
    /// Recorded on a stream (identified by address) at its last signal, or
    /// `None` when that stream was empty (nothing to wait for).
    Recorded {
        stream: usize,
        signal: Option<Arc<Signal>>,
    },
}

impl Event {
    /// Records the current end of `stream`.
    pub fn record(&self, stream: &Stream) {
        let signal = stream.last_signal().filter(|s| !s.succeeded());
        *self.state.lock() = EventState::Recorded {
            stream: std::ptr::from_ref(stream) as usize,
            signal,
        };
    }

    /// Whether the event was recorded (waiting on it is allowed).
    pub fn is_recorded(&self) -> bool {
        matches!(&*self.state.lock(), EventState::Recorded { .. })
    }

    /// Makes `stream` wait for the recorded point. Nothing to do when the
    /// point is already reached or was recorded on `stream` itself.
    ///
    /// Errors: the event was never recorded; as [`Stream::wait_for`].
    pub fn wait(&self, stream: &Stream) -> Result<()> {
        let (recorded_on, signal) = match &*self.state.lock() {
            EventState::Unrecorded => {
                return Err(Error::InvalidArgument(
                    "wait on an event that was never recorded".into(),
                ))
            }
            EventState::Recorded { stream, signal } => (*stream, signal.clone()),
        };
        match signal {
            Some(sig) if recorded_on != std::ptr::from_ref(stream) as usize => stream.wait_for(sig),
            _ => Ok(()),
        }
    }

    /// Blocks until the recorded point is reached.
    ///
    /// Errors: the recorded operation failed.
    pub fn synchronize(&self) -> Result<()> {
        let signal = match &*self.state.lock() {
            EventState::Recorded {
                signal: Some(s), ..
            } => s.clone(),
            _ => return Ok(()),
        };
        if signal.wait() < 0 {
            return Err(Error::AsyncOperationFailed("recorded operation"));
        }
        Ok(())
    }
}

/// The error of a host copy whose buffer the program took away (freed or
/// protected) while the transfer was queued.
fn host_memory_gone(e: host_copy::Unreachable) -> Error {
    Error::InvalidArgument(format!(
        "a host buffer of a pending transfer is gone: {e} (freed before the transfer completed?)"
    ))
}
