//! Benchmarks of the ISA engine on the virtual gfx90a (prints a table, asserts nothing).
//!
//! `cargo bench -p sim --bench isa` runs kernels compiled by clang-16 from
//! `benches/kernels/compute.c`, loaded through the HSA API and dispatched with
//! the virtual device's dispatcher directly (so that 1 and 2 host worker
//! threads can be compared in one run), and reports:
//! - lane-operations per second per host core on a VALU-bound kernel
//!   (target: at least 1e9);
//! - wave-instructions per second on a memory-bound kernel;
//! - saxpy (2^20 elements) and a 512x512 float matmul on the virtual device
//!   against the same loops on the host, with 1 and 2 worker threads
//!   (target: 2 threads at least 1.8x faster than 1 on the compute-bound kernel).
// This benchmark is a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

#[path = "../tests/common/mod.rs"]
mod common;
use common::*;
use hsa_runtime64::dispatch::DispatchRequest;
use hsa_runtime64::memory::AgentMemory;
use hsa_runtime64::runtime::Runtime;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

struct Kernels {
    gpu: hsa_agent_t,
    exe: hsa_executable_t,
    memory: Arc<dyn isa::GlobalMemory>,
    /// The runtime, whose dispatcher runs the kernels.
    rt: Arc<Runtime>,
    packet: *mut u8,
    kernarg: *mut u8,
}

fn build() -> Vec<u8> {
    let dir = scratch_dir("bench-isa");
    let src =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/kernels/compute.c");
    let out = dir.join("compute.co");
    clang(&[
        "--target=amdgcn-amd-amdhsa",
        "-mcpu=gfx90a",
        "-nogpulib",
        "-O3",
        "-x",
        "c",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    std::fs::read(out).unwrap()
}

impl Kernels {
    fn load() -> Kernels {
        let gpu = gpus()[0];
        let image = build();
        let exe = load_executable(gpu, &image);
        let fine = pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT);
        let packet = alloc(fine, 64);
        let kernarg = alloc(fine, 256);
        for p in [packet, kernarg] {
            assert_eq!(
                unsafe {
                    hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), p as *const c_void)
                },
                0
            );
        }
        let rt = hsa_runtime64::runtime::runtime().unwrap();
        let memory: Arc<dyn isa::GlobalMemory> = Arc::new(AgentMemory {
            host: None,
            map: rt.memory.clone(),
            agent: 1,
        });
        Kernels {
            gpu,
            exe,
            memory,
            rt,
            packet,
            kernarg,
        }
    }

    fn object(&self, name: &str) -> u64 {
        kernel_object(self.exe, self.gpu, name).object
    }

    /// Runs `name` over `grid` work-items in workgroups of `wg` with `args`
    /// (8 bytes each) on `workers` host threads; returns the seconds taken.
    fn run(&self, name: &str, grid: u32, wg: u16, args: &[u64], workers: usize) -> f64 {
        match self.try_run(name, grid, wg, args, workers) {
            Ok((t, _)) => t,
            Err(e) => {
                println!("{name}: not run: {e}");
                f64::NAN
            }
        }
    }

    /// As `run`, also returning the wave-instructions executed (0 if it failed).
    fn run_counted(
        &self,
        name: &str,
        grid: u32,
        wg: u16,
        args: &[u64],
        workers: usize,
    ) -> (f64, u64) {
        match self.try_run(name, grid, wg, args, workers) {
            Ok(r) => r,
            Err(e) => {
                println!("{name}: not run: {e}");
                (f64::NAN, 0)
            }
        }
    }

    fn try_run(
        &self,
        name: &str,
        grid: u32,
        wg: u16,
        args: &[u64],
        workers: usize,
    ) -> Result<(f64, u64), String> {
        let kd = self.object(name);
        unsafe {
            for (i, a) in args.iter().enumerate() {
                std::ptr::write((self.kernarg as *mut u64).add(i), *a);
            }
            // The dispatch packet the kernel reads its workgroup size from.
            std::ptr::write_bytes(self.packet, 0, 64);
            std::ptr::write(self.packet.add(4) as *mut u16, wg);
            std::ptr::write(self.packet.add(12) as *mut u32, grid);
        }
        let private = unsafe { std::ptr::read((kd + 4) as *const u32) };
        let group = unsafe { std::ptr::read(kd as *const u32) };
        let req = DispatchRequest {
            workgroup_size: [u32::from(wg), 1, 1],
            grid_size: [grid, 1, 1],
            dimensions: 1,
            private_segment_size: private,
            queue_scratch_per_lane: 0,
            group_segment_size: group,
            kernel_object: kd,
            kernarg_address: self.kernarg as u64,
            packet_address: self.packet as u64,
            queue_address: 0,
            dispatch_id: 0,
        };
        let t0 = Instant::now();
        let n = self
            .rt
            .dispatcher
            .dispatch_counted(&req, &self.memory, workers)
            .map_err(|e| e.to_string())?
            .executed;
        Ok((t0.elapsed().as_secs_f64(), n))
    }
}

