//! The judge of the virtual device: LLVM 16's own C++ AMDGPU plugins from
//! Debian, unmodified, drive it through libomptarget.
//!
//! The test points `LD_LIBRARY_PATH` at a folder holding this build's
//! `libhsa_runtime64.so` under ROCm's two names, so the plugins' `dlopen`
//! finds the virtual device; nothing else on this machine provides a GPU.
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The profile directory (target/debug or target/release) holding this build's cdylib.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

/// A folder with `libhsa-runtime64.so.1` and `libhsa-runtime64.so` of the
/// virtual device: `$OMPTARGET_STAGE_DIR/sim` when `cargo xtask test` staged
/// the release libraries, else this build's cdylib linked under both names.
fn sim_dir() -> PathBuf {
    if let Some(stage) = std::env::var_os("OMPTARGET_STAGE_DIR") {
        let dir = PathBuf::from(stage).join("sim");
        assert!(
            dir.join("libhsa-runtime64.so.1").exists(),
            "{} is not staged",
            dir.display()
        );
        return dir;
    }
    let lib = profile_dir().join("libhsa_runtime64.so");
    assert!(
        lib.exists(),
        "{} is missing: run `cargo build -p sim` first (`cargo xtask test` does)",
        lib.display()
    );
    let dir = common::scratch_dir("sim-stage");
    // Tests of this binary stage in parallel while others' programs start:
    // each link is made under a name of its own and renamed over the final
    // one (atomic), never removed and recreated.
    for name in ["libhsa-runtime64.so.1", "libhsa-runtime64.so"] {
        let tmp = dir.join(format!(".{name}.{:?}", std::thread::current().id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&lib, &tmp).expect("symlink");
        std::fs::rename(&tmp, dir.join(name)).expect("rename symlink");
    }
    dir
}

fn compile_example(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = root.join("examples").join(format!("{name}.c"));
    let out = common::scratch_dir("omp-bin").join(name);
    common::clang(&[
        "-fopenmp",
        "--offload-arch=gfx90a",
        "--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
        "-O2",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-Wl,-rpath,/usr/lib/llvm-16/lib",
    ]);
    out
}

fn run_with_sim(cmd: &mut Command, gpus: usize) -> Output {
    let path = format!("{}:/usr/lib/llvm-16/lib", sim_dir().display());
    cmd.env("LD_LIBRARY_PATH", path)
        .env("HSA_SIM_GPUS", gpus.to_string())
        .env("HSA_SIM_DEBUG", "1")
        .env_remove("LIBOMPTARGET_NEXTGEN_PLUGINS")
        .output()
        .expect("program runs")
}

#[test]
fn nextgen_plugin_counts_the_virtual_gpus() {
    let bin = compile_example("device_count");
    for n in [1usize, 2, 3] {
        let out = run_with_sim(&mut Command::new(&bin), n);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "exit {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(
            stdout.contains(&format!("devices={n}\n")),
            "with {n} virtual GPUs:\n{stdout}\n{stderr}"
        );
        // Proof that the virtual device answered (it logs its start at debug level).
        assert!(
            stderr.contains(&format!("virtual gfx90a runtime up: {n} GPU agent(s)")),
            "{stderr}"
        );
    }
    // Without the virtual device there is no GPU on this machine: zero devices.
    let out = Command::new(&bin)
        .env("LD_LIBRARY_PATH", "/usr/lib/llvm-16/lib")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("devices=0"));
}

#[test]
fn old_plugin_device_info_reads_every_property() {
    let tool = "/usr/lib/llvm-16/bin/llvm-omp-device-info";
    let mut cmd = Command::new(tool);
    cmd.env("LIBOMPTARGET_NEXTGEN_PLUGINS", "0");
    let path = format!("{}:/usr/lib/llvm-16/lib", sim_dir().display());
    let out = cmd
        .env("LD_LIBRARY_PATH", path)
        .env("HSA_SIM_GPUS", "2")
        .output()
        .expect("llvm-omp-device-info runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Number of Devices: 2") || stdout.matches("gfx90a").count() >= 2,
        "{stdout}"
    );
    assert!(stdout.contains("gfx90a"), "{stdout}");
    assert!(
        stdout.contains("110"),
        "compute units must be reported:\n{stdout}"
    );
    let lower = format!("{stdout}{stderr}").to_lowercase();
    for bad in ["error", "failed", "unknown"] {
        assert!(
            !lower.contains(bad),
            "the tool reported {bad:?}:\n{stdout}\n{stderr}"
        );
    }
}

/// The names an LLVM plugin looks up: the `hsa_*` strings in its binary.
fn plugin_hsa_names(plugin: &str) -> Vec<String> {
    let bytes = std::fs::read(plugin).expect("Debian's plugin is installed");
    let mut names = Vec::new();
    for chunk in bytes.split(|&b| b == 0) {
        if chunk.starts_with(b"hsa_")
            && chunk
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            names.push(String::from_utf8_lossy(chunk).into_owned());
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn exports_every_symbol_llvms_plugins_need_under_rocms_version() {
    let lib = sim_dir().join("libhsa-runtime64.so.1");
    let out = Command::new("readelf")
        .args(["--dyn-syms", "-d", "-W"])
        .arg(&lib)
        .output()
        .expect("readelf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Library soname: [libhsa-runtime64.so.1]"),
        "SONAME:\n{text}"
    );
    let mut exported = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name
        if f.len() >= 8 && f[4] == "GLOBAL" && f[6] != "UND" {
            exported.push(f[7].to_string());
        }
    }
    assert!(!exported.is_empty());
    for name in &exported {
        assert!(
            name.starts_with("hsa_") && name.ends_with("@@ROCR_1"),
            "unexpected export {name}"
        );
    }
    let mut needed = Vec::new();
    for plugin in [
        "libomptarget.rtl.amdgpu.nextgen.so.16",
        "libomptarget.rtl.amdgpu.so.16",
    ] {
        needed.extend(plugin_hsa_names(&format!("/usr/lib/llvm-16/lib/{plugin}")));
    }
    needed.sort();
    needed.dedup();
    assert_eq!(
        needed.len(),
        45,
        "the two plugins look up 45 names: {needed:?}"
    );
    for n in &needed {
        assert!(
            exported.iter().any(|e| e == &format!("{n}@@ROCR_1")),
            "{n} is not exported"
        );
    }
}
