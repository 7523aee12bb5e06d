//! Why a code object does not load: [`LoadError`], and the HSA status each kind
//! stands for ([`LoadErrorKind`]).

/// The category of a [`LoadError`], i.e. which HSA status it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadErrorKind {
    /// The bytes are not a valid (or not a supported) code object:
    /// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT`.
    InvalidCodeObject,
    /// The code object is valid but built for an ISA the agent cannot run:
    /// `HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS`.
    IncompatibleIsa,
    /// A relocation names a symbol that is defined neither in the image nor
    /// by the caller's resolver: `HSA_STATUS_ERROR_VARIABLE_UNDEFINED`.
    VariableUndefined,
    /// The caller passed an unusable placement (buffer too small, base address
    /// misaligned): a bug of the caller, `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
    InvalidArgument,
}

/// Errors of the code object loader. Every message names what is wrong
/// (which header field, which section or note, which offset or address).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// Malformed ELF structure (header, program headers, sections, symbols,
    /// relocations, kernel descriptor).
    #[error("invalid code object: {0}")]
    Invalid(String),
    /// Well-formed, but a kind of code object this loader does not accept
    /// (code object V2, an unknown ABI version, a non-HSA OS/ABI, ET_REL...).
    #[error("unsupported code object: {0}")]
    Unsupported(String),
    /// The `NT_AMDGPU_METADATA` note is missing or malformed.
    #[error("invalid AMDGPU metadata note: {0}")]
    Metadata(String),
    /// The code object's target ID is not compatible with the agent's.
    #[error("code object target `{code_object}` is incompatible with the agent's ISA `{agent}`")]
    IncompatibleIsa {
        /// Target ID of the code object (e.g. `gfx90a:xnack+`).
        code_object: String,
        /// Target ID of the agent (e.g. `gfx90a:sramecc+:xnack-`).
        agent: String,
    },
    /// A relocation refers to a symbol the image does not define and the
    /// external resolver does not know.
    #[error("relocation at vaddr {vaddr:#x} refers to undefined symbol `{name}`")]
    UndefinedSymbol {
        /// The symbol's ELF name.
        name: String,
        /// ELF virtual address of the relocated field.
        vaddr: u64,
    },
    /// The caller's placement request is unusable.
    #[error("invalid placement: {0}")]
    Placement(String),
}

impl From<code_object::Error> for LoadError {
    /// Sorts the shared crate's errors into the loader's categories: a
    /// metadata error stays one, an incompatible ISA stays one, an ABI
    /// version or OS/ABI the loader does not take is unsupported, the rest
    /// is an invalid code object.
    fn from(e: code_object::Error) -> Self {
        use code_object::Error as E;
        match e {
            E::Metadata(why) => LoadError::Metadata(why),
            E::IncompatibleIsa { code_object, agent } => {
                LoadError::IncompatibleIsa { code_object, agent }
            }
            E::Malformed(why) => LoadError::Invalid(why),
            e @ (E::UnsupportedAbiVersion(_)
            | E::NotAmdhsa(_)
            | E::CodeObjectV2
            | E::UnknownAbiVersion(_)) => LoadError::Unsupported(e.to_string()),
            e => LoadError::Invalid(e.to_string()),
        }
    }
}

impl LoadError {
    /// Which HSA status this error maps to (see [`LoadErrorKind`]).
    pub fn kind(&self) -> LoadErrorKind {
        match self {
            LoadError::Invalid(_) | LoadError::Unsupported(_) | LoadError::Metadata(_) => {
                LoadErrorKind::InvalidCodeObject
            }
            LoadError::IncompatibleIsa { .. } => LoadErrorKind::IncompatibleIsa,
            LoadError::UndefinedSymbol { .. } => LoadErrorKind::VariableUndefined,
            LoadError::Placement(_) => LoadErrorKind::InvalidArgument,
        }
    }

    /// True when the code object is fine but made for another ISA
    /// (`HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS`).
    pub fn is_incompatible_isa(&self) -> bool {
        self.kind() == LoadErrorKind::IncompatibleIsa
    }

    /// True for every parse or validation failure of the code object itself
    /// (`HSA_STATUS_ERROR_INVALID_CODE_OBJECT`).
    pub fn is_invalid_code_object(&self) -> bool {
        self.kind() == LoadErrorKind::InvalidCodeObject
    }

    /// True when a relocation names a symbol nobody defines
    /// (`HSA_STATUS_ERROR_VARIABLE_UNDEFINED`).
    pub fn is_undefined_symbol(&self) -> bool {
        self.kind() == LoadErrorKind::VariableUndefined
    }
}
