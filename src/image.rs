//! Host-side inspection of device images: what they are, which GPU they
//! target, the values of small globals, and the kernels' metadata.
//!
//! Everything here works on the image bytes alone (no HSA, no device) and is
//! safe on arbitrary input: malformed or truncated images give an
//! [`ImageError`] (or [`ImageKind::Other`]), never a panic. Images need no
//! particular alignment (a misaligned one is copied once to an aligned buffer
//! before parsing).
//!
//! Facts followed: spec §2.1 (`is_valid_binary`), §4.1 (target IDs), §4.2
//! (symbol lookup, `<kernel>_exec_mode`), §4.4 (code object V4);
//! `llvm/BinaryFormat/ELF.h` of LLVM 16 (`EF_AMDGPU_*` values); LLVM's
//! AMDGPUUsage (the `NT_AMDGPU_METADATA` note, a msgpack map).

use std::fmt;

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, SectionTable, Sym, SymbolTable};
use object::LittleEndian as LE;

use crate::launch::ExecMode;

/// `EM_AMDGPU`.
const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`.
const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA`: code object V3+ metadata note type (owner `AMDGPU`).
const NT_AMDGPU_METADATA: u32 = 32;
/// Prefix of full target-ID strings (`amdgcn-amd-amdhsa--gfx90a:xnack+`).
const AMDHSA_TRIPLE: &str = "amdgcn-amd-amdhsa";

/// An AMDGPU target ID: a processor and the `sramecc` / `xnack` settings
/// (spec §4.1). `None` for a feature means "any" (or not named).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// Processor name, e.g. `gfx90a`.
    pub processor: String,
    /// `xnack`: `Some(true)` = `xnack+`, `Some(false)` = `xnack-`, `None` = any.
    pub xnack: Option<bool>,
    /// `sramecc`: `Some(true)` = `sramecc+`, `Some(false)` = `sramecc-`, `None` = any.
    pub sramecc: Option<bool>,
}

impl fmt::Display for TargetId {
    /// Canonical form: `processor[:sramecc±][:xnack±]` (LLVM's order).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        let sign = |on: bool| if on { '+' } else { '-' };
        if let Some(on) = self.sramecc {
            write!(f, ":sramecc{}", sign(on))?;
        }
        if let Some(on) = self.xnack {
            write!(f, ":xnack{}", sign(on))?;
        }
        Ok(())
    }
}

/// Processor names by `EF_AMDGPU_MACH` value (LLVM 16 `ELF.h`).
const MACH_NAMES: &[(u32, &str)] = &[
    (0x020, "gfx600"),
    (0x021, "gfx601"),
    (0x022, "gfx700"),
    (0x023, "gfx701"),
    (0x024, "gfx702"),
    (0x025, "gfx703"),
    (0x026, "gfx704"),
    (0x028, "gfx801"),
    (0x029, "gfx802"),
    (0x02a, "gfx803"),
    (0x02b, "gfx810"),
    (0x02c, "gfx900"),
    (0x02d, "gfx902"),
    (0x02e, "gfx904"),
    (0x02f, "gfx906"),
    (0x030, "gfx908"),
    (0x031, "gfx909"),
    (0x032, "gfx90c"),
    (0x033, "gfx1010"),
    (0x034, "gfx1011"),
    (0x035, "gfx1012"),
    (0x036, "gfx1030"),
    (0x037, "gfx1031"),
    (0x038, "gfx1032"),
    (0x039, "gfx1033"),
    (0x03a, "gfx602"),
    (0x03b, "gfx705"),
    (0x03c, "gfx805"),
    (0x03d, "gfx1035"),
    (0x03e, "gfx1034"),
    (0x03f, "gfx90a"),
    (0x040, "gfx940"),
    (0x041, "gfx1100"),
    (0x042, "gfx1013"),
    (0x044, "gfx1103"),
    (0x045, "gfx1036"),
    (0x046, "gfx1101"),
    (0x047, "gfx1102"),
];

