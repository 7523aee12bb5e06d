//! The JIT's bytes, decoded by llvm-objdump-16 (Intel syntax) from an object file
//! llvm-mc-16 makes of them, and compared with the instructions meant:
//!
//! - each form the JIT encodes by hand ([`vex`]'s forms, [`gather_dd`]) decodes to
//!   the instruction meant, for low and high registers, and so do the ops that use
//!   them or work around a dynasm-rs bug (the f64 ops, the high-half multiplies);
//! - each VEX form the JIT has dynasm-rs encode ([`DYNASM_FORMS`]: one example per
//!   form, written as the JIT writes it) decodes to the instruction written;
//! - whole runs compiled from gfx90a programs that reach every op, access, scalar
//!   form and mask path the JIT has ([`PROGRAMS`]) decode completely (no byte the
//!   decoder rejects), use only the forms of [`FORMS`], and every vector form among
//!   them is checked one by one above (a new form, or a dynasm-rs form that decodes
//!   as another, such as `vfmadd231ps` or `vpsrlq xmm, xmm, imm`, fails here);
//! - what dynasm-rs 3.2.1 makes of the forms the JIT avoids (its bugs, so that an
//!   upgrade that fixes one shows);
//! - the FMA gate: on a host with AVX2 and without FMA3, `v_fma_f64`,
//!   `v_fmac_f64`, `v_fma_f32` and `v_fmac_f32` join no run and no FMA
//!   instruction is emitted;
//! - the lane operations the JIT restates in x86 (`sem::Bin`, `sem::Tri`,
//!   `sem::Shift64`) give `sem`'s results on edge and random values, for every one
//!   it fuses (the carries, compares, selects and f64 ops are checked against the
//!   interpreter in `isa/tests/fused.rs`).

use std::io::Write;
use std::process::{Command, Stdio};

use dynasmrt::dynasm;
use dynasmrt::x64::Assembler;

use super::*;
use crate::program::Run;

/// Bytes `f` emits on a fresh assembler.
fn bytes_of(f: impl FnOnce(&mut Assembler)) -> Vec<u8> {
    let mut a = Assembler::new().expect("an assembler");
    f(&mut a);
    match a.finalize() {
        Ok(code) => code.to_vec(),
        Err(_) => panic!("the assembler finalizes"),
    }
}

/// Runs llvm-mc-16 with `args` on `input`; its stdout and stderr.
fn llvm_mc(args: &[&str], input: &str) -> (String, String) {
    let out = Command::new("llvm-mc-16")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .expect("a stdin pipe")
                .write_all(input.as_bytes())?;
            c.wait_with_output()
        })
        .expect("llvm-mc-16 runs");
    assert!(out.status.success(), "llvm-mc-16 {args:?} failed");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh path for a scratch file of this test process.
fn scratch(ext: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("isa-jit-{}-{n}.{ext}", std::process::id()))
}

/// The x86-64 instructions in `bytes` as llvm-objdump-16 prints them in Intel
/// syntax (an object file made by llvm-mc-16 from `.byte` lines holds them: the
/// listing then gives each instruction's address, so its true length); panics
/// unless every byte belongs to an instruction the decoder accepts.
fn disassemble(bytes: &[u8]) -> Vec<String> {
    let lines: Vec<String> = bytes
        .chunks(64)
        .map(|c| {
            let c: Vec<String> = c.iter().map(|b| format!("{b:#04x}")).collect();
            format!(".byte {}\n", c.join(","))
        })
        .collect();
    let obj = scratch("o");
    let path = obj.to_string_lossy().into_owned();
    let (_, err) = llvm_mc(
        &["-filetype=obj", "-triple=x86_64", "-o", &path],
        &lines.concat(),
    );
    assert!(err.is_empty(), "llvm-mc-16: {err}");
    let out = Command::new("llvm-objdump-16")
        .args(["-d", "-M", "intel", "--no-show-raw-insn", &path])
        .output()
        .expect("llvm-objdump-16 runs");
    let _ = std::fs::remove_file(&obj);
    assert!(out.status.success(), "llvm-objdump-16 failed");
    let mut listing = Vec::new();
    let mut at = 0;
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((addr, text)) = l.split_once(':') else {
            continue;
        };
        let Ok(addr) = usize::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        assert!(
            listing.is_empty() || addr > at,
            "addresses out of order at {l}"
        );
        let text = text.trim();
        // (Less a jump's target label and a comment.)
        let text = text.split(" <").next().unwrap_or(text);
        let text = text.split(" #").next().unwrap_or(text);
        let words: Vec<&str> = text.split_whitespace().collect();
        let text = words.join(" ");
        assert!(
            !text.contains("unknown") && !text.starts_with("(bad)"),
            "bytes the decoder rejects at {addr:#x}: {:02x?}",
            &bytes[addr..bytes.len().min(addr + 16)]
        );
        listing.push(text);
        at = addr;
    }
    // (An instruction cut short at the end would print as unknown.)
    assert!(bytes.is_empty() || !listing.is_empty(), "nothing decoded");
    listing
}

/// Checks that `f` emits exactly the one instruction `want` (as llvm-objdump-16
/// prints it).
fn check_one(want: &str, f: impl FnOnce(&mut Assembler)) {
    let bytes = bytes_of(f);
    assert_eq!(disassemble(&bytes), [want], "bytes {bytes:02x?}");
}

/// The operand kind of an operand as llvm-mc-16 prints it: `zmm`, `ymm`, `xmm`,
/// `k`, `r64`, `r32`, `r16`, `r8`, `m8`..`m512` (with `ptr`), `m` (LEA's), `vsib`
/// or `imm`, followed by ` {k}` under a write mask.
fn kind(op: &str) -> String {
    const R64: [&str; 16] = [
        "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15",
    ];
    const R32: [&str; 8] = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"];
    const R16: [&str; 8] = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"];
    const R8: [&str; 8] = ["al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil"];
    let num = |s: &str| s.parse::<u8>().is_ok();
    if let Some((op, mask)) = op.split_once(" {") {
        let k = mask.strip_suffix('}').and_then(|k| k.strip_prefix('k'));
        return match k.is_some_and(num) {
            true => format!("{} {{k}}", kind(op)),
            false => format!("?{op} {{{mask}"),
        };
    }
    if let Some(size) = op.strip_suffix(']').and_then(|m| m.split_once(" ptr [")) {
        if size.1.contains("mm") {
            return "vsib".into();
        }
        let bits = match size.0 {
            "byte" => 8,
            "word" => 16,
            "dword" => 32,
            "qword" => 64,
            "xmmword" => 128,
            "ymmword" => 256,
            "zmmword" => 512,
            _ => return format!("m?{}", size.0),
        };
        return format!("m{bits}");
    }
    if op.starts_with('[') {
        return "m".into();
    }
    if op.strip_prefix("zmm").is_some_and(num) {
        return "zmm".into();
    }
    if op.strip_prefix("ymm").is_some_and(num) {
        return "ymm".into();
    }
    if op.strip_prefix('k').is_some_and(num) {
        return "k".into();
    }
    if op.strip_prefix("xmm").is_some_and(num) {
        return "xmm".into();
    }
    if R64.contains(&op) {
        return "r64".into();
    }
    let high = op.strip_prefix('r').unwrap_or("");
    if R32.contains(&op) || high.strip_suffix('d').is_some_and(num) {
        return "r32".into();
    }
    if R16.contains(&op) || high.strip_suffix('w').is_some_and(num) {
        return "r16".into();
    }
    if R8.contains(&op) || high.strip_suffix('b').is_some_and(num) {
        return "r8".into();
    }
    let hex = op.trim_start_matches('-').strip_prefix("0x");
    if op.parse::<i64>().is_ok() || hex.is_some_and(|h| u64::from_str_radix(h, 16).is_ok()) {
        return "imm".into();
    }
    format!("?{op}")
}

/// The form of an instruction's text: its mnemonic and the kinds of its operands
/// (`vpaddd ymm, ymm, m256`).
fn form(text: &str) -> String {
    let (mnemonic, operands) = text.split_once(' ').unwrap_or((text, ""));
    let kinds: Vec<String> = operands
        .split(", ")
        .filter(|o| !o.is_empty())
        .map(kind)
        .collect();
    format!("{mnemonic} {}", kinds.join(", "))
        .trim_end()
        .to_string()
}

/// Assembles gfx90a source with llvm-mc-16: each instruction's dwords.
fn gfx90a(src: &str) -> Vec<Vec<u32>> {
    let (out, err) = llvm_mc(&["-arch=amdgcn", "-mcpu=gfx90a", "-show-encoding"], src);
    assert!(err.is_empty(), "llvm-mc-16 rejects the program: {err}");
    out.lines()
        .filter_map(|l| l.split_once("; encoding: [").map(|(_, e)| e.to_string()))
        .map(|e| {
            let bytes: Vec<u8> = e
                .trim_end()
                .trim_end_matches(']')
                .split(',')
                .map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).expect("hex"))
                .collect();
            bytes
                .chunks(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect()
        })
        .collect()
}

