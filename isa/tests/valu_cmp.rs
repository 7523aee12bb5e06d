//! Every VOPC compare (f16/f32/f64 × 16 conditions, i16/u16/i32/u32/i64/u64 × 8
//! conditions) in its e64 form (result to an SGPR pair), e32 form (VCC) and `cmpx`
//! form (EXEC and the destination), against Rust comparisons; lanes outside EXEC
//! give 0.

#![allow(clippy::needless_range_loop, clippy::type_complexity)]

mod common;
mod valu_util;

use valu_util::*;

const FCONDS: [&str; 16] = [
    "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt",
    "tru",
];
const ICONDS: [&str; 8] = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"];

fn fref(c: &str, a: f64, b: f64) -> bool {
    let un = a.is_nan() || b.is_nan();
    match c {
        "f" => false,
        "lt" => a < b,
        "eq" => a == b,
        "le" => a <= b,
        "gt" => a > b,
        "lg" => !un && a != b,
        "ge" => a >= b,
        "o" => !un,
        "u" => un,
        "nge" => un || a < b,
        "nlg" => un || a == b,
        "ngt" => un || a <= b,
        "nle" => un || a > b,
        "neq" => un || a != b,
        "nlt" => un || a >= b,
        _ => true,
    }
}

fn iref<T: Ord>(c: &str, a: T, b: T) -> bool {
    match c {
        "f" => false,
        "lt" => a < b,
        "eq" => a == b,
        "le" => a <= b,
        "gt" => a > b,
        "ne" => a != b,
        "ge" => a >= b,
        _ => true,
    }
}

const EXEC: u64 = 0xFFFF_FFFF_FFFF_FF7E;

/// Runs every condition of one type in e64 form (pair s[2k]) and checks the masks.
fn check_type(
    ty: &str,
    conds: &[&str],
    wide: bool,
    a: [u64; 64],
    b: [u64; 64],
    reference: impl Fn(&str, usize) -> bool,
) {
    let (s0, s1) = if wide {
        ("v[2:3]", "v[4:5]")
    } else {
        ("v2", "v4")
    };
    let src: String = conds
        .iter()
        .enumerate()
        .map(|(k, c)| {
            format!(
                "v_cmp_{c}_{ty}_e64 s[{}:{}], {s0}, {s1}\n",
                2 * k,
                2 * k + 1
            )
        })
        .collect::<String>()
        + &format!("v_cmp_{}_{ty}_e32 vcc, {s0}, {s1}\n", conds[1]);
    let w = run(&src, MODE_IEEE, |w| {
        set_pair(w, 2, &a);
        set_pair(w, 4, &b);
        w.set_exec(EXEC);
    });
    for (k, c) in conds.iter().enumerate() {
        let got = u64::from(w.sgpr[2 * k]) | u64::from(w.sgpr[2 * k + 1]) << 32;
        let mut want = 0u64;
        for l in 0..64 {
            if reference(c, l) {
                want |= 1 << l;
            }
        }
        assert_eq!(
            got,
            want & EXEC,
            "v_cmp_{c}_{ty}: got {got:#x} want {:#x}",
            want & EXEC
        );
        if k == 1 {
            assert_eq!(
                w.vcc(),
                want & EXEC,
                "e32 form of v_cmp_{c}_{ty} writes VCC"
            );
        }
    }
    // cmpx: EXEC becomes the (masked) result, and the destination gets it too.
    for c in [conds[1], conds[conds.len() - 3]] {
        let src = format!("v_cmpx_{c}_{ty}_e64 s[40:41], {s0}, {s1}\nv_mov_b32_e32 v9, 7");
        let w = run(&src, MODE_IEEE, |w| {
            set_pair(w, 2, &a);
            set_pair(w, 4, &b);
            w.vgpr[9] = [1; 64];
            w.set_exec(EXEC);
        });
        let mut want = 0u64;
        for l in 0..64 {
            if reference(c, l) {
                want |= 1 << l;
            }
        }
        let want = want & EXEC;
        assert_eq!(w.exec(), want, "v_cmpx_{c}_{ty} EXEC");
        assert_eq!(
            u64::from(w.sgpr[40]) | u64::from(w.sgpr[41]) << 32,
            want,
            "v_cmpx_{c}_{ty} SDST"
        );
        for l in 0..64 {
            assert_eq!(
                w.vgpr[9][l],
                if (want >> l) & 1 == 1 { 7 } else { 1 },
                "later VALU uses the new EXEC"
            );
        }
    }
}

