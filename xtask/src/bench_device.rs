//! `cargo xtask bench-device`: the virtual gfx90a against the host on
//! memory-bound and compute-bound OpenMP offload code (issue 13). Prints a
//! table; fails only if a device result disagrees with the host's.
//!
//! `benches/programs/device_bench.c` is compiled once (clang-16, `-O2`) and
//! each of its kernels runs, for W = 1 and 2, on the host
//! (`OMP_TARGET_OFFLOAD=DISABLED`, `OMP_NUM_THREADS=W`) and through our plugin
//! on the virtual device (`OMP_TARGET_OFFLOAD=MANDATORY`, `HSA_SIM_WORKERS=W`;
//! our plugin's announcement on stderr proves which plugin ran):
//! - STREAM: copy, scale, add, triad, dot over 2^24 doubles (128 MiB per
//!   array, larger than the caches), GB/s as STREAM counts bytes;
//! - gather: 2^22 random indexed reads (pairs) into a 64 MiB table of
//!   doubles, summed;
//! - saxpy over 2^24 floats and a 512 x 512 float matmul;
//! - STREAM copy and triad under unified shared memory
//!   (`benches/programs/device_bench_usm.c`, `requires
//!   unified_shared_memory`): the same kernels over malloc'ed arrays passed
//!   to the kernels as host pointers, on the device with `HSA_XNACK=1`; a
//!   second table gives their bandwidth over that of STREAM over mapped
//!   device arrays of the same run, at W = 1 and 2 (issue 29 asks for at
//!   least 0.8; a ratio below is printed, not an error); and the same over
//!   malloc'ed arrays advised to use huge pages (`stream-thp`), since the
//!   device's pools ask for huge pages and plain malloc gets 4 KiB pages
//!   where transparent huge pages are left to `madvise`.
//!
//! Every `check_*` value the device run prints must equal the host's within
//! a relative 1e-6 (the reductions sum in another order; the device may fuse
//! multiply-adds).
//!
//! Each configuration (kernel, W, host or device) runs in
//! `BENCH_DEVICE_ROUNDS` processes (default 5), host and device taking turns,
//! one round of every configuration after another, and its best figure is
//! kept. On a shared machine, a process can run slow for its whole life, and
//! the machine can be slow for tens of seconds (seen on the 2-core VM this was
//! written on: 8-20% slower, both workers alike, host and device), which
//! repetitions inside one process do not show; the best of processes spread
//! over the whole run compares host and device each at its undisturbed speed.
//! Every process's checks are compared.
//!
//! Knobs: `BENCH_DEVICE_STREAM_LOG2` (default 24), `BENCH_DEVICE_REPS`
//! (timed repetitions of each kernel in one process, best taken; default 2)
//! and `BENCH_DEVICE_ROUNDS`.

use crate::run::{compile, run_captured, Device, Mode, Plugin};
use crate::stage::{stage, workspace_root};

/// Relative tolerance of the device's `check_*` values against the host's.
const CHECK_TOLERANCE: f64 = 1e-6;
/// What our plugin prints on stderr with `OMPTARGET_AMDGPU_ANNOUNCE=1`.
const ANNOUNCEMENT: &str = "omptarget-amdgpu: Rust AMDGPU plugin initialised";

/// One benchmark's measured figure.
struct Metric {
    /// Key printed by the program.
    key: &'static str,
    /// Row label.
    label: &'static str,
    /// True for bandwidths (bigger is better; ratio = device / host), false
    /// for times (ratio = device time / host time).
    higher_is_better: bool,
}

/// Which program a case runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Program {
    /// `device_bench.c`: device arrays (mapped, or the kernels' own).
    Device,
    /// `device_bench_usm.c`: `requires unified_shared_memory` over
    /// malloc'ed arrays; its device runs set `HSA_XNACK=1`.
    Usm,
}

/// One case: the program, its arguments, and the figures it prints.
struct Case {
    /// The program run.
    program: Program,
    /// Its arguments (the first names the mode).
    args: Vec<String>,
    /// The figures it prints.
    metrics: Vec<Metric>,
}

