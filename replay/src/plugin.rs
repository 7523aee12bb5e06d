//! An LLVM 16 offload plugin, opened by path, and the replay of one kernel
//! through its `__tgt_rtl_*` entry points (LLVM 16's
//! `openmp/libomptarget/include/omptargetplugin.h`): the calls
//! libomptarget's `target_replay` makes (`openmp/libomptarget/src/omptarget.cpp`,
//! reached by `__tgt_target_kernel_replay`), made here directly.
//!
//! This module is the tool's one edge to C: the structs below are LLVM
//! 16's (`openmp/libomptarget/include/omptarget.h`), and every call into
//! the plugin is an `unsafe` block with the plugin ABI's contract beside it.

use crate::Error;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};

/// `__tgt_offload_entry` (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OffloadEntry {
    addr: *mut c_void,
    name: *mut c_char,
    size: usize,
    flags: i32,
    reserved: i32,
}

/// `__tgt_device_image` (32 bytes).
#[repr(C)]
#[derive(Debug)]
pub struct DeviceImage {
    image_start: *mut c_void,
    image_end: *mut c_void,
    entries_begin: *mut OffloadEntry,
    entries_end: *mut OffloadEntry,
}

/// `__tgt_target_table` (16 bytes).
#[repr(C)]
#[derive(Debug)]
pub struct TargetTable {
    entries_begin: *mut OffloadEntry,
    entries_end: *mut OffloadEntry,
}

/// `KernelArgsTy` of LLVM 16 (104 bytes).
#[repr(C)]
#[derive(Debug)]
pub struct KernelArgs {
    version: u32,
    num_args: u32,
    arg_base_ptrs: *mut *mut c_void,
    arg_ptrs: *mut *mut c_void,
    arg_sizes: *mut i64,
    arg_types: *mut i64,
    arg_names: *mut *mut c_void,
    arg_mappers: *mut *mut c_void,
    tripcount: u64,
    flags: u64,
    num_teams: [u32; 3],
    thread_limit: [u32; 3],
    dyn_cgroup_mem: u32,
}

const _: () = {
    assert!(std::mem::size_of::<OffloadEntry>() == 32);
    assert!(std::mem::size_of::<DeviceImage>() == 32);
    assert!(std::mem::size_of::<TargetTable>() == 16);
    assert!(std::mem::size_of::<KernelArgs>() == 104);
    assert!(std::mem::offset_of!(KernelArgs, tripcount) == 56);
    assert!(std::mem::offset_of!(KernelArgs, num_teams) == 72);
    assert!(std::mem::offset_of!(KernelArgs, thread_limit) == 84);
};

/// `OFFLOAD_SUCCESS`.
const OFFLOAD_SUCCESS: i32 = 0;
/// `OMP_REQ_NONE`: the program has no `requires` directive.
const OMP_REQ_NONE: i64 = 1;
/// `TARGET_ALLOC_DEFAULT`.
const TARGET_ALLOC_DEFAULT: i32 = 0;

type InitPlugin = unsafe extern "C" fn() -> i32;
type NumberOfDevices = unsafe extern "C" fn() -> i32;
type InitRequires = unsafe extern "C" fn(i64) -> i64;
type IsValidBinary = unsafe extern "C" fn(*mut DeviceImage) -> i32;
type InitDevice = unsafe extern "C" fn(i32) -> i32;
type LoadBinary = unsafe extern "C" fn(i32, *mut DeviceImage) -> *mut TargetTable;
type DataAlloc = unsafe extern "C" fn(i32, i64, *mut c_void, i32) -> *mut c_void;
type DataSubmit = unsafe extern "C" fn(i32, *mut c_void, *mut c_void, i64) -> i32;
type LaunchKernel = unsafe extern "C" fn(
    i32,
    *mut c_void,
    *mut *mut c_void,
    *mut isize,
    *mut KernelArgs,
    *mut c_void,
) -> i32;

/// What one replay launches: the image, the kernel and its launch.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The device image (a code object or bitcode).
    pub image: &'a [u8],
    /// The kernel's name.
    pub kernel: &'a str,
    /// The plugin's device number.
    pub device: i32,
    /// The memory to write at the start of the reserved block.
    pub memory: &'a [u8],
    /// Arguments as recorded.
    pub args: &'a [u64],
    /// Their offsets.
    pub offsets: &'a [i64],
    /// Teams (0: the plugin's choice).
    pub num_teams: u32,
    /// Threads per team (0: the plugin's choice).
    pub thread_limit: u32,
    /// Loop trip count.
    pub trip_count: u64,
}

