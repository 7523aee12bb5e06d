//! The code objects loaded on one device (LLVM's `AMDGPUDeviceImageTy` and
//! `loadBinaryImpl`), not to be confused with [`crate::image`], which only
//! inspects an image's bytes.
//!
//! [`ImageTable`] owns each loaded image (its HSA code object and
//! executable, the target table handed to libomptarget, its RPC server) and
//! every [`Kernel`] built from them, by the handle stored in the target
//! table. Loading (`load_binary`; LLVM 16's `AMDGPUDeviceTy::loadBinaryImpl`):
//! load and freeze the executable,
//! write the device environment, set up RPC when the image has a client,
//! then resolve every offload entry: a kernel (size 0) becomes a [`Kernel`]
//! (`Kernel::init`), a global its device address (copied from the host
//! under unified shared memory).

use crate::abi::{self, DeviceEnvironment, OffloadEntry, TargetTable};
use crate::error::{Error, Result};
use crate::host_device::HostDevice;
use crate::image::{self, ImageKind};
use crate::kernel::Kernel;
use crate::memory::PoolManager;
use crate::rpc_host::{self, ImageRpc};
use crate::transfer::{Endpoint, Transfers};
use hsa::{HostSpan, Hsa};
use hsa_sys::*;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap as AddrMap;
use std::ffi::{c_void, CString};
use std::sync::Arc;

/// One entry of an image's host entry table, read by `rtl` from the C side.
#[derive(Debug, Clone)]
pub struct EntryDesc {
    /// The entry as libomptarget passed it (copied into the target table).
    pub raw: OffloadEntry,
    /// Its name (`raw.name` read as a C string).
    pub name: String,
    /// For a global (size > 0): the host global's bytes, lent by the
    /// program for its lifetime.
    pub host: Option<HostSpan>,
}

/// Owned storage of a target table: the entries and the table pointing at
/// them. Both live until the device is torn down (libomptarget caches the
/// table pointer and reads it at every launch).
#[derive(Debug)]
struct TableStorage {
    _entries: Box<[OffloadEntry]>,
    _table: Box<TargetTable>,
}

// SAFETY: the raw pointers inside are never dereferenced by the plugin after
// the table was built; they are only handed back to libomptarget.
unsafe impl Send for TableStorage {}
// SAFETY: as above; the storage is immutable after construction.
unsafe impl Sync for TableStorage {}

/// A code object loaded on the device.
#[derive(Debug)]
struct LoadedImage {
    executable: hsa_executable_t,
    code_object: hsa_code_object_t,
    tables: TableStorage,
    /// The image's RPC server, when it has a client.
    rpc: Option<Arc<ImageRpc>>,
}

/// What loading needs of the device besides the table itself.
#[derive(Debug)]
pub struct ImageContext {
    /// Plugin-local device id.
    pub id: i32,
    /// The GPU agent.
    pub agent: hsa_agent_t,
    /// The host device (RPC buffers).
    pub host: Arc<HostDevice>,
    /// The device memory manager (RPC device heap).
    pub memory: Arc<PoolManager>,
    /// The device's transfers (device environment, globals, RPC client).
    pub transfers: Arc<Transfers>,
    /// What to write into `__omp_rtl_device_environment`.
    pub environment: DeviceEnvironment,
}

/// The images and kernels of one device.
#[derive(Debug)]
pub struct ImageTable {
    hsa: Hsa,
    cx: ImageContext,
    images: Mutex<Vec<LoadedImage>>,
    /// The kernels by handle (their address). Keyed with FxHash, a fast
    /// non-cryptographic hash (SipHash dominated the launch path): the keys
    /// are our own kernels' addresses, not attacker-chosen.
    kernels: RwLock<AddrMap<usize, Arc<Kernel>>>,
}

impl ImageTable {
    /// An empty table loading through `hsa` with `cx`.
    pub fn new(hsa: &Hsa, cx: ImageContext) -> ImageTable {
        ImageTable {
            hsa: hsa.clone(),
            cx,
            images: Mutex::new(Vec::new()),
            kernels: RwLock::new(AddrMap::default()),
        }
    }

    /// Number of images loaded.
    pub fn count(&self) -> usize {
        self.images.lock().len()
    }

    /// Runs `f` on the kernel behind a target-table handle (under the
    /// kernel map's read lock, no reference count taken: the launch path).
    ///
    /// Errors: not a kernel handle of this device.
    #[inline]
    pub fn with_kernel<R>(&self, handle: usize, f: impl FnOnce(&Kernel) -> R) -> Result<R> {
        // A `match`, not `ok_or`: the error is built only on failure.
        match self.kernels.read().get(&handle) {
            Some(k) => Ok(f(k)),
            None => Err(Error::UnknownHandle {
                what: "kernel handle",
                addr: handle,
            }),
        }
    }

