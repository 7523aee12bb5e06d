//! `cargo xtask loader-bench`: the standalone loader's benchmark on the
//! virtual gfx90a, for LLVM 19's RPC server (`llvm-rpc-oracle`) and ours
//! (`amdhsa-loader`), side by side. Each measurement runs in [`rounds`]
//! rounds, the servers taking turns; each figure is printed as the best
//! and the median of the rounds (the CPU use: the highest). It prints,
//! asserts nothing:
//!
//! - the round trip of one `puts` from one lane (median, 10th and 90th
//!   percentiles over 500 calls, timed on the device with the 100 MHz
//!   `s_memrealtime` counter), in µs;
//! - the same round trip under load: lane 0 of workgroup 0 measures while
//!   every thread of 3 other workgroups of 64 prints [`LOAD_LINES`] lines;
//! - printf lines per second from 16384 threads (64 workgroups x 256), from
//!   the wall time of a run printing [`LINES_PER_THREAD`] lines per thread
//!   minus that of the same run printing none;
//! - one `printf("%s\n")` of a 1 MiB string from one lane, in seconds,
//!   timed on the device around the call (`device/bench/long_string.c`):
//!   the device's `strlen`, 16,384 packets through the RPC buffer and the
//!   host's write, without the process start and the filling of the
//!   string, whose noise was larger than the difference between servers;
//! - the server's CPU use while a kernel computes without RPC: CPU time of
//!   the loader's threads other than the virtual device's own (`hsa-*`),
//!   read from `/proc/PID/task/*/schedstat` over 2 s of the kernel's
//!   [`SPIN_MS`], over the wall time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::stage::target_dir;

fn stage() -> PathBuf {
    target_dir().join("stage")
}

fn compile(name: &str, out_dir: &Path) -> Result<PathBuf, String> {
    let src = crate::stage::workspace_root()
        .join("device/bench")
        .join(format!("{name}.c"));
    let out = out_dir.join(format!("{name}.gpu"));
    let status = Command::new(stage().join("bin/amdgpu-cc"))
        .arg("-O2")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .map_err(|e| format!("cannot run amdgpu-cc: {e}"))?;
    if !status.success() {
        return Err(format!("amdgpu-cc {} failed ({status})", src.display()));
    }
    Ok(out)
}

fn loader_command(loader: &Path, grid: (u32, u32), image: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(loader);
    cmd.env("LD_LIBRARY_PATH", stage().join("sim"))
        .arg("--threads")
        .arg(grid.0.to_string())
        .arg("--blocks")
        .arg(grid.1.to_string())
        .arg(image)
        .args(args);
    cmd
}

/// Lines each thread of the loading workgroups prints while the round trip
/// is measured under load.
const LOAD_LINES: u32 = 200;

/// `puts` round trip in µs from the program's own report: median, 10th and
/// 90th percentiles as text. `load`: with 3 workgroups of 64 threads
/// printing meanwhile.
fn puts_round_trip(loader: &Path, image: &Path, load: bool) -> Result<RoundTrip, String> {
    let lines = LOAD_LINES.to_string();
    let (grid, args) = if load {
        ((64, 4), vec!["500", lines.as_str()])
    } else {
        ((1, 1), vec!["500"])
    };
    let out = loader_command(loader, grid, image, &args)
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", loader.display()))?;
    let err = String::from_utf8_lossy(&out.stderr);
    let field = |key: &str| {
        err.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse::<f64>().ok())
            .map(|ns| ns / 1000.0)
            .ok_or_else(|| format!("no {key} in the output: {err}"))
    };
    let median = field("puts_round_trip_median_ns=")?;
    let p10 = field("p10_ns=")?;
    let p90 = field("p90_ns=")?;
    Ok(RoundTrip { median, p10, p90 })
}

/// A round trip's median and percentiles, in µs.
#[derive(Clone, Copy)]
struct RoundTrip {
    median: f64,
    p10: f64,
    p90: f64,
}

impl std::fmt::Display for RoundTrip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.1} µs (p10 {:.1}, p90 {:.1})",
            self.median, self.p10, self.p90
        )
    }
}

/// One server's figures over the rounds.
#[derive(Default)]
struct Samples {
    alone: Vec<RoundTrip>,
    loaded: Vec<RoundTrip>,
    lines: Vec<f64>,
    long: Vec<f64>,
    cpu: Vec<f64>,
    errors: Vec<String>,
}

