//! Vector memory: DS (LDS), FLAT / GLOBAL / SCRATCH and MUBUF execution.
//!
//! Addressing follows gfx90a-encoding.md sections 3.9–3.11 and the launch sheet
//! sections 11.2–11.4: flat addresses are routed by their high dword (shared aperture
//! → LDS, private aperture → this lane's scratch, else global); scratch is swizzled
//! per lane (`base + (p/4)·256 + lane·4 + p%4` for wave64 with 4-byte elements).

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

use std::sync::atomic::Ordering;

use crate::error::Fault;
use crate::generated::opcodes::{DsOp, FlatOp, MubufOp};
use crate::inst::{Ds, Flat, Instruction, Mubuf, Segment};
use crate::operand::Operand;
use crate::wave::{unsupported, VReg, Wave, WaveContext, WAVE_SIZE};

/// Where one lane's access goes.
#[derive(Clone, Copy)]
enum Target {
    /// A global device address.
    Global(u64),
    /// A byte offset into the workgroup's LDS.
    Lds(u64),
    /// A private (scratch) offset of `lane`, swizzled from `base` (4-byte elements,
    /// 64-lane index stride).
    Private { base: u64, offset: u64, lane: usize },
}

/// Read-modify-write operations shared by DS, FLAT/GLOBAL and MUBUF atomics.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rmw {
    Swap,
    CmpSwap,
    Add,
    Sub,
    Rsub,
    SMin,
    UMin,
    SMax,
    UMax,
    And,
    Or,
    Xor,
    Inc,
    Dec,
    AddF32,
    MinF32,
    MaxF32,
    AddF64,
    MinF64,
    MaxF64,
}

impl Rmw {
    /// New value from the old one, the data and (CmpSwap) the compare value.
    fn apply32(self, old: u32, data: u32, cmp: u32) -> u32 {
        match self {
            Rmw::Swap => data,
            Rmw::CmpSwap => {
                if old == cmp {
                    data
                } else {
                    old
                }
            }
            Rmw::Add => old.wrapping_add(data),
            Rmw::Sub => old.wrapping_sub(data),
            Rmw::Rsub => data.wrapping_sub(old),
            Rmw::SMin => (old as i32).min(data as i32) as u32,
            Rmw::UMin => old.min(data),
            Rmw::SMax => (old as i32).max(data as i32) as u32,
            Rmw::UMax => old.max(data),
            Rmw::And => old & data,
            Rmw::Or => old | data,
            Rmw::Xor => old ^ data,
            Rmw::Inc => {
                if old >= data {
                    0
                } else {
                    old + 1
                }
            }
            Rmw::Dec => {
                if old == 0 || old > data {
                    data
                } else {
                    old - 1
                }
            }
            Rmw::AddF32 => (f32::from_bits(old) + f32::from_bits(data)).to_bits(),
            Rmw::MinF32 => f32::from_bits(old).min(f32::from_bits(data)).to_bits(),
            Rmw::MaxF32 => f32::from_bits(old).max(f32::from_bits(data)).to_bits(),
            Rmw::AddF64 | Rmw::MinF64 | Rmw::MaxF64 => old,
        }
    }

    fn apply64(self, old: u64, data: u64, cmp: u64) -> u64 {
        match self {
            Rmw::Swap => data,
            Rmw::CmpSwap => {
                if old == cmp {
                    data
                } else {
                    old
                }
            }
            Rmw::Add => old.wrapping_add(data),
            Rmw::Sub => old.wrapping_sub(data),
            Rmw::Rsub => data.wrapping_sub(old),
            Rmw::SMin => (old as i64).min(data as i64) as u64,
            Rmw::UMin => old.min(data),
            Rmw::SMax => (old as i64).max(data as i64) as u64,
            Rmw::UMax => old.max(data),
            Rmw::And => old & data,
            Rmw::Or => old | data,
            Rmw::Xor => old ^ data,
            Rmw::Inc => {
                if old >= data {
                    0
                } else {
                    old + 1
                }
            }
            Rmw::Dec => {
                if old == 0 || old > data {
                    data
                } else {
                    old - 1
                }
            }
            Rmw::AddF64 => (f64::from_bits(old) + f64::from_bits(data)).to_bits(),
            Rmw::MinF64 => f64::from_bits(old).min(f64::from_bits(data)).to_bits(),
            Rmw::MaxF64 => f64::from_bits(old).max(f64::from_bits(data)).to_bits(),
            Rmw::AddF32 | Rmw::MinF32 | Rmw::MaxF32 => old,
        }
    }
}

/// Kind of a vector memory operation, common to DS/FLAT/MUBUF.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Access {
    /// Load `bytes` (1, 2, 4, 8, 12, 16); `signed` sign-extends sub-dword loads.
    Load { bytes: u32, signed: bool },
    /// Store `bytes`; `hi16` stores bits 31:16 of the data (d16_hi).
    Store { bytes: u32, hi16: bool },
    /// Atomic on `bytes` (4 or 8).
    Atomic { op: Rmw, bytes: u32 },
}

