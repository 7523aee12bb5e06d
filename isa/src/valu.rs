//! Vector ALU execution (VOP1, VOP2, VOPC, VOP3A/B and a few VOP3P ops).
//!
//! Every operation computes all 64 lanes into a temporary array (tight loops the
//! compiler can vectorise) and then writes the destination under the EXEC mask.

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

use crate::error::Fault;
use crate::generated::opcodes::{Vop3pOp, VopOp};
use crate::inst::{Instruction, Valu, ValuEncoding, Vop3p};
use crate::operand::Operand;
use crate::wave::{unsupported, VReg, Wave, WaveContext, AGPR_BASE, WAVE_SIZE};

type V64 = [u64; WAVE_SIZE];
type F32s = [f32; WAVE_SIZE];
type F64s = [f64; WAVE_SIZE];

#[inline]
fn lanes<T: Copy + Default, F: Fn(usize) -> T>(f: F) -> [T; WAVE_SIZE] {
    let mut out = [T::default(); WAVE_SIZE];
    for (l, o) in out.iter_mut().enumerate() {
        *o = f(l);
    }
    out
}

/// Which float type a VALU op produces, for OMOD and CLAMP.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    F32,
    F64,
}

fn reg_base(op: &Operand) -> Option<(usize, usize)> {
    match *op {
        Operand::Vgpr { index, count } => Some((usize::from(index), usize::from(count))),
        Operand::Agpr { index, count } => {
            Some((AGPR_BASE + usize::from(index), usize::from(count)))
        }
        _ => None,
    }
}

impl Wave {
    /// Dword `k` of an operand in every lane (scalars broadcast).
    pub(crate) fn vread(&self, op: &Operand, k: usize, ctx: &WaveContext<'_>) -> VReg {
        match reg_base(op) {
            Some((r, _)) => self.vgpr.get(r + k).copied().unwrap_or([0; WAVE_SIZE]),
            None => {
                let v = (self.read_scalar(op, ctx) >> (32 * k.min(1))) as u32;
                [if k < 2 { v } else { 0 }; WAVE_SIZE]
            }
        }
    }

    /// A 64-bit operand in every lane.
    pub(crate) fn vread64(&self, op: &Operand, ctx: &WaveContext<'_>) -> V64 {
        match reg_base(op) {
            Some(_) => {
                let lo = self.vread(op, 0, ctx);
                let hi = self.vread(op, 1, ctx);
                lanes(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32)
            }
            None => [self.read_scalar(op, ctx); WAVE_SIZE],
        }
    }

    /// Writes dword `k` of a vector destination in the lanes of `mask`.
    #[inline]
    pub(crate) fn vwrite(&mut self, op: &Operand, k: usize, vals: &VReg, mask: u64) {
        if let Some((r, _)) = reg_base(op) {
            if let Some(dst) = self.vgpr.get_mut(r + k) {
                if mask == u64::MAX {
                    *dst = *vals;
                } else {
                    for l in 0..WAVE_SIZE {
                        if (mask >> l) & 1 == 1 {
                            dst[l] = vals[l];
                        }
                    }
                }
            }
        }
    }

    fn vwrite64(&mut self, op: &Operand, vals: &V64, mask: u64) {
        let lo: VReg = lanes(|l| vals[l] as u32);
        let hi: VReg = lanes(|l| (vals[l] >> 32) as u32);
        self.vwrite(op, 0, &lo, mask);
        self.vwrite(op, 1, &hi, mask);
    }

    fn src32(&self, i: &Valu, k: usize, ctx: &WaveContext<'_>) -> VReg {
        if let Some(Some(v)) = self.sdwa_src.get(k) {
            return *v;
        }
        match i.src[k].as_ref() {
            Some(op) => self.vread(op, 0, ctx),
            None => [0; WAVE_SIZE],
        }
    }

    fn src64(&self, i: &Valu, k: usize, ctx: &WaveContext<'_>) -> V64 {
        match i.src[k].as_ref() {
            Some(op) => self.vread64(op, ctx),
            None => [0; WAVE_SIZE],
        }
    }

    fn srcf32(&self, i: &Valu, k: usize, ctx: &WaveContext<'_>) -> F32s {
        let raw = self.src32(i, k, ctx);
        let abs = (i.abs >> k) & 1 == 1;
        let neg = (i.neg >> k) & 1 == 1;
        lanes(|l| {
            let mut b = raw[l];
            if abs {
                b &= 0x7FFF_FFFF;
            }
            if neg {
                b ^= 0x8000_0000;
            }
            f32::from_bits(b)
        })
    }

    fn srcf64(&self, i: &Valu, k: usize, ctx: &WaveContext<'_>) -> F64s {
        let raw = match i.src[k].as_ref() {
            // A 32-bit literal used as an f64 operand is the high dword.
            Some(Operand::Literal { value, .. }) => [u64::from(*value) << 32; WAVE_SIZE],
            _ => self.src64(i, k, ctx),
        };
        let abs = (i.abs >> k) & 1 == 1;
        let neg = (i.neg >> k) & 1 == 1;
        lanes(|l| {
            let mut b = raw[l];
            if abs {
                b &= !(1 << 63);
            }
            if neg {
                b ^= 1 << 63;
            }
            f64::from_bits(b)
        })
    }

    fn out32(&mut self, i: &Valu, v: &VReg, exec: u64) {
        if let Some(d) = i.vdst.as_ref() {
            self.vwrite(d, 0, v, exec);
        }
    }

    fn outf32(&mut self, i: &Valu, v: F32s, exec: u64) {
        let omod = match i.omod {
            1 => 2.0,
            2 => 4.0,
            3 => 0.5,
            _ => 1.0,
        };
        let clamp = i.clamp;
        let bits: VReg = lanes(|l| {
            let mut x = v[l] * omod;
            if clamp {
                x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
            }
            x.to_bits()
        });
        self.out32(i, &bits, exec);
    }

