//! `amdgpu-kernel-replay`: runs one kernel recorded with
//! `LIBOMPTARGET_RECORD=1` again, alone, and optionally checks the memory
//! it leaves against the recording's. The options are those of LLVM 16's
//! `llvm-omp-kernel-replay`
//! (`openmp/libomptarget/tools/kernelreplay/llvm-omp-kernel-replay.cpp`),
//! which Debian cannot start ("Option 'debug-counter' registered more than
//! once"), plus `--image` and `--plugin`:
//!
//! ```text
//! amdgpu-kernel-replay [--verify] [--save-output] [--num-teams=N]
//!     [--num-threads=N] [--device-id=N] [--image=FILE] [--plugin=LIB] KERNEL.json
//! ```
//!
//! It reads `KERNEL.json`, `<kernel>.memory` and `<kernel>.image` (or
//! `--image`: a code object, bitcode, or the program embedding the code
//! object, for LLVM 16's recordings, which have no `.image`) from the
//! JSON's directory, and replays through an LLVM 16 AMDGPU plugin opened
//! directly (default: this project's, `../plugin/libomptarget.rtl.amdgpu.so`
//! beside the tool) with `LIBOMPTARGET_REPLAY=1`, the reserved block sized
//! to the recording (`LIBOMPTARGET_RR_DEVMEM_SIZE`, whole GiB) and, for
//! `--verify` or `--save-output`, `LIBOMPTARGET_RR_SAVE_OUTPUT=1`; the
//! plugin writes `<kernel>.replay.output` beside the recording. `--verify`
//! compares it with `<kernel>.original.output`.
//!
//! Why the plugin directly and not libomptarget's
//! `__tgt_target_kernel_replay`, as LLVM's tool does: the calls are the
//! same (`target_replay` in `openmp/libomptarget/src/omptarget.cpp`:
//! allocate, submit the memory, launch, synchronize), but libomptarget
//! takes the plugin that its search order finds (LLVM's own when ours is
//! not first on the library path) and ends the process through its fatal
//! error path on any failure, where a direct call names the plugin used
//! and reports the step that failed.
//!
//! Exit status: 0 when replayed (and verified), 1 when the memory differs
//! from the recording's, 2 for any error (a message naming the file, field
//! or step).

mod image;
mod plugin;
mod recording;

