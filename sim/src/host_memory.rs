//! Host memory as kernels see it with XNACK on (`HSA_XNACK=1`): every page the
//! process maps, with the access its mapping allows.
//!
//! On an MI250X with XNACK enabled (and on an MI300A always) the GPU shares the
//! process's page tables through the kernel driver's SVM support (HMM): a kernel may
//! load, store and atomically update any host address the process maps, and an
//! access to an address that is not mapped, or not with the access asked, is a GPU
//! memory fault (LLVM's `AMDGPUUsage.rst`, "Target Features", `xnack`; ROCm's
//! `hsa_ext_amd.h`, `HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT`). The virtual
//! device models this behind [`isa::GlobalMemory`], so the ISA engine knows nothing
//! of it: [`crate::memory::AgentMemory`] asks [`HostMaps::region`] for an address
//! outside every pool allocation and locked range, and gets the host mapping holding
//! it as a [`HostMapping`] region (read-only when the mapping is).
//!
//! # How the check is made, and what it costs
//!
//! - **Before an access**: the mappings come from `/proc/self/maps`, cached. A
//!   lookup that misses the cache reads the file again (tens of microseconds for a
//!   few hundred mappings), and the first lookup of each dispatch does too
//!   ([`HostMaps::invalidate`] at every dispatch), so a mapping the host removed or
//!   protected between two kernels is seen by the next one. Only mappings the
//!   process may read are regions; `[vvar]` and `[vsyscall]` never are. A store to a
//!   read-only mapping is refused before it touches anything ([`isa::MemoryRegion::writable`]).
//!   Once a wave holds a region, its accesses run at the speed of device memory:
//!   the same whole-wave paths and compiled runs, no per-access check beyond the
//!   region's bounds.
//! - **While a kernel runs**, the host may unmap memory a wave holds as a region.
//!   The wave's next access to it then faults in the host. [`crate::host_guard`]
//!   catches that fault on the threads that run waves, maps a zero page over the
//!   hole (only where nothing is mapped), lets the access finish against it, and
//!   stops the dispatch with a GPU memory fault naming the address; the pages are
//!   unmapped again before the dispatch reports. Nothing of the host's is ever
//!   written. What it does not cover: a mapping made *narrower* while a kernel runs
//!   (`mprotect` to read-only or `PROT_NONE` under a running store), which faults
//!   in the host as it would on a CPU thread of the program.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use procfs_core::process::{MMPermissions, MMapPath, MemoryMaps};
use procfs_core::FromRead;

/// One host mapping (a line of `/proc/self/maps`) that kernels may read.
#[derive(Debug)]
pub struct HostMapping {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Whether the mapping allows stores.
    pub writable: bool,
}

// SAFETY: a host mapping's device address is its host address. The pointer stays
// valid for `len()` bytes only as long as the host keeps the mapping: an access after
// the host unmapped it faults in the host, and `host_guard` turns that fault into a
// GPU memory fault of the wave's dispatch (see the module doc); accesses are atomic,
// as for every region. Only readable mappings become regions, and stores go only to
// writable ones (`writable`).
unsafe impl isa::MemoryRegion for HostMapping {
    fn device_base(&self) -> u64 {
        self.start
    }
    fn len(&self) -> u64 {
        self.end - self.start
    }
    fn host_ptr(&self) -> *mut u8 {
        self.start as *mut u8
    }
    fn writable(&self) -> bool {
        self.writable
    }
}

/// The process's readable mappings, cached from `/proc/self/maps`.
#[derive(Default)]
pub struct HostMaps {
    /// By start address.
    mappings: RwLock<BTreeMap<u64, Arc<HostMapping>>>,
    /// Set when the cache must be read again before it answers.
    stale: AtomicBool,
}

impl HostMaps {
    /// An empty cache (read on the first lookup).
    pub fn new() -> HostMaps {
        HostMaps {
            mappings: RwLock::new(BTreeMap::new()),
            stale: AtomicBool::new(true),
        }
    }

    /// Makes the next lookup read `/proc/self/maps` again (called at every dispatch:
    /// the host may have changed its mappings since the last one).
    pub fn invalidate(&self) {
        self.stale.store(true, Ordering::Release);
    }

    /// The readable mapping holding byte `addr`, or `None` when the process maps
    /// nothing readable there. Reads `/proc/self/maps` when the cache is stale or
    /// misses.
    pub fn region(&self, addr: u64) -> Option<Arc<HostMapping>> {
        if !self.stale.load(Ordering::Acquire) {
            if let Some(m) = self.cached(addr) {
                return Some(m);
            }
        }
        self.refresh();
        self.cached(addr)
    }

