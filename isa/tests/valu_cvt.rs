//! Conversions against Rust `as` casts plus the ISA's rules: float → int truncates
//! and saturates, NaN → 0; int → float rounds to nearest even; f16 conversions round
//! once (reference: a search over all f16 values); packing conversions.

#![allow(clippy::needless_range_loop)]

mod common;
mod valu_util;

use valu_util::*;

const SENT: u32 = 0xCAFE_F00D;

fn f(b: u32) -> f32 {
    f32::from_bits(b)
}

#[test]
fn f32_and_f64_integer_conversions() {
    let mut r = Rng(8);
    let fin: [u32; 64] = std::array::from_fn(|l| {
        if l < F32_EDGES.len() {
            F32_EDGES[l]
        } else if l % 2 == 0 {
            (r.f32_mid() & 0x8FFF_FFFF) | 0x4000_0000 // up to ~2^34
        } else {
            // Values near .5 to exercise rounding of cvt_rpi.
            ((r.u32() % 2000) as f32 * 0.5 - 500.0).to_bits()
        }
    });
    let ints: [u32; 64] = std::array::from_fn(|l| match l % 4 {
        0 => r.u32(),
        1 => (1 << 24) + 1 + 2 * (r.u32() % 1000), // not representable: rounding ties
        2 => [0, 1, u32::MAX, 0x8000_0000, 0x7FFF_FFFF, 0xFFFF_FF80][l / 4 % 6],
        _ => r.u32() >> (r.u32() % 32),
    });
    let d: [u64; 64] = lanes(|l| {
        if l < F64_EDGES.len() {
            F64_EDGES[l]
        } else {
            (f64::from(f(fin[l])) * 1024.0 + 0.25).to_bits()
        }
    });
    let src = "v_cvt_i32_f32_e32 v10, v1
v_cvt_u32_f32_e32 v11, v1
v_cvt_f32_i32_e32 v12, v2
v_cvt_f32_u32_e32 v13, v2
v_cvt_rpi_i32_f32_e32 v14, v1
v_cvt_flr_i32_f32_e32 v15, v1
v_cvt_i32_f64_e32 v16, v[4:5]
v_cvt_u32_f64_e32 v17, v[4:5]
v_cvt_f64_i32_e32 v[18:19], v2
v_cvt_f64_u32_e32 v[20:21], v2
v_cvt_f32_f64_e32 v22, v[4:5]
v_cvt_f64_f32_e32 v[24:25], v1
v_cvt_f32_ubyte0_e32 v26, v2
v_cvt_f32_ubyte3_e32 v27, v2
v_cvt_off_f32_i4_e32 v28, v2";
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = fin;
        w.vgpr[2] = ints;
        set_pair(w, 4, &d);
        for k in 10..30 {
            w.vgpr[k] = [SENT; 64];
        }
        w.set_exec(EXEC_MIX);
    });
    for l in 0..64 {
        if (EXEC_MIX >> l) & 1 == 0 {
            continue;
        }
        let x = f(fin[l]);
        let y = f64::from_bits(d[l]);
        let what = format!("lane {l}: {x:e} / {y:e} / {:#x}", ints[l]);
        // Rust's `as` truncates toward zero, saturates and maps NaN to 0: the ISA rule.
        assert_eq!(w.vgpr[10][l], x as i32 as u32, "cvt_i32_f32 {what}");
        assert_eq!(w.vgpr[11][l], x as u32, "cvt_u32_f32 {what}");
        assert_eq!(
            w.vgpr[12][l],
            (ints[l] as i32 as f32).to_bits(),
            "cvt_f32_i32 {what}"
        );
        assert_eq!(
            w.vgpr[13][l],
            (ints[l] as f32).to_bits(),
            "cvt_f32_u32 {what}"
        );
        assert_eq!(
            w.vgpr[14][l],
            (x + 0.5).floor() as i32 as u32,
            "cvt_rpi {what}"
        );
        assert_eq!(w.vgpr[15][l], x.floor() as i32 as u32, "cvt_flr {what}");
        assert_eq!(w.vgpr[16][l], y as i32 as u32, "cvt_i32_f64 {what}");
        assert_eq!(w.vgpr[17][l], y as u32, "cvt_u32_f64 {what}");
        assert_eq!(pair(&w, 18, l), f64::from(ints[l] as i32).to_bits());
        assert_eq!(pair(&w, 20, l), f64::from(ints[l]).to_bits());
        let want22 = y as f32;
        if want22.is_nan() {
            assert!(f(w.vgpr[22][l]).is_nan() && w.vgpr[22][l] & 0x40_0000 != 0);
        } else {
            assert_eq!(w.vgpr[22][l], want22.to_bits(), "cvt_f32_f64 {what}");
        }
        let want24 = f64::from(x);
        if x.is_nan() {
            assert!(f64::from_bits(pair(&w, 24, l)).is_nan());
        } else {
            assert_eq!(pair(&w, 24, l), want24.to_bits());
        }
        assert_eq!(w.vgpr[26][l], ((ints[l] & 0xFF) as f32).to_bits());
        assert_eq!(w.vgpr[27][l], ((ints[l] >> 24) as f32).to_bits());
        let nib = (ints[l] & 0xF) as i32;
        let s4 = if nib >= 8 { nib - 16 } else { nib };
        assert_eq!(
            w.vgpr[28][l],
            (s4 as f32 / 16.0).to_bits(),
            "cvt_off_f32_i4"
        );
    }
    for k in 10..29 {
        assert_untouched(&w, k, EXEC_MIX, SENT, "cvt");
    }
}

