//! Fused runs: a straight run of planned integer VALU instructions (`valu::plan`)
//! and scalar instructions (`salu::ScalarPlan`) compiled to x86-64 code (AVX2 for
//! the vector ops) when its block is decoded, and executed as one step (with vector
//! ops, whenever every lane of the wave is active).
//!
//! Why: the interpreter pays, per instruction, a dispatch, the resolution of its
//! operands and its own pass over the 64 lanes, which costs about as much as the
//! lane work of an integer op. LLVM's loops are runs of such ops (64-bit address
//! arithmetic as `v_add_co_u32` / `v_addc_co_u32` pairs, compares, selects), so a
//! run is compiled once and then costs a few host instructions per op and 8 lanes.
//!
//! How a run executes: the wave is taken in 8 groups of 8 lanes (one AVX2 register
//! each), and every op of the run is done on a group before the next group. Results
//! are stored to the register file as they are computed (a later op of the run reads
//! what an earlier one wrote, in the same group); masks (carries, compares) written
//! by the run stay in AVX registers for the ops of the run that read them, and are
//! packed and written to the scalar file at the end. Every op reads and writes only
//! its own lanes, so the group order gives the results of the op order.
//!
//! What fuses ([`Builder::push`]): the integer plans with a lane-wise host form:
//! moves (AGPR moves among them), selects, logic, shifts, min/max, 32-bit and
//! high-half multiplies, the three-source adds/shifts/logic, the carry ops, the
//! 16-, 32- and 64-bit compares without CMPX, 64-bit shifts (by a constant, a
//! scalar or each lane's amount), the f64 compares without CMPX (`vcmppd`), the f64
//! add, multiply and fused multiply-add,
//! and the f32 add, subtract, multiply, fused multiply-add, reciprocal and
//! conversions to and from 32-bit integers (the multiply-adds only on a host with
//! FMA3; host IEEE arithmetic, NaN results replaced as `fp::nan_of` says; the
//! conversions' saturation and unsigned forms restated, see [`emit_f32`]).
//! A run ends before an op that would read, as a value, a scalar dword the run
//! already wrote (its value would be a lane mask computed inside the run), that
//! writes EXEC, whose mask destination overlaps an earlier one without being equal
//! to it, or that needs a fifth mask.
//!
//! LDS loads and one-dword stores join too ([`Builder::push_lds`]): LLVM 16's device
//! runtime reads and writes its team state in LDS at every loop chunk, between the
//! VALU ops of the chunk's bookkeeping, and each access used to end a run and cost
//! a dispatch of its own. The loads are read into frame rows before the ops run
//! (when their lanes address one dword for all, or consecutive dwords), the store
//! writes in group order (consecutive dwords).
//!
//! A FLAT or GLOBAL load or store of 4 or 8 bytes joins too, between two parts of a
//! run ([`Chain`]): the same kernels do two per loop chunk (STREAM's load and
//! store), each of which used to end a run. It runs on the whole wave when its lanes
//! address consecutive elements inside a region the wave has cached, as the
//! interpreter's plan does, and keeps the wave's stride prefetching; any other
//! access is run from the run by the interpreter's plan ([`flat_fallback`]: a
//! scattered load, an aperture, a partial EXEC), and the run goes on after it. So
//! does a
//! `ds_bpermute_b32` (with every lane active): the wave reductions of `reduction`
//! clauses are chains of them between a few VALU ops, one chain per team and loop
//! chunk.
//!
//! Unoptimised (-O0) code keeps its values in memory and moves them between the
//! files, and each such instruction used to end a run; these join too, as accesses
//! between parts: private (scratch) accesses whose lanes name one offset of their
//! own private space (MUBUF spills through the private segment buffer, any EXEC;
//! FLAT through a generic pointer to a stack slot, every lane active, or any EXEC
//! on a host with AVX-512, see [`PartialSlot`]), copied as
//! whole 256-byte rows ([`emit_private_rows`]), FLAT loads of one address in the
//! LDS aperture by every lane (the device runtime's team state, 20 per 64
//! elements of -O0 saxpy), read once and broadcast ([`emit_lds_broadcast`]), and
//! the lane moves
//! `v_readlane_b32`, `v_writelane_b32` and `v_readfirstlane_b32` ([`emit_lane`]).
//!
//! Scalar instructions join the run when they fall through and touch only scalar
//! registers (EXEC among them) and SCC ([`Builder::push_scalar`], [`emit_native`]:
//! SOP2 arithmetic, logic, shifts, selects and multiplies, SOPC and SOPK compares,
//! `s_addk_i32`/`s_mulk_i32`, moves (of an aperture's base among them),
//! `s_getpc_b64`, sign extensions, `s_*_saveexec_b64`, the SOPP no-ops); they keep their order among themselves, and
//! run before the vector ops while that gives the program's results (they write
//! nothing the vector ops before them read or wrote, and read nothing those wrote),
//! else after them (and then the vector ops after them must not read what they
//! write, nor write what they read or write). No vector op follows a write to EXEC
//! made after the first vector op. A run may hold scalar instructions only. A
//! branch ends a part of a run (see [`Chain`]): a taken one leaves the run there,
//! and after a conditional one not taken the run goes on with the instructions it
//! falls through to (blocks go on past conditional branches: LLVM's `if`s are
//! `s_cbranch_execz` over code that mostly runs).
//!
//! Links between runs ([`Exit`], [`Link`]): a taken branch of a run whose target
//! block starts with a run goes on in that run's code without returning to the
//! wave's loop, once the loop has seen the branch taken and linked it
//! ([`Code::link`]; blocks of one program only). The branch's code first checks
//! what the loop and [`run_fused`] would: the wave's budget holds the whole target
//! block, the target's registers and MODE needs hold, and the wave is not being
//! stopped; else it returns as an unlinked branch does. A run may end with an
//! `s_setpc_b64` or `s_swappc_b64` (the calls and returns of -O0 code, which end
//! their blocks): its way out is linked to the first target it took, and taken
//! only when the address it reads is that block's ([`Ran::JumpedTo`] otherwise,
//! the address in the [`RunEnv`]). A run may also end with an `s_barrier`
//! ([`Ran::AtBarrier`]): the wave then leaves the run to wait for its workgroup,
//! as after an interpreted one (LLVM 16's team reductions cross a barrier every
//! few instructions, and the end of an `if` before one, `s_or_b64 exec`, made a
//! run of its own too short to compile). -O0 code enters a block
//! every 16 instructions, and the loop's work per block entered (finding the block,
//! the budget, the call of its run) was a fifth of its time. A run that ends
//! where the next run of its block starts (before its fifth FLAT access, its
//! seventeenth part, or its 256th entry) falls through to that run's code
//! ([`FallThrough`]) when the wave's budget covers that run and its register and
//! MODE needs hold; it checks no abort flag, as it only goes forward in its block.
//!
//! Preconditions checked per execution ([`run_fused`]), for a run with vector ops:
//! every register of the run inside the wave's vector file and, for a run with f64
//! or f32 ops, the MODE their plans need (round to nearest even, denormals of
//! that width kept);
//! and EXEC all ones once the scalar instructions before the first vector op (the
//! prefix) ran (the plans then write every lane; with a partial EXEC the run stops
//! there, and the interpreter runs the rest one by one); at the same point, the
//! shape of each LDS access's addresses and its range inside the LDS (else the run
//! stops there too, and the interpreter reports any fault).
//!
//! Code: one executable buffer per block (dynasm-rs; the forms it encodes wrongly
//! are encoded by [`vex`]), compiled only on a host with AVX2, and a run has the
//! f64 fused multiply-add (FMA3) only on a host with FMA ([`HostFeatures`]); on a
//! host with AVX-512, private accesses check and copy 16 lanes at a time, and so
//! do parts whose vector ops are all moves ([`emit_moves_wide`]; EVEX forms, which
//! dynasm-rs lacks, encoded by [`evex`]: -O0 code makes a private access every few
//! instructions, and moves are two in five of its vector ops);
//! entered with the System V ABI, rdi = the vector file (lane 0 of register 0), rsi = the wave (the code keeps its scalar file in rsi and
//! the address of SCC, a byte 0 or 1, in r8), rdx = the run's [`RunEnv`] (kept in
//! r10). Scalar instructions use rax, rcx
//! and r9; the group loop keeps masks 0 and 1 in r9 and r11. The vector ops' frame:
//! 32-byte rows (row 0: the lane bits 1, 2, ... 128; then one row per constant
//! source, its value in 8 lanes; a scalar source is broadcast from the scalar file
//! where it is read), then one qword per mask read from before
//! the run and one accumulator per mask of the run; below the saved rbp, one
//! 64-lane row per dword an LDS load read, then the store's host address. ymm14 holds the sign bias (0x8000_0000 per lane) of the
//! unsigned compares, ymm8..ymm11 the run's masks for the current group. rdx is the
//! group's byte offset in a register row, rcx the group's number g (its 8 bits of a
//! 64-lane mask are the mask's byte g); the loop does two groups per trip. Before
//! the loop, a part whose ops do not depend on the lane runs them on group 0 alone
//! when every row it reads holds one value in all 64 lanes, and copies group 0's
//! results to the other groups ([`emit_uniform_group`]; most of -O0 code's rows
//! are such, being computed from scalars).

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use dynasmrt::x64::Assembler;
use dynasmrt::{dynasm, AssemblyOffset, DynamicLabel, DynasmApi, DynasmLabelApi, ExecutableBuffer};

use super::plan::{f32_mode, f64_mode, Bin, F32Op, F64Op, IntPlan, Kind, LanePlan, Tri};
use super::vop3p::PlanSrc;
use crate::arch::WAVE_SIZE;
use crate::generated::opcodes::{Sop1Op, Sop2Op, SopcOp, SoppOp};
use crate::lds::{BpermuteFusion, LdsFusion, LdsPlan};
use crate::memory::WindowTable;
use crate::operand::code;
use crate::salu::{lshl_add_shift, Dst, Native, NativeForm, Src};
use crate::state::{WaveContext, WaveState};
use crate::stride::{MAX_STRIDE, NEXT_OFFSET};
use crate::vmem::{FlatFusion, FlatPlan, PrivateAddress, PrivateFusion, ScalarOffset};

/// Most masks (AVX registers ymm8..ymm11) one run keeps.
const MASK_REGS: usize = 4;
/// The AVX register of mask 0.
const MASK_BASE: u8 = 8;
/// Bytes of one vector register (64 lanes).
const ROW: i32 = (WAVE_SIZE * 4) as i32;
/// Scalar-file index of EXEC's low dword.
const EXEC_LO: u8 = 126;
/// Most LDS accesses one run makes.
const MAX_LDS: usize = 8;
/// Most dwords per lane one run loads from the LDS (each a frame row of 64 lanes).
const MAX_LDS_ROWS: usize = 8;

/// One dword source of a fused op, as 8 lanes of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Val {
    /// A vector-file register.
    Row(u16),
    /// Frame row `k` (a constant, the same in every group).
    Const(usize),
    /// Scalar dword `c`, the same in every group (read from the scalar file: the
    /// vector ops write no scalar dword until after the group loop).
    Sreg(u8),
    /// Loaded-lanes row `k`: 64 lanes read from the LDS before the run's ops (see
    /// [`Builder::push_lds`]).
    Lanes(u8),
}

/// A lane mask a fused op reads.
#[derive(Clone, Copy, Debug)]
enum MaskIn {
    /// Mask `k` of the run (written by an earlier op of the run).
    Reg(usize),
    /// External mask `k`: scalar dwords or constants as they were before the run.
    Ext(usize),
}

/// Where an external mask dword comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scalar {
    Sreg(u8),
    Imm(u32),
}

/// The host CPU features the JIT may emit instructions of: every run needs AVX2
/// (no code is compiled without it), `v_fma_f64` needs FMA3 (without it the op
/// joins no run and the interpreter's plan runs it), and private accesses use
/// AVX-512 where the host has it (else AVX2 forms of the same code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostFeatures {
    /// AVX2 (with AVX): the vector ops and accesses.
    pub(crate) avx2: bool,
    /// FMA3 (`vfmadd231pd`).
    pub(crate) fma: bool,
    /// AVX-512 Foundation: a private access checks its lanes' addresses and copies
    /// its rows 64 bytes at a time ([`emit_private_rows`]).
    pub(crate) avx512: bool,
}

impl HostFeatures {
    /// The features of the CPU this runs on (`avx512` only if `wide`: see
    /// `Program::without_avx512`).
    pub(crate) fn detect(wide: bool) -> Self {
        Self {
            avx2: crate::arch::host_avx2(),
            fma: crate::arch::host_fma(),
            avx512: wide && crate::arch::host_avx512(),
        }
    }
}

/// A lowered op (`d`: destination register; rows of the vector file).
#[derive(Clone, Copy, Debug)]
enum Op {
    Mov {
        d: u16,
        a: Val,
    },
    PkMov {
        d: u16,
        a: Val,
        b: Val,
    },
    /// `aux`: the frame row of the op's constant (shift-count or 24-bit mask).
    Bin {
        op: Bin,
        d: u16,
        a: Val,
        b: Val,
        aux: usize,
    },
    Tri {
        op: Tri,
        d: u16,
        src: [Val; 3],
        aux: usize,
    },
    /// `a + b` (`a - b` when `sub`) with a carry (borrow) in and out.
    Carry {
        sub: bool,
        d: u16,
        a: Val,
        b: Val,
        cin: Option<MaskIn>,
        cout: Option<usize>,
    },
    Cndmask {
        d: u16,
        a: Val,
        b: Val,
        m: MaskIn,
    },
    Cmp32 {
        signed: bool,
        cond: u8,
        a: Val,
        b: Val,
        out: usize,
        /// A 16-bit compare (`v_cmp_*_i16`/`_u16`): the low halves, compared as
        /// 32-bit values shifted up by 16 (the order and equality of the halves).
        half: bool,
    },
    Cmp64 {
        signed: bool,
        cond: u8,
        a: [Val; 2],
        b: [Val; 2],
        out: usize,
    },
    /// An f64 compare (`cond` numbered as the opcode's low four bits): the
    /// sources' (low, high) dwords.
    CmpF64 {
        cond: u8,
        a: [Val; 2],
        b: [Val; 2],
        out: usize,
    },
    /// An f64 operation: `src[k]` = source k's (low, high) dwords (`c` only for
    /// the fused multiply-add).
    F64 {
        op: F64Op,
        d: u16,
        src: [[Val; 2]; 3],
    },
    /// `v_mbcnt_lo_u32_b32` / `v_mbcnt_hi_u32_b32` (`hi`) with the mask -1 (LLVM's
    /// lane number idiom): the lane's number within its half (the low half's
    /// count stops at 32), plus `add`.
    Mbcnt {
        hi: bool,
        d: u16,
        add: Val,
    },
    /// An f32 operation: `src[k]` = source k ([`F32Op::sources`] of them).
    F32 {
        op: F32Op,
        d: u16,
        src: [Val; 3],
    },
    /// `k` as `Kind::Shift64`, by the constant `n` (0..=63).
    Shift64 {
        k: u8,
        n: u32,
        d: u16,
        lo: Val,
        hi: Val,
    },
    /// `k` as `Kind::Shift64`, each lane by its `amount` (a register's lanes, or a
    /// scalar's value for all; unoptimised code shifts by an SGPR) modulo 64:
    /// frame row `mask` holds 63.
    Shift64By {
        k: u8,
        amount: Val,
        mask: usize,
        d: u16,
        lo: Val,
        hi: Val,
    },
    /// The run's LDS store (`ds_write_b32`, consecutive lanes): the group's 8 lanes
    /// of `data` to the LDS, at the host address the frame keeps at `rbp + at` plus
    /// the group's offset.
    LdsStore {
        data: Val,
        at: i32,
    },
}

/// An LDS access of a run (see [`Builder::push_lds`]).
#[derive(Clone, Copy, Debug)]
struct LdsAccess {
    f: LdsFusion,
    /// A load's first loaded-lanes row (its dword i in row `row + i`).
    row: u8,
}

/// A run being built, op by op.
#[derive(Clone, Debug, Default)]
pub(crate) struct Builder {
    ops: Vec<Op>,
    /// The constants of frame rows 1.. (row 0 holds the lane bits).
    consts: Vec<u32>,
    /// External masks (low, high dword).
    ext: Vec<[Scalar; 2]>,
    /// The run's masks by register: their scalar destinations (`u8::MAX`: a dword
    /// that is dropped).
    masks: Vec<[u8; 2]>,
    /// Scalar dwords written by the run's vector ops so far (bit per index).
    written: u128,
    /// Scalar dwords the run's vector ops read (as values or masks) so far.
    reads: u128,
    /// Block entries the run covers so far (vector ops and scalar instructions).
    entries: usize,
    /// The scalar instructions (program order).
    scalars: Vec<Native>,
    /// How many of `scalars` run before the vector ops; the rest run after them.
    hoisted: usize,
    /// How many of `scalars` come before the first vector op (they run first, and
    /// EXEC is checked after them).
    prefix: usize,
    /// Whether a scalar instruction after the first vector op writes EXEC (no vector
    /// op may follow it: the vector ops run under the EXEC checked before them).
    exec_written: bool,
    /// The branch that ends the part (after everything else, on the final state).
    branch: Option<Native>,
    /// Scalar dwords the scalar instructions that run after the vector ops read and
    /// write (bit per index).
    sunk_reads: u128,
    sunk_writes: u128,
    /// Whether the run has f64 ops (it then needs the default MODE).
    f64: bool,
    /// Whether the run has f32 ops (they need round to nearest even and f32
    /// denormals kept).
    f32: bool,
    /// One past the highest vector-file register the run reads or writes.
    rows: usize,
    /// Scalar dwords the op being lowered reads and writes.
    op_reads: u128,
    op_writes: u128,
    /// Vector-file registers the run's ops write so far (bit per register, below 512).
    vwritten: [u64; 8],
    /// The run's LDS accesses, in program order.
    lds: Vec<LdsAccess>,
    /// Loaded-lanes rows so far.
    lds_rows: usize,
    /// Whether the run stores to the LDS (its last LDS access then).
    lds_stored: bool,
}

impl Builder {
    /// Appends `p` to the run; false (the run unchanged) if it does not fuse (on
    /// a host with `features`).
    fn push(&mut self, p: &IntPlan, features: HostFeatures) -> bool {
        if self.exec_written || self.branch.is_some() || self.entries >= usize::from(u8::MAX) {
            return false;
        }
        let before = self.clone();
        (self.op_reads, self.op_writes) = (0, 0);
        let lowered = self.lower(p, features);
        // A vector op after a scalar instruction that runs after the vector ops must
        // not read what that instruction writes, nor write what it reads or writes.
        match lowered {
            Some(op)
                if self.op_reads & self.sunk_writes == 0
                    && self.op_writes & (self.sunk_reads | self.sunk_writes) == 0 =>
            {
                self.ops.push(op);
                self.entries += 1;
                true
            }
            _ => {
                *self = before;
                false
            }
        }
    }

    /// Appends a scalar instruction; false (the run unchanged) if its form has no
    /// host code here ([`emit_native`]). It runs before the run's vector ops while
    /// that gives the program's results (every scalar instruction before it runs
    /// there too, and it writes nothing the vector ops before it read or wrote, nor
    /// reads what they wrote), else after them. (Vector ops after it read its
    /// results either way. EXEC is a register like the others here: the vector ops
    /// write every lane whatever it holds, and none may follow a write to it.)
    fn push_scalar(&mut self, n: &Native) -> bool {
        if self.branch.is_some() || self.entries >= usize::from(u8::MAX) {
            return false;
        }
        if let NativeForm::Branch(_) | NativeForm::Jump | NativeForm::Barrier = n.form {
            self.branch = Some(*n);
            self.entries += 1;
            return true;
        }
        if !emit_native(&mut dynasmrt::SimpleAssembler::new(), n) {
            return false;
        }
        let first = self.hoisted == self.scalars.len()
            && n.writes & (self.reads | self.written) == 0
            && n.reads & self.written == 0;
        if first {
            self.hoisted += 1;
        } else {
            // After them: the vector ops that follow are checked in `push`.
            self.sunk_reads |= n.reads;
            self.sunk_writes |= n.writes;
        }
        if self.ops.is_empty() {
            self.prefix += 1;
        } else {
            self.exec_written |= n.writes & (3 << EXEC_LO) != 0;
        }
        self.scalars.push(*n);
        self.entries += 1;
        true
    }

    /// The frame row of the constant `s`.
    fn row_of(&mut self, s: u32) -> usize {
        let k = match self.consts.iter().position(|c| *c == s) {
            Some(k) => k,
            None => {
                self.consts.push(s);
                self.consts.len() - 1
            }
        };
        k + 1
    }

    fn was_written(&self, c: u8) -> bool {
        c < 128 && self.written >> c & 1 == 1
    }

    fn val(&mut self, s: PlanSrc) -> Option<Val> {
        Some(match s {
            PlanSrc::Vreg(r) => {
                self.rows = self.rows.max(usize::from(r) + 1);
                Val::Row(r)
            }
            PlanSrc::Sreg(c) if self.was_written(c) => return None,
            PlanSrc::Sreg(c) => {
                self.reads |= 1 << (c & 127);
                self.op_reads |= 1 << (c & 127);
                Val::Sreg(c)
            }
            PlanSrc::Imm(v) => Val::Const(self.row_of(v)),
        })
    }

    /// A mask source (read as `plan::get_mask` reads it).
    fn mask_in(&mut self, s: [PlanSrc; 2]) -> Option<MaskIn> {
        if let [PlanSrc::Sreg(lo), PlanSrc::Sreg(hi)] = s {
            if let Some(k) = self.masks.iter().position(|m| *m == [lo, hi]) {
                self.op_reads |= 1 << (lo & 127) | 1 << (hi & 127);
                return Some(MaskIn::Reg(k));
            }
        }
        let mut dw = [Scalar::Imm(0); 2];
        for (d, p) in dw.iter_mut().zip(s) {
            *d = match p {
                PlanSrc::Sreg(c) if self.was_written(c) => return None,
                PlanSrc::Sreg(c) => {
                    self.reads |= 1 << (c & 127);
                    self.op_reads |= 1 << (c & 127);
                    Scalar::Sreg(c)
                }
                PlanSrc::Imm(v) => Scalar::Imm(v),
                PlanSrc::Vreg(_) => Scalar::Imm(0),
            };
        }
        let k = match self.ext.iter().position(|e| *e == dw) {
            Some(k) => k,
            None => {
                self.ext.push(dw);
                self.ext.len() - 1
            }
        };
        Some(MaskIn::Ext(k))
    }

    /// The mask register for a mask written to `sdst`: `Some(None)` when the mask
    /// goes nowhere, `None` when the op cannot join the run.
    fn mask_out(&mut self, sdst: Option<[u8; 2]>) -> Option<Option<usize>> {
        let Some(pair) = sdst else { return Some(None) };
        let bits = |p: [u8; 2]| {
            p.iter()
                .filter(|&&c| c < 128)
                .fold(0u128, |b, &c| b | 1 << c)
        };
        let mine = bits(pair);
        if mine == 0 {
            return Some(None);
        }
        if mine & (3 << EXEC_LO) != 0 {
            return None;
        }
        let k = match self.masks.iter().position(|m| *m == pair) {
            Some(k) => k,
            None if self.masks.iter().any(|&m| bits(m) & mine != 0) => return None,
            None if self.masks.len() == MASK_REGS => return None,
            None => {
                self.masks.push(pair);
                self.masks.len() - 1
            }
        };
        self.written |= mine;
        self.op_writes |= mine;
        Some(Some(k))
    }

    fn dst(&mut self, d: u16, width: usize) -> u16 {
        self.rows = self.rows.max(usize::from(d) + width);
        for r in usize::from(d)..usize::from(d) + width {
            if let Some(w) = self.vwritten.get_mut(r / 64) {
                *w |= 1 << (r % 64);
            }
        }
        d
    }

    /// Whether an op of the run so far writes vector register `r`.
    fn row_written(&self, r: u16) -> bool {
        let r = usize::from(r);
        self.vwritten
            .get(r / 64)
            .is_none_or(|w| w >> (r % 64) & 1 == 1)
    }

