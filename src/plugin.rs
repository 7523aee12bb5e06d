//! The process-wide plugin (LLVM's `AMDGPUPluginTy`): the opened HSA
//! runtime, the GPU agents and their target IDs, the host device and the
//! devices; plus its creation by `__tgt_rtl_init_plugin` and its teardown at
//! process exit.
//!
//! Lifetime: libomptarget calls `deinit_plugin` once per unregistered
//! library, possibly while other libraries still launch work, so it must not
//! tear anything down. The real teardown (devices, host pools,
//! `hsa_shut_down`) runs from an `atexit` handler registered when the plugin
//! is created; it runs after the program's own exit handlers (which call
//! `__tgt_unregister_lib`) because it was registered before them, and before
//! the HSA library's ELF destructors. It waits for pending device work at
//! most [`TEARDOWN_WAIT`], then leaves the device and the runtime as they
//! are (exit must never hang on a device), and it does nothing in a child
//! made by `fork()`.
//!
//! The library is never unmapped: it is linked with `-z nodelete` (see
//! `build.rs`), because libomptarget may call the entry points from
//! destructors that run after LLVM's `DynamicLibrary` closed the plugin.

use crate::abi::OMP_REQ_UNIFIED_SHARED_MEMORY;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::host_device::HostDevice;
use crate::image::TargetId;
use hsa::Hsa;
use hsa_sys::*;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long process teardown (and `deinit_device`) waits for work still
/// pending on the devices before leaving it running: exit never blocks
/// longer on a device.
pub const TEARDOWN_WAIT: Duration = Duration::from_secs(5);

/// The GPU agents and the host side, present only when the HSA runtime
/// initialised and reported at least one GPU.
#[derive(Debug)]
pub struct Runtime {
    /// The opened HSA library.
    pub hsa: Hsa,
    /// GPU agents with KERNEL_DISPATCH, in `hsa_iterate_agents` order: device
    /// id = index.
    pub gpu_agents: Vec<hsa_agent_t>,
    /// Each GPU agent's target ID string (its ISA name without the
    /// `amdgcn-amd-amdhsa--` prefix; empty when unknown), same order.
    pub target_ids: Vec<String>,
    /// The host side.
    pub host: Arc<HostDevice>,
    /// Initialised devices (`None` until `init_device`).
    pub devices: Vec<RwLock<Option<Arc<Device>>>>,
    /// Serializes `init_device` per device.
    init_locks: Vec<Mutex<()>>,
}

/// The plugin (one per process).
#[derive(Debug)]
pub struct Plugin {
    /// `None` when no HSA runtime or no GPU: zero devices.
    pub runtime: Option<Runtime>,
    /// Flags from `init_requires` (`OpenMPOffloadingRequiresDirFlags`, LLVM 16's
    /// `omptarget.h`).
    pub requires: AtomicI64,
    /// Info mask (`LIBOMPTARGET_INFO`, updated by `set_info_flag`).
    pub info_flags: AtomicU32,
}

/// Whether an agent whose target ID is `target_id` runs with XNACK on, so
/// that its kernels may touch any host memory the process maps: ROCr names
/// the agent's ISA after the mode the kernel driver runs it in (`xnack+` with
/// `HSA_XNACK=1` on an MI200, always on an MI300A), and the virtual gfx90a
/// does the same.
pub fn xnack_enabled(target_id: &str) -> bool {
    TargetId::parse(target_id).is_some_and(|t| t.xnack == Some(true))
}

/// Strips the `amdgcn-amd-amdhsa` prefix and the dashes after it from an
/// ISA name: `amdgcn-amd-amdhsa--gfx90a:xnack-` → `gfx90a:xnack-` (as
/// `AMDGPUPluginTy::isImageCompatible` in LLVM 16's `plugins-nextgen/amdgpu/src/rtl.cpp`).
pub fn target_id_of_isa(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("amdgcn-amd-amdhsa")?;
    Some(rest.trim_start_matches('-'))
}

