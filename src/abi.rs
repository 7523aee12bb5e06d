//! `#[repr(C)]` types and constants of the LLVM 16 libomptarget ↔ plugin ABI.
//!
//! Every struct mirrors a C struct of LLVM 16.0.6's `omptarget.h` /
//! `DeviceEnvironment.h` (x86-64 LP64 layout), both under
//! `openmp/libomptarget/include/`. Sizes and field offsets are
//! checked at compile time below each type, so a layout slip fails the build.

use std::ffi::{c_char, c_void};
use std::mem::{align_of, offset_of, size_of};

/// Success return value of the `__tgt_rtl_*` entry points (`OFFLOAD_SUCCESS`
/// in LLVM 16's `omptarget.h`).
pub const OFFLOAD_SUCCESS: i32 = 0;
/// Failure return value of the `__tgt_rtl_*` entry points: `~0` = -1 (`OFFLOAD_FAIL` in
/// LLVM 16's `omptarget.h`).
pub const OFFLOAD_FAIL: i32 = !0;

/// `__tgt_offload_entry`: one kernel or global of an image (LLVM 16's `omptarget.h`, 32 bytes).
///
/// In the host table `addr` is the host kernel ID or the host global's
/// address; in a target table built by `load_binary` it is the plugin's kernel
/// handle or the device address of the global.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OffloadEntry {
    /// Host address (host table) or kernel handle / device address (target table).
    pub addr: *mut c_void,
    /// NUL-terminated symbol name, owned by the program.
    pub name: *mut c_char,
    /// 0 for kernels, the size in bytes for globals.
    pub size: usize,
    /// `OMP_DECLARE_TARGET_*` flags (`OpenMPOffloadingDeclareTargetFlags` in
    /// `omptarget.h`): [`ENTRY_FLAG_LINK`], [`ENTRY_FLAG_CTOR`], [`ENTRY_FLAG_DTOR`].
    pub flags: i32,
    /// Reserved, 0.
    pub reserved: i32,
}
const _: () = {
    assert!(size_of::<OffloadEntry>() == 32);
    assert!(align_of::<OffloadEntry>() == 8);
    assert!(offset_of!(OffloadEntry, addr) == 0);
    assert!(offset_of!(OffloadEntry, name) == 8);
    assert!(offset_of!(OffloadEntry, size) == 16);
    assert!(offset_of!(OffloadEntry, flags) == 24);
    assert!(offset_of!(OffloadEntry, reserved) == 28);
};

/// Offload entry flag: `declare target link` global (`OMP_DECLARE_TARGET_LINK`, `omptarget.h`).
pub const ENTRY_FLAG_LINK: i32 = 0x1;
/// Offload entry flag: constructor kernel (`OMP_DECLARE_TARGET_CTOR`, `omptarget.h`).
pub const ENTRY_FLAG_CTOR: i32 = 0x2;
/// Offload entry flag: destructor kernel (`OMP_DECLARE_TARGET_DTOR`, `omptarget.h`).
pub const ENTRY_FLAG_DTOR: i32 = 0x4;

/// `__tgt_device_image`: one device image handed to the plugin (LLVM 16's `omptarget.h`, 32 bytes).
///
/// `image_start..image_end` is the raw device ELF (libomptarget already
/// unwrapped any `OffloadBinary`); the entry range is end-exclusive.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DeviceImage {
    /// First byte of the image.
    pub image_start: *mut c_void,
    /// One past the last byte of the image.
    pub image_end: *mut c_void,
    /// First offload entry of the image.
    pub entries_begin: *mut OffloadEntry,
    /// One past the last offload entry.
    pub entries_end: *mut OffloadEntry,
}
const _: () = {
    assert!(size_of::<DeviceImage>() == 32);
    assert!(offset_of!(DeviceImage, image_start) == 0);
    assert!(offset_of!(DeviceImage, image_end) == 8);
    assert!(offset_of!(DeviceImage, entries_begin) == 16);
    assert!(offset_of!(DeviceImage, entries_end) == 24);
};

/// `__tgt_bin_desc`: a program's whole set of device images (LLVM 16's
/// `omptarget.h`, 32 bytes); only `register_lib`/`unregister_lib` receive it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BinDesc {
    /// Number of elements of `device_images`.
    pub num_device_images: i32,
    /// Array of `num_device_images` images.
    pub device_images: *mut DeviceImage,
    /// First host offload entry.
    pub host_entries_begin: *mut OffloadEntry,
    /// One past the last host offload entry.
    pub host_entries_end: *mut OffloadEntry,
}
const _: () = {
    assert!(size_of::<BinDesc>() == 32);
    assert!(offset_of!(BinDesc, num_device_images) == 0);
    assert!(offset_of!(BinDesc, device_images) == 8);
    assert!(offset_of!(BinDesc, host_entries_begin) == 16);
    assert!(offset_of!(BinDesc, host_entries_end) == 24);
};

