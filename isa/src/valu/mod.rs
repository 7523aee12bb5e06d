//! Vector ALU execution: VOP1, VOP2, VOPC, VOP3A/B (incl. the VOP3 forms of
//! VOP1/2/C), their DPP and SDWA forms, and VOP3P.
//!
//! Every operation reads whole 64-lane source arrays, computes all lanes in a tight
//! loop (the compiler can vectorise the simple ones) and writes the destination only
//! in the lanes of the EXEC mask (inactive lanes keep their values). The per-
//! instruction work (which op, which modifiers, MODE) is resolved once per executed
//! instruction, never per lane.
//!
//! * [`Exe`] is the state of one executing instruction: the wave, the sources that a
//!   DPP or SDWA form substitutes, the lanes it writes and the MODE controls.
//! * `ops` holds the VOP1/VOP2/VOP3 operations, `cmp` the compares, `vop3p` the
//!   packed ops, `fp` the floating-point rules (denormals, NaNs, fused rounding).
//!
//! Facts: LLVM's `llvm/lib/Target/AMDGPU/VOPInstructions.td` and
//! `VOP1/VOP2/VOPC/VOP3Instructions.td` (operand order, modifiers, DPP and SDWA
//! controls; their syntax in `llvm/docs/AMDGPUModifierSyntax.rst`); AMD's MI200 ISA
//! for the operations.

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

mod cmp;
mod exe;
#[cfg(target_arch = "x86_64")]
mod jit;
mod ops;
mod plan;
mod vop3p;

use crate::arch::{VReg, WAVE_SIZE};
use crate::error::Fault;
use crate::inst::{Dpp, Sdwa, SdwaDst, Valu, ValuEncoding, Vop3p};
use crate::operand::Operand;
use crate::state::{Src, WaveContext, WaveState};
use exe::{f16_inline, lanes, Exe};

pub(crate) use crate::fp::FpMode;
use crate::simd;
use crate::state::reg_base;
#[cfg(target_arch = "x86_64")]
pub(crate) use jit::{
    compile as compile_runs, find_runs, run_fused, Code, Fused, Ran, RunEnv, Slot,
};
pub(crate) use plan::{run_int_plan, IntPlan, LanePlan};
pub(crate) use vop3p::{run_pk_plan, PkPlan};

impl WaveState {
    /// Dword `k` of an operand in every lane, as [`vread`](Self::vread) gives it but
    /// without copying a register.
    #[inline(always)]
    pub(crate) fn vsrc(&self, op: &Operand, k: usize, ctx: &WaveContext<'_>) -> Src<'_> {
        match reg_base(op) {
            Some((r, _)) => match self.vgpr.get(r + k) {
                Some(v) => Src::Reg(v),
                None => Src::Splat(0),
            },
            None => {
                let v = (self.read_scalar(op, ctx) >> (32 * k.min(1))) as u32;
                Src::Splat(if k < 2 { v } else { 0 })
            }
        }
    }

    /// Dword `k` of an operand in every lane (scalars broadcast).
    pub(crate) fn vread(&self, op: &Operand, k: usize, ctx: &WaveContext<'_>) -> VReg {
        match reg_base(op) {
            Some((r, _)) => self.vgpr.get(r + k).copied().unwrap_or([0; WAVE_SIZE]),
            None => {
                let v = (self.read_scalar(op, ctx) >> (32 * k.min(1))) as u32;
                [if k < 2 { v } else { 0 }; WAVE_SIZE]
            }
        }
    }

    /// Writes dword `k` of a vector destination in the lanes of `mask`.
    #[inline]
    pub(crate) fn vwrite(&mut self, op: &Operand, k: usize, vals: &VReg, mask: u64) {
        if let Some((r, _)) = reg_base(op) {
            if let Some(dst) = self.vgpr.get_mut(r + k) {
                if mask == u64::MAX {
                    *dst = *vals;
                } else {
                    // A select per lane, without branches (vectorises to blends).
                    let on = simd::lane_masks(mask);
                    for l in 0..WAVE_SIZE {
                        dst[l] = (vals[l] & on[l]) | (dst[l] & !on[l]);
                    }
                }
            }
        }
    }

    /// Executes a VOP1/VOP2/VOPC/VOP3 instruction (any encoding).
    ///
    /// # Errors
    /// [`Fault::Unsupported`] naming the mnemonic for the opcodes and operand forms
    /// the engine does not execute.
    pub(crate) fn exec_valu(
        &mut self,
        i: &Valu,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        let fp = FpMode::new(self.mode);
        let exec = self.exec();
        let mut x = Exe {
            w: self,
            ctx,
            i,
            pc,
            exec,
            fp,
            ovr: [None, None],
        };
        match i.encoding {
            ValuEncoding::Dpp(d) => x.run_dpp(d),
            ValuEncoding::Sdwa(s) => x.run_sdwa(s),
            _ => x.run(),
        }
    }

    /// Executes a VOP3P instruction.
    ///
    /// # Errors
    /// [`Fault::Unsupported`] for MFMA and other opcodes the engine does not execute.
    pub(crate) fn exec_vop3p(
        &mut self,
        i: &Vop3p,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        vop3p::exec(self, i, pc, ctx)
    }
}

impl Exe<'_, '_> {
    fn run(&mut self) -> Result<(), Fault> {
        if self.fp.round != 0 && crate::opinfo::rounds(self.i.op) {
            return Err(self.unsup("MODE.FP_ROUND other than round-to-nearest-even"));
        }
        if (self.i.op as u16) < 0x100 {
            cmp::exec(self)
        } else {
            ops::exec(self)
        }
    }

