//! Tests of the dlopen'd function table: failures are errors, not panics;
//! required and optional functions behave as documented; ROCm's real
//! library resolves completely.

use std::ffi::{CStr, OsStr};
use std::path::{Path, PathBuf};
use std::process::Command;

use hsa_sys::{HsaApi, LoadError, HSA_FUNCTION_NAMES, HSA_REQUIRED_FUNCTION_NAMES};

/// Debian's ROCm 5.2 runtime (package libhsa-runtime64-1).
const DEBIAN_HSA: &str = "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1";

/// Builds a shared library from C source with clang-16.
fn build_stub(dir: &Path, name: &str, source: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    let lib = dir.join(format!("lib{name}.so"));
    std::fs::write(&src, source).unwrap();
    let status = Command::new("clang-16")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("clang-16 must be installed (cargo xtask setup)");
    assert!(status.success(), "clang-16 failed on {name}.c");
    lib
}

/// The C source of a stub exporting `names` as functions taking nothing and
/// returning `4096 + index` (so a call proves which symbol was bound).
fn stub_source(names: &[&str]) -> String {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("unsigned {n}(void) {{ return {}u; }}\n", 4096 + i))
        .collect()
}

#[test]
fn nonexistent_path_is_an_open_error() {
    let missing = "/nonexistent/dir/libhsa-runtime64.so.1";
    // SAFETY: the path does not exist, so nothing is loaded.
    let err = unsafe { HsaApi::load_from(&[missing]) }.unwrap_err();
    match err {
        LoadError::Open { tried } => {
            assert_eq!(tried.len(), 1);
            assert!(tried[0].starts_with(missing), "{tried:?}");
        }
        other => panic!("expected Open, got {other:?}"),
    }
    // SAFETY: an empty candidate list loads nothing.
    let err = unsafe { HsaApi::load_from::<&str>(&[]) }.unwrap_err();
    assert!(matches!(err, LoadError::Open { tried } if tried.is_empty()));
}

#[test]
fn missing_required_symbol_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let lib = build_stub(dir.path(), "only_init", &stub_source(&["hsa_init"]));
    // SAFETY: the stub has no initialisers and is never called.
    let err = unsafe { HsaApi::load_from(&[lib.as_os_str()]) }.unwrap_err();
    // The header declares hsa_shut_down right after hsa_init, and required
    // functions are resolved in header order.
    match err {
        LoadError::MissingSymbol { symbol } => assert_eq!(symbol, "hsa_shut_down"),
        other => panic!("expected MissingSymbol, got {other:?}"),
    }
}

#[test]
fn required_only_library_loads_with_optionals_absent() {
    let dir = tempfile::tempdir().unwrap();
    let lib = build_stub(
        dir.path(),
        "required_only",
        &stub_source(HSA_REQUIRED_FUNCTION_NAMES),
    );
    // A first candidate that fails to open is skipped.
    let candidates = [OsStr::new("/nonexistent/libhsa.so"), lib.as_os_str()];
    // SAFETY: the stub has no initialisers; the only functions called below
    // take no arguments and return an unsigned int, as hsa_init does.
    let api = unsafe { HsaApi::load_from(&candidates) }.unwrap();
    assert_eq!(api.library_name(), lib.as_os_str());
    // hsa_init is entry 0 of the required list, hsa_iterate_agents entry 4.
    // SAFETY: stub functions take no arguments.
    assert_eq!(unsafe { (api.hsa_init)() }, 4096);
    let iterate_agents: unsafe extern "C" fn() -> u32 =
        // SAFETY: reinterpreting a function pointer as another one of the
        // same ABI shape as the stub's real definition.
        unsafe { std::mem::transmute(api.hsa_iterate_agents) };
    // SAFETY: the stub's hsa_iterate_agents takes no arguments.
    assert_eq!(unsafe { iterate_agents() }, 4100);
    assert!(api.hsa_signal_add_relaxed.is_none());
    assert!(api.hsa_queue_inactivate.is_none());
    assert!(api.hsa_amd_signal_wait_any.is_none());
    // The table outlives nothing: a clone keeps the library loaded.
    let clone = api.clone();
    drop(api);
    // SAFETY: as above.
    assert_eq!(unsafe { (clone.hsa_init)() }, 4096);
}

#[test]
fn debian_rocm_runtime_resolves_everything() {
    assert!(
        Path::new(DEBIAN_HSA).exists(),
        "{DEBIAN_HSA} missing: install libhsa-runtime64-1 (cargo xtask setup)"
    );
    // SAFETY: ROCm's runtime implements exactly these prototypes; its
    // initialisers do not need a GPU.
    let api = unsafe { HsaApi::load_from(&[DEBIAN_HSA]) }.unwrap();
    // ROCm 5.2 exports every function our header declares (checked
    // independently with `nm -D`), so no optional one is missing either.
    let f = api.functions();
    assert!(f.hsa_signal_add_relaxed.is_some());
    assert!(f.hsa_amd_signal_wait_any.is_some());
    assert!(f.hsa_executable_get_symbol.is_some());
    assert!(f.hsa_system_get_major_extension_table.is_some());
    assert!(HSA_FUNCTION_NAMES.len() > HSA_REQUIRED_FUNCTION_NAMES.len());
    let debug = format!("{f:?}");
    assert!(!debug.contains("None"), "some function unresolved: {debug}");

    // A real call through the table: hsa_status_string works before
    // hsa_init and names the code (`hsa_status_string`, `hsa/hsa.h`).
    let mut text: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: valid out-pointer; the function needs no initialisation.
    let status =
        unsafe { (api.hsa_status_string)(hsa_sys::HSA_STATUS_ERROR_INVALID_ARGUMENT, &mut text) };
    assert_eq!(status, hsa_sys::HSA_STATUS_SUCCESS);
    assert!(!text.is_null());
    // SAFETY: ROCm returns a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(text) }.to_str().unwrap();
    assert!(
        text.starts_with("HSA_STATUS_ERROR_INVALID_ARGUMENT"),
        "{text}"
    );
}
