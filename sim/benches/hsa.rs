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
use std::ffi::{c_void, CString};
use std::time::{Duration, Instant};

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn empty_kernel(gpu: hsa_agent_t) -> (u64, u32, u32, u32) {
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
    let image = std::fs::read(&out).unwrap();
    let mut r = hsa_code_object_reader_t { handle: 0 };
    let mut exe = hsa_executable_t { handle: 0 };
    let name = CString::new("empty.kd").unwrap();
    let mut sym = hsa_executable_symbol_t { handle: 0 };
    let (mut kd, mut kernarg, mut group, mut private) = (0u64, 0u32, 0u32, 0u32);
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
        assert_eq!(
            hsa_executable_load_agent_code_object(
                exe,
                gpu,
                r,
                std::ptr::null(),
                std::ptr::null_mut()
            ),
            0
        );
        assert_eq!(hsa_executable_freeze(exe, std::ptr::null()), 0);
        assert_eq!(
            hsa_executable_get_symbol_by_name(exe, name.as_ptr(), &gpu, &mut sym),
            0
        );
        hsa_executable_symbol_get_info(
            sym,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
            &mut kd as *mut _ as *mut c_void,
        );
        hsa_executable_symbol_get_info(
            sym,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
            &mut kernarg as *mut _ as *mut c_void,
        );
        hsa_executable_symbol_get_info(
            sym,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
            &mut group as *mut _ as *mut c_void,
        );
        hsa_executable_symbol_get_info(
            sym,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
            &mut private as *mut _ as *mut c_void,
        );
    }
    (kd, kernarg, group, private)
}

fn dispatch_round_trip(gpu: hsa_agent_t) -> Vec<f64> {
    let (kd, kernarg_size, group, private) = empty_kernel(gpu);
    let kernarg_pool = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT);
    let kernarg = alloc(kernarg_pool, kernarg_size.max(64) as usize);
    assert_eq!(
        unsafe { hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), kernarg as *const c_void) },
        0
    );
    let q = queue(gpu, 64);
    let done = signal(1);
    let mut p = [0u64; 8];
    // workgroup 64x1x1 (bits 32..) | grid 64 @12, 1 @16, 1 @20
    p[0] = (64u64 << 32) | (1u64 << 48);
    p[1] = 1 << 32; // workgroup_size_z = 1, reserved0 = 0 ; grid_size_x at 12
    let mut bytes = [0u8; 64];
    bytes[4..6].copy_from_slice(&64u16.to_le_bytes());
    bytes[6..8].copy_from_slice(&1u16.to_le_bytes());
    bytes[8..10].copy_from_slice(&1u16.to_le_bytes());
    bytes[12..16].copy_from_slice(&64u32.to_le_bytes());
    bytes[16..20].copy_from_slice(&1u32.to_le_bytes());
    bytes[20..24].copy_from_slice(&1u32.to_le_bytes());
    bytes[24..28].copy_from_slice(&private.to_le_bytes());
    bytes[28..32].copy_from_slice(&group.to_le_bytes());
    bytes[32..40].copy_from_slice(&kd.to_le_bytes());
    bytes[40..48].copy_from_slice(&(kernarg as u64).to_le_bytes());
    bytes[56..64].copy_from_slice(&done.handle.to_le_bytes());
    for (i, w) in p.iter_mut().enumerate() {
        *w = u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
    }
    let mut samples = Vec::new();
    for i in 0..3000 {
        hsa_signal_store_relaxed(done, 1);
        let t0 = Instant::now();
        submit(q, p, 0x0001_1402);
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
