//! Kernel dispatch through the HSA API of the virtual device: code objects
//! assembled at test time, AQL kernel-dispatch packets on a queue, results
//! read back with async copies, dispatch profiling, and faults reported as
//! ROCm reports them (the system event handler for memory faults, the
//! queue's error callback for every kernel error), without harm to the host.
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Assembles `fixtures/isa_kernels.s` into a shared code object (once per process).
fn image() -> Vec<u8> {
    static IMAGE: Mutex<Option<Vec<u8>>> = Mutex::new(None);
    let mut g = IMAGE.lock().unwrap();
    if let Some(i) = &*g {
        return i.clone();
    }
    let bytes = assemble_fixture("isa_kernels");
    *g = Some(bytes.clone());
    bytes
}

fn load_kernels(gpu: hsa_agent_t) -> hsa_executable_t {
    load_executable(gpu, &image())
}

fn kernel(exe: hsa_executable_t, gpu: hsa_agent_t, name: &str) -> KernelObject {
    kernel_object(exe, gpu, name)
}

fn timestamp() -> u64 {
    let mut t = 0u64;
    assert_eq!(
        unsafe { hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &mut t as *mut _ as *mut c_void) },
        0
    );
    t
}

#[test]
fn global_ids_written_by_a_kernel_with_profiling() {
    let _s = Session::open();
    let gpu = gpus()[0];
    let exe = load_kernels(gpu);
    let gid = kernel(exe, gpu, "gid");
    let dev = pool_with(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    let kernarg_pool = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT);
    let fine = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    let n = 1000u32; // 15 full workgroups of 64 and a partial one
    let out = alloc(dev, 1024 * 4);
    assert_eq!(
        unsafe { hsa_amd_memory_fill(out as *mut c_void, 0xFFFF_FFFF, 1024) },
        0
    );
    let kernarg = alloc(kernarg_pool, 64);
    unsafe { std::ptr::write(kernarg as *mut u64, out as u64) };
    assert_eq!(
        unsafe { hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), kernarg as *const c_void) },
        0
    );
    let q = queue(gpu, 64);
    assert_eq!(unsafe { hsa_amd_profiling_set_profiler_enabled(q, 1) }, 0);
    let done = signal(1);
    let before = timestamp();
    submit(
        q,
        dispatch_packet(&gid, 64, n, kernarg, done),
        KERNEL_HEADER,
    );
    wait_eq(done, 0);
    let after = timestamp();
    let mut t = hsa_amd_profiling_dispatch_time_t::default();
    assert_eq!(
        unsafe { hsa_amd_profiling_get_dispatch_time(gpu, done, &mut t) },
        0
    );
    assert!(
        before <= t.start && t.start <= t.end && t.end <= after,
        "{before} {t:?} {after}"
    );
    // Read back through an async copy into host memory, as a client must.
    let host = alloc(fine, 1024 * 4);
    let copied = signal(1);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                host as *mut c_void,
                gpu,
                out as *const c_void,
                gpu,
                4096,
                0,
                std::ptr::null(),
                copied,
            )
        },
        0
    );
    wait_eq(copied, 0);
    let words = unsafe { std::slice::from_raw_parts(host as *const u32, 1024) };
    for (i, &w) in words.iter().enumerate() {
        let expected = if (i as u32) < n {
            i as u32
        } else {
            0xFFFF_FFFF
        };
        assert_eq!(w, expected, "element {i}");
    }
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    assert_eq!(hsa_executable_destroy(exe), 0);
}

