//! The meaning of the vector ALU's lane operations: what one lane computes from
//! its source values, defined once.
//!
//! The interpreter (`valu::ops`, `valu::vop3p`) and the decode-time plans
//! (`valu::plan`) both compute through these definitions; the fused runs' x86 code
//! (`valu::jit`) restates the integer ones in host instructions and is tested
//! against the interpreter on edge values and random programs (`isa/tests/fused.rs`,
//! `valu/jit/tests.rs`). A new VALU operation gets its lane function here first,
//! then its dispatch in `valu/ops.rs` (and a plan kind in `valu/plan.rs` if it is
//! hot).
//!
//! Facts: AMD's "AMD Instinct MI200" Instruction Set Architecture reference
//! (chapter 12, the VOP1/VOP2/VOP3 opcode descriptions) for each operation;
//! LLVM's `llvm/lib/Target/AMDGPU/VOP2Instructions.td` and
//! `VOP3Instructions.td` for which operand is which (`rev` forms take the shift
//! amount or subtrahend in src0).

use crate::fp::{self, d2h, f16_binary, f2h, h2d, h2f, nan_of, Fl};
use crate::generated::opcodes::{Vop3pOp, VopOp as O};

/// A 32-bit lane operation of two sources (`v_<op> vdst, src0, src1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bin {
    And,
    Or,
    Xor,
    Lshlrev,
    Lshrrev,
    Ashrrev,
    MinI,
    MaxI,
    MinU,
    MaxU,
    MulLo,
    MulHiU,
    MulHiI,
    MulU24,
    Bcnt,
}

impl Bin {
    /// Every operation, in declaration order (the plans' table order).
    pub(crate) const ALL: [Bin; 15] = [
        Bin::And,
        Bin::Or,
        Bin::Xor,
        Bin::Lshlrev,
        Bin::Lshrrev,
        Bin::Ashrrev,
        Bin::MinI,
        Bin::MaxI,
        Bin::MinU,
        Bin::MaxU,
        Bin::MulLo,
        Bin::MulHiU,
        Bin::MulHiI,
        Bin::MulU24,
        Bin::Bcnt,
    ];

    /// The operation of a VOP2/VOP3 opcode, if it is one of these.
    pub(crate) fn of(op: O) -> Option<Bin> {
        Some(match op {
            O::VAndB32 => Bin::And,
            O::VOrB32 => Bin::Or,
            O::VXorB32 => Bin::Xor,
            O::VLshlrevB32 => Bin::Lshlrev,
            O::VLshrrevB32 => Bin::Lshrrev,
            O::VAshrrevI32 => Bin::Ashrrev,
            O::VMinI32 => Bin::MinI,
            O::VMaxI32 => Bin::MaxI,
            O::VMinU32 => Bin::MinU,
            O::VMaxU32 => Bin::MaxU,
            O::VMulLoU32 => Bin::MulLo,
            O::VMulHiU32 => Bin::MulHiU,
            O::VMulHiI32 => Bin::MulHiI,
            O::VMulU32U24 => Bin::MulU24,
            O::VBcntU32B32 => Bin::Bcnt,
            _ => return None,
        })
    }

    /// One lane: `a` is src0, `b` src1.
    #[inline(always)]
    pub(crate) fn apply(self, a: u32, b: u32) -> u32 {
        match self {
            Bin::And => a & b,
            Bin::Or => a | b,
            Bin::Xor => a ^ b,
            Bin::Lshlrev => b << (a & 31),
            Bin::Lshrrev => b >> (a & 31),
            Bin::Ashrrev => ((b as i32) >> (a & 31)) as u32,
            Bin::MinI => (a as i32).min(b as i32) as u32,
            Bin::MaxI => (a as i32).max(b as i32) as u32,
            Bin::MinU => a.min(b),
            Bin::MaxU => a.max(b),
            Bin::MulLo => a.wrapping_mul(b),
            Bin::MulHiU => ((u64::from(a) * u64::from(b)) >> 32) as u32,
            Bin::MulHiI => ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32,
            Bin::MulU24 => (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF),
            Bin::Bcnt => a.count_ones().wrapping_add(b),
        }
    }
}

/// A 32-bit lane operation of three sources (`v_<op> vdst, src0, src1, src2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tri {
    BfeU,
    BfeI,
    Bfi,
    Alignbit,
    LshlAdd,
    AddLshl,
    Add3,
    LshlOr,
    AndOr,
    Or3,
    Xad,
    Min3U,
    Max3U,
    Med3U,
    Min3I,
    Max3I,
    Med3I,
}

