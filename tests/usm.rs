//! Unified shared memory end to end: OpenMP programs with `#pragma omp
//! requires unified_shared_memory`, built with clang-16 for gfx90a, run
//! through libomptarget 16 and OUR plugin over the virtual gfx90a with XNACK
//! on (`HSA_XNACK=1`), `OMP_TARGET_OFFLOAD=MANDATORY`, our plugin's
//! announcement checked. Expected output comes from a host run
//! (`OMP_TARGET_OFFLOAD=DISABLED`) or from the programs' own arithmetic.
//!
//! With XNACK off the same programs must stop before their first kernel with
//! a message naming `HSA_XNACK=1`, and an image built for `gfx90a:xnack+`
//! must be refused with a message naming both settings.
//!
//! A fault ends the process: libomptarget 16 aborts after a failed target
//! region (`Libomptarget fatal error 1`, SIGABRT, its own decision). What
//! must never happen is any other signal (SIGSEGV, SIGBUS from touching
//! host memory) or a hang.
//!
//! Needs the virtual device built: `cargo build -p sim`.

mod common;

use common::{announcement, command, compile, run, texts, Hsa};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Our plugin over one virtual gfx90a with XNACK on.
fn xnack_on(bin: &Path) -> Command {
    let mut c = command(bin, Hsa::Sim(1));
    c.env("HSA_XNACK", "1");
    c
}

/// Our plugin over one virtual gfx90a with XNACK off (the default).
fn xnack_off(bin: &Path) -> Command {
    let mut c = command(bin, Hsa::Sim(1));
    c.env_remove("HSA_XNACK");
    c
}

/// The same program on the host.
fn host_run(bin: &Path) -> Output {
    run(
        Command::new(bin)
            .env("OMP_TARGET_OFFLOAD", "DISABLED")
            .env("LD_LIBRARY_PATH", "/usr/lib/llvm-16/lib"),
        120,
    )
}

/// Asserts that `out` ended the way a failed target region ends a program
/// under libomptarget 16: non-zero exit or libomptarget's abort, never
/// another signal.
fn assert_clean_failure(out: &Output, context: &str) {
    let (stdout, stderr) = texts(out);
    assert!(
        !out.status.success(),
        "{context}: succeeded\n{stdout}\n{stderr}"
    );
    if let Some(sig) = out.status.signal() {
        assert_eq!(
            sig,
            libc_sigabrt(),
            "{context}: killed by signal {sig}, not libomptarget's abort\n{stderr}"
        );
        assert!(
            stderr.contains("Libomptarget fatal error"),
            "{context}: aborted without libomptarget's fatal error\n{stderr}"
        );
    }
}

/// SIGABRT's number on Linux.
fn libc_sigabrt() -> i32 {
    6
}

/// Runs `bin` on the host and through our plugin with XNACK on; the outputs
/// must be equal.
fn same_as_host(bin: &Path) -> String {
    let host = host_run(bin);
    let (host_out, host_err) = texts(&host);
    assert!(
        host.status.success(),
        "host run failed:\n{host_out}\n{host_err}"
    );
    let out = run(&mut xnack_on(bin), 300);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&announcement(1)),
        "our plugin did not run:\n{stderr}"
    );
    assert_eq!(stdout, host_out, "device and host output differ\n{stderr}");
    stdout
}

#[test]
fn heap_stack_globals_and_a_host_list_are_reached_by_kernels() {
    let bin = compile("usm_memory.c", false, &[]);
    let stdout = same_as_host(&bin);
    // The list's arithmetic from first principles: values (37 i mod 101)
    // for i < 1000.
    let sum: i64 = (0..1000i64).map(|i| (i * 37) % 101).sum();
    assert!(
        stdout.contains(&format!("list: 1000 nodes, sum {sum}, twice {}\n", 2 * sum)),
        "{stdout}"
    );
    // Host writes before each round are what the next kernel sums.
    for round in 0..5i64 {
        let want: i64 = (0..4096i64).map(|i| round * i + round).sum();
        assert!(
            stdout.contains(&format!("round {round}: device sum {want}\n")),
            "{stdout}"
        );
    }
}

