//! The initial state of a wave, per AMDGPUUsage "Initial Kernel Execution
//! State" for gfx90a (and its "Kernel Prolog" sections "Flat Scratch" and
//! "Private Segment Buffer").
//!
//! This module owns the ABI: which user SGPRs the kernel descriptor enables
//! and in which order they are packed from s0, the system SGPRs from
//! `s[USER_SGPR_COUNT]`, the packed work-item ids in v0, EXEC for a partial
//! wave, MODE from `compute_pgm_rsrc1`, the register counts to clear, the
//! scratch layout (one slice per wave) and the PC at the kernel's entry. It
//! writes registers only; providing the memory behind them (LDS, scratch
//! backing) is [`super::job`]'s.

use isa::{Wave, WAVE_SIZE};

use super::DispatchRequest;
use crate::loader::KernelDescriptor;

/// SGPRs a gfx90a wave can address (s0..s101); setup writes past them are dropped.
const ADDRESSABLE_SGPRS: usize = 102;
/// Word 3 of the scratch buffer resource (V#) in the private segment buffer
/// SGPRs: 32-bit float data format, index stride 64, swizzle enabled
/// (as ROCr 5.2 builds it: `AqlQueue::InitScratchSRD` in
/// `src/core/runtime/amd_aql_queue.cpp`).
const SCRATCH_RSRC_WORD3: u32 = 0x00EA_4FAC;
/// Bit of word 1 of the scratch V# that turns swizzling on.
const SCRATCH_RSRC_SWIZZLE: u32 = 0x8000_0000;
/// Bits of each work-item id in the packed v0 (x in 0..10, y in 10..20, z in 20..30).
const WORKITEM_ID_MASK: u32 = 0x3FF;

/// What the kernel descriptor fixes for every wave of one dispatch.
pub(super) struct KernelLaunch {
    kd: KernelDescriptor,
    /// Address of the first instruction.
    entry: u64,
    /// MODE register value from rsrc1 (FP rounding, denormals, DX10 clamp, IEEE).
    mode: u32,
    /// VGPRs and AGPRs to clear (the kernel's allocation).
    pub(super) vgprs: usize,
    pub(super) agprs: usize,
}

impl KernelLaunch {
    /// The launch of the kernel described by `kd`, whose code starts at `entry`.
    pub(super) fn new(kd: KernelDescriptor, entry: u64) -> KernelLaunch {
        let rsrc1 = kd.compute_pgm_rsrc1;
        let mode = ((rsrc1 >> 12) & 0xFF) | ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9;
        let unified = (kd.granulated_workitem_vgpr_count() as usize + 1) * 8;
        let accum = kd.accum_offset_vgprs() as usize;
        KernelLaunch {
            kd,
            entry,
            mode,
            vgprs: unified.min(256),
            agprs: unified.saturating_sub(accum).min(256),
        }
    }

    /// Writes the initial registers of wave `w` of `wg` (after [`Wave::reset`]).
    pub(super) fn init_wave(
        &self,
        wave: &mut Wave,
        w: usize,
        wg: &WorkgroupShape,
        scratch: &ScratchLayout,
        req: &DispatchRequest,
    ) {
        self.user_sgprs(wave, scratch, req);
        self.system_sgprs(wave, w, wg, scratch);
        let lanes = self.workitem_ids(wave, w, wg);
        wave.set_exec(if lanes == WAVE_SIZE {
            u64::MAX
        } else {
            (1u64 << lanes) - 1
        });
        wave.mode = self.mode;
        wave.hw_id = (w as u32) & 0xF;
        wave.pc = self.entry;
    }

