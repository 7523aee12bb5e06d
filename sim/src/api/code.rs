//! Code objects, code object readers, executables and symbols
//! (`hsa_code_object_reader_*`, `hsa_executable_*` in `hsa/hsa.h`; behaviour as
//! ROCr 5.2's `src/loader/executable.cpp`).

use super::{boundary, check_signature, non_null, write_info};
use crate::agent::{agent_handle, InfoValue};
use crate::error::{SimError, SimResult};
use crate::executable::{
    CodeObjectBytes, CodeObjectReader, Executable, ExecutableSymbol, SymbolInfo,
};
use crate::runtime::{runtime, Runtime};
use hsa_sys::*;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

check_signature!(
    hsa_code_object_deserialize,
    hsa_code_object_destroy,
    hsa_code_object_reader_create_from_memory,
    hsa_code_object_reader_destroy,
    hsa_executable_create,
    hsa_executable_create_alt,
    hsa_executable_load_code_object,
    hsa_executable_load_agent_code_object,
    hsa_executable_freeze,
    hsa_executable_validate,
    hsa_executable_destroy,
    hsa_executable_get_info,
    hsa_executable_get_symbol_by_name,
    hsa_executable_get_symbol,
    hsa_executable_iterate_symbols,
    hsa_executable_symbol_get_info,
);

/// `hsa_code_object_deserialize`: copies the image into runtime memory; the
/// handle is the copy's address (clients may patch it before loading).
///
/// # Safety
/// `serialized_code_object` must hold `serialized_code_object_size` bytes;
/// `code_object` must be writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_code_object_deserialize(
    serialized_code_object: *mut c_void,
    serialized_code_object_size: usize,
    _options: *const c_char,
    code_object: *mut hsa_code_object_t,
) -> hsa_status_t {
    boundary("hsa_code_object_deserialize", || {
        let rt = runtime()?;
        non_null(serialized_code_object, "serialized_code_object")?;
        non_null(code_object, "code_object")?;
        if serialized_code_object_size == 0 {
            return Err(SimError::arg("serialized_code_object_size is 0"));
        }
        let copy = CodeObjectBytes::copy_from_client(
            serialized_code_object as u64,
            serialized_code_object_size,
        )?;
        let handle = copy.address();
        rt.code_objects.lock().insert(handle, Arc::new(copy));
        // SAFETY: checked non-null.
        unsafe { *code_object = hsa_code_object_t { handle } };
        Ok(())
    })
}

/// `hsa_code_object_destroy`.
#[no_mangle]
pub extern "C" fn hsa_code_object_destroy(code_object: hsa_code_object_t) -> hsa_status_t {
    boundary("hsa_code_object_destroy", || {
        let rt = runtime()?;
        let removed = rt.code_objects.lock().remove(&code_object.handle);
        removed.map(|_| ()).ok_or_else(|| {
            SimError::InvalidCodeObject(format!(
                "unknown code object handle {:#x}",
                code_object.handle
            ))
        })
    })
}

/// `hsa_code_object_reader_create_from_memory` (the bytes are copied).
///
/// # Safety
/// `code_object` must hold `size` bytes; `code_object_reader` must be writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    code_object_reader: *mut hsa_code_object_reader_t,
) -> hsa_status_t {
    boundary("hsa_code_object_reader_create_from_memory", || {
        let rt = runtime()?;
        non_null(code_object, "code_object")?;
        non_null(code_object_reader, "code_object_reader")?;
        if size == 0 {
            return Err(SimError::arg("size is 0"));
        }
        let handle = rt.readers.insert(Arc::new(CodeObjectReader {
            bytes: CodeObjectBytes::copy_from_client(code_object as u64, size)?,
        }));
        // SAFETY: checked non-null.
        unsafe { *code_object_reader = hsa_code_object_reader_t { handle } };
        Ok(())
    })
}

/// `hsa_code_object_reader_destroy`.
#[no_mangle]
pub extern "C" fn hsa_code_object_reader_destroy(
    code_object_reader: hsa_code_object_reader_t,
) -> hsa_status_t {
    boundary("hsa_code_object_reader_destroy", || {
        let rt = runtime()?;
        rt.readers
            .remove(code_object_reader.handle)
            .map(|_| ())
            .ok_or(SimError::InvalidCodeObjectReader(code_object_reader.handle))
    })
}