#[test]
fn f16_conversions_round_once() {
    let mut r = Rng(31);
    // f32 inputs: random bits over the whole f16 range and beyond, plus ties.
    let a: [u32; 64] = std::array::from_fn(|l| match l % 4 {
        0 => F32_EDGES[l / 4 % F32_EDGES.len()],
        1 => (r.u32() & 0x87FF_FFFF) | ((100 + r.u32() % 45) << 23),
        2 => {
            // Exactly halfway between two f16 values (tie).
            let h = (r.u32() % 0x7BFF) as u16;
            let mid = (h2d(h) + h2d(h + 1)) / 2.0;
            (mid as f32).to_bits()
        }
        _ => r.u32(),
    });
    let hs: [u32; 64] = std::array::from_fn(|l| {
        u32::from(match l % 3 {
            0 => [
                0u16, 0x8000, 1, 0x3FF, 0x400, 0x7BFF, 0x7C00, 0xFC00, 0x7E00, 0x7D00, 0x3C00,
                0xBC01,
            ][l / 3 % 12],
            _ => r.u32() as u16,
        }) | 0x5555_0000
    });
    let src = "v_cvt_f16_f32_e32 v10, v1
v_cvt_f32_f16_e32 v11, v2
v_cvt_u16_f16_e32 v12, v2
v_cvt_i16_f16_e32 v13, v2
v_cvt_f16_u16_e32 v14, v3
v_cvt_f16_i16_e32 v15, v3
v_cvt_pkrtz_f16_f32 v16, v1, v4
v_cvt_pknorm_i16_f32 v17, v1, v4
v_cvt_pknorm_u16_f32 v18, v1, v4";
    let ints: [u32; 64] = std::array::from_fn(|_| r.u32());
    let other: [u32; 64] = std::array::from_fn(|_| (r.f32_mid() & 0x80FF_FFFF) | 0x3E00_0000);
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = a;
        w.vgpr[2] = hs;
        w.vgpr[3] = ints;
        w.vgpr[4] = other;
    });
    let rtz16 = |x: f32| -> u16 {
        // Toward zero: the largest-magnitude f16 not above |x|.
        if x.is_nan() {
            return 0x7E00;
        }
        let s = if x.is_sign_negative() { 0x8000 } else { 0 };
        let a = f64::from(x.abs());
        if a.is_infinite() {
            return s | 0x7C00;
        }
        let mut best = 0u16;
        let (mut lo, mut hi) = (0u16, 0x7BFFu16);
        while lo <= hi {
            let mid = (lo + hi) / 2;
            if h2d(mid) <= a {
                best = mid;
                lo = mid + 1;
            } else if mid == 0 {
                break;
            } else {
                hi = mid - 1;
            }
        }
        s | best
    };
    let snorm = |x: f32| {
        if x.is_nan() {
            0
        } else {
            (f64::from(x).clamp(-1.0, 1.0) * 32767.0).round_ties_even() as i16 as u16
        }
    };
    let unorm = |x: f32| {
        if x.is_nan() {
            0
        } else {
            (f64::from(x).clamp(0.0, 1.0) * 65535.0).round_ties_even() as u16
        }
    };
    for l in 0..64 {
        let x = f(a[l]);
        let h = hs[l] as u16;
        let want = d2h_ref(f64::from(x));
        if x.is_nan() {
            assert!(h2d(w.vgpr[10][l] as u16).is_nan() && w.vgpr[10][l] & 0x200 != 0);
        } else {
            assert_eq!(
                w.vgpr[10][l],
                u32::from(want),
                "cvt_f16_f32 lane {l}: {x:e}"
            );
        }
        let hv = h2d(h);
        if hv.is_nan() {
            assert!(f(w.vgpr[11][l]).is_nan(), "NaN widened");
            assert_eq!(w.vgpr[11][l] & 0x40_0000, 0x40_0000, "quiet");
        } else {
            assert_eq!(
                w.vgpr[11][l],
                (hv as f32).to_bits(),
                "cvt_f32_f16 lane {l} ({h:#x})"
            );
        }
        assert_eq!(w.vgpr[12][l], u32::from(hv as u16), "cvt_u16_f16 {hv}");
        assert_eq!(
            w.vgpr[13][l],
            u32::from(hv as i16 as u16),
            "cvt_i16_f16 {hv}"
        );
        assert_eq!(
            w.vgpr[14][l],
            u32::from(d2h_ref(f64::from(ints[l] as u16))),
            "cvt_f16_u16"
        );
        assert_eq!(
            w.vgpr[15][l],
            u32::from(d2h_ref(f64::from(ints[l] as u16 as i16))),
            "cvt_f16_i16"
        );
        let y = f(other[l]);
        let pk = w.vgpr[16][l];
        if !x.is_nan() {
            assert_eq!(pk & 0xFFFF, u32::from(rtz16(x)), "pkrtz lo lane {l}: {x:e}");
        }
        assert_eq!(pk >> 16, u32::from(rtz16(y)), "pkrtz hi lane {l}: {y:e}");
        assert_eq!(
            w.vgpr[17][l],
            u32::from(snorm(x)) | u32::from(snorm(y)) << 16,
            "pknorm_i16 {x:e} {y:e}"
        );
        assert_eq!(
            w.vgpr[18][l],
            u32::from(unorm(x)) | u32::from(unorm(y)) << 16,
            "pknorm_u16"
        );
    }
}