impl Tri {
    /// Every operation, in declaration order (the plans' table order).
    pub(crate) const ALL: [Tri; 17] = [
        Tri::BfeU,
        Tri::BfeI,
        Tri::Bfi,
        Tri::Alignbit,
        Tri::LshlAdd,
        Tri::AddLshl,
        Tri::Add3,
        Tri::LshlOr,
        Tri::AndOr,
        Tri::Or3,
        Tri::Xad,
        Tri::Min3U,
        Tri::Max3U,
        Tri::Med3U,
        Tri::Min3I,
        Tri::Max3I,
        Tri::Med3I,
    ];

    /// The operation of a VOP3 opcode, if it is one of these.
    pub(crate) fn of(op: O) -> Option<Tri> {
        Some(match op {
            O::VBfeU32 => Tri::BfeU,
            O::VBfeI32 => Tri::BfeI,
            O::VBfiB32 => Tri::Bfi,
            O::VAlignbitB32 => Tri::Alignbit,
            O::VLshlAddU32 => Tri::LshlAdd,
            O::VAddLshlU32 => Tri::AddLshl,
            O::VAdd3U32 => Tri::Add3,
            O::VLshlOrB32 => Tri::LshlOr,
            O::VAndOrB32 => Tri::AndOr,
            O::VOr3B32 => Tri::Or3,
            O::VXadU32 => Tri::Xad,
            O::VMin3U32 => Tri::Min3U,
            O::VMax3U32 => Tri::Max3U,
            O::VMed3U32 => Tri::Med3U,
            O::VMin3I32 => Tri::Min3I,
            O::VMax3I32 => Tri::Max3I,
            O::VMed3I32 => Tri::Med3I,
            _ => return None,
        })
    }

    /// One lane: `a`, `b`, `c` are src0, src1, src2.
    #[inline(always)]
    pub(crate) fn apply(self, a: u32, b: u32, c: u32) -> u32 {
        let (sa, sb, sc) = (a as i32, b as i32, c as i32);
        match self {
            Tri::BfeU => bfe32(a, b & 31, c & 31, false),
            Tri::BfeI => bfe32(a, b & 31, c & 31, true),
            Tri::Bfi => (a & b) | (!a & c),
            Tri::Alignbit => ((u64::from(a) << 32 | u64::from(b)) >> (c & 31)) as u32,
            Tri::LshlAdd => (a << (b & 31)).wrapping_add(c),
            Tri::AddLshl => a.wrapping_add(b) << (c & 31),
            Tri::Add3 => a.wrapping_add(b).wrapping_add(c),
            Tri::LshlOr => (a << (b & 31)) | c,
            Tri::AndOr => (a & b) | c,
            Tri::Or3 => a | b | c,
            Tri::Xad => (a ^ b).wrapping_add(c),
            Tri::Min3U => a.min(b).min(c),
            Tri::Max3U => a.max(b).max(c),
            Tri::Med3U => a.max(b).min(a.min(b).max(c)),
            Tri::Min3I => sa.min(sb).min(sc) as u32,
            Tri::Max3I => sa.max(sb).max(sc) as u32,
            Tri::Med3I => sa.max(sb).min(sa.min(sb).max(sc)) as u32,
        }
    }
}

/// A 64-bit shift of VOP3 (`rev` forms: the amount is src0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shift64 {
    /// `v_lshlrev_b64`.
    Lshl,
    /// `v_lshrrev_b64`.
    Lshr,
    /// `v_ashrrev_i64`.
    Ashr,
}

impl Shift64 {
    /// The shift of a VOP3 opcode, if it is one of these.
    pub(crate) fn of(op: O) -> Option<Shift64> {
        Some(match op {
            O::VLshlrevB64 => Shift64::Lshl,
            O::VLshrrevB64 => Shift64::Lshr,
            O::VAshrrevI64 => Shift64::Ashr,
            _ => return None,
        })
    }

    /// One lane: `v` shifted by the low 6 bits of `n`.
    #[inline(always)]
    pub(crate) fn apply(self, v: u64, n: u32) -> u64 {
        let n = n & 63;
        match self {
            Shift64::Lshl => v << n,
            Shift64::Lshr => v >> n,
            Shift64::Ashr => ((v as i64) >> n) as u64,
        }
    }
}

