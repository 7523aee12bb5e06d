//! VOP3P: gfx90a packed f32 (fma/mul/add with op_sel/op_sel_hi/neg, `v_pk_mov_b32`),
//! packed 16-bit integer and f16 ops, mixed-precision FMA, dot products, AGPR moves;
//! against Rust references written from the ISA definitions, under a mixed EXEC.

#![allow(clippy::needless_range_loop)]

mod common;
mod valu_util;

use valu_util::*;

const SENT: u32 = 0x0BAD_CAFE;

fn f(b: u32) -> f32 {
    f32::from_bits(b)
}

#[test]
fn packed_f32_ops() {
    let mut r = Rng(21);
    let regs: Vec<[u32; 64]> = (0..6)
        .map(|_| std::array::from_fn(|_| r.f32_mid()))
        .collect();
    let src = "v_pk_fma_f32 v[10:11], v[2:3], v[4:5], v[6:7]
v_pk_mul_f32 v[12:13], v[2:3], v[4:5] op_sel:[1,0] op_sel_hi:[0,1]
v_pk_add_f32 v[14:15], v[2:3], v[4:5] neg_lo:[1,0] neg_hi:[0,1]
v_pk_mov_b32 v[16:17], v[2:3], v[4:5] op_sel:[1,0]
v_pk_mov_b32 v[18:19], s[20:21], s[20:21] op_sel:[0,1]
v_pk_mul_f32 v[20:21], v[2:3], 0.5 op_sel_hi:[1,0]
v_pk_fma_f32 v[22:23], v[2:3], v[4:5], v[6:7] op_sel:[0,1,1] op_sel_hi:[1,0,0] neg_lo:[0,0,1]";
    let w = run(src, MODE_IEEE, |w| {
        for k in 0..6 {
            w.vgpr[2 + k] = regs[k];
        }
        w.sgpr[20] = 0x1111_2222;
        w.sgpr[21] = 0x3333_4444;
        for k in 10..24 {
            w.vgpr[k] = [SENT; 64];
        }
        w.set_exec(EXEC_MIX);
    });
    for l in 0..64 {
        if (EXEC_MIX >> l) & 1 == 0 {
            for k in 10..24 {
                assert_eq!(w.vgpr[k][l], SENT);
            }
            continue;
        }
        let v = |k: usize| f(regs[k - 2][l]);
        let chk = |reg: usize, want: f32, what: &str| {
            assert_eq!(w.vgpr[reg][l], want.to_bits(), "{what} lane {l}")
        };
        chk(10, v(2).mul_add(v(4), v(6)), "pk_fma lo");
        chk(11, v(3).mul_add(v(5), v(7)), "pk_fma hi");
        chk(12, v(3) * v(4), "pk_mul op_sel lo");
        chk(13, v(2) * v(5), "pk_mul op_sel_hi hi");
        chk(14, -v(2) + v(4), "pk_add neg_lo");
        chk(15, v(3) + -v(5), "pk_add neg_hi");
        assert_eq!(w.vgpr[16][l], regs[1][l], "pk_mov lo = src0 dword 1");
        assert_eq!(w.vgpr[17][l], regs[2][l], "pk_mov hi = src1 dword 0");
        assert_eq!(w.vgpr[18][l], 0x1111_2222, "64-bit move lo");
        assert_eq!(w.vgpr[19][l], 0x3333_4444, "64-bit move hi");
        chk(20, v(2) * 0.5, "constant lo");
        chk(21, v(3) * 0.5, "constant in the high half too");
        chk(22, v(2).mul_add(v(5), -v(7)), "pk_fma mixed selects lo");
        chk(23, v(3).mul_add(v(4), v(6)), "pk_fma mixed selects hi");
    }
}

