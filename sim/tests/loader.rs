//! Tests of the code object loader (`hsa_runtime64::loader`).
//!
//! Real code objects are built at test time with clang-16 from the sources in
//! `tests/fixtures/` and every value the loader reports is checked against an
//! independent oracle: `llvm-readelf-16` / `llvm-readobj-16` output parsed
//! here, the compiler's own `.amdhsa_*` directives (assembly output, or the
//! hand-written fixture), and the `-mcpu` target strings given to clang.
//! Then placement (relocations recomputed from readelf's table), ISA
//! compatibility, and a deterministic mutation fuzz that must never panic.
//!
//! Run: `cargo test -p sim --test loader`.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use hsa_runtime64::loader::{
    CodeObject, FeatureSetting, KernelDescriptor, LoadError, RelocKind, SymbolKind, TargetId,
};

const LLVM_BIN: &str = "/usr/lib/llvm-16/bin";
const DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";
const PAGE: u64 = 4096;

// ---------------------------------------------------------------------------
// Running tools

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

fn fixture_src(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

// ---------------------------------------------------------------------------
// Fixtures

/// A code object on disk plus the compiler's `.amdhsa_*` view of it.
struct Image {
    path: PathBuf,
    bytes: Vec<u8>,
    /// Assembly text holding `.amdhsa_kernel` blocks for this image's kernels.
    asm: Option<String>,
}

struct Fixtures {
    dir: PathBuf,
    omp: Image,
    plain_v3: Image,
    plain_v4: Image,
    plain_v5: Image,
    plain_v2: Image,
    plain_rel: Image,
    xnack_on: Image,
    xnack_off: Image,
    gfx1030: Image,
    kd_asm: Image,
}

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(build_fixtures)
}

fn load(path: PathBuf, asm: Option<String>) -> Image {
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Image { path, bytes, asm }
}

/// Compiles `loader_plain.c` with the given `-mcpu` and extra flags.
fn build_plain(dir: &Path, out: &str, mcpu: &str, extra: &[&str], with_asm: bool) -> Image {
    let src = fixture_src("loader_plain.c");
    let mcpu_flag = format!("-mcpu={mcpu}");
    let mut args = vec![
        "--target=amdgcn-amd-amdhsa",
        "-nogpulib",
        "-O2",
        mcpu_flag.as_str(),
    ];
    args.extend_from_slice(extra);
    let mut full = args.clone();
    full.extend_from_slice(&[src.as_str(), "-o", out]);
    run_in(dir, "clang-16", &full);
    let asm = with_asm.then(|| {
        let mut s = args.clone();
        s.extend_from_slice(&["-S", src.as_str(), "-o", "-"]);
        run_in(dir, "clang-16", &s)
    });
    load(dir.join(out), asm)
}

fn build_fixtures() -> Fixtures {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("loader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Remove the directories of earlier runs whose process is gone.
    for entry in std::fs::read_dir(dir.parent().unwrap()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix("loader-") {
            if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }

    // OpenMP: `--offload-device-only` stops at LLVM bitcode in clang 16 (the
    // device link is an LTO step of clang-linker-wrapper), so build the whole
    // program and keep the linker wrapper's temporaries: the linked device
    // image is `<out>.amdgcn.gfx90a.img`, its assembly `<out>.amdgcn-amd-amdhsa.gfx90a.s`.
    // The OpenMP build is the slow one: run it next to the others.
    std::thread::scope(|scope| {
        let omp = scope.spawn(|| build_omp(&dir));
        let rest = build_rest(&dir);
        let omp = omp.join().unwrap();
        rest(omp)
    })
}

/// The OpenMP device image and its assembly.
fn build_omp(dir: &Path) -> Image {
    let src = fixture_src("loader_omp.c");
    let libs = format!("--rocm-device-lib-path={DEVICE_LIBS}");
    run_in(
        dir,
        "clang-16",
        &[
            "-fopenmp",
            "--offload-arch=gfx90a",
            &libs,
            "-O2",
            &src,
            "-o",
            "omp",
            "-Wl,--save-temps",
        ],
    );
    let find = |suffix: &str| -> PathBuf {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with("omp.") && n.ends_with(suffix)
            })
            .unwrap_or_else(|| panic!("no omp.*{suffix} in {}", dir.display()))
    };
    let omp_img = find("gfx90a.img");
    let omp_asm = std::fs::read_to_string(find("gfx90a.s")).unwrap();
    load(omp_img, Some(omp_asm))
}

/// Builds every other fixture; returns a constructor completing `Fixtures`
/// with the OpenMP image.
fn build_rest(dir: &Path) -> impl FnOnce(Image) -> Fixtures {
    let dir = dir.to_path_buf();
    let plain_v4 = build_plain(&dir, "plain_v4.co", "gfx90a", &[], true);
    let plain_v5 = build_plain(
        &dir,
        "plain_v5.co",
        "gfx90a",
        &["-mcode-object-version=5"],
        true,
    );
    let plain_v3 = build_plain(
        &dir,
        "plain_v3.co",
        "gfx90a",
        &["-mcode-object-version=3"],
        false,
    );
    // V2 cannot be built for gfx90a; gfx900 is enough to see it rejected.
    let plain_v2 = build_plain(
        &dir,
        "plain_v2.co",
        "gfx900",
        &["-mcode-object-version=2"],
        false,
    );
    let plain_rel = build_plain(&dir, "plain_rel.o", "gfx90a", &["-c"], false);
    let xnack_on = build_plain(&dir, "xnack_on.co", "gfx90a:xnack+", &[], false);
    let xnack_off = build_plain(&dir, "xnack_off.co", "gfx90a:xnack-", &[], false);
    let gfx1030 = build_plain(&dir, "gfx1030.co", "gfx1030", &[], false);

    let kd_src = fixture_src("loader_kd.s");
    run_in(
        &dir,
        "clang-16",
        &[
            "--target=amdgcn-amd-amdhsa",
            "-mcpu=gfx90a",
            "-nogpulib",
            "-x",
            "assembler",
            &kd_src,
            "-o",
            "kd.co",
        ],
    );
    let kd_asm = load(
        dir.join("kd.co"),
        Some(std::fs::read_to_string(&kd_src).unwrap()),
    );

    move |omp| Fixtures {
        dir,
        omp,
        plain_v3,
        plain_v4,
        plain_v5,
        plain_v2,
        plain_rel,
        xnack_on,
        xnack_off,
        gfx1030,
        kd_asm,
    }
}

// ---------------------------------------------------------------------------
// The oracle: llvm-readelf-16 / llvm-readobj-16 output, parsed

fn hex(s: &str) -> u64 {
    let s = s.trim_start_matches("0x");
    u64::from_str_radix(s, 16).unwrap_or_else(|_| panic!("not hex: {s:?}"))
}

#[derive(Debug)]
struct OLoad {
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    flags: String,
    align: u64,
}

#[derive(Debug, Clone)]
struct OSym {
    value: u64,
    size: u64,
    typ: String,
    bind: String,
    ndx: String,
    name: String,
}

#[derive(Debug)]
struct OReloc {
    offset: u64,
    typ: String,
    sym: Option<String>,
    addend: i64,
}

