//! VOP3P: packed 16-bit math, gfx90a packed f32 (`v_pk_fma/mul/add_f32`,
//! `v_pk_mov_b32`), mixed-precision FMA, dot products and the AGPR moves.
//!
//! Operand selection (`op_sel`, `op_sel_hi`, `neg_lo`, `neg_hi` in LLVM's
//! `llvm/docs/AMDGPUModifierSyntax.rst`): for the low result half, source i comes
//! from its high half when OP_SEL[i] is set; for the high result half OP_SEL_HI[i]
//! chooses; NEG_LO/NEG_HI negate the source for the low/high computation. For the
//! packed-f32 ops the unit is a dword of a 64-bit source. An inline constant gives
//! its 16-bit pattern in the low half and 0 in the high half (16-bit ops), or its
//! 32-bit pattern in both dwords (packed f32). MFMA is not executed.

use crate::arch::{VReg, AGPR_BASE, WAVE_SIZE};
use crate::error::Fault;
use crate::generated::opcodes::Vop3pOp as O;
use crate::inst::{Instruction, Vop3p};
use crate::operand::{code, inline_constant, Operand};
use crate::state::{unsupported, WaveContext, WaveState};

use super::exe::{clamp01, f16_inline, lanes};
use crate::fp::{self, d2h, f2h, fmax, fmin, h2d, h2f, nan_of, Fl, FpMode};
use crate::sem;
use crate::simd;
use crate::state::{reg_base, Src};

/// Raw dword `k` of a VOP3P source, with the constant rules of this format.
fn raw(w: &WaveState, op: &Operand, k: usize, f16: bool, ctx: &WaveContext<'_>) -> VReg {
    match *op {
        Operand::Const { code, .. } => {
            let v = if f16 {
                f16_inline(code).map_or_else(
                    || inline_constant(u16::from(code), 1).unwrap_or(0) as u32,
                    u32::from,
                )
            } else {
                inline_constant(u16::from(code), 1).unwrap_or(0) as u32
            };
            [v; WAVE_SIZE]
        }
        _ => w.vread(op, k, ctx),
    }
}

/// A VOP3P source as packed-f32 dwords: an inline constant gives its f32 pattern in
/// both dwords; anything else reads dword `k` like [`WaveState::vread`].
#[inline(always)]
fn pk_src<'a>(w: &'a WaveState, op: &Operand, k: usize, ctx: &WaveContext<'_>) -> Src<'a> {
    match *op {
        Operand::Const { code, .. } => {
            Src::Splat(inline_constant(u16::from(code), 1).unwrap_or(0) as u32)
        }
        _ => w.vsrc(op, k, ctx),
    }
}

/// An f32 source negated and/or with input denormals flushed; `buf` holds the lanes
/// of a register that had to change.
#[inline]
fn modified<'a>(s: Src<'a>, neg: bool, flush: bool, buf: &'a mut Option<VReg>) -> Src<'a> {
    if !neg && !flush {
        return s;
    }
    let flip = if neg { 0x8000_0000 } else { 0 };
    let f = move |v: u32| {
        let x = f32::from_bits(v ^ flip);
        if flush { x.ftz() } else { x }.to_bits()
    };
    match s {
        Src::Reg(r) => Src::Reg(buf.insert(lanes(|l| f(r[l])))),
        Src::Splat(v) => Src::Splat(f(v)),
    }
}

