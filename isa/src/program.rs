//! A decoded code object: instructions are decoded the first time a wave reaches them,
//! in straight-line blocks, and then shared by all waves of all dispatches that use
//! the program.
//!
//! A block is cached per PC at which waves enter a run of instructions: the
//! instructions from there up to the first one that may leave it other than by a
//! conditional branch, or leave [`crate::Wave::run`](crate::Wave::run) (see `ends_block`),
//! a word sequence that does not decode, `BLOCK_CAP` (128) instructions, or the
//! region's end. A conditional branch that is taken leaves the block where it lies.
//! Its entries lie in one allocation, so that a loop's code is dense in the cache. A
//! jump into the middle of a block simply enters another block there (blocks may
//! overlap).

use std::sync::{Arc, OnceLock, Weak};

use crate::decode::decode;
use crate::error::{DecodeError, Fault};
use crate::generated::opcodes::{Sop1Op, SopkOp};
use crate::inst::Instruction;
use crate::lds::LdsPlan;
use crate::memory::{read_region_dwords, MemoryRegion};
use crate::salu::ScalarPlan;
use crate::state::Flow;
use crate::state::ScalarFlow;
use crate::valu::{IntPlan, LanePlan, PkPlan};
use crate::vmem::{FlatPlan, ScratchPlan};

/// Dwords per lazily allocated page of block slots.
const PAGE_DWORDS: usize = 1024;

/// Most instructions in one block (a longer straight run continues in the block at
/// the PC after its last entry).
pub(crate) const BLOCK_CAP: usize = 128;

/// How the run loop executes an entry, chosen at decode time: one flat enum with its
/// tag first, so that the loop dispatches on one byte (a jump table), whatever the
/// kind of plan.
#[repr(u8)]
pub(crate) enum Run {
    /// A scalar form with a pre-resolved plan (run instead of `WaveState::step`).
    Scalar(ScalarPlan),
    /// A hot integer or f64 VALU form, or `v_pk_mov_b32` (see `valu::plan`); it may
    /// decline (MODE), leaving the instruction to `WaveState::step`.
    Int(IntPlan),
    /// `v_pk_add_f32` / `v_pk_mul_f32` / `v_pk_fma_f32`; may decline (MODE).
    PkF32(PkPlan),
    /// A plain 4- or 8-byte LDS load or store, or `ds_bpermute_b32` (see `lds`); may
    /// decline (an address outside the LDS), leaving the fault to `WaveState::step`.
    Lds(LdsPlan),
    /// A GLOBAL/FLAT load or store of 4 or 8 bytes per lane, or a sub-dword load (see
    /// `vmem::FlatPlan`); declines the accesses it has no path for to `WaveState::step`.
    Flat(FlatPlan),
    /// A MUBUF load or store of whole dwords through the private segment buffer
    /// (see `vmem::ScratchPlan`): joins fused runs; alone, `WaveState::step` runs it.
    Scratch(ScratchPlan),
    /// `v_readlane_b32` / `v_writelane_b32` (see `valu::LanePlan`): joins fused runs;
    /// alone, `WaveState::step` runs it.
    Lane(LanePlan),
    /// `WaveState::step` on the decoded instruction.
    General,
}

impl Run {
    /// How `inst` (followed by the instruction at `next`) runs: the first plan its
    /// form has, else the general path.
    pub(crate) fn of(inst: &Instruction, next: u64) -> Run {
        if let Some(s) = ScalarPlan::of(inst, next) {
            return Run::Scalar(s);
        }
        let vector = match inst {
            Instruction::Vop3p(i) => PkPlan::of(i)
                .map(Run::PkF32)
                .or_else(|| IntPlan::of_vop3p(i).map(Run::Int)),
            Instruction::Valu(i) => IntPlan::of(i)
                .map(Run::Int)
                .or_else(|| LanePlan::of(i).map(Run::Lane)),
            Instruction::Ds(i) => LdsPlan::of(i).map(Run::Lds),
            Instruction::Flat(i) => FlatPlan::of(i).map(Run::Flat),
            Instruction::Mubuf(i) => ScratchPlan::of(i).map(Run::Scratch),
            _ => None,
        };
        vector.unwrap_or(Run::General)
    }

