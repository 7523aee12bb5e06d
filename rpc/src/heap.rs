//! A checked device heap: the bookkeeping both servers of the project
//! (the plugin's and `amdhsa-loader`'s) put between the device's MALLOC and
//! FREE requests and the memory below them.
//!
//! Two promises, whatever order the server sees requests in:
//!
//! - a FREE of an address that is not a live block (a second free, a
//!   pointer into a block, a pointer malloc never returned) is an error
//!   naming the address, never a release;
//! - no block handed out aliases a live one. A freed block is not given back
//!   to the memory below at once: it waits in a quarantine, oldest first
//!   out, while the quarantine holds at most [`QUARANTINE_BYTES`] bytes and
//!   [`QUARANTINE_BLOCKS`] blocks. A late second free of an address in the
//!   quarantine is therefore reported as a double free even when other
//!   lanes' MALLOCs were served in between: the memory below cannot have
//!   handed the address out again. (A second free that comes after more than
//!   the quarantine's worth of other frees can meet the address reused by
//!   a later malloc, and then it frees that block: no allocator can tell it
//!   from a legitimate free.)
//!
//! The device's own side of the promise: its `free` waits for the server's
//! answer (`device/src/rpc.c`), so a lane's requests reach the server in the
//! order the lane made them.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::server::DeviceHeap;

/// Most bytes of freed blocks held back before the oldest is released
/// (64 MiB).
pub const QUARANTINE_BYTES: u64 = 64 << 20;

/// Most freed blocks held back before the oldest is released.
pub const QUARANTINE_BLOCKS: usize = 1 << 16;

/// The memory a [`CheckedHeap`] hands out: device memory in the plugin, the
/// GPU's coarse-grained pool in the loader.
pub trait BlockSource: Send {
    /// A block of `size` bytes (at least 1); its device address, or 0 when
    /// the memory is exhausted and the device should see NULL. Errors: a
    /// failure the server should report (the loader ends the program).
    fn allocate(&mut self, size: u64) -> Result<u64, String>;
    /// Gives back a block [`BlockSource::allocate`] returned, exactly once.
    /// Errors: what the memory below said.
    fn release(&mut self, address: u64) -> Result<(), String>;
}

/// The live blocks, the quarantine and the memory below (see the module
/// doc).
pub struct CheckedHeap<S: BlockSource> {
    source: S,
    /// Live blocks: address → size in bytes.
    live: HashMap<u64, u64>,
    /// Freed blocks not yet released, oldest first: (address, size).
    quarantine: VecDeque<(u64, u64)>,
    /// The addresses of `quarantine`.
    quarantined: HashSet<u64>,
    /// Sum of the sizes in `quarantine`, in bytes.
    quarantined_bytes: u64,
    limit_bytes: u64,
    limit_blocks: usize,
}

impl<S: BlockSource> CheckedHeap<S> {
    /// A heap over `source` with the default quarantine
    /// ([`QUARANTINE_BYTES`], [`QUARANTINE_BLOCKS`]).
    pub fn new(source: S) -> CheckedHeap<S> {
        CheckedHeap::with_quarantine(source, QUARANTINE_BYTES, QUARANTINE_BLOCKS)
    }

    /// A heap over `source` whose quarantine holds at most `bytes` bytes and
    /// `blocks` blocks (0 blocks: freed blocks are released at once).
    pub fn with_quarantine(source: S, bytes: u64, blocks: usize) -> CheckedHeap<S> {
        CheckedHeap {
            source,
            live: HashMap::new(),
            quarantine: VecDeque::new(),
            quarantined: HashSet::new(),
            quarantined_bytes: 0,
            limit_bytes: bytes,
            limit_blocks: blocks,
        }
    }

    /// Blocks handed out and not freed.
    pub fn live_blocks(&self) -> usize {
        self.live.len()
    }

    /// Freed blocks held back in the quarantine.
    pub fn quarantined_blocks(&self) -> usize {
        self.quarantine.len()
    }

