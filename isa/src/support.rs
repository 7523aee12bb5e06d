//! "Does the engine execute this instruction?" — answered by the executor itself.
//!
//! [`is_executable`] runs the instruction once, on a scratch wave with every lane
//! active, an empty global memory (every global access faults) and a zeroed 64 KiB
//! LDS, and reports whether the executor took it or answered
//! [`Fault::Unsupported`]. Any other outcome (a memory fault, a trap, a branch) means
//! the executor has an implementation. Because the answer comes from the same code
//! path a dispatch uses, the coverage test and the executor cannot disagree.

use std::sync::Arc;

use crate::error::Fault;
use crate::inst::Instruction;
use crate::memory::{GlobalMemory, HostRegion, MemoryRegion};
use crate::program::Program;
use crate::state::{Apertures, WaveContext};
use crate::wave::Wave;

/// A global memory with nothing in it.
struct NoMemory;

impl GlobalMemory for NoMemory {
    fn region(&self, _addr: u64) -> Option<Arc<dyn MemoryRegion>> {
        None
    }
}

/// Bytes of LDS the probe wave gets (the gfx90a maximum).
const PROBE_LDS: usize = 65536;

/// Whether the engine executes `inst` (with its operands and modifiers).
///
/// Cost: one scratch wave (about 130 KiB zeroed) per call; callers probing many
/// instructions should deduplicate them first.
pub fn is_executable(inst: &Instruction) -> bool {
    !matches!(probe(inst), Some(Fault::Unsupported { .. }))
}

/// Runs `inst` once on a scratch wave; returns the fault it raised, if any.
pub fn probe(inst: &Instruction) -> Option<Fault> {
    let code: Arc<dyn MemoryRegion> = Arc::new(HostRegion::zeroed(64));
    let program = Program::new(&code);
    let pc = program.base();
    let mut lds = vec![0u8; PROBE_LDS];
    let mut ctx = WaveContext {
        memory: &NoMemory,
        lds: &mut lds,
        apertures: Apertures::KFD,
        stop: None,
        max_instructions: u64::MAX,
        yield_after: u64::MAX,
    };
    let mut wave = Wave::new();
    wave.set_exec(u64::MAX);
    wave.pc = pc;
    // A plausible MODE (round to nearest, no flushing, IEEE, DX10 clamp).
    wave.mode = 0x3F0;
    wave.step(inst, pc, pc + 8, &mut ctx).err()
}
