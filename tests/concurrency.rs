//! Concurrency and two devices, three ways (host, our plugin, LLVM's C++
//! nextgen plugin over the virtual gfx90a, `OMP_TARGET_OFFLOAD=MANDATORY`):
//!
//! - `examples/concurrent_threads.c`: four host threads each running chains
//!   of synchronous `target` regions at once, then `target nowait` tasks with
//!   `depend` chains executed by a team of host threads;
//! - `examples/multi_device.c` with `HSA_SIM_GPUS=2`: a loop split across
//!   both devices (`device(d) nowait`), `omp_target_memcpy` from device 0 to
//!   device 1 and back, `device(1)` regions on data mapped there, and four
//!   host threads offloading to both devices at once.
//!
//! Results are checked against the host run, and both plugins are run so a
//! disagreement shows who is wrong. Races show up only sometimes, so each
//! program runs `CONCURRENCY_REPEAT` times (default 3) at each level.

mod three_way;

use three_way::{build, corpus_program, run_leg, three_way, Hsa, Leg, OffloadEnv, OPT_LEVELS};

fn repeat() -> usize {
    std::env::var("CONCURRENCY_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

#[test]
fn four_host_threads_and_nowait_depend_chains_match_the_host() {
    let p = corpus_program("concurrent_threads");
    assert_eq!(p.gpus, 1);
    for opt in OPT_LEVELS {
        let b = build(&p, opt);
        for round in 0..repeat() {
            let row = three_way(&p, opt, &b.exe, &[]);
            println!("round {round}: {}", row.line());
            assert!(row.pass(), "round {round}: {}", row.line());
        }
    }
}

#[test]
fn two_devices_split_copy_and_device1_regions_match_the_host() {
    let p = corpus_program("multi_device");
    assert_eq!(p.gpus, 2, "multi_device.c must ask for two GPUs");
    let t = three_way::timeout();
    for opt in OPT_LEVELS {
        let b = build(&p, opt);
        for round in 0..repeat() {
            let row = three_way(&p, opt, &b.exe, &[]);
            println!("round {round}: {}", row.line());
            assert!(row.pass(), "round {round}: {}", row.line());
        }
        // Both plugins really used both devices: the program reports the
        // device numbers it chose, and libomptarget reports kernels
        // launched on device 0 and on device 1.
        for leg in [Leg::Ours, Leg::Llvm] {
            let env = OffloadEnv {
                hsa: Hsa::Sim(2),
                mandatory: true,
                extra: &[],
            };
            let run = run_leg(&b.exe, leg, env, t);
            let who = format!("{opt} {}", leg.name());
            three_way::prove_plugin(&run, Hsa::Sim(2)).unwrap_or_else(|e| panic!("{who}: {e}"));
            assert!(
                run.stderr.contains("multi_device: devices 0 1 of 2\n"),
                "{who}: {}",
                run.stderr
            );
            for d in 0..2 {
                assert!(
                    run.stderr
                        .contains(&format!("device {d} info: Entering OpenMP kernel")),
                    "{who}: no kernel on device {d}"
                );
            }
        }
    }
}

#[test]
fn two_device_program_on_one_device_still_matches_the_host() {
    // The program adapts to the devices it has; with one virtual GPU every
    // region goes to device 0 and the output must not change.
    let p = corpus_program("multi_device");
    let b = build(&p, "-O3");
    let t = three_way::timeout();
    let env = OffloadEnv {
        hsa: Hsa::Sim(1),
        mandatory: true,
        extra: &[],
    };
    let host = run_leg(&b.exe, Leg::Host, env, t);
    let ours = run_leg(&b.exe, Leg::Ours, env, t);
    three_way::prove_plugin(&ours, Hsa::Sim(1)).unwrap();
    assert_eq!(ours.code(), Some(0), "{}", ours.stderr);
    assert_eq!(ours.stdout, host.stdout);
    assert!(ours.stderr.contains("multi_device: devices 0 0 of 1\n"));
    assert!(!ours.stderr.contains("device 1 info:"));
}
