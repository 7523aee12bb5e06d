//! Device-image inspection (`omptarget_amdgpu::image`) checked against LLVM's
//! own tools on code objects built at test time with clang-16:
//!
//! - target IDs: the `-mcpu` string given to clang, `llvm-readobj-16`'s
//!   decoded `e_flags` and the `amdhsa.target` of `llvm-readelf-16 --notes`;
//! - `<kernel>_exec_mode` bytes: `llvm-readelf-16 --dyn-syms` for the symbol
//!   and `llvm-objdump-16 -s` for the section bytes;
//! - kernel metadata: the YAML `llvm-readelf-16 --notes` prints;
//! - robustness: mutated and truncated images never panic.
//!
//! Run: `cargo test -p omptarget-amdgpu --test plugin_units`.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use omptarget_amdgpu::image::{self, ImageKind, TargetId};
use omptarget_amdgpu::launch::ExecMode;

const LLVM_BIN: &str = "/usr/lib/llvm-16/bin";
const DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

/// OpenMP program with a combined SPMD construct, a `teams` + `distribute` +
/// nested `parallel for` (generic, SPMD-ized at -O2), a plain `target`, and a
/// `declare target` global.
const OMP_SRC: &str = r#"#include <stdio.h>
int g[4];
#pragma omp declare target(g)
int main(void) {
  int n = 1000;
  int a[1000];
#pragma omp target teams distribute parallel for map(from: a[0:n])
  for (int i = 0; i < n; i++) a[i] = i;
#pragma omp target teams num_teams(4)
  {
#pragma omp distribute
    for (int i = 0; i < 8; i++) {
      int s = 0;
#pragma omp parallel for reduction(+:s)
      for (int j = 0; j < 100; j++) s += j * i;
      g[i % 4] = s;
    }
  }
#pragma omp target
  { g[0] = 1; }
  printf("%d %d\n", a[999], g[0]);
  return 0;
}
"#;

const PLAIN_SRC: &str = "int f(int x) { return x + 1; }\n";

/// Targets of the plain (non-OpenMP) code objects. clang 16 rejects target
/// IDs with features in OpenMP `--offload-arch`, so those are plain.
const PLAIN_TARGETS: &[&str] = &[
    "gfx90a",
    "gfx90a:xnack+",
    "gfx90a:sramecc-:xnack-",
    "gfx1030",
    "gfx908:xnack-",
    "gfx900",
];

struct Fixtures {
    dir: PathBuf,
    /// (clang -mcpu string, linked code object path).
    plain: Vec<(String, PathBuf)>,
    /// OpenMP -O2 device images, gfx90a and gfx1030.
    omp_gfx90a: PathBuf,
    omp_gfx1030: PathBuf,
    /// OpenMP -O0 device image (kernels keep the front end's modes).
    omp_o0: PathBuf,
    /// Host executable and relocatable device object of the -O2 build.
    host_exe: PathBuf,
    device_obj: PathBuf,
    /// Bitcode for amdgcn, x86-64 and nvptx64.
    bc_amdgcn: PathBuf,
    bc_x86: PathBuf,
    bc_nvptx: PathBuf,
}

fn run_in(dir: &Path, cmd: &str, args: &[&str]) -> String {
    let path = format!(
        "{LLVM_BIN}:{}",
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );
    let out = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn tool(cmd: &str, args: &[&str]) -> String {
    run_in(Path::new("/"), cmd, args)
}

fn find_with_suffix(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(prefix) && n.ends_with(suffix)
        })
        .unwrap_or_else(|| panic!("no {prefix}*{suffix} in {}", dir.display()))
}

