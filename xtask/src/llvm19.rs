//! LLVM 19 as a second toolchain for the virtual gfx90a: clang-19 programs
//! run through LLVM 19's own libomptarget, whose AMDGPU plugin is built in
//! and dlopens `libhsa-runtime64.so` (the virtual device, from
//! `target/stage/sim`).
//!
//! [`ensure`] prepares everything, each step skipped when its output exists:
//! - the system packages of [`PACKAGES`];
//! - Debian's `libomp5-19` and `libomp-19-dev` unpacked under
//!   `target/llvm19/root/` (`apt-get download` + `dpkg -x`), never
//!   installed: they conflict with `libomp-16-dev`. libomptarget 19, libomp
//!   19, the device runtime and `omp.h` come from there;
//! - the device library `libcgpu-amdgpu.a` (`device/omp19/`, the part of
//!   LLVM's GPU libc Debian's LLVM 19 device runtime expects: `printf`,
//!   `fprintf`, `puts`, `malloc`, ...), staged in
//!   `target/stage/device/llvm19/lib/` and linked by every compile here;
//! - the JIT preload `libamdgpu-jit-init.so` (`device/omp19/amdgpu_jit_init.c`:
//!   Debian's libomptarget 19 never registers the AMDGPU target for its JIT).
//!
//! Compiles at `-O0` work around llvm/llvm-project#65077 (clang-19's
//! `clang-linker-wrapper` crashes in "Function register usage analysis"
//! when it links device code at -O0): the link runs the device LTO at O2
//! (`-Wl,--opt-level=O2`), the compile stays at -O0.

use crate::cmd::{mkdir, run};
use crate::stage::{target_dir, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::SystemTime;

/// The system packages of the LLVM 19 toolchain (Debian bookworm).
pub const PACKAGES: &[&str] = &[
    "clang-19",
    "lld-19",
    "llvm-19",
    "llvm-19-tools",
    "rocm-device-libs",
    // lit's per-test time limit (`--timeout`) needs it.
    "python3-psutil",
];

/// The packages unpacked privately under `target/llvm19/root/`.
const PRIVATE_PACKAGES: &[&str] = &["libomp5-19", "libomp-19-dev"];

/// LLVM 19's tools (Debian's layout).
pub const BIN: &str = "/usr/lib/llvm-19/bin";

/// The wrapper's option that sets the device LTO level (see the module doc).
pub const O0_LINK_WORKAROUND: &str = "-Wl,--opt-level=O2";

/// The name the device library is linked by (`-lcgpu-amdgpu`): LLVM's own
/// GPU libc archive name, which LLVM 19's offload lit configuration links.
pub const DEVICE_LIBRARY: &str = "cgpu-amdgpu";

/// Sources of the device library under `device/omp19/`, one archive member
/// each.
const DEVICE_MEMBERS: &[&str] = &["client", "printf", "puts", "malloc", "host_call", "assert"];

/// What [`ensure`] prepared.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// `libomptarget.so.19.1`, `libomp.so.5`, `libomptarget.devicertl.a`.
    pub lib: PathBuf,
    /// `omp.h` and the other OpenMP headers of LLVM 19.
    pub include: PathBuf,
    /// The directory of `libcgpu-amdgpu.a`.
    pub device_lib: PathBuf,
    /// The JIT preload (see the module doc).
    pub jit_preload: PathBuf,
}

fn root() -> PathBuf {
    target_dir().join("llvm19")
}

