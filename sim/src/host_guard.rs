//! Host memory unmapped under a running kernel: a GPU memory fault of that
//! dispatch, never a signal that ends the process.
//!
//! With XNACK on ([`crate::host_memory`]) a wave may hold a region of host memory
//! the program unmaps while the kernel runs (on hardware, the driver's page-table
//! update makes the GPU's next access fault). The wave's next access to it then
//! raises `SIGSEGV` in the host thread running the wave. This module installs a
//! `SIGSEGV` handler (once, when the runtime opens with XNACK on; the handler the
//! process had before is kept and called for every fault that is not ours) that
//! recognises such a fault and absorbs it:
//!
//! 1. It is ours only if it happened on a thread inside a [`Scope`] (a thread
//!    running waves of a dispatch: it registered its thread id in a fixed table
//!    the handler scans without locks or allocation) and the kernel says nothing is
//!    mapped at the address (`SEGV_MAPERR`).
//! 2. The handler maps one private page of a memfd named [`PLACEHOLDER`] at the
//!    faulting page with `MAP_FIXED_NOREPLACE` (so it can only fill a hole, never
//!    replace a mapping of the host), records the address and whether the access
//!    wrote (x86-64's page-fault error code), and raises the dispatch's stop flag.
//!    The access is retried on return and completes against the zero page.
//! 3. The wave stops at its next backward branch (the stop flag), and the
//!    dispatcher asks [`Scope::take_fault`], which unmaps the pages it mapped
//!    (each only if `/proc/self/maps` still shows it as ours) and gives the fault,
//!    reported as any other GPU memory fault, with the faulting byte's address.
//!
//! A thread absorbs at most [`PAGES`] holes before its scope is asked (a wave would
//! have to touch that many unmapped pages between two backward branches); the next
//! one goes to the previous handler. The cost when nothing faults: one slot claimed
//! per worker per dispatch, and one atomic load per wave exit.

use std::ffi::{c_int, c_void, CStr};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use procfs_core::process::MMapPath;

/// Name of the memfd whose pages fill holes (visible in `/proc/self/maps` as
/// `/memfd:<name> (deleted)`).
pub const PLACEHOLDER: &CStr = c"hsa-sim-xnack-hole";
/// Threads that may be inside a [`Scope`] at once (beyond that, a thread runs
/// waves unguarded: a hole then ends the process as before).
const SLOTS: usize = 128;
/// Holes one thread absorbs before its scope is asked.
pub const PAGES: usize = 256;
/// `si_code` of a `SIGSEGV` at an address nothing maps (Linux's `siginfo.h`;
/// the libc crate does not name it).
const SEGV_MAPERR: c_int = 1;
/// The host page size the holes are filled at.
const PAGE: u64 = 4096;

