//! The `__tgt_rtl_*` entry points libomptarget 16 looks up (the
//! `RTLInfoTy` function pointers of LLVM 16's
//! `openmp/libomptarget/include/rtl.h`), with
//! LLVM 16's C signatures.
//!
//! Export: the functions below have ordinary (mangled) Rust symbols; the C
//! names are assembler aliases made by `export_c_names!`. That keeps the
//! C names out of the version script rustc writes for a cdylib, so
//! `exports.map` puts every one of them under the `VERS1.0` version node
//! (as LLVM's plugins export them); with `#[no_mangle]` rustc's own script
//! would list them first and they would come out unversioned.
//!
//! Every entry is thin: it checks its pointers first, then calls into the
//! layers below through `entry`, which turns a `Result` into the ABI's
//! return value, logs the error together with the operation that failed, and
//! catches any panic so none crosses the C ABI (rustls-ffi's habit). No entry
//! calls another exported symbol: shared logic lives in plain Rust
//! functions, so a lookup through the global symbol scope (where another
//! plugin's `__tgt_rtl_*` may sit: libomptarget opens every plugin as a
//! permanent, globally visible library in `RTLsTy::loadRTLs`,
//! `openmp/libomptarget/src/rtl.cpp`) can never be involved.

use crate::abi::{
    AsyncInfo, BinDesc, DeviceImage, DeviceInfo, ImageInfo, KernelArgs, OffloadEntry, TargetTable,
    OFFLOAD_FAIL, OFFLOAD_SUCCESS, OMP_INFOTYPE_PLUGIN_KERNEL, OMP_REQ_UNIFIED_SHARED_MEMORY,
};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::image::{self, ImageKind, TargetId};
use crate::images::EntryDesc;
use crate::plugin::Plugin;
use crate::transfer::Endpoint;
use hsa::{DeviceRange, HostSpan};
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

/// Runs `f` at the C boundary: `Ok(v)` → `v`; an error or a panic → `fail`,
/// after logging it with `op`.
fn entry<T>(op: &str, fail: T, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            log::error!("{op} failed: {e}");
            fail
        }
        Err(_) => {
            log::error!("{op} failed: internal error (panic caught at the C boundary)");
            fail
        }
    }
}

/// `Ok(())` → `OFFLOAD_SUCCESS`, for [`entry`].
fn status(op: &str, f: impl FnOnce() -> Result<()>) -> i32 {
    entry(op, OFFLOAD_FAIL, || f().map(|()| OFFLOAD_SUCCESS))
}

/// Fails with a clear message when `p` is NULL.
fn non_null<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        Err(Error::InvalidArgument(format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// The plugin, created on first use if `init_plugin` was not called.
fn plugin() -> Result<&'static Plugin> {
    if let Some(p) = Plugin::current() {
        return Ok(p);
    }
    create_plugin();
    Plugin::current().ok_or(Error::NoRuntime)
}

/// The process-exit teardown ([`crate::plugin::teardown_at_exit`]) as the C
/// function `atexit` takes.
extern "C" fn teardown_at_exit() {
    crate::plugin::teardown_at_exit();
}

/// Creates the plugin once ([`Plugin::create`]) and, right after the
/// creation and under its lock, registers the teardown at process exit.
fn create_plugin() {
    Plugin::create(|| {
        // SAFETY: `teardown_at_exit` is a plain `extern "C" fn()` of this
        // library, which is never unmapped (linked with `-z nodelete`).
        if unsafe { libc::atexit(teardown_at_exit) } != 0 {
            log::debug!("atexit refused: no teardown at exit");
        }
    });
}

/// A byte count from the ABI's `int64_t`.
fn byte_count(size: i64) -> Result<usize> {
    usize::try_from(size).map_err(|_| Error::InvalidArgument(format!("negative size {size}")))
}

/// The span of the caller's host buffer `[ptr, ptr + size)`: the one place
/// a transfer's host pointer becomes a [`HostSpan`], which then travels
/// safely down to the copy that uses it.
///
/// # Safety
/// As `HostSpan::new`: `[ptr, ptr + size)` is host memory of this process,
/// readable (and writable when the span is a copy's destination), left
/// alone by the program until the transfer's async info is synchronized
/// (libomptarget's contract for the buffers of `data_submit*`,
/// `data_retrieve*`, `data_lock` and its host globals).
unsafe fn host_span(ptr: *mut c_void, size: usize) -> Result<HostSpan> {
    // SAFETY: forwarded from the caller's contract.
    unsafe { HostSpan::new(ptr as *mut u8, size) }
        .ok_or_else(|| Error::InvalidArgument("host pointer is NULL".into()))
}

/// The range of libomptarget's device pointer `[ptr, ptr + size)`: the one
/// place a device pointer becomes a [`DeviceRange`], which then travels
/// safely down to the DMA copy that uses it.
///
/// # Safety
/// As `DeviceRange::new`: `[ptr, ptr + size)` lies inside one allocation
/// of this plugin's devices (libomptarget's contract: a device pointer it
/// passes with a size belongs to an allocation of the device, from
/// `data_alloc` or a global of a loaded image, at least `size` bytes from
/// `ptr` on), which libomptarget keeps, and no host code writes, until the
/// transfer's async info is synchronized.
unsafe fn device_range(ptr: *mut c_void, size: usize) -> Result<DeviceRange> {
    // SAFETY: forwarded from the caller's contract.
    unsafe { DeviceRange::new(ptr as u64, size) }
        .ok_or_else(|| Error::InvalidArgument(format!("device range {ptr:p}+{size}")))
}

/// The bytes of a device image. For an ELF image, `image_end` is not
/// trusted: the image's extent comes from its own headers
/// ([`image::elf_extent`]), nothing past it is read, and an image whose
/// headers reach past `image_end` is refused.
///
/// # Safety
/// `img` must point to a `__tgt_device_image`; for an ELF image, its first
/// 64 bytes and every byte its headers place before `image_end` must be
/// readable; for anything else, the whole range.
unsafe fn image_bytes<'a>(img: *const DeviceImage) -> Result<&'a [u8]> {
    non_null(img, "device image")?;
    // SAFETY: checked non-NULL; libomptarget passes a live image.
    let img = unsafe { &*img };
    let start = img.image_start as *const u8;
    let end = img.image_end as *const u8;
    if start.is_null() || end.is_null() || (end as usize) < (start as usize) {
        return Err(Error::InvalidArgument(
            "device image with an invalid range".into(),
        ));
    }
    let given = (end as usize - start as usize) as u64;
    let read = |offset: u64, len: u64| -> Option<&'a [u8]> {
        let stop = offset.checked_add(len)?;
        if stop > given {
            return None;
        }
        // SAFETY: `[offset, stop)` lies inside the given range, and is
        // either the ELF header or a table its header places there (see
        // the function's contract).
        Some(unsafe { std::slice::from_raw_parts(start.add(offset as usize), len as usize) })
    };
    let is_elf = read(0, 64).is_some_and(image::is_elf64_le);
    if !is_elf {
        // SAFETY: per the contract, a non-ELF image is readable as given.
        return Ok(unsafe { std::slice::from_raw_parts(start, given as usize) });
    }
    let extent = image::elf_extent(read)?;
    if extent > given {
        return Err(Error::InvalidArgument(format!(
            "the device image's ELF headers describe {extent} bytes, but it is {given} bytes long"
        )));
    }
    read(0, extent).ok_or_else(|| Error::InvalidArgument("device image range".into()))
}