use recording::Recording;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The tool's errors, each naming what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad command line.
    #[error("{0}\n{USAGE}")]
    Usage(String),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel description is not JSON.
    #[error("{path} is not a kernel description (JSON): {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A field of the description is missing or wrong.
    #[error("{path}: field {field} {what}")]
    Field {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// What is wrong.
        what: String,
    },
    /// The memory file's size differs from the description's.
    #[error("{path} holds {found} bytes, the recording says {expected} (DeviceMemorySize): truncated or from another recording")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the description gives.
        expected: u64,
        /// Bytes the file holds.
        found: u64,
    },
    /// No usable device image.
    #[error("{path}: {what}")]
    Image {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// The plugin library cannot be used.
    #[error("plugin {path} {what}")]
    Plugin {
        /// The library.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A step of the replay failed.
    #[error("replay failed at {step}: {what}")]
    Replay {
        /// The entry point (without `__tgt_rtl_`).
        step: &'static str,
        /// What happened.
        what: String,
    },
    /// `--verify` without the recording's output.
    #[error("cannot read {path} ({source}): record with LIBOMPTARGET_RR_SAVE_OUTPUT=1 to verify")]
    NoOriginalOutput {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

const USAGE: &str = "usage: amdgpu-kernel-replay [--verify] [--save-output] [--num-teams=N] \
[--num-threads=N] [--device-id=N] [--image=FILE] [--plugin=LIB] KERNEL.json";

/// The command line (LLVM's options, then ours).
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    /// `--verify`: compare the memory after the replay with the recording's.
    verify: bool,
    /// `--save-output`: keep `<kernel>.replay.output`.
    save_output: bool,
    /// `--num-teams` (0: the recording's).
    num_teams: u32,
    /// `--num-threads` (0: the recording's).
    num_threads: u32,
    /// `--device-id` (-1: the recording's).
    device_id: i32,
    /// `--image`: the device image or the program holding it.
    image: Option<PathBuf>,
    /// `--plugin`: the plugin library.
    plugin: Option<PathBuf>,
    /// The kernel description.
    json: PathBuf,
}

/// LLVM's command-line library also takes long options with one dash
/// (`-verify`); lexopt reads those as short ones, so they get a second
/// dash first.
fn normalise(arg: OsString) -> OsString {
    const LONG: [&str; 8] = [
        "verify",
        "save-output",
        "num-teams",
        "num-threads",
        "device-id",
        "image",
        "plugin",
        "help",
    ];
    match arg.to_str() {
        Some(s) if s.starts_with('-') && !s.starts_with("--") => {
            let name = s[1..].split('=').next().unwrap_or("");
            if LONG.contains(&name) {
                format!("-{s}").into()
            } else {
                arg
            }
        }
        _ => arg,
    }
}

/// Parses the arguments after the program name.
fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Options, Error> {
    use lexopt::prelude::*;
    let usage = |e: lexopt::Error| Error::Usage(e.to_string());
    let mut o = Options {
        device_id: -1,
        ..Options::default()
    };
    let mut json = None;
    let mut p = lexopt::Parser::from_args(args.into_iter().map(normalise));
    while let Some(arg) = p.next().map_err(usage)? {
        match arg {
            Long("verify") => o.verify = true,
            Long("save-output") => o.save_output = true,
            Long("num-teams") => o.num_teams = p.value().map_err(usage)?.parse().map_err(usage)?,
            Long("num-threads") => {
                o.num_threads = p.value().map_err(usage)?.parse().map_err(usage)?
            }
            Long("device-id") => o.device_id = p.value().map_err(usage)?.parse().map_err(usage)?,
            Long("image") => o.image = Some(p.value().map_err(usage)?.into()),
            Long("plugin") => o.plugin = Some(p.value().map_err(usage)?.into()),
            Long("help") | Short('h') => return Err(Error::Usage(String::new())),
            Value(v) if json.is_none() => json = Some(PathBuf::from(v)),
            other => return Err(usage(other.unexpected())),
        }
    }
    o.json =
        json.ok_or_else(|| Error::Usage("no kernel description (KERNEL.json) given".into()))?;
    Ok(o)
}

/// The plugin used without `--plugin`: the one staged beside the tool
/// (`bin/` and `plugin/` of `target/stage`), else the name libomptarget
/// loads, found on the library path.
fn default_plugin() -> PathBuf {
    const NAME: &str = "libomptarget.rtl.amdgpu.so";
    let staged = std::env::current_exe().ok().and_then(|exe| {
        let p = exe.parent()?.parent()?.join("plugin").join(NAME);
        p.exists().then_some(p)
    });
    staged.unwrap_or_else(|| PathBuf::from(NAME))
}

/// An absolute form of `p` (the tool changes directory before replaying).
fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() || p.components().count() == 1 && p.extension().is_some_and(|e| e == "so") {
        // Absolute, or a bare library name the loader searches for.
        return p.to_owned();
    }
    std::env::current_dir()
        .map(|d| d.join(p))
        .unwrap_or_else(|_| p.to_owned())
}

/// Replays per `o`; `Ok(true)` when replayed (and, with `--verify`,
/// verified), `Ok(false)` when the memory differs.
fn run(o: &Options) -> Result<bool, Error> {
    let rec = Recording::read(&o.json)?;
    let memory = rec.memory()?;
    let image_path = o.image.clone().unwrap_or_else(|| rec.file("image"));
    let image = image::load(&image_path, &rec.name)?;
    let plugin_path = o
        .plugin
        .as_deref()
        .map(absolute)
        .unwrap_or_else(default_plugin);

    // The plugin writes `<kernel>.replay.output` in the current directory:
    // beside the recording.
    std::env::set_current_dir(&rec.dir).map_err(|source| Error::Read {
        path: rec.dir.clone(),
        source,
    })?;
    let replay_output = PathBuf::from(format!("{}.replay.output", rec.name));
    let original_output = PathBuf::from(format!("{}.original.output", rec.name));
    let original = if o.verify {
        Some(
            std::fs::read(&original_output).map_err(|source| Error::NoOriginalOutput {
                path: rec.file("original.output"),
                source,
            })?,
        )
    } else {
        None
    };
    // A stale output must not pass for this replay's.
    let _ = std::fs::remove_file(&replay_output);

    // The plugin's knobs, set before it is loaded (no other thread runs yet).
    std::env::set_var("LIBOMPTARGET_REPLAY", "1");
    std::env::remove_var("LIBOMPTARGET_RECORD");
    if o.verify || o.save_output {
        std::env::set_var("LIBOMPTARGET_RR_SAVE_OUTPUT", "1");
    } else {
        std::env::remove_var("LIBOMPTARGET_RR_SAVE_OUTPUT");
    }
    let gib = rec.memory_size.div_ceil(1 << 30).max(1);
    std::env::set_var("LIBOMPTARGET_RR_DEVMEM_SIZE", gib.to_string());

    let plugin = plugin::Plugin::open(&plugin_path)?;
    plugin.replay(&plugin::Launch {
        image: &image,
        kernel: &rec.name,
        device: if o.device_id >= 0 {
            o.device_id
        } else {
            rec.device_id
        },
        memory: &memory,
        args: &rec.args,
        offsets: &rec.offsets,
        num_teams: if o.num_teams > 0 {
            o.num_teams
        } else {
            rec.num_teams
        },
        thread_limit: if o.num_threads > 0 {
            o.num_threads
        } else {
            rec.thread_limit
        },
        trip_count: rec.trip_count,
    })?;

    let Some(original) = original else {
        return Ok(true);
    };
    let replayed = std::fs::read(&replay_output).map_err(|source| Error::Read {
        path: rec.file("replay.output"),
        source,
    })?;
    if original == replayed {
        println!("[amdgpu-kernel-replay] Replay device memory verified!");
        return Ok(true);
    }
    println!("[amdgpu-kernel-replay] Replay device memory failed to verify!");
    let differing = original
        .iter()
        .zip(&replayed)
        .filter(|(a, b)| a != b)
        .count();
    match original.iter().zip(&replayed).position(|(a, b)| a != b) {
        Some(first) => println!(
            "[amdgpu-kernel-replay] {differing} of {} bytes differ, the first at offset {first:#x}",
            original.len().min(replayed.len())
        ),
        None => println!(
            "[amdgpu-kernel-replay] the outputs hold {} and {} bytes",
            original.len(),
            replayed.len()
        ),
    }
    Ok(false)
}

fn main() -> ExitCode {
    let result = parse(std::env::args_os().skip(1)).and_then(|o| run(&o));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(Error::Usage(m)) if m.is_empty() => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("amdgpu-kernel-replay: error: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn llvm_spellings_of_the_options() {
        let o = parse(args(&[
            "-verify",
            "--num-teams=4",
            "-num-threads",
            "64",
            "k.json",
        ]))
        .unwrap();
        assert!(o.verify && !o.save_output);
        assert_eq!((o.num_teams, o.num_threads, o.device_id), (4, 64, -1));
        assert_eq!(o.json, PathBuf::from("k.json"));
        let o = parse(args(&[
            "--save-output",
            "-device-id=1",
            "--image",
            "a.out",
            "k.json",
        ]))
        .unwrap();
        assert!(o.save_output);
        assert_eq!(o.device_id, 1);
        assert_eq!(o.image, Some(PathBuf::from("a.out")));
        assert!(matches!(parse(args(&[])), Err(Error::Usage(_))));
        assert!(matches!(
            parse(args(&["--num-teams=x", "k.json"])),
            Err(Error::Usage(_))
        ));
        assert!(matches!(
            parse(args(&["a.json", "b.json"])),
            Err(Error::Usage(_))
        ));
    }
}
