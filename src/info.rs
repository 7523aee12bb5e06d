//! The text `print_device_info` prints: the GPU agent's HSA properties, its
//! memory pools and ISAs. Only HSA queries on the agent are used, so it
//! works on devices that were never initialised (`llvm-omp-device-info`).
//! An attribute the runtime does not answer is printed as `n/a`.

use crate::error::Result;
use crate::memory::MemoryPool;
use crate::plugin::Runtime;
use hsa::{Hsa, HsaResult, InfoValue};
use hsa_sys::*;
use std::fmt::Write;

fn show<T>(r: HsaResult<T>, f: impl FnOnce(T) -> String) -> String {
    r.map(f).unwrap_or_else(|_| "n/a".to_string())
}

fn num<T: InfoValue + std::fmt::Display>(hsa: &Hsa, agent: hsa_agent_t, attr: u32) -> String {
    show(hsa.agent_info::<T>(agent, attr), |v| v.to_string())
}

/// Describes device `id`'s agent, one property per line, indented by four
/// spaces (the layout of the older AMDGPU plugin's listing).
///
/// Errors: no such device.
pub fn describe_agent(rt: &Runtime, id: i32) -> Result<String> {
    let hsa = &rt.hsa;
    let agent = rt.agent(id)?;
    let target_id = usize::try_from(id).ok().and_then(|i| rt.target_ids.get(i));
    let mut s = String::new();
    describe_properties(&mut s, hsa, agent, id, target_id);
    describe_pools(&mut s, hsa, agent);
    describe_isas(&mut s, hsa, agent);
    Ok(s)
}

/// Appends the agent's scalar properties (runtime version, names, queue,
/// cache, compute-unit, workgroup and grid limits), one per line.
fn describe_properties(
    s: &mut String,
    hsa: &Hsa,
    agent: hsa_agent_t,
    id: i32,
    target_id: Option<&String>,
) {
    let major = hsa.system_info_u16(HSA_SYSTEM_INFO_VERSION_MAJOR);
    let minor = hsa.system_info_u16(HSA_SYSTEM_INFO_VERSION_MINOR);
    let version = match (major, minor) {
        (Ok(a), Ok(b)) => format!("{a}.{b}"),
        _ => "n/a".into(),
    };
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "    {k:<34}{v}");
    };
    line("HSA runtime version:", version);
    line("Plugin device number:", id.to_string());
    line(
        "Product name:",
        show(
            hsa.agent_info_string(agent, HSA_AMD_AGENT_INFO_PRODUCT_NAME),
            |v| v,
        ),
    );
    line(
        "Device name:",
        show(hsa.agent_info_string(agent, HSA_AGENT_INFO_NAME), |v| v),
    );
    line(
        "Vendor name:",
        show(
            hsa.agent_info_string(agent, HSA_AGENT_INFO_VENDOR_NAME),
            |v| v,
        ),
    );
    line(
        "Device type:",
        show(hsa.agent_info::<u32>(agent, HSA_AGENT_INFO_DEVICE), |t| {
            match t {
                HSA_DEVICE_TYPE_GPU => "GPU",
                HSA_DEVICE_TYPE_CPU => "CPU",
                _ => "other",
            }
            .to_string()
        }),
    );
    if let Some(t) = target_id {
        line("Target ID:", t.clone());
    }
    line(
        "Max queues:",
        num::<u32>(hsa, agent, HSA_AGENT_INFO_QUEUES_MAX),
    );
    line(
        "Queue min size:",
        num::<u32>(hsa, agent, HSA_AGENT_INFO_QUEUE_MIN_SIZE),
    );
    line(
        "Queue max size:",
        num::<u32>(hsa, agent, HSA_AGENT_INFO_QUEUE_MAX_SIZE),
    );
    line(
        "Cache sizes (L1..L4, bytes):",
        show(
            hsa.agent_info::<[u32; 4]>(agent, HSA_AGENT_INFO_CACHE_SIZE),
            |c| format!("{} {} {} {}", c[0], c[1], c[2], c[3]),
        ),
    );
    line(
        "Cacheline size (bytes):",
        num::<u32>(hsa, agent, HSA_AMD_AGENT_INFO_CACHELINE_SIZE),
    );
    line(
        "Max clock frequency (MHz):",
        num::<u32>(hsa, agent, HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY),
    );
    line(
        "Compute units:",
        num::<u32>(hsa, agent, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT),
    );
    line(
        "SIMDs per compute unit:",
        num::<u32>(hsa, agent, HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU),
    );
    line(
        "Fast F16 operations:",
        show(
            hsa.agent_info_bool(agent, HSA_AGENT_INFO_FAST_F16_OPERATION),
            |b| if b { "yes" } else { "no" }.to_string(),
        ),
    );
    line(
        "Wavefront size:",
        num::<u32>(hsa, agent, HSA_AGENT_INFO_WAVEFRONT_SIZE),
    );
    line(
        "Workgroup max size:",
        num::<u32>(hsa, agent, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE),
    );
    line(
        "Workgroup max size (x, y, z):",
        show(
            hsa.agent_info::<[u16; 3]>(agent, HSA_AGENT_INFO_WORKGROUP_MAX_DIM),
            |d| format!("{} {} {}", d[0], d[1], d[2]),
        ),
    );
    line(
        "Max waves per compute unit:",
        num::<u32>(hsa, agent, HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU),
    );
    line(
        "Grid max size:",
        num::<u32>(hsa, agent, HSA_AGENT_INFO_GRID_MAX_SIZE),
    );
    line(
        "Grid max size (x, y, z):",
        show(
            hsa.agent_info::<[u32; 3]>(agent, HSA_AGENT_INFO_GRID_MAX_DIM),
            |[x, y, z]| format!("{x} {y} {z}"),
        ),
    );
    line(
        "Max fbarriers per workgroup:",
        num::<u32>(hsa, agent, HSA_AGENT_INFO_FBARRIER_MAX_SIZE),
    );
}

