//! Copies and fills of host memory through the kernel (`process_vm_readv` / `process_vm_writev` on
//! the process itself), which checks every page against the process's mappings:
//! memory the program unmapped or protected makes the call fail, never raise a
//! signal. For the copies and fills of host memory the virtual device does not
//! own (locked ranges, pointers given to `hsa_memory_copy`), which the program may
//! free or protect while a copy is queued. About three quarters of `memcpy`'s
//! bandwidth for large copies on the machines measured, 0.6 µs for a page.
//!
//! Shared by the virtual device (`sim/`: its copy engine, `hsa_memory_copy`,
//! `hsa_amd_memory_fill`, code object readers) and the plugin's host steps
//! (`hsa/`'s `HostSpan::try_copy_from`): one mechanism, one place.

use std::ffi::c_void;

/// Where a checked access stopped: the first address that could not be read
/// (`write` false) or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unreachable {
    /// The first byte not copied.
    pub address: u64,
    /// Whether it was the destination.
    pub write: bool,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "host memory at {:#x} cannot be {} (unmapped or protected)",
            self.address,
            if self.write { "written" } else { "read" }
        )
    }
}

/// `process_vm_writev(self, [local], [remote])`: bytes moved, or `None` on an
/// error (EFAULT: a page of either side was not accessible).
fn pvm(local: u64, remote: u64, len: usize, write: bool) -> Option<usize> {
    let l = libc::iovec {
        iov_base: local as *mut c_void,
        iov_len: len,
    };
    let r = libc::iovec {
        iov_base: remote as *mut c_void,
        iov_len: len,
    };
    // SAFETY: the kernel checks both ranges against this process's mappings
    // and access rights page by page and reports EFAULT instead of touching an
    // inaccessible page; no Rust object is read or written except through it.
    let n = unsafe {
        if write {
            libc::process_vm_writev(libc::getpid(), &l, 1, &r, 1, 0)
        } else {
            libc::process_vm_readv(libc::getpid(), &l, 1, &r, 1, 0)
        }
    };
    usize::try_from(n).ok()
}

/// Whether byte `addr` is readable, asked without touching it.
fn readable(addr: u64) -> bool {
    let mut b = 0u8;
    pvm(&mut b as *mut u8 as u64, addr, 1, false) == Some(1)
}

/// Copies `len` bytes from `src` to `dst` (the ranges may overlap).
///
/// # Errors
/// [`Unreachable`] naming the first byte that could not be read or written;
/// the bytes before it may have been copied.
pub fn copy(dst: u64, src: u64, len: usize) -> Result<(), Unreachable> {
    let overlap = src < dst.saturating_add(len as u64) && dst < src.saturating_add(len as u64);
    if overlap && src != dst {
        // Through a buffer of our own: the kernel copies page by page, in no
        // order overlapping ranges could rely on.
        let mut buf = vec![0u8; len];
        let local = buf.as_mut_ptr() as u64;
        move_all(local, src, len, false)?;
        return move_all(local, dst, len, true);
    }
    let mut done = 0usize;
    while done < len {
        let n = pvm(src + done as u64, dst + done as u64, len - done, true).unwrap_or(0);
        if n == 0 {
            let at = done as u64;
            return Err(if readable(src + at) {
                Unreachable {
                    address: dst + at,
                    write: true,
                }
            } else {
                Unreachable {
                    address: src + at,
                    write: false,
                }
            });
        }
        done += n;
    }
    Ok(())
}

/// Moves `len` bytes between our buffer `local` and `remote` (into `remote`
/// when `write`).
fn move_all(local: u64, remote: u64, len: usize, write: bool) -> Result<(), Unreachable> {
    let mut done = 0usize;
    while done < len {
        let n = pvm(local + done as u64, remote + done as u64, len - done, write).unwrap_or(0);
        if n == 0 {
            return Err(Unreachable {
                address: remote + done as u64,
                write,
            });
        }
        done += n;
    }
    Ok(())
}

/// Stores `value` into the `count` dwords at `dst`.
///
/// # Errors
/// [`Unreachable`] naming the first byte that could not be written.
pub fn fill(dst: u64, value: u32, count: usize) -> Result<(), Unreachable> {
    const CHUNK: usize = 16 * 1024;
    let pattern = vec![value; CHUNK.min(count)];
    let mut done = 0usize;
    while done < count {
        let n = (count - done).min(CHUNK);
        move_all(pattern.as_ptr() as u64, dst + 4 * done as u64, 4 * n, true)?;
        done += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_and_fills_stop_cleanly_at_inaccessible_memory() {
        let mut a: Vec<u8> = (0..=255).collect();
        let mut b = vec![0u8; 256];
        copy(b.as_mut_ptr() as u64, a.as_ptr() as u64, 256).unwrap();
        assert_eq!(a, b);
        // Overlapping, forward by one.
        let p = a.as_mut_ptr() as u64;
        copy(p + 1, p, 255).unwrap();
        assert_eq!(a[1..], b[..255]);
        let mut words = vec![0u32; 5000];
        fill(words.as_mut_ptr() as u64, 0xABCD, 5000).unwrap();
        assert!(words.iter().all(|&w| w == 0xABCD));
        // SAFETY: a fresh mapping of two pages, the second made read-only.
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(m, libc::MAP_FAILED);
        let m = m as u64;
        // SAFETY: our mapping.
        assert_eq!(
            unsafe { libc::mprotect((m + 4096) as *mut c_void, 4096, libc::PROT_READ) },
            0
        );
        let src = vec![7u8; 8192];
        let e = copy(m, src.as_ptr() as u64, 8192).unwrap_err();
        assert_eq!(
            e,
            Unreachable {
                address: m + 4096,
                write: true
            }
        );
        let e = fill(m + 4000, 1, 100).unwrap_err();
        assert_eq!(
            e,
            Unreachable {
                address: m + 4096,
                write: true
            }
        );
        // An unreadable source (PROT_NONE: as unreachable as unmapped memory,
        // and no other thread can map something there meanwhile).
        // SAFETY: our mapping.
        assert_eq!(
            unsafe { libc::mprotect(m as *mut c_void, 4096, libc::PROT_NONE) },
            0
        );
        let e = copy(b.as_mut_ptr() as u64, m, 16).unwrap_err();
        assert_eq!(
            e,
            Unreachable {
                address: m,
                write: false
            }
        );
        // SAFETY: our mapping.
        unsafe { libc::munmap(m as *mut c_void, 8192) };
    }
}
