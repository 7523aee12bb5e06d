//! f32 / f64 / f16 arithmetic against host IEEE arithmetic (`mul_add` for fused
//! ops), with edge cases: signed zeros, denormals in both denormal modes, infinities,
//! NaN propagation and quieting, overflow, ties; modifiers (neg/abs/clamp/omod);
//! IEEE-mode min/max; the LLVM 16 f32/f64 division sequence against host division.

#![allow(clippy::needless_range_loop, clippy::excessive_precision)]

mod common;
mod valu_util;

use valu_util::*;

const SENT: u32 = 0x1234_5678;

/// Lane inputs: pairs of edge cases (all combinations over 4 runs) and random values.
fn f32_inputs(seed: u64) -> [[u32; 64]; 3] {
    let mut r = Rng(seed);
    let mut out = [[0u32; 64]; 3];
    for l in 0..64 {
        let n = F32_EDGES.len();
        let k = (seed as usize * 64 + l) % (n * n);
        out[0][l] = if l % 4 == 3 {
            r.f32_mid()
        } else {
            F32_EDGES[k / n]
        };
        out[1][l] = if l % 4 == 2 {
            r.f32_mid()
        } else {
            F32_EDGES[k % n]
        };
        out[2][l] = if l % 3 == 0 {
            F32_EDGES[(l * 5) % n]
        } else {
            r.f32_mid()
        };
    }
    out
}

/// Compares an f32 result with the host's: NaN-ness (result quiet), else exact bits.
fn same32(got: u32, want: f32, what: &str) {
    let g = f32::from_bits(got);
    if want.is_nan() {
        assert!(g.is_nan(), "{what}: got {g:e} ({got:#x}), want NaN");
        assert!(
            got & 0x0040_0000 != 0,
            "{what}: NaN result {got:#x} must be quiet"
        );
    } else {
        assert_eq!(got, want.to_bits(), "{what}: got {g:e}, want {want:e}");
    }
}

fn same64(got: u64, want: f64, what: &str) {
    let g = f64::from_bits(got);
    if want.is_nan() {
        assert!(g.is_nan(), "{what}: got {g:e}, want NaN");
        assert!(got & (1 << 51) != 0, "{what}: NaN result must be quiet");
    } else {
        assert_eq!(got, want.to_bits(), "{what}: got {g:e}, want {want:e}");
    }
}

fn f(b: u32) -> f32 {
    f32::from_bits(b)
}

/// IEEE-mode minimum per the ISA: a signalling NaN operand gives a quiet NaN, a quiet
/// NaN operand yields the other operand, −0 < +0.
fn min_ref(a: f32, b: f32) -> f32 {
    let snan = |x: f32| x.is_nan() && x.to_bits() & 0x0040_0000 == 0;
    if snan(a) || snan(b) {
        return f32::NAN;
    }
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return if a.is_sign_negative() { a } else { b };
    }
    a.min(b)
}

fn max_ref(a: f32, b: f32) -> f32 {
    let snan = |x: f32| x.is_nan() && x.to_bits() & 0x0040_0000 == 0;
    if snan(a) || snan(b) {
        return f32::NAN;
    }
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return if a.is_sign_negative() { b } else { a };
    }
    a.max(b)
}

