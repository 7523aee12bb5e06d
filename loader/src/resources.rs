//! `--print-resource-usage`: a kernel's registers, LDS, scratch and the
//! resulting occupancy on gfx90a, from its kernel descriptor in the code
//! object (AMDGPUUsage "Kernel Descriptor", compute_pgm_rsrc1 and the
//! gfx90a compute_pgm_rsrc3). The descriptor holds what the hardware
//! allocates (register counts rounded up to their granules).

use code_object::{KernelDescriptor, KERNEL_DESCRIPTOR_SIZE};
use object::{Object, ObjectSection, ObjectSymbol};

/// Resources of one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// SGPRs allocated per wavefront (granule 16 on GFX9, incl. VCC etc.).
    pub sgprs: u32,
    /// Unified VGPR file entries per work-item (architectural + AGPRs).
    pub vgprs_total: u32,
    /// Architectural VGPRs (the accumulation offset).
    pub arch_vgprs: u32,
    /// Upper bound of the AGPRs (accumulation registers): the unified
    /// entries past the architectural ones (the descriptor rounds the total
    /// up to 8, so the exact count is not recorded there).
    pub agprs: u32,
    /// LDS bytes per workgroup (group segment fixed size).
    pub lds: u32,
    /// Scratch bytes per work-item (private segment fixed size).
    pub scratch: u32,
}

/// Reads the 64-byte descriptor `kernel.kd` from the ELF image
/// ([`KernelDescriptor`]); `None` when absent or truncated.
pub fn from_image(image: &[u8], kernel: &str) -> Option<Resources> {
    let file = object::File::parse(image).ok()?;
    let name = format!("{kernel}.kd");
    let sym = file.symbols().find(|s| s.name() == Ok(name.as_str()))?;
    let section = file.section_by_index(sym.section_index()?).ok()?;
    let bytes = section
        .data_range(sym.address(), KERNEL_DESCRIPTOR_SIZE as u64)
        .ok()??;
    let kd = KernelDescriptor::parse(bytes).ok()?;
    let vgprs_total = kd.workitem_vgpr_count_gfx90a();
    let sgprs = (kd.granulated_wavefront_sgpr_count() / 2 + 1) * 16;
    let arch_vgprs = kd.accum_offset_vgprs().min(vgprs_total);
    Some(Resources {
        sgprs,
        vgprs_total,
        arch_vgprs,
        agprs: vgprs_total - arch_vgprs,
        lds: kd.group_segment_fixed_size,
        scratch: kd.private_segment_fixed_size,
    })
}

impl Resources {
    /// Wavefronts per SIMD on gfx90a for workgroups of `threads` work-items
    /// (wave64): limited by 8 waves per SIMD, 512 unified VGPRs per lane,
    /// 800 SGPRs per SIMD, and 64 KiB of LDS per CU of 4 SIMDs.
    pub fn occupancy(&self, threads: u32) -> u32 {
        let mut waves = 8u32;
        if let Some(w) = 512u32.checked_div(self.vgprs_total) {
            waves = waves.min(w);
        }
        if let Some(w) = 800u32.checked_div(self.sgprs) {
            waves = waves.min(w);
        }
        if let Some(groups) = 65536u32.checked_div(self.lds) {
            let waves_per_group = threads.div_ceil(64).max(1);
            waves = waves.min(groups * waves_per_group / 4);
        }
        waves
    }
}
