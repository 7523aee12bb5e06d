//! Shared machinery of the three-way tests (`corpus_three_way.rs`,
//! `concurrency.rs`): every OpenMP program of `examples/` is run on the host
//! (`OMP_TARGET_OFFLOAD=DISABLED`), through OUR plugin and through Debian's
//! LLVM 16 C++ nextgen plugin, both offloading runs over the same HSA runtime
//! (the virtual gfx90a, or Debian's ROCm runtime) with
//! `OMP_TARGET_OFFLOAD=MANDATORY`, and the three outcomes are compared.
//!
//! Every offloading run proves which plugin and which HSA runtime it used:
//! the dynamic loader's own log (`LD_DEBUG=files`, written to a file through
//! `LD_DEBUG_OUTPUT`) names the AMDGPU plugin and the `libhsa-runtime64`
//! whose initialisers ran, our plugin's `OMPTARGET_AMDGPU_ANNOUNCE=1` line
//! must be present in our run and absent from LLVM's (the variable is set
//! for both), the virtual device logs its start (`HSA_SIM_DEBUG=1`) and
//! libomptarget reports each kernel launch (`LIBOMPTARGET_INFO=1`).
//!
//! Libraries: with `OMPTARGET_STAGE_DIR` set (as `cargo xtask test` does),
//! its `plugin/` and `sim/` folders; otherwise this build's cdylibs
//! (`target/<profile>/libomptarget_amdgpu.so`, `libhsa_runtime64.so`, which
//! needs `cargo build -p sim`) linked under the names libomptarget and the
//! plugins look for.
//!
//! The corpus programs are built by the shared, cached corpus builder of
//! `isa/tests/omp_corpus` (same cache, same command lines, at -O0 and -O3).
#![allow(dead_code)]

#[path = "../../isa/tests/omp_corpus/mod.rs"]
pub mod omp_corpus;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use omp_corpus::{Build, Expect, Program, OPT_LEVELS};

/// libomptarget 16, LLVM's plugins and libomp.
pub const LLVM_LIB: &str = "/usr/lib/llvm-16/lib";
/// Debian's ROCm HSA runtime (package libhsa-runtime64-1).
pub const ROCM_HSA: &str = "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1";
/// The AMDGPU plugin libomptarget 16 loads first, LLVM's copy.
pub const LLVM_PLUGIN: &str = "/usr/lib/llvm-16/lib/libomptarget.rtl.amdgpu.nextgen.so";

/// Which of the three ways a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leg {
    /// `OMP_TARGET_OFFLOAD=DISABLED`: the reference.
    Host,
    /// Our plugin first on `LD_LIBRARY_PATH`.
    Ours,
    /// Debian's LLVM 16 C++ nextgen plugin.
    Llvm,
}

impl Leg {
    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Leg::Host => "host",
            Leg::Ours => "ours",
            Leg::Llvm => "llvm",
        }
    }
}

/// Which HSA runtime an offloading run sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hsa {
    /// The virtual device with this many gfx90a agents.
    Sim(usize),
    /// Debian's ROCm runtime (no GPU on this machine: `hsa_init` fails).
    Rocm,
}

/// The folders holding our plugin and the virtual device under their
/// installed names.
pub struct Libs {
    /// Holds `libomptarget.rtl.amdgpu.nextgen.so` and `libomptarget.rtl.amdgpu.so`.
    pub plugin: PathBuf,
    /// Holds `libhsa-runtime64.so.1` and `libhsa-runtime64.so`.
    pub sim: PathBuf,
}

fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

fn link_dir(target: &Path, dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    for name in names {
        let l = dir.join(name);
        let _ = std::fs::remove_file(&l);
        std::os::unix::fs::symlink(target, &l).expect("symlink");
    }
}

