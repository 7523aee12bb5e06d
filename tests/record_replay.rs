//! Kernel record and replay (issue 32 item 2): `LIBOMPTARGET_RECORD=1`
//! through our plugin and through LLVM's C++ plugin (the oracle), both over
//! the virtual gfx90a, and `amdgpu-kernel-replay` (staged in
//! `target/stage/bin`) replaying either recording through our plugin.
//!
//! Every program run is an `examples/` program with offload mandatory; our
//! plugin's announcement (or its absence) proves which plugin recorded and
//! which replayed. Expected values come from the host run
//! (`OMP_TARGET_OFFLOAD=DISABLED`) and from LLVM's plugin's recording.
//!
//! LLVM's plugin is run with `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES=1`:
//! LLVM 16's AMDGPU plugin writes each memory snapshot before its
//! asynchronous device-to-host copy has finished (`dumpDeviceMemory` in
//! `PluginInterface.cpp`), so without it its `.memory` files miss the data
//! copied just before the launch (zeros for the first kernel of a
//! program); with copies synchronous its files are what the kernel read
//! and wrote.
//!
//! Needs `cargo xtask stage` (the replay tool) and the virtual device
//! built (`cargo build -p sim`); `cargo xtask test` does both.

mod common;

use common::{
    announcement, command, compile, llvm_plugin_command, plugin_library, run, scratch_dir, sim_dir,
    stage_dir_with, texts, Hsa,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Programs whose kernels are recorded: SPMD loops, generic-mode teams,
/// `target parallel`, reductions, plain `target`.
const EXAMPLES: [&str; 4] = [
    "spmd_loops.c",
    "matmul.c",
    "generic_teams.c",
    "reductions.c",
];

/// The staged replay tool.
fn tool() -> PathBuf {
    stage_dir_with(&["bin/amdgpu-kernel-replay"]).join("bin/amdgpu-kernel-replay")
}

/// An empty scratch directory `rr/<name>`.
fn fresh_dir(name: &str) -> PathBuf {
    let d = scratch_dir(&format!("rr/{name}"));
    std::fs::remove_dir_all(&d).expect("clearing the scratch directory");
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// The program's output on the host: the oracle of every device run.
fn host_output(bin: &Path) -> String {
    let out = run(
        Command::new(bin)
            .env("OMP_TARGET_OFFLOAD", "DISABLED")
            .env("LD_LIBRARY_PATH", "/usr/lib/llvm-16/lib"),
        120,
    );
    assert!(out.status.success(), "host run failed: {:?}", texts(&out));
    texts(&out).0
}

/// Records `bin` through our plugin in `dir`, saving outputs; checks it
/// ran through our plugin and printed the host's output.
fn record_ours(bin: &Path, dir: &Path, host: &str) {
    record_ours_with(bin, dir, host, &[]);
}

/// [`record_ours`] with more environment variables `env`.
fn record_ours_with(bin: &Path, dir: &Path, host: &str, env: &[(&str, &str)]) {
    let mut cmd = command(bin, Hsa::Sim(1));
    cmd.current_dir(dir)
        .env("LIBOMPTARGET_RECORD", "1")
        .env("LIBOMPTARGET_RR_SAVE_OUTPUT", "1")
        .envs(env.iter().copied());
    let out = run(&mut cmd, 300);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&announcement(1)),
        "our plugin did not run: {stderr}"
    );
    assert_eq!(stdout, host, "recording changed the program's results");
}

/// Records `bin` through LLVM's C++ plugin in `dir` (see the module doc for
/// the copy-size knob); checks our plugin did not run.
fn record_llvm(bin: &Path, dir: &Path, host: &str) {
    let out = run(
        llvm_plugin_command(bin)
            .current_dir(dir)
            .env("LIBOMPTARGET_RECORD", "1")
            .env("LIBOMPTARGET_RR_SAVE_OUTPUT", "1")
            .env("LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES", "1"),
        300,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        !stderr.contains("omptarget-amdgpu"),
        "our plugin ran: {stderr}"
    );
    assert_eq!(stdout, host);
}