/// One thread's registration.
struct Slot {
    /// Thread id inside a scope, 0 when free.
    tid: AtomicI32,
    /// The stop flag of the dispatch the thread runs.
    stop: AtomicPtr<AtomicBool>,
    /// Whether a hole was absorbed since the scope was last asked.
    faulted: AtomicBool,
    /// The first absorbed fault's address.
    address: AtomicU64,
    /// Whether that access wrote.
    write: AtomicBool,
    /// Pages mapped over holes (the first `count` of `pages`).
    count: AtomicUsize,
    pages: [AtomicU64; PAGES],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            tid: AtomicI32::new(0),
            stop: AtomicPtr::new(std::ptr::null_mut()),
            faulted: AtomicBool::new(false),
            address: AtomicU64::new(0),
            write: AtomicBool::new(false),
            count: AtomicUsize::new(0),
            pages: [const { AtomicU64::new(0) }; PAGES],
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// What [`install`] set up.
struct Installed {
    /// The memfd of [`PLACEHOLDER`], one page long.
    fd: c_int,
    /// The `SIGSEGV` disposition before ours.
    previous: libc::sigaction,
}

static INSTALLED: OnceLock<Option<Installed>> = OnceLock::new();

/// Installs the handler (once per process). False, with a warning logged, when the
/// host refuses (then a hole under a running kernel ends the process).
pub fn install() -> bool {
    INSTALLED
        .get_or_init(|| match install_now() {
            Ok(i) => Some(i),
            Err(e) => {
                log::warn!("cannot guard host memory accesses: {e}");
                None
            }
        })
        .is_some()
}

/// Whether the handler is installed.
pub fn installed() -> bool {
    matches!(INSTALLED.get(), Some(Some(_)))
}

fn install_now() -> Result<Installed, String> {
    // SAFETY: plain syscalls on values owned here; the name is a C string.
    let fd = unsafe { libc::memfd_create(PLACEHOLDER.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is the memfd just created.
    if unsafe { libc::ftruncate(fd, PAGE as libc::off_t) } != 0 {
        return Err(format!("ftruncate: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: zeroed is a valid `sigaction` (no handler, empty mask), filled below.
    let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
    ours.sa_sigaction =
        on_fault as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
    ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: as above.
    let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both point to initialised `sigaction`s; the handler is async-signal
    // safe (see `on_fault`).
    if unsafe { libc::sigaction(libc::SIGSEGV, &ours, &mut previous) } != 0 {
        return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
    }
    Ok(Installed { fd, previous })
}

/// Whether a `/proc/self/maps` path names one of the hole pages.
pub fn is_placeholder(path: &MMapPath) -> bool {
    let name = PLACEHOLDER.to_bytes();
    match path {
        MMapPath::Path(p) => p
            .as_os_str()
            .as_encoded_bytes()
            .windows(name.len())
            .any(|w| w == name),
        MMapPath::Other(s) => s.contains(PLACEHOLDER.to_str().unwrap_or("\0")),
        _ => false,
    }
}

/// The `SIGSEGV` handler. Async-signal safe: atomics, `gettid`, `mmap`, `munmap`
/// and `sigaction` only; `errno` is kept.
extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: reading and restoring the thread's own errno.
    let errno = unsafe { *libc::__errno_location() };
    let absorbed = !info.is_null() && {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
        let (code, address) = unsafe { ((*info).si_code, (*info).si_addr() as u64) };
        code == SEGV_MAPERR && absorb(address, ctx)
    };
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    if !absorbed {
        chain(sig, info, ctx);
    }
}

/// Fills the hole at `address` if the calling thread is inside a scope.
fn absorb(address: u64, ctx: *mut c_void) -> bool {
    let Some(Some(inst)) = INSTALLED.get() else {
        return false;
    };
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    let Some(slot) = TABLE.iter().find(|s| s.tid.load(Ordering::Acquire) == tid) else {
        return false;
    };
    let n = slot.count.load(Ordering::Relaxed);
    if n >= PAGES {
        return false;
    }
    let page = address & !(PAGE - 1);
    // SAFETY: MAP_FIXED_NOREPLACE maps only where nothing is mapped (the kernel
    // said so: SEGV_MAPERR), so no mapping of the process is touched.
    let p = unsafe {
        libc::mmap(
            page as *mut c_void,
            PAGE as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_FIXED_NOREPLACE,
            inst.fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return false;
    }
    if p as u64 != page {
        // A kernel before 4.17 took the flag as a hint and mapped elsewhere.
        // SAFETY: `p` is the page just mapped, by us.
        unsafe { libc::munmap(p, PAGE as usize) };
        return false;
    }
    slot.pages[n].store(page, Ordering::Relaxed);
    slot.count.store(n + 1, Ordering::Release);
    if !slot.faulted.load(Ordering::Relaxed) {
        slot.address.store(address, Ordering::Relaxed);
        slot.write.store(wrote(ctx), Ordering::Relaxed);
        slot.faulted.store(true, Ordering::Release);
    }
    let stop = slot.stop.load(Ordering::Acquire);
    if !stop.is_null() {
        // SAFETY: the scope that stored the pointer borrows the flag and clears the
        // pointer before the borrow ends; this runs on the scope's own thread.
        unsafe { (*stop).store(true, Ordering::SeqCst) };
    }
    true
}

/// Whether the faulting access wrote (bit 1 of x86-64's page-fault error code).
#[cfg(target_arch = "x86_64")]
fn wrote(ctx: *mut c_void) -> bool {
    if ctx.is_null() {
        return false;
    }
    // SAFETY: an SA_SIGINFO handler's third argument is the interrupted ucontext.
    let err =
        unsafe { (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_ERR as usize] };
    err & 2 != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn wrote(_ctx: *mut c_void) -> bool {
    false
}

/// Hands a fault that is not ours to the disposition the process had before.
fn chain(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let previous = match INSTALLED.get() {
        Some(Some(i)) => Some(i.previous),
        _ => None,
    };
    match previous {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler was installed with SA_SIGINFO, so it
                // has this signature.
                let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                    unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig, info, ctx);
            } else {
                // SAFETY: a handler without SA_SIGINFO takes the signal number only.
                let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig);
            }
        }
        _ => {
            // The default action: on return the access faults again and ends the
            // process as it would have without us.
            // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
            let mut dfl: libc::sigaction = unsafe { std::mem::zeroed() };
            dfl.sa_sigaction = libc::SIG_DFL;
            // SAFETY: valid pointer to an initialised sigaction.
            unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) };
        }
    }
}

/// A fault absorbed on a scope's thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostFault {
    /// The first faulting byte's address.
    pub address: u64,
    /// Whether the access wrote.
    pub write: bool,
}

