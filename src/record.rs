//! Kernel record and replay, as LLVM 16's nextgen plugins do it
//! (`RecordReplayTy` in
//! `openmp/libomptarget/plugins-nextgen/common/PluginInterface/PluginInterface.cpp`,
//! read by `openmp/libomptarget/tools/kernelreplay/llvm-omp-kernel-replay.cpp`).
//!
//! With `LIBOMPTARGET_RECORD` or `LIBOMPTARGET_REPLAY` true, each device
//! reserves one block of device memory at `init_device`
//! (`LIBOMPTARGET_RR_DEVMEM_SIZE` GiB, 64 by default, one GiB less after
//! each refusal) and every `data_alloc` of any kind is a bump allocation in
//! it (16-byte aligned); `data_delete` frees nothing. The device pointers a
//! kernel receives, and those stored in the memory it reads, all point into
//! that block, which the HSA runtime places at the same address in every
//! run (a GPU's address allocator, and the virtual device's placement of
//! large blocks, are deterministic): so the recorded memory, written back
//! into the block of another process, is valid again.
//!
//! Recording, before each launch, in the current directory, named after
//! the kernel:
//!
//! | file | what |
//! |---|---|
//! | `<kernel>.json` | the launch: `Name`, `NumArgs`, `ArgPtrs` (each argument as a signed integer), `ArgOffsets`, `NumTeamsClause`, `ThreadLimitClause`, `LoopTripCount`, `DeviceMemorySize` (bytes of the block in use), `DeviceId`; compact, keys sorted (LLVM's `json::Value` printing) |
//! | `<kernel>.memory` | the first `DeviceMemorySize` bytes of the block |
//! | `<kernel>.image` | the image the kernel was loaded from, as libomptarget passed it (LLVM 16 has `saveImage` but never calls it; its replay tool reads the file) |
//!
//! and, with `LIBOMPTARGET_RR_SAVE_OUTPUT`, after the kernel:
//! `<kernel>.original.output` (recording) or `<kernel>.replay.output`
//! (replaying), the same bytes of the block again.
//!
//! One difference from LLVM 16: its AMDGPU plugin writes each memory file
//! before the copy that fills it has finished (`dumpDeviceMemory` retrieves
//! on the launch's stream and writes the buffer at once), so unless
//! `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES` makes its copies synchronous,
//! its `.memory` misses the data copied just before the launch and its
//! `.original.output` the kernel's results. Here each snapshot waits for
//! the work queued before it.

use crate::abi::KernelArgs;
use crate::env;
use hsa::{DeviceRange, Hsa, HsaError};
use hsa_sys::hsa_amd_memory_pool_t;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// `LIBOMPTARGET_RECORD`: record every kernel launch (boolean).
pub const RECORD: &str = "LIBOMPTARGET_RECORD";
/// `LIBOMPTARGET_REPLAY`: replay mode, set by the replay tool (boolean).
pub const REPLAY: &str = "LIBOMPTARGET_REPLAY";
/// `LIBOMPTARGET_RR_SAVE_OUTPUT`: also save the memory after each kernel
/// (boolean).
pub const SAVE_OUTPUT: &str = "LIBOMPTARGET_RR_SAVE_OUTPUT";
/// `LIBOMPTARGET_RR_DEVMEM_SIZE`: GiB of device memory to reserve (64).
pub const DEVMEM_SIZE: &str = "LIBOMPTARGET_RR_DEVMEM_SIZE";

/// Bytes in a GiB, the unit of `LIBOMPTARGET_RR_DEVMEM_SIZE` and of the
/// reservation's steps.
pub const GIB: u64 = 1 << 30;
/// Alignment of every bump allocation (LLVM's `RecordReplayTy::alloc`).
pub const ALIGNMENT: u64 = 16;
/// Bytes copied from the device per step of a snapshot (bounds the staging
/// memory a snapshot of a large block takes).
const SNAPSHOT_CHUNK: usize = 64 << 20;

