//! The gfx90a decoder: dwords → [`Instruction`] (formats, operands and modifiers
//! of LLVM's `llvm/lib/Target/AMDGPU/*.td`, checked against llvm-mc-16).
//!
//! Operand widths come from the generated opcode shapes, so a 64-bit operand is a
//! register pair and a float inline constant in it is the f64 pattern.

use crate::error::DecodeError;
use crate::generated::opcodes::{
    DsOp, FlatOp, MtbufOp, MubufOp, SmemOp, Sop1Op, Sop2Op, SopcOp, SopkOp, SoppOp, Vop3pOp, VopOp,
};
use crate::inst::{
    Dpp, Ds, Flat, Instruction, Mai, Mtbuf, Mubuf, Sdwa, SdwaDst, Segment, Smem, Sop1, Sop2, Sopc,
    Sopk, Sopp, Valu, ValuEncoding, Vop3p,
};
use crate::operand::{inline_constant, Operand};

/// Decodes the instruction that starts at `words[0]`, located at byte address `pc`.
///
/// `words` may hold more dwords than the instruction needs (pass at least 2 when
/// available). Returns the instruction and its length in dwords (1 or 2).
///
/// # Errors
/// [`DecodeError`] if the words are not a valid gfx90a instruction or are truncated.
pub fn decode(words: &[u32], pc: u64) -> Result<(Instruction, usize), DecodeError> {
    let Some(&w0) = words.first() else {
        return Err(DecodeError::Truncated {
            pc,
            needed: 1,
            available: 0,
        });
    };
    let mut d = Decoder { words, pc, len: 1 };
    let inst = if w0 >> 31 == 0 {
        match w0 >> 25 {
            0x3E => d.vop32(VopForm::Vopc)?,
            0x3F => d.vop32(VopForm::Vop1)?,
            _ => d.vop32(VopForm::Vop2)?,
        }
    } else {
        match w0 >> 23 {
            0x17D => d.sop1()?,
            0x17E => d.sopc()?,
            0x17F => d.sopp()?,
            _ if w0 >> 28 == 0xB => d.sopk()?,
            _ if w0 >> 30 == 0b10 => d.sop2()?,
            0x1A7 => d.vop3p()?,
            _ => match w0 >> 26 {
                0x30 => d.smem()?,
                0x34 => d.vop3()?,
                0x36 => d.ds()?,
                0x37 => d.flat()?,
                0x38 => d.mubuf()?,
                0x3A => d.mtbuf()?,
                0x31 => return Err(d.invalid_format("EXP is not a gfx90a (compute) format")),
                0x35 => return Err(d.invalid_format("VINTRP is not a gfx90a (compute) format")),
                0x3C => return Err(d.invalid_format("MIMG is not supported")),
                _ => return Err(d.invalid_format("no gfx90a format has these bits")),
            },
        }
    };
    Ok((inst, d.len))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum VopForm {
    Vop1,
    Vop2,
    Vopc,
}

struct Decoder<'a> {
    words: &'a [u32],
    pc: u64,
    len: usize,
}

fn bits(w: u32, hi: u32, lo: u32) -> u32 {
    (w >> lo) & ((1u32 << (hi - lo + 1)) - 1)
}

fn sext(v: u32, width: u32) -> i32 {
    let shift = 32 - width;
    ((v << shift) as i32) >> shift
}

impl<'a> Decoder<'a> {
    fn w0(&self) -> u32 {
        self.words[0]
    }

    fn raw(&self) -> Vec<u32> {
        self.words[..self.len.min(self.words.len())].to_vec()
    }

    fn invalid_format(&self, reason: &'static str) -> DecodeError {
        DecodeError::InvalidFormat {
            pc: self.pc,
            word: self.w0(),
            reason,
        }
    }

    fn unknown(&self, format: &'static str, opcode: u32) -> DecodeError {
        DecodeError::UnknownOpcode {
            pc: self.pc,
            format,
            opcode: opcode as u16,
            words: self.raw(),
        }
    }

