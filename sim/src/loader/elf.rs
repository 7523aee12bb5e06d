//! ELF side of the loader: header and program header validation, symbols,
//! dynamic relocations, the metadata note, and placement into device memory.
//!
//! Choices (documented here once):
//! * **Symbols come from `.dynsym`** (the `SHT_DYNSYM` table), falling back to
//!   `.symtab` only when an image has no dynamic symbol table. In clang 16
//!   OpenMP images every host-visible symbol (kernel descriptors, `_exec_mode`
//!   bytes, `__omp_rtl_device_environment`, `declare target` globals) is in
//!   both tables with identical values; `.symtab` only adds local symbols,
//!   which ROCr skips anyway (AMDGPUUsage "Symbols"). `.dynsym` survives stripping.
//! * As ROCr 5.2 (`src/loader/executable.cpp`): only global/weak `STT_OBJECT`/`STT_COMMON`
//!   symbols become executable symbols; `*.kd` are kernels, the rest
//!   variables; names are kept verbatim.
//! * **Relocations** are read from the allocated (`SHF_ALLOC`) `SHT_RELA`
//!   sections, i.e. `.rela.dyn`; non-allocated `SHT_RELA` sections (kept by
//!   `--emit-relocs`) are static and ignored. Supported types: RELATIVE64 (13),
//!   ABS64 (3), ABS32_LO (1), ABS32_HI (2); `R_AMDGPU_NONE` (0) is skipped;
//!   anything else is an error naming the type.
//! * The image is placed as one block: segment `s` lands at
//!   `load_base + (s.vaddr - first PT_LOAD vaddr)`.

use std::collections::HashSet;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, Rela, SectionHeader, Sym};
use object::read::SymbolIndex;
use object::LittleEndian;

use code_object::elf::metadata_note;

use super::{CodeObjectMetadata, KernelDescriptor, LoadError, TargetId, KERNEL_DESCRIPTOR_SIZE};

type Header = elf::FileHeader64<LittleEndian>;

/// Largest load span (bytes from the first PT_LOAD's vaddr to the end of the
/// last) the loader accepts: 4 GiB. Protects against absurd allocations
/// requested by corrupt program headers.
pub const MAX_LOAD_SPAN: u64 = 4 << 30;

/// Page size the load span is rounded to, and the largest alignment
/// [`CodeObject::place`] requires of `load_base`.
pub const PAGE_SIZE: u64 = 4096;

/// Largest read [`CodeObject::read_at_vaddr`] serves: 64 MiB.
pub const MAX_VADDR_READ: u64 = 64 << 20;

/// Smallest alignment required of `load_base`: kernel entry points are
/// 256-byte aligned (AMDGPUUsage "Kernel Descriptor").
const MIN_BASE_ALIGN: u64 = 256;

/// `R_AMDGPU_*` relocation type numbers (AMDGPUUsage "Relocation Records").
mod reloc_type {
    pub const NONE: u32 = 0;
    pub const ABS32_LO: u32 = 1;
    pub const ABS32_HI: u32 = 2;
    pub const ABS64: u32 = 3;
    pub const RELATIVE64: u32 = 13;

    /// LLVM's name of relocation type `t`.
    pub fn name(t: u32) -> &'static str {
        match t {
            0 => "R_AMDGPU_NONE",
            1 => "R_AMDGPU_ABS32_LO",
            2 => "R_AMDGPU_ABS32_HI",
            3 => "R_AMDGPU_ABS64",
            4 => "R_AMDGPU_REL32",
            5 => "R_AMDGPU_REL64",
            6 => "R_AMDGPU_ABS32",
            7 => "R_AMDGPU_GOTPCREL",
            8 => "R_AMDGPU_GOTPCREL32_LO",
            9 => "R_AMDGPU_GOTPCREL32_HI",
            10 => "R_AMDGPU_REL32_LO",
            11 => "R_AMDGPU_REL32_HI",
            13 => "R_AMDGPU_RELATIVE64",
            14 => "R_AMDGPU_REL16",
            _ => "unknown",
        }
    }
}

/// Turns an `object` error into a `LoadError::Invalid` with context.
fn invalid<T>(r: object::read::Result<T>, what: impl FnOnce() -> String) -> Result<T, LoadError> {
    r.map_err(|e| LoadError::Invalid(format!("{}: {e}", what())))
}

/// A `PT_LOAD` program header (as lld lays out clang 16 images; AMDGPUUsage
/// "ELF Code Object").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// `p_vaddr`: ELF virtual address of the segment.
    pub vaddr: u64,
    /// `p_memsz`: bytes the segment occupies in memory.
    pub memsz: u64,
    /// `p_offset`: file offset of its initialised bytes.
    pub file_offset: u64,
    /// `p_filesz`: initialised bytes (≤ `memsz`; the rest is zero).
    pub filesz: u64,
    /// `p_flags`: `PF_X` 1, `PF_W` 2, `PF_R` 4.
    pub flags: u32,
    /// `p_align` (0 or a power of two).
    pub align: u64,
}

