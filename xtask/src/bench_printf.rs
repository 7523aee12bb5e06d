//! `cargo xtask bench-printf [--baseline DIR]`: what `printf` in target
//! regions costs through our plugin and `libcgpu.a`, and what it costs
//! kernels that do not use it. Prints; asserts nothing.
//!
//! - host instructions per launch of a kernel of an image without the RPC
//!   client (the `bench` program's empty region, counted as `cargo xtask
//!   bench` counts them, under callgrind); with `--baseline DIR`, also
//!   through the plugin in `DIR` (a build without RPC support, e.g. the
//!   commit before it, staged under libomptarget's plugin names), and the
//!   change in percent;
//! - printf lines per second from 100 teams x 256 threads (one `printf`
//!   each; the output goes to /dev/null);
//! - the round trip of one `printf` from one lane: a region printing N
//!   lines from one thread minus a region looping N times, divided by N.

use crate::bench::{build, clean, instructions_per_launch, median, offload_env, output, values};
use crate::run::{cgpu_link_flags, Plugin, DEVICE_LIBS, LLVM_BIN, LLVM_LIB};
use crate::stage::{stage, target_dir, workspace_root, Staged};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// printf calls of the one-lane round-trip run.
const ROUND_TRIP_PRINTFS: usize = 2000;

pub fn run_command(args: &[String]) -> Result<(), String> {
    let baseline = match args {
        [] => None,
        [flag, dir] if flag == "--baseline" => Some(PathBuf::from(dir)),
        other => {
            return Err(format!(
                "usage: cargo xtask bench-printf [--baseline DIR] (got {other:?})"
            ))
        }
    };
    let staged = stage()?;
    let programs = build(&staged)?;

    eprintln!("bench-printf: callgrind, launches of a kernel without RPC");
    let ours = instructions_per_launch(&programs, &staged, Plugin::Ours)?;
    let base = match &baseline {
        Some(dir) => {
            let other = Staged {
                plugin_dir: dir.clone(),
                sim_dir: staged.sim_dir.clone(),
                bin_dir: staged.bin_dir.clone(),
            };
            Some(instructions_per_launch(&programs, &other, Plugin::Ours)?)
        }
        None => None,
    };

    let dir = target_dir().join("xtask-bench");
    let bin = dir.join("printf_bench");
    output(
        Command::new("clang-16")
            .env(
                "PATH",
                format!("{LLVM_BIN}:{}", std::env::var("PATH").unwrap_or_default()),
            )
            .args(["-fopenmp", "--offload-arch=gfx90a", "-O2"])
            .arg(format!("--rocm-device-lib-path={DEVICE_LIBS}"))
            .arg(workspace_root().join("benches/programs/printf_bench.c"))
            .arg("-o")
            .arg(&bin)
            .arg(format!("-Wl,-rpath,{LLVM_LIB}"))
            .args(cgpu_link_flags()),
    )?;
    let timed = |args: &[&str]| -> Result<String, String> {
        let mut cmd = Command::new(&bin);
        clean(&mut cmd).args(args).stdout(Stdio::null());
        for (k, v) in offload_env(&staged, Plugin::Ours) {
            cmd.env(k, v);
        }
        let out = cmd
            .output()
            .map_err(|e| format!("running {}: {e}", bin.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} {args:?} failed: {}",
                bin.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let mut lines = Vec::new();
    let mut round_trip = Vec::new();
    for r in 0..3 {
        eprintln!("bench-printf: printf runs, round {}/3", r + 1);
        lines.push(values(&timed(&["lines"])?, "printf_lines_per_s")?[0]);
        let n = ROUND_TRIP_PRINTFS.to_string();
        round_trip.push(values(&timed(&["roundtrip", &n])?, "printf_roundtrip_us")?[0]);
    }

    println!();
    println!("printf in target regions (our plugin, libcgpu.a, virtual gfx90a)");
    println!(
        "{:<60} {:>12.1}",
        "instructions per launch, kernel without RPC: plugin", ours.0
    );
    println!(
        "{:<60} {:>12.1}",
        "  + C/C++ runtime libs it calls",
        ours.0 + ours.2
    );
    if let Some(b) = base {
        println!(
            "{:<60} {:>12.1}",
            "baseline plugin (--baseline): plugin", b.0
        );
        println!(
            "{:<60} {:>12.1}",
            "  + C/C++ runtime libs it calls",
            b.0 + b.2
        );
        println!(
            "{:<60} {:>+11.2}%",
            "change, plugin + libs",
            ((ours.0 + ours.2) / (b.0 + b.2) - 1.0) * 100.0
        );
    }
    println!(
        "{:<60} {:>12.0}",
        "printf lines/s, 100 teams x 256 threads (median of 3)",
        median(&mut lines)
    );
    println!(
        "{:<60} {:>9.2} us",
        "round trip of one printf from one lane (median of 3)",
        median(&mut round_trip)
    );
    Ok(())
}
