//! Init, status strings, system info, agents, ISAs and system events
//! (`hsa/hsa.h`: `hsa_init`, `hsa_status_string`, `hsa_system_get_info`,
//! `hsa_iterate_agents`, `hsa_agent_get_info`, `hsa_isa_*`; `hsa/hsa_ext_amd.h`:
//! `hsa_amd_register_system_event_handler`).

use super::{boundary, check_signature, non_null, write_info};
use crate::agent::{self, InfoValue, AMD_SYSTEM_INFO_XNACK_ENABLED};
use crate::error::SimError;
use crate::runtime::{self, runtime, EventHandler, TIMESTAMP_FREQUENCY};
use hsa_sys::*;
use std::ffi::{c_char, c_void};

check_signature!(
    hsa_init,
    hsa_shut_down,
    hsa_status_string,
    hsa_system_get_info,
    hsa_system_get_major_extension_table,
    hsa_iterate_agents,
    hsa_agent_get_info,
    hsa_agent_iterate_isas,
    hsa_isa_get_info_alt,
    hsa_amd_register_system_event_handler,
);

/// `hsa_init`: opens the runtime, or counts one more reference (cheap).
#[no_mangle]
pub extern "C" fn hsa_init() -> hsa_status_t {
    match std::panic::catch_unwind(runtime::init) {
        Ok(Ok(())) => HSA_STATUS_SUCCESS,
        Ok(Err(s)) => s,
        Err(_) => HSA_STATUS_ERROR,
    }
}

/// `hsa_shut_down`: drops one reference; the last releases every object.
#[no_mangle]
pub extern "C" fn hsa_shut_down() -> hsa_status_t {
    boundary("hsa_shut_down", runtime::shut_down)
}