impl Segment {
    /// True when `PF_X` is set (holds code).
    pub fn is_executable(&self) -> bool {
        self.flags & elf::PF_X != 0
    }

    /// True when `PF_W` is set.
    pub fn is_writable(&self) -> bool {
        self.flags & elf::PF_W != 0
    }

    /// True when `[vaddr, vaddr + len)` lies inside `[self.vaddr, self.vaddr + memsz)`.
    pub fn contains(&self, vaddr: u64, len: u64) -> bool {
        match (vaddr.checked_sub(self.vaddr), vaddr.checked_add(len)) {
            (Some(rel), Some(_)) => rel <= self.memsz && len <= self.memsz - rel,
            _ => false,
        }
    }
}

/// Kind of an executable symbol (HSA `hsa_symbol_kind_t` KERNEL / VARIABLE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    /// A kernel descriptor (`*.kd`, 64 bytes).
    Kernel,
    /// A global variable.
    Variable,
}

/// A symbol the executable exposes (`hsa_executable_symbol_info_t` in
/// `hsa/hsa.h`; ROCr 5.2's `src/loader/executable.cpp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolDef {
    /// ELF name, verbatim (kernels keep `.kd`).
    pub name: String,
    /// Kernel for names ending in `.kd`, else variable.
    pub kind: SymbolKind,
    /// `st_value`: the raw ELF virtual address (device address =
    /// `load_base + (vaddr - first PT_LOAD vaddr)`, see
    /// [`CodeObject::device_address`]). For a definition, `[vaddr, vaddr +
    /// size)` is guaranteed to lie inside the load span.
    pub vaddr: u64,
    /// `st_size` in bytes.
    pub size: u64,
    /// False for `SHN_UNDEF` symbols (which must be defined elsewhere).
    pub is_definition: bool,
    /// True for `STB_WEAK` binding.
    pub is_weak: bool,
}

/// A supported dynamic relocation type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelocKind {
    /// `R_AMDGPU_RELATIVE64` (13): 64-bit `B + A` (load delta + addend).
    Relative64,
    /// `R_AMDGPU_ABS64` (3): 64-bit `S + A`.
    Abs64,
    /// `R_AMDGPU_ABS32_LO` (1): 32-bit `(S + A) & 0xffff_ffff`.
    Abs32Lo,
    /// `R_AMDGPU_ABS32_HI` (2): 32-bit `(S + A) >> 32`.
    Abs32Hi,
}

impl RelocKind {
    /// Width of the patched field in bytes (8 or 4).
    pub fn width(self) -> u64 {
        match self {
            RelocKind::Relative64 | RelocKind::Abs64 => 8,
            RelocKind::Abs32Lo | RelocKind::Abs32Hi => 4,
        }
    }

    /// The ELF `r_type` number.
    pub fn r_type(self) -> u32 {
        match self {
            RelocKind::Relative64 => reloc_type::RELATIVE64,
            RelocKind::Abs64 => reloc_type::ABS64,
            RelocKind::Abs32Lo => reloc_type::ABS32_LO,
            RelocKind::Abs32Hi => reloc_type::ABS32_HI,
        }
    }
}

/// A dynamic relocation to apply at placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relocation {
    /// `r_offset`: ELF virtual address of the field to patch (validated to
    /// lie inside a PT_LOAD segment).
    pub vaddr: u64,
    /// Relocation type.
    pub kind: RelocKind,
    /// Name of the referenced symbol; `None` for RELATIVE64 and for a null
    /// symbol index (then `S = 0`).
    pub symbol: Option<String>,
    /// `st_value` of the symbol when it is defined in this image, else 0.
    pub symbol_value: u64,
    /// True when the symbol is defined in this image (not `SHN_UNDEF`).
    pub symbol_defined: bool,
    /// True when the symbol is `SHN_ABS`: `S = st_value`, not load-relative.
    pub symbol_absolute: bool,
    /// `r_addend`.
    pub addend: i64,
}

/// A parsed and validated AMDGPU HSA code object (code object V3–V5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject {
    /// `EI_ABIVERSION`: 1 = V3, 2 = V4, 3 = V5.
    pub abi_version: u8,
    /// Code object version: 3, 4 or 5.
    pub code_object_version: u32,
    /// Raw `e_flags`.
    pub e_flags: u32,
    /// Target decoded from `e_flags`.
    pub target: TargetId,
    /// `PT_LOAD` segments, sorted by vaddr, non-overlapping.
    pub segments: Vec<Segment>,
    /// Executable symbols (see the module notes for which ones).
    pub symbols: Vec<SymbolDef>,
    /// Dynamic relocations, in file order.
    pub relocations: Vec<Relocation>,
    /// Contents of the `NT_AMDGPU_METADATA` note.
    pub metadata: CodeObjectMetadata,
    /// Length of the parsed file, checked again by `place`.
    file_len: usize,
    /// First PT_LOAD vaddr.
    first_vaddr: u64,
    /// Unrounded span: last.vaddr + last.memsz - first.vaddr.
    image_size: u64,
    /// Alignment required of `load_base` (see `base_alignment`).
    base_align: u64,
}

