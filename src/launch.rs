//! Launch geometry: how many teams (workgroups) and threads (work-items per
//! workgroup) a kernel launch gets.
//!
//! The algorithm is the one of LLVM 16.0.6's nextgen plugins
//! (`GenericKernelTy::getNumThreads` / `getNumBlocks` in
//! `plugins-nextgen/common/PluginInterface/PluginInterface.cpp`, with the grid
//! values the AMDGPU part sets in `AMDGPUDeviceTy::initImpl` of
//! `plugins-nextgen/amdgpu/src/rtl.cpp`):
//!
//! 1. `TL = thread_limit[0]`; if `TL > 0` and the kernel is in GENERIC mode
//!    (1 only), `TL += warp size` (the generic-mode main warp).
//! 2. `threads = min(max_threads, TL > 0 ? TL : default_threads)`.
//! 3. `NT = num_teams[0]`; if `NT > 0`: `teams = min(NT, max_teams)`.
//! 4. else `T = u64::MAX`; if trip count `TC > 0`: SPMD → `T = (TC - 1) /
//!    threads + 1`, GENERIC / GENERIC_SPMD → `T = TC`; then
//!    `teams = min(min(T as u32, default_teams), max_teams)`.
//!
//! Where we deliberately differ from 16.0.6 (each one only changes cases that
//! LLVM gets wrong or ignores):
//!
//! - **Kernel limit**: when the kernel's metadata gives a
//!   `.max_flat_workgroup_size` ([`LaunchRequest::kernel_max_threads`] > 0),
//!   `max_threads` is additionally capped by it (launching more work-items
//!   than the code was compiled for is undefined on AMDGPU).
//! - **No zero-team launches**: in step 4 the trip-count block count
//!   saturates at `u32::MAX` instead of being truncated (LLVM: `TC = 2^32` in
//!   generic mode gives 0 teams), and the final team count is at least 1
//!   (LLVM gives 0 when `LIBOMPTARGET_AMDGPU_TEAMS_PER_CU=0`).
//! - **`OMP_TEAMS_THREAD_LIMIT=L`** (`L > 0`; LLVM 16's AMDGPU plugin ignores
//!   it: `AMDGPUDeviceTy::initImpl` never reads it): applies only when the
//!   launch has no `thread_limit`
//!   clause (`TL == 0`): `threads = min(threads of step 2, L + (GENERIC ?
//!   warp size : 0))`, i.e. at most `L` OpenMP threads per team, plus the
//!   main warp in generic mode exactly as a clause would get. It never
//!   raises the thread count and a clause always wins.
//! - **`OMP_NUM_TEAMS=N`** (`N > 0`; ignored by LLVM 16's AMDGPU plugin):
//!   applies only when the launch has no `num_teams` clause (`NT == 0`):
//!   `teams = min(teams of step 4, N)`. A clause always wins (OpenMP 5.1: the
//!   clause overrides `nteams-var`).
//! - **`OMP_MAX_TEAMS_DEFAULT=D`** (`D > 0`, the name LLVM's *legacy* AMDGPU
//!   plugin uses for the same idea): replaces the default team count
//!   `CUs × LIBOMPTARGET_AMDGPU_TEAMS_PER_CU` of step 4.
//!
//! Thread counts from the clamps are applied before the team count is
//! computed, so the SPMD trip-count division uses the final thread count.

use crate::abi::{
    OMP_TGT_EXEC_MODE_GENERIC, OMP_TGT_EXEC_MODE_GENERIC_SPMD, OMP_TGT_EXEC_MODE_SPMD,
};

