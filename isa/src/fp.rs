//! Floating-point rules of the gfx90a VALU that host arithmetic does not give by
//! itself: the MODE register's denormal controls, NaN quieting and the default NaN,
//! the IEEE-mode min/max rules, single-rounding fused multiply-add for f32/f16, f16
//! conversions, `v_cmp_class` bits, and the division helpers (`v_div_scale`,
//! `v_div_fmas`, `v_div_fixup`) and `v_trig_preop_f64`.
//!
//! Facts: AMD "MI200 (CDNA2) ISA" instruction descriptions; MODE layout from
//! LLVM's `llvm/lib/Target/AMDGPU/SIDefines.h` (`FP_DENORM_*`, `Hwreg`; FP_DENORM:
//! 0 flush in+out, 1 flush out, 2 flush in,
//! 3 keep — so bit 0 keeps input denormals, bit 1 keeps output denormals).

use std::sync::OnceLock;

/// The default quiet NaN the VALU produces for invalid operations (f32).
pub(crate) const QNAN32: u32 = 0x7FC0_0000;
/// The default quiet NaN (f64).
pub(crate) const QNAN64: u64 = 0x7FF8_0000_0000_0000;
/// The default quiet NaN (f16).
pub(crate) const QNAN16: u16 = 0x7E00;

/// The floating-point controls of HW_REG_MODE that affect results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FpMode {
    /// FP_DENORM for f32 (MODE bits 5:4).
    pub den32: u8,
    /// FP_DENORM for f16 and f64 (MODE bits 7:6).
    pub den64: u8,
    /// DX10_CLAMP: CLAMP turns NaN into 0.
    pub dx10: bool,
    /// IEEE mode: min/max quiet signalling NaNs.
    pub ieee: bool,
    /// FP_ROUND (bits 3:0); only 0 (round to nearest even everywhere) is executed.
    pub round: u8,
}

impl FpMode {
    /// Decodes the MODE register value.
    pub(crate) fn new(mode: u32) -> Self {
        Self {
            den32: ((mode >> 4) & 3) as u8,
            den64: ((mode >> 6) & 3) as u8,
            dx10: (mode >> 8) & 1 == 1,
            ieee: (mode >> 9) & 1 == 1,
            round: (mode & 0xF) as u8,
        }
    }
    /// f32 input denormals are flushed.
    #[inline]
    pub(crate) fn flush_in32(&self) -> bool {
        self.den32 & 1 == 0
    }
    /// f32 output denormals are flushed.
    #[inline]
    pub(crate) fn flush_out32(&self) -> bool {
        self.den32 & 2 == 0
    }
    /// f64/f16 input denormals are flushed.
    #[inline]
    pub(crate) fn flush_in64(&self) -> bool {
        self.den64 & 1 == 0
    }
    /// f64/f16 output denormals are flushed.
    #[inline]
    pub(crate) fn flush_out64(&self) -> bool {
        self.den64 & 2 == 0
    }
}

/// The bit-level operations the VALU rules need, for f32 and f64.
pub(crate) trait Fl: Copy + PartialOrd + std::ops::Neg<Output = Self> {
    /// Mantissa bits.
    const MANT: u32;
    /// Exponent bias.
    const BIAS: i32;
    /// Raw bits (zero-extended).
    fn bits(self) -> u64;
    /// From raw bits.
    fn of_bits(b: u64) -> Self;
    /// Whether NaN.
    fn nan(self) -> bool;
    /// The default NaN.
    fn qnan() -> Self;
    /// Zero with this value's sign.
    fn signed_zero(self) -> Self {
        Self::of_bits(self.bits() & Self::sign_bit())
    }
    /// The sign bit mask.
    fn sign_bit() -> u64 {
        1 << (Self::MANT + Self::exp_width())
    }
    /// Exponent field width.
    fn exp_width() -> u32;
    /// Biased exponent field.
    fn exp_field(self) -> u32 {
        ((self.bits() >> Self::MANT) & ((1 << Self::exp_width()) - 1)) as u32
    }
    /// Quiet bit mask.
    fn quiet_bit() -> u64 {
        1 << (Self::MANT - 1)
    }
    /// A signalling NaN.
    fn snan(self) -> bool {
        self.nan() && self.bits() & Self::quiet_bit() == 0
    }
    /// The NaN with its quiet bit set.
    fn quiet(self) -> Self {
        Self::of_bits(self.bits() | Self::quiet_bit())
    }
    /// Non-zero with a zero exponent field.
    fn denorm(self) -> bool {
        self.exp_field() == 0 && self.bits() & !Self::sign_bit() != 0
    }
    /// Denormals become zero of the same sign.
    fn ftz(self) -> Self {
        if self.denorm() {
            self.signed_zero()
        } else {
            self
        }
    }
    /// Sign bit set.
    fn neg_sign(self) -> bool {
        self.bits() & Self::sign_bit() != 0
    }
    /// Absolute value by bits.
    fn fabs(self) -> Self {
        Self::of_bits(self.bits() & !Self::sign_bit())
    }
}