    /// User SGPRs (AMDGPUUsage "Initial Kernel Execution State"), packed from s0
    /// in the ABI's order.
    fn user_sgprs(&self, wave: &mut Wave, scratch: &ScratchLayout, req: &DispatchRequest) {
        let kd = &self.kd;
        let mut s = SgprWriter { wave, next: 0 };
        if kd.enable_sgpr_private_segment_buffer() {
            // Scratch V# (ROCr's `AqlQueue::InitScratchSRD`): swizzled, 4-byte
            // elements, index stride 64.
            s.put(scratch.base as u32);
            s.put(((scratch.base >> 32) as u32 & 0xFFFF) | SCRATCH_RSRC_SWIZZLE);
            s.put(scratch.len.min(u64::from(u32::MAX)) as u32);
            s.put(SCRATCH_RSRC_WORD3);
        }
        for (on, v) in [
            (kd.enable_sgpr_dispatch_ptr(), req.packet_address),
            (kd.enable_sgpr_queue_ptr(), req.queue_address),
            (kd.enable_sgpr_kernarg_segment_ptr(), req.kernarg_address),
            (kd.enable_sgpr_dispatch_id(), req.dispatch_id),
            (kd.enable_sgpr_flat_scratch_init(), scratch.base),
        ] {
            if on {
                s.put(v as u32);
                s.put((v >> 32) as u32);
            }
        }
        if kd.enable_sgpr_private_segment_size() {
            s.put(scratch.per_lane as u32);
        }
    }

    /// System SGPRs (AMDGPUUsage "Initial Kernel Execution State"), from `s[USER_SGPR_COUNT]`.
    fn system_sgprs(
        &self,
        wave: &mut Wave,
        w: usize,
        wg: &WorkgroupShape,
        scratch: &ScratchLayout,
    ) {
        let kd = &self.kd;
        let mut s = SgprWriter {
            wave,
            next: kd.user_sgpr_count() as usize,
        };
        for (on, id) in [
            (kd.enable_sgpr_workgroup_id_x(), wg.id[0]),
            (kd.enable_sgpr_workgroup_id_y(), wg.id[1]),
            (kd.enable_sgpr_workgroup_id_z(), wg.id[2]),
        ] {
            if on {
                s.put(id);
            }
        }
        if kd.enable_sgpr_workgroup_info() {
            s.put((u32::from(w == 0) << 31) | (wg.waves as u32 & 0x3F));
        }
        if kd.enable_private_segment() {
            s.put((w as u64 * scratch.per_wave) as u32);
        }
    }

    /// v0: the packed work-item ids of wave `w` (AMDGPUUsage "Initial Kernel
    /// Execution State", packed for gfx90a), 0 in lanes past the workgroup;
    /// returns the number of lanes that exist (EXEC).
    fn workitem_ids(&self, wave: &mut Wave, w: usize, wg: &WorkgroupShape) -> usize {
        let ids = self.kd.enable_vgpr_workitem_id();
        let first = w * WAVE_SIZE;
        let lanes = (wg.items - first).min(WAVE_SIZE);
        // Work-item f = first + l has x = f % sx, y = (f / sx) % sy, z = f / (sx·sy):
        // divide once for the first lane, then count.
        let (sx, sy) = (wg.size[0] as usize, wg.size[1] as usize);
        let (mut x, mut y, mut z) = (first % sx, (first / sx) % sy, first / (sx * sy));
        for l in 0..WAVE_SIZE {
            let v = if l < lanes {
                let yv = if ids >= 1 { y as u32 } else { 0 };
                let zv = if ids >= 2 { z as u32 } else { 0 };
                (x as u32 & WORKITEM_ID_MASK)
                    | (yv & WORKITEM_ID_MASK) << 10
                    | (zv & WORKITEM_ID_MASK) << 20
            } else {
                0
            };
            wave.vgpr[0][l] = v;
            x += 1;
            if x == sx {
                x = 0;
                y += 1;
                if y == sy {
                    y = 0;
                    z += 1;
                }
            }
        }
        lanes
    }
}

/// Writes consecutive SGPRs of one wave, dropping those past s101.
struct SgprWriter<'a> {
    wave: &'a mut Wave,
    next: usize,
}

impl SgprWriter<'_> {
    fn put(&mut self, v: u32) {
        if self.next < ADDRESSABLE_SGPRS {
            self.wave.sgpr[self.next] = v;
        }
        self.next += 1;
    }
}

