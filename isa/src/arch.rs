//! Architecture facts of gfx90a the rest of the engine builds on: the wave's width
//! and the shape of its vector file (`[register][lane]` rows, VGPRs then AGPRs).
//! Also the host features the engine's fast paths test before they run
//! ([`host_avx2`], [`host_fma`]). Imports nothing of the crate: every other module
//! may use it.

/// Lanes per wave.
pub const WAVE_SIZE: usize = 64;
/// One vector register: a dword per lane.
pub type VReg = [u32; WAVE_SIZE];
/// Index of `a0` in [`Wave::vgpr`]: VGPRs occupy 0..256, AGPRs 256..512.
pub const AGPR_BASE: usize = 256;

/// `N` vector registers (`[register][lane]`), cache-line aligned: a wave's vector
/// file (`N` = 512: v0–v255, then a0–a255) and its scratch lanes.
///
/// Every 8-lane group of a row (32 bytes, what the fused runs and the AVX2 plans
/// move at once) then lies inside one cache line. At the heap's 16-byte alignment,
/// rows 16 or 48 bytes into a line split every other group's loads and stores
/// across two lines: with the vector files so placed, STREAM ran 2–4% slower at one
/// worker and 8–15% at two, gather 4–6%, matmul 4–12% (alternating rounds).
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Rows<const N: usize>(pub [VReg; N]);

impl<const N: usize> Rows<N> {
    /// `N` zeroed registers.
    pub fn zeroed() -> Box<Self> {
        Box::new(Rows([[0; WAVE_SIZE]; N]))
    }
}

impl<const N: usize> std::ops::Deref for Rows<N> {
    type Target = [VReg];

    fn deref(&self) -> &[VReg] {
        &self.0
    }
}

impl<const N: usize> std::ops::DerefMut for Rows<N> {
    fn deref_mut(&mut self) -> &mut [VReg] {
        &mut self.0
    }
}

/// Whether the host has AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn host_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Whether the host has AVX-512 Foundation (the 512-bit moves and compares, and
/// the mask registers, of the fused runs' private accesses).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn host_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// Whether the host has a single-rounding FMA instruction the engine may use (on
/// x86-64: FMA3, with AVX2, which the kernels that use it are compiled with).
#[inline]
pub(crate) fn host_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(target_arch = "aarch64")]
    {
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}
