//! The virtual gfx90a with XNACK on (`HSA_XNACK=1`, set before the first
//! `hsa_init` of this test binary): what the agents report, SVM attributes, and
//! kernels on host memory the process maps (heap, stack, read-only and
//! `PROT_NONE` mappings, random addresses, memory unmapped under a running
//! kernel), each access the host's value or a clean GPU memory fault naming
//! its address, never a signal in the host.
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use hsa_runtime64::api::svm::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Opens the runtime with XNACK on (every test of this binary runs so).
fn open() -> Session {
    std::env::set_var("HSA_XNACK", "1");
    let s = Session::open();
    static HANDLER: OnceLock<()> = OnceLock::new();
    HANDLER.get_or_init(|| {
        assert_eq!(
            unsafe { hsa_amd_register_system_event_handler(Some(on_event), std::ptr::null_mut()) },
            0
        );
    });
    s
}

fn image() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| assemble_fixture("xnack_kernels"))
}

/// Addresses of the GPU memory fault events seen so far.
static FAULTS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_event(e: *const hsa_amd_event_t, _data: *mut c_void) -> hsa_status_t {
    let raw = unsafe { std::slice::from_raw_parts(e as *const u8, 32) };
    let ty = u32::from_le_bytes(raw[0..4].try_into().unwrap());
    if ty == HSA_AMD_GPU_MEMORY_FAULT_EVENT {
        FAULTS
            .lock()
            .unwrap()
            .push(u64::from_le_bytes(raw[16..24].try_into().unwrap()));
    }
    HSA_STATUS_ERROR
}

struct Errors {
    status: AtomicU32,
    calls: AtomicUsize,
}

unsafe extern "C" fn on_queue_error(status: hsa_status_t, _q: *mut hsa_queue_t, data: *mut c_void) {
    let e = unsafe { &*(data as *const Errors) };
    e.status.store(status, Ordering::SeqCst);
    e.calls.fetch_add(1, Ordering::SeqCst);
}

/// Runs kernel `name` over `grid` work-items in workgroups of `wg` with the
/// kernarg words `args`, on a queue of its own; `Err(status)` when the queue
/// reported an error instead of completing.
fn run(name: &str, grid: u32, wg: u16, args: &[u64]) -> Result<(), u32> {
    let gpu = gpus()[0];
    let exe = load_executable(gpu, image());
    let k = kernel_object(exe, gpu, name);
    let errors = Box::new(Errors {
        status: AtomicU32::new(0),
        calls: AtomicUsize::new(0),
    });
    let mut q: *mut hsa_queue_t = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            hsa_queue_create(
                gpu,
                64,
                HSA_QUEUE_TYPE_MULTI,
                Some(on_queue_error),
                &*errors as *const Errors as *mut c_void,
                u32::MAX,
                u32::MAX,
                &mut q,
            )
        },
        0
    );
    let kernarg = kernarg_segment(gpu, args);
    let done = signal(1);
    submit(
        q,
        dispatch_packet(&k, wg, grid, kernarg, done),
        KERNEL_HEADER,
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let outcome = loop {
        if errors.calls.load(Ordering::SeqCst) > 0 {
            break Err(errors.status.load(Ordering::SeqCst));
        }
        if hsa_signal_load_scacquire(done) == 0 {
            break Ok(());
        }
        assert!(Instant::now() < deadline, "{name}: neither done nor failed");
        std::thread::sleep(Duration::from_micros(200));
    };
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    assert_eq!(hsa_signal_destroy(done), 0);
    assert_eq!(hsa_executable_destroy(exe), 0);
    outcome
}

/// A fault event naming `addr` was reported.
fn fault_named(addr: u64) -> bool {
    FAULTS.lock().unwrap().contains(&addr)
}

fn mapping(len: usize, prot: i32) -> *mut u8 {
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p as *mut u8
}

/// The dword at `addr` as the host reads it without risking a signal
/// (`process_vm_readv` on ourselves): `None` when the process cannot read it.
fn host_read(addr: u64) -> Option<u32> {
    let mut v = 0u32;
    let local = libc::iovec {
        iov_base: &mut v as *mut u32 as *mut c_void,
        iov_len: 4,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut c_void,
        iov_len: 4,
    };
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (n == 4).then_some(v)
}

