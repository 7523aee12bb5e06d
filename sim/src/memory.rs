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
//!
//! # Freed pool memory stays reserved
//!
//! The address range of a freed pool allocation is never given back to the
//! host: its mapping is replaced, in one `mmap(MAP_FIXED)`, by an inaccessible
//! (`PROT_NONE`, `MAP_NORESERVE`) reservation that [`MemoryMap`] records, and
//! only a later pool allocation of the runtime maps memory there again
//! ([`MemoryMap::allocate_pool`]). If the range were unmapped, the next host
//! `mmap` of the process (a thread's stack or signal stack, a `malloc` arena)
//! could land on it, and a copy through a dangling device pointer would then
//! write into that memory instead of failing. ROCr keeps device addresses apart
//! the same way: libhsakmt reserves the GPU virtual address apertures once and
//! recycles freed ranges itself. So a copy touching freed pool memory fails with
//! `INVALID_ALLOCATION` every time ([`MemoryMap::freed_overlapping`]), and a
//! kernel reaching for it faults. The cost is address space only: the pages go
//! back to the kernel at free, a reservation is one `/proc/self/maps` entry
//! (neighbours merge), and reservations are reused (best fit), so their total
//! stays within the peak of pool memory in use plus fragmentation; they are
//! unmapped when the runtime shuts down.

use crate::error::{SimError, SimResult};
use crate::host_memory::{HostMapping, HostMaps};
use crate::svm::SvmAttributes;
use hsa_sys::*;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

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
    /// Placed by the kernel (memmap2), unmapped on drop.
    Anywhere(memmap2::MmapRaw),
    /// Made by this module with `mmap` ([`RawMap`]): placed at an address of our
    /// choosing ([`Allocation::new_at`]), or pool memory ([`MemoryMap::allocate_pool`]).
    Raw(RawMap),
}

/// An anonymous read-write mapping made by this module, released on drop as
/// `release` says.
struct RawMap {
    base: std::ptr::NonNull<u8>,
    len: usize,
    release: Release,
}

/// What becomes of a [`RawMap`]'s address range when it is dropped.
enum Release {
    /// `munmap`: the range goes back to the kernel.
    Unmap,
    /// Replaced by a `PROT_NONE` reservation recorded in `freed` (while the
    /// runtime that owns `freed` lives; unmapped otherwise). `placed`: the
    /// range is in a placement window ([`placement_window`]), so only placement
    /// reuses it.
    Reserve { freed: Weak<Freed>, placed: bool },
}

// SAFETY: the mapping is plain memory owned by this value; who may touch it
// is ruled by the allocation's users, as for a memmap2 mapping.
unsafe impl Send for RawMap {}
// SAFETY: as above.
unsafe impl Sync for RawMap {}

/// `mmap` of `len` bytes (a multiple of [`PAGE`]) of private anonymous
/// `MAP_NORESERVE` memory with protection `prot`, at `addr` as `flags` (0,
/// `MAP_FIXED_NOREPLACE` or `MAP_FIXED`) say; the address mapped.
///
/// # Safety
/// With `MAP_FIXED` in `flags`, every page of `[addr, addr + len)` that is
/// mapped must belong to the caller alone (this module's reservations and
/// mappings), since the kernel replaces whatever is there.
unsafe fn map_anon(
    addr: u64,
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
) -> std::io::Result<u64> {
    // SAFETY: anonymous memory; without MAP_FIXED nothing mapped is touched
    // (MAP_FIXED_NOREPLACE fails with EEXIST instead), with it the caller owns
    // the range (this function's contract).
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p as u64)
}

/// `munmap` of `[addr, addr + len)`.
///
/// # Safety
/// The range must be this module's alone (a reservation or a mapping no
/// allocation uses any more).
unsafe fn unmap(addr: u64, len: usize) {
    // SAFETY: the caller owns the range (this function's contract).
    if unsafe { libc::munmap(addr as *mut libc::c_void, len) } != 0 {
        log::warn!(
            "munmap({addr:#x}, {len:#x}): {}",
            std::io::Error::last_os_error()
        );
    }
}

