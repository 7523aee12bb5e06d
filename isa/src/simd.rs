//! Whole-wave f32 lane kernels (add, multiply, fused multiply-add) with the VALU's
//! NaN rules, using the host's FMA unit when it has one.
//!
//! The lanes are computed by host IEEE arithmetic (round to nearest even, denormals
//! kept: the engine never sets MXCSR's FTZ/DAZ), which gives the VALU's result for
//! every non-NaN outcome; lanes whose result is NaN are then recomputed with
//! [`nan_of`] (first NaN operand quieted, else the default NaN), because the host's
//! choice of NaN differs. A fused multiply-add must round once: on x86-64 hosts with
//! the FMA extension the loop runs in a function compiled with that feature (chosen
//! at run time), elsewhere it falls back to [`fma32`] (exact round-to-odd in f64),
//! and targets whose baseline has FMA (aarch64) get the instruction from `mul_add`.

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

#[cfg(target_arch = "x86_64")]
pub(crate) use crate::arch::host_avx2;
pub(crate) use crate::arch::host_fma;
use crate::arch::{VReg, WAVE_SIZE};

use crate::fp::{fma32, nan_of};
use crate::state::Src;

impl Src<'_> {
    /// The dword of lane `l`.
    #[inline(always)]
    pub(crate) fn at(self, l: usize) -> u32 {
        match self {
            Src::Reg(r) => r[l],
            Src::Splat(v) => v,
        }
    }
}

/// Whether an f32 bit pattern is a NaN.
#[inline(always)]
fn nan_bits(x: u32) -> bool {
    x & 0x7FFF_FFFF > 0x7F80_0000
}

/// One source of a lane kernel: a register's lanes or one value for all lanes.
pub(crate) trait Lanes: Copy {
    /// The dword of lane `l`.
    fn at(self, l: usize) -> u32;
}

impl Lanes for &VReg {
    #[inline(always)]
    fn at(self, l: usize) -> u32 {
        self[l]
    }
}

impl Lanes for u32 {
    #[inline(always)]
    fn at(self, _l: usize) -> u32 {
        self
    }
}

/// The kernels below compute every lane and return whether any result is a NaN.
#[inline(always)]
fn fma_body<A: Lanes, B: Lanes, C: Lanes>(a: A, b: B, c: C, out: &mut VReg) -> bool {
    let mut nan = false;
    for l in 0..WAVE_SIZE {
        let r = f32::from_bits(a.at(l))
            .mul_add(f32::from_bits(b.at(l)), f32::from_bits(c.at(l)))
            .to_bits();
        nan |= nan_bits(r);
        out[l] = r;
    }
    nan
}

#[inline(always)]
fn add_body<A: Lanes, B: Lanes>(a: A, b: B, out: &mut VReg) -> bool {
    let mut nan = false;
    for l in 0..WAVE_SIZE {
        let r = (f32::from_bits(a.at(l)) + f32::from_bits(b.at(l))).to_bits();
        nan |= nan_bits(r);
        out[l] = r;
    }
    nan
}

#[inline(always)]
fn mul_body<A: Lanes, B: Lanes>(a: A, b: B, out: &mut VReg) -> bool {
    let mut nan = false;
    for l in 0..WAVE_SIZE {
        let r = (f32::from_bits(a.at(l)) * f32::from_bits(b.at(l))).to_bits();
        nan |= nan_bits(r);
        out[l] = r;
    }
    nan
}

/// `fma_body` compiled with the FMA (and AVX2) instructions.
///
/// # Safety
/// The CPU must support FMA and AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_body_x86<A: Lanes, B: Lanes, C: Lanes>(a: A, b: B, c: C, out: &mut VReg) -> bool {
    fma_body(a, b, c, out)
}

/// `add_body` compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_body_x86<A: Lanes, B: Lanes>(a: A, b: B, out: &mut VReg) -> bool {
    add_body(a, b, out)
}

/// `mul_body` compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn mul_body_x86<A: Lanes, B: Lanes>(a: A, b: B, out: &mut VReg) -> bool {
    mul_body(a, b, out)
}

