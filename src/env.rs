//! Environment knobs of the plugin, with LLVM's names and parsing (spec §6).
//!
//! Integers are parsed like C++ stream extraction (LLVM's `Envar`): leading
//! whitespace skipped, an optional sign, the longest decimal prefix; no digit
//! or an out-of-range value keeps the default. Booleans accept
//! `true/yes/on/1` and `false/no/off/0`, case-insensitively.

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

/// Parses the longest signed decimal prefix of `text` (after whitespace).
pub fn parse_i64_prefix(text: &str) -> Option<i64> {
    let t = text.trim_start();
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let v: i64 = rest[..end].parse().ok()?;
    Some(if neg { -v } else { v })
}

/// An unsigned 32-bit knob; `default` when unset or not a valid `u32`.
pub fn u32_or(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_i64_prefix(&v))
        .and_then(|v| u32::try_from(v).ok())
        .unwrap_or(default)
}

/// A signed 32-bit knob; `default` when unset or invalid.
pub fn i32_or(name: &str, default: i32) -> i32 {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_i64_prefix(&v))
        .and_then(|v| i32::try_from(v).ok())
        .unwrap_or(default)
}

/// A boolean knob; `default` when unset or not a recognised spelling.
pub fn bool_or(name: &str, default: bool) -> bool {
    match std::env::var(name) {
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => true,
            "false" | "no" | "off" | "0" => false,
            _ => default,
        },
        Err(_) => default,
    }
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
    }
}