    /// Appends an LDS load or store; false (the run unchanged) if it does not join.
    ///
    /// The run reads every LDS dword it loads before its ops run, into frame rows
    /// (each loaded dword then a move from its row, in op order); its one store, if
    /// any, writes in group order where it stands. That gives the program's results
    /// when nothing the run does before an access changes what the access reads: its
    /// address register is written by no earlier op of the run, and no load follows
    /// the store (so at most one store, and only as the run's last LDS access). What
    /// each access's lanes address is checked before the run does anything (after its
    /// prefix, with the EXEC check): a load's, one address for every lane or (the
    /// one-dword form) consecutive dwords; the store's, consecutive dwords; and every
    /// dword inside the LDS. Else the run stops there, as it does for a partial EXEC,
    /// and the interpreter runs the rest (and reports any fault).
    fn push_lds(&mut self, p: &LdsPlan) -> bool {
        if self.exec_written
            || self.branch.is_some()
            || self.entries >= usize::from(u8::MAX)
            || self.lds_stored
            || self.lds.len() == MAX_LDS
        {
            return false;
        }
        let Some(f) = p.fusion() else { return false };
        if self.row_written(f.addr) {
            return false;
        }
        let row = self.lds_rows;
        if f.store {
            let data = Val::Row(f.regs);
            self.rows = self.rows.max(usize::from(f.regs) + 1);
            self.ops.push(Op::LdsStore {
                data,
                at: -(ROW * row as i32) - 8,
            });
            self.lds_stored = true;
        } else {
            if row + f.n > MAX_LDS_ROWS {
                return false;
            }
            for i in 0..f.n {
                let d = self.dst(f.regs + i as u16, 1);
                self.ops.push(Op::Mov {
                    d,
                    a: Val::Lanes((row + i) as u8),
                });
            }
            self.lds_rows += f.n;
        }
        self.rows = self.rows.max(usize::from(f.addr) + 1);
        self.lds.push(LdsAccess { f, row: row as u8 });
        self.entries += 1;
        true
    }

    fn lower(&mut self, p: &IntPlan, features: HostFeatures) -> Option<Op> {
        let [s0, s1, s2] = p.src;
        Some(match p.kind {
            Kind::Mov => {
                let a = self.val(s0[0])?;
                Op::Mov {
                    d: self.dst(p.dst, 1),
                    a,
                }
            }
            Kind::PkMov => {
                let (a, b) = (self.val(s0[0])?, self.val(s1[0])?);
                Op::PkMov {
                    d: self.dst(p.dst, 2),
                    a,
                    b,
                }
            }
            Kind::Bin(op) => {
                let aux = match op {
                    Bin::Bcnt => return None,
                    Bin::Lshlrev | Bin::Lshrrev | Bin::Ashrrev => self.row_of(31),
                    Bin::MulU24 => self.row_of(0xFF_FFFF),
                    _ => 0,
                };
                let (a, b) = (self.val(s0[0])?, self.val(s1[0])?);
                Op::Bin {
                    op,
                    d: self.dst(p.dst, 1),
                    a,
                    b,
                    aux,
                }
            }
            Kind::Tri(op) => {
                let aux = match op {
                    Tri::LshlAdd | Tri::AddLshl | Tri::LshlOr => self.row_of(31),
                    Tri::Add3
                    | Tri::AndOr
                    | Tri::Or3
                    | Tri::Xad
                    | Tri::Bfi
                    | Tri::Min3U
                    | Tri::Max3U
                    | Tri::Min3I
                    | Tri::Max3I => 0,
                    _ => return None,
                };
                let src = [self.val(s0[0])?, self.val(s1[0])?, self.val(s2[0])?];
                Op::Tri {
                    op,
                    d: self.dst(p.dst, 1),
                    src,
                    aux,
                }
            }
            Kind::Add { cin } | Kind::Sub { cin, .. } => {
                let (mut a, mut b) = (self.val(s0[0])?, self.val(s1[0])?);
                if let Kind::Sub { rev: true, .. } = p.kind {
                    (a, b) = (b, a);
                }
                let cin = if cin { Some(self.mask_in(s2)?) } else { None };
                let cout = self.mask_out(p.sdst)?;
                Op::Carry {
                    sub: matches!(p.kind, Kind::Sub { .. }),
                    d: self.dst(p.dst, 1),
                    a,
                    b,
                    cin,
                    cout,
                }
            }
            Kind::Cndmask => {
                let (a, b) = (self.val(s0[0])?, self.val(s1[0])?);
                let m = self.mask_in(s2)?;
                Op::Cndmask {
                    d: self.dst(p.dst, 1),
                    a,
                    b,
                    m,
                }
            }
            Kind::Cmp32 {
                signed,
                cond,
                cmpx: false,
            }
            | Kind::Cmp16 {
                signed,
                cond,
                cmpx: false,
            } => {
                let (a, b) = (self.val(s0[0])?, self.val(s1[0])?);
                let out = self.mask_out(p.sdst)??;
                Op::Cmp32 {
                    signed,
                    cond,
                    a,
                    b,
                    out,
                    half: matches!(p.kind, Kind::Cmp16 { .. }),
                }
            }
            Kind::Cmp64 {
                signed,
                cond,
                cmpx: false,
            } => {
                let a = [self.val(s0[0])?, self.val(s0[1])?];
                let b = [self.val(s1[0])?, self.val(s1[1])?];
                let out = self.mask_out(p.sdst)??;
                Op::Cmp64 {
                    signed,
                    cond,
                    a,
                    b,
                    out,
                }
            }
            Kind::CmpF64 { cond, cmpx: false } => {
                let a = [self.val(s0[0])?, self.val(s0[1])?];
                let b = [self.val(s1[0])?, self.val(s1[1])?];
                let out = self.mask_out(p.sdst)??;
                // (The plan's MODE: f64 denormals kept, checked per execution.)
                self.f64 = true;
                Op::CmpF64 { cond, a, b, out }
            }
            // The fused multiply-add is `vfmadd231pd` (FMA3), which a host with AVX2
            // may lack.
            Kind::F64(F64Op::Fma) if !features.fma => return None,
            Kind::F64(op) => {
                let n = if op == F64Op::Fma { 3 } else { 2 };
                let mut src = [[Val::Const(0); 2]; 3];
                for (v, s) in src.iter_mut().zip(p.src).take(n) {
                    *v = [self.val(s[0])?, self.val(s[1])?];
                }
                self.f64 = true;
                Op::F64 {
                    op,
                    d: self.dst(p.dst, 2),
                    src,
                }
            }
            // The mask is -1 (else the bits below each lane, counted, would be a
            // popcount AVX2 lacks).
            Kind::Mbcnt { hi } if s0[0] == PlanSrc::Imm(u32::MAX) => {
                let add = self.val(s1[0])?;
                Op::Mbcnt {
                    hi,
                    d: self.dst(p.dst, 1),
                    add,
                }
            }
            // `v_fma_f32`/`v_fmac_f32` are `vfmadd231ps` (FMA3).
            Kind::F32(F32Op::Fma) if !features.fma => return None,
            Kind::F32(op) => {
                let mut src = [Val::Const(0); 3];
                for (v, s) in src.iter_mut().zip(p.src).take(op.sources()) {
                    *v = self.val(s[0])?;
                }
                self.f32 = true;
                Op::F32 {
                    op,
                    d: self.dst(p.dst, 1),
                    src,
                }
            }
            Kind::Shift64(k) => {
                let (lo, hi) = (self.val(s1[0])?, self.val(s1[1])?);
                match s0[0] {
                    PlanSrc::Imm(n) => Op::Shift64 {
                        k,
                        n: n & 63,
                        d: self.dst(p.dst, 2),
                        lo,
                        hi,
                    },
                    by => Op::Shift64By {
                        k,
                        amount: self.val(by)?,
                        mask: self.row_of(63),
                        d: self.dst(p.dst, 2),
                        lo,
                        hi,
                    },
                }
            }
            _ => return None,
        })
    }
}

/// A run's compiled code: System V, (vector file, the wave, the run's [`RunEnv`])
/// -> 0: it ran and falls through (its branches, if any, not taken); [`JUMPED`] +
/// n: its first n entries ran, the last of them a branch that is taken; 2 + n: it
/// stopped after its first n entries (a part
/// found EXEC not all ones or an LDS access's lanes not addressing what the run can
/// do, after its prefix; or a FLAT access or a bpermute could not run, see
/// [`Chain`]); [`DEFERRED`] + n: it stopped after its first n entries, before a
/// FLAT gather that deferred itself ([`flat_fallback`]; the wave yields there);
/// [`JUMPED_TO`] + n, [`AT_BARRIER`] + n: its n entries ran, the last an
/// `s_setpc_b64` or `s_swappc_b64`, or an `s_barrier`.
type RunFn = unsafe extern "sysv64" fn(*mut u32, *mut WaveState, *mut RunEnv) -> u32;

/// The return code of a run whose branch is taken, less the entries that ran (see
/// [`RunFn`]; above every stop code: a run has at most 255 entries).
const JUMPED: u32 = 0x1000;
/// The return code of a run that stopped before a deferred gather, less the
/// entries that ran (see [`RunFn`]; above every jump code).
const DEFERRED: u32 = 0x2000;
/// The return code of a run that ended with an `s_setpc_b64` or `s_swappc_b64`,
/// less the entries that ran (the jump the last): the target is in the
/// [`RunEnv`] (above every other code).
const JUMPED_TO: u32 = 0x3000;
/// The return code of a run that ended with an `s_barrier`, less the entries that
/// ran (the barrier the last; above every other code).
const AT_BARRIER: u32 = 0x4000;

/// What a run reads besides the wave (rdx on entry, kept in r10): made once per
/// [`crate::Wave::run`](crate::state::WaveState) call from its context ([`RunEnv::of`]);
/// [`run_fused`] points it at the LDS (and its size) before each run.
#[repr(C)]
pub(crate) struct RunEnv {
    /// The workgroup's LDS and its size in bytes.
    lds: *mut u8,
    lds_len: usize,
    /// The first addresses of the LDS and scratch apertures (4 GiB each).
    shared: u64,
    private: u64,
    /// 0, 1, ... 7: the lane numbers of a group (a bpermute's consecutive-lanes
    /// check).
    iota: [u32; 8],
    /// 1, 2, 4, ... 128: each lane's bit in its group's byte of EXEC (a private
    /// access's lane mask).
    lane_bits: [u32; 8],
    /// The wave's context (a `WaveContext`), for the accesses a run's own code
    /// declines and hands to the interpreter's plans ([`flat_fallback`]); set by
    /// [`run_fused`] before each run.
    ctx: *mut (),
    /// Instructions the wave may still run from the start of the run now running
    /// (the caller's budget and slice, [`run_fused`]'s `left`): a taken branch
    /// enters a linked block ([`Exit`]) only if all of that block's entries fit, a
    /// run falls through to the next run of its block ([`FallThrough`]) only if
    /// that run fits (0 while the wave's stores are held: neither is taken).
    left: i64,
    /// Instructions the runs before the one now running ran, when taken branches
    /// entered linked blocks or runs fell through to the next run of their block
    /// (0: none did); read by [`RunEnv::linked`].
    ran: u64,
    /// The first PC of the block whose run is now running, once a link was taken
    /// ([`SAME_BLOCK`] while the runs stay in the block [`run_fused`] entered).
    pc: u64,
    /// The entry of that block where the run now running starts (0 when a link
    /// entered it, the next run's first entry after a fall-through).
    entry: u64,
    /// The address an `s_setpc_b64` or `s_swappc_b64` that ends a run read (see
    /// [`JUMPED_TO`]).
    target: u64,
    /// The link of the way out the last run returned through ([`Exit`]'s
    /// `target`: null while not linked), so that the wave's loop looks for the way
    /// out only when it can link it.
    exit: *const Link,
    /// The wave's vector-file registers (a linked run needs its `rows`).
    rows: u64,
    /// The MODE needs ([`Link`]'s `modes` bits) the wave's MODE does not meet.
    unmet: u32,
    /// The wave's abort flag (`WaveContext::stop`, or a flag never set): a link is
    /// not taken once it is set, so that the loop goes back to the wave's loop,
    /// which checks it at backward jumps.
    stop: *const AtomicBool,
}

/// [`RunEnv`]'s `pc` while no link was taken: no block starts there (an
/// instruction has 4 bytes at least).
const SAME_BLOCK: u64 = u64::MAX;

/// Where the wave is after a run that went on in other runs ([`RunEnv::linked`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chained {
    /// The first PC of the block of the run that returned; `None` when that is
    /// the block whose run [`run_fused`] called.
    pub(crate) block: Option<u64>,
    /// That run's first entry in its block.
    pub(crate) entry: usize,
    /// Instructions the runs before it ran.
    pub(crate) ran: u64,
}

/// An abort flag never set (see [`RunEnv`]'s `stop`).
static NEVER: AtomicBool = AtomicBool::new(false);

impl RunEnv {
    /// The environment of the runs of a wave running in `ctx`.
    pub(crate) fn of(ctx: &WaveContext<'_>) -> Self {
        Self {
            lds: std::ptr::null_mut(),
            lds_len: ctx.lds.len(),
            shared: ctx.apertures.shared_base & !0xFFFF_FFFF,
            private: ctx.apertures.private_base & !0xFFFF_FFFF,
            iota: [0, 1, 2, 3, 4, 5, 6, 7],
            lane_bits: [1, 2, 4, 8, 16, 32, 64, 128],
            ctx: std::ptr::null_mut(),
            left: 0,
            ran: 0,
            pc: 0,
            entry: 0,
            target: 0,
            exit: std::ptr::null(),
            rows: 0,
            unmet: 0,
            stop: ctx.stop.unwrap_or(&NEVER),
        }
    }

    /// The address the `s_setpc_b64` or `s_swappc_b64` that ended the last run
    /// read ([`Ran::JumpedTo`]).
    pub(crate) fn target(&self) -> u64 {
        self.target
    }

    /// Whether the way out the last run returned through ([`Ran::Jumped`],
    /// [`Ran::JumpedTo`]) is not linked yet.
    pub(crate) fn exit_unlinked(&self) -> bool {
        self.exit.is_null()
    }

    /// After [`run_fused`], once: when the run went on in other runs (taken
    /// branches that entered linked blocks, [`Exit`], or fall-throughs to the next
    /// run of a block, [`FallThrough`]), where the run that returned starts: the
    /// first PC of its block (`None`: the block [`run_fused`] entered) and its
    /// first entry there (its result is counted from that entry), with the
    /// instructions the runs before it ran; `None` when the run returned itself.
    pub(crate) fn linked(&mut self) -> Option<Chained> {
        let ran = std::mem::take(&mut self.ran);
        (ran != 0).then_some(Chained {
            block: (self.pc != SAME_BLOCK).then_some(self.pc),
            entry: self.entry as usize,
            ran,
        })
    }
}

/// Byte offsets of [`RunEnv`]'s fields, as the code reads them.
const ENV_LDS: i32 = 0;
const ENV_LDS_LEN: i32 = 8;
const ENV_SHARED: i32 = 16;
const ENV_PRIVATE: i32 = 24;
const ENV_IOTA: i32 = 32;
const ENV_LANE_BITS: i32 = 64;
const ENV_LEFT: i32 = std::mem::offset_of!(RunEnv, left) as i32;
const ENV_RAN: i32 = std::mem::offset_of!(RunEnv, ran) as i32;
const ENV_PC: i32 = std::mem::offset_of!(RunEnv, pc) as i32;
const ENV_ENTRY: i32 = std::mem::offset_of!(RunEnv, entry) as i32;
const ENV_TARGET: i32 = std::mem::offset_of!(RunEnv, target) as i32;
const ENV_EXIT: i32 = std::mem::offset_of!(RunEnv, exit) as i32;
const ENV_ROWS: i32 = std::mem::offset_of!(RunEnv, rows) as i32;
const ENV_UNMET: i32 = std::mem::offset_of!(RunEnv, unmet) as i32;
const ENV_STOP: i32 = std::mem::offset_of!(RunEnv, stop) as i32;
/// Byte offsets of [`Link`]'s fields, as the code reads them.
const LINK_FUNC: i32 = std::mem::offset_of!(Link, func) as i32;
const LINK_PC: i32 = std::mem::offset_of!(Link, pc) as i32;
const LINK_NEED: i32 = std::mem::offset_of!(Link, need) as i32;
const LINK_ROWS: i32 = std::mem::offset_of!(Link, rows) as i32;
const LINK_MODES: i32 = std::mem::offset_of!(Link, modes) as i32;

/// Where the code finds the wave's parts, from rsi (its scalar file): SCC, the
/// regions it has cached (`RegionCache::table`) and its stride table.
const OFF_SGPR: i32 = std::mem::offset_of!(WaveState, sgpr) as i32;
const SCC_FROM_SGPR: i32 = std::mem::offset_of!(WaveState, scc) as i32 - OFF_SGPR;
const TABLE_FROM_SGPR: i32 =
    (std::mem::offset_of!(WaveState, regions) + crate::memory::TABLE_OFFSET) as i32 - OFF_SGPR;
const STRIDES_FROM_SGPR: i32 = std::mem::offset_of!(WaveState, strides) as i32 - OFF_SGPR;

// The layouts the code reads, checked when this compiles.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(RunEnv, lds) == ENV_LDS as usize);
    assert!(offset_of!(RunEnv, lds_len) == ENV_LDS_LEN as usize);
    assert!(offset_of!(RunEnv, shared) == ENV_SHARED as usize);
    assert!(offset_of!(RunEnv, private) == ENV_PRIVATE as usize);
    assert!(offset_of!(RunEnv, iota) == ENV_IOTA as usize);
    assert!(offset_of!(RunEnv, lane_bits) == ENV_LANE_BITS as usize);
    assert!(offset_of!(WindowTable, n) == 0);
    assert!(offset_of!(WindowTable, windows) == 8);
    assert!(size_of::<crate::memory::Window>() == 24);
    assert!(offset_of!(crate::memory::Window, base) == 0);
    assert!(offset_of!(crate::memory::Window, end) == 8);
    assert!(offset_of!(crate::memory::Window, host) == 16);
};

/// The compiled runs of one block: their executable buffer and the links of their
/// taken branches ([`Exit`]); the block keeps it (alive as long as its entries, and
/// so their [`Fused`] entry points).
pub(crate) struct Code {
    buf: ExecutableBuffer,
    /// One per taken-branch way out of a run, in the order the code has them.
    exits: Exits,
    /// The block's first entry's run as a link's target (see [`Code::set_head`]).
    head: Option<Link>,
}

/// The ways out of a block's runs, each boxed: the code holds their addresses,
/// which the vector's growth while the runs are emitted must not move.
#[allow(clippy::vec_box)]
type Exits = Vec<Box<Exit>>;

/// A block's first run as the taken branches of other runs enter it ([`Exit`]):
/// what a branch's code checks before it jumps to `func` with the wave, its vector
/// file and its [`RunEnv`] (as [`run_fused`] would call it).
#[repr(C)]
struct Link {
    /// The run's entry point.
    func: RunFn,
    /// The block's first PC.
    pc: u64,
    /// The block's entries: the wave's budget must hold them all (as the wave's
    /// loop asks of a block before it runs fused runs in it).
    need: u64,
    /// Vector-file registers the run needs (0 when it has no vector op or access).
    rows: u64,
    /// Bit 0: the run has f64 ops (MODE must be what `f64_mode` accepts); bit 1:
    /// f32 ops (`f32_mode`).
    modes: u32,
}

/// The link of a way out whose target block has no run at its head: every check
/// of the branch's code fails on it (it needs more budget than a wave has).
static NOWHERE: Link = Link {
    func: never_entered,
    pc: 0,
    need: i64::MAX as u64,
    rows: u64::MAX,
    modes: u32::MAX,
};

/// [`NOWHERE`]'s entry point, which no branch's code jumps to.
unsafe extern "sysv64" fn never_entered(_: *mut u32, _: *mut WaveState, _: *mut RunEnv) -> u32 {
    0
}

/// A taken branch of a run that may leave for the run of its target's block
/// directly, without returning to the wave's loop: once `target` points at that
/// block's [`Link`] ([`Code::link`]), the branch's code jumps there when the
/// wave's budget holds the whole block, its vector file the run's registers, its
/// MODE what the run needs, and the wave is not being stopped; else (and until
/// linked) the run returns [`JUMPED`] + `done`.
#[repr(C)]
struct Exit {
    /// The target block's head (null: not linked).
    target: AtomicPtr<Link>,
    /// The run's first entry in its block.
    entry: u32,
    /// The run's entries that ran when the branch is taken (the branch the last).
    done: u32,
}

impl Code {
    /// The code's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Makes the run `first` (the block's first entry's, if it has one) the
    /// target of links to this block: the block starts at `pc` and has `entries`
    /// entries.
    pub(crate) fn set_head(&mut self, first: Option<&Fused>, pc: u64, entries: usize) {
        self.head = first.map(|f| Link {
            func: f.func,
            pc,
            need: entries as u64,
            rows: f.needs.rows() as u64,
            modes: f.needs.modes() as u32,
        });
    }

    /// Links the taken branch that ends the first `done` entries of the run at
    /// entry `entry` of this block to the head of `to` (the target block's code),
    /// if that branch has a way out ([`Exit`]) not linked yet. The branch's code
    /// then enters `to`'s run directly; when the target has no run at its head, the
    /// way out is linked to [`NOWHERE`], which the code never enters (and the run
    /// loop does not try again).
    ///
    /// # Safety
    /// `to` must live as long as `self` (both blocks of one `Program`, which frees
    /// its blocks only together).
    pub(crate) unsafe fn link(&self, entry: usize, done: usize, to: Option<&Code>) {
        let head = to.and_then(|c| c.head.as_ref()).unwrap_or(&NOWHERE);
        let exit = self
            .exits
            .iter()
            .find(|x| x.entry as usize == entry && x.done as usize == done);
        if let Some(x) = exit {
            let target = (head as *const Link).cast_mut();
            let _ = x.target.compare_exchange(
                std::ptr::null_mut(),
                target,
                Ordering::Release,
                Ordering::Relaxed,
            );
        }
    }

    /// Whether the taken branch that ends the first `done` entries of the run at
    /// entry `entry` has a way out not linked yet.
    pub(crate) fn unlinked(&self, entry: usize, done: usize) -> bool {
        self.exits.iter().any(|x| {
            x.entry as usize == entry
                && x.done as usize == done
                && x.target.load(Ordering::Relaxed).is_null()
        })
    }
}

/// A compiled run, attached to the block entry of its first instruction (inline, in
/// 32 bytes: the loop reads it from the entry's first cache line).
#[derive(Clone, Copy)]
pub(crate) struct Fused {
    /// This run's entry point in its block's [`Code`].
    func: RunFn,
    /// What it covers and needs.
    needs: Needs,
}

impl Fused {
    /// Instructions the run covers (consecutive block entries; at most 255).
    pub(crate) fn len(&self) -> u32 {
        self.needs.len
    }

    /// The host address of the run's code (its entry point), for the perf map.
    pub(crate) fn entry(&self) -> usize {
        self.func as usize
    }
}

impl std::fmt::Debug for Fused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fused")
            .field("len", &self.needs.len)
            .field("rows", &self.needs.rows)
            .finish()
    }
}

/// Compiles `runs` (as [`find_runs`] gives them, for the features they were found
/// for) into one buffer: each run's first entry and its code. `None` if there is
/// no run, the host lacks AVX2 or the buffer cannot be made executable (the block
/// then runs without fused runs).
pub(crate) fn compile(runs: &[(usize, Chain)]) -> Option<(Code, Vec<(usize, Fused)>)> {
    let features = runs.first()?.1.features;
    compile_for(runs, features)
}

/// [`compile`] for a host with `features`: `None` without AVX2, or when a run needs
/// FMA3 and `features` lacks it (runs [`find_runs_for`] chose for the same features
/// never do).
fn compile_for(
    runs: &[(usize, Chain)],
    features: HostFeatures,
) -> Option<(Code, Vec<(usize, Fused)>)> {
    if runs.is_empty() || !features.avx2 || (!features.fma && runs.iter().any(|(_, c)| c.fma())) {
        return None;
    }
    let mut asm = Assembler::new().ok()?;
    let mut exits = Vec::new();
    let needs: Vec<Needs> = runs.iter().map(|(_, c)| c.needs()).collect::<Option<_>>()?;
    let labels: Vec<DynamicLabel> = runs.iter().map(|_| asm.new_dynamic_label()).collect();
    // One run at most starts at an entry (`find_runs_for`; the block attaches each
    // to its first entry), so a fall-through finds the one the wave's loop calls.
    debug_assert!({
        let mut at: Vec<usize> = runs.iter().map(|(b, _)| *b).collect();
        at.sort_unstable();
        at.windows(2).all(|w| w[0] != w[1])
    });
    let mut starts = Vec::with_capacity(runs.len());
    for (k, (at, c)) in runs.iter().enumerate() {
        // The run that starts where this one ends, in the block.
        let end = at + c.entries();
        let on = runs.iter().position(|(b, _)| *b == end);
        let on = on.and_then(|j| {
            Some(FallThrough {
                label: *labels.get(j)?,
                entry: end,
                needs: *needs.get(j)?,
            })
        });
        let label = *labels.get(k)?;
        starts.push(emit_chain(&mut asm, c, *at, label, on, &mut exits));
    }
    let code = Code {
        buf: asm.finalize().ok()?,
        exits,
        head: None,
    };
    let mut fused = Vec::with_capacity(runs.len());
    for (((at, _), entry), n) in runs.iter().zip(starts).zip(needs) {
        // SAFETY: `entry` is where `emit_chain` began a function of this signature in
        // `code`, which is executable; the caller keeps `code` with the entries
        // the runs are attached to (the block), so it outlives every call.
        let func = unsafe { std::mem::transmute::<*const u8, RunFn>(code.buf.ptr(entry)) };
        fused.push((*at, Fused { func, needs: n }));
    }
    Some((code, fused))
}

