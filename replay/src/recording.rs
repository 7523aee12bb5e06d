//! A kernel recording as LLVM 16's plugins write it (`RecordReplayTy` in
//! `openmp/libomptarget/plugins-nextgen/common/PluginInterface/PluginInterface.cpp`;
//! this project's plugin writes the same, `src/record.rs`): the launch in
//! `<kernel>.json`, the device memory before it in `<kernel>.memory`, and
//! optionally the memory after it in `<kernel>.original.output`. Every file
//! of one recording sits in one directory and is named after the kernel.
//!
//! Reading is strict: LLVM's tool takes a missing or mistyped field as a
//! crash (`std::optional::value` of nothing); here each is an
//! [`Error::Field`] naming the file and the field.

use crate::Error;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// One recorded launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// The directory of the recording's files.
    pub dir: PathBuf,
    /// `Name`: the kernel's symbol name (its descriptor is `<Name>.kd`).
    pub name: String,
    /// `ArgPtrs`: each argument as the launch passed it (device pointers
    /// and by-value arguments alike), as 64-bit patterns.
    pub args: Vec<u64>,
    /// `ArgOffsets`: byte offsets added to each argument at launch.
    pub offsets: Vec<i64>,
    /// `NumTeamsClause` (0: not given).
    pub num_teams: u32,
    /// `ThreadLimitClause` (0: not given).
    pub thread_limit: u32,
    /// `LoopTripCount` (0: unknown).
    pub trip_count: u64,
    /// `DeviceMemorySize`: bytes of `<kernel>.memory`.
    pub memory_size: u64,
    /// `DeviceId`: the plugin's device number.
    pub device_id: i32,
}

impl Recording {
    /// Reads and checks the JSON file at `path`.
    ///
    /// Errors: [`Error::Read`], [`Error::Json`], [`Error::Field`].
    pub fn read(path: &Path) -> Result<Recording, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.to_owned(),
            source,
        })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        Recording::parse(&text, path, dir)
    }

    /// Parses `text` (the contents of `path`), for files in `dir`.
    ///
    /// Errors: [`Error::Json`] for text that is not a JSON object;
    /// [`Error::Field`] for a missing field, a wrong type or range, or
    /// `NumArgs` differing from the lengths of the two arrays.
    pub fn parse(text: &str, path: &Path, dir: PathBuf) -> Result<Recording, Error> {
        let value: Value = serde_json::from_str(text).map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        })?;
        let field = |field: &'static str, what: String| Error::Field {
            path: path.to_owned(),
            field,
            what,
        };
        let obj = value
            .as_object()
            .ok_or_else(|| field("(top level)", "must be a JSON object".into()))?;
        let name = get(obj, "Name", path)?
            .as_str()
            .ok_or_else(|| field("Name", "must be a string".into()))?
            .to_owned();
        if name.is_empty() || name.contains(['/', '\0']) {
            return Err(field(
                "Name",
                format!("{name:?} is not a kernel name (empty, or holding '/' or NUL)"),
            ));
        }
        let num_args = unsigned(obj, "NumArgs", path, i32::MAX as u64)?;
        let args = integers(obj, "ArgPtrs", path)?;
        let offsets: Vec<i64> = integers(obj, "ArgOffsets", path)?
            .into_iter()
            .map(|v| v as i64)
            .collect();
        for (f, len) in [("ArgPtrs", args.len()), ("ArgOffsets", offsets.len())] {
            if len as u64 != num_args {
                return Err(field(
                    f,
                    format!("holds {len} values but NumArgs is {num_args}"),
                ));
            }
        }
        Ok(Recording {
            dir,
            name,
            args,
            offsets,
            num_teams: unsigned(obj, "NumTeamsClause", path, u64::from(u32::MAX))? as u32,
            thread_limit: unsigned(obj, "ThreadLimitClause", path, u64::from(u32::MAX))? as u32,
            trip_count: unsigned(obj, "LoopTripCount", path, u64::MAX)?,
            memory_size: unsigned(obj, "DeviceMemorySize", path, isize::MAX as u64)?,
            device_id: unsigned(obj, "DeviceId", path, i32::MAX as u64)? as i32,
        })
    }

    /// The recording's file `<Name>.<suffix>`.
    pub fn file(&self, suffix: &str) -> PathBuf {
        self.dir.join(format!("{}.{suffix}", self.name))
    }

    /// The bytes of `<Name>.memory`.
    ///
    /// Errors: [`Error::Read`]; [`Error::Truncated`] when the file does not
    /// hold `DeviceMemorySize` bytes.
    pub fn memory(&self) -> Result<Vec<u8>, Error> {
        let path = self.file("memory");
        let bytes = std::fs::read(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        if bytes.len() as u64 != self.memory_size {
            return Err(Error::Truncated {
                path,
                expected: self.memory_size,
                found: bytes.len() as u64,
            });
        }
        Ok(bytes)
    }
}

