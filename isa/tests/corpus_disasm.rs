//! Our disassembler against llvm-objdump-16 on every device image of the OpenMP
//! corpus (`examples/`, -O0 and -O3): the listings (headers, symbol lines and every
//! instruction line with its encoding comment) must be identical.

mod omp_corpus;

use std::process::Command;

#[test]
fn corpus_disassembly_equals_llvm_objdump() {
    let builds = omp_corpus::build_all(2);
    let mut failures = Vec::new();
    let mut total = 0usize;
    for (prog, opt, build) in &builds {
        let theirs = omp_corpus::objdump(&build.image);
        let out = Command::new(env!("CARGO_BIN_EXE_gfx90a-disasm"))
            .arg(&build.image)
            .output()
            .expect("gfx90a-disasm runs");
        assert!(
            out.status.success(),
            "{} {opt}: {}",
            prog.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = String::from_utf8_lossy(&out.stdout).into_owned();
        let a: Vec<&str> = theirs.lines().collect();
        let b: Vec<&str> = ours.lines().collect();
        let n = a.iter().filter(|l| l.starts_with('\t')).count();
        total += n;
        let mut diffs = Vec::new();
        for k in 0..a.len().max(b.len()) {
            let (x, y) = (a.get(k).copied(), b.get(k).copied());
            if x != y {
                diffs.push(format!(
                    "  line {k}:\n    llvm: {}\n    ours: {}",
                    x.unwrap_or("<none>"),
                    y.unwrap_or("<none>")
                ));
            }
        }
        println!(
            "{:<16} {opt}: {n:>6} instruction lines, {} differ",
            prog.name,
            diffs.len()
        );
        if !diffs.is_empty() {
            diffs.truncate(20);
            failures.push(format!("{} {opt}:\n{}", prog.name, diffs.join("\n")));
        }
    }
    println!("{total} instruction lines compared");
    assert!(
        failures.is_empty(),
        "listings differ from llvm-objdump-16:\n{}",
        failures.join("\n")
    );
}
