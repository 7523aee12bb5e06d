//! Benchmarks of the virtual device's HSA runtime (prints a table, asserts nothing).
//!
//! `cargo bench -p sim --bench hsa` measures, in one run:
//! - the dispatch round trip of an empty kernel: doorbell store to the
//!   completion signal seen by a waiter blocked in `hsa_signal_wait_scacquire`;
//! - the wake-up latency of a blocked signal waiter;
//! - `hsa_amd_memory_async_copy` bandwidth (host pinned -> device) from
//!   4 KiB to 256 MiB, as a fraction of host `memcpy` over the same sizes.
//!
//! Targets (issue 2): empty dispatch round trip ≤ 15 µs median; copies of
//! 1 MiB and above ≥ 0.5 of memcpy bandwidth.
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

#[path = "../tests/common/mod.rs"]
mod common;
use common::*;
use std::ffi::c_void;
use std::time::{Duration, Instant};

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn empty_kernel(gpu: hsa_agent_t) -> KernelObject {
    let dir = scratch_dir("bench");
    let src = dir.join("empty.c");
    std::fs::write(
        &src,
        "__attribute__((visibility(\"protected\"), amdgpu_kernel)) void empty(void) {}\n",
    )
    .unwrap();
    let out = dir.join("empty.co");
    clang(&[
        "--target=amdgcn-amd-amdhsa",
        "-mcpu=gfx90a",
        "-nogpulib",
        "-O2",
        "-x",
        "c",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let exe = load_executable(gpu, &std::fs::read(&out).unwrap());
    kernel_object(exe, gpu, "empty")
}

fn dispatch_round_trip(gpu: hsa_agent_t) -> Vec<f64> {
    let k = empty_kernel(gpu);
    let kernarg_pool = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT);
    let kernarg = alloc(kernarg_pool, k.kernarg_size.max(64) as usize);
    assert_eq!(
        unsafe { hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), kernarg as *const c_void) },
        0
    );
    let q = queue(gpu, 64);
    let done = signal(1);
    let p = dispatch_packet(&k, 64, 64, kernarg, done);
    let mut samples = Vec::new();
    for i in 0..3000 {
        hsa_signal_store_relaxed(done, 1);
        let t0 = Instant::now();
        submit(q, p, KERNEL_HEADER);
        while hsa_signal_wait_scacquire(
            done,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED,
        ) != 0
        {}
        let dt = t0.elapsed();
        if i >= 200 {
            samples.push(dt.as_secs_f64() * 1e6);
        }
    }
    unsafe { hsa_queue_destroy(q) };
    samples
}

fn wake_latency() -> Vec<f64> {
    let s = signal(1);
    let (tx, rx) = std::sync::mpsc::channel::<Instant>();
    let waiter = std::thread::spawn(move || {
        for i in 0..1000i64 {
            while hsa_signal_wait_scacquire(
                s,
                HSA_SIGNAL_CONDITION_EQ,
                i,
                u64::MAX,
                HSA_WAIT_STATE_BLOCKED,
            ) != i
            {}
            tx.send(Instant::now()).unwrap();
        }
    });
    let mut samples = Vec::new();
    for i in 0..1000i64 {
        std::thread::sleep(Duration::from_micros(300)); // let the waiter fall asleep
        let t0 = Instant::now();
        hsa_signal_store_screlease(s, i);
        let t1 = rx.recv().unwrap();
        samples.push((t1 - t0).as_secs_f64() * 1e6);
    }
    waiter.join().unwrap();
    samples
}

fn bandwidth(gpu: hsa_agent_t, size: usize) -> (f64, f64) {
    let fine = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    let dev = pool_with(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    let src = alloc(fine, size);
    let dst = alloc(dev, size);
    unsafe {
        std::ptr::write_bytes(src, 1, size);
        std::ptr::write_bytes(dst, 2, size);
    }
    let reps = ((512usize << 20) / size).clamp(3, 20000);
    let done = signal(0);
    let t0 = Instant::now();
    for _ in 0..reps {
        hsa_signal_store_relaxed(done, 1);
        unsafe {
            hsa_amd_memory_async_copy(
                dst as *mut c_void,
                gpu,
                src as *const c_void,
                gpu,
                size,
                0,
                std::ptr::null(),
                done,
            )
        };
        while hsa_signal_wait_scacquire(
            done,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED,
        ) != 0
        {}
    }
    let async_gbs = (size * reps) as f64 / t0.elapsed().as_secs_f64() / 1e9;
    let mut a = vec![1u8; size];
    let b = vec![3u8; size];
    let t0 = Instant::now();
    for _ in 0..reps {
        a.copy_from_slice(std::hint::black_box(&b));
        std::hint::black_box(&mut a);
    }
    let memcpy_gbs = (size * reps) as f64 / t0.elapsed().as_secs_f64() / 1e9;
    hsa_amd_memory_pool_free(src as *mut c_void);
    hsa_amd_memory_pool_free(dst as *mut c_void);
    (async_gbs, memcpy_gbs)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let _s = Session::open();
    let gpu = gpus()[0];
    println!(
        "virtual gfx90a HSA runtime benchmarks ({} host cores)",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    let mut rt = dispatch_round_trip(gpu);
    let (m, p10, p90) = (
        percentile(&mut rt, 0.5),
        percentile(&mut rt, 0.1),
        percentile(&mut rt, 0.9),
    );
    println!("empty kernel dispatch round trip: median {m:.1} us (p10 {p10:.1}, p90 {p90:.1}; target <= 15 us median; {} samples)", rt.len());
    let mut w = wake_latency();
    let (m, p10, p90) = (
        percentile(&mut w, 0.5),
        percentile(&mut w, 0.1),
        percentile(&mut w, 0.9),
    );
    println!("blocked signal waiter wake-up:    median {m:.1} us (p10 {p10:.1}, p90 {p90:.1})");
    println!(
        "{:>10} {:>14} {:>14} {:>10}",
        "size", "async copy GB/s", "memcpy GB/s", "fraction"
    );
    for size in [4usize << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20] {
        let (a, m) = bandwidth(gpu, size);
        let label = if size >= 1 << 20 {
            format!("{} MiB", size >> 20)
        } else {
            format!("{} KiB", size >> 10)
        };
        println!("{label:>10} {a:>14.2} {m:>14.2} {:>10.2}", a / m);
    }
}
