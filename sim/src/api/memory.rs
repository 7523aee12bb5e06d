//! Memory pools, allocation, access, locking, fills and copies
//! (`hsa_amd_memory_*` and `hsa_amd_agents_allow_access` in `hsa/hsa_ext_amd.h`,
//! `hsa_memory_*` in `hsa/hsa.h`; behaviour as ROCr 5.2's
//! `src/core/runtime/amd_memory_region.cpp` and `runtime.cpp`).

use super::{boundary, check_signature, non_null, write_info};
use crate::agent::{agent_handle, AgentKind, InfoValue};
use crate::copy::CopyJob;
use crate::error::{SimError, SimResult};
use crate::memory::{AllocKind, Resolved};
use crate::runtime::{runtime, Runtime};
use hsa_sys::*;
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

check_signature!(
    hsa_amd_agent_iterate_memory_pools,
    hsa_amd_memory_pool_get_info,
    hsa_amd_agent_memory_pool_get_info,
    hsa_amd_memory_pool_allocate,
    hsa_amd_memory_pool_free,
    hsa_amd_agents_allow_access,
    hsa_amd_memory_pool_can_migrate,
    hsa_amd_memory_lock,
    hsa_amd_memory_unlock,
    hsa_amd_memory_fill,
    hsa_amd_pointer_info,
    hsa_memory_copy,
    hsa_amd_memory_async_copy,
);

/// `hsa_amd_agent_iterate_memory_pools`: the agent's pools, on the caller's thread.
///
/// # Safety
/// `callback` must be callable with `data`.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: hsa_agent_t,
    callback: Option<
        unsafe extern "C" fn(memory_pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t,
    >,
    data: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_amd_agent_iterate_memory_pools", || {
        let rt = runtime()?;
        let cb = callback.ok_or_else(|| SimError::arg("callback is NULL"))?;
        let a = rt.agent(agent.handle)?;
        for &p in &a.pools {
            // SAFETY: the client's callback with its own data pointer.
            let s = unsafe {
                cb(
                    hsa_amd_memory_pool_t {
                        handle: rt.pools[p].handle(),
                    },
                    data,
                )
            };
            if s != HSA_STATUS_SUCCESS {
                return Err(SimError::Callback(s));
            }
        }
        Ok(())
    })
}

/// `hsa_amd_memory_pool_get_info`.
///
/// # Safety
/// `value` must be NULL or point to storage of the attribute's type.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    memory_pool: hsa_amd_memory_pool_t,
    attribute: hsa_amd_memory_pool_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_amd_memory_pool_get_info", || {
        let rt = runtime()?;
        non_null(value, "value")?;
        let p = rt.pool(memory_pool.handle)?;
        let global = p.segment == HSA_AMD_SEGMENT_GLOBAL;
        let v = match attribute {
            HSA_AMD_MEMORY_POOL_INFO_SEGMENT => InfoValue::U32(p.segment),
            HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS => InfoValue::U32(p.global_flags),
            HSA_AMD_MEMORY_POOL_INFO_SIZE => InfoValue::U64(p.size),
            HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED => InfoValue::Bool(p.alloc_allowed),
            HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE
            | HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT => {
                InfoValue::U64(if global { crate::memory::PAGE } else { 0 })
            }
            HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL => InfoValue::Bool(p.accessible_by_all),
            HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE => {
                InfoValue::U64(if p.alloc_allowed { p.size } else { 0 })
            }
            other => {
                return Err(SimError::arg(format!(
                    "unknown memory pool attribute {other:#x}"
                )))
            }
        };
        // SAFETY: non-null, sized for the attribute by the caller's contract.
        unsafe { write_info(value, &v) };
        Ok(())
    })
}

/// How agent `agent` may access pool `pool`
/// (`hsa_amd_agent_memory_pool_get_info`, `hsa/hsa_ext_amd.h`).
fn access_rule(rt: &Runtime, agent: usize, pool: usize) -> (u32, u32) {
    let p = &rt.pools[pool];
    let a = &rt.agents[agent];
    if p.agent == agent {
        return (HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT, 0);
    }
    if p.segment != HSA_AMD_SEGMENT_GLOBAL {
        return (HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED, 0);
    }
    let owner_cpu = rt.agents[p.agent].kind == AgentKind::Cpu;
    match (a.kind, owner_cpu) {
        (AgentKind::Cpu, true) => (HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT, 0),
        _ => (HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT, 1),
    }
}