#[derive(Debug)]
struct OSection {
    name: String,
    addr: u64,
    offset: u64,
    size: u64,
}

#[derive(Debug, Default)]
struct OKernel {
    keys: HashMap<String, String>,
    lists: HashMap<String, Vec<u64>>,
    args: Vec<HashMap<String, String>>,
}

#[derive(Debug, Default)]
struct OMeta {
    version: Vec<u64>,
    target: Option<String>,
    printf: Vec<String>,
    kernels: Vec<OKernel>,
}

#[derive(Debug)]
struct Oracle {
    abi_version: u8,
    flags: u32,
    flag_names: Vec<String>,
    loads: Vec<OLoad>,
    sections: Vec<OSection>,
    dynsyms: Vec<OSym>,
    relocs: Vec<OReloc>,
    meta: OMeta,
}

impl Oracle {
    fn of(path: &Path) -> Oracle {
        let p = path.to_str().unwrap();
        let header = tool("llvm-readelf-16", &["-h", p]);
        let field = |name: &str| -> String {
            header
                .lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name} in readelf -h"))
                .trim()
                .to_string()
        };
        let abi_version: u8 = field("ABI Version:").parse().unwrap();
        let flags = hex(&field("Flags:")) as u32;

        let readobj = tool("llvm-readobj-16", &["--file-headers", p]);
        let flag_names = readobj
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("EF_AMDGPU_"))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect();

        let phdrs = tool("llvm-readelf-16", &["-l", "-W", p]);
        let loads = phdrs
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("LOAD "))
            .map(|l| {
                let t: Vec<&str> = l.split_whitespace().collect();
                OLoad {
                    offset: hex(t[1]),
                    vaddr: hex(t[2]),
                    filesz: hex(t[4]),
                    memsz: hex(t[5]),
                    flags: t[6..t.len() - 1].join(""),
                    align: hex(t[t.len() - 1]),
                }
            })
            .collect();

        let shdrs = tool("llvm-readelf-16", &["-S", "-W", p]);
        let sections = shdrs
            .lines()
            .filter_map(|l| {
                let rest = l.trim().strip_prefix('[')?;
                let (_, rest) = rest.split_once(']')?;
                let t: Vec<&str> = rest.split_whitespace().collect();
                if t.len() < 6 || t[0] == "NULL" || t[0] == "Name" {
                    return None;
                }
                Some(OSection {
                    name: t[0].to_string(),
                    addr: hex(t[2]),
                    offset: hex(t[3]),
                    size: hex(t[4]),
                })
            })
            .collect();

        let syms = tool("llvm-readelf-16", &["--dyn-syms", "-W", p]);
        let dynsyms = syms
            .lines()
            .filter_map(|l| {
                let t: Vec<&str> = l.split_whitespace().collect();
                if t.len() < 8 || !t[0].ends_with(':') || t[0] == "Num:" {
                    return None;
                }
                Some(OSym {
                    value: hex(t[1]),
                    size: t[2].parse().unwrap(),
                    typ: t[3].to_string(),
                    bind: t[4].to_string(),
                    ndx: t[6].to_string(),
                    name: t[7].to_string(),
                })
            })
            .collect();

        let rel = tool("llvm-readelf-16", &["-r", "-W", p]);
        let relocs = rel
            .lines()
            .filter_map(|l| {
                let t: Vec<&str> = l.split_whitespace().collect();
                if t.len() < 3 || !t[2].starts_with("R_AMDGPU_") {
                    return None;
                }
                let signed = |sign: &str, v: &str| -> i64 {
                    let m = hex(v) as i64;
                    if sign == "-" {
                        -m
                    } else {
                        m
                    }
                };
                let (sym, addend) = match t.len() {
                    // offset info type addend
                    4 => (None, hex(t[3]) as i64),
                    // offset info type value name +/- addend
                    7 => (Some(t[4].to_string()), signed(t[5], t[6])),
                    _ => panic!("unexpected relocation line {l:?}"),
                };
                Some(OReloc {
                    offset: hex(t[0]),
                    typ: t[2].to_string(),
                    sym,
                    addend,
                })
            })
            .collect();

        let notes = tool("llvm-readelf-16", &["--notes", p]);
        Oracle {
            abi_version,
            flags,
            flag_names,
            loads,
            sections,
            dynsyms,
            relocs,
            meta: parse_note_yaml(&notes),
        }
    }

    fn dynsym(&self, name: &str) -> Option<&OSym> {
        self.dynsyms.iter().find(|s| s.name == name)
    }

    fn section_containing(&self, vaddr: u64) -> &OSection {
        self.sections
            .iter()
            .find(|s| s.addr != 0 && s.addr <= vaddr && vaddr < s.addr + s.size)
            .unwrap_or_else(|| panic!("no section holds {vaddr:#x}"))
    }

    /// Bytes at `vaddr` as `llvm-readelf -x <section>` dumps them.
    fn bytes_at(&self, path: &Path, vaddr: u64, len: usize) -> Vec<u8> {
        let sec = self.section_containing(vaddr);
        let dump = tool(
            "llvm-readelf-16",
            &["-x", &sec.name, path.to_str().unwrap()],
        );
        let mut mem = HashMap::new();
        for l in dump.lines() {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.is_empty() || !t[0].starts_with("0x") {
                continue;
            }
            let mut a = hex(t[0]);
            for word in t[1..].iter().take(4) {
                if word.len() % 2 != 0 || !word.chars().all(|c| c.is_ascii_hexdigit()) {
                    break;
                }
                for i in (0..word.len()).step_by(2) {
                    mem.insert(a, u8::from_str_radix(&word[i..i + 2], 16).unwrap());
                    a += 1;
                }
            }
        }
        (0..len as u64)
            .map(|i| {
                *mem.get(&(vaddr + i))
                    .unwrap_or_else(|| panic!("no dump byte at {:#x}", vaddr + i))
            })
            .collect()
    }
}

