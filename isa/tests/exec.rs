//! Per-instruction execution tests. Each test assembles a few instructions with
//! llvm-mc-16, runs them on one wave and compares registers/memory with values
//! computed here from the ISA definition (plain Rust on the test's own inputs).

#![allow(
    clippy::needless_range_loop,
    clippy::type_complexity,
    clippy::double_comparisons,
    clippy::nonminimal_bool,
    clippy::neg_cmp_op_on_partial_ord
)]

mod common;

use std::sync::Arc;

use common::{code, context, exec, run_wave, Code, TestMemory};
use isa::{Fault, HostRegion, MemoryRegion, Wave, WaveExit};

fn lanes_u32(f: impl Fn(usize) -> u32) -> [u32; 64] {
    std::array::from_fn(f)
}

#[test]
fn scalar_add_sub_carry_and_scc() {
    let mem = TestMemory::default();
    let (a, b) = (0xFFFF_FFF0u32, 0x20u32);
    let w = exec(&mem, "s_add_u32 s2, s0, s1\ns_cselect_b32 s3, 1, 0\ns_addc_u32 s4, s5, 0\ns_sub_u32 s6, s1, s0\ns_cselect_b32 s7, 1, 0\ns_add_i32 s8, s9, s10\ns_cselect_b32 s11, 1, 0", |w| {
        w.sgpr[0] = a;
        w.sgpr[1] = b;
        w.sgpr[5] = 41;
        w.sgpr[9] = i32::MAX as u32;
        w.sgpr[10] = 1;
    });
    assert_eq!(w.sgpr[2], a.wrapping_add(b));
    assert_eq!(w.sgpr[3], 1, "carry out of 0xFFFFFFF0 + 0x20");
    assert_eq!(w.sgpr[4], 42, "addc adds the carry");
    assert_eq!(w.sgpr[6], b.wrapping_sub(a));
    assert_eq!(w.sgpr[7], 1, "borrow of 0x20 - 0xFFFFFFF0");
    assert_eq!(w.sgpr[8], 0x8000_0000);
    assert_eq!(w.sgpr[11], 1, "signed overflow of i32::MAX + 1");
}

#[test]
fn scalar_logic_shifts_mul_and_movk() {
    let mem = TestMemory::default();
    let x: u64 = 0x0123_4567_89AB_CDEF;
    let y: u64 = 0x0F0F_0F0F_F0F0_F0F0;
    let w = exec(
        &mem,
        "s_and_b64 s[10:11], s[0:1], s[2:3]\ns_or_b64 s[12:13], s[0:1], s[2:3]\ns_andn2_b64 s[14:15], s[0:1], s[2:3]\ns_lshl_b64 s[16:17], s[0:1], 12\ns_lshl_b32 s18, s0, 4\ns_lshr_b32 s19, s0, 28\ns_mul_i32 s20, s4, s5\ns_movk_i32 s21, 0x8000\ns_and_b32 s22, s4, 0\ns_cselect_b32 s23, 7, 9\ns_or_b32 s24, s0, s1\ns_mov_b64 s[26:27], s[0:1]\ns_mov_b32 s25, -5",
        |w| {
            w.sgpr[0] = x as u32;
            w.sgpr[1] = (x >> 32) as u32;
            w.sgpr[2] = y as u32;
            w.sgpr[3] = (y >> 32) as u32;
            w.sgpr[4] = (-7i32) as u32;
            w.sgpr[5] = 6;
        },
    );
    let pair = |lo: usize| u64::from(w.sgpr[lo]) | u64::from(w.sgpr[lo + 1]) << 32;
    assert_eq!(pair(10), x & y);
    assert_eq!(pair(12), x | y);
    assert_eq!(pair(14), x & !y);
    assert_eq!(pair(16), x << 12);
    assert_eq!(w.sgpr[18], (x as u32) << 4);
    assert_eq!(w.sgpr[19], (x as u32) >> 28);
    assert_eq!(w.sgpr[20] as i32, -42);
    assert_eq!(w.sgpr[21], 0xFFFF_8000, "s_movk_i32 sign-extends");
    assert_eq!(w.sgpr[23], 9, "s_and_b32 with result 0 clears SCC");
    assert_eq!(w.sgpr[24], (x as u32) | (x >> 32) as u32);
    assert_eq!(pair(26), x);
    assert_eq!(w.sgpr[25] as i32, -5);
    assert!(w.scc, "last SCC writer is s_or_b32 with a non-zero result");
}

