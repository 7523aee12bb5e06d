//! How waves reach memory: the [`MemoryRegion`] / [`GlobalMemory`] traits the device
//! implements, and the checked accessors the executor uses.
//!
//! Every access is checked against a region before any host byte is touched: an
//! address range outside every region is a [`Fault::Memory`]. Device memory may be
//! written by other host threads (other waves, the host) at the same time, so all
//! accesses are atomic operations (relaxed for plain loads/stores, sequentially
//! consistent for atomics) and never form Rust references to the bytes.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::arch::VReg;
use crate::arch::WAVE_SIZE;
use crate::error::Fault;

/// A contiguous range of device memory that waves may access.
/// # Safety
/// Implementors guarantee `host_ptr()` is valid for reads and writes of `len()` bytes
/// for as long as the object is alive, and suitably aligned for atomics of 8 bytes at 8-aligned device addresses
/// (device_base() and host_ptr() have the same alignment modulo 4096).
pub unsafe trait MemoryRegion: Send + Sync {
    /// Device address of the first byte.
    fn device_base(&self) -> u64;
    /// Length in bytes.
    fn len(&self) -> u64;
    /// Host address of the first byte.
    fn host_ptr(&self) -> *mut u8;
    /// Whether the region is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether waves may write the region (default: yes). A read-only region (host
    /// memory mapped without `PROT_WRITE`, reached with XNACK on) is read by the
    /// interpreter only: a store or atomic to it is a [`Fault::Memory`], and compiled
    /// runs never see it (see [`RegionCache`]).
    fn writable(&self) -> bool {
        true
    }
}

/// The global memory an agent's kernels may touch (device allocations, kernarg memory, host memory made accessible, the code object, scratch backing).
pub trait GlobalMemory: Send + Sync {
    /// The region containing device address `addr`, if the agent may access it.
    fn region(&self, addr: u64) -> Option<std::sync::Arc<dyn MemoryRegion>>;

    /// The loaded code object containing device address `pc`, if the agent may run
    /// code from it: where a wave goes on when a call or jump leaves the code object
    /// its kernel started in (a function of another executable reached through a
    /// pointer, as LLVM's `offload/test/offloading/shared_lib_fp_mapping.c` does).
    /// The default knows no code objects: such a jump is a bad PC.
    fn code_region(&self, pc: u64) -> Option<std::sync::Arc<dyn MemoryRegion>> {
        let _ = pc;
        None
    }
}

/// A region remembered by a wave: its bounds and host address, read once, and the
/// `Arc` that keeps it alive (and so its host address valid) while the wave may use it.
#[derive(Clone)]
struct Cached {
    base: u64,
    end: u64,
    host: *mut u8,
    /// Whether stores may use the region ([`MemoryRegion::writable`]).
    writable: bool,
    /// Keeps the region (and `host`) alive.
    _region: Arc<dyn MemoryRegion>,
}

// SAFETY: `host` is the region's own host address, which the region (Send + Sync)
// allows any thread to access atomically; the cache only hands it out as checked spans.
unsafe impl Send for Cached {}
// SAFETY: as above; a shared cache gives out no mutable access to the pointer itself.
unsafe impl Sync for Cached {}

impl Cached {
    fn of(region: &Arc<dyn MemoryRegion>) -> Self {
        let base = region.device_base();
        Self {
            base,
            end: base.saturating_add(region.len()),
            host: region.host_ptr(),
            writable: region.writable(),
            _region: region.clone(),
        }
    }
}

/// A cached region as compiled code reads it (see [`RegionCache::windows`]): device
/// addresses `[base, end)` at host address `host`.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Window {
    pub(crate) base: u64,
    pub(crate) end: u64,
    pub(crate) host: *mut u8,
}

impl Default for Window {
    fn default() -> Self {
        Self {
            base: 0,
            end: 0,
            host: std::ptr::null_mut(),
        }
    }
}

// SAFETY: as for `Cached`, whose fields a window copies: `host` is a region's own
// host address, which the region (Send + Sync) allows any thread to access
// atomically, and the cache holding the window also holds the region.
unsafe impl Send for Window {}
// SAFETY: as above; a shared window gives out no mutable access to the pointer.
unsafe impl Sync for Window {}

/// Most regions a [`WindowTable`] holds: a wave's private ones and its recent ones
/// (the table keeps the first this many, in lookup order).
pub(crate) const WINDOWS: usize = 8;

/// A [`RegionCache`]'s regions as compiled code reads them: `n`, then the windows
/// (the private regions, then the recent ones: the order of the cache's lookups).
/// Each window's host pointer is valid while the cache holds the region, that is,
/// until the cache next changes.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct WindowTable {
    pub(crate) n: usize,
    pub(crate) windows: [Window; WINDOWS],
}

/// A checked, in-bounds host location of a device access: produced only by
/// [`RegionCache::translate`], so the pointer is valid for `len` bytes.
#[derive(Clone, Copy)]
pub(crate) struct HostSpan<'a> {
    ptr: *mut u8,
    len: usize,
    /// Borrow of whatever keeps the region alive (the cache or the caller's region).
    _alive: PhantomData<&'a ()>,
}

