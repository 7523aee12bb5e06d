//! Integer VALU operations against plain-Rust definitions written here from the ISA
//! descriptions (MI200 ISA), over edge and pseudo-random lane values, with a mixed
//! EXEC mask (inactive lanes must keep their old value).

#![allow(clippy::type_complexity, clippy::needless_range_loop)]

mod common;
mod valu_util;

use valu_util::*;

const SENT: u32 = 0xDEAD_BEEF;

fn inputs(seed: u64) -> [[u32; 64]; 3] {
    let edges = [
        0u32,
        1,
        u32::MAX,
        0x8000_0000,
        0x7FFF_FFFF,
        0xFFFF,
        0x8000,
        0x7FFF,
        0x00FF_FFFF,
        0x0080_0000,
        0xFF80_0000,
        31,
        32,
        33,
        63,
        0x0102_0304,
    ];
    let mut r = Rng(seed);
    let mut out = [[0u32; 64]; 3];
    for s in 0..3 {
        for l in 0..64 {
            out[s][l] = if (l + 5 * s) % 3 == 0 {
                edges[(l * 7 + s * 3) % edges.len()]
            } else {
                r.u32()
            };
        }
    }
    out
}

/// Runs `ops` (each writes v[10+k]) over inputs in v1, v2, v3 with EXEC_MIX and checks
/// every lane against the reference.
fn check32(ops: &[(&str, fn(u32, u32, u32) -> u32)]) {
    let [a, b, c] = inputs(ops.len() as u64 * 77 + 1);
    let src: String = ops
        .iter()
        .enumerate()
        .map(|(k, (t, _))| t.replace("{d}", &format!("v{}", 10 + k)) + "\n")
        .collect();
    let w = run(&src, MODE_IEEE, |w| {
        w.vgpr[1] = a;
        w.vgpr[2] = b;
        w.vgpr[3] = c;
        for k in 0..ops.len() {
            w.vgpr[10 + k] = [SENT; 64];
        }
        w.set_exec(EXEC_MIX);
    });
    for (k, (t, f)) in ops.iter().enumerate() {
        for l in 0..64 {
            if (EXEC_MIX >> l) & 1 == 1 {
                let want = f(a[l], b[l], c[l]);
                assert_eq!(
                    w.vgpr[10 + k][l],
                    want,
                    "{t}: lane {l} a={:#x} b={:#x} c={:#x}",
                    a[l],
                    b[l],
                    c[l]
                );
            }
        }
        assert_untouched(&w, 10 + k, EXEC_MIX, SENT, t);
    }
}

fn s24(v: u32) -> i64 {
    i64::from(((v << 8) as i32) >> 8)
}

