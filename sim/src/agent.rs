//! Agents of the virtual platform: one CPU agent and N gfx90a kernel agents,
//! and the answers to `hsa_agent_get_info` / `hsa_isa_get_info_alt`
//! (`hsa_agent_info_t`, `hsa_isa_info_t` in `hsa/hsa.h`; `hsa_amd_agent_info_t`
//! in `hsa/hsa_ext_amd.h`).

use crate::error::{SimError, SimResult};
use hsa_sys::*;

/// Handle tag of agents (see [`crate::handles`] for the handle layout).
pub const AGENT_TAG: u8 = 0x41;
/// Handle tag of ISAs.
pub const ISA_TAG: u8 = 0x49;

/// The full ISA name of the virtual gfx90a (an MI250X GCD: SRAM ECC on, XNACK off).
pub const GFX90A_ISA_NAME: &str = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";
/// The full ISA name with XNACK on (`HSA_XNACK=1`), as ROCr reports it.
pub const GFX90A_XNACK_ISA_NAME: &str = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+";

/// The ISA name the gfx90a agents report ([`GFX90A_ISA_NAME`] or, XNACK on,
/// [`GFX90A_XNACK_ISA_NAME`]).
pub fn gfx90a_isa_name(xnack: bool) -> &'static str {
    if xnack {
        GFX90A_XNACK_ISA_NAME
    } else {
        GFX90A_ISA_NAME
    }
}

/// The target ID of the gfx90a agents, which decides which code objects they load
/// (the rules of LLVM's `AMDGPUUsage.rst`, "Target ID": `xnack+` code only with
/// XNACK on, `xnack-` only with it off, neither setting on both).
pub fn gfx90a_target(xnack: bool) -> crate::loader::TargetId {
    let mut t = crate::loader::TargetId::gfx90a_default();
    if xnack {
        t.xnack = crate::loader::FeatureSetting::On;
    }
    t
}

/// `HSA_AMD_SYSTEM_INFO_XNACK_ENABLED` of later ROCm releases (not in ROCm 5.2's
/// `hsa_ext_amd.h`; a `bool`): whether XNACK is on for the whole system.
pub const AMD_SYSTEM_INFO_XNACK_ENABLED: u32 = 0x206;

/// `HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY` of later ROCm releases (not in ROCm 5.2's header).
pub const AMD_AGENT_INFO_TIMESTAMP_FREQUENCY: u32 = 0xA016;

/// What an agent is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKind {
    /// The host CPU agent.
    Cpu,
    /// A gfx90a kernel agent.
    Gpu,
}

/// One agent of the platform.
#[derive(Debug)]
pub struct Agent {
    /// Index in the runtime's agent list (0 is the CPU agent).
    pub index: usize,
    /// CPU or GPU.
    pub kind: AgentKind,
    /// Indices of this agent's memory pools in the runtime's pool list, in the
    /// order `hsa_amd_agent_iterate_memory_pools` reports them.
    pub pools: Vec<usize>,
    /// Compute units (GPU) or host cores (CPU).
    pub compute_units: u32,
    /// Bytes of device memory (GPU) or of host memory (CPU).
    pub memory_size: u64,
    /// Position among the GPU agents (0 for the first GPU), `None` for the CPU.
    pub gpu_ordinal: Option<usize>,
}

/// A typed answer to an info query; the C layer writes exactly the declared
/// type of the attribute into the caller's buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum InfoValue {
    /// `bool` (one byte).
    Bool(bool),
    /// `uint16_t`.
    U16(u16),
    /// `uint32_t` (also every enum).
    U32(u32),
    /// `uint64_t` / `size_t`.
    U64(u64),
    /// `uint16_t[3]`.
    U16x3([u16; 3]),
    /// `uint32_t[4]`.
    U32x4([u32; 4]),
    /// `hsa_dim3_t`.
    Dim3([u32; 3]),
    /// A fixed `char[N]` buffer, NUL padded.
    Chars(Vec<u8>),
    /// `bool[N]` (one byte each).
    Bools(Vec<bool>),
    /// A 128-byte extension bit mask.
    Mask128([u8; 128]),
    /// A pointer-sized value (for example `const char*`).
    Pointer(usize),
}