#[test]
fn pack_and_cvt_pk_u8() {
    let src = "v_pack_b32_f16 v10, v1, v2
v_pack_b32_f16 v11, -v1, |v2| op_sel:[1,0,0]
v_cvt_pk_u8_f32 v12, v3, 2, v4
v_cvt_pk_u8_f32 v13, v3, 0, v4";
    let f16s: [u32; 64] = lanes(|l| 0x3C00_0000 | (l as u32 * 0x0101) | 0x8000_0000);
    let g16s: [u32; 64] = lanes(|l| 0xC000_0000 | (l as u32 * 3) | 0x8000);
    let fl: [u32; 64] =
        lanes(|l| [(-3.0f32), 0.4, 0.5, 1.5, 2.5, 254.6, 300.0, f32::NAN][l % 8].to_bits());
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = f16s;
        w.vgpr[2] = g16s;
        w.vgpr[3] = fl;
        w.vgpr[4] = [0x1122_3344; 64];
    });
    for l in 0..64 {
        assert_eq!(w.vgpr[10][l], (f16s[l] & 0xFFFF) | (g16s[l] & 0xFFFF) << 16);
        let lo = (f16s[l] >> 16) ^ 0x8000;
        let hi = g16s[l] & 0x7FFF;
        assert_eq!(w.vgpr[11][l], lo | hi << 16, "op_sel and modifiers");
        let x = f(fl[l]);
        let byte = if x.is_nan() {
            0
        } else {
            x.round_ties_even().clamp(0.0, 255.0) as u32
        };
        assert_eq!(
            w.vgpr[12][l],
            0x1100_3344 | byte << 16,
            "cvt_pk_u8 byte 2 of {x}"
        );
        assert_eq!(w.vgpr[13][l], 0x1122_3300 | byte, "cvt_pk_u8 byte 0");
    }
}
