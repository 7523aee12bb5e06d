//! The plugin through a process's whole life, with OpenMP programs on the
//! virtual device: an offloading shared object loaded and unloaded at run
//! time, exit with target regions in flight, exit from a second thread,
//! fork after the device was used, and device errors (an oversized launch).
//! Every run has a bounded wait (`common::run`): a hang fails the test.
//! Expected output comes from the same program run on the host
//! (`OMP_TARGET_OFFLOAD=DISABLED`).

mod common;

use common::{announcement, command, compile, compile_plain, run, texts, Hsa};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

/// `exit_paths.c`, compiled once for all tests of this binary (they run in
/// parallel and must not write the same executable at once).
fn exit_paths() -> &'static Path {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| compile("exit_paths.c", false, &["-lpthread"]))
}

/// The program's stdout on the host, offload disabled (the oracle), with `env`
/// added to its environment.
fn host_stdout(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env("OMP_TARGET_OFFLOAD", "DISABLED")
        .env("LD_LIBRARY_PATH", "/usr/lib/llvm-16/lib")
        .envs(env.iter().copied());
    let out = run(&mut cmd, 120);
    assert!(out.status.success(), "host run of {bin:?} {args:?} failed");
    texts(&out).0
}

/// Runs `bin args` through our plugin; asserts it ended normally, with our
/// plugin announced, and returns stdout.
fn offload_stdout(bin: &Path, args: &[&str]) -> String {
    let out = run(command(bin, Hsa::Sim(1)).args(args), 120);
    let (stdout, stderr) = texts(&out);
    assert!(
        out.status.success(),
        "{bin:?} {args:?}: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stderr.contains(&announcement(1)), "{stderr}");
    stdout
}

/// The module and its loader (built like LLVM's
/// `offloading/dynamic_module_load.c`: the loader without OpenMP, the
/// module -fPIC -shared).
fn module_and_loader() -> &'static (std::path::PathBuf, std::path::PathBuf) {
    static BINS: std::sync::OnceLock<(std::path::PathBuf, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    BINS.get_or_init(|| {
        let module = compile("offload_module.c", false, &["-fPIC", "-shared"]);
        let loader = compile_plain("dlopen_module.c", &["-ldl"]);
        (module, loader)
    })
}

#[test]
fn a_dlopened_offloading_module_left_open_unregisters_at_exit() {
    let (module, loader) = module_and_loader();
    let m = module.to_string_lossy().into_owned();
    let args = [m.as_str(), "1", "open"];
    assert_eq!(
        offload_stdout(loader, &args),
        host_stdout(loader, &args, &[])
    );
}

#[test]
fn an_offloading_module_dlopened_and_dlclosed_twice() {
    let (module, loader) = module_and_loader();
    let m = module.to_string_lossy().into_owned();
    for how in ["close", "open"] {
        let args = [m.as_str(), "2", how];
        assert_eq!(
            offload_stdout(loader, &args),
            host_stdout(loader, &args, &[])
        );
    }
}

#[test]
fn exit_from_a_second_thread_and_fork_after_use() {
    let bin = exit_paths();
    for mode in ["thread", "fork"] {
        assert_eq!(
            offload_stdout(bin, &[mode]),
            host_stdout(bin, &[mode], &[]),
            "{mode}"
        );
    }
}

/// `exit()` while `target nowait` regions run. libomptarget 16 itself
/// unregisters the program's image at exit while its helper threads may
/// still start regions; those then fail in libomptarget ("does not have a
/// matching target pointer", a fatal error under MANDATORY) with LLVM's
/// plugin exactly as with ours. What the plugin must guarantee: the process
/// ends (no hang) and never by a crash.
#[test]
fn exit_with_target_nowait_regions_in_flight() {
    let bin = exit_paths();
    // The host oracle runs without libomp's hidden helper threads: with them,
    // libomp 16 aborts on `kmp_tasking.cpp(4136): task_team != __null` in 6 of
    // 100 host runs of this mode here (0 of 100 without, same output), the
    // assertion the three-way tests' HOST_WITHOUT_HIDDEN_HELPERS avoid.
    let want = host_stdout(bin, &["nowait"], &[("LIBOMP_USE_HIDDEN_HELPER_TASK", "0")]);
    for _ in 0..3 {
        let out = run(command(bin, Hsa::Sim(1)).arg("nowait"), 120);
        let (stdout, stderr) = texts(&out);
        assert_eq!(stdout, want, "{stderr}");
        let ok = out.status.success()
            || (out.status.signal() == Some(libc::SIGABRT)
                && stderr.contains("Libomptarget fatal error"));
        assert!(ok, "{:?}\n{stderr}", out.status);
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A dispatch the device cannot run (every launch asks for 4 GiB - 1 of
/// dynamic LDS through LIBOMPTARGET_SHARED_MEMORY_SIZE): refused by the
/// plugin with a message naming the limit and the request; the program
/// ends with libomptarget's mandatory-offload error, without hanging.
#[test]
fn an_oversized_launch_is_refused_and_the_program_ends() {
    let bin = compile("saxpy.c", false, &[]);
    let out = run(
        command(&bin, Hsa::Sim(1)).env("LIBOMPTARGET_SHARED_MEMORY_SIZE", "4294967295"),
        120,
    );
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("4294967295 dynamic") && stderr.contains("group segment holds 65536 bytes"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
