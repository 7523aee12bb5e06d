//! Known bugs of LLVM 16 that a program meets on the virtual gfx90a, each
//! reduced to a program of `tests/programs/`: the virtual device must give
//! the answer the bug gives on hardware (the same instructions over the same
//! memory), through our plugin and through LLVM's C++ plugin, and the test
//! says which bug it is. The README's "Known LLVM 16 bugs" section has the
//! evidence.
//!
//! Needs the virtual device built: `cargo build -p sim`.

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::{announcement, command, compile, run, run_llvm_plugin, texts, Hsa};

/// `name=value` pairs of a line of `llvm16_smart_stack.c`, values as hex.
fn values(stdout: &str) -> HashMap<String, u32> {
    stdout
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            let v = u32::from_str_radix(v, 16).unwrap_or_else(|_| panic!("{k}={v} in {stdout}"));
            (k.to_string(), v)
        })
        .collect()
}

/// Issue 35 (HeCBench `secp256k1-omp` at -O2 prints a wrong hash on the
/// device): LLVM 16's device runtime counts a thread's use of its
/// shared-memory stack in an `unsigned char`, so the globalized locals of a
/// function that needs more than 255 bytes of it alias: the seventh 48-byte
/// local lands at offset 288 mod 256 = 32, over the first two. Six locals
/// (288 bytes, the last one starting at 240) are right; seven give exactly
/// what the wrapped layout computes (`model7`, computed on the host), not the
/// host's answer.
#[test]
fn llvm16_smart_stack_counter_wraps_at_256_bytes_on_the_device_as_on_hardware() {
    let bin = compile("llvm16_smart_stack.c", false, &[]);

    let host = run(
        Command::new(&bin)
            .env("OMP_TARGET_OFFLOAD", "DISABLED")
            .env("LD_LIBRARY_PATH", "/usr/lib/llvm-16/lib"),
        60,
    );
    let (stdout, stderr) = texts(&host);
    assert!(host.status.success(), "{stdout}\n{stderr}");
    let h = values(&stdout);
    assert_eq!(h["dev6"], h["host6"], "host run: {stdout}");
    assert_eq!(h["dev7"], h["host7"], "host run: {stdout}");
    assert_ne!(
        h["model7"], h["host7"],
        "the wrapped layout must change the answer: {stdout}"
    );

    for (plugin, out) in [
        ("ours", run(&mut command(&bin, Hsa::Sim(1)), 120)),
        ("LLVM's", run_llvm_plugin(&bin, 120)),
    ] {
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{plugin}: {stdout}\n{stderr}");
        if plugin == "ours" {
            assert!(stderr.contains(&announcement(1)), "{stderr}");
        }
        let d = values(&stdout);
        assert_eq!(d["host6"], h["host6"], "{plugin}: {stdout}");
        assert_eq!(
            d["dev6"], d["host6"],
            "{plugin}: 288 bytes of locals fit the 8-bit counter's reach: {stdout}"
        );
        assert_eq!(
            d["dev7"], d["model7"],
            "{plugin}: the seventh local must alias the first two, as LLVM 16's \
             runtime places it on hardware: {stdout}"
        );
    }
}