/// Unpacks [`PRIVATE_PACKAGES`] under `target/llvm19/root/` (once).
fn unpack() -> Result<PathBuf, String> {
    let root = root().join("root");
    let lib = root.join("usr/lib/llvm-19/lib");
    let marker = root.join(".unpacked");
    if marker.exists() && lib.join("libomptarget.so.19.1").exists() {
        return Ok(lib);
    }
    let debs = self::root().join("debs");
    let _ = std::fs::remove_dir_all(&debs);
    let _ = std::fs::remove_dir_all(&root);
    mkdir(&debs)?;
    mkdir(&root)?;
    crate::setup::step(
        &format!("apt-get download {}", PRIVATE_PACKAGES.join(" ")),
        Command::new("apt-get")
            .current_dir(&debs)
            .args(["download", "-q"])
            .args(PRIVATE_PACKAGES),
    )?;
    let files = std::fs::read_dir(&debs)
        .map_err(|e| format!("reading {}: {e}", debs.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect::<Vec<_>>();
    if files.len() != PRIVATE_PACKAGES.len() {
        return Err(format!(
            "apt-get download left {} .deb files in {}, expected {}",
            files.len(),
            debs.display(),
            PRIVATE_PACKAGES.len()
        ));
    }
    for deb in &files {
        crate::setup::step(
            &format!(
                "unpacking {} under target/llvm19/root (not installed)",
                deb.file_name().and_then(|n| n.to_str()).unwrap_or("?")
            ),
            Command::new("dpkg-deb").arg("-x").arg(deb).arg(&root),
        )?;
    }
    if !lib.join("libomptarget.so.19.1").exists() {
        return Err(format!("no libomptarget.so.19.1 in {}", lib.display()));
    }
    std::fs::write(&marker, b"").map_err(|e| format!("writing {}: {e}", marker.display()))?;
    let _ = std::fs::remove_dir_all(&debs);
    Ok(lib)
}

fn modified(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Whether `out` exists and is newer than every one of `inputs`.
fn fresh(out: &Path, inputs: &[PathBuf]) -> bool {
    let Some(t) = modified(out) else {
        return false;
    };
    inputs.iter().all(|i| modified(i).is_some_and(|m| m <= t))
}

/// Builds `libcgpu-amdgpu.a` when a source is newer than it.
///
/// Each member is compiled as plain C for `amdgcn-amd-amdhsa` gfx90a (LLVM
/// bitcode, linked by the program's device LTO), packaged with
/// `clang-offload-packager-19` and embedded in an empty host object, as
/// LLVM's libc packages its GPU archive
/// (`libc/cmake/modules/LLVMLibCLibraryRules.cmake`). Compiling them as
/// OpenMP instead would let clang put their escaping locals in the OpenMP
/// runtime's LDS stack (`__kmpc_alloc_shared`), which a kernel without LDS,
/// such as the `amdgcn.device.init` kernel of global constructors, lacks.
fn build_device_library() -> Result<PathBuf, String> {
    let src = workspace_root().join("device");
    let out_dir = target_dir().join("stage/device/llvm19/lib");
    let archive = out_dir.join(format!("lib{DEVICE_LIBRARY}.a"));
    let mut inputs: Vec<PathBuf> = DEVICE_MEMBERS
        .iter()
        .map(|m| src.join(format!("omp19/{m}.c")))
        .collect();
    inputs.extend([
        src.join("omp19/cgpu19.h"),
        src.join("src/rpc.c"),
        src.join("src/rpc.h"),
    ]);
    if fresh(&archive, &inputs) {
        return Ok(out_dir);
    }
    let build = target_dir().join("device-build/llvm19");
    mkdir(&build)?;
    mkdir(&out_dir)?;
    let mut objects = Vec::new();
    for m in DEVICE_MEMBERS {
        let bc = build.join(format!("{m}.bc"));
        let packaged = build.join(format!("{m}.gpubin"));
        let obj = build.join(format!("{m}.o"));
        run(Command::new("clang-19")
            .args(crate::device::DEVICE_CFLAGS)
            .arg("-c")
            .arg(src.join(format!("omp19/{m}.c")))
            .arg("-o")
            .arg(&bc))?;
        run(Command::new("clang-offload-packager-19")
            .arg("-o")
            .arg(&packaged)
            .arg(format!(
                "--image=file={},arch=gfx90a,triple=amdgcn-amd-amdhsa,kind=openmp",
                bc.display()
            )))?;
        run(Command::new("clang-19")
            .args(["-c", "-x", "c", "/dev/null", "-Xclang"])
            .arg(format!("-fembed-offload-object={}", packaged.display()))
            .arg("-o")
            .arg(&obj))?;
        objects.push(obj);
    }
    let tmp = build.join(format!("lib{DEVICE_LIBRARY}.a"));
    let _ = std::fs::remove_file(&tmp);
    run(Command::new("llvm-ar-19")
        .arg("rcs")
        .arg(&tmp)
        .args(&objects))?;
    std::fs::copy(&tmp, &archive)
        .map_err(|e| format!("copying {} to {}: {e}", tmp.display(), archive.display()))?;
    Ok(out_dir)
}

/// Builds the JIT preload when its source is newer than it.
fn build_jit_preload(out_dir: &Path) -> Result<PathBuf, String> {
    let src = workspace_root().join("device/omp19/amdgpu_jit_init.c");
    let out = out_dir.join("libamdgpu-jit-init.so");
    if fresh(&out, std::slice::from_ref(&src)) {
        return Ok(out);
    }
    run(Command::new("clang-19")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .arg("-l:libLLVM.so.19.1"))?;
    Ok(out)
}

/// Installs, unpacks and builds what LLVM 19 programs need (see the module
/// doc); the virtual device itself comes from `cargo xtask stage`.
///
/// Errors: a failed package step, download or build, with its message.
pub fn ensure() -> Result<Toolchain, String> {
    crate::setup::ensure(PACKAGES)?;
    let lib = unpack()?;
    let device_lib = build_device_library()?;
    let jit_preload = build_jit_preload(&device_lib)?;
    Ok(Toolchain {
        include: lib.join("clang/19/include"),
        lib,
        device_lib,
        jit_preload,
    })
}

/// `cargo xtask setup --llvm 19`.
pub fn setup_command(args: &[String]) -> Result<(), String> {
    match args {
        [flag, v] if flag == "--llvm" && v == "19" => {}
        _ => {
            return Err(format!(
                "usage: cargo xtask setup [--llvm 19] (got {args:?})"
            ))
        }
    }
    crate::setup::ensure_packages()?;
    let tc = ensure()?;
    eprintln!(
        "setup: LLVM 19 ready: libomptarget in {}, libcgpu-amdgpu.a in {}",
        tc.lib.display(),
        tc.device_lib.display()
    );
    Ok(())
}

/// Whether `opt` is an optimisation flag that leaves the device link at -O0.
fn links_at_o0(opt: &str) -> bool {
    matches!(opt, "-O0" | "")
}

/// The clang-19 command line that compiles and links `src` into `out`.
pub fn compile_command(tc: &Toolchain, src: &Path, opt: &str, out: &Path) -> Command {
    let cpp = matches!(
        src.extension().and_then(|e| e.to_str()),
        Some("cpp" | "cc" | "cxx")
    );
    let mut c = Command::new(if cpp { "clang++-19" } else { "clang-19" });
    c.env(
        "PATH",
        format!("{BIN}:{}", std::env::var("PATH").unwrap_or_default()),
    )
    .args(["-fopenmp", "--offload-arch=gfx90a"])
    .arg(format!(
        "--rocm-device-lib-path={}",
        crate::run::DEVICE_LIBS
    ))
    .arg(format!("-L{}", tc.lib.display()))
    .arg("-idirafter")
    .arg(&tc.include)
    .arg(format!("-Wl,-rpath,{}", tc.lib.display()))
    .arg(opt)
    .arg(src)
    .arg("-o")
    .arg(out)
    .arg(format!("-L{}", tc.device_lib.display()))
    .arg(format!("-l{DEVICE_LIBRARY}"));
    if !cpp {
        c.arg("-lm");
    }
    if links_at_o0(opt) {
        c.arg(O0_LINK_WORKAROUND);
    }
    c
}

/// Compiles `src` at `opt` into `dir` (`<stem><opt>-llvm19`).
///
/// Errors: clang-19 fails (its stderr in the message).
pub fn compile(tc: &Toolchain, src: &Path, opt: &str, dir: &Path) -> Result<PathBuf, String> {
    let stem = src
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("the source has no file name")?;
    mkdir(dir)?;
    let out = dir.join(format!("{stem}{opt}-llvm19"));
    let output = compile_command(tc, src, opt, &out)
        .output()
        .map_err(|e| format!("cannot run clang-19: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "clang-19 failed on {}:\n{}",
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(out)
}

/// [`compile`] through the LLVM 16 lit suite's compile cache
/// (`target/lit/clang-cache.py`, keyed on the arguments and the bytes of
/// every file argument), into `target/llvm19/cache`: the checks of `cargo
/// xtask test` compile a program again only when it, its flags or the
/// device library changed (the library is named by its path here, so its
/// bytes are in the key).
fn compile_cached(tc: &Toolchain, src: &Path, opt: &str, dir: &Path) -> Result<PathBuf, String> {
    let stem = src
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("the source has no file name")?;
    mkdir(dir)?;
    let out = dir.join(format!("{stem}{opt}-llvm19"));
    let direct = compile_command(tc, src, opt, &out);
    let library = format!("-l{DEVICE_LIBRARY}");
    let archive = tc.device_lib.join(format!("lib{DEVICE_LIBRARY}.a"));
    let mut cmd = Command::new("python3");
    cmd.arg(crate::lit::write_cache_wrapper()?)
        .arg(target_dir().join("llvm19/cache"))
        .arg(direct.get_program());
    for a in direct.get_args() {
        if a.to_str() == Some(library.as_str()) {
            cmd.arg(&archive);
        } else {
            cmd.arg(a);
        }
    }
    for (k, v) in direct.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run clang-19 through the cache: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "clang-19 failed on {}:\n{}",
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(out)
}

/// The command that runs `binary` through LLVM 19's libomptarget on the
/// virtual gfx90a (`host`: with `OMP_TARGET_OFFLOAD=DISABLED` instead).
pub fn command(tc: &Toolchain, binary: &Path, args: &[String], host: bool) -> Command {
    let mut cmd = Command::new(binary);
    cmd.args(args);
    environment(tc, &mut cmd, host);
    cmd
}

/// Seconds a checked run ([`check_examples`], [`check_printf`]) may take
/// before GNU `timeout` ends it (a hang fails its row instead of stalling
/// `cargo xtask test`); the slowest example seen took 40 s on a loaded
/// 2-core machine.
pub const CHECK_TIMEOUT_S: u32 = 300;

/// [`command`] under `timeout` [`CHECK_TIMEOUT_S`].
fn limited_command(tc: &Toolchain, binary: &Path, host: bool) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.arg(CHECK_TIMEOUT_S.to_string()).arg(binary);
    environment(tc, &mut cmd, host);
    cmd
}

/// The environment of [`command`]. A host run leaves the virtual device
/// off `LD_LIBRARY_PATH`, as the three-way tests' host leg does: with a
/// device present, libomptarget 19 answers `omp_target_is_present` on the
/// host differently under `OMP_TARGET_OFFLOAD=DISABLED` (`examples/data_env.c`
/// printed `present=0` instead of the `present=1` it prints without one).
fn environment(tc: &Toolchain, cmd: &mut Command, host: bool) {
    let mut path = vec![tc.lib.display().to_string()];
    if !host {
        path.push(target_dir().join("stage/sim").display().to_string());
    }
    if let Ok(old) = std::env::var("LD_LIBRARY_PATH") {
        if !old.is_empty() {
            path.push(old);
        }
    }
    cmd.env("LD_LIBRARY_PATH", path.join(":"));
    if host {
        cmd.env("OMP_TARGET_OFFLOAD", "DISABLED");
    } else if std::env::var_os("OMP_TARGET_OFFLOAD").is_none() {
        cmd.env("OMP_TARGET_OFFLOAD", "MANDATORY");
    }
}

/// `cargo xtask run --llvm 19 [--host] [-O<n>] PROGRAM [ARGS]`.
pub fn run_program(program: &Path, opt: &str, host: bool, args: &[String]) -> Result<(), String> {
    crate::stage::stage()?;
    let tc = ensure()?;
    let binary = match program.extension().and_then(|e| e.to_str()) {
        Some("c" | "cpp" | "cc" | "cxx") => {
            if links_at_o0(opt) {
                eprintln!(
                    "run: clang-19 crashes linking offload code at -O0 (llvm/llvm-project#65077); \
                     compiling at -O0, linking with the device LTO at O2 ({O0_LINK_WORKAROUND})"
                );
            }
            compile(&tc, program, opt, &target_dir().join("xtask-run"))?
        }
        _ => program.to_path_buf(),
    };
    let status = command(&tc, &binary, args, host)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} exited with {status}", binary.display()))
    }
}

/// One program of `examples/` at one level: host and device runs compared.
#[derive(Debug)]
pub struct ExampleRow {
    /// `name.c -O2`.
    pub label: String,
    /// Same stdout and exit status as the host.
    pub pass: bool,
    /// Why not, when it failed.
    pub detail: String,
}

/// The levels the examples are built at.
pub const EXAMPLE_LEVELS: &[&str] = &["-O0", "-O2"];

/// The virtual GPUs an example asks for with a `// HSA_SIM_GPUS=<n>` line
/// (as the three-way tests read it), or 1.
fn example_gpus(src: &Path) -> String {
    std::fs::read_to_string(src)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.trim().strip_prefix("// HSA_SIM_GPUS="))
        .map_or("1".into(), |n| n.trim().to_string())
}

fn run_output(mut cmd: Command) -> Result<Output, String> {
    cmd.stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))
}

