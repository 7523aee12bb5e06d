//! The device side of the standalone loader, built and staged by
//! `cargo xtask stage`:
//!
//! - `target/stage/device/include/`: the C headers of the device library
//!   (`stdio.h`, `stdlib.h`, `string.h`, `gpu.h`, ...); clang's own
//!   `stdint.h`, `stddef.h` and `stdbool.h` come from clang;
//! - `target/stage/device/lib/crt1.o` (the `_begin`, `_start`, `_end`
//!   kernels) and `libgpuc.a` (RPC client + C library subset), both LLVM
//!   bitcode for gfx90a, linked with the program by LTO;
//! - `target/stage/device/lib/libcgpu.a`: `printf`, `puts`, `malloc`,
//!   `calloc`, `realloc`, `free` for OpenMP target regions (LLVM 16,
//!   gfx90a), a fat static archive whose host half is empty; users link it
//!   with `-Ltarget/stage/device/lib -lcgpu` and our plugin serves it;
//! - `target/stage/bin/amdgpu-cc`: the compiler driver (a shell script);
//! - `target/stage/oracle/llvm-rpc-oracle`: a loader serving RPC with LLVM
//!   19's `libllvmlibc_rpc_server.a` (the reference for our server).

use crate::cmd::{mkdir, run};
use std::path::Path;
use std::process::Command;

use crate::stage::workspace_root;

/// Library sources under `device/src/` that go into `libgpuc.a`.
const LIBRARY_SOURCES: [&str; 4] = ["rpc", "stdio", "stdlib", "string"];

/// Where LLVM 19's RPC server library and headers are (Debian's
/// `libllvmlibc-19-dev`).
const LLVM19: &str = "/usr/lib/llvm-19";

fn install(from: &Path, to: &Path, executable: bool) -> Result<(), String> {
    let tmp = to.with_extension("tmp-stage");
    std::fs::copy(from, &tmp)
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), tmp.display()))?;
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("chmod {}: {e}", tmp.display()))?;
    }
    std::fs::rename(&tmp, to)
        .map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), to.display()))
}

/// Flags every device library source is compiled with (LLVM 16's and LLVM 19's
/// clang alike), before its include directory.
pub const DEVICE_CFLAGS: [&str; 12] = [
    "--target=amdgcn-amd-amdhsa",
    "-mcpu=gfx90a",
    "-nogpulib",
    "-ffreestanding",
    "-fno-builtin",
    "-nostdlibinc",
    "-flto",
    "-O2",
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Werror",
];

/// [`DEVICE_CFLAGS`] with the device library's headers as system headers.
fn device_cflags(include: &Path) -> Vec<String> {
    DEVICE_CFLAGS
        .iter()
        .map(|s| s.to_string())
        .chain(["-isystem".to_string(), include.display().to_string()])
        .collect()
}

/// Builds the device library, `amdgpu-cc` and the LLVM oracle into
/// `stage` (normally `target/stage`). `sim_dir` holds the virtual device's
/// `libhsa-runtime64.so` the oracle links against (any HSA runtime with the
/// same ABI serves at run time).
pub fn stage_device(stage: &Path, sim_dir: &Path) -> Result<(), String> {
    let root = workspace_root();
    let src = root.join("device");
    let device_dir = stage.join("device");
    let include = device_dir.join("include");
    let lib = device_dir.join("lib");
    let bin = stage.join("bin");
    let oracle_dir = stage.join("oracle");
    let build = crate::stage::target_dir().join("device-build");
    for d in [&include, &lib, &bin, &oracle_dir, &build] {
        mkdir(d)?;
    }

    let headers = std::fs::read_dir(src.join("include"))
        .map_err(|e| format!("reading device/include: {e}"))?;
    for h in headers {
        let h = h.map_err(|e| format!("reading device/include: {e}"))?;
        install(&h.path(), &include.join(h.file_name()), false)?;
    }

    let flags = device_cflags(&include);
    let mut objects = Vec::new();
    for name in LIBRARY_SOURCES {
        let obj = build.join(format!("{name}.o"));
        run(Command::new("clang-16")
            .args(&flags)
            .arg("-c")
            .arg(src.join("src").join(format!("{name}.c")))
            .arg("-o")
            .arg(&obj))?;
        objects.push(obj);
    }
    let archive = build.join("libgpuc.a");
    let _ = std::fs::remove_file(&archive);
    run(Command::new("llvm-ar-16")
        .arg("rcs")
        .arg(&archive)
        .args(&objects))?;
    install(&archive, &lib.join("libgpuc.a"), false)?;
    let crt = build.join("crt1.o");
    run(Command::new("clang-16")
        .args(&flags)
        .arg("-c")
        .arg(src.join("src/start.c"))
        .arg("-o")
        .arg(&crt))?;
    install(&crt, &lib.join("crt1.o"), false)?;

    build_libcgpu(&src, &build, &lib)?;

    let amdgpu_cc = bin.join("amdgpu-cc");
    install(&src.join("amdgpu-cc"), &amdgpu_cc, true)?;

    let oracle = oracle_dir.join("llvm-rpc-oracle");
    let built = build.join("llvm-rpc-oracle");
    run(Command::new("clang++-16")
        .args(["-std=c++17", "-O2", "-Wall", "-Werror"])
        .arg(format!("-I{LLVM19}/include"))
        .arg(src.join("oracle/llvm_rpc_oracle.cpp"))
        .arg(format!("{LLVM19}/lib/libllvmlibc_rpc_server.a"))
        .arg(format!("{LLVM19}/lib/libllvmlibc.a"))
        .arg(format!("-L{}", sim_dir.display()))
        .arg("-lhsa-runtime64")
        .arg("-o")
        .arg(&built))?;
    install(&built, &oracle, true)?;

    Ok(())
}