/// A `char[64]` value holding `s`, NUL padded.
pub fn chars64(s: &str) -> InfoValue {
    let mut b = vec![0u8; 64];
    let n = s.len().min(63);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    InfoValue::Chars(b)
}

/// Agent handle of agent `index`.
pub fn agent_handle(index: usize) -> u64 {
    (u64::from(AGENT_TAG) << 56) | (index as u64 + 1)
}

/// Agent index of `handle`, if it has the agent tag (the caller still checks the range).
pub fn agent_index(handle: u64) -> Option<usize> {
    if (handle >> 56) as u8 != AGENT_TAG
        || handle & 0xffff_ffff == 0
        || (handle >> 32) & 0xff_ffff != 0
    {
        return None;
    }
    Some((handle & 0xffff_ffff) as usize - 1)
}

/// The handle of the gfx90a ISA.
pub fn isa_handle() -> u64 {
    (u64::from(ISA_TAG) << 56) | 1
}

fn cpu_brand() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "Virtual host CPU".to_string())
}

fn extensions_mask() -> [u8; 128] {
    // Bit i stands for extension id i; ROCr 5.2 sets AMD_PROFILER (0x200).
    let mut m = [0u8; 128];
    let id = HSA_EXTENSION_AMD_PROFILER as usize;
    m[id / 8] |= 1 << (id % 8);
    m
}

impl Agent {
    /// The answer to `hsa_agent_get_info(attribute)` (and the AMD attributes).
    ///
    /// Errors: `InvalidArgument` for an attribute this agent does not know.
    pub fn info(&self, attribute: u32, isa: u64) -> SimResult<InfoValue> {
        let gpu = self.kind == AgentKind::Gpu;
        let g = |v: u32| InfoValue::U32(if gpu { v } else { 0 });
        Ok(match attribute {
            HSA_AGENT_INFO_NAME => {
                if gpu {
                    chars64("gfx90a")
                } else {
                    chars64(&cpu_brand())
                }
            }
            HSA_AGENT_INFO_VENDOR_NAME => chars64(if gpu { "AMD" } else { "CPU" }),
            HSA_AGENT_INFO_FEATURE => g(HSA_AGENT_FEATURE_KERNEL_DISPATCH),
            HSA_AGENT_INFO_MACHINE_MODEL => InfoValue::U32(HSA_MACHINE_MODEL_LARGE),
            HSA_AGENT_INFO_PROFILE => InfoValue::U32(if gpu {
                HSA_PROFILE_BASE
            } else {
                HSA_PROFILE_FULL
            }),
            HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE => {
                InfoValue::U32(HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)
            }
            HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => {
                InfoValue::U32(HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)
            }
            HSA_AGENT_INFO_FAST_F16_OPERATION => InfoValue::Bool(gpu),
            HSA_AGENT_INFO_WAVEFRONT_SIZE => g(64),
            HSA_AGENT_INFO_WORKGROUP_MAX_DIM => {
                InfoValue::U16x3(if gpu { [1024; 3] } else { [0; 3] })
            }
            HSA_AGENT_INFO_WORKGROUP_MAX_SIZE => g(1024),
            HSA_AGENT_INFO_GRID_MAX_DIM => {
                InfoValue::Dim3(if gpu { [u32::MAX; 3] } else { [0; 3] })
            }
            HSA_AGENT_INFO_GRID_MAX_SIZE => g(u32::MAX),
            HSA_AGENT_INFO_FBARRIER_MAX_SIZE => g(32),
            HSA_AGENT_INFO_QUEUES_MAX => g(128),
            HSA_AGENT_INFO_QUEUE_MIN_SIZE => g(64),
            HSA_AGENT_INFO_QUEUE_MAX_SIZE => g(131072),
            HSA_AGENT_INFO_QUEUE_TYPE => InfoValue::U32(HSA_QUEUE_TYPE_MULTI),
            HSA_AGENT_INFO_NODE => InfoValue::U32(self.index as u32),
            HSA_AGENT_INFO_DEVICE => InfoValue::U32(if gpu {
                HSA_DEVICE_TYPE_GPU
            } else {
                HSA_DEVICE_TYPE_CPU
            }),
            HSA_AGENT_INFO_CACHE_SIZE => InfoValue::U32x4(if gpu {
                [16 * 1024, 8 * 1024 * 1024, 0, 0]
            } else {
                [32 * 1024, 1 << 20, 32 << 20, 0]
            }),
            HSA_AGENT_INFO_ISA => InfoValue::U64(if gpu { isa } else { 0 }),
            HSA_AGENT_INFO_EXTENSIONS => InfoValue::Mask128(extensions_mask()),
            HSA_AGENT_INFO_VERSION_MAJOR => InfoValue::U16(1),
            HSA_AGENT_INFO_VERSION_MINOR => InfoValue::U16(1),
            HSA_AMD_AGENT_INFO_CHIP_ID => g(0x7408),
            HSA_AMD_AGENT_INFO_CACHELINE_SIZE => InfoValue::U32(64),
            HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT => InfoValue::U32(self.compute_units),
            HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY => InfoValue::U32(if gpu { 1700 } else { 0 }),
            HSA_AMD_AGENT_INFO_DRIVER_NODE_ID => InfoValue::U32(self.index as u32),
            HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS => g(4),
            HSA_AMD_AGENT_INFO_BDFID => g(0x0300 + self.gpu_ordinal.unwrap_or(0) as u32 * 0x100),
            HSA_AMD_AGENT_INFO_MEMORY_WIDTH => g(4096),
            HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY => g(1600),
            HSA_AMD_AGENT_INFO_PRODUCT_NAME => {
                if gpu {
                    chars64("AMD Instinct MI250X (virtual gfx90a)")
                } else {
                    chars64(&cpu_brand())
                }
            }
            HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU => g(32),
            HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU => g(4),
            HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES => g(8),
            HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE => g(1),
            HSA_AMD_AGENT_INFO_DOMAIN => InfoValue::U32(0),
            HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES => InfoValue::Bool(false),
            HSA_AMD_AGENT_INFO_UUID => {
                if gpu {
                    chars64(&format!(
                        "GPU-{:016x}",
                        0x5649_5254_0000_0000u64 | self.index as u64
                    ))
                } else {
                    chars64("CPU-XX")
                }
            }
            HSA_AMD_AGENT_INFO_ASIC_REVISION => g(1),
            HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS => InfoValue::Bool(!gpu),
            HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT => InfoValue::U32(self.compute_units),
            AMD_AGENT_INFO_TIMESTAMP_FREQUENCY if gpu => InfoValue::U64(100_000_000),
            other => {
                return Err(SimError::arg(format!("unknown agent attribute {other:#x}")));
            }
        })
    }
}