/// `hsa_amd_agent_memory_pool_get_info`: access rules and links.
///
/// # Safety
/// `value` must be NULL or point to storage of the attribute's type (for
/// LINK_INFO, NUM_LINK_HOPS link records).
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_agent_memory_pool_get_info(
    agent: hsa_agent_t,
    memory_pool: hsa_amd_memory_pool_t,
    attribute: hsa_amd_agent_memory_pool_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_amd_agent_memory_pool_get_info", || {
        let rt = runtime()?;
        non_null(value, "value")?;
        let a = rt.agent(agent.handle)?.index;
        let p = rt.pool(memory_pool.handle)?.index;
        let (access, hops) = access_rule(&rt, a, p);
        match attribute {
            HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS => {
                // SAFETY: non-null; the attribute's type is a 4-byte enum.
                unsafe { write_info(value, &InfoValue::U32(access)) }
            }
            HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS => {
                // SAFETY: non-null; the attribute's type is uint32_t.
                unsafe { write_info(value, &InfoValue::U32(hops)) }
            }
            HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO => {
                if hops > 0 {
                    let both_gpu = rt.agents[a].kind == AgentKind::Gpu
                        && rt.agents[rt.pools[p].agent].kind == AgentKind::Gpu;
                    let link = hsa_amd_memory_pool_link_info_t {
                        min_latency: 0,
                        max_latency: 0,
                        min_bandwidth: 0,
                        max_bandwidth: 0,
                        atomic_support_32bit: true,
                        atomic_support_64bit: true,
                        coherent_support: false,
                        link_type: if both_gpu {
                            HSA_AMD_LINK_INFO_TYPE_XGMI
                        } else {
                            HSA_AMD_LINK_INFO_TYPE_PCIE
                        },
                        numa_distance: if both_gpu { 15 } else { 20 },
                    };
                    // SAFETY: non-null; the caller sized the buffer for NUM_LINK_HOPS (1) records.
                    unsafe {
                        std::ptr::write_unaligned(
                            value as *mut hsa_amd_memory_pool_link_info_t,
                            link,
                        )
                    };
                }
            }
            other => {
                return Err(SimError::arg(format!(
                    "unknown agent memory pool attribute {other:#x}"
                )))
            }
        }
        Ok(())
    })
}

/// `hsa_amd_memory_pool_allocate`: `size` bytes rounded up to 4 KiB, 4 KiB aligned.
///
/// # Safety
/// `ptr` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    memory_pool: hsa_amd_memory_pool_t,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> hsa_status_t {
    boundary("hsa_amd_memory_pool_allocate", || {
        let rt = runtime()?;
        non_null(ptr, "ptr")?;
        if size == 0 {
            return Err(SimError::arg("size is 0"));
        }
        if flags != 0 {
            return Err(SimError::arg(format!(
                "flags {flags:#x} are not supported (must be 0)"
            )));
        }
        let p = rt.pool(memory_pool.handle)?;
        if !p.alloc_allowed {
            return Err(SimError::InvalidAllocation(
                "the pool does not allow runtime allocation".into(),
            ));
        }
        let size = size as u64;
        if size > p.size {
            return Err(SimError::InvalidAllocation(format!(
                "{size} bytes exceed the pool's maximum allocation of {} bytes",
                p.size
            )));
        }
        let rounded = size.div_ceil(crate::memory::PAGE) * crate::memory::PAGE;
        let mut used = p.used.load(Ordering::Relaxed);
        loop {
            let next = used
                .checked_add(rounded)
                .filter(|&n| n <= p.size)
                .ok_or_else(|| {
                    SimError::OutOfResources(format!(
                        "pool {:#x} has {} of {} bytes in use; {rounded} more do not fit",
                        p.handle(),
                        used,
                        p.size
                    ))
                })?;
            match p
                .used
                .compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(u) => used = u,
            }
        }
        // Large device memory goes to a fixed place (`memory::placement_window`).
        let place = (p.is_device_memory() && rounded >= crate::memory::PLACED_MIN)
            .then(|| {
                let (start, end) = crate::memory::placement_window(p.agent, p.size);
                rt.memory.first_fit(start, end, rounded, 2 << 20)
            })
            .flatten();
        let alloc = match rt.memory.allocate_pool(size, p.index, p.agent, place) {
            Ok(a) => a,
            Err(e) => {
                p.used.fetch_sub(rounded, Ordering::AcqRel);
                return Err(e);
            }
        };
        let base = alloc.base;
        rt.memory.insert(alloc);
        // SAFETY: checked non-null; writable by the caller's contract.
        unsafe { *ptr = base as *mut c_void };
        Ok(())
    })
}

