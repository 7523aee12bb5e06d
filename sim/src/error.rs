//! The virtual device's error type and its mapping onto `hsa_status_t`.

use hsa_sys::*;

/// Every failure the virtual device can report through the HSA C API.
///
/// Each variant maps onto one `hsa_status_t` (see [`SimError::status`]); the
/// message says which argument or object was wrong, and is logged at the C
/// boundary before the status is returned.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// `HSA_STATUS_ERROR_NOT_INITIALIZED`: called while the init count is 0.
    #[error("the HSA runtime is not initialized (call hsa_init first)")]
    NotInitialized,
    /// `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// `HSA_STATUS_ERROR_INVALID_AGENT`.
    #[error("invalid agent handle {0:#x}")]
    InvalidAgent(u64),
    /// `HSA_STATUS_ERROR_INVALID_SIGNAL`.
    #[error("invalid signal handle {0:#x}")]
    InvalidSignal(u64),
    /// `HSA_STATUS_ERROR_INVALID_QUEUE`.
    #[error("invalid queue pointer {0:#x}")]
    InvalidQueue(u64),
    /// `HSA_STATUS_ERROR_INVALID_MEMORY_POOL`.
    #[error("invalid memory pool handle {0:#x}")]
    InvalidMemoryPool(u64),
    /// `HSA_STATUS_ERROR_INVALID_ISA`.
    #[error("invalid ISA handle {0:#x}")]
    InvalidIsa(u64),
    /// `HSA_STATUS_ERROR_INVALID_ALLOCATION`.
    #[error("invalid allocation: {0}")]
    InvalidAllocation(String),
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
    #[error("out of resources: {0}")]
    OutOfResources(String),
    /// `HSA_STATUS_ERROR_INVALID_QUEUE_CREATION`.
    #[error("cannot create the queue: {0}")]
    InvalidQueueCreation(String),
    /// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT`.
    #[error("invalid code object: {0}")]
    InvalidCodeObject(String),
    /// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER`.
    #[error("invalid code object reader handle {0:#x}")]
    InvalidCodeObjectReader(u64),
    /// `HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS` (for example an image for another ISA).
    #[error("incompatible arguments: {0}")]
    Incompatible(String),
    /// `HSA_STATUS_ERROR_INVALID_EXECUTABLE`.
    #[error("invalid executable handle {0:#x}")]
    InvalidExecutable(u64),
    /// `HSA_STATUS_ERROR_FROZEN_EXECUTABLE`.
    #[error("the executable is frozen")]
    FrozenExecutable,
    /// `HSA_STATUS_ERROR_INVALID_SYMBOL_NAME`.
    #[error("no symbol named {0:?}")]
    InvalidSymbolName(String),
    /// `HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL`.
    #[error("invalid executable symbol handle {0:#x}")]
    InvalidExecutableSymbol(u64),
    /// `HSA_STATUS_ERROR_VARIABLE_UNDEFINED`.
    #[error("undefined variable {0:?}")]
    VariableUndefined(String),
    /// `HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED`.
    #[error("variable {0:?} is already defined")]
    VariableAlreadyDefined(String),
    /// `HSA_STATUS_ERROR_INVALID_RUNTIME_STATE`.
    #[error("invalid runtime state: {0}")]
    InvalidRuntimeState(String),
    /// `HSA_STATUS_ERROR`: `hsa_queue_create` on an agent that is not a kernel
    /// agent (the CPU agent), as ROCr answers.
    #[error("queues can only be created on a GPU agent (agent {0:#x} is not one)")]
    QueueOnNonKernelAgent(u64),
    /// `HSA_STATUS_ERROR`: `hsa_amd_agents_allow_access` on an address that is
    /// not the base of a runtime allocation.
    #[error("{0:#x} is not the base of a runtime allocation")]
    NotAllocationBase(u64),
    /// `HSA_STATUS_ERROR`: an async copy with no GPU agent's copy engine to run it.
    #[error("no GPU agent to run the copy")]
    NoCopyEngine,
    /// `HSA_STATUS_ERROR`: `hsa_system_get_major_extension_table` for an
    /// extension the virtual device has no function table for.
    #[error("extension {extension:#x} version {version_major} has no function table in the virtual device")]
    NoExtensionTable {
        /// The extension id (`HSA_EXTENSION_*`).
        extension: u16,
        /// The major version asked for.
        version_major: u16,
    },
    /// A status passed through unchanged (an iteration callback's result).
    #[error("callback returned status {0:#x}")]
    Callback(hsa_status_t),
}

impl SimError {
    /// The `hsa_status_t` this error is reported as.
    pub fn status(&self) -> hsa_status_t {
        match self {
            SimError::NotInitialized => HSA_STATUS_ERROR_NOT_INITIALIZED,
            SimError::InvalidArgument(_) => HSA_STATUS_ERROR_INVALID_ARGUMENT,
            SimError::InvalidAgent(_) => HSA_STATUS_ERROR_INVALID_AGENT,
            SimError::InvalidSignal(_) => HSA_STATUS_ERROR_INVALID_SIGNAL,
            SimError::InvalidQueue(_) => HSA_STATUS_ERROR_INVALID_QUEUE,
            SimError::InvalidMemoryPool(_) => HSA_STATUS_ERROR_INVALID_MEMORY_POOL,
            SimError::InvalidIsa(_) => HSA_STATUS_ERROR_INVALID_ISA,
            SimError::InvalidAllocation(_) => HSA_STATUS_ERROR_INVALID_ALLOCATION,
            SimError::OutOfResources(_) => HSA_STATUS_ERROR_OUT_OF_RESOURCES,
            SimError::InvalidQueueCreation(_) => HSA_STATUS_ERROR_INVALID_QUEUE_CREATION,
            SimError::InvalidCodeObject(_) => HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
            SimError::InvalidCodeObjectReader(_) => HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER,
            SimError::Incompatible(_) => HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
            SimError::InvalidExecutable(_) => HSA_STATUS_ERROR_INVALID_EXECUTABLE,
            SimError::FrozenExecutable => HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
            SimError::InvalidSymbolName(_) => HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
            SimError::InvalidExecutableSymbol(_) => HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL,
            SimError::VariableUndefined(_) => HSA_STATUS_ERROR_VARIABLE_UNDEFINED,
            SimError::VariableAlreadyDefined(_) => HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED,
            SimError::InvalidRuntimeState(_) => HSA_STATUS_ERROR_INVALID_RUNTIME_STATE,
            SimError::QueueOnNonKernelAgent(_)
            | SimError::NotAllocationBase(_)
            | SimError::NoCopyEngine
            | SimError::NoExtensionTable { .. } => HSA_STATUS_ERROR,
            SimError::Callback(s) => *s,
        }
    }

    /// Shorthand for [`SimError::InvalidArgument`].
    pub fn arg(msg: impl Into<String>) -> SimError {
        SimError::InvalidArgument(msg.into())
    }
}

/// Result type of the virtual device's internal API.
pub type SimResult<T> = Result<T, SimError>;
