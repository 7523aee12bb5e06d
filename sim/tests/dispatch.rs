//! Dispatch tests: kernels assembled (or compiled) at test time with clang-16 for
//! gfx90a, linked with ld.lld-16, placed in a Vec-backed test memory and run through
//! `sim::dispatch::Dispatcher`. Expected values are computed here from the kernels' definitions.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use hsa_runtime64::config::Config;
use hsa_runtime64::dispatch::{DispatchError, DispatchRequest, Dispatcher};
use isa::{Fault, GlobalMemory, HostRegion, MemoryRegion};
use object::{Object, ObjectSegment, ObjectSymbol};

/// The dispatcher of the tests that need no other: these tests run without an
/// HSA runtime (which owns one of its own), configured from the environment.
fn dispatcher() -> &'static Dispatcher {
    static D: OnceLock<Dispatcher> = OnceLock::new();
    D.get_or_init(|| Dispatcher::with_settings(Config::from_env().dispatch))
}

/// A test-only global memory: a list of host regions.
#[derive(Default)]
struct TestMemory {
    regions: Mutex<Vec<Arc<HostRegion>>>,
}

impl GlobalMemory for TestMemory {
    fn region(&self, addr: u64) -> Option<Arc<dyn MemoryRegion>> {
        let regions = self.regions.lock().unwrap();
        regions
            .iter()
            .find(|r| addr >= r.device_base() && addr < r.device_base() + r.len())
            .map(|r| r.clone() as Arc<dyn MemoryRegion>)
    }
}

impl TestMemory {
    fn alloc(&self, len: u64) -> Arc<HostRegion> {
        let r = Arc::new(HostRegion::zeroed(len));
        self.regions.lock().unwrap().push(r.clone());
        r
    }
}

/// A loaded code object: its region and symbol addresses.
struct CodeObject {
    region: Arc<HostRegion>,
    symbols: Vec<(String, u64)>,
}

impl CodeObject {
    fn addr(&self, name: &str) -> u64 {
        let off = self
            .symbols
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no symbol {name}"))
            .1;
        self.region.device_base() + off
    }
}

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("isa_dispatch");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Assembles/compiles `src` and links it into a shared code object; cached per name.
fn build(name: &str, src: &Path, lang: &str) -> PathBuf {
    let dir = out_dir();
    let obj = dir.join(format!("{name}.o"));
    let so = dir.join(format!("{name}.so"));
    let mut c = Command::new("clang-16");
    c.args([
        "--target=amdgcn-amd-amdhsa",
        "-mcpu=gfx90a",
        "-nogpulib",
        "-O2",
        "-c",
        "-x",
        lang,
    ]);
    if lang == "cl" {
        c.arg("-cl-std=CL2.0");
    }
    c.arg(src).arg("-o").arg(&obj);
    run(&mut c);
    run(Command::new("ld.lld-16")
        .arg("-shared")
        .arg(&obj)
        .arg("-o")
        .arg(&so));
    so
}

/// Loads the PT_LOAD segments of `so` into a new region at their virtual addresses.
fn load(mem: &TestMemory, so: &Path) -> CodeObject {
    let data = std::fs::read(so).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let size = file
        .segments()
        .map(|s| s.address() + s.size())
        .max()
        .unwrap();
    let region = mem.alloc(size.div_ceil(4096) * 4096);
    for seg in file.segments() {
        let bytes = seg.data().unwrap();
        assert!(region.write_bytes(seg.address(), bytes));
    }
    let symbols = file
        .symbols()
        .filter_map(|s| Some((s.name().ok()?.to_string(), s.address())))
        .collect();
    CodeObject { region, symbols }
}

fn asm_kernels(mem: &TestMemory) -> CodeObject {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    let so = SO.get_or_init(|| {
        build(
            "isa_kernels",
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/isa_kernels.s"),
            "assembler",
        )
    });
    load(mem, so)
}

