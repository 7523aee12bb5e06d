//! The 64-byte AMDHSA kernel descriptor (AMDGPUUsage "Kernel Descriptor":
//! the "Code Object V3 Kernel Descriptor" table, `compute_pgm_rsrc1`,
//! `compute_pgm_rsrc2`, the GFX90A `compute_pgm_rsrc3` table and the kernel
//! code properties). Accessor names are AMDGPUUsage's field names in
//! snake_case.

use crate::Error;

/// Size of a kernel descriptor in bytes (it is also 64-byte aligned).
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// Byte offsets of the descriptor's fields (little-endian; the gaps are
/// reserved bytes, kept in [`KernelDescriptor::raw`]).
pub mod offset {
    /// `GROUP_SEGMENT_FIXED_SIZE`, u32.
    pub const GROUP_SEGMENT_FIXED_SIZE: usize = 0;
    /// `PRIVATE_SEGMENT_FIXED_SIZE`, u32.
    pub const PRIVATE_SEGMENT_FIXED_SIZE: usize = 4;
    /// `KERNARG_SIZE`, u32.
    pub const KERNARG_SIZE: usize = 8;
    /// `KERNEL_CODE_ENTRY_BYTE_OFFSET`, i64.
    pub const KERNEL_CODE_ENTRY_BYTE_OFFSET: usize = 16;
    /// `COMPUTE_PGM_RSRC3`, u32.
    pub const COMPUTE_PGM_RSRC3: usize = 44;
    /// `COMPUTE_PGM_RSRC1`, u32.
    pub const COMPUTE_PGM_RSRC1: usize = 48;
    /// `COMPUTE_PGM_RSRC2`, u32.
    pub const COMPUTE_PGM_RSRC2: usize = 52;
    /// The kernel code properties (`ENABLE_SGPR_*`...), u16.
    pub const KERNEL_CODE_PROPERTIES: usize = 56;
}

/// Extracts `width` bits at `shift` from `word`.
const fn bits(word: u32, shift: u32, width: u32) -> u32 {
    (word >> shift) & ((1u32 << width) - 1)
}

/// A decoded kernel descriptor (AMDGPUUsage "Code Object V3 Kernel
/// Descriptor"). The packet's
/// `kernel_object` is the device address of these 64 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// Static LDS bytes per workgroup (offset 0).
    pub group_segment_fixed_size: u32,
    /// Static scratch bytes per work-item (offset 4).
    pub private_segment_fixed_size: u32,
    /// Kernarg segment bytes; 0 = unspecified (offset 8).
    pub kernarg_size: u32,
    /// Signed byte offset from the descriptor's address to the kernel's first
    /// instruction (offset 16).
    pub kernel_code_entry_byte_offset: i64,
    /// COMPUTE_PGM_RSRC3 (offset 44), GFX90A layout.
    pub compute_pgm_rsrc3: u32,
    /// COMPUTE_PGM_RSRC1 (offset 48).
    pub compute_pgm_rsrc1: u32,
    /// COMPUTE_PGM_RSRC2 (offset 52).
    pub compute_pgm_rsrc2: u32,
    /// Kernel code properties (offset 56, u16).
    pub kernel_code_properties: u16,
    /// The 64 raw bytes, reserved fields included.
    pub raw: [u8; KERNEL_DESCRIPTOR_SIZE],
}