/// `hsa_amd_memory_pool_free`: frees an allocation by its base; NULL is a no-op.
///
/// The range stays reserved, so that a later copy through the dangling
/// pointer fails instead of reaching whatever the host maps there next
/// ([`crate::memory`], "Freed pool memory stays reserved").
#[no_mangle]
pub extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> hsa_status_t {
    boundary("hsa_amd_memory_pool_free", || {
        let rt = runtime()?;
        if ptr.is_null() {
            return Ok(());
        }
        let base = ptr as u64;
        // Removed in one step: of two threads freeing one pointer, one succeeds.
        match rt.memory.free_pool(base) {
            Some(a) => {
                if let AllocKind::Pool(p) = a.kind {
                    rt.pools[p].used.fetch_sub(a.size, Ordering::AcqRel);
                }
                Ok(())
            }
            None => Err(SimError::InvalidAllocation(format!(
                "{base:#x} is not the base of a pool allocation"
            ))),
        }
    })
}

fn agent_mask(rt: &Runtime, agents: &[hsa_agent_t]) -> SimResult<u64> {
    let mut mask = 0u64;
    for a in agents {
        let i = rt.agent(a.handle)?.index;
        if i < 64 {
            mask |= 1 << i;
        }
    }
    Ok(mask)
}

/// `hsa_amd_agents_allow_access`: lets the agents access an allocation.
///
/// # Safety
/// `agents` must hold `num_agents` handles.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const hsa_agent_t,
    flags: *const u32,
    ptr: *const c_void,
) -> hsa_status_t {
    boundary("hsa_amd_agents_allow_access", || {
        let rt = runtime()?;
        if num_agents == 0 {
            return Err(SimError::arg("num_agents is 0"));
        }
        non_null(agents, "agents")?;
        non_null(ptr, "ptr")?;
        if !flags.is_null() {
            return Err(SimError::arg("flags must be NULL"));
        }
        // SAFETY: the caller passes num_agents handles.
        let list = unsafe { std::slice::from_raw_parts(agents, num_agents as usize) };
        let mask = agent_mask(&rt, list)?;
        let a = rt
            .memory
            .by_base(ptr as u64)
            .ok_or(SimError::NotAllocationBase(ptr as u64))?;
        a.allow(mask);
        Ok(())
    })
}

/// `hsa_amd_memory_pool_can_migrate`: unimplemented, as in ROCr 5.2
/// (`*result = false`, OUT_OF_RESOURCES).
///
/// # Safety
/// `result` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_memory_pool_can_migrate(
    src_memory_pool: hsa_amd_memory_pool_t,
    dst_memory_pool: hsa_amd_memory_pool_t,
    result: *mut bool,
) -> hsa_status_t {
    boundary("hsa_amd_memory_pool_can_migrate", || {
        let rt = runtime()?;
        non_null(result, "result")?;
        rt.pool(src_memory_pool.handle)?;
        rt.pool(dst_memory_pool.handle)?;
        // SAFETY: checked non-null.
        unsafe { *result = false };
        Err(SimError::OutOfResources(
            "memory pool migration is not implemented".into(),
        ))
    })
}