/// Execution mode of an OpenMP kernel, from its `<kernel>_exec_mode` global
/// (`OMPTgtExecModeFlags` of LLVM 16's
/// `llvm/include/llvm/Frontend/OpenMP/OMPDeviceConstants.h`, read by
/// `GenericDeviceTy::getExecutionModeForKernel` in `PluginInterface.cpp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecMode {
    /// `OMP_TGT_EXEC_MODE_GENERIC` (1): one main thread runs the team's
    /// sequential part; workers wait for parallel regions.
    Generic,
    /// `OMP_TGT_EXEC_MODE_SPMD` (2): every thread runs the region.
    Spmd,
    /// `OMP_TGT_EXEC_MODE_GENERIC_SPMD` (3): generic code SPMD-ized by the
    /// compiler.
    GenericSpmd,
}

impl ExecMode {
    /// Decodes an `OMP_TGT_EXEC_MODE_*` byte; `None` for anything but 1, 2, 3.
    pub fn from_raw(v: u8) -> Option<ExecMode> {
        match v {
            OMP_TGT_EXEC_MODE_GENERIC => Some(ExecMode::Generic),
            OMP_TGT_EXEC_MODE_SPMD => Some(ExecMode::Spmd),
            OMP_TGT_EXEC_MODE_GENERIC_SPMD => Some(ExecMode::GenericSpmd),
            _ => None,
        }
    }

    /// The `OMP_TGT_EXEC_MODE_*` value.
    pub fn raw(self) -> u8 {
        match self {
            ExecMode::Generic => OMP_TGT_EXEC_MODE_GENERIC,
            ExecMode::Spmd => OMP_TGT_EXEC_MODE_SPMD,
            ExecMode::GenericSpmd => OMP_TGT_EXEC_MODE_GENERIC_SPMD,
        }
    }

    /// The name LLVM prints in its launch INFO line
    /// (`GenericKernelTy::printLaunchInfo` in LLVM 16's `PluginInterface.cpp`):
    /// `Generic`, `SPMD` or `Generic-SPMD`.
    pub fn name(self) -> &'static str {
        match self {
            ExecMode::Generic => "Generic",
            ExecMode::Spmd => "SPMD",
            ExecMode::GenericSpmd => "Generic-SPMD",
        }
    }
}

/// Environment knobs that affect launch geometry, read once per device
/// (`AMDGPUDeviceTy::initImpl` in `plugins-nextgen/amdgpu/src/rtl.cpp` and the
/// `GenericDeviceTy` constructor in `PluginInterface.cpp`). `None` = variable unset or invalid.
///
/// Parsing follows LLVM's `Envar` (C++ stream extraction): leading
/// whitespace skipped, a decimal number prefix taken, trailing text ignored;
/// no number, overflow, or a negative value for an unsigned knob → `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchEnv {
    /// `LIBOMPTARGET_AMDGPU_TEAMS_PER_CU` (LLVM default 4): default teams =
    /// CUs × this.
    pub teams_per_cu: Option<u32>,
    /// `OMP_NUM_TEAMS`: cap on the team count of launches without a
    /// `num_teams` clause (our addition; values ≤ 0 ignored).
    pub omp_num_teams: Option<u32>,
    /// `OMP_TEAMS_THREAD_LIMIT`: cap on OpenMP threads per team of launches
    /// without a `thread_limit` clause (our addition; values ≤ 0 ignored).
    pub omp_teams_thread_limit: Option<u32>,
    /// `OMP_MAX_TEAMS_DEFAULT`: replaces the device's default team count
    /// (our addition, legacy-plugin name; values ≤ 0 ignored).
    pub default_num_teams: Option<u32>,
}

/// `LIBOMPTARGET_AMDGPU_TEAMS_PER_CU` (read in LLVM 16's
/// `plugins-nextgen/amdgpu/src/rtl.cpp`).
pub const ENV_TEAMS_PER_CU: &str = "LIBOMPTARGET_AMDGPU_TEAMS_PER_CU";
/// `OMP_NUM_TEAMS` (read by the `GenericDeviceTy` constructor in LLVM 16's
/// `plugins-nextgen/common/PluginInterface/PluginInterface.cpp`).
pub const ENV_OMP_NUM_TEAMS: &str = "OMP_NUM_TEAMS";
/// `OMP_TEAMS_THREAD_LIMIT` (read by the `GenericDeviceTy` constructor in
/// `PluginInterface.cpp`).
pub const ENV_OMP_TEAMS_THREAD_LIMIT: &str = "OMP_TEAMS_THREAD_LIMIT";
/// `OMP_MAX_TEAMS_DEFAULT` (the legacy AMDGPU plugin's name, read in LLVM 16's
/// `openmp/libomptarget/plugins/amdgpu/src/rtl.cpp`).
pub const ENV_OMP_MAX_TEAMS_DEFAULT: &str = "OMP_MAX_TEAMS_DEFAULT";

