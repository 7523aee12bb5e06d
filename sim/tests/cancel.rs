//! Destroying a queue, or shutting the runtime down, while a kernel runs on it:
//! the call returns, the running dispatch stops at its waves' next backward
//! branch and is abandoned (its completion signal untouched, no error
//! reported), and no worker keeps running it. A test binary of its own: the
//! last `hsa_shut_down` ends the runtime of the whole process.
// This test is a C client of the HSA API: every `unsafe` is an FFI call with
// pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Starts the never-ending kernel over `groups` workgroups on a fresh queue of
/// `gpu`; returns the queue and the completion signal.
fn start_forever(image: &[u8], gpu: hsa_agent_t, groups: u32) -> (*mut hsa_queue_t, hsa_signal_t) {
    let exe = load_executable(gpu, image);
    let k = kernel_object(exe, gpu, "forever");
    let q = queue(gpu, 64);
    let done = signal(1);
    submit(
        q,
        dispatch_packet(&k, 64, 64 * groups, std::ptr::null_mut(), done),
        KERNEL_HEADER,
    );
    (q, done)
}

/// Runs `call` on another thread and gives its result, or fails if it has not
/// returned within `limit` (a hang, which is the bug this binary looks for).
fn returns_within<T: Send + 'static>(
    limit: Duration,
    call: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(call());
    });
    rx.recv_timeout(limit).expect("the call never returned")
}

/// Threads of this process named like the dispatcher's helpers that are running
/// (state R) rather than asleep.
fn busy_workers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|t| {
            let p = t.as_ref().unwrap().path();
            let named =
                std::fs::read_to_string(p.join("comm")).is_ok_and(|n| n.trim() == "hsa-sim-worker");
            let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
            // The state is the field after the parenthesised name.
            let running = stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('R'));
            named && running
        })
        .count()
}

#[test]
fn destroying_a_queue_or_shutting_down_stops_a_running_kernel() {
    std::env::set_var("HSA_SIM_WORKERS", "2");
    let image = assemble_fixture("isa_kernels");

    // 1. hsa_queue_destroy under a running kernel.
    let outer = Session::open();
    let gpu = gpus()[0];
    let (q, done) = start_forever(&image, gpu, 8);
    std::thread::sleep(Duration::from_millis(50));
    let q_addr = q as usize;
    let status = returns_within(Duration::from_secs(30), move || unsafe {
        hsa_queue_destroy(q_addr as *mut hsa_queue_t)
    });
    assert_eq!(status, 0);
    assert_eq!(
        hsa_signal_load_scacquire(done),
        1,
        "an abandoned dispatch does not complete"
    );
    // Its workers went back to sleep.
    let deadline = Instant::now() + Duration::from_secs(10);
    while busy_workers() != 0 {
        assert!(
            Instant::now() < deadline,
            "a worker keeps running the destroyed queue's kernel"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The runtime still runs kernels on a new queue.
    let exe = load_executable(gpu, &image);
    let empty = kernel_object(exe, gpu, "empty");
    let q2 = queue(gpu, 64);
    let ok = signal(1);
    submit(
        q2,
        dispatch_packet(&empty, 64, 64, std::ptr::null_mut(), ok),
        KERNEL_HEADER,
    );
    wait_eq(ok, 0);
    assert_eq!(unsafe { hsa_queue_destroy(q2) }, 0);

    // 2. The last hsa_shut_down under a running kernel.
    let (_q3, _done3) = start_forever(&image, gpu, 8);
    std::thread::sleep(Duration::from_millis(50));
    returns_within(Duration::from_secs(30), move || drop(outer));
    let mut v = 0u16;
    assert_eq!(
        unsafe {
            hsa_system_get_info(
                HSA_SYSTEM_INFO_VERSION_MAJOR,
                &mut v as *mut u16 as *mut std::ffi::c_void,
            )
        },
        HSA_STATUS_ERROR_NOT_INITIALIZED,
        "the runtime is shut down"
    );
}
