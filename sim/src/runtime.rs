//! The runtime's global state: created by the first `hsa_init`, torn down by
//! the `hsa_shut_down` that brings the reference count back to 0.

use crate::agent::{Agent, AgentKind};
use crate::config::Config;
use crate::copy::CopyEngine;
use crate::dispatch::{DispatchError, DispatchRequest, Dispatcher};
use crate::error::{SimError, SimResult};
use crate::executable::{CodeObjectReader, Executable, ExecutableSymbol};
use crate::handles::HandleTable;
use crate::memory::{Allocation, MemoryMap, Pool, PAGE};
use crate::queue::{Queue, QueueHost};
use crate::signal::{AsyncHandlerThread, Signal};
use hsa_sys::*;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Handle tag of signals.
pub const SIGNAL_TAG: u8 = 0x53;
/// Handle tag of executables.
pub const EXECUTABLE_TAG: u8 = 0x45;
/// Handle tag of executable symbols.
pub const SYMBOL_TAG: u8 = 0x59;
/// Handle tag of code object readers.
pub const READER_TAG: u8 = 0x52;

/// A registered `hsa_amd_register_system_event_handler` callback.
#[derive(Clone, Copy)]
pub struct EventHandler {
    /// The client's callback.
    pub callback:
        unsafe extern "C" fn(*const hsa_amd_event_t, *mut std::ffi::c_void) -> hsa_status_t,
    /// Its user data pointer.
    pub data: usize,
}

/// Everything the runtime owns between `hsa_init` and the last `hsa_shut_down`.
pub struct Runtime {
    /// Settings read from the environment at init.
    pub config: Config,
    /// Agents: index 0 is the CPU agent, then the GPU agents.
    pub agents: Vec<Agent>,
    /// Memory pools of every agent.
    pub pools: Vec<Pool>,
    /// Every allocation and locked range.
    pub memory: Arc<MemoryMap>,
    /// Live signals.
    pub signals: HandleTable<Signal>,
    /// Live queues, by the address of their `hsa_queue_t`.
    pub queues: RwLock<HashMap<u64, Arc<Queue>>>,
    /// Live executables.
    pub executables: HandleTable<Executable>,
    /// Symbols of live executables.
    pub symbols: HandleTable<ExecutableSymbol>,
    /// Code object copies made by `hsa_code_object_deserialize`, by handle.
    pub code_objects: Mutex<HashMap<u64, Arc<crate::executable::CodeObjectBytes>>>,
    /// Code object readers.
    pub readers: HandleTable<CodeObjectReader>,
    /// System event handlers.
    pub event_handlers: Mutex<Vec<EventHandler>>,
    /// The async signal handler thread.
    pub async_handlers: AsyncHandlerThread,
    /// One copy engine per GPU agent (indexed by agent index; `None` for the CPU).
    pub copy_engines: Vec<Option<CopyEngine>>,
    /// Queue ids handed out so far.
    pub next_queue_id: AtomicU64,
    /// The process's host mappings: what kernels may reach beyond allocations and
    /// locked ranges with XNACK on (`config.xnack`) or where `svm` allows it.
    pub host_maps: Arc<crate::host_memory::HostMaps>,
    /// The SVM attributes clients set (`hsa_amd_svm_attributes_set`).
    pub svm: Arc<crate::svm::SvmAttributes>,
    /// Dispatches started (for diagnostics).
    pub dispatches: AtomicUsize,
    /// Runs the kernel dispatches of every queue: built from `config` at
    /// `hsa_init`, its helper threads joined at the last `hsa_shut_down`.
    pub dispatcher: Dispatcher,
}

static STATE: RwLock<Option<Arc<Runtime>>> = RwLock::new(None);
static INIT_COUNT: Mutex<u32> = Mutex::new(0);

pub use crate::clock::{timestamp_ns, TIMESTAMP_FREQUENCY};

/// The live runtime. Errors: `NotInitialized` while the init count is 0.
pub fn runtime() -> SimResult<Arc<Runtime>> {
    STATE.read().clone().ok_or(SimError::NotInitialized)
}

fn host_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(16 << 30)
}