    /// What the entry of this plan and `inst` (the next instruction at `next`) is to
    /// the search for fused runs (`valu::find_runs`).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn slot(&self, inst: &Instruction, next: u64) -> crate::valu::Slot<'_> {
        use crate::valu::Slot;
        match self {
            Run::Int(p) => Slot::Int(p),
            Run::Lds(p) => Slot::Lds(p),
            Run::Flat(p) => Slot::Flat(p),
            Run::Scratch(p) => Slot::Private(p.0),
            Run::Lane(p) => Slot::Lane(*p),
            Run::Scalar(s) => s.native(inst).map_or(Slot::Other, Slot::Scalar),
            Run::General => crate::salu::aperture_move(inst)
                .or_else(|| crate::salu::indirect_jump(inst, next))
                .map_or(Slot::Other, Slot::Scalar),
            Run::PkF32(_) => Slot::Other,
        }
    }

    /// The [`Flow`] of a plan that ran: a scalar plan's own, else the next entry.
    #[inline(always)]
    pub(crate) fn flow(&self, f: ScalarFlow) -> Flow {
        match self {
            Run::Scalar(s) => s.flow(f),
            _ => Flow::Next,
        }
    }
}

/// One decoded instruction of a block, as the run loop reads it (the instruction
/// itself is in [`Block::insts`], at the same index, so that the entries the loop
/// walks stay small). Laid out for the loop, which reads the fused run first and
/// then, without one, the plan's tag: both in the first of the entry's two cache
/// lines (the loop's misses on entries, with a gather's lines passing through the
/// host's L1, were most of its misses).
#[repr(C, align(64))]
pub(crate) struct Entry {
    /// The fused run starting at this entry (see `valu::jit`): the entry and the
    /// next `len - 1` run as one step (when every lane is active, if the run has
    /// vector instructions).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fused: Option<crate::valu::Fused>,
    /// How it runs.
    pub(crate) run: Run,
    /// Byte address of the instruction.
    pub(crate) pc: u64,
    /// Byte address of the following instruction.
    pub(crate) next: u64,
}

/// A decoded straight-line run of instructions starting at the PC of its slot.
pub(crate) struct Block {
    /// The instructions' entries, in address order (empty if the first does not
    /// decode).
    pub(crate) entries: Box<[Entry]>,
    /// The decoded instructions, one per entry (the general path, traces, errors).
    pub(crate) insts: Box<[Instruction]>,
    /// Why the words after the last entry do not decode, if that ended the block: it
    /// is raised only when a wave reaches that PC.
    pub(crate) tail: Option<Box<DecodeError>>,
    /// Bit k set: entry k stores to the LDS ([`stores_shared`]; a block has at
    /// most `BLOCK_CAP` = 128 entries).
    pub(crate) shared_stores: u128,
    /// The compiled code of the entries' fused runs (kept alive with them).
    #[cfg(target_arch = "x86_64")]
    _code: Option<crate::valu::Code>,
}

impl Block {
    /// Byte address after the last entry (where a wave continues when every entry
    /// fell through), given the block's start.
    #[inline]
    pub(crate) fn end(&self, start: u64) -> u64 {
        self.entries.last().map_or(start, |e| e.next)
    }

    /// Whether the taken branch after the first `done` entries of the fused run at
    /// entry `entry` may be linked to its target's run and is not yet (see
    /// `valu::Code::link`).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn unlinked(&self, entry: usize, done: usize) -> bool {
        self._code.as_ref().is_some_and(|c| c.unlinked(entry, done))
    }

    /// Links that branch to `to`'s first run, when `to` starts with one: the run's
    /// code then goes on in `to` without returning to the wave's loop (else the
    /// branch is marked as one that cannot be linked).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn link(&self, entry: usize, done: usize, to: &Block, program: &Program) {
        let Some(from) = &self._code else {
            return;
        };
        // Both blocks must be `program`'s own (it keeps them until it is dropped).
        let own = |b: &Block| {
            b.entries.first().is_some_and(|e| {
                program
                    .block_hinted(e.pc, &mut None)
                    .is_ok_and(|p| std::ptr::eq(&**p, b))
            })
        };
        if own(self) && own(to) {
            // SAFETY: both blocks are held by `program`'s pages, which drop only with
            // the program: `to` lives as long as `self`.
            unsafe { from.link(entry, done, to._code.as_ref()) };
        }
    }
}

