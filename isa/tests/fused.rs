//! Fused runs (straight runs of integer VALU instructions compiled to host code)
//! against the interpreter: random programs of the fusable forms, assembled by
//! llvm-mc-16, run from random register contents on a program with fusion and on
//! one without (`Program::without_fusion`, every instruction interpreted); every
//! register of the two waves must be equal.

mod common;

use std::sync::Arc;

use common::{assemble, context, Rng, TestMemory};
use isa::{Apertures, HostRegion, MemoryRegion, Program, Wave, WaveExit, WAVE_SIZE};

/// The compare conditions of `v_cmp_*` (the e64 cases leave out `f` and `t`).
const CONDITIONS: [&str; 8] = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"];

/// The 32-bit SOP2 forms with host code in runs (`s_<op> sdst, src0, src1`).
const SOP2_32: [&str; 26] = [
    "add_u32",
    "sub_u32",
    "add_i32",
    "sub_i32",
    "addc_u32",
    "subb_u32",
    "min_i32",
    "min_u32",
    "max_i32",
    "max_u32",
    "cselect_b32",
    "and_b32",
    "or_b32",
    "xor_b32",
    "andn2_b32",
    "orn2_b32",
    "lshl_b32",
    "lshr_b32",
    "ashr_i32",
    "bfm_b32",
    "mul_i32",
    "mul_hi_u32",
    "lshl1_add_u32",
    "lshl2_add_u32",
    "lshl3_add_u32",
    "lshl4_add_u32",
];

/// The 64-bit SOP2 forms with host code in runs.
const SOP2_64: [&str; 9] = [
    "cselect_b64",
    "and_b64",
    "or_b64",
    "xor_b64",
    "andn2_b64",
    "orn2_b64",
    "nand_b64",
    "nor_b64",
    "xnor_b64",
];

/// The operations of `s_<op>_saveexec_b64`.
const SAVEEXEC: [&str; 10] = [
    "and", "or", "xor", "andn2", "orn2", "nand", "nor", "xnor", "andn1", "orn1",
];

/// The conditions of the 32-bit `s_cmp_<c>_{i32,u32}`.
const SCMP: [&str; 6] = ["eq", "lg", "gt", "ge", "lt", "le"];

/// Vector registers the programs use (v0..v11; pairs start at even registers).
const VREGS: usize = 12;

/// Random operand generators for the instruction forms.
struct Gen<'r> {
    rng: &'r mut Rng,
}

impl Gen<'_> {
    fn v(&mut self) -> String {
        format!("v{}", self.rng.below(VREGS))
    }
    fn vpair(&mut self) -> String {
        let r = 2 * self.rng.below(VREGS / 2);
        format!("v[{}:{}]", r, r + 1)
    }
    fn s(&mut self) -> String {
        format!("s{}", 8 + self.rng.below(6))
    }
    fn spair(&mut self) -> String {
        let r = 8 + 2 * self.rng.below(3);
        format!("s[{}:{}]", r, r + 1)
    }
    fn inline(&mut self) -> String {
        (self.rng.below(81) as i32 - 16).to_string()
    }
    /// An e32 src0: any register or constant, or a literal.
    fn src0(&mut self) -> String {
        match self.rng.below(4) {
            0 => self.s(),
            1 => self.inline(),
            2 => format!("0x{:x}", self.rng.value()),
            _ => self.v(),
        }
    }
    /// A VOP3 source: a vector register or an inline constant (VOP3 takes no
    /// literal, and one scalar read at most is left to `src0`).
    fn src3(&mut self) -> String {
        if self.rng.below(3) == 0 {
            self.inline()
        } else {
            self.v()
        }
    }
    /// A mask destination of the VOP3 carry ops and compares.
    fn mask(&mut self) -> &'static str {
        self.rng.pick(&["vcc", "s[4:5]", "s[6:7]"])
    }
    /// A VOP3 64-bit source: a register pair or an inline constant.
    fn src3_64(&mut self) -> String {
        if self.rng.below(4) == 0 {
            self.rng
                .pick(&["0", "1.0", "-2.0", "0.5", "-4.0", "-1"])
                .to_string()
        } else {
            self.vpair()
        }
    }

    /// A 64-bit e32 src0.
    fn src0_64(&mut self) -> String {
        match self.rng.below(3) {
            0 => self.spair(),
            1 => self.inline(),
            _ => self.vpair(),
        }
    }

    /// One instruction of a fusable form (or, rarely, one that is not, so that runs
    /// end inside the program).
    fn inst(&mut self) -> String {
        let (d, a, b) = (self.v(), self.src0(), self.v());
        match self.rng.below(26) {
            0 => format!("v_mov_b32_e32 {d}, {a}"),
            1 => {
                let op = self.rng.pick(&[
                    "and_b32",
                    "or_b32",
                    "xor_b32",
                    "lshlrev_b32",
                    "lshrrev_b32",
                    "ashrrev_i32",
                    "min_i32",
                    "max_i32",
                    "min_u32",
                    "max_u32",
                    "mul_u32_u24",
                    "add_u32",
                    "sub_u32",
                    "subrev_u32",
                ]);
                format!("v_{op}_e32 {d}, {a}, {b}")
            }
            2 => {
                let op = self.rng.pick(&["mul_lo_u32", "mul_hi_u32", "mul_hi_i32"]);
                let (x, y) = (self.src3(), self.src3());
                format!("v_{op} {d}, {x}, {y}")
            }
            3 => format!("v_not_b32_e32 {d}, {a}"),
            4 => {
                let op = self.rng.pick(&[
                    "add3_u32",
                    "lshl_add_u32",
                    "add_lshl_u32",
                    "lshl_or_b32",
                    "and_or_b32",
                    "or3_b32",
                    "xad_u32",
                    "bfi_b32",
                    "min3_u32",
                    "max3_u32",
                    "min3_i32",
                    "max3_i32",
                ]);
                let (x, y, z) = (self.src3(), self.src3(), self.src3());
                format!("v_{op} {d}, {x}, {y}, {z}")
            }
            5 | 6 => {
                let op = self
                    .rng
                    .pick(&["add_co_u32", "sub_co_u32", "subrev_co_u32"]);
                format!("v_{op}_e32 {d}, vcc, {a}, {b}")
            }
            7 => {
                let op = self
                    .rng
                    .pick(&["add_co_u32", "sub_co_u32", "subrev_co_u32"]);
                let (m, x, y) = (self.mask(), self.src3(), self.src3());
                format!("v_{op}_e64 {d}, {m}, {x}, {y}")
            }
            8 | 9 => {
                let op = self
                    .rng
                    .pick(&["addc_co_u32", "subb_co_u32", "subbrev_co_u32"]);
                // VCC is the one scalar read these forms may make.
                let a = self.src3();
                format!("v_{op}_e32 {d}, vcc, {a}, {b}, vcc")
            }
            10 => {
                let op = self
                    .rng
                    .pick(&["addc_co_u32", "subb_co_u32", "subbrev_co_u32"]);
                let (m, x, y, c) = (self.mask(), self.src3(), self.src3(), self.mask());
                format!("v_{op}_e64 {d}, {m}, {x}, {y}, {c}")
            }
            11 => {
                let x = self.src3();
                format!("v_cndmask_b32_e32 {d}, {x}, {b}, vcc")
            }
            12 => {
                let (x, y, m) = (self.src3(), self.src3(), self.mask());
                format!("v_cndmask_b32_e64 {d}, {x}, {y}, {m}")
            }
            13 | 14 => {
                let c = self.rng.pick(&CONDITIONS);
                let t = self.rng.pick(&["i32", "u32"]);
                format!("v_cmp_{c}_{t}_e32 vcc, {a}, {b}")
            }
            15 => {
                let c = self.rng.pick(&CONDITIONS[1..7]);
                let t = self.rng.pick(&["i32", "u32"]);
                let (m, x, y) = (self.mask(), self.src3(), self.src3());
                format!("v_cmp_{c}_{t}_e64 {m}, {x}, {y}")
            }
            16 | 17 => {
                let c = self.rng.pick(&CONDITIONS);
                let t = self.rng.pick(&["i64", "u64"]);
                let (x, y) = (self.src0_64(), self.vpair());
                format!("v_cmp_{c}_{t}_e32 vcc, {x}, {y}")
            }
            18 => {
                let op = self
                    .rng
                    .pick(&["lshlrev_b64", "lshrrev_b64", "ashrrev_i64"]);
                let n = self.rng.below(64);
                let (d, x) = (self.vpair(), self.vpair());
                format!("v_{op} {d}, {n}, {x}")
            }
            19 => {
                let (d, x, y) = (self.vpair(), self.vpair(), self.vpair());
                let sel = self.rng.pick(&["[0,0]", "[0,1]", "[1,0]", "[1,1]"]);
                format!("v_pk_mov_b32 {d}, {x}, {y} op_sel:{sel}")
            }
            // A scalar dword written as a mask, then read as a value: the run must
            // end between the two.
            20 => {
                let (x, y) = (self.src3(), self.src3());
                format!("v_add_co_u32_e64 {d}, s[4:5], {x}, {y}\nv_mov_b32_e32 {b}, s5")
            }
            21 | 22 => {
                let d = self.vpair();
                match self.rng.below(4) {
                    0 => {
                        let (x, y) = (self.src3_64(), self.src3_64());
                        format!("v_add_f64 {d}, {x}, {y}")
                    }
                    1 => {
                        let (x, y) = (self.src3_64(), self.src3_64());
                        format!("v_mul_f64 {d}, {x}, {y}")
                    }
                    2 => {
                        let (x, y, z) = (self.src3_64(), self.src3_64(), self.src3_64());
                        format!("v_fma_f64 {d}, {x}, {y}, {z}")
                    }
                    _ => {
                        let (x, y) = (self.src0_64(), self.vpair());
                        format!("v_fmac_f64_e32 {d}, {x}, {y}")
                    }
                }
            }
            // A scalar instruction (three times in 26): it joins a run when it can run before the
            // run's vector instructions (it writes nothing they read or wrote before
            // it, and reads nothing they wrote), else it ends the run.
            _ => self
                .rng
                .pick(&[
                    "s_add_u32 s8, s8, s9",
                    "s_addc_u32 s13, s13, 0",
                    "s_cmp_eq_u64 s[8:9], 0",
                    "s_cselect_b32 s11, s8, s9",
                    "s_mov_b32 s10, s11",
                    "s_movk_i32 s12, 0x1234",
                    "s_waitcnt vmcnt(0)",
                    "s_and_b64 s[6:7], vcc, exec",
                    "s_mov_b64 vcc, s[8:9]",
                    "s_mov_b32 s4, 7",
                    "s_add_u32 s40, s41, 1",
                ])
                .to_string(),
        }
    }
}