impl HostSpan<'_> {
    /// Loads `N` bytes at byte offset `off` (must satisfy `off + N <= len`; zeros
    /// otherwise), as the widest naturally aligned relaxed atomics the host address
    /// allows (8, 4, 2, then 1 byte): aligned 8- and 16-byte accesses are whole words.
    #[inline]
    pub(crate) fn load<const N: usize>(&self, off: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if off + N > self.len {
            return out;
        }
        // SAFETY: `ptr` is valid for `len` bytes (RegionCache::translate checked the range
        // against a live region whose Arc the cache holds), and off + N <= len.
        let p = unsafe { self.ptr.add(off) };
        // SAFETY: p is valid for N bytes (above).
        unsafe { load_pieces(p, &mut out) };
        out
    }

    /// Loads `out.len()` bytes at byte offset `off` (as `load`; zeros if the range
    /// does not fit).
    #[inline]
    pub(crate) fn load_into(&self, off: usize, out: &mut [u8]) {
        if off + out.len() > self.len {
            out.fill(0);
            return;
        }
        // SAFETY: as in `load`: the checked span is valid for `len` bytes.
        let p = unsafe { self.ptr.add(off) };
        // SAFETY: p is valid for out.len() bytes (above).
        unsafe { load_pieces(p, out) };
    }

    /// The little-endian dword at byte offset `off` (0 if `off + 4 > len`), as
    /// `load::<4>` reads it.
    #[inline(always)]
    pub(crate) fn load_u32(&self, off: usize) -> u32 {
        if off + 4 > self.len {
            return 0;
        }
        // SAFETY: as in `load`: the checked span is valid for `len` bytes.
        let p = unsafe { self.ptr.add(off) };
        if (p as usize) & 3 == 0 {
            // SAFETY: p is 4-aligned and valid for 4 bytes; the memory is only ever
            // accessed atomically by the engine.
            unsafe { AtomicU32::from_ptr(p.cast::<u32>()) }.load(Ordering::Relaxed)
        } else {
            u32::from_le_bytes(self.load::<4>(off))
        }
    }

    /// The little-endian qword at byte offset `off` (0 if `off + 8 > len`), one
    /// relaxed 64-bit atomic when the host address is 8-aligned (else as `load`).
    #[inline(always)]
    pub(crate) fn load_u64(&self, off: usize) -> u64 {
        if off + 8 > self.len {
            return 0;
        }
        // SAFETY: as in `load`: the checked span is valid for `len` bytes.
        let p = unsafe { self.ptr.add(off) };
        if (p as usize) & 7 == 0 {
            // SAFETY: p is 8-aligned and valid for 8 bytes; the memory is only ever
            // accessed atomically by the engine.
            unsafe { AtomicU64::from_ptr(p.cast::<u64>()) }.load(Ordering::Relaxed)
        } else {
            u64::from_le_bytes(self.load::<8>(off))
        }
    }

    /// Loads, for each lane l, the element of `BYTES` (4 or 8) bytes at byte offset
    /// `addrs[l] - base` of the span into the dword planes (a qword's low dword into
    /// `lo[l]`, its high dword into `hi[l]`; a dword into `lo[l]`, `hi` untouched),
    /// each a relaxed atomic: a wave's gather. False, having written nothing, if an
    /// element is outside the span or its host address not naturally aligned (the
    /// caller then loads lane by lane). Every lane's line is asked for first (see
    /// [`prefetch_gather`](Self::prefetch_gather)), unless `prefetched` says the
    /// caller asked already.
    #[inline]
    pub(crate) fn gather<const BYTES: usize>(
        &self,
        addrs: &[u64; 64],
        base: u64,
        prefetched: bool,
        lo: &mut [u32; 64],
        hi: &mut [u32; 64],
    ) -> bool {
        if !self.lanes_fit::<BYTES>(addrs, base) {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::arch::host_avx2() {
            if !prefetched {
                // Every lane's line first, so that the misses overlap (under perf,
                // the gathers alone stalled most at the first ones); into the L2,
                // whose miss buffers outnumber the L1's (64 lines into the L1
                // stalled on them: into the L2, the gather benchmark ran 6% faster
                // at W=1 and W=2 in 3 alternating rounds).
                self.prefetch_gather(addrs, base);
            }
            // SAFETY: host_avx2() checked the CPU; every element is inside the span
            // (offset <= len - BYTES) and naturally aligned (checked above).
            unsafe { gather_avx2::<BYTES>(self.ptr, addrs, base, lo, hi) };
            return true;
        }
        for (l, &a) in addrs.iter().enumerate() {
            let off = (a - base) as usize;
            if BYTES == 8 {
                let v = self.load_u64(off);
                lo[l] = v as u32;
                hi[l] = (v >> 32) as u32;
            } else {
                lo[l] = self.load_u32(off);
            }
        }
        true
    }

    /// Whether, for every lane l, the element of `BYTES` bytes at byte offset
    /// `addrs[l] - base` is inside the span and its host address naturally aligned.
    #[inline]
    pub(crate) fn lanes_fit<const BYTES: usize>(&self, addrs: &[u64; 64], base: u64) -> bool {
        let Some(last) = self.len.checked_sub(BYTES) else {
            return false;
        };
        #[cfg(target_arch = "x86_64")]
        if crate::arch::host_avx2() {
            // SAFETY: host_avx2() checked the CPU.
            return unsafe { lanes_fit_avx2::<BYTES>(self.ptr as u64, last as u64, addrs, base) };
        }
        lanes_fit_body::<BYTES>(self.ptr as u64, last as u64, addrs, base)
    }

    /// Hints the host to bring in the line of every lane's element, at byte offset
    /// `addrs[l] - base` of the span, as [`prefetch`](Self::prefetch) does: the lines a
    /// gather of these lanes will read. The offsets are not checked (a gather checks
    /// them before it reads): the addresses are formed with wrapping arithmetic, and
    /// a prefetch reads nothing architecturally and cannot fault, wherever it points.
    #[inline]
    pub(crate) fn prefetch_gather(&self, addrs: &[u64; 64], base: u64) {
        #[cfg(target_arch = "x86_64")]
        for &a in addrs {
            // SAFETY: a prefetch reads nothing architecturally and cannot fault; the
            // pointer is only formed (wrapping), never dereferenced.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                let p = self.ptr.wrapping_add(a.wrapping_sub(base) as usize);
                _mm_prefetch::<_MM_HINT_T1>(p.cast::<i8>());
            }
        }
    }

    /// Hints the host to bring the cache line of byte offset `off` into its L2 (no
    /// effect on memory; nothing if `off` is past the span). Used before scattered
    /// loads so that their cache misses overlap (into the L2, whose miss buffers
    /// outnumber the L1's, as the wave's gather does).
    #[inline(always)]
    pub(crate) fn prefetch(&self, off: usize) {
        if off >= self.len {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: off < len, so the address is inside the checked span; a prefetch
            // reads nothing architecturally and cannot fault.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                _mm_prefetch::<_MM_HINT_T1>(self.ptr.add(off).cast::<i8>());
            }
        }
    }

    /// Hints the host to bring every cache line of the span in: for reading, into the
    /// L2 (`PREFETCHT1`: in 3 alternating STREAM rounds, 3-10% faster than into the
    /// L1, whose miss buffers a wave's 8 to 16 lines then fill), or, with `write`, for
    /// writing (`PREFETCHW`, which asks for the line exclusive, so that the stores
    /// that follow do not wait for the ownership request). No effect on memory.
    #[inline]
    pub(crate) fn prefetch_all(&self, write: bool) {
        #[cfg(target_arch = "x86_64")]
        for off in (0..self.len).step_by(64) {
            // SAFETY: off < len, so the address is inside the checked span; a prefetch
            // reads or writes nothing architecturally and cannot fault (PREFETCHW is a
            // no-op on hosts without it).
            unsafe {
                let p = self.ptr.add(off);
                if write {
                    std::arch::asm!("prefetchw [{p}]", p = in(reg) p,
                        options(nostack, preserves_flags, readonly));
                } else {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                    _mm_prefetch::<_MM_HINT_T1>(p.cast::<i8>());
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = write;
    }

    /// Stores `bytes` at byte offset `off` (nothing if `off + bytes.len() > len`), as
    /// the widest naturally aligned relaxed atomics the host address allows.
    #[inline]
    pub(crate) fn store(&self, off: usize, bytes: &[u8]) {
        if off + bytes.len() > self.len {
            return;
        }
        // SAFETY: as in `load`.
        let p = unsafe { self.ptr.add(off) };
        if bytes.len() == 4 && (p as usize) & 3 == 0 {
            let v = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            // SAFETY: p is 4-aligned and valid for 4 bytes.
            unsafe { AtomicU32::from_ptr(p.cast::<u32>()) }.store(v, Ordering::Relaxed);
        } else {
            // SAFETY: p is valid for bytes.len() bytes (above).
            unsafe { store_pieces(p, bytes) };
        }
    }

    /// Stores the dword `v` at byte offset `off` (as `store`).
    #[inline(always)]
    pub(crate) fn store_u32(&self, off: usize, v: u32) {
        if off + 4 > self.len {
            return;
        }
        // SAFETY: as in `load`.
        let p = unsafe { self.ptr.add(off) };
        if (p as usize) & 3 == 0 {
            // SAFETY: p is 4-aligned and valid for 4 bytes.
            unsafe { AtomicU32::from_ptr(p.cast::<u32>()) }.store(v, Ordering::Relaxed);
        } else {
            self.store(off, &v.to_le_bytes());
        }
    }

    /// Stores the qword `v` at byte offset `off` (one relaxed 64-bit atomic when the
    /// host address is 8-aligned, else as `store`).
    #[inline(always)]
    pub(crate) fn store_u64(&self, off: usize, v: u64) {
        if off + 8 > self.len {
            return;
        }
        // SAFETY: as in `load`.
        let p = unsafe { self.ptr.add(off) };
        if (p as usize) & 7 == 0 {
            // SAFETY: p is 8-aligned and valid for 8 bytes.
            unsafe { AtomicU64::from_ptr(p.cast::<u64>()) }.store(v, Ordering::Relaxed);
        } else {
            self.store(off, &v.to_le_bytes());
        }
    }

    /// Loads a wave's 64 consecutive dwords from byte offset `off`, one relaxed 32-bit
    /// atomic each (a whole-wave access to consecutive addresses). Returns false,
    /// having read nothing, if the range does not fit or the host address is not
    /// 4-aligned (then the caller takes the general path).
    #[inline]
    pub(crate) fn load_dwords(&self, off: usize, out: &mut VReg) -> bool {
        let n = out.len();
        if off.checked_add(4 * n).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: off + 4n <= len, so the pointer stays in the checked span.
        let p = unsafe { self.ptr.add(off) }.cast::<u32>();
        if !p.is_aligned() {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::arch::host_avx2() {
            // SAFETY: host_avx2() checked the CPU; p is 4-aligned and valid for the
            // n = 64 dwords (checked above).
            unsafe { load_dwords_avx2(p, out) };
            return true;
        }
        // Eight dwords per step, so that the compiler unrolls the accesses (each stays
        // one relaxed atomic: a load and a store instruction per dword).
        for (c, chunk) in out.chunks_exact_mut(8).enumerate() {
            for (j, o) in chunk.iter_mut().enumerate() {
                // SAFETY: p + 8c + j is 4-aligned and inside the span (8c + j < n); the
                // memory is only ever accessed atomically by the engine.
                *o = unsafe { AtomicU32::from_ptr(p.add(8 * c + j)) }.load(Ordering::Relaxed);
            }
        }
        true
    }

    /// Stores `vals` as consecutive dwords at byte offset `off`, one relaxed 32-bit
    /// atomic each; false, having written nothing, as [`load_dwords`](Self::load_dwords).
    #[inline]
    pub(crate) fn store_dwords(&self, off: usize, vals: &VReg) -> bool {
        let n = vals.len();
        if off.checked_add(4 * n).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: off + 4n <= len, so the pointer stays in the checked span.
        let p = unsafe { self.ptr.add(off) }.cast::<u32>();
        if !p.is_aligned() {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::arch::host_avx2() {
            // SAFETY: as in load_dwords.
            unsafe { store_dwords_avx2(p, vals) };
            return true;
        }
        // Eight dwords per step, as in load_dwords.
        for (c, chunk) in vals.chunks_exact(8).enumerate() {
            for (j, v) in chunk.iter().enumerate() {
                // SAFETY: as in load_dwords.
                unsafe { AtomicU32::from_ptr(p.add(8 * c + j)) }.store(*v, Ordering::Relaxed);
            }
        }
        true
    }

    /// Loads 64 consecutive qwords from byte offset `off`, one relaxed 64-bit atomic
    /// each, splitting qword k into `lo[k]` (bits 31:0) and `hi[k]` (bits 63:32): a
    /// whole wave's 8-byte load into the two dword planes of a register pair. False,
    /// having read nothing, if the range does not fit or the host address is not
    /// 8-aligned.
    #[inline]
    pub(crate) fn load_qword_planes(
        &self,
        off: usize,
        lo: &mut [u32; 64],
        hi: &mut [u32; 64],
    ) -> bool {
        let Some(p) = self.qword_run(off) else {
            return false;
        };
        #[cfg(target_arch = "x86_64")]
        if crate::arch::host_avx2() {
            // SAFETY: host_avx2() checked the CPU; qword_run checked that p is 8-aligned
            // and valid for 64 qwords.
            unsafe { load_planes_avx2(p, lo, hi) };
            return true;
        }
        // SAFETY: as above.
        unsafe { load_planes_body(p, lo, hi) };
        true
    }

    /// Stores 64 consecutive qwords `lo[k] | hi[k] << 32` at byte offset `off`, one
    /// relaxed 64-bit atomic each; false, having written nothing, as
    /// [`load_qword_planes`](Self::load_qword_planes).
    #[inline]
    pub(crate) fn store_qword_planes(&self, off: usize, lo: &[u32; 64], hi: &[u32; 64]) -> bool {
        let Some(p) = self.qword_run(off) else {
            return false;
        };
        #[cfg(target_arch = "x86_64")]
        if crate::arch::host_avx2() {
            // SAFETY: as in load_qword_planes.
            unsafe { store_planes_avx2(p, lo, hi) };
            return true;
        }
        // SAFETY: as in load_qword_planes.
        unsafe { store_planes_body(p, lo, hi) };
        true
    }

    /// The host address of 64 qwords at `off` if they fit in the span and it is
    /// 8-aligned.
    #[inline(always)]
    fn qword_run(&self, off: usize) -> Option<*mut u64> {
        if off.checked_add(8 * 64).is_none_or(|end| end > self.len) {
            return None;
        }
        // SAFETY: off + 512 <= len, so the pointer stays in the checked span.
        let p = unsafe { self.ptr.add(off) }.cast::<u64>();
        p.is_aligned().then_some(p)
    }

    /// The 32-bit atomic at offset 0 (the span must be 4 bytes and 4-aligned:
    /// checked by [`RegionCache::translate_atomic`]).
    pub(crate) fn atomic_u32(&self) -> &AtomicU32 {
        // SAFETY: translate_atomic checked len >= 4 and 4-byte alignment of the host
        // address; the region stays alive while the wave's cache holds its Arc, which
        // outlives this short borrow of self.
        unsafe { AtomicU32::from_ptr(self.ptr.cast::<u32>()) }
    }

    /// The 64-bit atomic at offset 0 (8 bytes, 8-aligned; see `atomic_u32`).
    pub(crate) fn atomic_u64(&self) -> &AtomicU64 {
        // SAFETY: as in atomic_u32, with 8 bytes and 8-byte alignment checked.
        unsafe { AtomicU64::from_ptr(self.ptr.cast::<u64>()) }
    }
}

/// Loads 64 qwords at `p` (relaxed atomics) eight at a time, splitting each group
/// into the low and high dword planes (plain register code, so it vectorises).
///
/// # Safety
/// `p` must be 8-aligned and valid for 64 qwords of memory that is only ever
/// accessed atomically while this runs.
#[inline(always)]
unsafe fn load_planes_body(p: *mut u64, lo: &mut [u32; 64], hi: &mut [u32; 64]) {
    for c in 0..8 {
        let mut v = [0u64; 8];
        for (j, x) in v.iter_mut().enumerate() {
            // SAFETY: p + 8c + j < p + 64 is 8-aligned and valid (caller).
            *x = unsafe { AtomicU64::from_ptr(p.add(8 * c + j)) }.load(Ordering::Relaxed);
        }
        for j in 0..8 {
            lo[8 * c + j] = v[j] as u32;
            hi[8 * c + j] = (v[j] >> 32) as u32;
        }
    }
}

/// Joins the dword planes eight lanes at a time and stores the 64 qwords at `p`
/// (relaxed atomics).
///
/// # Safety
/// As [`load_planes_body`].
#[inline(always)]
unsafe fn store_planes_body(p: *mut u64, lo: &[u32; 64], hi: &[u32; 64]) {
    for c in 0..8 {
        let mut v = [0u64; 8];
        for (j, x) in v.iter_mut().enumerate() {
            *x = u64::from(lo[8 * c + j]) | u64::from(hi[8 * c + j]) << 32;
        }
        for (j, x) in v.iter().enumerate() {
            // SAFETY: as in load_planes_body.
            unsafe { AtomicU64::from_ptr(p.add(8 * c + j)) }.store(*x, Ordering::Relaxed);
        }
    }
}

/// Whole-vector accesses to device memory: one 32-byte VMOVDQU moves 8 dwords or 4
/// qwords.
///
/// Device memory may be accessed by other threads at the same time, so the engine
/// accesses its elements only as relaxed atomics. A 32-byte access is such a set of
/// atomics: the load or store is inline assembly, opaque to the compiler, and on x86 each
/// naturally aligned element of a vector access (a dword at a 4-aligned address, a
/// qword at an 8-aligned one, never across a cache line) is read or written in one
/// piece, as a relaxed atomic of its size would be (Intel SDM vol. 3A, 9.1.1; the
/// elements' order among themselves is unspecified, which relaxed atomics allow).
/// The callers check the alignment of the elements.
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::asm;
    use std::arch::x86_64::{__m128i, __m256i};

    /// The 32 bytes at `p` (8 dwords or 4 qwords, each loaded in one piece).
    ///
    /// # Safety
    /// The CPU must support AVX; `p` must be valid for reads of 32 bytes, and aligned
    /// to the element size the caller reads the bytes as (4 or 8).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn load(p: *const u8) -> __m256i {
        let v: __m256i;
        // SAFETY: the caller's contract; the instruction only reads [p, p + 32).
        unsafe {
            asm!(
                "vmovdqu {v}, ymmword ptr [{p}]",
                p = in(reg) p,
                v = out(ymm_reg) v,
                options(nostack, readonly, preserves_flags),
            );
        }
        v
    }

    /// The 4 qwords at `base + idx[k]` (VPGATHERQQ; each qword loaded in one piece).
    ///
    /// # Safety
    /// The CPU must support AVX2; each `base + idx[k]` must be 8-aligned and valid for
    /// reads of 8 bytes.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn gather_qwords(base: *const u8, idx: __m256i) -> __m256i {
        use std::arch::x86_64::_mm256_set1_epi64x;
        let v: __m256i;
        // SAFETY: the caller's contract; the instruction reads the 4 qwords only (all
        // mask bits set), and clears the mask register, an operand discarded here.
        unsafe {
            asm!(
                "vpgatherqq {v}, qword ptr [{b} + {i}*1], {m}",
                b = in(reg) base,
                i = in(ymm_reg) idx,
                m = inout(ymm_reg) _mm256_set1_epi64x(-1) => _,
                v = out(ymm_reg) v,
                options(nostack, readonly, preserves_flags),
            );
        }
        v
    }

    /// The 4 dwords at `base + idx[k]` (VPGATHERQD; each dword loaded in one piece).
    ///
    /// # Safety
    /// As [`gather_qwords`], with 4-aligned dwords.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn gather_dwords(base: *const u8, idx: __m256i) -> __m128i {
        use std::arch::x86_64::_mm_set1_epi32;
        let v: __m128i;
        // SAFETY: as in gather_qwords.
        unsafe {
            asm!(
                "vpgatherqd {v}, dword ptr [{b} + {i}*1], {m}",
                b = in(reg) base,
                i = in(ymm_reg) idx,
                m = inout(xmm_reg) _mm_set1_epi32(-1) => _,
                v = out(xmm_reg) v,
                options(nostack, readonly, preserves_flags),
            );
        }
        v
    }

    /// Stores `v` as the 32 bytes at `p` (each element written in one piece).
    ///
    /// # Safety
    /// As [`load`], for writes.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn store(p: *mut u8, v: __m256i) {
        // SAFETY: the caller's contract; the instruction only writes [p, p + 32).
        unsafe {
            asm!(
                "vmovdqu ymmword ptr [{p}], {v}",
                p = in(reg) p,
                v = in(ymm_reg) v,
                options(nostack, preserves_flags),
            );
        }
    }
}

