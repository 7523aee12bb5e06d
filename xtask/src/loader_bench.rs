//! `cargo xtask loader-bench`: the standalone loader's benchmark on the
//! virtual gfx90a, for LLVM 19's RPC server (`llvm-rpc-oracle`) and ours
//! (`amdhsa-loader`). Each measurement runs in [`rounds`] rounds, the
//! servers taking turns, and each server keeps its best figure (and its
//! highest CPU use). It prints, asserts nothing:
//!
//! - the round trip of one `puts` from one lane (median, 10th and 90th
//!   percentiles over 500 calls, timed on the device with the 100 MHz
//!   `s_memrealtime` counter), in µs;
//! - the same round trip under load: lane 0 of workgroup 0 measures while
//!   every thread of 3 other workgroups of 64 prints [`LOAD_LINES`] lines;
//! - printf lines per second from 16384 threads (64 workgroups x 256), from
//!   the wall time of a run printing [`LINES_PER_THREAD`] lines per thread
//!   minus that of the same run printing none;
//! - one `printf("%s\n")` of a 1 MiB string from one lane, in seconds: the
//!   wall time of the run minus that of the same run with a 1-byte string;
//! - the server's CPU use while a kernel computes for 2 s without RPC: CPU
//!   time of the loader's threads other than the virtual device's own
//!   (`hsa-*`), read from `/proc/PID/task/*/stat`, over the wall time.

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

/// One server's figures: the best over the rounds.
#[derive(Default)]
struct Best {
    alone: Option<RoundTrip>,
    loaded: Option<RoundTrip>,
    lines: Option<f64>,
    long: Option<f64>,
    /// The highest CPU use seen (the worst case, not the best).
    cpu: Option<f64>,
    errors: Vec<String>,
}

impl Best {
    fn keep<T: Copy>(
        slot: &mut Option<T>,
        errors: &mut Vec<String>,
        r: Result<T, String>,
        better: impl Fn(&T, &T) -> bool,
    ) {
        match r {
            Ok(v) => {
                if slot.as_ref().is_none_or(|old| better(&v, old)) {
                    *slot = Some(v);
                }
            }
            Err(e) => errors.push(e),
        }
    }
}

/// Rounds of every measurement (`LOADER_BENCH_ROUNDS`, default 3): the
/// servers take turns, one round after another, and each keeps its best
/// figure (the machine's other load slows a run down, never up).
fn rounds() -> usize {
    std::env::var("LOADER_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3)
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

/// Seconds to print one 1 MiB string with `%s` from one lane.
fn long_string(loader: &Path, image: &Path) -> Result<f64, String> {
    let mib = (1u32 << 20).to_string();
    let with = wall_time(loader_command(loader, (1, 1), image, &[mib.as_str()]))?;
    let without = wall_time(loader_command(loader, (1, 1), image, &["1"]))?;
    Ok((with - without).max(0.0))
}

/// User + system clock ticks of the threads of `pid` whose name does not
/// start with `hsa-`.
fn server_ticks(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0;
    for t in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        // "tid (comm) state ..."; comm may hold spaces, so split at the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if stat[open + 1..close].starts_with("hsa-") {
            continue;
        }
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // After the comm: state is field 0, utime 11, stime 12.
        let utime = fields.get(11).and_then(|v| v.parse::<u64>().ok())?;
        let stime = fields.get(12).and_then(|v| v.parse::<u64>().ok())?;
        total += utime + stime;
    }
    Some(total)
}

/// Server CPU use in percent of one core while the spin kernel runs.
fn server_cpu(loader: &Path, image: &Path) -> Result<f64, String> {
    let mut child = loader_command(loader, (1, 1), image, &["2000"])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", loader.display()))?;
    // Skip the start-up (loading, the _begin kernel), then sample.
    std::thread::sleep(Duration::from_millis(300));
    let first = server_ticks(child.id());
    let t0 = Instant::now();
    let mut last = first;
    let mut t_last = t0;
    while child
        .try_wait()
        .map_err(|e| format!("waiting: {e}"))?
        .is_none()
    {
        std::thread::sleep(Duration::from_millis(50));
        if let Some(t) = server_ticks(child.id()) {
            last = Some(t);
            t_last = Instant::now();
        }
    }
    // /proc stat times are in USER_HZ, fixed at 100 per second on x86-64 Linux.
    let ticks_per_s = 100.0;
    match (first, last) {
        (Some(a), Some(b)) if t_last > t0 => {
            let cpu = (b.saturating_sub(a)) as f64 / ticks_per_s;
            Ok(100.0 * cpu / (t_last - t0).as_secs_f64())
        }
        _ => Err("the run ended before it could be sampled".into()),
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
    let mut best: Vec<Best> = loaders.iter().map(|_| Best::default()).collect();
    for _ in 0..rounds {
        for ((_, loader), b) in loaders.iter().zip(best.iter_mut()) {
            if !loader.exists() {
                continue;
            }
            let e = &mut b.errors;
            Best::keep(
                &mut b.alone,
                e,
                puts_round_trip(loader, &puts, false),
                |a, b| a.median < b.median,
            );
            Best::keep(
                &mut b.loaded,
                e,
                puts_round_trip(loader, &puts, true),
                |a, b| a.median < b.median,
            );
            Best::keep(&mut b.lines, e, printf_rate(loader, &printf), |a, b| a > b);
            Best::keep(&mut b.long, e, long_string(loader, &long), |a, b| a < b);
            Best::keep(&mut b.cpu, e, server_cpu(loader, &spin), |a, b| a > b);
        }
    }
    println!(
        "standalone loader on the virtual gfx90a, best of {rounds} alternating rounds (prints, asserts nothing)"
    );
    println!(
        "{:<34} {:>32} {:>32} {:>16} {:>14} {:>20}",
        "server",
        "puts round trip (median)",
        "under load (median)",
        "printf lines/s",
        "1 MiB %s",
        "server CPU, no RPC"
    );
    for ((name, loader), b) in loaders.iter().zip(&best) {
        if !loader.exists() {
            println!("{name:<34} not staged ({})", loader.display());
            continue;
        }
        let or_none = |v: Option<String>| v.unwrap_or_else(|| "error".to_string());
        println!(
            "{:<34} {:>32} {:>32} {:>16} {:>14} {:>20}",
            name,
            or_none(b.alone.map(|r| r.to_string())),
            or_none(b.loaded.map(|r| r.to_string())),
            or_none(b.lines.map(|v| format!("{v:.0}"))),
            or_none(b.long.map(|v| format!("{v:.2} s"))),
            or_none(b.cpu.map(|v| format!("{v:.1} % of a core"))),
        );
        for e in &b.errors {
            println!("  {name}: {e}");
        }
    }
    Ok(())
}