impl RawMap {
    /// Wraps the read-write mapping `[base, base + len)` this module just made.
    fn made(base: u64, len: usize, release: Release) -> std::io::Result<RawMap> {
        let base = std::ptr::NonNull::new(base as *mut u8)
            .ok_or_else(|| std::io::Error::other("mmap returned NULL"))?;
        Ok(RawMap { base, len, release })
    }

    /// Maps `len` zeroed bytes (`len` a multiple of [`PAGE`]) anywhere.
    fn anywhere(len: usize, release: Release) -> std::io::Result<RawMap> {
        // SAFETY: no MAP_FIXED: the kernel picks a free range.
        let p = unsafe { map_anon(0, len, libc::PROT_READ | libc::PROT_WRITE, 0)? };
        RawMap::made(p, len, release)
    }

    /// Maps `len` zeroed bytes (`len` a multiple of [`PAGE`]) at exactly
    /// `addr`, or returns the OS error (EEXIST when anything is mapped there).
    fn placed(addr: u64, len: usize) -> std::io::Result<RawMap> {
        // SAFETY: MAP_FIXED_NOREPLACE only maps where nothing is mapped (the
        // kernel refuses with EEXIST otherwise), so no memory of the process
        // is replaced.
        let p = unsafe {
            map_anon(
                addr,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_FIXED_NOREPLACE,
            )?
        };
        let placed = RawMap::made(p, len, Release::Unmap)?;
        // Kernels before 4.17 ignore MAP_FIXED_NOREPLACE and treat the
        // address as a hint: a mapping elsewhere is given back.
        if p != addr {
            return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
        }
        Ok(placed)
    }
}

impl Drop for RawMap {
    fn drop(&mut self) {
        let base = self.base.as_ptr() as u64;
        if let Release::Reserve { freed, placed } = &self.release {
            if let Some(freed) = freed.upgrade() {
                if freed.reserve(base, self.len, *placed) {
                    return;
                }
            }
        }
        // SAFETY: the mapping was made by this module with this base and
        // length and is owned by this value alone.
        unsafe { unmap(base, self.len) };
    }
}

/// Address ranges as `base -> end`, disjoint, neighbours merged.
#[derive(Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    /// Adds `[base, end)` (disjoint from every range held), merged with its
    /// neighbours.
    fn add(&mut self, mut base: u64, mut end: u64) {
        if let Some((&b, &e)) = self.0.range(..base).next_back() {
            if e == base {
                self.0.remove(&b);
                base = b;
            }
        }
        if let Some(e) = self.0.remove(&end) {
            end = e;
        }
        self.0.insert(base, end);
    }

    /// Removes `[base, end)` from the ranges held (parts not held are ignored).
    fn cut(&mut self, base: u64, end: u64) {
        let hit: Vec<(u64, u64)> = self
            .0
            .range(..end)
            .rev()
            .take_while(|&(_, &e)| e > base)
            .map(|(&b, &e)| (b, e))
            .collect();
        for (b, e) in hit {
            self.0.remove(&b);
            if b < base {
                self.0.insert(b, base);
            }
            if e > end {
                self.0.insert(end, e);
            }
        }
    }

    /// The first range held that overlaps `[base, end)`.
    fn overlapping(&self, base: u64, end: u64) -> Option<(u64, u64)> {
        if let Some((&b, &e)) = self.0.range(..=base).next_back() {
            if e > base {
                return Some((b, e));
            }
        }
        self.0.range(base..end).next().map(|(&b, &e)| (b, e))
    }

    /// The parts of `[base, end)` no range held covers, in address order.
    fn uncovered(&self, base: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = base;
        let first = self
            .0
            .range(..=base)
            .next_back()
            .filter(|&(_, &e)| e > base)
            .map(|(&b, &e)| (b, e));
        for (b, e) in first.into_iter().chain(
            self.0
                .range(base.saturating_add(1)..end)
                .map(|(&b, &e)| (b, e)),
        ) {
            if b > at {
                out.push((at, b));
            }
            at = at.max(e);
        }
        if at < end {
            out.push((at, end));
        }
        out
    }

    /// The smallest range of at least `len` bytes (the lowest among equals).
    fn best_fit(&self, len: u64) -> Option<u64> {
        self.0
            .iter()
            .filter(|&(&b, &e)| e - b >= len)
            .min_by_key(|&(&b, &e)| (e - b, b))
            .map(|(&b, _)| b)
    }

    /// The highest end at or below `addr`, and the lowest base above it,
    /// among the ranges that do not contain `addr`; `None` if one contains it.
    fn around(&self, addr: u64) -> Option<(Option<u64>, Option<u64>)> {
        let below = match self.0.range(..=addr).next_back() {
            Some((_, &e)) if e > addr => return None,
            Some((_, &e)) => Some(e),
            None => None,
        };
        let above = self
            .0
            .range(addr.saturating_add(1)..)
            .next()
            .map(|(&b, _)| b);
        Some((below, above))
    }
}