/// What a run covers and needs of the wave before it may run (see [`run_fused`]):
/// [`Fused`] without its code.
#[derive(Clone, Copy, Debug)]
struct Needs {
    /// Block entries the run covers (at most 255).
    len: u32,
    /// One past the highest vector-file register it reads or writes.
    rows: u16,
    /// Whether it has vector ops or accesses.
    vector: bool,
    /// Whether it has f64 ops (MODE as [`f64_mode`] accepts).
    f64: bool,
    /// Whether it has f32 ops (MODE as [`f32_mode`] accepts).
    f32: bool,
}

impl Needs {
    /// The vector-file registers the wave must have (0: none).
    fn rows(self) -> i32 {
        if self.vector {
            i32::from(self.rows)
        } else {
            0
        }
    }

    /// The MODE needs as [`RunEnv`]'s `unmet` bits name them.
    fn modes(self) -> i32 {
        i32::from(self.f64) | i32::from(self.f32) << 1
    }
}

/// A run's way on to the run that starts at the entry after its last, in the same
/// block, when it falls through there: that run's code (`label`), its first entry
/// and what it needs.
///
/// The run checks at its end what [`run_fused`] and the wave's loop would ask of
/// the next run (the wave's budget covers it, which also means the wave's LDS
/// stores are not being held: see `Turn::StoresUntil`; its registers; its MODE),
/// then records in the [`RunEnv`] the instructions ran and the next run's entry
/// ([`RunEnv::linked`]) and jumps to it. -O0 code's runs end at their fifth FLAT
/// access more often than anywhere else, and half of the runs the wave's loop
/// called in -O0 STREAM were such a fall-through, each a return to the loop and a
/// call from it.
#[derive(Clone, Copy, Debug)]
struct FallThrough {
    label: DynamicLabel,
    entry: usize,
    needs: Needs,
}

/// How a fused run went.
pub(crate) enum Ran {
    /// Only its first `n` entries ran (none: it changed nothing), the rest are left
    /// to the interpreter: a register of the run is outside the wave's vector file,
    /// or the run has f64 ops and MODE asks other than what the f64 plans do (round
    /// to nearest even, f64 denormals kept), or the run stopped (see [`RunFn`]).
    Stopped(usize),
    /// It ran and falls through to the entry after it.
    Next,
    /// Its first `n` entries ran, and the last of them is a branch that jumps (to
    /// its target: the caller has the entry).
    Jumped(usize),
    /// Its first `n` entries ran, the last an `s_setpc_b64` or `s_swappc_b64`,
    /// which jumps to the address it read ([`RunEnv::target`]).
    JumpedTo(usize),
    /// Its first `n` entries ran; the next is a FLAT gather that deferred itself
    /// (see `WaveState::run_flat_plan`): the wave yields before it.
    Deferred(usize),
    /// Its first `n` entries ran, the last an `s_barrier`: the wave waits there for
    /// the others of its workgroup.
    AtBarrier(usize),
}

