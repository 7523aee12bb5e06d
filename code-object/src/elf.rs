//! The AMDGPU side of ELF (AMDGPUUsage "ELF Code Object": "Header", "Note
//! Records"): the header values an AMDHSA code object carries, a lenient
//! view of an ELF image, and the image-level queries built on it (which
//! target the image declares, which kernels its metadata note describes).
//!
//! The view ([`Elf`]) parses the file header and the section header table
//! up front, symbol tables and notes only when asked. A part the caller does
//! not use may be damaged (a `.symtab` whose offset points outside the file,
//! stray bytes in `.comment`) without making the image unreadable: like
//! ROCm's loader, callers check what they need, not every header
//! (`object`'s `ElfFile64` parses both symbol tables eagerly and refuses
//! such images).

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, SectionTable, SymbolTable};
use object::LittleEndian as LE;

use crate::metadata::{parse_kernels, KernelMetadata};
use crate::target::TargetId;
use crate::Error;

/// `EM_AMDGPU`: `e_machine` of every AMDGPU code object.
pub const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`: `EI_OSABI` of HSA code objects.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA`: the code object V3+ metadata note type (owner
/// [`AMDGPU_NOTE_OWNER`]).
pub const NT_AMDGPU_METADATA: u32 = 32;
/// Owner name of AMDGPU notes.
pub const AMDGPU_NOTE_OWNER: &[u8] = b"AMDGPU";

/// `e_ident` index of the file class.
pub const EI_CLASS: usize = 4;
/// `e_ident` index of the data encoding.
pub const EI_DATA: usize = 5;
/// `e_ident` index of the ELF version.
pub const EI_VERSION: usize = 6;
/// `e_ident` index of the OS/ABI.
pub const EI_OSABI: usize = 7;
/// `e_ident` index of the ABI version (the code object version for
/// `ELFOSABI_AMDGPU_HSA`).
pub const EI_ABIVERSION: usize = 8;

/// What the ELF identification (`e_ident`) of an AMDHSA code object says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ident {
    /// `EI_ABIVERSION`: 1, 2 or 3.
    pub abi_version: u8,
    /// The code object version it stands for: 3, 4 or 5.
    pub code_object_version: u32,
}

/// Checks the ELF identification of an AMDHSA code object field by field
/// (AMDGPUUsage "Header"): magic, `ELFCLASS64`, `ELFDATA2LSB`,
/// `EV_CURRENT`, `ELFOSABI_AMDGPU_HSA`, and an `EI_ABIVERSION` of code
/// object V3 (1), V4 (2) or V5 (3).
///
/// Errors: [`Error::TooShort`], [`Error::BadMagic`], [`Error::NotElf64`],
/// [`Error::NotLittleEndian`], [`Error::BadElfVersion`],
/// [`Error::NotAmdhsa`], [`Error::CodeObjectV2`],
/// [`Error::UnknownAbiVersion`], each naming the field.
pub fn check_ident(bytes: &[u8]) -> Result<Ident, Error> {
    let ident = bytes.get(..16).ok_or(Error::TooShort(bytes.len()))?;
    if ident[..4] != elf::ELFMAG {
        return Err(Error::BadMagic);
    }
    let field = |at: usize, want: u8, error: fn(u8) -> Error| match ident[at] {
        v if v == want => Ok(()),
        v => Err(error(v)),
    };
    field(EI_CLASS, elf::ELFCLASS64, Error::NotElf64)?;
    field(EI_DATA, elf::ELFDATA2LSB, Error::NotLittleEndian)?;
    field(EI_VERSION, elf::EV_CURRENT, Error::BadElfVersion)?;
    field(EI_OSABI, ELFOSABI_AMDGPU_HSA, Error::NotAmdhsa)?;
    let abi_version = ident[EI_ABIVERSION];
    let code_object_version = match abi_version {
        0 => return Err(Error::CodeObjectV2),
        1 => 3,
        2 => 4,
        3 => 5,
        other => return Err(Error::UnknownAbiVersion(other)),
    };
    Ok(Ident {
        abi_version,
        code_object_version,
    })
}

