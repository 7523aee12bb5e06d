//! DPP (every GFX9 control, ROW_MASK/BANK_MASK, BOUND_CTRL, on VOP1/VOP2 incl. float
//! modifiers and 64-bit ops) and SDWA (source selects with sign/zero extension,
//! DST_SEL with UNUSED_PAD/SEXT/PRESERVE, float modifiers and clamp, 16-bit ops,
//! VOPC to an SGPR pair) against reference lane permutations computed here from the
//! DPP controls as LLVM's `llvm/docs/AMDGPUModifierSyntax.rst` defines them
//! (`dpp_ctrl`, `row_mask`, `bank_mask`, `bound_ctrl`).

#![allow(clippy::needless_range_loop)]

mod common;
mod valu_util;

use valu_util::*;

const SENT: u32 = 0xEEEE_0000;

/// Reference source lane for a DPP control (None = out of range).
fn src_lane(ctrl: &str, l: usize) -> Option<usize> {
    let row = l / 16 * 16;
    let i = l % 16;
    let num = |p: &str| ctrl.strip_prefix(p).and_then(|s| s.parse::<usize>().ok());
    if let Some(sel) = ctrl.strip_prefix("quad_perm:[") {
        let v: Vec<usize> = sel
            .trim_end_matches(']')
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        return Some(l / 4 * 4 + v[l % 4]);
    }
    if let Some(n) = num("row_shl:") {
        return (i + n < 16).then_some(l + n);
    }
    if let Some(n) = num("row_shr:") {
        return (i >= n).then(|| l - n);
    }
    if let Some(n) = num("row_ror:") {
        return Some(row + (i + 16 - n) % 16);
    }
    if let Some(n) = num("row_newbcast:") {
        return Some(row + n);
    }
    match ctrl {
        "wave_shl:1" => (l < 63).then_some(l + 1),
        "wave_rol:1" => Some((l + 1) % 64),
        "wave_shr:1" => (l > 0).then(|| l - 1),
        "wave_ror:1" => Some((l + 63) % 64),
        "row_mirror" => Some(row + 15 - i),
        "row_half_mirror" => Some(l / 8 * 8 + 7 - l % 8),
        "row_bcast:15" => (l >= 16).then(|| row - 1),
        "row_bcast:31" => (l >= 32).then_some(31),
        _ => panic!("unknown control {ctrl}"),
    }
}

fn controls() -> Vec<String> {
    let mut v: Vec<String> = vec![
        "quad_perm:[0,1,2,3]".into(),
        "quad_perm:[3,2,1,0]".into(),
        "quad_perm:[1,0,3,2]".into(),
        "quad_perm:[2,2,0,1]".into(),
        "wave_shl:1".into(),
        "wave_rol:1".into(),
        "wave_shr:1".into(),
        "wave_ror:1".into(),
        "row_mirror".into(),
        "row_half_mirror".into(),
        "row_bcast:15".into(),
        "row_bcast:31".into(),
    ];
    for n in 1..16 {
        v.push(format!("row_shl:{n}"));
        v.push(format!("row_shr:{n}"));
        v.push(format!("row_ror:{n}"));
    }
    v.push("row_newbcast:0".into());
    v.push("row_newbcast:7".into());
    v
}

fn check_dpp(row_mask: u8, bank_mask: u8, bound_ctrl: bool, exec: u64) {
    let ctrls = controls();
    let bc = if bound_ctrl { " bound_ctrl:0" } else { "" };
    let src: String = ctrls
        .iter()
        .enumerate()
        .map(|(k, c)| {
            format!(
                "v_mov_b32_dpp v{}, v1 {c} row_mask:{row_mask:#x} bank_mask:{bank_mask:#x}{bc}\n",
                10 + k
            )
        })
        .collect();
    let v1: [u32; 64] = lanes(|l| 100 + l as u32);
    let w = run(&src, MODE_IEEE, |w| {
        w.vgpr[1] = v1;
        for k in 0..ctrls.len() {
            w.vgpr[10 + k] = [SENT; 64];
        }
        w.set_exec(exec);
    });
    for (k, c) in ctrls.iter().enumerate() {
        for l in 0..64 {
            let enabled = (exec >> l) & 1 == 1
                && (row_mask >> (l / 16)) & 1 == 1
                && (bank_mask >> (l % 16 / 4)) & 1 == 1;
            let s = src_lane(c, l).filter(|&s| (exec >> s) & 1 == 1);
            let want = match (enabled, s, bound_ctrl) {
                (false, _, _) => SENT,
                (true, Some(s), _) => v1[s],
                (true, None, true) => 0,
                (true, None, false) => SENT,
            };
            assert_eq!(
                w.vgpr[10 + k][l],
                want,
                "{c} lane {l} rm {row_mask:#x} bm {bank_mask:#x} bc {bound_ctrl}"
            );
        }
    }
}