    /// Releases the oldest quarantined blocks until the quarantine is within
    /// its limits. Errors: the first failure of the memory below (every
    /// block is still taken out of the quarantine).
    fn trim(&mut self) -> Result<(), String> {
        let mut first_err = None;
        while self.quarantine.len() > self.limit_blocks
            || (self.quarantined_bytes > self.limit_bytes && !self.quarantine.is_empty())
        {
            let Some((address, size)) = self.quarantine.pop_front() else {
                break;
            };
            self.quarantined.remove(&address);
            self.quarantined_bytes = self.quarantined_bytes.saturating_sub(size);
            if let Err(e) = self.source.release(address) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Releases every quarantined block (for the owner's teardown).
    /// Errors: the first failure of the memory below.
    pub fn release_quarantine(&mut self) -> Result<(), String> {
        let (bytes, blocks) = (self.limit_bytes, self.limit_blocks);
        self.limit_bytes = 0;
        self.limit_blocks = 0;
        let r = self.trim();
        self.limit_bytes = bytes;
        self.limit_blocks = blocks;
        r
    }
}

impl<S: BlockSource> DeviceHeap for CheckedHeap<S> {
    fn malloc(&mut self, size: u64) -> Result<u64, String> {
        let address = self.source.allocate(size.max(1))?;
        if address != 0 {
            if self.live.contains_key(&address) || self.quarantined.contains(&address) {
                // The memory below broke its own promise; never hand out
                // an alias, and keep the block out of circulation.
                return Err(format!(
                    "malloc({size}): the memory below returned {address:#x}, a block still in use"
                ));
            }
            self.live.insert(address, size.max(1));
        }
        Ok(address)
    }

    fn free(&mut self, address: u64) -> Result<(), String> {
        if address == 0 {
            return Ok(());
        }
        let Some(size) = self.live.remove(&address) else {
            return Err(if self.quarantined.contains(&address) {
                format!("double free of {address:#x} (freed before, not allocated since)")
            } else {
                format!("free of {address:#x}, which malloc did not return")
            });
        };
        self.quarantine.push_back((address, size));
        self.quarantined.insert(address);
        self.quarantined_bytes = self.quarantined_bytes.saturating_add(size);
        self.trim()
    }
}

impl<S: BlockSource> Drop for CheckedHeap<S> {
    fn drop(&mut self) {
        // Freed blocks go back to the memory below; live ones stay the
        // device's (the owner tears the memory down with the device).
        let _ = self.release_quarantine();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that reuses the lowest freed address first, as a size-class
    /// cache does: the worst case for aliasing.
    #[derive(Default)]
    struct Reusing {
        next: u64,
        free: Vec<u64>,
        released: usize,
    }

    impl BlockSource for Reusing {
        fn allocate(&mut self, _size: u64) -> Result<u64, String> {
            self.free.sort_unstable_by(|a, b| b.cmp(a));
            Ok(self.free.pop().unwrap_or_else(|| {
                self.next += 0x1000;
                self.next
            }))
        }
        fn release(&mut self, address: u64) -> Result<(), String> {
            self.released += 1;
            self.free.push(address);
            Ok(())
        }
    }

    #[test]
    fn second_free_after_a_malloc_is_a_double_free_not_a_release() {
        let mut h = CheckedHeap::new(Reusing::default());
        let a = h.malloc(16).unwrap();
        h.free(a).unwrap();
        // Another lane's malloc served between the two frees.
        let b = h.malloc(16).unwrap();
        assert_ne!(a, b);
        let e = h.free(a).unwrap_err();
        assert!(e.contains("double free"), "{e}");
        // b is still live and nothing aliases it.
        let c = h.malloc(16).unwrap();
        assert_ne!(b, c);
        assert_eq!(h.live_blocks(), 2);
    }

    #[test]
    fn foreign_pointers_are_reported() {
        let mut h = CheckedHeap::new(Reusing::default());
        let a = h.malloc(16).unwrap();
        let e = h.free(a + 8).unwrap_err();
        assert!(e.contains("malloc did not return"), "{e}");
        assert!(h.free(0).is_ok());
        assert!(h.free(a).is_ok());
    }

    #[test]
    fn quarantine_is_bounded_and_oldest_released_first() {
        let mut h = CheckedHeap::with_quarantine(Reusing::default(), 1 << 20, 4);
        let blocks: Vec<u64> = (0..6).map(|_| h.malloc(100).unwrap()).collect();
        for &b in &blocks {
            h.free(b).unwrap();
        }
        assert_eq!(h.quarantined_blocks(), 4);
        assert_eq!(h.source.released, 2);
        // The two oldest went back: a late free of them is "not from
        // malloc", of the others "double free".
        assert!(h.free(blocks[0]).unwrap_err().contains("did not return"));
        assert!(h.free(blocks[5]).unwrap_err().contains("double free"));
        // Bytes bound: one block over the byte limit is released at once.
        let mut h = CheckedHeap::with_quarantine(Reusing::default(), 50, 10);
        let a = h.malloc(100).unwrap();
        h.free(a).unwrap();
        assert_eq!(h.quarantined_blocks(), 0);
    }

    #[test]
    fn null_from_the_source_is_not_recorded() {
        struct Empty;
        impl BlockSource for Empty {
            fn allocate(&mut self, _: u64) -> Result<u64, String> {
                Ok(0)
            }
            fn release(&mut self, _: u64) -> Result<(), String> {
                Err("nothing to release".into())
            }
        }
        let mut h = CheckedHeap::new(Empty);
        assert_eq!(h.malloc(8).unwrap(), 0);
        assert_eq!(h.live_blocks(), 0);
    }

    #[test]
    fn random_interleavings_never_alias() {
        // Lanes free (some twice) and malloc in a shuffled order; the live
        // set never holds one address twice and every second free errs.
        let mut h = CheckedHeap::new(Reusing::default());
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut live: Vec<u64> = Vec::new();
        let mut doubles = 0;
        for _ in 0..10_000 {
            match rnd() % 3 {
                0 => {
                    let a = h.malloc(rnd() % 256).unwrap();
                    assert!(!live.contains(&a), "alias of {a:#x}");
                    live.push(a);
                }
                1 if !live.is_empty() => {
                    let i = (rnd() % live.len() as u64) as usize;
                    let a = live.swap_remove(i);
                    h.free(a).unwrap();
                    if rnd() % 4 == 0 {
                        assert!(h.free(a).is_err());
                        doubles += 1;
                    }
                }
                _ => {}
            }
        }
        assert!(doubles > 100);
        assert_eq!(h.live_blocks(), live.len());
    }
}