impl Gen<'_> {
    /// A 32-bit scalar source: s8..s13, an inline constant or a literal.
    fn ssrc(&mut self) -> String {
        match self.rng.below(4) {
            0 => self.inline(),
            1 => format!("0x{:x}", self.rng.value()),
            _ => self.s(),
        }
    }
    /// A 64-bit scalar source: a pair, VCC, EXEC or an inline constant.
    fn ssrc64(&mut self) -> String {
        match self.rng.below(6) {
            0 => self.inline(),
            1 => "vcc".to_string(),
            2 => "exec".to_string(),
            _ => self.spair(),
        }
    }
    /// A 64-bit scalar destination: mostly a pair, sometimes VCC or EXEC.
    fn sdst64(&mut self) -> String {
        match self.rng.below(8) {
            0 => "vcc".to_string(),
            1 => "exec".to_string(),
            _ => self.spair(),
        }
    }

    /// One scalar instruction of any planned form (and a few unplanned ones, which
    /// end runs), reading and writing s8..s13, VCC, EXEC and SCC.
    fn scalar(&mut self) -> String {
        match self.rng.below(9) {
            0..=2 => {
                // The forms with host code, and a few without (they end runs).
                let op = if self.rng.below(8) == 0 {
                    self.rng
                        .pick(&["nand_b32", "nor_b32", "xnor_b32", "bfe_u32"])
                } else {
                    self.rng.pick(&SOP2_32)
                };
                let (d, a) = (self.s(), self.ssrc());
                // One literal at most.
                let b = if a.starts_with("0x") {
                    self.s()
                } else {
                    self.ssrc()
                };
                format!("s_{op} {d}, {a}, {b}")
            }
            3 | 4 => {
                let op = self.rng.pick(&SOP2_64);
                let (d, a, b) = (self.sdst64(), self.ssrc64(), self.ssrc64());
                format!("s_{op} {d}, {a}, {b}")
            }
            5 => {
                let op = self.rng.pick(&["lshl_b64", "lshr_b64", "ashr_i64"]);
                let (d, a, b) = (self.sdst64(), self.ssrc64(), self.ssrc());
                format!("s_{op} {d}, {a}, {b}")
            }
            6 => {
                let c = self.rng.pick(&SCMP);
                let t = self.rng.pick(&["i32", "u32"]);
                let a = self.ssrc();
                let b = if a.starts_with("0x") {
                    self.s()
                } else {
                    self.ssrc()
                };
                match self.rng.below(4) {
                    0 => {
                        let op = self.rng.pick(&["bitcmp0_b32", "bitcmp1_b32"]);
                        format!("s_{op} {a}, {b}")
                    }
                    1 => {
                        let op = self.rng.pick(&[
                            "bitcmp0_b64",
                            "bitcmp1_b64",
                            "cmp_eq_u64",
                            "cmp_lg_u64",
                        ]);
                        let x = self.ssrc64();
                        let y = if op.starts_with("bit") {
                            self.ssrc()
                        } else {
                            self.ssrc64()
                        };
                        format!("s_{op} {x}, {y}")
                    }
                    _ => format!("s_cmp_{c}_{t} {a}, {b}"),
                }
            }
            7 => {
                let op = self.rng.pick(&SAVEEXEC);
                let (d, a) = (self.spair(), self.ssrc64());
                format!("s_{op}_saveexec_b64 {d}, {a}")
            }
            _ => match self.rng.below(8) {
                6 => {
                    let c = self.rng.pick(&SCMP);
                    let t = self.rng.pick(&["i32", "u32"]);
                    let k = self.rng.below(0x10000);
                    format!("s_cmpk_{c}_{t} {}, 0x{k:x}", self.s())
                }
                7 => {
                    let t = self.rng.pick(&["i8", "i16"]);
                    format!("s_sext_i32_{t} {}, {}", self.s(), self.ssrc())
                }
                0 => format!("s_mov_b32 {}, {}", self.s(), self.ssrc()),
                1 => format!("s_mov_b64 {}, {}", self.sdst64(), self.ssrc64()),
                2 => format!("s_movk_i32 {}, 0x{:x}", self.s(), self.rng.below(0x10000)),
                3 => "s_waitcnt vmcnt(0) lgkmcnt(0)".to_string(),
                4 => "s_nop 1".to_string(),
                _ => format!("s_not_b32 {}, {}", self.s(), self.s()),
            },
        }
    }
}

/// `text` assembled into memory of `mem`: a program with fused runs, one that
/// interprets every instruction, and the address of the first instruction.
fn programs(mem: &TestMemory, text: &str) -> (Program, Program, u64) {
    let (r, start) = code(mem, text);
    (Program::new(&r), Program::new(&r).without_fusion(), start)
}

/// `text` assembled into memory of `mem`: programs with fused runs in the host's
/// forms (AVX-512 where it has it) and in AVX2 forms only, one that interprets
/// every instruction, and the address of the first instruction.
fn forms(mem: &TestMemory, text: &str) -> ([Program; 2], Program, u64) {
    let (r, start) = code(mem, text);
    (
        [Program::new(&r), Program::new(&r).without_avx512()],
        Program::new(&r).without_fusion(),
        start,
    )
}

/// `text` assembled into memory of `mem`: the region and the address of the first
/// instruction.
fn code(mem: &TestMemory, text: &str) -> (Arc<dyn MemoryRegion>, u64) {
    let bytes: Vec<u8> = assemble(text).into_iter().flat_map(|(_, b)| b).collect();
    let region = mem.alloc(bytes.len() as u64 + 64);
    assert!(region.write_bytes(0, &bytes));
    let start = region.device_base();
    (region, start)
}

/// Runs `program` from `start` on `w`.
fn run(mem: &TestMemory, program: &Program, start: u64, mut w: Wave) -> Wave {
    w.pc = start;
    let mut lds = vec![0u8; 64];
    let mut ctx = context(mem, &mut lds, 1_000_000, u64::MAX);
    assert_eq!(
        w.run(program, &mut ctx).expect("wave runs"),
        WaveExit::Ended
    );
    w
}

/// A wave with random lanes in v0..v11, random s4..s13 and VCC, and `exec`; MODE
/// keeps f64 denormals (as kernels set it) in three waves of four, else flushes them
/// (fused runs with f64 ops then decline).
fn random_wave(rng: &mut Rng, exec: u64) -> Wave {
    let mut w = Wave::new();
    w.mode = if rng.below(4) == 0 { 0 } else { 0xF0 };
    for r in 0..VREGS {
        for l in 0..WAVE_SIZE {
            w.vgpr[r][l] = rng.value();
        }
    }
    for s in [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 106, 107] {
        w.sgpr[s] = rng.value();
    }
    w.set_exec(exec);
    w
}

/// Runs `text` (fused and interpreted) from a random wave; panics on a difference.
/// Returns the instructions that ran fused.
fn check_text(text: &str, seed: u64) -> usize {
    check_wave(text, || random_wave(&mut Rng(seed), u64::MAX))
}

/// Runs `text` (fused, in both forms, and interpreted) from the wave `wave` makes;
/// panics on a difference. Returns the instructions that ran fused.
fn check_wave(text: &str, wave: impl Fn() -> Wave) -> usize {
    let mem = TestMemory::default();
    let (fused, without, start) = forms(&mem, &format!("{text}\ns_endpgm\n"));
    let b = run(&mem, &without, start, wave());
    for (with, forms) in fused.iter().zip(["host", "AVX2"]) {
        let a = run(&mem, with, start, wave());
        for reg in 0..VREGS {
            assert_eq!(
                a.vgpr[reg], b.vgpr[reg],
                "v{reg} differs ({forms} forms):\n{text}"
            );
        }
        assert_eq!(a.sgpr, b.sgpr, "sgprs differ ({forms} forms):\n{text}");
    }
    fused[0].fused_instructions(start)
}

#[test]
fn stream_loop_arithmetic_runs_fused() {
    // STREAM copy's inner-loop VALU run (LLVM 16, -O2): interleaved 64-bit address
    // adds through VCC and s[4:5], then the loop compare.
    let text = "v_add_co_u32_e32 v2, vcc, v2, v6
v_addc_co_u32_e32 v3, vcc, v3, v7, vcc
v_mov_b32_e32 v0, s11
v_add_co_u32_e32 v10, vcc, s10, v4
v_add_co_u32_e64 v4, s[4:5], v4, v8
v_addc_co_u32_e32 v11, vcc, v0, v5, vcc
v_addc_co_u32_e64 v5, vcc, v5, v9, s[4:5]
v_cmp_lt_u64_e32 vcc, s[8:9], v[2:3]";
    let fused = check_text(text, 3);
    if std::arch::is_x86_feature_detected!("avx2") {
        assert_eq!(fused, 8);
    }
    // The high-half multiplies and 64-bit shifts by constants.
    let text = "v_mul_hi_u32 v3, v7, v5
v_mul_hi_i32 v4, v7, v5
v_lshlrev_b64 v[6:7], 3, v[0:1]
v_lshrrev_b64 v[8:9], 33, v[0:1]
v_ashrrev_i64 v[10:11], 63, v[0:1]
v_ashrrev_i64 v[0:1], 5, v[0:1]";
    for seed in 1..4 {
        check_text(text, seed);
    }
}

/// `n` random programs of `len` instructions, each run from two random waves (all
/// lanes active; `exec` otherwise): fused and interpreted results are equal.
/// Returns the instructions that ran fused.
fn check_programs(seed: u64, n: usize, len: usize, exec: u64) -> usize {
    let mut rng = Rng(seed);
    let mem = TestMemory::default();
    let mut fused = 0;
    for case in 0..n {
        let src: Vec<String> = {
            let mut g = Gen { rng: &mut rng };
            (0..len).map(|_| g.inst()).collect()
        };
        let text = src.join("\n") + "\ns_endpgm\n";
        fused += compare_fused(&mem, &text, case, [u64::MAX, exec], &mut rng, random_wave);
    }
    fused
}

/// Assembles `text` (case `case`) and runs it on programs with fusion (the host's
/// forms and AVX2 forms) and on one without, from the same wave (`wave(rng, exec)` on a generator seeded from `rng`)
/// for each EXEC of `execs`; panics on a difference in the registers, SCC or the
/// instruction count. Returns the instructions that ran fused.
fn compare_fused(
    mem: &TestMemory,
    text: &str,
    case: usize,
    execs: [u64; 2],
    rng: &mut Rng,
    wave: impl Fn(&mut Rng, u64) -> Wave,
) -> usize {
    let (fused, without, start) = forms(mem, text);
    for exec in execs {
        // The same wave three times (from one seed).
        let seed = rng.next() | 1;
        let b = run(mem, &without, start, wave(&mut Rng(seed), exec));
        for (with, forms) in fused.iter().zip(["host", "AVX2"]) {
            let a = run(mem, with, start, wave(&mut Rng(seed), exec));
            for reg in 0..VREGS {
                assert_eq!(
                    a.vgpr[reg], b.vgpr[reg],
                    "v{reg} differs, case {case} (exec {exec:#x}, {forms} forms):\n{text}"
                );
            }
            assert_eq!(
                a.sgpr, b.sgpr,
                "sgprs differ, case {case} ({forms} forms):\n{text}"
            );
            assert_eq!(
                a.scc, b.scc,
                "SCC differs, case {case} ({forms} forms):\n{text}"
            );
            assert_eq!(
                a.instructions, b.instructions,
                "case {case} ({forms} forms)"
            );
        }
    }
    fused[0].fused_instructions(start)
}

#[test]
fn fused_runs_compute_what_the_interpreter_computes() {
    let fused = check_programs(0x5EED_0001, 60, 24, 0xFFFF_0000_FFFF_FFF0);
    // The programs must actually have been fused (on hosts that can): otherwise
    // this test compares the interpreter with itself.
    if std::arch::is_x86_feature_detected!("avx2") {
        assert!(fused > 60 * 24 / 4, "only {fused} instructions ran fused");
    }
}

/// Where [`uniform_wave`] breaks the uniformity of a wave.
#[derive(Clone, Copy, Debug)]
enum Odd {
    /// Nowhere.
    None,
    /// Lane `.1` of row `.0`, in one bit.
    Lane(usize, usize),
    /// Bit `.1` of the mask at scalar dword `.0` (s4, s6 or VCC).
    Mask(usize, usize),
}

/// A wave as [`random_wave`] makes, but with each of v0..v11 one value in all 64
/// lanes (the rows of unoptimised code, computed from scalars) and s[4:5], s[6:7]
/// and VCC each all clear or all set (a compare's result on such rows), except
/// where `odd` says.
fn uniform_wave(rng: &mut Rng, exec: u64, odd: Odd) -> Wave {
    let mut w = random_wave(rng, exec);
    for r in 0..VREGS {
        w.vgpr[r] = [w.vgpr[r][0]; WAVE_SIZE];
    }
    for s in [4, 6, 106] {
        let m = if rng.below(2) == 0 { 0 } else { u32::MAX };
        w.sgpr[s] = m;
        w.sgpr[s + 1] = m;
    }
    match odd {
        Odd::None => {}
        Odd::Lane(r, lane) => w.vgpr[r][lane] ^= 1 << rng.below(32),
        Odd::Mask(s, bit) => w.sgpr[s + bit / 32] ^= 1 << (bit % 32),
    }
    w
}