/// `v_pk_add_f32`, `v_pk_mul_f32`, `v_pk_fma_f32`: two f32 operations per lane, on
/// the dwords OP_SEL (low result) and OP_SEL_HI (high result) pick, NEG_LO/NEG_HI
/// negating; whole-wave lane kernels with one rounding for the FMA.
fn pk_f32(w: &mut WaveState, i: &Vop3p, pc: u64, ctx: &WaveContext<'_>) -> Result<(), Fault> {
    let unsup = |why: &str| unsupported(&Instruction::Vop3p(i.clone()), pc, why);
    let exec = w.exec();
    let fpm = FpMode::new(w.mode);
    if fpm.round != 0 {
        return Err(unsup("MODE.FP_ROUND other than round-to-nearest-even"));
    }
    let Some(d) = i.vdst else {
        return Err(unsup("missing destination"));
    };
    let n = if i.op == O::VPkFmaF32 { 3 } else { 2 };
    if i.src.iter().filter(|s| s.is_some()).count() < n {
        return Err(unsup("missing operands"));
    }
    let flush = fpm.flush_in32();
    // Both dwords of every source, resolved once for the two halves.
    let mut dwords = [[Src::Splat(0); 2]; 3];
    for (k, dw) in dwords.iter_mut().enumerate().take(n) {
        if let Some(op) = &i.src[k] {
            // Only the dwords OP_SEL / OP_SEL_HI pick are read.
            let (lo, hi) = ((i.op_sel >> k) & 1, (i.op_sel_hi >> k) & 1);
            if lo == 0 || hi == 0 {
                dw[0] = pk_src(w, op, 0, ctx);
            }
            if lo == 1 || hi == 1 {
                dw[1] = pk_src(w, op, 1, ctx);
            }
        }
    }
    // Both halves are computed before either is written (the destination may be a
    // source).
    let mut out = [[0u32; WAVE_SIZE]; 2];
    for (h, o) in out.iter_mut().enumerate() {
        let (bits, negs) = if h == 0 {
            (i.op_sel, i.neg_lo)
        } else {
            (i.op_sel_hi, i.neg_hi)
        };
        let mut bufs: [Option<VReg>; 3] = [None, None, None];
        let [b0, b1, b2] = &mut bufs;
        let dw = |k: usize| dwords[k][usize::from((bits >> k) & 1)];
        let neg = |k: usize| (negs >> k) & 1 == 1;
        let pick = |k: usize, buf| modified(dw(k), neg(k), flush, buf);
        let (a, b) = (pick(0, b0), pick(1, b1));
        match i.op {
            O::VPkAddF32 => simd::add_lanes(a, b, o),
            O::VPkMulF32 => simd::mul_lanes(a, b, o),
            _ => simd::fma_lanes(a, b, pick(2, b2), o),
        }
        if i.clamp || fpm.flush_out32() {
            for v in o.iter_mut() {
                let mut x = f32::from_bits(*v);
                if i.clamp {
                    x = clamp01(x, fpm.dx10);
                }
                if fpm.flush_out32() {
                    x = x.ftz();
                }
                *v = x.to_bits();
            }
        }
    }
    w.vwrite(&d, 0, &out[0], exec);
    w.vwrite(&d, 1, &out[1], exec);
    Ok(())
}

/// Where one dword of a planned source comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PlanSrc {
    /// Index in the vector file ([`WaveState::vgpr`]).
    Vreg(u16),
    /// Index in the scalar file ([`WaveState::sgpr`]).
    Sreg(u8),
    /// A constant.
    Imm(u32),
}

/// Dword `dw` (0 or 1) of a VOP3P source as the packed-f32 ops (`pk_src`) and
/// `v_pk_mov_b32` (`raw`) read it: an inline constant is its 32-bit pattern in both
/// dwords; `None` for operands whose value is not in the register files.
pub(super) fn pk_dword(op: &Operand, dw: u8) -> Option<PlanSrc> {
    Some(match *op {
        Operand::Const { code, .. } => {
            PlanSrc::Imm(inline_constant(u16::from(code), 1).unwrap_or(0) as u32)
        }
        Operand::Vgpr { index, .. } => PlanSrc::Vreg(u16::from(index) + u16::from(dw)),
        Operand::Agpr { index, .. } => {
            PlanSrc::Vreg((AGPR_BASE + usize::from(index)) as u16 + u16::from(dw))
        }
        Operand::Sreg { code, count } => {
            let c = usize::from(code) + usize::from(dw);
            let readable = c < 128 && c != usize::from(code::NULL) && (dw == 0 || count >= 2);
            if readable {
                PlanSrc::Sreg(c as u8)
            } else {
                PlanSrc::Imm(0)
            }
        }
        Operand::Literal { value, .. } => PlanSrc::Imm(if dw == 0 { value } else { 0 }),
        Operand::Special { .. } => return None,
    })
}