/// `is_valid_binary(_info)`: an AMDGPU ELF that every GPU agent can run
/// (`AMDGPUPluginTy::isImageCompatible` in LLVM 16's
/// `plugins-nextgen/amdgpu/src/rtl.cpp`, with `isImageCompatibleWithEnv` of
/// `plugins-nextgen/amdgpu/utils/UtilitiesRTL.h`). The image's target ID is
/// `arch` when libomptarget gives one
/// (compared as LLVM does, exact string first), else the one its ELF header
/// declares.
///
/// Bitcode for `amdgcn` is valid as in LLVM's `__tgt_rtl_is_valid_binary`
/// (`JITEngine::checkBitcodeImage`): it is compiled for each agent at load,
/// so only `arch`, when given, is compared with the agents.
fn check_image(bytes: &[u8], arch: Option<&str>) -> Result<bool> {
    let kind = image::classify(bytes);
    if kind == ImageKind::Other {
        return Ok(false);
    }
    let p = plugin()?;
    let Some(rt) = p.runtime.as_ref() else {
        return Ok(false);
    };
    if kind == ImageKind::AmdgcnBitcode {
        let fits = |agent: &String| match arch {
            Some(a) => !agent.is_empty() && image::target_ids_compatible(a, agent),
            None => true,
        };
        return Ok(!rt.target_ids.is_empty() && rt.target_ids.iter().all(fits));
    }
    let elf_id = image::elf_target_id(bytes).ok();
    let fits = |agent: &String| -> bool {
        if agent.is_empty() {
            return false;
        }
        let by_arch = match arch {
            Some(a) => image::target_ids_compatible(a, agent),
            None => true,
        };
        let by_elf = match (&elf_id, TargetId::parse(agent)) {
            (Some(img), Some(agent)) => img.is_compatible(&agent),
            _ => false,
        };
        by_arch && by_elf
    };
    let ok = !rt.target_ids.is_empty() && rt.target_ids.iter().all(fits);
    if !ok {
        log::debug!(
            "image (arch {arch:?}, ELF target {elf_id:?}) rejected: agents are {:?}",
            rt.target_ids
        );
        if let Some(img) = &elf_id {
            if let Some(msg) = xnack_refusal(img, &rt.target_ids) {
                log::error!("{msg}");
            }
        }
    }
    Ok(ok)
}

/// The message for an image refused only because its XNACK setting differs
/// from an agent's (the same processor otherwise), or `None` when that is not
/// why: an image built for another GPU is refused without a word, since a
/// fat binary carries images for GPUs the machine does not have.
fn xnack_refusal(img: &TargetId, agents: &[String]) -> Option<String> {
    let want = img.xnack?;
    let agent = agents
        .iter()
        .filter_map(|a| TargetId::parse(a))
        .find(|a| a.processor == img.processor && a.xnack != Some(want))?;
    let hint = if want {
        "set HSA_XNACK=1 to run it, or build without :xnack+"
    } else {
        "unset HSA_XNACK (or set it to 0) to run it, or build without :xnack-"
    };
    Some(format!(
        "device image for {img} not loaded: the agent is {agent}, with XNACK {}; {hint}",
        if want { "off" } else { "on" }
    ))
}

