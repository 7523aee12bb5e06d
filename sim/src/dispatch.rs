//! Kernel dispatch: runs one AQL kernel-dispatch packet on the ISA engine.
//!
//! For every workgroup of the grid (ceil(grid / workgroup) per dimension, the last
//! one partial), the dispatcher builds each wave's initial state from the kernel
//! descriptor exactly as the launch fact sheet section 9 gives it for gfx90a (user
//! SGPRs in order, then the system SGPRs from `s[USER_SGPR_COUNT]`, packed work-item
//! ids in v0, EXEC for partial waves, MODE from rsrc1, PC = descriptor + entry
//! offset), gives the workgroup a zero-filled LDS of `group_segment_size` bytes and
//! each wave a scratch slice (sections 11.3–11.4), and runs the waves of the
//! workgroup cooperatively on one host thread, meeting at `s_barrier`.
//!
//! Workgroups are handed out in id order to `workers` host threads: the calling
//! thread plus helpers from a persistent pool (a one-workgroup dispatch never leaves
//! the calling thread). The first fault stops the dispatch: no further workgroup
//! starts and running waves stop at their next backward branch or barrier.
//!
//! Decoded programs are cached per code region (keyed by its device base and
//! validated against the live region object), so repeated dispatches of a kernel
//! decode nothing. Within one dispatch, the memory regions a worker's waves found
//! stay in their region caches from one wave to the next (the kernarg segment, the
//! packet and the buffers are the same for all waves); the caches are emptied when
//! the worker leaves the dispatch, so no region outlives it there.
//!
//! Debugging: `HSA_SIM_TRACE=all` (or a comma-separated list of linear workgroup
//! ids) prints every instruction those workgroups execute to stderr (see
//! [`isa::set_trace`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use isa::memory::{read_dwords, HostRegion, MemoryRegion, SubRegion};
use isa::{Apertures, Fault, GlobalMemory, Program, Wave, WaveContext, WaveExit};

use crate::loader::KernelDescriptor;

/// `HSA_STATUS_ERROR` (generic failure).
const STATUS_ERROR: u32 = 0x1000;
/// `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
const STATUS_INVALID_ARGUMENT: u32 = 0x1001;
/// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
const STATUS_OUT_OF_RESOURCES: u32 = 0x1008;
/// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT`.
const STATUS_INVALID_CODE_OBJECT: u32 = 0x1010;
/// `HSA_STATUS_ERROR_EXCEPTION` (s_trap; launch sheet section 13).
const STATUS_EXCEPTION: u32 = 0x1016;
/// `HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION` (hsa_ext_amd.h).
const STATUS_ILLEGAL_INSTRUCTION: u32 = 42;
/// `HSA_STATUS_ERROR_MEMORY_FAULT` (hsa_ext_amd.h).
const STATUS_MEMORY_FAULT: u32 = 43;

/// Default per-wave instruction budget (`HSA_SIM_MAX_WAVE_INSTRUCTIONS` overrides it).
pub const DEFAULT_MAX_WAVE_INSTRUCTIONS: u64 = 10_000_000_000;
/// Instructions a wave may run before it yields to the other waves of its
/// workgroup at a backward branch (fair scheduling of spin loops).
const YIELD_SLICE: u64 = 20_000;
/// Largest workgroup (work-items).
const MAX_WORKGROUP: u64 = 1024;
/// Largest LDS allocation (gfx90a: 64 KiB per workgroup).
const MAX_LDS: u32 = 65536;

/// One kernel dispatch, from an AQL kernel-dispatch packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchRequest {
    /// Workgroup size in work-items per dimension (unused dimensions 1).
    pub workgroup_size: [u32; 3],
    /// Grid size in work-items per dimension (unused dimensions 1).
    pub grid_size: [u32; 3],
    /// Number of dimensions (1..=3).
    pub dimensions: u32,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// LDS bytes per workgroup (static + dynamic).
    pub group_segment_size: u32,
    /// Device address of the kernel descriptor.
    pub kernel_object: u64,
    /// Device address of the kernarg segment.
    pub kernarg_address: u64,
    /// Address of the AQL packet in the queue ring (Dispatch Ptr).
    pub packet_address: u64,
    /// Address of the queue's amd_queue_t (Queue Ptr).
    pub queue_address: u64,
    /// Dispatch id (the packet's queue index).
    pub dispatch_id: u64,
}