/// `v_mad_u64_u32` (or `v_mad_i64_i32` when `signed`) in one lane: `a · b + c`
/// modulo 2^64, and whether the exact result does not fit 64 bits (unsigned, or
/// signed for the signed form): the carry-out the instruction writes to SDST.
/// A 32×32-bit product fits 64 bits, so only the addition can overflow.
#[inline(always)]
pub(crate) fn mad64(a: u32, b: u32, c: u64, signed: bool) -> (u64, bool) {
    if signed {
        let prod = i64::from(a as i32) * i64::from(b as i32);
        let v = prod.wrapping_add(c as i64);
        // Signed overflow: both addends' signs differ from the sum's.
        (v as u64, ((prod ^ v) & ((c as i64) ^ v)) < 0)
    } else {
        let v = (u64::from(a) * u64::from(b)).wrapping_add(c);
        // Unsigned overflow: the sum wrapped below an addend.
        (v, v < c)
    }
}

/// `v_mad_*64*` with CLAMP: the result saturated when [`mad64`] overflowed (the
/// exact signed result has the sign both addends share then).
#[inline(always)]
pub(crate) fn mad64_clamped(a: u32, b: u32, c: u64, signed: bool) -> (u64, bool) {
    let (v, o) = mad64(a, b, c, signed);
    match (o, signed) {
        (false, _) => (v, o),
        (true, false) => (u64::MAX, o),
        (true, true) if (c as i64) < 0 => (i64::MIN as u64, o),
        (true, true) => (i64::MAX as u64, o),
    }
}

/// Unary f16 function through f64 (special values pass through `f`).
pub(crate) fn hfn(a: u16, f: impl Fn(f64) -> f64) -> u16 {
    let x = h2d(a);
    d2h(nan_of(f(x), &[x]), false)
}

/// f16 min/max/med3 through f32 (exact), keeping NaN rules.
pub(crate) fn hsel(a: u16, b: u16, f: impl Fn(f32, f32) -> f32) -> u16 {
    f2h(f(h2f(a), h2f(b)), false)
}

