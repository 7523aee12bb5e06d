//! Target IDs: the processor and the xnack/sramecc feature settings of a code
//! object (from `e_flags`) or of an agent, and the compatibility rule between
//! them (fact sheet 2.2; HSA sheet 4.7, 4.9 and 7.7).

use super::LoadError;

/// `EF_AMDGPU_MACH` mask of `e_flags`.
pub(crate) const EF_AMDGPU_MACH: u32 = 0x0ff;
/// Code object V4/V5 xnack field of `e_flags`.
const EF_XNACK_V4: u32 = 0x300;
/// Code object V4/V5 sramecc field of `e_flags`.
const EF_SRAMECC_V4: u32 = 0xc00;
/// Code object V3 single xnack bit.
const EF_XNACK_V3: u32 = 0x100;
/// Code object V3 single sramecc bit.
const EF_SRAMECC_V3: u32 = 0x200;

/// `EF_AMDGPU_MACH_AMDGCN_GFX90A`.
pub const MACH_GFX90A: u32 = 0x03f;

/// Processors by `EF_AMDGPU_MACH_*` value (LLVM 16's `ELF.h`): name, whether
/// the xnack feature exists, whether the sramecc feature exists (as LLVM 16
/// records them in `e_flags`, checked with llvm-mc-16).
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

/// The table entry of processor `mach`.
fn processor(mach: u32) -> Option<&'static (u32, &'static str, bool, bool)> {
    PROCESSORS.iter().find(|p| p.0 == mach)
}

/// The ISA name prefix HSA puts before a target ID.
pub const ISA_NAME_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// Setting of one target feature (xnack or sramecc), as recorded in a code
/// object's `e_flags` (V4/V5 two-bit fields) or as configured on an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor has no such feature (field value 0).
    Unsupported,
    /// The code runs correctly whatever the device setting is.
    Any,
    /// Requires (or, for an agent, has) the feature off.
    Off,
    /// Requires (or, for an agent, has) the feature on.
    On,
}

impl FeatureSetting {
    /// Decodes a V4/V5 two-bit feature field already shifted to bits 1:0
    /// (0 unsupported, 1 any, 2 off, 3 on).
    fn from_v4_field(field: u32) -> FeatureSetting {
        match field & 3 {
            0 => FeatureSetting::Unsupported,
            1 => FeatureSetting::Any,
            2 => FeatureSetting::Off,
            _ => FeatureSetting::On,
        }
    }

    /// Decodes a V3 single feature bit of a processor that has (`supported`)
    /// or lacks the feature. LLVM sets the bit both for "on" and for "any", so
    /// a set bit is read as `Any` (the lenient reading); a clear bit means off.
    fn from_v3_bit(supported: bool, set: bool) -> FeatureSetting {
        match (supported, set) {
            (false, _) => FeatureSetting::Unsupported,
            (true, true) => FeatureSetting::Any,
            (true, false) => FeatureSetting::Off,
        }
    }

    /// Whether code built with setting `self` may run on an agent whose
    /// setting is `agent`: `Any`/`Unsupported` accept everything, a pinned
    /// `On`/`Off` needs the same value on the agent.
    fn accepts(self, agent: FeatureSetting) -> bool {
        match self {
            FeatureSetting::Any | FeatureSetting::Unsupported => true,
            pinned => pinned == agent,
        }
    }

    /// The target-ID suffix for this setting (`+`, `-`), `None` when the
    /// setting is not written in a target ID (any, unsupported).
    fn suffix(self) -> Option<char> {
        match self {
            FeatureSetting::On => Some('+'),
            FeatureSetting::Off => Some('-'),
            FeatureSetting::Any | FeatureSetting::Unsupported => None,
        }
    }
}

/// A target ID: processor (`EF_AMDGPU_MACH_*`) plus feature settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// `EF_AMDGPU_MACH_*` value, e.g. `0x3f` for gfx90a.
    pub mach: u32,
    /// XNACK (page-fault replay) setting.
    pub xnack: FeatureSetting,
    /// SRAM ECC setting.
    pub sramecc: FeatureSetting,
}

impl TargetId {
    /// The virtual device's ISA: `gfx90a:sramecc+:xnack-` (the usual MI200
    /// configuration, HSA sheet 4.7).
    pub fn gfx90a_default() -> TargetId {
        TargetId {
            mach: MACH_GFX90A,
            xnack: FeatureSetting::Off,
            sramecc: FeatureSetting::On,
        }
    }