/// The number of the next [`Program`] made (0 is no program's).
static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Sets of a [`BlockCache`] (a power of two), each of two blocks.
const CACHED_SETS: usize = 128;

/// One set of a [`BlockCache`]: the most recently entered of its blocks first, each
/// with its PC ([`EMPTY`] for none).
type CacheSet = [(u64, Option<Arc<Block>>); 2];

/// The PC of an empty way of a [`BlockCache`] (no block starts at an odd address).
const EMPTY: u64 = u64::MAX;

/// A cache of the blocks waves entered, kept across [`crate::Wave::run`](crate::Wave::run)
/// calls (a wave leaves `run` at every `s_barrier`; LLVM's loops pass several per
/// iteration), so that entering a block costs a compare rather than the program's
/// page lookup: a wave's own, or the one of the thread running it, shared by the
/// waves it runs ([`Wave::run_cached`](crate::Wave::run_cached); `Default` makes an
/// empty one). Two-way set-associative by PC (set = dword address modulo the
/// sets), the way entered last kept first: two hot blocks 512 bytes apart (LLVM
/// 16's team reductions have such pairs in one loop) no longer evict each other
/// at every entry. It holds the blocks of one program (`program`, its number), and
/// is emptied when a wave runs another. It holds `Arc`s of the blocks: it keeps
/// them alive without borrowing the program (a reference count is touched only
/// when a way is filled, which at two workers is a cache line both cores write).
pub struct BlockCache {
    program: u64,
    sets: Box<[CacheSet]>,
}

impl Default for BlockCache {
    fn default() -> Self {
        Self {
            program: 0,
            sets: vec![[(EMPTY, None), (EMPTY, None)]; CACHED_SETS].into_boxed_slice(),
        }
    }
}

impl BlockCache {
    /// The block of `program` starting at `pc`, from the cache or from `program`
    /// (decoding it on first use).
    ///
    /// # Errors
    /// As [`Program::block_hinted`].
    #[inline]
    pub(crate) fn get<'a>(&'a mut self, program: &'a Program, pc: u64) -> Result<&'a Block, Fault> {
        if self.program != program.uid {
            self.sets
                .iter_mut()
                .for_each(|s| *s = [(EMPTY, None), (EMPTY, None)]);
            self.program = program.uid;
        }
        let k = (pc >> 2) as usize & (CACHED_SETS - 1);
        let Some(set) = self.sets.get_mut(k) else {
            return program.block_hinted(pc, &mut None).map(|b| &**b);
        };
        if set[0].0 != pc {
            if set[1].0 == pc {
                set.swap(0, 1);
            } else {
                let block = program.block_hinted(pc, &mut None)?.clone();
                set[1] = std::mem::replace(&mut set[0], (pc, Some(block)));
            }
        }
        match &set[0].1 {
            Some(b) => Ok(b),
            None => Err(Fault::BadPc { pc }),
        }
    }
}

/// A lazily allocated page of `PAGE_DWORDS` block slots.
type Page = Box<[OnceLock<Arc<Block>>]>;

/// A page of block slots (see [`Program::block_hinted`]).
#[derive(Clone, Copy)]
pub(crate) struct PageHint<'p> {
    number: usize,
    slots: &'p [OnceLock<Arc<Block>>],
}

