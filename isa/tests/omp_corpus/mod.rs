//! The OpenMP corpus (`examples/*.c`, `examples/*.cpp`) built with clang-16 for
//! gfx90a, cached under `CARGO_TARGET_TMPDIR/omp-corpus/` by a hash of the source,
//! the compiler command line and the compiler's version, so a test suite that needs
//! the 2 × 16 builds pays for them once.
//!
//! Shared by `isa/tests/coverage.rs`, `isa/tests/corpus_disasm.rs` and (through a
//! `#[path]` include) `tests/three_way/mod.rs`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The optimisation levels every corpus program is built at.
pub const OPT_LEVELS: [&str; 2] = ["-O0", "-O3"];

/// What running a corpus program on the device must produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The same stdout and exit status as the host fallback.
    SameAsHost,
    /// The kernel stops at `s_trap` (LLVM 16 implements `omp critical` and locks with
    /// `__builtin_trap()` on AMDGPU): non-zero exit, a trap message, no hang.
    Trap,
}

/// One corpus program.
#[derive(Clone, Debug)]
pub struct Program {
    /// File stem (`spmd_loops`).
    pub name: String,
    /// Source path.
    pub src: PathBuf,
    /// C++ (compiled with clang++-16).
    pub cxx: bool,
    /// The expected device outcome.
    pub expect: Expect,
}

/// A built program: the host executable and its linked gfx90a device image.
#[derive(Clone, Debug)]
pub struct Build {
    /// The program.
    pub exe: PathBuf,
    /// The device image (`*.amdgcn.gfx90a.img`, an AMDGPU ELF code object).
    pub image: PathBuf,
}

/// `examples/` of the workspace.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Every corpus program that offloads (sources containing `omp target`), sorted by
/// name. `device_count.c` has no target region and is not part of it.
pub fn programs() -> Vec<Program> {
    let mut v: Vec<Program> = std::fs::read_dir(examples_dir())
        .expect("examples/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "cpp")))
        .filter(|p| {
            std::fs::read_to_string(p)
                .map(|s| s.contains("omp target"))
                .unwrap_or(false)
        })
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let src = std::fs::read_to_string(&p).unwrap();
            // A program whose kernels use `omp critical` traps on LLVM 16's AMDGPU runtime.
            let expect = if src.contains("omp critical") {
                Expect::Trap
            } else {
                Expect::SameAsHost
            };
            Program {
                cxx: p.extension().and_then(|e| e.to_str()) == Some("cpp"),
                name,
                src: p,
                expect,
            }
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

fn llvm_path() -> String {
    format!(
        "/usr/lib/llvm-16/bin:{}",
        std::env::var("PATH").unwrap_or_default()
    )
}

fn compiler_version() -> String {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        Command::new("clang-16")
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    })
    .clone()
}