/// An opened plugin.
pub struct Plugin {
    path: PathBuf,
    lib: libloading::Library,
}

impl Plugin {
    /// Opens the plugin library at `path` (a bare name is searched as
    /// `dlopen` does).
    ///
    /// Errors: [`Error::Plugin`] when it cannot be loaded.
    pub fn open(path: &Path) -> Result<Plugin, Error> {
        // SAFETY: loading runs the library's initialisers; an LLVM 16
        // offload plugin is made to be dlopened (by libomptarget).
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| Error::Plugin {
            path: path.to_owned(),
            what: format!("cannot be loaded: {e}"),
        })?;
        Ok(Plugin {
            path: path.to_owned(),
            lib,
        })
    }

    /// The entry point `name` of type `T`.
    fn get<T: Copy>(&self, name: &str) -> Result<T, Error> {
        // SAFETY: `T` is the entry point's type in LLVM 16's
        // omptargetplugin.h (the aliases above, one per name).
        let f = unsafe { self.lib.get::<T>(name.as_bytes()) };
        f.map(|s| *s).map_err(|_| Error::Plugin {
            path: self.path.clone(),
            what: format!("has no {name}"),
        })
    }

    /// Replays `launch` (libomptarget's `target_replay`): initialise the
    /// plugin and the device, load the image, allocate the recorded
    /// memory's size (the plugin's record/replay allocator hands out the
    /// start of its reserved block), copy the memory there and launch the
    /// kernel synchronously. The plugin, told by `LIBOMPTARGET_REPLAY` and
    /// `LIBOMPTARGET_RR_SAVE_OUTPUT`, saves the memory after the kernel.
    ///
    /// Errors: [`Error::Replay`] naming the step the plugin refused.
    pub fn replay(&self, launch: &Launch<'_>) -> Result<(), Error> {
        let step = |step: &'static str, what: String| Error::Replay { step, what };
        if let Ok(init) = self.get::<InitPlugin>("__tgt_rtl_init_plugin") {
            // SAFETY: no arguments; the first call into the plugin.
            if unsafe { init() } != OFFLOAD_SUCCESS {
                return Err(step("init_plugin", "failed".into()));
            }
        }
        // SAFETY: no arguments.
        let devices = unsafe { self.get::<NumberOfDevices>("__tgt_rtl_number_of_devices")?() };
        if launch.device < 0 || launch.device >= devices {
            return Err(step(
                "number_of_devices",
                format!(
                    "the recording ran on device {}, the plugin has {devices} device(s)",
                    launch.device
                ),
            ));
        }
        // The entry table libomptarget would build from the program: one
        // kernel, by name; its host address only has to be non-NULL.
        // Leaked: the plugin may keep pointers into the image and its
        // entries until the process exits, as libomptarget's are.
        let name = CString::new(launch.kernel)
            .map_err(|_| step("load_binary", "the kernel name holds a NUL".into()))?;
        let entry: &'static mut OffloadEntry = Box::leak(Box::new(OffloadEntry {
            addr: std::ptr::NonNull::<c_void>::dangling().as_ptr(),
            name: name.into_raw(),
            size: 0,
            flags: 0,
            reserved: 0,
        }));
        let bytes: &'static mut [u8] = Box::leak(launch.image.to_vec().into_boxed_slice());
        let range = bytes.as_mut_ptr_range();
        let entries = (
            entry as *mut OffloadEntry,
            (entry as *mut OffloadEntry).wrapping_add(1),
        );
        let image: &'static mut DeviceImage = Box::leak(Box::new(DeviceImage {
            image_start: range.start.cast(),
            image_end: range.end.cast(),
            entries_begin: entries.0,
            entries_end: entries.1,
        }));
        // SAFETY: `image` is a valid image with one valid entry, alive for
        // the process.
        if unsafe { self.get::<IsValidBinary>("__tgt_rtl_is_valid_binary")?(image) } == 0 {
            return Err(step(
                "is_valid_binary",
                "the plugin does not accept the image for its devices".into(),
            ));
        }
        if let Ok(requires) = self.get::<InitRequires>("__tgt_rtl_init_requires") {
            // SAFETY: a flags value; libomptarget calls it before init_device.
            unsafe { requires(OMP_REQ_NONE) };
        }
        // SAFETY: a device number below number_of_devices.
        if unsafe { self.get::<InitDevice>("__tgt_rtl_init_device")?(launch.device) }
            != OFFLOAD_SUCCESS
        {
            return Err(step(
                "init_device",
                "failed (see the plugin's message)".into(),
            ));
        }
        // SAFETY: as is_valid_binary, on an initialised device.
        let table =
            unsafe { self.get::<LoadBinary>("__tgt_rtl_load_binary")?(launch.device, image) };
        let handle =
            kernel_handle(table, launch.kernel).map_err(|what| step("load_binary", what))?;

        let size = launch.memory.len() as i64;
        // SAFETY: plain values; a NULL host pointer is allowed.
        let block = unsafe {
            self.get::<DataAlloc>("__tgt_rtl_data_alloc")?(
                launch.device,
                size,
                std::ptr::null_mut(),
                TARGET_ALLOC_DEFAULT,
            )
        };
        if block.is_null() {
            return Err(step(
                "data_alloc",
                format!("no device memory for the recording's {size} bytes"),
            ));
        }
        if size > 0 {
            // SAFETY: `block` is the plugin's allocation of `size` bytes;
            // the memory is readable for `size` bytes and outlives the
            // synchronous copy.
            let rc = unsafe {
                self.get::<DataSubmit>("__tgt_rtl_data_submit")?(
                    launch.device,
                    block,
                    launch.memory.as_ptr() as *mut c_void,
                    size,
                )
            };
            if rc != OFFLOAD_SUCCESS {
                return Err(step(
                    "data_submit",
                    "copying the recorded memory failed".into(),
                ));
            }
        }
        let mut args: Vec<*mut c_void> = launch.args.iter().map(|&a| a as *mut c_void).collect();
        let mut offsets: Vec<isize> = launch.offsets.iter().map(|&o| o as isize).collect();
        let mut kargs = KernelArgs {
            version: 2,
            num_args: args.len() as u32,
            arg_base_ptrs: std::ptr::null_mut(),
            arg_ptrs: std::ptr::null_mut(),
            arg_sizes: std::ptr::null_mut(),
            arg_types: std::ptr::null_mut(),
            arg_names: std::ptr::null_mut(),
            arg_mappers: std::ptr::null_mut(),
            tripcount: launch.trip_count,
            flags: 0,
            num_teams: [launch.num_teams, 0, 0],
            thread_limit: [launch.thread_limit, 0, 0],
            dyn_cgroup_mem: 0,
        };
        // SAFETY: `handle` came from the plugin's target table; `args` and
        // `offsets` hold `num_args` elements; a NULL async info makes the
        // launch synchronous.
        let rc = unsafe {
            self.get::<LaunchKernel>("__tgt_rtl_launch_kernel")?(
                launch.device,
                handle,
                args.as_mut_ptr(),
                offsets.as_mut_ptr(),
                &mut kargs,
                std::ptr::null_mut(),
            )
        };
        if rc != OFFLOAD_SUCCESS {
            return Err(step(
                "launch_kernel",
                "the kernel failed (see the plugin's message)".into(),
            ));
        }
        Ok(())
    }
}

/// The handle of kernel `name` in the target table `table` that
/// `load_binary` returned.
fn kernel_handle(table: *mut TargetTable, name: &str) -> Result<*mut c_void, String> {
    if table.is_null() {
        return Err("the plugin could not load the image (see its message)".into());
    }
    // SAFETY: a non-NULL table from load_binary is valid for the process,
    // its entries an array from `entries_begin` to `entries_end`.
    let entries = unsafe {
        let t = &*table;
        if t.entries_begin.is_null() || t.entries_end.is_null() {
            &[][..]
        } else {
            let n = t.entries_end.offset_from(t.entries_begin);
            std::slice::from_raw_parts(t.entries_begin, n.max(0) as usize)
        }
    };
    entries
        .iter()
        .find(|e| {
            // SAFETY: entry names in a target table are C strings.
            !e.name.is_null() && unsafe { CStr::from_ptr(e.name) }.to_bytes() == name.as_bytes()
        })
        .map(|e| e.addr)
        .filter(|a| !a.is_null())
        .ok_or_else(|| format!("the loaded image has no kernel {name}"))
}