/// The kernels recorded in `dir` (the stems of its `.json` files), sorted.
fn kernels(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("recording directory")
        .filter_map(|e| {
            let p = e.ok()?.path();
            if p.extension()? != "json" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .collect();
    v.sort();
    v
}

/// `dir/<kernel>.<suffix>`.
fn file(dir: &Path, kernel: &str, suffix: &str) -> PathBuf {
    dir.join(format!("{kernel}.{suffix}"))
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Runs the replay tool with `args` through our plugin (this build's, named
/// with `--plugin`) over one virtual GPU.
fn replay(args: &[&str]) -> Output {
    run(tool_command(&plugin_library()).args(args), 120)
}

/// The replay tool through `plugin` over one virtual GPU, our plugin
/// announcing itself, without recording, launch lines or the JIT cache.
fn tool_command(plugin: &Path) -> Command {
    let mut cmd = Command::new(tool());
    cmd.arg("--plugin")
        .arg(plugin)
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:/usr/lib/llvm-16/lib", sim_dir().display()),
        )
        .env("OMPTARGET_AMDGPU_ANNOUNCE", "1")
        .env("OMPTARGET_AMDGPU_JIT_CACHE", "0")
        .env("HSA_SIM_GPUS", "1")
        .env_remove("LIBOMPTARGET_RECORD")
        .env_remove("LIBOMPTARGET_INFO");
    cmd
}

/// Replays `dir/<kernel>.json` with `--verify` (and `extra`) and checks it
/// verified through our plugin.
fn replay_verified(dir: &Path, kernel: &str, extra: &[&str]) -> Output {
    let json = file(dir, kernel, "json");
    let mut args = vec!["--verify"];
    args.extend_from_slice(extra);
    let json_s = json.to_string_lossy().into_owned();
    args.push(&json_s);
    let out = replay(&args);
    let (stdout, stderr) = texts(&out);
    assert!(
        out.status.success(),
        "replay of {kernel} failed: {stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("Replay device memory verified!"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains(&announcement(1)),
        "our plugin did not replay: {stderr}"
    );
    assert_eq!(
        read(&file(dir, kernel, "replay.output")),
        read(&file(dir, kernel, "original.output")),
        "{kernel}"
    );
    out
}

/// A field of a recording's JSON.
fn field(dir: &Path, kernel: &str, name: &str) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_slice(&read(&file(dir, kernel, "json"))).expect("recorded JSON");
    v[name].clone()
}

#[test]
fn our_recordings_replay_and_verify() {
    for example in EXAMPLES {
        let bin = compile(example, true, &[]);
        let host = host_output(&bin);
        let dir = fresh_dir(&format!("ours-{example}"));
        record_ours(&bin, &dir, &host);
        let ks = kernels(&dir);
        assert!(!ks.is_empty(), "{example}: nothing recorded");
        let mut changed = 0;
        for k in &ks {
            let memory = read(&file(&dir, k, "memory"));
            assert_eq!(
                Some(memory.len() as u64),
                field(&dir, k, "DeviceMemorySize").as_u64(),
                "{k}"
            );
            assert!(file(&dir, k, "image").exists(), "{k}: no image saved");
            let output = read(&file(&dir, k, "original.output"));
            changed += usize::from(output != memory);
            replay_verified(&dir, k, &[]);
        }
        // The outputs are not the inputs: the verification compares what
        // the kernels wrote.
        assert!(changed > 0, "{example}: no kernel changed its memory");
    }
}

#[test]
fn jit_program_recording_holds_bitcode_and_replays() {
    // A `-fopenmp-target-jit` program: the image saved is the bitcode
    // libomptarget passed (as LLVM's `saveImage`), compiled again at replay.
    let bin = compile("spmd_loops.c", true, &["-fopenmp-target-jit"]);
    let host = host_output(&bin);
    let dir = fresh_dir("jit");
    record_ours_with(&bin, &dir, &host, &[("OMPTARGET_AMDGPU_JIT_CACHE", "0")]);
    for k in kernels(&dir) {
        assert!(
            read(&file(&dir, &k, "image")).starts_with(b"BC\xc0\xde"),
            "{k}"
        );
        replay_verified(&dir, &k, &[]);
    }
}

#[test]
fn verify_fails_on_other_memory_and_launch_options_apply() {
    let bin = compile("spmd_loops.c", true, &[]);
    let host = host_output(&bin);
    let dir = fresh_dir("options");
    record_ours(&bin, &dir, &host);
    let ks = kernels(&dir);
    let k = &ks[0];
    let json = file(&dir, k, "json").to_string_lossy().into_owned();

    // --num-teams / --num-threads reach the launch (our plugin's launch
    // line, LIBOMPTARGET_INFO=16); an SPMD loop's result does not depend
    // on them, so the memory still verifies.
    let out = run(
        tool_command(&plugin_library())
            .args(["-verify", "--num-teams=3", "-num-threads", "64", &json])
            .env("LIBOMPTARGET_INFO", "16"),
        120,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("verified!"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "Launching kernel {k} with 3 blocks and 64 threads"
        )),
        "{stderr}"
    );

    // One byte of the recorded output changed: the replay's memory no
    // longer matches, exit status 1, the offset named.
    let path = file(&dir, k, "original.output");
    let mut output = read(&path);
    let at = output.len() / 2;
    output[at] ^= 0x40;
    std::fs::write(&path, &output).unwrap();
    let out = replay(&["--verify", &json]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("failed to verify"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "1 of {} bytes differ, the first at offset {at:#x}",
            output.len()
        )),
        "{stdout}"
    );
}