/// `v_mbcnt_*` thread mask: lanes below `l` within the low (or high) 32 lanes.
pub(crate) fn below(l: usize, hi: bool) -> u32 {
    let n = if hi { l.saturating_sub(32) } else { l.min(32) };
    if n >= 32 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

/// The low 24 bits of `v` as a signed integer (`v_mul_i32_i24` and friends).
#[inline(always)]
pub(crate) fn sext24(v: u32) -> i64 {
    i64::from(((v << 8) as i32) >> 8)
}

/// Bit-field extract as `v_bfe_*`: `width` bits of `v` from bit `off`
/// (both already masked to 5 bits), sign-extended when `signed`.
#[inline(always)]
pub(crate) fn bfe32(v: u32, off: u32, width: u32, signed: bool) -> u32 {
    if width == 0 {
        return 0;
    }
    if off + width < 32 {
        let field = (v >> off) & ((1u32 << width) - 1);
        if signed {
            (((field << (32 - width)) as i32) >> (32 - width)) as u32
        } else {
            field
        }
    } else if signed {
        ((v as i32) >> off) as u32
    } else {
        v >> off
    }
}

/// `v_perm_b32`: each selector byte picks a byte of {src0, src1} (src1 = bytes 0–3),
/// a sign byte (8–11), 0x00 (12) or 0xFF (13+).
pub(crate) fn perm_b32(a: u32, b: u32, sel: u32) -> u32 {
    let bytes = (u64::from(a) << 32) | u64::from(b);
    let mut out = 0u32;
    for k in 0..4 {
        let s = (sel >> (8 * k)) & 0xFF;
        let byte = match s {
            0..=7 => ((bytes >> (8 * s)) & 0xFF) as u32,
            8..=11 => {
                let src = 2 * (s - 8) + 1;
                if (bytes >> (8 * src + 7)) & 1 == 1 {
                    0xFF
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xFF,
        };
        out |= byte << (8 * k);
    }
    out
}

/// Sum of absolute byte differences, skipping (masked) bytes where `b`'s byte is 0.
pub(crate) fn sad_bytes(a: u32, b: u32, masked: bool) -> u32 {
    (0..4)
        .map(|k| {
            let (x, y) = ((a >> (8 * k)) & 0xFF, (b >> (8 * k)) & 0xFF);
            if masked && y == 0 {
                0
            } else {
                x.abs_diff(y)
            }
        })
        .sum()
}

/// `v_frexp_*` of a finite non-zero f64: mantissa in [0.5, 1) and exponent.
pub(crate) fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (y, adj) = if x.abs() < f64::MIN_POSITIVE {
        (x * fp::pow2(64), 64)
    } else {
        (x, 0)
    };
    let b = y.to_bits();
    let e = ((b >> 52) & 0x7FF) as i32;
    let m = f64::from_bits((b & !(0x7FFu64 << 52)) | (1022u64 << 52));
    (m, e - 1022 - adj)
}

/// sin(2π·x) (`cos`: cos(2π·x)) with x in revolutions, reduced exactly by quarters.
pub(crate) fn sincos_rev(x: f64, cos: bool) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    if x == 0.0 {
        return if cos { 1.0 } else { x };
    }
    let q = (x * 4.0).round();
    let t = x - q * 0.25;
    let quadrant = (q.rem_euclid(4.0) as i32 + i32::from(cos)) & 3;
    let a = std::f64::consts::TAU * t;
    match quadrant {
        0 => a.sin(),
        1 => a.cos(),
        2 => -a.sin(),
        _ => -a.cos(),
    }
}

/// Saturating f → signed integer (NaN → 0), as its 32 bits.
pub(crate) fn to_i32(v: f64) -> u32 {
    v as i32 as u32
}

/// Saturating f → unsigned integer (NaN → 0).
pub(crate) fn to_u32(v: f64) -> u32 {
    v as u32
}

/// Snorm16 of a float (round to nearest even, clamped to [-1, 1], NaN → 0).
pub(crate) fn snorm16(v: f64) -> u16 {
    if v.is_nan() {
        return 0;
    }
    (v.clamp(-1.0, 1.0) * 32767.0).round_ties_even() as i16 as u16
}

/// Unorm16 of a float (round to nearest even, clamped to [0, 1], NaN → 0).
pub(crate) fn unorm16(v: f64) -> u16 {
    if v.is_nan() {
        return 0;
    }
    (v.clamp(0.0, 1.0) * 65535.0).round_ties_even() as u16
}

/// Unfused f32 multiply-add with denormal flush of inputs, product and result
/// (`v_mad_f32`, `v_mac_f32`, madmk/madak); `legacy`: 0 · anything = +0.
pub(crate) fn mad32(a: f32, b: f32, c: f32, legacy: bool) -> f32 {
    let (a, b, c) = (a.ftz(), b.ftz(), c.ftz());
    let p = if legacy && (a == 0.0 || b == 0.0) {
        0.0
    } else {
        nan_of(a * b, &[a, b]).ftz()
    };
    let r = p + c;
    if r.is_nan() {
        return nan_of(r, &[a, b, c]);
    }
    r.ftz()
}

/// Unfused f16 multiply-add with denormal flush (`v_mad_f16`, `v_mac_f16`).
pub(crate) fn mad16(a: u16, b: u16, c: u16) -> u16 {
    let (a, b, c) = (fp::ftz16(a), fp::ftz16(b), fp::ftz16(c));
    let p = fp::ftz16(f16_binary(a, b, |x, y| x * y));
    fp::ftz16(f16_binary(p, c, |x, y| x + y))
}

/// Fused f16 multiply-add (one rounding).
pub(crate) fn fma16(a: u16, b: u16, c: u16) -> u16 {
    let (x, y, z) = (h2d(a), h2d(b), h2d(c));
    d2h(nan_of(fp::fma_rto(x, y, z), &[x, y, z]), false)
}

/// `v` saturated to u16 (integer CLAMP).
pub(crate) fn sat_u16(v: i64) -> u16 {
    v.clamp(0, 0xFFFF) as u16
}

/// `v` saturated to i16 (integer CLAMP), as its 16 bits.
pub(crate) fn sat_i16(v: i64) -> u16 {
    v.clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16 as u16
}

/// A packed 16-bit integer operation of VOP3P, done on each half.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pk16 {
    MadI,
    MadU,
    MulLo,
    AddI,
    SubI,
    AddU,
    SubU,
    Lshlrev,
    Lshrrev,
    Ashrrev,
    MaxI,
    MinI,
    MaxU,
    MinU,
}

impl Pk16 {
    /// The operation of a VOP3P opcode, if it is one of these.
    pub(crate) fn of(op: Vop3pOp) -> Option<Pk16> {
        use Vop3pOp as P;
        Some(match op {
            P::VPkMadI16 => Pk16::MadI,
            P::VPkMadU16 => Pk16::MadU,
            P::VPkMulLoU16 => Pk16::MulLo,
            P::VPkAddI16 => Pk16::AddI,
            P::VPkSubI16 => Pk16::SubI,
            P::VPkAddU16 => Pk16::AddU,
            P::VPkSubU16 => Pk16::SubU,
            P::VPkLshlrevB16 => Pk16::Lshlrev,
            P::VPkLshrrevB16 => Pk16::Lshrrev,
            P::VPkAshrrevI16 => Pk16::Ashrrev,
            P::VPkMaxI16 => Pk16::MaxI,
            P::VPkMinI16 => Pk16::MinI,
            P::VPkMaxU16 => Pk16::MaxU,
            P::VPkMinU16 => Pk16::MinU,
            _ => return None,
        })
    }