/// Whether a program offloads (its source says `omp target`), the rule the
/// three-way tests use too: `examples/device_count.c` only prints the
/// device count, which differs from the host's by design.
fn offloads(src: &Path) -> bool {
    std::fs::read_to_string(src).is_ok_and(|t| t.contains("omp target"))
}

/// Example runs that cannot pass, each with its cause and evidence:
/// (program, level, what happens). Not run (each would spend the check's
/// timeout) and printed as such; only these are tolerated.
///
/// `team_shared.c -O0`: a bug of LLVM 19's device runtime, which hangs a GPU
/// the same way (it is not the virtual device's). At -O0 the user code is
/// `optnone`, so the device LTO cannot turn the kernel into SPMD mode (at -O2
/// its kernel environment says mode 3, generic-SPMD, and it passes); the
/// kernel stays in generic mode (kernel environment: mode 1, `MaxThreads` 64)
/// and clang-19 declares `.max_flat_workgroup_size: 64` for `thread_limit(64)`,
/// leaving no room for generic mode's extra main-thread wave (clang-16
/// declares 1024 and libomptarget 16 launches 128). libomptarget 19 launches
/// `min(MaxThreads, 64 + 64)` = 64 threads (`LIBOMPTARGET_INFO=16`: "3 blocks
/// and 64 threads in Generic mode"): one wave per workgroup, the main thread
/// only. `__kmpc_parallel_51` then finds no worker (`getMaxTeamThreads()` is
/// 0, `determineNumberOfThreads` gives 1) and runs each `omp parallel` on the
/// main thread with level 1. Its `omp barrier` calls `__kmpc_barrier`
/// (`offload/DeviceRTL/src/Synchronization.cpp` of 19.1.7, line 522): not the
/// main thread in generic mode (the level is 1), not SPMD, so
/// `impl::namedBarrier()` (line 188), whose stated precondition is
/// `NumWaves != 0`: `NumThreads = omp_get_num_threads()` = 1, `NumWaves` =
/// 1 / 64 = 0, the leader lane's `ds_add_rtn_u32` on the tracker word (group
/// offset 2360) returns 0, `0 == NumWaves - 1` (0xffffffff) is false, and the
/// lane loops on `s_sleep 0` / `ds_read_b32` for the generation half to
/// change, which only another wave of its workgroup could write; there is
/// none (trace: `HSA_SIM_TRACE=all`, the only wave `hw0`, the tracker word
/// read as 1 forever). Upstream fixed it in LLVM 21 (llvm/llvm-project#140786,
/// "Enable generic barriers in single threaded contexts": `__kmpc_barrier`
/// now returns early when the team has one thread). The same -O0 program
/// with `thread_limit(128)` (one worker wave) or `thread_limit(192)` (two,
/// which meet in that named barrier, the first waiting in its `s_sleep` loop
/// until the second arrives) equals the host on the virtual device.
pub const KNOWN_REGRESSIONS: [(&str, &str, &str); 1] = [(
    "team_shared.c",
    "-O0",
    "LLVM 19's namedBarrier spins forever in a one-thread parallel region (llvm/llvm-project#140786, fixed in LLVM 21)",
)];