/// The compiler and its arguments (without the source and output paths).
fn command_line(p: &Program, opt: &str) -> (String, Vec<String>) {
    let cc = if p.cxx { "clang++-16" } else { "clang-16" };
    let mut args: Vec<String> = [
        "-fopenmp",
        "--offload-arch=gfx90a",
        "--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
        opt,
        "-Wl,-rpath,/usr/lib/llvm-16/lib",
        // Leaves the linked device image (`<out>.amdgcn.gfx90a.img`) next to the output.
        "-Wl,--save-temps",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if !p.cxx {
        args.push("-lm".into());
    }
    (cc.to_string(), args)
}

/// Builds `p` at `opt` (or returns the cached build). Panics with clang's output if the
/// build fails.
pub fn build(p: &Program, opt: &str) -> Build {
    let source = std::fs::read(&p.src).expect("read source");
    let (cc, args) = command_line(p, opt);
    let mut h = fnv1a(&source, 0xCBF2_9CE4_8422_2325);
    h = fnv1a(cc.as_bytes(), h);
    for a in &args {
        h = fnv1a(a.as_bytes(), h);
    }
    h = fnv1a(compiler_version().as_bytes(), h);
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("omp-corpus");
    std::fs::create_dir_all(&root).unwrap();
    let dir = root.join(format!("{}{}-{h:016x}", p.name, opt));
    let done = |d: &Path| -> Option<Build> {
        let exe = d.join("prog");
        let image = d.join("prog.amdgcn.gfx90a.img");
        (exe.exists() && image.exists()).then_some(Build { exe, image })
    };
    if let Some(b) = done(&dir) {
        return b;
    }
    // Build in a private directory, then publish it with one rename (concurrent test
    // threads and binaries may build the same program).
    let tmp = root.join(format!(
        ".tmp-{}{}-{h:016x}-{}-{:?}",
        p.name,
        opt,
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new(&cc)
        .args(&args)
        .arg(&p.src)
        .arg("-o")
        .arg("prog")
        .current_dir(&tmp)
        .env("PATH", llvm_path())
        .output()
        .unwrap_or_else(|e| panic!("{cc} runs: {e}"));
    assert!(
        out.status.success(),
        "{cc} {opt} {} failed:\n{}",
        p.src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        done(&tmp).is_some(),
        "{cc} left no device image in {}",
        tmp.display()
    );
    // Keep only what the tests use.
    for e in std::fs::read_dir(&tmp).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n != "prog" && n != "prog.amdgcn.gfx90a.img" {
            let _ = std::fs::remove_file(e.path());
        }
    }
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another builder won the race; its result is equivalent.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    done(&dir).unwrap_or_else(|| panic!("build of {} vanished", p.name))
}

/// Builds every program at every level on up to `threads` threads; returns
/// `(program, opt, build)` in program order, -O0 before -O3.
pub fn build_all(threads: usize) -> Vec<(Program, &'static str, Build)> {
    let jobs: Vec<(Program, &'static str)> = programs()
        .into_iter()
        .flat_map(|p| OPT_LEVELS.iter().map(move |o| (p.clone(), *o)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((p, o)) = jobs.get(i) else { break };
                let b = build(p, o);
                results.lock().unwrap().push((i, b));
            });
        }
    });
    let mut r = results.into_inner().unwrap();
    r.sort_by_key(|(i, _)| *i);
    r.into_iter()
        .map(|(i, b)| (jobs[i].0.clone(), jobs[i].1, b))
        .collect()
}

/// One instruction line of `llvm-objdump-16 -d --mcpu=gfx90a`: its text (without the
/// encoding comment), its mnemonic and its dwords.
#[derive(Clone, Debug)]
pub struct ObjdumpLine {
    /// The instruction text, trimmed (`s_load_dword s2, s[4:5], 0x4`).
    pub text: String,
    /// The first token.
    pub mnemonic: String,
    /// The encoding dwords from the `// ADDR: W0 W1` comment.
    pub words: Vec<u32>,
    /// The instruction's address.
    pub address: u64,
}

/// Runs llvm-objdump-16 on `image`; returns the full listing.
pub fn objdump(image: &Path) -> String {
    let out = Command::new("llvm-objdump-16")
        .args(["-d", "--mcpu=gfx90a"])
        .arg(image)
        .output()
        .expect("llvm-objdump-16 runs");
    assert!(
        out.status.success(),
        "llvm-objdump-16 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The instruction lines of an llvm-objdump listing.
pub fn objdump_instructions(listing: &str) -> Vec<ObjdumpLine> {
    listing
        .lines()
        .filter(|l| l.starts_with('\t'))
        .filter_map(|l| {
            let (text, comment) = l.split_once("//")?;
            let text = text.trim().to_string();
            let comment = comment.trim();
            let (addr, rest) = comment.split_once(':')?;
            let address = u64::from_str_radix(addr.trim(), 16).ok()?;
            let words: Vec<u32> = rest
                .split_whitespace()
                .take_while(|w| !w.starts_with('<'))
                .filter_map(|w| u32::from_str_radix(w, 16).ok())
                .collect();
            let mnemonic = text.split_whitespace().next().unwrap_or("").to_string();
            Some(ObjdumpLine {
                text,
                mnemonic,
                words,
                address,
            })
        })
        .collect()
}
