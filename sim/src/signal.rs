//! Signals of the virtual device (ROCm 5.2 `hsa/hsa.h` signal section,
//! `hsa/hsa_ext_amd.h` for `hsa_amd_signal_*`, and `hsa/amd_hsa_signal.h`).
//!
//! A [`Signal`] is a 64-bit atomic value plus a way to sleep until it changes.
//! The value lives at offset 8 of a heap-allocated, 64-byte, 64-aligned block
//! laid out like ROCr's `amd_signal_t`, at an address that is stable for the
//! signal's lifetime ([`Signal::amd_signal_address`]). Nothing hands that
//! address out: every `hsa_signal_t` handle (the one a client holds, a
//! queue's `doorbell_signal`, a packet's completion and dependency signals)
//! is an entry of the runtime's signal handle table (`crate::handles`), and
//! the runtime and the packet processor reach the signal by looking the
//! handle up there.
//!
//! # How waiting works
//!
//! Every value-changing operation ends in the same *wake path*: a sequentially
//! consistent fence, then two relaxed loads of interest counters (threads
//! parked in [`Signal::wait`], registered observers). Only when a counter is
//! non-zero is anything more done: the signal's own event count is bumped and
//! futex-woken, and every registered [`Notifier`] is notified. A store nobody
//! waits for therefore takes no lock and makes no system call.
//!
//! A waiter first re-checks for a short while (spinning), then announces
//! itself (counter increment + fence), and then loops `epoch → check value →
//! sleep on epoch`. The pair of fences guarantees that either the waiter sees
//! the new value or the writer sees the waiter and bumps the epoch, which makes
//! the futex sleep return; no change can be missed.
//!
//! Multi-signal waits ([`wait_any`]) and the async-handler thread
//! ([`AsyncHandlerThread`]) sleep on one [`Notifier`] registered as an observer
//! of every signal they watch.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a `HSA_WAIT_STATE_BLOCKED` wait re-checks the value before it
/// parks the thread.
const BLOCKED_SPIN: Duration = Duration::from_micros(10);

/// How long a `HSA_WAIT_STATE_ACTIVE` wait re-checks the value before it parks
/// the thread (ROCr spins about as long before it sleeps:
/// `InterruptSignal::WaitRelaxed` in `src/core/runtime/interrupt_signal.cpp` of
/// ROCR-Runtime `rocm-5.2.3`).
const ACTIVE_SPIN: Duration = Duration::from_micros(200);

/// `AMD_SIGNAL_KIND_USER` from `hsa/amd_hsa_signal.h` (`amd_signal_kind_t`).
const AMD_SIGNAL_KIND_USER: i64 = 1;

/// Name of the runtime thread that runs async signal handlers and async
/// functions (`hsa_amd_signal_async_handler`, `hsa_amd_async_function` in
/// `hsa/hsa_ext_amd.h`).
pub const ASYNC_HANDLER_THREAD_NAME: &str = "hsa-async-handler";

/// `hsa_signal_condition_t` (`hsa/hsa.h`): the test `value OP compare_value` a wait
/// or an async handler is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// `HSA_SIGNAL_CONDITION_EQ` (0): `value == compare`.
    Eq,
    /// `HSA_SIGNAL_CONDITION_NE` (1): `value != compare`.
    Ne,
    /// `HSA_SIGNAL_CONDITION_LT` (2): `value < compare` (signed).
    Lt,
    /// `HSA_SIGNAL_CONDITION_GTE` (3): `value >= compare` (signed).
    Gte,
}

impl Condition {
    /// Converts the C enum value; `None` for anything but 0..=3.
    pub fn from_raw(raw: u32) -> Option<Condition> {
        match raw {
            0 => Some(Condition::Eq),
            1 => Some(Condition::Ne),
            2 => Some(Condition::Lt),
            3 => Some(Condition::Gte),
            _ => None,
        }
    }

    /// Whether `value OP compare` is true for this condition.
    pub fn holds(self, value: i64, compare: i64) -> bool {
        match self {
            Condition::Eq => value == compare,
            Condition::Ne => value != compare,
            Condition::Lt => value < compare,
            Condition::Gte => value >= compare,
        }
    }
}

/// Memory ordering of a signal value operation, as the suffix of the HSA call
/// names it (`_relaxed`, `_scacquire`, `_screlease`, `_scacq_screl`; `hsa/hsa.h`).
///
/// An ordering that makes no sense for the operation (release on a load,
/// acquire on a store) is strengthened to the nearest valid one, never
/// weakened.
#[derive(Clone, Copy, Debug)]
pub enum MemoryOrder {
    /// No ordering beyond the atomicity of the value operation.
    Relaxed,
    /// Acquire (`_scacquire`).
    Acquire,
    /// Release (`_screlease`).
    Release,
    /// Acquire and release (`_scacq_screl`).
    AcqRel,
}

impl MemoryOrder {
    fn for_load(self) -> Ordering {
        match self {
            MemoryOrder::Relaxed => Ordering::Relaxed,
            _ => Ordering::Acquire,
        }
    }

