//! Generation-counted handle tables for the opaque handles the plugin hands
//! to libomptarget: events (`__tgt_rtl_create_event`) and streams
//! (`__tgt_async_info::Queue`).
//!
//! A handle is `tag << 48 | generation << 24 | (slot + 1)`: the 16-bit tag
//! names the kind and device, the 24-bit generation is bumped each time a
//! slot is reused, and slot + 1 keeps 0 (NULL) free. A destroyed, returned,
//! forged or other-device handle therefore resolves to nothing and the entry
//! point fails with [`crate::Error::UnknownHandle`] instead of reaching an
//! unrelated object that happens to sit in the same slot. (A generation
//! repeats only after 2^24 reuses of one slot.)
//!
//! The virtual device (`sim/src/handles.rs`) uses the same scheme for HSA
//! handles; the two are separate types because the plugin and the virtual
//! device are independent cdylibs with no crate in common but the bindings.

use parking_lot::RwLock;
use std::sync::Arc;

const SLOT_BITS: u32 = 24;
const GENERATION_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
const GENERATION_MASK: u32 = (1 << GENERATION_BITS) - 1;

struct Slot<T> {
    generation: u32,
    value: Option<Arc<T>>,
}

struct Slots<T> {
    slots: Vec<Slot<T>>,
    free: Vec<usize>,
}

/// Live objects of one kind, addressed by generation-counted 64-bit handles
/// (layout in the module documentation).
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

    fn encode(&self, slot: usize, generation: u32) -> u64 {
        (u64::from(self.tag) << 48)
            | (u64::from(generation & GENERATION_MASK) << SLOT_BITS)
            | (slot as u64 + 1)
    }

    /// (slot, generation) of `handle`, if it carries this table's tag.
    #[inline]
    fn decode(&self, handle: u64) -> Option<(usize, u32)> {
        if (handle >> 48) as u16 != self.tag {
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

    /// The object behind `handle`, if it is live.
    #[inline]
    pub fn get(&self, handle: u64) -> Option<Arc<T>> {
        let (slot, generation) = self.decode(handle)?;
        let inner = self.inner.read();
        let s = inner.slots.get(slot)?;
        if s.generation != generation {
            return None;
        }
        s.value.clone()
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

    /// Number of live objects.
    pub fn len(&self) -> usize {
        let inner = self.inner.read();
        inner.slots.len() - inner.free.len()
    }

    /// Whether no object is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every object; every handle handed out is stale afterwards.
    pub fn clear(&self) {
        let mut inner = self.inner.write();
        let mut free = Vec::with_capacity(inner.slots.len());
        for (i, s) in inner.slots.iter_mut().enumerate().rev() {
            s.value = None;
            free.push(i);
        }
        inner.free = free;
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
        assert_eq!(t.get(a).map(|v| *v), Some(1));
        assert!(other.get(a).is_none());
        assert!(t.get(0).is_none());
        assert_eq!(t.remove(a).map(|v| *v), Some(1));
        assert!(t.get(a).is_none());
        assert!(t.remove(a).is_none(), "a second removal must fail");
        let b = t.insert(Arc::new(2));
        assert_ne!(a, b, "the reused slot must carry a new generation");
        assert_eq!(a & SLOT_MASK, b & SLOT_MASK, "the slot is reused");
        assert!(t.get(a).is_none());
        assert_eq!(t.get(b).map(|v| *v), Some(2));
        assert_eq!(t.len(), 1);
        t.clear();
        assert!(t.get(b).is_none());
        assert!(t.is_empty());
        let c = t.insert(Arc::new(3));
        assert_ne!(c, b);
        assert_eq!(t.get(c).map(|v| *v), Some(3));
    }
}
