//! Transcendental and special-value operations: results against libm within the
//! ISA's ulp bounds (rcp/rsq/sqrt/exp/log/sin/cos: 1 ulp for f32), special cases
//! (±0, ±∞, NaN, negative inputs) exactly; fract/floor/ceil/trunc/rndne, frexp,
//! ldexp, `v_trig_preop_f64` against 2/π bits computed independently (Python
//! `decimal`), `v_cmp_class`, and `v_div_fixup` special cases.

#![allow(clippy::needless_range_loop, clippy::excessive_precision)]

mod common;
mod valu_util;

use valu_util::*;

fn f(b: u32) -> f32 {
    f32::from_bits(b)
}

#[test]
fn f32_transcendentals_within_one_ulp_and_exact_special_cases() {
    let mut r = Rng(4242);
    let pos: [u32; 64] = std::array::from_fn(|l| {
        if l < 8 {
            [
                0x0000_0000,
                0x8000_0000,
                0x7F80_0000,
                0xFF80_0000,
                0x7FC0_0000,
                0xBF80_0000,
                0x3F80_0000,
                0x0000_0010,
            ][l]
        } else {
            r.f32_mid() & 0x7FFF_FFFF
        }
    });
    let any: [u32; 64] = std::array::from_fn(|l| {
        if l < 8 {
            pos[l]
        } else {
            // Revolutions / exponents of moderate size.
            ((r.u32() % 20001) as f32 / 100.0 - 100.0).to_bits()
        }
    });
    let src = "v_rcp_f32_e32 v10, v1
v_rsq_f32_e32 v11, v1
v_sqrt_f32_e32 v12, v1
v_log_f32_e32 v13, v1
v_exp_f32_e32 v14, v2
v_sin_f32_e32 v15, v2
v_cos_f32_e32 v16, v2
v_rcp_iflag_f32_e32 v17, v1";
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = pos;
        w.vgpr[2] = any;
    });
    let tau = std::f64::consts::TAU;
    for l in 0..64 {
        let x = f(pos[l]);
        let y = f(any[l]);
        let xd = f64::from(x);
        let yd = f64::from(y);
        let checks: [(usize, f64, &str); 8] = [
            (10, 1.0 / xd, "rcp"),
            (11, 1.0 / xd.sqrt(), "rsq"),
            (12, xd.sqrt(), "sqrt"),
            (13, xd.log2(), "log"),
            (14, yd.exp2(), "exp"),
            (15, (tau * yd).sin(), "sin"),
            (16, (tau * yd).cos(), "cos"),
            (17, 1.0 / xd, "rcp_iflag"),
        ];
        for (reg, want, name) in checks {
            let got = f(w.vgpr[reg][l]);
            let want32 = want as f32;
            if want32.is_nan() {
                assert!(got.is_nan(), "{name}({x:e} / {y:e}) = {got:e}, want NaN");
            } else if want32.is_infinite() || want32 == 0.0 {
                assert_eq!(
                    got.to_bits(),
                    want32.to_bits(),
                    "{name}({x:e} / {y:e}) special case"
                );
            } else if name == "sin" || name == "cos" {
                // Absolute error bound near zero crossings (argument reduction of
                // 2π·x in f32 inputs is exact here, the bound is the host's).
                assert!(
                    (f64::from(got) - want).abs() <= 2e-7,
                    "{name}({y}) = {got}, want {want}"
                );
            } else {
                assert!(
                    ulp32(got, want32) <= 1,
                    "{name}({x:e} / {y:e}) = {got:e}, want {want32:e}"
                );
            }
        }
    }
    // Exact special values of the ISA.
    let lane = |reg: usize, l: usize| w.vgpr[reg][l];
    assert_eq!(lane(10, 0), 0x7F80_0000, "rcp(+0) = +inf");
    assert_eq!(lane(10, 1), 0xFF80_0000, "rcp(-0) = -inf");
    assert_eq!(lane(10, 2), 0, "rcp(+inf) = +0");
    assert_eq!(lane(11, 1), 0xFF80_0000, "rsq(-0) = -inf");
    assert!(f(lane(11, 5)).is_nan(), "rsq(-1) = NaN");
    assert_eq!(lane(12, 1), 0x8000_0000, "sqrt(-0) = -0");
    assert!(f(lane(12, 5)).is_nan(), "sqrt(-1) = NaN");
    assert_eq!(lane(13, 0), 0xFF80_0000, "log(+0) = -inf");
    assert_eq!(lane(13, 1), 0xFF80_0000, "log(-0) = -inf");
    assert!(f(lane(13, 5)).is_nan(), "log(-1) = NaN");
    assert_eq!(lane(13, 6), 0, "log(1) = +0");
    assert_eq!(lane(14, 3), 0, "exp(-inf) = +0");
    assert_eq!(lane(14, 2), 0x7F80_0000, "exp(+inf) = +inf");
    assert_eq!(lane(14, 1), 0x3F80_0000, "exp(-0) = 1");
    assert_eq!(lane(15, 1), 0x8000_0000, "sin(-0) = -0");
    assert!(f(lane(15, 2)).is_nan(), "sin(inf) = NaN");
    assert_eq!(lane(16, 0), 0x3F80_0000, "cos(0) = 1");
}

