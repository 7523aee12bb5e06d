//! How the plugin (`src/env.rs`) and the virtual device (`sim/src/config.rs`) read
//! the boolean knobs of the environment, so that both take the same spellings:
//! those the plugin has always taken for LLVM's `BoolEnvar` knobs (LLVM 16's
//! `openmp/libomptarget/include/Utilities.h`): `true`, `yes`, `on`, `1` and
//! `false`, `no`, `off`, `0`, case-insensitively.

/// A boolean (LLVM `BoolEnvar`): `true/yes/on/1` or `false/no/off/0`,
/// case-insensitive, surrounding whitespace ignored; `None` otherwise.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_take_the_llvm_spellings() {
        for t in ["true", "YES", " on ", "1"] {
            assert_eq!(parse_bool(t), Some(true), "{t:?}");
        }
        for t in ["false", "No", "OFF", "0"] {
            assert_eq!(parse_bool(t), Some(false), "{t:?}");
        }
        for t in ["", "2", "maybe", "truee"] {
            assert_eq!(parse_bool(t), None, "{t:?}");
        }
    }
}
