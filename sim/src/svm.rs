//! Shared virtual memory attributes: what `hsa_amd_svm_attributes_set` records for
//! ranges of host memory and `hsa_amd_svm_attributes_get` reports (ROCm's
//! `hsa_ext_amd.h`, `hsa_amd_svm_attribute_t`).
//!
//! The virtual device keeps host memory where it is (it has no separate VRAM to
//! migrate pages to), so the placement attributes (preferred location, prefetch
//! location, granularity, read-mostly, hive-local) are recorded and reported back,
//! with no effect on where bytes live. Access does have an effect: with XNACK off
//! (`HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT` false), a GPU agent reaches a
//! host range only after `HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE` or
//! `..._ACCESSIBLE_IN_PLACE` named it, and never after `..._AGENT_NO_ACCESS`; with
//! XNACK on, every agent reaches every range unless `..._AGENT_NO_ACCESS` named it.
//!
//! Settings are kept as the ordered list of what was set; the value of an
//! attribute at a page is the last setting covering it (pages never set have the
//! defaults below). A query over pages that disagree answers as ROCm documents:
//! `INDETERMINATE` for the memory model, the null agent for locations.

use hsa_sys::*;
use parking_lot::RwLock;

/// One attribute value an `hsa_amd_svm_attributes_set` call may record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// `HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG`: fine (0) or coarse (1) grained.
    GlobalFlag(u64),
    /// `HSA_AMD_SVM_ATTRIB_READ_ONLY`.
    ReadOnly(bool),
    /// `HSA_AMD_SVM_ATTRIB_HIVE_LOCAL`.
    HiveLocal(bool),
    /// `HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY`: log2 of pages.
    Granularity(u64),
    /// `HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION`: an agent handle, 0 for none.
    Preferred(u64),
    /// Where `hsa_amd_svm_prefetch_async` last moved the range (agent handle).
    Prefetched(u64),
    /// `HSA_AMD_SVM_ATTRIB_READ_MOSTLY`.
    ReadMostly(bool),
    /// The access of agent `.0`: one of `HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE`,
    /// `..._IN_PLACE`, `..._NO_ACCESS`.
    Access(u64, u32),
}