#[test]
fn dpp_controls_all_lanes() {
    check_dpp(0xF, 0xF, false, u64::MAX);
}

#[test]
fn dpp_bound_ctrl_and_disabled_source_lanes() {
    check_dpp(0xF, 0xF, true, 0xFFFF_FFFE_7FFF_FFEF);
    check_dpp(0xF, 0xF, false, 0xFFFF_FFFE_7FFF_FFEF);
}

#[test]
fn dpp_row_and_bank_masks() {
    check_dpp(0xA, 0xF, false, u64::MAX);
    check_dpp(0xF, 0x5, true, u64::MAX);
    check_dpp(0x6, 0x9, true, 0x0F0F_F0F0_FFFF_FFFF);
}

#[test]
fn dpp_on_vop2_float_modifiers_and_64_bit_ops() {
    let src = "v_add_f32_dpp v10, -v1, |v2| row_shr:3 row_mask:0xf bank_mask:0xf bound_ctrl:0
v_add_u32_dpp v11, v3, v4 row_bcast:31 row_mask:0xc bank_mask:0xf
v_sub_u32_dpp v12, v3, v4 quad_perm:[3,3,3,3] row_mask:0xf bank_mask:0xf
v_ceil_f64_dpp v[14:15], v[6:7] row_newbcast:5 row_mask:0xf bank_mask:0xf
v_mov_b32_e32 v16, v2
v_mac_f32_dpp v16, v1, v2 row_ror:4 row_mask:0xf bank_mask:0xf";
    let f1: [u32; 64] = lanes(|l| (l as f32 * 1.25 - 30.0).to_bits());
    let f2: [u32; 64] = lanes(|l| (7.5 - l as f32).to_bits());
    let i3: [u32; 64] = lanes(|l| 1000 * l as u32);
    let i4: [u32; 64] = lanes(|l| l as u32);
    let d6: [u64; 64] = lanes(|l| (l as f64 * 0.3 - 9.0).to_bits());
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = f1;
        w.vgpr[2] = f2;
        w.vgpr[3] = i3;
        w.vgpr[4] = i4;
        set_pair(w, 6, &d6);
        for r in 10..17 {
            if r != 16 {
                w.vgpr[r] = [SENT; 64];
            }
        }
    });
    let f = f32::from_bits;
    for l in 0..64 {
        let s = src_lane("row_shr:3", l);
        let a = s.map_or(0.0, |s| -f(f1[s]));
        let want = a + f(f2[l]).abs();
        assert_eq!(w.vgpr[10][l], want.to_bits(), "add_f32 dpp lane {l}");
        let want11 = if l >= 32 { i3[31] + i4[l] } else { SENT };
        assert_eq!(
            w.vgpr[11][l], want11,
            "row_bcast:31 with row_mask 0xc lane {l}"
        );
        assert_eq!(w.vgpr[12][l], i3[l / 4 * 4 + 3].wrapping_sub(i4[l]));
        let d = f64::from_bits(d6[src_lane("row_newbcast:5", l).unwrap()]).ceil();
        assert_eq!(
            pair(&w, 14, l),
            d.to_bits(),
            "64-bit DPP permutes both dwords"
        );
        let sr = src_lane("row_ror:4", l).unwrap();
        let mac = f(f1[sr]) * f(f2[l]) + f(f2[l]);
        assert_eq!(
            w.vgpr[16][l],
            mac.to_bits(),
            "mac dpp reads the accumulator in its own lane"
        );
    }
}

