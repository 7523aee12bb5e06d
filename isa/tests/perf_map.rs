//! The perf map of compiled runs (`isa::perf_map`): with it on, decoding a block
//! with a fused run appends one line to `/tmp/perf-<pid>.map` in perf's format
//! (`START SIZE NAME`, hexadecimal), and START..START+SIZE is executable memory of
//! this process (the run's code, not some other address of its entry). Its own
//! test binary: no other test of this process compiles runs meanwhile.

mod common;

use std::sync::Arc;

use common::{assemble, TestMemory};
use isa::{Apertures, MemoryRegion, Program, Wave, WaveContext, WaveExit};

/// The executable mappings of this process (`/proc/self/maps`), as address ranges.
fn executable_ranges() -> Vec<(usize, usize)> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, perms) = (f.next()?, f.next()?);
            let (lo, hi) = range.split_once('-')?;
            perms.contains('x').then(|| {
                (
                    usize::from_str_radix(lo, 16).unwrap(),
                    usize::from_str_radix(hi, 16).unwrap(),
                )
            })
        })
        .collect()
}

#[test]
fn compiled_runs_are_named_in_perfs_map() {
    if !std::arch::is_x86_feature_detected!("avx2") {
        // No run is compiled on this host: nothing is mapped.
        return;
    }
    let _ = std::fs::remove_file(isa::perf_map::path());
    isa::set_perf_map(true);
    let text =
        "v_add_u32_e32 v0, v1, v2\nv_mov_b32_e32 v3, v0\nv_xor_b32_e32 v4, v3, v1\ns_endpgm\n";
    let bytes: Vec<u8> = assemble(text).into_iter().flat_map(|(_, b)| b).collect();
    let mem = TestMemory::default();
    let region = mem.alloc(bytes.len() as u64 + 64);
    assert!(region.write_bytes(0, &bytes));
    let r: Arc<dyn MemoryRegion> = region.clone();
    let program = Program::new(&r);
    let mut w = Wave::new();
    w.set_exec(u64::MAX);
    w.pc = region.device_base();
    let mut lds = vec![0u8; 64];
    let mut ctx = WaveContext {
        memory: &mem,
        lds: &mut lds,
        apertures: Apertures::KFD,
        stop: None,
        max_instructions: 1000,
        yield_after: u64::MAX,
    };
    assert_eq!(
        w.run(&program, &mut ctx).expect("wave runs"),
        WaveExit::Ended
    );
    assert_eq!(program.fused_instructions(region.device_base()), 3);
    let map = std::fs::read_to_string(isa::perf_map::path()).expect("the perf map");
    let want = format!(
        "gfx90a run {:#x} +3: v_add_u32_e32 v_mov_b32_e32 v_xor_b32_e32",
        region.device_base()
    );
    let lines: Vec<&str> = map.lines().collect();
    assert_eq!(lines.len(), 1, "one run, one line:\n{map}");
    let mut f = lines[0].splitn(3, ' ');
    let start = usize::from_str_radix(f.next().unwrap(), 16).expect("START in hex");
    let size = usize::from_str_radix(f.next().unwrap(), 16).expect("SIZE in hex");
    assert_eq!(f.next(), Some(want.as_str()));
    assert!(size > 0);
    assert!(
        executable_ranges()
            .iter()
            .any(|&(lo, hi)| lo <= start && start + size <= hi),
        "{start:#x}+{size:#x} is not in an executable mapping"
    );
    isa::set_perf_map(false);
    std::fs::remove_file(isa::perf_map::path()).expect("the map removed");
}