    fn bad(&self, mnemonic: &'static str, reason: &'static str) -> DecodeError {
        DecodeError::InvalidOperand {
            pc: self.pc,
            mnemonic,
            words: self.raw(),
            reason,
        }
    }

    /// The second dword of a 64-bit encoding.
    fn w1(&mut self) -> Result<u32, DecodeError> {
        self.len = 2;
        self.words.get(1).copied().ok_or(DecodeError::Truncated {
            pc: self.pc,
            needed: 2,
            available: self.words.len(),
        })
    }

    /// The literal after a 32-bit encoding (read once; later uses see the same one).
    fn literal(&mut self) -> Result<u32, DecodeError> {
        self.w1()
    }

    /// A scalar destination field (7-bit code, 0..=127).
    fn sdst(&self, code7: u32, count: u8, mn: &'static str) -> Result<Operand, DecodeError> {
        let code = code7 as u8;
        if u32::from(code) + u32::from(count) > 128 {
            return Err(self.bad(mn, "scalar register range runs past exec_hi"));
        }
        Ok(Operand::Sreg { code, count })
    }

    /// A scalar or vector source code (8-bit SSRC or 9-bit SRC).
    /// `allow_literal`: 32-bit encodings only.
    fn src(
        &mut self,
        c: u32,
        count: u8,
        allow_literal: bool,
        mn: &'static str,
    ) -> Result<Operand, DecodeError> {
        let count = count.max(1);
        match c {
            0..=127 => self.sdst(c, count, mn),
            128..=208 | 240..=248 => Ok(Operand::Const {
                code: c as u8,
                value: inline_constant(c as u16, count).unwrap_or(0),
            }),
            235..=239 | 251..=254 => Ok(Operand::Special {
                code: c as u8,
                count,
            }),
            255 if allow_literal => Ok(Operand::Literal {
                value: self.literal()?,
                count,
            }),
            255 => Err(self.bad(mn, "literal constants are not allowed in 64-bit encodings")),
            256..=511 => Ok(Operand::Vgpr {
                index: (c - 256) as u8,
                count,
            }),
            _ => Err(self.bad(mn, "reserved operand code")),
        }
    }

    fn vgpr(
        &self,
        index: u32,
        count: u8,
        acc: bool,
        mn: &'static str,
    ) -> Result<Operand, DecodeError> {
        if index + u32::from(count) > 256 {
            return Err(self.bad(mn, "vector register range runs past v255"));
        }
        let index = index as u8;
        Ok(if acc {
            Operand::Agpr { index, count }
        } else {
            Operand::Vgpr { index, count }
        })
    }

    fn sop2(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let op = Sop2Op::from_opcode(bits(w, 29, 23) as u16)
            .ok_or_else(|| self.unknown("SOP2", bits(w, 29, 23)))?;
        let [d, s0, s1] = op.shape();
        let mn = op.mnemonic();
        Ok(Instruction::Sop2(Sop2 {
            op,
            sdst: self.sdst(bits(w, 22, 16), d.max(1), mn)?,
            ssrc0: self.src(bits(w, 7, 0), s0, true, mn)?,
            ssrc1: self.src(bits(w, 15, 8), s1, true, mn)?,
        }))
    }

    fn sopk(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let op = SopkOp::from_opcode(bits(w, 27, 23) as u16)
            .ok_or_else(|| self.unknown("SOPK", bits(w, 27, 23)))?;
        let [d] = op.shape();
        let sdst = if d > 0 {
            Some(self.sdst(bits(w, 22, 16), d, op.mnemonic())?)
        } else {
            None
        };
        let literal = if op == SopkOp::SSetregImm32B32 {
            Some(self.literal()?)
        } else {
            None
        };
        Ok(Instruction::Sopk(Sopk {
            op,
            sdst,
            simm16: bits(w, 15, 0) as u16,
            literal,
        }))
    }

    fn sop1(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let op = Sop1Op::from_opcode(bits(w, 15, 8) as u16)
            .ok_or_else(|| self.unknown("SOP1", bits(w, 15, 8)))?;
        let [d, s] = op.shape();
        let mn = op.mnemonic();
        let sdst = if d > 0 {
            Some(self.sdst(bits(w, 22, 16), d, mn)?)
        } else {
            None
        };
        let ssrc0 = if s > 0 {
            Some(self.src(bits(w, 7, 0), s, true, mn)?)
        } else {
            None
        };
        Ok(Instruction::Sop1(Sop1 { op, sdst, ssrc0 }))
    }