/// Appends the agent's memory pools: segment, flags, size, allocatable.
fn describe_pools(s: &mut String, hsa: &Hsa, agent: hsa_agent_t) {
    let _ = writeln!(s, "    Memory pools:");
    match MemoryPool::all_of(hsa, agent) {
        Ok(pools) => {
            for p in pools {
                let segment = match p.segment {
                    HSA_AMD_SEGMENT_GLOBAL => "global",
                    HSA_AMD_SEGMENT_READONLY => "read-only",
                    HSA_AMD_SEGMENT_PRIVATE => "private",
                    HSA_AMD_SEGMENT_GROUP => "group",
                    _ => "other",
                };
                let mut flags = Vec::new();
                if p.global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT != 0 {
                    flags.push("kernarg");
                }
                if p.global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED != 0 {
                    flags.push("fine-grained");
                }
                if p.global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED != 0 {
                    flags.push("coarse-grained");
                }
                let flags: String = flags.iter().map(|f| format!(" {f}")).collect();
                let _ = writeln!(
                    s,
                    "      {segment}{flags}: {} bytes, allocatable: {}",
                    p.size,
                    if p.alloc_allowed { "yes" } else { "no" }
                );
            }
        }
        Err(e) => {
            let _ = writeln!(s, "      n/a ({e})");
        }
    }
}

/// Appends the names of the agent's ISAs.
fn describe_isas(s: &mut String, hsa: &Hsa, agent: hsa_agent_t) {
    let _ = writeln!(s, "    ISAs:");
    match hsa.agent_isas(agent) {
        Ok(isas) => {
            for isa in isas {
                let _ = writeln!(s, "      {}", show(hsa.isa_name(isa), |n| n));
            }
        }
        Err(e) => {
            let _ = writeln!(s, "      n/a ({e})");
        }
    }
}