/// The address ranges of freed pool allocations (module doc, "Freed pool
/// memory stays reserved").
#[derive(Default)]
pub struct Freed {
    inner: Mutex<FreedInner>,
}

#[derive(Default)]
struct FreedInner {
    /// The runtime shut down: reservations are no longer made, and those held
    /// were unmapped.
    closed: bool,
    /// Freed by the client but still mapped: something (a queued async copy, a
    /// running kernel) holds the allocation; it becomes a reservation when
    /// the last holder lets go.
    retired: Ranges,
    /// `PROT_NONE` reservations that any pool allocation may reuse.
    holes: Ranges,
    /// `PROT_NONE` reservations inside placement windows, reused by placement only.
    placed_holes: Ranges,
}

impl FreedInner {
    /// The parts of `[base, end)` that no reservation covers.
    fn unreserved(&self, base: u64, end: u64) -> Vec<(u64, u64)> {
        self.holes
            .uncovered(base, end)
            .into_iter()
            .flat_map(|(b, e)| self.placed_holes.uncovered(b, e))
            .collect()
    }

    /// The first freed range (retired or reserved) overlapping `[base, end)`.
    fn overlapping(&self, base: u64, end: u64) -> Option<(u64, u64)> {
        [&self.retired, &self.holes, &self.placed_holes]
            .into_iter()
            .filter_map(|r| r.overlapping(base, end))
            .min()
    }
}

impl Freed {
    /// Replaces the mapping `[base, base + len)`, which the caller owns and
    /// lets go of, by a reservation; false (nothing done) after shut-down or
    /// when the kernel refuses.
    fn reserve(&self, base: u64, len: usize, placed: bool) -> bool {
        let mut inner = self.inner.lock();
        let end = base + len as u64;
        inner.retired.cut(base, end);
        if inner.closed {
            return false;
        }
        // SAFETY: the caller owns the mapping of the whole range (a RawMap
        // being dropped): it is replaced in one call, so no other mapping of
        // the process can slip in between.
        match unsafe { map_anon(base, len, libc::PROT_NONE, libc::MAP_FIXED) } {
            Ok(_) => {
                if placed {
                    inner.placed_holes.add(base, end);
                } else {
                    inner.holes.add(base, end);
                }
                true
            }
            Err(e) => {
                log::warn!("reserving freed memory {base:#x}..{end:#x}: {e}; unmapping it");
                false
            }
        }
    }