/// Splits 8 qwords, `a` (lanes 0..4) and `b` (lanes 4..8), into their low and high
/// dwords, stored in lane order at `lo` and `hi` (8 dwords each): VSHUFPS takes the
/// low and the high dwords (in the lane order 0, 1, 4, 5 | 2, 3, 6, 7), VPERMQ puts
/// them in lane order.
///
/// # Safety
/// The CPU must support AVX2; `lo` and `hi` must be valid for writes of 8 dwords.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn split_planes(
    a: std::arch::x86_64::__m256i,
    b: std::arch::x86_64::__m256i,
    lo: *mut u32,
    hi: *mut u32,
) {
    use std::arch::x86_64::{
        _mm256_castps_si256, _mm256_castsi256_ps, _mm256_permute4x64_epi64, _mm256_shuffle_ps,
        _mm256_storeu_si256,
    };
    let (a, b) = (_mm256_castsi256_ps(a), _mm256_castsi256_ps(b));
    let l = _mm256_permute4x64_epi64::<0xD8>(_mm256_castps_si256(_mm256_shuffle_ps::<0x88>(a, b)));
    let h = _mm256_permute4x64_epi64::<0xD8>(_mm256_castps_si256(_mm256_shuffle_ps::<0xDD>(a, b)));
    // SAFETY: the caller's contract.
    unsafe {
        _mm256_storeu_si256(lo.cast(), l);
        _mm256_storeu_si256(hi.cast(), h);
    }
}

