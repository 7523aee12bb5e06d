//! JIT of LLVM bitcode images (`clang-16 -fopenmp --offload-arch=gfx90a
//! -fopenmp-target-jit`, issue 32 item 1): every offloading program of
//! `examples/` built that way at -O0 and -O3 runs on the host, through our
//! plugin and through LLVM 16's C++ plugin (the oracle, which finds `lld`
//! only with LLVM 16's `bin/` on `PATH`) over the virtual gfx90a, with the
//! host's output; each `LIBOMPTARGET_JIT_*` knob changes what it should
//! (checked against LLVM's plugin where it has the knob); the disk cache
//! compiles an image once, misses on a changed image or option, survives a
//! damaged entry and concurrent processes; bad input fails with a message
//! naming what failed.
//!
//! Compilations are counted from our plugin's `LIBOMPTARGET_INFO=16` line
//! (`AMDGPU device N info: JIT compiled ...` / `... read from the cache`).

mod common;
mod three_way;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{command, run, run_llvm_plugin_with, scratch_dir, texts, Hsa};

/// LLVM 16's tools, where Debian puts `lld` (LLVM's plugin runs `lld` from
/// `PATH`) and where clang's offload tools are.
const LLVM_BIN: &str = "/usr/lib/llvm-16/bin";

/// `PATH` with [`LLVM_BIN`] first.
fn llvm_path() -> String {
    format!("{LLVM_BIN}:{}", std::env::var("PATH").unwrap_or_default())
}