fn flat_access(op: FlatOp) -> Option<Access> {
    use FlatOp as O;
    Some(match op {
        O::LoadUbyte => Access::Load {
            bytes: 1,
            signed: false,
        },
        O::LoadSbyte => Access::Load {
            bytes: 1,
            signed: true,
        },
        O::LoadUshort => Access::Load {
            bytes: 2,
            signed: false,
        },
        O::LoadSshort => Access::Load {
            bytes: 2,
            signed: true,
        },
        O::LoadDword => Access::Load {
            bytes: 4,
            signed: false,
        },
        O::LoadDwordx2 => Access::Load {
            bytes: 8,
            signed: false,
        },
        O::LoadDwordx3 => Access::Load {
            bytes: 12,
            signed: false,
        },
        O::LoadDwordx4 => Access::Load {
            bytes: 16,
            signed: false,
        },
        O::StoreByte => Access::Store {
            bytes: 1,
            hi16: false,
        },
        O::StoreByteD16Hi => Access::Store {
            bytes: 1,
            hi16: true,
        },
        O::StoreShort => Access::Store {
            bytes: 2,
            hi16: false,
        },
        O::StoreShortD16Hi => Access::Store {
            bytes: 2,
            hi16: true,
        },
        O::StoreDword => Access::Store {
            bytes: 4,
            hi16: false,
        },
        O::StoreDwordx2 => Access::Store {
            bytes: 8,
            hi16: false,
        },
        O::StoreDwordx3 => Access::Store {
            bytes: 12,
            hi16: false,
        },
        O::StoreDwordx4 => Access::Store {
            bytes: 16,
            hi16: false,
        },
        _ => {
            let (rmw, bytes) = match op {
                O::AtomicSwap => (Rmw::Swap, 4),
                O::AtomicCmpswap => (Rmw::CmpSwap, 4),
                O::AtomicAdd => (Rmw::Add, 4),
                O::AtomicSub => (Rmw::Sub, 4),
                O::AtomicSmin => (Rmw::SMin, 4),
                O::AtomicUmin => (Rmw::UMin, 4),
                O::AtomicSmax => (Rmw::SMax, 4),
                O::AtomicUmax => (Rmw::UMax, 4),
                O::AtomicAnd => (Rmw::And, 4),
                O::AtomicOr => (Rmw::Or, 4),
                O::AtomicXor => (Rmw::Xor, 4),
                O::AtomicInc => (Rmw::Inc, 4),
                O::AtomicDec => (Rmw::Dec, 4),
                O::AtomicAddF32 => (Rmw::AddF32, 4),
                O::AtomicAddF64 => (Rmw::AddF64, 8),
                O::AtomicMinF64 => (Rmw::MinF64, 8),
                O::AtomicMaxF64 => (Rmw::MaxF64, 8),
                O::AtomicSwapX2 => (Rmw::Swap, 8),
                O::AtomicCmpswapX2 => (Rmw::CmpSwap, 8),
                O::AtomicAddX2 => (Rmw::Add, 8),
                O::AtomicSubX2 => (Rmw::Sub, 8),
                O::AtomicSminX2 => (Rmw::SMin, 8),
                O::AtomicUminX2 => (Rmw::UMin, 8),
                O::AtomicSmaxX2 => (Rmw::SMax, 8),
                O::AtomicUmaxX2 => (Rmw::UMax, 8),
                O::AtomicAndX2 => (Rmw::And, 8),
                O::AtomicOrX2 => (Rmw::Or, 8),
                O::AtomicXorX2 => (Rmw::Xor, 8),
                O::AtomicIncX2 => (Rmw::Inc, 8),
                O::AtomicDecX2 => (Rmw::Dec, 8),
                _ => return None,
            };
            Access::Atomic { op: rmw, bytes }
        }
    })
}

fn mubuf_access(op: MubufOp) -> Option<Access> {
    use MubufOp as O;
    Some(match op {
        O::BufferLoadUbyte => Access::Load {
            bytes: 1,
            signed: false,
        },
        O::BufferLoadSbyte => Access::Load {
            bytes: 1,
            signed: true,
        },
        O::BufferLoadUshort => Access::Load {
            bytes: 2,
            signed: false,
        },
        O::BufferLoadSshort => Access::Load {
            bytes: 2,
            signed: true,
        },
        O::BufferLoadDword => Access::Load {
            bytes: 4,
            signed: false,
        },
        O::BufferLoadDwordx2 => Access::Load {
            bytes: 8,
            signed: false,
        },
        O::BufferLoadDwordx3 => Access::Load {
            bytes: 12,
            signed: false,
        },
        O::BufferLoadDwordx4 => Access::Load {
            bytes: 16,
            signed: false,
        },
        O::BufferStoreByte => Access::Store {
            bytes: 1,
            hi16: false,
        },
        O::BufferStoreByteD16Hi => Access::Store {
            bytes: 1,
            hi16: true,
        },
        O::BufferStoreShort => Access::Store {
            bytes: 2,
            hi16: false,
        },
        O::BufferStoreShortD16Hi => Access::Store {
            bytes: 2,
            hi16: true,
        },
        O::BufferStoreDword => Access::Store {
            bytes: 4,
            hi16: false,
        },
        O::BufferStoreDwordx2 => Access::Store {
            bytes: 8,
            hi16: false,
        },
        O::BufferStoreDwordx3 => Access::Store {
            bytes: 12,
            hi16: false,
        },
        O::BufferStoreDwordx4 => Access::Store {
            bytes: 16,
            hi16: false,
        },
        _ => return None,
    })
}