// ---------------------------------------------------------------- plugin

/// Creates the plugin: opens HSA, finds the agents (as `__tgt_rtl_init_plugin`
/// in LLVM 16's `PluginInterface.cpp` and `AMDGPUPluginTy::initImpl`). Always
/// returns 0; without HSA or GPU the plugin has zero devices.
pub extern "C" fn __tgt_rtl_init_plugin() -> i32 {
    entry("init_plugin", 0, || {
        create_plugin();
        let p = plugin()?;
        if crate::env::bool_or(crate::env::ANNOUNCE, false) {
            eprintln!(
                "omptarget-amdgpu: Rust AMDGPU plugin initialised with {} device(s)",
                p.device_count()
            );
        }
        Ok(0)
    })
}

/// Does nothing and succeeds: libomptarget calls it once per unregistered
/// library while others may still run; the teardown happens at exit.
pub extern "C" fn __tgt_rtl_deinit_plugin() -> i32 {
    OFFLOAD_SUCCESS
}

/// Number of GPU agents with kernel dispatch; 0 without HSA.
pub extern "C" fn __tgt_rtl_number_of_devices() -> i32 {
    entry("number_of_devices", 0, || {
        Ok(i32::try_from(plugin()?.device_count()).unwrap_or(i32::MAX))
    })
}

/// 1 when the image is an AMDGPU ELF every agent can run, else 0.
///
/// # Safety
/// `image` must be NULL or point to a valid `__tgt_device_image`.
pub unsafe extern "C" fn __tgt_rtl_is_valid_binary(image: *mut DeviceImage) -> i32 {
    entry("is_valid_binary", 0, || {
        // SAFETY: per this function's contract.
        let bytes = unsafe { image_bytes(image)? };
        Ok(i32::from(check_image(bytes, None)?))
    })
}

/// As [`__tgt_rtl_is_valid_binary`], with the target ID from `info.arch`
/// when given.
///
/// # Safety
/// `image` as above; `info` NULL or a valid `__tgt_image_info` whose `arch`
/// is NULL or a C string.
pub unsafe extern "C" fn __tgt_rtl_is_valid_binary_info(
    image: *mut DeviceImage,
    info: *mut ImageInfo,
) -> i32 {
    entry("is_valid_binary_info", 0, || {
        // SAFETY: per this function's contract.
        let bytes = unsafe { image_bytes(image)? };
        let arch = if info.is_null() {
            None
        } else {
            // SAFETY: checked non-NULL.
            let a = unsafe { (*info).arch };
            if a.is_null() {
                None
            } else {
                // SAFETY: libomptarget passes a NUL-terminated string.
                Some(unsafe { CStr::from_ptr(a) }.to_string_lossy().into_owned())
            }
        };
        Ok(i32::from(check_image(bytes, arch.as_deref())?))
    })
}

/// 1: this plugin copies between any two of its devices.
pub extern "C" fn __tgt_rtl_is_data_exchangable(src_id: i32, dst_id: i32) -> i32 {
    entry("is_data_exchangable", 0, || {
        let p = plugin()?;
        let n = p.device_count() as i64;
        let ok = (0..n).contains(&i64::from(src_id)) && (0..n).contains(&i64::from(dst_id));
        Ok(i32::from(ok))
    })
}

/// 0: images without entries are not loaded.
pub extern "C" fn __tgt_rtl_supports_empty_images() -> i32 {
    0
}

/// Stores the `requires` flags and echoes them.
pub extern "C" fn __tgt_rtl_init_requires(flags: i64) -> i64 {
    entry("init_requires", flags, || {
        plugin()?.requires.store(flags, Ordering::Relaxed);
        Ok(flags)
    })
}

/// Replaces the plugin's info mask (`LIBOMPTARGET_INFO`).
pub extern "C" fn __tgt_rtl_set_info_flag(flags: u32) {
    entry("set_info_flag", (), || {
        plugin()?.info_flags.store(flags, Ordering::Relaxed);
        Ok(())
    })
}

/// No-op (the whole binary description is not needed).
///
/// # Safety
/// Any pointer is accepted; it is not read.
pub unsafe extern "C" fn __tgt_rtl_register_lib(_desc: *mut BinDesc) -> i32 {
    OFFLOAD_SUCCESS
}

/// No-op.
///
/// # Safety
/// Any pointer is accepted; it is not read.
pub unsafe extern "C" fn __tgt_rtl_unregister_lib(_desc: *mut BinDesc) -> i32 {
    OFFLOAD_SUCCESS
}

// ---------------------------------------------------------------- devices