/// Default of `LIBOMPTARGET_AMDGPU_TEAMS_PER_CU` in LLVM 16.
pub const DEFAULT_TEAMS_PER_CU: u32 = 4;

/// A signed 32-bit knob (LLVM `Int32Envar`) that only matters when `> 0`.
fn parse_positive_i32(text: &str) -> Option<u32> {
    crate::env::parse_i32(text)
        .filter(|&v| v > 0)
        .map(|v| v as u32)
}

impl LaunchEnv {
    /// Reads the knobs from the process environment.
    pub fn from_env() -> LaunchEnv {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the knobs through `f` (variable name → value), e.g. a test map.
    pub fn from_lookup(f: impl Fn(&str) -> Option<String>) -> LaunchEnv {
        LaunchEnv {
            teams_per_cu: f(ENV_TEAMS_PER_CU)
                .as_deref()
                .and_then(crate::env::parse_u32),
            omp_num_teams: f(ENV_OMP_NUM_TEAMS).as_deref().and_then(parse_positive_i32),
            omp_teams_thread_limit: f(ENV_OMP_TEAMS_THREAD_LIMIT)
                .as_deref()
                .and_then(parse_positive_i32),
            default_num_teams: f(ENV_OMP_MAX_TEAMS_DEFAULT)
                .as_deref()
                .and_then(parse_positive_i32),
        }
    }
}

/// The device's grid values (LLVM `llvm::omp::GV` as the AMDGPU plugin sets
/// them at `init_device`: `AMDGPUDeviceTy::initImpl`, with the defaults of
/// `llvm/include/llvm/Frontend/OpenMP/OMPGridValues.h`), plus our environment clamps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridValues {
    /// Wavefront size in work-items (`GV_Warp_Size`; 64 on gfx90a).
    pub warp_size: u32,
    /// Largest workgroup in work-items (`GV_Max_WG_Size`; from
    /// `HSA_AGENT_INFO_WORKGROUP_MAX_DIM[0]`, 1024 on gfx90a).
    pub max_threads: u32,
    /// Largest team count (`GV_Max_Teams`; `GRID_MAX_DIM.x / max_threads`).
    pub max_teams: u32,
    /// Teams when nothing else decides (`GV_Default_Num_Teams`; CUs ×
    /// teams per CU, or `OMP_MAX_TEAMS_DEFAULT`).
    pub default_teams: u32,
    /// Threads when no clause decides (`GV_Default_WG_Size`, 256).
    pub default_threads: u32,
    /// `OMP_NUM_TEAMS` clamp (see module docs), `None` = none.
    pub env_num_teams: Option<u32>,
    /// `OMP_TEAMS_THREAD_LIMIT` clamp (see module docs), `None` = none.
    pub env_thread_limit: Option<u32>,
}

/// `GV_Default_WG_Size` of LLVM 16's AMDGPU grid values (both wave sizes).
pub const AMDGPU_DEFAULT_THREADS: u32 = 256;