    fn for_store(self) -> Ordering {
        match self {
            MemoryOrder::Relaxed => Ordering::Relaxed,
            _ => Ordering::Release,
        }
    }

    fn for_rmw(self) -> Ordering {
        match self {
            MemoryOrder::Relaxed => Ordering::Relaxed,
            MemoryOrder::Acquire => Ordering::Acquire,
            MemoryOrder::Release => Ordering::Release,
            MemoryOrder::AcqRel => Ordering::AcqRel,
        }
    }
}

/// Thin wrappers over the Linux futex system call on a 32-bit word.
mod futex {
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    /// Sleeps while `*word == expected`, at most `timeout` (None = no limit).
    /// May return early (signal delivery, value already different, spurious):
    /// callers re-check their condition.
    pub(super) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
            // Below 10^9: fits a c_long of any width.
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr: *const libc::timespec = match &ts {
            Some(t) => t,
            None => std::ptr::null(),
        };
        // SAFETY: `word` is a live, 4-byte aligned atomic for the whole call
        // (borrowed); FUTEX_WAIT only reads it and compares with `expected`.
        // `ts_ptr` is null or points at `ts`, alive until the call returns.
        // The result is deliberately ignored: EAGAIN, EINTR and ETIMEDOUT all
        // mean "re-check", which every caller does.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                ts_ptr,
            );
        }
    }

    /// Wakes every thread sleeping in [`wait`] on `word`.
    pub(super) fn wake_all(word: &AtomicU32) {
        // SAFETY: `word` is a live, aligned atomic; FUTEX_WAKE does not access
        // user memory beyond using the address as a key.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            );
        }
    }
}

/// An epoch counter that threads can sleep on until it moves.
struct EventCount {
    epoch: AtomicU32,
    sleepers: AtomicU32,
}

impl EventCount {
    const fn new() -> EventCount {
        EventCount {
            epoch: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
        }
    }

    fn epoch(&self) -> u32 {
        self.epoch.load(Ordering::SeqCst)
    }

    fn notify(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            futex::wake_all(&self.epoch);
        }
    }

    /// Sleeps once while the epoch equals `seen`, until `deadline` at the
    /// latest; may return spuriously.
    fn sleep_once(&self, seen: u32, deadline: Option<Instant>) {
        let timeout = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return,
            },
        };
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if self.epoch.load(Ordering::SeqCst) == seen {
            futex::wait(&self.epoch, seen, timeout);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Sleeps until the epoch differs from `seen` or `deadline` has passed.
    fn wait_until(&self, seen: u32, deadline: Option<Instant>) {
        while self.epoch() == seen {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
            self.sleep_once(seen, deadline);
        }
    }
}

/// Lets one thread sleep until something it watches changes: a set of
/// signals (register it with [`Signal::add_observer`]), a queue doorbell, new
/// work (call [`Notifier::notify`] yourself).
///
/// Protocol: `let e = n.epoch(); <check conditions>; n.wait(e, timeout)`.
/// A notify that happens after `epoch()` was read makes `wait` return, so a
/// change made after the check can never be slept through.
pub struct Notifier {
    count: EventCount,
}

impl Notifier {
    /// A new notifier at epoch 0.
    pub fn new() -> Arc<Notifier> {
        Arc::new(Notifier {
            count: EventCount::new(),
        })
    }

    /// The current epoch (a counter of notifications, wrapping).
    pub fn epoch(&self) -> u32 {
        self.count.epoch()
    }

    /// Sleeps until the epoch differs from `seen_epoch` (returns at once if it
    /// already does) or `timeout` has passed (None = no limit). The thread
    /// really sleeps (futex), it does not spin.
    pub fn wait(&self, seen_epoch: u32, timeout: Option<Duration>) {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        self.count.wait_until(seen_epoch, deadline);
    }

    /// Advances the epoch and wakes every thread sleeping in [`Notifier::wait`].
    pub fn notify(&self) {
        self.count.notify();
    }
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("epoch", &self.epoch())
            .finish()
    }
}

/// The `amd_signal_t` block (`hsa/amd_hsa_signal.h`): 64 bytes, 64-aligned. Every field is an
/// atomic so that device code may write it through its address at any time.
#[repr(C, align(64))]
struct AmdSignalBlock {
    kind: AtomicI64,
    value: AtomicI64,
    event_mailbox_ptr: AtomicU64,
    event_id: AtomicU32,
    reserved1: AtomicU32,
    start_ts: AtomicU64,
    end_ts: AtomicU64,
    queue_ptr: AtomicU64,
    reserved3: [AtomicU32; 2],
}

