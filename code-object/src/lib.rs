//! What an AMDGPU HSA code object says about itself, read from its bytes
//! alone (no HSA, no device): the target it was built for, the kernels its
//! `NT_AMDGPU_METADATA` note describes, and the 64-byte kernel descriptors.
//!
//! One crate for the rules that the plugin (`omptarget_amdgpu::image`), the
//! virtual device's loader (`hsa_runtime64::loader`) and `amdhsa-loader`
//! all need, so each is written once. Facts follow LLVM 16's
//! `llvm/docs/AMDGPUUsage.rst` (sections named on each item) and
//! `llvm/BinaryFormat/ELF.h`.
//!
//! * [`target`]: processors by `EF_AMDGPU_MACH`, the `e_flags` feature
//!   fields, target IDs ([`TargetId`], LLVM's textual form and the offload
//!   plugin's compatibility rule) and ISAs ([`Isa`], the loader's view with
//!   "any" and "unsupported" feature settings and ROCr's rule).
//! * [`metadata`]: the msgpack `NT_AMDGPU_METADATA` note (code object V3 to
//!   V5) decoded into [`Metadata`] / [`KernelMetadata`] /
//!   [`KernelArgMetadata`].
//! * [`descriptor`]: the kernel descriptor layout and its bit fields
//!   ([`KernelDescriptor`]).
//! * [`elf`]: the AMDGPU ELF constants, a lenient ELF view ([`elf::Elf`])
//!   and the image-level queries built on it ([`elf_target_id`],
//!   [`kernel_metadata`]).
//!
//! Nothing here panics on input: malformed bytes give an [`Error`].

pub mod descriptor;
pub mod elf;
pub mod metadata;
pub mod target;

pub use descriptor::{KernelDescriptor, KERNEL_DESCRIPTOR_SIZE};
pub use elf::{elf_target_id, kernel_metadata};
pub use metadata::{KernelArgMetadata, KernelMetadata, Metadata};
pub use target::{
    target_ids_compatible, FeatureSetting, Isa, TargetId, ISA_NAME_PREFIX, MACH_GFX90A,
};

/// Everything that can be wrong with a code object, by what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The bytes do not start with a 64-bit little-endian ELF header.
    #[error("device image is not a 64-bit little-endian ELF file")]
    NotElf,
    /// The ELF structures (headers, sections, symbols, notes) are malformed;
    /// the text names the structure.
    #[error("malformed ELF device image: {0}")]
    Malformed(String),
    /// An ELF for another machine than `EM_AMDGPU` (AMDGPUUsage "Header").
    #[error("device image is an ELF for machine {0}, not EM_AMDGPU (224)")]
    WrongMachine(u16),
    /// `EI_OSABI` is not `ELFOSABI_AMDGPU_HSA` (AMDGPUUsage "Header"), so
    /// `e_flags` cannot be read as an AMDHSA code object's.
    #[error("device image has OS/ABI (e_ident[EI_OSABI]) {0}, not ELFOSABI_AMDGPU_HSA (64)")]
    NotAmdhsa(u8),
    /// Fewer bytes than an ELF identification (`e_ident`, 16 bytes).
    #[error("file is {0} bytes long, too short for an ELF header")]
    TooShort(usize),
    /// `e_ident[0..4]` is not the ELF magic.
    #[error("bad ELF magic (e_ident[0..4] is not 7f 'E' 'L' 'F')")]
    BadMagic,
    /// `EI_CLASS` is not `ELFCLASS64`.
    #[error("e_ident[EI_CLASS] is {0}, not ELFCLASS64 (2)")]
    NotElf64(u8),
    /// `EI_DATA` is not `ELFDATA2LSB`.
    #[error("e_ident[EI_DATA] is {0}, not ELFDATA2LSB (1)")]
    NotLittleEndian(u8),
    /// `EI_VERSION` is not `EV_CURRENT`.
    #[error("e_ident[EI_VERSION] is {0}, not EV_CURRENT (1)")]
    BadElfVersion(u8),
    /// `EI_ABIVERSION` 0: code object V2, whose target and metadata live in
    /// notes this crate does not read.
    #[error(
        "code object V2 (EI_ABIVERSION 0) is not supported; build for code object V3, V4 or V5"
    )]
    CodeObjectV2,
    /// `EI_ABIVERSION` names no HSA code object version (AMDGPUUsage
    /// "Header": 0 = V2 ... 3 = V5).
    #[error("e_ident[EI_ABIVERSION] {0} is not a known HSA code object version (1..3 = V3..V5)")]
    UnknownAbiVersion(u8),
    /// `e_flags` name no processor LLVM 16 knows, or `EI_ABIVERSION` has no
    /// target in `e_flags` (code object V2).
    #[error(
        "unknown AMDGPU target in ELF header: e_flags {e_flags:#x}, ABI version {abi_version}"
    )]
    UnknownTarget {
        /// `e_flags` of the image.
        e_flags: u32,
        /// `EI_ABIVERSION` of the image.
        abi_version: u8,
    },
    /// `EF_AMDGPU_MACH` is 0: the code object names no processor.
    #[error("e_flags {e_flags:#x}: EF_AMDGPU_MACH is 0 (no processor)")]
    NoProcessor {
        /// `e_flags` of the code object.
        e_flags: u32,
    },
    /// `EI_ABIVERSION` is not one whose `e_flags` layout is known (1 = V3,
    /// 2 = V4, 3 = V5; AMDGPUUsage "Header").
    #[error("EI_ABIVERSION {0} has no known e_flags layout")]
    UnsupportedAbiVersion(u8),
    /// The image has no `NT_AMDGPU_METADATA` note.
    #[error("device image has no NT_AMDGPU_METADATA note")]
    NoMetadata,
    /// The `NT_AMDGPU_METADATA` note is not the msgpack document
    /// AMDGPUUsage "Code Object V3 Metadata" describes; the text names the
    /// key (and kernel / argument index) that is missing, mistyped or out
    /// of range.
    #[error("invalid AMDGPU metadata: {0}")]
    Metadata(String),
    /// The code object's ISA cannot run on the agent's.
    #[error("code object target `{code_object}` is incompatible with the agent's ISA `{agent}`")]
    IncompatibleIsa {
        /// Target ID of the code object (e.g. `gfx90a:xnack+`).
        code_object: String,
        /// Target ID of the agent (e.g. `gfx90a:sramecc+:xnack-`).
        agent: String,
    },
    /// Fewer than [`KERNEL_DESCRIPTOR_SIZE`] bytes were given for a kernel
    /// descriptor.
    #[error("kernel descriptor needs {KERNEL_DESCRIPTOR_SIZE} bytes, got {0}")]
    DescriptorTooShort(usize),
}

impl From<object::read::Error> for Error {
    fn from(e: object::read::Error) -> Self {
        Error::Malformed(e.to_string())
    }
}