fn build_omp(dir: &Path, out: &str, opt: &str, arches: &[&str]) {
    let libs = format!("--rocm-device-lib-path={DEVICE_LIBS}");
    let mut args: Vec<String> = vec!["-fopenmp".into()];
    args.extend(arches.iter().map(|a| format!("--offload-arch={a}")));
    args.extend(
        [&libs, opt, "omp.c", "-o", out, "-Wl,--save-temps"]
            .iter()
            .map(|s| s.to_string()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_in(dir, "clang-16", &args);
}

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugin_units");
        // Remove directories left by earlier runs whose process is gone.
        if let Ok(entries) = std::fs::read_dir(&root) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.parse::<u32>().is_ok() && !Path::new("/proc").join(&name).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = root.join(std::process::id().to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("omp.c"), OMP_SRC).unwrap();
        std::fs::write(dir.join("k.c"), PLAIN_SRC).unwrap();

        std::thread::scope(|s| {
            let o2 = s.spawn(|| build_omp(&dir, "omp2", "-O2", &["gfx90a", "gfx1030"]));
            let o0 = s.spawn(|| build_omp(&dir, "omp0", "-O0", &["gfx90a"]));
            for (i, target) in PLAIN_TARGETS.iter().enumerate() {
                let mcpu = format!("-mcpu={target}");
                let obj = format!("plain{i}.o");
                let co = format!("plain{i}.co");
                run_in(
                    &dir,
                    "clang-16",
                    &[
                        "--target=amdgcn-amd-amdhsa",
                        &mcpu,
                        "-nogpulib",
                        "-O1",
                        "-c",
                        "k.c",
                        "-o",
                        &obj,
                    ],
                );
                run_in(&dir, "ld.lld-16", &["-shared", &obj, "-o", &co]);
            }
            for (triple, out, extra) in [
                (
                    "amdgcn-amd-amdhsa",
                    "k_amdgcn.bc",
                    &["-mcpu=gfx90a", "-nogpulib"][..],
                ),
                ("x86_64-linux-gnu", "k_x86.bc", &[][..]),
                ("nvptx64-nvidia-cuda", "k_nvptx.bc", &[][..]),
            ] {
                let t = format!("--target={triple}");
                let mut args = vec![t.as_str(), "-emit-llvm", "-c", "k.c", "-o", out];
                args.extend_from_slice(extra);
                run_in(&dir, "clang-16", &args);
            }
            o2.join().unwrap();
            o0.join().unwrap();
        });

        Fixtures {
            plain: PLAIN_TARGETS
                .iter()
                .enumerate()
                .map(|(i, t)| (t.to_string(), dir.join(format!("plain{i}.co"))))
                .collect(),
            omp_gfx90a: find_with_suffix(&dir, "omp2.", "gfx90a.img"),
            omp_gfx1030: find_with_suffix(&dir, "omp2.", "gfx1030.img"),
            omp_o0: find_with_suffix(&dir, "omp0.", "gfx90a.img"),
            host_exe: dir.join("omp2"),
            device_obj: find_with_suffix(&dir, "omp2.", "gfx90a.o"),
            bc_amdgcn: dir.join("k_amdgcn.bc"),
            bc_x86: dir.join("k_x86.bc"),
            bc_nvptx: dir.join("k_nvptx.bc"),
            dir,
        }
    })
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---------------------------------------------------------------------------
// Oracles from LLVM's tools

/// Target ID from `llvm-readobj-16 -h`'s decoded `e_flags` names.
fn readobj_target(path: &Path) -> TargetId {
    let out = tool("llvm-readobj-16", &["-h", s(path)]);
    let mut processor = None;
    let (mut xnack, mut sramecc) = (None, None);
    for line in out.lines().map(str::trim) {
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some(mach) = name.strip_prefix("EF_AMDGPU_MACH_AMDGCN_") {
            processor = Some(mach.to_lowercase());
        }
        let setting = |feature: &str| -> Option<Option<bool>> {
            let rest = name.strip_prefix(&format!("EF_AMDGPU_FEATURE_{feature}_"))?;
            Some(match rest.split('_').next() {
                Some("ON") => Some(true),
                Some("OFF") => Some(false),
                _ => None,
            })
        };
        if let Some(v) = setting("XNACK") {
            xnack = v;
        }
        if let Some(v) = setting("SRAMECC") {
            sramecc = v;
        }
    }
    TargetId {
        processor: processor.unwrap_or_else(|| panic!("no EF_AMDGPU_MACH in:\n{out}")),
        xnack,
        sramecc,
    }
}

/// `amdhsa.target` from the metadata note as `llvm-readelf-16` prints it.
fn readelf_amdhsa_target(path: &Path) -> String {
    let out = tool("llvm-readelf-16", &["--notes", s(path)]);
    let line = out
        .lines()
        .find(|l| l.starts_with("amdhsa.target:"))
        .unwrap_or_else(|| panic!("no amdhsa.target in:\n{out}"));
    line["amdhsa.target:".len()..]
        .trim()
        .trim_matches('\'')
        .to_string()
}