#[test]
fn chained_kernels_and_copies_on_two_queues() {
    // Kernel on q1 -> barrier on q2 waiting for it -> kernel on q2, like a stream
    // hopping between queues; the second kernel overwrites what the first wrote.
    let _s = Session::open();
    let gpu = gpus()[0];
    let exe = load_kernels(gpu);
    let gid = kernel(exe, gpu, "gid");
    let dev = pool_with(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    let kernarg_pool = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT);
    let out_a = alloc(dev, 4096);
    let out_b = alloc(dev, 4096);
    let ka = alloc(kernarg_pool, 64);
    let kb = alloc(kernarg_pool, 64);
    unsafe {
        std::ptr::write(ka as *mut u64, out_a as u64);
        std::ptr::write(kb as *mut u64, out_b as u64);
        assert_eq!(
            hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), ka as *const c_void),
            0
        );
        assert_eq!(
            hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), kb as *const c_void),
            0
        );
    }
    let (q1, q2) = (queue(gpu, 64), queue(gpu, 64));
    let (s1, s2, s3, copied) = (signal(1), signal(1), signal(1), signal(1));
    let gate = signal(1);
    submit(
        q1,
        barrier_packet(&[gate], hsa_signal_t { handle: 0 }),
        BARRIER_AND_HEADER,
    );
    submit(q1, dispatch_packet(&gid, 64, 256, ka, s1), KERNEL_HEADER);
    submit(q2, barrier_packet(&[s1], s2), BARRIER_AND_HEADER);
    submit(q2, dispatch_packet(&gid, 128, 512, kb, s3), KERNEL_HEADER);
    // The copy of out_a into out_b's upper half waits for the second kernel.
    let dst = out_b.wrapping_add(2048);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                dst as *mut c_void,
                gpu,
                out_a as *const c_void,
                gpu,
                1024,
                1,
                &s3,
                copied,
            )
        },
        0
    );
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(hsa_signal_load_scacquire(copied), 1);
    hsa_signal_store_screlease(gate, 0);
    wait_eq(copied, 0);
    let b = unsafe { std::slice::from_raw_parts(out_b as *const u32, 1024) };
    for (i, &w) in b[..512].iter().enumerate() {
        assert_eq!(w, i as u32);
    }
    for (i, &w) in b[512..768].iter().enumerate() {
        assert_eq!(w, i as u32, "copied after the second kernel, not before");
    }
    for q in [q1, q2] {
        assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    }
    assert_eq!(hsa_executable_destroy(exe), 0);
}

static EVENTS: Mutex<Vec<(u32, u64, u64, u32)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_event(e: *const hsa_amd_event_t, data: *mut c_void) -> hsa_status_t {
    assert_eq!(data as usize, 0xE0E0);
    let raw = unsafe { std::slice::from_raw_parts(e as *const u8, 32) };
    let u32_at = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().unwrap());
    EVENTS
        .lock()
        .unwrap()
        .push((u32_at(0), u64_at(8), u64_at(16), u32_at(24)));
    HSA_STATUS_ERROR // as both LLVM plugins' handlers do; the device must not abort the host
}

struct Seen {
    status: AtomicU32,
    calls: AtomicUsize,
    queue: AtomicU64,
}

unsafe extern "C" fn on_queue_error(status: hsa_status_t, q: *mut hsa_queue_t, data: *mut c_void) {
    let seen = unsafe { &*(data as *const Seen) };
    seen.queue.store(q as u64, Ordering::SeqCst);
    seen.status.store(status, Ordering::SeqCst);
    seen.calls.fetch_add(1, Ordering::SeqCst);
}