/// Whether `inst` ends a block: everything `WaveState::step` may answer with a jump or
/// an exit (unconditional branches, calls, `s_setpc`/`s_swappc`, `s_endpgm`,
/// `s_barrier`, `s_sleep`, halts), and every SOPP form not known to fall through.
/// A conditional branch on SCC, VCC or EXEC does not: the block goes on with the
/// instructions it falls through to (LLVM's code skips the lanes-off paths with
/// `s_cbranch_execz` at every `if`, and mostly falls through), and a taken branch
/// leaves the block where it lies, as a fault does.
pub(crate) fn ends_block(inst: &Instruction) -> bool {
    use crate::generated::opcodes::SoppOp as O;
    match inst {
        Instruction::Sopp(i) => {
            !matches!(
                i.op,
                O::SCbranchScc0
                    | O::SCbranchScc1
                    | O::SCbranchVccz
                    | O::SCbranchVccnz
                    | O::SCbranchExecz
                    | O::SCbranchExecnz
            ) && !crate::state::sopp_falls_through(i.op)
        }
        Instruction::Sop1(i) => matches!(
            i.op,
            Sop1Op::SSetpcB64 | Sop1Op::SSwappcB64 | Sop1Op::SRfeB64 | Sop1Op::SCbranchJoin
        ),
        Instruction::Sopk(i) => matches!(i.op, SopkOp::SCallB64 | SopkOp::SCbranchIFork),
        _ => false,
    }
}

/// The instructions of one code region (normally the loaded code object), decoded
/// lazily, in blocks cached per entry PC. Thread-safe: workers build and read blocks
/// concurrently (each slot is written once, then only read, without locks).
///
/// The program holds only a `Weak` reference to its region: a cache of programs must
/// not keep freed code objects alive. Callers executing it hold an `Arc` of the region
/// (see [`Program::region`]).
pub struct Program {
    region: Weak<dyn MemoryRegion>,
    /// Identity of the region (data pointer of its Arc) for cache validation.
    region_id: usize,
    base: u64,
    len: u64,
    pages: Box<[OnceLock<Page>]>,
    /// This program's number, unique in the process (see [`BlockCache`]).
    uid: u64,
    /// Whether blocks get fused runs (see `valu::jit`).
    fuse: bool,
    /// Whether their code may use AVX-512 where the host has it (see
    /// [`without_avx512`](Self::without_avx512)).
    wide: bool,
}

impl Program {
    /// A program over all of `region` (code addresses are device addresses in it).
    ///
    /// Straight runs of integer VALU and scalar instructions are compiled to host
    /// code on hosts that can run it (see [`without_fusion`](Self::without_fusion)).
    pub fn new(region: &Arc<dyn MemoryRegion>) -> Self {
        let len = region.len();
        let dwords = (len / 4) as usize;
        let npages = dwords.div_ceil(PAGE_DWORDS);
        Self {
            region: Arc::downgrade(region),
            region_id: Arc::as_ptr(region).cast::<u8>() as usize,
            base: region.device_base(),
            len,
            pages: (0..npages).map(|_| OnceLock::new()).collect(),
            uid: NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            fuse: true,
            wide: true,
        }
    }

    /// This program with every instruction interpreted one by one: no run of
    /// instructions is compiled to host code. Results are the same
    /// either way (the tests compare them).
    pub fn without_fusion(mut self) -> Self {
        self.fuse = false;
        self
    }

    /// This program with fused runs whose code uses AVX2 forms only, as on a host
    /// without AVX-512 (which their private accesses use where the host has it).
    /// Results are the same either way (the tests run both on hosts with it).
    pub fn without_avx512(mut self) -> Self {
        self.wide = false;
        self
    }

    /// Device address of the first code byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Whether `pc` lies inside the program's region.
    pub fn contains(&self, pc: u64) -> bool {
        pc >= self.base && pc - self.base < self.len
    }

    /// Whether this program was built over exactly `region` (the same live object).
    pub fn is_over(&self, region: &Arc<dyn MemoryRegion>) -> bool {
        Arc::as_ptr(region).cast::<u8>() as usize == self.region_id
            && self.region.strong_count() > 0
    }

    /// The region, if it is still alive.
    pub fn region(&self) -> Option<Arc<dyn MemoryRegion>> {
        self.region.upgrade()
    }