/// Runs `f` on `w`, with its workgroup's `lds` and `env` ([`RunEnv::of`] the
/// wave's context; see [`Ran`]). The wave may run `left` more instructions from
/// the run's first (0: its taken branches enter no linked block, see [`Exit`], and
/// it falls through to no other run, see [`FallThrough`]); when it goes on in
/// other runs, [`RunEnv::linked`] says where the last one starts, and the result
/// is that run's.
#[inline]
pub(crate) fn run_fused(
    w: &mut WaveState,
    f: &Fused,
    ctx: &mut WaveContext<'_>,
    env: &mut RunEnv,
    left: u64,
) -> Ran {
    if w.vgpr.len() < f.needs.rows() as usize {
        return Ran::Stopped(0);
    }
    let unmet = u32::from(!f64_mode(w.mode)) | u32::from(!f32_mode(w.mode)) << 1;
    if f.needs.modes() as u32 & unmet != 0 {
        return Ran::Stopped(0);
    }
    env.lds = ctx.lds.as_mut_ptr();
    env.lds_len = ctx.lds.len();
    env.ctx = (ctx as *mut WaveContext<'_>).cast();
    env.left = i64::try_from(left).unwrap_or(i64::MAX);
    env.ran = 0;
    env.pc = SAME_BLOCK;
    env.rows = w.vgpr.len() as u64;
    env.unmet = unmet;
    let vgpr = w.vgpr.as_mut_ptr().cast::<u32>();
    let wave: *mut WaveState = w;
    // SAFETY: `f.func` is code `emit_chain` generated (compiled only on hosts with
    // AVX2, and with FMA3 if it has a fused multiply-add: `compile_for`; kept alive
    // by the block whose entry holds `f`). It reads and writes the lanes of
    // vector-file registers below `f.needs.rows()` (none without vector ops), which
    // is within `w.vgpr` (checked above), scalar-file dwords below 128 (`Builder` takes
    // indices only from plans, all below 128), `w.scc` (stored as 0 or 1), its own
    // stack frame, `w.strides` (as `StrideTable` lays it out), `w.regions`' window
    // table (read only), bytes of `lds` below its size (set in `env` above), and host
    // bytes of the cached regions
    // inside their windows (each access's range is checked against the LDS size or a
    // window before the run reads or writes any). The windows' host memory stays
    // alive: the wave's region cache, which holds the regions, does not change
    // during the call. A taken branch may enter another block's run ([`Exit`]) with
    // the same arguments: that block is of the same program as this one (`Code::link`),
    // alive as long as it, and the branch's code checks first what this function
    // checks above (the registers, MODE) and the wave's budget. A run may also jump
    // to the next run of its own block ([`FallThrough`], code of the same buffer)
    // after the same checks.
    match unsafe { (f.func)(vgpr, wave, env) } {
        0 => Ran::Next,
        n if n >= AT_BARRIER => Ran::AtBarrier((n - AT_BARRIER) as usize),
        n if n >= JUMPED_TO => Ran::JumpedTo((n - JUMPED_TO) as usize),
        n if n >= DEFERRED => Ran::Deferred((n - DEFERRED) as usize),
        n if n >= JUMPED => Ran::Jumped((n - JUMPED) as usize),
        n => Ran::Stopped(n as usize - 2),
    }
}

/// A VEX.256 register-to-register instruction `op dst, src1, src2[, imm]` (opcode
/// map `map`: 1 = 0F, 2 = 0F38; `pp`: 0 none, 1 = 66), encoded here for the forms
/// dynasm-rs 3.2.1 gets wrong: VMOVMSKPS (rejected), VFMADD231PD (assembled as the
/// PS form), VSHUFPS (sources swapped; so are VSHUFPD, VPBLENDD, VBLENDPS and
/// VBLENDPD, which the JIT does not use). The tests in `jit/tests.rs` decode these
/// forms and what dynasm-rs makes of them.
#[allow(clippy::too_many_arguments)] // the fields of the encoding
fn vex(
    a: &mut Assembler,
    map: u8,
    pp: u8,
    w: bool,
    op: u8,
    dst: u8,
    src1: u8,
    src2: u8,
    imm: Option<u8>,
) {
    let b1 = (u8::from(dst < 8) << 7) | (1 << 6) | (u8::from(src2 < 8) << 5) | map;
    let b2 = (u8::from(w) << 7) | ((!src1 & 15) << 3) | (1 << 2) | pp;
    a.extend([0xC4, b1, b2, op, 0xC0 | ((dst & 7) << 3) | (src2 & 7)]);
    if let Some(i) = imm {
        a.extend([i]);
    }
}

/// `vmovmskps eax, ymm<y>`.
fn movmsk_eax(a: &mut Assembler, y: u8) {
    vex(a, 1, 0, false, 0x50, 0, 0, y, None);
}

/// General-purpose register numbers, as the encodings name them.
const RAX: u8 = 0;
const RCX: u8 = 1;
const RDX: u8 = 2;
const RSI: u8 = 6;
const RDI: u8 = 7;

/// An EVEX.512 instruction (W0; opcode map `map`: 1 = 0F, 2 = 0F38; `pp`: 1 = 66,
/// 2 = F3) `op reg, src1, rm` with the write mask k`k` (0: none), where `rm` is
/// `[base + disp]` (`Some(disp)`, a 32-bit displacement, never scaled) or the
/// register `base`. dynasm-rs 3.2.1 has no EVEX forms. Registers below 8 only,
/// and no rsp base (the forms `emit_private_rows` and `emit_moves_wide` use).
#[allow(clippy::too_many_arguments)] // the fields of the encoding
fn evex(
    a: &mut Assembler,
    map: u8,
    pp: u8,
    op: u8,
    reg: u8,
    src1: u8,
    k: u8,
    base: u8,
    disp: Option<i32>,
) {
    debug_assert!(reg < 8 && src1 < 8 && k < 8 && base < 8 && base != 4);
    // P0: R, X, B, R' (inverted: all registers below 8), then the map; P1: W0,
    // vvvv (inverted), 1, pp; P2: no zeroing, L'L = 512 bits, no broadcast, V'
    // (inverted), aaa = the mask.
    let p0 = 0xF0 | map;
    let p1 = ((!src1 & 15) << 3) | (1 << 2) | pp;
    let p2 = 0x48 | k;
    a.extend([0x62, p0, p1, p2, op]);
    match disp {
        Some(d) => {
            a.extend([0x80 | (reg << 3) | base]);
            a.extend(d.to_le_bytes());
        }
        None => a.extend([0xC0 | (reg << 3) | base]),
    }
}

/// `vmovdqu32 zmm<z>, [base + disp]`.
fn zmm_load(a: &mut Assembler, z: u8, base: u8, disp: i32) {
    evex(a, 1, 2, 0x6F, z, 0, 0, base, Some(disp));
}

/// `vmovdqu32 [base + disp] {k<k>}, zmm<z>` (k0: every dword).
fn zmm_store(a: &mut Assembler, base: u8, disp: i32, z: u8, k: u8) {
    evex(a, 1, 2, 0x7F, z, 0, k, base, Some(disp));
}

/// `vpbroadcastd zmm<z>, r32` (the general register numbered `r`).
fn zmm_splat(a: &mut Assembler, z: u8, r: u8) {
    evex(a, 2, 1, 0x7C, z, 0, 0, r, None);
}

/// `vpcmpeqd k<k> {k<k>}, zmm<z>, [base + disp]`: k = k AND the dwords equal.
fn zmm_cmpeq_and(a: &mut Assembler, k: u8, z: u8, base: u8, disp: i32) {
    evex(a, 1, 1, 0x76, k, z, k, base, Some(disp));
}

/// `vpcmpeqd k<k> {k<m>}, zmm<z>, [base + disp]`: k = m AND the dwords equal.
fn zmm_cmpeq_under(a: &mut Assembler, k: u8, m: u8, z: u8, base: u8, disp: i32) {
    evex(a, 1, 1, 0x76, k, z, m, base, Some(disp));
}

/// A mask-register instruction in 2-byte VEX (map 0F, W0, no prefix; `l`: VEX.L)
/// `op k<d>, k<x>, k<y>`, `x` 0 where the form has no second source (vvvv 1111).
fn vex_k(a: &mut Assembler, op: u8, l: bool, d: u8, x: u8, y: u8) {
    debug_assert!(d < 8 && x < 8 && y < 8);
    a.extend([
        0xC5,
        0x80 | ((!x & 15) << 3) | (u8::from(l) << 2),
        op,
        0xC0 | (d << 3) | y,
    ]);
}

/// `kxorw k<d>, k<x>, k<y>`.
fn kxorw(a: &mut Assembler, d: u8, x: u8, y: u8) {
    vex_k(a, 0x47, true, d, x, y);
}

/// `kxnorw k<k>, k<k>, k<k>`: all 16 bits set.
fn kxnorw_ones(a: &mut Assembler, k: u8) {
    vex_k(a, 0x46, true, k, k, k);
}

/// `kortestw k<k>, k<k>`: CF set when all 16 bits are.
fn kortestw(a: &mut Assembler, k: u8) {
    vex_k(a, 0x98, false, k, 0, k);
}

/// `kmovw k<k>, word ptr [base + disp]`.
fn kmovw_load(a: &mut Assembler, k: u8, base: u8, disp: i32) {
    debug_assert!(k < 8 && base < 8 && base != 4);
    // VEX L0 0F W0 90 /r.
    a.extend([0xC5, 0xF8, 0x90, 0x80 | (k << 3) | base]);
    a.extend(disp.to_le_bytes());
}

/// `vfmadd231pd acc, x, y` (acc = x·y + acc, one rounding).
fn fma_pd(a: &mut Assembler, acc: u8, x: u8, y: u8) {
    vex(a, 2, 1, true, 0xB8, acc, x, y, None);
}

/// `vfmadd231ps acc, x, y` (acc = x·y + acc, one rounding).
fn fma_ps(a: &mut Assembler, acc: u8, x: u8, y: u8) {
    vex(a, 2, 1, false, 0xB8, acc, x, y, None);
}

/// `vcmpps dst, x, y, pred` (dst = all ones in the lanes where `x pred y`;
/// dynasm-rs 3.2.1 swaps the sources of this form).
fn cmpps(a: &mut Assembler, dst: u8, x: u8, y: u8, pred: u8) {
    vex(a, 1, 0, false, 0xC2, dst, x, y, Some(pred));
}

/// `vcmpps` predicates: unordered (either is a NaN), and greater or equal
/// (ordered, signalling: false for a NaN).
const CMP_UNORD: u8 = 3;
const CMP_GE: u8 = 13;

/// `y` = the dword `v` in each of its eight lanes (uses eax).
fn splat32(a: &mut Assembler, y: u8, v: u32) {
    let v = v as i32;
    dynasm!(a ; .arch x64 ; mov eax, v ; vmovd Rx(y), eax ; vpbroadcastd Ry(y), Rx(y));
}

/// `vshufps dst, x, y, imm`.
fn shufps(a: &mut Assembler, dst: u8, x: u8, y: u8, imm: u8) {
    vex(a, 1, 0, false, 0xC6, dst, x, y, Some(imm));
}

/// `y` = `v` (a 64-bit pattern) in each of its four qwords (uses rax).
fn splat64(a: &mut Assembler, y: u8, v: u64) {
    let v = v as i64;
    dynasm!(a ; .arch x64 ; mov rax, QWORD v ; vmovq Rx(y), rax ; vpbroadcastq Ry(y), Rx(y));
}

/// Loads scalar source `s` into rax (`r` = 0) or rcx (`r` = 1): its 64-bit value
/// when `wide`, else its low dword (zero-extended).
fn scalar_src<A: DynasmApi>(a: &mut A, r: u8, s: Src, wide: bool) {
    match s {
        Src::R32(c) => {
            let off = 4 * i32::from(c);
            dynasm!(a ; .arch x64 ; mov Rd(r), [rsi + off]);
        }
        Src::R64(c) => {
            let off = 4 * i32::from(c);
            if wide {
                dynasm!(a ; .arch x64 ; mov Rq(r), [rsi + off]);
            } else {
                dynasm!(a ; .arch x64 ; mov Rd(r), [rsi + off]);
            }
        }
        Src::K(v) if wide => {
            let v = v as i64;
            dynasm!(a ; .arch x64 ; mov Rq(r), QWORD v);
        }
        Src::K(v) => {
            let v = v as u32 as i32;
            dynasm!(a ; .arch x64 ; mov Rd(r), v);
        }
    }
}

/// Stores rax to scalar destination `d` (its low dword for `Dst::D32`; nothing for
/// `null`).
fn scalar_dst<A: DynasmApi>(a: &mut A, d: Dst) {
    match d {
        Dst::D32(c) if c == code::NULL => {}
        Dst::D32(c) => {
            let off = 4 * i32::from(c);
            dynasm!(a ; .arch x64 ; mov [rsi + off], eax);
        }
        Dst::D64(c) => {
            let off = 4 * i32::from(c);
            dynasm!(a ; .arch x64 ; mov [rsi + off], rax);
        }
    }
}

/// Emits host code for scalar instruction `n` (rsi = the scalar file, r8 = SCC as a
/// byte 0 or 1; rax, rcx, r9 scratch), with the semantics of `salu::sop2_result`,
/// `sopc_result` and `saveexec_result`, and the plans' order of writes. False if
/// its form has no code here (the instruction then stays out of runs); what was
/// emitted is then meaningless.
fn emit_native<A: DynasmApi>(a: &mut A, n: &Native) -> bool {
    match n.form {
        NativeForm::Nop => {}
        NativeForm::Sext(op) => {
            scalar_src(a, 0, n.a, false);
            match op {
                Sop1Op::SSextI32I8 => dynasm!(a ; .arch x64 ; movsx eax, al),
                Sop1Op::SSextI32I16 => dynasm!(a ; .arch x64 ; movsx eax, ax),
                _ => return false,
            }
            scalar_dst(a, n.d);
        }
        NativeForm::Mov => {
            scalar_src(a, 0, n.a, matches!(n.d, Dst::D64(_)));
            scalar_dst(a, n.d);
        }
        NativeForm::Aperture { private } => {
            // (`RunEnv` holds each aperture's first address: its base, 4 GiB-aligned.)
            let env = if private { ENV_PRIVATE } else { ENV_SHARED };
            dynasm!(a ; .arch x64 ; mov rax, [r10 + env]);
            scalar_dst(a, n.d);
        }
        NativeForm::Sopc(op) => return emit_sopc(a, op, n),
        NativeForm::Saveexec(op) => {
            use Sop1Op as O;
            let exec = 4 * i32::from(EXEC_LO);
            scalar_src(a, 1, n.a, true);
            dynasm!(a ; .arch x64 ; mov rax, [rsi + exec]);
            // r9 = the new EXEC from s (rcx) and the old EXEC (rax).
            match op {
                O::SAndSaveexecB64 => dynasm!(a ; .arch x64 ; mov r9, rcx ; and r9, rax),
                O::SOrSaveexecB64 => dynasm!(a ; .arch x64 ; mov r9, rcx ; or r9, rax),
                O::SXorSaveexecB64 => dynasm!(a ; .arch x64 ; mov r9, rcx ; xor r9, rax),
                O::SAndn2SaveexecB64 => {
                    dynasm!(a ; .arch x64 ; mov r9, rax ; not r9 ; and r9, rcx)
                }
                O::SOrn2SaveexecB64 => {
                    dynasm!(a ; .arch x64 ; mov r9, rax ; not r9 ; or r9, rcx)
                }
                O::SNandSaveexecB64 => {
                    dynasm!(a ; .arch x64 ; mov r9, rcx ; and r9, rax ; not r9)
                }
                O::SNorSaveexecB64 => {
                    dynasm!(a ; .arch x64 ; mov r9, rcx ; or r9, rax ; not r9)
                }
                O::SXnorSaveexecB64 => {
                    dynasm!(a ; .arch x64 ; mov r9, rcx ; xor r9, rax ; not r9)
                }
                O::SAndn1SaveexecB64 => {
                    dynasm!(a ; .arch x64 ; mov r9, rcx ; not r9 ; and r9, rax)
                }
                O::SOrn1SaveexecB64 => {
                    dynasm!(a ; .arch x64 ; mov r9, rcx ; not r9 ; or r9, rax)
                }
                _ => return false,
            }
            scalar_dst(a, n.d);
            dynasm!(a
                ; .arch x64
                ; mov [rsi + exec], r9
                ; test r9, r9
                ; setne BYTE [r8]
            );
        }
        NativeForm::Sop2(op) => return emit_sop2(a, op, n),
        // Emitted last, by `emit_run`.
        NativeForm::Branch(_) | NativeForm::Jump | NativeForm::Barrier => return false,
    }
    true
}

/// [`emit_native`] for SOPC: SCC from the compare or bit test.
fn emit_sopc<A: DynasmApi>(a: &mut A, op: SopcOp, n: &Native) -> bool {
    use SopcOp as C;
    let wide = matches!(
        op,
        C::SBitcmp0B64 | C::SBitcmp1B64 | C::SCmpEqU64 | C::SCmpLgU64
    );
    scalar_src(a, 0, n.a, wide);
    scalar_src(a, 1, n.b, wide);
    match op {
        C::SBitcmp0B32 | C::SBitcmp1B32 => dynasm!(a ; .arch x64 ; bt eax, ecx),
        C::SBitcmp0B64 | C::SBitcmp1B64 => dynasm!(a ; .arch x64 ; bt rax, rcx),
        _ if wide => dynasm!(a ; .arch x64 ; cmp rax, rcx),
        _ => dynasm!(a ; .arch x64 ; cmp eax, ecx),
    }
    match op {
        C::SCmpEqI32 | C::SCmpEqU32 | C::SCmpEqU64 => dynasm!(a ; .arch x64 ; sete BYTE [r8]),
        C::SCmpLgI32 | C::SCmpLgU32 | C::SCmpLgU64 => dynasm!(a ; .arch x64 ; setne BYTE [r8]),
        C::SCmpGtI32 => dynasm!(a ; .arch x64 ; setg BYTE [r8]),
        C::SCmpGeI32 => dynasm!(a ; .arch x64 ; setge BYTE [r8]),
        C::SCmpLtI32 => dynasm!(a ; .arch x64 ; setl BYTE [r8]),
        C::SCmpLeI32 => dynasm!(a ; .arch x64 ; setle BYTE [r8]),
        C::SCmpGtU32 => dynasm!(a ; .arch x64 ; seta BYTE [r8]),
        C::SCmpGeU32 => dynasm!(a ; .arch x64 ; setae BYTE [r8]),
        C::SCmpLtU32 => dynasm!(a ; .arch x64 ; setb BYTE [r8]),
        C::SCmpLeU32 => dynasm!(a ; .arch x64 ; setbe BYTE [r8]),
        // The tested bit is in CF.
        C::SBitcmp1B32 | C::SBitcmp1B64 => dynasm!(a ; .arch x64 ; setb BYTE [r8]),
        C::SBitcmp0B32 | C::SBitcmp0B64 => dynasm!(a ; .arch x64 ; setae BYTE [r8]),
        _ => return false,
    }
    true
}

/// [`emit_native`] for SOP2: the result in rax (stored to the destination), SCC
/// where the opcode sets it.
fn emit_sop2<A: DynasmApi>(a: &mut A, op: Sop2Op, n: &Native) -> bool {
    use Sop2Op as O;
    // Which sources are 64-bit (the 64-bit shifts take a 32-bit count).
    let (wide_a, wide_b) = match op {
        O::SLshlB64 | O::SLshrB64 | O::SAshrI64 => (true, false),
        O::SCselectB64 => (true, true),
        _ if logic_b64(op) => (true, true),
        _ => (false, false),
    };
    scalar_src(a, 0, n.a, wide_a);
    scalar_src(a, 1, n.b, wide_b);
    // SCC = the result is not zero (flags of the last instruction).
    let nonzero = |a: &mut A| dynasm!(a ; .arch x64 ; setne BYTE [r8]);
    match op {
        O::SAddU32 => dynasm!(a ; .arch x64 ; add eax, ecx ; setb BYTE [r8]),
        O::SSubU32 => dynasm!(a ; .arch x64 ; sub eax, ecx ; setb BYTE [r8]),
        O::SAddI32 => dynasm!(a ; .arch x64 ; add eax, ecx ; seto BYTE [r8]),
        O::SSubI32 => dynasm!(a ; .arch x64 ; sub eax, ecx ; seto BYTE [r8]),
        // SCC into CF (neg sets CF when its operand is not zero), then the add or
        // subtract with it.
        O::SAddcU32 => dynasm!(a
            ; .arch x64
            ; movzx r9d, BYTE [r8]
            ; neg r9d
            ; adc eax, ecx
            ; setb BYTE [r8]
        ),
        O::SSubbU32 => dynasm!(a
            ; .arch x64
            ; movzx r9d, BYTE [r8]
            ; neg r9d
            ; sbb eax, ecx
            ; setb BYTE [r8]
        ),
        O::SMinI32 => dynasm!(a ; .arch x64 ; cmp eax, ecx ; setl BYTE [r8] ; cmovge eax, ecx),
        O::SMinU32 => dynasm!(a ; .arch x64 ; cmp eax, ecx ; setb BYTE [r8] ; cmovae eax, ecx),
        O::SMaxI32 => dynasm!(a ; .arch x64 ; cmp eax, ecx ; setg BYTE [r8] ; cmovle eax, ecx),
        O::SMaxU32 => dynasm!(a ; .arch x64 ; cmp eax, ecx ; seta BYTE [r8] ; cmovbe eax, ecx),
        O::SCselectB32 | O::SCselectB64 => {
            dynasm!(a ; .arch x64 ; cmp BYTE [r8], 0 ; cmove rax, rcx)
        }
        O::SAndB32
        | O::SOrB32
        | O::SXorB32
        | O::SAndn2B32
        | O::SOrn2B32
        | O::SAndB64
        | O::SOrB64
        | O::SXorB64
        | O::SAndn2B64
        | O::SOrn2B64 => emit_logic(a, op, wide_a, false),
        O::SNandB32 | O::SNorB32 | O::SXnorB32 | O::SNandB64 | O::SNorB64 | O::SXnorB64 => {
            emit_logic(a, op, wide_a, true)
        }
        // The host masks the count to 5 (6) bits as the ISA does; a zero count sets
        // no flags, hence the tests.
        O::SLshlB32 => dynasm!(a ; .arch x64 ; shl eax, cl ; test eax, eax),
        O::SLshrB32 => dynasm!(a ; .arch x64 ; shr eax, cl ; test eax, eax),
        O::SAshrI32 => dynasm!(a ; .arch x64 ; sar eax, cl ; test eax, eax),
        O::SLshlB64 => dynasm!(a ; .arch x64 ; shl rax, cl ; test rax, rax),
        O::SLshrB64 => dynasm!(a ; .arch x64 ; shr rax, cl ; test rax, rax),
        O::SAshrI64 => dynasm!(a ; .arch x64 ; sar rax, cl ; test rax, rax),
        // ((1 << (a & 31)) - 1) << (b & 31).
        O::SBfmB32 => dynasm!(a
            ; .arch x64
            ; mov r9d, ecx
            ; mov ecx, eax
            ; mov eax, 1
            ; shl eax, cl
            ; dec eax
            ; mov ecx, r9d
            ; shl eax, cl
        ),
        O::SMulI32 => dynasm!(a ; .arch x64 ; imul eax, ecx),
        // The low 64 bits of the product of the zero-extended dwords are their
        // unsigned product.
        O::SMulHiU32 => dynasm!(a ; .arch x64 ; imul rax, rcx ; shr rax, 32),
        O::SLshl1AddU32 | O::SLshl2AddU32 | O::SLshl3AddU32 | O::SLshl4AddU32 => {
            let sh = lshl_add_shift(op).unwrap_or(0) as i8;
            // The 33..36-bit sum: its low dword is the result, SCC its carry out.
            dynasm!(a ; .arch x64 ; shl rax, sh ; add rax, rcx);
            scalar_dst(a, n.d);
            dynasm!(a ; .arch x64 ; shr rax, 32 ; setne BYTE [r8]);
            return true;
        }
        _ => return false,
    }
    match op {
        O::SAndB32
        | O::SOrB32
        | O::SXorB32
        | O::SAndn2B32
        | O::SOrn2B32
        | O::SNandB32
        | O::SNorB32
        | O::SXnorB32
        | O::SLshlB32
        | O::SLshrB32
        | O::SAshrI32
        | O::SLshlB64
        | O::SLshrB64
        | O::SAshrI64 => nonzero(a),
        _ if logic_b64(op) => nonzero(a),
        _ => {}
    }
    scalar_dst(a, n.d);
    true
}

/// Whether `op` is one of the eight 64-bit SOP2 logic forms (and, or, xor, andn2,
/// orn2, nand, nor, xnor): 64-bit sources, SCC = result != 0.
fn logic_b64(op: Sop2Op) -> bool {
    use Sop2Op as O;
    matches!(
        op,
        O::SAndB64
            | O::SOrB64
            | O::SXorB64
            | O::SAndn2B64
            | O::SOrn2B64
            | O::SNandB64
            | O::SNorB64
            | O::SXnorB64
    )
}

/// `rax = rax op rcx` for the SOP2 logic opcode `op` (and, or, xor; andn2 and orn2
/// complement rcx first; nand, nor and xnor, `complement`, complement the result),
/// 64-bit when `wide`, with ZF set from the result.
fn emit_logic<A: DynasmApi>(a: &mut A, op: Sop2Op, wide: bool, complement: bool) {
    use Sop2Op as O;
    if matches!(op, O::SAndn2B32 | O::SOrn2B32 | O::SAndn2B64 | O::SOrn2B64) {
        if wide {
            dynasm!(a ; .arch x64 ; not rcx);
        } else {
            dynasm!(a ; .arch x64 ; not ecx);
        }
    }
    match (op, wide) {
        (O::SAndB32 | O::SAndn2B32 | O::SNandB32, false) => dynasm!(a ; .arch x64 ; and eax, ecx),
        (O::SOrB32 | O::SOrn2B32 | O::SNorB32, false) => dynasm!(a ; .arch x64 ; or eax, ecx),
        (_, false) => dynasm!(a ; .arch x64 ; xor eax, ecx),
        (O::SAndB64 | O::SAndn2B64 | O::SNandB64, true) => dynasm!(a ; .arch x64 ; and rax, rcx),
        (O::SOrB64 | O::SOrn2B64 | O::SNorB64, true) => dynasm!(a ; .arch x64 ; or rax, rcx),
        (_, true) => dynasm!(a ; .arch x64 ; xor rax, rcx),
    }
    // (NOT sets no flags.)
    match (complement, wide) {
        (false, _) => {}
        (true, false) => dynasm!(a ; .arch x64 ; not eax ; test eax, eax),
        (true, true) => dynasm!(a ; .arch x64 ; not rax ; test rax, rax),
    }
}

/// Byte offsets of a run's frame.
struct Frame {
    /// First external mask qword.
    ext: i32,
    /// First mask accumulator qword.
    acc: i32,
    /// Bytes (a multiple of 32).
    size: i32,
}

thread_local! {
    /// The register row an op stored last and the ymm register that still holds it,
    /// while the op emitted nothing after the store: set by [`store`], handed to the
    /// next op by [`emit_op`] (as [`STORED_IN`]), cleared where a group ends.
    static STORED: std::cell::Cell<Option<(u16, u8)>> = const { std::cell::Cell::new(None) };
    /// The row the previous op stored and the register holding it, for this op's
    /// loads (every op loads its sources before it computes anything): a load of that
    /// row is a register move, off the store-to-load path. Cleared when a load
    /// replaces the register.
    static STORED_IN: std::cell::Cell<Option<(u16, u8)>> = const { std::cell::Cell::new(None) };
    /// While [`uniform_rows`] lowers a group to learn the rows it touches: each
    /// vector-file row [`load`] reads and [`store`] writes (true), in order.
    static TOUCHED: std::cell::RefCell<Option<Vec<(u16, bool)>>> =
        const { std::cell::RefCell::new(None) };
}

/// Records a row access for [`uniform_rows`] (nothing unless it is listening).
fn touch(r: u16, write: bool) {
    TOUCHED.with(|t| {
        if let Some(v) = t.borrow_mut().as_mut() {
            v.push((r, write));
        }
    });
}

/// Loads `v` (this group's 8 lanes) into ymm `y`.
fn load(a: &mut Assembler, y: u8, v: Val) {
    if let Val::Row(r) = v {
        touch(r, false);
    }
    let held = STORED_IN.get();
    if let Some((_, h)) = held {
        if h == y && !matches!(v, Val::Row(r) if held.is_some_and(|(row, _)| row == r)) {
            STORED_IN.set(None);
        }
    }
    match v {
        Val::Row(r) => match held {
            Some((row, h)) if row == r => {
                if h != y {
                    dynasm!(a ; .arch x64 ; vmovdqa Ry(y), Ry(h));
                }
            }
            _ => {
                let disp = i32::from(r) * ROW;
                dynasm!(a ; .arch x64 ; vmovdqu Ry(y), [rdi + rdx + disp]);
            }
        },
        Val::Const(k) => {
            let disp = 32 * k as i32;
            dynasm!(a ; .arch x64 ; vmovdqu Ry(y), [rsp + disp]);
        }
        Val::Sreg(c) => {
            let disp = 4 * i32::from(c);
            dynasm!(a ; .arch x64 ; vpbroadcastd Ry(y), [rsi + disp]);
        }
        Val::Lanes(k) => {
            let disp = lanes_row(k);
            dynasm!(a ; .arch x64 ; vmovdqu Ry(y), [rbp + rdx + disp]);
        }
    }
}

/// The frame offset (from rbp) of loaded-lanes row `k`: the rows lie below the
/// saved rbp, row 0 highest.
fn lanes_row(k: u8) -> i32 {
    -ROW * (i32::from(k) + 1)
}

/// Checks the LDS accesses of a part before it does anything (after its prefix):
/// a load's lanes address one dword for all or (`consecutive`) consecutive dwords,
/// a store's consecutive dwords, every dword inside the LDS (r10 = the [`RunEnv`]);
/// else the run stops (returns `stop`). Leaves in r11 bit i set when access i is
/// consecutive (clear: one address). Uses rax, rcx, r9, ymm0..ymm5.
fn emit_lds_checks(a: &mut Assembler, b: &Builder, stop_code: i32) {
    if b.lds.is_empty() {
        return;
    }
    let stop = a.new_dynamic_label();
    let done = a.new_dynamic_label();
    dynasm!(a ; .arch x64 ; xor ecx, ecx);
    for (i, x) in b.lds.iter().enumerate() {
        let row = i32::from(x.f.addr) * ROW;
        let next = a.new_dynamic_label();
        // rax = lane 0's address (zero-extended), ymm0 = it in every lane.
        dynasm!(a
            ; .arch x64
            ; mov eax, [rdi + row]
            ; vmovd xmm0, eax
            ; vpbroadcastd ymm0, xmm0
        );
        if !x.f.store {
            let end = x.f.words[..x.f.n].iter().max().map_or(0, |&w| w as i32) + 4;
            let consecutive = a.new_dynamic_label();
            dynasm!(a ; .arch x64 ; vpcmpeqd ymm1, ymm0, [rdi + row]);
            for g in 1..8 {
                let disp = row + 32 * g;
                dynasm!(a ; .arch x64 ; vpcmpeqd ymm2, ymm0, [rdi + disp] ; vpand ymm1, ymm1, ymm2);
            }
            emit_lanes_in_lds(a, end, consecutive, stop);
            dynasm!(a ; .arch x64 ; jmp =>next ; =>consecutive);
        }
        if x.f.consecutive {
            let end = x.f.words[0] as i32 + ROW;
            emit_steps_check(a, row, 4);
            let bit = i as i8;
            emit_lanes_in_lds(a, end, stop, stop);
            dynasm!(a ; .arch x64 ; bts rcx, BYTE bit);
        } else {
            dynasm!(a ; .arch x64 ; jmp =>stop);
        }
        dynasm!(a ; .arch x64 ; =>next);
    }
    dynasm!(a ; .arch x64 ; mov r11, rcx);
    emit_stop_exit(a, stop, done, stop_code);
}

/// Goes to `stop` unless ymm`all` is all ones (every lane has the address shape
/// checked), then sets rax = lane 0's address (eax its low dword, ecx its high
/// one) plus `offset`, wrapping as the plans' addresses do ([`emit_join_lane0`]).
fn emit_lane0_address(a: &mut Assembler, all: u8, offset: i64, stop: DynamicLabel) {
    dynasm!(a
        ; .arch x64
        ; vpcmpeqd ymm5, ymm5, ymm5
        ; vptest Ry(all), ymm5
        ; jnc =>stop
    );
    emit_join_lane0(a, offset);
}

/// Sets rax = lane 0's address (its low dword in eax, its high one in ecx) plus
/// `offset`, wrapping.
fn emit_join_lane0(a: &mut Assembler, offset: i64) {
    dynasm!(a
        ; .arch x64
        ; shl rcx, 32
        ; or rax, rcx
        ; mov rcx, QWORD offset
        ; add rax, rcx
    );
}

/// Goes on at `done`; at `stop`, the run returns `stop_code` (see [`RunFn`]).
fn emit_stop_exit(a: &mut Assembler, stop: DynamicLabel, done: DynamicLabel, stop_code: i32) {
    dynasm!(a
        ; .arch x64
        ; jmp =>done
        ; =>stop
        ; vzeroupper
        ; mov eax, stop_code
        ; ret
        ; =>done
    );
}

/// Goes to `other` unless ymm1 is all ones (every lane has the shape checked), then
/// to `outside` unless lane 0's address (rax) plus `end` lies inside the LDS.
fn emit_lanes_in_lds(a: &mut Assembler, end: i32, other: DynamicLabel, outside: DynamicLabel) {
    dynasm!(a
        ; .arch x64
        ; vpcmpeqd ymm5, ymm5, ymm5
        ; vptest ymm1, ymm5
        ; jnc =>other
        ; lea r9, [rax + end]
        ; cmp r9, [r10 + ENV_LDS_LEN]
        ; ja =>outside
    );
}

/// Compares the lanes of the register at byte `row` of the vector file with lane
/// 0's value plus `step` per lane (ymm0 = lane 0's value in every lane; `step` at
/// most 31): ymm1 = all ones in the lanes that hold theirs, over all 8 groups. Uses
/// r9, ymm2..ymm4.
fn emit_steps_check(a: &mut Assembler, row: i32, step: i32) {
    // ymm2 = what group 0 must hold, then each next group's (+ 8 steps).
    let ramp: i64 = (0..8).fold(0, |r, l| r | i64::from(l * step) << (8 * l));
    let group = 8 * step;
    dynasm!(a
        ; .arch x64
        ; mov r9, QWORD ramp
        ; vmovq xmm2, r9
        ; vpmovzxbd ymm2, xmm2
        ; vpaddd ymm2, ymm2, ymm0
        ; mov r9d, group
        ; vmovd xmm3, r9d
        ; vpbroadcastd ymm3, xmm3
        ; vpcmpeqd ymm1, ymm2, [rdi + row]
    );
    for g in 1..8 {
        let disp = row + 32 * g;
        dynasm!(a
            ; .arch x64
            ; vpaddd ymm2, ymm2, ymm3
            ; vpcmpeqd ymm4, ymm2, [rdi + disp]
            ; vpand ymm1, ymm1, ymm4
        );
    }
}

/// Reads the part's LDS loads into their loaded-lanes rows and keeps its store's
/// host address in the frame (r10 = the [`RunEnv`], r11 as [`emit_lds_checks`]
/// leaves it).
fn emit_lds_rows(a: &mut Assembler, b: &Builder) {
    for (i, x) in b.lds.iter().enumerate() {
        let row = i32::from(x.f.addr) * ROW;
        // rax = the host address of lane 0's dword.
        dynasm!(a ; .arch x64 ; mov eax, [rdi + row] ; add rax, [r10 + ENV_LDS]);
        if x.f.store {
            let off = x.f.words[0] as i32;
            let at = -(ROW * i32::from(x.row)) - 8;
            dynasm!(a ; .arch x64 ; add rax, off ; mov [rbp + at], rax);
            continue;
        }
        let consecutive = a.new_dynamic_label();
        let done = a.new_dynamic_label();
        if x.f.consecutive {
            let bit = i as i8;
            dynasm!(a ; .arch x64 ; bt r11, BYTE bit ; jc =>consecutive);
        }
        for (k, &w) in x.f.words[..x.f.n].iter().enumerate() {
            let off = w as i32;
            dynasm!(a ; .arch x64 ; vpbroadcastd ymm0, DWORD [rax + off]);
            for g in 0..8 {
                let disp = lanes_row(x.row + k as u8) + 32 * g;
                dynasm!(a ; .arch x64 ; vmovdqu [rbp + disp], ymm0);
            }
        }
        if x.f.consecutive {
            dynasm!(a ; .arch x64 ; jmp =>done ; =>consecutive);
            for g in 0..8 {
                let src = x.f.words[0] as i32 + 32 * g;
                let disp = lanes_row(x.row) + 32 * g;
                dynasm!(a ; .arch x64 ; vmovdqu ymm0, [rax + src] ; vmovdqu [rbp + disp], ymm0);
            }
        }
        dynasm!(a ; .arch x64 ; =>done);
    }
}

/// Stores ymm `y` to this group's 8 lanes of register `r`.
fn store(a: &mut Assembler, r: u16, y: u8) {
    let disp = i32::from(r) * ROW;
    dynasm!(a ; .arch x64 ; vmovdqu [rdi + rdx + disp], Ry(y));
    touch(r, true);
    STORED.set(Some((r, y)));
}

/// The register holding mask `m` for this group (expanding an external mask into
/// ymm `tmp`).
fn mask(a: &mut Assembler, f: &Frame, m: MaskIn, tmp: u8) -> u8 {
    match m {
        MaskIn::Reg(k) => MASK_BASE + k as u8,
        MaskIn::Ext(k) => {
            let off = f.ext + 8 * k as i32;
            // The group's 8 bits (byte g), in every lane, tested against the lane
            // bits (row 0).
            dynasm!(a
                ; .arch x64
                ; movzx eax, BYTE [rsp + rcx + off]
                ; vmovd Rx(tmp), eax
                ; vpbroadcastd Ry(tmp), Rx(tmp)
                ; vpand Ry(tmp), Ry(tmp), [rsp]
                ; vpcmpeqd Ry(tmp), Ry(tmp), [rsp]
            );
            tmp
        }
    }
}

/// `y ^= all ones` (uses ymm15).
fn not(a: &mut Assembler, y: u8) {
    dynasm!(a ; .arch x64 ; vpcmpeqd ymm15, ymm15, ymm15 ; vpxor Ry(y), Ry(y), ymm15);
}

/// The register holding 0x8000_0000 in every lane while a run that needs it runs.
const BIAS: u8 = 14;

/// `out = x` with each lane's sign bit flipped (unsigned order to signed order).
fn bias(a: &mut Assembler, out: u8, x: u8) {
    dynasm!(a ; .arch x64 ; vpxor Ry(out), Ry(x), Ry(BIAS));
}

/// Whether condition `cond` (`simd::cmp_u32` numbering) is computed as the negation
/// of another: LE as not GT, NE as not EQ, GE as not LT (AVX2 compares only for
/// greater-than and equality).
fn negated(cond: u8) -> bool {
    matches!(cond, 3 | 5 | 6)
}

/// ymm `out` = compare `cond` (`simd::cmp_u32` numbering) of the signed-ordered
/// lanes `x` and `y`.
fn compare(a: &mut Assembler, cond: u8, x: u8, y: u8, out: u8) {
    match cond {
        0 => dynasm!(a ; .arch x64 ; vpxor Ry(out), Ry(out), Ry(out)),
        1 | 6 => dynasm!(a ; .arch x64 ; vpcmpgtd Ry(out), Ry(y), Ry(x)),
        2 | 5 => dynasm!(a ; .arch x64 ; vpcmpeqd Ry(out), Ry(x), Ry(y)),
        3 | 4 => dynasm!(a ; .arch x64 ; vpcmpgtd Ry(out), Ry(x), Ry(y)),
        _ => dynasm!(a ; .arch x64 ; vpcmpeqd Ry(out), Ry(out), Ry(out)),
    }
    if negated(cond) {
        not(a, out);
    }
}

impl Op {
    /// The run mask this op writes.
    fn mask_out(&self) -> Option<usize> {
        match *self {
            Op::Carry { cout, .. } => cout,
            Op::Cmp32 { out, .. } | Op::Cmp64 { out, .. } | Op::CmpF64 { out, .. } => Some(out),
            _ => None,
        }
    }

    /// The run mask this op reads.
    fn mask_in(&self) -> Option<usize> {
        match *self {
            Op::Carry {
                cin: Some(MaskIn::Reg(k)),
                ..
            }
            | Op::Cndmask {
                m: MaskIn::Reg(k), ..
            } => Some(k),
            _ => None,
        }
    }

    /// Whether the op flips sign bits (an unsigned compare or a carry out).
    fn needs_bias(&self) -> bool {
        matches!(
            self,
            Op::Carry { cout: Some(_), .. } | Op::Cmp32 { .. } | Op::Cmp64 { .. }
        )
    }

    /// Whether the op reads a mask from before the run.
    fn reads_ext(&self) -> bool {
        matches!(
            self,
            Op::Carry {
                cin: Some(MaskIn::Ext(_)),
                ..
            } | Op::Cndmask {
                m: MaskIn::Ext(_),
                ..
            }
        )
    }
}

/// Whether each op's mask result is used: read by a later op of the run before it
/// is written again, or the run's last value of that mask (which goes to the scalar
/// file). A mask result that is not used is not computed.
fn live_masks(ops: &[Op]) -> Vec<bool> {
    let mut live = [true; MASK_REGS];
    let mut out = vec![false; ops.len()];
    for (i, op) in ops.iter().enumerate().rev() {
        if let Some(k) = op.mask_out() {
            out[i] = live[k];
            live[k] = false;
        }
        if let Some(k) = op.mask_in() {
            live[k] = true;
        }
    }
    out
}

/// Emits one run, whose first entry is the block's `entry`, at `label`, adding a
/// way out to `exits` for each of its taken branches, and its way on to the next
/// run of its block (`on`, where one starts after its last entry); returns its
/// entry point.
fn emit_chain(
    a: &mut Assembler,
    c: &Chain,
    entry: usize,
    label: DynamicLabel,
    on: Option<FallThrough>,
    exits: &mut Exits,
) -> AssemblyOffset {
    let start = a.offset();
    dynasm!(a ; .arch x64 ; =>label);
    // The environment, out of the argument register the code uses; r8 = SCC, rsi =
    // the scalar file.
    dynasm!(a
        ; .arch x64
        ; mov r10, rdx
        ; lea r8, [rsi + OFF_SGPR + SCC_FROM_SGPR]
        ; lea rsi, [rsi + OFF_SGPR]
    );
    let wide = c.features.avx512;
    let mut cold = Vec::new();
    let mut done = 0;
    // Set when the access after part k ran with the one before it (the part
    // between them is empty).
    let mut paired = false;
    for (k, b) in c.parts.iter().enumerate() {
        if std::mem::take(&mut paired) {
            continue;
        }
        emit_part(a, b, done, wide);
        done += b.entries;
        if let Some(n) = b.branch.filter(|n| n.form == NativeForm::Jump) {
            // The block's last instruction: the run leaves for the address read.
            let exit = Box::new(Exit {
                target: AtomicPtr::new(std::ptr::null_mut()),
                entry: entry as u32,
                done: done as u32,
            });
            emit_jump(a, &n);
            emit_link(a, &exit, done as i32, true);
            exits.push(exit);
            let code = JUMPED_TO as i32 + done as i32;
            dynasm!(a ; .arch x64 ; mov eax, code ; ret);
        }
        if b.branch.is_some_and(|n| n.form == NativeForm::Barrier) {
            // The block's last instruction: the wave waits for the others of its
            // workgroup, out of the run.
            let code = AT_BARRIER as i32 + done as i32;
            dynasm!(a ; .arch x64 ; mov eax, code ; ret);
        }
        if let Some(NativeForm::Branch(op)) = b.branch.map(|n| n.form) {
            // A taken branch leaves the run (its last entry, or one not taken goes
            // on with the next part).
            let go = a.new_dynamic_label();
            let code = JUMPED as i32 + done as i32;
            emit_taken(a, op);
            dynasm!(a ; .arch x64 ; test eax, eax ; jz =>go);
            let exit = Box::new(Exit {
                target: AtomicPtr::new(std::ptr::null_mut()),
                entry: entry as u32,
                done: done as u32,
            });
            emit_link(a, &exit, done as i32, false);
            exits.push(exit);
            dynasm!(a ; .arch x64 ; mov eax, code ; ret ; =>go);
        }
        match c.accesses.get(k) {
            Some(Some(Access::Flat(f))) => emit_flat(a, f, 2 + done as i32, wide, &mut cold),
            Some(Some(Access::Private(p))) => emit_private(a, p, 2 + done as i32, wide),
            Some(Some(Access::Lane(p))) => emit_lane(a, p),
            Some(Some(Access::Bpermute(p))) => {
                let q = match (c.parts.get(k + 1), c.accesses.get(k + 1)) {
                    (Some(between), Some(Some(Access::Bpermute(q))))
                        if between.entries == 0 && pairs(p, q) =>
                    {
                        Some(q)
                    }
                    _ => None,
                };
                emit_bpermutes(a, p, q, 2 + done as i32);
                if q.is_some() {
                    paired = true;
                    done += 1;
                }
            }
            _ => continue,
        }
        done += 1;
    }
    debug_assert_eq!(done, c.entries(), "a run's code covers its entries");
    if let Some(on) = on {
        emit_fall_through(a, &on, done as i32);
    }
    dynasm!(a ; .arch x64 ; xor eax, eax ; ret);
    // The cold paths, out of the way of the code that runs.
    for c in &cold {
        emit_partial_slot(a, c);
    }
    start
}

/// Emits `s_setpc_b64` or `s_swappc_b64` ([`NativeForm::Jump`]): the target read
/// to the [`RunEnv`]'s `target`, then, for `s_swappc_b64`, the next PC written.
fn emit_jump(a: &mut Assembler, n: &Native) {
    scalar_src(a, 0, n.a, true);
    dynasm!(a ; .arch x64 ; mov [r10 + ENV_TARGET], rax);
    scalar_src(a, 0, n.b, true);
    scalar_dst(a, n.d);
}

/// Emits a taken branch's way into its linked block's run ([`Exit`]), after
/// `done` entries of this run: when `exit` is linked and the checks hold, the
/// budget left and the instructions ran are updated in the [`RunEnv`] and the code
/// jumps to the target run with this run's arguments; else it falls through,
/// having written the link (or null) to the [`RunEnv`]'s `exit`. A `dynamic` way
/// out (an `s_setpc_b64` or `s_swappc_b64`) enters the linked run only if its
/// block starts at the [`RunEnv`]'s `target`.
/// Between parts (no frame, rsp as at entry); uses rax, rcx and rdx.
fn emit_link(a: &mut Assembler, exit: &Exit, done: i32, dynamic: bool) {
    let plain = a.new_dynamic_label();
    let slot = &exit.target as *const AtomicPtr<Link> as i64;
    dynasm!(a
        ; .arch x64
        ; mov rax, QWORD slot
        ; mov rax, [rax]
        ; test rax, rax
        ; jz =>plain
    );
    if dynamic {
        dynasm!(a
            ; .arch x64
            ; mov rdx, [r10 + ENV_TARGET]
            ; cmp rdx, [rax + LINK_PC]
            ; jne =>plain
        );
    }
    dynasm!(a
        ; .arch x64
        ; mov rcx, [r10 + ENV_LEFT]
        ; sub rcx, done
        ; cmp rcx, [rax + LINK_NEED]
        ; jl =>plain
        ; mov rdx, [rax + LINK_ROWS]
        ; cmp rdx, [r10 + ENV_ROWS]
        ; ja =>plain
        ; mov edx, [rax + LINK_MODES]
        ; test edx, [r10 + ENV_UNMET]
        ; jnz =>plain
        ; mov rdx, [r10 + ENV_STOP]
        ; cmp BYTE [rdx], 0
        ; jne =>plain
        ; mov [r10 + ENV_LEFT], rcx
        ; add QWORD [r10 + ENV_RAN], done
        ; mov rdx, [rax + LINK_PC]
        ; mov [r10 + ENV_PC], rdx
        ; mov QWORD [r10 + ENV_ENTRY], 0
        ; lea rsi, [rsi - OFF_SGPR]
        ; mov rdx, r10
        ; jmp QWORD [rax + LINK_FUNC]
        ; =>plain
        ; mov [r10 + ENV_EXIT], rax
    );
}

/// Emits a run's way on to the next run of its block ([`FallThrough`]) after its
/// `done` entries, all of them: when the checks hold, the [`RunEnv`]'s budget,
/// instructions ran and entry are updated and the code jumps to the next run with
/// this run's arguments; else it goes on after this code.
/// Between parts (no frame, rsp as at entry); uses rax.
fn emit_fall_through(a: &mut Assembler, on: &FallThrough, done: i32) {
    let plain = a.new_dynamic_label();
    let (rows, modes) = (on.needs.rows(), on.needs.modes());
    dynasm!(a
        ; .arch x64
        ; mov rax, [r10 + ENV_LEFT]
        ; sub rax, done
        ; cmp rax, on.needs.len as i32
        ; jl =>plain
    );
    if rows != 0 {
        dynasm!(a ; .arch x64 ; cmp QWORD [r10 + ENV_ROWS], rows ; jb =>plain);
    }
    if modes != 0 {
        dynasm!(a ; .arch x64 ; test DWORD [r10 + ENV_UNMET], modes ; jnz =>plain);
    }
    dynasm!(a
        ; .arch x64
        ; mov [r10 + ENV_LEFT], rax
        ; add QWORD [r10 + ENV_RAN], done
        ; mov QWORD [r10 + ENV_ENTRY], on.entry as i32
        ; lea rsi, [rsi - OFF_SGPR]
        ; mov rdx, r10
        ; jmp =>on.label
        ; =>plain
    );
}

/// Sets eax to 1 if the branch `op` is taken, else 0 (rsi = the scalar file, r8 =
/// SCC's byte).
fn emit_taken(a: &mut Assembler, op: SoppOp) {
    let test64 = |a: &mut Assembler, c: u8| {
        let off = 4 * i32::from(c);
        dynasm!(a ; .arch x64 ; xor eax, eax ; cmp QWORD [rsi + off], 0);
    };
    match op {
        SoppOp::SCbranchScc0 => dynasm!(a ; .arch x64 ; movzx eax, BYTE [r8] ; xor eax, 1),
        SoppOp::SCbranchScc1 => dynasm!(a ; .arch x64 ; movzx eax, BYTE [r8]),
        SoppOp::SCbranchVccz => {
            test64(a, code::VCC_LO);
            dynasm!(a ; .arch x64 ; sete al);
        }
        SoppOp::SCbranchVccnz => {
            test64(a, code::VCC_LO);
            dynasm!(a ; .arch x64 ; setne al);
        }
        SoppOp::SCbranchExecz => {
            test64(a, EXEC_LO);
            dynasm!(a ; .arch x64 ; sete al);
        }
        SoppOp::SCbranchExecnz => {
            test64(a, EXEC_LO);
            dynasm!(a ; .arch x64 ; setne al);
        }
        // s_branch (`ScalarPlan::native` gives no other).
        _ => dynasm!(a ; .arch x64 ; mov eax, 1),
    }
}

/// Emits one part of a run (without its branch), `done` entries of the run before
/// it.
fn emit_part(a: &mut Assembler, b: &Builder, done: usize, wide: bool) {
    let (before, after) = b.scalars.split_at(b.hoisted.min(b.scalars.len()));
    let (prefix, before) = before.split_at(b.prefix.min(before.len()));
    for n in prefix {
        emit_native(a, n);
    }
    if !b.ops.is_empty() {
        // Every lane active, or stop after the prefix.
        let stop_code = 2 + (done + b.prefix) as i32;
        let exec = 4 * i32::from(EXEC_LO);
        let go = a.new_dynamic_label();
        dynasm!(a
            ; .arch x64
            ; cmp QWORD [rsi + exec], -1
            ; je =>go
            ; mov eax, stop_code
            ; ret
            ; =>go
        );
        emit_lds_checks(a, b, stop_code);
    }
    for n in before {
        emit_native(a, n);
    }
    if wide && moves_only(b) {
        emit_moves_wide(a, b);
    } else if !b.ops.is_empty() {
        let rows = 1 + b.consts.len() as i32;
        let ext = 32 * rows;
        let acc = ext + 8 * b.ext.len() as i32;
        // The loaded-lanes rows and the store's address lie below the saved rbp, the
        // rest above rsp.
        let lds = ROW * b.lds_rows as i32 + if b.lds_stored { 8 } else { 0 };
        let size = (acc + 8 * b.masks.len() as i32 + lds + 31) & !31;
        let f = Frame { ext, acc, size };
        dynasm!(a
            ; .arch x64
            ; push rbp
            ; mov rbp, rsp
            ; sub rsp, f.size
            ; and rsp, -32
        );
        emit_vector(a, b, &f, wide);
        dynasm!(a
            ; .arch x64
            ; mov rsp, rbp
            ; pop rbp
            ; vzeroupper
        );
    }
    for n in after {
        emit_native(a, n);
    }
}

/// Whether the part's vector ops are all moves of registers, constants and scalar
/// dwords (`v_mov_b32`, `v_pk_mov_b32`, the AGPR moves: the spills and copies of
/// -O0 code), with no LDS access: [`emit_moves_wide`] can run them.
fn moves_only(b: &Builder) -> bool {
    let plain = |v: &Val| !matches!(v, Val::Lanes(_));
    !b.ops.is_empty()
        && b.lds.is_empty()
        && b.ops.iter().all(|op| match op {
            Op::Mov { a, .. } => plain(a),
            Op::PkMov { a, b, .. } => plain(a) && plain(b),
            _ => false,
        })
}

/// Emits the moves of a part [`moves_only`] accepts on a host with AVX-512: each
/// move on all 64 lanes (16 at a time, its sources read before its destinations
/// are written) before the next, which gives the group loop's results (a move
/// reads and writes its own lanes only), without its frame: a constant or scalar
/// source is broadcast once per move. Uses rax, zmm0 and zmm1.
fn emit_moves_wide(a: &mut Assembler, b: &Builder) {
    for op in &b.ops {
        let moves = match *op {
            Op::Mov { d, a: x } => vec![(d, x)],
            Op::PkMov { d, a: x, b: y } => vec![(d, x), (d + 1, y)],
            _ => continue,
        };
        for (z, &(_, v)) in (0u8..).zip(&moves) {
            match v {
                // Frame row k > 0 holds constant k - 1.
                Val::Const(k) => {
                    let c = b.consts.get(k.wrapping_sub(1)).copied().unwrap_or(0) as i32;
                    dynasm!(a ; .arch x64 ; mov eax, c);
                    zmm_splat(a, z, RAX);
                }
                Val::Sreg(c) => {
                    let at = 4 * i32::from(c);
                    dynasm!(a ; .arch x64 ; mov eax, [rsi + at]);
                    zmm_splat(a, z, RAX);
                }
                Val::Row(_) | Val::Lanes(_) => {}
            }
        }
        for g in 0..4 {
            for (z, &(_, v)) in (0u8..).zip(&moves) {
                if let Val::Row(r) = v {
                    zmm_load(a, z, RDI, i32::from(r) * ROW + 64 * g);
                }
            }
            for (z, &(d, _)) in (0u8..).zip(&moves) {
                zmm_store(a, RDI, i32::from(d) * ROW + 64 * g, z, 0);
            }
        }
    }
    dynasm!(a ; .arch x64 ; vzeroupper);
}

/// Emits a FLAT or GLOBAL access of a run (see [`Chain`]); returns `stop` when it
/// cannot run. Between parts: no frame, ymm registers free. Uses rax, rcx, rdx, r9,
/// r11, ymm0..ymm5 (`wide`: also zmm0, zmm1, k1 and k2 for a private slot, see
/// [`emit_private_rows`]) and the red zone (16 bytes below rsp; the code calls
/// nothing).
fn emit_flat(
    a: &mut Assembler,
    f: &FlatFusion,
    stop_code: i32,
    wide: bool,
    cold: &mut Vec<PartialSlot>,
) {
    let stop = a.new_dynamic_label();
    let done = a.new_dynamic_label();
    if f.flat {
        // Lanes 0 and 1 at one address: a private stack slot of every lane (see
        // `PrivateFusion`), or nothing this code does.
        let consecutive = a.new_dynamic_label();
        let lo = i32::from(f.vaddr) * ROW;
        let exec = 4 * i32::from(EXEC_LO);
        // Under a partial EXEC only a stack slot may run here (the consecutive
        // path needs every lane), and lanes 0 and 1 may be inactive: with AVX-512
        // the slot's cold check takes it ([`PartialSlot`]).
        let partial = wide.then(|| a.new_dynamic_label());
        if let Some(partial) = partial {
            dynasm!(a ; .arch x64 ; cmp QWORD [rsi + exec], -1 ; jne =>partial);
        }
        dynasm!(a
            ; .arch x64
            ; mov eax, [rdi + lo]
            ; cmp eax, [rdi + lo + 4]
            ; jne =>consecutive
        );
        let slot = PrivateFusion {
            address: PrivateAddress::Flat {
                vaddr: f.vaddr,
                offset: f.offset,
            },
            load: f.load,
            dwords: f.bytes / 4,
            reg: f.reg,
        };
        // A load's one address may be in the LDS aperture instead (the device
        // runtime's team state through a generic pointer).
        let shared = f.load.then(|| a.new_dynamic_label());
        let cold = partial.map(|p| (p, cold));
        emit_private_rows(a, &slot, stop, done, shared, wide, cold);
        dynasm!(a ; .arch x64 ; jmp =>done);
        if let Some(shared) = shared {
            // (Every lane: the broadcast writes them all.)
            dynasm!(a ; .arch x64 ; =>shared ; cmp QWORD [rsi + exec], -1 ; jne =>stop);
            emit_lds_broadcast(a, f, stop);
            dynasm!(a ; .arch x64 ; jmp =>done);
        }
        dynasm!(a ; .arch x64 ; =>consecutive);
    }
    emit_flat_range(a, f, stop);
    emit_window(a, i32::from(f.bytes), stop);
    emit_flat_data(a, f);
    emit_flat_stride(a, f, done);
    emit_flat_fallback(a, f, stop, done, stop_code);
}

/// Emits the way out of a FLAT access whose shape or range the run's code does
/// not take (at `stop`, having changed nothing): a call of [`flat_fallback`], which
/// runs it as the interpreter's plan would. The run goes on at `done` when it ran,
/// stops before it (`stop_code`) when the plan declined, and returns [`DEFERRED`]
/// when the plan deferred a gather. Between parts the run's state is all in the
/// wave (its registers, SCC) and rdi, rsi, r8 and r10, which the call saves.
fn emit_flat_fallback(
    a: &mut Assembler,
    f: &FlatFusion,
    stop: DynamicLabel,
    done: DynamicLabel,
    stop_code: i32,
) {
    let packed = pack_flat(f) as i64;
    let helper = flat_fallback as *const () as usize as i64;
    let deferred = DEFERRED as i32 + stop_code - 2;
    dynasm!(a
        ; .arch x64
        ; jmp =>done
        ; =>stop
        ; vzeroupper
        // Four pushes and 8 bytes keep rsp 16-aligned at the call (8 off at entry).
        ; push rdi
        ; push rsi
        ; push r8
        ; push r10
        ; sub rsp, 8
        ; lea rdi, [rsi - OFF_SGPR]
        ; mov rsi, r10
        ; mov rdx, QWORD packed
        ; mov rcx, QWORD f.offset
        ; mov rax, QWORD helper
        ; call rax
        ; add rsp, 8
        ; pop r10
        ; pop r8
        ; pop rsi
        ; pop rdi
        ; cmp eax, FALLBACK_RAN as i32
        ; je =>done
        ; cmp eax, FALLBACK_DEFERRED as i32
        ; je >deferred
        ; mov eax, stop_code
        ; ret
        ; deferred:
        ; mov eax, deferred
        ; ret
        ; =>done
    );
}

/// [`flat_fallback`]'s result: the access ran.
const FALLBACK_RAN: u32 = 1;
/// [`flat_fallback`]'s result: the access is a gather that deferred itself.
const FALLBACK_DEFERRED: u32 = 2;

/// A [`FlatFusion`]'s fields but its offset and key in one word, as
/// [`flat_fallback`] reads them: the address pair's register (bits 15:0), the data
/// register (31:16), bytes (39:32), load (40), FLAT (41).
fn pack_flat(f: &FlatFusion) -> u64 {
    u64::from(f.vaddr)
        | u64::from(f.reg) << 16
        | u64::from(f.bytes) << 32
        | u64::from(f.load) << 40
        | u64::from(f.flat) << 41
}

/// Runs, for a fused run, a FLAT or GLOBAL access its code declined (scattered
/// lanes, an aperture, EXEC not all ones, a region the wave has not cached): as
/// `WaveState::run_flat_plan` runs the access's plan between interpreted
/// instructions, a gather deferring itself when other waves share the worker.
/// Called by the run's code only (`emit_flat_fallback`), between two parts:
/// `wave` and `env` are the run's (`env.ctx` the wave's context, set by
/// [`run_fused`]), `packed` and `offset` the access ([`pack_flat`]). Returns
/// [`FALLBACK_RAN`], [`FALLBACK_DEFERRED`] (nothing done but the note and the
/// host's prefetch) or 0 (nothing done: the interpreter runs the access and
/// reports any fault).
unsafe extern "sysv64" fn flat_fallback(
    wave: *mut WaveState,
    env: *mut RunEnv,
    packed: u64,
    offset: i64,
) -> u32 {
    let f = FlatFusion {
        vaddr: packed as u16,
        reg: (packed >> 16) as u16,
        bytes: (packed >> 32) as u8,
        load: (packed >> 40) & 1 == 1,
        flat: (packed >> 41) & 1 == 1,
        offset,
        key: 0,
    };
    // SAFETY: the run's code passes the wave and the environment `run_fused` gave
    // it, and `env.ctx` points at the context `run_fused` holds exclusively for the
    // duration of the run; neither `run_fused` nor the run's code touches the wave,
    // the context or the LDS while this runs (the code keeps no pointer into them
    // but those it reloads after the call; the LDS pointer is refreshed below).
    let (w, env) = unsafe { (&mut *wave, &mut *env) };
    // SAFETY: as above; `env.ctx` was set from a `&mut WaveContext<'_>` that
    // outlives the run.
    let ctx = unsafe { &mut *env.ctx.cast::<WaveContext<'_>>() };
    // (No panic may unwind into the run's code.)
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.run_flat_fusion(&f, ctx)));
    env.lds = ctx.lds.as_mut_ptr();
    match ran {
        Ok(crate::state::Planned::Ran(_)) => FALLBACK_RAN,
        Ok(crate::state::Planned::Deferred) => FALLBACK_DEFERRED,
        _ => 0,
    }
}