/// Initialises device `id` (`__tgt_rtl_init_device` in LLVM 16's
/// `PluginInterface.cpp`). A program that requires unified
/// shared memory is refused here when the device's agent has XNACK off
/// ([`Plugin::check_requires`]; libomptarget 16 calls `init_requires`
/// before every `init_device`).
pub extern "C" fn __tgt_rtl_init_device(id: i32) -> i32 {
    status("init_device", || {
        let p = plugin()?;
        p.check_requires(id)?;
        p.rt()?.init_device(id)
    })
}

/// Releases device `id`'s resources (never called by libomptarget 16).
pub extern "C" fn __tgt_rtl_deinit_device(id: i32) -> i32 {
    status("deinit_device", || plugin()?.rt()?.deinit_device(id))
}

/// Loads an image on device `id` and returns its target table, or NULL.
///
/// # Safety
/// `image` must point to a valid `__tgt_device_image` whose entries are
/// valid `__tgt_offload_entry`s with C-string names.
pub unsafe extern "C" fn __tgt_rtl_load_binary(
    id: i32,
    image: *mut DeviceImage,
) -> *mut TargetTable {
    entry("load_binary", std::ptr::null_mut(), || {
        // SAFETY: per this function's contract.
        let bytes = unsafe { image_bytes(image)? };
        // SAFETY: `image` checked non-NULL by `image_bytes`.
        let img = unsafe { &*image };
        // SAFETY: per this function's contract.
        let entries = unsafe { read_entries(img.entries_begin, img.entries_end)? };
        let p = plugin()?;
        p.check_requires(id)?;
        let rt = p.rt()?;
        let dev = rt.device(id)?;
        let usm = p.requires.load(Ordering::Relaxed) & OMP_REQ_UNIFIED_SHARED_MEMORY != 0;
        // A bitcode image is compiled for this device's agent first
        // (`JITEngine::process` in LLVM 16's `GenericDeviceTy::loadBinary`).
        let jitted = if crate::jit::has_bitcode_magic(bytes) {
            let info = p.info_flags.load(Ordering::Relaxed) & OMP_INFOTYPE_PLUGIN_KERNEL != 0;
            Some(crate::jit::process(bytes, id, rt.target_id(id)?, info)?)
        } else {
            None
        };
        let table = dev
            .images()
            .load(jitted.as_deref().unwrap_or(bytes), &entries, usm)?;
        if let Some(rr) = dev.record_replay() {
            let kernels = entries.iter().filter(|e| e.raw.size == 0);
            rr.note_image(bytes, kernels.map(|e| e.name.as_str()));
        }
        Ok(table)
    })
}