/// Builds `libcgpu.a` from `device/omp/cgpu.c`: compiled as OpenMP for
/// gfx90a, so the object carries the device code in its offloading section
/// (clang-linker-wrapper takes it from the archive at the program's link)
/// and an empty host part.
fn build_libcgpu(src: &Path, build: &Path, lib: &Path) -> Result<(), String> {
    let obj = build.join("cgpu.o");
    run(Command::new("clang-16")
        .env(
            "PATH",
            format!(
                "{}:{}",
                crate::run::LLVM_BIN,
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .args([
            "-fopenmp",
            "--offload-arch=gfx90a",
            "-nogpulib",
            "-O2",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-c",
        ])
        .arg(src.join("omp/cgpu.c"))
        .arg("-o")
        .arg(&obj))?;
    let archive = build.join("libcgpu.a");
    let _ = std::fs::remove_file(&archive);
    run(Command::new("llvm-ar-16")
        .arg("rcs")
        .arg(&archive)
        .arg(&obj))?;
    install(&archive, &lib.join("libcgpu.a"), false)
}

/// The second half of `cargo xtask demo`: `device/examples/hello_lanes.c`
/// compiled with `amdgpu-cc` and run by our `amdhsa-loader` on 64 threads of
/// the virtual gfx90a with a few arguments, then by `llvm-rpc-oracle` (LLVM
/// 19's server); PASS when both print the same bytes and exit 0.
pub fn loader_demo() -> Result<(), String> {
    let stage = crate::stage::target_dir().join("stage");
    let src = workspace_root().join("device/examples/hello_lanes.c");
    let build = crate::stage::target_dir().join("device-build");
    mkdir(&build)?;
    let image = build.join("hello_lanes.gpu");
    println!();
    println!("loader demo: device/examples/hello_lanes.c, main on the GPU, through amdhsa-loader");
    run(Command::new(stage.join("bin/amdgpu-cc"))
        .arg("-O2")
        .arg(&src)
        .arg("-o")
        .arg(&image))?;
    let args = ["40", "2", "hello world"];
    let run_with = |loader: &Path| -> Result<std::process::Output, String> {
        Command::new(loader)
            .env("LD_LIBRARY_PATH", stage.join("sim"))
            .args(["--threads", "64"])
            .current_dir(&build)
            .arg("hello_lanes.gpu")
            .args(args)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", loader.display()))
    };
    let ours = run_with(&stage.join("bin/amdhsa-loader"))?;
    println!(
        "$ amdgpu-cc -O2 hello_lanes.c -o hello_lanes.gpu && amdhsa-loader --threads 64 hello_lanes.gpu {}",
        args.map(|a| if a.contains(' ') { format!("'{a}'") } else { a.to_string() }).join(" ")
    );
    print!("{}", String::from_utf8_lossy(&ours.stdout));
    eprint!("{}", String::from_utf8_lossy(&ours.stderr));
    let llvm = run_with(&stage.join("oracle/llvm-rpc-oracle"))?;
    let same = ours.status.success()
        && llvm.status.success()
        && ours.stdout == llvm.stdout
        && ours.stderr == llvm.stderr
        && !ours.stdout.is_empty();
    if same {
        println!("result:        identical to the run served by LLVM 19's RPC server");
        println!("PASS");
        Ok(())
    } else {
        println!(
            "--- LLVM 19's server (exit {:?})\n{}",
            llvm.status.code(),
            String::from_utf8_lossy(&llvm.stdout)
        );
        println!("FAIL");
        Err(format!(
            "amdhsa-loader (exit {:?}) and LLVM's server (exit {:?}) differ",
            ours.status.code(),
            llvm.status.code()
        ))
    }
}
