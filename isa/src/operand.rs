//! Decoded operands: the shared operand-code numbering (the `HWEncoding` of each
//! register in LLVM's `llvm/lib/Target/AMDGPU/SIRegisterInfo.td`, and the source
//! operand tables of AMD's MI200 ISA guide, "Microcode Formats").

use std::fmt;

/// Scalar operand codes with a fixed meaning (`SIRegisterInfo.td`, `HWEncoding`).
pub mod code {
    /// `flat_scratch_lo` (a pair from here is `flat_scratch`).
    pub const FLAT_SCRATCH_LO: u8 = 102;
    /// `xnack_mask_lo`.
    pub const XNACK_MASK_LO: u8 = 104;
    /// `vcc_lo` (a pair from here is `vcc`).
    pub const VCC_LO: u8 = 106;
    /// `vcc_hi`.
    pub const VCC_HI: u8 = 107;
    /// `ttmp0`; `ttmp15` is 123.
    pub const TTMP0: u8 = 108;
    /// `m0`.
    pub const M0: u8 = 124;
    /// Reserved on GFX9 (`null`): reads 0, writes are dropped.
    pub const NULL: u8 = 125;
    /// `exec_lo` (a pair from here is `exec`).
    pub const EXEC_LO: u8 = 126;
    /// `exec_hi`.
    pub const EXEC_HI: u8 = 127;
    /// `src_shared_base`.
    pub const SHARED_BASE: u8 = 235;
    /// `src_shared_limit`.
    pub const SHARED_LIMIT: u8 = 236;
    /// `src_private_base`.
    pub const PRIVATE_BASE: u8 = 237;
    /// `src_private_limit`.
    pub const PRIVATE_LIMIT: u8 = 238;
    /// `src_pops_exiting_wave_id`.
    pub const POPS_EXITING_WAVE_ID: u8 = 239;
    /// `src_vccz`.
    pub const VCCZ: u8 = 251;
    /// `src_execz`.
    pub const EXECZ: u8 = 252;
    /// `src_scc`.
    pub const SCC: u8 = 253;
    /// `src_lds_direct` (rejected by the gfx90a assembler).
    pub const LDS_DIRECT: u8 = 254;
    /// A literal dword follows the instruction.
    pub const LITERAL: u16 = 255;
}

/// One decoded operand. Widths (`count`) are in dwords and come from the opcode's
/// generated shape, so a 64-bit operand names a register pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// Registers of the scalar file by operand code 0..=127: `s0`–`s101`,
    /// `flat_scratch`, `xnack_mask`, `vcc`, `ttmp0`–`ttmp15`, `m0`, `null`, `exec`.
    /// `count` consecutive codes from `code`.
    Sreg {
        /// First operand code (0..=127).
        code: u8,
        /// Number of dwords.
        count: u8,
    },
    /// Vector registers `v[index .. index+count]`.
    Vgpr {
        /// First VGPR (0..=255).
        index: u8,
        /// Number of dwords.
        count: u8,
    },
    /// Accumulation registers `a[index .. index+count]`.
    Agpr {
        /// First AGPR (0..=255).
        index: u8,
        /// Number of dwords.
        count: u8,
    },
    /// An inline constant (codes 128..=208 integers 0..64 and -1..-16, 240..=248 float
    /// constants), already expanded for the operand's width: integers sign-extended,
    /// floats as the f32 pattern (32-bit operands) or f64 pattern (64-bit operands).
    Const {
        /// The operand code (for printing).
        code: u8,
        /// The operand's bits.
        value: u64,
    },
    /// The literal dword that follows a 32-bit encoding.
    Literal {
        /// The literal.
        value: u32,
        /// Operand width in dwords (a 64-bit operand zero-extends it).
        count: u8,
    },
    /// A value that comes from wave or device state: apertures (235–238),
    /// `src_pops_exiting_wave_id` (239), `src_vccz`/`src_execz`/`src_scc` (251–253),
    /// `src_lds_direct` (254).
    Special {
        /// The operand code.
        code: u8,
        /// Operand width in dwords.
        count: u8,
    },
}

impl Operand {
    /// Width in dwords.
    pub fn count(&self) -> u8 {
        match *self {
            Operand::Sreg { count, .. }
            | Operand::Vgpr { count, .. }
            | Operand::Agpr { count, .. }
            | Operand::Literal { count, .. }
            | Operand::Special { count, .. } => count,
            Operand::Const { .. } => 1,
        }
    }

    /// `vcc` as a 64-bit operand (implicit operand of the 32-bit VALU encodings).
    pub const VCC: Operand = Operand::Sreg {
        code: code::VCC_LO,
        count: 2,
    };
}