    /// Instructions of the block entered at `pc` that belong to fused runs (see
    /// `valu::jit`): 0 when fusion is off, the host cannot compile runs, or `pc` is
    /// not a valid code address. For tests and diagnostics.
    pub fn fused_instructions(&self, pc: u64) -> usize {
        #[cfg(target_arch = "x86_64")]
        if let Ok(block) = self.block_hinted(pc, &mut None) {
            // Entries some run covers (the rest of a run after a FLAT access is a run
            // too, inside it).
            let mut covered = 0;
            let mut end = 0;
            for (i, e) in block.entries.iter().enumerate() {
                if let Some(f) = &e.fused {
                    let stop = i + f.len() as usize;
                    if stop > end {
                        covered += stop - i.max(end);
                        end = stop;
                    }
                }
            }
            return covered;
        }
        let _ = pc;
        0
    }

    /// The instruction at `pc` and its length in bytes, decoding it on first use.
    ///
    /// # Errors
    /// [`Fault::BadPc`] if `pc` is misaligned or outside the region (or the region is
    /// gone); [`Fault::Illegal`] if the words there do not decode.
    pub fn fetch(&self, pc: u64) -> Result<(&Instruction, u64), Fault> {
        let block = self.block_hinted(pc, &mut None)?;
        match (block.entries.first().zip(block.insts.first()), &block.tail) {
            (Some((e, inst)), _) => Ok((inst, e.next - e.pc)),
            (None, Some(err)) => Err(Fault::Illegal((**err).clone())),
            // A block always holds an entry or the reason it has none.
            (None, None) => Err(Fault::BadPc { pc }),
        }
    }