impl Fl for f32 {
    const MANT: u32 = 23;
    const BIAS: i32 = 127;
    #[inline]
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    #[inline]
    fn of_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
    #[inline]
    fn nan(self) -> bool {
        self.is_nan()
    }
    #[inline]
    fn qnan() -> Self {
        f32::from_bits(QNAN32)
    }
    #[inline]
    fn exp_width() -> u32 {
        8
    }
}

impl Fl for f64 {
    const MANT: u32 = 52;
    const BIAS: i32 = 1023;
    #[inline]
    fn bits(self) -> u64 {
        self.to_bits()
    }
    #[inline]
    fn of_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
    #[inline]
    fn nan(self) -> bool {
        self.is_nan()
    }
    #[inline]
    fn qnan() -> Self {
        f64::from_bits(QNAN64)
    }
    #[inline]
    fn exp_width() -> u32 {
        11
    }
}

/// The NaN result of an operation whose host result `r` is NaN: the first NaN
/// operand, quieted, else the default NaN (an invalid operation such as ∞−∞).
#[inline]
pub(crate) fn nan_of<F: Fl>(r: F, ops: &[F]) -> F {
    if !r.nan() {
        return r;
    }
    for &x in ops {
        if x.nan() {
            return x.quiet();
        }
    }
    F::qnan()
}

/// `v_min_*`: IEEE mode quiets a signalling NaN operand; otherwise a NaN operand
/// yields the other operand; −0 orders below +0.
#[inline]
pub(crate) fn fmin<F: Fl>(a: F, b: F, ieee: bool) -> F {
    if a.nan() || b.nan() {
        if ieee && a.snan() {
            return a.quiet();
        }
        if ieee && b.snan() {
            return b.quiet();
        }
        return if a.nan() { b } else { a };
    }
    if a < b {
        a
    } else if b < a {
        b
    } else if a.neg_sign() {
        a
    } else {
        b
    }
}

/// `v_max_*`, with the rules of [`fmin`] (+0 orders above −0).
#[inline]
pub(crate) fn fmax<F: Fl>(a: F, b: F, ieee: bool) -> F {
    if a.nan() || b.nan() {
        if ieee && a.snan() {
            return a.quiet();
        }
        if ieee && b.snan() {
            return b.quiet();
        }
        return if a.nan() { b } else { a };
    }
    if a > b {
        a
    } else if b > a || a.neg_sign() {
        // Larger, or equal with `a` = −0 (+0 orders above −0).
        b
    } else {
        a
    }
}

/// `v_med3_*`: with a NaN operand the result is min3; otherwise the median.
#[inline]
pub(crate) fn fmed3<F: Fl>(a: F, b: F, c: F, ieee: bool) -> F {
    if a.nan() || b.nan() || c.nan() {
        return fmin(fmin(a, b, ieee), c, ieee);
    }
    let mx = fmax(fmax(a, b, ieee), c, ieee);
    if mx == a && mx.neg_sign() == a.neg_sign() {
        fmax(b, c, ieee)
    } else if mx == b && mx.neg_sign() == b.neg_sign() {
        fmax(a, c, ieee)
    } else {
        fmax(a, b, ieee)
    }
}

/// Round-to-odd of `a·b + c` in f64, where `a·b` is exact in f64 (operands of at most
/// 26 significant bits: f32 or f16 values). Rounding the result once more to f32 or
/// f16 then gives the correctly rounded (single-rounding) fused result.
#[inline]
pub(crate) fn fma_rto(a: f64, b: f64, c: f64) -> f64 {
    let p = a * b;
    let s = p + c;
    if !s.is_finite() {
        return s;
    }
    // Exact error of the sum (Knuth's TwoSum).
    let bb = s - p;
    let e = (p - (s - bb)) + (c - bb);
    odd_adjust(s, e)
}