/// The runs of the block `src` (as `program::fuse_runs` finds them) on a host with
/// `features`, and the bytes of their code (empty when there is none).
fn compile_block(src: &str, features: HostFeatures) -> (Vec<(usize, Chain)>, Vec<u8>) {
    let mut insts = Vec::new();
    let mut pc = 0u64;
    for words in gfx90a(src) {
        let (inst, n) = crate::decode::decode(&words, pc).expect("a gfx90a instruction");
        pc += 4 * n as u64;
        insts.push((inst, pc));
    }
    let runs: Vec<Run> = insts.iter().map(|(i, next)| Run::of(i, *next)).collect();
    let slots = runs
        .iter()
        .zip(&insts)
        .map(|(r, (inst, next))| r.slot(inst, *next));
    let found = find_runs_for(slots, features);
    let bytes =
        compile_for(&found, features).map_or_else(Vec::new, |(code, _)| code.bytes().to_vec());
    (found, bytes)
}

/// All the features the JIT uses.
const HOST: HostFeatures = HostFeatures {
    avx2: true,
    fma: true,
    avx512: true,
};

/// A host without AVX-512 (the private accesses' AVX2 forms).
const HOST_AVX2: HostFeatures = HostFeatures {
    avx512: false,
    ..HOST
};

/// Blocks whose runs use every op, access and scalar form the JIT fuses.
const PROGRAMS: [&str; 11] = [
    // Integer ops: every binary and three-source kind, the carries (in registers
    // and from before the run), selects, 32- and 64-bit compares of every condition,
    // 64-bit shifts; scalar, inline and literal sources; three and four masks.
    "s_add_u32 s8, s8, s9
v_mov_b32_e32 v0, s8
v_mov_b32_e32 v1, 0x12345
v_pk_mov_b32 v[2:3], v[4:5], v[6:7] op_sel:[0,1]
v_and_b32_e32 v2, v0, v1
v_or_b32_e32 v2, s9, v1
v_xor_b32_e32 v2, 7, v1
v_lshlrev_b32_e32 v3, v0, v1
v_lshrrev_b32_e32 v3, v0, v1
v_ashrrev_i32_e32 v3, v0, v1
v_min_i32_e32 v3, v0, v1
v_max_i32_e32 v3, v0, v1
v_min_u32_e32 v3, v0, v1
v_max_u32_e32 v3, v0, v1
v_mul_u32_u24_e32 v3, v0, v1
v_mul_lo_u32 v3, v0, v1
v_mul_hi_u32 v3, v0, v1
v_mul_hi_i32 v11, v10, v9
v_add3_u32 v4, v0, v1, v2
v_lshl_add_u32 v4, v0, v1, v2
v_add_lshl_u32 v4, v0, v1, v2
v_lshl_or_b32 v4, v0, v1, v2
v_and_or_b32 v4, v0, v1, v2
v_or3_b32 v4, v0, v1, v2
v_xad_u32 v4, v0, v1, v2
v_bfi_b32 v4, v0, v1, v2
v_min3_u32 v4, v0, v1, v2
v_max3_u32 v4, v0, v1, v2
v_min3_i32 v4, v0, v1, v2
v_max3_i32 v4, v0, v1, v2
v_not_b32_e32 v4, v3
v_add_co_u32_e32 v5, vcc, v0, v1
v_addc_co_u32_e32 v6, vcc, v2, v3, vcc
v_sub_co_u32_e64 v5, s[4:5], v0, v1
v_subb_co_u32_e64 v6, s[6:7], v2, v3, s[4:5]
v_cmp_lt_u32_e64 s[10:11], v0, v1
v_cmp_gt_i32_e64 s[12:13], v0, v1
v_cndmask_b32_e64 v7, v0, v1, s[10:11]
v_cndmask_b32_e64 v7, v0, v1, s[14:15]
v_subrev_co_u32_e32 v8, vcc, v0, v1
v_addc_co_u32_e64 v8, s[4:5], v0, v1, s[16:17]
v_subbrev_co_u32_e64 v8, s[6:7], v0, v1, s[4:5]
s_nop 0
v_cmp_f_u32_e32 vcc, v0, v1
v_cmp_lt_u32_e32 vcc, v0, v1
v_cmp_eq_i32_e32 vcc, v0, v1
v_cmp_le_u32_e32 vcc, v0, v1
v_cmp_gt_i32_e32 vcc, v0, v1
v_cmp_ne_u32_e32 vcc, v0, v1
v_cmp_ge_i32_e32 vcc, v0, v1
v_cmp_t_u32_e32 vcc, v0, v1
v_cmp_f_u64_e32 vcc, v[0:1], v[2:3]
v_cmp_lt_u64_e32 vcc, v[0:1], v[2:3]
v_cmp_eq_i64_e32 vcc, v[0:1], v[2:3]
v_cmp_le_u64_e32 vcc, v[0:1], v[2:3]
v_cmp_gt_i64_e32 vcc, v[0:1], v[2:3]
v_cmp_ne_u64_e32 vcc, v[0:1], v[2:3]
v_cmp_ge_i64_e32 vcc, v[0:1], v[2:3]
v_cmp_t_u64_e32 vcc, v[0:1], v[2:3]
v_lshlrev_b64 v[8:9], 0, v[0:1]
v_lshlrev_b64 v[8:9], 5, v[0:1]
v_lshlrev_b64 v[8:9], 40, v[0:1]
v_lshrrev_b64 v[8:9], 5, v[0:1]
v_lshrrev_b64 v[8:9], 40, v[0:1]
v_ashrrev_i64 v[8:9], 5, v[0:1]
v_ashrrev_i64 v[8:9], 40, v[0:1]
v_lshlrev_b64 v[8:9], s10, v[0:1]
v_lshrrev_b64 v[8:9], v2, v[0:1]
v_ashrrev_i64 v[8:9], s10, v[0:1]
s_endpgm",
    // f64: add, multiply, fused multiply-add (both forms).
    "v_add_f64 v[0:1], v[2:3], v[4:5]
v_mul_f64 v[6:7], v[0:1], 0.5
v_fma_f64 v[8:9], v[0:1], v[2:3], v[6:7]
v_fmac_f64_e32 v[10:11], s[8:9], v[8:9]
s_endpgm",
    // f32: arithmetic (inline constants and literals among the sources), the
    // reciprocal and the conversions (LLVM's unsigned division).
    "v_add_f32_e32 v0, v1, v2
v_sub_f32_e32 v3, v0, v1
v_subrev_f32_e32 v3, s8, v1
v_mul_f32_e32 v4, 0x4f7ffffe, v3
v_fma_f32 v5, v0, v1, 1.0
v_fmac_f32_e32 v6, v0, v1
v_rcp_iflag_f32_e32 v7, v4
v_rcp_f32_e32 v7, v4
v_cvt_f32_u32_e32 v8, v0
v_cvt_f32_i32_e32 v8, v0
v_cvt_u32_f32_e32 v9, v7
v_cvt_i32_f32_e32 v10, v7
v_mbcnt_lo_u32_b32 v11, -1, 0
v_mbcnt_hi_u32_b32 v11, -1, v11
s_endpgm",
    // Scalar instructions: SOP2, SOPC, SOP1, SOPK, saveexec, branches.
    "s_add_u32 s8, s8, s9
s_sub_u32 s8, s8, 5
s_add_i32 s8, s8, s9
s_sub_i32 s8, s8, s9
s_addc_u32 s8, s8, s9
s_subb_u32 s8, s8, s9
s_min_i32 s8, s8, s9
s_min_u32 s8, s8, s9
s_max_i32 s8, s8, s9
s_max_u32 s8, s8, s9
s_cselect_b32 s8, s8, s9
s_cselect_b64 s[8:9], s[8:9], s[10:11]
s_and_b32 s8, s8, s9
s_or_b32 s8, s8, s9
s_xor_b32 s8, s8, s9
s_andn2_b32 s8, s8, s9
s_orn2_b32 s8, s8, s9
s_nand_b32 s8, s8, s9
s_nor_b32 s8, s8, s9
s_xnor_b32 s8, s8, s9
s_and_b64 s[8:9], s[8:9], s[10:11]
s_or_b64 s[8:9], s[8:9], 0x1234
s_xor_b64 s[8:9], s[8:9], s[10:11]
s_andn2_b64 s[8:9], s[8:9], s[10:11]
s_orn2_b64 s[8:9], s[8:9], s[10:11]
s_nand_b64 s[8:9], s[8:9], s[10:11]
s_nor_b64 s[8:9], s[8:9], s[10:11]
s_xnor_b64 s[8:9], s[8:9], s[10:11]
s_lshl_b32 s8, s8, s9
s_lshr_b32 s8, s8, s9
s_ashr_i32 s8, s8, s9
s_lshl_b64 s[8:9], s[8:9], s9
s_lshr_b64 s[8:9], s[8:9], 3
s_ashr_i64 s[8:9], s[8:9], s9
s_bfm_b32 s8, s8, s9
s_mul_i32 s8, s8, s9
s_mul_hi_u32 s8, s8, s9
s_lshl1_add_u32 s8, s8, s9
s_lshl4_add_u32 s8, s8, s9
s_cmp_eq_u32 s8, s9
s_cmp_lg_i32 s8, s9
s_cmp_gt_i32 s8, s9
s_cmp_ge_i32 s8, s9
s_cmp_lt_i32 s8, s9
s_cmp_le_i32 s8, s9
s_cmp_gt_u32 s8, s9
s_cmp_ge_u32 s8, s9
s_cmp_lt_u32 s8, s9
s_cmp_le_u32 s8, s9
s_cmp_eq_u64 s[8:9], 0
s_cmp_lg_u64 s[8:9], s[10:11]
s_bitcmp0_b32 s8, 3
s_bitcmp1_b64 s[8:9], s10
s_cmpk_eq_u32 s8, 0x10
s_mov_b32 s10, s11
s_mov_b64 s[10:11], s[12:13]
s_mov_b64 s[10:11], 0x12345678
s_sext_i32_i8 s10, s11
s_sext_i32_i16 s10, s11
s_getpc_b64 s[10:11]
s_mov_b64 s[12:13], src_shared_base
s_mov_b64 s[10:11], src_private_base
s_addk_i32 s8, 0x4400
s_mulk_i32 s9, 0xfffd
s_cbranch_scc0 2
s_and_saveexec_b64 s[12:13], s[8:9]
s_or_saveexec_b64 s[12:13], s[8:9]
s_xor_saveexec_b64 s[12:13], s[8:9]
s_andn2_saveexec_b64 s[12:13], s[8:9]
s_orn2_saveexec_b64 s[12:13], s[8:9]
s_nand_saveexec_b64 s[12:13], s[8:9]
s_nor_saveexec_b64 s[12:13], s[8:9]
s_xnor_saveexec_b64 s[12:13], s[8:9]
s_andn1_saveexec_b64 s[12:13], s[8:9]
s_orn1_saveexec_b64 s[12:13], s[8:9]
s_cbranch_scc1 2
s_mov_b32 s10, s11
s_cbranch_vccz 2
s_mov_b32 s10, s11
s_cbranch_vccnz 2
s_mov_b32 s10, s11
s_cbranch_execz 2
s_mov_b32 s10, s11
s_cbranch_execnz 2
s_mov_b32 s10, s11
s_branch 2",
    // LDS loads (one address, consecutive) and a store among vector ops.
    "v_add_u32_e32 v1, v1, v2
ds_read_b32 v3, v0 offset:16
ds_read2_b32 v[4:5], v0 offset0:1 offset1:2
ds_read_b64 v[6:7], v0 offset:8
v_add_u32_e32 v1, v3, v4
ds_write_b32 v0, v1 offset:64
s_endpgm",
    // FLAT and GLOBAL loads and stores of 4 and 8 bytes between vector ops.
    "v_add_u32_e32 v1, v1, v2
global_load_dword v3, v[12:13], off
v_add_u32_e32 v1, v3, v2
global_load_dwordx2 v[0:1], v[12:13], off offset:-8
v_add_u32_e32 v1, v1, v2
global_store_dword v[12:13], v1, off
v_add_u32_e32 v1, v1, v2
flat_load_dword v3, v[12:13]
v_add_u32_e32 v1, v3, v2
flat_store_dwordx2 v[14:15], v[0:1] offset:8
v_add_u32_e32 v1, v1, v2
s_endpgm",
    // Private accesses (spills through the private segment buffer) between vector
    // ops, SOFFSET a register and a constant; lane moves (SGPR spills) and AGPR
    // moves.
    "v_add_u32_e32 v1, v1, v2
buffer_store_dword v1, off, s[0:3], s33 offset:8
buffer_load_dwordx2 v[2:3], off, s[0:3], s33 offset:16
v_add_u32_e32 v1, v1, v2
buffer_store_dwordx4 v[4:7], off, s[0:3], 4 offset:32
v_add_u32_e32 v1, v1, v2
v_writelane_b32 v3, s8, 5
v_writelane_b32 v3, 7, s9
v_readlane_b32 s10, v3, 6
v_readlane_b32 s11, v3, s9
v_readfirstlane_b32 s12, v1
v_accvgpr_write_b32 a1, v1
v_accvgpr_read_b32 v2, a1
s_endpgm",
    // One bpermute alone, then a pair through one address.
    "v_add_u32_e32 v1, v1, v2
ds_bpermute_b32 v12, v0, v1 offset:4
v_add_u32_e32 v1, v12, v2
ds_bpermute_b32 v13, v0, v2 offset:8
ds_bpermute_b32 v14, v0, v3 offset:8
v_add_u32_e32 v1, v13, v14
s_endpgm",
    // A run of scalar instructions only, and a part with more than two masks.
    "s_mov_b32 s8, s9
s_add_u32 s8, s8, s9
v_cmp_lt_u32_e64 s[10:11], v0, v1
v_cmp_lt_u32_e64 s[12:13], v0, v1
v_cmp_lt_u32_e64 s[14:15], v0, v1
v_cmp_lt_u32_e64 s[16:17], v0, v1
v_cndmask_b32_e64 v7, v0, v1, s[16:17]
s_endpgm",
    // A call as unoptimised code makes one: the callee's address from
    // `s_getpc_b64`, then `s_swappc_b64` (the run's last entry, its way out).
    "s_getpc_b64 s[8:9]
s_add_u32 s8, s8, 0x100
s_addc_u32 s9, s9, 0
s_swappc_b64 s[30:31], s[8:9]",
    // The end of an `if` before a barrier (the run's last entry, its way out).
    "v_add_u32_e32 v0, v1, v0
s_or_b64 exec, exec, s[10:11]
s_barrier",
];

