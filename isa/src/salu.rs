//! Scalar ALU (SOP1, SOP2, SOPC, SOPK) and scalar memory (SMEM) execution.

use crate::error::Fault;
use crate::generated::opcodes::{SmemOp, Sop1Op, Sop2Op, SopcOp, SopkOp};
use crate::inst::{Instruction, Smem, Sop1, Sop2, Sopc, Sopk};
use crate::operand::Operand;
use crate::wave::{unsupported, Flow, Wave, WaveContext};

fn bfe_u64(v: u64, off: u32, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let shifted = v.checked_shr(off).unwrap_or(0);
    if width >= 64 {
        shifted
    } else {
        shifted & ((1u64 << width) - 1)
    }
}

fn sext_field(v: u64, width: u32) -> i64 {
    if width == 0 || width >= 64 {
        return v as i64;
    }
    let s = 64 - width;
    ((v << s) as i64) >> s
}

impl Wave {
    pub(crate) fn exec_sop2(
        &mut self,
        i: &Sop2,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        use Sop2Op as O;
        let a = self.read_scalar(&i.ssrc0, ctx);
        let b = self.read_scalar(&i.ssrc1, ctx);
        let (a32, b32) = (a as u32, b as u32);
        let scc_in = self.scc;
        // (result, new SCC or None to keep)
        let (r, scc): (u64, Option<bool>) = match i.op {
            O::SAddU32 => {
                let (r, c) = a32.overflowing_add(b32);
                (u64::from(r), Some(c))
            }
            O::SSubU32 => {
                let (r, c) = a32.overflowing_sub(b32);
                (u64::from(r), Some(c))
            }
            O::SAddI32 => {
                let (r, o) = (a32 as i32).overflowing_add(b32 as i32);
                (u64::from(r as u32), Some(o))
            }
            O::SSubI32 => {
                let (r, o) = (a32 as i32).overflowing_sub(b32 as i32);
                (u64::from(r as u32), Some(o))
            }
            O::SAddcU32 => {
                let s = u64::from(a32) + u64::from(b32) + u64::from(scc_in);
                (s & 0xFFFF_FFFF, Some(s >> 32 != 0))
            }
            O::SSubbU32 => {
                let borrow = u64::from(b32) + u64::from(scc_in) > u64::from(a32);
                (
                    u64::from(a32.wrapping_sub(b32).wrapping_sub(u32::from(scc_in))),
                    Some(borrow),
                )
            }
            O::SMinI32 => {
                let c = (a32 as i32) < (b32 as i32);
                (u64::from(if c { a32 } else { b32 }), Some(c))
            }
            O::SMinU32 => {
                let c = a32 < b32;
                (u64::from(if c { a32 } else { b32 }), Some(c))
            }
            O::SMaxI32 => {
                let c = (a32 as i32) > (b32 as i32);
                (u64::from(if c { a32 } else { b32 }), Some(c))
            }
            O::SMaxU32 => {
                let c = a32 > b32;
                (u64::from(if c { a32 } else { b32 }), Some(c))
            }
            O::SCselectB32 | O::SCselectB64 => (if scc_in { a } else { b }, None),
            O::SAndB32 | O::SAndB64 => nz(a & b),
            O::SOrB32 | O::SOrB64 => nz(a | b),
            O::SXorB32 | O::SXorB64 => nz(a ^ b),
            O::SAndn2B32 | O::SAndn2B64 => nz(a & !b),
            O::SOrn2B32 | O::SOrn2B64 => nz(a | !b),
            O::SNandB32 | O::SNandB64 => nz(!(a & b)),
            O::SNorB32 | O::SNorB64 => nz(!(a | b)),
            O::SXnorB32 | O::SXnorB64 => nz(!(a ^ b)),
            O::SLshlB32 => nz(u64::from(a32 << (b32 & 31))),
            O::SLshlB64 => nz(a << (b32 & 63)),
            O::SLshrB32 => nz(u64::from(a32 >> (b32 & 31))),
            O::SLshrB64 => nz(a >> (b32 & 63)),
            O::SAshrI32 => nz(u64::from(((a32 as i32) >> (b32 & 31)) as u32)),
            O::SAshrI64 => nz(((a as i64) >> (b32 & 63)) as u64),
            O::SBfmB32 => (
                u64::from(((1u64 << (a32 & 31)) as u32).wrapping_sub(1) << (b32 & 31)),
                None,
            ),
            O::SBfmB64 => (((1u64 << (a32 & 63)).wrapping_sub(1)) << (b32 & 63), None),
            O::SMulI32 => (
                u64::from((a32 as i32).wrapping_mul(b32 as i32) as u32),
                None,
            ),
            O::SMulHiU32 => ((u64::from(a32) * u64::from(b32)) >> 32, None),
            O::SMulHiI32 => (
                u64::from(((i64::from(a32 as i32) * i64::from(b32 as i32)) >> 32) as u32),
                None,
            ),
            O::SBfeU32 => {
                nz(bfe_u64(u64::from(a32), b32 & 31, (b32 >> 16) & 0x7F).min(0xFFFF_FFFF))
            }
            O::SBfeI32 => {
                let w = (b32 >> 16) & 0x7F;
                let f = bfe_u64(u64::from(a32), b32 & 31, w.min(32));
                let v = if w == 0 {
                    0
                } else {
                    sext_field(f, w.min(32)) as i32 as u32
                };
                nz(u64::from(v))
            }
            O::SBfeU64 => nz(bfe_u64(a, b32 & 63, (b32 >> 16) & 0x7F)),
            O::SBfeI64 => {
                let w = (b32 >> 16) & 0x7F;
                let f = bfe_u64(a, b32 & 63, w);
                nz(if w == 0 {
                    0
                } else {
                    sext_field(f, w.min(64)) as u64
                })
            }
            O::SAbsdiffI32 => nz(u64::from(
                (a32 as i32).wrapping_sub(b32 as i32).unsigned_abs(),
            )),
            O::SLshl1AddU32 | O::SLshl2AddU32 | O::SLshl3AddU32 | O::SLshl4AddU32 => {
                let sh = match i.op {
                    O::SLshl1AddU32 => 1,
                    O::SLshl2AddU32 => 2,
                    O::SLshl3AddU32 => 3,
                    _ => 4,
                };
                let s = (u64::from(a32) << sh) + u64::from(b32);
                (s & 0xFFFF_FFFF, Some(s >> 32 != 0))
            }
            O::SPackLlB32B16 => (u64::from((a32 & 0xFFFF) | (b32 & 0xFFFF) << 16), None),
            O::SPackLhB32B16 => (u64::from((a32 & 0xFFFF) | (b32 & 0xFFFF_0000)), None),
            O::SPackHhB32B16 => (u64::from((a32 >> 16) | (b32 & 0xFFFF_0000)), None),
            _ => {
                return Err(unsupported(
                    &Instruction::Sop2(i.clone()),
                    pc,
                    "this SOP2 instruction is not executed yet",
                ))
            }
        };
        self.write_scalar(&i.sdst, r);
        if let Some(s) = scc {
            self.scc = s;
        }
        Ok(())
    }

