//! The dispatcher's worker pool: persistent helper threads that join the
//! calling thread in running the workgroups of a dispatch.
//!
//! This module owns the threads and their life: helpers are spawned on demand
//! (up to the helpers a dispatch asks for), wait for a job between
//! dispatches, take one helper slot of the posted job each, and leave when the
//! job has no workgroup left. One job uses the pool at a time; a dispatch that
//! finds the pool busy runs on its calling thread alone. [`WorkerPool::shutdown`]
//! (also run on drop) stops every helper and joins it.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::job::Job;

/// Name of the helper threads.
const THREAD_NAME: &str = "hsa-sim-worker";

/// Helper threads, shared between dispatches.
#[derive(Default)]
pub(super) struct WorkerPool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<PoolState>,
    cv: Condvar,
}

#[derive(Default)]
struct PoolState {
    /// The job helpers should join, with the number of helper slots left.
    job: Option<(Arc<Job>, usize)>,
    helpers: usize,
    idle: usize,
    /// Set by [`WorkerPool::shutdown`]: helpers exit, none is spawned.
    shutdown: bool,
}

impl WorkerPool {
    /// Runs `job` on the calling thread and up to `helpers` pool threads;
    /// returns once no thread works on it any more.
    pub(super) fn run(&self, job: &Arc<Job>, helpers: usize) {
        if helpers > 0 {
            self.post(job, helpers);
        }
        job.work();
        if helpers > 0 {
            self.retract(job);
            job.crew().wait();
        }
    }

    /// Offers `job` to up to `helpers` pool threads, spawning threads as needed.
    fn post(&self, job: &Arc<Job>, helpers: usize) {
        let Ok(mut pool) = self.shared.state.lock() else {
            return;
        };
        if pool.job.is_some() || pool.shutdown {
            // Another dispatch is using the pool (or it is gone): this one runs
            // on the caller alone.
            return;
        }
        pool.job = Some((job.clone(), helpers));
        while pool.helpers < helpers {
            let shared = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name(THREAD_NAME.into())
                .spawn(move || {
                    crate::reset_host_fp_env();
                    helper_loop(&shared)
                });
            let Ok(handle) = spawned else {
                break;
            };
            if let Ok(mut threads) = self.threads.lock() {
                threads.push(handle);
            }
            pool.helpers += 1;
            pool.idle += 1;
        }
        drop(pool);
        self.shared.cv.notify_all();
    }

    /// Withdraws `job` from the pool so no more helpers join it.
    fn retract(&self, job: &Arc<Job>) {
        if let Ok(mut pool) = self.shared.state.lock() {
            if pool.job.as_ref().is_some_and(|(j, _)| Arc::ptr_eq(j, job)) {
                pool.job = None;
            }
        }
    }

    /// Stops every helper (after the job it is working on, if any) and joins
    /// it. Later dispatches run on their calling thread alone.
    pub(super) fn shutdown(&self) {
        if let Ok(mut pool) = self.shared.state.lock() {
            pool.shutdown = true;
            pool.job = None;
        }
        self.shared.cv.notify_all();
        let threads = match self.threads.lock() {
            Ok(mut t) => std::mem::take(&mut *t),
            Err(_) => return,
        };
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me && t.join().is_err() {
                log::error!("a dispatch worker thread panicked");
            }
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Body of a helper thread: take a slot of the posted job, work, repeat.
fn helper_loop(shared: &Shared) {
    loop {
        let job = {
            let Ok(mut pool) = shared.state.lock() else {
                return;
            };
            loop {
                if pool.shutdown {
                    return;
                }
                if let Some((job, slots)) = pool.job.as_mut() {
                    if *slots > 0 {
                        *slots -= 1;
                        let j = job.clone();
                        if *slots == 0 {
                            pool.job = None;
                        }
                        pool.idle -= 1;
                        j.crew().joined();
                        break j;
                    }
                }
                pool = match shared.cv.wait(pool) {
                    Ok(p) => p,
                    Err(_) => return,
                };
            }
        };
        job.work();
        job.crew().left();
        if let Ok(mut pool) = shared.state.lock() {
            pool.idle += 1;
        }
    }
}