#[test]
fn sdwa_selects_extensions_and_destination_merges() {
    let src = "v_mov_b32_sdwa v10, sext(v1) dst_sel:WORD_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_1
v_mov_b32_sdwa v11, v1 dst_sel:BYTE_2 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_3
v_mov_b32_sdwa v12, v1 dst_sel:BYTE_0 dst_unused:UNUSED_PAD src0_sel:WORD_1
v_add_u32_sdwa v13, sext(v1), sext(v2) dst_sel:WORD_0 dst_unused:UNUSED_SEXT src0_sel:BYTE_0 src1_sel:WORD_1
v_add_f32_sdwa v14, -v3, |v4| clamp dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD
v_add_f16_sdwa v15, v5, v6 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1 src1_sel:WORD_0
v_cmp_gt_i32_sdwa s[4:5], sext(v1), v2 src0_sel:BYTE_0 src1_sel:WORD_1
v_cmp_lt_u32_sdwa vcc, v1, s9 src0_sel:WORD_0 src1_sel:BYTE_1
v_mul_u32_u24_sdwa v16, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_2 src1_sel:BYTE_0";
    let mut r = Rng(17);
    let a: [u32; 64] = std::array::from_fn(|_| r.u32());
    let b: [u32; 64] = std::array::from_fn(|_| r.u32());
    let fa: [u32; 64] = std::array::from_fn(|l| ((l as f32 - 20.0) / 16.0).to_bits());
    let fb: [u32; 64] = std::array::from_fn(|l| ((l as f32) / 40.0 - 0.6).to_bits());
    let h5: [u32; 64] =
        std::array::from_fn(|l| (u32::from(d2h_ref(l as f64 * 0.75)) << 16) | 0x1234);
    let h6: [u32; 64] =
        std::array::from_fn(|l| 0xFFFF_0000 | u32::from(d2h_ref(3.0 - l as f64 / 8.0)));
    let exec = 0xFFFF_FFFF_0FFF_FFFFu64;
    let old = 0x89AB_CDEFu32;
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = a;
        w.vgpr[2] = b;
        w.vgpr[3] = fa;
        w.vgpr[4] = fb;
        w.vgpr[5] = h5;
        w.vgpr[6] = h6;
        w.sgpr[9] = 0x0000_7F00;
        for r in 10..17 {
            w.vgpr[r] = [old; 64];
        }
        w.set_exec(exec);
    });
    let sx8 = |v: u32| v as u8 as i8 as i32 as u32;
    let sx16 = |v: u32| v as u16 as i16 as i32 as u32;
    let mut m4 = 0u64;
    let mut mvcc = 0u64;
    for l in 0..64 {
        if (exec >> l) & 1 == 0 {
            for r in 10..17 {
                assert_eq!(w.vgpr[r][l], old, "inactive lane {l} v{r}");
            }
            continue;
        }
        let x = a[l];
        // v10: byte 1 sign-extended, written to word 1 and sign-extended above (nothing above).
        let v = sx8(x >> 8) & 0xFFFF;
        assert_eq!(w.vgpr[10][l], v << 16, "sext byte1 -> word1 lane {l}");
        let b3 = x >> 24;
        assert_eq!(w.vgpr[11][l], (old & 0xFF00_FFFF) | b3 << 16, "preserve");
        assert_eq!(w.vgpr[12][l], (x >> 16) & 0xFF, "pad");
        let sum = sx8(x).wrapping_add(sx16(b[l] >> 16)) & 0xFFFF;
        assert_eq!(w.vgpr[13][l], sx16(sum), "UNUSED_SEXT sign-extends word 0");
        let fs = -f32::from_bits(fa[l]) + f32::from_bits(fb[l]).abs();
        assert_eq!(
            w.vgpr[14][l],
            fs.clamp(0.0, 1.0).to_bits(),
            "f32 sdwa neg/abs/clamp"
        );
        let hs = d2h_ref(h2d((h5[l] >> 16) as u16) + h2d(h6[l] as u16));
        assert_eq!(
            w.vgpr[15][l],
            (old & 0xFFFF) | u32::from(hs) << 16,
            "f16 sdwa word selects"
        );
        if (sx8(x) as i32) > (b[l] >> 16) as i32 {
            m4 |= 1 << l;
        }
        if (x & 0xFFFF) < 0x7F {
            mvcc |= 1 << l;
        }
        let p = ((x >> 16) & 0xFF) * (b[l] & 0xFF);
        assert_eq!(w.vgpr[16][l], (p & 0xFFFF) << 16, "mul_u24 sdwa");
    }
    assert_eq!(
        u64::from(w.sgpr[4]) | u64::from(w.sgpr[5]) << 32,
        m4,
        "VOPC sdwa to SGPR pair"
    );
    assert_eq!(
        w.vcc(),
        mvcc,
        "VOPC sdwa with a scalar src1 and BYTE_1 select"
    );
}