    /// `load_binary` (`GenericDeviceTy::loadBinary` in LLVM 16's
    /// `PluginInterface.cpp`): loads `bytes` through HSA, writes the device
    /// environment, resolves every entry and returns the target table.
    ///
    /// Errors: not an AMDGPU ELF; HSA load failure; a kernel or global
    /// missing or of the wrong type or size; a bad exec-mode byte.
    pub fn load(
        &self,
        bytes: &[u8],
        entries: &[EntryDesc],
        requires_usm: bool,
    ) -> Result<*mut TargetTable> {
        check_kind(bytes)?;
        let hsa = &self.hsa;
        let code_object = hsa.code_object_deserialize(bytes)?;
        let executable = match hsa.executable_create() {
            Ok(e) => e,
            Err(e) => {
                self.destroy(None, code_object);
                return Err(e.into());
            }
        };
        let loaded = self.load_entries(executable, code_object, bytes, entries, requires_usm);
        let (table_entries, rpc) = match loaded {
            Ok(l) => l,
            Err(e) => {
                self.destroy(Some(executable), code_object);
                return Err(e);
            }
        };
        if table_entries.is_empty() {
            if let Some(r) = rpc.and_then(|r| Arc::try_unwrap(r).ok()) {
                r.shutdown();
            }
            self.destroy(Some(executable), code_object);
            return Err(Error::InvalidArgument(
                "the image has no offload entries".into(),
            ));
        }
        let mut entries_box: Box<[OffloadEntry]> = table_entries.into_boxed_slice();
        let range = entries_box.as_mut_ptr_range();
        let mut table = Box::new(TargetTable {
            entries_begin: range.start,
            entries_end: range.end,
        });
        let table_ptr: *mut TargetTable = &mut *table;
        self.images.lock().push(LoadedImage {
            executable,
            code_object,
            tables: TableStorage {
                _entries: entries_box,
                _table: table,
            },
            rpc,
        });
        Ok(table_ptr)
    }

    /// Loads, freezes and validates the executable, writes the device
    /// environment, sets up RPC and resolves every entry.
    fn load_entries(
        &self,
        executable: hsa_executable_t,
        code_object: hsa_code_object_t,
        bytes: &[u8],
        entries: &[EntryDesc],
        requires_usm: bool,
    ) -> Result<(Vec<OffloadEntry>, Option<Arc<ImageRpc>>)> {
        let hsa = &self.hsa;
        let cx = &self.cx;
        hsa.executable_load_code_object(executable, cx.agent, code_object)?;
        hsa.executable_freeze(executable)?;
        let valid = hsa.executable_validate(executable)?;
        if valid != 0 {
            return Err(Error::InvalidExecutable(valid));
        }
        self.write_device_environment(executable)?;
        let rpc = rpc_host::setup(
            cx.id,
            cx.agent,
            hsa,
            &cx.host,
            &cx.memory,
            &cx.transfers,
            executable,
        )?
        .map(Arc::new);
        // The note gives only each kernel's workgroup limit (the rest
        // comes from the kernel symbols), so a missing or malformed one is
        // reported and the kernels launch with the agent's limit.
        let metadata = image::kernel_metadata(bytes).unwrap_or_else(|e| {
            log::warn!(
                "device {}: image metadata unusable ({e}); kernels launch without it",
                cx.id
            );
            Vec::new()
        });
        let mut table = Vec::with_capacity(entries.len());
        for e in entries {
            let resolved = if e.raw.size == 0 {
                self.resolve_kernel(executable, bytes, &metadata, e, rpc.as_ref())
            } else {
                self.resolve_global(executable, e, requires_usm)
            };
            table.push(resolved?);
        }
        Ok((table, rpc))
    }

    /// Destroys a (partly) loaded image's executable and code object;
    /// failures are logged.
    fn destroy(&self, executable: Option<hsa_executable_t>, code_object: hsa_code_object_t) {
        if let Some(exe) = executable {
            if let Err(e) = self.hsa.executable_destroy(exe) {
                log::debug!("device {}: destroying an executable: {e}", self.cx.id);
            }
        }
        if let Err(e) = self.hsa.code_object_destroy(code_object) {
            log::debug!("device {}: destroying a code object: {e}", self.cx.id);
        }
    }

    /// Writes the 16-byte device environment into
    /// `__omp_rtl_device_environment` (`DeviceEnvironmentTy` of LLVM 16's
    /// `openmp/libomptarget/include/DeviceEnvironment.h`); absent or mis-sized
    /// symbol: nothing to do, as LLVM.
    fn write_device_environment(&self, exe: hsa_executable_t) -> Result<()> {
        let Ok(name) = CString::new(abi::DEVICE_ENVIRONMENT_SYMBOL) else {
            return Ok(());
        };
        let Ok(sym) = self.hsa.executable_symbol(exe, &name, self.cx.agent) else {
            log::debug!("image has no {}", abi::DEVICE_ENVIRONMENT_SYMBOL);
            return Ok(());
        };
        let var = self.hsa.symbol_variable(sym)?;
        let size = var.len();
        if size != 16 {
            log::debug!(
                "{} has size {size}, not 16: not written",
                abi::DEVICE_ENVIRONMENT_SYMBOL
            );
            return Ok(());
        }
        let env = self.cx.environment;
        log::debug!(
            "device {}: device environment {env:?} -> {:#x}",
            self.cx.id,
            var.addr()
        );
        self.cx.transfers.write_sync(var, &env.to_bytes())
    }