/// Calls `$f` with each of `$s` (a [`Src`]) as a `&VReg` or a `u32` splat.
macro_rules! with_lanes {
    ($f:ident($($s:ident),*; $($rest:expr),*)) => {
        with_lanes!(@go $f [] [$($s),*] [$($rest),*])
    };
    (@go $f:ident [$($done:expr),*] [] [$($rest:expr),*]) => {
        $f($($done,)* $($rest),*)
    };
    (@go $f:ident [$($done:expr),*] [$s:ident $(, $more:ident)*] [$($rest:expr),*]) => {
        match $s {
            Src::Reg(r) => with_lanes!(@go $f [$($done,)* r] [$($more),*] [$($rest),*]),
            Src::Splat(v) => with_lanes!(@go $f [$($done,)* v] [$($more),*] [$($rest),*]),
        }
    };
}
pub(super) use with_lanes;

/// `out = a·b + c` in every lane, rounded once (VALU NaN rules).
pub(crate) fn fma_lanes(a: Src<'_>, b: Src<'_>, c: Src<'_>, out: &mut VReg) {
    if host_fma() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: host_fma() checked that the CPU has FMA and AVX2.
        let nan = unsafe { with_lanes!(fma_body_x86(a, b, c; out)) };
        #[cfg(not(target_arch = "x86_64"))]
        let nan = with_lanes!(fma_body(a, b, c; out));
        if nan {
            for l in 0..WAVE_SIZE {
                if nan_bits(out[l]) {
                    let (x, y, z) = (
                        f32::from_bits(a.at(l)),
                        f32::from_bits(b.at(l)),
                        f32::from_bits(c.at(l)),
                    );
                    out[l] = nan_of(f32::from_bits(out[l]), &[x, y, z]).to_bits();
                }
            }
        }
    } else {
        for l in 0..WAVE_SIZE {
            out[l] = fma32(
                f32::from_bits(a.at(l)),
                f32::from_bits(b.at(l)),
                f32::from_bits(c.at(l)),
            )
            .to_bits();
        }
    }
}

/// The host's vector idioms for lane kernels, 8 lanes at a time: packing flags into
/// lane-mask bits, and joining the two dwords of 64-bit lanes (which the register
/// file keeps in two registers) into f64 values and back.
pub(super) trait Pack: Copy {
    /// Bit i set where `flags[i]` is all ones.
    fn pack8(self, flags: &[u32; 8]) -> u8;
    /// The f64 values `hi[i]:lo[i]` of 8 lanes, in an order of the packer's choice
    /// that [`split8`](Pack::split8) undoes (lane-wise arithmetic does not see it).
    fn join8(self, lo: &[u32; 8], hi: &[u32; 8]) -> [f64; 8];
    /// The low and high dwords, in lane order, of 8 values in `join8`'s order.
    fn split8(self, r: [f64; 8]) -> ([u32; 8], [u32; 8]);
}

/// Packing by shifts and ORs, for any host.
#[derive(Clone, Copy)]
pub(super) struct Portable;

impl Pack for Portable {
    #[inline(always)]
    fn pack8(self, flags: &[u32; 8]) -> u8 {
        let mut b = 0u32;
        for i in 0..8 {
            b |= (flags[i] & 1) << i;
        }
        b as u8
    }

    #[inline(always)]
    fn join8(self, lo: &[u32; 8], hi: &[u32; 8]) -> [f64; 8] {
        let mut r = [0f64; 8];
        for i in 0..8 {
            r[i] = f64::from_bits(u64::from(lo[i]) | u64::from(hi[i]) << 32);
        }
        r
    }

    #[inline(always)]
    fn split8(self, r: [f64; 8]) -> ([u32; 8], [u32; 8]) {
        let (mut lo, mut hi) = ([0u32; 8], [0u32; 8]);
        for i in 0..8 {
            lo[i] = r[i].to_bits() as u32;
            hi[i] = (r[i].to_bits() >> 32) as u32;
        }
        (lo, hi)
    }
}