/// Every program of `examples/` that offloads, at [`EXAMPLE_LEVELS`], compiled with
/// clang-19 and run through LLVM 19's libomptarget on the virtual gfx90a
/// and on the host (`OMP_TARGET_OFFLOAD=DISABLED`, the oracle): a row passes
/// when stdout and the exit status are the same.
pub fn check_examples(tc: &Toolchain) -> Result<Vec<ExampleRow>, String> {
    let dir = workspace_root().join("examples");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "c" || x == "cpp"))
        .filter(|p| offloads(p))
        .collect();
    sources.sort();
    let build = target_dir().join("llvm19/examples");
    let mut rows = Vec::new();
    for src in &sources {
        let name = src.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        for opt in EXAMPLE_LEVELS {
            let label = format!("{name} {opt}");
            if let Some((.., why)) = KNOWN_REGRESSIONS
                .iter()
                .find(|(n, o, _)| *n == name && o == opt)
            {
                eprintln!("llvm19 examples: KNOWN FAILURE, not run: {label}: {why}");
                continue;
            }
            let row = match compile_cached(tc, src, opt, &build) {
                Err(e) => ExampleRow {
                    label,
                    pass: false,
                    detail: e,
                },
                Ok(bin) => {
                    let mut host_cmd = limited_command(tc, &bin, true);
                    let stem = src.file_stem().and_then(|n| n.to_str()).unwrap_or("");
                    if crate::stress::HOST_WITHOUT_HIDDEN_HELPERS.contains(&stem) {
                        host_cmd.env("LIBOMP_USE_HIDDEN_HELPER_TASK", "0");
                    }
                    let host = run_output(host_cmd)?;
                    let mut dev_cmd = limited_command(tc, &bin, false);
                    dev_cmd.env("HSA_SIM_GPUS", example_gpus(src));
                    let dev = run_output(dev_cmd)?;
                    let pass = host.status.success()
                        && dev.status.code() == host.status.code()
                        && dev.stdout == host.stdout;
                    ExampleRow {
                        label,
                        pass,
                        detail: if pass {
                            String::new()
                        } else {
                            format!(
                                "host exit {:?}, device exit {:?}; device stderr: {}",
                                host.status.code(),
                                dev.status.code(),
                                String::from_utf8_lossy(&dev.stderr)
                                    .lines()
                                    .last()
                                    .unwrap_or("")
                            )
                        },
                    }
                }
            };
            eprintln!(
                "llvm19 examples: {} {}",
                if row.pass { "PASS" } else { "FAIL" },
                row.label
            );
            rows.push(row);
        }
    }
    Ok(rows)
}

