//! [`DeviceRange`]: memory an agent reaches by DMA (device memory, a
//! variable of a loaded executable, pinned host memory through its agent
//! address), as one value [`crate::Hsa::copy_async`] accepts safely; and
//! [`HostPool`] / [`HostPoolBlock`]: host-accessible pool memory handed out
//! as a [`HostSpan`] (for the host) together with its [`DeviceRange`] (for
//! agents).
//!
//! Most ranges are made safely here from what the runtime itself returned:
//! a pool allocation ([`crate::Hsa::memory_pool_allocate_host`]), a
//! variable symbol's address and size ([`crate::Hsa::symbol_variable`]),
//! the agent address of a locked range ([`crate::Hsa::memory_lock_span`]).
//! The one unsafe way in, [`DeviceRange::new`], is for addresses another
//! party vouches for (libomptarget's device pointers, at the plugin's C ABI).

use crate::HostSpan;
use hsa_sys::hsa_amd_memory_pool_t;

/// `len` bytes at agent address `addr`, valid as a DMA copy's source or
/// destination for as long as the range is used (see [`DeviceRange::new`]).
/// Copyable: a range names memory, it does not own it; whoever owns the
/// memory (a pool block, an executable, libomptarget's allocation) keeps it
/// until every copy through the range completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceRange {
    addr: u64,
    len: usize,
}

impl DeviceRange {
    /// The range of `len` bytes at agent address `addr`; `None` when `addr`
    /// is 0 or the range wraps around the address space.
    ///
    /// # Safety
    /// For as long as the range or any copy of it is used (for a device
    /// pointer of libomptarget: until the transfer's async info is
    /// synchronized), `[addr, addr + len)` lies inside one allocation the
    /// runtime made for an agent (pool memory, an executable's variable, or
    /// locked host memory through its agent address), readable, and
    /// writable when the range is a copy's destination; and no host code
    /// accesses it while a copy writes it.
    pub unsafe fn new(addr: u64, len: usize) -> Option<DeviceRange> {
        DeviceRange::checked(addr, len)
    }

    /// The range, from an address and size the runtime returned for
    /// memory it made (this crate's safe constructors).
    pub(crate) fn checked(addr: u64, len: usize) -> Option<DeviceRange> {
        if addr == 0 || addr.checked_add(len as u64).is_none() {
            return None;
        }
        Some(DeviceRange { addr, len })
    }

    /// The first byte's agent address.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range has no byte.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `len` bytes from `offset` on; `None` unless they lie inside
    /// this range.
    #[inline]
    pub fn slice(&self, offset: usize, len: usize) -> Option<DeviceRange> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then_some(DeviceRange {
            addr: self.addr + offset as u64,
            len,
        })
    }

    /// The range's first `min(len, self.len())` bytes.
    #[inline]
    pub fn prefix(&self, len: usize) -> DeviceRange {
        DeviceRange {
            addr: self.addr,
            len: self.len.min(len),
        }
    }

    /// The `len` bytes at `value`, the pointer this range (a pointer-sized
    /// variable of a loaded executable, [`crate::Hsa::symbol_variable`])
    /// held when read: e.g. the object LLVM libc's `__llvm_libc_rpc_client`
    /// points to. `None` when this range is not 8 bytes or `value` is 0.
    ///
    /// The image's own data is trusted as its code is: every kernel of the
    /// executable can already read and write whatever its pointers reach,
    /// so a copy there gives the image nothing it did not have. Use it only
    /// on variables the image defines for exactly this purpose.
    pub fn image_pointer_target(&self, value: u64, len: usize) -> Option<DeviceRange> {
        if self.len != 8 {
            return None;
        }
        DeviceRange::checked(value, len)
    }
}

/// A memory pool of a CPU agent whose memory the host reads and writes
/// directly (system memory), checked once by [`crate::Hsa::host_pool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPool {
    pub(crate) raw: hsa_amd_memory_pool_t,
}

impl HostPool {
    /// The pool's handle.
    #[inline]
    pub fn raw(&self) -> hsa_amd_memory_pool_t {
        self.raw
    }
}

/// A block of a [`HostPool`]: the host's view ([`HostPoolBlock::span`]) and
/// the agents' ([`HostPoolBlock::range`]) of the same bytes. Copyable like
/// both: valid until the block is freed ([`crate::Hsa::pool_free`]), which
/// its owner orders after every use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPoolBlock {
    span: HostSpan,
    range: DeviceRange,
}

impl HostPoolBlock {
    /// The block the runtime allocated at `span` (system memory, so the
    /// agent address is the host address).
    pub(crate) fn new(span: HostSpan) -> Option<HostPoolBlock> {
        let range = DeviceRange::checked(span.addr() as u64, span.len())?;
        Some(HostPoolBlock { span, range })
    }

    /// The block's bytes, for the host.
    #[inline]
    pub fn span(&self) -> HostSpan {
        self.span
    }

    /// The block's bytes, for agents (DMA copies, kernarg pointers).
    #[inline]
    pub fn range(&self) -> DeviceRange {
        self.range
    }

    /// The block's address (the same for the host and for agents).
    #[inline]
    pub fn addr(&self) -> u64 {
        self.range.addr
    }

    /// Size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.range.len
    }

    /// Whether the block has no byte.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.range.len == 0
    }

    /// The block's first `min(len, self.len())` bytes.
    #[inline]
    pub fn prefix(&self, len: usize) -> HostPoolBlock {
        HostPoolBlock {
            span: self.span.prefix(len),
            range: self.range.prefix(len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_stay_inside_the_range() {
        let r = DeviceRange::checked(0x1000, 0x100).unwrap();
        assert_eq!(
            r.slice(0x10, 0x20).map(|s| (s.addr(), s.len())),
            Some((0x1010, 0x20))
        );
        assert_eq!(r.slice(0x100, 0).map(|s| s.addr()), Some(0x1100));
        assert!(r.slice(0xf0, 0x20).is_none());
        assert!(r.slice(usize::MAX, 2).is_none());
        assert_eq!(r.prefix(0x400).len(), 0x100);
        assert!(DeviceRange::checked(0, 4).is_none());
        assert!(DeviceRange::checked(u64::MAX, 2).is_none());
        assert!(r.image_pointer_target(0x2000, 8).is_none());
        let var = DeviceRange::checked(0x3000, 8).unwrap();
        assert_eq!(
            var.image_pointer_target(0x2000, 552).map(|t| t.len()),
            Some(552)
        );
        assert!(var.image_pointer_target(0, 552).is_none());
    }
}