/// Where in the grid a fault happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSite {
    /// Workgroup id (x, y, z).
    pub workgroup: [u32; 3],
    /// Wave index inside the workgroup.
    pub wave: u32,
    /// Lane of a vector memory fault, if known.
    pub lane: Option<u32>,
}

/// Why a dispatch failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    /// A wave faulted.
    #[error("workgroup ({}, {}, {}) wave {}{}: {fault}", site.workgroup[0], site.workgroup[1], site.workgroup[2], site.wave, site.lane.map(|l| format!(" lane {l}")).unwrap_or_default())]
    Fault {
        /// The fault.
        fault: Fault,
        /// Where it happened.
        site: FaultSite,
    },
    /// The kernel object is not a readable kernel descriptor, or its entry point is
    /// not in memory.
    #[error("invalid kernel object at {address:#x}: {reason}")]
    InvalidKernelObject {
        /// The packet's kernel_object.
        address: u64,
        /// What is wrong.
        reason: String,
    },
    /// The request itself is malformed (zero sizes, too large a workgroup or LDS).
    #[error("invalid dispatch: {0}")]
    InvalidRequest(String),
    /// Host memory for scratch could not be provided.
    #[error("out of resources: {0}")]
    OutOfResources(String),
}

impl DispatchError {
    /// The HSA status to report for this error: `HSA_STATUS_ERROR_MEMORY_FAULT` (43)
    /// for memory faults, `HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION` (42) for illegal or
    /// unsupported instructions and bad PCs, `HSA_STATUS_ERROR_EXCEPTION` (0x1016) for
    /// `s_trap`, `HSA_STATUS_ERROR_INVALID_CODE_OBJECT` (0x1010) for a bad kernel
    /// object, `HSA_STATUS_ERROR_INVALID_ARGUMENT` for a malformed request,
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`, and `HSA_STATUS_ERROR` (0x1000) for the
    /// instruction budget.
    pub fn hsa_status(&self) -> u32 {
        match self {
            DispatchError::Fault { fault, .. } => match fault {
                Fault::Memory { .. }
                | Fault::MisalignedAtomic { .. }
                | Fault::LdsOutOfRange { .. } => STATUS_MEMORY_FAULT,
                Fault::Unsupported { .. } | Fault::Illegal(_) | Fault::BadPc { .. } => {
                    STATUS_ILLEGAL_INSTRUCTION
                }
                Fault::Trap { .. } => STATUS_EXCEPTION,
                Fault::InstructionLimit { .. } | Fault::Aborted { .. } => STATUS_ERROR,
            },
            DispatchError::InvalidKernelObject { .. } => STATUS_INVALID_CODE_OBJECT,
            DispatchError::InvalidRequest(_) => STATUS_INVALID_ARGUMENT,
            DispatchError::OutOfResources(_) => STATUS_OUT_OF_RESOURCES,
        }
    }

    /// The faulting device address of a memory fault (global address; LDS offset for
    /// LDS faults).
    pub fn fault_address(&self) -> Option<u64> {
        match self {
            DispatchError::Fault { fault, .. } => match fault {
                Fault::Memory { address, .. } | Fault::MisalignedAtomic { address, .. } => {
                    Some(*address)
                }
                Fault::LdsOutOfRange { offset, .. } => Some(*offset),
                _ => None,
            },
            _ => None,
        }
    }

    /// The fault and its site, for wave faults.
    pub fn fault(&self) -> Option<(&Fault, &FaultSite)> {
        match self {
            DispatchError::Fault { fault, site } => Some((fault, site)),
            _ => None,
        }
    }
}

/// Executes the dispatch to completion on `workers` host threads (workgroups
/// distributed over them); returns when every wave has ended or at the first fault
/// (remaining workgroups are not started; running ones stop).
///
/// Uses a process-wide [`Dispatcher`] (persistent helper threads, program cache).
///
/// # Errors
/// See [`DispatchError`].
pub fn run(
    req: &DispatchRequest,
    memory: &Arc<dyn GlobalMemory>,
    workers: usize,
) -> Result<(), DispatchError> {
    run_counted(req, memory, workers).map(|_| ())
}

/// As [`run`], returning the number of wave-instructions the dispatch executed (all
/// waves of all workgroups; for benchmarks and statistics).
///
/// # Errors
/// See [`DispatchError`].
pub fn run_counted(
    req: &DispatchRequest,
    memory: &Arc<dyn GlobalMemory>,
    workers: usize,
) -> Result<u64, DispatchError> {
    static GLOBAL: OnceLock<Dispatcher> = OnceLock::new();
    GLOBAL
        .get_or_init(Dispatcher::new)
        .dispatch_counted(req, memory, workers)
}

/// A kernel dispatcher: a pool of helper threads (grown on demand, kept for later
/// dispatches), a cache of decoded programs and reusable per-worker state (waves,
/// LDS buffer, scratch backing).
pub struct Dispatcher {
    inner: Arc<Inner>,
}

impl Default for Dispatcher {
    fn default() -> Self {
        Self::new()
    }
}

struct Inner {
    programs: Mutex<HashMap<u64, Arc<Program>>>,
    states: Mutex<Vec<WorkerState>>,
    pool: Mutex<PoolState>,
    pool_cv: Condvar,
    max_instructions: u64,
    trace: TraceFilter,
}

/// Which workgroups print an instruction trace (`HSA_SIM_TRACE`: unset = none, `all`,
/// or a comma-separated list of linear workgroup ids).
#[derive(Clone, Debug, Default)]
enum TraceFilter {
    #[default]
    Off,
    All,
    Workgroups(Vec<u64>),
}

impl TraceFilter {
    fn from_env() -> Self {
        match std::env::var("HSA_SIM_TRACE") {
            Err(_) => TraceFilter::Off,
            Ok(v) if v.trim() == "all" => TraceFilter::All,
            Ok(v) => {
                let ids: Vec<u64> = v.split(',').filter_map(|x| x.trim().parse().ok()).collect();
                if ids.is_empty() {
                    TraceFilter::Off
                } else {
                    TraceFilter::Workgroups(ids)
                }
            }
        }
    }

    fn traces(&self, linear: u64) -> bool {
        match self {
            TraceFilter::Off => false,
            TraceFilter::All => true,
            TraceFilter::Workgroups(ids) => ids.contains(&linear),
        }
    }
}

#[derive(Default)]
struct PoolState {
    /// The job helpers should join, with the number of helper slots left.
    job: Option<(Arc<Job>, usize)>,
    helpers: usize,
    idle: usize,
}

impl Dispatcher {
    /// A dispatcher with no helper threads yet. Reads `HSA_SIM_MAX_WAVE_INSTRUCTIONS`.
    pub fn new() -> Self {
        let max_instructions = std::env::var("HSA_SIM_MAX_WAVE_INSTRUCTIONS")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_MAX_WAVE_INSTRUCTIONS);
        Self::with_instruction_limit(max_instructions)
    }

    /// A dispatcher whose waves may each execute at most `max_instructions`.
    pub fn with_instruction_limit(max_instructions: u64) -> Self {
        Self {
            inner: Arc::new(Inner {
                programs: Mutex::new(HashMap::new()),
                states: Mutex::new(Vec::new()),
                pool: Mutex::new(PoolState::default()),
                pool_cv: Condvar::new(),
                max_instructions,
                trace: TraceFilter::from_env(),
            }),
        }
    }

    /// Runs `req` to completion on up to `workers` threads (see [`run`]).
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

    /// Runs `req` to completion (see [`run`]); returns the number of
    /// wave-instructions executed.
    ///
    /// # Errors
    /// See [`DispatchError`].
    pub fn dispatch_counted(
        &self,
        req: &DispatchRequest,
        memory: &Arc<dyn GlobalMemory>,
        workers: usize,
    ) -> Result<u64, DispatchError> {
        let job = Arc::new(self.prepare(req, memory)?);
        let total = job.total_workgroups;
        if total == 0 {
            return Ok(0);
        }
        let helpers = workers
            .max(1)
            .min(usize::try_from(total).unwrap_or(usize::MAX))
            - 1;
        if helpers > 0 {
            self.post(&job, helpers);
        }
        job.work(&self.inner);
        if helpers > 0 {
            self.retract(&job);
            job.wait_helpers();
        }
        let first = job.error.lock().map(|mut e| e.take()).unwrap_or(None);
        match first {
            Some(e) => Err(e),
            None => Ok(job.instructions.load(Ordering::Relaxed)),
        }
    }

    /// Offers `job` to up to `helpers` pool threads, spawning threads as needed.
    fn post(&self, job: &Arc<Job>, helpers: usize) {
        let Ok(mut pool) = self.inner.pool.lock() else {
            return;
        };
        if pool.job.is_some() {
            // Another dispatch is using the pool: this one runs on the caller alone.
            return;
        }
        pool.job = Some((job.clone(), helpers));
        while pool.helpers < helpers {
            let inner = self.inner.clone();
            let spawned = std::thread::Builder::new()
                .name("hsa-sim-worker".into())
                .spawn(move || {
                    crate::reset_host_fp_env();
                    helper_loop(&inner)
                });
            if spawned.is_err() {
                break;
            }
            pool.helpers += 1;
            pool.idle += 1;
        }
        drop(pool);
        self.inner.pool_cv.notify_all();
    }

    /// Withdraws `job` from the pool so no more helpers join it.
    fn retract(&self, job: &Arc<Job>) {
        if let Ok(mut pool) = self.inner.pool.lock() {
            if pool.job.as_ref().is_some_and(|(j, _)| Arc::ptr_eq(j, job)) {
                pool.job = None;
            }
        }
    }

    /// Reads the descriptor, finds (or decodes) the program and checks the request.
    fn prepare(
        &self,
        req: &DispatchRequest,
        memory: &Arc<dyn GlobalMemory>,
    ) -> Result<Job, DispatchError> {
        let bad_kd = |reason: String| DispatchError::InvalidKernelObject {
            address: req.kernel_object,
            reason,
        };
        if !(1..=3).contains(&req.dimensions) {
            return Err(DispatchError::InvalidRequest(format!(
                "dimensions {} not in 1..=3",
                req.dimensions
            )));
        }
        if req.workgroup_size.contains(&0) || req.grid_size.contains(&0) {
            return Err(DispatchError::InvalidRequest(format!(
                "zero workgroup or grid size (workgroup {:?}, grid {:?})",
                req.workgroup_size, req.grid_size
            )));
        }
        let wg_items: u64 = req.workgroup_size.iter().map(|&x| u64::from(x)).product();
        if wg_items > MAX_WORKGROUP {
            return Err(DispatchError::InvalidRequest(format!(
                "workgroup of {wg_items} work-items exceeds {MAX_WORKGROUP}"
            )));
        }
        if req.group_segment_size > MAX_LDS {
            return Err(DispatchError::InvalidRequest(format!(
                "group segment of {} bytes exceeds 64 KiB",
                req.group_segment_size
            )));
        }
        let mut kd_words = [0u32; 16];
        read_dwords(memory.as_ref(), req.kernel_object, &mut kd_words)
            .map_err(|e| bad_kd(format!("descriptor not readable: {e}")))?;
        let kd_bytes: Vec<u8> = kd_words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let kd = KernelDescriptor::parse(&kd_bytes).map_err(|e| bad_kd(e.to_string()))?;
        let entry = kd
            .entry_address(req.kernel_object)
            .ok_or_else(|| bad_kd("entry offset overflows".into()))?;
        let region = memory
            .region(entry)
            .ok_or_else(|| bad_kd(format!("entry point {entry:#x} is not in device memory")))?;
        let program = self.program_for(&region);
        let grid_wgs: [u32; 3] =
            std::array::from_fn(|d| req.grid_size[d].div_ceil(req.workgroup_size[d]));
        let total = grid_wgs.iter().map(|&n| u64::from(n)).product();
        let rsrc1 = kd.compute_pgm_rsrc1;
        let mode = ((rsrc1 >> 12) & 0xFF) | ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9;
        let unified = (kd.granulated_workitem_vgpr_count() as usize + 1) * 8;
        let accum = kd.accum_offset_vgprs() as usize;
        Ok(Job {
            req: req.clone(),
            memory: memory.clone(),
            _code: region,
            program,
            kd,
            entry,
            mode,
            vgprs: unified.min(256),
            agprs: unified.saturating_sub(accum).min(256),
            grid_wgs,
            total_workgroups: total,
            next: AtomicU64::new(0),
            instructions: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            error: Mutex::new(None),
            helpers_active: AtomicUsize::new(0),
            done: (Mutex::new(()), Condvar::new()),
            max_instructions: self.inner.max_instructions,
            trace: self.inner.trace.clone(),
        })
    }

    /// The cached program of `region`, or a new one (replacing a stale entry).
    fn program_for(&self, region: &Arc<dyn MemoryRegion>) -> Arc<Program> {
        let key = region.device_base();
        let Ok(mut map) = self.inner.programs.lock() else {
            return Arc::new(Program::new(region));
        };
        if let Some(p) = map.get(&key) {
            if p.is_over(region) {
                return p.clone();
            }
        }
        // Drop entries whose code region is gone.
        map.retain(|_, p| p.region().is_some());
        let p = Arc::new(Program::new(region));
        map.insert(key, p.clone());
        p
    }
}

fn helper_loop(inner: &Arc<Inner>) {
    loop {
        let job = {
            let Ok(mut pool) = inner.pool.lock() else {
                return;
            };
            loop {
                if let Some((job, slots)) = pool.job.as_mut() {
                    if *slots > 0 {
                        *slots -= 1;
                        let j = job.clone();
                        if *slots == 0 {
                            pool.job = None;
                        }
                        pool.idle -= 1;
                        j.helpers_active.fetch_add(1, Ordering::SeqCst);
                        break j;
                    }
                }
                pool = match inner.pool_cv.wait(pool) {
                    Ok(p) => p,
                    Err(_) => return,
                };
            }
        };
        job.work(inner);
        job.helper_done();
        if let Ok(mut pool) = inner.pool.lock() {
            pool.idle += 1;
        }
    }
}

/// Reusable per-worker resources: wave objects, the LDS buffer and scratch backing.
#[derive(Default)]
struct WorkerState {
    waves: Vec<Wave>,
    lds: Vec<u8>,
    scratch: Option<Arc<HostRegion>>,
}

/// One dispatch in flight.
struct Job {
    req: DispatchRequest,
    memory: Arc<dyn GlobalMemory>,
    /// Keeps the code region alive for the whole dispatch.
    _code: Arc<dyn MemoryRegion>,
    program: Arc<Program>,
    kd: KernelDescriptor,
    entry: u64,
    mode: u32,
    vgprs: usize,
    agprs: usize,
    grid_wgs: [u32; 3],
    total_workgroups: u64,
    next: AtomicU64,
    /// Wave-instructions executed by the finished workgroups.
    instructions: AtomicU64,
    stop: AtomicBool,
    error: Mutex<Option<DispatchError>>,
    helpers_active: AtomicUsize,
    done: (Mutex<()>, Condvar),
    max_instructions: u64,
    trace: TraceFilter,
}

impl Job {
    /// Runs workgroups until none is left or the dispatch stops.
    fn work(&self, inner: &Inner) {
        if self.next.load(Ordering::Relaxed) >= self.total_workgroups
            || self.stop.load(Ordering::Relaxed)
        {
            return;
        }
        let mut state = inner
            .states
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default();
        // The waves' region caches live for this dispatch only: a later dispatch must
        // not reach memory freed in between through a cached region.
        for w in state.waves.iter_mut() {
            w.regions.reset(&[]);
        }
        loop {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            let wg = self.next.fetch_add(1, Ordering::Relaxed);
            if wg >= self.total_workgroups {
                break;
            }
            if let Err(e) = self.run_workgroup(wg, &mut state) {
                self.fail(e);
                break;
            }
        }
        for w in state.waves.iter_mut() {
            w.regions.reset(&[]);
        }
        if let Ok(mut s) = inner.states.lock() {
            s.push(state);
        }
    }

    fn fail(&self, e: DispatchError) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(mut slot) = self.error.lock() {
            // Keep the first real fault; a wave aborted because of it is not news.
            let replace = match (&*slot, &e) {
                (None, _) => true,
                (
                    Some(DispatchError::Fault {
                        fault: Fault::Aborted { .. },
                        ..
                    }),
                    DispatchError::Fault { fault: f, .. },
                ) => !matches!(f, Fault::Aborted { .. }),
                _ => false,
            };
            if replace {
                *slot = Some(e);
            }
        }
    }

    fn helper_done(&self) {
        let (lock, cv) = &self.done;
        let _g = lock.lock();
        self.helpers_active.fetch_sub(1, Ordering::SeqCst);
        cv.notify_all();
    }

    fn wait_helpers(&self) {
        let (lock, cv) = &self.done;
        let Ok(mut g) = lock.lock() else { return };
        while self.helpers_active.load(Ordering::SeqCst) > 0 {
            g = match cv.wait(g) {
                Ok(g) => g,
                Err(_) => return,
            };
        }
    }

    /// Runs workgroup number `linear` (x fastest) to completion.
    fn run_workgroup(&self, linear: u64, st: &mut WorkerState) -> Result<(), DispatchError> {
        let req = &self.req;
        let [nx, ny, _] = self.grid_wgs.map(u64::from);
        let id = [
            (linear % nx) as u32,
            ((linear / nx) % ny) as u32,
            (linear / (nx * ny)) as u32,
        ];
        // Actual size of this (possibly partial) workgroup.
        let size: [u32; 3] = std::array::from_fn(|d| {
            req.workgroup_size[d].min(req.grid_size[d] - id[d] * req.workgroup_size[d])
        });
        let items = size.iter().map(|&s| s as usize).product::<usize>();
        let nwaves = items.div_ceil(64);

        // LDS: zero-filled, packet size.
        st.lds.clear();
        st.lds.resize(req.group_segment_size as usize, 0);

        // Scratch: one slice of round_up(private, 4) * 64 bytes per wave.
        let per_lane = u64::from(req.private_segment_size.div_ceil(4) * 4);
        let per_wave = per_lane * 64;
        let need = per_wave * nwaves as u64;
        let too_small = match st.scratch.as_ref() {
            Some(s) => s.len() < need,
            None => true,
        };
        if need > 0 && too_small {
            st.scratch = Some(Arc::new(HostRegion::zeroed(need)));
        }
        let scratch: Option<Arc<dyn MemoryRegion>> = if need > 0 {
            st.scratch.clone().map(|s| s as Arc<dyn MemoryRegion>)
        } else {
            None
        };
        let scratch_base = scratch.as_ref().map_or(0, |s| s.device_base());
        let scratch_len = scratch.as_ref().map_or(0, |s| s.len());

        while st.waves.len() < nwaves {
            st.waves.push(Wave::new());
        }
        let kd = &self.kd;
        for (w, wave) in st.waves.iter_mut().take(nwaves).enumerate() {
            wave.reset(self.vgprs, self.agprs);
            let slice: Vec<Arc<dyn MemoryRegion>> = match scratch.as_ref() {
                Some(s) => match SubRegion::new(s.clone(), w as u64 * per_wave, per_wave) {
                    Some(sub) => vec![Arc::new(sub)],
                    None => {
                        return Err(DispatchError::OutOfResources(
                            "scratch slice outside its backing".into(),
                        ))
                    }
                },
                None => Vec::new(),
            };
            // Regions found by earlier waves of this dispatch stay cached.
            wave.regions.set_private(&slice);
            // User SGPRs (launch sheet 9.1), packed from s0.
            let mut s = 0usize;
            let mut put = |wave: &mut Wave, v: u32| {
                if s < 102 {
                    wave.sgpr[s] = v;
                }
                s += 1;
            };
            if kd.enable_sgpr_private_segment_buffer() {
                // Scratch V# (launch sheet 11.3): swizzled, 4-byte elements, index stride 64.
                put(wave, scratch_base as u32);
                put(wave, ((scratch_base >> 32) as u32 & 0xFFFF) | 0x8000_0000);
                put(wave, scratch_len.min(u64::from(u32::MAX)) as u32);
                put(wave, 0x00EA_4FAC);
            }
            for (on, v) in [
                (kd.enable_sgpr_dispatch_ptr(), req.packet_address),
                (kd.enable_sgpr_queue_ptr(), req.queue_address),
                (kd.enable_sgpr_kernarg_segment_ptr(), req.kernarg_address),
                (kd.enable_sgpr_dispatch_id(), req.dispatch_id),
                (kd.enable_sgpr_flat_scratch_init(), scratch_base),
            ] {
                if on {
                    put(wave, v as u32);
                    put(wave, (v >> 32) as u32);
                }
            }
            if kd.enable_sgpr_private_segment_size() {
                put(wave, per_lane as u32);
            }
            // System SGPRs from s[USER_SGPR_COUNT].
            s = kd.user_sgpr_count() as usize;
            let mut put = |wave: &mut Wave, v: u32| {
                if s < 102 {
                    wave.sgpr[s] = v;
                }
                s += 1;
            };
            if kd.enable_sgpr_workgroup_id_x() {
                put(wave, id[0]);
            }
            if kd.enable_sgpr_workgroup_id_y() {
                put(wave, id[1]);
            }
            if kd.enable_sgpr_workgroup_id_z() {
                put(wave, id[2]);
            }
            if kd.enable_sgpr_workgroup_info() {
                put(wave, (u32::from(w == 0) << 31) | (nwaves as u32 & 0x3F));
            }
            if kd.enable_private_segment() {
                put(wave, (w as u64 * per_wave) as u32);
            }
            // v0: packed work-item ids (9.2); EXEC: existing lanes (9.3).
            let ids = kd.enable_vgpr_workitem_id();
            let first = w * 64;
            let lanes = (items - first).min(64);
            // Work-item f = first + l has x = f % sx, y = (f / sx) % sy, z = f / (sx·sy):
            // divide once for the first lane, then count.
            let (sx, sy) = (size[0] as usize, size[1] as usize);
            let (mut x, mut y, mut z) = (first % sx, (first / sx) % sy, first / (sx * sy));
            for l in 0..64 {
                let v = if l < lanes {
                    let yv = if ids >= 1 { y as u32 } else { 0 };
                    let zv = if ids >= 2 { z as u32 } else { 0 };
                    (x as u32 & 0x3FF) | (yv & 0x3FF) << 10 | (zv & 0x3FF) << 20
                } else {
                    0
                };
                wave.vgpr[0][l] = v;
                x += 1;
                if x == sx {
                    x = 0;
                    y += 1;
                    if y == sy {
                        y = 0;
                        z += 1;
                    }
                }
            }
            wave.set_exec(if lanes == 64 {
                u64::MAX
            } else {
                (1u64 << lanes) - 1
            });
            wave.mode = self.mode;
            wave.hw_id = (w as u32) & 0xF;
            wave.pc = self.entry;
        }
        let trace = self.trace.traces(linear);
        isa::set_trace(trace);
        let r = self.run_waves(&mut st.waves[..nwaves], &mut st.lds, id);
        if trace {
            isa::set_trace(false);
        }
        let executed: u64 = st.waves[..nwaves].iter().map(|w| w.instructions).sum();
        self.instructions.fetch_add(executed, Ordering::Relaxed);
        r
    }

    /// Runs the waves of one workgroup cooperatively until all ended, meeting at
    /// barriers.
    fn run_waves(
        &self,
        waves: &mut [Wave],
        lds: &mut [u8],
        id: [u32; 3],
    ) -> Result<(), DispatchError> {
        #[derive(Clone, Copy, PartialEq, Eq)]
        enum St {
            Ready,
            Barrier,
            Ended,
        }
        let mut st = vec![St::Ready; waves.len()];
        let yield_after = if waves.len() > 1 {
            YIELD_SLICE
        } else {
            u64::MAX
        };
        loop {
            for (w, wave) in waves.iter_mut().enumerate() {
                if st[w] != St::Ready {
                    continue;
                }
                let mut ctx = WaveContext {
                    program: &self.program,
                    memory: self.memory.as_ref(),
                    lds,
                    apertures: Apertures::KFD,
                    stop: Some(&self.stop),
                    max_instructions: self.max_instructions,
                    yield_after,
                };
                match wave.run(&mut ctx) {
                    Ok(WaveExit::Ended) => st[w] = St::Ended,
                    Ok(WaveExit::Barrier) => st[w] = St::Barrier,
                    Ok(WaveExit::Yield) => {}
                    Err(fault) => {
                        let lane = fault.lane();
                        return Err(DispatchError::Fault {
                            fault,
                            site: FaultSite {
                                workgroup: id,
                                wave: w as u32,
                                lane,
                            },
                        });
                    }
                }
            }
            if st.iter().all(|s| *s == St::Ended) {
                return Ok(());
            }
            if st.iter().all(|s| *s != St::Ready) {
                // Every live wave reached the barrier (ended waves count as arrived).
                for s in st.iter_mut() {
                    if *s == St::Barrier {
                        *s = St::Ready;
                    }
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                let pc = waves.first().map_or(0, |w| w.pc);
                return Err(DispatchError::Fault {
                    fault: Fault::Aborted { pc },
                    site: FaultSite {
                        workgroup: id,
                        wave: 0,
                        lane: None,
                    },
                });
            }
        }
    }
}
