//! The decoded form of a gfx90a instruction. The executor and the disassembler both
//! consume this form, so they cannot disagree about what an encoding means.
//!
//! Implicit operands of the 32-bit VALU encodings (`vcc` as carry-out, carry-in,
//! `v_cndmask_b32` mask, VOPC destination) are made explicit by the decoder, so a
//! 32-bit and a 64-bit encoding of the same op look alike to the executor.

use crate::generated::opcodes::{
    DsOp, FlatOp, MtbufOp, MubufOp, SmemOp, Sop1Op, Sop2Op, SopcOp, SopkOp, SoppOp, Vop3pOp, VopOp,
};
use crate::operand::Operand;

/// One decoded instruction (LLVM's `llvm/lib/Target/AMDGPU/*Instructions.td` give
/// each format's layout).
#[derive(Clone, Debug, PartialEq)]
pub enum Instruction {
    /// SOP2: two scalar sources, one scalar destination.
    Sop2(Sop2),
    /// SOPK: scalar register and a 16-bit immediate.
    Sopk(Sopk),
    /// SOP1: one scalar source.
    Sop1(Sop1),
    /// SOPC: scalar compare (writes SCC).
    Sopc(Sopc),
    /// SOPP: program control with a 16-bit immediate.
    Sopp(Sopp),
    /// SMEM: scalar memory.
    Smem(Smem),
    /// VOP1 / VOP2 / VOPC / VOP3A / VOP3B, incl. SDWA and DPP forms.
    Valu(Valu),
    /// VOP3P: packed math, dot products, MAI (MFMA) and AGPR moves.
    Vop3p(Vop3p),
    /// DS: LDS / GDS.
    Ds(Ds),
    /// FLAT / GLOBAL / SCRATCH.
    Flat(Flat),
    /// MUBUF: untyped buffer access.
    Mubuf(Mubuf),
    /// MTBUF: typed buffer access.
    Mtbuf(Mtbuf),
}

/// SOP2 (`s_add_u32 s0, s1, s2`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sop2 {
    /// Opcode.
    pub op: Sop2Op,
    /// Destination (SDST).
    pub sdst: Operand,
    /// First source (SSRC0).
    pub ssrc0: Operand,
    /// Second source (SSRC1).
    pub ssrc1: Operand,
}

/// SOPK (`s_movk_i32 s0, 0x8000`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sopk {
    /// Opcode.
    pub op: SopkOp,
    /// SDST (a source for `s_cmpk_*` and `s_setreg_b32`); `None` if unused.
    pub sdst: Option<Operand>,
    /// The raw 16-bit immediate.
    pub simm16: u16,
    /// The literal of `s_setreg_imm32_b32`.
    pub literal: Option<u32>,
}

/// SOP1 (`s_mov_b64 s[0:1], s[2:3]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sop1 {
    /// Opcode.
    pub op: Sop1Op,
    /// Destination, if the opcode has one.
    pub sdst: Option<Operand>,
    /// Source, if the opcode has one.
    pub ssrc0: Option<Operand>,
}

/// SOPC (`s_cmp_eq_u32 s0, s1`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sopc {
    /// Opcode.
    pub op: SopcOp,
    /// First source.
    pub ssrc0: Operand,
    /// Second source.
    pub ssrc1: Operand,
}

/// SOPP (`s_branch`, `s_waitcnt`, `s_endpgm`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct Sopp {
    /// Opcode.
    pub op: SoppOp,
    /// The raw 16-bit immediate (branch offsets are signed dwords from the next instruction).
    pub simm16: u16,
}

/// SMEM (`s_load_dwordx2 s[0:1], s[4:5], 0x10`), layout of LLVM's `SMInstructions.td`
/// (GFX8/9 form).
#[derive(Clone, Debug, PartialEq)]
pub struct Smem {
    /// Opcode.
    pub op: SmemOp,
    /// SDATA: destination of loads, data of stores/atomics.
    pub sdata: Option<Operand>,
    /// SBASE: the 64-bit base address pair (or buffer descriptor quad).
    pub sbase: Option<Operand>,
    /// Immediate byte offset (IMM = 1), 21-bit signed.
    pub imm_offset: Option<i32>,
    /// SGPR byte offset (IMM = 0, or SOFFSET_EN = 1).
    pub soffset: Option<Operand>,
    /// GLC bit.
    pub glc: bool,
}

/// Where an SDWA instruction's result goes (the SDWA fields of LLVM's
/// `llvm/lib/Target/AMDGPU/VOPInstructions.td`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdwaDst {
    /// VOP1/VOP2 ("SDWA-A"): the result is merged into part of the VDST VGPR.
    Vgpr {
        /// DST_SEL — 0..=3 bytes, 4/5 words, 6 dword (7 reserved).
        sel: u8,
        /// DST_UNUSED: 0 pad, 1 sign-extend, 2 preserve (3 reserved).
        unused: u8,
    },
    /// VOPC ("SDWA-B"): the lane mask goes to VCC (SD = 0) or to the SDST scalar
    /// operand (SD = 1); the chosen operand is [`Valu::vdst`]. D1 bits 15:8 hold
    /// SD/SDST here, not DST_SEL/DST_UNUSED/CLAMP/OMOD.
    Mask,
}