/// Emits a move between a vector register's lane and a scalar register (see
/// [`LanePlan`]; between parts, it cannot fail): rax = the lane, rcx = the dword
/// moved.
fn emit_lane(a: &mut Assembler, p: &LanePlan) {
    // rax = the lane (modulo 64).
    let lane = |a: &mut Assembler, s: PlanSrc| match s {
        PlanSrc::Imm(n) => dynasm!(a ; .arch x64 ; mov eax, (n & 63) as i32),
        PlanSrc::Sreg(c) => {
            let at = 4 * i32::from(c);
            dynasm!(a ; .arch x64 ; mov eax, [rsi + at] ; and eax, 63);
        }
        // (A lane operand is a scalar: `scalar_dword` resolves nothing else.)
        PlanSrc::Vreg(_) => dynasm!(a ; .arch x64 ; xor eax, eax),
    };
    match *p {
        LanePlan::Read { sdst, src, lane: l } => {
            lane(a, l);
            let (row, d) = (i32::from(src) * ROW, 4 * i32::from(sdst));
            dynasm!(a ; .arch x64 ; mov ecx, [rdi + rax * 4 + row] ; mov [rsi + d], ecx);
        }
        LanePlan::Write {
            dst,
            value,
            lane: l,
        } => {
            lane(a, l);
            match value {
                PlanSrc::Imm(v) => dynasm!(a ; .arch x64 ; mov ecx, v as i32),
                PlanSrc::Sreg(c) => {
                    let at = 4 * i32::from(c);
                    dynasm!(a ; .arch x64 ; mov ecx, [rsi + at]);
                }
                PlanSrc::Vreg(_) => dynasm!(a ; .arch x64 ; xor ecx, ecx),
            }
            let row = i32::from(dst) * ROW;
            dynasm!(a ; .arch x64 ; mov [rdi + rax * 4 + row], ecx);
        }
        LanePlan::First { sdst, src } => {
            let (row, d) = (i32::from(src) * ROW, 4 * i32::from(sdst));
            let exec = 4 * i32::from(EXEC_LO);
            dynasm!(a
                ; .arch x64
                ; xor eax, eax
                ; mov rcx, [rsi + exec]
                ; test rcx, rcx
                ; jz >first
                ; bsf rax, rcx
                ; first:
                ; mov ecx, [rdi + rax * 4 + row]
                ; mov [rsi + d], ecx
            );
        }
    }
}

/// The check of a FLAT stack-slot access under a partial EXEC (see
/// [`emit_private_rows`]), emitted after the run's code ([`emit_partial_slot`]):
/// entered at `partial`, it goes on at `joined` with eax and ecx the first active
/// lane's address, or to `stop`, or (no lane active: nothing to do) to `done`; the
/// address pair's register at byte `lo` of the vector file, its high dwords at
/// `hi`.
struct PartialSlot {
    partial: DynamicLabel,
    joined: DynamicLabel,
    stop: DynamicLabel,
    done: DynamicLabel,
    lo: i32,
    hi: i32,
}

/// Emits a [`PartialSlot`]: the first active lane's address; then, 16 lanes at a
/// time, k1 = the active lanes (k2, from EXEC) whose two dwords are that
/// address's, which must be all of them (k3 = k1 XOR k2 clear). Uses rax, rcx,
/// r9, zmm0, zmm1 and k1..k3.
fn emit_partial_slot(a: &mut Assembler, c: &PartialSlot) {
    let exec = 4 * i32::from(EXEC_LO);
    let (lo, hi) = (c.lo, c.hi);
    dynasm!(a
        ; .arch x64
        ; =>c.partial
        ; bsf r9, QWORD [rsi + exec]
        ; jz =>c.done
        ; mov eax, [rdi + r9 * 4 + lo]
        ; mov ecx, [rdi + r9 * 4 + hi]
    );
    zmm_splat(a, 0, RAX);
    zmm_splat(a, 1, RCX);
    for g in 0..4 {
        kmovw_load(a, 2, RSI, exec + 2 * g);
        zmm_cmpeq_under(a, 1, 2, 0, RDI, lo + 64 * g);
        zmm_cmpeq_and(a, 1, 1, RDI, hi + 64 * g);
        kxorw(a, 3, 1, 2);
        kortestw(a, 3);
        dynasm!(a ; .arch x64 ; jnz =>c.stop);
    }
    dynasm!(a ; .arch x64 ; jmp =>c.joined);
}

/// Emits a MUBUF access to the private segment of a run (see [`Chain`] and
/// [`PrivateFusion`]); returns `stop` when it cannot run. Registers as
/// [`emit_flat`].
fn emit_private(a: &mut Assembler, p: &PrivateFusion, stop_code: i32, wide: bool) {
    let stop = a.new_dynamic_label();
    let done = a.new_dynamic_label();
    emit_private_rows(a, p, stop, done, None, wide, None);
    emit_stop_exit(a, stop, done, stop_code);
}

/// Bits of a V#'s dword 3 a private segment buffer's rows depend on: ADD_TID_ENABLE
/// (23), INDEX_STRIDE (22:21) and ELEMENT_SIZE (20:19) (`AMDGPUUsage.rst`, "Private
/// Segment Buffer"), and their values for wave64 scratch: ADD_TID on, index stride
/// 64 (3), 4-byte elements (1).
const SCRATCH_DW3_MASK: i32 = 1 << 23 | 3 << 21 | 3 << 19;
/// See [`SCRATCH_DW3_MASK`].
const SCRATCH_DW3: i32 = 1 << 23 | 3 << 21 | 1 << 19;
/// Scalar-file index of FLAT_SCRATCH's low dword.
const FLAT_SCRATCH_LO: i32 = 102;