impl KernelDescriptor {
    /// Decodes the first 64 bytes of `bytes` (little-endian, the layout of
    /// [`offset`]). Reserved fields are kept in `raw`, not checked.
    ///
    /// Errors: [`Error::DescriptorTooShort`] when fewer than 64 bytes are
    /// given.
    pub fn parse(bytes: &[u8]) -> Result<KernelDescriptor, Error> {
        let raw: [u8; KERNEL_DESCRIPTOR_SIZE] = bytes
            .get(..KERNEL_DESCRIPTOR_SIZE)
            .and_then(|b| b.try_into().ok())
            .ok_or(Error::DescriptorTooShort(bytes.len()))?;
        let u32_at = |o: usize| u32::from_le_bytes([raw[o], raw[o + 1], raw[o + 2], raw[o + 3]]);
        let mut entry = [0u8; 8];
        let at = offset::KERNEL_CODE_ENTRY_BYTE_OFFSET;
        entry.copy_from_slice(&raw[at..at + 8]);
        let properties = offset::KERNEL_CODE_PROPERTIES;
        Ok(KernelDescriptor {
            group_segment_fixed_size: u32_at(offset::GROUP_SEGMENT_FIXED_SIZE),
            private_segment_fixed_size: u32_at(offset::PRIVATE_SEGMENT_FIXED_SIZE),
            kernarg_size: u32_at(offset::KERNARG_SIZE),
            kernel_code_entry_byte_offset: i64::from_le_bytes(entry),
            compute_pgm_rsrc3: u32_at(offset::COMPUTE_PGM_RSRC3),
            compute_pgm_rsrc1: u32_at(offset::COMPUTE_PGM_RSRC1),
            compute_pgm_rsrc2: u32_at(offset::COMPUTE_PGM_RSRC2),
            kernel_code_properties: u16::from_le_bytes([raw[properties], raw[properties + 1]]),
            raw,
        })
    }

    /// Address of the kernel's first instruction when the descriptor sits at
    /// `descriptor_address`: `descriptor_address + kernel_code_entry_byte_offset`;
    /// `None` on overflow.
    pub fn entry_address(&self, descriptor_address: u64) -> Option<u64> {
        descriptor_address.checked_add_signed(self.kernel_code_entry_byte_offset)
    }

    // ---- COMPUTE_PGM_RSRC1 ----