impl CodeObject {
    /// Parses and validates an AMDGPU HSA code object: ELF64 little-endian,
    /// `EM_AMDGPU` (224), `ELFOSABI_AMDGPU_HSA` (64), `ET_DYN`, code object
    /// V3..V5 (`EI_ABIVERSION` 1..3); program headers, dynamic symbols,
    /// dynamic relocations and the `NT_AMDGPU_METADATA` note.
    ///
    /// Errors: `LoadError::Unsupported` for code object V2, unknown ABI
    /// versions, other OS/ABIs or non-`ET_DYN` files; `LoadError::Metadata`
    /// for a missing or malformed note; `LoadError::Invalid` for everything
    /// else that is malformed. The ISA is *not* checked against an agent here:
    /// use [`check_compatible`](Self::check_compatible).
    pub fn parse(bytes: &[u8]) -> Result<CodeObject, LoadError> {
        let (abi_version, code_object_version) = check_ident(bytes)?;
        let header = invalid(Header::parse(bytes), || "ELF header".to_string())?;
        let endian = LittleEndian;

        let e_machine = header.e_machine(endian);
        if e_machine != elf::EM_AMDGPU {
            return Err(LoadError::Invalid(format!(
                "e_machine {e_machine} is not EM_AMDGPU (224)"
            )));
        }
        let e_type = header.e_type(endian);
        if e_type != elf::ET_DYN {
            return Err(LoadError::Unsupported(format!(
                "e_type {e_type} is not ET_DYN (3): only linked code objects can be loaded"
            )));
        }
        let e_flags = header.e_flags(endian);
        let target = TargetId::from_e_flags(abi_version, e_flags)?;

        let phdrs = invalid(header.program_headers(endian, bytes), || {
            format!(
                "program headers (e_phoff {:#x}, e_phnum {}, e_phentsize {})",
                header.e_phoff(endian),
                header.e_phnum(endian),
                header.e_phentsize(endian)
            )
        })?;
        let segments = load_segments(phdrs, bytes.len())?;
        let (first_vaddr, image_size) = match (segments.first(), segments.last()) {
            (Some(first), Some(last)) => (first.vaddr, last.vaddr + last.memsz - first.vaddr),
            _ => return Err(LoadError::Invalid("no PT_LOAD program header".to_string())),
        };
        if image_size == 0 {
            return Err(LoadError::Invalid(
                "every PT_LOAD segment is empty (p_memsz 0)".to_string(),
            ));
        }
        if image_size > MAX_LOAD_SPAN {
            return Err(LoadError::Invalid(format!(
                "PT_LOAD segments span {image_size:#x} bytes, more than the {MAX_LOAD_SPAN:#x}-byte limit"
            )));
        }
        let base_align = segments
            .iter()
            .map(|s| s.align)
            .max()
            .unwrap_or(0)
            .clamp(MIN_BASE_ALIGN, PAGE_SIZE);

        let mut co = CodeObject {
            abi_version,
            code_object_version,
            e_flags,
            target,
            segments,
            symbols: Vec::new(),
            relocations: Vec::new(),
            metadata: CodeObjectMetadata::default(),
            file_len: bytes.len(),
            first_vaddr,
            image_size,
            base_align,
        };

        let sections = invalid(header.sections(endian, bytes), || {
            format!(
                "section headers (e_shoff {:#x}, e_shnum {}, e_shentsize {}, e_shstrndx {})",
                header.e_shoff(endian),
                header.e_shnum(endian),
                header.e_shentsize(endian),
                header.e_shstrndx(endian)
            )
        })?;
        if sections.is_empty() {
            return Err(LoadError::Invalid(
                "no section headers: .dynsym and .rela.dyn cannot be found".to_string(),
            ));
        }
        co.symbols = co.read_symbols(&sections, bytes)?;
        co.relocations = co.read_relocations(&sections, bytes)?;
        co.metadata = read_metadata(header, &sections, bytes)?;
        co.cross_check();
        Ok(co)
    }