impl GridValues {
    /// Grid values of a gfx90a-like agent with `compute_units` CUs: wave 64,
    /// `WORKGROUP_MAX_DIM.x` = 1024, `GRID_MAX_DIM.x` = `u32::MAX` (what ROCm
    /// and the virtual device report). Same as [`GridValues::from_agent`]
    /// with those values.
    pub fn amdgpu(compute_units: u32, env: &LaunchEnv) -> GridValues {
        let max_threads = 1024;
        GridValues {
            warp_size: 64,
            max_threads,
            max_teams: u32::MAX / max_threads,
            default_teams: Self::default_teams(compute_units, env),
            default_threads: AMDGPU_DEFAULT_THREADS,
            env_num_teams: env.omp_num_teams,
            env_thread_limit: env.omp_teams_thread_limit,
        }
    }

    /// Grid values from the agent's HSA attributes (as
    /// `AMDGPUDeviceTy::initImpl` in LLVM 16's `plugins-nextgen/amdgpu/src/rtl.cpp`):
    /// `HSA_AGENT_INFO_WAVEFRONT_SIZE`, `HSA_AGENT_INFO_WORKGROUP_MAX_DIM[0]`,
    /// `HSA_AGENT_INFO_GRID_MAX_DIM.x`, `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`.
    ///
    /// `None` where LLVM fails `init_device`: wavefront size not 32 or 64, or a
    /// max team count of 0 (also when `workgroup_max_dim_x` is 0).
    pub fn from_agent(
        wavefront_size: u32,
        workgroup_max_dim_x: u16,
        grid_max_dim_x: u32,
        compute_units: u32,
        env: &LaunchEnv,
    ) -> Option<GridValues> {
        if wavefront_size != 32 && wavefront_size != 64 {
            return None;
        }
        let max_threads = u32::from(workgroup_max_dim_x);
        let max_teams = grid_max_dim_x.checked_div(max_threads)?;
        if max_teams == 0 {
            return None;
        }
        Some(GridValues {
            warp_size: wavefront_size,
            max_threads,
            max_teams,
            default_teams: Self::default_teams(compute_units, env),
            default_threads: AMDGPU_DEFAULT_THREADS,
            env_num_teams: env.omp_num_teams,
            env_thread_limit: env.omp_teams_thread_limit,
        })
    }

    /// `CUs × teams_per_cu` (u32 wrapping product, as LLVM computes it) or
    /// the `OMP_MAX_TEAMS_DEFAULT` override.
    fn default_teams(compute_units: u32, env: &LaunchEnv) -> u32 {
        env.default_num_teams.unwrap_or_else(|| {
            compute_units.wrapping_mul(env.teams_per_cu.unwrap_or(DEFAULT_TEAMS_PER_CU))
        })
    }
}

/// What a launch asks for (from `KernelArgsTy` of LLVM 16's `omptarget.h`, and
/// the kernel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchRequest {
    /// `num_teams` clause; only `[0]` is used; 0 = unspecified.
    pub num_teams: [u32; 3],
    /// `thread_limit` clause; only `[0]` is used; 0 = unspecified.
    pub thread_limit: [u32; 3],
    /// Distribute-loop trip count, 0 = unknown.
    pub loop_tripcount: u64,
    /// The kernel's execution mode.
    pub mode: ExecMode,
    /// The kernel's `.max_flat_workgroup_size` from its metadata, 0 if unknown.
    pub kernel_max_threads: u32,
}

/// The computed launch: `num_teams` workgroups of `num_threads` work-items
/// (grid size = `num_teams × num_threads` work-items in dimension x).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchGeometry {
    /// Teams (workgroups), ≥ 1.
    pub num_teams: u32,
    /// Threads (work-items) per team, ≥ 1.
    pub num_threads: u32,
}

