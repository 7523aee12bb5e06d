//! The committed opcode tables must equal what the committed generator produces
//! from llvm-mc-16 today (a stale table fails here).

use std::path::Path;
use std::process::Command;

#[test]
fn committed_opcode_tables_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("opcodes.rs");
    let status = Command::new("python3")
        .arg(root.join("gen/gen_opcodes.py"))
        .arg(&out)
        .status()
        .expect("python3 runs the generator");
    assert!(status.success());
    let fresh = std::fs::read_to_string(&out).unwrap();
    let committed = std::fs::read_to_string(root.join("src/generated/opcodes.rs")).unwrap();
    assert!(
        fresh == committed,
        "isa/src/generated/opcodes.rs is stale: run `python3 isa/gen/gen_opcodes.py`"
    );
}