impl Runtime {
    fn build(config: Config) -> SimResult<Runtime> {
        let host_mem = host_memory_bytes() & !(PAGE - 1);
        let mut agents = Vec::new();
        let mut pools = Vec::new();
        let mut add_pool =
            |agent: usize, segment: u32, flags: u32, size: u64, alloc: bool, all: bool| {
                let index = pools.len();
                pools.push(Pool {
                    index,
                    agent,
                    segment,
                    global_flags: flags,
                    size,
                    alloc_allowed: alloc,
                    accessible_by_all: all,
                    used: AtomicU64::new(0),
                });
                index
            };
        // The CPU agent's pools, in ROCr 5.2's order (`src/core/runtime/amd_cpu_agent.cpp` of
        // ROCR-Runtime `rocm-5.2.3`).
        let cpu_pools = vec![
            add_pool(
                0,
                HSA_AMD_SEGMENT_GLOBAL,
                HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
                host_mem,
                true,
                true,
            ),
            add_pool(
                0,
                HSA_AMD_SEGMENT_GLOBAL,
                HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT
                    | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
                host_mem,
                true,
                true,
            ),
            add_pool(
                0,
                HSA_AMD_SEGMENT_GLOBAL,
                HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                host_mem,
                true,
                true,
            ),
        ];
        let cores = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        agents.push(Agent {
            index: 0,
            kind: AgentKind::Cpu,
            pools: cpu_pools,
            compute_units: cores,
            memory_size: host_mem,
            gpu_ordinal: None,
        });
        for g in 0..config.gpus {
            let index = agents.len();
            let p = vec![
                add_pool(
                    index,
                    HSA_AMD_SEGMENT_GLOBAL,
                    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                    config.device_memory,
                    true,
                    false,
                ),
                add_pool(index, HSA_AMD_SEGMENT_GROUP, 0, 65536, false, false),
            ];
            agents.push(Agent {
                index,
                kind: AgentKind::Gpu,
                pools: p,
                compute_units: config.compute_units,
                memory_size: config.device_memory,
                gpu_ordinal: Some(g),
            });
        }
        let memory = Arc::new(MemoryMap::new());
        let async_handlers = AsyncHandlerThread::start().map_err(|e| {
            SimError::OutOfResources(format!("starting the async handler thread: {e}"))
        })?;
        let mut copy_engines = Vec::new();
        for a in &agents {
            copy_engines.push(match a.kind {
                AgentKind::Gpu => Some(CopyEngine::start(a.index).map_err(|e| {
                    SimError::OutOfResources(format!("starting a copy engine thread: {e}"))
                })?),
                AgentKind::Cpu => None,
            });
        }
        let dispatcher = Dispatcher::with_settings(config.dispatch.clone());
        // XNACK on: host memory is reachable, and a hole under a running kernel is
        // a fault of its dispatch (installed once per process).
        if config.xnack {
            crate::host_guard::install();
        }
        let host_maps = Arc::new(crate::host_memory::HostMaps::new());
        let svm = Arc::new(crate::svm::SvmAttributes::new());
        Ok(Runtime {
            config,
            agents,
            pools,
            memory,
            signals: HandleTable::new(SIGNAL_TAG),
            queues: RwLock::new(HashMap::new()),
            executables: HandleTable::new(EXECUTABLE_TAG),
            symbols: HandleTable::new(SYMBOL_TAG),
            code_objects: Mutex::new(HashMap::new()),
            readers: HandleTable::new(READER_TAG),
            event_handlers: Mutex::new(Vec::new()),
            async_handlers,
            copy_engines,
            next_queue_id: AtomicU64::new(0),
            host_maps,
            svm,
            dispatches: AtomicUsize::new(0),
            dispatcher,
        })
    }

    /// The agent behind `handle`. Errors: `InvalidAgent`.
    pub fn agent(&self, handle: u64) -> SimResult<&Agent> {
        crate::agent::agent_index(handle)
            .and_then(|i| self.agents.get(i))
            .ok_or(SimError::InvalidAgent(handle))
    }