/// [`load_planes_body`] with whole-vector loads (see [`wide`]): each group of 8
/// qwords is two 32-byte loads, split by [`split_planes`].
///
/// # Safety
/// The CPU must support AVX2; and as [`load_planes_body`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn load_planes_avx2(p: *mut u64, lo: &mut [u32; 64], hi: &mut [u32; 64]) {
    for c in 0..8 {
        // SAFETY: qwords 8c..8c + 8 of the 64 at p are valid and 8-aligned (caller);
        // dwords 8c..8c + 8 of each plane are in bounds (c < 8).
        unsafe {
            let a = wide::load(p.add(8 * c).cast());
            let b = wide::load(p.add(8 * c + 4).cast());
            split_planes(a, b, lo.as_mut_ptr().add(8 * c), hi.as_mut_ptr().add(8 * c));
        }
    }
}

/// [`store_planes_body`] with whole-vector stores (see [`wide`]): VPUNPCK[LH]DQ join
/// 8 lanes of the two planes into qwords (in the order 0, 1, 4, 5 | 2, 3, 6, 7),
/// VPERM2I128 puts them in order, and two 32-byte stores write them.
///
/// # Safety
/// The CPU must support AVX2; and as [`load_planes_body`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn store_planes_avx2(p: *mut u64, lo: &[u32; 64], hi: &[u32; 64]) {
    use std::arch::x86_64::{
        _mm256_loadu_si256, _mm256_permute2x128_si256, _mm256_unpackhi_epi32, _mm256_unpacklo_epi32,
    };
    for c in 0..8 {
        // SAFETY: dwords 8c..8c + 8 of each plane are in bounds (c < 8).
        let (l, h) = unsafe {
            (
                _mm256_loadu_si256(lo.as_ptr().add(8 * c).cast()),
                _mm256_loadu_si256(hi.as_ptr().add(8 * c).cast()),
            )
        };
        let x = _mm256_unpacklo_epi32(l, h);
        let y = _mm256_unpackhi_epi32(l, h);
        // SAFETY: qwords 8c..8c + 8 of the 64 at p are valid and 8-aligned (caller).
        unsafe {
            wide::store(p.add(8 * c).cast(), _mm256_permute2x128_si256::<0x20>(x, y));
            wide::store(
                p.add(8 * c + 4).cast(),
                _mm256_permute2x128_si256::<0x31>(x, y),
            );
        }
    }
}