/// Packing with AVX's VMOVMSKPS (the sign bits of 8 lanes in one instruction, from
/// the register the lane compare left them in). A value is the proof that the host
/// has AVX2.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    /// The proof, without checking.
    ///
    /// # Safety
    /// The host must have AVX2 (callers are themselves code that runs only then).
    #[inline(always)]
    pub(super) unsafe fn new_unchecked() -> Avx2 {
        Avx2(())
    }
}

#[cfg(target_arch = "x86_64")]
impl Pack for Avx2 {
    #[inline(always)]
    fn pack8(self, f: &[u32; 8]) -> u8 {
        use std::arch::x86_64::{_mm256_movemask_ps, _mm256_setr_ps};
        let x = |i: usize| f32::from_bits(f[i]);
        // SAFETY: an `Avx2` value exists only on hosts with AVX2 (`new_unchecked`),
        // which these AVX instructions need.
        let bits = unsafe {
            _mm256_movemask_ps(_mm256_setr_ps(
                x(0),
                x(1),
                x(2),
                x(3),
                x(4),
                x(5),
                x(6),
                x(7),
            ))
        };
        bits as u8
    }

    /// Lanes in the order 0, 1, 4, 5, 2, 3, 6, 7 (VPUNPCKLDQ / VPUNPCKHDQ interleave
    /// within each 128-bit half), where widening each dword to 64 bits and merging
    /// takes twice the instructions.
    #[inline(always)]
    fn join8(self, lo: &[u32; 8], hi: &[u32; 8]) -> [f64; 8] {
        use std::arch::x86_64::{
            __m256i, _mm256_loadu_si256, _mm256_unpackhi_epi32, _mm256_unpacklo_epi32,
        };
        // SAFETY: an `Avx2` value exists only on hosts with AVX2 (`new_unchecked`);
        // each load reads the 32 bytes of an 8-dword array; the result reinterprets
        // 64 bytes of plain data.
        unsafe {
            let l = _mm256_loadu_si256(lo.as_ptr().cast());
            let h = _mm256_loadu_si256(hi.as_ptr().cast());
            std::mem::transmute::<[__m256i; 2], [f64; 8]>([
                _mm256_unpacklo_epi32(l, h),
                _mm256_unpackhi_epi32(l, h),
            ])
        }
    }

    /// VSHUFPS picks the low and the high dwords of both halves, which puts the
    /// lanes of `join8`'s order back in lane order.
    #[inline(always)]
    fn split8(self, r: [f64; 8]) -> ([u32; 8], [u32; 8]) {
        use std::arch::x86_64::{__m256, _mm256_shuffle_ps};
        // SAFETY: an `Avx2` value exists only on hosts with AVX2 (`new_unchecked`);
        // the transmutes reinterpret plain data of equal sizes.
        unsafe {
            let [a, b] = std::mem::transmute::<[f64; 8], [__m256; 2]>(r);
            (
                std::mem::transmute::<__m256, [u32; 8]>(_mm256_shuffle_ps::<0x88>(a, b)),
                std::mem::transmute::<__m256, [u32; 8]>(_mm256_shuffle_ps::<0xDD>(a, b)),
            )
        }
    }
}

/// The lane mask of `flag(l)` over the wave, 8 lanes at a time (each group's flags
/// stay in one AVX2 register up to the packing); `flag` may also write lane l's
/// result.
#[inline(always)]
pub(super) fn mask_of<P: Pack>(pk: P, mut flag: impl FnMut(usize) -> bool) -> u64 {
    let mut m = 0u64;
    for c in 0..WAVE_SIZE / 8 {
        let mut f = [0u32; 8];
        for i in 0..8 {
            f[i] = 0u32.wrapping_sub(u32::from(flag(8 * c + i)));
        }
        m |= u64::from(pk.pack8(&f)) << (8 * c);
    }
    m
}