/// Builds `src` with `-fopenmp-target-jit` at `opt` into
/// `jit-corpus/<name><opt>-jit-<hash>/prog` (cached by the hash of the
/// source, the flags and clang's version; built in a private directory and
/// renamed into place, as the corpus builder does). The directory name
/// keeps the corpus builder's `<name><opt>` prefix, which the three-way
/// runner reads.
fn jit_build(src: &Path, opt: &str) -> PathBuf {
    let cxx = src.extension().and_then(|e| e.to_str()) == Some("cpp");
    let cc = if cxx { "clang++-16" } else { "clang-16" };
    let mut args: Vec<&str> = vec![
        "-fopenmp",
        "--offload-arch=gfx90a",
        "-fopenmp-target-jit",
        "--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
        opt,
        "-Wl,-rpath,/usr/lib/llvm-16/lib",
    ];
    if !cxx {
        args.push("-lm");
    }
    let version = Command::new(cc)
        .arg("--version")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let source = std::fs::read(src).expect("source");
    for part in [&source[..], args.join(" ").as_bytes(), &version] {
        for b in part {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let name = src.file_stem().unwrap().to_string_lossy().into_owned();
    let root = scratch_dir("jit-corpus");
    let dir = root.join(format!("{name}{opt}-jit-{h:016x}"));
    let exe = dir.join("prog");
    if exe.exists() {
        return exe;
    }
    let tmp = root.join(format!(
        ".tmp-{name}{opt}-{h:016x}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new(cc)
        .args(&args)
        .arg(src)
        .arg("-o")
        .arg(tmp.join("prog"))
        .env("PATH", llvm_path())
        .output()
        .expect("clang-16 runs");
    assert!(
        out.status.success(),
        "{cc} {args:?} {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another builder won; its program is the same.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    assert!(exe.exists(), "the build of {name} vanished");
    exe
}

/// `tests/programs/jit_marker.c` (one region storing 4242) built for JIT.
fn marker() -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/jit_marker.c");
    jit_build(&src, "-O2")
}

/// An empty directory of its own under the test's scratch space (named
/// with this process's id: other runs of these tests may share the space).
fn fresh_dir(name: &str) -> PathBuf {
    let d = scratch_dir("jit").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `bin` through our plugin on one virtual GPU with the JIT cache in
/// `cache` (`None`: no cache-directory knob, and `XDG_CACHE_HOME` in the
/// test's scratch space unless `env` sets it), `LIBOMPTARGET_INFO=16`, and
/// `env`; the run must prove it was ours.
fn ours(bin: &Path, cache: Option<&Path>, env: &[(&str, &str)]) -> Output {
    let mut cmd = command(bin, Hsa::Sim(1));
    cmd.env("LIBOMPTARGET_INFO", "16")
        .env_remove("OMPTARGET_AMDGPU_JIT_CACHE")
        .env_remove("OMPTARGET_AMDGPU_JIT_CACHE_DIR")
        .env_remove("OMPTARGET_AMDGPU_JIT_LINKER");
    for k in [
        "LIBOMPTARGET_JIT_OPT_LEVEL",
        "LIBOMPTARGET_JIT_SKIP_OPT",
        "LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE",
        "LIBOMPTARGET_JIT_POST_OPT_IR_MODULE",
        "LIBOMPTARGET_JIT_REPLACEMENT_MODULE",
        "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT",
    ] {
        cmd.env_remove(k);
    }
    match cache {
        Some(c) => cmd.env("OMPTARGET_AMDGPU_JIT_CACHE_DIR", c),
        // Never the user's own cache directory.
        None => cmd.env("XDG_CACHE_HOME", scratch_dir("jit-xdg-default")),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd, 120);
    let (_, stderr) = texts(&out);
    assert!(
        stderr.contains(&common::announcement(1)),
        "our plugin did not run: {stderr}"
    );
    out
}

/// `(compiled, read from the cache)`: our plugin's JIT info lines.
fn jit_lines(out: &Output) -> (usize, usize) {
    let (_, stderr) = texts(out);
    let count = |what: &str| {
        stderr
            .lines()
            .filter(|l| l.starts_with("AMDGPU device 0 info: JIT ") && l.contains(what))
            .count()
    };
    (count("JIT compiled"), count("read from the cache"))
}

/// The code objects in a cache directory (not the temporary files).
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "hsaco"));
    v.sort();
    v
}

/// The stdout of a run that must have succeeded.
fn stdout_ok(out: &Output, what: &str) -> String {
    let (stdout, stderr) = texts(out);
    assert!(
        out.status.success(),
        "{what}: {}\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

/// The host's output of `bin` (the oracle).
fn host(bin: &Path) -> String {
    let out = run(Command::new(bin).env("OMP_TARGET_OFFLOAD", "DISABLED"), 60);
    stdout_ok(&out, "host run")
}

/// Rows where LLVM 16's plugin's JIT builds a kernel that traps, so its
/// verdict is printed, not required (ours must pass them). Evidence: the
/// module LLVM's plugin optimises (`LIBOMPTARGET_JIT_POST_OPT_IR_MODULE`),
/// compiled by `llc-16 -O3 -mcpu=gfx90a`, draws LLVM's own diagnostic
/// `local memory global used by non-kernel function` for
/// `_omp_reduction_inter_warp_copy_func` (LLVM 16 lowers such an LDS
/// access to a trap: the `s_trap 2` the virtual device reports). The
/// pre-optimisation modules of both plugins are identical, and ours, like
/// `opt-16 -passes='default<O3>'` on that module, keeps those functions
/// where the LDS lowering handles them (no diagnostic). Both rows are -O0
/// builds, whose functions carry `optnone noinline`.
const LLVM16_JIT_TRAPS: &[(&str, &str)] = &[("reductions", "-O0"), ("cxx_matrix", "-O0")];

#[test]
fn every_example_built_for_jit_runs_as_on_the_host_through_ours_and_llvms() {
    use three_way::{corpus, three_way, OPT_LEVELS};
    let jobs: Vec<_> = corpus()
        .into_iter()
        .flat_map(|p| OPT_LEVELS.iter().map(move |o| (p.clone(), *o)))
        .collect();
    assert!(jobs.len() >= 2 * 17, "only {} jobs", jobs.len());
    let path = llvm_path();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let rows = std::sync::Mutex::new(Vec::new());
    // Two at a time (two cores); each row compiles with a cache of its own,
    // so our plugin JIT-compiles every image, as LLVM's does.
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((p, opt)) = jobs.get(i) else { break };
                let exe = jit_build(&p.program.src, opt);
                let cache = fresh_dir(&format!("corpus-{}{opt}", p.program.name));
                let cache = cache.to_string_lossy().into_owned();
                let row = three_way(
                    p,
                    opt,
                    &exe,
                    &[
                        ("PATH", path.as_str()),
                        ("OMPTARGET_AMDGPU_JIT_CACHE_DIR", cache.as_str()),
                    ],
                );
                // The image was compiled: its code object is in the cache.
                let compiled = entries(Path::new(&cache)).len();
                println!("{} (JIT cache entries: {compiled})", row.line());
                rows.lock().unwrap().push((row, compiled));
            });
        }
    });
    let rows = rows.into_inner().unwrap();
    let known = |r: &three_way::Row| {
        LLVM16_JIT_TRAPS
            .iter()
            .any(|(n, o)| r.name == *n && r.opt == *o)
    };
    let failed: Vec<String> = rows
        .iter()
        .filter(|(r, n)| r.ours.is_err() || (r.llvm.is_err() && !known(r)) || *n != 1)
        .map(|(r, n)| format!("{} (cache entries {n})", r.line()))
        .collect();
    println!(
        "jit three-way: {} of {} rows pass",
        rows.len() - failed.len(),
        rows.len()
    );
    assert!(failed.is_empty(), "failing rows:\n{}", failed.join("\n"));
}