#[test]
fn sin_cos_take_revolutions() {
    let xs: [f32; 8] = [0.25, 0.5, 0.75, 1.0, -0.25, 0.125, 2.25, -1.5];
    let w = run(
        "v_sin_f32_e32 v10, v1\nv_cos_f32_e32 v11, v1",
        MODE_IEEE,
        |w| {
            for (l, x) in xs.iter().enumerate() {
                w.vgpr[1][l] = x.to_bits();
            }
        },
    );
    let sin_want = [
        1.0,
        0.0,
        -1.0,
        0.0,
        -1.0,
        std::f32::consts::FRAC_1_SQRT_2,
        1.0,
        0.0,
    ];
    let cos_want = [
        0.0,
        -1.0,
        0.0,
        1.0,
        0.0,
        std::f32::consts::FRAC_1_SQRT_2,
        0.0,
        -1.0,
    ];
    for l in 0..8 {
        assert!(
            (f(w.vgpr[10][l]) - sin_want[l]).abs() <= 1e-7,
            "sin(2π·{})",
            xs[l]
        );
        assert!(
            (f(w.vgpr[11][l]) - cos_want[l]).abs() <= 1e-7,
            "cos(2π·{})",
            xs[l]
        );
    }
}

#[test]
fn f64_transcendentals_and_rounding_ops() {
    let mut r = Rng(77);
    let a: [u64; 64] = std::array::from_fn(|l| {
        if l < F64_EDGES.len() {
            F64_EDGES[l]
        } else {
            ((r.next() % 2_000_000) as f64 / 1000.0 - 1000.0).to_bits()
        }
    });
    let src = "v_rcp_f64_e32 v[10:11], v[2:3]
v_sqrt_f64_e32 v[12:13], v[2:3]
v_rsq_f64_e32 v[14:15], v[2:3]
v_floor_f64_e32 v[16:17], v[2:3]
v_ceil_f64_e32 v[18:19], v[2:3]
v_trunc_f64_e32 v[20:21], v[2:3]
v_rndne_f64_e32 v[22:23], v[2:3]
v_fract_f64_e32 v[24:25], v[2:3]
v_frexp_mant_f64_e32 v[26:27], v[2:3]
v_frexp_exp_i32_f64_e32 v28, v[2:3]
v_ldexp_f64 v[30:31], v[2:3], v4";
    let e: [u32; 64] = lanes(|l| [0i32, 1, -1, 1000, -1100, 2100, -2100, 52][l % 8] as u32);
    let w = run(src, MODE_IEEE, |w| {
        set_pair(w, 2, &a);
        w.vgpr[4] = e;
    });
    let g = f64::from_bits;
    for l in 0..64 {
        let x = g(a[l]);
        let chk = |reg: usize, want: f64, name: &str, ulps: u64| {
            let got = g(pair(&w, reg, l));
            if want.is_nan() {
                assert!(got.is_nan(), "{name}({x:e}) = {got:e}");
            } else {
                assert!(
                    ulp64(got, want) <= ulps,
                    "{name}({x:e}) = {got:e}, want {want:e}"
                );
            }
        };
        chk(10, 1.0 / x, "rcp", 0);
        chk(12, x.sqrt(), "sqrt", 0);
        chk(14, 1.0 / x.sqrt(), "rsq", 1);
        chk(16, x.floor(), "floor", 0);
        chk(18, x.ceil(), "ceil", 0);
        chk(20, x.trunc(), "trunc", 0);
        chk(22, x.round_ties_even(), "rndne", 0);
        let fr = if !x.is_finite() {
            f64::NAN
        } else {
            (x - x.floor()).min(f64::from_bits(0x3FEF_FFFF_FFFF_FFFF))
        };
        chk(24, fr, "fract", 0);
        if x.is_finite() && x != 0.0 {
            let (m, ex) = (g(pair(&w, 26, l)), w.vgpr[28][l] as i32);
            assert!(
                (0.5..1.0).contains(&m.abs()),
                "frexp mantissa of {x:e} = {m}"
            );
            let back = if ex > 0 {
                m * 2.0 * 2f64.powi(ex - 1)
            } else {
                m * 2f64.powi(ex + 200) * 2f64.powi(-200)
            };
            assert_eq!(back, x, "frexp reassembles {x:e}");
        } else if !x.is_finite() {
            assert_eq!(w.vgpr[28][l], 0, "frexp_exp(inf) = 0");
        }
        // ldexp: exact scaling unless it over/underflows.
        let k = e[l] as i32;
        let want = if !x.is_finite() {
            x
        } else if x.is_nan() {
            f64::NAN
        } else {
            x * 2f64.powi(k.clamp(-1000, 1000)) * 2f64.powi(k - k.clamp(-1000, 1000))
        };
        if want.is_finite() && want.abs() >= f64::MIN_POSITIVE
            || want.is_infinite()
            || want.is_nan()
            || want == 0.0 && x == 0.0
        {
            chk(30, want, "ldexp", 0);
        }
    }
}

