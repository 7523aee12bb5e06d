//! The virtual device's HSA API, driven through its exported C functions as a
//! client does: topology and info, memory pools, locking, async copies with
//! dependencies, queues with barrier packets across queues, async handlers,
//! and loading code objects compiled by clang-16.
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

#[test]
fn topology_and_agent_info() {
    let _s = Session::open();
    let all = agents();
    assert_eq!(all.len(), 2, "one CPU and one GPU by default");
    assert_eq!(
        device_type(all[0]),
        HSA_DEVICE_TYPE_CPU,
        "CPU agents come first"
    );
    let gpu = gpus()[0];
    let mut name = [0u8; 64];
    assert_eq!(
        unsafe { hsa_agent_get_info(gpu, HSA_AGENT_INFO_NAME, name.as_mut_ptr() as *mut c_void) },
        0
    );
    assert_eq!(&name[..7], b"gfx90a\0");
    let u32_info = |attr: u32| {
        let mut v = 0u32;
        assert_eq!(
            unsafe { hsa_agent_get_info(gpu, attr, &mut v as *mut _ as *mut c_void) },
            0,
            "attr {attr:#x}"
        );
        v
    };
    assert_eq!(u32_info(HSA_AGENT_INFO_WAVEFRONT_SIZE), 64);
    assert_eq!(u32_info(HSA_AGENT_INFO_WORKGROUP_MAX_SIZE), 1024);
    assert_eq!(u32_info(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT), 110);
    assert_eq!(
        u32_info(HSA_AGENT_INFO_FEATURE),
        HSA_AGENT_FEATURE_KERNEL_DISPATCH
    );
    assert_eq!(u32_info(HSA_AGENT_INFO_QUEUE_MAX_SIZE), 131072);
    let mut dims = [0u16; 4];
    assert_eq!(
        unsafe {
            hsa_agent_get_info(
                gpu,
                HSA_AGENT_INFO_WORKGROUP_MAX_DIM,
                dims.as_mut_ptr() as *mut c_void,
            )
        },
        0
    );
    assert_eq!(dims, [1024, 1024, 1024, 0], "exactly three u16 are written");
    // A bool attribute writes exactly one byte.
    let mut b = [0xAAu8; 2];
    assert_eq!(
        unsafe {
            hsa_agent_get_info(
                gpu,
                HSA_AGENT_INFO_FAST_F16_OPERATION,
                b.as_mut_ptr() as *mut c_void,
            )
        },
        0
    );
    assert_eq!(b, [1, 0xAA]);
    let mut junk = 0u64;
    assert_eq!(
        unsafe { hsa_agent_get_info(gpu, 0x7777, &mut junk as *mut _ as *mut c_void) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe {
            hsa_agent_get_info(
                hsa_agent_t { handle: 12345 },
                HSA_AGENT_INFO_NAME,
                name.as_mut_ptr() as *mut c_void,
            )
        },
        HSA_STATUS_ERROR_INVALID_AGENT
    );
}

unsafe extern "C" fn first_isa(isa: hsa_isa_t, data: *mut c_void) -> hsa_status_t {
    unsafe { *(data as *mut hsa_isa_t) = isa };
    HSA_STATUS_INFO_BREAK
}

#[test]
fn isa_name_and_iteration() {
    let _s = Session::open();
    let gpu = gpus()[0];
    let mut isa = hsa_isa_t { handle: 0 };
    let s =
        unsafe { hsa_agent_iterate_isas(gpu, Some(first_isa), &mut isa as *mut _ as *mut c_void) };
    assert_eq!(
        s, HSA_STATUS_INFO_BREAK,
        "the callback's status is passed through"
    );
    let mut len = 0u32;
    assert_eq!(
        unsafe {
            hsa_isa_get_info_alt(
                isa,
                HSA_ISA_INFO_NAME_LENGTH,
                &mut len as *mut _ as *mut c_void,
            )
        },
        0
    );
    let expected = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";
    assert_eq!(
        len as usize,
        expected.len() + 1,
        "NAME_LENGTH includes the NUL"
    );
    let mut buf = vec![0xffu8; len as usize];
    assert_eq!(
        unsafe { hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, buf.as_mut_ptr() as *mut c_void) },
        0
    );
    assert_eq!(&buf[..expected.len()], expected.as_bytes());
    assert_eq!(buf[expected.len()], 0);
    // The CPU agent has no ISA to report.
    let mut none = hsa_isa_t { handle: 0 };
    assert_eq!(
        unsafe {
            hsa_agent_iterate_isas(cpu(), Some(first_isa), &mut none as *mut _ as *mut c_void)
        },
        0
    );
    assert_eq!(none.handle, 0);
}

