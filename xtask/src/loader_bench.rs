//! `cargo xtask loader-bench`: the standalone loader's benchmark on the
//! virtual gfx90a, for LLVM 19's RPC server (`llvm-rpc-oracle`) and ours
//! (`amdhsa-loader`). It prints, asserts nothing:
//!
//! - the round trip of one `puts` from one lane (median, 10th and 90th
//!   percentiles over 500 calls, timed on the device with the 100 MHz
//!   `s_memrealtime` counter), in µs;
//! - the same round trip under load: lane 0 of workgroup 0 measures while
//!   every thread of 3 other workgroups of 64 prints [`LOAD_LINES`] lines;
//! - printf lines per second from 16384 threads (64 workgroups x 256), from
//!   the wall time of a run printing one line per thread minus that of the
//!   same run printing none;
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
fn puts_round_trip(loader: &Path, image: &Path, load: bool) -> Result<String, String> {
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
    Ok(format!("{median:.1} µs (p10 {p10:.1}, p90 {p90:.1})"))
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

/// printf lines per second from 64 x 256 threads.
fn printf_rate(loader: &Path, image: &Path) -> Result<f64, String> {
    let grid = (256, 64);
    let with = wall_time(loader_command(loader, grid, image, &["1"]))?;
    let without = wall_time(loader_command(loader, grid, image, &["0"]))?;
    Ok(16384.0 / (with - without).max(1e-6))
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
    println!("standalone loader on the virtual gfx90a (prints, asserts nothing)");
    println!(
        "{:<34} {:>32} {:>32} {:>16} {:>14} {:>20}",
        "server",
        "puts round trip (median)",
        "under load (median)",
        "printf lines/s",
        "1 MiB %s",
        "server CPU, no RPC"
    );
    for (name, loader) in loaders {
        if !loader.exists() {
            println!("{name:<34} not staged ({})", loader.display());
            continue;
        }
        let show = |r: Result<f64, String>, unit: &str| match r {
            Ok(v) => format!("{v:.1} {unit}"),
            Err(e) => format!("error: {e}"),
        };
        let rate = printf_rate(&loader, &printf).map(|r| r.round());
        println!(
            "{:<34} {:>32} {:>32} {:>16} {:>14} {:>20}",
            name,
            puts_round_trip(&loader, &puts, false).unwrap_or_else(|e| format!("error: {e}")),
            puts_round_trip(&loader, &puts, true).unwrap_or_else(|e| format!("error: {e}")),
            match rate {
                Ok(v) => format!("{v:.0}"),
                Err(e) => format!("error: {e}"),
            },
            show(long_string(&loader, &long), "s"),
            show(server_cpu(&loader, &spin), "% of a core"),
        );
    }
    Ok(())
}
