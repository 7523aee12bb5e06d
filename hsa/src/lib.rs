//! The safe HSA layer, shared by the offload plugin and `amdhsa-loader`:
//! the result layer over the dlopened HSA runtime, one small wrapper per HSA
//! call either makes, each turning the call's `hsa_status_t` into a
//! `Result<_, HsaError>` (cudarc's "result" layer).
//!
//! The runtime is opened through [`hsa_sys::HsaApi`]: first the file named by
//! `OMPTARGET_AMDGPU_HSA_LIBRARY` when set, then ROCm's `libhsa-runtime64.so.1`,
//! then `libhsa-runtime64.so` (the unversioned name LLVM 16's
//! `openmp/libomptarget/plugins/amdgpu/dynamic_hsa/hsa.cpp` opens). Everything
//! here follows the prototypes of ROCm 5.2's `hsa/hsa.h` and `hsa/hsa_ext_amd.h`.
//!
//! Functions taking raw host or device addresses stay `unsafe` where the
//! runtime dereferences them on our behalf (copies, locks, async handlers);
//! the ones that only pass handles and plain values are safe. Safe forms
//! exist for what the plugin needs beyond that: [`HostSpan`] (caller host
//! memory as one value, created unsafely once where it enters Rust) with
//! [`Hsa::memory_lock_span`]; [`DeviceRange`] (agent memory: made safely
//! here from pool allocations, variable symbols and locked aliases, or
//! unsafely once where a device pointer enters Rust) with the DMA copy
//! [`Hsa::copy_async`]; [`Hsa::memory_pool_allocate_host`] (host pool
//! memory as a [`HostPoolBlock`], a span and a range);
//! [`Hsa::on_signal_once`] (a Rust closure as an async signal handler) and
//! [`Hsa::on_memory_fault`] (a plain function as the system event
//! handler), whose C trampolines live here.

use hsa_sys::*;
use std::ffi::{c_char, c_void, CStr, OsString};
use std::fmt;

mod range;
mod span;
pub use range::{DeviceRange, HostPool, HostPoolBlock};
pub use span::HostSpan;

/// A host callback run once by the runtime's async-handler thread with the
/// value of the signal it watched ([`Hsa::on_signal_once`]).
pub type SignalCallback = Box<dyn FnOnce(hsa_signal_value_t) + Send + 'static>;

/// A GPU memory fault the runtime reported through its system event handler
/// (`hsa_amd_gpu_memory_fault_info_t`).
pub type MemoryFault = hsa_amd_gpu_memory_fault_info_t;

/// The `hsa_amd_system_event_callback_t` of [`Hsa::on_memory_fault`]:
/// `data` is the handler, a plain `fn(&MemoryFault)`. Returns SUCCESS so the
/// runtime does not abort the process.
unsafe extern "C" fn run_memory_fault_handler(
    event: *const hsa_amd_event_t,
    data: *mut c_void,
) -> hsa_status_t {
    if event.is_null() || data.is_null() {
        return HSA_STATUS_SUCCESS;
    }
    // SAFETY: the runtime passes a valid event for the duration of the call.
    let ev = unsafe { &*event };
    if ev.event_type != HSA_AMD_GPU_MEMORY_FAULT_EVENT {
        return HSA_STATUS_SUCCESS;
    }
    // SAFETY: `memory_fault` is the union's member for this event type.
    let fault = unsafe { ev.__bindgen_anon_1.memory_fault };
    // SAFETY: `data` is the `fn(&MemoryFault)` given to `on_memory_fault`,
    // cast to a data pointer there; function pointers and data pointers
    // have the same size on every target HSA supports.
    let handler = unsafe { std::mem::transmute::<*mut c_void, fn(&MemoryFault)>(data) };
    // No panic may unwind into the runtime's thread.
    if std::panic::catch_unwind(|| handler(&fault)).is_err() {
        eprintln!("hsa: a memory fault handler panicked (caught)");
    }
    HSA_STATUS_SUCCESS
}

/// The `hsa_amd_signal_handler` of [`Hsa::on_signal_once`]: `arg` is a
/// leaked `Box<SignalCallback>`, taken back and run exactly once (the
/// handler unregisters by returning false).
unsafe extern "C" fn run_signal_callback(value: hsa_signal_value_t, arg: *mut c_void) -> bool {
    if arg.is_null() {
        return false;
    }
    // SAFETY: `arg` is the `Box<SignalCallback>` leaked by `on_signal_once`
    // for exactly this one call.
    let callback = unsafe { Box::from_raw(arg as *mut SignalCallback) };
    // No panic may unwind into the runtime's handler thread.
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || callback(value))).is_err() {
        eprintln!("hsa: a signal callback panicked (caught)");
    }
    false
}

/// Environment variable naming the HSA runtime library to open before the
/// default names (ours; not one of LLVM's knobs).
pub const HSA_LIBRARY_ENV: &str = "OMPTARGET_AMDGPU_HSA_LIBRARY";

/// A failed HSA call: the function's name, its status and the runtime's
/// description of that status (from `hsa_status_string`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HsaError {
    /// The HSA function that failed, e.g. `"hsa_amd_memory_pool_allocate"`.
    pub call: &'static str,
    /// The status it returned (`hsa_status_t`, `hsa/hsa.h`).
    pub status: hsa_status_t,
    /// `hsa_status_string`'s text for `status`, or a placeholder.
    pub text: String,
}

impl fmt::Display for HsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed with status {:#x} ({})",
            self.call, self.status, self.text
        )
    }
}

impl std::error::Error for HsaError {}

/// A block that could not be freed after a failed setup: nothing else to
/// do than say so (the caller reports the setup's own error).
fn log_free_failure(e: &HsaError) {
    eprintln!("hsa: freeing a block after a failed allocation: {e}");
}

/// Result of an HSA call.
pub type HsaResult<T> = Result<T, HsaError>;

/// Values an `*_get_info` call may write: plain data for which every bit
/// pattern is a valid value (`bytemuck::Pod`: integers and arrays of them), so
/// reading what the runtime wrote is sound. Handle and struct attributes are read
/// as their integers (`hsa_dim3_t` as `[u32; 3]`).
pub use bytemuck::Pod as InfoValue;

