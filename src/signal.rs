//! HSA completion signals and the per-device pool that recycles them.
//!
//! A [`Signal`] is handed around as `Arc<Signal>`: the `Arc`'s count is the
//! signal's use count (LLVM's `increaseUseCount` / `decreaseUseCount`). The
//! stream slot that produced it holds one reference; an event, or another
//! stream waiting on it, holds another. When the last reference goes the
//! handle returns to its pool, ready for the next operation.
//!
//! Convention (as LLVM's nextgen plugin): an operation's signal starts at 1;
//! the runtime (copy engine, packet processor) or our host step subtracts 1
//! when the operation is done, so 0 means complete. A negative value means the
//! operation failed (the runtime's convention for copies, and ours for host
//! steps that could not run).

use crate::hsa::{Hsa, HsaResult};
use hsa_sys::{hsa_signal_t, hsa_signal_value_t};
use parking_lot::Mutex;
use std::sync::Arc;

/// The free list of a [`SignalPool`], shared with the signals it lent.
#[derive(Debug)]
struct PoolInner {
    hsa: Hsa,
    free: Mutex<Vec<hsa_signal_t>>,
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        for sig in self.free.get_mut().drain(..) {
            if let Err(e) = self.hsa.signal_destroy(sig) {
                log::debug!("while releasing a pooled signal: {e}");
            }
        }
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
            }),
        })
    }

    /// A signal reset to 1 (pending), reused from the pool or newly created.
    ///
    /// Errors: the failing `hsa_amd_signal_create`.
    pub fn get(&self) -> HsaResult<Arc<Signal>> {
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
            pool: self.inner.clone(),
        }))
    }

    /// Number of idle signals (for tests and debugging).
    pub fn idle(&self) -> usize {
        self.inner.free.lock().len()
    }
}

/// One HSA signal lent by a [`SignalPool`]; returns there when dropped.
#[derive(Debug)]
pub struct Signal {
    handle: hsa_signal_t,
    pool: Arc<PoolInner>,
}

impl Signal {
    /// The raw handle, for packets and HSA calls.
    pub fn raw(&self) -> hsa_signal_t {
        self.handle
    }

    /// Current value (`hsa_signal_load_scacquire`).
    pub fn load(&self) -> hsa_signal_value_t {
        self.pool.hsa.signal_load(self.handle)
    }

    /// Whether the operation behind the signal is over, successfully or
    /// not (value ≤ 0).
    pub fn is_done(&self) -> bool {
        self.load() < 1
    }

    /// Whether the operation completed successfully (value exactly 0). Only
    /// such a signal may be dropped from a dependency list: a failed one
    /// (negative) must stay, so the failure reaches the operations after it.
    pub fn is_complete(&self) -> bool {
        self.load() == 0
    }

    /// Blocks until the value drops below 1 and returns it (0: success,
    /// negative: the operation failed).
    pub fn wait(&self) -> hsa_signal_value_t {
        self.pool.hsa.signal_wait_done(self.handle)
    }

    /// Marks the operation complete (subtracts 1, release ordering).
    pub fn complete(&self) {
        self.pool.hsa.signal_subtract(self.handle, 1);
    }

    /// Marks the operation failed (stores -1, release ordering).
    pub fn fail(&self) {
        self.pool.hsa.signal_store(self.handle, -1);
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        self.pool.free.lock().push(self.handle);
    }
}
