//! The copy engine of a GPU agent: executes `hsa_amd_memory_async_copy`
//! requests on a thread of its own (`hsa/hsa_ext_amd.h`).
//!
//! Requests wait in arrival order. The engine runs the first one whose
//! dependency signals have all been observed at 0, so a copy that waits for a
//! dependency never holds up one that is ready. A dependency observed at 0
//! stays satisfied even if the signal changes later. When a copy is done the
//! engine subtracts 1 from its completion signal with release ordering; a
//! dependency that goes negative fails the copy, which then stores -1 into
//! the completion signal (ROCr stores a negative value on failure). So does a
//! copy whose locked host memory the program unmapped or protected after
//! submitting it: such copies go through the kernel's checked copy
//! ([`crate::host_memory::checked`]), so the process is never hit by a signal.

use crate::memory::Resolved;
use crate::signal::{MemoryOrder, Notifier, Signal};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// One accepted copy request.
pub struct CopyJob {
    /// Destination (device = host address), inside `dst_region`.
    pub dst: u64,
    /// Source, inside `src_region`.
    pub src: u64,
    /// Bytes to copy.
    pub size: u64,
    /// Keeps the memory the copy touches alive until it is done (none for a job
    /// that copies nothing: an SVM prefetch, which only orders and signals).
    pub regions: Vec<Resolved>,
    /// Signals that must be observed at 0 first.
    pub deps: Vec<Arc<Signal>>,
    /// Decremented when the copy is done.
    pub completion: Arc<Signal>,
}

struct Pending {
    job: CopyJob,
    satisfied: Vec<bool>,
}

struct Shared {
    jobs: Mutex<Vec<Pending>>,
    notifier: Arc<Notifier>,
    stop: AtomicBool,
}

/// A GPU agent's copy engine thread.
pub struct CopyEngine {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl CopyEngine {
    /// Starts the engine thread of agent `agent`.
    ///
    /// Errors: the OS refused to create the thread.
    pub fn start(agent: usize) -> std::io::Result<CopyEngine> {
        let shared = Arc::new(Shared {
            jobs: Mutex::new(Vec::new()),
            notifier: Notifier::new(),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("hsa-copy-engine-{agent}"))
            .spawn(move || engine_loop(&s))?;
        Ok(CopyEngine {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues `job`; it runs once its dependencies are satisfied.
    pub fn submit(&self, job: CopyJob) {
        for d in &job.deps {
            d.add_observer(&self.shared.notifier);
        }
        let satisfied = vec![false; job.deps.len()];
        self.shared.jobs.lock().push(Pending { job, satisfied });
        self.shared.notifier.notify();
    }

    /// Stops the engine; queued copies are dropped without signalling.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.notifier.notify();
        if let Some(t) = self.thread.lock().take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        for p in self.shared.jobs.lock().drain(..) {
            for d in &p.job.deps {
                d.remove_observer(&self.shared.notifier);
            }
        }
    }
}

impl Drop for CopyEngine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

enum Next {
    Run(CopyJob),
    Fail(CopyJob),
    Idle,
}

fn take_ready(shared: &Shared) -> Next {
    let mut jobs = shared.jobs.lock();
    for i in 0..jobs.len() {
        let p = &mut jobs[i];
        let mut all = true;
        let mut failed = false;
        for (k, d) in p.job.deps.iter().enumerate() {
            if p.satisfied[k] {
                continue;
            }
            let v = d.load(MemoryOrder::Acquire);
            if v == 0 || d.is_destroyed() {
                p.satisfied[k] = true;
            } else if v < 0 {
                failed = true;
            } else {
                all = false;
            }
        }
        if failed {
            return Next::Fail(jobs.remove(i).job);
        }
        if all {
            return Next::Run(jobs.remove(i).job);
        }
    }
    Next::Idle
}

/// Copies the bytes of `job`. Runtime allocations stay mapped while the job holds
/// them, so they are copied directly; a locked range is the program's memory,
/// which it may free or protect while the copy waits, so a copy touching one goes
/// through [`host_copy::copy`] and fails instead of faulting.
///
/// # Errors
/// The first byte of a locked range that could not be read or written.
fn run_copy(job: &CopyJob) -> Result<(), host_copy::Unreachable> {
    if job.size == 0 {
        return Ok(());
    }
    if job.regions.iter().any(|r| matches!(r, Resolved::Locked(_))) {
        return host_copy::copy(job.dst, job.src, job.size as usize);
    }
    // SAFETY: at submission both ranges were checked to lie wholly inside runtime
    // allocations, which stay mapped while the job holds them; `copy` tolerates
    // overlap.
    unsafe {
        std::ptr::copy(job.src as *const u8, job.dst as *mut u8, job.size as usize);
    }
    Ok(())
}

fn engine_loop(shared: &Shared) {
    loop {
        let epoch = shared.notifier.epoch();
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        match take_ready(shared) {
            Next::Run(job) => {
                let copied = run_copy(&job);
                std::sync::atomic::fence(Ordering::Release);
                for d in &job.deps {
                    d.remove_observer(&shared.notifier);
                }
                match copied {
                    Ok(()) => job.completion.subtract(1, MemoryOrder::Release),
                    Err(e) => {
                        log::error!(
                            "async copy of {} bytes {:#x} -> {:#x} failed: {e}",
                            job.size,
                            job.src,
                            job.dst
                        );
                        job.completion.store(-1, MemoryOrder::Release);
                    }
                }
            }
            Next::Fail(job) => {
                log::error!(
                    "async copy of {} bytes {:#x} -> {:#x} failed: a dependency signal went negative",
                    job.size,
                    job.src,
                    job.dst
                );
                for d in &job.deps {
                    d.remove_observer(&shared.notifier);
                }
                job.completion.store(-1, MemoryOrder::Release);
            }
            Next::Idle => shared.notifier.wait(epoch, None),
        }
    }
}