/// `hsa_amd_memory_lock`: pins host memory; the agent address is the host address.
///
/// # Safety
/// `agents` must hold `num_agent` handles; `agent_ptr` must be NULL or writable;
/// the host range must stay allocated until unlocked.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_memory_lock(
    host_ptr: *mut c_void,
    size: usize,
    agents: *mut hsa_agent_t,
    num_agent: c_int,
    agent_ptr: *mut *mut c_void,
) -> hsa_status_t {
    boundary("hsa_amd_memory_lock", || {
        let rt = runtime()?;
        non_null(agent_ptr, "agent_ptr")?;
        // SAFETY: checked non-null.
        unsafe { *agent_ptr = std::ptr::null_mut() };
        non_null(host_ptr, "host_ptr")?;
        if size == 0 {
            return Err(SimError::arg("size is 0"));
        }
        if (host_ptr as u64).checked_add(size as u64).is_none() {
            return Err(SimError::arg("the range wraps around the address space"));
        }
        if !host_range_mapped(host_ptr as usize, size) {
            // ROCr cannot pin pages that are not there (the kernel driver's
            // registration of the range fails), so neither do we.
            return Err(SimError::arg(format!(
                "the host range {host_ptr:?} + {size} bytes is not entirely mapped"
            )));
        }
        let mask = match (agents.is_null(), num_agent) {
            (true, 0) => rt.gpu_mask(),
            (false, n) if n > 0 => {
                // SAFETY: the caller passes num_agent handles.
                let list = unsafe { std::slice::from_raw_parts(agents, n as usize) };
                agent_mask(&rt, list)?
            }
            _ => return Err(SimError::arg("agents and num_agent disagree")),
        };
        rt.memory.lock(host_ptr as u64, size as u64, mask);
        // SAFETY: checked non-null.
        unsafe { *agent_ptr = host_ptr };
        Ok(())
    })
}

/// Whether every page of `[addr, addr + size)` is mapped in this process,
/// asked of the kernel with `mincore` (which fails with ENOMEM on a hole),
/// a bounded number of pages at a time. `size > 0`, no wrap-around.
fn host_range_mapped(addr: usize, size: usize) -> bool {
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as usize,
        _ => 4096,
    };
    const CHUNK_PAGES: usize = 1 << 16;
    let first = addr & !(page - 1);
    let Some(end) = addr.checked_add(size) else {
        return false;
    };
    let mut vec = vec![0u8; CHUNK_PAGES];
    let mut at = first;
    while at < end {
        let len = (end - at).min(CHUNK_PAGES * page);
        // SAFETY: `at` is page-aligned; `vec` has room for one byte per page
        // of `len` (at most CHUNK_PAGES pages); mincore only writes `vec`.
        let rc = unsafe { libc::mincore(at as *mut libc::c_void, len, vec.as_mut_ptr()) };
        if rc != 0 {
            return false;
        }
        at += len;
    }
    true
}

/// `hsa_amd_memory_unlock`: undoes one lock (unknown pointers succeed, as ROCr).
#[no_mangle]
pub extern "C" fn hsa_amd_memory_unlock(host_ptr: *mut c_void) -> hsa_status_t {
    boundary("hsa_amd_memory_unlock", || {
        let rt = runtime()?;
        if !rt.memory.unlock(host_ptr as u64) {
            log::debug!(
                "hsa_amd_memory_unlock: {:#x} was not locked",
                host_ptr as u64
            );
        }
        Ok(())
    })
}

/// `hsa_amd_memory_fill`: stores `value` into `count` consecutive dwords.
///
/// # Safety
/// None beyond the HSA contract: the range is checked against known memory.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_memory_fill(
    ptr: *mut c_void,
    value: u32,
    count: usize,
) -> hsa_status_t {
    boundary("hsa_amd_memory_fill", || {
        let rt = runtime()?;
        non_null(ptr, "ptr")?;
        if !(ptr as u64).is_multiple_of(4) {
            return Err(SimError::arg("ptr is not 4-byte aligned"));
        }
        if count == 0 {
            return Ok(());
        }
        let bytes = (count as u64)
            .checked_mul(4)
            .ok_or_else(|| SimError::arg("count does not fit"))?;
        let keep = rt.memory.resolve(ptr as u64, bytes).ok_or_else(|| {
            SimError::InvalidAllocation(format!(
                "{bytes} bytes at {:#x} are not inside runtime memory",
                ptr as u64
            ))
        })?;
        if let Resolved::Locked(_) = keep {
            // The program's memory: it may be gone or protected by now.
            return host_copy::fill(ptr as u64, value, count)
                .map_err(|e| SimError::InvalidAllocation(format!("hsa_amd_memory_fill: {e}")));
        }
        // SAFETY: the range lies wholly inside an allocation, kept alive by `keep`,
        // and is 4-byte aligned.
        let words = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u32, count) };
        words.fill(value);
        Ok(())
    })
}