/// Failures of record and replay.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// No reservation of any whole number of GiB up to the asked size
    /// succeeded.
    #[error(
        "reserving record/replay device memory ({DEVMEM_SIZE}={gib} GiB, then 1 GiB less each time): {source}"
    )]
    Reserve {
        /// The size asked, in GiB.
        gib: u64,
        /// The last refusal.
        #[source]
        source: HsaError,
    },
    /// `LIBOMPTARGET_RR_DEVMEM_SIZE` is 0.
    #[error("{DEVMEM_SIZE} is 0: no record/replay device memory to reserve")]
    NoMemory,
    /// The reserved block is full.
    #[error(
        "record/replay device memory exhausted: {asked} bytes asked, {used} of {capacity} in use (raise {DEVMEM_SIZE})"
    )]
    Exhausted {
        /// Bytes of the allocation (aligned).
        asked: u64,
        /// Bytes in use.
        used: u64,
        /// Bytes reserved.
        capacity: u64,
    },
    /// A negative allocation size.
    #[error("allocation of {0} bytes")]
    BadSize(i64),
    /// A snapshot asked for more bytes than the block holds.
    #[error("record/replay snapshot of {used} bytes past the block's {capacity}")]
    Snapshot {
        /// Bytes asked.
        used: u64,
        /// Bytes reserved.
        capacity: u64,
    },
    /// Writing a recording file failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What the environment asks of record and replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordConfig {
    /// `LIBOMPTARGET_RECORD`: recording (else replaying).
    pub recording: bool,
    /// `LIBOMPTARGET_RR_SAVE_OUTPUT`.
    pub save_output: bool,
    /// `LIBOMPTARGET_RR_DEVMEM_SIZE` in GiB.
    pub devmem_gib: u32,
}

impl RecordConfig {
    /// The configuration when `LIBOMPTARGET_RECORD` or `LIBOMPTARGET_REPLAY`
    /// is true (LLVM's `BoolEnvar`s; recording wins when both are), else
    /// `None`.
    pub fn from_env() -> Option<RecordConfig> {
        let recording = env::bool_or(RECORD, false);
        let replaying = env::bool_or(REPLAY, false);
        (recording || replaying).then(|| RecordConfig {
            recording,
            save_output: env::bool_or(SAVE_OUTPUT, false),
            devmem_gib: env::u32_or(DEVMEM_SIZE, 64),
        })
    }
}

/// One kernel launch as recorded in `<kernel>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRecord {
    /// The kernel's name.
    pub name: String,
    /// `TgtArgs` as given to `launch_kernel` (pointers and by-value
    /// arguments alike), without their offsets.
    pub args: Vec<u64>,
    /// `TgtOffsets`, one per argument.
    pub offsets: Vec<i64>,
    /// `KernelArgs.NumTeams[0]`.
    pub num_teams: u32,
    /// `KernelArgs.ThreadLimit[0]`.
    pub thread_limit: u32,
    /// `KernelArgs.Tripcount`.
    pub trip_count: u64,
    /// Bytes of the reserved block in use.
    pub memory_size: u64,
    /// Plugin-local device id.
    pub device: i32,
}

impl LaunchRecord {
    /// The launch of `name` with these arguments (`args` and `offsets` of
    /// equal length, as `launch_kernel` received them).
    pub fn new(name: &str, args: Vec<u64>, offsets: Vec<i64>, k: &KernelArgs) -> LaunchRecord {
        LaunchRecord {
            name: name.to_owned(),
            args,
            offsets,
            num_teams: k.num_teams[0],
            thread_limit: k.thread_limit[0],
            trip_count: k.tripcount,
            memory_size: 0,
            device: 0,
        }
    }

    /// The JSON text LLVM 16's `saveKernelInputInfo` writes: one line, no
    /// spaces, keys in byte order, `ArgPtrs` as signed (`intptr_t`) values.
    pub fn to_json(&self) -> String {
        let mut o = BTreeMap::new();
        o.insert("Name", serde_json::Value::from(self.name.as_str()));
        o.insert("NumArgs", self.args.len().into());
        o.insert("NumTeamsClause", u64::from(self.num_teams).into());
        o.insert("ThreadLimitClause", self.thread_limit.into());
        o.insert("LoopTripCount", self.trip_count.into());
        o.insert("DeviceMemorySize", self.memory_size.into());
        o.insert("DeviceId", self.device.into());
        let ptrs: Vec<serde_json::Value> = self.args.iter().map(|&a| (a as i64).into()).collect();
        o.insert("ArgPtrs", ptrs.into());
        o.insert("ArgOffsets", self.offsets.clone().into());
        // A BTreeMap of strings and JSON values always serialises.
        serde_json::to_string(&o).unwrap_or_default()
    }
}

