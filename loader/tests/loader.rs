//! amdhsa-loader end to end on the virtual gfx90a: a small startup image
//! (`kernels/startup.c`, compiled here with clang-16) whose `main` result
//! is computed from argv, envp and the launch geometry, so each expected
//! exit status follows from the command line by arithmetic.
//!
//! Needs the virtual device built in the same profile
//! (`cargo build --release -p sim`; `cargo xtask stage` does it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn profile_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_amdhsa-loader"))
        .parent()
        .expect("target/<profile>")
        .to_path_buf()
}

fn scratch() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("loader-tests");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A folder holding the virtual device under ROCm's library names (made
/// once per test process: tests run in parallel).
fn sim_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(make_sim_dir).clone()
}

fn make_sim_dir() -> PathBuf {
    let lib = profile_dir().join("libhsa_runtime64.so");
    assert!(
        lib.exists(),
        "{} is missing: run `cargo build --release -p sim` first",
        lib.display()
    );
    let dir = scratch().join(format!("sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["libhsa-runtime64.so.1", "libhsa-runtime64.so"] {
        let l = dir.join(name);
        let _ = std::fs::remove_file(&l);
        std::os::unix::fs::symlink(&lib, &l).unwrap();
    }
    dir
}

/// The startup image for `cpu`, compiled once per test process.
fn image(cpu: &str) -> PathBuf {
    static IMAGES: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut images = IMAGES.lock().unwrap();
    if let Some((_, p)) = images.iter().find(|(c, _)| c == cpu) {
        return p.clone();
    }
    let p = compile(cpu);
    images.push((cpu.to_string(), p.clone()));
    p
}

fn compile(cpu: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/startup.c");
    let out = scratch().join(format!("startup-{}.{cpu}", std::process::id()));
    let st = Command::new("clang-16")
        .args([
            "--target=amdgcn-amd-amdhsa",
            "-nogpulib",
            "-O2",
            "-mcode-object-version=5",
        ])
        .arg(format!("-mcpu={cpu}"))
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("clang-16");
    assert!(st.success());
    out
}

fn run(args: &[&str], img: &Path, rest: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_amdhsa-loader"));
    c.args(args).arg(img).args(rest);
    c.env("LD_LIBRARY_PATH", sim_dir());
    c.env_remove("OMPTARGET_AMDGPU_HSA_LIBRARY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run amdhsa-loader")
}

fn status(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

#[test]
fn exit_status_is_mains_return_value() {
    let img = image("gfx90a");
    let o = run(&[], &img, &["42"], &[]);
    assert_eq!(status(&o), 42, "{}", String::from_utf8_lossy(&o.stderr));
    // argc = 3 (image, a, b): 200 + 3.
    assert_eq!(status(&run(&[], &img, &["a", "b"], &[])), 203);
}

#[test]
fn launch_parameters_reach_the_device() {
    let img = image("gfx90a");
    let o = run(
        &[
            "--threads",
            "4",
            "--threads-y",
            "2",
            "--blocks",
            "3",
            "--blocks-z",
            "2",
        ],
        &img,
        &["count"],
        &[],
    );
    assert_eq!(
        status(&o),
        4 * 2 * 3 * 2,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Read by the device from the code object v5 implicit arguments.
    assert_eq!(
        status(&run(&["--threads-x", "8"], &img, &["wgsize"], &[])),
        8
    );
}

#[test]
fn environment_reaches_the_device() {
    let img = image("gfx90a");
    let o = run(&[], &img, &["env"], &[("LOADER_TEST_VALUE", "77")]);
    assert_eq!(status(&o), 77, "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn memory_fault_names_address_and_reason() {
    let img = image("gfx90a");
    let o = run(&[], &img, &["fault"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(status(&o), 0);
    assert!(err.contains("memory fault at address 0xdead0000"), "{err}");
}

#[test]
fn image_for_another_gpu_names_both_targets() {
    let img = image("gfx906");
    let o = run(&[], &img, &["1"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(status(&o), 0);
    assert!(
        err.contains("built for gfx906") && err.contains("gfx90a"),
        "{err}"
    );
}

#[test]
fn missing_image_is_reported() {
    let o = Command::new(env!("CARGO_BIN_EXE_amdhsa-loader"))
        .args(["--threads", "2"])
        .output()
        .unwrap();
    assert_eq!(status(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("No image file provided"));
}

/// The registers and LDS printed agree with the code object's metadata as
/// llvm-readelf shows it (`.vgpr_count` rounded up to the gfx90a granule
/// of 8, `.group_segment_fixed_size`).
#[test]
fn print_resource_usage_matches_the_metadata() {
    let img = image("gfx90a");
    let o = run(&["--print-resource-usage"], &img, &["5"], &[]);
    assert_eq!(status(&o), 5);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let notes = Command::new("llvm-readelf-16")
        .arg("--notes")
        .arg(&img)
        .output()
        .unwrap();
    let notes = String::from_utf8_lossy(&notes.stdout).into_owned();
    // Each kernel map lists its keys sorted: `.group_segment_fixed_size`
    // before `.name`, `.vgpr_count` after it.
    let mut pending_lds = None;
    let mut current = String::new();
    let mut lds = std::collections::HashMap::new();
    let mut vgpr = std::collections::HashMap::new();
    for line in notes.lines() {
        let t = line.trim().trim_start_matches("- ");
        let value = |k: &str| t.strip_prefix(k).map(|v| v.trim().to_string());
        if let Some(v) = value(".group_segment_fixed_size:") {
            pending_lds = Some(v.parse::<u32>().unwrap());
        }
        if let Some(v) = value(".name:") {
            current = v;
            lds.insert(current.clone(), pending_lds.take().unwrap());
        }
        if let Some(v) = value(".vgpr_count:") {
            vgpr.insert(current.clone(), v.parse::<u32>().unwrap());
        }
    }
    let (v, l) = (vgpr["_start"], lds["_start"]);
    let want = format!("VGPRs {}", v.div_ceil(8).max(1) * 8);
    let line = err
        .lines()
        .find(|l| l.starts_with("_start:"))
        .unwrap_or_default();
    assert!(line.contains(&want), "{line} / {want}");
    assert!(line.contains(&format!("LDS {l} bytes")), "{line}");
    assert!(
        err.lines().any(|l| l.starts_with("_begin:"))
            && err.lines().any(|l| l.starts_with("_end:"))
    );
}

/// RPC end to end: the image's own one-lane client (LLVM 19's protocol)
/// finds the buffer through `__llvm_libc_rpc_client`, as written by the
/// loader, and the server thread answers while `_start` runs.
#[test]
fn rpc_write_exit_and_malloc_from_the_device() {
    let img = image("gfx90a");
    let text = "a line from the device, longer than the 56 bytes of one RPC packet";
    let o = run(
        &["--threads", "64", "--blocks", "2"],
        &img,
        &["puts", text],
        &[],
    );
    assert_eq!(status(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("{text}\n"));
    let o = run(&[], &img, &["exit", "37"], &[]);
    assert_eq!(status(&o), 37, "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&[], &img, &["malloc"], &[]);
    assert_eq!(status(&o), 99, "{}", String::from_utf8_lossy(&o.stderr));
}

/// LLVM 19's libc test opcodes, served as LLVM's loader serves them
/// (`libc/utils/gpu/loader/Loader.h`): INCREMENT returns the word plus one;
/// INTERFACE answers each send with the last received word plus one. From
/// the device's sends (n, then +10 on each reply, then +10 again) the last
/// of its three final receives is n + 1 + 10 + 1 + 10 + 10 + 1 + 1 + 1.
#[test]
fn rpc_test_opcodes_of_llvm_libc() {
    let img = image("gfx90a");
    let o = run(&[], &img, &["increment", "41"], &[]);
    assert_eq!(status(&o), 42, "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&[], &img, &["interface", "5"], &[]);
    assert_eq!(
        status(&o),
        5 + 1 + 10 + 1 + 10 + 10 + 1 + 1 + 1,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