/// The 64-bit little-endian ELF file header type this crate reads.
pub type Header = elf::FileHeader64<LE>;

/// Whether `head` (an image's first bytes) starts a 64-bit little-endian
/// ELF header: the magic, `EI_CLASS` = `ELFCLASS64`, `EI_DATA` =
/// `ELFDATA2LSB`, and at least the 64 bytes of the header.
pub fn is_elf64_le(head: &[u8]) -> bool {
    head.len() >= 64
        && head.starts_with(&elf::ELFMAG)
        && head[EI_CLASS] == elf::ELFCLASS64
        && head[EI_DATA] == elf::ELFDATA2LSB
}

/// A lenient view of a 64-bit little-endian ELF image (see the module
/// documentation): the file header and the section header table.
pub struct Elf<'d> {
    /// The image bytes.
    pub data: &'d [u8],
    /// The file header.
    pub header: &'d Header,
    /// The section header table (empty when the image has none).
    pub sections: SectionTable<'d, Header>,
}

impl<'d> Elf<'d> {
    /// Parses the file header and the section header table of `data`,
    /// which must be 8-byte aligned ([`with_elf`] takes care of that).
    ///
    /// Errors: [`Error::Malformed`] naming what does not parse.
    pub fn parse(data: &'d [u8]) -> Result<Elf<'d>, Error> {
        let header = Header::parse(data)?;
        let sections = header.sections(LE, data)?;
        Ok(Elf {
            data,
            header,
            sections,
        })
    }

    /// The symbol table of type `kind` (`SHT_SYMTAB` / `SHT_DYNSYM`),
    /// empty when the image has none.
    ///
    /// Errors: [`Error::Malformed`] when the table or its strings lie
    /// outside the image.
    pub fn symbols(&self, kind: u32) -> Result<SymbolTable<'d, Header>, Error> {
        Ok(self.sections.symbols(LE, self.data, kind)?)
    }

    /// The descriptor bytes of the first `NT_AMDGPU_METADATA` note
    /// ([`metadata_note`]).
    pub fn metadata_note(&self) -> Result<Option<&'d [u8]>, Error> {
        metadata_note(self.header, &self.sections, self.data)
    }

    /// The target ID the header declares ([`TargetId::from_elf_flags`]).
    ///
    /// Errors: [`Error::WrongMachine`] unless `EM_AMDGPU`,
    /// [`Error::NotAmdhsa`] when `EI_OSABI` is not 64,
    /// [`Error::UnknownTarget`] for unknown `e_flags` or ABI version.
    pub fn target_id(&self) -> Result<TargetId, Error> {
        self.require_amdgpu()?;
        let ident = self.header.e_ident();
        if ident.os_abi != ELFOSABI_AMDGPU_HSA {
            return Err(Error::NotAmdhsa(ident.os_abi));
        }
        let e_flags = self.header.e_flags(LE);
        let abi_version = ident.abi_version;
        TargetId::from_elf_flags(e_flags, abi_version).ok_or(Error::UnknownTarget {
            e_flags,
            abi_version,
        })
    }

    /// `Ok` when `e_machine` is `EM_AMDGPU`, else [`Error::WrongMachine`].
    pub fn require_amdgpu(&self) -> Result<(), Error> {
        match self.header.e_machine(LE) {
            EM_AMDGPU => Ok(()),
            other => Err(Error::WrongMachine(other)),
        }
    }
}