impl TargetId {
    /// Parses `processor[:feature...]`, or the full ISA-name form
    /// `amdgcn-amd-amdhsa--processor[:feature...]` (prefix and the `-` after
    /// it stripped, as LLVM does for agent ISA names).
    ///
    /// Features are recognized as LLVM's `parseTargetID` does (spec §4.1):
    /// `sramecc+`/`sramecc-`/`xnack+`/`xnack-` anywhere after the first `:`
    /// (`+` wins when both signs appear); anything else is ignored. `None`
    /// when the processor part is empty.
    pub fn parse(s: &str) -> Option<TargetId> {
        let s = match s.strip_prefix(AMDHSA_TRIPLE) {
            Some(rest) => rest.trim_start_matches('-'),
            None => s,
        };
        let (processor, features) = s.split_once(':').unwrap_or((s, ""));
        if processor.is_empty() {
            return None;
        }
        let feature = |name: &str| {
            if features.contains(&format!("{name}+")) {
                Some(true)
            } else if features.contains(&format!("{name}-")) {
                Some(false)
            } else {
                None
            }
        };
        Some(TargetId {
            processor: processor.to_string(),
            xnack: feature("xnack"),
            sramecc: feature("sramecc"),
        })
    }

    /// The target ID an AMDHSA code object declares in its ELF header:
    /// `e_flags` and `EI_ABIVERSION` (spec §4.4).
    ///
    /// - ABI version 2 or 3 (code object V4/V5): `EF_AMDGPU_FEATURE_XNACK_V4`
    ///   / `SRAMECC_V4` fields: ANY or UNSUPPORTED → `None`, OFF → `Some(false)`,
    ///   ON → `Some(true)`.
    /// - ABI version 1 (V3): bit set → `Some(true)`, clear → `None` (V3
    ///   cannot tell "off" from "unsupported").
    /// - Other ABI versions (V2 keeps its target in a note) or an unknown
    ///   `EF_AMDGPU_MACH` → `None`.
    pub fn from_elf_flags(e_flags: u32, abi_version: u8) -> Option<TargetId> {
        let mach = e_flags & 0xff;
        let processor = MACH_NAMES.iter().find(|(m, _)| *m == mach)?.1;
        let (xnack, sramecc) = match abi_version {
            1 => (
                (e_flags & 0x100 != 0).then_some(true),
                (e_flags & 0x200 != 0).then_some(true),
            ),
            2 | 3 => {
                let v4 = |bits: u32| match bits {
                    2 => Some(false),
                    3 => Some(true),
                    _ => None,
                };
                (v4((e_flags >> 8) & 3), v4((e_flags >> 10) & 3))
            }
            _ => return None,
        };
        Some(TargetId {
            processor: processor.to_string(),
            xnack,
            sramecc,
        })
    }

    /// Whether an image built for `self` may run on an agent whose target ID
    /// is `agent` (LLVM 16 `isImageCompatibleWithEnv` on parsed IDs, spec
    /// §4.1): the image's processor must contain the agent's (substring, as
    /// LLVM tests it); the image may name at most as many features as the
    /// agent; every feature the image names must be named by the agent with
    /// the same sign.
    pub fn is_compatible(&self, agent: &TargetId) -> bool {
        if self == agent {
            return true;
        }
        if self.processor.is_empty()
            || agent.processor.is_empty()
            || !self.processor.contains(agent.processor.as_str())
        {
            return false;
        }
        let count =
            |t: &TargetId| usize::from(t.xnack.is_some()) + usize::from(t.sramecc.is_some());
        if count(self) > count(agent) {
            return false;
        }
        let ok = |img: Option<bool>, env: Option<bool>| match img {
            None => true,
            Some(v) => env == Some(v),
        };
        ok(self.xnack, agent.xnack) && ok(self.sramecc, agent.sramecc)
    }
}

/// LLVM 16's compatibility test on the raw strings (spec §4.1): an exact
/// string match is compatible (even for strings that do not parse), else
/// both must parse and [`TargetId::is_compatible`] decides.
pub fn target_ids_compatible(image: &str, agent: &str) -> bool {
    if image == agent {
        return true;
    }
    match (TargetId::parse(image), TargetId::parse(agent)) {
        (Some(i), Some(a)) => i.is_compatible(&a),
        _ => false,
    }
}

/// What a device image is ([`classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// A 64-bit ELF whose `e_machine` is `EM_AMDGPU` (224) and whose headers
    /// parse.
    AmdgpuElf,
    /// LLVM bitcode whose IR symbol table names an `amdgcn` target triple
    /// (would need JIT compilation, spec §4.5).
    AmdgcnBitcode,
    /// Anything else (foreign ELF, NVPTX, malformed, other bitcode...).
    Other,
}