/// A packed-f32 VOP3P instruction with OP_SEL/OP_SEL_HI already applied: the dword
/// every source gives each half, resolved to a register index or constant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PkPlan {
    op: O,
    /// Vector-file index of the destination's low dword.
    dst: u16,
    /// `src[half][k]`: source k's dword for the low (0) and high (1) result.
    src: [[PlanSrc; 3]; 2],
    /// NEG_LO, NEG_HI.
    neg: [u8; 2],
    clamp: bool,
}

impl PkPlan {
    /// The plan of `i` if it is a packed-f32 op with all its operands present and
    /// each resolvable (registers, inline constants, literals); `None` otherwise.
    pub(crate) fn of(i: &Vop3p) -> Option<PkPlan> {
        let n = match i.op {
            O::VPkAddF32 | O::VPkMulF32 => 2,
            O::VPkFmaF32 => 3,
            _ => return None,
        };
        if i.src.iter().filter(|s| s.is_some()).count() < n {
            return None;
        }
        let dst = reg_base(&i.vdst?)?.0 as u16;
        let mut src = [[PlanSrc::Imm(0); 3]; 2];
        for (h, bits) in [i.op_sel, i.op_sel_hi].into_iter().enumerate() {
            for k in 0..n {
                if let Some(op) = &i.src[k] {
                    src[h][k] = pk_dword(op, (bits >> k) & 1)?;
                }
            }
        }
        Some(PkPlan {
            op: i.op,
            dst,
            src,
            neg: [i.neg_lo, i.neg_hi],
            clamp: i.clamp,
        })
    }
}

/// Executes a packed-f32 plan as [`pk_f32`] would; false (nothing done) when MODE
/// asks for rounding or input flushing, which the general path handles.
pub(crate) fn run_pk_plan(w: &mut WaveState, p: &PkPlan) -> bool {
    let fpm = FpMode::new(w.mode);
    if fpm.round != 0 || fpm.flush_in32() {
        return false;
    }
    let exec = w.exec();
    // Both halves are computed (into the wave's scratch lanes) before either is
    // written: the destination may be a source.
    let (vgpr, sgpr, out) = (&mut w.vgpr, &w.sgpr, &mut w.tmp);
    for (h, o) in out.iter_mut().enumerate() {
        let mut bufs: [Option<VReg>; 3] = [None, None, None];
        let [b0, b1, b2] = &mut bufs;
        let get = |k: usize, buf| {
            let s = match p.src[h][k] {
                PlanSrc::Vreg(r) => match vgpr.get(usize::from(r)) {
                    Some(v) => Src::Reg(v),
                    None => Src::Splat(0),
                },
                PlanSrc::Sreg(c) => Src::Splat(sgpr[usize::from(c)]),
                PlanSrc::Imm(v) => Src::Splat(v),
            };
            modified(s, (p.neg[h] >> k) & 1 == 1, false, buf)
        };
        let (a, b) = (get(0, b0), get(1, b1));
        match p.op {
            O::VPkAddF32 => simd::add_lanes(a, b, o),
            O::VPkMulF32 => simd::mul_lanes(a, b, o),
            _ => simd::fma_lanes(a, b, get(2, b2), o),
        }
        if p.clamp || fpm.flush_out32() {
            for v in o.iter_mut() {
                let mut x = f32::from_bits(*v);
                if p.clamp {
                    x = clamp01(x, fpm.dx10);
                }
                if fpm.flush_out32() {
                    x = x.ftz();
                }
                *v = x.to_bits();
            }
        }
    }
    let d = usize::from(p.dst);
    for (h, o) in out.iter().enumerate() {
        if let Some(dst) = vgpr.get_mut(d + h) {
            if exec == u64::MAX {
                *dst = *o;
            } else {
                let on = simd::lane_masks(exec);
                for l in 0..WAVE_SIZE {
                    dst[l] = (o[l] & on[l]) | (dst[l] & !on[l]);
                }
            }
        }
    }
    true
}

/// One executing VOP3P instruction (not packed f32): its sources' selection rules and
/// result post-processing, shared by the operation families below.
struct Pk<'w, 'c, 'i> {
    w: &'w mut WaveState,
    i: &'i Vop3p,
    pc: u64,
    ctx: &'w WaveContext<'c>,
    fpm: FpMode,
    exec: u64,
    /// The destination.
    d: Operand,
}