fn ds_rmw(op: DsOp) -> Option<(Rmw, u32, bool)> {
    use DsOp as O;
    Some(match op {
        O::DsAddU32 => (Rmw::Add, 4, false),
        O::DsSubU32 => (Rmw::Sub, 4, false),
        O::DsRsubU32 => (Rmw::Rsub, 4, false),
        O::DsIncU32 => (Rmw::Inc, 4, false),
        O::DsDecU32 => (Rmw::Dec, 4, false),
        O::DsMinI32 => (Rmw::SMin, 4, false),
        O::DsMaxI32 => (Rmw::SMax, 4, false),
        O::DsMinU32 => (Rmw::UMin, 4, false),
        O::DsMaxU32 => (Rmw::UMax, 4, false),
        O::DsAndB32 => (Rmw::And, 4, false),
        O::DsOrB32 => (Rmw::Or, 4, false),
        O::DsXorB32 => (Rmw::Xor, 4, false),
        O::DsCmpstB32 => (Rmw::CmpSwap, 4, false),
        O::DsMinF32 => (Rmw::MinF32, 4, false),
        O::DsMaxF32 => (Rmw::MaxF32, 4, false),
        O::DsAddF32 => (Rmw::AddF32, 4, false),
        O::DsAddRtnU32 => (Rmw::Add, 4, true),
        O::DsSubRtnU32 => (Rmw::Sub, 4, true),
        O::DsRsubRtnU32 => (Rmw::Rsub, 4, true),
        O::DsIncRtnU32 => (Rmw::Inc, 4, true),
        O::DsDecRtnU32 => (Rmw::Dec, 4, true),
        O::DsMinRtnI32 => (Rmw::SMin, 4, true),
        O::DsMaxRtnI32 => (Rmw::SMax, 4, true),
        O::DsMinRtnU32 => (Rmw::UMin, 4, true),
        O::DsMaxRtnU32 => (Rmw::UMax, 4, true),
        O::DsAndRtnB32 => (Rmw::And, 4, true),
        O::DsOrRtnB32 => (Rmw::Or, 4, true),
        O::DsXorRtnB32 => (Rmw::Xor, 4, true),
        O::DsWrxchgRtnB32 => (Rmw::Swap, 4, true),
        O::DsCmpstRtnB32 => (Rmw::CmpSwap, 4, true),
        O::DsMinRtnF32 => (Rmw::MinF32, 4, true),
        O::DsMaxRtnF32 => (Rmw::MaxF32, 4, true),
        O::DsAddRtnF32 => (Rmw::AddF32, 4, true),
        O::DsAddU64 => (Rmw::Add, 8, false),
        O::DsSubU64 => (Rmw::Sub, 8, false),
        O::DsRsubU64 => (Rmw::Rsub, 8, false),
        O::DsIncU64 => (Rmw::Inc, 8, false),
        O::DsDecU64 => (Rmw::Dec, 8, false),
        O::DsMinI64 => (Rmw::SMin, 8, false),
        O::DsMaxI64 => (Rmw::SMax, 8, false),
        O::DsMinU64 => (Rmw::UMin, 8, false),
        O::DsMaxU64 => (Rmw::UMax, 8, false),
        O::DsAndB64 => (Rmw::And, 8, false),
        O::DsOrB64 => (Rmw::Or, 8, false),
        O::DsXorB64 => (Rmw::Xor, 8, false),
        O::DsCmpstB64 => (Rmw::CmpSwap, 8, false),
        O::DsMinF64 => (Rmw::MinF64, 8, false),
        O::DsMaxF64 => (Rmw::MaxF64, 8, false),
        O::DsAddF64 => (Rmw::AddF64, 8, false),
        O::DsAddRtnU64 => (Rmw::Add, 8, true),
        O::DsSubRtnU64 => (Rmw::Sub, 8, true),
        O::DsRsubRtnU64 => (Rmw::Rsub, 8, true),
        O::DsIncRtnU64 => (Rmw::Inc, 8, true),
        O::DsDecRtnU64 => (Rmw::Dec, 8, true),
        O::DsMinRtnI64 => (Rmw::SMin, 8, true),
        O::DsMaxRtnI64 => (Rmw::SMax, 8, true),
        O::DsMinRtnU64 => (Rmw::UMin, 8, true),
        O::DsMaxRtnU64 => (Rmw::UMax, 8, true),
        O::DsAndRtnB64 => (Rmw::And, 8, true),
        O::DsOrRtnB64 => (Rmw::Or, 8, true),
        O::DsXorRtnB64 => (Rmw::Xor, 8, true),
        O::DsWrxchgRtnB64 => (Rmw::Swap, 8, true),
        O::DsCmpstRtnB64 => (Rmw::CmpSwap, 8, true),
        O::DsMinRtnF64 => (Rmw::MinF64, 8, true),
        O::DsMaxRtnF64 => (Rmw::MaxF64, 8, true),
        O::DsAddRtnF64 => (Rmw::AddF64, 8, true),
        _ => return None,
    })
}