#[test]
fn pre_and_post_opt_modules_are_written_and_skip_opt_leaves_the_module_alone() {
    let bin = marker();
    let dir = fresh_dir("dumps");
    let (pre, post) = (dir.join("pre.ll"), dir.join("post.ll"));
    let env = |skip: &'static str| {
        vec![
            (
                "LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE",
                pre.to_str().unwrap().to_string(),
            ),
            (
                "LIBOMPTARGET_JIT_POST_OPT_IR_MODULE",
                post.to_str().unwrap().to_string(),
            ),
            ("LIBOMPTARGET_JIT_SKIP_OPT", skip.to_string()),
        ]
    };
    let run_with = |skip: &'static str| {
        let e = env(skip);
        let e: Vec<(&str, &str)> = e.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let out = ours(&bin, None, &e);
        assert_eq!(stdout_ok(&out, "dump run"), "x=4242\n");
        (
            std::fs::read_to_string(&pre).expect("pre-opt module written"),
            std::fs::read_to_string(&post).expect("post-opt module written"),
        )
    };
    let (a, b) = run_with("0");
    for m in [&a, &b] {
        assert!(m.contains("target triple = \"amdgcn-amd-amdhsa\""), "{m}");
        assert!(m.contains("define "), "{m}");
        assert!(m.contains("store i32 4242"), "{m}");
    }
    assert_ne!(a, b, "the O3 pipeline changed nothing");
    std::fs::remove_file(&pre).unwrap();
    std::fs::remove_file(&post).unwrap();
    let (c, d) = run_with("1");
    assert_eq!(c, a, "the pre-opt module depends on SKIP_OPT");
    assert_eq!(
        d, c,
        "with LIBOMPTARGET_JIT_SKIP_OPT the module was optimised"
    );
}

#[test]
fn opt_level_0_and_3_give_different_code() {
    let bin = marker();
    let mut objects = Vec::new();
    for level in ["0", "3"] {
        let cache = fresh_dir(&format!("level{level}"));
        let out = ours(&bin, Some(&cache), &[("LIBOMPTARGET_JIT_OPT_LEVEL", level)]);
        assert_eq!(stdout_ok(&out, level), "x=4242\n");
        assert_eq!(jit_lines(&out), (1, 0));
        let (_, stderr) = texts(&out);
        assert!(stderr.contains(&format!(" at -O{level} ")), "{stderr}");
        let e = entries(&cache);
        assert_eq!(e.len(), 1, "{e:?}");
        objects.push(std::fs::read(&e[0]).unwrap());
    }
    assert_ne!(
        objects[0], objects[1],
        "-O0 and -O3 gave the same code object"
    );
    // Outside 0..=3 the level is refused with a message (LLVM 16 asserts).
    let out = ours(&bin, None, &[("LIBOMPTARGET_JIT_OPT_LEVEL", "7")]);
    let stderr = mandatory_failure(&out);
    assert!(stderr.contains("LIBOMPTARGET_JIT_OPT_LEVEL=7"), "{stderr}");
}

