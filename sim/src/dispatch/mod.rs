//! Kernel dispatch: runs one AQL kernel dispatch on the ISA engine.
//!
//! For every workgroup of the grid (ceil(grid / workgroup) per dimension, the last
//! one partial), the dispatcher builds each wave's initial state from the kernel
//! descriptor as AMDGPUUsage "Initial Kernel Execution State" gives it for gfx90a,
//! gives the workgroup a zero-filled LDS and each wave a scratch slice, and runs the
//! waves of the workgroup cooperatively on one host thread, meeting at `s_barrier`.
//! Workgroups are handed out in id order to the calling thread plus helpers from a
//! persistent pool (a one-workgroup dispatch never leaves the calling thread). The
//! first fault stops the dispatch: no further workgroup starts and running waves
//! stop at their next backward branch or barrier.
//!
//! One job per module:
//! - this module: the request ([`DispatchRequest`]) and the [`Dispatcher`] that
//!   ties the others together;
//! - `error`: [`DispatchError`] and its HSA status;
//! - [`settings`]: the instruction budget and trace filter ([`DispatchSettings`]),
//!   read from the environment by [`crate::config::Config`];
//! - `pool`: the helper threads;
//! - `programs`: decoded programs cached per code region, so repeated dispatches
//!   of a kernel decode nothing;
//! - `wave_setup`: the ABI initial state of a wave (SGPRs, v0, EXEC, MODE, PC,
//!   scratch layout);
//! - `job`: one dispatch in flight (checks, workgroup resources, running the waves).
//!
//! The runtime owns one [`Dispatcher`], built from its `Config` at `hsa_init` and
//! shut down (helpers joined) by the last `hsa_shut_down`
//! ([`crate::runtime::Runtime::dispatcher`]).

mod crew;
mod error;
mod job;
mod pool;
mod programs;
mod request;
pub mod settings;
mod wave_setup;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use isa::GlobalMemory;

pub use error::{DispatchError, FaultSite, PrivateOverflow};
pub use job::DispatchCounts;
pub use request::DispatchRequest;
pub use settings::{DispatchSettings, TraceFilter, DEFAULT_MAX_WAVE_INSTRUCTIONS};

use job::{Job, WorkerStates};
use pool::WorkerPool;
use programs::ProgramCache;

/// A kernel dispatcher: a pool of helper threads (grown on demand, kept for later
/// dispatches), a cache of decoded programs and reusable per-worker state (waves,
/// LDS buffer, scratch backing). Dropping it joins its helpers.
#[derive(Default)]
pub struct Dispatcher {
    settings: DispatchSettings,
    programs: Arc<ProgramCache>,
    states: Arc<WorkerStates>,
    pool: WorkerPool,
}

impl Dispatcher {
    /// A dispatcher with the default settings and no helper threads yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A dispatcher with `settings` and no helper threads yet.
    pub fn with_settings(settings: DispatchSettings) -> Self {
        Dispatcher {
            settings,
            ..Self::default()
        }
    }

    /// Runs `req` to completion on up to `workers` host threads (workgroups
    /// distributed over them); returns when every wave has ended or at the first
    /// fault (remaining workgroups are not started; running ones stop).
    ///
    /// # Errors
    /// See [`DispatchError`].
    pub fn dispatch(
        &self,
        req: &DispatchRequest,
        memory: &Arc<dyn GlobalMemory>,
        workers: usize,
    ) -> Result<(), DispatchError> {
        self.dispatch_counted(req, memory, workers).map(|_| ())
    }

    /// As [`Dispatcher::dispatch`], returning the wave-instructions the dispatch
    /// executed ([`DispatchCounts`]).
    ///
    /// # Errors
    /// See [`DispatchError`].
    pub fn dispatch_counted(
        &self,
        req: &DispatchRequest,
        memory: &Arc<dyn GlobalMemory>,
        workers: usize,
    ) -> Result<DispatchCounts, DispatchError> {
        self.dispatch_cancellable(req, memory, workers, &Arc::new(AtomicBool::new(false)))
    }

    /// As [`Dispatcher::dispatch_counted`]; raising `cancel` (from any thread) stops
    /// the dispatch: every wave stops at its next backward branch or barrier, no
    /// workgroup starts, and the dispatch returns [`DispatchError::Fault`] with
    /// `Fault::Aborted` ([`DispatchError::is_abort`]). `cancel` must be this
    /// dispatch's own flag (the dispatch raises it too, at its first fault).
    ///
    /// # Errors
    /// See [`DispatchError`].
    pub fn dispatch_cancellable(
        &self,
        req: &DispatchRequest,
        memory: &Arc<dyn GlobalMemory>,
        workers: usize,
        cancel: &Arc<AtomicBool>,
    ) -> Result<DispatchCounts, DispatchError> {
        let job = Arc::new(Job::prepare(
            req,
            memory,
            &self.programs,
            &self.settings,
            self.states.clone(),
            workers,
            cancel.clone(),
        )?);
        let total = job.total_workgroups();
        if total == 0 {
            return Ok(DispatchCounts::default());
        }
        let helpers = workers
            .max(1)
            .min(usize::try_from(total).unwrap_or(usize::MAX))
            - 1;
        self.pool.run(&job, helpers);
        job.finish()
    }

    /// Stops and joins the helper threads; later dispatches run on their calling
    /// thread alone. Also done on drop.
    pub fn shutdown(&self) {
        self.pool.shutdown();
    }
}
