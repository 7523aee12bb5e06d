//! Copies of host memory the program takes away: locked host memory unmapped or
//! protected while an async copy into or out of it waits in the copy engine
//! fails that copy (its completion signal goes negative, as ROCr reports a
//! failed copy) and the process carries on; so does `hsa_memory_copy` into
//! device memory that was freed, `hsa_amd_memory_fill` of a locked range
//! that is gone, and a code object reader given a size past its buffer. Never a
//! signal in the host.
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use std::ffi::c_void;

fn mapping(len: usize) -> *mut u8 {
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p as *mut u8
}

/// Waits until `s` drops below 1 and returns its value.
fn settled(s: hsa_signal_t) -> i64 {
    hsa_signal_wait_scacquire(
        s,
        HSA_SIGNAL_CONDITION_LT,
        1,
        u64::MAX,
        HSA_WAIT_STATE_BLOCKED,
    )
}

#[test]
fn copies_of_host_memory_taken_away_fail_cleanly() {
    let _s = Session::open();
    let gpu = gpus()[0];
    let dev = alloc(
        pool_with(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED),
        1 << 20,
    );
    let len = 256 * 1024;
    for round in 0..200 {
        let host = mapping(len);
        unsafe { std::ptr::write_bytes(host, 0x5A, len) };
        let mut agent_ptr: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            unsafe {
                hsa_amd_memory_lock(
                    host as *mut c_void,
                    len,
                    &gpu as *const _ as *mut _,
                    1,
                    &mut agent_ptr,
                )
            },
            0
        );
        // Held back by a dependency until the memory is gone.
        let gate = signal(1);
        let done = signal(1);
        let h2d = round % 2 == 0;
        let (dst, dst_agent, src, src_agent) = if h2d {
            (dev as *mut c_void, gpu, host as *const c_void, cpu())
        } else {
            (host as *mut c_void, cpu(), dev as *const c_void, gpu)
        };
        assert_eq!(
            unsafe {
                hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, len, 1, &gate, done)
            },
            0
        );
        if round % 4 < 2 {
            unsafe { libc::munmap(host as *mut c_void, len) };
        } else {
            // Protected rather than unmapped: no access at all.
            assert_eq!(
                unsafe { libc::mprotect(host as *mut c_void, len, libc::PROT_NONE) },
                0
            );
        }
        hsa_signal_store_screlease(gate, 0);
        assert!(
            settled(done) < 0,
            "round {round}: the copy cannot have succeeded"
        );
        assert_eq!(hsa_amd_memory_unlock(host as *mut c_void), 0);
        if round % 4 >= 2 {
            unsafe { libc::munmap(host as *mut c_void, len) };
        }
        assert_eq!(hsa_signal_destroy(gate), 0);
        assert_eq!(hsa_signal_destroy(done), 0);
    }
    // The engine still copies afterwards.
    let host = mapping(4096);
    let mut agent_ptr: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            hsa_amd_memory_lock(
                host as *mut c_void,
                4096,
                std::ptr::null_mut(),
                0,
                &mut agent_ptr,
            )
        },
        0
    );
    unsafe { std::ptr::write_bytes(host, 0x11, 4096) };
    let done = signal(1);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                dev as *mut c_void,
                gpu,
                host as *const c_void,
                cpu(),
                4096,
                0,
                std::ptr::null(),
                done,
            )
        },
        0
    );
    assert_eq!(settled(done), 0);
    assert_eq!(unsafe { *dev.add(4095) }, 0x11);
    assert_eq!(hsa_amd_memory_unlock(host as *mut c_void), 0);
    unsafe { libc::munmap(host as *mut c_void, 4096) };
    synchronous_copies_and_fills_refuse_memory_that_is_gone();
}

/// (Called by the test above, not run beside it: the device memory it frees must
/// not be mapped again by another test's allocation before it is copied to.)
fn synchronous_copies_and_fills_refuse_memory_that_is_gone() {
    let _s = Session::open();
    let gpu = gpus()[0];
    let pool = pool_with(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    let dev = alloc(pool, 64 << 10);
    let src = vec![3u8; 64 << 10];
    assert_eq!(
        unsafe { hsa_memory_copy(dev as *mut c_void, src.as_ptr() as *const c_void, 64 << 10) },
        0
    );
    assert_eq!(unsafe { *dev.add(100) }, 3);
    // Past the end of an allocation.
    assert_eq!(
        unsafe {
            hsa_memory_copy(
                dev.add(60 << 10) as *mut c_void,
                src.as_ptr() as *const c_void,
                8 << 10,
            )
        },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    // Device memory that was freed.
    assert_eq!(hsa_amd_memory_pool_free(dev as *mut c_void), 0);
    assert_eq!(
        unsafe { hsa_memory_copy(dev as *mut c_void, src.as_ptr() as *const c_void, 4096) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    // A locked range protected after it was locked: the fill fails, nothing faults.
    let host = mapping(8192);
    let mut agent_ptr: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            hsa_amd_memory_lock(
                host as *mut c_void,
                8192,
                std::ptr::null_mut(),
                0,
                &mut agent_ptr,
            )
        },
        0
    );
    assert_eq!(
        unsafe { hsa_amd_memory_fill(host as *mut c_void, 9, 2048) },
        0
    );
    assert_eq!(unsafe { *(host as *const u32).add(2047) }, 9);
    assert_eq!(
        unsafe { libc::mprotect(host.add(4096) as *mut c_void, 4096, libc::PROT_READ) },
        0
    );
    assert_eq!(
        unsafe { hsa_amd_memory_fill(host as *mut c_void, 9, 2048) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    assert_eq!(hsa_amd_memory_unlock(host as *mut c_void), 0);
    unsafe { libc::munmap(host as *mut c_void, 8192) };

    // A code object size that runs past the caller's buffer into memory it cannot
    // read: refused, for the reader and for deserialize alike.
    let buf = mapping(8192);
    assert_eq!(
        unsafe { libc::mprotect(buf.add(4096) as *mut c_void, 4096, libc::PROT_NONE) },
        0
    );
    let mut reader = hsa_code_object_reader_t { handle: 0 };
    assert_eq!(
        unsafe {
            hsa_code_object_reader_create_from_memory(buf as *const c_void, 8192, &mut reader)
        },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    let mut co = hsa_code_object_t { handle: 0 };
    assert_eq!(
        unsafe { hsa_code_object_deserialize(buf as *mut c_void, 8192, std::ptr::null(), &mut co) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    unsafe { libc::munmap(buf as *mut c_void, 8192) };
}