/// [`HostSpan::gather`] with AVX2 gathers (see [`wide`]): 4 lanes' offsets at a
/// time; qwords are then split into the planes by [`split_planes`].
///
/// # Safety
/// The CPU must support AVX2; `ptr + addrs[l] - base` must be valid for `BYTES`
/// bytes and `BYTES`-aligned for every lane l, in memory only ever accessed
/// atomically while this runs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gather_avx2<const BYTES: usize>(
    ptr: *const u8,
    addrs: &[u64; 64],
    base_addr: u64,
    lo: &mut [u32; 64],
    hi: &mut [u32; 64],
) {
    use std::arch::x86_64::{
        _mm256_loadu_si256, _mm256_set1_epi64x, _mm256_set_m128i, _mm256_storeu_si256,
        _mm256_sub_epi64,
    };
    let base = _mm256_set1_epi64x(base_addr as i64);
    for c in 0..8 {
        // SAFETY: lanes 8c..8c + 8 of the 64-lane tables are in bounds (c < 8); the
        // gathered elements are valid and aligned (caller).
        unsafe {
            let idx = |k: usize| {
                _mm256_sub_epi64(
                    _mm256_loadu_si256(addrs.as_ptr().add(8 * c + 4 * k).cast()),
                    base,
                )
            };
            if BYTES == 8 {
                let a = wide::gather_qwords(ptr, idx(0));
                let b = wide::gather_qwords(ptr, idx(1));
                split_planes(a, b, lo.as_mut_ptr().add(8 * c), hi.as_mut_ptr().add(8 * c));
            } else {
                let v = _mm256_set_m128i(
                    wide::gather_dwords(ptr, idx(1)),
                    wide::gather_dwords(ptr, idx(0)),
                );
                _mm256_storeu_si256(lo.as_mut_ptr().add(8 * c).cast(), v);
            }
        }
    }
}

/// [`HostSpan::lanes_fit`] for a span at host address `host` whose last element
/// starts at byte `last`: one pass without an early exit (it vectorises).
#[inline(always)]
fn lanes_fit_body<const BYTES: usize>(host: u64, last: u64, addrs: &[u64; 64], base: u64) -> bool {
    let mut bad = false;
    for &a in addrs {
        let off = a.wrapping_sub(base);
        bad |= off > last || host.wrapping_add(off) & (BYTES as u64 - 1) != 0;
    }
    !bad
}

/// `lanes_fit_body` compiled with AVX2 (the unsigned 64-bit compares as 4 lanes).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lanes_fit_avx2<const BYTES: usize>(
    host: u64,
    last: u64,
    addrs: &[u64; 64],
    base: u64,
) -> bool {
    lanes_fit_body::<BYTES>(host, last, addrs, base)
}

/// Loads 64 dwords at `p` into `out` with whole-vector loads (see [`wide`]).
///
/// # Safety
/// The CPU must support AVX2; `p` must be 4-aligned and valid for 64 dwords of
/// memory that is only ever accessed atomically while this runs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn load_dwords_avx2(p: *const u32, out: &mut VReg) {
    use std::arch::x86_64::_mm256_storeu_si256;
    for c in 0..8 {
        // SAFETY: dwords 8c..8c + 8 at p are valid and 4-aligned (caller), and of out
        // in bounds (c < 8).
        unsafe {
            let v = wide::load(p.add(8 * c).cast());
            _mm256_storeu_si256(out.as_mut_ptr().add(8 * c).cast(), v);
        }
    }
}

/// Stores the 64 dwords of `vals` at `p` with whole-vector stores (see [`wide`]).
///
/// # Safety
/// As [`load_dwords_avx2`], for writes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn store_dwords_avx2(p: *mut u32, vals: &VReg) {
    use std::arch::x86_64::_mm256_loadu_si256;
    for c in 0..8 {
        // SAFETY: as in load_dwords_avx2.
        unsafe {
            let v = _mm256_loadu_si256(vals.as_ptr().add(8 * c).cast());
            wide::store(p.add(8 * c).cast(), v);
        }
    }
}

/// Reads `out.len()` bytes at `p` as the widest naturally aligned relaxed atomics
/// (8, 4, 2 or 1 bytes) each position allows.
///
/// # Safety
/// `p` must be valid for reads of `out.len()` bytes of memory that is only ever
/// accessed atomically while this runs.
#[inline]
unsafe fn load_pieces(p: *mut u8, out: &mut [u8]) {
    let n = out.len();
    let mut k = 0;
    while k < n {
        // SAFETY: k < n, so p + k is inside the caller's range; each piece below fits
        // in the remaining n - k bytes and is naturally aligned.
        let q = unsafe { p.add(k) };
        let (rem, a) = (n - k, q as usize);
        if rem >= 8 && a & 7 == 0 {
            // SAFETY: see above.
            let v = unsafe { AtomicU64::from_ptr(q.cast::<u64>()) }.load(Ordering::Relaxed);
            out[k..k + 8].copy_from_slice(&v.to_le_bytes());
            k += 8;
        } else if rem >= 4 && a & 3 == 0 {
            // SAFETY: see above.
            let v = unsafe { AtomicU32::from_ptr(q.cast::<u32>()) }.load(Ordering::Relaxed);
            out[k..k + 4].copy_from_slice(&v.to_le_bytes());
            k += 4;
        } else if rem >= 2 && a & 1 == 0 {
            // SAFETY: see above.
            let v = unsafe { AtomicU16::from_ptr(q.cast::<u16>()) }.load(Ordering::Relaxed);
            out[k..k + 2].copy_from_slice(&v.to_le_bytes());
            k += 2;
        } else {
            // SAFETY: see above.
            out[k] = unsafe { AtomicU8::from_ptr(q) }.load(Ordering::Relaxed);
            k += 1;
        }
    }
}

/// Writes `bytes` at `p` as the widest naturally aligned relaxed atomics each
/// position allows (as [`load_pieces`]).
///
/// # Safety
/// `p` must be valid for writes of `bytes.len()` bytes of memory that is only ever
/// accessed atomically while this runs.
#[inline]
unsafe fn store_pieces(p: *mut u8, bytes: &[u8]) {
    let n = bytes.len();
    let mut k = 0;
    while k < n {
        // SAFETY: as in load_pieces.
        let q = unsafe { p.add(k) };
        let (rem, a) = (n - k, q as usize);
        let b = &bytes[k..];
        if rem >= 8 && a & 7 == 0 {
            let v = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            // SAFETY: as in load_pieces.
            unsafe { AtomicU64::from_ptr(q.cast::<u64>()) }.store(v, Ordering::Relaxed);
            k += 8;
        } else if rem >= 4 && a & 3 == 0 {
            let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            // SAFETY: as in load_pieces.
            unsafe { AtomicU32::from_ptr(q.cast::<u32>()) }.store(v, Ordering::Relaxed);
            k += 4;
        } else if rem >= 2 && a & 1 == 0 {
            let v = u16::from_le_bytes([b[0], b[1]]);
            // SAFETY: as in load_pieces.
            unsafe { AtomicU16::from_ptr(q.cast::<u16>()) }.store(v, Ordering::Relaxed);
            k += 2;
        } else {
            // SAFETY: as in load_pieces.
            unsafe { AtomicU8::from_ptr(q) }.store(b[0], Ordering::Relaxed);
            k += 1;
        }
    }
}

/// A wave's small cache of the regions it used last, plus regions private to it
/// (its scratch slice), which are looked up first.
#[derive(Clone, Default)]
pub struct RegionCache {
    private: Vec<Cached>,
    recent: Vec<Cached>,
    next_victim: usize,
    /// The cached regions as compiled code reads them (kept in step with the two
    /// lists by every change).
    table: WindowTable,
}

