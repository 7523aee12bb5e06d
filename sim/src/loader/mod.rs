//! The code object loader of the virtual device: parsing, validation and
//! placement of AMDGPU HSA code objects (code object V3, V4 and V5).
//!
//! This module is pure: it reads the bytes of a code object, validates them
//! and copies them into a caller-provided buffer; it owns no device memory and
//! knows nothing of agents or executables beyond the target ID it is asked to
//! check against.
//!
//! Facts followed: LLVM's `llvm/docs/AMDGPUUsage.rst` ("ELF Code Object":
//! "Header", "Sections", "Note Records", "Symbols", "Relocation Records";
//! "Code Object V4 Metadata", "Code Object V5 Metadata", "Kernel Descriptor")
//! and ROCr 5.2's loader (`src/loader/executable.cpp` of ROCR-Runtime
//! `rocm-5.2.3`).
//!
//! * [`CodeObject::parse`] validates the ELF header, program headers, the
//!   dynamic symbol table, the dynamic relocations and the
//!   `NT_AMDGPU_METADATA` note.
//! * [`CodeObject::place`] copies the `PT_LOAD` segments into device memory
//!   and applies the dynamic relocations.
//! * [`KernelDescriptor`] decodes the 64-byte kernel descriptor.
//! * [`TargetId`] decodes `e_flags` and decides ISA compatibility.
//!
//! The code object knowledge itself (target IDs, the metadata note, the
//! kernel descriptor) lives in the `code_object` crate, shared with the
//! plugin; this module re-exports it under the loader's names.
//!
//! Every malformed input yields a [`LoadError`]; nothing here panics on input
//! or allocates from an unchecked length (load spans are capped at
//! [`MAX_LOAD_SPAN`]).
//!
//! Symbols are taken from `.dynsym` (falling back to `.symtab`); see the
//! notes at the top of `elf.rs` for this and the other choices.

mod elf;
mod error;

pub use code_object::{
    FeatureSetting, Isa as TargetId, KernelArgMetadata, KernelDescriptor, KernelMetadata,
    Metadata as CodeObjectMetadata, ISA_NAME_PREFIX, KERNEL_DESCRIPTOR_SIZE, MACH_GFX90A,
};
pub use elf::{
    CodeObject, RelocKind, Relocation, Segment, SymbolDef, SymbolKind, MAX_LOAD_SPAN,
    MAX_VADDR_READ, PAGE_SIZE,
};
pub use error::{LoadError, LoadErrorKind};
