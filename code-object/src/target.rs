//! Targets: the processor an AMDGPU code object is built for and its
//! `xnack` / `sramecc` feature settings, read from `e_flags` or from a
//! target ID string, and the rules saying which code runs where.
//!
//! Two readings of the same facts exist, for two consumers, each faithful
//! to the component it stands in for:
//!
//! * [`TargetId`]: LLVM's textual target ID (AMDGPUUsage "Target ID":
//!   `processor{:feature[+-]}`), a feature being on, off or not named. The
//!   offload plugin compares an image's target ID with the agent's by LLVM
//!   16's `isImageCompatibleWithEnv` ([`TargetId::is_compatible`],
//!   [`target_ids_compatible`]).
//! * [`Isa`]: the HSA ISA of a code object or an agent, with the four
//!   feature settings AMDGPUUsage "Target Features" and the V4 `e_flags`
//!   fields distinguish (unsupported, any, off, on), and ROCr's loader rule
//!   ([`Isa::is_compatible_with_agent`]).
//!
//! Both decode `e_flags` through the one processor table and the one set of
//! field masks below (AMDGPUUsage "ELF Header", tables `e_flags` for code
//! object V3 and for V4 onwards; values from LLVM 16 `ELF.h`).

use std::fmt;

use crate::Error;

/// `EF_AMDGPU_MACH`: the processor field of `e_flags` (bits 7:0).
pub const EF_AMDGPU_MACH: u32 = 0x0ff;
/// `EF_AMDGPU_FEATURE_XNACK_V3`: code object V3's single xnack bit.
pub const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
/// `EF_AMDGPU_FEATURE_SRAMECC_V3`: code object V3's single sramecc bit.
pub const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;
/// `EF_AMDGPU_FEATURE_XNACK_V4`: the two-bit xnack field of code object V4
/// and V5 (bits 9:8; values [`FeatureSetting`] lists).
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// `EF_AMDGPU_FEATURE_SRAMECC_V4`: the two-bit sramecc field of code object
/// V4 and V5 (bits 11:10).
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;

/// `EF_AMDGPU_MACH_AMDGCN_GFX90A`.
pub const MACH_GFX90A: u32 = 0x03f;

/// The prefix HSA puts before a target ID to make an ISA name
/// (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
pub const ISA_NAME_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// The target triple at the start of full target-ID strings.
const AMDHSA_TRIPLE: &str = "amdgcn-amd-amdhsa";

/// A processor LLVM 16 knows (AMDGPUUsage "Processors" table and
/// `EF_AMDGPU_MACH_*` of `ELF.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Processor {
    /// `EF_AMDGPU_MACH_*` value.
    pub mach: u32,
    /// Canonical name, e.g. `gfx90a`.
    pub name: &'static str,
    /// Whether the processor has the xnack feature.
    pub has_xnack: bool,
    /// Whether the processor has the sramecc feature.
    pub has_sramecc: bool,
}

/// Processors by `EF_AMDGPU_MACH_*` value (LLVM 16's `ELF.h`): value, name,
/// whether the xnack feature exists, whether the sramecc feature exists (as
/// LLVM 16 records them in `e_flags`, checked with llvm-mc-16).
const PROCESSORS: &[(u32, &str, bool, bool)] = &[
    (0x020, "gfx600", false, false),
    (0x021, "gfx601", false, false),
    (0x022, "gfx700", false, false),
    (0x023, "gfx701", false, false),
    (0x024, "gfx702", false, false),
    (0x025, "gfx703", false, false),
    (0x026, "gfx704", false, false),
    (0x028, "gfx801", true, false),
    (0x029, "gfx802", false, false),
    (0x02a, "gfx803", false, false),
    (0x02b, "gfx810", true, false),
    (0x02c, "gfx900", true, false),
    (0x02d, "gfx902", true, false),
    (0x02e, "gfx904", true, false),
    (0x02f, "gfx906", true, true),
    (0x030, "gfx908", true, true),
    (0x031, "gfx909", true, false),
    (0x032, "gfx90c", true, false),
    (0x033, "gfx1010", true, false),
    (0x034, "gfx1011", true, false),
    (0x035, "gfx1012", true, false),
    (0x036, "gfx1030", false, false),
    (0x037, "gfx1031", false, false),
    (0x038, "gfx1032", false, false),
    (0x039, "gfx1033", false, false),
    (0x03a, "gfx602", false, false),
    (0x03b, "gfx705", false, false),
    (0x03c, "gfx805", false, false),
    (0x03d, "gfx1035", false, false),
    (0x03e, "gfx1034", false, false),
    (0x03f, "gfx90a", true, true),
    (0x040, "gfx940", true, true),
    (0x041, "gfx1100", false, false),
    (0x042, "gfx1013", true, false),
    (0x044, "gfx1103", false, false),
    (0x045, "gfx1036", false, false),
    (0x046, "gfx1101", false, false),
    (0x047, "gfx1102", false, false),
];