/// The answer to `hsa_isa_get_info_alt(attribute)` for the gfx90a ISA (its name
/// says `xnack+` when `xnack`).
///
/// Errors: `InvalidArgument` for an unknown attribute.
pub fn isa_info(attribute: u32, xnack: bool) -> SimResult<InfoValue> {
    let name = gfx90a_isa_name(xnack);
    Ok(match attribute {
        HSA_ISA_INFO_NAME_LENGTH => InfoValue::U32(name.len() as u32 + 1),
        HSA_ISA_INFO_NAME => {
            let mut b = name.as_bytes().to_vec();
            b.push(0);
            InfoValue::Chars(b)
        }
        HSA_ISA_INFO_CALL_CONVENTION_COUNT => InfoValue::U32(1),
        HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE => InfoValue::U32(64),
        HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT => InfoValue::U32(40),
        HSA_ISA_INFO_MACHINE_MODELS => InfoValue::Bools(vec![false, true]),
        HSA_ISA_INFO_PROFILES => InfoValue::Bools(vec![true, false]),
        HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES => InfoValue::Bools(vec![false, false, true]),
        HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => {
            InfoValue::Bools(vec![false, false, true])
        }
        HSA_ISA_INFO_FAST_F16_OPERATION => InfoValue::Bool(true),
        HSA_ISA_INFO_WORKGROUP_MAX_DIM => InfoValue::U16x3([1024; 3]),
        HSA_ISA_INFO_WORKGROUP_MAX_SIZE => InfoValue::U32(1024),
        HSA_ISA_INFO_GRID_MAX_DIM => InfoValue::Dim3([u32::MAX; 3]),
        HSA_ISA_INFO_GRID_MAX_SIZE => InfoValue::U32(u32::MAX),
        HSA_ISA_INFO_FBARRIER_MAX_SIZE => InfoValue::U32(32),
        other => return Err(SimError::arg(format!("unknown ISA attribute {other:#x}"))),
    })
}
