//! The standalone loader's acceptance tests: every program of
//! `tests/loader_programs/` is compiled with the staged `amdgpu-cc` and run
//! on the virtual gfx90a under LLVM 19's RPC server (`llvm-rpc-oracle`,
//! built on Debian's `libllvmlibc_rpc_server.a`) and under ours
//! (`amdhsa-loader`). Expected outputs come from
//! the same program built for the host with the system `cc`, or, where the
//! host cannot say (faults, bad images), from the outcome itself.
//!
//! Needs `cargo xtask stage` (which `cargo xtask test` runs): the stage is
//! `$OMPTARGET_STAGE_DIR` or `target/stage`.

mod common;

use common::stage_dir_with;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn programs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/loader_programs")
}

fn scratch() -> PathBuf {
    common::scratch_dir("loader")
}

fn checked(cmd: &mut Command) {
    let out = cmd.output().expect("compiler starts");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `amdgpu-cc -O2 tests/loader_programs/<name>.c -o <scratch>/<name>.gpu`.
fn device_build(name: &str) -> PathBuf {
    device_build_at(name, "-O2")
}

/// Same at another optimisation level. Each image is built once per test
/// process (tests run in parallel and share images).
fn device_build_at(name: &str, opt: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<BTreeMap<String, PathBuf>> =
        std::sync::Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let key = format!("{name}{opt}");
    if let Some(p) = built.get(&key) {
        return p.clone();
    }
    let out = scratch().join(format!("{key}.gpu"));
    checked(
        Command::new(stage_dir().join("bin/amdgpu-cc"))
            .arg(opt)
            .arg(programs_dir().join(format!("{name}.c")))
            .arg("-o")
            .arg(&out),
    );
    built.insert(key, out.clone());
    out
}

/// The same program for the host, looping over a `blocks` x `threads` grid.
fn host_build(name: &str, blocks: u32, threads: u32) -> PathBuf {
    let out = scratch().join(format!("{name}-{blocks}x{threads}.host"));
    checked(
        Command::new("cc")
            .arg("-O2")
            .arg("-w")
            .arg(format!("-DHOST_BLOCKS={blocks}"))
            .arg(format!("-DHOST_THREADS={threads}"))
            .arg(programs_dir().join(format!("{name}.c")))
            .arg("-o")
            .arg(&out),
    );
    out
}

/// The environment every run gets (the programs echo it).
fn fixed_env(cmd: &mut Command) -> &mut Command {
    let sim = stage_dir().join("sim");
    cmd.env_clear()
        .env("LD_LIBRARY_PATH", sim)
        .env("LOADER_TEST_VAR", "value with spaces=and equals")
        .env("HSA_SIM_GPUS", "1")
}

/// Which host side serves the device program.
#[derive(Clone, Copy, Debug)]
enum Server {
    /// LLVM 19's server in `llvm-rpc-oracle`.
    Llvm,
    /// Ours: `amdhsa-loader` (crates `loader/`, `rpc/`, `hsa/`).
    Ours,
}

const SERVERS: [Server; 2] = [Server::Llvm, Server::Ours];

/// Runs `image` with `threads` x `blocks` under `server`.
fn run_device(server: Server, image: &Path, threads: u32, blocks: u32, args: &[&str]) -> Output {
    run_device_with_input(server, image, threads, blocks, args, None)
}

/// Same, with standard input read from `input`.
fn run_device_with_input(
    server: Server,
    image: &Path,
    threads: u32,
    blocks: u32,
    args: &[&str],
    input: Option<&Path>,
) -> Output {
    let loader = match server {
        Server::Llvm => stage_dir().join("oracle/llvm-rpc-oracle"),
        Server::Ours => stage_dir().join("bin/amdhsa-loader"),
    };
    let mut cmd = Command::new(loader);
    fixed_env(&mut cmd)
        .arg("--threads")
        .arg(threads.to_string())
        .arg("--blocks")
        .arg(blocks.to_string())
        .arg(image)
        .args(args);
    if let Some(input) = input {
        cmd.stdin(std::fs::File::open(input).expect("input file"));
    }
    common::run(&mut cmd, 900)
}

fn run_host(exe: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(exe);
    fixed_env(&mut cmd).args(args);
    common::run(&mut cmd, 300)
}

fn lines(bytes: &[u8]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in String::from_utf8_lossy(bytes).split_inclusive('\n') {
        *m.entry(l.to_string()).or_insert(0) += 1;
    }
    m
}

fn show(out: &Output) -> String {
    let (o, e) = common::texts(out);
    format!("status {:?}\n--- stdout\n{o}--- stderr\n{e}", out.status)
}

/// Device and host runs agree exactly: stdout, stderr, exit status.
fn assert_same(dev: &Output, host: &Output, what: &str) {
    assert_eq!(
        dev.status.code(),
        host.status.code(),
        "{what}: exit code\n{}",
        show(dev)
    );
    assert_eq!(
        dev.status.signal(),
        host.status.signal(),
        "{what}: signal\n{}",
        show(dev)
    );
    assert_eq!(
        common::texts(dev),
        common::texts(host),
        "{what}: output\n{}",
        show(dev)
    );
}

/// Same, with stdout and stderr compared as multisets of lines (threads
/// print in any order).
fn assert_same_lines(dev: &Output, host: &Output, what: &str) {
    assert_eq!(
        dev.status.code(),
        host.status.code(),
        "{what}: exit code\n{}",
        show(dev)
    );
    assert!(
        lines(&dev.stdout) == lines(&host.stdout),
        "{what}: stdout lines differ"
    );
    assert!(
        lines(&dev.stderr) == lines(&host.stderr),
        "{what}: stderr lines differ"
    );
}

#[test]
fn argv_and_envp_are_echoed() {
    let gpu = device_build("argv_env");
    let host = host_build("argv_env", 1, 1);
    let args = ["one", "two words", "", "--threads"];
    let expected = run_host(&host, &args);
    for s in SERVERS {
        assert_same(
            &run_device(s, &gpu, 1, 1, &args),
            &expected,
            &format!("{s:?}"),
        );
    }
}

#[test]
fn string_functions_and_atoi_match_the_host() {
    let gpu = device_build("strings");
    let host = host_build("strings", 1, 1);
    let expected = run_host(&host, &[]);
    for s in SERVERS {
        assert_same(
            &run_device(s, &gpu, 1, 1, &[]),
            &expected,
            &format!("{s:?}"),
        );
    }
}

#[test]
fn stdin_is_read_with_fgets() {
    let gpu = device_build("stdin");
    let host = host_build("stdin", 1, 1);
    let input = scratch().join("stdin-input.txt");
    let mut text = String::from(
        "first line\n\nthird line, longer than the forty-byte buffer of the program\n",
    );
    text.push_str("no newline at the end");
    std::fs::write(&input, &text).unwrap();
    let mut cmd = Command::new(&host);
    fixed_env(&mut cmd).stdin(std::fs::File::open(&input).unwrap());
    let expected = common::run(&mut cmd, 60);
    assert!(expected.stdout.len() > text.len());
    for s in SERVERS {
        let out = run_device_with_input(s, &gpu, 1, 1, &[], Some(&input));
        assert_same(&out, &expected, &format!("{s:?}"));
    }
}

#[test]
fn exit_code_comes_from_return() {
    let gpu = device_build("exit_return");
    let host = host_build("exit_return", 1, 1);
    for code in ["0", "7", "255"] {
        let expected = run_host(&host, &[code]);
        assert_eq!(expected.status.code(), Some(code.parse().unwrap()));
        for s in SERVERS {
            assert_same(
                &run_device(s, &gpu, 1, 1, &[code]),
                &expected,
                &format!("{s:?} {code}"),
            );
        }
    }
}

#[test]
fn exit_from_a_nonzero_lane_ends_the_program() {
    let gpu = device_build("exit_lane");
    let host = host_build("exit_lane", 1, 64);
    let expected = run_host(&host, &["37", "5"]);
    assert_eq!(expected.status.code(), Some(5));
    for s in SERVERS {
        assert_same(
            &run_device(s, &gpu, 64, 1, &["37", "5"]),
            &expected,
            &format!("{s:?}"),
        );
    }
}

#[test]
fn abort_ends_the_program_abnormally() {
    let gpu = device_build("abort");
    let host = host_build("abort", 1, 1);
    let expected = run_host(&host, &[]);
    assert_eq!(expected.status.signal(), Some(6), "host abort: SIGABRT");
    for s in SERVERS {
        assert_same(
            &run_device(s, &gpu, 1, 1, &[]),
            &expected,
            &format!("{s:?}"),
        );
    }
}

#[test]
fn printf_every_conversion_from_one_lane() {
    let gpu = device_build("printf");
    let host = host_build("printf", 1, 1);
    let expected = run_host(&host, &["all"]);
    assert!(expected.stdout.len() > 3000);
    for s in SERVERS {
        assert_same(
            &run_device(s, &gpu, 1, 1, &["all"]),
            &expected,
            &format!("{s:?}"),
        );
    }
}

#[test]
fn printf_from_64_divergent_lanes() {
    let host = host_build("printf", 1, 64);
    let expected = run_host(&host, &[]);
    for opt in ["-O0", "-O2"] {
        let gpu = device_build_at("printf", opt);
        let mut outs = Vec::new();
        for s in SERVERS {
            let out = run_device(s, &gpu, 64, 1, &[]);
            assert_same_lines(&out, &expected, &format!("{s:?} {opt}"));
            outs.push(out);
        }
        // One wavefront prints in a fixed order: the servers must agree on
        // every byte.
        for (i, w) in outs.windows(2).enumerate() {
            let what = format!("{opt}: {:?} vs {:?}", SERVERS[i + 1], SERVERS[i]);
            assert_same(&w[1], &w[0], &what);
        }
    }
}

#[test]
fn printf_from_64_workgroups_of_256_threads() {
    let gpu = device_build("printf");
    let host = host_build("printf", 64, 256);
    // Each workgroup prints one case (all 24 appear over the 64), so every
    // wavefront makes one request with all 64 lanes; divergent lanes are
    // the test above.
    let expected = run_host(&host, &["by-block"]);
    assert!(lines(&expected.stdout).values().sum::<usize>() > 16384);
    for s in SERVERS {
        assert_same_lines(
            &run_device(s, &gpu, 256, 64, &["by-block"]),
            &expected,
            &format!("{s:?}"),
        );
    }
}

#[test]
fn files_are_written_and_read_back() {
    let gpu = device_build("files");
    let host = host_build("files", 1, 1);
    let host_file = scratch().join("files-host.txt");
    let expected = run_host(&host, &[host_file.to_str().unwrap()]);
    let expected_file = std::fs::read(&host_file).unwrap();
    assert!(expected_file.len() > 300);
    for s in SERVERS {
        let dev_file = scratch().join(format!("files-{s:?}.txt"));
        let _ = std::fs::remove_file(&dev_file);
        let out = run_device(s, &gpu, 1, 1, &[dev_file.to_str().unwrap()]);
        // The path is the one thing that differs, and only stdout shows none.
        assert_same(&out, &expected, &format!("{s:?}"));
        assert_eq!(
            std::fs::read(&dev_file).unwrap(),
            expected_file,
            "{s:?}: file"
        );
    }
}

#[test]
fn malloc_calloc_realloc_free_from_every_thread() {
    let gpu = device_build("malloc");
    let host = host_build("malloc", 64, 256);
    let expected = run_host(&host, &[]);
    assert_eq!(expected.status.code(), Some(0));
    for s in SERVERS {
        assert_same_lines(
            &run_device(s, &gpu, 256, 64, &[]),
            &expected,
            &format!("{s:?}"),
        );
    }
}

#[test]
fn a_faulting_kernel_is_reported_and_ends_the_program() {
    let gpu = device_build("fault");
    for s in SERVERS {
        let out = run_device(s, &gpu, 1, 1, &[]);
        let (_, err) = common::texts(&out);
        assert!(
            out.status.code().is_some_and(|c| c != 0),
            "{s:?}: {}",
            show(&out)
        );
        assert!(
            err.contains("0xdead0001"),
            "{s:?}: no fault address\n{}",
            show(&out)
        );
        assert!(
            err.to_lowercase().contains("fault"),
            "{s:?}: no reason\n{}",
            show(&out)
        );
    }
}

#[test]
fn a_truncated_image_is_refused() {
    let gpu = device_build("exit_return");
    let bytes = std::fs::read(&gpu).unwrap();
    for keep in [bytes.len() / 2, 100, 0] {
        let cut = scratch().join(format!("truncated-{keep}.gpu"));
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        assert_refused_by_both(&cut, &format!("{keep} bytes"));
    }
}

#[test]
fn an_image_for_gfx1030_is_refused() {
    // The startup kernels alone, built for another processor.
    let src = scratch().join("gfx1030.c");
    std::fs::write(
        &src,
        "__attribute__((amdgpu_kernel, visibility(\"protected\"))) void _begin(int a, char **b, char **c) {}\n\
         __attribute__((amdgpu_kernel, visibility(\"protected\"))) void _start(int a, char **b, char **c, int *r) { *r = 0; }\n\
         __attribute__((amdgpu_kernel, visibility(\"protected\"))) void _end(int s) {}\n",
    )
    .unwrap();
    let image = scratch().join("gfx1030.gpu");
    checked(
        Command::new("clang-16")
            .args([
                "--target=amdgcn-amd-amdhsa",
                "-mcpu=gfx1030",
                "-nogpulib",
                "-O2",
            ])
            .arg(&src)
            .arg("-o")
            .arg(&image),
    );
    assert_refused_by_both(&image, "gfx1030");
}

/// Both servers refuse `image` (`what` names the case): a non-zero exit, a
/// message on stderr, nothing on stdout.
fn assert_refused_by_both(image: &Path, what: &str) {
    for s in SERVERS {
        let out = run_device(s, image, 1, 1, &[]);
        assert!(
            out.status.code().is_some_and(|c| c != 0),
            "{s:?} {what}: {}",
            show(&out)
        );
        assert!(out.stdout.is_empty(), "{s:?} {what}: {}", show(&out));
        assert!(!out.stderr.is_empty(), "{s:?} {what}: no message");
    }
}

#[test]
fn images_export_the_symbols_llvm_19_loaders_look_up() {
    // llvm-readelf is the oracle for what the image exports.
    let gpu = device_build("exit_return");
    let out = Command::new("llvm-readelf-16")
        .arg("--dyn-symbols")
        .arg(&gpu)
        .output()
        .expect("llvm-readelf-16 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    for (name, kind) in [
        ("_begin.kd", "OBJECT"),
        ("_start.kd", "OBJECT"),
        ("_end.kd", "OBJECT"),
        ("__llvm_libc_rpc_client", "OBJECT"),
        ("__llvm_libc_clock_freq", "OBJECT"),
    ] {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .unwrap_or_else(|| panic!("{name} is not exported:\n{text}"));
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert!(fields.contains(&kind), "{name}: {line}");
        assert!(fields.contains(&"PROTECTED"), "{name}: {line}");
        // The client pointer and the clock frequency are 8 bytes each.
        if !name.ends_with(".kd") {
            assert!(fields.contains(&"8"), "{name}: {line}");
        }
    }
}

/// The staged files the tests use.
fn stage_dir() -> PathBuf {
    stage_dir_with(&[
        "bin/amdgpu-cc",
        "oracle/llvm-rpc-oracle",
        "bin/amdhsa-loader",
        "sim/libhsa-runtime64.so.1",
    ])
}
