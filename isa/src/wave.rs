//! Wave state and the execution loop.
//!
//! A [`Wave`] holds the architectural state of one wavefront of 64 lanes: the scalar
//! register file indexed by operand code (so `vcc`, `exec`, `m0`, `flat_scratch`, the
//! TTMPs and the SGPRs are one array), SCC, the vector file as `[register][lane]`
//! arrays, and the PC. [`Wave::run`] executes pre-decoded instructions from a
//! [`Program`], a straight-line block at a time (one lookup per block entered, none
//! when a loop goes back to one of the last few blocks it entered), until the wave ends,
//! reaches `s_barrier`, yields (`s_sleep`, or its slice of `WaveContext::yield_after`
//! instructions is spent: it stops before the next one, wherever that is) or faults.
//! Faults, yields and the trace remain per instruction; the budget and the slice are
//! compared once per block when the whole block fits in both (else per instruction),
//! and the counter is written when the wave leaves the block.
//! Hot instruction forms also carry a plan resolved at decode time (register-file
//! indices and constants instead of operands, see `program::Run`), which the loop runs
//! instead of the general executor when the wave's MODE allows it. Hot scalar forms
//! (SOP2/SOPC arithmetic and compares, moves, `s_*_saveexec_b64`, `s_waitcnt`/`s_nop`,
//! branches, `s_barrier`, `s_endpgm`) carry a `salu::ScalarPlan`, always run instead
//! of `Wave::step`; `step` itself only dispatches, every format out of line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::arch::AGPR_BASE;
use crate::error::Fault;
use crate::generated::opcodes::SoppOp;
use crate::inst::Instruction;
use crate::operand::Operand;
use crate::program::{Block, BlockCache, Program, Run};
use crate::state::sopp_falls_through;
use crate::state::unsupported;
use crate::state::Flow;
use crate::state::Planned;
use crate::state::ScalarFlow;
use crate::state::WaveContext;
use crate::state::WaveExit;
use crate::state::WaveState;
#[cfg(target_arch = "x86_64")]
use crate::valu::Ran;

/// The code objects a wave may reach besides the one its kernel started in: on
/// hardware a wave fetches from any address its agent maps, so a call through a
/// pointer into another loaded code object (a shared library's device image, as in
/// LLVM's `offload/test/offloading/shared_lib_fp_mapping.c`) runs there. The run
/// loop asks only when the PC leaves its program; the kernel's own code is reached
/// through the block cache as before.
pub trait CodeObjects: Sync {
    /// The program of the loaded code object containing `pc`, if there is one the
    /// wave may run (else the PC is a bad one, [`Fault::BadPc`]).
    fn program_at(&self, pc: u64) -> Option<Arc<Program>>;
}

/// Where a wave's turn ends when it shares its host thread with the other waves
/// of its workgroup ([`Wave::run_cached`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// After the `WaveContext::yield_after` instructions of the call.
    Slice,
    /// Also before a store other waves may read (a DS write or atomic, a FLAT
    /// store or atomic) once the wave has run more than this many instructions: the scheduler's count for the slowest of the other waves, so that no
    /// wave writes shared memory before the waves behind it caught up, as the
    /// waves of a GPU's workgroup, issuing together, read before any of them
    /// stores. No fused run covers such a store.
    StoresUntil(u64),
}

/// A wavefront: its [`WaveState`] (registers and the executors' caches, reached
/// through `Deref`) and the blocks it entered when it runs with its own cache.
#[derive(Default)]
pub struct Wave {
    state: WaveState,
    /// The blocks this wave entered when it runs with its own cache ([`Wave::run`];
    /// made at its first run, taken out while it runs).
    blocks: Option<BlockCache>,
}

impl std::ops::Deref for Wave {
    type Target = WaveState;

    fn deref(&self) -> &WaveState {
        &self.state
    }
}

impl std::ops::DerefMut for Wave {
    fn deref_mut(&mut self) -> &mut WaveState {
        &mut self.state
    }
}

impl Wave {
    /// A wave with all registers zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs the wave until `s_endpgm`, `s_barrier`, `s_sleep` or a fault.
    ///
    /// # Errors
    /// A [`Fault`] naming the instruction's PC: memory faults, unsupported or illegal
    /// instructions, `s_trap`, the instruction budget, or an external stop.
    pub fn run(&mut self, program: &Program, ctx: &mut WaveContext<'_>) -> Result<WaveExit, Fault> {
        // The block cache is moved out while the wave runs (the blocks are borrowed
        // from it while the registers change).
        // (The inner loop returns a fault boxed: its result is then two words, returned
        // in registers; the 64-byte result is written once, here, in place. Staged
        // through the stack, its copy read back the small stores that wrote it, a
        // store-forwarding stall at every exit, a barrier included.)
        let mut blocks = self.blocks.take().unwrap_or_default();
        let exit = self.run_blocks(program, ctx, &mut blocks, None, Turn::Slice);
        self.blocks = Some(blocks);
        match exit {
            Ok(x) => Ok(x),
            Err(f) => Err(*f),
        }
    }

    /// Whether `self` and `other` hold the same stride history (see `stride`; no
    /// state a program can observe). For tests that compare a fused run's
    /// bookkeeping with the interpreter's.
    #[doc(hidden)]
    pub fn same_strides(&self, other: &Wave) -> bool {
        self.strides == other.strides
    }

    /// [`run`](Self::run), entering blocks through `blocks` rather than the wave's own
    /// cache, running code of the other code objects `others` gives when the PC
    /// leaves `program` (see [`CodeObjects`]; `None`: such a PC is a bad one), and
    /// ending the turn as `turn` says. The cache: the cache of the thread that runs the wave, shared by the waves it runs
    /// one after another (a workgroup's waves take turns at every barrier and every
    /// deferred gather). One cache, its lines touched by every wave, stays in the
    /// host's L1 where one per wave did not: under LLVM 16's team reduction, with a
    /// gather's scattered lines passing through, a wave's own cache missed at about
    /// every block entry (callgrind's cache model).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    #[inline]
    pub fn run_cached(
        &mut self,
        program: &Program,
        ctx: &mut WaveContext<'_>,
        blocks: &mut BlockCache,
        (others, turn): (Option<&dyn CodeObjects>, Turn),
    ) -> Result<WaveExit, Fault> {
        match self.run_blocks(program, ctx, blocks, others, turn) {
            Ok(x) => Ok(x),
            Err(f) => Err(*f),
        }
    }

