//! The meaning of the memory read-modify-write operations: what every atomic of
//! DS, FLAT/GLOBAL, MUBUF and SMEM writes back from the old value and its data
//! ([`Rmw`]), for 32- and 64-bit locations. The executors (`vmem`, `salu`) decide
//! which `Rmw` an opcode is and perform the atomic update with it.

use crate::fp;

/// Read-modify-write operations shared by DS, FLAT/GLOBAL, MUBUF and SMEM atomics.
/// Each takes the old memory value, DATA and (for the two-operand ones) a second value
/// `cmp`: the compare value of the compare-swaps, DATA2 of `Mskor` and `Wrap`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Rmw {
    /// `old == cmp` compared as floats (so -0 == +0, NaN never equal).
    CmpSwapF32,
    /// As `CmpSwapF32` for doubles.
    CmpSwapF64,
    /// `(old & !data) | cmp` (`ds_mskor`).
    Mskor,
    /// `old >= data ? old - data : old + cmp` (`ds_wrap_rtn_b32`).
    Wrap,
    /// Two packed f16 additions.
    PkAddF16,
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
    pub(crate) fn apply32(self, old: u32, data: u32, cmp: u32) -> u32 {
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
            Rmw::CmpSwapF32 => {
                if f32::from_bits(old) == f32::from_bits(cmp) {
                    data
                } else {
                    old
                }
            }
            Rmw::Mskor => (old & !data) | cmp,
            Rmw::Wrap => {
                if old >= data {
                    old - data
                } else {
                    old.wrapping_add(cmp)
                }
            }
            Rmw::PkAddF16 => {
                let lo = f16_add(old as u16, data as u16);
                let hi = f16_add((old >> 16) as u16, (data >> 16) as u16);
                u32::from(lo) | u32::from(hi) << 16
            }
            Rmw::AddF64 | Rmw::MinF64 | Rmw::MaxF64 | Rmw::CmpSwapF64 => old,
        }
    }

    pub(crate) fn apply64(self, old: u64, data: u64, cmp: u64) -> u64 {
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
            Rmw::CmpSwapF64 => {
                if f64::from_bits(old) == f64::from_bits(cmp) {
                    data
                } else {
                    old
                }
            }
            Rmw::Mskor => (old & !data) | cmp,
            Rmw::Wrap => {
                if old >= data {
                    old - data
                } else {
                    old.wrapping_add(cmp)
                }
            }
            Rmw::AddF32 | Rmw::MinF32 | Rmw::MaxF32 | Rmw::CmpSwapF32 | Rmw::PkAddF16 => old,
        }
    }
}

/// f16 + f16 as the VALU adds them ([`fp::f16_binary`]: exact in f64, one rounding
/// to nearest even, a NaN operand's quieted NaN).
fn f16_add(a: u16, b: u16) -> u16 {
    fp::f16_binary(a, b, |x, y| x + y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_rounds_to_nearest_even() {
        // 1.5 + 2.25 = 3.75: 0x3E00 + 0x4080 = 0x4380 (sign | biased exp << 10 | mantissa).
        assert_eq!(f16_add(0x3E00, 0x4080), 0x4380);
        // 1.0 + 2^-11 is halfway between 1.0 and 1.0 + 2^-10: ties to even (1.0).
        assert_eq!(f16_add(0x3C00, 0x1000), 0x3C00);
        // (1 + 2^-10) + 2^-11: halfway again, even is 1 + 2^-9.
        assert_eq!(f16_add(0x3C01, 0x1000), 0x3C02);
        // 65504 + 32 overflows to +inf; the smallest subnormal survives.
        assert_eq!(f16_add(0x7BFF, 0x5000), 0x7C00);
        assert_eq!(f16_add(0x0001, 0x0000), 0x0001);
        assert_eq!(fp::h2f(0x0001), 2f32.powi(-24));
        assert_eq!(fp::f2h(-0.0, false), 0x8000);
    }
}