/// Emits a private access's checks and copy: the lanes (FLAT: every lane active,
/// or with `wide` any, as MUBUF; MUBUF: none active goes to `done`), the address of
/// row 0 (dword 0 of the 64 lanes) in rax (FLAT: every active lane's address the
/// first one's (lane 0's without `wide`), in the private aperture,
/// dword-aligned, the row at FLAT_SCRATCH + offset · 64; MUBUF: the V# a
/// swizzled wave64 scratch buffer, the row at its base + SOFFSET + offset · 64),
/// the rows inside one window the wave has cached, then one 256-byte row per dword
/// between the host memory and the vector file, the active lanes' dwords only.
/// Goes to `stop`, having changed nothing, when a check fails; for FLAT, to
/// `shared` instead (when given) if the one address is in the LDS aperture, with
/// rax = that address. `wide` (a host with AVX-512): the lanes' addresses compared
/// and the rows copied 16 lanes at a time (zmm0, zmm1; k1 the lanes that match, k2
/// EXEC's lanes), as the AVX2 code does 8 at a time. With `partial` (a FLAT
/// access's label for a partial EXEC, and the run's cold paths), a FLAT access
/// under a partial EXEC runs too: the caller jumped to the label, and the
/// [`PartialSlot`] pushed here checks its active lanes out of line (-O0 code reads
/// and writes its stack slots inside `if`s).
fn emit_private_rows(
    a: &mut Assembler,
    p: &PrivateFusion,
    stop: DynamicLabel,
    done: DynamicLabel,
    shared: Option<DynamicLabel>,
    wide: bool,
    partial: Option<(DynamicLabel, &mut Vec<PartialSlot>)>,
) {
    let exec = 4 * i32::from(EXEC_LO);
    let flat = matches!(p.address, PrivateAddress::Flat { .. });
    match (flat, &partial) {
        // (A partial EXEC went to the cold check before.)
        (true, Some(_)) => {}
        (true, None) => dynasm!(a ; .arch x64 ; cmp QWORD [rsi + exec], -1 ; jne =>stop),
        (false, _) => dynasm!(a ; .arch x64 ; cmp QWORD [rsi + exec], 0 ; je =>done),
    }
    match p.address {
        PrivateAddress::Flat { vaddr, offset } => {
            let lo = i32::from(vaddr) * ROW;
            let hi = lo + ROW;
            if wide {
                // Every lane active: k1 = the lanes (16 per compare) whose two
                // dwords are lane 0's, which must be all of them.
                let joined = a.new_dynamic_label();
                dynasm!(a
                    ; .arch x64
                    ; mov eax, [rdi + lo]
                    ; mov ecx, [rdi + hi]
                );
                zmm_splat(a, 0, RAX);
                zmm_splat(a, 1, RCX);
                kxnorw_ones(a, 1);
                for g in 0..4 {
                    zmm_cmpeq_and(a, 1, 0, RDI, lo + 64 * g);
                    zmm_cmpeq_and(a, 1, 1, RDI, hi + 64 * g);
                }
                kortestw(a, 1);
                dynasm!(a ; .arch x64 ; jnc =>stop ; =>joined);
                if let Some((partial, cold)) = partial {
                    cold.push(PartialSlot {
                        partial,
                        joined,
                        stop,
                        done,
                        lo,
                        hi,
                    });
                }
                emit_join_lane0(a, offset);
            } else {
                dynasm!(a ; .arch x64 ; mov eax, [rdi + lo] ; mov ecx, [rdi + hi]);
                dynasm!(a
                    ; .arch x64
                    ; vmovd xmm0, eax
                    ; vpbroadcastd ymm0, xmm0
                    ; vmovd xmm1, ecx
                    ; vpbroadcastd ymm1, xmm1
                    ; vpcmpeqd ymm2, ymm2, ymm2
                );
                for g in 0..8 {
                    let d = 32 * g;
                    dynasm!(a
                        ; .arch x64
                        ; vpcmpeqd ymm3, ymm0, [rdi + lo + d]
                        ; vpand ymm2, ymm2, ymm3
                        ; vpcmpeqd ymm3, ymm1, [rdi + hi + d]
                        ; vpand ymm2, ymm2, ymm3
                    );
                }
                emit_lane0_address(a, 2, offset, stop);
            }
            let other = a.new_dynamic_label();
            dynasm!(a
                ; .arch x64
                ; mov rcx, rax
                ; shr rcx, 32
                ; mov rdx, [r10 + ENV_PRIVATE]
                ; shr rdx, 32
                ; cmp rcx, rdx
                ; jne =>other
            );
            let private = a.new_dynamic_label();
            dynasm!(a ; .arch x64 ; jmp =>private ; =>other);
            if let Some(shared) = shared {
                dynasm!(a
                    ; .arch x64
                    ; mov rdx, [r10 + ENV_SHARED]
                    ; shr rdx, 32
                    ; cmp rcx, rdx
                    ; je =>shared
                );
            }
            dynasm!(a
                ; .arch x64
                ; jmp =>stop
                ; =>private
                ; test eax, 3
                ; jnz =>stop
                ; mov eax, eax
                ; shl rax, 6
                ; add rax, [rsi + 4 * FLAT_SCRATCH_LO]
            );
        }
        PrivateAddress::Buffer {
            rsrc,
            soffset,
            offset,
        } => {
            let c = 4 * i32::from(rsrc);
            dynasm!(a
                ; .arch x64
                ; mov ecx, [rsi + c + 4]
                ; test ecx, ecx
                ; jns =>stop
                ; mov edx, [rsi + c + 12]
                ; and edx, SCRATCH_DW3_MASK
                ; cmp edx, SCRATCH_DW3
                ; jne =>stop
                ; mov eax, [rsi + c]
                ; and ecx, 0xFFFF
                ; shl rcx, 32
                ; or rax, rcx
            );
            match soffset {
                ScalarOffset::Sgpr(r) => {
                    let at = 4 * i32::from(r);
                    dynasm!(a ; .arch x64 ; mov ecx, [rsi + at] ; add rax, rcx);
                }
                ScalarOffset::Const(v) => {
                    dynasm!(a ; .arch x64 ; mov ecx, v as i32 ; add rax, rcx);
                }
            }
            let rows = i32::from(offset) * 64;
            dynasm!(a ; .arch x64 ; add rax, rows);
        }
    }
    let size = ROW * i32::from(p.dwords);
    dynasm!(a ; .arch x64 ; mov rcx, rax ; add rcx, size ; jc =>stop);
    emit_window(a, 4, stop);
    let copied = a.new_dynamic_label();
    if !flat || wide {
        // (FLAT: a partial EXEC came through the cold check.)
        let masked = a.new_dynamic_label();
        dynasm!(a ; .arch x64 ; cmp QWORD [rsi + exec], -1 ; jne =>masked);
        emit_private_copy(a, p, false, wide);
        dynasm!(a ; .arch x64 ; jmp =>copied ; =>masked);
        emit_private_copy(a, p, true, wide);
    } else {
        emit_private_copy(a, p, false, wide);
    }
    dynasm!(a ; .arch x64 ; =>copied ; vzeroupper);
}

/// Emits a FLAT load of `f.bytes` by every lane from one address in the LDS
/// aperture, rax (as `WaveState::lds_broadcast` does it: the dwords at the
/// address's low 32 bits read once and written to every lane); goes to `stop`,
/// having changed nothing, when they are not inside the LDS.
fn emit_lds_broadcast(a: &mut Assembler, f: &FlatFusion, stop: DynamicLabel) {
    let bytes = i32::from(f.bytes);
    dynasm!(a
        ; .arch x64
        ; mov eax, eax
        ; lea rcx, [rax + bytes]
        ; cmp rcx, [r10 + ENV_LDS_LEN]
        ; ja =>stop
        ; add rax, [r10 + ENV_LDS]
    );
    for k in 0..i32::from(f.bytes / 4) {
        let row = (i32::from(f.reg) + k) * ROW;
        dynasm!(a ; .arch x64 ; vpbroadcastd ymm0, DWORD [rax + 4 * k]);
        for g in 0..8 {
            dynasm!(a ; .arch x64 ; vmovdqu [rdi + row + 32 * g], ymm0);
        }
    }
    dynasm!(a ; .arch x64 ; vzeroupper);
}

/// Emits a private access's copy between the rows at rdx and the vector file:
/// whole rows, or (`masked`) the dwords of the lanes EXEC has (the others of a
/// row written back as they were: scratch is the wave's own). `wide`: 16 lanes at
/// a time (AVX-512; masked: the destination's stores under k2 = EXEC's 16 bits).
fn emit_private_copy(a: &mut Assembler, p: &PrivateFusion, masked: bool, wide: bool) {
    let exec = 4 * i32::from(EXEC_LO);
    if wide {
        let k = if masked { 2 } else { 0 };
        for g in 0..4 {
            if masked {
                kmovw_load(a, k, RSI, exec + 2 * g);
            }
            for d in 0..i32::from(p.dwords) {
                let mem = (RDX, ROW * d + 64 * g);
                let row = (RDI, (i32::from(p.reg) + d) * ROW + 64 * g);
                let (from, to) = if p.load { (mem, row) } else { (row, mem) };
                zmm_load(a, 0, from.0, from.1);
                zmm_store(a, to.0, to.1, 0, k);
            }
        }
        return;
    }
    if masked {
        dynasm!(a ; .arch x64 ; vmovdqu ymm4, [r10 + ENV_LANE_BITS]);
    }
    for g in 0..8 {
        if masked {
            // ymm3: all ones in the group's lanes EXEC has.
            dynasm!(a
                ; .arch x64
                ; movzx ecx, BYTE [rsi + exec + g]
                ; vmovd xmm3, ecx
                ; vpbroadcastd ymm3, xmm3
                ; vpand ymm3, ymm3, ymm4
                ; vpcmpeqd ymm3, ymm3, ymm4
            );
        }
        for k in 0..i32::from(p.dwords) {
            let mem = ROW * k + 32 * g;
            let row = (i32::from(p.reg) + k) * ROW + 32 * g;
            match (p.load, masked) {
                (true, false) => {
                    dynasm!(a ; .arch x64 ; vmovdqu ymm0, [rdx + mem] ; vmovdqu [rdi + row], ymm0)
                }
                (false, false) => {
                    dynasm!(a ; .arch x64 ; vmovdqu ymm0, [rdi + row] ; vmovdqu [rdx + mem], ymm0)
                }
                (true, true) => dynasm!(a
                    ; .arch x64
                    ; vmovdqu ymm0, [rdx + mem]
                    ; vmovdqu ymm1, [rdi + row]
                    ; vpblendvb ymm1, ymm1, ymm0, ymm3
                    ; vmovdqu [rdi + row], ymm1
                ),
                (false, true) => dynasm!(a
                    ; .arch x64
                    ; vmovdqu ymm0, [rdi + row]
                    ; vmovdqu ymm1, [rdx + mem]
                    ; vpblendvb ymm1, ymm1, ymm0, ymm3
                    ; vmovdqu [rdx + mem], ymm1
                ),
            }
        }
    }
}

/// Emits a FLAT or GLOBAL access's address checks (every lane active, the lanes'
/// addresses consecutive elements, the range neither wrapping nor, for FLAT, in an
/// aperture); leaves rax = the base, rcx = the end of the range.
fn emit_flat_range(a: &mut Assembler, f: &FlatFusion, stop: DynamicLabel) {
    let s = i32::from(f.bytes);
    let lo = i32::from(f.vaddr) * ROW;
    let hi = lo + ROW;
    let span = 63 * s;
    let size = 64 * s;
    let exec = 4 * i32::from(EXEC_LO);
    // Every lane active; the low dwords lane 0's + l·s without a carry out of lane
    // 0's (lane 1's first: a scattered access stops at once), the high dwords lane
    // 0's.
    dynasm!(a
        ; .arch x64
        ; cmp QWORD [rsi + exec], -1
        ; jne =>stop
        ; mov eax, [rdi + lo]
        ; mov ecx, [rdi + lo + 4]
        ; sub ecx, eax
        ; cmp ecx, s
        ; jne =>stop
        ; lea rcx, [rax + span]
        ; shr rcx, 32
        ; jnz =>stop
        ; vmovd xmm0, eax
        ; vpbroadcastd ymm0, xmm0
    );
    emit_steps_check(a, lo, s);
    dynasm!(a
        ; .arch x64
        ; mov ecx, [rdi + hi]
        ; vmovd xmm0, ecx
        ; vpbroadcastd ymm0, xmm0
    );
    for g in 0..8 {
        let disp = hi + 32 * g;
        dynasm!(a ; .arch x64 ; vpcmpeqd ymm4, ymm0, [rdi + disp] ; vpand ymm1, ymm1, ymm4);
    }
    // rax = the base (lane 0's address plus the offset, wrapping as the plan's
    // does), rcx = the end of the range; neither the last lane's element nor the
    // end may wrap.
    let offset = f.offset;
    emit_lane0_address(a, 1, offset, stop);
    dynasm!(a ; .arch x64 ; mov rcx, rax ; add rcx, size ; jc =>stop);
    if f.flat {
        // Outside both apertures: start > the last element, or the base past the
        // aperture's 4 GiB.
        for env in [ENV_SHARED, ENV_PRIVATE] {
            let clear = a.new_dynamic_label();
            dynasm!(a
                ; .arch x64
                ; lea r9, [rax + span]
                ; mov r11, [r10 + env]
                ; cmp r11, r9
                ; ja =>clear
                ; mov edx, -1
                ; or rdx, r11
                ; cmp rax, rdx
                ; jbe =>stop
                ; =>clear
            );
        }
    }
}

/// Emits the lookup of the window holding an access's range [rax, rcx): rdx = the
/// host address of the base, which must be a multiple of `s` (else `stop`), the
/// window's bounds in the red zone.
fn emit_window(a: &mut Assembler, s: i32, stop: DynamicLabel) {
    // The window holding [rax, rcx): rdx = its host address of the base; its bounds
    // kept in the red zone for the stride's next range. (The table: its count, then
    // three qwords per window.)
    let look = a.new_dynamic_label();
    let skip = a.new_dynamic_label();
    let found = a.new_dynamic_label();
    dynasm!(a
        ; .arch x64
        ; lea r9, [rsi + TABLE_FROM_SGPR]
        ; mov r11, [r9]
        ; add r9, 8
        ; =>look
        ; test r11, r11
        ; jz =>stop
        ; cmp rax, [r9]
        ; jb =>skip
        ; cmp rcx, [r9 + 8]
        ; jbe =>found
        ; =>skip
        ; add r9, 24
        ; dec r11
        ; jmp =>look
        ; =>found
        ; mov rdx, rax
        ; sub rdx, [r9]
        ; add rdx, [r9 + 16]
        ; mov r11, [r9]
        ; mov [rsp - 16], r11
        ; mov r11, [r9 + 8]
        ; mov [rsp - 8], r11
        ; test edx, s - 1
        ; jnz =>stop
    );
}

/// Emits a FLAT or GLOBAL access's copy between the vector file and the host
/// memory at rdx (loads and stores, dwords and qwords).
fn emit_flat_data(a: &mut Assembler, f: &FlatFusion) {
    let s = i32::from(f.bytes);
    let data = i32::from(f.reg) * ROW;
    // The data: dwords in lane order, or qwords split into (interleaved from) the
    // planes of the low and high dwords.
    for g in 0..8 {
        let row = data + 32 * g;
        match (f.load, s) {
            (true, 4) => dynasm!(a
                ; .arch x64
                ; vmovdqu ymm0, [rdx + 32 * g]
                ; vmovdqu [rdi + row], ymm0
            ),
            (false, 4) => dynasm!(a
                ; .arch x64
                ; vmovdqu ymm0, [rdi + row]
                ; vmovdqu [rdx + 32 * g], ymm0
            ),
            (true, _) => {
                dynasm!(a
                    ; .arch x64
                    ; vmovdqu ymm0, [rdx + 64 * g]
                    ; vmovdqu ymm1, [rdx + 64 * g + 32]
                );
                shufps(a, 2, 0, 1, 0x88);
                shufps(a, 3, 0, 1, 0xDD);
                // Qwords 0, 2, 1, 3: the groups' dwords back in lane order.
                let order = 0xD8u8 as i8;
                dynasm!(a
                    ; .arch x64
                    ; vpermq ymm2, ymm2, order
                    ; vpermq ymm3, ymm3, order
                    ; vmovdqu [rdi + row], ymm2
                    ; vmovdqu [rdi + row + ROW], ymm3
                );
            }
            (false, _) => dynasm!(a
                ; .arch x64
                ; vmovdqu ymm0, [rdi + row]
                ; vmovdqu ymm1, [rdi + row + ROW]
                ; vpunpckldq ymm2, ymm0, ymm1
                ; vpunpckhdq ymm3, ymm0, ymm1
                ; vperm2i128 ymm4, ymm2, ymm3, 0x20
                ; vperm2i128 ymm5, ymm2, ymm3, 0x31
                ; vmovdqu [rdx + 64 * g], ymm4
                ; vmovdqu [rdx + 64 * g + 32], ymm5
            ),
        }
    }
}

/// Emits a FLAT or GLOBAL access's stride bookkeeping (the plan's slot of the stride
/// table) and the prefetch of the next range when the stride is confirmed.
fn emit_flat_stride(a: &mut Assembler, f: &FlatFusion, done: DynamicLabel) {
    let size = 64 * i32::from(f.bytes);
    // The stride table (`StrideTable::observe`'s rule): r9 = the plan's slot, found
    // by its key or, new, taking the slot `next` names.
    let key = f.key as i64;
    let found = a.new_dynamic_label();
    let slot: Vec<_> = (0..crate::stride::SLOTS)
        .map(|_| a.new_dynamic_label())
        .collect();
    dynasm!(a
        ; .arch x64
        ; vzeroupper
        ; lea r9, [rsi + STRIDES_FROM_SGPR]
        ; mov rcx, QWORD key
    );
    for (j, l) in slot.iter().enumerate() {
        let at = 24 * j as i32;
        dynasm!(a ; .arch x64 ; cmp [r9 + at], rcx ; je =>*l);
    }
    let slots = crate::stride::SLOTS as i32;
    dynasm!(a
        ; .arch x64
        ; mov r11, [r9 + NEXT_OFFSET]
        ; lea rcx, [r11 + 1]
        ; cmp ecx, slots
        ; jb >wrap
        ; xor ecx, ecx
        ; wrap:
        ; mov [r9 + NEXT_OFFSET], rcx
        ; lea r11, [r11 + r11 * 2]
        ; lea r9, [r9 + r11 * 8]
        ; mov rcx, QWORD key
        ; mov [r9], rcx
        ; mov [r9 + 8], rax
        ; mov QWORD [r9 + 16], 0
        ; jmp =>done
    );
    for (j, l) in slot.iter().enumerate() {
        let at = 24 * j as i32;
        dynasm!(a ; .arch x64 ; =>*l ; lea r9, [r9 + at] ; jmp =>found);
    }
    // A stride (base - last), confirmed when it repeats, is not zero and at most
    // MAX_STRIDE either way; then the next range, when the window holds it, is asked
    // for (for writing, for a store).
    let max = MAX_STRIDE as i32;
    // (2 · MAX_STRIDE as a 32-bit immediate, zero-extended into r9.)
    let twice = (2 * MAX_STRIDE) as u32 as i32;
    dynasm!(a
        ; .arch x64
        ; =>found
        ; mov rcx, rax
        ; sub rcx, [r9 + 8]
        ; mov [r9 + 8], rax
        ; cmp rcx, [r9 + 16]
        ; mov [r9 + 16], rcx
        ; jne =>done
        ; test rcx, rcx
        ; jz =>done
        ; lea r11, [rcx + max]
        ; mov r9d, twice
        ; cmp r11, r9
        ; ja =>done
        ; lea r11, [rax + rcx]
        ; cmp r11, [rsp - 16]
        ; jb =>done
        ; add r11, size
        ; jc =>done
        ; cmp r11, [rsp - 8]
        ; ja =>done
        ; add rdx, rcx
    );
    for line in 0..size / 64 {
        let at = 64 * line;
        if f.load {
            dynasm!(a ; .arch x64 ; prefetcht1 [rdx + at]);
        } else {
            dynasm!(a ; .arch x64 ; prefetchw [rdx + at]);
        }
    }
}

/// Whether bpermute `q`, the access right after bpermute `p` in a run (no op
/// between them), runs together with it ([`emit_bpermutes`]): the same address
/// register and offset (LLVM's reductions move a double's two halves by one
/// address), and destinations apart from every source, so that each group's
/// results can be written as soon as they are read and `q` reads what it would
/// have read after `p` (when both destinations are one register, `q`'s result,
/// written second, stays).
fn pairs(p: &BpermuteFusion, q: &BpermuteFusion) -> bool {
    let sources = [p.addr, p.data, q.data];
    p.addr == q.addr
        && p.offset == q.offset
        && !sources.contains(&p.dst)
        && !sources.contains(&q.dst)
}

/// Emits a `ds_bpermute_b32` of a run (see [`Chain`]), or two that [`pairs`]
/// joins (`q`); goes to a stop with `stop_code` unless every lane is active. Each
/// group's 8 source lanes (computed once for both) are one load when they are
/// consecutive and in order (LLVM's reductions shift the wave down by 32, 16, ...
/// 1 lanes: every group but at most one is; lane 7's source, at most 63, is then
/// lane 0's plus 7, so all 8 lie in the register), else a VPGATHERDD. Alone, all 8
/// groups are read (into ymm6..ymm13) before the destination is written, so that it
/// may be either source; a pair writes each group's two results at once. Between
/// parts: uses rax, rcx and ymm0..ymm13.
fn emit_bpermutes(
    a: &mut Assembler,
    p: &BpermuteFusion,
    q: Option<&BpermuteFusion>,
    stop_code: i32,
) {
    let row_of = |r: u16| i32::from(r) * ROW;
    let addr = row_of(p.addr);
    let stop = a.new_dynamic_label();
    let done = a.new_dynamic_label();
    let exec = 4 * i32::from(EXEC_LO);
    let offset = p.offset as i32;
    dynasm!(a
        ; .arch x64
        ; cmp QWORD [rsi + exec], -1
        ; jne =>stop
        ; vmovdqu ymm5, [r10 + ENV_IOTA]
        ; mov eax, offset
        ; vmovd xmm4, eax
        ; vpbroadcastd ymm4, xmm4
    );
    // (data row, output register) of each bpermute: a pair's in ymm6 and ymm7 for
    // every group, one alone's in ymm6 + g.
    let pair = q.map(|q| [(row_of(p.data), 6), (row_of(q.data), 7)]);
    for g in 0..8u8 {
        let alone = [(row_of(p.data), 6 + g)];
        let outs: &[(i32, u8)] = match &pair {
            Some(two) => two,
            None => &alone,
        };
        let row = addr + 32 * i32::from(g);
        let gather = a.new_dynamic_label();
        let next = a.new_dynamic_label();
        // ymm0 = the source lanes: bits 7:2 of address + offset.
        dynasm!(a
            ; .arch x64
            ; vpaddd ymm0, ymm4, [rdi + row]
            ; vpslld ymm0, ymm0, 24
            ; vpsrld ymm0, ymm0, 26
            ; vpbroadcastd ymm1, xmm0
            ; vpaddd ymm1, ymm1, ymm5
            ; vpcmpeqd ymm1, ymm1, ymm0
        );
        movmsk_eax(a, 1);
        dynasm!(a
            ; .arch x64
            ; vmovd ecx, xmm0
            ; cmp eax, 0xFF
            ; jne =>gather
        );
        for &(data, out) in outs {
            dynasm!(a ; .arch x64 ; vmovdqu Ry(out), [rdi + rcx * 4 + data]);
        }
        dynasm!(a ; .arch x64 ; jmp =>next ; =>gather);
        for &(data, out) in outs {
            dynasm!(a ; .arch x64 ; vpcmpeqd ymm2, ymm2, ymm2);
            gather_dd(a, out, 0, 2, data);
        }
        dynasm!(a ; .arch x64 ; =>next);
        if let Some(q) = q {
            let at = 32 * i32::from(g);
            let (d0, d1) = (row_of(p.dst) + at, row_of(q.dst) + at);
            dynasm!(a ; .arch x64 ; vmovdqu [rdi + d0], ymm6 ; vmovdqu [rdi + d1], ymm7);
        }
    }
    if q.is_none() {
        for g in 0..8u8 {
            let at = row_of(p.dst) + 32 * i32::from(g);
            dynasm!(a ; .arch x64 ; vmovdqu [rdi + at], Ry(6 + g));
        }
    }
    dynasm!(a ; .arch x64 ; vzeroupper);
    emit_stop_exit(a, stop, done, stop_code);
}

/// `vpgatherdd ymm<dst>, [rdi + ymm<index>·4 + disp], ymm<mask>` (dword `index[i]`
/// of the row at `rdi + disp` into lane i, for the lanes whose mask sign bit is
/// set; the mask is cleared). The three registers must differ. Encoded here as
/// VEX.256.66.0F38.W0 90 /r with a VSIB byte and a 32-bit displacement (dynasm-rs
/// 3.2.1 encodes the same instruction right too, `[rdi + ymm0 * 4 + disp]`, as the
/// tests in `jit/tests.rs` check).
fn gather_dd(a: &mut Assembler, dst: u8, index: u8, mask: u8, disp: i32) {
    debug_assert!(dst != index && dst != mask && index != mask);
    let b1 = (u8::from(dst < 8) << 7) | (u8::from(index < 8) << 6) | (1 << 5) | 2;
    let b2 = ((!mask & 15) << 3) | (1 << 2) | 1;
    // ModRM: disp32, reg = dst, rm = SIB; SIB: scale 4, index, base rdi.
    let modrm = 0x80 | ((dst & 7) << 3) | 4;
    let sib = 0x80 | ((index & 7) << 3) | 7;
    a.extend([0xC4, b1, b2, 0x90, modrm, sib]);
    a.extend(disp.to_le_bytes());
}