#[test]
fn parts_on_rows_equal_in_every_lane_give_the_interpreters_results() {
    // Rows equal in every lane and masks all clear or all set: parts run one group
    // for the wave, and must write every lane of their rows and all 64 bits of
    // their masks. One lane differing (the last one, or one the first check does
    // not look at), or one bit of a mask, must send the part to the group loop.
    let mut rng = Rng(0x5EED_0003);
    let mem = TestMemory::default();
    let mut fused = 0;
    for case in 0..40 {
        let src: Vec<String> = {
            let mut g = Gen { rng: &mut rng };
            (0..24).map(|_| g.inst()).collect()
        };
        let text = src.join("\n") + "\ns_endpgm\n";
        let row = rng.below(VREGS);
        let lane = 1 + rng.below(WAVE_SIZE - 2);
        let mask = Odd::Mask([4, 6, 106][rng.below(3)], rng.below(64));
        for odd in [
            Odd::None,
            Odd::Lane(row, WAVE_SIZE - 1),
            Odd::Lane(row, lane),
            mask,
        ] {
            let wave = |rng: &mut Rng, exec| uniform_wave(rng, exec, odd);
            fused += compare_fused(&mem, &text, case, [u64::MAX; 2], &mut rng, wave);
        }
    }
    if fuses() {
        assert!(
            fused > 40 * 4 * 24 / 4,
            "only {fused} instructions ran fused"
        );
    }
    // Lane numbers differ by lane whatever the rows hold.
    let text = "v_mbcnt_lo_u32_b32 v0, -1, 0
v_add_u32_e32 v2, v3, v4
v_mbcnt_hi_u32_b32 v1, -1, v2
v_lshlrev_b32_e32 v5, 2, v1";
    for seed in 1..4 {
        check_wave(text, || uniform_wave(&mut Rng(seed), u64::MAX, Odd::None));
    }
}

#[test]
fn long_fused_runs_keep_masks_in_order() {
    // Longer programs: masks written, read and overwritten many times in one run.
    let fused = check_programs(0x5EED_0002, 12, 120, u64::MAX >> 1);
    if std::arch::is_x86_feature_detected!("avx2") {
        assert!(fused > 12 * 120 / 4, "only {fused} instructions ran fused");
    }
}

/// Whether this host runs fused runs (elsewhere the tests only compare the
/// interpreter with itself).
fn fuses() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

#[test]
fn f64_specials_give_the_interpreters_results_and_nans() {
    // Every pair of specials (infinities, zeros, quiet and signalling NaNs with
    // payloads, 1.0, a denormal) in 64 lanes: NaN operands, invalid operations
    // (inf - inf, 0 * inf) and denormal results.
    let specials: [u64; 8] = [
        0x7FF0_0000_0000_0000,
        0xFFF0_0000_0000_0000,
        0,
        0x8000_0000_0000_0000,
        0x7FF8_0000_0000_1234,
        0xFFF4_0000_0000_0042,
        0x3FF0_0000_0000_0000,
        0x0000_0000_0000_0003,
    ];
    let wave = || {
        let mut w = random_wave(&mut Rng(5), u64::MAX);
        w.mode = 0xF0;
        for l in 0..WAVE_SIZE {
            let (x, y) = (specials[l % 8], specials[l / 8]);
            (w.vgpr[2][l], w.vgpr[3][l]) = (x as u32, (x >> 32) as u32);
            (w.vgpr[4][l], w.vgpr[5][l]) = (y as u32, (y >> 32) as u32);
            (w.vgpr[6][l], w.vgpr[7][l]) = (y as u32, (x >> 32) as u32);
        }
        w
    };
    let text = "v_add_f64 v[0:1], v[2:3], v[4:5]
v_mul_f64 v[8:9], v[2:3], v[4:5]
v_fma_f64 v[10:11], v[2:3], v[4:5], v[6:7]
v_fmac_f64_e32 v[6:7], v[4:5], v[2:3]
v_add_f64 v[2:3], v[4:5], -v[2:3]";
    let fused = check_wave(text, wave);
    if fuses() {
        // The last has a modifier (no plan).
        assert_eq!(fused, 4);
    }
}

#[test]
fn a_linked_branch_leaves_an_f64_run_to_the_interpreter_when_mode_flushes() {
    // Run A (scalar only) jumps to run B (an f64 add of denormals), which loops back
    // to A four times: once linked, A's branch enters B's code directly, and must
    // not when MODE flushes f64 denormals (B's plan would keep them). Offsets: A at
    // 0x08, B at 0x14; `s_cbranch_scc1` at 0x1c goes back 6 dwords to A.
    let text = "s_mov_b32 s20, 0
s_branch 0
s_add_u32 s20, s20, 1
s_cmp_lt_u32 s20, 4
s_branch 0
v_add_f64 v[0:1], v[0:1], v[4:5]
s_cbranch_scc1 65530
s_endpgm
";
    let mem = TestMemory::default();
    let (with, without, start) = programs(&mem, text);
    let wave = |mode: u32| {
        let mut w = random_wave(&mut Rng(9), u64::MAX);
        w.mode = mode;
        for l in 0..WAVE_SIZE {
            // v[0:1] = 0, v[4:5] = the denormal 3 (or, in lane 5, the normal 1.0).
            let d: u64 = if l == 5 { 0x3FF0_0000_0000_0000 } else { 3 };
            (w.vgpr[0][l], w.vgpr[1][l]) = (0, 0);
            (w.vgpr[4][l], w.vgpr[5][l]) = (d as u32, (d >> 32) as u32);
        }
        w
    };
    // MODE 0xF0 keeps f64 denormals: every instruction but `s_endpgm` runs fused,
    // and the branches are linked; 0x30 then flushes them: B is interpreted.
    for (mode, fused) in [(0xF0, 2 + 4 * 5), (0x30, 2 + 4 * 3)] {
        let a = run(&mem, &with, start, wave(mode));
        let b = run(&mem, &without, start, wave(mode));
        assert_eq!(
            (a.vgpr[0], a.vgpr[1]),
            (b.vgpr[0], b.vgpr[1]),
            "MODE {mode:#x}"
        );
        assert_eq!(a.instructions, b.instructions, "MODE {mode:#x}");
        assert_eq!(a.instructions, 2 + 4 * 5 + 1);
        if fuses() {
            assert_eq!(a.fused_instructions, fused, "MODE {mode:#x}");
        }
        // The oracle: four adds of 3 (12), or of flushed denormals (0); 4.0 in lane 5.
        let lane = |w: &Wave, l: usize| u64::from(w.vgpr[1][l]) << 32 | u64::from(w.vgpr[0][l]);
        let sum: u64 = if mode == 0xF0 { 12 } else { 0 };
        assert_eq!(lane(&b, 0), sum, "MODE {mode:#x}");
        assert_eq!(f64::from_bits(lane(&b, 5)), 4.0);
    }
}

#[test]
fn calls_and_returns_leave_runs_for_the_addresses_they_read() {
    // A function at 0x4c (v0 += 3, s21 += 1) called from a loop (0x14, five times,
    // returning to 0x18) and once more after it (0x34, returning to 0x38), as
    // unoptimised code calls: `s_getpc_b64`, the offset added, `s_swappc_b64`; it
    // returns with `s_setpc_b64`. Once linked, each jump enters its target's run
    // directly; the last return, to another call site than the one its link
    // names, must not. Then a call of the function at 0x58 (s22 += 1) whose
    // `s_swappc_b64` reads and writes one pair, s[8:9].
    let text = "s_mov_b32 s20, 0
s_branch 0
s_getpc_b64 s[8:9]
s_add_u32 s8, s8, 64
s_addc_u32 s9, s9, 0
s_swappc_b64 s[30:31], s[8:9]
v_add_u32_e32 v1, s20, v1
s_add_u32 s20, s20, 1
s_cmp_lt_u32 s20, 5
s_cbranch_scc1 65528
s_getpc_b64 s[8:9]
s_add_u32 s8, s8, 32
s_addc_u32 s9, s9, 0
s_swappc_b64 s[30:31], s[8:9]
s_getpc_b64 s[8:9]
s_add_u32 s8, s8, 28
s_addc_u32 s9, s9, 0
s_swappc_b64 s[8:9], s[8:9]
s_endpgm
v_add_u32_e32 v0, 3, v0
s_add_u32 s21, s21, 1
s_setpc_b64 s[30:31]
s_add_u32 s22, s22, 1
s_setpc_b64 s[8:9]
";
    let mem = TestMemory::default();
    let (with, without, start) = programs(&mem, text);
    let wave = || {
        let mut w = random_wave(&mut Rng(12), u64::MAX);
        (w.sgpr[21], w.sgpr[22]) = (0, 0);
        w
    };
    for turn in 0..2 {
        let (a, b) = (
            run(&mem, &with, start, wave()),
            run(&mem, &without, start, wave()),
        );
        for reg in 0..VREGS {
            assert_eq!(a.vgpr[reg], b.vgpr[reg], "v{reg} differs, turn {turn}");
        }
        assert_eq!(a.sgpr, b.sgpr, "turn {turn}");
        assert_eq!(a.instructions, b.instructions, "turn {turn}");
        // The oracle, by hand: 2 instructions, 5 turns of 4 + 3 + 4, the last two
        // calls (4 + 3, 4 + 2) and `s_endpgm`; six calls of the first function
        // (v0 += 6 * 3), one of the second, v1 += 0 + 1 + 2 + 3 + 4.
        assert_eq!(b.instructions, 2 + 5 * 11 + 7 + 6 + 1);
        assert_eq!((b.sgpr[20], b.sgpr[21], b.sgpr[22]), (5, 6, 1));
        let w0 = wave();
        for l in 0..WAVE_SIZE {
            assert_eq!(b.vgpr[0][l], w0.vgpr[0][l].wrapping_add(18));
            assert_eq!(b.vgpr[1][l], w0.vgpr[1][l].wrapping_add(10));
        }
        // The return addresses the last two calls wrote.
        let pair = |w: &Wave, s: usize| u64::from(w.sgpr[s]) | u64::from(w.sgpr[s + 1]) << 32;
        assert_eq!((pair(&b, 30), pair(&b, 8)), (start + 0x38, start + 0x48));
        if fuses() {
            assert_eq!(a.fused_instructions, b.instructions - 1, "turn {turn}");
        }
    }
}

#[test]
fn f64_compares_give_the_interpreters_masks() {
    // Every pair of f64 specials (infinities, signed zeros, quiet and signalling
    // NaNs, 1.0 and its neighbour, denormals of both signs) in 64 lanes, every
    // condition, the mask to VCC or an SGPR pair, and used by a select in the run.
    let specials: [u64; 8] = [
        0x7FF0_0000_0000_0000,
        0xFFF0_0000_0000_0000,
        0,
        0x8000_0000_0000_0000,
        0x7FF8_0000_0000_1234,
        0xFFF4_0000_0000_0042,
        0x3FF0_0000_0000_0001,
        0x8000_0000_0000_0003,
    ];
    // MODE 0xF0 keeps f64 denormals (the compares fuse); 0x30 flushes them, and a
    // denormal then compares equal to zero (the run leaves them to the interpreter).
    let wave = |round: usize, mode: u32| {
        move || {
            let mut w = random_wave(&mut Rng(7 + round as u64), u64::MAX);
            w.mode = mode;
            for l in 0..WAVE_SIZE {
                let (x, y) = (specials[(l + round) % 8], specials[l / 8]);
                (w.vgpr[2][l], w.vgpr[3][l]) = (x as u32, (x >> 32) as u32);
                (w.vgpr[4][l], w.vgpr[5][l]) = (y as u32, (y >> 32) as u32);
            }
            w
        }
    };
    let conds = [
        "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq",
        "nlt", "tru",
    ];
    for (k, c) in conds.iter().enumerate() {
        let text = format!(
            "v_cmp_{c}_f64_e32 vcc, v[2:3], v[4:5]
v_cndmask_b32_e32 v0, v2, v4, vcc
v_cmp_{c}_f64_e64 s[20:21], v[4:5], v[2:3]
v_cndmask_b32_e64 v1, v3, v5, s[20:21]
v_add_u32_e32 v6, v0, v1"
        );
        let fused = check_wave(&text, wave(k % 8, 0xF0));
        if fuses() {
            assert_eq!(fused, 5, "{c}");
        }
        check_wave(&text, wave(k % 8, 0x30));
    }
}

