//! `cargo xtask demo`: from a fresh machine to a real OpenMP offload program
//! running through our plugin on the virtual gfx90a, checked against the host.
//!
//! Steps: install the system packages, build and stage the libraries, compile
//! `examples/stencil_heat.c` (a Jacobi heat stencil: `target data`, two kernels
//! per sweep, a max reduction for the residual) with clang-16 for gfx90a, run
//! it on the host and through our plugin on the virtual device with
//! `OMP_TARGET_OFFLOAD=MANDATORY`, and report the device found, the kernels
//! launched with their teams and threads, the bytes moved, the times, and PASS
//! or FAIL (identical output to the host's). Then a GPU program with its own
//! `main` runs through `amdhsa-loader` (see `device::loader_demo`).

use crate::run::{compile, run_captured, Device, Mode, Plugin, LLVM_BIN};
use crate::stage::workspace_root;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

/// `LIBOMPTARGET_INFO` bits: plugin kernel launches (0x10) and data transfers (0x20).
const INFO_FLAGS: &str = "48";

fn step<T>(
    n: usize,
    total: usize,
    what: &str,
    f: impl FnOnce() -> Result<T, String>,
) -> Result<T, String> {
    print!("[{n}/{total}] {what} ... ");
    let _ = std::io::stdout().flush();
    let t0 = Instant::now();
    let r = f();
    let dt = t0.elapsed().as_secs_f64();
    match &r {
        Ok(_) => println!("ok ({dt:.1} s)"),
        Err(_) => println!("failed ({dt:.1} s)"),
    }
    r
}

/// One kernel as libomptarget's info output reports its launches.
#[derive(Default)]
struct KernelStats {
    launches: usize,
    geometry: BTreeMap<(u64, u64, String), usize>,
}

