//! How the dispatcher runs kernels, as configured: the per-wave instruction
//! budget and which workgroups print an instruction trace.
//!
//! This module owns the meaning of those settings and the syntax of their
//! values; [`crate::config::Config`] reads them from the environment
//! (`HSA_SIM_MAX_WAVE_INSTRUCTIONS`, `HSA_SIM_TRACE`) at `hsa_init`, so no
//! dispatch code reads an environment variable.

/// Default per-wave instruction budget (`HSA_SIM_MAX_WAVE_INSTRUCTIONS` overrides it).
pub const DEFAULT_MAX_WAVE_INSTRUCTIONS: u64 = 10_000_000_000;

/// Settings of one [`super::Dispatcher`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchSettings {
    /// Instructions each wave may execute before it is stopped as runaway
    /// (`isa::Fault::InstructionLimit`).
    pub max_wave_instructions: u64,
    /// Workgroups whose instructions are printed to stderr.
    pub trace: TraceFilter,
    /// Whether straight runs of integer VALU instructions are compiled to host code
    /// (`isa::Program::without_fusion` when not); results are the same either way.
    pub fusion: bool,
    /// Whether the waves of a workgroup with LDS are held together in their start
    /// phase (`HSA_SIM_WAVES_TOGETHER`; see `dispatch::job`'s `START_PHASE`):
    /// device-runtime races that need a GPU's simultaneous waves then behave as on
    /// one, at a cost (OpenMP STREAM through our plugin about 2.5x slower). Off by
    /// default: without it a workgroup's waves run one at a time between barriers.
    pub waves_together: bool,
}

impl Default for DispatchSettings {
    fn default() -> Self {
        DispatchSettings {
            max_wave_instructions: DEFAULT_MAX_WAVE_INSTRUCTIONS,
            trace: TraceFilter::Off,
            fusion: true,
            waves_together: false,
        }
    }
}

/// Which workgroups print an instruction trace (see [`isa::set_trace`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TraceFilter {
    /// None (`HSA_SIM_TRACE` unset).
    #[default]
    Off,
    /// Every workgroup (`all`).
    All,
    /// The workgroups with these linear ids (x fastest).
    Workgroups(Vec<u64>),
}

impl TraceFilter {
    /// Parses `all` or a comma-separated list of linear workgroup ids; entries
    /// that are not numbers are skipped, and a list with none left is `Off`.
    pub fn parse(text: &str) -> TraceFilter {
        if text.trim() == "all" {
            return TraceFilter::All;
        }
        let ids: Vec<u64> = text
            .split(',')
            .filter_map(|x| x.trim().parse().ok())
            .collect();
        if ids.is_empty() {
            TraceFilter::Off
        } else {
            TraceFilter::Workgroups(ids)
        }
    }

    /// Whether workgroup `linear` is traced.
    pub fn traces(&self, linear: u64) -> bool {
        match self {
            TraceFilter::Off => false,
            TraceFilter::All => true,
            TraceFilter::Workgroups(ids) => ids.contains(&linear),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TraceFilter;

    #[test]
    fn trace_values() {
        assert_eq!(TraceFilter::parse(" all "), TraceFilter::All);
        assert_eq!(
            TraceFilter::parse("3, x,7"),
            TraceFilter::Workgroups(vec![3, 7])
        );
        assert_eq!(TraceFilter::parse("x"), TraceFilter::Off);
        assert!(TraceFilter::parse("3,7").traces(7));
        assert!(!TraceFilter::parse("3,7").traces(4));
    }
}