/// [`mask_of`] for a kernel that also gives a result per lane: `lane(l)` is (the
/// result, the flag); each group of 8 results is stored after its lanes were read
/// (so the group vectorises even where the compiler cannot rule out that `out`
/// overlaps a source).
#[inline(always)]
pub(super) fn mask_and_results<P: Pack>(
    pk: P,
    out: &mut VReg,
    mut lane: impl FnMut(usize) -> (u32, bool),
) -> u64 {
    let mut m = 0u64;
    for c in 0..WAVE_SIZE / 8 {
        let mut f = [0u32; 8];
        let mut v = [0u32; 8];
        for i in 0..8 {
            let (r, flag) = lane(8 * c + i);
            v[i] = r;
            f[i] = 0u32.wrapping_sub(u32::from(flag));
        }
        out[8 * c..8 * c + 8].copy_from_slice(&v);
        m |= u64::from(pk.pack8(&f)) << (8 * c);
    }
    m
}

/// A lane mask as one dword per lane, all ones where the lane's bit is set: 32-bit
/// shifts of each half (8 lanes to an AVX2 register, where shifting the 64-bit mask
/// per lane would widen every lane to 64 bits and pack the results back).
#[inline(always)]
pub(crate) fn lane_masks(m: u64) -> [u32; WAVE_SIZE] {
    let mut on = [0u32; WAVE_SIZE];
    let (lo, hi) = (m as u32, (m >> 32) as u32);
    for i in 0..32 {
        on[i] = 0u32.wrapping_sub((lo >> i) & 1);
    }
    for i in 0..32 {
        on[32 + i] = 0u32.wrapping_sub((hi >> i) & 1);
    }
    on
}

#[inline(always)]
pub(super) fn add_co_body<A: Lanes, B: Lanes, P: Pack>(
    a: A,
    b: B,
    cin: u64,
    clamp: bool,
    out: &mut VReg,
    pk: P,
) -> u64 {
    // 32-bit lanes throughout (they vectorise 8 to a register): without a carry-in
    // the sum carried out exactly when it wrapped below an addend; with one, when it
    // wrapped to at most the addend (a + b + 1 ≡ a needs b = 2^32 − 1).
    if cin == 0 {
        mask_and_results(pk, out, |l| {
            let s = a.at(l).wrapping_add(b.at(l));
            let c = s < a.at(l);
            (if clamp && c { u32::MAX } else { s }, c)
        })
    } else {
        let on = lane_masks(cin);
        mask_and_results(pk, out, |l| {
            let x = a.at(l);
            let s = x.wrapping_add(b.at(l)).wrapping_add(on[l] & 1);
            let c = (s < x) | ((s == x) & (on[l] != 0));
            (if clamp && c { u32::MAX } else { s }, c)
        })
    }
}

#[inline(always)]
pub(super) fn sub_co_body<A: Lanes, B: Lanes, P: Pack>(
    a: A,
    b: B,
    cin: u64,
    clamp: bool,
    out: &mut VReg,
    pk: P,
) -> u64 {
    // The difference borrowed exactly when the subtrahend (plus borrow-in) exceeds
    // the minuend: a < b, or a = b with a borrow-in.
    if cin == 0 {
        mask_and_results(pk, out, |l| {
            let (x, y) = (a.at(l), b.at(l));
            let n = x < y;
            (if clamp && n { 0 } else { x.wrapping_sub(y) }, n)
        })
    } else {
        let on = lane_masks(cin);
        mask_and_results(pk, out, |l| {
            let (x, y) = (a.at(l), b.at(l));
            let n = (x < y) | ((x == y) & (on[l] != 0));
            let d = x.wrapping_sub(y).wrapping_sub(on[l] & 1);
            (if clamp && n { 0 } else { d }, n)
        })
    }
}

#[inline(always)]
pub(super) fn cmp_body<A: Lanes, B: Lanes, P: Pack>(
    a: A,
    b: B,
    signed: bool,
    c: u32,
    pk: P,
) -> u64 {
    // The sign bit flipped makes an unsigned compare order signed values.
    let bias = if signed { 0x8000_0000u32 } else { 0 };
    macro_rules! each {
        ($op:tt) => {
            mask_of(pk, |l| (a.at(l) ^ bias) $op (b.at(l) ^ bias))
        };
    }
    match c {
        0 => 0,
        1 => each!(<),
        2 => each!(==),
        3 => each!(<=),
        4 => each!(>),
        5 => each!(!=),
        6 => each!(>=),
        _ => u64::MAX,
    }
}