const _: () = {
    assert!(std::mem::size_of::<AmdSignalBlock>() == 64);
    assert!(std::mem::align_of::<AmdSignalBlock>() == 64);
    assert!(std::mem::offset_of!(AmdSignalBlock, kind) == 0);
    assert!(std::mem::offset_of!(AmdSignalBlock, value) == 8);
    assert!(std::mem::offset_of!(AmdSignalBlock, event_mailbox_ptr) == 16);
    assert!(std::mem::offset_of!(AmdSignalBlock, event_id) == 24);
    assert!(std::mem::offset_of!(AmdSignalBlock, reserved1) == 28);
    assert!(std::mem::offset_of!(AmdSignalBlock, start_ts) == 32);
    assert!(std::mem::offset_of!(AmdSignalBlock, end_ts) == 40);
    assert!(std::mem::offset_of!(AmdSignalBlock, queue_ptr) == 48);
    assert!(std::mem::offset_of!(AmdSignalBlock, reserved3) == 56);
};

/// An HSA signal (`hsa_signal_t`, `hsa/hsa.h`).
///
/// The 64-bit value lives inside a 64-byte, 64-aligned `amd_signal_t`-shaped
/// block (kind i64 @0 = 1 (USER), value i64 @8, start_ts u64 @32, end_ts u64
/// @40, queue_ptr @48 = 0), the layout ROCr gives a signal in memory; the
/// block is heap-allocated and never moves while the `Signal` lives. Clients
/// name the signal by its handle-table handle, not by the block's address.
///
/// Every value-changing operation wakes the threads in [`Signal::wait`] and
/// notifies the registered observers.
pub struct Signal {
    block: Box<AmdSignalBlock>,
    /// Threads parked (or about to park) in [`Signal::wait`].
    waiters: AtomicU32,
    /// Length of `observers`, readable without the lock.
    observer_count: AtomicU32,
    destroyed: AtomicBool,
    wake: EventCount,
    observers: Mutex<Vec<Arc<Notifier>>>,
}

/// Decrements a counter when dropped.
struct CountGuard<'a>(&'a AtomicU32);

impl Drop for CountGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Signal {
    /// A new signal holding `initial` (`hsa_signal_create`, `hsa/hsa.h`).
    pub fn new(initial: i64) -> Arc<Signal> {
        let block = Box::new(AmdSignalBlock {
            kind: AtomicI64::new(AMD_SIGNAL_KIND_USER),
            value: AtomicI64::new(initial),
            event_mailbox_ptr: AtomicU64::new(0),
            event_id: AtomicU32::new(0),
            reserved1: AtomicU32::new(0),
            start_ts: AtomicU64::new(0),
            end_ts: AtomicU64::new(0),
            queue_ptr: AtomicU64::new(0),
            reserved3: [AtomicU32::new(0), AtomicU32::new(0)],
        });
        Arc::new(Signal {
            block,
            waiters: AtomicU32::new(0),
            observer_count: AtomicU32::new(0),
            destroyed: AtomicBool::new(false),
            wake: EventCount::new(),
            observers: Mutex::new(Vec::new()),
        })
    }

    /// Host address of the `amd_signal_t` block (64-aligned, non-zero, stable
    /// for the signal's lifetime); the value is at this address + 8. For
    /// diagnostics and layout checks: `hsa_signal_t` handles come from the
    /// signal handle table instead.
    pub fn amd_signal_address(&self) -> u64 {
        let block: &AmdSignalBlock = &self.block;
        std::ptr::from_ref(block) as usize as u64
    }

    fn value(&self) -> &AtomicI64 {
        &self.block.value
    }