impl Runtime {
    /// Opens HSA, initialises it and discovers agents.
    ///
    /// Errors: no library, `hsa_init` failure, no GPU agent, missing host
    /// pools. On error after `hsa_init`, `hsa_shut_down` has been called.
    fn open() -> Result<Runtime> {
        let hsa = Hsa::open()?;
        log::debug!("HSA runtime opened from {}", hsa.library_name());
        hsa.init()?;
        match Self::discover(&hsa) {
            Ok(rt) => Ok(rt),
            Err(e) => {
                if let Err(down) = hsa.shut_down() {
                    log::debug!("after a failed discovery: {down}");
                }
                Err(e)
            }
        }
    }

    fn discover(hsa: &Hsa) -> Result<Runtime> {
        let mut cpus = Vec::new();
        let mut gpus = Vec::new();
        for a in hsa.agents()? {
            let kind = hsa.agent_info::<u32>(a, HSA_AGENT_INFO_DEVICE)?;
            if kind == HSA_DEVICE_TYPE_CPU {
                cpus.push(a);
            } else if kind == HSA_DEVICE_TYPE_GPU {
                let features = hsa.agent_info::<u32>(a, HSA_AGENT_INFO_FEATURE)?;
                if features & HSA_AGENT_FEATURE_KERNEL_DISPATCH != 0 {
                    gpus.push(a);
                }
            }
        }
        if gpus.is_empty() {
            return Err(Error::NoAgent("GPU"));
        }
        if cpus.is_empty() {
            return Err(Error::NoAgent("CPU"));
        }
        let mut target_ids = Vec::with_capacity(gpus.len());
        for &g in &gpus {
            // The last ISA with the amdhsa prefix wins, as in LLVM.
            let mut id = String::new();
            for isa in hsa.agent_isas(g)? {
                let name = hsa.isa_name(isa)?;
                if let Some(t) = target_id_of_isa(&name) {
                    id = t.to_string();
                }
            }
            target_ids.push(id);
        }
        let host = Arc::new(HostDevice::new(hsa, cpus, &gpus)?);
        // The handler is a plain function of this library, which is never
        // unmapped (`-z nodelete`).
        if let Err(e) = hsa.on_memory_fault(report_memory_fault) {
            log::debug!("no system event handler: {e}");
        }
        let n = gpus.len();
        Ok(Runtime {
            hsa: hsa.clone(),
            gpu_agents: gpus,
            target_ids,
            host,
            devices: (0..n).map(|_| RwLock::new(None)).collect(),
            init_locks: (0..n).map(|_| Mutex::new(())).collect(),
        })
    }

    /// The initialised device `id`.
    ///
    /// Errors: no such device, or not initialised.
    #[inline]
    pub fn device(&self, id: i32) -> Result<Arc<Device>> {
        let slot = self.slot(id)?;
        let device = slot.read().clone();
        match device {
            Some(d) => Ok(d),
            None => Err(Error::DeviceNotInitialized(id)),
        }
    }

    /// Runs `f` on the initialised device `id`, borrowed under its slot's
    /// read lock (no reference count taken: the launch path). `f` must not
    /// initialise or release devices.
    ///
    /// Errors: no such device, or not initialised; `f`'s error.
    #[inline]
    pub fn with_device<R>(&self, id: i32, f: impl FnOnce(&Device) -> Result<R>) -> Result<R> {
        let slot = self.slot(id)?;
        let device = slot.read();
        match device.as_deref() {
            Some(d) => f(d),
            None => Err(Error::DeviceNotInitialized(id)),
        }
    }

    #[inline]
    fn slot(&self, id: i32) -> Result<&RwLock<Option<Arc<Device>>>> {
        // `match`, not `ok_or`: building (and dropping) the error on every
        // call showed up in the launch path's instruction count.
        match usize::try_from(id).ok().and_then(|i| self.devices.get(i)) {
            Some(slot) => Ok(slot),
            None => Err(Error::NoSuchDevice {
                id,
                count: self.devices.len(),
            }),
        }
    }

