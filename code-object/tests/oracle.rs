//! The crate's readings checked against LLVM 16's own tools: target IDs
//! against the `e_flags` names `llvm-readobj-16` prints and the
//! `amdhsa.target` of the metadata note; the metadata note against
//! `llvm-readelf-16 --notes`; kernel descriptors against the `.amdhsa_*`
//! directives `llvm-mc-16` assembled them from.
//!
//! Run: `cargo test -p code-object`. Needs clang-16, llvm-mc-16,
//! llvm-readobj-16 and llvm-readelf-16 (installed by `cargo xtask setup`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use code_object::elf::{check_ident, with_elf, Elf};
use code_object::{
    elf_target_id, kernel_metadata, Error, FeatureSetting, Isa, KernelDescriptor, KernelMetadata,
    Metadata, TargetId, KERNEL_DESCRIPTOR_SIZE,
};
use object::read::elf::{SectionHeader, Sym};
use object::LittleEndian as LE;

/// Runs `cmd` with LLVM 16's tools first on `PATH`; its stdout.
fn run(cmd: &str, args: &[&str]) -> String {
    let path = format!(
        "/usr/lib/llvm-16/bin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(cmd)
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Compiles the OpenCL C file `src` for gfx90a with clang-16 into `out`;
/// `extra` adds options (`-c` / `-S`, the code object version...).
fn clang_cl(src: &Path, out: &Path, mcpu: &str, extra: &[&str]) {
    let mut args = vec![
        "-x",
        "cl",
        "-cl-std=CL2.0",
        "-target",
        "amdgcn-amd-amdhsa",
        mcpu,
        "-nogpulib",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[s(src), "-o", s(out)]);
    run("clang-16", &args);
}

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("code-object-{test}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---------------------------------------------------------------------------
// Target IDs

/// The `e_flags` names llvm-readobj-16 prints for `obj` and its
/// `EI_ABIVERSION`.
fn readobj_flags(obj: &Path) -> (Vec<String>, u8) {
    let text = run("llvm-readobj-16", &["-h", s(obj)]);
    let flags = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("EF_AMDGPU_"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    let abi = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("ABIVersion:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (flags, abi)
}

/// The target ID the flag names spell, read the way the plugin reads
/// `e_flags` (V4+: ON/OFF are signs, ANY/UNSUPPORTED are not written;
/// V3: a set bit is `+`).
fn target_from_flag_names(flags: &[String]) -> String {
    let mach = flags
        .iter()
        .find_map(|f| f.strip_prefix("EF_AMDGPU_MACH_AMDGCN_"))
        .unwrap()
        .to_lowercase();
    let sign = |feature: &str| -> Option<char> {
        flags.iter().find_map(|f| {
            let rest = f.strip_prefix(&format!("EF_AMDGPU_FEATURE_{feature}_"))?;
            match rest {
                "ON_V4" | "V3" => Some('+'),
                "OFF_V4" => Some('-'),
                _ => None,
            }
        })
    };
    let mut id = mach;
    if let Some(c) = sign("SRAMECC") {
        id.push_str(&format!(":sramecc{c}"));
    }
    if let Some(c) = sign("XNACK") {
        id.push_str(&format!(":xnack{c}"));
    }
    id
}

/// The V4 feature setting the flag names spell for `feature`.
fn setting_from_flag_names(flags: &[String], feature: &str) -> FeatureSetting {
    let prefix = format!("EF_AMDGPU_FEATURE_{feature}_");
    match flags.iter().find_map(|f| f.strip_prefix(&prefix)) {
        Some("ON_V4") => FeatureSetting::On,
        Some("OFF_V4") => FeatureSetting::Off,
        Some("ANY_V4") => FeatureSetting::Any,
        _ => FeatureSetting::Unsupported,
    }
}

#[test]
fn target_ids_match_llvm_readobj() {
    let dir = scratch("targets");
    let empty = dir.join("empty.s");
    std::fs::write(&empty, "").unwrap();
    let cases: [(&str, &str, &str); 9] = [
        ("gfx90a", "", "4"),
        ("gfx90a", "+xnack,-sramecc", "4"),
        ("gfx90a", "-xnack,+sramecc", "5"),
        ("gfx908", "+sramecc", "4"),
        ("gfx906", "-xnack", "5"),
        ("gfx1030", "", "4"),
        ("gfx900", "+xnack", "3"),
        ("gfx908", "+xnack", "3"),
        ("gfx803", "", "3"),
    ];
    for (i, (mcpu, mattr, version)) in cases.into_iter().enumerate() {
        let obj = dir.join(format!("t{i}.o"));
        let mut args = vec![
            "-triple=amdgcn-amd-amdhsa".to_string(),
            format!("-mcpu={mcpu}"),
            format!("--amdhsa-code-object-version={version}"),
            "-filetype=obj".to_string(),
            s(&empty).to_string(),
            "-o".to_string(),
            s(&obj).to_string(),
        ];
        if !mattr.is_empty() {
            args.push(format!("-mattr={mattr}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run("llvm-mc-16", &args);
        let (flags, abi) = readobj_flags(&obj);
        let bytes = std::fs::read(&obj).unwrap();
        let ident = check_ident(&bytes).unwrap();
        assert_eq!(ident.abi_version, abi);
        assert_eq!(ident.code_object_version.to_string(), version);
        let want = target_from_flag_names(&flags);
        let ours = elf_target_id(&bytes).unwrap();
        assert_eq!(
            ours.to_string(),
            want,
            "{mcpu} {mattr} V{version}: {flags:?}"
        );
        assert_eq!(TargetId::parse(&want), Some(ours), "{want}");
        if abi >= 2 {
            let e_flags = with_elf(&bytes, |f: &Elf<'_>| {
                Ok::<_, Error>(f.header.e_flags.get(LE))
            })
            .unwrap();
            let isa = Isa::from_e_flags(abi, e_flags).unwrap();
            assert_eq!(isa.processor_name(), Some(mcpu));
            assert_eq!(
                isa.xnack,
                setting_from_flag_names(&flags, "XNACK"),
                "{mcpu}"
            );
            assert_eq!(
                isa.sramecc,
                setting_from_flag_names(&flags, "SRAMECC"),
                "{mcpu}"
            );
            assert_eq!(isa.to_target_id_string(), want);
        }
    }
    assert_eq!(elf_target_id(b"not an ELF"), Err(Error::NotElf));
    assert_eq!(check_ident(b"\x7fELF"), Err(Error::TooShort(4)));
}

// ---------------------------------------------------------------------------
// Metadata

const KERNELS_CL: &str = r#"
__kernel void __attribute__((reqd_work_group_size(64, 1, 1)))
add(__global float *out, __global const float *in, int n, __local int *tmp) {
  int i = get_global_id(0);
  tmp[get_local_id(0)] = i;
  if (i < n) out[i] = in[i] + tmp[0];
}
__kernel void scale(__global double *x, double f) { x[get_global_id(0)] *= f; }
"#;

/// One kernel as `llvm-readelf-16 --notes` prints it: its scalar keys, and
/// each argument's keys.
#[derive(Default, Debug)]
struct YamlKernel {
    keys: BTreeMap<String, String>,
    lists: BTreeMap<String, Vec<u64>>,
    args: Vec<BTreeMap<String, String>>,
}

/// The note as `llvm-readelf-16 --notes` prints it (YAML): top-level
/// scalars and lists, and the kernels.
#[derive(Default, Debug)]
struct YamlNote {
    top: BTreeMap<String, String>,
    version: Vec<u64>,
    kernels: Vec<YamlKernel>,
}

/// Reads the YAML dump by its indentation: kernels start with `  - .`,
/// arguments with `      - .`, list items with `- ` under a key.
fn readelf_notes(obj: &Path) -> YamlNote {
    let text = run("llvm-readelf-16", &["--notes", s(obj)]);
    let mut note = YamlNote::default();
    let mut list_key: Option<(usize, String)> = None;
    let document = text.split_once("---").map_or("", |(_, doc)| doc);
    for line in document.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if let Some(item) = trimmed.strip_prefix("- ") {
            if let (Some((at, key)), Ok(v)) = (&list_key, item.trim().parse::<u64>()) {
                if indent >= *at {
                    if key == "amdhsa.version" {
                        note.version.push(v);
                    } else {
                        let k = note.kernels.last_mut().unwrap();
                        k.lists.entry(key.clone()).or_default().push(v);
                    }
                    continue;
                }
            }
        }
        let (entry, body) = match trimmed.strip_prefix("- ") {
            Some(rest) => (true, rest),
            None => (false, trimmed),
        };
        let Some((key, value)) = body.split_once(':') else {
            continue;
        };
        let value = value.trim().trim_matches('\'').to_string();
        let column = if entry { indent + 2 } else { indent };
        match column {
            0 if key.starts_with("amdhsa.") => {
                if value.is_empty() && key == "amdhsa.version" {
                    list_key = Some((0, key.to_string()));
                } else if !value.is_empty() {
                    note.top.insert(key.to_string(), value);
                }
            }
            4 => {
                if entry {
                    note.kernels.push(YamlKernel::default());
                }
                let k = note.kernels.last_mut().unwrap();
                if value.is_empty() {
                    list_key = Some((4, key.to_string()));
                } else {
                    k.keys.insert(key.to_string(), value);
                }
            }
            8 => {
                let k = note.kernels.last_mut().unwrap();
                if entry {
                    k.args.push(BTreeMap::new());
                }
                k.args.last_mut().unwrap().insert(key.to_string(), value);
            }
            _ => {}
        }
    }
    note
}

/// Compares the crate's kernel with the YAML one; `full` when the kernel
/// came from [`Metadata::parse`] (the optional keys checked too).
fn check_kernel(ours: &KernelMetadata, yaml: &YamlKernel, full: bool) {
    let name = &yaml.keys[".name"];
    let num = |key: &str| -> u32 { yaml.keys[key].parse().unwrap() };
    assert_eq!(&ours.name, name);
    assert_eq!(ours.symbol, yaml.keys[".symbol"]);
    assert_eq!(ours.kernarg_segment_size, num(".kernarg_segment_size"));
    assert_eq!(ours.kernarg_segment_align, num(".kernarg_segment_align"));
    assert_eq!(
        ours.group_segment_fixed_size,
        num(".group_segment_fixed_size")
    );
    assert_eq!(
        ours.private_segment_fixed_size,
        num(".private_segment_fixed_size")
    );
    assert_eq!(
        ours.max_flat_workgroup_size,
        num(".max_flat_workgroup_size")
    );
    assert_eq!(ours.wavefront_size, num(".wavefront_size"));
    assert_eq!(ours.sgpr_count, num(".sgpr_count"));
    assert_eq!(ours.vgpr_count, num(".vgpr_count"));
    assert_eq!(
        ours.uses_dynamic_stack,
        yaml.keys.get(".uses_dynamic_stack").map(String::as_str) == Some("true")
    );
    assert_eq!(ours.language.as_ref(), yaml.keys.get(".language"));
    assert_eq!(
        ours.reqd_workgroup_size.map(|a| a.map(u64::from).to_vec()),
        yaml.lists.get(".reqd_workgroup_size").cloned()
    );
    assert_eq!(ours.args.len(), yaml.args.len(), "{name}");
    for (a, y) in ours.args.iter().zip(&yaml.args) {
        assert_eq!(a.offset.to_string(), y[".offset"], "{name}");
        assert_eq!(a.size.to_string(), y[".size"], "{name}");
        assert_eq!(a.value_kind, y[".value_kind"], "{name}");
        assert_eq!(a.is_hidden(), y[".value_kind"].starts_with("hidden_"));
        if full {
            assert_eq!(a.type_name.as_ref(), y.get(".type_name"), "{name}");
            assert_eq!(a.address_space.as_ref(), y.get(".address_space"));
            assert_eq!(a.is_const, y.get(".is_const").is_some_and(|v| v == "true"));
            assert_eq!(
                a.pointee_align.map(|v| v.to_string()).as_ref(),
                y.get(".pointee_align")
            );
        }
    }
    let explicit: Vec<u32> = yaml
        .args
        .iter()
        .filter(|y| !y[".value_kind"].starts_with("hidden_"))
        .map(|y| y[".size"].parse().unwrap())
        .collect();
    assert_eq!(ours.explicit_arg_sizes(), explicit);
    assert_eq!(ours.explicit_arg_count(), explicit.len());
}

/// The descriptor bytes of the first `NT_AMDGPU_METADATA` note of `bytes`.
fn note_desc(bytes: &[u8]) -> Vec<u8> {
    with_elf(bytes, |f: &Elf<'_>| {
        Ok::<_, Error>(f.metadata_note()?.unwrap().to_vec())
    })
    .unwrap()
}

#[test]
fn metadata_matches_llvm_readelf_v4_and_v5() {
    let dir = scratch("metadata");
    let src = dir.join("k.cl");
    std::fs::write(&src, KERNELS_CL).unwrap();
    let mut hidden_kinds = Vec::new();
    for version in ["4", "5"] {
        let obj = dir.join(format!("k{version}.o"));
        let version_option = format!("-mcode-object-version={version}");
        clang_cl(&src, &obj, "-mcpu=gfx90a:xnack-", &[&version_option, "-c"]);
        let bytes = std::fs::read(&obj).unwrap();
        let yaml = readelf_notes(&obj);
        assert_eq!(yaml.kernels.len(), 2, "{yaml:?}");

        let full = Metadata::parse(&note_desc(&bytes)).unwrap();
        let version_pair = vec![u64::from(full.version.0), u64::from(full.version.1)];
        assert_eq!(version_pair, yaml.version);
        assert_eq!(full.target.as_ref(), yaml.top.get("amdhsa.target"));
        // The note's target ID and the ELF header's agree.
        let header_target = elf_target_id(&bytes).unwrap();
        assert_eq!(
            TargetId::parse(full.target.as_deref().unwrap()),
            Some(header_target.clone())
        );
        assert_eq!(header_target.to_string(), "gfx90a:xnack-");

        let plugin_view = kernel_metadata(&bytes).unwrap();
        for (i, y) in yaml.kernels.iter().enumerate() {
            check_kernel(&full.kernels[i], y, true);
            check_kernel(&plugin_view[i], y, false);
            assert_eq!(
                full.kernel_by_symbol(&y.keys[".symbol"]).map(|k| &k.name),
                Some(&y.keys[".name"])
            );
        }
        hidden_kinds.push(
            full.kernels[0]
                .args
                .iter()
                .filter(|a| a.is_hidden())
                .map(|a| a.value_kind.clone())
                .collect::<Vec<_>>(),
        );
    }
    // V5 lists the implicit argument block's fields (block counts, group
    // sizes...), V4 only the older hidden arguments.
    assert!(!hidden_kinds[0].contains(&"hidden_block_count_x".to_string()));
    assert!(hidden_kinds[1].contains(&"hidden_block_count_x".to_string()));
    assert!(hidden_kinds[0].contains(&"hidden_global_offset_x".to_string()));
}

// ---------------------------------------------------------------------------
// Kernel descriptors

/// A kernel with unusual settings in every field a directive reaches.
const ODD_KERNEL_S: &str = r#"
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
.text
.globl odd
.p2align 8
.type odd,@function
odd:
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel odd
  .amdhsa_uses_dynamic_stack 1
  .amdhsa_exception_int_div_zero 1
  .amdhsa_tg_split 1
  .amdhsa_kernarg_size 24
  .amdhsa_float_round_mode_32 1
  .amdhsa_user_sgpr_dispatch_ptr 1
  .amdhsa_exception_fp_ieee_invalid_op 1
  .amdhsa_system_sgpr_workgroup_id_y 1
  .amdhsa_group_segment_fixed_size 1024
  .amdhsa_float_round_mode_16_64 2
  .amdhsa_user_sgpr_queue_ptr 1
  .amdhsa_exception_fp_denorm_src 0
  .amdhsa_system_sgpr_workgroup_id_z 1
  .amdhsa_private_segment_fixed_size 48
  .amdhsa_float_denorm_mode_32 1
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_exception_fp_ieee_div_zero 1
  .amdhsa_system_sgpr_workgroup_info 1
  .amdhsa_next_free_vgpr 40
  .amdhsa_float_denorm_mode_16_64 0
  .amdhsa_user_sgpr_dispatch_id 1
  .amdhsa_exception_fp_ieee_overflow 0
  .amdhsa_system_vgpr_workitem_id 2
  .amdhsa_next_free_sgpr 20
  .amdhsa_dx10_clamp 0
  .amdhsa_user_sgpr_private_segment_size 1
  .amdhsa_exception_fp_ieee_underflow 1
  .amdhsa_system_sgpr_workgroup_id_x 0
  .amdhsa_accum_offset 16
  .amdhsa_ieee_mode 0
  .amdhsa_system_sgpr_private_segment_wavefront_offset 1
  .amdhsa_exception_fp_ieee_inexact 0
  .amdhsa_fp16_overflow 1
.end_amdhsa_kernel
"#;

/// The `.amdhsa_*` directives of each `.amdhsa_kernel` block in `asm`.
fn directives(asm: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, BTreeMap<String, u64>)> = None;
    for line in asm.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix(".amdhsa_kernel ") {
            current = Some((name.trim().to_string(), BTreeMap::new()));
        } else if line.starts_with(".end_amdhsa_kernel") {
            if let Some((name, d)) = current.take() {
                out.insert(name, d);
            }
        } else if let (Some((_, d)), Some(rest)) = (&mut current, line.strip_prefix(".amdhsa_")) {
            let mut parts = rest.split_whitespace();
            if let (Some(key), Some(Ok(v))) = (parts.next(), parts.next().map(str::parse)) {
                d.insert(key.to_string(), v);
            }
        }
    }
    out
}

/// The 64 bytes of symbol `name` in the object `bytes` (`.symtab`).
fn symbol_bytes(bytes: &[u8], name: &str) -> Vec<u8> {
    with_elf(bytes, |f: &Elf<'_>| {
        let table = f.symbols(object::elf::SHT_SYMTAB)?;
        let sym = table
            .symbols()
            .iter()
            .find(|s| s.name(LE, table.strings()) == Ok(name.as_bytes()))
            .unwrap();
        let section = f
            .sections
            .section(object::SectionIndex(usize::from(sym.st_shndx(LE))))?;
        let start = (section.sh_offset(LE) + sym.st_value(LE)) as usize;
        Ok::<_, Error>(bytes[start..start + KERNEL_DESCRIPTOR_SIZE].to_vec())
    })
    .unwrap()
}

/// Checks every field a directive sets against the decoded descriptor.
fn check_descriptor(kd: &KernelDescriptor, d: &BTreeMap<String, u64>, kernel: &str) {
    let n = u64::from;
    let f = |on: bool| u64::from(on);
    let fields: [(&str, u64); 31] = [
        ("group_segment_fixed_size", n(kd.group_segment_fixed_size)),
        (
            "private_segment_fixed_size",
            n(kd.private_segment_fixed_size),
        ),
        ("kernarg_size", n(kd.kernarg_size)),
        ("user_sgpr_count", n(kd.user_sgpr_count())),
        (
            "user_sgpr_private_segment_buffer",
            f(kd.enable_sgpr_private_segment_buffer()),
        ),
        ("user_sgpr_dispatch_ptr", f(kd.enable_sgpr_dispatch_ptr())),
        ("user_sgpr_queue_ptr", f(kd.enable_sgpr_queue_ptr())),
        (
            "user_sgpr_kernarg_segment_ptr",
            f(kd.enable_sgpr_kernarg_segment_ptr()),
        ),
        ("user_sgpr_dispatch_id", f(kd.enable_sgpr_dispatch_id())),
        (
            "user_sgpr_flat_scratch_init",
            f(kd.enable_sgpr_flat_scratch_init()),
        ),
        (
            "user_sgpr_private_segment_size",
            f(kd.enable_sgpr_private_segment_size()),
        ),
        ("uses_dynamic_stack", f(kd.uses_dynamic_stack())),
        (
            "system_sgpr_private_segment_wavefront_offset",
            f(kd.enable_private_segment()),
        ),
        (
            "system_sgpr_workgroup_id_x",
            f(kd.enable_sgpr_workgroup_id_x()),
        ),
        (
            "system_sgpr_workgroup_id_y",
            f(kd.enable_sgpr_workgroup_id_y()),
        ),
        (
            "system_sgpr_workgroup_id_z",
            f(kd.enable_sgpr_workgroup_id_z()),
        ),
        (
            "system_sgpr_workgroup_info",
            f(kd.enable_sgpr_workgroup_info()),
        ),
        ("system_vgpr_workitem_id", n(kd.enable_vgpr_workitem_id())),
        ("float_round_mode_32", n(kd.float_round_mode_32())),
        ("float_round_mode_16_64", n(kd.float_round_mode_16_64())),
        ("float_denorm_mode_32", n(kd.float_denorm_mode_32())),
        ("float_denorm_mode_16_64", n(kd.float_denorm_mode_16_64())),
        ("dx10_clamp", f(kd.enable_dx10_clamp())),
        ("ieee_mode", f(kd.enable_ieee_mode())),
        ("fp16_overflow", f(kd.fp16_ovfl())),
        ("tg_split", f(kd.tg_split())),
        ("accum_offset", n(kd.accum_offset_vgprs())),
        (
            "exception_fp_ieee_invalid_op",
            f(kd.enable_exception_ieee_754_fp_invalid_operation()),
        ),
        (
            "exception_fp_ieee_div_zero",
            f(kd.enable_exception_ieee_754_fp_division_by_zero()),
        ),
        (
            "exception_fp_ieee_underflow",
            f(kd.enable_exception_ieee_754_fp_underflow()),
        ),
        (
            "exception_int_div_zero",
            f(kd.enable_exception_int_divide_by_zero()),
        ),
    ];
    let mut checked = 0;
    for (directive, ours) in fields {
        if let Some(&want) = d.get(directive) {
            assert_eq!(ours, want, "{kernel}: .amdhsa_{directive}");
            checked += 1;
        }
    }
    assert!(checked >= 20, "{kernel}: only {checked} directives found");
    // The code starts 256-byte aligned somewhere before or after the
    // descriptor; the user SGPRs the properties enable fit the count.
    assert!(kd.enabled_user_sgpr_count() <= kd.user_sgpr_count());
}

#[test]
fn kernel_descriptors_match_their_directives() {
    let dir = scratch("descriptors");
    // The hand-written kernel, and clang's kernels through their assembly.
    let odd_s = dir.join("odd.s");
    std::fs::write(&odd_s, ODD_KERNEL_S).unwrap();
    let cl = dir.join("k.cl");
    std::fs::write(&cl, KERNELS_CL).unwrap();
    let cl_s = dir.join("k.s");
    clang_cl(&cl, &cl_s, "-mcpu=gfx90a", &["-O2", "-S"]);
    let mut seen = 0;
    for asm in [&odd_s, &cl_s] {
        let obj = asm.with_extension("o");
        run(
            "llvm-mc-16",
            &[
                "-triple=amdgcn-amd-amdhsa",
                "-mcpu=gfx90a",
                "-filetype=obj",
                s(asm),
                "-o",
                s(&obj),
            ],
        );
        let bytes = std::fs::read(&obj).unwrap();
        let text = std::fs::read_to_string(asm).unwrap();
        for (kernel, d) in directives(&text) {
            let raw = symbol_bytes(&bytes, &format!("{kernel}.kd"));
            let kd = KernelDescriptor::parse(&raw).unwrap();
            assert_eq!(kd.raw.as_slice(), raw.as_slice());
            check_descriptor(&kd, &d, &kernel);
            seen += 1;
        }
    }
    assert_eq!(seen, 3, "odd, add and scale");
    assert_eq!(
        KernelDescriptor::parse(&[0u8; 63]),
        Err(Error::DescriptorTooShort(63))
    );
}