#[test]
fn agents_report_xnack_and_svm_by_default() {
    let _s = open();
    let mut enabled = 0u8;
    assert_eq!(
        unsafe { hsa_system_get_info(0x206, &mut enabled as *mut u8 as *mut c_void) },
        0
    );
    assert_eq!(enabled, 1, "HSA_AMD_SYSTEM_INFO_XNACK_ENABLED");
    let mut by_default = 0u8;
    assert_eq!(
        unsafe {
            hsa_system_get_info(
                HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT,
                &mut by_default as *mut u8 as *mut c_void,
            )
        },
        0
    );
    assert_eq!(by_default, 1);
    let mut isa = hsa_isa_t { handle: 0 };
    assert_eq!(
        unsafe {
            hsa_agent_get_info(
                gpus()[0],
                HSA_AGENT_INFO_ISA,
                &mut isa as *mut _ as *mut c_void,
            )
        },
        0
    );
    let mut name = [0u8; 64];
    assert_eq!(
        unsafe { hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name.as_mut_ptr() as *mut c_void) },
        0
    );
    let end = name.iter().position(|&b| b == 0).unwrap();
    assert_eq!(
        std::str::from_utf8(&name[..end]).unwrap(),
        "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+"
    );
}

#[test]
fn svm_attributes_round_trip_and_prefetch_signals() {
    let _s = open();
    let gpu = gpus()[0];
    let buf = mapping(4 * 4096, libc::PROT_READ | libc::PROT_WRITE);
    let mut set = [
        hsa_amd_svm_attribute_pair_t {
            attribute: u64::from(HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION),
            value: gpu.handle,
        },
        hsa_amd_svm_attribute_pair_t {
            attribute: u64::from(HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG),
            value: u64::from(HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED),
        },
    ];
    // The first two pages only (ptr aligned down, size up to pages).
    assert_eq!(
        unsafe {
            hsa_amd_svm_attributes_set(buf.add(100) as *mut c_void, 4000, set.as_mut_ptr(), 2)
        },
        0
    );
    let get = |ptr: *mut u8, size: usize, attribute: u32, value: u64| {
        let mut q = [hsa_amd_svm_attribute_pair_t {
            attribute: u64::from(attribute),
            value,
        }];
        assert_eq!(
            unsafe { hsa_amd_svm_attributes_get(ptr as *mut c_void, size, q.as_mut_ptr(), 1) },
            0
        );
        (q[0].attribute, q[0].value)
    };
    let pl = u64::from(HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION);
    let gf = u64::from(HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG);
    assert_eq!(
        get(buf, 4096, HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, 0),
        (pl, gpu.handle)
    );
    assert_eq!(
        get(buf, 8192, HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, 0),
        (gf, u64::from(HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED))
    );
    // Pages that were set and pages that were not: no single answer.
    assert_eq!(
        get(buf, 4 * 4096, HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, 0),
        (gf, u64::from(HSA_AMD_SVM_GLOBAL_FLAG_INDETERMINATE))
    );
    assert_eq!(
        get(buf, 4 * 4096, HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, 0),
        (pl, 0)
    );
    // XNACK on: accessible by default, until denied.
    let access = get(buf, 4096, HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, gpu.handle);
    assert_eq!(
        access,
        (u64::from(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE), gpu.handle)
    );
    // Query-only attributes cannot be set; a bad agent is refused; nothing is recorded.
    let mut bad = [hsa_amd_svm_attribute_pair_t {
        attribute: u64::from(HSA_AMD_SVM_ATTRIB_ACCESS_QUERY),
        value: gpu.handle,
    }];
    assert_eq!(
        unsafe { hsa_amd_svm_attributes_set(buf as *mut c_void, 4096, bad.as_mut_ptr(), 1) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    bad[0] = hsa_amd_svm_attribute_pair_t {
        attribute: u64::from(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE),
        value: 0x1234,
    };
    assert_eq!(
        unsafe { hsa_amd_svm_attributes_set(buf as *mut c_void, 4096, bad.as_mut_ptr(), 1) },
        HSA_STATUS_ERROR_INVALID_AGENT
    );
    // Unmapped memory is refused. (Not a page this test unmaps: another test thread
    // of this binary may map it again before the call. x86-64 Linux maps nothing
    // at 2^48 unless a mapping asks for it by hint, `Documentation/arch/x86/
    // x86_64/5level-paging.rst`, and no test here does.)
    let hole = (1u64 << 48) as *mut u8;
    assert_eq!(
        unsafe { hsa_amd_svm_attributes_set(hole as *mut c_void, 4096, set.as_mut_ptr(), 1) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    // A prefetch waits for its dependency, then signals and records its agent.
    let dep = signal(1);
    let done = signal(1);
    assert_eq!(
        unsafe { hsa_amd_svm_prefetch_async(buf as *mut c_void, 8192, gpu, 1, &dep, done) },
        0
    );
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        hsa_signal_load_scacquire(done),
        1,
        "the dependency is not met yet"
    );
    hsa_signal_store_screlease(dep, 0);
    wait_eq(done, 0);
    assert_eq!(
        get(buf, 8192, HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION, 0),
        (u64::from(HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION), gpu.handle)
    );
    unsafe { libc::munmap(buf as *mut c_void, 4 * 4096) };
}

#[test]
fn kernels_read_and_write_heap_stack_and_static_memory() {
    let _s = open();
    let n = 4096usize;
    // The heap.
    let src: Vec<u32> = (0..n as u32).map(|i| i * 3).collect();
    let mut dst = vec![0u32; n];
    let args = [src.as_ptr() as u64, dst.as_mut_ptr() as u64];
    assert_eq!(run("add_one", n as u32, 64, &args), Ok(()));
    let want: Vec<u32> = src.iter().map(|v| v + 1).collect();
    assert_eq!(dst, want);
    // This thread's stack.
    let stack_src = [41u32; 64];
    let mut stack_dst = [0u32; 64];
    let args = [stack_src.as_ptr() as u64, stack_dst.as_mut_ptr() as u64];
    assert_eq!(run("add_one", 64, 64, &args), Ok(()));
    assert_eq!(stack_dst, [42u32; 64]);
    // A static of the test binary, written by the kernel.
    static STATIC_OUT: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];
    let args = [stack_src.as_ptr() as u64, STATIC_OUT.as_ptr() as u64];
    assert_eq!(run("add_one", 64, 64, &args), Ok(()));
    assert!(STATIC_OUT.iter().all(|v| v.load(Ordering::SeqCst) == 42));
    // The host's later writes are seen by the next kernel, with no copy.
    let mut src = src;
    src[7] = 1000;
    let args = [src.as_ptr() as u64, dst.as_mut_ptr() as u64];
    assert_eq!(run("add_one", n as u32, 64, &args), Ok(()));
    assert_eq!(dst[7], 1001);
}

#[test]
fn device_atomics_on_host_memory_race_host_threads() {
    let _s = open();
    let counter = Box::new(AtomicU32::new(0));
    let addr = &*counter as *const AtomicU32 as u64;
    let host_adds = 50_000u32;
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..host_adds {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        // 640 lanes, 100 adds each.
        assert_eq!(run("count_up", 640, 64, &[addr]), Ok(()));
    });
    assert_eq!(counter.load(Ordering::SeqCst), 2 * host_adds + 640 * 100);
}

#[test]
fn a_store_to_read_only_memory_is_a_fault_and_changes_nothing() {
    let _s = open();
    let ro = mapping(4096, libc::PROT_READ | libc::PROT_WRITE);
    unsafe { std::ptr::write(ro as *mut u32, 77) };
    assert_eq!(
        unsafe { libc::mprotect(ro as *mut c_void, 4096, libc::PROT_READ) },
        0
    );
    let mut out = Box::new(0u32);
    // Reading is fine.
    let args = [ro as u64, &mut *out as *mut u32 as u64];
    assert_eq!(run("probe_load", 1, 1, &args), Ok(()));
    assert_eq!(*out, 77);
    // Writing faults, naming the address.
    let target = ro as u64 + 16;
    assert_eq!(
        run("probe_store", 1, 1, &[target, 5]),
        Err(HSA_STATUS_ERROR_MEMORY_FAULT)
    );
    assert!(fault_named(target));
    assert_eq!(host_read(target), Some(0));
    unsafe { libc::munmap(ro as *mut c_void, 4096) };
}

/// xorshift64*: the random addresses' generator (fixed seed: the same run each time).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn a_thousand_random_addresses_give_the_hosts_value_or_a_fault_naming_them() {
    let _s = open();
    let heap: Vec<u32> = (0..16384u32).map(|i| i ^ 0x5a5a_0000).collect();
    let ro = mapping(16 * 4096, libc::PROT_READ | libc::PROT_WRITE);
    for i in 0..16 * 1024 {
        unsafe { std::ptr::write((ro as *mut u32).add(i), 0xC0DE_0000 | i as u32) };
    }
    assert_eq!(
        unsafe { libc::mprotect(ro as *mut c_void, 16 * 4096, libc::PROT_READ) },
        0
    );
    let none = mapping(16 * 4096, libc::PROT_NONE);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = Box::new(0u32);
    let out_addr = &mut *out as *mut u32 as u64;
    let (mut values, mut faults) = (0, 0);
    for i in 0..1000 {
        let r = rng.next();
        // Where the address comes from, and whether the kernel stores.
        let (addr, store) = match i % 4 {
            0 => (heap.as_ptr() as u64 + 4 * (r % 16384), r >> 40 & 1 == 1),
            1 => (ro as u64 + 4 * (r % (16 * 1024)), r >> 40 & 1 == 1),
            2 => (none as u64 + 4 * (r % (16 * 1024)), r >> 40 & 1 == 1),
            // Anywhere in the lower half of the address space: almost never mapped.
            _ => ((r >> 17) & !3, false),
        };
        let expected = host_read(addr);
        if store {
            let writable = i % 4 == 0;
            let got = run("probe_store", 1, 1, &[addr, 0x1234_5678]);
            if writable {
                assert_eq!(got, Ok(()), "store to {addr:#x}");
                assert_eq!(host_read(addr), Some(0x1234_5678));
                values += 1;
            } else {
                assert_eq!(
                    got,
                    Err(HSA_STATUS_ERROR_MEMORY_FAULT),
                    "store to {addr:#x}"
                );
                assert!(fault_named(addr), "no fault event names {addr:#x}");
                assert_eq!(host_read(addr), expected, "a refused store wrote");
                faults += 1;
            }
        } else {
            *out = 0xDEAD_BEEF;
            let got = run("probe_load", 1, 1, &[addr, out_addr]);
            match expected {
                Some(v) => {
                    assert_eq!(got, Ok(()), "load from {addr:#x}");
                    assert_eq!(*out, v, "load from {addr:#x}");
                    values += 1;
                }
                None => {
                    assert_eq!(
                        got,
                        Err(HSA_STATUS_ERROR_MEMORY_FAULT),
                        "load from {addr:#x}"
                    );
                    assert!(fault_named(addr), "no fault event names {addr:#x}");
                    faults += 1;
                }
            }
        }
    }
    assert_eq!(values + faults, 1000);
    assert!(
        values >= 300 && faults >= 300,
        "{values} values, {faults} faults"
    );
    unsafe {
        libc::munmap(ro as *mut c_void, 16 * 4096);
        libc::munmap(none as *mut c_void, 16 * 4096);
    }
}