/// The mask of lanes where the 64-bit integers `ah:al` and `bh:bl` (high and
/// low dwords) satisfy condition `c` (`signed` or not), conditions numbered as
/// [`cmp_u32`]; the operands are read in place. The compare is made of 32-bit lane
/// compares (the high dwords decide unless equal, then the low dwords, unsigned), so
/// that AVX2 keeps 8 lanes to a register instead of widening them to 64 bits.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // four dwords, the condition, the packer
pub(super) fn cmp64_body<A: Lanes, B: Lanes, C: Lanes, D: Lanes, P: Pack>(
    al: A,
    ah: B,
    bl: C,
    bh: D,
    signed: bool,
    c: u32,
    pk: P,
) -> u64 {
    // The sign bit flipped makes an unsigned compare order signed values.
    let bias = if signed { 0x8000_0000u32 } else { 0 };
    macro_rules! each {
        (|$xh:ident, $yh:ident, $xl:ident, $yl:ident| $e:expr) => {
            mask_of(pk, |l| {
                let ($xh, $yh) = (ah.at(l) ^ bias, bh.at(l) ^ bias);
                let ($xl, $yl) = (al.at(l), bl.at(l));
                $e
            })
        };
    }
    match c {
        0 => 0,
        1 => each!(|xh, yh, xl, yl| (xh < yh) | ((xh == yh) & (xl < yl))),
        2 => each!(|xh, yh, xl, yl| (xh == yh) & (xl == yl)),
        3 => each!(|xh, yh, xl, yl| (xh < yh) | ((xh == yh) & (xl <= yl))),
        4 => each!(|xh, yh, xl, yl| (xh > yh) | ((xh == yh) & (xl > yl))),
        5 => each!(|xh, yh, xl, yl| (xh != yh) | (xl != yl)),
        6 => each!(|xh, yh, xl, yl| (xh > yh) | ((xh == yh) & (xl >= yl))),
        _ => u64::MAX,
    }
}

/// `add_co_body` compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_co_x86<A: Lanes, B: Lanes>(a: A, b: B, cin: u64, clamp: bool, out: &mut VReg) -> u64 {
    // SAFETY: this function runs only on hosts with AVX2 (its contract).
    add_co_body(a, b, cin, clamp, out, unsafe { Avx2::new_unchecked() })
}

/// `sub_co_body` compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sub_co_x86<A: Lanes, B: Lanes>(a: A, b: B, cin: u64, clamp: bool, out: &mut VReg) -> u64 {
    // SAFETY: this function runs only on hosts with AVX2 (its contract).
    sub_co_body(a, b, cin, clamp, out, unsafe { Avx2::new_unchecked() })
}

/// `cmp_body` compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn cmp_x86<A: Lanes, B: Lanes>(a: A, b: B, signed: bool, c: u32) -> u64 {
    // SAFETY: this function runs only on hosts with AVX2 (its contract).
    cmp_body(a, b, signed, c, unsafe { Avx2::new_unchecked() })
}

/// `out = a + b + carry-in` (32-bit, CLAMP saturating) in every lane; returns the
/// carry-out mask of all lanes.
pub(crate) fn add_co(a: Src<'_>, b: Src<'_>, cin: u64, clamp: bool, out: &mut VReg) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { with_lanes!(add_co_x86(a, b; cin, clamp, out)) };
    }
    with_lanes!(add_co_body(a, b; cin, clamp, out, Portable))
}

/// `out = a − b − borrow-in` (32-bit, CLAMP saturating at 0) in every lane; returns
/// the borrow-out mask of all lanes.
pub(crate) fn sub_co(a: Src<'_>, b: Src<'_>, cin: u64, clamp: bool, out: &mut VReg) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { with_lanes!(sub_co_x86(a, b; cin, clamp, out)) };
    }
    with_lanes!(sub_co_body(a, b; cin, clamp, out, Portable))
}

/// The mask of lanes where `a c b` holds for 32-bit integers (`signed` or not),
/// conditions numbered f lt eq le gt ne ge t.
pub(crate) fn cmp_u32(a: Src<'_>, b: Src<'_>, signed: bool, c: u32) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { with_lanes!(cmp_x86(a, b; signed, c)) };
    }
    with_lanes!(cmp_body(a, b; signed, c, Portable))
}