/// Errors of image inspection. Messages name what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The bytes do not start with a 64-bit little-endian ELF header.
    #[error("device image is not a 64-bit little-endian ELF file")]
    NotElf,
    /// The ELF structures (headers, sections, symbols, notes) are malformed.
    #[error("malformed ELF device image: {0}")]
    Malformed(String),
    /// An ELF whose header says AMDGPU but whose structures are damaged.
    #[error("corrupt AMDGPU ELF code object: {0}")]
    CorruptAmdgpu(String),
    /// An ELF for another machine.
    #[error("device image is an ELF for machine {0}, not EM_AMDGPU (224)")]
    WrongMachine(u16),
    /// Not an AMDHSA code object (OS/ABI byte), so `e_flags` cannot be read.
    #[error("device image has OS/ABI {0}, not ELFOSABI_AMDGPU_HSA (64)")]
    NotAmdhsa(u8),
    /// `e_flags` name no processor we know, or the ABI version is unsupported.
    #[error(
        "unknown AMDGPU target in ELF header: e_flags {e_flags:#x}, ABI version {abi_version}"
    )]
    UnknownTarget {
        /// `e_flags` of the image.
        e_flags: u32,
        /// `EI_ABIVERSION` of the image.
        abi_version: u8,
    },
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
    /// The image has no `NT_AMDGPU_METADATA` note.
    #[error("device image has no NT_AMDGPU_METADATA note")]
    NoMetadata,
    /// The metadata note is not the msgpack document expected.
    #[error("invalid AMDGPU metadata: {0}")]
    BadMetadata(String),
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
        ImageError::Malformed(e.to_string())
    }
}

/// One argument of a kernel from its metadata (`.args` entry).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelArgInfo {
    /// `.offset` in the kernarg segment, bytes.
    pub offset: u32,
    /// `.size`, bytes.
    pub size: u32,
    /// `.value_kind` (`by_value`, `global_buffer`, `hidden_*`...).
    pub value_kind: String,
}

impl KernelArgInfo {
    /// Whether this is an implicit (`hidden_*`) argument.
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// Metadata of one kernel (an `amdhsa.kernels` entry of the
/// `NT_AMDGPU_METADATA` note). Absent numeric keys read as 0, absent flags
/// as false.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelInfo {
    /// `.name`: the kernel's name (the offload entry name).
    pub name: String,
    /// `.symbol`: the kernel descriptor symbol (`<name>.kd`).
    pub symbol: String,
    /// `.kernarg_segment_size`, bytes.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`, bytes.
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: static LDS, bytes.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: scratch per work-item, bytes.
    pub private_segment_fixed_size: u32,
    /// `.max_flat_workgroup_size`, work-items (0 if absent).
    pub max_flat_workgroup_size: u32,
    /// `.wavefront_size`, work-items.
    pub wavefront_size: u32,
    /// `.uses_dynamic_stack`.
    pub uses_dynamic_stack: bool,
    /// `.args`, in order, hidden ones included.
    pub args: Vec<KernelArgInfo>,
}

impl KernelInfo {
    /// Number of explicit (non-`hidden_*`) arguments.
    pub fn explicit_arg_count(&self) -> usize {
        self.args.iter().filter(|a| !a.is_hidden()).count()
    }

