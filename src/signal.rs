//! HSA completion signals and the per-device pool that recycles them.
//!
//! A [`Signal`] is handed around as `Arc<Signal>`: the `Arc`'s count is the
//! signal's use count (LLVM's `increaseUseCount` / `decreaseUseCount`). The
//! stream slot that produced it holds one reference; an event, or another
//! stream waiting on it, holds another. When the last reference goes the
//! handle returns to its pool, ready for the next operation. Holders that
//! know they may be the last (a completing stream, a queue forgetting a
//! finished packet) give the `Arc` back with [`SignalPool::recycle`] instead,
//! so the next operation reuses it without an allocation.
//!
//! Convention (as LLVM's nextgen plugin): an operation's signal starts at 1;
//! the runtime (copy engine, packet processor) or our host step subtracts 1
//! when the operation is done, so 0 means complete. A negative value means the
//! operation failed (the runtime's convention for copies, and ours for host
//! steps that could not run).

use hsa::{Hsa, HsaResult};
use hsa_sys::{hsa_signal_t, hsa_signal_value_t};
use parking_lot::Mutex;
use std::sync::{Arc, Weak};

/// The free lists of a [`SignalPool`]. Signals point back to it weakly, so
/// that idle `Arc<Signal>`s kept here make no reference cycle.
#[derive(Debug)]
struct PoolInner {
    hsa: Hsa,
    /// Idle handles (their `Arc` was freed).
    free: Mutex<Vec<hsa_signal_t>>,
    /// Idle signals with their `Arc` allocation, reused as they are (no
    /// allocation per operation); see [`SignalPool::recycle`].
    spare: Mutex<Vec<Arc<Signal>>>,
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        for sig in self.free.get_mut().drain(..) {
            if let Err(e) = self.hsa.signal_destroy(sig) {
                log::debug!("while releasing a pooled signal: {e}");
            }
        }
        // Each spare signal finds its pool gone and destroys its handle.
        self.spare.get_mut().clear();
    }
}

/// A pool of HSA signals (LLVM's signal manager). Cloning shares the pool.
#[derive(Clone, Debug)]
pub struct SignalPool {
    inner: Arc<PoolInner>,
}

impl SignalPool {
    /// Creates a pool holding `initial` signals up front
    /// (`LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS`, default 64).
    ///
    /// Errors: the failing `hsa_amd_signal_create`.
    pub fn new(hsa: &Hsa, initial: usize) -> HsaResult<SignalPool> {
        let mut free = Vec::with_capacity(initial);
        for _ in 0..initial {
            free.push(hsa.signal_create(1)?);
        }
        Ok(SignalPool {
            inner: Arc::new(PoolInner {
                hsa: hsa.clone(),
                free: Mutex::new(free),
                spare: Mutex::new(Vec::new()),
            }),
        })
    }

    /// A signal reset to 1 (pending), reused from the pool or newly created.
    ///
    /// Errors: the failing `hsa_amd_signal_create`.
    #[inline]
    pub fn get(&self) -> HsaResult<Arc<Signal>> {
        let spare = self.inner.spare.lock().pop();
        if let Some(sig) = spare {
            self.inner.hsa.signal_store(sig.handle, 1);
            return Ok(sig);
        }
        let recycled = self.inner.free.lock().pop();
        let handle = match recycled {
            Some(h) => {
                self.inner.hsa.signal_store(h, 1);
                h
            }
            None => self.inner.hsa.signal_create(1)?,
        };
        Ok(Arc::new(Signal {
            handle,
            hsa: self.inner.hsa.clone(),
            pool: Arc::downgrade(&self.inner),
        }))
    }

    /// Gives back a reference to a signal of this pool: when it is the last
    /// one, the signal returns to the pool with its `Arc` allocation (else it
    /// is just dropped; the last holder's drop returns the handle).
    #[inline]
    pub fn recycle(&self, sig: Arc<Signal>) {
        recycle_into(&self.inner, sig);
    }

    /// Number of idle signals (for tests and debugging).
    pub fn idle(&self) -> usize {
        self.inner.free.lock().len() + self.inner.spare.lock().len()
    }
}

/// [`SignalPool::recycle`] into `pool`.
#[inline]
fn recycle_into(pool: &PoolInner, sig: Arc<Signal>) {
    // The count cannot grow under us: only holders clone, and we are the
    // only one when it is 1 (no `Weak` to signals exists).
    if Arc::strong_count(&sig) == 1 {
        pool.spare.lock().push(sig);
    }
}

/// One HSA signal lent by a [`SignalPool`]; returns there when dropped.
#[derive(Debug)]
pub struct Signal {
    handle: hsa_signal_t,
    hsa: Hsa,
    pool: Weak<PoolInner>,
}

impl Signal {
    /// The raw handle, for packets and HSA calls.
    pub fn raw(&self) -> hsa_signal_t {
        self.handle
    }

    /// Current value (`hsa_signal_load_scacquire`).
    pub fn load(&self) -> hsa_signal_value_t {
        self.hsa.signal_load(self.handle)
    }

    /// Whether the operation behind the signal has ended, successfully or
    /// not (value < 1; see [`Signal::succeeded`] for success only).
    pub fn has_ended(&self) -> bool {
        self.load() < 1
    }

    /// Whether the operation ended successfully (value exactly 0). Only
    /// such a signal may be dropped from a dependency list: a failed one
    /// (negative) must stay, so the failure reaches the operations after it.
    pub fn succeeded(&self) -> bool {
        self.load() == 0
    }

    /// Blocks until the value drops below 1 and returns it (0: success,
    /// negative: the operation failed).
    pub fn wait(&self) -> hsa_signal_value_t {
        self.hsa.signal_wait_done(self.handle)
    }

    /// Waits until the value drops below 1 or `deadline` passes; returns
    /// the value (0: success, negative: failure), or `None` at the
    /// deadline. For process teardown, where a wait must be bounded: it
    /// polls `hsa_signal_load_scacquire` with growing pauses (up to 10 ms)
    /// rather than blocking in the runtime without a way out.
    pub fn wait_until(&self, deadline: std::time::Instant) -> Option<hsa_signal_value_t> {
        let mut pause = std::time::Duration::from_micros(50);
        loop {
            let v = self.load();
            if v < 1 {
                return Some(v);
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return None;
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(std::time::Duration::from_millis(10));
        }
    }

    /// Marks the operation complete (subtracts 1, release ordering).
    pub fn complete(&self) {
        self.hsa.signal_subtract(self.handle, 1);
    }

    /// Marks the operation failed (stores -1, release ordering).
    pub fn fail(&self) {
        self.hsa.signal_store(self.handle, -1);
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        match self.pool.upgrade() {
            Some(pool) => pool.free.lock().push(self.handle),
            None => {
                if let Err(e) = self.hsa.signal_destroy(self.handle) {
                    log::debug!("while releasing a signal after its pool: {e}");
                }
            }
        }
    }
}
