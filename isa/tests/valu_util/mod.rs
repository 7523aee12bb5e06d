//! Helpers for the VALU tests: run assembled code on one wave with a chosen MODE and
//! per-lane inputs, deterministic pseudo-random inputs, float edge cases, ulp
//! distance, and an f16 reference rounding written independently of the engine (a
//! search over all f16 values).
#![allow(dead_code)]

use isa::Wave;

use crate::common::{exec, TestMemory};

/// MODE with denormals kept (f32 and f16/f64), DX10_CLAMP and IEEE on: what clang-16
/// OpenMP kernels set (`.amdhsa_float_denorm_mode_32 3`, `_16_64 3`, dx10 1, ieee 1).
pub const MODE_IEEE: u32 = 0x3F0;

/// Lane values from a function of the lane index.
pub fn lanes<T: Copy + Default>(f: impl Fn(usize) -> T) -> [T; 64] {
    std::array::from_fn(f)
}

/// Runs `src` (assembled by llvm-mc-16) on a fresh wave with MODE = `mode`, EXEC =
/// all lanes, after `setup`.
pub fn run(src: &str, mode: u32, setup: impl FnOnce(&mut Wave)) -> Wave {
    let mem = TestMemory::default();
    exec(&mem, src, |w| {
        w.mode = mode;
        setup(w);
    })
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }
    /// A random f32 of moderate magnitude (no NaN/inf), as bits.
    pub fn f32_mid(&mut self) -> u32 {
        let v = self.u32();
        let exp = 100 + (v >> 23) % 56; // 2^-27 .. 2^28
        (v & 0x807F_FFFF) | (exp << 23)
    }
}

/// f32 edge cases: zeros, denormals, normal limits, infinities, NaNs, ties.
pub const F32_EDGES: [u32; 24] = [
    0x0000_0000, // +0
    0x8000_0000, // -0
    0x0000_0001, // min denormal
    0x8000_0001,
    0x007F_FFFF, // max denormal
    0x0080_0000, // min normal
    0x8080_0000,
    0x7F7F_FFFF, // max
    0xFF7F_FFFF,
    0x7F80_0000, // +inf
    0xFF80_0000, // -inf
    0x7FC0_0000, // qNaN
    0x7FA0_0001, // sNaN
    0xFFC1_2345, // negative qNaN with payload
    0x3F80_0000, // 1
    0xBF80_0000, // -1
    0x3F00_0000, // 0.5
    0x4B80_0001, // 2^24 + 2 (odd neighbourhood)
    0x3EAA_AAAB, // ~1/3
    0x4049_0FDB, // pi
    0xC2C8_0000, // -100
    0x3400_0001, // ~2^-23
    0x0040_0000, // denormal
    0x5F00_0000, // 2^63
];

/// f64 edge cases.
pub const F64_EDGES: [u64; 20] = [
    0,
    0x8000_0000_0000_0000,
    1,
    0x000F_FFFF_FFFF_FFFF,
    0x0010_0000_0000_0000,
    0x7FEF_FFFF_FFFF_FFFF,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x7FF8_0000_0000_0000,
    0x7FF4_0000_0000_0001,
    0x3FF0_0000_0000_0000,
    0xBFF0_0000_0000_0000,
    0x3FE0_0000_0000_0000,
    0x4340_0000_0000_0001,
    0x3FD5_5555_5555_5555,
    0x4009_21FB_5444_2D18,
    0xC059_0000_0000_0000,
    0x3CB0_0000_0000_0001,
    0x8008_0000_0000_0000,
    0x43E0_0000_0000_0000,
];

/// Distance in units of the last place between two finite f32 values of the same
/// sign (u32::MAX for NaN/sign mismatch).
pub fn ulp32(a: f32, b: f32) -> u32 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u32::MAX
        };
    }
    if a == b {
        return 0;
    }
    let key = |x: f32| {
        let b = x.to_bits() as i64;
        if b & 0x8000_0000 != 0 {
            -(b & 0x7FFF_FFFF)
        } else {
            b
        }
    };
    (key(a) - key(b)).unsigned_abs().min(u64::from(u32::MAX)) as u32
}

/// Same for f64.
pub fn ulp64(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if a == b {
        return 0;
    }
    let key = |x: f64| {
        let b = x.to_bits() as i128;
        if b & (1 << 63) != 0 {
            -(b & 0x7FFF_FFFF_FFFF_FFFF)
        } else {
            b
        }
    };
    (key(a) - key(b)).unsigned_abs().min(u128::from(u64::MAX)) as u64
}

/// f16 bits → f64, decoded from the IEEE binary16 definition.
pub fn h2d(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((h >> 10) & 0x1F);
    let m = f64::from(h & 0x3FF);
    match e {
        0 => sign * m * 2f64.powi(-24),
        31 if m == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// The f16 nearest to `x` (ties to even significand), found by searching the
/// sorted finite positive f16 values; overflow gives ∞ (≥ 65520).
pub fn d2h_ref(x: f64) -> u16 {
    if x.is_nan() {
        return 0x7E00;
    }
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a >= 65520.0 {
        return sign | 0x7C00;
    }
    // Positive finite f16 bit patterns 0..=0x7BFF are ordered by value.
    let (mut lo, mut hi) = (0u16, 0x7BFFu16);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if h2d(mid) <= a {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (dl, dh) = (a - h2d(lo), h2d(hi) - a);
    let pick = if dl < dh || (dl == dh && lo % 2 == 0) || a <= h2d(lo) {
        lo
    } else {
        hi
    };
    sign | pick
}

/// f32 value of an f16 (exact).
pub fn h2f(h: u16) -> f32 {
    h2d(h) as f32
}

/// A pair register as u64 in lane `l` (low dword in `r`).
pub fn pair(w: &Wave, r: usize, l: usize) -> u64 {
    u64::from(w.vgpr[r][l]) | u64::from(w.vgpr[r + 1][l]) << 32
}

/// Sets a VGPR pair per lane.
pub fn set_pair(w: &mut Wave, r: usize, v: &[u64; 64]) {
    for l in 0..64 {
        w.vgpr[r][l] = v[l] as u32;
        w.vgpr[r + 1][l] = (v[l] >> 32) as u32;
    }
}

/// Asserts that lanes outside `exec` of VGPR `r` still hold `sentinel`.
pub fn assert_untouched(w: &Wave, r: usize, exec: u64, sentinel: u32, what: &str) {
    for l in 0..64 {
        if (exec >> l) & 1 == 0 {
            assert_eq!(
                w.vgpr[r][l], sentinel,
                "{what}: inactive lane {l} was written"
            );
        }
    }
}

/// A mixed EXEC pattern used by the masking checks.
pub const EXEC_MIX: u64 = 0xF0F0_3C3C_0000_FFFF ^ 0x8000_0000_0000_0001;
