//! printf's `%n` on the device (issue 34, item 4): the server computes each
//! count and sends it back with the reply (`rpc::PRINTF_COUNT_STORES`), the
//! device library stores it through the program's pointer. Programs of
//! `tests/printf_programs/`, checked against the same file built for the
//! host:
//!
//! - `count_loader.c` under `amdhsa-loader` (every length modifier, five
//!   `%n` in one call, a `%n` alone);
//! - `count_omp.c` in a target region through our plugin and `libcgpu.a`
//!   (pointers to the device stack, 64 lanes with their own counts).
//!
//! LLVM 19's server stores nothing for `%n` (and its GPU printf does not
//! take the pointer from the arguments), so these run under ours only.
//!
//! Needs `cargo xtask stage` (which `cargo xtask test` runs): the stage is
//! `$OMPTARGET_STAGE_DIR` or `target/stage`.

mod common;

use common::{announcement, command, compile_linked, run, stage_dir_with, texts, Hsa};
use std::path::PathBuf;
use std::process::Command;

fn source(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/printf_programs")
        .join(name)
}

#[test]
fn loader_printf_stores_every_count() {
    let stage = stage_dir_with(&[]);
    let dir = common::scratch_dir("printf_count");
    let image = dir.join("count_loader.gpu");
    let built = Command::new(stage.join("bin/amdgpu-cc"))
        .arg("-O2")
        .arg(source("count_loader.c"))
        .arg("-o")
        .arg(&image)
        .output()
        .expect("amdgpu-cc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let host = dir.join("count_loader_host");
    let built = Command::new("cc")
        .args(["-O2", "-w"])
        .arg(source("count_loader.c"))
        .arg("-o")
        .arg(&host)
        .output()
        .expect("cc runs");
    assert!(built.status.success());
    let expected = run(&mut Command::new(&host), 60);
    let mut cmd = Command::new(stage.join("bin/amdhsa-loader"));
    cmd.env("LD_LIBRARY_PATH", stage.join("sim")).arg(&image);
    let got = run(&mut cmd, 120);
    let (o, e) = texts(&got);
    assert!(got.status.success(), "{o}\n{e}");
    assert_eq!(o, texts(&expected).0);
    assert!(o.contains("a=3 hh=10 h=18 l=19 ll=19 r=20"), "{o}");
}

#[test]
fn target_region_printf_stores_every_lanes_count() {
    let l = format!("-L{}", stage_dir_with(&[]).join("device/lib").display());
    let bin = compile_linked(
        "../printf_programs/count_omp.c",
        false,
        &[],
        &[&l, "-lcgpu"],
    );
    let out = run(&mut command(&bin, Hsa::Sim(1)), 300);
    let (o, e) = texts(&out);
    assert!(e.contains(&announcement(1)), "not our plugin: {e}");
    assert!(out.status.success(), "{o}\n{e}");
    let mut host = Command::new(&bin);
    host.env("OMP_TARGET_OFFLOAD", "DISABLED")
        .env("LD_LIBRARY_PATH", "/usr/lib/llvm-16/lib");
    let h = texts(&run(&mut host, 60)).0;
    let sorted = |s: &str| {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&o), sorted(&h));
    assert!(o.contains("bad before 0, wrong after 0"), "{o}");
}
