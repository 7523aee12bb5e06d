//! Scalar ALU (SOP1, SOP2, SOPC, SOPK) and scalar memory (SMEM) execution.

use crate::atomic::Rmw;
use crate::error::Fault;
use crate::generated::opcodes::{SmemOp, Sop1Op, Sop2Op, SopcOp, SopkOp, SoppOp};
use crate::inst::{Instruction, Smem, Sop1, Sop2, Sopc, Sopk};
use crate::operand::{code, Operand};
use crate::state::ScalarFlow;
use crate::state::{unsupported, Flow, WaveContext, WaveExit, WaveState};

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

impl WaveState {
    pub(crate) fn exec_sop2(
        &mut self,
        i: &Sop2,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        let a = self.read_scalar(&i.ssrc0, ctx);
        let b = self.read_scalar(&i.ssrc1, ctx);
        let Some((r, scc)) = sop2_result(i.op, a, b, self.scc) else {
            return Err(unsupported(
                &Instruction::Sop2(i.clone()),
                pc,
                "this SOP2 instruction is not executed yet",
            ));
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
        let write = |w: &mut WaveState, v: u64| {
            if let Some(d) = dst.as_ref() {
                w.write_scalar(d, v);
            }
        };
        match i.op {
            O::SMovB32 | O::SMovB64 => write(self, a),
            O::SCmovB32 | O::SCmovB64 => {
                if self.scc {
                    write(self, a)
                }
            }
            O::SMovrelsB32 | O::SMovrelsB64 | O::SMovreldB32 | O::SMovreldB64 => {
                self.exec_movrel(i, a, ctx)
            }
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
            O::SAndSaveexecB64
            | O::SOrSaveexecB64
            | O::SXorSaveexecB64
            | O::SAndn2SaveexecB64
            | O::SOrn2SaveexecB64
            | O::SNandSaveexecB64
            | O::SNorSaveexecB64
            | O::SXnorSaveexecB64
            | O::SAndn1SaveexecB64
            | O::SOrn1SaveexecB64 => {
                // SDST receives the old EXEC before EXEC is written (so an SDST of
                // exec ends with the new mask).
                let old = self.exec();
                let new = saveexec_result(i.op, a, old).unwrap_or(old);
                write(self, old);
                self.set_exec(new);
                self.scc = new != 0;
            }
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
            _ => {
                let Some((r, scc)) = sop1_result(i.op, a) else {
                    return Err(unsupported(
                        &Instruction::Sop1(i.clone()),
                        pc,
                        "this SOP1 instruction is not executed yet",
                    ));
                };
                write(self, r);
                if let Some(s) = scc {
                    self.scc = s;
                }
            }
        }
        Ok(Flow::Next)
    }

    /// Executes `s_movrels_b32/b64` and `s_movreld_b32/b64` (`a`: the source's value):
    /// the SGPR index of the source (movrels) or destination (movreld) offset by M0.
    #[inline]
    fn exec_movrel(&mut self, i: &Sop1, a: u64, ctx: &WaveContext<'_>) {
        use Sop1Op as O;
        // An index past the SGPRs reads 0 / writes nothing.
        let m0 = self.sgpr[usize::from(crate::operand::code::M0)];
        let n = if matches!(i.op, O::SMovrelsB64 | O::SMovreldB64) {
            2
        } else {
            1
        };
        let relative = |op: Option<&Operand>| -> Option<u8> {
            match op {
                Some(Operand::Sreg { code, .. }) => {
                    let c = u32::from(*code).checked_add(m0)?;
                    (c + n <= 102).then_some(c as u8)
                }
                _ => None,
            }
        };
        if matches!(i.op, O::SMovrelsB32 | O::SMovrelsB64) {
            let v = match relative(i.ssrc0.as_ref()) {
                Some(c) => self.read_scalar(
                    &Operand::Sreg {
                        code: c,
                        count: n as u8,
                    },
                    ctx,
                ),
                None => 0,
            };
            if let Some(d) = i.sdst.as_ref() {
                self.write_scalar(d, v);
            }
        } else if let Some(c) = relative(i.sdst.as_ref()) {
            self.write_sreg(c, n as u8, a);
        }
    }

    pub(crate) fn exec_sopc(
        &mut self,
        i: &Sopc,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        let a = self.read_scalar(&i.ssrc0, ctx);
        let b = self.read_scalar(&i.ssrc1, ctx);
        let Some(scc) = sopc_result(i.op, a, b) else {
            return Err(unsupported(
                &Instruction::Sopc(i.clone()),
                pc,
                "this SOPC instruction is not executed yet",
            ));
        };
        self.scc = scc;
        Ok(())
    }

    pub(crate) fn exec_sopk(
        &mut self,
        i: &Sopk,
        pc: u64,
        next: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<Flow, Fault> {
        use SopkOp as O;
        let simm = i.simm16 as i16 as i32 as u32;
        let zimm = u32::from(i.simm16);
        let d = i.sdst;
        let dval = d.map(|o| match o {
            Operand::Sreg { code, .. } => self.sgpr.get(usize::from(code)).copied().unwrap_or(0),
            _ => 0,
        });
        let dv = dval.unwrap_or(0);
        let write = |w: &mut WaveState, v: u32| {
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
                    HWREG_MODE => self.mode,
                    // STATUS: SCC (bit 0), EXECZ (bit 9), VCCZ (bit 10); the other
                    // fields describe states a compute wave here is never in.
                    HWREG_STATUS => {
                        u32::from(self.scc)
                            | u32::from(self.exec() == 0) << 9
                            | u32::from(self.vcc() == 0) << 10
                    }
                    HWREG_TRAPSTS => self.trapsts,
                    HWREG_HW_ID => self.hw_id,
                    // IB_STS: every memory operation completes before the next
                    // instruction, so no counter is ever outstanding.
                    HWREG_IB_STS => 0,
                    // SH_MEM_BASES: bits 63:48 of the private (15:0) and shared (31:16)
                    // aperture bases.
                    HWREG_SH_MEM_BASES => {
                        ((ctx.apertures.private_base >> 48) as u32 & 0xFFFF)
                            | ((ctx.apertures.shared_base >> 48) as u32 & 0xFFFF) << 16
                    }
                    // TBA/TMA: no trap handler is installed.
                    HWREG_TBA_LO..=HWREG_TMA_HI => 0,
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
                    HWREG_MODE => &mut self.mode,
                    HWREG_TRAPSTS => &mut self.trapsts,
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
            O::SBufferStoreDword => (1, true, true),
            O::SBufferStoreDwordx2 => (2, true, true),
            O::SBufferStoreDwordx4 => (4, true, true),
            // Address translation probes and cache discards change no visible state.
            O::SAtcProbe | O::SAtcProbeBuffer | O::SDcacheDiscard | O::SDcacheDiscardX2 => {
                return Ok(());
            }
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
                if let Some((rmw, bytes, buffer)) = smem_atomic(i.op) {
                    return self.exec_smem_atomic(i, rmw, bytes, buffer, pc, ctx);
                }
                return Err(unsupported(
                    &Instruction::Smem(i.clone()),
                    pc,
                    "this SMEM instruction is not executed yet",
                ));
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
                // The dwords below NUM_RECORDS are a prefix: one range check for them.
                let first = offset as u64 & !3;
                let inside = (0..n)
                    .take_while(|&k| first + 4 * k as u64 + 4 <= lim)
                    .count();
                if inside > 0 {
                    let span =
                        self.regions
                            .translate(ctx.memory, addr, 4 * inside as u64, false, pc)?;
                    for (k, v) in vals.iter_mut().enumerate().take(inside) {
                        *v = span.load_u32(4 * k);
                    }
                }
            }
            None => {
                let span = self.regions.translate(ctx.memory, addr, bytes, false, pc)?;
                for (k, v) in vals.iter_mut().enumerate().take(n) {
                    *v = span.load_u32(4 * k);
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

/// (operation, bytes, through a buffer descriptor) of the SMEM atomics.
fn smem_atomic(op: SmemOp) -> Option<(Rmw, u32, bool)> {
    use SmemOp as O;
    Some(match op {
        O::SAtomicSwap => (Rmw::Swap, 4, false),
        O::SAtomicCmpswap => (Rmw::CmpSwap, 4, false),
        O::SAtomicAdd => (Rmw::Add, 4, false),
        O::SAtomicSub => (Rmw::Sub, 4, false),
        O::SAtomicSmin => (Rmw::SMin, 4, false),
        O::SAtomicUmin => (Rmw::UMin, 4, false),
        O::SAtomicSmax => (Rmw::SMax, 4, false),
        O::SAtomicUmax => (Rmw::UMax, 4, false),
        O::SAtomicAnd => (Rmw::And, 4, false),
        O::SAtomicOr => (Rmw::Or, 4, false),
        O::SAtomicXor => (Rmw::Xor, 4, false),
        O::SAtomicInc => (Rmw::Inc, 4, false),
        O::SAtomicDec => (Rmw::Dec, 4, false),
        O::SAtomicSwapX2 => (Rmw::Swap, 8, false),
        O::SAtomicCmpswapX2 => (Rmw::CmpSwap, 8, false),
        O::SAtomicAddX2 => (Rmw::Add, 8, false),
        O::SAtomicSubX2 => (Rmw::Sub, 8, false),
        O::SAtomicSminX2 => (Rmw::SMin, 8, false),
        O::SAtomicUminX2 => (Rmw::UMin, 8, false),
        O::SAtomicSmaxX2 => (Rmw::SMax, 8, false),
        O::SAtomicUmaxX2 => (Rmw::UMax, 8, false),
        O::SAtomicAndX2 => (Rmw::And, 8, false),
        O::SAtomicOrX2 => (Rmw::Or, 8, false),
        O::SAtomicXorX2 => (Rmw::Xor, 8, false),
        O::SAtomicIncX2 => (Rmw::Inc, 8, false),
        O::SAtomicDecX2 => (Rmw::Dec, 8, false),
        O::SBufferAtomicSwap => (Rmw::Swap, 4, true),
        O::SBufferAtomicCmpswap => (Rmw::CmpSwap, 4, true),
        O::SBufferAtomicAdd => (Rmw::Add, 4, true),
        O::SBufferAtomicSub => (Rmw::Sub, 4, true),
        O::SBufferAtomicSmin => (Rmw::SMin, 4, true),
        O::SBufferAtomicUmin => (Rmw::UMin, 4, true),
        O::SBufferAtomicSmax => (Rmw::SMax, 4, true),
        O::SBufferAtomicUmax => (Rmw::UMax, 4, true),
        O::SBufferAtomicAnd => (Rmw::And, 4, true),
        O::SBufferAtomicOr => (Rmw::Or, 4, true),
        O::SBufferAtomicXor => (Rmw::Xor, 4, true),
        O::SBufferAtomicInc => (Rmw::Inc, 4, true),
        O::SBufferAtomicDec => (Rmw::Dec, 4, true),
        O::SBufferAtomicSwapX2 => (Rmw::Swap, 8, true),
        O::SBufferAtomicCmpswapX2 => (Rmw::CmpSwap, 8, true),
        O::SBufferAtomicAddX2 => (Rmw::Add, 8, true),
        O::SBufferAtomicSubX2 => (Rmw::Sub, 8, true),
        O::SBufferAtomicSminX2 => (Rmw::SMin, 8, true),
        O::SBufferAtomicUminX2 => (Rmw::UMin, 8, true),
        O::SBufferAtomicSmaxX2 => (Rmw::SMax, 8, true),
        O::SBufferAtomicUmaxX2 => (Rmw::UMax, 8, true),
        O::SBufferAtomicAndX2 => (Rmw::And, 8, true),
        O::SBufferAtomicOrX2 => (Rmw::Or, 8, true),
        O::SBufferAtomicXorX2 => (Rmw::Xor, 8, true),
        O::SBufferAtomicIncX2 => (Rmw::Inc, 8, true),
        O::SBufferAtomicDecX2 => (Rmw::Dec, 8, true),
        _ => return None,
    })
}

impl WaveState {
    /// SMEM atomics: SDATA holds the data (then the compare value for cmpswap); with
    /// GLC the old value is returned into SDATA. The address is SBASE (or the buffer
    /// descriptor's base) plus the offset, naturally aligned.
    fn exec_smem_atomic(
        &mut self,
        i: &Smem,
        rmw: Rmw,
        bytes: u32,
        buffer: bool,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
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
        let base = if buffer {
            let b = self.read_scalar(sbase, ctx);
            b & 0xFFFF_FFFF_FFFF
        } else {
            self.read_scalar(sbase, ctx)
        };
        let addr = base.wrapping_add_signed(offset);
        let n = (bytes / 4) as u8;
        let data = self.read_scalar(
            &Operand::Sreg {
                code: dcode,
                count: n,
            },
            ctx,
        );
        let cmp = if rmw == Rmw::CmpSwap {
            self.read_scalar(
                &Operand::Sreg {
                    code: dcode.saturating_add(n),
                    count: n,
                },
                ctx,
            )
        } else {
            0
        };
        let old = self.global_atomic(ctx.memory, addr, rmw, bytes, data, cmp, pc)?;
        if i.glc {
            self.write_sreg(dcode, n, old);
        }
        Ok(())
    }
}

/// The result of SOP2 `op` on the source values `a`, `b` (64-bit reads; 32-bit forms
/// use the low dwords) with SCC `scc_in`: the value to write to SDST (at its width)
/// and the new SCC (`None` keeps it); `None` for opcodes not executed. Shared by the
/// general executor and the scalar plans (inlined with a constant `op` there).
#[inline(always)]
pub(crate) fn sop2_result(op: Sop2Op, a: u64, b: u64, scc_in: bool) -> Option<(u64, Option<bool>)> {
    use Sop2Op as O;
    let (a32, b32) = (a as u32, b as u32);
    Some(match op {
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
        // The 32-bit forms' result (and SCC) is the low dword: a 64-bit view of
        // their operands (complemented registers, sign-extended constants) has
        // other bits above it.
        O::SAndB32 => nz(u64::from(a32 & b32)),
        O::SOrB32 => nz(u64::from(a32 | b32)),
        O::SXorB32 => nz(u64::from(a32 ^ b32)),
        O::SAndn2B32 => nz(u64::from(a32 & !b32)),
        O::SOrn2B32 => nz(u64::from(a32 | !b32)),
        O::SNandB32 => nz(u64::from(!(a32 & b32))),
        O::SNorB32 => nz(u64::from(!(a32 | b32))),
        O::SXnorB32 => nz(u64::from(!(a32 ^ b32))),
        O::SAndB64 => nz(a & b),
        O::SOrB64 => nz(a | b),
        O::SXorB64 => nz(a ^ b),
        O::SAndn2B64 => nz(a & !b),
        O::SOrn2B64 => nz(a | !b),
        O::SNandB64 => nz(!(a & b)),
        O::SNorB64 => nz(!(a | b)),
        O::SXnorB64 => nz(!(a ^ b)),
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
        O::SBfeU32 => nz(bfe_u64(u64::from(a32), b32 & 31, (b32 >> 16) & 0x7F).min(0xFFFF_FFFF)),
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
            let s = (u64::from(a32) << lshl_add_shift(op).unwrap_or(0)) + u64::from(b32);
            (s & 0xFFFF_FFFF, Some(s >> 32 != 0))
        }
        O::SPackLlB32B16 => (u64::from((a32 & 0xFFFF) | (b32 & 0xFFFF) << 16), None),
        O::SPackLhB32B16 => (u64::from((a32 & 0xFFFF) | (b32 & 0xFFFF_0000)), None),
        O::SPackHhB32B16 => (u64::from((a32 >> 16) | (b32 & 0xFFFF_0000)), None),
        _ => return None,
    })
}

/// The SCC that SOPC `op` sets for the source values `a`, `b` (64-bit reads; 32-bit
/// forms use the low dwords); `None` for opcodes not executed. Shared by the general
/// executor and the scalar plans.
#[inline(always)]
pub(crate) fn sopc_result(op: SopcOp, a: u64, b: u64) -> Option<bool> {
    use SopcOp as O;
    let (a32, b32) = (a as u32, b as u32);
    let (ai, bi) = (a32 as i32, b32 as i32);
    Some(match op {
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
        _ => return None,
    })
}

/// The result of the SOP1 bit and value opcodes (not, brev, bcnt, ff0/ff1, flbit,
/// bitreplicate, sext, abs, quadmask, wqm) on the source value `a` (32-bit forms use
/// its low dword): the value to write to SDST and the new SCC (`None` keeps it);
/// `None` for the other opcodes.
#[inline(always)]
fn sop1_result(op: Sop1Op, a: u64) -> Option<(u64, Option<bool>)> {
    use Sop1Op as O;
    let a32 = a as u32;
    Some(match op {
        O::SNotB32 => nz(u64::from(!a32)),
        O::SNotB64 => nz(!a),
        O::SBrevB32 => (u64::from(a32.reverse_bits()), None),
        O::SBrevB64 => (a.reverse_bits(), None),
        O::SBcnt0I32B32 => nz(u64::from(a32.count_zeros())),
        O::SBcnt0I32B64 => nz(u64::from(a.count_zeros())),
        O::SBcnt1I32B32 => nz(u64::from(a32.count_ones())),
        O::SBcnt1I32B64 => nz(u64::from(a.count_ones())),
        O::SFf0I32B32 => (first_bit(u64::from(!a32) & 0xFFFF_FFFF), None),
        O::SFf0I32B64 => (first_bit(!a), None),
        O::SFf1I32B32 => (first_bit(u64::from(a32)), None),
        O::SFf1I32B64 => (first_bit(a), None),
        O::SFlbitI32B32 => {
            let v = if a32 == 0 {
                0xFFFF_FFFF
            } else {
                u64::from(a32.leading_zeros())
            };
            (v, None)
        }
        O::SFlbitI32B64 => {
            let v = if a == 0 {
                0xFFFF_FFFF
            } else {
                u64::from(a.leading_zeros())
            };
            (v, None)
        }
        O::SFlbitI32 => {
            let s = a32 as i32;
            let v = if s == 0 || s == -1 {
                0xFFFF_FFFF
            } else if s < 0 {
                (!a32).leading_zeros()
            } else {
                a32.leading_zeros()
            };
            (u64::from(v), None)
        }
        O::SFlbitI32I64 => {
            let s = a as i64;
            let v = if s == 0 || s == -1 {
                0xFFFF_FFFF
            } else if s < 0 {
                (!a).leading_zeros()
            } else {
                a.leading_zeros()
            };
            (u64::from(v), None)
        }
        O::SBitreplicateB64B32 => {
            let mut r = 0u64;
            for b in 0..32 {
                if (a32 >> b) & 1 == 1 {
                    r |= 3 << (2 * b);
                }
            }
            (r, None)
        }
        O::SSextI32I8 => (u64::from(a32 as u8 as i8 as i32 as u32), None),
        O::SSextI32I16 => (u64::from(a32 as u16 as i16 as i32 as u32), None),
        O::SAbsI32 => nz(u64::from((a32 as i32).unsigned_abs())),
        O::SQuadmaskB32 | O::SQuadmaskB64 => {
            let n = if op == O::SQuadmaskB32 { 8 } else { 16 };
            let mut r = 0u64;
            for q in 0..n {
                if (a >> (4 * q)) & 0xF != 0 {
                    r |= 1 << q;
                }
            }
            nz(r)
        }
        O::SWqmB32 | O::SWqmB64 => {
            let n = if op == O::SWqmB32 { 8 } else { 16 };
            let mut r = 0u64;
            for q in 0..n {
                if (a >> (4 * q)) & 0xF != 0 {
                    r |= 0xF << (4 * q);
                }
            }
            nz(r)
        }
        _ => return None,
    })
}

/// The new EXEC of the `s_*_saveexec_b64` opcode `op` for source `a` and EXEC `exec`;
/// `None` for other opcodes. Shared by the general executor and the scalar plans.
#[inline(always)]
pub(crate) fn saveexec_result(op: Sop1Op, a: u64, exec: u64) -> Option<u64> {
    use Sop1Op as O;
    let (s, e) = (a, exec);
    Some(match op {
        O::SAndSaveexecB64 => s & e,
        O::SOrSaveexecB64 => s | e,
        O::SXorSaveexecB64 => s ^ e,
        O::SAndn2SaveexecB64 => s & !e,
        O::SOrn2SaveexecB64 => s | !e,
        O::SNandSaveexecB64 => !(s & e),
        O::SNorSaveexecB64 => !(s | e),
        O::SXnorSaveexecB64 => !(s ^ e),
        O::SAndn1SaveexecB64 => !s & e,
        O::SOrn1SaveexecB64 => !s | e,
        _ => return None,
    })
}

/// The shift of `s_lshl<N>_add_u32` (N); `None` for other opcodes.
pub(crate) fn lshl_add_shift(op: Sop2Op) -> Option<u32> {
    match op {
        Sop2Op::SLshl1AddU32 => Some(1),
        Sop2Op::SLshl2AddU32 => Some(2),
        Sop2Op::SLshl3AddU32 => Some(3),
        Sop2Op::SLshl4AddU32 => Some(4),
        _ => None,
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

/// Hardware register ids of `s_getreg_b32` / `s_setreg_b32` on gfx90a (the numbers
/// llvm-mc-16 assembles `hwreg(HW_REG_*)` to).
const HWREG_MODE: u16 = 1;
const HWREG_STATUS: u16 = 2;
const HWREG_TRAPSTS: u16 = 3;
const HWREG_HW_ID: u16 = 4;
const HWREG_IB_STS: u16 = 7;
const HWREG_SH_MEM_BASES: u16 = 15;
const HWREG_TBA_LO: u16 = 16;
const HWREG_TMA_HI: u16 = 19;

/// (ID, OFFSET, SIZE) of a hwreg SIMM16 (namespace `Hwreg` of LLVM's
/// `llvm/lib/Target/AMDGPU/SIDefines.h`).
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

/// A scalar source resolved when its block is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Src {
    /// One dword of the scalar file (an index below `null`).
    R32(u8),
    /// A pair of the scalar file: both indices below `null`, or `exec`.
    R64(u8),
    /// An inline constant or literal, as [`WaveState::read_scalar`] reads it.
    K(u64),
}

impl Src {
    /// The plan of a source operand, if it is one of the forms above.
    fn of(op: &Operand) -> Option<Self> {
        match *op {
            Operand::Sreg { code, count: 1 } if code < code::NULL => Some(Src::R32(code)),
            Operand::Sreg { code, count: 2 } if code + 1 < code::NULL || code == code::EXEC_LO => {
                Some(Src::R64(code))
            }
            Operand::Const { value, .. } => Some(Src::K(value)),
            Operand::Literal { value, .. } => Some(Src::K(u64::from(value))),
            _ => None,
        }
    }

    /// The source's value (what `read_scalar` gives for its operand).
    #[inline(always)]
    fn get(self, w: &WaveState) -> u64 {
        match self {
            Src::R32(c) => u64::from(w.sgpr[usize::from(c) & 127]),
            Src::R64(c) => {
                let c = usize::from(c);
                u64::from(w.sgpr[c & 127]) | u64::from(w.sgpr[(c + 1) & 127]) << 32
            }
            Src::K(v) => v,
        }
    }
}

/// A scalar destination resolved when its block is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dst {
    /// One dword of the scalar file (any index but `null`).
    D32(u8),
    /// A pair of the scalar file: both indices below `null`, or `exec`.
    D64(u8),
}

impl Dst {
    /// The plan of a destination operand, if it is one of the forms above.
    fn of(op: &Operand) -> Option<Self> {
        match *op {
            Operand::Sreg { code, count: 1 } if code < 128 && code != code::NULL => {
                Some(Dst::D32(code))
            }
            Operand::Sreg { code, count: 2 } if code + 1 < code::NULL || code == code::EXEC_LO => {
                Some(Dst::D64(code))
            }
            _ => None,
        }
    }

    /// Writes `v` as `write_scalar` does for the operand (low dword first).
    #[inline(always)]
    fn set(self, w: &mut WaveState, v: u64) {
        match self {
            Dst::D32(c) => w.sgpr[usize::from(c) & 127] = v as u32,
            Dst::D64(c) => {
                let c = usize::from(c);
                w.sgpr[c & 127] = v as u32;
                w.sgpr[(c + 1) & 127] = (v >> 32) as u32;
            }
        }
    }
}

/// The executor of one planned scalar form.
type ScalarExec = fn(&mut WaveState, &ScalarPlan) -> ScalarFlow;

/// A scalar instruction pre-resolved when its block is decoded (see
/// [`ScalarPlan::of`]): operands as scalar-file indices or constants, branch targets
/// as addresses, and one small executor per opcode, so that running it matches no
/// operand kinds and no opcode. Its effects are exactly those of `WaveState::step` on the
/// instruction (registers, EXEC, SCC, control flow).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScalarPlan {
    /// The executor of the form.
    run: ScalarExec,
    /// First source (unused forms: 0).
    a: Src,
    /// Second source (unused forms: 0).
    b: Src,
    /// Destination (unused forms: never written).
    d: Dst,
    /// Branch target (byte address) of planned branches.
    target: u64,
}

/// SOP2 opcodes that get a plan: an executor each, the semantics of `sop2_result`.
macro_rules! sop2_execs {
    ($($op:ident),* $(,)?) => {
        fn sop2_exec(op: Sop2Op) -> Option<ScalarExec> {
            match op {
                $(Sop2Op::$op => Some(|w: &mut WaveState, p: &ScalarPlan| {
                    let (a, b) = (p.a.get(w), p.b.get(w));
                    if let Some((r, scc)) = sop2_result(Sop2Op::$op, a, b, w.scc) {
                        p.d.set(w, r);
                        if let Some(s) = scc {
                            w.scc = s;
                        }
                    }
                    ScalarFlow::Next
                }),)*
                _ => None,
            }
        }
    };
}

sop2_execs!(
    SAddU32,
    SSubU32,
    SAddI32,
    SSubI32,
    SAddcU32,
    SSubbU32,
    SMinI32,
    SMinU32,
    SMaxI32,
    SMaxU32,
    SCselectB32,
    SCselectB64,
    SAndB32,
    SAndB64,
    SOrB32,
    SOrB64,
    SXorB32,
    SXorB64,
    SAndn2B32,
    SAndn2B64,
    SOrn2B32,
    SOrn2B64,
    SNandB64,
    SNorB64,
    SXnorB64,
    SLshlB32,
    SLshlB64,
    SLshrB32,
    SLshrB64,
    SAshrI32,
    SAshrI64,
    SBfmB32,
    SMulI32,
    SMulHiU32,
    SBfeU32,
    SBfeI32,
    SLshl1AddU32,
    SLshl2AddU32,
    SLshl3AddU32,
    SLshl4AddU32,
);

/// SOPC opcodes that get a plan: an executor each, the semantics of `sopc_result`.
macro_rules! sopc_execs {
    ($($op:ident),* $(,)?) => {
        fn sopc_exec(op: SopcOp) -> Option<ScalarExec> {
            match op {
                $(SopcOp::$op => Some(|w: &mut WaveState, p: &ScalarPlan| {
                    let (a, b) = (p.a.get(w), p.b.get(w));
                    if let Some(scc) = sopc_result(SopcOp::$op, a, b) {
                        w.scc = scc;
                    }
                    ScalarFlow::Next
                }),)*
                _ => None,
            }
        }
    };
}

sopc_execs!(
    SCmpEqI32,
    SCmpEqU32,
    SCmpLgI32,
    SCmpLgU32,
    SCmpGtI32,
    SCmpGeI32,
    SCmpLtI32,
    SCmpLeI32,
    SCmpGtU32,
    SCmpGeU32,
    SCmpLtU32,
    SCmpLeU32,
    SBitcmp0B32,
    SBitcmp1B32,
    SBitcmp0B64,
    SBitcmp1B64,
    SCmpEqU64,
    SCmpLgU64,
);

/// `s_*_saveexec_b64` opcodes that get a plan: the semantics of `saveexec_result`,
/// in `exec_sop1`'s order (SDST gets the old EXEC, then EXEC and SCC the new mask).
macro_rules! saveexec_execs {
    ($($op:ident),* $(,)?) => {
        fn saveexec_exec(op: Sop1Op) -> Option<ScalarExec> {
            match op {
                $(Sop1Op::$op => Some(|w: &mut WaveState, p: &ScalarPlan| {
                    let a = p.a.get(w);
                    let old = w.exec();
                    let new = saveexec_result(Sop1Op::$op, a, old).unwrap_or(old);
                    p.d.set(w, old);
                    w.set_exec(new);
                    w.scc = new != 0;
                    ScalarFlow::Next
                }),)*
                _ => None,
            }
        }
    };
}

saveexec_execs!(
    SAndSaveexecB64,
    SOrSaveexecB64,
    SXorSaveexecB64,
    SAndn2SaveexecB64,
    SOrn2SaveexecB64,
    SNandSaveexecB64,
    SNorSaveexecB64,
    SXnorSaveexecB64,
    SAndn1SaveexecB64,
    SOrn1SaveexecB64,
);

impl ScalarPlan {
    /// The plan of `inst` (whose following instruction is at byte address `next`), if
    /// it is a planned form with operands that resolve (scalar-file registers other
    /// than `null` and half pairs, constants, literals). Everything else runs through
    /// `WaveState::step`.
    pub(crate) fn of(inst: &Instruction, next: u64) -> Option<Self> {
        let plan = |run: ScalarExec, a: Src, b: Src, d: Dst| ScalarPlan {
            run,
            a,
            b,
            d,
            target: 0,
        };
        let none = Src::K(0);
        let nowhere = Dst::D32(code::NULL);
        match inst {
            Instruction::Sop2(i) => Some(plan(
                sop2_exec(i.op)?,
                Src::of(&i.ssrc0)?,
                Src::of(&i.ssrc1)?,
                Dst::of(&i.sdst)?,
            )),
            Instruction::Sopc(i) => Some(plan(
                sopc_exec(i.op)?,
                Src::of(&i.ssrc0)?,
                Src::of(&i.ssrc1)?,
                nowhere,
            )),
            Instruction::Sop1(i) if i.op == Sop1Op::SGetpcB64 => {
                // The PC of the next instruction: a constant of this entry.
                let d = Dst::of(i.sdst.as_ref()?)?;
                let run: ScalarExec = |w, p| {
                    p.d.set(w, p.a.get(w));
                    ScalarFlow::Next
                };
                Some(plan(run, Src::K(next), none, d))
            }
            Instruction::Sop1(i) => {
                let a = Src::of(i.ssrc0.as_ref()?)?;
                let d = Dst::of(i.sdst.as_ref()?)?;
                let run: ScalarExec = match i.op {
                    Sop1Op::SMovB32 | Sop1Op::SMovB64 => |w, p| {
                        p.d.set(w, p.a.get(w));
                        ScalarFlow::Next
                    },
                    Sop1Op::SSextI32I8 => |w, p| {
                        p.d.set(w, u64::from(p.a.get(w) as u8 as i8 as i32 as u32));
                        ScalarFlow::Next
                    },
                    Sop1Op::SSextI32I16 => |w, p| {
                        p.d.set(w, u64::from(p.a.get(w) as u16 as i16 as i32 as u32));
                        ScalarFlow::Next
                    },
                    op => saveexec_exec(op)?,
                };
                Some(plan(run, a, none, d))
            }
            Instruction::Sopk(i) if i.op == SopkOp::SMovkI32 => {
                let d = Dst::of(i.sdst.as_ref()?)?;
                let simm = i.simm16 as i16 as i32 as u32;
                let run: ScalarExec = |w, p| {
                    p.d.set(w, p.a.get(w));
                    ScalarFlow::Next
                };
                Some(plan(run, Src::K(u64::from(simm)), none, d))
            }
            Instruction::Sopk(i) if arithk_as_sop2(i).is_some() => {
                let (op, imm) = arithk_as_sop2(i)?;
                let d = Dst::of(i.sdst.as_ref()?)?;
                let a = Src::of(i.sdst.as_ref()?)?;
                Some(plan(sop2_exec(op)?, a, Src::K(u64::from(imm)), d))
            }
            Instruction::Sopk(i) => {
                let (op, imm) = cmpk_as_sopc(i)?;
                let a = Src::of(i.sdst.as_ref()?)?;
                Some(plan(sopc_exec(op)?, a, Src::K(u64::from(imm)), nowhere))
            }
            Instruction::Sopp(i) => {
                use SoppOp as O;
                let run: ScalarExec = match i.op {
                    O::SNop
                    | O::SWaitcnt
                    | O::SSetprio
                    | O::SIcacheInv
                    | O::SIncperflevel
                    | O::SDecperflevel
                    | O::STtracedata
                    | O::SSendmsg
                    | O::SWakeup
                    | O::SSetkill
                    | O::SCbranchCdbgsys
                    | O::SCbranchCdbguser
                    | O::SCbranchCdbgsysOrUser
                    | O::SCbranchCdbgsysAndUser => |_, _| ScalarFlow::Next,
                    O::SEndpgm => |_, _| ScalarFlow::Ended,
                    // No host fence: see `WaveExit::Barrier`.
                    O::SBarrier => |_, _| ScalarFlow::Barrier,
                    O::SBranch => |_, _| ScalarFlow::Jump,
                    O::SCbranchScc0 => |w, _| taken(!w.scc),
                    O::SCbranchScc1 => |w, _| taken(w.scc),
                    O::SCbranchVccz => |w, _| taken(w.vcc() == 0),
                    O::SCbranchVccnz => |w, _| taken(w.vcc() != 0),
                    O::SCbranchExecz => |w, _| taken(w.exec() == 0),
                    O::SCbranchExecnz => |w, _| taken(w.exec() != 0),
                    _ => return None,
                };
                let mut p = plan(run, none, none, nowhere);
                p.target = next.wrapping_add_signed(4 * i64::from(i.simm16 as i16));
                Some(p)
            }
            _ => None,
        }
    }
}

/// The SOPC compare that `s_cmpk_*` `i` is, with its immediate as that compare's
/// second source (SOPK encoding, `SSRC1` = SIMM16: sign extended for the `_i32`
/// forms, zero extended for the `_u32` ones; `SDST` is the first source); `None`
/// for the other SOPK opcodes.
/// `s_addk_i32` / `s_mulk_i32` as the SOP2 operation they are (SDST op the
/// sign-extended SIMM16, into SDST; SCC as SOP2's), with that immediate.
fn arithk_as_sop2(i: &Sopk) -> Option<(Sop2Op, u32)> {
    let op = match i.op {
        SopkOp::SAddkI32 => Sop2Op::SAddI32,
        SopkOp::SMulkI32 => Sop2Op::SMulI32,
        _ => return None,
    };
    Some((op, i.simm16 as i16 as i32 as u32))
}

fn cmpk_as_sopc(i: &Sopk) -> Option<(SopcOp, u32)> {
    use SopcOp as C;
    use SopkOp as K;
    let (op, signed) = match i.op {
        K::SCmpkEqI32 => (C::SCmpEqI32, true),
        K::SCmpkLgI32 => (C::SCmpLgI32, true),
        K::SCmpkGtI32 => (C::SCmpGtI32, true),
        K::SCmpkGeI32 => (C::SCmpGeI32, true),
        K::SCmpkLtI32 => (C::SCmpLtI32, true),
        K::SCmpkLeI32 => (C::SCmpLeI32, true),
        K::SCmpkEqU32 => (C::SCmpEqU32, false),
        K::SCmpkLgU32 => (C::SCmpLgU32, false),
        K::SCmpkGtU32 => (C::SCmpGtU32, false),
        K::SCmpkGeU32 => (C::SCmpGeU32, false),
        K::SCmpkLtU32 => (C::SCmpLtU32, false),
        K::SCmpkLeU32 => (C::SCmpLeU32, false),
        _ => return None,
    };
    let imm = if signed {
        i.simm16 as i16 as i32 as u32
    } else {
        u32::from(i.simm16)
    };
    Some((op, imm))
}

/// A planned conditional branch's flow.
#[inline(always)]
fn taken(cond: bool) -> ScalarFlow {
    if cond {
        ScalarFlow::Jump
    } else {
        ScalarFlow::Next
    }
}

/// What a planned scalar instruction that falls through and touches nothing but
/// the scalar file and SCC does, for `valu::jit`, which compiles such instructions to
/// host code (see [`ScalarPlan::native`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Native {
    /// The operation.
    pub(crate) form: NativeForm,
    /// First source (`Src::K(0)` when unused).
    pub(crate) a: Src,
    /// Second source (`Src::K(0)` when unused).
    pub(crate) b: Src,
    /// Destination (`Dst::D32(null)` when none).
    pub(crate) d: Dst,
    /// Scalar-file dwords read (bit per index; EXEC included, SCC not).
    pub(crate) reads: u128,
    /// Scalar-file dwords written (bit per index; EXEC included, SCC not).
    pub(crate) writes: u128,
}

/// The operation of a [`Native`] instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NativeForm {
    /// A SOP2 opcode (semantics of `sop2_result`).
    Sop2(Sop2Op),
    /// A SOPC opcode (semantics of `sopc_result`).
    Sopc(SopcOp),
    /// `s_mov_b32`, `s_mov_b64`, `s_movk_i32`: `d = a`.
    Mov,
    /// An `s_*_saveexec_b64` opcode (semantics of `saveexec_result`, in the plan's
    /// order: `d` = old EXEC, then EXEC and SCC from the new mask).
    Saveexec(Sop1Op),
    /// `s_sext_i32_i8` or `s_sext_i32_i16`: `d` = `a`'s low byte or half, sign
    /// extended (SCC unchanged).
    Sext(Sop1Op),
    /// A SOPP form that only falls through (`s_waitcnt`, `s_nop`, ...).
    Nop,
    /// `s_branch` (the last instruction of its block) or an `s_cbranch_*` on SCC,
    /// VCC or EXEC (its target is the plan's, [`ScalarPlan::flow`]).
    Branch(SoppOp),
    /// `s_mov_b64 d, src_shared_base` (`private` false) or `src_private_base`: `d`
    /// = the aperture's base, which the wave's context holds (no plan: see
    /// [`aperture_move`]).
    Aperture { private: bool },
    /// `s_setpc_b64 a` or `s_swappc_b64 d, a` (the last instruction of its block):
    /// jumps to the address `a` holds; `s_swappc_b64` writes `b`, the PC of the next
    /// instruction, to `d` after reading `a` (no plan: see [`indirect_jump`]).
    Jump,
    /// `s_barrier` (the last instruction of its block): the wave leaves the run to
    /// wait for the others of its workgroup (see `WaveExit::Barrier`).
    Barrier,
}

/// `s_mov_b64 sdst, src_shared_base` / `src_private_base` as a [`Native`]
/// instruction (unoptimised code reads an aperture before each generic pointer it
/// makes). The interpreter reads the apertures from the wave's context, which
/// scalar plans do not see, so these have no [`ScalarPlan`]; a fused run reads them
/// from its environment.
pub(crate) fn aperture_move(inst: &Instruction) -> Option<Native> {
    let Instruction::Sop1(i) = inst else {
        return None;
    };
    let private = match (i.op, i.ssrc0?) {
        (
            Sop1Op::SMovB64,
            Operand::Special {
                code: code::SHARED_BASE,
                count: 2,
            },
        ) => false,
        (
            Sop1Op::SMovB64,
            Operand::Special {
                code: code::PRIVATE_BASE,
                count: 2,
            },
        ) => true,
        _ => return None,
    };
    let d = Dst::of(i.sdst.as_ref()?)?;
    let Dst::D64(c) = d else { return None };
    Some(Native {
        form: NativeForm::Aperture { private },
        a: Src::K(0),
        b: Src::K(0),
        d,
        reads: 0,
        writes: 3u128 << c,
    })
}

/// `s_setpc_b64` and `s_swappc_b64` (whose next instruction is at `next`) as
/// [`Native`] instructions: the calls and returns of unoptimised code, which end
/// their blocks. They have no [`ScalarPlan`] (the interpreter's `step` runs them:
/// their targets are not the plan's constant); a fused run ends with one and
/// leaves for the address it read.
pub(crate) fn indirect_jump(inst: &Instruction, next: u64) -> Option<Native> {
    let Instruction::Sop1(i) = inst else {
        return None;
    };
    let a = Src::of(i.ssrc0.as_ref()?)?;
    let reads = match a {
        Src::R64(c) => 3u128 << c,
        Src::R32(_) => return None,
        Src::K(_) => 0,
    };
    let (b, d, writes) = match i.op {
        Sop1Op::SSetpcB64 => (Src::K(0), Dst::D32(code::NULL), 0),
        Sop1Op::SSwappcB64 => match Dst::of(i.sdst.as_ref()?)? {
            Dst::D64(c) => (Src::K(next), Dst::D64(c), 3u128 << c),
            Dst::D32(_) => return None,
        },
        _ => return None,
    };
    Some(Native {
        form: NativeForm::Jump,
        a,
        b,
        d,
        reads,
        writes,
    })
}

impl ScalarPlan {
    /// This plan of `inst` as a [`Native`] instruction, for the forms that fall
    /// through and whose only effects are scalar-file registers (EXEC among them)
    /// and SCC, and for the branches on SCC, VCC and EXEC; `None` for every other
    /// form (`s_endpgm`, `s_barrier`, ...).
    pub(crate) fn native(&self, inst: &Instruction) -> Option<Native> {
        let src = |s: Src| match s {
            Src::R32(c) => 1u128 << c,
            Src::R64(c) => 3u128 << c,
            Src::K(_) => 0,
        };
        let dst = |d: Dst| match d {
            Dst::D32(c) if c == code::NULL => 0,
            Dst::D32(c) => 1u128 << c,
            Dst::D64(c) => 3u128 << c,
        };
        let exec = 3u128 << code::EXEC_LO;
        let (form, reads, writes) = match inst {
            Instruction::Sop2(i) => (
                NativeForm::Sop2(i.op),
                src(self.a) | src(self.b),
                dst(self.d),
            ),
            Instruction::Sopc(i) => (NativeForm::Sopc(i.op), src(self.a) | src(self.b), 0),
            Instruction::Sop1(i) if matches!(i.op, Sop1Op::SMovB32 | Sop1Op::SMovB64) => {
                (NativeForm::Mov, src(self.a), dst(self.d))
            }
            Instruction::Sop1(i) if saveexec_result(i.op, 0, 0).is_some() => (
                NativeForm::Saveexec(i.op),
                src(self.a) | exec,
                dst(self.d) | exec,
            ),
            Instruction::Sopk(i) if i.op == SopkOp::SMovkI32 => (NativeForm::Mov, 0, dst(self.d)),
            Instruction::Sopk(i) if arithk_as_sop2(i).is_some() => (
                NativeForm::Sop2(arithk_as_sop2(i)?.0),
                src(self.a),
                dst(self.d),
            ),
            Instruction::Sop1(i) if i.op == Sop1Op::SGetpcB64 => (NativeForm::Mov, 0, dst(self.d)),
            Instruction::Sopk(i) => (NativeForm::Sopc(cmpk_as_sopc(i)?.0), src(self.a), 0),
            Instruction::Sop1(i) if matches!(i.op, Sop1Op::SSextI32I8 | Sop1Op::SSextI32I16) => {
                (NativeForm::Sext(i.op), src(self.a), dst(self.d))
            }
            Instruction::Sopp(i) if crate::state::sopp_falls_through(i.op) => {
                (NativeForm::Nop, 0, 0)
            }
            Instruction::Sopp(i) if i.op == SoppOp::SBarrier => (NativeForm::Barrier, 0, 0),
            Instruction::Sopp(i) => {
                use SoppOp as O;
                let reads = match i.op {
                    O::SBranch | O::SCbranchScc0 | O::SCbranchScc1 => 0,
                    O::SCbranchVccz | O::SCbranchVccnz => 3u128 << code::VCC_LO,
                    O::SCbranchExecz | O::SCbranchExecnz => exec,
                    _ => return None,
                };
                (NativeForm::Branch(i.op), reads, 0)
            }
            _ => return None,
        };
        Some(Native {
            form,
            a: self.a,
            b: self.b,
            d: self.d,
            reads,
            writes,
        })
    }

    /// The [`Flow`] of an executed plan.
    #[inline(always)]
    pub(crate) fn flow(&self, f: ScalarFlow) -> Flow {
        match f {
            ScalarFlow::Next => Flow::Next,
            ScalarFlow::Jump => Flow::Jump(self.target),
            ScalarFlow::Ended => Flow::Exit(WaveExit::Ended),
            ScalarFlow::Barrier => Flow::Exit(WaveExit::Barrier),
        }
    }
}

impl WaveState {
    /// Executes a scalar plan (see [`ScalarPlan`]).
    #[inline(always)]
    pub(crate) fn run_scalar(&mut self, p: &ScalarPlan) -> ScalarFlow {
        (p.run)(self, p)
    }
}

#[cfg(test)]
mod tests {
    //! Scalar semantics against the ISA definitions, computed independently in plain
    //! Rust (bit loops rather than the library calls the executor uses).
    use super::*;
    use crate::generated::opcodes::{SopkOp, SoppOp};
    use crate::inst::Sopp;
    use crate::memory::MemoryRegion;
    use crate::state::WaveExit;
    use crate::wave::testutil::{lit, s, wave, Harness};
    use crate::wave::Wave;

    fn sop1(op: Sop1Op, d: Option<Operand>, a: Option<Operand>) -> Instruction {
        Instruction::Sop1(Sop1 {
            op,
            sdst: d,
            ssrc0: a,
        })
    }

    fn sop2(op: Sop2Op, d: Operand, a: Operand, b: Operand) -> Instruction {
        Instruction::Sop2(Sop2 {
            op,
            sdst: d,
            ssrc0: a,
            ssrc1: b,
        })
    }

    fn set64(w: &mut Wave, i: usize, v: u64) {
        w.sgpr[i] = v as u32;
        w.sgpr[i + 1] = (v >> 32) as u32;
    }

    fn get64(w: &Wave, i: usize) -> u64 {
        u64::from(w.sgpr[i]) | u64::from(w.sgpr[i + 1]) << 32
    }

    #[test]
    fn bit_operations_follow_their_definitions() {
        let mut h = Harness::new(0);
        let mut w = wave();
        let x: u32 = 0x00F0_1234;
        w.sgpr[1] = x;
        // s_brev_b32: bit i of the result is bit 31-i of the source.
        h.exec(
            &mut w,
            &sop1(Sop1Op::SBrevB32, Some(s(0, 1)), Some(s(1, 1))),
        )
        .unwrap();
        let mut want = 0u32;
        for b in 0..32 {
            if (x >> b) & 1 == 1 {
                want |= 1 << (31 - b);
            }
        }
        assert_eq!(w.sgpr[0], want);
        // s_bcnt1_i32_b32 counts ones and sets SCC when non-zero.
        h.exec(
            &mut w,
            &sop1(Sop1Op::SBcnt1I32B32, Some(s(0, 1)), Some(s(1, 1))),
        )
        .unwrap();
        assert_eq!(
            w.sgpr[0],
            (0..32).filter(|b| (x >> b) & 1 == 1).count() as u32
        );
        assert!(w.scc);
        // s_ff1_i32_b32: index of the lowest set bit; -1 when none.
        h.exec(
            &mut w,
            &sop1(Sop1Op::SFf1I32B32, Some(s(0, 1)), Some(s(1, 1))),
        )
        .unwrap();
        assert_eq!(w.sgpr[0], (0..32).find(|b| (x >> b) & 1 == 1).unwrap());
        w.sgpr[2] = 0;
        h.exec(
            &mut w,
            &sop1(Sop1Op::SFf1I32B32, Some(s(0, 1)), Some(s(2, 1))),
        )
        .unwrap();
        assert_eq!(w.sgpr[0], u32::MAX);
        // s_flbit_i32_b32: leading zeros counted from bit 31.
        h.exec(
            &mut w,
            &sop1(Sop1Op::SFlbitI32B32, Some(s(0, 1)), Some(s(1, 1))),
        )
        .unwrap();
        assert_eq!(
            w.sgpr[0],
            (0..32).take_while(|b| (x >> (31 - b)) & 1 == 0).count() as u32
        );
        // s_flbit_i32_i64: bits from bit 63 equal to the sign bit; -1 for 0 and -1.
        for (val, want) in [
            (0xFFFF_FF00_0000_0000u64, 24u32),
            (0x0000_0000_8000_0000, 32),
            (u64::MAX, u32::MAX),
            (0, u32::MAX),
        ] {
            set64(&mut w, 4, val);
            h.exec(
                &mut w,
                &sop1(Sop1Op::SFlbitI32I64, Some(s(0, 1)), Some(s(4, 2))),
            )
            .unwrap();
            assert_eq!(w.sgpr[0], want, "{val:#x}");
        }
        // s_bitreplicate_b64_b32: bits 2i and 2i+1 both equal source bit i.
        h.exec(
            &mut w,
            &sop1(Sop1Op::SBitreplicateB64B32, Some(s(6, 2)), Some(s(1, 1))),
        )
        .unwrap();
        let r = get64(&w, 6);
        for b in 0..32 {
            let bit = u64::from((x >> b) & 1);
            assert_eq!((r >> (2 * b)) & 3, bit * 3, "bit {b}");
        }
        // s_sext_i32_i16 / s_abs_i32.
        w.sgpr[1] = 0x1234_8001;
        h.exec(
            &mut w,
            &sop1(Sop1Op::SSextI32I16, Some(s(0, 1)), Some(s(1, 1))),
        )
        .unwrap();
        assert_eq!(w.sgpr[0], 0xFFFF_8001);
        w.sgpr[1] = (-77i32) as u32;
        h.exec(&mut w, &sop1(Sop1Op::SAbsI32, Some(s(0, 1)), Some(s(1, 1))))
            .unwrap();
        assert_eq!(w.sgpr[0], 77);
        assert!(w.scc);
    }

    #[test]
    fn b32_logic_sets_scc_from_the_32_bit_result() {
        // SCC = (D != 0) with D the 32-bit result: the bits a 64-bit view of the
        // operands gives above bit 31 (complemented zero-extended registers, a
        // sign-extended inline constant) must not set it.
        let mut h = Harness::new(0);
        let mut w = wave();
        let minus_one = Operand::Const {
            code: 193,
            value: u64::MAX,
        };
        w.sgpr[1] = u32::MAX;
        w.sgpr[2] = u32::MAX;
        w.sgpr[3] = 0;
        let cases = [
            (Sop2Op::SNandB32, s(1, 1), s(2, 1)),
            (Sop2Op::SNorB32, s(1, 1), s(3, 1)),
            (Sop2Op::SXnorB32, s(1, 1), s(3, 1)),
            (Sop2Op::SOrn2B32, s(3, 1), s(1, 1)),
            (Sop2Op::SXorB32, s(1, 1), minus_one),
            (Sop2Op::SAndn2B32, minus_one, s(1, 1)),
        ];
        for (op, a, b) in cases {
            w.scc = true;
            w.sgpr[0] = 0xDEAD;
            h.exec(&mut w, &sop2(op, s(0, 1), a, b)).unwrap();
            assert_eq!(w.sgpr[0], 0, "{op:?}");
            assert!(!w.scc, "{op:?} set SCC for a zero result");
        }
    }

    #[test]
    fn arithmetic_and_select() {
        let mut h = Harness::new(0);
        let mut w = wave();
        // s_bfe_u32: offset in bits 4:0, width in bits 22:16 of src1.
        w.sgpr[1] = 0xDEAD_BEEF;
        h.exec(
            &mut w,
            &sop2(Sop2Op::SBfeU32, s(0, 1), s(1, 1), lit(8 | (12 << 16))),
        )
        .unwrap();
        assert_eq!(w.sgpr[0], (0xDEAD_BEEFu32 >> 8) & 0xFFF);
        // s_bfe_i64 sign-extends the field.
        set64(&mut w, 2, 0x0000_00F0_0000_0000);
        h.exec(
            &mut w,
            &sop2(Sop2Op::SBfeI64, s(4, 2), s(2, 2), lit(36 | (4 << 16))),
        )
        .unwrap();
        assert_eq!(get64(&w, 4), u64::MAX);
        // s_lshl3_add_u32: (a << 3) + b with carry-out in SCC.
        w.sgpr[1] = 0x2000_0001;
        w.sgpr[2] = 0xFFFF_FFF0;
        h.exec(
            &mut w,
            &sop2(Sop2Op::SLshl3AddU32, s(0, 1), s(1, 1), s(2, 1)),
        )
        .unwrap();
        let full = (0x2000_0001u64 << 3) + 0xFFFF_FFF0;
        assert_eq!(u64::from(w.sgpr[0]), full & 0xFFFF_FFFF);
        assert_eq!(w.scc, full >> 32 != 0);
        // s_mul_hi_i32 / _u32: high halves of the 64-bit products.
        w.sgpr[1] = (-3i32) as u32;
        w.sgpr[2] = 0x7000_0000;
        h.exec(&mut w, &sop2(Sop2Op::SMulHiI32, s(0, 1), s(1, 1), s(2, 1)))
            .unwrap();
        assert_eq!(w.sgpr[0], ((-3i64 * 0x7000_0000i64) >> 32) as u32);
        h.exec(&mut w, &sop2(Sop2Op::SMulHiU32, s(0, 1), s(1, 1), s(2, 1)))
            .unwrap();
        assert_eq!(w.sgpr[0], ((0xFFFF_FFFDu64 * 0x7000_0000u64) >> 32) as u32);
        // s_cselect_b64 picks by SCC.
        set64(&mut w, 2, 0x1111_2222_3333_4444);
        set64(&mut w, 4, 0x5555_6666_7777_8888);
        w.scc = false;
        h.exec(
            &mut w,
            &sop2(Sop2Op::SCselectB64, s(6, 2), s(2, 2), s(4, 2)),
        )
        .unwrap();
        assert_eq!(get64(&w, 6), 0x5555_6666_7777_8888);
    }

    #[test]
    fn saveexec_forms_save_old_exec_and_set_scc() {
        let mut h = Harness::new(0);
        type Exec = fn(u64, u64) -> u64;
        let cases: [(Sop1Op, Exec); 4] = [
            (Sop1Op::SAndSaveexecB64, |s, e| s & e),
            (Sop1Op::SAndn2SaveexecB64, |s, e| s & !e),
            (Sop1Op::SOrn1SaveexecB64, |s, e| !s | e),
            (Sop1Op::SXnorSaveexecB64, |s, e| !(s ^ e)),
        ];
        for (op, f) in cases {
            let mut w = wave();
            let exec0 = 0x0F0F_0000_FFFF_0001u64;
            let src = 0x00FF_00FF_0F0F_F0F0u64;
            w.set_exec(exec0);
            set64(&mut w, 2, src);
            h.exec(&mut w, &sop1(op, Some(s(0, 2)), Some(s(2, 2))))
                .unwrap();
            assert_eq!(get64(&w, 0), exec0, "{op:?} saves EXEC");
            assert_eq!(w.exec(), f(src, exec0), "{op:?}");
            assert_eq!(w.scc, f(src, exec0) != 0);
        }
    }

    #[test]
    fn m0_relative_moves() {
        let mut h = Harness::new(0);
        let mut w = wave();
        for k in 0..20 {
            w.sgpr[k] = 100 + k as u32;
        }
        w.sgpr[usize::from(crate::operand::code::M0)] = 5;
        // s_movrels_b32 s0, s2 reads s[2 + M0].
        h.exec(
            &mut w,
            &sop1(Sop1Op::SMovrelsB32, Some(s(0, 1)), Some(s(2, 1))),
        )
        .unwrap();
        assert_eq!(w.sgpr[0], 107);
        // s_movreld_b64 s[4:5], s[0:1] writes s[9:10].
        w.sgpr[1] = 0xABCD;
        h.exec(
            &mut w,
            &sop1(Sop1Op::SMovreldB64, Some(s(4, 2)), Some(s(0, 2))),
        )
        .unwrap();
        assert_eq!((w.sgpr[9], w.sgpr[10]), (107, 0xABCD));
        assert_eq!(w.sgpr[4], 104, "the named register is untouched");
    }

    #[test]
    fn hardware_registers() {
        let mut h = Harness::new(0);
        let mut w = wave();
        let getreg = |id: u16, off: u16, size: u16| {
            Instruction::Sopk(Sopk {
                op: SopkOp::SGetregB32,
                sdst: Some(s(0, 1)),
                simm16: id | off << 6 | (size - 1) << 11,
                literal: None,
            })
        };
        w.hw_id = 0x0000_0F37;
        h.exec(&mut w, &getreg(HWREG_HW_ID, 4, 4)).unwrap();
        assert_eq!(w.sgpr[0], (0x0F37 >> 4) & 0xF);
        // STATUS: SCC in bit 0, EXECZ in bit 9, VCCZ in bit 10.
        w.scc = true;
        w.set_vcc(0);
        h.exec(&mut w, &getreg(HWREG_STATUS, 0, 32)).unwrap();
        assert_eq!(w.sgpr[0], 1 | 1 << 10);
        // SH_MEM_BASES: private base bits 63:48 low, shared base bits 63:48 high.
        h.exec(&mut w, &getreg(HWREG_SH_MEM_BASES, 0, 32)).unwrap();
        let a = crate::state::Apertures::KFD;
        assert_eq!(
            w.sgpr[0],
            (a.private_base >> 48) as u32 | ((a.shared_base >> 48) as u32) << 16
        );
        // s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 2 changes bits 5:4 only.
        w.mode = 0x3F0;
        let setreg = Instruction::Sopk(Sopk {
            op: SopkOp::SSetregImm32B32,
            sdst: None,
            simm16: HWREG_MODE | 4 << 6 | 1 << 11,
            literal: Some(2),
        });
        h.exec(&mut w, &setreg).unwrap();
        assert_eq!(w.mode, (0x3F0 & !0x30) | 2 << 4);
        // GPR_ALLOC is not modelled: reported, not invented.
        assert!(matches!(
            h.exec(&mut w, &getreg(5, 0, 32)),
            Err(Fault::Unsupported { .. })
        ));
    }

    #[test]
    fn program_control_messages_and_traps() {
        let mut h = Harness::new(0);
        let mut w = wave();
        let sopp = |op: SoppOp, simm16: u16| Instruction::Sopp(Sopp { op, simm16 });
        assert_eq!(h.exec(&mut w, &sopp(SoppOp::SSendmsg, 1)), Ok(Flow::Next));
        assert_eq!(
            h.exec(&mut w, &sopp(SoppOp::SSendmsghalt, 1)),
            Ok(Flow::Exit(WaveExit::Ended))
        );
        assert_eq!(h.exec(&mut w, &sopp(SoppOp::SSethalt, 0)), Ok(Flow::Next));
        assert_eq!(h.exec(&mut w, &sopp(SoppOp::SSetprio, 3)), Ok(Flow::Next));
        assert_eq!(h.exec(&mut w, &sopp(SoppOp::SIcacheInv, 0)), Ok(Flow::Next));
        assert_eq!(
            h.exec(&mut w, &sopp(SoppOp::SSleep, 1)),
            Ok(Flow::Exit(WaveExit::Yield))
        );
        // llvm.trap (2) stops the wave; llvm.debugtrap (3) does not.
        assert_eq!(
            h.exec(&mut w, &sopp(SoppOp::STrap, 2)),
            Err(Fault::Trap {
                pc: 0x1000,
                trap_id: 2
            })
        );
        assert_eq!(h.exec(&mut w, &sopp(SoppOp::STrap, 3)), Ok(Flow::Next));
        // s_cbranch_execz: target = next + 4·simm16 (signed).
        w.set_exec(0);
        assert_eq!(
            h.exec(&mut w, &sopp(SoppOp::SCbranchExecz, 0xFFFE)),
            Ok(Flow::Jump(0x1008 - 8))
        );
    }

    fn smem(op: SmemOp, sdata: Operand, base: u8, off: i32, glc: bool) -> Instruction {
        Instruction::Smem(Smem {
            op,
            sdata: Some(sdata),
            sbase: Some(s(base, 2)),
            imm_offset: Some(off),
            soffset: None,
            glc,
        })
    }

    #[test]
    fn scalar_memory_loads_stores_and_atomics() {
        let mut h = Harness::new(0);
        let r = h.alloc(256);
        let base = r.device_base();
        assert!(r.write_bytes(16, &0x0102_0304_0506_0708u64.to_le_bytes()));
        let mut w = wave();
        set64(&mut w, 4, base);
        h.exec(&mut w, &smem(SmemOp::SLoadDwordx2, s(0, 2), 4, 16, false))
            .unwrap();
        assert_eq!(get64(&w, 0), 0x0102_0304_0506_0708);
        // s_store_dword.
        w.sgpr[2] = 0xCAFE_F00D;
        h.exec(&mut w, &smem(SmemOp::SStoreDword, s(2, 1), 4, 32, false))
            .unwrap();
        assert_eq!(crate::wave::testutil::read_u32(&r, 32), 0xCAFE_F00D);
        // s_atomic_add with GLC returns the old value.
        w.sgpr[2] = 5;
        h.exec(&mut w, &smem(SmemOp::SAtomicAdd, s(2, 1), 4, 32, true))
            .unwrap();
        assert_eq!(w.sgpr[2], 0xCAFE_F00D);
        assert_eq!(
            crate::wave::testutil::read_u32(&r, 32),
            0xCAFE_F00Du32.wrapping_add(5)
        );
        // s_atomic_cmpswap_x2: data in s[8:9], compare value in s[10:11].
        set64(&mut w, 8, 0xAAAA_BBBB_CCCC_DDDD);
        set64(&mut w, 10, 0x0102_0304_0506_0708);
        h.exec(
            &mut w,
            &smem(SmemOp::SAtomicCmpswapX2, s(8, 4), 4, 16, true),
        )
        .unwrap();
        assert_eq!(get64(&w, 8), 0x0102_0304_0506_0708);
        assert_eq!(
            crate::wave::testutil::read_u64(&r, 16),
            0xAAAA_BBBB_CCCC_DDDD
        );
        // s_buffer_store_dword through a descriptor {base, stride 0, num_records}.
        w.sgpr[12] = base as u32;
        w.sgpr[13] = (base >> 32) as u32 & 0xFFFF;
        w.sgpr[14] = 256;
        w.sgpr[15] = 0;
        w.sgpr[2] = 0x5EED;
        let st = Instruction::Smem(Smem {
            op: SmemOp::SBufferStoreDword,
            sdata: Some(s(2, 1)),
            sbase: Some(s(12, 4)),
            imm_offset: Some(64),
            soffset: None,
            glc: false,
        });
        h.exec(&mut w, &st).unwrap();
        assert_eq!(crate::wave::testutil::read_u32(&r, 64), 0x5EED);
    }
}

/// Scalar plans against the general executor (`Wave::step`): every opcode of every
/// scalar format, over random register contents, SCC, EXEC/VCC/M0 and constant
/// operands of both widths; a plan must leave the same scalar file, SCC and flow.
#[cfg(test)]
mod plan_tests {
    use super::*;
    use crate::inst::Sopp;
    use crate::wave::testutil::{wave, Harness};
    use crate::wave::Wave;

    /// xorshift64* (a fixed seed: the test is deterministic).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        /// A value biased to the edges of carries, shifts and signs.
        fn value(&mut self) -> u64 {
            const EDGES: [u64; 10] = [
                0,
                1,
                31,
                32,
                63,
                0x7FFF_FFFF,
                0x8000_0000,
                0xFFFF_FFFF,
                0xFFFF_FFFF_FFFF_FFFF,
                0x8000_0000_0000_0000,
            ];
            match self.below(4) {
                0 => EDGES[self.below(EDGES.len())],
                1 => self.next() & 0x3F,
                _ => self.next(),
            }
        }
    }

    /// A source operand: SGPRs, pairs, vcc, exec, m0, flat_scratch, ttmps, inline
    /// constants (integers and float patterns), literals, and forms that take the
    /// general path (null, the m0 pair, src_scc, src_execz).
    fn source(r: &mut Rng) -> Operand {
        let sreg = |code, count| Operand::Sreg { code, count };
        match r.below(16) {
            0 => sreg(r.below(102) as u8, 1),
            1 => sreg(2 * r.below(51) as u8, 2),
            2 => sreg(code::VCC_LO, 2),
            3 => sreg(code::VCC_LO + r.below(2) as u8, 1),
            4 => sreg(code::EXEC_LO, 2),
            5 => sreg(code::EXEC_LO + r.below(2) as u8, 1),
            6 => sreg(code::M0, 1),
            7 => sreg(code::FLAT_SCRATCH_LO + 2 * r.below(3) as u8, 2),
            8 => sreg(code::TTMP0 + r.below(16) as u8, 1),
            9 => {
                let int = r.below(81) as i64 - 16;
                Operand::Const {
                    code: 128,
                    value: int as u64,
                }
            }
            10 => Operand::Const {
                code: 242,
                value: [0x3F80_0000, 0x3FF0_0000_0000_0000, 0xBF00_0000][r.below(3)],
            },
            11 => Operand::Literal {
                value: r.value() as u32,
                count: 1 + r.below(2) as u8,
            },
            12 => sreg(code::NULL, 1 + r.below(2) as u8),
            13 => sreg(code::M0, 2),
            14 => Operand::Special {
                code: [code::SCC, code::EXECZ, code::VCCZ][r.below(3)],
                count: 1,
            },
            _ => sreg(r.below(102) as u8, 1 + r.below(2) as u8),
        }
    }

    /// A destination operand (null and the m0 pair take the general path).
    fn destination(r: &mut Rng) -> Operand {
        let sreg = |code, count| Operand::Sreg { code, count };
        match r.below(10) {
            0 => sreg(r.below(102) as u8, 1),
            1 => sreg(2 * r.below(51) as u8, 2),
            2 => sreg(code::VCC_LO, 2),
            3 => sreg(code::VCC_LO + r.below(2) as u8, 1),
            4 => sreg(code::EXEC_LO, 2),
            5 => sreg(code::EXEC_LO + r.below(2) as u8, 1),
            6 => sreg(code::M0, 1),
            7 => sreg(code::NULL, 1 + r.below(2) as u8),
            8 => sreg(code::M0, 2),
            _ => sreg(code::TTMP0 + r.below(16) as u8, 1 + r.below(2) as u8),
        }
    }

    /// A wave with random scalar registers (EXEC and VCC sometimes zero) and SCC.
    fn random_wave(r: &mut Rng) -> Wave {
        let mut w = wave();
        for x in w.sgpr.iter_mut() {
            *x = r.value() as u32;
        }
        if r.below(4) == 0 {
            w.set_exec(0);
        }
        if r.below(4) == 0 {
            w.set_vcc(0);
        }
        w.scc = r.below(2) == 1;
        w
    }

    /// Runs `inst` through the general path and through its plan (if any) on equal
    /// random waves; asserts equal outcomes and returns whether a plan ran.
    fn check(h: &mut Harness, r: &mut Rng, inst: &Instruction) -> bool {
        let seed = r.next();
        let mut general = random_wave(&mut Rng(seed | 1));
        let mut planned = random_wave(&mut Rng(seed | 1));
        let Some(plan) = ScalarPlan::of(inst, 0x1008) else {
            return false;
        };
        let want = h.exec(&mut general, inst);
        let got = planned.run_scalar(&plan);
        assert_eq!(want, Ok(plan.flow(got)), "{inst}");
        assert_eq!(general.sgpr, planned.sgpr, "{inst}");
        assert_eq!(general.scc, planned.scc, "{inst}");
        true
    }

    /// Runs `make` (an instruction from random operands) `n` times for each opcode;
    /// returns the opcodes whose plan ran at least once.
    fn sweep<O: Copy + std::fmt::Debug>(
        ops: &[O],
        n: usize,
        mut make: impl FnMut(O, &mut Rng) -> Instruction,
    ) -> Vec<String> {
        let mut h = Harness::new(0);
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        let mut planned = Vec::new();
        for &op in ops {
            let mut any = false;
            for _ in 0..n {
                let inst = make(op, &mut r);
                any |= check(&mut h, &mut r, &inst);
            }
            if any {
                planned.push(format!("{op:?}"));
            }
        }
        planned
    }

    /// The forms LLVM 16's offload kernels execute most must have plans.
    fn assert_planned(planned: &[String], hot: &[&str]) {
        for h in hot {
            assert!(
                planned.iter().any(|p| p == h),
                "{h} has no plan: {planned:?}"
            );
        }
    }

    #[test]
    fn sop2_plans_match_the_general_path() {
        let planned = sweep(Sop2Op::ALL, 3000, |op, r| {
            Instruction::Sop2(Sop2 {
                op,
                sdst: destination(r),
                ssrc0: source(r),
                ssrc1: source(r),
            })
        });
        assert_planned(
            &planned,
            &[
                "SAddU32",
                "SAddcU32",
                "SSubU32",
                "SSubbU32",
                "SOrB64",
                "SAndB64",
                "SAndn2B64",
                "SXorB64",
                "SCselectB32",
                "SCselectB64",
                "SMulI32",
                "SLshlB64",
                "SLshlB32",
                "SLshrB32",
                "SAshrI32",
            ],
        );
    }

    #[test]
    fn sopc_plans_match_the_general_path() {
        let planned = sweep(SopcOp::ALL, 2000, |op, r| {
            Instruction::Sopc(Sopc {
                op,
                ssrc0: source(r),
                ssrc1: source(r),
            })
        });
        assert_planned(
            &planned,
            &[
                "SCmpEqU32",
                "SCmpLgU32",
                "SCmpLtI32",
                "SCmpGtU32",
                "SCmpLgU64",
            ],
        );
    }

    #[test]
    fn sop1_and_sopk_plans_match_the_general_path() {
        let planned = sweep(Sop1Op::ALL, 2000, |op, r| {
            Instruction::Sop1(Sop1 {
                op,
                sdst: Some(destination(r)),
                ssrc0: Some(source(r)),
            })
        });
        assert_planned(
            &planned,
            &[
                "SMovB32",
                "SMovB64",
                "SAndSaveexecB64",
                "SOrSaveexecB64",
                "SAndn2SaveexecB64",
                "SSextI32I8",
                "SSextI32I16",
                "SGetpcB64",
            ],
        );
        // No plan may touch an absent operand.
        for op in Sop1Op::ALL {
            let inst = Instruction::Sop1(Sop1 {
                op: *op,
                sdst: None,
                ssrc0: None,
            });
            assert!(ScalarPlan::of(&inst, 0).is_none(), "{op:?}");
        }
        let planned = sweep(SopkOp::ALL, 500, |op, r| {
            Instruction::Sopk(Sopk {
                op,
                sdst: Some(destination(r)),
                simm16: r.next() as u16,
                literal: None,
            })
        });
        assert_planned(
            &planned,
            &[
                "SMovkI32",
                "SAddkI32",
                "SMulkI32",
                "SCmpkEqI32",
                "SCmpkLgI32",
                "SCmpkGtI32",
                "SCmpkGeI32",
                "SCmpkLtI32",
                "SCmpkLeI32",
                "SCmpkEqU32",
                "SCmpkLgU32",
                "SCmpkGtU32",
                "SCmpkGeU32",
                "SCmpkLtU32",
                "SCmpkLeU32",
            ],
        );
    }

    #[test]
    fn sopp_plans_match_the_general_path() {
        let planned = sweep(SoppOp::ALL, 500, |op, r| {
            Instruction::Sopp(Sopp {
                op,
                simm16: r.next() as u16,
            })
        });
        assert_planned(
            &planned,
            &[
                "SNop",
                "SWaitcnt",
                "SBranch",
                "SCbranchScc0",
                "SCbranchScc1",
                "SCbranchVccz",
                "SCbranchVccnz",
                "SCbranchExecz",
                "SCbranchExecnz",
                "SBarrier",
                "SEndpgm",
            ],
        );
    }
}