    /// Its number of sources (the multiply-adds 3, the others 2).
    pub(crate) fn sources(self) -> usize {
        if matches!(self, Pk16::MadI | Pk16::MadU) {
            3
        } else {
            2
        }
    }

    /// Whether CLAMP (saturation) is defined for it.
    pub(crate) fn saturates(self) -> bool {
        matches!(
            self,
            Pk16::MadI | Pk16::MadU | Pk16::AddI | Pk16::SubI | Pk16::AddU | Pk16::SubU
        )
    }

    /// One half: `p`, `q`, `r` are the src0, src1, src2 halves; `clamp` saturates
    /// the arithmetic ones.
    #[inline]
    pub(crate) fn apply(self, p: u16, q: u16, r: u16, clamp: bool) -> u16 {
        let (ps, qs, rs) = (
            i64::from(p as i16),
            i64::from(q as i16),
            i64::from(r as i16),
        );
        let (pu, qu, ru) = (i64::from(p), i64::from(q), i64::from(r));
        let sat_s = |v: i64| if clamp { sat_i16(v) } else { v as u16 };
        let sat_u = |v: i64| if clamp { sat_u16(v) } else { v as u16 };
        match self {
            Pk16::MadI => sat_s(ps * qs + rs),
            Pk16::MadU => sat_u(pu * qu + ru),
            Pk16::MulLo => p.wrapping_mul(q),
            Pk16::AddI => sat_s(ps + qs),
            Pk16::SubI => sat_s(ps - qs),
            Pk16::AddU => sat_u(pu + qu),
            Pk16::SubU => sat_u(pu - qu),
            Pk16::Lshlrev => q << (p & 15),
            Pk16::Lshrrev => q >> (p & 15),
            Pk16::Ashrrev => ((q as i16) >> (p & 15)) as u16,
            Pk16::MaxI => (p as i16).max(q as i16) as u16,
            Pk16::MinI => (p as i16).min(q as i16) as u16,
            Pk16::MaxU => p.max(q),
            Pk16::MinU => p.min(q),
        }
    }
}

/// An integer dot product in one lane (`v_dot{2,4,8}_{i,u}32_*`, and the VOP2
/// `v_dot*c` forms): `c + Σ a[k]·b[k]` over the `n` fields of `bits` bits of `a`
/// and `b` (sign-extended when `signed`), saturated to 32 bits when `clamp`.
#[inline]
pub(crate) fn dot(a: u32, b: u32, c: u32, n: u32, bits: u32, signed: bool, clamp: bool) -> u32 {
    let field = |v: u32, k: u32| -> i64 {
        let f = (v >> (bits * k)) & ((1u64 << bits) - 1) as u32;
        if signed {
            i64::from(((f << (32 - bits)) as i32) >> (32 - bits))
        } else {
            i64::from(f)
        }
    };
    let mut s = if signed {
        i64::from(c as i32)
    } else {
        i64::from(c)
    };
    for k in 0..n {
        s += field(a, k) * field(b, k);
    }
    match (clamp, signed) {
        (true, true) => s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32,
        (true, false) => s.clamp(0, i64::from(u32::MAX)) as u32,
        _ => s as u32,
    }
}

/// `v_dot2_f32_f16` (and the VOP2 `v_dot2c_f32_f16`) in one lane: `a.lo·b.lo +
/// a.hi·b.hi + c` (`c` negated first when `neg_c`), the products exact, each sum
/// rounded to odd in f64 and the result once to f32; a NaN result is the first NaN
/// operand quieted.
#[inline]
pub(crate) fn dot2_f32_f16(a: [u16; 2], b: [u16; 2], c: f32, neg_c: bool) -> f32 {
    let p0 = h2d(a[0]) * h2d(b[0]);
    let p1 = h2d(a[1]) * h2d(b[1]);
    let z = if neg_c { -f64::from(c) } else { f64::from(c) };
    nan_of(fp::add_rto(fp::add_rto(p0, p1), z), &[p0, p1, z]) as f32
}
