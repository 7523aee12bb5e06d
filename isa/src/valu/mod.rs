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
//! Facts: gfx90a-encoding.md sections 3.3–3.8 and 5 (operand order, modifiers, DPP and
//! SDWA controls); AMD's MI200 ISA for the operations.

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

mod cmp;
mod fp;
#[cfg(target_arch = "x86_64")]
mod jit;
mod ops;
mod plan;
pub(crate) mod simd;
mod vop3p;

use crate::error::Fault;
use crate::inst::{Dpp, Instruction, Sdwa, SdwaDst, Valu, ValuEncoding, Vop3p};
use crate::operand::Operand;
use crate::wave::{unsupported, VReg, Wave, WaveContext, AGPR_BASE, WAVE_SIZE};

use fp::Fl;
pub(crate) use fp::FpMode;
#[cfg(target_arch = "x86_64")]
pub(crate) use jit::{
    compile as compile_runs, find_runs, run_fused, Code, Fused, Ran, RunEnv, Slot,
};
pub(crate) use plan::{run_int_plan, IntPlan};
pub(crate) use vop3p::{run_pk_plan, PkPlan};

/// One 64-bit value per lane.
pub(crate) type V64 = [u64; WAVE_SIZE];
/// One f32 per lane.
pub(crate) type F32s = [f32; WAVE_SIZE];
/// One f64 per lane.
pub(crate) type F64s = [f64; WAVE_SIZE];
/// One 16-bit value per lane.
pub(crate) type H16s = [u16; WAVE_SIZE];

/// Builds a per-lane array from a function of the lane index.
#[inline(always)]
pub(crate) fn lanes<T: Copy + Default, F: Fn(usize) -> T>(f: F) -> [T; WAVE_SIZE] {
    let mut out = [T::default(); WAVE_SIZE];
    for (l, o) in out.iter_mut().enumerate() {
        *o = f(l);
    }
    out
}

/// `f` of two sources in every lane (a splat source is read once).
#[inline(always)]
pub(crate) fn map2(a: Src<'_>, b: Src<'_>, f: impl Fn(u32, u32) -> u32) -> VReg {
    match (a, b) {
        (Src::Reg(a), Src::Reg(b)) => lanes(|l| f(a[l], b[l])),
        (Src::Reg(a), Src::Splat(b)) => lanes(|l| f(a[l], b)),
        (Src::Splat(a), Src::Reg(b)) => lanes(|l| f(a, b[l])),
        (Src::Splat(a), Src::Splat(b)) => [f(a, b); WAVE_SIZE],
    }
}