/// Shared regions a [`RegionCache`] keeps: every window but one, which is the
/// wave's scratch slice. A kernel reaches several at once (its data, its kernarg
/// segment, the code object's globals: STREAM's add and triad reach five), and
/// the waves of a dispatch keep them from one to the next.
/// With fewer slots than regions, the round-robin eviction turned every wave into
/// a round of misses (four slots: 8,802 lookups in one triad dispatch of 1,760
/// waves, 42 with seven), each a read lock and an `Arc` count update on cache
/// lines that all workers share.
const RECENT: usize = WINDOWS - 1;

/// Byte offset of a [`RegionCache`]'s [`WindowTable`] (for compiled code that finds
/// the table from the wave).
pub(crate) const TABLE_OFFSET: usize = std::mem::offset_of!(RegionCache, table);

impl RegionCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the private regions, keeping the recently used shared ones (for the next
    /// wave of the same dispatch: the regions it reaches are the same).
    pub fn set_private(&mut self, private: &[Arc<dyn MemoryRegion>]) {
        self.private.clear();
        self.private.extend(private.iter().map(Cached::of));
        self.sync();
    }

    /// Forgets every cached region (dropping the `Arc`s) and sets the private regions.
    pub fn reset(&mut self, private: &[Arc<dyn MemoryRegion>]) {
        self.recent.clear();
        self.next_victim = 0;
        self.private.clear();
        self.private.extend(private.iter().map(Cached::of));
        self.sync();
    }

    /// Rewrites `table` from the two lists.
    fn sync(&mut self) {
        // Read-only regions stay out of the table: compiled code stores through any
        // window it finds, so it must find only regions it may write.
        let cached = self
            .private
            .iter()
            .chain(self.recent.iter())
            .filter(|c| c.writable);
        let mut n = 0;
        for (w, c) in self.table.windows.iter_mut().zip(cached) {
            *w = Window {
                base: c.base,
                end: c.end,
                host: c.host,
            };
            n += 1;
        }
        self.table.n = n;
    }

    /// The cached writable region containing `[addr, addr+size)`: its index among
    /// the private regions followed by the recent ones. (The whole-wave paths, which
    /// load and store alike, use writable regions only; a read-only one is found by
    /// [`position_any`](Self::position_any), for the interpreter's lane accesses.)
    #[inline]
    fn position(&self, addr: u64, size: u64) -> Option<usize> {
        let end = addr.checked_add(size)?;
        self.private
            .iter()
            .chain(self.recent.iter())
            .position(|c| c.writable && addr >= c.base && end <= c.end)
    }

    /// As [`position`](Self::position), read-only regions included.
    #[inline]
    fn position_any(&self, addr: u64, size: u64) -> Option<usize> {
        let end = addr.checked_add(size)?;
        self.private
            .iter()
            .chain(self.recent.iter())
            .position(|c| addr >= c.base && end <= c.end)
    }

    #[inline]
    fn find(&self, addr: u64, size: u64) -> Option<&Cached> {
        self.at(self.position(addr, size)?)
    }

    /// The region at index `k` as [`position`](Self::position) gives it.
    #[inline(always)]
    fn at(&self, k: usize) -> Option<&Cached> {
        match k.checked_sub(self.private.len()) {
            None => self.private.get(k),
            Some(r) => self.recent.get(r),
        }
    }

    /// Caches the region containing `addr` (asking `mem`), evicting the oldest of the
    /// recent ones when full; its index as [`position`](Self::position) gives it, or
    /// `None` if no region the agent may access contains `addr`.
    #[inline(never)]
    fn fill(&mut self, mem: &dyn GlobalMemory, addr: u64) -> Option<usize> {
        let region = mem.region(addr)?;
        let entry = Cached::of(&region);
        let k = if self.recent.len() < RECENT {
            self.recent.push(entry);
            self.recent.len() - 1
        } else {
            let k = self.next_victim;
            self.recent[k] = entry;
            self.next_victim = (k + 1) % RECENT;
            k
        };
        self.sync();
        Some(self.private.len() + k)
    }

    /// Makes sure a region containing `[addr, addr+size)` is cached (asking `mem` on
    /// a miss); false if no single region the agent may access contains the range.
    #[inline]
    pub(crate) fn ensure(&mut self, mem: &dyn GlobalMemory, addr: u64, size: u64) -> bool {
        if self.position(addr, size).is_some() {
            return true;
        }
        // A read-only region already cached is not asked for again.
        self.position_any(addr, size).is_none()
            && self.fill(mem, addr).is_some()
            && self.position(addr, size).is_some()
    }

    /// The host location of `[addr, addr+size)` if a cached region contains it (see
    /// [`ensure`](Self::ensure)).
    #[inline]
    pub(crate) fn cached(&self, addr: u64, size: u64) -> Option<HostSpan<'_>> {
        let c = self.find(addr, size)?;
        Some(Self::span_in(c, addr, size))
    }

    /// `[addr, addr+size)` in `c`, which contains it.
    #[inline(always)]
    fn span_in(c: &Cached, addr: u64, size: u64) -> HostSpan<'_> {
        let off = (addr - c.base) as usize;
        // SAFETY: off + size <= region len (`c` contains the range), so the pointer
        // stays in the region's host allocation (`host` is its host_ptr()), which the
        // cached Arc keeps alive while the span borrows the cache.
        let ptr = unsafe { c.host.add(off) };
        HostSpan {
            ptr,
            len: size as usize,
            _alive: PhantomData,
        }
    }

    /// The host location of `[addr, addr+size)`, asking `mem` on a miss (one lookup
    /// when the region is cached); `None` if no single region the agent may access
    /// contains the range.
    #[inline]
    pub(crate) fn span(
        &mut self,
        mem: &dyn GlobalMemory,
        addr: u64,
        size: u64,
    ) -> Option<HostSpan<'_>> {
        let end = addr.checked_add(size)?;
        let k = match self.position(addr, size) {
            Some(k) => k,
            None if self.position_any(addr, size).is_some() => return None,
            None => self.fill(mem, addr)?,
        };
        let c = self.at(k)?;
        (c.writable && addr >= c.base && end <= c.end).then(|| Self::span_in(c, addr, size))
    }

    /// As [`span`](Self::span), with the host location of `[next, next+size)` as
    /// well when the region holding `[addr, addr+size)` holds it too (`None` when it
    /// does not, or for no `next`): the span an access predicted to follow will use.
    #[inline]
    pub(crate) fn span_and_next(
        &mut self,
        mem: &dyn GlobalMemory,
        addr: u64,
        size: u64,
        next: Option<u64>,
    ) -> Option<(HostSpan<'_>, Option<HostSpan<'_>>)> {
        let end = addr.checked_add(size)?;
        let k = match self.position(addr, size) {
            Some(k) => k,
            None if self.position_any(addr, size).is_some() => return None,
            None => self.fill(mem, addr)?,
        };
        let c = self.at(k)?;
        let inside = |a: u64, e: u64| a >= c.base && e <= c.end;
        if !c.writable || !inside(addr, end) {
            return None;
        }
        let next =
            next.and_then(|n| inside(n, n.checked_add(size)?).then(|| Self::span_in(c, n, size)));
        Some((Self::span_in(c, addr, size), next))
    }

    /// Checks `[addr, addr+size)` and returns its host location (a read-only region
    /// serves a read only).
    ///
    /// # Errors
    /// [`Fault::Memory`] if no single region the agent may access contains the range,
    /// or if `write` and that region is read-only.
    pub(crate) fn translate(
        &mut self,
        mem: &dyn GlobalMemory,
        addr: u64,
        size: u64,
        write: bool,
        pc: u64,
    ) -> Result<HostSpan<'_>, Fault> {
        let fault = || Fault::Memory {
            address: addr,
            size,
            write,
            pc,
            lane: None,
        };
        let k = match self.position_any(addr, size) {
            Some(k) => k,
            None => {
                self.fill(mem, addr).ok_or_else(fault)?;
                self.position_any(addr, size).ok_or_else(fault)?
            }
        };
        let c = self.at(k).ok_or_else(fault)?;
        if write && !c.writable {
            return Err(fault());
        }
        Ok(Self::span_in(c, addr, size))
    }

    /// As `translate`, for an atomic of `size` (4 or 8) bytes: the device address must
    /// be naturally aligned.
    ///
    /// # Errors
    /// [`Fault::MisalignedAtomic`] or [`Fault::Memory`].
    pub(crate) fn translate_atomic(
        &mut self,
        mem: &dyn GlobalMemory,
        addr: u64,
        size: u64,
        pc: u64,
    ) -> Result<HostSpan<'_>, Fault> {
        // Sizes are 4 or 8: a power of two.
        if addr & (size - 1) != 0 {
            return Err(Fault::MisalignedAtomic {
                address: addr,
                size,
                pc,
            });
        }
        let span = self.translate(mem, addr, size, true, pc)?;
        if (span.ptr as usize) & (size as usize - 1) != 0 {
            return Err(Fault::MisalignedAtomic {
                address: addr,
                size,
                pc,
            });
        }
        Ok(span)
    }
}