impl Samples {
    fn keep<T>(slot: &mut Vec<T>, errors: &mut Vec<String>, r: Result<T, String>) {
        match r {
            Ok(v) => slot.push(v),
            Err(e) => errors.push(e),
        }
    }
}

/// `values` sorted ascending (NaN last): empty when there are none.
fn sorted(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of sorted values (the lower middle of an even count).
fn median_of(sorted: &[f64]) -> Option<f64> {
    sorted.get(sorted.len().saturating_sub(1) / 2).copied()
}

/// "best (median)" of `values`, best being the highest when
/// `higher_is_better`, else the lowest; `error` when there are none.
fn best_and_median(
    values: impl IntoIterator<Item = f64>,
    higher_is_better: bool,
    show: impl Fn(f64) -> String,
) -> String {
    let v = sorted(values);
    let best = if higher_is_better {
        v.last()
    } else {
        v.first()
    };
    match (best, median_of(&v)) {
        (Some(&b), Some(m)) => format!("{} ({})", show(b), show(m)),
        _ => "error".to_string(),
    }
}

/// The round trip of the round with the lowest median, and the median of
/// the rounds' medians.
fn round_trips(values: &[RoundTrip]) -> String {
    let best = values.iter().min_by(|a, b| a.median.total_cmp(&b.median));
    match (best, median_of(&sorted(values.iter().map(|r| r.median)))) {
        (Some(b), Some(m)) => format!("{b}, median {m:.1}"),
        _ => "error".to_string(),
    }
}

/// Rounds of every measurement (`LOADER_BENCH_ROUNDS`, default 5): the
/// servers take turns, one round after another. The best round is the
/// figure least slowed by the machine's other load (which slows a run
/// down, never up); the median says how typical it is.
fn rounds() -> usize {
    std::env::var("LOADER_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(5)
}

fn wall_time(mut cmd: Command) -> Result<f64, String> {
    let t0 = Instant::now();
    let status = cmd
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run the loader: {e}"))?;
    if !status.success() {
        return Err(format!("the run failed ({status})"));
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Lines each thread prints in the printf rate's run: enough that the
/// printing outlasts the noise of a process's start and end.
const LINES_PER_THREAD: u32 = 4;

/// printf lines per second from 64 x 256 threads.
fn printf_rate(loader: &Path, image: &Path) -> Result<f64, String> {
    let grid = (256, 64);
    let n = LINES_PER_THREAD.to_string();
    let with = wall_time(loader_command(loader, grid, image, &[n.as_str()]))?;
    let without = wall_time(loader_command(loader, grid, image, &["0"]))?;
    Ok(f64::from(16384 * LINES_PER_THREAD) / (with - without).max(1e-6))
}

/// Seconds one `printf("%s\n")` of a 1 MiB string from one lane takes, as
/// the program reports it (`printf_ns=` on stderr, timed on the device).
fn long_string(loader: &Path, image: &Path) -> Result<f64, String> {
    let mib = (1u32 << 20).to_string();
    let out = loader_command(loader, (1, 1), image, &[mib.as_str()])
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", loader.display()))?;
    if !out.status.success() {
        return Err(format!("the 1 MiB %s run failed ({})", out.status));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    err.split_whitespace()
        .find_map(|w| w.strip_prefix("printf_ns="))
        .and_then(|v| v.parse::<f64>().ok())
        .map(|ns| ns / 1e9)
        .ok_or_else(|| format!("no printf_ns= in the output: {err}"))
}

/// Nanoseconds on a CPU of the threads of `pid` whose name does not start
/// with `hsa-` (the first field of `/proc/PID/task/TID/schedstat`, exact,
/// where the tick counts of `stat` have a 10 ms grain); `None` when the
/// process is gone.
fn server_cpu_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0;
    let mut threads = 0;
    for t in tasks.flatten() {
        let Ok(comm) = std::fs::read_to_string(t.path().join("comm")) else {
            continue;
        };
        threads += 1;
        if comm.starts_with("hsa-") {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    (threads > 0).then_some(total)
}

/// Milliseconds the spin kernel computes without RPC.
const SPIN_MS: u64 = 3000;

/// Server CPU use in percent of one core while the spin kernel runs: CPU
/// time between two samples, 500 ms after the start (loading and `_begin`
/// are over) and 2 s later, while the kernel still computes. (Samples
/// taken once the process had ended read its exited threads as 0 and made
/// an earlier version of this figure 0.0 for our loader whatever it used.)
fn server_cpu(loader: &Path, image: &Path) -> Result<f64, String> {
    let ms = SPIN_MS.to_string();
    let mut child = loader_command(loader, (1, 1), image, &[ms.as_str()])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", loader.display()))?;
    std::thread::sleep(Duration::from_millis(500));
    let first = server_cpu_ns(child.id());
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(2000));
    let last = server_cpu_ns(child.id());
    let wall = t0.elapsed();
    let running = child
        .try_wait()
        .map_err(|e| format!("waiting: {e}"))?
        .is_none();
    let _ = child.wait();
    match (first, last) {
        (Some(a), Some(b)) if running => {
            Ok(100.0 * b.saturating_sub(a) as f64 / wall.as_nanos() as f64)
        }
        _ => Err("the spin run ended before its CPU use could be sampled".into()),
    }
}

/// `cargo xtask loader-bench`.
pub fn run_command(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("loader-bench takes no arguments (got {a:?})"));
    }
    crate::stage::stage()?;
    let out_dir = target_dir().join("loader-bench");
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    let puts = compile("rpc_puts", &out_dir)?;
    let printf = compile("printf_lines", &out_dir)?;
    let spin = compile("spin", &out_dir)?;
    let long = compile("long_string", &out_dir)?;
    let loaders = [
        (
            "LLVM 19 server (llvm-rpc-oracle)",
            stage().join("oracle/llvm-rpc-oracle"),
        ),
        ("ours (amdhsa-loader)", stage().join("bin/amdhsa-loader")),
    ];
    let rounds = rounds();
    let mut samples: Vec<Samples> = loaders.iter().map(|_| Samples::default()).collect();
    for _ in 0..rounds {
        for ((_, loader), b) in loaders.iter().zip(samples.iter_mut()) {
            if !loader.exists() {
                continue;
            }
            let e = &mut b.errors;
            Samples::keep(&mut b.alone, e, puts_round_trip(loader, &puts, false));
            Samples::keep(&mut b.loaded, e, puts_round_trip(loader, &puts, true));
            Samples::keep(&mut b.lines, e, printf_rate(loader, &printf));
            Samples::keep(&mut b.long, e, long_string(loader, &long));
            Samples::keep(&mut b.cpu, e, server_cpu(loader, &spin));
        }
    }
    println!(
        "standalone loader on the virtual gfx90a, {rounds} alternating rounds: best (median); CPU: highest (prints, asserts nothing)"
    );
    println!(
        "{:<34} {:>42} {:>42} {:>18} {:>18} {:>20}",
        "server",
        "puts round trip",
        "under load",
        "printf lines/s",
        "1 MiB %s",
        "server CPU, no RPC"
    );
    for ((name, loader), b) in loaders.iter().zip(&samples) {
        if !loader.exists() {
            println!("{name:<34} not staged ({})", loader.display());
            continue;
        }
        let cpu = sorted(b.cpu.iter().copied())
            .last()
            .map_or_else(|| "error".to_string(), |v| format!("{v:.1} % of a core"));
        println!(
            "{:<34} {:>42} {:>42} {:>18} {:>18} {:>20}",
            name,
            round_trips(&b.alone),
            round_trips(&b.loaded),
            best_and_median(b.lines.iter().copied(), true, |v| format!("{v:.0}")),
            best_and_median(b.long.iter().copied(), false, |v| format!("{v:.3} s")),
            cpu,
        );
        for e in &b.errors {
            println!("  {name}: {e}");
        }
    }
    // The two servers' ratio on the figures the issue compares.
    if let [llvm, ours] = &samples[..] {
        let ratio = |o: &[f64], l: &[f64], higher: bool| {
            let (o, l) = (sorted(o.iter().copied()), sorted(l.iter().copied()));
            match (median_of(&o), median_of(&l)) {
                (Some(o), Some(l)) if o > 0.0 && l > 0.0 => {
                    format!("{:.2}x", if higher { o / l } else { l / o })
                }
                _ => "-".to_string(),
            }
        };
        println!(
            "ours against LLVM 19's, medians (above 1: ours faster): printf lines/s {}, 1 MiB %s {}",
            ratio(&ours.lines, &llvm.lines, true),
            ratio(&ours.long, &llvm.long, false)
        );
    }
    Ok(())
}
