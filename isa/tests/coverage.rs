//! ISA coverage of the OpenMP corpus: every instruction clang-16 emits for the
//! `examples/` programs (at -O0 and -O3, device runtime included) must be one the
//! engine executes.
//!
//! The instruction list comes from llvm-objdump-16 (mnemonics and encoding words);
//! each distinct encoding is decoded by our decoder and asked [`isa::is_executable`],
//! which runs it once through the executor. The test prints the distinct mnemonics
//! with their counts per level and fails listing the unsupported ones.

mod omp_corpus;

use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Default)]
struct Tally {
    /// mnemonic → occurrences.
    count: BTreeMap<String, usize>,
    /// mnemonic → (example line, program) of forms the engine rejects.
    unsupported: BTreeMap<String, (String, String, usize)>,
    /// Lines whose words our decoder rejects.
    undecodable: Vec<String>,
}

#[test]
fn every_corpus_instruction_is_executable() {
    let builds = omp_corpus::build_all(2);
    let mut per_opt: BTreeMap<&str, Tally> = BTreeMap::new();
    // Distinct encodings are probed once (the probe allocates a scratch wave).
    let mut verdicts: HashMap<Vec<u32>, Result<bool, String>> = HashMap::new();
    for (prog, opt, build) in &builds {
        let listing = omp_corpus::objdump(&build.image);
        let lines = omp_corpus::objdump_instructions(&listing);
        assert!(!lines.is_empty(), "{} {opt}: no instructions", prog.name);
        let tally = per_opt.entry(opt).or_default();
        for l in &lines {
            *tally.count.entry(l.mnemonic.clone()).or_default() += 1;
            let verdict = verdicts.entry(l.words.clone()).or_insert_with(|| {
                match isa::decode(&l.words, l.address) {
                    Ok((inst, _)) => Ok(isa::is_executable(&inst)),
                    Err(e) => Err(e.to_string()),
                }
            });
            match verdict {
                Ok(true) => {}
                Ok(false) => {
                    let e = tally.unsupported.entry(l.mnemonic.clone()).or_insert((
                        l.text.clone(),
                        prog.name.clone(),
                        0,
                    ));
                    e.2 += 1;
                }
                Err(e) => tally
                    .undecodable
                    .push(format!("{} ({}): {e}", l.text, prog.name)),
            }
        }
    }

    let mut all_unsupported = BTreeSet::new();
    let mut undecodable = 0;
    for (opt, t) in &per_opt {
        println!(
            "{opt}: {} distinct mnemonics, {} instructions",
            t.count.len(),
            t.count.values().sum::<usize>()
        );
        for (m, n) in &t.count {
            let flag = if t.unsupported.contains_key(m) {
                "  UNSUPPORTED"
            } else {
                ""
            };
            println!("  {m:<40} {n:>7}{flag}");
        }
        for (m, (example, prog, n)) in &t.unsupported {
            println!("{opt}: unsupported {m} ({n} uses), e.g. `{example}` in {prog}");
            all_unsupported.insert(m.clone());
        }
        for u in &t.undecodable {
            println!("{opt}: undecodable: {u}");
        }
        undecodable += t.undecodable.len();
    }
    let union: BTreeSet<&String> = per_opt.values().flat_map(|t| t.count.keys()).collect();
    println!(
        "all levels: {} distinct mnemonics, {} unsupported: {:?}",
        union.len(),
        all_unsupported.len(),
        all_unsupported
    );
    assert_eq!(undecodable, 0, "our decoder rejects corpus instructions");
    assert!(
        all_unsupported.is_empty(),
        "the engine does not execute {} corpus mnemonics: {all_unsupported:?}",
        all_unsupported.len()
    );
}

/// The probe itself: an instruction the engine executes is reported executable, and
/// an encoding the executor rejects is not (the MTBUF family is not executed).
#[test]
fn probe_tells_executed_from_unexecuted() {
    // s_add_u32 s0, s1, s2
    let (add, _) = isa::decode(&[0x8000_0201], 0).unwrap();
    assert!(isa::is_executable(&add));
    // s_endpgm / s_trap 2 stop the wave but are executed.
    let (end, _) = isa::decode(&[0xBF81_0000], 0).unwrap();
    assert!(isa::is_executable(&end));
    let (trap, _) = isa::decode(&[0xBF92_0002], 0).unwrap();
    assert!(isa::is_executable(&trap));
    // global_load_dword v1, v2, s[4:5] faults on the empty probe memory: executed.
    let words = [0xDC50_8000, 0x0104_0002];
    let (load, _) = isa::decode(&words, 0).unwrap();
    assert_eq!(load.mnemonic(), "global_load_dword");
    assert!(isa::is_executable(&load));
    // tbuffer_load_format_x v0, off, s[0:3], 0 (MTBUF) is not executed.
    let (tb, _) = isa::decode(&[0xE808_0000, 0x8000_0000], 0).unwrap();
    assert_eq!(tb.mnemonic(), "tbuffer_load_format_x");
    assert!(!isa::is_executable(&tb));
}