#[test]
fn device_atomics_on_host_memory_race_host_threads() {
    let bin = compile("usm_atomics.c", false, &[]);
    let stdout = same_as_host(&bin);
    assert!(
        !stdout.contains("WRONG") && !stdout.contains("NO"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("expected").count(), 10, "{stdout}");
}

#[test]
fn requires_usm_on_an_xnack_off_agent_stops_before_the_first_kernel() {
    let bin = compile("usm_memory.c", false, &[]);
    let out = run(&mut xnack_off(&bin), 120);
    let (stdout, stderr) = texts(&out);
    assert_clean_failure(&out, "XNACK off");
    assert!(stderr.contains(&announcement(1)), "{stderr}");
    assert!(
        stderr.contains("requires unified_shared_memory") && stderr.contains("HSA_XNACK=1"),
        "the refusal must name the requirement and HSA_XNACK=1:\n{stderr}"
    );
    assert!(
        !stderr.contains("memory access fault"),
        "a kernel ran before the refusal:\n{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
}

/// Rewrites the `e_flags` of every AMDGPU code object embedded in `bin` to
/// say `xnack+` (EF_AMDGPU_FEATURE_XNACK_ON_V4, 0x300) and writes the result
/// beside it. clang-16 cannot build such an OpenMP image itself:
/// `--offload-arch=gfx90a:xnack+` reaches the device compile as
/// `-target-cpu gfx90a:xnack+`, which it rejects ("unknown target CPU").
fn with_xnack_on_images(bin: &Path) -> PathBuf {
    let mut bytes = std::fs::read(bin).expect("reading the program");
    let mut patched = 0;
    let mut i = 1;
    while let Some(pos) = bytes[i..].windows(4).position(|w| w == b"\x7fELF") {
        let at = i + pos;
        let machine = bytes
            .get(at + 18..at + 20)
            .map(|b| u16::from_le_bytes([b[0], b[1]]));
        if machine == Some(224) {
            let flags = &mut bytes[at + 48..at + 52];
            let v = u32::from_le_bytes([flags[0], flags[1], flags[2], flags[3]]);
            assert_eq!(v & 0xff, 0x3f, "not a gfx90a code object: {v:#x}");
            flags.copy_from_slice(&((v & !0x300) | 0x300).to_le_bytes());
            patched += 1;
        }
        i = at + 4;
    }
    assert!(
        patched > 0,
        "no AMDGPU code object found in {}",
        bin.display()
    );
    let out = bin.with_file_name(format!(
        "{}_xnack_on",
        bin.file_name().unwrap().to_string_lossy()
    ));
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, &bytes).expect("writing the patched program");
    std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::rename(&tmp, &out).expect("renaming the patched program");
    out
}

#[test]
fn an_xnack_on_image_is_refused_by_an_xnack_off_agent() {
    let bin = with_xnack_on_images(&compile("saxpy.c", false, &[]));
    let out = run(&mut xnack_off(&bin), 120);
    let (stdout, stderr) = texts(&out);
    assert_clean_failure(&out, "xnack+ image, XNACK off");
    assert!(
        stderr.contains("device image for gfx90a:xnack+ not loaded")
            && stderr.contains("gfx90a:sramecc+:xnack-")
            && stderr.contains("HSA_XNACK=1"),
        "the refusal must name both settings and HSA_XNACK=1:\n{stderr}"
    );
    assert!(
        !stdout.contains("bad="),
        "the region must not have run: {stdout}"
    );
    // The same image runs where the agent has XNACK on.
    let out = run(&mut xnack_on(&bin), 120);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("bad=0"), "{stdout}\n{stderr}");
}

/// What one `usm_probe` process did.
#[derive(Debug, Default)]
struct ProbeRun {
    /// Probes that returned with the right value.
    ok: usize,
    /// Probes that faulted as expected, each message naming the address.
    faults: usize,
    /// Probes skipped (no unmapped address left in the hole; never seen).
    skipped: usize,
    /// Where the next process starts, or `None` when this one finished.
    next: Option<usize>,
}

