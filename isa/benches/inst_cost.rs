//! Cost of single wave-instructions on the ISA engine, in ns per wave-instruction
//! (64 lanes, full EXEC unless the case says otherwise), for the forms that
//! dominate LLVM 16's OpenMP loops (STREAM, gather): `cargo bench -p isa --bench
//! inst_cost [FILTER]`.
//!
//! Each case is an instruction repeated `REPEAT` times inside a counted loop
//! (assembled by llvm-mc-16); the loop's own cost, measured with `s_nop 0` in the
//! body, is subtracted. Prints a table; asserts nothing.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::{code, run_wave, TestMemory};
use isa::{MemoryRegion, Wave, WaveExit, WAVE_SIZE};

/// Copies of the instruction per loop iteration.
const REPEAT: usize = 32;
/// Loop iterations per timed run.
const ITERS: u32 = 2000;

/// Iterations: `INST_COST_ITERS` or [`ITERS`].
fn iters() -> u32 {
    std::env::var("INST_COST_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITERS)
}

/// (label, instruction text, EXEC).
const CASES: &[(&str, &str, u64)] = &[
    ("s_add_u32", "s_add_u32 s8, s8, s10", u64::MAX),
    ("s_cselect_b32", "s_cselect_b32 s17, s5, s7", u64::MAX),
    ("v_mov_b32 sgpr", "v_mov_b32_e32 v0, s21", u64::MAX),
    ("v_mov_b32 vgpr", "v_mov_b32_e32 v5, v2", u64::MAX),
    ("v_or_b32", "v_or_b32_e32 v3, s15, v1", u64::MAX),
    ("v_add_u32", "v_add_u32_e32 v9, v3, v9", u64::MAX),
    ("v_sub_u32", "v_sub_u32_e32 v3, v0, v3", u64::MAX),
    ("v_subrev_u32", "v_subrev_u32_e32 v4, s14, v3", u64::MAX),
    ("v_mul_hi_u32", "v_mul_hi_u32 v3, v0, v8", u64::MAX),
    ("v_mul_lo_u32", "v_mul_lo_u32 v3, v3, s14", u64::MAX),
    ("v_cmp_le_u32", "v_cmp_le_u32_e32 vcc, s14, v3", u64::MAX),
    ("v_cmp_ne_u64", "v_cmp_ne_u64_e32 vcc, 0, v[2:3]", u64::MAX),
    (
        "v_add_co_u32 sgpr",
        "v_add_co_u32_e32 v14, vcc, s20, v4",
        u64::MAX,
    ),
    (
        "v_addc_co_u32",
        "v_addc_co_u32_e32 v15, vcc, v0, v5, vcc",
        u64::MAX,
    ),
    (
        "v_add_co_u32 e64",
        "v_add_co_u32_e64 v4, s[4:5], v4, v8",
        u64::MAX,
    ),
    (
        "v_cmp_lt_u64",
        "v_cmp_lt_u64_e32 vcc, s[16:17], v[2:3]",
        u64::MAX,
    ),
    ("v_cmp_eq_u32", "v_cmp_eq_u32_e32 vcc, v7, v6", u64::MAX),
    (
        "v_cndmask_b32",
        "v_cndmask_b32_e32 v0, 0, v11, vcc",
        u64::MAX,
    ),
    ("v_lshlrev_b64", "v_lshlrev_b64 v[4:5], 3, v[0:1]", u64::MAX),
    (
        "v_pk_mov_b32",
        "v_pk_mov_b32 v[2:3], s[6:7], s[6:7] op_sel:[0,1]",
        u64::MAX,
    ),
    (
        "v_fma_f64",
        "v_fma_f64 v[14:15], v[16:17], s[6:7], v[18:19]",
        u64::MAX,
    ),
    (
        "v_add_f64",
        "v_add_f64 v[14:15], v[16:17], v[18:19]",
        u64::MAX,
    ),
    (
        "flat_load_dwordx2",
        "flat_load_dwordx2 v[14:15], v[20:21]",
        u64::MAX,
    ),
    (
        "flat_store_dwordx2",
        "flat_store_dwordx2 v[20:21], v[14:15]",
        u64::MAX,
    ),
    (
        "global_load_dword",
        "global_load_dword v14, v[24:25], off",
        u64::MAX,
    ),
    (
        "global_store_dword",
        "global_store_dword v[24:25], v14, off",
        u64::MAX,
    ),
    (
        "flat_load_dword gather",
        "flat_load_dword v14, v[22:23]",
        u64::MAX,
    ),
    (
        "ds_read_b32 broadcast",
        "ds_read_b32 v7, v1 offset:24",
        u64::MAX,
    ),
    (
        "ds_read2_b32 broadcast",
        "ds_read2_b32 v[6:7], v1 offset0:1 offset1:2",
        u64::MAX,
    ),
    ("ds_write_b32 lanes", "ds_write_b32 v12, v10", u64::MAX),
    ("ds_write_b32 lane 0", "ds_write_b32 v1, v0 offset:24", 1),
    ("ds_bpermute_b32", "ds_bpermute_b32 v14, v12, v10", u64::MAX),
    (
        "ds_bpermute_b32 shuffle down",
        "ds_bpermute_b32 v14, v26, v10",
        u64::MAX,
    ),
    // The VALU and scalar instructions of STREAM copy's inner loop (LLVM 16, -O2),
    // in order: one copy is 12 instructions (compare with the sum of their rows).
    (
        "STREAM copy loop mix (12 instructions)",
        "v_mov_b32_e32 v0, s21\nv_add_co_u32_e32 v14, vcc, s20, v4\nv_addc_co_u32_e32 v15, vcc, v0, v5, vcc\nv_add_co_u32_e32 v2, vcc, v2, v6\nv_addc_co_u32_e32 v3, vcc, v3, v7, vcc\nv_mov_b32_e32 v0, s15\nv_add_co_u32_e32 v16, vcc, s14, v4\nv_add_co_u32_e64 v4, s[4:5], v4, v8\nv_addc_co_u32_e32 v17, vcc, v0, v5, vcc\nv_addc_co_u32_e64 v5, vcc, v5, v9, s[4:5]\nv_cmp_lt_u64_e32 vcc, s[16:17], v[2:3]\ns_or_b64 s[24:25], vcc, s[24:25]",
        u64::MAX,
    ),
    // One wave: `Wave::run` returns at each barrier and is entered again.
    ("s_barrier (leave and re-enter run)", "s_barrier", u64::MAX),
    (
        "v_add_co_u32 half exec",
        "v_add_co_u32_e32 v14, vcc, s20, v4",
        0xffff_ffff,
    ),
];

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mem = TestMemory::default();
    // Data for the memory cases: 64 lanes x 16 bytes, and a 16 MiB table for the
    // gather case.
    let buf = mem.alloc(64 * 16);
    let table = mem.alloc(16 << 20);
    let iters = iters();
    let empty = time(&mem, "s_nop 0", u64::MAX, &buf, &table);
    println!("ISA engine: ns per wave-instruction ({REPEAT} copies x {iters} iterations, loop cost {:.2} ns subtracted)", empty);
    for (label, text, exec) in CASES {
        if !filter.is_empty() && !filter.iter().any(|f| label.contains(f.as_str())) {
            continue;
        }
        let t = time(&mem, text, *exec, &buf, &table) - empty;
        println!("{label:<28} {t:>8.2}   {text}");
    }
}