#[test]
fn f32_ops_give_the_interpreters_results_and_nans() {
    // Every pair of f32 specials (infinities, zeros, quiet and signalling NaNs with
    // payloads, a denormal, 1.0, the integer conversions' edges) in 64 lanes: NaN
    // operands, invalid operations, rounding of the unsigned conversion, saturation.
    let specials: [u32; 16] = [
        0x7F80_0000,
        0xFF80_0000,
        0,
        0x8000_0000,
        0x7FC0_1234,
        0xFF80_0042,
        0x3F80_0000,
        0x0000_0003,
        0x4F00_0000,
        0x4F7F_FFFF,
        0x4F80_0000,
        0xCF00_0001,
        0xFFFF_FFFF,
        0x4B80_0001,
        0x8000_0001,
        0xFFFF_FF7F,
    ];
    let text = "v_add_f32_e32 v0, v2, v4
v_sub_f32_e32 v1, v2, v4
v_subrev_f32_e32 v3, v2, v4
v_mul_f32_e32 v5, v2, v4
v_fma_f32 v7, v2, v4, v6
v_fmac_f32_e32 v6, v4, v2
v_rcp_iflag_f32_e32 v8, v2
v_cvt_f32_u32_e32 v9, v4
v_cvt_f32_i32_e32 v10, v4
v_cvt_u32_f32_e32 v11, v2
v_cvt_i32_f32_e32 v1, v4
v_mul_f32_e32 v0, 0x4f7ffffe, v9
v_add_f32_e64 v3, s8, 1.0";
    for round in 0..4 {
        let wave = || {
            let mut w = random_wave(&mut Rng(5 + round), u64::MAX);
            w.mode = 0xF0;
            for l in 0..WAVE_SIZE {
                let k = l + 64 * round as usize;
                w.vgpr[2][l] = specials[k % 16];
                w.vgpr[4][l] = specials[(k / 16 + l) % 16];
                w.vgpr[6][l] = specials[(7 * k + 3) % 16];
            }
            w
        };
        let fused = check_wave(text, wave);
        if fuses() {
            assert_eq!(fused, 13);
        }
    }
    // Random lanes (and, in a wave of four, MODE flushing denormals: the run
    // declines and the interpreter runs the ops).
    for seed in 1..9 {
        check_text(text, seed);
    }
}

#[test]
fn lane_numbers_from_mbcnt_give_the_interpreters_results() {
    // LLVM's lane number idiom (mask -1, fused: the lane's number in its half) and
    // other masks (an SGPR, a constant: not fused, the run ends before them).
    let text = "v_mbcnt_lo_u32_b32 v0, -1, 0
v_mbcnt_hi_u32_b32 v1, -1, v0
v_mbcnt_lo_u32_b32 v2, -1, v3
v_mbcnt_hi_u32_b32 v4, -1, 7
v_mbcnt_lo_u32_b32 v5, s8, v0
v_mbcnt_hi_u32_b32 v6, 5, v1";
    for seed in 1..5 {
        check_text(text, seed);
    }
    let fused = check_text(text, 9);
    if fuses() {
        assert_eq!(fused, 4);
    }
}

#[test]
fn scalar_instructions_between_vector_ones_keep_their_order() {
    let wave = || {
        let mut w = random_wave(&mut Rng(9), u64::MAX);
        (w.sgpr[8], w.sgpr[9]) = (0x1234_5678, 0x0F0F_0F0F);
        w
    };
    // (program, instructions that run fused)
    let cases = [
        // VCC written by a vector op, then by a scalar one: the scalar one runs
        // after the vector ops.
        (
            "v_cmp_t_u32_e32 vcc, v0, v10
s_mov_b64 vcc, s[8:9]
v_or3_b32 v4, v11, v3, v6
v_mov_b32_e32 v5, v4",
            4,
        ),
        // A scalar instruction reading a mask the vector ops wrote: after them.
        (
            "v_cmp_lt_u32_e32 vcc, v0, v1
s_and_b64 s[6:7], vcc, exec
v_mov_b32_e32 v2, v3",
            3,
        ),
        // Once one scalar instruction runs after the vector ops, the later ones do
        // too (here the second reads what the first wrote).
        (
            "v_cmp_lt_u32_e32 vcc, v0, v1
s_mov_b64 s[10:11], vcc
s_add_u32 s12, s10, 1
v_mov_b32_e32 v2, v3",
            4,
        ),
        // A scalar result read by a later vector op: the scalar one runs first.
        (
            "v_mov_b32_e32 v6, v7
s_add_u32 s9, s9, 1
v_add_u32_e32 v4, s9, v5",
            3,
        ),
        // A scalar instruction writing what an earlier vector op read, read again by
        // a later one: it runs after the vector ops, and the later one starts the
        // run's next part (which runs after it).
        (
            "v_add_u32_e32 v1, s8, v2
v_mov_b32_e32 v6, v7
s_add_u32 s8, s8, 1
v_add_u32_e32 v4, s8, v5",
            4,
        ),
    ];
    for (text, want) in cases {
        let fused = check_wave(text, wave);
        if fuses() {
            assert_eq!(fused, want, "{text}");
        }
    }
}

/// `n` random programs of `len` instructions, half of them scalar (every planned
/// form, EXEC and SCC read and written, SCC's value recorded after half of them),
/// each run from waves with random SCC, all lanes active or `exec`: fused (scalar
/// and mixed runs) and interpreted results are equal, SCC and the instruction count
/// included. Returns the instructions that ran fused.
fn check_scalar_programs(seed: u64, n: usize, len: usize, exec: u64, branches: bool) -> usize {
    let mut rng = Rng(seed);
    let mem = TestMemory::default();
    let mut fused = 0;
    for case in 0..n {
        let src: Vec<String> = {
            let mut g = Gen { rng: &mut rng };
            (0..len)
                .map(|_| {
                    if g.rng.below(2) == 1 {
                        return g.inst();
                    }
                    // SCC's history, recorded without changing SCC: s14 is
                    // multiplied by 3 or 5 as SCC is set or clear.
                    let record = "\ns_cselect_b32 s15, 3, 5\ns_mul_i32 s14, s14, s15";
                    let record = if g.rng.below(2) == 0 { record } else { "" };
                    g.scalar() + record
                })
                .collect()
        };
        let text = src.join("\n") + "\ns_endpgm\n";
        let text = if branches {
            with_forward_branches(&mut rng, &text)
        } else {
            text
        };
        let wave = |g: &mut Rng, exec| {
            let mut w = random_wave(g, exec);
            w.scc = g.below(2) == 1;
            w.sgpr[14] = 1;
            w
        };
        fused += compare_fused(&mem, &text, case, [u64::MAX, exec], &mut rng, wave);
    }
    fused
}

#[test]
fn scalar_runs_compute_what_the_interpreter_computes() {
    let fused = check_scalar_programs(0x5EED_0003, 150, 24, 0x0F0F_F0F0_FFFF_0001, false);
    if fuses() {
        assert!(fused > 150 * 24 / 3, "only {fused} instructions ran fused");
    }
}

#[test]
fn long_scalar_runs_keep_scc_and_exec_in_order() {
    let fused = check_scalar_programs(0x5EED_0004, 12, 120, u64::MAX << 3, false);
    if fuses() {
        assert!(fused > 12 * 120 / 3, "only {fused} instructions ran fused");
    }
}

/// `text` (one instruction per line, the last `s_endpgm`) with forward branches of
/// every kind inserted before one instruction in five, each to a later instruction
/// (at most six on), as immediate dword offsets (llvm-mc's encodings leave labels
/// unresolved).
fn with_forward_branches(rng: &mut Rng, text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    // (index in `out` of the branch, index in `lines` of its target, mnemonic)
    let mut out: Vec<String> = Vec::new();
    let mut branches: Vec<(usize, usize, &str)> = Vec::new();
    let mut at: Vec<usize> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if i + 1 < lines.len() && rng.below(5) == 0 {
            let kind = rng.pick(&[
                "s_branch",
                "s_cbranch_scc0",
                "s_cbranch_scc1",
                "s_cbranch_vccz",
                "s_cbranch_vccnz",
                "s_cbranch_execz",
                "s_cbranch_execnz",
            ]);
            let to = (i + 1 + rng.below(6)).min(lines.len() - 1);
            branches.push((out.len(), to, kind));
            out.push(format!("{kind} 0"));
        }
        at.push(out.len());
        out.push(line.to_string());
    }
    // Byte offsets of the instructions (branches are 4 bytes whatever their offset).
    let sizes: Vec<usize> = assemble(&out.join("\n"))
        .into_iter()
        .map(|(_, b)| b.len())
        .collect();
    assert_eq!(
        sizes.len(),
        out.len(),
        "one encoding per line:\n{}",
        out.join("\n")
    );
    let offset: Vec<usize> = sizes
        .iter()
        .scan(0, |o, n| {
            let here = *o;
            *o += n;
            Some(here)
        })
        .collect();
    for (b, to, kind) in branches {
        let dwords = (offset[at[to]] - (offset[b] + 4)) / 4;
        out[b] = format!("{kind} {dwords}");
    }
    out.join("\n") + "\n"
}

#[test]
fn runs_ending_in_branches_jump_as_the_interpreter_does() {
    // Random scalar and vector programs with forward branches on SCC, VCC and EXEC
    // (taken and not): the same registers, SCC and instruction counts.
    let fused = check_scalar_programs(0x5EED_0005, 100, 24, 0x00FF_FF00_0000_FFFF, true);
    if fuses() {
        // (Counted in each program's first block only.)
        assert!(fused > 100 * 24 / 8, "only {fused} instructions ran fused");
    }
    // A counted loop whose back edge ends a part of a run: 5 turns of the last 4
    // instructions before the move (the run that starts at the loop's head), and
    // the move after the branch's 5th turn, not taken, in the same run as the
    // first turn's instructions.
    let text = "s_mov_b32 s8, 5
s_add_u32 s9, s9, s8
s_add_u32 s8, s8, -1
s_cmp_lg_u32 s8, 0
s_cbranch_scc1 65532
v_mov_b32_e32 v0, s9";
    let w = check_wave(text, || random_wave(&mut Rng(4), u64::MAX));
    if fuses() {
        assert_eq!(w, 6, "{text}");
    }
    // Counted by hand: the move, 5 turns of 4, the vector move and s_endpgm.
    let mem = TestMemory::default();
    let (with, _, start) = programs(&mem, &format!("{text}\ns_endpgm\n"));
    let w = run(&mem, &with, start, random_wave(&mut Rng(4), u64::MAX));
    assert_eq!(w.instructions, 1 + 5 * 4 + 2);
}

/// Edge values of the scalar operands: zero, one, shift counts around 32 and 64,
/// the sign boundary, all ones.
const EDGES: [u32; 12] = [
    0,
    1,
    2,
    31,
    32,
    33,
    63,
    64,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
    0xFFFF_FFFE,
];