/// The forms of the instructions the JIT emits (as [`form`] names them): what the
/// runs of [`PROGRAMS`] use. A new form is added here once checked (a hand-encoded
/// one in [`hand_encoded_forms_decode_as_meant`], one dynasm-rs encodes with a
/// register order or width it could get wrong in [`dynasm_forms_decode_as_written`]).
const FORMS: [&str; 188] = [
    "adc r32, r32",
    "add m64, imm",
    "add r32, imm",
    "add r32, r32",
    "add r64, imm",
    "add r64, m64",
    "add r64, r64",
    "and r32, imm",
    "and r32, r32",
    "and r64, imm",
    "and r64, r64",
    "bsf r64, m64",
    "bsf r64, r64",
    "bt r32, r32",
    "bt r64, imm",
    "bt r64, r64",
    "bts r64, imm",
    "call r64",
    "cmovae r32, r32",
    "cmovbe r32, r32",
    "cmove r64, r64",
    "cmovge r32, r32",
    "cmovle r32, r32",
    "cmp m64, imm",
    "cmp m64, r64",
    "cmp m8, imm",
    "cmp r32, imm",
    "cmp r32, m32",
    "cmp r32, r32",
    "cmp r64, imm",
    "cmp r64, m64",
    "cmp r64, r64",
    "dec r32",
    "dec r64",
    "imul r32, r32",
    "imul r64, r64",
    "inc r32",
    "ja imm",
    "jae imm",
    "jb imm",
    "jbe imm",
    "je imm",
    "jl imm",
    "jmp imm",
    "jmp m64",
    "jne imm",
    "jns imm",
    "kmovw k, m16",
    "kortestw k, k",
    "kxnorw k, k, k",
    "kxorw k, k, k",
    "lea r32, m",
    "lea r64, m",
    "mov m32, imm",
    "mov m32, r32",
    "mov m64, imm",
    "mov m64, r64",
    "mov m8, r8",
    "mov r32, imm",
    "mov r32, m32",
    "mov r32, r32",
    "mov r64, m64",
    "mov r64, r64",
    "movabs r64, imm",
    "movsx r32, r16",
    "movsx r32, r8",
    "movsx r64, r8",
    "movzx r32, m8",
    "neg r32",
    "not r32",
    "not r64",
    "or r32, r32",
    "or r64, r64",
    "pop r64",
    "prefetcht1 m8",
    "prefetchw m8",
    "push r64",
    "ret",
    "ror r64, imm",
    "sar r32, r8",
    "sar r64, r8",
    "sbb r32, r32",
    "seta m8",
    "setae m8",
    "setb m8",
    "setbe m8",
    "sete m8",
    "sete r8",
    "setg m8",
    "setge m8",
    "setl m8",
    "setle m8",
    "setne m8",
    "setne r8",
    "seto m8",
    "shl r32, r8",
    "shl r64, imm",
    "shl r64, r8",
    "shr r32, r8",
    "shr r64, imm",
    "shr r64, r8",
    "sub r32, r32",
    "sub r64, imm",
    "sub r64, m64",
    "test m32, imm",
    "test m32, r32",
    "test r32, imm",
    "test r32, r32",
    "test r64, r64",
    "vaddpd ymm, ymm, ymm",
    "vaddps ymm, ymm, ymm",
    "vandps ymm, ymm, ymm",
    "vblendvpd ymm, ymm, ymm, ymm",
    "vblendvps ymm, ymm, ymm, ymm",
    "vcmpgeps ymm, ymm, ymm",
    "vcmpunordpd ymm, ymm, ymm",
    "vcmpunordps ymm, ymm, ymm",
    "vcvtdq2ps ymm, ymm",
    "vcvttps2dq ymm, ymm",
    "vdivps ymm, ymm, ymm",
    "vfmadd231pd ymm, ymm, ymm",
    "vfmadd231ps ymm, ymm, ymm",
    "vmaxps ymm, ymm, ymm",
    "vmovapd ymm, ymm",
    "vmovaps ymm, ymm",
    "vmovd r32, xmm",
    "vmovd xmm, r32",
    "vmovdqa ymm, ymm",
    "vmovdqu m256, ymm",
    "vmovdqu ymm, m256",
    "vmovdqu32 m512 {k}, zmm",
    "vmovdqu32 m512, zmm",
    "vmovdqu32 zmm, m512",
    "vmovmskps r32, ymm",
    "vmovq xmm, r64",
    "vmulpd ymm, ymm, ymm",
    "vmulps ymm, ymm, ymm",
    "vorpd ymm, ymm, ymm",
    "vorps ymm, ymm, ymm",
    "vpaddd ymm, ymm, m256",
    "vpaddd ymm, ymm, ymm",
    "vpand ymm, ymm, m256",
    "vpand ymm, ymm, ymm",
    "vpandn ymm, ymm, ymm",
    "vpblendvb ymm, ymm, ymm, ymm",
    "vpbroadcastd ymm, m32",
    "vpbroadcastd ymm, xmm",
    "vpbroadcastd zmm, r32",
    "vpbroadcastq ymm, xmm",
    "vpcmpeqd k {k}, zmm, m512",
    "vpcmpeqd ymm, ymm, m256",
    "vpcmpeqd ymm, ymm, ymm",
    "vpcmpgtd ymm, ymm, ymm",
    "vpcmpgtq ymm, ymm, ymm",
    "vperm2i128 ymm, ymm, ymm, imm",
    "vpermq ymm, ymm, imm",
    "vpgatherdd ymm, vsib, ymm",
    "vpmaxsd ymm, ymm, ymm",
    "vpmaxud ymm, ymm, ymm",
    "vpminsd ymm, ymm, ymm",
    "vpminud ymm, ymm, ymm",
    "vpmovzxbd ymm, xmm",
    "vpmuldq ymm, ymm, ymm",
    "vpmulld ymm, ymm, ymm",
    "vpmuludq ymm, ymm, ymm",
    "vpor ymm, ymm, ymm",
    "vpslld ymm, ymm, imm",
    "vpsllq ymm, ymm, xmm",
    "vpsllvd ymm, ymm, ymm",
    "vpsllvq ymm, ymm, ymm",
    "vpsrad ymm, ymm, imm",
    "vpsravd ymm, ymm, ymm",
    "vpsrld ymm, ymm, imm",
    "vpsrlq ymm, ymm, xmm",
    "vpsrlvd ymm, ymm, ymm",
    "vpsrlvq ymm, ymm, ymm",
    "vpsubd ymm, ymm, ymm",
    "vptest ymm, ymm",
    "vpunpckhdq ymm, ymm, ymm",
    "vpunpckldq ymm, ymm, ymm",
    "vpxor ymm, ymm, ymm",
    "vshufps ymm, ymm, ymm, imm",
    "vsubps ymm, ymm, ymm",
    "vxorps ymm, ymm, ymm",
    "vzeroupper",
    "xor r32, imm",
    "xor r32, r32",
    "xor r64, r64",
];