/// Reads `n` dwords at `addr` from one region (used for code fetch and descriptors).
///
/// # Errors
/// [`Fault::Memory`] if the range is not inside one region.
pub fn read_dwords(mem: &dyn GlobalMemory, addr: u64, out: &mut [u32]) -> Result<(), Fault> {
    let mut cache = RegionCache::new();
    let span = cache.translate(mem, addr, 4 * out.len() as u64, false, addr)?;
    for (i, w) in out.iter_mut().enumerate() {
        *w = u32::from_le_bytes(span.load::<4>(i * 4));
    }
    Ok(())
}

/// Reads dwords from a region the caller holds: `out.len()` dwords at byte offset
/// `offset`, or `None` if that runs past the region.
pub fn read_region_dwords(region: &dyn MemoryRegion, offset: u64, out: &mut [u32]) -> Option<()> {
    let size = 4 * out.len() as u64;
    if offset.checked_add(size)? > region.len() {
        return None;
    }
    // SAFETY: offset + size <= len, and host_ptr() is valid for len bytes while
    // `region` is alive (the caller holds it for this call).
    let ptr = unsafe { region.host_ptr().add(offset as usize) };
    let span = HostSpan {
        ptr,
        len: size as usize,
        _alive: PhantomData,
    };
    for (i, w) in out.iter_mut().enumerate() {
        *w = u32::from_le_bytes(span.load::<4>(i * 4));
    }
    Some(())
}

/// A simple owned region backed by host memory (scratch backing, tests). Its device
/// address is its host address, which cannot collide with another live allocation of
/// the same process.
pub struct HostRegion {
    buf: Box<[Line]>,
    len: u64,
}

/// 64 bytes of a [`HostRegion`], cache-line aligned (as a wave's register rows are,
/// see `wave::Rows`): the 32-byte moves of whole-wave accesses, such as a scratch
/// row's, then never split across two lines. Atomic words: the engine accesses the
/// memory only atomically.
#[repr(C, align(64))]
struct Line([AtomicU64; 8]);

impl HostRegion {
    /// A zero-filled region of `len` bytes (rounded up to 64).
    pub fn zeroed(len: u64) -> Self {
        let lines = len.div_ceil(64) as usize;
        let buf: Box<[Line]> = (0..lines)
            .map(|_| Line(std::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        Self { buf, len }
    }
}

impl HostRegion {
    fn span(&self, offset: u64, len: usize) -> Option<HostSpan<'_>> {
        if offset.checked_add(len as u64)? > self.len {
            return None;
        }
        Some(HostSpan {
            // SAFETY: offset + len <= self.len <= the buffer's size in bytes.
            ptr: unsafe { self.host_ptr().add(offset as usize) },
            len,
            _alive: PhantomData,
        })
    }

    /// Copies `data` into the region at byte `offset` (atomic byte/dword stores, safe
    /// against concurrent waves). Returns false if the range does not fit.
    pub fn write_bytes(&self, offset: u64, data: &[u8]) -> bool {
        let Some(span) = self.span(offset, data.len()) else {
            return false;
        };
        for (k, chunk) in data.chunks(4).enumerate() {
            span.store(4 * k, chunk);
        }
        true
    }

    /// Copies bytes at `offset` into `out`. Returns false if the range does not fit.
    pub fn read_bytes(&self, offset: u64, out: &mut [u8]) -> bool {
        let Some(span) = self.span(offset, out.len()) else {
            return false;
        };
        for (k, b) in out.iter_mut().enumerate() {
            *b = span.load::<1>(k)[0];
        }
        true
    }
}

// SAFETY: the buffer is owned by the region, lives as long as it, is `len` bytes or
// more, and is 64-aligned (`Line` storage), with device address = host address so
// both have the same alignment. All engine accesses are atomic, so sharing is sound.
unsafe impl MemoryRegion for HostRegion {
    fn device_base(&self) -> u64 {
        self.buf.as_ptr() as u64
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn host_ptr(&self) -> *mut u8 {
        self.buf.as_ptr().cast::<u8>().cast_mut()
    }
}

/// A window `[offset, offset+len)` of another region, presented as a region of its own
/// (a wave's scratch slice: accesses outside the slice fault).
pub struct SubRegion {
    parent: Arc<dyn MemoryRegion>,
    offset: u64,
    len: u64,
}

impl SubRegion {
    /// The window, or `None` if it does not fit in `parent`.
    pub fn new(parent: Arc<dyn MemoryRegion>, offset: u64, len: u64) -> Option<Self> {
        if offset.checked_add(len)? > parent.len() {
            return None;
        }
        Some(Self {
            parent,
            offset,
            len,
        })
    }
}

// SAFETY: the window lies inside the parent (checked in `new`), whose Arc this holds,
// so the parent's guarantee covers it; the offset keeps device/host alignment equal
// because both addresses move by the same amount.
unsafe impl MemoryRegion for SubRegion {
    fn device_base(&self) -> u64 {
        self.parent.device_base() + self.offset
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn host_ptr(&self) -> *mut u8 {
        // SAFETY: offset <= parent.len(), so the result stays in (or one past) the parent.
        unsafe { self.parent.host_ptr().add(self.offset as usize) }
    }
}

/// A wave's note of a gather that deferred itself (see `WaveState::gather_fast`): the key
/// of its plan ([`FlatPlan::key`]) while it waits, and its lanes' addresses and
/// their bounds, kept until it resumes at the same instruction, its lines then on
/// their way. The addresses of every gather are computed here, in place, so that a
/// deferral copies nothing.
#[derive(Clone, Debug)]
pub(crate) struct DeferredGather {
    /// The waiting gather's key; `None` when none waits (the rest is then stale).
    pub(crate) key: Option<u64>,
    pub(crate) addrs: [u64; WAVE_SIZE],
    pub(crate) lo: u64,
    pub(crate) hi: u64,
}

impl Default for DeferredGather {
    fn default() -> Self {
        Self {
            key: None,
            addrs: [0; WAVE_SIZE],
            lo: 0,
            hi: 0,
        }
    }
}

impl DeferredGather {
    /// Whether the gather of plan `key` waits here (the note stays).
    pub(crate) fn waits(&self, key: u64) -> bool {
        self.key == Some(key)
    }

    /// [`waits`](Self::waits); the gather then no longer does (the note is used
    /// once, by the execution that resumes it).
    pub(crate) fn resume(&mut self, key: u64) -> bool {
        let waits = self.waits(key);
        if waits {
            self.key = None;
        }
        waits
    }