/// Dwords of a register operand in lane `l`, `n` of them from dword 0.
fn lane_dwords(regs: &[VReg], l: usize) -> [u32; 4] {
    let mut out = [0u32; 4];
    for (k, r) in regs.iter().enumerate().take(4) {
        out[k] = r[l];
    }
    out
}

impl Wave {
    fn read_regs(&self, op: Option<&Operand>, n: usize, ctx: &WaveContext<'_>) -> Vec<VReg> {
        match op {
            Some(o) => (0..n).map(|k| self.vread(o, k, ctx)).collect(),
            None => vec![[0; WAVE_SIZE]; n],
        }
    }

    fn lds_range(
        ctx: &WaveContext<'_>,
        off: u64,
        size: u64,
        pc: u64,
    ) -> Result<std::ops::Range<usize>, Fault> {
        let len = ctx.lds.len() as u64;
        match off.checked_add(size) {
            Some(end) if end <= len => Ok(off as usize..end as usize),
            _ => Err(Fault::LdsOutOfRange {
                offset: off,
                size,
                lds_size: len,
                pc,
            }),
        }
    }

    fn private_addr(base: u64, offset: u64, lane: usize) -> u64 {
        base.wrapping_add((offset / 4) * 256 + lane as u64 * 4 + offset % 4)
    }

    /// Loads `buf.len()` bytes (≤ 16) from `t`.
    fn load_target(
        &mut self,
        ctx: &WaveContext<'_>,
        t: Target,
        buf: &mut [u8],
        pc: u64,
    ) -> Result<(), Fault> {
        match t {
            Target::Global(a) => {
                let span = self
                    .regions
                    .translate(ctx.memory, a, buf.len() as u64, false, pc)?;
                let mut tmp = [0u8; 16];
                for k in (0..buf.len()).step_by(4) {
                    let n = (buf.len() - k).min(4);
                    if n == 4 {
                        tmp[k..k + 4].copy_from_slice(&span.load::<4>(k));
                    } else {
                        for j in 0..n {
                            tmp[k + j] = span.load::<1>(k + j)[0];
                        }
                    }
                }
                buf.copy_from_slice(&tmp[..buf.len()]);
            }
            Target::Lds(o) => {
                let r = Self::lds_range(ctx, o, buf.len() as u64, pc)?;
                buf.copy_from_slice(&ctx.lds[r]);
            }
            Target::Private { base, offset, lane } => {
                for (k, b) in buf.iter_mut().enumerate() {
                    let a = Self::private_addr(base, offset + k as u64, lane);
                    let span = self.regions.translate(ctx.memory, a, 1, false, pc)?;
                    *b = span.load::<1>(0)[0];
                }
            }
        }
        Ok(())
    }

    /// Stores `buf` (≤ 16 bytes) to `t`.
    fn store_target(
        &mut self,
        ctx: &mut WaveContext<'_>,
        t: Target,
        buf: &[u8],
        pc: u64,
    ) -> Result<(), Fault> {
        match t {
            Target::Global(a) => {
                let span = self
                    .regions
                    .translate(ctx.memory, a, buf.len() as u64, true, pc)?;
                for k in (0..buf.len()).step_by(4) {
                    let n = (buf.len() - k).min(4);
                    span.store(k, &buf[k..k + n]);
                }
            }
            Target::Lds(o) => {
                let r = Self::lds_range(ctx, o, buf.len() as u64, pc)?;
                ctx.lds[r].copy_from_slice(buf);
            }
            Target::Private { base, offset, lane } => {
                // Whole dwords at once when aligned; bytes otherwise.
                let mut k = 0usize;
                while k < buf.len() {
                    let off = offset + k as u64;
                    let n = if off & 3 == 0 && buf.len() - k >= 4 {
                        4
                    } else {
                        1
                    };
                    let a = Self::private_addr(base, off, lane);
                    let span = self.regions.translate(ctx.memory, a, n as u64, true, pc)?;
                    span.store(0, &buf[k..k + n]);
                    k += n;
                }
            }
        }
        Ok(())
    }