#[test]
fn scalar_compares_set_scc() {
    let mem = TestMemory::default();
    let cases: [(&str, u32, u32, bool); 8] = [
        ("s_cmp_eq_u32", 5, 5, true),
        ("s_cmp_lg_u32", 5, 5, false),
        ("s_cmp_lt_u32", 1, 0xFFFF_FFFF, true),
        ("s_cmp_lt_i32", 1, 0xFFFF_FFFF, false),
        ("s_cmp_gt_u32", 0xFFFF_FFFF, 1, true),
        ("s_cmp_gt_i32", 0xFFFF_FFFF, 1, false),
        ("s_cmp_eq_i32", 7, 8, false),
        ("s_cmp_lg_i32", 7, 8, true),
    ];
    for (mn, a, b, want) in cases {
        let w = exec(&mem, &format!("{mn} s0, s1"), |w| {
            w.sgpr[0] = a;
            w.sgpr[1] = b;
        });
        assert_eq!(w.scc, want, "{mn} {a:#x}, {b:#x}");
    }
}

#[test]
fn saveexec_and_exec_branches() {
    let mem = TestMemory::default();
    // exec &= vcc; branch over a v_mov when EXEC becomes zero.
    let src = "s_and_saveexec_b64 s[0:1], vcc\ns_cbranch_execz 1\nv_mov_b32_e32 v1, 5\ns_mov_b64 exec, s[0:1]";
    let w = exec(&mem, src, |w| {
        w.set_vcc(0x0000_00F0_0000_000F);
    });
    assert_eq!(w.exec(), u64::MAX, "restored");
    assert_eq!(w.sgpr[0], u32::MAX);
    for l in 0..64 {
        let active = (0x0000_00F0_0000_000Fu64 >> l) & 1 == 1;
        assert_eq!(w.vgpr[1][l], if active { 5 } else { 0 }, "lane {l}");
    }
    let w = exec(&mem, src, |w| w.set_vcc(0));
    assert!(w.vgpr[1].iter().all(|&v| v == 0), "execz skipped the v_mov");
}

#[test]
fn scc_and_vcc_branches_and_a_counted_loop() {
    let mem = TestMemory::default();
    // s1 = sum of 10..1; loop with s_cmp_lg / s_cbranch_scc1 (backward).
    let src = "s_mov_b32 s0, 10\ns_mov_b32 s1, 0\ns_add_u32 s1, s1, s0\ns_sub_u32 s0, s0, 1\ns_cmp_lg_u32 s0, 0\ns_cbranch_scc1 -4\ns_cmp_eq_u32 s1, 55\ns_cbranch_scc0 1\ns_mov_b32 s2, 1\ns_cbranch_vccz 1\ns_mov_b32 s3, 1\ns_cbranch_vccnz 1\ns_mov_b32 s4, 1";
    let w = exec(&mem, src, |w| w.set_vcc(0));
    assert_eq!(w.sgpr[1], (1..=10).sum::<u32>());
    assert_eq!(w.sgpr[2], 1, "scc0 not taken after equal compare");
    assert_eq!(w.sgpr[3], 0, "vccz taken");
    assert_eq!(w.sgpr[4], 1, "vccnz not taken");
}

#[test]
fn getpc_setpc_swappc() {
    let mem = TestMemory::default();
    // s_getpc at offset 0 returns offset 4; jump over one instruction with setpc.
    let src = "s_getpc_b64 s[0:1]\ns_add_u32 s2, s0, 16\ns_addc_u32 s3, s1, 0\ns_setpc_b64 s[2:3]\ns_mov_b32 s10, 1\ns_mov_b32 s11, 2";
    let c = code(&mem, src);
    let base = c.region.device_base();
    let mut w = Wave::new();
    w.set_exec(u64::MAX);
    w.pc = base;
    run_wave(&mem, &c, &mut w, &mut []).unwrap();
    let pc0 = u64::from(w.sgpr[0]) | u64::from(w.sgpr[1]) << 32;
    assert_eq!(pc0, base + 4);
    // All instructions are 4 bytes: target = base + 4 + 16 = offset 20 = s_mov_b32 s11.
    assert_eq!(c.offsets[5], 20);
    assert_eq!(w.sgpr[10], 0, "skipped");
    assert_eq!(w.sgpr[11], 2);
    // swappc: return address = next instruction.
    let c = code(&mem, "s_swappc_b64 s[30:31], s[4:5]\ns_mov_b32 s12, 3");
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    let target = c.region.device_base() + 4;
    w.sgpr[4] = target as u32;
    w.sgpr[5] = (target >> 32) as u32;
    run_wave(&mem, &c, &mut w, &mut []).unwrap();
    assert_eq!(
        u64::from(w.sgpr[30]) | u64::from(w.sgpr[31]) << 32,
        c.region.device_base() + 4
    );
    assert_eq!(w.sgpr[12], 3);
}

