//! The runtime owns its dispatcher: the helper threads that run workgroups
//! next to a queue's packet processor exist only between `hsa_init` and the
//! last `hsa_shut_down`, which joins them. A test binary of its own, because
//! it counts the process's threads by name.
// This test is a C client of the HSA API: every `unsafe` is an FFI call with
// pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;

/// Threads of this process named like the dispatcher's helpers.
fn dispatch_workers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|t| {
            let comm = t.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|n| n.trim() == "hsa-sim-worker")
        })
        .count()
}

/// Runs the `gid` kernel (out[i] = i) over 16 workgroups of 64 and checks the output.
fn run_gid(image: &[u8]) {
    let gpu = gpus()[0];
    let exe = load_executable(gpu, image);
    let k = kernel_object(exe, gpu, "gid");
    let n = 16 * 64;
    let out = alloc(
        pool_with(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED),
        4 * n,
    );
    let kernarg = kernarg_segment(gpu, &[out as u64]);
    let q = queue(gpu, 64);
    let done = signal(1);
    submit(
        q,
        dispatch_packet(&k, 64, n as u32, kernarg, done),
        KERNEL_HEADER,
    );
    wait_eq(done, 0);
    for i in 0..n {
        assert_eq!(
            unsafe { std::ptr::read((out as *const u32).add(i)) },
            i as u32
        );
    }
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
}

#[test]
fn the_last_shut_down_joins_the_dispatch_workers() {
    // Two workers: a 16-workgroup dispatch takes one helper from the pool.
    std::env::set_var("HSA_SIM_WORKERS", "2");
    let image = assemble_fixture("isa_kernels");
    assert_eq!(dispatch_workers(), 0);
    for round in 0..2 {
        let outer = Session::open();
        let inner = Session::open();
        run_gid(&image);
        // The helper names itself once it runs, which may be after the
        // dispatch ended on the calling thread: wait for that event.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while dispatch_workers() == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: no dispatch helper thread"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(dispatch_workers(), 1, "round {round}: one helper");
        drop(inner);
        assert_eq!(
            dispatch_workers(),
            1,
            "round {round}: a shut-down that is not the last keeps the helper"
        );
        drop(outer);
        // `join` returns once the kernel has cleared the thread's tid, which
        // happens on its way out, slightly before its /proc/self/task entry
        // goes: wait (bounded) for the entry to go. A helper left running
        // keeps its entry and fails here.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while dispatch_workers() != 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: the last hsa_shut_down left dispatch workers running"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
