//! Pre-resolved integer VALU instructions: the hot integer forms (moves, selects,
//! 32-bit arithmetic and logic, carries, 64-bit shifts and multiply-adds, integer
//! and f64 compares, f64 add/mul/fma, f32 arithmetic and conversions) in their e32 / e64
//! encodings without modifiers, and
//! `v_pk_mov_b32`, with every operand resolved at decode time to a register-file
//! index or a constant.
//!
//! A plan computes exactly what the general path (`ops::exec`, `cmp::exec`,
//! `vop3p::exec`) computes for the same instruction; the unit tests below check that
//! for every planned op and operand kind, EXEC pattern and runner (AVX2 and portable).
//! Instructions with ABS/NEG/CLAMP/OMOD/OP_SEL, DPP or SDWA, or an operand that
//! depends on wave state other than registers (apertures, `src_vccz`, ...) get no
//! plan and keep the general path.
//!
//! Execution: one runner per kind (`run_body::<C>`), compiled for AVX2 where the host
//! has it. A scalar or constant source is taken by the lane loops as a value (the
//! register/value choice is made once per execution, outside the loops); lane masks
//! (carry-in, `v_cndmask` select, EXEC) are expanded to lanes from their 32-bit
//! halves; carries, borrows and compares are packed into masks 8 lanes at a time
//! (VMOVMSKPS with AVX2); results go through the wave's scratch lanes and a write
//! under EXEC (`v_mov_b32` with every lane active writes its destination directly).

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

use crate::arch::{VReg, AGPR_BASE, WAVE_SIZE};
use crate::generated::opcodes::{Vop3pOp, VopOp as O};
use crate::inst::{Valu, ValuEncoding, Vop3p};
use crate::operand::{code, Operand};
use crate::state::WaveState;

use super::vop3p::{pk_dword, PlanSrc};
use crate::fp::{nan_of, FpMode};
#[cfg(target_arch = "x86_64")]
use crate::simd::Avx2;
use crate::simd::{
    self, add_co_body, cmp_body, lane_masks, sub_co_body, with_lanes, Lanes, Pack, Portable,
};
use crate::state::{reg_base, Src};

use crate::sem::{self, Shift64};
/// The lane operations the plans compute (the fused runs name them through here).
pub(super) use crate::sem::{Bin, Tri};

/// What a planned instruction computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `v_mov_b32`.
    Mov,
    /// `v_pk_mov_b32` (VOP3P): the destination's low dword from src0, its high dword
    /// from src1, each source already the dword OP_SEL picks.
    PkMov,
    /// `v_cndmask_b32`: src1 where the mask (src2) is set, else src0.
    Cndmask,
    Bin(Bin),
    Tri(Tri),
    /// `v_add_u32`, `v_add_co_u32`, `v_addc_co_u32` (carry-in from src2 when `cin`).
    Add {
        cin: bool,
    },
    /// The subtractions (`rev`: src1 − src0; borrow-in from src2 when `cin`).
    Sub {
        rev: bool,
        cin: bool,
    },
    /// `v_cmp[x]_*_{i,u}32`: condition numbered as `simd::cmp_u32`.
    Cmp32 {
        signed: bool,
        cond: u8,
        cmpx: bool,
    },
    /// `v_cmp[x]_*_{i,u}16`: the sources' low halves, sign- or zero-extended, compared
    /// as `Cmp32` does.
    Cmp16 {
        signed: bool,
        cond: u8,
        cmpx: bool,
    },
    /// `v_readfirstlane_b32`: src0 in the first active lane (lane 0 when EXEC is
    /// empty), to the scalar destination.
    Readfirstlane,
    /// `v_cmp[x]_*_{i,u}64`.
    Cmp64 {
        signed: bool,
        cond: u8,
        cmpx: bool,
    },
    /// `v_lshlrev_b64` (0), `v_lshrrev_b64` (1), `v_ashrrev_i64` (2).
    Shift64(u8),
    /// `v_mad_u64_u32` / `v_mad_i64_i32` (carry-out to SDST).
    Mad64 {
        signed: bool,
    },
    /// `v_cmp[x]_*_f64`: condition `cond` as `cmp::fcmp` numbers it (the opcode's low
    /// four bits); planned, as the f64 ops are, for MODE with f64 denormals kept (the
    /// operands compared as they are; else the general path runs).
    CmpF64 {
        cond: u8,
        cmpx: bool,
    },
    /// `v_add_f64`, `v_mul_f64`, `v_fma_f64`, `v_fmac_f64` (src2 = the destination):
    /// planned for MODE round-to-nearest-even with f64 denormals kept (else the
    /// general path runs).
    F64(F64Op),
    /// `v_mbcnt_lo_u32_b32` / `v_mbcnt_hi_u32_b32` (`hi`): the bits of src0 below
    /// the lane's own (in the low or high half of the wave), counted, plus src1.
    Mbcnt {
        hi: bool,
    },
    /// The f32 operations of [`F32Op`]: planned for MODE round-to-nearest-even with
    /// f32 denormals kept (else the general path runs).
    F32(F32Op),
}

/// A planned f32 operation: `v_add_f32`, `v_sub_f32`, `v_subrev_f32`, `v_mul_f32`,
/// `v_fma_f32` and `v_fmac_f32` (src2 = the destination), `v_rcp_f32` and
/// `v_rcp_iflag_f32` (a correctly rounded reciprocal, as the general path
/// computes it), and the conversions between f32 and 32-bit integers (to an
/// integer: truncated, saturated, NaN as 0). Unoptimised code and LLVM's unsigned
/// division (`v_cvt_f32_u32`, `v_rcp_iflag_f32`, `v_mul_f32`, `v_cvt_u32_f32`) are
/// made of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum F32Op {
    Add,
    Sub,
    Subrev,
    Mul,
    Fma,
    Rcp,
    CvtF32U32,
    CvtF32I32,
    CvtU32F32,
    CvtI32F32,
}

impl F32Op {
    /// Every op, in code order.
    const ALL: [F32Op; 10] = [
        F32Op::Add,
        F32Op::Sub,
        F32Op::Subrev,
        F32Op::Mul,
        F32Op::Fma,
        F32Op::Rcp,
        F32Op::CvtF32U32,
        F32Op::CvtF32I32,
        F32Op::CvtU32F32,
        F32Op::CvtI32F32,
    ];

    /// Its sources (`v_fmac_f32`'s third, the destination, counted).
    pub(super) fn sources(self) -> usize {
        match self {
            F32Op::Fma => 3,
            F32Op::Add | F32Op::Sub | F32Op::Subrev | F32Op::Mul => 2,
            _ => 1,
        }
    }

    /// Whether a NaN result is the VALU's (`fp::nan_of` of its sources), to be
    /// put in place of the host's; the conversions give no NaN.
    pub(super) fn arithmetic(self) -> bool {
        self.sources() > 1 || self == F32Op::Rcp
    }
}

/// A planned f64 operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum F64Op {
    Add,
    Mul,
    Fma,
}

/// The executor of one kind of plan, compiled for the host's vector extensions.
type Runner = unsafe fn(&mut WaveState, &IntPlan);

/// A planned integer VALU instruction.
#[derive(Clone, Debug)]
pub(crate) struct IntPlan {
    pub(super) kind: Kind,
    /// `run_body` specialised for `kind` (its variant and operation) and compiled for
    /// the host (chosen with the host's features when the plan is made).
    run: Runner,
    /// Vector-file index of the destination's low dword (`u16::MAX`: none).
    pub(super) dst: u16,
    /// Scalar destination: the lane mask of compares, the carry-out of the carry ops,
    /// as the scalar-file index each of its two dwords goes to (`WaveState::write_sreg`'s
    /// rule resolved once: a dword it drops, `null` or past the operand or the file,
    /// has an index outside the file).
    pub(super) sdst: Option<[u8; 2]>,
    /// `src[k] = [low dword, high dword]` of source k, as the general path reads it
    /// (for 64-bit sources with its literal rule; for scalars as `read_scalar`).
    pub(super) src: [[PlanSrc; 2]; 3],
    /// Dwords of the vector result (0 for compares).
    width: u8,
}

/// Whether `i` is in a plain e32/e64 form: no modifier, clamp, output modifier or
/// OP_SEL, neither DPP nor SDWA (the forms the plans take).
fn plain_form(i: &Valu) -> bool {
    matches!(i.encoding, ValuEncoding::E32 | ValuEncoding::Vop3)
        && i.abs == 0
        && i.neg == 0
        && !i.clamp
        && i.omod == 0
        && i.op_sel == 0
}

/// A move between one lane of a vector register and a scalar register, resolved at
/// decode time for fused runs (`valu::jit`, which runs it between two parts of a
/// run; the interpreter runs it by the general path): unoptimised code spills SGPRs
/// into VGPR lanes (`v_writelane_b32 v40, s30, 0` ... `v_readlane_b32 s30, v40, 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LanePlan {
    /// `v_readlane_b32`: scalar-file index `sdst` (an SGPR) = lane `lane` (modulo
    /// 64) of vector-file row `src`.
    Read { sdst: u8, src: u16, lane: PlanSrc },
    /// `v_writelane_b32`: lane `lane` (modulo 64) of row `dst` = `value`, whatever
    /// EXEC says.
    Write {
        dst: u16,
        value: PlanSrc,
        lane: PlanSrc,
    },
    /// `v_readfirstlane_b32`: `sdst` = the lowest active lane of row `src`, lane 0
    /// when none is active.
    First { sdst: u8, src: u16 },
}

impl LanePlan {
    /// The plan of `i`, if it is a `v_readlane_b32` or `v_writelane_b32` in a plain
    /// e32/e64 form whose vector operand is a register, whose scalar destination is
    /// an SGPR and whose scalar sources resolve.
    pub(crate) fn of(i: &Valu) -> Option<LanePlan> {
        if !plain_form(i) {
            return None;
        }
        let scalar = |k: usize| scalar_dword(i.src[k].as_ref()?, 0);
        match i.op {
            O::VReadlaneB32 => Some(LanePlan::Read {
                sdst: sgpr_destination(i.vdst.as_ref()?)?,
                src: reg_base(i.src[0].as_ref()?)?.0 as u16,
                lane: scalar(1)?,
            }),
            O::VWritelaneB32 => Some(LanePlan::Write {
                dst: reg_base(i.vdst.as_ref()?)?.0 as u16,
                value: scalar(0)?,
                lane: scalar(1)?,
            }),
            _ => None,
        }
    }

