//! The disassembler: `Display` for [`Instruction`] in llvm-objdump-16's syntax for
//! gfx90a (operand order and modifier spelling as LLVM's AMDGPU instruction printer).
//!
//! SOPP branch offsets print as llvm-objdump does (unsigned decimal SIMM16); the
//! `<symbol+offset>` annotation is left to the caller (see `gfx90a-disasm`).

use std::fmt::{self, Display, Formatter, Write};

use crate::generated::opcodes::{DsOp, SmemOp, SopkOp, SoppOp, Vop3pOp};
use crate::inst::{
    Ds, Flat, Instruction, Mtbuf, Mubuf, SdwaDst, Segment, Smem, Sop1, Sop2, Sopc, Sopk, Sopp,
    Valu, ValuEncoding, Vop3p,
};
use crate::operand::Operand;

impl Display for Instruction {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Instruction::Sop2(i) => i.fmt(f),
            Instruction::Sopk(i) => i.fmt(f),
            Instruction::Sop1(i) => i.fmt(f),
            Instruction::Sopc(i) => i.fmt(f),
            Instruction::Sopp(i) => i.fmt(f),
            Instruction::Smem(i) => i.fmt(f),
            Instruction::Valu(i) => i.fmt(f),
            Instruction::Vop3p(i) => i.fmt(f),
            Instruction::Ds(i) => i.fmt(f),
            Instruction::Flat(i) => i.fmt(f),
            Instruction::Mubuf(i) => i.fmt(f),
            Instruction::Mtbuf(i) => i.fmt(f),
        }
    }
}

fn dyn_op(o: &Option<Operand>) -> Option<&dyn Display> {
    o.as_ref().map(|o| o as &dyn Display)
}

/// Writes `mnemonic` followed by the present operands separated by ", ".
fn operands(f: &mut Formatter<'_>, mnemonic: &str, ops: &[Option<&dyn Display>]) -> fmt::Result {
    f.write_str(mnemonic)?;
    let mut first = true;
    for op in ops.iter().flatten() {
        f.write_str(if first { " " } else { ", " })?;
        first = false;
        op.fmt(f)?;
    }
    Ok(())
}

impl Display for Sop2 {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        operands(
            f,
            self.op.mnemonic(),
            &[Some(&self.sdst), Some(&self.ssrc0), Some(&self.ssrc1)],
        )
    }
}

impl Display for Sop1 {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        operands(
            f,
            self.op.mnemonic(),
            &[
                self.sdst.as_ref().map(|o| o as &dyn Display),
                self.ssrc0.as_ref().map(|o| o as &dyn Display),
            ],
        )
    }
}

impl Display for Sopc {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        operands(
            f,
            self.op.mnemonic(),
            &[Some(&self.ssrc0), Some(&self.ssrc1)],
        )
    }
}

/// `hwreg(NAME[, offset, size])` of s_getreg/s_setreg (register IDs and field
/// shifts: namespace `Hwreg` of LLVM's `llvm/lib/Target/AMDGPU/SIDefines.h`).
struct Hwreg(u16);

impl Display for Hwreg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let id = self.0 & 0x3F;
        let offset = (self.0 >> 6) & 0x1F;
        let size = (self.0 >> 11) + 1;
        let name = match id {
            1 => Some("HW_REG_MODE"),
            2 => Some("HW_REG_STATUS"),
            3 => Some("HW_REG_TRAPSTS"),
            4 => Some("HW_REG_HW_ID"),
            5 => Some("HW_REG_GPR_ALLOC"),
            6 => Some("HW_REG_LDS_ALLOC"),
            7 => Some("HW_REG_IB_STS"),
            15 => Some("HW_REG_SH_MEM_BASES"),
            16 => Some("HW_REG_TBA_LO"),
            17 => Some("HW_REG_TBA_HI"),
            18 => Some("HW_REG_TMA_LO"),
            19 => Some("HW_REG_TMA_HI"),
            _ => None,
        };
        f.write_str("hwreg(")?;
        match name {
            Some(n) => f.write_str(n)?,
            None => write!(f, "{id}")?,
        }
        if offset != 0 || size != 32 {
            write!(f, ", {offset}, {size}")?;
        }
        f.write_str(")")
    }
}