/// Emits `ops` on one group of 8 lanes (rdx, rcx), `live` saying which mask results
/// are used ([`live_masks`]); no register holds a row when it starts or ends.
fn emit_group(a: &mut Assembler, f: &Frame, ops: &[Op], live: &[bool]) {
    STORED.set(None);
    STORED_IN.set(None);
    for (op, &l) in ops.iter().zip(live) {
        emit_op(a, f, op, l);
    }
    STORED.set(None);
    STORED_IN.set(None);
}

/// The vector-file rows a part's ops read before writing them (`live_in`) and the
/// rows they write, in first-access order, when the part may run its ops on one
/// group for the whole wave ([`emit_uniform_group`]): none of its ops depends on
/// the lane (no `v_mbcnt`, no LDS lanes; a mask from before the run only where it
/// is all set or all clear, which the group checks), so that rows equal in every
/// lane give results equal in every lane. `None` also where the checks would cost
/// more than the seven groups they save (a few micro-ops per op and group, against
/// about 12 per row checked and 8 per row copied). The rows are those [`load`] and
/// [`store`] see while the ops are lowered once into a scratch buffer.
fn uniform_rows(b: &Builder, f: &Frame, live: &[bool]) -> Option<UniformRows> {
    let lane_bound = |op: &Op| matches!(op, Op::Mbcnt { .. } | Op::LdsStore { .. });
    if b.ops.is_empty() || !b.lds.is_empty() || b.ops.iter().any(lane_bound) {
        return None;
    }
    let mut scratch = Assembler::new().ok()?;
    TOUCHED.with(|t| *t.borrow_mut() = Some(Vec::new()));
    emit_group(&mut scratch, f, &b.ops, live);
    let touched = TOUCHED.with(|t| t.borrow_mut().take())?;
    let mut u = UniformRows::default();
    for (r, write) in touched {
        if u.written.contains(&r) || u.live_in.contains(&r) && !write {
            continue;
        }
        if write {
            u.written.push(r);
        } else {
            u.live_in.push(r);
        }
    }
    let (ops, checked, copied) = (b.ops.len(), u.live_in.len(), u.written.len());
    (7 * 4 * ops > 12 * checked + 8 * copied).then_some(u)
}

/// The rows of a part that runs on one group ([`uniform_rows`]).
#[derive(Debug, Default)]
struct UniformRows {
    live_in: Vec<u16>,
    written: Vec<u16>,
}

/// Emits a part's ops on group 0 only, for every lane, when each of its live-in
/// rows holds one value in all 64 lanes and each mask it reads from before the run
/// is all clear or all set (EXEC is all ones here, checked by
/// [`emit_part`]): -O0 code computes most of its values, such as its stack
/// addresses, from scalars, so that its rows are mostly uniform. Otherwise it
/// goes on at the group loop, which follows. A row equal in every lane gives equal
/// lanes through ops that do not depend on the lane, so group 0's results are
/// every group's: each written row's 8 lanes are copied to the other 56, and each
/// mask's 8 bits (all set or all clear) to its 64, then it goes to `tail` (the
/// masks' write-back). On a host with AVX-512 (`wide`), compares 16 lanes at a
/// time and writes a row's lane 0 to its 64 lanes in four stores; else 8 lanes at
/// a time. Uses rax, ymm0..ymm2 (zmm0, k1).
fn emit_uniform_group(
    a: &mut Assembler,
    b: &Builder,
    f: &Frame,
    live: &[bool],
    u: &UniformRows,
    wide: bool,
    tail: DynamicLabel,
) {
    let general = a.new_dynamic_label();
    // Each mask from before the run all clear or all set (its qword plus 1 is 0 or 1).
    for k in 0..b.ext.len() {
        let off = f.ext + 8 * k as i32;
        dynasm!(a
            ; .arch x64
            ; mov rax, [rsp + off]
            ; add rax, 1
            ; cmp rax, 1
            ; ja =>general
        );
    }
    // Lane 0 against lane 63 first: a row that differs by lane most often differs
    // there too, and this costs two instructions.
    for &r in &u.live_in {
        let d = i32::from(r) * ROW;
        dynasm!(a
            ; .arch x64
            ; mov eax, [rdi + d]
            ; cmp eax, [rdi + d + ROW - 4]
            ; jne =>general
        );
    }
    if wide {
        kxnorw_ones(a, 1);
        for &r in &u.live_in {
            let d = i32::from(r) * ROW;
            dynasm!(a ; .arch x64 ; mov eax, [rdi + d]);
            zmm_splat(a, 0, RAX);
            for g in 0..4 {
                zmm_cmpeq_and(a, 1, 0, RDI, d + 64 * g);
            }
        }
        kortestw(a, 1);
        dynasm!(a ; .arch x64 ; jnc =>general);
    } else {
        dynasm!(a ; .arch x64 ; vpcmpeqd ymm2, ymm2, ymm2);
        for &r in &u.live_in {
            let d = i32::from(r) * ROW;
            dynasm!(a ; .arch x64 ; vpbroadcastd ymm0, [rdi + d]);
            for g in 0..8 {
                let at = d + 32 * g;
                dynasm!(a
                    ; .arch x64
                    ; vpcmpeqd ymm1, ymm0, [rdi + at]
                    ; vpand ymm2, ymm2, ymm1
                );
            }
        }
        dynasm!(a
            ; .arch x64
            ; vpcmpeqd ymm1, ymm1, ymm1
            ; vptest ymm2, ymm1
            ; jnc =>general
        );
    }
    emit_group(a, f, &b.ops, live);
    // Group 0's mask bits, all set or all clear, sign-extended to 64.
    for k in 0..b.masks.len() {
        movmsk_eax(a, MASK_BASE + k as u8);
        dynasm!(a ; .arch x64 ; movsx rax, al);
        match k {
            0 => dynasm!(a ; .arch x64 ; mov r9, rax),
            1 => dynasm!(a ; .arch x64 ; mov r11, rax),
            _ => {
                let off = f.acc + 8 * k as i32;
                dynasm!(a ; .arch x64 ; mov [rsp + off], rax);
            }
        }
    }
    for &r in &u.written {
        let d = i32::from(r) * ROW;
        if wide {
            dynasm!(a ; .arch x64 ; mov eax, [rdi + d]);
            zmm_splat(a, 0, RAX);
            for g in 0..4 {
                zmm_store(a, RDI, d + 64 * g, 0, 0);
            }
            continue;
        }
        dynasm!(a ; .arch x64 ; vmovdqu ymm0, [rdi + d]);
        for g in 1..8 {
            let at = d + 32 * g;
            dynasm!(a ; .arch x64 ; vmovdqu [rdi + at], ymm0);
        }
    }
    dynasm!(a ; .arch x64 ; jmp =>tail ; =>general);
}

/// Emits the vector ops of a run: the frame's rows and masks, the loop over the
/// groups, and the masks' write-back to the scalar file.
fn emit_vector(a: &mut Assembler, b: &Builder, f: &Frame, wide: bool) {
    if b.ops.iter().any(Op::reads_ext) {
        for i in 0..8 {
            let off = 4 * i;
            let bit = 1i32 << i;
            dynasm!(a ; .arch x64 ; mov DWORD [rsp + off], bit);
        }
    }
    for (k, &v) in b.consts.iter().enumerate() {
        let (v, off) = (v as i32, 32 * (k as i32 + 1));
        dynasm!(a
            ; .arch x64
            ; mov eax, v
            ; vmovd xmm0, eax
            ; vpbroadcastd ymm0, xmm0
            ; vmovdqu [rsp + off], ymm0
        );
    }
    emit_lds_rows(a, b);
    if b.ops.iter().any(Op::needs_bias) {
        let v = 0x8000_0000u32 as i32;
        dynasm!(a ; .arch x64 ; mov eax, v ; vmovd Rx(BIAS), eax ; vpbroadcastd Ry(BIAS), Rx(BIAS));
    }
    for (k, e) in b.ext.iter().enumerate() {
        for (h, s) in e.iter().enumerate() {
            let off = f.ext + 8 * k as i32 + 4 * h as i32;
            match *s {
                Scalar::Sreg(c) => {
                    let src = 4 * i32::from(c);
                    dynasm!(a ; .arch x64 ; mov eax, [rsi + src] ; mov [rsp + off], eax);
                }
                Scalar::Imm(v) => {
                    let v = v as i32;
                    dynasm!(a ; .arch x64 ; mov DWORD [rsp + off], v);
                }
            }
        }
    }
    let top = a.new_dynamic_label();
    dynasm!(a ; .arch x64 ; xor edx, edx ; xor ecx, ecx);
    // (Masks 0 and 1 accumulate from zero; see below.)
    match b.masks.len() {
        0 => {}
        1 => dynasm!(a ; .arch x64 ; xor r9d, r9d),
        _ => dynasm!(a ; .arch x64 ; xor r9d, r9d ; xor r11d, r11d),
    }
    let live = live_masks(&b.ops);
    let tail = a.new_dynamic_label();
    if let Some(u) = uniform_rows(b, f, &live) {
        emit_uniform_group(a, b, f, &live, &u, wide, tail);
    }
    dynasm!(a ; .arch x64 ; =>top);
    // Two groups per trip of the loop.
    for half in 0..2 {
        if half == 1 {
            dynasm!(a ; .arch x64 ; add edx, 32 ; inc ecx);
        }
        emit_group(a, f, &b.ops, &live);
        // The group's 8 bits of each mask are byte g of its accumulator: masks 0 and
        // 1 put into the low byte of r9 and r11, which then rotate right by a byte
        // (after the 8 groups, group g's byte is byte g), the others stored to their
        // byte in the frame. (Read back as one qword, eight byte stores would stall
        // the load until they all left the store buffer. SHRD, which shifts a byte in
        // from the top in one instruction, is several micro-ops on AMD's cores: the
        // STREAM copy kernel ran 2.5% slower with it on the EPYC this was measured on.)
        for k in 0..b.masks.len() {
            movmsk_eax(a, MASK_BASE + k as u8);
            match k {
                0 => dynasm!(a ; .arch x64 ; or r9, rax ; ror r9, 8),
                1 => dynasm!(a ; .arch x64 ; or r11, rax ; ror r11, 8),
                _ => {
                    let off = f.acc + 8 * k as i32;
                    dynasm!(a ; .arch x64 ; mov [rsp + rcx + off], al);
                }
            }
        }
    }
    dynasm!(a
        ; .arch x64
        ; add edx, 32
        ; inc ecx
        ; cmp ecx, (WAVE_SIZE / 8) as i32
        ; jb =>top
        ; =>tail
    );
    for (k, pair) in b.masks.iter().enumerate() {
        match k {
            0 => dynasm!(a ; .arch x64 ; mov rax, r9),
            1 => dynasm!(a ; .arch x64 ; mov rax, r11),
            _ => {
                let off = f.acc + 8 * k as i32;
                dynasm!(a ; .arch x64 ; mov rax, [rsp + off]);
            }
        }
        // A register pair is written as one qword (a later 64-bit read of it, such
        // as the scalar code's, then takes the value from this store).
        if pair[0] < 127 && pair[1] == pair[0] + 1 {
            let d = 4 * i32::from(pair[0]);
            dynasm!(a ; .arch x64 ; mov [rsi + d], rax);
            continue;
        }
        if pair[0] < 128 {
            let d = 4 * i32::from(pair[0]);
            dynasm!(a ; .arch x64 ; mov [rsi + d], eax);
        }
        if pair[1] < 128 {
            let d = 4 * i32::from(pair[1]);
            dynasm!(a ; .arch x64 ; shr rax, 32 ; mov [rsi + d], eax);
        }
    }
}

/// Emits one op for the current group (temporaries ymm0..ymm7, ymm15); `live`:
/// whether its mask result is used (see [`live_masks`]).
fn emit_op(a: &mut Assembler, f: &Frame, op: &Op, live: bool) {
    STORED_IN.set(STORED.take());
    match *op {
        Op::Mov { d, a: x } => {
            load(a, 0, x);
            store(a, d, 0);
        }
        Op::PkMov { d, a: x, b: y } => {
            load(a, 0, x);
            load(a, 1, y);
            store(a, d, 0);
            store(a, d + 1, 1);
        }
        Op::Bin {
            op,
            d,
            a: x,
            b: y,
            aux,
        } => emit_bin(a, op, d, x, y, aux),
        Op::Tri { op, d, src, aux } => emit_tri(a, op, d, src, aux),
        Op::Carry {
            sub,
            d,
            a: x,
            b: y,
            cin,
            cout,
        } => {
            load(a, 0, x);
            load(a, 1, y);
            if sub {
                dynasm!(a ; .arch x64 ; vpsubd ymm2, ymm0, ymm1);
            } else {
                dynasm!(a ; .arch x64 ; vpaddd ymm2, ymm0, ymm1);
            }
            // A set carry-in lane is all ones (-1): subtracting it adds 1, adding it
            // subtracts 1.
            let m = cin.map(|m| mask(a, f, m, 3));
            match (m, sub) {
                (Some(m), false) => dynasm!(a ; .arch x64 ; vpsubd ymm2, ymm2, Ry(m)),
                (Some(m), true) => dynasm!(a ; .arch x64 ; vpaddd ymm2, ymm2, Ry(m)),
                (None, _) => {}
            }
            store(a, d, 2);
            if let (Some(k), true) = (cout, live) {
                // Add: carried when the sum wrapped below a (or to a with a carry-in).
                // Subtract: borrowed when b exceeds a (or equals it with a borrow-in).
                let (hi, lo, eq) = if sub { (1, 0, 1) } else { (0, 2, 2) };
                let r = MASK_BASE + k as u8;
                bias(a, 4, hi);
                bias(a, 5, lo);
                match m {
                    // The carry-in register is read before the carry-out replaces it.
                    Some(m) => dynasm!(a
                        ; .arch x64
                        ; vpcmpgtd ymm4, ymm4, ymm5
                        ; vpcmpeqd ymm5, ymm0, Ry(eq)
                        ; vpand ymm5, ymm5, Ry(m)
                        ; vpor Ry(r), ymm4, ymm5
                    ),
                    None => dynasm!(a ; .arch x64 ; vpcmpgtd Ry(r), ymm4, ymm5),
                }
            }
        }
        Op::Cndmask { d, a: x, b: y, m } => {
            load(a, 0, x);
            load(a, 1, y);
            let m = mask(a, f, m, 3);
            dynasm!(a ; .arch x64 ; vpblendvb ymm2, ymm0, ymm1, Ry(m));
            store(a, d, 2);
        }
        Op::Cmp32 {
            signed,
            cond,
            a: x,
            b: y,
            out,
            half,
        } => {
            if !live {
                return;
            }
            load(a, 0, x);
            load(a, 1, y);
            if half {
                dynasm!(a ; .arch x64 ; vpslld ymm0, ymm0, 16 ; vpslld ymm1, ymm1, 16);
            }
            if !signed {
                bias(a, 0, 0);
                bias(a, 1, 1);
            }
            compare(a, cond, 0, 1, MASK_BASE + out as u8);
        }
        Op::Cmp64 {
            signed,
            cond,
            a: x,
            b: y,
            out,
        } => {
            if !live {
                return;
            }
            emit_cmp64(a, signed, cond, x, y, out);
        }
        Op::CmpF64 {
            cond,
            a: x,
            b: y,
            out,
        } => {
            if !live {
                return;
            }
            emit_cmp_f64(a, cond, x, y, out);
        }
        Op::F64 { op, d, src } => emit_f64(a, op, d, src),
        Op::F32 { op, d, src } => emit_f32(a, op, d, src),
        Op::Mbcnt { hi, d, add } => {
            load(a, 2, add);
            // ymm0: the lanes' numbers (8g + i, rcx = the group g).
            dynasm!(a
                ; .arch x64
                ; lea eax, [rcx * 8]
                ; vmovd xmm0, eax
                ; vpbroadcastd ymm0, xmm0
                ; vpaddd ymm0, ymm0, [r10 + ENV_IOTA]
            );
            splat32(a, 1, 32);
            match hi {
                false => dynasm!(a ; .arch x64 ; vpminud ymm0, ymm0, ymm1),
                true => dynasm!(a ; .arch x64 ; vpmaxud ymm0, ymm0, ymm1 ; vpsubd ymm0, ymm0, ymm1),
            }
            dynasm!(a ; .arch x64 ; vpaddd ymm3, ymm0, ymm2);
            store(a, d, 3);
        }
        Op::Shift64 { k, n, d, lo, hi } => emit_shift64(a, k, n, d, lo, hi),
        Op::Shift64By {
            k,
            amount,
            mask,
            d,
            lo,
            hi,
        } => emit_shift64_by(a, k, (amount, mask), d, lo, hi),
        Op::LdsStore { data, at } => {
            load(a, 0, data);
            dynasm!(a ; .arch x64 ; mov rax, [rbp + at] ; vmovdqu [rax + rdx], ymm0);
        }
    }
}

/// Emits a two-source integer op ([`Op::Bin`]): bitwise, shifts (counts masked by
/// frame row `aux`), min/max and the multiplies.
fn emit_bin(a: &mut Assembler, op: Bin, d: u16, x: Val, y: Val, aux: usize) {
    load(a, 0, x);
    load(a, 1, y);
    let aux = 32 * aux as i32;
    match op {
        Bin::And => dynasm!(a ; .arch x64 ; vpand ymm2, ymm0, ymm1),
        Bin::Or => dynasm!(a ; .arch x64 ; vpor ymm2, ymm0, ymm1),
        Bin::Xor => dynasm!(a ; .arch x64 ; vpxor ymm2, ymm0, ymm1),
        Bin::Lshlrev => {
            dynasm!(a ; .arch x64 ; vpand ymm0, ymm0, [rsp + aux] ; vpsllvd ymm2, ymm1, ymm0)
        }
        Bin::Lshrrev => {
            dynasm!(a ; .arch x64 ; vpand ymm0, ymm0, [rsp + aux] ; vpsrlvd ymm2, ymm1, ymm0)
        }
        Bin::Ashrrev => {
            dynasm!(a ; .arch x64 ; vpand ymm0, ymm0, [rsp + aux] ; vpsravd ymm2, ymm1, ymm0)
        }
        Bin::MinI => dynasm!(a ; .arch x64 ; vpminsd ymm2, ymm0, ymm1),
        Bin::MaxI => dynasm!(a ; .arch x64 ; vpmaxsd ymm2, ymm0, ymm1),
        Bin::MinU => dynasm!(a ; .arch x64 ; vpminud ymm2, ymm0, ymm1),
        Bin::MaxU => dynasm!(a ; .arch x64 ; vpmaxud ymm2, ymm0, ymm1),
        Bin::MulLo => dynasm!(a ; .arch x64 ; vpmulld ymm2, ymm0, ymm1),
        Bin::MulU24 => dynasm!(a
            ; .arch x64
            ; vpand ymm0, ymm0, [rsp + aux]
            ; vpand ymm1, ymm1, [rsp + aux]
            ; vpmulld ymm2, ymm0, ymm1
        ),
        // The even lanes' 64-bit products, shifted down 32, hold their high
        // dwords in the even positions; the odd lanes' (of the sources shifted
        // down 32), with the low halves cleared, in the odd positions. (Shift
        // counts from xmm7: dynasm-rs 3.2.1 encodes the immediate VPSRLQ as
        // 128-bit, and its VPBLENDD with the sources swapped.)
        Bin::MulHiU | Bin::MulHiI => {
            dynasm!(a ; .arch x64 ; mov eax, 32 ; vmovd xmm7, eax);
            dynasm!(a
                ; .arch x64
                ; vpsrlq ymm3, ymm0, xmm7
                ; vpsrlq ymm4, ymm1, xmm7
            );
            if op == Bin::MulHiU {
                dynasm!(a
                    ; .arch x64
                    ; vpmuludq ymm2, ymm0, ymm1
                    ; vpmuludq ymm3, ymm3, ymm4
                );
            } else {
                dynasm!(a
                    ; .arch x64
                    ; vpmuldq ymm2, ymm0, ymm1
                    ; vpmuldq ymm3, ymm3, ymm4
                );
            }
            dynasm!(a
                ; .arch x64
                ; vpsrlq ymm2, ymm2, xmm7
                ; vpsrlq ymm3, ymm3, xmm7
                ; vpsllq ymm3, ymm3, xmm7
                ; vpor ymm2, ymm2, ymm3
            );
        }
        // Not lowered (`Builder::lower`).
        Bin::Bcnt => {}
    }
    store(a, d, 2);
}

/// Emits a three-source integer op ([`Op::Tri`]): add3, the shift-and-add/or forms
/// (counts masked by frame row `aux`), and-or, or3, xad, bfi, min3/max3.
fn emit_tri(a: &mut Assembler, op: Tri, d: u16, src: [Val; 3], aux: usize) {
    load(a, 0, src[0]);
    load(a, 1, src[1]);
    load(a, 2, src[2]);
    let aux = 32 * aux as i32;
    match op {
        Tri::Add3 => {
            dynasm!(a ; .arch x64 ; vpaddd ymm3, ymm0, ymm1 ; vpaddd ymm3, ymm3, ymm2)
        }
        Tri::LshlAdd => dynasm!(a
            ; .arch x64
            ; vpand ymm1, ymm1, [rsp + aux]
            ; vpsllvd ymm3, ymm0, ymm1
            ; vpaddd ymm3, ymm3, ymm2
        ),
        Tri::AddLshl => dynasm!(a
            ; .arch x64
            ; vpaddd ymm3, ymm0, ymm1
            ; vpand ymm2, ymm2, [rsp + aux]
            ; vpsllvd ymm3, ymm3, ymm2
        ),
        Tri::LshlOr => dynasm!(a
            ; .arch x64
            ; vpand ymm1, ymm1, [rsp + aux]
            ; vpsllvd ymm3, ymm0, ymm1
            ; vpor ymm3, ymm3, ymm2
        ),
        Tri::AndOr => {
            dynasm!(a ; .arch x64 ; vpand ymm3, ymm0, ymm1 ; vpor ymm3, ymm3, ymm2)
        }
        Tri::Or3 => dynasm!(a ; .arch x64 ; vpor ymm3, ymm0, ymm1 ; vpor ymm3, ymm3, ymm2),
        Tri::Xad => {
            dynasm!(a ; .arch x64 ; vpxor ymm3, ymm0, ymm1 ; vpaddd ymm3, ymm3, ymm2)
        }
        Tri::Bfi => dynasm!(a
            ; .arch x64
            ; vpand ymm3, ymm0, ymm1
            ; vpandn ymm4, ymm0, ymm2
            ; vpor ymm3, ymm3, ymm4
        ),
        Tri::Min3U => {
            dynasm!(a ; .arch x64 ; vpminud ymm3, ymm0, ymm1 ; vpminud ymm3, ymm3, ymm2)
        }
        Tri::Max3U => {
            dynasm!(a ; .arch x64 ; vpmaxud ymm3, ymm0, ymm1 ; vpmaxud ymm3, ymm3, ymm2)
        }
        Tri::Min3I => {
            dynasm!(a ; .arch x64 ; vpminsd ymm3, ymm0, ymm1 ; vpminsd ymm3, ymm3, ymm2)
        }
        Tri::Max3I => {
            dynasm!(a ; .arch x64 ; vpmaxsd ymm3, ymm0, ymm1 ; vpmaxsd ymm3, ymm3, ymm2)
        }
        // Not lowered (`Builder::lower`).
        _ => {}
    }
    store(a, d, 3);
}

/// Emits a 64-bit integer compare ([`Op::Cmp64`]) of the sources' (low, high) dwords
/// into mask register `out`.
fn emit_cmp64(a: &mut Assembler, signed: bool, cond: u8, x: [Val; 2], y: [Val; 2], out: usize) {
    // ymm0/1: a's low/high dwords, ymm2/3: b's; the low dwords compare
    // unsigned, the high ones as the op's signedness.
    load(a, 0, x[0]);
    load(a, 1, x[1]);
    load(a, 2, y[0]);
    load(a, 3, y[1]);
    bias(a, 0, 0);
    bias(a, 2, 2);
    if !signed {
        bias(a, 1, 1);
        bias(a, 3, 3);
    }
    let r = MASK_BASE + out as u8;
    dynasm!(a ; .arch x64 ; vpcmpeqd ymm4, ymm1, ymm3);
    match cond {
        // a < b: high below, or high equal and low below.
        1 | 6 => dynasm!(a
            ; .arch x64
            ; vpcmpgtd ymm5, ymm3, ymm1
            ; vpcmpgtd ymm6, ymm2, ymm0
            ; vpand ymm6, ymm6, ymm4
            ; vpor Ry(r), ymm5, ymm6
        ),
        // a > b.
        3 | 4 => dynasm!(a
            ; .arch x64
            ; vpcmpgtd ymm5, ymm1, ymm3
            ; vpcmpgtd ymm6, ymm0, ymm2
            ; vpand ymm6, ymm6, ymm4
            ; vpor Ry(r), ymm5, ymm6
        ),
        2 | 5 => {
            dynasm!(a ; .arch x64 ; vpcmpeqd ymm6, ymm0, ymm2 ; vpand Ry(r), ymm4, ymm6)
        }
        0 => dynasm!(a ; .arch x64 ; vpxor Ry(r), Ry(r), Ry(r)),
        _ => dynasm!(a ; .arch x64 ; vpcmpeqd Ry(r), Ry(r), Ry(r)),
    }
    if negated(cond) {
        not(a, r);
    }
}