impl Pk<'_, '_, '_> {
    fn unsup(&self, why: &str) -> Fault {
        unsupported(&Instruction::Vop3p(self.i.clone()), self.pc, why)
    }

    /// Fails unless the instruction has at least `n` sources.
    fn need(&self, n: usize) -> Result<(), Fault> {
        if self.i.src.iter().filter(|s| s.is_some()).count() < n {
            return Err(self.unsup("missing operands"));
        }
        Ok(())
    }

    /// Whether bit `k` of a modifier field is set.
    fn sel(bits: u8, k: usize) -> bool {
        (bits >> k) & 1 == 1
    }

    /// Dword `dw` of source k (0 when absent), with this op's constant rules.
    fn dword(&self, k: usize, dw: usize) -> VReg {
        let f16 = crate::opinfo::vop3p_f16_sources(self.i.op);
        match self.i.src[k] {
            Some(op) => raw(self.w, &op, dw, f16, self.ctx),
            None => [0; WAVE_SIZE],
        }
    }

    /// The two 16-bit halves (for the low result, for the high result) of source k.
    fn halves(&self, k: usize) -> [[u16; WAVE_SIZE]; 2] {
        let v = self.dword(k, 0);
        let pick = |hi: bool| lanes(|l| (v[l] >> if hi { 16 } else { 0 }) as u16);
        [
            pick(Self::sel(self.i.op_sel, k)),
            pick(Self::sel(self.i.op_sel_hi, k)),
        ]
    }

    /// [`halves`](Self::halves) as f16 operands: NEG_LO/NEG_HI applied, input
    /// denormals flushed when MODE says so.
    fn f16_halves(&self, k: usize) -> [[u16; WAVE_SIZE]; 2] {
        let fl = |on: bool| if on { 0x8000 } else { 0 };
        let (a, b) = (
            fl(Self::sel(self.i.neg_lo, k)),
            fl(Self::sel(self.i.neg_hi, k)),
        );
        let mut h = self.halves(k);
        h[0] = h[0].map(|v| v ^ a);
        h[1] = h[1].map(|v| v ^ b);
        if self.fpm.flush_in64() {
            h[0] = h[0].map(fp::ftz16);
            h[1] = h[1].map(fp::ftz16);
        }
        h
    }

    /// An f16 result after CLAMP and the output flush.
    fn post16(&self, h: u16) -> u16 {
        let mut h = h;
        if self.i.clamp {
            h = d2h(clamp01(h2d(h), self.fpm.dx10), false);
        }
        if self.fpm.flush_out64() {
            h = fp::ftz16(h);
        }
        h
    }

    /// Writes the destination's dword `k` in the active lanes.
    fn write(&mut self, k: usize, v: &VReg) {
        let (d, exec) = (self.d, self.exec);
        self.w.vwrite(&d, k, v, exec);
    }

    /// Writes two 16-bit result halves packed into the destination.
    fn write_halves(&mut self, out: &[[u16; WAVE_SIZE]; 2]) {
        let v = lanes(|l| u32::from(out[0][l]) | u32::from(out[1][l]) << 16);
        self.write(0, &v);
    }
}