/// `__tgt_target_table`: the table `load_binary` returns (LLVM 16's `omptarget.h`, 16 bytes).
/// Owned by the plugin, valid and unchanged until process exit.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TargetTable {
    /// First entry.
    pub entries_begin: *mut OffloadEntry,
    /// One past the last entry.
    pub entries_end: *mut OffloadEntry,
}
const _: () = {
    assert!(size_of::<TargetTable>() == 16);
    assert!(offset_of!(TargetTable, entries_begin) == 0);
    assert!(offset_of!(TargetTable, entries_end) == 8);
};

/// `__tgt_async_info` (LLVM 16's `omptarget.h`, 8 bytes): owned by libomptarget; `queue`
/// points to a plugin object, NULL when no work is pending.
#[repr(C)]
#[derive(Debug)]
pub struct AsyncInfo {
    /// Plugin stream, or NULL.
    pub queue: *mut c_void,
}
const _: () = {
    assert!(size_of::<AsyncInfo>() == 8);
    assert!(offset_of!(AsyncInfo, queue) == 0);
};

/// `__tgt_device_info` (LLVM 16's `omptarget.h`, 16 bytes), filled by `init_device_info`.
#[repr(C)]
#[derive(Debug)]
pub struct DeviceInfo {
    /// Device context (NULL for AMDGPU).
    pub context: *mut c_void,
    /// Device handle (AMDGPU: the HSA agent handle).
    pub device: *mut c_void,
}
const _: () = {
    assert!(size_of::<DeviceInfo>() == 16);
    assert!(offset_of!(DeviceInfo, context) == 0);
    assert!(offset_of!(DeviceInfo, device) == 8);
};

/// `__tgt_image_info` (LLVM 16's `omptarget.h`, 8 bytes), passed to `is_valid_binary_info`.
#[repr(C)]
#[derive(Debug)]
pub struct ImageInfo {
    /// NUL-terminated target ID of the image (e.g. `gfx90a:xnack+`), or NULL.
    pub arch: *const c_char,
}
const _: () = {
    assert!(size_of::<ImageInfo>() == 8);
    assert!(offset_of!(ImageInfo, arch) == 0);
};

/// `KernelArgsTy` of LLVM 16 (`omptarget.h`, 104 bytes, align 8): the launch
/// description `launch_kernel` receives. Treat it as read-only (libomptarget
/// keeps using it after the call: `openmp/libomptarget/src/omptarget.cpp`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgs {
    /// Struct version: 2 from clang 16, 1 for constructor/destructor launches (ignored).
    pub version: u32,
    /// Number of kernel arguments (length of `tgt_args`/`tgt_offsets`).
    pub num_args: u32,
    /// Mapping base pointers (not for the plugin).
    pub arg_base_ptrs: *mut *mut c_void,
    /// Mapping pointers (not for the plugin).
    pub arg_ptrs: *mut *mut c_void,
    /// Mapping sizes in bytes (not for the plugin).
    pub arg_sizes: *mut i64,
    /// Map-type bits (not for the plugin).
    pub arg_types: *mut i64,
    /// Mapping names, may be NULL.
    pub arg_names: *mut *mut c_void,
    /// User-defined mappers, may be NULL.
    pub arg_mappers: *mut *mut c_void,
    /// Distribute-loop trip count, 0 if unknown.
    pub tripcount: u64,
    /// Bit field; bit 0 = nowait ([`KERNEL_ARGS_FLAG_NOWAIT`]).
    pub flags: u64,
    /// `num_teams` clause; only `[0]` is used; 0 = unspecified.
    pub num_teams: [u32; 3],
    /// `thread_limit` clause; only `[0]` is used; 0 = unspecified.
    pub thread_limit: [u32; 3],
    /// Bytes of dynamic group (LDS) memory requested.
    pub dyn_cgroup_mem: u32,
}
const _: () = {
    assert!(size_of::<KernelArgs>() == 104);
    assert!(align_of::<KernelArgs>() == 8);
    assert!(offset_of!(KernelArgs, version) == 0);
    assert!(offset_of!(KernelArgs, num_args) == 4);
    assert!(offset_of!(KernelArgs, arg_base_ptrs) == 8);
    assert!(offset_of!(KernelArgs, arg_ptrs) == 16);
    assert!(offset_of!(KernelArgs, arg_sizes) == 24);
    assert!(offset_of!(KernelArgs, arg_types) == 32);
    assert!(offset_of!(KernelArgs, arg_names) == 40);
    assert!(offset_of!(KernelArgs, arg_mappers) == 48);
    assert!(offset_of!(KernelArgs, tripcount) == 56);
    assert!(offset_of!(KernelArgs, flags) == 64);
    assert!(offset_of!(KernelArgs, num_teams) == 72);
    assert!(offset_of!(KernelArgs, thread_limit) == 84);
    assert!(offset_of!(KernelArgs, dyn_cgroup_mem) == 96);
};