    /// Maps `len` zeroed read-write bytes over reservations: at `place` when
    /// given (claiming any part no reservation covers with
    /// `MAP_FIXED_NOREPLACE`; `None` when something else is mapped there),
    /// else in the best-fitting reusable reservation (`None` when none fits).
    fn take(self: &Arc<Freed>, len: u64, place: Option<u64>) -> Option<RawMap> {
        let mut inner = self.inner.lock();
        if inner.closed {
            return None;
        }
        let (base, placed) = match place {
            Some(at) => (at, true),
            None => (inner.holes.best_fit(len)?, false),
        };
        let end = base.checked_add(len)?;
        if placed {
            // Claim what our reservations do not cover, all or nothing.
            let mut claimed = Vec::new();
            let mut all = true;
            for (b, e) in inner.unreserved(base, end) {
                let n = (e - b) as usize;
                // SAFETY: MAP_FIXED_NOREPLACE maps only where nothing is mapped.
                match unsafe { map_anon(b, n, libc::PROT_NONE, libc::MAP_FIXED_NOREPLACE) } {
                    Ok(p) if p == b => claimed.push((b, n)),
                    Ok(p) => {
                        // A kernel before 4.17 took the address as a hint.
                        // SAFETY: the mapping just made, ours alone.
                        unsafe { unmap(p, n) };
                        all = false;
                    }
                    Err(_) => all = false,
                }
                if !all {
                    break;
                }
            }
            if !all {
                for (b, n) in claimed {
                    // SAFETY: claimed just above, ours alone.
                    unsafe { unmap(b, n) };
                }
                return None;
            }
        }
        // The whole range is ours now: reservations, and claims when placed.
        // SAFETY: every page of [base, end) is a reservation of this map or was
        // claimed just above; MAP_FIXED replaces them in one call.
        match unsafe {
            map_anon(
                base,
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_FIXED,
            )
        } {
            Ok(_) => {
                inner.holes.cut(base, end);
                inner.placed_holes.cut(base, end);
                RawMap::made(
                    base,
                    len as usize,
                    Release::Reserve {
                        freed: Arc::downgrade(self),
                        placed,
                    },
                )
                .ok()
            }
            Err(e) => {
                log::warn!("mapping {len:#x} bytes over freed memory at {base:#x}: {e}");
                // Keep the range reserved if the kernel lets us; give it back otherwise.
                // SAFETY: as above, the whole range is ours.
                if unsafe { map_anon(base, len as usize, libc::PROT_NONE, libc::MAP_FIXED) }.is_ok()
                {
                    inner.holes.cut(base, end);
                    inner.placed_holes.cut(base, end);
                    if placed {
                        inner.placed_holes.add(base, end);
                    } else {
                        inner.holes.add(base, end);
                    }
                } else {
                    inner.holes.cut(base, end);
                    inner.placed_holes.cut(base, end);
                    // SAFETY: as above, the whole range is ours.
                    unsafe { unmap(base, len as usize) };
                }
                None
            }
        }
    }

    /// Unmaps every reservation and makes no more (runtime shut-down).
    fn close(&self) {
        let mut inner = self.inner.lock();
        inner.closed = true;
        inner.retired = Ranges::default();
        let holes = std::mem::take(&mut inner.holes.0);
        let placed = std::mem::take(&mut inner.placed_holes.0);
        for (b, e) in holes.into_iter().chain(placed) {
            // SAFETY: our reservation, which no allocation uses.
            unsafe { unmap(b, (e - b) as usize) };
        }
    }
}

impl Drop for Freed {
    fn drop(&mut self) {
        self.close();
    }
}

