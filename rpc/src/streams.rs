//! The host C streams the device may name: stdin, stdout, stderr (tagged
//! in the low two bits by the device's `from_stream`, LLVM 19
//! `libc/src/stdio/gpu/file.h`) and the `FILE *`s the server opened for it
//! with OPEN_FILE. Nothing else is ever passed to the C library.

use std::collections::HashSet;

use crate::{Error, Result};

extern "C" {
    // glibc's standard streams (`<stdio.h>`).
    static mut stdin: *mut libc::FILE;
    static mut stdout: *mut libc::FILE;
    static mut stderr: *mut libc::FILE;
}

/// The process's `stdout`.
pub(crate) fn c_stdout() -> *mut libc::FILE {
    // SAFETY: reading the C library's stream pointer, set at startup and
    // never reassigned by this program.
    unsafe { stdout }
}

/// The process's `stderr`.
pub(crate) fn c_stderr() -> *mut libc::FILE {
    // SAFETY: as `c_stdout`.
    unsafe { stderr }
}

fn c_stdin() -> *mut libc::FILE {
    // SAFETY: as `c_stdout`.
    unsafe { stdin }
}

/// The set of streams the device may use.
#[derive(Default)]
pub(crate) struct Streams {
    opened: HashSet<u64>,
}

impl Streams {
    /// Resolves a handle sent by the device: tag 1/2/3 in the low bits are
    /// stdin/stdout/stderr, an untagged value must be a stream this server
    /// opened.
    pub(crate) fn resolve(&self, handle: u64, port: u32, lane: u32) -> Result<*mut libc::FILE> {
        match handle & 3 {
            1 => return Ok(c_stdin()),
            2 => return Ok(c_stdout()),
            3 => return Ok(c_stderr()),
            _ => {}
        }
        if self.opened.contains(&handle) {
            Ok(handle as usize as *mut libc::FILE)
        } else {
            Err(Error::UnknownStream { port, lane, handle })
        }
    }

    /// Records a stream returned by `fopen`.
    pub(crate) fn insert(&mut self, file: *mut libc::FILE) {
        if !file.is_null() {
            self.opened.insert(file as usize as u64);
        }
    }

    /// Forgets a stream about to be closed.
    pub(crate) fn remove(&mut self, file: *mut libc::FILE) {
        self.opened.remove(&(file as usize as u64));
    }
}