fn float_pairs() -> ([f64; 64], [f64; 64]) {
    let vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-3,
        -7.0,
        65504.0,
    ];
    let a: [f64; 64] = std::array::from_fn(|l| vals[l % vals.len()]);
    let b: [f64; 64] = std::array::from_fn(|l| vals[(l / vals.len() + l) % vals.len()]);
    (a, b)
}

#[test]
fn f32_compares() {
    let (a, b) = float_pairs();
    let bits = |v: &[f64; 64]| -> [u64; 64] {
        std::array::from_fn(|l| u64::from((v[l] as f32).to_bits()) | 0xAAAA_0000_0000)
    };
    check_type("f32", &FCONDS, false, bits(&a), bits(&b), |c, l| {
        fref(c, a[l], b[l])
    });
}

#[test]
fn f64_compares() {
    let (a, b) = float_pairs();
    let bits = |v: &[f64; 64]| -> [u64; 64] { std::array::from_fn(|l| v[l].to_bits()) };
    check_type("f64", &FCONDS, true, bits(&a), bits(&b), |c, l| {
        fref(c, a[l], b[l])
    });
}

#[test]
fn f16_compares() {
    let (a, b) = float_pairs();
    let h = |x: f64| -> u64 { u64::from(d2h_ref(x)) | 0x5A5A_0000 };
    let ha: [u64; 64] = std::array::from_fn(|l| h(a[l]));
    let hb: [u64; 64] = std::array::from_fn(|l| h(b[l]));
    check_type("f16", &FCONDS, false, ha, hb, |c, l| fref(c, a[l], b[l]));
}

fn int_inputs() -> ([u64; 64], [u64; 64]) {
    let vals: [u64; 9] = [
        0,
        1,
        u64::MAX,
        0x8000_0000_0000_0000,
        0x7FFF_FFFF_FFFF_FFFF,
        0x8000_0000,
        0xFFFF_8000,
        0x7FFF,
        5,
    ];
    let a: [u64; 64] = std::array::from_fn(|l| vals[l % 9]);
    let b: [u64; 64] = std::array::from_fn(|l| vals[(l / 9 + l) % 9]);
    (a, b)
}

#[test]
fn integer_compares_of_every_width() {
    let (a, b) = int_inputs();
    check_type("i32", &ICONDS, false, a, b, |c, l| {
        iref(c, a[l] as i32, b[l] as i32)
    });
    check_type("u32", &ICONDS, false, a, b, |c, l| {
        iref(c, a[l] as u32, b[l] as u32)
    });
    check_type("i16", &ICONDS, false, a, b, |c, l| {
        iref(c, a[l] as i16, b[l] as i16)
    });
    check_type("u16", &ICONDS, false, a, b, |c, l| {
        iref(c, a[l] as u16, b[l] as u16)
    });
    check_type("i64", &ICONDS, true, a, b, |c, l| {
        iref(c, a[l] as i64, b[l] as i64)
    });
    check_type("u64", &ICONDS, true, a, b, |c, l| iref(c, a[l], b[l]));
}

#[test]
fn literal_operands_of_64_bit_compares() {
    // A 32-bit literal is sign-extended for i64, zero-extended for u64 and is the high
    // dword of an f64.
    let src = "v_cmp_eq_i64_e32 vcc, 0xfffffff0, v[2:3]
s_mov_b64 s[10:11], vcc
v_cmp_eq_u64_e32 vcc, 0xfffffff0, v[2:3]
s_mov_b64 s[12:13], vcc
v_cmp_eq_f64_e32 vcc, 0x40080000, v[4:5]
s_mov_b64 s[14:15], vcc";
    let a: [u64; 64] = lanes(|l| {
        if l % 2 == 0 {
            (-16i64) as u64
        } else {
            0xFFFF_FFF0
        }
    });
    let d: [u64; 64] = lanes(|l| {
        if l % 3 == 0 {
            3.0f64.to_bits()
        } else {
            0x4008_0000
        }
    });
    let w = run(src, MODE_IEEE, |w| {
        set_pair(w, 2, &a);
        set_pair(w, 4, &d);
    });
    let m = |s: usize| u64::from(w.sgpr[s]) | u64::from(w.sgpr[s + 1]) << 32;
    let even = 0x5555_5555_5555_5555u64;
    assert_eq!(m(10), even, "i64 literal sign-extended");
    assert_eq!(m(12), !even, "u64 literal zero-extended");
    let third: u64 = (0..64)
        .filter(|l| l % 3 == 0)
        .fold(0, |acc, l| acc | 1 << l);
    assert_eq!(m(14), third, "f64 literal is the high dword");
}