#[test]
fn f32_arithmetic_matches_host_over_edge_cases() {
    let src = "v_add_f32_e32 v10, v1, v2
v_sub_f32_e32 v11, v1, v2
v_subrev_f32_e32 v12, v1, v2
v_mul_f32_e32 v13, v1, v2
v_fma_f32 v14, v1, v2, v3
v_min_f32_e32 v15, v1, v2
v_max_f32_e32 v16, v1, v2
v_mov_b32_e32 v17, v3
v_fmac_f32_e32 v17, v1, v2
v_mul_legacy_f32 v18, v1, v2
v_med3_f32 v19, v1, v2, v3";
    for seed in 0..9 {
        let [a, b, c] = f32_inputs(seed);
        let w = run(src, MODE_IEEE, |w| {
            w.vgpr[1] = a;
            w.vgpr[2] = b;
            w.vgpr[3] = c;
            for r in 10..20 {
                w.vgpr[r] = [SENT; 64];
            }
            w.set_exec(EXEC_MIX);
        });
        for l in 0..64 {
            if (EXEC_MIX >> l) & 1 == 0 {
                continue;
            }
            let (x, y, z) = (f(a[l]), f(b[l]), f(c[l]));
            let what = |op: &str| {
                format!(
                    "{op}({x:e} [{:#x}], {y:e} [{:#x}], {z:e}) lane {l}",
                    a[l], b[l]
                )
            };
            same32(w.vgpr[10][l], x + y, &what("add"));
            same32(w.vgpr[11][l], x - y, &what("sub"));
            same32(w.vgpr[12][l], y - x, &what("subrev"));
            same32(w.vgpr[13][l], x * y, &what("mul"));
            same32(w.vgpr[14][l], x.mul_add(y, z), &what("fma"));
            same32(w.vgpr[15][l], min_ref(x, y), &what("min"));
            same32(w.vgpr[16][l], max_ref(x, y), &what("max"));
            same32(w.vgpr[17][l], x.mul_add(y, z), &what("fmac"));
            let legacy = if x == 0.0 || y == 0.0 { 0.0 } else { x * y };
            same32(w.vgpr[18][l], legacy, &what("mul_legacy"));
            let med = if x.is_nan() || y.is_nan() || z.is_nan() {
                min_ref(min_ref(x, y), z)
            } else {
                let mut v = [x, y, z];
                v.sort_by(|p, q| p.partial_cmp(q).unwrap());
                v[1]
            };
            if !(med == 0.0 && f(w.vgpr[19][l]) == 0.0) {
                same32(w.vgpr[19][l], med, &what("med3"));
            }
            // NaN propagation: a NaN input comes back quieted, payload kept.
            if x.is_nan() && !y.is_nan() {
                assert_eq!(w.vgpr[10][l], a[l] | 0x0040_0000, "{}", what("NaN payload"));
            }
        }
        for r in 10..20 {
            assert_untouched(&w, r, EXEC_MIX, SENT, "f32 op");
        }
    }
}

#[test]
fn invalid_operations_give_the_default_quiet_nan() {
    let w = run(
        "v_sub_f32_e32 v10, v1, v1\nv_mul_f32_e32 v11, 0, v1\nv_sqrt_f32_e32 v12, v2",
        MODE_IEEE,
        |w| {
            w.vgpr[1] = [0x7F80_0000; 64];
            w.vgpr[2] = [0xBF80_0000; 64];
        },
    );
    assert_eq!(w.vgpr[10][0], 0x7FC0_0000, "inf - inf");
    assert_eq!(w.vgpr[11][0], 0x7FC0_0000, "0 * inf");
    assert_eq!(w.vgpr[12][0], 0x7FC0_0000, "sqrt(-1)");
}

#[test]
fn mad_and_mac_f32_are_unfused_and_flush_denormals() {
    let mut r = Rng(77);
    let a: [u32; 64] = std::array::from_fn(|_| r.f32_mid());
    let b: [u32; 64] = std::array::from_fn(|_| r.f32_mid());
    let mut c: [u32; 64] = std::array::from_fn(|_| r.f32_mid());
    // Lanes whose product is denormal, or whose addend is denormal.
    let mut a2 = a;
    let mut b2 = b;
    a2[0] = 0x0080_0000; // min normal
    b2[0] = 0x3F00_0000; // 0.5 -> product denormal
    c[0] = 0;
    c[1] = 0x0000_0100; // denormal addend
    let src = "v_mad_f32 v10, v1, v2, v3\nv_mov_b32_e32 v11, v3\nv_mac_f32_e32 v11, v1, v2\nv_madmk_f32 v12, v1, 0x3fc00000, v3\nv_madak_f32 v13, v1, v2, 0x3fc00000";
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = a2;
        w.vgpr[2] = b2;
        w.vgpr[3] = c;
    });
    let ftz = |x: f32| {
        if x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    let mad = |x: f32, y: f32, z: f32| ftz(ftz(ftz(x) * ftz(y)) + ftz(z));
    for l in 0..64 {
        let (x, y, z) = (f(a2[l]), f(b2[l]), f(c[l]));
        same32(w.vgpr[10][l], mad(x, y, z), "v_mad_f32");
        same32(w.vgpr[11][l], mad(x, y, z), "v_mac_f32");
        same32(w.vgpr[12][l], mad(x, 1.5, z), "v_madmk_f32");
        same32(w.vgpr[13][l], mad(x, y, 1.5), "v_madak_f32");
    }
    assert_eq!(w.vgpr[10][0], 0, "denormal product flushed");
    // Somewhere the unfused result differs from the fused one (proves no fusion).
    let differs = (0..64).any(|l| {
        let (x, y, z) = (f(a2[l]), f(b2[l]), f(c[l]));
        (x * y + z).to_bits() != x.mul_add(y, z).to_bits()
    });
    assert!(differs, "test inputs should distinguish fused from unfused");
}