    fn cached(&self, addr: u64) -> Option<Arc<HostMapping>> {
        let map = self.mappings.read();
        let (_, m) = map.range(..=addr).next_back()?;
        (addr < m.end).then(|| m.clone())
    }

    /// Reads the mappings again. Mappings that did not change keep their `Arc`, so
    /// a wave holding one holds the same object.
    fn refresh(&self) {
        let fresh = match read_maps() {
            Ok(m) => m,
            Err(e) => {
                log::warn!("reading /proc/self/maps: {e}; host memory is not reachable");
                Vec::new()
            }
        };
        let mut map = self.mappings.write();
        // Cleared before the read finishes, so an invalidation racing the read wins.
        self.stale.store(false, Ordering::Release);
        let mut next = BTreeMap::new();
        for (start, end, writable) in fresh {
            let same = map
                .get(&start)
                .filter(|m| m.end == end && m.writable == writable)
                .cloned();
            let m = same.unwrap_or_else(|| {
                Arc::new(HostMapping {
                    start,
                    end,
                    writable,
                })
            });
            next.insert(start, m);
        }
        *map = next;
    }
}

/// Whether every byte of `[start, end)` lies in some mapping of the process (of any
/// access), read from `/proc/self/maps` now.
pub fn mapped(start: u64, end: u64) -> bool {
    let Ok(maps) = all_maps() else {
        return false;
    };
    let mut at = start;
    for m in maps
        .0
        .iter()
        .filter(|m| !crate::host_guard::is_placeholder(&m.pathname))
    {
        let (a, b) = m.address;
        if a <= at && at < b {
            at = b;
        }
        if at >= end {
            return true;
        }
    }
    at >= end
}

/// Every mapping of the process, in address order.
///
/// # Errors
/// The I/O or parse error of `/proc/self/maps`.
fn all_maps() -> Result<MemoryMaps, String> {
    let file = std::fs::File::open("/proc/self/maps").map_err(|e| e.to_string())?;
    MemoryMaps::from_read(file).map_err(|e| e.to_string())
}

/// The readable mappings of the process: `(start, end, writable)`, in address order.
///
/// # Errors
/// The I/O or parse error of `/proc/self/maps`.
fn read_maps() -> Result<Vec<(u64, u64, bool)>, String> {
    Ok(all_maps()?
        .0
        .into_iter()
        .filter(|m| m.perms.contains(MMPermissions::READ))
        .filter(|m| !matches!(m.pathname, MMapPath::Vvar | MMapPath::Vsyscall))
        .filter(|m| !crate::host_guard::is_placeholder(&m.pathname))
        .map(|m| {
            (
                m.address.0,
                m.address.1,
                m.perms.contains(MMPermissions::WRITE),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use isa::MemoryRegion;

    fn anon(len: usize, prot: i32) -> u64 {
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        p as u64
    }

    #[test]
    fn mappings_are_found_with_their_access() {
        let maps = HostMaps::new();
        let heap = Box::new([7u64; 4]);
        let h = maps
            .region(heap.as_ptr() as u64)
            .expect("the heap is mapped");
        assert!(h.writable());
        assert!(h.device_base() <= heap.as_ptr() as u64);

        let ro = anon(8192, libc::PROT_READ);
        let r = maps
            .region(ro + 100)
            .expect("a read-only mapping is readable");
        assert!(!r.writable());
        let none = anon(4096, libc::PROT_NONE);
        assert!(maps.region(none).is_none(), "PROT_NONE is not a region");

        // Protected after a lookup: the next dispatch (invalidate) no longer finds it.
        // (mprotect rather than munmap: another test thread may map the hole.)
        let gone = anon(4096, libc::PROT_READ | libc::PROT_WRITE);
        assert!(maps.region(gone).is_some());
        // SAFETY: our own mapping.
        assert_eq!(
            unsafe { libc::mprotect(gone as *mut _, 4096, libc::PROT_NONE) },
            0
        );
        assert!(maps.region(gone).is_some(), "cached until invalidated");
        maps.invalidate();
        assert!(maps.region(gone).is_none());
        // SAFETY: our own mappings, unmapped once.
        unsafe {
            libc::munmap(gone as *mut _, 4096);
            libc::munmap(ro as *mut _, 8192);
            libc::munmap(none as *mut _, 4096);
        }
        assert!(maps.region(0).is_none());
    }
}