#[test]
fn scalar_loads_of_every_width() {
    let mem = TestMemory::default();
    let data = mem.alloc(256);
    let words: Vec<u32> = (0..64).map(|i| 0x1000_0000 + i * 0x0101).collect();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert!(data.write_bytes(0, &bytes));
    let base = data.device_base();
    let w = exec(
        &mem,
        "s_load_dword s2, s[0:1], 0x4\ns_load_dwordx2 s[4:5], s[0:1], 0x8\ns_load_dwordx4 s[8:11], s[0:1], 0x10\ns_load_dwordx8 s[16:23], s[0:1], 0x20\ns_load_dwordx16 s[32:47], s[0:1], 0x40\ns_waitcnt lgkmcnt(0)",
        |w| {
            w.sgpr[0] = base as u32;
            w.sgpr[1] = (base >> 32) as u32;
        },
    );
    assert_eq!(w.sgpr[2], words[1]);
    assert_eq!(&w.sgpr[4..6], &words[2..4]);
    assert_eq!(&w.sgpr[8..12], &words[4..8]);
    assert_eq!(&w.sgpr[16..24], &words[8..16]);
    assert_eq!(&w.sgpr[32..48], &words[16..32]);
}

#[test]
fn vector_integer_ops_respect_exec() {
    let mem = TestMemory::default();
    let exec_mask: u64 = 0xF0F0_0000_FFFF_0001;
    let a = lanes_u32(|l| (l as u32).wrapping_mul(0x9E37_79B9));
    let b = lanes_u32(|l| 0xFFFF_FFF0u32.wrapping_add(l as u32));
    let w = exec(
        &mem,
        "v_mov_b32_e32 v3, 7\nv_add_u32_e32 v4, v1, v2\nv_sub_u32_e32 v5, v1, v2\nv_lshlrev_b32_e32 v6, 3, v1\nv_lshrrev_b32_e32 v7, 5, v1\nv_and_b32_e32 v8, v1, v2\nv_or_b32_e32 v9, v1, v2\nv_mul_lo_u32 v10, v1, v2\nv_lshlrev_b64 v[12:13], 33, v[16:17]",
        |w| {
            w.vgpr[1] = a;
            w.vgpr[2] = b;
            w.vgpr[16] = a;
            w.vgpr[17] = b;
            for r in 3..14 {
                w.vgpr[r] = [0xDEAD; 64];
            }
            w.set_exec(exec_mask);
        },
    );
    for l in 0..64 {
        let on = (exec_mask >> l) & 1 == 1;
        let pick = |v: u32| if on { v } else { 0xDEAD };
        assert_eq!(w.vgpr[3][l], pick(7));
        assert_eq!(w.vgpr[4][l], pick(a[l].wrapping_add(b[l])), "lane {l}");
        assert_eq!(w.vgpr[5][l], pick(a[l].wrapping_sub(b[l])));
        assert_eq!(w.vgpr[6][l], pick(a[l] << 3));
        assert_eq!(w.vgpr[7][l], pick(a[l] >> 5));
        assert_eq!(w.vgpr[8][l], pick(a[l] & b[l]));
        assert_eq!(w.vgpr[9][l], pick(a[l] | b[l]));
        assert_eq!(w.vgpr[10][l], pick(a[l].wrapping_mul(b[l])));
        let wide = (u64::from(a[l]) | u64::from(b[l]) << 32) << 33;
        assert_eq!(w.vgpr[12][l], pick(wide as u32));
        assert_eq!(w.vgpr[13][l], pick((wide >> 32) as u32));
    }
}

