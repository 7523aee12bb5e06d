//! Host-side inspection of device images: what they are, which GPU they
//! target, the values of small globals, and the kernels' metadata.
//!
//! Everything here works on the image bytes alone (no HSA, no device) and is
//! safe on arbitrary input: malformed or truncated images give an
//! [`ImageError`] (or [`ImageKind::Other`]), never a panic. Images need no
//! particular alignment (a misaligned one is copied once to an aligned buffer
//! before parsing).
//!
//! Target IDs, the metadata note and the ELF view come from the
//! `code_object` crate (shared with the virtual device's loader and
//! `amdhsa-loader`); this module adds what only the plugin does.
//!
//! Facts followed: LLVM 16's `openmp/libomptarget/plugins-nextgen/amdgpu/src/rtl.cpp`
//! (`is_valid_binary`, target IDs through `isImageCompatibleWithEnv` in
//! `plugins-nextgen/amdgpu/utils/UtilitiesRTL.h`), `PluginInterface.cpp` and
//! `GlobalHandler.cpp` under `plugins-nextgen/common/PluginInterface/` (symbol
//! lookup, `<kernel>_exec_mode`), and LLVM's `llvm/docs/AMDGPUUsage.rst`, "Target
//! ID" and "Code Object V4 Metadata".

use code_object::elf::{with_amdgpu_elf, with_elf, Elf, EM_AMDGPU};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian as LE;

use crate::launch::ExecMode;

pub use code_object::elf::is_elf64_le;
use code_object::Error as CodeObjectError;
pub use code_object::{target_ids_compatible, TargetId};

/// Metadata of one kernel (an `amdhsa.kernels` entry of the
/// `NT_AMDGPU_METADATA` note), as [`kernel_metadata`] reads it.
pub type KernelInfo = code_object::KernelMetadata;

/// One argument of a kernel from its metadata (`.args` entry).
pub type KernelArgInfo = code_object::KernelArgMetadata;

/// What a device image is ([`classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// A 64-bit ELF whose `e_machine` is `EM_AMDGPU` (224) and whose headers
    /// parse.
    AmdgpuElf,
    /// LLVM bitcode of a module whose target triple's architecture is
    /// `amdgcn`, compiled at load by [`crate::jit`] (LLVM 16's
    /// `plugins-nextgen/common/PluginInterface/JIT.cpp`).
    AmdgcnBitcode,
    /// Anything else (foreign ELF, NVPTX, malformed, other bitcode...).
    Other,
}

/// Errors of image inspection. Messages name what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// What the shared code-object rules found wrong: not an ELF, malformed
    /// structures, another machine, not AMDHSA, an unknown target, a
    /// missing or invalid metadata note ([`code_object::Error`]).
    #[error(transparent)]
    CodeObject(#[from] code_object::Error),
    /// An ELF whose header says AMDGPU but whose structures are damaged.
    #[error("corrupt AMDGPU ELF code object: {0}")]
    CorruptAmdgpu(String),
    /// A symbol's value lies outside its section or the file.
    #[error("symbol {symbol} (value {value:#x}, size {size}) lies outside the image data")]
    SymbolOutOfBounds {
        /// Symbol name.
        symbol: String,
        /// `st_value`.
        value: u64,
        /// `st_size`.
        size: u64,
    },
    /// A `<kernel>_exec_mode` global holds a value outside {1, 2, 3}.
    #[error("kernel {kernel}: invalid execution mode {value} in {kernel}_exec_mode")]
    BadExecMode {
        /// Kernel name.
        kernel: String,
        /// The byte found.
        value: u8,
    },
}

impl From<object::read::Error> for ImageError {
    fn from(e: object::read::Error) -> Self {
        ImageError::CodeObject(e.into())
    }
}

/// [`CodeObjectError::Malformed`] as an [`ImageError`].
fn malformed(why: String) -> ImageError {
    ImageError::CodeObject(CodeObjectError::Malformed(why))
}

// ---------------------------------------------------------------------------
// Classification

