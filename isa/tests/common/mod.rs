//! Helpers shared by the isa integration tests: assemble with llvm-mc-16, run a
//! wave over the result, a Vec-backed global memory.
#![allow(dead_code)]

use std::process::Command;
use std::sync::{Arc, Mutex};

use isa::{
    Apertures, GlobalMemory, HostRegion, MemoryRegion, Program, SubRegion, Wave, WaveContext,
    WaveExit,
};

/// A test-only global memory: a list of host regions (a region's device address is
/// its host address).
#[derive(Default)]
pub struct TestMemory {
    pub regions: Mutex<Vec<Arc<dyn MemoryRegion>>>,
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
    pub fn alloc(&self, len: u64) -> Arc<HostRegion> {
        let r = Arc::new(HostRegion::zeroed(len));
        self.regions.lock().unwrap().push(r.clone());
        r
    }

    /// A region of `len` bytes whose host allocation reaches `guard` bytes beyond
    /// either end (outside the region): no other region of this memory lies within
    /// `guard` bytes of it, so that an access straying past an end faults, wherever
    /// the allocator puts the other regions (a program's code, allocated in the same
    /// heap, may otherwise follow it, and a stray store then rewrites the code).
    /// Returns the allocation, whose bytes `guard..guard + len` the region is, and the
    /// region's device address.
    pub fn alloc_guarded(&self, len: u64, guard: u64) -> (Arc<HostRegion>, u64) {
        let backing = Arc::new(HostRegion::zeroed(len + 2 * guard));
        let parent: Arc<dyn MemoryRegion> = backing.clone();
        let window = SubRegion::new(parent, guard, len).expect("the window fits");
        let base = window.device_base();
        self.regions.lock().unwrap().push(Arc::new(window));
        (backing, base)
    }
}

/// Assembles gfx90a source lines with llvm-mc-16; returns (text line, bytes) per
/// instruction in order.
pub fn assemble(src: &str) -> Vec<(String, Vec<u8>)> {
    let out = Command::new("llvm-mc-16")
        .args(["-arch=amdgcn", "-mcpu=gfx90a", "-show-encoding"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(src.as_bytes())?;
            c.wait_with_output()
        })
        .expect("llvm-mc-16 runs");
    assert!(
        out.status.success(),
        "llvm-mc-16 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "llvm-mc-16 complained: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (text, enc) = l.split_once("; encoding: [")?;
            let bytes = enc
                .trim_end_matches(']')
                .split(',')
                .map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap())
                .collect();
            Some((text.trim().to_string(), bytes))
        })
        .collect()
}

/// Disassembles raw bytes (one instruction per line) with llvm-mc-16; returns the text
/// of each decoded instruction.
pub fn llvm_disassemble(lines: &[Vec<u8>]) -> Vec<String> {
    let input: String = lines
        .iter()
        .map(|b| {
            b.iter()
                .map(|x| format!("{x:#04x}"))
                .collect::<Vec<_>>()
                .join(",")
                + "\n"
        })
        .collect();
    let out = Command::new("llvm-mc-16")
        .args(["-arch=amdgcn", "-mcpu=gfx90a", "-disassemble"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(input.as_bytes())?;
            c.wait_with_output()
        })
        .expect("llvm-mc-16 runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with('.'))
        .collect()
}

/// A program assembled from `src` (s_endpgm appended) in its own region.
pub struct Code {
    pub region: Arc<HostRegion>,
    pub program: Program,
    /// Byte offset of each instruction.
    pub offsets: Vec<u64>,
}

pub fn code(mem: &TestMemory, src: &str) -> Code {
    let insts = assemble(&format!("{src}\ns_endpgm\n"));
    let bytes: Vec<u8> = insts.iter().flat_map(|(_, b)| b.clone()).collect();
    let mut offsets = Vec::new();
    let mut off = 0u64;
    for (_, b) in &insts {
        offsets.push(off);
        off += b.len() as u64;
    }
    let region = mem.alloc(bytes.len() as u64 + 64);
    assert!(region.write_bytes(0, &bytes));
    let r: Arc<dyn MemoryRegion> = region.clone();
    let program = Program::new(&r);
    Code {
        region,
        program,
        offsets,
    }
}

/// A context running `c` over `mem` with `lds` as the LDS, KFD apertures and no stop
/// flag, an instruction budget of `max_instructions` and `yield_after` (see
/// [`WaveContext`]).
pub fn context<'a>(
    mem: &'a TestMemory,
    lds: &'a mut [u8],
    max_instructions: u64,
    yield_after: u64,
) -> WaveContext<'a> {
    WaveContext {
        memory: mem,
        lds,
        apertures: Apertures::KFD,
        stop: None,
        max_instructions,
        yield_after,
    }
}

/// Runs a wave over `c` from its first instruction until it ends (or faults),
/// with `lds` bytes of LDS.
pub fn run_wave(
    mem: &TestMemory,
    c: &Code,
    wave: &mut Wave,
    lds: &mut [u8],
) -> Result<WaveExit, isa::Fault> {
    wave.run(&c.program, &mut context(mem, lds, 1_000_000, u64::MAX))
}

/// Assembles `src`, runs it on a fresh wave prepared by `setup` with EXEC = all
/// lanes (unless `setup` changes it), and returns the wave.
pub fn exec(mem: &TestMemory, src: &str, setup: impl FnOnce(&mut Wave)) -> Wave {
    let c = code(mem, src);
    let mut w = Wave::new();
    w.set_exec(u64::MAX);
    w.pc = c.region.device_base();
    setup(&mut w);
    let mut lds = vec![0u8; 4096];
    let exit = run_wave(mem, &c, &mut w, &mut lds).expect("wave runs");
    assert_eq!(exit, WaveExit::Ended);
    w
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
    /// A lane value: mostly edge values and small numbers, so that carries,
    /// equalities and sign changes occur.
    pub fn value(&mut self) -> u32 {
        match self.below(10) {
            0 => 0,
            1 => u32::MAX,
            2 => 0x8000_0000,
            3 => 0x7FFF_FFFF,
            4 => self.below(4) as u32,
            5 => u32::MAX - self.below(4) as u32,
            // High dwords of f64 specials: infinity, quiet and signalling NaNs, a
            // denormal, 1.0.
            6 => *[
                0x7FF0_0000,
                0x7FF8_0000,
                0x7FF4_0000,
                0x000F_FFFF,
                0x3FF0_0000,
            ]
            .get(self.below(5))
            .unwrap_or(&0),
            _ => self.next() as u32,
        }
    }
}