#[test]
fn carry_chain_writes_vcc_and_sgpr_pairs() {
    let mem = TestMemory::default();
    let exec_mask: u64 = 0x7FFF_FFFF_FFFF_FFFE;
    let lo_a = lanes_u32(|l| if l % 2 == 0 { 0xFFFF_FFFF } else { l as u32 });
    let hi_a = lanes_u32(|l| l as u32 * 3);
    let lo_b = lanes_u32(|l| l as u32 + 1);
    let hi_b = lanes_u32(|_| 0xFFFF_FFFF);
    let w = exec(
        &mem,
        "v_add_co_u32_e32 v4, vcc, v0, v2\nv_addc_co_u32_e32 v5, vcc, v1, v3, vcc\nv_add_co_u32_e64 v6, s[20:21], v0, v2\nv_mad_u64_u32 v[8:9], s[22:23], v0, v2, v[0:1]",
        |w| {
            w.vgpr[0] = lo_a;
            w.vgpr[1] = hi_a;
            w.vgpr[2] = lo_b;
            w.vgpr[3] = hi_b;
            w.set_exec(exec_mask);
        },
    );
    let mut carry_hi = 0u64;
    let mut carry_lo = 0u64;
    let mut carry_mad = 0u64;
    for l in 0..64 {
        let on = (exec_mask >> l) & 1 == 1;
        let x = u128::from(lo_a[l]) | u128::from(hi_a[l]) << 32;
        let y = u128::from(lo_b[l]) | u128::from(hi_b[l]) << 32;
        let sum = x + y;
        let lo_sum = u64::from(lo_a[l]) + u64::from(lo_b[l]);
        let mad = u128::from(lo_a[l]) * u128::from(lo_b[l]) + x;
        if on {
            assert_eq!(w.vgpr[4][l], sum as u32, "lane {l}");
            assert_eq!(w.vgpr[5][l], (sum >> 32) as u32, "lane {l}");
            assert_eq!(w.vgpr[6][l], lo_sum as u32);
            assert_eq!(
                u64::from(w.vgpr[8][l]) | u64::from(w.vgpr[9][l]) << 32,
                mad as u64
            );
            carry_hi |= u64::from(sum >> 64 != 0) << l;
            carry_lo |= u64::from(lo_sum >> 32 != 0) << l;
            carry_mad |= u64::from(mad >> 64 != 0) << l;
        }
    }
    assert_eq!(w.vcc(), carry_hi, "64-bit carry out, inactive lanes 0");
    assert_eq!(
        u64::from(w.sgpr[20]) | u64::from(w.sgpr[21]) << 32,
        carry_lo
    );
    assert_eq!(
        u64::from(w.sgpr[22]) | u64::from(w.sgpr[23]) << 32,
        carry_mad
    );
}

#[test]
fn compares_cndmask_and_readfirstlane() {
    let mem = TestMemory::default();
    let exec_mask: u64 = 0xFFFF_0000_FFFF_FFF0;
    let a = lanes_u32(|l| (l as i32 - 32) as u32);
    let conds: [(&str, fn(u32, u32) -> bool); 12] = [
        ("v_cmp_eq_u32", |x, y| x == y),
        ("v_cmp_ne_u32", |x, y| x != y),
        ("v_cmp_lt_u32", |x, y| x < y),
        ("v_cmp_gt_u32", |x, y| x > y),
        ("v_cmp_le_u32", |x, y| x <= y),
        ("v_cmp_ge_u32", |x, y| x >= y),
        ("v_cmp_eq_i32", |x, y| x == y),
        ("v_cmp_ne_i32", |x, y| x != y),
        ("v_cmp_lt_i32", |x, y| (x as i32) < y as i32),
        ("v_cmp_gt_i32", |x, y| (x as i32) > y as i32),
        ("v_cmp_le_i32", |x, y| (x as i32) <= y as i32),
        ("v_cmp_ge_i32", |x, y| (x as i32) >= y as i32),
    ];
    for (mn, f) in conds {
        let w = exec(&mem, &format!("{mn}_e32 vcc, 3, v0\n{mn}_e64 s[10:11], v0, -4\nv_cndmask_b32_e32 v1, 17, v0, vcc\nv_readfirstlane_b32 s12, v0"), |w| {
            w.vgpr[0] = a;
            w.vgpr[1] = [0xDEAD; 64];
            w.set_exec(exec_mask);
        });
        let mut m1 = 0u64;
        let mut m2 = 0u64;
        for l in 0..64 {
            if (exec_mask >> l) & 1 == 1 {
                m1 |= u64::from(f(3, a[l])) << l;
                m2 |= u64::from(f(a[l], (-4i32) as u32)) << l;
            }
        }
        assert_eq!(w.vcc(), m1, "{mn} e32");
        assert_eq!(
            u64::from(w.sgpr[10]) | u64::from(w.sgpr[11]) << 32,
            m2,
            "{mn} e64"
        );
        for l in 0..64 {
            let want = if (exec_mask >> l) & 1 == 0 {
                0xDEAD
            } else if (m1 >> l) & 1 == 1 {
                a[l]
            } else {
                17
            };
            assert_eq!(w.vgpr[1][l], want, "{mn} cndmask lane {l}");
        }
        assert_eq!(w.sgpr[12], a[4], "first active lane is 4");
    }
}

