//! The helper threads working on one job ([`Crew`]): the job waits for all of them
//! to leave before it reports.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// The helpers currently working on one job.
#[derive(Default)]
pub(super) struct Crew {
    active: AtomicUsize,
    done: (Mutex<()>, Condvar),
}

impl Crew {
    pub(super) fn joined(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn left(&self) {
        let (lock, cv) = &self.done;
        let _g = lock.lock();
        self.active.fetch_sub(1, Ordering::SeqCst);
        cv.notify_all();
    }

    /// Blocks until every helper that joined has left.
    pub(super) fn wait(&self) {
        let (lock, cv) = &self.done;
        let Ok(mut g) = lock.lock() else { return };
        while self.active.load(Ordering::SeqCst) > 0 {
            g = match cv.wait(g) {
                Ok(g) => g,
                Err(_) => return,
            };
        }
    }
}