/// SDWA control dword (the SDWA fields of LLVM's `VOPInstructions.td`). Source
/// modifiers (NEG/ABS) and the S0/S1 scalar flags are folded into [`Valu`]'s `neg`/`abs` and operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sdwa {
    /// Destination form: a VGPR part (VOP1/VOP2) or a lane mask (VOPC).
    pub dst: SdwaDst,
    /// SRC0_SEL.
    pub src0_sel: u8,
    /// SRC1_SEL.
    pub src1_sel: u8,
    /// SRC0_SEXT / SRC1_SEXT (bit 0 / bit 1).
    pub sext: u8,
}

/// DPP control dword (the DPP fields of LLVM's
/// `llvm/lib/Target/AMDGPU/VOPInstructions.td`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dpp {
    /// DPP_CTRL (9 bits).
    pub ctrl: u16,
    /// BOUND_CTRL.
    pub bound_ctrl: bool,
    /// BANK_MASK.
    pub bank_mask: u8,
    /// ROW_MASK.
    pub row_mask: u8,
}

/// Which encoding a VALU instruction came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValuEncoding {
    /// 32-bit VOP1 / VOP2 / VOPC ("e32").
    E32,
    /// 64-bit VOP3A / VOP3B ("e64", or a VOP3-only op).
    Vop3,
    /// VOP1/VOP2/VOPC with an SDWA dword.
    Sdwa(Sdwa),
    /// VOP1/VOP2/VOPC with a DPP dword.
    Dpp(Dpp),
}

/// A VALU instruction: VOP1, VOP2, VOPC, VOP3A, VOP3B (and their SDWA/DPP forms).
#[derive(Clone, Debug, PartialEq)]
pub struct Valu {
    /// Opcode (VOP3 numbering).
    pub op: VopOp,
    /// Encoding.
    pub encoding: ValuEncoding,
    /// Destination: VGPRs, or an SGPR operand for compares (`vcc` for e32) and
    /// `v_readlane_b32`/`v_readfirstlane_b32`.
    pub vdst: Option<Operand>,
    /// Second destination: the carry-out / `v_div_scale` flag (VOP3B SDST, `vcc` for e32).
    pub sdst: Option<Operand>,
    /// Sources in the order llvm-objdump prints them. For `v_madmk_f32` and
    /// `v_madak_f32` the literal K is placed so that the result is src0·src1 + src2.
    pub src: [Option<Operand>; 3],
    /// ABS bits (bit i = source i).
    pub abs: u8,
    /// NEG bits (bit i = source i).
    pub neg: u8,
    /// CLAMP.
    pub clamp: bool,
    /// OMOD: 0 none, 1 ×2, 2 ×4, 3 ÷2.
    pub omod: u8,
    /// OP_SEL (bits 0–2 sources, bit 3 destination).
    pub op_sel: u8,
}

/// MAI (MFMA) fields of a VOP3P instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mai {
    /// CBSZ.
    pub cbsz: u8,
    /// ABID.
    pub abid: u8,
    /// BLGP.
    pub blgp: u8,
}

/// VOP3P (packed math, `v_pk_*`, dot, MFMA, `v_accvgpr_*`).
#[derive(Clone, Debug, PartialEq)]
pub struct Vop3p {
    /// Opcode.
    pub op: Vop3pOp,
    /// Destination.
    pub vdst: Option<Operand>,
    /// Sources.
    pub src: [Option<Operand>; 3],
    /// OP_SEL bits (bit i = source i).
    pub op_sel: u8,
    /// OP_SEL_HI bits.
    pub op_sel_hi: u8,
    /// NEG_LO bits.
    pub neg_lo: u8,
    /// NEG_HI bits.
    pub neg_hi: u8,
    /// CLAMP (not for MAI, where bit 15 is ACC_CD).
    pub clamp: bool,
    /// MFMA fields, for the MAI opcodes.
    pub mai: Option<Mai>,
}

/// DS (`ds_write_b32 v1, v2 offset:16`), layout of LLVM's `DSInstructions.td`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ds {
    /// Opcode.
    pub op: DsOp,
    /// Destination registers (returning ops and reads).
    pub vdst: Option<Operand>,
    /// Address VGPR (byte offset into LDS).
    pub addr: Option<Operand>,
    /// DATA0.
    pub data0: Option<Operand>,
    /// DATA1.
    pub data1: Option<Operand>,
    /// OFFSET0 (the low byte of the 16-bit offset for single-address ops).
    pub offset0: u8,
    /// OFFSET1 (the high byte of the 16-bit offset for single-address ops).
    pub offset1: u8,
    /// GDS bit.
    pub gds: bool,
}

