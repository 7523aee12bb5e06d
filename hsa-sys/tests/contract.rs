//! The naming contract other crates compile against: constants, type names,
//! handle shapes and `PFN_` aliases an implementer can check exports with.

use hsa_sys::*;

// An exported function checked against its alias, as sim/ does.
unsafe extern "C" fn hsa_init() -> hsa_status_t {
    HSA_STATUS_SUCCESS
}
const _: PFN_hsa_init = hsa_init;

unsafe extern "C" fn hsa_amd_memory_lock(
    _host_ptr: *mut std::os::raw::c_void,
    _size: usize,
    _agents: *mut hsa_agent_t,
    _num_agent: std::os::raw::c_int,
    _agent_ptr: *mut *mut std::os::raw::c_void,
) -> hsa_status_t {
    HSA_STATUS_ERROR
}
const _: PFN_hsa_amd_memory_lock = hsa_amd_memory_lock;

unsafe extern "C" fn hsa_amd_signal_async_handler(
    _signal: hsa_signal_t,
    _cond: hsa_signal_condition_t,
    _value: hsa_signal_value_t,
    _handler: Option<unsafe extern "C" fn(hsa_signal_value_t, *mut std::os::raw::c_void) -> bool>,
    _arg: *mut std::os::raw::c_void,
) -> hsa_status_t {
    HSA_STATUS_ERROR
}
const _: PFN_hsa_amd_signal_async_handler = hsa_amd_signal_async_handler;

#[test]
fn values_and_sizes_follow_the_spec() {
    // ROCm 5.2's `hsa/hsa.h`, `hsa/hsa_ext_amd.h` and `hsa/amd_hsa_signal.h`:
    // status codes, queue and packet enums, event types and struct layouts.
    assert_eq!(HSA_STATUS_ERROR_INVALID_ISA_NAME, 0x1017);
    assert_eq!(HSA_STATUS_ERROR_INVALID_MEMORY_POOL, 40);
    assert_eq!(HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT, 0xA014);
    assert_eq!(HSA_AMD_MEMORY_FAULT_HANG as u32, 1u32 << 31);
    assert_eq!(AMD_SIGNAL_KIND_DOORBELL, -1);
    assert_eq!(std::mem::size_of::<hsa_queue_t>(), 40);
    assert_eq!(std::mem::size_of::<amd_queue_t>(), 256);
    assert_eq!(std::mem::align_of::<amd_queue_t>(), 64);
    assert_eq!(std::mem::offset_of!(amd_queue_t, read_dispatch_id), 128);
    assert_eq!(std::mem::size_of::<amd_signal_t>(), 64);
    assert_eq!(std::mem::offset_of!(amd_signal_t, start_ts), 32);
    assert_eq!(std::mem::size_of::<hsa_kernel_dispatch_packet_t>(), 64);
    assert_eq!(
        std::mem::offset_of!(hsa_kernel_dispatch_packet_t, kernel_object),
        32
    );
    assert_eq!(
        std::mem::offset_of!(hsa_barrier_and_packet_t, completion_signal),
        56
    );
    assert_eq!(std::mem::size_of::<hsa_amd_pointer_info_t>(), 56);
    assert_eq!(std::mem::size_of::<hsa_amd_event_t>(), 32);
    assert_eq!(std::mem::size_of::<hsa_amd_memory_pool_link_info_t>(), 28);
    let agent = hsa_agent_t { handle: 7 };
    assert_eq!(agent, hsa_agent_t { handle: 7 });
    let _: hsa_signal_value_t = i64::MIN;
    // include/hsa_subset.h declares 140 functions (137, then the three
    // hsa_amd_svm_* of ROCm's hsa_ext_amd.h).
    assert_eq!(HSA_FUNCTION_NAMES.len(), 140);
    assert_eq!(std::mem::size_of::<hsa_amd_svm_attribute_pair_t>(), 16);
    assert_eq!(HSA_REQUIRED_FUNCTION_NAMES.len(), 38);
    assert!(HSA_REQUIRED_FUNCTION_NAMES
        .iter()
        .all(|r| HSA_FUNCTION_NAMES.contains(r)));
}