/// Every distinct form the runs of [`PROGRAMS`] use, with one example of each, on
/// hosts with AVX-512 and without.
fn run_forms() -> std::collections::BTreeMap<String, String> {
    let mut forms = std::collections::BTreeMap::new();
    for src in PROGRAMS {
        for features in [HOST, HOST_AVX2] {
            let (runs, bytes) = compile_block(src, features);
            assert!(!runs.is_empty() && !bytes.is_empty(), "no run in {src}");
            for l in disassemble(&bytes) {
                forms.entry(form(&l)).or_insert(l);
            }
        }
    }
    forms
}

#[test]
fn runs_decode_completely_and_use_only_known_forms() {
    let forms = run_forms();
    let unknown: Vec<String> = forms
        .iter()
        .filter(|(f, _)| !FORMS.contains(&f.as_str()))
        .map(|(f, e)| format!("{f} (as in `{e}`)"))
        .collect();
    assert!(unknown.is_empty(), "forms not in FORMS: {unknown:#?}");
    // Every vector form (VEX: where dynasm-rs 3.2.1 has its bugs) is checked one
    // by one: hand-encoded, or in `DYNASM_FORMS`.
    let checked: Vec<String> = HAND_ENCODED
        .iter()
        .chain(DYNASM_FORMS.iter().map(|(t, _)| t))
        .map(|t| form(t))
        .collect();
    let unchecked: Vec<&str> = FORMS
        .iter()
        .copied()
        .filter(|f| f.starts_with('v') && !checked.iter().any(|c| c == f))
        .collect();
    assert!(
        unchecked.is_empty(),
        "vector forms not checked: {unchecked:#?}"
    );
    // The workarounds' forms are there: the programs reach them.
    for f in [
        "vmovdqu32 m512 {k}, zmm",
        "vpcmpeqd k {k}, zmm, m512",
        "vpcmpeqd ymm, ymm, m256",
        "vpblendvb ymm, ymm, ymm, ymm",
        "vfmadd231pd ymm, ymm, ymm",
        "vshufps ymm, ymm, ymm, imm",
        "vmovmskps r32, ymm",
        "vpgatherdd ymm, vsib, ymm",
        "vpsrlq ymm, ymm, xmm",
    ] {
        assert!(forms.contains_key(f), "no {f} in the runs");
    }
}

/// One example of each hand-encoded form (all checked in
/// [`hand_encoded_forms_decode_as_meant`]).
const HAND_ENCODED: [&str; 16] = [
    "vmovdqu32 zmm0, zmmword ptr [rdx + 0x100]",
    "vmovdqu32 zmmword ptr [rdi + 0x1c0], zmm0",
    "vmovdqu32 zmmword ptr [rdx + 0x40] {k2}, zmm0",
    "vpbroadcastd zmm1, ecx",
    "vpcmpeqd k1 {k1}, zmm1, zmmword ptr [rdi + 0x140]",
    "kxorw k3, k1, k2",
    "kxnorw k1, k1, k1",
    "kortestw k1, k1",
    "kmovw k2, word ptr [rsi + 0x1fa]",
    "vmovmskps eax, ymm8",
    "vfmadd231pd ymm13, ymm6, ymm7",
    "vfmadd231ps ymm3, ymm0, ymm1",
    "vcmpgeps ymm2, ymm1, ymm4",
    "vcmpunordps ymm15, ymm3, ymm3",
    "vshufps ymm3, ymm13, ymm1, 0x88",
    "vpgatherdd ymm6, ymmword ptr [rdi + 4*ymm0 + 0x200], ymm2",
];

