//! What every VALU executor reads and writes through: the lanes of an instruction's
//! sources with their modifiers applied and its destinations with output modifiers,
//! clamping and the EXEC mask ([`Exe`]), and the lane-wise helpers the operations
//! are written with. The operations themselves (`ops`, `cmp`, `vop3p`) and the
//! dispatch (`valu`'s `Exe::run`) build on it.

use crate::arch::{VReg, WAVE_SIZE};
use crate::error::Fault;
use crate::fp::{self, Fl, FpMode};
use crate::inst::{Instruction, Valu};
use crate::operand::Operand;
use crate::state::unsupported;
use crate::state::{Src, WaveContext, WaveState};

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

/// One executing VALU instruction.
pub(crate) struct Exe<'a, 'c> {
    /// The wave.
    pub w: &'a mut WaveState,
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