    /// Sizes in bytes of the explicit arguments, in order.
    pub fn explicit_arg_sizes(&self) -> Vec<u32> {
        self.args
            .iter()
            .filter(|a| !a.is_hidden())
            .map(|a| a.size)
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Classification

/// Classifies device image bytes with the semantics of the C++ plugin's
/// `is_valid_binary` (spec §2.1): [`ImageKind::AmdgpuElf`] for a parsable
/// 64-bit ELF with `e_machine == EM_AMDGPU`, [`ImageKind::AmdgcnBitcode`] for
/// bitcode whose IR symbol table's target triple has arch `amdgcn`, else
/// [`ImageKind::Other`]. Cheap, side-effect free, never panics.
///
/// Differences from LLVM: 32-bit ELFs (R600) are `Other`; bitcode without an
/// IR symbol table (LLVM would parse the whole module) is `Other`.
pub fn classify(bytes: &[u8]) -> ImageKind {
    if bytes.starts_with(b"\x7fELF") {
        let is_amdgpu = with_elf(bytes, |file| Ok(file.header.e_machine(LE) == EM_AMDGPU));
        return if matches!(is_amdgpu, Ok(true)) {
            ImageKind::AmdgpuElf
        } else {
            ImageKind::Other
        };
    }
    match bitcode::target_triple(bytes) {
        Some(triple) if triple.split('-').next() == Some("amdgcn") => ImageKind::AmdgcnBitcode,
        _ => ImageKind::Other,
    }
}

/// An ELF image as the plugin reads it: the file header and the section
/// header table are parsed up front, symbol tables and notes only when
/// asked for. A part the caller does not use may be damaged (a `.symtab`
/// whose offset points outside the file, stray bytes in `.comment`)
/// without making the image unreadable: like ROCm's loader, the plugin
/// checks what it needs, not every header. (`object`'s `ElfFile64` parses
/// both symbol tables eagerly and refuses such images.)
struct Elf<'d> {
    data: &'d [u8],
    header: &'d elf::FileHeader64<LE>,
    sections: SectionTable<'d, elf::FileHeader64<LE>>,
}

impl<'d> Elf<'d> {
    fn parse(data: &'d [u8]) -> Result<Elf<'d>, ImageError> {
        let header = elf::FileHeader64::<LE>::parse(data)?;
        let sections = header.sections(LE, data)?;
        Ok(Elf {
            data,
            header,
            sections,
        })
    }

    /// The symbol table of type `kind` (`SHT_SYMTAB` / `SHT_DYNSYM`),
    /// empty when the image has none.
    fn symbols(&self, kind: u32) -> Result<SymbolTable<'d, elf::FileHeader64<LE>>, ImageError> {
        Ok(self.sections.symbols(LE, self.data, kind)?)
    }
}

/// Parses `bytes` as a 64-bit little-endian ELF and runs `f` on it, copying
/// the bytes to an 8-byte aligned buffer first when they are misaligned
/// (the `object` parser requires natural alignment).
fn with_elf<T>(
    bytes: &[u8],
    f: impl FnOnce(&Elf<'_>) -> Result<T, ImageError>,
) -> Result<T, ImageError> {
    // e_ident: magic, EI_CLASS = ELFCLASS64 (2), EI_DATA = ELFDATA2LSB (1).
    if bytes.len() < 64 || !bytes.starts_with(b"\x7fELF") || bytes[4] != 2 || bytes[5] != 1 {
        return Err(ImageError::NotElf);
    }
    const ALIGN: usize = 8;
    if (bytes.as_ptr() as usize) & (ALIGN - 1) == 0 {
        return f(&Elf::parse(bytes)?);
    }
    let mut buf = vec![0u8; bytes.len() + ALIGN];
    let skip = (ALIGN - ((buf.as_ptr() as usize) & (ALIGN - 1))) & (ALIGN - 1);
    let aligned = &mut buf[skip..skip + bytes.len()];
    aligned.copy_from_slice(bytes);
    f(&Elf::parse(&*aligned)?)
}

/// Whether `head` (an image's first bytes) starts a 64-bit little-endian
/// ELF header.
pub fn is_elf64_le(head: &[u8]) -> bool {
    head.len() >= 64 && head.starts_with(b"\x7fELF") && head[4] == 2 && head[5] == 1
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
/// Errors: [`ImageError::NotElf`] when the header is missing or not ELF64
/// LE; [`ImageError::Malformed`] when a header table lies outside what
/// `read` allows or the sizes overflow.
pub fn elf_extent<'a>(read: impl Fn(u64, u64) -> Option<&'a [u8]>) -> Result<u64, ImageError> {
    let head = read(0, 64).ok_or(ImageError::NotElf)?;
    if !is_elf64_le(head) {
        return Err(ImageError::NotElf);
    }
    let u16_at = |b: &[u8], o: usize| u64::from(u16::from_le_bytes([b[o], b[o + 1]]));
    let u64_at = |b: &[u8], o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(w)
    };
    let overflow = || ImageError::Malformed("ELF header sizes overflow".into());
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
            return Err(ImageError::Malformed(format!(
                "program header entries of {phentsize} bytes (64-bit ELF needs 56)"
            )));
        }
        let table = read(phoff, phentsize * phnum).ok_or_else(|| {
            ImageError::Malformed(format!(
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
/// Errors: [`ImageError::NotElf`], [`ImageError::WrongMachine`],
/// [`ImageError::CorruptAmdgpu`].
pub fn check_amdgpu_elf(bytes: &[u8]) -> Result<(), ImageError> {
    let says_amdgpu = bytes.len() >= 20 && u16::from_le_bytes([bytes[18], bytes[19]]) == EM_AMDGPU;
    match with_amdgpu_elf(bytes, |_| Ok(())) {
        Err(ImageError::Malformed(why)) if says_amdgpu => Err(ImageError::CorruptAmdgpu(why)),
        r => r,
    }
}

/// Like [`with_elf`], and also requires `EM_AMDGPU`.
fn with_amdgpu_elf<T>(
    bytes: &[u8],
    f: impl FnOnce(&Elf<'_>) -> Result<T, ImageError>,
) -> Result<T, ImageError> {
    with_elf(bytes, |file| {
        let machine = file.header.e_machine(LE);
        if machine != EM_AMDGPU {
            return Err(ImageError::WrongMachine(machine));
        }
        f(file)
    })
}

/// The target ID an AMDGPU ELF image declares in its header (see
/// [`TargetId::from_elf_flags`]).
///
/// Errors: [`ImageError::NotElf`] / [`ImageError::Malformed`] /
/// [`ImageError::WrongMachine`] for non-AMDGPU input,
/// [`ImageError::NotAmdhsa`] when OS/ABI is not 64,
/// [`ImageError::UnknownTarget`] for unknown `e_flags` or ABI version.
pub fn elf_target_id(bytes: &[u8]) -> Result<TargetId, ImageError> {
    with_amdgpu_elf(bytes, |file| {
        let header = file.header;
        let os_abi = header.e_ident().os_abi;
        if os_abi != ELFOSABI_AMDGPU_HSA {
            return Err(ImageError::NotAmdhsa(os_abi));
        }
        let e_flags = header.e_flags(LE);
        let abi_version = header.e_ident().abi_version;
        TargetId::from_elf_flags(e_flags, abi_version).ok_or(ImageError::UnknownTarget {
            e_flags,
            abi_version,
        })
    })
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

/// Looks `name` up as LLVM's plugin does (spec §4.2): when the image has a
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
/// `<kernel>_exec_mode`, spec §4.2).
///
/// `Ok(None)` when the symbol is absent or its `st_size` is not 1 (LLVM then
/// uses a default). A symbol in `.bss` reads as 0.
///
/// Errors: not an AMDGPU ELF / malformed ([`ImageError::NotElf`],
/// [`ImageError::Malformed`], [`ImageError::WrongMachine`]); the symbol's
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
/// load (spec §4.2): the byte of `<kernel>_exec_mode`; missing symbol or
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
/// `AMDGPU`, code object V3+), in note order.
///
/// Errors: not an AMDGPU ELF / malformed; [`ImageError::NoMetadata`] when
/// there is no such note; [`ImageError::BadMetadata`] when the note is not a
/// msgpack map with an `amdhsa.kernels` array of maps each having `.name`.
pub fn kernel_metadata(bytes: &[u8]) -> Result<Vec<KernelInfo>, ImageError> {
    with_amdgpu_elf(bytes, |file| {
        let desc = metadata_note(file)?.ok_or(ImageError::NoMetadata)?;
        parse_metadata(desc)
    })
}

/// The descriptor bytes of the first `AMDGPU` / `NT_AMDGPU_METADATA` note,
/// searched in note sections, else in note segments.
fn metadata_note<'d>(file: &Elf<'d>) -> Result<Option<&'d [u8]>, ImageError> {
    let data = file.data;
    for section in file.sections.iter() {
        if let Some(mut notes) = section.notes(LE, data)? {
            while let Some(note) = notes.next()? {
                if note.name() == b"AMDGPU" && note.n_type(LE) == NT_AMDGPU_METADATA {
                    return Ok(Some(note.desc()));
                }
            }
        }
    }
    for segment in file.header.program_headers(LE, data)? {
        use object::read::elf::ProgramHeader;
        if let Some(mut notes) = segment.notes(LE, data)? {
            while let Some(note) = notes.next()? {
                if note.name() == b"AMDGPU" && note.n_type(LE) == NT_AMDGPU_METADATA {
                    return Ok(Some(note.desc()));
                }
            }
        }
    }
    Ok(None)
}

/// Maximum msgpack nesting accepted (the metadata needs 4 levels).
const MSGPACK_MAX_DEPTH: usize = 16;

fn parse_metadata(desc: &[u8]) -> Result<Vec<KernelInfo>, ImageError> {
    use rmpv::Value;
    let bad = |what: &str| ImageError::BadMetadata(what.to_string());
    let mut reader = desc;
    let doc = rmpv::decode::read_value_with_max_depth(&mut reader, MSGPACK_MAX_DEPTH)
        .map_err(|e| ImageError::BadMetadata(format!("msgpack: {e}")))?;
    let Value::Map(top) = doc else {
        return Err(bad("top level is not a map"));
    };
    let kernels = lookup(&top, "amdhsa.kernels").ok_or_else(|| bad("no amdhsa.kernels"))?;
    let Value::Array(kernels) = kernels else {
        return Err(bad("amdhsa.kernels is not an array"));
    };
    let mut out = Vec::with_capacity(kernels.len());
    for (i, kernel) in kernels.iter().enumerate() {
        let Value::Map(map) = kernel else {
            return Err(ImageError::BadMetadata(format!("kernel {i} is not a map")));
        };
        let text = |key: &str| lookup(map, key).and_then(Value::as_str).map(str::to_string);
        let num = |key: &str| -> Result<u32, ImageError> {
            match lookup(map, key) {
                None => Ok(0),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        ImageError::BadMetadata(format!("kernel {i}: {key} is not a u32"))
                    }),
            }
        };
        let name = text(".name")
            .ok_or_else(|| ImageError::BadMetadata(format!("kernel {i} has no .name")))?;
        let mut args = Vec::new();
        if let Some(list) = lookup(map, ".args") {
            let Value::Array(list) = list else {
                return Err(ImageError::BadMetadata(format!(
                    "{name}: .args is not an array"
                )));
            };
            for (j, arg) in list.iter().enumerate() {
                let Value::Map(arg) = arg else {
                    return Err(ImageError::BadMetadata(format!(
                        "{name}: arg {j} is not a map"
                    )));
                };
                let anum = |key: &str| -> Result<u32, ImageError> {
                    lookup(arg, key)
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| {
                            ImageError::BadMetadata(format!("{name}: arg {j} has no u32 {key}"))
                        })
                };
                args.push(KernelArgInfo {
                    offset: anum(".offset")?,
                    size: anum(".size")?,
                    value_kind: lookup(arg, ".value_kind")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                });
            }
        }
        out.push(KernelInfo {
            symbol: text(".symbol").unwrap_or_default(),
            kernarg_segment_size: num(".kernarg_segment_size")?,
            kernarg_segment_align: num(".kernarg_segment_align")?,
            group_segment_fixed_size: num(".group_segment_fixed_size")?,
            private_segment_fixed_size: num(".private_segment_fixed_size")?,
            max_flat_workgroup_size: num(".max_flat_workgroup_size")?,
            wavefront_size: num(".wavefront_size")?,
            uses_dynamic_stack: lookup(map, ".uses_dynamic_stack")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            args,
            name,
        });
    }
    Ok(out)
}

/// The value under string key `key` of a msgpack map.
fn lookup<'v>(map: &'v [(rmpv::Value, rmpv::Value)], key: &str) -> Option<&'v rmpv::Value> {
    map.iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

// ---------------------------------------------------------------------------
// Bitcode

/// Just enough of LLVM's bitstream format to read the target triple from a
/// module's IR symbol table (`SYMTAB_BLOCK` + `STRTAB_BLOCK`), which is what
/// LLVM's `readIRSymtab` consults.
mod bitcode {
    /// `0x0B17C0DE` wrapper magic (little endian).
    const WRAPPER_MAGIC: [u8; 4] = [0xde, 0xc0, 0x17, 0x0b];
    /// Raw bitcode magic `BC 0xC0DE`.
    const RAW_MAGIC: [u8; 4] = [b'B', b'C', 0xc0, 0xde];
    /// Top-level block ids.
    const STRTAB_BLOCK_ID: u64 = 23;
    const SYMTAB_BLOCK_ID: u64 = 25;
    /// Offset of `Header::TargetTriple` (a `{offset, size}` pair of u32)
    /// in the irsymtab blob: Version (4) + Producer (8) + 4 ranges (8 each).
    const TRIPLE_FIELD: usize = 44;

