//! The exported HSA C API of the virtual device.
//!
//! Every `extern "C"` function here is thin: it checks its pointers, calls
//! the safe layers, and turns the result into an `hsa_status_t` through
//! [`boundary`], which also catches any panic so that none crosses the C ABI
//! (a panic becomes `HSA_STATUS_ERROR`, logged). Each export is checked at
//! compile time against the prototype generated from `include/` with
//! [`check_signature!`].

use crate::agent::InfoValue;
use crate::error::{SimError, SimResult};
use hsa_sys::*;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod code;
pub mod memory;
pub mod queue;
pub mod signal;
pub mod svm;
pub mod system;

/// For each export: asserts at compile time that it has the type of the
/// `PFN_<name>` prototype bindgen generated from `include/`, and gives it the
/// ELF symbol version `ROCR_1` of ROCm's library (through `.symver`; the
/// version node is defined by `sim/exports.map`), so programs linked against
/// ROCm's `libhsa-runtime64.so.1` bind to ours without a version warning.
macro_rules! check_signature {
    ($($name:ident),* $(,)?) => {
        $(
            paste::paste! {
                const _: ::hsa_sys::[<PFN_ $name>] = $name;
            }
            ::std::arch::global_asm!(concat!(".symver ", stringify!($name), ", ", stringify!($name), "@@ROCR_1"));
        )*
    };
}
pub(crate) use check_signature;

/// Runs `f` for the C function `name`: maps its error to a status (logged),
/// and a panic to `HSA_STATUS_ERROR`.
pub fn boundary(name: &str, f: impl FnOnce() -> SimResult<()>) -> hsa_status_t {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => HSA_STATUS_SUCCESS,
        Ok(Err(SimError::Callback(s))) => s,
        Ok(Err(e)) => {
            log::debug!("{name}: {e}");
            e.status()
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            log::error!("{name}: internal error (panic caught at the C boundary): {what}");
            HSA_STATUS_ERROR
        }
    }
}

/// Runs `f` for a value-returning C function; a panic returns `fallback`.
pub fn value_boundary<T>(name: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            log::error!("{name}: internal error (panic caught at the C boundary)");
            fallback
        }
    }
}

/// Fails with `InvalidArgument` naming `what` when `p` is null.
pub fn non_null<T>(p: *const T, what: &str) -> SimResult<()> {
    if p.is_null() {
        Err(SimError::arg(format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// Writes `v` into the caller's buffer `out` as exactly the attribute's C type.
///
/// # Safety
/// `out` must be non-null and point to writable memory at least as large as
/// the attribute's declared type.
pub unsafe fn write_info(out: *mut c_void, v: &InfoValue) {
    let o = out as *mut u8;
    // SAFETY: (all arms) the caller guarantees `out` holds the declared type, which
    // is exactly what each arm writes; unaligned writes make no alignment demand.
    unsafe {
        match v {
            InfoValue::Bool(b) => std::ptr::write_unaligned(o, u8::from(*b)),
            InfoValue::U16(x) => std::ptr::write_unaligned(o as *mut u16, *x),
            InfoValue::U32(x) => std::ptr::write_unaligned(o as *mut u32, *x),
            InfoValue::U64(x) => std::ptr::write_unaligned(o as *mut u64, *x),
            InfoValue::U16x3(a) => std::ptr::write_unaligned(o as *mut [u16; 3], *a),
            InfoValue::U32x4(a) => std::ptr::write_unaligned(o as *mut [u32; 4], *a),
            InfoValue::Dim3(a) => std::ptr::write_unaligned(o as *mut [u32; 3], *a),
            InfoValue::Chars(b) => std::ptr::copy_nonoverlapping(b.as_ptr(), o, b.len()),
            InfoValue::Bools(b) => {
                for (i, x) in b.iter().enumerate() {
                    std::ptr::write(o.add(i), u8::from(*x));
                }
            }
            InfoValue::Mask128(m) => std::ptr::copy_nonoverlapping(m.as_ptr(), o, 128),
            InfoValue::Pointer(p) => std::ptr::write_unaligned(o as *mut usize, *p),
        }
    }
}