impl Processor {
    /// The processor whose `EF_AMDGPU_MACH` value is `mach`, `None` for
    /// values LLVM 16 does not define (0 = none, reserved values, R600).
    pub fn from_mach(mach: u32) -> Option<Processor> {
        PROCESSORS
            .iter()
            .find(|p| p.0 == mach)
            .map(Processor::from_row)
    }

    /// The processor named `name` (canonical names only).
    pub fn from_name(name: &str) -> Option<Processor> {
        PROCESSORS
            .iter()
            .find(|p| p.1 == name)
            .map(Processor::from_row)
    }

    fn from_row(&(mach, name, has_xnack, has_sramecc): &(u32, &'static str, bool, bool)) -> Self {
        Processor {
            mach,
            name,
            has_xnack,
            has_sramecc,
        }
    }
}

/// Setting of one target feature (xnack or sramecc), as a code object's
/// `e_flags` record it (the V4/V5 two-bit fields, AMDGPUUsage
/// `EF_AMDGPU_FEATURE_*_V4`) or as an agent is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor has no such feature (field value 0).
    Unsupported,
    /// The code runs correctly whatever the device setting is (1).
    Any,
    /// Requires (or, for an agent, has) the feature off (2).
    Off,
    /// Requires (or, for an agent, has) the feature on (3).
    On,
}

impl FeatureSetting {
    /// Decodes a V4/V5 two-bit feature field already shifted to bits 1:0
    /// (0 unsupported, 1 any, 2 off, 3 on).
    pub fn from_v4_field(field: u32) -> FeatureSetting {
        match field & 3 {
            0 => FeatureSetting::Unsupported,
            1 => FeatureSetting::Any,
            2 => FeatureSetting::Off,
            _ => FeatureSetting::On,
        }
    }

    /// Decodes a V3 single feature bit of a processor that has (`supported`)
    /// or lacks the feature, as ROCr's loader reads it. LLVM sets the bit
    /// both for "on" and for "any", so a set bit is read as `Any` (the
    /// lenient reading); a clear bit means off.
    pub fn from_v3_bit(supported: bool, set: bool) -> FeatureSetting {
        match (supported, set) {
            (false, _) => FeatureSetting::Unsupported,
            (true, true) => FeatureSetting::Any,
            (true, false) => FeatureSetting::Off,
        }
    }

    /// Whether code built with setting `self` may run on an agent whose
    /// setting is `agent`: `Any`/`Unsupported` accept everything, a pinned
    /// `On`/`Off` needs the same value on the agent.
    pub fn accepts(self, agent: FeatureSetting) -> bool {
        match self {
            FeatureSetting::Any | FeatureSetting::Unsupported => true,
            pinned => pinned == agent,
        }
    }

    /// The setting as a target ID writes it: `Some(true)` = `+`,
    /// `Some(false)` = `-`, `None` = not written (any, unsupported).
    pub fn sign(self) -> Option<bool> {
        match self {
            FeatureSetting::On => Some(true),
            FeatureSetting::Off => Some(false),
            FeatureSetting::Any | FeatureSetting::Unsupported => None,
        }
    }
}