#[test]
fn status_strings_name_the_status() {
    let mut p: *const std::ffi::c_char = std::ptr::null();
    for st in [
        HSA_STATUS_SUCCESS,
        HSA_STATUS_ERROR_INVALID_ARGUMENT,
        HSA_STATUS_ERROR_MEMORY_FAULT,
        HSA_STATUS_ERROR_FATAL,
    ] {
        assert_eq!(unsafe { hsa_status_string(st, &mut p) }, 0);
        let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap();
        assert!(s.starts_with("HSA_STATUS_"), "{s}");
        assert!(s.contains(": "));
    }
    assert_eq!(
        unsafe { hsa_status_string(0x4242, &mut p) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
}

#[test]
fn pools_as_rocr_lists_them() {
    let _s = Session::open();
    let c = cpu();
    let g = gpus()[0];
    let cpu_pools = pools(c);
    assert_eq!(cpu_pools.len(), 3);
    let flags: Vec<u32> = cpu_pools
        .iter()
        .map(|p| pool_u32(*p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS))
        .collect();
    assert_eq!(flags, vec![2, 3, 4], "fine, kernarg+fine, coarse");
    let gp = pools(g);
    assert_eq!(
        pool_u32(gp[0], HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS),
        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
    );
    assert_eq!(
        pool_u32(gp[1], HSA_AMD_MEMORY_POOL_INFO_SEGMENT),
        HSA_AMD_SEGMENT_GROUP
    );
    assert_eq!(pool_u32(gp[1], HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS), 0);
    let mut size = 0usize;
    assert_eq!(
        unsafe {
            hsa_amd_memory_pool_get_info(
                gp[0],
                HSA_AMD_MEMORY_POOL_INFO_SIZE,
                &mut size as *mut _ as *mut c_void,
            )
        },
        0
    );
    assert_eq!(size as u64, 64 << 30, "64 GiB of device memory by default");
    let access = |a: hsa_agent_t, p: hsa_amd_memory_pool_t| {
        let mut v = 9u32;
        assert_eq!(
            unsafe {
                hsa_amd_agent_memory_pool_get_info(
                    a,
                    p,
                    HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
                    &mut v as *mut _ as *mut c_void,
                )
            },
            0
        );
        v
    };
    assert_eq!(
        access(g, gp[0]),
        HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
    );
    assert_eq!(
        access(c, gp[0]),
        HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT,
        "device memory is not host-accessible by default"
    );
    assert_eq!(
        access(g, cpu_pools[0]),
        HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT
    );
    assert_eq!(
        access(c, cpu_pools[1]),
        HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
    );
    // Allocation rules.
    let mut p: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(gp[1], 64, 0, &mut p) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(gp[0], 0, 0, &mut p) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(gp[0], 65 << 30, 0, &mut p) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    let a = alloc(gp[0], 100);
    assert_eq!(a as u64 % 4096, 0, "allocations are page aligned");
    assert_eq!(hsa_amd_memory_pool_free(a as *mut c_void), 0);
    assert_eq!(
        hsa_amd_memory_pool_free(a as *mut c_void),
        HSA_STATUS_ERROR_INVALID_ALLOCATION,
        "double free is refused"
    );
    assert_eq!(hsa_amd_memory_pool_free(std::ptr::null_mut()), 0);
}

#[test]
fn lock_pointer_info_and_fill() {
    let _s = Session::open();
    let mut host = vec![0u32; 1024];
    let hp = host.as_mut_ptr() as *mut c_void;
    let mut agent_ptr: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe { hsa_amd_memory_lock(hp, 4096, std::ptr::null_mut(), 0, &mut agent_ptr) },
        0
    );
    assert_eq!(agent_ptr, hp);
    // The old plugin's 32-byte struct: nothing past 32 bytes may be written.
    let mut buf = [0xEEu8; 64];
    buf[..4].copy_from_slice(&32u32.to_ne_bytes());
    let interior = unsafe { (hp as *mut u8).add(100) } as *const c_void;
    let s = unsafe {
        hsa_amd_pointer_info(
            interior,
            buf.as_mut_ptr() as *mut hsa_amd_pointer_info_t,
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(s, 0);
    assert!(
        buf[32..].iter().all(|&b| b == 0xEE),
        "wrote past the caller's size"
    );
    let info: hsa_amd_pointer_info_t =
        unsafe { std::ptr::read_unaligned(buf.as_ptr() as *const hsa_amd_pointer_info_t) };
    assert_eq!(info.type_, HSA_EXT_POINTER_TYPE_LOCKED);
    assert_eq!(info.hostBaseAddress, hp);
    assert_eq!(info.sizeInBytes, 4096);
    // Unknown memory.
    let other = 5u64;
    let mut full = hsa_amd_pointer_info_t {
        size: std::mem::size_of::<hsa_amd_pointer_info_t>() as u32,
        ..Default::default()
    };
    assert_eq!(
        unsafe {
            hsa_amd_pointer_info(
                &other as *const u64 as *const c_void,
                &mut full,
                None,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        },
        0
    );
    assert_eq!(full.type_, HSA_EXT_POINTER_TYPE_UNKNOWN);
    // Fill counts dwords and stores the 32-bit pattern.
    assert_eq!(unsafe { hsa_amd_memory_fill(hp, 0xDEADBEEF, 10) }, 0);
    assert!(host[..10].iter().all(|&w| w == 0xDEADBEEF));
    assert_eq!(host[10], 0);
    assert_eq!(
        unsafe { hsa_amd_memory_fill(hp, 1, 2000) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION,
        "beyond the locked range"
    );
    assert_eq!(hsa_amd_memory_unlock(hp), 0);
    assert_eq!(
        unsafe { hsa_amd_memory_fill(hp, 1, 1) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION,
        "no longer locked"
    );
    assert_eq!(
        hsa_amd_memory_unlock(hp),
        0,
        "unlocking unknown memory succeeds, as ROCr"
    );
    // A pool allocation reports its pool and size.
    let fine = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    let p = alloc(fine, 5000);
    let mut info2 = hsa_amd_pointer_info_t {
        size: std::mem::size_of::<hsa_amd_pointer_info_t>() as u32,
        ..Default::default()
    };
    assert_eq!(
        unsafe {
            hsa_amd_pointer_info(
                p.wrapping_add(4100) as *const c_void,
                &mut info2,
                None,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        },
        0
    );
    assert_eq!(info2.type_, HSA_EXT_POINTER_TYPE_HSA);
    assert_eq!(info2.agentBaseAddress as *mut u8, p);
    assert_eq!(info2.sizeInBytes, 8192);
    assert_eq!(hsa_amd_memory_pool_free(p as *mut c_void), 0);
}

#[test]
fn async_copies_honour_dependencies_and_need_pinned_memory() {
    let _s = Session::open();
    let g = gpus()[0];
    let fine = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    let dev = pool_with(g, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    let n = 1 << 20;
    let src = alloc(fine, n);
    let mid = alloc(dev, n);
    let dst = alloc(fine, n);
    for i in 0..n {
        unsafe { *src.add(i) = (i * 7 % 251) as u8 };
    }
    let gate = signal(1);
    let c1 = signal(1);
    let c2 = signal(1);
    // c2: mid -> dst, after c1; c1: src -> mid, after the gate. Issued in reverse order.
    let s = unsafe {
        hsa_amd_memory_async_copy(
            dst as *mut c_void,
            g,
            mid as *const c_void,
            g,
            n,
            1,
            &c1,
            c2,
        )
    };
    assert_eq!(s, 0);
    let s = unsafe {
        hsa_amd_memory_async_copy(
            mid as *mut c_void,
            g,
            src as *const c_void,
            g,
            n,
            1,
            &gate,
            c1,
        )
    };
    assert_eq!(s, 0);
    // A copy with no dependency is not held up by the waiting ones.
    let small_src = alloc(fine, 4096);
    let small_dst = alloc(fine, 4096);
    unsafe { *small_src = 42 };
    let c3 = signal(1);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                small_dst as *mut c_void,
                g,
                small_src as *const c_void,
                g,
                4096,
                0,
                std::ptr::null(),
                c3,
            )
        },
        0
    );
    wait_eq(c3, 0);
    assert_eq!(unsafe { *small_dst }, 42);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(hsa_signal_load_scacquire(c1), 1, "the gated copy must wait");
    assert_eq!(hsa_signal_load_scacquire(c2), 1);
    hsa_signal_store_screlease(gate, 0);
    wait_eq(c2, 0);
    assert_eq!(hsa_signal_load_scacquire(c1), 0);
    for i in (0..n).step_by(997) {
        assert_eq!(unsafe { *dst.add(i) }, (i * 7 % 251) as u8);
    }
    // Plain (unpinned) host memory is refused, as DMA would refuse it.
    let plain = vec![0u8; 4096];
    let s = unsafe {
        hsa_amd_memory_async_copy(
            mid as *mut c_void,
            g,
            plain.as_ptr() as *const c_void,
            g,
            4096,
            0,
            std::ptr::null(),
            c3,
        )
    };
    assert_eq!(s, HSA_STATUS_ERROR_INVALID_ALLOCATION);
    // Once locked, it is accepted.
    let mut ap: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            hsa_amd_memory_lock(
                plain.as_ptr() as *mut c_void,
                4096,
                std::ptr::null_mut(),
                0,
                &mut ap,
            )
        },
        0
    );
    hsa_signal_store_relaxed(c3, 1);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(mid as *mut c_void, g, ap, g, 4096, 0, std::ptr::null(), c3)
        },
        0
    );
    wait_eq(c3, 0);
    assert_eq!(hsa_amd_memory_unlock(ap), 0);
    // A copy that runs past its allocation is refused.
    let s = unsafe {
        hsa_amd_memory_async_copy(
            mid as *mut c_void,
            g,
            src as *const c_void,
            g,
            n + 4096,
            0,
            std::ptr::null(),
            c3,
        )
    };
    assert_eq!(s, HSA_STATUS_ERROR_INVALID_ALLOCATION);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                mid as *mut c_void,
                g,
                src as *const c_void,
                g,
                16,
                0,
                std::ptr::null(),
                hsa_signal_t { handle: 0 },
            )
        },
        // hsa_ext_amd.h: "the completion signal is 0" is INVALID_ARGUMENT.
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    for s in [gate, c1, c2, c3] {
        assert_eq!(hsa_signal_destroy(s), 0);
    }
    for p in [src, mid, dst, small_src, small_dst] {
        assert_eq!(hsa_amd_memory_pool_free(p as *mut c_void), 0);
    }
}