    /// Reads the executable symbols from `.dynsym` (or `.symtab` when there is
    /// no dynamic symbol table).
    fn read_symbols<'data>(
        &self,
        sections: &object::read::elf::SectionTable<'data, Header, &'data [u8]>,
        bytes: &'data [u8],
    ) -> Result<Vec<SymbolDef>, LoadError> {
        let endian = LittleEndian;
        let has_dynsym = sections
            .iter()
            .any(|s| s.sh_type(endian) == elf::SHT_DYNSYM);
        let (sh_type, table_name) = if has_dynsym {
            (elf::SHT_DYNSYM, "dynamic symbol table (SHT_DYNSYM)")
        } else {
            (elf::SHT_SYMTAB, "symbol table (SHT_SYMTAB)")
        };
        let table = invalid(sections.symbols(endian, bytes, sh_type), || {
            table_name.to_string()
        })?;

        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (index, sym) in table.enumerate() {
            let bind = sym.st_bind();
            let st_type = sym.st_type();
            if index.0 == 0
                || !(bind == elf::STB_GLOBAL || bind == elf::STB_WEAK)
                || !(st_type == elf::STT_OBJECT || st_type == elf::STT_COMMON)
            {
                continue;
            }
            let name = symbol_name(&table, sym, index, table_name)?;
            let shndx = sym.st_shndx(endian);
            let vaddr = sym.st_value(endian);
            let size = sym.st_size(endian);
            if shndx == elf::SHN_COMMON {
                return Err(LoadError::Invalid(format!(
                    "{table_name} symbol #{} `{name}` is an unallocated common symbol (SHN_COMMON)",
                    index.0
                )));
            }
            let is_definition = shndx != elf::SHN_UNDEF;
            // Every definition (SHN_ABS included) must lie in the image, so
            // `vaddr - first_vaddr` is a valid offset for every defined symbol.
            if is_definition && !self.span_contains(vaddr, size) {
                return Err(LoadError::Invalid(format!(
                    "{table_name} symbol #{} `{name}`: [{vaddr:#x}, +{size:#x}) lies outside the loaded image [{:#x}, +{:#x})",
                    index.0, self.first_vaddr, self.image_size
                )));
            }
            if is_definition && !seen.insert(name.clone()) {
                return Err(LoadError::Invalid(format!(
                    "{table_name}: symbol `{name}` is defined twice"
                )));
            }
            let kind = if name.ends_with(".kd") {
                SymbolKind::Kernel
            } else {
                SymbolKind::Variable
            };
            out.push(SymbolDef {
                name,
                kind,
                vaddr,
                size,
                is_definition,
                is_weak: bind == elf::STB_WEAK,
            });
        }
        Ok(out)
    }

    /// Reads the dynamic relocations from the allocated `SHT_RELA` sections.
    fn read_relocations<'data>(
        &self,
        sections: &object::read::elf::SectionTable<'data, Header, &'data [u8]>,
        bytes: &'data [u8],
    ) -> Result<Vec<Relocation>, LoadError> {
        let endian = LittleEndian;
        let mut out = Vec::new();
        for (sec_index, section) in sections.enumerate() {
            let sh_type = section.sh_type(endian);
            let alloc = section.sh_flags(endian) & u64::from(elf::SHF_ALLOC) != 0;
            if !alloc || !matches!(sh_type, elf::SHT_RELA | elf::SHT_REL | elf::SHT_RELR) {
                continue;
            }
            let sec_name = match sections.section_name(endian, section) {
                Ok(n) => String::from_utf8_lossy(n).into_owned(),
                Err(_) => format!("#{}", sec_index.0),
            };
            if sh_type != elf::SHT_RELA {
                return Err(LoadError::Invalid(format!(
                    "section `{sec_name}`: dynamic relocations of section type {sh_type} (SHT_REL/SHT_RELR) are not used by AMDGPU (SHT_RELA only)"
                )));
            }
            let entsize = section.sh_entsize(endian);
            if entsize != 0 && entsize != 24 {
                return Err(LoadError::Invalid(format!(
                    "section `{sec_name}`: sh_entsize {entsize} is not 24 (Elf64_Rela)"
                )));
            }
            let Some((relas, link)) = invalid(section.rela(endian, bytes), || {
                format!(
                    "section `{sec_name}` (sh_offset {:#x}, sh_size {:#x})",
                    section.sh_offset(endian),
                    section.sh_size(endian)
                )
            })?
            else {
                continue;
            };
            let table = if link.0 == 0 {
                None
            } else {
                Some(invalid(
                    sections.symbol_table_by_index(endian, bytes, link),
                    || {
                        format!(
                            "section `{sec_name}`: linked symbol table (sh_link {})",
                            link.0
                        )
                    },
                )?)
            };

            for (i, rela) in relas.iter().enumerate() {
                let r_offset = rela.r_offset(endian);
                let r_type = rela.r_type(endian, false);
                let r_sym = rela.r_sym(endian, false);
                let addend = rela.r_addend(endian);
                let here = || format!("section `{sec_name}` entry #{i} (r_offset {r_offset:#x})");
                let kind = match r_type {
                    reloc_type::NONE => continue,
                    reloc_type::RELATIVE64 => RelocKind::Relative64,
                    reloc_type::ABS64 => RelocKind::Abs64,
                    reloc_type::ABS32_LO => RelocKind::Abs32Lo,
                    reloc_type::ABS32_HI => RelocKind::Abs32Hi,
                    other => {
                        return Err(LoadError::Invalid(format!(
                            "{}: unsupported relocation type {other} ({})",
                            here(),
                            reloc_type::name(other)
                        )))
                    }
                };
                if !self
                    .segments
                    .iter()
                    .any(|s| s.contains(r_offset, kind.width()))
                {
                    return Err(LoadError::Invalid(format!(
                        "{}: the {}-byte field is not inside a PT_LOAD segment",
                        here(),
                        kind.width()
                    )));
                }
                let mut reloc = Relocation {
                    vaddr: r_offset,
                    kind,
                    symbol: None,
                    symbol_value: 0,
                    symbol_defined: false,
                    symbol_absolute: false,
                    addend,
                };
                if kind != RelocKind::Relative64 && r_sym != 0 {
                    let Some(table) = &table else {
                        return Err(LoadError::Invalid(format!(
                            "{}: refers to symbol #{r_sym} but the section has no symbol table (sh_link 0)",
                            here()
                        )));
                    };
                    let index = SymbolIndex(r_sym as usize);
                    let sym = invalid(table.symbol(index), || {
                        format!("{}: symbol index {r_sym}", here())
                    })?;
                    let name = symbol_name(table, sym, index, "relocation symbol table")?;
                    let shndx = sym.st_shndx(endian);
                    if shndx == elf::SHN_COMMON {
                        return Err(LoadError::Invalid(format!(
                            "{}: symbol `{name}` is an unallocated common symbol",
                            here()
                        )));
                    }
                    reloc.symbol_defined = shndx != elf::SHN_UNDEF;
                    reloc.symbol_absolute = shndx == elf::SHN_ABS;
                    if reloc.symbol_defined {
                        reloc.symbol_value = sym.st_value(endian);
                    }
                    reloc.symbol = Some(name);
                }
                out.push(reloc);
            }
        }
        Ok(out)
    }

    /// Logs inconsistencies that ROCr tolerates: metadata version vs ABI
    /// version, `amdhsa.target` vs `e_flags`, kernels without metadata.
    fn cross_check(&self) {
        let expected_minor = self.code_object_version.saturating_sub(3);
        if self.metadata.version != (1, expected_minor) {
            log::warn!(
                "code object V{} carries amdhsa.version {:?} (expected [1, {expected_minor}])",
                self.code_object_version,
                self.metadata.version
            );
        }
        if let Some(t) = &self.metadata.target {
            if let Some(from_note) = TargetId::parse(t) {
                if from_note != self.target {
                    log::warn!(
                        "amdhsa.target `{t}` differs from e_flags target `{}`",
                        self.target
                    );
                }
            }
        }
        for sym in self.kernel_symbols() {
            if self.metadata.kernel_by_symbol(&sym.name).is_none() {
                log::warn!("kernel symbol `{}` has no metadata", sym.name);
            }
        }
    }

    /// `(first PT_LOAD vaddr, page-rounded span size)`: the device memory the
    /// image needs. The unrounded size is [`image_size`](Self::image_size).
    /// The size is at most [`MAX_LOAD_SPAN`] rounded up to [`PAGE_SIZE`].
    pub fn load_span(&self) -> (u64, u64) {
        // Cannot overflow: image_size <= MAX_LOAD_SPAN.
        let rounded = self.image_size.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        (self.first_vaddr, rounded)
    }

    /// Bytes from the first PT_LOAD's vaddr to the end of the last one.
    pub fn image_size(&self) -> u64 {
        self.image_size
    }

    /// The first PT_LOAD's vaddr (the vaddr that lands at `load_base`).
    pub fn first_vaddr(&self) -> u64 {
        self.first_vaddr
    }

    /// Alignment [`place`](Self::place) requires: `load_base` must be
    /// congruent to the first vaddr modulo this value, which is the largest
    /// PT_LOAD `p_align` clamped to `[256, PAGE_SIZE]` (256 keeps kernel
    /// entries aligned; with a first vaddr of 0 this is page alignment).
    pub fn base_alignment(&self) -> u64 {
        self.base_align
    }

    /// Device address of ELF vaddr `vaddr` when the image is placed at
    /// `load_base`: `load_base + (vaddr - first vaddr)`; `None` when `vaddr`
    /// lies outside the image or the sum overflows.
    pub fn device_address(&self, load_base: u64, vaddr: u64) -> Option<u64> {
        let rel = vaddr.checked_sub(self.first_vaddr)?;
        if rel > self.image_size {
            return None;
        }
        load_base.checked_add(rel)
    }

    /// True when `[vaddr, vaddr + size)` lies inside the load span.
    fn span_contains(&self, vaddr: u64, size: u64) -> bool {
        match vaddr.checked_sub(self.first_vaddr) {
            Some(rel) => rel <= self.image_size && size <= self.image_size - rel,
            None => false,
        }
    }

    /// Whether this code object may run on an agent with ISA `agent`
    /// (same processor, pinned features equal; AMDGPUUsage "Target ID",
    /// as ROCr 5.2's `src/core/runtime/isa.cpp`).
    ///
    /// Errors: `LoadError::IncompatibleIsa` naming both target IDs.
    pub fn check_compatible(&self, agent: &TargetId) -> Result<(), LoadError> {
        Ok(self.target.check_compatible_with_agent(agent)?)
    }

    /// The symbol named `name` (exact ELF name; kernels end in `.kd`).
    pub fn symbol(&self, name: &str) -> Option<&SymbolDef> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// The defined kernel (`*.kd`) symbols.
    pub fn kernel_symbols(&self) -> impl Iterator<Item = &SymbolDef> {
        self.symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::Kernel && s.is_definition)
    }

    /// Copies `len` bytes of the *initial image* at ELF vaddr `vaddr` out of
    /// `bytes` (the file given to `parse`), translating through the program
    /// headers; bytes beyond `p_filesz` (bss) read as zero. Used for kernel
    /// descriptors and `<kernel>_exec_mode` bytes (the global LLVM 16's
    /// `PluginInterface.cpp` reads).
    ///
    /// Errors: `LoadError::Invalid` when `len` exceeds [`MAX_VADDR_READ`], the
    /// range is not inside one PT_LOAD segment, or `bytes` is shorter than
    /// the segment's file range.
    pub fn read_at_vaddr(&self, bytes: &[u8], vaddr: u64, len: u64) -> Result<Vec<u8>, LoadError> {
        if len > MAX_VADDR_READ {
            return Err(LoadError::Invalid(format!(
                "read of {len:#x} bytes at vaddr {vaddr:#x} exceeds the {MAX_VADDR_READ:#x}-byte limit"
            )));
        }
        let seg = self
            .segments
            .iter()
            .find(|s| s.contains(vaddr, len))
            .ok_or_else(|| {
                LoadError::Invalid(format!(
                    "[{vaddr:#x}, +{len:#x}) is not inside one PT_LOAD segment"
                ))
            })?;
        let len_usize = usize::try_from(len)
            .map_err(|_| LoadError::Invalid(format!("read of {len:#x} bytes is too large")))?;
        let mut out = vec![0u8; len_usize];
        let rel = vaddr - seg.vaddr;
        if rel < seg.filesz {
            let n = (seg.filesz - rel).min(len);
            let src = file_range(bytes, seg.file_offset + rel, n).ok_or_else(|| {
                LoadError::Invalid(format!(
                    "file bytes of [{vaddr:#x}, +{n:#x}) are beyond the end of the file"
                ))
            })?;
            out[..src.len()].copy_from_slice(src);
        }
        Ok(out)
    }

    /// The kernel descriptor of kernel symbol `sym`: 64 bytes read at its
    /// vaddr from the file image `bytes` (the bytes given to `parse`).
    ///
    /// Errors (`LoadError::Invalid`): `sym` is not a defined kernel symbol,
    /// the 64 bytes are not inside a PT_LOAD segment, or the entry point
    /// (`sym.vaddr + kernel_code_entry_byte_offset`) is not 256-byte aligned
    /// inside an executable PT_LOAD segment.
    pub fn kernel_descriptor(
        &self,
        bytes: &[u8],
        sym: &SymbolDef,
    ) -> Result<KernelDescriptor, LoadError> {
        if sym.kind != SymbolKind::Kernel || !sym.is_definition {
            return Err(LoadError::Invalid(format!(
                "symbol `{}` is not a defined kernel descriptor (*.kd) symbol",
                sym.name
            )));
        }
        let raw = self
            .read_at_vaddr(bytes, sym.vaddr, KERNEL_DESCRIPTOR_SIZE as u64)
            .map_err(|e| LoadError::Invalid(format!("kernel descriptor `{}`: {e}", sym.name)))?;
        let kd = KernelDescriptor::parse(&raw)?;
        let entry = kd.entry_address(sym.vaddr).ok_or_else(|| {
            LoadError::Invalid(format!(
                "kernel descriptor `{}`: vaddr {:#x} + kernel_code_entry_byte_offset {} overflows",
                sym.name, sym.vaddr, kd.kernel_code_entry_byte_offset
            ))
        })?;
        let in_code = self
            .segments
            .iter()
            .any(|s| s.is_executable() && s.contains(entry, 4) && entry - s.vaddr < s.filesz);
        if !in_code || entry % MIN_BASE_ALIGN != 0 {
            return Err(LoadError::Invalid(format!(
                "kernel descriptor `{}`: entry vaddr {entry:#x} (descriptor {:#x} + offset {}) is not a 256-byte aligned address inside an executable PT_LOAD segment",
                sym.name, sym.vaddr, kd.kernel_code_entry_byte_offset
            )));
        }
        Ok(kd)
    }

    /// Places the image at device address `load_base`: copies every PT_LOAD
    /// segment of `bytes` (the same bytes given to `parse`) to
    /// `dest[vaddr - first vaddr ..]`, zero-fills up to `p_memsz`, then applies
    /// every dynamic relocation (AMDGPUUsage "Relocation Records";
    /// ROCr 5.2's `src/loader/executable.cpp`):
    /// RELATIVE64 = `load_base - first vaddr + A`; ABS64 = `S + A` with
    /// `S = load_base + (st_value - first vaddr)` for symbols defined here and
    /// `S = resolve_external(name)` for undefined ones; ABS32_LO / ABS32_HI =
    /// low / high 32 bits of `S + A`. Every write is bounds-checked.
    ///
    /// `dest` is the host view of the device allocation: at least
    /// [`image_size`](Self::image_size) bytes (the rounded
    /// [`load_span`](Self::load_span) size is what callers allocate).
    ///
    /// Errors: `LoadError::Placement` when `bytes` is not the parsed file,
    /// `dest` is too small, `load_base` violates
    /// [`base_alignment`](Self::base_alignment) or the image would wrap the
    /// address space; `LoadError::UndefinedSymbol` when `resolve_external`
    /// returns `None`; `LoadError::Invalid` if a range fails its check.
    /// On error `dest` may be partially written.
    pub fn place(
        &self,
        bytes: &[u8],
        dest: &mut [u8],
        load_base: u64,
        resolve_external: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<(), LoadError> {
        if bytes.len() != self.file_len {
            return Err(LoadError::Placement(format!(
                "given {} bytes of code object, but {} bytes were parsed",
                bytes.len(),
                self.file_len
            )));
        }
        if (dest.len() as u64) < self.image_size {
            return Err(LoadError::Placement(format!(
                "destination holds {:#x} bytes, the image needs {:#x}",
                dest.len(),
                self.image_size
            )));
        }
        if load_base % self.base_align != self.first_vaddr % self.base_align {
            return Err(LoadError::Placement(format!(
                "load_base {load_base:#x} is not congruent to the first vaddr {:#x} modulo {:#x}",
                self.first_vaddr, self.base_align
            )));
        }
        if load_base.checked_add(self.image_size).is_none() {
            return Err(LoadError::Placement(format!(
                "load_base {load_base:#x} + image size {:#x} overflows",
                self.image_size
            )));
        }

        for (i, seg) in self.segments.iter().enumerate() {
            let src = file_range(bytes, seg.file_offset, seg.filesz).ok_or_else(|| {
                LoadError::Invalid(format!(
                    "PT_LOAD #{i}: file range beyond the end of the file"
                ))
            })?;
            let dst = dest_range(dest, seg.vaddr - self.first_vaddr, seg.memsz)
                .ok_or_else(|| LoadError::Placement(format!("PT_LOAD #{i} does not fit dest")))?;
            let (init, zero) = dst.split_at_mut(src.len());
            init.copy_from_slice(src);
            zero.fill(0);
        }

        let delta = load_base.wrapping_sub(self.first_vaddr);
        for r in &self.relocations {
            let s = match &r.symbol {
                None => 0,
                Some(_) if r.symbol_absolute => r.symbol_value,
                Some(_) if r.symbol_defined => delta.wrapping_add(r.symbol_value),
                Some(name) => resolve_external(name).ok_or_else(|| LoadError::UndefinedSymbol {
                    name: name.clone(),
                    vaddr: r.vaddr,
                })?,
            };
            // Two's complement addition: the addend may be negative.
            let a = r.addend as u64;
            let value = match r.kind {
                RelocKind::Relative64 => delta.wrapping_add(a),
                RelocKind::Abs64 => s.wrapping_add(a),
                RelocKind::Abs32Lo => s.wrapping_add(a) & 0xffff_ffff,
                RelocKind::Abs32Hi => s.wrapping_add(a) >> 32,
            };
            let width = r.kind.width();
            let field = r
                .vaddr
                .checked_sub(self.first_vaddr)
                .and_then(|off| dest_range(dest, off, width))
                .ok_or_else(|| {
                    LoadError::Invalid(format!(
                        "relocation at vaddr {:#x} lies outside the image",
                        r.vaddr
                    ))
                })?;
            let le = value.to_le_bytes();
            field.copy_from_slice(&le[..field.len()]);
        }
        Ok(())
    }
}