    fn out64(&mut self, i: &Valu, v: &V64, exec: u64) {
        if let Some(d) = i.vdst.as_ref() {
            self.vwrite64(d, v, exec);
        }
    }

    fn outf64(&mut self, i: &Valu, v: F64s, exec: u64) {
        let omod = match i.omod {
            1 => 2.0,
            2 => 4.0,
            3 => 0.5,
            _ => 1.0,
        };
        let clamp = i.clamp;
        let bits: V64 = lanes(|l| {
            let mut x = v[l] * omod;
            if clamp {
                x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
            }
            x.to_bits()
        });
        self.out64(i, &bits, exec);
    }

    fn write_mask(&mut self, op: Option<&Operand>, m: u64) {
        if let Some(o) = op {
            self.write_scalar(o, m);
        }
    }

    pub(crate) fn exec_valu(
        &mut self,
        i: &Valu,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        use VopOp as O;
        let unsup = |why: &str| unsupported(&Instruction::Valu(i.clone()), pc, why);
        match i.encoding {
            ValuEncoding::Sdwa(sdwa) => return self.exec_sdwa(i, sdwa, pc, ctx),
            ValuEncoding::Dpp(_) => return Err(unsup("DPP forms are not executed yet")),
            _ => {}
        }
        let exec = self.exec();
        let n = i.op as u16;
        if n < 0x100 {
            return self.exec_vopc(i, n, exec, pc, ctx);
        }
        let kind = match i.op {
            O::VAddF32
            | O::VSubF32
            | O::VSubrevF32
            | O::VMulF32
            | O::VMinF32
            | O::VMaxF32
            | O::VMacF32
            | O::VFmacF32
            | O::VMadF32
            | O::VFmaF32
            | O::VMadmkF32
            | O::VMadakF32
            | O::VRcpF32
            | O::VSqrtF32
            | O::VRsqF32
            | O::VFloorF32
            | O::VCeilF32
            | O::VTruncF32
            | O::VRndneF32
            | O::VFractF32
            | O::VExpF32
            | O::VLogF32
            | O::VCvtF32I32
            | O::VCvtF32U32
            | O::VCvtF32F64
            | O::VLdexpF32
            | O::VMin3F32
            | O::VMax3F32
            | O::VMed3F32 => Kind::F32,
            O::VAddF64
            | O::VMulF64
            | O::VFmaF64
            | O::VFmacF64
            | O::VMinF64
            | O::VMaxF64
            | O::VRcpF64
            | O::VSqrtF64
            | O::VRsqF64
            | O::VFloorF64
            | O::VCeilF64
            | O::VTruncF64
            | O::VRndneF64
            | O::VFractF64
            | O::VCvtF64I32
            | O::VCvtF64U32
            | O::VCvtF64F32
            | O::VLdexpF64 => Kind::F64,
            _ => Kind::Int,
        };
        if kind == Kind::Int && (i.clamp || i.omod != 0) {
            return Err(unsup("CLAMP/OMOD on integer results is not executed yet"));
        }
        if i.op_sel != 0 {
            return Err(unsup("OP_SEL is not executed yet"));
        }
        macro_rules! u2 {
            ($f:expr) => {{
                let a = self.src32(i, 0, ctx);
                let b = self.src32(i, 1, ctx);
                let f = $f;
                let r: VReg = lanes(|l| f(a[l], b[l]));
                self.out32(i, &r, exec);
            }};
        }
        macro_rules! u3 {
            ($f:expr) => {{
                let a = self.src32(i, 0, ctx);
                let b = self.src32(i, 1, ctx);
                let c = self.src32(i, 2, ctx);
                let f = $f;
                let r: VReg = lanes(|l| f(a[l], b[l], c[l]));
                self.out32(i, &r, exec);
            }};
        }
        macro_rules! u1 {
            ($f:expr) => {{
                let a = self.src32(i, 0, ctx);
                let f = $f;
                let r: VReg = lanes(|l| f(a[l]));
                self.out32(i, &r, exec);
            }};
        }
        macro_rules! f1 {
            ($f:expr) => {{
                let a = self.srcf32(i, 0, ctx);
                let f = $f;
                let r: F32s = lanes(|l| f(a[l]));
                self.outf32(i, r, exec);
            }};
        }
        macro_rules! f2 {
            ($f:expr) => {{
                let a = self.srcf32(i, 0, ctx);
                let b = self.srcf32(i, 1, ctx);
                let f = $f;
                let r: F32s = lanes(|l| f(a[l], b[l]));
                self.outf32(i, r, exec);
            }};
        }
        macro_rules! f3 {
            ($f:expr) => {{
                let a = self.srcf32(i, 0, ctx);
                let b = self.srcf32(i, 1, ctx);
                let c = self.srcf32(i, 2, ctx);
                let f = $f;
                let r: F32s = lanes(|l| f(a[l], b[l], c[l]));
                self.outf32(i, r, exec);
            }};
        }
        macro_rules! d1 {
            ($f:expr) => {{
                let a = self.srcf64(i, 0, ctx);
                let f = $f;
                let r: F64s = lanes(|l| f(a[l]));
                self.outf64(i, r, exec);
            }};
        }
        macro_rules! d2 {
            ($f:expr) => {{
                let a = self.srcf64(i, 0, ctx);
                let b = self.srcf64(i, 1, ctx);
                let f = $f;
                let r: F64s = lanes(|l| f(a[l], b[l]));
                self.outf64(i, r, exec);
            }};
        }
        match i.op {
            O::VNop => {}
            O::VMovB32 => u1!(|a: u32| a),
            O::VNotB32 => u1!(|a: u32| !a),
            O::VBfrevB32 => u1!(|a: u32| a.reverse_bits()),
            O::VFfbhU32 => u1!(|a: u32| if a == 0 { u32::MAX } else { a.leading_zeros() }),
            O::VFfblB32 => u1!(|a: u32| if a == 0 { u32::MAX } else { a.trailing_zeros() }),
            O::VFfbhI32 => u1!(|a: u32| {
                let s = a as i32;
                if s == 0 || s == -1 {
                    u32::MAX
                } else if s < 0 {
                    (!a).leading_zeros()
                } else {
                    a.leading_zeros()
                }
            }),
            O::VReadfirstlaneB32 => {
                let a = self.src32(i, 0, ctx);
                let lane = if exec == 0 {
                    0
                } else {
                    exec.trailing_zeros() as usize
                };
                if let Some(d) = i.vdst.as_ref() {
                    self.write_scalar(d, u64::from(a[lane]));
                }
            }
            O::VReadlaneB32 => {
                let a = self.src32(i, 0, ctx);
                let lane = i.src[1]
                    .as_ref()
                    .map(|s| self.read_scalar(s, ctx))
                    .unwrap_or(0) as usize
                    & 63;
                if let Some(d) = i.vdst.as_ref() {
                    self.write_scalar(d, u64::from(a[lane]));
                }
            }
            O::VWritelaneB32 => {
                let v = i.src[0]
                    .as_ref()
                    .map(|s| self.read_scalar(s, ctx))
                    .unwrap_or(0) as u32;
                let lane = i.src[1]
                    .as_ref()
                    .map(|s| self.read_scalar(s, ctx))
                    .unwrap_or(0) as usize
                    & 63;
                self.out32(i, &[v; WAVE_SIZE], 1u64 << lane);
            }
            O::VSwapB32 => {
                let (Some(d), Some(s)) = (i.vdst, i.src[0]) else {
                    return Ok(());
                };
                let a = self.vread(&d, 0, ctx);
                let b = self.vread(&s, 0, ctx);
                self.vwrite(&d, 0, &b, exec);
                self.vwrite(&s, 0, &a, exec);
            }
            O::VAccvgprMovB32 => u1!(|a: u32| a),
            O::VCndmaskB32 => {
                let a = self.srcf32(i, 0, ctx);
                let b = self.srcf32(i, 1, ctx);
                let m = i.src[2]
                    .as_ref()
                    .map(|s| self.read_scalar(s, ctx))
                    .unwrap_or(0);
                let r: VReg = lanes(|l| {
                    if (m >> l) & 1 == 1 {
                        b[l].to_bits()
                    } else {
                        a[l].to_bits()
                    }
                });
                self.out32(i, &r, exec);
            }
            // 16-bit integer ops: low halves in, result zero-extended to 32 bits.
            O::VAddU16 => u2!(|a: u32, b: u32| u32::from((a as u16).wrapping_add(b as u16))),
            O::VSubU16 => u2!(|a: u32, b: u32| u32::from((a as u16).wrapping_sub(b as u16))),
            O::VSubrevU16 => u2!(|a: u32, b: u32| u32::from((b as u16).wrapping_sub(a as u16))),
            O::VMulLoU16 => u2!(|a: u32, b: u32| u32::from((a as u16).wrapping_mul(b as u16))),
            O::VLshlrevB16 => u2!(|a: u32, b: u32| u32::from((b as u16) << (a & 15))),
            O::VLshrrevB16 => u2!(|a: u32, b: u32| u32::from((b as u16) >> (a & 15))),
            O::VAshrrevI16 => {
                u2!(|a: u32, b: u32| u32::from(((b as u16 as i16) >> (a & 15)) as u16))
            }
            O::VMaxU16 => u2!(|a: u32, b: u32| u32::from((a as u16).max(b as u16))),
            O::VMinU16 => u2!(|a: u32, b: u32| u32::from((a as u16).min(b as u16))),
            O::VMaxI16 => {
                u2!(|a: u32, b: u32| u32::from((a as u16 as i16).max(b as u16 as i16) as u16))
            }
            O::VMinI16 => {
                u2!(|a: u32, b: u32| u32::from((a as u16 as i16).min(b as u16 as i16) as u16))
            }
            O::VAddU32 => u2!(|a: u32, b: u32| a.wrapping_add(b)),
            O::VSubU32 => u2!(|a: u32, b: u32| a.wrapping_sub(b)),
            O::VSubrevU32 => u2!(|a: u32, b: u32| b.wrapping_sub(a)),
            O::VAddI32 => u2!(|a: u32, b: u32| a.wrapping_add(b)),
            O::VSubI32 => u2!(|a: u32, b: u32| a.wrapping_sub(b)),
            O::VAndB32 => u2!(|a: u32, b: u32| a & b),
            O::VOrB32 => u2!(|a: u32, b: u32| a | b),
            O::VXorB32 => u2!(|a: u32, b: u32| a ^ b),
            O::VXnorB32 => u2!(|a: u32, b: u32| !(a ^ b)),
            O::VLshlrevB32 => u2!(|a: u32, b: u32| b << (a & 31)),
            O::VLshrrevB32 => u2!(|a: u32, b: u32| b >> (a & 31)),
            O::VAshrrevI32 => u2!(|a: u32, b: u32| ((b as i32) >> (a & 31)) as u32),
            O::VMinI32 => u2!(|a: u32, b: u32| (a as i32).min(b as i32) as u32),
            O::VMaxI32 => u2!(|a: u32, b: u32| (a as i32).max(b as i32) as u32),
            O::VMinU32 => u2!(|a: u32, b: u32| a.min(b)),
            O::VMaxU32 => u2!(|a: u32, b: u32| a.max(b)),
            O::VMulLoU32 => u2!(|a: u32, b: u32| a.wrapping_mul(b)),
            O::VMulHiU32 => u2!(|a: u32, b: u32| ((u64::from(a) * u64::from(b)) >> 32) as u32),
            O::VMulHiI32 => {
                u2!(|a: u32, b: u32| ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32)
            }
            O::VMulU32U24 => u2!(|a: u32, b: u32| (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF)),
            O::VMulHiU32U24 => u2!(|a: u32, b: u32| ((u64::from(a & 0xFF_FFFF)
                * u64::from(b & 0xFF_FFFF))
                >> 32) as u32),
            O::VMulI32I24 => u2!(|a: u32, b: u32| sext24(a).wrapping_mul(sext24(b)) as u32),
            O::VMulHiI32I24 => {
                u2!(|a: u32, b: u32| ((i64::from(sext24(a)) * i64::from(sext24(b))) >> 32) as u32)
            }
            O::VBfmB32 => {
                u2!(|a: u32, b: u32| ((1u64 << (a & 31)) as u32).wrapping_sub(1) << (b & 31))
            }
            O::VBcntU32B32 => u2!(|a: u32, b: u32| a.count_ones().wrapping_add(b)),
            O::VMbcntLoU32B32 | O::VMbcntHiU32B32 => {
                let a = self.src32(i, 0, ctx);
                let b = self.src32(i, 1, ctx);
                let hi = i.op == O::VMbcntHiU32B32;
                let r: VReg = lanes(|l| {
                    let lane_in_half = if hi {
                        l.saturating_sub(32).min(32)
                    } else {
                        l.min(32)
                    } as u32;
                    let mask = if lane_in_half >= 32 {
                        u32::MAX
                    } else {
                        (1u32 << lane_in_half) - 1
                    };
                    (a[l] & mask).count_ones().wrapping_add(b[l])
                });
                self.out32(i, &r, exec);
            }
            O::VBfeU32 => u3!(|a: u32, b: u32, c: u32| bfe32(a, b & 31, c & 31, false)),
            O::VBfeI32 => u3!(|a: u32, b: u32, c: u32| bfe32(a, b & 31, c & 31, true)),
            O::VBfiB32 => u3!(|a: u32, b: u32, c: u32| (a & b) | (!a & c)),
            O::VAlignbitB32 => u3!(
                |a: u32, b: u32, c: u32| ((u64::from(a) << 32 | u64::from(b)) >> (c & 31)) as u32
            ),
            O::VAlignbyteB32 => u3!(
                |a: u32, b: u32, c: u32| ((u64::from(a) << 32 | u64::from(b)) >> (8 * (c & 3)))
                    as u32
            ),
            O::VLshlAddU32 => u3!(|a: u32, b: u32, c: u32| (a << (b & 31)).wrapping_add(c)),
            O::VAddLshlU32 => u3!(|a: u32, b: u32, c: u32| a.wrapping_add(b) << (c & 31)),
            O::VAdd3U32 => u3!(|a: u32, b: u32, c: u32| a.wrapping_add(b).wrapping_add(c)),
            O::VLshlOrB32 => u3!(|a: u32, b: u32, c: u32| (a << (b & 31)) | c),
            O::VAndOrB32 => u3!(|a: u32, b: u32, c: u32| (a & b) | c),
            O::VOr3B32 => u3!(|a: u32, b: u32, c: u32| a | b | c),
            O::VXadU32 => u3!(|a: u32, b: u32, c: u32| (a ^ b).wrapping_add(c)),
            O::VMadU32U24 => u3!(|a: u32, b: u32, c: u32| (a & 0xFF_FFFF)
                .wrapping_mul(b & 0xFF_FFFF)
                .wrapping_add(c)),
            O::VMadI32I24 => u3!(|a: u32, b: u32, c: u32| sext24(a)
                .wrapping_mul(sext24(b))
                .wrapping_add(c as i32)
                as u32),
            O::VMin3I32 => {
                u3!(|a: u32, b: u32, c: u32| (a as i32).min(b as i32).min(c as i32) as u32)
            }
            O::VMax3I32 => {
                u3!(|a: u32, b: u32, c: u32| (a as i32).max(b as i32).max(c as i32) as u32)
            }
            O::VMin3U32 => u3!(|a: u32, b: u32, c: u32| a.min(b).min(c)),
            O::VMax3U32 => u3!(|a: u32, b: u32, c: u32| a.max(b).max(c)),
            O::VMed3I32 => u3!(|a: u32, b: u32, c: u32| {
                let (a, b, c) = (a as i32, b as i32, c as i32);
                a.max(b).min(a.min(b).max(c)) as u32
            }),
            O::VMed3U32 => u3!(|a: u32, b: u32, c: u32| a.max(b).min(a.min(b).max(c))),
            O::VPermB32 => u3!(|a: u32, b: u32, c: u32| perm_b32(a, b, c)),
            O::VAddCoU32
            | O::VSubCoU32
            | O::VSubrevCoU32
            | O::VAddcCoU32
            | O::VSubbCoU32
            | O::VSubbrevCoU32 => {
                let a = self.src32(i, 0, ctx);
                let b = self.src32(i, 1, ctx);
                let cin = match i.op {
                    O::VAddcCoU32 | O::VSubbCoU32 | O::VSubbrevCoU32 => i.src[2]
                        .as_ref()
                        .map(|s| self.read_scalar(s, ctx))
                        .unwrap_or(0),
                    _ => 0,
                };
                let op = i.op;
                let res: V64 = lanes(|l| {
                    let c = (cin >> l) & 1;
                    let (x, y) = match op {
                        O::VSubrevCoU32 | O::VSubbrevCoU32 => (b[l], a[l]),
                        _ => (a[l], b[l]),
                    };
                    match op {
                        O::VAddCoU32 | O::VAddcCoU32 => u64::from(x) + u64::from(y) + c,
                        // Borrow reported in bit 32.
                        _ => {
                            let d = u64::from(x).wrapping_sub(u64::from(y)).wrapping_sub(c);
                            (d & 0xFFFF_FFFF) | (u64::from(u64::from(y) + c > u64::from(x)) << 32)
                        }
                    }
                });
                let mut carry = 0u64;
                for (l, v) in res.iter().enumerate() {
                    carry |= ((v >> 32) & 1) << l;
                }
                let r: VReg = lanes(|l| res[l] as u32);
                if i.clamp {
                    return Err(unsup("CLAMP on carry ops is not executed yet"));
                }
                self.out32(i, &r, exec);
                self.write_mask(i.sdst.as_ref(), carry & exec);
            }
            O::VMadU64U32 | O::VMadI64I32 => {
                let a = self.src32(i, 0, ctx);
                let b = self.src32(i, 1, ctx);
                let c = self.src64(i, 2, ctx);
                let signed = i.op == O::VMadI64I32;
                let mut carry = 0u64;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    let (v, o) = if signed {
                        let p = i128::from(a[l] as i32) * i128::from(b[l] as i32)
                            + i128::from(c[l] as i64);
                        (p as u64, p != i128::from(p as i64))
                    } else {
                        let p = u128::from(a[l]) * u128::from(b[l]) + u128::from(c[l]);
                        (p as u64, p >> 64 != 0)
                    };
                    r[l] = v;
                    carry |= u64::from(o) << l;
                }
                self.out64(i, &r, exec);
                self.write_mask(i.sdst.as_ref(), carry & exec);
            }
            O::VLshlrevB64 | O::VLshrrevB64 | O::VAshrrevI64 => {
                let a = self.src32(i, 0, ctx);
                let b = self.src64(i, 1, ctx);
                let op = i.op;
                let r: V64 = lanes(|l| {
                    let s = a[l] & 63;
                    match op {
                        O::VLshlrevB64 => b[l] << s,
                        O::VLshrrevB64 => b[l] >> s,
                        _ => ((b[l] as i64) >> s) as u64,
                    }
                });
                self.out64(i, &r, exec);
            }
            // f32 arithmetic (round to nearest even, denormals kept).
            O::VAddF32 => f2!(|a: f32, b: f32| a + b),
            O::VSubF32 => f2!(|a: f32, b: f32| a - b),
            O::VSubrevF32 => f2!(|a: f32, b: f32| b - a),
            O::VMulF32 => f2!(|a: f32, b: f32| a * b),
            O::VMinF32 => f2!(|a: f32, b: f32| a.min(b)),
            O::VMaxF32 => f2!(|a: f32, b: f32| a.max(b)),
            O::VLdexpF32 => {
                let a = self.srcf32(i, 0, ctx);
                let b = self.src32(i, 1, ctx);
                let r: F32s = lanes(|l| ldexp32(a[l], b[l] as i32));
                self.outf32(i, r, exec);
            }
            O::VFmaF32 => f3!(|a: f32, b: f32, c: f32| a.mul_add(b, c)),
            O::VMadF32 | O::VMadmkF32 | O::VMadakF32 => f3!(|a: f32, b: f32, c: f32| a * b + c),
            O::VMacF32 | O::VFmacF32 => {
                let Some(d) = i.vdst else { return Ok(()) };
                let a = self.srcf32(i, 0, ctx);
                let b = self.srcf32(i, 1, ctx);
                let acc = self.vread(&d, 0, ctx);
                let fused = i.op == O::VFmacF32;
                let r: F32s = lanes(|l| {
                    let c = f32::from_bits(acc[l]);
                    if fused {
                        a[l].mul_add(b[l], c)
                    } else {
                        a[l] * b[l] + c
                    }
                });
                self.outf32(i, r, exec);
            }
            O::VMin3F32 => f3!(|a: f32, b: f32, c: f32| a.min(b).min(c)),
            O::VMax3F32 => f3!(|a: f32, b: f32, c: f32| a.max(b).max(c)),
            O::VMed3F32 => f3!(|a: f32, b: f32, c: f32| a.max(b).min(a.min(b).max(c))),
            O::VRcpF32 => f1!(|a: f32| 1.0 / a),
            O::VSqrtF32 => f1!(|a: f32| a.sqrt()),
            O::VRsqF32 => f1!(|a: f32| 1.0 / a.sqrt()),
            O::VFloorF32 => f1!(|a: f32| a.floor()),
            O::VCeilF32 => f1!(|a: f32| a.ceil()),
            O::VTruncF32 => f1!(|a: f32| a.trunc()),
            O::VRndneF32 => f1!(|a: f32| a.round_ties_even()),
            O::VFractF32 => f1!(|a: f32| if a.is_infinite() {
                f32::NAN
            } else {
                (a - a.floor()).min(f32::from_bits(0x3F7F_FFFF))
            }),
            O::VExpF32 => f1!(|a: f32| a.exp2()),
            O::VLogF32 => f1!(|a: f32| a.log2()),
            O::VCvtF32I32 => {
                let a = self.src32(i, 0, ctx);
                self.outf32(i, lanes(|l| a[l] as i32 as f32), exec);
            }
            O::VCvtF32U32 => {
                let a = self.src32(i, 0, ctx);
                self.outf32(i, lanes(|l| a[l] as f32), exec);
            }
            O::VCvtU32F32 => {
                let a = self.srcf32(i, 0, ctx);
                self.out32(i, &lanes(|l| a[l] as u32), exec);
            }
            O::VCvtI32F32 => {
                let a = self.srcf32(i, 0, ctx);
                self.out32(i, &lanes(|l| a[l] as i32 as u32), exec);
            }
            O::VCvtF32Ubyte0 | O::VCvtF32Ubyte1 | O::VCvtF32Ubyte2 | O::VCvtF32Ubyte3 => {
                let sh = 8 * (i.op as u16 - O::VCvtF32Ubyte0 as u16) as u32;
                let a = self.src32(i, 0, ctx);
                self.outf32(i, lanes(|l| ((a[l] >> sh) & 0xFF) as f32), exec);
            }
            O::VCvtF32F64 => {
                let a = self.srcf64(i, 0, ctx);
                self.outf32(i, lanes(|l| a[l] as f32), exec);
            }
            O::VCvtI32F64 => {
                let a = self.srcf64(i, 0, ctx);
                self.out32(i, &lanes(|l| a[l] as i32 as u32), exec);
            }
            O::VCvtU32F64 => {
                let a = self.srcf64(i, 0, ctx);
                self.out32(i, &lanes(|l| a[l] as u32), exec);
            }
            O::VCvtF64F32 => {
                let a = self.srcf32(i, 0, ctx);
                self.outf64(i, lanes(|l| f64::from(a[l])), exec);
            }
            O::VCvtF64I32 => {
                let a = self.src32(i, 0, ctx);
                self.outf64(i, lanes(|l| f64::from(a[l] as i32)), exec);
            }
            O::VCvtF64U32 => {
                let a = self.src32(i, 0, ctx);
                self.outf64(i, lanes(|l| f64::from(a[l])), exec);
            }
            // f64 arithmetic.
            O::VAddF64 => d2!(|a: f64, b: f64| a + b),
            O::VMulF64 => d2!(|a: f64, b: f64| a * b),
            O::VMinF64 => d2!(|a: f64, b: f64| a.min(b)),
            O::VMaxF64 => d2!(|a: f64, b: f64| a.max(b)),
            O::VLdexpF64 => {
                let a = self.srcf64(i, 0, ctx);
                let b = self.src32(i, 1, ctx);
                self.outf64(i, lanes(|l| ldexp64(a[l], b[l] as i32)), exec);
            }
            O::VFmaF64 => {
                let a = self.srcf64(i, 0, ctx);
                let b = self.srcf64(i, 1, ctx);
                let c = self.srcf64(i, 2, ctx);
                self.outf64(i, lanes(|l| a[l].mul_add(b[l], c[l])), exec);
            }
            O::VFmacF64 => {
                let Some(d) = i.vdst else { return Ok(()) };
                let a = self.srcf64(i, 0, ctx);
                let b = self.srcf64(i, 1, ctx);
                let acc = self.vread64(&d, ctx);
                self.outf64(
                    i,
                    lanes(|l| a[l].mul_add(b[l], f64::from_bits(acc[l]))),
                    exec,
                );
            }
            O::VRcpF64 => d1!(|a: f64| 1.0 / a),
            O::VSqrtF64 => d1!(|a: f64| a.sqrt()),
            O::VRsqF64 => d1!(|a: f64| 1.0 / a.sqrt()),
            O::VFloorF64 => d1!(|a: f64| a.floor()),
            O::VCeilF64 => d1!(|a: f64| a.ceil()),
            O::VTruncF64 => d1!(|a: f64| a.trunc()),
            O::VRndneF64 => d1!(|a: f64| a.round_ties_even()),
            O::VFractF64 => d1!(|a: f64| if a.is_infinite() {
                f64::NAN
            } else {
                (a - a.floor()).min(f64::from_bits(0x3FEF_FFFF_FFFF_FFFF))
            }),
            _ => return Err(unsup("this VALU instruction is not executed yet")),
        }
        Ok(())
    }

    /// An SDWA instruction (gfx90a-encoding.md 3.7, 5.3): select and extend the
    /// sources, run the 32-bit op, then merge the result into DST_SEL of VDST.
    fn exec_sdwa(
        &mut self,
        i: &Valu,
        s: crate::inst::Sdwa,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        let unsup = |why: &str| unsupported(&Instruction::Valu(i.clone()), pc, why);
        if s.dst_sel > 6 || s.src0_sel > 6 || s.src1_sel > 6 || s.dst_unused > 2 {
            return Err(unsup("reserved SDWA select"));
        }
        let exec = self.exec();
        let is_vopc = (i.op as u16) < 0x100;
        let mut plain = i.clone();
        plain.encoding = ValuEncoding::E32;
        for k in 0..2 {
            if let Some(op) = i.src[k].as_ref() {
                let raw = self.vread(op, 0, ctx);
                let sel = if k == 0 { s.src0_sel } else { s.src1_sel };
                let sx = (s.sext >> k) & 1 == 1;
                self.sdwa_src[k] = Some(lanes(|l| sdwa_select(raw[l], sel, sx)));
            }
        }
        let old = match (&i.vdst, is_vopc) {
            (Some(d), false) => Some(self.vread(d, 0, ctx)),
            _ => None,
        };
        let r = self.exec_valu(&plain, pc, ctx);
        self.sdwa_src = [None, None];
        r?;
        if let (Some(old), Some(d)) = (old, i.vdst) {
            if s.dst_sel != 6 {
                let new = self.vread(&d, 0, ctx);
                let (shift, width) = match s.dst_sel {
                    0..=3 => (8 * u32::from(s.dst_sel), 8),
                    4 => (0, 16),
                    _ => (16, 16),
                };
                let mask = ((1u64 << width) - 1) as u32;
                let merged: VReg = lanes(|l| {
                    let field = (new[l] & mask) << shift;
                    let fmask = mask << shift;
                    match s.dst_unused {
                        0 => field,
                        1 => {
                            let neg = (new[l] >> (width - 1)) & 1 == 1;
                            let above = if shift + width >= 32 {
                                0
                            } else {
                                u32::MAX << (shift + width)
                            };
                            field | if neg { above } else { 0 }
                        }
                        _ => (old[l] & !fmask) | field,
                    }
                });
                self.vwrite(&d, 0, &merged, exec);
            }
        }
        Ok(())
    }

    /// VOPC (and its VOP3 form): compares, producing a lane mask.
    fn exec_vopc(
        &mut self,
        i: &Valu,
        n: u16,
        exec: u64,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        let unsup = |why: &str| unsupported(&Instruction::Valu(i.clone()), pc, why);
        let cond = u32::from(n & 0xF);
        let (mask, cmpx): (u64, bool) = match n {
            0x10..=0x13 => {
                let bits = self.src32(i, 1, ctx);
                let mut m = 0u64;
                if n < 0x12 {
                    let a = self.srcf32(i, 0, ctx);
                    for l in 0..WAVE_SIZE {
                        m |= u64::from(
                            class_f64(
                                f64::from(a[l]),
                                a[l].is_nan() && a[l].to_bits() & 0x0040_0000 == 0,
                                a[l] != 0.0 && a[l].abs() < f32::MIN_POSITIVE,
                            ) & bits[l]
                                != 0,
                        ) << l;
                    }
                } else {
                    let a = self.srcf64(i, 0, ctx);
                    for l in 0..WAVE_SIZE {
                        m |= u64::from(
                            class_f64(
                                a[l],
                                a[l].is_nan() && a[l].to_bits() & (1 << 51) == 0,
                                a[l] != 0.0 && a[l].abs() < f64::MIN_POSITIVE,
                            ) & bits[l]
                                != 0,
                        ) << l;
                    }
                }
                (m, n & 1 == 1)
            }
            0x40..=0x5F => {
                let a = self.srcf32(i, 0, ctx);
                let b = self.srcf32(i, 1, ctx);
                let mut m = 0u64;
                for l in 0..WAVE_SIZE {
                    m |= u64::from(fcmp(f64::from(a[l]), f64::from(b[l]), cond)) << l;
                }
                (m, n >= 0x50)
            }
            0x60..=0x7F => {
                let a = self.srcf64(i, 0, ctx);
                let b = self.srcf64(i, 1, ctx);
                let mut m = 0u64;
                for l in 0..WAVE_SIZE {
                    m |= u64::from(fcmp(a[l], b[l], cond)) << l;
                }
                (m, n >= 0x70)
            }
            0xA0..=0xDF => {
                // 16-bit (0xA0..0xBF) and 32-bit (0xC0..0xDF) integers.
                let a = self.src32(i, 0, ctx);
                let b = self.src32(i, 1, ctx);
                let signed = n & 8 == 0;
                let c = cond & 7;
                let wide16 = n < 0xC0;
                let mut m = 0u64;
                for l in 0..WAVE_SIZE {
                    let (x, y) = if wide16 {
                        if signed {
                            (i64::from(a[l] as u16 as i16), i64::from(b[l] as u16 as i16))
                        } else {
                            (i64::from(a[l] as u16), i64::from(b[l] as u16))
                        }
                    } else if signed {
                        (i64::from(a[l] as i32), i64::from(b[l] as i32))
                    } else {
                        (i64::from(a[l]), i64::from(b[l]))
                    };
                    m |= u64::from(icmp(i128::from(x), i128::from(y), c)) << l;
                }
                (m, (n & 0x10) != 0)
            }
            0xE0..=0xFF => {
                let a = self.src64(i, 0, ctx);
                let b = self.src64(i, 1, ctx);
                let signed = n & 8 == 0;
                let c = cond & 7;
                let mut m = 0u64;
                for l in 0..WAVE_SIZE {
                    let (x, y) = if signed {
                        (i128::from(a[l] as i64), i128::from(b[l] as i64))
                    } else {
                        (i128::from(a[l]), i128::from(b[l]))
                    };
                    m |= u64::from(icmp(x, y, c)) << l;
                }
                (m, n >= 0xF0)
            }
            _ => return Err(unsup("16-bit float compares are not executed yet")),
        };
        let mask = mask & exec;
        self.write_mask(i.vdst.as_ref(), mask);
        if cmpx {
            self.set_exec(mask);
        }
        Ok(())
    }

    pub(crate) fn exec_vop3p(
        &mut self,
        i: &Vop3p,
        pc: u64,
        ctx: &WaveContext<'_>,
    ) -> Result<(), Fault> {
        use Vop3pOp as O;
        let unsup = |why: &str| unsupported(&Instruction::Vop3p(i.clone()), pc, why);
        let exec = self.exec();
        let (Some(d), Some(s0)) = (i.vdst, i.src[0]) else {
            return Err(unsup("missing operands"));
        };
        match i.op {
            O::VAccvgprReadB32 | O::VAccvgprWriteB32 => {
                let v = self.vread(&s0, 0, ctx);
                self.vwrite(&d, 0, &v, exec);
            }
            O::VPkMovB32 => {
                let Some(s1) = i.src[1] else {
                    return Err(unsup("missing operands"));
                };
                let lo = self.vread(&s0, usize::from(i.op_sel & 1), ctx);
                let hi = self.vread(&s1, usize::from((i.op_sel >> 1) & 1), ctx);
                self.vwrite(&d, 0, &lo, exec);
                self.vwrite(&d, 1, &hi, exec);
            }
            O::VPkAddF32 | O::VPkMulF32 | O::VPkFmaF32 => {
                if i.clamp {
                    return Err(unsup("CLAMP is not executed yet"));
                }
                let nsrc = if i.op == O::VPkFmaF32 { 3 } else { 2 };
                let mut src = [[[0f32; WAVE_SIZE]; 2]; 3];
                for k in 0..nsrc {
                    let Some(op) = i.src[k] else {
                        return Err(unsup("missing operands"));
                    };
                    for half in 0..2 {
                        let sel = if half == 0 { i.op_sel } else { i.op_sel_hi };
                        let neg = if half == 0 { i.neg_lo } else { i.neg_hi };
                        let dword = usize::from((sel >> k) & 1);
                        let raw = match op {
                            Operand::Vgpr { .. } | Operand::Agpr { .. } | Operand::Sreg { .. } => {
                                self.vread(&op, dword, ctx)
                            }
                            // Constants give the same 32-bit value to both halves.
                            _ => self.vread(&op, 0, ctx),
                        };
                        let flip = if (neg >> k) & 1 == 1 { 0x8000_0000 } else { 0 };
                        src[k][half] = lanes(|l| f32::from_bits(raw[l] ^ flip));
                    }
                }
                for half in 0..2 {
                    let [a, b, c] = [src[0][half], src[1][half], src[2][half]];
                    let r: VReg = lanes(|l| match i.op {
                        O::VPkAddF32 => (a[l] + b[l]).to_bits(),
                        O::VPkMulF32 => (a[l] * b[l]).to_bits(),
                        _ => a[l].mul_add(b[l], c[l]).to_bits(),
                    });
                    self.vwrite(&d, half, &r, exec);
                }
            }
            _ => return Err(unsup("this VOP3P instruction is not executed yet")),
        }
        Ok(())
    }
}