/// Round-to-odd of the exact sum `a + b` of two f64 values.
#[inline]
pub(crate) fn add_rto(a: f64, b: f64) -> f64 {
    let s = a + b;
    if !s.is_finite() {
        return s;
    }
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    odd_adjust(s, e)
}

/// `s` rounded to nearest with error `e` (exact value s + e) → round to odd.
#[inline]
fn odd_adjust(s: f64, e: f64) -> f64 {
    if e == 0.0 || s.to_bits() & 1 == 1 {
        return s;
    }
    // Move one ulp toward the exact value.
    let toward_larger_magnitude = (e > 0.0) == (s > 0.0);
    let b = s.to_bits();
    f64::from_bits(if toward_larger_magnitude {
        b + 1
    } else {
        b - 1
    })
}

/// f32 fused multiply-add with one rounding (round to nearest even).
#[inline]
pub(crate) fn fma32(a: f32, b: f32, c: f32) -> f32 {
    let r = fma_rto(f64::from(a), f64::from(b), f64::from(c)) as f32;
    if r.is_nan() {
        return nan_of(r, &[a, b, c]);
    }
    r
}

/// f16 bits → f32 (exact).
#[inline]
pub(crate) fn h2f(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let e = (h >> 10) & 0x1F;
    let m = h & 0x3FF;
    if e == 0 {
        // ±m · 2^-24, exact in f32.
        let v = m as f32 * f32::from_bits(0x3380_0000);
        return if sign != 0 { -v } else { v };
    }
    let bits = if e == 0x1F {
        sign | 0x7F80_0000 | (m << 13)
    } else {
        sign | ((e + 112) << 23) | (m << 13)
    };
    f32::from_bits(bits)
}

/// f16 bits → f64 (exact).
#[inline]
pub(crate) fn h2d(h: u16) -> f64 {
    f64::from(h2f(h))
}

/// Rounds `x` to a binary format with `mant` fraction bits and exponent range
/// [`emin`, `emax`] (denormals below `emin`), to nearest even or toward zero.
/// Returns the value as f64 (exactly representable in the target format); overflow
/// gives ±∞ (nearest) or ±max (toward zero). NaN and ∞ pass through.
#[inline]
pub(crate) fn round_format(x: f64, mant: i32, emin: i32, emax: i32, rtz: bool) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let a = x.abs();
    let e = ((a.to_bits() >> 52) as i32 - 1023).max(emin);
    // a = q · 2^(e - mant); q < 2^(mant+1) (exact scaling by a power of two).
    let q = a * pow2(mant - e);
    let n = if rtz { q.trunc() } else { q.round_ties_even() };
    let r = n * pow2(e - mant);
    let max = (2.0 - pow2(-mant)) * pow2(emax);
    let r = if r > max {
        if rtz {
            max
        } else {
            f64::INFINITY
        }
    } else {
        r
    };
    r.copysign(x)
}

/// 2^k as f64 for |k| ≤ 1023 (saturating beyond).
#[inline]
pub(crate) fn pow2(k: i32) -> f64 {
    if k < -1022 {
        // Reach denormal powers in two exact steps.
        return pow2(k + 1022) * pow2(-1022);
    }
    f64::from_bits(((k.clamp(-1022, 1023) + 1023) as u64) << 52)
}

/// f64 → f16 bits, to nearest even (or toward zero), NaN quieted with its payload's top.
#[inline]
pub(crate) fn d2h(x: f64, rtz: bool) -> u16 {
    let sign = ((x.to_bits() >> 48) & 0x8000) as u16;
    if x.is_nan() {
        return sign | 0x7E00 | ((x.to_bits() >> 42) & 0x1FF) as u16;
    }
    let r = round_format(x, 10, -14, 15, rtz);
    let a = r.abs();
    if a.is_infinite() {
        return sign | 0x7C00;
    }
    if a == 0.0 {
        return sign;
    }
    let e = (a.to_bits() >> 52) as i32 - 1023;
    if e < -14 {
        // Denormal: a = m · 2^-24.
        return sign | (a * pow2(24)) as u16;
    }
    let m = ((a.to_bits() >> 42) & 0x3FF) as u16;
    sign | (((e + 15) as u16) << 10) | m
}

/// f16 binary arithmetic through exact f64 and one rounding to nearest even; a NaN
/// result is the first NaN operand quieted ([`nan_of`]).
#[inline]
pub(crate) fn f16_binary(a: u16, b: u16, f: impl Fn(f64, f64) -> f64) -> u16 {
    let (x, y) = (h2d(a), h2d(b));
    d2h(nan_of(f(x, y), &[x, y]), false)
}

