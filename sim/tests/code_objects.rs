//! Loading code objects that this test compiles with clang-16, through the C
//! API: deserialize / reader, executables, symbols and their properties, and
//! the errors for images built for another GPU or corrupted.
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use std::ffi::{c_void, CString};
use std::path::PathBuf;

// Exported symbols, as in OpenMP images (plain C for amdgcn defaults to hidden,
// and the loader, like ROCr's, skips local symbols).
const SOURCE: &str = r#"
#define EXPORT __attribute__((visibility("protected")))
EXPORT int table[4] = {11, 22, 33, 44};
EXPORT __attribute__((amdgpu_kernel)) void scale(int *out, int n, int factor) {
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  if (i < n) out[i] = table[i & 3] * factor;
}
EXPORT __attribute__((amdgpu_kernel)) void empty(void) {}
"#;

fn build(name: &str, mcpu: &str, extra: &[&str]) -> Vec<u8> {
    let dir = scratch_dir("code_objects");
    // One source file per build: tests of this binary build in parallel, and
    // rewriting a shared file truncates it under another test's clang.
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, SOURCE).unwrap();
    let out: PathBuf = dir.join(format!("{name}.co"));
    let mut args = vec![
        "--target=amdgcn-amd-amdhsa",
        mcpu,
        "-nogpulib",
        "-O2",
        "-x",
        "c",
    ];
    args.extend_from_slice(extra);
    let (s, o) = (src.to_str().unwrap(), out.to_str().unwrap());
    args.extend_from_slice(&[s, "-o", o]);
    clang(&args);
    std::fs::read(out).unwrap()
}