/// Classifies device image bytes with the semantics of the C++ plugin's
/// `is_valid_binary` (`__tgt_rtl_is_valid_binary` in LLVM 16's
/// `plugins-nextgen/common/PluginInterface/PluginInterface.cpp`):
/// [`ImageKind::AmdgpuElf`] for a parsable
/// 64-bit ELF with `e_machine == EM_AMDGPU`, [`ImageKind::AmdgcnBitcode`] for
/// bitcode whose module's target triple has arch `amdgcn` (read by libLLVM,
/// [`crate::jit::is_amdgcn_bitcode`]; only images that begin with the
/// bitcode magic get that far, so an ELF image costs no LLVM work), else
/// [`ImageKind::Other`]. Side-effect free, never panics.
///
/// Differences from LLVM: 32-bit ELFs (R600) are `Other`; LLVM reads the
/// triple from the module's IR symbol table, we from the module itself, so
/// bitcode without a symbol table is classified too.
pub fn classify(bytes: &[u8]) -> ImageKind {
    if bytes.starts_with(b"\x7fELF") {
        let is_amdgpu = with_elf(bytes, |file| {
            Ok::<_, ImageError>(file.header.e_machine(LE) == EM_AMDGPU)
        });
        return if matches!(is_amdgpu, Ok(true)) {
            ImageKind::AmdgpuElf
        } else {
            ImageKind::Other
        };
    }
    if crate::jit::is_amdgcn_bitcode(bytes) {
        ImageKind::AmdgcnBitcode
    } else {
        ImageKind::Other
    }
}

/// How many bytes a 64-bit little-endian ELF image spans by its own
/// headers: the furthest end of the ELF header, the program header table,
/// the section header table and every segment's file data (linkers put
/// section data inside segments or before the section header table). Used
/// to bound what is read of an image whose given end may be wrong.
///
/// `read(offset, len)` returns `len` image bytes at `offset`, or `None`
/// when they lie beyond what the caller may read.
///
/// Errors: [`CodeObjectError::NotElf`] when the header is missing or not ELF64
/// LE; [`CodeObjectError::Malformed`] when a header table lies outside what
/// `read` allows or the sizes overflow.
pub fn elf_extent<'a>(read: impl Fn(u64, u64) -> Option<&'a [u8]>) -> Result<u64, ImageError> {
    let head = read(0, 64).ok_or(ImageError::CodeObject(CodeObjectError::NotElf))?;
    if !is_elf64_le(head) {
        return Err(ImageError::CodeObject(CodeObjectError::NotElf));
    }
    let u16_at = |b: &[u8], o: usize| u64::from(u16::from_le_bytes([b[o], b[o + 1]]));
    let u64_at = |b: &[u8], o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(w)
    };
    let overflow = || malformed("ELF header sizes overflow".into());
    let table_end = |off: u64, entsize: u64, num: u64| -> Result<u64, ImageError> {
        if num == 0 {
            return Ok(0);
        }
        entsize
            .checked_mul(num)
            .and_then(|n| n.checked_add(off))
            .ok_or_else(overflow)
    };
    let (phoff, shoff) = (u64_at(head, 32), u64_at(head, 40));
    let (phentsize, phnum) = (u16_at(head, 54), u16_at(head, 56));
    let (shentsize, shnum) = (u16_at(head, 58), u16_at(head, 60));
    let mut extent = 64u64
        .max(table_end(phoff, phentsize, phnum)?)
        .max(table_end(shoff, shentsize, shnum)?);
    if phnum > 0 {
        if phentsize < 56 {
            return Err(malformed(format!(
                "program header entries of {phentsize} bytes (64-bit ELF needs 56)"
            )));
        }
        let table = read(phoff, phentsize * phnum).ok_or_else(|| {
            malformed(format!(
                "the program header table ({phnum} entries at offset {phoff}) lies outside the image"
            ))
        })?;
        for entry in table.chunks_exact(phentsize as usize) {
            let end = u64_at(entry, 8)
                .checked_add(u64_at(entry, 32))
                .ok_or_else(overflow)?;
            extent = extent.max(end);
        }
    }
    Ok(extent)
}

/// Why `bytes` is not a usable AMDGPU ELF, or `Ok` when it is: the
/// specific error of [`classify`]'s `Other` answer, with an image that
/// declares `EM_AMDGPU` but does not parse called corrupt
/// ([`ImageError::CorruptAmdgpu`]).
///
/// Errors: [`CodeObjectError::NotElf`], [`CodeObjectError::WrongMachine`],
/// [`ImageError::CorruptAmdgpu`].
pub fn check_amdgpu_elf(bytes: &[u8]) -> Result<(), ImageError> {
    let says_amdgpu = bytes.len() >= 20 && u16::from_le_bytes([bytes[18], bytes[19]]) == EM_AMDGPU;
    match with_amdgpu_elf(bytes, |_| Ok(())) {
        Err(ImageError::CodeObject(CodeObjectError::Malformed(why))) if says_amdgpu => {
            Err(ImageError::CorruptAmdgpu(why))
        }
        r => r,
    }
}