/// The mask of lanes where `ah:al c bh:bl` holds for 64-bit integers
/// (`signed` or not), conditions numbered as [`cmp_u32`].
pub(crate) fn cmp_u64(
    al: Src<'_>,
    ah: Src<'_>,
    bl: Src<'_>,
    bh: Src<'_>,
    signed: bool,
    c: u32,
) -> u64 {
    with_lanes!(cmp64_body(al, ah, bl, bh; signed, c, Portable))
}

/// Rewrites the NaN lanes of a two-operand result by the VALU NaN rule.
#[inline]
fn fix_nan2(a: Src<'_>, b: Src<'_>, out: &mut VReg, nan: bool) {
    if nan {
        for l in 0..WAVE_SIZE {
            if nan_bits(out[l]) {
                let (x, y) = (f32::from_bits(a.at(l)), f32::from_bits(b.at(l)));
                out[l] = nan_of(f32::from_bits(out[l]), &[x, y]).to_bits();
            }
        }
    }
}

/// `out = a + b` in every lane (VALU NaN rules).
pub(crate) fn add_lanes(a: Src<'_>, b: Src<'_>, out: &mut VReg) {
    #[cfg(target_arch = "x86_64")]
    let nan = if host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        unsafe { with_lanes!(add_body_x86(a, b; out)) }
    } else {
        with_lanes!(add_body(a, b; out))
    };
    #[cfg(not(target_arch = "x86_64"))]
    let nan = with_lanes!(add_body(a, b; out));
    fix_nan2(a, b, out, nan);
}

