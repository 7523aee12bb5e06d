//! The crate's error type. Every failure an entry point can meet becomes one
//! of these variants; `rtl` logs it (with the operation that failed) and
//! returns `OFFLOAD_FAIL` / NULL as libomptarget expects.

use hsa::HsaError;

/// Everything that can go wrong inside the plugin.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An HSA call failed: the call's name, status and status text.
    #[error(transparent)]
    Hsa(#[from] HsaError),
    /// The HSA runtime library could not be opened or lacks a function.
    #[error("cannot load the HSA runtime: {0}")]
    Load(#[from] hsa_sys::LoadError),
    /// A device image could not be parsed or does not fit the device.
    #[error("bad device image: {0}")]
    Image(#[from] crate::image::ImageError),
    /// A bitcode image could not be compiled (the step and the tool's
    /// message: [`crate::jit::JitError`]).
    #[error(transparent)]
    Jit(#[from] crate::jit::JitError),
    /// Kernel record or replay failed ([`crate::record::RecordError`]).
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    /// A memory manager (device memory, staging or kernarg blocks) failed.
    #[error(transparent)]
    Memory(#[from] crate::memory_manager::MemoryManagerError<HsaError>),
    /// The plugin was not initialised, or found no HSA runtime / GPU.
    #[error("the AMDGPU plugin has no HSA runtime (not initialised or no GPU)")]
    NoRuntime,
    /// A device id outside `0..number_of_devices()`.
    #[error("device {id} does not exist (the plugin has {count} device(s))")]
    NoSuchDevice {
        /// The id passed in.
        id: i32,
        /// Number of devices of the plugin.
        count: usize,
    },
    /// The program requires unified shared memory (`#pragma omp requires
    /// unified_shared_memory`) but the device's agent runs with XNACK off, so
    /// its kernels cannot reach host memory (the first kernel would fault).
    #[error(
        "the program requires unified_shared_memory, but device {id} ({target_id}) has XNACK \
         off, so its kernels cannot reach host memory; set HSA_XNACK=1 in the environment (on a \
         real GPU the kernel driver must also support XNACK) and run again"
    )]
    UsmNeedsXnack {
        /// The device id.
        id: i32,
        /// The agent's target ID, e.g. `gfx90a:sramecc+:xnack-`.
        target_id: String,
    },
    /// A device was used before `init_device` succeeded on it.
    #[error("device {0} is not initialised")]
    DeviceNotInitialized(i32),
    /// A NULL or otherwise invalid argument of an entry point.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A pointer the plugin did not hand out (stream, event, kernel or
    /// allocation handle).
    #[error("unknown {what} {addr:#x}")]
    UnknownHandle {
        /// What kind of handle was expected.
        what: &'static str,
        /// The address passed in.
        addr: usize,
    },
    /// An allocation the memory pool could not satisfy.
    #[error(
        "allocation of {size} bytes of {what} failed: the pool has {free} of its {total} bytes \
         free ({held} bytes held by this plugin): {source}"
    )]
    AllocationFailed {
        /// Bytes asked for.
        size: usize,
        /// Which memory (`device memory`, `host memory`).
        what: &'static str,
        /// The pool's size minus what this plugin holds from it, in bytes.
        free: usize,
        /// The pool's size in bytes (`HSA_AMD_MEMORY_POOL_INFO_SIZE`).
        total: usize,
        /// Bytes this plugin holds from the pool.
        held: usize,
        /// The failure the pool reported.
        source: Box<Error>,
    },
    /// An offload entry names a symbol the loaded image does not define.
    #[error("the image has no {what} {name}: {source}")]
    MissingSymbol {
        /// `kernel` or `global`.
        what: &'static str,
        /// The symbol looked up (`<kernel>.kd` for kernels).
        name: String,
        /// The lookup's failure.
        source: HsaError,
    },
    /// A memory pool the device needs does not exist.
    #[error("no {0} memory pool found")]
    MissingPool(&'static str),
    /// An asynchronous operation (copy, host step, kernel) ended with a
    /// negative completion signal value.
    #[error("an asynchronous {0} failed on the device")]
    AsyncOperationFailed(&'static str),
    /// The agent's wavefront size, workgroup or grid limits cannot host an
    /// OpenMP kernel (wavefront not 32 or 64, or a zero limit).
    #[error(
        "unusable grid attributes: wavefront {wavefront}, workgroup max {workgroup_max}, \
         grid max {grid_max}"
    )]
    UnusableGrid {
        /// `HSA_AGENT_INFO_WAVEFRONT_SIZE`, lanes.
        wavefront: u32,
        /// x of `HSA_AGENT_INFO_WORKGROUP_MAX_DIM`, work-items.
        workgroup_max: u16,
        /// x of `HSA_AGENT_INFO_GRID_MAX_DIM`, work-items.
        grid_max: u32,
    },
    /// The HSA runtime reports no agent of a kind the plugin needs.
    #[error("the HSA runtime reports no {0} agent")]
    NoAgent(&'static str),
    /// `hsa_executable_validate` found the loaded executable invalid.
    #[error("hsa_executable_validate reported {0:#x}")]
    InvalidExecutable(u32),
    /// An offload entry of size 0 names a symbol that is not a kernel.
    #[error("{0} is not a kernel symbol")]
    NotAKernel(String),
    /// A global has a different size on the device than on the host.
    #[error("global {name} has {device} bytes on the device but {host} on the host")]
    GlobalSizeMismatch {
        /// The global's name.
        name: String,
        /// `HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE`, bytes.
        device: u32,
        /// The offload entry's size, bytes.
        host: usize,
    },
    /// A device could not be torn down: its work still ran after the
    /// bounded wait, so it was left in place.
    #[error("device {id} still had work running after {seconds} s; left in place")]
    DeviceBusy {
        /// The device id.
        id: i32,
        /// The wait, in seconds.
        seconds: u64,
    },
    /// A stream asked for a queue slot the device does not have.
    #[error("no HSA queue slot {0}")]
    NoQueueSlot(usize),
    /// The image's RPC client global holds NULL.
    #[error("{0} holds NULL: no client object to set up")]
    NullRpcClient(&'static str),
    /// The image's RPC server could not be created.
    #[error("RPC server: {0}")]
    RpcServer(#[source] rpc::Error),
    /// The RPC server thread could not be started.
    #[error("starting the RPC server thread: {0}")]
    RpcThread(#[source] std::io::Error),
}

/// Result type of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