#[test]
fn add_sub_logic_shift() {
    check32(&[
        ("v_add_u32_e32 {d}, v1, v2", |a, b, _| a.wrapping_add(b)),
        ("v_sub_u32_e32 {d}, v1, v2", |a, b, _| a.wrapping_sub(b)),
        ("v_subrev_u32_e32 {d}, v1, v2", |a, b, _| b.wrapping_sub(a)),
        ("v_add_u32_e64 {d}, v1, v2 clamp", |a, b, _| {
            a.saturating_add(b)
        }),
        ("v_sub_u32_e64 {d}, v1, v2 clamp", |a, b, _| {
            a.saturating_sub(b)
        }),
        ("v_add_i32 {d}, v1, v2 clamp", |a, b, _| {
            (a as i32).saturating_add(b as i32) as u32
        }),
        ("v_sub_i32 {d}, v1, v2 clamp", |a, b, _| {
            (a as i32).saturating_sub(b as i32) as u32
        }),
        ("v_sub_i32 {d}, v1, v2", |a, b, _| a.wrapping_sub(b)),
        ("v_and_b32_e32 {d}, v1, v2", |a, b, _| a & b),
        ("v_or_b32_e32 {d}, v1, v2", |a, b, _| a | b),
        ("v_xor_b32_e32 {d}, v1, v2", |a, b, _| a ^ b),
        ("v_xnor_b32_e32 {d}, v1, v2", |a, b, _| !(a ^ b)),
        ("v_not_b32_e32 {d}, v1", |a, _, _| !a),
        ("v_lshlrev_b32_e32 {d}, v1, v2", |a, b, _| b << (a % 32)),
        ("v_lshrrev_b32_e32 {d}, v1, v2", |a, b, _| b >> (a % 32)),
        ("v_ashrrev_i32_e32 {d}, v1, v2", |a, b, _| {
            ((b as i32) >> (a % 32)) as u32
        }),
        ("v_lshl_add_u32 {d}, v1, v2, v3", |a, b, c| {
            (a << (b % 32)).wrapping_add(c)
        }),
        ("v_add_lshl_u32 {d}, v1, v2, v3", |a, b, c| {
            a.wrapping_add(b) << (c % 32)
        }),
        ("v_add3_u32 {d}, v1, v2, v3", |a, b, c| {
            a.wrapping_add(b).wrapping_add(c)
        }),
        ("v_lshl_or_b32 {d}, v1, v2, v3", |a, b, c| {
            (a << (b % 32)) | c
        }),
        ("v_and_or_b32 {d}, v1, v2, v3", |a, b, c| (a & b) | c),
        ("v_or3_b32 {d}, v1, v2, v3", |a, b, c| a | b | c),
        ("v_xad_u32 {d}, v1, v2, v3", |a, b, c| {
            (a ^ b).wrapping_add(c)
        }),
    ]);
}

#[test]
fn multiplies_and_mads() {
    check32(&[
        ("v_mul_lo_u32 {d}, v1, v2", |a, b, _| a.wrapping_mul(b)),
        ("v_mul_hi_u32 {d}, v1, v2", |a, b, _| {
            ((a as u64 * b as u64) >> 32) as u32
        }),
        ("v_mul_hi_i32 {d}, v1, v2", |a, b, _| {
            ((a as i32 as i64 * b as i32 as i64) >> 32) as u32
        }),
        ("v_mul_u32_u24_e32 {d}, v1, v2", |a, b, _| {
            ((a & 0xFFFFFF) as u64 * (b & 0xFFFFFF) as u64) as u32
        }),
        ("v_mul_hi_u32_u24_e32 {d}, v1, v2", |a, b, _| {
            (((a & 0xFFFFFF) as u64 * (b & 0xFFFFFF) as u64) >> 32) as u32
        }),
        ("v_mul_i32_i24_e32 {d}, v1, v2", |a, b, _| {
            (s24(a) * s24(b)) as u32
        }),
        ("v_mul_hi_i32_i24_e32 {d}, v1, v2", |a, b, _| {
            ((s24(a) * s24(b)) >> 32) as u32
        }),
        ("v_mad_u32_u24 {d}, v1, v2, v3", |a, b, c| {
            ((a & 0xFFFFFF) as u64 * (b & 0xFFFFFF) as u64 + c as u64) as u32
        }),
        ("v_mad_u32_u24 {d}, v1, v2, v3 clamp", |a, b, c| {
            ((a & 0xFFFFFF) as u64 * (b & 0xFFFFFF) as u64 + c as u64).min(u32::MAX as u64) as u32
        }),
        ("v_mad_i32_i24 {d}, v1, v2, v3", |a, b, c| {
            (s24(a) * s24(b) + c as i32 as i64) as u32
        }),
        ("v_mad_u32_u16 {d}, v1, v2, v3", |a, b, c| {
            ((a & 0xFFFF) * (b & 0xFFFF)).wrapping_add(c)
        }),
        (
            "v_mad_u32_u16 {d}, v1, v2, v3 op_sel:[1,1,0,0]",
            |a, b, c| ((a >> 16) * (b >> 16)).wrapping_add(c),
        ),
        ("v_mad_i32_i16 {d}, v1, v2, v3", |a, b, c| {
            ((a as i16 as i32) * (b as i16 as i32)).wrapping_add(c as i32) as u32
        }),
    ]);
}

