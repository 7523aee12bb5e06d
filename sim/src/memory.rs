//! Memory pools, allocations and locked host ranges of the virtual platform
//! (`hsa_amd_memory_pool_*`, `hsa_amd_memory_lock` in `hsa/hsa_ext_amd.h`; the
//! pools ROCr 5.2 exposes: `src/core/runtime/amd_memory_region.cpp`).
//!
//! The virtual device shares the host's address space: a device address *is*
//! the host address of the bytes behind it. What makes device memory device
//! memory is bookkeeping: every allocation records its pool, its owner agent
//! and the agents allowed to access it, and kernels reach memory only through
//! [`AgentMemory`], which refuses any address outside an allocation (or a
//! locked range) their agent may use. A refused access is a GPU memory fault.

use crate::error::{SimError, SimResult};
use crate::host_memory::{HostMapping, HostMaps};
use crate::svm::SvmAttributes;
use hsa_sys::*;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Handle tag of memory pools.
pub const POOL_TAG: u8 = 0x50;

/// Bytes of one page: the pools' allocation granule and alignment.
pub const PAGE: u64 = 4096;
/// Size of a transparent huge page on x86-64 Linux: allocations at least this
/// large ask the kernel to back them with huge pages, as a GPU maps VRAM with
/// large fragments (fewer TLB misses for random and streaming access alike).
const HUGE_PAGE: u64 = 2 << 20;

/// Device-memory allocations of at least this many bytes get a fixed place
/// ([`placement_window`]): the size of the blocks LLVM 16's record/replay
/// reserves (whole GiB, `RecordReplayTy::preallocateDeviceMemory` in
/// `openmp/libomptarget/plugins-nextgen/common/PluginInterface/PluginInterface.cpp`).
pub const PLACED_MIN: u64 = 1 << 30;
/// First address of GPU 0's placement window: far below the mmap area and
/// above any heap or executable mapping of an x86-64 process.
const WINDOW_BASE: u64 = 0x1000_0000_0000;
/// Address space each GPU's window spans at least.
const WINDOW_STRIDE: u64 = 1 << 40;

/// The window `[start, end)` where large device-memory allocations of GPU
/// agent `agent` (its index among all agents) are placed, for a pool of
/// `pool_size` bytes.
///
/// A GPU's virtual address allocator is deterministic: the same program
/// gets the same device addresses run after run, and LLVM 16's kernel
/// record/replay relies on it (the recorded memory holds device pointers
/// into the block it reserved, and the replay reserves the block again,
/// with no address hint, expecting the same place). Host `mmap` places
/// memory at random (ASLR), so the virtual device places blocks of at
/// least [`PLACED_MIN`] bytes itself: first fit in this window, 2 MiB
/// aligned ([`MemoryMap::first_fit`]).
pub fn placement_window(agent: usize, pool_size: u64) -> (u64, u64) {
    let stride = pool_size
        .div_ceil(WINDOW_STRIDE)
        .max(1)
        .saturating_mul(WINDOW_STRIDE);
    let start = WINDOW_BASE.saturating_add(stride.saturating_mul(agent as u64));
    (start, start.saturating_add(stride))
}

/// A memory pool of one agent.
#[derive(Debug)]
pub struct Pool {
    /// Index in the runtime's pool list.
    pub index: usize,
    /// Index of the owning agent.
    pub agent: usize,
    /// `hsa_amd_segment_t`.
    pub segment: u32,
    /// `hsa_amd_memory_pool_global_flag_t` bits (0 for non-global pools).
    pub global_flags: u32,
    /// Size of the pool in bytes.
    pub size: u64,
    /// Whether `hsa_amd_memory_pool_allocate` may allocate from it.
    pub alloc_allowed: bool,
    /// Whether every agent may access its memory without `allow_access`.
    pub accessible_by_all: bool,
    /// Bytes currently allocated from the pool (rounded to pages).
    pub used: AtomicU64,
}

impl Pool {
    /// The pool's handle.
    pub fn handle(&self) -> u64 {
        (u64::from(POOL_TAG) << 56) | (self.index as u64 + 1)
    }