/// The `vcmppd` predicate of each f64 compare condition (`cmp::fcond`'s
/// numbering: f lt eq le gt lg ge o u nge nlg ngt nle neq nlt tru), the quiet forms
/// (Intel SDM, "CMPPD", the comparison predicate table; the signalling ones differ
/// only in the exceptions, which the engine does not raise): FALSE_OQ, LT_OQ,
/// EQ_OQ, LE_OQ, GT_OQ, NEQ_OQ, GE_OQ, ORD_Q, UNORD_Q, NGE_UQ, EQ_UQ, NGT_UQ,
/// NLE_UQ, NEQ_UQ, NLT_UQ, TRUE_UQ.
const CMP_F64_PREDICATES: [u8; 16] = [
    0x0B, 0x11, 0x00, 0x12, 0x1E, 0x0C, 0x1D, 0x07, 0x03, 0x19, 0x08, 0x1A, 0x16, 0x04, 0x15, 0x0F,
];

/// `vcmppd dst, x, y, pred` (dst = all ones in the qwords where `x pred y`).
fn cmppd(a: &mut Assembler, dst: u8, x: u8, y: u8, pred: u8) {
    vex(a, 1, 1, false, 0xC2, dst, x, y, Some(pred));
}

/// Emits an f64 compare ([`Op::CmpF64`]): the sources' (low, high) dwords joined
/// into f64 lanes as [`emit_f64`] joins them, compared with `vcmppd`, and the
/// qword results' low dwords put back in lane order into the run's mask `out`.
fn emit_cmp_f64(a: &mut Assembler, cond: u8, x: [Val; 2], y: [Val; 2], out: usize) {
    load(a, 0, x[0]);
    load(a, 1, x[1]);
    load(a, 2, y[0]);
    load(a, 3, y[1]);
    // ymm6/ymm7: a's and b's lanes 0, 1, 4, 5; ymm0/ymm2: their lanes 2, 3, 6, 7.
    dynasm!(a
        ; .arch x64
        ; vpunpckldq ymm6, ymm0, ymm1
        ; vpunpckhdq ymm0, ymm0, ymm1
        ; vpunpckldq ymm7, ymm2, ymm3
        ; vpunpckhdq ymm2, ymm2, ymm3
    );
    let pred = CMP_F64_PREDICATES[usize::from(cond & 15)];
    cmppd(a, 4, 6, 7, pred);
    cmppd(a, 5, 0, 2, pred);
    shufps(a, MASK_BASE + out as u8, 4, 5, 0x88);
}

/// Emits an f64 add, multiply or fused multiply-add ([`Op::F64`]) on the sources'
/// (low, high) dwords, NaN results as the VALU's.
fn emit_f64(a: &mut Assembler, op: F64Op, d: u16, src: [[Val; 2]; 3]) {
    // Each source's low and high dwords (ymm0/1 a, ymm2/3 b, ymm4/5 c) joined
    // into f64 lanes 0, 1, 4, 5 (unpack low) and 2, 3, 6, 7 (unpack high):
    // ymm6/ymm0 a, ymm7/ymm2 b, ymm12/ymm4 c.
    let n = if op == F64Op::Fma { 3 } else { 2 };
    for (k, s) in src.iter().take(n).enumerate() {
        let k = 2 * k as u8;
        load(a, k, s[0]);
        load(a, k + 1, s[1]);
    }
    let halves: [(u8, u8, u8); 2] = [(6, 7, 12), (0, 2, 4)];
    dynasm!(a
        ; .arch x64
        ; vpunpckldq ymm6, ymm0, ymm1
        ; vpunpckhdq ymm0, ymm0, ymm1
        ; vpunpckldq ymm7, ymm2, ymm3
        ; vpunpckhdq ymm2, ymm2, ymm3
    );
    if n == 3 {
        dynasm!(a
            ; .arch x64
            ; vpunpckldq ymm12, ymm4, ymm5
            ; vpunpckhdq ymm4, ymm4, ymm5
        );
    }
    // Results: ymm13 (lanes 0, 1, 4, 5), ymm1 (lanes 2, 3, 6, 7).
    for ((x, y, z), r) in halves.into_iter().zip([13u8, 1]) {
        match op {
            F64Op::Add => dynasm!(a ; .arch x64 ; vaddpd Ry(r), Ry(x), Ry(y)),
            F64Op::Mul => dynasm!(a ; .arch x64 ; vmulpd Ry(r), Ry(x), Ry(y)),
            F64Op::Fma => {
                dynasm!(a ; .arch x64 ; vmovapd Ry(r), Ry(z));
                fma_pd(a, r, x, y);
            }
        }
    }
    // A NaN result is the first NaN source quieted, else the default NaN
    // (`fp::nan_of`); the host's NaN differs, so NaN lanes are replaced.
    let done = a.new_dynamic_label();
    dynasm!(a
        ; .arch x64
        ; vcmppd ymm15, ymm13, ymm13, 3
        ; vcmppd ymm3, ymm1, ymm1, 3
        ; vorpd ymm15, ymm15, ymm3
        ; vptest ymm15, ymm15
        ; jz =>done
    );
    for ((x, y, z), r) in halves.into_iter().zip([13u8, 1]) {
        // ymm5: the replacement, from the last source to the first so that
        // the first NaN source wins; ymm3: a source's NaN lanes; ymm15 the
        // source quieted.
        splat64(a, 5, 0x7FF8_0000_0000_0000);
        let srcs = [x, y, z];
        for &s in srcs[..n].iter().rev() {
            splat64(a, 15, 0x0008_0000_0000_0000);
            dynasm!(a
                ; .arch x64
                ; vcmppd ymm3, Ry(s), Ry(s), 3
                ; vorpd ymm15, ymm15, Ry(s)
                ; vblendvpd ymm5, ymm5, ymm15, ymm3
            );
        }
        dynasm!(a
            ; .arch x64
            ; vcmppd ymm3, Ry(r), Ry(r), 3
            ; vblendvpd Ry(r), Ry(r), ymm5, ymm3
        );
    }
    dynasm!(a ; .arch x64 ; =>done);
    // Back to low and high dwords in lane order.
    shufps(a, 3, 13, 1, 0x88);
    shufps(a, 5, 13, 1, 0xDD);
    store(a, d, 3);
    store(a, d + 1, 5);
}

/// Emits an f32 operation ([`Op::F32`]) on the group's 8 lanes, as
/// `plan::f32_op` computes it: host IEEE arithmetic (round to nearest even, the
/// MODE `run_fused` checked), a NaN result replaced by the VALU's, and the
/// conversions' rules AVX2 lacks (unsigned conversions, saturation, NaN as 0).
fn emit_f32(a: &mut Assembler, op: F32Op, d: u16, src: [Val; 3]) {
    let n = op.sources();
    for (k, s) in src.iter().take(n).enumerate() {
        load(a, k as u8, *s);
    }
    // ymm3: the result.
    match op {
        F32Op::Add => dynasm!(a ; .arch x64 ; vaddps ymm3, ymm0, ymm1),
        F32Op::Sub => dynasm!(a ; .arch x64 ; vsubps ymm3, ymm0, ymm1),
        F32Op::Subrev => dynasm!(a ; .arch x64 ; vsubps ymm3, ymm1, ymm0),
        F32Op::Mul => dynasm!(a ; .arch x64 ; vmulps ymm3, ymm0, ymm1),
        F32Op::Fma => {
            dynasm!(a ; .arch x64 ; vmovaps ymm3, ymm2);
            fma_ps(a, 3, 0, 1);
        }
        F32Op::Rcp => {
            splat32(a, 4, 1.0f32.to_bits());
            dynasm!(a ; .arch x64 ; vdivps ymm3, ymm4, ymm0);
        }
        F32Op::CvtF32I32 => dynasm!(a ; .arch x64 ; vcvtdq2ps ymm3, ymm0),
        F32Op::CvtF32U32 => {
            // The high and low halves, each exact as an f32, added: one rounding.
            splat32(a, 4, 0xFFFF);
            splat32(a, 5, 65536.0f32.to_bits());
            dynasm!(a
                ; .arch x64
                ; vpsrld ymm1, ymm0, 16
                ; vpand ymm2, ymm0, ymm4
                ; vcvtdq2ps ymm1, ymm1
                ; vcvtdq2ps ymm2, ymm2
                ; vmulps ymm1, ymm1, ymm5
                ; vaddps ymm3, ymm1, ymm2
            );
        }
        F32Op::CvtI32F32 => {
            // Truncated (0x8000_0000 for NaN and out of range), then 2^31 and above
            // i32::MAX, NaN 0.
            splat32(a, 4, 2147483648.0f32.to_bits());
            splat32(a, 5, i32::MAX as u32);
            dynasm!(a ; .arch x64 ; vcvttps2dq ymm3, ymm0);
            cmpps(a, 6, 0, 4, CMP_GE);
            dynasm!(a ; .arch x64 ; vblendvps ymm3, ymm3, ymm5, ymm6);
            cmpps(a, 7, 0, 0, CMP_UNORD);
            dynasm!(a ; .arch x64 ; vpandn ymm3, ymm7, ymm3);
        }
        F32Op::CvtU32F32 => {
            // max(x, +0) (NaN and below zero: 0; the second operand wins a NaN),
            // less 2^31 where it is 2^31 or more (exact), truncated, bit 31 put
            // back; 2^32 and above all ones.
            splat32(a, 4, 2147483648.0f32.to_bits());
            splat32(a, 5, 4294967296.0f32.to_bits());
            dynasm!(a ; .arch x64 ; vxorps ymm1, ymm1, ymm1 ; vmaxps ymm1, ymm0, ymm1);
            cmpps(a, 2, 1, 4, CMP_GE);
            dynasm!(a
                ; .arch x64
                ; vandps ymm6, ymm2, ymm4
                ; vsubps ymm6, ymm1, ymm6
                ; vcvttps2dq ymm3, ymm6
                ; vpslld ymm2, ymm2, 31
                ; vpor ymm3, ymm3, ymm2
            );
            cmpps(a, 7, 1, 5, CMP_GE);
            dynasm!(a ; .arch x64 ; vpor ymm3, ymm3, ymm7);
        }
    }
    if op.arithmetic() {
        // A NaN result is the first NaN source quieted, else the default NaN
        // (`fp::nan_of`); the host's NaN differs, so NaN lanes are replaced. ymm5:
        // the replacement, from the last source to the first so that the first NaN
        // source wins.
        let done = a.new_dynamic_label();
        cmpps(a, 15, 3, 3, CMP_UNORD);
        dynasm!(a ; .arch x64 ; vptest ymm15, ymm15 ; jz =>done);
        splat32(a, 5, crate::fp::QNAN32);
        splat32(a, 6, 0x0040_0000);
        for k in (0..n as u8).rev() {
            cmpps(a, 7, k, k, CMP_UNORD);
            dynasm!(a
                ; .arch x64
                ; vorps ymm4, Ry(k), ymm6
                ; vblendvps ymm5, ymm5, ymm4, ymm7
            );
        }
        dynasm!(a ; .arch x64 ; vblendvps ymm3, ymm3, ymm5, ymm15 ; =>done);
    }
    store(a, d, 3);
}

/// Emits a 64-bit shift by a constant ([`Op::Shift64`]): `v_lshlrev_b64` (`k` 0),
/// `v_lshrrev_b64` (1) or `v_ashrrev_i64` (2).
fn emit_shift64(a: &mut Assembler, k: u8, n: u32, d: u16, lo: Val, hi: Val) {
    load(a, 0, lo);
    load(a, 1, hi);
    // ymm2/3: the result's low/high dwords (as `plan::shift64_by`).
    let n8 = n as i8;
    let rn = (32 - n as i32) as i8;
    let m8 = (n as i32 - 32) as i8;
    match (k, n) {
        (_, 0) => dynasm!(a ; .arch x64 ; vmovdqa ymm2, ymm0 ; vmovdqa ymm3, ymm1),
        (0, 1..=31) => dynasm!(a
            ; .arch x64
            ; vpslld ymm2, ymm0, n8
            ; vpslld ymm3, ymm1, n8
            ; vpsrld ymm4, ymm0, rn
            ; vpor ymm3, ymm3, ymm4
        ),
        (0, _) => dynasm!(a ; .arch x64 ; vpxor ymm2, ymm2, ymm2 ; vpslld ymm3, ymm0, m8),
        (1, 1..=31) => dynasm!(a
            ; .arch x64
            ; vpsrld ymm2, ymm0, n8
            ; vpslld ymm4, ymm1, rn
            ; vpor ymm2, ymm2, ymm4
            ; vpsrld ymm3, ymm1, n8
        ),
        (1, _) => dynasm!(a ; .arch x64 ; vpsrld ymm2, ymm1, m8 ; vpxor ymm3, ymm3, ymm3),
        (_, 1..=31) => dynasm!(a
            ; .arch x64
            ; vpsrld ymm2, ymm0, n8
            ; vpslld ymm4, ymm1, rn
            ; vpor ymm2, ymm2, ymm4
            ; vpsrad ymm3, ymm1, n8
        ),
        (_, _) => dynasm!(a ; .arch x64 ; vpsrad ymm2, ymm1, m8 ; vpsrad ymm3, ymm1, 31),
    }
    store(a, d, 2);
    store(a, d + 1, 3);
}

/// Emits a 64-bit shift by lane amounts ([`Op::Shift64By`]): the lanes' (low,
/// high) dword pairs as qwords (lanes 0, 1, 4, 5 in ymm2, lanes 2, 3, 6, 7 in
/// ymm3, as `vpunpck*dq` pair them), shifted by their amounts modulo 64 (an
/// arithmetic shift as a logical one between two flips of a negative value's
/// bits), then split back into the rows of the low and high dwords.
fn emit_shift64_by(
    a: &mut Assembler,
    k: u8,
    (amount, mask): (Val, usize),
    d: u16,
    lo: Val,
    hi: Val,
) {
    load(a, 0, lo);
    load(a, 1, hi);
    load(a, 4, amount);
    let m = 32 * mask as i32;
    dynasm!(a
        ; .arch x64
        ; vpand ymm4, ymm4, [rsp + m]
        ; vpxor ymm5, ymm5, ymm5
        ; vpunpckldq ymm2, ymm0, ymm1
        ; vpunpckhdq ymm3, ymm0, ymm1
        ; vpunpckldq ymm0, ymm4, ymm5
        ; vpunpckhdq ymm1, ymm4, ymm5
    );
    match k {
        0 => dynasm!(a ; .arch x64 ; vpsllvq ymm2, ymm2, ymm0 ; vpsllvq ymm3, ymm3, ymm1),
        1 => dynasm!(a ; .arch x64 ; vpsrlvq ymm2, ymm2, ymm0 ; vpsrlvq ymm3, ymm3, ymm1),
        _ => {
            for (x, n) in [(2u8, 0u8), (3, 1)] {
                dynasm!(a
                    ; .arch x64
                    ; vpcmpgtq ymm4, ymm5, Ry(x)
                    ; vpxor Ry(x), Ry(x), ymm4
                    ; vpsrlvq Ry(x), Ry(x), Ry(n)
                    ; vpxor Ry(x), Ry(x), ymm4
                );
            }
        }
    }
    shufps(a, 0, 2, 3, 0x88);
    shufps(a, 1, 2, 3, 0xDD);
    store(a, d, 0);
    store(a, d + 1, 1);
}

/// What a block entry is to [`find_runs`].
pub(crate) enum Slot<'p> {
    /// An integer VALU plan.
    Int(&'p IntPlan),
    /// A planned DS instruction (the loads and one-dword stores join).
    Lds(&'p LdsPlan),
    /// A planned FLAT or GLOBAL load or store (see [`Chain`]).
    Flat(&'p FlatPlan),
    /// A planned MUBUF access to the private segment (see [`Chain`]).
    Private(PrivateFusion),
    /// A planned `v_readlane_b32` or `v_writelane_b32` (see [`Chain`]).
    Lane(LanePlan),
    /// A scalar instruction that falls through and touches only the scalar file and
    /// SCC (see `ScalarPlan::native`).
    Scalar(Native),
    /// Anything else (ends a run).
    Other,
}

/// Finds the runs of a block's entries worth compiling: from each entry that joins
/// one, as many following entries as join (integer plans that fuse, LDS and FLAT
/// accesses, scalar instructions with host code, in the order rules of [`Builder`]
/// and [`Chain`]), when that is at least two, for this host (AVX-512 forms only if
/// `wide`). Returns (first entry, run) pairs.
pub(crate) fn find_runs<'p>(
    slots: impl Iterator<Item = Slot<'p>>,
    wide: bool,
) -> Vec<(usize, Chain)> {
    find_runs_for(slots, HostFeatures::detect(wide))
}

/// [`find_runs`] for a host with `features` (an op whose host form needs a feature
/// `features` lacks joins no run).
fn find_runs_for<'p>(
    slots: impl Iterator<Item = Slot<'p>>,
    features: HostFeatures,
) -> Vec<(usize, Chain)> {
    let slots: Vec<Slot<'p>> = slots.collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < slots.len() {
        let mut c = Chain::new(features);
        for slot in &slots[i..] {
            if !c.push(slot) {
                break;
            }
        }
        let n = c.entries();
        if n >= 2 {
            // A run that stops at one of its accesses (scattered lanes, a region not
            // cached yet, a partial EXEC) or at a part's EXEC check leaves the rest to
            // the interpreter, which goes on entry by entry: the rest of the run from
            // the start of each later part is a run too.
            let mut at = i;
            for k in 0..c.accesses.len() {
                at += c.parts[k].entries + usize::from(c.accesses[k].is_some());
                let rest = Chain {
                    parts: c.parts[k + 1..].to_vec(),
                    accesses: c.accesses[k + 1..].to_vec(),
                    features,
                };
                if rest.entries() >= 2 {
                    out.push((at, rest));
                }
            }
            out.push((i, c));
            i += n;
        } else {
            i += 1;
        }
    }
    out
}

/// Most FLAT accesses in one run.
const MAX_FLATS: usize = 4;
/// Most parts of one run (a wave reduction of a double is 12 bpermutes).
const MAX_PARTS: usize = 16;

/// An access between two parts of a run (see [`Chain`]).
#[derive(Clone, Copy, Debug)]
enum Access {
    /// A FLAT or GLOBAL load or store.
    Flat(FlatFusion),
    /// A `ds_bpermute_b32`.
    Bpermute(BpermuteFusion),
    /// A MUBUF access to one private offset of every lane.
    Private(PrivateFusion),
    /// A move between a vector register's lane and a scalar register.
    Lane(LanePlan),
}

/// A run: runs of the [`Builder`] rules (parts), with an access (a FLAT or GLOBAL
/// load or store, or a `ds_bpermute_b32`) or nothing between each two, compiled as
/// one function. A part ends before an op that would break its order rules (the
/// next part starts with it), at an access (the next part starts after it), or after
/// a branch (a taken one leaves the run there). Each part runs as a run of its own
/// would (its scalar instructions ordered among its vector ops by the `Builder`
/// rules, its masks written back to the scalar file at its end); each FLAT access
/// runs between its neighbours, on the whole wave, as [`Wave::run_flat_plan`] runs
/// one whose lanes address consecutive elements: EXEC all ones, the lane addresses
/// `base + l·bytes` (checked on 32-bit lanes: the low dwords step without a carry,
/// the high ones are lane 0's), the range inside one of the regions the wave has
/// cached and (FLAT) outside the LDS and scratch apertures, the host address
/// naturally aligned; the access then records its base in the wave's stride table
/// and, on a confirmed stride, asks for the lines of the next one when that lies in
/// the same region. A bpermute runs when every lane is active ([`emit_bpermute`]; it
/// reads no memory, so it cannot fault). When one of these does not hold for a FLAT
/// access, the run's code calls [`flat_fallback`], which runs it as the
/// interpreter's plan would (and looks the region up); if that plan declines too,
/// or for another access, the run stops before the access, and the interpreter runs
/// the rest of its entries (and reports any fault).
#[derive(Clone, Debug)]
pub(crate) struct Chain {
    /// `accesses.len() + 1` parts.
    parts: Vec<Builder>,
    /// What comes after each part but the last: an access, or nothing.
    accesses: Vec<Option<Access>>,
    /// The host features its code may use (see [`Builder::push`]).
    features: HostFeatures,
}

impl Chain {
    /// An empty run, for a host with `features`.
    fn new(features: HostFeatures) -> Self {
        Self {
            parts: vec![Builder::default()],
            accesses: Vec::new(),
            features,
        }
    }

    /// Whether an op of the run is an f64 fused multiply-add (FMA3 code).
    fn fma(&self) -> bool {
        let fma = |op: &Op| {
            matches!(
                op,
                Op::F64 { op: F64Op::Fma, .. } | Op::F32 { op: F32Op::Fma, .. }
            )
        };
        self.parts.iter().any(|b| b.ops.iter().any(fma))
    }

    /// Block entries the run covers.
    fn entries(&self) -> usize {
        self.parts.iter().map(|b| b.entries).sum::<usize>() + self.accesses.iter().flatten().count()
    }

    /// Appends the entry `slot`; false (the run unchanged) if it does not join.
    fn push(&mut self, slot: &Slot<'_>) -> bool {
        if self.entries() >= usize::from(u8::MAX) {
            return false;
        }
        let Some(b) = self.parts.last_mut() else {
            return false;
        };
        let features = self.features;
        let join = |b: &mut Builder| match slot {
            Slot::Int(p) => b.push(p, features),
            Slot::Lds(p) => b.push_lds(p),
            Slot::Scalar(n) => b.push_scalar(n),
            Slot::Flat(_) | Slot::Private(_) | Slot::Lane(_) | Slot::Other => false,
        };
        let access = match slot {
            Slot::Flat(p) => match p.fusion() {
                Some(f) => Some(Access::Flat(f)),
                None => return false,
            },
            Slot::Lds(p) => p.bpermute().map(Access::Bpermute),
            Slot::Private(p) => Some(Access::Private(*p)),
            Slot::Lane(p) => Some(Access::Lane(*p)),
            Slot::Int(p) => LanePlan::first_lane(p).map(Access::Lane),
            _ => None,
        };
        if let Some(x) = access {
            let flats = self.accesses.iter().flatten();
            let flats = flats.filter(|x| matches!(x, Access::Flat(_))).count();
            let full = matches!(x, Access::Flat(_)) && flats == MAX_FLATS;
            if full || self.parts.len() == MAX_PARTS {
                return false;
            }
            self.accesses.push(Some(x));
            self.parts.push(Builder::default());
            return true;
        }
        if join(b) {
            return true;
        }
        // A new part, when the entry starts one (after a part that has entries; after
        // a branch, which is conditional: `s_branch` ends its block).
        if b.entries == 0 || self.parts.len() == MAX_PARTS {
            return false;
        }
        let mut next = Builder::default();
        if !join(&mut next) {
            return false;
        }
        self.accesses.push(None);
        self.parts.push(next);
        true
    }

    /// What the run covers and needs ([`Needs`]); `None` when it is longer than
    /// a [`Fused`] counts.
    fn needs(&self) -> Option<Needs> {
        Some(Needs {
            len: u32::try_from(self.entries()).ok()?,
            rows: u16::try_from(self.rows()).ok()?,
            vector: self.accesses.iter().any(Option::is_some)
                || self.parts.iter().any(|b| !b.ops.is_empty()),
            f64: self.parts.iter().any(|b| b.f64),
            f32: self.parts.iter().any(|b| b.f32),
        })
    }

    /// One past the highest vector-file register the run reads or writes.
    fn rows(&self) -> usize {
        let parts = self.parts.iter().map(|b| b.rows);
        let accesses = self.accesses.iter().flatten().map(|x| match x {
            Access::Flat(f) => {
                let data = usize::from(f.reg) + usize::from(f.bytes / 4);
                data.max(usize::from(f.vaddr) + 2)
            }
            Access::Bpermute(p) => usize::from(p.addr.max(p.data).max(p.dst)) + 1,
            Access::Private(p) => usize::from(p.reg) + usize::from(p.dwords),
            Access::Lane(
                LanePlan::Read { src: r, .. }
                | LanePlan::Write { dst: r, .. }
                | LanePlan::First { src: r, .. },
            ) => usize::from(*r) + 1,
        });
        parts.chain(accesses).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