#[test]
fn denormal_modes_flush_inputs_and_outputs_as_mode_says() {
    // v10 = denorm + 0 (input flush visible); v11 = min_normal * 0.5 (output denormal).
    let src = "v_add_f32_e32 v10, 0, v1\nv_mul_f32_e32 v11, 0.5, v2\nv_add_f64 v[12:13], v[4:5], 0\nv_mul_f64 v[14:15], 0.5, v[6:7]\nv_min_f32_e32 v16, v1, v1";
    let den32 = 0x0000_1234u32;
    let den64 = 0x0000_0000_0000_1234u64;
    for fp_denorm in 0u32..4 {
        let mode = (MODE_IEEE & !0xF0) | fp_denorm << 4 | fp_denorm << 6;
        let w = run(src, mode, |w| {
            w.vgpr[1] = [den32 | 0x8000_0000; 64];
            w.vgpr[2] = [0x0080_0000; 64];
            set_pair(w, 4, &[den64; 64]);
            set_pair(w, 6, &[0x0010_0000_0000_0000; 64]);
        });
        let keep_in = fp_denorm & 1 == 1;
        let keep_out = fp_denorm & 2 == 2;
        // 0 + (-denormal): a flushed input gives +0 + -0 = +0; a flushed output keeps
        // the sign (-0).
        let want10 = match (keep_in, keep_out) {
            (true, true) => den32 | 0x8000_0000,
            (true, false) => 0x8000_0000,
            _ => 0,
        };
        assert_eq!(w.vgpr[10][0], want10, "f32 add, FP_DENORM={fp_denorm}");
        let want11 = if keep_out { 0x0040_0000 } else { 0 };
        assert_eq!(
            w.vgpr[11][0], want11,
            "f32 denormal result, FP_DENORM={fp_denorm}"
        );
        let want12 = if keep_in && keep_out { den64 } else { 0 };
        assert_eq!(pair(&w, 12, 0), want12, "f64 add, FP_DENORM={fp_denorm}");
        let want14 = if keep_out { 0x0008_0000_0000_0000 } else { 0 };
        assert_eq!(pair(&w, 14, 0), want14, "f64 denormal result");
        let want16 = if keep_in && keep_out {
            den32 | 0x8000_0000
        } else {
            0x8000_0000
        };
        assert_eq!(w.vgpr[16][0], want16, "min flushes too");
    }
}

#[test]
fn modifiers_neg_abs_clamp_omod() {
    let mut r = Rng(5);
    let a: [u32; 64] = lanes(|l| if l < 8 { F32_EDGES[l + 9] } else { 0 });
    let a: [u32; 64] = std::array::from_fn(|l| if l < 8 { a[l] } else { r.f32_mid() });
    let b: [u32; 64] = std::array::from_fn(|_| r.f32_mid() & 0x8FFF_FFFF);
    let src = "v_add_f32_e64 v10, -|v1|, v2 clamp mul:2
v_mul_f32_e64 v11, |v1|, -v2 div:2
v_add_f32_e64 v12, v1, v2 mul:4
v_fma_f32 v13, -v1, |v2|, -v2 clamp
v_add_f64 v[14:15], -v[4:5], |v[6:7]| mul:2
v_add_f32_e64 v16, v1, v2 clamp";
    let a64: [u64; 64] = lanes(|l| f64::from(f(a[l])).to_bits());
    let b64: [u64; 64] = lanes(|l| f64::from(f(b[l])).to_bits());
    for dx10 in [true, false] {
        let mode = if dx10 { MODE_IEEE } else { MODE_IEEE & !0x100 };
        let w = run(src, mode, |w| {
            w.vgpr[1] = a;
            w.vgpr[2] = b;
            set_pair(w, 4, &a64);
            set_pair(w, 6, &b64);
        });
        let clamp = |v: f32| {
            if v.is_nan() {
                if dx10 {
                    0.0
                } else {
                    v
                }
            } else {
                v.clamp(0.0, 1.0).max(0.0) + 0.0
            }
        };
        for l in 0..64 {
            let (x, y) = (f(a[l]), f(b[l]));
            same32(
                w.vgpr[10][l],
                clamp((-x.abs() + y) * 2.0),
                "neg abs clamp mul:2",
            );
            same32(w.vgpr[11][l], (x.abs() * -y) * 0.5, "abs neg div:2");
            same32(w.vgpr[12][l], (x + y) * 4.0, "mul:4");
            same32(
                w.vgpr[13][l],
                clamp((-x).mul_add(y.abs(), -y)),
                "fma with clamp",
            );
            let (xd, yd) = (f64::from(x), f64::from(y));
            same64(pair(&w, 14, l), (-xd + yd.abs()) * 2.0, "f64 omod");
            same32(w.vgpr[16][l], clamp(x + y), "clamp");
        }
    }
}

