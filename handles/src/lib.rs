//! Generation-counted handle tables: the one place that turns the opaque
//! 64-bit handles a C ABI hands out back into live objects.
//!
//! Both the plugin (event handles of `__tgt_rtl_create_event`, stream
//! handles stored in `__tgt_async_info::Queue`) and the virtual device
//! (`hsa_signal_t`, `hsa_executable_t`, ...) give C callers integers that
//! stand for Rust objects. A [`HandleTable`] owns those objects (as `Arc`s)
//! and resolves a handle only while its object is alive.
//!
//! # Handle layout
//!
//! ```text
//!  63        48 47          24 23            0
//! +------------+--------------+---------------+
//! |    tag     |  generation  |   slot + 1    |
//! +------------+--------------+---------------+
//! ```
//!
//! - the 16-bit *tag* names the kind of object (and, in the plugin, the
//!   device): a handle of another table never resolves here;
//! - the 24-bit *generation* is bumped each time a slot is reused, so the
//!   handle of a removed object stays stale even when a new object lands in
//!   its slot (a generation repeats only after 2^24 reuses of one slot);
//! - *slot + 1* keeps 0 (NULL) free for "no object"; a table holds at most
//!   2^24 - 1 live objects at once.
//!
//! A stale, forged or foreign handle is simply not found: the caller turns
//! that into its own "unknown handle" error (`INVALID_*` status, or
//! `OFFLOAD_FAIL`), never undefined behaviour.

use parking_lot::RwLock;
use std::sync::Arc;

/// Bits of the slot field.
const SLOT_BITS: u32 = 24;
/// Bits of the generation field.
const GENERATION_BITS: u32 = 24;
/// Mask of the slot field (slot + 1).
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// Mask of a generation value.
const GENERATION_MASK: u32 = (1 << GENERATION_BITS) - 1;
/// Shift of the tag field.
const TAG_SHIFT: u32 = SLOT_BITS + GENERATION_BITS;

/// One slot: the generation of its current (or last) object, and the
/// object while it is live.
struct Slot<T> {
    generation: u32,
    value: Option<Arc<T>>,
}

/// The slots and the indices of the free ones (reused last-freed first).
struct Slots<T> {
    slots: Vec<Slot<T>>,
    free: Vec<usize>,
}

/// Live objects of one kind, addressed by generation-counted 64-bit handles
/// (layout in the crate documentation). Shared between threads: lookups
/// take a read lock, insertions and removals a write lock.
pub struct HandleTable<T> {
    tag: u16,
    inner: RwLock<Slots<T>>,
}

impl<T> std::fmt::Debug for HandleTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleTable")
            .field("tag", &self.tag)
            .field("live", &self.len())
            .finish()
    }
}