    /// An atomic on `t`; returns the old value.
    #[allow(clippy::too_many_arguments)]
    fn atomic_target(
        &mut self,
        ctx: &mut WaveContext<'_>,
        t: Target,
        op: Rmw,
        bytes: u32,
        data: u64,
        cmp: u64,
        pc: u64,
    ) -> Result<u64, Fault> {
        if let Target::Global(a) = t {
            let span = self
                .regions
                .translate_atomic(ctx.memory, a, u64::from(bytes), pc)?;
            if bytes == 4 {
                let at = span.atomic_u32();
                let (d, c) = (data as u32, cmp as u32);
                let old = match op {
                    Rmw::Swap => at.swap(d, Ordering::SeqCst),
                    Rmw::Add => at.fetch_add(d, Ordering::SeqCst),
                    Rmw::Sub => at.fetch_sub(d, Ordering::SeqCst),
                    Rmw::And => at.fetch_and(d, Ordering::SeqCst),
                    Rmw::Or => at.fetch_or(d, Ordering::SeqCst),
                    Rmw::Xor => at.fetch_xor(d, Ordering::SeqCst),
                    Rmw::UMin => at.fetch_min(d, Ordering::SeqCst),
                    Rmw::UMax => at.fetch_max(d, Ordering::SeqCst),
                    Rmw::CmpSwap => {
                        match at.compare_exchange(c, d, Ordering::SeqCst, Ordering::SeqCst) {
                            Ok(v) | Err(v) => v,
                        }
                    }
                    _ => match at.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| {
                        Some(op.apply32(o, d, c))
                    }) {
                        Ok(v) | Err(v) => v,
                    },
                };
                return Ok(u64::from(old));
            }
            let at = span.atomic_u64();
            let old = match op {
                Rmw::Swap => at.swap(data, Ordering::SeqCst),
                Rmw::Add => at.fetch_add(data, Ordering::SeqCst),
                Rmw::Sub => at.fetch_sub(data, Ordering::SeqCst),
                Rmw::And => at.fetch_and(data, Ordering::SeqCst),
                Rmw::Or => at.fetch_or(data, Ordering::SeqCst),
                Rmw::Xor => at.fetch_xor(data, Ordering::SeqCst),
                Rmw::UMin => at.fetch_min(data, Ordering::SeqCst),
                Rmw::UMax => at.fetch_max(data, Ordering::SeqCst),
                Rmw::CmpSwap => {
                    match at.compare_exchange(cmp, data, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(v) | Err(v) => v,
                    }
                }
                _ => match at.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| {
                    Some(op.apply64(o, data, cmp))
                }) {
                    Ok(v) | Err(v) => v,
                },
            };
            return Ok(old);
        }
        // LDS and private memory belong to this thread alone: plain read-modify-write.
        let mut buf = [0u8; 8];
        let n = bytes as usize;
        self.load_target(ctx, t, &mut buf[..n], pc)?;
        let old = u64::from_le_bytes(buf);
        let new = if bytes == 4 {
            u64::from(op.apply32(old as u32, data as u32, cmp as u32))
        } else {
            op.apply64(old, data, cmp)
        };
        self.store_target(ctx, t, &new.to_le_bytes()[..n], pc)?;
        Ok(old)
    }

    /// Runs one vector memory access for every active lane.
    #[allow(clippy::too_many_arguments)]
    fn run_access(
        &mut self,
        ctx: &mut WaveContext<'_>,
        access: Access,
        targets: &[Option<Target>; WAVE_SIZE],
        data: &[VReg],
        vdst: Option<Operand>,
        returns: bool,
        pc: u64,
    ) -> Result<(), Fault> {
        let exec = self.exec();
        match access {
            Access::Load { bytes, signed } => {
                let nd = (bytes as usize).div_ceil(4);
                let mut out = vec![[0u32; WAVE_SIZE]; nd];
                for l in 0..WAVE_SIZE {
                    let Some(t) = targets[l] else { continue };
                    let mut buf = [0u8; 16];
                    self.load_target(ctx, t, &mut buf[..bytes as usize], pc)
                        .map_err(|e| e.at_lane(l))?;
                    match (bytes, signed) {
                        (1, true) => out[0][l] = buf[0] as i8 as i32 as u32,
                        (2, true) => out[0][l] = i16::from_le_bytes([buf[0], buf[1]]) as i32 as u32,
                        _ => {
                            for (k, o) in out.iter_mut().enumerate() {
                                o[l] = u32::from_le_bytes([
                                    buf[4 * k],
                                    buf[4 * k + 1],
                                    buf[4 * k + 2],
                                    buf[4 * k + 3],
                                ]);
                            }
                        }
                    }
                }
                if let Some(d) = vdst.as_ref() {
                    for (k, o) in out.iter().enumerate() {
                        self.vwrite(d, k, o, exec);
                    }
                }
            }
            Access::Store { bytes, hi16 } => {
                for l in 0..WAVE_SIZE {
                    let Some(t) = targets[l] else { continue };
                    let mut words = lane_dwords(data, l);
                    if hi16 {
                        words[0] >>= 16;
                    }
                    let mut buf = [0u8; 16];
                    for (k, w) in words.iter().enumerate() {
                        buf[4 * k..4 * k + 4].copy_from_slice(&w.to_le_bytes());
                    }
                    self.store_target(ctx, t, &buf[..bytes as usize], pc)
                        .map_err(|e| e.at_lane(l))?;
                }
            }
            Access::Atomic { op, bytes } => {
                let nd = (bytes / 4) as usize;
                let mut out = vec![[0u32; WAVE_SIZE]; nd];
                for l in 0..WAVE_SIZE {
                    let Some(t) = targets[l] else { continue };
                    let w = lane_dwords(data, l);
                    let (d, c) = if bytes == 4 {
                        (u64::from(w[0]), u64::from(w[1]))
                    } else {
                        (
                            u64::from(w[0]) | u64::from(w[1]) << 32,
                            u64::from(w[2]) | u64::from(w[3]) << 32,
                        )
                    };
                    let old = self
                        .atomic_target(ctx, t, op, bytes, d, c, pc)
                        .map_err(|e| e.at_lane(l))?;
                    out[0][l] = old as u32;
                    if nd > 1 {
                        out[1][l] = (old >> 32) as u32;
                    }
                }
                if returns {
                    if let Some(dst) = vdst.as_ref() {
                        for (k, o) in out.iter().enumerate() {
                            self.vwrite(dst, k, o, exec);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn exec_flat(
        &mut self,
        i: &Flat,
        pc: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<(), Fault> {
        let unsup = |why: &str| unsupported(&Instruction::Flat(i.clone()), pc, why);
        let Some(access) = flat_access(i.op) else {
            return Err(unsup(
                "this FLAT/GLOBAL/SCRATCH instruction is not executed yet",
            ));
        };
        if i.lds {
            return Err(unsup("loads to LDS are not executed yet"));
        }
        let exec = self.exec();
        let offset = i64::from(i.offset);
        let flat_scratch = self.flat_scratch();
        let mut targets = [None; WAVE_SIZE];
        match i.seg {
            Segment::Flat | Segment::Global => {
                let base: [u64; WAVE_SIZE] = match (&i.saddr, &i.vaddr) {
                    (Some(s), Some(v)) => {
                        let sb = self.read_scalar(s, ctx);
                        let vo = self.vread(v, 0, ctx);
                        std::array::from_fn(|l| sb.wrapping_add(u64::from(vo[l])))
                    }
                    (None, Some(v)) => {
                        let lo = self.vread(v, 0, ctx);
                        let hi = self.vread(v, 1, ctx);
                        std::array::from_fn(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32)
                    }
                    _ => return Err(unsup("missing address operand")),
                };
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 0 {
                        continue;
                    }
                    let a = base[l].wrapping_add_signed(offset);
                    targets[l] = Some(if i.seg == Segment::Global {
                        Target::Global(a)
                    } else if a >> 32 == ctx.apertures.shared_base >> 32 {
                        Target::Lds(a & 0xFFFF_FFFF)
                    } else if a >> 32 == ctx.apertures.private_base >> 32 {
                        Target::Private {
                            base: flat_scratch,
                            offset: a & 0xFFFF_FFFF,
                            lane: l,
                        }
                    } else {
                        Target::Global(a)
                    });
                }
            }
            Segment::Scratch => {
                let base: [u64; WAVE_SIZE] = match (&i.saddr, &i.vaddr) {
                    (Some(s), _) => [self.read_scalar(s, ctx) & 0xFFFF_FFFF; WAVE_SIZE],
                    (None, Some(v)) => self.vread(v, 0, ctx).map(u64::from),
                    _ => [0; WAVE_SIZE],
                };
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 1 {
                        targets[l] = Some(Target::Private {
                            base: flat_scratch,
                            offset: base[l].wrapping_add_signed(offset) & 0xFFFF_FFFF,
                            lane: l,
                        });
                    }
                }
            }
        }
        let ndata = match access {
            Access::Load { .. } => 0,
            Access::Store { bytes, .. } => (bytes as usize).div_ceil(4),
            Access::Atomic { op, bytes } => {
                (bytes / 4) as usize * if op == Rmw::CmpSwap { 2 } else { 1 }
            }
        };
        let data = self.read_regs(i.data.as_ref(), ndata, ctx);
        self.run_access(ctx, access, &targets, &data, i.vdst, i.glc, pc)
    }

    pub(crate) fn exec_mubuf(
        &mut self,
        i: &Mubuf,
        pc: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<(), Fault> {
        use MubufOp as O;
        let unsup = |why: &str| unsupported(&Instruction::Mubuf(i.clone()), pc, why);
        match i.op {
            O::BufferWbl2 | O::BufferInvl2 | O::BufferWbinvl1 | O::BufferWbinvl1Vol => {
                std::sync::atomic::fence(Ordering::SeqCst);
                return Ok(());
            }
            _ => {}
        }
        let Some(access) = mubuf_access(i.op) else {
            return Err(unsup("this MUBUF instruction is not executed yet"));
        };
        if i.lds {
            return Err(unsup("loads to LDS are not executed yet"));
        }
        let Some(Operand::Sreg { code, .. }) = i.srsrc else {
            return Err(unsup("missing resource descriptor"));
        };
        let c = usize::from(code);
        let w: [u32; 4] = std::array::from_fn(|k| self.sgpr.get(c + k).copied().unwrap_or(0));
        let base = u64::from(w[0]) | u64::from(w[1] & 0xFFFF) << 32;
        let stride = u64::from((w[1] >> 16) & 0x3FFF);
        let swizzle = (w[1] >> 31) & 1 == 1;
        let add_tid = (w[3] >> 23) & 1 == 1;
        let elem = 2u64 << ((w[3] >> 19) & 3);
        let idx_stride = 8u64 << ((w[3] >> 21) & 3);
        let soffset = self.read_scalar(&i.soffset, ctx) & 0xFFFF_FFFF;
        let exec = self.exec();
        let (vidx, voff) = match (&i.vaddr, i.idxen, i.offen) {
            (Some(v), true, true) => (Some(self.vread(v, 0, ctx)), Some(self.vread(v, 1, ctx))),
            (Some(v), true, false) => (Some(self.vread(v, 0, ctx)), None),
            (Some(v), false, true) => (None, Some(self.vread(v, 0, ctx))),
            _ => (None, None),
        };
        if swizzle && (elem != 4 || idx_stride != 64 || stride != 0) {
            return Err(unsup("only the scratch-style swizzled buffer (4-byte elements, index stride 64, stride 0) is executed yet"));
        }
        let mut targets = [None; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            let index =
                vidx.map(|v| u64::from(v[l])).unwrap_or(0) + if add_tid { l as u64 } else { 0 };
            let off = u64::from(i.offset) + voff.map(|v| u64::from(v[l])).unwrap_or(0);
            targets[l] = Some(if swizzle {
                // Swizzled: per-dword rows of 64 lanes; soffset is not swizzled.
                Target::Private {
                    base: base.wrapping_add(soffset),
                    offset: off,
                    lane: index as usize % 64,
                }
            } else {
                Target::Global(
                    base.wrapping_add(soffset)
                        .wrapping_add(off)
                        .wrapping_add(index * stride),
                )
            });
        }
        let ndata = match access {
            Access::Store { bytes, .. } => (bytes as usize).div_ceil(4),
            _ => 0,
        };
        let data = self.read_regs(i.vdata.as_ref(), ndata, ctx);
        self.run_access(ctx, access, &targets, &data, i.vdata, i.glc, pc)
    }

    pub(crate) fn exec_ds(
        &mut self,
        i: &Ds,
        pc: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<(), Fault> {
        use DsOp as O;
        let unsup = |why: &str| unsupported(&Instruction::Ds(i.clone()), pc, why);
        if i.gds {
            return Err(unsup("GDS is not modelled"));
        }
        let exec = self.exec();
        let addr = match i.addr.as_ref() {
            Some(a) => self.vread(a, 0, ctx),
            None => [0; WAVE_SIZE],
        };
        let off = u64::from(i.offset());
        let single = |l: usize| -> Option<Target> {
            ((exec >> l) & 1 == 1).then(|| Target::Lds(u64::from(addr[l]) + off))
        };
        let targets: [Option<Target>; WAVE_SIZE] = std::array::from_fn(single);
        let simple = match i.op {
            O::DsWriteB8 => Some(Access::Store {
                bytes: 1,
                hi16: false,
            }),
            O::DsWriteB16 => Some(Access::Store {
                bytes: 2,
                hi16: false,
            }),
            O::DsWriteB8D16Hi => Some(Access::Store {
                bytes: 1,
                hi16: true,
            }),
            O::DsWriteB16D16Hi => Some(Access::Store {
                bytes: 2,
                hi16: true,
            }),
            O::DsWriteB32 => Some(Access::Store {
                bytes: 4,
                hi16: false,
            }),
            O::DsWriteB64 => Some(Access::Store {
                bytes: 8,
                hi16: false,
            }),
            O::DsWriteB96 => Some(Access::Store {
                bytes: 12,
                hi16: false,
            }),
            O::DsWriteB128 => Some(Access::Store {
                bytes: 16,
                hi16: false,
            }),
            O::DsReadI8 => Some(Access::Load {
                bytes: 1,
                signed: true,
            }),
            O::DsReadU8 => Some(Access::Load {
                bytes: 1,
                signed: false,
            }),
            O::DsReadI16 => Some(Access::Load {
                bytes: 2,
                signed: true,
            }),
            O::DsReadU16 => Some(Access::Load {
                bytes: 2,
                signed: false,
            }),
            O::DsReadB32 => Some(Access::Load {
                bytes: 4,
                signed: false,
            }),
            O::DsReadB64 => Some(Access::Load {
                bytes: 8,
                signed: false,
            }),
            O::DsReadB96 => Some(Access::Load {
                bytes: 12,
                signed: false,
            }),
            O::DsReadB128 => Some(Access::Load {
                bytes: 16,
                signed: false,
            }),
            _ => None,
        };
        if let Some(access) = simple {
            let n = match access {
                Access::Store { bytes, .. } => (bytes as usize).div_ceil(4),
                _ => 0,
            };
            let data = self.read_regs(i.data0.as_ref(), n, ctx);
            return self.run_access(ctx, access, &targets, &data, i.vdst, false, pc);
        }
        if let Some((rmw, bytes, returns)) = ds_rmw(i.op) {
            let nd = (bytes / 4) as usize;
            // DS cmpst: DATA0 = compare value, DATA1 = new value.
            let (newv, cmpv) = if rmw == Rmw::CmpSwap {
                (
                    self.read_regs(i.data1.as_ref(), nd, ctx),
                    self.read_regs(i.data0.as_ref(), nd, ctx),
                )
            } else {
                (
                    self.read_regs(i.data0.as_ref(), nd, ctx),
                    vec![[0; WAVE_SIZE]; nd],
                )
            };
            let mut data = newv;
            data.extend(cmpv);
            if bytes == 4 {
                // run_access expects [data, cmp] dwords for 32-bit ops.
                data.truncate(2);
            }
            return self.run_access(
                ctx,
                Access::Atomic { op: rmw, bytes },
                &targets,
                &data,
                i.vdst,
                returns,
                pc,
            );
        }
        match i.op {
            O::DsNop => Ok(()),
            O::DsWrite2B32
            | O::DsWrite2st64B32
            | O::DsWrite2B64
            | O::DsWrite2st64B64
            | O::DsRead2B32
            | O::DsRead2st64B32
            | O::DsRead2B64
            | O::DsRead2st64B64 => {
                let bytes: u64 = if matches!(
                    i.op,
                    O::DsWrite2B64 | O::DsWrite2st64B64 | O::DsRead2B64 | O::DsRead2st64B64
                ) {
                    8
                } else {
                    4
                };
                let unit = if matches!(
                    i.op,
                    O::DsWrite2st64B32 | O::DsWrite2st64B64 | O::DsRead2st64B32 | O::DsRead2st64B64
                ) {
                    bytes * 64
                } else {
                    bytes
                };
                let nd = (bytes / 4) as usize;
                let t0: [Option<Target>; WAVE_SIZE] = std::array::from_fn(|l| {
                    ((exec >> l) & 1 == 1)
                        .then(|| Target::Lds(u64::from(addr[l]) + u64::from(i.offset0) * unit))
                });
                let t1: [Option<Target>; WAVE_SIZE] = std::array::from_fn(|l| {
                    ((exec >> l) & 1 == 1)
                        .then(|| Target::Lds(u64::from(addr[l]) + u64::from(i.offset1) * unit))
                });
                if matches!(
                    i.op,
                    O::DsWrite2B32 | O::DsWrite2st64B32 | O::DsWrite2B64 | O::DsWrite2st64B64
                ) {
                    let d0 = self.read_regs(i.data0.as_ref(), nd, ctx);
                    let d1 = self.read_regs(i.data1.as_ref(), nd, ctx);
                    let acc = Access::Store {
                        bytes: bytes as u32,
                        hi16: false,
                    };
                    self.run_access(ctx, acc, &t0, &d0, None, false, pc)?;
                    self.run_access(ctx, acc, &t1, &d1, None, false, pc)
                } else {
                    let (lo, hi) = match i.vdst {
                        Some(Operand::Vgpr { index, count }) => (
                            Operand::Vgpr {
                                index,
                                count: count / 2,
                            },
                            Operand::Vgpr {
                                index: index + count / 2,
                                count: count / 2,
                            },
                        ),
                        Some(Operand::Agpr { index, count }) => (
                            Operand::Agpr {
                                index,
                                count: count / 2,
                            },
                            Operand::Agpr {
                                index: index + count / 2,
                                count: count / 2,
                            },
                        ),
                        _ => return Err(unsup("missing destination")),
                    };
                    let acc = Access::Load {
                        bytes: bytes as u32,
                        signed: false,
                    };
                    self.run_access(ctx, acc, &t0, &[], Some(lo), false, pc)?;
                    self.run_access(ctx, acc, &t1, &[], Some(hi), false, pc)
                }
            }
            O::DsBpermuteB32 | O::DsPermuteB32 => {
                let data = match i.data0.as_ref() {
                    Some(d) => self.vread(d, 0, ctx),
                    None => [0; WAVE_SIZE],
                };
                let mut out = [0u32; WAVE_SIZE];
                if i.op == O::DsBpermuteB32 {
                    // Lane l reads the lane named by its address; inactive sources read 0.
                    for l in 0..WAVE_SIZE {
                        let src = ((u64::from(addr[l]) + off) / 4 % 64) as usize;
                        out[l] = if (exec >> src) & 1 == 1 { data[src] } else { 0 };
                    }
                } else {
                    // Active lane l writes its data to the lane named by its address.
                    for l in 0..WAVE_SIZE {
                        if (exec >> l) & 1 == 1 {
                            let dst = ((u64::from(addr[l]) + off) / 4 % 64) as usize;
                            out[dst] = data[l];
                        }
                    }
                }
                if let Some(d) = i.vdst.as_ref() {
                    self.vwrite(d, 0, &out, exec);
                }
                Ok(())
            }
            _ => Err(unsup("this DS instruction is not executed yet")),
        }
    }
}
