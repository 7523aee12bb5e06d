//! Vector memory: DS (LDS), FLAT / GLOBAL / SCRATCH and MUBUF execution.
//!
//! Addressing follows LLVM's `DSInstructions.td`, `FLATInstructions.td` and
//! `BUFInstructions.td` (`llvm/lib/Target/AMDGPU/`), and `AMDGPUUsage.rst`'s
//! "Address Spaces", "Flat Scratch" and "Private Segment Buffer": flat addresses
//! are routed by their high dword (shared aperture
//! → LDS, private aperture → this lane's scratch, else global); scratch is swizzled
//! per lane (`base + (p/4)·256 + lane·4 + p%4` for wave64 with 4-byte elements).

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

use std::sync::atomic::Ordering;

use crate::arch::{VReg, WAVE_SIZE};
use crate::atomic::Rmw;
use crate::error::Fault;
use crate::generated::opcodes::{DsOp, FlatOp, MubufOp};
use crate::inst::{Ds, Flat, Instruction, Mubuf, Segment};
use crate::memory::HostSpan;
use crate::operand::Operand;
use crate::state::ScalarFlow;
use crate::state::{reg_base, Src};
use crate::state::{unsupported, Planned, WaveContext, WaveState};

/// Where one lane's access goes.
#[derive(Clone, Copy)]
enum Target {
    /// A global device address.
    Global(u64),
    /// A byte offset into the workgroup's LDS.
    Lds(u64),
    /// Byte `offset` of record `index` of a swizzled buffer (scratch, or a buffer
    /// resource with SWIZZLE_ENABLE): see [`Swizzle::address`].
    Swizzled {
        swz: Swizzle,
        offset: u64,
        index: u64,
    },
    /// An out-of-range buffer access: loads read zero, stores and atomics are dropped.
    Null,
}

/// The layout of a swizzled buffer (GCN/CDNA buffer addressing with SWIZZLE_ENABLE):
/// records of `stride` bytes, interleaved `index_stride` records at a time in
/// `element`-byte pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Swizzle {
    /// Address of record 0, byte 0 (base + soffset: soffset is not swizzled).
    base: u64,
    /// ELEMENT_SIZE in bytes (2, 4, 8 or 16).
    element: u64,
    /// INDEX_STRIDE in records (8, 16, 32 or 64).
    index_stride: u64,
    /// STRIDE in bytes.
    stride: u64,
}

impl Swizzle {
    /// Private (scratch) memory of a wave64: 4-byte elements, index stride 64, the
    /// lane as index, stride 0 (the V# ROCr builds: `AqlQueue::InitScratchSRD`
    /// in ROCR-Runtime's `src/core/runtime/amd_aql_queue.cpp`).
    fn scratch(base: u64) -> Self {
        Swizzle {
            base,
            element: 4,
            index_stride: 64,
            stride: 0,
        }
    }

    /// Device address of byte `offset` of record `index`:
    /// `base + (index / IS · stride + offset / ES · ES) · IS + (index % IS) · ES + offset % ES`.
    fn address(&self, index: u64, offset: u64) -> u64 {
        let (es, is) = (self.element, self.index_stride);
        let msb = (index / is)
            .wrapping_mul(self.stride)
            .wrapping_add((offset / es) * es);
        self.base
            .wrapping_add(msb.wrapping_mul(is))
            .wrapping_add((index % is) * es + offset % es)
    }
}

/// Kind of a vector memory operation, common to DS/FLAT/MUBUF.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Access {
    /// Load `bytes` (1, 2, 4, 8, 12, 16); `signed` sign-extends sub-dword loads.
    Load { bytes: u32, signed: bool },
    /// `_d16` / `_d16_hi` load of 1 or 2 bytes into the low (`hi` false) or high half
    /// of the destination dword, keeping the other half; bytes are zero- or
    /// sign-extended to 16 bits.
    LoadD16 { bytes: u32, signed: bool, hi: bool },
    /// Store `bytes`; `hi16` stores bits 31:16 of the data (d16_hi).
    Store { bytes: u32, hi16: bool },
    /// Atomic on `bytes` (4 or 8).
    Atomic { op: Rmw, bytes: u32 },
}

/// A GLOBAL or FLAT load or store of 4 or 8 bytes per lane, or a load of 1 or 2
/// bytes extended to a dword (`global_load_ushort`, not the `_d16` forms), resolved
/// at decode time: a 64-bit VGPR-pair address (the forms of LLVM 16's STREAM-like
/// loops), or a GLOBAL one with SADDR, an SGPR-pair base plus each lane's 32-bit
/// VGPR offset (the forms LLVM 19 emits for most global accesses). Runs by
/// [`Wave::run_flat_plan`] (whole-wave consecutive accesses and gathers; sub-dword
/// loads only lane by lane inside one region), which declines every other access to
/// the general path.
#[derive(Clone, Debug)]
pub(crate) struct FlatPlan {
    /// FLAT (the LDS and scratch apertures must be excluded) rather than GLOBAL.
    flat: bool,
    /// Bytes per lane: 4 or 8; 1 or 2 for a load.
    bytes: u8,
    /// A load (else a store).
    load: bool,
    /// A 1- or 2-byte load sign-extends its bytes to the dword (else zero-extends;
    /// `AMDGPUUsage.rst` and the ISA's `GLOBAL_LOAD_SBYTE`/`_SSHORT`).
    signed: bool,
    /// Vector-file index of the address pair's low dword; with `saddr`, of the
    /// lanes' 32-bit offsets.
    vaddr: usize,
    /// GLOBAL's SADDR: the scalar-file index of the SGPR pair whose 64-bit value
    /// each lane's zero-extended VADDR dword is added to, with the immediate offset,
    /// as [`WaveState::exec_flat_general`] computes it (LLVM's
    /// `llvm/lib/Target/AMDGPU/FLATInstructions.td`, `GLOBAL_*_SADDR`). `None`: a
    /// VGPR-pair address.
    saddr: Option<u8>,
    /// The instruction's immediate byte offset.
    offset: i64,
    /// Vector-file index of the first register of a store's DATA or a load's
    /// destination (`None`: a load without one).
    reg: Option<usize>,
}

/// A planned FLAT or GLOBAL access as a fused run makes it (see `valu::jit`, which
/// runs it only when its lanes address consecutive elements, as
/// [`Wave::run_flat_plan`] does first, and stops the run otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlatFusion {
    /// FLAT (the LDS and scratch apertures must be excluded) rather than GLOBAL.
    pub(crate) flat: bool,
    /// Bytes per lane: 4 or 8.
    pub(crate) bytes: u8,
    /// A load (else a store).
    pub(crate) load: bool,
    /// Vector-file index of the address pair's low dword.
    pub(crate) vaddr: u16,
    /// The instruction's immediate byte offset.
    pub(crate) offset: i64,
    /// Vector-file index of a load's destination or a store's data (a qword's low
    /// dword; its high dword in the next register).
    pub(crate) reg: u16,
    /// The plan's key in the wave's [`StrideTable`](crate::stride::StrideTable).
    pub(crate) key: u64,
}

/// How a fused run finds the private (scratch) bytes of a whole-wave access whose
/// lanes all name one offset into their own private space (see [`PrivateFusion`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PrivateAddress {
    /// A FLAT access through a generic pointer: the VGPR pair at vector-file index
    /// `vaddr` holds the same private-aperture address in every lane, plus `offset`.
    Flat {
        /// Vector-file index of the address pair's low dword.
        vaddr: u16,
        /// The instruction's immediate byte offset.
        offset: i64,
    },
    /// A MUBUF access without VADDR through the private segment buffer: the V# in
    /// the four SGPRs from scalar-file index `rsrc` (swizzled, ADD_TID, 4-byte
    /// elements, index stride 64, as ROCr builds it: `AqlQueue::InitScratchSRD`),
    /// SOFFSET added unswizzled, then the immediate `offset` (a multiple of 4).
    Buffer {
        /// Scalar-file index of the V#'s first dword.
        rsrc: u8,
        /// SOFFSET: a scalar-file index, or a constant.
        soffset: ScalarOffset,
        /// The instruction's immediate byte offset (a multiple of 4).
        offset: u16,
    },
}

/// A MUBUF SOFFSET a fused run reads (see [`PrivateAddress::Buffer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarOffset {
    /// The low dword of the SGPR at this scalar-file index.
    Sgpr(u8),
    /// An inline constant or literal.
    Const(u32),
}

/// A whole-wave private access a fused run makes (`valu::jit`): dword k of lane l
/// of the slot at private offset p is scratch byte `p + 4k` of lane l, at
/// `base + (p / 4 + k) · 256 + 4l` for wave64 (`AMDGPUUsage.rst`, "Private
/// Segment Buffer"; see [`Swizzle::scratch`]), so each dword of the access is one
/// row of 64 consecutive dwords: a stack slot or a spill of unoptimised code. The
/// run does it only when every lane is active and (FLAT) every lane's address is
/// lane 0's and in the private aperture, as [`Wave::run_flat_plan`] does, and stops
/// before it otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PrivateFusion {
    /// Where the bytes are.
    pub(crate) address: PrivateAddress,
    /// A load (else a store).
    pub(crate) load: bool,
    /// Dwords per lane: 1 to 4.
    pub(crate) dwords: u8,
    /// Vector-file index of a load's destination or a store's data.
    pub(crate) reg: u16,
}

/// A MUBUF load or store of 1 to 4 whole dwords through the private segment buffer
/// without VADDR (`buffer_store_dword v1, off, s[0:3], s33 offset:8`: the spills
/// and stack slots of unoptimised code), resolved at decode time for fused runs
/// ([`PrivateFusion`]); the interpreter runs it by [`WaveState::exec_mubuf`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScratchPlan(pub(crate) PrivateFusion);

impl ScratchPlan {
    /// The plan of `i`, if its form has one (see [`ScratchPlan`]).
    pub(crate) fn of(i: &Mubuf) -> Option<ScratchPlan> {
        if i.lds || i.idxen || i.offen || i.vaddr.is_some() || i.offset % 4 != 0 {
            return None;
        }
        let (bytes, load) = match mubuf_access(i.op)? {
            Access::Load { bytes, .. } => (bytes, true),
            Access::Store { bytes, hi16: false } => (bytes, false),
            _ => return None,
        };
        if !matches!(bytes, 4 | 8 | 12 | 16) {
            return None;
        }
        let rsrc = match i.srsrc? {
            Operand::Sreg { code, count: 4 } if code <= 98 => code,
            _ => return None,
        };
        let soffset = match i.soffset {
            Operand::Sreg { code, .. } if code <= 101 => ScalarOffset::Sgpr(code),
            Operand::Const { value, .. } => ScalarOffset::Const(value as u32),
            Operand::Literal { value, .. } => ScalarOffset::Const(value),
            _ => return None,
        };
        let reg = u16::try_from(reg_base(i.vdata.as_ref()?)?.0).ok()?;
        Some(ScratchPlan(PrivateFusion {
            address: PrivateAddress::Buffer {
                rsrc,
                soffset,
                offset: i.offset,
            },
            load,
            dwords: (bytes / 4) as u8,
            reg,
        }))
    }
}

impl FlatPlan {
    /// The plan's operands in one word, naming its instruction for the wave's
    /// [`StrideTable`](crate::stride::StrideTable) (the same from whichever copy of
    /// the plan runs).
    fn key(&self) -> u64 {
        let reg = self.reg.map_or(0x3FF, |r| r as u64);
        // The immediate offset is 13 bits signed: its low 24 bits name it.
        let saddr = self.saddr.map_or(0, |s| u64::from(s) + 1);
        (self.vaddr as u64)
            | reg << 10
            | u64::from(self.load) << 20
            | (self.offset as u64 & 0xFF_FFFF) << 21
            | saddr << 45
    }

    /// The plan as a fused run takes it (`valu::jit`): every FLAT or GLOBAL load or
    /// store of this kind that has its registers (a load, its destination) and a
    /// VGPR-pair address (none with SADDR: the run stops before those).
    pub(crate) fn fusion(&self) -> Option<FlatFusion> {
        if self.saddr.is_some() || self.bytes < 4 {
            return None;
        }
        Some(FlatFusion {
            flat: self.flat,
            bytes: self.bytes,
            load: self.load,
            vaddr: u16::try_from(self.vaddr).ok()?,
            offset: self.offset,
            reg: u16::try_from(self.reg?).ok()?,
            key: self.key(),
        })
    }

    /// The plan of `i`, if its form has one (see [`FlatPlan`]).
    pub(crate) fn of(i: &Flat) -> Option<FlatPlan> {
        if i.lds || !matches!(i.seg, Segment::Flat | Segment::Global) {
            return None;
        }
        let saddr = match i.saddr {
            None => None,
            Some(Operand::Sreg { code, count: 2 }) if i.seg == Segment::Global && code <= 100 => {
                Some(code)
            }
            Some(_) => return None,
        };
        let (bytes, load, signed) = match flat_access(i.op)? {
            Access::Load { bytes, signed } => (bytes, true, signed),
            Access::Store { bytes, hi16: false } => (bytes, false, false),
            _ => return None,
        };
        if !(bytes == 4 || bytes == 8 || load && bytes < 4) {
            return None;
        }
        let (vaddr, _) = reg_base(i.vaddr.as_ref()?)?;
        // DATA is a register (the plan declines anything else).
        let reg = match (load, i.vdst.as_ref(), i.data.as_ref()) {
            (true, None, _) => None,
            (true, Some(d), _) | (false, _, Some(d)) => Some(reg_base(d)?.0),
            (false, _, None) => return None,
        };
        Some(FlatPlan {
            flat: i.seg == Segment::Flat,
            bytes: bytes as u8,
            load,
            signed,
            vaddr,
            saddr,
            offset: i64::from(i.offset),
            reg,
        })
    }
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
        O::LoadUbyteD16 => d16(1, false, false),
        O::LoadUbyteD16Hi => d16(1, false, true),
        O::LoadSbyteD16 => d16(1, true, false),
        O::LoadSbyteD16Hi => d16(1, true, true),
        O::LoadShortD16 => d16(2, false, false),
        O::LoadShortD16Hi => d16(2, false, true),
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
                O::AtomicPkAddF16 => (Rmw::PkAddF16, 4),
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

impl Access {
    /// Dwords of DATA the operation reads: stores their size, atomics their size
    /// (twice for compare-swaps: data, then the compare value).
    fn data_dwords(self) -> usize {
        match self {
            Access::Load { .. } | Access::LoadD16 { .. } => 0,
            Access::Store { bytes, .. } => (bytes as usize).div_ceil(4),
            Access::Atomic { op, bytes } => {
                let two = matches!(op, Rmw::CmpSwap | Rmw::CmpSwapF32 | Rmw::CmpSwapF64);
                (bytes / 4) as usize * if two { 2 } else { 1 }
            }
        }
    }
}

/// A `_d16` load.
fn d16(bytes: u32, signed: bool, hi: bool) -> Access {
    Access::LoadD16 { bytes, signed, hi }
}

fn mubuf_access(op: MubufOp) -> Option<Access> {
    use MubufOp as O;
    let atomic = |op: Rmw, bytes: u32| Some(Access::Atomic { op, bytes });
    Some(match op {
        O::BufferLoadUbyteD16 => d16(1, false, false),
        O::BufferLoadUbyteD16Hi => d16(1, false, true),
        O::BufferLoadSbyteD16 => d16(1, true, false),
        O::BufferLoadSbyteD16Hi => d16(1, true, true),
        O::BufferLoadShortD16 => d16(2, false, false),
        O::BufferLoadShortD16Hi => d16(2, false, true),
        O::BufferAtomicSwap => return atomic(Rmw::Swap, 4),
        O::BufferAtomicCmpswap => return atomic(Rmw::CmpSwap, 4),
        O::BufferAtomicAdd => return atomic(Rmw::Add, 4),
        O::BufferAtomicSub => return atomic(Rmw::Sub, 4),
        O::BufferAtomicSmin => return atomic(Rmw::SMin, 4),
        O::BufferAtomicUmin => return atomic(Rmw::UMin, 4),
        O::BufferAtomicSmax => return atomic(Rmw::SMax, 4),
        O::BufferAtomicUmax => return atomic(Rmw::UMax, 4),
        O::BufferAtomicAnd => return atomic(Rmw::And, 4),
        O::BufferAtomicOr => return atomic(Rmw::Or, 4),
        O::BufferAtomicXor => return atomic(Rmw::Xor, 4),
        O::BufferAtomicInc => return atomic(Rmw::Inc, 4),
        O::BufferAtomicDec => return atomic(Rmw::Dec, 4),
        O::BufferAtomicAddF32 => return atomic(Rmw::AddF32, 4),
        O::BufferAtomicPkAddF16 => return atomic(Rmw::PkAddF16, 4),
        O::BufferAtomicAddF64 => return atomic(Rmw::AddF64, 8),
        O::BufferAtomicMinF64 => return atomic(Rmw::MinF64, 8),
        O::BufferAtomicMaxF64 => return atomic(Rmw::MaxF64, 8),
        O::BufferAtomicSwapX2 => return atomic(Rmw::Swap, 8),
        O::BufferAtomicCmpswapX2 => return atomic(Rmw::CmpSwap, 8),
        O::BufferAtomicAddX2 => return atomic(Rmw::Add, 8),
        O::BufferAtomicSubX2 => return atomic(Rmw::Sub, 8),
        O::BufferAtomicSminX2 => return atomic(Rmw::SMin, 8),
        O::BufferAtomicUminX2 => return atomic(Rmw::UMin, 8),
        O::BufferAtomicSmaxX2 => return atomic(Rmw::SMax, 8),
        O::BufferAtomicUmaxX2 => return atomic(Rmw::UMax, 8),
        O::BufferAtomicAndX2 => return atomic(Rmw::And, 8),
        O::BufferAtomicOrX2 => return atomic(Rmw::Or, 8),
        O::BufferAtomicXorX2 => return atomic(Rmw::Xor, 8),
        O::BufferAtomicIncX2 => return atomic(Rmw::Inc, 8),
        O::BufferAtomicDecX2 => return atomic(Rmw::Dec, 8),
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

/// The plain DS loads and stores (`ds_read_*`, `ds_write_*`, the d16 forms) of one
/// address per lane: their access; `None` for the other DS opcodes.
#[inline]
fn ds_access(op: DsOp) -> Option<Access> {
    use DsOp as O;
    Some(match op {
        O::DsWriteB8 => Access::Store {
            bytes: 1,
            hi16: false,
        },
        O::DsWriteB16 => Access::Store {
            bytes: 2,
            hi16: false,
        },
        O::DsWriteB8D16Hi => Access::Store {
            bytes: 1,
            hi16: true,
        },
        O::DsWriteB16D16Hi => Access::Store {
            bytes: 2,
            hi16: true,
        },
        O::DsWriteB32 => Access::Store {
            bytes: 4,
            hi16: false,
        },
        O::DsWriteB64 => Access::Store {
            bytes: 8,
            hi16: false,
        },
        O::DsWriteB96 => Access::Store {
            bytes: 12,
            hi16: false,
        },
        O::DsWriteB128 => Access::Store {
            bytes: 16,
            hi16: false,
        },
        O::DsReadI8 => Access::Load {
            bytes: 1,
            signed: true,
        },
        O::DsReadU8 => Access::Load {
            bytes: 1,
            signed: false,
        },
        O::DsReadI16 => Access::Load {
            bytes: 2,
            signed: true,
        },
        O::DsReadU16 => Access::Load {
            bytes: 2,
            signed: false,
        },
        O::DsReadB32 => Access::Load {
            bytes: 4,
            signed: false,
        },
        O::DsReadB64 => Access::Load {
            bytes: 8,
            signed: false,
        },
        O::DsReadB96 => Access::Load {
            bytes: 12,
            signed: false,
        },
        O::DsReadB128 => Access::Load {
            bytes: 16,
            signed: false,
        },
        O::DsReadU8D16 => d16(1, false, false),
        O::DsReadU8D16Hi => d16(1, false, true),
        O::DsReadI8D16 => d16(1, true, false),
        O::DsReadI8D16Hi => d16(1, true, true),
        O::DsReadU16D16 => d16(2, false, false),
        O::DsReadU16D16Hi => d16(2, false, true),
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
        O::DsCmpstF32 => (Rmw::CmpSwapF32, 4, false),
        O::DsCmpstRtnF32 => (Rmw::CmpSwapF32, 4, true),
        O::DsMskorB32 => (Rmw::Mskor, 4, false),
        O::DsMskorRtnB32 => (Rmw::Mskor, 4, true),
        O::DsWrapRtnB32 => (Rmw::Wrap, 4, true),
        O::DsCmpstF64 => (Rmw::CmpSwapF64, 8, false),
        O::DsCmpstRtnF64 => (Rmw::CmpSwapF64, 8, true),
        O::DsMskorB64 => (Rmw::Mskor, 8, false),
        O::DsMskorRtnB64 => (Rmw::Mskor, 8, true),
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

/// The lane `ds_swizzle_b32` with OFFSET `pattern` (below 0xE000) reads for lane `l`:
/// bit 15 set: quad permute, lane `l` of each group of four takes the lane chosen by
/// bits [2·(l%4)+1 : 2·(l%4)]; bit 15 clear: within each 32-lane half,
/// `((l & and) | or) ^ xor` with and = bits 4:0, or = bits 9:5, xor = bits 14:10.
fn swizzle_source(pattern: u16, l: usize) -> usize {
    let p = usize::from(pattern);
    if p & 0x8000 != 0 {
        (l & !3) | ((p >> (2 * (l & 3))) & 3)
    } else {
        let (and, or, xor) = (p & 0x1F, (p >> 5) & 0x1F, (p >> 10) & 0x1F);
        (l & 0x20) | ((((l & 0x1F) & and) | or) ^ xor)
    }
}

/// The lowest and highest address of the lanes in `exec` (`(u64::MAX, 0)` for none).
#[inline(always)]
fn bounds_body(addrs: &[u64; WAVE_SIZE], exec: u64) -> (u64, u64) {
    if exec == u64::MAX {
        let lo = addrs.iter().copied().fold(u64::MAX, u64::min);
        let hi = addrs.iter().copied().fold(0, u64::max);
        return (lo, hi);
    }
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for l in 0..WAVE_SIZE {
        // All ones in active lanes, zero in the others (branch-free).
        let on = 0u64.wrapping_sub((exec >> l) & 1);
        lo = lo.min(addrs[l] | !on);
        hi = hi.max(addrs[l] & on);
    }
    (lo, hi)
}

/// The lowest and highest of the 64-bit lane values `lo[l] | hi[l] << 32` when every
/// lane's high dword is lane 0's (addresses inside one 4 GiB window: 32-bit
/// minima and maxima suffice); `None` otherwise.
#[inline(always)]
fn pair_bounds_body(lo: &VReg, hi: &VReg) -> Option<(u64, u64)> {
    let h = hi[0];
    if hi.iter().any(|&x| x != h) {
        return None;
    }
    let min = lo.iter().copied().min().unwrap_or(0);
    let max = lo.iter().copied().max().unwrap_or(0);
    let base = u64::from(h) << 32;
    Some((base | u64::from(min), base | u64::from(max)))
}

/// `pair_bounds_body` with AVX2 32-bit minima and maxima, eight lanes at a time.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pair_bounds_avx2(lo: &VReg, hi: &VReg) -> Option<(u64, u64)> {
    use std::arch::x86_64::{
        _mm256_loadu_si256, _mm256_max_epu32, _mm256_min_epu32, _mm256_or_si256, _mm256_set1_epi32,
        _mm256_setzero_si256, _mm256_storeu_si256, _mm256_testz_si256, _mm256_xor_si256,
    };
    let h = _mm256_set1_epi32(hi[0] as i32);
    let (mut diff, mut min, mut max) = (
        _mm256_setzero_si256(),
        _mm256_set1_epi32(-1),
        _mm256_setzero_si256(),
    );
    for c in 0..WAVE_SIZE / 8 {
        // SAFETY: dwords 8c..8c + 8 of each 64-dword row are in bounds (c < 8).
        let (l, x) = unsafe {
            (
                _mm256_loadu_si256(lo.as_ptr().add(8 * c).cast()),
                _mm256_loadu_si256(hi.as_ptr().add(8 * c).cast()),
            )
        };
        diff = _mm256_or_si256(diff, _mm256_xor_si256(x, h));
        min = _mm256_min_epu32(min, l);
        max = _mm256_max_epu32(max, l);
    }
    if _mm256_testz_si256(diff, diff) == 0 {
        return None;
    }
    let (mut mins, mut maxs) = ([0u32; 8], [0u32; 8]);
    // SAFETY: each array holds 8 dwords.
    unsafe {
        _mm256_storeu_si256(mins.as_mut_ptr().cast(), min);
        _mm256_storeu_si256(maxs.as_mut_ptr().cast(), max);
    }
    let base = u64::from(hi[0]) << 32;
    let (min, max) = (
        mins.iter().copied().min().unwrap_or(0),
        maxs.iter().copied().max().unwrap_or(0),
    );
    Some((base | u64::from(min), base | u64::from(max)))
}

/// A row of zero dwords: the high dwords of GLOBAL's zero-extended 32-bit VADDR
/// offsets, for the VGPR-pair helpers.
static ZERO_ROW: VReg = [0; WAVE_SIZE];

/// See [`pair_bounds_body`].
#[inline]
fn pair_bounds(lo: &VReg, hi: &VReg) -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    if crate::arch::host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { pair_bounds_avx2(lo, hi) };
    }
    pair_bounds_body(lo, hi)
}

/// Whether lane l's address is `addrs[0] + l·step` in every lane, without wrapping.
#[inline(always)]
fn consecutive_body(addrs: &[u64; WAVE_SIZE], step: u64) -> bool {
    let base = addrs[0];
    if base.checked_add(step * (WAVE_SIZE as u64 - 1)).is_none() {
        return false;
    }
    let mut same = 0u64;
    for l in 0..WAVE_SIZE {
        same |= addrs[l] ^ base.wrapping_add(step * l as u64);
    }
    same == 0
}

/// `bounds_body` compiled with AVX2 (64-bit lane compares).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn bounds_avx2(addrs: &[u64; WAVE_SIZE], exec: u64) -> (u64, u64) {
    bounds_body(addrs, exec)
}

/// `consecutive_body` compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn consecutive_avx2(addrs: &[u64; WAVE_SIZE], step: u64) -> bool {
    consecutive_body(addrs, step)
}

/// Lane l's 64-bit address: `lo[l] | hi[l] << 32` (a VGPR pair) plus `offset`,
/// wrapping.
#[inline(always)]
fn pair_addresses_body(lo: &VReg, hi: &VReg, offset: i64, out: &mut [u64; WAVE_SIZE]) {
    for (l, a) in out.iter_mut().enumerate() {
        *a = (u64::from(lo[l]) | u64::from(hi[l]) << 32).wrapping_add_signed(offset);
    }
}

/// `pair_addresses_body` compiled with AVX2 (four 64-bit lanes per instruction;
/// the baseline build does them one by one).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pair_addresses_avx2(lo: &VReg, hi: &VReg, offset: i64, out: &mut [u64; WAVE_SIZE]) {
    pair_addresses_body(lo, hi, offset, out)
}

/// See [`pair_addresses_body`]; written into `out` (a wave's gather note: in place,
/// rather than returned and copied there).
#[inline]
fn pair_addresses_into(lo: &VReg, hi: &VReg, offset: i64, out: &mut [u64; WAVE_SIZE]) {
    #[cfg(target_arch = "x86_64")]
    if crate::arch::host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { pair_addresses_avx2(lo, hi, offset, out) };
    }
    pair_addresses_body(lo, hi, offset, out)
}