    /// The GPU agent of device `id` (initialised or not).
    ///
    /// Errors: no such device.
    pub fn agent(&self, id: i32) -> Result<hsa_agent_t> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.gpu_agents.get(i).copied())
            .ok_or(Error::NoSuchDevice {
                id,
                count: self.gpu_agents.len(),
            })
    }

    /// Device `id`'s target ID as its agent's ISA name gives it, e.g.
    /// `gfx90a:sramecc+:xnack-` (empty when the agent named none).
    ///
    /// Errors: no such device.
    pub fn target_id(&self, id: i32) -> Result<&str> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.target_ids.get(i))
            .map(String::as_str)
            .ok_or(Error::NoSuchDevice {
                id,
                count: self.target_ids.len(),
            })
    }

    /// `init_device`: builds device `id` once; later calls succeed at once.
    ///
    /// Errors: as [`Device::new`].
    pub fn init_device(&self, id: i32) -> Result<()> {
        let slot = self.slot(id)?;
        let agent = self.agent(id)?;
        let idx = id as usize;
        let _serial = self.init_locks[idx].lock();
        if slot.read().is_some() {
            return Ok(());
        }
        let dev = Device::new(
            &self.hsa,
            self.host.clone(),
            id,
            self.gpu_agents.len() as u32,
            agent,
        )?;
        *slot.write() = Some(Arc::new(dev));
        Ok(())
    }

    /// `deinit_device`: releases device `id`'s resources; a later
    /// `init_device` builds it anew.
    ///
    /// Errors: no such device, or not initialised.
    pub fn deinit_device(&self, id: i32) -> Result<()> {
        let slot = self.slot(id)?;
        let dev = slot.write().take().ok_or(Error::DeviceNotInitialized(id))?;
        if !dev.teardown(Instant::now() + TEARDOWN_WAIT) {
            // Still running: keep its queues and memory alive for good.
            std::mem::forget(dev);
            return Err(Error::DeviceBusy {
                id,
                seconds: TEARDOWN_WAIT.as_secs(),
            });
        }
        Ok(())
    }

    fn teardown(&self) {
        let deadline = Instant::now() + TEARDOWN_WAIT;
        let mut clean = true;
        for slot in &self.devices {
            if let Some(dev) = slot.write().take() {
                if !dev.teardown(deadline) {
                    // The runtime may still run its work: destroying its
                    // queues or memory could block or fault. Leak it.
                    std::mem::forget(dev);
                    clean = false;
                }
            }
        }
        if !clean {
            log::error!(
                "at exit: GPU work was still pending after {} s; the HSA runtime is not shut down",
                TEARDOWN_WAIT.as_secs()
            );
            return;
        }
        self.host.teardown();
        if let Err(e) = self.hsa.shut_down() {
            log::debug!("at exit: {e}");
        }
    }
}

/// Reports a GPU memory fault (`HSA_AMD_GPU_MEMORY_FAULT_EVENT`, `hsa/hsa_ext_amd.h`;
/// handlers registered with `hsa_amd_register_system_event_handler`). The runtime is told it was
/// handled, so it does not abort the process; the faulting queue's error
/// callback then fails the pending operations, and the entry point waiting
/// for them reports the failure.
fn report_memory_fault(fault: &hsa::MemoryFault) {
    log::error!(
        "memory access fault on the GPU at address {:#x}: {} (reason bits {:#x})",
        fault.virtual_address,
        fault_reasons(fault.fault_reason_mask),
        fault.fault_reason_mask
    );
}