#[test]
fn packed_16_bit_integer_ops() {
    let mut r = Rng(5);
    let a: [u32; 64] = std::array::from_fn(|l| {
        if l < 4 {
            [0x7FFF_8000, 0xFFFF_0001, 0x8000_7FFF, 0][l]
        } else {
            r.u32()
        }
    });
    let b: [u32; 64] = std::array::from_fn(|l| {
        if l < 4 {
            [0x0001_FFFF, 0x0001_FFFF, 0xFFFF_0001, 0][l]
        } else {
            r.u32()
        }
    });
    let c: [u32; 64] = std::array::from_fn(|_| r.u32());
    let src = "v_pk_add_u16 v10, v1, v2
v_pk_add_i16 v11, v1, v2 clamp
v_pk_sub_u16 v12, v1, v2 clamp
v_pk_mul_lo_u16 v13, v1, v2
v_pk_mad_i16 v14, v1, v2, v3
v_pk_lshlrev_b16 v15, v1, v2
v_pk_ashrrev_i16 v16, v1, v2
v_pk_max_i16 v17, v1, v2
v_pk_min_u16 v18, v1, v2 op_sel:[1,0] op_sel_hi:[0,1]
v_pk_sub_i16 v19, v1, v2";
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = a;
        w.vgpr[2] = b;
        w.vgpr[3] = c;
    });
    let lo = |v: u32| v as u16;
    let hi = |v: u32| (v >> 16) as u16;
    let pk = |l: u16, h: u16| u32::from(l) | u32::from(h) << 16;
    for l in 0..64 {
        let (x, y, z) = (a[l], b[l], c[l]);
        let both =
            |f: &dyn Fn(u16, u16, u16) -> u16| pk(f(lo(x), lo(y), lo(z)), f(hi(x), hi(y), hi(z)));
        assert_eq!(w.vgpr[10][l], both(&|p, q, _| p.wrapping_add(q)));
        assert_eq!(
            w.vgpr[11][l],
            both(&|p, q, _| (p as i16).saturating_add(q as i16) as u16),
            "lane {l}"
        );
        assert_eq!(w.vgpr[12][l], both(&|p, q, _| p.saturating_sub(q)));
        assert_eq!(w.vgpr[13][l], both(&|p, q, _| p.wrapping_mul(q)));
        assert_eq!(
            w.vgpr[14][l],
            both(&|p, q, r| (p as i16).wrapping_mul(q as i16).wrapping_add(r as i16) as u16)
        );
        assert_eq!(w.vgpr[15][l], both(&|p, q, _| q << (p & 15)));
        assert_eq!(
            w.vgpr[16][l],
            both(&|p, q, _| ((q as i16) >> (p & 15)) as u16)
        );
        assert_eq!(
            w.vgpr[17][l],
            both(&|p, q, _| (p as i16).max(q as i16) as u16)
        );
        assert_eq!(
            w.vgpr[18][l],
            pk(hi(x).min(lo(y)), lo(x).min(hi(y))),
            "op_sel picks halves"
        );
        assert_eq!(w.vgpr[19][l], both(&|p, q, _| p.wrapping_sub(q)));
    }
}

/// Random f16 of magnitude 2^-6 .. 2^6.
fn h16(r: &mut Rng) -> u16 {
    let v = r.u32();
    let e = 9 + (v >> 10) % 13;
    ((v & 0x83FF) | (e << 10)) as u16
}