    fn sopc(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let op = SopcOp::from_opcode(bits(w, 22, 16) as u16)
            .ok_or_else(|| self.unknown("SOPC", bits(w, 22, 16)))?;
        let [s0, s1] = op.shape();
        let mn = op.mnemonic();
        Ok(Instruction::Sopc(Sopc {
            op,
            ssrc0: self.src(bits(w, 7, 0), s0, true, mn)?,
            ssrc1: self.src(bits(w, 15, 8), s1, true, mn)?,
        }))
    }

    fn sopp(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let op = SoppOp::from_opcode(bits(w, 22, 16) as u16)
            .ok_or_else(|| self.unknown("SOPP", bits(w, 22, 16)))?;
        Ok(Instruction::Sopp(Sopp {
            op,
            simm16: bits(w, 15, 0) as u16,
        }))
    }

    fn smem(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let w1 = self.w1()?;
        let op = SmemOp::from_opcode(bits(w, 25, 18) as u16)
            .ok_or_else(|| self.unknown("SMEM", bits(w, 25, 18)))?;
        let [sd, sb] = op.shape();
        let mn = op.mnemonic();
        let imm = bits(w, 17, 17) == 1;
        let soffset_en = bits(w, 14, 14) == 1;
        let sdata = if sd > 0 {
            Some(self.sdst(bits(w, 12, 6), sd, mn)?)
        } else {
            None
        };
        let sbase = if sb > 0 {
            Some(self.sdst(bits(w, 5, 0) << 1, sb, mn)?)
        } else {
            None
        };
        let (imm_offset, soffset) = match (imm, soffset_en) {
            (true, false) => (Some(sext(bits(w1, 20, 0), 21)), None),
            (false, false) if sb > 0 => (None, Some(self.sdst(bits(w1, 6, 0), 1, mn)?)),
            (false, false) => (None, None),
            (true, true) => (
                Some(sext(bits(w1, 20, 0), 21)),
                Some(self.sdst(bits(w1, 31, 25), 1, mn)?),
            ),
            (false, true) => (None, Some(self.sdst(bits(w1, 31, 25), 1, mn)?)),
        };
        Ok(Instruction::Smem(Smem {
            op,
            sdata,
            sbase,
            imm_offset,
            soffset,
            glc: bits(w, 16, 16) == 1,
        }))
    }