    /// The wake path, run after every value change.
    fn changed(&self) {
        // Pairs with the fence a waiter or observer issues after announcing
        // itself: either it sees the new value, or we see it here.
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::Relaxed) != 0 {
            self.wake.notify();
        }
        if self.observer_count.load(Ordering::Relaxed) != 0 {
            for n in self.observers.lock().iter() {
                n.notify();
            }
        }
    }

    /// `hsa_signal_load_*`: the current value.
    pub fn load(&self, order: MemoryOrder) -> i64 {
        self.value().load(order.for_load())
    }

    /// `hsa_signal_store_*`: sets the value; wakes waiters and observers.
    pub fn store(&self, value: i64, order: MemoryOrder) {
        self.value().store(value, order.for_store());
        self.changed();
    }

    /// `hsa_signal_silent_store_*`: sets the value. HSA does not require a
    /// wake-up here; this implementation wakes anyway (same as [`Signal::store`]).
    pub fn silent_store(&self, value: i64, order: MemoryOrder) {
        self.store(value, order);
    }

    /// `hsa_signal_exchange_*`: sets the value, returns the previous one; wakes.
    pub fn exchange(&self, value: i64, order: MemoryOrder) -> i64 {
        let prev = self.value().swap(value, order.for_rmw());
        self.changed();
        prev
    }

    /// `hsa_signal_cas_*`: if the value equals `expected`, replaces it with
    /// `value`. Returns the value observed before (equal to `expected` exactly
    /// when the swap happened); wakes when it swapped.
    pub fn cas(&self, expected: i64, value: i64, order: MemoryOrder) -> i64 {
        match self
            .value()
            .compare_exchange(expected, value, order.for_rmw(), order.for_load())
        {
            Ok(prev) => {
                self.changed();
                prev
            }
            Err(prev) => prev,
        }
    }

    /// `hsa_signal_add_*`: value += `v` (wrapping); wakes.
    pub fn add(&self, v: i64, order: MemoryOrder) {
        self.value().fetch_add(v, order.for_rmw());
        self.changed();
    }

    /// `hsa_signal_subtract_*`: value -= `v` (wrapping); wakes.
    pub fn subtract(&self, v: i64, order: MemoryOrder) {
        self.value().fetch_sub(v, order.for_rmw());
        self.changed();
    }

    /// `hsa_signal_and_*`: value &= `v`; wakes.
    pub fn and(&self, v: i64, order: MemoryOrder) {
        self.value().fetch_and(v, order.for_rmw());
        self.changed();
    }

    /// `hsa_signal_or_*`: value |= `v`; wakes.
    pub fn or(&self, v: i64, order: MemoryOrder) {
        self.value().fetch_or(v, order.for_rmw());
        self.changed();
    }

    /// `hsa_signal_xor_*`: value ^= `v`; wakes.
    pub fn xor(&self, v: i64, order: MemoryOrder) {
        self.value().fetch_xor(v, order.for_rmw());
        self.changed();
    }

    /// `hsa_signal_wait_*` (`hsa/hsa.h`): blocks until `value cond compare` holds or
    /// `timeout` has passed (None = forever) and returns the last value read
    /// (acquire), which satisfies the condition unless the wait timed out.
    /// Returns 0 promptly when the signal is or gets destroyed.
    ///
    /// `blocked == true` (`HSA_WAIT_STATE_BLOCKED`) re-checks for about 10 µs,
    /// then sleeps (futex) until a value change wakes it. `blocked == false`
    /// (`HSA_WAIT_STATE_ACTIVE`) re-checks for about 200 µs before sleeping.
    pub fn wait(
        &self,
        cond: Condition,
        compare: i64,
        timeout: Option<Duration>,
        blocked: bool,
    ) -> i64 {
        let start = Instant::now();
        let deadline = timeout.and_then(|t| start.checked_add(t));
        let spin = if blocked { BLOCKED_SPIN } else { ACTIVE_SPIN };
        let spin_end = start.checked_add(spin).unwrap_or(start);

        // Spin phase.
        loop {
            if self.is_destroyed() {
                return 0;
            }
            let v = self.value().load(Ordering::Acquire);
            if cond.holds(v, compare) {
                return v;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return v;
            }
            if now >= spin_end {
                break;
            }
            std::hint::spin_loop();
        }

        // Sleep phase: announce, fence, then epoch → check → sleep.
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let _announced = CountGuard(&self.waiters);
        fence(Ordering::SeqCst);
        loop {
            let seen = self.wake.epoch();
            if self.is_destroyed() {
                return 0;
            }
            let v = self.value().load(Ordering::Acquire);
            if cond.holds(v, compare) {
                return v;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return v;
            }
            self.wake.sleep_once(seen, deadline);
        }
    }

    /// Records dispatch profiling timestamps (start, end) in the block's
    /// `start_ts` / `end_ts` (ns of the system timestamp clock).
    pub fn set_dispatch_times(&self, start: u64, end: u64) {
        self.block.start_ts.store(start, Ordering::Relaxed);
        self.block.end_ts.store(end, Ordering::Release);
    }

    /// The last timestamps given to [`Signal::set_dispatch_times`] as
    /// (start, end); (0, 0) if none.
    pub fn dispatch_times(&self) -> (u64, u64) {
        let end = self.block.end_ts.load(Ordering::Acquire);
        let start = self.block.start_ts.load(Ordering::Relaxed);
        (start, end)
    }

    /// Registers `n` to be notified after every value change of this signal
    /// (and on destruction). Registering the same notifier twice gives two
    /// entries; each [`Signal::remove_observer`] removes one.
    pub fn add_observer(&self, n: &Arc<Notifier>) {
        {
            let mut list = self.observers.lock();
            list.push(Arc::clone(n));
            self.observer_count.fetch_add(1, Ordering::SeqCst);
        }
        // Pairs with the fence in `changed`: a value read after this returns
        // either sees a change, or that change will notify `n`.
        fence(Ordering::SeqCst);
    }

    /// Removes one registration of `n` (no-op if it is not registered).
    pub fn remove_observer(&self, n: &Arc<Notifier>) {
        let removed = {
            let mut list = self.observers.lock();
            match list.iter().position(|o| Arc::ptr_eq(o, n)) {
                Some(i) => {
                    self.observer_count.fetch_sub(1, Ordering::SeqCst);
                    Some(list.swap_remove(i))
                }
                None => None,
            }
        };
        drop(removed);
    }

    /// Marks the signal destroyed (`hsa_signal_destroy`, ROCr behaviour):
    /// current and future waits return 0 promptly, observers are notified,
    /// async-handler registrations on it are dropped without being called.
    /// The memory itself is freed when the last `Arc` goes.
    pub fn mark_destroyed(&self) {
        self.destroyed.store(true, Ordering::SeqCst);
        self.changed();
    }

    /// Whether [`Signal::mark_destroyed`] was called.
    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::SeqCst)
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("address", &format_args!("{:#x}", self.amd_signal_address()))
            .field("value", &self.load(MemoryOrder::Relaxed))
            .field("destroyed", &self.is_destroyed())
            .finish()
    }
}