#[test]
fn hand_encoded_forms_decode_as_meant() {
    // The EVEX forms of the private accesses, with the registers and bases they
    // use and displacements below 256, within a row, and across the vector file.
    let bases = [(RAX, "rax"), (RDX, "rdx"), (RSI, "rsi"), (RDI, "rdi")];
    for (z, (base, b), disp) in [
        (0, bases[1], 0x100),
        (1, bases[3], 0x1_0040),
        (7, bases[0], 0x7fff_ffc0),
    ] {
        check_one(
            &format!("vmovdqu32 zmm{z}, zmmword ptr [{b} + {disp:#x}]"),
            |a| zmm_load(a, z, base, disp),
        );
        check_one(
            &format!("vmovdqu32 zmmword ptr [{b} + {disp:#x}], zmm{z}"),
            |a| zmm_store(a, base, disp, z, 0),
        );
        for k in [1, 2, 7] {
            check_one(
                &format!("vmovdqu32 zmmword ptr [{b} + {disp:#x}] {{k{k}}}, zmm{z}"),
                |a| zmm_store(a, base, disp, z, k),
            );
        }
    }
    for (z, r, name) in [(0, RAX, "eax"), (1, RCX, "ecx"), (5, RDI, "edi")] {
        check_one(&format!("vpbroadcastd zmm{z}, {name}"), |a| {
            zmm_splat(a, z, r)
        });
    }
    for k in [1, 2, 7] {
        check_one(&format!("kxnorw k{k}, k{k}, k{k}"), |a| kxnorw_ones(a, k));
    }
    for (d, x, y) in [(3, 1, 2), (1, 6, 1), (7, 2, 5)] {
        check_one(&format!("kxorw k{d}, k{x}, k{y}"), |a| kxorw(a, d, x, y));
    }
    for (k, m, z, (base, b), disp) in [(1, 2, 0, bases[3], 0x40), (3, 7, 1, bases[0], 0x1ffc0)] {
        check_one(
            &format!("vpcmpeqd k{k} {{k{m}}}, zmm{z}, zmmword ptr [{b} + {disp:#x}]"),
            |a| zmm_cmpeq_under(a, k, m, z, base, disp),
        );
    }
    for (k, z, (base, b), disp) in [
        (1, 0, bases[3], 0x40),
        (1, 1, bases[3], 0x1ffc0),
        (6, 3, bases[2], 0x100),
    ] {
        check_one(
            &format!("vpcmpeqd k{k} {{k{k}}}, zmm{z}, zmmword ptr [{b} + {disp:#x}]"),
            |a| zmm_cmpeq_and(a, k, z, base, disp),
        );
    }
    for k in [1, 2, 7] {
        check_one(&format!("kortestw k{k}, k{k}"), |a| kortestw(a, k));
        for ((base, b), disp) in [(bases[2], 0x1f8), (bases[0], 0x1fe)] {
            check_one(&format!("kmovw k{k}, word ptr [{b} + {disp:#x}]"), |a| {
                kmovw_load(a, k, base, disp)
            });
        }
    }
    for y in [1, 8, 11, 15] {
        check_one(&format!("vmovmskps eax, ymm{y}"), |a| movmsk_eax(a, y));
    }
    for (acc, x, y) in [(13, 6, 7), (1, 0, 2), (15, 9, 3), (4, 12, 8)] {
        check_one(&format!("vfmadd231pd ymm{acc}, ymm{x}, ymm{y}"), |a| {
            fma_pd(a, acc, x, y)
        });
    }
    for (acc, x, y) in [(3, 0, 1), (13, 6, 7), (15, 9, 3), (4, 12, 8)] {
        check_one(&format!("vfmadd231ps ymm{acc}, ymm{x}, ymm{y}"), |a| {
            fma_ps(a, acc, x, y)
        });
    }
    for (d, x, y, pred, name) in [
        (2, 1, 4, CMP_GE, "ge"),
        (7, 1, 5, CMP_GE, "ge"),
        (15, 3, 3, CMP_UNORD, "unord"),
        (9, 12, 0, CMP_UNORD, "unord"),
    ] {
        check_one(&format!("vcmp{name}ps ymm{d}, ymm{x}, ymm{y}"), |a| {
            cmpps(a, d, x, y, pred)
        });
    }
    // Each condition's predicate, by its name in the SDM's table (`vcmp<name>pd`).
    let names = [
        "false", "lt_oq", "eq", "le_oq", "gt_oq", "neq_oq", "ge_oq", "ord", "unord", "nge_uq",
        "eq_uq", "ngt_uq", "nle_uq", "neq", "nlt_uq", "true",
    ];
    for (cond, name) in names.iter().enumerate() {
        let (d, x, y) = [(4, 6, 7), (5, 0, 2), (15, 9, 3), (11, 12, 13)][cond % 4];
        check_one(&format!("vcmp{name}pd ymm{d}, ymm{x}, ymm{y}"), |a| {
            cmppd(a, d, x, y, CMP_F64_PREDICATES[cond])
        });
    }
    for (d, x, y, imm) in [
        (3, 13, 1, 0x88),
        (5, 13, 1, 0xDD),
        (2, 0, 1, 0x88),
        (9, 4, 12, 0x1B),
    ] {
        check_one(&format!("vshufps ymm{d}, ymm{x}, ymm{y}, {imm:#x}"), |a| {
            shufps(a, d, x, y, imm)
        });
    }
    for (d, i, m, disp) in [(6, 0, 2, 0x200), (13, 0, 2, 0x40), (7, 9, 12, 0x1000)] {
        check_one(
            &format!("vpgatherdd ymm{d}, ymmword ptr [rdi + 4*ymm{i} + {disp:#x}], ymm{m}"),
            |a| gather_dd(a, d, i, m, disp),
        );
    }
}

/// The frame of an op emitted alone.
const FRAME: Frame = Frame {
    ext: 32,
    acc: 32,
    size: 64,
};

/// The listing of op `op` emitted alone (its mask result used).
fn op_listing(op: Op) -> Vec<String> {
    disassemble(&bytes_of(|a| emit_op(a, &FRAME, &op, true)))
}

#[test]
fn high_half_multiplies_shift_whole_ymm_registers() {
    let op = |op| Op::Bin {
        op,
        d: 3,
        a: Val::Row(0),
        b: Val::Row(1),
        aux: 0,
    };
    for (bin, mul) in [(Bin::MulHiU, "vpmuludq"), (Bin::MulHiI, "vpmuldq")] {
        assert_eq!(
            op_listing(op(bin)),
            [
                "vmovdqu ymm0, ymmword ptr [rdi + rdx]".to_string(),
                "vmovdqu ymm1, ymmword ptr [rdi + rdx + 0x100]".into(),
                "mov eax, 0x20".into(),
                "vmovd xmm7, eax".into(),
                "vpsrlq ymm3, ymm0, xmm7".into(),
                "vpsrlq ymm4, ymm1, xmm7".into(),
                format!("{mul} ymm2, ymm0, ymm1"),
                format!("{mul} ymm3, ymm3, ymm4"),
                "vpsrlq ymm2, ymm2, xmm7".into(),
                "vpsrlq ymm3, ymm3, xmm7".into(),
                "vpsllq ymm3, ymm3, xmm7".into(),
                "vpor ymm2, ymm2, ymm3".into(),
                "vmovdqu ymmword ptr [rdi + rdx + 0x300], ymm2".into(),
            ]
        );
    }
}

#[test]
fn f64_ops_multiply_add_and_shuffle_as_meant() {
    let src = [
        [Val::Row(0), Val::Row(1)],
        [Val::Row(2), Val::Row(3)],
        [Val::Row(4), Val::Row(5)],
    ];
    let fma = op_listing(Op::F64 {
        op: F64Op::Fma,
        d: 6,
        src,
    });
    for want in [
        "vmovapd ymm13, ymm12",
        "vfmadd231pd ymm13, ymm6, ymm7",
        "vmovapd ymm1, ymm4",
        "vfmadd231pd ymm1, ymm0, ymm2",
        "vshufps ymm3, ymm13, ymm1, 0x88",
        "vshufps ymm5, ymm13, ymm1, 0xdd",
        "vmovdqu ymmword ptr [rdi + rdx + 0x600], ymm3",
        "vmovdqu ymmword ptr [rdi + rdx + 0x700], ymm5",
    ] {
        assert!(fma.iter().any(|l| l == want), "no `{want}` in {fma:#?}");
    }
    let add = op_listing(Op::F64 {
        op: F64Op::Add,
        d: 6,
        src,
    });
    assert!(add.iter().all(|l| !l.starts_with("vfmadd")), "{add:#?}");
}

