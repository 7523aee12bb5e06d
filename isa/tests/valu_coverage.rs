//! Every VALU opcode of the generated tables executes, except a short documented list
//! (graphics-only and legacy ops, MFMA), which must answer `Fault::Unsupported`
//! naming the instruction instead of computing something.

use isa::inst::{Instruction, Valu, ValuEncoding, Vop3p};
use isa::opcodes::{Vop3pOp, VopOp};
use isa::Operand;

/// VALU opcodes deliberately left unsupported, with the reason (see the report).
const UNSUPPORTED: [&str; 8] = [
    "v_cubeid_f32", // graphics cube-map ops
    "v_cubesc_f32",
    "v_cubetc_f32",
    "v_cubema_f32",
    "v_exp_legacy_f32", // legacy precision rules not documented for gfx90a
    "v_log_legacy_f32",
    "v_screen_partition_4se_b32", // graphics
    "v_cvt_pkaccum_u8_f32",       // deprecated graphics op
];

fn vop3(op: VopOp) -> Instruction {
    // Ops without a VOP3 form (v_swap_b32) use their e32 operand shape.
    let shape = match op.shape() {
        [0, 0, 0, 0, 0] => op.e32_shape().unwrap_or([0; 5]),
        s => s,
    };
    let [wd, wsd, w0, w1, w2] = shape;
    let sreg = |code: u8, count: u8| Operand::Sreg { code, count };
    let vgpr = |index: u8, count: u8| Operand::Vgpr { index, count };
    let n = op as u16;
    let vdst = (wd > 0).then(|| {
        if n < 0x100 || op == VopOp::VReadlaneB32 {
            sreg(10, wd)
        } else {
            vgpr(20, wd)
        }
    });
    Instruction::Valu(Valu {
        op,
        encoding: ValuEncoding::Vop3,
        vdst,
        sdst: (wsd > 0).then(|| sreg(12, wsd)),
        src: [
            (w0 > 0).then(|| vgpr(0, w0)),
            (w1 > 0).then(|| vgpr(4, w1)),
            (w2 > 0).then(|| vgpr(8, w2)),
        ],
        abs: 0,
        neg: 0,
        clamp: false,
        omod: 0,
        op_sel: 0,
    })
}

#[test]
fn every_valu_opcode_executes_except_the_documented_ones() {
    let mut missing = Vec::new();
    for &op in VopOp::ALL {
        let inst = vop3(op);
        let ok = isa::is_executable(&inst);
        let expected_unsupported = UNSUPPORTED.contains(&op.mnemonic());
        if ok == expected_unsupported {
            missing.push(format!("{} (executes: {ok})", op.mnemonic()));
        }
        if !ok {
            match isa::support::probe(&inst) {
                Some(isa::Fault::Unsupported { mnemonic, .. }) => {
                    assert!(
                        mnemonic.starts_with(op.mnemonic()),
                        "{mnemonic} names the op"
                    )
                }
                other => panic!("{}: {other:?}", op.mnemonic()),
            }
        }
    }
    assert!(missing.is_empty(), "unexpected support status: {missing:?}");
}

#[test]
fn every_vop3p_opcode_but_mfma_executes() {
    for &op in Vop3pOp::ALL {
        let [wd, w0, w1, w2] = op.shape();
        let v = |index: u8, count: u8| Operand::Vgpr { index, count };
        let inst = Instruction::Vop3p(Vop3p {
            op,
            vdst: (wd > 0).then(|| v(20, wd)),
            src: [
                (w0 > 0).then(|| v(0, w0)),
                (w1 > 0).then(|| v(4, w1)),
                (w2 > 0).then(|| v(8, w2)),
            ],
            op_sel: 0,
            op_sel_hi: 7,
            neg_lo: 0,
            neg_hi: 0,
            clamp: false,
            mai: None,
        });
        let mfma = op.mnemonic().starts_with("v_mfma");
        assert_eq!(isa::is_executable(&inst), !mfma, "{}", op.mnemonic());
    }
}
