//! [`HostSpan`]: a range of host memory a caller lent us (a user's buffer
//! of a transfer, a host global, a staging or kernarg block), as one value
//! that travels safely from the C ABI down to the copy that uses it.
//!
//! The span is created once, unsafely, where the range enters Rust (the
//! plugin's `__tgt_rtl_*` entry points, or this crate's allocation of host
//! pool memory, [`crate::Hsa::memory_pool_allocate_host`]), with the
//! contract below; every later use is a safe method here
//! (byte copies, filling) or a safe HSA call taking the span
//! ([`crate::Hsa::memory_lock_span`]). The raw address is never turned back
//! into a pointer outside this module.

use std::ptr::NonNull;

/// `len` bytes of host memory at `addr`, lent to the plugin by whoever
/// created the span (see [`HostSpan::new`]). Copyable: a span names memory,
/// it does not own it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSpan {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a span is an address and a length; the memory's validity for any
// thread's use is the creator's promise (`HostSpan::new`), and the copies
// through it are ordered by the stream that runs them.
unsafe impl Send for HostSpan {}
// SAFETY: as above; `&HostSpan` gives nothing `HostSpan` does not.
unsafe impl Sync for HostSpan {}

impl HostSpan {
    /// The span of `len` bytes at `ptr`; `None` when `ptr` is NULL.
    ///
    /// # Safety
    /// For as long as the span or any copy of it is used (for a transfer of
    /// libomptarget: until its async info is synchronized; for a memory
    /// block: while the block is allocated):
    /// - `[ptr, ptr + len)` is host memory of this process, readable, and
    ///   writable if the span is ever written ([`HostSpan::copy_from`] as
    ///   destination, [`HostSpan::write`], [`HostSpan::fill_with`]);
    /// - nobody else writes it while a copy through the span reads it, and
    ///   nobody else reads or writes it while the span writes it
    ///   (libomptarget's rule for the buffers of a pending transfer).
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Option<HostSpan> {
        NonNull::new(ptr).map(|ptr| HostSpan { ptr, len })
    }

    /// The first byte's address.
    #[inline]
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the span has no byte.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The span's first `min(len, self.len())` bytes.
    #[inline]
    pub fn prefix(&self, len: usize) -> HostSpan {
        HostSpan {
            ptr: self.ptr,
            len: self.len.min(len),
        }
    }

    /// Copies `min(self.len(), src.len())` bytes from `src` to the start of
    /// this span; returns the count. The two must not overlap (distinct
    /// buffers: a user's and a staging block).
    ///
    /// The copy goes through the kernel ([`host_copy::copy`]): a user's buffer
    /// that the program freed or protected while the transfer was queued (its
    /// bug, but one that must not end the process in our code) fails the copy.
    ///
    /// # Errors
    /// [`host_copy::Unreachable`] naming the first byte that could not be read
    /// or written; the bytes before it may have been copied.
    pub fn copy_from(&self, src: &HostSpan) -> Result<usize, host_copy::Unreachable> {
        let n = self.len.min(src.len);
        host_copy::copy(self.addr() as u64, src.addr() as u64, n)?;
        Ok(n)
    }

    /// Copies `bytes` (at most `self.len()` of them) to the start of the
    /// span; returns the count.
    pub fn write(&self, bytes: &[u8]) -> usize {
        let n = self.len.min(bytes.len());
        // SAFETY: `n` bytes are writable per `new`'s contract; `bytes` is a
        // Rust slice, so it cannot be memory lent through a span for writing.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.as_ptr(), n) };
        n
    }

    /// Copies the start of the span into `out` (at most `self.len()`
    /// bytes); returns the count.
    pub fn read(&self, out: &mut [u8]) -> usize {
        let n = self.len.min(out.len());
        // SAFETY: `n` bytes are readable per `new`'s contract; `out` is an
        // exclusive Rust slice.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), out.as_mut_ptr(), n) };
        n
    }

    /// Runs `f` on the span's bytes as a mutable slice (filling a kernarg
    /// block before its packet is published).
    #[inline]
    pub fn fill_with<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        // SAFETY: writable and unshared while the span writes it (`new`).
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) };
        f(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_stop_at_the_shorter_span() {
        let mut a = [1u8, 2, 3, 4];
        let mut b = [0u8; 3];
        // SAFETY: both arrays outlive the spans, used only here.
        let (sa, sb) = unsafe {
            (
                HostSpan::new(a.as_mut_ptr(), a.len()).unwrap(),
                HostSpan::new(b.as_mut_ptr(), b.len()).unwrap(),
            )
        };
        assert_eq!(sb.copy_from(&sa), Ok(3));
        assert_eq!(sa.prefix(2).len(), 2);
        assert_eq!(sa.prefix(9).len(), 4);
        let mut out = [0u8; 8];
        assert_eq!(sb.read(&mut out), 3);
        assert_eq!(&out[..3], &[1, 2, 3]);
        assert_eq!(sa.write(&[9, 9, 9, 9, 9]), 4);
        sb.fill_with(|s| s.fill(7));
        assert_eq!(sb.read(&mut out), 3);
        assert_eq!(&out[..3], &[7, 7, 7]);
        assert_eq!(sa.read(&mut out), 4);
        assert_eq!(&out[..4], &[9, 9, 9, 9]);
        // SAFETY: NULL is refused before anything is read.
        assert!(unsafe { HostSpan::new(std::ptr::null_mut(), 4) }.is_none());
    }
}