/// SDWA source select: byte 0–3, word 0–1 or dword, zero- or sign-extended.
fn sdwa_select(v: u32, sel: u8, sext: bool) -> u32 {
    match sel {
        0..=3 => {
            let b = (v >> (8 * u32::from(sel))) & 0xFF;
            if sext {
                b as u8 as i8 as i32 as u32
            } else {
                b
            }
        }
        4 | 5 => {
            let h = (v >> (16 * u32::from(sel - 4))) & 0xFFFF;
            if sext {
                h as u16 as i16 as i32 as u32
            } else {
                h
            }
        }
        _ => v,
    }
}

fn sext24(v: u32) -> i32 {
    ((v << 8) as i32) >> 8
}

fn bfe32(v: u32, off: u32, width: u32, signed: bool) -> u32 {
    if width == 0 {
        return 0;
    }
    let x = v >> off;
    if off + width < 32 {
        let field = x & ((1u32 << width) - 1);
        if signed {
            (((field << (32 - width)) as i32) >> (32 - width)) as u32
        } else {
            field
        }
    } else if signed {
        ((v as i32) >> off) as u32
    } else {
        x
    }
}

fn perm_b32(a: u32, b: u32, sel: u32) -> u32 {
    let bytes = (u64::from(a) << 32) | u64::from(b);
    let mut out = 0u32;
    for k in 0..4 {
        let s = (sel >> (8 * k)) & 0xFF;
        let byte = match s {
            0..=7 => ((bytes >> (8 * s)) & 0xFF) as u32,
            8..=11 => {
                // Sign of byte 1,3,5,7 replicated.
                let src = 2 * (s - 8) + 1;
                if (bytes >> (8 * src + 7)) & 1 == 1 {
                    0xFF
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xFF,
        };
        out |= byte << (8 * k);
    }
    out
}

fn ldexp32(a: f32, e: i32) -> f32 {
    ldexp64(f64::from(a), e) as f32
}

fn ldexp64(a: f64, e: i32) -> f64 {
    if a == 0.0 || !a.is_finite() {
        return a;
    }
    let e = e.clamp(-2200, 2200);
    // Scale in steps that stay exact.
    let mut x = a;
    let mut k = e;
    while k > 1000 {
        x *= 2f64.powi(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    x * 2f64.powi(k)
}

/// Float compare condition (c16; the negated forms are true for unordered operands,
/// hence the deliberate `!(a op b)`): f lt eq le gt lg ge o u nge nlg ngt nle neq nlt tru).
#[allow(clippy::nonminimal_bool, clippy::neg_cmp_op_on_partial_ord)]
fn fcmp(a: f64, b: f64, c: u32) -> bool {
    match c {
        0 => false,
        1 => a < b,
        2 => a == b,
        3 => a <= b,
        4 => a > b,
        5 => a
            .partial_cmp(&b)
            .is_some_and(|o| o != std::cmp::Ordering::Equal),
        6 => a >= b,
        7 => !a.is_nan() && !b.is_nan(),
        8 => a.is_nan() || b.is_nan(),
        9 => !(a >= b),
        10 => !a
            .partial_cmp(&b)
            .is_some_and(|o| o != std::cmp::Ordering::Equal),
        11 => !(a > b),
        12 => !(a <= b),
        13 => a != b,
        14 => !(a < b),
        _ => true,
    }
}

/// Integer compare condition (c8: f lt eq le gt ne ge t).
fn icmp(a: i128, b: i128, c: u32) -> bool {
    match c {
        0 => false,
        1 => a < b,
        2 => a == b,
        3 => a <= b,
        4 => a > b,
        5 => a != b,
        6 => a >= b,
        _ => true,
    }
}

/// The v_cmp_class bit of `x`: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denorm, 5 -0,
/// 6 +0, 7 +denorm, 8 +normal, 9 +inf.
fn class_f64(x: f64, snan: bool, denorm: bool) -> u32 {
    let bit = if x.is_nan() {
        if snan {
            0
        } else {
            1
        }
    } else if x.is_infinite() {
        if x < 0.0 {
            2
        } else {
            9
        }
    } else if x == 0.0 {
        if x.is_sign_negative() {
            5
        } else {
            6
        }
    } else if denorm {
        if x < 0.0 {
            4
        } else {
            7
        }
    } else if x < 0.0 {
        3
    } else {
        8
    };
    1 << bit
}