    /// GRANULATED_WORKITEM_VGPR_COUNT (rsrc1 5:0): `ceil(vgprs/8) - 1` on gfx90a.
    pub fn granulated_workitem_vgpr_count(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 0, 6)
    }
    /// Unified VGPRs (arch + AGPRs) allocated per work-item on gfx90a:
    /// `(GRANULATED_WORKITEM_VGPR_COUNT + 1) * 8`.
    pub fn workitem_vgpr_count_gfx90a(&self) -> u32 {
        (self.granulated_workitem_vgpr_count() + 1) * 8
    }
    /// GRANULATED_WAVEFRONT_SGPR_COUNT (rsrc1 9:6).
    pub fn granulated_wavefront_sgpr_count(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 6, 4)
    }
    /// PRIORITY (rsrc1 11:10), must be 0.
    pub fn priority(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 10, 2)
    }
    /// FLOAT_ROUND_MODE_32 (rsrc1 13:12): 0 nearest-even, 1 +inf, 2 -inf, 3 zero.
    pub fn float_round_mode_32(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 12, 2)
    }
    /// FLOAT_ROUND_MODE_16_64 (rsrc1 15:14), same encoding.
    pub fn float_round_mode_16_64(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 14, 2)
    }
    /// FLOAT_DENORM_MODE_32 (rsrc1 17:16): 0 flush src+dst, 1 flush dst,
    /// 2 flush src, 3 flush none.
    pub fn float_denorm_mode_32(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 16, 2)
    }
    /// FLOAT_DENORM_MODE_16_64 (rsrc1 19:18), same encoding.
    pub fn float_denorm_mode_16_64(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 18, 2)
    }
    /// PRIV (rsrc1 20), must be 0.
    pub fn priv_(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 20, 1) != 0
    }
    /// ENABLE_DX10_CLAMP (rsrc1 21): the clamp modifier turns NaN into 0.
    pub fn enable_dx10_clamp(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 21, 1) != 0
    }
    /// Short name of [`enable_dx10_clamp`](Self::enable_dx10_clamp).
    pub fn dx10_clamp(&self) -> bool {
        self.enable_dx10_clamp()
    }
    /// DEBUG_MODE (rsrc1 22), must be 0.
    pub fn debug_mode(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 22, 1) != 0
    }
    /// ENABLE_IEEE_MODE (rsrc1 23).
    pub fn enable_ieee_mode(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 23, 1) != 0
    }
    /// Short name of [`enable_ieee_mode`](Self::enable_ieee_mode).
    pub fn ieee_mode(&self) -> bool {
        self.enable_ieee_mode()
    }
    /// BULKY (rsrc1 24), must be 0.
    pub fn bulky(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 24, 1) != 0
    }
    /// CDBG_USER (rsrc1 25), must be 0.
    pub fn cdbg_user(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 25, 1) != 0
    }
    /// FP16_OVFL (rsrc1 26): 0 = fp16 overflow gives ±inf.
    pub fn fp16_ovfl(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 26, 1) != 0
    }
    /// WGP_MODE (rsrc1 29, GFX10+).
    pub fn wgp_mode(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 29, 1) != 0
    }
    /// MEM_ORDERED (rsrc1 30, GFX10+).
    pub fn mem_ordered(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 30, 1) != 0
    }
    /// FWD_PROGRESS (rsrc1 31, GFX10+).
    pub fn fwd_progress(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 31, 1) != 0
    }

    // ---- COMPUTE_PGM_RSRC2 ----

    /// ENABLE_PRIVATE_SEGMENT (rsrc2 0): enables the scratch wavefront offset
    /// system SGPR (SCRATCH_EN).
    pub fn enable_private_segment(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 0, 1) != 0
    }
    /// USER_SGPR_COUNT (rsrc2 5:1): user SGPRs CP loads.
    pub fn user_sgpr_count(&self) -> u32 {
        bits(self.compute_pgm_rsrc2, 1, 5)
    }
    /// ENABLE_TRAP_HANDLER (rsrc2 6), must be 0.
    pub fn enable_trap_handler(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 6, 1) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_X (rsrc2 7).
    pub fn enable_sgpr_workgroup_id_x(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 7, 1) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_Y (rsrc2 8).
    pub fn enable_sgpr_workgroup_id_y(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 8, 1) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_Z (rsrc2 9).
    pub fn enable_sgpr_workgroup_id_z(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 9, 1) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_INFO (rsrc2 10).
    pub fn enable_sgpr_workgroup_info(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 10, 1) != 0
    }
    /// ENABLE_VGPR_WORKITEM_ID (rsrc2 12:11): 0 = X, 1 = X,Y, 2 = X,Y,Z,
    /// 3 = undefined.
    pub fn enable_vgpr_workitem_id(&self) -> u32 {
        bits(self.compute_pgm_rsrc2, 11, 2)
    }
    /// ENABLE_EXCEPTION_ADDRESS_WATCH (rsrc2 13), must be 0.
    pub fn enable_exception_address_watch(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 13, 1) != 0
    }
    /// ENABLE_EXCEPTION_MEMORY (rsrc2 14), must be 0.
    pub fn enable_exception_memory(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 14, 1) != 0
    }
    /// GRANULATED_LDS_SIZE (rsrc2 23:15), must be 0.
    pub fn granulated_lds_size(&self) -> u32 {
        bits(self.compute_pgm_rsrc2, 15, 9)
    }
    /// ENABLE_EXCEPTION_IEEE_754_FP_INVALID_OPERATION (rsrc2 24).
    pub fn enable_exception_ieee_754_fp_invalid_operation(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 24, 1) != 0
    }
    /// ENABLE_EXCEPTION_FP_DENORMAL_SOURCE (rsrc2 25).
    pub fn enable_exception_fp_denormal_source(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 25, 1) != 0
    }
    /// ENABLE_EXCEPTION_IEEE_754_FP_DIVISION_BY_ZERO (rsrc2 26).
    pub fn enable_exception_ieee_754_fp_division_by_zero(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 26, 1) != 0
    }
    /// ENABLE_EXCEPTION_IEEE_754_FP_OVERFLOW (rsrc2 27).
    pub fn enable_exception_ieee_754_fp_overflow(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 27, 1) != 0
    }
    /// ENABLE_EXCEPTION_IEEE_754_FP_UNDERFLOW (rsrc2 28).
    pub fn enable_exception_ieee_754_fp_underflow(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 28, 1) != 0
    }
    /// ENABLE_EXCEPTION_IEEE_754_FP_INEXACT (rsrc2 29).
    pub fn enable_exception_ieee_754_fp_inexact(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 29, 1) != 0
    }
    /// ENABLE_EXCEPTION_INT_DIVIDE_BY_ZERO (rsrc2 30).
    pub fn enable_exception_int_divide_by_zero(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 30, 1) != 0
    }
    /// The seven exception enables (rsrc2 30:24) as a mask, bit 0 =
    /// IEEE invalid operation ... bit 6 = integer divide by zero.
    pub fn enable_exception_mask(&self) -> u32 {
        bits(self.compute_pgm_rsrc2, 24, 7)
    }

    // ---- COMPUTE_PGM_RSRC3 (gfx90a) ----

    /// ACCUM_OFFSET (rsrc3 5:0, gfx90a): raw field; the first AGPR sits at
    /// unified VGPR index `(field + 1) * 4`.
    pub fn accum_offset(&self) -> u32 {
        bits(self.compute_pgm_rsrc3, 0, 6)
    }
    /// Index of the first AGPR in the unified VGPR file: `(ACCUM_OFFSET + 1) * 4`.
    pub fn accum_offset_vgprs(&self) -> u32 {
        (self.accum_offset() + 1) * 4
    }
    /// TG_SPLIT (rsrc3 16, gfx90a).
    pub fn tg_split(&self) -> bool {
        bits(self.compute_pgm_rsrc3, 16, 1) != 0
    }

    // ---- kernel_code_properties ----

    fn property(&self, bit: u32) -> bool {
        bits(u32::from(self.kernel_code_properties), bit, 1) != 0
    }
    /// ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER (bit 0, 4 user SGPRs).
    pub fn enable_sgpr_private_segment_buffer(&self) -> bool {
        self.property(0)
    }
    /// ENABLE_SGPR_DISPATCH_PTR (bit 1, 2 user SGPRs).
    pub fn enable_sgpr_dispatch_ptr(&self) -> bool {
        self.property(1)
    }
    /// ENABLE_SGPR_QUEUE_PTR (bit 2, 2 user SGPRs).
    pub fn enable_sgpr_queue_ptr(&self) -> bool {
        self.property(2)
    }
    /// ENABLE_SGPR_KERNARG_SEGMENT_PTR (bit 3, 2 user SGPRs).
    pub fn enable_sgpr_kernarg_segment_ptr(&self) -> bool {
        self.property(3)
    }
    /// ENABLE_SGPR_DISPATCH_ID (bit 4, 2 user SGPRs).
    pub fn enable_sgpr_dispatch_id(&self) -> bool {
        self.property(4)
    }
    /// ENABLE_SGPR_FLAT_SCRATCH_INIT (bit 5, 2 user SGPRs).
    pub fn enable_sgpr_flat_scratch_init(&self) -> bool {
        self.property(5)
    }
    /// ENABLE_SGPR_PRIVATE_SEGMENT_SIZE (bit 6, 1 user SGPR).
    pub fn enable_sgpr_private_segment_size(&self) -> bool {
        self.property(6)
    }
    /// ENABLE_WAVEFRONT_SIZE32 (bit 10, GFX10+).
    pub fn enable_wavefront_size32(&self) -> bool {
        self.property(10)
    }
    /// USES_DYNAMIC_STACK (bit 11).
    pub fn uses_dynamic_stack(&self) -> bool {
        self.property(11)
    }
    /// Number of user SGPRs the enabled properties occupy, in the fixed order
    /// PSB (4), dispatch ptr (2), queue ptr (2), kernarg ptr (2), dispatch id
    /// (2), flat scratch init (2), private segment size (1). At most
    /// [`user_sgpr_count`](Self::user_sgpr_count) in a well-formed descriptor.
    pub fn enabled_user_sgpr_count(&self) -> u32 {
        [
            (self.enable_sgpr_private_segment_buffer(), 4),
            (self.enable_sgpr_dispatch_ptr(), 2),
            (self.enable_sgpr_queue_ptr(), 2),
            (self.enable_sgpr_kernarg_segment_ptr(), 2),
            (self.enable_sgpr_dispatch_id(), 2),
            (self.enable_sgpr_flat_scratch_init(), 2),
            (self.enable_sgpr_private_segment_size(), 1),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| n)
        .sum()
    }
}
