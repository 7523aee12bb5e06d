//! `cargo xtask`: the project's developer and user commands.
//!
//! Usage: `cargo xtask <command> [args...]`. Commands:
//! - `demo`: stage everything and run `examples/stencil_heat.c` through our
//!   plugin on the virtual gfx90a, checked against the host (PASS/FAIL).
//! - `run [--plugin ours|llvm] [--device virtual|rocm] [--host] [--cgpu] [-O<n>] PROGRAM [ARGS]`:
//!   compile (if given a source) and run an OpenMP program (`--cgpu`: linked
//!   with `libcgpu.a` for `printf`/`malloc` in target regions); `run --llvm 19
//!   [--host] [-O<n>] PROGRAM [ARGS]`: with clang-19 through LLVM 19's
//!   libomptarget instead.
//! - `bench`: our plugin against LLVM's C++ plugin on the virtual gfx90a
//!   (round trip, nowait throughput, instructions per launch, map times).
//! - `loader-bench`: the standalone loader's benchmark (puts round trip,
//!   printf lines per second, server CPU use), LLVM 19's server and ours.
//! - `bench-device`: the virtual gfx90a against the host at 1 and 2 workers
//!   (STREAM, a gather-heavy kernel, saxpy, matmul), device/host ratios.
//! - `lit [ours|llvm|both] [FILTER]`: LLVM 16's libomptarget lit suite over
//!   the virtual gfx90a through our plugin, LLVM's, or both (table + summary);
//!   `lit --llvm 19 [FILTER]`: LLVM 19's offload suite through LLVM 19's
//!   libomptarget.
//! - `stress [N]`: the concurrency and multi-device examples N times (default
//!   50) through both plugins under full CPU load; failures per program and plugin.
//! - `bench-printf [--baseline DIR]`: `printf` in target regions (lines/s
//!   from 25,600 threads, one-lane round trip) and the launch instructions
//!   of a kernel without RPC (against the plugin in DIR when given).
//! - `libc-gpu [--quick]`: LLVM 19's GPU libc built from Debian's source
//!   package, its GPU tests run through our `amdhsa-loader` and LLVM 19's
//!   own loader on the virtual gfx90a; prints a table (cached under
//!   `target/libc-gpu/`, not part of `test`).
//! - `package [--test]`: Debian packages of the staged files in
//!   `target/packages/` (`--test`: installed into a throw-away root, run,
//!   removed; see `package/mod.rs`). `package-root` is that test's inner
//!   half, run by it in a mount namespace of its own.
//! - `setup [--llvm 19]`: install the Debian packages the project needs, if
//!   missing (`--llvm 19`: also LLVM 19's toolchain, its libomp unpacked
//!   under `target/llvm19/`, see `llvm19.rs`).
//! - `stage`: build the plugin and the virtual device (release) and lay them
//!   out in `target/stage/plugin/` and `target/stage/sim/`.
//! - `test [cargo test args]`: setup, then every test; ends with `N passed, N failed`.
//! - `bindings [--check]`: regenerate `hsa-sys/src/bindings.rs` and
//!   `hsa-sys/src/functions.rs` from `include/hsa_subset.h` (or, with
//!   `--check`, fail if the committed files are stale).

mod bench;
mod bench_device;
mod bench_printf;
mod bindings;
mod cmd;
#[cfg(test)]
mod crosscheck;
mod demo;
mod device;
#[cfg(test)]
mod layers;
mod libc_gpu;
mod lit;
mod llvm19;
mod loader_bench;
mod package;
mod run;
mod setup;
mod stage;
mod stress;
mod test;

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprintln!("usage: cargo xtask <command> [args...]\ncommands: bench | bench-device | bench-printf [--baseline DIR] | demo | libc-gpu [--quick] | lit [ours|llvm|both] [FILTER] | lit --llvm 19 [FILTER] | loader-bench | package [--test] | run [options] PROGRAM [ARGS] | setup [--llvm 19] | stress [N] | stage | test [args] | bindings [--check]");
        return ExitCode::FAILURE;
    };
    let rest: Vec<String> = args.collect();
    let result = match command.as_str() {
        "bindings" => bindings::run(&rest).map_err(|e| e.to_string()),
        "setup" if rest.first().is_some_and(|a| a == "--llvm") => llvm19::setup_command(&rest),
        "setup" => setup::run_command(&rest),
        "stage" => stage::run_command(&rest),
        "test" => test::run_command(&rest),
        "run" => run::run_command(&rest),
        "demo" => demo::run_command(&rest),
        "bench" => bench::run_command(&rest),
        "loader-bench" => loader_bench::run_command(&rest),
        "bench-device" => bench_device::run_command(&rest),
        "lit" => lit::run_command(&rest),
        "stress" => stress::run_command(&rest),
        "bench-printf" => bench_printf::run_command(&rest),
        "libc-gpu" => libc_gpu::run_command(&rest),
        "package" => package::run_command(&rest),
        "package-root" => package::root_command(&rest),
        other => Err(format!("unknown xtask command `{other}`")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask {command}: {message}");
            ExitCode::FAILURE
        }
    }
}
