//! The wave's architectural state and what surrounds one step of it: the register
//! files and their operand accessors ([`WaveState`]), the context a running wave
//! reads ([`WaveContext`], [`Apertures`]), and how an instruction ends (control
//! [`Flow`], [`ScalarFlow`], [`WaveExit`], [`Planned`]). Below every executor: the
//! executors (`salu`, `valu`, `vmem`, `lds`), the plans and the JIT work on a
//! `WaveState`; the run loop (`wave`) sits on top of them all.

use std::sync::atomic::AtomicBool;

use crate::arch::{Rows, VReg, AGPR_BASE, WAVE_SIZE};
use crate::error::Fault;
use crate::generated::opcodes::SoppOp;
use crate::inst::Instruction;
use crate::memory::{DeferredGather, GlobalMemory, RegionCache};
use crate::operand::{code, Operand};

/// Linux KFD aperture bases for GFX9 (Linux's
/// `drivers/gpu/drm/amd/amdkfd/kfd_flat_memory.c`; AMDGPUUsage "Address Spaces"):
/// each 4 GiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Apertures {
    /// Base of the shared (LDS) aperture; `src_shared_base`.
    pub shared_base: u64,
    /// Base of the private (scratch) aperture; `src_private_base`.
    pub private_base: u64,
}

impl Apertures {
    /// The KFD values: shared 0x0001_0000_0000_0000, private 0x0002_0000_0000_0000.
    pub const KFD: Apertures = Apertures {
        shared_base: 0x0001_0000_0000_0000,
        private_base: 0x0002_0000_0000_0000,
    };
}

impl Default for Apertures {
    fn default() -> Self {
        Self::KFD
    }
}

/// What a wave needs from its surroundings while it runs.
pub struct WaveContext<'a> {
    /// Global memory.
    pub memory: &'a dyn GlobalMemory,
    /// The workgroup's LDS (`group_segment_size` bytes).
    pub lds: &'a mut [u8],
    /// Aperture bases for flat addressing and `src_*_base`.
    pub apertures: Apertures,
    /// Set by another thread to stop the wave at its next taken branch or barrier.
    pub stop: Option<&'a AtomicBool>,
    /// Instruction budget of the wave (counts all instructions it ever executed).
    pub max_instructions: u64,
    /// After this many instructions in one `run` call (at least one), the wave
    /// yields before its next instruction (fair scheduling of spinning waves, and
    /// short turns for waves that must progress together); `u64::MAX` = never, for a
    /// wave that runs alone (it then never defers a gather either, see
    /// [`WaveExit::Yield`]).
    pub yield_after: u64,
}

/// Why [`crate::Wave::run`] returned normally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveExit {
    /// `s_endpgm`: the wave is done.
    Ended,
    /// `s_barrier`: resume the wave once every non-ended wave of the workgroup arrived.
    /// `s_barrier` orders execution only; memory takes `s_waitcnt` and the cache
    /// instructions the program itself executes (LLVM's `AMDGPUUsage.rst`, "Memory
    /// Model GFX90A": outside threadgroup-split mode a workgroup-scope release or
    /// acquire needs no cache instruction, and one at agent scope is
    /// `buffer_wbl2`/`buffer_invl2`, which run as host fences). The caller runs a
    /// workgroup's waves one after another on one host thread, so each sees the
    /// others' accesses in program order: the barrier itself is no host fence (one
    /// cost 6% of LLVM 19's `offloading/barrier_fence.c`, which meets a barrier every
    /// few instructions).
    Barrier,
    /// `s_sleep`, the `yield_after` instructions of a `run` call spent, or a deferred
    /// gather (a planned load of scattered lanes that asked the host for its cache
    /// lines and did not run yet; PC is at it, and it runs when the wave resumes):
    /// the wave lets the other waves of its workgroup run; resume it later (PC is
    /// already set).
    Yield,
}