#[test]
fn bitfields_and_permutes() {
    check32(&[
        ("v_bfe_u32 {d}, v1, v2, v3", |a, b, c| {
            let (o, w) = (b % 32, c % 32);
            if w == 0 {
                0
            } else {
                ((a as u64 >> o) & ((1u64 << w) - 1)) as u32
            }
        }),
        ("v_bfe_i32 {d}, v1, v2, v3", |a, b, c| {
            let (o, w) = (b % 32, c % 32);
            if w == 0 {
                0
            } else {
                let f = (a as u64 >> o) & ((1u64 << w) - 1);
                // Sign bit of the field: bit w-1, or bit 31 of a when the field runs past it.
                let top = (o + w - 1).min(31);
                let neg = (a >> top) & 1 == 1;
                let width = (32 - o).min(w);
                let f = f & ((1u64 << width) - 1);
                if neg {
                    (f | (u64::MAX << width)) as u32
                } else {
                    f as u32
                }
            }
        }),
        ("v_bfi_b32 {d}, v1, v2, v3", |a, b, c| (a & b) | (!a & c)),
        ("v_bfm_b32 {d}, v1, v2", |a, b, _| {
            (((1u64 << (a % 32)) - 1) << (b % 32)) as u32
        }),
        ("v_bfrev_b32_e32 {d}, v1", |a, _, _| a.reverse_bits()),
        ("v_ffbh_u32_e32 {d}, v1", |a, _, _| {
            if a == 0 {
                u32::MAX
            } else {
                a.leading_zeros()
            }
        }),
        ("v_ffbl_b32_e32 {d}, v1", |a, _, _| {
            if a == 0 {
                u32::MAX
            } else {
                a.trailing_zeros()
            }
        }),
        ("v_ffbh_i32_e32 {d}, v1", |a, _, _| {
            let s = a as i32;
            if s == 0 || s == -1 {
                u32::MAX
            } else if s < 0 {
                (!a).leading_zeros()
            } else {
                a.leading_zeros()
            }
        }),
        ("v_bcnt_u32_b32 {d}, v1, v2", |a, b, _| a.count_ones() + b),
        ("v_alignbit_b32 {d}, v1, v2, v3", |a, b, c| {
            ((((a as u64) << 32) | b as u64) >> (c % 32)) as u32
        }),
        ("v_alignbyte_b32 {d}, v1, v2, v3", |a, b, c| {
            ((((a as u64) << 32) | b as u64) >> (8 * (c % 4))) as u32
        }),
        ("v_perm_b32 {d}, v1, v2, v3", |a, b, c| {
            let bytes = [
                b as u8,
                (b >> 8) as u8,
                (b >> 16) as u8,
                (b >> 24) as u8,
                a as u8,
                (a >> 8) as u8,
                (a >> 16) as u8,
                (a >> 24) as u8,
            ];
            let mut r = 0u32;
            for k in 0..4 {
                let s = ((c >> (8 * k)) & 0xFF) as usize;
                let v = match s {
                    0..=7 => bytes[s] as u32,
                    8..=11 => {
                        if bytes[2 * (s - 8) + 1] & 0x80 != 0 {
                            0xFF
                        } else {
                            0
                        }
                    }
                    12 => 0,
                    _ => 0xFF,
                };
                r |= v << (8 * k);
            }
            r
        }),
        ("v_lerp_u8 {d}, v1, v2, v3", |a, b, c| {
            let mut r = 0u32;
            for k in 0..4 {
                let f = |v: u32| (v >> (8 * k)) & 0xFF;
                r |= ((f(a) + f(b) + (f(c) & 1)) / 2) << (8 * k);
            }
            r
        }),
        ("v_sad_u8 {d}, v1, v2, v3", |a, b, c| {
            (0..4)
                .map(|k| ((a >> (8 * k)) & 0xFF).abs_diff((b >> (8 * k)) & 0xFF))
                .sum::<u32>()
                .wrapping_add(c)
        }),
        ("v_sad_hi_u8 {d}, v1, v2, v3", |a, b, c| {
            ((0..4)
                .map(|k| ((a >> (8 * k)) & 0xFF).abs_diff((b >> (8 * k)) & 0xFF))
                .sum::<u32>()
                << 16)
                .wrapping_add(c)
        }),
        ("v_msad_u8 {d}, v1, v2, v3", |a, b, c| {
            (0..4)
                .filter(|k| (b >> (8 * k)) & 0xFF != 0)
                .map(|k| ((a >> (8 * k)) & 0xFF).abs_diff((b >> (8 * k)) & 0xFF))
                .sum::<u32>()
                .wrapping_add(c)
        }),
        ("v_sad_u16 {d}, v1, v2, v3", |a, b, c| {
            ((a & 0xFFFF).abs_diff(b & 0xFFFF) + (a >> 16).abs_diff(b >> 16)).wrapping_add(c)
        }),
        ("v_sad_u32 {d}, v1, v2, v3", |a, b, c| {
            a.abs_diff(b).wrapping_add(c)
        }),
        ("v_sad_u32 {d}, v1, v2, v3 clamp", |a, b, c| {
            a.abs_diff(b).saturating_add(c)
        }),
    ]);
}