/// See [`pair_addresses_body`].
#[inline]
fn pair_addresses(lo: &VReg, hi: &VReg, offset: i64) -> [u64; WAVE_SIZE] {
    let mut out = [0; WAVE_SIZE];
    pair_addresses_into(lo, hi, offset, &mut out);
    out
}

/// The lowest and highest address of the lanes in `exec` (`(u64::MAX, 0)` for none).
#[inline]
fn lane_bounds(addrs: &[u64; WAVE_SIZE], exec: u64) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    if crate::arch::host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { bounds_avx2(addrs, exec) };
    }
    bounds_body(addrs, exec)
}

/// Whether lane l's address is `addrs[0] + l·step` in every lane (no wrap-around).
#[inline]
fn consecutive(addrs: &[u64; WAVE_SIZE], step: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::arch::host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { consecutive_avx2(addrs, step) };
    }
    consecutive_body(addrs, step)
}

/// Whether the 64-bit lane addresses `lo[l] | hi[l] << 32` (a VGPR pair) plus
/// `offset` are `base + l·step` in every lane, `base` being lane 0's, with no
/// wrap-around; the lane addresses are never gathered into a table.
///
/// When lane 0's low dword leaves room for the whole run (no carry out of it), the
/// check is done on 32-bit lanes: every high dword equals lane 0's and every low
/// dword is lane 0's + l·step. Otherwise each lane's 64-bit address is compared.
#[inline(always)]
fn pair_consecutive_body(lo: &VReg, hi: &VReg, offset: i64, step: u64) -> bool {
    let a0 = u64::from(lo[0]) | u64::from(hi[0]) << 32;
    let span = step * (WAVE_SIZE as u64 - 1);
    if a0.wrapping_add_signed(offset).checked_add(span).is_none() {
        return false;
    }
    // Adding the same offset to every lane keeps the differences: compare raw.
    if u64::from(lo[0]) + span <= u64::from(u32::MAX) {
        let (lo0, hi0) = (lo[0], hi[0]);
        let mut diff = 0u32;
        if step.is_power_of_two() {
            // The element sizes (4, 8): lane offsets by a shift, not a multiply.
            let shift = step.trailing_zeros();
            for l in 0..WAVE_SIZE {
                diff |= (hi[l] ^ hi0) | (lo[l] ^ lo0.wrapping_add((l as u32) << shift));
            }
        } else {
            let step = step as u32;
            for l in 0..WAVE_SIZE {
                diff |= (hi[l] ^ hi0) | (lo[l] ^ lo0.wrapping_add(step.wrapping_mul(l as u32)));
            }
        }
        return diff == 0;
    }
    let mut same = 0u64;
    for l in 0..WAVE_SIZE {
        same |= (u64::from(lo[l]) | u64::from(hi[l]) << 32) ^ a0.wrapping_add(step * l as u64);
    }
    same == 0
}

/// `pair_consecutive_body` compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pair_consecutive_avx2(lo: &VReg, hi: &VReg, offset: i64, step: u64) -> bool {
    pair_consecutive_body(lo, hi, offset, step)
}

/// See [`pair_consecutive_body`].
#[inline]
fn pair_consecutive(lo: &VReg, hi: &VReg, offset: i64, step: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::arch::host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { pair_consecutive_avx2(lo, hi, offset, step) };
    }
    pair_consecutive_body(lo, hi, offset, step)
}

/// The accesses [`WaveState::swizzled_fast`] moves: whole-dword loads and stores of 4,
/// 8, 12 or 16 bytes through a swizzle of dword-or-larger power-of-two elements and
/// a power-of-two index stride. Returns the dwords per lane and whether it loads;
/// `None` for any other access.
fn swizzled_form(access: Access, swz: &Swizzle) -> Option<(usize, bool)> {
    let (bytes, load) = match access {
        Access::Load { bytes, .. } => (bytes as usize, true),
        Access::Store { bytes, hi16: false } => (bytes as usize, false),
        _ => return None,
    };
    let shaped = matches!(bytes, 4 | 8 | 12 | 16)
        && swz.element >= 4
        && swz.element.is_power_of_two()
        && swz.index_stride.is_power_of_two();
    shaped.then_some((bytes / 4, load))
}

/// Whether every lane's address pair (`lo`, `hi`) is lane 0's and lies in the
/// private aperture: the generic pointer to a stack slot that unoptimised code
/// passes to FLAT (every lane's private byte p is its own scratch byte p).
#[inline]
fn private_uniform(lo: &VReg, hi: &VReg, ctx: &WaveContext<'_>) -> bool {
    u64::from(hi[0]) == ctx.apertures.private_base >> 32
        && active_alike(lo, u64::MAX)
        && active_alike(hi, u64::MAX)
}

/// Whether the addresses `lo..=hi` meet the LDS or the scratch aperture (each the
/// 4 GiB from its base's high dword, `AMDGPUUsage.rst`, "Address Spaces").
fn meets_aperture(lo: u64, hi: u64, ctx: &WaveContext<'_>) -> bool {
    let meets = |aperture: u64| {
        let start = aperture & !0xFFFF_FFFF;
        start <= hi && lo <= start | 0xFFFF_FFFF
    };
    meets(ctx.apertures.shared_base) || meets(ctx.apertures.private_base)
}

/// GLOBAL's SADDR lane addresses: `base` (the SGPR pair plus the immediate offset,
/// [`WaveState::saddr_base`]) plus each lane's zero-extended dword of `offsets`,
/// wrapping as [`WaveState::exec_flat_general`] adds.
fn saddr_addresses_into(base: u64, offsets: &VReg, out: &mut [u64; WAVE_SIZE]) {
    for (a, &x) in out.iter_mut().zip(offsets) {
        *a = base.wrapping_add(u64::from(x));
    }
}

/// Whether every lane of `row` that `exec` (not empty) names holds one value (one
/// pass over the whole row, which the compiler vectorises).
#[inline]
fn active_alike(row: &VReg, exec: u64) -> bool {
    let first = row[exec.trailing_zeros() as usize % WAVE_SIZE];
    // Each lane's difference from the first, kept for the active lanes only (all
    // ones or zero from EXEC's bit): no branch per lane.
    let differs = row.iter().enumerate().fold(0u32, |d, (l, &x)| {
        d | ((x ^ first) & 0u32.wrapping_sub((exec >> l) as u32 & 1))
    });
    differs == 0
}

/// The `bytes` (1, 2, 4 or 8) at byte `off` of `span` as a lane's load leaves them in
/// its registers: 1 and 2 zero-extended, or sign-extended when `signed`, to the low
/// dword (`GLOBAL_LOAD_UBYTE`, `_SBYTE`, `_USHORT`, `_SSHORT`); 8 with the high dword
/// in bits 63:32.
fn lane_value(span: &HostSpan<'_>, off: usize, bytes: u8, signed: bool) -> u64 {
    let v = match (bytes, signed) {
        (1, false) => u32::from(span.load::<1>(off)[0]),
        (1, true) => i32::from(span.load::<1>(off)[0] as i8) as u32,
        (2, false) => u32::from(u16::from_le_bytes(span.load::<2>(off))),
        (2, true) => i32::from(i16::from_le_bytes(span.load::<2>(off))) as u32,
        (4, _) => span.load_u32(off),
        _ => return span.load_u64(off),
    };
    u64::from(v)
}

/// Whether the address `lo`, `hi` plus `offset` (lane 0's, of a FLAT access) lies in
/// the shared or private aperture of `ctx` (the caller then checks every active
/// lane's).
fn apertured(lo: u32, hi: u32, offset: i64, ctx: &WaveContext<'_>) -> bool {
    let top = (u64::from(lo) | u64::from(hi) << 32).wrapping_add_signed(offset) >> 32;
    top == ctx.apertures.shared_base >> 32 || top == ctx.apertures.private_base >> 32
}

/// The register operand of `count` dwords at vector-file index `reg` (an AGPR from
/// [`AGPR_BASE`](crate::arch::AGPR_BASE) on), as [`reg_base`] reads it back.
fn register_operand(reg: usize, count: usize) -> Operand {
    let count = count as u8;
    match reg.checked_sub(crate::arch::AGPR_BASE) {
        Some(a) => Operand::Agpr {
            index: a as u8,
            count,
        },
        None => Operand::Vgpr {
            index: reg as u8,
            count,
        },
    }
}

/// Dwords of a register operand in lane `l`, `n` of them from dword 0.
fn lane_dwords(regs: &[VReg], l: usize) -> [u32; 4] {
    let mut out = [0u32; 4];
    for (k, r) in regs.iter().enumerate().take(4) {
        out[k] = r[l];
    }
    out
}