/// `KernelArgs::flags` bit 0: the launch comes from a `nowait` region
/// (`KernelArgsTy::Flags`, `omptarget.h`).
pub const KERNEL_ARGS_FLAG_NOWAIT: u64 = 0x1;

/// `TargetAllocTy::TARGET_ALLOC_DEVICE` (LLVM 16's `omptarget.h`).
pub const TARGET_ALLOC_DEVICE: i32 = 0;
/// `TargetAllocTy::TARGET_ALLOC_HOST`: pinned host memory (`omptarget.h`).
pub const TARGET_ALLOC_HOST: i32 = 1;
/// `TargetAllocTy::TARGET_ALLOC_SHARED` (`omptarget.h`; NULL in LLVM 16's AMDGPU plugin).
pub const TARGET_ALLOC_SHARED: i32 = 2;
/// `TargetAllocTy::TARGET_ALLOC_DEFAULT`: mappings and `omp_target_alloc` (`omptarget.h`).
pub const TARGET_ALLOC_DEFAULT: i32 = 3;

/// Requires flag: never registered (`OMP_REQ_UNDEFINED`, `omptarget.h`).
pub const OMP_REQ_UNDEFINED: i64 = 0x0;
/// Requires flag: no `requires` directive (`OMP_REQ_NONE`, `omptarget.h`).
pub const OMP_REQ_NONE: i64 = 0x1;
/// Requires flag: `reverse_offload` (`OpenMPOffloadingRequiresDirFlags`, `omptarget.h`).
pub const OMP_REQ_REVERSE_OFFLOAD: i64 = 0x2;
/// Requires flag: `unified_address` (`OpenMPOffloadingRequiresDirFlags`, `omptarget.h`).
pub const OMP_REQ_UNIFIED_ADDRESS: i64 = 0x4;
/// Requires flag: `unified_shared_memory` (`OpenMPOffloadingRequiresDirFlags`,
/// `omptarget.h`; handled by `openmp/libomptarget/src/rtl.cpp` and the plugin's `init_requires`).
pub const OMP_REQ_UNIFIED_SHARED_MEMORY: i64 = 0x8;
/// Requires flag: `dynamic_allocators` (`OpenMPOffloadingRequiresDirFlags`, `omptarget.h`).
pub const OMP_REQ_DYNAMIC_ALLOCATORS: i64 = 0x10;

/// `OMP_TGT_EXEC_MODE_GENERIC` (`OMPTgtExecModeFlags` in LLVM 16's
/// `llvm/include/llvm/Frontend/OpenMP/OMPDeviceConstants.h`).
pub const OMP_TGT_EXEC_MODE_GENERIC: u8 = 1;
/// `OMP_TGT_EXEC_MODE_SPMD` (`OMPTgtExecModeFlags`, `OMPDeviceConstants.h`).
pub const OMP_TGT_EXEC_MODE_SPMD: u8 = 2;
/// `OMP_TGT_EXEC_MODE_GENERIC_SPMD` (`OMPTgtExecModeFlags`, `OMPDeviceConstants.h`).
pub const OMP_TGT_EXEC_MODE_GENERIC_SPMD: u8 = 3;

/// `LIBOMPTARGET_INFO` bit: kernel arguments (`OpenMPInfoType` in LLVM 16's
/// `openmp/libomptarget/include/Debug.h`).
pub const OMP_INFOTYPE_KERNEL_ARGS: u32 = 0x1;
/// `LIBOMPTARGET_INFO` bit: mapping exists (`OpenMPInfoType`, `Debug.h`).
pub const OMP_INFOTYPE_MAPPING_EXISTS: u32 = 0x2;
/// `LIBOMPTARGET_INFO` bit: dump mapping table (`OpenMPInfoType`, `Debug.h`).
pub const OMP_INFOTYPE_DUMP_TABLE: u32 = 0x4;
/// `LIBOMPTARGET_INFO` bit: mapping changed (`OpenMPInfoType`, `Debug.h`).
pub const OMP_INFOTYPE_MAPPING_CHANGED: u32 = 0x8;
/// `LIBOMPTARGET_INFO` bit: plugin kernel launch line (`OpenMPInfoType`, `Debug.h`; printed
/// by `GenericKernelTy::printLaunchInfo` in LLVM 16's
/// `plugins-nextgen/common/PluginInterface/PluginInterface.cpp`).
pub const OMP_INFOTYPE_PLUGIN_KERNEL: u32 = 0x10;
/// `LIBOMPTARGET_INFO` bit: data transfers (`OpenMPInfoType`, `Debug.h`).
pub const OMP_INFOTYPE_DATA_TRANSFER: u32 = 0x20;
/// `LIBOMPTARGET_INFO`: all bits (`OpenMPInfoType`, `Debug.h`).
pub const OMP_INFOTYPE_ALL: u32 = 0xffff_ffff;

