//! Handle tables: the objects behind `hsa_*_t` handles.
//!
//! The table itself is the workspace's one generation-counted table (crate
//! `handles`, which documents the handle layout and why a stale, forged or
//! foreign handle is simply not found, so the caller answers with the
//! `INVALID_*` status of the kind). This adapter keeps the virtual device's
//! 8-bit kind tags: a tag `t` becomes the table tag `t << 8`, so a handle's
//! top byte still names its kind, as for agent, ISA and memory-pool handles
//! (`agent.rs`, `memory.rs`), which are encoded without a table.

use std::ops::Deref;

/// A table of live objects of one kind, addressed by 64-bit handles whose
/// top byte is the kind's tag; every operation is the shared table's
/// ([`handles::HandleTable`]).
pub struct HandleTable<T>(handles::HandleTable<T>);

impl<T> HandleTable<T> {
    /// An empty table whose handles carry `tag` in their top byte.
    pub fn new(tag: u8) -> HandleTable<T> {
        HandleTable(handles::HandleTable::new(u16::from(tag) << 8))
    }
}

impl<T> Deref for HandleTable<T> {
    type Target = handles::HandleTable<T>;

    fn deref(&self) -> &handles::HandleTable<T> {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn handles_carry_the_kind_tag_in_their_top_byte() {
        let t: HandleTable<u32> = HandleTable::new(0x53);
        let other: HandleTable<u32> = HandleTable::new(0x45);
        let a = t.insert(Arc::new(1));
        assert_eq!(a >> 56, 0x53);
        assert!(other.get(a).is_none());
        assert_eq!(t.remove(a).map(|v| *v), Some(1));
        let b = t.insert(Arc::new(2));
        assert!(
            t.get(a).is_none(),
            "a reused slot must get a new generation"
        );
        assert_eq!(t.get(b).map(|v| *v), Some(2));
    }
}