/// Best of 11 runs: ns per copy of `text` in the loop.
fn time(
    mem: &TestMemory,
    text: &str,
    exec: u64,
    buf: &isa::HostRegion,
    table: &isa::HostRegion,
) -> f64 {
    let iters = iters();
    let body: String = std::iter::repeat_n(format!("{text}\n"), REPEAT).collect();
    // llvm-mc leaves a label's branch offset as a fixup: the offset is computed here
    // (in dwords from the end of the branch back to the body's first instruction).
    let body_bytes: usize = common::assemble(&body).iter().map(|(_, b)| b.len()).sum();
    let back = -((body_bytes as i64 + 12) / 4);
    let src = format!(
        "s_mov_b32 s100, {iters}\n{body}s_sub_u32 s100, s100, 1\ns_cmp_lg_u32 s100, 0\ns_cbranch_scc1 {back}"
    );
    let c = code(mem, &src);
    let mut best = f64::MAX;
    for _ in 0..11 {
        let mut w = setup(buf, table, exec);
        w.pc = c.region.device_base();
        let mut lds = vec![0u8; 4096];
        let t0 = Instant::now();
        let exit = run_wave_long(mem, &c, &mut w, &mut lds);
        let dt = t0.elapsed().as_secs_f64();
        assert_eq!(exit, WaveExit::Ended, "{text}");
        best = best.min(dt * 1e9 / (REPEAT as f64 * f64::from(iters)));
    }
    best
}