#[test]
fn barrier_and_chain_across_two_queues() {
    let _s = Session::open();
    let g = gpus()[0];
    let q1 = queue(g, 64);
    let q2 = queue(g, 128);
    let start = signal(1);
    let c1 = signal(1);
    let c2 = signal(1);
    let c3 = signal(1);
    let after = signal(1);
    // q1: [wait start -> c1], then [wait c2 -> c3], then [no deps -> after]
    // q2: [wait c1 -> c2]
    submit(q1, barrier_packet(&[start], c1), BARRIER_AND_HEADER);
    let i2 = submit(q1, barrier_packet(&[c2], c3), BARRIER_AND_HEADER);
    submit(q1, barrier_packet(&[], after), BARRIER_AND_HEADER);
    submit(q2, barrier_packet(&[c1], c2), BARRIER_AND_HEADER);
    std::thread::sleep(Duration::from_millis(30));
    for s in [c1, c2, c3, after] {
        assert_eq!(
            hsa_signal_load_scacquire(s),
            1,
            "nothing may complete before `start`"
        );
    }
    assert_eq!(unsafe { hsa_queue_load_read_index_scacquire(q1) }, 0);
    // Release the chain from another thread while this one waits.
    let t = std::thread::spawn(move || hsa_signal_store_screlease(start, 0));
    wait_eq(after, 0);
    t.join().unwrap();
    for s in [c1, c2, c3] {
        assert_eq!(hsa_signal_load_scacquire(s), 0);
    }
    assert_eq!(unsafe { hsa_queue_load_read_index_scacquire(q1) }, 3);
    assert_eq!(unsafe { hsa_queue_load_read_index_scacquire(q2) }, 1);
    // The consumed slot's header is INVALID (barrier bit kept), the body untouched.
    unsafe {
        let slot = ((*q1).base_address as *const u64).add((i2 % 64 * 8) as usize);
        assert_eq!(*(slot as *const u16) & 0xff, HSA_PACKET_TYPE_INVALID as u16);
        assert_eq!(*slot.add(7), c3.handle, "completion_signal stays readable");
    }
    // Barrier-OR: one of two dependencies suffices.
    let a = signal(1);
    let b = signal(1);
    let done = signal(1);
    submit(q2, barrier_packet(&[a, b], done), BARRIER_OR_HEADER);
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(hsa_signal_load_scacquire(done), 1);
    hsa_signal_subtract_screlease(b, 1);
    wait_eq(done, 0);
    assert_eq!(unsafe { hsa_queue_destroy(q1) }, 0);
    assert_eq!(unsafe { hsa_queue_destroy(q2) }, 0);
    assert_eq!(
        unsafe { hsa_queue_destroy(q2) },
        HSA_STATUS_ERROR_INVALID_QUEUE
    );
}

