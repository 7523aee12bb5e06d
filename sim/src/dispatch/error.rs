//! Why a dispatch failed, where in the grid, and the HSA status each failure
//! is reported with.
//!
//! This module owns [`DispatchError`], [`FaultSite`] and the mapping of ISA
//! faults onto `hsa_status_t` (LLVM's `llvm/docs/AMDGPUUsage.rst`, "Trap Handler
//! ABI"; the statuses of `hsa/hsa.h` and `hsa/hsa_ext_amd.h`), using the status
//! constants of `hsa-sys`.

use hsa_sys::{
    hsa_status_t, HSA_STATUS_ERROR, HSA_STATUS_ERROR_EXCEPTION,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION, HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT, HSA_STATUS_ERROR_MEMORY_FAULT,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
};
use isa::Fault;

use crate::aql::InvalidGeometry;

/// Where in the grid a fault happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSite {
    /// Workgroup id (x, y, z).
    pub workgroup: [u32; 3],
    /// Wave index inside the workgroup.
    pub wave: u32,
    /// Lane of a vector memory fault, if known.
    pub lane: Option<u32>,
}

/// A scratch access past a wave's slot ([`DispatchError::PrivateOverflow`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}workgroup ({}, {}, {}) wave {}: private segment overflow: {declared} bytes per lane declared, lane {lane} accessed offset {offset} (the wave's scratch slot holds {slot} bytes per lane; {fault})", kernel.as_ref().map(|k| format!("kernel `{k}`: ")).unwrap_or_default(), site.workgroup[0], site.workgroup[1], site.workgroup[2], site.wave)]
pub struct PrivateOverflow {
    /// The kernel's name, when the runtime knows it.
    pub kernel: Option<String>,
    /// Bytes per lane the packet declared (`private_segment_size`).
    pub declared: u32,
    /// Bytes per lane of the wave's scratch slot.
    pub slot: u64,
    /// The lane whose access overflowed.
    pub lane: u32,
    /// Its byte offset in the lane's private segment.
    pub offset: u64,
    /// The memory fault it raised.
    pub fault: Fault,
    /// Where it happened.
    pub site: FaultSite,
}

/// Why a dispatch failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    /// A wave faulted.
    #[error("workgroup ({}, {}, {}) wave {}{}: {fault}", site.workgroup[0], site.workgroup[1], site.workgroup[2], site.wave, site.lane.map(|l| format!(" lane {l}")).unwrap_or_default())]
    Fault {
        /// The fault.
        fault: Fault,
        /// Where it happened.
        site: FaultSite,
    },
    /// A wave's scratch access fell past its slot of the queue's scratch buffer
    /// (see `wave_setup::ScratchLayout`): the kernel used more private memory
    /// per lane than its packet declared, more than the slot absorbs. On
    /// hardware it would read or write another wave's scratch; here it stops
    /// the dispatch as a memory fault at the address.
    #[error("{0}")]
    PrivateOverflow(Box<PrivateOverflow>),
    /// The kernel object is not a readable kernel descriptor, or its entry point is
    /// not in memory.
    #[error("invalid kernel object at {address:#x}: {reason}")]
    InvalidKernelObject {
        /// The packet's kernel_object.
        address: u64,
        /// What is wrong.
        reason: String,
    },
    /// The request's shape breaks gfx90a's limits (zero sizes, too large a
    /// workgroup or LDS; the rule of [`crate::aql::Geometry::check`]).
    #[error("invalid dispatch: {0}")]
    InvalidRequest(InvalidGeometry),
    /// Host memory for scratch could not be provided.
    #[error("out of resources: {0}")]
    OutOfResources(String),
    /// The virtual device panicked while running workgroup `workgroup` (a bug of the
    /// device, not of the kernel): the dispatch fails instead of never completing.
    #[error("internal error of the virtual device in workgroup {workgroup}: {message}")]
    Internal {
        /// Linear id of the workgroup that was running.
        workgroup: u64,
        /// The panic's message.
        message: String,
    },
}

impl DispatchError {
    /// The HSA status to report for this error: `HSA_STATUS_ERROR_MEMORY_FAULT` (43)
    /// for memory faults, `HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION` (42) for illegal or
    /// unsupported instructions and bad PCs, `HSA_STATUS_ERROR_EXCEPTION` (0x1016) for
    /// `s_trap`, `HSA_STATUS_ERROR_INVALID_CODE_OBJECT` (0x1010) for a bad kernel
    /// object, `HSA_STATUS_ERROR_INVALID_ARGUMENT` for a malformed request,
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`, and `HSA_STATUS_ERROR` (0x1000) for the
    /// instruction budget.
    pub fn hsa_status(&self) -> hsa_status_t {
        match self {
            DispatchError::Fault { fault, .. } => match fault {
                Fault::Memory { .. }
                | Fault::MisalignedAtomic { .. }
                | Fault::LdsOutOfRange { .. } => HSA_STATUS_ERROR_MEMORY_FAULT,
                Fault::Unsupported { .. } | Fault::Illegal(_) | Fault::BadPc { .. } => {
                    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
                }
                Fault::Trap { .. } => HSA_STATUS_ERROR_EXCEPTION,
                Fault::InstructionLimit { .. } | Fault::Aborted { .. } => HSA_STATUS_ERROR,
            },
            DispatchError::PrivateOverflow(_) => HSA_STATUS_ERROR_MEMORY_FAULT,
            DispatchError::InvalidKernelObject { .. } => HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
            DispatchError::InvalidRequest(_) => HSA_STATUS_ERROR_INVALID_ARGUMENT,
            DispatchError::OutOfResources(_) => HSA_STATUS_ERROR_OUT_OF_RESOURCES,
            DispatchError::Internal { .. } => HSA_STATUS_ERROR,
        }
    }

    /// The faulting device address of a memory fault (global address; LDS offset for
    /// LDS faults).
    pub fn fault_address(&self) -> Option<u64> {
        match self.fault()?.0 {
            Fault::Memory { address, .. } | Fault::MisalignedAtomic { address, .. } => {
                Some(*address)
            }
            Fault::LdsOutOfRange { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// The fault and its site, for wave faults.
    pub fn fault(&self) -> Option<(&Fault, &FaultSite)> {
        match self {
            DispatchError::Fault { fault, site } => Some((fault, site)),
            DispatchError::PrivateOverflow(o) => Some((&o.fault, &o.site)),
            _ => None,
        }
    }

    /// This error naming the kernel `name` where it can (a private segment
    /// overflow); others are returned as they are.
    pub fn with_kernel(self, name: impl FnOnce() -> Option<String>) -> DispatchError {
        match self {
            DispatchError::PrivateOverflow(mut o) if o.kernel.is_none() => {
                o.kernel = name();
                DispatchError::PrivateOverflow(o)
            }
            other => other,
        }
    }

    /// Whether this is a wave stopped because another wave faulted first (not
    /// news next to that first fault).
    pub fn is_abort(&self) -> bool {
        matches!(
            self,
            DispatchError::Fault {
                fault: Fault::Aborted { .. },
                ..
            }
        )
    }
}