/// The marker's pre-optimisation module with its constant 4242 replaced
/// by `value`, as textual IR in `dir`.
fn edited_module(bin: &Path, dir: &Path, value: u32) -> PathBuf {
    let pre = dir.join("pre.ll");
    let out = ours(
        bin,
        None,
        &[("LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE", pre.to_str().unwrap())],
    );
    assert_eq!(stdout_ok(&out, "dump run"), "x=4242\n");
    let text = std::fs::read_to_string(&pre).expect("pre-opt module");
    assert_eq!(text.matches("store i32 4242").count(), 1, "{text}");
    let edited = dir.join(format!("edited{value}.ll"));
    std::fs::write(
        &edited,
        text.replace("store i32 4242", &format!("store i32 {value}")),
    )
    .unwrap();
    edited
}

#[test]
fn a_replacement_module_is_compiled_instead_of_the_image() {
    let bin = marker();
    let dir = fresh_dir("replacement-module");
    let module = edited_module(&bin, &dir, 1717);
    let m = module.to_str().unwrap();
    let out = ours(&bin, None, &[("LIBOMPTARGET_JIT_REPLACEMENT_MODULE", m)]);
    assert_eq!(stdout_ok(&out, "ours"), "x=1717\n");
    // LLVM's plugin, the oracle, does the same with the same module.
    let llvm = run_llvm_plugin_with(
        &bin,
        &[
            ("PATH", llvm_path().as_str()),
            ("LIBOMPTARGET_JIT_REPLACEMENT_MODULE", m),
        ],
        120,
    );
    assert_eq!(stdout_ok(&llvm, "LLVM's plugin"), "x=1717\n");
}

#[test]
fn a_replacement_object_is_linked_instead_of_compiling() {
    let bin = marker();
    let dir = fresh_dir("replacement-object");
    let module = edited_module(&bin, &dir, 2323);
    let object = dir.join("edited.o");
    let llc = Command::new("llc-16")
        .args([
            "-mtriple=amdgcn-amd-amdhsa",
            "-mcpu=gfx90a",
            "-filetype=obj",
            "-o",
        ])
        .arg(&object)
        .arg(&module)
        .output()
        .expect("llc-16 runs");
    assert!(
        llc.status.success(),
        "{}",
        String::from_utf8_lossy(&llc.stderr)
    );
    let o = object.to_str().unwrap();
    // A replacement module is ignored when an object is given (LLVM reads
    // the object first): point it at a file that does not exist.
    let out = ours(
        &bin,
        None,
        &[
            ("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT", o),
            ("LIBOMPTARGET_JIT_REPLACEMENT_MODULE", "/nonexistent.ll"),
        ],
    );
    assert_eq!(stdout_ok(&out, "ours"), "x=2323\n");
    let llvm = run_llvm_plugin_with(
        &bin,
        &[
            ("PATH", llvm_path().as_str()),
            ("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT", o),
        ],
        120,
    );
    assert_eq!(stdout_ok(&llvm, "LLVM's plugin"), "x=2323\n");
}

