//! End to end: OpenMP programs built with clang-16 run through Debian's
//! libomptarget 16 with OUR plugin staged under both AMDGPU plugin names,
//! over the virtual gfx90a (or over Debian's ROCm runtime, which finds no
//! GPU here). Every offloading run uses `OMP_TARGET_OFFLOAD=MANDATORY` and
//! checks our plugin's announcement line, so a pass can come neither from a
//! host fallback nor from LLVM's own plugin.
//!
//! Needs the virtual device built: `cargo build -p sim`.

mod common;

use common::{announcement, command, compile, run, texts, Hsa};
use std::process::Command;

#[test]
fn device_count_is_the_number_of_virtual_gpus() {
    let bin = compile("device_count.c", true, &[]);
    for n in [1usize, 3] {
        let out = run(&mut command(&bin, Hsa::Sim(n)), 60);
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("devices={n}\n")),
            "{stdout}\n{stderr}"
        );
        assert!(
            stderr.contains(&announcement(n)),
            "our plugin did not run:\n{stderr}"
        );
    }
}

#[test]
fn rocm_without_gpu_gives_zero_devices_and_clean_fallback() {
    // Debian's libhsa-runtime64.so.1: hsa_init fails on a machine without a GPU.
    let count = compile("device_count.c", true, &[]);
    let out = run(&mut command(&count, Hsa::Rocm), 60);
    let (stdout, stderr) = texts(&out);
    assert!(stdout.contains("devices=0\n"), "{stdout}\n{stderr}");
    assert!(stderr.contains(&announcement(0)), "{stderr}");

    let saxpy = compile("saxpy.c", false, &[]);
    // Without MANDATORY: host fallback, correct result.
    let out = run(
        command(&saxpy, Hsa::Rocm).env_remove("OMP_TARGET_OFFLOAD"),
        60,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("bad=0"), "{stdout}");
    // With MANDATORY: libomptarget's fatal error, no crash of ours, no hang.
    let out = run(&mut command(&saxpy, Hsa::Rocm), 60);
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("offloading is mandatory"), "{stderr}");
    assert!(
        !stdout.contains("bad="),
        "the region must not have run: {stdout}"
    );
}

#[test]
fn device_info_tool_prints_the_virtual_device() {
    // Legacy names only: Debian's x86_64 *nextgen* plugin, loaded before
    // ours, crashes in its own print_device_info (`__tgt_rtl_print_device_info`);
    // with
    // LIBOMPTARGET_NEXTGEN_PLUGINS=0 libomptarget loads the legacy x86_64
    // plugin and ours under `libomptarget.rtl.amdgpu.so`.
    let tool = std::path::Path::new("/usr/lib/llvm-16/bin/llvm-omp-device-info");
    let out = run(
        command(tool, Hsa::Sim(2))
            .env("LIBOMPTARGET_NEXTGEN_PLUGINS", "0")
            .env("HSA_SIM_COMPUTE_UNITS", "37")
            .env_remove("OMP_TARGET_OFFLOAD"),
        60,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains(&announcement(2)), "{stderr}");
    assert_eq!(
        stdout.matches("Plugin device number:").count(),
        2,
        "{stdout}"
    );
    assert_eq!(
        stdout
            .matches("Device name:                      gfx90a")
            .count(),
        2,
        "{stdout}"
    );
    // The value the virtual device was configured with.
    assert_eq!(
        stdout
            .matches("Compute units:                    37\n")
            .count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains("amdgcn-amd-amdhsa--gfx90a"), "{stdout}");
    assert!(
        stdout.contains("Wavefront size:                   64"),
        "{stdout}"
    );
}

#[test]
fn only_tgt_rtl_symbols_are_exported_and_binding_is_symbolic() {
    let lib = common::plugin_library();
    let syms = Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(&lib)
        .output()
        .unwrap();
    let syms = String::from_utf8_lossy(&syms.stdout);
    let mut exported = Vec::new();
    for line in syms.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name
        if f.len() >= 8 && f[4] == "GLOBAL" && f[6] != "UND" {
            exported.push(f[7].to_string());
        }
    }
    assert!(!exported.is_empty(), "{syms}");
    for name in &exported {
        assert!(
            name.starts_with("__tgt_rtl_") && name.ends_with("@@VERS1.0"),
            "unexpected export {name}"
        );
    }
    // Every entry LLVM's C++ plugin exports is exported by ours (oracle: nm).
    let llvm = Command::new("nm")
        .args([
            "-D",
            "--defined-only",
            "/usr/lib/llvm-16/lib/libomptarget.rtl.amdgpu.nextgen.so.16",
        ])
        .output()
        .unwrap();
    let llvm = String::from_utf8_lossy(&llvm.stdout);
    let llvm_names: Vec<&str> = llvm
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|n| n.starts_with("__tgt_rtl_"))
        .map(|n| n.split('@').next().unwrap_or(n))
        .collect();
    assert_eq!(llvm_names.len(), 33);
    for n in &llvm_names {
        assert!(exported.contains(&format!("{n}@@VERS1.0")), "missing {n}");
    }
    // Plus the three libomptarget looks up that LLVM's plugin lacks.
    for n in ["register_lib", "unregister_lib", "release_async_info"] {
        assert!(
            exported.contains(&format!("__tgt_rtl_{n}@@VERS1.0")),
            "missing {n}"
        );
    }
    assert_eq!(exported.len(), 36, "{exported:?}");
    // -Bsymbolic: DT_FLAGS has SYMBOLIC (or a DT_SYMBOLIC entry).
    let dynamic = Command::new("readelf")
        .arg("-d")
        .arg(&lib)
        .output()
        .unwrap();
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.lines().any(|l| l.contains("SYMBOLIC")),
        "no SYMBOLIC flag:\n{dynamic}"
    );
}