    struct Bits<'a> {
        data: &'a [u8],
        pos: usize,
    }

    impl<'a> Bits<'a> {
        fn read(&mut self, n: u32) -> Option<u64> {
            let mut v = 0u64;
            for i in 0..n {
                let bit = self.pos;
                let byte = *self.data.get(bit / 8)?;
                v |= u64::from((byte >> (bit % 8)) & 1) << i;
                self.pos += 1;
            }
            Some(v)
        }
        fn vbr(&mut self, n: u32) -> Option<u64> {
            let hi = 1u64 << (n - 1);
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let piece = self.read(n)?;
                if shift >= 64 {
                    return None;
                }
                v |= (piece & (hi - 1)) << shift;
                if piece & hi == 0 {
                    return Some(v);
                }
                shift += n - 1;
            }
        }
        fn align32(&mut self) {
            self.pos = self.pos.div_ceil(32) * 32;
        }
        fn bytes(&mut self, len: usize) -> Option<&'a [u8]> {
            let start = self.pos / 8;
            let out = self.data.get(start..start.checked_add(len)?)?;
            self.pos = (start + len) * 8;
            Some(out)
        }
    }

    /// Reads the single blob record of a SYMTAB/STRTAB block body, as LLVM
    /// writes it: a DEFINE_ABBREV `[literal, blob]` then one record with it.
    fn block_blob(body: &[u8], abbrev_width: u32) -> Option<&[u8]> {
        let mut b = Bits { data: body, pos: 0 };
        // (is_blob) per operand of the one abbreviation we accept.
        let mut ops: Vec<Option<u8>> = Vec::new();
        loop {
            match b.read(abbrev_width)? {
                2 => {
                    // DEFINE_ABBREV: numops vbr5, then operands.
                    ops.clear();
                    let numops = b.vbr(5)?;
                    if numops > 8 {
                        return None;
                    }
                    for _ in 0..numops {
                        if b.read(1)? == 1 {
                            b.vbr(8)?;
                            ops.push(None); // literal
                        } else {
                            let enc = b.read(3)?;
                            match enc {
                                1 | 2 => {
                                    b.vbr(5)?;
                                    ops.push(Some(enc as u8));
                                }
                                5 => ops.push(Some(5)),
                                _ => return None,
                            }
                        }
                    }
                }
                4 => {
                    for op in &ops {
                        match op {
                            None => {}
                            Some(5) => {
                                let len = usize::try_from(b.vbr(6)?).ok()?;
                                b.align32();
                                return b.bytes(len);
                            }
                            Some(_) => return None,
                        }
                    }
                    return None;
                }
                _ => return None,
            }
        }
    }

    /// The target triple recorded in the IR symbol table, if the bytes are
    /// bitcode that has one.
    pub(super) fn target_triple(bytes: &[u8]) -> Option<String> {
        let mut data = bytes;
        if data.starts_with(&WRAPPER_MAGIC) {
            let word = |i: usize| -> Option<usize> {
                let w = data.get(i..i + 4)?;
                usize::try_from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])).ok()
            };
            let offset = word(8)?;
            let size = word(12)?;
            data = data.get(offset..offset.checked_add(size)?)?;
        }
        if !data.starts_with(&RAW_MAGIC) {
            return None;
        }
        let mut b = Bits { data, pos: 32 };
        let (mut symtab, mut strtab) = (None, None);
        // Top level: abbrev width 2, only ENTER_SUBBLOCK (1) expected.
        while b.pos + 32 <= data.len() * 8 {
            if b.read(2)? != 1 {
                break;
            }
            let id = b.vbr(8)?;
            let width = u32::try_from(b.vbr(4)?).ok()?;
            b.align32();
            let words = usize::try_from(b.read(32)?).ok()?;
            let body = b.bytes(words.checked_mul(4)?)?;
            if !(1..=32).contains(&width) {
                return None;
            }
            match id {
                SYMTAB_BLOCK_ID => symtab = block_blob(body, width),
                STRTAB_BLOCK_ID => strtab = block_blob(body, width),
                _ => {}
            }
        }
        let (symtab, strtab) = (symtab?, strtab?);
        let field = symtab.get(TRIPLE_FIELD..TRIPLE_FIELD + 8)?;
        let off =
            usize::try_from(u32::from_le_bytes([field[0], field[1], field[2], field[3]])).ok()?;
        let len =
            usize::try_from(u32::from_le_bytes([field[4], field[5], field[6], field[7]])).ok()?;
        let triple = strtab.get(off..off.checked_add(len)?)?;
        String::from_utf8(triple.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid(s: &str) -> TargetId {
        TargetId::parse(s).unwrap()
    }

    #[test]
    fn parse_target_ids() {
        let t = tid("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
        assert_eq!(t.processor, "gfx90a");
        assert_eq!((t.sramecc, t.xnack), (Some(true), Some(false)));
        assert_eq!(t.to_string(), "gfx90a:sramecc+:xnack-");
        let t = tid("gfx1030");
        assert_eq!(
            (t.processor.as_str(), t.xnack, t.sramecc),
            ("gfx1030", None, None)
        );
        // LLVM looks for "xnack+" first.
        assert_eq!(tid("gfx90a:xnack-:xnack+").xnack, Some(true));
        // Unknown features are ignored.
        assert_eq!(tid("gfx90a:foo+"), tid("gfx90a"));
        assert_eq!(TargetId::parse(""), None);
        assert_eq!(TargetId::parse(":xnack+"), None);
        assert_eq!(TargetId::parse("amdgcn-amd-amdhsa--"), None);
    }

    /// Expected results by hand from LLVM 16's isImageCompatibleWithEnv.
    #[test]
    fn compatibility() {
        let agent = "gfx90a:sramecc+:xnack-";
        let cases = [
            ("gfx90a", agent, true),                     // no features: any
            ("gfx90a:xnack-", agent, true),              // same sign
            ("gfx90a:sramecc+:xnack-", agent, true),     // exact
            ("gfx90a:xnack+", agent, false),             // other sign
            ("gfx90a:sramecc-", agent, false),           // other sign
            ("gfx90a:xnack+", "gfx90a", false),          // more features than agent
            ("gfx90a:sramecc-", "gfx90a:xnack-", false), // feature absent on agent
            ("gfx908", agent, false),                    // other processor
            ("gfx1030", agent, false),
            ("gfx90a", "gfx90", true), // LLVM's substring test
            ("gfx90", "gfx90a", false),
        ];
        for (image, env, want) in cases {
            assert_eq!(target_ids_compatible(image, env), want, "{image} on {env}");
            assert_eq!(
                tid(image).is_compatible(&tid(env)),
                want,
                "{image} on {env}"
            );
        }
        // Exact string match even when unparsable.
        assert!(target_ids_compatible("", ""));
        assert!(!target_ids_compatible("", "gfx90a"));
    }

    #[test]
    fn elf_flags() {
        // EF_AMDGPU_MACH_AMDGCN_GFX90A 0x3f | XNACK_ANY_V4 0x100 | SRAMECC_ANY_V4 0x400.
        assert_eq!(
            TargetId::from_elf_flags(0x53f, 2).unwrap().to_string(),
            "gfx90a"
        );
        // SRAMECC_OFF_V4 0x800 | XNACK_ON_V4 0x300.
        assert_eq!(
            TargetId::from_elf_flags(0xb3f, 2).unwrap().to_string(),
            "gfx90a:sramecc-:xnack+"
        );
        // V5 uses the V4 encoding; GFX1030 0x36 without features.
        assert_eq!(
            TargetId::from_elf_flags(0x36, 3).unwrap().to_string(),
            "gfx1030"
        );
        // V3: XNACK_V3 0x100 on.
        assert_eq!(
            TargetId::from_elf_flags(0x13f, 1).unwrap().to_string(),
            "gfx90a:xnack+"
        );
        assert_eq!(TargetId::from_elf_flags(0x3f, 0), None, "V2");
        assert_eq!(TargetId::from_elf_flags(0x43, 2), None, "reserved mach");
        assert_eq!(TargetId::from_elf_flags(0x01, 2), None, "r600");
    }

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
        assert!(matches!(elf_target_id(b"hello"), Err(ImageError::NotElf)));
        assert!(matches!(
            kernel_metadata(&[0u8; 10]),
            Err(ImageError::NotElf)
        ));
    }

    #[test]
    fn metadata_rejects_bad_documents() {
        use rmpv::Value;
        let enc = |v: &Value| {
            let mut out = Vec::new();
            rmpv::encode::write_value(&mut out, v).unwrap();
            out
        };
        let s = |x: &str| Value::from(x);
        assert!(matches!(
            parse_metadata(&enc(&Value::from(3))),
            Err(ImageError::BadMetadata(_))
        ));
        let no_name = Value::Map(vec![(
            s("amdhsa.kernels"),
            Value::Array(vec![Value::Map(vec![(s(".symbol"), s("k.kd"))])]),
        )]);
        let err = parse_metadata(&enc(&no_name)).unwrap_err();
        assert!(err.to_string().contains(".name"), "{err}");
        let ok = Value::Map(vec![(
            s("amdhsa.kernels"),
            Value::Array(vec![Value::Map(vec![
                (s(".name"), s("k")),
                (s(".max_flat_workgroup_size"), Value::from(256)),
                (
                    s(".args"),
                    Value::Array(vec![
                        Value::Map(vec![
                            (s(".offset"), Value::from(0)),
                            (s(".size"), Value::from(8)),
                            (s(".value_kind"), s("global_buffer")),
                        ]),
                        Value::Map(vec![
                            (s(".offset"), Value::from(8)),
                            (s(".size"), Value::from(8)),
                            (s(".value_kind"), s("hidden_block_count_x")),
                        ]),
                    ]),
                ),
            ])]),
        )]);
        let k = parse_metadata(&enc(&ok)).unwrap();
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].max_flat_workgroup_size, 256);
        assert_eq!(k[0].explicit_arg_count(), 1);
        assert_eq!(k[0].explicit_arg_sizes(), vec![8]);
        // Deeply nested input stops at the depth limit instead of recursing.
        let mut deep = vec![0x91u8; 100_000];
        deep.push(0xc0);
        assert!(matches!(
            parse_metadata(&deep),
            Err(ImageError::BadMetadata(_))
        ));
    }
}