/// An instruction's text as llvm-objdump-16 prints it, and an emitter of it.
type Case = (&'static str, fn(&mut Assembler));

/// Forms the JIT has dynasm-rs encode, each written as the JIT writes it (one
/// example, with registers the JIT uses) and as llvm-objdump-16 prints it: every
/// VEX form the JIT emits but those encoded by hand.
const DYNASM_FORMS: [Case; 68] = [
    (
        "vaddps ymm3, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vaddps ymm3, ymm0, ymm1),
    ),
    (
        "vsubps ymm3, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vsubps ymm3, ymm0, ymm1),
    ),
    (
        "vmulps ymm3, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vmulps ymm3, ymm0, ymm1),
    ),
    (
        "vdivps ymm3, ymm4, ymm0",
        |a| dynasm!(a ; .arch x64 ; vdivps ymm3, ymm4, ymm0),
    ),
    (
        "vmaxps ymm1, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vmaxps ymm1, ymm0, ymm1),
    ),
    (
        "vandps ymm6, ymm2, ymm4",
        |a| dynasm!(a ; .arch x64 ; vandps ymm6, ymm2, ymm4),
    ),
    (
        "vorps ymm4, ymm1, ymm6",
        |a| dynasm!(a ; .arch x64 ; vorps ymm4, ymm1, ymm6),
    ),
    (
        "vxorps ymm1, ymm1, ymm1",
        |a| dynasm!(a ; .arch x64 ; vxorps ymm1, ymm1, ymm1),
    ),
    (
        "vmovaps ymm3, ymm2",
        |a| dynasm!(a ; .arch x64 ; vmovaps ymm3, ymm2),
    ),
    (
        "vblendvps ymm5, ymm5, ymm4, ymm7",
        |a| dynasm!(a ; .arch x64 ; vblendvps ymm5, ymm5, ymm4, ymm7),
    ),
    (
        "vcvtdq2ps ymm1, ymm1",
        |a| dynasm!(a ; .arch x64 ; vcvtdq2ps ymm1, ymm1),
    ),
    (
        "vcvttps2dq ymm3, ymm6",
        |a| dynasm!(a ; .arch x64 ; vcvttps2dq ymm3, ymm6),
    ),
    (
        "vperm2i128 ymm4, ymm2, ymm3, 0x20",
        |a| dynasm!(a ; .arch x64 ; vperm2i128 ymm4, ymm2, ymm3, 0x20),
    ),
    (
        "vperm2i128 ymm5, ymm2, ymm3, 0x31",
        |a| dynasm!(a ; .arch x64 ; vperm2i128 ymm5, ymm2, ymm3, 0x31),
    ),
    ("vpermq ymm2, ymm2, 0xd8", |a| {
        let order = 0xD8u8 as i8;
        dynasm!(a ; .arch x64 ; vpermq ymm2, ymm2, order)
    }),
    (
        "vpblendvb ymm2, ymm0, ymm1, ymm3",
        |a| dynasm!(a ; .arch x64 ; vpblendvb ymm2, ymm0, ymm1, ymm3),
    ),
    (
        "vblendvpd ymm5, ymm5, ymm15, ymm3",
        |a| dynasm!(a ; .arch x64 ; vblendvpd ymm5, ymm5, ymm15, ymm3),
    ),
    (
        "vblendvpd ymm13, ymm13, ymm5, ymm3",
        |a| dynasm!(a ; .arch x64 ; vblendvpd ymm13, ymm13, ymm5, ymm3),
    ),
    // (The JIT's compares have one register twice, and UNORD is symmetric:
    // dynasm-rs 3.2.1 swaps VCMPPD's sources too.)
    (
        "vcmpunordpd ymm15, ymm13, ymm13",
        |a| dynasm!(a ; .arch x64 ; vcmppd ymm15, ymm13, ymm13, 3),
    ),
    (
        "vpsllvd ymm2, ymm1, ymm0",
        |a| dynasm!(a ; .arch x64 ; vpsllvd ymm2, ymm1, ymm0),
    ),
    (
        "vpsrlvd ymm3, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpsrlvd ymm3, ymm0, ymm1),
    ),
    (
        "vpsllvq ymm2, ymm2, ymm0",
        |a| dynasm!(a ; .arch x64 ; vpsllvq ymm2, ymm2, ymm0),
    ),
    (
        "vpsrlvq ymm3, ymm3, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpsrlvq ymm3, ymm3, ymm1),
    ),
    (
        "vpcmpgtq ymm4, ymm5, ymm2",
        |a| dynasm!(a ; .arch x64 ; vpcmpgtq ymm4, ymm5, ymm2),
    ),
    (
        "vpsravd ymm2, ymm1, ymm0",
        |a| dynasm!(a ; .arch x64 ; vpsravd ymm2, ymm1, ymm0),
    ),
    (
        "vpsubd ymm2, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpsubd ymm2, ymm0, ymm1),
    ),
    (
        "vpcmpgtd ymm8, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpcmpgtd ymm8, ymm0, ymm1),
    ),
    (
        "vpandn ymm4, ymm0, ymm2",
        |a| dynasm!(a ; .arch x64 ; vpandn ymm4, ymm0, ymm2),
    ),
    (
        "vpunpckldq ymm12, ymm4, ymm5",
        |a| dynasm!(a ; .arch x64 ; vpunpckldq ymm12, ymm4, ymm5),
    ),
    (
        "vpunpckhdq ymm2, ymm2, ymm3",
        |a| dynasm!(a ; .arch x64 ; vpunpckhdq ymm2, ymm2, ymm3),
    ),
    (
        "vpslld ymm2, ymm0, 0x5",
        |a| dynasm!(a ; .arch x64 ; vpslld ymm2, ymm0, 5),
    ),
    (
        "vpsrld ymm4, ymm0, 0x1b",
        |a| dynasm!(a ; .arch x64 ; vpsrld ymm4, ymm0, 27),
    ),
    (
        "vpsrad ymm3, ymm1, 0x1f",
        |a| dynasm!(a ; .arch x64 ; vpsrad ymm3, ymm1, 31),
    ),
    (
        "vpsllq ymm3, ymm3, xmm7",
        |a| dynasm!(a ; .arch x64 ; vpsllq ymm3, ymm3, xmm7),
    ),
    (
        "vpsrlq ymm3, ymm0, xmm7",
        |a| dynasm!(a ; .arch x64 ; vpsrlq ymm3, ymm0, xmm7),
    ),
    (
        "vpaddd ymm0, ymm4, ymmword ptr [rdi + 0x200]",
        |a| dynasm!(a ; .arch x64 ; vpaddd ymm0, ymm4, [rdi + 0x200]),
    ),
    (
        "vpbroadcastd ymm0, dword ptr [rsi + 0x20]",
        |a| dynasm!(a ; .arch x64 ; vpbroadcastd ymm0, [rsi + 0x20]),
    ),
    (
        "vmovq xmm5, rax",
        |a| dynasm!(a ; .arch x64 ; vmovq xmm5, rax),
    ),
    (
        "vptest ymm1, ymm5",
        |a| dynasm!(a ; .arch x64 ; vptest ymm1, ymm5),
    ),
    (
        "vpmovzxbd ymm2, xmm2",
        |a| dynasm!(a ; .arch x64 ; vpmovzxbd ymm2, xmm2),
    ),
    (
        "vaddpd ymm13, ymm6, ymm7",
        |a| dynasm!(a ; .arch x64 ; vaddpd ymm13, ymm6, ymm7),
    ),
    (
        "vmulpd ymm1, ymm0, ymm2",
        |a| dynasm!(a ; .arch x64 ; vmulpd ymm1, ymm0, ymm2),
    ),
    (
        "vorpd ymm15, ymm15, ymm3",
        |a| dynasm!(a ; .arch x64 ; vorpd ymm15, ymm15, ymm3),
    ),
    (
        "vmovapd ymm13, ymm12",
        |a| dynasm!(a ; .arch x64 ; vmovapd ymm13, ymm12),
    ),
    (
        "vmovd ecx, xmm0",
        |a| dynasm!(a ; .arch x64 ; vmovd ecx, xmm0),
    ),
    (
        "vmovd xmm14, eax",
        |a| dynasm!(a ; .arch x64 ; vmovd xmm14, eax),
    ),
    (
        "vmovdqa ymm2, ymm13",
        |a| dynasm!(a ; .arch x64 ; vmovdqa ymm2, ymm13),
    ),
    (
        "vmovdqu ymmword ptr [rdi + rdx + 0x700], ymm2",
        |a| dynasm!(a ; .arch x64 ; vmovdqu [rdi + rdx + 0x700], ymm2),
    ),
    (
        "vmovdqu ymm0, ymmword ptr [rbp + rdx - 0x100]",
        |a| dynasm!(a ; .arch x64 ; vmovdqu ymm0, [rbp + rdx - 0x100]),
    ),
    (
        "vmovdqu ymm9, ymmword ptr [rdi + 4*rcx + 0x100]",
        |a| dynasm!(a ; .arch x64 ; vmovdqu ymm9, [rdi + rcx * 4 + 0x100]),
    ),
    (
        "vpaddd ymm2, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpaddd ymm2, ymm0, ymm1),
    ),
    (
        "vpand ymm3, ymm3, ymmword ptr [rsp]",
        |a| dynasm!(a ; .arch x64 ; vpand ymm3, ymm3, [rsp]),
    ),
    (
        "vpand ymm5, ymm5, ymm10",
        |a| dynasm!(a ; .arch x64 ; vpand ymm5, ymm5, ymm10),
    ),
    (
        "vpbroadcastd ymm14, xmm14",
        |a| dynasm!(a ; .arch x64 ; vpbroadcastd ymm14, xmm14),
    ),
    (
        "vpbroadcastq ymm5, xmm5",
        |a| dynasm!(a ; .arch x64 ; vpbroadcastq ymm5, xmm5),
    ),
    (
        "vpcmpeqd ymm3, ymm3, ymmword ptr [rsp]",
        |a| dynasm!(a ; .arch x64 ; vpcmpeqd ymm3, ymm3, [rsp]),
    ),
    (
        "vpcmpeqd ymm5, ymm0, ymm2",
        |a| dynasm!(a ; .arch x64 ; vpcmpeqd ymm5, ymm0, ymm2),
    ),
    (
        "vpmaxsd ymm3, ymm3, ymm2",
        |a| dynasm!(a ; .arch x64 ; vpmaxsd ymm3, ymm3, ymm2),
    ),
    (
        "vpmaxud ymm2, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpmaxud ymm2, ymm0, ymm1),
    ),
    (
        "vpminsd ymm2, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpminsd ymm2, ymm0, ymm1),
    ),
    (
        "vpminud ymm3, ymm3, ymm2",
        |a| dynasm!(a ; .arch x64 ; vpminud ymm3, ymm3, ymm2),
    ),
    (
        "vpmuldq ymm3, ymm3, ymm4",
        |a| dynasm!(a ; .arch x64 ; vpmuldq ymm3, ymm3, ymm4),
    ),
    (
        "vpmulld ymm2, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpmulld ymm2, ymm0, ymm1),
    ),
    (
        "vpmuludq ymm2, ymm0, ymm1",
        |a| dynasm!(a ; .arch x64 ; vpmuludq ymm2, ymm0, ymm1),
    ),
    (
        "vpor ymm10, ymm4, ymm5",
        |a| dynasm!(a ; .arch x64 ; vpor ymm10, ymm4, ymm5),
    ),
    (
        "vpxor ymm4, ymm0, ymm14",
        |a| dynasm!(a ; .arch x64 ; vpxor ymm4, ymm0, ymm14),
    ),
    ("vzeroupper", |a| dynasm!(a ; .arch x64 ; vzeroupper)),
    // VSIB operands work (the JIT's `gather_dd` encodes the same bytes by hand).
    (
        "vpgatherdd ymm6, ymmword ptr [rdi + 4*ymm0 + 0x200], ymm2",
        |a| dynasm!(a ; .arch x64 ; vpgatherdd ymm6, [rdi + ymm0 * 4 + 0x200], ymm2),
    ),
];

#[test]
fn dynasm_forms_decode_as_written() {
    for (want, f) in DYNASM_FORMS {
        check_one(want, f);
    }
}

/// What dynasm-rs 3.2.1 makes of the forms the JIT encodes by hand or avoids: if
/// one of these fails, dynasm-rs encodes that form right now, and the workaround in
/// `jit.rs` can go.
#[test]
fn dynasm_3_2_1_bugs_the_jit_works_around() {
    let cases: [Case; 7] = [
        // VEX.W0 (the PS form) for VFMADD231PD: its opcode map entry lacks
        // WITH_REXW.
        (
            "vfmadd231ps ymm13, ymm6, ymm7",
            |a| dynasm!(a ; .arch x64 ; vfmadd231pd ymm13, ymm6, ymm7),
        ),
        // ENC_MR on a three-register form with an immediate: src1 goes to
        // ModRM.rm and src2 to VEX.vvvv.
        (
            "vshufps ymm3, ymm1, ymm13, 0x8",
            |a| dynasm!(a ; .arch x64 ; vshufps ymm3, ymm13, ymm1, 8),
        ),
        (
            "vshufpd ymm3, ymm1, ymm13, 0x5",
            |a| dynasm!(a ; .arch x64 ; vshufpd ymm3, ymm13, ymm1, 5),
        ),
        (
            "vpblendd ymm2, ymm3, ymm0, 0xa",
            |a| dynasm!(a ; .arch x64 ; vpblendd ymm2, ymm0, ymm3, 10),
        ),
        (
            "vblendps ymm2, ymm3, ymm0, 0xa",
            |a| dynasm!(a ; .arch x64 ; vblendps ymm2, ymm0, ymm3, 10),
        ),
        (
            "vcmpgeps ymm2, ymm4, ymm1",
            |a| dynasm!(a ; .arch x64 ; vcmpps ymm2, ymm1, ymm4, 13),
        ),
        // No AUTO_VEXL on VPSRLQ's immediate form: VEX.L stays 0.
        (
            "vpsrlq xmm3, xmm0, 0x20",
            |a| dynasm!(a ; .arch x64 ; vpsrlq ymm3, ymm0, 32),
        ),
    ];
    for (actual, f) in cases {
        check_one(actual, f);
    }
}

#[test]
fn without_fma3_no_run_multiply_adds() {
    let no_fma = HostFeatures {
        avx2: true,
        fma: false,
        avx512: false,
    };
    // (The f64 and f32 programs.)
    for (src, mul) in [(PROGRAMS[1], "vmulpd"), (PROGRAMS[2], "vmulps")] {
        let (runs, bytes) = compile_block(src, HOST);
        assert!(runs.iter().any(|(_, c)| c.fma()));
        assert!(disassemble(&bytes).iter().any(|l| l.starts_with("vfmadd")));
        // Neither v_fma nor v_fmac joins a run; the add and multiply still do.
        let (runs, bytes) = compile_block(src, no_fma);
        assert!(!runs.is_empty() && runs.iter().all(|(_, c)| !c.fma()));
        let listing = disassemble(&bytes);
        assert!(listing.iter().any(|l| l.starts_with(mul)));
        assert!(
            listing.iter().all(|l| !l.starts_with("vfmadd")),
            "{listing:#?}"
        );
    }
    let src = PROGRAMS[1];
    // Runs chosen for a host with FMA3 are refused for one without.
    let (with_fma, _) = compile_block(src, HOST);
    assert!(compile_for(&with_fma, no_fma).is_none());
    // Nothing is compiled without AVX2.
    let none = HostFeatures {
        avx2: false,
        fma: false,
        avx512: false,
    };
    assert!(compile_block(src, none).1.is_empty());
}

/// The gfx90a mnemonic of a [`Bin`] operation (its VOP3 form).
fn bin_mnemonic(op: Bin) -> &'static str {
    match op {
        Bin::And => "v_and_b32_e64",
        Bin::Or => "v_or_b32_e64",
        Bin::Xor => "v_xor_b32_e64",
        Bin::Lshlrev => "v_lshlrev_b32_e64",
        Bin::Lshrrev => "v_lshrrev_b32_e64",
        Bin::Ashrrev => "v_ashrrev_i32_e64",
        Bin::MinI => "v_min_i32_e64",
        Bin::MaxI => "v_max_i32_e64",
        Bin::MinU => "v_min_u32_e64",
        Bin::MaxU => "v_max_u32_e64",
        Bin::MulLo => "v_mul_lo_u32",
        Bin::MulHiU => "v_mul_hi_u32",
        Bin::MulHiI => "v_mul_hi_i32",
        Bin::MulU24 => "v_mul_u32_u24_e64",
        Bin::Bcnt => "v_bcnt_u32_b32",
    }
}

