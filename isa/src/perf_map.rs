//! A perf map of the compiled runs (see `valu::jit`), so that `perf report` names
//! the host code of each run instead of showing bare addresses under `[JIT]`.
//!
//! perf's convention for code a process generates (Linux's
//! `tools/perf/Documentation/jit-interface.txt`): the process appends one line per
//! function to `/tmp/perf-<pid>.map`, `START SIZE NAME` with START and SIZE in
//! hexadecimal, and perf reads the file when it reports. Names here are
//! `gfx90a run <pc> +<n>: <first mnemonics>`: the byte address of the run's first
//! instruction, how many instructions it covers, and what it starts with.
//!
//! Off unless [`set_perf_map`] turned it on (the virtual device does for
//! `HSA_SIM_PERF_MAP`); the file is never removed (perf reads it after the process
//! ended), as other JITs that write one leave it.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Whether runs compiled from now on are written to the map.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// The open map (`None` until the first run is written, or after a write failed).
static MAP: Mutex<Option<File>> = Mutex::new(None);

/// Turns the perf map on or off for runs compiled from now on (blocks already
/// decoded keep what they had). A profiling aid; off by default.
pub fn set_perf_map(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether runs compiled now are written to the map.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The map's path for this process (perf's convention).
pub fn path() -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/tmp/perf-{}.map", std::process::id()))
}

/// Appends `START SIZE NAME` for the `size` bytes of host code at `start`. A map
/// that cannot be opened or written turns the map off (profiling is never worth a
/// failed dispatch); a poisoned lock writes nothing.
pub(crate) fn record(start: usize, size: usize, name: &str) {
    let Ok(mut map) = MAP.lock() else { return };
    if map.is_none() {
        *map = File::options().create(true).append(true).open(path()).ok();
    }
    let written = match map.as_mut() {
        Some(f) => writeln!(f, "{start:x} {size:x} {name}").is_ok(),
        None => false,
    };
    if !written {
        *map = None;
        set_perf_map(false);
    }
}