/// Dynamic symbols: name -> (value, size), from `llvm-readelf-16 --dyn-syms`.
fn dyn_syms(path: &Path) -> HashMap<String, (u64, u64)> {
    let out = tool("llvm-readelf-16", &["--dyn-syms", "-W", s(path)]);
    let mut map = HashMap::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name
        let numbered = f
            .first()
            .and_then(|n| n.strip_suffix(':'))
            .is_some_and(|n| n.parse::<u32>().is_ok());
        if f.len() == 8 && numbered && f[6] != "UND" {
            let value = u64::from_str_radix(f[1], 16).unwrap();
            let size: u64 = f[2].parse().unwrap();
            map.insert(f[7].to_string(), (value, size));
        }
    }
    map
}

/// Bytes of `section` by address, from `llvm-objdump-16 -s -j <section>`.
fn section_bytes(path: &Path, section: &str) -> HashMap<u64, u8> {
    let out = tool("llvm-objdump-16", &["-s", "-j", section, s(path)]);
    let mut bytes = HashMap::new();
    for line in out.lines() {
        // " 0e00 02030300 00000000 00                 ........."
        let mut words = line.split_whitespace();
        let Some(addr) = words.next().and_then(|a| u64::from_str_radix(a, 16).ok()) else {
            continue;
        };
        if !line.starts_with(' ') {
            continue;
        }
        let mut at = addr;
        for word in words.take(4) {
            if word.len() % 2 != 0 || !word.chars().all(|c| c.is_ascii_hexdigit()) {
                break;
            }
            for i in (0..word.len()).step_by(2) {
                bytes.insert(at, u8::from_str_radix(&word[i..i + 2], 16).unwrap());
                at += 1;
            }
        }
    }
    bytes
}

/// Per kernel from `llvm-readelf-16 --notes`: name, kernarg size, max flat
/// workgroup size, number of explicit args, number of all args.
#[derive(Debug, Default, PartialEq)]
struct YamlKernel {
    name: String,
    kernarg_segment_size: u32,
    max_flat_workgroup_size: u32,
    explicit_args: usize,
    args: usize,
}

fn readelf_kernels(path: &Path) -> Vec<YamlKernel> {
    let out = tool("llvm-readelf-16", &["--notes", s(path)]);
    let mut kernels: Vec<YamlKernel> = Vec::new();
    let mut in_kernels = false;
    for line in out.lines() {
        if line.starts_with("amdhsa.kernels:") {
            in_kernels = true;
            continue;
        }
        if in_kernels && !line.starts_with(' ') {
            in_kernels = false;
        }
        if !in_kernels {
            continue;
        }
        if line.starts_with("  - ") {
            kernels.push(YamlKernel::default());
        }
        let k = kernels.last_mut().unwrap();
        let t = line.trim_start().trim_start_matches("- ");
        let value = |key: &str| t.strip_prefix(key).map(|v| v.trim().to_string());
        // Kernel-level keys sit at indentation 4 ("  - " counts as 4).
        let kernel_level = line.starts_with("    .") || line.starts_with("  - .");
        if kernel_level {
            if let Some(v) = value(".name:") {
                k.name = v;
            }
            if let Some(v) = value(".kernarg_segment_size:") {
                k.kernarg_segment_size = v.parse().unwrap();
            }
            if let Some(v) = value(".max_flat_workgroup_size:") {
                k.max_flat_workgroup_size = v.parse().unwrap();
            }
        } else if let Some(v) = value(".value_kind:") {
            k.args += 1;
            if !v.starts_with("hidden_") {
                k.explicit_args += 1;
            }
        }
    }
    kernels
}

/// Line numbers (1-based) of the `#pragma omp target` lines of `OMP_SRC`:
/// the suffix `_l<line>` of the kernel names.
fn target_lines() -> Vec<usize> {
    OMP_SRC
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("#pragma omp target"))
        .map(|(i, _)| i + 1)
        .collect()
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn classify_images() {
    let f = fixtures();
    for (target, co) in &f.plain {
        assert_eq!(image::classify(&read(co)), ImageKind::AmdgpuElf, "{target}");
    }
    for p in [&f.omp_gfx90a, &f.omp_gfx1030, &f.omp_o0, &f.device_obj] {
        assert_eq!(
            image::classify(&read(p)),
            ImageKind::AmdgpuElf,
            "{}",
            p.display()
        );
    }
    assert_eq!(image::classify(&read(&f.host_exe)), ImageKind::Other);
    assert_eq!(
        image::classify(&read(&f.bc_amdgcn)),
        ImageKind::AmdgcnBitcode
    );
    assert_eq!(image::classify(&read(&f.bc_x86)), ImageKind::Other);
    assert_eq!(image::classify(&read(&f.bc_nvptx)), ImageKind::Other);
    // The linker wrapper's amdgcn LTO input is bitcode too.
    let postlink = find_with_suffix(&f.dir, "omp2.amdgcn-amd-amdhsa.gfx90a", "postlink.bc");
    assert_eq!(image::classify(&read(&postlink)), ImageKind::AmdgcnBitcode);
    assert!(matches!(
        image::elf_target_id(&read(&f.host_exe)),
        Err(image::ImageError::CodeObject(
            code_object::Error::WrongMachine(62)
        ))
    ));
}