/// The HSA runtime, opened and with its function table resolved.
///
/// Cloning is cheap (the library is shared through an `Arc`) and keeps the
/// library loaded. Opening does not call `hsa_init`: see [`Hsa::init`].
#[derive(Clone)]
pub struct Hsa {
    api: HsaApi,
}

impl fmt::Debug for Hsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hsa")
            .field("library", &self.api.library_name())
            .finish()
    }
}

/// Trampoline for iteration callbacks that collect handles into a `Vec<T>`.
unsafe extern "C" fn collect<T>(item: T, data: *mut c_void) -> hsa_status_t {
    // SAFETY: every caller passes `&mut Vec<T>` as `data`, alive for the
    // duration of the synchronous iteration.
    let out = unsafe { &mut *(data as *mut Vec<T>) };
    out.push(item);
    HSA_STATUS_SUCCESS
}

/// Reads `len` bytes at `buf` (written by the runtime) as a string, stopping
/// at the first NUL.
fn c_bytes_to_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl Hsa {
    /// Opens the runtime: `$OMPTARGET_AMDGPU_HSA_LIBRARY` when set, then
    /// `libhsa-runtime64.so.1`, then `libhsa-runtime64.so`.
    ///
    /// Errors: [`hsa_sys::LoadError`] when no candidate opens or the opened
    /// library lacks a required function.
    pub fn open() -> Result<Hsa, LoadError> {
        let explicit: Option<OsString> = std::env::var_os(HSA_LIBRARY_ENV);
        // SAFETY: the candidates are HSA runtime libraries by name (ROCm's
        // or the virtual device); their exports have ROCm 5.2's prototypes.
        let api = unsafe { HsaApi::load(explicit.as_deref())? };
        Ok(Hsa { api })
    }

    /// The library name or path that was opened.
    pub fn library_name(&self) -> String {
        self.api.library_name().to_string_lossy().into_owned()
    }

    /// The runtime's description of `status` (`hsa_status_string`), or a
    /// placeholder naming the number when the runtime has none.
    pub fn status_text(&self, status: hsa_status_t) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: `text` is a valid out-pointer; the runtime stores a pointer
        // to a static NUL-terminated string on success.
        let rc = unsafe { (self.api.hsa_status_string)(status, &mut text) };
        if rc != HSA_STATUS_SUCCESS || text.is_null() {
            return format!("unknown HSA status {status:#x}");
        }
        // SAFETY: checked non-NULL; static string owned by the runtime.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }

    /// The error for an optional function (`hsa_sys::OPTIONAL_FUNCTIONS`)
    /// this runtime does not export: `HSA_STATUS_ERROR` with that reason.
    fn missing(call: &'static str) -> HsaError {
        HsaError {
            call,
            status: HSA_STATUS_ERROR,
            text: "not exported by this HSA runtime".into(),
        }
    }

    /// Turns `status` of `call` into a `Result`. `HSA_STATUS_INFO_BREAK`
    /// counts as success (an iteration stopped early on purpose).
    pub fn check(&self, call: &'static str, status: hsa_status_t) -> HsaResult<()> {
        if status == HSA_STATUS_SUCCESS || status == HSA_STATUS_INFO_BREAK {
            Ok(())
        } else {
            Err(HsaError {
                call,
                status,
                text: self.status_text(status),
            })
        }
    }

    // ----- init and system (`hsa/hsa.h`) -----

    /// `hsa_init`: opens the runtime (reference counted).
    pub fn init(&self) -> HsaResult<()> {
        // SAFETY: no arguments.
        let s = unsafe { (self.api.hsa_init)() };
        self.check("hsa_init", s)
    }

    /// `hsa_shut_down`: drops one `hsa_init` reference.
    pub fn shut_down(&self) -> HsaResult<()> {
        // SAFETY: no arguments.
        let s = unsafe { (self.api.hsa_shut_down)() };
        self.check("hsa_shut_down", s)
    }

    /// `hsa_system_get_info` for a `u16` attribute (e.g. the version).
    pub fn system_info_u16(&self, attribute: hsa_system_info_t) -> HsaResult<u16> {
        let mut v = 0u16;
        // SAFETY: the attributes passed here are 2-byte values.
        let s =
            unsafe { (self.api.hsa_system_get_info)(attribute, &mut v as *mut u16 as *mut c_void) };
        self.check("hsa_system_get_info", s).map(|()| v)
    }

    /// `hsa_system_get_info` for a `u64` attribute (e.g. the timestamp
    /// frequency in Hz).
    pub fn system_info_u64(&self, attribute: hsa_system_info_t) -> HsaResult<u64> {
        let mut v = 0u64;
        // SAFETY: the attributes passed here are 8-byte values.
        let s =
            unsafe { (self.api.hsa_system_get_info)(attribute, &mut v as *mut u64 as *mut c_void) };
        self.check("hsa_system_get_info", s).map(|()| v)
    }

    // ----- agents and ISAs (`hsa/hsa.h`) -----

    /// `hsa_iterate_agents`: every agent, in the runtime's order.
    pub fn agents(&self) -> HsaResult<Vec<hsa_agent_t>> {
        let mut out: Vec<hsa_agent_t> = Vec::new();
        // SAFETY: `collect::<hsa_agent_t>` matches the callback type and
        // receives `&mut out`, alive for the synchronous walk.
        let s = unsafe {
            (self.api.hsa_iterate_agents)(
                Some(collect::<hsa_agent_t>),
                &mut out as *mut Vec<hsa_agent_t> as *mut c_void,
            )
        };
        self.check("hsa_iterate_agents", s).map(|()| out)
    }

    /// `hsa_agent_get_info` for an attribute whose C type is `T`
    /// (attribute types: `hsa_agent_info_t` in `hsa/hsa.h`). The AMD attributes
    /// (`HSA_AMD_AGENT_INFO_*`) go through the same call.
    pub fn agent_info<T: InfoValue>(&self, agent: hsa_agent_t, attribute: u32) -> HsaResult<T> {
        let mut v = T::zeroed();
        // SAFETY: `v` is a writable `T`, and the caller names an attribute
        // whose value type is `T` (the runtime writes exactly that size).
        let s = unsafe {
            (self.api.hsa_agent_get_info)(agent, attribute, &mut v as *mut T as *mut c_void)
        };
        self.check("hsa_agent_get_info", s).map(|()| v)
    }

    /// `hsa_agent_get_info` for a `bool` attribute (read as one byte).
    pub fn agent_info_bool(&self, agent: hsa_agent_t, attribute: u32) -> HsaResult<bool> {
        self.agent_info::<u8>(agent, attribute).map(|b| b != 0)
    }

    /// `hsa_agent_get_info` for a `char[64]` attribute (NAME, VENDOR_NAME,
    /// PRODUCT_NAME), up to the first NUL.
    pub fn agent_info_string(&self, agent: hsa_agent_t, attribute: u32) -> HsaResult<String> {
        self.agent_info::<[u8; 64]>(agent, attribute)
            .map(|buf| c_bytes_to_string(&buf))
    }

    /// `hsa_agent_iterate_isas`: the ISAs an agent supports.
    pub fn agent_isas(&self, agent: hsa_agent_t) -> HsaResult<Vec<hsa_isa_t>> {
        let mut out: Vec<hsa_isa_t> = Vec::new();
        // SAFETY: as in `agents`.
        let s = unsafe {
            (self.api.hsa_agent_iterate_isas)(
                agent,
                Some(collect::<hsa_isa_t>),
                &mut out as *mut Vec<hsa_isa_t> as *mut c_void,
            )
        };
        self.check("hsa_agent_iterate_isas", s).map(|()| out)
    }

    /// The ISA's name (`hsa_isa_get_info_alt` NAME_LENGTH, which counts the
    /// NUL, then NAME), e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    pub fn isa_name(&self, isa: hsa_isa_t) -> HsaResult<String> {
        let mut len = 0u32;
        // SAFETY: NAME_LENGTH is a u32.
        let s = unsafe {
            (self.api.hsa_isa_get_info_alt)(
                isa,
                HSA_ISA_INFO_NAME_LENGTH,
                &mut len as *mut u32 as *mut c_void,
            )
        };
        self.check("hsa_isa_get_info_alt", s)?;
        // One spare byte in case a runtime excludes the NUL from the length.
        let mut buf = vec![0u8; len as usize + 1];
        // SAFETY: `buf` holds NAME_LENGTH bytes plus one.
        let s = unsafe {
            (self.api.hsa_isa_get_info_alt)(isa, HSA_ISA_INFO_NAME, buf.as_mut_ptr() as *mut c_void)
        };
        self.check("hsa_isa_get_info_alt", s)?;
        Ok(c_bytes_to_string(&buf))
    }

    // ----- memory pools and memory (`hsa/hsa_ext_amd.h`) -----

    /// `hsa_amd_agent_iterate_memory_pools`: the pools an agent lists.
    pub fn memory_pools(&self, agent: hsa_agent_t) -> HsaResult<Vec<hsa_amd_memory_pool_t>> {
        let mut out: Vec<hsa_amd_memory_pool_t> = Vec::new();
        // SAFETY: as in `agents`.
        let s = unsafe {
            (self.api.hsa_amd_agent_iterate_memory_pools)(
                agent,
                Some(collect::<hsa_amd_memory_pool_t>),
                &mut out as *mut Vec<hsa_amd_memory_pool_t> as *mut c_void,
            )
        };
        self.check("hsa_amd_agent_iterate_memory_pools", s)
            .map(|()| out)
    }

    /// `hsa_amd_memory_pool_get_info` for an attribute whose C type is `T`
    /// (`hsa_amd_memory_pool_info_t`, `hsa/hsa_ext_amd.h`).
    pub fn pool_info<T: InfoValue>(
        &self,
        pool: hsa_amd_memory_pool_t,
        attribute: hsa_amd_memory_pool_info_t,
    ) -> HsaResult<T> {
        let mut v = T::zeroed();
        // SAFETY: `v` is a writable `T` of the attribute's type.
        let s = unsafe {
            (self.api.hsa_amd_memory_pool_get_info)(
                pool,
                attribute,
                &mut v as *mut T as *mut c_void,
            )
        };
        self.check("hsa_amd_memory_pool_get_info", s).map(|()| v)
    }

    /// `hsa_amd_memory_pool_allocate(pool, size, 0)`: the new block's
    /// address. Errors as the runtime reports them (INVALID_ALLOCATION for a
    /// size above the pool's maximum, OUT_OF_RESOURCES, ...).
    pub fn pool_allocate(
        &self,
        pool: hsa_amd_memory_pool_t,
        size: usize,
    ) -> HsaResult<*mut c_void> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: `ptr` is a valid out-pointer; flags must be 0.
        let s = unsafe { (self.api.hsa_amd_memory_pool_allocate)(pool, size, 0, &mut ptr) };
        self.check("hsa_amd_memory_pool_allocate", s)?;
        if ptr.is_null() {
            return Err(HsaError {
                call: "hsa_amd_memory_pool_allocate",
                status: HSA_STATUS_ERROR_OUT_OF_RESOURCES,
                text: "the runtime returned a NULL block".into(),
            });
        }
        Ok(ptr)
    }

    /// [`Hsa::pool_allocate`] of `size` bytes of device memory, as the
    /// [`DeviceRange`] agents copy to and from; valid until freed with
    /// [`Hsa::pool_free`] (the caller keeps it until every copy through the
    /// range completed).
    ///
    /// Errors: as [`Hsa::pool_allocate`].
    pub fn pool_allocate_range(
        &self,
        pool: hsa_amd_memory_pool_t,
        size: usize,
    ) -> HsaResult<DeviceRange> {
        let ptr = self.pool_allocate(pool, size)?;
        DeviceRange::checked(ptr as u64, size).ok_or_else(|| HsaError {
            call: "hsa_amd_memory_pool_allocate",
            status: HSA_STATUS_ERROR_INVALID_ALLOCATION,
            text: format!("the runtime returned a block at {ptr:p} of {size} bytes that wraps"),
        })
    }

    /// `pool` as a [`HostPool`] when its memory is the host's own: a
    /// global-segment pool the runtime allocates from, listed by `agent`,
    /// a CPU agent (`HSA_AGENT_INFO_DEVICE` is CPU); `None` otherwise.
    ///
    /// Errors: the failing `hsa_agent_get_info`,
    /// `hsa_amd_agent_iterate_memory_pools` or `hsa_amd_memory_pool_get_info`.
    pub fn host_pool(
        &self,
        agent: hsa_agent_t,
        pool: hsa_amd_memory_pool_t,
    ) -> HsaResult<Option<HostPool>> {
        let kind: u32 = self.agent_info(agent, HSA_AGENT_INFO_DEVICE)?;
        if kind != HSA_DEVICE_TYPE_CPU || !self.memory_pools(agent)?.contains(&pool) {
            return Ok(None);
        }
        let segment: u32 = self.pool_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT)?;
        let allowed: u8 = self.pool_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED)?;
        Ok((segment == HSA_AMD_SEGMENT_GLOBAL && allowed != 0).then_some(HostPool { raw: pool }))
    }

    /// [`Hsa::pool_allocate`] of `size` bytes (`size > 0`) of a host pool:
    /// the block as a [`HostSpan`] the host reads and writes, with the
    /// [`DeviceRange`] agents use (the same addresses: system memory). Valid
    /// until freed with [`Hsa::pool_free`]; the caller gives agents access
    /// ([`Hsa::allow_access`]) before they use it.
    ///
    /// Errors: as [`Hsa::pool_allocate`]; INVALID_ARGUMENT for size 0.
    pub fn memory_pool_allocate_host(
        &self,
        pool: &HostPool,
        size: usize,
    ) -> HsaResult<HostPoolBlock> {
        let refuse = || HsaError {
            call: "hsa_amd_memory_pool_allocate",
            status: HSA_STATUS_ERROR_INVALID_ARGUMENT,
            text: format!("no host block of {size} bytes"),
        };
        if size == 0 {
            return Err(refuse());
        }
        let ptr = self.pool_allocate(pool.raw, size)?;
        // SAFETY: the runtime just allocated `size` bytes at `ptr` from a
        // global pool of a CPU agent (checked by `host_pool`): system memory
        // of this process, readable and writable by the host, used by
        // nobody else until its owner frees it, after its last use.
        let span = unsafe { HostSpan::new(ptr as *mut u8, size) };
        match span.and_then(HostPoolBlock::new) {
            Some(block) => Ok(block),
            None => {
                if let Err(e) = self.pool_free(ptr as u64) {
                    log_free_failure(&e);
                }
                Err(refuse())
            }
        }
    }

    /// `hsa_amd_memory_pool_free`. The runtime checks that `ptr` is the base
    /// of one of its allocations (INVALID_ALLOCATION otherwise).
    pub fn pool_free(&self, addr: u64) -> HsaResult<()> {
        // SAFETY: the runtime validates the address against its allocation
        // table; it never dereferences an unknown one.
        let s = unsafe { (self.api.hsa_amd_memory_pool_free)(addr as *mut c_void) };
        self.check("hsa_amd_memory_pool_free", s)
    }

    /// `hsa_amd_agents_allow_access(agents, NULL flags, addr)`; `addr` must
    /// be the base of a runtime allocation (the runtime checks it).
    pub fn allow_access(&self, agents: &[hsa_agent_t], addr: u64) -> HsaResult<()> {
        if agents.is_empty() {
            return Ok(());
        }
        // SAFETY: `agents` is a live slice of `agents.len()` handles; the
        // runtime looks `ptr` up in its allocation table.
        let s = unsafe {
            (self.api.hsa_amd_agents_allow_access)(
                agents.len() as u32,
                agents.as_ptr(),
                std::ptr::null(),
                addr as *const c_void,
            )
        };
        self.check("hsa_amd_agents_allow_access", s)
    }

    /// `hsa_amd_memory_lock(host, size, NULL, 0)`: pins host memory for
    /// every GPU agent and returns the address agents must use.
    ///
    /// # Safety
    /// `[host, host + size)` must be memory of this process that stays
    /// mapped until [`Hsa::memory_unlock`].
    pub unsafe fn memory_lock(&self, host: *mut c_void, size: usize) -> HsaResult<*mut c_void> {
        let mut agent_ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: the caller vouches for the range; NULL agents with count 0
        // means "all GPU agents".
        let s = unsafe {
            (self.api.hsa_amd_memory_lock)(host, size, std::ptr::null_mut(), 0, &mut agent_ptr)
        };
        self.check("hsa_amd_memory_lock", s)?;
        Ok(agent_ptr)
    }

    /// [`Hsa::memory_lock`] of a [`HostSpan`]: pins the span's memory for
    /// every GPU agent and returns the address agents must use. Safe: the
    /// span's creator vouched for the memory (`HostSpan::new`); the caller
    /// unlocks it ([`Hsa::memory_unlock`]) before the span's memory goes.
    /// The alias covers the span's `len()` bytes and is valid until the
    /// unlock.
    ///
    /// Errors: the failing `hsa_amd_memory_lock`; a NULL alias.
    pub fn memory_lock_span(&self, span: &HostSpan) -> HsaResult<DeviceRange> {
        // SAFETY: the span's contract: host memory of this process that stays
        // valid while the span is used, which covers the lock's lifetime.
        let alias = unsafe { self.memory_lock(span.addr() as *mut c_void, span.len())? };
        DeviceRange::checked(alias as u64, span.len()).ok_or_else(|| HsaError {
            call: "hsa_amd_memory_lock",
            status: HSA_STATUS_ERROR,
            text: "the runtime returned a NULL agent address".into(),
        })
    }

    /// `hsa_amd_memory_unlock(host)`.
    pub fn memory_unlock(&self, host: usize) -> HsaResult<()> {
        // SAFETY: unlocking only drops the runtime's record of the range.
        let s = unsafe { (self.api.hsa_amd_memory_unlock)(host as *mut c_void) };
        self.check("hsa_amd_memory_unlock", s)
    }

    /// `hsa_amd_memory_async_copy(dst, agent, src, agent, size, deps,
    /// completion)`: the copy runs once every dependency is 0, then the
    /// runtime subtracts 1 from `completion` (`hsa_amd_memory_async_copy`,
    /// `hsa/hsa_ext_amd.h`).
    ///
    /// # Safety
    /// Both ranges must be valid device-accessible memory (pool memory or
    /// locked host memory) that stays valid until `completion` reaches 0.
    unsafe fn async_copy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        agent: hsa_agent_t,
        deps: &[hsa_signal_t],
        completion: hsa_signal_t,
    ) -> HsaResult<()> {
        let dep_ptr = if deps.is_empty() {
            std::ptr::null()
        } else {
            deps.as_ptr()
        };
        // SAFETY: ranges per the caller's contract; `deps` is a live slice.
        let s = unsafe {
            (self.api.hsa_amd_memory_async_copy)(
                dst,
                agent,
                src,
                agent,
                size,
                deps.len() as u32,
                dep_ptr,
                completion,
            )
        };
        self.check("hsa_amd_memory_async_copy", s)
    }

    /// [`Hsa::async_copy`] of `size` bytes from `src` to `dst` by `agent`:
    /// safe, because each range's maker vouched that it stays valid while
    /// it is used (see [`DeviceRange`]); its owner keeps the memory until
    /// `completion` reaches 0.
    ///
    /// Errors: INVALID_ARGUMENT when `size` exceeds either range; the
    /// failing `hsa_amd_memory_async_copy`.
    pub fn copy_async(
        &self,
        dst: &DeviceRange,
        src: &DeviceRange,
        size: usize,
        agent: hsa_agent_t,
        deps: &[hsa_signal_t],
        completion: hsa_signal_t,
    ) -> HsaResult<()> {
        if size > dst.len() || size > src.len() {
            return Err(HsaError {
                call: "hsa_amd_memory_async_copy",
                status: HSA_STATUS_ERROR_INVALID_ARGUMENT,
                text: format!(
                    "copy of {size} bytes between ranges of {} and {} bytes",
                    src.len(),
                    dst.len()
                ),
            });
        }
        // SAFETY: both ranges are valid agent memory for the copy's whole
        // run, by their makers' promise (`DeviceRange`), and `size` fits both.
        unsafe {
            self.async_copy(
                dst.addr() as *mut c_void,
                src.addr() as *const c_void,
                size,
                agent,
                deps,
                completion,
            )
        }
    }

    /// `hsa_amd_register_system_event_handler`.
    ///
    /// # Safety
    /// `callback` must stay callable for the life of the process, and `data`
    /// must be valid for it whenever it runs.
    pub unsafe fn register_system_event_handler(
        &self,
        callback: hsa_amd_system_event_callback_t,
        data: *mut c_void,
    ) -> HsaResult<()> {
        // SAFETY: forwarded from the caller's contract.
        let s = unsafe { (self.api.hsa_amd_register_system_event_handler)(callback, data) };
        self.check("hsa_amd_register_system_event_handler", s)
    }

    // ----- signals (`hsa/hsa.h`, `hsa/hsa_ext_amd.h`) -----

    /// `hsa_amd_signal_create(initial, 0, NULL, 0)`.
    pub fn signal_create(&self, initial: hsa_signal_value_t) -> HsaResult<hsa_signal_t> {
        let mut sig = hsa_signal_t { handle: 0 };
        // SAFETY: no consumers; `sig` is a valid out-pointer.
        let s =
            unsafe { (self.api.hsa_amd_signal_create)(initial, 0, std::ptr::null(), 0, &mut sig) };
        self.check("hsa_amd_signal_create", s).map(|()| sig)
    }

    /// `hsa_signal_destroy`.
    pub fn signal_destroy(&self, signal: hsa_signal_t) -> HsaResult<()> {
        // SAFETY: handle-only call.
        let s = unsafe { (self.api.hsa_signal_destroy)(signal) };
        self.check("hsa_signal_destroy", s)
    }

    /// `hsa_signal_load_scacquire`. `signal` must be a live signal of this
    /// runtime (callers only pass signals they own).
    pub fn signal_load(&self, signal: hsa_signal_t) -> hsa_signal_value_t {
        // SAFETY: value operations take a handle the plugin owns.
        unsafe { (self.api.hsa_signal_load_scacquire)(signal) }
    }

    /// `hsa_signal_store_screlease`.
    pub fn signal_store(&self, signal: hsa_signal_t, value: hsa_signal_value_t) {
        // SAFETY: as `signal_load`.
        unsafe { (self.api.hsa_signal_store_screlease)(signal, value) }
    }

    /// `hsa_signal_store_relaxed` (used to ring doorbells).
    pub fn signal_store_relaxed(&self, signal: hsa_signal_t, value: hsa_signal_value_t) {
        // SAFETY: as `signal_load`.
        unsafe { (self.api.hsa_signal_store_relaxed)(signal, value) }
    }

    /// `hsa_signal_subtract_screlease`.
    pub fn signal_subtract(&self, signal: hsa_signal_t, value: hsa_signal_value_t) {
        // SAFETY: as `signal_load`.
        unsafe { (self.api.hsa_signal_subtract_screlease)(signal, value) }
    }

    /// `hsa_signal_wait_scacquire(signal, LT, 1, UINT64_MAX, BLOCKED)` in a
    /// loop until the value is below 1: 0 means the operation completed, a
    /// negative value that it failed (the runtime's convention for copies,
    /// and ours for host steps). Returns the final value.
    pub fn signal_wait_done(&self, signal: hsa_signal_t) -> hsa_signal_value_t {
        loop {
            // SAFETY: as `signal_load`.
            let v = unsafe {
                (self.api.hsa_signal_wait_scacquire)(
                    signal,
                    HSA_SIGNAL_CONDITION_LT,
                    1,
                    u64::MAX,
                    HSA_WAIT_STATE_BLOCKED,
                )
            };
            if v < 1 {
                return v;
            }
        }
    }

    /// `hsa_amd_signal_async_handler(signal, cond, value, handler, arg)`.
    ///
    /// # Safety
    /// `handler` must accept `arg` whenever the runtime calls it (on its own
    /// thread, once the condition holds), and `arg` must stay valid until the
    /// handler has run and returned `false`.
    pub unsafe fn signal_async_handler(
        &self,
        signal: hsa_signal_t,
        cond: hsa_signal_condition_t,
        value: hsa_signal_value_t,
        handler: hsa_amd_signal_handler,
        arg: *mut c_void,
    ) -> HsaResult<()> {
        // SAFETY: forwarded from the caller's contract.
        let s =
            unsafe { (self.api.hsa_amd_signal_async_handler)(signal, cond, value, handler, arg) };
        self.check("hsa_amd_signal_async_handler", s)
    }

    /// Calls `handler` for every GPU memory fault the runtime reports
    /// (`hsa_amd_register_system_event_handler`); other system events are
    /// ignored. The runtime is told the event was handled, so it does not
    /// abort the process: the faulting queue's error callback reports the
    /// failure to whoever waits on it.
    ///
    /// Errors: the failing `hsa_amd_register_system_event_handler`.
    pub fn on_memory_fault(&self, handler: fn(&MemoryFault)) -> HsaResult<()> {
        // SAFETY: the trampoline is a plain function of this crate and
        // `data` a function pointer: both valid for the life of the process.
        unsafe {
            self.register_system_event_handler(
                Some(run_memory_fault_handler),
                handler as *const () as *mut c_void,
            )
        }
    }

    /// Runs `callback` once on the runtime's async-handler thread when
    /// `signal` satisfies `cond` against `value`
    /// (`hsa_amd_signal_async_handler`), with the signal's value then.
    ///
    /// Errors: the failing `hsa_amd_signal_async_handler`; `callback` is
    /// then dropped without running.
    pub fn on_signal_once(
        &self,
        signal: hsa_signal_t,
        cond: hsa_signal_condition_t,
        value: hsa_signal_value_t,
        callback: SignalCallback,
    ) -> HsaResult<()> {
        let arg = Box::into_raw(Box::new(callback)) as *mut c_void;
        // SAFETY: `run_signal_callback` takes back exactly this box, once.
        let r = unsafe {
            self.signal_async_handler(signal, cond, value, Some(run_signal_callback), arg)
        };
        if r.is_err() {
            // SAFETY: the runtime refused the registration and kept no copy
            // of `arg`, so the box is still ours.
            drop(unsafe { Box::from_raw(arg as *mut SignalCallback) });
        }
        r
    }

    // ----- queues (`hsa/hsa.h`) -----

    /// `hsa_queue_create(agent, size, MULTI, callback, data, UINT32_MAX,
    /// UINT32_MAX)`.
    ///
    /// # Safety
    /// `callback` must accept `data` whenever the runtime reports a queue
    /// error, for as long as the queue exists.
    pub unsafe fn queue_create(
        &self,
        agent: hsa_agent_t,
        size: u32,
        callback: Option<unsafe extern "C" fn(hsa_status_t, *mut hsa_queue_t, *mut c_void)>,
        data: *mut c_void,
    ) -> HsaResult<*mut hsa_queue_t> {
        let mut q: *mut hsa_queue_t = std::ptr::null_mut();
        // SAFETY: `q` is a valid out-pointer; callback per the contract.
        let s = unsafe {
            (self.api.hsa_queue_create)(
                agent,
                size,
                HSA_QUEUE_TYPE_MULTI,
                callback,
                data,
                u32::MAX,
                u32::MAX,
                &mut q,
            )
        };
        self.check("hsa_queue_create", s)?;
        if q.is_null() {
            return Err(HsaError {
                call: "hsa_queue_create",
                status: HSA_STATUS_ERROR,
                text: "the runtime returned a NULL queue".into(),
            });
        }
        Ok(q)
    }

    /// `hsa_queue_destroy`.
    ///
    /// # Safety
    /// `queue` must come from [`Hsa::queue_create`] and not be used again.
    pub unsafe fn queue_destroy(&self, queue: *mut hsa_queue_t) -> HsaResult<()> {
        // SAFETY: forwarded from the caller's contract.
        let s = unsafe { (self.api.hsa_queue_destroy)(queue) };
        self.check("hsa_queue_destroy", s)
    }

    /// `hsa_queue_add_write_index_relaxed(queue, n)`: the previous index.
    ///
    /// # Safety
    /// `queue` must be a live queue of this runtime.
    pub unsafe fn queue_add_write_index(&self, queue: *mut hsa_queue_t, n: u64) -> u64 {
        // SAFETY: forwarded from the caller's contract.
        unsafe { (self.api.hsa_queue_add_write_index_relaxed)(queue, n) }
    }

    /// `hsa_queue_load_read_index_scacquire(queue)`.
    ///
    /// # Safety
    /// `queue` must be a live queue of this runtime.
    pub unsafe fn queue_load_read_index(&self, queue: *mut hsa_queue_t) -> u64 {
        // SAFETY: forwarded from the caller's contract.
        unsafe { (self.api.hsa_queue_load_read_index_scacquire)(queue) }
    }

    // ----- code objects and executables (`hsa/hsa.h`) -----

    /// `hsa_code_object_deserialize(bytes, len, "")`: the runtime copies the
    /// bytes.
    pub fn code_object_deserialize(&self, bytes: &[u8]) -> HsaResult<hsa_code_object_t> {
        let mut co = hsa_code_object_t { handle: 0 };
        // SAFETY: `bytes` is a live slice the runtime only reads (it copies
        // it before returning); options "" is a static C string.
        let s = unsafe {
            (self.api.hsa_code_object_deserialize)(
                bytes.as_ptr() as *mut c_void,
                bytes.len(),
                c"".as_ptr(),
                &mut co,
            )
        };
        self.check("hsa_code_object_deserialize", s).map(|()| co)
    }

    /// `hsa_code_object_destroy`.
    pub fn code_object_destroy(&self, co: hsa_code_object_t) -> HsaResult<()> {
        // SAFETY: handle-only call.
        let s = unsafe { (self.api.hsa_code_object_destroy)(co) };
        self.check("hsa_code_object_destroy", s)
    }

    /// `hsa_executable_create_alt(FULL, rounding ZERO, "")`.
    pub fn executable_create(&self) -> HsaResult<hsa_executable_t> {
        let mut exe = hsa_executable_t { handle: 0 };
        // SAFETY: valid out-pointer and static options string.
        let s = unsafe {
            (self.api.hsa_executable_create_alt)(
                HSA_PROFILE_FULL,
                HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO,
                c"".as_ptr(),
                &mut exe,
            )
        };
        self.check("hsa_executable_create_alt", s).map(|()| exe)
    }

    /// `hsa_executable_load_code_object(exe, agent, co, "")`.
    pub fn executable_load_code_object(
        &self,
        exe: hsa_executable_t,
        agent: hsa_agent_t,
        co: hsa_code_object_t,
    ) -> HsaResult<()> {
        // SAFETY: handles plus a static options string.
        let s = unsafe { (self.api.hsa_executable_load_code_object)(exe, agent, co, c"".as_ptr()) };
        self.check("hsa_executable_load_code_object", s)
    }

    /// `hsa_executable_freeze(exe, "")`.
    pub fn executable_freeze(&self, exe: hsa_executable_t) -> HsaResult<()> {
        // SAFETY: handle plus a static options string.
        let s = unsafe { (self.api.hsa_executable_freeze)(exe, c"".as_ptr()) };
        self.check("hsa_executable_freeze", s)
    }

    /// `hsa_executable_validate`: 0 means valid.
    pub fn executable_validate(&self, exe: hsa_executable_t) -> HsaResult<u32> {
        let mut r = 0u32;
        // SAFETY: valid out-pointer.
        let s = unsafe { (self.api.hsa_executable_validate)(exe, &mut r) };
        self.check("hsa_executable_validate", s).map(|()| r)
    }

    /// `hsa_executable_destroy`.
    pub fn executable_destroy(&self, exe: hsa_executable_t) -> HsaResult<()> {
        // SAFETY: handle-only call.
        let s = unsafe { (self.api.hsa_executable_destroy)(exe) };
        self.check("hsa_executable_destroy", s)
    }

    /// `hsa_executable_get_symbol_by_name(exe, name, &agent)`.
    /// INVALID_SYMBOL_NAME when absent.
    pub fn executable_symbol(
        &self,
        exe: hsa_executable_t,
        name: &CStr,
        agent: hsa_agent_t,
    ) -> HsaResult<hsa_executable_symbol_t> {
        let mut sym = hsa_executable_symbol_t { handle: 0 };
        // SAFETY: `name` is NUL-terminated; `agent` and `sym` are locals.
        let s = unsafe {
            (self.api.hsa_executable_get_symbol_by_name)(exe, name.as_ptr(), &agent, &mut sym)
        };
        self.check("hsa_executable_get_symbol_by_name", s)
            .map(|()| sym)
    }

    /// `hsa_executable_symbol_get_info` for an attribute whose C type is `T`
    /// (`hsa_executable_symbol_info_t`, `hsa/hsa.h`).
    pub fn symbol_info<T: InfoValue>(
        &self,
        sym: hsa_executable_symbol_t,
        attribute: hsa_executable_symbol_info_t,
    ) -> HsaResult<T> {
        let mut v = T::zeroed();
        // SAFETY: `v` is a writable `T` of the attribute's type.
        let s = unsafe {
            (self.api.hsa_executable_symbol_get_info)(
                sym,
                attribute,
                &mut v as *mut T as *mut c_void,
            )
        };
        self.check("hsa_executable_symbol_get_info", s).map(|()| v)
    }

    /// The range of a variable symbol of a loaded executable
    /// (`VARIABLE_ADDRESS`, `VARIABLE_SIZE`): memory the runtime allocated
    /// for the executable, valid until it is destroyed.
    ///
    /// Errors: the failing `hsa_executable_symbol_get_info`; a NULL address.
    pub fn symbol_variable(&self, sym: hsa_executable_symbol_t) -> HsaResult<DeviceRange> {
        let addr: u64 = self.symbol_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS)?;
        let size: u32 = self.symbol_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE)?;
        DeviceRange::checked(addr, size as usize).ok_or_else(|| HsaError {
            call: "hsa_executable_symbol_get_info",
            status: HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
            text: format!("variable at {addr:#x} of {size} bytes"),
        })
    }

    // ----- loader helpers: agents, pools, copies, waits, dispatch -----

    /// The agents whose `HSA_AGENT_INFO_DEVICE` is `device` (e.g.
    /// `HSA_DEVICE_TYPE_GPU`), in the runtime's order. For GPUs only kernel
    /// agents (feature `HSA_AGENT_FEATURE_KERNEL_DISPATCH`) are kept.
    pub fn agents_of_type(&self, device: hsa_device_type_t) -> HsaResult<Vec<hsa_agent_t>> {
        let mut out = Vec::new();
        for agent in self.agents()? {
            let kind: u32 = self.agent_info(agent, HSA_AGENT_INFO_DEVICE)?;
            if kind != device {
                continue;
            }
            if device == HSA_DEVICE_TYPE_GPU {
                let features: u32 = self.agent_info(agent, HSA_AGENT_INFO_FEATURE)?;
                if features & HSA_AGENT_FEATURE_KERNEL_DISPATCH == 0 {
                    continue;
                }
            }
            out.push(agent);
        }
        Ok(out)
    }

    /// The last global-segment memory pool of `agent` whose
    /// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS` contain `flag` (e.g.
    /// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED`), or `None`.
    pub fn global_pool_with_flag(
        &self,
        agent: hsa_agent_t,
        flag: u32,
    ) -> HsaResult<Option<hsa_amd_memory_pool_t>> {
        let mut found = None;
        for pool in self.memory_pools(agent)? {
            let segment: u32 = self.pool_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT)?;
            if segment != HSA_AMD_SEGMENT_GLOBAL {
                continue;
            }
            let flags: u32 = self.pool_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS)?;
            if flags & flag != 0 {
                found = Some(pool);
            }
        }
        Ok(found)
    }

    /// `hsa_memory_copy(dst, src, size)`: a blocking copy between any two
    /// runtime-visible ranges.
    ///
    /// # Safety
    /// `[src, src + size)` must be readable and `[dst, dst + size)` writable
    /// memory known to the runtime (pool memory, locked host memory or
    /// ordinary host memory on an agent with system access).
    pub unsafe fn memory_copy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
    ) -> HsaResult<()> {
        let f = self
            .api
            .hsa_memory_copy
            .ok_or(Self::missing("hsa_memory_copy"))?;
        // SAFETY: ranges per the caller's contract.
        let s = unsafe { f(dst, src, size) };
        self.check("hsa_memory_copy", s)
    }

    /// `hsa_amd_memory_fill(ptr, value, count)`: writes `count` 32-bit words.
    ///
    /// # Safety
    /// `[ptr, ptr + 4 * count)` must be writable runtime memory.
    pub unsafe fn memory_fill(&self, ptr: *mut c_void, value: u32, count: usize) -> HsaResult<()> {
        let f = self
            .api
            .hsa_amd_memory_fill
            .ok_or(Self::missing("hsa_amd_memory_fill"))?;
        // SAFETY: range per the caller's contract.
        let s = unsafe { f(ptr, value, count) };
        self.check("hsa_amd_memory_fill", s)
    }

    /// `hsa_signal_wait_scacquire(signal, cond, value, timeout_hint, state)`:
    /// the signal's value when the wait returned (the condition may not
    /// hold: the runtime may return early, e.g. after `timeout_hint` ticks).
    pub fn signal_wait(
        &self,
        signal: hsa_signal_t,
        cond: hsa_signal_condition_t,
        value: hsa_signal_value_t,
        timeout_hint: u64,
        state: hsa_wait_state_t,
    ) -> hsa_signal_value_t {
        // SAFETY: as `signal_load`.
        unsafe { (self.api.hsa_signal_wait_scacquire)(signal, cond, value, timeout_hint, state) }
    }

    /// Publishes one kernel dispatch AQL packet on `queue` (HSA spec 2.9,
    /// AMDGPUUsage "Kernel Dispatch"): reserves a slot, waits until the
    /// packet processor has freed it, writes the body, stores the header and
    /// setup word with release order, and rings the doorbell. Returns the
    /// packet id.
    ///
    /// # Safety
    /// `queue` must be a live queue of this runtime; the kernarg segment and
    /// kernel object in `packet` must stay valid until the completion signal
    /// reports the dispatch done.
    pub unsafe fn dispatch_kernel(&self, queue: *mut hsa_queue_t, packet: &KernelDispatch) -> u64 {
        // SAFETY: the caller vouches that `queue` is live; its fields are
        // written once by the runtime at creation.
        let q = unsafe { &*queue };
        // SAFETY: as above.
        let id = unsafe { self.queue_add_write_index(queue, 1) };
        // SAFETY: as above.
        while id.wrapping_sub(unsafe { self.queue_load_read_index(queue) }) >= u64::from(q.size) {
            std::hint::spin_loop();
        }
        let mask = u64::from(q.size.max(1)) - 1;
        // SAFETY: `base_address` holds `size` 64-byte packets; `id & mask`
        // indexes one of them, which the wait above made ours.
        let slot = unsafe {
            (q.base_address as *mut hsa_kernel_dispatch_packet_t).add((id & mask) as usize)
        };
        let body = hsa_kernel_dispatch_packet_t {
            header: HSA_PACKET_TYPE_INVALID as u16,
            setup: packet.dimensions << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
            workgroup_size_x: packet.workgroup_size[0],
            workgroup_size_y: packet.workgroup_size[1],
            workgroup_size_z: packet.workgroup_size[2],
            reserved0: 0,
            grid_size_x: packet.grid_size[0],
            grid_size_y: packet.grid_size[1],
            grid_size_z: packet.grid_size[2],
            private_segment_size: packet.private_segment_size,
            group_segment_size: packet.group_segment_size,
            kernel_object: packet.kernel_object,
            kernarg_address: packet.kernarg_address,
            reserved2: 0,
            completion_signal: packet.completion_signal,
        };
        // SAFETY: the slot is ours (see above); the header stays INVALID so
        // the packet processor ignores the body until the store below.
        unsafe { std::ptr::write_volatile(slot, body) };
        let header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE)
            | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
            | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
        let word = header | (u32::from(body.setup) << 16);
        // SAFETY: the first 4 bytes of the 64-byte aligned packet are the
        // header and setup fields; an aligned u32 atomic store publishes them.
        let atomic = unsafe { &*(slot as *const std::sync::atomic::AtomicU32) };
        atomic.store(word, std::sync::atomic::Ordering::Release);
        self.signal_store_relaxed(q.doorbell_signal, id as hsa_signal_value_t);
        id
    }
}

/// The fields of one kernel dispatch AQL packet (`hsa_kernel_dispatch_packet_t`
/// in `hsa/hsa.h`; HSA spec 2.9.6), as
/// [`Hsa::dispatch_kernel`] writes them.
#[derive(Debug, Clone, Copy)]
pub struct KernelDispatch {
    /// Number of grid dimensions, 1 to 3 (the packet's setup field).
    pub dimensions: u16,
    /// Work-items per workgroup in x, y, z.
    pub workgroup_size: [u16; 3],
    /// Work-items in the grid in x, y, z.
    pub grid_size: [u32; 3],
    /// Bytes of private (scratch) memory per work-item.
    pub private_segment_size: u32,
    /// Bytes of group (LDS) memory per workgroup.
    pub group_segment_size: u32,
    /// Address of the kernel descriptor (`KERNEL_OBJECT` symbol info).
    pub kernel_object: u64,
    /// Address of the kernarg segment.
    pub kernarg_address: *mut c_void,
    /// Signal the packet processor decrements when the kernel ends.
    pub completion_signal: hsa_signal_t,
}