#[test]
fn data_moves_without_kernels_on_one_and_two_devices() {
    let bin = compile("data_paths.c", false, &[]);
    for n in [1usize, 2] {
        let out = run(&mut command(&bin, Hsa::Sim(n)), 120);
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(stderr.contains(&announcement(n)), "{stderr}");
        assert!(stdout.contains(&format!("devices={n}\n")), "{stdout}");
        // 3 memcpy sizes + 4 mapped-array checks + pinned.
        assert_eq!(stdout.matches(": ok\n").count(), 8, "{stdout}");
        assert!(stdout.contains("failures=0\n"), "{stdout}\n{stderr}");
    }
}

#[test]
fn allocation_beyond_device_memory_returns_null_and_bad_free_is_reported() {
    let bin = compile("alloc_limit.c", false, &[]);
    let out = run(
        command(&bin, Hsa::Sim(1)).env("HSA_SIM_DEVICE_MEMORY", "64M"),
        60,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("huge=null\nafter=ok\nend\n"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains("data_alloc failed"), "{stderr}");
    assert!(
        stderr.contains("data_delete failed: unknown device pointer 0x123450"),
        "{stderr}"
    );
}

#[test]
fn a_kernel_runs_with_llvm_launch_geometry() {
    let bin = compile("saxpy.c", false, &[]);
    let out = run(
        command(&bin, Hsa::Sim(1)).env("LIBOMPTARGET_INFO", "16"),
        120,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("bad=0"), "{stdout}\n{stderr}");
    // SPMD, trip count 1000, no clauses: 256 threads, ceil(1000/256) = 4 teams
    // (`GenericKernelTy::getNumBlocks` in LLVM 16's `PluginInterface.cpp`).
    assert!(
        stderr.contains("with 4 blocks and 256 threads in SPMD mode"),
        "{stderr}"
    );
}

#[test]
fn an_image_for_another_gpu_is_refused() {
    let bin = compile("saxpy.c", false, &["--offload-arch=gfx1030"]);
    let out = run(&mut command(&bin, Hsa::Sim(1)), 60);
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains(&announcement(1)), "{stderr}");
    assert!(stderr.contains("offloading is mandatory"), "{stderr}");
    assert!(!stdout.contains("bad="), "{stdout}");
}

/// Examples whose output does not depend on the device: ours must print what
/// the host prints (oracle: the same program with OMP_TARGET_OFFLOAD=DISABLED).
#[test]
fn examples_print_what_the_host_prints() {
    for name in [
        "spmd_loops.c",
        "declare_target.c",
        "data_env.c",
        "async_depend.c",
    ] {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(name);
        if !root.exists() {
            eprintln!("skipping {name}: not in examples/ yet");
            continue;
        }
        let bin = compile(name, true, &["-lm"]);
        // LLVM 16's libomp sometimes dies of its own assertions in the host
        // fallback of `target nowait` (kmp_tasking.cpp); the oracle is the
        // first host run that completes.
        let mut host = run(Command::new(&bin).env("OMP_TARGET_OFFLOAD", "DISABLED"), 60);
        for _ in 0..5 {
            if host.status.success() {
                break;
            }
            host = run(Command::new(&bin).env("OMP_TARGET_OFFLOAD", "DISABLED"), 60);
        }
        assert!(host.status.success(), "{name}: the host run keeps failing");
        let ours = run(&mut command(&bin, Hsa::Sim(2)), 180);
        let (stdout, stderr) = texts(&ours);
        assert!(ours.status.success(), "{name}:\n{stdout}\n{stderr}");
        assert!(stderr.contains(&announcement(2)), "{name}: {stderr}");
        assert_eq!(
            stdout,
            String::from_utf8_lossy(&host.stdout),
            "{name}: {stderr}"
        );
    }
}

#[test]
fn kernels_see_the_device_environment_the_plugin_wrote() {
    let bin = compile("device_env.c", false, &[]);
    let out = run(&mut command(&bin, Hsa::Sim(2)), 120);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains(&announcement(2)), "{stderr}");
    // `DeviceEnvironmentTy` (LLVM 16's `DeviceEnvironment.h`, filled by
    // `PluginInterface.cpp`): NumDevices = the plugin's device count, DeviceNum = local id.
    assert!(
        stdout.contains("device 0 sees num_devices=2 device_num=0\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("device 1 sees num_devices=2 device_num=1\n"),
        "{stdout}"
    );
}

/// A kernel that writes out of bounds: the virtual device reports the memory
/// fault (address included), our plugin fails the region, and libomptarget
/// ends the program with its mandatory-offload error — no hang, no crash of
/// the plugin, nothing after the region runs.
#[test]
fn a_kernel_writing_out_of_bounds_is_reported_and_ends_cleanly() {
    let bin = compile("oob_write.c", false, &[]);
    let out = run(&mut command(&bin, Hsa::Sim(1)), 120);
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("before\n") && !stdout.contains("after"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains(&announcement(1)), "{stderr}");
    let lower = stderr.to_lowercase();
    assert!(
        lower.contains("memory fault") || lower.contains("memory_fault"),
        "{stderr}"
    );
    // The faulting address: p + 4 * 2^38 lies 1 TiB past the allocation.
    assert!(stderr.contains("0x"), "{stderr}");
    assert!(!lower.contains("panicked"), "{stderr}");
}
