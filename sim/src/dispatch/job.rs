//! One dispatch in flight: its checked request, its decoded program, and the
//! running of its workgroups.
//!
//! This module owns [`Job`]: reading the kernel descriptor and checking the
//! request ([`Job::prepare`]), handing out workgroups in id order to the
//! threads that work on it ([`WorkgroupClaims`]), giving each workgroup its
//! resources (a zero-filled LDS of `group_segment_size` bytes, a scratch backing
//! sliced per wave, the waves themselves, all reused from one workgroup to the
//! next through [`WorkerStates`]), running the waves of a workgroup
//! cooperatively on one thread until they meet at `s_barrier` or end, and
//! keeping the first fault. The initial register state of each wave is
//! [`super::wave_setup`]'s.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use isa::memory::{read_dwords, HostRegion, MemoryRegion, SubRegion};
use isa::{
    wave::{CodeObjects, Turn},
    Apertures, BlockCache, Fault, GlobalMemory, Program, Wave, WaveContext, WaveExit,
};

use super::crew::Crew;
use super::programs::ProgramCache;
use super::settings::{DispatchSettings, TraceFilter};
use super::wave_setup::{KernelLaunch, ScratchLayout, WorkgroupShape};
use super::{DispatchError, DispatchRequest, FaultSite, PrivateOverflow};
use crate::host_guard::Scope;
use crate::loader::KernelDescriptor;

/// Instructions a wave may run before it yields to the other waves of its
/// workgroup (fair scheduling of spin loops).
const YIELD_SLICE: u64 = 20_000;
/// Instructions of a wave, counted from its workgroup's start or from the
/// barrier that last released it, during which it writes no shared memory
/// ahead of the others (its start phase).
///
/// On a GPU the waves of a workgroup are resident at once and issue together, so
/// a read that every wave makes early after a barrier happens in all of them
/// before a store that one of them makes a few dozen instructions later lands.
/// Runtime code relies on it without saying so: LLVM 19's `pushDST`
/// (`offload/DeviceRTL/src/Workshare.cpp`) tests a pointer in LDS, lets one
/// thread allocate and set it, then meets the others at a barrier that only the
/// threads that saw it unset reach; run one wave at a time until its barrier,
/// the others see it set, skip that barrier and the workgroup hangs
/// (`offload/test/offloading/dynamic-schedule-non-spmd.cpp`); its `popDST`
/// reads the pointer after a barrier while the first thread clears it 12
/// instructions later. So, in its start phase, while other waves of its
/// workgroup can run, a wave that is ahead of the slowest of them (more
/// instructions since the release) stops before a store they may read (DS or
/// FLAT; [`Turn::StoresUntil`]) and lets them catch up. Its turns stay long and its
/// blocks without such stores keep their fused runs; workgroups without LDS,
/// or with one wave, are not held at all. Only with
/// [`DispatchSettings::waves_together`] (`HSA_SIM_WAVES_TOGETHER`), for its cost.
const START_PHASE: u64 = 1024;
/// Dwords of a kernel descriptor (64 bytes).
const DESCRIPTOR_DWORDS: usize = 16;

/// Most workgroups one claim takes (see [`WorkgroupClaims`]).
const MAX_CLAIM: u64 = 32;
/// A claim takes at most 1/(CLAIM_SHARE × workers) of the workgroups left.
const CLAIM_SHARE: u64 = 2;

/// The workgroups of a dispatch not yet handed out, and the rule that hands them
/// out: in id order, each claim a run of consecutive ids.
///
/// A claim takes a share of what is left, 1/(2 × workers) of it, but at least one
/// workgroup and at most 32 (a guided schedule): long runs while much is left, one
/// at a time near the end, so that the workers still finish together. Runs rather
/// than single ids because the neighbouring workgroups of an OpenMP loop work on
/// neighbouring memory (clang 16's `teams distribute parallel for` gives team t
/// the t-th block of `workgroup size` iterations in each stride of `num_teams`
/// blocks), so workers taking turns at consecutive ids write neighbouring blocks
/// at the same moment, where one core's prefetches and line fills meet the other's
/// stores. With one id per claim, two workers ran STREAM triad 4-5% slower than
/// with these runs, while two processes of one worker each lost nothing to each
/// other.
///
/// Ids are still claimed in increasing order, so a workgroup that waits for an
/// earlier one (a look-back scan) waits for a workgroup that is running or will be
/// run: at worst for the rest of another worker's run. A grid of at most `2 ×
/// workers` workgroups is handed out one at a time, so that workgroups that meet
/// (a grid-wide barrier, which needs them all running) run on different workers.
pub(super) struct WorkgroupClaims {
    next: AtomicU64,
    total: u64,
    /// `CLAIM_SHARE × workers`.
    divisor: u64,
}