/// What running an entry's plan did ([`Wave::run_planned`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Planned {
    /// It ran, with this control flow.
    Ran(ScalarFlow),
    /// The entry has no plan or its plan declined, having changed nothing:
    /// `WaveState::step` executes the instruction.
    Declined,
    /// It has not run: it asked the host for the cache lines it will read, and the
    /// wave yields to run it when resumed (the other waves of the workgroup run
    /// meanwhile, as a GPU runs other waves while one waits on memory).
    Deferred,
}

impl Planned {
    /// A plan that ran (falling through) or declined.
    #[inline(always)]
    pub(crate) fn of(ran: bool) -> Self {
        if ran {
            Planned::Ran(ScalarFlow::Next)
        } else {
            Planned::Declined
        }
    }
}

/// Control flow after one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Next,
    Jump(u64),
    Exit(WaveExit),
}

/// The state of one wavefront the executors work on: its architectural registers
/// (the scalar file, SCC, the vector file, PC, MODE, TRAPSTS, HW_ID) and the host
/// caches its accesses keep (cached regions, stride history, a deferred gather,
/// scratch rows). [`crate::Wave`] wraps it with the block cache and the run loop.
pub struct WaveState {
    /// Scalar register file by operand code 0..=127 (the `HWEncoding` of
    /// each register in LLVM's `llvm/lib/Target/AMDGPU/SIRegisterInfo.td`):
    /// s0–s101, flat_scratch (102/103), xnack_mask (104/105), vcc (106/107),
    /// ttmp0–15 (108–123), m0 (124), null (125, reads 0), exec (126/127).
    pub sgpr: [u32; 128],
    /// Scalar condition code.
    pub scc: bool,
    /// Vector registers `[register][lane]`: v0–v255 at 0..256, a0–a255 at 256..512.
    /// (The hardware's unified file places AGPRs at ACCUM_OFFSET; the ISA addresses
    /// both files separately, which is all a program can observe.)
    pub vgpr: Box<Rows<{ 2 * AGPR_BASE }>>,
    /// Byte address of the next instruction.
    pub pc: u64,
    /// HW_REG_MODE (rounding, denormals, DX10_CLAMP, IEEE); rounding and denormal
    /// controls are recorded but the engine computes round-to-nearest-even with
    /// denormals kept, which is what clang's kernels request.
    pub mode: u32,
    /// HW_REG_TRAPSTS.
    pub trapsts: u32,
    /// HW_REG_HW_ID value reported by `s_getreg_b32`.
    pub hw_id: u32,
    /// Instructions executed so far.
    pub instructions: u64,
    /// Of `instructions`, those that ran inside fused runs (compiled host code,
    /// `valu::jit`) rather than one by one (for statistics and tests).
    pub fused_instructions: u64,
    /// Regions this wave used recently plus its private (scratch) regions.
    pub regions: RegionCache,
    /// Strides of this wave's whole-wave accesses, for prefetching (no state a
    /// program can observe).
    pub(crate) strides: crate::stride::StrideTable,
    /// A gather that deferred itself, if one waits (it runs when the wave meets it
    /// again), and the addresses of the last gather (see `gather_fast`).
    pub(crate) deferred: crate::memory::DeferredGather,
    /// Scratch lanes for results computed before they are written (no state).
    pub(crate) tmp: Box<Rows<2>>,
    /// Scratch lanes for splat sources of planned instructions (no state).
    pub(crate) splat: Box<Rows<6>>,
}

impl Default for WaveState {
    fn default() -> Self {
        Self::new()
    }
}

impl WaveState {
    /// A wave with all registers zero.
    pub fn new() -> Self {
        Self {
            sgpr: [0; 128],
            scc: false,
            vgpr: Rows::zeroed(),
            pc: 0,
            mode: 0,
            trapsts: 0,
            hw_id: 0,
            instructions: 0,
            fused_instructions: 0,
            regions: RegionCache::new(),
            strides: Default::default(),
            deferred: DeferredGather::default(),
            tmp: Rows::zeroed(),
            splat: Rows::zeroed(),
        }
    }