#[test]
fn scalar_forms_give_the_interpreters_results_on_edge_values() {
    // Every scalar form with host code, on every pair of edge values in s8/s9 (and
    // derived ones in s10/s11 and EXEC), with SCC clear and set: the fused run (the
    // instruction and an s_nop) leaves the scalar file and SCC as the interpreter.
    let mut forms: Vec<String> = Vec::new();
    for op in SOP2_32 {
        // Registers, and constants whose 64-bit view has high bits (-1, -7) or not.
        for (a, b) in [
            ("s8", "s9"),
            ("-1", "s9"),
            ("s8", "-7"),
            ("0x80000001", "s9"),
        ] {
            forms.push(format!("s_{op} s12, {a}, {b}"));
        }
    }
    for op in SOP2_64 {
        forms.push(format!("s_{op} s[12:13], s[8:9], s[10:11]"));
        forms.push(format!("s_{op} exec, -3, exec"));
    }
    for op in ["lshl_b64", "lshr_b64", "ashr_i64"] {
        forms.push(format!("s_{op} s[12:13], s[8:9], s10"));
    }
    for c in SCMP {
        for t in ["i32", "u32"] {
            forms.push(format!("s_cmp_{c}_{t} s8, s9"));
            forms.push(format!("s_cmp_{c}_{t} s8, -2"));
        }
    }
    for c in SCMP {
        for t in ["i32", "u32"] {
            // Immediates with the top bit of SIMM16 clear and set (sign or zero
            // extension), and edge values of their own.
            for k in ["0x0", "0x1", "0x20", "0x7fff", "0x8000", "0xfffe", "0xffff"] {
                forms.push(format!("s_cmpk_{c}_{t} s8, {k}"));
            }
        }
    }
    for t in ["i8", "i16"] {
        forms.push(format!("s_sext_i32_{t} s12, s8"));
        forms.push(format!("s_sext_i32_{t} s12, 0x80ff80ff"));
        forms.push(format!("s_sext_i32_{t} s12, 0x7f7f"));
    }
    for op in ["bitcmp0_b32", "bitcmp1_b32"] {
        forms.push(format!("s_{op} s8, s9"));
    }
    for op in ["bitcmp0_b64", "bitcmp1_b64"] {
        forms.push(format!("s_{op} s[8:9], s10"));
    }
    for op in ["cmp_eq_u64", "cmp_lg_u64"] {
        forms.push(format!("s_{op} s[8:9], s[10:11]"));
    }
    for op in SAVEEXEC {
        forms.push(format!("s_{op}_saveexec_b64 s[12:13], s[8:9]"));
    }
    forms.extend(
        [
            "s_mov_b32 s12, s8",
            "s_mov_b32 s12, -5",
            "s_mov_b64 s[12:13], s[8:9]",
            "s_mov_b64 exec, s[10:11]",
            "s_mov_b64 s[12:13], -5",
            "s_mov_b64 s[12:13], 0x80000001",
            "s_movk_i32 s12, 0x8765",
        ]
        .map(String::from),
    );
    let mem = TestMemory::default();
    for form in &forms {
        let (with, without, start) = programs(&mem, &format!("{form}\ns_nop 0\ns_endpgm\n"));
        if fuses() {
            assert_eq!(with.fused_instructions(start), 2, "{form} has no host code");
        }
        for (i, j) in (0..EDGES.len()).flat_map(|i| (0..EDGES.len()).map(move |j| (i, j))) {
            for scc in [false, true] {
                let n = EDGES.len();
                let wave = || {
                    let mut w = Wave::new();
                    (w.sgpr[8], w.sgpr[9]) = (EDGES[i], EDGES[j]);
                    (w.sgpr[10], w.sgpr[11]) = (EDGES[(i + j) % n], EDGES[(i * j) % n]);
                    w.sgpr[12] = 0x1234_5678;
                    w.sgpr[13] = 0x9ABC_DEF0;
                    w.set_exec(u64::from(EDGES[j]) << 32 | u64::from(EDGES[(i + 3) % n]));
                    w.scc = scc;
                    w
                };
                let (a, b) = (
                    run(&mem, &with, start, wave()),
                    run(&mem, &without, start, wave()),
                );
                let at = format!("{form} with s8..s11 = {:x?}, SCC {scc}", &b.sgpr[8..12]);
                assert_eq!(a.sgpr, b.sgpr, "sgprs differ: {at}");
                assert_eq!(a.scc, b.scc, "SCC differs: {at}");
            }
        }
    }
}

/// Bytes of the LDS the LDS programs run over.
const LDS_BYTES: usize = 2048;

/// `w`'s address registers v12..v15, each one shape at random: one address for every
/// lane, consecutive dwords, scattered addresses, or ranges that leave the LDS (in
/// some lanes or in all).
fn lds_addresses(rng: &mut Rng, w: &mut Wave) {
    let top = LDS_BYTES as u32;
    for r in 12..16 {
        let shape = rng.below(8);
        let base = rng.below(LDS_BYTES - 512) as u32 & !3;
        for l in 0..WAVE_SIZE {
            w.vgpr[r][l] = match shape {
                0 | 1 => base,
                // Unaligned, one for all.
                2 => base | 1,
                3 | 4 => base + 4 * l as u32,
                5 => rng.below(LDS_BYTES - 8) as u32,
                // The last lanes past the end.
                6 => top - 128 + 4 * l as u32,
                _ => top + 64,
            };
        }
    }
}

/// Runs `program` from `start` on `w` over `lds` until it ends or faults.
fn run_lds(
    mem: &TestMemory,
    program: &Program,
    start: u64,
    mut w: Wave,
    lds: &mut [u8],
) -> (Wave, String) {
    w.pc = start;
    let mut ctx = context(mem, lds, 1_000_000, u64::MAX);
    let exit = format!("{:?}", w.run(program, &mut ctx));
    (w, exit)
}

/// A random LDS instruction of the forms fused runs take (and `ds_write2_b32`, which
/// they do not), through the address registers v12..v15.
fn lds_inst(rng: &mut Rng) -> String {
    let a = 12 + rng.below(4);
    let d = rng.below(VREGS);
    let pair = 2 * rng.below(VREGS / 2);
    let off = if rng.below(2) == 0 {
        4 * rng.below(64)
    } else {
        rng.below(1000)
    };
    match rng.below(6) {
        0 | 1 => format!("ds_read_b32 v{d}, v{a} offset:{off}"),
        2 => format!(
            "ds_read2_b32 v[{pair}:{}], v{a} offset0:{} offset1:{}",
            pair + 1,
            rng.below(256),
            rng.below(256)
        ),
        3 => format!("ds_read_b64 v[{pair}:{}], v{a} offset:{off}", pair + 1),
        4 => format!("ds_write_b32 v{a}, v{d} offset:{off}"),
        _ => format!(
            "ds_write2_b32 v{a}, v{d}, v{} offset0:{} offset1:{}",
            rng.below(VREGS),
            rng.below(256),
            rng.below(256)
        ),
    }
}

#[test]
fn lds_accesses_in_fused_runs_give_the_interpreters_results() {
    check_memory_programs(
        0x5EED_00D5,
        |rng, draw| match draw {
            0..=2 => Some(lds_inst(rng)),
            // An address register written inside a run (the accesses after it
            // through that register then start another run).
            3 if rng.below(3) == 0 => Some(format!(
                "v_add_u32_e32 v{}, 4, v{}",
                12 + rng.below(4),
                12 + rng.below(4)
            )),
            _ => None,
        },
        |case| (0..LDS_BYTES).map(|i| (i * 7 + case) as u8).collect(),
        |rng, w, _| lds_addresses(rng, w),
    );
}

/// The LDS of the FLAT programs: 64 bytes, each its index (a FLAT access into the
/// LDS aperture reads and writes it).
fn small_lds() -> Vec<u8> {
    (0..64).collect()
}

/// Bytes of the data region the FLAT programs access.
const DATA_BYTES: u64 = 16384;

/// Bytes either side of the data region where no other region lies (see
/// `TestMemory::alloc_guarded`): more than the farthest a drawn address strays (an
/// element and a 504-byte offset past a range ending 256 bytes before the end, or a
/// negative offset of 504 from the start).
const GUARD: u64 = 4096;

/// `w`'s address pairs v[12:13] and v[14:15], each one shape at random around the
/// data region at `base`: consecutive dwords or qwords (aligned, or one byte off),
/// one lane out of step, scattered, a range running past the region's end, the high
/// dwords differing in one lane, or the LDS aperture.
fn flat_addresses(rng: &mut Rng, w: &mut Wave, base: u64) {
    for r in [12, 14] {
        let shape = rng.below(10);
        let start = base + (rng.below(DATA_BYTES as usize / 2) as u64 & !7);
        let step = if rng.below(2) == 0 { 4 } else { 8 };
        let odd = rng.below(WAVE_SIZE);
        for l in 0..WAVE_SIZE {
            let at = start + step * l as u64;
            let a = match shape {
                0..=3 => at,
                4 => at + 1,
                5 if l == odd => at + 4 * step,
                5 => at,
                6 => base + (rng.below(DATA_BYTES as usize - 8) as u64 & !7),
                7 => base + DATA_BYTES - 256 + step * l as u64,
                8 if l == odd => at | 1 << 32,
                8 => at,
                _ => Apertures::KFD.shared_base + 8 * l as u64,
            };
            (w.vgpr[r][l], w.vgpr[r + 1][l]) = (a as u32, (a >> 32) as u32);
        }
    }
}

/// A random FLAT or GLOBAL load or store of the forms fused runs take (and a
/// `flat_load_dwordx4`, which they do not), through v[12:13] or v[14:15].
fn flat_inst(rng: &mut Rng) -> String {
    let a = if rng.below(2) == 0 {
        "v[12:13]"
    } else {
        "v[14:15]"
    };
    let d = rng.below(VREGS);
    let pair = 2 * rng.below(VREGS / 2);
    let off = 8 * rng.below(64);
    match rng.below(9) {
        0 | 1 => format!("flat_load_dword v{d}, {a} offset:{off}"),
        2 | 3 => format!("flat_load_dwordx2 v[{pair}:{}], {a} offset:{off}", pair + 1),
        4 => format!("flat_store_dword {a}, v{d} offset:{off}"),
        5 => format!(
            "flat_store_dwordx2 {a}, v[{pair}:{}] offset:{off}",
            pair + 1
        ),
        6 => format!(
            "global_load_dwordx2 v[{pair}:{}], {a}, off offset:-{off}",
            pair + 1
        ),
        7 => format!("global_store_dword {a}, v{d}, off"),
        _ => format!("flat_load_dwordx4 v[0:3], {a}"),
    }
}

/// Runs `text` from `wave` on a program with fusion (twice: with the host's forms,
/// and with AVX2 forms only, `Program::without_avx512`) and on one without, each
/// from the same contents of `data` (the allocation of a region `alloc_guarded`
/// made, with `GUARD`) and an LDS holding `lds`; panics on a difference in the
/// registers, SCC, the instruction count, the exit, the data, the LDS or the
/// stride history. Returns the instructions of the block at byte `block` of the
/// program that ran fused.
fn compare_memory_runs(
    mem: &TestMemory,
    data: &HostRegion,
    lds: &[u8],
    text: &str,
    block: u64,
    wave: impl Fn() -> Wave,
) -> usize {
    let (r, start) = code(mem, text);
    // Fused runs with the host's forms (AVX-512 where it has it), with AVX2 forms
    // only, and the interpreter.
    let with = Program::new(&r);
    let narrow = Program::new(&r).without_avx512();
    let without = Program::new(&r).without_fusion();
    let mut init = vec![0u8; DATA_BYTES as usize];
    for (i, b) in init.iter_mut().enumerate() {
        *b = (i * 13 + text.len()) as u8;
    }
    let mut out = Vec::new();
    for program in [&with, &narrow, &without] {
        assert!(data.write_bytes(GUARD, &init));
        let mut lds = lds.to_vec();
        let (w, exit) = run_lds(mem, program, start, wave(), &mut lds);
        let mut bytes = vec![0u8; DATA_BYTES as usize];
        assert!(data.read_bytes(GUARD, &mut bytes));
        out.push((w, exit, bytes, lds));
    }
    let b = &out[2];
    for (a, forms) in [(&out[0], "host"), (&out[1], "AVX2")] {
        assert_eq!(a.1, b.1, "exits differ ({forms} forms):\n{text}");
        for reg in 0..16 {
            assert_eq!(
                a.0.vgpr[reg], b.0.vgpr[reg],
                "v{reg} differs ({forms} forms):\n{text}"
            );
        }
        assert_eq!(a.0.sgpr, b.0.sgpr, "sgprs differ ({forms} forms):\n{text}");
        assert_eq!(a.0.scc, b.0.scc, "SCC differs ({forms} forms):\n{text}");
        assert_eq!(a.0.instructions, b.0.instructions, "{forms} forms:\n{text}");
        assert!(a.2 == b.2, "the data differ ({forms} forms):\n{text}");
        assert!(a.3 == b.3, "the LDS differs ({forms} forms):\n{text}");
        assert!(
            a.0.same_strides(&b.0),
            "the stride histories differ ({forms} forms):\n{text}"
        );
    }
    let fused = with.fused_instructions(start + block);
    assert_eq!(
        fused,
        narrow.fused_instructions(start + block),
        "the forms fuse different runs:\n{text}"
    );
    fused
}