#[test]
fn the_cache_compiles_once_and_misses_on_a_changed_image_or_option() {
    let bin = marker();
    let want = host(&bin);
    let cache = fresh_dir("cache");
    let c = Some(cache.as_path());
    let first = ours(&bin, c, &[]);
    assert_eq!(stdout_ok(&first, "first"), want);
    assert_eq!(jit_lines(&first), (1, 0), "the first run compiles");
    assert_eq!(entries(&cache).len(), 1);
    let second = ours(&bin, c, &[]);
    assert_eq!(stdout_ok(&second, "second"), want);
    assert_eq!(
        jit_lines(&second),
        (0, 1),
        "the second run compiles nothing"
    );
    // A changed option misses.
    let o2 = ours(&bin, c, &[("LIBOMPTARGET_JIT_OPT_LEVEL", "2")]);
    assert_eq!(stdout_ok(&o2, "-O2"), want);
    assert_eq!(jit_lines(&o2), (1, 0), "another opt level reused an entry");
    assert_eq!(entries(&cache).len(), 2);
    let skip = ours(&bin, c, &[("LIBOMPTARGET_JIT_SKIP_OPT", "1")]);
    assert_eq!(jit_lines(&skip), (1, 0), "SKIP_OPT reused an entry");
    assert_eq!(entries(&cache).len(), 3);
    // A changed image misses.
    let other = jit_build(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/jit_marker.c"),
        "-O0",
    );
    let o = ours(&other, c, &[]);
    assert_eq!(stdout_ok(&o, "the -O0 build"), want);
    assert_eq!(jit_lines(&o), (1, 0), "another image reused an entry");
    assert_eq!(entries(&cache).len(), 4);
    // Turned off: compiles, writes nothing.
    let off = ours(&bin, c, &[("OMPTARGET_AMDGPU_JIT_CACHE", "0")]);
    assert_eq!(stdout_ok(&off, "cache off"), want);
    assert_eq!(jit_lines(&off), (1, 0));
    assert_eq!(entries(&cache).len(), 4);
    // A damaged entry is compiled again and rewritten.
    for e in entries(&cache) {
        std::fs::write(&e, b"\x7fELF damaged").unwrap();
    }
    let again = ours(&bin, c, &[]);
    assert_eq!(stdout_ok(&again, "damaged entry"), want);
    assert_eq!(jit_lines(&again), (1, 0));
    assert_eq!(jit_lines(&ours(&bin, c, &[])), (0, 1), "not rewritten");
    // Without the directory knob: the user's cache directory (XDG).
    let xdg = fresh_dir("xdg");
    let x = ours(&bin, None, &[("XDG_CACHE_HOME", xdg.to_str().unwrap())]);
    assert_eq!(stdout_ok(&x, "XDG"), want);
    assert_eq!(entries(&xdg.join("omptarget-amdgpu/jit")).len(), 1);
}

#[test]
fn concurrent_processes_share_the_cache_safely() {
    let bin = marker();
    let cache = fresh_dir("concurrent");
    let outs: Vec<Output> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| ours(&bin, Some(&cache), &[])))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in &outs {
        assert_eq!(stdout_ok(o, "concurrent run"), "x=4242\n");
        let (compiled, cached) = jit_lines(o);
        assert_eq!(compiled + cached, 1);
    }
    let files: Vec<_> = std::fs::read_dir(&cache).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "leftovers: {files:?}");
    assert_eq!(jit_lines(&ours(&bin, Some(&cache), &[])), (0, 1));
}

/// A copy of `bin` whose embedded bitcode is damaged after its header.
fn damaged_copy(bin: &Path, dir: &Path) -> PathBuf {
    let mut bytes = std::fs::read(bin).unwrap();
    let at = bytes
        .windows(4)
        .position(|w| w == b"BC\xc0\xde")
        .expect("the program embeds bitcode");
    for b in &mut bytes[at + 40..at + 400] {
        *b = 0xa5;
    }
    let out = dir.join("damaged");
    std::fs::write(&out, bytes).unwrap();
    let mut perms = std::fs::metadata(&out).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&out, perms).unwrap();
    out
}