#[test]
fn f64_arithmetic_matches_host() {
    let mut r = Rng(11);
    let n = F64_EDGES.len();
    let gen = |r: &mut Rng| {
        let v = r.next();
        (v & 0x800F_FFFF_FFFF_FFFF) | ((900 + (v >> 52) % 250) << 52)
    };
    let a: [u64; 64] = std::array::from_fn(|l| {
        if l < 40 {
            F64_EDGES[l % n]
        } else {
            gen(&mut r)
        }
    });
    let b: [u64; 64] = std::array::from_fn(|l| {
        if l < 40 {
            F64_EDGES[(l * 7 + 3) % n]
        } else {
            gen(&mut r)
        }
    });
    let c: [u64; 64] = std::array::from_fn(|l| {
        if l % 5 == 0 {
            F64_EDGES[(l * 3) % n]
        } else {
            gen(&mut r)
        }
    });
    let src = "v_add_f64 v[10:11], v[2:3], v[4:5]
v_mul_f64 v[12:13], v[2:3], v[4:5]
v_fma_f64 v[14:15], v[2:3], v[4:5], v[6:7]
v_min_f64 v[16:17], v[2:3], v[4:5]
v_max_f64 v[18:19], v[2:3], v[4:5]
v_add_f64 v[20:21], v[2:3], -v[4:5]
v_mov_b32_e32 v22, v6
v_mov_b32_e32 v23, v7
v_fmac_f64_e32 v[22:23], v[2:3], v[4:5]";
    let w = run(src, MODE_IEEE, |w| {
        set_pair(w, 2, &a);
        set_pair(w, 4, &b);
        set_pair(w, 6, &c);
    });
    let g = f64::from_bits;
    for l in 0..64 {
        let (x, y, z) = (g(a[l]), g(b[l]), g(c[l]));
        let what = format!("lane {l}: {x:e} {y:e} {z:e}");
        same64(pair(&w, 10, l), x + y, &format!("add {what}"));
        same64(pair(&w, 12, l), x * y, &format!("mul {what}"));
        same64(pair(&w, 14, l), x.mul_add(y, z), &format!("fma {what}"));
        same64(pair(&w, 20, l), x - y, &format!("sub {what}"));
        same64(pair(&w, 22, l), x.mul_add(y, z), &format!("fmac {what}"));
        let (mn, mx) = (g(pair(&w, 16, l)), g(pair(&w, 18, l)));
        let snan = |v: f64| v.is_nan() && v.to_bits() & (1 << 51) == 0;
        if snan(x) || snan(y) {
            assert!(mn.is_nan() && mx.is_nan(), "{what}");
        } else if x.is_nan() || y.is_nan() {
            let other = if x.is_nan() { y } else { x };
            same64(mn.to_bits(), other, &what);
            same64(mx.to_bits(), other, &what);
        } else if x != y {
            assert_eq!(mn, x.min(y), "{what}");
            assert_eq!(mx, x.max(y), "{what}");
        }
    }
}

/// LLVM 16's f32 division sequence for gfx90a (from clang-16 -O2 output).
const FDIV32: &str = "v_div_scale_f32 v2, s[4:5], v1, v1, v0
v_rcp_f32_e32 v3, v2
v_div_scale_f32 v4, vcc, v0, v1, v0
v_fma_f32 v5, -v2, v3, 1.0
v_fmac_f32_e32 v3, v5, v3
v_mul_f32_e32 v5, v4, v3
v_fma_f32 v6, -v2, v5, v4
v_fmac_f32_e32 v5, v6, v3
v_fma_f32 v2, -v2, v5, v4
v_div_fmas_f32 v2, v2, v3, v5
v_div_fixup_f32 v10, v2, v1, v0";