/// The text of each status: `"NAME: explanation"` (our own wording).
pub fn status_text(status: hsa_status_t) -> Option<&'static str> {
    Some(match status {
        HSA_STATUS_SUCCESS => "HSA_STATUS_SUCCESS: the function has been executed successfully.\0",
        HSA_STATUS_INFO_BREAK => "HSA_STATUS_INFO_BREAK: a traversal over a list of elements has been interrupted by the application.\0",
        HSA_STATUS_ERROR => "HSA_STATUS_ERROR: a generic error has occurred.\0",
        HSA_STATUS_ERROR_INVALID_ARGUMENT => "HSA_STATUS_ERROR_INVALID_ARGUMENT: one of the actual arguments does not meet a precondition of the function.\0",
        HSA_STATUS_ERROR_INVALID_QUEUE_CREATION => "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: the requested queue cannot be created on this agent.\0",
        HSA_STATUS_ERROR_INVALID_ALLOCATION => "HSA_STATUS_ERROR_INVALID_ALLOCATION: the allocation request or the address given is not valid.\0",
        HSA_STATUS_ERROR_INVALID_AGENT => "HSA_STATUS_ERROR_INVALID_AGENT: the agent handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_REGION => "HSA_STATUS_ERROR_INVALID_REGION: the memory region handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_SIGNAL => "HSA_STATUS_ERROR_INVALID_SIGNAL: the signal handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_QUEUE => "HSA_STATUS_ERROR_INVALID_QUEUE: the queue is not valid.\0",
        HSA_STATUS_ERROR_OUT_OF_RESOURCES => "HSA_STATUS_ERROR_OUT_OF_RESOURCES: the runtime could not obtain the memory, threads or other resources it needs.\0",
        HSA_STATUS_ERROR_INVALID_PACKET_FORMAT => "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: an AQL packet is malformed.\0",
        HSA_STATUS_ERROR_RESOURCE_FREE => "HSA_STATUS_ERROR_RESOURCE_FREE: an error occurred while releasing a resource.\0",
        HSA_STATUS_ERROR_NOT_INITIALIZED => "HSA_STATUS_ERROR_NOT_INITIALIZED: the runtime has not been initialized, or was shut down.\0",
        HSA_STATUS_ERROR_REFCOUNT_OVERFLOW => "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW: the runtime's reference count reached its maximum.\0",
        HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS => "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: the arguments are valid alone but do not fit together (for example a code object for another ISA).\0",
        HSA_STATUS_ERROR_INVALID_INDEX => "HSA_STATUS_ERROR_INVALID_INDEX: the index is not valid.\0",
        HSA_STATUS_ERROR_INVALID_ISA => "HSA_STATUS_ERROR_INVALID_ISA: the ISA handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_ISA_NAME => "HSA_STATUS_ERROR_INVALID_ISA_NAME: the ISA name is not valid.\0",
        HSA_STATUS_ERROR_INVALID_CODE_OBJECT => "HSA_STATUS_ERROR_INVALID_CODE_OBJECT: the code object is malformed or not supported.\0",
        HSA_STATUS_ERROR_INVALID_EXECUTABLE => "HSA_STATUS_ERROR_INVALID_EXECUTABLE: the executable handle is not valid.\0",
        HSA_STATUS_ERROR_FROZEN_EXECUTABLE => "HSA_STATUS_ERROR_FROZEN_EXECUTABLE: the executable is frozen.\0",
        HSA_STATUS_ERROR_INVALID_SYMBOL_NAME => "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: no symbol has that name.\0",
        HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED => "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: the variable is already defined.\0",
        HSA_STATUS_ERROR_VARIABLE_UNDEFINED => "HSA_STATUS_ERROR_VARIABLE_UNDEFINED: a variable the code object needs is not defined.\0",
        HSA_STATUS_ERROR_EXCEPTION => "HSA_STATUS_ERROR_EXCEPTION: a kernel raised an exception (for example s_trap).\0",
        HSA_STATUS_ERROR_INVALID_CODE_SYMBOL => "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL: the code object symbol handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL => "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: the executable symbol handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_FILE => "HSA_STATUS_ERROR_INVALID_FILE: the file descriptor is not valid.\0",
        HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER => "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: the code object reader handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_CACHE => "HSA_STATUS_ERROR_INVALID_CACHE: the cache handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_WAVEFRONT => "HSA_STATUS_ERROR_INVALID_WAVEFRONT: the wavefront handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP => "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP: the signal group handle is not valid.\0",
        HSA_STATUS_ERROR_INVALID_RUNTIME_STATE => "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE: the runtime is not in the state this call needs.\0",
        HSA_STATUS_ERROR_FATAL => "HSA_STATUS_ERROR_FATAL: a queue hit an error that may require ending the process.\0",
        HSA_STATUS_ERROR_INVALID_MEMORY_POOL => "HSA_STATUS_ERROR_INVALID_MEMORY_POOL: the memory pool handle is not valid.\0",
        HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION => "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: a kernel accessed memory beyond the legal address range.\0",
        HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION => "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: a kernel executed an instruction that is invalid or that the virtual device cannot execute.\0",
        HSA_STATUS_ERROR_MEMORY_FAULT => "HSA_STATUS_ERROR_MEMORY_FAULT: a kernel accessed memory it may not use.\0",
        HSA_STATUS_CU_MASK_REDUCED => "HSA_STATUS_CU_MASK_REDUCED: the CU mask was applied, but some requested CUs are not available.\0",
        HSA_EXT_STATUS_ERROR_INVALID_PROGRAM => "HSA_EXT_STATUS_ERROR_INVALID_PROGRAM: the program is not valid.\0",
        HSA_EXT_STATUS_ERROR_INVALID_MODULE => "HSA_EXT_STATUS_ERROR_INVALID_MODULE: the module is not valid.\0",
        HSA_EXT_STATUS_ERROR_INCOMPATIBLE_MODULE => "HSA_EXT_STATUS_ERROR_INCOMPATIBLE_MODULE: the module is not compatible.\0",
        HSA_EXT_STATUS_ERROR_MODULE_ALREADY_INCLUDED => "HSA_EXT_STATUS_ERROR_MODULE_ALREADY_INCLUDED: the module is already included.\0",
        HSA_EXT_STATUS_ERROR_SYMBOL_MISMATCH => "HSA_EXT_STATUS_ERROR_SYMBOL_MISMATCH: symbol declarations do not match.\0",
        HSA_EXT_STATUS_ERROR_FINALIZATION_FAILED => "HSA_EXT_STATUS_ERROR_FINALIZATION_FAILED: finalization failed.\0",
        HSA_EXT_STATUS_ERROR_DIRECTIVE_MISMATCH => "HSA_EXT_STATUS_ERROR_DIRECTIVE_MISMATCH: control directives do not match.\0",
        HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED => "HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED: the image format is not supported.\0",
        HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED => "HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED: the image size is not supported.\0",
        HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED => "HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED: the image pitch is not supported.\0",
        HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED => "HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED: the sampler descriptor is not supported.\0",
        _ => return None,
    })
}

