//! End to end: every OpenMP program of `examples/` (at -O0 and -O3), run on the host
//! (`OMP_TARGET_OFFLOAD=DISABLED`) and through Debian's LLVM 16 C++ nextgen AMDGPU
//! plugin over the virtual device (`OMP_TARGET_OFFLOAD=MANDATORY`, this build's
//! `libhsa_runtime64.so` first on `LD_LIBRARY_PATH`), must print the same stdout and
//! exit the same way. The device run must show that the virtual runtime came up
//! (`HSA_SIM_DEBUG=1`) and that libomptarget launched kernels (`LIBOMPTARGET_INFO=1`).
//! Programs that use `omp critical` must instead stop with the trap reported.
//!
//! The test prints one status line per program and level. Knobs:
//! `CORPUS_ONLY=name[,name]` runs a subset, `CORPUS_TIMEOUT_SECS` (default 300) bounds
//! each run.

#[path = "../../isa/tests/omp_corpus/mod.rs"]
mod omp_corpus;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use omp_corpus::Expect;

/// The profile directory (target/debug or target/release) holding this build's cdylib.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

/// A folder with `libhsa-runtime64.so.1` and `libhsa-runtime64.so` linked to the
/// virtual device.
fn sim_dir() -> PathBuf {
    let lib = profile_dir().join("libhsa_runtime64.so");
    assert!(
        lib.exists(),
        "{} is missing: run `cargo build -p sim` first (`cargo xtask test` does)",
        lib.display()
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("corpus-sim-stage");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["libhsa-runtime64.so.1", "libhsa-runtime64.so"] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&lib, &link).expect("symlink");
    }
    dir
}

/// What a finished (or killed) run left behind.
struct RunOutput {
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// Runs `cmd` with a deadline; a run past it is killed and has `status == None`.
fn run_with_timeout(mut cmd: Command, timeout: Duration) -> RunOutput {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("program starts");
    // Drain both pipes on threads so a chatty program cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    RunOutput {
        status,
        stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into_owned(),
        elapsed: start.elapsed(),
    }
}

fn host_run(exe: &Path, timeout: Duration) -> RunOutput {
    let mut cmd = Command::new(exe);
    cmd.env("OMP_TARGET_OFFLOAD", "DISABLED")
        .env("LD_LIBRARY_PATH", "/usr/lib/llvm-16/lib");
    run_with_timeout(cmd, timeout)
}

fn device_run(exe: &Path, sim: &Path, timeout: Duration) -> RunOutput {
    let mut cmd = Command::new(exe);
    cmd.env("OMP_TARGET_OFFLOAD", "MANDATORY")
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:/usr/lib/llvm-16/lib", sim.display()),
        )
        .env("HSA_SIM_GPUS", "1")
        .env("HSA_SIM_DEBUG", "1")
        .env("LIBOMPTARGET_INFO", "1")
        .env_remove("LIBOMPTARGET_NEXTGEN_PLUGINS")
        .env_remove("LIBOMPTARGET_DEBUG");
    run_with_timeout(cmd, timeout)
}

fn describe(s: Option<ExitStatus>) -> String {
    match s {
        None => "timeout".into(),
        Some(s) => match s.code() {
            Some(c) => format!("exit {c}"),
            None => format!("{s}"),
        },
    }
}

/// The virtual device's or plugin's explanation of a failed run (first error line).
fn reason(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("ERROR") || l.contains("fatal error") || l.contains("error:"))
        .map(|l| {
            // Keep the part after the logger's prefix.
            let l = l.split("] ").last().unwrap_or(l);
            l.chars().take(220).collect()
        })
        .unwrap_or_else(|| {
            stderr
                .lines()
                .last()
                .unwrap_or("")
                .chars()
                .take(220)
                .collect()
        })
}