#[test]
fn min_max_med3() {
    check32(&[
        ("v_min_i32_e32 {d}, v1, v2", |a, b, _| {
            (a as i32).min(b as i32) as u32
        }),
        ("v_max_i32_e32 {d}, v1, v2", |a, b, _| {
            (a as i32).max(b as i32) as u32
        }),
        ("v_min_u32_e32 {d}, v1, v2", |a, b, _| a.min(b)),
        ("v_max_u32_e32 {d}, v1, v2", |a, b, _| a.max(b)),
        ("v_min3_i32 {d}, v1, v2, v3", |a, b, c| {
            (a as i32).min(b as i32).min(c as i32) as u32
        }),
        ("v_max3_u32 {d}, v1, v2, v3", |a, b, c| a.max(b).max(c)),
        ("v_med3_i32 {d}, v1, v2, v3", |a, b, c| {
            let mut v = [a as i32, b as i32, c as i32];
            v.sort();
            v[1] as u32
        }),
        ("v_med3_u32 {d}, v1, v2, v3", |a, b, c| {
            let mut v = [a, b, c];
            v.sort();
            v[1]
        }),
    ]);
}

#[test]
fn sixteen_bit_integer_ops() {
    check32(&[
        ("v_add_u16_e32 {d}, v1, v2", |a, b, _| {
            (a as u16).wrapping_add(b as u16) as u32
        }),
        ("v_add_u16_e64 {d}, v1, v2 clamp", |a, b, _| {
            (a as u16).saturating_add(b as u16) as u32
        }),
        ("v_sub_u16_e32 {d}, v1, v2", |a, b, _| {
            (a as u16).wrapping_sub(b as u16) as u32
        }),
        ("v_subrev_u16_e64 {d}, v1, v2 clamp", |a, b, _| {
            (b as u16).saturating_sub(a as u16) as u32
        }),
        ("v_mul_lo_u16_e32 {d}, v1, v2", |a, b, _| {
            (a as u16).wrapping_mul(b as u16) as u32
        }),
        ("v_lshlrev_b16_e32 {d}, v1, v2", |a, b, _| {
            ((b as u16) << (a % 16)) as u32
        }),
        ("v_lshrrev_b16_e32 {d}, v1, v2", |a, b, _| {
            ((b as u16) >> (a % 16)) as u32
        }),
        ("v_ashrrev_i16_e32 {d}, v1, v2", |a, b, _| {
            ((b as i16) >> (a % 16)) as u16 as u32
        }),
        ("v_max_i16_e32 {d}, v1, v2", |a, b, _| {
            (a as i16).max(b as i16) as u16 as u32
        }),
        ("v_min_u16_e32 {d}, v1, v2", |a, b, _| {
            (a as u16).min(b as u16) as u32
        }),
        // VOP3 op_sel ops keep the other half of the destination (here: the sentinel).
        ("v_add_i16 {d}, v1, v2 clamp", |a, b, _| {
            (SENT & 0xFFFF_0000) | (a as i16).saturating_add(b as i16) as u16 as u32
        }),
        ("v_sub_i16 {d}, v1, v2 op_sel:[1,1,1]", |a, b, _| {
            (SENT & 0xFFFF)
                | (((a >> 16) as i16).wrapping_sub((b >> 16) as i16) as u16 as u32) << 16
        }),
        ("v_mad_u16 {d}, v1, v2, v3", |a, b, c| {
            (SENT & 0xFFFF_0000) | (a as u16).wrapping_mul(b as u16).wrapping_add(c as u16) as u32
        }),
        ("v_mad_i16 {d}, v1, v2, v3 clamp", |a, b, c| {
            let v = (a as i16 as i64) * (b as i16 as i64) + c as i16 as i64;
            (SENT & 0xFFFF_0000) | v.clamp(-32768, 32767) as i16 as u16 as u32
        }),
        ("v_mad_legacy_u16 {d}, v1, v2, v3", |a, b, c| {
            (a as u16).wrapping_mul(b as u16).wrapping_add(c as u16) as u32
        }),
        ("v_med3_i16 {d}, v1, v2, v3", |a, b, c| {
            let mut v = [a as i16, b as i16, c as i16];
            v.sort();
            (SENT & 0xFFFF_0000) | v[1] as u16 as u32
        }),
        ("v_max3_u16 {d}, v1, v2, v3 op_sel:[1,0,1,1]", |a, b, c| {
            (SENT & 0xFFFF) | ((a >> 16).max(b & 0xFFFF).max(c >> 16)) << 16
        }),
        ("v_sat_pk_u8_i16_e32 {d}, v1", |a, _, _| {
            let s = |h: u32| (h as u16 as i16).clamp(0, 255) as u32;
            s(a & 0xFFFF) | s(a >> 16) << 8
        }),
        ("v_cvt_pk_u16_u32 {d}, v1, v2", |a, b, _| {
            a.min(0xFFFF) | b.min(0xFFFF) << 16
        }),
        ("v_cvt_pk_i16_i32 {d}, v1, v2", |a, b, _| {
            let s = |v: u32| (v as i32).clamp(-32768, 32767) as i16 as u16 as u32;
            s(a) | s(b) << 16
        }),
    ]);
}

