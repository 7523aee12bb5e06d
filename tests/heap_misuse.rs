//! Device heap misuse under contention (issue 34, item 3): a double free or
//! a free of a pointer `malloc` did not return is reported every time, and
//! no allocation ever aliases a live one, whatever order the server sees
//! the requests in. Programs of `tests/heap_programs/`:
//!
//! - `double_free_omp.c`, an OpenMP program linked with `libcgpu.a`, run
//!   through our plugin: 1,000 rounds in one process, each a target region
//!   where one thread frees its block twice while 255 others malloc (our
//!   plugin logs the error and goes on serving);
//! - `double_free_loader.c`, a GPU program run by `amdhsa-loader` (which
//!   ends the program at the first error, as LLVM's loader does), once per
//!   round with another victim thread.
//!
//! Rounds: `HEAP_MISUSE_ROUNDS` (default 1,000 for the plugin, a quarter of
//! that for the loader, whose rounds are processes).
//!
//! Needs `cargo xtask stage` (which `cargo xtask test` runs): the stage is
//! `$OMPTARGET_STAGE_DIR` or `target/stage`.

mod common;

use common::{announcement, command, compile_linked, run, stage_dir_with, texts, Hsa};
use std::path::PathBuf;
use std::process::Command;

fn rounds(default: usize) -> usize {
    std::env::var("HEAP_MISUSE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Lines of `stderr` that report a bad free.
fn reports(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains("double free of") || l.contains("which malloc did not return"))
        .count()
}

#[test]
fn plugin_reports_every_double_free_and_never_aliases() {
    let n = rounds(1000);
    let l = format!(
        "-L{}",
        stage_dir_with(&[
            "bin/amdgpu-cc",
            "bin/amdhsa-loader",
            "device/lib/libcgpu.a",
            "sim/libhsa-runtime64.so.1"
        ])
        .join("device/lib")
        .display()
    );
    let bin = compile_linked(
        "../heap_programs/double_free_omp.c",
        false,
        &[],
        &[&l, "-lcgpu"],
    );
    let out = run(command(&bin, Hsa::Sim(1)).arg(n.to_string()), 900);
    let (o, e) = texts(&out);
    assert!(e.contains(&announcement(1)), "not our plugin: {e}");
    assert!(out.status.success(), "{o}\n{e}");
    assert_eq!(
        o.trim(),
        format!("rounds {n} aliased 0 bad tags 0 null 0"),
        "{e}"
    );
    let doubles = e.lines().filter(|l| l.contains("double free of")).count();
    assert_eq!(doubles, n, "one report per round:\n{e}");
    assert_eq!(reports(&e), n, "{e}");
}

/// Runs the loader program once per victim; returns (status, stderr) per run.
fn loader_rounds(n: usize, foreign: bool) -> Vec<(Option<i32>, String, String)> {
    let stage = stage_dir_with(&[
        "bin/amdgpu-cc",
        "bin/amdhsa-loader",
        "device/lib/libcgpu.a",
        "sim/libhsa-runtime64.so.1",
    ]);
    let image = common::scratch_dir("heap").join(if foreign {
        "double_free_loader_foreign.gpu"
    } else {
        "double_free_loader.gpu"
    });
    let src =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/heap_programs/double_free_loader.c");
    let built = Command::new(stage.join("bin/amdgpu-cc"))
        .arg("-O2")
        .arg(&src)
        .arg("-o")
        .arg(&image)
        .output()
        .expect("amdgpu-cc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run_one = |victim: usize| {
        let mut cmd = Command::new(stage.join("bin/amdhsa-loader"));
        cmd.env("LD_LIBRARY_PATH", stage.join("sim"))
            .args(["--threads", "64", "--blocks", "4"])
            .arg(&image)
            .arg(victim.to_string())
            .arg(if foreign { "1" } else { "0" });
        let out = run(&mut cmd, 120);
        let (o, e) = texts(&out);
        (out.status.code(), o, e)
    };
    // Two at a time: the rounds are independent processes.
    let half = n.div_ceil(2);
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            (0..half)
                .map(|r| run_one((r * 97) % 256))
                .collect::<Vec<_>>()
        });
        let mut rest: Vec<_> = (half..n).map(|r| run_one((r * 97) % 256)).collect();
        let mut all = first.join().expect("rounds thread");
        all.append(&mut rest);
        all
    })
}

#[test]
fn loader_reports_every_double_free() {
    let n = rounds(1000).div_ceil(4);
    let runs = loader_rounds(n, false);
    for (round, (status, o, e)) in runs.iter().enumerate() {
        assert_eq!(*status, Some(1), "round {round}: {o}\n{e}");
        assert!(
            e.contains("double free of") && reports(e) == 1,
            "round {round}: {o}\n{e}"
        );
        assert!(
            !o.contains("shared with another thread"),
            "round {round}: {o}"
        );
    }
}

#[test]
fn loader_reports_a_pointer_malloc_did_not_return() {
    let runs = loader_rounds(8, true);
    for (round, (status, o, e)) in runs.iter().enumerate() {
        assert_eq!(*status, Some(1), "round {round}: {o}\n{e}");
        assert!(
            e.contains("which malloc did not return") && reports(e) == 1,
            "round {round}: {o}\n{e}"
        );
    }
}