/// The names of the bits set in a memory fault's reason mask
/// (`hsa_amd_memory_fault_reason_t`, `hsa_ext_amd.h`), joined by `|`;
/// unknown bits are given in hex.
pub fn fault_reasons(mask: u32) -> String {
    const NAMES: [(u32, &str); 8] = [
        (
            HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT as u32,
            "PAGE_NOT_PRESENT",
        ),
        (HSA_AMD_MEMORY_FAULT_READ_ONLY as u32, "READ_ONLY"),
        (HSA_AMD_MEMORY_FAULT_NX as u32, "NX"),
        (HSA_AMD_MEMORY_FAULT_HOST_ONLY as u32, "HOST_ONLY"),
        (HSA_AMD_MEMORY_FAULT_DRAMECC as u32, "DRAMECC"),
        (HSA_AMD_MEMORY_FAULT_IMPRECISE as u32, "IMPRECISE"),
        (HSA_AMD_MEMORY_FAULT_SRAMECC as u32, "SRAMECC"),
        (HSA_AMD_MEMORY_FAULT_HANG as u32, "HANG"),
    ];
    let mut parts: Vec<String> = NAMES
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| (*name).to_string())
        .collect();
    let known = NAMES.iter().fold(0, |acc, (bit, _)| acc | bit);
    if mask & !known != 0 {
        parts.push(format!("{:#x}", mask & !known));
    }
    if parts.is_empty() {
        return "no reason given".into();
    }
    parts.join("|")
}

/// The process-wide plugin; `None` before `init_plugin` and after teardown.
static PLUGIN: RwLock<Option<Arc<Plugin>>> = RwLock::new(None);
/// Serializes creation.
static CREATE: Mutex<bool> = Mutex::new(false);
/// The plugin for the entry points' fast path ([`Plugin::current`]): set
/// once at creation to a leaked reference count (`Box::leak` of an `Arc`),
/// so the plugin lives for the rest of the process.
static CURRENT: OnceLock<&'static Plugin> = OnceLock::new();
/// Set by the teardown at exit: from then on [`Plugin::current`] is `None`.
static TORN_DOWN: AtomicBool = AtomicBool::new(false);

impl Plugin {
    /// Creates the plugin once (later calls do nothing). Never fails: any
    /// problem leaves a plugin with zero devices (libomptarget then skips it).
    /// `on_created` runs once, at the end of the creation and still under
    /// the creation lock: the C ABI registers `teardown_at_exit`
    /// with `atexit` there (`rtl.rs`).
    pub fn create(on_created: impl FnOnce()) {
        let mut created = CREATE.lock();
        if *created {
            return;
        }
        *created = true;
        crate::logging::init();
        let runtime = match Runtime::open() {
            Ok(rt) => {
                log::debug!(
                    "omptarget-amdgpu (Rust AMDGPU plugin): {} GPU agent(s)",
                    rt.gpu_agents.len()
                );
                Some(rt)
            }
            Err(e) => {
                log::debug!("omptarget-amdgpu (Rust AMDGPU plugin): no devices: {e}");
                None
            }
        };
        let info = crate::env::u32_or(crate::env::INFO, 0);
        let plugin = Arc::new(Plugin {
            runtime,
            requires: AtomicI64::new(0),
            info_flags: AtomicU32::new(info),
        });
        let leaked: &'static Arc<Plugin> = Box::leak(Box::new(plugin.clone()));
        if CURRENT.set(leaked.as_ref()).is_err() {
            // Unreachable: creation runs once, under `CREATE`.
            log::error!("the plugin was created twice; keeping the first");
        }
        *PLUGIN.write() = Some(plugin);
        CREATOR_PID.store(std::process::id(), Ordering::Relaxed);
        on_created();
    }

    /// The plugin, if created.
    pub fn get() -> Option<Arc<Plugin>> {
        PLUGIN.read().clone()
    }

