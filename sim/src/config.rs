//! Settings of the virtual device, read once from the environment at `hsa_init`.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `HSA_SIM_GPUS` | number of gfx90a agents | 1 |
//! | `HSA_SIM_COMPUTE_UNITS` | compute units each GPU reports | 110 (an MI250X GCD) |
//! | `HSA_SIM_DEVICE_MEMORY` | bytes of device memory per GPU (suffix K, M, G, T allowed) | 64G |
//! | `HSA_SIM_WORKERS` | host threads that run the workgroups of one dispatch | host cores |
//! | `HSA_SIM_MAX_WAVE_INSTRUCTIONS` | instructions a wave may execute before it is stopped as runaway | 10^10 |
//! | `HSA_SIM_TRACE` | `all`, or a comma-separated list of linear workgroup ids whose instructions are printed | off |
//! | `HSA_XNACK` | `1`: XNACK on (ROCr's variable): the agents report `xnack+` and kernels may reach any host memory the process maps ([`crate::host_memory`]); anything else: off | off |
//! | `HSA_SCRATCH_MEM` | scratch bytes per lane of a queue created with `private_segment_size` UINT32_MAX (ROCr's variable, read by `GpuAgent` in its `src/core/runtime/amd_gpu_agent.cpp`): the least slot each wave of its dispatches gets ([`crate::dispatch`]'s scratch layout) | 2048 (ROCr's `DEFAULT_SCRATCH_BYTES_PER_THREAD`) |
//! | `HSA_SIM_WAVES_TOGETHER` | true (`1`, `on`, `yes`, `true`): hold the waves of a workgroup with LDS together after its start and each barrier, as a GPU runs them, so device-runtime races such as LLVM 19's `pushDST` in non-SPMD dynamic schedules (`offload/test/offloading/dynamic-schedule-non-spmd.cpp`) behave as on hardware; costs about 2.5x on OpenMP STREAM | off |
//! | `HSA_SIM_FUSION` | false (`0`, `off`, `no`, `false`; read by [`knobs::parse_bool`], as the plugin reads its knobs): interpret every instruction (no run of integer VALU and scalar instructions compiled to host code) | on |
//! | `HSA_SIM_PERF_MAP` | true (as `HSA_SIM_FUSION` reads it): append each compiled run to perf's map of generated code, `/tmp/perf-<pid>.map` ([`isa::perf_map`]), so that `perf report` names the host code of the runs | off |
//!
//! `HSA_SIM_MAX_WAVE_INSTRUCTIONS`, `HSA_SIM_TRACE`, `HSA_SIM_WAVES_TOGETHER` and
//! `HSA_SIM_FUSION` configure the runtime's dispatcher
//! ([`crate::dispatch::DispatchSettings`]). Read elsewhere: `HSA_SIM_DEBUG` /
//! `LIBOMPTARGET_DEBUG` / `RUST_LOG` by [`crate::init_logging`], before any
//! configuration exists.

use crate::dispatch::{DispatchSettings, TraceFilter, DEFAULT_MAX_WAVE_INSTRUCTIONS};

/// The virtual device's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Number of gfx90a GPU agents.
    pub gpus: usize,
    /// Compute units reported by each GPU agent.
    pub compute_units: u32,
    /// Device memory of each GPU agent, in bytes (the coarse-grained pool's size).
    pub device_memory: u64,
    /// Host worker threads per dispatch.
    pub workers: usize,
    /// Whether XNACK is on: the agents report `xnack+`, load only code objects
    /// that accept it, and reach every host page the process maps.
    pub xnack: bool,
    /// Scratch bytes per lane of a queue created without a size
    /// (`HSA_SCRATCH_MEM`, as ROCr reads it).
    pub queue_scratch_per_lane: u32,
    /// Whether compiled runs go to perf's map (`HSA_SIM_PERF_MAP`, [`isa::perf_map`]).
    pub perf_map: bool,
    /// Instruction budget and trace filter of the dispatcher.
    pub dispatch: DispatchSettings,
}

/// ROCr's scratch bytes per lane of a queue created without a size
/// (`DEFAULT_SCRATCH_BYTES_PER_THREAD`, `src/core/runtime/amd_gpu_agent.cpp`).
pub const DEFAULT_QUEUE_SCRATCH_PER_LANE: u32 = 2048;

/// Parses a byte size such as `64G`, `512M`, `4096`.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, shift) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 10),
        'm' | 'M' => (&t[..t.len() - 1], 20),
        'g' | 'G' => (&t[..t.len() - 1], 30),
        't' | 'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(1u64 << shift)
}

fn env_parse<T: std::str::FromStr>(name: &str) -> Option<T> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse::<T>() {
        Ok(x) => Some(x),
        Err(_) => {
            log::warn!("ignoring {name}={v:?}: not a valid number");
            None
        }
    }
}

impl Config {
    /// Reads the configuration from the environment, falling back to defaults
    /// (with a warning) for values that do not parse.
    pub fn from_env() -> Config {
        let host_cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let device_memory = match std::env::var("HSA_SIM_DEVICE_MEMORY") {
            Ok(v) => parse_size(&v).filter(|&b| b >= 1 << 20).unwrap_or_else(|| {
                log::warn!("ignoring HSA_SIM_DEVICE_MEMORY={v:?}: expected a size of at least 1M");
                64 << 30
            }),
            Err(_) => 64 << 30,
        };
        Config {
            gpus: env_parse::<usize>("HSA_SIM_GPUS").unwrap_or(1).min(64),
            compute_units: env_parse::<u32>("HSA_SIM_COMPUTE_UNITS")
                .filter(|&n| n > 0)
                .unwrap_or(110),
            device_memory,
            workers: env_parse::<usize>("HSA_SIM_WORKERS")
                .filter(|&n| n > 0)
                .unwrap_or(host_cores),
            // ROCr enables XNACK for HSA_XNACK=1 only.
            xnack: std::env::var("HSA_XNACK").is_ok_and(|v| v.trim() == "1"),
            // ROCr takes 0 (or no number) as unset.
            queue_scratch_per_lane: env_parse::<u32>("HSA_SCRATCH_MEM")
                .filter(|&n| n > 0 && n <= 262_128)
                .unwrap_or(DEFAULT_QUEUE_SCRATCH_PER_LANE),
            perf_map: std::env::var("HSA_SIM_PERF_MAP")
                .ok()
                .and_then(|v| knobs::parse_bool(&v))
                .unwrap_or(false),
            dispatch: DispatchSettings {
                max_wave_instructions: env_parse::<u64>("HSA_SIM_MAX_WAVE_INSTRUCTIONS")
                    .filter(|&n| n > 0)
                    .unwrap_or(DEFAULT_MAX_WAVE_INSTRUCTIONS),
                trace: std::env::var("HSA_SIM_TRACE")
                    .map(|v| TraceFilter::parse(&v))
                    .unwrap_or_default(),
                fusion: std::env::var("HSA_SIM_FUSION")
                    .ok()
                    .and_then(|v| knobs::parse_bool(&v))
                    .unwrap_or(true),
                waves_together: std::env::var("HSA_SIM_WAVES_TOGETHER")
                    .ok()
                    .and_then(|v| knobs::parse_bool(&v))
                    .unwrap_or(false),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;
    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64G"), Some(64 * 1024 * 1024 * 1024));
        assert_eq!(parse_size("3m"), Some(3 * 1024 * 1024));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("99999999999T"), None);
    }
}