fn create(profile: u32, rounding: u32, frozen: bool, out: *mut hsa_executable_t) -> SimResult<()> {
    let rt = runtime()?;
    non_null(out, "executable")?;
    if profile > HSA_PROFILE_FULL {
        return Err(SimError::arg(format!("unknown profile {profile}")));
    }
    if rounding > HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR {
        return Err(SimError::arg(format!("unknown rounding mode {rounding}")));
    }
    let handle = rt
        .executables
        .insert(Arc::new(Executable::new(profile, rounding, frozen)));
    // SAFETY: checked non-null.
    unsafe { *out = hsa_executable_t { handle } };
    Ok(())
}

/// `hsa_executable_create` (deprecated form, with an initial state).
///
/// # Safety
/// `executable` must be writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_create(
    profile: hsa_profile_t,
    executable_state: hsa_executable_state_t,
    _options: *const c_char,
    executable: *mut hsa_executable_t,
) -> hsa_status_t {
    boundary("hsa_executable_create", || {
        if executable_state > HSA_EXECUTABLE_STATE_FROZEN {
            return Err(SimError::arg(format!(
                "unknown executable state {executable_state}"
            )));
        }
        create(
            profile,
            HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
            executable_state == HSA_EXECUTABLE_STATE_FROZEN,
            executable,
        )
    })
}

/// `hsa_executable_create_alt`.
///
/// # Safety
/// `executable` must be writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_create_alt(
    profile: hsa_profile_t,
    default_float_rounding_mode: hsa_default_float_rounding_mode_t,
    _options: *const c_char,
    executable: *mut hsa_executable_t,
) -> hsa_status_t {
    boundary("hsa_executable_create_alt", || {
        create(profile, default_float_rounding_mode, false, executable)
    })
}

fn executable(rt: &Runtime, h: u64) -> SimResult<Arc<Executable>> {
    rt.executables.get(h).ok_or(SimError::InvalidExecutable(h))
}

/// `hsa_executable_load_code_object`: loads a deserialized code object (its
/// current bytes, patches included) for `agent`.
#[no_mangle]
pub extern "C" fn hsa_executable_load_code_object(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    code_object: hsa_code_object_t,
    _options: *const c_char,
) -> hsa_status_t {
    boundary("hsa_executable_load_code_object", || {
        let rt = runtime()?;
        let exe = self::executable(&rt, executable.handle)?;
        let a = rt.gpu_agent(agent.handle)?.index;
        let co = rt
            .code_objects
            .lock()
            .get(&code_object.handle)
            .cloned()
            .ok_or_else(|| {
                SimError::InvalidCodeObject(format!(
                    "unknown code object handle {:#x}",
                    code_object.handle
                ))
            })?;
        exe.load(&rt.platform(), a, &co.snapshot())
    })
}

static LOADED_CODE_OBJECTS: AtomicU64 = AtomicU64::new(1);

/// `hsa_executable_load_agent_code_object`: loads a reader's code object for `agent`.
///
/// # Safety
/// `loaded_code_object` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    code_object_reader: hsa_code_object_reader_t,
    _options: *const c_char,
    loaded_code_object: *mut hsa_loaded_code_object_t,
) -> hsa_status_t {
    boundary("hsa_executable_load_agent_code_object", || {
        let rt = runtime()?;
        let exe = self::executable(&rt, executable.handle)?;
        let a = rt.gpu_agent(agent.handle)?.index;
        let reader = rt
            .readers
            .get(code_object_reader.handle)
            .ok_or(SimError::InvalidCodeObjectReader(code_object_reader.handle))?;
        exe.load(&rt.platform(), a, &reader.bytes.snapshot())?;
        if !loaded_code_object.is_null() {
            let handle = LOADED_CODE_OBJECTS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: checked non-null.
            unsafe { *loaded_code_object = hsa_loaded_code_object_t { handle } };
        }
        Ok(())
    })
}

/// `hsa_executable_freeze`.
#[no_mangle]
pub extern "C" fn hsa_executable_freeze(
    executable: hsa_executable_t,
    _options: *const c_char,
) -> hsa_status_t {
    boundary("hsa_executable_freeze", || {
        let rt = runtime()?;
        self::executable(&rt, executable.handle)?.freeze()
    })
}

/// `hsa_executable_validate`: every loaded executable is valid (`*result = 0`).
///
/// # Safety
/// `result` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_validate(
    executable: hsa_executable_t,
    result: *mut u32,
) -> hsa_status_t {
    boundary("hsa_executable_validate", || {
        let rt = runtime()?;
        non_null(result, "result")?;
        self::executable(&rt, executable.handle)?;
        // SAFETY: checked non-null.
        unsafe { *result = 0 };
        Ok(())
    })
}

