//! VOP1, VOP2 and VOP3 (non-compare) operations.
//!
//! Conventions (AMD MI200 ISA): `rev` ops take the shift amount / subtrahend in src0;
//! integer CLAMP saturates add/sub/mad results; f32 `v_mad`/`v_mac` (and the f16 and
//! legacy forms) are unfused and always flush denormals; `v_fma`/`v_fmac` round once;
//! 16-bit results zero the high half except the GFX9 op_sel ops (`v_mad_f16`,
//! `v_fma_f16`, `v_div_fixup_f16`, `v_mad_u16/i16`, `v_mac_f16`, madmk/madak f16,
//! the 16-bit min3/max3/med3 and `v_add/sub_i16`), which keep the other half.

use crate::arch::{VReg, WAVE_SIZE};
use crate::error::Fault;
use crate::generated::opcodes::VopOp as O;

use super::exe::{lanes, map2, Exe, F32s, H16s, V64};
use crate::fp::{self, d2h, f16_binary, f2h, fmax, fmed3, fmin, h2d, h2f, nan_of, Fl, QNAN32};
use crate::sem::{
    self, below, fma16, frexp, hfn, hsel, mad16, mad32, perm_b32, sad_bytes, sat_i16, sat_u16,
    sext24, sincos_rev, snorm16, to_i32, to_u32, unorm16, Bin, Shift64, Tri,
};
use crate::simd;
use crate::state::Src;
use std::sync::atomic::{AtomicU8, Ordering};

fn u1(x: &mut Exe, f: impl Fn(u32) -> u32) {
    let r: VReg = match x.src(0, 0) {
        Src::Reg(a) => lanes(|l| f(a[l])),
        Src::Splat(a) => [f(a); WAVE_SIZE],
    };
    x.out32(&r);
}

fn u2(x: &mut Exe, f: impl Fn(u32, u32) -> u32) {
    let r = map2(x.src(0, 0), x.src(1, 0), f);
    x.out32(&r);
}

fn u3(x: &mut Exe, f: impl Fn(u32, u32, u32) -> u32) {
    let (a, b) = (x.src(0, 0), x.src(1, 0));
    let r: VReg = match x.src(2, 0) {
        Src::Reg(c) => lanes(|l| f(a.at(l), b.at(l), c[l])),
        Src::Splat(c) => map2(a, b, |p, q| f(p, q, c)),
    };
    x.out32(&r);
}

/// A 64-bit shift (`rev`: amount in src0) in every lane, as low and high dwords.
fn shift64(x: &mut Exe, k: Shift64) {
    let s = x.src(0, 0);
    let (lo, hi) = x.src64(1, false);
    let mut rl = [0u32; WAVE_SIZE];
    let mut rh = [0u32; WAVE_SIZE];
    for l in 0..WAVE_SIZE {
        let v = k.apply(u64::from(lo.at(l)) | u64::from(hi.at(l)) << 32, s.at(l));
        rl[l] = v as u32;
        rh[l] = (v >> 32) as u32;
    }
    x.out64_pair(&rl, &rh);
}

fn f1(x: &mut Exe, f: impl Fn(f32) -> f32) {
    let a = x.f32(0);
    x.outf32(lanes(|l| f(a[l])));
}

fn f2(x: &mut Exe, f: impl Fn(f32, f32) -> f32) {
    let a = x.f32(0);
    let b = x.f32(1);
    x.outf32(lanes(|l| f(a[l], b[l])));
}

fn f3(x: &mut Exe, f: impl Fn(f32, f32, f32) -> f32) {
    let a = x.f32(0);
    let b = x.f32(1);
    let c = x.f32(2);
    x.outf32(lanes(|l| f(a[l], b[l], c[l])));
}

fn d1(x: &mut Exe, f: impl Fn(f64) -> f64) {
    let a = x.f64(0);
    x.outf64(lanes(|l| f(a[l])));
}

fn d2(x: &mut Exe, f: impl Fn(f64, f64) -> f64) {
    let a = x.f64(0);
    let b = x.f64(1);
    x.outf64(lanes(|l| f(a[l], b[l])));
}

fn h1(x: &mut Exe, preserve: bool, f: impl Fn(u16) -> u16) {
    let a = x.h16(0);
    x.outf16(lanes(|l| f(a[l])), preserve);
}

fn h2(x: &mut Exe, preserve: bool, f: impl Fn(u16, u16) -> u16) {
    let a = x.h16(0);
    let b = x.h16(1);
    x.outf16(lanes(|l| f(a[l], b[l])), preserve);
}

fn h3(x: &mut Exe, preserve: bool, f: impl Fn(u16, u16, u16) -> u16) {
    let a = x.h16(0);
    let b = x.h16(1);
    let c = x.h16(2);
    x.outf16(lanes(|l| f(a[l], b[l], c[l])), preserve);
}

/// 16-bit integer op on the OP_SEL-selected halves.
fn i2(x: &mut Exe, preserve: bool, f: impl Fn(u16, u16) -> u16) {
    let a = x.u16(0);
    let b = x.u16(1);
    let r: H16s = lanes(|l| f(a[l], b[l]));
    x.out16(&r, preserve);
}

fn i3(x: &mut Exe, preserve: bool, f: impl Fn(u16, u16, u16) -> u16) {
    let a = x.u16(0);
    let b = x.u16(1);
    let c = x.u16(2);
    let r: H16s = lanes(|l| f(a[l], b[l], c[l]));
    x.out16(&r, preserve);
}

/// Integer ops accept CLAMP (saturation) only where the ISA defines it.
fn int_clamp_ok(op: O) -> bool {
    matches!(
        op,
        O::VAddCoU32
            | O::VSubCoU32
            | O::VSubrevCoU32
            | O::VAddcCoU32
            | O::VSubbCoU32
            | O::VSubbrevCoU32
            | O::VAddU32
            | O::VSubU32
            | O::VSubrevU32
            | O::VAddI32
            | O::VSubI32
            | O::VAddU16
            | O::VSubU16
            | O::VSubrevU16
            | O::VAddI16
            | O::VSubI16
            | O::VMadU64U32
            | O::VMadI64I32
            | O::VMadU32U24
            | O::VMadI32I24
            | O::VMadU16
            | O::VMadI16
            | O::VMadLegacyU16
            | O::VMadLegacyI16
            | O::VMadU32U16
            | O::VMadI32I16
            | O::VSadU8
            | O::VSadHiU8
            | O::VSadU16
            | O::VSadU32
            | O::VMsadU8
    )
}

