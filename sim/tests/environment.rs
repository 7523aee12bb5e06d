//! Behaviour that depends on the environment of the process, so it runs in a
//! test binary of its own: calls before `hsa_init`, two virtual GPUs, and a
//! small device memory whose limit allocations run into.
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use std::ffi::c_void;

#[test]
fn before_init_then_two_gpus_with_a_small_memory() {
    // Everything but hsa_init / hsa_status_string needs an initialised runtime.
    let mut v = 0u32;
    assert_eq!(
        unsafe {
            hsa_system_get_info(
                HSA_SYSTEM_INFO_VERSION_MAJOR,
                &mut v as *mut _ as *mut c_void,
            )
        },
        HSA_STATUS_ERROR_NOT_INITIALIZED
    );
    assert_eq!(hsa_shut_down(), HSA_STATUS_ERROR_NOT_INITIALIZED);

    std::env::set_var("HSA_SIM_GPUS", "2");
    std::env::set_var("HSA_SIM_DEVICE_MEMORY", "64M");
    std::env::set_var("HSA_SIM_COMPUTE_UNITS", "104");
    let s = Session::open();
    let _nested = Session::open(); // hsa_init is reference counted
    let g = gpus();
    assert_eq!(g.len(), 2);
    assert_eq!(agents().len(), 3);
    let mut cus = 0u32;
    assert_eq!(
        unsafe {
            hsa_agent_get_info(
                g[1],
                HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT,
                &mut cus as *mut _ as *mut c_void,
            )
        },
        0
    );
    assert_eq!(cus, 104);

    // The device memory limit: 64 MiB per GPU, counted in pages.
    let pool0 = pool_with(g[0], HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    let pool1 = pool_with(g[1], HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    let a = alloc(pool0, 48 << 20);
    let mut p: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(pool0, 20 << 20, 0, &mut p) },
        HSA_STATUS_ERROR_OUT_OF_RESOURCES
    );
    let b = alloc(pool1, 20 << 20); // the other GPU has its own memory
    assert_eq!(hsa_amd_memory_pool_free(a as *mut c_void), 0);
    let c = alloc(pool0, 20 << 20); // freed memory is available again
                                    // GPU 1's memory seen from GPU 0 is disallowed by default, allowed after allow_access.
    let mut access = 9u32;
    assert_eq!(
        unsafe {
            hsa_amd_agent_memory_pool_get_info(
                g[0],
                pool1,
                HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
                &mut access as *mut _ as *mut c_void,
            )
        },
        0
    );
    assert_eq!(access, HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT);
    assert_eq!(
        unsafe { hsa_amd_agents_allow_access(1, &g[0], std::ptr::null(), b as *const c_void) },
        0
    );
    assert_eq!(
        unsafe {
            hsa_amd_agents_allow_access(
                1,
                &g[0],
                std::ptr::null(),
                b.wrapping_add(4096) as *const c_void,
            )
        },
        HSA_STATUS_ERROR,
        "allow_access needs the base of an allocation"
    );
    // Device to device copy between the two GPUs.
    unsafe { std::ptr::write_bytes(b, 0x5A, 1 << 20) };
    let done = signal(1);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                c as *mut c_void,
                g[0],
                b as *const c_void,
                g[1],
                1 << 20,
                0,
                std::ptr::null(),
                done,
            )
        },
        0
    );
    wait_eq(done, 0);
    assert!(unsafe { std::slice::from_raw_parts(c, 1 << 20) }
        .iter()
        .all(|&x| x == 0x5A));
    for ptr in [b, c] {
        assert_eq!(hsa_amd_memory_pool_free(ptr as *mut c_void), 0);
    }
    drop(_nested);
    drop(s);
    // Fully shut down again.
    assert_eq!(hsa_shut_down(), HSA_STATUS_ERROR_NOT_INITIALIZED);
    // And it can start afresh.
    let _again = Session::open();
    assert_eq!(gpus().len(), 2);
}