/// Runs `usm_probe SEED first end` once and checks what it printed.
fn probe_once(bin: &Path, seed: u64, first: usize, end: usize) -> ProbeRun {
    let out = run(
        xnack_on(bin).args([seed.to_string(), first.to_string(), end.to_string()]),
        120,
    );
    let (stdout, stderr) = texts(&out);
    let mut r = ProbeRun::default();
    let mut pending: Option<(usize, String, bool)> = None;
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["probe", i, _kind, addr, _op, expect] => {
                assert!(pending.is_none(), "probe without outcome before {line}");
                pending = Some((
                    i.parse().expect("probe index"),
                    (*addr).to_string(),
                    *expect == "expect=fault",
                ));
            }
            ["ok", i] => {
                let (p, _, faults) = pending.take().expect("ok without probe");
                assert_eq!(i.parse::<usize>().ok(), Some(p), "{line}");
                assert!(!faults, "probe {p} should have faulted\n{stdout}");
                r.ok += 1;
            }
            ["skip", ..] => r.skipped += 1,
            ["done", ..] => {
                assert!(out.status.success(), "{stdout}\n{stderr}");
                return r;
            }
            _ => panic!("unexpected line {line:?}\n{stdout}\n{stderr}"),
        }
    }
    // The process ended inside a probe: it must have been one that faults,
    // reported with its address, and ended cleanly.
    let (p, addr, faults) =
        pending.unwrap_or_else(|| panic!("ended outside a probe\n{stdout}\n{stderr}"));
    assert!(
        faults,
        "probe {p} at {addr} faulted but should not have:\n{stderr}"
    );
    assert_clean_failure(&out, &format!("probe {p}"));
    assert!(
        stderr.contains(&format!("memory access fault on the GPU at address {addr}")),
        "probe {p}: the fault message does not name {addr}:\n{stderr}"
    );
    r.faults += 1;
    r.next = Some(p + 1);
    r
}

#[test]
fn a_thousand_random_addresses_read_right_or_fault_cleanly() {
    const PROBES: usize = 1000;
    const SEED: u64 = 29;
    const CHAINS: usize = 4;
    let bin = compile("usm_probe.c", false, &[]);
    // Four chains of processes, each over a quarter of the probes; a fault
    // ends a process and the chain goes on at the next probe.
    let totals: Vec<ProbeRun> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CHAINS)
            .map(|c| {
                let bin = &bin;
                s.spawn(move || {
                    let (first, end) = (c * PROBES / CHAINS, (c + 1) * PROBES / CHAINS);
                    let mut total = ProbeRun::default();
                    let mut at = first;
                    while at < end {
                        let r = probe_once(bin, SEED, at, end);
                        total.ok += r.ok;
                        total.faults += r.faults;
                        total.skipped += r.skipped;
                        match r.next {
                            Some(n) => at = n,
                            None => break,
                        }
                    }
                    total
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a probe chain panicked"))
            .collect()
    });
    let ok: usize = totals.iter().map(|t| t.ok).sum();
    let faults: usize = totals.iter().map(|t| t.faults).sum();
    let skipped: usize = totals.iter().map(|t| t.skipped).sum();
    eprintln!("1,000 addresses: {ok} right values, {faults} clean faults, {skipped} skipped");
    assert_eq!(ok + faults + skipped, PROBES);
    assert_eq!(
        skipped, 0,
        "probes of the unmapped hole found no unmapped address"
    );
    assert!(ok > 300 && faults > 200, "ok {ok}, faults {faults}");
}

#[test]
fn memory_unmapped_under_a_running_kernel_is_a_clean_fault() {
    let bin = compile("usm_unmap.c", false, &[]);
    for round in 0..5 {
        let out = run(&mut xnack_on(&bin), 120);
        let (stdout, stderr) = texts(&out);
        assert_clean_failure(&out, &format!("round {round}"));
        assert!(stderr.contains(&announcement(1)), "{stderr}");
        // The program printed the region's bounds and that it unmapped it.
        let bounds = stdout
            .lines()
            .find_map(|l| l.strip_prefix("region "))
            .unwrap_or_else(|| panic!("no region line\n{stdout}\n{stderr}"));
        let mut it = bounds
            .split_whitespace()
            .map(|w| u64::from_str_radix(w.trim_start_matches("0x"), 16).expect("hex bound"));
        let (lo, hi) = (it.next().expect("low"), it.next().expect("high"));
        assert!(stdout.contains("unmapped\n"), "{stdout}\n{stderr}");
        assert!(!stdout.contains("kernel returned"), "{stdout}\n{stderr}");
        let fault = stderr
            .lines()
            .find_map(|l| l.split("memory access fault on the GPU at address ").nth(1))
            .unwrap_or_else(|| panic!("round {round}: no fault message\n{stderr}"));
        let addr = fault
            .split(':')
            .next()
            .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
            .unwrap_or_else(|| panic!("no address in {fault:?}"));
        assert!(
            (lo..hi).contains(&addr),
            "round {round}: fault at {addr:#x} outside the region {lo:#x}..{hi:#x}\n{stderr}"
        );
    }
}