/// A [`Bin`] operation in every lane (the operation chosen once, not per lane).
fn bin_lanes(x: &mut Exe, b: Bin) {
    macro_rules! each {
        ($($v:ident)*) => {
            match b {
                $(Bin::$v => u2(x, |p, q| Bin::$v.apply(p, q)),)*
            }
        };
    }
    each!(And Or Xor Lshlrev Lshrrev Ashrrev MinI MaxI MinU MaxU MulLo MulHiU MulHiI MulU24 Bcnt)
}

/// A [`Tri`] operation in every lane (the operation chosen once, not per lane).
fn tri_lanes(x: &mut Exe, t: Tri) {
    macro_rules! each {
        ($($v:ident)*) => {
            match t {
                $(Tri::$v => u3(x, |p, q, r| Tri::$v.apply(p, q, r)),)*
            }
        };
    }
    each!(BfeU BfeI Bfi Alignbit LshlAdd AddLshl Add3 LshlOr AndOr Or3 Xad Min3U Max3U Med3U
        Min3I Max3I Med3I)
}

/// The operation families after the three of `sem`'s lane operations ([`Bin`],
/// [`Tri`], [`Shift64`]) and the no-ops, in the order they are tried the first time
/// an opcode runs (by frequency in compiled OpenMP code).
const FAMILIES: [fn(&mut Exe, O) -> Result<bool, Fault>; 8] = [
    moves,
    int32,
    f32_ops,
    f64_ops,
    conversions,
    int16,
    f16_ops,
    dots,
];

/// Family numbers: 1 to 4 for `Bin`, `Tri`, `Shift64` and the no-ops, then
/// [`FAMILIES`] in order.
const FAMILY_COUNT: u8 = 4 + FAMILIES.len() as u8;

/// The dispatch cache: the family number of each opcode (indexed by its VOP3
/// number), 0 until the opcode first runs; then each execution goes straight to its
/// family. Relaxed atomics suffice: a number, once stored, never changes, and a
/// thread that reads 0 finds it again.
static FAMILY_OF: [AtomicU8; 0x400] = [const { AtomicU8::new(0) }; 0x400];

/// Runs `op` if it belongs to family `id`: true when it did.
#[inline]
fn family(x: &mut Exe, op: O, id: u8) -> Result<bool, Fault> {
    Ok(match id {
        1 => Bin::of(op).map(|b| bin_lanes(x, b)).is_some(),
        2 => Tri::of(op).map(|t| tri_lanes(x, t)).is_some(),
        3 => Shift64::of(op).map(|k| shift64(x, k)).is_some(),
        4 => matches!(op, O::VNop | O::VClrexcp),
        _ => match FAMILIES.get(usize::from(id).wrapping_sub(5)) {
            Some(f) => f(x, op)?,
            None => false,
        },
    })
}

/// Executes one non-compare VALU operation.
pub(super) fn exec(x: &mut Exe) -> Result<(), Fault> {
    let op = x.i.op;
    if (x.i.clamp || x.i.omod != 0) && !crate::opinfo::float_result(op) {
        let dots = matches!(
            op,
            O::VDot2cF32F16 | O::VDot2cI32I16 | O::VDot4cI32I8 | O::VDot8cI32I4
        );
        if x.i.omod != 0 || !(int_clamp_ok(op) || dots) {
            return Err(x.unsup("CLAMP/OMOD on this integer operation"));
        }
    }
    let slot = FAMILY_OF.get(usize::from(op as u16));
    let known = slot.map_or(0, |s| s.load(Ordering::Relaxed));
    if known != 0 && family(x, op, known)? {
        return Ok(());
    }
    for id in 1..=FAMILY_COUNT {
        if family(x, op, id)? {
            if let Some(s) = slot {
                s.store(id, Ordering::Relaxed);
            }
            return Ok(());
        }
    }
    Err(x.unsup("this VALU instruction is not executed"))
}