#[test]
fn float_add_mul_fma_mac() {
    let mem = TestMemory::default();
    let a: [f32; 64] = std::array::from_fn(|l| l as f32 * 0.37 - 5.0);
    let b: [f32; 64] = std::array::from_fn(|l| 1.5 / (l as f32 + 1.0));
    let c: [f32; 64] = std::array::from_fn(|l| (l as f32).sqrt());
    let w = exec(
        &mem,
        "v_add_f32_e32 v3, v0, v1\nv_mul_f32_e32 v4, v0, v1\nv_fma_f32 v5, v0, v1, v2\nv_mov_b32_e32 v6, v2\nv_mac_f32_e32 v6, v0, v1\nv_mov_b32_e32 v7, v2\nv_fmac_f32_e32 v7, v0, v1\nv_add_f32_e64 v8, -|v0|, v1\nv_mul_f32_e32 v9, 0.5, v0",
        |w| {
            w.vgpr[0] = a.map(f32::to_bits);
            w.vgpr[1] = b.map(f32::to_bits);
            w.vgpr[2] = c.map(f32::to_bits);
        },
    );
    for l in 0..64 {
        let f = |r: usize| f32::from_bits(w.vgpr[r][l]);
        assert_eq!(f(3), a[l] + b[l]);
        assert_eq!(f(4), a[l] * b[l]);
        assert_eq!(f(5), a[l].mul_add(b[l], c[l]), "fma is fused");
        assert_eq!(f(6), a[l] * b[l] + c[l], "mac rounds the product");
        assert_eq!(f(7), a[l].mul_add(b[l], c[l]), "fmac is fused");
        assert_eq!(f(8), -a[l].abs() + b[l]);
        assert_eq!(f(9), 0.5 * a[l]);
    }
}

#[test]
fn global_loads_stores_and_atomics() {
    let mem = TestMemory::default();
    let buf = mem.alloc(64 * 16 + 64);
    let init: Vec<u32> = (0..(64 * 4 + 16) as u32).map(|i| i * 7 + 1).collect();
    assert!(buf.write_bytes(
        0,
        &init
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<_>>()
    ));
    let counter = mem.alloc(8);
    let out2 = mem.alloc(64 * 16 * 2);
    let base = buf.device_base();
    let exec_mask = 0x00FF_FFFF_FFFF_FF0Fu64;
    let w = exec(
        &mem,
        "v_lshlrev_b32_e32 v1, 4, v0\nglobal_load_dword v2, v1, s[0:1]\nglobal_load_dwordx2 v[4:5], v1, s[0:1] offset:4\nglobal_load_dwordx4 v[8:11], v1, s[0:1]\nv_add_u32_e32 v12, 1000, v2\nglobal_store_dword v1, v12, s[0:1] offset:12\nv_mov_b32_e32 v13, 1\nglobal_atomic_add v14, v15, v13, s[2:3] glc\nglobal_atomic_add v15, v13, s[2:3]\nglobal_store_dwordx4 v1, v[8:11], s[4:5]\nglobal_store_dwordx2 v1, v[4:5], s[4:5] offset:1024",
        |w| {
            w.vgpr[0] = lanes_u32(|l| l as u32);
            w.vgpr[15] = [0; 64];
            w.sgpr[0] = base as u32;
            w.sgpr[1] = (base >> 32) as u32;
            let cb = counter.device_base();
            w.sgpr[2] = cb as u32;
            w.sgpr[3] = (cb >> 32) as u32;
            let b2 = out2.device_base();
            w.sgpr[4] = b2 as u32;
            w.sgpr[5] = (b2 >> 32) as u32;
            w.set_exec(exec_mask);
        },
    );
    let mut out = vec![0u8; 64 * 16];
    assert!(buf.read_bytes(0, &mut out));
    let words: Vec<u32> = out
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let active: Vec<usize> = (0..64).filter(|l| (exec_mask >> l) & 1 == 1).collect();
    for l in 0..64 {
        let on = (exec_mask >> l) & 1 == 1;
        let i = 4 * l;
        if on {
            assert_eq!(w.vgpr[2][l], init[i]);
            assert_eq!([w.vgpr[4][l], w.vgpr[5][l]], [init[i + 1], init[i + 2]]);
            assert_eq!(
                [w.vgpr[8][l], w.vgpr[9][l], w.vgpr[10][l], w.vgpr[11][l]],
                [init[i], init[i + 1], init[i + 2], init[i + 3]]
            );
            assert_eq!(words[i + 3], init[i] + 1000, "store at +12");
        } else {
            assert_eq!(words[i + 3], init[i + 3], "inactive lane must not store");
        }
    }
    // The returning atomic gives each active lane a distinct old value 0..n.
    let mut olds: Vec<u32> = active.iter().map(|&l| w.vgpr[14][l]).collect();
    olds.sort_unstable();
    assert_eq!(olds, (0..active.len() as u32).collect::<Vec<_>>());
    let mut c = [0u8; 4];
    assert!(counter.read_bytes(0, &mut c));
    assert_eq!(
        u32::from_le_bytes(c),
        2 * active.len() as u32,
        "two atomics per active lane"
    );
    let mut o2 = vec![0u8; 64 * 16 * 2];
    assert!(out2.read_bytes(0, &mut o2));
    let o2: Vec<u32> = o2
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for l in 0..64 {
        let on = (exec_mask >> l) & 1 == 1;
        let i = 4 * l;
        let want4: Vec<u32> = if on {
            init[i..i + 4].to_vec()
        } else {
            vec![0; 4]
        };
        assert_eq!(&o2[i..i + 4], &want4[..], "x4 store lane {l}");
        let want2: Vec<u32> = if on {
            init[i + 1..i + 3].to_vec()
        } else {
            vec![0; 2]
        };
        assert_eq!(&o2[256 + i..256 + i + 2], &want2[..], "x2 store lane {l}");
    }
}