/// LLVM 16's f64 division sequence for gfx90a.
const FDIV64: &str = "v_div_scale_f64 v[4:5], s[4:5], v[2:3], v[2:3], v[0:1]
v_rcp_f64_e32 v[6:7], v[4:5]
v_div_scale_f64 v[8:9], vcc, v[0:1], v[2:3], v[0:1]
v_fma_f64 v[10:11], -v[4:5], v[6:7], 1.0
v_fmac_f64_e32 v[6:7], v[6:7], v[10:11]
v_fma_f64 v[10:11], -v[4:5], v[6:7], 1.0
v_fmac_f64_e32 v[6:7], v[6:7], v[10:11]
v_mul_f64 v[10:11], v[8:9], v[6:7]
v_fma_f64 v[4:5], -v[4:5], v[10:11], v[8:9]
v_div_fmas_f64 v[4:5], v[4:5], v[6:7], v[10:11]
v_div_fixup_f64 v[20:21], v[4:5], v[2:3], v[0:1]";

#[test]
fn f32_division_sequence_is_correctly_rounded() {
    let mut r = Rng(99);
    for round in 0..12u32 {
        let n = F32_EDGES.len();
        let num: [u32; 64] = std::array::from_fn(|l| match (round, l % 4) {
            (0..=8, 0) => F32_EDGES[(round as usize * 16 + l) % n],
            (_, 1) => r.u32(),
            _ => r.f32_mid(),
        });
        let den: [u32; 64] = std::array::from_fn(|l| match (round, l % 4) {
            (0..=8, 0 | 2) => F32_EDGES[(round as usize * 7 + l / 2) % n],
            (_, 1) => r.u32(),
            _ => r.f32_mid(),
        });
        let w = run(FDIV32, MODE_IEEE, |w| {
            w.vgpr[0] = num;
            w.vgpr[1] = den;
        });
        for l in 0..64 {
            let (x, y) = (f(num[l]), f(den[l]));
            same32(
                w.vgpr[10][l],
                x / y,
                &format!("{x:e} / {y:e} ({:#x}/{:#x})", num[l], den[l]),
            );
        }
    }
}

#[test]
fn f32_division_of_extreme_ranges() {
    // Quotients that overflow, underflow into denormals, huge/tiny operands.
    let pairs: [(f32, f32); 16] = [
        (f32::MAX, 0.5),
        (f32::MAX, 1e-30),
        (1.0, f32::MAX),
        (1e-30, 1e30),
        (1e-38, 3.0),
        (f32::from_bits(0x0000_0003), 3.0),
        (f32::from_bits(0x0000_0001), f32::from_bits(0x0000_0002)),
        (3.0, f32::from_bits(0x0000_0007)),
        (1e38, 1e-5),
        (2.5e-40, 1e10),
        (1.0, 3.0),
        (7.0, f32::MAX),
        (f32::MIN_POSITIVE, 3.0),
        (f32::MIN_POSITIVE * 3.0, 0.75),
        (-6.0e-39, 1.7e38),
        (1.5e-45, -1e-44),
    ];
    let w = run(FDIV32, MODE_IEEE, |w| {
        for (l, (x, y)) in pairs.iter().enumerate() {
            w.vgpr[0][l] = x.to_bits();
            w.vgpr[1][l] = y.to_bits();
        }
    });
    for (l, (x, y)) in pairs.iter().enumerate() {
        same32(w.vgpr[10][l], x / y, &format!("{x:e} / {y:e}"));
    }
}

#[test]
fn f64_division_sequence_is_correctly_rounded() {
    let mut r = Rng(1234);
    let n = F64_EDGES.len();
    for round in 0..6usize {
        let num: [u64; 64] = std::array::from_fn(|l| {
            if l % 3 == 0 {
                F64_EDGES[(round * 11 + l) % n]
            } else {
                r.next()
            }
        });
        let den: [u64; 64] = std::array::from_fn(|l| {
            if l % 4 == 0 {
                F64_EDGES[(round * 5 + l / 4) % n]
            } else {
                r.next()
            }
        });
        let w = run(FDIV64, MODE_IEEE, |w| {
            set_pair(w, 0, &num);
            set_pair(w, 2, &den);
        });
        for l in 0..64 {
            let (x, y) = (f64::from_bits(num[l]), f64::from_bits(den[l]));
            let q = x / y;
            // Quotients in the f64 denormal range may round twice in v_div_fmas_f64.
            if q != 0.0 && q.abs() < f64::MIN_POSITIVE {
                assert!(ulp64(f64::from_bits(pair(&w, 20, l)), q) <= 1);
                continue;
            }
            same64(pair(&w, 20, l), q, &format!("{x:e} / {y:e}"));
        }
    }
}