fn request(
    co: &CodeObject,
    kernel: &str,
    mem: &TestMemory,
    wg: u32,
    grid: u32,
    kernarg: &[u8],
    lds: u32,
) -> DispatchRequest {
    let ka = mem.alloc(kernarg.len().max(8) as u64);
    assert!(ka.write_bytes(0, kernarg));
    // An AQL packet the kernel can read through the dispatch pointer.
    let pkt = mem.alloc(64);
    let mut p = [0u8; 64];
    p[0..4].copy_from_slice(&0x0001_1402u32.to_le_bytes());
    p[4..6].copy_from_slice(&(wg as u16).to_le_bytes());
    p[6..8].copy_from_slice(&1u16.to_le_bytes());
    p[8..10].copy_from_slice(&1u16.to_le_bytes());
    p[12..16].copy_from_slice(&grid.to_le_bytes());
    p[16..20].copy_from_slice(&1u32.to_le_bytes());
    p[20..24].copy_from_slice(&1u32.to_le_bytes());
    p[28..32].copy_from_slice(&lds.to_le_bytes());
    let kd = co.addr(&format!("{kernel}.kd"));
    p[32..40].copy_from_slice(&kd.to_le_bytes());
    p[40..48].copy_from_slice(&ka.device_base().to_le_bytes());
    assert!(pkt.write_bytes(0, &p));
    DispatchRequest {
        workgroup_size: [wg, 1, 1],
        grid_size: [grid, 1, 1],
        dimensions: 1,
        private_segment_size: 0,
        queue_scratch_per_lane: 0,
        group_segment_size: lds,
        kernel_object: kd,
        kernarg_address: ka.device_base(),
        packet_address: pkt.device_base(),
        queue_address: 0,
        dispatch_id: 7,
    }
}