    /// The plan of a planned `v_readfirstlane_b32` (see [`IntPlan`]) whose source is
    /// a register and destination an SGPR.
    pub(crate) fn first_lane(p: &IntPlan) -> Option<LanePlan> {
        let (Kind::Readfirstlane, PlanSrc::Vreg(src), Some([sdst, _])) =
            (p.kind, p.src[0][0], p.sdst)
        else {
            return None;
        };
        (usize::from(sdst) < SGPRS).then_some(LanePlan::First { sdst, src })
    }
}

/// SGPRs s0..s101: the scalar-file indices a [`LanePlan`] writes.
const SGPRS: usize = 102;

/// The scalar-file index of a one-dword SGPR destination (s0..s101).
fn sgpr_destination(op: &Operand) -> Option<u8> {
    match *op {
        Operand::Sreg { code, count: 1 } if usize::from(code) < SGPRS => Some(code),
        _ => None,
    }
}

/// Dword `dw` (0 or 1) of an operand read as a scalar (`WaveState::read_scalar`), or
/// `None` for operands whose value is not in the register files.
fn scalar_dword(op: &Operand, dw: u8) -> Option<PlanSrc> {
    Some(match *op {
        Operand::Sreg { code, count } => {
            if dw == 0 {
                if code == code::NULL || code >= 128 {
                    PlanSrc::Imm(0)
                } else {
                    PlanSrc::Sreg(code)
                }
            } else {
                let c = usize::from(code) + 1;
                if count >= 2 && c < 128 && code + 1 != code::NULL {
                    PlanSrc::Sreg(c as u8)
                } else {
                    PlanSrc::Imm(0)
                }
            }
        }
        Operand::Const { value, .. } => PlanSrc::Imm((value >> (32 * u32::from(dw))) as u32),
        Operand::Literal { value, .. } => PlanSrc::Imm(if dw == 0 { value } else { 0 }),
        _ => return None,
    })
}

/// Dword `dw` of a vector source as `WaveState::vsrc` reads it.
fn vector_dword(op: &Operand, dw: u8) -> Option<PlanSrc> {
    match *op {
        Operand::Vgpr { index, .. } => Some(PlanSrc::Vreg(u16::from(index) + u16::from(dw))),
        Operand::Agpr { index, .. } => Some(PlanSrc::Vreg(
            (AGPR_BASE + usize::from(index)) as u16 + u16::from(dw),
        )),
        _ => scalar_dword(op, dw),
    }
}

/// Both dwords of an f64 source as `Exe::f64_raw` reads them (a 32-bit literal is
/// the high dword).
fn f64_source(op: &Operand) -> Option<[PlanSrc; 2]> {
    if let Operand::Literal { value, .. } = *op {
        return Some([PlanSrc::Imm(0), PlanSrc::Imm(value)]);
    }
    Some([vector_dword(op, 0)?, vector_dword(op, 1)?])
}

/// Both dwords of a 64-bit source as `Exe::src64` reads them (a literal is
/// sign-extended for `signed` ops).
fn wide_source(op: &Operand, signed: bool) -> Option<[PlanSrc; 2]> {
    if let Operand::Literal { value, .. } = *op {
        let hi = if signed && (value as i32) < 0 {
            u32::MAX
        } else {
            0
        };
        return Some([PlanSrc::Imm(value), PlanSrc::Imm(hi)]);
    }
    Some([vector_dword(op, 0)?, vector_dword(op, 1)?])
}

impl IntPlan {
    /// The plan of `i`, if it is a planned op in a plain e32/e64 form whose operands
    /// all resolve.
    pub(crate) fn of(i: &Valu) -> Option<IntPlan> {
        if !plain_form(i) {
            return None;
        }
        let n = i.op as u16;
        // The integer compares' fields, one rule for the 16-, 32- and 64-bit ranges
        // (opcode bits: 0x10 CMPX, 0x08 unsigned, 0x07 condition).
        let (signed, cond, cmpx) = (n & 8 == 0, (n & 7) as u8, n & 0x10 != 0);
        let (bin, tri) = (Bin::of(i.op), Tri::of(i.op));
        // (kind, sources, 64-bit sources (bit k), signed literal rule)
        let (kind, nsrc, wide, signed): (Kind, usize, u8, bool) = match i.op {
            O::VMovB32 => (Kind::Mov, 1, 0, false),
            // `~a` is `a ^ 0xFFFF_FFFF` (src1 is set below).
            O::VNotB32 => (Kind::Bin(Bin::Xor), 1, 0, false),
            O::VReadfirstlaneB32 => (Kind::Readfirstlane, 1, 0, false),
            O::VCndmaskB32 => (Kind::Cndmask, 3, 0, false),
            _ if bin.is_some() => (Kind::Bin(bin?), 2, 0, false),
            _ if tri.is_some() => (Kind::Tri(tri?), 3, 0, false),
            O::VAddU32 | O::VAddCoU32 => (Kind::Add { cin: false }, 2, 0, false),
            O::VAddcCoU32 => (Kind::Add { cin: true }, 3, 0, false),
            O::VSubU32 | O::VSubCoU32 => (
                Kind::Sub {
                    rev: false,
                    cin: false,
                },
                2,
                0,
                false,
            ),
            O::VSubrevU32 | O::VSubrevCoU32 => (
                Kind::Sub {
                    rev: true,
                    cin: false,
                },
                2,
                0,
                false,
            ),
            O::VSubbCoU32 => (
                Kind::Sub {
                    rev: false,
                    cin: true,
                },
                3,
                0,
                false,
            ),
            O::VSubbrevCoU32 => (
                Kind::Sub {
                    rev: true,
                    cin: true,
                },
                3,
                0,
                false,
            ),
            O::VLshlrevB64 => (Kind::Shift64(0), 2, 0b10, false),
            O::VLshrrevB64 => (Kind::Shift64(1), 2, 0b10, false),
            O::VAshrrevI64 => (Kind::Shift64(2), 2, 0b10, false),
            O::VMadU64U32 => (Kind::Mad64 { signed: false }, 3, 0b100, false),
            O::VMadI64I32 => (Kind::Mad64 { signed: true }, 3, 0b100, false),
            O::VAddF64 => (Kind::F64(F64Op::Add), 2, 0, false),
            O::VMulF64 => (Kind::F64(F64Op::Mul), 2, 0, false),
            O::VFmaF64 => (Kind::F64(F64Op::Fma), 3, 0, false),
            O::VFmacF64 => (Kind::F64(F64Op::Fma), 2, 0, false),
            O::VMbcntLoU32B32 => (Kind::Mbcnt { hi: false }, 2, 0, false),
            O::VMbcntHiU32B32 => (Kind::Mbcnt { hi: true }, 2, 0, false),
            O::VAddF32 => (Kind::F32(F32Op::Add), 2, 0, false),
            O::VSubF32 => (Kind::F32(F32Op::Sub), 2, 0, false),
            O::VSubrevF32 => (Kind::F32(F32Op::Subrev), 2, 0, false),
            O::VMulF32 => (Kind::F32(F32Op::Mul), 2, 0, false),
            O::VFmaF32 => (Kind::F32(F32Op::Fma), 3, 0, false),
            O::VFmacF32 => (Kind::F32(F32Op::Fma), 2, 0, false),
            O::VRcpF32 | O::VRcpIflagF32 => (Kind::F32(F32Op::Rcp), 1, 0, false),
            O::VCvtF32U32 => (Kind::F32(F32Op::CvtF32U32), 1, 0, false),
            O::VCvtF32I32 => (Kind::F32(F32Op::CvtF32I32), 1, 0, false),
            O::VCvtU32F32 => (Kind::F32(F32Op::CvtU32F32), 1, 0, false),
            O::VCvtI32F32 => (Kind::F32(F32Op::CvtI32F32), 1, 0, false),
            _ if (0xA0..=0xBF).contains(&n) => (Kind::Cmp16 { signed, cond, cmpx }, 2, 0, false),
            _ if (0xC0..=0xDF).contains(&n) => (Kind::Cmp32 { signed, cond, cmpx }, 2, 0, false),
            _ if (0xE0..=0xFF).contains(&n) => {
                (Kind::Cmp64 { signed, cond, cmpx }, 2, 0b11, signed)
            }
            // The f64 compares: opcode bits 0x10 CMPX, 0x0F the condition.
            _ if (0x60..=0x7F).contains(&n) => {
                let cond = (n & 0xF) as u8;
                (Kind::CmpF64 { cond, cmpx }, 2, 0, false)
            }
            _ => return None,
        };
        // The forms whose result is a scalar (a lane mask or a lane's value).
        let scalar_out = matches!(
            kind,
            Kind::Cmp32 { .. }
                | Kind::Cmp64 { .. }
                | Kind::Cmp16 { .. }
                | Kind::CmpF64 { .. }
                | Kind::Readfirstlane
        );
        let mut src = [[PlanSrc::Imm(0); 2]; 3];
        for k in 0..nsrc {
            let op = i.src[k].as_ref()?;
            if let (Kind::Cmp16 { .. }, Operand::Const { code, .. }) = (kind, op) {
                // A float inline constant of a 16-bit operand is its f16 pattern (the
                // general path's rule); those stay with it.
                if super::f16_inline(*code).is_some() {
                    return None;
                }
            }
            src[k] = if matches!(kind, Kind::F64(_) | Kind::CmpF64 { .. }) {
                f64_source(op)?
            } else if (wide >> k) & 1 == 1 {
                wide_source(op, signed)?
            } else if matches!(kind, Kind::Cndmask | Kind::Add { .. } | Kind::Sub { .. }) && k == 2
            {
                // A lane mask, read as a scalar.
                [scalar_dword(op, 0)?, scalar_dword(op, 1)?]
            } else {
                [vector_dword(op, 0)?, PlanSrc::Imm(0)]
            };
        }
        let sreg = |op: &Option<Operand>| match *op {
            Some(Operand::Sreg { code, count }) => Some((code, count)),
            _ => None,
        };
        if i.op == O::VNotB32 {
            src[1] = [PlanSrc::Imm(u32::MAX), PlanSrc::Imm(0)];
        }
        if matches!(i.op, O::VFmacF64 | O::VFmacF32) {
            // The accumulator is the destination's old value (a pair for f64).
            let d = vector_dword(i.vdst.as_ref()?, 0)?;
            let PlanSrc::Vreg(r) = d else { return None };
            let hi = match i.op {
                O::VFmacF64 => PlanSrc::Vreg(r + 1),
                _ => PlanSrc::Imm(0),
            };
            src[2] = [d, hi];
        }
        let (dst, sdst) = if scalar_out {
            (u16::MAX, sreg(&i.vdst))
        } else {
            let dst = reg_base(&i.vdst?)?.0 as u16;
            let sdst = match kind {
                Kind::Add { .. } | Kind::Sub { .. } | Kind::Mad64 { .. } => sreg(&i.sdst),
                _ => None,
            };
            (dst, sdst)
        };
        Some(IntPlan::new(kind, dst, sdst, src))
    }