/// The programs' modes, their arguments, and the figures each prints.
fn cases(stream_log2: u32, reps: u32) -> Vec<Case> {
    let m = |key, label, higher_is_better| Metric {
        key,
        label,
        higher_is_better,
    };
    let stream_args = vec!["stream".into(), stream_log2.to_string(), reps.to_string()];
    let case = |(args, metrics): (Vec<String>, Vec<Metric>)| Case {
        program: Program::Device,
        args,
        metrics,
    };
    let mut all: Vec<Case> = vec![
        (
            stream_args.clone(),
            vec![
                m("copy_gbs", "STREAM copy (GB/s)", true),
                m("scale_gbs", "STREAM scale (GB/s)", true),
                m("add_gbs", "STREAM add (GB/s)", true),
                m("triad_gbs", "STREAM triad (GB/s)", true),
                m("dot_gbs", "STREAM dot (GB/s)", true),
            ],
        ),
        (
            vec!["gather".into(), (reps + 1).to_string()],
            vec![m(
                "gather_ms",
                "gather 2^22 lookups, 64 MiB table (ms)",
                false,
            )],
        ),
        (
            vec!["saxpy".into(), "24".into(), (reps + 1).to_string()],
            vec![m("saxpy_ms", "saxpy 2^24 floats (ms)", false)],
        ),
        (
            vec!["matmul".into(), "512".into(), reps.to_string()],
            vec![m("matmul_ms", "matmul 512x512 float (ms)", false)],
        ),
    ]
    .into_iter()
    .map(case)
    .collect();
    let mut thp_args = stream_args.clone();
    thp_args[0] = "stream-thp".into();
    all.push(Case {
        program: Program::Usm,
        args: stream_args,
        metrics: vec![
            m("usm_copy_gbs", "USM STREAM copy, malloc (GB/s)", true),
            m("usm_triad_gbs", "USM STREAM triad, malloc (GB/s)", true),
        ],
    });
    all.push(Case {
        program: Program::Usm,
        args: thp_args,
        metrics: vec![
            m(
                "usm_thp_copy_gbs",
                "USM STREAM copy, huge pages (GB/s)",
                true,
            ),
            m(
                "usm_thp_triad_gbs",
                "USM STREAM triad, huge pages (GB/s)",
                true,
            ),
        ],
    });
    all
}

/// Pairs of (unified memory figure, device memory figure) whose ratio the
/// summary prints: the same kernel over malloc'ed arrays reached with XNACK
/// on (plain malloc, then 2 MiB-aligned with `MADV_HUGEPAGE`, as the virtual
/// device's pools ask), and over mapped device arrays. The target applies to
/// plain malloc.
const USM_PAIRS: &[(&str, &str, &str)] = &[
    ("copy, malloc", "usm_copy_gbs", "copy_gbs"),
    ("triad, malloc", "usm_triad_gbs", "triad_gbs"),
    ("copy, THP", "usm_thp_copy_gbs", "copy_gbs"),
    ("triad, THP", "usm_thp_triad_gbs", "triad_gbs"),
];
/// The ratio (unified over device memory) the issue asks for, at every W.
const USM_TARGET_RATIO: f64 = 0.8;

/// `key value` lines of a run's stdout.
fn parse(stdout: &str) -> Vec<(String, f64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn get(vals: &[(String, f64)], key: &str) -> Result<f64, String> {
    vals.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
        .ok_or_else(|| format!("no `{key}` in the program's output"))
}

/// Differences between the `check_*` values of two runs, as messages.
fn check_mismatches(host: &[(String, f64)], device: &[(String, f64)]) -> Vec<String> {
    let mut bad = Vec::new();
    for (k, h) in host.iter().filter(|(k, _)| k.starts_with("check_")) {
        match device.iter().find(|(d, _)| d == k) {
            None => bad.push(format!("{k}: missing from the device run")),
            Some((_, d)) => {
                let scale = h.abs().max(d.abs()).max(f64::MIN_POSITIVE);
                if (h - d).abs() / scale > CHECK_TOLERANCE {
                    bad.push(format!("{k}: host {h}, device {d}"));
                }
            }
        }
    }
    bad
}

/// The better of a configuration's best figure so far (NaN before its first
/// round) and a new one: the higher bandwidth, or the shorter time.
fn best(higher_is_better: bool, old: f64, new: f64) -> f64 {
    match (old.is_nan(), higher_is_better) {
        (true, _) => new,
        (false, true) => old.max(new),
        (false, false) => old.min(new),
    }
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// Runs the program once; returns its `key value` lines. `xnack` sets
/// `HSA_XNACK=1` for a device run (the unified memory program).
fn run_once(
    binary: &std::path::Path,
    args: &[String],
    mode: Mode,
    workers: usize,
    xnack: bool,
) -> Result<Vec<(String, f64)>, String> {
    let w = workers.to_string();
    let mut env: Vec<(&str, &str)> = match mode {
        Mode::Host => vec![("OMP_NUM_THREADS", &w)],
        Mode::Offload(..) => vec![("HSA_SIM_WORKERS", &w), ("OMPTARGET_AMDGPU_ANNOUNCE", "1")],
    };
    if xnack && matches!(mode, Mode::Offload(..)) {
        env.push(("HSA_XNACK", "1"));
    }
    let out = run_captured(binary, args, mode, &env)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "{} {args:?} ({mode:?}, W={workers}) failed ({}):\n{stderr}",
            binary.display(),
            out.status
        ));
    }
    if matches!(mode, Mode::Offload(..)) && !stderr.contains(ANNOUNCEMENT) {
        return Err(format!(
            "{args:?}: our plugin did not announce itself:\n{stderr}"
        ));
    }
    Ok(parse(&String::from_utf8_lossy(&out.stdout)))
}