/// Executes one VOP3P instruction.
pub(super) fn exec(
    w: &mut WaveState,
    i: &Vop3p,
    pc: u64,
    ctx: &WaveContext<'_>,
) -> Result<(), Fault> {
    if matches!(i.op, O::VPkAddF32 | O::VPkMulF32 | O::VPkFmaF32) {
        return pk_f32(w, i, pc, ctx);
    }
    let unsup = |why: &str| unsupported(&Instruction::Vop3p(i.clone()), pc, why);
    let exec = w.exec();
    let fpm = FpMode::new(w.mode);
    if fpm.round != 0 && crate::opinfo::vop3p_rounds(i.op) {
        return Err(unsup("MODE.FP_ROUND other than round-to-nearest-even"));
    }
    let Some(d) = i.vdst else {
        return Err(unsup("missing destination"));
    };
    let mut x = Pk {
        w,
        i,
        pc,
        ctx,
        fpm,
        exec,
        d,
    };
    match i.op {
        O::VAccvgprReadB32 | O::VAccvgprWriteB32 => {
            let Some(s0) = i.src[0] else {
                return Err(x.unsup("missing operands"));
            };
            let v = x.w.vread(&s0, 0, ctx);
            x.write(0, &v);
        }
        O::VPkMovB32 => {
            let (Some(s0), Some(s1)) = (i.src[0], i.src[1]) else {
                return Err(x.unsup("missing operands"));
            };
            let lo = raw(x.w, &s0, usize::from(i.op_sel & 1), false, ctx);
            let hi = raw(x.w, &s1, usize::from((i.op_sel >> 1) & 1), false, ctx);
            x.write(0, &lo);
            x.write(1, &hi);
        }
        O::VPkAddF16 | O::VPkMulF16 | O::VPkMinF16 | O::VPkMaxF16 | O::VPkFmaF16 => pk_f16(&mut x)?,
        O::VFmaMixF32 | O::VFmaMixloF16 | O::VFmaMixhiF16 => fma_mix(&mut x)?,
        O::VDot2F32F16 => dot2_f32_f16(&mut x)?,
        O::VDot2I32I16
        | O::VDot2U32U16
        | O::VDot4I32I8
        | O::VDot4U32U8
        | O::VDot8I32I4
        | O::VDot8U32U4 => dot_int(&mut x)?,
        op if sem::Pk16::of(op).is_some() => pk_int16(&mut x)?,
        _ => return Err(x.unsup("MFMA (matrix) instructions are not executed")),
    }
    Ok(())
}

/// `v_pk_{add,mul,min,max,fma}_f16`.
fn pk_f16(x: &mut Pk) -> Result<(), Fault> {
    let op = x.i.op;
    let n = if op == O::VPkFmaF16 { 3 } else { 2 };
    x.need(n)?;
    let s: Vec<[[u16; WAVE_SIZE]; 2]> = (0..n).map(|k| x.f16_halves(k)).collect();
    let ieee = x.fpm.ieee;
    let mut out = [[0u16; WAVE_SIZE]; 2];
    for half in 0..2 {
        out[half] = lanes(|l| {
            let (a, b) = (s[0][half][l], s[1][half][l]);
            let r = match op {
                O::VPkAddF16 => fp::f16_binary(a, b, |x, y| x + y),
                O::VPkMulF16 => fp::f16_binary(a, b, |x, y| x * y),
                O::VPkMinF16 => f2h(fmin(h2f(a), h2f(b), ieee), false),
                O::VPkMaxF16 => f2h(fmax(h2f(a), h2f(b), ieee), false),
                _ => sem::fma16(a, b, s[2][half][l]),
            };
            x.post16(r)
        });
    }
    x.write_halves(&out);
    Ok(())
}

/// The packed 16-bit integer operations ([`sem::Pk16`]).
fn pk_int16(x: &mut Pk) -> Result<(), Fault> {
    let Some(op) = sem::Pk16::of(x.i.op) else {
        return Err(x.unsup("not a packed 16-bit integer operation"));
    };
    let three = op.sources() == 3;
    x.need(2 + usize::from(three))?;
    let clamp = x.i.clamp;
    if clamp && !op.saturates() {
        return Err(x.unsup("CLAMP on this packed integer operation"));
    }
    let a = x.halves(0);
    let b = x.halves(1);
    let c = if three {
        x.halves(2)
    } else {
        [[0; WAVE_SIZE]; 2]
    };
    let mut out = [[0u16; WAVE_SIZE]; 2];
    for half in 0..2 {
        out[half] = lanes(|l| op.apply(a[half][l], b[half][l], c[half][l], clamp));
    }
    x.write_halves(&out);
    Ok(())
}