/// One workgroup's place and size in the grid.
pub(super) struct WorkgroupShape {
    /// Workgroup id (x, y, z).
    pub(super) id: [u32; 3],
    /// Actual size in work-items per dimension (the last workgroup of a
    /// dimension may be partial).
    pub(super) size: [u32; 3],
    /// Work-items in the workgroup.
    pub(super) items: usize,
    /// Waves in the workgroup.
    pub(super) waves: usize,
}

impl WorkgroupShape {
    /// Workgroup number `linear` (x fastest) of a grid of `grid_wgs` workgroups.
    pub(super) fn new(linear: u64, grid_wgs: [u32; 3], req: &DispatchRequest) -> WorkgroupShape {
        let [nx, ny, _] = grid_wgs.map(u64::from);
        let id = [
            (linear % nx) as u32,
            ((linear / nx) % ny) as u32,
            (linear / (nx * ny)) as u32,
        ];
        let size: [u32; 3] = std::array::from_fn(|d| {
            req.workgroup_size[d].min(req.grid_size[d] - id[d] * req.workgroup_size[d])
        });
        let items = size.iter().map(|&s| s as usize).product::<usize>();
        WorkgroupShape {
            id,
            size,
            items,
            waves: items.div_ceil(WAVE_SIZE),
        }
    }
}

/// The scratch of one workgroup: a slice of `per_wave` bytes per wave in one
/// backing region at `base` of `len` bytes (AMDGPUUsage "Flat Scratch" and
/// "Private Segment Buffer").
///
/// A wave's slice is its slot of the queue's scratch buffer as ROCr lays it out
/// (`src/core/runtime/amd_aql_queue.cpp`, `AqlQueue::InitScratchSRD`): each wave
/// gets `COMPUTE_TMPRING_SIZE.WAVESIZE` KiB, the queue's bytes per lane times 64
/// rounded up to 1 KiB, and the queue's bytes per lane are at least the packet's
/// rounded up to 16 (`AqlQueue::DynamicScratchHandler` grows them to that) but
/// may be more: a queue created with `private_segment_size` UINT32_MAX, as
/// LLVM's plugins create theirs, starts at `HSA_SCRATCH_MEM` or 2048 bytes per
/// lane (`GpuAgent::QueueCreate`, `DEFAULT_SCRATCH_BYTES_PER_THREAD` in
/// `src/core/runtime/amd_gpu_agent.cpp`). Scratch past the packet's size but
/// inside the slot is then the wave's own on hardware: a kernel whose compiler
/// under-declared its private segment (LLVM 19 at -O3 on
/// `offload/test/offloading/thread_state_1.c`: 96 bytes declared, a spill at 120)
/// runs correctly there, and does here. Past the slot, hardware writes the next
/// wave's scratch; here the access faults and the dispatch reports a private
/// segment overflow ([`super::DispatchError::PrivateOverflow`]).
pub(super) struct ScratchLayout {
    /// Bytes per work-item the packet declares, rounded up to 4 (the Private
    /// Segment Size SGPR).
    pub(super) per_lane: u64,
    /// Bytes of each wave's slot (0: the packet asks for no scratch).
    pub(super) per_wave: u64,
    /// Device address of the backing (0: no scratch).
    pub(super) base: u64,
    /// Bytes of the backing (0: no scratch).
    pub(super) len: u64,
}

impl ScratchLayout {
    /// The per-lane and per-wave sizes for `private_segment_size` bytes per
    /// work-item on a queue whose slots hold `queue_per_lane` bytes per lane (0:
    /// the packet's alone, each wave's slice exactly `private_segment_size`
    /// rounded up to 4, times 64); no backing yet. A packet without scratch gets
    /// no slot.
    pub(super) fn new(private_segment_size: u32, queue_per_lane: u32) -> ScratchLayout {
        let per_lane = u64::from(private_segment_size).div_ceil(4) * 4;
        let lanes = WAVE_SIZE as u64;
        let per_wave = if private_segment_size == 0 {
            0
        } else if queue_per_lane == 0 {
            per_lane * lanes
        } else {
            let slot_lane = u64::from(private_segment_size)
                .div_ceil(16)
                .saturating_mul(16)
                .max(u64::from(queue_per_lane));
            (slot_lane * lanes).div_ceil(1024).saturating_mul(1024)
        };
        ScratchLayout {
            per_lane,
            per_wave,
            base: 0,
            len: 0,
        }
    }