/// The gfx90a mnemonic of a [`Tri`] operation.
fn tri_mnemonic(op: Tri) -> &'static str {
    match op {
        Tri::BfeU => "v_bfe_u32",
        Tri::BfeI => "v_bfe_i32",
        Tri::Bfi => "v_bfi_b32",
        Tri::Alignbit => "v_alignbit_b32",
        Tri::LshlAdd => "v_lshl_add_u32",
        Tri::AddLshl => "v_add_lshl_u32",
        Tri::Add3 => "v_add3_u32",
        Tri::LshlOr => "v_lshl_or_b32",
        Tri::AndOr => "v_and_or_b32",
        Tri::Or3 => "v_or3_b32",
        Tri::Xad => "v_xad_u32",
        Tri::Min3U => "v_min3_u32",
        Tri::Max3U => "v_max3_u32",
        Tri::Med3U => "v_med3_u32",
        Tri::Min3I => "v_min3_i32",
        Tri::Max3I => "v_max3_i32",
        Tri::Med3I => "v_med3_i32",
    }
}

/// Lane values for the sources: the edges of 32-bit arithmetic, shifts and 24-bit
/// fields first (every pair of them meets across `rotate` in some lane), then
/// pseudo-random values from `seed`.
fn lanes_from(seed: u64, rotate: usize) -> [u32; WAVE_SIZE] {
    const EDGES: [u32; 16] = [
        0,
        1,
        2,
        31,
        32,
        33,
        63,
        0x7F_FFFF,
        0xFF_FFFF,
        0x100_0000,
        0x7FFF_FFFF,
        0x8000_0000,
        0x8000_0001,
        0xFFFF_FFFE,
        u32::MAX,
        0x1234_5678,
    ];
    let mut x = seed | 1;
    std::array::from_fn(|l| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if l < 32 {
            EDGES[(l + rotate * (l / 16 + 1)) % EDGES.len()]
        } else {
            x as u32
        }
    })
}