    /// Whether this is a GPU's coarse-grained device memory pool.
    pub fn is_device_memory(&self) -> bool {
        self.segment == HSA_AMD_SEGMENT_GLOBAL
            && self.global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED != 0
    }
}

/// Pool index of a pool handle, if it has the pool tag.
pub fn pool_index(handle: u64) -> Option<usize> {
    if (handle >> 56) as u8 != POOL_TAG
        || handle & 0xffff_ffff == 0
        || (handle >> 32) & 0xff_ffff != 0
    {
        return None;
    }
    Some((handle & 0xffff_ffff) as usize - 1)
}

/// What an allocation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocKind {
    /// Allocated by a client from pool `0`.
    Pool(usize),
    /// Runtime-internal memory of an agent (queue rings, code object bytes handed
    /// to the runtime).
    Internal,
    /// The loaded segments of a code object ([`crate::executable::Executable::load`]):
    /// waves of the agents allowed to access it may run code from it.
    Code,
}

/// One allocation: page-aligned, zero-filled anonymous memory.
pub struct Allocation {
    /// Device (= host) address of the first byte.
    pub base: u64,
    /// Size in bytes (a multiple of [`PAGE`]).
    pub size: u64,
    /// Pool or internal.
    pub kind: AllocKind,
    /// Owning agent index.
    pub owner: usize,
    /// Bit i set: agent i may access the memory.
    access: AtomicU64,
    map: Mapping,
}

/// The host mapping behind an allocation.
enum Mapping {
    /// Placed by the kernel (memmap2).
    Anywhere(memmap2::MmapRaw),
    /// Placed at an address of our choosing ([`Allocation::new_at`]).
    Placed(PlacedMap),
}

/// An anonymous mapping made with `MAP_FIXED_NOREPLACE`, unmapped on drop.
struct PlacedMap {
    base: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; who may touch it
// is ruled by the allocation's users, as for a memmap2 mapping.
unsafe impl Send for PlacedMap {}
// SAFETY: as above.
unsafe impl Sync for PlacedMap {}

impl PlacedMap {
    /// Maps `len` zeroed bytes (`len` a multiple of [`PAGE`]) at exactly
    /// `addr`, or returns the OS error (EEXIST when anything is mapped there).
    fn new(addr: u64, len: usize) -> std::io::Result<PlacedMap> {
        // SAFETY: MAP_FIXED_NOREPLACE only maps where nothing is mapped (the
        // kernel refuses with EEXIST otherwise), so no memory of the process
        // is replaced; the result is checked before use.
        let p = unsafe {
            libc::mmap(
                addr as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let placed = PlacedMap {
            base: std::ptr::NonNull::new(p.cast())
                .ok_or_else(|| std::io::Error::other("mmap returned NULL"))?,
            len,
        };
        // Kernels before 4.17 ignore MAP_FIXED_NOREPLACE and treat the
        // address as a hint: a mapping elsewhere is given back.
        if p as u64 != addr {
            return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
        }
        Ok(placed)
    }
}

impl Drop for PlacedMap {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `PlacedMap::new` with this base and
        // length and is owned by this value alone.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Allocation({:#x}+{:#x}, {:?}, owner {})",
            self.base, self.size, self.kind, self.owner
        )
    }
}

impl Allocation {
    /// Maps `size` bytes (rounded up to a page) of zeroed memory.
    ///
    /// Errors: `OutOfResources` when the host refuses the mapping.
    pub fn new(
        size: u64,
        kind: AllocKind,
        owner: usize,
        access_mask: u64,
    ) -> SimResult<Arc<Allocation>> {
        Allocation::new_at(size, kind, owner, access_mask, None)
    }