/// Copies the host entry table into owned descriptions.
///
/// # Safety
/// `[begin, end)` must be an array of valid entries with C-string names.
unsafe fn read_entries(begin: *mut OffloadEntry, end: *mut OffloadEntry) -> Result<Vec<EntryDesc>> {
    if begin.is_null() || end.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: both point into the same array (the image's entry table).
    let count = unsafe { end.offset_from(begin) };
    let count = usize::try_from(count)
        .map_err(|_| Error::InvalidArgument("entry table ends before it begins".into()))?;
    // SAFETY: per the contract, `count` entries are readable from `begin`.
    let raw = unsafe { std::slice::from_raw_parts(begin, count) };
    raw.iter()
        .map(|e| {
            non_null(e.name, "offload entry name")?;
            // SAFETY: checked non-NULL; entry names are C strings.
            let name = unsafe { CStr::from_ptr(e.name) }
                .to_string_lossy()
                .into_owned();
            // A global's host bytes, lent by the program for its lifetime.
            let host = if e.size > 0 && !e.addr.is_null() {
                // SAFETY: per the contract, a global entry's `addr` is the
                // host global of `size` bytes, alive as long as the program.
                Some(unsafe { host_span(e.addr, e.size)? })
            } else {
                None
            };
            Ok(EntryDesc {
                raw: *e,
                name,
                host,
            })
        })
        .collect()
}

/// Prints the properties of device `id`'s agent to stdout; works whether or
/// not the device was initialised.
pub extern "C" fn __tgt_rtl_print_device_info(id: i32) {
    entry("print_device_info", (), || {
        let p = plugin()?;
        let rt = p.rt()?;
        let text = crate::info::describe_agent(rt, id)?;
        c_print(&text);
        Ok(())
    })
}

/// Writes `text` through C's `stdout`, so it interleaves correctly with the
/// calling program's own `printf` output.
fn c_print(text: &str) {
    let Ok(c) = CString::new(text.replace('\0', " ")) else {
        return;
    };
    // SAFETY: "%s" with one valid C string argument.
    unsafe {
        libc::printf(c"%s".as_ptr(), c.as_ptr());
        libc::fflush(std::ptr::null_mut());
    }
}

/// Stores in `*device_info` the device's agent (interop; `id` is the global
/// device number: `__tgt_interop_init` in LLVM 16's
/// `openmp/libomptarget/src/interop.cpp` passes it, not the plugin-local one)
/// and `""` in `*err`.
///
/// # Safety
/// `device_info` must be NULL or valid; `err` NULL or a writable pointer.
pub unsafe extern "C" fn __tgt_rtl_init_device_info(
    id: i32,
    device_info: *mut DeviceInfo,
    err: *mut *const c_char,
) -> i32 {
    if !err.is_null() {
        // SAFETY: checked non-NULL; a static empty string.
        unsafe { *err = c"".as_ptr() };
    }
    status("init_device_info", || {
        non_null(device_info, "device info")?;
        let p = plugin()?;
        let agent = p.rt()?.agent(id)?;
        // SAFETY: checked non-NULL; libomptarget's interop object.
        let info = unsafe { &mut *device_info };
        info.context = std::ptr::null_mut();
        if info.device.is_null() {
            info.device = agent.handle as *mut c_void;
        }
        Ok(())
    })
}

// ---------------------------------------------------------------- memory

/// Allocates `size` bytes of kind `kind` on device `id`; NULL on failure.
pub extern "C" fn __tgt_rtl_data_alloc(
    id: i32,
    size: i64,
    _host: *mut c_void,
    kind: i32,
) -> *mut c_void {
    entry("data_alloc", std::ptr::null_mut(), || {
        let dev = plugin()?.rt()?.device(id)?;
        // Recording or replaying, every kind comes from the reserved block
        // (LLVM 16's `GenericDeviceTy::dataAlloc`).
        let addr = match dev.record_replay() {
            Some(rr) => rr.alloc(size)?,
            None => dev.memory().alloc(size, kind)?,
        };
        Ok(addr as *mut c_void)
    })
}

/// Frees an allocation of [`__tgt_rtl_data_alloc`]; NULL succeeds.
pub extern "C" fn __tgt_rtl_data_delete(id: i32, ptr: *mut c_void, kind: i32) -> i32 {
    status("data_delete", || {
        if ptr.is_null() {
            return Ok(());
        }
        let dev = plugin()?.rt()?.device(id)?;
        // Recording or replaying, nothing is freed (`dataDelete`).
        if dev.record_replay().is_some() {
            return Ok(());
        }
        dev.memory().free(ptr as u64, kind)
    })
}

/// Which way a host transfer goes.
#[derive(Clone, Copy)]
enum Direction {
    /// `data_submit*`: host → device.
    ToDevice,
    /// `data_retrieve*`: device → host.
    ToHost,
}

/// Shared body of the submit and retrieve entries: the caller's host
/// buffer becomes a [`HostSpan`] here, once.
///
/// # Safety
/// `hst` readable (submit) or writable (retrieve) for `size` bytes until
/// `info` is synchronized (at once without `info`).
unsafe fn host_transfer(
    id: i32,
    direction: Direction,
    tgt: *mut c_void,
    hst: *mut c_void,
    size: i64,
    info: Option<&mut AsyncInfo>,
) -> Result<()> {
    non_null(tgt, "device pointer")?;
    let size = byte_count(size)?;
    // SAFETY: forwarded from the caller's contract.
    let host = Endpoint::Host(unsafe { host_span(hst, size)? });
    // SAFETY: forwarded from the caller's contract.
    let device = Endpoint::Device(unsafe { device_range(tgt, size)? });
    let (dst, src) = match direction {
        Direction::ToDevice => (device, host),
        Direction::ToHost => (host, device),
    };
    let dev = plugin()?.rt()?.device(id)?;
    copy(&dev, dst, src, size, info)
}

/// Copies on `dev`'s stream of `info`, or synchronously without one.
fn copy(
    dev: &Device,
    dst: Endpoint,
    src: Endpoint,
    size: usize,
    info: Option<&mut AsyncInfo>,
) -> Result<()> {
    match info {
        Some(info) => dev.transfers().copy(dst, src, size, info),
        None => dev.transfers().copy_sync(dst, src, size),
    }
}

/// Borrows the async info, failing on NULL.
///
/// # Safety
/// `info` NULL or a valid, exclusively used `__tgt_async_info`.
unsafe fn async_info<'a>(info: *mut AsyncInfo) -> Result<&'a mut AsyncInfo> {
    non_null(info, "async info")?;
    // SAFETY: checked non-NULL; libomptarget drives one async info from one
    // thread at a time.
    Ok(unsafe { &mut *info })
}

/// Synchronous host → device copy.
///
/// # Safety
/// `hst` readable and `tgt` a device range, both of `size` bytes.
pub unsafe extern "C" fn __tgt_rtl_data_submit(
    id: i32,
    tgt: *mut c_void,
    hst: *mut c_void,
    size: i64,
) -> i32 {
    // SAFETY: per this function's contract.
    status("data_submit", || unsafe {
        host_transfer(id, Direction::ToDevice, tgt, hst, size, None)
    })
}

/// Host → device copy on the stream of `info`.
///
/// # Safety
/// As [`__tgt_rtl_data_submit`], with `hst` valid until `info` is
/// synchronized; `info` valid.
pub unsafe extern "C" fn __tgt_rtl_data_submit_async(
    id: i32,
    tgt: *mut c_void,
    hst: *mut c_void,
    size: i64,
    info: *mut AsyncInfo,
) -> i32 {
    status("data_submit_async", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info)? };
        // SAFETY: per this function's contract.
        unsafe { host_transfer(id, Direction::ToDevice, tgt, hst, size, Some(info)) }
    })
}