impl<T> HandleTable<T> {
    /// An empty table whose handles carry `tag` in their top 16 bits.
    pub fn new(tag: u16) -> HandleTable<T> {
        HandleTable {
            tag,
            inner: RwLock::new(Slots {
                slots: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    /// The handle of `slot` at `generation`.
    fn encode(&self, slot: usize, generation: u32) -> u64 {
        (u64::from(self.tag) << TAG_SHIFT)
            | (u64::from(generation & GENERATION_MASK) << SLOT_BITS)
            | (slot as u64 + 1)
    }

    /// (slot, generation) of `handle`, if it carries this table's tag and
    /// is not NULL.
    #[inline]
    fn decode(&self, handle: u64) -> Option<(usize, u32)> {
        if (handle >> TAG_SHIFT) as u16 != self.tag {
            return None;
        }
        let slot = (handle & SLOT_MASK).checked_sub(1)?;
        let generation = ((handle >> SLOT_BITS) as u32) & GENERATION_MASK;
        Some((slot as usize, generation))
    }

    /// Stores `value`; returns its new handle (never 0).
    pub fn insert(&self, value: Arc<T>) -> u64 {
        let mut inner = self.inner.write();
        match inner.free.pop() {
            Some(slot) => {
                let s = &mut inner.slots[slot];
                s.generation = s.generation.wrapping_add(1) & GENERATION_MASK;
                s.value = Some(value);
                let generation = s.generation;
                self.encode(slot, generation)
            }
            None => {
                inner.slots.push(Slot {
                    generation: 0,
                    value: Some(value),
                });
                self.encode(inner.slots.len() - 1, 0)
            }
        }
    }

    /// Runs `f` on the object behind `handle`, if it is live, under the
    /// table's read lock (no reference count is taken: the cheap lookup of
    /// hot paths). `f` must not insert into or remove from this table.
    #[inline]
    pub fn with<R>(&self, handle: u64, f: impl FnOnce(&Arc<T>) -> R) -> Option<R> {
        let (slot, generation) = self.decode(handle)?;
        let inner = self.inner.read();
        let s = inner.slots.get(slot)?;
        if s.generation != generation {
            return None;
        }
        s.value.as_ref().map(f)
    }

    /// The object behind `handle`, if it is live.
    #[inline]
    pub fn get(&self, handle: u64) -> Option<Arc<T>> {
        self.with(handle, Arc::clone)
    }

    /// Removes the object behind `handle` and returns it, if it was live:
    /// `handle` is stale from then on.
    pub fn remove(&self, handle: u64) -> Option<Arc<T>> {
        let (slot, generation) = self.decode(handle)?;
        let mut inner = self.inner.write();
        let s = inner.slots.get_mut(slot)?;
        if s.generation != generation {
            return None;
        }
        let value = s.value.take()?;
        inner.free.push(slot);
        Some(value)
    }

    /// Every live (handle, object) pair, in slot order.
    pub fn entries(&self) -> Vec<(u64, Arc<T>)> {
        let inner = self.inner.read();
        inner
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.value.clone().map(|v| (self.encode(i, s.generation), v)))
            .collect()
    }

    /// Number of live objects.
    pub fn len(&self) -> usize {
        let inner = self.inner.read();
        inner.slots.len() - inner.free.len()
    }

    /// Whether no object is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every object and returns them; every handle handed out is
    /// stale afterwards.
    pub fn clear(&self) -> Vec<Arc<T>> {
        let mut inner = self.inner.write();
        let mut out = Vec::new();
        for s in inner.slots.iter_mut() {
            if let Some(v) = s.value.take() {
                out.push(v);
            }
        }
        let n = inner.slots.len();
        inner.free = (0..n).rev().collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_reused_and_foreign_handles_do_not_resolve() {
        let t: HandleTable<u32> = HandleTable::new(7);
        let other: HandleTable<u32> = HandleTable::new(8);
        let a = t.insert(Arc::new(1));
        assert_ne!(a, 0);
        assert_eq!(a >> TAG_SHIFT, 7, "the tag sits in the top 16 bits");
        assert_eq!(t.get(a).map(|v| *v), Some(1));
        assert_eq!(t.with(a, |v| **v + 1), Some(2));
        assert!(other.get(a).is_none(), "a handle of another table");
        assert!(t.get(0).is_none());
        assert_eq!(t.remove(a).map(|v| *v), Some(1));
        assert!(t.get(a).is_none());
        assert!(t.with(a, |_| ()).is_none());
        assert!(t.remove(a).is_none(), "a second removal must fail");
        let b = t.insert(Arc::new(2));
        assert_ne!(a, b, "the reused slot must carry a new generation");
        assert_eq!(a & SLOT_MASK, b & SLOT_MASK, "the slot is reused");
        assert!(
            t.get(a).is_none(),
            "the stale handle must not see the new object"
        );
        assert_eq!(t.get(b).map(|v| *v), Some(2));
        assert_eq!(t.len(), 1);
        assert_eq!(t.entries().len(), 1);
        assert_eq!(t.clear().len(), 1);
        assert!(t.get(b).is_none());
        assert!(t.is_empty());
        let c = t.insert(Arc::new(3));
        assert_ne!(c, b);
        assert_eq!(t.get(c).map(|v| *v), Some(3));
    }
}