    /// A DPP instruction (`dpp_ctrl`, `row_mask`, `bank_mask`, `bound_ctrl` in
    /// `llvm/docs/AMDGPUModifierSyntax.rst`): src0 is read from another lane
    /// of the row/wave; ROW_MASK/BANK_MASK disable writes; BOUND_CTRL decides what an
    /// invalid source lane (outside the row/wave, or not in EXEC) gives: 0, or no write.
    fn run_dpp(&mut self, d: Dpp) -> Result<(), Fault> {
        let Some((src_lane, in_range)) = dpp_lanes(d.ctrl) else {
            return Err(self.unsup("reserved DPP_CTRL value"));
        };
        let Some(op0) = self.i.src[0] else {
            return Err(self.unsup("DPP without a source"));
        };
        let exec = self.exec;
        let mut valid = 0u64;
        for l in 0..WAVE_SIZE {
            let ok = (in_range >> l) & 1 == 1 && (exec >> src_lane[l]) & 1 == 1;
            valid |= u64::from(ok) << l;
        }
        let mut we = exec & row_mask(d.row_mask) & bank_mask(d.bank_mask);
        if !d.bound_ctrl {
            we &= valid;
        }
        let mut perm = [[0u32; WAVE_SIZE]; 2];
        for k in 0..usize::from(op0.count()).min(2) {
            let raw = self.w.vread(&op0, k, self.ctx);
            perm[k] = lanes(|l| {
                if (valid >> l) & 1 == 1 {
                    raw[usize::from(src_lane[l])]
                } else {
                    0
                }
            });
        }
        self.ovr[0] = Some(perm);
        self.exec = we;
        self.run()
    }

