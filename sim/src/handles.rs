//! Handle tables: the objects behind `hsa_*_t` handles.
//!
//! A handle is `tag << 56 | generation << 32 | (slot + 1)`. The tag tells the
//! kinds of object apart, the generation makes a handle of a destroyed object
//! stale even when its slot is reused, and slot + 1 keeps 0 free for "no
//! object". A stale, forged or foreign handle is simply not found, so the
//! caller answers with the `INVALID_*` status of the kind, never undefined
//! behaviour.

use parking_lot::RwLock;
use std::sync::Arc;

struct Slot<T> {
    generation: u32,
    value: Option<Arc<T>>,
}

struct Inner<T> {
    slots: Vec<Slot<T>>,
    free: Vec<usize>,
}

/// A table of live objects of one kind, addressed by 64-bit handles.
pub struct HandleTable<T> {
    tag: u8,
    inner: RwLock<Inner<T>>,
}

const GENERATION_MASK: u64 = 0x00ff_ffff;

impl<T> HandleTable<T> {
    /// An empty table whose handles carry `tag` in their top byte.
    pub fn new(tag: u8) -> HandleTable<T> {
        HandleTable {
            tag,
            inner: RwLock::new(Inner {
                slots: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    fn encode(&self, slot: usize, generation: u32) -> u64 {
        (u64::from(self.tag) << 56)
            | ((u64::from(generation) & GENERATION_MASK) << 32)
            | (slot as u64 + 1)
    }

    fn decode(&self, handle: u64) -> Option<(usize, u32)> {
        if (handle >> 56) as u8 != self.tag {
            return None;
        }
        let low = handle & 0xffff_ffff;
        if low == 0 {
            return None;
        }
        Some((
            (low - 1) as usize,
            ((handle >> 32) & GENERATION_MASK) as u32,
        ))
    }

    /// Stores `value` and returns its new handle.
    pub fn insert(&self, value: Arc<T>) -> u64 {
        let mut inner = self.inner.write();
        if let Some(slot) = inner.free.pop() {
            let s = &mut inner.slots[slot];
            s.generation = s.generation.wrapping_add(1) & GENERATION_MASK as u32;
            s.value = Some(value);
            let generation = s.generation;
            self.encode(slot, generation)
        } else {
            inner.slots.push(Slot {
                generation: 0,
                value: Some(value),
            });
            self.encode(inner.slots.len() - 1, 0)
        }
    }

    /// The object behind `handle`, if it is live.
    pub fn get(&self, handle: u64) -> Option<Arc<T>> {
        let (slot, generation) = self.decode(handle)?;
        let inner = self.inner.read();
        let s = inner.slots.get(slot)?;
        if s.generation != generation {
            return None;
        }
        s.value.clone()
    }

    /// Removes the object behind `handle` and returns it, if it was live.
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

    /// Removes every object.
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
    fn stale_and_foreign_handles_are_rejected() {
        let t: HandleTable<u32> = HandleTable::new(3);
        let other: HandleTable<u32> = HandleTable::new(4);
        let a = t.insert(Arc::new(1));
        assert_eq!(t.get(a).map(|v| *v), Some(1));
        assert!(
            other.get(a).is_none(),
            "a handle of another kind must not resolve"
        );
        assert!(t.get(0).is_none());
        assert_eq!(t.remove(a).map(|v| *v), Some(1));
        assert!(t.get(a).is_none());
        let b = t.insert(Arc::new(2));
        assert_ne!(a, b, "a reused slot must get a new generation");
        assert!(
            t.get(a).is_none(),
            "the stale handle must not see the new object"
        );
        assert_eq!(t.get(b).map(|v| *v), Some(2));
        assert!(t.remove(a).is_none());
    }
}