/// The program `src` assembles to (by llvm-mc-16), in a region of `mem`, and the
/// address of its first instruction.
fn program_of(src: &str, mem: &crate::wave::testutil::Mem) -> (crate::program::Program, u64) {
    use crate::memory::{HostRegion, MemoryRegion};
    use std::sync::Arc;
    let words: Vec<u32> = gfx90a(src).into_iter().flatten().collect();
    let region = Arc::new(HostRegion::zeroed(4 * words.len() as u64 + 64));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert!(region.write_bytes(0, &bytes));
    let start = region.device_base();
    mem.0.lock().unwrap().push(region.clone());
    let r: Arc<dyn MemoryRegion> = region;
    (crate::program::Program::new(&r), start)
}

/// The context of a test wave over `mem` and `lds`: KFD apertures, no abort flag,
/// 1000 instructions at most, no yield.
fn context<'c>(
    mem: &'c crate::wave::testutil::Mem,
    lds: &'c mut [u8],
) -> crate::state::WaveContext<'c> {
    crate::state::WaveContext {
        memory: mem,
        lds,
        apertures: crate::state::Apertures::KFD,
        stop: None,
        max_instructions: 1_000,
        yield_after: u64::MAX,
    }
}

/// Runs the block `src` (then a move and `s_endpgm`) with fusion on a wave whose v0, v1, v3
/// are `v`; the wave and how many instructions of the block ran in fused runs.
fn run_block(src: &str, v: [&[u32; WAVE_SIZE]; 3]) -> (crate::wave::Wave, usize) {
    let mut w = crate::wave::Wave::new();
    (w.vgpr[0], w.vgpr[1], w.vgpr[3]) = (*v[0], *v[1], *v[2]);
    use crate::state::WaveExit;
    let mem = crate::wave::testutil::Mem::default();
    // A run has two instructions at least: a move to v7 goes with `src`.
    let (program, start) = program_of(&format!("{src}\nv_mov_b32_e32 v7, v0\ns_endpgm\n"), &mem);
    w.pc = start;
    w.set_exec(u64::MAX);
    let mut lds = vec![0u8; 64];
    let mut ctx = context(&mem, &mut lds);
    assert_eq!(w.run(&program, &mut ctx).expect("runs"), WaveExit::Ended);
    // Instructions of `src` in runs (the move joins any run it follows).
    let fused = program.fused_instructions(start).saturating_sub(1);
    (w, fused)
}

/// The JIT restates lane operations in x86 code: every [`Bin`], [`Tri`] and
/// [`Shift64`](crate::sem::Shift64) it fuses gives, in every lane, what `sem`
/// defines, on edge values and random ones; and it fuses exactly the operations
/// its selection (`Builder::lower`) names, so that one it starts to fuse is checked
/// here without a change to this test.
#[test]
fn fused_lane_ops_compute_what_sem_defines() {
    use crate::sem::Shift64;
    if !crate::simd::host_avx2() {
        return;
    }
    let mut fused = Vec::new();
    for seed in 1..=4u64 {
        let (a, b, c) = (
            lanes_from(seed, 0),
            lanes_from(seed * 7, 5),
            lanes_from(seed * 13, 11),
        );
        let w = [&a, &b, &c];
        for op in Bin::ALL {
            let src = format!("{} v2, v0, v1", bin_mnemonic(op));
            let (out, n) = run_block(&src, w);
            if n > 0 {
                let want: [u32; WAVE_SIZE] = std::array::from_fn(|l| op.apply(a[l], b[l]));
                assert_eq!(out.vgpr[2], want, "{src}");
                fused.push(format!("{op:?}"));
            }
        }
        for op in Tri::ALL {
            for third in ["v3", "31", "-1"] {
                let src = format!("{} v2, v0, v1, {third}", tri_mnemonic(op));
                let (out, n) = run_block(&src, w);
                if n > 0 {
                    let k: [u32; WAVE_SIZE] = match third {
                        "v3" => c,
                        "31" => [31; WAVE_SIZE],
                        _ => [u32::MAX; WAVE_SIZE],
                    };
                    let want: [u32; WAVE_SIZE] =
                        std::array::from_fn(|l| op.apply(a[l], b[l], k[l]));
                    assert_eq!(out.vgpr[2], want, "{src}");
                    fused.push(format!("{op:?}"));
                }
            }
        }
        for (op, name) in [
            (Shift64::Lshl, "v_lshlrev_b64"),
            (Shift64::Lshr, "v_lshrrev_b64"),
            (Shift64::Ashr, "v_ashrrev_i64"),
        ] {
            // Constant amounts, and v3's lanes (each lane its own amount, modulo 64).
            for n in [0u32, 1, 5, 31, 32, 33, 63, u32::MAX] {
                let amount = match n {
                    u32::MAX => "v3".to_string(),
                    _ => n.to_string(),
                };
                let src = format!("{name} v[4:5], {amount}, v[0:1]");
                let (out, k) = run_block(&src, w);
                if k > 0 {
                    for l in 0..WAVE_SIZE {
                        let v = u64::from(a[l]) | u64::from(b[l]) << 32;
                        let r = op.apply(v, if n == u32::MAX { c[l] } else { n });
                        assert_eq!(
                            (out.vgpr[4][l], out.vgpr[5][l]),
                            (r as u32, (r >> 32) as u32),
                            "{src}, lane {l}"
                        );
                    }
                    fused.push(format!("{op:?}"));
                }
            }
        }
    }
    fused.sort();
    fused.dedup();
    assert_eq!(
        fused,
        [
            "Add3", "AddLshl", "And", "AndOr", "Ashr", "Ashrrev", "Bfi", "Lshl", "LshlAdd",
            "LshlOr", "Lshlrev", "Lshr", "Lshrrev", "Max3I", "Max3U", "MaxI", "MaxU", "Min3I",
            "Min3U", "MinI", "MinU", "MulHiI", "MulHiU", "MulLo", "MulU24", "Or", "Or3", "Xad",
            "Xor"
        ]
    );
}

/// A run that ends where the next run of its block starts (here before its
/// sixteenth lane read: `MAX_PARTS`) goes on in that run's code: one call of
/// `run_fused` runs the whole block, and `RunEnv::linked` names the last run's
/// first entry in the block the call entered, whatever a former call left there.
/// With a budget short of the next run, the first run returns by itself.
#[test]
fn a_run_falls_through_to_the_next_run_of_its_block() {
    if !crate::simd::host_avx2() {
        return;
    }
    let step = "v_add_u32_e32 v0, 1, v0\nv_readfirstlane_b32 s3, v0\ns_add_u32 s1, s1, s3\n";
    let src = format!("s_mov_b32 s1, 0\n{}s_endpgm\n", step.repeat(20));
    let lines: Vec<&str> = src.lines().collect();
    let mem = crate::wave::testutil::Mem::default();
    let (program, start) = program_of(&src, &mem);
    let block = program.block_hinted(start, &mut None).expect("the block");
    assert_eq!(block.entries.len(), lines.len());
    let first = block.entries[0].fused.expect("a run at the block's start");
    let at = first.len() as usize;
    let second = block.entries.get(at).and_then(|e| e.fused);
    let second = second.expect("a run where the first ends");
    assert_eq!(
        at + second.len() as usize,
        lines.len() - 1,
        "all but s_endpgm"
    );
    // s1 after the lane reads of the first `n` entries: v0 counts them from 1.
    let sum = |n: usize| {
        let reads = lines[..n]
            .iter()
            .filter(|l| l.starts_with("v_readfirstlane"));
        (1..=reads.count() as u32).sum::<u32>()
    };
    for (left, whole) in [(1000, true), (at as u64 + 1, false)] {
        let mut w = crate::wave::Wave::new();
        w.set_exec(u64::MAX);
        w.sgpr[1] = 0xDEAD;
        let mut lds = vec![0u8; 64];
        let mut ctx = context(&mem, &mut lds);
        let mut env = RunEnv::of(&ctx);
        // As a former call that took a link leaves it.
        (env.pc, env.entry) = (start + 4, 7);
        let ran = run_fused(&mut w, &first, &mut ctx, &mut env, left);
        assert!(matches!(ran, Ran::Next), "left {left}");
        let (chained, ran_to) = match whole {
            true => (
                Some(Chained {
                    block: None,
                    entry: at,
                    ran: at as u64,
                }),
                lines.len() - 1,
            ),
            false => (None, at),
        };
        assert_eq!(env.linked(), chained, "left {left}");
        assert_eq!(w.sgpr[1], sum(ran_to), "left {left}");
        let v0 = lines[..ran_to]
            .iter()
            .filter(|l| l.starts_with("v_add"))
            .count();
        assert!(w.vgpr[0].iter().all(|&x| x as usize == v0), "left {left}");
    }
}