impl Display for Sopk {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mn = self.op.mnemonic();
        let imm = format!("{:#x}", self.simm16);
        match self.op {
            SopkOp::SGetregB32 => operands(
                f,
                mn,
                &[
                    self.sdst.as_ref().map(|o| o as &dyn Display),
                    Some(&Hwreg(self.simm16)),
                ],
            ),
            SopkOp::SSetregB32 => operands(
                f,
                mn,
                &[
                    Some(&Hwreg(self.simm16)),
                    self.sdst.as_ref().map(|o| o as &dyn Display),
                ],
            ),
            SopkOp::SSetregImm32B32 => {
                let lit = self.literal.unwrap_or(0);
                operands(f, mn, &[Some(&Hwreg(self.simm16)), Some(&lit)])
            }
            _ => operands(
                f,
                mn,
                &[self.sdst.as_ref().map(|o| o as &dyn Display), Some(&imm)],
            ),
        }
    }
}

impl Display for Sopp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mn = self.op.mnemonic();
        let s = self.simm16;
        match self.op {
            SoppOp::SWaitcnt => {
                let vm = (s & 0xF) | ((s >> 14) & 0x3) << 4;
                let exp = (s >> 4) & 0x7;
                let lgkm = (s >> 8) & 0xF;
                let all = vm == 63 && exp == 7 && lgkm == 15;
                f.write_str(mn)?;
                if vm != 63 || all {
                    write!(f, " vmcnt({vm})")?;
                }
                if exp != 7 || all {
                    write!(f, " expcnt({exp})")?;
                }
                if lgkm != 15 || all {
                    write!(f, " lgkmcnt({lgkm})")?;
                }
                Ok(())
            }
            SoppOp::SEndpgm
            | SoppOp::SEndpgmSaved
            | SoppOp::SEndpgmOrderedPsDone
            | SoppOp::SBarrier
            | SoppOp::SWakeup
            | SoppOp::SIcacheInv
            | SoppOp::STtracedata
            | SoppOp::SSetGprIdxOff
                if s == 0 =>
            {
                f.write_str(mn)
            }
            _ => write!(f, "{mn} {s}"),
        }
    }
}

impl Display for Smem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mn = self.op.mnemonic();
        let imm = self.imm_offset.map(|o| {
            if o < 0 {
                format!("-{:#x}", -(o as i64))
            } else {
                format!("{o:#x}")
            }
        });
        let sd = self.sdata.as_ref().map(|o| o as &dyn Display);
        let sb = self.sbase.as_ref().map(|o| o as &dyn Display);
        match (&self.soffset, &imm) {
            (Some(so), Some(i)) => {
                operands(f, mn, &[sd, sb, Some(so)])?;
                write!(f, " offset:{i}")?;
            }
            (Some(so), None) => operands(f, mn, &[sd, sb, Some(so)])?,
            (None, Some(i)) if self.sbase.is_some() || self.op == SmemOp::SAtcProbe => {
                operands(f, mn, &[sd, sb, Some(i)])?
            }
            _ => operands(f, mn, &[sd, sb])?,
        }
        if self.glc {
            f.write_str(" glc")?;
        }
        Ok(())
    }
}

/// A VALU source with its NEG/ABS modifiers and the SDWA SRCi_SEXT flag.
struct Modded<'a> {
    op: &'a Operand,
    neg: bool,
    abs: bool,
    sext: bool,
}

impl Display for Modded<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.sext {
            f.write_str("sext(")?;
        }
        if self.neg {
            f.write_char('-')?;
        }
        if self.abs {
            write!(f, "|{}|", self.op)?;
        } else {
            self.op.fmt(f)?;
        }
        if self.sext {
            f.write_char(')')?;
        }
        Ok(())
    }
}

fn bit_list(f: &mut Formatter<'_>, name: &str, bits: u8, n: usize) -> fmt::Result {
    write!(f, " {name}:[")?;
    for i in 0..n {
        if i > 0 {
            f.write_char(',')?;
        }
        write!(f, "{}", (bits >> i) & 1)?;
    }
    f.write_char(']')
}

