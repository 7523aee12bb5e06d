//! Facts of each VALU opcode that the executors ask while they run: whether its
//! result is a float (OMOD and CLAMP act as float modifiers), whether it reads
//! 16-bit float operands (inline constants take their f16 form), and whether its
//! result depends on the rounding mode. They follow from the opcode's name in the
//! generated table (llvm-objdump-16's mnemonic), so they are read from it here
//! (for VOP3P too),
//! once, when the crate is compiled: a run never compares strings.

use crate::generated::opcodes::{Vop3pOp, VopOp};

/// One more than the largest [`VopOp`] opcode value (VOP3 numbering).
const OPCODES: usize = 0x2A2;

/// Whether `hay` contains `needle`.
const fn contains(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let mut i = 0;
    while i + n.len() <= h.len() {
        let mut k = 0;
        while k < n.len() && h[i + k] == n[k] {
            k += 1;
        }
        if k == n.len() {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether `s` starts with `prefix`.
const fn starts_with(s: &str, prefix: &str) -> bool {
    let (s, p) = (s.as_bytes(), prefix.as_bytes());
    if p.len() > s.len() {
        return false;
    }
    let mut i = 0;
    while i < p.len() {
        if s[i] != p[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether the name has a float type suffix.
const fn names_float(mn: &str) -> bool {
    contains(mn, "_f16") || contains(mn, "_f32") || contains(mn, "_f64")
}

/// Whether the result depends on the rounding mode: float operations but the
/// compares and the min/max/median selections, which pick an operand.
const fn rounds_by_name(mn: &str) -> bool {
    names_float(mn)
        && !starts_with(mn, "v_cmp")
        && !starts_with(mn, "v_min")
        && !starts_with(mn, "v_max")
        && !starts_with(mn, "v_med3")
}

/// Whether the op reads 16-bit float operands.
const fn f16_sources_by_name(mn: &str) -> bool {
    contains(mn, "_f16") && !starts_with(mn, "v_cvt_f16_f32") && !contains(mn, "_f32_f16")
        || starts_with(mn, "v_cvt_f32_f16")
}

/// Whether the results are floats: float-typed names, but the conversions to
/// integers and packed forms, exponent extraction, the division scale and the
/// lane counts.
const fn float_result_by_name(mn: &str) -> bool {
    let int_result = starts_with(mn, "v_cvt_i")
        || starts_with(mn, "v_cvt_u")
        || starts_with(mn, "v_cvt_flr")
        || starts_with(mn, "v_cvt_rpi")
        || starts_with(mn, "v_cvt_pk")
        || starts_with(mn, "v_cvt_norm")
        || starts_with(mn, "v_frexp_exp")
        || starts_with(mn, "v_div_scale")
        || starts_with(mn, "v_mbcnt")
        || starts_with(mn, "v_pack");
    !int_result && names_float(mn)
}

/// Bit 0: float result; bit 1: f16 sources; bit 2: rounds.
const FLOAT_RESULT: u8 = 1;
const F16_SOURCES: u8 = 2;
const ROUNDS: u8 = 4;

/// The facts of every opcode, by opcode value.
static TABLE: [u8; OPCODES] = {
    let mut t = [0u8; OPCODES];
    let mut i = 0;
    while i < VopOp::ALL.len() {
        let op = VopOp::ALL[i];
        let mn = op.mnemonic();
        let mut f = 0;
        if float_result_by_name(mn) {
            f |= FLOAT_RESULT;
        }
        if f16_sources_by_name(mn) {
            f |= F16_SOURCES;
        }
        if rounds_by_name(mn) {
            f |= ROUNDS;
        }
        t[op.opcode() as usize] = f;
        i += 1;
    }
    t
};

fn facts(op: VopOp) -> u8 {
    TABLE.get(op.opcode() as usize).copied().unwrap_or(0)
}

/// Whether `op`'s results are floats (OMOD and CLAMP apply as float modifiers).
pub(crate) fn float_result(op: VopOp) -> bool {
    facts(op) & FLOAT_RESULT != 0
}

/// Whether `op` reads 16-bit float operands.
pub(crate) fn f16_sources(op: VopOp) -> bool {
    facts(op) & F16_SOURCES != 0
}

/// Whether `op`'s result depends on the rounding mode.
pub(crate) fn rounds(op: VopOp) -> bool {
    facts(op) & ROUNDS != 0
}

/// One more than the largest [`Vop3pOp`] opcode value.
const VOP3P_OPCODES: usize = 0x70;

/// The facts of every VOP3P opcode (its float operations are those named `_f…`,
/// its 16-bit float operands those of names with `f16`), by opcode value.
static VOP3P_TABLE: [u8; VOP3P_OPCODES] = {
    let mut t = [0u8; VOP3P_OPCODES];
    let mut i = 0;
    while i < Vop3pOp::ALL.len() {
        let op = Vop3pOp::ALL[i];
        let mn = op.mnemonic();
        let mut f = 0;
        if contains(mn, "_f") {
            f |= ROUNDS;
        }
        if contains(mn, "f16") {
            f |= F16_SOURCES;
        }
        t[op.opcode() as usize] = f;
        i += 1;
    }
    t
};

fn vop3p_facts(op: Vop3pOp) -> u8 {
    VOP3P_TABLE.get(op.opcode() as usize).copied().unwrap_or(0)
}

/// Whether the VOP3P `op` computes in floating point (its result depends on the
/// rounding mode).
pub(crate) fn vop3p_rounds(op: Vop3pOp) -> bool {
    vop3p_facts(op) & ROUNDS != 0
}

/// Whether the VOP3P `op` reads 16-bit float operands.
pub(crate) fn vop3p_f16_sources(op: Vop3pOp) -> bool {
    vop3p_facts(op) & F16_SOURCES != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_opcode_and_agrees_with_the_names() {
        for &op in VopOp::ALL {
            assert!((op.opcode() as usize) < OPCODES, "{op:?}");
            let mn = op.mnemonic();
            assert_eq!(rounds(op), rounds_by_name(mn), "{mn}");
            assert_eq!(f16_sources(op), f16_sources_by_name(mn), "{mn}");
            assert_eq!(float_result(op), float_result_by_name(mn), "{mn}");
        }
        assert!(rounds(VopOp::VAddF32) && !rounds(VopOp::VMinF32) && !rounds(VopOp::VAddU32));
        assert!(f16_sources(VopOp::VAddF16) && f16_sources(VopOp::VCvtF32F16));
        assert!(!f16_sources(VopOp::VCvtF16F32));
        assert!(float_result(VopOp::VMulF64) && !float_result(VopOp::VCvtI32F32));
        for &op in Vop3pOp::ALL {
            assert!((op.opcode() as usize) < VOP3P_OPCODES, "{op:?}");
            assert_eq!(vop3p_rounds(op), op.mnemonic().contains("_f"), "{op:?}");
            assert_eq!(
                vop3p_f16_sources(op),
                op.mnemonic().contains("f16"),
                "{op:?}"
            );
        }
        assert!(vop3p_rounds(Vop3pOp::VPkFmaF16) && !vop3p_rounds(Vop3pOp::VPkAddU16));
    }
}