#[test]
fn fract_floor_frexp_ldexp_f32() {
    let xs: [u32; 16] = [
        0x0000_0000,
        0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0x3FC0_0000,
        0xBFC0_0000,
        0xB3A0_0000,
        0x0000_0003,
        0x4B80_0001,
        0x3F00_0000,
        0xBF00_0000,
        0x4040_0000,
        0xC0A0_0000,
        0x3EAA_AAAB,
        0x8040_0000,
    ];
    let src = "v_fract_f32_e32 v10, v1
v_floor_f32_e32 v11, v1
v_ceil_f32_e32 v12, v1
v_trunc_f32_e32 v13, v1
v_rndne_f32_e32 v14, v1
v_frexp_mant_f32_e32 v15, v1
v_frexp_exp_i32_f32_e32 v16, v1
v_ldexp_f32 v17, v1, v2";
    let ks: [i32; 16] = [
        3, -3, 1, 2, 0, -200, 100, 130, 5, -150, 127, -126, 300, -300, 20, -2,
    ];
    let w = run(src, MODE_IEEE, |w| {
        for l in 0..16 {
            w.vgpr[1][l] = xs[l];
            w.vgpr[2][l] = ks[l] as u32;
        }
    });
    for l in 0..16 {
        let x = f(xs[l]);
        let eq = |reg: usize, want: f32, name: &str| {
            let got = f(w.vgpr[reg][l]);
            if want.is_nan() {
                assert!(got.is_nan(), "{name}({x:e})");
            } else {
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{name}({x:e}) = {got:e}, want {want:e}"
                );
            }
        };
        let fr = if !x.is_finite() {
            f32::NAN
        } else {
            (x - x.floor()).min(f32::from_bits(0x3F7F_FFFF))
        };
        eq(10, fr, "fract");
        eq(11, x.floor(), "floor");
        eq(12, x.ceil(), "ceil");
        eq(13, x.trunc(), "trunc");
        eq(14, x.round_ties_even(), "rndne");
        if x.is_finite() && x != 0.0 {
            let m = f(w.vgpr[15][l]);
            let e = w.vgpr[16][l] as i32;
            assert!((0.5..1.0).contains(&m.abs()));
            assert_eq!(f64::from(m) * 2f64.powi(e), f64::from(x), "frexp of {x:e}");
        } else {
            eq(15, x, "frexp_mant of a special value is the value");
            assert_eq!(w.vgpr[16][l], 0, "frexp_exp of 0/inf/NaN");
        }
        // ldexp rounds once: compute exactly in f64 and round to f32.
        let want = if x.is_nan() {
            f32::NAN
        } else {
            (f64::from(x) * 2f64.powi(ks[l])) as f32
        };
        eq(17, want, "ldexp");
    }
}