/// Computes teams and threads for `req` on a device with `grid` (algorithm
/// and deviations in the module docs).
pub fn compute_launch(req: &LaunchRequest, grid: &GridValues) -> LaunchGeometry {
    let generic = req.mode == ExecMode::Generic;

    // getNumThreads, with the kernel's own limit folded into MaxNumThreads.
    let mut max_threads = grid.max_threads;
    if req.kernel_max_threads > 0 {
        max_threads = max_threads.min(req.kernel_max_threads);
    }
    let mut thread_limit = req.thread_limit[0];
    if thread_limit > 0 && generic {
        // uint32_t arithmetic in LLVM.
        thread_limit = thread_limit.wrapping_add(grid.warp_size);
    }
    let mut threads = max_threads.min(if thread_limit > 0 {
        thread_limit
    } else {
        grid.default_threads
    });
    if req.thread_limit[0] == 0 {
        if let Some(limit) = grid.env_thread_limit {
            let extra = if generic { grid.warp_size } else { 0 };
            threads = threads.min(limit.saturating_add(extra));
        }
    }
    let threads = threads.max(1);

    // getNumBlocks.
    let teams = if req.num_teams[0] > 0 {
        req.num_teams[0].min(grid.max_teams)
    } else {
        let mut from_trip_count = u64::MAX;
        if req.loop_tripcount > 0 {
            from_trip_count = match req.mode {
                ExecMode::Spmd => (req.loop_tripcount - 1) / u64::from(threads) + 1,
                ExecMode::Generic | ExecMode::GenericSpmd => req.loop_tripcount,
            };
        }
        let from_trip_count = u32::try_from(from_trip_count).unwrap_or(u32::MAX);
        let mut teams = from_trip_count.min(grid.default_teams).min(grid.max_teams);
        if let Some(limit) = grid.env_num_teams {
            teams = teams.min(limit);
        }
        teams
    };

    LaunchGeometry {
        num_teams: teams.max(1),
        num_threads: threads,
    }
}