/// f32 → f16 bits (single rounding).
#[inline]
pub(crate) fn f2h(x: f32, rtz: bool) -> u16 {
    d2h(f64::from(x), rtz)
}

/// Flushes an f16 denormal to a signed zero.
#[inline]
pub(crate) fn ftz16(h: u16) -> u16 {
    if h & 0x7C00 == 0 {
        h & 0x8000
    } else {
        h
    }
}

/// The `v_cmp_class` bit of a value: 0 sNaN, 1 qNaN, 2 −∞, 3 −normal, 4 −denormal,
/// 5 −0, 6 +0, 7 +denormal, 8 +normal, 9 +∞.
#[inline]
pub(crate) fn class_bit<F: Fl>(x: F) -> u32 {
    let neg = x.neg_sign();
    let e = x.exp_field();
    let emax = (1u32 << F::exp_width()) - 1;
    let mant = x.bits() & ((1u64 << F::MANT) - 1);
    let bit = if e == emax {
        if mant == 0 {
            if neg {
                2
            } else {
                9
            }
        } else if mant & F::quiet_bit() == 0 {
            0
        } else {
            1
        }
    } else if e == 0 {
        match (mant == 0, neg) {
            (true, true) => 5,
            (true, false) => 6,
            (false, true) => 4,
            (false, false) => 7,
        }
    } else if neg {
        3
    } else {
        8
    };
    1 << bit
}

/// The `v_cmp_class` bit of an f16 value.
#[inline]
pub(crate) fn class_bit16(h: u16) -> u32 {
    // Widen exactly, keeping the quiet bit position (f16 bit 9 → f32 bit 22) and
    // classifying denormals by the f16 exponent field.
    let e = (h >> 10) & 0x1F;
    let m = h & 0x3FF;
    let neg = h & 0x8000 != 0;
    let bit = match (e, m) {
        (0x1F, 0) => {
            if neg {
                2
            } else {
                9
            }
        }
        (0x1F, m) => {
            if m & 0x200 == 0 {
                0
            } else {
                1
            }
        }
        (0, 0) => {
            if neg {
                5
            } else {
                6
            }
        }
        (0, _) => {
            if neg {
                4
            } else {
                7
            }
        }
        _ => {
            if neg {
                3
            } else {
                8
            }
        }
    };
    1 << bit
}

/// `x · 2^k` rounded once to f64 (to nearest even; denormal results rounded at
/// their own precision). For f32/f16 `x`, rounding the f64 result to the narrow
/// format afterwards is still a single rounding (narrow denormals are far above
/// f64's).
pub(crate) fn ldexp_f64(x: f64, k: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    const MASK: u64 = (1 << 52) - 1;
    let bits = x.abs().to_bits();
    let (mut e, mut m) = ((bits >> 52) as i64, bits & MASK);
    if e == 0 {
        // Normalise a denormal so that bit 52 is set.
        let lz = i64::from(m.leading_zeros()) - 11;
        m <<= lz;
        e = 1 - lz;
    } else {
        m |= 1 << 52;
    }
    // x = m · 2^(e - 1075); the result's biased exponent would be e + k.
    let be = e + i64::from(k);
    let r = if be >= 2047 {
        f64::INFINITY
    } else if be >= 1 {
        f64::from_bits(((be as u64) << 52) | (m & MASK))
    } else {
        // Denormal: units of 2^-1074 = 2^(1 - 1075), drop (1 - be) bits.
        let shift = (1 - be) as u32;
        if shift > 54 {
            0.0
        } else {
            let q = m >> shift;
            let rem = m & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            let q = if rem > half || (rem == half && q & 1 == 1) {
                q + 1
            } else {
                q
            };
            f64::from_bits(q)
        }
    };
    r.copysign(x)
}