    /// Resets the scalar state and zeroes `vgprs` VGPRs and `agprs` AGPRs (the rest keep
    /// stale values; the ISA leaves them undefined at wave launch).
    pub fn reset(&mut self, vgprs: usize, agprs: usize) {
        self.sgpr = [0; 128];
        self.scc = false;
        for r in self.vgpr[..vgprs.min(AGPR_BASE)].iter_mut() {
            *r = [0; WAVE_SIZE];
        }
        for r in self.vgpr[AGPR_BASE..AGPR_BASE + agprs.min(AGPR_BASE)].iter_mut() {
            *r = [0; WAVE_SIZE];
        }
        self.pc = 0;
        self.mode = 0;
        self.trapsts = 0;
        self.hw_id = 0;
        self.instructions = 0;
        self.fused_instructions = 0;
        self.deferred.clear();
    }

    /// The EXEC mask.
    #[inline]
    pub fn exec(&self) -> u64 {
        u64::from(self.sgpr[126]) | u64::from(self.sgpr[127]) << 32
    }

    /// Sets the EXEC mask.
    #[inline]
    pub fn set_exec(&mut self, v: u64) {
        self.sgpr[126] = v as u32;
        self.sgpr[127] = (v >> 32) as u32;
    }

    /// VCC.
    #[inline]
    pub fn vcc(&self) -> u64 {
        u64::from(self.sgpr[106]) | u64::from(self.sgpr[107]) << 32
    }

    /// Sets VCC.
    #[inline]
    pub fn set_vcc(&mut self, v: u64) {
        self.sgpr[106] = v as u32;
        self.sgpr[107] = (v >> 32) as u32;
    }

    /// FLAT_SCRATCH as a 64-bit address.
    pub fn flat_scratch(&self) -> u64 {
        u64::from(self.sgpr[102]) | u64::from(self.sgpr[103]) << 32
    }

    /// Reads a scalar operand (1 or 2 dwords) as a 64-bit value.
    #[inline(always)]
    pub(crate) fn read_scalar(&self, op: &Operand, ctx: &WaveContext<'_>) -> u64 {
        // The common cases inline; the rest out of line.
        match *op {
            Operand::Sreg { code, count } if code < code::NULL => {
                let c = usize::from(code);
                let hi = if count >= 2 && c + 1 < 128 && code + 1 != code::NULL {
                    self.sgpr[c + 1]
                } else {
                    0
                };
                u64::from(self.sgpr[c]) | u64::from(hi) << 32
            }
            Operand::Const { value, .. } => value,
            Operand::Literal { value, .. } => u64::from(value),
            _ => self.read_scalar_other(op, ctx),
        }
    }

    /// [`read_scalar`](Self::read_scalar) for the other operand kinds.
    #[inline(never)]
    fn read_scalar_other(&self, op: &Operand, ctx: &WaveContext<'_>) -> u64 {
        match *op {
            Operand::Sreg { code, count } => {
                let c = usize::from(code);
                let lo = if code == code::NULL { 0 } else { self.sgpr[c] };
                let hi = if count >= 2 && c + 1 < 128 && code + 1 != code::NULL {
                    self.sgpr[c + 1]
                } else {
                    0
                };
                u64::from(lo) | u64::from(hi) << 32
            }
            Operand::Const { value, .. } => value,
            Operand::Literal { value, .. } => u64::from(value),
            Operand::Special { code, .. } => self.special(code, ctx),
            // Vector registers are never scalar operands; lane 0 keeps this total.
            Operand::Vgpr { index, count } | Operand::Agpr { index, count } => {
                let base = if matches!(op, Operand::Agpr { .. }) {
                    AGPR_BASE
                } else {
                    0
                };
                let r = base + usize::from(index);
                let hi = if count >= 2 && r + 1 < self.vgpr.len() {
                    self.vgpr[r + 1][0]
                } else {
                    0
                };
                u64::from(self.vgpr[r][0]) | u64::from(hi) << 32
            }
        }
    }