    /// The GPU agent behind `handle`. Errors: `InvalidAgent` (also for the CPU agent).
    pub fn gpu_agent(&self, handle: u64) -> SimResult<&Agent> {
        let a = self.agent(handle)?;
        if a.kind == AgentKind::Gpu {
            Ok(a)
        } else {
            Err(SimError::InvalidAgent(handle))
        }
    }

    /// The pool behind `handle`. Errors: `InvalidMemoryPool`.
    pub fn pool(&self, handle: u64) -> SimResult<&Pool> {
        crate::memory::pool_index(handle)
            .and_then(|i| self.pools.get(i))
            .ok_or(SimError::InvalidMemoryPool(handle))
    }

    /// The signal behind `handle`. Errors: `InvalidSignal`.
    pub fn signal(&self, handle: u64) -> SimResult<Arc<Signal>> {
        self.signals
            .get(handle)
            .ok_or(SimError::InvalidSignal(handle))
    }

    /// The queue whose `hsa_queue_t` is at `address`. Errors: `InvalidQueue`.
    pub fn queue(&self, address: u64) -> SimResult<Arc<Queue>> {
        self.queues
            .read()
            .get(&address)
            .cloned()
            .ok_or(SimError::InvalidQueue(address))
    }

    /// Bit mask of every GPU agent.
    pub fn gpu_mask(&self) -> u64 {
        self.agents
            .iter()
            .filter(|a| a.kind == AgentKind::Gpu && a.index < 64)
            .fold(0, |m, a| m | (1u64 << a.index))
    }

    /// The name of the kernel whose descriptor is at `kernel_object` (its
    /// symbol's name without `.kd`), if a live executable defines it.
    pub fn kernel_name(&self, kernel_object: u64) -> Option<String> {
        self.symbols.entries().into_iter().find_map(|(_, s)| {
            let kernel = matches!(s.info, crate::executable::SymbolInfo::Kernel(_));
            (kernel && s.address == kernel_object)
                .then(|| s.name.strip_suffix(".kd").unwrap_or(&s.name).to_string())
        })
    }

    /// Calls every system event handler with `event`, on the calling thread
    /// (a runtime thread). ROCr aborts when no handler returns SUCCESS; the
    /// virtual device only logs, so that the device never brings the host down.
    pub fn raise_event(&self, event: &hsa_amd_event_t) {
        let handlers: Vec<EventHandler> = self.event_handlers.lock().clone();
        let mut handled = false;
        for h in handlers {
            // SAFETY: the client registered this callback with this data pointer
            // through hsa_amd_register_system_event_handler; `event` outlives the call.
            let status = unsafe { (h.callback)(event, h.data as *mut std::ffi::c_void) };
            handled |= status == HSA_STATUS_SUCCESS;
        }
        if !handled {
            log::error!(
                "virtual gfx90a: a system event (type {}) was not handled by any handler",
                event.event_type
            );
        }
    }

    /// What loading an executable touches of this runtime.
    pub fn platform(&self) -> crate::executable::Platform<'_> {
        crate::executable::Platform {
            xnack: self.config.xnack,
            memory: &self.memory,
            symbols: &self.symbols,
        }
    }

    /// Creates a queue of `size` packets on GPU agent `agent` (its memory view
    /// with this runtime's host access rules) and starts its processor.
    ///
    /// Errors: as [`Queue::create`].
    pub fn create_queue(
        self: &Arc<Self>,
        agent: usize,
        size: u32,
        callback: Option<crate::queue::QueueCallback>,
        callback_data: usize,
        private_segment_size: u32,
    ) -> SimResult<Arc<Queue>> {
        let memory: Arc<dyn isa::GlobalMemory> = Arc::new(crate::memory::AgentMemory {
            map: self.memory.clone(),
            agent,
            host: Some(crate::memory::HostAccess {
                maps: self.host_maps.clone(),
                svm: self.svm.clone(),
                by_default: self.config.xnack,
                agent_handle: crate::agent::agent_handle(agent),
            }),
        });
        let host: Arc<dyn QueueHost> = self.clone();
        Queue::create(
            &host,
            crate::queue::QueueSetup {
                agent,
                size,
                callback,
                callback_data,
                compute_units: self.config.compute_units,
                memory,
                // UINT32_MAX: the default (`GpuAgent::QueueCreate`).
                scratch_per_lane: match private_segment_size {
                    u32::MAX => self.config.queue_scratch_per_lane,
                    n => n,
                },
            },
        )
    }

    fn teardown(&self) {
        let queues: Vec<Arc<Queue>> = self.queues.write().drain().map(|(_, q)| q).collect();
        for q in queues {
            q.stop();
        }
        // No queue dispatches any more.
        self.dispatcher.shutdown();
        for ce in self.copy_engines.iter().flatten() {
            ce.shutdown();
        }
        self.async_handlers.shutdown();
        for s in self.signals.clear() {
            s.mark_destroyed();
        }
        self.executables.clear();
        self.symbols.clear();
        self.readers.clear();
        self.code_objects.lock().clear();
        self.memory.clear();
    }
}