impl Display for Valu {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let inst = Instruction::Valu(self.clone());
        let mn = inst.mnemonic();
        let sext = match self.encoding {
            ValuEncoding::Sdwa(s) => s.sext,
            _ => 0,
        };
        let modded: Vec<Option<Modded<'_>>> = self
            .src
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_ref().map(|op| Modded {
                    op,
                    neg: self.neg >> i & 1 == 1,
                    abs: self.abs >> i & 1 == 1,
                    sext: sext >> i & 1 == 1,
                })
            })
            .collect();
        let mut list: Vec<Option<&dyn Display>> = vec![
            self.vdst.as_ref().map(|o| o as &dyn Display),
            self.sdst.as_ref().map(|o| o as &dyn Display),
        ];
        list.extend(modded.iter().map(|m| m.as_ref().map(|m| m as &dyn Display)));
        operands(f, &mn, &list)?;
        if self.clamp {
            f.write_str(" clamp")?;
        }
        match self.omod {
            1 => f.write_str(" mul:2")?,
            2 => f.write_str(" mul:4")?,
            3 => f.write_str(" div:2")?,
            _ => {}
        }
        if self.op_sel != 0 {
            let n = self.src.iter().flatten().count() + 1;
            let bits = (self.op_sel & ((1 << (n - 1)) - 1)) | ((self.op_sel >> 3) & 1) << (n - 1);
            bit_list(f, "op_sel", bits, n)?;
        }
        match self.encoding {
            ValuEncoding::Sdwa(s) => {
                const SEL: [&str; 7] = [
                    "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD",
                ];
                const UNUSED: [&str; 4] =
                    ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "UNUSED_3"];
                let sel = |v: u8| SEL.get(usize::from(v)).copied().unwrap_or("SEL_7");
                if let SdwaDst::Vgpr { sel: ds, unused } = s.dst {
                    write!(
                        f,
                        " dst_sel:{} dst_unused:{}",
                        sel(ds),
                        UNUSED[usize::from(unused & 3)]
                    )?;
                }
                write!(f, " src0_sel:{}", sel(s.src0_sel))?;
                if self.src[1].is_some() {
                    write!(f, " src1_sel:{}", sel(s.src1_sel))?;
                }
            }
            ValuEncoding::Dpp(d) => {
                let c = d.ctrl;
                match c {
                    0x000..=0x0FF => write!(
                        f,
                        " quad_perm:[{},{},{},{}]",
                        c & 3,
                        (c >> 2) & 3,
                        (c >> 4) & 3,
                        (c >> 6) & 3
                    )?,
                    0x101..=0x10F => write!(f, " row_shl:{}", c & 0xF)?,
                    0x111..=0x11F => write!(f, " row_shr:{}", c & 0xF)?,
                    0x121..=0x12F => write!(f, " row_ror:{}", c & 0xF)?,
                    0x130 => f.write_str(" wave_shl:1")?,
                    0x134 => f.write_str(" wave_rol:1")?,
                    0x138 => f.write_str(" wave_shr:1")?,
                    0x13C => f.write_str(" wave_ror:1")?,
                    0x140 => f.write_str(" row_mirror")?,
                    0x141 => f.write_str(" row_half_mirror")?,
                    0x142 => f.write_str(" row_bcast:15")?,
                    0x143 => f.write_str(" row_bcast:31")?,
                    0x150..=0x15F => write!(f, " row_newbcast:{}", c & 0xF)?,
                    _ => write!(f, " dpp_ctrl:{c:#x}")?,
                }
                write!(
                    f,
                    " row_mask:{:#x} bank_mask:{:#x}",
                    d.row_mask, d.bank_mask
                )?;
                if d.bound_ctrl {
                    f.write_str(" bound_ctrl:1")?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl Display for Vop3p {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut list: Vec<Option<&dyn Display>> =
            vec![self.vdst.as_ref().map(|o| o as &dyn Display)];
        list.extend(
            self.src
                .iter()
                .map(|s| s.as_ref().map(|o| o as &dyn Display)),
        );
        operands(f, self.op.mnemonic(), &list)?;
        if let Some(m) = self.mai {
            if m.cbsz != 0 {
                write!(f, " cbsz:{}", m.cbsz)?;
            }
            if m.abid != 0 {
                write!(f, " abid:{}", m.abid)?;
            }
            if m.blgp != 0 {
                write!(f, " blgp:{}", m.blgp)?;
            }
            return Ok(());
        }
        if matches!(
            self.op,
            Vop3pOp::VAccvgprReadB32 | Vop3pOp::VAccvgprWriteB32
        ) {
            return Ok(());
        }
        let n = self.src.iter().flatten().count();
        let mask = (1u8 << n) - 1;
        if self.op_sel & mask != 0 {
            bit_list(f, "op_sel", self.op_sel, n)?;
        }
        if self.op_sel_hi & mask != mask {
            bit_list(f, "op_sel_hi", self.op_sel_hi, n)?;
        }
        if self.neg_lo & mask != 0 {
            bit_list(f, "neg_lo", self.neg_lo, n)?;
        }
        if self.neg_hi & mask != 0 {
            bit_list(f, "neg_hi", self.neg_hi, n)?;
        }
        if self.clamp {
            f.write_str(" clamp")?;
        }
        Ok(())
    }
}

impl Display for Ds {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        operands(
            f,
            self.op.mnemonic(),
            &[
                dyn_op(&self.vdst),
                dyn_op(&self.addr),
                dyn_op(&self.data0),
                dyn_op(&self.data1),
            ],
        )?;
        let two = matches!(
            self.op,
            DsOp::DsWrite2B32
                | DsOp::DsWrite2st64B32
                | DsOp::DsWrite2B64
                | DsOp::DsWrite2st64B64
                | DsOp::DsRead2B32
                | DsOp::DsRead2st64B32
                | DsOp::DsRead2B64
                | DsOp::DsRead2st64B64
                | DsOp::DsWrxchg2RtnB32
                | DsOp::DsWrxchg2st64RtnB32
                | DsOp::DsWrxchg2RtnB64
                | DsOp::DsWrxchg2st64RtnB64
        );
        if two {
            if self.offset0 != 0 {
                write!(f, " offset0:{}", self.offset0)?;
            }
            if self.offset1 != 0 {
                write!(f, " offset1:{}", self.offset1)?;
            }
        } else if self.offset() != 0 {
            if self.op == DsOp::DsSwizzleB32 {
                write!(f, " offset:{:#x}", self.offset())?;
            } else {
                write!(f, " offset:{}", self.offset())?;
            }
        }
        if self.gds {
            f.write_str(" gds")?;
        }
        Ok(())
    }
}