impl WorkgroupClaims {
    /// Claims of the `total` workgroups of a dispatch that up to `workers` threads
    /// run.
    pub(super) fn new(total: u64, workers: usize) -> Self {
        WorkgroupClaims {
            next: AtomicU64::new(0),
            total,
            divisor: CLAIM_SHARE.saturating_mul(workers.max(1) as u64),
        }
    }

    /// Whether every workgroup has been handed out.
    fn exhausted(&self) -> bool {
        self.next.load(Ordering::Relaxed) >= self.total
    }

    /// The next run of workgroup ids, or `None` when none is left.
    pub(super) fn claim(&self) -> Option<Range<u64>> {
        let mut start = self.next.load(Ordering::Relaxed);
        loop {
            let left = self.total.checked_sub(start).filter(|&l| l > 0)?;
            let n = (left / self.divisor).clamp(1, MAX_CLAIM);
            match self.next.compare_exchange_weak(
                start,
                start + n,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(start..start + n),
                Err(now) => start = now,
            }
        }
    }
}

/// Reusable per-worker resources: wave objects, the LDS buffer, scratch backing and
/// its per-wave slices (nothing of a workgroup is allocated on the heap once they
/// are large enough).
#[derive(Default)]
struct WorkerState {
    waves: Vec<Wave>,
    lds: Vec<u8>,
    scratch: Option<Arc<HostRegion>>,
    /// Slice w of the scratch backing, for wave w ([`Job::scratch_slice`]).
    slices: Vec<Arc<dyn MemoryRegion>>,
    /// The backing (its address) and bytes per wave the slices were cut for.
    slices_for: (usize, u64),
    /// The blocks the worker's waves entered, one cache for all of them (see
    /// [`Wave::run_cached`]).
    blocks: BlockCache,
}

/// The per-worker resources not in use, kept between dispatches.
#[derive(Default)]
pub(super) struct WorkerStates(Mutex<Vec<WorkerState>>);

/// One dispatch in flight.
pub(super) struct Job {
    req: DispatchRequest,
    memory: Arc<dyn GlobalMemory>,
    /// Keeps the code region alive for the whole dispatch.
    _code: Arc<dyn MemoryRegion>,
    program: Arc<Program>,
    /// The decoded programs of the agent's code objects, for code reached outside
    /// the kernel's own ([`CodeObjects`]), and whether new ones fuse runs.
    programs: Arc<ProgramCache>,
    fusion: bool,
    /// [`DispatchSettings::waves_together`].
    waves_together: bool,
    launch: KernelLaunch,
    grid_wgs: [u32; 3],
    claims: WorkgroupClaims,
    /// Wave-instructions executed by the finished workgroups.
    instructions: AtomicU64,
    /// Of those, the ones that ran inside fused runs.
    fused: AtomicU64,
    /// Raised on the first fault, or from outside to cancel the dispatch (its
    /// queue destroyed); every wave stops at its next backward branch or barrier.
    stop: Arc<AtomicBool>,
    error: Mutex<Option<DispatchError>>,
    crew: Crew,
    states: Arc<WorkerStates>,
    max_instructions: u64,
    trace: TraceFilter,
}

