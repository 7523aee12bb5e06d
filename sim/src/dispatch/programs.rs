//! The cache of decoded programs: one [`isa::Program`] per code region, so that
//! repeated dispatches of a kernel decode nothing.
//!
//! Entries are keyed by the region's device base and checked against the live
//! region object on every lookup; an entry whose region is gone (the
//! executable was destroyed, the address reused) is replaced, and entries of
//! dead regions are dropped whenever a new program is decoded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use isa::{MemoryRegion, Program};

/// Decoded programs by code region.
#[derive(Default)]
pub(super) struct ProgramCache {
    programs: Mutex<HashMap<u64, Arc<Program>>>,
}

impl ProgramCache {
    /// The cached program of `region`, or a new one (replacing a stale entry); a new
    /// program compiles runs of integer VALU instructions to host code when `fusion`
    /// (`DispatchSettings::fusion`).
    pub(super) fn program_for(&self, region: &Arc<dyn MemoryRegion>, fusion: bool) -> Arc<Program> {
        let new = || {
            let p = Program::new(region);
            Arc::new(if fusion { p } else { p.without_fusion() })
        };
        let key = region.device_base();
        let Ok(mut map) = self.programs.lock() else {
            return new();
        };
        if let Some(p) = map.get(&key) {
            if p.is_over(region) {
                return p.clone();
            }
        }
        // Drop entries whose code region is gone.
        map.retain(|_, p| p.region().is_some());
        let p = new();
        map.insert(key, p.clone());
        p
    }
}
