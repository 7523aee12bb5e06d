//! The on-disk cache of JIT-compiled code objects (ours; LLVM 16's plugin
//! compiles every run).
//!
//! One file per image, named by the SHA-256 of everything the result
//! depends on ([`Key`]): the bitcode, the processor and features, the
//! options, LLVM's version, the linker's identity and this plugin's
//! version. The directory is `OMPTARGET_AMDGPU_JIT_CACHE_DIR` when set,
//! else `omptarget-amdgpu/jit` under the user's cache directory
//! (`$XDG_CACHE_HOME`, else `~/.cache`, by the XDG Base Directory
//! specification, through the `dirs` crate). `OMPTARGET_AMDGPU_JIT_CACHE=0`
//! turns the cache off.
//!
//! Entries are written to a temporary file in the same directory and
//! renamed into place, so a process never reads half an entry while
//! another writes it; two processes compiling the same image both write
//! the same bytes and the last rename wins. An entry that is not an AMDGPU
//! ELF when read (damaged, truncated by a full disk) is a miss and is
//! written again.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// `OMPTARGET_AMDGPU_JIT_CACHE`: ours; false turns the JIT cache off
/// (default true).
pub const CACHE: &str = "OMPTARGET_AMDGPU_JIT_CACHE";
/// `OMPTARGET_AMDGPU_JIT_CACHE_DIR`: ours; the JIT cache's directory.
pub const CACHE_DIR: &str = "OMPTARGET_AMDGPU_JIT_CACHE_DIR";

/// The key of one cache entry: SHA-256 over length-prefixed parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key([u8; 32]);

impl Key {
    /// The key of `parts`, each length-prefixed so that no two lists of
    /// parts give the same stream.
    pub fn of(parts: &[&[u8]]) -> Key {
        let mut h = Sha256::new();
        for p in parts {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        }
        Key(h.finalize().into())
    }

    /// Lowercase hex, the entry's file stem.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The cache directory the knobs choose, or `None` when the cache is off
/// or no cache directory is known (no `HOME`).
pub fn directory() -> Option<PathBuf> {
    if !crate::env::bool_or(CACHE, true) {
        return None;
    }
    if let Some(d) = std::env::var_os(CACHE_DIR) {
        return Some(PathBuf::from(d));
    }
    dirs::cache_dir().map(|d| d.join("omptarget-amdgpu").join("jit"))
}

/// The path of `key`'s entry in `dir`.
pub fn entry(dir: &Path, key: &Key) -> PathBuf {
    dir.join(format!("{}.hsaco", key.hex()))
}

/// The entry of `key`, when present and an AMDGPU ELF code object.
pub fn get(dir: &Path, key: &Key) -> Option<Vec<u8>> {
    let path = entry(dir, key);
    let bytes = std::fs::read(&path).ok()?;
    match code_object::elf_target_id(&bytes) {
        Ok(_) => Some(bytes),
        Err(e) => {
            log::warn!(
                "JIT cache entry {} is not a code object ({e}); compiling again",
                path.display()
            );
            None
        }
    }
}

/// Stores `bytes` as `key`'s entry: a temporary file in `dir`, then a
/// rename. Failures are returned as text for the caller to log (a cache
/// that cannot be written only costs time).
pub fn put(dir: &Path, key: &Key, bytes: &[u8]) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(dir)
        .map_err(|e| format!("creating a temporary file in {}: {e}", dir.display()))?;
    tmp.write_all(bytes)
        .map_err(|e| format!("writing {}: {e}", tmp.path().display()))?;
    let path = entry(dir, key);
    tmp.persist(&path)
        .map_err(|e| format!("renaming into {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_their_parts() {
        assert_ne!(Key::of(&[b"ab", b"c"]), Key::of(&[b"a", b"bc"]));
        assert_eq!(Key::of(&[b"x"]), Key::of(&[b"x"]));
        assert_eq!(Key::of(&[]).hex().len(), 64);
    }

    #[test]
    fn entries_round_trip_and_damaged_ones_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = Key::of(&[b"image"]);
        assert!(get(dir.path(), &key).is_none());
        // Not a code object: stored, but read back as a miss.
        put(dir.path(), &key, b"not an ELF").expect("put");
        assert!(entry(dir.path(), &key).exists());
        assert!(get(dir.path(), &key).is_none());
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