#[test]
fn trig_preop_gives_bits_of_two_over_pi() {
    // Expected 53-bit segments of 2/π computed with Python's decimal module.
    let cases: [(u64, u32, u64, i32); 8] = [
        (0x3FF0_0000_0000_0000, 0, 0x145f306dc9c882, -53),
        (0x3FF0_0000_0000_0000, 1, 0x14a7f09d5f47d4, -106),
        (0x3FF0_0000_0000_0000, 2, 0x1a6ee06db14acc, -159),
        (0xC000_0000_0000_0000, 5, 0x91b8e909374b8, -318),
        // Biased exponent 1100 > 1077: the segment moves by 23 more bits.
        (1100u64 << 52, 0, 0x16e4e441529fc2, -76),
        (1100u64 << 52, 3, 0x20ff28b1d5ef5, -235),
        // Exponent ≥ 1968: scale is raised by 128.
        (2000u64 << 52, 0, 0x69e5fea2d7527, -848),
        (2000u64 << 52, 5, 0x18f60000000000, -1113),
    ];
    let w = run("v_trig_preop_f64 v[10:11], v[2:3], v4", MODE_IEEE, |w| {
        for (l, c) in cases.iter().enumerate() {
            w.vgpr[2][l] = c.0 as u32;
            w.vgpr[3][l] = (c.0 >> 32) as u32;
            w.vgpr[4][l] = c.1;
        }
    });
    for (l, (x, sel, m, scale)) in cases.iter().enumerate() {
        let want = (*m as f64) * 2f64.powi(scale / 2) * 2f64.powi(scale - scale / 2);
        assert_eq!(
            f64::from_bits(pair(&w, 10, l)),
            want,
            "trig_preop({:e}, {sel})",
            f64::from_bits(*x)
        );
    }
}

#[test]
fn cmp_class_bits() {
    // Mask bits: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0,
    // 7 +denormal, 8 +normal, 9 +inf.
    let vals: [(u32, u32); 10] = [
        (0x7FA0_0000, 0),
        (0x7FC0_0000, 1),
        (0xFF80_0000, 2),
        (0xC000_0000, 3),
        (0x8000_0001, 4),
        (0x8000_0000, 5),
        (0x0000_0000, 6),
        (0x0040_0000, 7),
        (0x3F80_0000, 8),
        (0x7F80_0000, 9),
    ];
    let d_vals: [u64; 10] = [
        0x7FF4_0000_0000_0000,
        0x7FF8_0000_0000_0000,
        0xFFF0_0000_0000_0000,
        0xC000_0000_0000_0000,
        0x8000_0000_0000_0001,
        0x8000_0000_0000_0000,
        0,
        0x0008_0000_0000_0000,
        0x3FF0_0000_0000_0000,
        0x7FF0_0000_0000_0000,
    ];
    let h_vals: [u32; 10] = [
        0x7D00, 0x7E00, 0xFC00, 0xC000, 0x8001, 0x8000, 0, 0x0200, 0x3C00, 0x7C00,
    ];
    let src = "v_cmp_class_f32_e64 s[10:11], v1, v2
v_cmp_class_f64_e64 s[12:13], v[4:5], v2
v_cmp_class_f16_e64 s[14:15], v3, v2
v_cmp_class_f32_e64 s[16:17], -v1, v2
v_cmpx_class_f32_e64 s[18:19], v1, v6";
    // Lane 10k + j tests value k against the single-bit mask j.
    let w = run(src, MODE_IEEE, |w| {
        for k in 0..6 {
            for j in 0..10 {
                let l = 10 * k + j;
                let v = (k + j) % 10; // value index
                w.vgpr[1][l] = vals[v].0;
                w.vgpr[3][l] = h_vals[v];
                w.vgpr[4][l] = d_vals[v] as u32;
                w.vgpr[5][l] = (d_vals[v] >> 32) as u32;
                w.vgpr[2][l] = 1 << j;
                w.vgpr[6][l] = 0x3FF & !(1 << v);
            }
        }
    });
    let m = |s: usize| u64::from(w.sgpr[s]) | u64::from(w.sgpr[s + 1]) << 32;
    let mut want = 0u64;
    let mut want_neg = 0u64;
    for k in 0..6 {
        for j in 0..10 {
            let l = 10 * k + j;
            let v = (k + j) % 10;
            if vals[v].1 == j as u32 {
                want |= 1 << l;
            }
            // -x: class mirrors sign (NaNs keep their class).
            let neg_class = match vals[v].1 {
                c @ 0..=1 => c,
                c => 11 - c,
            };
            if neg_class == j as u32 {
                want_neg |= 1 << l;
            }
        }
    }
    assert_eq!(m(10), want, "class f32");
    assert_eq!(m(12), want, "class f64");
    assert_eq!(m(14), want, "class f16");
    assert_eq!(m(16), want_neg, "class of -x");
    assert_eq!(m(18), 0, "cmpx with the complementary mask: no lane");
    assert_eq!(w.exec(), 0, "cmpx writes EXEC");
}

