//! A size-class cache of device memory blocks over a raw allocator.
//!
//! Follows the semantics of LLVM 16's `MemoryManagerTy`
//! (`openmp/libomptarget/plugins/common/MemoryManager/MemoryManager.h`):
//!
//! - requests of at most `threshold` bytes are served from a free list when a
//!   previously freed block of **exactly** the same size is cached (LLVM keys
//!   its free lists by size and looks up an equal size), else from the
//!   allocator; such blocks are kept for reuse when freed;
//! - requests above the threshold go straight to the allocator and are
//!   returned to it when freed;
//! - free lists are sharded into size classes 0, 4, 8, …, 8192 bytes (powers
//!   of two; larger sizes share the last class), each behind its own lock;
//! - when the allocator fails, every cached block is released and the
//!   allocation retried once;
//! - teardown ([`MemoryManager::release_all`], or dropping the manager) hands
//!   every block the manager knows, in use or cached, back to the allocator.
//!
//! Difference from LLVM: the manager tracks every block it handed out, large
//! ones included, so freeing a pointer it never returned (or freeing twice) is
//! reported as [`MemoryManagerError::UnknownPointer`] instead of being passed
//! to the allocator blindly. A caller that wants LLVM's fall-through (free
//! unknown pointers on the pool directly) can do so on that error.

// FxHash: a fast, non-cryptographic hash for address-keyed maps (SipHash
// dominated the launch path); keys are not attacker-chosen.
use rustc_hash::FxHashMap as AddrMap;
use std::fmt;

use parking_lot::Mutex;

/// Environment variable giving the cache threshold in bytes
/// (`MemoryManagerTy::getSizeThresholdFromEnv`).
pub const THRESHOLD_ENV: &str = "LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD";

/// LLVM 16's default threshold: 8192 bytes (`1 << 13`).
pub const DEFAULT_THRESHOLD: usize = 1 << 13;

/// Number of size classes: 0, then 4, 8, …, 8192 (`MemoryManagerTy`'s
/// `BucketSize`).
const NUM_BUCKETS: usize = 13;

/// The raw allocator the manager caches blocks of: typically an HSA memory
/// pool of one device.
///
/// Addresses are device addresses as `u64`; a successful `allocate` never
/// returns 0.
pub trait BlockAllocator: Send + Sync {
    /// Error of the allocator (e.g. an HSA status).
    type Error: fmt::Display;
    /// Allocates `size` bytes (`size > 0`) and returns the block's address.
    fn allocate(&self, size: usize) -> Result<u64, Self::Error>;
    /// Returns a block obtained from [`BlockAllocator::allocate`].
    fn free(&self, ptr: u64) -> Result<(), Self::Error>;
}

/// Errors of [`MemoryManager`].
#[derive(Debug, thiserror::Error)]
pub enum MemoryManagerError<E: fmt::Display> {
    /// The underlying allocator failed (after the cache was flushed, for allocations).
    #[error("device allocator failed: {0}")]
    Allocator(E),
    /// `free` of an address the manager did not hand out, or that is already free.
    #[error("memory manager: pointer {0:#x} is not a live allocation of this manager")]
    UnknownPointer(u64),
    /// Allocation of 0 bytes (LLVM returns NULL for it).
    #[error("memory manager: allocation of 0 bytes")]
    ZeroSize,
}

/// State of one block the manager handed out.
#[derive(Debug, Clone, Copy)]
struct Block {
    /// Requested size in bytes.
    size: usize,
    /// True while the block sits in a free list (cached, not in use).
    cached: bool,
}

/// A size-class cache over a [`BlockAllocator`]; see the module docs.
///
/// Thread-safe: every method takes `&self`. Each call takes at most two short
/// locks (the block table and one size class) and never holds a lock while
/// calling the allocator.
pub struct MemoryManager<A: BlockAllocator> {
    allocator: A,
    /// Blocks of at most this many bytes are cached when freed; 0 = no caching.
    threshold: usize,
    /// Every block handed out and not yet returned to the allocator.
    blocks: Mutex<AddrMap<u64, Block>>,
    /// Free lists per size class: exact size → cached addresses.
    buckets: [Mutex<AddrMap<usize, Vec<u64>>>; NUM_BUCKETS],
    /// Requests served by [`MemoryManager::allocate`] (cached or new).
    served: std::sync::atomic::AtomicU64,
}