/// `cargo xtask run --llvm 19 --examples`: [`check_examples`] and a table.
///
/// Errors: any row failed (the rows are named).
pub fn examples_command() -> Result<(), String> {
    crate::stage::stage()?;
    let tc = ensure()?;
    let started = std::time::Instant::now();
    let rows = check_examples(&tc)?;
    for r in &rows {
        println!(
            "{:<28} {}{}",
            r.label,
            if r.pass { "PASS" } else { "FAIL" },
            if r.pass {
                String::new()
            } else {
                format!("  {}", r.detail)
            }
        );
    }
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.pass)
        .map(|r| r.label.as_str())
        .collect();
    println!(
        "llvm19 examples: {} of {} equal to the host in {:.0} s",
        rows.len() - failed.len(),
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("differ from the host: {}", failed.join(", ")))
    }
}

/// The printf test program: 64 lanes, every conversion of C's printf, and
/// `fprintf(stderr, ...)`.
pub const PRINTF_TEST: &str = "tests/programs/llvm19_printf.c";

/// Compiles [`PRINTF_TEST`] with clang-19 at -O2 and runs it through LLVM
/// 19's libomptarget on the virtual gfx90a and on the host: passes when
/// both print the same lines on stdout and on stderr (compared as sorted
/// lines: lanes reach the RPC server, and host threads print, in no fixed
/// order), with no line missing, and exit with 0.
///
/// Errors: a failed build or run, or different output (the message shows
/// the first lines that differ).
pub fn check_printf(tc: &Toolchain) -> Result<usize, String> {
    let src = workspace_root().join(PRINTF_TEST);
    let bin = compile_cached(tc, &src, "-O2", &target_dir().join("llvm19/printf"))?;
    let host = run_output(limited_command(tc, &bin, true))?;
    let dev = run_output(limited_command(tc, &bin, false))?;
    let sorted = |b: &[u8]| {
        let mut v: Vec<String> = String::from_utf8_lossy(b)
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    if !host.status.success() || !dev.status.success() {
        return Err(format!(
            "exit status: host {:?}, device {:?}; device stderr: {}",
            host.status.code(),
            dev.status.code(),
            String::from_utf8_lossy(&dev.stderr)
        ));
    }
    for (what, h, d) in [
        ("stdout", &host.stdout, &dev.stdout),
        ("stderr", &host.stderr, &dev.stderr),
    ] {
        let (h, d) = (sorted(h), sorted(d));
        if h != d {
            let first = h
                .iter()
                .zip(&d)
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("host {a:?}, device {b:?}"))
                .unwrap_or_else(|| format!("host {} lines, device {}", h.len(), d.len()));
            return Err(format!("{what} differs: {first}"));
        }
    }
    Ok(sorted(&host.stdout).len() + sorted(&host.stderr).len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o0_links_get_the_workaround_and_others_do_not() {
        let tc = Toolchain {
            lib: "L".into(),
            include: "I".into(),
            device_lib: "D".into(),
            jit_preload: "P".into(),
        };
        let args = |opt: &str| -> Vec<String> {
            compile_command(&tc, Path::new("x.c"), opt, Path::new("x"))
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        assert!(args("-O0").iter().any(|a| a == O0_LINK_WORKAROUND));
        assert!(!args("-O2").iter().any(|a| a == O0_LINK_WORKAROUND));
        assert!(args("-O2").iter().any(|a| a == "-lcgpu-amdgpu"));
    }

    /// The printf check on its own (`cargo test -p xtask -- --ignored
    /// printf_from_64_lanes`): needs `cargo xtask stage` and `cargo xtask
    /// setup --llvm 19` first; `cargo xtask test` runs the same check.
    #[test]
    #[ignore]
    fn printf_from_64_lanes_equals_the_host() {
        let tc = ensure().expect("the LLVM 19 toolchain");
        let lines = check_printf(&tc).expect("the device's lines are the host's");
        // 5 printf lines and one fprintf(stderr) line per lane, and one after.
        assert_eq!(lines, 64 * 6 + 1);
    }

    #[test]
    fn example_gpu_count_comes_from_the_source_line() {
        let dir = workspace_root().join("examples");
        assert_eq!(example_gpus(&dir.join("multi_device.c")), "2");
        assert_eq!(example_gpus(&dir.join("matmul.c")), "1");
    }
}