/// `v_fma_mix_f32`, `v_fma_mixlo_f16`, `v_fma_mixhi_f16`.
fn fma_mix(x: &mut Pk) -> Result<(), Fault> {
    x.need(3)?;
    let (i, fpm) = (x.i, x.fpm);
    // OP_SEL_HI[k] = 1: source k is the f16 half OP_SEL[k] picks, else an f32;
    // NEG_LO negates and NEG_HI takes the absolute value.
    let mut s = [[0f64; WAVE_SIZE]; 3];
    for k in 0..3 {
        let is16 = Pk::sel(i.op_sel_hi, k);
        let Some(op) = i.src[k] else { continue };
        let v = raw(x.w, &op, 0, is16, x.ctx);
        let hi = Pk::sel(i.op_sel, k);
        let (neg, abs) = (Pk::sel(i.neg_lo, k), Pk::sel(i.neg_hi, k));
        s[k] = lanes(|l| {
            let mut v = if is16 {
                let mut h = (v[l] >> if hi { 16 } else { 0 }) as u16;
                if fpm.flush_in64() {
                    h = fp::ftz16(h);
                }
                h2d(h)
            } else {
                let f = f32::from_bits(v[l]);
                f64::from(if fpm.flush_in32() { f.ftz() } else { f })
            };
            if abs {
                v = v.abs();
            }
            if neg {
                v = -v;
            }
            v
        });
    }
    let r = lanes(|l| {
        nan_of(
            fp::fma_rto(s[0][l], s[1][l], s[2][l]),
            &[s[0][l], s[1][l], s[2][l]],
        )
    });
    if i.op == O::VFmaMixF32 {
        let v: VReg = lanes(|l| {
            let mut f = r[l] as f32;
            if i.clamp {
                f = clamp01(f, fpm.dx10);
            }
            if fpm.flush_out32() {
                f = f.ftz();
            }
            f.to_bits()
        });
        x.write(0, &v);
    } else {
        let old = x.w.vread(&x.d, 0, x.ctx);
        let hi = i.op == O::VFmaMixhiF16;
        let v: VReg = lanes(|l| {
            let h = u32::from(x.post16(d2h(r[l], false)));
            if hi {
                (old[l] & 0xFFFF) | h << 16
            } else {
                (old[l] & 0xFFFF_0000) | h
            }
        });
        x.write(0, &v);
    }
    Ok(())
}

/// `v_dot2_f32_f16`.
fn dot2_f32_f16(x: &mut Pk) -> Result<(), Fault> {
    x.need(3)?;
    let a = x.f16_halves(0);
    let b = x.f16_halves(1);
    let c = x.dword(2, 0);
    let (neg_c, clamp, dx10) = (Pk::sel(x.i.neg_lo, 2), x.i.clamp, x.fpm.dx10);
    let v: VReg = lanes(|l| {
        let c = f32::from_bits(c[l]);
        let mut f = sem::dot2_f32_f16([a[0][l], a[1][l]], [b[0][l], b[1][l]], c, neg_c);
        if clamp {
            f = clamp01(f, dx10);
        }
        f.to_bits()
    });
    x.write(0, &v);
    Ok(())
}