#[test]
fn flat_accesses_in_fused_runs_give_the_interpreters_results() {
    check_memory_programs(
        0x5EED_00F1,
        |rng, draw| (draw <= 2).then(|| flat_inst(rng)),
        |_| small_lds(),
        flat_addresses,
    );
}

/// A loop whose body is one block with ten FLAT loads and a store, more than a
/// run holds (`MAX_FLATS`, 4), an f64 add of a denormal after the fifth load, and
/// a wave whose v[12:13] names consecutive dwords of the data region at `base` and
/// v[14:15] consecutive dwords 4 KiB further on, with MODE `mode`. Each run falls
/// through to the next run of its block, in the block entered at the start and,
/// once the loop branch is linked (from the third of five turns), in the loop's
/// own block, entered through that link; the second run, with
/// the f64 add, only where `mode` keeps f64 denormals (0xF0; 0 flushes them).
/// Returns the program's text and the wave (random registers from `seed`).
fn loads_past_a_run(seed: u64, base: u64, mode: u32) -> (String, Wave) {
    // Dwords: s_mov_b32 (1) at 0x00; the loop at 0x04: ten loads (2) each with an
    // add (1), the f64 add (2) after the fifth, the store (2) at 0x84, four more (1
    // each), `s_cbranch_scc1` the last at 0x98, 38 dwords back from 0x9c.
    let mut text = String::from("s_mov_b32 s20, 0\n");
    for k in 0..10 {
        let r = 1 + k % 7;
        text += &format!(
            "flat_load_dword v{r}, v[12:13] offset:{}\nv_add_u32_e32 v0, v{r}, v0\n",
            8 * k
        );
        if k == 4 {
            text += "v_add_f64 v[8:9], v[8:9], v[10:11]\n";
        }
    }
    text += "flat_store_dword v[14:15], v0\nv_add_u32_e32 v14, 4, v14\n";
    text += "s_add_u32 s20, s20, 1\ns_cmp_lt_u32 s20, 5\ns_cbranch_scc1 65498\ns_endpgm\n";
    let mut w = random_wave(&mut Rng(seed), u64::MAX);
    w.mode = mode;
    for l in 0..WAVE_SIZE {
        // v[8:9] = 0, v[10:11] = the denormal 3: the sum is 0 where MODE flushes.
        (w.vgpr[8][l], w.vgpr[9][l], w.vgpr[10][l], w.vgpr[11][l]) = (0, 0, 3, 0);
        for (r, at) in [(12, base + 4 * l as u64), (14, base + 4096 + 4 * l as u64)] {
            (w.vgpr[r][l], w.vgpr[r + 1][l]) = (at as u32, (at >> 32) as u32);
        }
    }
    (text, w)
}

#[test]
fn runs_falling_through_to_the_next_run_of_their_block_give_the_interpreters_results() {
    let mem = TestMemory::default();
    let (data, base) = mem.alloc_guarded(DATA_BYTES, GUARD);
    for seed in 1..5 {
        for mode in [0xF0, 0] {
            let (text, wave) = loads_past_a_run(seed, base, mode);
            compare_memory_runs(&mem, &data, &small_lds(), &text, 0, || {
                loads_past_a_run(seed, base, mode).1
            });
            // Where MODE keeps f64 denormals, every instruction but `s_endpgm`
            // runs fused: 1 + 5 · 26 + 1 in all.
            let (r, start) = code(&mem, &text);
            let (w, exit) = run_lds(&mem, &Program::new(&r), start, wave, &mut small_lds());
            assert_eq!(exit, "Ok(Ended)");
            assert_eq!(w.instructions, 132);
            let sum = if mode == 0 { 0 } else { 15 };
            assert!(w.vgpr[8].iter().all(|&x| x == sum), "MODE {mode:#x}");
            if fuses() && mode != 0 {
                assert_eq!(w.fused_instructions, 131);
            }
        }
    }
    // Every budget ends the wave where it ends the interpreter's: a link taken after
    // a fall-through must count the runs before it against the budget.
    let (text, _) = loads_past_a_run(9, base, 0xF0);
    let (r, start) = code(&mem, &text);
    let (with, without) = (Program::new(&r), Program::new(&r).without_fusion());
    for max in 0..=133 {
        let ends = [&with, &without].map(|p| {
            let mut w = loads_past_a_run(9, base, 0xF0).1;
            w.pc = start;
            let mut lds = small_lds();
            let mut ctx = context(&mem, &mut lds, max, u64::MAX);
            let exit = w.run(p, &mut ctx);
            (exit, w.pc - start, w.instructions, w.vgpr[0], w.sgpr[20])
        });
        assert_eq!(ends[0], ends[1], "budget {max}");
    }
}

#[test]
fn a_wave_holding_its_stores_falls_through_to_no_run() {
    // While a wave's stores to memory its workgroup shares are held
    // (`Turn::StoresUntil`), runs holding such a store do not run, and a run
    // before one must not fall through into it: the wave stops before the loop's
    // FLAT store (its 23rd instruction, at 0x84), as the interpreter does, with the
    // instructions before it run (the first two runs' fused).
    let mem = TestMemory::default();
    let (_data, base) = mem.alloc_guarded(DATA_BYTES, GUARD);
    let text = loads_past_a_run(7, base, 0xF0).0;
    let (r, start) = code(&mem, &text);
    let program = Program::new(&r);
    let reference = Program::new(&r).without_fusion();
    let mut out = Vec::new();
    for p in [&program, &reference] {
        let mut w = loads_past_a_run(7, base, 0xF0).1;
        w.pc = start;
        let mut lds = small_lds();
        let mut ctx = context(&mem, &mut lds, 1_000_000, u64::MAX);
        let mut blocks = isa::BlockCache::default();
        let turn = (None, isa::wave::Turn::StoresUntil(0));
        let exit = w.run_cached(p, &mut ctx, &mut blocks, turn);
        out.push((exit, w.pc - start, w.instructions, w.vgpr[0]));
        if fuses() && std::ptr::eq(p, &program) {
            // The first two runs (9 entries each), which hold no store, ran fused,
            // each called by the wave's loop.
            assert_eq!(w.fused_instructions, 18);
        }
    }
    assert_eq!(out[0], out[1]);
    assert_eq!(
        (&out[0].0, out[0].1, out[0].2),
        (&Ok(WaveExit::Yield), 0x84, 22)
    );
}

/// `w`'s address pairs v[12:13] and v[14:15], each one address in the LDS aperture
/// for every lane (a team-state variable of the device runtime through a generic
/// pointer): a byte of the 64-byte LDS or a few past its end, or (one case in
/// eight) with one lane a dword further on.
fn lds_aperture_addresses(rng: &mut Rng, w: &mut Wave, _base: u64) {
    for r in [12, 14] {
        let one = Apertures::KFD.shared_base + rng.below(72) as u64;
        let odd = (rng.below(8) == 0).then(|| rng.below(WAVE_SIZE));
        for l in 0..WAVE_SIZE {
            let a = if odd == Some(l) { one + 4 } else { one };
            (w.vgpr[r][l], w.vgpr[r + 1][l]) = (a as u32, (a >> 32) as u32);
        }
    }
}

/// A random FLAT load or store through v[12:13] or v[14:15], with a small offset.
fn lds_aperture_inst(rng: &mut Rng) -> String {
    let a = rng.pick(&["v[12:13]", "v[14:15]"]);
    let d = rng.below(VREGS);
    let pair = 2 * rng.below(VREGS / 2);
    let off = rng.pick(&["0", "4", "8", "60"]);
    match rng.below(5) {
        0 | 1 => format!("flat_load_dword v{d}, {a} offset:{off}"),
        2 | 3 => format!("flat_load_dwordx2 v[{pair}:{}], {a} offset:{off}", pair + 1),
        _ => format!("flat_store_dword {a}, v{d} offset:{off}"),
    }
}

#[test]
fn lds_aperture_loads_in_fused_runs_give_the_interpreters_results() {
    // Every lane loading one LDS address through a generic pointer: the run's own
    // broadcast from the LDS, or (a lane elsewhere, a range past the LDS, a partial
    // EXEC) the interpreter's plan, which reports the fault.
    check_memory_programs(
        0x5EED_00F4,
        |rng, draw| (draw <= 2).then(|| lds_aperture_inst(rng)),
        |_| small_lds(),
        lds_aperture_addresses,
    );
}

/// 120 random programs of 16 instructions, each drawn as `draw(rng, k)` gives it
/// for k = `rng.below(8)` (a random vector or scalar form when it gives none), each
/// run from a random wave with all lanes active (every fourth case, the top three
/// inactive), its addresses set by `addresses(rng, wave, data base)`, over the LDS
/// `lds(case)`, through [`compare_memory_runs`]. Asserts that a quarter of the
/// instructions ran fused, on hosts that fuse.
fn check_memory_programs(
    seed: u64,
    mut draw: impl FnMut(&mut Rng, usize) -> Option<String>,
    lds: impl Fn(usize) -> Vec<u8>,
    addresses: impl Fn(&mut Rng, &mut Wave, u64),
) {
    let mut rng = Rng(seed);
    let mem = TestMemory::default();
    let (data, base) = mem.alloc_guarded(DATA_BYTES, GUARD);
    let mut fused = 0;
    for case in 0..120 {
        let src: Vec<String> = (0..16)
            .map(|_| {
                let k = rng.below(8);
                draw(&mut rng, k).unwrap_or_else(|| Gen { rng: &mut rng }.inst())
            })
            .collect();
        let text = src.join("\n") + "\ns_endpgm\n";
        let exec = if case % 4 == 3 {
            u64::MAX >> 3
        } else {
            u64::MAX
        };
        let seed = rng.next() | 1;
        fused += compare_memory_runs(&mem, &data, &lds(case), &text, 0, || {
            let mut r = Rng(seed);
            let mut w = random_wave(&mut r, exec);
            addresses(&mut r, &mut w, base);
            w
        });
    }
    if fuses() {
        assert!(fused > 120 * 16 / 4, "only {fused} instructions ran fused");
    }
}

/// `w`'s address registers v12..v15 for bpermutes, each one shape at random: the
/// lanes LLVM's wave reductions name (lane + k below lane 64 - k, else the lane
/// itself; k a power of two), lane + k modulo 64, one lane for all, or random
/// values (only bits 7:2 name the lane).
fn bpermute_addresses(rng: &mut Rng, w: &mut Wave, _base: u64) {
    for r in 12..16 {
        let shape = rng.below(5);
        let k = 1 << rng.below(6);
        let one = rng.below(WAVE_SIZE);
        for l in 0..WAVE_SIZE {
            let lane = match shape {
                0 | 1 if l + k < WAVE_SIZE => l + k,
                0 | 1 => l,
                2 => (l + k) % WAVE_SIZE,
                3 => one,
                _ => rng.below(1 << 16),
            };
            w.vgpr[r][l] = if shape == 4 {
                lane as u32
            } else {
                4 * lane as u32
            };
        }
    }
}

/// A random `ds_bpermute_b32` through v12..v15 (its destination at times one of
/// its sources), or a VALU op writing an address register.
fn bpermute_inst(rng: &mut Rng) -> String {
    let a = 12 + rng.below(4);
    let d = rng.below(VREGS);
    let dst = match rng.below(4) {
        0 => a,
        1 => d,
        _ => rng.below(VREGS),
    };
    let off = if rng.below(3) == 0 {
        4 * rng.below(64)
    } else {
        0
    };
    match rng.below(5) {
        0 => format!("v_add_u32_e32 v{a}, 8, v{}", 12 + rng.below(4)),
        _ => format!("ds_bpermute_b32 v{dst}, v{a}, v{d} offset:{off}"),
    }
}