/// The target ID an AMDGPU ELF image declares in its header (see
/// [`TargetId::from_elf_flags`]).
///
/// Errors: [`CodeObjectError::NotElf`] / [`CodeObjectError::Malformed`] /
/// [`CodeObjectError::WrongMachine`] for non-AMDGPU input,
/// [`CodeObjectError::NotAmdhsa`] when OS/ABI is not 64,
/// [`CodeObjectError::UnknownTarget`] for unknown `e_flags` or ABI version.
pub fn elf_target_id(bytes: &[u8]) -> Result<TargetId, ImageError> {
    Ok(code_object::elf_target_id(bytes)?)
}

// ---------------------------------------------------------------------------
// Symbols

/// A symbol found by [`find_symbol`].
struct FoundSymbol {
    value: u64,
    size: u64,
    /// File byte range of the symbol's data, `None` for NOBITS (zero) data.
    data: Option<(usize, usize)>,
    /// Whether the symbol lives in a NOBITS section (`.bss`).
    nobits: bool,
}

/// Looks `name` up as LLVM's plugin does (`GenericGlobalHandlerTy`
/// in LLVM 16's `plugins-nextgen/common/PluginInterface/GlobalHandler.cpp`):
/// when the image has a
/// hash section (`.gnu.hash` or `.hash`), only the dynamic symbol table is
/// searched; otherwise `.symtab`. Undefined symbols are not found.
fn find_symbol(file: &Elf<'_>, name: &str) -> Result<Option<FoundSymbol>, ImageError> {
    let data = file.data;
    let sections = &file.sections;
    let has_hash = sections
        .iter()
        .any(|s| matches!(s.sh_type(LE), elf::SHT_HASH | elf::SHT_GNU_HASH));
    let table = if has_hash {
        file.symbols(elf::SHT_DYNSYM)?
    } else {
        file.symbols(elf::SHT_SYMTAB)?
    };
    for sym in table.symbols() {
        if sym.st_shndx(LE) == elf::SHN_UNDEF {
            continue;
        }
        let Ok(sym_name) = sym.name(LE, table.strings()) else {
            continue;
        };
        if sym_name != name.as_bytes() {
            continue;
        }
        let value = sym.st_value(LE);
        let size = sym.st_size(LE);
        let out_of_bounds = || ImageError::SymbolOutOfBounds {
            symbol: name.to_string(),
            value,
            size,
        };
        let shndx = sym.st_shndx(LE);
        if shndx == elf::SHN_ABS || shndx >= elf::SHN_LORESERVE {
            // Absolute value: LLVM reads at image start + st_value.
            let start = usize::try_from(value).map_err(|_| out_of_bounds())?;
            let len = usize::try_from(size).map_err(|_| out_of_bounds())?;
            let end = start.checked_add(len).ok_or_else(out_of_bounds)?;
            let data_range = (end <= data.len()).then_some((start, end));
            return Ok(Some(FoundSymbol {
                value,
                size,
                data: data_range,
                nobits: false,
            }));
        }
        let section = sections.section(object::SectionIndex(usize::from(shndx)))?;
        if section.sh_type(LE) == elf::SHT_NOBITS {
            return Ok(Some(FoundSymbol {
                value,
                size,
                data: None,
                nobits: true,
            }));
        }
        // Translate the address to a file offset through its section (equal
        // to st_value for lld's .rodata, where LLVM uses st_value directly).
        let rel = value
            .checked_sub(section.sh_addr(LE))
            .ok_or_else(out_of_bounds)?;
        let end_rel = rel.checked_add(size).ok_or_else(out_of_bounds)?;
        if end_rel > section.sh_size(LE) {
            return Err(out_of_bounds());
        }
        let start = section
            .sh_offset(LE)
            .checked_add(rel)
            .ok_or_else(out_of_bounds)?;
        let start = usize::try_from(start).map_err(|_| out_of_bounds())?;
        let len = usize::try_from(size).map_err(|_| out_of_bounds())?;
        let end = start.checked_add(len).ok_or_else(out_of_bounds)?;
        if end > data.len() {
            return Err(out_of_bounds());
        }
        return Ok(Some(FoundSymbol {
            value,
            size,
            data: Some((start, end)),
            nobits: false,
        }));
    }
    Ok(None)
}