/// The libraries under test (made once per test binary).
pub fn libs() -> &'static Libs {
    static LIBS: OnceLock<Libs> = OnceLock::new();
    LIBS.get_or_init(|| {
        if let Some(stage) = std::env::var_os("OMPTARGET_STAGE_DIR") {
            let stage = PathBuf::from(stage);
            let libs = Libs {
                plugin: stage.join("plugin"),
                sim: stage.join("sim"),
            };
            for f in [
                libs.plugin.join("libomptarget.rtl.amdgpu.nextgen.so"),
                libs.sim.join("libhsa-runtime64.so.1"),
            ] {
                assert!(f.exists(), "OMPTARGET_STAGE_DIR lacks {}", f.display());
            }
            return libs;
        }
        let plugin = profile_dir().join("libomptarget_amdgpu.so");
        let sim = profile_dir().join("libhsa_runtime64.so");
        assert!(plugin.exists(), "{} is missing", plugin.display());
        assert!(
            sim.exists(),
            "{} is missing: run `cargo build -p sim` first (`cargo xtask test` does)",
            sim.display()
        );
        // One folder per test binary: a binary relinking them while another
        // one's program starts could make that program miss the library.
        let bin = std::env::current_exe()
            .ok()
            .and_then(|e| e.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("three-way-{bin}"));
        let libs = Libs {
            plugin: root.join("plugin"),
            sim: root.join("sim"),
        };
        link_dir(
            &plugin,
            &libs.plugin,
            &[
                "libomptarget.rtl.amdgpu.nextgen.so",
                "libomptarget.rtl.amdgpu.so",
            ],
        );
        link_dir(
            &sim,
            &libs.sim,
            &["libhsa-runtime64.so.1", "libhsa-runtime64.so"],
        );
        libs
    })
}

/// `examples/` of the workspace.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// A corpus program and how many virtual GPUs it wants.
#[derive(Clone, Debug)]
pub struct CorpusProgram {
    /// The program, as the shared corpus builder takes it.
    pub program: Program,
    /// `HSA_SIM_GPUS` for its offloading runs: 1, or what a
    /// `// HSA_SIM_GPUS=<n>` line of the source asks for.
    pub gpus: usize,
}

/// Every program of `examples/` that offloads (its source contains
/// `omp target`; `device_count.c` does not), sorted by name. A program whose
/// kernels use `omp critical` is expected to trap (LLVM 16 lowers it to
/// `__builtin_trap()` on AMDGPU).
pub fn corpus() -> Vec<CorpusProgram> {
    let mut v: Vec<CorpusProgram> = std::fs::read_dir(examples_dir())
        .expect("examples/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "cpp")))
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            if !text.contains("omp target") {
                return None;
            }
            let gpus = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("// HSA_SIM_GPUS="))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(1);
            Some(CorpusProgram {
                program: Program {
                    name: p.file_stem()?.to_string_lossy().into_owned(),
                    cxx: p.extension().and_then(|e| e.to_str()) == Some("cpp"),
                    expect: if text.contains("omp critical") {
                        Expect::Trap
                    } else {
                        Expect::SameAsHost
                    },
                    src: p,
                },
                gpus,
            })
        })
        .collect();
    v.sort_by(|a, b| a.program.name.cmp(&b.program.name));
    v
}

/// The corpus program called `name`.
pub fn corpus_program(name: &str) -> CorpusProgram {
    corpus()
        .into_iter()
        .find(|p| p.program.name == name)
        .unwrap_or_else(|| panic!("examples/{name}.c is not an offloading corpus program"))
}

/// Builds (or finds in the cache) `p` at `opt`.
pub fn build(p: &CorpusProgram, opt: &str) -> Build {
    omp_corpus::build(&p.program, opt)
}

/// What a finished (or killed) run left behind.
#[derive(Debug)]
pub struct RunOutput {
    /// Which way it ran.
    pub leg: Leg,
    /// `None` when it was killed at the deadline.
    pub status: Option<ExitStatus>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// Wall time.
    pub elapsed: Duration,
    /// Every shared object whose initialiser ran, from the loader's log
    /// (absolute paths as the loader opened them; empty for host runs).
    pub loaded: Vec<String>,
}