/// Two `ds_bpermute_b32` through one address register and offset, as LLVM's
/// reductions move a double's halves: destinations most often apart from each
/// other and from the sources (the pair runs as one access), at times one of them
/// a source of the second or the offsets different (each runs alone), or both
/// one register.
fn bpermute_pair(rng: &mut Rng) -> String {
    let a = 12 + rng.below(4);
    // (Two data registers, leaving at least two others free for destinations.)
    let (d0, d1) = (rng.below(VREGS), rng.below(VREGS));
    let off = if rng.below(3) == 0 {
        4 * rng.below(64)
    } else {
        0
    };
    let apart = |rng: &mut Rng, taken: &[usize]| loop {
        let r = rng.below(VREGS);
        if !taken.contains(&r) {
            break r;
        }
    };
    let t0 = apart(rng, &[a, d0, d1]);
    let (t0, t1) = match rng.below(6) {
        0 => (d1, apart(rng, &[a, d0, d1])),
        1 => (t0, t0),
        2 => (t0, d0),
        3 => (a, apart(rng, &[a, d0, d1])),
        _ => (t0, apart(rng, &[a, d0, d1, t0])),
    };
    // (Now and then the second at another offset: then each runs alone.)
    let off1 = if rng.below(8) == 0 { off ^ 4 } else { off };
    let pair = format!(
        "ds_bpermute_b32 v{t0}, v{a}, v{d0} offset:{off}\nds_bpermute_b32 v{t1}, v{a}, v{d1} offset:{off1}"
    );
    // At times lanes go off after it, and the run stops at the next vector op: the
    // interpreter must go on from the entry after the pair.
    match rng.below(4) {
        0 => format!("{pair}\ns_lshr_b64 exec, exec, 1\nv_add_u32_e32 v{t0}, 8, v{t1}"),
        _ => pair,
    }
}

#[test]
fn paired_bpermutes_in_fused_runs_give_the_interpreters_results() {
    check_memory_programs(
        0x5EED_0BA1,
        |rng, draw| match draw {
            0 | 1 => Some(bpermute_pair(rng)),
            2 => Some(bpermute_inst(rng)),
            _ => None,
        },
        |_| small_lds(),
        bpermute_addresses,
    );
}

#[test]
fn bpermutes_in_fused_runs_give_the_interpreters_results() {
    check_memory_programs(
        0x5EED_0B9E,
        |rng, draw| (draw <= 2).then(|| bpermute_inst(rng)),
        |_| small_lds(),
        bpermute_addresses,
    );
}

#[test]
fn a_fused_copy_loop_strides_as_the_interpreter_does() {
    // STREAM copy's shape: a qword load and store per lane, both walking on by a
    // fixed stride, in a loop (the stride table confirms the stride on the third
    // trip and asks for the next lines from then on).
    let mem = TestMemory::default();
    let (data, base) = mem.alloc_guarded(DATA_BYTES, GUARD);
    // A load before the loop, in a block of its own, brings the region into the
    // wave's cache: the loop's accesses then run fused from the first trip, new to
    // the stride table. (The branch goes back 14 dwords: the loop body is 56 bytes.)
    let text = "s_mov_b32 s20, 0
flat_load_dword v3, v[12:13]
s_branch 0
v_add_u32_e32 v2, 1, v2
flat_load_dwordx2 v[0:1], v[12:13]
v_add_co_u32_e32 v12, vcc, 0x400, v12
v_addc_co_u32_e32 v13, vcc, 0, v13, vcc
flat_store_dwordx2 v[14:15], v[0:1] offset:8
v_add_co_u32_e32 v14, vcc, 0x400, v14
v_addc_co_u32_e32 v15, vcc, 0, v15, vcc
s_add_u32 s20, s20, 1
s_cmp_lt_u32 s20, 6
s_cbranch_scc1 -14
s_endpgm
";
    // (The loop's block starts at byte 16.)
    let fused = compare_memory_runs(&mem, &data, &small_lds(), text, 16, || {
        let mut w = random_wave(&mut Rng(11), u64::MAX);
        for l in 0..WAVE_SIZE {
            let (src, dst) = (base + 8 * l as u64, base + 8192 + 8 * l as u64);
            (w.vgpr[12][l], w.vgpr[13][l]) = (src as u32, (src >> 32) as u32);
            (w.vgpr[14][l], w.vgpr[15][l]) = (dst as u32, (dst >> 32) as u32);
        }
        w
    });
    if fuses() {
        assert_eq!(fused, 10, "the loop's block runs as one fused run");
    }
}

/// `w`'s private memory around the data region at `base`: FLAT_SCRATCH and the
/// private segment buffer V# in s[0:3] at `base` (the V# swizzled, ADD_TID, 4-byte
/// elements, index stride 64 as ROCr builds it, or, one case in eight, with another
/// element size, which fused runs decline), SOFFSET s33 a multiple of 256 (one case
/// in eight, 2: rows off the host's dword alignment), and the generic pointers
/// v[12:13] and v[14:15] each one private offset for every lane (dword-aligned, or
/// not; one case in eight, one lane elsewhere; one in eight, past the aperture).
fn private_addresses(rng: &mut Rng, w: &mut Wave, base: u64) {
    w.sgpr[102] = base as u32;
    w.sgpr[103] = (base >> 32) as u32;
    let element = if rng.below(8) == 0 { 2 } else { 1 };
    w.sgpr[0] = base as u32;
    w.sgpr[1] = (base >> 32) as u32 & 0xFFFF | 1 << 31;
    w.sgpr[2] = u32::MAX;
    w.sgpr[3] = 1 << 23 | 3 << 21 | element << 19;
    w.sgpr[33] = if rng.below(8) == 0 {
        2
    } else {
        256 * rng.below(8) as u32
    };
    for r in [12, 14] {
        let shape = rng.below(8);
        let p = 4 * rng.below(20) as u64 + u64::from(shape == 0);
        let odd = rng.below(WAVE_SIZE);
        for l in 0..WAVE_SIZE {
            let a = match shape {
                1 if l == odd => Apertures::KFD.private_base + p + 4,
                2 => Apertures::KFD.private_base + (1 << 32) + p,
                _ => Apertures::KFD.private_base + p,
            };
            (w.vgpr[r][l], w.vgpr[r + 1][l]) = (a as u32, (a >> 32) as u32);
        }
    }
}

/// A random private access of the forms fused runs take: a MUBUF load or store of
/// 1 to 4 dwords through s[0:3] and s33 (the spills of unoptimised code), or a
/// FLAT one of 1 or 2 dwords through v[12:13] or v[14:15] (its stack slots).
fn private_inst(rng: &mut Rng) -> String {
    let n = 1 + rng.below(4);
    // gfx90a's register tuples start at even registers.
    let d = match n {
        1 => rng.below(VREGS),
        _ => 2 * rng.below((VREGS - n) / 2 + 1),
    };
    let regs = match n {
        1 => format!("v{d}"),
        _ => format!("v[{d}:{}]", d + n - 1),
    };
    let sizes = ["dword", "dwordx2", "dwordx3", "dwordx4"];
    let off = 4 * rng.below(20);
    let a = if rng.below(2) == 0 {
        "v[12:13]"
    } else {
        "v[14:15]"
    };
    let pair = 2 * rng.below(VREGS / 2);
    match rng.below(6) {
        0 | 1 => format!(
            "buffer_store_{} {regs}, off, s[0:3], s33 offset:{off}",
            sizes[n - 1]
        ),
        2 | 3 => format!(
            "buffer_load_{} {regs}, off, s[0:3], s33 offset:{off}",
            sizes[n - 1]
        ),
        4 => match rng.below(2) {
            0 => format!("flat_store_dword {a}, v{d} offset:{off}"),
            _ => format!(
                "flat_store_dwordx2 {a}, v[{pair}:{}] offset:{off}",
                pair + 1
            ),
        },
        _ => match rng.below(2) {
            0 => format!("flat_load_dword v{d}, {a} offset:{off}"),
            _ => format!("flat_load_dwordx2 v[{pair}:{}], {a} offset:{off}", pair + 1),
        },
    }
}

#[test]
fn flat_stack_slots_under_a_partial_exec_compare_the_active_lanes_only() {
    // Unoptimised code reads and writes its stack slots inside `if`s: FLAT
    // accesses under a partial EXEC whose inactive lanes hold any address. In half
    // the waves with two lanes or more, an active lane (not always the first) of
    // v[14:15] names another slot, or an address whose high dword differs.
    let mut rng = Rng(0x5EED_5107);
    let mem = TestMemory::default();
    let (data, base) = mem.alloc_guarded(DATA_BYTES, GUARD);
    for case in 0..120 {
        let src: Vec<String> = (0..10)
            .map(|_| match rng.below(3) {
                // (Vector ops would stop the run under a partial EXEC.)
                0 => "s_add_u32 s20, s20, 1".to_string(),
                _ => loop {
                    let i = private_inst(&mut rng);
                    if i.starts_with("flat") {
                        break i;
                    }
                },
            })
            .collect();
        // A first access through v[12:13], whose active lanes all name one slot,
        // caches the private window: the later ones run in the run's code.
        let text = format!(
            "flat_load_dword v0, v[12:13]\n{}\ns_endpgm\n",
            src.join("\n")
        );
        let exec = match case % 4 {
            0 => 1 << 63,
            1 => 0x00F0_0000_0000_0F00,
            _ => rng.next() & rng.next(),
        };
        let seed = rng.next() | 1;
        compare_memory_runs(&mem, &data, &small_lds(), &text, 0, || {
            let mut r = Rng(seed);
            let mut w = random_wave(&mut r, exec);
            private_addresses(&mut r, &mut w, base);
            let odd = (exec.count_ones() > 1 && r.below(2) == 0).then(|| {
                let lanes: Vec<usize> = (0..WAVE_SIZE).filter(|l| exec >> l & 1 == 1).collect();
                lanes[r.below(lanes.len())]
            });
            for reg in [12, 14] {
                for l in 0..WAVE_SIZE {
                    if exec >> l & 1 == 0 {
                        (w.vgpr[reg][l], w.vgpr[reg + 1][l]) = (r.value(), r.value());
                    } else if Some(l) == odd && reg == 14 {
                        // Another slot, or an address 4 GiB away.
                        let k = reg + (case / 4) % 2;
                        w.vgpr[k][l] = w.vgpr[k][l].wrapping_add(4);
                    }
                }
            }
            w
        });
    }
}

#[test]
fn private_accesses_in_fused_runs_give_the_interpreters_results() {
    // The EXECs unoptimised code spills under: every lane, lane 0 alone (the device
    // runtime's serial parts), none, and others.
    let execs = [u64::MAX, 1, 0, u64::MAX >> 3, 0x8000_0000_0000_0001];
    let mut rng = Rng(0x5EED_5C2A);
    let mem = TestMemory::default();
    let (data, base) = mem.alloc_guarded(DATA_BYTES, GUARD);
    let mut fused = 0;
    for case in 0..150 {
        let src: Vec<String> = (0..16)
            .map(|_| match rng.below(8) {
                0..=3 => private_inst(&mut rng),
                _ => Gen { rng: &mut rng }.inst(),
            })
            .collect();
        let text = src.join("\n") + "\ns_endpgm\n";
        let exec = execs[case % execs.len()];
        let seed = rng.next() | 1;
        fused += compare_memory_runs(&mem, &data, &small_lds(), &text, 0, || {
            let mut r = Rng(seed);
            let mut w = random_wave(&mut r, exec);
            private_addresses(&mut r, &mut w, base);
            w
        });
    }
    if fuses() {
        assert!(fused > 150 * 16 / 4, "only {fused} instructions ran fused");
    }
}

