//! Environment knobs of the plugin, with LLVM's names and parsing (`Envar` in
//! LLVM 16's `openmp/libomptarget/include/Utilities.h`).
//!
//! Integers are parsed like C++ stream extraction (LLVM's `Envar`): leading
//! whitespace skipped, an optional sign, the longest decimal prefix; no digit
//! or an out-of-range value keeps the default. Booleans are read by
//! [`knobs::parse_bool`], as the virtual device reads its own.

/// `LIBOMPTARGET_DEBUG`: > 0 turns on our debug log.
pub const DEBUG: &str = "LIBOMPTARGET_DEBUG";
/// `LIBOMPTARGET_INFO`: info bit mask (bit 0x10: print each launch).
pub const INFO: &str = "LIBOMPTARGET_INFO";
/// `LIBOMPTARGET_DEVICE_RTL_DEBUG`: the device environment's debug kind.
pub const DEVICE_RTL_DEBUG: &str = "LIBOMPTARGET_DEVICE_RTL_DEBUG";
/// `LIBOMPTARGET_SHARED_MEMORY_SIZE`: dynamic LDS bytes per launch.
pub const SHARED_MEMORY_SIZE: &str = "LIBOMPTARGET_SHARED_MEMORY_SIZE";
/// `LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES`: HSA queues per device (4).
pub const NUM_HSA_QUEUES: &str = "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES";
/// `LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE`: packets per queue (512).
pub const HSA_QUEUE_SIZE: &str = "LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE";
/// `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES`: from this size on, transfers
/// from pageable memory lock it instead of staging (1 MiB).
pub const MAX_ASYNC_COPY_BYTES: &str = "LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES";
/// `LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS`: signals created per device
/// at init (64).
pub const NUM_INITIAL_HSA_SIGNALS: &str = "LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS";
/// `OMPTARGET_AMDGPU_ANNOUNCE`: ours; when true, `init_plugin` prints one
/// line to stderr naming this plugin (lets tests prove which plugin ran).
pub const ANNOUNCE: &str = "OMPTARGET_AMDGPU_ANNOUNCE";

/// Splits the integer at the start of `text` as C++ `istream >> integer`
/// (and `std::stoul`) read it: leading whitespace skipped, an optional
/// sign, then the longest run of decimal digits; whatever follows is
/// ignored. Returns (negative, magnitude); `None` when there is no digit
/// or the magnitude exceeds `u64`.
///
/// The one integer reader behind every knob of the plugin (this module,
/// [`crate::launch`], [`crate::memory_manager`]). LLVM 16's knobs take no
/// unit suffixes, so neither do ours: `"64k"` reads as 64.
pub fn parse_integer_prefix(text: &str) -> Option<(bool, u64)> {
    let t = text.trim_start();
    let (negative, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let magnitude: u64 = rest[..end].parse().ok()?;
    Some((negative, magnitude))
}

/// Parses the longest signed decimal prefix of `text` (after whitespace);
/// `None` without a digit or outside `i64`.
pub fn parse_i64_prefix(text: &str) -> Option<i64> {
    match parse_integer_prefix(text)? {
        (false, m) => i64::try_from(m).ok(),
        (true, m) => 0i64.checked_sub_unsigned(m),
    }
}

/// An unsigned 32-bit value (LLVM `UInt32Envar`); negative values and
/// values above `u32::MAX` are rejected (LLVM would wrap them).
pub fn parse_u32(text: &str) -> Option<u32> {
    parse_i64_prefix(text).and_then(|v| u32::try_from(v).ok())
}

/// A signed 32-bit value (LLVM `Int32Envar`); `None` outside `i32`.
pub fn parse_i32(text: &str) -> Option<i32> {
    parse_i64_prefix(text).and_then(|v| i32::try_from(v).ok())
}

/// A size in bytes read like `std::stoul` (LLVM's memory manager
/// threshold): non-negative, no suffix; `None` otherwise.
pub fn parse_size(text: &str) -> Option<usize> {
    match parse_integer_prefix(text)? {
        (false, m) => usize::try_from(m).ok(),
        (true, _) => None,
    }
}

/// An unsigned 32-bit knob; `default` when unset or not a valid `u32`.
pub fn u32_or(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_u32(&v))
        .unwrap_or(default)
}

/// A signed 32-bit knob; `default` when unset or invalid.
pub fn i32_or(name: &str, default: i32) -> i32 {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_i32(&v))
        .unwrap_or(default)
}

/// A boolean knob; `default` when unset or not a recognised spelling.
pub fn bool_or(name: &str, default: bool) -> bool {
    std::env::var(name)
        .ok()
        .and_then(|v| knobs::parse_bool(&v))
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_parsing_follows_stream_extraction() {
        assert_eq!(parse_i64_prefix("  42abc"), Some(42));
        assert_eq!(parse_i64_prefix("-7"), Some(-7));
        assert_eq!(parse_i64_prefix("+3"), Some(3));
        assert_eq!(parse_i64_prefix("x1"), None);
        assert_eq!(parse_i64_prefix(""), None);
        assert_eq!(parse_i64_prefix("-"), None);
        assert_eq!(parse_i64_prefix("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64_prefix("9223372036854775808"), None);
    }

    #[test]
    fn typed_values_reject_what_does_not_fit() {
        assert_eq!(parse_u32("4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32("4294967296"), None);
        assert_eq!(parse_u32("-1"), None);
        assert_eq!(parse_u32(" 12 teams"), Some(12));
        assert_eq!(parse_i32("-2147483648"), Some(i32::MIN));
        assert_eq!(parse_i32("2147483648"), None);
        assert_eq!(parse_size("+65536"), Some(65536));
        // No unit suffixes: the digits before them count (std::stoul).
        assert_eq!(parse_size("64k"), Some(64));
        assert_eq!(parse_size("-5"), None);
        assert_eq!(parse_size("18446744073709551615"), Some(usize::MAX));
        assert_eq!(parse_size("18446744073709551616"), None);
    }
}