/// The record/replay state of one device: the reserved block, its bump
/// pointer, and (recording) the images of the kernels.
#[derive(Debug)]
pub struct RecordReplay {
    config: RecordConfig,
    hsa: Hsa,
    block: DeviceRange,
    used: Mutex<u64>,
    /// The image each kernel was loaded from, by kernel name (recording).
    images: Mutex<BTreeMap<String, Arc<[u8]>>>,
    /// Kernels whose `.image` is written already.
    images_saved: Mutex<HashSet<String>>,
}

impl RecordReplay {
    /// Reserves the block from `pool` (the device's coarse-grained pool) as
    /// `preallocateDeviceMemory` does: `config.devmem_gib` GiB, then one
    /// GiB less after each refusal.
    ///
    /// Errors: [`RecordError::NoMemory`] for 0 GiB; [`RecordError::Reserve`]
    /// when even 1 GiB is refused.
    pub fn reserve(
        hsa: &Hsa,
        pool: hsa_amd_memory_pool_t,
        config: RecordConfig,
    ) -> Result<RecordReplay, RecordError> {
        let mut last = None;
        for gib in (1..=u64::from(config.devmem_gib)).rev() {
            match hsa.pool_allocate_range(pool, (gib * GIB) as usize) {
                Ok(block) => {
                    log::info!(
                        "record/replay: {} GiB reserved at {:#x}, {}",
                        gib,
                        block.addr(),
                        if config.recording {
                            "recording"
                        } else {
                            "replaying"
                        }
                    );
                    return Ok(RecordReplay {
                        config,
                        hsa: hsa.clone(),
                        block,
                        used: Mutex::new(0),
                        images: Mutex::new(BTreeMap::new()),
                        images_saved: Mutex::new(HashSet::new()),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(source) => RecordError::Reserve {
                gib: u64::from(config.devmem_gib),
                source,
            },
            None => RecordError::NoMemory,
        })
    }

    /// Whether kernels are recorded (else replayed).
    pub fn recording(&self) -> bool {
        self.config.recording
    }

    /// Whether the memory is saved after each kernel.
    pub fn save_output(&self) -> bool {
        self.config.save_output
    }

    /// The reserved block's first address.
    pub fn start(&self) -> u64 {
        self.block.addr()
    }

    /// `data_alloc` while recording or replaying: the next `size` bytes
    /// (rounded up to 16) of the block.
    ///
    /// Errors: a negative size; the block is full.
    pub fn alloc(&self, size: i64) -> Result<u64, RecordError> {
        let size = u64::try_from(size).map_err(|_| RecordError::BadSize(size))?;
        let asked = size.div_ceil(ALIGNMENT) * ALIGNMENT;
        let mut used = self.used.lock();
        let capacity = self.block.len() as u64;
        if asked > capacity - *used {
            return Err(RecordError::Exhausted {
                asked,
                used: *used,
                capacity,
            });
        }
        let addr = self.block.addr() + *used;
        *used += asked;
        Ok(addr)
    }

    /// Remembers the image that defines the kernels among `entries`
    /// (entries of size 0), for their `.image` files.
    pub fn note_image<'a>(&self, bytes: &[u8], kernels: impl Iterator<Item = &'a str>) {
        if !self.config.recording {
            return;
        }
        let image: Arc<[u8]> = Arc::from(bytes);
        let mut images = self.images.lock();
        for k in kernels {
            images.insert(k.to_owned(), image.clone());
        }
    }

    /// Writes `<kernel>.json`, `<kernel>.memory` and (once per kernel)
    /// `<kernel>.image` before a launch (`saveKernelInputInfo`); the caller
    /// waited for the work queued before the launch. `read` copies a range
    /// of device memory into a buffer and waits (the device's
    /// `Transfers::read_sync`).
    ///
    /// Errors: `read`'s; a file that cannot be written.
    pub fn save_inputs<E: From<RecordError>>(
        &self,
        read: impl FnMut(DeviceRange, &mut [u8]) -> Result<(), E>,
        device: i32,
        mut launch: LaunchRecord,
    ) -> Result<(), E> {
        let used = *self.used.lock();
        launch.memory_size = used;
        launch.device = device;
        let name = launch.name.clone();
        self.snapshot(read, used, &format!("{name}.memory"))?;
        let image = self.images.lock().get(&name).cloned();
        if let Some(image) = image {
            if self.images_saved.lock().insert(name.clone()) {
                write(&format!("{name}.image"), &image)?;
            }
        }
        Ok(write(&format!("{name}.json"), launch.to_json().as_bytes())?)
    }

    /// Writes `<kernel>.original.output` (recording) or
    /// `<kernel>.replay.output` (replaying) after a launch
    /// (`saveKernelOutputInfo`); the caller waited for the kernel.
    ///
    /// Errors: `read`'s (as [`RecordReplay::save_inputs`]); a file that
    /// cannot be written.
    pub fn save_output_of<E: From<RecordError>>(
        &self,
        read: impl FnMut(DeviceRange, &mut [u8]) -> Result<(), E>,
        name: &str,
    ) -> Result<(), E> {
        let used = *self.used.lock();
        let suffix = if self.config.recording {
            "original.output"
        } else {
            "replay.output"
        };
        self.snapshot(read, used, &format!("{name}.{suffix}"))
    }

    /// Copies the block's first `used` bytes to the file `path`.
    fn snapshot<E: From<RecordError>>(
        &self,
        mut read: impl FnMut(DeviceRange, &mut [u8]) -> Result<(), E>,
        used: u64,
        path: &str,
    ) -> Result<(), E> {
        let mut bytes = vec![0u8; used as usize];
        for (i, chunk) in bytes.chunks_mut(SNAPSHOT_CHUNK).enumerate() {
            let from =
                self.block
                    .slice(i * SNAPSHOT_CHUNK, chunk.len())
                    .ok_or(RecordError::Snapshot {
                        used,
                        capacity: self.block.len() as u64,
                    })?;
            read(from, chunk)?;
        }
        Ok(write(path, &bytes)?)
    }

    /// Gives the block back (device teardown).
    pub fn release(&self) {
        if let Err(e) = self.hsa.pool_free(self.block.addr()) {
            log::debug!("freeing the record/replay block: {e}");
        }
    }
}

/// Writes `bytes` to `path` (relative: the current directory, as LLVM's
/// plugin writes).
fn write(path: &str, bytes: &[u8]) -> Result<(), RecordError> {
    std::fs::write(path, bytes).map_err(|source| RecordError::Write {
        path: path.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kargs(teams: u32, threads: u32, trip: u64) -> KernelArgs {
        // SAFETY: KernelArgs is plain data (integers and raw pointers), for
        // which all-zero bytes are a valid value.
        let mut k: KernelArgs = unsafe { std::mem::zeroed() };
        k.num_teams[0] = teams;
        k.thread_limit[0] = threads;
        k.tripcount = trip;
        k
    }

    #[test]
    fn json_has_llvm_field_names_order_and_types() {
        let mut r = LaunchRecord::new(
            "__omp_offloading_fe00_1_main_l9",
            vec![0x1000_0000_0000, (-2.5f64).to_bits()],
            vec![0, -8],
            &kargs(4, 128, 1000),
        );
        r.memory_size = 4096;
        r.device = 1;
        let text = r.to_json();
        // Keys in byte order, compact; the negative double's bits as a
        // negative intptr_t.
        let keys: Vec<&str> = text
            .split('"')
            .skip(1)
            .step_by(2)
            .filter(|k| k.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
            .collect();
        assert_eq!(
            keys,
            [
                "ArgOffsets",
                "ArgPtrs",
                "DeviceId",
                "DeviceMemorySize",
                "LoopTripCount",
                "Name",
                "NumArgs",
                "NumTeamsClause",
                "ThreadLimitClause"
            ]
        );
        assert!(!text.contains(' '), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["ArgPtrs"][1].as_i64(), Some((-2.5f64).to_bits() as i64));
        assert_eq!(v["ArgOffsets"][1].as_i64(), Some(-8));
        assert_eq!(v["NumArgs"].as_u64(), Some(2));
        assert_eq!(v["DeviceMemorySize"].as_u64(), Some(4096));
        assert_eq!(v["ThreadLimitClause"].as_u64(), Some(128));
    }
}
