//! VOPC and its VOP3 form: compares and `v_cmp_class`, producing a lane mask in VCC
//! or an SGPR pair (and in EXEC for `v_cmpx_*`, which on GFX9 also writes the
//! destination). Lanes outside EXEC produce 0. Signalling and quiet forms differ only
//! in exceptions, which the engine does not raise.
//!
//! Opcode layout (the VI/GFX9 VOPC opcodes of LLVM's
//! `llvm/lib/Target/AMDGPU/VOPCInstructions.td`): 0x10–0x15 class, 0x20/0x40/0x60
//! f16/f32/f64 with 16 conditions (+0x10 cmpx), 0xA0/0xC0/0xE0 16/32/64-bit integers
//! with 8 conditions, signed then unsigned (+0x10 cmpx).

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

use crate::arch::WAVE_SIZE;
use crate::error::Fault;

use super::exe::Exe;
use crate::fp::{class_bit, class_bit16, h2f};

/// Float compare condition `c`: f lt eq le gt lg ge o u nge nlg ngt nle neq nlt tru.
/// The negated forms are true for unordered operands.
#[inline]
fn fcmp<F: PartialOrd + Copy>(a: F, b: F, c: u32) -> bool {
    fcond(a < b, a == b, a > b, c)
}

/// Float compare condition `c` (numbered as [`fcmp`] numbers it) from the operands'
/// relations `lt`, `eq` and `gt` (one lane's, as bools, or a wave's, as lane
/// masks; unordered operands have none of the three): conditions 0 to 7 are the
/// union of the relations their bits 0, 1 and 2 name (lt, eq, gt; 0 is false, 7
/// ordered), conditions 8 to 15 the complement of condition 15 - `c` (true for
/// unordered operands: u, nge, nlg, ngt, nle, neq, nlt, tru).
#[inline(always)]
pub(super) fn fcond<T>(lt: T, eq: T, gt: T, c: u32) -> T
where
    T: Copy + Default + std::ops::BitOr<Output = T> + std::ops::Not<Output = T>,
{
    let bits = if c < 8 { c } else { 15 - c };
    let pick = |bit: u32, r: T| if bits & bit != 0 { r } else { T::default() };
    let union = pick(1, lt) | pick(2, eq) | pick(4, gt);
    if c < 8 {
        union
    } else {
        !union
    }
}

/// Integer compare condition `c`: f lt eq le gt ne ge t.
#[inline]
fn icmp<T: Ord>(a: T, b: T, c: u32) -> bool {
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

#[inline(always)]
fn mask(f: impl Fn(usize) -> bool) -> u64 {
    let mut m = 0u64;
    for l in 0..WAVE_SIZE {
        m |= u64::from(f(l)) << l;
    }
    m
}

/// Executes one compare.
pub(super) fn exec(x: &mut Exe) -> Result<(), Fault> {
    let n = x.i.op as u16;
    let cond = u32::from(n & 0xF);
    let (m, cmpx) = match n {
        0x10..=0x15 => {
            let bits = x.u32(1);
            let m = match n {
                0x10 | 0x11 => {
                    let a = x.f32_raw(0);
                    mask(|l| class_bit(a[l]) & bits[l] != 0)
                }
                0x12 | 0x13 => {
                    let a = x.f64_raw(0);
                    mask(|l| class_bit(a[l]) & bits[l] != 0)
                }
                _ => {
                    let a = x.h16_raw(0);
                    mask(|l| class_bit16(a[l]) & bits[l] != 0)
                }
            };
            (m, n & 1 == 1)
        }
        0x20..=0x3F => {
            let a = x.h16(0);
            let b = x.h16(1);
            (mask(|l| fcmp(h2f(a[l]), h2f(b[l]), cond)), n >= 0x30)
        }
        0x40..=0x5F => {
            let a = x.f32(0);
            let b = x.f32(1);
            (mask(|l| fcmp(a[l], b[l], cond)), n >= 0x50)
        }
        0x60..=0x7F => {
            let a = x.f64(0);
            let b = x.f64(1);
            (mask(|l| fcmp(a[l], b[l], cond)), n >= 0x70)
        }
        0xA0..=0xBF => {
            let a = x.u16(0);
            let b = x.u16(1);
            let c = cond & 7;
            let m = if n & 8 == 0 {
                mask(|l| icmp(a[l] as i16, b[l] as i16, c))
            } else {
                mask(|l| icmp(a[l], b[l], c))
            };
            (m, n & 0x10 != 0)
        }
        0xC0..=0xDF => {
            let m = crate::simd::cmp_u32(x.src(0, 0), x.src(1, 0), n & 8 == 0, cond & 7);
            (m, n & 0x10 != 0)
        }
        0xE0..=0xFF => {
            let signed = n & 8 == 0;
            let (al, ah) = x.src64(0, signed);
            let (bl, bh) = x.src64(1, signed);
            (
                crate::simd::cmp_u64(al, ah, bl, bh, signed, cond & 7),
                n & 0x10 != 0,
            )
        }
        _ => return Err(x.unsup("not a compare opcode")),
    };
    let m = m & x.exec;
    x.out_mask(m);
    if cmpx {
        x.w.set_exec(m);
    }
    Ok(())
}