    /// The plan of a `v_pk_mov_b32` (any OP_SEL, OP_SEL_HI, NEG, CLAMP: the general
    /// path reads only OP_SEL) whose two sources resolve and whose destination is a
    /// vector register pair, or of a `v_accvgpr_read_b32`/`v_accvgpr_write_b32` (a
    /// move; unoptimised code parks values in AGPRs).
    pub(crate) fn of_vop3p(i: &Vop3p) -> Option<IntPlan> {
        if matches!(i.op, Vop3pOp::VAccvgprReadB32 | Vop3pOp::VAccvgprWriteB32) {
            // A move between the VGPRs and the AGPRs (one file here: AGPR k is row
            // AGPR_BASE + k), as the general path moves it: dword 0, no modifier.
            let dst = reg_base(&i.vdst?)?.0 as u16;
            let mut src = [[PlanSrc::Imm(0); 2]; 3];
            src[0][0] = pk_dword(i.src[0].as_ref()?, 0)?;
            return Some(IntPlan::new(Kind::Mov, dst, None, src));
        }
        if i.op != Vop3pOp::VPkMovB32 {
            return None;
        }
        let dst = reg_base(&i.vdst?)?.0 as u16;
        let mut src = [[PlanSrc::Imm(0); 2]; 3];
        for k in 0..2 {
            src[k][0] = pk_dword(i.src[k].as_ref()?, (i.op_sel >> k) & 1)?;
        }
        Some(IntPlan::new(Kind::PkMov, dst, None, src))
    }

    /// A plan of `kind` with its resolved operands; works out the result width and
    /// whether the result can be computed in place.
    fn new(kind: Kind, dst: u16, sdst: Option<(u8, u8)>, src: [[PlanSrc; 2]; 3]) -> IntPlan {
        let sdst = sdst.map(|(code, count)| {
            std::array::from_fn(|k| {
                let c = usize::from(code) + k;
                if k < usize::from(count) && c < 128 && c != usize::from(code::NULL) {
                    c as u8
                } else {
                    u8::MAX
                }
            })
        });
        let width: u8 = match kind {
            Kind::Cmp32 { .. }
            | Kind::Cmp64 { .. }
            | Kind::Cmp16 { .. }
            | Kind::CmpF64 { .. }
            | Kind::Readfirstlane => 0,
            Kind::Shift64(_) | Kind::Mad64 { .. } | Kind::F64(_) | Kind::PkMov => 2,
            _ => 1,
        };
        IntPlan {
            kind,
            run: runner(code(kind)),
            dst,
            sdst,
            src,
            width,
        }
    }
}

/// A planned source dword for the whole wave: a register of the file read in place,
/// or `buf` filled with the value (so that every lane loop has one form and
/// vectorises).
#[inline(always)]
fn get<'a>(vgpr: &'a [VReg], sgpr: &[u32; 128], s: PlanSrc, buf: &'a mut VReg) -> &'a VReg {
    let v = match s {
        PlanSrc::Vreg(r) => match vgpr.get(usize::from(r)) {
            Some(v) => return v,
            None => 0,
        },
        PlanSrc::Sreg(c) => sgpr[usize::from(c) & 127],
        PlanSrc::Imm(v) => v,
    };
    *buf = [v; WAVE_SIZE];
    buf
}

/// A planned source dword for the whole wave as a lane kernel takes it: a register
/// of the file read in place, or its one value (no lanes written).
#[inline(always)]
fn src<'a>(vgpr: &'a [VReg], sgpr: &[u32; 128], s: PlanSrc) -> Src<'a> {
    match s {
        PlanSrc::Vreg(r) => match vgpr.get(usize::from(r)) {
            Some(v) => Src::Reg(v),
            None => Src::Splat(0),
        },
        PlanSrc::Sreg(c) => Src::Splat(sgpr[usize::from(c) & 127]),
        PlanSrc::Imm(v) => Src::Splat(v),
    }
}

/// The two dwords of a 64-bit planned source: both registers, both values, or (a
/// register pair running past the file) registers with `buf` holding the value.
#[derive(Clone, Copy)]
enum Pair<'a> {
    Regs(&'a VReg, &'a VReg),
    Uniform(u32, u32),
}

#[inline(always)]
fn pair<'a>(vgpr: &'a [VReg], sgpr: &[u32; 128], s: [PlanSrc; 2], buf: &'a mut VReg) -> Pair<'a> {
    match (src(vgpr, sgpr, s[0]), src(vgpr, sgpr, s[1])) {
        (Src::Reg(l), Src::Reg(h)) => Pair::Regs(l, h),
        (Src::Splat(l), Src::Splat(h)) => Pair::Uniform(l, h),
        (Src::Reg(l), Src::Splat(h)) => {
            *buf = [h; WAVE_SIZE];
            Pair::Regs(l, buf)
        }
        (Src::Splat(l), Src::Reg(h)) => {
            *buf = [l; WAVE_SIZE];
            Pair::Regs(buf, h)
        }
    }
}

/// A 64-bit f64 source of a lane kernel: a register pair (low, high dwords) or one
/// value.
trait F64s: Copy {
    /// The values of lanes 8k..8k+8, in `pk`'s `join8` order.
    fn chunk<P: Pack>(self, pk: P, k: usize) -> [f64; 8];
}

impl F64s for (&VReg, &VReg) {
    #[inline(always)]
    fn chunk<P: Pack>(self, pk: P, k: usize) -> [f64; 8] {
        let (l, h) = (self.0.as_chunks::<8>().0, self.1.as_chunks::<8>().0);
        match (l.get(k), h.get(k)) {
            (Some(l), Some(h)) => pk.join8(l, h),
            _ => [0.0; 8],
        }
    }
}

impl F64s for f64 {
    #[inline(always)]
    fn chunk<P: Pack>(self, _pk: P, _k: usize) -> [f64; 8] {
        [self; 8]
    }
}

/// `hi:lo = f(a, b, c)` per lane for f64 sources; whether any result is a NaN.
#[inline(always)]
fn f64_lanes<P: Pack, A: F64s, B: F64s, C: F64s>(
    pk: P,
    a: A,
    b: B,
    c: C,
    lo: &mut VReg,
    hi: &mut VReg,
    f: impl Fn(f64, f64, f64) -> f64,
) -> bool {
    let mut nan = false;
    let (los, _) = lo.as_chunks_mut::<8>();
    let (his, _) = hi.as_chunks_mut::<8>();
    for (k, (lo8, hi8)) in los.iter_mut().zip(his.iter_mut()).enumerate() {
        let (x, y, z) = (a.chunk(pk, k), b.chunk(pk, k), c.chunk(pk, k));
        let mut r = [0f64; 8];
        for i in 0..8 {
            r[i] = f(x[i], y[i], z[i]);
            nan |= r[i].is_nan();
        }
        (*lo8, *hi8) = pk.split8(r);
    }
    nan
}

/// `hi:lo = a·b + ch:cl` per lane (`v_mad_u64_u32`, or `v_mad_i64_i32` when
/// `signed`), 8 lanes at a time (results stored after the group's lanes are read, so
/// the group vectorises); returns the lanes whose 64-bit addition overflowed (a
/// 32×32-bit product fits 64 bits, so that is when the exact sum does not).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // four sources, signedness, two results, packer
fn mad64<A: Lanes, B: Lanes, L: Lanes, H: Lanes, P: Pack>(
    a: A,
    b: B,
    cl: L,
    ch: H,
    signed: bool,
    lo: &mut VReg,
    hi: &mut VReg,
    pk: P,
) -> u64 {
    let mut m = 0u64;
    let (los, _) = lo.as_chunks_mut::<8>();
    let (his, _) = hi.as_chunks_mut::<8>();
    for (k, (lo8, hi8)) in los.iter_mut().zip(his.iter_mut()).enumerate() {
        let (mut vl, mut vh, mut f) = ([0u32; 8], [0u32; 8], [0u32; 8]);
        let c = |l: usize| u64::from(cl.at(l)) | u64::from(ch.at(l)) << 32;
        // The signedness chosen outside the lane loop (one form per loop).
        macro_rules! each {
            ($signed:literal) => {
                for i in 0..8 {
                    let l = 8 * k + i;
                    let (v, o) = sem::mad64(a.at(l), b.at(l), c(l), $signed);
                    (vl[i], vh[i]) = (v as u32, (v >> 32) as u32);
                    f[i] = 0u32.wrapping_sub(u32::from(o));
                }
            };
        }
        if signed {
            each!(true);
        } else {
            each!(false);
        }
        (*lo8, *hi8) = (vl, vh);
        m |= u64::from(pk.pack8(&f)) << (8 * k);
    }
    m
}

/// The f64 value of lane `l` of a 64-bit source.
#[inline(always)]
fn f64_at(s: Pair<'_>, l: usize) -> f64 {
    let (lo, hi) = match s {
        Pair::Regs(a, b) => (a[l], b[l]),
        Pair::Uniform(a, b) => (a, b),
    };
    f64::from_bits(u64::from(lo) | u64::from(hi) << 32)
}

/// `cmp64_body` with each 64-bit source read in place or as one value.
#[inline(always)]
fn cmp64<P: Pack>(a: Pair<'_>, b: Pair<'_>, signed: bool, cond: u32, pk: P) -> u64 {
    use simd::cmp64_body as f;
    match (a, b) {
        (Pair::Regs(al, ah), Pair::Regs(bl, bh)) => f(al, ah, bl, bh, signed, cond, pk),
        (Pair::Regs(al, ah), Pair::Uniform(bl, bh)) => f(al, ah, bl, bh, signed, cond, pk),
        (Pair::Uniform(al, ah), Pair::Regs(bl, bh)) => f(al, ah, bl, bh, signed, cond, pk),
        (Pair::Uniform(al, ah), Pair::Uniform(bl, bh)) => f(al, ah, bl, bh, signed, cond, pk),
    }
}