/// `size` bytes rounded up to whole pages.
///
/// Errors: `InvalidAllocation` when the result is 0 or does not fit an `isize`.
fn round_to_pages(size: u64) -> SimResult<u64> {
    size.checked_add(PAGE - 1)
        .map(|s| s & !(PAGE - 1))
        .filter(|&s| s > 0 && s <= isize::MAX as u64)
        .ok_or_else(|| SimError::InvalidAllocation(format!("size {size} does not fit")))
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
        let rounded = round_to_pages(size)?;
        let placed = place.and_then(|addr| match RawMap::placed(addr, rounded as usize) {
            Ok(m) => Some(m),
            Err(e) => {
                log::debug!("placing {rounded} bytes at {addr:#x}: {e}; placing them anywhere");
                None
            }
        });
        let map = match placed {
            Some(m) => Mapping::Raw(m),
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
        Ok(Allocation::with_map(map, rounded, kind, owner, access_mask))
    }

    /// The allocation of the mapping `map` of `rounded` bytes (its huge-page
    /// advice given).
    fn with_map(
        map: Mapping,
        rounded: u64,
        kind: AllocKind,
        owner: usize,
        access_mask: u64,
    ) -> Arc<Allocation> {
        let base = match &map {
            Mapping::Anywhere(m) => m.as_mut_ptr() as u64,
            Mapping::Raw(m) => m.base.as_ptr() as u64,
        };
        if rounded >= HUGE_PAGE {
            // Advisory only: without transparent huge pages the memory works the same.
            let advised = match &map {
                Mapping::Anywhere(m) => m.advise(memmap2::Advice::HugePage),
                // SAFETY: advice on our own mapping, which stays mapped.
                Mapping::Raw(m) => match unsafe {
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
        Arc::new(Allocation {
            base,
            size: rounded,
            kind,
            owner,
            access: AtomicU64::new(access_mask | (1u64 << owner)),
            map,
        })
    }

    /// Host pointer to the first byte.
    pub fn ptr(&self) -> *mut u8 {
        match &self.map {
            Mapping::Anywhere(m) => m.as_mut_ptr(),
            Mapping::Raw(m) => m.base.as_ptr(),
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

/// Every allocation and locked range of the platform, and the address ranges
/// of freed pool allocations (module doc).
#[derive(Default)]
pub struct MemoryMap {
    allocations: RwLock<BTreeMap<u64, Arc<Allocation>>>,
    locked: RwLock<BTreeMap<u64, LockEntry>>,
    /// Lock order: taken after `allocations` when both are (a mapping dropped
    /// under the allocations lock reserves its range), never before.
    freed: Arc<Freed>,
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

    /// Maps a pool allocation of `size` bytes (rounded up to a page) of zeroed
    /// memory for pool `pool` of agent `owner`, to be recorded with
    /// [`MemoryMap::insert`] and freed with [`MemoryMap::free_pool`]: at exactly
    /// `place` when given and nothing but freed pool memory is there, else over
    /// the best-fitting reservation of freed pool memory, else anywhere. When
    /// the allocation goes, its range stays reserved (module doc).
    ///
    /// Errors: `InvalidAllocation` for a size that does not fit;
    /// `OutOfResources` when the host refuses the mapping.
    pub fn allocate_pool(
        &self,
        size: u64,
        pool: usize,
        owner: usize,
        place: Option<u64>,
    ) -> SimResult<Arc<Allocation>> {
        let rounded = round_to_pages(size)?;
        let map = match place {
            Some(at) => self.freed.take(rounded, Some(at)).or_else(|| {
                log::debug!("placing {rounded} bytes at {at:#x}: the range is in use; placing them anywhere");
                None
            }),
            None => None,
        };
        let map = match map.or_else(|| self.freed.take(rounded, None)) {
            Some(m) => m,
            None => RawMap::anywhere(
                rounded as usize,
                Release::Reserve {
                    freed: Arc::downgrade(&self.freed),
                    placed: false,
                },
            )
            .map_err(|e| SimError::OutOfResources(format!("mapping {rounded} bytes: {e}")))?,
        };
        Ok(Allocation::with_map(
            Mapping::Raw(map),
            rounded,
            AllocKind::Pool(pool),
            owner,
            0,
        ))
    }

    /// Removes the pool allocation whose base is exactly `base`
    /// (`hsa_amd_memory_pool_free`); `None` if no pool allocation starts
    /// there. From then on its range counts as freed
    /// ([`MemoryMap::freed_overlapping`]), also while something still holds
    /// the allocation.
    pub fn free_pool(&self, base: u64) -> Option<Arc<Allocation>> {
        let mut map = self.allocations.write();
        if !matches!(map.get(&base)?.kind, AllocKind::Pool(_)) {
            return None;
        }
        let a = map.remove(&base)?;
        if matches!(
            &a.map,
            Mapping::Raw(RawMap {
                release: Release::Reserve { .. },
                ..
            })
        ) {
            self.freed.inner.lock().retired.add(a.base, a.base + a.size);
        }
        Some(a)
    }

    /// The freed pool memory `[base, end)` that `[addr, addr + len)` touches
    /// (the first such range), if any: memory the runtime gave out and the
    /// client freed, which no allocation holds again yet.
    pub fn freed_overlapping(&self, addr: u64, len: u64) -> Option<(u64, u64)> {
        let end = addr.saturating_add(len.max(1));
        self.freed.inner.lock().overlapping(addr, end)
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

    /// The addresses around `addr` that no allocation and no freed pool memory
    /// covers: from the end of the last allocation or freed range before it to
    /// the base of the first one after it. `None` if an allocation or a freed
    /// range contains `addr`.
    pub fn gap_around(&self, addr: u64) -> Option<(u64, u64)> {
        let (low, high) = {
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
            (low, high)
        };
        let freed = self.freed.inner.lock();
        let (mut low, mut high) = (low, high);
        for r in [&freed.retired, &freed.holes, &freed.placed_holes] {
            let (below, above) = r.around(addr)?;
            low = low.max(below.unwrap_or(0));
            high = high.min(above.unwrap_or(u64::MAX));
        }
        Some((low, high))
    }

    /// Every allocation (for teardown and diagnostics).
    pub fn all_allocations(&self) -> Vec<Arc<Allocation>> {
        self.allocations.read().values().cloned().collect()
    }

    /// Forgets every allocation and lock, and unmaps the reservations of freed
    /// pool memory (runtime shut-down: allocations still held elsewhere are
    /// unmapped when let go).
    pub fn clear(&self) {
        self.freed.close();
        let all = std::mem::take(&mut *self.allocations.write());
        drop(all);
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

    /// The protection of the page at `addr` in `/proc/self/maps` ("rw-p",
    /// "---p"), or `None` when nothing maps it.
    fn protection(addr: u64) -> Option<String> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        maps.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            let (a, b) = f.next()?.split_once('-')?;
            let (a, b) = (
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            );
            (a <= addr && addr < b).then(|| f.next().map(str::to_owned))?
        })
    }

    #[test]
    fn ranges_merge_cut_and_fit() {
        let mut r = Ranges::default();
        r.add(0x1000, 0x2000);
        r.add(0x3000, 0x4000);
        r.add(0x2000, 0x3000);
        assert_eq!(r.0.iter().collect::<Vec<_>>(), [(&0x1000, &0x4000)]);
        r.cut(0x1800, 0x2800);
        assert_eq!(r.0.len(), 2);
        assert_eq!(r.overlapping(0x1900, 0x1a00), None);
        assert_eq!(r.overlapping(0x1700, 0x1900), Some((0x1000, 0x1800)));
        assert_eq!(r.overlapping(0x0, 0x2900), Some((0x1000, 0x1800)));
        assert_eq!(
            r.uncovered(0x0, 0x5000),
            [(0x0, 0x1000), (0x1800, 0x2800), (0x4000, 0x5000)]
        );
        assert_eq!(r.uncovered(0x1100, 0x1200), []);
        assert_eq!(r.best_fit(0x800), Some(0x1000));
        assert_eq!(r.best_fit(0x1000), Some(0x2800));
        assert_eq!(r.best_fit(0x2000), None);
        assert_eq!(r.around(0x2000), Some((Some(0x1800), Some(0x2800))));
        assert_eq!(r.around(0x1000), None);
        assert_eq!(r.around(0x5000), Some((Some(0x4000), None)));
    }

    #[test]
    fn freed_pool_memory_stays_reserved_until_reused() {
        let map = MemoryMap::new();
        let a = map.allocate_pool(3 * PAGE, 0, 0, None).unwrap();
        map.insert(a.clone());
        let base = a.base;
        // SAFETY: a live mapping of three pages.
        unsafe { *a.ptr().add(PAGE as usize) = 9 };
        assert_eq!(map.freed_overlapping(base, 1), None);
        // Freed while still held (a queued copy): retired, still mapped.
        let held = map.free_pool(base).unwrap();
        assert!(map.free_pool(base).is_none(), "one free per allocation");
        drop(a);
        assert_eq!(
            map.freed_overlapping(base + PAGE, 8),
            Some((base, base + 3 * PAGE))
        );
        assert_eq!(protection(base).as_deref(), Some("rw-p"));
        assert_eq!(map.gap_around(base + 8), None);
        // The last holder lets go: reserved, inaccessible, not the host's.
        drop(held);
        assert_eq!(protection(base + 2 * PAGE).as_deref(), Some("---p"));
        assert_eq!(
            map.freed_overlapping(base - 8, 16),
            Some((base, base + 3 * PAGE))
        );
        assert_eq!(map.freed_overlapping(base + 3 * PAGE, 8), None);
        assert!(host_copy::copy(base, [0u8; 8].as_ptr() as u64, 8).is_err());
        // A smaller pool allocation reuses it, zeroed; the rest stays reserved.
        let b = map.allocate_pool(PAGE, 0, 0, None).unwrap();
        map.insert(b.clone());
        assert_eq!(b.base, base, "best fit: the only reservation");
        // SAFETY: a live mapping of one page.
        assert_eq!(unsafe { *b.ptr() }, 0);
        assert_eq!(map.freed_overlapping(base, PAGE), None);
        assert_eq!(
            map.freed_overlapping(base, PAGE + 1),
            Some((base + PAGE, base + 3 * PAGE))
        );
        assert_eq!(map.gap_around(base + PAGE), None);
        // Internal allocations are unmapped as before.
        let i = Allocation::new(PAGE, AllocKind::Internal, 0, 0).unwrap();
        let ib = i.base;
        drop(i);
        assert_eq!(protection(ib), None);
        // Shut-down gives every reservation back.
        map.clear();
        assert_eq!(protection(base + PAGE), None);
        drop(b);
        assert_eq!(protection(base), None, "freed after shut-down: unmapped");
    }

    #[test]
    fn a_freed_placed_block_is_placed_again() {
        let map = MemoryMap::new();
        // Agent 6's window: away from what other tests of this process place.
        let (start, end) = placement_window(6, 64 << 30);
        let place = |size: u64| {
            let at = map.first_fit(start, end, size, 2 << 20).unwrap();
            let a = map.allocate_pool(size, 0, 0, Some(at)).unwrap();
            map.insert(a.clone());
            a
        };
        let a = place(1 << 30);
        assert_eq!(a.base, start);
        let b = place(1 << 30);
        assert_eq!(b.base, start + (1 << 30));
        map.free_pool(a.base);
        drop(a);
        assert_eq!(protection(start).as_deref(), Some("---p"));
        // Small blocks never go into a window's reservation.
        let small = map.allocate_pool(PAGE, 0, 0, None).unwrap();
        assert!(small.base < start || small.base >= end);
        // The same sequence, the same addresses: over the reservation, and
        // across it into never-mapped space.
        let c = place(1 << 30);
        assert_eq!(c.base, start);
        map.free_pool(c.base);
        drop(c);
        map.free_pool(b.base);
        drop(b);
        let d = place(3 << 30);
        assert_eq!(d.base, start);
        assert_eq!(map.freed_overlapping(start, 3 << 30), None);
        // SAFETY: a live mapping of 3 GiB.
        unsafe {
            *d.ptr().add((2 << 30) + 5) = 1;
            assert_eq!(*d.ptr().add(1 << 30), 0);
        }
        // Something else mapped where placement asks: the block goes elsewhere.
        let taken =
            Allocation::new_at(PAGE, AllocKind::Internal, 0, 0, Some(start + (3 << 30))).unwrap();
        assert_eq!(taken.base, start + (3 << 30));
        let e = map
            .allocate_pool(1 << 30, 0, 0, Some(start + (3 << 30)))
            .unwrap();
        assert_ne!(e.base, start + (3 << 30));
        drop(taken);
        assert_eq!(
            protection(start + (3 << 30)),
            None,
            "a failed claim gives back what it took"
        );
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