/// 64-bit lanes from low and high dwords (the register/splat choice made once, so
/// the lane loop vectorises).
#[inline(always)]
pub(crate) fn wide(lo: Src<'_>, hi: Src<'_>) -> [u64; WAVE_SIZE] {
    let mut out = [0u64; WAVE_SIZE];
    match (lo, hi) {
        (Src::Reg(a), Src::Reg(b)) => {
            for l in 0..WAVE_SIZE {
                out[l] = u64::from(a[l]) | u64::from(b[l]) << 32;
            }
        }
        (Src::Reg(a), Src::Splat(b)) => {
            for l in 0..WAVE_SIZE {
                out[l] = u64::from(a[l]) | u64::from(b) << 32;
            }
        }
        (Src::Splat(a), Src::Reg(b)) => {
            for l in 0..WAVE_SIZE {
                out[l] = u64::from(a) | u64::from(b[l]) << 32;
            }
        }
        (Src::Splat(a), Src::Splat(b)) => out = [u64::from(a) | u64::from(b) << 32; WAVE_SIZE],
    }
    out
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

/// The f16 pattern of a float inline constant (codes 240–248), for 16-bit operands.
pub(crate) fn f16_inline(code: u8) -> Option<u16> {
    Some(match code {
        240 => 0x3800,
        241 => 0xB800,
        242 => 0x3C00,
        243 => 0xBC00,
        244 => 0x4000,
        245 => 0xC000,
        246 => 0x4400,
        247 => 0xC400,
        248 => 0x3118,
        _ => return None,
    })
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

impl Wave {
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

/// One executing VALU instruction.
pub(crate) struct Exe<'a, 'c> {
    /// The wave.
    pub w: &'a mut Wave,
    /// Its surroundings (for scalar operands such as apertures).
    pub ctx: &'a WaveContext<'c>,
    /// The instruction.
    pub i: &'a Valu,
    /// Its address (for faults).
    pub pc: u64,
    /// The lanes whose results are written: EXEC, narrowed by DPP masks.
    pub exec: u64,
    /// MODE controls.
    pub fp: FpMode,
    /// Raw dwords (low, high) standing in for src0/src1 (DPP permutation, SDWA select).
    pub ovr: [Option<[VReg; 2]>; 2],
}

impl Exe<'_, '_> {
    /// The fault for an unsupported form of this instruction.
    pub(crate) fn unsup(&self, why: &str) -> Fault {
        unsupported(&Instruction::Valu(self.i.clone()), self.pc, why)
    }

    fn run(&mut self) -> Result<(), Fault> {
        if self.fp.round != 0 && rounds(self.i.op.mnemonic()) {
            return Err(self.unsup("MODE.FP_ROUND other than round-to-nearest-even"));
        }
        if (self.i.op as u16) < 0x100 {
            cmp::exec(self)
        } else {
            ops::exec(self)
        }
    }

    // ---- sources -------------------------------------------------------------

    /// Raw dword `k` of source `s` in every lane.
    #[inline]
    pub(crate) fn raw(&self, s: usize, k: usize) -> VReg {
        if let Some(Some(o)) = self.ovr.get(s) {
            return o[k.min(1)];
        }
        match self.i.src[s].as_ref() {
            Some(op) => self.w.vread(op, k, self.ctx),
            None => [0; WAVE_SIZE],
        }
    }

    /// Raw dword `k` of source `s` in every lane, read in place (what [`raw`]
    /// copies).
    ///
    /// [`raw`]: Self::raw
    #[inline]
    pub(crate) fn src(&self, s: usize, k: usize) -> Src<'_> {
        if let Some(Some(o)) = self.ovr.get(s) {
            return Src::Reg(&o[k.min(1)]);
        }
        match self.i.src[s].as_ref() {
            Some(op) => self.w.vsrc(op, k, self.ctx),
            None => Src::Splat(0),
        }
    }

    /// Source `s` as the (low, high) dwords of 64-bit integers, read in place (what
    /// [`u64`](Self::u64) combines).
    #[inline]
    pub(crate) fn src64(&self, s: usize, signed: bool) -> (Src<'_>, Src<'_>) {
        if self.ovr[s.min(1)].is_none() || s > 1 {
            if let Some(Operand::Literal { value, .. }) = self.i.src[s] {
                let v = if signed {
                    value as i32 as i64 as u64
                } else {
                    u64::from(value)
                };
                return (Src::Splat(v as u32), Src::Splat((v >> 32) as u32));
            }
        }
        (self.src(s, 0), self.src(s, 1))
    }

    /// Whether source `s` has neither ABS nor NEG.
    #[inline]
    pub(crate) fn unmodified(&self, s: usize) -> bool {
        (self.i.abs | self.i.neg) >> s & 1 == 0
    }

    /// Writes f32 result bits after OMOD, CLAMP and MODE's output-denormal flush (as
    /// [`outf32`](Self::outf32)).
    pub(crate) fn outf32_bits(&mut self, r: &mut VReg) {
        let flush = self.fp.flush_out32();
        if self.i.omod != 0 || self.i.clamp || flush {
            let omod = self.omod_factor();
            for v in r.iter_mut() {
                *v = self.post32(f32::from_bits(*v), omod, flush).to_bits();
            }
        }
        self.out32(r);
    }

    /// Writes a 64-bit result given as low and high dwords.
    pub(crate) fn out64_pair(&mut self, lo: &VReg, hi: &VReg) {
        if let Some(d) = self.i.vdst {
            self.w.vwrite(&d, 0, lo, self.exec);
            self.w.vwrite(&d, 1, hi, self.exec);
        }
    }

    /// Source `s` as 32-bit integers.
    #[inline]
    pub(crate) fn u32(&self, s: usize) -> VReg {
        self.raw(s, 0)
    }

    /// Source `s` as 64-bit integers (`signed`: a literal is sign-extended).
    pub(crate) fn u64(&self, s: usize, signed: bool) -> V64 {
        if self.ovr[s.min(1)].is_none() || s > 1 {
            if let Some(Operand::Literal { value, .. }) = self.i.src[s] {
                let v = if signed {
                    value as i32 as i64 as u64
                } else {
                    u64::from(value)
                };
                return [v; WAVE_SIZE];
            }
        }
        wide(self.src(s, 0), self.src(s, 1))
    }

    /// A scalar source value (lane selects, masks), from the operand itself.
    pub(crate) fn scalar(&self, s: usize) -> u64 {
        match self.i.src[s].as_ref() {
            Some(op) => self.w.read_scalar(op, self.ctx),
            None => 0,
        }
    }

    fn mods(&self, s: usize) -> (bool, bool) {
        ((self.i.abs >> s) & 1 == 1, (self.i.neg >> s) & 1 == 1)
    }

    /// Source `s` as f32 with ABS/NEG applied (no denormal flush).
    pub(crate) fn f32_raw(&self, s: usize) -> F32s {
        let raw = self.u32(s);
        let (abs, neg) = self.mods(s);
        let clear = if abs { 0x7FFF_FFFF } else { u32::MAX };
        let flip = if neg { 0x8000_0000 } else { 0 };
        lanes(|l| f32::from_bits((raw[l] & clear) ^ flip))
    }

    /// Source `s` as f32 with modifiers and MODE's input-denormal flush.
    pub(crate) fn f32(&self, s: usize) -> F32s {
        let mut v = self.f32_raw(s);
        if self.fp.flush_in32() {
            v = v.map(Fl::ftz);
        }
        v
    }

    /// Source `s` as f64 with ABS/NEG (a 32-bit literal is the high dword), no flush.
    pub(crate) fn f64_raw(&self, s: usize) -> F64s {
        let raw = match (self.i.src[s], s < 2 && self.ovr[s].is_some()) {
            (Some(Operand::Literal { value, .. }), false) => [u64::from(value) << 32; WAVE_SIZE],
            _ => self.u64(s, false),
        };
        let (abs, neg) = self.mods(s);
        let clear = if abs { !(1u64 << 63) } else { u64::MAX };
        let flip = if neg { 1u64 << 63 } else { 0 };
        lanes(|l| f64::from_bits((raw[l] & clear) ^ flip))
    }

    /// Source `s` as f64 with modifiers and MODE's input-denormal flush.
    pub(crate) fn f64(&self, s: usize) -> F64s {
        let mut v = self.f64_raw(s);
        if self.fp.flush_in64() {
            v = v.map(Fl::ftz);
        }
        v
    }

    /// Source `s` as a 16-bit value: the half OP_SEL picks, f16 inline constants.
    pub(crate) fn u16(&self, s: usize) -> H16s {
        if let (Some(Operand::Const { code, .. }), true) =
            (self.i.src[s], s > 1 || self.ovr[s].is_none())
        {
            if let Some(h) = f16_inline(code) {
                return [h; WAVE_SIZE];
            }
        }
        let raw = self.u32(s);
        let hi = (self.i.op_sel >> s) & 1 == 1;
        let sh = if hi { 16 } else { 0 };
        lanes(|l| (raw[l] >> sh) as u16)
    }

    /// Source `s` as f16 bits with ABS/NEG (no flush).
    pub(crate) fn h16_raw(&self, s: usize) -> H16s {
        let v = self.u16(s);
        let (abs, neg) = self.mods(s);
        let clear = if abs { 0x7FFF } else { 0xFFFF };
        let flip = if neg { 0x8000 } else { 0 };
        lanes(|l| (v[l] & clear) ^ flip)
    }

    /// Source `s` as f16 bits with modifiers and MODE's input-denormal flush.
    pub(crate) fn h16(&self, s: usize) -> H16s {
        let mut v = self.h16_raw(s);
        if self.fp.flush_in64() {
            v = v.map(fp::ftz16);
        }
        v
    }

    // ---- destinations ----------------------------------------------------------

    /// Writes a 32-bit result.
    pub(crate) fn out32(&mut self, v: &VReg) {
        if let Some(d) = self.i.vdst {
            self.w.vwrite(&d, 0, v, self.exec);
        }
    }

    /// Writes a 64-bit result.
    pub(crate) fn out64(&mut self, v: &V64) {
        if let Some(d) = self.i.vdst {
            let lo: VReg = lanes(|l| v[l] as u32);
            let hi: VReg = lanes(|l| (v[l] >> 32) as u32);
            self.w.vwrite(&d, 0, &lo, self.exec);
            self.w.vwrite(&d, 1, &hi, self.exec);
        }
    }

    /// The current value of dword `k` of the destination.
    pub(crate) fn dst_old(&self, k: usize) -> VReg {
        match self.i.vdst {
            Some(d) => self.w.vread(&d, k, self.ctx),
            None => [0; WAVE_SIZE],
        }
    }

    /// Writes a 16-bit result: `preserve` keeps the other half (and OP_SEL bit 3 picks
    /// the half written), otherwise the result is zero-extended.
    pub(crate) fn out16(&mut self, v: &H16s, preserve: bool) {
        let r: VReg = if preserve {
            let old = self.dst_old(0);
            if self.i.op_sel & 8 != 0 {
                lanes(|l| (old[l] & 0xFFFF) | u32::from(v[l]) << 16)
            } else {
                lanes(|l| (old[l] & 0xFFFF_0000) | u32::from(v[l]))
            }
        } else {
            lanes(|l| u32::from(v[l]))
        };
        self.out32(&r);
    }

    fn omod_factor(&self) -> f32 {
        match self.i.omod {
            1 => 2.0,
            2 => 4.0,
            3 => 0.5,
            _ => 1.0,
        }
    }

    /// OMOD, CLAMP and output-denormal flush of one f32 result.
    #[inline]
    fn post32(&self, x: f32, omod: f32, flush: bool) -> f32 {
        let mut x = x * omod;
        if self.i.clamp {
            x = clamp01(x, self.fp.dx10);
        }
        if flush {
            x = x.ftz();
        }
        x
    }

    /// Writes an f32 result after OMOD, CLAMP and MODE's output-denormal flush.
    pub(crate) fn outf32(&mut self, v: F32s) {
        self.outf32_flush(v, self.fp.flush_out32());
    }

    /// [`outf32`](Self::outf32) with an explicit output flush.
    pub(crate) fn outf32_flush(&mut self, v: F32s, flush: bool) {
        let r: VReg = if self.i.omod == 0 && !self.i.clamp && !flush {
            v.map(f32::to_bits)
        } else {
            let omod = self.omod_factor();
            lanes(|l| self.post32(v[l], omod, flush).to_bits())
        };
        self.out32(&r);
    }

    /// Writes an f64 result after OMOD, CLAMP and the output-denormal flush.
    pub(crate) fn outf64(&mut self, v: F64s) {
        let flush = self.fp.flush_out64();
        let r: V64 = if self.i.omod == 0 && !self.i.clamp && !flush {
            v.map(f64::to_bits)
        } else {
            let omod = f64::from(self.omod_factor());
            let (clamp, dx10) = (self.i.clamp, self.fp.dx10);
            lanes(|l| {
                let mut x = v[l] * omod;
                if clamp {
                    x = clamp01(x, dx10);
                }
                if flush {
                    x = x.ftz();
                }
                x.to_bits()
            })
        };
        self.out64(&r);
    }

    /// Writes an f16 result (bits) after OMOD, CLAMP and the output-denormal flush.
    pub(crate) fn outf16(&mut self, v: H16s, preserve: bool) {
        let v = self.post16(v, self.i.omod, self.i.clamp);
        self.out16(&v, preserve);
    }

    /// OMOD, CLAMP and output flush of f16 results.
    pub(crate) fn post16(&self, v: H16s, omod: u8, clamp: bool) -> H16s {
        let flush = self.fp.flush_out64();
        if omod == 0 && !clamp && !flush {
            return v;
        }
        let factor = match omod {
            1 => 2.0,
            2 => 4.0,
            3 => 0.5,
            _ => 1.0,
        };
        let dx10 = self.fp.dx10;
        lanes(|l| {
            let mut h = v[l];
            if omod != 0 && h & 0x7C00 != 0x7C00 {
                h = fp::d2h(fp::h2d(h) * factor, false);
            }
            if clamp {
                h = fp::d2h(clamp01(fp::h2d(h), dx10), false);
            }
            if flush {
                h = fp::ftz16(h);
            }
            h
        })
    }

    /// Writes a lane mask to the second (carry / VCC-like) destination.
    pub(crate) fn out_sdst(&mut self, m: u64) {
        if let Some(o) = self.i.sdst {
            self.w.write_scalar(&o, m);
        }
    }

    /// Writes a lane mask to the destination operand (compares).
    pub(crate) fn out_mask(&mut self, m: u64) {
        if let Some(o) = self.i.vdst {
            self.w.write_scalar(&o, m);
        }
    }

    // ---- DPP and SDWA -----------------------------------------------------------

    /// A DPP instruction (gfx90a-encoding.md 3.8, 5.4): src0 is read from another lane
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

    /// An SDWA instruction (gfx90a-encoding.md 3.7, 5.3): select and extend the
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
                    Operand::Const { code, .. } if is_f16_op(self.i.op.mnemonic()) => {
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

/// CLAMP: [0, 1], −0 → +0; NaN → 0 under DX10_CLAMP, else kept.
#[inline]
pub(crate) fn clamp01<F: Fl + From<f32>>(x: F, dx10: bool) -> F {
    if x.nan() {
        return if dx10 { F::from(0.0) } else { x };
    }
    let zero = F::from(0.0);
    let one = F::from(1.0);
    if x <= zero {
        zero
    } else if x > one {
        one
    } else {
        x
    }
}

/// Whether a mnemonic names an operation whose result depends on the rounding mode.
fn rounds(mn: &str) -> bool {
    (mn.contains("_f16") || mn.contains("_f32") || mn.contains("_f64"))
        && !mn.starts_with("v_cmp")
        && !mn.starts_with("v_min")
        && !mn.starts_with("v_max")
        && !mn.starts_with("v_med3")
}

/// Whether an op reads 16-bit float operands.
pub(crate) fn is_f16_op(mn: &str) -> bool {
    mn.contains("_f16") && !mn.starts_with("v_cvt_f16_f32") && !mn.contains("_f32_f16")
        || mn.starts_with("v_cvt_f32_f16")
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