    /// Where byte `address` lies for wave `w` when it is past the wave's slot: the
    /// lane and the per-lane offset a swizzled private access (4-byte elements,
    /// index stride 64, as `SCRATCH_RSRC_WORD3` says and the private aperture
    /// maps) reaches there. `None` for an address before the slot, inside it, or
    /// farther than the largest private segment a wave may have (262,128 bytes
    /// per lane, `GpuAgent::QueueCreate`'s limit, here rounded up to 256 KiB).
    pub(super) fn overflow_at(&self, w: usize, address: u64) -> Option<(u32, u64)> {
        const MOST_PER_LANE: u64 = 256 * 1024;
        if self.per_wave == 0 {
            return None;
        }
        let slot = self
            .base
            .checked_add((w as u64).checked_mul(self.per_wave)?)?;
        let rel = address.checked_sub(slot)?;
        if rel < self.per_wave || rel >= MOST_PER_LANE * WAVE_SIZE as u64 {
            return None;
        }
        let row = 4 * WAVE_SIZE as u64;
        let lane = ((rel % row) / 4) as u32;
        Some((lane, rel / row * 4 + rel % 4))
    }
}

#[cfg(test)]
mod tests {
    use super::ScratchLayout;

    /// Slots as ROCr lays out a queue's scratch (`AqlQueue::InitScratchSRD`,
    /// `GpuAgent::QueueCreate`): the larger of the queue's bytes per lane and
    /// the packet's rounded up to 16, times 64, rounded up to 1 KiB; the packet's
    /// own size rounded up to 4 alone without a queue; nothing without scratch.
    #[test]
    fn a_wave_slot_is_the_queues_scratch_per_lane_rounded_to_whole_kib() {
        let slot = |packet, queue| ScratchLayout::new(packet, queue).per_wave;
        assert_eq!(slot(96, 2048), 2048 * 64);
        assert_eq!(slot(96, 96), 96 * 64);
        assert_eq!(slot(100, 96), 7 * 1024, "112 bytes a lane, 7168 a wave");
        assert_eq!(slot(3000, 2048), 3008 * 64);
        assert_eq!(slot(0, 2048), 0);
        assert_eq!(slot(6, 0), 8 * 64);
        assert_eq!(ScratchLayout::new(6, 2048).per_lane, 8);
    }

    /// An address past wave w's slot is lane (rel mod 256) / 4 at per-lane offset
    /// (rel / 256) × 4 + rel mod 4 (4-byte elements, index stride 64); inside the
    /// slot, before it, or farther than 256 KiB a lane it is no overflow.
    #[test]
    fn an_address_past_the_slot_names_its_lane_and_offset() {
        let mut l = ScratchLayout::new(96, 96);
        l.base = 0x10_0000;
        let wave1 = l.base + l.per_wave;
        assert_eq!(
            l.overflow_at(1, wave1 + 120 / 4 * 256 + 5 * 4),
            Some((5, 120))
        );
        assert_eq!(
            l.overflow_at(1, wave1 + 24 * 256 + 63 * 4 + 2),
            Some((63, 98))
        );
        assert_eq!(
            l.overflow_at(1, wave1 + 23 * 256),
            None,
            "offset 92 is inside"
        );
        assert_eq!(l.overflow_at(1, wave1 - 1), None);
        assert_eq!(l.overflow_at(1, wave1 + 64 * 256 * 1024), None);
        assert_eq!(ScratchLayout::new(0, 2048).overflow_at(0, 0x1000), None);
    }
}