    /// Forgets any waiting gather (a wave reset).
    pub(crate) fn clear(&mut self) {
        self.key = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host region starts on a cache line and holds exactly the bytes asked for.
    #[test]
    fn host_regions_start_on_cache_lines() {
        for len in [1u64, 8, 63, 64, 65, 1000, 4096] {
            let r = HostRegion::zeroed(len);
            assert_eq!(r.device_base() % 64, 0, "{len} bytes");
            assert_eq!(r.len(), len);
            let last = len as usize - 1;
            assert!(r.write_bytes(len - 1, &[0xA5]), "{len} bytes: last byte");
            assert!(!r.write_bytes(len, &[0xA5]), "{len} bytes: past the end");
            let mut back = vec![0xFFu8; len as usize];
            assert!(r.read_bytes(0, &mut back));
            assert!(back[..last].iter().all(|&b| b == 0) && back[last] == 0xA5);
        }
    }

    /// The span of an access and the span predicted for the next one: the second
    /// only when the region of the first holds it (else none, the first still
    /// found); nothing when no region holds the first.
    #[test]
    fn the_next_span_comes_from_the_region_of_the_access() {
        use crate::wave::testutil::Mem;
        let mem = Mem::default();
        let (a, b) = (
            Arc::new(HostRegion::zeroed(4096)),
            Arc::new(HostRegion::zeroed(4096)),
        );
        assert!(a.write_bytes(1024, &[0x5A; 512]));
        mem.0.lock().unwrap().extend([a.clone(), b.clone()]);
        let (base, other) = (a.device_base(), b.device_base());
        let mut cache = RegionCache::new();
        let host = |s: &HostSpan<'_>| s.ptr as usize;
        for (next, expect) in [
            (Some(base + 3584), Some(3584)),
            (Some(base + 3585), None),
            (Some(base.wrapping_sub(512)), None),
            (Some(other), None),
            (Some(u64::MAX - 8), None),
            (None, None),
        ] {
            let (span, ahead) = cache.span_and_next(&mem, base + 1024, 512, next).unwrap();
            assert_eq!(span.len, 512);
            assert_eq!(host(&span), a.host_ptr() as usize + 1024, "next {next:x?}");
            assert_eq!(span.load_u64(0), 0x5A5A_5A5A_5A5A_5A5A);
            let at = ahead.map(|s| (host(&s) - a.host_ptr() as usize, s.len));
            assert_eq!(at, expect.map(|o| (o, 512)), "next {next:x?}");
        }
        assert!(cache.span_and_next(&mem, base + 3585, 512, None).is_none());
        assert!(cache.span_and_next(&mem, 8, 512, Some(base)).is_none());
    }

    /// A wave's scratch slice and the five shared regions STREAM's triad reaches,
    /// reached in turn again and again, are asked of the memory once each and stay
    /// in the table compiled code reads; more regions than fit are still found
    /// right, by asking again.
    #[test]
    fn a_kernels_regions_stay_cached() {
        use crate::wave::testutil::Mem;
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counting(Mem, AtomicUsize);
        impl GlobalMemory for Counting {
            fn region(&self, addr: u64) -> Option<Arc<dyn MemoryRegion>> {
                self.1.fetch_add(1, Ordering::Relaxed);
                self.0.region(addr)
            }
        }
        let mem = Counting(Mem::default(), AtomicUsize::new(0));
        const SHARED: usize = 5;
        let regions: Vec<_> = (0..=RECENT.max(SHARED))
            .map(|_| Arc::new(HostRegion::zeroed(256)))
            .collect();
        mem.0 .0.lock().unwrap().extend(regions.iter().cloned());
        let scratch: Arc<dyn MemoryRegion> = Arc::new(HostRegion::zeroed(256));
        let mut cache = RegionCache::new();
        cache.set_private(std::slice::from_ref(&scratch));
        let check = |cache: &mut RegionCache, r: &dyn MemoryRegion, off: u64| {
            let at = r.device_base() + off;
            let span = cache.span(&mem, at, 8).expect("a region holds the access");
            assert_eq!(span.ptr as usize, r.host_ptr() as usize + off as usize);
        };
        for round in 0..3 {
            check(&mut cache, scratch.as_ref(), 8);
            for (i, r) in regions[..SHARED].iter().enumerate() {
                check(&mut cache, r.as_ref(), 8 * (i + round) as u64);
            }
        }
        assert_eq!(
            mem.1.load(Ordering::Relaxed),
            SHARED,
            "one lookup per region"
        );
        assert_eq!(cache.table.n, 1 + SHARED);
        let bases: Vec<u64> = cache.table.windows.iter().map(|w| w.base).collect();
        assert_eq!(bases[0], scratch.device_base());
        for r in &regions[..SHARED] {
            assert!(bases[..1 + SHARED].contains(&r.device_base()));
        }
        // More than fit: each found, and the others still right.
        for r in regions.iter().chain([&regions[0]]) {
            check(&mut cache, r.as_ref(), 16);
        }
        assert!(mem.1.load(Ordering::Relaxed) > RECENT);
        assert_eq!(cache.table.n, WINDOWS);
        for r in regions.iter().chain([&regions[0]]) {
            check(&mut cache, r.as_ref(), 0);
        }
        check(&mut cache, scratch.as_ref(), 0);
    }

    /// The dword-plane split and join (AVX2 build when the host has it) against the
    /// definition: qword k is `lo[k] | hi[k] << 32`, each lane in its own element;
    /// a host-misaligned or too short span is refused without any effect.
    #[test]
    fn qword_planes_split_and_join_per_lane() {
        let r = HostRegion::zeroed(1024);
        let bytes: Vec<u8> = (0..1024u32).map(|i| (i * 89 + 3) as u8).collect();
        assert!(r.write_bytes(0, &bytes));
        let span = r.span(8, 512).unwrap();
        let (mut lo, mut hi) = ([0u32; 64], [0u32; 64]);
        assert!(span.load_qword_planes(0, &mut lo, &mut hi));
        for k in 0..64 {
            let at = 8 + 8 * k;
            let q = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
            assert_eq!((lo[k], hi[k]), (q as u32, (q >> 32) as u32), "qword {k}");
        }
        let lo2: [u32; 64] = std::array::from_fn(|k| 0x1000_0001u32.wrapping_mul(k as u32 + 7));
        let hi2: [u32; 64] = std::array::from_fn(|k| !(k as u32) << 9);
        assert!(span.store_qword_planes(0, &lo2, &hi2));
        let mut back = vec![0u8; 1024];
        assert!(r.read_bytes(0, &mut back));
        assert_eq!(back[..8], bytes[..8]);
        assert_eq!(back[520..], bytes[520..]);
        for k in 0..64 {
            let at = 8 + 8 * k;
            let q = u64::from(lo2[k]) | u64::from(hi2[k]) << 32;
            assert_eq!(back[at..at + 8], q.to_le_bytes(), "qword {k}");
        }
        // Host address 4 past an 8-aligned one, and a span one byte short.
        let (mut lo3, mut hi3) = ([7u32; 64], [7u32; 64]);
        assert!(!r
            .span(4, 512)
            .unwrap()
            .load_qword_planes(0, &mut lo3, &mut hi3));
        assert!(!r.span(4, 512).unwrap().store_qword_planes(0, &lo2, &hi2));
        assert!(!r
            .span(8, 511)
            .unwrap()
            .load_qword_planes(0, &mut lo3, &mut hi3));
        assert!(lo3.iter().chain(hi3.iter()).all(|&x| x == 7));
        let mut again = vec![0u8; 1024];
        assert!(r.read_bytes(0, &mut again));
        assert_eq!(again, back);
    }
}