/// The field `key` of `obj`.
fn get<'a>(
    obj: &'a Map<String, Value>,
    key: &'static str,
    path: &Path,
) -> Result<&'a Value, Error> {
    obj.get(key).ok_or_else(|| Error::Field {
        path: path.to_owned(),
        field: key,
        what: "is missing".into(),
    })
}

/// The field `key` as an integer in `0..=max`.
fn unsigned(
    obj: &Map<String, Value>,
    key: &'static str,
    path: &Path,
    max: u64,
) -> Result<u64, Error> {
    let v = get(obj, key, path)?;
    v.as_u64()
        .filter(|&n| n <= max)
        .ok_or_else(|| Error::Field {
            path: path.to_owned(),
            field: key,
            what: format!("must be an integer from 0 to {max}, not {v}"),
        })
}

/// The field `key` as an array of 64-bit integers (signed as LLVM writes
/// them, or unsigned), each as its bit pattern.
fn integers(obj: &Map<String, Value>, key: &'static str, path: &Path) -> Result<Vec<u64>, Error> {
    let bad = |what: String| Error::Field {
        path: path.to_owned(),
        field: key,
        what,
    };
    get(obj, key, path)?
        .as_array()
        .ok_or_else(|| bad("must be an array".into()))?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_i64()
                .map(|n| n as u64)
                .or_else(|| v.as_u64())
                .ok_or_else(|| bad(format!("element {i} ({v}) is not a 64-bit integer")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"ArgOffsets":[0,-8],"ArgPtrs":[18691697672192,-4611686018427387904],"DeviceId":0,"DeviceMemorySize":65536,"LoopTripCount":4096,"Name":"__omp_offloading_fe00_1_main_l22","NumArgs":2,"NumTeamsClause":0,"ThreadLimitClause":128}"#;

    fn parse(text: &str) -> Result<Recording, Error> {
        Recording::parse(text, Path::new("k.json"), PathBuf::from("rec"))
    }

    #[test]
    fn reads_llvm_fields() {
        let r = parse(GOOD).unwrap();
        assert_eq!(r.name, "__omp_offloading_fe00_1_main_l22");
        assert_eq!(r.args, [18691697672192, (-4611686018427387904i64) as u64]);
        assert_eq!(r.offsets, [0, -8]);
        assert_eq!((r.num_teams, r.thread_limit, r.trip_count), (0, 128, 4096));
        assert_eq!(r.memory_size, 65536);
        assert_eq!(
            r.file("memory"),
            Path::new("rec/__omp_offloading_fe00_1_main_l22.memory")
        );
    }

    #[test]
    fn malformed_recordings_name_the_field() {
        let cases = [
            (GOOD.replace("\"NumArgs\":2", "\"NumArgs\":3"), "ArgPtrs"),
            (
                GOOD.replace("\"Name\":\"__omp_offloading_fe00_1_main_l22\",", ""),
                "Name",
            ),
            (
                GOOD.replace("\"DeviceMemorySize\":65536", "\"DeviceMemorySize\":-1"),
                "DeviceMemorySize",
            ),
            (GOOD.replace("18691697672192", "\"x\""), "ArgPtrs"),
            (
                GOOD.replace(
                    "\"ThreadLimitClause\":128",
                    "\"ThreadLimitClause\":4294967296",
                ),
                "ThreadLimitClause",
            ),
            (
                GOOD.replace("__omp_offloading_fe00_1_main_l22", "../x"),
                "Name",
            ),
            ("[1,2]".to_owned(), "(top level)"),
        ];
        for (text, want) in cases {
            match parse(&text) {
                Err(Error::Field { field, .. }) => assert_eq!(field, want, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(matches!(parse(&GOOD[..40]), Err(Error::Json { .. })));
    }
}
