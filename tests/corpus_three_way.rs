//! The three-way corpus suite: every offloading program of `examples/`
//! (all but `device_count.c`), built with clang-16 at -O0 and -O3, run on the
//! host, through our plugin and through LLVM's C++ nextgen plugin over the
//! virtual gfx90a (`OMP_TARGET_OFFLOAD=MANDATORY`); both plugins must print
//! exactly what the host prints and exit the same way, and each run must
//! prove which plugin and HSA runtime it loaded (see `three_way/mod.rs`).
//! `critical.c` must end with the `s_trap` reported by both plugins (non-zero
//! exit, no hang); its host run prints normally.
//!
//! Also: both plugins over Debian's real ROCm runtime, which finds no GPU
//! here: zero devices, the host's output without MANDATORY, libomptarget's
//! fatal error (and the same exit status as with LLVM's plugin) with it.
//!
//! Knobs: `CORPUS_ONLY=name[,name]` runs a subset, `CORPUS_TIMEOUT_SECS`
//! (default 120) bounds each run. The test prints a table of
//! program × level × plugin.

mod three_way;

use std::time::Instant;
use three_way::{
    build, corpus, corpus_program, first_error, prove_plugin, run_leg, three_way, Hsa, Leg,
    OffloadEnv, Row, HEADER, OPT_LEVELS,
};

#[test]
fn corpus_runs_the_same_on_the_host_through_ours_and_through_llvms() {
    let started = Instant::now();
    let only: Option<Vec<String>> = std::env::var("CORPUS_ONLY")
        .ok()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let jobs: Vec<_> = corpus()
        .into_iter()
        .filter(|p| match &only {
            Some(o) => o.contains(&p.program.name),
            None => true,
        })
        .flat_map(|p| OPT_LEVELS.iter().map(move |o| (p.clone(), *o)))
        .collect();
    assert!(!jobs.is_empty(), "no corpus program selected");
    if only.is_none() {
        // The corpus of issue 5 plus the concurrency and two-device programs.
        assert!(jobs.len() >= 2 * 17, "only {} jobs", jobs.len());
        assert!(jobs.iter().all(|(p, _)| p.program.name != "device_count"));
    }

    // Two jobs at a time: the machine has two cores, and each device run
    // also has the virtual device's worker threads.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let rows = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((p, opt)) = jobs.get(i) else { break };
                let b = build(p, opt);
                let row = three_way(p, opt, &b.exe, &[]);
                println!("{}", row.line());
                rows.lock().unwrap().push((i, row));
            });
        }
    });
    let mut rows: Vec<(usize, Row)> = rows.into_inner().unwrap();
    rows.sort_by_key(|r| r.0);
    let passed = rows.iter().filter(|r| r.1.pass()).count();
    println!("\n{HEADER}");
    for (_, r) in &rows {
        println!("{}", r.line());
    }
    println!(
        "three-way: {passed} of {} program x level rows pass for both plugins ({:.0?})",
        rows.len(),
        started.elapsed()
    );
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| !r.1.pass())
        .map(|r| r.1.line())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} rows fail:\n{}",
        failed.len(),
        rows.len(),
        failed.join("\n")
    );
}

/// Our plugin over Debian's ROCm `libhsa-runtime64.so.1` (no GPU: `hsa_init`
/// fails) behaves as LLVM's C++ plugin does there: zero devices; without
/// MANDATORY every region falls back to the host and the output is the
/// host's, including for programs that offload from several host threads
/// and that ask for a second device; with MANDATORY, libomptarget's fatal
/// error, with the same exit status as under LLVM's plugin, no hang.
/// (`tests/offload.rs` checks `device_count` and one kernel; this extends it
/// to the corpus's asynchronous, threaded and multi-device programs, proves
/// from the loader's log that ROCm's runtime was the one loaded, and
/// compares with LLVM's plugin.)
#[test]
fn over_rocm_without_a_gpu_both_plugins_fall_back_or_fail_alike() {
    let t = three_way::timeout();
    for name in [
        "async_depend",
        "concurrent_threads",
        "multi_device",
        "device_memory",
    ] {
        let p = corpus_program(name);
        let b = build(&p, "-O3");
        let fallback = OffloadEnv {
            hsa: Hsa::Rocm,
            mandatory: false,
            extra: &[],
        };
        let host = run_leg(&b.exe, Leg::Host, fallback, t);
        assert_eq!(host.code(), Some(0), "{name}: {}", host.stderr);
        let mut mandatory_status = Vec::new();
        for leg in [Leg::Ours, Leg::Llvm] {
            let run = run_leg(&b.exe, leg, fallback, t);
            let who = format!("{name} over ROCm through {}", leg.name());
            prove_plugin(&run, Hsa::Rocm).unwrap_or_else(|e| panic!("{who}: {e}"));
            assert_eq!(run.code(), Some(0), "{who}: {}", run.stderr);
            assert_eq!(run.stdout, host.stdout, "{who}: {}", run.stderr);
            assert_eq!(run.launches(), 0, "{who}: a kernel was launched");

            let env = OffloadEnv {
                mandatory: true,
                ..fallback
            };
            let run = run_leg(&b.exe, leg, env, t);
            prove_plugin(&run, Hsa::Rocm).unwrap_or_else(|e| panic!("{who}: {e}"));
            assert!(run.status.is_some(), "{who} (MANDATORY) hung");
            assert!(
                !run.status.unwrap().success(),
                "{who} (MANDATORY) succeeded: {}",
                run.stdout
            );
            assert!(
                run.stderr
                    .contains("failure of target construct while offloading is mandatory"),
                "{who} (MANDATORY): {}",
                first_error(&run.stderr)
            );
            // No region ran: the program stopped at its first target construct,
            // before its first result line.
            assert!(
                host.stdout.starts_with(&run.stdout) && run.stdout.len() < host.stdout.len(),
                "{who} (MANDATORY) printed {:?}",
                run.stdout
            );
            mandatory_status.push(run.describe());
        }
        assert_eq!(
            mandatory_status[0], mandatory_status[1],
            "{name}: ours and LLVM's end differently under MANDATORY"
        );
    }
}