#[test]
fn llvm_recordings_equal_ours_and_replay_through_our_tool() {
    for example in EXAMPLES {
        let bin = compile(example, true, &[]);
        let host = host_output(&bin);
        let ours = fresh_dir(&format!("cmp-ours-{example}"));
        let llvm = fresh_dir(&format!("cmp-llvm-{example}"));
        record_ours(&bin, &ours, &host);
        record_llvm(&bin, &llvm, &host);
        let ks = kernels(&llvm);
        assert!(!ks.is_empty(), "{example}: LLVM recorded nothing");
        assert_eq!(kernels(&ours), ks, "{example}: other kernels recorded");
        for k in &ks {
            // The same launch description, byte for byte (field names,
            // order, types, arguments: the reserved block sits at the same
            // address), the same memory before and after.
            for suffix in ["json", "memory", "original.output"] {
                assert!(
                    read(&file(&ours, k, suffix)) == read(&file(&llvm, k, suffix)),
                    "{example}: {k}.{suffix} differs from LLVM's"
                );
            }
            // LLVM 16 writes no image: the tool takes the program instead.
            assert!(!file(&llvm, k, "image").exists());
            replay_verified(&llvm, k, &["--image", &bin.to_string_lossy()]);
        }
    }
}

#[test]
fn our_recording_replays_through_llvm_plugin_too() {
    // The recording's format is LLVM's: LLVM's C++ plugin (opened by the
    // tool with --plugin) replays ours and saves the same memory.
    let bin = compile("matmul.c", true, &[]);
    let host = host_output(&bin);
    let dir = fresh_dir("through-llvm");
    record_ours(&bin, &dir, &host);
    for k in kernels(&dir) {
        let json = file(&dir, &k, "json").to_string_lossy().into_owned();
        let llvm = Path::new("/usr/lib/llvm-16/lib/libomptarget.rtl.amdgpu.nextgen.so");
        let out = run(
            tool_command(llvm)
                .args(["--verify", &json])
                .env("LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES", "1"),
            120,
        );
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{k}: {stdout}\n{stderr}");
        assert!(stdout.contains("verified!"), "{k}: {stdout}");
        assert!(
            !stderr.contains("omptarget-amdgpu"),
            "our plugin ran: {stderr}"
        );
    }
}

/// A copy of kernel `k`'s recording in `good`, in a fresh directory
/// `malformed-<name>`, changed by `mutate`; returns the copy's directory.
fn mutated(good: &Path, k: &str, name: &str, mutate: impl FnOnce(&Path)) -> PathBuf {
    let dir = fresh_dir(&format!("malformed-{name}"));
    for suffix in ["json", "memory", "image", "original.output"] {
        std::fs::copy(file(good, k, suffix), file(&dir, k, suffix)).unwrap();
    }
    mutate(&dir);
    dir
}

/// Replays `dir`'s recording of `k` with `extra` and checks that it ends
/// as an error, not a crash: exit status 2, one message naming what was
/// wrong (`message`).
fn fails_cleanly(dir: &Path, k: &str, extra: &[&str], message: &str) {
    let json = file(dir, k, "json").to_string_lossy().into_owned();
    let mut args = extra.to_vec();
    args.push(&json);
    let out = replay(&args);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("amdgpu-kernel-replay: error: ") && stderr.contains(message),
        "want {message:?} in\n{stderr}"
    );
}