/// Value of the inline constant `code` (128..=208, 240..=248) for an operand of
/// `count` dwords; `None` for other codes.
pub fn inline_constant(code: u16, count: u8) -> Option<u64> {
    let wide = count >= 2;
    match code {
        128..=192 => Some(u64::from(code) - 128),
        193..=208 => Some((192 - i64::from(code)) as u64),
        240..=248 => {
            let (f32_bits, f64_bits): (u32, u64) = match code {
                240 => (0x3F00_0000, 0x3FE0_0000_0000_0000),
                241 => (0xBF00_0000, 0xBFE0_0000_0000_0000),
                242 => (0x3F80_0000, 0x3FF0_0000_0000_0000),
                243 => (0xBF80_0000, 0xBFF0_0000_0000_0000),
                244 => (0x4000_0000, 0x4000_0000_0000_0000),
                245 => (0xC000_0000, 0xC000_0000_0000_0000),
                246 => (0x4080_0000, 0x4010_0000_0000_0000),
                247 => (0xC080_0000, 0xC010_0000_0000_0000),
                _ => (0x3E22_F983, 0x3FC4_5F30_6DC9_C882),
            };
            Some(if wide { f64_bits } else { u64::from(f32_bits) })
        }
        _ => None,
    }
}

/// The inline-constant code whose value a literal of an operand of `count` dwords
/// equals, if any (how LLVM's printer shows such literals).
fn literal_as_inline(value: u32, count: u8) -> Option<u8> {
    let v = value as i32;
    if (0..=64).contains(&v) {
        return Some((128 + v) as u8);
    }
    if (-16..=-1).contains(&v) && count < 2 {
        return Some((192 - v) as u8);
    }
    if count >= 2 {
        return None;
    }
    (240u16..=248)
        .find(|&c| inline_constant(c, 1) == Some(u64::from(value)))
        .map(|c| c as u8)
}

/// Printed name of a single scalar-file code (0..=127) as llvm-objdump-16 writes it.
fn sreg_single(code: u8, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match code {
        0..=101 => write!(f, "s{code}"),
        102 => f.write_str("flat_scratch_lo"),
        103 => f.write_str("flat_scratch_hi"),
        104 => f.write_str("xnack_mask_lo"),
        105 => f.write_str("xnack_mask_hi"),
        106 => f.write_str("vcc_lo"),
        107 => f.write_str("vcc_hi"),
        108..=123 => write!(f, "ttmp{}", code - code::TTMP0),
        124 => f.write_str("m0"),
        125 => f.write_str("null"),
        126 => f.write_str("exec_lo"),
        _ => f.write_str("exec_hi"),
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Operand::Sreg { code, count } if count <= 1 => sreg_single(code, f),
            Operand::Sreg { code, count } => {
                let last = u16::from(code) + u16::from(count) - 1;
                match (code, count) {
                    (102, 2) => f.write_str("flat_scratch"),
                    (104, 2) => f.write_str("xnack_mask"),
                    (106, 2) => f.write_str("vcc"),
                    (126, 2) => f.write_str("exec"),
                    (108..=123, _) => write!(
                        f,
                        "ttmp[{}:{}]",
                        code - code::TTMP0,
                        last - u16::from(code::TTMP0)
                    ),
                    _ => write!(f, "s[{code}:{last}]"),
                }
            }
            Operand::Vgpr { index, count } if count <= 1 => write!(f, "v{index}"),
            Operand::Vgpr { index, count } => {
                write!(f, "v[{index}:{}]", u16::from(index) + u16::from(count) - 1)
            }
            Operand::Agpr { index, count } if count <= 1 => write!(f, "a{index}"),
            Operand::Agpr { index, count } => {
                write!(f, "a[{index}:{}]", u16::from(index) + u16::from(count) - 1)
            }
            Operand::Const { code, .. } => match code {
                128..=192 => write!(f, "{}", i32::from(code) - 128),
                193..=208 => write!(f, "{}", 192 - i32::from(code)),
                240 => f.write_str("0.5"),
                241 => f.write_str("-0.5"),
                242 => f.write_str("1.0"),
                243 => f.write_str("-1.0"),
                244 => f.write_str("2.0"),
                245 => f.write_str("-2.0"),
                246 => f.write_str("4.0"),
                247 => f.write_str("-4.0"),
                _ => f.write_str("0.15915494"),
            },
            // llvm-objdump prints a literal that an inline constant could express as that
            // constant.
            Operand::Literal { value, count } => match literal_as_inline(value, count) {
                Some(code) => Operand::Const { code, value: 0 }.fmt(f),
                None => write!(f, "{value:#x}"),
            },
            Operand::Special { code, .. } => f.write_str(match code {
                code::SHARED_BASE => "src_shared_base",
                code::SHARED_LIMIT => "src_shared_limit",
                code::PRIVATE_BASE => "src_private_base",
                code::PRIVATE_LIMIT => "src_private_limit",
                code::POPS_EXITING_WAVE_ID => "src_pops_exiting_wave_id",
                code::VCCZ => "src_vccz",
                code::EXECZ => "src_execz",
                code::SCC => "src_scc",
                _ => "src_lds_direct",
            }),
        }
    }
}