impl RunOutput {
    /// Exit status in words (`exit 0`, `signal 6`, `timeout`).
    pub fn describe(&self) -> String {
        match self.status {
            None => "timeout".into(),
            Some(s) => match s.code() {
                Some(c) => format!("exit {c}"),
                None => {
                    use std::os::unix::process::ExitStatusExt;
                    format!("signal {}", s.signal().unwrap_or(0))
                }
            },
        }
    }

    /// The exit code (None for a signal or a timeout).
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// Whether the loader ran the initialiser of the file `path` names
    /// (compared after resolving symbolic links: Debian's `/lib` is `/usr/lib`).
    pub fn loaded(&self, path: &Path) -> bool {
        let Ok(want) = std::fs::canonicalize(path) else {
            return false;
        };
        self.loaded
            .iter()
            .any(|l| std::fs::canonicalize(l).is_ok_and(|c| c == want))
    }

    /// Whether the loader ran the initialiser of anything inside `dir`.
    pub fn loaded_from(&self, dir: &Path) -> bool {
        let d = format!("{}/", dir.to_string_lossy());
        self.loaded.iter().any(|l| l.starts_with(&d))
    }

    /// Times libomptarget reported a kernel launch (`LIBOMPTARGET_INFO=1`).
    pub fn launches(&self) -> usize {
        self.stderr.matches("Entering OpenMP kernel").count()
    }
}

/// Runs `cmd` with a deadline; a run past it is killed and has `status == None`.
pub fn run_with_timeout(leg: Leg, mut cmd: Command, timeout: Duration) -> RunOutput {
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
        std::thread::sleep(Duration::from_millis(5));
    };
    RunOutput {
        leg,
        status,
        stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into_owned(),
        elapsed: start.elapsed(),
        loaded: Vec::new(),
    }
}

/// Per-run deadline: `CORPUS_TIMEOUT_SECS`, default 120 s.
pub fn timeout() -> Duration {
    Duration::from_secs(
        std::env::var("CORPUS_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(120),
    )
}

/// How an offloading run is configured.
#[derive(Clone, Copy, Debug)]
pub struct OffloadEnv<'a> {
    /// The HSA runtime.
    pub hsa: Hsa,
    /// `OMP_TARGET_OFFLOAD=MANDATORY` (else the variable is unset: default).
    pub mandatory: bool,
    /// More variables.
    pub extra: &'a [(&'a str, &'a str)],
}

/// Set for LLVM's plugin only: LLVM 16's C++ AMDGPU plugin builds each
/// device's memory pool objects with its plugin-wide `llvm::BumpPtrAllocator`,
/// which has no lock, so two devices initialized at once (the first regions on
/// both devices starting together) can share one pool object and one device
/// then allocates from the other's memory; its kernels fault
/// (`HSA_AMD_GPU_MEMORY_FAULT_EVENT ... PAGE_NOT_PRESENT`) or allocation fails
/// (`No memory pool for the specified allocation kind`). Programs that use two
/// devices concurrently (`examples/multi_device.c`) then initialize them one
/// after the other first. Our plugin always runs without it.
pub const LLVM16_CONCURRENT_DEVICE_INIT: &str =
    "OMPTARGET_WORKAROUND_LLVM16_CONCURRENT_DEVICE_INIT";

/// Programs whose host run (the oracle) goes without libomp's hidden helper
/// threads, because of a bug of libomp 16: its host fallback of `target
/// nowait` tasks created by several threads at once dies on its own assertion
/// (`kmp_tasking.cpp(4136): task_team != __null`, from
/// `__kmpc_omp_task_with_deps` handing the task to a hidden helper thread) in
/// 6 to 13 of 30 runs of `concurrent_threads.c` here, and in 0 of 30 with
/// `LIBOMP_USE_HIDDEN_HELPER_TASK=0`, which prints the same output (the tasks
/// then run as ordinary tasks). `async_depend.c` (`target nowait` tasks with dependences, one
/// thread) hits the same assertion in 4 and 6 of 100 host runs, and in 0 of
/// 100 without the helpers, with the same output. The plugin legs over ROCm
/// without a GPU are host fallbacks and get the same setting: there
/// `concurrent_threads` -O3 through LLVM's plugin died on that assertion in 35 of
/// 100 runs with the helpers and 0 of 100 without. Not set for every program: it breaks others
/// (`generic_teams.c`: `kmp_runtime.cpp(4512)`). The same list is in
/// `xtask/src/stress.rs` (another crate).
const HOST_WITHOUT_HIDDEN_HELPERS: &[&str] = &["concurrent_threads", "async_depend"];