/// `out = a · b` in every lane (VALU NaN rules).
pub(crate) fn mul_lanes(a: Src<'_>, b: Src<'_>, out: &mut VReg) {
    #[cfg(target_arch = "x86_64")]
    let nan = if host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        unsafe { with_lanes!(mul_body_x86(a, b; out)) }
    } else {
        with_lanes!(mul_body(a, b; out))
    };
    #[cfg(not(target_arch = "x86_64"))]
    let nan = with_lanes!(mul_body(a, b; out));
    fix_nan2(a, b, out, nan);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oracle of compare condition `c` (numbered as `cmp_u32`) on `p` and `q`.
    fn cond_holds<T: Ord>(c: u32, p: T, q: T) -> bool {
        match c {
            0 => false,
            1 => p < q,
            2 => p == q,
            3 => p <= q,
            4 => p > q,
            5 => p != q,
            6 => p >= q,
            _ => true,
        }
    }

    /// Host reference: the exact product-sum rounded once, via f64 for operands whose
    /// product is exact in f64, checked against values built to need one rounding.
    #[test]
    fn fused_lanes_round_once_and_follow_nan_rules() {
        let mut a = [0u32; WAVE_SIZE];
        let mut b = [0u32; WAVE_SIZE];
        let mut c = [0u32; WAVE_SIZE];
        // Lane 0: (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly representable in f32: a
        // fused result keeps the 2^-24 term that a separate multiply rounds away.
        let x = 1.0f32 + f32::from_bits(0x3980_0000); // 1 + 2^-12
        a[0] = x.to_bits();
        b[0] = x.to_bits();
        c[0] = (-1.0f32).to_bits();
        // Lane 1: NaN operand (signalling) comes back quieted.
        a[1] = 0x7F80_0001;
        b[1] = 1.0f32.to_bits();
        // Lane 2: ∞ · 0 is the default NaN.
        a[2] = f32::INFINITY.to_bits();
        b[2] = 0;
        // Lane 3: denormal result kept.
        a[3] = f32::from_bits(1).to_bits();
        b[3] = 0.5f32.to_bits();
        c[3] = f32::from_bits(4).to_bits();
        let mut out = [0u32; WAVE_SIZE];
        fma_lanes(Src::Reg(&a), Src::Reg(&b), Src::Reg(&c), &mut out);
        let exact = f64::from(x) * f64::from(x) - 1.0;
        assert_eq!(f32::from_bits(out[0]), exact as f32);
        assert_eq!(exact, 2f64.powi(-11) + 2f64.powi(-24));
        assert_eq!(out[1], 0x7FC0_0001);
        assert_eq!(out[2], 0x7FC0_0000);
        // 2^-149 · 0.5 + 4·2^-149 = 4.5 ulp → 4 (ties to even).
        assert_eq!(out[3], 4);
        for l in 4..WAVE_SIZE {
            assert_eq!(out[l], 0);
        }
        let mut s = [0u32; WAVE_SIZE];
        add_lanes(Src::Reg(&a), Src::Reg(&c), &mut s);
        assert_eq!(f32::from_bits(s[0]), x - 1.0);
        assert_eq!(s[1], 0x7FC0_0001);
        mul_lanes(Src::Reg(&a), Src::Reg(&b), &mut s);
        assert_eq!(s[2], 0x7FC0_0000);
        let mut t = [0u32; WAVE_SIZE];
        mul_lanes(Src::Reg(&a), Src::Splat(1.0f32.to_bits()), &mut t);
        assert_eq!(t[1], 0x7FC0_0001);
        assert_eq!(t[0], a[0]);
        fma_lanes(
            Src::Splat(x.to_bits()),
            Src::Splat(x.to_bits()),
            Src::Reg(&c),
            &mut t,
        );
        assert_eq!(t[0], out[0]);
        assert_eq!(s[2], 0x7FC0_0000);
        assert_eq!(f32::from_bits(s[0]), x * x);
    }

    /// Both packers give bit l for an all-ones flag in lane l, in either half.
    #[test]
    fn packers_agree() {
        let mut x = 0x9E37_79B9u32;
        for _ in 0..200 {
            let mut f = [0u32; WAVE_SIZE];
            let mut want = 0u64;
            for l in 0..WAVE_SIZE {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                if x >> 31 == 1 {
                    f[l] = u32::MAX;
                    want |= 1 << l;
                }
            }
            assert_eq!(mask_of(Portable, |l| f[l] != 0), want);
            #[cfg(target_arch = "x86_64")]
            if host_avx2() {
                // SAFETY: the host has AVX2 (checked just above).
                let pk = unsafe { Avx2::new_unchecked() };
                assert_eq!(mask_of(pk, |l| f[l] != 0), want);
            }
        }
    }

    /// Carries, borrows and compares against per-lane u64 / i64 arithmetic.
    #[test]
    fn integer_lanes_match_wide_arithmetic() {
        let mut a = [0u32; WAVE_SIZE];
        let mut b = [0u32; WAVE_SIZE];
        let mut x = 7u32;
        for l in 0..WAVE_SIZE {
            x = x.wrapping_mul(2_891_336_453).wrapping_add(12345);
            a[l] = if l % 5 == 0 { u32::MAX - l as u32 } else { x };
            b[l] = if l % 7 == 0 { a[l] } else { x.rotate_left(13) };
        }
        let cin = 0xA5A5_0F0F_3C3C_FFFFu64;
        for clamp in [false, true] {
            let mut r = [0u32; WAVE_SIZE];
            let carry = add_co(Src::Reg(&a), Src::Reg(&b), cin, clamp, &mut r);
            let mut d = [0u32; WAVE_SIZE];
            let borrow = sub_co(Src::Reg(&a), Src::Splat(b[3]), cin, clamp, &mut d);
            for l in 0..WAVE_SIZE {
                let ci = (cin >> l) & 1;
                let s = u64::from(a[l]) + u64::from(b[l]) + ci;
                assert_eq!((carry >> l) & 1, s >> 32, "lane {l}");
                let want = if clamp && s >> 32 != 0 {
                    u32::MAX
                } else {
                    s as u32
                };
                assert_eq!(r[l], want);
                let t = i64::from(a[l]) - i64::from(b[3]) - ci as i64;
                assert_eq!((borrow >> l) & 1 == 1, t < 0);
                assert_eq!(d[l], if clamp && t < 0 { 0 } else { t as u32 });
            }
        }
        // Edge values in every pairing (a = b, a + b = 2^32 − 1, 2^32, sign
        // boundaries), each with and without a carry/borrow-in, in both lane halves.
        let edges = [
            0u32,
            1,
            2,
            0x7FFF_FFFF,
            0x8000_0000,
            0x8000_0001,
            u32::MAX - 1,
            u32::MAX,
        ];
        let mut ea = [0u32; WAVE_SIZE];
        let mut eb = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            ea[l] = edges[l % 8];
            eb[l] = edges[(l / 8) % 8];
        }
        for cin in [0u64, u64::MAX, 0xAAAA_AAAA_5555_5555, 0x0000_0001_8000_0000] {
            for l0 in [0usize, 1] {
                // Lane l takes edge pair l, shifted by one lane to meet the other
                // carry-in bit.
                let (x, y) = if l0 == 0 { (ea, eb) } else { (eb, ea) };
                let mut r = [0u32; WAVE_SIZE];
                let carry = add_co(Src::Reg(&x), Src::Reg(&y), cin, false, &mut r);
                let mut d = [0u32; WAVE_SIZE];
                let borrow = sub_co(Src::Reg(&x), Src::Reg(&y), cin, false, &mut d);
                for l in 0..WAVE_SIZE {
                    let ci = (cin >> l) & 1;
                    let s = u64::from(x[l]) + u64::from(y[l]) + ci;
                    assert_eq!((carry >> l) & 1, s >> 32, "{:#x}+{:#x}+{ci}", x[l], y[l]);
                    assert_eq!(r[l], s as u32);
                    let t = i64::from(x[l]) - i64::from(y[l]) - ci as i64;
                    assert_eq!(
                        (borrow >> l) & 1 == 1,
                        t < 0,
                        "{:#x}-{:#x}-{ci}",
                        x[l],
                        y[l]
                    );
                    assert_eq!(d[l], t as u32);
                }
            }
        }
        // 64-bit compares: high dwords equal, differing, at the sign boundary.
        let his = [0u32, 1, 0x7FFF_FFFF, 0x8000_0000, u32::MAX];
        let mut xl = [0u32; WAVE_SIZE];
        let mut xh = [0u32; WAVE_SIZE];
        let mut yl = [0u32; WAVE_SIZE];
        let mut yh = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            xl[l] = edges[l % 8];
            yl[l] = edges[(l / 8) % 8];
            xh[l] = his[l % 5];
            yh[l] = his[(l / 3) % 5];
        }
        for c in 0..8 {
            for signed in [false, true] {
                let m = cmp_u64(
                    Src::Reg(&xl),
                    Src::Reg(&xh),
                    Src::Reg(&yl),
                    Src::Splat(yh[9]),
                    signed,
                    c,
                );
                let m2 = cmp_u64(
                    Src::Reg(&xl),
                    Src::Reg(&xh),
                    Src::Reg(&yl),
                    Src::Reg(&yh),
                    signed,
                    c,
                );
                for l in 0..WAVE_SIZE {
                    for (mask, bh) in [(m, yh[9]), (m2, yh[l])] {
                        let p = u64::from(xl[l]) | u64::from(xh[l]) << 32;
                        let q = u64::from(yl[l]) | u64::from(bh) << 32;
                        let (p, q) = if signed {
                            (i128::from(p as i64), i128::from(q as i64))
                        } else {
                            (i128::from(p), i128::from(q))
                        };
                        let want = cond_holds(c, p, q);
                        assert_eq!((mask >> l) & 1 == 1, want, "c {c} s {signed} {p:#x} {q:#x}");
                    }
                }
            }
        }
        for c in 0..8 {
            for signed in [false, true] {
                let m = cmp_u32(Src::Reg(&a), Src::Reg(&b), signed, c);
                for l in 0..WAVE_SIZE {
                    let (p, q) = if signed {
                        (i64::from(a[l] as i32), i64::from(b[l] as i32))
                    } else {
                        (i64::from(a[l]), i64::from(b[l]))
                    };
                    let want = cond_holds(c, p, q);
                    assert_eq!((m >> l) & 1 == 1, want, "cond {c} signed {signed} lane {l}");
                }
            }
        }
    }
}