/// `hsa_init`: opens the runtime or counts one more reference.
///
/// Errors: `OutOfResources` when a runtime thread cannot start;
/// `HSA_STATUS_ERROR_REFCOUNT_OVERFLOW` at `i32::MAX` references.
pub fn init() -> Result<(), hsa_status_t> {
    let mut count = INIT_COUNT.lock();
    if *count == i32::MAX as u32 {
        return Err(HSA_STATUS_ERROR_REFCOUNT_OVERFLOW);
    }
    if *count == 0 {
        crate::init_logging();
        let rt = Runtime::build(Config::from_env()).map_err(|e| {
            log::error!("hsa_init: {e}");
            e.status()
        })?;
        isa::set_perf_map(rt.config.perf_map);
        log::debug!(
            "virtual gfx90a runtime up: {} GPU agent(s), {} worker thread(s)",
            rt.config.gpus,
            rt.config.workers
        );
        *STATE.write() = Some(Arc::new(rt));
    }
    *count += 1;
    Ok(())
}

/// `hsa_shut_down`: drops one reference; the last one releases everything.
///
/// Errors: `NotInitialized` when the count is already 0.
pub fn shut_down() -> SimResult<()> {
    let mut count = INIT_COUNT.lock();
    if *count == 0 {
        return Err(SimError::NotInitialized);
    }
    *count -= 1;
    if *count == 0 {
        let rt = STATE.write().take();
        if let Some(rt) = rt {
            rt.teardown();
        }
    }
    Ok(())
}

impl QueueHost for Runtime {
    fn register_signal(&self, signal: Arc<Signal>) -> u64 {
        self.signals.insert(signal)
    }

    fn next_queue_id(&self) -> u64 {
        self.next_queue_id.fetch_add(1, Ordering::Relaxed)
    }

    fn add_allocation(&self, allocation: Arc<Allocation>) {
        self.memory.insert(allocation);
    }

    fn signal(&self, handle: u64) -> Option<Arc<Signal>> {
        self.signals.get(handle)
    }

    fn raise_event(&self, event: &hsa_amd_event_t) {
        Runtime::raise_event(self, event);
    }

    fn dispatch(
        &self,
        req: &DispatchRequest,
        memory: &Arc<dyn isa::GlobalMemory>,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), DispatchError> {
        self.dispatches.fetch_add(1, Ordering::Relaxed);
        // The host may have changed its mappings since the last kernel.
        self.host_maps.invalidate();
        let start = std::time::Instant::now();
        let counts = self
            .dispatcher
            .dispatch_cancellable(req, memory, self.config.workers, cancel)
            .map_err(|e| e.with_kernel(|| self.kernel_name(req.kernel_object)))?;
        if log::log_enabled!(log::Level::Debug) {
            let ns = start.elapsed().as_nanos() as f64;
            let executed = counts.executed.max(1) as f64;
            log::debug!(
                "dispatch of {}: {} wave-instructions in {:.3} ms ({:.1} ns each), {:.1}% in fused runs",
                self.kernel_name(req.kernel_object).unwrap_or_default(),
                counts.executed,
                ns / 1e6,
                ns / executed,
                100.0 * counts.fused as f64 / executed
            );
        }
        Ok(())
    }
}
