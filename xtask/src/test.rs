//! `cargo xtask test`: the project's one test command (the README's, and CI's).
//!
//! Installs the system packages it needs, stages the release libraries
//! (`cargo xtask stage`; the end-to-end tests load them from there through
//! `OMPTARGET_STAGE_DIR`), then runs every test of the workspace with `cargo test`,
//! then (when no extra arguments narrow the run) LLVM 16's libomptarget lit
//! suite through both plugins (`cargo xtask lit both`) and a short stress run
//! (`cargo xtask stress` with [`STRESS_RUNS`] runs), and ends with the plain
//! summary line `N passed, N failed`, counted from cargo's per-binary result
//! lines plus:
//!
//! - lit: one check per test LLVM's plugin passes and per row ours must pass
//!   whatever LLVM's does ([`crate::lit::must_pass`]: known LLVM 16 bugs, the
//!   unified shared memory rows run with `HSA_XNACK=1`), failed when ours
//!   does not pass it; one that ours passes all [`crate::lit::USM_TESTS`]
//!   unified shared memory tests; and one per plugin that its pass count is
//!   at least the recorded one ([`crate::lit::RECORDED_PASSES_LLVM`],
//!   [`crate::lit::RECORDED_PASSES_OURS`]);
//! - stress: one check per program and plugin (failed on any failed run);
//! - libc-gpu: what `cargo xtask libc-gpu --quick` builds is built first
//!   when missing ([`crate::libc_gpu::prepare_quick`]: clang-19 and its
//!   tools, Debian's `llvm-toolchain-19` source package, LLVM's loader, the
//!   `-O3` tests; 90 s on a fresh 2-core machine with a fast mirror:
//!   packages 14 s, source 16 s, build 58 s; nothing on a warm cache), then every LLVM 19 GPU libc test at `-O3` runs under our
//!   loader and LLVM's, one check per test LLVM's loader passes (failed when
//!   ours does not), see [`crate::libc_gpu::run_cached`]; a failed
//!   preparation is one failed check;
//! - packages ([`crate::package::count_checks`]): the Debian packages built
//!   from the stage, installed into a throw-away root and removed, one
//!   check per step of the test;
//! - LLVM 19 ([`count_llvm19`]): the toolchain prepared
//!   ([`crate::llvm19::ensure`]), then every program of `examples/` at -O0
//!   and -O2 through LLVM 19's libomptarget against the host (one check
//!   each), `tests/programs/llvm19_printf.c` (one check: the same lines as
//!   the host), and LLVM 19's offload lit suite, the part
//!   [`crate::lit::llvm19::TEST_SUBSET`] names: one check per passing row,
//!   one failed check per failure not named in its `KNOWN_FAILURES`, and one
//!   that the passes reach its `RECORDED_PASSES_SUBSET`.

use std::io::{BufRead, BufReader};

/// Runs per program and plugin of the stress part of `cargo xtask test`.
pub const STRESS_RUNS: usize = 5;

/// Adds lit's checks (see the module doc) to the counts.
fn count_lit(r: &crate::lit::Results, passed: &mut u64, failed: &mut u64) {
    for (test, (ours, llvm)) in &r.rows {
        let required = crate::lit::must_pass(test);
        let llvm_passed = matches!(llvm.as_deref(), Some("PASS" | "XFAIL"));
        if let Some(o) = ours.as_deref().filter(|_| required || llvm_passed) {
            if matches!(o, "PASS" | "XFAIL") {
                *passed += 1;
            } else {
                *failed += 1;
            }
        }
    }
    for (got, floor) in [
        (r.usm_passes(), crate::lit::USM_TESTS),
        (r.counted_passes(false), crate::lit::RECORDED_PASSES_LLVM),
        (r.counted_passes(true), crate::lit::RECORDED_PASSES_OURS),
    ] {
        if got >= floor {
            *passed += 1;
        } else {
            *failed += 1;
        }
    }
}
use std::process::{Command, Stdio};

/// Adds the checks of the LLVM 19 lit run (see the module doc).
fn count_lit19(r: &crate::lit::llvm19::Results19, passed: &mut u64, failed: &mut u64) {
    *passed += r.passes() as u64;
    *failed += r.unexpected_failures().len() as u64;
    if r.passes() >= r.recorded.unwrap_or(0) {
        *passed += 1;
    } else {
        *failed += 1;
    }
}