/// Parses `bytes` as a 64-bit little-endian ELF ([`Elf::parse`]) and runs
/// `f` on it, copying the bytes to an 8-byte aligned buffer first when they
/// are misaligned (the `object` parser requires natural alignment).
///
/// Errors: [`Error::NotElf`] unless [`is_elf64_le`]; [`Error::Malformed`]
/// from the parse; whatever `f` returns.
pub fn with_elf<T, E: From<Error>>(
    bytes: &[u8],
    f: impl FnOnce(&Elf<'_>) -> Result<T, E>,
) -> Result<T, E> {
    if !is_elf64_le(bytes) {
        return Err(Error::NotElf.into());
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

/// Like [`with_elf`], and also requires `EM_AMDGPU` ([`Error::WrongMachine`]).
pub fn with_amdgpu_elf<T, E: From<Error>>(
    bytes: &[u8],
    f: impl FnOnce(&Elf<'_>) -> Result<T, E>,
) -> Result<T, E> {
    with_elf(bytes, |file| {
        file.require_amdgpu()?;
        f(file)
    })
}

/// The descriptor bytes of the first note with owner `AMDGPU` and type
/// `NT_AMDGPU_METADATA` (AMDGPUUsage "Note Records"), searched in the note
/// sections, then in the note segments; `None` when there is none.
///
/// Errors: [`Error::Malformed`] naming the section or program header whose
/// notes do not parse.
pub fn metadata_note<'d>(
    header: &Header,
    sections: &SectionTable<'d, Header>,
    data: &'d [u8],
) -> Result<Option<&'d [u8]>, Error> {
    let malformed = |what: String, e: object::read::Error| Error::Malformed(format!("{what}: {e}"));
    for (i, section) in sections.enumerate() {
        let here = || format!("section #{} (SHT_NOTE)", i.0);
        let notes = section.notes(LE, data).map_err(|e| malformed(here(), e))?;
        if let Some(mut notes) = notes {
            while let Some(note) = notes.next().map_err(|e| malformed(here(), e))? {
                if note.name() == AMDGPU_NOTE_OWNER && note.n_type(LE) == NT_AMDGPU_METADATA {
                    return Ok(Some(note.desc()));
                }
            }
        }
    }
    let segments = header
        .program_headers(LE, data)
        .map_err(|e| malformed("program headers".to_string(), e))?;
    for (i, segment) in segments.iter().enumerate() {
        let here = || format!("program header #{i} (PT_NOTE)");
        let notes = segment.notes(LE, data).map_err(|e| malformed(here(), e))?;
        if let Some(mut notes) = notes {
            while let Some(note) = notes.next().map_err(|e| malformed(here(), e))? {
                if note.name() == AMDGPU_NOTE_OWNER && note.n_type(LE) == NT_AMDGPU_METADATA {
                    return Ok(Some(note.desc()));
                }
            }
        }
    }
    Ok(None)
}

/// The target ID an AMDGPU ELF image declares in its header
/// ([`Elf::target_id`]).
///
/// Errors: [`Error::NotElf`] / [`Error::Malformed`] /
/// [`Error::WrongMachine`] for non-AMDGPU input, [`Error::NotAmdhsa`] when
/// OS/ABI is not 64, [`Error::UnknownTarget`] for unknown `e_flags` or ABI
/// version.
pub fn elf_target_id(bytes: &[u8]) -> Result<TargetId, Error> {
    with_elf(bytes, |file| file.target_id())
}

/// The kernels described by the image's `NT_AMDGPU_METADATA` note, in note
/// order, read as the offload plugin does ([`parse_kernels`]).
///
/// Errors: not an AMDGPU ELF / malformed ([`Error::NotElf`],
/// [`Error::Malformed`], [`Error::WrongMachine`]); [`Error::NoMetadata`]
/// when there is no such note; [`Error::Metadata`] when the note is not a
/// msgpack map with an `amdhsa.kernels` array of maps each having `.name`.
pub fn kernel_metadata(bytes: &[u8]) -> Result<Vec<KernelMetadata>, Error> {
    with_amdgpu_elf(bytes, |file| {
        let desc = file.metadata_note()?.ok_or(Error::NoMetadata)?;
        parse_kernels(desc)
    })
}