#[test]
fn out_of_region_access_is_a_memory_fault_and_touches_nothing() {
    let mem = TestMemory::default();
    let buf = mem.alloc(256);
    let base = buf.device_base();
    let c = code(
        &mem,
        "v_mov_b32_e32 v1, 9\nglobal_store_dword v0, v1, s[0:1]",
    );
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    w.set_exec(u64::MAX);
    // Lane l stores at base + 4*l; lanes 0..63 fit (256 bytes), lane 64 does not exist.
    // Make lane 40 point past the end.
    w.vgpr[0] = lanes_u32(|l| if l == 40 { 256 } else { 4 * l as u32 });
    w.sgpr[0] = base as u32;
    w.sgpr[1] = (base >> 32) as u32;
    let err = run_wave(&mem, &c, &mut w, &mut []).unwrap_err();
    match err {
        Fault::Memory {
            address,
            write,
            pc,
            lane,
            size,
        } => {
            assert_eq!(address, base + 256);
            assert!(write);
            assert_eq!(size, 4);
            assert_eq!(pc, c.region.device_base() + c.offsets[1]);
            assert_eq!(lane, Some(40));
        }
        other => panic!("unexpected {other:?}"),
    }
    // A load from an address that is in no region.
    let c = code(&mem, "global_load_dword v1, v[2:3], off");
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    w.set_exec(1);
    let err = run_wave(&mem, &c, &mut w, &mut []).unwrap_err();
    assert!(
        matches!(
            err,
            Fault::Memory {
                address: 0,
                write: false,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn flat_and_lds_accesses() {
    let mem = TestMemory::default();
    let buf = mem.alloc(64 * 4);
    let base = buf.device_base();
    let shared_hi = (isa::Apertures::KFD.shared_base >> 32) as u32;
    let c = code(
        &mem,
        "v_lshlrev_b32_e32 v1, 2, v0\nv_mul_lo_u32 v2, v0, v0\nds_write_b32 v1, v2 offset:64\nv_sub_u32_e32 v3, 63, v0\nv_lshlrev_b32_e32 v3, 2, v3\nds_read_b32 v4, v3 offset:64\nv_mov_b32_e32 v7, s1\nv_add_co_u32_e32 v6, vcc, s0, v1\nv_addc_co_u32_e32 v7, vcc, 0, v7, vcc\nflat_store_dword v[6:7], v4\nflat_load_dword v5, v[6:7]\nv_add_u32_e32 v8, 64, v1\nv_mov_b32_e32 v9, s2\nflat_load_dword v10, v[8:9]",
    );
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    w.set_exec(u64::MAX);
    w.vgpr[0] = lanes_u32(|l| l as u32);
    w.sgpr[0] = base as u32;
    w.sgpr[1] = (base >> 32) as u32;
    w.sgpr[2] = shared_hi;
    let mut lds = vec![0u8; 64 + 256];
    assert_eq!(
        run_wave(&mem, &c, &mut w, &mut lds).unwrap(),
        WaveExit::Ended
    );
    let mut out = vec![0u8; 256];
    assert!(buf.read_bytes(0, &mut out));
    for l in 0..64usize {
        let want = ((63 - l) * (63 - l)) as u32;
        assert_eq!(w.vgpr[4][l], want, "ds_read lane {l}");
        assert_eq!(
            u32::from_le_bytes(out[4 * l..4 * l + 4].try_into().unwrap()),
            want
        );
        assert_eq!(w.vgpr[5][l], want, "flat load from global");
        assert_eq!(
            w.vgpr[10][l],
            (l * l) as u32,
            "flat load through the shared aperture reads LDS"
        );
    }
    // LDS out of range.
    let c = code(&mem, "ds_read_b32 v1, v0 offset:16");
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    w.set_exec(1);
    let mut lds = vec![0u8; 16];
    let err = run_wave(&mem, &c, &mut w, &mut lds).unwrap_err();
    assert!(
        matches!(
            err,
            Fault::LdsOutOfRange {
                offset: 16,
                size: 4,
                lds_size: 16,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn barrier_trap_and_waitcnt_exits() {
    let mem = TestMemory::default();
    let c = code(
        &mem,
        "s_waitcnt vmcnt(0) lgkmcnt(0)\ns_nop 3\ns_barrier\ns_setprio 2\ns_sleep 1\ns_trap 2",
    );
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    assert_eq!(
        run_wave(&mem, &c, &mut w, &mut []).unwrap(),
        WaveExit::Barrier
    );
    assert_eq!(w.pc, c.region.device_base() + c.offsets[3]);
    assert_eq!(
        run_wave(&mem, &c, &mut w, &mut []).unwrap(),
        WaveExit::Yield
    );
    let err = run_wave(&mem, &c, &mut w, &mut []).unwrap_err();
    assert_eq!(
        err,
        Fault::Trap {
            pc: c.region.device_base() + c.offsets[5],
            trap_id: 2
        }
    );
}

#[test]
fn runaway_wave_hits_the_instruction_budget() {
    let mem = TestMemory::default();
    let c = code(&mem, "s_branch -1");
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    let err = w
        .run(&c.program, &mut context(&mem, &mut [], 1000, u64::MAX))
        .unwrap_err();
    assert_eq!(
        err,
        Fault::InstructionLimit {
            limit: 1000,
            pc: c.region.device_base()
        }
    );
}

/// A gather (every lane active, scattered aligned addresses) in a wave that shares
/// its worker with others (finite `yield_after`) first yields at itself, having
/// changed no register and counted nothing, then loads, when the wave resumes,
/// what each lane addresses; a wave alone (`yield_after` = never) loads at once.
/// 64 KiB of memory filled with bytes made from `k` (they differ from one byte to
/// the next and from one table to the other), and those bytes.
fn gather_table(mem: &TestMemory, k: u32) -> (Arc<HostRegion>, Vec<u8>) {
    let data = mem.alloc(1 << 16);
    let bytes: Vec<u8> = (0..1u32 << 16).map(|i| (i * k + (i >> 7)) as u8).collect();
    assert!(data.write_bytes(0, &bytes));
    (data, bytes)
}

/// A wave at the start of `c`, every lane active, lane l's v[0:1] pointing at byte
/// `at(l)` of `data`.
fn gathering_wave(c: &Code, data: &HostRegion, at: impl Fn(usize) -> usize) -> Wave {
    let mut w = Wave::new();
    w.set_exec(u64::MAX);
    w.pc = c.region.device_base();
    for l in 0..64 {
        let a = data.device_base() + at(l) as u64;
        (w.vgpr[0][l], w.vgpr[1][l]) = (a as u32, (a >> 32) as u32);
    }
    w
}

#[test]
fn a_gather_among_other_waves_yields_at_itself_then_loads() {
    let mem = TestMemory::default();
    let (data, bytes) = gather_table(&mem, 29);
    let at = |l: usize| ((l * 40_503 + 977 * (l % 3)) % ((1 << 16) - 8)) & !7;
    let le32 = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let c = code(
        &mem,
        "global_load_dwordx2 v[6:7], v[0:1], off\nv_add_u32_e32 v8, 1, v6",
    );
    for alone in [false, true] {
        let mut w = gathering_wave(&c, &data, at);
        w.vgpr[6] = [0xDEAD; 64];
        let mut ctx = context(&mem, &mut [], 1000, if alone { u64::MAX } else { 1000 });
        if !alone {
            assert_eq!(w.run(&c.program, &mut ctx).unwrap(), WaveExit::Yield);
            assert_eq!(w.pc, c.region.device_base(), "resumes at the gather");
            assert_eq!(w.instructions, 0, "the gather has not run");
            assert_eq!(w.vgpr[6], [0xDEAD; 64]);
        }
        assert_eq!(
            w.run(&c.program, &mut ctx).unwrap(),
            WaveExit::Ended,
            "alone: {alone}"
        );
        assert_eq!(w.instructions, 3, "the gather, the add and s_endpgm");
        for l in 0..64 {
            assert_eq!(w.vgpr[6][l], le32(at(l)), "lane {l}");
            assert_eq!(w.vgpr[7][l], le32(at(l) + 4), "lane {l}");
            assert_eq!(w.vgpr[8][l], le32(at(l)).wrapping_add(1), "lane {l}");
        }
    }
}

/// A gather that yielded runs, when the wave resumes, on the addresses it noted, and
/// the note is used once: the same instruction met again in a loop, its address
/// registers moved on, yields again and loads what the new addresses hold.
#[test]
fn a_resumed_gather_uses_its_note_once() {
    let mem = TestMemory::default();
    let (data, bytes) = gather_table(&mem, 53);
    let at = |l: usize| ((l * 29_717 + 313 * (l % 5)) % ((1 << 16) - 16)) & !7;
    let le32 = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    // Two passes: each loads lane l's qword, adds its dwords into v8/v9, then moves
    // the lane's address on by 8 bytes.
    let c = code(
        &mem,
        "global_load_dwordx2 v[6:7], v[0:1], off
v_add_u32_e32 v8, v8, v6
v_add_u32_e32 v9, v9, v7
v_add_co_u32_e32 v0, vcc, 8, v0
v_addc_co_u32_e32 v1, vcc, 0, v1, vcc
s_sub_u32 s2, s2, 1
s_cmp_lg_u32 s2, 0
s_cbranch_scc1 -9",
    );
    let mut w = gathering_wave(&c, &data, at);
    w.sgpr[2] = 2;
    let mut ctx = context(&mem, &mut [], 1000, 1000);
    let mut yields = 0;
    while w.run(&c.program, &mut ctx).unwrap() == WaveExit::Yield {
        yields += 1;
        assert!(yields <= 2, "a gather yields once per execution");
    }
    assert_eq!(yields, 2);
    for l in 0..64 {
        let (a, b) = (at(l), at(l) + 8);
        assert_eq!(w.vgpr[8][l], le32(a).wrapping_add(le32(b)), "lane {l}");
        assert_eq!(
            w.vgpr[9][l],
            le32(a + 4).wrapping_add(le32(b + 4)),
            "lane {l}"
        );
    }
}

#[test]
fn float_compares_treat_nan_as_unordered() {
    let mem = TestMemory::default();
    let vals = [0.0f32, -1.0, 2.5, f32::NAN, f32::INFINITY, -0.0];
    let a: [u32; 64] = std::array::from_fn(|l| vals[l % 6].to_bits());
    let b: [u32; 64] = std::array::from_fn(|l| vals[(l / 6) % 6].to_bits());
    let conds: [(&str, fn(f32, f32) -> bool); 6] = [
        ("v_cmp_lt_f32", |x, y| x < y),
        ("v_cmp_lg_f32", |x, y| x < y || x > y),
        ("v_cmp_neq_f32", |x, y| !(x == y)),
        ("v_cmp_nlg_f32", |x, y| !(x < y || x > y)),
        ("v_cmp_o_f32", |x, y| !x.is_nan() && !y.is_nan()),
        ("v_cmp_u_f32", |x, y| x.is_nan() || y.is_nan()),
    ];
    for (mn, f) in conds {
        let w = exec(&mem, &format!("{mn}_e32 vcc, v0, v1"), |w| {
            w.vgpr[0] = a;
            w.vgpr[1] = b;
        });
        let mut m = 0u64;
        for l in 0..64 {
            m |= u64::from(f(f32::from_bits(a[l]), f32::from_bits(b[l]))) << l;
        }
        assert_eq!(w.vcc(), m, "{mn}");
    }
}

#[test]
fn sdwa_selects_sources_and_merges_the_destination() {
    let mem = TestMemory::default();
    let a = lanes_u32(|l| 0x8123_4567u32.wrapping_mul(l as u32 + 1));
    let b = lanes_u32(|l| 0x00F0_FF0Fu32.rotate_left(l as u32));
    let w = exec(
        &mem,
        "v_sub_u32_sdwa v2, v0, v1 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0 src1_sel:WORD_0\nv_add_u32_sdwa v3, sext(v0), v1 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_0 src1_sel:WORD_1\nv_add_u32_sdwa v4, v0, v1 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_2 src1_sel:BYTE_3\nv_cmp_ne_u32_sdwa s[8:9], v0, v1 src0_sel:BYTE_0 src1_sel:BYTE_0\nv_mul_lo_u16_e32 v5, v0, v1",
        |w| {
            w.vgpr[0] = a;
            w.vgpr[1] = b;
            w.vgpr[3] = [0xCAFE_BABE; 64];
        },
    );
    let mut ne = 0u64;
    for l in 0..64 {
        let (x, y) = (a[l], b[l]);
        assert_eq!(
            w.vgpr[2][l],
            (x & 0xFFFF).wrapping_sub(y & 0xFFFF),
            "sub lane {l}"
        );
        let sum = ((x & 0xFF) as u8 as i8 as i32 as u32).wrapping_add(y >> 16);
        assert_eq!(
            w.vgpr[3][l],
            (0xCAFE_BABE & !0xFF00) | ((sum & 0xFF) << 8),
            "add byte1 lane {l}"
        );
        let sum = ((x >> 16) & 0xFF) + (y >> 24);
        assert_eq!(w.vgpr[4][l], (sum & 0xFFFF) << 16, "add word1 lane {l}");
        ne |= u64::from((x & 0xFF) != (y & 0xFF)) << l;
        assert_eq!(
            w.vgpr[5][l],
            u32::from((x as u16).wrapping_mul(y as u16)),
            "mul_lo_u16 lane {l}"
        );
    }
    assert_eq!(u64::from(w.sgpr[8]) | u64::from(w.sgpr[9]) << 32, ne);
}