impl Job {
    /// Checks the request, reads the descriptor and finds (or decodes) the program,
    /// for up to `workers` threads to run; raising `stop` cancels it.
    ///
    /// # Errors
    /// `InvalidRequest` for a shape gfx90a cannot run, `InvalidKernelObject` for a
    /// descriptor or entry point that is not in memory or not valid.
    pub(super) fn prepare(
        req: &DispatchRequest,
        memory: &Arc<dyn GlobalMemory>,
        programs: &Arc<ProgramCache>,
        settings: &DispatchSettings,
        states: Arc<WorkerStates>,
        workers: usize,
        stop: Arc<AtomicBool>,
    ) -> Result<Job, DispatchError> {
        req.geometry()
            .check()
            .map_err(DispatchError::InvalidRequest)?;
        let bad_kd = |reason: String| DispatchError::InvalidKernelObject {
            address: req.kernel_object,
            reason,
        };
        let mut kd_words = [0u32; DESCRIPTOR_DWORDS];
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
        let program = programs.program_for(&region, settings.fusion);
        let grid_wgs: [u32; 3] =
            std::array::from_fn(|d| req.grid_size[d].div_ceil(req.workgroup_size[d]));
        let total_workgroups = grid_wgs.iter().map(|&n| u64::from(n)).product();
        Ok(Job {
            req: req.clone(),
            memory: memory.clone(),
            _code: region,
            program,
            programs: programs.clone(),
            fusion: settings.fusion,
            waves_together: settings.waves_together,
            launch: KernelLaunch::new(kd, entry),
            grid_wgs,
            claims: WorkgroupClaims::new(total_workgroups, workers),
            instructions: AtomicU64::new(0),
            fused: AtomicU64::new(0),
            stop,
            error: Mutex::new(None),
            crew: Crew::default(),
            states,
            max_instructions: settings.max_wave_instructions,
            trace: settings.trace.clone(),
        })
    }

    /// Workgroups in the grid.
    pub(super) fn total_workgroups(&self) -> u64 {
        self.claims.total
    }

    /// The helpers working on this job.
    pub(super) fn crew(&self) -> &Crew {
        &self.crew
    }

    /// The outcome once no thread works on the job any more: the wave-instructions
    /// executed, or the first fault.
    pub(super) fn finish(&self) -> Result<DispatchCounts, DispatchError> {
        let first = self.error.lock().map(|mut e| e.take()).unwrap_or(None);
        match first {
            Some(e) => Err(e),
            None => Ok(DispatchCounts {
                executed: self.instructions.load(Ordering::Relaxed),
                fused: self.fused.load(Ordering::Relaxed),
            }),
        }
    }