/// Result of one scan of a [`wait_any`] set.
enum Scan {
    Destroyed,
    Hit(usize, i64),
    Miss,
}

/// Keeps a notifier registered on a set of signals; unregisters on drop.
struct ObserveAll<'a> {
    signals: &'a [Arc<Signal>],
    notifier: &'a Arc<Notifier>,
}

impl<'a> ObserveAll<'a> {
    fn new(signals: &'a [Arc<Signal>], notifier: &'a Arc<Notifier>) -> ObserveAll<'a> {
        for s in signals {
            s.add_observer(notifier);
        }
        ObserveAll { signals, notifier }
    }
}

impl Drop for ObserveAll<'_> {
    fn drop(&mut self) {
        for s in self.signals {
            s.remove_observer(self.notifier);
        }
    }
}

/// `hsa_amd_signal_wait_any` (`hsa/hsa_ext_amd.h`): waits until some pair
/// `signals[i] conds[i] values[i]` holds and returns the lowest such `i` with
/// the value read, or `None` on timeout (None = forever) or when any signal
/// of the set is destroyed. Pairs beyond the shortest of the three slices are
/// ignored; an empty set returns `None` at once. `blocked` as in
/// [`Signal::wait`].
pub fn wait_any(
    signals: &[Arc<Signal>],
    conds: &[Condition],
    values: &[i64],
    timeout: Option<Duration>,
    blocked: bool,
) -> Option<(usize, i64)> {
    let n = signals.len().min(conds.len()).min(values.len());
    if n == 0 {
        return None;
    }
    let signals = &signals[..n];
    let scan = || {
        if signals.iter().any(|s| s.is_destroyed()) {
            return Scan::Destroyed;
        }
        for (i, s) in signals.iter().enumerate() {
            let v = s.value().load(Ordering::Acquire);
            if conds[i].holds(v, values[i]) {
                return Scan::Hit(i, v);
            }
        }
        Scan::Miss
    };

    let start = Instant::now();
    let deadline = timeout.and_then(|t| start.checked_add(t));
    let spin = if blocked { BLOCKED_SPIN } else { ACTIVE_SPIN };
    let spin_end = start.checked_add(spin).unwrap_or(start);
    loop {
        match scan() {
            Scan::Destroyed => return None,
            Scan::Hit(i, v) => return Some((i, v)),
            Scan::Miss => {}
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return None;
        }
        if now >= spin_end {
            break;
        }
        std::hint::spin_loop();
    }

    let notifier = Notifier::new();
    let _observing = ObserveAll::new(signals, &notifier);
    loop {
        let seen = notifier.epoch();
        match scan() {
            Scan::Destroyed => return None,
            Scan::Hit(i, v) => return Some((i, v)),
            Scan::Miss => {}
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        notifier.count.sleep_once(seen, deadline);
    }
}

/// An async signal handler (`hsa_amd_signal_handler` plus its `arg`): called
/// with the value that satisfied the condition; returns true to keep
/// watching, false to unregister.
pub type SignalHandler = Box<dyn FnMut(i64) -> bool + Send>;

/// A function run once on the handler thread (`hsa_amd_async_function`).
type AsyncFunction = Box<dyn FnOnce() + Send>;

/// One `hsa_amd_signal_async_handler` registration.
struct Watch {
    signal: Arc<Signal>,
    cond: Condition,
    value: i64,
    handler: SignalHandler,
}

/// Work handed to the handler thread, not yet picked up.
#[derive(Default)]
struct Inbox {
    watches: Vec<Watch>,
    functions: VecDeque<AsyncFunction>,
}

/// State shared by the handle and the handler thread.
struct Shared {
    notifier: Arc<Notifier>,
    inbox: Mutex<Inbox>,
    stop: AtomicBool,
}

/// The runtime's async-handler thread (`hsa_amd_signal_async_handler`,
/// `hsa_amd_async_function`; `hsa/hsa_ext_amd.h`), named
/// [`ASYNC_HANDLER_THREAD_NAME`].
///
/// Registrations are level-triggered watches, evaluated only on the handler
/// thread. Handlers and functions run there one at a time, with no lock of
/// this module held, so they may use signals, register further handlers and
/// queue functions. After anything ran, every registration is re-checked
/// before the thread sleeps; it sleeps on a [`Notifier`] observing every
/// watched signal.
pub struct AsyncHandlerThread {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    thread_id: ThreadId,
}

impl AsyncHandlerThread {
    /// Spawns the handler thread. Errors: the OS could not create the thread
    /// (the C layer maps it to `HSA_STATUS_ERROR_OUT_OF_RESOURCES`).
    pub fn start() -> std::io::Result<AsyncHandlerThread> {
        let shared = Arc::new(Shared {
            notifier: Notifier::new(),
            inbox: Mutex::new(Inbox::default()),
            stop: AtomicBool::new(false),
        });
        let for_thread = Arc::clone(&shared);
        let handle = thread::Builder::new()
            .name(ASYNC_HANDLER_THREAD_NAME.to_owned())
            .spawn(move || handler_loop(&for_thread))?;
        let thread_id = handle.thread().id();
        Ok(AsyncHandlerThread {
            shared,
            thread: Mutex::new(Some(handle)),
            thread_id,
        })
    }

    /// Registers a level-triggered watch: whenever `signal cond value` holds,
    /// `handler(observed value)` is called on the handler thread (never from
    /// inside `register`, even if the condition already holds); it returns
    /// true to keep watching. The signal is kept alive while registered. A
    /// registration on a destroyed signal, or made after
    /// [`AsyncHandlerThread::shutdown`], is dropped without a call.
    pub fn register(
        &self,
        signal: Arc<Signal>,
        cond: Condition,
        value: i64,
        handler: SignalHandler,
    ) {
        let watch = Watch {
            signal,
            cond,
            value,
            handler,
        };
        let refused = {
            let mut inbox = self.shared.inbox.lock();
            if self.shared.stop.load(Ordering::SeqCst) {
                Some(watch)
            } else {
                inbox.watches.push(watch);
                None
            }
        };
        if refused.is_some() {
            log::debug!("async handler registered after shutdown: dropped");
        }
        drop(refused);
        self.shared.notifier.notify();
    }

    /// Runs `f` once on the handler thread (`hsa_amd_async_function`). Dropped
    /// without running after [`AsyncHandlerThread::shutdown`].
    pub fn run_async(&self, f: Box<dyn FnOnce() + Send>) {
        let refused = {
            let mut inbox = self.shared.inbox.lock();
            if self.shared.stop.load(Ordering::SeqCst) {
                Some(f)
            } else {
                inbox.functions.push_back(f);
                None
            }
        };
        if refused.is_some() {
            log::debug!("async function queued after shutdown: dropped");
        }
        drop(refused);
        self.shared.notifier.notify();
    }

    /// Stops the thread: nothing further runs (a handler already running
    /// finishes), pending registrations and functions are dropped. Waits for
    /// the thread to exit unless called from the handler thread itself, where
    /// it only flags the stop. Idempotent; also done on drop.
    pub fn shutdown(&self) {
        let pending = {
            let mut inbox = self.shared.inbox.lock();
            self.shared.stop.store(true, Ordering::SeqCst);
            std::mem::take(&mut *inbox)
        };
        drop(pending);
        self.shared.notifier.notify();
        if thread::current().id() == self.thread_id {
            return;
        }
        let handle = self.thread.lock().take();
        if let Some(handle) = handle {
            if handle.join().is_err() {
                log::error!("{ASYNC_HANDLER_THREAD_NAME} thread ended with a panic");
            }
        }
    }
}

impl Drop for AsyncHandlerThread {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for AsyncHandlerThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncHandlerThread")
            .field("thread", &self.thread_id)
            .field("stopped", &self.shared.stop.load(Ordering::Relaxed))
            .finish()
    }
}