/// The LLVM 19 part of `cargo xtask test` (see the module doc).
fn count_llvm19(passed: &mut u64, failed: &mut u64) {
    let tc = match crate::llvm19::ensure() {
        Ok(tc) => tc,
        Err(e) => {
            println!("llvm19: {e}");
            *failed += 1;
            return;
        }
    };
    match crate::llvm19::check_examples(&tc) {
        Ok(rows) => {
            for r in rows {
                if r.pass {
                    *passed += 1;
                } else {
                    println!("llvm19 examples: FAIL {}: {}", r.label, r.detail);
                    *failed += 1;
                }
            }
        }
        Err(e) => {
            println!("llvm19 examples: {e}");
            *failed += 1;
        }
    }
    match crate::llvm19::check_printf(&tc) {
        Ok(lines) => {
            println!("llvm19 printf: {lines} lines equal to the host's");
            *passed += 1;
        }
        Err(e) => {
            println!("llvm19 printf: {e}");
            *failed += 1;
        }
    }
    match crate::lit::llvm19::run(Some(crate::lit::llvm19::TEST_SUBSET)) {
        Ok(r) => {
            println!("{}", r.render());
            count_lit19(&r, passed, failed);
        }
        Err(e) => {
            println!("lit (LLVM 19): {e}");
            *failed += 1;
        }
    }
}

/// Adds up cargo's `test result: ok. 12 passed; 0 failed; ...` lines.
fn count(line: &str, passed: &mut u64, failed: &mut u64) {
    let Some(rest) = line.trim().strip_prefix("test result: ") else {
        return;
    };
    for part in rest.split(';') {
        let words: Vec<&str> = part.split_whitespace().collect();
        for w in words.windows(2) {
            let n = w[0]
                .trim_start_matches("ok.")
                .trim_start_matches("FAILED.")
                .parse::<u64>();
            match (n, w[1]) {
                (Ok(n), "passed") => *passed += n,
                (Ok(n), "failed") => *failed += n,
                _ => {}
            }
        }
    }
}