    /// [`Allocation::new`], at exactly `place` when given and free; anywhere
    /// (as [`Allocation::new`]) when something is already mapped there.
    ///
    /// Errors: `OutOfResources` when the host refuses the mapping.
    pub fn new_at(
        size: u64,
        kind: AllocKind,
        owner: usize,
        access_mask: u64,
        place: Option<u64>,
    ) -> SimResult<Arc<Allocation>> {
        let rounded = size
            .checked_add(PAGE - 1)
            .map(|s| s & !(PAGE - 1))
            .filter(|&s| s > 0 && s <= isize::MAX as u64)
            .ok_or_else(|| SimError::InvalidAllocation(format!("size {size} does not fit")))?;
        let placed = place.and_then(|addr| match PlacedMap::new(addr, rounded as usize) {
            Ok(m) => Some(m),
            Err(e) => {
                log::debug!("placing {rounded} bytes at {addr:#x}: {e}; placing them anywhere");
                None
            }
        });
        let map = match placed {
            Some(m) => Mapping::Placed(m),
            None => {
                // MAP_NORESERVE: like VRAM, device memory is address space first; pages
                // are committed on first touch, so a large, sparsely used allocation fits.
                let map = memmap2::MmapOptions::new()
                    .len(rounded as usize)
                    .no_reserve_swap()
                    .map_anon()
                    .map_err(|e| {
                        SimError::OutOfResources(format!("mapping {rounded} bytes: {e}"))
                    })?;
                Mapping::Anywhere(memmap2::MmapRaw::from(map))
            }
        };
        let base = match &map {
            Mapping::Anywhere(m) => m.as_mut_ptr() as u64,
            Mapping::Placed(m) => m.base.as_ptr() as u64,
        };
        if rounded >= HUGE_PAGE {
            // Advisory only: without transparent huge pages the memory works the same.
            let advised = match &map {
                Mapping::Anywhere(m) => m.advise(memmap2::Advice::HugePage),
                // SAFETY: advice on our own mapping, which stays mapped.
                Mapping::Placed(m) => match unsafe {
                    libc::madvise(m.base.as_ptr().cast(), m.len, libc::MADV_HUGEPAGE)
                } {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                },
            };
            if let Err(e) = advised {
                log::debug!("madvise(MADV_HUGEPAGE) on {rounded} bytes: {e}");
            }
        }
        Ok(Arc::new(Allocation {
            base,
            size: rounded,
            kind,
            owner,
            access: AtomicU64::new(access_mask | (1u64 << owner)),
            map,
        }))
    }

    /// Host pointer to the first byte.
    pub fn ptr(&self) -> *mut u8 {
        match &self.map {
            Mapping::Anywhere(m) => m.as_mut_ptr(),
            Mapping::Placed(m) => m.base.as_ptr(),
        }
    }

    /// Whether agent `agent` may access this allocation.
    pub fn accessible_by(&self, agent: usize) -> bool {
        agent < 64 && self.access.load(Ordering::Acquire) & (1u64 << agent) != 0
    }

    /// Lets the agents in `mask` access the allocation.
    pub fn allow(&self, mask: u64) {
        self.access.fetch_or(mask, Ordering::AcqRel);
    }

    /// Bit mask of the agents that may access the allocation.
    pub fn access_mask(&self) -> u64 {
        self.access.load(Ordering::Acquire)
    }

    /// Whether `[addr, addr + len)` lies inside the allocation.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.base
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= self.base + self.size)
    }
}

// SAFETY: the mapping is owned by the allocation and stays mapped, at the same
// address, for the allocation's whole lifetime; base == host_ptr, page aligned.
unsafe impl isa::MemoryRegion for Allocation {
    fn device_base(&self) -> u64 {
        self.base
    }
    fn len(&self) -> u64 {
        self.size
    }
    fn host_ptr(&self) -> *mut u8 {
        self.ptr()
    }
}

/// Host memory pinned with `hsa_amd_memory_lock`.
#[derive(Debug)]
pub struct LockedRange {
    /// First byte of the locked range (the pointer given to lock).
    pub base: u64,
    /// Bytes locked.
    pub size: u64,
    /// Agents that may access it.
    pub agents_mask: u64,
}

// SAFETY: the client that locked the range guarantees the host memory stays
// allocated until it unlocks it (hsa_amd_memory_lock's contract); device
// address == host address.
unsafe impl isa::MemoryRegion for LockedRange {
    fn device_base(&self) -> u64 {
        self.base
    }
    fn len(&self) -> u64 {
        self.size
    }
    fn host_ptr(&self) -> *mut u8 {
        self.base as *mut u8
    }
}

