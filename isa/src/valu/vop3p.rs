//! VOP3P: packed 16-bit math, gfx90a packed f32 (`v_pk_fma/mul/add_f32`,
//! `v_pk_mov_b32`), mixed-precision FMA, dot products and the AGPR moves.
//!
//! Operand selection (gfx90a-encoding.md 5.2): for the low result half, source i comes
//! from its high half when OP_SEL[i] is set; for the high result half OP_SEL_HI[i]
//! chooses; NEG_LO/NEG_HI negate the source for the low/high computation. For the
//! packed-f32 ops the unit is a dword of a 64-bit source. An inline constant gives
//! its 16-bit pattern in the low half and 0 in the high half (16-bit ops), or its
//! 32-bit pattern in both dwords (packed f32). MFMA is not executed.

use crate::error::Fault;
use crate::generated::opcodes::Vop3pOp as O;
use crate::inst::{Instruction, Vop3p};
use crate::operand::{inline_constant, Operand};
use crate::wave::{unsupported, VReg, Wave, WaveContext, WAVE_SIZE};

use super::fp::{self, d2h, f2h, fmax, fmin, h2d, h2f, nan_of, Fl, FpMode};
use super::{clamp01, f16_inline, lanes};

/// Raw dword `k` of a VOP3P source, with the constant rules of this format.
fn raw(w: &Wave, op: &Operand, k: usize, f16: bool, ctx: &WaveContext<'_>) -> VReg {
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

/// Executes one VOP3P instruction.
pub(super) fn exec(w: &mut Wave, i: &Vop3p, pc: u64, ctx: &WaveContext<'_>) -> Result<(), Fault> {
    let unsup = |why: &str| unsupported(&Instruction::Vop3p(i.clone()), pc, why);
    let exec = w.exec();
    let fpm = FpMode::new(w.mode);
    if fpm.round != 0 && i.op.mnemonic().contains("_f") {
        return Err(unsup("MODE.FP_ROUND other than round-to-nearest-even"));
    }
    let Some(d) = i.vdst else {
        return Err(unsup("missing destination"));
    };
    let nsrc = i.src.iter().filter(|s| s.is_some()).count();
    let src = |k: usize| i.src[k];
    let f16_op = i.op.mnemonic().contains("f16");
    // Source k as 32-bit dwords (low dword of 64-bit sources).
    let dword = |w: &Wave, k: usize, dw: usize| match src(k) {
        Some(op) => raw(w, &op, dw, f16_op, ctx),
        None => [0; WAVE_SIZE],
    };
    let sel = |bits: u8, k: usize| (bits >> k) & 1 == 1;
    // The two 16-bit halves (low-result, high-result) of source k.
    let halves = |w: &Wave, k: usize| -> [[u16; WAVE_SIZE]; 2] {
        let v = dword(w, k, 0);
        let pick = |hi: bool| lanes(|l| (v[l] >> if hi { 16 } else { 0 }) as u16);
        [pick(sel(i.op_sel, k)), pick(sel(i.op_sel_hi, k))]
    };
    let neg16 = |h: [[u16; WAVE_SIZE]; 2], k: usize| -> [[u16; WAVE_SIZE]; 2] {
        let fl = |on: bool| if on { 0x8000 } else { 0 };
        let (a, b) = (fl(sel(i.neg_lo, k)), fl(sel(i.neg_hi, k)));
        let mut h = h;
        h[0] = h[0].map(|v| v ^ a);
        h[1] = h[1].map(|v| v ^ b);
        if fpm.flush_in64() {
            h[0] = h[0].map(fp::ftz16);
            h[1] = h[1].map(fp::ftz16);
        }
        h
    };
    let clamp = i.clamp;
    let ieee = fpm.ieee;
    let pack = |lo: [u16; WAVE_SIZE], hi: [u16; WAVE_SIZE]| -> VReg {
        lanes(|l| u32::from(lo[l]) | u32::from(hi[l]) << 16)
    };
    // Post-processing of f16 results: CLAMP, output flush.
    let post16 = |h: u16| -> u16 {
        let mut h = h;
        if clamp {
            h = d2h(clamp01(h2d(h), fpm.dx10), false);
        }
        if fpm.flush_out64() {
            h = fp::ftz16(h);
        }
        h
    };
    match i.op {
        O::VAccvgprReadB32 | O::VAccvgprWriteB32 => {
            let Some(s0) = src(0) else {
                return Err(unsup("missing operands"));
            };
            let v = w.vread(&s0, 0, ctx);
            w.vwrite(&d, 0, &v, exec);
        }
        O::VPkMovB32 => {
            let (Some(s0), Some(s1)) = (src(0), src(1)) else {
                return Err(unsup("missing operands"));
            };
            let lo = raw(w, &s0, usize::from(i.op_sel & 1), false, ctx);
            let hi = raw(w, &s1, usize::from((i.op_sel >> 1) & 1), false, ctx);
            w.vwrite(&d, 0, &lo, exec);
            w.vwrite(&d, 1, &hi, exec);
        }
        O::VPkAddF32 | O::VPkMulF32 | O::VPkFmaF32 => {
            let n = if i.op == O::VPkFmaF32 { 3 } else { 2 };
            if nsrc < n {
                return Err(unsup("missing operands"));
            }
            let mut s = [[[0f32; WAVE_SIZE]; 2]; 3];
            for k in 0..n {
                for half in 0..2 {
                    let bits = if half == 0 { i.op_sel } else { i.op_sel_hi };
                    let negs = if half == 0 { i.neg_lo } else { i.neg_hi };
                    let v = dword(w, k, usize::from(sel(bits, k)));
                    let flip = if sel(negs, k) { 0x8000_0000 } else { 0 };
                    let flush = fpm.flush_in32();
                    s[k][half] = lanes(|l| {
                        let f = f32::from_bits(v[l] ^ flip);
                        if flush {
                            f.ftz()
                        } else {
                            f
                        }
                    });
                }
            }
            for half in 0..2 {
                let [a, b, c] = [s[0][half], s[1][half], s[2][half]];
                let r: VReg = lanes(|l| {
                    let mut v = match i.op {
                        O::VPkAddF32 => nan_of(a[l] + b[l], &[a[l], b[l]]),
                        O::VPkMulF32 => nan_of(a[l] * b[l], &[a[l], b[l]]),
                        _ => fp::fma32(a[l], b[l], c[l]),
                    };
                    if clamp {
                        v = clamp01(v, fpm.dx10);
                    }
                    if fpm.flush_out32() {
                        v = v.ftz();
                    }
                    v.to_bits()
                });
                w.vwrite(&d, half, &r, exec);
            }
        }
        O::VPkAddF16 | O::VPkMulF16 | O::VPkMinF16 | O::VPkMaxF16 | O::VPkFmaF16 => {
            let n = if i.op == O::VPkFmaF16 { 3 } else { 2 };
            if nsrc < n {
                return Err(unsup("missing operands"));
            }
            let s: Vec<[[u16; WAVE_SIZE]; 2]> = (0..n).map(|k| neg16(halves(w, k), k)).collect();
            let mut out = [[0u16; WAVE_SIZE]; 2];
            for half in 0..2 {
                out[half] = lanes(|l| {
                    let a = s[0][half][l];
                    let b = s[1][half][l];
                    let (x, y) = (h2d(a), h2d(b));
                    let r = match i.op {
                        O::VPkAddF16 => d2h(nan_of(x + y, &[x, y]), false),
                        O::VPkMulF16 => d2h(nan_of(x * y, &[x, y]), false),
                        O::VPkMinF16 => f2h(fmin(h2f(a), h2f(b), ieee), false),
                        O::VPkMaxF16 => f2h(fmax(h2f(a), h2f(b), ieee), false),
                        _ => {
                            let z = h2d(s[2][half][l]);
                            d2h(nan_of(fp::fma_rto(x, y, z), &[x, y, z]), false)
                        }
                    };
                    post16(r)
                });
            }
            w.vwrite(&d, 0, &pack(out[0], out[1]), exec);
        }
        O::VPkMadI16
        | O::VPkMulLoU16
        | O::VPkAddI16
        | O::VPkSubI16
        | O::VPkLshlrevB16
        | O::VPkLshrrevB16
        | O::VPkAshrrevI16
        | O::VPkMaxI16
        | O::VPkMinI16
        | O::VPkMadU16
        | O::VPkAddU16
        | O::VPkSubU16
        | O::VPkMaxU16
        | O::VPkMinU16 => {
            let three = matches!(i.op, O::VPkMadI16 | O::VPkMadU16);
            if nsrc < 2 + usize::from(three) {
                return Err(unsup("missing operands"));
            }
            let clamp_ok = matches!(
                i.op,
                O::VPkMadI16
                    | O::VPkMadU16
                    | O::VPkAddI16
                    | O::VPkSubI16
                    | O::VPkAddU16
                    | O::VPkSubU16
            );
            if clamp && !clamp_ok {
                return Err(unsup("CLAMP on this packed integer operation"));
            }
            let a = halves(w, 0);
            let b = halves(w, 1);
            let c = if three {
                halves(w, 2)
            } else {
                [[0; WAVE_SIZE]; 2]
            };
            let mut out = [[0u16; WAVE_SIZE]; 2];
            for half in 0..2 {
                out[half] = lanes(|l| {
                    let (p, q, r) = (a[half][l], b[half][l], c[half][l]);
                    let (ps, qs, rs) = (
                        i64::from(p as i16),
                        i64::from(q as i16),
                        i64::from(r as i16),
                    );
                    let (pu, qu, ru) = (i64::from(p), i64::from(q), i64::from(r));
                    let sat_s = |v: i64| {
                        if clamp {
                            v.clamp(-32768, 32767) as i16 as u16
                        } else {
                            v as u16
                        }
                    };
                    let sat_u = |v: i64| {
                        if clamp {
                            v.clamp(0, 0xFFFF) as u16
                        } else {
                            v as u16
                        }
                    };
                    match i.op {
                        O::VPkMadI16 => sat_s(ps * qs + rs),
                        O::VPkMadU16 => sat_u(pu * qu + ru),
                        O::VPkMulLoU16 => p.wrapping_mul(q),
                        O::VPkAddI16 => sat_s(ps + qs),
                        O::VPkSubI16 => sat_s(ps - qs),
                        O::VPkAddU16 => sat_u(pu + qu),
                        O::VPkSubU16 => sat_u(pu - qu),
                        O::VPkLshlrevB16 => q << (p & 15),
                        O::VPkLshrrevB16 => q >> (p & 15),
                        O::VPkAshrrevI16 => ((q as i16) >> (p & 15)) as u16,
                        O::VPkMaxI16 => (p as i16).max(q as i16) as u16,
                        O::VPkMinI16 => (p as i16).min(q as i16) as u16,
                        O::VPkMaxU16 => p.max(q),
                        _ => p.min(q),
                    }
                });
            }
            w.vwrite(&d, 0, &pack(out[0], out[1]), exec);
        }
        O::VFmaMixF32 | O::VFmaMixloF16 | O::VFmaMixhiF16 => {
            if nsrc < 3 {
                return Err(unsup("missing operands"));
            }
            // OP_SEL_HI[k] = 1: source k is the f16 half OP_SEL[k] picks, else an f32;
            // NEG_LO negates and NEG_HI takes the absolute value.
            let mut s = [[0f64; WAVE_SIZE]; 3];
            for k in 0..3 {
                let is16 = sel(i.op_sel_hi, k);
                let Some(op) = src(k) else { continue };
                let v = raw(w, &op, 0, is16, ctx);
                let hi = sel(i.op_sel, k);
                let (neg, abs) = (sel(i.neg_lo, k), sel(i.neg_hi, k));
                s[k] = lanes(|l| {
                    let mut x = if is16 {
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
                        x = x.abs();
                    }
                    if neg {
                        x = -x;
                    }
                    x
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
                    if clamp {
                        f = clamp01(f, fpm.dx10);
                    }
                    if fpm.flush_out32() {
                        f = f.ftz();
                    }
                    f.to_bits()
                });
                w.vwrite(&d, 0, &v, exec);
            } else {
                let old = w.vread(&d, 0, ctx);
                let hi = i.op == O::VFmaMixhiF16;
                let v: VReg = lanes(|l| {
                    let h = u32::from(post16(d2h(r[l], false)));
                    if hi {
                        (old[l] & 0xFFFF) | h << 16
                    } else {
                        (old[l] & 0xFFFF_0000) | h
                    }
                });
                w.vwrite(&d, 0, &v, exec);
            }
        }
        O::VDot2F32F16 => {
            if nsrc < 3 {
                return Err(unsup("missing operands"));
            }
            let a = neg16(halves(w, 0), 0);
            let b = neg16(halves(w, 1), 1);
            let c = dword(w, 2, 0);
            let v: VReg = lanes(|l| {
                let p0 = h2d(a[0][l]) * h2d(b[0][l]);
                let p1 = h2d(a[1][l]) * h2d(b[1][l]);
                let mut z = f64::from(f32::from_bits(c[l]));
                if sel(i.neg_lo, 2) {
                    z = -z;
                }
                let mut f = nan_of(fp::add_rto(fp::add_rto(p0, p1), z), &[p0, p1, z]) as f32;
                if clamp {
                    f = clamp01(f, fpm.dx10);
                }
                f.to_bits()
            });
            w.vwrite(&d, 0, &v, exec);
        }
        O::VDot2I32I16
        | O::VDot2U32U16
        | O::VDot4I32I8
        | O::VDot4U32U8
        | O::VDot8I32I4
        | O::VDot8U32U4 => {
            if nsrc < 3 {
                return Err(unsup("missing operands"));
            }
            let (n, bits, signed) = match i.op {
                O::VDot2I32I16 => (2, 16, true),
                O::VDot2U32U16 => (2, 16, false),
                O::VDot4I32I8 => (4, 8, true),
                O::VDot4U32U8 => (4, 8, false),
                O::VDot8I32I4 => (8, 4, true),
                _ => (8, 4, false),
            };
            let a = dword(w, 0, 0);
            let b = dword(w, 1, 0);
            let c = dword(w, 2, 0);
            let v: VReg = lanes(|l| {
                let field = |v: u32, k: u32| -> i64 {
                    let f = (v >> (bits * k)) & ((1u64 << bits) - 1) as u32;
                    if signed {
                        i64::from(((f << (32 - bits)) as i32) >> (32 - bits))
                    } else {
                        i64::from(f)
                    }
                };
                let mut s = if signed {
                    i64::from(c[l] as i32)
                } else {
                    i64::from(c[l])
                };
                for k in 0..n {
                    s += field(a[l], k) * field(b[l], k);
                }
                match (clamp, signed) {
                    (true, true) => s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32,
                    (true, false) => s.clamp(0, i64::from(u32::MAX)) as u32,
                    _ => s as u32,
                }
            });
            w.vwrite(&d, 0, &v, exec);
        }
        _ => return Err(unsup("MFMA (matrix) instructions are not executed")),
    }
    Ok(())
}