    /// The target-table entry of kernel entry `e`: a new [`Kernel`], whose
    /// address is its handle.
    fn resolve_kernel(
        &self,
        exe: hsa_executable_t,
        bytes: &[u8],
        metadata: &[image::KernelInfo],
        e: &EntryDesc,
        rpc: Option<&Arc<ImageRpc>>,
    ) -> Result<OffloadEntry> {
        check_entry_addr(e)?;
        let sym_name = CString::new(format!("{}.kd", e.name))
            .map_err(|_| Error::InvalidArgument(format!("bad kernel name {:?}", e.name)))?;
        let sym = self
            .hsa
            .executable_symbol(exe, &sym_name, self.cx.agent)
            .map_err(|err| Error::MissingSymbol {
                what: "kernel",
                name: format!("{}.kd", e.name),
                source: err,
            })?;
        let kernel = Arc::new(Kernel::init(&self.hsa, sym, &e.name, bytes, metadata, rpc)?);
        log::debug!("device {}: kernel {kernel:?}", self.cx.id);
        let key = Arc::as_ptr(&kernel) as usize;
        self.kernels.write().insert(key, kernel);
        Ok(OffloadEntry {
            addr: key as *mut c_void,
            ..e.raw
        })
    }

    /// The target-table entry of global entry `e`: its device address,
    /// after copying the host global there under unified shared memory.
    fn resolve_global(
        &self,
        exe: hsa_executable_t,
        e: &EntryDesc,
        requires_usm: bool,
    ) -> Result<OffloadEntry> {
        check_entry_addr(e)?;
        let hsa = &self.hsa;
        let sym_name = CString::new(e.name.as_str())
            .map_err(|_| Error::InvalidArgument(format!("bad global name {:?}", e.name)))?;
        let sym = hsa
            .executable_symbol(exe, &sym_name, self.cx.agent)
            .map_err(|err| Error::MissingSymbol {
                what: "global",
                name: e.name.clone(),
                source: err,
            })?;
        let var = hsa.symbol_variable(sym)?;
        let (addr, size) = (var.addr(), var.len() as u32);
        if size as usize != e.raw.size {
            return Err(Error::GlobalSizeMismatch {
                name: e.name.clone(),
                device: size,
                host: e.raw.size,
            });
        }
        if requires_usm {
            if let Some(host) = e.host {
                self.cx.transfers.copy_sync(
                    Endpoint::Device(var),
                    Endpoint::Host(host),
                    host.len(),
                )?;
            }
        }
        log::debug!(
            "device {}: global {} -> {addr:#x} ({size} bytes)",
            self.cx.id,
            e.name
        );
        Ok(OffloadEntry {
            addr: addr as *mut c_void,
            ..e.raw
        })
    }

    /// Drops every kernel, stops each image's RPC server and destroys its
    /// executable (process teardown).
    pub fn teardown(&self) {
        self.kernels.write().clear();
        for img in self.images.lock().drain(..) {
            // Kernels are gone, so this is the last reference: the thread
            // stops before the executable and the buffer go.
            if let Some(r) = img.rpc.and_then(|r| Arc::try_unwrap(r).ok()) {
                r.shutdown();
            }
            self.destroy(Some(img.executable), img.code_object);
            drop(img.tables);
        }
    }
}

/// Refuses what cannot be loaded as it is: AMDGPU bitcode (which
/// `load_binary` compiles first, [`crate::jit`]) and anything that is not an
/// AMDGPU ELF.
///
/// Errors: [`Error::InvalidArgument`], or the ELF check's error.
fn check_kind(bytes: &[u8]) -> Result<()> {
    match image::classify(bytes) {
        ImageKind::AmdgpuElf => Ok(()),
        ImageKind::AmdgcnBitcode => Err(Error::InvalidArgument(
            "the image is AMDGPU LLVM bitcode, to be compiled (crate::jit) before it is loaded"
                .into(),
        )),
        ImageKind::Other => {
            image::check_amdgpu_elf(bytes)?;
            Err(Error::InvalidArgument(
                "the image is not an AMDGPU ELF code object".into(),
            ))
        }
    }
}

/// Refuses an offload entry with a NULL address.
fn check_entry_addr(e: &EntryDesc) -> Result<()> {
    if e.raw.addr.is_null() {
        return Err(Error::InvalidArgument(format!(
            "offload entry {} has a NULL address",
            e.name
        )));
    }
    Ok(())
}