struct LockEntry {
    range: Arc<LockedRange>,
    count: u32,
}

/// Where a host-side pointer range lives.
#[derive(Clone)]
pub enum Resolved {
    /// Inside a pool or internal allocation.
    Allocation(Arc<Allocation>),
    /// Inside a locked host range.
    Locked(Arc<LockedRange>),
}

impl Resolved {
    /// The region, kept alive while this value lives.
    pub fn region(&self) -> Arc<dyn isa::MemoryRegion> {
        match self {
            Resolved::Allocation(a) => a.clone(),
            Resolved::Locked(l) => l.clone(),
        }
    }
}

/// Every allocation and locked range of the platform.
#[derive(Default)]
pub struct MemoryMap {
    allocations: RwLock<BTreeMap<u64, Arc<Allocation>>>,
    locked: RwLock<BTreeMap<u64, LockEntry>>,
}

impl MemoryMap {
    /// An empty map.
    pub fn new() -> MemoryMap {
        MemoryMap::default()
    }

    /// Records an allocation.
    pub fn insert(&self, alloc: Arc<Allocation>) {
        self.allocations.write().insert(alloc.base, alloc);
    }

    /// Removes the allocation whose base is exactly `base`.
    pub fn remove(&self, base: u64) -> Option<Arc<Allocation>> {
        self.allocations.write().remove(&base)
    }

    /// The allocation whose base is exactly `base`.
    pub fn by_base(&self, base: u64) -> Option<Arc<Allocation>> {
        self.allocations.read().get(&base).cloned()
    }

    /// The lowest `align`-aligned address `a` in `[start, end)` such that
    /// `[a, a + size)` ends by `end` and overlaps no allocation of the map;
    /// `None` when no gap is large enough. `align` is a power of two.
    pub fn first_fit(&self, start: u64, end: u64, size: u64, align: u64) -> Option<u64> {
        let up = |a: u64| a.checked_add(align - 1).map(|a| a & !(align - 1));
        let map = self.allocations.read();
        let mut cursor = up(start)?;
        // An allocation starting below the window may reach into it.
        if let Some((_, a)) = map.range(..start).next_back() {
            cursor = cursor.max(up(a.base + a.size)?);
        }
        for (_, a) in map.range(start..end) {
            if cursor.checked_add(size)? <= a.base {
                break;
            }
            cursor = cursor.max(up(a.base + a.size)?);
        }
        (cursor.checked_add(size)? <= end).then_some(cursor)
    }

    /// The allocation containing byte `addr`.
    pub fn allocation_containing(&self, addr: u64) -> Option<Arc<Allocation>> {
        let map = self.allocations.read();
        let (_, a) = map.range(..=addr).next_back()?;
        a.contains(addr, 1).then(|| a.clone())
    }

    /// The locked range containing `[addr, addr+len)` (the first by base).
    pub fn locked_containing(&self, addr: u64, len: u64) -> Option<Arc<LockedRange>> {
        let locked = self.locked.read();
        locked
            .range(..=addr)
            .rev()
            .map(|(_, e)| &e.range)
            .find(|r| {
                addr >= r.base
                    && addr
                        .checked_add(len)
                        .is_some_and(|end| end <= r.base + r.size)
            })
            .cloned()
    }

    /// Where `[addr, addr + len)` lives, if it is wholly inside one
    /// allocation or one locked range.
    pub fn resolve(&self, addr: u64, len: u64) -> Option<Resolved> {
        if let Some(a) = self.allocation_containing(addr) {
            if a.contains(addr, len.max(1)) {
                return Some(Resolved::Allocation(a));
            }
        }
        self.locked_containing(addr, len.max(1))
            .map(Resolved::Locked)
    }

    /// Pins `[host, host+size)` for the agents in `mask` (hsa_amd_memory_lock).
    /// Locking the same base again counts a reference (and widens the range
    /// and the agent set).
    pub fn lock(&self, host: u64, size: u64, mask: u64) {
        let mut locked = self.locked.write();
        match locked.get_mut(&host) {
            Some(e) => {
                e.count += 1;
                if e.range.size < size || e.range.agents_mask | mask != e.range.agents_mask {
                    e.range = Arc::new(LockedRange {
                        base: host,
                        size: e.range.size.max(size),
                        agents_mask: e.range.agents_mask | mask,
                    });
                }
            }
            None => {
                locked.insert(
                    host,
                    LockEntry {
                        range: Arc::new(LockedRange {
                            base: host,
                            size,
                            agents_mask: mask,
                        }),
                        count: 1,
                    },
                );
            }
        }
    }