impl Display for Flat {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let inst = Instruction::Flat(self.clone());
        let mn = inst.mnemonic();
        let off = "off";
        let vaddr: Option<&dyn Display> = match (self.seg, &self.vaddr) {
            (_, Some(v)) => Some(v),
            (Segment::Scratch, None) => Some(&off),
            _ => None,
        };
        let saddr: Option<&dyn Display> = match (self.seg, &self.saddr) {
            (Segment::Flat, _) => None,
            (_, Some(s)) => Some(s),
            (_, None) => Some(&off),
        };
        operands(
            f,
            &mn,
            &[dyn_op(&self.vdst), vaddr, dyn_op(&self.data), saddr],
        )?;
        if self.offset != 0 {
            write!(f, " offset:{}", self.offset)?;
        }
        if self.glc {
            f.write_str(" glc")?;
        }
        if self.slc {
            f.write_str(" slc")?;
        }
        if self.scc {
            f.write_str(" scc")?;
        }
        if self.lds {
            f.write_str(" lds")?;
        }
        Ok(())
    }
}

fn buffer_operands(
    f: &mut Formatter<'_>,
    mn: &str,
    vdata: &Option<Operand>,
    vaddr: &Option<Operand>,
    srsrc: &Option<Operand>,
    soffset: &Operand,
) -> fmt::Result {
    let Some(srsrc) = srsrc else {
        return f.write_str(mn);
    };
    let off = "off";
    let va: &dyn Display = match vaddr {
        Some(v) => v,
        None => &off,
    };
    operands(
        f,
        mn,
        &[
            vdata.as_ref().map(|o| o as &dyn Display),
            Some(va),
            Some(srsrc),
            Some(soffset),
        ],
    )
}

impl Display for Mubuf {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        buffer_operands(
            f,
            self.op.mnemonic(),
            &self.vdata,
            &self.vaddr,
            &self.srsrc,
            &self.soffset,
        )?;
        if self.srsrc.is_none() {
            return Ok(());
        }
        if self.idxen {
            f.write_str(" idxen")?;
        }
        if self.offen {
            f.write_str(" offen")?;
        }
        if self.offset != 0 {
            write!(f, " offset:{}", self.offset)?;
        }
        if self.glc {
            f.write_str(" glc")?;
        }
        if self.slc {
            f.write_str(" slc")?;
        }
        if self.scc {
            f.write_str(" scc")?;
        }
        if self.lds {
            f.write_str(" lds")?;
        }
        Ok(())
    }
}

impl Display for Mtbuf {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        buffer_operands(
            f,
            self.op.mnemonic(),
            &self.vdata,
            &self.vaddr,
            &self.srsrc,
            &self.soffset,
        )?;
        write!(f, " format:[{},{}]", self.dfmt, self.nfmt)?;
        if self.idxen {
            f.write_str(" idxen")?;
        }
        if self.offen {
            f.write_str(" offen")?;
        }
        if self.offset != 0 {
            write!(f, " offset:{}", self.offset)?;
        }
        if self.glc {
            f.write_str(" glc")?;
        }
        if self.slc {
            f.write_str(" slc")?;
        }
        if self.scc {
            f.write_str(" scc")?;
        }
        Ok(())
    }
}