impl Setting {
    /// Whether `self` and `other` set the same attribute (of the same agent).
    fn same_attribute(&self, other: &Setting) -> bool {
        match (self, other) {
            (Setting::Access(a, _), Setting::Access(b, _)) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

/// Default `HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY`: 2^9 pages (2 MiB), the
/// kernel driver's default.
pub const DEFAULT_GRANULARITY: u64 = 9;

/// The recorded settings of the process.
#[derive(Default)]
pub struct SvmAttributes {
    /// `(start, end, setting)` in the order they were made; page-aligned ranges.
    settings: RwLock<Vec<(u64, u64, Setting)>>,
}

impl SvmAttributes {
    /// No settings.
    pub fn new() -> SvmAttributes {
        SvmAttributes::default()
    }

    /// Records `list` for `[start, end)` (page-aligned), in order.
    pub fn set(&self, start: u64, end: u64, list: &[Setting]) {
        let mut s = self.settings.write();
        for &setting in list {
            // A setting wholly covered by a later one of the same attribute can no
            // longer be seen: dropped, so the list stays as long as what is visible.
            s.retain(|&(a, b, old)| !(old.same_attribute(&setting) && start <= a && b <= end));
            s.push((start, end, setting));
        }
    }

    /// The setting of `like`'s attribute over `[start, end)`: `Some(Some(v))` when
    /// every page has the same value `v`, `Some(None)` when no page was ever set,
    /// `None` when the pages disagree (set ones with unset ones included).
    pub fn uniform(&self, start: u64, end: u64, like: &Setting) -> Option<Option<Setting>> {
        let s = self.settings.read();
        let relevant: Vec<&(u64, u64, Setting)> = s
            .iter()
            .filter(|(a, b, v)| v.same_attribute(like) && *a < end && start < *b)
            .collect();
        // The value at each piece between consecutive boundaries is the last
        // setting covering it.
        let mut cuts = vec![start, end];
        for (a, b, _) in &relevant {
            cuts.extend([*a, *b].into_iter().filter(|&c| start < c && c < end));
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut seen: Option<Option<Setting>> = None;
        for w in cuts.windows(2) {
            let at = w[0];
            let v = relevant
                .iter()
                .rev()
                .find(|(a, b, _)| *a <= at && at < *b)
                .map(|(_, _, v)| *v);
            match seen {
                None => seen = Some(v),
                Some(prev) if prev != v => return None,
                Some(_) => {}
            }
        }
        Some(seen.unwrap_or(None))
    }

    /// The access agent `agent` has to the page holding `addr`: the last access
    /// setting naming it, if any.
    pub fn access(&self, agent: u64, addr: u64) -> Option<u32> {
        self.settings
            .read()
            .iter()
            .rev()
            .find_map(|&(a, b, v)| match v {
                Setting::Access(g, kind) if g == agent && a <= addr && addr < b => Some(kind),
                _ => None,
            })
    }

    /// Whether some access setting was ever made (a quick test before [`access`](Self::access)).
    pub fn any_access(&self) -> bool {
        self.settings
            .read()
            .iter()
            .any(|(_, _, v)| matches!(v, Setting::Access(..)))
    }

    /// The largest range around `addr` inside `[low, high)` over which agent `agent`'s
    /// access setting is the one at `addr` (so a region cut to it keeps one access).
    pub fn access_span(&self, agent: u64, addr: u64, low: u64, high: u64) -> (u64, u64) {
        let (mut lo, mut hi) = (low, high);
        for &(a, b, v) in self.settings.read().iter() {
            if let Setting::Access(g, _) = v {
                if g != agent {
                    continue;
                }
                for c in [a, b] {
                    if c <= addr {
                        lo = lo.max(c);
                    } else {
                        hi = hi.min(c);
                    }
                }
            }
        }
        (lo, hi)
    }
}

/// Whether GPU agent `agent` (handle) may reach host page `addr` as a kernel: XNACK
/// on (`by_default`) unless the range denies it, XNACK off only where a setting
/// allows it.
pub fn reachable(attrs: &SvmAttributes, by_default: bool, agent: u64, addr: u64) -> bool {
    match attrs.access(agent, addr) {
        Some(kind) => kind != HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS,
        None => by_default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_setting_covering_a_page_wins_and_mixed_ranges_disagree() {
        let a = SvmAttributes::new();
        let like = Setting::Preferred(0);
        assert_eq!(a.uniform(0x1000, 0x5000, &like), Some(None));
        a.set(0x1000, 0x3000, &[Setting::Preferred(7)]);
        assert_eq!(
            a.uniform(0x1000, 0x3000, &like),
            Some(Some(Setting::Preferred(7)))
        );
        assert_eq!(
            a.uniform(0x1000, 0x5000, &like),
            None,
            "set and unset pages"
        );
        a.set(0x2000, 0x3000, &[Setting::Preferred(9)]);
        assert_eq!(a.uniform(0x1000, 0x3000, &like), None);
        assert_eq!(
            a.uniform(0x2000, 0x3000, &like),
            Some(Some(Setting::Preferred(9)))
        );
        a.set(0x0, 0x8000, &[Setting::Preferred(9)]);
        assert_eq!(
            a.uniform(0x1000, 0x5000, &like),
            Some(Some(Setting::Preferred(9)))
        );
        assert_eq!(a.settings.read().len(), 1, "covered settings are dropped");
    }

    #[test]
    fn access_follows_the_default_until_a_setting_names_the_agent() {
        let a = SvmAttributes::new();
        assert!(!reachable(&a, false, 5, 0x1000));
        assert!(reachable(&a, true, 5, 0x1000));
        a.set(
            0x1000,
            0x2000,
            &[Setting::Access(5, HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE)],
        );
        assert!(reachable(&a, false, 5, 0x1800));
        assert!(!reachable(&a, false, 6, 0x1800), "another agent");
        assert!(!reachable(&a, false, 5, 0x2000), "past the range");
        a.set(
            0x1000,
            0x1800,
            &[Setting::Access(5, HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS)],
        );
        assert!(!reachable(&a, true, 5, 0x1000));
        assert!(reachable(&a, true, 5, 0x1800));
        assert_eq!(a.access_span(5, 0x1900, 0, u64::MAX), (0x1800, 0x2000));
    }
}