/// `cargo xtask bench-device`.
pub fn run_command(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("bench-device takes no arguments (got {a:?})"));
    }
    stage()?;
    let programs = workspace_root().join("benches/programs");
    let binary = compile(&programs.join("device_bench.c"), "-O2")?;
    let binary_usm = compile(&programs.join("device_bench_usm.c"), "-O2")?;
    let stream_log2 = env_u32("BENCH_DEVICE_STREAM_LOG2", 24);
    let reps = env_u32("BENCH_DEVICE_REPS", 2);
    let rounds = env_u32("BENCH_DEVICE_ROUNDS", 5);
    let device = Mode::Offload(Plugin::Ours, Device::Virtual);
    let workers = [1usize, 2];

    // Per case, per metric: [host W=1, device W=1, host W=2, device W=2], each the
    // best so far. The rounds are the outer loop, so that one configuration's
    // processes lie a round apart in time: a slow spell of the machine shorter
    // than a round meets only one of them.
    let cases = cases(stream_log2, reps);
    let mut figures: Vec<Vec<[f64; 4]>> = cases
        .iter()
        .map(|c| vec![[f64::NAN; 4]; c.metrics.len()])
        .collect();
    let mut failures = Vec::new();
    for round in 1..=rounds {
        for (case, figures) in cases.iter().zip(figures.iter_mut()) {
            let (bin, usm) = match case.program {
                Program::Device => (&binary, false),
                Program::Usm => (&binary_usm, true),
            };
            let (args, name) = (
                &case.args,
                case.args[0].clone() + if usm { " (USM)" } else { "" },
            );
            for (wi, &w) in workers.iter().enumerate() {
                eprintln!("bench-device: {name} W={w} host ({round}/{rounds})");
                let host = run_once(bin, args, Mode::Host, w, usm)?;
                eprintln!("bench-device: {name} W={w} virtual gfx90a ({round}/{rounds})");
                let dev = run_once(bin, args, device, w, usm)?;
                for bad in check_mismatches(&host, &dev) {
                    failures.push(format!("{name} W={w}, round {round}: {bad}"));
                }
                for (m, f) in case.metrics.iter().zip(figures.iter_mut()) {
                    let keep = |old: f64, new: f64| best(m.higher_is_better, old, new);
                    f[2 * wi] = keep(f[2 * wi], get(&host, m.key)?);
                    f[2 * wi + 1] = keep(f[2 * wi + 1], get(&dev, m.key)?);
                }
            }
        }
    }
    // (label, higher_is_better, [host W=1, device W=1, host W=2, device W=2])
    let rows: Vec<(&str, bool, [f64; 4])> = cases
        .iter()
        .zip(&figures)
        .flat_map(|(c, f)| {
            c.metrics
                .iter()
                .zip(f)
                .map(|(m, f)| (m.label, m.higher_is_better, *f))
        })
        .collect();
    // Each metric key's four figures, for the unified memory summary.
    let by_key = |key: &str| -> Option<[f64; 4]> {
        cases
            .iter()
            .zip(&figures)
            .flat_map(|(c, f)| c.metrics.iter().zip(f))
            .find(|(m, _)| m.key == key)
            .map(|(_, f)| *f)
    };

    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!();
    println!(
        "Virtual gfx90a (our plugin) vs the host, same binary, W = device workers = host threads ({cores} host cores)"
    );
    println!(
        "{:<40} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>9}",
        "", "host W=1", "dev W=1", "dev/host", "host W=2", "dev W=2", "dev/host", "dev 2/1"
    );
    for (label, higher, f) in &rows {
        // dev/host as "fraction of the host's speed" for both kinds of figure.
        let speed = |h: f64, d: f64| if *higher { d / h } else { h / d };
        let scaling = if *higher { f[3] / f[1] } else { f[1] / f[3] };
        println!(
            "{label:<40} {:>10.3} {:>10.3} {:>9.4} {:>10.3} {:>10.3} {:>9.4} {:>8.2}x",
            f[0],
            f[1],
            speed(f[0], f[1]),
            f[2],
            f[3],
            speed(f[2], f[3]),
            scaling
        );
    }
    println!(
        "dev/host = device speed as a fraction of the host's (bandwidth ratio, or host time / device time);"
    );
    println!("dev 2/1 = device speed with 2 workers over 1. Each figure is the best of {rounds} processes (BENCH_DEVICE_ROUNDS);");
    println!("shared machines still make figures noisy: compare ratios of one run.");
    println!();
    println!(
        "Unified shared memory (malloc'ed arrays, requires unified_shared_memory, HSA_XNACK=1) vs device memory (mapped arrays), virtual gfx90a, same run"
    );
    println!(
        "{:<16} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9}",
        "", "dev W=1", "USM W=1", "USM/dev", "dev W=2", "USM W=2", "USM/dev"
    );
    let mut below = Vec::new();
    for (label, usm_key, dev_key) in USM_PAIRS {
        let (Some(u), Some(d)) = (by_key(usm_key), by_key(dev_key)) else {
            continue;
        };
        let (r1, r2) = (u[1] / d[1], u[3] / d[3]);
        println!(
            "{label:<16} {:>10.3} {:>10.3} {:>9.3} {:>10.3} {:>10.3} {:>9.3}",
            d[1], u[1], r1, d[3], u[3], r2
        );
        // The target is judged on plain malloc only.
        let judged = !usm_key.starts_with("usm_thp");
        for (w, r) in [(1, r1), (2, r2)] {
            if judged && (r.is_nan() || r < USM_TARGET_RATIO) {
                below.push(format!("{label} W={w}: {r:.3}"));
            }
        }
    }
    println!(
        "THP rows: the same program's arrays 2 MiB-aligned with madvise(MADV_HUGEPAGE), as the device's pools are;"
    );
    println!("plain malloc gets 4 KiB pages where transparent huge pages are left to madvise.");
    if below.is_empty() {
        println!("USM/dev, malloc: every ratio is at least {USM_TARGET_RATIO} (the target)");
    } else {
        println!(
            "USM/dev, malloc, below the target {USM_TARGET_RATIO}: {}",
            below.join(", ")
        );
    }
    if failures.is_empty() {
        println!("results: every device check equals the host's (relative tolerance {CHECK_TOLERANCE:e})");
        Ok(())
    } else {
        Err(format!(
            "device results differ from the host's:\n{}",
            failures.join("\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_compare_relatively_and_notice_missing_keys() {
        let host = parse("copy_gbs 10\ncheck_a 1000\ncheck_b 5\nnoise\n");
        let close = parse("check_a 1000.0000001\ncheck_b 5\n");
        assert!(check_mismatches(&host, &close).is_empty());
        let off = parse("check_a 1001\n");
        let bad = check_mismatches(&host, &off);
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert_eq!(get(&host, "copy_gbs").unwrap(), 10.0);
        assert!(get(&host, "triad_gbs").is_err());
    }

    #[test]
    fn rounds_keep_the_highest_bandwidth_and_the_shortest_time() {
        let rounds = [3.5, 3.7, 3.4];
        let bandwidth = rounds.iter().fold(f64::NAN, |b, &x| best(true, b, x));
        let time = rounds.iter().fold(f64::NAN, |b, &x| best(false, b, x));
        assert_eq!((bandwidth, time), (3.7, 3.4));
        // A first round that is itself the best is kept.
        assert_eq!(best(true, f64::NAN, 9.0), 9.0);
        assert_eq!(best(false, 2.0, 9.0), 2.0);
    }
}