#[test]
fn packed_f16_mix_and_dot() {
    let mut r = Rng(66);
    let pk2 = |r: &mut Rng| u32::from(h16(r)) | u32::from(h16(r)) << 16;
    let a: [u32; 64] = std::array::from_fn(|_| pk2(&mut r));
    let b: [u32; 64] = std::array::from_fn(|_| pk2(&mut r));
    let c: [u32; 64] = std::array::from_fn(|_| pk2(&mut r));
    let fc: [u32; 64] = std::array::from_fn(|_| r.f32_mid());
    let src = "v_pk_add_f16 v10, v1, v2
v_pk_mul_f16 v11, v1, v2 neg_lo:[1,0] neg_hi:[0,1]
v_pk_fma_f16 v12, v1, v2, v3
v_pk_max_f16 v13, v1, v2
v_fma_mix_f32 v14, v1, v2, v4 op_sel_hi:[1,1,0]
v_fma_mixlo_f16 v15, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[1,1,1]
v_fma_mixhi_f16 v16, v1, v4, v3 op_sel_hi:[1,0,1]
v_dot2_f32_f16 v17, v1, v2, v4
v_dot2_i32_i16 v18, v1, v2, v3
v_dot4_u32_u8 v19, v1, v2, v3
v_dot8_i32_i4 v20, v1, v2, v3
v_pk_add_f16 v21, v1, 1.0 op_sel_hi:[1,0]";
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = a;
        w.vgpr[2] = b;
        w.vgpr[3] = c;
        w.vgpr[4] = fc;
        for k in 10..22 {
            w.vgpr[k] = [SENT; 64];
        }
    });
    let lo = |v: u32| h2d(v as u16);
    let hi = |v: u32| h2d((v >> 16) as u16);
    let pk = |l: f64, h: f64| u32::from(d2h_ref(l)) | u32::from(d2h_ref(h)) << 16;
    for l in 0..64 {
        let (x, y, z) = (a[l], b[l], c[l]);
        assert_eq!(
            w.vgpr[10][l],
            pk(lo(x) + lo(y), hi(x) + hi(y)),
            "pk_add_f16 lane {l}"
        );
        assert_eq!(
            w.vgpr[11][l],
            pk(-lo(x) * lo(y), hi(x) * -hi(y)),
            "pk_mul_f16 neg"
        );
        assert_eq!(
            w.vgpr[12][l],
            pk(lo(x) * lo(y) + lo(z), hi(x) * hi(y) + hi(z)),
            "pk_fma_f16"
        );
        assert_eq!(
            w.vgpr[13][l],
            pk(lo(x).max(lo(y)), hi(x).max(hi(y))),
            "pk_max_f16"
        );
        let m = (lo(x) * lo(y) + f64::from(f(fc[l]))) as f32;
        assert_eq!(
            w.vgpr[14][l],
            m.to_bits(),
            "fma_mix_f32 (exact product, one rounding)"
        );
        let mlo = d2h_ref(hi(x) * lo(y) + lo(z));
        assert_eq!(
            w.vgpr[15][l],
            (SENT & 0xFFFF_0000) | u32::from(mlo),
            "fma_mixlo keeps the high half"
        );
        let exact = lo(x) * f64::from(f(fc[l])) + lo(z);
        assert_eq!(
            w.vgpr[16][l] >> 16,
            u32::from(d2h_ref(exact)),
            "fma_mixhi with an f32 src1"
        );
        assert_eq!(w.vgpr[16][l] & 0xFFFF, SENT & 0xFFFF);
        let dot = (lo(x) * lo(y) + hi(x) * hi(y) + f64::from(f(fc[l]))) as f32;
        assert!(ulp32(f(w.vgpr[17][l]), dot) <= 1, "dot2_f32_f16 lane {l}");
        let i16s = |v: u32, k: u32| i64::from((v >> (16 * k)) as u16 as i16);
        let d2 = i16s(x, 0) * i16s(y, 0) + i16s(x, 1) * i16s(y, 1) + i64::from(z as i32);
        assert_eq!(w.vgpr[18][l], d2 as u32, "dot2_i32_i16");
        let d4: u64 = (0..4)
            .map(|k| u64::from((x >> (8 * k)) & 0xFF) * u64::from((y >> (8 * k)) & 0xFF))
            .sum::<u64>()
            + u64::from(z);
        assert_eq!(w.vgpr[19][l], d4 as u32, "dot4_u32_u8");
        let n4 = |v: u32, k: u32| i64::from((((v >> (4 * k)) & 0xF) << 28) as i32 >> 28);
        let d8: i64 = (0..8).map(|k| n4(x, k) * n4(y, k)).sum::<i64>() + i64::from(z as i32);
        assert_eq!(w.vgpr[20][l], d8 as u32, "dot8_i32_i4");
        assert_eq!(
            w.vgpr[21][l],
            pk(lo(x) + 1.0, hi(x) + 1.0),
            "f16 inline constant, op_sel_hi 0"
        );
    }
}

#[test]
fn accvgpr_moves_respect_exec() {
    let src = "v_accvgpr_write_b32 a3, v1\nv_accvgpr_read_b32 v2, a3\nv_accvgpr_write_b32 a4, 7\nv_accvgpr_mov_b32 a5, a4";
    let v1: [u32; 64] = lanes(|l| 3 * l as u32);
    let w = run(src, MODE_IEEE, |w| {
        w.vgpr[1] = v1;
        w.vgpr[2] = [SENT; 64];
        w.set_exec(EXEC_MIX);
    });
    for l in 0..64 {
        let on = (EXEC_MIX >> l) & 1 == 1;
        assert_eq!(w.vgpr[2][l], if on { v1[l] } else { SENT });
        assert_eq!(w.vgpr[isa::AGPR_BASE + 5][l], if on { 7 } else { 0 });
    }
}

#[test]
fn mfma_is_reported_unsupported_by_name() {
    let mem = common::TestMemory::default();
    let c = common::code(&mem, "v_mfma_f32_4x4x1f32 a[0:3], v0, v1, a[0:3]");
    use isa::MemoryRegion;
    let mut w = isa::Wave::new();
    w.set_exec(u64::MAX);
    w.pc = c.region.device_base();
    let err = common::run_wave(&mem, &c, &mut w, &mut []).unwrap_err();
    match err {
        isa::Fault::Unsupported { mnemonic, .. } => assert_eq!(mnemonic, "v_mfma_f32_4x4x1f32"),
        other => panic!("unexpected {other:?}"),
    }
}