/// The INFO line LLVM prints for a launch when `LIBOMPTARGET_INFO` has bit
/// 0x10 (`GenericKernelTy::printLaunchInfo` in LLVM 16's `PluginInterface.cpp`),
/// without the trailing newline:
/// `AMDGPU device <id> info: Launching kernel <name> with <teams> blocks and
/// <threads> threads in <mode> mode`.
pub fn launch_info_line(
    device_id: i32,
    kernel: &str,
    geometry: &LaunchGeometry,
    mode: ExecMode,
) -> String {
    format!(
        "AMDGPU device {device_id} info: Launching kernel {kernel} with {} blocks and {} threads in {} mode",
        geometry.num_teams,
        geometry.num_threads,
        mode.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> LaunchEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LaunchEnv::from_lookup(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn req(mode: ExecMode, nt: u32, tl: u32, tc: u64) -> LaunchRequest {
        LaunchRequest {
            num_teams: [nt, 0, 0],
            thread_limit: [tl, 0, 0],
            loop_tripcount: tc,
            mode,
            kernel_max_threads: 0,
        }
    }

    fn geo(num_teams: u32, num_threads: u32) -> LaunchGeometry {
        LaunchGeometry {
            num_teams,
            num_threads,
        }
    }

    use ExecMode::{Generic, GenericSpmd, Spmd};

    #[test]
    fn exec_mode_values() {
        assert_eq!(ExecMode::from_raw(1), Some(Generic));
        assert_eq!(ExecMode::from_raw(2), Some(Spmd));
        assert_eq!(ExecMode::from_raw(3), Some(GenericSpmd));
        assert_eq!(ExecMode::from_raw(0), None);
        assert_eq!(ExecMode::from_raw(4), None);
        for m in [Generic, Spmd, GenericSpmd] {
            assert_eq!(ExecMode::from_raw(m.raw()), Some(m));
        }
    }

    #[test]
    fn gfx90a_grid_values() {
        // `AMDGPUDeviceTy::initImpl`'s rules with gfx90a attributes: wave 64,
        // WORKGROUP_MAX_DIM.x 1024,
        // GRID_MAX_DIM.x 0xffffffff -> max teams 4294967295 / 1024 = 4194303;
        // default teams 110 CUs x 4 = 440; default threads 256.
        let g = GridValues::amdgpu(110, &LaunchEnv::default());
        assert_eq!(g.warp_size, 64);
        assert_eq!(g.max_threads, 1024);
        assert_eq!(g.max_teams, 4_194_303);
        assert_eq!(g.default_teams, 440);
        assert_eq!(g.default_threads, 256);
        assert_eq!(
            GridValues::from_agent(64, 1024, u32::MAX, 110, &LaunchEnv::default()),
            Some(g)
        );
        // Wave32 agent (gfx1030, 40 CUs).
        let g = GridValues::from_agent(32, 1024, u32::MAX, 40, &LaunchEnv::default()).unwrap();
        assert_eq!((g.warp_size, g.default_teams), (32, 160));
        // LLVM fails init for these.
        assert_eq!(
            GridValues::from_agent(48, 1024, u32::MAX, 1, &LaunchEnv::default()),
            None
        );
        assert_eq!(
            GridValues::from_agent(64, 1024, 1000, 1, &LaunchEnv::default()),
            None
        );
        assert_eq!(
            GridValues::from_agent(64, 0, u32::MAX, 1, &LaunchEnv::default()),
            None
        );
        // LIBOMPTARGET_AMDGPU_TEAMS_PER_CU=2 -> 220; OMP_MAX_TEAMS_DEFAULT wins.
        let g = GridValues::amdgpu(110, &env(&[(ENV_TEAMS_PER_CU, "2")]));
        assert_eq!(g.default_teams, 220);
        let g = GridValues::amdgpu(
            110,
            &env(&[(ENV_TEAMS_PER_CU, "2"), (ENV_OMP_MAX_TEAMS_DEFAULT, "64")]),
        );
        assert_eq!(g.default_teams, 64);
    }

    /// Expected values worked out by hand from LLVM 16.0.6's getNumThreads /
    /// getNumBlocks (formulas in the module docs), gfx90a with 110 CUs:
    /// max threads 1024, max teams 4194303, default teams 440, default
    /// threads 256, warp 64.
    #[test]
    fn llvm16_table() {
        let g = GridValues::amdgpu(110, &LaunchEnv::default());
        let cases: &[(&str, LaunchRequest, LaunchGeometry)] = &[
            // threads = min(1024, 256) = 256; T = (10000-1)/256 + 1 = 39 + 1 = 40;
            // teams = min(min(40, 440), 4194303) = 40.
            ("spmd tc 10000", req(Spmd, 0, 0, 10_000), geo(40, 256)),
            // T = 999999/256 + 1 = 3906 + 1 = 3907 -> min(3907, 440) = 440.
            ("spmd tc 1e6", req(Spmd, 0, 0, 1_000_000), geo(440, 256)),
            // TC = 1 -> T = 0/256 + 1 = 1.
            ("spmd tc 1", req(Spmd, 0, 0, 1), geo(1, 256)),
            // TC = 256 -> T = 255/256 + 1 = 1; TC = 257 -> 256/256 + 1 = 2.
            ("spmd tc 256", req(Spmd, 0, 0, 256), geo(1, 256)),
            ("spmd tc 257", req(Spmd, 0, 0, 257), geo(2, 256)),
            // No trip count: T = UINT64_MAX -> (uint32_t) 0xffffffff -> 440.
            ("spmd no tc", req(Spmd, 0, 0, 0), geo(440, 256)),
            ("generic no tc", req(Generic, 0, 0, 0), geo(440, 256)),
            // Generic / Generic-SPMD: T = TC.
            ("generic tc 8", req(Generic, 0, 0, 8), geo(8, 256)),
            (
                "generic-spmd tc 100",
                req(GenericSpmd, 0, 0, 100),
                geo(100, 256),
            ),
            ("generic tc 1000", req(Generic, 0, 0, 1000), geo(440, 256)),
            // thread_limit(64): generic adds a warp -> 128; generic-SPMD does not.
            ("generic tl 64", req(Generic, 0, 64, 0), geo(440, 128)),
            (
                "generic-spmd tl 64",
                req(GenericSpmd, 0, 64, 0),
                geo(440, 64),
            ),
            // num_teams(7) thread_limit(64), as clang 16 passes them (`KernelArgsTy`).
            ("spmd nt 7 tl 64", req(Spmd, 7, 64, 0), geo(7, 64)),
            ("generic nt 1", req(Generic, 1, 0, 0), geo(1, 256)),
            // num_teams wins over the trip count.
            ("spmd nt 3 tc 1e6", req(Spmd, 3, 0, 1_000_000), geo(3, 256)),
            // thread_limit above the device limit: min(1024, 2000) = 1024;
            // T = 9999/1024 + 1 = 9 + 1 = 10.
            (
                "spmd tl 2000 tc 10000",
                req(Spmd, 0, 2000, 10_000),
                geo(10, 1024),
            ),
            // Generic: 1000 + 64 = 1064 -> 1024.
            ("generic tl 1000", req(Generic, 0, 1000, 0), geo(440, 1024)),
            // thread_limit(100): T = 9999/100 + 1 = 99 + 1 = 100.
            (
                "spmd tl 100 tc 10000",
                req(Spmd, 0, 100, 10_000),
                geo(100, 100),
            ),
            // num_teams above the block limit: min(5000000, 4194303).
            ("nt 5e6", req(Spmd, 5_000_000, 0, 0), geo(4_194_303, 256)),
            // Constructor / destructor launch (`GenericKernelTy::launch`): 1 x 1.
            ("ctor", req(Spmd, 1, 1, 0), geo(1, 1)),
            // Generic-mode ctor would get 1 + 64 = 65 threads.
            ("generic ctor", req(Generic, 1, 1, 0), geo(1, 65)),
        ];
        for (name, r, want) in cases {
            assert_eq!(compute_launch(r, &g), *want, "{name}");
        }
    }

    #[test]
    fn teams_per_cu_env() {
        // 110 CUs x 2 = 220 default teams: SPMD tc 1e6 -> min(3907, 220).
        let g = GridValues::amdgpu(110, &env(&[(ENV_TEAMS_PER_CU, "2")]));
        assert_eq!(
            compute_launch(&req(Spmd, 0, 0, 1_000_000), &g),
            geo(220, 256)
        );
        // 110 x 16 = 1760: min(3907, 1760).
        let g = GridValues::amdgpu(110, &env(&[(ENV_TEAMS_PER_CU, "16")]));
        assert_eq!(
            compute_launch(&req(Spmd, 0, 0, 1_000_000), &g),
            geo(1760, 256)
        );
        // Invalid value: LLVM keeps the default 4.
        let g = GridValues::amdgpu(110, &env(&[(ENV_TEAMS_PER_CU, "many")]));
        assert_eq!(g.default_teams, 440);
    }

    #[test]
    fn deviations_never_launch_zero_teams() {
        // TEAMS_PER_CU=0: LLVM default teams 0 -> min(T, 0) = 0 teams; we launch 1.
        let g = GridValues::amdgpu(110, &env(&[(ENV_TEAMS_PER_CU, "0")]));
        assert_eq!(g.default_teams, 0);
        assert_eq!(compute_launch(&req(Spmd, 0, 0, 0), &g), geo(1, 256));
        // Generic TC = 2^32: LLVM's (uint32_t) cast gives 0 teams, and
        // 2^32 + 5 gives 5; we saturate -> min(u32::MAX, 440) = 440.
        let g = GridValues::amdgpu(110, &LaunchEnv::default());
        assert_eq!(
            compute_launch(&req(Generic, 0, 0, 1 << 32), &g),
            geo(440, 256)
        );
        assert_eq!(
            compute_launch(&req(Generic, 0, 0, (1 << 32) + 5), &g),
            geo(440, 256)
        );
    }

    #[test]
    fn omp_num_teams_caps_default_only() {
        let g = GridValues::amdgpu(110, &env(&[(ENV_OMP_NUM_TEAMS, "100")]));
        assert_eq!(g.env_num_teams, Some(100));
        // No clause: min(440, 100).
        assert_eq!(
            compute_launch(&req(Spmd, 0, 0, 1_000_000), &g),
            geo(100, 256)
        );
        // Smaller trip-count value stays: T = 40.
        assert_eq!(compute_launch(&req(Spmd, 0, 0, 10_000), &g), geo(40, 256));
        // Clauses win, in both directions.
        assert_eq!(compute_launch(&req(Spmd, 7, 0, 0), &g), geo(7, 256));
        assert_eq!(compute_launch(&req(Spmd, 1000, 0, 0), &g), geo(1000, 256));
        // Values <= 0 are ignored (LLVM's `OMP_NumTeams > 0` test).
        assert_eq!(env(&[(ENV_OMP_NUM_TEAMS, "0")]).omp_num_teams, None);
        assert_eq!(env(&[(ENV_OMP_NUM_TEAMS, "-4")]).omp_num_teams, None);
    }

    #[test]
    fn omp_teams_thread_limit_caps_default_only() {
        let g = GridValues::amdgpu(110, &env(&[(ENV_OMP_TEAMS_THREAD_LIMIT, "128")]));
        // SPMD: min(256, 128) = 128; T = 9999/128 + 1 = 78 + 1 = 79.
        assert_eq!(compute_launch(&req(Spmd, 0, 0, 10_000), &g), geo(79, 128));
        // Generic: 128 OpenMP threads + the main warp: min(256, 192).
        assert_eq!(compute_launch(&req(Generic, 0, 0, 0), &g), geo(440, 192));
        // A clause wins: thread_limit(512).
        assert_eq!(compute_launch(&req(Spmd, 0, 512, 0), &g), geo(440, 512));
        // Never raises the default.
        let g = GridValues::amdgpu(110, &env(&[(ENV_OMP_TEAMS_THREAD_LIMIT, "1000")]));
        assert_eq!(compute_launch(&req(Spmd, 0, 0, 0), &g), geo(440, 256));
    }

    #[test]
    fn kernel_max_threads_caps() {
        let g = GridValues::amdgpu(110, &LaunchEnv::default());
        let mut r = req(Spmd, 0, 512, 10_000);
        r.kernel_max_threads = 128;
        // min(1024, 128) = 128 cap; T = 9999/128 + 1 = 79.
        assert_eq!(compute_launch(&r, &g), geo(79, 128));
        r.kernel_max_threads = 1024;
        // T = 9999/512 + 1 = 19 + 1 = 20.
        assert_eq!(compute_launch(&r, &g), geo(20, 512));
    }

    #[test]
    fn env_parsing_like_cpp_streams() {
        let e = env(&[
            (ENV_TEAMS_PER_CU, "  8 teams"),
            (ENV_OMP_NUM_TEAMS, "+12"),
            (ENV_OMP_TEAMS_THREAD_LIMIT, "99999999999"),
            (ENV_OMP_MAX_TEAMS_DEFAULT, "x1"),
        ]);
        assert_eq!(e.teams_per_cu, Some(8));
        assert_eq!(e.omp_num_teams, Some(12));
        assert_eq!(e.omp_teams_thread_limit, None, "overflow is invalid");
        assert_eq!(e.default_num_teams, None);
        assert_eq!(env(&[(ENV_TEAMS_PER_CU, "-1")]).teams_per_cu, None);
        assert_eq!(LaunchEnv::from_lookup(|_| None), LaunchEnv::default());
    }

    #[test]
    fn info_line() {
        assert_eq!(
            launch_info_line(0, "__omp_offloading_fe00_1_main_l6", &geo(40, 256), Spmd),
            "AMDGPU device 0 info: Launching kernel __omp_offloading_fe00_1_main_l6 with 40 blocks and 256 threads in SPMD mode"
        );
        assert_eq!(GenericSpmd.name(), "Generic-SPMD");
        assert_eq!(Generic.name(), "Generic");
    }
}
