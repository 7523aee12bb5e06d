//! `gfx90a-disasm CODE_OBJECT`: disassembles the `.text` section of an AMDGPU ELF code
//! object with this crate's decoder, in llvm-objdump-16's `-d --mcpu=gfx90a` line format.

use std::fmt::Write as _;
use std::process::ExitCode;

use isa::inst::Instruction;
use isa::opcodes::SoppOp;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: gfx90a-disasm CODE_OBJECT");
        return ExitCode::from(2);
    };
    match run(&path) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gfx90a-disasm: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Function symbols of the section, sorted by address: (address, name).
fn symbols(file: &object::File<'_>, section_index: object::SectionIndex) -> Vec<(u64, String)> {
    let mut syms: Vec<(u64, String)> = file
        .symbols()
        .filter(|s| {
            s.section_index() == Some(section_index)
                && matches!(
                    s.kind(),
                    SymbolKind::Text | SymbolKind::Label | SymbolKind::Unknown
                )
        })
        .filter_map(|s| {
            s.name()
                .ok()
                .filter(|n| !n.is_empty())
                .map(|n| (s.address(), n.to_string()))
        })
        .collect();
    syms.sort();
    syms.dedup_by(|a, b| a.0 == b.0);
    syms
}

fn run(path: &str) -> Result<String, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    let text = file.section_by_name(".text").ok_or("no .text section")?;
    let bytes = text.data().map_err(|e| e.to_string())?;
    let base = text.address();
    let syms = symbols(&file, text.index());
    let words: Vec<u32> = bytes
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "\n{path}:\tfile format elf64-amdgpu\n\nDisassembly of section .text:\n"
    );
    let mut i = 0usize;
    while i < words.len() {
        let addr = base + 4 * i as u64;
        if let Some((_, s)) = syms.iter().find(|(a, _)| *a == addr) {
            let _ = write!(out, "\n{addr:016x} <{s}>:\n");
        }
        let (line, len) = match isa::decode(&words[i..], addr) {
            Ok((inst, len)) => (format_inst(&inst, addr, len, &syms), len),
            Err(_) => ("<unknown>".to_string(), 1),
        };
        let enc: Vec<String> = words[i..(i + len).min(words.len())]
            .iter()
            .map(|w| format!("{w:08X}"))
            .collect();
        let mut l = format!("\t{line}");
        let pad = 59usize.saturating_sub(line.len());
        l.push_str(&" ".repeat(pad));
        let _ = write!(l, "// {addr:012X}: {}", enc.join(" "));
        if let Some(target) = branch_target(&inst_or_none(&words[i..], addr), addr, len) {
            if let Some((sa, sn)) = syms.iter().rev().find(|(a, _)| *a <= target) {
                if target == *sa {
                    let _ = write!(l, " <{sn}>");
                } else {
                    let _ = write!(l, " <{sn}+0x{:x}>", target - sa);
                }
            }
        }
        out.push_str(&l);
        out.push('\n');
        i += len;
    }
    Ok(out)
}

fn inst_or_none(words: &[u32], addr: u64) -> Option<Instruction> {
    isa::decode(words, addr).ok().map(|(i, _)| i)
}

/// Target of a SOPP branch.
fn branch_target(inst: &Option<Instruction>, addr: u64, len: usize) -> Option<u64> {
    let Some(Instruction::Sopp(s)) = inst else {
        return None;
    };
    let is_branch = matches!(
        s.op,
        SoppOp::SBranch
            | SoppOp::SCbranchScc0
            | SoppOp::SCbranchScc1
            | SoppOp::SCbranchVccz
            | SoppOp::SCbranchVccnz
            | SoppOp::SCbranchExecz
            | SoppOp::SCbranchExecnz
            | SoppOp::SCbranchCdbgsys
            | SoppOp::SCbranchCdbguser
            | SoppOp::SCbranchCdbgsysOrUser
            | SoppOp::SCbranchCdbgsysAndUser
    );
    is_branch.then(|| (addr + 4 * len as u64).wrapping_add_signed(4 * i64::from(s.simm16 as i16)))
}

fn format_inst(inst: &Instruction, _addr: u64, _len: usize, _syms: &[(u64, String)]) -> String {
    inst.to_string()
}