/// Synchronous device → host copy.
///
/// # Safety
/// `hst` writable and `tgt` a device range, both of `size` bytes.
pub unsafe extern "C" fn __tgt_rtl_data_retrieve(
    id: i32,
    hst: *mut c_void,
    tgt: *mut c_void,
    size: i64,
) -> i32 {
    // SAFETY: per this function's contract.
    status("data_retrieve", || unsafe {
        host_transfer(id, Direction::ToHost, tgt, hst, size, None)
    })
}

/// Device → host copy on the stream of `info`.
///
/// # Safety
/// As [`__tgt_rtl_data_retrieve`], with `hst` valid until `info` is
/// synchronized; `info` valid.
pub unsafe extern "C" fn __tgt_rtl_data_retrieve_async(
    id: i32,
    hst: *mut c_void,
    tgt: *mut c_void,
    size: i64,
    info: *mut AsyncInfo,
) -> i32 {
    status("data_retrieve_async", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info)? };
        // SAFETY: per this function's contract.
        unsafe { host_transfer(id, Direction::ToHost, tgt, hst, size, Some(info)) }
    })
}

/// Shared body of the exchange entries: a DMA copy issued by the source
/// device.
///
/// # Safety
/// Both pointers device ranges of `size` bytes.
unsafe fn exchange(
    src_id: i32,
    src: *mut c_void,
    dst_id: i32,
    dst: *mut c_void,
    size: i64,
    info: Option<&mut AsyncInfo>,
) -> Result<()> {
    non_null(src, "source device pointer")?;
    non_null(dst, "destination device pointer")?;
    let size = byte_count(size)?;
    let p = plugin()?;
    let rt = p.rt()?;
    let src_dev = rt.device(src_id)?;
    rt.device(dst_id)?;
    // SAFETY: forwarded from the caller's contract (both device ranges).
    let (dst, src) = unsafe { (device_range(dst, size)?, device_range(src, size)?) };
    let (dst, src) = (Endpoint::Device(dst), Endpoint::Device(src));
    copy(&src_dev, dst, src, size, info)
}

/// Synchronous device → device copy between two devices of this plugin.
///
/// # Safety
/// Both pointers device ranges of `size` bytes.
pub unsafe extern "C" fn __tgt_rtl_data_exchange(
    src_id: i32,
    src: *mut c_void,
    dst_id: i32,
    dst: *mut c_void,
    size: i64,
) -> i32 {
    // SAFETY: per this function's contract.
    status("data_exchange", || unsafe {
        exchange(src_id, src, dst_id, dst, size, None)
    })
}

/// Device → device copy on the source device's stream of `info`.
///
/// # Safety
/// As [`__tgt_rtl_data_exchange`]; `info` valid.
pub unsafe extern "C" fn __tgt_rtl_data_exchange_async(
    src_id: i32,
    src: *mut c_void,
    dst_id: i32,
    dst: *mut c_void,
    size: i64,
    info: *mut AsyncInfo,
) -> i32 {
    status("data_exchange_async", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info)? };
        // SAFETY: per this function's contract.
        unsafe { exchange(src_id, src, dst_id, dst, size, Some(info)) }
    })
}

/// Pins `[hst, hst + size)` for every device and stores the address devices
/// use in `*locked` (`id` is the global device number and not needed: locks
/// apply to all agents).
///
/// # Safety
/// The range must be host memory that stays mapped until unlocked; `locked`
/// writable.
pub unsafe extern "C" fn __tgt_rtl_data_lock(
    _id: i32,
    hst: *mut c_void,
    size: i64,
    locked: *mut *mut c_void,
) -> i32 {
    status("data_lock", || {
        non_null(locked, "locked pointer output")?;
        let size = byte_count(size)?;
        // SAFETY: per this function's contract: mapped until unlocked.
        let span = unsafe { host_span(hst, size)? };
        let p = plugin()?;
        let rt = p.rt()?;
        let alias = rt.host.pinned.lock(&span)?;
        // SAFETY: checked non-NULL.
        unsafe { *locked = alias.addr() as *mut c_void };
        Ok(())
    })
}

/// Drops one lock reference of the range containing `hst`.
pub extern "C" fn __tgt_rtl_data_unlock(_id: i32, hst: *mut c_void) -> i32 {
    status("data_unlock", || {
        non_null(hst, "host pointer")?;
        plugin()?.rt()?.host.pinned.unlock(hst as usize)
    })
}

// ---------------------------------------------------------------- launch