static QUEUE_ERRORS: AtomicU32 = AtomicU32::new(0);
static QUEUE_ERROR_QUEUE: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn on_queue_error(status: hsa_status_t, q: *mut hsa_queue_t, data: *mut c_void) {
    QUEUE_ERRORS.store(status, Ordering::SeqCst);
    QUEUE_ERROR_QUEUE.store(q as u64, Ordering::SeqCst);
    assert_eq!(data as usize, 0x5151);
}

#[test]
fn malformed_packet_reaches_the_queue_callback() {
    let _s = Session::open();
    let g = gpus()[0];
    let mut q: *mut hsa_queue_t = std::ptr::null_mut();
    let s = unsafe {
        hsa_queue_create(
            g,
            64,
            HSA_QUEUE_TYPE_MULTI,
            Some(on_queue_error),
            0x5151 as *mut c_void,
            u32::MAX,
            u32::MAX,
            &mut q,
        )
    };
    assert_eq!(s, 0);
    let done = signal(1);
    // Kernel dispatch with 0 dimensions.
    let mut p = [0u64; 8];
    p[7] = done.handle;
    submit(q, p, 0x0000_1402);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while QUEUE_ERRORS.load(Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no queue error reported"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        QUEUE_ERRORS.load(Ordering::SeqCst),
        HSA_STATUS_ERROR_INVALID_PACKET_FORMAT
    );
    assert_eq!(QUEUE_ERROR_QUEUE.load(Ordering::SeqCst), q as u64);
    assert_eq!(
        hsa_signal_load_scacquire(done),
        1,
        "a failed packet's completion signal is left alone"
    );
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
}