fn faulting_dispatch(
    gpu: hsa_agent_t,
    k: &KernelObject,
    kernarg: *mut u8,
) -> (u32, hsa_signal_t, *mut hsa_queue_t, Box<Seen>) {
    let seen = Box::new(Seen {
        status: AtomicU32::new(0),
        calls: AtomicUsize::new(0),
        queue: AtomicU64::new(0),
    });
    let mut q: *mut hsa_queue_t = std::ptr::null_mut();
    let data = &*seen as *const Seen as *mut c_void;
    assert_eq!(
        unsafe {
            hsa_queue_create(
                gpu,
                64,
                HSA_QUEUE_TYPE_MULTI,
                Some(on_queue_error),
                data,
                u32::MAX,
                u32::MAX,
                &mut q,
            )
        },
        0
    );
    let done = signal(1);
    let after = signal(1);
    submit(q, dispatch_packet(k, 64, 64, kernarg, done), KERNEL_HEADER);
    submit(q, barrier_packet(&[], after), BARRIER_AND_HEADER);
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.calls.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the fault was never reported");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(seen.calls.load(Ordering::SeqCst), 1);
    assert_eq!(seen.queue.load(Ordering::SeqCst), q as u64);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        hsa_signal_load_scacquire(done),
        1,
        "a failed dispatch does not signal completion"
    );
    assert_eq!(
        hsa_signal_load_scacquire(after),
        1,
        "an inactive queue consumes nothing more"
    );
    (seen.status.load(Ordering::SeqCst), done, q, seen)
}

#[test]
fn kernel_faults_are_reported_and_the_host_survives() {
    let _s = Session::open();
    let gpu = gpus()[0];
    assert_eq!(
        unsafe { hsa_amd_register_system_event_handler(Some(on_event), 0xE0E0 as *mut c_void) },
        0
    );
    let exe = load_kernels(gpu);
    // A store to an address no allocation covers: memory fault event + queue callback.
    let (status, _, q, _seen) =
        faulting_dispatch(gpu, &kernel(exe, gpu, "bad_store"), std::ptr::null_mut());
    assert_eq!(status, HSA_STATUS_ERROR_MEMORY_FAULT);
    let events = EVENTS.lock().unwrap().clone();
    let agent = gpu.handle;
    assert!(
        events.iter().any(
            |&(ty, a, addr, reason)| ty == HSA_AMD_GPU_MEMORY_FAULT_EVENT
                && a == agent
                && addr == 0x1230
                && reason & HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT as u32 != 0
        ),
        "{events:x?}"
    );
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    // Kernel arguments in host memory the GPU was not given access to: also a memory fault.
    let gid = kernel(exe, gpu, "gid");
    let kernarg_pool = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT);
    let kernarg = alloc(kernarg_pool, 64);
    let (status, _, q, _seen) = faulting_dispatch(gpu, &gid, kernarg);
    assert_eq!(
        status, HSA_STATUS_ERROR_MEMORY_FAULT,
        "kernarg memory needs hsa_amd_agents_allow_access"
    );
    assert!(EVENTS
        .lock()
        .unwrap()
        .iter()
        .any(|&(_, _, addr, _)| addr == kernarg as u64));
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    // s_trap: an exception through the queue callback.
    let (status, _, q, _seen) =
        faulting_dispatch(gpu, &kernel(exe, gpu, "trap"), std::ptr::null_mut());
    assert_eq!(status, HSA_STATUS_ERROR_EXCEPTION);
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    // An instruction the engine cannot execute: illegal instruction, never a guess.
    let (status, _, q, _seen) =
        faulting_dispatch(gpu, &kernel(exe, gpu, "illegal"), std::ptr::null_mut());
    assert_eq!(status, HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION);
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    // A kernel object that is not a kernel descriptor.
    let bogus = KernelObject {
        object: 0x10,
        kernarg_size: 0,
        group: 0,
        private: 0,
        dynamic_stack: false,
    };
    let (status, _, q, _seen) = faulting_dispatch(gpu, &bogus, std::ptr::null_mut());
    assert_ne!(status, HSA_STATUS_SUCCESS);
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    // The runtime is still fully usable afterwards.
    let q = queue(gpu, 64);
    let done = signal(1);
    submit(
        q,
        dispatch_packet(
            &kernel(exe, gpu, "empty"),
            64,
            640,
            std::ptr::null_mut(),
            done,
        ),
        KERNEL_HEADER,
    );
    wait_eq(done, 0);
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    assert_eq!(hsa_executable_destroy(exe), 0);
}