/// Random f16 of magnitude 2^-6 .. 2^6 (so that a·b + c is exact in f64).
fn h16_mid(r: &mut Rng) -> u16 {
    let v = r.u32();
    let e = 9 + (v >> 10) % 13;
    ((v & 0x83FF) | (e << 10)) as u16
}

#[test]
fn f16_arithmetic_rounds_once() {
    let mut r = Rng(42);
    let edges: [u16; 12] = [
        0, 0x8000, 1, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x3C00, 0x3555, 0x7E00, 0xC000,
    ];
    let a: [u32; 64] = std::array::from_fn(|l| {
        let lo = if l < 12 { edges[l] } else { h16_mid(&mut r) };
        u32::from(lo) | 0xABCD_0000
    });
    let b: [u32; 64] = std::array::from_fn(|l| {
        u32::from(if (12..24).contains(&l) {
            edges[l - 12]
        } else {
            h16_mid(&mut r)
        })
    });
    let c: [u32; 64] = std::array::from_fn(|_| u32::from(h16_mid(&mut r)));
    let src = "v_add_f16_e32 v10, v1, v2
v_mul_f16_e32 v11, v1, v2
v_sub_f16_e32 v12, v1, v2
v_fma_f16 v13, v1, v2, v3
v_mad_f16 v14, v1, v2, v3
v_max_f16_e32 v15, v1, v2
v_fma_f16 v16, v1, v2, v3 op_sel:[0,0,0,1]
v_mov_b32_e32 v17, v3
v_mac_f16_e32 v17, v1, v2
v_add_f16_e32 v18, 1.0, v2";
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = a;
        w.vgpr[2] = b;
        w.vgpr[3] = c;
        for k in 10..19 {
            w.vgpr[k] = [SENT; 64];
        }
    });
    let chk = |got: u32, want: u16, what: &str| {
        if h2d(want).is_nan() {
            assert!(h2d(got as u16).is_nan(), "{what}: got {got:#x}");
        } else {
            assert_eq!(got, u32::from(want), "{what}: got {got:#x} want {want:#x}");
        }
    };
    for l in 0..64 {
        let (x, y, z) = (h2d(a[l] as u16), h2d(b[l] as u16), h2d(c[l] as u16));
        let what = |op: &str| format!("{op} lane {l}: {x:e} {y:e} {z:e}");
        // VOP1/VOP2 16-bit results zero the high half on GFX9.
        chk(w.vgpr[10][l], d2h_ref(x + y), &what("add"));
        chk(w.vgpr[11][l], d2h_ref(x * y), &what("mul"));
        chk(w.vgpr[12][l], d2h_ref(x - y), &what("sub"));
        if l >= 24 {
            // v_fma_f16 keeps the high half of VDST (GFX9 op_sel form).
            chk(w.vgpr[13][l] & 0xFFFF, d2h_ref(x * y + z), &what("fma"));
            assert_eq!(
                w.vgpr[13][l] >> 16,
                SENT >> 16,
                "{}",
                what("fma keeps high half")
            );
            let p = h2d(d2h_ref(x * y));
            chk(
                w.vgpr[14][l] & 0xFFFF,
                d2h_ref(p + z),
                &what("mad (unfused)"),
            );
            assert_eq!(
                w.vgpr[16][l] >> 16,
                u32::from(d2h_ref(x * y + z)),
                "{}",
                what("fma op_sel dst hi")
            );
            assert_eq!(w.vgpr[16][l] & 0xFFFF, SENT & 0xFFFF);
            chk(w.vgpr[17][l] & 0xFFFF, d2h_ref(p + z), &what("mac"));
            chk(w.vgpr[15][l], d2h_ref(x.max(y)), &what("max"));
        }
        chk(
            w.vgpr[18][l],
            d2h_ref(1.0 + y),
            &what("inline constant 1.0 is the f16 pattern"),
        );
    }
}