#[test]
fn agpr_moves_run_fused_as_the_interpreter_runs_them() {
    // Unoptimised code parks values in AGPRs between VALU ops: the moves join runs.
    let text = "v_accvgpr_write_b32 a3, v1
v_add_u32_e32 v2, v1, v0
v_accvgpr_write_b32 a4, v2
v_accvgpr_write_b32 a5, 7
v_accvgpr_read_b32 v4, a3
v_accvgpr_read_b32 v5, a4
v_accvgpr_read_b32 v6, a5
v_xor_b32_e32 v7, v4, v5";
    for seed in 1..6 {
        let fused = check_text(text, seed);
        if fuses() {
            assert_eq!(fused, 8, "the moves joined no run:\n{text}");
        }
    }
}

#[test]
fn runs_of_moves_alone_give_the_interpreters_results() {
    // Parts whose vector ops are all moves (the spills and copies of -O0 code),
    // which a host with AVX-512 runs 16 lanes at a time: packed moves whose
    // destination pair overlaps a source (each source read before the pair is
    // written), scalar and constant sources, and AGPR round trips.
    for sel in ["[0,0]", "[0,1]", "[1,0]", "[1,1]"] {
        for (d, x, y) in [
            ("v[2:3]", "v[0:1]", "v[2:3]"),
            ("v[2:3]", "v[2:3]", "v[2:3]"),
            ("v[4:5]", "v[2:3]", "v[4:5]"),
        ] {
            let text = format!(
                "v_pk_mov_b32 {d}, {x}, {y} op_sel:{sel}
v_mov_b32_e32 v7, s8
v_mov_b32_e32 v8, 0x1234567
v_accvgpr_write_b32 a3, v2
v_accvgpr_write_b32 a4, 5
v_accvgpr_read_b32 v9, a3
v_accvgpr_read_b32 v10, a4
v_mov_b32_e32 v11, v3"
            );
            for seed in 1..4 {
                let fused = check_text(&text, seed);
                if fuses() {
                    assert_eq!(fused, 8, "not one run:\n{text}");
                }
            }
        }
    }
}

/// A random lane move of the forms fused runs take: `v_readlane_b32` and
/// `v_writelane_b32` by a constant lane or by s8's low six bits, and
/// `v_readfirstlane_b32`, between v0..v11 and s8..s13.
fn lane_inst(rng: &mut Rng) -> String {
    let (v, s) = (rng.below(VREGS), 8 + rng.below(6));
    let lane = match rng.below(3) {
        0 => "s8".to_string(),
        _ => rng.below(64).to_string(),
    };
    match rng.below(3) {
        0 => format!("v_readlane_b32 s{s}, v{v}, {lane}"),
        // (One scalar register at most: the constant bus.)
        1 if lane == "s8" => format!("v_writelane_b32 v{v}, {}, s8", rng.below(65)),
        1 => format!("v_writelane_b32 v{v}, s{s}, {lane}"),
        _ => format!("v_readfirstlane_b32 s{s}, v{v}"),
    }
}

#[test]
fn lane_moves_in_fused_runs_give_the_interpreters_results() {
    // EXEC: every lane, lane 0 alone (SGPR spills), none, the top lanes off.
    let execs = [u64::MAX, 1, 0, u64::MAX >> 3, 0x8000_0000_0000_0000];
    let mut rng = Rng(0x5EED_1A7E);
    let mut fused = 0;
    for case in 0..150 {
        let src: Vec<String> = (0..16)
            .map(|_| match rng.below(8) {
                0..=2 => lane_inst(&mut rng),
                _ => Gen { rng: &mut rng }.inst(),
            })
            .collect();
        let text = src.join("\n");
        let exec = execs[case % execs.len()];
        let seed = rng.next() | 1;
        fused += check_wave(&text, || random_wave(&mut Rng(seed), exec));
    }
    if fuses() {
        assert!(fused > 150 * 16 / 8, "only {fused} instructions ran fused");
    }
}

#[test]
fn getpc_and_arithmetic_with_an_immediate_run_fused_as_interpreted() {
    // Unoptimised code's calls (s_getpc_b64 before s_swappc_b64) and stack pointer
    // updates (s_addk_i32 s32, ...), with SCC (signed overflow) read back.
    let text = "s_getpc_b64 s[8:9]
s_addk_i32 s10, 0x4400
s_cselect_b32 s12, 1, 2
s_addk_i32 s11, 0x8000
s_mulk_i32 s13, -3
s_cselect_b32 s4, 3, 4
v_mov_b32_e32 v1, s8
v_add_u32_e32 v2, s9, v1";
    let mut fused = 0;
    for seed in 1..40 {
        fused += check_wave(text, || {
            let mut w = random_wave(&mut Rng(seed), u64::MAX);
            // Values at the edges of signed overflow.
            w.sgpr[10] = [0x7FFF_BBFF, 0x7FFF_BC00, 0, u32::MAX][seed as usize % 4];
            w.sgpr[11] = [0x8000_0000, 0x8000_7FFF, 1][seed as usize % 3];
            w
        });
    }
    if fuses() {
        assert_eq!(fused, 39 * 8, "the scalar forms joined no run:\n{text}");
    }
}

#[test]
fn sixteen_bit_compares_run_fused_as_interpreted() {
    // The device runtime's -O0 code compares 16-bit values (v_cmp_*_u16/_i16); the
    // high halves must not count. Masks land in VCC and s[8:9], read back by selects.
    let mut fused = 0;
    for (cond, ty) in [
        ("eq", "u16"),
        ("lt", "u16"),
        ("ge", "u16"),
        ("lt", "i16"),
        ("gt", "i16"),
        ("ne", "i16"),
    ] {
        let text = format!(
            "v_cmp_{cond}_{ty}_e32 vcc, v0, v1
v_cmp_{cond}_{ty}_e64 s[8:9], v2, 5
v_cndmask_b32_e32 v3, v4, v5, vcc
v_cndmask_b32_e64 v6, v4, v5, s[8:9]"
        );
        for seed in 1..8 {
            fused += check_wave(&text, || {
                let mut w = random_wave(&mut Rng(seed), u64::MAX);
                // Equal low halves under different high halves, in half the lanes.
                for l in (0..WAVE_SIZE).step_by(2) {
                    w.vgpr[1][l] = w.vgpr[0][l] ^ 0xABCD_0000;
                    w.vgpr[2][l] = (w.vgpr[2][l] & 0xFFFF_0000) | 5;
                }
                w
            });
        }
    }
    if fuses() {
        assert_eq!(fused, 6 * 7 * 4, "the compares joined no run");
    }
}

#[test]
fn aperture_reads_run_fused_as_interpreted() {
    // Unoptimised code reads an aperture's base before each generic pointer it
    // makes: the fused run's copy of the bases must be the context's.
    let text = "s_mov_b64 s[8:9], src_shared_base
s_mov_b64 s[10:11], src_private_base
v_mov_b32_e32 v1, s9
v_add_u32_e32 v2, s11, v0
s_mov_b64 s[12:13], src_shared_base";
    let fused = check_text(text, 7);
    if fuses() {
        assert_eq!(fused, 5, "the aperture moves joined no run:\n{text}");
    }
}

/// `w` with the lanes of v[12:13] at scattered dwords of the data region at `base`
/// and those of v[14:15] at the `shape`'s addresses: scattered too (0), in the
/// shared aperture, each lane its own dword (1) or one dword for all (2), or in
/// the private aperture, one slot for all (3). FLAT_SCRATCH is `base`.
fn declined_addresses(rng: &mut Rng, w: &mut Wave, base: u64, shape: usize) {
    w.sgpr[102] = base as u32;
    w.sgpr[103] = (base >> 32) as u32;
    for l in 0..WAVE_SIZE {
        let a = base + 4 * rng.below(DATA_BYTES as usize / 4) as u64;
        (w.vgpr[12][l], w.vgpr[13][l]) = (a as u32, (a >> 32) as u32);
        let b = match shape {
            0 => base + 4 * rng.below(DATA_BYTES as usize / 4) as u64,
            1 => Apertures::KFD.shared_base + 4 * l as u64,
            2 => Apertures::KFD.shared_base + 8,
            _ => Apertures::KFD.private_base + 16,
        };
        (w.vgpr[14][l], w.vgpr[15][l]) = (b as u32, (b >> 32) as u32);
    }
}

/// A run whose FLAT accesses its code declines (scattered lanes, the shared or
/// private aperture) goes on past them: the interpreter's plan runs each from the
/// run, and every entry of the block runs fused, with the interpreter's results.
#[test]
fn runs_go_on_past_flat_accesses_their_code_declines() {
    let text = "v_add_u32_e32 v0, v1, v2
flat_load_dword v3, v[12:13]
v_add_u32_e32 v4, v3, v0
flat_store_dword v[14:15], v4
v_xor_b32_e32 v5, v4, v3
flat_load_dwordx2 v[6:7], v[14:15] offset:8
v_sub_u32_e32 v8, v6, v7
s_endpgm
";
    let mem = TestMemory::default();
    let (data, base) = mem.alloc_guarded(DATA_BYTES, GUARD);
    let mut lds = small_lds();
    lds.resize(512, 7);
    for shape in 0..4 {
        for seed in 1..4 {
            let wave = || {
                let mut r = Rng(seed * 977 + shape as u64);
                let mut w = random_wave(&mut r, u64::MAX);
                declined_addresses(&mut r, &mut w, base, shape);
                w
            };
            compare_memory_runs(&mem, &data, &lds, text, 0, wave);
            // Dynamically: the seven entries before s_endpgm all ran fused, but
            // for scattered stores, which have no plan: the run stops before the
            // store, the interpreter runs it, then the rest of the run from the
            // next part (the xor; the scattered qword load, misaligned, stops
            // that one too, and the subtract alone is no run).
            let (with, _, start) = programs(&mem, text);
            let (w, exit) = run_lds(&mem, &with, start, wave(), &mut lds.clone());
            assert_eq!(exit, "Ok(Ended)", "shape {shape}");
            if fuses() {
                let want = if shape == 0 { 4 } else { 7 };
                assert_eq!(w.fused_instructions, want, "shape {shape}, seed {seed}");
            }
        }
    }
}

/// A scattered load in a run, where other waves share the worker (a finite
/// `yield_after`), defers itself as the interpreter's plan does: the run stops
/// before it and the wave yields there, then runs it when resumed, with the
/// interpreter's results.
#[test]
fn a_gather_in_a_run_defers_itself_and_the_wave_yields_before_it() {
    let text = "v_add_u32_e32 v0, v1, v2
flat_load_dword v3, v[12:13]
v_add_u32_e32 v4, v3, v0
s_endpgm
";
    let mem = TestMemory::default();
    let (data, base) = mem.alloc_guarded(DATA_BYTES, GUARD);
    let init: Vec<u8> = (0..DATA_BYTES as usize).map(|i| (i * 7) as u8).collect();
    assert!(data.write_bytes(GUARD, &init));
    let wave = || {
        let mut r = Rng(11);
        let mut w = random_wave(&mut r, u64::MAX);
        declined_addresses(&mut r, &mut w, base, 0);
        w
    };
    let (with, without, start) = programs(&mem, text);
    let mut out = Vec::new();
    for program in [&with, &without] {
        let mut w = wave();
        w.pc = start;
        let mut lds = small_lds();
        let mut ctx = context(&mem, &mut lds, 1_000_000, 1000);
        let first = w.run(program, &mut ctx).expect("runs");
        let at = w.pc;
        let then = w.run(program, &mut ctx).expect("runs");
        out.push((first, at, then, w));
    }
    let gather = start + 4;
    for (first, at, then, _) in &out {
        assert_eq!(
            (*first, *at, *then),
            (WaveExit::Yield, gather, WaveExit::Ended)
        );
    }
    let (a, b) = (&out[0].3, &out[1].3);
    for reg in 0..VREGS {
        assert_eq!(a.vgpr[reg], b.vgpr[reg], "v{reg} differs");
    }
    assert_eq!(a.instructions, b.instructions);
    if fuses() {
        // The add before the gather ran in the run, the gather's entry did not
        // (the run after it is a run of its own: the last add).
        assert!(a.fused_instructions >= 1, "{}", a.fused_instructions);
    }
}