#[test]
fn a_corrupt_bitcode_image_fails_cleanly_with_a_message() {
    let dir = fresh_dir("corrupt");
    let bin = damaged_copy(&marker(), &dir);
    let out = ours(&bin, Some(&dir), &[]);
    let stderr = mandatory_failure(&out);
    assert!(
        stderr.contains("device image not loaded: JIT: the device image is not an LLVM module"),
        "{stderr}"
    );
    // LLVM's plugin refuses it too, and ends the same way (the oracle).
    let llvm = run_llvm_plugin_with(&bin, &[("PATH", llvm_path().as_str())], 120);
    mandatory_failure(&llvm);
    assert!(entries(&dir).is_empty());
}

/// Checks that `out` ended by libomptarget's fatal error for a mandatory
/// offload that failed (its `abort()`, SIGABRT), not by another signal or
/// a hang; returns its stderr.
fn mandatory_failure(out: &Output) -> String {
    use std::os::unix::process::ExitStatusExt;
    let (stdout, stderr) = texts(out);
    assert_eq!(
        out.status.signal(),
        Some(6),
        "{}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("failure of target construct while offloading is mandatory"),
        "{stderr}"
    );
    stderr
}

#[test]
fn a_failing_step_is_named_with_the_tools_message() {
    let bin = marker();
    let dir = fresh_dir("failures");
    let garbage = dir.join("garbage.ll");
    std::fs::write(&garbage, "this is not LLVM IR\n").unwrap();
    let cases: [(&str, &str, &str); 3] = [
        (
            "LIBOMPTARGET_JIT_REPLACEMENT_MODULE",
            garbage.to_str().unwrap(),
            "JIT: the replacement module",
        ),
        (
            "OMPTARGET_AMDGPU_JIT_LINKER",
            "/bin/false",
            "JIT: linking with /bin/false failed",
        ),
        (
            "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT",
            "/nonexistent.o",
            "JIT: reading the replacement object (/nonexistent.o)",
        ),
    ];
    for (knob, value, message) in cases {
        let out = ours(&bin, Some(&dir), &[(knob, value)]);
        let stderr = mandatory_failure(&out);
        assert!(
            stderr.contains(&format!("load_binary failed: {message}")),
            "{knob}: {stderr}"
        );
    }
}

/// The marker's pre-optimisation module with `asm` inserted as inline
/// assembly before its store, as textual IR in `dir`.
fn module_with_asm(bin: &Path, dir: &Path, name: &str, asm: &str) -> PathBuf {
    let edited = edited_module(bin, dir, 4242);
    let text = std::fs::read_to_string(&edited).unwrap();
    let out = dir.join(format!("{name}.ll"));
    std::fs::write(
        &out,
        text.replace(
            "  store i32 4242",
            &format!("  call void asm sideeffect \"{asm}\", \"\"()\n  store i32 4242"),
        ),
    )
    .unwrap();
    out
}

#[test]
fn inline_assembly_compiles_and_bad_assembly_fails_only_the_load() {
    let bin = marker();
    let dir = fresh_dir("inline-asm");
    // LLVM 16's plugin registers no assembly parser and stops the program
    // on any inline assembly; ours compiles it.
    let good = module_with_asm(&bin, &dir, "nop", "s_nop 0");
    let out = ours(
        &bin,
        None,
        &[(
            "LIBOMPTARGET_JIT_REPLACEMENT_MODULE",
            good.to_str().unwrap(),
        )],
    );
    assert_eq!(stdout_ok(&out, "s_nop"), "x=4242\n");
    // An instruction LLVM's assembler rejects: its error diagnostic fails
    // the load (LLVM's default handler would `exit` the process), and
    // libomptarget then ends the program in its orderly way.
    let bad = module_with_asm(&bin, &dir, "bogus", "bogus_instruction v0");
    let out = ours(
        &bin,
        None,
        &[("LIBOMPTARGET_JIT_REPLACEMENT_MODULE", bad.to_str().unwrap())],
    );
    let stderr = mandatory_failure(&out);
    assert!(
        stderr.contains("load_binary failed: JIT: code generation failed: <inline asm>")
            && stderr.contains("invalid instruction"),
        "{stderr}"
    );
}