    /// The block entered at `pc`, decoding it on first use; `hint` remembers the page
    /// of block slots last used (a wave's loop stays in one page), sparing its lookup.
    ///
    /// # Errors
    /// [`Fault::BadPc`] if `pc` is misaligned or outside the region. Decode errors are
    /// part of the block (its tail).
    #[inline]
    pub(crate) fn block_hinted<'p>(
        &'p self,
        pc: u64,
        hint: &mut Option<PageHint<'p>>,
    ) -> Result<&'p Arc<Block>, Fault> {
        let off = pc.wrapping_sub(self.base);
        if off >= self.len || off & 3 != 0 {
            return Err(Fault::BadPc { pc });
        }
        let idx = (off / 4) as usize;
        let number = idx / PAGE_DWORDS;
        let page = match hint {
            Some(h) if h.number == number => h.slots,
            _ => {
                let slots = self.pages[number]
                    .get_or_init(|| (0..PAGE_DWORDS).map(|_| OnceLock::new()).collect());
                *hint = Some(PageHint { number, slots });
                slots
            }
        };
        Ok(page[idx % PAGE_DWORDS].get_or_init(|| Arc::new(self.build_block(pc))))
    }

    /// Decodes the block starting at `pc` (inside the region, dword aligned).
    #[cold]
    fn build_block(&self, pc: u64) -> Block {
        let Some(region) = self.region.upgrade() else {
            return Block {
                entries: Box::new([]),
                insts: Box::new([]),
                tail: Some(Box::new(DecodeError::Truncated {
                    pc,
                    needed: 1,
                    available: 0,
                })),
                shared_stores: 0,
                #[cfg(target_arch = "x86_64")]
                _code: None,
            };
        };
        let mut entries = Vec::new();
        let mut insts = Vec::new();
        let mut tail = None;
        let mut at = pc;
        loop {
            let off = at - self.base;
            match decode_at(region.as_ref(), at, off) {
                Ok((inst, dwords)) => {
                    let next = at + 4 * dwords as u64;
                    let last = ends_block(&inst);
                    let run = Run::of(&inst, next);
                    entries.push(Entry {
                        run,
                        pc: at,
                        next,
                        #[cfg(target_arch = "x86_64")]
                        fused: None,
                    });
                    insts.push(inst);
                    at = next;
                    if last || entries.len() >= BLOCK_CAP || next - self.base >= self.len {
                        break;
                    }
                }
                Err(e) => {
                    tail = Some(Box::new(e));
                    break;
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        let code = match self.fuse {
            true => fuse_runs(&mut entries, &insts, self.wide),
            false => None,
        };
        let shared_stores = insts
            .iter()
            .enumerate()
            .filter(|(k, i)| *k < 128 && stores_shared(i))
            .fold(0u128, |m, (k, _)| m | 1 << k);
        Block {
            entries: entries.into_boxed_slice(),
            insts: insts.into_boxed_slice(),
            tail,
            shared_stores,
            #[cfg(target_arch = "x86_64")]
            _code: code,
        }
    }
}

/// Compiles the block's runs of integer VALU and scalar plans and attaches each to the entry
/// of its first instruction (a block whose code cannot be compiled keeps none); the code,
/// which the block must keep with the entries. Its code uses AVX-512 only if `wide`
/// (and the host has it).
#[cfg(target_arch = "x86_64")]
fn fuse_runs(
    entries: &mut [Entry],
    insts: &[Instruction],
    wide: bool,
) -> Option<crate::valu::Code> {
    let runs = crate::valu::find_runs(
        entries
            .iter()
            .zip(insts)
            .map(|(e, inst)| e.run.slot(inst, e.next)),
        wide,
    );
    let (mut code, fused) = crate::valu::compile_runs(&runs)?;
    if crate::perf_map::enabled() {
        map_runs(&code, &fused, entries, insts);
    }
    for (at, f) in fused {
        if let Some(e) = entries.get_mut(at) {
            e.fused = Some(f);
        }
    }
    if let Some(first) = entries.first() {
        code.set_head(first.fused.as_ref(), first.pc, entries.len());
    }
    Some(code)
}

/// Writes a block's compiled runs to the perf map ([`crate::perf_map`]): each run's
/// code from its entry point to the next run's (`compile_runs` emits them in
/// order), the last to the end of the block's code; named by the PC of its first
/// instruction, its length and its first (at most 4) mnemonics.
#[cfg(target_arch = "x86_64")]
fn map_runs(
    code: &crate::valu::Code,
    fused: &[(usize, crate::valu::Fused)],
    entries: &[Entry],
    insts: &[Instruction],
) {
    let end = code.bytes().as_ptr() as usize + code.bytes().len();
    for (k, (at, f)) in fused.iter().enumerate() {
        let start = f.entry();
        let next = fused.get(k + 1).map_or(end, |(_, g)| g.entry());
        let pc = entries.get(*at).map_or(0, |e| e.pc);
        let shown = (f.len() as usize).min(4);
        let first: Vec<_> = insts
            .iter()
            .skip(*at)
            .take(shown)
            .map(|i| i.mnemonic())
            .collect();
        let name = format!("gfx90a run {pc:#x} +{}: {}", f.len(), first.join(" "));
        crate::perf_map::record(start, next.saturating_sub(start), &name);
    }
}

/// Whether `inst` may store to memory other waves of the workgroup read: a DS
/// instruction with data (writes and atomics; `ds_permute`/`ds_bpermute` too,
/// which only read), or a FLAT (not GLOBAL or SCRATCH) store or atomic, through
/// which the device runtime writes its shared state (generic pointers).
pub(crate) fn stores_shared(inst: &Instruction) -> bool {
    match inst {
        Instruction::Ds(i) => i.data0.is_some(),
        Instruction::Flat(i) => i.seg == crate::inst::Segment::Flat && i.data.is_some(),
        _ => false,
    }
}

/// Decodes the instruction at `pc`, byte `off` of `region` (its dwords as far as the
/// region has them).
fn decode_at(
    region: &dyn MemoryRegion,
    pc: u64,
    off: u64,
) -> Result<(Instruction, usize), DecodeError> {
    let mut words = [0u32; 2];
    let avail = if read_region_dwords(region, off, &mut words).is_some() {
        2
    } else if read_region_dwords(region, off, &mut words[..1]).is_some() {
        1
    } else {
        0
    };
    decode(&words[..avail], pc)
}