/// Runs `exe` one of the three ways. `env` is ignored for the host run.
pub fn run_leg(exe: &Path, leg: Leg, env: OffloadEnv<'_>, timeout: Duration) -> RunOutput {
    let mut cmd = Command::new(exe);
    for v in [
        "LIBOMPTARGET_NEXTGEN_PLUGINS",
        "LIBOMPTARGET_DEBUG",
        "LIBOMPTARGET_INFO",
        "OMPTARGET_AMDGPU_HSA_LIBRARY",
        "OMP_TARGET_OFFLOAD",
        "HSA_SIM_DEBUG",
        "RUST_LOG",
        "LD_DEBUG",
        LLVM16_CONCURRENT_DEVICE_INIT,
    ] {
        cmd.env_remove(v);
    }
    // Corpus builds live in `<program><opt>-<hash>/` (omp_corpus::build).
    let dir = exe
        .parent()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let named = |p: &&str| dir.strip_prefix(p).is_some_and(|r| r.starts_with("-O"));
    // Over ROCm without a GPU every region falls back to the host, so a plugin
    // leg there meets the host's libomp bug as the host run does.
    if (leg == Leg::Host || env.hsa == Hsa::Rocm) && HOST_WITHOUT_HIDDEN_HELPERS.iter().any(named) {
        cmd.env("LIBOMP_USE_HIDDEN_HELPER_TASK", "0");
    }
    if leg == Leg::Host {
        cmd.env("OMP_TARGET_OFFLOAD", "DISABLED")
            .env("LD_LIBRARY_PATH", LLVM_LIB);
        return run_with_timeout(leg, cmd, timeout);
    }
    let libs = libs();
    let mut path: Vec<String> = Vec::new();
    if leg == Leg::Ours {
        path.push(libs.plugin.display().to_string());
    } else {
        // The one LLVM 16 bug the tests work around, by name (see the constant).
        cmd.env(LLVM16_CONCURRENT_DEVICE_INIT, "1");
    }
    if let Hsa::Sim(n) = env.hsa {
        path.push(libs.sim.display().to_string());
        cmd.env("HSA_SIM_GPUS", n.to_string())
            .env("HSA_SIM_DEBUG", "1");
    }
    path.push(LLVM_LIB.into());
    // The loader's log goes to `<prefix>.<pid>`, away from the program's stderr.
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let logs = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("three-way-ld");
    std::fs::create_dir_all(&logs).unwrap();
    let prefix = format!(
        "{}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        leg.name()
    );
    cmd.env("LD_LIBRARY_PATH", path.join(":"))
        .env("OMPTARGET_AMDGPU_ANNOUNCE", "1")
        .env("LIBOMPTARGET_INFO", "1")
        .env("LD_DEBUG", "files")
        .env("LD_DEBUG_OUTPUT", logs.join(&prefix));
    if env.mandatory {
        cmd.env("OMP_TARGET_OFFLOAD", "MANDATORY");
    }
    for (k, v) in env.extra {
        cmd.env(k, v);
    }
    let mut out = run_with_timeout(leg, cmd, timeout);
    let dot = format!("{prefix}.");
    for e in std::fs::read_dir(&logs).unwrap().flatten() {
        if !e.file_name().to_string_lossy().starts_with(&dot) {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        out.loaded.extend(
            text.lines()
                .filter_map(|l| l.split_once("calling init: "))
                .map(|(_, p)| p.trim().to_string()),
        );
        let _ = std::fs::remove_file(e.path());
    }
    out
}

/// The announcement our plugin prints with `OMPTARGET_AMDGPU_ANNOUNCE=1`.
pub fn announcement(devices: usize) -> String {
    format!("omptarget-amdgpu: Rust AMDGPU plugin initialised with {devices} device(s)")
}

/// Checks that an offloading run used the plugin and HSA runtime it was
/// meant to: `Err(why)` otherwise.
pub fn prove_plugin(run: &RunOutput, hsa: Hsa) -> Result<(), String> {
    let libs = libs();
    let ours_loaded = run.loaded_from(&libs.plugin);
    let llvm_loaded = run.loaded(Path::new(LLVM_PLUGIN));
    let devices = match hsa {
        Hsa::Sim(n) => n,
        Hsa::Rocm => 0,
    };
    match run.leg {
        Leg::Host => return Ok(()),
        Leg::Ours => {
            if !ours_loaded {
                return Err(format!(
                    "our plugin was not loaded from {} (loader log: {:?})",
                    libs.plugin.display(),
                    run.loaded
                ));
            }
            if llvm_loaded {
                return Err("LLVM's AMDGPU plugin was loaded too".into());
            }
            if !run.stderr.contains(&announcement(devices)) {
                return Err(format!(
                    "our plugin did not announce {devices} device(s): {}",
                    first_error(&run.stderr)
                ));
            }
        }
        Leg::Llvm => {
            if ours_loaded || run.stderr.contains("omptarget-amdgpu: Rust AMDGPU plugin") {
                return Err("our plugin was loaded in LLVM's run".into());
            }
            if !llvm_loaded {
                return Err(format!(
                    "LLVM's plugin {LLVM_PLUGIN} was not loaded (loader log: {:?})",
                    run.loaded
                ));
            }
        }
    }
    match hsa {
        Hsa::Sim(n) => {
            if !run.loaded_from(&libs.sim) {
                return Err(format!(
                    "the virtual device was not loaded from {}",
                    libs.sim.display()
                ));
            }
            if !run
                .stderr
                .contains(&format!("virtual gfx90a runtime up: {n} GPU agent(s)"))
            {
                return Err(format!(
                    "the virtual device did not start with {n} GPU(s): {}",
                    first_error(&run.stderr)
                ));
            }
        }
        Hsa::Rocm => {
            if !run.loaded(Path::new(ROCM_HSA)) || run.loaded_from(&libs.sim) {
                return Err(format!(
                    "ROCm's {ROCM_HSA} was not the HSA runtime loaded: {:?}",
                    run.loaded
                ));
            }
        }
    }
    Ok(())
}

/// The first line of `stderr` explaining a failure (or its last line).
pub fn first_error(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| {
            l.contains("ERROR")
                || l.contains("fatal error")
                || l.contains("error:")
                || l.contains("failed")
        })
        .or_else(|| stderr.lines().last())
        .map(|l| {
            l.split("] ")
                .last()
                .unwrap_or(l)
                .chars()
                .take(200)
                .collect()
        })
        .unwrap_or_default()
}