impl WaveState {
    /// Dwords `0..n` (n ≤ 4) of a data operand in every lane, in a fixed table (no
    /// heap allocation); dwords from `n` on, and all of a missing operand, are zero.
    fn read_regs(&self, op: Option<&Operand>, n: usize, ctx: &WaveContext<'_>) -> [VReg; 4] {
        let mut out = [[0u32; WAVE_SIZE]; 4];
        if let Some(o) = op {
            for (k, r) in out.iter_mut().enumerate().take(n) {
                *r = match self.vsrc(o, k, ctx) {
                    Src::Reg(v) => *v,
                    Src::Splat(x) => [x; WAVE_SIZE],
                };
            }
        }
        out
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

    /// The contiguous pieces of a swizzled access of `len` bytes: (byte position in
    /// the access, device address, piece length). A piece never crosses an element.
    fn swizzled_pieces(
        swz: Swizzle,
        index: u64,
        offset: u64,
        len: usize,
    ) -> impl Iterator<Item = (usize, u64, usize)> {
        let mut k = 0usize;
        std::iter::from_fn(move || {
            if k >= len {
                return None;
            }
            let off = offset.wrapping_add(k as u64);
            let room = (swz.element - off % swz.element) as usize;
            let n = room.min(len - k);
            let piece = (k, swz.address(index, off), n);
            k += n;
            Some(piece)
        })
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
                span.load_into(0, buf);
            }
            Target::Lds(o) => {
                let r = Self::lds_range(ctx, o, buf.len() as u64, pc)?;
                buf.copy_from_slice(&ctx.lds[r]);
            }
            Target::Swizzled { swz, offset, index } => {
                for (k, a, n) in Self::swizzled_pieces(swz, index, offset, buf.len()) {
                    self.load_target(ctx, Target::Global(a), &mut buf[k..k + n], pc)?;
                }
            }
            Target::Null => buf.fill(0),
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
                span.store(0, buf);
            }
            Target::Lds(o) => {
                let r = Self::lds_range(ctx, o, buf.len() as u64, pc)?;
                ctx.lds[r].copy_from_slice(buf);
            }
            Target::Swizzled { swz, offset, index } => {
                for (k, a, n) in Self::swizzled_pieces(swz, index, offset, buf.len()) {
                    self.store_target(ctx, Target::Global(a), &buf[k..k + n], pc)?;
                }
            }
            Target::Null => {}
        }
        Ok(())
    }

    /// A host atomic (sequentially consistent) of `bytes` (4 or 8) at global address
    /// `a`: memory shared with waves on other host threads and with the host. Returns
    /// the old value. Operations without a native host atomic run as a CAS loop.
    ///
    /// # Errors
    /// [`Fault::Memory`] or [`Fault::MisalignedAtomic`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn global_atomic(
        &mut self,
        mem: &dyn crate::memory::GlobalMemory,
        a: u64,
        op: Rmw,
        bytes: u32,
        data: u64,
        cmp: u64,
        pc: u64,
    ) -> Result<u64, Fault> {
        let span = self
            .regions
            .translate_atomic(mem, a, u64::from(bytes), pc)?;
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
        Ok(old)
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
        match t {
            Target::Global(a) => {
                return self.global_atomic(ctx.memory, a, op, bytes, data, cmp, pc);
            }
            Target::Null => return Ok(0),
            // An atomic inside one element of a swizzled buffer is a plain global atomic.
            Target::Swizzled { swz, offset, index }
                if offset % swz.element + u64::from(bytes) <= swz.element =>
            {
                let a = swz.address(index, offset);
                return self.global_atomic(ctx.memory, a, op, bytes, data, cmp, pc);
            }
            Target::Lds(_) | Target::Swizzled { .. } => {}
        }
        // LDS belongs to this workgroup, which runs on one thread: plain read-modify-write.
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
                let mut out = [[0u32; WAVE_SIZE]; 4];
                let out = &mut out[..nd];
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
            Access::LoadD16 { bytes, signed, hi } => {
                let Some(d) = vdst else { return Ok(()) };
                let mut out = self.vread(&d, 0, ctx);
                for l in 0..WAVE_SIZE {
                    let Some(t) = targets[l] else { continue };
                    let mut buf = [0u8; 2];
                    self.load_target(ctx, t, &mut buf[..bytes as usize], pc)
                        .map_err(|e| e.at_lane(l))?;
                    let half = match (bytes, signed) {
                        (1, true) => buf[0] as i8 as i16 as u16,
                        (1, false) => u16::from(buf[0]),
                        _ => u16::from_le_bytes(buf),
                    };
                    out[l] = if hi {
                        (out[l] & 0xFFFF) | u32::from(half) << 16
                    } else {
                        (out[l] & 0xFFFF_0000) | u32::from(half)
                    };
                }
                self.vwrite(&d, 0, &out, exec);
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
                let mut out = [[0u32; WAVE_SIZE]; 2];
                let out = &mut out[..nd];
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

    /// Plain global loads and stores (no atomics, no D16 loads) whose active lanes all
    /// fall inside one region (`lo`..`hi`: the lowest and highest lane address, see
    /// `lane_bounds`): one region check for the whole wave, then each lane's
    /// access in lane order, exactly as the per-lane path makes them. Returns false
    /// (having done nothing) when the lanes' range is not inside one region, so that
    /// the per-lane path runs and reports the faulting lane.
    #[allow(clippy::too_many_arguments)]
    fn global_fast(
        &mut self,
        ctx: &WaveContext<'_>,
        access: Access,
        addrs: &[u64; WAVE_SIZE],
        (lo, hi): (u64, u64),
        seq: bool,
        exec: u64,
        data: Option<Operand>,
        vdst: Option<Operand>,
    ) -> bool {
        let (bytes, load, signed, hi16) = match access {
            Access::Load { bytes, signed } => (bytes as usize, true, signed, false),
            Access::Store { bytes, hi16 } => (bytes as usize, false, false, hi16),
            _ => return false,
        };
        if exec == 0 || bytes == 0 || bytes > 16 {
            return false;
        }
        // Every lane's address follows the previous one: one span, one pass.
        let reg = if load { vdst } else { data };
        if seq
            && self.consecutive_fast(
                ctx,
                lo,
                bytes,
                load,
                reg.as_ref().and_then(reg_base).map(|(r, _)| r),
                None,
            )
        {
            return true;
        }
        let Some(size) = (hi - lo).checked_add(bytes as u64) else {
            return false;
        };
        if !self.regions.ensure(ctx.memory, lo, size) {
            return false;
        }
        // Every active lane at one address (a value all lanes reach through one
        // pointer): one access. A load gives every lane the same value; of the
        // stores, made in lane order, the last active lane's is what remains.
        if lo == hi && (bytes == 4 || bytes == 8) && !hi16 {
            return self.uniform_fast(ctx, lo, bytes, load, exec, data, vdst);
        }
        let nd = bytes.div_ceil(4);
        if load {
            let Some(d) = vdst else { return true };
            let mut out = [[0u32; WAVE_SIZE]; 4];
            {
                let Some(span) = self.regions.cached(lo, size) else {
                    return false;
                };
                // Scattered lanes (a gather): start every lane's cache miss first.
                if size > 64 * 64 {
                    let mut m = exec;
                    while m != 0 {
                        let l = m.trailing_zeros() as usize;
                        m &= m - 1;
                        span.prefetch((addrs[l] - lo) as usize);
                    }
                }
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let off = (addrs[l] - lo) as usize;
                    match (bytes, signed) {
                        (4, _) => out[0][l] = span.load_u32(off),
                        (8, _) => {
                            let v = span.load_u64(off);
                            out[0][l] = v as u32;
                            out[1][l] = (v >> 32) as u32;
                        }
                        (1, true) => out[0][l] = span.load::<1>(off)[0] as i8 as i32 as u32,
                        (1, false) => out[0][l] = u32::from(span.load::<1>(off)[0]),
                        (2, true) => {
                            out[0][l] = i16::from_le_bytes(span.load::<2>(off)) as i32 as u32
                        }
                        (2, false) => {
                            out[0][l] = u32::from(u16::from_le_bytes(span.load::<2>(off)))
                        }
                        _ => {
                            let mut buf = [0u8; 16];
                            span.load_into(off, &mut buf[..bytes]);
                            for k in 0..nd {
                                out[k][l] = u32::from_le_bytes([
                                    buf[4 * k],
                                    buf[4 * k + 1],
                                    buf[4 * k + 2],
                                    buf[4 * k + 3],
                                ]);
                            }
                        }
                    }
                }
            }
            for (k, o) in out.iter().enumerate().take(nd) {
                self.vwrite(&d, k, o, exec);
            }
            return true;
        }
        let none = Operand::Const {
            code: 128,
            value: 0,
        };
        let op = data.unwrap_or(none);
        let src: [Src<'_>; 4] = std::array::from_fn(|k| {
            if data.is_some() && k < nd {
                self.vsrc(&op, k, ctx)
            } else {
                Src::Splat(0)
            }
        });
        let Some(span) = self.regions.cached(lo, size) else {
            return false;
        };
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            let off = (addrs[l] - lo) as usize;
            match bytes {
                4 => span.store_u32(off, src[0].at(l)),
                8 => span.store_u64(off, u64::from(src[0].at(l)) | u64::from(src[1].at(l)) << 32),
                1 | 2 => {
                    let w = if hi16 {
                        src[0].at(l) >> 16
                    } else {
                        src[0].at(l)
                    };
                    span.store(off, &w.to_le_bytes()[..bytes]);
                }
                _ => {
                    let mut buf = [0u8; 16];
                    for (k, s) in src.iter().enumerate().take(nd) {
                        buf[4 * k..4 * k + 4].copy_from_slice(&s.at(l).to_le_bytes());
                    }
                    span.store(off, &buf[..bytes]);
                }
            }
        }
        true
    }

    /// A 4- or 8-byte load or store (`bytes`) whose 64 lanes address consecutive
    /// elements from `base` (lane l at `base + l·bytes`, every lane active): one
    /// region check, then the dwords or qwords in lane order, each a relaxed atomic,
    /// moved between memory and the registers from vector-file index `reg` (the
    /// destination of a load, the data of a store; a qword's low dword in `reg`, its
    /// high dword in `reg + 1`). Returns false, having done nothing visible, when the
    /// range is not inside one region, the host address is not naturally aligned, or
    /// a register is outside the wave's file (the general path then runs and reports
    /// any fault). A load without a destination (`reg` = None) only checks the range.
    ///
    /// `ahead`: where the next access of the same instruction is predicted to start
    /// (see `stride`); when the region of this one holds it too, its lines are asked
    /// for first (for writing, for a store), found without a second lookup.
    fn consecutive_fast(
        &mut self,
        ctx: &WaveContext<'_>,
        base: u64,
        bytes: usize,
        load: bool,
        reg: Option<usize>,
        ahead: Option<u64>,
    ) -> bool {
        let size = (WAVE_SIZE * bytes) as u64;
        let Some(r) = reg else {
            return load && self.regions.span(ctx.memory, base, size).is_some();
        };
        let rows = bytes / 4;
        if r + rows > self.vgpr.len() {
            return false;
        }
        let Some((span, next)) = self.regions.span_and_next(ctx.memory, base, size, ahead) else {
            return false;
        };
        if let Some(next) = next {
            next.prefetch_all(!load);
        }
        let vgpr = &mut self.vgpr;
        match (load, rows) {
            (true, 1) => span.load_dwords(0, &mut vgpr[r]),
            (true, _) => {
                let (a, b) = vgpr[r..].split_at_mut(1);
                span.load_qword_planes(0, &mut a[0], &mut b[0])
            }
            (false, 1) => span.store_dwords(0, &vgpr[r]),
            (false, _) => span.store_qword_planes(0, &vgpr[r], &vgpr[r + 1]),
        }
    }

    /// A 4- or 8-byte load or store whose active lanes all address `addr` (the range
    /// was checked by the caller): one memory access (see
    /// [`global_fast`](Self::global_fast)).
    #[allow(clippy::too_many_arguments)]
    fn uniform_fast(
        &mut self,
        ctx: &WaveContext<'_>,
        addr: u64,
        bytes: usize,
        load: bool,
        exec: u64,
        data: Option<Operand>,
        vdst: Option<Operand>,
    ) -> bool {
        let size = bytes as u64;
        if load {
            let v = {
                let Some(span) = self.regions.cached(addr, size) else {
                    return false;
                };
                if bytes == 8 {
                    span.load_u64(0)
                } else {
                    u64::from(span.load_u32(0))
                }
            };
            if let Some(d) = vdst {
                self.vwrite(&d, 0, &[v as u32; WAVE_SIZE], exec);
                if bytes == 8 {
                    self.vwrite(&d, 1, &[(v >> 32) as u32; WAVE_SIZE], exec);
                }
            }
            return true;
        }
        let Some(op) = data else { return false };
        let last = 63 - exec.leading_zeros() as usize;
        let lo = self.vsrc(&op, 0, ctx).at(last);
        let hi = if bytes == 8 {
            self.vsrc(&op, 1, ctx).at(last)
        } else {
            0
        };
        let Some(span) = self.regions.cached(addr, size) else {
            return false;
        };
        if bytes == 8 {
            span.store_u64(0, u64::from(lo) | u64::from(hi) << 32);
        } else {
            span.store_u32(0, lo);
        }
        true
    }

    /// [`swizzled_fast`](Self::swizzled_fast) with one active lane, `l` (LLVM's team
    /// state kept in scratch by lane 0): its dwords at `(index, offset)` only. Returns
    /// false, having done nothing, as `swizzled_fast` does.
    #[allow(clippy::too_many_arguments)]
    fn swizzled_lane(
        &mut self,
        ctx: &WaveContext<'_>,
        swz: Swizzle,
        (index, offset): (u64, u64),
        l: usize,
        nd: usize,
        load: bool,
        data: Option<Operand>,
        vdst: Option<Operand>,
    ) -> bool {
        if offset & 3 != 0 {
            return false;
        }
        let at = |k: usize| swz.address(index, offset.wrapping_add(4 * k as u64));
        // Every dword checked first: nothing moves unless all of them can.
        for k in 0..nd {
            if self.regions.span(ctx.memory, at(k), 4).is_none() {
                return false;
            }
        }
        for k in 0..nd {
            if load {
                let v = match self.regions.cached(at(k), 4) {
                    Some(span) => span.load_u32(0),
                    None => return false,
                };
                let reg = vdst.as_ref().and_then(reg_base).map(|(r, _)| r + k);
                if let Some(dst) = reg.and_then(|r| self.vgpr.get_mut(r)) {
                    dst[l] = v;
                }
            } else {
                let v = data.as_ref().map_or(0, |op| self.vsrc(op, k, ctx).at(l));
                match self.regions.cached(at(k), 4) {
                    Some(span) => span.store_u32(0, v),
                    None => return false,
                }
            }
        }
        true
    }

    /// The scratch shape of [`swizzled_fast`](Self::swizzled_fast) (every lane active,
    /// 4-byte elements, index stride 64, lane l at record `index[0] + l` with
    /// `index[0]` a multiple of 64, one 4-aligned offset for every lane): dword k of
    /// the 64 lanes is one run of 64 consecutive dwords at `address(index[0], offset +
    /// 4k)`, moved in one pass straight between memory and register k. Returns false,
    /// having done nothing visible, for any other shape or when a run is not inside
    /// one region or not aligned on the host.
    #[allow(clippy::too_many_arguments)]
    fn swizzled_rows(
        &mut self,
        ctx: &WaveContext<'_>,
        swz: Swizzle,
        index: &[u64; WAVE_SIZE],
        offset: &[u64; WAVE_SIZE],
        nd: usize,
        load: bool,
        data: Option<Operand>,
        vdst: Option<Operand>,
    ) -> bool {
        let (i0, off) = (index[0], offset[0]);
        if swz.element != 4 || swz.index_stride != WAVE_SIZE as u64 || i0 % 64 != 0 || off & 3 != 0
        {
            return false;
        }
        let mut other = 0u64;
        for l in 0..WAVE_SIZE {
            other |= (index[l] ^ i0.wrapping_add(l as u64)) | (offset[l] ^ off);
        }
        if other != 0 {
            return false;
        }
        let run = |k: usize| swz.address(i0, off.wrapping_add(4 * k as u64));
        // Every run checked first: nothing moves unless all of them can.
        for k in 0..nd {
            if self
                .regions
                .span(ctx.memory, run(k), 4 * WAVE_SIZE as u64)
                .is_none()
            {
                return false;
            }
        }
        if load {
            let Some((r, _)) = vdst.as_ref().and_then(reg_base) else {
                return true;
            };
            if r + nd > self.vgpr.len() {
                return false;
            }
            for k in 0..nd {
                let Some(span) = self.regions.cached(run(k), 4 * WAVE_SIZE as u64) else {
                    return false;
                };
                if !span.load_dwords(0, &mut self.vgpr[r + k]) {
                    return false;
                }
            }
            return true;
        }
        let Some(op) = data else { return false };
        for k in 0..nd {
            let v = self.vsrc(&op, k, ctx);
            let Some(span) = self.regions.cached(run(k), 4 * WAVE_SIZE as u64) else {
                return false;
            };
            let stored = match v {
                Src::Reg(r) => span.store_dwords(0, r),
                Src::Splat(x) => span.store_dwords(0, &[x; WAVE_SIZE]),
            };
            if !stored {
                return false;
            }
        }
        true
    }

    /// Whole-dword loads and stores (4, 8, 12 or 16 bytes, every active lane's
    /// offset 4-aligned) through a swizzled buffer (scratch): every dword of every
    /// lane addressed as [`Swizzle::address`] gives it, one region check for the whole
    /// wave, then the dwords in lane order. `index(l)` and `offset(l)` give lane l's
    /// record index and byte offset; with one active lane only that lane's are
    /// computed. Returns false, having done nothing, when the access has another form
    /// or its range is not inside one region (the per-lane path then runs and reports
    /// the faulting lane).
    #[allow(clippy::too_many_arguments)]
    fn swizzled_fast(
        &mut self,
        ctx: &WaveContext<'_>,
        access: Access,
        swz: Swizzle,
        index: impl Fn(usize) -> u64,
        offset: impl Fn(usize) -> u64,
        exec: u64,
        data: Option<Operand>,
        vdst: Option<Operand>,
    ) -> bool {
        let Some((nd, load)) = swizzled_form(access, &swz) else {
            return false;
        };
        if exec == 0 {
            return false;
        }
        if exec.is_power_of_two() {
            // One active lane (LLVM's sections for thread 0): only its address.
            let l = exec.trailing_zeros() as usize;
            let at = (index(l), offset(l));
            return self.swizzled_lane(ctx, swz, at, l, nd, load, data, vdst);
        }
        let index: [u64; WAVE_SIZE] = std::array::from_fn(index);
        let offset: [u64; WAVE_SIZE] = std::array::from_fn(offset);
        if exec == u64::MAX && self.swizzled_rows(ctx, swz, &index, &offset, nd, load, data, vdst) {
            return true;
        }
        let mut addrs = [[0u64; WAVE_SIZE]; 4];
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            if offset[l] & 3 != 0 {
                return false;
            }
            for k in 0..nd {
                let a = swz.address(index[l], offset[l].wrapping_add(4 * k as u64));
                addrs[k][l] = a;
                lo = lo.min(a);
                hi = hi.max(a);
            }
        }
        let Some(size) = (hi - lo).checked_add(4) else {
            return false;
        };
        if !self.regions.ensure(ctx.memory, lo, size) {
            return false;
        }
        if load {
            let Some(d) = vdst else { return true };
            let mut out = [[0u32; WAVE_SIZE]; 4];
            {
                let Some(span) = self.regions.cached(lo, size) else {
                    return false;
                };
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    for k in 0..nd {
                        out[k][l] = span.load_u32((addrs[k][l] - lo) as usize);
                    }
                }
            }
            for (k, o) in out.iter().enumerate().take(nd) {
                self.vwrite(&d, k, o, exec);
            }
            return true;
        }
        let src: [Src<'_>; 4] = std::array::from_fn(|k| match data.as_ref() {
            Some(op) if k < nd => self.vsrc(op, k, ctx),
            _ => Src::Splat(0),
        });
        let Some(span) = self.regions.cached(lo, size) else {
            return false;
        };
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            for k in 0..nd {
                span.store_u32((addrs[k][l] - lo) as usize, src[k].at(l));
            }
        }
        true
    }

    /// Executes a FLAT/GLOBAL/SCRATCH instruction: the whole-wave consecutive 4- and
    /// 8-byte form through [`flat_consecutive`](Self::flat_consecutive) (small frame),
    /// everything else through the general path.
    ///
    /// # Errors
    /// As the general path: a fault names the lane, the address and the instruction.
    #[inline(never)]
    pub(crate) fn exec_flat(
        &mut self,
        i: &Flat,
        pc: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<(), Fault> {
        if self.flat_consecutive(i, ctx) {
            return Ok(());
        }
        self.exec_flat_general(i, pc, ctx)
    }

    /// A GLOBAL/FLAT load or store of 4 or 8 bytes per lane with a 64-bit VGPR-pair
    /// address, every lane active, lane l at lane 0's address + l·bytes: see
    /// [`run_flat_plan`](Self::run_flat_plan). Returns false, having done nothing
    /// visible, for any other form or access (the general path then runs).
    #[inline]
    fn flat_consecutive(&mut self, i: &Flat, ctx: &mut WaveContext<'_>) -> bool {
        FlatPlan::of(i)
            .is_some_and(|p| matches!(self.run_flat_plan(&p, ctx, false), Planned::Ran(_)))
    }

    /// The 64-bit base of a GLOBAL access with SADDR: the SGPR pair at scalar-file
    /// index `s` (a [`FlatPlan`] names pairs below s101 only) plus the immediate
    /// `offset`, wrapping as [`exec_flat_general`](Self::exec_flat_general) adds.
    #[inline]
    fn saddr_base(&self, s: u8, offset: i64) -> u64 {
        let s = usize::from(s);
        (u64::from(self.sgpr[s]) | u64::from(self.sgpr[s + 1]) << 32).wrapping_add_signed(offset)
    }

    /// Runs a fused run's FLAT access `f` that the run's code declined, as the
    /// interpreter runs its plan ([`run_flat_plan`](Self::run_flat_plan), a gather
    /// deferring itself if it may).
    pub(crate) fn run_flat_fusion(&mut self, f: &FlatFusion, ctx: &mut WaveContext<'_>) -> Planned {
        let p = FlatPlan {
            flat: f.flat,
            bytes: f.bytes,
            load: f.load,
            signed: false,
            vaddr: usize::from(f.vaddr),
            saddr: None,
            offset: f.offset,
            reg: Some(usize::from(f.reg)),
        };
        self.run_flat_plan(&p, ctx, true)
    }

    /// Runs a [`FlatPlan`] when every lane is active and lane l's address is lane 0's
    /// plus l·bytes, none in an LDS or scratch aperture: straight between memory and
    /// the registers (see [`consecutive_fast`](Self::consecutive_fast)). Returns false,
    /// having done nothing visible, otherwise, or when the range is not inside one
    /// region or not aligned on the host (the general path then runs and reports any
    /// fault). A consecutive access also feeds the wave's
    /// [`StrideTable`](crate::stride::StrideTable); when it predicts this
    /// instruction's next span, the host is asked to fetch that span's lines (for
    /// writing, for a store) while the wave goes on. With `may_defer`, a gather may
    /// be deferred (see [`gather_fast`](Self::gather_fast)).
    #[inline]
    pub(crate) fn run_flat_plan(
        &mut self,
        p: &FlatPlan,
        ctx: &mut WaveContext<'_>,
        may_defer: bool,
    ) -> Planned {
        let exec = self.exec();
        if p.bytes < 4 {
            // A sub-dword load: the 16-bit fields of the dispatch packet that LLVM
            // 16's device runtime reads in every lane at -O0 (`getBlockSize`).
            return Planned::of(self.active_lanes_fast(p, ctx, exec));
        }
        if exec != u64::MAX {
            // Partial EXEC: LLVM's sections for some lanes (thread 0's, at -O0
            // through generic pointers to its stack or the team state), a loop's
            // last lanes.
            if p.flat && self.flat_apertured(p, ctx, exec) {
                return Planned::Ran(ScalarFlow::Next);
            }
            return Planned::of(self.active_lanes_fast(p, ctx, exec));
        }
        // A gather that deferred itself resumes here with its registers as they were
        // (the wave yielded at it): its lanes are still scattered.
        if p.load && self.deferred.waits(p.key()) {
            return self.gather_fast(p, ctx, may_defer);
        }
        let step = u64::from(p.bytes);
        if let Some(s) = p.saddr {
            let Some(v) = self.vgpr.get(p.vaddr) else {
                return Planned::Declined;
            };
            // Consecutive 32-bit offsets that do not wrap (the high dwords all zero).
            if !pair_consecutive(v, &ZERO_ROW, 0, step) {
                return match p.load {
                    true => self.gather_fast(p, ctx, may_defer),
                    false => Planned::Declined,
                };
            }
            let base = self.saddr_base(s, p.offset).checked_add(u64::from(v[0]));
            let Some(base) = base.filter(|b| b.checked_add(step * 63).is_some()) else {
                return Planned::Declined;
            };
            let ahead = self.strides.observe(p.key(), base);
            return Planned::of(self.consecutive_fast(
                ctx,
                base,
                usize::from(p.bytes),
                p.load,
                p.reg,
                ahead,
            ));
        }
        let base = match (self.vgpr.get(p.vaddr), self.vgpr.get(p.vaddr + 1)) {
            (Some(lo), Some(hi)) if pair_consecutive(lo, hi, p.offset, step) => {
                (u64::from(lo[0]) | u64::from(hi[0]) << 32).wrapping_add_signed(p.offset)
            }
            (Some(lo), Some(hi)) if p.flat && private_uniform(lo, hi, ctx) => {
                return Planned::of(self.private_rows(p, ctx));
            }
            // Every lane in the shared aperture (a team-state variable that
            // unoptimised code reads through a generic pointer) or the private one.
            (Some(lo), Some(hi)) if p.flat && apertured(lo[0], hi[0], p.offset, ctx) => {
                return Planned::of(self.flat_apertured(p, ctx, exec));
            }
            (Some(_), Some(_)) if p.load => return self.gather_fast(p, ctx, may_defer),
            _ => return Planned::Declined,
        };
        // pair_consecutive checked that the last lane's address does not wrap.
        if p.flat && meets_aperture(base, base + step * (WAVE_SIZE as u64 - 1), ctx) {
            return Planned::of(self.flat_apertured(p, ctx, exec));
        }
        let bytes = usize::from(p.bytes);
        let ahead = self.strides.observe(p.key(), base);
        Planned::of(self.consecutive_fast(ctx, base, bytes, p.load, p.reg, ahead))
    }

    /// [`run_flat_plan`](Self::run_flat_plan) for a FLAT access whose active lanes
    /// (EXEC, not empty) all address one aperture (`AMDGPUUsage.rst`, "Address
    /// Spaces"): the shared one as its DS form on the LDS bytes
    /// ([`flat_lds`](Self::flat_lds)), the private one as a SCRATCH access at each
    /// lane's aperture offset ([`swizzled_fast`](Self::swizzled_fast)), as the general
    /// path takes them once it has found every lane's aperture. Unoptimised code
    /// reaches its stack slots and the device runtime's team state through generic
    /// pointers, in every lane or in a few (thread 0's sections). False, having done
    /// nothing visible, for lanes in different apertures or outside both, or when a
    /// lane's range is outside the LDS or its scratch (the general path then runs and
    /// reports the faulting lane).
    fn flat_apertured(&mut self, p: &FlatPlan, ctx: &mut WaveContext<'_>, exec: u64) -> bool {
        let (Some(lo), Some(hi)) = (self.vgpr.get(p.vaddr), self.vgpr.get(p.vaddr + 1)) else {
            return false;
        };
        if exec == 0 {
            return false;
        }
        let lane = exec.trailing_zeros() as usize;
        // One address in every active lane, in the LDS aperture (a team-state
        // variable every thread loads through a generic pointer): no lane's address
        // is needed.
        if p.load && active_alike(lo, exec) && active_alike(hi, exec) {
            let first =
                (u64::from(lo[lane]) | u64::from(hi[lane]) << 32).wrapping_add_signed(p.offset);
            if first >> 32 == ctx.apertures.shared_base >> 32 {
                let nd = usize::from(p.bytes) / 4;
                let vdst = p.reg.map(|r| register_operand(r, nd));
                return self.lds_broadcast(ctx.lds, first & 0xFFFF_FFFF, nd, vdst, exec);
            }
        }
        let addrs: [u64; WAVE_SIZE] = std::array::from_fn(|l| {
            (u64::from(lo[l]) | u64::from(hi[l]) << 32).wrapping_add_signed(p.offset)
        });
        let first = addrs[lane];
        // Whether every active lane is in lane `first`'s aperture, and at its address
        // (every lane: one pass the compiler vectorises; some: lane by lane).
        let mut diff = 0u64;
        if exec == u64::MAX {
            for a in &addrs {
                diff |= a ^ first;
            }
        } else {
            let mut m = exec;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                diff |= addrs[l] ^ first;
            }
        }
        if diff >> 32 != 0 {
            return false;
        }
        let uniform = diff == 0;
        let nd = usize::from(p.bytes) / 4;
        let reg = p.reg.map(|r| register_operand(r, nd));
        let (access, data, vdst) = match p.load {
            true => (
                Access::Load {
                    bytes: u32::from(p.bytes),
                    signed: false,
                },
                None,
                reg,
            ),
            false => (
                Access::Store {
                    bytes: u32::from(p.bytes),
                    hi16: false,
                },
                reg,
                None,
            ),
        };
        let top = first >> 32;
        if top == ctx.apertures.shared_base >> 32 {
            if uniform && p.load {
                return self.lds_broadcast(ctx.lds, first & 0xFFFF_FFFF, nd, vdst, exec);
            }
            self.flat_lds(ctx, access, &addrs, exec, data, vdst)
        } else if top == ctx.apertures.private_base >> 32 {
            let swz = Swizzle::scratch(self.flat_scratch());
            let offset = |l: usize| addrs[l] & 0xFFFF_FFFF;
            self.swizzled_fast(ctx, access, swz, |l| l as u64, offset, exec, data, vdst)
        } else {
            false
        }
    }

    /// [`run_flat_plan`](Self::run_flat_plan) under a partial EXEC (not empty) whose
    /// active lanes all address one region, none in the LDS or scratch aperture: a
    /// loop's last lanes, a section some threads run; and every sub-dword load under
    /// any EXEC. Each active lane's element, one relaxed host access after one region
    /// lookup, in lane order (of two lanes storing to the same bytes the higher one's
    /// value stays, as in the general path); a load whose active lanes all name one
    /// address reads it once. False, having done nothing visible, otherwise (the
    /// general path then runs and reports any fault).
    fn active_lanes_fast(&mut self, p: &FlatPlan, ctx: &WaveContext<'_>, exec: u64) -> bool {
        let Some(r) = p.reg.filter(|_| exec != 0) else {
            return false;
        };
        let wide = p.bytes == 8;
        if r + 1 + usize::from(wide) > self.vgpr.len() {
            return false;
        }
        let mut addrs = [0u64; WAVE_SIZE];
        // Whether every active lane names one address (the low dword of each lane's
        // address, or its SADDR offset, and a pair's high dword, alike in them all).
        let uniform = match p.saddr {
            Some(s) => {
                let base = self.saddr_base(s, p.offset);
                let Some(v) = self.vgpr.get(p.vaddr) else {
                    return false;
                };
                saddr_addresses_into(base, v, &mut addrs);
                active_alike(v, exec)
            }
            None => {
                let (Some(lo), Some(hi)) = (self.vgpr.get(p.vaddr), self.vgpr.get(p.vaddr + 1))
                else {
                    return false;
                };
                pair_addresses_into(lo, hi, p.offset, &mut addrs);
                active_alike(lo, exec) && active_alike(hi, exec)
            }
        };
        let (lo, hi) = match uniform {
            true => {
                let a = addrs[exec.trailing_zeros() as usize];
                (a, a)
            }
            false => lane_bounds(&addrs, exec),
        };
        let Some(size) = (hi - lo).checked_add(u64::from(p.bytes)) else {
            return false;
        };
        if p.flat && meets_aperture(lo, hi, ctx) {
            return false;
        }
        let Some(span) = self.regions.span(ctx.memory, lo, size) else {
            return false;
        };
        if uniform && p.load {
            // A value reached through one pointer: one read, in every active lane.
            let v = lane_value(&span, 0, p.bytes, p.signed);
            let d = register_operand(r, 1 + usize::from(wide));
            for k in 0..=usize::from(wide) {
                self.vwrite(&d, k, &[(v >> (32 * k)) as u32; WAVE_SIZE], exec);
            }
            return true;
        }
        let vgpr = &mut self.vgpr;
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            let off = (addrs[l] - lo) as usize;
            match (p.load, wide) {
                (true, _) => {
                    let v = lane_value(&span, off, p.bytes, p.signed);
                    vgpr[r][l] = v as u32;
                    if wide {
                        vgpr[r + 1][l] = (v >> 32) as u32;
                    }
                }
                (false, false) => span.store_u32(off, vgpr[r][l]),
                (false, true) => {
                    span.store_u64(off, u64::from(vgpr[r][l]) | u64::from(vgpr[r + 1][l]) << 32)
                }
            }
        }
        true
    }

    /// A load of `nd` dwords by every active lane (EXEC) from one LDS byte `offset`
    /// (a team-state variable every thread reads through a generic pointer): read
    /// once, written to the active lanes of `vdst` (none: nothing written). False,
    /// having done nothing, when the dwords are not inside the LDS (the per-lane path
    /// then reports the fault).
    fn lds_broadcast(
        &mut self,
        lds: &[u8],
        offset: u64,
        nd: usize,
        vdst: Option<Operand>,
        exec: u64,
    ) -> bool {
        let Some(bytes) = usize::try_from(offset)
            .ok()
            .and_then(|o| lds.get(o..o.checked_add(4 * nd)?))
        else {
            return false;
        };
        let Some(d) = vdst else { return true };
        for (k, w) in bytes.chunks_exact(4).enumerate() {
            let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            self.vwrite(&d, k, &[v; WAVE_SIZE], exec);
        }
        true
    }

    /// [`run_flat_plan`](Self::run_flat_plan) for a FLAT access of every lane to one
    /// address in the private aperture (see [`private_uniform`]): a stack slot of
    /// unoptimised code, which LLVM addresses through a generic pointer. Lane l's
    /// byte p is its scratch byte p (`AMDGPUUsage.rst`, "Flat Scratch"), so dword k of
    /// the 64 lanes is one row of 64 dwords, moved as a SCRATCH access of the same
    /// offset is ([`swizzled_rows`](Self::swizzled_rows)). False, having done nothing
    /// visible, when the offset is not dword-aligned or a row is not inside one
    /// region (the general path then runs and reports any fault).
    #[inline(never)]
    fn private_rows(&mut self, p: &FlatPlan, ctx: &WaveContext<'_>) -> bool {
        let (lo, hi) = (&self.vgpr[p.vaddr], &self.vgpr[p.vaddr + 1]);
        let address = (u64::from(lo[0]) | u64::from(hi[0]) << 32).wrapping_add_signed(p.offset);
        // The offset added may carry out of the aperture: that lane is global then.
        if address >> 32 != ctx.apertures.private_base >> 32 {
            return false;
        }
        let index: [u64; WAVE_SIZE] = std::array::from_fn(|l| l as u64);
        let offset = [address & 0xFFFF_FFFF; WAVE_SIZE];
        let nd = usize::from(p.bytes) / 4;
        let reg = p.reg.map(|r| register_operand(r, nd));
        let (data, vdst) = if p.load { (None, reg) } else { (reg, None) };
        let swz = Swizzle::scratch(self.flat_scratch());
        self.swizzled_rows(ctx, swz, &index, &offset, nd, p.load, data, vdst)
    }

    /// [`run_flat_plan`](Self::run_flat_plan) for a load whose lanes' addresses are
    /// not consecutive (a gather; every lane active): when they all fall in one region
    /// and outside the LDS and scratch apertures, one load when they are all the same
    /// address; else, when every lane's dword or qword is naturally aligned, they are
    /// loaded by
    /// [`HostSpan::gather`](crate::memory::HostSpan::gather) (each a relaxed atomic;
    /// the misses overlap) straight into the destination registers. Declines, having
    /// done nothing visible, otherwise (the general path then runs and reports any
    /// fault).
    ///
    /// With `may_defer`, when other waves share the worker (`ctx.yield_after` is
    /// finite), a scattered gather is first deferred: it asks the host for every
    /// lane's line, notes its plan, addresses and bounds in `deferred` (a
    /// [`DeferredGather`]), and returns [`Planned::Deferred`]; the wave yields, and
    /// when it resumes at the same instruction the noted gather runs, without
    /// computing its addresses or asking for its lines again. The other waves' work
    /// meanwhile hides the misses, which a wave running straight on would wait for.
    #[inline(never)]
    fn gather_fast(&mut self, p: &FlatPlan, ctx: &WaveContext<'_>, may_defer: bool) -> Planned {
        let key = p.key();
        // A gather that deferred itself resumes with the addresses and bounds it
        // noted (the note is used once): the wave yielded at this instruction, so its
        // registers are as they were then. Else the addresses are computed into the
        // note's place, where a deferral leaves them.
        let resumed = self.deferred.resume(key);
        let saddr_base = p.saddr.map(|s| self.saddr_base(s, p.offset));
        if !resumed {
            // Every lane one address (a value reached through one pointer that the
            // compiler could not prove uniform, such as `B[omp_get_team_num()]`): one
            // read, without the lanes' addresses and their bounds. (Lanes 0 and 1
            // first: a scattered gather is told apart at once.)
            let one = match saddr_base {
                Some(base) => match self.vgpr.get(p.vaddr) {
                    Some(v) if v[0] == v[1] && active_alike(v, u64::MAX) => {
                        Some(base.checked_add(u64::from(v[0])))
                    }
                    _ => None,
                },
                None => match (self.vgpr.get(p.vaddr), self.vgpr.get(p.vaddr + 1)) {
                    (Some(lo), Some(hi))
                        if lo[0] == lo[1]
                            && hi[0] == hi[1]
                            && active_alike(lo, u64::MAX)
                            && active_alike(hi, u64::MAX) =>
                    {
                        let a = u64::from(lo[0]) | u64::from(hi[0]) << 32;
                        Some(a.checked_add_signed(p.offset))
                    }
                    _ => None,
                },
            };
            if let Some(a) = one {
                // (As below: any other gather's note no longer waits.)
                self.deferred.clear();
                return match a {
                    Some(a) => Planned::of(self.one_address_load(p, ctx, a)),
                    None => Planned::Declined,
                };
            }
        }
        let note = &mut self.deferred;
        if let (false, Some(base)) = (resumed, saddr_base) {
            let Some(v) = self.vgpr.get(p.vaddr) else {
                return Planned::Declined;
            };
            note.clear();
            saddr_addresses_into(base, v, &mut note.addrs);
            // The bounds of the 32-bit offsets, moved by the base unless that wraps.
            let Some((min, max)) = pair_bounds(v, &ZERO_ROW) else {
                return Planned::Declined;
            };
            (note.lo, note.hi) = match (base.checked_add(min), base.checked_add(max)) {
                (Some(lo), Some(hi)) => (lo, hi),
                _ => return Planned::Declined,
            };
        } else if !resumed {
            let (Some(a_lo), Some(a_hi)) = (self.vgpr.get(p.vaddr), self.vgpr.get(p.vaddr + 1))
            else {
                return Planned::Declined;
            };
            // (Any other gather's note is overwritten here: it no longer waits.)
            note.clear();
            pair_addresses_into(a_lo, a_hi, p.offset, &mut note.addrs);
            // The offset moves every address alike: when neither bound wraps, they are
            // the bounds of the addresses.
            (note.lo, note.hi) = match pair_bounds(a_lo, a_hi) {
                Some((min, max)) => match (
                    min.checked_add_signed(p.offset),
                    max.checked_add_signed(p.offset),
                ) {
                    (Some(lo), Some(hi)) => (lo, hi),
                    _ => return Planned::Declined,
                },
                None => lane_bounds(&note.addrs, u64::MAX),
            };
        }
        let (lo, hi) = (note.lo, note.hi);
        let bytes = usize::from(p.bytes);
        let Some(size) = (hi - lo).checked_add(bytes as u64) else {
            return Planned::Declined;
        };
        if p.flat && meets_aperture(lo, hi, ctx) {
            return Planned::Declined;
        }
        let Some(r) = p.reg else {
            return Planned::Declined;
        };
        let vgpr = &mut self.vgpr;
        if r + bytes / 4 > vgpr.len() {
            return Planned::Declined;
        }
        if lo == hi {
            return Planned::of(self.one_address_load(p, ctx, lo));
        }
        let Some(span) = self.regions.span(ctx.memory, lo, size) else {
            return Planned::Declined;
        };
        let addrs = &note.addrs;
        if !resumed && may_defer && ctx.yield_after != u64::MAX {
            span.prefetch_gather(addrs, lo);
            note.key = Some(key);
            return Planned::Deferred;
        }
        Planned::of(if bytes == 4 {
            let (d, _) = vgpr[r..].split_at_mut(1);
            let mut unused = [0u32; WAVE_SIZE];
            span.gather::<4>(addrs, lo, resumed, &mut d[0], &mut unused)
        } else {
            let (d0, d1) = vgpr[r..].split_at_mut(1);
            span.gather::<8>(addrs, lo, resumed, &mut d0[0], &mut d1[0])
        })
    }

    /// [`gather_fast`](Self::gather_fast) for a load (4 or 8 bytes, every lane
    /// active) whose lanes all read the element at `address`: one read of it into
    /// every lane of the destination, when the element lies in one region and, for
    /// FLAT, outside the LDS and scratch apertures. False, having done nothing, when
    /// it does not (the general path then runs and reports any fault).
    fn one_address_load(&mut self, p: &FlatPlan, ctx: &WaveContext<'_>, address: u64) -> bool {
        let bytes = usize::from(p.bytes);
        let Some(r) = p.reg.filter(|r| r + bytes / 4 <= self.vgpr.len()) else {
            return false;
        };
        if p.flat && meets_aperture(address, address, ctx) {
            return false;
        }
        let Some(span) = self.regions.span(ctx.memory, address, bytes as u64) else {
            return false;
        };
        let v = lane_value(&span, 0, p.bytes, false);
        for (k, row) in self.vgpr[r..r + bytes / 4].iter_mut().enumerate() {
            *row = [(v >> (32 * k)) as u32; WAVE_SIZE];
        }
        true
    }

    // Kept out of `WaveState::step` so that its large stack frame (per-lane tables) is paid
    // only by the instructions that need it.
    #[inline(never)]
    fn exec_flat_general(
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
        let mut targets: [Option<Target>; WAVE_SIZE];
        match i.seg {
            Segment::Flat | Segment::Global => {
                let addrs: [u64; WAVE_SIZE] = match (&i.saddr, &i.vaddr) {
                    (Some(s), Some(v)) => {
                        let sb = self.read_scalar(s, ctx).wrapping_add_signed(offset);
                        match self.vsrc(v, 0, ctx) {
                            Src::Reg(r) => {
                                std::array::from_fn(|l| sb.wrapping_add(u64::from(r[l])))
                            }
                            Src::Splat(x) => [sb.wrapping_add(u64::from(x)); WAVE_SIZE],
                        }
                    }
                    (None, Some(v)) => match (self.vsrc(v, 0, ctx), self.vsrc(v, 1, ctx)) {
                        (Src::Reg(lo), Src::Reg(hi)) => pair_addresses(lo, hi, offset),
                        (lo, hi) => std::array::from_fn(|l| {
                            (u64::from(lo.at(l)) | u64::from(hi.at(l)) << 32)
                                .wrapping_add_signed(offset)
                        }),
                    },
                    _ => return Err(unsup("missing address operand")),
                };
                // Flat addresses inside the LDS or scratch apertures take the per-lane
                // path; a wave of plain global addresses can take the fast one.
                let (shared, private) = (
                    ctx.apertures.shared_base >> 32,
                    ctx.apertures.private_base >> 32,
                );
                let mut apertured = false;
                // Only lanes between the lowest and highest address can be in an
                // aperture: when neither aperture meets that range, none is.
                // Whole-wave 4- and 8-byte accesses to consecutive addresses (the
                // common case) need neither the bounds scan nor a per-lane pass.
                let step = match access {
                    Access::Load { bytes, .. } | Access::Store { bytes, hi16: false }
                        if bytes == 4 || bytes == 8 =>
                    {
                        u64::from(bytes)
                    }
                    _ => 0,
                };
                let seq = exec == u64::MAX && step != 0 && consecutive(&addrs, step);
                let (lo, hi) = if seq {
                    (addrs[0], addrs[WAVE_SIZE - 1])
                } else {
                    lane_bounds(&addrs, exec)
                };
                let meets = |base: u64| {
                    let start = base & !0xFFFF_FFFF;
                    start <= hi && lo <= start | 0xFFFF_FFFF
                };
                if i.seg == Segment::Flat
                    && (meets(ctx.apertures.shared_base) || meets(ctx.apertures.private_base))
                {
                    let mut hit = 0u64;
                    for l in 0..WAVE_SIZE {
                        let h = addrs[l] >> 32;
                        hit |= u64::from(h == shared || h == private) << l;
                    }
                    apertured = hit & exec != 0;
                }
                if !apertured
                    && self.global_fast(ctx, access, &addrs, (lo, hi), seq, exec, i.data, i.vdst)
                {
                    return Ok(());
                }
                // Every active lane in the shared aperture (the device runtime's team
                // state through generic pointers): as a DS access at each lane's offset.
                if apertured
                    && lo >> 32 == shared
                    && hi >> 32 == shared
                    && self.flat_lds(ctx, access, &addrs, exec, i.data, i.vdst)
                {
                    return Ok(());
                }
                // Every active lane in the private aperture (stack slots of unoptimised
                // code): as a SCRATCH access at each lane's aperture offset.
                if apertured
                    && lo >> 32 == private
                    && hi >> 32 == private
                    && self.swizzled_fast(
                        ctx,
                        access,
                        Swizzle::scratch(flat_scratch),
                        |l| l as u64,
                        |l| addrs[l] & 0xFFFF_FFFF,
                        exec,
                        i.data,
                        i.vdst,
                    )
                {
                    return Ok(());
                }
                targets = [None; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 0 {
                        continue;
                    }
                    let a = addrs[l];
                    targets[l] = Some(if i.seg == Segment::Global {
                        Target::Global(a)
                    } else if a >> 32 == shared {
                        Target::Lds(a & 0xFFFF_FFFF)
                    } else if a >> 32 == private {
                        Target::Swizzled {
                            swz: Swizzle::scratch(flat_scratch),
                            offset: a & 0xFFFF_FFFF,
                            index: l as u64,
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
                let swz = Swizzle::scratch(flat_scratch);
                let offs = |l: usize| base[l].wrapping_add_signed(offset) & 0xFFFF_FFFF;
                if self.swizzled_fast(ctx, access, swz, |l| l as u64, offs, exec, i.data, i.vdst) {
                    return Ok(());
                }
                targets = [None; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 1 {
                        targets[l] = Some(Target::Swizzled {
                            swz,
                            offset: offs(l),
                            index: l as u64,
                        });
                    }
                }
            }
        }
        let nd = access.data_dwords();
        let data = self.read_regs(i.data.as_ref(), nd, ctx);
        self.run_access(ctx, access, &targets, &data[..nd], i.vdst, i.glc, pc)
    }

    // Kept out of `WaveState::step` so that its large stack frame (per-lane tables) is paid
    // only by the instructions that need it.
    #[inline(never)]
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
        let num_records = u64::from(w[2]);
        let size = match access {
            Access::Load { bytes, .. }
            | Access::LoadD16 { bytes, .. }
            | Access::Store { bytes, .. }
            | Access::Atomic { bytes, .. } => u64::from(bytes),
        };
        let swz = Swizzle {
            base: base.wrapping_add(soffset),
            element: elem,
            index_stride: idx_stride,
            stride,
        };
        // Lane l's record index and byte offset.
        let index_of = |l: usize| {
            vidx.as_ref().map_or(0, |v| u64::from(v[l])) + if add_tid { l as u64 } else { 0 }
        };
        let offset_of =
            |l: usize| u64::from(i.offset) + voff.as_ref().map_or(0, |v| u64::from(v[l]));
        if swizzle
            && self.swizzled_fast(
                ctx, access, swz, index_of, offset_of, exec, i.vdata, i.vdata,
            )
        {
            return Ok(());
        }
        let mut targets = [None; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            let index = index_of(l);
            let off = offset_of(l);
            targets[l] = Some(if swizzle {
                // Swizzled (scratch): soffset is added unswizzled; no range check.
                Target::Swizzled {
                    swz,
                    offset: off,
                    index,
                }
            } else if (stride == 0 && off + size > num_records)
                || (stride != 0 && index >= num_records)
            {
                // Out of range: loads return 0, stores and atomics are dropped.
                Target::Null
            } else {
                Target::Global(
                    base.wrapping_add(soffset)
                        .wrapping_add(off)
                        .wrapping_add(index.wrapping_mul(stride)),
                )
            });
        }
        let nd = access.data_dwords();
        let data = self.read_regs(i.vdata.as_ref(), nd, ctx);
        self.run_access(ctx, access, &targets, &data[..nd], i.vdata, i.glc, pc)
    }

    /// A FLAT load or store (not d16) whose active lanes all address the shared
    /// aperture: lane l's LDS byte `addrs[l] - shared_base` (`AMDGPUUsage.rst`,
    /// "Address Spaces"), straight on the LDS bytes as a DS access. Returns false,
    /// having done nothing, for another access or when a lane's range is outside the
    /// LDS (the per-lane path then runs and reports the faulting lane).
    fn flat_lds(
        &mut self,
        ctx: &mut WaveContext<'_>,
        access: Access,
        addrs: &[u64; WAVE_SIZE],
        exec: u64,
        data: Option<Operand>,
        vdst: Option<Operand>,
    ) -> bool {
        let lane: VReg = std::array::from_fn(|l| addrs[l] as u32);
        let (bytes, load, signed, hi16) = match access {
            Access::Load { bytes, signed } => (bytes, true, signed, false),
            Access::Store { bytes, hi16 } => (bytes, false, false, hi16),
            _ => return false,
        };
        if !Self::lds_lanes_in_range(ctx.lds.len(), exec, &lane, 0, u64::from(bytes)) {
            return false;
        }
        let bytes = bytes as usize;
        if load {
            if let Some(d) = vdst {
                self.lds_load_fast(ctx.lds, exec, &lane, 0, bytes, signed, &d, 0);
            }
        } else {
            // Take the LDS out of the context so that operands can be read from it.
            let lds = std::mem::take(&mut ctx.lds);
            self.lds_store_fast(ctx, lds, exec, &lane, 0, bytes, hi16, data.as_ref(), 0);
            ctx.lds = lds;
        }
        true
    }

    /// Whether every active lane's LDS range `[addr + off, addr + off + bytes)` lies
    /// inside the workgroup's LDS (false for an empty EXEC: nothing to do fast).
    #[inline]
    fn lds_lanes_in_range(lds_len: usize, exec: u64, addr: &VReg, off: u64, bytes: u64) -> bool {
        exec != 0 && u64::from(crate::lds::lds_highest(addr, exec)) + off + bytes <= lds_len as u64
    }

    /// An LDS load of `bytes` (1, 2, 4, 8, 12 or 16) per active lane into dwords
    /// `first..` of `vdst`, straight from the LDS bytes (the caller checked the range
    /// with [`lds_lanes_in_range`](Self::lds_lanes_in_range)). Sub-dword loads zero- or
    /// sign-extend. The LDS belongs to this workgroup, which runs on one host thread.
    #[allow(clippy::too_many_arguments)]
    fn lds_load_fast(
        &mut self,
        lds: &[u8],
        exec: u64,
        addr: &VReg,
        off: u64,
        bytes: usize,
        signed: bool,
        vdst: &Operand,
        first: usize,
    ) {
        let nd = bytes.div_ceil(4);
        let mut out = [[0u32; WAVE_SIZE]; 4];
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            let o = (u64::from(addr[l]) + off) as usize;
            let Some(src) = lds.get(o..o + bytes) else {
                continue;
            };
            match (bytes, signed) {
                (1, true) => out[0][l] = src[0] as i8 as i32 as u32,
                (1, false) => out[0][l] = u32::from(src[0]),
                (2, true) => out[0][l] = i16::from_le_bytes([src[0], src[1]]) as i32 as u32,
                (2, false) => out[0][l] = u32::from(u16::from_le_bytes([src[0], src[1]])),
                _ => {
                    for (k, w) in src.chunks_exact(4).enumerate() {
                        out[k][l] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                    }
                }
            }
        }
        for (k, o) in out.iter().enumerate().take(nd) {
            self.vwrite(vdst, first + k, o, exec);
        }
    }

    /// An LDS store of `bytes` per active lane, in lane order, from dwords `first..` of
    /// `data` (`hi16`: the high half of dword 0), straight into the LDS bytes (range
    /// checked by the caller).
    #[allow(clippy::too_many_arguments)]
    fn lds_store_fast(
        &self,
        ctx: &WaveContext<'_>,
        lds: &mut [u8],
        exec: u64,
        addr: &VReg,
        off: u64,
        bytes: usize,
        hi16: bool,
        data: Option<&Operand>,
        first: usize,
    ) {
        let nd = bytes.div_ceil(4);
        let src: [Src<'_>; 4] = std::array::from_fn(|k| match data {
            Some(d) if k < nd => self.vsrc(d, first + k, ctx),
            _ => Src::Splat(0),
        });
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            let o = (u64::from(addr[l]) + off) as usize;
            let Some(dst) = lds.get_mut(o..o + bytes) else {
                continue;
            };
            if bytes < 4 {
                let w = if hi16 {
                    src[0].at(l) >> 16
                } else {
                    src[0].at(l)
                };
                dst.copy_from_slice(&w.to_le_bytes()[..bytes]);
            } else {
                for (k, d) in dst.chunks_exact_mut(4).enumerate() {
                    d.copy_from_slice(&src[k].at(l).to_le_bytes());
                }
            }
        }
    }

    /// The single-address LDS loads and stores the LDS plan leaves out (sub-dword,
    /// `d16_hi` stores, 12 and 16 bytes) when every active lane is in range: straight
    /// on the LDS bytes. Returns false, having done nothing, otherwise (the per-lane path then
    /// runs and reports a faulting lane).
    fn ds_fast(&mut self, i: &Ds, exec: u64, addr: &VReg, ctx: &mut WaveContext<'_>) -> bool {
        use DsOp as O;
        // (bytes, load, signed, hi16)
        let (bytes, load, signed, hi16): (usize, bool, bool, bool) = match i.op {
            O::DsWriteB8 => (1, false, false, false),
            O::DsWriteB16 => (2, false, false, false),
            O::DsWriteB8D16Hi => (1, false, false, true),
            O::DsWriteB16D16Hi => (2, false, false, true),
            O::DsWriteB96 => (12, false, false, false),
            O::DsWriteB128 => (16, false, false, false),
            O::DsReadI8 => (1, true, true, false),
            O::DsReadU8 => (1, true, false, false),
            O::DsReadI16 => (2, true, true, false),
            O::DsReadU16 => (2, true, false, false),
            O::DsReadB96 => (12, true, false, false),
            O::DsReadB128 => (16, true, false, false),
            _ => return false,
        };
        let off = u64::from(i.offset());
        if !Self::lds_lanes_in_range(ctx.lds.len(), exec, addr, off, bytes as u64) {
            return false;
        }
        if load {
            let Some(d) = i.vdst else { return true };
            self.lds_load_fast(ctx.lds, exec, addr, off, bytes, signed, &d, 0);
        } else {
            // Take the LDS out of the context so that operands can be read from it.
            let lds = std::mem::take(&mut ctx.lds);
            self.lds_store_fast(ctx, lds, exec, addr, off, bytes, hi16, i.data0.as_ref(), 0);
            ctx.lds = lds;
        }
        true
    }

    /// Executes a DS instruction: the forms of [`crate::lds::LdsPlan`] through it, the
    /// other plain in-range loads and stores here (small frame), everything else
    /// through the general path.
    ///
    /// # Errors
    /// As the general path: LDS faults name the lane and the offset.
    #[inline(never)]
    pub(crate) fn exec_ds(
        &mut self,
        i: &Ds,
        pc: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<(), Fault> {
        if i.gds {
            return self.exec_ds_general(i, pc, ctx);
        }
        // The planned forms (plain b32/b64 loads and stores, ds_bpermute_b32): one
        // place for their rules, whether the block carried the plan or not.
        if let Some(p) = crate::lds::LdsPlan::of(i) {
            if crate::lds::run_lds_plan(self, &p, ctx.lds) {
                return Ok(());
            }
        }
        let exec = self.exec();
        let addr = match i.addr.as_ref() {
            Some(a) => self.vread(a, 0, ctx),
            None => [0; WAVE_SIZE],
        };
        if self.ds_fast(i, exec, &addr, ctx) {
            return Ok(());
        }
        self.exec_ds_general(i, pc, ctx)
    }

    // Kept out of `exec_ds` so that its large stack frame (per-lane tables) is paid
    // only by the instructions that need it.
    #[inline(never)]
    pub(crate) fn exec_ds_general(
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
        if let Some(access) = ds_access(i.op) {
            let targets: [Option<Target>; WAVE_SIZE] = std::array::from_fn(single);
            let n = match access {
                Access::Store { bytes, .. } => (bytes as usize).div_ceil(4),
                _ => 0,
            };
            let data = self.read_regs(i.data0.as_ref(), n, ctx);
            return self.run_access(ctx, access, &targets, &data[..n], i.vdst, false, pc);
        }
        if let Some((rmw, bytes, returns)) = ds_rmw(i.op) {
            let targets: [Option<Target>; WAVE_SIZE] = std::array::from_fn(single);
            let nd = (bytes / 4) as usize;
            // DS cmpst: DATA0 = compare value, DATA1 = new value; mskor and wrap:
            // DATA0 = DATA, DATA1 = DATA2.
            let (newv, cmpv) = match rmw {
                Rmw::CmpSwap | Rmw::CmpSwapF32 | Rmw::CmpSwapF64 => {
                    (i.data1.as_ref(), i.data0.as_ref())
                }
                Rmw::Mskor | Rmw::Wrap => (i.data0.as_ref(), i.data1.as_ref()),
                _ => (i.data0.as_ref(), None),
            };
            // run_access takes the data dwords, then the compare dwords: [data, cmp]
            // for 32-bit ops, [data lo, data hi, cmp lo, cmp hi] for 64-bit ones.
            let mut data = self.read_regs(newv, nd, ctx);
            let cmp = self.read_regs(cmpv, nd, ctx);
            data[nd..2 * nd].copy_from_slice(&cmp[..nd]);
            return self.run_access(
                ctx,
                Access::Atomic { op: rmw, bytes },
                &targets,
                &data[..2 * nd],
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
            | O::DsRead2st64B64 => self.exec_ds_read2_write2(i, exec, &addr, pc, ctx),
            O::DsWrxchg2RtnB32
            | O::DsWrxchg2st64RtnB32
            | O::DsWrxchg2RtnB64
            | O::DsWrxchg2st64RtnB64 => self.exec_ds_wrxchg2(i, exec, &addr, pc, ctx),
            O::DsSwizzleB32 => {
                let pattern = i.offset();
                if pattern >= 0xE000 {
                    return Err(unsup("the FFT mode of ds_swizzle_b32 is not executed"));
                }
                let data = match i.data0.as_ref() {
                    Some(d) => self.vread(d, 0, ctx),
                    None => [0; WAVE_SIZE],
                };
                let mut out = [0u32; WAVE_SIZE];
                for (l, o) in out.iter_mut().enumerate() {
                    let src = swizzle_source(pattern, l);
                    *o = if (exec >> src) & 1 == 1 { data[src] } else { 0 };
                }
                if let Some(d) = i.vdst.as_ref() {
                    self.vwrite(d, 0, &out, exec);
                }
                Ok(())
            }
            O::DsPermuteB32 => {
                let data = match i.data0.as_ref() {
                    Some(d) => self.vread(d, 0, ctx),
                    None => [0; WAVE_SIZE],
                };
                let mut out = [0u32; WAVE_SIZE];
                // (ds_bpermute_b32 was executed above.) Active lane l writes its data
                // to the lane named by its address.
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 1 {
                        let dst = ((u64::from(addr[l]) + off) / 4 % 64) as usize;
                        out[dst] = data[l];
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

    /// Executes `ds_read2*` / `ds_write2*` (b32, b64, and the st64 forms): two
    /// accesses per lane, at ADDR + OFFSET0·unit and ADDR + OFFSET1·unit.
    #[inline]
    fn exec_ds_read2_write2(
        &mut self,
        i: &Ds,
        exec: u64,
        addr: &[u32; WAVE_SIZE],
        pc: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<(), Fault> {
        use DsOp as O;
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
            self.run_access(ctx, acc, &t0, &d0[..nd], None, false, pc)?;
            self.run_access(ctx, acc, &t1, &d1[..nd], None, false, pc)
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
                _ => {
                    return Err(unsupported(
                        &Instruction::Ds(i.clone()),
                        pc,
                        "missing destination",
                    ))
                }
            };
            let acc = Access::Load {
                bytes: bytes as u32,
                signed: false,
            };
            self.run_access(ctx, acc, &t0, &[], Some(lo), false, pc)?;
            self.run_access(ctx, acc, &t1, &[], Some(hi), false, pc)
        }
    }

    /// Executes `ds_wrxchg2_rtn_b32/b64` and their st64 forms: two exchanges per lane,
    /// the old values returned.
    #[inline]
    fn exec_ds_wrxchg2(
        &mut self,
        i: &Ds,
        exec: u64,
        addr: &[u32; WAVE_SIZE],
        pc: u64,
        ctx: &mut WaveContext<'_>,
    ) -> Result<(), Fault> {
        use DsOp as O;
        // Two exchanges: DATA0 at ADDR + OFFSET0·unit and DATA1 at
        // ADDR + OFFSET1·unit; the old values land in VDST (first, then second).
        let bytes: u32 = if matches!(i.op, O::DsWrxchg2RtnB64 | O::DsWrxchg2st64RtnB64) {
            8
        } else {
            4
        };
        let st64 = matches!(i.op, O::DsWrxchg2st64RtnB32 | O::DsWrxchg2st64RtnB64);
        let unit = u64::from(bytes) * if st64 { 64 } else { 1 };
        let nd = (bytes / 4) as usize;
        let d0 = self.read_regs(i.data0.as_ref(), nd, ctx);
        let d1 = self.read_regs(i.data1.as_ref(), nd, ctx);
        let Some(dst) = i.vdst else {
            return Err(unsupported(
                &Instruction::Ds(i.clone()),
                pc,
                "missing destination",
            ));
        };
        let mut out = [[0u32; WAVE_SIZE]; 4];
        let out = &mut out[..2 * nd];
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            for (half, (d, o)) in [(&d0, i.offset0), (&d1, i.offset1)].iter().enumerate() {
                let t = Target::Lds(u64::from(addr[l]) + u64::from(*o) * unit);
                let w = lane_dwords(&d[..nd], l);
                let v = u64::from(w[0]) | u64::from(w[1]) << 32;
                let old = self.atomic_target(ctx, t, Rmw::Swap, bytes, v, 0, pc)?;
                out[half * nd][l] = old as u32;
                if nd == 2 {
                    out[half * nd + 1][l] = (old >> 32) as u32;
                }
            }
        }
        for (k, o) in out.iter().enumerate() {
            self.vwrite(&dst, k, o, exec);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Vector memory semantics against the ISA definitions; expected values are
    //! computed in plain Rust from the operation's definition.
    use super::*;
    use crate::memory::MemoryRegion;
    use crate::wave::testutil::{read, read_u32, read_u64, s, v, wave, Harness};
    use crate::wave::Wave;

    fn global(op: FlatOp, vdst: Option<Operand>, data: Option<Operand>, glc: bool) -> Instruction {
        // global_* vN, v0 (offset), s[0:1] (base)
        Instruction::Flat(Flat {
            op,
            seg: Segment::Global,
            vdst,
            vaddr: Some(v(0, 1)),
            data,
            saddr: Some(s(0, 2)),
            offset: 0,
            glc,
            slc: false,
            scc: false,
            lds: false,
        })
    }

    fn ds(
        op: DsOp,
        vdst: Option<Operand>,
        d0: Option<Operand>,
        d1: Option<Operand>,
        o0: u8,
        o1: u8,
    ) -> Instruction {
        Instruction::Ds(Ds {
            op,
            vdst,
            addr: Some(v(0, 1)),
            data0: d0,
            data1: d1,
            offset0: o0,
            offset1: o1,
            gds: false,
        })
    }

    /// A wave whose s[0:1] is `base` and v0 holds `lane * stride` byte offsets.
    fn wave_at(base: u64, stride: u32) -> Wave {
        let mut w = wave();
        w.sgpr[0] = base as u32;
        w.sgpr[1] = (base >> 32) as u32;
        for l in 0..WAVE_SIZE {
            w.vgpr[0][l] = l as u32 * stride;
        }
        w
    }

    /// Whole-wave dword and qword loads and stores at consecutive addresses (the
    /// one-pass path), at aligned and misaligned bases, against the bytes the
    /// definition gives; a range running past the region faults with the first lane
    /// outside it.
    #[test]
    fn consecutive_lanes_load_and_store_whole_words() {
        let mut h = Harness::new(0);
        let r = h.alloc(2048);
        let bytes: Vec<u8> = (0..2048u32).map(|i| (i * 73 + 11) as u8).collect();
        assert!(r.write_bytes(0, &bytes));
        let le32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        for (bytes_per_lane, base_off) in [(4u32, 0u64), (4, 4), (8, 0), (8, 4), (4, 2)] {
            let (load, store) = if bytes_per_lane == 4 {
                (FlatOp::LoadDword, FlatOp::StoreDword)
            } else {
                (FlatOp::LoadDwordx2, FlatOp::StoreDwordx2)
            };
            let mut w = wave_at(r.device_base() + base_off, bytes_per_lane);
            h.exec(&mut w, &global(load, Some(v(6, 2)), None, false))
                .unwrap();
            for l in 0..WAVE_SIZE {
                let at = base_off as usize + l * bytes_per_lane as usize;
                assert_eq!(
                    w.vgpr[6][l],
                    le32(&bytes, at),
                    "lane {l} {bytes_per_lane}@{base_off}"
                );
                if bytes_per_lane == 8 {
                    assert_eq!(w.vgpr[7][l], le32(&bytes, at + 4), "lane {l}");
                }
            }
            // Store other values to the second kilobyte and read them back as bytes.
            let mut w = wave_at(r.device_base() + 1024 + base_off, bytes_per_lane);
            for l in 0..WAVE_SIZE {
                w.vgpr[8][l] = (0x0101_0101 * l as u32) ^ 0xDEAD_0000;
                w.vgpr[9][l] = !(l as u32) << 3;
            }
            h.exec(&mut w, &global(store, None, Some(v(8, 2)), false))
                .unwrap();
            let back = read(&r, 1024, 1024);
            for l in 0..WAVE_SIZE {
                let at = base_off as usize + l * bytes_per_lane as usize;
                assert_eq!(
                    le32(&back, at),
                    w.vgpr[8][l],
                    "lane {l} {bytes_per_lane}@{base_off}"
                );
                if bytes_per_lane == 8 {
                    assert_eq!(le32(&back, at + 4), w.vgpr[9][l], "lane {l}");
                }
            }
            assert!(r.write_bytes(1024, &bytes[1024..]));
        }
        // 64 qwords from 16 bytes before the end: lanes 2.. are outside the region.
        let mut w = wave_at(r.device_base() + 2048 - 16, 8);
        let before = w.vgpr[6];
        let err = h
            .exec(
                &mut w,
                &global(FlatOp::LoadDwordx2, Some(v(6, 2)), None, false),
            )
            .unwrap_err();
        match err {
            Fault::Memory {
                address,
                lane,
                write,
                ..
            } => {
                assert_eq!(address, r.device_base() + 2048);
                assert_eq!(lane, Some(2));
                assert!(!write);
            }
            e => panic!("{e}"),
        }
        assert_eq!(w.vgpr[6], before);
    }

    /// `global_load/store_dword[x2] vD, v[0:1], off offset:o` with lane l's address
    /// `base + l·step - o` in v[0:1].
    fn pair_wave(base: u64, step: u64, offset: i32) -> Wave {
        let mut w = wave();
        for l in 0..WAVE_SIZE {
            let a = (base + step * l as u64).wrapping_add_signed(-i64::from(offset));
            w.vgpr[0][l] = a as u32;
            w.vgpr[1][l] = (a >> 32) as u32;
        }
        w
    }

    fn global_pair(
        op: FlatOp,
        vdst: Option<Operand>,
        data: Option<Operand>,
        offset: i32,
    ) -> Instruction {
        Instruction::Flat(Flat {
            op,
            seg: Segment::Global,
            vdst,
            vaddr: Some(v(0, 2)),
            data,
            saddr: None,
            offset,
            glc: false,
            slc: false,
            scc: false,
            lds: false,
        })
    }

    /// The VGPR-pair address form of whole-wave dword and qword accesses (checked on
    /// the address registers, 8-byte lanes split into and joined from dword planes):
    /// full and partial EXEC, positive and negative offsets, host-misaligned bases and
    /// swapped lanes (both fall back to the per-lane path) give the bytes the
    /// definition gives, and inactive lanes keep their registers and memory; a range
    /// running past the region faults naming the first lane outside it and its
    /// address, leaving the registers as they were.
    #[test]
    fn pair_consecutive_agrees_with_64_bit_lane_addresses() {
        // Lane l at a + l·step, split into dword planes, then each plane disturbed.
        let definition = |lo: &VReg, hi: &VReg, offset: i64, step: u64| {
            let a0 = (u64::from(lo[0]) | u64::from(hi[0]) << 32).wrapping_add_signed(offset);
            a0.checked_add(step * 63).is_some()
                && (0..WAVE_SIZE).all(|l| {
                    (u64::from(lo[l]) | u64::from(hi[l]) << 32).wrapping_add_signed(offset)
                        == a0 + step * l as u64
                })
        };
        let starts = [
            0x7f00_1000_0000u64,
            0x1_ffff_ff00,     // crosses a 4 GiB boundary (carry into the high dword)
            0xffff_fff0,       // from the top of the first 4 GiB
            u64::MAX - 8 * 60, // wraps around
        ];
        for a in starts {
            for step in [4u64, 8] {
                for (what, bump) in [
                    ("none", None),
                    ("lo 9", Some((9, 0))),
                    ("hi 63", Some((63, 1))),
                ] {
                    let mut lo: VReg =
                        std::array::from_fn(|l| (a.wrapping_add(step * l as u64)) as u32);
                    let mut hi: VReg =
                        std::array::from_fn(|l| (a.wrapping_add(step * l as u64) >> 32) as u32);
                    match bump {
                        Some((l, 0)) => lo[l] ^= 0x40,
                        Some((l, _)) => hi[l] ^= 1,
                        None => {}
                    }
                    for offset in [0i64, 16, -24] {
                        assert_eq!(
                            pair_consecutive(&lo, &hi, offset, step),
                            definition(&lo, &hi, offset, step),
                            "start {a:#x} step {step} {what} offset {offset}"
                        );
                        assert_eq!(
                            pair_consecutive_body(&lo, &hi, offset, step),
                            definition(&lo, &hi, offset, step),
                            "portable: start {a:#x} step {step} {what} offset {offset}"
                        );
                    }
                }
            }
        }
    }

    /// Every lane at one address, plus an immediate offset (negative, zero,
    /// positive), through a VGPR pair (GLOBAL and FLAT) and through SADDR plus one
    /// 32-bit offset for all (the address forms of LLVM's `FLATInstructions.td`): each
    /// lane loads the element at the address plus the offset, here in every lane
    /// from one read. An element that runs past its region's end faults at that
    /// address and loads no register.
    #[test]
    fn one_address_loads_read_the_element_their_offset_names() {
        let mut h = Harness::new(0);
        let r = h.alloc(4096);
        let init: Vec<u8> = (0..4096u32)
            .map(|i| (i * 53 + (i >> 8) + 1) as u8)
            .collect();
        assert!(r.write_bytes(0, &init));
        let le32 =
            |at: u64| u32::from_le_bytes(init[at as usize..at as usize + 4].try_into().unwrap());
        for bytes in [4u64, 8] {
            let load = if bytes == 4 {
                FlatOp::LoadDword
            } else {
                FlatOp::LoadDwordx2
            };
            for offset in [-8i32, 0, 12, 40] {
                // The element at byte 1000 + offset, then one that ends 4 bytes past
                // the region.
                for element in [1000 + i64::from(offset), 4096 + 4 - bytes as i64] {
                    let address = r
                        .device_base()
                        .wrapping_add_signed(element - i64::from(offset));
                    for form in ["global", "flat", "saddr"] {
                        let what =
                            format!("{form}, {bytes} bytes, offset {offset}, element {element}");
                        let mut w = match form {
                            "saddr" => {
                                let mut w = wave();
                                let base = address - 0x100;
                                (w.sgpr[0], w.sgpr[1]) = (base as u32, (base >> 32) as u32);
                                w.vgpr[0] = [0x100; WAVE_SIZE];
                                w
                            }
                            _ => pair_wave(address, 0, 0),
                        };
                        let mut inst = global_pair(load, Some(v(6, 2)), None, offset);
                        if let Instruction::Flat(f) = &mut inst {
                            match form {
                                "flat" => f.seg = Segment::Flat,
                                "saddr" => (f.vaddr, f.saddr) = (Some(v(0, 1)), Some(s(0, 2))),
                                _ => {}
                            }
                        }
                        for l in 0..WAVE_SIZE {
                            w.vgpr[6][l] = 0x5EED_0000 | l as u32;
                            w.vgpr[7][l] = 0x7EED_0000 | l as u32;
                        }
                        let ran = h.exec(&mut w, &inst);
                        if element + bytes as i64 > 4096 {
                            assert!(
                                matches!(ran, Err(Fault::Memory { address: a, .. }) if a == r.device_base() + element as u64),
                                "{what}: {ran:?}"
                            );
                            for l in 0..WAVE_SIZE {
                                assert_eq!(
                                    (w.vgpr[6][l], w.vgpr[7][l]),
                                    (0x5EED_0000 | l as u32, 0x7EED_0000 | l as u32),
                                    "lane {l}, {what}"
                                );
                            }
                            continue;
                        }
                        ran.unwrap();
                        let at = element as u64;
                        let want7 = if bytes == 8 {
                            le32(at + 4)
                        } else {
                            0x7EED_0000
                        };
                        for l in 0..WAVE_SIZE {
                            let want7 = want7 | if bytes == 8 { 0 } else { l as u32 };
                            assert_eq!(
                                (w.vgpr[6][l], w.vgpr[7][l]),
                                (le32(at), want7),
                                "lane {l}, {what}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Every active lane at one address: a load gives each active lane the value
    /// there, a store leaves the last active lane's data (lanes store in order);
    /// inactive lanes and the bytes around stay as they were.
    #[test]
    fn one_address_for_every_lane_is_one_access() {
        let mut h = Harness::new(0);
        let r = h.alloc(256);
        let init: Vec<u8> = (0..256u32).map(|i| (i * 37 + 11) as u8).collect();
        let le32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        for bytes in [4u64, 8] {
            let (load, store) = if bytes == 4 {
                (FlatOp::LoadDword, FlatOp::StoreDword)
            } else {
                (FlatOp::LoadDwordx2, FlatOp::StoreDwordx2)
            };
            for exec in [u64::MAX, 0x00F0_0000_0000_0100, 1, 1 << 63] {
                for at in [64u64, 68] {
                    let what = format!("{bytes} bytes at {at} exec {exec:#x}");
                    assert!(r.write_bytes(0, &init));
                    let mut w = pair_wave(r.device_base() + at, 0, 0);
                    w.set_exec(exec);
                    for l in 0..WAVE_SIZE {
                        w.vgpr[6][l] = 0x5EED_0000 | l as u32;
                        w.vgpr[7][l] = 0x7EED_0000 | l as u32;
                    }
                    h.exec(&mut w, &global_pair(load, Some(v(6, 2)), None, 0))
                        .unwrap();
                    for l in 0..WAVE_SIZE {
                        let on = (exec >> l) & 1 == 1;
                        let want6 = if on {
                            le32(&init, at as usize)
                        } else {
                            0x5EED_0000 | l as u32
                        };
                        let want7 = if on && bytes == 8 {
                            le32(&init, at as usize + 4)
                        } else {
                            0x7EED_0000 | l as u32
                        };
                        assert_eq!(
                            (w.vgpr[6][l], w.vgpr[7][l]),
                            (want6, want7),
                            "load lane {l} {what}"
                        );
                    }
                    for l in 0..WAVE_SIZE {
                        w.vgpr[6][l] = 0xA000_0000 | l as u32;
                        w.vgpr[7][l] = 0xB000_0000 | l as u32;
                    }
                    h.exec(&mut w, &global_pair(store, None, Some(v(6, 2)), 0))
                        .unwrap();
                    let last = 63 - exec.leading_zeros();
                    let mut want = init.clone();
                    want[at as usize..at as usize + 4]
                        .copy_from_slice(&(0xA000_0000 | last).to_le_bytes());
                    if bytes == 8 {
                        want[at as usize + 4..at as usize + 8]
                            .copy_from_slice(&(0xB000_0000 | last).to_le_bytes());
                    }
                    assert_eq!(read(&r, 0, 256), want, "store {what}");
                }
            }
        }
    }

    #[test]
    fn pair_addressed_consecutive_lanes_match_the_definition() {
        let mut h = Harness::new(0);
        let r = h.alloc(4096);
        let init: Vec<u8> = (0..4096u32).map(|i| (i * 151 + 7) as u8).collect();
        let le32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let partial = 0xF0F0_5555_0000_FFFFu64;
        let cases: [(u64, u64, i32, u64, bool); 9] = [
            // (bytes per lane, base offset, instruction offset, exec, swap lanes 5 and 9)
            (8, 0, 0, u64::MAX, false),
            (8, 16, -8, u64::MAX, false),
            (8, 8, 24, u64::MAX, false),
            (8, 4, 0, u64::MAX, false),
            (8, 0, 0, partial, false),
            (8, 0, 0, u64::MAX, true),
            (4, 0, 0, u64::MAX, false),
            (4, 2, 0, u64::MAX, false),
            (4, 4, 4, partial, true),
        ];
        for (bytes, base_off, offset, exec, swap) in cases {
            let what = format!("{bytes}@{base_off}+{offset} exec {exec:x} swap {swap}");
            let (load, store) = if bytes == 4 {
                (FlatOp::LoadDword, FlatOp::StoreDword)
            } else {
                (FlatOp::LoadDwordx2, FlatOp::StoreDwordx2)
            };
            let lane_at = |l: usize| {
                let l = match (swap, l) {
                    (true, 5) => 9,
                    (true, 9) => 5,
                    _ => l,
                };
                base_off as usize + l * bytes as usize
            };
            assert!(r.write_bytes(0, &init));
            let mut w = pair_wave(r.device_base() + base_off, bytes, offset);
            if swap {
                for k in 0..2 {
                    w.vgpr[k].swap(5, 9);
                }
            }
            w.set_exec(exec);
            for l in 0..WAVE_SIZE {
                w.vgpr[6][l] = 0x5EED_0000 | l as u32;
                w.vgpr[7][l] = 0x7EED_0000 | l as u32;
            }
            h.exec(&mut w, &global_pair(load, Some(v(6, 2)), None, offset))
                .unwrap();
            for l in 0..WAVE_SIZE {
                let on = (exec >> l) & 1 == 1;
                let at = lane_at(l);
                let want6 = if on {
                    le32(&init, at)
                } else {
                    0x5EED_0000 | l as u32
                };
                let want7 = if on && bytes == 8 {
                    le32(&init, at + 4)
                } else {
                    0x7EED_0000 | l as u32
                };
                assert_eq!(w.vgpr[6][l], want6, "load lane {l} {what}");
                assert_eq!(w.vgpr[7][l], want7, "load lane {l} {what}");
            }
            for l in 0..WAVE_SIZE {
                w.vgpr[8][l] = (0x0103_0507 * l as u32) ^ 0xC0DE_0000;
                w.vgpr[9][l] = !(l as u32) << 5;
            }
            h.exec(&mut w, &global_pair(store, None, Some(v(8, 2)), offset))
                .unwrap();
            let mut want = init.clone();
            for l in 0..WAVE_SIZE {
                if (exec >> l) & 1 == 1 {
                    let at = lane_at(l);
                    want[at..at + 4].copy_from_slice(&w.vgpr[8][l].to_le_bytes());
                    if bytes == 8 {
                        want[at + 4..at + 8].copy_from_slice(&w.vgpr[9][l].to_le_bytes());
                    }
                }
            }
            assert!(read(&r, 0, 4096) == want, "store {what}");
        }
        // 64 qwords from 16 bytes before the end: lane 2 is the first outside.
        for store in [false, true] {
            let mut w = pair_wave(r.device_base() + 4096 - 16, 8, 0);
            let before = w.vgpr[6];
            let inst = if store {
                global_pair(FlatOp::StoreDwordx2, None, Some(v(8, 2)), 0)
            } else {
                global_pair(FlatOp::LoadDwordx2, Some(v(6, 2)), None, 0)
            };
            match h.exec(&mut w, &inst).unwrap_err() {
                Fault::Memory {
                    address,
                    lane,
                    write,
                    ..
                } => {
                    assert_eq!(address, r.device_base() + 4096);
                    assert_eq!(lane, Some(2));
                    assert_eq!(write, store);
                }
                e => panic!("{e}"),
            }
            assert_eq!(w.vgpr[6], before);
        }
    }

    #[test]
    fn pair_bounds_are_the_bounds_of_the_64_bit_lanes() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..200 {
            let h = next() as u32;
            let mut lo = [0u32; WAVE_SIZE];
            let mut hi = [h; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                lo[l] = match case % 3 {
                    0 => next() as u32,
                    1 => 0x1000 + (next() % 64) as u32,
                    _ => [0, u32::MAX, 0x8000_0000][l % 3],
                };
            }
            // One case in four: a lane in another 4 GiB window.
            let split = case % 4 == 3;
            if split {
                hi[(next() % 64) as usize] = h.wrapping_add(1);
            }
            let addrs: [u64; WAVE_SIZE] =
                std::array::from_fn(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32);
            let want = (!split).then(|| bounds_body(&addrs, u64::MAX));
            assert_eq!(pair_bounds_body(&lo, &hi), want, "case {case}");
            assert_eq!(pair_bounds(&lo, &hi), want, "case {case}");
        }
    }

    #[test]
    fn scattered_lanes_load_what_each_lane_addresses() {
        // Every lane active, addresses scattered over a region (some unaligned, some
        // equal): each lane gets the bytes at its own address; a lane outside the
        // region is a fault naming it, with no register written.
        let mut h = Harness::new(0);
        let r = h.alloc(1 << 16);
        let init: Vec<u8> = (0..1u32 << 16)
            .map(|i| (i * 151 + 7 + (i >> 8)) as u8)
            .collect();
        assert!(r.write_bytes(0, &init));
        let le32 = |at: usize| u32::from_le_bytes(init[at..at + 4].try_into().unwrap());
        // Scattered, mostly unaligned (0); each aligned down to 8 bytes (1: every lane
        // naturally aligned, the gather's whole-wave path); one address for every lane
        // (2), aligned or not.
        let scattered = |l: usize| (l * 40_503 + 977 * (l % 3)) % ((1 << 16) - 8);
        for (bytes, offset, pattern) in [
            (4u64, 0i32, 0),
            (8, 0, 0),
            (8, 16, 0),
            (4, -12, 0),
            (4, 0, 1),
            (8, 0, 1),
            (8, -24, 1),
            (4, 0, 2),
            (8, 8, 2),
        ] {
            let scatter = |l: usize| match pattern {
                0 => scattered(l),
                1 => scattered(l) & !7,
                _ => scattered(5 + offset as usize),
            };
            let (load, what) = if bytes == 4 {
                (FlatOp::LoadDword, "dword")
            } else {
                (FlatOp::LoadDwordx2, "dwordx2")
            };
            let mut w = wave();
            for l in 0..WAVE_SIZE {
                let a =
                    (r.device_base() + scatter(l) as u64).wrapping_add_signed(-i64::from(offset));
                w.vgpr[0][l] = a as u32;
                w.vgpr[1][l] = (a >> 32) as u32;
            }
            h.exec(&mut w, &global_pair(load, Some(v(6, 2)), None, offset))
                .unwrap();
            for l in 0..WAVE_SIZE {
                assert_eq!(w.vgpr[6][l], le32(scatter(l)), "{what} lane {l}");
                if bytes == 8 {
                    assert_eq!(w.vgpr[7][l], le32(scatter(l) + 4), "{what} lane {l}");
                }
            }
            // Lane 37 one qword past the region's end.
            let end = r.device_base() + (1 << 16);
            let a = end.wrapping_add_signed(-i64::from(offset));
            (w.vgpr[0][37], w.vgpr[1][37]) = (a as u32, (a >> 32) as u32);
            let before = (w.vgpr[6], w.vgpr[7]);
            match h
                .exec(&mut w, &global_pair(load, Some(v(6, 2)), None, offset))
                .unwrap_err()
            {
                Fault::Memory { address, lane, .. } => {
                    assert_eq!(address, end, "{what}");
                    assert_eq!(lane, Some(37), "{what}");
                }
                e => panic!("{e}"),
            }
            assert!(
                (w.vgpr[6], w.vgpr[7]) == before,
                "{what}: registers written"
            );
        }
    }

    /// `global_load/store_dword[x2] vD, v0, s[0:1] offset:o`: each lane's address is
    /// s[0:1] + o + its zero-extended 32-bit v0 (LLVM's `GLOBAL_*_SADDR` forms), for
    /// consecutive, scattered and one-for-all offsets, positive and negative
    /// immediates, loads and stores, against the bytes that definition names. Offsets
    /// that run past 2^32 do not carry into the base: a consecutive run of v0 that
    /// wraps leaves the region at the first wrapped lane, a fault naming it, with no
    /// register loaded. Under a partial EXEC only the active lanes load and store.
    #[test]
    fn saddr_lanes_address_the_base_plus_their_32_bit_offsets() {
        let mut h = Harness::new(0);
        let r = h.alloc(1 << 16);
        let init: Vec<u8> = (0..1u32 << 16)
            .map(|i| (i * 97 + 5 + (i >> 9)) as u8)
            .collect();
        let le32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let saddr = |op, vdst, data, offset| {
            Instruction::Flat(Flat {
                op,
                seg: Segment::Global,
                vdst,
                vaddr: Some(v(0, 1)),
                data,
                saddr: Some(s(0, 2)),
                offset,
                glc: false,
                slc: false,
                scc: false,
                lds: false,
            })
        };
        let scattered = |l: usize| ((l * 40_503 + 977 * (l % 3)) % ((1 << 16) - 64)) & !7;
        // (bytes, immediate offset, lane l's byte in the region: consecutive,
        // scattered or one for all)
        let patterns: [(usize, i32, &dyn Fn(usize) -> usize); 8] = [
            (4, 0, &|l| 256 + 4 * l),
            (8, 0, &|l| 1024 + 8 * l),
            (4, -8, &|l| 2048 + 4 * l),
            (8, 24, &|l| 4096 + 8 * l),
            (4, 0, &scattered),
            (8, -16, &scattered),
            (4, 12, &|_| 777 * 4),
            (8, 0, &|_| 3000 * 8),
        ];
        for (bytes, offset, at) in patterns {
            let what = format!("{bytes} bytes, offset {offset}, lane 1 at {}", at(1));
            let (load, store) = if bytes == 4 {
                (FlatOp::LoadDword, FlatOp::StoreDword)
            } else {
                (FlatOp::LoadDwordx2, FlatOp::StoreDwordx2)
            };
            // The base sits almost 4 GiB below the region (less the immediate), so
            // every lane's 32-bit offset has its high bits set.
            let base = (r.device_base() - 0xFFFE_0000).wrapping_add_signed(-i64::from(offset));
            assert!(r.write_bytes(0, &init));
            let mut w = wave();
            w.sgpr[0] = base as u32;
            w.sgpr[1] = (base >> 32) as u32;
            for l in 0..WAVE_SIZE {
                w.vgpr[0][l] = 0xFFFE_0000 + at(l) as u32;
            }
            h.exec(&mut w, &saddr(load, Some(v(6, 2)), None, offset))
                .unwrap();
            for l in 0..WAVE_SIZE {
                assert_eq!(w.vgpr[6][l], le32(&init, at(l)), "load lane {l}, {what}");
                if bytes == 8 {
                    assert_eq!(
                        w.vgpr[7][l],
                        le32(&init, at(l) + 4),
                        "load lane {l}, {what}"
                    );
                }
            }
            if at(0) == at(1) {
                continue;
            }
            for l in 0..WAVE_SIZE {
                w.vgpr[6][l] = 0xC000_0000 | (l as u32) << 8 | bytes as u32;
                w.vgpr[7][l] = 0xD000_0000 | l as u32;
            }
            h.exec(&mut w, &saddr(store, None, Some(v(6, 2)), offset))
                .unwrap();
            let mut want = init.clone();
            for l in 0..WAVE_SIZE {
                want[at(l)..at(l) + 4].copy_from_slice(&w.vgpr[6][l].to_le_bytes());
                if bytes == 8 {
                    want[at(l) + 4..at(l) + 8].copy_from_slice(&w.vgpr[7][l].to_le_bytes());
                }
            }
            assert!(read(&r, 0, 1 << 16) == want, "store, {what}");
            // Some lanes: the others keep their registers and their bytes.
            let exec = 0x00F0_5555_0000_FF0Eu64;
            w.set_exec(exec);
            let kept = (w.vgpr[6], w.vgpr[7]);
            assert!(r.write_bytes(0, &init));
            h.exec(&mut w, &saddr(load, Some(v(6, 2)), None, offset))
                .unwrap();
            for l in 0..WAVE_SIZE {
                let on = (exec >> l) & 1 == 1;
                let want6 = if on { le32(&init, at(l)) } else { kept.0[l] };
                let want7 = if on && bytes == 8 {
                    le32(&init, at(l) + 4)
                } else {
                    kept.1[l]
                };
                assert_eq!(
                    (w.vgpr[6][l], w.vgpr[7][l]),
                    (want6, want7),
                    "exec load lane {l}, {what}"
                );
            }
            for l in 0..WAVE_SIZE {
                w.vgpr[6][l] = 0xE000_0000 | (l as u32) << 8;
                w.vgpr[7][l] = 0xF000_0000 | l as u32;
            }
            h.exec(&mut w, &saddr(store, None, Some(v(6, 2)), offset))
                .unwrap();
            let mut want = init.clone();
            for l in (0..WAVE_SIZE).filter(|l| (exec >> l) & 1 == 1) {
                want[at(l)..at(l) + 4].copy_from_slice(&w.vgpr[6][l].to_le_bytes());
                if bytes == 8 {
                    want[at(l) + 4..at(l) + 8].copy_from_slice(&w.vgpr[7][l].to_le_bytes());
                }
            }
            assert!(read(&r, 0, 1 << 16) == want, "exec store, {what}");
        }
        // v0 counts up by 4 through 2^32: lanes 0 to 3 read the region's dwords 64 to
        // 67, lane 4 wraps to the base itself, 4 GiB below the region.
        assert!(r.write_bytes(0, &init));
        let base = r.device_base() + 256 - 0xFFFF_FFF0;
        let mut w = wave();
        w.sgpr[0] = base as u32;
        w.sgpr[1] = (base >> 32) as u32;
        for l in 0..WAVE_SIZE {
            w.vgpr[0][l] = 0xFFFF_FFF0u32.wrapping_add(4 * l as u32);
        }
        let before = w.vgpr[6];
        for op in [FlatOp::LoadDword, FlatOp::StoreDword] {
            let i = match op {
                FlatOp::LoadDword => saddr(op, Some(v(6, 1)), None, 0),
                _ => saddr(op, None, Some(v(6, 1)), 0),
            };
            match h.exec(&mut w, &i).unwrap_err() {
                Fault::Memory { address, lane, .. } => {
                    assert_eq!((address, lane), (base, Some(4)), "{op:?}");
                }
                e => panic!("{op:?}: {e}"),
            }
        }
        assert_eq!(w.vgpr[6], before, "registers written");
    }

    /// `GLOBAL_LOAD_UBYTE`, `_SBYTE`, `_USHORT` and `_SSHORT` leave each active lane's
    /// byte or little-endian half zero- or sign-extended in its dword (the ISA's
    /// definitions), through a VGPR-pair address and through SADDR, for one address in
    /// every lane (the dispatch packet's `workgroup_size_x` at -O0), consecutive and
    /// scattered ones, under a full and a partial EXEC; the oracle is the bytes the
    /// definition names, half of them with the sign bit set. A lane outside every
    /// region faults at its address and loads nothing.
    #[test]
    fn sub_dword_loads_extend_the_bytes_their_opcode_names() {
        let mut h = Harness::new(0);
        let r = h.alloc(1 << 14);
        let init: Vec<u8> = (0..1u32 << 14)
            .map(|i| (i * 131 + (i >> 8)) as u8)
            .collect();
        assert!(r.write_bytes(0, &init));
        let ops = [
            (FlatOp::LoadUbyte, 1, false),
            (FlatOp::LoadSbyte, 1, true),
            (FlatOp::LoadUshort, 2, false),
            (FlatOp::LoadSshort, 2, true),
        ];
        let want = |at: usize, bytes: usize, signed: bool| -> u32 {
            match (bytes, signed) {
                (1, false) => u32::from(init[at]),
                (1, true) => i32::from(init[at] as i8) as u32,
                (2, false) => u32::from(u16::from_le_bytes([init[at], init[at + 1]])),
                _ => i32::from(i16::from_le_bytes([init[at], init[at + 1]])) as u32,
            }
        };
        let scattered = |l: usize| (l * 7_919 + 13 * (l % 5)) % ((1 << 14) - 2);
        let patterns: [(&str, &dyn Fn(usize) -> usize); 4] = [
            ("one address", &|_| 4_099),
            ("one odd address", &|_| 4_097),
            ("consecutive", &|l| 1_000 + 2 * l),
            ("scattered", &scattered),
        ];
        let inst = |op, saddr: bool, offset| {
            Instruction::Flat(Flat {
                op,
                seg: Segment::Global,
                vdst: Some(v(6, 1)),
                vaddr: Some(v(0, if saddr { 1 } else { 2 })),
                data: None,
                saddr: saddr.then(|| s(0, 2)),
                offset,
                glc: false,
                slc: false,
                scc: false,
                lds: false,
            })
        };
        for (op, bytes, signed) in ops {
            for (name, at) in patterns {
                for saddr in [false, true] {
                    for exec in [u64::MAX, 0x8000_0F00_F0F0_0001] {
                        let what = format!("{op:?}, {name}, saddr {saddr}, exec {exec:x}");
                        let offset = -6;
                        let base = r.device_base() + 6;
                        let mut w = wave();
                        w.sgpr[0] = base as u32;
                        w.sgpr[1] = (base >> 32) as u32;
                        for l in 0..WAVE_SIZE {
                            let a = match saddr {
                                true => at(l) as u64,
                                false => base + at(l) as u64,
                            };
                            w.vgpr[0][l] = a as u32;
                            w.vgpr[1][l] = (a >> 32) as u32;
                            w.vgpr[6][l] = 0x5A5A_0000 | l as u32;
                        }
                        w.set_exec(exec);
                        h.exec(&mut w, &inst(op, saddr, offset)).unwrap();
                        for l in 0..WAVE_SIZE {
                            let expected = match (exec >> l) & 1 {
                                1 => want(at(l), bytes, signed),
                                _ => 0x5A5A_0000 | l as u32,
                            };
                            assert_eq!(w.vgpr[6][l], expected, "lane {l}, {what}");
                        }
                    }
                }
            }
        }
        // Every lane at one address past the region's end: lane 0 faults there.
        let mut w = wave();
        let past = r.device_base() + (1 << 14) + 64;
        for l in 0..WAVE_SIZE {
            w.vgpr[0][l] = past as u32;
            w.vgpr[1][l] = (past >> 32) as u32;
        }
        let before = w.vgpr[6];
        match h
            .exec(&mut w, &inst(FlatOp::LoadUshort, false, 0))
            .unwrap_err()
        {
            Fault::Memory { address, lane, .. } => assert_eq!((address, lane), (past, Some(0))),
            e => panic!("{e}"),
        }
        assert_eq!(w.vgpr[6], before, "registers written");
    }

    #[test]
    fn d16_loads_keep_the_other_half() {
        let mut h = Harness::new(0);
        let r = h.alloc(512);
        let bytes: Vec<u8> = (0..256u32).map(|i| (i * 37 + 200) as u8).collect();
        assert!(r.write_bytes(0, &bytes));
        let mut w = wave_at(r.device_base(), 2);
        for l in 0..WAVE_SIZE {
            w.vgpr[5][l] = 0xAAAA_5555;
        }
        h.exec(
            &mut w,
            &global(FlatOp::LoadShortD16Hi, Some(v(5, 1)), None, false),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let half = u32::from(u16::from_le_bytes([bytes[2 * l], bytes[2 * l + 1]]));
            assert_eq!(w.vgpr[5][l], half << 16 | 0x5555, "lane {l}");
        }
        h.exec(
            &mut w,
            &global(FlatOp::LoadSbyteD16, Some(v(5, 1)), None, false),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let b = bytes[2 * l];
            let ext = if b & 0x80 != 0 {
                0xFF00 | u32::from(b)
            } else {
                u32::from(b)
            };
            assert_eq!(w.vgpr[5][l] & 0xFFFF, ext, "lane {l}");
            assert_eq!(
                w.vgpr[5][l] >> 16,
                u32::from(u16::from_le_bytes([bytes[2 * l], bytes[2 * l + 1]]))
            );
        }
    }

    #[test]
    fn global_atomics_return_old_values_with_glc() {
        let mut h = Harness::new(0);
        let r = h.alloc(1024);
        let base = r.device_base();
        // Every lane hits the same dword: one add of the lane sum, each lane sees a
        // distinct old value.
        let mut w = wave_at(base, 0);
        for l in 0..WAVE_SIZE {
            w.vgpr[1][l] = l as u32 + 1;
        }
        h.exec(
            &mut w,
            &global(FlatOp::AtomicAdd, Some(v(2, 1)), Some(v(1, 1)), true),
        )
        .unwrap();
        assert_eq!(read_u32(&r, 0), (1..=64).sum::<u32>());
        let mut olds: Vec<u32> = (0..WAVE_SIZE).map(|l| w.vgpr[2][l]).collect();
        olds.sort();
        olds.dedup();
        assert_eq!(olds.len(), 64);
        // Without GLC nothing is returned.
        for l in 0..WAVE_SIZE {
            w.vgpr[2][l] = 0xDEAD;
        }
        h.exec(
            &mut w,
            &global(FlatOp::AtomicSmin, Some(v(2, 1)), Some(v(1, 1)), false),
        )
        .unwrap();
        assert_eq!(read_u32(&r, 0), 1);
        assert!((0..WAVE_SIZE).all(|l| w.vgpr[2][l] == 0xDEAD));
        // Per-lane dwords: inc wraps to 0 at the limit, dec reloads it.
        let mut w = wave_at(base + 256, 4);
        for l in 0..WAVE_SIZE {
            assert!(r.write_bytes(256 + 4 * l as u64, &(l as u32 % 5).to_le_bytes()));
            w.vgpr[1][l] = 3;
        }
        h.exec(
            &mut w,
            &global(FlatOp::AtomicInc, None, Some(v(1, 1)), false),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let old = l as u32 % 5;
            assert_eq!(
                read_u32(&r, 256 + 4 * l as u64),
                if old >= 3 { 0 } else { old + 1 }
            );
        }
        h.exec(
            &mut w,
            &global(FlatOp::AtomicDec, None, Some(v(1, 1)), false),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let old = l as u32 % 5;
            let mid = if old >= 3 { 0 } else { old + 1 };
            let want = if mid == 0 || mid > 3 { 3 } else { mid - 1 };
            assert_eq!(read_u32(&r, 256 + 4 * l as u64), want, "lane {l}");
        }
        // cmpswap_x2: DATA = {new, compare}; only lanes whose compare matches swap.
        let mut w = wave_at(base + 512, 8);
        for l in 0..WAVE_SIZE {
            assert!(r.write_bytes(512 + 8 * l as u64, &(l as u64 * 3).to_le_bytes()));
            let cmp = if l % 2 == 0 { l as u64 * 3 } else { 1 };
            let new = 0x1_0000_0000 + l as u64;
            w.vgpr[4][l] = new as u32;
            w.vgpr[5][l] = (new >> 32) as u32;
            w.vgpr[6][l] = cmp as u32;
            w.vgpr[7][l] = (cmp >> 32) as u32;
        }
        h.exec(
            &mut w,
            &global(FlatOp::AtomicCmpswapX2, Some(v(8, 2)), Some(v(4, 4)), true),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let m = read_u64(&r, 512 + 8 * l as u64);
            let want = if l % 2 == 0 {
                0x1_0000_0000 + l as u64
            } else {
                l as u64 * 3
            };
            assert_eq!(m, want, "lane {l}");
            assert_eq!(
                u64::from(w.vgpr[8][l]) | u64::from(w.vgpr[9][l]) << 32,
                l as u64 * 3
            );
        }
    }

    #[test]
    fn float_atomics() {
        let mut h = Harness::new(0);
        let r = h.alloc(64);
        let base = r.device_base();
        let mut w = wave_at(base, 0);
        // global_atomic_add_f64 from every lane: 64 × 0.25 added to 1.5.
        assert!(r.write_bytes(0, &1.5f64.to_le_bytes()));
        for l in 0..WAVE_SIZE {
            w.vgpr[2][l] = 0.25f64.to_bits() as u32;
            w.vgpr[3][l] = (0.25f64.to_bits() >> 32) as u32;
        }
        h.exec(
            &mut w,
            &global(FlatOp::AtomicAddF64, None, Some(v(2, 2)), false),
        )
        .unwrap();
        assert_eq!(f64::from_bits(read_u64(&r, 0)), 1.5 + 64.0 * 0.25);
        // min_f64 / max_f64.
        for l in 0..WAVE_SIZE {
            let x = (l as f64 - 20.0) * 0.5;
            w.vgpr[2][l] = x.to_bits() as u32;
            w.vgpr[3][l] = (x.to_bits() >> 32) as u32;
        }
        h.exec(
            &mut w,
            &global(FlatOp::AtomicMinF64, None, Some(v(2, 2)), false),
        )
        .unwrap();
        assert_eq!(f64::from_bits(read_u64(&r, 0)), -10.0);
        h.exec(
            &mut w,
            &global(FlatOp::AtomicMaxF64, None, Some(v(2, 2)), false),
        )
        .unwrap();
        assert_eq!(f64::from_bits(read_u64(&r, 0)), 21.5);
        // add_f32 and pk_add_f16 at other addresses.
        let mut w = wave_at(base + 16, 0);
        for l in 0..WAVE_SIZE {
            w.vgpr[2][l] = 0.5f32.to_bits();
        }
        h.exec(
            &mut w,
            &global(FlatOp::AtomicAddF32, None, Some(v(2, 1)), false),
        )
        .unwrap();
        assert_eq!(f32::from_bits(read_u32(&r, 16)), 32.0);
        let mut w = wave_at(base + 24, 0);
        w.set_exec(1);
        // {1.5, 2.25} + {2.25, 1.5} = {3.75, 3.75}.
        assert!(r.write_bytes(24, &(0x4080_3E00u32).to_le_bytes()));
        w.vgpr[2][0] = 0x3E00_4080;
        h.exec(
            &mut w,
            &global(FlatOp::AtomicPkAddF16, Some(v(3, 1)), Some(v(2, 1)), true),
        )
        .unwrap();
        assert_eq!(read_u32(&r, 24), 0x4380_4380);
        assert_eq!(w.vgpr[3][0], 0x4080_3E00);
    }

    #[test]
    fn atomics_from_many_host_threads_are_atomic() {
        // Four host threads, each a wave adding 1.0 (f64, a CAS loop on the host) and 1
        // (u64, a native fetch_add) from every lane 100 times at the same addresses.
        let h = Harness::new(0);
        let r = h.alloc(64);
        let base = r.device_base();
        let mem = h.mem.clone();
        std::thread::scope(|sc| {
            for _ in 0..4 {
                let mem = mem.clone();
                sc.spawn(move || {
                    let mut h = Harness::new(0);
                    h.mem = mem;
                    let mut w = wave_at(base, 0);
                    for l in 0..WAVE_SIZE {
                        w.vgpr[2][l] = 1.0f64.to_bits() as u32;
                        w.vgpr[3][l] = (1.0f64.to_bits() >> 32) as u32;
                        w.vgpr[4][l] = 1;
                        w.vgpr[5][l] = 0;
                        w.vgpr[6][l] = 8;
                    }
                    let add_f64 = global(FlatOp::AtomicAddF64, None, Some(v(2, 2)), false);
                    let mut add_u64 = global(FlatOp::AtomicAddX2, None, Some(v(4, 2)), false);
                    if let Instruction::Flat(f) = &mut add_u64 {
                        f.vaddr = Some(v(6, 1));
                    }
                    for _ in 0..100 {
                        h.exec(&mut w, &add_f64).unwrap();
                        h.exec(&mut w, &add_u64).unwrap();
                    }
                });
            }
        });
        assert_eq!(f64::from_bits(read_u64(&r, 0)), 4.0 * 64.0 * 100.0);
        assert_eq!(read_u64(&r, 8), 4 * 64 * 100);
    }

    /// Whole-wave LDS reads where every lane reads one address (a broadcast) or
    /// consecutive words, in the one- and two-address forms, against the LDS bytes.
    #[test]
    fn lds_broadcast_and_consecutive_reads() {
        let mut h = Harness::new(4096);
        for (k, b) in h.lds.iter_mut().enumerate() {
            *b = (k * 29 + 7) as u8;
        }
        let lds = h.lds.clone();
        let at = |o: usize| u32::from_le_bytes(lds[o..o + 4].try_into().unwrap());
        for (stride, base) in [(0u32, 12u32), (4, 8), (8, 16), (4, 2)] {
            let mut w = wave();
            for l in 0..WAVE_SIZE {
                w.vgpr[0][l] = base + stride * l as u32;
            }
            // ds_read_b32 v10, v0 offset:4
            h.exec(
                &mut w,
                &ds(DsOp::DsReadB32, Some(v(10, 1)), None, None, 4, 0),
            )
            .unwrap();
            // ds_read_b64 v[12:13], v0 offset:8
            h.exec(
                &mut w,
                &ds(DsOp::DsReadB64, Some(v(12, 2)), None, None, 8, 0),
            )
            .unwrap();
            // ds_read2_b32 v[14:15], v0 offset0:1 offset1:3 (units of 4 bytes)
            h.exec(
                &mut w,
                &ds(DsOp::DsRead2B32, Some(v(14, 2)), None, None, 1, 3),
            )
            .unwrap();
            for l in 0..WAVE_SIZE {
                let a = (base + stride * l as u32) as usize;
                assert_eq!(w.vgpr[10][l], at(a + 4), "lane {l} stride {stride}");
                assert_eq!(w.vgpr[12][l], at(a + 8), "lane {l} stride {stride}");
                assert_eq!(w.vgpr[13][l], at(a + 12), "lane {l} stride {stride}");
                assert_eq!(w.vgpr[14][l], at(a + 4), "lane {l} stride {stride}");
                assert_eq!(w.vgpr[15][l], at(a + 12), "lane {l} stride {stride}");
            }
        }
    }

    /// Whole-wave LDS writes to one address (lane order: the last lane's data stays)
    /// and to consecutive words, one- and two-address forms.
    #[test]
    fn lds_broadcast_and_consecutive_writes() {
        for (stride, base) in [(0u32, 12u32), (4, 8), (8, 16), (4, 2)] {
            let mut h = Harness::new(4096);
            let mut w = wave();
            for l in 0..WAVE_SIZE {
                w.vgpr[0][l] = base + stride * l as u32;
                w.vgpr[1][l] = 0x1111_0000 + l as u32;
                w.vgpr[2][l] = 0x2222_0000 + l as u32;
            }
            // ds_write_b64 v0, v[1:2] offset:0x400
            h.exec(
                &mut w,
                &ds(DsOp::DsWriteB64, None, Some(v(1, 2)), None, 0, 4),
            )
            .unwrap();
            // ds_write2_b32 v0, v1, v2 offset0:1 offset1:3 (units of 4 bytes)
            h.exec(
                &mut w,
                &ds(DsOp::DsWrite2B32, None, Some(v(1, 1)), Some(v(2, 1)), 1, 3),
            )
            .unwrap();
            // The expected LDS: the same stores applied lane by lane, in lane order.
            let mut want = vec![0u8; 4096];
            let mut put = |at: usize, v: u32| want[at..at + 4].copy_from_slice(&v.to_le_bytes());
            for l in 0..WAVE_SIZE {
                let a = (base + stride * l as u32) as usize;
                put(a + 0x400, 0x1111_0000 + l as u32);
                put(a + 0x404, 0x2222_0000 + l as u32);
            }
            // The two-address form stores every lane's first word, then every lane's
            // second word.
            for l in 0..WAVE_SIZE {
                let a = (base + stride * l as u32) as usize;
                put(a + 4, 0x1111_0000 + l as u32);
            }
            for l in 0..WAVE_SIZE {
                let a = (base + stride * l as u32) as usize;
                put(a + 12, 0x2222_0000 + l as u32);
            }
            let bad: Vec<usize> = (0..4096).filter(|&k| h.lds[k] != want[k]).take(8).collect();
            assert!(
                bad.is_empty(),
                "stride {stride} base {base} bytes {bad:?} {:?} {:?}",
                bad.first().map(|&k| &h.lds[k..k + 8]),
                bad.first().map(|&k| &want[k..k + 8])
            );
        }
    }

    #[test]
    fn lds_two_address_and_sub_dword_forms_keep_their_layout_and_exec() {
        let mut h = Harness::new(2048);
        let mut w = wave();
        // Odd lanes inactive: their destinations keep 0xDEAD, their LDS bytes stay 0.
        w.set_exec(0x5555_5555_5555_5555);
        for l in 0..WAVE_SIZE {
            w.vgpr[0][l] = 16 * l as u32;
            w.vgpr[1][l] = 0x8000_0000 | l as u32;
            w.vgpr[2][l] = 0x1000 + l as u32;
            w.vgpr[3][l] = 0x7F80 | l as u32;
            w.vgpr[4][l] = 0x2000 + l as u32;
            for r in 10..14 {
                w.vgpr[r][l] = 0xDEAD;
            }
        }
        // ds_write2_b64 v0, v[1:2], v[3:4] offset0:0 offset1:1 (units of 8 bytes).
        h.exec(
            &mut w,
            &ds(DsOp::DsWrite2B64, None, Some(v(1, 2)), Some(v(3, 2)), 0, 1),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let at = |o: usize| u32::from_le_bytes(h.lds[o..o + 4].try_into().unwrap());
            let b = 16 * l;
            let want: [u32; 4] = if l % 2 == 0 {
                [
                    0x8000_0000 | l as u32,
                    0x1000 + l as u32,
                    0x7F80 | l as u32,
                    0x2000 + l as u32,
                ]
            } else {
                [0; 4]
            };
            assert_eq!([at(b), at(b + 4), at(b + 8), at(b + 12)], want, "lane {l}");
        }
        // ds_read2_b64 v[10:13], v0 offset0:1 offset1:0: the halves swapped.
        h.exec(
            &mut w,
            &ds(DsOp::DsRead2B64, Some(v(10, 4)), None, None, 1, 0),
        )
        .unwrap();
        // ds_read_i16 v14, v0 offset:2 (high half of the first dword, sign-extended).
        h.exec(
            &mut w,
            &ds(DsOp::DsReadI16, Some(v(14, 1)), None, None, 2, 0),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let got = [w.vgpr[10][l], w.vgpr[11][l], w.vgpr[12][l], w.vgpr[13][l]];
            if l % 2 == 0 {
                let x = l as u32;
                assert_eq!(got, [0x7F80 | x, 0x2000 + x, 0x8000_0000 | x, 0x1000 + x]);
                assert_eq!(w.vgpr[14][l], 0xFFFF_8000, "lane {l}");
            } else {
                assert_eq!(got, [0xDEAD; 4], "lane {l}");
            }
        }
        // A lane past the end of the LDS: the per-lane path reports its range.
        w.set_exec(u64::MAX);
        w.vgpr[0][37] = 2048 - 4;
        h.lds.fill(0);
        let err = h
            .exec(
                &mut w,
                &ds(DsOp::DsWriteB64, None, Some(v(1, 2)), None, 0, 0),
            )
            .unwrap_err();
        assert!(
            matches!(
                err,
                Fault::LdsOutOfRange {
                    offset: 2044,
                    size: 8,
                    lds_size: 2048,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn lds_atomics_and_exchanges() {
        let mut h = Harness::new(1024);
        let mut w = wave();
        for l in 0..WAVE_SIZE {
            w.vgpr[0][l] = 4 * l as u32;
            w.vgpr[1][l] = 0xF0F0_0000 | l as u32;
            w.vgpr[2][l] = 0x0000_0F00;
        }
        h.lds[..256].fill(0xFF);
        // ds_mskor_b32: (old & !DATA) | DATA2.
        h.exec(
            &mut w,
            &ds(
                DsOp::DsMskorRtnB32,
                Some(v(3, 1)),
                Some(v(1, 1)),
                Some(v(2, 1)),
                0,
                0,
            ),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let got = u32::from_le_bytes(h.lds[4 * l..4 * l + 4].try_into().unwrap());
            assert_eq!(got, !(0xF0F0_0000 | l as u32) | 0x0F00);
            assert_eq!(w.vgpr[3][l], 0xFFFF_FFFF);
        }
        // ds_wrap_rtn_b32: old >= DATA ? old - DATA : old + DATA2.
        for l in 0..WAVE_SIZE {
            h.lds[4 * l..4 * l + 4].copy_from_slice(&(l as u32).to_le_bytes());
            w.vgpr[1][l] = 32;
            w.vgpr[2][l] = 1000;
        }
        h.exec(
            &mut w,
            &ds(
                DsOp::DsWrapRtnB32,
                Some(v(3, 1)),
                Some(v(1, 1)),
                Some(v(2, 1)),
                0,
                0,
            ),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            let got = u32::from_le_bytes(h.lds[4 * l..4 * l + 4].try_into().unwrap());
            let old = l as u32;
            assert_eq!(got, if old >= 32 { old - 32 } else { old + 1000 });
        }
        // ds_cmpst_f32 compares as floats: -0.0 matches +0.0, NaN matches nothing.
        w.set_exec(0b11);
        h.lds[0..4].copy_from_slice(&0.0f32.to_bits().to_le_bytes());
        h.lds[4..8].copy_from_slice(&f32::NAN.to_bits().to_le_bytes());
        for l in 0..2 {
            w.vgpr[1][l] = if l == 0 {
                (-0.0f32).to_bits()
            } else {
                f32::NAN.to_bits()
            };
            w.vgpr[2][l] = 7.0f32.to_bits();
        }
        h.exec(
            &mut w,
            &ds(DsOp::DsCmpstF32, None, Some(v(1, 1)), Some(v(2, 1)), 0, 0),
        )
        .unwrap();
        assert_eq!(f32::from_le_bytes(h.lds[0..4].try_into().unwrap()), 7.0);
        assert!(f32::from_le_bytes(h.lds[4..8].try_into().unwrap()).is_nan());
        // ds_add_rtn_f64 from all lanes on one address.
        w.set_exec(u64::MAX);
        for l in 0..WAVE_SIZE {
            w.vgpr[0][l] = 512;
            w.vgpr[4][l] = 0.125f64.to_bits() as u32;
            w.vgpr[5][l] = (0.125f64.to_bits() >> 32) as u32;
        }
        h.lds[512..520].copy_from_slice(&2.0f64.to_le_bytes());
        h.exec(
            &mut w,
            &ds(DsOp::DsAddRtnF64, Some(v(6, 2)), Some(v(4, 2)), None, 0, 0),
        )
        .unwrap();
        assert_eq!(
            f64::from_le_bytes(h.lds[512..520].try_into().unwrap()),
            10.0
        );
        // ds_wrxchg2st64_rtn_b32: two exchanges 64 dwords apart per unit.
        for l in 0..WAVE_SIZE {
            w.vgpr[0][l] = 0;
        }
        w.set_exec(1);
        h.lds[4 * 64..4 * 65].copy_from_slice(&11u32.to_le_bytes());
        h.lds[4 * 128..4 * 129].copy_from_slice(&22u32.to_le_bytes());
        w.vgpr[1][0] = 33;
        w.vgpr[2][0] = 44;
        h.exec(
            &mut w,
            &ds(
                DsOp::DsWrxchg2st64RtnB32,
                Some(v(8, 2)),
                Some(v(1, 1)),
                Some(v(2, 1)),
                1,
                2,
            ),
        )
        .unwrap();
        assert_eq!((w.vgpr[8][0], w.vgpr[9][0]), (11, 22));
        assert_eq!(u32::from_le_bytes(h.lds[256..260].try_into().unwrap()), 33);
        assert_eq!(u32::from_le_bytes(h.lds[512..516].try_into().unwrap()), 44);
        // ds_read_u8_d16_hi keeps the low half.
        w.vgpr[9][0] = 0x1234_5678;
        h.lds[3] = 0x9A;
        h.exec(
            &mut w,
            &ds(DsOp::DsReadU8D16Hi, Some(v(9, 1)), None, None, 3, 0),
        )
        .unwrap();
        assert_eq!(w.vgpr[9][0], 0x009A_5678);
    }

    /// `ds_bpermute_b32`: each active lane reads the lane named by bits 7:2 of its
    /// address plus the offset (higher bits ignored), 0 from an inactive lane;
    /// inactive lanes keep their destination.
    #[test]
    fn ds_bpermute_reads_the_named_lane() {
        let mut h = Harness::new(64);
        for exec in [u64::MAX, 0x0F0F_00FF_1234_8001] {
            let mut w = wave();
            w.set_exec(exec);
            for l in 0..WAVE_SIZE {
                // Lane l names lane (7l + 3) mod 64 (with offset 8 = two lanes), with
                // junk in bits 0-1 and above bit 7.
                let target = (7 * l + 1) % 64;
                w.vgpr[0][l] = (target as u32) << 2 | (l as u32 & 3) | (l as u32) << 9;
                w.vgpr[1][l] = 5000 + l as u32;
                w.vgpr[2][l] = 0xDEAD;
            }
            h.exec(
                &mut w,
                &ds(
                    DsOp::DsBpermuteB32,
                    Some(v(2, 1)),
                    Some(v(1, 1)),
                    None,
                    8,
                    0,
                ),
            )
            .unwrap();
            for l in 0..WAVE_SIZE {
                let src = (7 * l + 3) % 64;
                let want = if (exec >> l) & 1 == 0 {
                    0xDEAD
                } else if (exec >> src) & 1 == 1 {
                    5000 + src as u32
                } else {
                    0
                };
                assert_eq!(w.vgpr[2][l], want, "lane {l} exec {exec:#x}");
            }
        }
    }

    #[test]
    fn ds_swizzle_patterns() {
        let mut h = Harness::new(64);
        let mut w = wave();
        for l in 0..WAVE_SIZE {
            w.vgpr[1][l] = 1000 + l as u32;
        }
        // Bit-mask mode: and 0x1f, or 0, xor 1 swaps neighbours.
        let pat: u16 = 0x1F | 1 << 10;
        h.exec(
            &mut w,
            &ds(
                DsOp::DsSwizzleB32,
                Some(v(2, 1)),
                Some(v(1, 1)),
                None,
                pat as u8,
                (pat >> 8) as u8,
            ),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            assert_eq!(w.vgpr[2][l], 1000 + (l ^ 1) as u32);
        }
        // Broadcast lane 5 of each half: and 0, or 5.
        let pat: u16 = 5 << 5;
        h.exec(
            &mut w,
            &ds(
                DsOp::DsSwizzleB32,
                Some(v(2, 1)),
                Some(v(1, 1)),
                None,
                pat as u8,
                (pat >> 8) as u8,
            ),
        )
        .unwrap();
        for l in 0..WAVE_SIZE {
            assert_eq!(w.vgpr[2][l], 1000 + ((l & 32) | 5) as u32);
        }
        // Quad permute [3,2,1,0] reverses each quad; inactive sources read 0.
        let pat: u16 = 0x8000 | 3 | 2 << 2 | 1 << 4;
        w.set_exec(!0b1000);
        h.exec(
            &mut w,
            &ds(
                DsOp::DsSwizzleB32,
                Some(v(2, 1)),
                Some(v(1, 1)),
                None,
                pat as u8,
                (pat >> 8) as u8,
            ),
        )
        .unwrap();
        assert_eq!(w.vgpr[2][0], 0, "lane 0 reads inactive lane 3");
        assert_eq!(w.vgpr[2][1], 1002);
        assert_eq!(w.vgpr[2][7], 1004);
    }

    fn mubuf(
        op: MubufOp,
        vdata: Operand,
        vaddr: Option<Operand>,
        offen: bool,
        idxen: bool,
        offset: u16,
        glc: bool,
    ) -> Instruction {
        Instruction::Mubuf(Mubuf {
            op,
            vdata: Some(vdata),
            vaddr,
            srsrc: Some(s(4, 4)),
            soffset: s(8, 1),
            offset,
            offen,
            idxen,
            glc,
            slc: false,
            scc: false,
            lds: false,
        })
    }

    /// Writes a buffer descriptor into s[4:7].
    #[allow(clippy::too_many_arguments)]
    fn descriptor(
        w: &mut Wave,
        base: u64,
        stride: u32,
        num_records: u32,
        swizzle: bool,
        elem_code: u32,
        idx_code: u32,
        add_tid: bool,
    ) {
        w.sgpr[4] = base as u32;
        w.sgpr[5] =
            ((base >> 32) as u32 & 0xFFFF) | (stride & 0x3FFF) << 16 | u32::from(swizzle) << 31;
        w.sgpr[6] = num_records;
        w.sgpr[7] = elem_code << 19 | idx_code << 21 | u32::from(add_tid) << 23;
    }

    #[test]
    fn scratch_buffer_and_flat_scratch_agree() {
        // The private segment V# (swizzled, 4-byte elements, index stride 64, ADD_TID)
        // and FLAT_SCRATCH + private aperture address the same bytes.
        let mut h = Harness::new(0);
        let r = h.alloc(64 * 64);
        let base = r.device_base();
        let mut w = wave();
        descriptor(&mut w, base, 0, 64 * 64, true, 1, 3, true);
        w.sgpr[8] = 256; // soffset: one row, not swizzled
        w.sgpr[102] = base as u32;
        w.sgpr[103] = (base >> 32) as u32;
        for l in 0..WAVE_SIZE {
            w.vgpr[1][l] = 0x100 * l as u32 + 7;
            w.vgpr[2][l] = 0x100 * l as u32 + 8;
        }
        // buffer_store_dwordx2 v[1:2], off, s[4:7], s8 offset:8
        h.exec(
            &mut w,
            &mubuf(
                MubufOp::BufferStoreDwordx2,
                v(1, 2),
                None,
                false,
                false,
                8,
                false,
            ),
        )
        .unwrap();
        for l in 0..WAVE_SIZE as u64 {
            // private byte p of lane l: base + soffset + (p/4)·256 + l·4 + p%4.
            assert_eq!(read_u32(&r, 256 + 2 * 256 + 4 * l), 0x100 * l as u32 + 7);
            assert_eq!(read_u32(&r, 256 + 3 * 256 + 4 * l), 0x100 * l as u32 + 8);
        }
        // The same bytes through the private aperture: the wave-scaled soffset of 256
        // is 256 / 64 = 4 bytes of each lane's private space, so per-lane offset 12.
        for l in 0..WAVE_SIZE {
            let a = crate::state::Apertures::KFD.private_base + 4 + 8;
            w.vgpr[10][l] = a as u32;
            w.vgpr[11][l] = (a >> 32) as u32;
        }
        let load = Instruction::Flat(Flat {
            op: FlatOp::LoadDwordx2,
            seg: Segment::Flat,
            vdst: Some(v(12, 2)),
            vaddr: Some(v(10, 2)),
            data: None,
            saddr: None,
            offset: 0,
            glc: false,
            slc: false,
            scc: false,
            lds: false,
        });
        h.exec(&mut w, &load).unwrap();
        for l in 0..WAVE_SIZE {
            assert_eq!(
                (w.vgpr[12][l], w.vgpr[13][l]),
                (0x100 * l as u32 + 7, 0x100 * l as u32 + 8)
            );
        }
    }

    /// Whole-wave scratch rows (every lane active, one offset: each dword of the lanes
    /// one run of 64 dwords) load and store what the per-lane path does, which runs
    /// when one lane is inactive.
    #[test]
    fn scratch_rows_match_the_per_lane_path() {
        let mut h = Harness::new(0);
        let r = h.alloc(64 * 64 * 4);
        let base = r.device_base();
        let mut w = wave();
        descriptor(&mut w, base, 0, 64 * 64 * 4, true, 1, 3, true);
        w.sgpr[8] = 512;
        for k in 0..4 {
            for l in 0..WAVE_SIZE {
                w.vgpr[4 + k][l] = (0x1000 * k + l) as u32 ^ 0x5A5A_0000;
            }
        }
        for l in 0..WAVE_SIZE {
            w.vgpr[1][l] = 32; // offset (OFFEN)
        }
        let store = mubuf(
            MubufOp::BufferStoreDwordx4,
            v(4, 4),
            Some(v(1, 1)),
            true,
            false,
            4,
            false,
        );
        h.exec(&mut w, &store).unwrap();
        for k in 0..4u64 {
            for l in 0..WAVE_SIZE as u64 {
                // Byte p of lane l's private space: base + soffset + (p/4)·256 + 4l.
                let at = 512 + (32 + 4 + 4 * k) / 4 * 256 + 4 * l;
                assert_eq!(read_u32(&r, at), (0x1000 * k + l) as u32 ^ 0x5A5A_0000);
            }
        }
        let load = mubuf(
            MubufOp::BufferLoadDwordx4,
            v(10, 4),
            Some(v(1, 1)),
            true,
            false,
            4,
            false,
        );
        h.exec(&mut w, &load).unwrap();
        let rows: Vec<VReg> = w.vgpr[10..14].to_vec();
        for k in 0..4 {
            w.vgpr[10 + k] = [0; WAVE_SIZE];
        }
        w.set_exec(u64::MAX ^ 1);
        h.exec(&mut w, &load).unwrap();
        for k in 0..4 {
            assert_eq!(rows[k][1..], w.vgpr[10 + k][1..], "dword {k}");
            assert_eq!(rows[k], w.vgpr[4 + k], "dword {k} read back");
        }
        // One active lane (its own path): lane 37 stores new data, lane 5 loads.
        for k in 0..4 {
            w.vgpr[4 + k][37] = 0xABC0 + k as u32;
            w.vgpr[10 + k] = [7; WAVE_SIZE];
        }
        w.set_exec(1 << 37);
        h.exec(&mut w, &store).unwrap();
        w.set_exec(1 << 5);
        h.exec(&mut w, &load).unwrap();
        w.set_exec(u64::MAX);
        let mut all: Vec<VReg> = w.vgpr[10..14].to_vec();
        h.exec(&mut w, &load).unwrap();
        for k in 0..4 {
            assert_eq!(all[k][5], rows[k][5], "lane 5 dword {k}");
            all[k][5] = 7;
            assert_eq!(all[k], [7; WAVE_SIZE], "only lane 5 loaded, dword {k}");
            assert_eq!(
                w.vgpr[10 + k][37],
                0xABC0 + k as u32,
                "lane 37 stored dword {k}"
            );
            assert_eq!(w.vgpr[10 + k][36], rows[k][36], "lane 36 kept dword {k}");
        }
    }

    #[test]
    fn swizzled_and_raw_buffers() {
        let mut h = Harness::new(0);
        let r = h.alloc(8192);
        let base = r.device_base();
        let mut w = wave();
        // Swizzled buffer: element 8 (code 2), index stride 16 (code 1), stride 32.
        descriptor(&mut w, base, 32, 8192, true, 2, 1, false);
        w.sgpr[8] = 0;
        for l in 0..WAVE_SIZE {
            w.vgpr[0][l] = l as u32; // index
            w.vgpr[1][l] = 12; // offset
            w.vgpr[2][l] = 0xC0DE_0000 | l as u32;
        }
        h.exec(
            &mut w,
            &mubuf(
                MubufOp::BufferStoreDword,
                v(2, 1),
                Some(v(0, 2)),
                true,
                true,
                0,
                false,
            ),
        )
        .unwrap();
        for l in 0..WAVE_SIZE as u64 {
            let (es, is, stride, off) = (8u64, 16u64, 32u64, 12u64);
            let a = (l / is * stride + off / es * es) * is + (l % is) * es + off % es;
            assert_eq!(read_u32(&r, a), 0xC0DE_0000 | l as u32, "lane {l}");
        }
        // Raw buffer with NUM_RECORDS = 64: lanes past it read 0 and do not store.
        descriptor(&mut w, base + 4096, 0, 64, false, 0, 0, false);
        for l in 0..WAVE_SIZE {
            w.vgpr[1][l] = 4 * l as u32;
        }
        h.exec(
            &mut w,
            &mubuf(
                MubufOp::BufferStoreDword,
                v(2, 1),
                Some(v(1, 1)),
                true,
                false,
                0,
                false,
            ),
        )
        .unwrap();
        assert_eq!(read_u32(&r, 4096 + 60), 0xC0DE_000F);
        assert_eq!(read_u32(&r, 4096 + 64), 0, "out of range: dropped");
        for l in 0..WAVE_SIZE {
            w.vgpr[3][l] = 0x7777;
        }
        h.exec(
            &mut w,
            &mubuf(
                MubufOp::BufferLoadDword,
                v(3, 1),
                Some(v(1, 1)),
                true,
                false,
                0,
                false,
            ),
        )
        .unwrap();
        assert_eq!(w.vgpr[3][15], 0xC0DE_000F);
        assert_eq!(w.vgpr[3][16], 0, "out of range: reads 0");
        // buffer_atomic_add with GLC returns the old value.
        for l in 0..WAVE_SIZE {
            w.vgpr[1][l] = 0;
            w.vgpr[4][l] = 1;
        }
        w.set_exec(0b111);
        h.exec(
            &mut w,
            &mubuf(
                MubufOp::BufferAtomicAdd,
                v(4, 1),
                Some(v(1, 1)),
                true,
                false,
                0,
                true,
            ),
        )
        .unwrap();
        assert_eq!(read_u32(&r, 4096), 0xC0DE_0000 + 3);
        let mut olds = [w.vgpr[4][0], w.vgpr[4][1], w.vgpr[4][2]];
        olds.sort();
        assert_eq!(olds, [0xC0DE_0000, 0xC0DE_0001, 0xC0DE_0002]);
        let _ = read(&r, 0, 1);
    }
}
