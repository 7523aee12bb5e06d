//! The device image a recorded kernel is loaded from: `<kernel>.image`
//! (written by this project's plugin while recording, and by LLVM 17 and
//! later; LLVM 16's plugin never writes it, though its
//! `llvm-omp-kernel-replay` reads it) or a file given with `--image`: an
//! AMDGPU code object, LLVM bitcode (a `-fopenmp-target-jit` image), or the
//! offloading program itself, in which clang's linker wrapper embedded the
//! linked code object (`clang/tools/clang-linker-wrapper`, the
//! `.omp_offloading.device_image` globals of `OffloadWrapper.cpp`).

use crate::Error;
use object::elf::{EM_AMDGPU, SHT_NOBITS};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, Object, ObjectSymbol};
use std::path::Path;

/// The magic of an LLVM bitcode file (`BC` 0xC0DE).
const BITCODE_MAGIC: [u8; 4] = [b'B', b'C', 0xc0, 0xde];
/// The start of a 64-bit little-endian ELF file.
const ELF64_LE: [u8; 6] = [0x7f, b'E', b'L', b'F', 2, 1];

/// The image in `path` that defines kernel `kernel` (its `<kernel>.kd`
/// descriptor), ready for `__tgt_rtl_load_binary`.
///
/// Errors: [`Error::Read`]; [`Error::Image`] when the file is none of the
/// three kinds, or holds no code object defining the kernel.
pub fn load(path: &Path, kernel: &str) -> Result<Vec<u8>, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    let bad = |what: String| Error::Image {
        path: path.to_owned(),
        what,
    };
    if bytes.starts_with(&BITCODE_MAGIC) {
        // Compiled by the plugin (its JIT); it reports a missing kernel.
        return Ok(bytes);
    }
    if !bytes.starts_with(&ELF64_LE) {
        return Err(bad(
            "not an AMDGPU code object, LLVM bitcode or a 64-bit ELF program".into(),
        ));
    }
    if machine(&bytes) == Some(EM_AMDGPU) {
        return match defines_kernel(&bytes, kernel) {
            Ok(true) => Ok(bytes),
            Ok(false) => Err(bad(format!("the code object defines no kernel {kernel}"))),
            Err(e) => Err(bad(format!("not a readable code object: {e}"))),
        };
    }
    // A host program: look for the code objects embedded in it.
    let mut found = 0;
    for start in embedded_starts(&bytes) {
        let Some(len) = elf_extent(&bytes[start..]) else {
            continue;
        };
        let candidate = &bytes[start..start + len];
        if let Ok(defines) = defines_kernel(candidate, kernel) {
            found += 1;
            if defines {
                return Ok(candidate.to_vec());
            }
        }
    }
    Err(bad(format!(
        "none of the {found} AMDGPU code object(s) embedded in the program defines kernel {kernel}"
    )))
}

/// `e_machine` of an ELF header.
fn machine(bytes: &[u8]) -> Option<u16> {
    bytes.get(18..20).map(|b| u16::from_le_bytes([b[0], b[1]]))
}

/// Offsets in `bytes` (after the first) where a 64-bit little-endian
/// AMDGPU ELF header starts.
fn embedded_starts(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    (1..bytes.len().saturating_sub(64)).filter(move |&i| {
        bytes[i] == 0x7f
            && bytes[i..].starts_with(&ELF64_LE)
            && machine(&bytes[i..]) == Some(EM_AMDGPU)
    })
}

/// The length of the ELF file at the start of `data` (which may go on
/// past it): the furthest end of its headers, header tables, sections
/// and segments; `None` when the headers do not parse or reach past
/// `data`.
fn elf_extent(data: &[u8]) -> Option<usize> {
    let header = object::elf::FileHeader64::<Endianness>::parse(data).ok()?;
    let e = header.endian().ok()?;
    let mut end = u64::from(header.e_ehsize(e));
    let phnum = u64::from(header.e_phnum(e));
    let shnum = header.shnum(e, data).ok()?;
    end = end.max(header.e_phoff(e) + phnum * u64::from(header.e_phentsize(e)));
    end = end.max(header.e_shoff(e) + shnum as u64 * u64::from(header.e_shentsize(e)));
    for s in header.section_headers(e, data).ok()? {
        if s.sh_type(e) != SHT_NOBITS {
            end = end.max(s.sh_offset(e).checked_add(s.sh_size(e))?);
        }
    }
    for p in header.program_headers(e, data).ok()? {
        end = end.max(p.p_offset(e).checked_add(p.p_filesz(e))?);
    }
    usize::try_from(end).ok().filter(|&n| n <= data.len())
}

/// Whether the code object `bytes` has the symbol `<kernel>.kd`.
fn defines_kernel(bytes: &[u8], kernel: &str) -> Result<bool, object::Error> {
    let file = object::File::parse(bytes)?;
    let kd = format!("{kernel}.kd");
    Ok(file
        .symbols()
        .chain(file.dynamic_symbols())
        .any(|s| s.name() == Ok(kd.as_str())))
}