/// The fastest of `n` runs (NaN as soon as one run fails).
fn best_of(n: usize, mut f: impl FnMut() -> f64) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..n {
        let t = f();
        if t.is_nan() {
            return t;
        }
        best = best.min(t);
    }
    best
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // Optional section filter: `cargo bench -p sim --bench isa -- valu matmul`
    // runs only the named sections (valu, memory, saxpy, matmul); none = all.
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let section = |name: &str| wanted.is_empty() || wanted.iter().any(|w| w == name);
    let _s = Session::open();
    let k = Kernels::load();
    let dev = pool_with(k.gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    println!(
        "ISA engine benchmarks on the virtual gfx90a ({} host cores)",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    if section("valu") {
        bench_valu(&k, dev);
    }
    if section("memory") {
        bench_memory(&k, dev);
    }
    if section("saxpy") {
        bench_saxpy(&k, dev);
    }
    if section("matmul") {
        bench_matmul(&k, dev);
    }
}

/// Lanes of the VALU- and memory-bound grids: 110 workgroups x 256 lanes.
const LANES: u32 = 110 * 256;
/// Elements of the memory-bound buffer and of saxpy's vectors.
const N: u32 = 1 << 20;

/// VALU-bound: 110 workgroups x 256 lanes, 2000 iterations of 8 FMAs. clang -O3
/// makes the loop 4 v_pk_fma_f32 (2 FMAs per lane each) + 3 scalar instructions,
/// so a lane-iteration is 8 lane-operations and a wave-iteration 7 wave-instructions.
fn bench_valu(k: &Kernels, dev: hsa_amd_memory_pool_t) {
    let lanes = LANES;
    let iters = 2000u64;
    let out = alloc(dev, lanes as usize * 4);
    let lane_ops = lanes as f64 * iters as f64 * 8.0;
    let wave_instructions = f64::from(lanes / 64) * iters as f64 * 7.0;
    let mut valu = Vec::new();
    for workers in [1usize, 2] {
        let t = best_of(3, || {
            k.run("valu_bound", lanes, 256, &[out as u64, iters], workers)
        });
        valu.push(t);
        println!(
        "VALU-bound kernel, {workers} worker(s): {:.3} s, {:.2e} lane-ops/s ({:.2e} per worker; target >= 1e9 per core), {:.2e} wave-instructions/s",
        t,
        lane_ops / t,
        lane_ops / t / workers as f64,
        wave_instructions / t
    );
    }
    println!(
        "VALU-bound kernel, 2 workers vs 1: x{:.2} (target >= 1.8)",
        valu[0] / valu[1]
    );
}

/// Memory-bound: 512 rounds of a strided load+store per lane over 4 MiB (about
/// 0.1 s a run with one worker, long enough for the per-dispatch costs not to count).
fn bench_memory(k: &Kernels, dev: hsa_amd_memory_pool_t) {
    let (lanes, n) = (LANES, N);
    let buf = alloc(dev, n as usize * 4);
    let rounds = 512u64;
    for workers in [1usize, 2] {
        let mut executed = 0u64;
        let t = best_of(3, || {
            let (t, n) = k.run_counted(
                "memory_bound",
                lanes,
                256,
                &[buf as u64, u64::from(n), rounds],
                workers,
            );
            executed = n;
            t
        });
        // Wave-instructions as counted by the dispatcher (every instruction of
        // every wave, the index arithmetic included).
        println!(
            "memory-bound kernel, {workers} worker(s): {:.3} s, {:.2e} lane loads+stores/s, {:.2e} wave-instructions/s ({} per wave-round)",
            t,
            f64::from(lanes) * rounds as f64 * 2.0 / t,
            executed as f64 / t,
            executed / (u64::from(lanes / 64) * rounds).max(1)
        );
    }
}

/// saxpy over 2^20 floats, host loop against 1 and 2 workers.
fn bench_saxpy(k: &Kernels, dev: hsa_amd_memory_pool_t) {
    let n = N;
    let x = alloc(dev, n as usize * 4);
    let y = alloc(dev, n as usize * 4);
    unsafe {
        for i in 0..n as usize {
            *(x as *mut f32).add(i) = i as f32;
            *(y as *mut f32).add(i) = 1.0;
        }
    }
    let mut hx: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut hy = vec![1.0f32; n as usize];
    let host = best_of(5, || {
        let t0 = Instant::now();
        for i in 0..n as usize {
            hy[i] += 2.0 * hx[i];
        }
        std::hint::black_box(&mut hy);
        std::hint::black_box(&mut hx);
        t0.elapsed().as_secs_f64()
    });
    let a_bits = u64::from(2.0f32.to_bits());
    let on = |workers: usize| {
        best_of(3, || {
            k.run(
                "saxpy",
                n,
                256,
                &[a_bits, x as u64, y as u64, u64::from(n)],
                workers,
            )
        })
    };
    let (t1, t2) = (on(1), on(2));
    println!(
        "saxpy 2^20: host {:.2} ms; device 1 worker {:.2} ms, 2 workers {:.2} ms (x{:.2})",
        host * 1e3,
        t1 * 1e3,
        t2 * 1e3,
        t1 / t2
    );
}

/// 512x512 float matmul, host loop against 1 and 2 workers; results compared.
fn bench_matmul(k: &Kernels, dev: hsa_amd_memory_pool_t) {
    let m = 512u32;
    let elems = (m * m) as usize;
    let (a, b, c) = (
        alloc(dev, elems * 4),
        alloc(dev, elems * 4),
        alloc(dev, elems * 4),
    );
    let ha: Vec<f32> = (0..elems).map(|i| (i % 7) as f32).collect();
    let hb: Vec<f32> = (0..elems).map(|i| (i % 5) as f32).collect();
    unsafe {
        std::ptr::copy_nonoverlapping(ha.as_ptr(), a as *mut f32, elems);
        std::ptr::copy_nonoverlapping(hb.as_ptr(), b as *mut f32, elems);
    }
    let mut hc = vec![0f32; elems];
    let host = best_of(2, || {
        let t0 = Instant::now();
        for r in 0..m as usize {
            for col in 0..m as usize {
                let mut acc = 0f32;
                for kk in 0..m as usize {
                    acc += ha[r * m as usize + kk] * hb[kk * m as usize + col];
                }
                hc[r * m as usize + col] = acc;
            }
        }
        std::hint::black_box(&mut hc);
        t0.elapsed().as_secs_f64()
    });
    let on = |workers: usize| {
        best_of(2, || {
            k.run(
                "matmul",
                m * m,
                256,
                &[a as u64, b as u64, c as u64, u64::from(m)],
                workers,
            )
        })
    };
    let (t1, t2) = (on(1), on(2));
    let dc = unsafe { std::slice::from_raw_parts(c as *const f32, elems) };
    let same = dc.iter().zip(&hc).all(|(d, h)| d == h);
    println!(
    "matmul 512x512: host {:.1} ms; device 1 worker {:.1} ms, 2 workers {:.1} ms (x{:.2}); results {}",
    host * 1e3,
    t1 * 1e3,
    t2 * 1e3,
    t1 / t2,
    if same { "equal to the host's" } else { "DIFFER from the host's" }
);
}