/// The integer dot products `v_dot{2,4,8}_{i,u}32_*` ([`sem::dot`]).
fn dot_int(x: &mut Pk) -> Result<(), Fault> {
    x.need(3)?;
    let (n, bits, signed) = match x.i.op {
        O::VDot2I32I16 => (2, 16, true),
        O::VDot2U32U16 => (2, 16, false),
        O::VDot4I32I8 => (4, 8, true),
        O::VDot4U32U8 => (4, 8, false),
        O::VDot8I32I4 => (8, 4, true),
        _ => (8, 4, false),
    };
    let a = x.dword(0, 0);
    let b = x.dword(1, 0);
    let c = x.dword(2, 0);
    let clamp = x.i.clamp;
    let v: VReg = lanes(|l| sem::dot(a[l], b[l], c[l], n, bits, signed, clamp));
    x.write(0, &v);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wave::testutil::{lit, s, v, Harness};
    use crate::wave::Wave;

    /// A wave whose VGPRs, AGPRs and SGPRs hold a mix of ordinary floats, NaNs
    /// (quiet and signalling), infinities, zeros and denormals.
    fn filled(mode: u32, exec: u64) -> Wave {
        let specials = [
            0x7FC0_1234u32,
            0x7F80_0001,
            0xFF80_0000,
            0x8000_0000,
            0x0000_0003,
            0x3F80_0000,
        ];
        let mut w = Wave::new();
        let mut x = 0x1234_5678u32;
        for (r, reg) in w.vgpr.iter_mut().enumerate().take(AGPR_BASE + 16) {
            for (l, d) in reg.iter_mut().enumerate() {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *d = if (l + r) % 9 == 0 {
                    specials[(l + r) % specials.len()]
                } else {
                    // Floats of moderate magnitude with random low bits.
                    0x3E00_0000 + (x >> 9) + ((r as u32 & 3) << 23)
                };
            }
        }
        for (c, d) in w.sgpr.iter_mut().enumerate().take(16) {
            *d = 0x4000_0000 + (c as u32) * 0x1_0001;
        }
        w.sgpr[3] = 0x7F80_0002;
        w.mode = mode;
        w.set_exec(exec);
        w
    }

    /// The plan computes what the general path computes, for every operand kind,
    /// OP_SEL/OP_SEL_HI, NEG, CLAMP, partial EXEC and MODE setting; MODEs the plan
    /// does not take leave the wave untouched.
    #[test]
    fn plans_agree_with_the_general_path() {
        let a = |i: u8, n: u8| Operand::Agpr { index: i, count: n };
        let konst = Operand::Const {
            code: 240,
            value: 0x3FE0_0000_0000_0000,
        };
        let sources: [[Option<Operand>; 3]; 6] = [
            [Some(v(2, 2)), Some(s(0, 2)), Some(konst)],
            [Some(v(4, 2)), Some(v(6, 2)), Some(v(8, 2))],
            [Some(a(2, 2)), Some(lit(0x3FC0_0000)), Some(v(2, 2))],
            [Some(s(2, 2)), Some(v(10, 2)), Some(s(124, 2))],
            [Some(v(12, 2)), Some(s(125, 2)), Some(a(4, 2))],
            [Some(v(14, 2)), Some(s(127, 2)), Some(v(3, 2))],
        ];
        let mut h = Harness::new(0);
        let mut checked = 0;
        for op in [O::VPkFmaF32, O::VPkAddF32, O::VPkMulF32] {
            for (si, src) in sources.iter().enumerate() {
                for bits in [0u8, 0b010, 0b101, 0b111] {
                    for mode in [0x0F0u32, 0x0F0 | 1 << 8, 0x000, 0x0B0, 0x090, 0x0F1] {
                        let exec = if si % 2 == 0 {
                            u64::MAX
                        } else {
                            0xF0F0_1234_FFFF_0001
                        };
                        let i = Vop3p {
                            op,
                            vdst: Some(if si == 3 { a(6, 2) } else { v(2 * si as u8, 2) }),
                            src: *src,
                            op_sel: bits,
                            op_sel_hi: bits ^ 0b011,
                            neg_lo: bits >> 1,
                            neg_hi: bits,
                            clamp: bits == 0b111,
                            mai: None,
                        };
                        let plan = PkPlan::of(&i).expect("planned");
                        let mut general = filled(mode, exec);
                        let mut planned = filled(mode, exec);
                        let ran = run_pk_plan(&mut planned, &plan);
                        if ran {
                            h.exec(&mut general, &Instruction::Vop3p(i.clone()))
                                .unwrap();
                            checked += 1;
                        }
                        assert_eq!(ran, mode & 0xF == 0 && mode & 0x10 != 0, "{i:?}");
                        assert!(general.vgpr == planned.vgpr, "{i:?} mode {mode:#x}");
                        assert_eq!(general.sgpr, planned.sgpr);
                    }
                }
            }
        }
        assert!(checked > 100);
        // Operands the plan cannot resolve leave the instruction to the general path.
        let i = Vop3p {
            op: O::VPkFmaF32,
            vdst: Some(v(0, 2)),
            src: [
                Some(v(0, 2)),
                Some(Operand::Special {
                    code: code::SHARED_BASE,
                    count: 2,
                }),
                Some(v(0, 2)),
            ],
            op_sel: 0,
            op_sel_hi: 0b111,
            neg_lo: 0,
            neg_hi: 0,
            clamp: false,
            mai: None,
        };
        assert!(PkPlan::of(&i).is_none());
    }
}