fn run_wave_long(mem: &TestMemory, c: &common::Code, w: &mut Wave, lds: &mut [u8]) -> WaveExit {
    let _ = run_wave;
    let mut ctx = isa::WaveContext {
        memory: mem,
        lds,
        apertures: isa::Apertures::KFD,
        stop: None,
        max_instructions: u64::MAX,
        yield_after: u64::MAX,
    };
    loop {
        match w.run(&c.program, &mut ctx).expect("the case runs") {
            WaveExit::Barrier => continue,
            exit => return exit,
        }
    }
}

/// A wave with lane-varying registers, valid addresses for the memory cases and
/// EXEC = `exec`.
fn setup(buf: &isa::HostRegion, table: &isa::HostRegion, exec: u64) -> Wave {
    let mut w = Wave::new();
    w.reset(64, 0);
    for (r, reg) in w.vgpr.iter_mut().enumerate().take(64) {
        for (l, v) in reg.iter_mut().enumerate() {
            // Small integers in even registers, the high dword of a normal double
            // (1.0 .. 2.0) in odd ones: every register pair is a normal f64
            // (denormals would time the host FPU's slow path, not the engine).
            let small = (r * 977 + l * 131) as u32 & 0xffff;
            *v = if r % 2 == 1 {
                0x3ff0_0000 | small
            } else {
                small
            };
        }
    }
    // A 64-bit address in the register pair r, r+1 of lane l.
    let pair = |w: &mut Wave, r: usize, l: usize, a: u64| {
        w.vgpr[r][l] = a as u32;
        w.vgpr[r + 1][l] = (a >> 32) as u32;
    };
    for l in 0..WAVE_SIZE {
        // v1: LDS address 0 in every lane; v12: lane l's dword (tid*4+40).
        w.vgpr[1][l] = 0;
        w.vgpr[12][l] = 40 + 4 * l as u32;
        // v26: LLVM's shuffle-down by 8 lanes as a ds_bpermute_b32 address.
        w.vgpr[26][l] = 4 * if l + 8 < WAVE_SIZE { l + 8 } else { l } as u32;
        // v[20:21]: consecutive 8-byte elements of `buf`; v[24:25]: consecutive
        // dwords of `buf`; v[22:23]: scattered dwords of `table`.
        pair(&mut w, 20, l, buf.device_base() + 8 * l as u64);
        pair(&mut w, 24, l, buf.device_base() + 4 * l as u64);
        let g = (l as u64 * 2_654_435_761) % (4 << 20);
        pair(&mut w, 22, l, table.device_base() + 4 * g);
    }
    for (k, s) in w.sgpr.iter_mut().enumerate().take(100) {
        // Odd SGPRs: the high dword of a normal double, as above.
        *s = if k % 2 == 1 {
            0x3ff0_0000 | k as u32
        } else {
            k as u32 * 7
        };
    }
    // MODE as clang's kernels set it (round to nearest even, denormals kept,
    // DX10_CLAMP and IEEE on): the planned f64 forms need it.
    w.mode = 0x3F0;
    w.set_exec(exec);
    w
}