/// Reads the 1-byte global `symbol` from the image bytes (e.g.
/// `<kernel>_exec_mode`, read by `GenericDeviceTy::getExecutionModeForKernel`
/// in LLVM 16's `PluginInterface.cpp`).
///
/// `Ok(None)` when the symbol is absent or its `st_size` is not 1 (LLVM then
/// uses a default). A symbol in `.bss` reads as 0.
///
/// Errors: not an AMDGPU ELF / malformed ([`CodeObjectError::NotElf`],
/// [`CodeObjectError::Malformed`], [`CodeObjectError::WrongMachine`]); the symbol's
/// byte lies outside the file ([`ImageError::SymbolOutOfBounds`]).
pub fn read_global_u8(bytes: &[u8], symbol: &str) -> Result<Option<u8>, ImageError> {
    with_amdgpu_elf(bytes, |file| {
        let Some(found) = find_symbol(file, symbol)? else {
            return Ok(None);
        };
        if found.size != 1 {
            return Ok(None);
        }
        if found.nobits {
            return Ok(Some(0));
        }
        match found.data {
            Some((start, _)) => {
                file.data
                    .get(start)
                    .copied()
                    .map(Some)
                    .ok_or(ImageError::SymbolOutOfBounds {
                        symbol: symbol.to_string(),
                        value: found.value,
                        size: found.size,
                    })
            }
            None => Err(ImageError::SymbolOutOfBounds {
                symbol: symbol.to_string(),
                value: found.value,
                size: found.size,
            }),
        }
    })
}

/// `st_size` of `symbol` (bytes), `Ok(None)` when absent; same lookup and
/// errors as [`read_global_u8`].
pub fn symbol_size(bytes: &[u8], symbol: &str) -> Result<Option<u64>, ImageError> {
    with_amdgpu_elf(bytes, |file| Ok(find_symbol(file, symbol)?.map(|s| s.size)))
}

/// The execution mode of kernel `kernel` as LLVM 16's plugin decides it at
/// load (`GenericDeviceTy::getExecutionModeForKernel`, `PluginInterface.cpp`):
/// the byte of
/// `<kernel>_exec_mode`; missing symbol or
/// `st_size != 1` → [`ExecMode::Spmd`].
///
/// Errors: those of [`read_global_u8`]; [`ImageError::BadExecMode`] for a
/// value outside {1, 2, 3} (LLVM fails the load).
pub fn kernel_exec_mode(bytes: &[u8], kernel: &str) -> Result<ExecMode, ImageError> {
    match read_global_u8(bytes, &format!("{kernel}_exec_mode"))? {
        None => Ok(ExecMode::Spmd),
        Some(v) => ExecMode::from_raw(v).ok_or(ImageError::BadExecMode {
            kernel: kernel.to_string(),
            value: v,
        }),
    }
}

// ---------------------------------------------------------------------------
// Metadata

/// The kernels described by the image's `NT_AMDGPU_METADATA` note (owner
/// `AMDGPU`, code object V3+), in note order
/// ([`code_object::kernel_metadata`]).
///
/// Errors: not an AMDGPU ELF / malformed; [`CodeObjectError::NoMetadata`] when
/// there is no such note; [`CodeObjectError::Metadata`] when the note is not a
/// msgpack map with an `amdhsa.kernels` array of maps each having `.name`.
pub fn kernel_metadata(bytes: &[u8]) -> Result<Vec<KernelInfo>, ImageError> {
    Ok(code_object::kernel_metadata(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_garbage() {
        assert_eq!(classify(b""), ImageKind::Other);
        assert_eq!(classify(b"\x7fELF"), ImageKind::Other);
        assert_eq!(classify(b"BC\xc0\xde"), ImageKind::Other);
        assert_eq!(
            classify(&[0xde, 0xc0, 0x17, 0x0b, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
            ImageKind::Other
        );
        assert_eq!(classify(&[0u8; 4096]), ImageKind::Other);
        assert!(matches!(
            elf_target_id(b"hello"),
            Err(ImageError::CodeObject(CodeObjectError::NotElf))
        ));
        assert!(matches!(
            kernel_metadata(&[0u8; 10]),
            Err(ImageError::CodeObject(CodeObjectError::NotElf))
        ));
    }
}
