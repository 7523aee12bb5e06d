//! Bad calls of the virtual device's HSA API: null, made-up, stale and
//! destroyed handles of every kind, calls after `hsa_shut_down`, and two
//! threads destroying one object. Each case asserts the status ROCm 5.2's
//! `hsa.h` / `hsa_ext_amd.h` (Debian's libhsa-runtime-dev) document for it.
//! Where ROCr itself does not validate (it dereferences a destroyed queue
//! or signal, and crashes), the status chosen is the one the header names
//! for an invalid object of that kind (`_INVALID_QUEUE`, `_INVALID_SIGNAL`,
//! ...): never a fault, never a hang.
//!
//! A test binary of its own: one test shuts the runtime down, so the tests
//! take turns ([`serial`]).
// This test is a C client of the HSA API: every `unsafe` is an FFI call with
// pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use std::ffi::c_void;
use std::sync::{Arc, Barrier, Mutex, MutexGuard};

/// One test at a time: the shut-down test needs every other session closed.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// An agent handle no runtime made.
const MADE_UP: u64 = 0xdead_beef_0000;

fn bad_agent() -> hsa_agent_t {
    hsa_agent_t { handle: MADE_UP }
}

unsafe extern "C" fn count_pool(_p: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
    unsafe { *(data as *mut u32) += 1 };
    HSA_STATUS_SUCCESS
}

/// A reader and an executable made and destroyed: their handles are stale.
fn destroyed_reader_and_executable() -> (hsa_code_object_reader_t, hsa_executable_t) {
    let image = assemble_fixture("isa_kernels");
    let mut r = hsa_code_object_reader_t { handle: 0 };
    let mut exe = hsa_executable_t { handle: 0 };
    unsafe {
        assert_eq!(
            hsa_code_object_reader_create_from_memory(
                image.as_ptr() as *const c_void,
                image.len(),
                &mut r
            ),
            0
        );
        assert_eq!(
            hsa_executable_create_alt(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut exe),
            0
        );
        assert_eq!(hsa_code_object_reader_destroy(r), 0);
        assert_eq!(hsa_executable_destroy(exe), 0);
    }
    (r, exe)
}