/// Removes `watches[i]` and unregisters the thread's notifier from its signal.
fn drop_watch(watches: &mut Vec<Watch>, i: usize, notifier: &Arc<Notifier>) {
    let w = watches.swap_remove(i);
    w.signal.remove_observer(notifier);
}

/// Body of the handler thread.
fn handler_loop(shared: &Shared) {
    let notifier = &shared.notifier;
    let stopping = || shared.stop.load(Ordering::SeqCst);
    let mut watches: Vec<Watch> = Vec::new();
    'outer: loop {
        // Read the epoch before looking at anything: a change after this
        // point makes the final sleep return at once.
        let seen = notifier.epoch();
        if stopping() {
            break;
        }
        let Inbox {
            watches: new_watches,
            functions,
        } = std::mem::take(&mut *shared.inbox.lock());
        for w in new_watches {
            w.signal.add_observer(notifier);
            watches.push(w);
        }

        let mut ran = false;
        for f in functions {
            if stopping() {
                break 'outer;
            }
            ran = true;
            if catch_unwind(AssertUnwindSafe(f)).is_err() {
                log::error!("an async function panicked; the handler thread goes on");
            }
        }

        let mut i = 0;
        while i < watches.len() {
            if stopping() {
                break 'outer;
            }
            let w = &mut watches[i];
            if w.signal.is_destroyed() {
                drop_watch(&mut watches, i, notifier);
                continue;
            }
            let v = w.signal.load(MemoryOrder::Acquire);
            if !w.cond.holds(v, w.value) {
                i += 1;
                continue;
            }
            ran = true;
            let handler = &mut w.handler;
            let keep = match catch_unwind(AssertUnwindSafe(|| handler(v))) {
                Ok(keep) => keep,
                Err(_) => {
                    log::error!("an async signal handler panicked; it is unregistered");
                    false
                }
            };
            if keep {
                i += 1;
            } else {
                drop_watch(&mut watches, i, notifier);
            }
        }

        if !ran {
            notifier.wait(seen, None);
        }
    }
    for w in &watches {
        w.signal.remove_observer(notifier);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn condition_raw_values_follow_hsa_h() {
        // hsa.h: EQ 0, NE 1, LT 2, GTE 3.
        assert_eq!(Condition::from_raw(0), Some(Condition::Eq));
        assert_eq!(Condition::from_raw(1), Some(Condition::Ne));
        assert_eq!(Condition::from_raw(2), Some(Condition::Lt));
        assert_eq!(Condition::from_raw(3), Some(Condition::Gte));
        assert_eq!(Condition::from_raw(4), None);
        assert_eq!(Condition::from_raw(u32::MAX), None);
    }

    #[test]
    fn condition_semantics_are_signed() {
        assert!(Condition::Eq.holds(5, 5) && !Condition::Eq.holds(5, 6));
        assert!(Condition::Ne.holds(5, 6) && !Condition::Ne.holds(5, 5));
        assert!(Condition::Lt.holds(-1, 0) && !Condition::Lt.holds(0, 0));
        assert!(Condition::Gte.holds(0, 0) && !Condition::Gte.holds(-1, 0));
        assert!(Condition::Lt.holds(i64::MIN, i64::MAX));
    }

    #[test]
    fn block_matches_amd_signal_t() {
        // Offsets from amd_hsa_signal.h, measured with clang-16 offsetof.
        let s = Signal::new(-42);
        let addr = s.amd_signal_address();
        assert_eq!(addr % 64, 0);
        assert_ne!(addr, 0);
        s.set_dispatch_times(111, 222);
        let p = addr as usize as *const u8;
        // SAFETY: `addr` is the address of the live 64-byte block owned by `s`;
        // the reads are aligned 8-byte loads inside it while no thread writes.
        let (kind, value, start, end, queue) = unsafe {
            (
                p.cast::<i64>().read_volatile(),
                p.add(8).cast::<i64>().read_volatile(),
                p.add(32).cast::<u64>().read_volatile(),
                p.add(40).cast::<u64>().read_volatile(),
                p.add(48).cast::<u64>().read_volatile(),
            )
        };
        assert_eq!(kind, 1);
        assert_eq!(value, -42);
        assert_eq!((start, end), (111, 222));
        assert_eq!(queue, 0);
        assert_eq!(s.dispatch_times(), (111, 222));
    }

    #[test]
    fn value_operations_compute_like_the_host() {
        let s = Signal::new(0b1100);
        s.and(0b1010, MemoryOrder::AcqRel);
        assert_eq!(s.load(MemoryOrder::Acquire), 0b1000);
        s.or(0b0011, MemoryOrder::Release);
        assert_eq!(s.load(MemoryOrder::Relaxed), 0b1011);
        s.xor(0b1111, MemoryOrder::Relaxed);
        assert_eq!(s.load(MemoryOrder::Relaxed), 0b0100);
        s.add(10, MemoryOrder::Relaxed);
        s.subtract(20, MemoryOrder::Release);
        assert_eq!(s.load(MemoryOrder::Relaxed), 4 + 10 - 20);
        assert_eq!(s.exchange(7, MemoryOrder::AcqRel), -6);
        assert_eq!(s.cas(8, 9, MemoryOrder::AcqRel), 7); // fails: 7 != 8
        assert_eq!(s.load(MemoryOrder::Relaxed), 7);
        assert_eq!(s.cas(7, 9, MemoryOrder::AcqRel), 7); // succeeds
        assert_eq!(s.load(MemoryOrder::Relaxed), 9);
        s.silent_store(i64::MAX, MemoryOrder::Relaxed);
        s.add(1, MemoryOrder::Relaxed);
        assert_eq!(s.load(MemoryOrder::Relaxed), i64::MIN);
    }

    #[test]
    fn waiter_counter_returns_to_zero() {
        let s = Signal::new(1);
        let s2 = Arc::clone(&s);
        let t = thread::spawn(move || s2.wait(Condition::Eq, 0, None, true));
        while s.waiters.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        s.store(0, MemoryOrder::Release);
        assert_eq!(t.join().unwrap(), 0);
        assert_eq!(s.waiters.load(Ordering::SeqCst), 0);
        // Timed-out waits leave no trace either.
        assert_eq!(
            s.wait(Condition::Eq, 5, Some(Duration::from_millis(2)), true),
            0
        );
        assert_eq!(s.waiters.load(Ordering::SeqCst), 0);
        assert_eq!(s.observer_count.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn changes_nobody_waits_for_skip_the_wake() {
        let s = Signal::new(0);
        s.store(1, MemoryOrder::Release);
        s.add(1, MemoryOrder::AcqRel);
        assert_eq!(s.wake.epoch(), 0, "woke with no waiter");
        // With a (fake) announced waiter every change bumps the epoch.
        s.waiters.fetch_add(1, Ordering::SeqCst);
        s.store(1, MemoryOrder::Release);
        s.xor(1, MemoryOrder::Relaxed);
        assert_eq!(s.wake.epoch(), 2);
        s.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    #[test]
    fn observers_are_notified_and_removed() {
        let s = Signal::new(0);
        let n = Notifier::new();
        s.add_observer(&n);
        s.add_observer(&n);
        let e = n.epoch();
        s.add(1, MemoryOrder::Relaxed);
        // Two registrations: two notifications.
        assert_eq!(n.epoch(), e.wrapping_add(2));
        s.remove_observer(&n);
        s.remove_observer(&n);
        s.remove_observer(&n); // not registered any more: no-op
        let e = n.epoch();
        s.add(1, MemoryOrder::Relaxed);
        assert_eq!(n.epoch(), e);
        assert_eq!(s.observer_count.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn failed_cas_does_not_notify() {
        let s = Signal::new(3);
        let n = Notifier::new();
        s.add_observer(&n);
        let e = n.epoch();
        assert_eq!(s.cas(4, 5, MemoryOrder::AcqRel), 3);
        assert_eq!(n.epoch(), e);
        assert_eq!(s.cas(3, 5, MemoryOrder::AcqRel), 3);
        assert_ne!(n.epoch(), e);
        s.remove_observer(&n);
    }

    #[test]
    fn notifier_wait_returns_on_notify_from_another_thread() {
        let n = Notifier::new();
        let n2 = Arc::clone(&n);
        let e = n.epoch();
        let woke = Arc::new(AtomicUsize::new(0));
        let woke2 = Arc::clone(&woke);
        let t = thread::spawn(move || {
            n2.wait(e, None);
            woke2.store(1, Ordering::SeqCst);
        });
        thread::sleep(Duration::from_millis(20));
        assert_eq!(woke.load(Ordering::SeqCst), 0, "woke without a notify");
        n.notify();
        t.join().unwrap();
        assert_eq!(woke.load(Ordering::SeqCst), 1);
        // A stale epoch returns at once; a timed wait returns after its timeout.
        n.wait(e, None);
        let t0 = Instant::now();
        n.wait(n.epoch(), Some(Duration::from_millis(10)));
        assert!(t0.elapsed() >= Duration::from_millis(10));
    }

    /// CPU time consumed so far by the calling thread (Linux schedstat, ns).
    fn thread_cpu_ns() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        stat.split_whitespace().next().unwrap().parse().unwrap()
    }

    #[test]
    fn waits_sleep_instead_of_spinning() {
        // A 150 ms wait that never succeeds must cost far less than 150 ms of
        // CPU, for both wait states and for wait_any; a spinning or yielding
        // implementation would burn close to the whole interval.
        let s = Signal::new(1);
        let wait = Duration::from_millis(150);
        for blocked in [true, false] {
            let c0 = thread_cpu_ns();
            assert_eq!(s.wait(Condition::Eq, 0, Some(wait), blocked), 1);
            let used = Duration::from_nanos(thread_cpu_ns() - c0);
            println!("wait(blocked={blocked}) for {wait:?} used {used:?} of CPU");
            assert!(used < Duration::from_millis(30), "{used:?}");
            let c0 = thread_cpu_ns();
            let sigs = [Arc::clone(&s)];
            assert_eq!(
                wait_any(&sigs, &[Condition::Eq], &[0], Some(wait), blocked),
                None
            );
            let used = Duration::from_nanos(thread_cpu_ns() - c0);
            assert!(used < Duration::from_millis(30), "{used:?}");
        }
    }

    #[test]
    fn handler_thread_drops_watches_of_destroyed_signals() {
        let t = AsyncHandlerThread::start().unwrap();
        let s = Signal::new(1);
        let called = Arc::new(AtomicUsize::new(0));
        let c2 = Arc::clone(&called);
        t.register(
            Arc::clone(&s),
            Condition::Eq,
            0,
            Box::new(move |_| {
                c2.fetch_add(1, Ordering::SeqCst);
                true
            }),
        );
        // Wait until the thread observes the signal, then destroy it.
        while s.observer_count.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        s.mark_destroyed();
        while s.observer_count.load(Ordering::SeqCst) != 0 || Arc::strong_count(&s) != 1 {
            thread::yield_now();
        }
        s.store(0, MemoryOrder::Release);
        thread::sleep(Duration::from_millis(10));
        assert_eq!(called.load(Ordering::SeqCst), 0);
    }
}