    /// [`run`](Self::run), entering blocks through `blocks`.
    fn run_blocks(
        &mut self,
        program: &Program,
        ctx: &mut WaveContext<'_>,
        blocks: &mut BlockCache,
        others: Option<&dyn CodeObjects>,
        turn: Turn,
    ) -> Result<WaveExit, Box<Fault>> {
        // The wave yields before its instruction number `yield_at + 1`, wherever it
        // is (at least one instruction runs per call).
        let yield_at = self.instructions.saturating_add(ctx.yield_after.max(1));
        let limit = ctx.max_instructions.min(yield_at);
        let store_until = match turn {
            Turn::Slice => u64::MAX,
            Turn::StoresUntil(n) => n,
        };
        let gated = store_until != u64::MAX;
        let trace = tracing();
        #[cfg(target_arch = "x86_64")]
        let mut env = crate::valu::RunEnv::of(ctx);
        // The other code object the wave last ran in (see `CodeObjects`).
        let mut foreign: Option<Arc<Program>> = None;
        // The result of the run that a fused run went on in, through taken branches
        // (`valu::Exit`) or fall-throughs (`valu::FallThrough`): the run of the
        // entry the wave goes on at (`resume` in another block, `next` in this one).
        #[cfg(target_arch = "x86_64")]
        let mut entered: Option<Ran> = None;
        // The run (its block's first PC, its entry) whose taken branch after `n`
        // entries may be linked to the next block's run, when that has one.
        #[cfg(target_arch = "x86_64")]
        let mut unlinked: Option<(u64, usize, usize)> = None;
        // The entry of the next block where the wave goes on (that of the run that
        // `entered` is the result of).
        let mut resume = 0;
        'blocks: loop {
            let start = self.pc;
            let (block, own) = match blocks.get(program, start) {
                Ok(b) => {
                    #[cfg(target_arch = "x86_64")]
                    if let Some((from, k, n)) = unlinked.take() {
                        if let Ok(f) = program.block_hinted(from, &mut None) {
                            f.link(k, n, b, program);
                        }
                    }
                    (b, true)
                }
                Err(f) => match foreign_block(program, others, &mut foreign, start) {
                    Some(b) => (b, false),
                    None => return Err(Box::new(f)),
                },
            };
            #[cfg(target_arch = "x86_64")]
            {
                unlinked = None;
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = own;
            // The counter is written only when the wave leaves the block or traces:
            // entry k is instruction `before + k + 1`. When the whole block fits in the
            // budget and the slice, no entry compares them.
            let before = self.instructions;
            let in_budget = before.saturating_add(block.entries.len() as u64) <= limit;
            // The entries a held wave must check (stores to the LDS): no fused run
            // covers them, and the interpreted entries compare (`fits` false).
            let stores = match gated {
                true => block.shared_stores,
                false => 0,
            };
            let fits = in_budget && stores == 0;
            // Instructions the fused runs of this block may run from its start through
            // linked blocks and fall-throughs (none while the wave's stores are gated:
            // 0 keeps both out of runs holding a held store).
            #[cfg(target_arch = "x86_64")]
            let left = match gated {
                true => 0,
                false => limit.saturating_sub(before),
            };
            // `self.pc` is written only when the wave leaves the block (no instruction
            // reads it): on a jump, an exit, a fault, or after the last entry.
            // Fused runs (straight VALU and scalar runs compiled to host code) run only
            // when no entry of the block needs the budget compared or a trace line.
            #[cfg(target_arch = "x86_64")]
            let fused_ok = in_budget && !trace;
            let mut next = std::mem::take(&mut resume);
            'entries: while let Some(e) = block.entries.get(next) {
                let k = next;
                next += 1;
                // The entry whose control flow is taken below (the last one of a
                // fused run that jumped), and that flow. (A fault returns at once: the
                // flow stays a small value.)
                let (e, flow) = 'flow: {
                    #[cfg(target_arch = "x86_64")]
                    let came = entered.take();
                    #[cfg(target_arch = "x86_64")]
                    if let Some(f) = e.fused.as_ref().filter(|f| {
                        came.is_some()
                            || fused_ok && (stores == 0 || clear(stores, k, f.len() as usize))
                    }) {
                        let ran = match came {
                            Some(r) => r,
                            None => {
                                let left = left.saturating_sub(k as u64);
                                crate::valu::run_fused(self, f, ctx, &mut env, left)
                            }
                        };
                        if let Some(c) = env.linked() {
                            // The run went on in other runs: the last one's result
                            // is its own first entry's.
                            self.fused_instructions += c.ran;
                            entered = Some(ran);
                            let Some(pc) = c.block else {
                                // Fell through in this block only.
                                next = c.entry;
                                continue 'entries;
                            };
                            // Taken branches went on in other blocks: `before` of
                            // the last run's block counts the instructions before
                            // its first entry.
                            self.instructions = before + k as u64 + c.ran - c.entry as u64;
                            self.pc = pc;
                            resume = c.entry;
                            continue 'blocks;
                        }
                        match ran {
                            // Nothing ran: the interpreter runs the entry.
                            Ran::Stopped(0) => {}
                            Ran::Stopped(n) => {
                                self.fused_instructions += n as u64;
                                next = k + n;
                                continue 'entries;
                            }
                            Ran::Next => {
                                self.fused_instructions += u64::from(f.len());
                                next = k + f.len() as usize;
                                continue 'entries;
                            }
                            Ran::Deferred(n) => {
                                // As a deferred plan below: the wave resumes at
                                // the gather.
                                self.fused_instructions += n as u64;
                                self.instructions = before + (k + n) as u64;
                                self.pc = block.entries.get(k + n).map_or(e.pc, |g| g.pc);
                                return Ok(WaveExit::Yield);
                            }
                            Ran::AtBarrier(n) => {
                                // The run's last entry, an `s_barrier`, ran: the
                                // wave waits after it, as for an interpreted one.
                                self.fused_instructions += n as u64;
                                next = k + n;
                                let last = block.entries.get(next - 1).unwrap_or(e);
                                break 'flow (last, Flow::Exit(WaveExit::Barrier));
                            }
                            Ran::Jumped(n) | Ran::JumpedTo(n) => {
                                self.fused_instructions += n as u64;
                                if own && env.exit_unlinked() && block.unlinked(k, n) {
                                    unlinked = Some((start, k, n));
                                }
                                next = k + n;
                                // The run's last entry that ran (a branch, or an
                                // `s_setpc_b64`/`s_swappc_b64` to the address it read)
                                // jumped.
                                let last = block.entries.get(next - 1).unwrap_or(e);
                                let flow = match ran {
                                    Ran::JumpedTo(_) => Flow::Jump(env.target()),
                                    _ => last.run.flow(ScalarFlow::Jump),
                                };
                                break 'flow (last, flow);
                            }
                        }
                    }
                    let count = before + k as u64 + 1;
                    if !fits
                        && (count > yield_at
                            || (stores >> k.min(127)) & 1 == 1
                                && count - 1 > store_until
                                && stores_shared(block.insts.get(k)))
                    {
                        // The turn is over: the wave resumes at this entry.
                        self.instructions = count - 1;
                        self.pc = e.pc;
                        return Ok(WaveExit::Yield);
                    }
                    if !fits && count > ctx.max_instructions {
                        self.instructions = count;
                        self.pc = e.pc;
                        return Err(Box::new(Fault::InstructionLimit {
                            limit: ctx.max_instructions,
                            pc: e.pc,
                        }));
                    }
                    // Planned instructions that fall through go straight to the next
                    // entry (unless traced).
                    let flow = match self.run_planned(&e.run, ctx) {
                        Planned::Ran(ScalarFlow::Next) if !trace => continue 'entries,
                        Planned::Ran(f) => Ok(e.run.flow(f)),
                        Planned::Deferred => {
                            // Not executed: the wave resumes at it.
                            self.instructions = count - 1;
                            self.pc = e.pc;
                            return Ok(WaveExit::Yield);
                        }
                        Planned::Declined => match block.insts.get(k) {
                            Some(inst) => self.step(inst, e.pc, e.next, ctx),
                            None => Err(Fault::BadPc { pc: e.pc }),
                        },
                    };
                    if trace {
                        if let Some(inst) = block.insts.get(k) {
                            self.trace_line(inst, e.pc, flow.as_ref().err());
                        }
                    }
                    match flow {
                        Ok(flow) => (e, flow),
                        Err(f) => {
                            self.instructions = count;
                            self.pc = e.pc;
                            return Err(Box::new(f));
                        }
                    }
                };
                let count = before + next as u64;
                self.instructions = count;
                match flow {
                    Flow::Next => {}
                    Flow::Jump(target) => {
                        self.pc = target;
                        if target <= e.pc {
                            if let Some(stop) = ctx.stop {
                                if stop.load(Ordering::Relaxed) {
                                    return Err(Box::new(Fault::Aborted { pc: e.pc }));
                                }
                            }
                        }
                        continue 'blocks;
                    }
                    Flow::Exit(x) => {
                        self.pc = e.next;
                        return Ok(x);
                    }
                }
            }
            self.instructions = before + block.entries.len() as u64;
            self.pc = block.end(start);
            if let Some(err) = &block.tail {
                return Err(Box::new(Fault::Illegal((**err).clone())));
            }
        }
    }

    /// Runs the plan of an entry (see [`Planned`]).
    #[inline(always)]
    pub(crate) fn run_planned(&mut self, run: &Run, ctx: &mut WaveContext<'_>) -> Planned {
        let ran = match run {
            Run::Scalar(s) => return Planned::Ran(self.run_scalar(s)),
            Run::Int(p) => crate::valu::run_int_plan(self, p),
            Run::Lds(p) => crate::lds::run_lds_plan(self, p, ctx.lds),
            Run::PkF32(p) => crate::valu::run_pk_plan(self, p),
            Run::Flat(p) => return self.run_flat_plan(p, ctx, true),
            Run::Scratch(_) | Run::Lane(_) | Run::General => false,
        };
        Planned::of(ran)
    }
}

