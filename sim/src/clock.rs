//! The system timestamp clock (`HSA_SYSTEM_INFO_TIMESTAMP`): what signals,
//! queues and profiling read.

use std::sync::OnceLock;
use std::time::Instant;

/// Nanoseconds on the system timestamp clock (`HSA_SYSTEM_INFO_TIMESTAMP`,
/// 1 GHz), monotonic, counted from the first call in the process.
pub fn timestamp_ns() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = ORIGIN.get_or_init(Instant::now);
    origin.elapsed().as_nanos() as u64 + 1
}

/// Frequency of [`timestamp_ns`] in Hz.
pub const TIMESTAMP_FREQUENCY: u64 = 1_000_000_000;