/// `v_div_scale_*` (VOP3B): `s0` is the operand to scale (the denominator or the
/// numerator), `d` the denominator, `n` the numerator. Returns the scaled value and
/// the VCC bit that tells `v_div_fmas` to undo the scaling of the quotient.
///
/// f32: the exponent-difference limit is 96, the scale 2^64 and a "tiny" numerator
/// has a biased exponent ≤ 23; f64: 768, 2^128 and 53.
pub(crate) fn div_scale<F: Fl + Into<f64>>(s0: F, d: F, n: F) -> (F, bool)
where
    f64: IntoF<F>,
{
    let wide = F::MANT == 52;
    let (limit, k, tiny): (i32, i32, u32) = if wide { (768, 128, 53) } else { (96, 64, 23) };
    let (dv, nv): (f64, f64) = (d.into(), n.into());
    let s0v: f64 = s0.into();
    let min_normal = pow2(1 - F::BIAS);
    if nv == 0.0 || dv == 0.0 || d.nan() || n.nan() {
        return (F::qnan(), false);
    }
    let ed = d.exp_field() as i32;
    let en = n.exp_field() as i32;
    let scale = |x: f64, k: i32| -> F { (x * pow2(k)).to_f() };
    let q = (nv / dv).abs();
    let rcp_tiny = (1.0 / dv).abs() < min_normal;
    let q_tiny = q < min_normal;
    let is_d = s0v == dv;
    let is_n = s0v == nv;
    if en - ed >= limit {
        // Quotient near overflow: scale only the denominator down the quotient.
        return (if is_d { scale(s0v, k) } else { s0 }, true);
    }
    if d.denorm() {
        return (scale(s0v, k), false);
    }
    if rcp_tiny && q_tiny {
        // Huge denominator, denormal quotient: scale the denominator down.
        return (if is_d { scale(s0v, -k) } else { s0 }, true);
    }
    if rcp_tiny {
        return (scale(s0v, -k), false);
    }
    if q_tiny {
        // Denormal quotient: scale the numerator up.
        return (if is_n { scale(s0v, k) } else { s0 }, true);
    }
    if en as u32 <= tiny {
        return (scale(s0v, k), false);
    }
    (s0, false)
}

/// Conversion from f64 to the float type (f32: rounding once; f64: identity).
pub(crate) trait IntoF<F> {
    /// Converts.
    fn to_f(self) -> F;
}
impl IntoF<f32> for f64 {
    #[inline]
    fn to_f(self) -> f32 {
        self as f32
    }
}
impl IntoF<f64> for f64 {
    #[inline]
    fn to_f(self) -> f64 {
        self
    }
}

/// `v_div_fixup_*`: `q` is the quotient estimate, `d` the denominator, `n` the
/// numerator; handles every special case of IEEE division.
pub(crate) fn div_fixup<F: Fl>(q: F, d: F, n: F) -> F {
    let sign_out = d.neg_sign() != n.neg_sign();
    let signed = |x: F| if sign_out { -x.fabs() } else { x.fabs() };
    let inf = F::of_bits(((1u64 << F::exp_width()) - 1) << F::MANT);
    let zero = F::of_bits(0);
    let dz = d.bits() & !F::sign_bit() == 0;
    let nz = n.bits() & !F::sign_bit() == 0;
    let dinf = d.fabs() == inf;
    let ninf = n.fabs() == inf;
    if n.nan() {
        return n.quiet();
    }
    if d.nan() {
        return d.quiet();
    }
    if (dz && nz) || (dinf && ninf) {
        return F::qnan();
    }
    if dz || ninf {
        return signed(inf);
    }
    if dinf || nz {
        return signed(zero);
    }
    let under = if F::MANT == 52 { -1075 } else { -150 };
    if (n.exp_field() as i32) - (d.exp_field() as i32) < under {
        return signed(zero);
    }
    if q.nan() {
        // The scaled quotient overflowed inside the Newton sequence.
        return signed(inf);
    }
    signed(q)
}

/// `v_div_fixup_f16`, same rules with f16 thresholds (underflow below 2^-25).
pub(crate) fn div_fixup16(q: u16, d: u16, n: u16) -> u16 {
    let sign = (d ^ n) & 0x8000;
    let dabs = d & 0x7FFF;
    let nabs = n & 0x7FFF;
    let is_nan = |h: u16| h & 0x7FFF > 0x7C00;
    if is_nan(n) {
        return n | 0x200;
    }
    if is_nan(d) {
        return d | 0x200;
    }
    if (dabs == 0 && nabs == 0) || (dabs == 0x7C00 && nabs == 0x7C00) {
        return QNAN16;
    }
    if dabs == 0 || nabs == 0x7C00 {
        return sign | 0x7C00;
    }
    if dabs == 0x7C00 || nabs == 0 {
        return sign;
    }
    if i32::from(nabs >> 10) - i32::from(dabs >> 10) < -25 {
        return sign;
    }
    if is_nan(q) {
        return sign | 0x7C00;
    }
    sign | (q & 0x7FFF)
}