fn read_u32s(r: &HostRegion, n: usize) -> Vec<u32> {
    let mut b = vec![0u8; 4 * n];
    assert!(r.read_bytes(0, &mut b));
    b.chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn memory() -> (Arc<TestMemory>, Arc<dyn GlobalMemory>) {
    let m = Arc::new(TestMemory::default());
    let g: Arc<dyn GlobalMemory> = m.clone();
    (m, g)
}

#[test]
fn empty_kernel_over_a_multi_workgroup_grid() {
    let (mem, g) = memory();
    let co = asm_kernels(&mem);
    // 37 workgroups of 64 and a partial one.
    let req = request(&co, "empty", &mem, 64, 64 * 37 + 5, &[], 0);
    dispatcher()
        .dispatch(&req, &g, 2)
        .expect("empty kernel runs");
    // Again, on the cached program.
    dispatcher()
        .dispatch(&req, &g, 1)
        .expect("empty kernel runs twice");
}

/// Runs `gid` over `grid` items in workgroups of `wg` and checks every element and
/// that nothing past the grid was written (EXEC masking of the partial wave).
fn check_gid(workers: usize, wg: u32, grid: u32) {
    let (mem, g) = memory();
    let co = asm_kernels(&mem);
    let n = grid as usize + 100;
    let out = mem.alloc(4 * n as u64);
    assert!(out.write_bytes(0, &vec![0xAB; 4 * n]));
    let req = request(
        &co,
        "gid",
        &mem,
        wg,
        grid,
        &out.device_base().to_le_bytes(),
        0,
    );
    dispatcher()
        .dispatch(&req, &g, workers)
        .expect("gid kernel runs");
    let v = read_u32s(&out, n);
    for (i, x) in v.iter().enumerate() {
        let want = if i < grid as usize {
            i as u32
        } else {
            0xABAB_ABAB
        };
        assert_eq!(*x, want, "element {i} (grid {grid}, workgroup {wg})");
    }
}

#[test]
fn global_id_kernel_writes_every_element_including_a_partial_workgroup() {
    check_gid(1, 256, 1000);
    check_gid(2, 100, 1000);
    check_gid(1, 64, 64);
}

#[test]
fn store_outside_every_region_is_a_memory_fault() {
    let (mem, g) = memory();
    let co = asm_kernels(&mem);
    let req = request(&co, "bad_store", &mem, 64, 128, &[], 0);
    let err = dispatcher().dispatch(&req, &g, 1).expect_err("must fault");
    assert_eq!(err.hsa_status(), 43, "{err}");
    assert_eq!(err.fault_address(), Some(0x1230), "{err}");
    let (fault, site) = err.fault().unwrap();
    match fault {
        Fault::Memory {
            write, pc, lane, ..
        } => {
            assert!(write);
            // The store is the 5th instruction, after s_mov_b32 with a literal (8 bytes),
            // s_mov_b32 with inline 0 (4) and two v_mov_b32_e32 (4 each).
            assert_eq!(*pc, co.addr("bad_store") + 8 + 4 + 4 + 4);
            assert_eq!(*lane, Some(0));
        }
        other => panic!("unexpected fault {other:?}"),
    }
    assert_eq!(site.workgroup, [0, 0, 0]);
}

#[test]
fn s_trap_reports_the_trap_and_its_pc() {
    let (mem, g) = memory();
    let co = asm_kernels(&mem);
    let req = request(&co, "trap", &mem, 64, 64, &[], 0);
    let err = dispatcher().dispatch(&req, &g, 1).expect_err("must trap");
    assert_eq!(err.hsa_status(), 0x1016);
    let pc = co.addr("trap") + 4;
    assert_eq!(err.fault().unwrap().0, &Fault::Trap { pc, trap_id: 2 });
    assert!(err.to_string().contains(&format!("{pc:#x}")), "{err}");
}

#[test]
fn unexecutable_instruction_names_itself_and_its_pc() {
    // An image instruction: gfx90a has it, the virtual device never executes it.
    let (mem, g) = memory();
    let co = asm_kernels(&mem);
    let req = request(&co, "illegal", &mem, 64, 64, &[], 0);
    let err = dispatcher().dispatch(&req, &g, 1).expect_err("must stop");
    assert_eq!(err.hsa_status(), 42);
    let pc = co.addr("illegal") + 4;
    assert_eq!(err.fault().unwrap().0.pc(), pc);
    let msg = err.to_string();
    assert!(
        msg.contains("MIMG") && msg.contains("0xf0000f00") && msg.contains(&format!("{pc:#x}")),
        "{msg}"
    );
}

/// Runs `exchange` over `wgs` workgroups of 256 on `d` with `workers` threads.
fn run_exchange(d: &Dispatcher, workers: usize, wgs: u32) -> Vec<u32> {
    let (mem, g) = memory();
    let co = asm_kernels(&mem);
    let n = 256 * wgs as usize;
    let out = mem.alloc(4 * n as u64);
    let req = request(
        &co,
        "exchange",
        &mem,
        256,
        256 * wgs,
        &out.device_base().to_le_bytes(),
        1024,
    );
    d.dispatch(&req, &g, workers).expect("exchange runs");
    read_u32s(&out, n)
}

#[test]
fn barrier_and_lds_exchange_across_four_waves() {
    let d = Dispatcher::new();
    let v = run_exchange(&d, 1, 3);
    for (i, x) in v.iter().enumerate() {
        let (wg, lid) = (i / 256, i % 256);
        assert_eq!(*x as usize, wg * 256 + 255 - lid, "element {i}");
    }
}

#[test]
fn a_barrier_waits_for_every_wave_that_has_not_ended() {
    // `staggered`: the waves reach the barrier many yields apart, and wave 3 ends
    // without reaching it. Each wave reads, after the barrier, what the mirror wave
    // wrote before it: a wave released early would read zeros.
    let (mem, g) = memory();
    let co = asm_kernels(&mem);
    let out = mem.alloc(4 * 256);
    let req = request(
        &co,
        "staggered",
        &mem,
        256,
        256,
        &out.device_base().to_le_bytes(),
        1024,
    );
    dispatcher().dispatch(&req, &g, 1).expect("staggered runs");
    let v = read_u32s(&out, 256);
    for (x, got) in v.iter().enumerate() {
        let want = match x {
            // Mirror of wave 3's items, which it never wrote (the LDS starts zeroed).
            0..=63 => 0,
            64..=191 => 255 - x as u32 + 1000,
            // Wave 3's own items: it ended before storing.
            _ => 0,
        };
        assert_eq!(*got, want, "item {x}");
    }
}

#[test]
fn two_workers_give_the_same_result_as_one() {
    let d = Dispatcher::new();
    let one = run_exchange(&d, 1, 16);
    let two = run_exchange(&d, 2, 16);
    assert_eq!(one, two);
    let expect: Vec<u32> = (0..16 * 256)
        .map(|i| (i / 256 * 256 + 255 - i % 256) as u32)
        .collect();
    assert_eq!(two, expect);
}

#[test]
fn clang_compiled_opencl_kernel_writes_global_ids() {
    // A C (OpenCL) kernel through clang-16's real code generation.
    let dir = out_dir();
    let src = dir.join("isa_wr.cl");
    std::fs::write(
        &src,
        "__kernel void wr(__global int *out, int n) {\n  int gid = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();\n  if (gid < n) out[gid] = gid * 3 + 1;\n}\n",
    )
    .unwrap();
    let so = build("isa_wr", &src, "cl");
    let (mem, g) = memory();
    let co = load(&mem, &so);
    let n = 777u32;
    let out = mem.alloc(4 * 1024);
    let mut ka = out.device_base().to_le_bytes().to_vec();
    ka.extend_from_slice(&n.to_le_bytes());
    ka.resize(64, 0);
    // Round the grid up as OpenCL does; the kernel masks with `gid < n`.
    let req = request(&co, "wr", &mem, 128, 896, &ka, 0);
    dispatcher().dispatch(&req, &g, 2).expect("wr runs");
    let v = read_u32s(&out, 1024);
    for (i, x) in v.iter().enumerate() {
        let want = if i < n as usize { 3 * i as u32 + 1 } else { 0 };
        assert_eq!(*x, want, "element {i}");
    }
}

#[test]
fn malformed_requests_are_rejected() {
    let (mem, g) = memory();
    let co = asm_kernels(&mem);
    let mut req = request(&co, "empty", &mem, 64, 64, &[], 0);
    req.workgroup_size = [2048, 1, 1];
    assert!(matches!(
        dispatcher().dispatch(&req, &g, 1),
        Err(DispatchError::InvalidRequest(_))
    ));
    let mut req = request(&co, "empty", &mem, 64, 64, &[], 0);
    req.kernel_object = 0x40;
    let err = dispatcher().dispatch(&req, &g, 1).unwrap_err();
    assert!(
        matches!(err, DispatchError::InvalidKernelObject { .. }),
        "{err}"
    );
}

#[test]
fn clang_kernel_with_a_private_array_uses_scratch() {
    // A dynamically indexed private array lives in scratch: exercises the private
    // segment buffer, the per-wave scratch offset and the swizzled MUBUF path.
    let dir = out_dir();
    let src = dir.join("isa_stack.cl");
    std::fs::write(
        &src,
        "__kernel void stack(__global int *out, int n) {\n  int buf[40];\n  int lid = __builtin_amdgcn_workitem_id_x();\n  for (int k = 0; k < 40; k++) buf[k] = k * n + lid;\n  out[__builtin_amdgcn_workgroup_id_x() * 128 + lid] = buf[(n + lid) % 40] + buf[lid % 40];\n}\n",
    )
    .unwrap();
    let so = build("isa_stack", &src, "cl");
    let (mem, g) = memory();
    let co = load(&mem, &so);
    let mut kd = [0u8; 8];
    assert!(co
        .region
        .read_bytes(co.addr("stack.kd") - co.region.device_base(), &mut kd));
    let private = u32::from_le_bytes([kd[4], kd[5], kd[6], kd[7]]);
    assert!(
        private >= 160,
        "the array is in scratch ({private} bytes per work-item)"
    );
    let n = 7u32;
    let out = mem.alloc(4 * 256);
    let mut ka = out.device_base().to_le_bytes().to_vec();
    ka.extend_from_slice(&n.to_le_bytes());
    ka.resize(64, 0);
    let mut req = request(&co, "stack", &mem, 128, 256, &ka, 0);
    req.private_segment_size = private;
    for workers in [1, 2] {
        dispatcher()
            .dispatch(&req, &g, workers)
            .expect("stack runs");
        let v = read_u32s(&out, 256);
        for (i, x) in v.iter().enumerate() {
            let lid = (i % 128) as u32;
            let want = ((n + lid) % 40) * n + lid + (lid % 40) * n + lid;
            assert_eq!(*x, want, "element {i} with {workers} workers");
        }
    }
}