    /// Drops one reference on the lock at `host`; true if it was locked.
    pub fn unlock(&self, host: u64) -> bool {
        let mut locked = self.locked.write();
        match locked.get_mut(&host) {
            Some(e) if e.count > 1 => {
                e.count -= 1;
                true
            }
            Some(_) => {
                locked.remove(&host);
                true
            }
            None => false,
        }
    }

    /// The addresses around `addr` that no allocation covers: from the end of the
    /// last allocation before it to the base of the first one after it. `None` if
    /// an allocation contains `addr`.
    pub fn gap_around(&self, addr: u64) -> Option<(u64, u64)> {
        let map = self.allocations.read();
        let low = match map.range(..=addr).next_back() {
            Some((_, a)) if a.contains(addr, 1) => return None,
            Some((_, a)) => a.base + a.size,
            None => 0,
        };
        let high = map
            .range(addr.saturating_add(1)..)
            .next()
            .map_or(u64::MAX, |(&b, _)| b);
        Some((low, high))
    }

    /// Every allocation (for teardown and diagnostics).
    pub fn all_allocations(&self) -> Vec<Arc<Allocation>> {
        self.allocations.read().values().cloned().collect()
    }

    /// Forgets every allocation and lock.
    pub fn clear(&self) {
        self.allocations.write().clear();
        self.locked.write().clear();
    }
}

/// The global memory as one agent's kernels see it: the [`isa::GlobalMemory`]
/// the dispatcher gives to waves.
///
/// An address inside an allocation is reachable when the allocation allows the
/// agent; inside a locked range when the lock names it. Any other address the
/// process maps is reachable too where [`HostAccess`] allows it (XNACK on, or an
/// SVM access attribute), as the part of its host mapping that no allocation
/// covers ([`crate::host_memory`]).
pub struct AgentMemory {
    /// The platform's memory map.
    pub map: Arc<MemoryMap>,
    /// The agent whose view this is.
    pub agent: usize,
    /// Host memory outside allocations and locks (`None`: never reachable).
    pub host: Option<HostAccess>,
}

/// What decides whether a kernel reaches host memory outside allocations and locks.
pub struct HostAccess {
    /// The process's mappings.
    pub maps: Arc<HostMaps>,
    /// The SVM attributes set by the client.
    pub svm: Arc<SvmAttributes>,
    /// XNACK on: every range is reachable unless an attribute denies it.
    pub by_default: bool,
    /// The agent's handle (as SVM access attributes name it).
    pub agent_handle: u64,
}

impl HostAccess {
    /// The reachable part of the host mapping holding `addr`, inside `[low, high)`
    /// (the gap between allocations around it).
    fn region(&self, addr: u64, low: u64, high: u64) -> Option<Arc<HostMapping>> {
        let svm = self.svm.any_access();
        if !self.by_default && !svm {
            return None;
        }
        let (low, high) = if svm {
            if !crate::svm::reachable(&self.svm, self.by_default, self.agent_handle, addr) {
                return None;
            }
            self.svm.access_span(self.agent_handle, addr, low, high)
        } else {
            (low, high)
        };
        let host = self.maps.region(addr)?;
        if low <= host.start && host.end <= high {
            return Some(host);
        }
        Some(Arc::new(HostMapping {
            start: host.start.max(low),
            end: host.end.min(high),
            writable: host.writable,
        }))
    }
}