#[test]
fn carry_chains_and_64_bit_ops() {
    let [a, b, c] = inputs(9);
    let carry_in: u64 = 0x5A5A_F0F0_1234_8765;
    let src = "v_add_co_u32_e64 v10, s[4:5], v1, v2
v_sub_co_u32_e64 v11, s[6:7], v1, v2
v_subrev_co_u32_e64 v12, s[8:9], v1, v2
v_addc_co_u32_e64 v13, s[10:11], v1, v2, s[20:21]
v_subb_co_u32_e64 v14, s[12:13], v1, v2, s[20:21]
v_subbrev_co_u32_e64 v15, s[14:15], v1, v2, s[20:21]
v_add_co_u32_e64 v16, s[16:17], v1, v2 clamp
v_mad_u64_u32 v[20:21], s[22:23], v1, v2, v[4:5]
v_mad_i64_i32 v[22:23], s[24:25], v1, v2, v[4:5]
v_lshlrev_b64 v[24:25], v3, v[4:5]
v_lshrrev_b64 v[26:27], v3, v[4:5]
v_ashrrev_i64 v[28:29], v3, v[4:5]
v_mqsad_pk_u16_u8 v[30:31], v[4:5], v2, v[6:7]
v_qsad_pk_u16_u8 v[32:33], v[4:5], v2, v[6:7]
v_add_co_u32_e32 v17, vcc, v1, v2
v_addc_co_u32_e32 v18, vcc, v1, v2, vcc
v_cndmask_b32_e32 v19, v1, v2, vcc
v_cndmask_b32_e64 v34, v1, v2, s[20:21]";
    let mut r = Rng(3);
    let c64: [u64; 64] = std::array::from_fn(|_| r.next());
    let c64b: [u64; 64] = std::array::from_fn(|_| r.next());
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = a;
        w.vgpr[2] = b;
        w.vgpr[3] = c;
        set_pair(w, 4, &c64);
        set_pair(w, 6, &c64b);
        w.sgpr[20] = carry_in as u32;
        w.sgpr[21] = (carry_in >> 32) as u32;
        for r in 10..35 {
            w.vgpr[r] = [SENT; 64];
        }
        w.set_exec(EXEC_MIX);
    });
    let mask = |s: usize| u64::from(w.sgpr[s]) | u64::from(w.sgpr[s + 1]) << 32;
    let mut want_masks = [0u64; 8];
    let mut vcc1 = 0u64;
    for l in 0..64 {
        if (EXEC_MIX >> l) & 1 == 0 {
            continue;
        }
        let (x, y, ci) = (a[l] as u64, b[l] as u64, (carry_in >> l) & 1);
        let bit = 1u64 << l;
        assert_eq!(w.vgpr[10][l], (x + y) as u32);
        want_masks[0] |= if x + y > 0xFFFF_FFFF { bit } else { 0 };
        assert_eq!(w.vgpr[11][l], (x as u32).wrapping_sub(y as u32));
        want_masks[1] |= if y > x { bit } else { 0 };
        assert_eq!(w.vgpr[12][l], (y as u32).wrapping_sub(x as u32));
        want_masks[2] |= if x > y { bit } else { 0 };
        assert_eq!(w.vgpr[13][l], (x + y + ci) as u32);
        want_masks[3] |= if x + y + ci > 0xFFFF_FFFF { bit } else { 0 };
        assert_eq!(
            w.vgpr[14][l],
            (x as u32).wrapping_sub(y as u32).wrapping_sub(ci as u32)
        );
        want_masks[4] |= if y + ci > x { bit } else { 0 };
        assert_eq!(
            w.vgpr[15][l],
            (y as u32).wrapping_sub(x as u32).wrapping_sub(ci as u32)
        );
        want_masks[5] |= if x + ci > y { bit } else { 0 };
        assert_eq!(
            w.vgpr[16][l],
            (x + y).min(0xFFFF_FFFF) as u32,
            "clamp saturates"
        );
        let p = x as u128 * y as u128 + c64[l] as u128;
        assert_eq!(pair(&w, 20, l), p as u64, "mad_u64_u32 lane {l}");
        want_masks[6] |= if p >> 64 != 0 { bit } else { 0 };
        let q = (a[l] as i32 as i128) * (b[l] as i32 as i128) + c64[l] as i64 as i128;
        assert_eq!(pair(&w, 22, l), q as u64, "mad_i64_i32 lane {l}");
        want_masks[7] |= if q != q as i64 as i128 { bit } else { 0 };
        assert_eq!(pair(&w, 24, l), c64[l] << (c[l] % 64));
        assert_eq!(pair(&w, 26, l), c64[l] >> (c[l] % 64));
        assert_eq!(pair(&w, 28, l), ((c64[l] as i64) >> (c[l] % 64)) as u64);
        // qsad: four 16-bit sums over byte windows of src0 shifted by 0..3 bytes.
        for (reg, masked) in [(30usize, true), (32usize, false)] {
            let got = pair(&w, reg, l);
            for k in 0..4 {
                let win = (c64[l] >> (8 * k)) as u32;
                let s: u64 = (0..4)
                    .filter(|j| !masked || (b[l] >> (8 * j)) & 0xFF != 0)
                    .map(|j| {
                        u64::from(((win >> (8 * j)) & 0xFF).abs_diff((b[l] >> (8 * j)) & 0xFF))
                    })
                    .sum::<u64>()
                    + ((c64b[l] >> (16 * k)) & 0xFFFF);
                assert_eq!(
                    (got >> (16 * k)) & 0xFFFF,
                    s & 0xFFFF,
                    "qsad reg {reg} lane {l} k {k}"
                );
            }
        }
        assert_eq!(w.vgpr[17][l], (x + y) as u32);
        let c0 = u64::from(x + y > 0xFFFF_FFFF);
        assert_eq!(
            w.vgpr[18][l],
            (x + y + c0) as u32,
            "addc reads vcc of the add"
        );
        vcc1 |= u64::from(x + y + c0 > 0xFFFF_FFFF) << l;
        assert_eq!(
            w.vgpr[19][l],
            if (vcc1 >> l) & 1 == 1 { b[l] } else { a[l] }
        );
        assert_eq!(w.vgpr[34][l], if ci == 1 { b[l] } else { a[l] });
    }
    for (k, s) in [4usize, 6, 8, 10, 12, 14, 22, 24].iter().enumerate() {
        assert_eq!(
            mask(*s),
            want_masks[k],
            "carry mask {k} (only active lanes set)"
        );
    }
    assert_eq!(w.vcc(), vcc1);
    for r in [10, 13, 17, 20, 21, 24, 30, 34] {
        assert_untouched(&w, r, EXEC_MIX, SENT, "carry/64-bit");
    }
}