/// Whether entries `k..k + len` have no bit in `mask`.
#[inline(never)]
fn clear(mask: u128, k: usize, len: usize) -> bool {
    let run = if len >= 128 {
        u128::MAX
    } else {
        (1u128 << len) - 1
    };
    k >= 128 || mask & (run << k) == 0
}

/// Whether `inst` may store to the LDS (see [`Turn::StoresUntil`]).
#[inline(never)]
fn stores_shared(inst: Option<&Instruction>) -> bool {
    inst.is_some_and(crate::program::stores_shared)
}

/// The block at `pc` of another code object than `program` (the one in `foreign`,
/// or the one `others` finds, kept in `foreign` for the next block); `None` when `pc`
/// lies in `program` (its fault stands) or in no code object.
#[cold]
#[inline(never)]
fn foreign_block<'f>(
    program: &Program,
    others: Option<&dyn CodeObjects>,
    foreign: &'f mut Option<Arc<Program>>,
    pc: u64,
) -> Option<&'f Block> {
    if program.contains(pc) {
        return None;
    }
    if !foreign.as_ref().is_some_and(|p| p.contains(pc)) {
        *foreign = others?.program_at(pc);
    }
    let p: &'f Program = foreign.as_ref()?;
    p.block_hinted(pc, &mut None).ok().map(|b| &**b)
}