/// Judges one offloading run over the virtual device against the host run:
/// `Ok(note)` or `Err(why)`.
pub fn judge(
    expect: Expect,
    hsa: Hsa,
    host: &RunOutput,
    dev: &RunOutput,
) -> Result<String, String> {
    if host.code() != Some(0) {
        return Err(format!(
            "the host run failed ({}): {}",
            host.describe(),
            first_error(&host.stderr)
        ));
    }
    if dev.status.is_none() {
        return Err(format!("timed out after {:.0?}", dev.elapsed));
    }
    prove_plugin(dev, hsa)?;
    let launches = dev.launches();
    match expect {
        Expect::SameAsHost => {
            if dev.code() != Some(0) {
                return Err(format!(
                    "{} after {launches} launch(es): {}",
                    dev.describe(),
                    first_error(&dev.stderr)
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
                return Err("libomptarget reported no kernel launch".into());
            }
            Ok(format!("{launches} launches"))
        }
        Expect::Trap => {
            if dev.status.is_some_and(|s| s.success()) {
                return Err("exited successfully instead of reporting the trap".into());
            }
            if !dev.stderr.to_lowercase().contains("s_trap") {
                return Err(format!(
                    "failed without naming the trap: {}",
                    first_error(&dev.stderr)
                ));
            }
            // What was printed before the trapping kernel must match the host.
            if dev.stdout.is_empty() || !host.stdout.starts_with(&dev.stdout) {
                return Err(format!(
                    "stdout before the trap differs from the host's: {:?}",
                    dev.stdout
                ));
            }
            Ok(format!("trap, {}", dev.describe()))
        }
    }
}

/// One row of a three-way table.
#[derive(Debug)]
pub struct Row {
    /// Program name.
    pub name: String,
    /// `-O0` or `-O3`.
    pub opt: String,
    /// Our verdict.
    pub ours: Result<String, String>,
    /// LLVM's verdict.
    pub llvm: Result<String, String>,
    /// Wall times of host, ours, llvm.
    pub times: [Duration; 3],
}

impl Row {
    /// Both plugins pass, and agree with each other.
    pub fn pass(&self) -> bool {
        self.ours.is_ok() && self.llvm.is_ok()
    }

    /// The row as a table line.
    pub fn line(&self) -> String {
        let v = |r: &Result<String, String>| match r {
            Ok(_) => "PASS".to_string(),
            Err(_) => "FAIL".to_string(),
        };
        let mut s = format!(
            "{:<20} {:<4} {:<5} {:<5} {:>6.2}s {:>6.2}s {:>6.2}s",
            self.name,
            self.opt,
            v(&self.ours),
            v(&self.llvm),
            self.times[0].as_secs_f64(),
            self.times[1].as_secs_f64(),
            self.times[2].as_secs_f64()
        );
        for (who, r) in [("ours", &self.ours), ("llvm", &self.llvm)] {
            match r {
                Ok(note) => s.push_str(&format!("  {who}: {note}")),
                Err(why) => s.push_str(&format!("  {who}: {why}")),
            }
        }
        s
    }
}

/// The table's header line.
pub const HEADER: &str = "program              opt  ours  llvm    host t  ours t  llvm t  notes";

/// Runs `exe` three ways over the virtual device with `gpus` GPUs and judges
/// both offloading runs against the host run. When both plugins exit with a
/// code, the codes must agree too.
pub fn three_way(p: &CorpusProgram, opt: &str, exe: &Path, extra: &[(&str, &str)]) -> Row {
    let t = timeout();
    let hsa = Hsa::Sim(p.gpus);
    let env = OffloadEnv {
        hsa,
        mandatory: true,
        extra,
    };
    let host = run_leg(exe, Leg::Host, env, t);
    let ours_run = run_leg(exe, Leg::Ours, env, t);
    let llvm_run = run_leg(exe, Leg::Llvm, env, t);
    let mut ours = judge(p.program.expect, hsa, &host, &ours_run);
    let llvm = judge(p.program.expect, hsa, &host, &llvm_run);
    if ours.is_ok() && llvm.is_ok() && p.program.expect == Expect::SameAsHost {
        // Both equal the host's stdout, hence each other's; exit codes are 0.
        debug_assert_eq!(ours_run.stdout, llvm_run.stdout);
    }
    if ours.is_ok() && llvm.is_ok() && ours_run.code() != llvm_run.code() {
        ours = Err(format!(
            "exit status {} differs from LLVM's {}",
            ours_run.describe(),
            llvm_run.describe()
        ));
    }
    Row {
        name: p.program.name.clone(),
        opt: opt.to_string(),
        ours,
        llvm,
        times: [host.elapsed, ours_run.elapsed, llvm_run.elapsed],
    }
}