/// Checks `e_ident` ([`code_object::elf::check_ident`]); returns
/// `(EI_ABIVERSION, code object version)`.
fn check_ident(bytes: &[u8]) -> Result<(u8, u32), LoadError> {
    let ident = code_object::elf::check_ident(bytes)?;
    Ok((ident.abi_version, ident.code_object_version))
}

/// Validates the PT_LOAD program headers and returns them as segments.
fn load_segments(
    phdrs: &[elf::ProgramHeader64<LittleEndian>],
    file_len: usize,
) -> Result<Vec<Segment>, LoadError> {
    let endian = LittleEndian;
    let mut segments: Vec<Segment> = Vec::new();
    for (i, ph) in phdrs.iter().enumerate() {
        if ph.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let seg = Segment {
            vaddr: ph.p_vaddr(endian),
            memsz: ph.p_memsz(endian),
            file_offset: ph.p_offset(endian),
            filesz: ph.p_filesz(endian),
            flags: ph.p_flags(endian),
            align: ph.p_align(endian),
        };
        let here = format!("program header #{i} (PT_LOAD, p_vaddr {:#x})", seg.vaddr);
        if seg.filesz > seg.memsz {
            return Err(LoadError::Invalid(format!(
                "{here}: p_filesz {:#x} exceeds p_memsz {:#x}",
                seg.filesz, seg.memsz
            )));
        }
        if file_range_end(seg.file_offset, seg.filesz, file_len).is_none() {
            return Err(LoadError::Invalid(format!(
                "{here}: file range p_offset {:#x} + p_filesz {:#x} is beyond the end of the {file_len}-byte file",
                seg.file_offset, seg.filesz
            )));
        }
        if seg.vaddr.checked_add(seg.memsz).is_none() {
            return Err(LoadError::Invalid(format!(
                "{here}: p_vaddr + p_memsz {:#x} overflows",
                seg.memsz
            )));
        }
        if seg.align > 1 && !seg.align.is_power_of_two() {
            return Err(LoadError::Invalid(format!(
                "{here}: p_align {:#x} is not a power of two",
                seg.align
            )));
        }
        if let Some(prev) = segments.last() {
            let prev_end = prev.vaddr + prev.memsz;
            if seg.vaddr < prev_end {
                return Err(LoadError::Invalid(format!(
                    "{here}: overlaps or precedes the previous PT_LOAD (which ends at {prev_end:#x}); PT_LOAD entries must be sorted by p_vaddr"
                )));
            }
        }
        segments.push(seg);
    }
    Ok(segments)
}