impl Ds {
    /// The 16-bit byte offset of single-address ops.
    pub fn offset(&self) -> u16 {
        u16::from(self.offset0) | u16::from(self.offset1) << 8
    }
}

/// Address space segment of a FLAT-family instruction (SEG field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    /// `flat_*`: routed by address (apertures).
    Flat,
    /// `scratch_*`: private segment offsets.
    Scratch,
    /// `global_*`: global addresses.
    Global,
}

/// FLAT / GLOBAL / SCRATCH (`global_store_dword v0, v1, s[0:1]`), layout of LLVM's
/// `FLATInstructions.td`.
#[derive(Clone, Debug, PartialEq)]
pub struct Flat {
    /// Opcode (shared numbering).
    pub op: FlatOp,
    /// Segment.
    pub seg: Segment,
    /// Destination (loads, returning atomics).
    pub vdst: Option<Operand>,
    /// VADDR: a 64-bit address, or a 32-bit offset when SADDR is used.
    pub vaddr: Option<Operand>,
    /// DATA (stores, atomics).
    pub data: Option<Operand>,
    /// SADDR (`None` = `off`).
    pub saddr: Option<Operand>,
    /// Immediate byte offset (FLAT: unsigned; GLOBAL/SCRATCH: 13-bit signed).
    pub offset: i32,
    /// GLC (returning form of atomics).
    pub glc: bool,
    /// SLC.
    pub slc: bool,
    /// SCC (bit 25).
    pub scc: bool,
    /// LDS (bit 13).
    pub lds: bool,
}

/// MUBUF (`buffer_store_dword v0, off, s[0:3], s33 offset:32`), layout of LLVM's
/// `BUFInstructions.td` (gfx90a form).
#[derive(Clone, Debug, PartialEq)]
pub struct Mubuf {
    /// Opcode.
    pub op: MubufOp,
    /// VDATA (data, or destination of loads/returning atomics).
    pub vdata: Option<Operand>,
    /// VADDR (index and/or offset; `None` = `off`).
    pub vaddr: Option<Operand>,
    /// SRSRC: the buffer resource descriptor quad.
    pub srsrc: Option<Operand>,
    /// SOFFSET (scalar byte offset, not swizzled).
    pub soffset: Operand,
    /// 12-bit unsigned immediate byte offset.
    pub offset: u16,
    /// OFFEN.
    pub offen: bool,
    /// IDXEN.
    pub idxen: bool,
    /// GLC.
    pub glc: bool,
    /// SLC.
    pub slc: bool,
    /// SCC (bit 15).
    pub scc: bool,
    /// LDS (bit 16).
    pub lds: bool,
}

/// MTBUF (typed buffer), layout of LLVM's `BUFInstructions.td`.
#[derive(Clone, Debug, PartialEq)]
pub struct Mtbuf {
    /// Opcode.
    pub op: MtbufOp,
    /// VDATA.
    pub vdata: Option<Operand>,
    /// VADDR.
    pub vaddr: Option<Operand>,
    /// SRSRC.
    pub srsrc: Option<Operand>,
    /// SOFFSET.
    pub soffset: Operand,
    /// 12-bit immediate offset.
    pub offset: u16,
    /// OFFEN.
    pub offen: bool,
    /// IDXEN.
    pub idxen: bool,
    /// GLC.
    pub glc: bool,
    /// SLC.
    pub slc: bool,
    /// SCC.
    pub scc: bool,
    /// DFMT.
    pub dfmt: u8,
    /// NFMT.
    pub nfmt: u8,
}

impl Instruction {
    /// The mnemonic llvm-objdump-16 prints (with `_e32`/`_e64`/`_sdwa`/`_dpp` suffixes
    /// and the `flat_`/`global_`/`scratch_` prefix).
    pub fn mnemonic(&self) -> std::borrow::Cow<'static, str> {
        use std::borrow::Cow;
        match self {
            Instruction::Sop2(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Sopk(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Sop1(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Sopc(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Sopp(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Smem(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Valu(i) => match i.encoding {
                ValuEncoding::E32 => Cow::Borrowed(i.op.e32_mnemonic().unwrap_or(i.op.mnemonic())),
                ValuEncoding::Vop3 => Cow::Borrowed(i.op.e64_mnemonic().unwrap_or(i.op.mnemonic())),
                ValuEncoding::Sdwa(_) => Cow::Owned(format!("{}_sdwa", i.op.mnemonic())),
                ValuEncoding::Dpp(_) => Cow::Owned(format!("{}_dpp", i.op.mnemonic())),
            },
            Instruction::Vop3p(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Ds(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Flat(i) => Cow::Owned(format!(
                "{}{}",
                match i.seg {
                    Segment::Flat => "flat_",
                    Segment::Scratch => "scratch_",
                    Segment::Global => "global_",
                },
                i.op.mnemonic()
            )),
            Instruction::Mubuf(i) => Cow::Borrowed(i.op.mnemonic()),
            Instruction::Mtbuf(i) => Cow::Borrowed(i.op.mnemonic()),
        }
    }
}