#[test]
fn target_ids_match_llvm_tools() {
    let f = fixtures();
    let mut images: Vec<(String, PathBuf)> = f.plain.clone();
    images.push(("gfx90a".into(), f.omp_gfx90a.clone()));
    images.push(("gfx1030".into(), f.omp_gfx1030.clone()));
    for (target, path) in &images {
        let ours = image::elf_target_id(&read(path)).unwrap();
        assert_eq!(ours, readobj_target(path), "{target}: e_flags decoding");
        assert_eq!(ours, TargetId::parse(target).unwrap(), "{target}: -mcpu");
        let note = TargetId::parse(&readelf_amdhsa_target(path)).unwrap();
        assert_eq!(ours, note, "{target}: amdhsa.target");
        assert_eq!(ours.to_string(), *target, "canonical spelling");
    }
}

#[test]
fn compatibility_of_built_images_with_agents() {
    let f = fixtures();
    let id = |target: &str| {
        let (_, path) = f.plain.iter().find(|(t, _)| t == target).unwrap();
        image::elf_target_id(&read(path)).unwrap()
    };
    // A gfx90a agent as ROCm names it (sramecc on, xnack off).
    let mi210 = TargetId::parse("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").unwrap();
    assert!(id("gfx90a").is_compatible(&mi210));
    assert!(!id("gfx90a:xnack+").is_compatible(&mi210));
    assert!(!id("gfx90a:sramecc-:xnack-").is_compatible(&mi210));
    assert!(!id("gfx1030").is_compatible(&mi210));
    assert!(!id("gfx908:xnack-").is_compatible(&mi210));
    let xnack_on = TargetId::parse("gfx90a:sramecc+:xnack+").unwrap();
    assert!(id("gfx90a:xnack+").is_compatible(&xnack_on));
}

#[test]
fn exec_modes_match_objdump() {
    let f = fixtures();
    let lines = target_lines();
    assert_eq!(lines.len(), 3);
    // Expected (`<kernel>_exec_mode`, `OMPTgtExecModeFlags`): combined
    // construct SPMD (2) at any -O; at -O0
    // the other two stay generic (1); at -O2 they are SPMD-ized (3).
    let expect: [(&PathBuf, [u8; 3]); 3] = [
        (&f.omp_gfx90a, [2, 3, 3]),
        (&f.omp_gfx1030, [2, 3, 3]),
        (&f.omp_o0, [2, 1, 1]),
    ];
    for (path, modes) in expect {
        let bytes = read(path);
        let syms = dyn_syms(path);
        let rodata = section_bytes(path, ".rodata");
        let kernels = image::kernel_metadata(&bytes).unwrap();
        assert_eq!(kernels.len(), 3, "{}", path.display());
        for (line, mode) in lines.iter().zip(modes) {
            let kernel = kernels
                .iter()
                .find(|k| k.name.ends_with(&format!("_main_l{line}")))
                .unwrap_or_else(|| panic!("no kernel for line {line}"));
            let sym = format!("{}_exec_mode", kernel.name);
            let (value, size) = syms[&sym];
            assert_eq!(size, 1);
            let oracle = rodata[&value];
            assert_eq!(oracle, mode, "{sym} in {}", path.display());
            assert_eq!(image::read_global_u8(&bytes, &sym).unwrap(), Some(oracle));
            assert_eq!(
                image::kernel_exec_mode(&bytes, &kernel.name).unwrap(),
                ExecMode::from_raw(oracle).unwrap()
            );
        }
        // Missing symbol -> default SPMD; sized globals are not u8.
        assert_eq!(
            image::kernel_exec_mode(&bytes, "no_such_kernel").unwrap(),
            ExecMode::Spmd
        );
        assert_eq!(image::read_global_u8(&bytes, "g").unwrap(), None);
    }
}