/// Finds and decodes the `NT_AMDGPU_METADATA` note (in the `SHT_NOTE`
/// sections, then the `PT_NOTE` segments).
fn read_metadata<'data>(
    header: &Header,
    sections: &object::read::elf::SectionTable<'data, Header, &'data [u8]>,
    bytes: &'data [u8],
) -> Result<CodeObjectMetadata, LoadError> {
    if let Some(desc) = metadata_note(header, sections, bytes)? {
        return Ok(CodeObjectMetadata::parse(desc)?);
    }
    // Kernels are described by their descriptors; the note only adds
    // information (names, arguments). Hand-assembled code objects may lack it,
    // and ROCr loads them, so a missing note is not an error.
    log::warn!("code object has no NT_AMDGPU_METADATA note (owner `AMDGPU`, type 32); loading it without metadata");
    Ok(CodeObjectMetadata::default())
}

/// The UTF-8 name of `sym` in `table`.
fn symbol_name<'data>(
    table: &object::read::elf::SymbolTable<'data, Header, &'data [u8]>,
    sym: &elf::Sym64<LittleEndian>,
    index: SymbolIndex,
    table_name: &str,
) -> Result<String, LoadError> {
    let raw = invalid(table.symbol_name(LittleEndian, sym), || {
        format!(
            "{table_name} symbol #{}: st_name {:#x}",
            index.0,
            sym.st_name(LittleEndian)
        )
    })?;
    match std::str::from_utf8(raw) {
        Ok("") => Err(LoadError::Invalid(format!(
            "{table_name} symbol #{} is a global object with an empty name",
            index.0
        ))),
        Ok(s) => Ok(s.to_string()),
        Err(_) => Err(LoadError::Invalid(format!(
            "{table_name} symbol #{}: name is not valid UTF-8",
            index.0
        ))),
    }
}

/// End of the file range `[offset, offset + len)` if it fits in `file_len`.
fn file_range_end(offset: u64, len: u64, file_len: usize) -> Option<u64> {
    offset
        .checked_add(len)
        .filter(|&end| end <= file_len as u64)
}

/// `bytes[offset .. offset + len]`, `None` when out of range.
fn file_range(bytes: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    bytes.get(start..end)
}

/// `dest[offset .. offset + len]` mutably, `None` when out of range.
fn dest_range(dest: &mut [u8], offset: u64, len: u64) -> Option<&mut [u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    dest.get_mut(start..end)
}