/// The V4/V5 (`EI_ABIVERSION` 2 or 3) xnack and sramecc fields of
/// `e_flags`.
fn v4_features(e_flags: u32) -> (FeatureSetting, FeatureSetting) {
    (
        FeatureSetting::from_v4_field((e_flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8),
        FeatureSetting::from_v4_field((e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10),
    )
}

/// Writes `processor[:sramecc±][:xnack±]`, LLVM's canonical order.
fn write_target_id(
    f: &mut fmt::Formatter<'_>,
    processor: &str,
    sramecc: Option<bool>,
    xnack: Option<bool>,
) -> fmt::Result {
    f.write_str(processor)?;
    let sign = |on: bool| if on { '+' } else { '-' };
    if let Some(on) = sramecc {
        write!(f, ":sramecc{}", sign(on))?;
    }
    if let Some(on) = xnack {
        write!(f, ":xnack{}", sign(on))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// TargetId: LLVM's textual target ID and the offload plugin's rule

/// An AMDGPU target ID (AMDGPUUsage "Target ID"): a processor and the
/// `sramecc` / `xnack` settings it names. `None` for a feature means "any"
/// (or not named).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// Processor name, e.g. `gfx90a`.
    pub processor: String,
    /// `xnack`: `Some(true)` = `xnack+`, `Some(false)` = `xnack-`, `None` = any.
    pub xnack: Option<bool>,
    /// `sramecc`: `Some(true)` = `sramecc+`, `Some(false)` = `sramecc-`, `None` = any.
    pub sramecc: Option<bool>,
}

impl fmt::Display for TargetId {
    /// Canonical form: `processor[:sramecc±][:xnack±]` (LLVM's order).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_target_id(f, &self.processor, self.sramecc, self.xnack)
    }
}

impl TargetId {
    /// Parses `processor[:feature...]`, or the full ISA-name form
    /// `amdgcn-amd-amdhsa--processor[:feature...]` (prefix and the `-` after
    /// it stripped, as LLVM does for agent ISA names).
    ///
    /// Features are recognized as LLVM 16's `parseTargetID` does:
    /// `sramecc+`/`sramecc-`/`xnack+`/`xnack-` anywhere after the first `:`
    /// (`+` wins when both signs appear); anything else is ignored. `None`
    /// when the processor part is empty.
    pub fn parse(s: &str) -> Option<TargetId> {
        let s = match s.strip_prefix(AMDHSA_TRIPLE) {
            Some(rest) => rest.trim_start_matches('-'),
            None => s,
        };
        let (processor, features) = s.split_once(':').unwrap_or((s, ""));
        if processor.is_empty() {
            return None;
        }
        let feature = |name: &str| {
            if features.contains(&format!("{name}+")) {
                Some(true)
            } else if features.contains(&format!("{name}-")) {
                Some(false)
            } else {
                None
            }
        };
        Some(TargetId {
            processor: processor.to_string(),
            xnack: feature("xnack"),
            sramecc: feature("sramecc"),
        })
    }

    /// The target ID an AMDHSA code object declares in its ELF header:
    /// `e_flags` and `EI_ABIVERSION` (AMDGPUUsage "ELF Header"), as the
    /// offload plugin reads them.
    ///
    /// - ABI version 2 or 3 (code object V4/V5): the
    ///   `EF_AMDGPU_FEATURE_XNACK_V4` / `SRAMECC_V4` fields: any or
    ///   unsupported → `None`, off → `Some(false)`, on → `Some(true)`.
    /// - ABI version 1 (V3): bit set → `Some(true)`, clear → `None` (V3
    ///   cannot tell "off" from "unsupported").
    /// - Other ABI versions (V2 keeps its target in a note) or an unknown
    ///   `EF_AMDGPU_MACH` → `None`.
    pub fn from_elf_flags(e_flags: u32, abi_version: u8) -> Option<TargetId> {
        let processor = Processor::from_mach(e_flags & EF_AMDGPU_MACH)?;
        let (xnack, sramecc) = match abi_version {
            1 => (
                (e_flags & EF_AMDGPU_FEATURE_XNACK_V3 != 0).then_some(true),
                (e_flags & EF_AMDGPU_FEATURE_SRAMECC_V3 != 0).then_some(true),
            ),
            2 | 3 => {
                let (xnack, sramecc) = v4_features(e_flags);
                (xnack.sign(), sramecc.sign())
            }
            _ => return None,
        };
        Some(TargetId {
            processor: processor.name.to_string(),
            xnack,
            sramecc,
        })
    }

    /// Whether an image built for `self` may run on an agent whose target ID
    /// is `agent` (LLVM 16 `isImageCompatibleWithEnv` on parsed IDs): the
    /// image's processor must contain the agent's (substring, as LLVM tests
    /// it); the image may name at most as many features as the agent; every
    /// feature the image names must be named by the agent with the same
    /// sign.
    pub fn is_compatible(&self, agent: &TargetId) -> bool {
        if self == agent {
            return true;
        }
        if self.processor.is_empty()
            || agent.processor.is_empty()
            || !self.processor.contains(agent.processor.as_str())
        {
            return false;
        }
        let count =
            |t: &TargetId| usize::from(t.xnack.is_some()) + usize::from(t.sramecc.is_some());
        if count(self) > count(agent) {
            return false;
        }
        let ok = |img: Option<bool>, env: Option<bool>| match img {
            None => true,
            Some(v) => env == Some(v),
        };
        ok(self.xnack, agent.xnack) && ok(self.sramecc, agent.sramecc)
    }
}

/// LLVM 16's compatibility test on the raw strings: an exact string match
/// is compatible (even for strings that do not parse), else both must parse
/// and [`TargetId::is_compatible`] decides.
pub fn target_ids_compatible(image: &str, agent: &str) -> bool {
    if image == agent {
        return true;
    }
    match (TargetId::parse(image), TargetId::parse(agent)) {
        (Some(i), Some(a)) => i.is_compatible(&a),
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// Isa: the loader's view and ROCr's rule

/// An HSA ISA: processor (`EF_AMDGPU_MACH_*`) plus the setting of each
/// feature, what a code object's `e_flags` declare and what an agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Isa {
    /// `EF_AMDGPU_MACH_*` value, e.g. `0x3f` for gfx90a.
    pub mach: u32,
    /// XNACK (page-fault replay) setting.
    pub xnack: FeatureSetting,
    /// SRAM ECC setting.
    pub sramecc: FeatureSetting,
}

impl Isa {
    /// The virtual device's ISA: `gfx90a:sramecc+:xnack-` (the usual MI200
    /// configuration).
    pub fn gfx90a_default() -> Isa {
        Isa {
            mach: MACH_GFX90A,
            xnack: FeatureSetting::Off,
            sramecc: FeatureSetting::On,
        }
    }

    /// Decodes the ISA of a code object from its `e_flags` and its
    /// `EI_ABIVERSION` (1 = V3 single feature bits, read as ROCr does with
    /// [`FeatureSetting::from_v3_bit`]; 2/3 = V4/V5 two-bit fields). An
    /// `EF_AMDGPU_MACH` LLVM 16 does not name is kept, with both features
    /// assumed to exist.
    ///
    /// Errors: [`Error::UnsupportedAbiVersion`] for other ABI versions,
    /// [`Error::NoProcessor`] when `EF_AMDGPU_MACH` is 0.
    pub fn from_e_flags(abi_version: u8, e_flags: u32) -> Result<Isa, Error> {
        let mach = e_flags & EF_AMDGPU_MACH;
        if mach == 0 {
            return Err(Error::NoProcessor { e_flags });
        }
        let (has_xnack, has_sramecc) =
            Processor::from_mach(mach).map_or((true, true), |p| (p.has_xnack, p.has_sramecc));
        let (xnack, sramecc) = match abi_version {
            1 => (
                FeatureSetting::from_v3_bit(has_xnack, e_flags & EF_AMDGPU_FEATURE_XNACK_V3 != 0),
                FeatureSetting::from_v3_bit(
                    has_sramecc,
                    e_flags & EF_AMDGPU_FEATURE_SRAMECC_V3 != 0,
                ),
            ),
            2 | 3 => v4_features(e_flags),
            other => return Err(Error::UnsupportedAbiVersion(other)),
        };
        Ok(Isa {
            mach,
            xnack,
            sramecc,
        })
    }

    /// Processor name (`"gfx90a"`, `"gfx1030"`, ...) of `mach`, `None` for
    /// values LLVM 16 does not define.
    pub fn processor_name(&self) -> Option<&'static str> {
        Processor::from_mach(self.mach).map(|p| p.name)
    }

    /// Whether a code object built for `self` may run on an agent whose ISA
    /// is `agent`: same processor, and every feature the code object pins
    /// (`On`/`Off`) equals the agent's; `Any`/`Unsupported` match anything
    /// (ROCr 5.2's loader).
    pub fn is_compatible_with_agent(&self, agent: &Isa) -> bool {
        self.mach == agent.mach
            && self.xnack.accepts(agent.xnack)
            && self.sramecc.accepts(agent.sramecc)
    }

    /// [`is_compatible_with_agent`](Self::is_compatible_with_agent) as a
    /// `Result`: [`Error::IncompatibleIsa`] naming both target IDs.
    pub fn check_compatible_with_agent(&self, agent: &Isa) -> Result<(), Error> {
        if self.is_compatible_with_agent(agent) {
            Ok(())
        } else {
            Err(Error::IncompatibleIsa {
                code_object: self.to_target_id_string(),
                agent: agent.to_target_id_string(),
            })
        }
    }

    /// LLVM target ID syntax: processor, then `:sramecc±`, then `:xnack±`;
    /// features that are `Any` or `Unsupported` are omitted. An unknown
    /// processor is written `mach0x..`. Example: `gfx90a:sramecc+:xnack-`.
    pub fn to_target_id_string(&self) -> String {
        self.to_string()
    }

    /// The HSA ISA name: `amdgcn-amd-amdhsa--` + the target ID string,
    /// e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    pub fn isa_name(&self) -> String {
        format!("{ISA_NAME_PREFIX}{self}")
    }

    /// Parses a target ID (`gfx90a`, `gfx90a:xnack-`, `gfx90a:sramecc+:xnack-`),
    /// optionally preceded by `amdgcn-amd-amdhsa--`. Features not mentioned
    /// are `Any` when the processor has them, else `Unsupported` (as LLVM
    /// writes `e_flags`). Returns `None` for an unknown processor, a feature
    /// the processor lacks, an unknown or repeated feature, or a feature
    /// without `+`/`-`.
    pub fn parse(s: &str) -> Option<Isa> {
        let s = s.strip_prefix(ISA_NAME_PREFIX).unwrap_or(s);
        let mut parts = s.split(':');
        let processor = Processor::from_name(parts.next()?)?;
        let default = |supported: bool| {
            if supported {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            }
        };
        let mut isa = Isa {
            mach: processor.mach,
            xnack: default(processor.has_xnack),
            sramecc: default(processor.has_sramecc),
        };
        let (mut seen_xnack, mut seen_sramecc) = (false, false);
        for feature in parts {
            let (name, setting) = if let Some(n) = feature.strip_suffix('+') {
                (n, FeatureSetting::On)
            } else if let Some(n) = feature.strip_suffix('-') {
                (n, FeatureSetting::Off)
            } else {
                return None;
            };
            match name {
                "xnack" if !seen_xnack && processor.has_xnack => {
                    seen_xnack = true;
                    isa.xnack = setting;
                }
                "sramecc" if !seen_sramecc && processor.has_sramecc => {
                    seen_sramecc = true;
                    isa.sramecc = setting;
                }
                _ => return None,
            }
        }
        Some(isa)
    }
}

impl fmt::Display for Isa {
    /// The target ID string ([`Isa::to_target_id_string`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.processor_name() {
            Some(name) => write_target_id(f, name, self.sramecc.sign(), self.xnack.sign()),
            None => write_target_id(
                f,
                &format!("mach{:#x}", self.mach),
                self.sramecc.sign(),
                self.xnack.sign(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid(s: &str) -> TargetId {
        TargetId::parse(s).unwrap()
    }

    #[test]
    fn parse_target_ids() {
        let t = tid("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
        assert_eq!(t.processor, "gfx90a");
        assert_eq!((t.sramecc, t.xnack), (Some(true), Some(false)));
        assert_eq!(t.to_string(), "gfx90a:sramecc+:xnack-");
        let t = tid("gfx1030");
        assert_eq!(
            (t.processor.as_str(), t.xnack, t.sramecc),
            ("gfx1030", None, None)
        );
        // LLVM looks for "xnack+" first.
        assert_eq!(tid("gfx90a:xnack-:xnack+").xnack, Some(true));
        // Unknown features are ignored.
        assert_eq!(tid("gfx90a:foo+"), tid("gfx90a"));
        assert_eq!(TargetId::parse(""), None);
        assert_eq!(TargetId::parse(":xnack+"), None);
        assert_eq!(TargetId::parse("amdgcn-amd-amdhsa--"), None);
    }

    /// Expected results by hand from LLVM 16's isImageCompatibleWithEnv.
    #[test]
    fn compatibility() {
        let agent = "gfx90a:sramecc+:xnack-";
        let cases = [
            ("gfx90a", agent, true),                     // no features: any
            ("gfx90a:xnack-", agent, true),              // same sign
            ("gfx90a:sramecc+:xnack-", agent, true),     // exact
            ("gfx90a:xnack+", agent, false),             // other sign
            ("gfx90a:sramecc-", agent, false),           // other sign
            ("gfx90a:xnack+", "gfx90a", false),          // more features than agent
            ("gfx90a:sramecc-", "gfx90a:xnack-", false), // feature absent on agent
            ("gfx908", agent, false),                    // other processor
            ("gfx1030", agent, false),
            ("gfx90a", "gfx90", true), // LLVM's substring test
            ("gfx90", "gfx90a", false),
        ];
        for (image, env, want) in cases {
            assert_eq!(target_ids_compatible(image, env), want, "{image} on {env}");
            assert_eq!(
                tid(image).is_compatible(&tid(env)),
                want,
                "{image} on {env}"
            );
        }
        // Exact string match even when unparsable.
        assert!(target_ids_compatible("", ""));
        assert!(!target_ids_compatible("", "gfx90a"));
    }

    #[test]
    fn elf_flags() {
        // EF_AMDGPU_MACH_AMDGCN_GFX90A 0x3f | XNACK_ANY_V4 0x100 | SRAMECC_ANY_V4 0x400.
        assert_eq!(
            TargetId::from_elf_flags(0x53f, 2).unwrap().to_string(),
            "gfx90a"
        );
        // SRAMECC_OFF_V4 0x800 | XNACK_ON_V4 0x300.
        assert_eq!(
            TargetId::from_elf_flags(0xb3f, 2).unwrap().to_string(),
            "gfx90a:sramecc-:xnack+"
        );
        // V5 uses the V4 encoding; GFX1030 0x36 without features.
        assert_eq!(
            TargetId::from_elf_flags(0x36, 3).unwrap().to_string(),
            "gfx1030"
        );
        // V3: XNACK_V3 0x100 on.
        assert_eq!(
            TargetId::from_elf_flags(0x13f, 1).unwrap().to_string(),
            "gfx90a:xnack+"
        );
        assert_eq!(TargetId::from_elf_flags(0x3f, 0), None, "V2");
        assert_eq!(TargetId::from_elf_flags(0x43, 2), None, "reserved mach");
        assert_eq!(TargetId::from_elf_flags(0x01, 2), None, "r600");
    }
}