    /// The plugin, if created and not torn down, without taking a lock or a
    /// reference count (the entry points' hot path): the same plugin as
    /// [`Plugin::get`].
    #[inline]
    pub fn current() -> Option<&'static Plugin> {
        if TORN_DOWN.load(Ordering::Acquire) {
            return None;
        }
        CURRENT.get().copied()
    }

    /// Refuses device `id` when the program requires unified shared memory
    /// (`init_requires` got `OMP_REQ_UNIFIED_SHARED_MEMORY`) and the device's
    /// agent has XNACK off: host pointers would reach its kernels, which
    /// could not dereference them. Called by `init_device` and `load_binary`,
    /// so the program stops before its first kernel.
    ///
    /// Errors: [`Error::UsmNeedsXnack`]; no runtime or no such device.
    pub fn check_requires(&self, id: i32) -> Result<()> {
        if self.requires.load(Ordering::Relaxed) & OMP_REQ_UNIFIED_SHARED_MEMORY == 0 {
            return Ok(());
        }
        let target_id = self.rt()?.target_id(id)?;
        if xnack_enabled(target_id) {
            return Ok(());
        }
        Err(Error::UsmNeedsXnack {
            id,
            target_id: target_id.to_string(),
        })
    }

    /// Number of devices (GPU agents), 0 without runtime.
    pub fn device_count(&self) -> usize {
        self.runtime.as_ref().map_or(0, |r| r.gpu_agents.len())
    }

    /// The runtime.
    ///
    /// Errors: [`Error::NoRuntime`].
    #[inline]
    pub fn rt(&self) -> Result<&Runtime> {
        match &self.runtime {
            Some(rt) => Ok(rt),
            None => Err(Error::NoRuntime),
        }
    }

    /// Current info mask.
    #[inline]
    pub fn info(&self) -> u32 {
        self.info_flags.load(Ordering::Relaxed)
    }
}

/// Process id of the process that created the plugin (0 before).
static CREATOR_PID: AtomicU32 = AtomicU32::new(0);

/// Tears the plugin down at process exit (see the module docs). Not in a
/// child made by `fork()`: the HSA runtime's threads (packet processors,
/// copy engine, signal handlers) did not survive the fork, so its queues,
/// signals and memory must not be touched there; the child's exit leaves
/// them to the parent. Called once, by the `atexit` handler the C ABI
/// registers when the plugin is created (`rtl.rs`).
pub(crate) fn teardown_at_exit() {
    if CREATOR_PID.load(Ordering::Relaxed) != std::process::id() {
        return;
    }
    TORN_DOWN.store(true, Ordering::Release);
    let taken = PLUGIN.write().take();
    if let Some(plugin) = taken {
        if let Some(rt) = &plugin.runtime {
            // Teardown must never unwind into libc's exit path.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.teardown())).is_err() {
                log::error!("internal error during teardown at exit (panic caught)");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xnack_is_on_only_where_the_target_id_says_xnack_plus() {
        assert!(xnack_enabled("gfx90a:sramecc+:xnack+"));
        assert!(xnack_enabled("gfx942:xnack+"));
        assert!(!xnack_enabled("gfx90a:sramecc+:xnack-"));
        assert!(!xnack_enabled("gfx90a"));
        assert!(!xnack_enabled(""));
    }

    #[test]
    fn fault_reason_bits_are_named() {
        // Bit values from ROCm 5.2's hsa_ext_amd.h.
        assert_eq!(fault_reasons(0x1), "PAGE_NOT_PRESENT");
        assert_eq!(fault_reasons(0x2 | 0x4), "READ_ONLY|NX");
        assert_eq!(fault_reasons(0x8 | 0x10), "HOST_ONLY|DRAMECC");
        assert_eq!(fault_reasons(0x80000000), "HANG");
        assert_eq!(fault_reasons(0x100), "0x100");
        assert_eq!(fault_reasons(0), "no reason given");
    }

    #[test]
    fn isa_names_lose_their_prefix() {
        assert_eq!(
            target_id_of_isa("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
            Some("gfx90a:sramecc+:xnack-")
        );
        assert_eq!(
            target_id_of_isa("amdgcn-amd-amdhsa--gfx90a"),
            Some("gfx90a")
        );
        assert_eq!(target_id_of_isa("x86_64-unknown"), None);
    }
}