/// The lane mask of the f64 compare `cond` (numbered as `cmp::fcond` numbers it)
/// of the 64-bit lanes of `a` and `b`.
#[inline(always)]
fn cmp_f64<P: Pack>(a: Pair<'_>, b: Pair<'_>, cond: u32, pk: P) -> u64 {
    use cmp_f64_body as f;
    match (a, b) {
        (Pair::Regs(al, ah), Pair::Regs(bl, bh)) => f(al, ah, bl, bh, cond, pk),
        (Pair::Regs(al, ah), Pair::Uniform(bl, bh)) => f(al, ah, bl, bh, cond, pk),
        (Pair::Uniform(al, ah), Pair::Regs(bl, bh)) => f(al, ah, bl, bh, cond, pk),
        (Pair::Uniform(al, ah), Pair::Uniform(bl, bh)) => f(al, ah, bl, bh, cond, pk),
    }
}

/// [`cmp_f64`] of the lanes `ah:al` and `bh:bl`: a lane mask of each relation the
/// condition needs (less, equal, greater), combined as `cmp::fcond` says.
#[inline(always)]
fn cmp_f64_body<A: Lanes, B: Lanes, C: Lanes, D: Lanes, P: Pack>(
    al: A,
    ah: B,
    bl: C,
    bh: D,
    cond: u32,
    pk: P,
) -> u64 {
    let x = |l: usize| f64::from_bits(u64::from(al.at(l)) | u64::from(ah.at(l)) << 32);
    let y = |l: usize| f64::from_bits(u64::from(bl.at(l)) | u64::from(bh.at(l)) << 32);
    // The relations of conditions c and 15 - c are the same.
    let bits = if cond < 8 { cond } else { 15 - cond };
    let lt = if bits & 1 != 0 {
        simd::mask_of(pk, |l| x(l) < y(l))
    } else {
        0
    };
    let eq = if bits & 2 != 0 {
        simd::mask_of(pk, |l| x(l) == y(l))
    } else {
        0
    };
    let gt = if bits & 4 != 0 {
        simd::mask_of(pk, |l| x(l) > y(l))
    } else {
        0
    };
    super::cmp::fcond(lt, eq, gt, cond)
}

/// `out = mask ? b : a` per lane (`v_cndmask_b32`).
#[inline(always)]
fn cndmask<A: Lanes, B: Lanes>(a: A, b: B, m: u64, out: &mut VReg) {
    let on = lane_masks(m);
    for l in 0..WAVE_SIZE {
        out[l] = (b.at(l) & on[l]) | (a.at(l) & !on[l]);
    }
}

/// `v_lshlrev_b64` (`k` 0), `v_lshrrev_b64` (1), `v_ashrrev_i64` (2) of the 64-bit
/// lanes `vh:vl` by one amount `n` (0..=63) for all lanes, in 32-bit lanes: the
/// range of `n` (0, below 32, 32 and above) is chosen once, so that no lane is
/// widened to 64 bits.
#[inline(always)]
fn shift64_by<L: Lanes, H: Lanes>(vl: L, vh: H, k: u8, n: u32, lo: &mut VReg, hi: &mut VReg) {
    macro_rules! each {
        (|$l:ident, $h:ident| $rl:expr, $rh:expr) => {
            for i in 0..WAVE_SIZE {
                let ($l, $h) = (vl.at(i), vh.at(i));
                lo[i] = $rl;
                hi[i] = $rh;
            }
        };
    }
    let m = n.wrapping_sub(32) & 31;
    match (k, n) {
        (_, 0) => each!(|l, h| l, h),
        (0, 1..=31) => each!(|l, h| l << n, (h << n) | (l >> (32 - n))),
        (0, _) => each!(|l, _h| 0, l << m),
        (1, 1..=31) => each!(|l, h| (l >> n) | (h << (32 - n)), h >> n),
        (1, _) => each!(|_l, h| h >> m, 0),
        (_, 1..=31) => each!(|l, h| (l >> n) | (h << (32 - n)), ((h as i32) >> n) as u32),
        (_, _) => each!(|_l, h| ((h as i32) >> m) as u32, ((h as i32) >> 31) as u32),
    }
}

/// A planned 64-bit scalar (lane mask).
#[inline(always)]
fn get_mask(sgpr: &[u32; 128], s: [PlanSrc; 2]) -> u64 {
    let dw = |p: PlanSrc| match p {
        PlanSrc::Sreg(c) => sgpr[usize::from(c) & 127],
        PlanSrc::Imm(v) => v,
        PlanSrc::Vreg(_) => 0,
    };
    u64::from(dw(s[0])) | u64::from(dw(s[1])) << 32
}

/// `out[l] = f(a[l], b[l])`.
#[inline(always)]
fn map2<A: Lanes, B: Lanes>(out: &mut VReg, a: A, b: B, f: impl Fn(u32, u32) -> u32) {
    for l in 0..WAVE_SIZE {
        out[l] = f(a.at(l), b.at(l));
    }
}

/// `out[l] = a[l] + b[l]` (or `a[l] - b[l]` when `sub`), modulo 2^32: the carry ops
/// without a carry-in whose carry goes nowhere.
#[inline(always)]
fn wrapping_lanes<A: Lanes, B: Lanes>(a: A, b: B, sub: bool, out: &mut VReg) {
    if sub {
        map2(out, a, b, u32::wrapping_sub);
    } else {
        map2(out, a, b, u32::wrapping_add);
    }
}

/// `out[l] = f(a[l], b[l], c[l])`.
#[inline(always)]
fn map3<A: Lanes, B: Lanes, C: Lanes>(
    out: &mut VReg,
    a: A,
    b: B,
    c: C,
    f: impl Fn(u32, u32, u32) -> u32,
) {
    for l in 0..WAVE_SIZE {
        out[l] = f(a.at(l), b.at(l), c.at(l));
    }
}

/// `out[l] = op(a[l], b[l])` ([`Bin::apply`]; `op` is a constant in each runner).
#[inline(always)]
fn bin<A: Lanes, B: Lanes>(a: A, b: B, op: Bin, out: &mut VReg) {
    map2(out, a, b, |a, b| op.apply(a, b));
}

/// `out[l] = op(a[l], b[l], c[l])` ([`Tri::apply`]; `op` is a constant in each
/// runner).
#[inline(always)]
fn tri<A: Lanes, B: Lanes, C: Lanes>(a: A, b: B, c: C, op: Tri, out: &mut VReg) {
    map3(out, a, b, c, |a, b, c| op.apply(a, b, c));
}

/// Writes `vals[k]` to vector-file register `r + k` in the lanes of `exec` (nothing
/// past the file), as `WaveState::vwrite`; the lane selects are expanded once.
#[inline(always)]
fn write(vgpr: &mut [VReg], r: usize, vals: &[VReg], exec: u64) {
    if exec == u64::MAX {
        for (k, v) in vals.iter().enumerate() {
            if let Some(dst) = vgpr.get_mut(r + k) {
                *dst = *v;
            }
        }
    } else {
        let on = lane_masks(exec);
        for (k, v) in vals.iter().enumerate() {
            if let Some(dst) = vgpr.get_mut(r + k) {
                for l in 0..WAVE_SIZE {
                    dst[l] = (v[l] & on[l]) | (dst[l] & !on[l]);
                }
            }
        }
    }
}

/// Executes a plan; false, with no effect, when the wave's MODE asks for what the
/// plan does not do (f64 ops with a rounding mode other than nearest-even or f64
/// denormal flushing), leaving the instruction to the general path.
#[inline]
pub(crate) fn run_int_plan(w: &mut WaveState, p: &IntPlan) -> bool {
    match p.kind {
        Kind::F64(_) | Kind::CmpF64 { .. } if !f64_mode(w.mode) => return false,
        Kind::F32(_) if !f32_mode(w.mode) => return false,
        _ => {}
    }
    // SAFETY: `p.run` was chosen by `runner` for the vector extensions this host has.
    unsafe { (p.run)(w, p) };
    true
}

/// Whether MODE `mode` is what the f64 plans compute: round to nearest even, f64
/// denormals kept (in and out).
#[inline]
pub(crate) fn f64_mode(mode: u32) -> bool {
    let fpm = FpMode::new(mode);
    fpm.round == 0 && !fpm.flush_in64() && !fpm.flush_out64()
}

/// Whether MODE `mode` is what the f32 plans compute: round to nearest even, f32
/// denormals kept (in and out).
#[inline]
pub(crate) fn f32_mode(mode: u32) -> bool {
    let fpm = FpMode::new(mode);
    fpm.round == 0 && !fpm.flush_in32() && !fpm.flush_out32()
}

/// Specialisation code of a plan kind: its variant and operation (the table index
/// of its runner).
fn code(k: Kind) -> u8 {
    match k {
        Kind::Mov => 0,
        Kind::Cndmask => 1,
        Kind::Bin(op) => 2 + op as u8,
        Kind::Tri(op) => 17 + op as u8,
        Kind::Add { .. } => 34,
        Kind::Sub { .. } => 35,
        Kind::Cmp32 { .. } => 36,
        Kind::Cmp64 { .. } => 37,
        Kind::Shift64(k) => 38 + k.min(2),
        Kind::Mad64 { .. } => 41,
        Kind::F64(op) => 42 + op as u8,
        Kind::PkMov => 45,
        Kind::Cmp16 { .. } => 46,
        Kind::Readfirstlane => 47,
        Kind::F32(op) => 48 + op as u8,
        Kind::Mbcnt { .. } => 58,
        Kind::CmpF64 { .. } => 59,
    }
}

/// The kinds by code, for the codes that fix the whole kind.
const F64S: [F64Op; 3] = [F64Op::Add, F64Op::Mul, F64Op::Fma];