    /// An SDWA instruction (`src0_sel`, `dst_sel`, `dst_unused` in
    /// `llvm/docs/AMDGPUModifierSyntax.rst`): select and extend the
    /// sources, run the 32-bit op, then merge the result into DST_SEL of VDST.
    fn run_sdwa(&mut self, s: Sdwa) -> Result<(), Fault> {
        let (dst_sel, dst_unused) = match s.dst {
            SdwaDst::Vgpr { sel, unused } => (sel, unused),
            // VOPC: the compare writes its lane mask (under EXEC) to VCC or SDST, and
            // EXEC for v_cmpx, like the e32 form; only the source selects apply.
            SdwaDst::Mask => (6, 0),
        };
        if dst_sel > 6 || s.src0_sel > 6 || s.src1_sel > 6 || dst_unused > 2 {
            return Err(self.unsup("reserved SDWA select"));
        }
        for k in 0..2 {
            if let Some(op) = self.i.src[k] {
                let raw = match op {
                    Operand::Const { code, .. } if crate::opinfo::f16_sources(self.i.op) => {
                        [u32::from(f16_inline(code).unwrap_or(code as u16)); WAVE_SIZE]
                    }
                    _ => self.w.vread(&op, 0, self.ctx),
                };
                let sel = if k == 0 { s.src0_sel } else { s.src1_sel };
                let sx = (s.sext >> k) & 1 == 1;
                self.ovr[k] = Some([lanes(|l| sdwa_select(raw[l], sel, sx)), [0; WAVE_SIZE]]);
            }
        }
        if dst_sel == 6 {
            return self.run();
        }
        let old = self.dst_old(0);
        self.run()?;
        let new = self.dst_old(0);
        let (shift, width) = match dst_sel {
            0..=3 => (8 * u32::from(dst_sel), 8),
            4 => (0, 16),
            _ => (16, 16),
        };
        let mask = (1u32 << width) - 1;
        let fmask = mask << shift;
        let above = if shift + width >= 32 {
            0
        } else {
            u32::MAX << (shift + width)
        };
        let merged: VReg = lanes(|l| {
            let field = (new[l] & mask) << shift;
            match dst_unused {
                0 => field,
                1 => {
                    let neg = (new[l] >> (width - 1)) & 1 == 1;
                    field | if neg { above } else { 0 }
                }
                _ => (old[l] & !fmask) | field,
            }
        });
        self.out32(&merged);
        Ok(())
    }
}

/// Source lane of every lane for a DPP_CTRL value, and the lanes whose source lies
/// inside the row / wave. `None` for reserved values.
fn dpp_lanes(ctrl: u16) -> Option<([u8; WAVE_SIZE], u64)> {
    let mut src = [0u8; WAVE_SIZE];
    let mut ok = 0u64;
    for l in 0..WAVE_SIZE {
        let row = l & !15;
        let i = l & 15;
        let s: Option<usize> = match ctrl {
            0x000..=0x0FF => Some((l & !3) | ((usize::from(ctrl) >> (2 * (l & 3))) & 3)),
            0x101..=0x10F => {
                let n = usize::from(ctrl & 0xF);
                (i + n < 16).then_some(l + n)
            }
            0x111..=0x11F => {
                let n = usize::from(ctrl & 0xF);
                (i >= n).then(|| l - n)
            }
            0x121..=0x12F => {
                let n = usize::from(ctrl & 0xF);
                Some(row | ((i + 16 - n) & 15))
            }
            0x130 => (l < 63).then_some(l + 1),
            0x134 => Some((l + 1) & 63),
            0x138 => (l > 0).then(|| l - 1),
            0x13C => Some((l + 63) & 63),
            0x140 => Some(row | (15 - i)),
            0x141 => Some((l & !7) | (7 - (l & 7))),
            0x142 => (row > 0).then(|| row - 1),
            0x143 => (l >= 32).then_some(31),
            0x150..=0x15F => Some(row | usize::from(ctrl & 0xF)),
            _ => return None,
        };
        if let Some(s) = s {
            src[l] = s as u8;
            ok |= 1 << l;
        }
    }
    Some((src, ok))
}

/// Lanes enabled by a DPP ROW_MASK (bit r = lanes 16r..16r+15).
fn row_mask(m: u8) -> u64 {
    (0..4)
        .filter(|r| (m >> r) & 1 == 1)
        .fold(0, |acc, r| acc | 0xFFFF << (16 * r))
}

/// Lanes enabled by a DPP BANK_MASK (bit b = lanes with (lane mod 16) / 4 = b).
fn bank_mask(m: u8) -> u64 {
    let per_row = (0..4)
        .filter(|b| (m >> b) & 1 == 1)
        .fold(0u64, |acc, b| acc | 0xF << (4 * b));
    per_row * 0x0001_0001_0001_0001
}

/// SDWA source select: byte 0–3, word 0–1 or dword, zero- or sign-extended.
fn sdwa_select(v: u32, sel: u8, sext: bool) -> u32 {
    match sel {
        0..=3 => {
            let b = (v >> (8 * u32::from(sel))) & 0xFF;
            if sext {
                b as u8 as i8 as i32 as u32
            } else {
                b
            }
        }
        4 | 5 => {
            let h = (v >> (16 * u32::from(sel - 4))) & 0xFFFF;
            if sext {
                h as u16 as i16 as i32 as u32
            } else {
                h
            }
        }
        _ => v,
    }
}