#[test]
fn memory_unmapped_under_a_running_kernel_is_a_fault_not_a_signal() {
    let _s = open();
    for round in 0..5 {
        // Far below where the kernel places mappings (top down), so that no other
        // test thread's mapping fills the hole the test makes while the kernel
        // still reads it (the kernel would then read that memory and finish).
        let hint = 0x3400_0000_0000u64 + (u64::from(std::process::id()) << 24) + (round << 16);
        let victim = unsafe {
            libc::mmap(
                hint as *mut c_void,
                2 * 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        assert_eq!(victim as u64, hint);
        let victim = victim as *mut u8;
        let started = Box::new(AtomicU32::new(0));
        let addr = victim as u64 + 64;
        let args = [addr, &*started as *const AtomicU32 as u64];
        let outcome = std::thread::scope(|s| {
            let k = s.spawn(|| run("keep_reading", 64, 64, &args));
            let deadline = Instant::now() + Duration::from_secs(30);
            while started.load(Ordering::SeqCst) == 0 {
                assert!(Instant::now() < deadline, "the kernel never started");
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(2 + round));
            unsafe { libc::munmap(victim as *mut c_void, 2 * 4096) };
            k.join().unwrap()
        });
        assert_eq!(outcome, Err(HSA_STATUS_ERROR_MEMORY_FAULT), "round {round}");
        assert!(fault_named(addr), "round {round}: no fault names {addr:#x}");
    }
}

#[test]
fn code_objects_load_by_their_xnack_setting() {
    let _s = open();
    let gpu = gpus()[0];
    let status = |image: &[u8]| load_status(gpu, image);
    let plus = assemble_fixture_as(
        "xnack_kernels",
        "xnack_kernels_plus",
        &["-mcpu=gfx90a:xnack+"],
    );
    let minus = assemble_fixture_as(
        "xnack_kernels",
        "xnack_kernels_minus",
        &["-mcpu=gfx90a:xnack-"],
    );
    assert_eq!(status(&plus), 0, "xnack+ runs on an xnack+ agent");
    assert_eq!(status(image()), 0, "no setting runs anywhere");
    assert_eq!(
        status(&minus),
        HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
        "xnack- code does not run with XNACK on"
    );
}