#[test]
fn queue_creation_rules() {
    let _s = Session::open();
    let g = gpus()[0];
    let mut q: *mut hsa_queue_t = std::ptr::null_mut();
    let create = |agent: hsa_agent_t, size: u32, q: &mut *mut hsa_queue_t| unsafe {
        hsa_queue_create(
            agent,
            size,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            u32::MAX,
            u32::MAX,
            q,
        )
    };
    assert_eq!(create(g, 100, &mut q), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    assert_eq!(create(g, 32, &mut q), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    assert_eq!(
        create(g, 1 << 18, &mut q),
        HSA_STATUS_ERROR_OUT_OF_RESOURCES
    );
    assert_eq!(create(cpu(), 64, &mut q), HSA_STATUS_ERROR);
    assert_eq!(create(g, 256, &mut q), 0);
    unsafe {
        assert_eq!((*q).size, 256);
        assert_eq!((*q).type_, HSA_QUEUE_TYPE_MULTI);
        assert_eq!(hsa_queue_load_write_index_relaxed(q), 0);
        assert_eq!(hsa_queue_add_write_index_relaxed(q, 3), 0);
        assert_eq!(hsa_queue_cas_write_index_scacq_screl(q, 3, 0), 3);
        assert_eq!(hsa_queue_load_write_index_scacquire(q), 0);
        assert_eq!(hsa_queue_destroy(q), 0);
    }
}

struct Chain {
    next: hsa_signal_t,
    hits: AtomicU32,
}

unsafe extern "C" fn chain_handler(value: hsa_signal_value_t, arg: *mut c_void) -> bool {
    let c = unsafe { &*(arg as *const Chain) };
    assert_eq!(value, 0);
    assert_eq!(std::thread::current().name(), Some("hsa-async-handler"));
    c.hits.fetch_add(1, Ordering::SeqCst);
    hsa_signal_subtract_screlease(c.next, 1);
    false
}

#[test]
fn async_handlers_complete_a_stream_like_llvms_plugin() {
    let _s = Session::open();
    let g = gpus()[0];
    let q = queue(g, 64);
    // barrier(c0) -> handler on c0 completes h1 -> barrier waits h1 -> c2
    let gate = signal(1);
    let c0 = signal(1);
    let h1 = signal(1);
    let c2 = signal(1);
    let chain = Box::new(Chain {
        next: h1,
        hits: AtomicU32::new(0),
    });
    let arg = &*chain as *const Chain as *mut c_void;
    assert_eq!(
        unsafe {
            hsa_amd_signal_async_handler(c0, HSA_SIGNAL_CONDITION_EQ, 0, Some(chain_handler), arg)
        },
        0
    );
    submit(q, barrier_packet(&[gate], c0), BARRIER_AND_HEADER);
    submit(q, barrier_packet(&[h1], c2), BARRIER_AND_HEADER);
    hsa_signal_store_screlease(gate, 0);
    wait_eq(c2, 0);
    assert_eq!(
        chain.hits.load(Ordering::SeqCst),
        1,
        "a handler returning false runs once"
    );
    assert_eq!(
        unsafe {
            hsa_amd_signal_async_handler(
                hsa_signal_t { handle: 99 },
                0,
                0,
                Some(chain_handler),
                arg,
            )
        },
        HSA_STATUS_ERROR_INVALID_SIGNAL
    );
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
}

#[test]
fn stale_signal_handles_are_rejected() {
    let _s = Session::open();
    let s = signal(5);
    assert_eq!(hsa_signal_destroy(s), 0);
    assert_eq!(hsa_signal_destroy(s), HSA_STATUS_ERROR_INVALID_SIGNAL);
    assert_eq!(
        hsa_signal_load_relaxed(s),
        0,
        "a destroyed signal reads 0, never freed memory"
    );
    hsa_signal_store_relaxed(s, 3); // ignored, no crash
    assert_eq!(
        hsa_signal_wait_scacquire(
            s,
            HSA_SIGNAL_CONDITION_EQ,
            7,
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED
        ),
        0
    );
    assert_eq!(
        hsa_signal_destroy(hsa_signal_t { handle: 0 }),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
}

#[test]
fn wait_any_through_the_c_api() {
    let _s = Session::open();
    let mut sigs = [signal(1), signal(1), signal(1)];
    let mut conds = [HSA_SIGNAL_CONDITION_EQ; 3];
    let mut vals = [0i64; 3];
    let s2 = sigs[2];
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        hsa_signal_store_screlease(s2, 0);
    });
    let mut seen = -1i64;
    let i = unsafe {
        hsa_amd_signal_wait_any(
            3,
            sigs.as_mut_ptr(),
            conds.as_mut_ptr(),
            vals.as_mut_ptr(),
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED,
            &mut seen,
        )
    };
    t.join().unwrap();
    assert_eq!((i, seen), (2, 0));
    let i = unsafe {
        hsa_amd_signal_wait_any(
            2,
            sigs.as_mut_ptr(),
            conds.as_mut_ptr(),
            vals.as_mut_ptr(),
            2_000_000,
            HSA_WAIT_STATE_BLOCKED,
            &mut seen,
        )
    };
    assert_eq!(i, u32::MAX, "timeout");
}