/// `DeviceEnvironmentTy` (LLVM 16's
/// `openmp/libomptarget/include/DeviceEnvironment.h`, 16 bytes, align 4): written into the
/// image's `__omp_rtl_device_environment` global at load.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceEnvironment {
    /// `LIBOMPTARGET_DEVICE_RTL_DEBUG` (default 0).
    pub debug_kind: u32,
    /// Number of devices of this plugin.
    pub num_devices: u32,
    /// Plugin-local device id.
    pub device_num: u32,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE` in bytes (default 0).
    pub dynamic_memory_size: u32,
}
const _: () = {
    assert!(size_of::<DeviceEnvironment>() == 16);
    assert!(align_of::<DeviceEnvironment>() == 4);
    assert!(offset_of!(DeviceEnvironment, debug_kind) == 0);
    assert!(offset_of!(DeviceEnvironment, num_devices) == 4);
    assert!(offset_of!(DeviceEnvironment, device_num) == 8);
    assert!(offset_of!(DeviceEnvironment, dynamic_memory_size) == 12);
};

impl DeviceEnvironment {
    /// The 16 bytes copied into `__omp_rtl_device_environment` (little endian,
    /// field order of `DeviceEnvironmentTy`).
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[0..4].copy_from_slice(&self.debug_kind.to_le_bytes());
        out[4..8].copy_from_slice(&self.num_devices.to_le_bytes());
        out[8..12].copy_from_slice(&self.device_num.to_le_bytes());
        out[12..16].copy_from_slice(&self.dynamic_memory_size.to_le_bytes());
        out
    }
}

/// Name of the device global that receives the [`DeviceEnvironment`] (LLVM 16's
/// `PluginInterface.cpp`, `GenericDeviceTy::setupDeviceEnvironment`).
pub const DEVICE_ENVIRONMENT_SYMBOL: &str = "__omp_rtl_device_environment";

/// The AMDGPU implicit kernel arguments placed right after the explicit ones
/// in the kernarg buffer (`AMDGPUImplicitArgsTy` in LLVM 16's
/// `openmp/libomptarget/plugins-nextgen/amdgpu/utils/UtilitiesRTL.h`, placed by
/// `AMDGPUKernelTy::launchImpl` in `plugins-nextgen/amdgpu/src/rtl.cpp`; 56
/// bytes). LLVM 16 leaves them all zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImplicitArgs {
    /// Global offset X (0).
    pub offset_x: u64,
    /// Global offset Y (0).
    pub offset_y: u64,
    /// Global offset Z (0).
    pub offset_z: u64,
    /// Hostcall buffer pointer (0: none).
    pub hostcall_ptr: u64,
    /// Unused (0).
    pub unused0: u64,
    /// Unused (0).
    pub unused1: u64,
    /// Unused (0).
    pub unused2: u64,
}
const _: () = {
    assert!(size_of::<ImplicitArgs>() == 56);
    assert!(offset_of!(ImplicitArgs, offset_x) == 0);
    assert!(offset_of!(ImplicitArgs, offset_y) == 8);
    assert!(offset_of!(ImplicitArgs, offset_z) == 16);
    assert!(offset_of!(ImplicitArgs, hostcall_ptr) == 24);
    assert!(offset_of!(ImplicitArgs, unused0) == 32);
    assert!(offset_of!(ImplicitArgs, unused1) == 40);
    assert!(offset_of!(ImplicitArgs, unused2) == 48);
};

/// Size in bytes of [`ImplicitArgs`] (`AMDGPUImplicitArgsTy`, `UtilitiesRTL.h`).
pub const IMPLICIT_ARGS_SIZE: usize = size_of::<ImplicitArgs>();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_codes() {
        assert_eq!(OFFLOAD_SUCCESS, 0);
        assert_eq!(OFFLOAD_FAIL, -1);
    }

    #[test]
    fn device_environment_bytes() {
        let env = DeviceEnvironment {
            debug_kind: 0x0102_0304,
            num_devices: 2,
            device_num: 1,
            dynamic_memory_size: 0x1000,
        };
        assert_eq!(
            env.to_bytes(),
            [4, 3, 2, 1, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0x10, 0, 0]
        );
    }

    #[test]
    fn implicit_args_are_zero_by_default() {
        assert_eq!(IMPLICIT_ARGS_SIZE, 56);
        let z = ImplicitArgs::default();
        assert_eq!(z.offset_x | z.offset_y | z.offset_z | z.hostcall_ptr, 0);
    }
}