impl isa::GlobalMemory for AgentMemory {
    fn region(&self, addr: u64) -> Option<Arc<dyn isa::MemoryRegion>> {
        if let Some(a) = self.map.allocation_containing(addr) {
            if a.accessible_by(self.agent) {
                return Some(a);
            }
            return None;
        }
        if let Some(r) = self.map.locked_containing(addr, 1) {
            if self.agent < 64 && r.agents_mask & (1u64 << self.agent) != 0 {
                return Some(r);
            }
        }
        let host = self.host.as_ref()?;
        // The mapping may run into allocations (the kernel merges neighbouring
        // anonymous mappings): the region stops at them, so that their own access
        // rules keep deciding.
        let (low, high) = self.map.gap_around(addr)?;
        Some(host.region(addr, low, high)?)
    }

    /// A loaded code object ([`AllocKind::Code`]) that this agent may access:
    /// hardware fetches instructions from any address the agent maps, and the
    /// virtual device from the code objects loaded for it, so that a jump anywhere
    /// else is still a clean fault.
    fn code_region(&self, pc: u64) -> Option<Arc<dyn isa::MemoryRegion>> {
        let a = self.map.allocation_containing(pc)?;
        (a.kind == AllocKind::Code && a.accessible_by(self.agent)).then_some(a as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use isa::GlobalMemory;

    #[test]
    fn agent_view_honours_access_rights() {
        let map = Arc::new(MemoryMap::new());
        let host = Allocation::new(100, AllocKind::Pool(0), 0, 0).unwrap();
        assert_eq!(host.size, PAGE);
        map.insert(host.clone());
        let gpu = AgentMemory {
            map: map.clone(),
            agent: 1,
            host: None,
        };
        assert!(
            gpu.region(host.base + 8).is_none(),
            "host pool memory needs allow_access first"
        );
        host.allow(1 << 1);
        let r = gpu.region(host.base + 8).expect("allowed now");
        assert_eq!(r.device_base(), host.base);
        assert!(
            gpu.region(host.base + PAGE).is_none()
                || map.allocation_containing(host.base + PAGE).is_some()
        );
        let buf = vec![0u8; 256];
        let p = buf.as_ptr() as u64;
        assert!(gpu.region(p).is_none());
        map.lock(p, 256, 1 << 1);
        map.lock(p, 256, 1 << 1);
        assert!(gpu.region(p + 255).is_some());
        assert!(map.unlock(p));
        assert!(gpu.region(p).is_some(), "two locks need two unlocks");
        assert!(map.unlock(p));
        assert!(gpu.region(p).is_none());
        assert!(!map.unlock(p));
    }

    #[test]
    fn large_blocks_are_placed_first_fit_in_their_window() {
        let map = MemoryMap::new();
        // Agent 7's window: away from what other tests of this process place.
        let (start, end) = placement_window(7, 64 << 30);
        assert_eq!(end - start, 1 << 40);
        assert_eq!(map.first_fit(start, end, 3 << 30, 2 << 20), Some(start));
        let place = |size: u64| {
            let at = map.first_fit(start, end, size, 2 << 20).unwrap();
            let a = Allocation::new_at(size, AllocKind::Pool(0), 0, 0, Some(at)).unwrap();
            assert_eq!(a.base, at, "placed where asked");
            map.insert(a.clone());
            a
        };
        let a = place(3 << 30);
        let b = place(1 << 30);
        assert_eq!(
            b.base,
            start + (3 << 30),
            "the next fit follows the first block"
        );
        // A freed block's place is found again: the same sequence, the same addresses.
        map.remove(a.base);
        drop(a);
        assert_eq!(map.first_fit(start, end, 2 << 30, 2 << 20), Some(start));
        // A 4 GiB block does not fit the 3 GiB hole: it goes after `b`.
        assert_eq!(
            map.first_fit(start, end, 4 << 30, 2 << 20),
            Some(start + (4 << 30))
        );
        // The memory is usable, zeroed, and given back on drop.
        // SAFETY: `b` is a live mapping of at least one page.
        unsafe {
            assert_eq!(*b.ptr(), 0);
            *b.ptr() = 7;
            assert_eq!(*b.ptr(), 7);
        }
        // Something already mapped there: the allocation goes anywhere else.
        let elsewhere = Allocation::new_at(PAGE, AllocKind::Pool(0), 0, 0, Some(b.base)).unwrap();
        assert_ne!(elsewhere.base, b.base);
        assert_eq!(map.first_fit(start, end, 1 << 41, 2 << 20), None);
    }
}