/// Judges one device run against the host run; `Ok(note)` or `Err(why)`.
fn judge(expect: Expect, host: &RunOutput, dev: &RunOutput) -> Result<String, String> {
    if dev.status.is_none() {
        return Err(format!("device run timed out after {:.0?}", dev.elapsed));
    }
    if !dev.stderr.contains("virtual gfx90a runtime up") {
        return Err(format!(
            "the virtual device did not start: {}",
            reason(&dev.stderr)
        ));
    }
    let launches = dev.stderr.matches("Entering OpenMP kernel").count();
    match expect {
        Expect::SameAsHost => {
            let code = dev.status.and_then(|s| s.code());
            if host.status.and_then(|s| s.code()) != Some(0) {
                return Err(format!(
                    "the host run failed ({}): {}",
                    describe(host.status),
                    host.stderr.trim()
                ));
            }
            if code != Some(0) {
                return Err(format!(
                    "{} after {launches} launch(es): {}",
                    describe(dev.status),
                    reason(&dev.stderr)
                ));
            }
            if dev.stdout != host.stdout {
                let diff: Vec<String> = host
                    .stdout
                    .lines()
                    .zip(dev.stdout.lines().chain(std::iter::repeat("<missing>")))
                    .filter(|(a, b)| a != b)
                    .take(3)
                    .map(|(a, b)| format!("host `{a}` device `{b}`"))
                    .collect();
                return Err(format!("stdout differs: {}", diff.join("; ")));
            }
            if launches == 0 {
                return Err("no kernel launch was reported by libomptarget".into());
            }
            Ok(format!("{launches} kernel launch(es)"))
        }
        Expect::Trap => {
            if dev.status.is_some_and(|s| s.success()) {
                return Err("exited successfully instead of reporting the trap".into());
            }
            let lower = dev.stderr.to_lowercase();
            if !lower.contains("s_trap") {
                return Err(format!(
                    "failed without naming the trap: {}",
                    reason(&dev.stderr)
                ));
            }
            // What was printed before the trapping kernel must match the host.
            if !host.stdout.starts_with(&dev.stdout) || dev.stdout.is_empty() {
                return Err(format!(
                    "stdout before the trap differs from the host's: {:?}",
                    dev.stdout
                ));
            }
            Ok(format!(
                "trap reported ({}) after {launches} launch(es)",
                describe(dev.status)
            ))
        }
    }
}

#[test]
fn corpus_runs_on_the_virtual_device_like_on_the_host() {
    let only: Option<Vec<String>> = std::env::var("CORPUS_ONLY")
        .ok()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let timeout = Duration::from_secs(
        std::env::var("CORPUS_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(300),
    );
    let sim = sim_dir();
    let builds: Vec<_> = omp_corpus::build_all(2)
        .into_iter()
        .filter(|(p, _, _)| match &only {
            Some(o) => o.contains(&p.name),
            None => true,
        })
        .collect();
    assert!(!builds.is_empty(), "no corpus program selected");

    // Two programs at a time (each device run also uses the device's worker threads).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((prog, opt, build)) = builds.get(i) else {
                    break;
                };
                let host = host_run(&build.exe, timeout);
                let dev = device_run(&build.exe, &sim, timeout);
                let verdict = judge(prog.expect, &host, &dev);
                let line = format!(
                    "{:<16} {opt}  {:>7.1?}  {}",
                    prog.name,
                    dev.elapsed,
                    match &verdict {
                        Ok(note) => format!("PASS  {note}"),
                        Err(why) => format!("FAIL  {why}"),
                    }
                );
                println!("{line}");
                results.lock().unwrap().push((i, line, verdict.is_ok()));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let passed = results.iter().filter(|r| r.2).count();
    println!("\nsummary: {passed} of {} runs pass", results.len());
    for (_, line, _) in &results {
        println!("{line}");
    }
    let failed: Vec<&String> = results.iter().filter(|r| !r.2).map(|(_, l, _)| l).collect();
    assert!(
        failed.is_empty(),
        "{} of {} corpus runs fail:\n{}",
        failed.len(),
        results.len(),
        failed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