/// Launches kernel `entry` (a target-table handle) on device `id`.
///
/// # Safety
/// `args` and `offsets` hold `kargs.NumArgs` elements; `kargs` a valid
/// `KernelArgsTy`; `info` NULL or valid.
pub unsafe extern "C" fn __tgt_rtl_launch_kernel(
    id: i32,
    kernel: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    kargs: *mut KernelArgs,
    info: *mut AsyncInfo,
) -> i32 {
    status("launch_kernel", || {
        non_null(kernel, "kernel handle")?;
        non_null(kargs, "kernel arguments")?;
        // SAFETY: checked non-NULL; libomptarget keeps it alive and
        // unchanged for the call; only read.
        let k = unsafe { &*kargs };
        let n = k.num_args as usize;
        if n > 0 {
            non_null(args, "argument array")?;
            non_null(offsets, "argument offset array")?;
        }
        // Read straight into the kernarg block: no buffer per launch.
        let values = (0..n).map(|i| {
            // SAFETY: both arrays hold `n` elements (libomptarget's contract)
            // and `i < n`.
            let (a, o) = unsafe { (*args.add(i), *offsets.add(i)) };
            (a as u64).wrapping_add(o as u64)
        });
        let p = plugin()?;
        let flags = p.info();
        p.rt()?.with_device(id, |dev| {
            dev.images().with_kernel(kernel as usize, |kern| {
                if let Some(rr) = dev.record_replay() {
                    // SAFETY: `args` and `offsets` hold `n` elements each
                    // (checked non-NULL above when `n > 0`).
                    let (args, offsets) = unsafe { launch_arrays(args, offsets, n) };
                    // SAFETY: `info` NULL or valid, per this function's contract.
                    let info = unsafe { info.as_mut() };
                    return launch_recorded(dev, kern, rr, args, offsets, k, info, flags);
                }
                if info.is_null() {
                    dev.streams()
                        .run_sync(|i| kern.launch(&dev.launch_target(), values, k, i, flags))
                } else {
                    // SAFETY: checked non-NULL.
                    let info = unsafe { &mut *info };
                    kern.launch(&dev.launch_target(), values, k, info, flags)
                }
            })?
        })
    })
}

/// The argument and offset arrays of a launch, copied (record/replay only:
/// the launch path reads them in place).
///
/// # Safety
/// When `n > 0`, `args` and `offsets` point to `n` readable elements each.
unsafe fn launch_arrays(
    args: *mut *mut c_void,
    offsets: *mut isize,
    n: usize,
) -> (Vec<u64>, Vec<i64>) {
    if n == 0 {
        return (Vec::new(), Vec::new());
    }
    // SAFETY: per this function's contract.
    let (a, o) = unsafe {
        (
            std::slice::from_raw_parts(args, n),
            std::slice::from_raw_parts(offsets, n),
        )
    };
    (
        a.iter().map(|&p| p as u64).collect(),
        o.iter().map(|&x| x as i64).collect(),
    )
}

/// A launch while recording or replaying (LLVM 16's
/// `GenericDeviceTy::launchKernel`): recording, the launch and the memory
/// before it are saved first; with `LIBOMPTARGET_RR_SAVE_OUTPUT`, the
/// memory after it. Each snapshot first waits for the work queued on
/// `info` (the copies the kernel reads, then the kernel), so the files hold
/// what the kernel read and wrote ([`crate::record`]).
#[allow(clippy::too_many_arguments)]
fn launch_recorded(
    dev: &Device,
    kern: &crate::kernel::Kernel,
    rr: &crate::record::RecordReplay,
    args: Vec<u64>,
    offsets: Vec<i64>,
    k: &KernelArgs,
    info: Option<&mut AsyncInfo>,
    flags: u32,
) -> Result<()> {
    let values: Vec<u64> = args
        .iter()
        .zip(&offsets)
        .map(|(&a, &o)| a.wrapping_add(o as u64))
        .collect();
    let mut info = info;
    let settle = |info: &mut Option<&mut AsyncInfo>| match info {
        Some(i) if !i.queue.is_null() => dev.streams().synchronize(i),
        _ => Ok(()),
    };
    if rr.recording() {
        settle(&mut info)?;
        let launch = crate::record::LaunchRecord::new(&kern.name, args, offsets, k);
        rr.save_inputs(|r, b| dev.transfers().read_sync(r, b), dev.id, launch)?;
    }
    match info.as_deref_mut() {
        Some(i) => kern.launch(&dev.launch_target(), values.into_iter(), k, i, flags)?,
        None => dev
            .streams()
            .run_sync(|i| kern.launch(&dev.launch_target(), values.into_iter(), k, i, flags))?,
    }
    if rr.save_output() {
        settle(&mut info)?;
        rr.save_output_of(|r, b| dev.transfers().read_sync(r, b), &kern.name)?;
    }
    Ok(())
}

/// Waits for everything queued on `info`, then sets `info.Queue = NULL`.
///
/// # Safety
/// `info` NULL or valid.
pub unsafe extern "C" fn __tgt_rtl_synchronize(id: i32, info: *mut AsyncInfo) -> i32 {
    status("synchronize", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info)? };
        plugin()?.rt()?.device(id)?.streams().synchronize(info)
    })
}

/// Non-blocking: releases `info`'s stream (`Queue = NULL`) when its work
/// is done, else leaves it.
///
/// # Safety
/// `info` NULL or valid.
pub unsafe extern "C" fn __tgt_rtl_query_async(id: i32, info: *mut AsyncInfo) -> i32 {
    status("query_async", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info)? };
        plugin()?.rt()?.device(id)?.streams().query(info)
    })
}

/// Synchronizes and forgets `info`'s stream, if any.
///
/// # Safety
/// `info` NULL or valid.
pub unsafe extern "C" fn __tgt_rtl_release_async_info(id: i32, info: *mut AsyncInfo) -> i32 {
    status("release_async_info", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info)? };
        if info.queue.is_null() {
            return Ok(());
        }
        plugin()?.rt()?.device(id)?.streams().synchronize(info)
    })
}