/// `k` with its variant (and operation, where the code determines it) fixed by the
/// code `C`, so that `run_body::<C>` keeps one arm.
#[inline(always)]
fn specialise<const C: u8>(k: Kind) -> Kind {
    match C {
        0 => Kind::Mov,
        1 => Kind::Cndmask,
        2..=16 => Kind::Bin(Bin::ALL[(C - 2) as usize]),
        17..=33 => Kind::Tri(Tri::ALL[(C - 17) as usize]),
        38..=40 => Kind::Shift64(C - 38),
        42..=44 => Kind::F64(F64S[(C - 42) as usize]),
        48..=57 => Kind::F32(F32Op::ALL[(C - 48) as usize]),
        // The codes below fix the variant; its fields (carry-in, operand order,
        // condition, signedness) stay `k`'s. The variant must be fixed here, or the
        // runner would hold (and dispatch over) every arm of `run_body`.
        34 => Kind::Add {
            cin: matches!(k, Kind::Add { cin: true }),
        },
        35 => match k {
            Kind::Sub { rev, cin } => Kind::Sub { rev, cin },
            _ => Kind::Sub {
                rev: false,
                cin: false,
            },
        },
        36 => match k {
            Kind::Cmp32 { signed, cond, cmpx } => Kind::Cmp32 { signed, cond, cmpx },
            _ => Kind::Cmp32 {
                signed: false,
                cond: 0,
                cmpx: false,
            },
        },
        37 => match k {
            Kind::Cmp64 { signed, cond, cmpx } => Kind::Cmp64 { signed, cond, cmpx },
            _ => Kind::Cmp64 {
                signed: false,
                cond: 0,
                cmpx: false,
            },
        },
        41 => Kind::Mad64 {
            signed: matches!(k, Kind::Mad64 { signed: true }),
        },
        45 => Kind::PkMov,
        46 => match k {
            Kind::Cmp16 { signed, cond, cmpx } => Kind::Cmp16 { signed, cond, cmpx },
            _ => Kind::Cmp16 {
                signed: false,
                cond: 0,
                cmpx: false,
            },
        },
        47 => Kind::Readfirstlane,
        58 => Kind::Mbcnt {
            hi: matches!(k, Kind::Mbcnt { hi: true }),
        },
        59 => match k {
            Kind::CmpF64 { cond, cmpx } => Kind::CmpF64 { cond, cmpx },
            _ => Kind::CmpF64 {
                cond: 0,
                cmpx: false,
            },
        },
        _ => k,
    }
}

/// Lists `$f::<C>` for every code C.
macro_rules! runners {
    ($f:ident) => {
        runners!(@ $f; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26
            27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52
            53 54 55 56 57 58 59)
    };
    (@ $f:ident; $($c:literal)*) => {
        [$($f::<$c> as Runner),*]
    };
}

/// The runner of a code for this host.
fn runner(code: u8) -> Runner {
    let c = usize::from(code).min(59);
    #[cfg(target_arch = "x86_64")]
    {
        const FMA: [Runner; 60] = runners!(run_fma);
        const AVX2: [Runner; 60] = runners!(run_avx2);
        if simd::host_fma() {
            return FMA[c];
        }
        if simd::host_avx2() {
            return AVX2[c];
        }
    }
    PLAIN[c]
}

/// The runners for hosts without AVX2, by code.
const PLAIN: [Runner; 60] = runners!(run_plain);

/// `run_body` for hosts without AVX2.
///
/// # Safety
/// None required (an `unsafe fn` only to share the runner type).
unsafe fn run_plain<const C: u8>(w: &mut WaveState, p: &IntPlan) {
    run_body::<C, _>(w, p, Portable);
}

/// `run_body` compiled with AVX2 and FMA (8-lane integer loops, fused f64 FMA).
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_fma<const C: u8>(w: &mut WaveState, p: &IntPlan) {
    // SAFETY: this runner runs only on hosts with AVX2 (its contract).
    run_body::<C, _>(w, p, unsafe { Avx2::new_unchecked() });
}

/// `run_body` compiled with AVX2 (its lane loops become 8-lane vector code).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<const C: u8>(w: &mut WaveState, p: &IntPlan) {
    // SAFETY: this runner runs only on hosts with AVX2 (its contract).
    run_body::<C, _>(w, p, unsafe { Avx2::new_unchecked() });
}

/// A planned 64-bit shift (`k` as in [`Kind::Shift64`]) in every lane into
/// `lo`/`hi`: by one amount for the wave through [`shift64_by`], else lane by lane
/// ([`Shift64::apply`]); `bufs` hold uniform sources' lanes.
#[inline(always)]
fn shift64_op(
    vg: &[VReg],
    sgpr: &[u32; 128],
    p: &IntPlan,
    k: u8,
    [lo, hi]: [&mut VReg; 2],
    [b1, b2]: [&mut VReg; 2],
) {
    match src(vg, sgpr, p.src[0][0]) {
        // One shift amount for the wave (the usual case: a constant).
        Src::Splat(n) => match pair(vg, sgpr, p.src[1], b1) {
            Pair::Regs(vl, vh) => shift64_by(vl, vh, k, n & 63, lo, hi),
            Pair::Uniform(vl, vh) => shift64_by(vl, vh, k, n & 63, lo, hi),
        },
        Src::Reg(sh) => {
            let (vl, vh) = (
                get(vg, sgpr, p.src[1][0], b1),
                get(vg, sgpr, p.src[1][1], b2),
            );
            let op = [Shift64::Lshl, Shift64::Lshr, Shift64::Ashr][usize::from(k.min(2))];
            for l in 0..WAVE_SIZE {
                let r = op.apply(u64::from(vl[l]) | u64::from(vh[l]) << 32, sh[l]);
                lo[l] = r as u32;
                hi[l] = (r >> 32) as u32;
            }
        }
    }
}

/// A planned f32 operation ([`F32Op`]) in every lane into `out`, as the general
/// path computes it (`ops::f32_ops`, `ops::conversions`): the add, multiply and
/// fused multiply-add by `simd`'s lane loops, the rest lane by lane; a NaN result
/// is the VALU's ([`nan_of`]).
#[inline(always)]
fn f32_op(vg: &[VReg], sgpr: &[u32; 128], p: &IntPlan, op: F32Op, out: &mut VReg) {
    let a = src(vg, sgpr, p.src[0][0]);
    let b = src(vg, sgpr, p.src[1][0]);
    let f = |s: Src<'_>, l: usize| f32::from_bits(s.at(l));
    match op {
        F32Op::Add => simd::add_lanes(a, b, out),
        F32Op::Mul => simd::mul_lanes(a, b, out),
        F32Op::Fma => simd::fma_lanes(a, b, src(vg, sgpr, p.src[2][0]), out),
        F32Op::Sub | F32Op::Subrev => {
            for l in 0..WAVE_SIZE {
                let (x, y) = (f(a, l), f(b, l));
                let r = if op == F32Op::Sub { x - y } else { y - x };
                out[l] = nan_of(r, &[x, y]).to_bits();
            }
        }
        F32Op::Rcp => {
            for l in 0..WAVE_SIZE {
                let x = f(a, l);
                out[l] = nan_of(1.0 / x, &[x]).to_bits();
            }
        }
        F32Op::CvtF32U32 => {
            for l in 0..WAVE_SIZE {
                out[l] = (a.at(l) as f32).to_bits();
            }
        }
        F32Op::CvtF32I32 => {
            for l in 0..WAVE_SIZE {
                out[l] = (a.at(l) as i32 as f32).to_bits();
            }
        }
        F32Op::CvtU32F32 => {
            for l in 0..WAVE_SIZE {
                out[l] = sem::to_u32(f64::from(f(a, l)));
            }
        }
        F32Op::CvtI32F32 => {
            for l in 0..WAVE_SIZE {
                out[l] = sem::to_i32(f64::from(f(a, l)));
            }
        }
    }
}

/// A planned f64 operation (`v_add_f64`, `v_mul_f64`, `v_fma_f64`, `v_fmac_f64`) in
/// every lane into `lo`/`hi`: host IEEE arithmetic, a NaN result replaced by the
/// VALU's ([`nan_of`]); `bufs` hold uniform sources' lanes.
#[inline(always)]
fn f64_op<P: Pack>(
    pk: P,
    vg: &[VReg],
    sgpr: &[u32; 128],
    p: &IntPlan,
    op: F64Op,
    [lo, hi]: [&mut VReg; 2],
    [b0, b1, b2]: [&mut VReg; 3],
) {
    let a = pair(vg, sgpr, p.src[0], b0);
    let b = pair(vg, sgpr, p.src[1], b1);
    let c = if op == F64Op::Fma {
        pair(vg, sgpr, p.src[2], b2)
    } else {
        Pair::Uniform(0, 0)
    };
    // Each source kind (registers or one value) fixed per call, so that
    // every 8-lane group is one join, one operation and one split.
    macro_rules! by_kind {
        ($s:expr, |$x:ident| $e:expr) => {
            match $s {
                Pair::Regs(l, h) => {
                    let $x = (l, h);
                    $e
                }
                Pair::Uniform(l, h) => {
                    let $x = f64::from_bits(u64::from(l) | u64::from(h) << 32);
                    $e
                }
            }
        };
    }
    let nan = match op {
        F64Op::Add => by_kind!(a, |x| by_kind!(b, |y| f64_lanes(
            pk,
            x,
            y,
            0.0,
            lo,
            hi,
            |x, y, _| x + y
        ))),
        F64Op::Mul => by_kind!(a, |x| by_kind!(b, |y| f64_lanes(
            pk,
            x,
            y,
            0.0,
            lo,
            hi,
            |x, y, _| x * y
        ))),
        F64Op::Fma => by_kind!(a, |x| by_kind!(b, |y| by_kind!(c, |z| f64_lanes(
            pk,
            x,
            y,
            z,
            lo,
            hi,
            |x: f64, y, z| x.mul_add(y, z)
        )))),
    };
    if nan {
        // The VALU's NaN: the first NaN operand quieted, else the default.
        for l in 0..WAVE_SIZE {
            let r = f64::from_bits(u64::from(lo[l]) | u64::from(hi[l]) << 32);
            if r.is_nan() {
                let (x, y) = (f64_at(a, l), f64_at(b, l));
                let q = match op {
                    F64Op::Fma => nan_of(r, &[x, y, f64_at(c, l)]),
                    _ => nan_of(r, &[x, y]),
                };
                lo[l] = q.to_bits() as u32;
                hi[l] = (q.to_bits() >> 32) as u32;
            }
        }
    }
}