    /// VOP1 / VOP2 / VOPC (32-bit), with SDWA / DPP / literal.
    fn vop32(&mut self, form: VopForm) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let (op, name) = match form {
            VopForm::Vop1 => (VopOp::from_vop1(bits(w, 16, 9) as u16), "VOP1"),
            VopForm::Vop2 => (VopOp::from_vop2(bits(w, 30, 25) as u16), "VOP2"),
            VopForm::Vopc => (VopOp::from_vopc(bits(w, 24, 17) as u16), "VOPC"),
        };
        let raw_op = match form {
            VopForm::Vop1 => bits(w, 16, 9),
            VopForm::Vop2 => bits(w, 30, 25),
            VopForm::Vopc => bits(w, 24, 17),
        };
        let op = op.ok_or_else(|| self.unknown(name, raw_op))?;
        let mn = op.mnemonic();
        let shape = op.e32_shape().unwrap_or([0; 5]);
        let [wd, _, w0s, w1s, _] = shape;
        let src0_code = bits(w, 8, 0);
        let mut encoding = ValuEncoding::E32;
        let mut abs = 0u8;
        let mut neg = 0u8;
        let mut clamp = false;
        let mut omod = 0u8;
        let mut sdwa_vopc_dst: Option<Operand> = None;
        let mut src0 = None;
        let mut src1_code = if form == VopForm::Vop1 {
            None
        } else {
            Some(256 + bits(w, 16, 9))
        };
        match src0_code {
            249 => {
                let d1 = self.w1()?;
                let s0_is_scalar = bits(d1, 23, 23) == 1;
                let s1_is_scalar = bits(d1, 31, 31) == 1;
                let c0 = bits(d1, 7, 0) + if s0_is_scalar { 0 } else { 256 };
                src0 = Some(self.src(c0, w0s, false, mn)?);
                if let Some(c1) = src1_code.as_mut() {
                    if s1_is_scalar {
                        *c1 -= 256;
                    }
                }
                abs = (bits(d1, 21, 21) | bits(d1, 29, 29) << 1) as u8;
                neg = (bits(d1, 20, 20) | bits(d1, 28, 28) << 1) as u8;
                // D1 bits 15:8 are SD/SDST for VOPC ("SDWA-B") and
                // OMOD/CLAMP/DST_UNUSED/DST_SEL for VOP1/VOP2 ("SDWA-A").
                let dst = if form == VopForm::Vopc {
                    if bits(d1, 15, 15) == 1 {
                        sdwa_vopc_dst = Some(self.sdst(bits(d1, 14, 8), 2, mn)?);
                    }
                    SdwaDst::Mask
                } else {
                    clamp = bits(d1, 13, 13) == 1;
                    omod = bits(d1, 15, 14) as u8;
                    SdwaDst::Vgpr {
                        sel: bits(d1, 10, 8) as u8,
                        unused: bits(d1, 12, 11) as u8,
                    }
                };
                let sdwa = Sdwa {
                    dst,
                    src0_sel: bits(d1, 18, 16) as u8,
                    src1_sel: bits(d1, 26, 24) as u8,
                    sext: (bits(d1, 19, 19) | bits(d1, 27, 27) << 1) as u8,
                };
                encoding = ValuEncoding::Sdwa(sdwa);
            }
            250 => {
                let d1 = self.w1()?;
                src0 = Some(self.vgpr(bits(d1, 7, 0), w0s.max(1), false, mn)?);
                neg = (bits(d1, 20, 20) | bits(d1, 22, 22) << 1) as u8;
                abs = (bits(d1, 21, 21) | bits(d1, 23, 23) << 1) as u8;
                encoding = ValuEncoding::Dpp(Dpp {
                    ctrl: bits(d1, 16, 8) as u16,
                    bound_ctrl: bits(d1, 19, 19) == 1,
                    bank_mask: bits(d1, 27, 24) as u8,
                    row_mask: bits(d1, 31, 28) as u8,
                });
            }
            _ => {}
        }
        let src0 = match src0 {
            Some(s) => Some(s),
            None if w0s > 0 || op != VopOp::VNop => Some(self.src(src0_code, w0s, true, mn)?),
            None => None,
        };
        let src1 = match src1_code {
            Some(c) if w1s > 0 => Some(self.src(c, w1s, false, mn)?),
            _ => None,
        };
        let vdst_field = bits(w, 24, 17);
        let mut vdst = match form {
            VopForm::Vopc => Some(sdwa_vopc_dst.unwrap_or(Operand::VCC)),
            _ if wd == 0 => None,
            _ if op == VopOp::VReadfirstlaneB32 => Some(self.sdst(vdst_field, 1, mn)?),
            _ => Some(self.vgpr(vdst_field, wd, op == VopOp::VAccvgprMovB32, mn)?),
        };
        let mut src = [src0, src1, None];
        if op == VopOp::VAccvgprMovB32 {
            if let Some(Operand::Vgpr { index, count }) = src[0] {
                src[0] = Some(Operand::Agpr { index, count });
            }
        }
        if op == VopOp::VNop {
            vdst = None;
            src = [None, None, None];
        }
        let mut sdst = None;
        if is_carry_out(op) {
            sdst = Some(Operand::VCC);
        }
        if is_carry_in(op) || op == VopOp::VCndmaskB32 {
            src[2] = Some(Operand::VCC);
        }
        if op.e32_takes_literal() {
            // madmk: D = S0 * K + VSRC1; madak: D = S0 * VSRC1 + K.
            let k = Some(Operand::Literal {
                value: self.literal()?,
                count: 1,
            });
            if matches!(op, VopOp::VMadmkF32 | VopOp::VMadmkF16) {
                src = [src[0], k, src[1]];
            } else {
                src = [src[0], src[1], k];
            }
        }
        Ok(Instruction::Valu(Valu {
            op,
            encoding,
            vdst,
            sdst,
            src,
            abs,
            neg,
            clamp,
            omod,
            op_sel: 0,
        }))
    }

    fn vop3(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let d1 = self.w1()?;
        let opn = bits(w, 25, 16);
        let op = VopOp::from_vop3(opn as u16).ok_or_else(|| self.unknown("VOP3", opn))?;
        let mn = op.mnemonic();
        let [wd, wsd, ws0, ws1, ws2] = op.shape();
        let is_b = wsd > 0;
        let vdst_field = bits(w, 7, 0);
        let vdst = if wd == 0 {
            None
        } else if opn < 0x100 || op == VopOp::VReadlaneB32 {
            Some(self.sdst(vdst_field, wd, mn)?)
        } else {
            Some(self.vgpr(vdst_field, wd, false, mn)?)
        };
        let sdst = if is_b {
            Some(self.sdst(bits(w, 14, 8), wsd, mn)?)
        } else {
            None
        };
        let codes = [bits(d1, 8, 0), bits(d1, 17, 9), bits(d1, 26, 18)];
        let widths = [ws0, ws1, ws2];
        let mut src = [None, None, None];
        for i in 0..3 {
            if widths[i] > 0 {
                src[i] = Some(self.src(codes[i], widths[i], false, mn)?);
            }
        }
        Ok(Instruction::Valu(Valu {
            op,
            encoding: ValuEncoding::Vop3,
            vdst,
            sdst,
            src,
            abs: if is_b { 0 } else { bits(w, 10, 8) as u8 },
            neg: bits(d1, 31, 29) as u8,
            clamp: bits(w, 15, 15) == 1,
            omod: bits(d1, 28, 27) as u8,
            op_sel: if is_b { 0 } else { bits(w, 14, 11) as u8 },
        }))
    }

    fn vop3p(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let d1 = self.w1()?;
        let opn = bits(w, 22, 16);
        let op = Vop3pOp::from_opcode(opn as u16).ok_or_else(|| self.unknown("VOP3P", opn))?;
        let mn = op.mnemonic();
        let [wd, ws0, ws1, ws2] = op.shape();
        let is_mai = (0x40..=0x6F).contains(&opn)
            && !matches!(op, Vop3pOp::VAccvgprReadB32 | Vop3pOp::VAccvgprWriteB32);
        let acc_cd = is_mai && bits(w, 15, 15) == 1;
        let vdst = if wd > 0 {
            Some(self.vgpr(
                bits(w, 7, 0),
                wd,
                acc_cd || op == Vop3pOp::VAccvgprWriteB32,
                mn,
            )?)
        } else {
            None
        };
        let codes = [bits(d1, 8, 0), bits(d1, 17, 9), bits(d1, 26, 18)];
        let widths = [ws0, ws1, ws2];
        let mut src = [None, None, None];
        for i in 0..3 {
            if widths[i] > 0 {
                let mut s = self.src(codes[i], widths[i], false, mn)?;
                let acc = (is_mai
                    && ((i == 0 && bits(d1, 27, 27) == 1)
                        || (i == 1 && bits(d1, 28, 28) == 1)
                        || (i == 2 && acc_cd)))
                    || (op == Vop3pOp::VAccvgprReadB32 && i == 0);
                if acc {
                    if let Operand::Vgpr { index, count } = s {
                        s = Operand::Agpr { index, count };
                    }
                }
                src[i] = Some(s);
            }
        }
        Ok(Instruction::Vop3p(Vop3p {
            op,
            vdst,
            src,
            op_sel: bits(w, 13, 11) as u8,
            op_sel_hi: (bits(d1, 28, 27) | bits(w, 14, 14) << 2) as u8,
            neg_lo: bits(d1, 31, 29) as u8,
            neg_hi: bits(w, 10, 8) as u8,
            clamp: !is_mai && bits(w, 15, 15) == 1,
            mai: is_mai.then(|| Mai {
                cbsz: bits(w, 10, 8) as u8,
                abid: bits(w, 14, 11) as u8,
                blgp: bits(d1, 31, 29) as u8,
            }),
        }))
    }

    fn ds(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let d1 = self.w1()?;
        let opn = bits(w, 24, 17);
        let op = DsOp::from_opcode(opn as u16).ok_or_else(|| self.unknown("DS", opn))?;
        let mn = op.mnemonic();
        let acc = bits(w, 25, 25) == 1;
        let [wd, wa, w0, w1] = op.shape();
        let vdst = if wd > 0 {
            Some(self.vgpr(bits(d1, 31, 24), wd, acc, mn)?)
        } else {
            None
        };
        let addr = if wa > 0 {
            Some(self.vgpr(bits(d1, 7, 0), wa, false, mn)?)
        } else {
            None
        };
        let data0 = if w0 > 0 {
            Some(self.vgpr(bits(d1, 15, 8), w0, acc, mn)?)
        } else {
            None
        };
        let data1 = if w1 > 0 {
            Some(self.vgpr(bits(d1, 23, 16), w1, acc, mn)?)
        } else {
            None
        };
        Ok(Instruction::Ds(Ds {
            op,
            vdst,
            addr,
            data0,
            data1,
            offset0: bits(w, 7, 0) as u8,
            offset1: bits(w, 15, 8) as u8,
            gds: bits(w, 16, 16) == 1,
        }))
    }

    fn flat(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let d1 = self.w1()?;
        let opn = bits(w, 24, 18);
        let seg = match bits(w, 15, 14) {
            0 => Segment::Flat,
            1 => Segment::Scratch,
            2 => Segment::Global,
            _ => return Err(self.invalid_format("FLAT SEG = 3 is invalid")),
        };
        let op = FlatOp::from_opcode(opn as u16).ok_or_else(|| self.unknown("FLAT", opn))?;
        let shape = match seg {
            Segment::Flat => op.flat_shape(),
            Segment::Scratch => op.scratch_shape(),
            Segment::Global => op.global_shape(),
        };
        let mn = op.mnemonic();
        let Some([mut wd, mut wa, wdata, _]) = shape else {
            return Err(self.unknown(
                match seg {
                    Segment::Flat => "FLAT",
                    Segment::Scratch => "SCRATCH",
                    Segment::Global => "GLOBAL",
                },
                opn,
            ));
        };
        let acc = bits(d1, 23, 23) == 1;
        let glc = bits(w, 16, 16) == 1;
        let saddr_code = bits(d1, 22, 16);
        let saddr = match seg {
            Segment::Flat => {
                if saddr_code != 0 {
                    return Err(self.bad(mn, "FLAT needs SADDR = 0"));
                }
                None
            }
            _ if saddr_code == 0x7F => None,
            Segment::Global => {
                wa = 1;
                Some(self.sdst(saddr_code, 2, mn)?)
            }
            Segment::Scratch => {
                wa = 0;
                Some(self.sdst(saddr_code, 1, mn)?)
            }
        };
        let is_atomic = opn >= 0x40;
        if is_atomic {
            wd = if glc {
                if matches!(op, FlatOp::AtomicCmpswap | FlatOp::AtomicCmpswapX2) {
                    wdata / 2
                } else {
                    wdata
                }
            } else {
                0
            };
        }
        let offset = match seg {
            Segment::Flat => bits(w, 12, 0) as i32,
            _ => sext(bits(w, 12, 0), 13),
        };
        Ok(Instruction::Flat(Flat {
            op,
            seg,
            vdst: if wd > 0 {
                Some(self.vgpr(bits(d1, 31, 24), wd, acc, mn)?)
            } else {
                None
            },
            vaddr: if wa > 0 {
                Some(self.vgpr(bits(d1, 7, 0), wa, false, mn)?)
            } else {
                None
            },
            data: if wdata > 0 {
                Some(self.vgpr(bits(d1, 15, 8), wdata, acc, mn)?)
            } else {
                None
            },
            saddr,
            offset,
            glc,
            slc: bits(w, 17, 17) == 1,
            scc: bits(w, 25, 25) == 1,
            lds: bits(w, 13, 13) == 1,
        }))
    }

    /// VDATA, VADDR, SRSRC and SOFFSET of MUBUF / MTBUF.
    #[allow(clippy::type_complexity)]
    fn buffer_common(
        &mut self,
        w: u32,
        d1: u32,
        shape: [u8; 4],
        mn: &'static str,
    ) -> Result<(Option<Operand>, Option<Operand>, Option<Operand>, Operand), DecodeError> {
        let acc = bits(d1, 23, 23) == 1;
        let offen = bits(w, 12, 12) == 1;
        let idxen = bits(w, 13, 13) == 1;
        let [wdata, _, wrsrc, _] = shape;
        let vdata = if wdata > 0 {
            Some(self.vgpr(bits(d1, 15, 8), wdata, acc, mn)?)
        } else {
            None
        };
        let naddr = u8::from(offen) + u8::from(idxen);
        let vaddr = if naddr > 0 {
            Some(self.vgpr(bits(d1, 7, 0), naddr, false, mn)?)
        } else {
            None
        };
        let srsrc = if wrsrc > 0 {
            Some(self.sdst(bits(d1, 20, 16) << 2, 4, mn)?)
        } else {
            None
        };
        let soffset = self.src(bits(d1, 31, 24), 1, false, mn)?;
        Ok((vdata, vaddr, srsrc, soffset))
    }

    fn mubuf(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let d1 = self.w1()?;
        let opn = bits(w, 24, 18);
        let op = MubufOp::from_opcode(opn as u16).ok_or_else(|| self.unknown("MUBUF", opn))?;
        let (vdata, vaddr, srsrc, soffset) =
            self.buffer_common(w, d1, op.shape(), op.mnemonic())?;
        Ok(Instruction::Mubuf(Mubuf {
            op,
            vdata,
            vaddr,
            srsrc,
            soffset,
            offset: bits(w, 11, 0) as u16,
            offen: bits(w, 12, 12) == 1,
            idxen: bits(w, 13, 13) == 1,
            glc: bits(w, 14, 14) == 1,
            slc: bits(w, 17, 17) == 1,
            scc: bits(w, 15, 15) == 1,
            lds: bits(w, 16, 16) == 1,
        }))
    }

    fn mtbuf(&mut self) -> Result<Instruction, DecodeError> {
        let w = self.w0();
        let d1 = self.w1()?;
        let opn = bits(w, 18, 15);
        let op = MtbufOp::from_opcode(opn as u16).ok_or_else(|| self.unknown("MTBUF", opn))?;
        let (vdata, vaddr, srsrc, soffset) =
            self.buffer_common(w, d1, op.shape(), op.mnemonic())?;
        Ok(Instruction::Mtbuf(Mtbuf {
            op,
            vdata,
            vaddr,
            srsrc,
            soffset,
            offset: bits(w, 11, 0) as u16,
            offen: bits(w, 12, 12) == 1,
            idxen: bits(w, 13, 13) == 1,
            glc: bits(w, 14, 14) == 1,
            slc: bits(d1, 22, 22) == 1,
            scc: bits(d1, 21, 21) == 1,
            dfmt: bits(w, 22, 19) as u8,
            nfmt: bits(w, 25, 23) as u8,
        }))
    }
}

/// VALU ops that write a carry-out (`vcc` in the 32-bit encoding).
pub(crate) fn is_carry_out(op: VopOp) -> bool {
    matches!(
        op,
        VopOp::VAddCoU32
            | VopOp::VSubCoU32
            | VopOp::VSubrevCoU32
            | VopOp::VAddcCoU32
            | VopOp::VSubbCoU32
            | VopOp::VSubbrevCoU32
    )
}

/// VALU ops that read a carry-in (`vcc` in the 32-bit encoding).
pub(crate) fn is_carry_in(op: VopOp) -> bool {
    matches!(
        op,
        VopOp::VAddcCoU32 | VopOp::VSubbCoU32 | VopOp::VSubbrevCoU32
    )
}