/// Allocates a fresh `__tgt_async_info` (Queue NULL) owned by the caller.
/// The struct is not a plugin handle: the plugin keeps no record of it and
/// never frees it (libomptarget 16's interop objects hold it for their
/// lifetime and never release it, as with LLVM's plugin). Its `Queue` is
/// the plugin's handle: a generation-counted stream handle, checked on
/// every use (see [`handles`]).
///
/// # Safety
/// `out` NULL or writable.
pub unsafe extern "C" fn __tgt_rtl_init_async_info(_id: i32, out: *mut *mut AsyncInfo) -> i32 {
    status("init_async_info", || {
        non_null(out, "async info output")?;
        let info = Box::new(AsyncInfo {
            queue: std::ptr::null_mut(),
        });
        // SAFETY: checked non-NULL; ownership passes to the caller.
        unsafe { *out = Box::into_raw(info) };
        Ok(())
    })
}

// ---------------------------------------------------------------- events

/// Stores a new event handle in `*event`.
///
/// # Safety
/// `event` NULL or writable.
pub unsafe extern "C" fn __tgt_rtl_create_event(id: i32, event: *mut *mut c_void) -> i32 {
    status("create_event", || {
        non_null(event, "event output")?;
        let key = plugin()?.rt()?.device(id)?.events().create();
        // SAFETY: checked non-NULL.
        unsafe { *event = key as *mut c_void };
        Ok(())
    })
}

/// Records the current end of `info`'s stream in `event`.
///
/// # Safety
/// `info` NULL or valid.
pub unsafe extern "C" fn __tgt_rtl_record_event(
    id: i32,
    event: *mut c_void,
    info: *mut AsyncInfo,
) -> i32 {
    status("record_event", || {
        non_null(event, "event")?;
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info)? };
        plugin()?
            .rt()?
            .device(id)?
            .events()
            .record(event as usize, info)
    })
}

/// Makes `info`'s stream wait for `event`.
///
/// # Safety
/// `info` NULL or valid.
pub unsafe extern "C" fn __tgt_rtl_wait_event(
    id: i32,
    event: *mut c_void,
    info: *mut AsyncInfo,
) -> i32 {
    status("wait_event", || {
        non_null(event, "event")?;
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info)? };
        plugin()?
            .rt()?
            .device(id)?
            .events()
            .wait(event as usize, info)
    })
}

/// Blocks until `event`'s recorded point is reached.
pub extern "C" fn __tgt_rtl_sync_event(id: i32, event: *mut c_void) -> i32 {
    status("sync_event", || {
        non_null(event, "event")?;
        plugin()?
            .rt()?
            .device(id)?
            .events()
            .synchronize(event as usize)
    })
}

/// Releases `event`.
pub extern "C" fn __tgt_rtl_destroy_event(id: i32, event: *mut c_void) -> i32 {
    status("destroy_event", || {
        non_null(event, "event")?;
        plugin()?.rt()?.device(id)?.events().destroy(event as usize)
    })
}

/// Defines, for each named function of this module, a global function
/// symbol with the same (unmangled) name aliasing it: the C entry point.
macro_rules! export_c_names {
    ($($name:ident),* $(,)?) => {
        $(
            core::arch::global_asm!(
                concat!(".globl ", stringify!($name)),
                concat!(".type ", stringify!($name), ", @function"),
                concat!(".set ", stringify!($name), ", {f}"),
                f = sym $name,
            );
        )*
    };
}

export_c_names!(
    __tgt_rtl_init_plugin,
    __tgt_rtl_deinit_plugin,
    __tgt_rtl_number_of_devices,
    __tgt_rtl_is_valid_binary,
    __tgt_rtl_is_valid_binary_info,
    __tgt_rtl_is_data_exchangable,
    __tgt_rtl_supports_empty_images,
    __tgt_rtl_init_requires,
    __tgt_rtl_set_info_flag,
    __tgt_rtl_register_lib,
    __tgt_rtl_unregister_lib,
    __tgt_rtl_init_device,
    __tgt_rtl_deinit_device,
    __tgt_rtl_load_binary,
    __tgt_rtl_print_device_info,
    __tgt_rtl_init_device_info,
    __tgt_rtl_data_alloc,
    __tgt_rtl_data_delete,
    __tgt_rtl_data_submit,
    __tgt_rtl_data_submit_async,
    __tgt_rtl_data_retrieve,
    __tgt_rtl_data_retrieve_async,
    __tgt_rtl_data_exchange,
    __tgt_rtl_data_exchange_async,
    __tgt_rtl_data_lock,
    __tgt_rtl_data_unlock,
    __tgt_rtl_launch_kernel,
    __tgt_rtl_synchronize,
    __tgt_rtl_query_async,
    __tgt_rtl_release_async_info,
    __tgt_rtl_init_async_info,
    __tgt_rtl_create_event,
    __tgt_rtl_record_event,
    __tgt_rtl_wait_event,
    __tgt_rtl_sync_event,
    __tgt_rtl_destroy_event,
);