    pub(crate) fn exec_sop1(
        &mut self,
        i: &Sop1,
        pc: u64,
        next: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<Flow, Fault> {
        use Sop1Op as O;
        let a = i
            .ssrc0
            .as_ref()
            .map(|s| self.read_scalar(s, ctx))
            .unwrap_or(0);
        let a32 = a as u32;
        let dst = i.sdst;
        let write = |w: &mut Wave, v: u64| {
            if let Some(d) = dst.as_ref() {
                w.write_scalar(d, v);
            }
        };
        let saveexec = |w: &mut Wave, f: fn(u64, u64) -> u64| {
            let old = w.exec();
            let new = f(a, old);
            if let Some(d) = dst.as_ref() {
                w.write_scalar(d, old);
            }
            w.set_exec(new);
            w.scc = new != 0;
        };
        match i.op {
            O::SMovB32 | O::SMovB64 => write(self, a),
            O::SCmovB32 | O::SCmovB64 => {
                if self.scc {
                    write(self, a)
                }
            }
            O::SNotB32 => {
                let r = u64::from(!a32);
                write(self, r);
                self.scc = r != 0;
            }
            O::SNotB64 => {
                write(self, !a);
                self.scc = !a != 0;
            }
            O::SBrevB32 => write(self, u64::from(a32.reverse_bits())),
            O::SBrevB64 => write(self, a.reverse_bits()),
            O::SBcnt0I32B32 | O::SBcnt0I32B64 | O::SBcnt1I32B32 | O::SBcnt1I32B64 => {
                let v = match i.op {
                    O::SBcnt0I32B32 => a32.count_zeros(),
                    O::SBcnt0I32B64 => a.count_zeros(),
                    O::SBcnt1I32B32 => a32.count_ones(),
                    _ => a.count_ones(),
                };
                write(self, u64::from(v));
                self.scc = v != 0;
            }
            O::SFf0I32B32 => write(self, first_bit(u64::from(!a32) & 0xFFFF_FFFF)),
            O::SFf0I32B64 => write(self, first_bit(!a)),
            O::SFf1I32B32 => write(self, first_bit(u64::from(a32))),
            O::SFf1I32B64 => write(self, first_bit(a)),
            O::SFlbitI32B32 => write(
                self,
                if a32 == 0 {
                    0xFFFF_FFFF
                } else {
                    u64::from(a32.leading_zeros())
                },
            ),
            O::SFlbitI32B64 => write(
                self,
                if a == 0 {
                    0xFFFF_FFFF
                } else {
                    u64::from(a.leading_zeros())
                },
            ),
            O::SFlbitI32 => {
                let s = a32 as i32;
                let v = if s == 0 || s == -1 {
                    0xFFFF_FFFF
                } else if s < 0 {
                    (!a32).leading_zeros()
                } else {
                    a32.leading_zeros()
                };
                write(self, u64::from(v));
            }
            O::SSextI32I8 => write(self, u64::from(a32 as u8 as i8 as i32 as u32)),
            O::SSextI32I16 => write(self, u64::from(a32 as u16 as i16 as i32 as u32)),
            O::SBitset0B32 | O::SBitset1B32 | O::SBitset0B64 | O::SBitset1B64 => {
                let Some(d) = dst else { return Ok(Flow::Next) };
                let old = self.read_scalar(&d, ctx);
                let bit = match i.op {
                    O::SBitset0B32 | O::SBitset1B32 => 1u64 << (a32 & 31),
                    _ => 1u64 << (a32 & 63),
                };
                let v = if matches!(i.op, O::SBitset1B32 | O::SBitset1B64) {
                    old | bit
                } else {
                    old & !bit
                };
                write(self, v);
            }
            O::SGetpcB64 => write(self, next),
            O::SSetpcB64 => return Ok(Flow::Jump(a)),
            O::SSwappcB64 => {
                write(self, next);
                return Ok(Flow::Jump(a));
            }
            O::SAndSaveexecB64 => saveexec(self, |s, e| s & e),
            O::SOrSaveexecB64 => saveexec(self, |s, e| s | e),
            O::SXorSaveexecB64 => saveexec(self, |s, e| s ^ e),
            O::SAndn2SaveexecB64 => saveexec(self, |s, e| s & !e),
            O::SOrn2SaveexecB64 => saveexec(self, |s, e| s | !e),
            O::SNandSaveexecB64 => saveexec(self, |s, e| !(s & e)),
            O::SNorSaveexecB64 => saveexec(self, |s, e| !(s | e)),
            O::SXnorSaveexecB64 => saveexec(self, |s, e| !(s ^ e)),
            O::SAndn1SaveexecB64 => saveexec(self, |s, e| !s & e),
            O::SOrn1SaveexecB64 => saveexec(self, |s, e| !s | e),
            O::SAndn1WrexecB64 | O::SAndn2WrexecB64 => {
                let e = self.exec();
                let new = if i.op == O::SAndn1WrexecB64 {
                    !a & e
                } else {
                    a & !e
                };
                self.set_exec(new);
                write(self, new);
                self.scc = new != 0;
            }
            O::SAbsI32 => {
                let r = u64::from((a32 as i32).unsigned_abs());
                write(self, r);
                self.scc = r != 0;
            }
            O::SQuadmaskB32 | O::SQuadmaskB64 => {
                let n = if i.op == O::SQuadmaskB32 { 8 } else { 16 };
                let mut r = 0u64;
                for q in 0..n {
                    if (a >> (4 * q)) & 0xF != 0 {
                        r |= 1 << q;
                    }
                }
                write(self, r);
                self.scc = r != 0;
            }
            O::SWqmB32 | O::SWqmB64 => {
                let n = if i.op == O::SWqmB32 { 8 } else { 16 };
                let mut r = 0u64;
                for q in 0..n {
                    if (a >> (4 * q)) & 0xF != 0 {
                        r |= 0xF << (4 * q);
                    }
                }
                write(self, r);
                self.scc = r != 0;
            }
            _ => {
                return Err(unsupported(
                    &Instruction::Sop1(i.clone()),
                    pc,
                    "this SOP1 instruction is not executed yet",
                ))
            }
        }
        Ok(Flow::Next)
    }

    pub(crate) fn exec_sopc(
        &mut self,
        i: &Sopc,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        use SopcOp as O;
        let a = self.read_scalar(&i.ssrc0, ctx);
        let b = self.read_scalar(&i.ssrc1, ctx);
        let (a32, b32) = (a as u32, b as u32);
        let (ai, bi) = (a32 as i32, b32 as i32);
        self.scc = match i.op {
            O::SCmpEqI32 | O::SCmpEqU32 => a32 == b32,
            O::SCmpLgI32 | O::SCmpLgU32 => a32 != b32,
            O::SCmpGtI32 => ai > bi,
            O::SCmpGeI32 => ai >= bi,
            O::SCmpLtI32 => ai < bi,
            O::SCmpLeI32 => ai <= bi,
            O::SCmpGtU32 => a32 > b32,
            O::SCmpGeU32 => a32 >= b32,
            O::SCmpLtU32 => a32 < b32,
            O::SCmpLeU32 => a32 <= b32,
            O::SBitcmp0B32 => (a32 >> (b32 & 31)) & 1 == 0,
            O::SBitcmp1B32 => (a32 >> (b32 & 31)) & 1 == 1,
            O::SBitcmp0B64 => (a >> (b32 & 63)) & 1 == 0,
            O::SBitcmp1B64 => (a >> (b32 & 63)) & 1 == 1,
            O::SCmpEqU64 => a == b,
            O::SCmpLgU64 => a != b,
            _ => {
                return Err(unsupported(
                    &Instruction::Sopc(i.clone()),
                    pc,
                    "this SOPC instruction is not executed yet",
                ))
            }
        };
        Ok(())
    }

    pub(crate) fn exec_sopk(&mut self, i: &Sopk, pc: u64, next: u64) -> Result<Flow, Fault> {
        use SopkOp as O;
        let simm = i.simm16 as i16 as i32 as u32;
        let zimm = u32::from(i.simm16);
        let d = i.sdst;
        let dval = d.map(|o| match o {
            Operand::Sreg { code, .. } => self.sgpr.get(usize::from(code)).copied().unwrap_or(0),
            _ => 0,
        });
        let dv = dval.unwrap_or(0);
        let write = |w: &mut Wave, v: u32| {
            if let Some(o) = d.as_ref() {
                w.write_scalar(o, u64::from(v));
            }
        };
        match i.op {
            O::SMovkI32 => write(self, simm),
            O::SCmovkI32 => {
                if self.scc {
                    write(self, simm)
                }
            }
            O::SCmpkEqI32 => self.scc = dv == simm,
            O::SCmpkLgI32 => self.scc = dv != simm,
            O::SCmpkGtI32 => self.scc = (dv as i32) > simm as i32,
            O::SCmpkGeI32 => self.scc = (dv as i32) >= simm as i32,
            O::SCmpkLtI32 => self.scc = (dv as i32) < simm as i32,
            O::SCmpkLeI32 => self.scc = (dv as i32) <= simm as i32,
            O::SCmpkEqU32 => self.scc = dv == zimm,
            O::SCmpkLgU32 => self.scc = dv != zimm,
            O::SCmpkGtU32 => self.scc = dv > zimm,
            O::SCmpkGeU32 => self.scc = dv >= zimm,
            O::SCmpkLtU32 => self.scc = dv < zimm,
            O::SCmpkLeU32 => self.scc = dv <= zimm,
            O::SAddkI32 => {
                let (r, o) = (dv as i32).overflowing_add(simm as i32);
                write(self, r as u32);
                self.scc = o;
            }
            O::SMulkI32 => write(self, (dv as i32).wrapping_mul(simm as i32) as u32),
            O::SCallB64 => {
                if let Some(o) = d.as_ref() {
                    self.write_scalar(o, next);
                }
                return Ok(Flow::Jump(
                    next.wrapping_add_signed(4 * i64::from(i.simm16 as i16)),
                ));
            }
            O::SGetregB32 => {
                let (id, off, size) = hwreg_fields(i.simm16);
                let reg = match id {
                    1 => self.mode,
                    3 => self.trapsts,
                    4 => self.hw_id,
                    _ => {
                        return Err(unsupported(
                            &Instruction::Sopk(i.clone()),
                            pc,
                            "s_getreg of this hardware register is not modelled",
                        ))
                    }
                };
                let mask = if size >= 32 {
                    u32::MAX
                } else {
                    (1u32 << size) - 1
                };
                write(self, (reg >> off) & mask);
            }
            O::SSetregB32 | O::SSetregImm32B32 => {
                let (id, off, size) = hwreg_fields(i.simm16);
                let v = if i.op == O::SSetregB32 {
                    dv
                } else {
                    i.literal.unwrap_or(0)
                };
                let mask = if size >= 32 {
                    u32::MAX
                } else {
                    ((1u32 << size) - 1) << off
                };
                let reg = match id {
                    1 => &mut self.mode,
                    3 => &mut self.trapsts,
                    _ => {
                        return Err(unsupported(
                            &Instruction::Sopk(i.clone()),
                            pc,
                            "s_setreg of this hardware register is not modelled",
                        ))
                    }
                };
                *reg = (*reg & !mask) | ((v << off) & mask);
            }
            _ => {
                return Err(unsupported(
                    &Instruction::Sopk(i.clone()),
                    pc,
                    "this SOPK instruction is not executed yet",
                ))
            }
        }
        Ok(Flow::Next)
    }

    pub(crate) fn exec_smem(
        &mut self,
        i: &Smem,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        use SmemOp as O;
        let (n, is_buffer, is_store) = match i.op {
            O::SLoadDword => (1, false, false),
            O::SLoadDwordx2 => (2, false, false),
            O::SLoadDwordx4 => (4, false, false),
            O::SLoadDwordx8 => (8, false, false),
            O::SLoadDwordx16 => (16, false, false),
            O::SBufferLoadDword => (1, true, false),
            O::SBufferLoadDwordx2 => (2, true, false),
            O::SBufferLoadDwordx4 => (4, true, false),
            O::SBufferLoadDwordx8 => (8, true, false),
            O::SBufferLoadDwordx16 => (16, true, false),
            O::SStoreDword => (1, false, true),
            O::SStoreDwordx2 => (2, false, true),
            O::SStoreDwordx4 => (4, false, true),
            O::SDcacheInv | O::SDcacheWb | O::SDcacheInvVol | O::SDcacheWbVol => {
                std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
                return Ok(());
            }
            O::SMemtime | O::SMemrealtime => {
                let t = clock_ticks(i.op == O::SMemrealtime);
                if let Some(d) = i.sdata.as_ref() {
                    self.write_scalar(d, t);
                }
                return Ok(());
            }
            _ => {
                return Err(unsupported(
                    &Instruction::Smem(i.clone()),
                    pc,
                    "this SMEM instruction is not executed yet",
                ))
            }
        };
        let (Some(sbase), Some(Operand::Sreg { code: dcode, .. })) = (i.sbase.as_ref(), i.sdata)
        else {
            return Err(unsupported(
                &Instruction::Smem(i.clone()),
                pc,
                "missing operands",
            ));
        };
        let mut offset = i64::from(i.imm_offset.unwrap_or(0));
        if let Some(so) = i.soffset.as_ref() {
            offset += i64::from(self.read_scalar(so, ctx) as u32);
        }
        let (base, limit) = if is_buffer {
            let Operand::Sreg { code, .. } = *sbase else {
                return Ok(());
            };
            let c = usize::from(code);
            let w0 = self.sgpr[c];
            let w1 = self.sgpr.get(c + 1).copied().unwrap_or(0);
            let w2 = self.sgpr.get(c + 2).copied().unwrap_or(0);
            (
                u64::from(w0) | u64::from(w1 & 0xFFFF) << 32,
                Some(u64::from(w2)),
            )
        } else {
            (self.read_scalar(sbase, ctx), None)
        };
        let addr = base.wrapping_add_signed(offset) & !3;
        let bytes = 4 * n as u64;
        if is_store {
            let span = self.regions.translate(ctx.memory, addr, bytes, true, pc)?;
            for k in 0..n {
                let v = self.sgpr.get(usize::from(dcode) + k).copied().unwrap_or(0);
                span.store(4 * k, &v.to_le_bytes());
            }
            return Ok(());
        }
        let mut vals = [0u32; 16];
        match limit {
            // Buffer loads past NUM_RECORDS return 0 for the dwords out of range.
            Some(lim) => {
                for (k, v) in vals.iter_mut().enumerate().take(n) {
                    let off = (offset as u64 & !3) + 4 * k as u64;
                    if off + 4 <= lim {
                        let span = self.regions.translate(
                            ctx.memory,
                            addr + 4 * k as u64,
                            4,
                            false,
                            pc,
                        )?;
                        *v = u32::from_le_bytes(span.load::<4>(0));
                    }
                }
            }
            None => {
                let span = self.regions.translate(ctx.memory, addr, bytes, false, pc)?;
                for (k, v) in vals.iter_mut().enumerate().take(n) {
                    *v = u32::from_le_bytes(span.load::<4>(4 * k));
                }
            }
        }
        for (k, v) in vals.iter().enumerate().take(n) {
            let c = usize::from(dcode) + k;
            if c < 128 && c != 125 {
                self.sgpr[c] = *v;
            }
        }
        Ok(())
    }
}

fn nz(v: u64) -> (u64, Option<bool>) {
    (v, Some(v != 0))
}

fn first_bit(v: u64) -> u64 {
    if v == 0 {
        0xFFFF_FFFF
    } else {
        u64::from(v.trailing_zeros())
    }
}

/// (ID, OFFSET, SIZE) of a hwreg SIMM16 (gfx90a-encoding.md section 6.3).
fn hwreg_fields(simm: u16) -> (u16, u32, u32) {
    (
        simm & 0x3F,
        u32::from((simm >> 6) & 0x1F),
        u32::from(simm >> 11) + 1,
    )
}

/// `s_memtime` (ns since process start) / `s_memrealtime` (100 MHz ticks).
fn clock_ticks(real: bool) -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    let ns = START.get_or_init(Instant::now).elapsed().as_nanos() as u64;
    if real {
        ns / 10
    } else {
        ns
    }
}