#[test]
fn agents_null_and_made_up() {
    let _g = serial();
    let _s = Session::open();
    let mut v = 0u32;
    // hsa.h, hsa_agent_get_info: INVALID_AGENT "The agent is invalid".
    for a in [hsa_agent_t { handle: 0 }, bad_agent()] {
        assert_eq!(
            unsafe {
                hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &mut v as *mut _ as *mut c_void)
            },
            HSA_STATUS_ERROR_INVALID_AGENT
        );
        // hsa_ext_amd.h, hsa_amd_agent_iterate_memory_pools: INVALID_AGENT.
        assert_eq!(
            unsafe {
                hsa_amd_agent_iterate_memory_pools(
                    a,
                    Some(count_pool),
                    &mut v as *mut _ as *mut c_void,
                )
            },
            HSA_STATUS_ERROR_INVALID_AGENT
        );
        // hsa.h, hsa_queue_create: INVALID_AGENT.
        let mut q: *mut hsa_queue_t = std::ptr::null_mut();
        assert_eq!(
            unsafe {
                hsa_queue_create(
                    a,
                    64,
                    HSA_QUEUE_TYPE_MULTI,
                    None,
                    std::ptr::null_mut(),
                    u32::MAX,
                    u32::MAX,
                    &mut q,
                )
            },
            HSA_STATUS_ERROR_INVALID_AGENT
        );
        assert!(q.is_null());
    }
    let gpu = gpus()[0];
    // hsa_agent_get_info: INVALID_ARGUMENT "value is NULL".
    assert_eq!(
        unsafe { hsa_agent_get_info(gpu, HSA_AGENT_INFO_DEVICE, std::ptr::null_mut()) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    // hsa_amd_agent_iterate_memory_pools: INVALID_ARGUMENT "callback is NULL".
    assert_eq!(
        unsafe { hsa_amd_agent_iterate_memory_pools(gpu, None, std::ptr::null_mut()) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    // hsa_queue_create: INVALID_ARGUMENT "queue is NULL".
    assert_eq!(
        unsafe {
            hsa_queue_create(
                gpu,
                64,
                HSA_QUEUE_TYPE_MULTI,
                None,
                std::ptr::null_mut(),
                u32::MAX,
                u32::MAX,
                std::ptr::null_mut(),
            )
        },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
}

#[test]
fn memory_pools_made_up() {
    let _g = serial();
    let _s = Session::open();
    let bad = hsa_amd_memory_pool_t { handle: MADE_UP };
    let mut v = 0u32;
    let mut p: *mut c_void = std::ptr::null_mut();
    // hsa_ext_amd.h, hsa_amd_memory_pool_allocate: INVALID_MEMORY_POOL "The
    // memory pool is invalid".
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(bad, 4096, 0, &mut p) },
        HSA_STATUS_ERROR_INVALID_MEMORY_POOL
    );
    assert!(p.is_null());
    // hsa_amd_memory_pool_get_info: the header lists no status for an
    // invalid pool; ours answers INVALID_MEMORY_POOL, the one it documents
    // for hsa_amd_memory_pool_allocate.
    assert_eq!(
        unsafe {
            hsa_amd_memory_pool_get_info(
                bad,
                HSA_AMD_MEMORY_POOL_INFO_SEGMENT,
                &mut v as *mut _ as *mut c_void,
            )
        },
        HSA_STATUS_ERROR_INVALID_MEMORY_POOL
    );
    // hsa_amd_agent_memory_pool_get_info of a real agent and a made-up pool.
    assert_eq!(
        unsafe {
            hsa_amd_agent_memory_pool_get_info(
                gpus()[0],
                bad,
                HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
                &mut v as *mut _ as *mut c_void,
            )
        },
        HSA_STATUS_ERROR_INVALID_MEMORY_POOL
    );
    // hsa_amd_memory_pool_allocate: INVALID_ARGUMENT "ptr is NULL, or size is 0".
    let pool = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(pool, 4096, 0, std::ptr::null_mut()) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(pool, 0, 0, &mut p) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
}

#[test]
fn signals_null_destroyed_and_made_up() {
    let _g = serial();
    let _s = Session::open();
    // hsa.h, hsa_signal_create: INVALID_ARGUMENT "signal is NULL".
    assert_eq!(
        unsafe { hsa_signal_create(1, 0, std::ptr::null(), std::ptr::null_mut()) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    let s = signal(1);
    assert_eq!(hsa_signal_destroy(s), 0);
    for bad in [s, hsa_signal_t { handle: MADE_UP }] {
        // hsa.h, hsa_signal_destroy: INVALID_SIGNAL "signal is invalid".
        assert_eq!(hsa_signal_destroy(bad), HSA_STATUS_ERROR_INVALID_SIGNAL);
        // hsa_ext_amd.h, hsa_amd_signal_async_handler: INVALID_SIGNAL
        // "signal is not a valid hsa_signal_t".
        assert_eq!(
            unsafe {
                hsa_amd_signal_async_handler(
                    bad,
                    HSA_SIGNAL_CONDITION_EQ,
                    0,
                    Some(never_called),
                    std::ptr::null_mut(),
                )
            },
            HSA_STATUS_ERROR_INVALID_SIGNAL
        );
    }
    // hsa_amd_signal_async_handler: INVALID_ARGUMENT "handler is invalid (NULL)".
    let live = signal(1);
    assert_eq!(
        unsafe {
            hsa_amd_signal_async_handler(
                live,
                HSA_SIGNAL_CONDITION_EQ,
                0,
                None,
                std::ptr::null_mut(),
            )
        },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(hsa_signal_destroy(live), 0);
}

unsafe extern "C" fn never_called(_v: hsa_signal_value_t, _arg: *mut c_void) -> bool {
    panic!("a handler of an invalid signal ran");
}

#[test]
fn queues_null_destroyed_and_foreign() {
    let _g = serial();
    let _s = Session::open();
    // hsa.h, hsa_queue_destroy / hsa_queue_inactivate: INVALID_ARGUMENT
    // "queue is NULL".
    assert_eq!(
        unsafe { hsa_queue_destroy(std::ptr::null_mut()) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe { hsa_queue_inactivate(std::ptr::null_mut()) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    // A queue structure no runtime made (the caller's own memory): INVALID_QUEUE
    // "The queue is invalid"; it is never written.
    let mut foreign: hsa_queue_t = unsafe { std::mem::zeroed() };
    foreign.size = 64;
    let before: [u8; std::mem::size_of::<hsa_queue_t>()] =
        unsafe { std::mem::transmute_copy(&foreign) };
    assert_eq!(
        unsafe { hsa_queue_destroy(&mut foreign) },
        HSA_STATUS_ERROR_INVALID_QUEUE
    );
    assert_eq!(
        unsafe { hsa_queue_inactivate(&mut foreign) },
        HSA_STATUS_ERROR_INVALID_QUEUE
    );
    let after: [u8; std::mem::size_of::<hsa_queue_t>()] =
        unsafe { std::mem::transmute_copy(&foreign) };
    assert_eq!(before, after);
    // A destroyed queue: ROCr reads the freed queue object (a crash); ours
    // knows it is gone.
    let q = queue(gpus()[0], 64);
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    assert_eq!(
        unsafe { hsa_queue_destroy(q) },
        HSA_STATUS_ERROR_INVALID_QUEUE
    );
    assert_eq!(
        unsafe { hsa_queue_inactivate(q) },
        HSA_STATUS_ERROR_INVALID_QUEUE
    );
}

#[test]
fn executables_and_readers_destroyed_and_made_up() {
    let _g = serial();
    let _s = Session::open();
    let gpu = gpus()[0];
    let (reader, exe) = destroyed_reader_and_executable();
    let made_up_exe = hsa_executable_t { handle: MADE_UP };
    let mut sym = hsa_executable_symbol_t { handle: 0 };
    let mut state = 0u32;
    for bad in [exe, made_up_exe, hsa_executable_t { handle: 0 }] {
        // hsa.h: INVALID_EXECUTABLE "The executable is invalid" for each.
        assert_eq!(
            hsa_executable_destroy(bad),
            HSA_STATUS_ERROR_INVALID_EXECUTABLE
        );
        assert_eq!(
            hsa_executable_freeze(bad, std::ptr::null()),
            HSA_STATUS_ERROR_INVALID_EXECUTABLE
        );
        assert_eq!(
            unsafe {
                hsa_executable_get_info(
                    bad,
                    HSA_EXECUTABLE_INFO_STATE,
                    &mut state as *mut _ as *mut c_void,
                )
            },
            HSA_STATUS_ERROR_INVALID_EXECUTABLE
        );
        assert_eq!(
            unsafe {
                hsa_executable_get_symbol_by_name(bad, c"forever.kd".as_ptr(), &gpu, &mut sym)
            },
            HSA_STATUS_ERROR_INVALID_EXECUTABLE
        );
    }
    // A live executable and a destroyed or made-up reader:
    // INVALID_CODE_OBJECT_READER "code_object_reader is invalid".
    let mut live = hsa_executable_t { handle: 0 };
    assert_eq!(
        unsafe { hsa_executable_create_alt(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut live) },
        0
    );
    for bad in [reader, hsa_code_object_reader_t { handle: MADE_UP }] {
        assert_eq!(
            unsafe {
                hsa_executable_load_agent_code_object(
                    live,
                    gpu,
                    bad,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            },
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER
        );
        assert_eq!(
            hsa_code_object_reader_destroy(bad),
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER
        );
    }
    // A made-up symbol: INVALID_EXECUTABLE_SYMBOL.
    let mut kind = 0u32;
    assert_eq!(
        unsafe {
            hsa_executable_symbol_get_info(
                hsa_executable_symbol_t { handle: MADE_UP },
                HSA_EXECUTABLE_SYMBOL_INFO_TYPE,
                &mut kind as *mut _ as *mut c_void,
            )
        },
        HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL
    );
    // A made-up agent for a live reader and executable: INVALID_AGENT.
    let image = assemble_fixture("isa_kernels");
    let mut r = hsa_code_object_reader_t { handle: 0 };
    assert_eq!(
        unsafe {
            hsa_code_object_reader_create_from_memory(
                image.as_ptr() as *const c_void,
                image.len(),
                &mut r,
            )
        },
        0
    );
    assert_eq!(
        unsafe {
            hsa_executable_load_agent_code_object(
                live,
                bad_agent(),
                r,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        },
        HSA_STATUS_ERROR_INVALID_AGENT
    );
    // hsa_code_object_reader_create_from_memory: INVALID_ARGUMENT "code_object
    // is NULL, size is 0, or code_object_reader is NULL".
    assert_eq!(
        unsafe { hsa_code_object_reader_create_from_memory(std::ptr::null(), 64, &mut r) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe {
            hsa_code_object_reader_create_from_memory(image.as_ptr() as *const c_void, 0, &mut r)
        },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe {
            hsa_code_object_reader_create_from_memory(
                image.as_ptr() as *const c_void,
                image.len(),
                std::ptr::null_mut(),
            )
        },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(hsa_executable_destroy(live), 0);
}

/// Two threads destroy one object at once: exactly one succeeds, the other
/// gets the kind's invalid-object status, and neither crashes or hangs.
fn one_wins<T: Copy + Send + 'static>(
    object: T,
    destroy: fn(T) -> hsa_status_t,
    invalid: hsa_status_t,
) {
    let start = Arc::new(Barrier::new(2));
    let other = {
        let start = start.clone();
        std::thread::spawn(move || {
            start.wait();
            destroy(object)
        })
    };
    start.wait();
    let mine = destroy(object);
    let theirs = other.join().expect("the other thread");
    let mut both = [mine, theirs];
    both.sort();
    assert_eq!(both, {
        let mut want = [HSA_STATUS_SUCCESS, invalid];
        want.sort();
        want
    });
}

/// `*mut hsa_queue_t` as a value that may cross threads.
#[derive(Clone, Copy)]
struct QueuePtr(*mut hsa_queue_t);
// SAFETY: only the address travels; the runtime decides whether it is live.
unsafe impl Send for QueuePtr {}

#[test]
fn concurrent_destroy_of_one_object() {
    let _g = serial();
    let _s = Session::open();
    let gpu = gpus()[0];
    for _ in 0..50 {
        one_wins(
            signal(0),
            |s| hsa_signal_destroy(s),
            HSA_STATUS_ERROR_INVALID_SIGNAL,
        );
        one_wins(
            QueuePtr(queue(gpu, 64)),
            |q| unsafe { hsa_queue_destroy(q.0) },
            HSA_STATUS_ERROR_INVALID_QUEUE,
        );
        let mut exe = hsa_executable_t { handle: 0 };
        assert_eq!(
            unsafe { hsa_executable_create_alt(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut exe) },
            0
        );
        one_wins(
            exe,
            |e| hsa_executable_destroy(e),
            HSA_STATUS_ERROR_INVALID_EXECUTABLE,
        );
    }
}

/// The state letter (R, S, D, ...) of thread `tid` of this process.
fn thread_state(tid: &str) -> char {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    // The state is the field after the parenthesised name.
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next())
        .unwrap_or('?')
}

#[test]
fn inactivate_racing_destroy_of_one_queue() {
    let _g = serial();
    let _s = Session::open();
    let gpu = gpus()[0];
    for _ in 0..50 {
        let q = QueuePtr(queue(gpu, 64));
        let start = Arc::new(Barrier::new(2));
        let other = {
            let start = start.clone();
            std::thread::spawn(move || {
                let q = q;
                start.wait();
                unsafe { hsa_queue_inactivate(q.0) }
            })
        };
        start.wait();
        // The destroy always succeeds; the inactivation, before it or after,
        // succeeds or finds the queue gone (INVALID_QUEUE), never worse.
        assert_eq!(unsafe { hsa_queue_destroy(q.0) }, HSA_STATUS_SUCCESS);
        let inactivated = other.join().expect("the other thread");
        assert!(
            inactivated == HSA_STATUS_SUCCESS || inactivated == HSA_STATUS_ERROR_INVALID_QUEUE,
            "hsa_queue_inactivate returned {inactivated:#x}"
        );
    }
}

#[test]
fn destroying_a_signal_another_thread_waits_on_ends_the_wait() {
    let _g = serial();
    let _s = Session::open();
    let s = signal(1);
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        // "/proc/thread-self" is "PID/task/TID".
        let me = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
        let tid = me.file_name().unwrap().to_string_lossy().into_owned();
        tid_tx.send(tid).unwrap();
        // Waits for a value nobody stores: only the destroy can end it.
        hsa_signal_wait_scacquire(
            s,
            HSA_SIGNAL_CONDITION_EQ,
            7,
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED,
        )
    });
    let tid = tid_rx.recv().unwrap();
    // The waiter is asleep in the wait (its only blocking call after the
    // send) before the destroy: the destroy itself must wake it.
    while thread_state(&tid) != 'S' {
        std::hint::spin_loop();
    }
    assert_eq!(hsa_signal_destroy(s), 0);
    let value = returns(move || waiter.join().expect("the waiting thread"));
    // A destroyed signal reads 0 (runtime_api.rs, stale_signal_handles_are_rejected).
    assert_eq!(value, 0);
}

#[test]
fn after_shut_down_every_call_is_not_initialized() {
    let _g = serial();
    let s = Session::open();
    let gpu = gpus()[0];
    let sig = signal(1);
    let q = queue(gpu, 64);
    let pool = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    drop(s);
    // hsa.h: NOT_INITIALIZED "The HSA runtime has not been initialized", for
    // every call but hsa_init and hsa_status_string.
    let ni = HSA_STATUS_ERROR_NOT_INITIALIZED;
    let mut v = 0u64;
    let out = &mut v as *mut _ as *mut c_void;
    assert_eq!(hsa_shut_down(), ni);
    assert_eq!(
        unsafe { hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, out) },
        ni
    );
    assert_eq!(unsafe { hsa_iterate_agents(Some(count_agent), out) }, ni);
    assert_eq!(
        unsafe { hsa_agent_get_info(gpu, HSA_AGENT_INFO_DEVICE, out) },
        ni
    );
    assert_eq!(
        unsafe { hsa_amd_agent_iterate_memory_pools(gpu, Some(count_pool), out) },
        ni
    );
    let mut p: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(pool, 4096, 0, &mut p) },
        ni
    );
    let mut s2 = hsa_signal_t { handle: 0 };
    assert_eq!(
        unsafe { hsa_signal_create(1, 0, std::ptr::null(), &mut s2) },
        ni
    );
    assert_eq!(hsa_signal_destroy(sig), ni);
    let mut q2: *mut hsa_queue_t = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            hsa_queue_create(
                gpu,
                64,
                HSA_QUEUE_TYPE_MULTI,
                None,
                std::ptr::null_mut(),
                u32::MAX,
                u32::MAX,
                &mut q2,
            )
        },
        ni
    );
    assert_eq!(unsafe { hsa_queue_destroy(q) }, ni);
    let mut exe = hsa_executable_t { handle: 0 };
    assert_eq!(
        unsafe { hsa_executable_create_alt(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut exe) },
        ni
    );
    let image = [0u8; 64];
    let mut r = hsa_code_object_reader_t { handle: 0 };
    assert_eq!(
        unsafe {
            hsa_code_object_reader_create_from_memory(
                image.as_ptr() as *const c_void,
                image.len(),
                &mut r,
            )
        },
        ni
    );
    // A new runtime: the old one's handles are stale there.
    let _again = Session::open();
    assert_eq!(hsa_signal_destroy(sig), HSA_STATUS_ERROR_INVALID_SIGNAL);
    assert_eq!(
        unsafe { hsa_queue_destroy(q) },
        HSA_STATUS_ERROR_INVALID_QUEUE
    );
}

unsafe extern "C" fn count_agent(_a: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
    unsafe { *(data as *mut u64) += 1 };
    HSA_STATUS_SUCCESS
}

#[test]
fn freed_memory_and_destroyed_copy_signals() {
    let _g = serial();
    let _s = Session::open();
    let gpu = gpus()[0];
    let host_pool = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    let device_pool = pools(gpu)
        .into_iter()
        .find(|p| pool_u32(*p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT) == HSA_AMD_SEGMENT_GLOBAL)
        .expect("a device pool");
    let host = alloc(host_pool, 4096);
    let freed = alloc(device_pool, 4096) as *mut c_void;
    assert_eq!(hsa_amd_memory_pool_free(freed), 0);
    // A second free: hsa_ext_amd.h lists no error for hsa_amd_memory_pool_free;
    // ours answers INVALID_ALLOCATION, the header's status for memory the
    // runtime did not allocate (hsa_amd_memory_fill), and frees nothing.
    assert_eq!(
        hsa_amd_memory_pool_free(freed),
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    // hsa_memory_copy into freed memory: ROCr copies (a fault); ours answers
    // as the asynchronous copy does, INVALID_ALLOCATION.
    assert_eq!(
        unsafe { hsa_memory_copy(freed, host as *const c_void, 4096) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    assert_eq!(
        unsafe { hsa_memory_copy(host as *mut c_void, freed, 4096) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    // hsa_ext_amd.h, hsa_amd_memory_fill: INVALID_ALLOCATION "if the given
    // memory region was not allocated with HSA runtime APIs".
    assert_eq!(
        unsafe { hsa_amd_memory_fill(freed, 0, 1024) },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    let done = signal(1);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                freed,
                gpu,
                host as *const c_void,
                cpu(),
                4096,
                0,
                std::ptr::null(),
                done,
            )
        },
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    // hsa_amd_memory_async_copy: INVALID_SIGNAL "completion_signal is
    // invalid" (a destroyed one), INVALID_ARGUMENT "the completion signal is 0".
    let dst = alloc(device_pool, 4096) as *mut c_void;
    let gone = signal(1);
    assert_eq!(hsa_signal_destroy(gone), 0);
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                dst,
                gpu,
                host as *const c_void,
                cpu(),
                4096,
                0,
                std::ptr::null(),
                gone,
            )
        },
        HSA_STATUS_ERROR_INVALID_SIGNAL
    );
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(
                dst,
                gpu,
                host as *const c_void,
                cpu(),
                4096,
                0,
                std::ptr::null(),
                hsa_signal_t { handle: 0 },
            )
        },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    // A destroyed dependency signal: INVALID_SIGNAL, and the copy is not
    // queued (its completion signal keeps its value).
    assert_eq!(
        unsafe {
            hsa_amd_memory_async_copy(dst, gpu, host as *const c_void, cpu(), 4096, 1, &gone, done)
        },
        HSA_STATUS_ERROR_INVALID_SIGNAL
    );
    assert_eq!(hsa_signal_load_relaxed(done), 1);
    assert_eq!(hsa_signal_destroy(done), 0);
    assert_eq!(hsa_amd_memory_pool_free(dst), 0);
    assert_eq!(hsa_amd_memory_pool_free(host as *mut c_void), 0);
    // hsa_amd_memory_pool_free(NULL) does nothing and succeeds, as free(3).
    assert_eq!(hsa_amd_memory_pool_free(std::ptr::null_mut()), 0);
}

/// The host's next `mmap`s (a thread's stack or signal stack, a `malloc`
/// arena) never land on freed device memory, so a copy through a dangling
/// device pointer fails every time instead of writing into them. Before the
/// freed range was kept reserved, the kernel handed the hole out again at
/// once (its top-down allocator fills the highest free gap first), and
/// `hsa_memory_copy` into it succeeded whenever a runtime thread starting up
/// happened to map its signal stack there.
#[test]
fn freed_device_memory_is_never_the_hosts_again() {
    let _g = serial();
    let _s = Session::open();
    let gpu = gpus()[0];
    let device_pool = pools(gpu)
        .into_iter()
        .find(|p| pool_u32(*p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT) == HSA_AMD_SEGMENT_GLOBAL)
        .expect("a device pool");
    let mut mine = vec![7u8; 4096];
    let freed = alloc(device_pool, 4096) as u64;
    assert_eq!(hsa_amd_memory_pool_free(freed as *mut c_void), 0);
    // What a thread starting now would map: its signal stack and stack.
    let mut host_maps = Vec::new();
    for len in [16048usize, 4096, 8192, 2 << 20] {
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(m, libc::MAP_FAILED);
        let m = m as u64;
        assert!(
            m + len as u64 <= freed || m >= freed + 4096,
            "the host mapped {len} bytes at {m:#x}, over freed device memory {freed:#x}"
        );
        host_maps.push((m, len));
    }
    for _ in 0..3 {
        // Both directions, and a range that only runs into the freed page.
        assert_eq!(
            unsafe { hsa_memory_copy(freed as *mut c_void, mine.as_ptr() as *const c_void, 4096) },
            HSA_STATUS_ERROR_INVALID_ALLOCATION
        );
        assert_eq!(
            unsafe {
                hsa_memory_copy(mine.as_mut_ptr() as *mut c_void, freed as *const c_void, 64)
            },
            HSA_STATUS_ERROR_INVALID_ALLOCATION
        );
        assert_eq!(
            unsafe {
                hsa_memory_copy(
                    mine.as_mut_ptr() as *mut c_void,
                    (freed - 64) as *const c_void,
                    128,
                )
            },
            HSA_STATUS_ERROR_INVALID_ALLOCATION
        );
    }
    assert!(mine.iter().all(|&b| b == 7), "a failed copy wrote nothing");
    // Memory the program owns is still copied (checked), to and from the
    // host mappings made after the free.
    let (m, len) = host_maps[1];
    assert_eq!(
        unsafe { hsa_memory_copy(m as *mut c_void, mine.as_ptr() as *const c_void, len) },
        0
    );
    assert_eq!(unsafe { *(m as *const u8).add(len - 1) }, 7);
    // A later pool allocation may reuse the range: then it is live memory again.
    let again = alloc(device_pool, 4096) as u64;
    assert_eq!(
        unsafe { hsa_memory_copy(again as *mut c_void, mine.as_ptr() as *const c_void, 4096) },
        0
    );
    assert_eq!(unsafe { *(again as *const u8) }, 7);
    assert_eq!(hsa_amd_memory_pool_free(again as *mut c_void), 0);
    for (m, len) in host_maps {
        unsafe { libc::munmap(m as *mut c_void, len) };
    }
}

/// Gives `f`'s result, or fails if it has not returned within a minute (a
/// hang is the bug looked for).
fn returns<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the call never returned")
}

#[test]
fn wait_any_with_a_destroyed_signal() {
    let _g = serial();
    let _s = Session::open();
    let live = signal(1);
    let gone = signal(1);
    assert_eq!(hsa_signal_destroy(gone), 0);
    // hsa_amd_signal_wait_any reports no error but the index of a satisfied
    // signal; ROCr reads the destroyed signal's freed memory. Ours returns
    // at once with no index (u32::MAX), as for any bad signal set.
    let got = returns(move || {
        let mut set = [live, gone];
        let mut conds = [HSA_SIGNAL_CONDITION_EQ; 2];
        let mut values = [7i64; 2];
        unsafe {
            hsa_amd_signal_wait_any(
                2,
                set.as_mut_ptr(),
                conds.as_mut_ptr(),
                values.as_mut_ptr(),
                u64::MAX,
                HSA_WAIT_STATE_BLOCKED,
                std::ptr::null_mut(),
            )
        }
    });
    assert_eq!(got, u32::MAX);
    assert_eq!(hsa_signal_destroy(live), 0);
}

#[test]
fn a_signal_destroyed_under_a_thread_using_it() {
    let _g = serial();
    let _s = Session::open();
    let s = signal(1);
    let start = Arc::new(Barrier::new(2));
    let user = {
        let start = start.clone();
        std::thread::spawn(move || {
            start.wait();
            // Adds and reads until the signal reads 0, which a live signal
            // never does here (it only grows): the destroy must show.
            let mut rounds = 0u64;
            while hsa_signal_load_scacquire(s) != 0 {
                hsa_signal_add_screlease(s, 1);
                rounds += 1;
            }
            rounds
        })
    };
    start.wait();
    assert_eq!(hsa_signal_destroy(s), 0);
    returns(move || user.join().expect("the user thread"));
    // Stores into the destroyed signal change nothing.
    hsa_signal_store_screlease(s, 5);
    assert_eq!(hsa_signal_load_relaxed(s), 0);
    assert_eq!(hsa_signal_destroy(s), HSA_STATUS_ERROR_INVALID_SIGNAL);
}