/// The bits of 2/π: 1280 fraction bits, most significant first, as 40 u32 limbs.
fn two_over_pi() -> &'static [u32; 40] {
    static BITS: OnceLock<[u32; 40]> = OnceLock::new();
    BITS.get_or_init(compute_two_over_pi)
}

/// Computes 2/π to 1280 bits: π by Machin's formula (π/4 = 4·atan(1/5) − atan(1/239))
/// in fixed point, then 2/π by long division of 2 by π.
fn compute_two_over_pi() -> [u32; 40] {
    // Fixed point with FRAC fraction limbs (32 bits each), little-endian limbs.
    const FRAC: usize = 44;
    const N: usize = FRAC + 1;
    fn div_small(x: &mut [u32; N], d: u32) {
        let mut rem = 0u64;
        for limb in x.iter_mut().rev() {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / u64::from(d)) as u32;
            rem = cur % u64::from(d);
        }
    }
    fn add(x: &mut [u32; N], y: &[u32; N], sub: bool) {
        let mut carry = 0i64;
        for k in 0..N {
            let v = i64::from(x[k])
                + if sub {
                    -i64::from(y[k])
                } else {
                    i64::from(y[k])
                }
                + carry;
            x[k] = v as u32;
            carry = v >> 32;
        }
    }
    fn is_zero(x: &[u32; N]) -> bool {
        x.iter().all(|&v| v == 0)
    }
    // atan(1/m) = Σ (-1)^k / ((2k+1) m^(2k+1)).
    fn atan_inv(m: u32) -> [u32; N] {
        let mut sum = [0u32; N];
        let mut power = [0u32; N];
        power[FRAC] = 1;
        div_small(&mut power, m);
        let mut k = 0u32;
        loop {
            let mut term = power;
            div_small(&mut term, 2 * k + 1);
            if is_zero(&term) {
                break;
            }
            add(&mut sum, &term, k % 2 == 1);
            div_small(&mut power, m);
            div_small(&mut power, m);
            k += 1;
        }
        sum
    }
    let a = atan_inv(5);
    let b = atan_inv(239);
    // π = 16·atan(1/5) − 4·atan(1/239).
    let mut pi = [0u32; N];
    for _ in 0..16 {
        add(&mut pi, &a, false);
    }
    for _ in 0..4 {
        add(&mut pi, &b, true);
    }
    // 2/π by binary long division: remainder r starts at 2, each step doubles it and
    // subtracts π when possible.
    let mut r = [0u32; N];
    r[FRAC] = 2;
    let mut out = [0u32; 40];
    let ge = |x: &[u32; N], y: &[u32; N]| {
        for k in (0..N).rev() {
            if x[k] != y[k] {
                return x[k] > y[k];
            }
        }
        true
    };
    // The integer part of 2/π is 0: start with the first fraction bit.
    for bit in 0..1280 {
        // r = 2r
        let mut carry = 0u32;
        for limb in r.iter_mut() {
            let v = (u64::from(*limb) << 1) | u64::from(carry);
            *limb = v as u32;
            carry = (v >> 32) as u32;
        }
        if ge(&r, &pi) {
            add(&mut r, &pi, true);
            out[bit / 32] |= 1 << (31 - bit % 32);
        }
    }
    out
}

/// `v_trig_preop_f64`: 53 bits of 2/π starting `53·sel` (+ an exponent-dependent
/// shift for large `x`) bits after the binary point, scaled so the segments sum to 2/π.
pub(crate) fn trig_preop(x: f64, sel: u32) -> f64 {
    let e = ((x.to_bits() >> 52) & 0x7FF) as i32;
    let mut shift = (sel & 31) as i32 * 53;
    if e > 1077 {
        shift += e - 1077;
    }
    // Take bits [shift, shift+53) of the fraction of 2/π (bit 0 = first bit after
    // the point).
    let bits = two_over_pi();
    let mut m = 0u64;
    for k in 0..53 {
        let pos = shift + k;
        let bit = if (0..1201).contains(&pos) {
            (bits[(pos / 32) as usize] >> (31 - pos % 32)) & 1
        } else {
            0
        };
        m = (m << 1) | u64::from(bit);
    }
    let mut scale = -53 - shift;
    if e >= 1968 {
        scale += 128;
    }
    // m < 2^53 is exact; scaling by a power of two may land in denormals (rounded once).
    ldexp_f64(m as f64, scale)
}