impl WaveState {
    /// Executes one decoded instruction at `pc` (`next` = address of the following one).
    pub(crate) fn step(
        &mut self,
        inst: &Instruction,
        pc: u64,
        next: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<Flow, Fault> {
        // Every arm calls out of line, so that this dispatch keeps a small frame (the
        // executors' frames are paid only by the instructions that use them).
        match inst {
            Instruction::Valu(i) => self.step_valu(i, pc, ctx),
            Instruction::Flat(i) => self.exec_flat(i, pc, ctx).map(|()| Flow::Next),
            Instruction::Ds(i) => self.exec_ds(i, pc, ctx).map(|()| Flow::Next),
            Instruction::Mubuf(i) => self.exec_mubuf(i, pc, ctx).map(|()| Flow::Next),
            Instruction::Smem(i) => self.step_smem(i, pc, ctx),
            Instruction::Vop3p(i) => self.step_vop3p(i, pc, ctx),
            Instruction::Sopp(_)
            | Instruction::Sop1(_)
            | Instruction::Sop2(_)
            | Instruction::Sopc(_)
            | Instruction::Sopk(_) => self.step_scalar(inst, pc, next, ctx),
            Instruction::Mtbuf(_) => Err(unsupported(inst, pc, "MTBUF is not executed yet")),
        }
    }

    /// [`step`](Self::step) for VOP1/VOP2/VOPC/VOP3 (those without a usable plan).
    #[inline(never)]
    fn step_valu(
        &mut self,
        i: &crate::inst::Valu,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<Flow, Fault> {
        self.exec_valu(i, pc, ctx).map(|()| Flow::Next)
    }

    /// [`step`](Self::step) for VOP3P.
    #[inline(never)]
    fn step_vop3p(
        &mut self,
        i: &crate::inst::Vop3p,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<Flow, Fault> {
        self.exec_vop3p(i, pc, ctx).map(|()| Flow::Next)
    }

    /// [`step`](Self::step) for SMEM.
    #[inline(never)]
    fn step_smem(
        &mut self,
        i: &crate::inst::Smem,
        pc: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<Flow, Fault> {
        self.exec_smem(i, pc, ctx).map(|()| Flow::Next)
    }

    /// [`step`](Self::step) for the scalar ALU and program control formats (the hot
    /// forms normally run as scalar plans instead, see `salu::ScalarPlan`).
    #[inline(never)]
    fn step_scalar(
        &mut self,
        inst: &Instruction,
        pc: u64,
        next: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<Flow, Fault> {
        match inst {
            Instruction::Sopp(i) => self.exec_sopp(i, pc, next),
            Instruction::Sop1(i) => self.exec_sop1(i, pc, next, ctx),
            Instruction::Sop2(i) => self.exec_sop2(i, pc, ctx).map(|()| Flow::Next),
            Instruction::Sopc(i) => self.exec_sopc(i, pc, ctx).map(|()| Flow::Next),
            Instruction::Sopk(i) => self.exec_sopk(i, pc, next, ctx),
            _ => Err(unsupported(inst, pc, "not a scalar instruction")),
        }
    }

    fn exec_sopp(&mut self, i: &crate::inst::Sopp, pc: u64, next: u64) -> Result<Flow, Fault> {
        let target = || next.wrapping_add_signed(4 * i64::from(i.simm16 as i16));
        let taken = |c: bool| if c { Flow::Jump(target()) } else { Flow::Next };
        Ok(match i.op {
            op if sopp_falls_through(op) => Flow::Next,
            SoppOp::SEndpgm => Flow::Exit(WaveExit::Ended),
            SoppOp::SSleep => Flow::Exit(WaveExit::Yield),
            // The message is dropped and the wave halts for good: it has ended.
            SoppOp::SSendmsghalt | SoppOp::SEndpgmSaved | SoppOp::SEndpgmOrderedPsDone => {
                Flow::Exit(WaveExit::Ended)
            }
            // s_sethalt 1 halts the wave until the host resumes it, which never happens
            // here: it ends; s_sethalt 0 (resume) is a no-op.
            SoppOp::SSethalt => {
                if i.simm16 & 1 == 1 {
                    Flow::Exit(WaveExit::Ended)
                } else {
                    Flow::Next
                }
            }
            // No host fence: see `WaveExit::Barrier`.
            SoppOp::SBarrier => Flow::Exit(WaveExit::Barrier),
            SoppOp::STrap => {
                let trap_id = (i.simm16 & 0xFF) as u8;
                // Trap 3 is llvm.debugtrap: a no-op without a debugger (LLVM's
                // `AMDGPUUsage.rst`, "Trap Handler ABI").
                if trap_id == 3 {
                    Flow::Next
                } else {
                    return Err(Fault::Trap { pc, trap_id });
                }
            }
            SoppOp::SBranch => Flow::Jump(target()),
            SoppOp::SCbranchScc0 => taken(!self.scc),
            SoppOp::SCbranchScc1 => taken(self.scc),
            SoppOp::SCbranchVccz => taken(self.vcc() == 0),
            SoppOp::SCbranchVccnz => taken(self.vcc() != 0),
            SoppOp::SCbranchExecz => taken(self.exec() == 0),
            SoppOp::SCbranchExecnz => taken(self.exec() != 0),
            // No debugger is attached: the debug branches are never taken.
            SoppOp::SCbranchCdbgsys
            | SoppOp::SCbranchCdbguser
            | SoppOp::SCbranchCdbgsysOrUser
            | SoppOp::SCbranchCdbgsysAndUser => Flow::Next,
            _ => {
                return Err(unsupported(
                    &Instruction::Sopp(i.clone()),
                    pc,
                    "this SOPP instruction is not executed yet",
                ))
            }
        })
    }
}

thread_local! {
    /// Whether waves run by this thread print an execution trace (see [`set_trace`]).
    static TRACE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Turns the execution trace of waves run on the calling thread on or off. When on,
/// [`Wave::run`] prints one line per instruction to stderr: hardware id, PC, the
/// instruction, EXEC, SCC and the destination's value (scalar) or its value in the
/// first active lane (vector). A debugging aid; off by default.
pub fn set_trace(on: bool) {
    if on {
        TRACED.store(true, Ordering::Relaxed);
    }
    TRACE.with(|t| t.set(on));
}

/// Whether any thread ever turned its trace on: until then [`Wave::run`] skips the
/// thread-local read (in the shared library a call to `__tls_get_addr` at every
/// entry, and waves enter `run` again after every `s_barrier`).
static TRACED: AtomicBool = AtomicBool::new(false);

/// Whether waves run by this thread trace (see [`set_trace`]).
#[inline]
fn tracing() -> bool {
    TRACED.load(Ordering::Relaxed) && thread_traces()
}

/// The calling thread's trace flag. Out of line: inlined, the compiler computes
/// the thread-local's address (the `__tls_get_addr` call) before the test of
/// `TRACED`, whatever it says.
#[cold]
#[inline(never)]
fn thread_traces() -> bool {
    TRACE.with(|t| t.get())
}

/// The destination operand of an instruction, for the trace.
fn destination(inst: &Instruction) -> Option<Operand> {
    match inst {
        Instruction::Sop2(i) => Some(i.sdst),
        Instruction::Sop1(i) => i.sdst,
        Instruction::Sopk(i) => i.sdst,
        Instruction::Smem(i) => i.sdata,
        Instruction::Valu(i) => i.vdst,
        Instruction::Vop3p(i) => i.vdst,
        Instruction::Ds(i) => i.vdst,
        Instruction::Flat(i) => i.vdst,
        Instruction::Mubuf(i) => i.vdata,
        Instruction::Mtbuf(i) => i.vdata,
        Instruction::Sopc(_) | Instruction::Sopp(_) => None,
    }
}

impl Wave {
    /// Prints the trace line of `inst` at `pc` (after it executed) to stderr.
    fn trace_line(&self, inst: &Instruction, pc: u64, fault: Option<&Fault>) {
        let line = self.trace_text(inst, pc, fault);
        #[cfg(test)]
        block_tests::TRACE_LINES.with(|t| t.borrow_mut().push(line.clone()));
        eprintln!("{line}");
    }

    /// The trace line of `inst` at `pc` (see [`set_trace`]).
    fn trace_text(&self, inst: &Instruction, pc: u64, fault: Option<&Fault>) -> String {
        let exec = self.exec();
        let lane = if exec == 0 {
            0
        } else {
            exec.trailing_zeros() as usize
        };
        let value = match destination(inst) {
            Some(op @ Operand::Sreg { count, .. }) => {
                let mut v = format!("{op}=");
                for k in 0..count.min(4) {
                    if let Operand::Sreg { code, .. } = op {
                        let c = usize::from(code) + usize::from(k);
                        v.push_str(&format!("{:08x} ", self.sgpr.get(c).copied().unwrap_or(0)));
                    }
                }
                v
            }
            Some(op @ (Operand::Vgpr { index, count } | Operand::Agpr { index, count })) => {
                let base = if matches!(op, Operand::Agpr { .. }) {
                    AGPR_BASE
                } else {
                    0
                };
                let mut v = format!("{op}[{lane}]=");
                for k in 0..usize::from(count.min(4)) {
                    let r = base + usize::from(index) + k;
                    v.push_str(&format!("{:08x} ", self.vgpr.get(r).map_or(0, |x| x[lane])));
                }
                v
            }
            _ => String::new(),
        };
        format!(
            "[hw{} {:#x}] {:<48} exec={exec:016x} scc={} {value}{}",
            self.hw_id,
            pc,
            inst.to_string(),
            u8::from(self.scc),
            fault.map(|f| format!(" FAULT {f}")).unwrap_or_default()
        )
    }
}

/// Scaffolding for the executor's unit tests: a global memory of host regions, a
/// dummy program, an LDS, and single-instruction execution.
#[cfg(test)]
pub(crate) mod testutil {
    use std::sync::{Arc, Mutex};

    use super::Wave;
    use crate::error::Fault;
    use crate::inst::Instruction;
    use crate::memory::{GlobalMemory, HostRegion, MemoryRegion};
    use crate::operand::Operand;
    use crate::state::{Apertures, Flow, WaveContext};

    /// A list of host regions.
    #[derive(Default)]
    pub(crate) struct Mem(pub(crate) Mutex<Vec<Arc<HostRegion>>>);

    impl GlobalMemory for Mem {
        fn region(&self, addr: u64) -> Option<Arc<dyn MemoryRegion>> {
            self.0
                .lock()
                .ok()?
                .iter()
                .find(|r| addr >= r.device_base() && addr - r.device_base() < r.len())
                .map(|r| r.clone() as Arc<dyn MemoryRegion>)
        }
    }

    /// Memory, a program to satisfy the context, and an LDS.
    pub(crate) struct Harness {
        pub(crate) mem: Arc<Mem>,
        pub(crate) lds: Vec<u8>,
    }

    impl Harness {
        pub(crate) fn new(lds: usize) -> Self {
            Self {
                mem: Arc::new(Mem::default()),
                lds: vec![0; lds],
            }
        }

        /// A zeroed global region of `len` bytes.
        pub(crate) fn alloc(&self, len: u64) -> Arc<HostRegion> {
            let r = Arc::new(HostRegion::zeroed(len));
            self.mem.0.lock().unwrap().push(r.clone());
            r
        }

        /// Executes `inst` once on `w` (PC 0x1000, next 0x1008).
        pub(crate) fn exec(&mut self, w: &mut Wave, inst: &Instruction) -> Result<Flow, Fault> {
            let mem = self.mem.clone();
            let mut ctx = WaveContext {
                memory: mem.as_ref(),
                lds: &mut self.lds,
                apertures: Apertures::KFD,
                stop: None,
                max_instructions: u64::MAX,
                yield_after: u64::MAX,
            };
            w.step(inst, 0x1000, 0x1008, &mut ctx)
        }
    }

    /// A wave with every lane active.
    pub(crate) fn wave() -> Wave {
        let mut w = Wave::new();
        w.set_exec(u64::MAX);
        w
    }

    /// `s[i]` (or `s[i:i+n-1]`).
    pub(crate) fn s(i: u8, n: u8) -> Operand {
        Operand::Sreg { code: i, count: n }
    }

    /// `v[i]` (or `v[i:i+n-1]`).
    pub(crate) fn v(i: u8, n: u8) -> Operand {
        Operand::Vgpr { index: i, count: n }
    }

    /// A 32-bit literal operand.
    pub(crate) fn lit(x: u32) -> Operand {
        Operand::Literal { value: x, count: 1 }
    }

    /// Reads `n` bytes at byte `off` of a region.
    pub(crate) fn read(r: &HostRegion, off: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        assert!(r.read_bytes(off, &mut b));
        b
    }

    /// Reads the little-endian u32 at `off`.
    pub(crate) fn read_u32(r: &HostRegion, off: u64) -> u32 {
        let b = read(r, off, 4);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Reads the little-endian u64 at `off`.
    pub(crate) fn read_u64(r: &HostRegion, off: u64) -> u64 {
        let b = read(r, off, 8);
        u64::from_le_bytes(b.try_into().unwrap())
    }
}

/// Block execution against instruction-by-instruction execution: [`Wave::run`] runs
/// cached blocks; `run_stepwise` decodes and executes one instruction at a time
/// straight from the code words (the loop `run` had before blocks). Both must agree
/// on every exit, fault, PC, counter, register and trace line.
#[cfg(test)]
pub(crate) mod block_tests {
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::testutil::Mem;
    use super::{set_trace, Flow, Planned, Wave, WaveContext, WaveExit, TRACE};
    use crate::decode::decode;
    use crate::error::Fault;
    use crate::generated::opcodes::SoppOp;
    use crate::inst::Instruction;
    use crate::memory::{HostRegion, MemoryRegion};
    use crate::program::{Program, Run, BLOCK_CAP};

    thread_local! {
        /// Trace lines printed by this thread's waves (tests only).
        pub(crate) static TRACE_LINES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    /// An instruction budget far above what the test programs execute (a wrong
    /// jump fails the comparison instead of looping for ever).
    const BUDGET: u64 = 10_000;

    /// No gfx90a instruction (SOPP opcode 0x1F; llvm-mc-16 -disassemble: "invalid
    /// instruction encoding").
    const BAD: u32 = 0xBF9F_0000;
    /// `s_endpgm` (encodings from llvm-mc-16 -show-encoding).
    const ENDPGM: u32 = 0xBF81_0000;

    /// A counted loop whose head is in the middle of the block entered at 0, then a
    /// branch over a word that does not decode. Ends with s0 = 5, s1 = 7 * 3^5,
    /// v0 = 15, v1 = 18 after 3 + 5 * 6 + 2 = 35 instructions.
    const LOOP: &[u32] = &[
        0xBE80_0080, // 0x00 s_mov_b32 s0, 0
        0xBE81_0087, // 0x04 s_mov_b32 s1, 7
        0x7E00_0280, // 0x08 v_mov_b32_e32 v0, 0
        0x8000_8100, // 0x0c s_add_u32 s0, s0, 1
        0x6800_0083, // 0x10 v_add_u32_e32 v0, 3, v0
        0xD134_0001, // 0x14 v_add_u32_e64 v1, v0, 3
        0x0001_0700,
        0x9201_8301, // 0x1c s_mul_i32 s1, s1, 3
        0xBF0A_8500, // 0x20 s_cmp_lt_u32 s0, 5
        0xBF85_FFF9, // 0x24 s_cbranch_scc1 -7 (to 0x0c)
        0xBF82_0001, // 0x28 s_branch 1 (to 0x30)
        BAD,         // 0x2c
        ENDPGM,      // 0x30
    ];

    /// A counted loop whose blocks end at barriers: the loop branch (in the block at
    /// 0x10) goes back to the block at 0x04. Ends with s0 = 3, v0 = 1, v1 = 0 + 1 + 2
    /// after 4 barriers and 4 + 2 · 5 + 4 + 1 = 19 instructions.
    const BARRIERS: &[u32] = &[
        0xBE80_0080, // 0x00 s_mov_b32 s0, 0
        0x6802_0200, // 0x04 v_add_u32_e32 v1, s0, v1
        0x8000_8100, // 0x08 s_add_u32 s0, s0, 1
        0xBF8A_0000, // 0x0c s_barrier
        0xBF0A_8300, // 0x10 s_cmp_lt_u32 s0, 3
        0xBF85_FFFB, // 0x14 s_cbranch_scc1 -5 (to 0x04)
        0x6800_0081, // 0x18 v_add_u32_e32 v0, 1, v0
        0xBF8A_0000, // 0x1c s_barrier
        ENDPGM,      // 0x20
    ];

    /// Straight-line code running into a word that does not decode.
    const STRAIGHT: &[u32] = &[
        0xBE80_0080, // s_mov_b32 s0, 0
        0x8000_8100, // s_add_u32 s0, s0, 1
        0x8000_8100, // s_add_u32 s0, s0, 1
        BAD,
        ENDPGM,
    ];

    /// A conditional branch over a word that does not decode (taken iff s2 != 1).
    const COND: &[u32] = &[
        0xBF06_8102, // s_cmp_eq_u32 s2, 1
        0xBF84_0001, // s_cbranch_scc0 1
        BAD,
        ENDPGM,
    ];

    /// Code that runs off the region's end.
    const OFF_END: &[u32] = &[
        0xBE80_0080, // s_mov_b32 s0, 0
        0x8000_8100, // s_add_u32 s0, s0, 1
    ];

    /// `n` times `s_add_u32 s0, s0, 1`, then `s_endpgm`.
    fn long_run(n: usize) -> Vec<u32> {
        let mut w = vec![0x8000_8100; n];
        w.push(ENDPGM);
        w
    }

    /// A code region holding exactly `words`.
    fn region(words: &[u32]) -> Arc<dyn MemoryRegion> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let r = HostRegion::zeroed(bytes.len() as u64);
        assert!(r.write_bytes(0, &bytes));
        Arc::new(r)
    }

    /// The pre-block execution loop: decode at the PC, count, execute, trace.
    fn run_stepwise(
        w: &mut Wave,
        ctx: &mut WaveContext<'_>,
        base: u64,
        words: &[u32],
    ) -> Result<WaveExit, Fault> {
        let yield_at = w.instructions.saturating_add(ctx.yield_after.max(1));
        let trace = TRACE.with(|t| t.get());
        loop {
            let pc = w.pc;
            let off = pc.wrapping_sub(base);
            if off >= 4 * words.len() as u64 || off & 3 != 0 {
                return Err(Fault::BadPc { pc });
            }
            let at = &words[(off / 4) as usize..];
            let (inst, n) = decode(&at[..at.len().min(2)], pc)?;
            let next = pc + 4 * n as u64;
            // Vector plans as the block loop runs them; scalar forms through `step`.
            let run = match Run::of(&inst, next) {
                Run::Scalar(_) => Run::General,
                vector => vector,
            };
            if w.instructions >= yield_at {
                return Ok(WaveExit::Yield);
            }
            w.instructions += 1;
            if w.instructions > ctx.max_instructions {
                return Err(Fault::InstructionLimit {
                    limit: ctx.max_instructions,
                    pc,
                });
            }
            let flow = match w.run_planned(&run, ctx) {
                Planned::Ran(f) => Ok(run.flow(f)),
                Planned::Deferred => {
                    w.instructions -= 1;
                    return Ok(WaveExit::Yield);
                }
                Planned::Declined => w.step(&inst, pc, next, ctx),
            };
            if trace {
                w.trace_line(&inst, pc, flow.as_ref().err());
            }
            match flow? {
                Flow::Next => w.pc = next,
                Flow::Jump(target) => {
                    w.pc = target;
                    if target <= pc {
                        if let Some(stop) = ctx.stop {
                            if stop.load(Ordering::Relaxed) {
                                return Err(Fault::Aborted { pc });
                            }
                        }
                    }
                }
                Flow::Exit(e) => {
                    w.pc = next;
                    return Ok(e);
                }
            }
        }
    }

    /// What a run left behind: each `run` result (resumed after every yield and
    /// barrier), the
    /// PC, the counter, s0..s7, SCC, v0 and v1, and the trace lines.
    type Outcome = (
        Vec<Result<WaveExit, Fault>>,
        u64,
        u64,
        [u32; 8],
        bool,
        Vec<u32>,
        Vec<String>,
    );

    /// Runs a fresh wave (s2 = `s2`) over `words` to its end, resuming it after each
    /// yield and barrier (the wave is its workgroup's only one), with blocks or
    /// stepwise.
    fn outcome(
        words: &[u32],
        s2: u32,
        max_instructions: u64,
        yield_after: u64,
        stop: bool,
        stepwise: bool,
    ) -> Outcome {
        let code = region(words);
        let base = code.device_base();
        let program = Program::new(&code);
        let mem = Mem::default();
        let stop_flag = AtomicBool::new(stop);
        let mut w = Wave::new();
        w.set_exec(u64::MAX);
        w.sgpr[2] = s2;
        w.pc = base;
        TRACE_LINES.with(|t| t.borrow_mut().clear());
        let mut exits = Vec::new();
        // A yield resumes; the loop is bounded by the budget (each run executes).
        for _ in 0..1000 {
            let mut ctx = WaveContext {
                memory: &mem,
                lds: &mut [],
                apertures: crate::state::Apertures::KFD,
                stop: Some(&stop_flag),
                max_instructions,
                yield_after,
            };
            let r = if stepwise {
                run_stepwise(&mut w, &mut ctx, base, words)
            } else {
                w.run(&program, &mut ctx)
            };
            let again = matches!(r, Ok(WaveExit::Yield | WaveExit::Barrier));
            exits.push(r);
            if !again {
                break;
            }
        }
        let mut s = [0u32; 8];
        s.copy_from_slice(&w.sgpr[..8]);
        let v: Vec<u32> = w.vgpr[0].iter().chain(w.vgpr[1].iter()).copied().collect();
        let trace = TRACE_LINES.with(|t| std::mem::take(&mut *t.borrow_mut()));
        // PCs relative to the region, so that the two runs' regions compare.
        let rel = |pc: u64| pc.wrapping_sub(base);
        let exits = exits
            .into_iter()
            .map(|r| r.map_err(|f| relocate(f, base)))
            .collect();
        let trace = trace.into_iter().map(|l| relocate_line(&l, base)).collect();
        (exits, rel(w.pc), w.instructions, s, w.scc, v, trace)
    }

    /// A trace line with its PC (`[hwN 0x...]`) made relative to `base`.
    fn relocate_line(line: &str, base: u64) -> String {
        let (head, rest) = line.split_once("] ").unwrap();
        let (hw, pc) = head.split_once(" 0x").unwrap();
        let pc = u64::from_str_radix(pc, 16).unwrap();
        format!("{hw} +{:#x}] {rest}", pc - base)
    }

    /// `f` with its PC made relative to `base`.
    fn relocate(f: Fault, base: u64) -> Fault {
        match f {
            Fault::InstructionLimit { limit, pc } => Fault::InstructionLimit {
                limit,
                pc: pc - base,
            },
            Fault::BadPc { pc } => Fault::BadPc { pc: pc - base },
            Fault::Aborted { pc } => Fault::Aborted { pc: pc - base },
            Fault::Illegal(e) => Fault::Illegal(match e {
                crate::error::DecodeError::UnknownOpcode {
                    pc,
                    format,
                    opcode,
                    words,
                } => crate::error::DecodeError::UnknownOpcode {
                    pc: pc - base,
                    format,
                    opcode,
                    words,
                },
                other => other,
            }),
            other => other,
        }
    }

    /// Block and stepwise runs of `words` agree for every budget up to `budgets`,
    /// with and without yields, stops and traces.
    fn agree(words: &[u32], s2: u32, budgets: u64) {
        for max in (0..=budgets).chain([BUDGET]) {
            for yield_after in [u64::MAX, 0, 3, 7] {
                for stop in [false, true] {
                    let traced = max == BUDGET || max % 5 == 0;
                    set_trace(traced);
                    let blocks = outcome(words, s2, max, yield_after, stop, false);
                    let steps = outcome(words, s2, max, yield_after, stop, true);
                    set_trace(false);
                    assert_eq!(
                        blocks, steps,
                        "max {max}, yield_after {yield_after}, stop {stop}"
                    );
                    if max == BUDGET {
                        assert_eq!(blocks.6.is_empty(), !traced);
                    }
                }
            }
        }
    }

    #[test]
    fn a_loop_jumping_into_the_middle_of_a_block_runs_as_stepwise() {
        let (exits, pc, n, s, _, v, _) = outcome(LOOP, 0, BUDGET, u64::MAX, false, false);
        assert_eq!(exits, vec![Ok(WaveExit::Ended)]);
        assert_eq!((pc, n), (0x34, 35));
        assert_eq!((s[0], s[1]), (5, 7 * 3u32.pow(5)));
        assert!(v[..64].iter().all(|&x| x == 15) && v[64..].iter().all(|&x| x == 18));
        agree(LOOP, 0, 40);
    }

    #[test]
    fn blocks_end_at_control_flow_and_overlap_at_a_loop_head() {
        let code = region(LOOP);
        let base = code.device_base();
        let program = Program::new(&code);
        let at = |off: u64| program.block_hinted(base + off, &mut None).unwrap();
        let pcs = |off: u64| -> Vec<u64> { at(off).entries.iter().map(|e| e.pc - base).collect() };
        // A conditional branch does not end a block; the unconditional one does.
        assert_eq!(pcs(0), [0, 4, 8, 0xc, 0x10, 0x14, 0x1c, 0x20, 0x24, 0x28]);
        assert_eq!(pcs(0xc), [0xc, 0x10, 0x14, 0x1c, 0x20, 0x24, 0x28]);
        assert_eq!(pcs(0x28), [0x28]);
        assert!(at(0).tail.is_none());
        assert!(matches!(
            at(0).insts.last(),
            Some(Instruction::Sopp(i)) if i.op == SoppOp::SBranch
        ));
        // The word that does not decode is the tail of a block entered before it.
        let straight = region(STRAIGHT);
        let p = Program::new(&straight);
        let b = p.block_hinted(straight.device_base(), &mut None).unwrap();
        assert_eq!(b.entries.len(), 3);
        assert!(b.tail.is_some());
        assert_eq!(
            p.block_hinted(straight.device_base() + 2, &mut None).err(),
            Some(Fault::BadPc {
                pc: straight.device_base() + 2
            })
        );
        // A long straight run is split at the cap.
        let long = long_run(BLOCK_CAP + 10);
        let r = region(&long);
        let p = Program::new(&r);
        let first = p.block_hinted(r.device_base(), &mut None).unwrap();
        assert_eq!(first.entries.len(), BLOCK_CAP);
        let rest = p
            .block_hinted(first.end(r.device_base()), &mut None)
            .unwrap();
        assert_eq!(rest.entries.len(), 11);
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn taken_branches_of_fused_runs_link_to_their_targets_runs() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        // LOOP's first run leaves through its loop branch (its 9th entry) into the
        // run at 0x0c, whose own branch (its 6th) goes back to itself; `s_branch`
        // goes to `s_endpgm`, which has no run.
        let code = region(LOOP);
        let base = code.device_base();
        let program = Program::new(&code);
        let at = |off: u64| program.block_hinted(base + off, &mut None).unwrap();
        assert!(at(0).unlinked(0, 9) && at(0xc).unlinked(0, 6));
        let mem = Mem::default();
        // A fresh wave run from LOOP's start, with the abort flag `stop`.
        let run = |stop: Option<&AtomicBool>| {
            let mut w = Wave::new();
            w.set_exec(u64::MAX);
            w.pc = base;
            let mut ctx = WaveContext {
                memory: &mem,
                lds: &mut [],
                apertures: crate::state::Apertures::KFD,
                stop,
                max_instructions: BUDGET,
                yield_after: u64::MAX,
            };
            let exit = w.run(&program, &mut ctx).map_err(|f| relocate(f, base));
            (exit, w)
        };
        for turn in 0..2 {
            let (exit, w) = run(None);
            assert_eq!(exit, Ok(WaveExit::Ended), "turn {turn}");
            // Linked after the first turn; the second runs through the links and
            // counts as the first (and as LOOP's own count).
            assert!(!at(0).unlinked(0, 9) && !at(0xc).unlinked(0, 6));
            // `s_branch`'s way out (after 7 entries) is marked too, though its target
            // (`s_endpgm`) has no run: the loop does not try it again, and the code
            // does not take it (the counts below).
            assert!(!at(0xc).unlinked(0, 7));
            assert_eq!((w.pc - base, w.instructions), (0x34, 35), "turn {turn}");
            assert_eq!((w.sgpr[0], w.sgpr[1]), (5, 7 * 3u32.pow(5)));
            assert!(w.vgpr[0].iter().all(|&x| x == 15) && w.vgpr[1].iter().all(|&x| x == 18));
            assert_eq!(w.fused_instructions, 34, "all but s_endpgm, turn {turn}");
        }
        // A wave being stopped takes no link: it stops at its first backward jump,
        // the loop branch, as the stepwise loop does.
        let stop = AtomicBool::new(true);
        let (exit, w) = run(Some(&stop));
        assert_eq!(exit, Err(Fault::Aborted { pc: 0x24 }));
        assert_eq!(w.instructions, 9);
    }

    #[test]
    fn fused_runs_end_at_barriers_where_the_interpreter_waits() {
        let (exits, pc, n, s, _, v, _) = outcome(BARRIERS, 0, BUDGET, u64::MAX, false, false);
        let barrier = Ok(WaveExit::Barrier);
        assert_eq!(
            exits,
            [
                barrier.clone(),
                barrier.clone(),
                barrier.clone(),
                barrier,
                Ok(WaveExit::Ended)
            ]
        );
        assert_eq!((pc, n, s[0]), (0x24, 19, 3));
        assert!(v[..64].iter().all(|&x| x == 1) && v[64..].iter().all(|&x| x == 3));
        agree(BARRIERS, 0, 24);
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        // Every barrier ran in a run (all but `s_endpgm`), and the loop branch's
        // last turn entered the run at 0x04 through its link, leaving at the
        // barrier from there: each exit resumes after its barrier.
        let code = region(BARRIERS);
        let base = code.device_base();
        let program = Program::new(&code);
        let mem = Mem::default();
        let mut w = Wave::new();
        w.set_exec(u64::MAX);
        w.pc = base;
        let mut after = Vec::new();
        loop {
            let mut ctx = WaveContext {
                memory: &mem,
                lds: &mut [],
                apertures: crate::state::Apertures::KFD,
                stop: None,
                max_instructions: BUDGET,
                yield_after: u64::MAX,
            };
            let exit = w.run(&program, &mut ctx);
            after.push((w.pc - base, w.instructions));
            if exit != Ok(WaveExit::Barrier) {
                assert_eq!(exit, Ok(WaveExit::Ended));
                break;
            }
        }
        assert_eq!(
            after,
            [(0x10, 4), (0x10, 9), (0x10, 14), (0x20, 18), (0x24, 19)]
        );
        assert_eq!(w.fused_instructions, 18);
        let at = |off: u64| program.block_hinted(base + off, &mut None).unwrap();
        assert!(!at(0x10).unlinked(0, 2), "the loop branch was linked");
    }

    #[test]
    fn register_rows_start_on_cache_lines() {
        // Each 32-byte group of 8 lanes then lies inside one 64-byte line.
        for _ in 0..4 {
            let w = Wave::new();
            for (what, at) in [
                ("vector file", w.vgpr.as_ptr() as usize),
                ("scratch lanes", w.tmp.as_ptr() as usize),
                ("splat lanes", w.splat.as_ptr() as usize),
            ] {
                assert_eq!(at % 64, 0, "{what} at {at:#x}");
            }
            assert_eq!(w.vgpr.len(), 2 * super::AGPR_BASE);
        }
    }

    #[test]
    fn the_block_cache_keeps_two_blocks_of_one_set_and_evicts_the_older() {
        // Every dword an s_endpgm: a one-entry block at each PC. Blocks 512 bytes
        // apart share a set of the cache (128 sets of dwords).
        let code = region(&[ENDPGM; 3 * 128 + 1]);
        let base = code.device_base();
        let program = Program::new(&code);
        let mut cache = crate::program::BlockCache::default();
        // Held by the program's table, plus one per way of the cache holding it.
        let held =
            |off: u64| Arc::strong_count(program.block_hinted(base + off, &mut None).unwrap()) - 1;
        for off in [0, 512, 0, 512, 0] {
            let b = cache.get(&program, base + off).unwrap();
            assert_eq!(b.entries[0].pc, base + off);
        }
        assert_eq!((held(0), held(512)), (1, 1), "both blocks of the set stay");
        // A third block of the set evicts the one entered longest ago (512).
        cache.get(&program, base + 1024).unwrap();
        assert_eq!((held(0), held(512), held(1024)), (1, 0, 1));
        assert_eq!(cache.get(&program, base).unwrap().entries[0].pc, base);
        assert_eq!((held(0), held(512), held(1024)), (1, 0, 1));
    }

    #[test]
    fn the_budget_ends_a_wave_mid_block_at_the_same_pc_as_stepwise() {
        // #12 is the first v_add_u32_e64 of the second iteration, in the block
        // entered at the loop head 0x0c.
        let (exits, pc, n, s, ..) = outcome(LOOP, 0, 11, u64::MAX, false, false);
        assert_eq!(
            exits,
            vec![Err(Fault::InstructionLimit {
                limit: 11,
                pc: 0x14
            })]
        );
        assert_eq!((pc, n, s[0]), (0x14, 12, 2));
        let long = long_run(2 * BLOCK_CAP + 3);
        agree(&long, 0, 0);
        for max in [BLOCK_CAP as u64 - 1, BLOCK_CAP as u64, BLOCK_CAP as u64 + 1] {
            assert_eq!(
                outcome(&long, 0, max, u64::MAX, false, false),
                outcome(&long, 0, max, u64::MAX, false, true)
            );
        }
    }

    #[test]
    fn a_word_that_does_not_decode_faults_only_when_reached() {
        // Taken branch: never reached.
        let (exits, _, n, ..) = outcome(COND, 0, BUDGET, u64::MAX, false, false);
        assert_eq!((exits, n), (vec![Ok(WaveExit::Ended)], 3));
        // Fall-through: an illegal-instruction fault at the word, uncounted.
        let (exits, pc, n, ..) = outcome(COND, 1, BUDGET, u64::MAX, false, false);
        assert!(
            matches!(&exits[..], [Err(Fault::Illegal(e))] if e.pc() == 8),
            "{exits:?}"
        );
        assert_eq!((pc, n), (8, 2));
        // In a block after straight-line code: the budget may end the wave first.
        let (exits, _, _, s, ..) = outcome(STRAIGHT, 0, 2, u64::MAX, false, false);
        assert_eq!(
            exits,
            vec![Err(Fault::InstructionLimit { limit: 2, pc: 8 })]
        );
        assert_eq!(s[0], 1);
        let (exits, ..) = outcome(STRAIGHT, 0, BUDGET, u64::MAX, false, false);
        assert!(matches!(&exits[..], [Err(Fault::Illegal(e))] if e.pc() == 12));
        for s2 in [0, 1] {
            agree(COND, s2, 5);
        }
        agree(STRAIGHT, 0, 5);
        agree(OFF_END, 0, 3);
        let (exits, ..) = outcome(OFF_END, 0, BUDGET, u64::MAX, false, false);
        assert_eq!(exits, vec![Err(Fault::BadPc { pc: 8 })]);
    }

    #[test]
    fn trace_lines_are_those_of_stepwise_execution() {
        set_trace(true);
        let blocks = outcome(LOOP, 0, BUDGET, u64::MAX, false, false);
        let steps = outcome(LOOP, 0, BUDGET, u64::MAX, false, true);
        set_trace(false);
        assert_eq!(blocks.6.len(), 35);
        assert_eq!(blocks.6, steps.6);
        assert!(blocks.6[9].starts_with("[hw0 +0xc] s_add_u32 s0, s0, 1"));
    }
}