/// `hsa_status_string`: a static `"NAME: explanation"` string; works before `hsa_init`.
///
/// # Safety
/// `status_string` must be NULL or point to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn hsa_status_string(
    status: hsa_status_t,
    status_string: *mut *const c_char,
) -> hsa_status_t {
    boundary("hsa_status_string", || {
        non_null(status_string, "status_string")?;
        let text = status_text(status)
            .ok_or_else(|| SimError::arg(format!("unknown status {status:#x}")))?;
        // SAFETY: checked non-null; the caller provides storage for one pointer.
        unsafe { *status_string = text.as_ptr() as *const c_char };
        Ok(())
    })
}

static BUILD_VERSION: &str = concat!("virtual-gfx90a ", env!("CARGO_PKG_VERSION"), "\0");

/// `hsa_system_get_info` (`hsa_system_info_t`, `hsa/hsa.h`).
///
/// # Safety
/// `value` must be NULL or point to storage of the attribute's type.
#[no_mangle]
pub unsafe extern "C" fn hsa_system_get_info(
    attribute: hsa_system_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_system_get_info", || {
        let rt = runtime()?;
        non_null(value, "value")?;
        let v = match attribute {
            HSA_SYSTEM_INFO_VERSION_MAJOR | HSA_SYSTEM_INFO_VERSION_MINOR => InfoValue::U16(1),
            HSA_SYSTEM_INFO_TIMESTAMP => InfoValue::U64(runtime::timestamp_ns()),
            HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY => InfoValue::U64(TIMESTAMP_FREQUENCY),
            HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT => InfoValue::U64(u64::MAX),
            HSA_SYSTEM_INFO_ENDIANNESS => InfoValue::U32(HSA_ENDIANNESS_LITTLE),
            HSA_SYSTEM_INFO_MACHINE_MODEL => InfoValue::U32(HSA_MACHINE_MODEL_LARGE),
            HSA_SYSTEM_INFO_EXTENSIONS => {
                let mut m = [0u8; 128];
                let id = HSA_EXTENSION_AMD_PROFILER as usize;
                m[id / 8] |= 1 << (id % 8);
                InfoValue::Mask128(m)
            }
            HSA_AMD_SYSTEM_INFO_BUILD_VERSION => {
                InfoValue::Pointer(BUILD_VERSION.as_ptr() as usize)
            }
            HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED => InfoValue::Bool(true),
            // With XNACK on, every agent reaches every host page without
            // hsa_amd_svm_attributes_set (ROCr: true when XNACK is enabled).
            HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT => InfoValue::Bool(rt.config.xnack),
            AMD_SYSTEM_INFO_XNACK_ENABLED => InfoValue::Bool(rt.config.xnack),
            other => {
                return Err(SimError::arg(format!(
                    "unknown system attribute {other:#x}"
                )))
            }
        };
        // SAFETY: non-null, sized for the attribute by the caller's contract.
        unsafe { write_info(value, &v) };
        Ok(())
    })
}

/// `hsa_system_get_major_extension_table`: no extension table is provided by
/// the virtual device (HSA_STATUS_ERROR, as ROCr for unsupported ones).
///
/// # Safety
/// `table` must be NULL or point to `table_length` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hsa_system_get_major_extension_table(
    extension: u16,
    version_major: u16,
    table_length: usize,
    table: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_system_get_major_extension_table", || {
        runtime()?;
        non_null(table, "table")?;
        if table_length == 0 {
            return Err(SimError::arg("table_length is 0"));
        }
        Err(SimError::NoExtensionTable {
            extension,
            version_major,
        })
    })
}