/// Moves and lane operations (`v_mov`, `v_cndmask`, lane reads and writes, `v_swap`): true when `op` is one of them (then it ran).
fn moves(x: &mut Exe, op: O) -> Result<bool, Fault> {
    match op {
        O::VMovB32 | O::VAccvgprMovB32 if x.unmodified(0) => {
            let r: VReg = match x.src(0, 0) {
                Src::Reg(a) => *a,
                Src::Splat(a) => [a; WAVE_SIZE],
            };
            x.out32(&r);
        }
        O::VMovB32 | O::VAccvgprMovB32 => {
            let a = x.f32_raw(0);
            x.out32(&a.map(f32::to_bits));
        }
        O::VCndmaskB32 if x.unmodified(0) && x.unmodified(1) => {
            let m = x.scalar(2);
            let (a, b) = (x.src(0, 0), x.src(1, 0));
            let r: VReg = lanes(|l| if (m >> l) & 1 == 1 { b.at(l) } else { a.at(l) });
            x.out32(&r);
        }
        O::VCndmaskB32 => {
            let a = x.f32_raw(0);
            let b = x.f32_raw(1);
            let m = x.scalar(2);
            let r: VReg = lanes(|l| {
                if (m >> l) & 1 == 1 {
                    b[l].to_bits()
                } else {
                    a[l].to_bits()
                }
            });
            x.out32(&r);
        }
        O::VReadfirstlaneB32 => {
            let a = x.u32(0);
            let exec = x.exec;
            let lane = if exec == 0 {
                0
            } else {
                exec.trailing_zeros() as usize
            };
            x.out_mask(u64::from(a[lane]));
        }
        O::VReadlaneB32 => {
            let a = x.u32(0);
            let lane = (x.scalar(1) & 63) as usize;
            x.out_mask(u64::from(a[lane]));
        }
        O::VWritelaneB32 => {
            let v = x.scalar(0) as u32;
            let lane = x.scalar(1) & 63;
            // Writes the lane whatever EXEC says.
            x.exec = 1 << lane;
            x.out32(&[v; WAVE_SIZE]);
        }
        O::VSwapB32 => {
            let (Some(d), Some(s)) = (x.i.vdst, x.i.src[0]) else {
                return Err(x.unsup("v_swap_b32 needs two VGPRs"));
            };
            let a = x.w.vread(&d, 0, x.ctx);
            let b = x.w.vread(&s, 0, x.ctx);
            x.w.vwrite(&d, 0, &b, x.exec);
            x.w.vwrite(&s, 0, &a, x.exec);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// 32-bit integer operations other than the [`Bin`], [`Tri`] and [`Shift64`] ones: true when `op` is one of them (then it ran).
fn int32(x: &mut Exe, op: O) -> Result<bool, Fault> {
    let clamp = x.i.clamp;
    match op {
        O::VNotB32 => u1(x, |a| !a),
        O::VBfrevB32 => u1(x, u32::reverse_bits),
        O::VFfbhU32 => u1(x, |a| if a == 0 { u32::MAX } else { a.leading_zeros() }),
        O::VFfblB32 => u1(x, |a| if a == 0 { u32::MAX } else { a.trailing_zeros() }),
        O::VFfbhI32 => u1(x, |a| {
            let s = a as i32;
            if s == 0 || s == -1 {
                u32::MAX
            } else if s < 0 {
                (!a).leading_zeros()
            } else {
                a.leading_zeros()
            }
        }),
        O::VAddU32 | O::VAddCoU32 | O::VAddcCoU32 => {
            let cin = if op == O::VAddcCoU32 { x.scalar(2) } else { 0 };
            let mut r = [0u32; WAVE_SIZE];
            let carry = simd::add_co(x.src(0, 0), x.src(1, 0), cin, clamp, &mut r);
            x.out32(&r);
            let e = x.exec;
            x.out_sdst(carry & e);
        }
        O::VSubU32
        | O::VSubrevU32
        | O::VSubCoU32
        | O::VSubrevCoU32
        | O::VSubbCoU32
        | O::VSubbrevCoU32 => {
            let cin = if matches!(op, O::VSubbCoU32 | O::VSubbrevCoU32) {
                x.scalar(2)
            } else {
                0
            };
            let (a, b) = match op {
                O::VSubrevU32 | O::VSubrevCoU32 | O::VSubbrevCoU32 => (x.src(1, 0), x.src(0, 0)),
                _ => (x.src(0, 0), x.src(1, 0)),
            };
            let mut r = [0u32; WAVE_SIZE];
            let borrow = simd::sub_co(a, b, cin, clamp, &mut r);
            x.out32(&r);
            let e = x.exec;
            x.out_sdst(borrow & e);
        }
        O::VAddI32 | O::VSubI32 => {
            let a = x.u32(0);
            let b = x.u32(1);
            let sub = op == O::VSubI32;
            let r: VReg = lanes(|l| {
                let (p, q) = (i64::from(a[l] as i32), i64::from(b[l] as i32));
                let v = if sub { p - q } else { p + q };
                if clamp {
                    v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
                } else {
                    v as u32
                }
            });
            x.out32(&r);
        }
        O::VXnorB32 => u2(x, |a, b| !(a ^ b)),
        O::VMulHiU32U24 => u2(x, |a, b| {
            ((u64::from(a & 0xFF_FFFF) * u64::from(b & 0xFF_FFFF)) >> 32) as u32
        }),
        O::VMulI32I24 => u2(x, |a, b| (sext24(a) * sext24(b)) as u32),
        O::VMulHiI32I24 => u2(x, |a, b| ((sext24(a) * sext24(b)) >> 32) as u32),
        O::VBfmB32 => u2(x, |a, b| {
            ((1u64 << (a & 31)) as u32).wrapping_sub(1) << (b & 31)
        }),
        O::VMbcntLoU32B32 | O::VMbcntHiU32B32 => {
            let a = x.u32(0);
            let b = x.u32(1);
            let hi = op == O::VMbcntHiU32B32;
            let r: VReg = lanes(|l| (a[l] & below(l, hi)).count_ones().wrapping_add(b[l]));
            x.out32(&r);
        }
        O::VAlignbyteB32 => u3(x, |a, b, c| {
            ((u64::from(a) << 32 | u64::from(b)) >> (8 * (c & 3))) as u32
        }),
        O::VMadU32U24 => u3(x, |a, b, c| {
            let v = u64::from(a & 0xFF_FFFF) * u64::from(b & 0xFF_FFFF) + u64::from(c);
            if clamp {
                v.min(u64::from(u32::MAX)) as u32
            } else {
                v as u32
            }
        }),
        O::VMadI32I24 => u3(x, |a, b, c| {
            let v = sext24(a) * sext24(b) + i64::from(c as i32);
            if clamp {
                v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32
            } else {
                v as u32
            }
        }),
        O::VPermB32 => u3(x, perm_b32),
        O::VLerpU8 => u3(x, |a, b, c| {
            (0..4).fold(0u32, |acc, k| {
                let (p, q, r) = (
                    (a >> (8 * k)) & 0xFF,
                    (b >> (8 * k)) & 0xFF,
                    (c >> (8 * k)) & 1,
                );
                acc | (((p + q + r) >> 1) & 0xFF) << (8 * k)
            })
        }),
        O::VSadU8 | O::VSadHiU8 | O::VSadU16 | O::VSadU32 | O::VMsadU8 => {
            let a = x.u32(0);
            let b = x.u32(1);
            let c = x.u32(2);
            let r: VReg = lanes(|l| {
                let (p, q) = (a[l], b[l]);
                let s = match op {
                    O::VSadU8 => u64::from(sad_bytes(p, q, false)),
                    O::VMsadU8 => u64::from(sad_bytes(p, q, true)),
                    O::VSadHiU8 => u64::from(sad_bytes(p, q, false)) << 16,
                    O::VSadU16 => {
                        u64::from((p & 0xFFFF).abs_diff(q & 0xFFFF) + (p >> 16).abs_diff(q >> 16))
                    }
                    _ => u64::from(p.abs_diff(q)),
                };
                let v = s + u64::from(c[l]);
                if clamp {
                    v.min(u64::from(u32::MAX)) as u32
                } else {
                    v as u32
                }
            });
            x.out32(&r);
        }
        O::VQsadPkU16U8 | O::VMqsadPkU16U8 => {
            let a = x.u64(0, false);
            let b = x.u32(1);
            let c = x.u64(2, false);
            let masked = op == O::VMqsadPkU16U8;
            let r: V64 = lanes(|l| {
                (0..4).fold(0u64, |acc, k| {
                    let win = (a[l] >> (8 * k)) as u32;
                    let s = u64::from(sad_bytes(win, b[l], masked)) + ((c[l] >> (16 * k)) & 0xFFFF);
                    let s = if clamp { s.min(0xFFFF) } else { s & 0xFFFF };
                    acc | s << (16 * k)
                })
            });
            x.out64(&r);
        }
        O::VMqsadU32U8 => {
            let a = x.u64(0, false);
            let b = x.u32(1);
            let Some(d) = x.i.vdst else { return Ok(true) };
            let cs: Vec<VReg> = (0..4)
                .map(|k| match x.i.src[2] {
                    Some(op2) => x.w.vread(&op2, k, x.ctx),
                    None => [0; WAVE_SIZE],
                })
                .collect();
            for k in 0..4 {
                let r: VReg = lanes(|l| {
                    let win = (a[l] >> (8 * k)) as u32;
                    let s = u64::from(sad_bytes(win, b[l], true)) + u64::from(cs[k][l]);
                    if clamp {
                        s.min(u64::from(u32::MAX)) as u32
                    } else {
                        s as u32
                    }
                });
                let e = x.exec;
                x.w.vwrite(&d, k, &r, e);
            }
        }
        O::VMadU64U32 | O::VMadI64I32 => {
            let a = x.u32(0);
            let b = x.u32(1);
            let c = x.u64(2, false);
            let signed = op == O::VMadI64I32;
            let f = if clamp {
                sem::mad64_clamped
            } else {
                sem::mad64
            };
            let mut carry = 0u64;
            let mut r = [0u64; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                let (v, o) = f(a[l], b[l], c[l], signed);
                r[l] = v;
                carry |= u64::from(o) << l;
            }
            x.out64(&r);
            let e = x.exec;
            x.out_sdst(carry & e);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// 16-bit integer operations: true when `op` is one of them (then it ran).
fn int16(x: &mut Exe, op: O) -> Result<bool, Fault> {
    let clamp = x.i.clamp;
    match op {
        O::VAddU16 => i2(x, false, |a, b| {
            let v = i64::from(a) + i64::from(b);
            if clamp {
                sat_u16(v)
            } else {
                v as u16
            }
        }),
        O::VSubU16 | O::VSubrevU16 => {
            let rev = op == O::VSubrevU16;
            i2(x, false, |a, b| {
                let (p, q) = if rev { (b, a) } else { (a, b) };
                let v = i64::from(p) - i64::from(q);
                if clamp {
                    sat_u16(v)
                } else {
                    v as u16
                }
            })
        }
        O::VAddI16 | O::VSubI16 => {
            let sub = op == O::VSubI16;
            i2(x, true, |a, b| {
                let (p, q) = (i64::from(a as i16), i64::from(b as i16));
                let v = if sub { p - q } else { p + q };
                if clamp {
                    sat_i16(v)
                } else {
                    v as u16
                }
            })
        }
        O::VMulLoU16 => i2(x, false, u16::wrapping_mul),
        O::VLshlrevB16 => i2(x, false, |a, b| b << (a & 15)),
        O::VLshrrevB16 => i2(x, false, |a, b| b >> (a & 15)),
        O::VAshrrevI16 => i2(x, false, |a, b| ((b as i16) >> (a & 15)) as u16),
        O::VMaxU16 => i2(x, false, u16::max),
        O::VMinU16 => i2(x, false, u16::min),
        O::VMaxI16 => i2(x, false, |a, b| (a as i16).max(b as i16) as u16),
        O::VMinI16 => i2(x, false, |a, b| (a as i16).min(b as i16) as u16),
        O::VMin3I16 => i3(x, true, |a, b, c| {
            (a as i16).min(b as i16).min(c as i16) as u16
        }),
        O::VMax3I16 => i3(x, true, |a, b, c| {
            (a as i16).max(b as i16).max(c as i16) as u16
        }),
        O::VMed3I16 => i3(x, true, |a, b, c| {
            let (a, b, c) = (a as i16, b as i16, c as i16);
            a.max(b).min(a.min(b).max(c)) as u16
        }),
        O::VMin3U16 => i3(x, true, |a, b, c| a.min(b).min(c)),
        O::VMax3U16 => i3(x, true, |a, b, c| a.max(b).max(c)),
        O::VMed3U16 => i3(x, true, |a, b, c| a.max(b).min(a.min(b).max(c))),
        O::VMadU16 | O::VMadLegacyU16 => i3(x, op == O::VMadU16, |a, b, c| {
            let v = i64::from(a) * i64::from(b) + i64::from(c);
            if clamp {
                sat_u16(v)
            } else {
                v as u16
            }
        }),
        O::VMadI16 | O::VMadLegacyI16 => i3(x, op == O::VMadI16, |a, b, c| {
            let v = i64::from(a as i16) * i64::from(b as i16) + i64::from(c as i16);
            if clamp {
                sat_i16(v)
            } else {
                v as u16
            }
        }),
        O::VMadU32U16 | O::VMadI32I16 => {
            let a = x.u16(0);
            let b = x.u16(1);
            let c = x.u32(2);
            let signed = op == O::VMadI32I16;
            let r: VReg = lanes(|l| {
                if signed {
                    let v =
                        i64::from(a[l] as i16) * i64::from(b[l] as i16) + i64::from(c[l] as i32);
                    if clamp {
                        v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32
                    } else {
                        v as u32
                    }
                } else {
                    let v = u64::from(a[l]) * u64::from(b[l]) + u64::from(c[l]);
                    if clamp {
                        v.min(u64::from(u32::MAX)) as u32
                    } else {
                        v as u32
                    }
                }
            });
            x.out32(&r);
        }
        O::VSatPkU8I16 => u1(x, |a| {
            let sat = |h: u32| ((h as u16 as i16).clamp(0, 255)) as u32;
            sat(a & 0xFFFF) | sat(a >> 16) << 8
        }),
        O::VCvtPkU16U32 => u2(x, |a, b| a.min(0xFFFF) | b.min(0xFFFF) << 16),
        O::VCvtPkI16I32 => u2(x, |a, b| {
            let s = |v: u32| u32::from((v as i32).clamp(-32768, 32767) as i16 as u16);
            s(a) | s(b) << 16
        }),
        _ => return Ok(false),
    }
    Ok(true)
}

/// Dot products (VOP2 forms accumulating into VDST): true when `op` is one of them (then it ran).
fn dots(x: &mut Exe, op: O) -> Result<bool, Fault> {
    let clamp = x.i.clamp;
    match op {
        O::VDot2cF32F16 => {
            let a = x.u32(0);
            let b = x.u32(1);
            let acc = x.dst_old(0);
            let r: F32s = lanes(|l| {
                sem::dot2_f32_f16(
                    [a[l] as u16, (a[l] >> 16) as u16],
                    [b[l] as u16, (b[l] >> 16) as u16],
                    f32::from_bits(acc[l]),
                    false,
                )
            });
            x.outf32(r);
        }
        O::VDot2cI32I16 | O::VDot4cI32I8 | O::VDot8cI32I4 => {
            let a = x.u32(0);
            let b = x.u32(1);
            let acc = x.dst_old(0);
            let (n, bits) = match op {
                O::VDot2cI32I16 => (2, 16),
                O::VDot4cI32I8 => (4, 8),
                _ => (8, 4),
            };
            let r: VReg = lanes(|l| sem::dot(a[l], b[l], acc[l], n, bits, true, clamp));
            x.out32(&r);
        }
        O::VPkFmacF16 => {
            let a = x.u32(0);
            let b = x.u32(1);
            let acc = x.dst_old(0);
            let r: VReg = lanes(|l| {
                let lo = fma16(a[l] as u16, b[l] as u16, acc[l] as u16);
                let hi = fma16(
                    (a[l] >> 16) as u16,
                    (b[l] >> 16) as u16,
                    (acc[l] >> 16) as u16,
                );
                u32::from(lo) | u32::from(hi) << 16
            });
            x.out32(&r);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// f32 arithmetic: true when `op` is one of them (then it ran).
fn f32_ops(x: &mut Exe, op: O) -> Result<bool, Fault> {
    let ieee = x.fp.ieee;
    match op {
        O::VAddF32 if x.unmodified(0) && x.unmodified(1) && !x.fp.flush_in32() => {
            let mut r = [0u32; WAVE_SIZE];
            simd::add_lanes(x.src(0, 0), x.src(1, 0), &mut r);
            x.outf32_bits(&mut r);
        }
        O::VAddF32 => f2(x, |a, b| nan_of(a + b, &[a, b])),
        O::VSubF32 => f2(x, |a, b| nan_of(a - b, &[a, b])),
        O::VSubrevF32 => f2(x, |a, b| nan_of(b - a, &[a, b])),
        O::VMulF32 if x.unmodified(0) && x.unmodified(1) && !x.fp.flush_in32() => {
            let mut r = [0u32; WAVE_SIZE];
            simd::mul_lanes(x.src(0, 0), x.src(1, 0), &mut r);
            x.outf32_bits(&mut r);
        }
        O::VMulF32 => f2(x, |a, b| nan_of(a * b, &[a, b])),
        O::VMulLegacyF32 => f2(x, |a, b| {
            if a == 0.0 || b == 0.0 {
                0.0
            } else {
                nan_of(a * b, &[a, b])
            }
        }),
        O::VMinF32 => f2(x, |a, b| fmin(a, b, ieee)),
        O::VMaxF32 => f2(x, |a, b| fmax(a, b, ieee)),
        O::VMin3F32 => f3(x, |a, b, c| fmin(fmin(a, b, ieee), c, ieee)),
        O::VMax3F32 => f3(x, |a, b, c| fmax(fmax(a, b, ieee), c, ieee)),
        O::VMed3F32 => f3(x, |a, b, c| fmed3(a, b, c, ieee)),
        O::VFmaF32 if x.i.abs | x.i.neg == 0 && !x.fp.flush_in32() => {
            let mut r = [0u32; WAVE_SIZE];
            simd::fma_lanes(x.src(0, 0), x.src(1, 0), x.src(2, 0), &mut r);
            x.outf32_bits(&mut r);
        }
        O::VFmaF32 => f3(x, fp::fma32),
        O::VFmacF32 if x.unmodified(0) && x.unmodified(1) && !x.fp.flush_in32() => {
            let acc = match x.i.vdst {
                Some(d) => x.w.vsrc(&d, 0, x.ctx),
                None => Src::Splat(0),
            };
            let mut r = [0u32; WAVE_SIZE];
            simd::fma_lanes(x.src(0, 0), x.src(1, 0), acc, &mut r);
            x.outf32_bits(&mut r);
        }
        O::VFmacF32 => {
            let a = x.f32(0);
            let b = x.f32(1);
            let acc = x.dst_old(0);
            let flush = x.fp.flush_in32();
            x.outf32(lanes(|l| {
                let c = f32::from_bits(acc[l]);
                fp::fma32(a[l], b[l], if flush { c.ftz() } else { c })
            }));
        }
        O::VMadF32 | O::VMadmkF32 | O::VMadakF32 | O::VMadLegacyF32 => {
            let legacy = op == O::VMadLegacyF32;
            let a = x.f32_raw(0);
            let b = x.f32_raw(1);
            let c = x.f32_raw(2);
            x.outf32_flush(lanes(|l| mad32(a[l], b[l], c[l], legacy)), true);
        }
        O::VMacF32 => {
            let a = x.f32_raw(0);
            let b = x.f32_raw(1);
            let acc = x.dst_old(0);
            x.outf32_flush(
                lanes(|l| mad32(a[l], b[l], f32::from_bits(acc[l]), false)),
                true,
            );
        }
        O::VLdexpF32 => {
            let a = x.f32(0);
            let b = x.u32(1);
            x.outf32(
                lanes(|l| fp::ldexp_f64(f64::from(a[l]), b[l] as i32) as f32).map(|v| {
                    if v.is_nan() {
                        v.quiet()
                    } else {
                        v
                    }
                }),
            );
        }
        O::VRcpF32 | O::VRcpIflagF32 => f1(x, |a| nan_of(1.0 / a, &[a])),
        O::VRsqF32 => f1(x, |a| nan_of((1.0 / f64::from(a).sqrt()) as f32, &[a])),
        O::VSqrtF32 => f1(x, |a| nan_of(a.sqrt(), &[a])),
        O::VExpF32 => f1(x, |a| nan_of(f64::from(a).exp2() as f32, &[a])),
        O::VLogF32 => f1(x, |a| nan_of(f64::from(a).log2() as f32, &[a])),
        O::VSinF32 => f1(x, |a| nan_of(sincos_rev(f64::from(a), false) as f32, &[a])),
        O::VCosF32 => f1(x, |a| nan_of(sincos_rev(f64::from(a), true) as f32, &[a])),
        O::VFloorF32 => f1(x, |a| nan_of(a.floor(), &[a])),
        O::VCeilF32 => f1(x, |a| nan_of(a.ceil(), &[a])),
        O::VTruncF32 => f1(x, |a| nan_of(a.trunc(), &[a])),
        O::VRndneF32 => f1(x, |a| nan_of(a.round_ties_even(), &[a])),
        O::VFractF32 => f1(x, |a| nan_of(fract(a - a.floor(), 0x3F7F_FFFF), &[a])),
        O::VFrexpMantF32 => f1(x, |a| {
            if a.is_nan() {
                a.quiet()
            } else {
                frexp(f64::from(a)).0 as f32
            }
        }),
        O::VFrexpExpI32F32 => {
            let a = x.f32(0);
            let r: VReg = lanes(|l| frexp(f64::from(a[l])).1 as u32);
            x.out32(&r);
        }
        O::VDivScaleF32 => {
            let (s0, d, n) = (x.f32(0), x.f32(1), x.f32(2));
            let mut vcc = 0u64;
            let mut r = [0f32; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                let (v, c) = fp::div_scale(s0[l], d[l], n[l]);
                r[l] = v;
                vcc |= u64::from(c) << l;
            }
            x.outf32_flush(r, false);
            let e = x.exec;
            x.out_sdst(vcc & e);
        }
        O::VDivFmasF32 => {
            let (a, b, c) = (x.f32(0), x.f32(1), x.f32(2));
            let vcc = x.w.vcc();
            x.outf32(lanes(|l| {
                let k = if (vcc >> l) & 1 == 0 {
                    0
                } else if c[l].exp_field() > 127 {
                    64
                } else {
                    -64
                };
                let r = fp::fma_rto(f64::from(a[l]), f64::from(b[l]), f64::from(c[l]));
                let r = (r * fp::pow2(k)) as f32;
                if r.is_nan() {
                    nan_of(r, &[a[l], b[l], c[l]])
                } else {
                    r
                }
            }));
        }
        O::VDivFixupF32 => f3(x, fp::div_fixup),
        O::VCubeidF32 | O::VCubescF32 | O::VCubetcF32 | O::VCubemaF32 => {
            return Err(x.unsup("cube-map operations are graphics-only and not executed"))
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// f64 arithmetic: true when `op` is one of them (then it ran).
fn f64_ops(x: &mut Exe, op: O) -> Result<bool, Fault> {
    let ieee = x.fp.ieee;
    match op {
        O::VAddF64 => d2(x, |a, b| nan_of(a + b, &[a, b])),
        O::VMulF64 => d2(x, |a, b| nan_of(a * b, &[a, b])),
        O::VMinF64 => d2(x, |a, b| fmin(a, b, ieee)),
        O::VMaxF64 => d2(x, |a, b| fmax(a, b, ieee)),
        O::VFmaF64 => {
            let (a, b, c) = (x.f64(0), x.f64(1), x.f64(2));
            x.outf64(lanes(|l| {
                nan_of(a[l].mul_add(b[l], c[l]), &[a[l], b[l], c[l]])
            }));
        }
        O::VFmacF64 => {
            let a = x.f64(0);
            let b = x.f64(1);
            let (lo, hi) = (x.dst_old(0), x.dst_old(1));
            let flush = x.fp.flush_in64();
            x.outf64(lanes(|l| {
                let c = f64::from_bits(u64::from(lo[l]) | u64::from(hi[l]) << 32);
                let c = if flush { c.ftz() } else { c };
                nan_of(a[l].mul_add(b[l], c), &[a[l], b[l], c])
            }));
        }
        O::VLdexpF64 => {
            let a = x.f64(0);
            let b = x.u32(1);
            x.outf64(lanes(|l| {
                if a[l].is_nan() {
                    a[l].quiet()
                } else {
                    fp::ldexp_f64(a[l], b[l] as i32)
                }
            }));
        }
        O::VRcpF64 => d1(x, |a| nan_of(1.0 / a, &[a])),
        O::VRsqF64 => d1(x, |a| nan_of(1.0 / a.sqrt(), &[a])),
        O::VSqrtF64 => d1(x, |a| nan_of(a.sqrt(), &[a])),
        O::VFloorF64 => d1(x, |a| nan_of(a.floor(), &[a])),
        O::VCeilF64 => d1(x, |a| nan_of(a.ceil(), &[a])),
        O::VTruncF64 => d1(x, |a| nan_of(a.trunc(), &[a])),
        O::VRndneF64 => d1(x, |a| nan_of(a.round_ties_even(), &[a])),
        O::VFractF64 => d1(x, |a| {
            nan_of(fract(a - a.floor(), 0x3FEF_FFFF_FFFF_FFFF), &[a])
        }),
        O::VFrexpMantF64 => d1(x, |a| if a.is_nan() { a.quiet() } else { frexp(a).0 }),
        O::VFrexpExpI32F64 => {
            let a = x.f64(0);
            let r: VReg = lanes(|l| frexp(a[l]).1 as u32);
            x.out32(&r);
        }
        O::VDivScaleF64 => {
            let (s0, d, n) = (x.f64(0), x.f64(1), x.f64(2));
            let mut vcc = 0u64;
            let mut r = [0f64; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                let (v, c) = fp::div_scale(s0[l], d[l], n[l]);
                r[l] = v;
                vcc |= u64::from(c) << l;
            }
            let bits: V64 = r.map(f64::to_bits);
            x.out64(&bits);
            let e = x.exec;
            x.out_sdst(vcc & e);
        }
        O::VDivFmasF64 => {
            let (a, b, c) = (x.f64(0), x.f64(1), x.f64(2));
            let vcc = x.w.vcc();
            x.outf64(lanes(|l| {
                let r = nan_of(a[l].mul_add(b[l], c[l]), &[a[l], b[l], c[l]]);
                if (vcc >> l) & 1 == 0 || r.is_nan() {
                    r
                } else if c[l].exp_field() > 1023 {
                    r * fp::pow2(128)
                } else {
                    fp::ldexp_f64(r, -128)
                }
            }));
        }
        O::VDivFixupF64 => {
            let (q, d, n) = (x.f64(0), x.f64(1), x.f64(2));
            x.outf64(lanes(|l| fp::div_fixup(q[l], d[l], n[l])));
        }
        O::VTrigPreopF64 => {
            let a = x.f64(0);
            let s = x.u32(1);
            x.outf64(lanes(|l| fp::trig_preop(a[l], s[l])));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Conversions between number formats: true when `op` is one of them (then it ran).
fn conversions(x: &mut Exe, op: O) -> Result<bool, Fault> {
    match op {
        O::VCvtI32F32 => {
            let a = x.f32(0);
            x.out32(&lanes(|l| to_i32(f64::from(a[l]))));
        }
        O::VCvtU32F32 => {
            let a = x.f32(0);
            x.out32(&lanes(|l| to_u32(f64::from(a[l]))));
        }
        O::VCvtRpiI32F32 => {
            let a = x.f32(0);
            x.out32(&lanes(|l| to_i32(f64::from((a[l] + 0.5).floor()))));
        }
        O::VCvtFlrI32F32 => {
            let a = x.f32(0);
            x.out32(&lanes(|l| to_i32(f64::from(a[l].floor()))));
        }
        O::VCvtI32F64 => {
            let a = x.f64(0);
            x.out32(&lanes(|l| to_i32(a[l])));
        }
        O::VCvtU32F64 => {
            let a = x.f64(0);
            x.out32(&lanes(|l| to_u32(a[l])));
        }
        O::VCvtF32I32 => {
            let a = x.u32(0);
            x.outf32(lanes(|l| a[l] as i32 as f32));
        }
        O::VCvtF32U32 => {
            let a = x.u32(0);
            x.outf32(lanes(|l| a[l] as f32));
        }
        O::VCvtF64I32 => {
            let a = x.u32(0);
            x.outf64(lanes(|l| f64::from(a[l] as i32)));
        }
        O::VCvtF64U32 => {
            let a = x.u32(0);
            x.outf64(lanes(|l| f64::from(a[l])));
        }
        O::VCvtF32F64 => {
            let a = x.f64(0);
            x.outf32(lanes(|l| {
                if a[l].is_nan() {
                    f32::from_bits(QNAN32 | ((a[l].to_bits() >> 29) as u32 & 0x3F_FFFF))
                        .copysign(if a[l].is_sign_negative() { -1.0 } else { 1.0 })
                } else {
                    a[l] as f32
                }
            }));
        }
        O::VCvtF64F32 => {
            let a = x.f32(0);
            x.outf64(lanes(|l| {
                if a[l].is_nan() {
                    f64::from(a[l].quiet())
                } else {
                    f64::from(a[l])
                }
            }));
        }
        O::VCvtF32Ubyte0 | O::VCvtF32Ubyte1 | O::VCvtF32Ubyte2 | O::VCvtF32Ubyte3 => {
            let sh = 8 * (op as u16 - O::VCvtF32Ubyte0 as u16) as u32;
            let a = x.u32(0);
            x.outf32(lanes(|l| ((a[l] >> sh) & 0xFF) as f32));
        }
        O::VCvtOffF32I4 => {
            let a = x.u32(0);
            x.outf32(lanes(|l| (((a[l] << 28) as i32) >> 28) as f32 / 16.0));
        }
        O::VCvtF32F16 => {
            let a = x.h16(0);
            x.outf32(lanes(|l| {
                let v = h2f(a[l]);
                if v.is_nan() {
                    v.quiet()
                } else {
                    v
                }
            }));
        }
        O::VCvtF16F32 => {
            let a = x.f32(0);
            x.outf16(lanes(|l| f2h(a[l], false)), false);
        }
        O::VCvtPkrtzF16F32 => {
            let a = x.f32(0);
            let b = x.f32(1);
            let lo = x.post16(lanes(|l| f2h(a[l], true)), 0, false);
            let hi = x.post16(lanes(|l| f2h(b[l], true)), 0, false);
            let r: VReg = lanes(|l| u32::from(lo[l]) | u32::from(hi[l]) << 16);
            x.out32(&r);
        }
        O::VCvtF16U16 => {
            let a = x.u16(0);
            x.outf16(lanes(|l| d2h(f64::from(a[l]), false)), false);
        }
        O::VCvtF16I16 => {
            let a = x.u16(0);
            x.outf16(lanes(|l| d2h(f64::from(a[l] as i16), false)), false);
        }
        O::VCvtU16F16 => {
            let a = x.h16(0);
            let r: H16s = lanes(|l| h2d(a[l]) as u16);
            x.out16(&r, false);
        }
        O::VCvtI16F16 => {
            let a = x.h16(0);
            let r: H16s = lanes(|l| h2d(a[l]) as i16 as u16);
            x.out16(&r, false);
        }
        O::VCvtNormI16F16 => {
            let a = x.h16(0);
            let r: H16s = lanes(|l| snorm16(h2d(a[l])));
            x.out16(&r, false);
        }
        O::VCvtNormU16F16 => {
            let a = x.h16(0);
            let r: H16s = lanes(|l| unorm16(h2d(a[l])));
            x.out16(&r, false);
        }
        O::VCvtPknormI16F32 | O::VCvtPknormU16F32 => {
            let a = x.f32(0);
            let b = x.f32(1);
            let f = if op == O::VCvtPknormI16F32 {
                snorm16
            } else {
                unorm16
            };
            let r: VReg =
                lanes(|l| u32::from(f(f64::from(a[l]))) | u32::from(f(f64::from(b[l]))) << 16);
            x.out32(&r);
        }
        O::VCvtPknormI16F16 | O::VCvtPknormU16F16 => {
            let a = x.h16(0);
            let b = x.h16(1);
            let f = if op == O::VCvtPknormI16F16 {
                snorm16
            } else {
                unorm16
            };
            let r: VReg = lanes(|l| u32::from(f(h2d(a[l]))) | u32::from(f(h2d(b[l]))) << 16);
            x.out32(&r);
        }
        O::VCvtPkU8F32 => {
            let a = x.f32(0);
            let s = x.u32(1);
            let d = x.u32(2);
            let r: VReg = lanes(|l| {
                let v = if a[l].is_nan() {
                    0
                } else {
                    a[l].round_ties_even().clamp(0.0, 255.0) as u32
                };
                let sh = 8 * (s[l] & 3);
                (d[l] & !(0xFF << sh)) | v << sh
            });
            x.out32(&r);
        }
        O::VPackB32F16 => {
            let a = x.h16_raw(0);
            let b = x.h16_raw(1);
            let r: VReg = lanes(|l| u32::from(a[l]) | u32::from(b[l]) << 16);
            x.out32(&r);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// f16 arithmetic, and the operations that are not executed: true when `op` is one of them (then it ran).
fn f16_ops(x: &mut Exe, op: O) -> Result<bool, Fault> {
    let ieee = x.fp.ieee;
    match op {
        O::VAddF16 => h2(x, false, |a, b| f16_binary(a, b, |p, q| p + q)),
        O::VSubF16 => h2(x, false, |a, b| f16_binary(a, b, |p, q| p - q)),
        O::VSubrevF16 => h2(x, false, |a, b| f16_binary(a, b, |p, q| q - p)),
        O::VMulF16 => h2(x, false, |a, b| f16_binary(a, b, |p, q| p * q)),
        O::VMaxF16 => h2(x, false, |a, b| hsel(a, b, |p, q| fmax(p, q, ieee))),
        O::VMinF16 => h2(x, false, |a, b| hsel(a, b, |p, q| fmin(p, q, ieee))),
        O::VMin3F16 => h3(x, true, |a, b, c| {
            f2h(fmin(fmin(h2f(a), h2f(b), ieee), h2f(c), ieee), false)
        }),
        O::VMax3F16 => h3(x, true, |a, b, c| {
            f2h(fmax(fmax(h2f(a), h2f(b), ieee), h2f(c), ieee), false)
        }),
        O::VMed3F16 => h3(x, true, |a, b, c| {
            f2h(fmed3(h2f(a), h2f(b), h2f(c), ieee), false)
        }),
        O::VLdexpF16 => {
            let a = x.h16(0);
            let b = x.u32(1);
            x.outf16(
                lanes(|l| {
                    let e = i32::from(b[l] as u16 as i16);
                    let v = h2d(a[l]);
                    if v.is_nan() {
                        d2h(v, false)
                    } else {
                        d2h(fp::ldexp_f64(v, e), false)
                    }
                }),
                false,
            );
        }
        O::VMacF16 => {
            let a = x.h16_raw(0);
            let b = x.h16_raw(1);
            let acc = x.dst_old(0);
            let r: H16s = lanes(|l| mad16(a[l], b[l], acc[l] as u16));
            x.outf16(r, true);
        }
        O::VMadF16 | O::VMadmkF16 | O::VMadakF16 | O::VMadLegacyF16 => {
            let preserve = op != O::VMadLegacyF16;
            let a = x.h16_raw(0);
            let b = x.h16_raw(1);
            let c = x.h16_raw(2);
            let r: H16s = lanes(|l| mad16(a[l], b[l], c[l]));
            x.outf16(r, preserve);
        }
        O::VFmaF16 | O::VFmaLegacyF16 => h3(x, op == O::VFmaF16, fma16),
        O::VDivFixupF16 | O::VDivFixupLegacyF16 => h3(x, op == O::VDivFixupF16, fp::div_fixup16),
        O::VRcpF16 => h1(x, false, |a| hfn(a, |v| 1.0 / v)),
        O::VSqrtF16 => h1(x, false, |a| hfn(a, f64::sqrt)),
        O::VRsqF16 => h1(x, false, |a| hfn(a, |v| 1.0 / v.sqrt())),
        O::VLogF16 => h1(x, false, |a| hfn(a, f64::log2)),
        O::VExpF16 => h1(x, false, |a| hfn(a, f64::exp2)),
        O::VSinF16 => h1(x, false, |a| hfn(a, |v| sincos_rev(v, false))),
        O::VCosF16 => h1(x, false, |a| hfn(a, |v| sincos_rev(v, true))),
        O::VFloorF16 => h1(x, false, |a| hfn(a, f64::floor)),
        O::VCeilF16 => h1(x, false, |a| hfn(a, f64::ceil)),
        O::VTruncF16 => h1(x, false, |a| hfn(a, f64::trunc)),
        O::VRndneF16 => h1(x, false, |a| hfn(a, f64::round_ties_even)),
        O::VFractF16 => h1(x, false, |a| {
            hfn(a, |v| fract(v - v.floor(), h2d(0x3BFF).to_bits()))
        }),
        O::VFrexpMantF16 => h1(x, false, |a| hfn(a, |v| frexp(v).0)),
        O::VFrexpExpI16F16 => {
            let a = x.h16(0);
            let r: H16s = lanes(|l| frexp(h2d(a[l])).1 as i16 as u16);
            x.out16(&r, false);
        }
        O::VExpLegacyF32 | O::VLogLegacyF32 => {
            return Err(x.unsup("legacy exp/log precision rules are not executed"))
        }
        O::VScreenPartition4seB32 | O::VCvtPkaccumU8F32 => {
            return Err(x.unsup("graphics-only operation is not executed"))
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `x − floor(x)` kept below 1.0 (`below_one` = bits of the largest value < 1); a NaN
/// difference (x = ±∞ or NaN) stays NaN.
fn fract<F: Fl>(d: F, below_one: u64) -> F {
    let cap = F::of_bits(below_one);
    if d > cap {
        cap
    } else {
        d
    }
}