/// VOPC SDWA ("SDWA-B", the VOPC SDWA fields of LLVM's `VOPInstructions.td`): D1
/// bits 15:8 are SD/SDST, so SGPR
/// pairs whose code has bits 4:3 set (s[24:25], s[56:57]...) must not be read as a
/// reserved DST_UNUSED. The mask is written under EXEC to SDST or VCC; `v_cmpx` also
/// writes EXEC. Expected masks are computed here from the select/extend rules.
#[test]
fn sdwa_compares_write_sgpr_pairs_vcc_and_exec() {
    let src = "v_cmp_ne_u32_sdwa s[24:25], v1, v2 src0_sel:BYTE_0 src1_sel:DWORD
v_cmp_gt_i32_sdwa s[30:31], sext(v1), sext(v2) src0_sel:BYTE_2 src1_sel:BYTE_0
v_cmp_eq_u32_sdwa s[56:57], v1, s3 src0_sel:BYTE_3 src1_sel:WORD_1
v_cmp_lt_u16_sdwa s[40:41], v1, v2 src0_sel:WORD_1 src1_sel:BYTE_1
v_cmp_ne_u32_sdwa vcc, v1, v2 src0_sel:BYTE_1 src1_sel:BYTE_3
s_mov_b64 s[60:61], vcc
v_cmpx_ne_u32_sdwa s[26:27], v1, v2 src0_sel:BYTE_1 src1_sel:BYTE_1
v_cmpx_lt_u32_sdwa vcc, v1, v2 src0_sel:WORD_1 src1_sel:BYTE_0
v_mov_b32_e32 v20, 7";
    const BYTES: [u32; 5] = [0x00, 0x01, 0x7F, 0x80, 0xFF];
    let mut r = Rng(29);
    let mut byte = || BYTES[(r.next() % 5) as usize];
    let a: [u32; 64] = std::array::from_fn(|_| byte() | byte() << 8 | byte() << 16 | byte() << 24);
    let b: [u32; 64] = std::array::from_fn(|l| {
        if l % 2 == 0 {
            byte() | byte() << 8 | byte() << 16 | byte() << 24
        } else {
            byte()
        }
    });
    let exec = 0xF0FF_FFFF_FFFF_FF7Eu64;
    let sent = 0xDEAD_BEEFu32;
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = a;
        w.vgpr[2] = b;
        w.vgpr[20] = [sent; 64];
        w.sgpr[3] = 0x007F_1234;
        for s in 24..62 {
            w.sgpr[s] = sent;
        }
        w.set_exec(exec);
    });
    let byte_of = |v: u32, k: u32| (v >> (8 * k)) & 0xFF;
    let mask = |f: &dyn Fn(usize) -> bool| (0..64).fold(0u64, |m, l| m | u64::from(f(l)) << l);
    let ne = exec & mask(&|l| byte_of(a[l], 0) != b[l]);
    let gt = exec & mask(&|l| (byte_of(a[l], 2) as u8 as i8) > (byte_of(b[l], 0) as u8 as i8));
    let eq = exec & mask(&|l| byte_of(a[l], 3) == 0x007F);
    let lt16 = exec & mask(&|l| (a[l] >> 16) & 0xFFFF < byte_of(b[l], 1));
    let ne_vcc = exec & mask(&|l| byte_of(a[l], 1) != byte_of(b[l], 3));
    let x1 = exec & mask(&|l| byte_of(a[l], 1) != byte_of(b[l], 1));
    let x2 = x1 & mask(&|l| a[l] >> 16 < byte_of(b[l], 0));
    let pair = |s: usize| u64::from(w.sgpr[s]) | u64::from(w.sgpr[s + 1]) << 32;
    // Each case has lanes on both sides, so a wrong select or extension would show.
    for (m, what) in [
        (ne, "ne"),
        (gt, "gt"),
        (eq, "eq"),
        (lt16, "lt16"),
        (x1, "x1"),
    ] {
        assert!(m != 0 && m != exec, "{what}: mask {m:016X} is not mixed");
    }
    assert_eq!(pair(24), ne, "v_cmp_ne_u32_sdwa -> s[24:25]");
    assert_eq!(pair(30), gt, "v_cmp_gt_i32_sdwa sext -> s[30:31]");
    assert_eq!(pair(56), eq, "v_cmp_eq_u32_sdwa scalar src1 -> s[56:57]");
    assert_eq!(pair(40), lt16, "v_cmp_lt_u16_sdwa -> s[40:41]");
    assert_eq!(pair(60), ne_vcc, "v_cmp_ne_u32_sdwa -> vcc (SD = 0)");
    assert_eq!(pair(26), x1, "v_cmpx_ne_u32_sdwa -> s[26:27]");
    assert_eq!(
        w.vcc(),
        x2,
        "v_cmpx_lt_u32_sdwa -> vcc under the first cmpx's EXEC"
    );
    assert_eq!(w.exec(), x2, "v_cmpx writes EXEC");
    for s in [28, 29, 32, 33, 42, 58, 59] {
        assert_eq!(w.sgpr[s], sent, "s{s} untouched");
    }
    for l in 0..64 {
        let want = if (x2 >> l) & 1 == 1 { 7 } else { sent };
        assert_eq!(w.vgpr[20][l], want, "v_mov under the cmpx EXEC, lane {l}");
    }
}
