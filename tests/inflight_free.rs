//! Host memory freed under transfers in flight, through our plugin on the
//! virtual gfx90a (`tests/programs/inflight_free.c`): 200 processes, two at a
//! time (each the other's load), with arrays of 4 MiB (the plugin locks them:
//! the virtual device's copy engine copies from and to the program's memory),
//! 256 KiB and 16 KiB (staged: the plugin's host steps copy between the
//! program's memory and staging blocks). Each ends normally or by
//! libomptarget's abort after a failed target construct (its decision, as with
//! LLVM's own plugin); never by another signal (a copy touching the unmapped
//! memory), never by hanging.

mod common;

use common::{announcement, command, compile, run, texts, Hsa};
use std::os::unix::process::ExitStatusExt;

#[test]
fn freeing_memory_under_transfers_in_flight_never_kills_the_process() {
    let bin = compile("inflight_free.c", false, &[]);
    let sizes = ["4194304", "262144", "16384"];
    let runs = 200;
    let outcomes: Vec<(usize, bool)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let bin = &bin;
                s.spawn(move || {
                    let mut seen = Vec::new();
                    for k in (w..runs).step_by(2) {
                        let size = sizes[k % sizes.len()];
                        let out = run(command(bin, Hsa::Sim(1)).args([size, "4"]), 120);
                        let (stdout, stderr) = texts(&out);
                        assert!(
                            stderr.contains(&announcement(1)),
                            "run {k}: not our plugin\n{stderr}"
                        );
                        match out.status.signal() {
                            None => {}
                            // SIGABRT: libomptarget's own end of a failed construct.
                            Some(6) => assert!(
                                stderr.contains("Libomptarget"),
                                "run {k} ({size} bytes): an abort that is not libomptarget's\n{stderr}"
                            ),
                            Some(sig) => panic!(
                                "run {k} ({size} bytes): killed by signal {sig}\n{stdout}\n{stderr}"
                            ),
                        }
                        seen.push((k, out.status.success()));
                    }
                    seen
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("runner"))
            .collect()
    });
    assert_eq!(outcomes.len(), runs);
    let clean = outcomes.iter().filter(|(_, ok)| *ok).count();
    eprintln!(
        "{runs} runs: {clean} ended normally, {} ended by libomptarget's abort, none by another signal",
        runs - clean
    );
}