#[inline(always)]
fn run_body<const C: u8, P: Pack>(w: &mut WaveState, p: &IntPlan, pk: P) {
    let kind = specialise::<C>(p.kind);
    let exec = w.exec();
    let (vgpr, sgpr, tmp, bufs) = (&mut w.vgpr, &w.sgpr, &mut w.tmp, &mut w.splat);
    let d = usize::from(p.dst);
    // `v_mov_b32` with every lane active (the most frequent VALU form): a register
    // copy or a splat straight into the destination, without the frame below.
    if C == 0 && exec == u64::MAX && d < vgpr.len() {
        match p.src[0][0] {
            PlanSrc::Vreg(r) if usize::from(r) < vgpr.len() => {
                vgpr.copy_within(usize::from(r)..usize::from(r) + 1, d);
            }
            PlanSrc::Vreg(_) => vgpr[d] = [0; WAVE_SIZE],
            PlanSrc::Sreg(c) => vgpr[d] = [sgpr[usize::from(c) & 127]; WAVE_SIZE],
            PlanSrc::Imm(v) => vgpr[d] = [v; WAVE_SIZE],
        }
        return;
    }
    // `v_pk_mov_b32` of two scalar or constant dwords (a 64-bit scalar splat into a
    // register pair) with every lane active: straight into the destination.
    if C == 45 && exec == u64::MAX && d + 1 < vgpr.len() {
        let value = |s: PlanSrc| match s {
            PlanSrc::Sreg(c) => Some(sgpr[usize::from(c) & 127]),
            PlanSrc::Imm(v) => Some(v),
            PlanSrc::Vreg(_) => None,
        };
        if let (Some(lo), Some(hi)) = (value(p.src[0][0]), value(p.src[1][0])) {
            vgpr[d] = [lo; WAVE_SIZE];
            vgpr[d + 1] = [hi; WAVE_SIZE];
            return;
        }
    }
    let mut mask_out: Option<u64> = None;
    let mut wide_out = false;
    {
        // The result is computed into the wave's scratch lanes and written under EXEC
        // afterwards (the destination may be a source). Computing straight into the
        // destination when no source reads it saves that copy but costs more in
        // splitting the file than the copy does (x86 instructions per execution).
        let [lo, hi] = &mut tmp.0;
        let vg: &[VReg] = vgpr;
        let [b0, b1, b2, ..] = &mut bufs.0;
        match kind {
            Kind::Mov => match src(vg, sgpr, p.src[0][0]) {
                Src::Reg(r) => *lo = *r,
                Src::Splat(v) => *lo = [v; WAVE_SIZE],
            },
            Kind::PkMov => {
                for (out, s) in [(&mut *lo, p.src[0][0]), (&mut *hi, p.src[1][0])] {
                    match src(vg, sgpr, s) {
                        Src::Reg(r) => *out = *r,
                        Src::Splat(v) => *out = [v; WAVE_SIZE],
                    }
                }
                wide_out = true;
            }
            Kind::Cndmask => {
                let m = get_mask(sgpr, p.src[2]);
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                with_lanes!(cndmask(a, b; m, lo));
            }
            Kind::Bin(op) => {
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                with_lanes!(bin(a, b; op, lo));
            }
            Kind::Tri(op) => match src(vg, sgpr, p.src[2][0]) {
                // The usual third source is a constant (shift, field width, mask):
                // the first two are read in place or as values.
                Src::Splat(c) => {
                    let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                    with_lanes!(tri(a, b; c, op, lo));
                }
                Src::Reg(c) => tri(
                    get(vg, sgpr, p.src[0][0], b0),
                    get(vg, sgpr, p.src[1][0], b1),
                    c,
                    op,
                    lo,
                ),
            },
            // Without a carry-in or a carry destination (`v_add_u32`, `v_sub_u32`,
            // `v_subrev_u32`) the carries are not computed at all.
            Kind::Add { cin: false } if p.sdst.is_none() => {
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                with_lanes!(wrapping_lanes(a, b; false, lo));
            }
            Kind::Sub { rev, cin: false } if p.sdst.is_none() => {
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                let (a, b) = if rev { (b, a) } else { (a, b) };
                with_lanes!(wrapping_lanes(a, b; true, lo));
            }
            Kind::Add { cin } => {
                let c = if cin { get_mask(sgpr, p.src[2]) } else { 0 };
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                mask_out = Some(with_lanes!(add_co_body(a, b; c, false, lo, pk)) & exec);
            }
            Kind::Sub { rev, cin } => {
                let c = if cin { get_mask(sgpr, p.src[2]) } else { 0 };
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                let (a, b) = if rev { (b, a) } else { (a, b) };
                mask_out = Some(with_lanes!(sub_co_body(a, b; c, false, lo, pk)) & exec);
            }
            Kind::Cmp32 { signed, cond, .. } => {
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                mask_out = Some(with_lanes!(cmp_body(a, b; signed, u32::from(cond), pk)) & exec);
            }
            Kind::Cmp16 { signed, cond, .. } => {
                // Each source's low half, extended to 32 bits the way the compare
                // orders it.
                let half = |v: u32| {
                    if signed {
                        v as u16 as i16 as i32 as u32
                    } else {
                        v & 0xFFFF
                    }
                };
                let extend = |s: PlanSrc, buf: &mut VReg| match src(vg, sgpr, s) {
                    Src::Reg(r) => {
                        for l in 0..WAVE_SIZE {
                            buf[l] = half(r[l]);
                        }
                    }
                    Src::Splat(v) => *buf = [half(v); WAVE_SIZE],
                };
                extend(p.src[0][0], b0);
                extend(p.src[1][0], b1);
                mask_out = Some(cmp_body(&*b0, &*b1, signed, u32::from(cond), pk) & exec);
            }
            Kind::Readfirstlane => {
                let lane = if exec == 0 {
                    0
                } else {
                    exec.trailing_zeros() as usize
                };
                mask_out = Some(u64::from(src(vg, sgpr, p.src[0][0]).at(lane)));
            }
            Kind::Cmp64 { signed, cond, .. } => {
                let a = pair(vg, sgpr, p.src[0], b0);
                let b = pair(vg, sgpr, p.src[1], b1);
                mask_out = Some(cmp64(a, b, signed, u32::from(cond), pk) & exec);
            }
            Kind::CmpF64 { cond, .. } => {
                let a = pair(vg, sgpr, p.src[0], b0);
                let b = pair(vg, sgpr, p.src[1], b1);
                mask_out = Some(cmp_f64(a, b, u32::from(cond), pk) & exec);
            }
            Kind::Shift64(k) => {
                shift64_op(vg, sgpr, p, k, [lo, hi], [b1, b2]);
                wide_out = true;
            }
            Kind::Mad64 { signed } => {
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                let m = match pair(vg, sgpr, p.src[2], b2) {
                    Pair::Regs(cl, ch) => with_lanes!(mad64(a, b; cl, ch, signed, lo, hi, pk)),
                    Pair::Uniform(cl, ch) => {
                        with_lanes!(mad64(a, b; cl, ch, signed, lo, hi, pk))
                    }
                };
                mask_out = Some(m & exec);
                wide_out = true;
            }
            Kind::F64(op) => {
                f64_op(pk, vg, sgpr, p, op, [lo, hi], [b0, b1, b2]);
                wide_out = true;
            }
            Kind::F32(op) => f32_op(vg, sgpr, p, op, lo),
            Kind::Mbcnt { hi } => {
                let (a, b) = (src(vg, sgpr, p.src[0][0]), src(vg, sgpr, p.src[1][0]));
                for l in 0..WAVE_SIZE {
                    lo[l] = (a.at(l) & sem::below(l, hi))
                        .count_ones()
                        .wrapping_add(b.at(l));
                }
            }
        }
    }
    if p.width > 0 {
        write(vgpr, d, &tmp[..if wide_out { 2 } else { 1 }], exec);
    }
    if let (Some(m), Some(to)) = (mask_out, p.sdst) {
        for (k, c) in to.into_iter().enumerate() {
            if let Some(r) = w.sgpr.get_mut(usize::from(c)) {
                *r = (m >> (32 * k)) as u32;
            }
        }
    }
    if let (
        Kind::Cmp32 { cmpx: true, .. }
        | Kind::Cmp64 { cmpx: true, .. }
        | Kind::Cmp16 { cmpx: true, .. }
        | Kind::CmpF64 { cmpx: true, .. },
        Some(m),
    ) = (kind, mask_out)
    {
        w.set_exec(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inst::Instruction;
    use crate::wave::testutil::{lit, s, v, Harness};
    use crate::wave::Wave;

    /// A wave with varied register contents (small, large, negative, equal values).
    fn filled(exec: u64) -> Wave {
        let mut w = Wave::new();
        let mut x = 0x2545_F491u32;
        for (r, reg) in w.vgpr.iter_mut().enumerate() {
            for (l, d) in reg.iter_mut().enumerate() {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *d = match (l + r) % 7 {
                    0 => l as u32,
                    1 => u32::MAX - (x >> 28),
                    2 => 0x8000_0000 | (x >> 20),
                    3 => x >> 27,
                    _ => x,
                };
            }
        }
        for (c, d) in w.sgpr.iter_mut().enumerate() {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            *d = if c % 3 == 0 { x >> 26 } else { x };
        }
        w.set_exec(exec);
        w
    }

    /// The planned non-compare ops.
    const PLANNED: [O; 68] = [
        O::VMovB32,
        O::VNotB32,
        O::VReadfirstlaneB32,
        O::VCndmaskB32,
        O::VAndB32,
        O::VOrB32,
        O::VXorB32,
        O::VLshlrevB32,
        O::VLshrrevB32,
        O::VAshrrevI32,
        O::VMinI32,
        O::VMaxI32,
        O::VMinU32,
        O::VMaxU32,
        O::VMulLoU32,
        O::VMulHiU32,
        O::VMulHiI32,
        O::VMulU32U24,
        O::VBcntU32B32,
        O::VBfeU32,
        O::VBfeI32,
        O::VBfiB32,
        O::VAlignbitB32,
        O::VLshlAddU32,
        O::VAddLshlU32,
        O::VAdd3U32,
        O::VLshlOrB32,
        O::VAndOrB32,
        O::VOr3B32,
        O::VXadU32,
        O::VMin3U32,
        O::VMax3U32,
        O::VMed3U32,
        O::VMin3I32,
        O::VMax3I32,
        O::VMed3I32,
        O::VAddU32,
        O::VAddCoU32,
        O::VAddcCoU32,
        O::VSubU32,
        O::VSubCoU32,
        O::VSubrevU32,
        O::VSubrevCoU32,
        O::VSubbCoU32,
        O::VSubbrevCoU32,
        O::VLshlrevB64,
        O::VLshrrevB64,
        O::VAshrrevI64,
        O::VMadU64U32,
        O::VMadI64I32,
        O::VAddF64,
        O::VMulF64,
        O::VFmaF64,
        O::VFmacF64,
        O::VAddF32,
        O::VSubF32,
        O::VSubrevF32,
        O::VMulF32,
        O::VFmaF32,
        O::VFmacF32,
        O::VRcpF32,
        O::VRcpIflagF32,
        O::VCvtF32U32,
        O::VCvtF32I32,
        O::VCvtU32F32,
        O::VCvtI32F32,
        O::VMbcntLoU32B32,
        O::VMbcntHiU32B32,
    ];

    /// The planned f32 ops (their plans need f32 denormals kept).
    fn f32_op(op: O) -> bool {
        PLANNED[54..66].contains(&op)
    }

    /// Every planned op, with every operand kind in every source position, partial
    /// and full EXEC, computes and writes what the general path does.
    #[test]
    fn int_plans_agree_with_the_general_path() {
        let a = |i: u8, n: u8| Operand::Agpr { index: i, count: n };
        let c = |value: u64| Operand::Const { code: 193, value };
        let ops = PLANNED.to_vec();
        // Every compare opcode of the integer ranges (16, 32 and 64 bits).
        let compares = (0xA0u16..=0xFF).filter_map(|n| {
            crate::generated::opcodes::VopOp::ALL
                .iter()
                .copied()
                .find(|o| *o as u16 == n)
        });
        let all: Vec<O> = ops.into_iter().chain(compares).collect();
        assert!(all.len() > 52 + 40, "{}", all.len());
        // Source operand sets: registers, AGPRs, scalars (incl. null, vcc, exec),
        // inline constants of both signs, literals of both signs; every pairing of a
        // register and a uniform value in src0 and src1; equal sources (the borrow
        // edge a = b) and an all-ones addend (the carry edge a + 2^32 − 1 + 1), with
        // carry-in masks from SGPRs; a 64-bit pair running past the vector file; an
        // odd SGPR as src0.
        let sets: [[Operand; 3]; 11] = [
            [v(2, 2), v(4, 2), v(6, 2)],
            [s(4, 2), v(9, 2), s(106, 2)],
            [v(3, 2), lit(0x8000_0007), v(1, 2)],
            [c(u64::MAX), a(5, 2), s(126, 2)],
            [lit(31), s(125, 2), c(7)],
            [a(1, 2), c(3), lit(0xFFFF_FFF0)],
            [s(10, 1), s(11, 1), v(12, 2)],
            [v(5, 2), v(5, 2), s(40, 2)],
            [v(6, 2), c(u64::MAX), s(41, 2)],
            [a(255, 2), s(8, 2), s(42, 2)],
            [s(13, 1), v(8, 2), s(44, 2)],
        ];
        // Full, empty, one half, scattered.
        let execs = [
            u64::MAX,
            0x0FF0_F00F_1234_8001,
            0xFFFF_FFFF_0000_0000,
            0x0000_0000_FFFF_FFFF,
            0x8000_0001_0000_0001,
            0,
        ];
        let mut h = Harness::new(0);
        let mut checked = 0;
        for op in all {
            let n = op as u16;
            let compare = (0xA0..=0xFF).contains(&n);
            let f64_op = matches!(op, O::VAddF64 | O::VMulF64 | O::VFmaF64 | O::VFmacF64);
            // MODE: denormals kept (the planned case), f64 denormals flushed, a
            // rounding mode (the last two leave the instruction to the general path).
            let modes: &[u32] = if f64_op {
                &[0x0F0, 0x030, 0x0F1]
            } else if f32_op(op) {
                // f32 denormals flushed (f64 ones kept), a rounding mode.
                &[0x0F0, 0x0C0, 0x0F1]
            } else {
                &[0x0F0]
            };
            for (k, set) in sets.iter().enumerate() {
                for (enc, &mode, &exec) in [ValuEncoding::E32, ValuEncoding::Vop3]
                    .into_iter()
                    .flat_map(|e| modes.iter().map(move |m| (e, m)))
                    .flat_map(|(e, m)| execs.iter().map(move |x| (e, m, x)))
                {
                    let vdst = if compare {
                        Some(if k % 3 == 0 { Operand::VCC } else { s(20, 2) })
                    } else if op == O::VReadfirstlaneB32 {
                        // One SGPR, as decoded (vcc_lo, s20, null).
                        Some(s([106, 20, 125][k % 3], 1))
                    } else if k == 3 {
                        Some(a(7, 2))
                    } else if k == 9 {
                        // The last register of the file (a pair's high dword is
                        // dropped).
                        Some(a(255, 2))
                    } else {
                        // Sometimes the destination is a source.
                        Some(v(
                            match k {
                                2 => 3,
                                7 => 5,
                                _ => 20,
                            },
                            2,
                        ))
                    };
                    let i = Valu {
                        op,
                        encoding: enc,
                        vdst,
                        // The carry-less adds decode without a scalar destination;
                        // half the sets also give them one.
                        sdst: match (op, k % 2) {
                            (O::VAddU32 | O::VSubU32 | O::VSubrevU32, 0) => None,
                            (_, 0) => Some(Operand::VCC),
                            _ => Some(s(30, 2)),
                        },
                        src: [Some(set[0]), Some(set[1]), Some(set[2])],
                        abs: 0,
                        neg: 0,
                        clamp: false,
                        omod: 0,
                        op_sel: 0,
                    };
                    let Some(plan) = IntPlan::of(&i) else {
                        // Only a lane mask in a vector register (read from lane 0
                        // by the general path) is left unplanned.
                        let mask_op = matches!(
                            op,
                            O::VCndmaskB32 | O::VAddcCoU32 | O::VSubbCoU32 | O::VSubbrevCoU32
                        );
                        assert!(
                            mask_op
                                && matches!(set[2], Operand::Vgpr { .. } | Operand::Agpr { .. }),
                            "no plan: {i:?}"
                        );
                        continue;
                    };
                    let mut general = filled(exec);
                    let mut planned = filled(exec);
                    general.mode = mode;
                    planned.mode = mode;
                    let ran = run_int_plan(&mut planned, &plan);
                    // The runner for hosts without AVX2 computes the same.
                    let mut plain = filled(exec);
                    plain.mode = mode;
                    let p2 = IntPlan {
                        run: PLAIN[usize::from(code(plan.kind))],
                        ..plan.clone()
                    };
                    assert_eq!(run_int_plan(&mut plain, &p2), ran);
                    assert!(
                        plain.vgpr == planned.vgpr && plain.sgpr == planned.sgpr,
                        "{i:?}"
                    );
                    assert_eq!(ran, mode == 0x0F0, "{i:?} mode {mode:#x}");
                    if !ran {
                        let untouched = filled(exec);
                        assert!(planned.vgpr == untouched.vgpr && planned.sgpr == untouched.sgpr);
                        continue;
                    }
                    h.exec(&mut general, &Instruction::Valu(i.clone()))
                        .unwrap_or_else(|e| panic!("{i:?}: {e}"));
                    assert!(general.vgpr == planned.vgpr, "{i:?}");
                    assert_eq!(general.sgpr, planned.sgpr, "{i:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    /// The f32 plans on every pair of f32 specials (infinities, zeros, quiet and
    /// signalling NaNs with payloads, denormals, values at the integer
    /// conversions' edges) in the 64 lanes: what the general path computes, NaN
    /// results, rounding and saturation included.
    #[test]
    fn f32_plans_agree_with_the_general_path_on_specials() {
        let specials: [u32; 16] = [
            0x7F80_0000,
            0xFF80_0000,
            0,
            0x8000_0000,
            0x7FC0_1234,
            0xFF80_0042,
            0x3F80_0000,
            0x0000_0003,
            0x8040_0000,
            0x4F00_0000,
            0x4F7F_FFFF,
            0x4F80_0000,
            0xCF00_0000,
            0xCF00_0001,
            0xFFFF_FFFF,
            0x4B80_0001,
        ];
        let v1 = |i: u8| v(i, 1);
        let mut checked = 0;
        for op in PLANNED[54..66].iter().copied() {
            for (enc, set) in [
                (ValuEncoding::E32, [v1(2), v1(4), v1(6)]),
                (ValuEncoding::Vop3, [v1(4), v1(6), v1(2)]),
                (ValuEncoding::Vop3, [s(8, 1), v1(2), lit(0x4F7F_FFFE)]),
            ] {
                let i = Valu {
                    op,
                    encoding: enc,
                    vdst: Some(v1(6)),
                    sdst: None,
                    src: [Some(set[0]), Some(set[1]), Some(set[2])],
                    abs: 0,
                    neg: 0,
                    clamp: false,
                    omod: 0,
                    op_sel: 0,
                };
                let plan = IntPlan::of(&i).unwrap_or_else(|| panic!("no plan: {i:?}"));
                for round in 0..3u32 {
                    let fill = |w: &mut Wave| {
                        w.mode = 0x0F0;
                        for l in 0..WAVE_SIZE {
                            let k = l + 16 * round as usize;
                            w.vgpr[2][l] = specials[k % 16];
                            w.vgpr[4][l] = specials[(k / 16 + l) % 16];
                            w.vgpr[6][l] = specials[(k * 7) % 16];
                        }
                        w.sgpr[8] = specials[(5 * round as usize + 9) % 16];
                    };
                    let (mut general, mut planned) = (filled(u64::MAX), filled(u64::MAX));
                    fill(&mut general);
                    fill(&mut planned);
                    assert!(run_int_plan(&mut planned, &plan), "{i:?}");
                    let mut h = Harness::new(0);
                    h.exec(&mut general, &Instruction::Valu(i.clone()))
                        .unwrap_or_else(|e| panic!("{i:?}: {e}"));
                    for l in 0..WAVE_SIZE {
                        assert_eq!(
                            general.vgpr[6][l], planned.vgpr[6][l],
                            "{i:?}, lane {l}: {:#x} {:#x} {:#x}",
                            general.vgpr[2][l], general.vgpr[4][l], general.vgpr[6][l]
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 12 * 3 * 3);
    }

    /// The f64 compare plans (every condition, CMPX or not, e32 and e64, from
    /// registers, a scalar pair and a literal, under full and partial EXEC) on pairs
    /// of f64 specials (infinities, signed zeros, quiet and signalling NaNs,
    /// denormals, neighbouring values) in the 64 lanes: the mask (and EXEC) the
    /// general path writes. With f64 denormals flushed (MODE), where a denormal
    /// compares equal to zero, they decline and change nothing.
    #[test]
    fn f64_compare_plans_agree_with_the_general_path_on_specials() {
        let specials: [u64; 12] = [
            0x7FF0_0000_0000_0000,
            0xFFF0_0000_0000_0000,
            0,
            0x8000_0000_0000_0000,
            0x7FF8_0000_0000_1234,
            0xFFF0_0000_0000_0042,
            0x3FF0_0000_0000_0000,
            0xBFF0_0000_0000_0000,
            0x0000_0000_0000_0003,
            0x8000_0000_0000_0003,
            0x3FF0_0000_0000_0001,
            0x4330_0000_0000_0000,
        ];
        let mut h = Harness::new(0);
        let mut checked = 0;
        for n in 0x60u16..=0x7F {
            let op = crate::generated::opcodes::VopOp::ALL
                .iter()
                .copied()
                .find(|o| *o as u16 == n)
                .unwrap_or_else(|| panic!("no VOPC opcode {n:#x}"));
            for (enc, [s0, s1]) in [
                (ValuEncoding::E32, [v(2, 2), v(4, 2)]),
                (ValuEncoding::Vop3, [v(4, 2), v(2, 2)]),
                (ValuEncoding::Vop3, [s(8, 2), v(2, 2)]),
                (ValuEncoding::Vop3, [v(2, 2), lit(0x3FF0_0000)]),
            ] {
                let i = Valu {
                    op,
                    encoding: enc,
                    vdst: Some(match enc {
                        ValuEncoding::E32 => Operand::VCC,
                        _ => s(20, 2),
                    }),
                    sdst: None,
                    src: [Some(s0), Some(s1), None],
                    abs: 0,
                    neg: 0,
                    clamp: false,
                    omod: 0,
                    op_sel: 0,
                };
                let plan = IntPlan::of(&i).unwrap_or_else(|| panic!("no plan: {i:?}"));
                for exec in [u64::MAX, 0x0FF0_F00F_1234_8001] {
                    for mode in [0x0F0, 0x030] {
                        for round in 0..3usize {
                            let fill = |w: &mut Wave| {
                                w.mode = mode;
                                for l in 0..WAVE_SIZE {
                                    let k = l + WAVE_SIZE * round;
                                    let (a, b) = (specials[k % 12], specials[(k / 12) % 12]);
                                    (w.vgpr[2][l], w.vgpr[3][l]) = (a as u32, (a >> 32) as u32);
                                    (w.vgpr[4][l], w.vgpr[5][l]) = (b as u32, (b >> 32) as u32);
                                }
                                let c = specials[(5 * round + 3) % 12];
                                (w.sgpr[8], w.sgpr[9]) = (c as u32, (c >> 32) as u32);
                            };
                            let (mut general, mut planned) = (filled(exec), filled(exec));
                            fill(&mut general);
                            fill(&mut planned);
                            let ran = run_int_plan(&mut planned, &plan);
                            assert_eq!(ran, mode == 0x0F0, "{i:?} mode {mode:#x}");
                            if !ran {
                                let mut untouched = filled(exec);
                                fill(&mut untouched);
                                assert!(
                                    planned.vgpr == untouched.vgpr
                                        && planned.sgpr == untouched.sgpr
                                );
                                continue;
                            }
                            h.exec(&mut general, &Instruction::Valu(i.clone()))
                                .unwrap_or_else(|e| panic!("{i:?}: {e}"));
                            assert_eq!(
                                general.sgpr, planned.sgpr,
                                "{i:?} exec {exec:#x} round {round}"
                            );
                            assert_eq!(general.exec(), planned.exec(), "{i:?}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 32 * 4 * 2 * 3);
    }

    /// Instructions with CLAMP, an operand that depends on wave state, or a float
    /// inline constant in a 16-bit compare get no plan.
    #[test]
    fn forms_the_plans_do_not_take() {
        // Forms the plan does not take.
        let mut i = Valu {
            op: O::VAddU32,
            encoding: ValuEncoding::Vop3,
            vdst: Some(v(0, 1)),
            sdst: None,
            src: [Some(v(1, 1)), Some(v(2, 1)), None],
            abs: 0,
            neg: 0,
            clamp: true,
            omod: 0,
            op_sel: 0,
        };
        assert!(IntPlan::of(&i).is_none());
        i.clamp = false;
        assert!(IntPlan::of(&i).is_some());
        i.src[1] = Some(Operand::Special {
            code: code::SHARED_BASE,
            count: 1,
        });
        assert!(IntPlan::of(&i).is_none());
        // A float inline constant of a 16-bit compare is an f16 pattern: the general
        // path's; an integer one is planned.
        let mut i = Valu {
            op: O::VCmpLtU16,
            encoding: ValuEncoding::E32,
            vdst: Some(Operand::VCC),
            src: [
                Some(Operand::Const {
                    code: 242,
                    value: 0x3F80_0000,
                }),
                Some(v(1, 1)),
                None,
            ],
            ..i
        };
        assert!(IntPlan::of(&i).is_none());
        i.src[0] = Some(Operand::Const {
            code: 193,
            value: u64::MAX,
        });
        assert!(IntPlan::of(&i).is_some());
    }

    /// `v_pk_mov_b32` planned computes what the general path does for every OP_SEL
    /// (and OP_SEL_HI, NEG, CLAMP, which it ignores), every operand kind (VGPR and
    /// AGPR pairs, a pair past the file, SGPR pairs and single SGPRs, null, EXEC,
    /// inline constants, literals), destinations that overlap a source (dword swaps)
    /// and EXEC patterns.
    #[test]
    fn pk_mov_plan_agrees_with_the_general_path() {
        use crate::inst::Vop3p;
        let a = |i: u8, n: u8| Operand::Agpr { index: i, count: n };
        let c = |code: u8| Operand::Const {
            code,
            value: crate::operand::inline_constant(u16::from(code), 2).unwrap_or(0),
        };
        let sources = [
            v(2, 2),
            v(3, 2),
            a(255, 2),
            a(0, 2),
            s(4, 2),
            s(5, 1),
            s(124, 2),
            s(125, 2),
            s(126, 2),
            s(127, 2),
            c(193),
            c(242),
            c(128),
            lit(0x1234_5678),
        ];
        let dsts = [v(2, 2), v(3, 2), v(20, 2), a(255, 2), a(0, 2)];
        let execs = [u64::MAX, 0x0FF0_F00F_1234_8001, 0xFFFF_FFFF_0000_0000, 0];
        let mut h = Harness::new(0);
        let mut checked = 0;
        for (k0, s0) in sources.iter().enumerate() {
            for (k1, s1) in sources.iter().enumerate() {
                for op_sel in 0..4u8 {
                    let n = k0 + 3 * k1 + usize::from(op_sel);
                    let i = Vop3p {
                        op: Vop3pOp::VPkMovB32,
                        vdst: Some(dsts[n % dsts.len()]),
                        src: [Some(*s0), Some(*s1), None],
                        op_sel,
                        op_sel_hi: (n % 4) as u8,
                        neg_lo: (n % 3) as u8,
                        neg_hi: (n % 5) as u8 & 3,
                        clamp: n % 2 == 1,
                        mai: None,
                    };
                    let plan = IntPlan::of_vop3p(&i).expect("planned");
                    let exec = execs[n % execs.len()];
                    let mut general = filled(exec);
                    let mut planned = filled(exec);
                    assert!(run_int_plan(&mut planned, &plan));
                    h.exec(&mut general, &Instruction::Vop3p(i.clone()))
                        .unwrap_or_else(|e| panic!("{i:?}: {e}"));
                    assert!(general.vgpr == planned.vgpr, "{i:?}");
                    assert_eq!(general.sgpr, planned.sgpr, "{i:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 14 * 14 * 4);
        // Unresolvable operands, other opcodes and non-vector destinations keep the
        // general path.
        let mut i = Vop3p {
            op: Vop3pOp::VPkMovB32,
            vdst: Some(v(0, 2)),
            src: [
                Some(v(0, 2)),
                Some(Operand::Special {
                    code: code::SHARED_BASE,
                    count: 2,
                }),
                None,
            ],
            op_sel: 0b10,
            op_sel_hi: 0b11,
            neg_lo: 0,
            neg_hi: 0,
            clamp: false,
            mai: None,
        };
        assert!(IntPlan::of_vop3p(&i).is_none());
        i.src[1] = Some(v(4, 2));
        assert!(IntPlan::of_vop3p(&i).is_some());
        i.src[1] = None;
        assert!(IntPlan::of_vop3p(&i).is_none());
        i.src[1] = Some(v(4, 2));
        i.vdst = Some(s(0, 2));
        assert!(IntPlan::of_vop3p(&i).is_none());
        i.vdst = Some(v(0, 2));
        i.op = Vop3pOp::VPkAddF32;
        assert!(IntPlan::of_vop3p(&i).is_none());
    }

    /// The 64-bit shifts by one amount for the wave take every range of the amount
    /// (0, 1–31, 32, 33–63, amounts above 63 masked), vector and uniform values,
    /// a destination that is the value, and partial EXEC, as the general path does.
    #[test]
    fn uniform_64_bit_shifts_agree_with_the_general_path() {
        let c = |code: u8| Operand::Const {
            code,
            value: crate::operand::inline_constant(u16::from(code), 1).unwrap_or(0),
        };
        // 0, 1, 31, 32, 33, 63 (bit-masked from 64 + 63), 64 + 5, 2^32 − 32.
        let amounts = [
            c(128),
            c(129),
            lit(31),
            lit(32),
            lit(33),
            lit(127),
            lit(69),
            lit(0xFFFF_FFE0),
            s(6, 1),
        ];
        let values = [v(2, 2), s(4, 2), v(7, 2)];
        let mut h = Harness::new(0);
        let mut checked = 0;
        for op in [O::VLshlrevB64, O::VLshrrevB64, O::VAshrrevI64] {
            for amount in amounts {
                for value in values {
                    for (dst, exec) in [(2u8, u64::MAX), (20, u64::MAX), (2, 0xF0F0_0000_FFFF_0001)]
                    {
                        let i = Valu {
                            op,
                            encoding: ValuEncoding::Vop3,
                            vdst: Some(v(dst, 2)),
                            sdst: None,
                            src: [Some(amount), Some(value), None],
                            abs: 0,
                            neg: 0,
                            clamp: false,
                            omod: 0,
                            op_sel: 0,
                        };
                        let plan = IntPlan::of(&i).expect("planned");
                        let mut general = filled(exec);
                        let mut planned = filled(exec);
                        // Sign bits both ways in the value registers.
                        for w in [&mut general, &mut planned] {
                            w.sgpr[6] = 40;
                            w.sgpr[5] = 0x8000_0F00;
                            for l in 0..WAVE_SIZE {
                                w.vgpr[3][l] ^= (l as u32 & 1) << 31;
                            }
                        }
                        assert!(run_int_plan(&mut planned, &plan));
                        h.exec(&mut general, &Instruction::Valu(i.clone()))
                            .unwrap_or_else(|e| panic!("{i:?}: {e}"));
                        assert!(general.vgpr == planned.vgpr, "{i:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 3 * 9 * 3 * 3);
    }
}