#[test]
fn symbol_sizes_match_readelf() {
    let f = fixtures();
    for path in [&f.omp_gfx90a, &f.omp_o0] {
        let bytes = read(path);
        let syms = dyn_syms(path);
        assert!(syms.len() > 4);
        for (name, (_, size)) in &syms {
            assert_eq!(
                image::symbol_size(&bytes, name).unwrap(),
                Some(*size),
                "{name}"
            );
        }
        assert_eq!(syms["g"].1, 16);
        assert_eq!(syms["__omp_rtl_device_environment"].1, 16);
        assert_eq!(image::symbol_size(&bytes, "nope").unwrap(), None);
    }
}

#[test]
fn kernel_metadata_matches_readelf() {
    let f = fixtures();
    for path in [&f.omp_gfx90a, &f.omp_gfx1030, &f.omp_o0, &f.plain[0].1] {
        let ours = image::kernel_metadata(&read(path)).unwrap();
        let oracle = readelf_kernels(path);
        let ours: Vec<YamlKernel> = ours
            .iter()
            .map(|k| YamlKernel {
                name: k.name.clone(),
                kernarg_segment_size: k.kernarg_segment_size,
                max_flat_workgroup_size: k.max_flat_workgroup_size,
                explicit_args: k.explicit_arg_count(),
                args: k.args.len(),
            })
            .collect();
        assert_eq!(ours, oracle, "{}", path.display());
    }
    // As clang 16 emits them (AMDGPUUsage "Code Object V4 Metadata"): OpenMP
    // kernels have 8 bytes per explicit arg, no hidden args.
    for k in image::kernel_metadata(&read(&f.omp_gfx90a)).unwrap() {
        assert_eq!(k.kernarg_segment_size as usize, 8 * k.explicit_arg_count());
        assert!(k.explicit_arg_sizes().iter().all(|&s| s == 8));
        assert_eq!(k.symbol, format!("{}.kd", k.name));
    }
}

#[test]
fn misaligned_images_give_the_same_answers() {
    let f = fixtures();
    let bytes = read(&f.omp_gfx90a);
    let mut shifted = vec![0u8; bytes.len() + 1];
    shifted[1..].copy_from_slice(&bytes);
    let odd = &shifted[1..];
    assert_ne!(odd.as_ptr() as usize % 8, bytes.as_ptr() as usize % 8);
    assert_eq!(image::classify(odd), ImageKind::AmdgpuElf);
    assert_eq!(
        image::elf_target_id(odd).unwrap(),
        image::elf_target_id(&bytes).unwrap()
    );
    assert_eq!(
        image::kernel_metadata(odd).unwrap(),
        image::kernel_metadata(&bytes).unwrap()
    );
}

/// Every inspection function on `bytes`; returns whether any panicked.
fn probe(bytes: &[u8], kernels: &[String]) -> bool {
    catch_unwind(AssertUnwindSafe(|| {
        let _ = image::classify(bytes);
        let _ = image::elf_target_id(bytes);
        let _ = image::kernel_metadata(bytes);
        let _ = image::symbol_size(bytes, "g");
        let _ = image::read_global_u8(bytes, "__omp_rtl_device_environment");
        for k in kernels {
            let _ = image::kernel_exec_mode(bytes, k);
        }
    }))
    .is_err()
}

#[test]
fn corrupt_images_never_panic() {
    let f = fixtures();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for path in [&f.omp_gfx90a, &f.bc_amdgcn] {
        let good = read(path);
        let kernels: Vec<String> = image::kernel_metadata(&good)
            .map(|ks| ks.into_iter().map(|k| k.name).collect())
            .unwrap_or_default();
        let mut panics = 0;
        // Truncations.
        for len in (0..good.len()).step_by(37) {
            panics += usize::from(probe(&good[..len], &kernels));
        }
        // Random byte mutations, half of them in the first 256 bytes (headers).
        for round in 0..1500 {
            let mut bad = good.clone();
            let flips = 1 + next() % 8;
            for _ in 0..flips {
                let span = if round % 2 == 0 {
                    256.min(bad.len())
                } else {
                    bad.len()
                };
                let at = (next() % span as u64) as usize;
                bad[at] = next() as u8;
            }
            panics += usize::from(probe(&bad, &kernels));
        }
        // Header fields set to extremes.
        for off in (16..64).step_by(2) {
            for v in [0x00u8, 0xff, 0x7f, 0x80] {
                let mut bad = good.clone();
                bad[off] = v;
                bad[off + 1] = v;
                panics += usize::from(probe(&bad, &kernels));
            }
        }
        assert_eq!(panics, 0, "{} mutated images panicked", path.display());
    }
}