    /// Runs workgroups until none is left or the dispatch stops.
    pub(super) fn work(&self) {
        if self.claims.exhausted() || self.stop.load(Ordering::Relaxed) {
            return;
        }
        let mut state = self
            .states
            .0
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default();
        // The waves' region caches live for this dispatch only: a later dispatch must
        // not reach memory freed in between through a cached region.
        for w in state.waves.iter_mut() {
            w.regions.reset(&[]);
        }
        // With XNACK on, host memory unmapped under this thread's waves is a fault of
        // the dispatch (see `host_guard`); `None` otherwise.
        let holes = crate::host_guard::Scope::enter(self.stop.as_ref());
        'claims: while let Some(ids) = self.claims.claim() {
            for wg in ids {
                if self.stop.load(Ordering::Relaxed) {
                    break 'claims;
                }
                match guarded(wg, || self.run_workgroup(wg, &mut state, holes.as_ref())) {
                    Ok(()) => {}
                    Err(e @ DispatchError::Internal { .. }) => {
                        // The waves' state is whatever the panic left: not reused.
                        self.fail(e);
                        return;
                    }
                    Err(e) => {
                        self.fail(e);
                        break 'claims;
                    }
                }
            }
        }
        for w in state.waves.iter_mut() {
            w.regions.reset(&[]);
        }
        if let Ok(mut s) = self.states.0.lock() {
            s.push(state);
        }
    }

    /// Stops the dispatch, keeping the first real fault (a wave aborted because
    /// of it is not news).
    fn fail(&self, e: DispatchError) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(mut slot) = self.error.lock() {
            let replace = match &*slot {
                None => true,
                Some(first) => first.is_abort() && e.fault().is_some() && !e.is_abort(),
            };
            if replace {
                *slot = Some(e);
            }
        }
    }

    /// Runs workgroup number `linear` (x fastest) to completion.
    fn run_workgroup(
        &self,
        linear: u64,
        st: &mut WorkerState,
        holes: Option<&Scope<'_>>,
    ) -> Result<(), DispatchError> {
        let req = &self.req;
        let wg = WorkgroupShape::new(linear, self.grid_wgs, req);
        // LDS: zero-filled, packet size.
        st.lds.clear();
        st.lds.resize(req.group_segment_size as usize, 0);
        let (scratch, backing) = Self::scratch(req, &wg, st);
        if let Some(b) = backing.as_ref() {
            Self::cut_slices(b, &scratch, wg.waves, st)?;
        }
        while st.waves.len() < wg.waves {
            st.waves.push(Wave::new());
        }
        for (w, wave) in st.waves.iter_mut().take(wg.waves).enumerate() {
            wave.reset(self.launch.vgprs, self.launch.agprs);
            let slice = match backing {
                Some(_) => st.slices.get(w..w + 1).unwrap_or_default(),
                None => &[],
            };
            // Regions found by earlier waves of this dispatch stay cached.
            wave.regions.set_private(slice);
            self.launch.init_wave(wave, w, &wg, &scratch, req);
        }
        let trace = self.trace.traces(linear);
        isa::set_trace(trace);
        let r = self.run_waves(
            &mut st.waves[..wg.waves],
            &mut st.lds,
            &mut st.blocks,
            (wg.id, &scratch),
            holes,
        );
        if trace {
            isa::set_trace(false);
        }
        let executed: u64 = st.waves[..wg.waves].iter().map(|w| w.instructions).sum();
        self.instructions.fetch_add(executed, Ordering::Relaxed);
        let fused: u64 = st.waves[..wg.waves]
            .iter()
            .map(|w| w.fused_instructions)
            .sum();
        self.fused.fetch_add(fused, Ordering::Relaxed);
        r
    }

    /// The scratch layout of workgroup `wg` and its backing (one slot per wave, see
    /// [`ScratchLayout`]), grown in `st` when too small.
    fn scratch(
        req: &DispatchRequest,
        wg: &WorkgroupShape,
        st: &mut WorkerState,
    ) -> (ScratchLayout, Option<Arc<dyn MemoryRegion>>) {
        let mut layout = ScratchLayout::new(req.private_segment_size, req.queue_scratch_per_lane);
        let need = layout.per_wave * wg.waves as u64;
        if need == 0 {
            return (layout, None);
        }
        if st.scratch.as_ref().is_none_or(|s| s.len() < need) {
            st.scratch = Some(Arc::new(HostRegion::zeroed(need)));
        }
        let backing = st.scratch.clone().map(|s| s as Arc<dyn MemoryRegion>);
        if let Some(b) = backing.as_ref() {
            layout.base = b.device_base();
            layout.len = b.len();
        }
        (layout, backing)
    }

    /// Makes `st.slices` hold wave w's slice of `backing` for each of the first
    /// `waves` waves, cutting only those it does not hold yet for this backing and
    /// layout.
    ///
    /// # Errors
    /// As [`scratch_slice`](Self::scratch_slice).
    fn cut_slices(
        backing: &Arc<dyn MemoryRegion>,
        layout: &ScratchLayout,
        waves: usize,
        st: &mut WorkerState,
    ) -> Result<(), DispatchError> {
        let key = (Arc::as_ptr(backing).cast::<u8>() as usize, layout.per_wave);
        if st.slices_for != key {
            // (The old slices keep the old backing alive: a new one is never at
            // its address while they exist.)
            st.slices.clear();
            st.slices_for = key;
        }
        while st.slices.len() < waves {
            let w = st.slices.len();
            st.slices.push(Self::scratch_slice(backing, w, layout)?);
        }
        Ok(())
    }

    /// Wave `w`'s slice of the scratch `backing`.
    fn scratch_slice(
        backing: &Arc<dyn MemoryRegion>,
        w: usize,
        layout: &ScratchLayout,
    ) -> Result<Arc<dyn MemoryRegion>, DispatchError> {
        SubRegion::new(backing.clone(), w as u64 * layout.per_wave, layout.per_wave)
            .map(|sub| Arc::new(sub) as Arc<dyn MemoryRegion>)
            .ok_or_else(|| {
                DispatchError::OutOfResources("scratch slice outside its backing".into())
            })
    }

    /// The error of a wave's `fault` at `site`: a memory fault past the wave's
    /// scratch slot is a private segment overflow (see [`ScratchLayout`]).
    #[cold]
    fn wave_fault(&self, fault: Fault, site: FaultSite, scratch: &ScratchLayout) -> DispatchError {
        if let Fault::Memory { address, .. } = fault {
            if let Some((lane, offset)) = scratch.overflow_at(site.wave as usize, address) {
                return DispatchError::PrivateOverflow(Box::new(PrivateOverflow {
                    kernel: None,
                    declared: self.req.private_segment_size,
                    slot: scratch.per_wave / isa::WAVE_SIZE as u64,
                    lane,
                    offset,
                    fault,
                    site,
                }));
            }
        }
        DispatchError::Fault { fault, site }
    }

    /// The turn of wave `w` of `waves` (with the instruction counts `phase` at
    /// the last release): in its start phase, while another wave can run, it may
    /// store to the LDS only up to the count of the slowest other runnable wave
    /// (see [`START_PHASE`]).
    fn start_turn(
        waves: &[Wave],
        phase: &[u64; WaveSet::CAPACITY],
        waiting: WaveSet,
        ended: WaveSet,
        w: usize,
    ) -> Turn {
        let since = |v: usize| waves[v].instructions - phase[v];
        if since(w) >= START_PHASE {
            return Turn::Slice;
        }
        let slowest = (0..waves.len().min(WaveSet::CAPACITY))
            .filter(|&v| v != w && !waiting.has(v) && !ended.has(v))
            .map(since)
            .min();
        match slowest {
            Some(s) => Turn::StoresUntil(phase[w] + s),
            None => Turn::Slice,
        }
    }

    /// Runs the waves of one workgroup cooperatively until all ended, meeting at
    /// barriers.
    fn run_waves(
        &self,
        waves: &mut [Wave],
        lds: &mut [u8],
        blocks: &mut BlockCache,
        (id, scratch): ([u32; 3], &ScratchLayout),
        holes: Option<&Scope<'_>>,
    ) -> Result<(), DispatchError> {
        // Each wave's state: ready to run, or waiting at the barrier; ended waves
        // count as arrived. The counts decide without a pass over the states.
        // (On the stack, bit w for wave w: nothing of a workgroup is allocated on
        // the heap, where it could share a cache line with what another worker
        // writes.)
        let n = waves.len();
        if n > WaveSet::CAPACITY {
            // (The request's check allows at most 16.)
            return Err(DispatchError::OutOfResources(format!(
                "{n} waves in one workgroup (at most {})",
                WaveSet::CAPACITY
            )));
        }
        let (mut waiting, mut ended) = (WaveSet::default(), WaveSet::default());
        let (mut arrived, mut live) = (0, n);
        let yield_after = if n > 1 { YIELD_SLICE } else { u64::MAX };
        // The instruction count of each wave when its workgroup started or the last
        // barrier released it (see START_PHASE). Only waves that share an LDS are
        // held: without one they have no shared state the device runtime races on.
        let mut phase = [0u64; WaveSet::CAPACITY];
        let shared = self.waves_together && self.req.group_segment_size > 0;
        let mut ctx = WaveContext {
            memory: self.memory.as_ref(),
            lds,
            apertures: Apertures::KFD,
            stop: Some(self.stop.as_ref()),
            max_instructions: self.max_instructions,
            yield_after,
        };
        loop {
            for w in 0..n {
                if waiting.has(w) || ended.has(w) {
                    continue;
                }
                let turn = match shared {
                    true => Self::start_turn(waves, &phase, waiting, ended, w),
                    false => Turn::Slice,
                };
                let Some(wave) = waves.get_mut(w) else { break };
                let exit = wave.run_cached(&self.program, &mut ctx, blocks, (Some(self), turn));
                if let Some(hole) = holes.and_then(Scope::take_fault) {
                    // Host memory the wave held was unmapped under it: its access
                    // finished against a zero page and the wave stopped at its next
                    // backward branch (the pc reported is where it stopped).
                    return Err(DispatchError::Fault {
                        fault: Fault::Memory {
                            address: hole.address,
                            size: 1,
                            write: hole.write,
                            pc: wave.pc,
                            lane: None,
                        },
                        site: FaultSite {
                            workgroup: id,
                            wave: w as u32,
                            lane: None,
                        },
                    });
                }
                match exit {
                    Ok(WaveExit::Ended) => {
                        ended.add(w);
                        live -= 1;
                    }
                    Ok(WaveExit::Barrier) => {
                        waiting.add(w);
                        arrived += 1;
                    }
                    Ok(WaveExit::Yield) => {}
                    Err(fault) => {
                        let site = FaultSite {
                            workgroup: id,
                            wave: w as u32,
                            lane: fault.lane(),
                        };
                        return Err(self.wave_fault(fault, site, scratch));
                    }
                }
            }
            if live == 0 {
                return Ok(());
            }
            if arrived == live {
                // Every live wave reached the barrier: they start together again.
                waiting = WaveSet::default();
                arrived = 0;
                for (p, w) in phase.iter_mut().zip(waves.iter()) {
                    *p = w.instructions;
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

/// Code of the agent's other code objects, reached by a call or jump out of the
/// kernel's own (a function of another executable called through a pointer): the
/// code object [`GlobalMemory::code_region`] finds, decoded once in the
/// dispatcher's program cache.
impl CodeObjects for Job {
    fn program_at(&self, pc: u64) -> Option<Arc<Program>> {
        let region = self.memory.code_region(pc)?;
        Some(self.programs.program_for(&region, self.fusion))
    }
}

/// A set of the waves of one workgroup (a workgroup has at most
/// `MAX_WORKGROUP_ITEMS` / 64 = 16).
#[derive(Clone, Copy, Default)]
struct WaveSet(u32);

impl WaveSet {
    /// Waves a set can hold.
    const CAPACITY: usize = 32;

    /// Whether wave `w` is in the set.
    fn has(self, w: usize) -> bool {
        w < Self::CAPACITY && self.0 >> w & 1 == 1
    }

    /// Adds wave `w` (callers check `w` < `CAPACITY`).
    fn add(&mut self, w: usize) {
        if w < Self::CAPACITY {
            self.0 |= 1 << w;
        }
    }
}

/// Runs workgroup `wg` with `run`, turning a panic (a bug of the virtual device)
/// into [`DispatchError::Internal`], so that the dispatch fails and its completion
/// signal is set instead of the queue thread or a worker dying with it.
fn guarded(wg: u64, run: impl FnOnce() -> Result<(), DispatchError>) -> Result<(), DispatchError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        Err(DispatchError::Internal {
            workgroup: wg,
            message,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_slices_are_cut_again_for_a_new_backing_or_layout() {
        let mut st = WorkerState::default();
        let check = |st: &WorkerState, backing: &Arc<dyn MemoryRegion>, per_wave: u64, waves| {
            assert_eq!(st.slices.len(), waves);
            for (w, s) in st.slices.iter().enumerate() {
                let at = backing.device_base() + w as u64 * per_wave;
                assert_eq!((s.device_base(), s.len()), (at, per_wave), "slice {w}");
            }
        };
        let small = ScratchLayout::new(4, 0); // 256 bytes per wave
        let a: Arc<dyn MemoryRegion> = Arc::new(HostRegion::zeroed(4 * 256));
        Job::cut_slices(&a, &small, 2, &mut st).unwrap();
        check(&st, &a, 256, 2);
        // More waves: the first two are kept, two more cut.
        let kept = st.slices[1].clone();
        Job::cut_slices(&a, &small, 4, &mut st).unwrap();
        check(&st, &a, 256, 4);
        assert!(Arc::ptr_eq(&kept, &st.slices[1]));
        // Another layout of the same backing, then another backing.
        let large = ScratchLayout::new(8, 0); // 512 bytes per wave
        Job::cut_slices(&a, &large, 2, &mut st).unwrap();
        check(&st, &a, 512, 2);
        let b: Arc<dyn MemoryRegion> = Arc::new(HostRegion::zeroed(2 * 512));
        Job::cut_slices(&b, &large, 2, &mut st).unwrap();
        check(&st, &b, 512, 2);
        // A slice past the backing is an error, not a slice.
        assert!(Job::cut_slices(&b, &large, 3, &mut st).is_err());
    }

    #[test]
    fn a_panic_in_a_workgroup_becomes_an_internal_error() {
        // (The default hook prints both panics; they are expected.)
        let text = guarded(7, || panic!("block decoding overflowed"));
        let formatted = guarded(8, || panic!("lane {} of {}", 3, 64));
        assert_eq!(
            text,
            Err(DispatchError::Internal {
                workgroup: 7,
                message: "block decoding overflowed".into()
            })
        );
        assert_eq!(
            formatted,
            Err(DispatchError::Internal {
                workgroup: 8,
                message: "lane 3 of 64".into()
            })
        );
        assert_eq!(
            formatted.unwrap_err().hsa_status(),
            hsa_sys::HSA_STATUS_ERROR
        );
        // Results of workgroups that do not panic pass through.
        assert_eq!(guarded(9, || Ok(())), Ok(()));
        let fault = DispatchError::OutOfResources("scratch".into());
        assert_eq!(guarded(9, || Err(fault.clone())), Err(fault));
    }

    /// One thread claiming STREAM's 440 workgroups for two workers: runs of
    /// consecutive ids that follow each other, cover every id once, start at 32
    /// (a quarter of what is left, at most 32) and shrink to single ids at the end.
    #[test]
    fn claims_are_runs_in_id_order_that_shrink_to_single_ids() {
        let claims = WorkgroupClaims::new(440, 2);
        let runs: Vec<Range<u64>> = std::iter::from_fn(|| claims.claim()).collect();
        assert_eq!(runs.first(), Some(&(0..32)));
        let mut next = 0;
        for (k, r) in runs.iter().enumerate() {
            assert_eq!(r.start, next, "claim {k} follows the one before");
            assert!(!r.is_empty() && r.end <= 440, "claim {k}: {r:?}");
            let left = 440 - r.start;
            let want = (left / 4).clamp(1, 32);
            assert_eq!(r.end - r.start, want, "claim {k} with {left} left");
            next = r.end;
        }
        assert_eq!(next, 440);
        assert!(runs[runs.len() - 3..].iter().all(|r| r.end - r.start == 1));
        assert!(claims.exhausted() && claims.claim().is_none());
    }

    /// A grid no larger than twice the workers is handed out one workgroup at a
    /// time (workgroups that meet at a grid-wide barrier then run side by side);
    /// an empty grid has nothing to claim.
    #[test]
    fn small_grids_are_claimed_one_workgroup_at_a_time() {
        for (total, workers) in [(1, 1), (2, 1), (4, 2), (16, 8), (7, 4)] {
            let claims = WorkgroupClaims::new(total, workers);
            for id in 0..total {
                assert_eq!(claims.claim(), Some(id..id + 1), "{total} for {workers}");
            }
            assert_eq!(claims.claim(), None);
        }
        assert_eq!(WorkgroupClaims::new(0, 2).claim(), None);
        // Zero workers counts as one.
        assert_eq!(WorkgroupClaims::new(100, 0).claim(), Some(0..32));
    }

    /// Four threads claiming at once: every id exactly once, and each thread's
    /// claims in increasing order.
    #[test]
    fn concurrent_claims_hand_out_every_workgroup_exactly_once() {
        const TOTAL: u64 = 200_000;
        let claims = WorkgroupClaims::new(TOTAL, 4);
        let start = std::sync::Barrier::new(4);
        let per_thread: Vec<Vec<Range<u64>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        std::iter::from_fn(|| claims.claim()).collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut ids = Vec::new();
        for runs in &per_thread {
            assert!(runs.windows(2).all(|w| w[0].end <= w[1].start));
            ids.extend(runs.iter().flat_map(|r| r.clone()));
        }
        ids.sort_unstable();
        assert_eq!(ids, (0..TOTAL).collect::<Vec<_>>());
    }
}

/// What a dispatch executed, summed over all waves of all workgroups (for
/// benchmarks and statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DispatchCounts {
    /// Wave-instructions executed.
    pub executed: u64,
    /// Of those, the ones that ran inside fused runs (compiled host code).
    pub fused: u64,
}