/// A thread running waves of one dispatch, registered so that holes in host memory
/// under its accesses become faults of that dispatch (see the module doc).
pub struct Scope<'a> {
    slot: &'static Slot,
    _stop: PhantomData<&'a AtomicBool>,
}

impl<'a> Scope<'a> {
    /// Registers the calling thread, raising `stop` on a hole. `None` when the
    /// handler is not installed or every slot is taken.
    pub fn enter(stop: &'a AtomicBool) -> Option<Scope<'a>> {
        if !installed() {
            return None;
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let slot = TABLE.iter().find(|s| {
            s.tid
                .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        slot.faulted.store(false, Ordering::Relaxed);
        slot.count.store(0, Ordering::Relaxed);
        slot.stop.store(
            stop as *const AtomicBool as *mut AtomicBool,
            Ordering::Release,
        );
        Some(Scope {
            slot,
            _stop: PhantomData,
        })
    }

    /// The fault absorbed since the last call, if any, once the pages mapped over
    /// the holes are gone again.
    pub fn take_fault(&self) -> Option<HostFault> {
        if !self.slot.faulted.load(Ordering::Acquire) {
            return None;
        }
        let fault = HostFault {
            address: self.slot.address.load(Ordering::Relaxed),
            write: self.slot.write.load(Ordering::Relaxed),
        };
        self.release_pages();
        self.slot.faulted.store(false, Ordering::Release);
        Some(fault)
    }

    /// Unmaps the pages mapped over holes, each only while `/proc/self/maps` still
    /// shows it as ours (the host may have mapped something there since, with
    /// MAP_FIXED: that is then left alone).
    fn release_pages(&self) {
        let n = self.slot.count.load(Ordering::Acquire).min(PAGES);
        if n == 0 {
            return;
        }
        let ours = placeholder_pages();
        for page in &self.slot.pages[..n] {
            let page = page.load(Ordering::Relaxed);
            if ours.iter().any(|&(s, e)| s <= page && page < e) {
                // SAFETY: the page is one of our hole pages (checked just above).
                unsafe { libc::munmap(page as *mut c_void, PAGE as usize) };
            }
        }
        self.slot.count.store(0, Ordering::Release);
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        self.release_pages();
        self.slot.faulted.store(false, Ordering::Relaxed);
        self.slot
            .stop
            .store(std::ptr::null_mut(), Ordering::Release);
        self.slot.tid.store(0, Ordering::Release);
    }
}

/// The address ranges of hole pages in `/proc/self/maps`.
fn placeholder_pages() -> Vec<(u64, u64)> {
    use procfs_core::process::MemoryMaps;
    use procfs_core::FromRead;
    let Ok(file) = std::fs::File::open("/proc/self/maps") else {
        return Vec::new();
    };
    match MemoryMaps::from_read(file) {
        Ok(m) => {
            m.0.into_iter()
                .filter(|m| is_placeholder(&m.pathname))
                .map(|m| m.address)
                .collect()
        }
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hole_under_a_scope_is_a_fault_not_a_signal() {
        assert!(install());
        // A mapping we unmap again: a hole. Made far below where the kernel places
        // mappings (top down from the stack), so no other thread's mapping fills it
        // while the test runs.
        let hint = 0x3000_0000_0000u64 + (u64::from(std::process::id()) << 24);
        // SAFETY: MAP_FIXED_NOREPLACE maps only where nothing is mapped.
        let p = unsafe {
            libc::mmap(
                hint as *mut c_void,
                PAGE as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        assert_eq!(p as u64, hint);
        let addr = p as u64 + 8;
        // SAFETY: our mapping.
        unsafe { libc::munmap(p, PAGE as usize) };
        let stop = AtomicBool::new(false);
        let scope = Scope::enter(&stop).expect("a free slot");
        // SAFETY: the access faults and is absorbed by the handler (the point of the
        // test); it then reads the zero page mapped over the hole.
        let v = unsafe { std::ptr::read_volatile(addr as *const u64) };
        assert_eq!(v, 0);
        // SAFETY: as above; a write lands on the (private) zero page.
        unsafe { std::ptr::write_volatile((addr + 16) as *mut u64, 5) };
        assert!(stop.load(Ordering::SeqCst), "the dispatch is told to stop");
        let f = scope.take_fault().expect("the fault was recorded");
        assert_eq!(
            f,
            HostFault {
                address: addr,
                write: false
            }
        );
        assert!(scope.take_fault().is_none());
        assert!(
            placeholder_pages()
                .iter()
                .all(|&(s, e)| addr < s || addr >= e),
            "the hole is a hole again"
        );
        drop(scope);
    }
}