/// `hsa_executable_destroy`: releases the loaded images and symbols.
#[no_mangle]
pub extern "C" fn hsa_executable_destroy(executable: hsa_executable_t) -> hsa_status_t {
    boundary("hsa_executable_destroy", || {
        let rt = runtime()?;
        let exe = rt
            .executables
            .remove(executable.handle)
            .ok_or(SimError::InvalidExecutable(executable.handle))?;
        exe.destroy(&rt.platform());
        Ok(())
    })
}

/// `hsa_executable_get_info`.
///
/// # Safety
/// `value` must be NULL or point to storage of the attribute's type.
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_get_info(
    executable: hsa_executable_t,
    attribute: hsa_executable_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_executable_get_info", || {
        let rt = runtime()?;
        non_null(value, "value")?;
        let exe = self::executable(&rt, executable.handle)?;
        let v = match attribute {
            HSA_EXECUTABLE_INFO_PROFILE => InfoValue::U32(exe.profile),
            HSA_EXECUTABLE_INFO_STATE => InfoValue::U32(if exe.is_frozen() {
                HSA_EXECUTABLE_STATE_FROZEN
            } else {
                HSA_EXECUTABLE_STATE_UNFROZEN
            }),
            HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE => InfoValue::U32(exe.rounding_mode),
            other => {
                return Err(SimError::arg(format!(
                    "unknown executable attribute {other:#x}"
                )))
            }
        };
        // SAFETY: non-null, sized for the attribute by the caller's contract.
        unsafe { write_info(value, &v) };
        Ok(())
    })
}

fn by_name(
    rt: &Runtime,
    executable: u64,
    name: *const c_char,
    agent: Option<u64>,
    out: *mut hsa_executable_symbol_t,
) -> SimResult<()> {
    non_null(name, "symbol_name")?;
    non_null(out, "symbol")?;
    let exe = self::executable(rt, executable)?;
    // SAFETY: checked non-null; the caller passes a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    let agent = match agent {
        Some(h) => Some(rt.agent(h)?.index),
        None => None,
    };
    let handle = exe
        .symbol_by_name(&name, agent)
        .ok_or(SimError::InvalidSymbolName(name))?;
    // SAFETY: checked non-null.
    unsafe { *out = hsa_executable_symbol_t { handle } };
    Ok(())
}

/// `hsa_executable_get_symbol_by_name`: `agent` may be NULL for any agent.
///
/// # Safety
/// `symbol_name` must be a NUL-terminated string; `agent` NULL or readable;
/// `symbol` writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: hsa_executable_t,
    symbol_name: *const c_char,
    agent: *const hsa_agent_t,
    symbol: *mut hsa_executable_symbol_t,
) -> hsa_status_t {
    boundary("hsa_executable_get_symbol_by_name", || {
        let rt = runtime()?;
        // SAFETY: NULL or readable by the caller's contract.
        let agent = (!agent.is_null()).then(|| unsafe { (*agent).handle });
        by_name(&rt, executable.handle, symbol_name, agent, symbol)
    })
}

/// `hsa_executable_get_symbol` (deprecated): the module name is ignored.
///
/// # Safety
/// As [`hsa_executable_get_symbol_by_name`].
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_get_symbol(
    executable: hsa_executable_t,
    module_name: *const c_char,
    symbol_name: *const c_char,
    agent: hsa_agent_t,
    call_convention: i32,
    symbol: *mut hsa_executable_symbol_t,
) -> hsa_status_t {
    let _ = (module_name, call_convention);
    boundary("hsa_executable_get_symbol", || {
        let rt = runtime()?;
        by_name(
            &rt,
            executable.handle,
            symbol_name,
            Some(agent.handle),
            symbol,
        )
    })
}

/// `hsa_executable_iterate_symbols`, on the caller's thread.
///
/// # Safety
/// `callback` must be callable with `data`.
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_iterate_symbols(
    executable: hsa_executable_t,
    callback: Option<
        unsafe extern "C" fn(
            exec: hsa_executable_t,
            symbol: hsa_executable_symbol_t,
            data: *mut c_void,
        ) -> hsa_status_t,
    >,
    data: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_executable_iterate_symbols", || {
        let rt = runtime()?;
        let cb = callback.ok_or_else(|| SimError::arg("callback is NULL"))?;
        let exe = self::executable(&rt, executable.handle)?;
        for handle in exe.symbol_handles(None) {
            // SAFETY: the client's callback with its own data pointer.
            let s = unsafe { cb(executable, hsa_executable_symbol_t { handle }, data) };
            if s != HSA_STATUS_SUCCESS {
                return Err(SimError::Callback(s));
            }
        }
        Ok(())
    })
}