#[test]
fn malformed_recordings_fail_cleanly() {
    let bin = compile("spmd_loops.c", true, &[]);
    let host = host_output(&bin);
    let good = fresh_dir("malformed-source");
    record_ours(&bin, &good, &host);
    let k = &kernels(&good)[0];
    let edit = |dir: &Path, suffix: &str, f: &dyn Fn(Vec<u8>) -> Vec<u8>| {
        let p = file(dir, k, suffix);
        std::fs::write(&p, f(read(&p))).unwrap();
    };
    let replace = |from: String, to: String| {
        move |t: Vec<u8>| {
            let text = String::from_utf8(t).unwrap();
            assert!(text.contains(&from), "{text}");
            text.replacen(&from, &to, 1).into_bytes()
        }
    };

    let d = mutated(&good, k, "json-cut", |d| {
        edit(d, "json", &|t| t[..t.len() / 2].to_vec())
    });
    fails_cleanly(&d, k, &[], "is not a kernel description (JSON)");

    let n = field(&good, k, "NumArgs").as_u64().unwrap();
    let d = mutated(&good, k, "num-args", |d| {
        edit(
            d,
            "json",
            &replace(format!("\"NumArgs\":{n}"), format!("\"NumArgs\":{}", n + 1)),
        )
    });
    let want = format!("field ArgPtrs holds {n} values but NumArgs is {}", n + 1);
    fails_cleanly(&d, k, &[], &want);

    let d = mutated(&good, k, "no-trip-count", |d| {
        edit(
            d,
            "json",
            &replace("\"LoopTripCount\"".into(), "\"TripCount\"".into()),
        )
    });
    fails_cleanly(&d, k, &[], "field LoopTripCount is missing");

    let d = mutated(&good, k, "bad-device", |d| {
        edit(
            d,
            "json",
            &replace("\"DeviceId\":0".into(), "\"DeviceId\":5".into()),
        )
    });
    fails_cleanly(
        &d,
        k,
        &[],
        "replay failed at number_of_devices: the recording ran on device 5, the plugin has 1",
    );

    let d = mutated(&good, k, "memory-cut", |d| {
        edit(d, "memory", &|t| t[..t.len() - 16].to_vec())
    });
    fails_cleanly(&d, k, &[], "(DeviceMemorySize): truncated");

    let d = mutated(&good, k, "memory-missing", |d| {
        std::fs::remove_file(file(d, k, "memory")).unwrap()
    });
    let want = format!("cannot read {}", file(&d, k, "memory").display());
    fails_cleanly(&d, k, &[], &want);

    let d = mutated(&good, k, "image-garbage", |d| {
        edit(d, "image", &|_| b"not an image".to_vec())
    });
    fails_cleanly(
        &d,
        k,
        &[],
        "not an AMDGPU code object, LLVM bitcode or a 64-bit ELF program",
    );

    let other = compile("matmul.c", true, &[]);
    let d = mutated(&good, k, "other-program", |_| ());
    fails_cleanly(
        &d,
        k,
        &["--image", &other.to_string_lossy()],
        &format!("embedded in the program defines kernel {k}"),
    );

    let d = mutated(&good, k, "no-original-output", |d| {
        std::fs::remove_file(file(d, k, "original.output")).unwrap()
    });
    fails_cleanly(
        &d,
        k,
        &["--verify"],
        "record with LIBOMPTARGET_RR_SAVE_OUTPUT=1 to verify",
    );
}

#[test]
fn reservation_steps_down_and_a_zero_size_fails() {
    let bin = compile("spmd_loops.c", true, &[]);
    let host = host_output(&bin);
    // A device of 3 GiB: the default 64 GiB reservation is refused, 3 GiB
    // taken (one GiB less per try, as LLVM's), and the recording replays.
    let dir = fresh_dir("small-device");
    let out = run(
        command(&bin, Hsa::Sim(1))
            .current_dir(&dir)
            .env("HSA_SIM_DEVICE_MEMORY", "3G")
            .env("LIBOMPTARGET_RECORD", "1")
            .env("LIBOMPTARGET_RR_SAVE_OUTPUT", "1"),
        300,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, host);
    let k = kernels(&dir)[0].clone();
    replay_verified(&dir, &k, &[]);

    // LIBOMPTARGET_RR_DEVMEM_SIZE=0: nothing to reserve; the device fails
    // to initialise with a message saying why, and offload being
    // mandatory, the program stops without running its regions.
    let dir = fresh_dir("zero");
    let out = run(
        command(&bin, Hsa::Sim(1))
            .current_dir(&dir)
            .env("LIBOMPTARGET_RECORD", "1")
            .env("LIBOMPTARGET_RR_DEVMEM_SIZE", "0"),
        300,
    );
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("LIBOMPTARGET_RR_DEVMEM_SIZE is 0"),
        "{stderr}"
    );
    assert!(kernels(&dir).is_empty());
}