    fn special(&self, c: u8, ctx: &WaveContext<'_>) -> u64 {
        match c {
            code::SHARED_BASE => ctx.apertures.shared_base,
            code::SHARED_LIMIT => ctx.apertures.shared_base | 0xFFFF_FFFF,
            code::PRIVATE_BASE => ctx.apertures.private_base,
            code::PRIVATE_LIMIT => ctx.apertures.private_base | 0xFFFF_FFFF,
            code::VCCZ => u64::from(self.vcc() == 0),
            code::EXECZ => u64::from(self.exec() == 0),
            code::SCC => u64::from(self.scc),
            _ => 0,
        }
    }

    /// Writes `count` dwords of `value` to scalar-file codes from `code` (null drops).
    #[inline]
    pub(crate) fn write_sreg(&mut self, code: u8, count: u8, value: u64) {
        let c = usize::from(code);
        let null = usize::from(code::NULL);
        if count >= 2 && c + 1 < 128 && c != null && c + 1 != null {
            // A pair as one 8-byte store (a later 64-bit read of the pair, such as
            // compiled code's, then takes the value from this store).
            if let Some(pair) = self.sgpr.get_mut(c..c + 2) {
                pair.copy_from_slice(&[value as u32, (value >> 32) as u32]);
                return;
            }
        }
        for k in 0..count.min(2) {
            let c = usize::from(code) + usize::from(k);
            if c < 128 && c != usize::from(code::NULL) {
                self.sgpr[c] = (value >> (32 * k)) as u32;
            }
        }
    }

    /// Writes a scalar destination operand.
    #[inline]
    pub(crate) fn write_scalar(&mut self, op: &Operand, value: u64) {
        if let Operand::Sreg { code, count } = *op {
            self.write_sreg(code, count, value);
        }
    }
}

/// The fault for an instruction the engine decodes but does not execute.
pub(crate) fn unsupported(inst: &Instruction, pc: u64, reason: &str) -> Fault {
    Fault::Unsupported {
        pc,
        mnemonic: inst.mnemonic().into_owned(),
        reason: reason.to_string(),
    }
}

/// Whether the SOPP instruction `op` always goes on to the next instruction with no
/// effect here: the no-ops and hints, and the messages (interrupt, GS, save-wave,
/// ...), wake-ups and the kill flag (pixel shaders), which have no receiver on this
/// device. `exec_sopp` and the block builder (`program::ends_block`) both read it.
pub(crate) fn sopp_falls_through(op: SoppOp) -> bool {
    matches!(
        op,
        SoppOp::SNop
            | SoppOp::SWaitcnt
            | SoppOp::SSetprio
            | SoppOp::SIcacheInv
            | SoppOp::SIncperflevel
            | SoppOp::SDecperflevel
            | SoppOp::STtracedata
            | SoppOp::SSendmsg
            | SoppOp::SWakeup
            | SoppOp::SSetkill
    )
}

/// What a planned scalar instruction does to control flow: a byte (returned in a
/// register), which [`ScalarPlan::flow`] turns into the [`Flow`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum ScalarFlow {
    /// Falls through.
    Next,
    /// Jumps to the plan's target.
    Jump,
    /// Ends the wave (`s_endpgm`).
    Ended,
    /// Waits at the workgroup barrier (`s_barrier`).
    Barrier,
}

/// Register-file index and width of a vector operand.
pub(crate) fn reg_base(op: &Operand) -> Option<(usize, usize)> {
    match *op {
        Operand::Vgpr { index, count } => Some((usize::from(index), usize::from(count))),
        Operand::Agpr { index, count } => {
            Some((AGPR_BASE + usize::from(index), usize::from(count)))
        }
        _ => None,
    }
}

/// Dword `k` of a source operand for a whole wave: a vector register, read in place,
/// or one value for every lane (scalars, constants, registers past the file).
#[derive(Clone, Copy)]
pub(crate) enum Src<'a> {
    /// A register of the vector file.
    Reg(&'a VReg),
    /// The same dword in every lane.
    Splat(u32),
}