/// `hsa_amd_pointer_info`: what the runtime knows of the memory at `ptr`.
///
/// # Safety
/// `info` must point to a struct whose first field `size` holds its size;
/// `alloc` must return writable memory of the requested size.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_pointer_info(
    ptr: *const c_void,
    info: *mut hsa_amd_pointer_info_t,
    alloc: Option<unsafe extern "C" fn(usize) -> *mut c_void>,
    num_agents_accessible: *mut u32,
    accessible: *mut *mut hsa_agent_t,
) -> hsa_status_t {
    boundary("hsa_amd_pointer_info", || {
        let rt = runtime()?;
        non_null(ptr, "ptr")?;
        non_null(info, "info")?;
        // SAFETY: non-null; the first field of every version of the struct is its u32 size.
        let caller_size = unsafe { std::ptr::read_unaligned(info as *const u32) };
        if caller_size == 0 {
            return Err(SimError::arg("info->size is 0"));
        }
        let mut out = hsa_amd_pointer_info_t {
            size: 0,
            type_: HSA_EXT_POINTER_TYPE_UNKNOWN,
            agentBaseAddress: std::ptr::null_mut(),
            hostBaseAddress: std::ptr::null_mut(),
            sizeInBytes: 0,
            userData: std::ptr::null_mut(),
            agentOwner: hsa_agent_t { handle: 0 },
            global_flags: 0,
        };
        let mut access_mask = 0u64;
        match rt.memory.resolve(ptr as u64, 1) {
            Some(Resolved::Allocation(a)) => {
                out.type_ = HSA_EXT_POINTER_TYPE_HSA;
                out.agentBaseAddress = a.base as *mut c_void;
                out.hostBaseAddress = a.base as *mut c_void;
                out.sizeInBytes = a.size as usize;
                out.agentOwner = hsa_agent_t {
                    handle: agent_handle(a.owner),
                };
                if let AllocKind::Pool(p) = a.kind {
                    out.global_flags = rt.pools[p].global_flags;
                    if rt.pools[p].accessible_by_all {
                        access_mask = (1u64 << rt.agents.len().min(64)) - 1;
                    }
                }
                access_mask |= a.access_mask();
            }
            Some(Resolved::Locked(l)) => {
                out.type_ = HSA_EXT_POINTER_TYPE_LOCKED;
                out.agentBaseAddress = l.base as *mut c_void;
                out.hostBaseAddress = l.base as *mut c_void;
                out.sizeInBytes = l.size as usize;
                out.agentOwner = hsa_agent_t {
                    handle: agent_handle(0),
                };
                out.global_flags = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
                access_mask = l.agents_mask | 1;
            }
            None => {}
        }
        let n = (caller_size as usize).min(std::mem::size_of::<hsa_amd_pointer_info_t>());
        out.size = n as u32;
        // SAFETY: the caller's struct is `caller_size` bytes; we write at most that.
        unsafe { std::ptr::copy_nonoverlapping(&out as *const _ as *const u8, info as *mut u8, n) };
        if let (Some(alloc), false, false) =
            (alloc, num_agents_accessible.is_null(), accessible.is_null())
        {
            let list: Vec<hsa_agent_t> = (0..rt.agents.len().min(64))
                .filter(|i| access_mask & (1u64 << i) != 0)
                .map(|i| hsa_agent_t {
                    handle: agent_handle(i),
                })
                .collect();
            // SAFETY: the client's allocator; we write exactly the size we asked for.
            unsafe {
                let buf = alloc(list.len().max(1) * std::mem::size_of::<hsa_agent_t>())
                    as *mut hsa_agent_t;
                if buf.is_null() {
                    return Err(SimError::OutOfResources(
                        "the alloc callback returned NULL".into(),
                    ));
                }
                std::ptr::copy_nonoverlapping(list.as_ptr(), buf, list.len());
                *num_agents_accessible = list.len() as u32;
                *accessible = buf;
            }
        }
        Ok(())
    })
}

