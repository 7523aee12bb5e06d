//! Errors of the ISA engine: why a word sequence is not a gfx90a instruction
//! ([`DecodeError`]) and why a wave stopped abnormally ([`Fault`]).

/// Why `decode` rejected a word sequence (formats and operands: LLVM's
/// `llvm/lib/Target/AMDGPU/*.td`, as llvm-mc-16 decodes them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The instruction needs more dwords than were available (64-bit encoding or literal).
    #[error("truncated instruction at pc {pc:#x}: needs {needed} dwords, {available} available")]
    Truncated {
        /// Byte address of the instruction.
        pc: u64,
        /// Dwords the encoding needs.
        needed: usize,
        /// Dwords that were available.
        available: usize,
    },
    /// The first dword's format bits match no gfx90a format (or a graphics-only one).
    #[error("invalid encoding {word:#010x} at pc {pc:#x}: {reason}")]
    InvalidFormat {
        /// Byte address of the instruction.
        pc: u64,
        /// The first dword.
        word: u32,
        /// Which format or rule failed.
        reason: &'static str,
    },
    /// The opcode field names no gfx90a instruction of that format.
    #[error("unknown {format} opcode {opcode:#x} at pc {pc:#x} (words {words:08X?})")]
    UnknownOpcode {
        /// Byte address of the instruction.
        pc: u64,
        /// Format name (`SOP2`, `VOP3`, ...).
        format: &'static str,
        /// The opcode field value.
        opcode: u16,
        /// The instruction's dwords (1 or 2).
        words: Vec<u32>,
    },
    /// A field holds a value the instruction cannot take (reserved operand code, literal
    /// in a 64-bit encoding, SEG = 3, ...).
    #[error("invalid operand in {mnemonic} at pc {pc:#x} (words {words:08X?}): {reason}")]
    InvalidOperand {
        /// Byte address of the instruction.
        pc: u64,
        /// Mnemonic of the decoded opcode.
        mnemonic: &'static str,
        /// The instruction's dwords.
        words: Vec<u32>,
        /// What is wrong.
        reason: &'static str,
    },
}

impl DecodeError {
    /// Byte address of the instruction that failed to decode.
    pub fn pc(&self) -> u64 {
        match self {
            Self::Truncated { pc, .. }
            | Self::InvalidFormat { pc, .. }
            | Self::UnknownOpcode { pc, .. }
            | Self::InvalidOperand { pc, .. } => *pc,
        }
    }
}

/// Why a wave stopped before `s_endpgm`. Every variant carries the program counter
/// (byte address) of the instruction responsible.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// A load, store or atomic touched bytes outside every memory region the agent may
    /// access (or straddled two regions). No host memory was touched.
    #[error("memory fault: {} of {size} bytes at device address {address:#x} by the instruction at pc {pc:#x}", if *write { "write" } else { "read" })]
    Memory {
        /// First faulting device address.
        address: u64,
        /// Size of the faulting access in bytes.
        size: u64,
        /// Whether the access writes.
        write: bool,
        /// Byte address of the instruction.
        pc: u64,
        /// The lane whose access faulted (vector memory), if known.
        lane: Option<u32>,
    },
    /// An atomic (or another access that must be naturally aligned) was not.
    #[error("misaligned {size}-byte atomic at device address {address:#x} by the instruction at pc {pc:#x}")]
    MisalignedAtomic {
        /// Device address of the access.
        address: u64,
        /// Access size in bytes.
        size: u64,
        /// Byte address of the instruction.
        pc: u64,
    },
    /// An LDS access fell outside the workgroup's LDS allocation.
    #[error("LDS access of {size} bytes at offset {offset:#x} outside the {lds_size}-byte allocation, at pc {pc:#x}")]
    LdsOutOfRange {
        /// Byte offset into LDS.
        offset: u64,
        /// Access size in bytes.
        size: u64,
        /// Bytes of LDS the workgroup has.
        lds_size: u64,
        /// Byte address of the instruction.
        pc: u64,
    },
    /// The instruction decodes but the engine does not execute it (yet), or one of its
    /// operand forms.
    #[error("unsupported instruction `{mnemonic}` at pc {pc:#x}: {reason}")]
    Unsupported {
        /// Byte address of the instruction.
        pc: u64,
        /// llvm-objdump's mnemonic.
        mnemonic: String,
        /// What is missing.
        reason: String,
    },
    /// The words at `pc` are not a valid gfx90a instruction.
    #[error("illegal instruction: {0}")]
    Illegal(#[from] DecodeError),
    /// The program counter left the code region or is not dword aligned.
    #[error("program counter {pc:#x} is outside the code object or misaligned")]
    BadPc {
        /// The offending program counter.
        pc: u64,
    },
    /// `s_trap` was executed (trap id 2 = `llvm.trap`, e.g. a failed assert).
    #[error("s_trap {trap_id} at pc {pc:#x}")]
    Trap {
        /// Byte address of the `s_trap`.
        pc: u64,
        /// Bits 7:0 of the `s_trap` SIMM16.
        trap_id: u8,
    },
    /// The wave executed more instructions than its budget (a runaway loop).
    #[error("wave exceeded its budget of {limit} instructions (last pc {pc:#x}); raise HSA_SIM_MAX_WAVE_INSTRUCTIONS if this is legitimate")]
    InstructionLimit {
        /// The budget.
        limit: u64,
        /// Byte address of the instruction that exceeded it.
        pc: u64,
    },
    /// The wave was stopped from outside (another wave of the dispatch faulted).
    #[error("wave aborted at pc {pc:#x} because the dispatch is stopping")]
    Aborted {
        /// Where the wave was stopped.
        pc: u64,
    },
}

impl Fault {
    /// The same fault, attributed to `lane` (for memory faults).
    pub fn at_lane(self, lane: usize) -> Fault {
        match self {
            Fault::Memory {
                address,
                size,
                write,
                pc,
                ..
            } => Fault::Memory {
                address,
                size,
                write,
                pc,
                lane: Some(lane as u32),
            },
            other => other,
        }
    }

    /// The lane of a vector memory fault, if known.
    pub fn lane(&self) -> Option<u32> {
        match self {
            Fault::Memory { lane, .. } => *lane,
            _ => None,
        }
    }

    /// The program counter of the instruction responsible.
    pub fn pc(&self) -> u64 {
        match self {
            Self::Memory { pc, .. }
            | Self::MisalignedAtomic { pc, .. }
            | Self::LdsOutOfRange { pc, .. }
            | Self::Unsupported { pc, .. }
            | Self::BadPc { pc }
            | Self::Trap { pc, .. }
            | Self::InstructionLimit { pc, .. }
            | Self::Aborted { pc } => *pc,
            Self::Illegal(e) => e.pc(),
        }
    }
}