    /// Decodes the target of a code object from its `e_flags` and its
    /// `EI_ABIVERSION` (1 = V3 single feature bits, 2/3 = V4/V5 two-bit
    /// fields; fact sheet 2.2).
    ///
    /// Errors: `LoadError::Unsupported` for other ABI versions,
    /// `LoadError::Invalid` when `EF_AMDGPU_MACH` is 0 (no processor).
    pub fn from_e_flags(abi_version: u8, e_flags: u32) -> Result<TargetId, LoadError> {
        let mach = e_flags & EF_AMDGPU_MACH;
        if mach == 0 {
            return Err(LoadError::Invalid(format!(
                "e_flags {e_flags:#x}: EF_AMDGPU_MACH is 0 (no processor)"
            )));
        }
        let (has_xnack, has_sramecc) = processor(mach).map_or((true, true), |p| (p.2, p.3));
        let (xnack, sramecc) = match abi_version {
            1 => (
                FeatureSetting::from_v3_bit(has_xnack, e_flags & EF_XNACK_V3 != 0),
                FeatureSetting::from_v3_bit(has_sramecc, e_flags & EF_SRAMECC_V3 != 0),
            ),
            2 | 3 => (
                FeatureSetting::from_v4_field((e_flags & EF_XNACK_V4) >> 8),
                FeatureSetting::from_v4_field((e_flags & EF_SRAMECC_V4) >> 10),
            ),
            other => {
                return Err(LoadError::Unsupported(format!(
                    "EI_ABIVERSION {other} has no known e_flags layout"
                )))
            }
        };
        Ok(TargetId {
            mach,
            xnack,
            sramecc,
        })
    }

    /// Processor name (`"gfx90a"`, `"gfx1030"`, ...) of `mach`, `None` for
    /// values LLVM 16 does not define.
    pub fn processor_name(&self) -> Option<&'static str> {
        processor(self.mach).map(|p| p.1)
    }

    /// Whether a code object built for `self` may run on an agent whose ISA is
    /// `agent`: same processor, and every feature the code object pins
    /// (`On`/`Off`) equals the agent's; `Any`/`Unsupported` match anything
    /// (ROCr 5.2, HSA sheet 7.7).
    pub fn is_compatible_with_agent(&self, agent: &TargetId) -> bool {
        self.mach == agent.mach
            && self.xnack.accepts(agent.xnack)
            && self.sramecc.accepts(agent.sramecc)
    }

    /// [`is_compatible_with_agent`](Self::is_compatible_with_agent) as a
    /// `Result`: `LoadError::IncompatibleIsa` naming both target IDs.
    pub fn check_compatible_with_agent(&self, agent: &TargetId) -> Result<(), LoadError> {
        if self.is_compatible_with_agent(agent) {
            Ok(())
        } else {
            Err(LoadError::IncompatibleIsa {
                code_object: self.to_target_id_string(),
                agent: agent.to_target_id_string(),
            })
        }
    }

    /// LLVM target ID syntax: processor, then `:sramecc±`, then `:xnack±`;
    /// features that are `Any` or `Unsupported` are omitted. An unknown
    /// processor is written `mach0x..`. Example: `gfx90a:sramecc+:xnack-`.
    pub fn to_target_id_string(&self) -> String {
        let mut s = match self.processor_name() {
            Some(name) => name.to_string(),
            None => format!("mach{:#x}", self.mach),
        };
        if let Some(c) = self.sramecc.suffix() {
            s.push_str(":sramecc");
            s.push(c);
        }
        if let Some(c) = self.xnack.suffix() {
            s.push_str(":xnack");
            s.push(c);
        }
        s
    }

    /// The HSA ISA name: `amdgcn-amd-amdhsa--` + the target ID string
    /// (HSA sheet 4.7), e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    pub fn isa_name(&self) -> String {
        format!("{ISA_NAME_PREFIX}{}", self.to_target_id_string())
    }

    /// Parses a target ID (`gfx90a`, `gfx90a:xnack-`, `gfx90a:sramecc+:xnack-`),
    /// optionally preceded by `amdgcn-amd-amdhsa--`. Features not mentioned are
    /// `Any` when the processor has them, else `Unsupported` (as LLVM writes
    /// `e_flags`). Returns `None` for an unknown processor, a feature the
    /// processor lacks, an unknown or repeated feature, or a feature without
    /// `+`/`-`.
    pub fn parse(s: &str) -> Option<TargetId> {
        let s = s.strip_prefix(ISA_NAME_PREFIX).unwrap_or(s);
        let mut parts = s.split(':');
        let proc_name = parts.next()?;
        let &(mach, _, has_xnack, has_sramecc) = PROCESSORS.iter().find(|p| p.1 == proc_name)?;
        let default = |supported: bool| {
            if supported {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            }
        };
        let mut id = TargetId {
            mach,
            xnack: default(has_xnack),
            sramecc: default(has_sramecc),
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
                "xnack" if !seen_xnack && has_xnack => {
                    seen_xnack = true;
                    id.xnack = setting;
                }
                "sramecc" if !seen_sramecc && has_sramecc => {
                    seen_sramecc = true;
                    id.sramecc = setting;
                }
                _ => return None,
            }
        }
        Some(id)
    }
}

impl std::fmt::Display for TargetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_target_id_string())
    }
}