#[test]
fn lane_ops_readlane_writelane_mbcnt() {
    let v1 = lanes(|l| 1000 + l as u32);
    let src = "v_readlane_b32 s10, v1, 37
v_readlane_b32 s11, v1, s3
v_readfirstlane_b32 s12, v1
v_writelane_b32 v2, s4, 5
v_writelane_b32 v2, 33, s3
v_mbcnt_lo_u32_b32 v3, -1, 0
v_mbcnt_hi_u32_b32 v3, -1, v3
v_mbcnt_lo_u32_b32 v4, s6, 10
v_mbcnt_hi_u32_b32 v5, s7, 0";
    let exec: u64 = 0xFFFF_0000_0000_FF00;
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = v1;
        w.vgpr[2] = [SENT; 64];
        w.vgpr[3] = [SENT; 64];
        w.vgpr[4] = [SENT; 64];
        w.vgpr[5] = [SENT; 64];
        w.sgpr[3] = 64 + 9; // lane select wraps modulo 64
        w.sgpr[4] = 0xABCD;
        w.sgpr[6] = 0xF0F0_F0F0;
        w.sgpr[7] = 0x1234_5678;
        w.set_exec(exec);
    });
    assert_eq!(w.sgpr[10], 1037, "readlane ignores EXEC");
    assert_eq!(w.sgpr[11], 1009);
    assert_eq!(w.sgpr[12], 1008, "first active lane is 8");
    for l in 0..64 {
        let want2 = match l {
            5 => 0xABCD,
            9 => 33,
            _ => SENT,
        };
        assert_eq!(
            w.vgpr[2][l], want2,
            "writelane writes its lane whatever EXEC says"
        );
        let active = (exec >> l) & 1 == 1;
        let below = if l == 0 { 0 } else { u64::MAX >> (64 - l) };
        if active {
            assert_eq!(w.vgpr[3][l], below.count_ones(), "mbcnt of -1 = lane id");
            let lo_mask = below as u32;
            assert_eq!(w.vgpr[4][l], (0xF0F0_F0F0u32 & lo_mask).count_ones() + 10);
            let hi_mask = (below >> 32) as u32;
            assert_eq!(w.vgpr[5][l], (0x1234_5678u32 & hi_mask).count_ones());
        } else {
            assert_eq!(w.vgpr[3][l], SENT);
        }
    }
}

#[test]
fn readfirstlane_with_no_active_lane_reads_lane_0() {
    let w = run("v_readfirstlane_b32 s10, v1", MODE_IEEE, |w| {
        w.vgpr[1] = lanes(|l| 50 + l as u32);
        w.set_exec(0);
    });
    assert_eq!(w.sgpr[10], 50);
}