#[test]
fn div_fixup_special_cases() {
    // (quotient estimate, denominator, numerator) -> expected.
    let inf = f32::INFINITY;
    let cases: [(f32, f32, f32, f32); 10] = [
        (1.0, 0.0, 0.0, f32::NAN),
        (1.0, inf, -inf, f32::NAN),
        (1.0, 0.0, 3.0, inf),
        (1.0, -0.0, 3.0, -inf),
        (1.0, 2.0, -inf, -inf),
        (1.0, -inf, 3.0, -0.0),
        (1.0, 5.0, 0.0, 0.0),
        (2.5, -2.0, 5.0, -2.5),
        (f32::NAN, 1e-30, 1e30, inf),
        (7.0, f32::NAN, 1.0, f32::NAN),
    ];
    let w = run("v_div_fixup_f32 v10, v1, v2, v3", MODE_IEEE, |w| {
        for (l, c) in cases.iter().enumerate() {
            w.vgpr[1][l] = c.0.to_bits();
            w.vgpr[2][l] = c.1.to_bits();
            w.vgpr[3][l] = c.2.to_bits();
        }
    });
    for (l, c) in cases.iter().enumerate() {
        let got = f(w.vgpr[10][l]);
        if c.3.is_nan() {
            assert!(got.is_nan(), "fixup{c:?}");
        } else {
            assert_eq!(got.to_bits(), c.3.to_bits(), "fixup{c:?}");
        }
    }
}

#[test]
fn f16_transcendentals() {
    let hs: [u16; 16] = [
        0x0000, 0x8000, 0x7C00, 0xFC00, 0x3C00, 0xBC00, 0x3800, 0x4900, 0x2E66, 0x5640, 0x0001,
        0x7BFF, 0x3555, 0xC500, 0x1400, 0x4248,
    ];
    let src = "v_rcp_f16_e32 v10, v1
v_sqrt_f16_e32 v11, v1
v_rsq_f16_e32 v12, v1
v_log_f16_e32 v13, v1
v_exp_f16_e32 v14, v1
v_sin_f16_e32 v15, v1
v_floor_f16_e32 v16, v1
v_fract_f16_e32 v17, v1";
    let w = run(src, MODE_IEEE, |w| {
        for l in 0..16 {
            w.vgpr[1][l] = u32::from(hs[l]) | 0xFFFF_0000;
        }
    });
    for l in 0..16 {
        let x = h2d(hs[l]);
        let fns: [(usize, f64, &str); 8] = [
            (10, 1.0 / x, "rcp"),
            (11, x.sqrt(), "sqrt"),
            (12, 1.0 / x.sqrt(), "rsq"),
            (13, x.log2(), "log"),
            (14, x.exp2(), "exp"),
            (15, (std::f64::consts::TAU * x).sin(), "sin"),
            (16, x.floor(), "floor"),
            (
                17,
                if !x.is_finite() {
                    f64::NAN
                } else {
                    (x - x.floor()).min(h2d(0x3BFF))
                },
                "fract",
            ),
        ];
        for (reg, want, name) in fns {
            let got = w.vgpr[reg][l];
            assert_eq!(got >> 16, 0, "{name}: high half zeroed");
            let g = h2d(got as u16);
            if want.is_nan() {
                assert!(g.is_nan(), "{name}({x})");
                continue;
            }
            let w16 = d2h_ref(want);
            let ulps = (i32::from(got as u16 & 0x7FFF) - i32::from(w16 & 0x7FFF)).abs();
            let tol = if name == "sin" { 2 } else { 1 };
            assert!(
                (got as u16 & 0x8000) == (w16 & 0x8000) && ulps <= tol
                    || (g == 0.0 && h2d(w16).abs() < 1e-3),
                "{name}({x}) = {g} ({got:#x}), want {} ({w16:#x})",
                h2d(w16)
            );
        }
    }
}