/// What the info output says about a run.
#[derive(Default)]
struct Report {
    kernels: BTreeMap<String, KernelStats>,
    to_device: u64,
    from_device: u64,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(key)? + key.len();
    let rest = &line[start..];
    let end = rest
        .find(|c: char| c == ',' || c.is_whitespace())
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn parse_info(stderr: &str) -> Report {
    let mut r = Report::default();
    for line in stderr.lines() {
        if let Some(pos) = line.find("Launching kernel ") {
            // "Launching kernel NAME with B blocks and T threads in MODE mode"
            let words: Vec<&str> = line[pos..].split_whitespace().collect();
            if words.len() >= 11 {
                let name = words[2].to_string();
                let blocks = words[4].parse().unwrap_or(0);
                let threads = words[7].parse().unwrap_or(0);
                let mode = words[10].to_string();
                let k = r.kernels.entry(name).or_default();
                k.launches += 1;
                *k.geometry.entry((blocks, threads, mode)).or_default() += 1;
            }
        } else if line.contains("Copying data from host to device") {
            r.to_device += field(line, "Size=")
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
        } else if line.contains("Copying data from device to host") {
            r.from_device += field(line, "Size=")
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    r
}

fn device_description() -> String {
    let tool = std::path::Path::new(LLVM_BIN).join("llvm-omp-device-info");
    // LLVM 16's x86_64 nextgen plugin crashes in print_device_info, so let
    // libomptarget load the legacy plugins (ours answers as libomptarget.rtl.amdgpu.so).
    let env = [("LIBOMPTARGET_NEXTGEN_PLUGINS", "0")];
    let out = match run_captured(
        &tool,
        &[],
        Mode::Offload(Plugin::Ours, Device::Virtual),
        &env,
    ) {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) => return format!("(llvm-omp-device-info failed: {e})"),
    };
    // Matched case-insensitively (LLVM's legacy plugin capitalises the field names).
    let get = |key: &str| {
        out.lines()
            .map(str::trim_start)
            .find(|l| l.to_lowercase().starts_with(&key.to_lowercase()))
            .map(|l| l[key.len()..].trim().to_string())
    };
    match (
        get("Device Name:"),
        get("Product Name:"),
        get("Compute Units:"),
    ) {
        (Some(n), Some(p), Some(c)) => format!("{n} ({p}), {c} compute units"),
        _ => {
            "a gfx90a agent (llvm-omp-device-info printed no properties through our plugin)".into()
        }
    }
}

/// `cargo xtask demo`.
pub fn run_command(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("demo takes no arguments (got {a:?})"));
    }
    let src = workspace_root().join("examples/stencil_heat.c");
    println!(
        "omptarget-amdgpu demo: examples/stencil_heat.c through our plugin on the virtual gfx90a"
    );
    let total = 5;
    step(
        1,
        total,
        "installing the system packages it needs",
        crate::setup::ensure_packages,
    )?;
    step(
        2,
        total,
        "building and staging the plugin and the virtual device",
        || crate::stage::stage().map(|_| ()),
    )?;
    let binary = step(
        3,
        total,
        "compiling examples/stencil_heat.c with clang-16 for gfx90a",
        || compile(&src, "-O2"),
    )?;
    let t0 = Instant::now();
    let host = step(
        4,
        total,
        "running it on the host (OMP_TARGET_OFFLOAD=DISABLED)",
        || run_captured(&binary, &[], Mode::Host, &[]),
    )?;
    let host_time = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let dev = step(
        5,
        total,
        "running it through our plugin on the virtual gfx90a (MANDATORY)",
        || {
            run_captured(
                &binary,
                &[],
                Mode::Offload(Plugin::Ours, Device::Virtual),
                &[
                    ("LIBOMPTARGET_INFO", INFO_FLAGS),
                    ("OMP_TARGET_OFFLOAD", "MANDATORY"),
                ],
            )
        },
    )?;
    let dev_time = t0.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&dev.stderr);
    let report = parse_info(&stderr);
    println!();
    println!("device:        {}", device_description());
    let launches: usize = report.kernels.values().map(|k| k.launches).sum();
    println!(
        "kernels:       {launches} launches of {} kernels",
        report.kernels.len()
    );
    for (name, k) in &report.kernels {
        for ((blocks, threads, mode), n) in &k.geometry {
            println!("  {name}: {n} x ({blocks} teams x {threads} threads, {mode})");
        }
    }
    println!(
        "bytes moved:   {} host->device, {} device->host",
        report.to_device, report.from_device
    );
    println!(
        "times:         host {host_time:.3} s, virtual gfx90a {dev_time:.3} s (whole program runs)"
    );
    let same = host.status.success()
        && dev.status.success()
        && host.stdout == dev.stdout
        && !host.stdout.is_empty();
    let lines = String::from_utf8_lossy(&host.stdout).lines().count();
    if same {
        println!("result:        identical to the host's output ({lines} lines)");
        println!("PASS");
        crate::device::loader_demo()
    } else {
        println!("result:        differs from the host's output");
        println!(
            "--- host (exit {:?})\n{}",
            host.status.code(),
            String::from_utf8_lossy(&host.stdout)
        );
        println!(
            "--- virtual gfx90a (exit {:?})\n{}",
            dev.status.code(),
            String::from_utf8_lossy(&dev.stdout)
        );
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        println!(
            "--- last stderr lines of the device run\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
        println!("FAIL");
        Err("the device run did not reproduce the host's output".into())
    }
}

#[cfg(test)]
mod tests {
    use super::parse_info;

    #[test]
    fn parses_launches_and_transfers() {
        let text = "AMDGPU device 0 info: Launching kernel __omp_offloading_10_abc_main_l33 with 46 blocks and 256 threads in SPMD mode\n\
                    Libomptarget device 0 info: Copying data from host to device, HstPtr=0x1, TgtPtr=0x2, Size=24576, Name=u\n\
                    AMDGPU device 0 info: Launching kernel __omp_offloading_10_abc_main_l33 with 46 blocks and 256 threads in SPMD mode\n\
                    Libomptarget device 0 info: Copying data from device to host, TgtPtr=0x2, HstPtr=0x1, Size=8, Name=r\n";
        let r = parse_info(text);
        assert_eq!(r.to_device, 24576);
        assert_eq!(r.from_device, 8);
        let k = &r.kernels["__omp_offloading_10_abc_main_l33"];
        assert_eq!(k.launches, 2);
        assert_eq!(k.geometry[&(46, 256, "SPMD".to_string())], 2);
    }
}
