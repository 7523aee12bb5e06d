//! Running libLLVM in a child process, so that bad input cannot take the
//! program down.
//!
//! LLVM's bitcode reader is not hardened against damaged input: a mutated
//! device image can make it overrun its stack ("stack smashing detected")
//! or abort, and LLVM's code generator ends the process through
//! `report_fatal_error` on some modules. LLVM 16's own plugin parses
//! images in the program's process and dies with it. Ours forks: the child
//! runs the libLLVM step and sends its result back through a pipe, then
//! leaves with `_exit` (no destructors, no `atexit` handlers: the plugin's
//! teardown stays the parent's). A child killed by a signal, or one that
//! ends without a complete answer, becomes [`JitError::Crashed`], naming
//! the step.
//!
//! The child only runs libLLVM on memory it inherited; glibc's `fork`
//! leaves `malloc` usable in the child, and no other thread of the
//! program uses libLLVM while a step runs (the JIT's steps are
//! serialised, libomptarget uses libLLVM only to open plugins).

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};

use super::error::JitError;

/// Runs `work` in a forked child and returns its result: the bytes it
/// produced, or its error (as [`JitError::Reported`], with the same
/// message). `what` names the step in [`JitError::Crashed`].
///
/// Errors: the child's own error; [`JitError::Crashed`] when it died or
/// sent no complete answer; [`JitError::Io`] when no pipe or child could
/// be made.
pub fn run(
    what: &str,
    work: impl FnOnce() -> Result<Vec<u8>, JitError>,
) -> Result<Vec<u8>, JitError> {
    let sys = |call: &str| JitError::Io {
        what: format!("{call} for the LLVM child process"),
        path: std::path::PathBuf::from("-"),
        message: std::io::Error::last_os_error().to_string(),
    };
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(sys("pipe2"));
    }
    // SAFETY: both descriptors were just created by pipe2 and are owned
    // by nothing else.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fork has no memory-safety preconditions; the child below
    // runs only `work` and `_exit` (see the module's comment on threads).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(sys("fork"));
    }
    if pid == 0 {
        drop(reader);
        child(writer, work);
    }
    drop(writer);
    let mut answer = Vec::new();
    let read = std::fs::File::from(reader).read_to_end(&mut answer);
    let mut status = 0;
    let waited = loop {
        // SAFETY: `pid` is our child; `status` is a writable int.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break r;
        }
    };
    if waited < 0 {
        return Err(sys("waitpid"));
    }
    let died = if libc::WIFSIGNALED(status) {
        Some(format!("was killed by signal {}", libc::WTERMSIG(status)))
    } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0 {
        Some(format!("exited with status {}", libc::WEXITSTATUS(status)))
    } else {
        None
    };
    match (died, read, answer.split_first()) {
        (None, Ok(_), Some((0, bytes))) => Ok(bytes.to_vec()),
        (None, Ok(_), Some((1, message))) => Err(JitError::Reported(
            String::from_utf8_lossy(message).into_owned(),
        )),
        (died, _, _) => Err(JitError::Crashed {
            what: what.to_string(),
            how: died.unwrap_or_else(|| "sent no complete answer".into()),
        }),
    }
}

/// The answer pipe's write end in a child of [`run`] (-1 elsewhere), for
/// [`fail_in_child`].
static ANSWER_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Ends a child of [`run`] at once with `message` as its error (for
/// LLVM's fatal-error handler, which must not return: LLVM would call
/// `exit`, running the parent's `atexit` handlers in the child). Outside
/// such a child it writes `message` to stderr and aborts.
pub fn fail_in_child(message: &str) -> ! {
    let fd = ANSWER_FD.load(std::sync::atomic::Ordering::Relaxed);
    let mut answer = Vec::with_capacity(message.len() + 1);
    answer.push(1u8);
    answer.extend_from_slice(message.as_bytes());
    if fd >= 0 {
        // SAFETY: `fd` is the child's open pipe end; the buffer is valid
        // for its length. A short write only loses the message.
        unsafe { libc::write(fd, answer.as_ptr().cast(), answer.len()) };
        // SAFETY: as in `child`.
        unsafe { libc::_exit(0) }
    }
    eprintln!("{message}");
    std::process::abort()
}

/// The child's side: runs `work`, writes `0` + bytes or `1` + message,
/// and leaves with `_exit(0)`; a panic leaves with `_exit(101)`.
fn child(writer: OwnedFd, work: impl FnOnce() -> Result<Vec<u8>, JitError>) -> ! {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    ANSWER_FD.store(writer.as_raw_fd(), std::sync::atomic::Ordering::Relaxed);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    let code = match outcome {
        Ok(result) => {
            let mut out = std::fs::File::from(writer);
            let ok = match result {
                Ok(bytes) => out.write_all(&[0]).and_then(|()| out.write_all(&bytes)),
                Err(e) => out
                    .write_all(&[1])
                    .and_then(|()| out.write_all(e.to_string().as_bytes())),
            };
            if ok.is_ok() {
                0
            } else {
                1
            }
        }
        Err(_) => 101,
    };
    // SAFETY: _exit ends the child at once, running no destructor or
    // atexit handler of the parent's state.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_errors_and_deaths_come_back() {
        assert_eq!(run("a test", || Ok(vec![1, 2, 3])).unwrap(), vec![1, 2, 3]);
        let e = run("a test", || Err(JitError::Optimize("no".into()))).unwrap_err();
        assert_eq!(e.to_string(), "JIT: optimisation failed: no");
        let e = run("dying", || {
            // SAFETY: ends this (child) process with a signal, on purpose.
            unsafe { libc::abort() }
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("while dying") && e.to_string().contains("signal 6"),
            "{e}"
        );
    }
}
