//! Host ranges the GPUs can reach directly: ranges locked with
//! `hsa_amd_memory_lock` (`data_lock`, and large transfers) and HOST / SHARED
//! allocations from the fine-grained host pool (LLVM 16's
//! `plugins-nextgen/amdgpu/src/rtl.cpp`: `dataLockImpl`, `dataSubmitImpl`'s
//! locked-buffer path, `AMDGPUMemoryManagerTy`).
//!
//! Transfers whose host side lies inside one of these ranges skip the
//! staging buffer: one DMA copy using the range's device-accessible alias.

use crate::error::{Error, Result};
use hsa::{DeviceRange, HostPoolBlock, HostSpan, Hsa};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Why a range is pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Locked with `hsa_amd_memory_lock`; unlocked when `refs` drops to 0.
    Locked,
    /// A fine-grained pool allocation (HOST / SHARED kinds); the alias is
    /// the address itself. Removed when the allocation is freed.
    Allocated,
}

#[derive(Debug, Clone, Copy)]
struct Range {
    size: usize,
    /// The agents' view of the whole range (`size` bytes).
    alias: DeviceRange,
    refs: usize,
    kind: Kind,
}

/// The table of pinned host ranges, keyed by host start address.
#[derive(Debug)]
pub struct PinnedTable {
    hsa: Hsa,
    ranges: Mutex<BTreeMap<usize, Range>>,
}

/// What [`containing`] needs of a table entry: its size in bytes.
trait Extent: Copy {
    fn extent(&self) -> usize;
}

impl Extent for Range {
    fn extent(&self) -> usize {
        self.size
    }
}

/// The range containing `[addr, addr + size)`, if any: `(start, range)`.
fn containing<R: Extent>(map: &BTreeMap<usize, R>, addr: usize, size: usize) -> Option<(usize, R)> {
    let (&start, &r) = map.range(..=addr).next_back()?;
    let end = addr.checked_add(size.max(1))?;
    (end <= start + r.extent().max(1)).then_some((start, r))
}

impl PinnedTable {
    /// An empty table.
    pub fn new(hsa: &Hsa) -> PinnedTable {
        PinnedTable {
            hsa: hsa.clone(),
            ranges: Mutex::new(BTreeMap::new()),
        }
    }

    /// The agents' view of `[host, host + size)` when the whole range lies
    /// inside one pinned range.
    pub fn translate(&self, host: usize, size: usize) -> Option<DeviceRange> {
        let map = self.ranges.lock();
        containing(&map, host, size).and_then(|(start, r)| r.alias.slice(host - start, size))
    }

    /// Pins the span's memory (`data_lock`) and returns the agents' view of
    /// it. Inside an already pinned range: one more reference to it, and
    /// the matching part of its alias. The span's creator vouched that the memory
    /// stays mapped until it is unlocked (`HostSpan::new`).
    ///
    /// Errors: size 0; the failing `hsa_amd_memory_lock`; a range that
    /// starts where another pinned range starts but extends past it.
    pub fn lock(&self, span: &HostSpan) -> Result<DeviceRange> {
        let (host, size) = (span.addr(), span.len());
        if size == 0 {
            return Err(Error::InvalidArgument(format!(
                "cannot lock {size} bytes at {host:#x}"
            )));
        }
        let mut map = self.ranges.lock();
        if let Some((start, r)) = containing(&map, host, size) {
            if let Some(alias) = r.alias.slice(host - start, size) {
                if let Some(entry) = map.get_mut(&start) {
                    entry.refs += 1;
                }
                return Ok(alias);
            }
        }
        if map.contains_key(&host) {
            return Err(Error::InvalidArgument(format!(
                "range {host:#x}+{size} overlaps a pinned range starting at the same address"
            )));
        }
        let alias = self.hsa.memory_lock_span(span)?;
        map.insert(
            host,
            Range {
                size,
                alias,
                refs: 1,
                kind: Kind::Locked,
            },
        );
        Ok(alias)
    }

    /// Drops one reference to the locked range containing `host` (`data_unlock`
    /// takes the original host pointer); the last one unpins it.
    ///
    /// Errors: `host` is in no locked range; the failing `hsa_amd_memory_unlock`.
    pub fn unlock(&self, host: usize) -> Result<()> {
        let mut map = self.ranges.lock();
        let Some((start, r)) = containing(&map, host, 1).filter(|(_, r)| r.kind == Kind::Locked)
        else {
            return Err(Error::UnknownHandle {
                what: "locked host pointer",
                addr: host,
            });
        };
        if r.refs > 1 {
            if let Some(entry) = map.get_mut(&start) {
                entry.refs -= 1;
            }
            return Ok(());
        }
        map.remove(&start);
        drop(map);
        self.hsa.memory_unlock(start)?;
        Ok(())
    }

    /// Records a fine-grained allocation (device-accessible at its own
    /// address).
    pub fn register_allocation(&self, block: &HostPoolBlock) {
        self.ranges.lock().insert(
            block.span().addr(),
            Range {
                size: block.len(),
                alias: block.range(),
                refs: 1,
                kind: Kind::Allocated,
            },
        );
    }

    /// Forgets a fine-grained allocation; `false` when `addr` is not one.
    pub fn unregister_allocation(&self, addr: usize) -> bool {
        let mut map = self.ranges.lock();
        match map.get(&addr) {
            Some(r) if r.kind == Kind::Allocated => {
                map.remove(&addr);
                true
            }
            _ => false,
        }
    }

    /// Locks the span's memory for the duration of one transfer; the
    /// returned guard unlocks it when dropped (when the stream holding it
    /// completes).
    ///
    /// Errors: as [`PinnedTable::lock`].
    pub fn lock_temporarily(self: &Arc<Self>, span: &HostSpan) -> Result<(DeviceRange, LockGuard)> {
        let alias = self.lock(span)?;
        Ok((
            alias,
            LockGuard {
                table: self.clone(),
                host: span.addr(),
            },
        ))
    }
}

/// Unlocks a temporarily locked range when dropped.
#[derive(Debug)]
pub struct LockGuard {
    table: Arc<PinnedTable>,
    host: usize,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Err(e) = self.table.unlock(self.host) {
            log::error!("unlocking host range {:#x}: {e}", self.host);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare size as a table entry (the agent address plays no part).
    impl Extent for usize {
        fn extent(&self) -> usize {
            *self
        }
    }

    #[test]
    fn containment_requires_the_whole_range() {
        let mut m = BTreeMap::new();
        m.insert(0x1000, 0x100usize);
        assert_eq!(containing(&m, 0x1010, 0x10).map(|(s, _)| s), Some(0x1000));
        assert_eq!(containing(&m, 0x1000, 0x100).map(|(s, _)| s), Some(0x1000));
        assert!(containing(&m, 0x10f0, 0x20).is_none());
        assert!(containing(&m, 0x0fff, 1).is_none());
        assert!(containing(&m, 0x1100, 1).is_none());
    }
}
