//! The gfx90a ISA engine: decoder, disassembler and wave interpreter.
//!
//! * [`decode()`] turns dwords into a typed [`Instruction`] (operands with their widths,
//!   modifiers) using opcode tables generated from llvm-mc-16 ([`opcodes`]).
//! * `Display` for [`Instruction`] prints llvm-objdump-16's syntax.
//! * [`Program`] decodes a code region lazily, in straight-line blocks cached per PC
//!   at which waves enter them, and is shared by all waves; [`Wave::run`] executes
//!   it a block and a whole 64-lane wave at a time.
//! * Memory is reached only through [`GlobalMemory`] / [`MemoryRegion`]; every access
//!   is checked, and one outside memory is a [`Fault::Memory`], never a host access.
//! * On x86-64 hosts with AVX2, a straight run of integer VALU and scalar instructions
//!   is compiled to host code when its block is decoded (`valu/jit.rs`, dynasm-rs) and
//!   runs as one step (when every lane is active, if it has vector instructions); that
//!   code reads and writes only the wave's register files and SCC, the vector file's
//!   size checked before each run.
//!
//! The crate knows instructions, registers and lanes, nothing of HSA.

pub mod arch;
mod atomic;
pub mod decode;
pub mod disasm;
pub mod error;
mod fp;
pub mod generated;
pub mod inst;
mod lds;
pub mod memory;
pub mod operand;
mod opinfo;
pub mod perf_map;
pub mod program;
mod salu;
mod sem;
mod simd;
pub mod state;
mod stride;
pub mod support;
mod valu;
mod vmem;
pub mod wave;

pub use arch::{AGPR_BASE, WAVE_SIZE};
pub use decode::decode;
pub use error::{DecodeError, Fault};
pub use generated::opcodes;
pub use inst::Instruction;
pub use memory::{GlobalMemory, HostRegion, MemoryRegion, RegionCache, SubRegion};
pub use operand::Operand;
pub use perf_map::set_perf_map;
pub use program::{BlockCache, Program};
pub use state::{Apertures, WaveContext, WaveExit, WaveState};
pub use support::is_executable;
pub use wave::{set_trace, Wave};