/// `cargo xtask test [extra cargo test args]`.
pub fn run_command(args: &[String]) -> Result<(), String> {
    crate::setup::ensure_packages()?;
    // The end-to-end tests run the staged libraries, exactly as a user would.
    let staged = crate::stage::stage()?;
    let stage_root = staged
        .sim_dir
        .parent()
        .map(|p| p.to_path_buf())
        .ok_or("the stage directory has no parent")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Build first so the cdylibs the end-to-end tests load exist.
    let status = Command::new(&cargo)
        .current_dir(crate::stage::workspace_root())
        .args(["build", "--workspace"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build failed ({status})"));
    }
    let mut child = Command::new(&cargo)
        .current_dir(crate::stage::workspace_root())
        .args(["test", "--workspace", "--no-fail-fast"])
        .args(args)
        .env("OMPTARGET_STAGE_DIR", &stage_root)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    let (mut passed, mut failed) = (0u64, 0u64);
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            count(&line, &mut passed, &mut failed);
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo test: {e}"))?;
    if args.is_empty() {
        match crate::lit::run(crate::lit::Which::Both, None) {
            Ok(r) => {
                println!("{}", r.render());
                let regressions = r.regressions();
                if !regressions.is_empty() {
                    println!(
                        "lit: ours fails what LLVM's passes: {}",
                        regressions.join(", ")
                    );
                }
                count_lit(&r, &mut passed, &mut failed);
            }
            Err(e) => {
                println!("lit: {e}");
                failed += 1;
            }
        }
        match crate::stress::run(STRESS_RUNS, true) {
            Ok(t) => {
                println!("{}", crate::stress::render(&t, true));
                for x in &t {
                    if x.failures == 0 {
                        passed += 1;
                    } else {
                        failed += 1;
                    }
                }
            }
            Err(e) => {
                println!("stress: {e}");
                failed += 1;
            }
        }
        let t0 = std::time::Instant::now();
        let prepared = crate::libc_gpu::prepare_quick();
        println!(
            "libc-gpu: cache ready in {:.0} s",
            t0.elapsed().as_secs_f64()
        );
        match prepared.and_then(|()| crate::libc_gpu::run_cached(&staged)) {
            Ok(rows) => crate::libc_gpu::count_checks(&rows, &mut passed, &mut failed),
            Err(why) => {
                println!("libc-gpu: {why}");
                failed += 1;
            }
        }
    }
    if args.is_empty() {
        let t0 = std::time::Instant::now();
        count_llvm19(&mut passed, &mut failed);
        println!("llvm19: {:.0} s", t0.elapsed().as_secs_f64());
    }
    if args.is_empty() {
        crate::package::count_checks(&mut passed, &mut failed);
    }
    println!("{passed} passed, {failed} failed");
    if status.success() && failed == 0 {
        Ok(())
    } else {
        Err(format!("tests failed ({status})"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_cargo_result_lines() {
        let (mut p, mut f) = (0, 0);
        super::count("test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s", &mut p, &mut f);
        super::count(
            "test result: FAILED. 3 passed; 2 failed; 0 ignored",
            &mut p,
            &mut f,
        );
        super::count("running 5 tests", &mut p, &mut f);
        assert_eq!((p, f), (15, 2));
    }

    #[test]
    fn lit_checks_count_llvm_passes_known_bugs_and_floors() {
        let mut r = crate::lit::Results::default();
        for i in 0..crate::lit::RECORDED_PASSES_OURS {
            r.rows.insert(
                format!("t{i}.c"),
                (Some("PASS".into()), Some("PASS".into())),
            );
        }
        let known = crate::lit::KNOWN_LLVM16_BUGS[0];
        // A known LLVM 16 bug is checked for ours even when LLVM's fails it.
        r.rows
            .insert(known.into(), (Some("PASS".into()), Some("FAIL".into())));
        // Ours fails one LLVM's passes: one failed check.
        r.rows
            .insert("x.c".into(), (Some("FAIL".into()), Some("PASS".into())));
        r.rows.insert(
            "u.c".into(),
            (Some("UNSUPPORTED".into()), Some("UNSUPPORTED".into())),
        );
        let (mut p, mut f) = (0, 0);
        super::count_lit(&r, &mut p, &mut f);
        // Every t*.c, the known bug, and both pass-count floors pass; x.c
        // fails, and so does the unified shared memory floor (no such row).
        let n = crate::lit::RECORDED_PASSES_OURS as u64;
        assert_eq!((p, f), (n + 3, 2));
        // The same known bug failed by ours is a failed check.
        r.rows
            .insert(known.into(), (Some("FAIL".into()), Some("FAIL".into())));
        let (mut p, mut f) = (0, 0);
        super::count_lit(&r, &mut p, &mut f);
        assert_eq!(f, 3);
        assert!(r.regressions().contains(&known));
    }

    #[test]
    fn lit_checks_require_every_usm_row_of_ours() {
        let mut r = crate::lit::Results::default();
        for i in 0..crate::lit::USM_TESTS {
            r.rows.insert(
                format!("unified_shared_memory/t{i}.c [HSA_XNACK=1]"),
                (Some("PASS".into()), Some("FAIL".into())),
            );
        }
        let (mut p, mut f) = (0, 0);
        super::count_lit(&r, &mut p, &mut f);
        // Each row and the unified shared memory floor pass (LLVM's failures
        // do not matter); the two pass-count floors fail in this small table.
        assert_eq!((p, f), (crate::lit::USM_TESTS as u64 + 1, 2));
        r.rows.insert(
            "unified_shared_memory/api.c [HSA_XNACK=1, RUN/CHECK by xtask]".into(),
            (Some("FAIL".into()), Some("PASS".into())),
        );
        let (mut p, mut f) = (0, 0);
        super::count_lit(&r, &mut p, &mut f);
        assert_eq!((p, f), (crate::lit::USM_TESTS as u64 + 1, 3));
        assert_eq!(
            r.regressions(),
            vec!["unified_shared_memory/api.c [HSA_XNACK=1, RUN/CHECK by xtask]"]
        );
    }

    #[test]
    fn libc_gpu_checks_count_what_llvms_loader_passes() {
        use crate::libc_gpu::{Outcome, Row};
        let row = |ours: bool, llvm: bool| Row {
            label: String::new(),
            ours: Outcome {
                pass: ours,
                detail: String::new(),
                seconds: 0.0,
            },
            llvm: Outcome {
                pass: llvm,
                detail: String::new(),
                seconds: 0.0,
            },
        };
        let rows = [
            row(true, true),
            row(true, true),
            row(false, true),
            row(true, false),
            row(false, false),
        ];
        let (mut p, mut f) = (0, 0);
        crate::libc_gpu::count_checks(&rows, &mut p, &mut f);
        // Only rows LLVM's loader passes are checks; ours failing one fails it.
        assert_eq!((p, f), (2, 1));
    }
}