/// `hsa_memory_copy`: a synchronous copy between two runtime-visible ranges.
///
/// # Safety
/// Both ranges must be valid for `size` bytes (ranges the runtime knows are
/// checked; other host memory is trusted, as in ROCr).
#[no_mangle]
pub unsafe extern "C" fn hsa_memory_copy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> hsa_status_t {
    boundary("hsa_memory_copy", || {
        let rt = runtime()?;
        non_null(dst, "dst")?;
        non_null(src, "src")?;
        if size == 0 {
            return Ok(());
        }
        // A side that touches pool memory the client freed fails (its range
        // stays reserved, so nothing else can be there); a side that touches a
        // runtime allocation must lie inside it; any other address is the
        // program's memory, reached through the kernel's checked copy, so
        // memory that is gone or protected fails the call instead of faulting.
        for (p, what) in [(dst as u64, "destination"), (src as u64, "source")] {
            if let Some((b, e)) = rt.memory.freed_overlapping(p, size as u64) {
                return Err(SimError::InvalidAllocation(format!(
                    "copy {what} {p:#x}..+{size:#x} touches freed pool memory {b:#x}..{e:#x}"
                )));
            }
            let fits = match rt.memory.gap_around(p) {
                // Inside an allocation: wholly inside it.
                None => rt.memory.resolve(p, size as u64).is_some(),
                // Outside every allocation: up to the next one at most.
                Some((_, next)) => p.checked_add(size as u64).is_some_and(|end| end <= next),
            };
            if !fits {
                return Err(SimError::InvalidAllocation(format!(
                    "copy {what} {p:#x}..+{size:#x} runs past a runtime allocation"
                )));
            }
        }
        host_copy::copy(dst as u64, src as u64, size)
            .map_err(|e| SimError::InvalidAllocation(format!("hsa_memory_copy: {e}")))
    })
}

/// `hsa_amd_memory_async_copy`: queues a copy on the GPU agent's copy engine.
///
/// Both sides must lie wholly inside pool memory or locked host memory (DMA
/// needs pinned memory): anything else is refused with INVALID_ALLOCATION, so
/// a plugin that skips staging is caught.
///
/// # Safety
/// `dep_signals` must hold `num_dep_signals` handles.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: hsa_agent_t,
    src: *const c_void,
    src_agent: hsa_agent_t,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const hsa_signal_t,
    completion_signal: hsa_signal_t,
) -> hsa_status_t {
    boundary("hsa_amd_memory_async_copy", || {
        let rt = runtime()?;
        non_null(dst, "dst")?;
        non_null(src, "src")?;
        if (num_dep_signals == 0) != dep_signals.is_null() {
            return Err(SimError::arg("num_dep_signals and dep_signals disagree"));
        }
        // hsa_ext_amd.h: "the completion signal is 0" is INVALID_ARGUMENT
        // (INVALID_SIGNAL is for a handle that names no signal).
        if completion_signal.handle == 0 {
            return Err(SimError::arg("completion_signal is 0"));
        }
        let da = rt.agent(dst_agent.handle)?;
        let sa = rt.agent(src_agent.handle)?;
        let deps = if num_dep_signals > 0 {
            // SAFETY: the caller passes num_dep_signals handles.
            let list = unsafe { std::slice::from_raw_parts(dep_signals, num_dep_signals as usize) };
            list.iter()
                .map(|s| rt.signal(s.handle))
                .collect::<SimResult<Vec<_>>>()?
        } else {
            Vec::new()
        };
        let completion = rt.signal(completion_signal.handle)?;
        let size = size as u64;
        let check = |p: u64, what: &str| {
            rt.memory.resolve(p, size).ok_or_else(|| {
                SimError::InvalidAllocation(format!(
                    "async copy {what} {p:#x}..+{size} is neither runtime memory nor locked host memory"
                ))
            })
        };
        let dst_region = check(dst as u64, "destination")?;
        let src_region = check(src as u64, "source")?;
        // The copy runs on a GPU agent's engine: the first GPU among the two agents.
        let engine_agent = if da.kind == AgentKind::Gpu {
            da.index
        } else {
            sa.index
        };
        let engine = rt
            .copy_engines
            .get(engine_agent)
            .and_then(|e| e.as_ref())
            .or_else(|| rt.copy_engines.iter().flatten().next());
        let engine = engine.ok_or(SimError::NoCopyEngine)?;
        engine.submit(CopyJob {
            dst: dst as u64,
            src: src as u64,
            size,
            regions: vec![dst_region, src_region],
            deps,
            completion,
        });
        Ok(())
    })
}