impl<A: BlockAllocator> fmt::Debug for MemoryManager<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryManager")
            .field("threshold", &self.threshold)
            .field("live_blocks", &self.blocks.lock().len())
            .finish()
    }
}

/// Size class of a request of `size` bytes: the largest class whose size
/// (0, 4, 8, …, 8192) is at most `size` rounded down to a power of two.
fn bucket_of(size: usize) -> usize {
    if size < 4 {
        return 0;
    }
    // floor(log2(size)) >= 2 here; class 1 is 4 bytes = 2^2.
    let log2 = (usize::BITS - 1 - size.leading_zeros()) as usize;
    (log2 - 1).min(NUM_BUCKETS - 1)
}

impl<A: BlockAllocator> MemoryManager<A> {
    /// Creates a manager over `allocator` caching blocks of at most
    /// `threshold` bytes. `threshold == 0` disables the cache: every free goes
    /// to the allocator (blocks are still tracked).
    pub fn new(allocator: A, threshold: usize) -> Self {
        MemoryManager {
            allocator,
            threshold,
            blocks: Mutex::new(AddrMap::default()),
            buckets: std::array::from_fn(|_| Mutex::new(AddrMap::default())),
            served: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The threshold from [`THRESHOLD_ENV`] with LLVM 16 semantics
    /// (`MemoryManagerTy::getSizeThresholdFromEnv`): unset → `Some(default)`;
    /// `0` → `None` (manager disabled);
    /// `N > 0` → `Some(N)`. Where LLVM aborts on a non-numeric value
    /// (uncaught `std::stoul` exception), this returns `Some(default)` and
    /// logs a warning.
    pub fn threshold_from_env(default: usize) -> Option<usize> {
        Self::threshold_from_lookup(default, |name| std::env::var(name).ok())
    }

    /// [`MemoryManager::threshold_from_env`] with an explicit variable
    /// lookup (for tests and for callers that snapshot the environment).
    pub fn threshold_from_lookup(
        default: usize,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Option<usize> {
        match lookup(THRESHOLD_ENV) {
            None => Some(default),
            Some(text) => match crate::env::parse_size(&text) {
                Some(0) => None,
                Some(n) => Some(n),
                None => {
                    log::warn!("{THRESHOLD_ENV}={text:?} is not a number; using {default}");
                    Some(default)
                }
            },
        }
    }

    /// The cache threshold in bytes (0: caching disabled).
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// The underlying allocator.
    pub fn allocator(&self) -> &A {
        &self.allocator
    }

    /// Returns a block of at least `size` bytes: a cached block of exactly
    /// `size` bytes when `size <= threshold` and one is available, else a new
    /// block from the allocator.
    ///
    /// Errors: [`MemoryManagerError::ZeroSize`] for `size == 0`;
    /// [`MemoryManagerError::Allocator`] when the allocator fails even after
    /// all cached blocks were released.
    pub fn allocate(&self, size: usize) -> Result<u64, MemoryManagerError<A::Error>> {
        if size == 0 {
            return Err(MemoryManagerError::ZeroSize);
        }
        self.served
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if size <= self.threshold {
            let reused = {
                // An emptied list stays in its bucket, so that the next
                // `free` of this size does not allocate a new one.
                self.buckets[bucket_of(size)]
                    .lock()
                    .get_mut(&size)
                    .and_then(Vec::pop)
            };
            if let Some(ptr) = reused {
                if let Some(block) = self.blocks.lock().get_mut(&ptr) {
                    block.cached = false;
                }
                return Ok(ptr);
            }
        }
        let ptr = self.allocate_from_device(size)?;
        self.blocks.lock().insert(
            ptr,
            Block {
                size,
                cached: false,
            },
        );
        Ok(ptr)
    }

    /// Allocates on the allocator; on failure flushes the cache and retries
    /// once (LLVM's `allocateOrFreeAndAllocateOnDevice`).
    fn allocate_from_device(&self, size: usize) -> Result<u64, MemoryManagerError<A::Error>> {
        match self.allocator.allocate(size) {
            Ok(ptr) => Ok(ptr),
            Err(first) => {
                if self.release_cached()? == 0 {
                    return Err(MemoryManagerError::Allocator(first));
                }
                self.allocator
                    .allocate(size)
                    .map_err(MemoryManagerError::Allocator)
            }
        }
    }

    /// Frees a block returned by [`MemoryManager::allocate`]: cached for reuse
    /// when its size is at most the threshold, else returned to the allocator.
    ///
    /// Errors: [`MemoryManagerError::UnknownPointer`] when `ptr` is not a live
    /// block of this manager (never allocated here, or already freed);
    /// [`MemoryManagerError::Allocator`] when the allocator's free fails.
    pub fn free(&self, ptr: u64) -> Result<(), MemoryManagerError<A::Error>> {
        let size = {
            let mut blocks = self.blocks.lock();
            let block = match blocks.get_mut(&ptr) {
                Some(b) if !b.cached => b,
                _ => return Err(MemoryManagerError::UnknownPointer(ptr)),
            };
            if block.size > self.threshold {
                blocks.remove(&ptr);
                None
            } else {
                block.cached = true;
                Some(block.size)
            }
        };
        match size {
            Some(size) => {
                self.buckets[bucket_of(size)]
                    .lock()
                    .entry(size)
                    .or_default()
                    .push(ptr);
                Ok(())
            }
            None => self
                .allocator
                .free(ptr)
                .map_err(MemoryManagerError::Allocator),
        }
    }

    /// Returns every cached (free, not in use) block to the allocator and
    /// returns how many were released. Blocks in use are untouched.
    ///
    /// Errors: the first allocator failure (all blocks are still attempted).
    pub fn release_cached(&self) -> Result<usize, MemoryManagerError<A::Error>> {
        let mut taken = Vec::new();
        for bucket in &self.buckets {
            for (_, ptrs) in bucket.lock().drain() {
                taken.extend(ptrs);
            }
        }
        {
            let mut blocks = self.blocks.lock();
            for ptr in &taken {
                blocks.remove(ptr);
            }
        }
        let count = taken.len();
        self.free_all(taken)?;
        Ok(count)
    }

    /// Returns every block the manager knows, cached or still in use, to the
    /// allocator (teardown; LLVM's destructor). The manager stays usable and
    /// empty afterwards; addresses handed out before are invalid.
    ///
    /// Errors: the first allocator failure (all blocks are still attempted).
    pub fn release_all(&self) -> Result<(), MemoryManagerError<A::Error>> {
        let taken: Vec<u64> = {
            let mut blocks = self.blocks.lock();
            for bucket in &self.buckets {
                bucket.lock().clear();
            }
            blocks.drain().map(|(ptr, _)| ptr).collect()
        };
        self.free_all(taken)
    }

    /// Frees `ptrs` on the allocator, reporting the first failure.
    fn free_all(&self, ptrs: Vec<u64>) -> Result<(), MemoryManagerError<A::Error>> {
        let mut first_err = None;
        for ptr in ptrs {
            if let Err(e) = self.allocator.free(ptr) {
                log::warn!("memory manager: freeing {ptr:#x} failed: {e}");
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(MemoryManagerError::Allocator(e)),
            None => Ok(()),
        }
    }

    /// Number of requests [`MemoryManager::allocate`] served so far (from
    /// the cache or the allocator), for diagnostics and tests.
    pub fn allocations(&self) -> u64 {
        self.served.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes of every block the manager holds from its allocator (in use
    /// or cached), for messages.
    pub fn held_bytes(&self) -> usize {
        self.blocks.lock().values().map(|b| b.size).sum()
    }

    /// Number of blocks currently handed out (in use), for diagnostics.
    pub fn live_blocks(&self) -> usize {
        self.blocks.lock().values().filter(|b| !b.cached).count()
    }

    /// Number of cached (free, reusable) blocks, for diagnostics.
    pub fn cached_blocks(&self) -> usize {
        self.blocks.lock().values().filter(|b| b.cached).count()
    }
}

impl<A: BlockAllocator> Drop for MemoryManager<A> {
    /// Releases every remaining block (see [`MemoryManager::release_all`]);
    /// allocator errors are logged.
    fn drop(&mut self) {
        if let Err(e) = self.release_all() {
            log::warn!("memory manager teardown: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A fake device allocator: hands out distinct addresses, counts calls,
    /// remembers live blocks, and can be told to fail.
    #[derive(Default)]
    struct Fake {
        next: AtomicU64,
        allocs: AtomicUsize,
        frees: AtomicUsize,
        live: Mutex<HashSet<u64>>,
        /// Allocation fails while more than this many blocks are live.
        capacity: Option<usize>,
    }

    #[derive(Debug, PartialEq)]
    struct FakeError(&'static str);
    impl fmt::Display for FakeError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl BlockAllocator for Fake {
        type Error = FakeError;
        fn allocate(&self, size: usize) -> Result<u64, FakeError> {
            let mut live = self.live.lock();
            if self.capacity.is_some_and(|c| live.len() >= c) {
                return Err(FakeError("out of memory"));
            }
            self.allocs.fetch_add(1, Ordering::SeqCst);
            // Distinct, never 0, 4 KiB apart whatever the size.
            let ptr = 0x1000 * (self.next.fetch_add(1, Ordering::SeqCst) + 1);
            assert!(size > 0);
            live.insert(ptr);
            Ok(ptr)
        }
        fn free(&self, ptr: u64) -> Result<(), FakeError> {
            self.frees.fetch_add(1, Ordering::SeqCst);
            if self.live.lock().remove(&ptr) {
                Ok(())
            } else {
                Err(FakeError("double free on device"))
            }
        }
    }

    impl BlockAllocator for Arc<Fake> {
        type Error = FakeError;
        fn allocate(&self, size: usize) -> Result<u64, FakeError> {
            (**self).allocate(size)
        }
        fn free(&self, ptr: u64) -> Result<(), FakeError> {
            (**self).free(ptr)
        }
    }

    fn counts(f: &Fake) -> (usize, usize) {
        (
            f.allocs.load(Ordering::SeqCst),
            f.frees.load(Ordering::SeqCst),
        )
    }

    #[test]
    fn size_classes() {
        // Class = largest i with {0, 4, 8, ..., 8192}[i] <= floor_pow2(size):
        // the classes LLVM's BucketSize table intends (its binary search
        // files sizes >= 8192 under 4096; classes only shard the free lists
        // and are never observable, since reuse needs an equal size).
        assert_eq!(bucket_of(1), 0);
        assert_eq!(bucket_of(3), 0);
        assert_eq!(bucket_of(4), 1);
        assert_eq!(bucket_of(7), 1);
        assert_eq!(bucket_of(8), 2);
        assert_eq!(bucket_of(4095), 10);
        assert_eq!(bucket_of(4096), 11);
        assert_eq!(bucket_of(8192), 12);
        assert_eq!(bucket_of(1 << 20), 12);
        assert_eq!(bucket_of(usize::MAX), 12);
    }

    #[test]
    fn freed_small_block_is_reused_for_same_size_only() {
        let mm = MemoryManager::new(Fake::default(), DEFAULT_THRESHOLD);
        let a = mm.allocate(100).unwrap();
        mm.free(a).unwrap();
        assert_eq!(
            counts(mm.allocator()),
            (1, 0),
            "small block cached, not freed"
        );
        assert_eq!(mm.cached_blocks(), 1);
        // Same size class (64..127) but a different size: LLVM looks up an
        // equal size, so a new block.
        let b = mm.allocate(120).unwrap();
        assert_ne!(a, b);
        assert_eq!(counts(mm.allocator()), (2, 0));
        // Exactly the same size: the cached block comes back.
        let c = mm.allocate(100).unwrap();
        assert_eq!(c, a);
        assert_eq!(counts(mm.allocator()), (2, 0));
        assert_eq!(mm.cached_blocks(), 0);
        assert_eq!(mm.live_blocks(), 2);
    }

    #[test]
    fn threshold_boundary() {
        let mm = MemoryManager::new(Fake::default(), 8192);
        // Exactly the threshold is cached (LLVM: `Size > SizeThreshold` bypasses).
        let at = mm.allocate(8192).unwrap();
        mm.free(at).unwrap();
        assert_eq!(counts(mm.allocator()), (1, 0));
        assert_eq!(mm.allocate(8192).unwrap(), at);
        // One byte above goes straight to the allocator and back.
        let above = mm.allocate(8193).unwrap();
        assert_eq!(counts(mm.allocator()), (2, 0));
        mm.free(above).unwrap();
        assert_eq!(counts(mm.allocator()), (2, 1));
        assert!(!mm.allocator().live.lock().contains(&above));
        // Freed twice: unknown now.
        assert!(matches!(
            mm.free(above),
            Err(MemoryManagerError::UnknownPointer(p)) if p == above
        ));
    }

    #[test]
    fn custom_threshold_caches_larger_blocks() {
        let mm = MemoryManager::new(Fake::default(), 1 << 20);
        let a = mm.allocate(65536).unwrap();
        mm.free(a).unwrap();
        assert_eq!(mm.allocate(65536).unwrap(), a);
        assert_eq!(counts(mm.allocator()), (1, 0));
    }

    #[test]
    fn threshold_zero_disables_caching() {
        let mm = MemoryManager::new(Fake::default(), 0);
        let a = mm.allocate(16).unwrap();
        mm.free(a).unwrap();
        assert_eq!(counts(mm.allocator()), (1, 1));
        let b = mm.allocate(16).unwrap();
        assert_ne!(a, b);
        assert_eq!(counts(mm.allocator()), (2, 1));
    }

    #[test]
    fn errors() {
        let mm = MemoryManager::new(Fake::default(), DEFAULT_THRESHOLD);
        assert!(matches!(mm.allocate(0), Err(MemoryManagerError::ZeroSize)));
        assert!(matches!(
            mm.free(0xdead_0000),
            Err(MemoryManagerError::UnknownPointer(0xdead_0000))
        ));
        let a = mm.allocate(64).unwrap();
        mm.free(a).unwrap();
        // Double free of a cached block.
        assert!(matches!(
            mm.free(a),
            Err(MemoryManagerError::UnknownPointer(p)) if p == a
        ));
        // Unknown pointers never reach the allocator.
        assert_eq!(counts(mm.allocator()), (1, 0));
        let msg = MemoryManagerError::<FakeError>::UnknownPointer(0x10).to_string();
        assert!(msg.contains("0x10"), "{msg}");
    }

    #[test]
    fn allocation_failure_flushes_cache_and_retries() {
        let fake = Fake {
            capacity: Some(2),
            ..Fake::default()
        };
        let mm = MemoryManager::new(fake, DEFAULT_THRESHOLD);
        let a = mm.allocate(32).unwrap();
        let b = mm.allocate(64).unwrap();
        mm.free(a).unwrap();
        // Device full (2 live blocks, one of them cached): a 128-byte request
        // flushes the cached 32-byte block and succeeds.
        let c = mm.allocate(128).unwrap();
        assert_eq!(counts(mm.allocator()), (3, 1));
        assert_eq!(mm.cached_blocks(), 0);
        // Nothing cached any more: the failure is reported.
        assert!(matches!(
            mm.allocate(256),
            Err(MemoryManagerError::Allocator(FakeError("out of memory")))
        ));
        mm.free(b).unwrap();
        mm.free(c).unwrap();
    }

    #[test]
    fn release_all_frees_cached_and_live_blocks() {
        let mm = MemoryManager::new(Fake::default(), DEFAULT_THRESHOLD);
        let small_live = mm.allocate(8).unwrap();
        let small_cached = mm.allocate(16).unwrap();
        let large_live = mm.allocate(1 << 16).unwrap();
        mm.free(small_cached).unwrap();
        mm.release_all().unwrap();
        assert_eq!(counts(mm.allocator()), (3, 3));
        assert!(mm.allocator().live.lock().is_empty());
        assert_eq!(mm.live_blocks() + mm.cached_blocks(), 0);
        for p in [small_live, small_cached, large_live] {
            assert!(matches!(
                mm.free(p),
                Err(MemoryManagerError::UnknownPointer(_))
            ));
        }
        // Still usable afterwards.
        let d = mm.allocate(8).unwrap();
        mm.free(d).unwrap();
    }

    #[test]
    fn release_cached_keeps_live_blocks() {
        let mm = MemoryManager::new(Fake::default(), DEFAULT_THRESHOLD);
        let live = mm.allocate(8).unwrap();
        for _ in 0..3 {
            let p = mm.allocate(24).unwrap();
            let q = mm.allocate(24).unwrap();
            mm.free(p).unwrap();
            mm.free(q).unwrap();
        }
        // Two blocks of 24 bytes circulate; both cached now.
        assert_eq!(counts(mm.allocator()), (3, 0));
        assert_eq!(mm.release_cached().unwrap(), 2);
        assert_eq!(counts(mm.allocator()), (3, 2));
        assert_eq!(mm.live_blocks(), 1);
        mm.free(live).unwrap();
    }

    #[test]
    fn drop_releases_everything() {
        let fake = Arc::new(Fake::default());
        {
            let mm = MemoryManager::new(Arc::clone(&fake), DEFAULT_THRESHOLD);
            let a = mm.allocate(8).unwrap();
            let _b = mm.allocate(1 << 20).unwrap();
            mm.free(a).unwrap();
        }
        assert_eq!(counts(&fake), (2, 2));
        assert!(fake.live.lock().is_empty());
    }

    #[test]
    fn concurrent_allocate_free() {
        let mm = Arc::new(MemoryManager::new(Fake::default(), 4096));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mm = Arc::clone(&mm);
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..2000usize {
                        let size = [8, 100, 4096, 5000][(i + t) % 4];
                        let p = mm.allocate(size).unwrap();
                        mine.push(p);
                        if i % 3 != 0 {
                            let q = mine.swap_remove((i * 7) % mine.len());
                            mm.free(q).unwrap();
                        }
                    }
                    mine
                })
            })
            .collect();
        let mut held = HashSet::new();
        for t in threads {
            for p in t.join().unwrap() {
                assert!(held.insert(p), "block {p:#x} handed out twice");
            }
        }
        assert_eq!(mm.live_blocks(), held.len());
        // Every held block is live on the device; the cache only holds
        // blocks nobody holds.
        let fake = mm.allocator();
        for p in &held {
            assert!(fake.live.lock().contains(p));
        }
        let (allocs, frees) = counts(fake);
        assert_eq!(allocs - frees, held.len() + mm.cached_blocks());
        mm.release_all().unwrap();
        assert!(fake.live.lock().is_empty());
    }

    #[test]
    fn threshold_from_lookup_follows_llvm() {
        let env = |v: Option<&'static str>| {
            move |name: &str| {
                assert_eq!(name, THRESHOLD_ENV);
                v.map(str::to_string)
            }
        };
        type M = MemoryManager<Fake>;
        assert_eq!(M::threshold_from_lookup(8192, env(None)), Some(8192));
        assert_eq!(M::threshold_from_lookup(8192, env(Some("0"))), None);
        assert_eq!(
            M::threshold_from_lookup(8192, env(Some("65536"))),
            Some(65536)
        );
        // std::stoul: leading blanks skipped, trailing text ignored.
        assert_eq!(
            M::threshold_from_lookup(8192, env(Some("  123kb"))),
            Some(123)
        );
        // LLVM aborts here; we keep the default.
        assert_eq!(
            M::threshold_from_lookup(8192, env(Some("lots"))),
            Some(8192)
        );
        assert_eq!(M::threshold_from_lookup(8192, env(Some(""))), Some(8192));
    }
}
