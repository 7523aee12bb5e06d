//! The plugin's log: `env_logger` writing to stderr, every line prefixed
//! with `omptarget-amdgpu` so it is clear which plugin speaks.
//!
//! Level of this crate's messages: `RUST_LOG` when set; else debug with
//! `LIBOMPTARGET_DEBUG=1`, trace with `LIBOMPTARGET_DEBUG` ≥ 2; else errors
//! only (errors are always reported, as LLVM's `REPORT` does).

use std::io::Write;

/// Initialises the logger once; harmless if called again or if another
/// logger already exists in this library's copy of `log`.
pub fn init() {
    let debug = crate::env::i32_or(crate::env::DEBUG, 0);
    let level = match debug {
        d if d >= 2 => log::LevelFilter::Trace,
        1 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Error,
    };
    let mut builder = env_logger::Builder::new();
    builder
        .filter_level(log::LevelFilter::Off)
        .filter_module("omptarget_amdgpu", level)
        .format(|buf, record| {
            writeln!(
                buf,
                "omptarget-amdgpu {}: {}",
                record.level().as_str().to_ascii_lowercase(),
                record.args()
            )
        })
        .target(env_logger::Target::Stderr);
    if let Ok(spec) = std::env::var("RUST_LOG") {
        builder.parse_filters(&spec);
    }
    let _ = builder.try_init();
}