/// Parses the YAML that `llvm-readelf --notes` prints for the AMDGPU metadata.
fn parse_note_yaml(text: &str) -> OMeta {
    let mut meta = OMeta::default();
    let mut section = String::new();
    let mut list_key: Option<String> = None;
    let Some(start) = text.find("---") else {
        return meta;
    };
    for line in text[start + 3..].lines() {
        if line.trim() == "..." {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let body = line.trim();
        if indent == 0 {
            let (k, v) = body.split_once(':').unwrap();
            section = k.to_string();
            if k == "amdhsa.target" {
                meta.target = Some(v.trim().trim_matches('\'').to_string());
            }
            continue;
        }
        match section.as_str() {
            "amdhsa.version" => meta
                .version
                .push(body.trim_start_matches("- ").parse().unwrap()),
            "amdhsa.printf" => {
                let v = body.trim_start_matches("- ").trim_matches('\'');
                meta.printf.push(v.to_string());
            }
            "amdhsa.kernels" => {
                let (body, new_item) = match body.strip_prefix("- ") {
                    Some(b) => (b, true),
                    None => (body, false),
                };
                if indent == 2 && new_item {
                    meta.kernels.push(OKernel::default());
                }
                let kernel = meta.kernels.last_mut().unwrap();
                if indent == 6 && new_item && !body.starts_with('.') {
                    // An element of a list-valued kernel key.
                    let key = list_key.clone().unwrap();
                    kernel
                        .lists
                        .entry(key)
                        .or_default()
                        .push(body.parse().unwrap());
                    continue;
                }
                if indent == 6 && new_item {
                    kernel.args.push(HashMap::new());
                }
                let (k, v) = body.split_once(':').unwrap();
                let v = v.trim().trim_matches('\'').to_string();
                if indent <= 4 {
                    list_key = Some(k.to_string());
                    kernel.keys.insert(k.to_string(), v);
                } else {
                    kernel.args.last_mut().unwrap().insert(k.to_string(), v);
                }
            }
            _ => {}
        }
    }
    meta
}

/// `.amdhsa_*` directive values of every `.amdhsa_kernel` block in `asm`.
fn amdhsa_directives(asm: &str) -> HashMap<String, HashMap<String, u64>> {
    let mut out: HashMap<String, HashMap<String, u64>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in asm.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        match t.as_slice() {
            [".amdhsa_kernel", name] => current = Some(name.to_string()),
            [".end_amdhsa_kernel"] => current = None,
            [d, v] if d.starts_with(".amdhsa_") => {
                if let Some(k) = &current {
                    out.entry(k.clone()).or_default().insert(
                        d.trim_start_matches(".amdhsa_").to_string(),
                        v.parse().unwrap(),
                    );
                }
            }
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Cross-checks shared by the tests

fn reloc_kind_name(k: RelocKind) -> &'static str {
    match k {
        RelocKind::Relative64 => "R_AMDGPU_RELATIVE64",
        RelocKind::Abs64 => "R_AMDGPU_ABS64",
        RelocKind::Abs32Lo => "R_AMDGPU_ABS32_LO",
        RelocKind::Abs32Hi => "R_AMDGPU_ABS32_HI",
    }
}

fn feature_from_flag_names(names: &[String], feature: &str, abi_version: u8) -> FeatureSetting {
    let prefix = format!("EF_AMDGPU_FEATURE_{feature}_");
    let found = names.iter().find_map(|n| n.strip_prefix(&prefix));
    if abi_version == 1 {
        // V3: one bit, set for "on" and "any" alike (read leniently as any).
        return match found {
            Some("V3") => FeatureSetting::Any,
            _ => FeatureSetting::Off,
        };
    }
    match found {
        Some("ANY_V4") => FeatureSetting::Any,
        Some("ON_V4") => FeatureSetting::On,
        Some("OFF_V4") => FeatureSetting::Off,
        Some("UNSUPPORTED_V4") | None => FeatureSetting::Unsupported,
        Some(other) => panic!("unexpected feature flag {other}"),
    }
}

/// Checks every parsed value of `img` against readelf/readobj and the
/// compiler's directives. Returns the parsed code object and the oracle.
fn check_against_oracle(img: &Image) -> (CodeObject, Oracle) {
    let o = Oracle::of(&img.path);
    let co =
        CodeObject::parse(&img.bytes).unwrap_or_else(|e| panic!("{}: {e}", img.path.display()));
    check_header(&co, &o);
    check_segments(&co, &o);
    check_symbols(&co, &o);
    check_relocations(&co, &o);
    check_metadata(&co, &o);
    check_descriptors(&co, &o, img);
    (co, o)
}

/// Header and target against readobj's e_flags names.
fn check_header(co: &CodeObject, o: &Oracle) {
    assert_eq!(co.abi_version, o.abi_version);
    assert_eq!(co.code_object_version, u32::from(o.abi_version) + 2);
    assert_eq!(co.e_flags, o.flags);
    let mach_name = o
        .flag_names
        .iter()
        .find_map(|n| n.strip_prefix("EF_AMDGPU_MACH_AMDGCN_"))
        .expect("readobj names the processor");
    assert_eq!(
        co.target.processor_name().unwrap().to_ascii_uppercase(),
        mach_name
    );
    assert_eq!(
        co.target.xnack,
        feature_from_flag_names(&o.flag_names, "XNACK", o.abi_version)
    );
    assert_eq!(
        co.target.sramecc,
        feature_from_flag_names(&o.flag_names, "SRAMECC", o.abi_version)
    );
}

/// Segments and the load span against readelf's program headers.
fn check_segments(co: &CodeObject, o: &Oracle) {
    assert_eq!(co.segments.len(), o.loads.len());
    for (s, l) in co.segments.iter().zip(&o.loads) {
        assert_eq!(
            (s.vaddr, s.memsz, s.file_offset, s.filesz, s.align),
            (l.vaddr, l.memsz, l.offset, l.filesz, l.align)
        );
        assert_eq!(s.is_executable(), l.flags.contains('E'), "{l:?}");
        assert_eq!(s.is_writable(), l.flags.contains('W'), "{l:?}");
    }
    let first = o.loads.first().unwrap();
    let last = o.loads.last().unwrap();
    let extent = last.vaddr + last.memsz - first.vaddr;
    assert_eq!(co.image_size(), extent);
    assert_eq!(co.load_span(), (first.vaddr, extent.div_ceil(PAGE) * PAGE));
}

/// Symbols: global/weak OBJECT/COMMON entries of .dynsym.
fn check_symbols(co: &CodeObject, o: &Oracle) {
    let expected: Vec<&OSym> = o
        .dynsyms
        .iter()
        .filter(|s| {
            (s.bind == "GLOBAL" || s.bind == "WEAK") && (s.typ == "OBJECT" || s.typ == "COMMON")
        })
        .collect();
    assert_eq!(co.symbols.len(), expected.len(), "{:?}", co.symbols);
    for e in &expected {
        let s = co
            .symbol(&e.name)
            .unwrap_or_else(|| panic!("symbol {} missing", e.name));
        assert_eq!((s.vaddr, s.size), (e.value, e.size), "{}", e.name);
        assert_eq!(s.is_definition, e.ndx != "UND");
        assert_eq!(s.is_weak, e.bind == "WEAK");
        let kind = if e.name.ends_with(".kd") {
            SymbolKind::Kernel
        } else {
            SymbolKind::Variable
        };
        assert_eq!(s.kind, kind);
    }
}

/// Relocations, in table order.
fn check_relocations(co: &CodeObject, o: &Oracle) {
    assert_eq!(co.relocations.len(), o.relocs.len());
    for (r, e) in co.relocations.iter().zip(&o.relocs) {
        assert_eq!(r.vaddr, e.offset);
        assert_eq!(reloc_kind_name(r.kind), e.typ);
        assert_eq!(r.addend, e.addend, "{e:?}");
        assert_eq!(r.symbol, e.sym, "{e:?}");
        if let Some(name) = &e.sym {
            let sym = o.dynsym(name).unwrap();
            assert_eq!(r.symbol_defined, sym.ndx != "UND");
            if r.symbol_defined {
                assert_eq!(r.symbol_value, sym.value);
            }
        }
    }
}

/// The metadata note against readelf's dump of it.
fn check_metadata(co: &CodeObject, o: &Oracle) {
    let m = &co.metadata;
    assert_eq!(
        vec![u64::from(m.version.0), u64::from(m.version.1)],
        o.meta.version
    );
    assert_eq!(m.target, o.meta.target);
    assert_eq!(m.printf, o.meta.printf);
    assert_eq!(m.kernels.len(), o.meta.kernels.len());
    for ok in &o.meta.kernels {
        let name = &ok.keys[".name"];
        let k = m.kernel_by_name(name).unwrap();
        let num = |key: &str, default: u32| -> u32 {
            ok.keys
                .get(key)
                .map(|v| v.parse().unwrap())
                .unwrap_or(default)
        };
        assert_eq!(&k.symbol, &ok.keys[".symbol"]);
        assert_eq!(k.kernarg_segment_size, num(".kernarg_segment_size", 0));
        assert_eq!(k.kernarg_segment_align, num(".kernarg_segment_align", 4));
        assert_eq!(
            k.group_segment_fixed_size,
            num(".group_segment_fixed_size", 0)
        );
        assert_eq!(
            k.private_segment_fixed_size,
            num(".private_segment_fixed_size", 0)
        );
        assert_eq!(k.wavefront_size, num(".wavefront_size", 64));
        assert_eq!(k.sgpr_count, num(".sgpr_count", 0));
        assert_eq!(k.vgpr_count, num(".vgpr_count", 0));
        assert_eq!(k.agpr_count, num(".agpr_count", 0));
        assert_eq!(
            k.max_flat_workgroup_size,
            num(".max_flat_workgroup_size", 1024)
        );
        assert_eq!(k.sgpr_spill_count, num(".sgpr_spill_count", 0));
        assert_eq!(k.vgpr_spill_count, num(".vgpr_spill_count", 0));
        assert_eq!(
            k.uses_dynamic_stack,
            ok.keys
                .get(".uses_dynamic_stack")
                .map(|v| v == "true")
                .unwrap_or(false)
        );
        assert_eq!(k.kind.as_ref(), ok.keys.get(".kind"));
        assert_eq!(k.language.as_ref(), ok.keys.get(".language"));
        assert_eq!(
            k.reqd_workgroup_size
                .map(|a| a.iter().map(|&x| u64::from(x)).collect::<Vec<_>>()),
            ok.lists.get(".reqd_workgroup_size").cloned()
        );
        assert_eq!(k.args.len(), ok.args.len(), "{name}");
        for (a, oa) in k.args.iter().zip(&ok.args) {
            assert_eq!(a.offset.to_string(), oa[".offset"]);
            assert_eq!(a.size.to_string(), oa[".size"]);
            assert_eq!(&a.value_kind, &oa[".value_kind"]);
            assert_eq!(a.address_space.as_ref(), oa.get(".address_space"));
            assert_eq!(a.name.as_ref(), oa.get(".name"));
            assert_eq!(a.type_name.as_ref(), oa.get(".type_name"));
            assert_eq!(a.access.as_ref(), oa.get(".access"));
            assert_eq!(a.is_const, oa.get(".is_const").is_some_and(|v| v == "true"));
            assert_eq!(a.is_hidden(), oa[".value_kind"].starts_with("hidden_"));
        }
    }
}

/// Kernel descriptors against the bytes in the file, the metadata, `.text`
/// and (for hand-written images) the directives they were assembled from.
fn check_descriptors(co: &CodeObject, o: &Oracle, img: &Image) {
    let text = o.sections.iter().find(|s| s.name == ".text").unwrap();
    let directives = img.asm.as_deref().map(amdhsa_directives);
    let kernels: Vec<_> = co.kernel_symbols().cloned().collect();
    assert_eq!(kernels.len(), o.meta.kernels.len());
    for sym in &kernels {
        let kd = co.kernel_descriptor(&img.bytes, sym).unwrap();
        assert_eq!(
            kd.raw.to_vec(),
            o.bytes_at(&img.path, sym.vaddr, 64),
            "{}",
            sym.name
        );
        let meta = o
            .meta
            .kernels
            .iter()
            .find(|k| k.keys[".symbol"] == sym.name)
            .unwrap();
        let num = |key: &str| -> u32 { meta.keys[key].parse().unwrap() };
        assert_eq!(
            kd.group_segment_fixed_size,
            num(".group_segment_fixed_size")
        );
        assert_eq!(
            kd.private_segment_fixed_size,
            num(".private_segment_fixed_size")
        );
        assert_eq!(kd.kernarg_size, num(".kernarg_segment_size"));
        let entry = kd.entry_address(sym.vaddr).unwrap();
        assert!(
            text.addr <= entry && entry < text.addr + text.size,
            "{}: entry {entry:#x} outside .text",
            sym.name
        );
        let func_name = sym.name.strip_suffix(".kd").unwrap();
        if let Some(func) = o.dynsym(func_name) {
            assert_eq!(func.typ, "FUNC");
            assert_eq!(entry, func.value, "{}", sym.name);
        }
        if let Some(d) = &directives {
            let name = meta.keys[".name"].as_str();
            check_directives(&kd, &d[name], name);
        }
    }
}

/// Checks the descriptor's accessors against the `.amdhsa_*` directives that
/// produced it.
fn check_directives(kd: &KernelDescriptor, d: &HashMap<String, u64>, kernel: &str) {
    let flag = |b: bool| u64::from(b);
    let checks: Vec<(&str, u64)> = vec![
        (
            "group_segment_fixed_size",
            u64::from(kd.group_segment_fixed_size),
        ),
        (
            "private_segment_fixed_size",
            u64::from(kd.private_segment_fixed_size),
        ),
        ("kernarg_size", u64::from(kd.kernarg_size)),
        ("user_sgpr_count", u64::from(kd.user_sgpr_count())),
        (
            "user_sgpr_private_segment_buffer",
            flag(kd.enable_sgpr_private_segment_buffer()),
        ),
        (
            "user_sgpr_dispatch_ptr",
            flag(kd.enable_sgpr_dispatch_ptr()),
        ),
        ("user_sgpr_queue_ptr", flag(kd.enable_sgpr_queue_ptr())),
        (
            "user_sgpr_kernarg_segment_ptr",
            flag(kd.enable_sgpr_kernarg_segment_ptr()),
        ),
        ("user_sgpr_dispatch_id", flag(kd.enable_sgpr_dispatch_id())),
        (
            "user_sgpr_flat_scratch_init",
            flag(kd.enable_sgpr_flat_scratch_init()),
        ),
        (
            "user_sgpr_private_segment_size",
            flag(kd.enable_sgpr_private_segment_size()),
        ),
        ("uses_dynamic_stack", flag(kd.uses_dynamic_stack())),
        (
            "system_sgpr_private_segment_wavefront_offset",
            flag(kd.enable_private_segment()),
        ),
        (
            "system_sgpr_workgroup_id_x",
            flag(kd.enable_sgpr_workgroup_id_x()),
        ),
        (
            "system_sgpr_workgroup_id_y",
            flag(kd.enable_sgpr_workgroup_id_y()),
        ),
        (
            "system_sgpr_workgroup_id_z",
            flag(kd.enable_sgpr_workgroup_id_z()),
        ),
        (
            "system_sgpr_workgroup_info",
            flag(kd.enable_sgpr_workgroup_info()),
        ),
        (
            "system_vgpr_workitem_id",
            u64::from(kd.enable_vgpr_workitem_id()),
        ),
        ("accum_offset", u64::from(kd.accum_offset_vgprs())),
        ("float_round_mode_32", u64::from(kd.float_round_mode_32())),
        (
            "float_round_mode_16_64",
            u64::from(kd.float_round_mode_16_64()),
        ),
        ("float_denorm_mode_32", u64::from(kd.float_denorm_mode_32())),
        (
            "float_denorm_mode_16_64",
            u64::from(kd.float_denorm_mode_16_64()),
        ),
        ("dx10_clamp", flag(kd.enable_dx10_clamp())),
        ("ieee_mode", flag(kd.enable_ieee_mode())),
        ("fp16_overflow", flag(kd.fp16_ovfl())),
        ("tg_split", flag(kd.tg_split())),
        (
            "exception_fp_ieee_invalid_op",
            flag(kd.enable_exception_ieee_754_fp_invalid_operation()),
        ),
        (
            "exception_fp_denorm_src",
            flag(kd.enable_exception_fp_denormal_source()),
        ),
        (
            "exception_fp_ieee_div_zero",
            flag(kd.enable_exception_ieee_754_fp_division_by_zero()),
        ),
        (
            "exception_fp_ieee_overflow",
            flag(kd.enable_exception_ieee_754_fp_overflow()),
        ),
        (
            "exception_fp_ieee_underflow",
            flag(kd.enable_exception_ieee_754_fp_underflow()),
        ),
        (
            "exception_fp_ieee_inexact",
            flag(kd.enable_exception_ieee_754_fp_inexact()),
        ),
        (
            "exception_int_div_zero",
            flag(kd.enable_exception_int_divide_by_zero()),
        ),
    ];
    let mut checked = 0;
    for (name, ours) in checks {
        if let Some(&want) = d.get(name) {
            assert_eq!(ours, want, "{kernel}: .amdhsa_{name}");
            checked += 1;
        }
    }
    assert!(checked >= 25, "{kernel}: only {checked} directives found");
    // gfx90a VGPR granule is 8 (unified count).
    let vgprs = d["next_free_vgpr"].max(1);
    let alloc = u64::from(kd.workitem_vgpr_count_gfx90a());
    assert!(
        alloc >= vgprs && alloc - vgprs < 8,
        "{kernel}: {alloc} VGPRs for {vgprs}"
    );
    // Descriptors always request at least the user SGPRs they enable.
    assert!(kd.enabled_user_sgpr_count() <= kd.user_sgpr_count());
}

// ---------------------------------------------------------------------------
// Placement, checked against readelf's relocation table

const LOAD_BASE: u64 = 0x7f12_3450_0000;
const EXT_VAR_ADDR: u64 = 0x0000_dead_beef_1230;

fn resolve_ext(name: &str) -> Option<u64> {
    (name == "ext_var").then_some(EXT_VAR_ADDR)
}

/// Places `bytes` at `LOAD_BASE` and checks every segment byte and every
/// relocated field against values recomputed from `o`.
fn check_placement(co: &CodeObject, o: &Oracle, bytes: &[u8]) -> Vec<u8> {
    let (first, size) = co.load_span();
    let mut dest = vec![0xa5u8; size as usize];
    co.place(bytes, &mut dest, LOAD_BASE, &resolve_ext).unwrap();

    let width = |typ: &str| if typ.contains("ABS32") { 4 } else { 8 };
    let patched: HashSet<u64> = o
        .relocs
        .iter()
        .flat_map(|r| r.offset..r.offset + width(&r.typ))
        .collect();
    for l in &o.loads {
        for i in 0..l.memsz {
            let v = l.vaddr + i;
            if patched.contains(&v) {
                continue;
            }
            let want = if i < l.filesz {
                bytes[(l.offset + i) as usize]
            } else {
                0
            };
            assert_eq!(dest[(v - first) as usize], want, "byte at vaddr {v:#x}");
        }
    }

    for r in &o.relocs {
        let s = match &r.sym {
            None => 0,
            Some(name) => {
                let sym = o.dynsym(name).unwrap();
                if sym.ndx == "UND" {
                    resolve_ext(name).unwrap()
                } else {
                    LOAD_BASE + (sym.value - first)
                }
            }
        };
        let sa = s.wrapping_add(r.addend as u64);
        let (want, w) = match r.typ.as_str() {
            "R_AMDGPU_RELATIVE64" => ((LOAD_BASE - first).wrapping_add(r.addend as u64), 8),
            "R_AMDGPU_ABS64" => (sa, 8),
            "R_AMDGPU_ABS32_LO" => (sa & 0xffff_ffff, 4),
            "R_AMDGPU_ABS32_HI" => (sa >> 32, 4),
            other => panic!("oracle lists {other}"),
        };
        let off = (r.offset - first) as usize;
        let mut got = [0u8; 8];
        got[..w].copy_from_slice(&dest[off..off + w]);
        assert_eq!(u64::from_le_bytes(got), want, "{r:?}");
    }
    dest
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn openmp_image_matches_readelf() {
    let f = fixtures();
    let (co, o) = check_against_oracle(&f.omp);
    // What clang 16 OpenMP images hold (code object V4, AMDGPUUsage "Code
    // Object V4 Metadata"; as llvm-readelf-16 shows them).
    assert_eq!(co.code_object_version, 4);
    assert!(co
        .relocations
        .iter()
        .any(|r| r.kind == RelocKind::Relative64));
    for name in [
        "counter",
        "counter_ptr",
        "table",
        "__omp_rtl_device_environment",
    ] {
        let s = co.symbol(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(s.kind, SymbolKind::Variable);
        assert!(s.is_definition);
    }
    assert_eq!(co.metadata.kernels.len(), 2);
    // `_exec_mode` bytes read by vaddr equal readelf's dump of .rodata.
    for k in &co.metadata.kernels {
        let sym = co.symbol(&format!("{}_exec_mode", k.name)).unwrap();
        let ours = co.read_at_vaddr(&f.omp.bytes, sym.vaddr, 1).unwrap();
        assert_eq!(ours, o.bytes_at(&f.omp.path, sym.vaddr, 1));
        assert!((1..=3).contains(&ours[0]), "exec mode {}", ours[0]);
    }
}

#[test]
fn plain_images_v3_v4_v5_match_readelf() {
    let f = fixtures();
    for (img, version) in [(&f.plain_v3, 3), (&f.plain_v4, 4), (&f.plain_v5, 5)] {
        let (co, _) = check_against_oracle(img);
        assert_eq!(co.code_object_version, version);
        // The fixture's relocations: RELATIVE64 and ABS64 (defined and undefined).
        assert!(co
            .relocations
            .iter()
            .any(|r| r.kind == RelocKind::Relative64));
        assert!(co
            .relocations
            .iter()
            .any(|r| r.kind == RelocKind::Abs64 && r.symbol_defined));
        assert!(co
            .relocations
            .iter()
            .any(|r| r.symbol.as_deref() == Some("ext_var") && !r.symbol_defined));
    }
    // V5 lists the hidden arguments of the implicit-argument block.
    let co = CodeObject::parse(&f.plain_v5.bytes).unwrap();
    let k = co.metadata.kernel_by_name("lds_kernel").unwrap();
    assert!(k
        .args
        .iter()
        .any(|a| a.value_kind == "hidden_block_count_x"));
    assert_eq!(k.explicit_args().count(), 2);
}

#[test]
fn hand_written_descriptor_matches_its_directives() {
    let f = fixtures();
    let (co, _) = check_against_oracle(&f.kd_asm);
    let k = &co.metadata.kernels[0];
    assert_eq!(k.reqd_workgroup_size, Some([64, 2, 1]));
    assert_eq!(k.kind.as_deref(), Some("normal"));
    let sym = co.symbol("kd_test.kd").unwrap().clone();
    let kd = co.kernel_descriptor(&f.kd_asm.bytes, &sym).unwrap();
    // 4 + 2 + 2 + 2 + 2 + 2 + 1 user SGPRs are enabled in the fixture.
    assert_eq!(kd.enabled_user_sgpr_count(), 15);
    // A variable symbol is not a kernel descriptor.
    let var = co.symbol("kd_data").unwrap().clone();
    assert!(co.kernel_descriptor(&f.kd_asm.bytes, &var).is_err());
}

#[test]
fn placement_applies_relocations() {
    let f = fixtures();
    for img in [&f.omp, &f.plain_v4, &f.plain_v5, &f.kd_asm] {
        let o = Oracle::of(&img.path);
        let co = CodeObject::parse(&img.bytes).unwrap();
        check_placement(&co, &o, &img.bytes);
    }

    // The OpenMP pointer initialiser now holds the device address of `counter`.
    let o = Oracle::of(&f.omp.path);
    let co = CodeObject::parse(&f.omp.bytes).unwrap();
    let dest = check_placement(&co, &o, &f.omp.bytes);
    let first = co.first_vaddr();
    let ptr = o.dynsym("counter_ptr").unwrap().value;
    let target = o.dynsym("counter").unwrap().value;
    let off = (ptr - first) as usize;
    let value = u64::from_le_bytes(dest[off..off + 8].try_into().unwrap());
    assert_eq!(value, LOAD_BASE + (target - first));
    assert_eq!(co.device_address(LOAD_BASE, target), Some(value));
}

#[test]
fn placement_errors() {
    let f = fixtures();
    let co = CodeObject::parse(&f.plain_v4.bytes).unwrap();
    let (_, size) = co.load_span();
    let mut dest = vec![0u8; size as usize];

    let e = co
        .place(&f.plain_v4.bytes, &mut dest, LOAD_BASE, &|_| None)
        .unwrap_err();
    assert!(e.is_undefined_symbol(), "{e}");
    assert!(e.to_string().contains("ext_var"), "{e}");

    let e = co
        .place(&f.plain_v4.bytes, &mut dest, LOAD_BASE + 8, &resolve_ext)
        .unwrap_err();
    assert!(matches!(e, LoadError::Placement(_)), "{e}");

    let mut small = vec![0u8; (co.image_size() - 1) as usize];
    let e = co
        .place(&f.plain_v4.bytes, &mut small, LOAD_BASE, &resolve_ext)
        .unwrap_err();
    assert!(matches!(e, LoadError::Placement(_)), "{e}");

    let e = co
        .place(&f.plain_v4.bytes[..100], &mut dest, LOAD_BASE, &resolve_ext)
        .unwrap_err();
    assert!(matches!(e, LoadError::Placement(_)), "{e}");
}

/// Offset and entry count of `.rela.dyn` per readelf.
fn rela_dyn(o: &Oracle) -> (usize, usize) {
    let s = o.sections.iter().find(|s| s.name == ".rela.dyn").unwrap();
    (s.offset as usize, (s.size / 24) as usize)
}

fn set_reloc_type(bytes: &mut [u8], rela_off: usize, index: usize, r_type: u32) {
    let at = rela_off + index * 24 + 8;
    bytes[at..at + 4].copy_from_slice(&r_type.to_le_bytes());
}

#[test]
fn abs32_relocations_and_unsupported_types() {
    let f = fixtures();
    let o = Oracle::of(&f.plain_v4.path);
    let (rela_off, count) = rela_dyn(&o);
    let with_sym: Vec<usize> = (0..count)
        .filter(|&i| o.relocs[i].sym.as_deref().is_some_and(|n| n != "ext_var"))
        .collect();
    assert!(with_sym.len() >= 2);

    // Turn two ABS64 entries into ABS32_LO / ABS32_HI (types 1 and 2).
    let mut bytes = f.plain_v4.bytes.clone();
    set_reloc_type(&mut bytes, rela_off, with_sym[0], 1);
    set_reloc_type(&mut bytes, rela_off, with_sym[1], 2);
    let path = f.dir.join("abs32.co");
    std::fs::write(&path, &bytes).unwrap();
    let img = Image {
        path,
        bytes,
        asm: None,
    };
    let (co, o2) = check_against_oracle(&img);
    assert_eq!(o2.relocs[with_sym[0]].typ, "R_AMDGPU_ABS32_LO");
    assert_eq!(o2.relocs[with_sym[1]].typ, "R_AMDGPU_ABS32_HI");
    check_placement(&co, &o2, &img.bytes);

    // R_AMDGPU_NONE entries are skipped.
    let mut bytes = f.plain_v4.bytes.clone();
    set_reloc_type(&mut bytes, rela_off, 0, 0);
    let co = CodeObject::parse(&bytes).unwrap();
    assert_eq!(co.relocations.len(), count - 1);

    // Static-only types are rejected, naming the type as readelf does.
    for r_type in [4u32, 5, 6, 7, 10, 14, 200] {
        let mut bytes = f.plain_v4.bytes.clone();
        set_reloc_type(&mut bytes, rela_off, with_sym[0], r_type);
        let path = f.dir.join(format!("rtype{r_type}.co"));
        std::fs::write(&path, &bytes).unwrap();
        let e = CodeObject::parse(&bytes).unwrap_err();
        assert!(e.is_invalid_code_object(), "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("type {r_type}")), "{msg}");
        let readelf_name = Oracle::of(&path).relocs[with_sym[0]].typ.clone();
        if readelf_name.starts_with("R_AMDGPU_") && r_type != 200 {
            assert!(msg.contains(&readelf_name), "{msg} vs {readelf_name}");
        }
    }
}

#[test]
fn isa_compatibility_and_target_ids() {
    let f = fixtures();
    let agent = TargetId::gfx90a_default();
    // The HSA ISA name of the virtual device (`HSA_ISA_INFO_NAME`, `hsa/hsa.h`;
    // AMDGPUUsage "Target ID").
    assert_eq!(agent.to_target_id_string(), "gfx90a:sramecc+:xnack-");
    assert_eq!(
        agent.isa_name(),
        "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
    );
    assert_eq!(TargetId::parse(&agent.isa_name()), Some(agent));

    // Each image's target ID string equals the -mcpu it was built with, and
    // the compiler's `amdhsa.target` note.
    for (img, mcpu, compatible) in [
        (&f.plain_v4, "gfx90a", true),
        (&f.xnack_off, "gfx90a:xnack-", true),
        (&f.xnack_on, "gfx90a:xnack+", false),
        (&f.gfx1030, "gfx1030", false),
        (&f.omp, "gfx90a", true),
    ] {
        let (co, o) = check_against_oracle(img);
        assert_eq!(co.target.to_target_id_string(), mcpu);
        assert_eq!(co.target.isa_name(), o.meta.target.clone().unwrap());
        assert_eq!(TargetId::parse(mcpu), Some(co.target));
        assert_eq!(
            co.target.is_compatible_with_agent(&agent),
            compatible,
            "{mcpu}"
        );
        match co.check_compatible(&agent) {
            Ok(()) => assert!(compatible),
            Err(e) => {
                assert!(!compatible);
                assert!(
                    e.is_incompatible_isa() && !e.is_invalid_code_object(),
                    "{e}"
                );
                assert!(e.to_string().contains(mcpu), "{e}");
            }
        }
    }
    let xnack_on = CodeObject::parse(&f.xnack_on.bytes).unwrap();
    let agent_xnack_on = TargetId {
        xnack: FeatureSetting::On,
        ..agent
    };
    assert!(xnack_on.target.is_compatible_with_agent(&agent_xnack_on));
    let sramecc_off = TargetId::parse("gfx90a:sramecc-").unwrap();
    assert!(!sramecc_off.is_compatible_with_agent(&agent));
    assert!(TargetId::parse("gfx90a:xnack").is_none());
    assert!(TargetId::parse("gfx90a:xnack+:xnack-").is_none());
    assert!(TargetId::parse("gfx9999").is_none());
    assert!(TargetId::parse("gfx1030:xnack+").is_none());
}

/// For every processor LLVM 16 knows, the default e_flags llvm-mc-16 writes
/// decode to the target ID `TargetId::parse` gives for the bare name.
#[test]
fn processor_table_matches_llvm_mc() {
    let f = fixtures();
    let empty = f.dir.join("empty.s");
    std::fs::write(&empty, "").unwrap();
    let names = [
        "gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704", "gfx705",
        "gfx801", "gfx802", "gfx803", "gfx805", "gfx810", "gfx900", "gfx902", "gfx904", "gfx906",
        "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx940", "gfx1010", "gfx1011", "gfx1012",
        "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
        "gfx1100", "gfx1101", "gfx1102", "gfx1103",
    ];
    for name in names {
        let obj = f.dir.join(format!("empty-{name}.o"));
        tool(
            "llvm-mc-16",
            &[
                "-triple=amdgcn-amd-amdhsa",
                &format!("-mcpu={name}"),
                "-filetype=obj",
                empty.to_str().unwrap(),
                "-o",
                obj.to_str().unwrap(),
            ],
        );
        let header = tool("llvm-readelf-16", &["-h", obj.to_str().unwrap()]);
        let field = |name: &str| -> String {
            header
                .lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .unwrap()
                .trim()
                .to_string()
        };
        let abi: u8 = field("ABI Version:").parse().unwrap();
        let flags = hex(&field("Flags:")) as u32;
        let from_flags = TargetId::from_e_flags(abi, flags).unwrap();
        assert_eq!(from_flags.processor_name(), Some(name));
        assert_eq!(TargetId::parse(name), Some(from_flags), "{name}");
        assert_eq!(from_flags.to_target_id_string(), name);
    }
}

#[test]
fn unsupported_code_objects_are_rejected() {
    let f = fixtures();
    let o = Oracle::of(&f.plain_v2.path);
    assert_eq!(o.abi_version, 0);
    let e = CodeObject::parse(&f.plain_v2.bytes).unwrap_err();
    assert!(e.is_invalid_code_object(), "{e}");
    assert!(e.to_string().contains("V2"), "{e}");

    // A relocatable object straight from the compiler is not loadable.
    let e = CodeObject::parse(&f.plain_rel.bytes).unwrap_err();
    assert!(e.is_invalid_code_object(), "{e}");
    assert!(e.to_string().contains("ET_DYN"), "{e}");

    // Header fields named in the messages.
    let base = &f.plain_v4.bytes;
    let cases: [(usize, u8, &str); 5] = [
        (4, 1, "EI_CLASS"),
        (5, 2, "EI_DATA"),
        (7, 0, "EI_OSABI"),
        (8, 9, "EI_ABIVERSION"),
        (0x12, 0x3e, "e_machine"),
    ];
    for (at, value, what) in cases {
        let mut b = base.clone();
        b[at] = value;
        let e = CodeObject::parse(&b).unwrap_err();
        assert!(
            e.is_invalid_code_object() && e.to_string().contains(what),
            "{e}"
        );
    }
    let e = CodeObject::parse(&base[..40]).unwrap_err();
    assert!(e.is_invalid_code_object(), "{e}");
    let e =
        CodeObject::parse(b"not an elf file at all, clearly....................................")
            .unwrap_err();
    assert!(e.to_string().contains("magic"), "{e}");
}

#[test]
fn descriptor_parse_rejects_short_input() {
    assert!(KernelDescriptor::parse(&[0u8; 63]).is_err());
    let mut raw = [0u8; 64];
    raw[16..24].copy_from_slice(&(-64i64).to_le_bytes());
    let kd = KernelDescriptor::parse(&raw).unwrap();
    assert_eq!(kd.kernel_code_entry_byte_offset, -64);
    assert_eq!(kd.entry_address(0x1000), Some(0x1000 - 64));
    assert_eq!(kd.entry_address(0), None);
}

// ---------------------------------------------------------------------------
// Mutation fuzz

/// xorshift64* PRNG: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn rd(bytes: &[u8], at: usize, width: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..width].copy_from_slice(&bytes[at..at + width]);
    u64::from_le_bytes(b)
}

fn wr(bytes: &mut [u8], at: usize, width: usize, v: u64) {
    if at + width <= bytes.len() {
        bytes[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
    }
}

/// Header, program header, section header, note, symbol and relocation
/// fields of `bytes` as (offset, width) pairs, located through the ELF
/// header and readelf's section table.
fn interesting_fields(bytes: &[u8], o: &Oracle) -> Vec<(usize, usize)> {
    let mut f: Vec<(usize, usize)> = (4..16).map(|i| (i, 1)).collect();
    f.extend([
        (0x10, 2),
        (0x12, 2),
        (0x14, 4),
        (0x18, 8),
        (0x20, 8),
        (0x28, 8),
        (0x30, 4),
    ]);
    f.extend([
        (0x34, 2),
        (0x36, 2),
        (0x38, 2),
        (0x3a, 2),
        (0x3c, 2),
        (0x3e, 2),
    ]);
    let phoff = rd(bytes, 0x20, 8) as usize;
    let phnum = rd(bytes, 0x38, 2) as usize;
    for i in 0..phnum {
        let p = phoff + i * 56;
        f.extend([
            (p, 4),
            (p + 4, 4),
            (p + 8, 8),
            (p + 16, 8),
            (p + 32, 8),
            (p + 40, 8),
            (p + 48, 8),
        ]);
    }
    let shoff = rd(bytes, 0x28, 8) as usize;
    let shnum = rd(bytes, 0x3c, 2) as usize;
    for i in 0..shnum {
        let s = shoff + i * 64;
        f.extend([
            (s, 4),
            (s + 4, 4),
            (s + 8, 8),
            (s + 16, 8),
            (s + 24, 8),
            (s + 32, 8),
        ]);
        f.extend([(s + 40, 4), (s + 44, 4), (s + 48, 8), (s + 56, 8)]);
    }
    let note = o
        .sections
        .iter()
        .find(|s| s.name == ".note")
        .unwrap()
        .offset as usize;
    f.extend([(note, 4), (note + 4, 4), (note + 8, 4), (note + 12, 4)]);
    for name in [".dynsym", ".rela.dyn"] {
        if let Some(s) = o.sections.iter().find(|s| s.name == name) {
            for e in 0..(s.size / 24) as usize {
                let at = s.offset as usize + e * 24;
                if name == ".dynsym" {
                    f.extend([(at, 4), (at + 4, 1), (at + 6, 2), (at + 8, 8), (at + 16, 8)]);
                } else {
                    f.extend([(at, 8), (at + 8, 4), (at + 12, 4), (at + 16, 8)]);
                }
            }
        }
    }
    f.retain(|&(at, w)| at + w <= bytes.len());
    f
}

/// Parses a mutant and, when it parses, exercises everything that reads
/// through it. Returns whether parsing succeeded.
fn exercise(m: &[u8]) -> bool {
    let Ok(co) = CodeObject::parse(m) else {
        return false;
    };
    let (_, size) = co.load_span();
    let resolve = |_: &str| Some(0x1000u64);
    if size <= 16 << 20 {
        let mut dest = vec![0u8; size as usize];
        let _ = co.place(m, &mut dest, 0x1_0000_0000, &resolve);
    } else {
        let mut dest = vec![0u8; 4096];
        assert!(co.place(m, &mut dest, 0x1_0000_0000, &resolve).is_err());
    }
    for sym in co.symbols.clone() {
        if sym.is_definition {
            // The contract callers rely on: definitions lie inside the image.
            assert!(sym.vaddr >= co.first_vaddr());
            assert!(sym.vaddr - co.first_vaddr() + sym.size <= co.image_size());
            assert!(co.device_address(0x1_0000_0000, sym.vaddr).is_some());
        }
        let _ = co.kernel_descriptor(m, &sym);
        let _ = co.read_at_vaddr(m, sym.vaddr, sym.size.min(256));
    }
    let _ = co.check_compatible(&TargetId::gfx90a_default());
    true
}

#[test]
fn mutation_fuzz_never_panics() {
    let f = fixtures();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut panics, mut runs, mut parsed) = (0usize, 0usize, 0usize);
    let mut first_panic: Option<String> = None;
    let mut attempt = |m: &[u8], what: &dyn Fn() -> String| {
        runs += 1;
        match catch_unwind(AssertUnwindSafe(|| exercise(m))) {
            Ok(true) => parsed += 1,
            Ok(false) => {}
            Err(_) => {
                panics += 1;
                first_panic.get_or_insert_with(what);
            }
        }
    };

    for img in [&f.omp, &f.plain_v4, &f.kd_asm] {
        let base = &img.bytes;
        let o = Oracle::of(&img.path);
        let name = img.path.file_name().unwrap().to_string_lossy().into_owned();

        // Truncations: every length up to 2 KiB, then every 13th, plus every
        // section and segment boundary +-1.
        let mut lens: Vec<usize> = (0..base.len().min(2048))
            .chain((2048..base.len()).step_by(13))
            .collect();
        for s in &o.sections {
            lens.extend([s.offset as usize, (s.offset + s.size) as usize]);
        }
        for l in &o.loads {
            lens.extend([l.offset as usize, (l.offset + l.filesz) as usize]);
        }
        let extra: Vec<usize> = lens
            .iter()
            .flat_map(|&l| [l.saturating_sub(1), l + 1])
            .collect();
        lens.extend(extra);
        lens.retain(|&l| l < base.len());
        for len in lens {
            attempt(&base[..len], &|| format!("{name} truncated to {len}"));
        }

        // Header, note, symbol and relocation fields set to extremes.
        let len = base.len() as u64;
        for (at, width) in interesting_fields(base, &o) {
            let max = if width == 8 {
                u64::MAX
            } else {
                (1u64 << (width * 8)) - 1
            };
            let orig = rd(base, at, width);
            let r = rng.next() & max;
            for v in [
                0,
                1,
                2,
                24,
                56,
                64,
                0x1000,
                len - 1,
                len,
                len + 1,
                max,
                max - 1,
                max / 2 + 1,
                orig ^ 1,
                orig.wrapping_add(8),
                r,
            ] {
                let mut m = base.clone();
                wr(&mut m, at, width, v & max);
                attempt(&m, &|| {
                    format!("{name}: field at {at:#x} (width {width}) = {v:#x}")
                });
            }
        }

        // Random byte flips, biased towards the headers, note and tables.
        let hot = o
            .sections
            .iter()
            .find(|s| s.name == ".rodata")
            .map_or(base.len(), |s| s.offset as usize)
            .min(base.len());
        for i in 0..1500 {
            let mut m = base.clone();
            for _ in 0..1 + rng.below(6) {
                let at = if rng.below(3) == 0 {
                    rng.below(m.len())
                } else {
                    rng.below(hot)
                };
                m[at] = rng.next() as u8;
            }
            attempt(&m, &|| format!("{name}: random flips #{i}"));
        }

        // MessagePack damage inside the metadata note's descriptor.
        let note = o.sections.iter().find(|s| s.name == ".note").unwrap();
        let desc = note.offset as usize + 20;
        let desc_end = (note.offset + note.size) as usize;
        const MARKERS: [u8; 12] = [
            0xdd, 0xdf, 0xdb, 0xc6, 0xdc, 0xde, 0x8f, 0x9f, 0xc0, 0xcf, 0xd3, 0xca,
        ];
        for i in 0..800 {
            let mut m = base.clone();
            for _ in 0..1 + rng.below(3) {
                let at = desc + rng.below(desc_end - desc);
                m[at] = if rng.below(2) == 0 {
                    MARKERS[rng.below(MARKERS.len())]
                } else {
                    rng.next() as u8
                };
                if rng.below(4) == 0 && at + 5 <= desc_end {
                    // A huge length right after a marker.
                    m[at + 1..at + 5].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
                }
            }
            attempt(&m, &|| format!("{name}: msgpack damage #{i}"));
        }
    }

    eprintln!("mutation fuzz: {runs} mutants, {parsed} parsed, {panics} panics");
    assert_eq!(
        panics, 0,
        "{panics} of {runs} mutants panicked; first: {first_panic:?}"
    );
    // The fuzz reached past the header checks in both directions.
    assert!(parsed > 100 && parsed < runs, "parsed {parsed} of {runs}");
}