/// The metadata note's `.kernarg_segment_size` of `kernel`, read by llvm-readelf-16 (the oracle).
fn readelf_kernarg_size(image: &[u8], kernel: &str) -> u32 {
    let dir = scratch_dir("code_objects");
    let path = dir.join(format!("readelf-{kernel}.co"));
    std::fs::write(&path, image).unwrap();
    let out = std::process::Command::new("llvm-readelf-16")
        .args(["--notes"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Kernel entries list `.kernarg_segment_size` before `.name`; walk the YAML-ish dump.
    let mut last_size = None;
    for line in text.lines() {
        let l = line.trim().trim_start_matches("- ");
        if let Some(v) = l.strip_prefix(".kernarg_segment_size:") {
            last_size = v.trim().parse::<u32>().ok();
        }
        if let Some(v) = l.strip_prefix(".name:") {
            if v.trim() == kernel {
                return last_size.expect("kernarg size precedes the name");
            }
        }
    }
    panic!("kernel {kernel} not in the notes:\n{text}");
}

struct Loaded {
    exe: hsa_executable_t,
}

fn load(image: &[u8], gpu: hsa_agent_t) -> Result<Loaded, hsa_status_t> {
    let mut co = hsa_code_object_t { handle: 0 };
    let s = unsafe {
        hsa_code_object_deserialize(
            image.as_ptr() as *mut c_void,
            image.len(),
            std::ptr::null(),
            &mut co,
        )
    };
    assert_eq!(s, 0);
    let mut exe = hsa_executable_t { handle: 0 };
    let empty = CString::new("").unwrap();
    assert_eq!(
        unsafe {
            hsa_executable_create_alt(
                HSA_PROFILE_FULL,
                HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO,
                empty.as_ptr(),
                &mut exe,
            )
        },
        0
    );
    let s = hsa_executable_load_code_object(exe, gpu, co, empty.as_ptr());
    assert_eq!(hsa_code_object_destroy(co), 0);
    if s != 0 {
        assert_eq!(hsa_executable_destroy(exe), 0);
        return Err(s);
    }
    assert_eq!(hsa_executable_freeze(exe, empty.as_ptr()), 0);
    let mut result = 1u32;
    assert_eq!(unsafe { hsa_executable_validate(exe, &mut result) }, 0);
    assert_eq!(result, 0);
    Ok(Loaded { exe })
}

fn symbol(
    exe: hsa_executable_t,
    name: &str,
    gpu: hsa_agent_t,
) -> Result<hsa_executable_symbol_t, hsa_status_t> {
    let n = CString::new(name).unwrap();
    let mut s = hsa_executable_symbol_t { handle: 0 };
    match unsafe { hsa_executable_get_symbol_by_name(exe, n.as_ptr(), &gpu, &mut s) } {
        0 => Ok(s),
        e => Err(e),
    }
}

fn sym_u32(s: hsa_executable_symbol_t, attr: u32) -> u32 {
    let mut v = 0u32;
    assert_eq!(
        unsafe { hsa_executable_symbol_get_info(s, attr, &mut v as *mut _ as *mut c_void) },
        0,
        "attr {attr}"
    );
    v
}

fn sym_u64(s: hsa_executable_symbol_t, attr: u32) -> u64 {
    let mut v = 0u64;
    assert_eq!(
        unsafe { hsa_executable_symbol_get_info(s, attr, &mut v as *mut _ as *mut c_void) },
        0,
        "attr {attr}"
    );
    v
}

#[test]
fn kernels_and_variables_of_a_clang_image() {
    let _s = Session::open();
    let gpu = gpus()[0];
    for (name, extra) in [
        ("v4", &["-mcode-object-version=4"][..]),
        ("v5", &["-mcode-object-version=5"][..]),
    ] {
        let image = build(name, "-mcpu=gfx90a", extra);
        let l = load(&image, gpu).unwrap_or_else(|s| panic!("{name}: load failed with {s:#x}"));
        let k = symbol(l.exe, "scale.kd", gpu).expect("kernel symbol");
        assert_eq!(
            sym_u32(k, HSA_EXECUTABLE_SYMBOL_INFO_TYPE),
            HSA_SYMBOL_KIND_KERNEL
        );
        assert_eq!(
            sym_u32(k, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE),
            readelf_kernarg_size(&image, "scale"),
            "{name}"
        );
        assert_eq!(
            sym_u32(
                k,
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT
            ),
            16
        );
        let kd = sym_u64(k, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);
        assert_eq!(kd % 64, 0, "kernel descriptors are 64-byte aligned");
        // The descriptor in device memory holds the kernarg size at +8.
        let kd_kernarg = unsafe { std::ptr::read_unaligned((kd + 8) as *const u32) };
        assert_eq!(
            kd_kernarg,
            sym_u32(k, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE)
        );
        let len = sym_u32(k, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH);
        assert_eq!(len, "scale.kd".len() as u32, "NAME_LENGTH excludes the NUL");
        let mut buf = vec![0xAAu8; len as usize + 1];
        assert_eq!(
            unsafe {
                hsa_executable_symbol_get_info(
                    k,
                    HSA_EXECUTABLE_SYMBOL_INFO_NAME,
                    buf.as_mut_ptr() as *mut c_void,
                )
            },
            0
        );
        assert_eq!(&buf[..len as usize], b"scale.kd");
        assert_eq!(buf[len as usize], 0xAA, "NAME writes no NUL");
        // The variable: its address holds the initialised data (device address = host address).
        let t = symbol(l.exe, "table", gpu).expect("variable symbol");
        assert_eq!(
            sym_u32(t, HSA_EXECUTABLE_SYMBOL_INFO_TYPE),
            HSA_SYMBOL_KIND_VARIABLE
        );
        assert_eq!(sym_u32(t, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE), 16);
        let addr = sym_u64(t, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS);
        let data = unsafe { std::slice::from_raw_parts(addr as *const i32, 4) };
        assert_eq!(data, &[11, 22, 33, 44]);
        // Kernel-only attributes on a variable are refused.
        let mut v = 0u64;
        assert_eq!(
            unsafe {
                hsa_executable_symbol_get_info(
                    t,
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                    &mut v as *mut _ as *mut c_void,
                )
            },
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            symbol(l.exe, "nonexistent", gpu).unwrap_err(),
            HSA_STATUS_ERROR_INVALID_SYMBOL_NAME
        );
        assert!(symbol(l.exe, "empty.kd", gpu).is_ok());
        // A frozen executable takes no more code objects.
        let mut co = hsa_code_object_t { handle: 0 };
        assert_eq!(
            unsafe {
                hsa_code_object_deserialize(
                    image.as_ptr() as *mut c_void,
                    image.len(),
                    std::ptr::null(),
                    &mut co,
                )
            },
            0
        );
        assert_eq!(
            hsa_executable_load_code_object(l.exe, gpu, co, std::ptr::null()),
            HSA_STATUS_ERROR_FROZEN_EXECUTABLE
        );
        assert_eq!(hsa_code_object_destroy(co), 0);
        assert_eq!(hsa_executable_destroy(l.exe), 0);
        assert_eq!(
            sym_status_after_destroy(k),
            HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL
        );
    }
}

fn sym_status_after_destroy(s: hsa_executable_symbol_t) -> hsa_status_t {
    let mut v = 0u32;
    unsafe {
        hsa_executable_symbol_get_info(
            s,
            HSA_EXECUTABLE_SYMBOL_INFO_TYPE,
            &mut v as *mut _ as *mut c_void,
        )
    }
}

#[test]
fn reader_path_loads_too() {
    let _s = Session::open();
    let gpu = gpus()[0];
    let image = build("reader", "-mcpu=gfx90a", &[]);
    let mut r = hsa_code_object_reader_t { handle: 0 };
    assert_eq!(
        unsafe {
            hsa_code_object_reader_create_from_memory(
                image.as_ptr() as *const c_void,
                image.len(),
                &mut r,
            )
        },
        0
    );
    let mut exe = hsa_executable_t { handle: 0 };
    assert_eq!(
        unsafe { hsa_executable_create_alt(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut exe) },
        0
    );
    let mut lco = hsa_loaded_code_object_t { handle: 0 };
    assert_eq!(
        unsafe { hsa_executable_load_agent_code_object(exe, gpu, r, std::ptr::null(), &mut lco) },
        0
    );
    assert_ne!(lco.handle, 0);
    assert!(symbol(exe, "scale.kd", gpu).is_ok());
    assert_eq!(hsa_code_object_reader_destroy(r), 0);
    assert_eq!(
        hsa_code_object_reader_destroy(r),
        HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER
    );
    assert_eq!(hsa_executable_destroy(exe), 0);
}

#[test]
fn images_for_other_gpus_and_corrupt_images_are_refused() {
    let _s = Session::open();
    let gpu = gpus()[0];
    let other = build("gfx1030", "-mcpu=gfx1030", &[]);
    assert_eq!(
        load(&other, gpu).err(),
        Some(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS)
    );
    let xnack = build("xnack", "-mcpu=gfx90a:xnack+", &[]);
    assert_eq!(
        load(&xnack, gpu).err(),
        Some(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS),
        "the agent runs xnack-"
    );
    let ok = build("xnackoff", "-mcpu=gfx90a:xnack-", &[]);
    assert!(load(&ok, gpu).is_ok());
    let good = build("corrupt", "-mcpu=gfx90a", &[]);
    for cut in [16usize, 64, good.len() / 2] {
        assert_eq!(
            load(&good[..cut], gpu).err(),
            Some(HSA_STATUS_ERROR_INVALID_CODE_OBJECT),
            "truncated at {cut}"
        );
    }
    let mut bad = good.clone();
    bad[18] = 0x3e; // e_machine = x86-64
    assert_eq!(
        load(&bad, gpu).err(),
        Some(HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
    );
}

#[test]
fn old_plugin_patches_the_deserialized_copy() {
    // LLVM's old plugin writes into the bytes behind the code object handle
    // before loading; the load must see the patched bytes.
    let _s = Session::open();
    let gpu = gpus()[0];
    let image = build("patch", "-mcpu=gfx90a", &[]);
    // Find table's initial data {11,22,33,44} in the file and patch the first element.
    let needle: Vec<u8> = [11i32, 22, 33, 44]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let pos = image
        .windows(16)
        .position(|w| w == needle.as_slice())
        .expect("initialiser in the file");
    let mut co = hsa_code_object_t { handle: 0 };
    assert_eq!(
        unsafe {
            hsa_code_object_deserialize(
                image.as_ptr() as *mut c_void,
                image.len(),
                std::ptr::null(),
                &mut co,
            )
        },
        0
    );
    unsafe { std::ptr::write_unaligned((co.handle as usize + pos) as *mut i32, 99) };
    let mut exe = hsa_executable_t { handle: 0 };
    assert_eq!(
        unsafe {
            hsa_executable_create(
                HSA_PROFILE_FULL,
                HSA_EXECUTABLE_STATE_UNFROZEN,
                std::ptr::null(),
                &mut exe,
            )
        },
        0
    );
    assert_eq!(
        hsa_executable_load_code_object(exe, gpu, co, std::ptr::null()),
        0
    );
    let t = symbol(exe, "table", gpu).unwrap();
    let addr = sym_u64(t, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS);
    assert_eq!(unsafe { *(addr as *const i32) }, 99);
    assert_eq!(hsa_executable_destroy(exe), 0);
    assert_eq!(hsa_code_object_destroy(co), 0);
}