/// `hsa_iterate_agents`: the CPU agent, then the GPU agents, on the caller's thread.
///
/// # Safety
/// `callback` must be callable with `data`.
#[no_mangle]
pub unsafe extern "C" fn hsa_iterate_agents(
    callback: Option<unsafe extern "C" fn(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t>,
    data: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_iterate_agents", || {
        let rt = runtime()?;
        let cb = callback.ok_or_else(|| SimError::arg("callback is NULL"))?;
        for a in &rt.agents {
            // SAFETY: the client's callback, called with its own data pointer.
            let s = unsafe {
                cb(
                    hsa_agent_t {
                        handle: agent::agent_handle(a.index),
                    },
                    data,
                )
            };
            if s != HSA_STATUS_SUCCESS {
                return Err(SimError::Callback(s));
            }
        }
        Ok(())
    })
}

/// `hsa_agent_get_info` (`hsa_agent_info_t` in `hsa/hsa.h`, and the AMD
/// attributes `hsa_amd_agent_info_t` in `hsa/hsa_ext_amd.h`).
///
/// # Safety
/// `value` must be NULL or point to storage of the attribute's type.
#[no_mangle]
pub unsafe extern "C" fn hsa_agent_get_info(
    agent: hsa_agent_t,
    attribute: hsa_agent_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_agent_get_info", || {
        let rt = runtime()?;
        non_null(value, "value")?;
        let a = rt.agent(agent.handle)?;
        let v = a.info(attribute, agent::isa_handle())?;
        // SAFETY: non-null, sized for the attribute by the caller's contract.
        unsafe { write_info(value, &v) };
        Ok(())
    })
}

/// `hsa_agent_iterate_isas`: a GPU agent reports its one ISA; the CPU none.
///
/// # Safety
/// `callback` must be callable with `data`.
#[no_mangle]
pub unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: hsa_agent_t,
    callback: Option<unsafe extern "C" fn(isa: hsa_isa_t, data: *mut c_void) -> hsa_status_t>,
    data: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_agent_iterate_isas", || {
        let rt = runtime()?;
        let cb = callback.ok_or_else(|| SimError::arg("callback is NULL"))?;
        let a = rt.agent(agent.handle)?;
        if a.kind == agent::AgentKind::Gpu {
            // SAFETY: the client's callback with its own data pointer.
            let s = unsafe {
                cb(
                    hsa_isa_t {
                        handle: agent::isa_handle(),
                    },
                    data,
                )
            };
            if s != HSA_STATUS_SUCCESS {
                return Err(SimError::Callback(s));
            }
        }
        Ok(())
    })
}

/// `hsa_isa_get_info_alt` (`hsa_isa_info_t`, `hsa/hsa.h`).
///
/// # Safety
/// `value` must be NULL or point to storage of the attribute's type.
#[no_mangle]
pub unsafe extern "C" fn hsa_isa_get_info_alt(
    isa: hsa_isa_t,
    attribute: hsa_isa_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_isa_get_info_alt", || {
        let rt = runtime()?;
        non_null(value, "value")?;
        if isa.handle != agent::isa_handle() {
            return Err(SimError::InvalidIsa(isa.handle));
        }
        let v = agent::isa_info(attribute, rt.config.xnack)?;
        // SAFETY: non-null, sized for the attribute by the caller's contract.
        unsafe { write_info(value, &v) };
        Ok(())
    })
}

/// `hsa_amd_register_system_event_handler`: adds a handler (every call succeeds, as ROCr).
///
/// # Safety
/// `callback` must be callable with `data` from any thread.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_register_system_event_handler(
    callback: hsa_amd_system_event_callback_t,
    data: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_amd_register_system_event_handler", || {
        let rt = runtime()?;
        if let Some(cb) = callback {
            rt.event_handlers.lock().push(EventHandler {
                callback: cb,
                data: data as usize,
            });
        }
        Ok(())
    })
}