/// The answer to `hsa_executable_symbol_get_info(attribute)`
/// (`hsa_executable_symbol_info_t`, `hsa/hsa.h`).
///
/// Errors: `InvalidArgument` for an unknown attribute, or a kernel-only
/// attribute asked of a variable (and the reverse).
pub fn symbol_info(s: &ExecutableSymbol, attribute: u32) -> SimResult<InfoValue> {
    let kernel = match &s.info {
        SymbolInfo::Kernel(kd) => Some(kd),
        SymbolInfo::Variable => None,
    };
    let need_kernel = || {
        kernel.ok_or_else(|| SimError::arg(format!("attribute {attribute} needs a kernel symbol")))
    };
    let need_variable = || {
        if kernel.is_some() {
            Err(SimError::arg(format!(
                "attribute {attribute} needs a variable symbol"
            )))
        } else {
            Ok(())
        }
    };
    Ok(match attribute {
        HSA_EXECUTABLE_SYMBOL_INFO_TYPE => InfoValue::U32(if kernel.is_some() {
            HSA_SYMBOL_KIND_KERNEL
        } else {
            HSA_SYMBOL_KIND_VARIABLE
        }),
        HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH => InfoValue::U32(s.name.len() as u32),
        HSA_EXECUTABLE_SYMBOL_INFO_NAME => InfoValue::Chars(s.name.as_bytes().to_vec()),
        HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH => InfoValue::U32(0),
        HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME => InfoValue::Chars(Vec::new()),
        HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE => InfoValue::U32(HSA_SYMBOL_LINKAGE_PROGRAM),
        HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION => InfoValue::Bool(true),
        HSA_EXECUTABLE_SYMBOL_INFO_AGENT => InfoValue::U64(agent_handle(s.agent)),
        HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS => {
            need_variable()?;
            InfoValue::U64(s.address)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION => {
            need_variable()?;
            InfoValue::U32(HSA_VARIABLE_ALLOCATION_AGENT)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT => {
            need_variable()?;
            InfoValue::U32(HSA_VARIABLE_SEGMENT_GLOBAL)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALIGNMENT => {
            need_variable()?;
            InfoValue::U32(8)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE => {
            need_variable()?;
            InfoValue::U32(s.size as u32)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST => {
            need_variable()?;
            InfoValue::Bool(false)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT => {
            need_kernel()?;
            InfoValue::U64(s.address)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE => {
            InfoValue::U32(need_kernel()?.kernarg_size)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT => {
            need_kernel()?;
            InfoValue::U32(s.kernarg_alignment)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE => {
            InfoValue::U32(need_kernel()?.group_segment_fixed_size)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE => {
            InfoValue::U32(need_kernel()?.private_segment_fixed_size)
        }
        // USES_DYNAMIC_STACK of the kernel descriptor (code object V5+; the
        // bit is reserved, so 0, before): a loader that sees it must give the
        // dispatch more scratch than the fixed size.
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK => {
            InfoValue::Bool(need_kernel()?.uses_dynamic_stack())
        }
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION => {
            need_kernel()?;
            InfoValue::U32(0)
        }
        other => {
            return Err(SimError::arg(format!(
                "unknown or unsupported symbol attribute {other}"
            )))
        }
    })
}

/// `hsa_executable_symbol_get_info`. NAME writes exactly NAME_LENGTH bytes and no NUL.
///
/// # Safety
/// `value` must be NULL or point to storage of the attribute's type.
#[no_mangle]
pub unsafe extern "C" fn hsa_executable_symbol_get_info(
    executable_symbol: hsa_executable_symbol_t,
    attribute: hsa_executable_symbol_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_executable_symbol_get_info", || {
        let rt = runtime()?;
        non_null(value, "value")?;
        let s = rt
            .symbols
            .get(executable_symbol.handle)
            .ok_or(SimError::InvalidExecutableSymbol(executable_symbol.handle))?;
        let v = symbol_info(&s, attribute)?;
        // SAFETY: non-null, sized for the attribute by the caller's contract.
        unsafe { write_info(value, &v) };
        Ok(())
    })
}
