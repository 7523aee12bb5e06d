//! AQL packets as the packet processor sees them (HSA system architecture
//! 2.9; the packet structs of `hsa/hsa.h`).
//!
//! This module owns the one place where a 64-byte queue slot becomes a typed
//! packet: [`Packet::parse`] reads the header's type and turns the slot into a
//! [`KernelDispatch`], a barrier-AND or a barrier-OR [`Barrier`], or a
//! [`PacketError`] (vendor-specific, agent-dispatch, INVALID or unknown types,
//! a malformed kernel dispatch, a barrier-OR that can never complete). It also
//! owns the geometry rule of a kernel dispatch ([`Geometry::check`]: 1 to 3
//! dimensions, no zero size, at most [`MAX_WORKGROUP_ITEMS`] work-items per
//! workgroup and [`MAX_GROUP_SEGMENT`] bytes of LDS), which the dispatcher
//! applies again to requests built without a packet, and the HSA status each
//! packet error is reported with.
//!
//! Parsing is pure: the caller copies the slot out of the ring (the only
//! unsafe step, in [`crate::queue`]) and hands the bytes here.

use hsa_sys::*;

/// Size of one AQL packet (and of one queue slot), in bytes.
pub const PACKET_BYTES: usize = 64;
/// Dependency signals of a barrier packet.
pub const BARRIER_DEPENDENCIES: usize = 5;
/// Largest workgroup of a gfx90a kernel dispatch, in work-items.
pub const MAX_WORKGROUP_ITEMS: u64 = 1024;
/// Largest group segment (LDS) of one workgroup on gfx90a, in bytes (64 KiB).
pub const MAX_GROUP_SEGMENT: u32 = 65536;

/// Byte offset of `completion_signal` in every AQL packet type.
const COMPLETION_SIGNAL_OFFSET: usize = 56;
/// Byte offset of `dep_signal[0]` in a barrier packet.
const DEP_SIGNAL_OFFSET: usize = 8;

/// The packet type in the low 8 bits of an AQL header (`HSA_PACKET_TYPE_*`).
pub fn header_type(header: u16) -> u32 {
    u32::from(header & ((1 << HSA_PACKET_HEADER_WIDTH_TYPE) - 1))
}

/// Whether the header says the slot is not (yet) a packet (`HSA_PACKET_TYPE_INVALID`).
pub fn is_invalid(header: u16) -> bool {
    header_type(header) == HSA_PACKET_TYPE_INVALID
}

/// The launch shape of a kernel dispatch, as the packet or a direct request gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Number of dimensions (1..=3 when valid).
    pub dimensions: u32,
    /// Workgroup size in work-items per dimension.
    pub workgroup_size: [u32; 3],
    /// Grid size in work-items per dimension.
    pub grid_size: [u32; 3],
    /// LDS bytes per workgroup.
    pub group_segment_size: u32,
}

/// Why a kernel dispatch's shape cannot run on gfx90a.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidGeometry {
    /// The setup field's dimension count is not 1, 2 or 3.
    #[error("dimensions {0} not in 1..=3")]
    Dimensions(u32),
    /// A workgroup or grid dimension is 0.
    #[error("zero workgroup or grid size (workgroup {workgroup:?}, grid {grid:?})")]
    ZeroSize {
        /// Workgroup size per dimension.
        workgroup: [u32; 3],
        /// Grid size per dimension.
        grid: [u32; 3],
    },
    /// More work-items per workgroup than [`MAX_WORKGROUP_ITEMS`].
    #[error("workgroup of {0} work-items exceeds {MAX_WORKGROUP_ITEMS}")]
    WorkgroupTooLarge(u64),
    /// More LDS than [`MAX_GROUP_SEGMENT`].
    #[error("group segment of {0} bytes exceeds the 64 KiB of LDS")]
    GroupSegmentTooLarge(u32),
}

impl Geometry {
    /// Checks the shape against gfx90a's limits.
    ///
    /// # Errors
    /// The first rule broken, in the order of [`InvalidGeometry`]'s variants.
    pub fn check(&self) -> Result<(), InvalidGeometry> {
        if !(1..=3).contains(&self.dimensions) {
            return Err(InvalidGeometry::Dimensions(self.dimensions));
        }
        if self.workgroup_size.contains(&0) || self.grid_size.contains(&0) {
            return Err(InvalidGeometry::ZeroSize {
                workgroup: self.workgroup_size,
                grid: self.grid_size,
            });
        }
        let items: u64 = self.workgroup_size.iter().map(|&x| u64::from(x)).product();
        if items > MAX_WORKGROUP_ITEMS {
            return Err(InvalidGeometry::WorkgroupTooLarge(items));
        }
        if self.group_segment_size > MAX_GROUP_SEGMENT {
            return Err(InvalidGeometry::GroupSegmentTooLarge(
                self.group_segment_size,
            ));
        }
        Ok(())
    }
}

/// A validated kernel-dispatch packet (`hsa_kernel_dispatch_packet_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDispatch {
    /// Dimensions, workgroup and grid sizes, LDS bytes (checked).
    pub geometry: Geometry,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// Device address of the kernel descriptor (non-zero).
    pub kernel_object: u64,
    /// Device address of the kernarg segment.
    pub kernarg_address: u64,
    /// Handle of the completion signal (0: none).
    pub completion_signal: u64,
}

/// A barrier-AND or barrier-OR packet (`hsa_barrier_and_packet_t` / `_or_`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Barrier {
    /// Handles of the dependency signals (0: unused slot).
    pub dep_signals: [u64; BARRIER_DEPENDENCIES],
    /// Handle of the completion signal (0: none).
    pub completion_signal: u64,
}

impl Barrier {
    /// The used dependency slots: (slot index, signal handle).
    pub fn dependencies(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.dep_signals
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, h)| h != 0)
    }
}

/// One AQL packet, parsed from its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// `HSA_PACKET_TYPE_KERNEL_DISPATCH`.
    KernelDispatch(KernelDispatch),
    /// `HSA_PACKET_TYPE_BARRIER_AND`: complete once every dependency is observed at 0.
    BarrierAnd(Barrier),
    /// `HSA_PACKET_TYPE_BARRIER_OR`: complete once any dependency is observed at 0.
    BarrierOr(Barrier),
}

/// Why a published slot is not a packet the virtual device can process.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    /// A type the packet processor does not consume (vendor-specific,
    /// agent dispatch, INVALID, or an undefined value).
    #[error("unsupported packet type {0}")]
    UnsupportedType(u32),
    /// A kernel dispatch whose shape breaks gfx90a's limits.
    #[error("malformed kernel dispatch packet: {0}")]
    Geometry(#[from] InvalidGeometry),
    /// A kernel dispatch whose kernel_object is 0.
    #[error("malformed kernel dispatch packet: kernel_object is 0")]
    NullKernelObject,
    /// A barrier-OR without any dependency: it can never complete (AND over
    /// no dependency completes at once).
    #[error("barrier-OR packet without any dependency signal can never complete")]
    EmptyBarrierOr,
}

impl PacketError {
    /// The status the queue's error callback receives:
    /// `HSA_STATUS_ERROR_INVALID_PACKET_FORMAT` for every case.
    pub fn hsa_status(&self) -> hsa_status_t {
        HSA_STATUS_ERROR_INVALID_PACKET_FORMAT
    }
}

fn u16_at(b: &[u8; PACKET_BYTES], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8; PACKET_BYTES], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8; PACKET_BYTES], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

impl Packet {
    /// Parses the 64 bytes of a published slot (header included).
    ///
    /// # Errors
    /// [`PacketError`]: the type is not consumed, or the packet breaks a rule.
    pub fn parse(bytes: &[u8; PACKET_BYTES]) -> Result<Packet, PacketError> {
        let completion_signal = u64_at(bytes, COMPLETION_SIGNAL_OFFSET);
        match header_type(u16_at(bytes, 0)) {
            HSA_PACKET_TYPE_KERNEL_DISPATCH => {
                Self::kernel_dispatch(bytes, completion_signal).map(Packet::KernelDispatch)
            }
            HSA_PACKET_TYPE_BARRIER_AND => {
                Ok(Packet::BarrierAnd(Self::barrier(bytes, completion_signal)))
            }
            HSA_PACKET_TYPE_BARRIER_OR => {
                let b = Self::barrier(bytes, completion_signal);
                if b.dependencies().next().is_none() {
                    return Err(PacketError::EmptyBarrierOr);
                }
                Ok(Packet::BarrierOr(b))
            }
            other => Err(PacketError::UnsupportedType(other)),
        }
    }

    /// Handle of the packet's completion signal (0: none).
    pub fn completion_signal(&self) -> u64 {
        match self {
            Packet::KernelDispatch(k) => k.completion_signal,
            Packet::BarrierAnd(b) | Packet::BarrierOr(b) => b.completion_signal,
        }
    }

    fn kernel_dispatch(
        b: &[u8; PACKET_BYTES],
        completion_signal: u64,
    ) -> Result<KernelDispatch, PacketError> {
        let geometry = Geometry {
            // setup: dimensions in bits 0..2.
            dimensions: u32::from(u16_at(b, 2) & 0x3),
            workgroup_size: [
                u32::from(u16_at(b, 4)),
                u32::from(u16_at(b, 6)),
                u32::from(u16_at(b, 8)),
            ],
            grid_size: [u32_at(b, 12), u32_at(b, 16), u32_at(b, 20)],
            group_segment_size: u32_at(b, 28),
        };
        let k = KernelDispatch {
            geometry,
            private_segment_size: u32_at(b, 24),
            kernel_object: u64_at(b, 32),
            kernarg_address: u64_at(b, 40),
            completion_signal,
        };
        geometry.check()?;
        if k.kernel_object == 0 {
            return Err(PacketError::NullKernelObject);
        }
        Ok(k)
    }

    fn barrier(b: &[u8; PACKET_BYTES], completion_signal: u64) -> Barrier {
        Barrier {
            dep_signals: std::array::from_fn(|k| u64_at(b, DEP_SIGNAL_OFFSET + 8 * k)),
            completion_signal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch_bytes(setup: u16, wg: [u16; 3], grid: [u32; 3], lds: u32, kd: u64) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0..2].copy_from_slice(&(HSA_PACKET_TYPE_KERNEL_DISPATCH as u16).to_le_bytes());
        b[2..4].copy_from_slice(&setup.to_le_bytes());
        for d in 0..3 {
            b[4 + 2 * d..6 + 2 * d].copy_from_slice(&wg[d].to_le_bytes());
            b[12 + 4 * d..16 + 4 * d].copy_from_slice(&grid[d].to_le_bytes());
        }
        b[24..28].copy_from_slice(&16u32.to_le_bytes());
        b[28..32].copy_from_slice(&lds.to_le_bytes());
        b[32..40].copy_from_slice(&kd.to_le_bytes());
        b[40..48].copy_from_slice(&0x5000u64.to_le_bytes());
        b[56..64].copy_from_slice(&0x77u64.to_le_bytes());
        b
    }

    #[test]
    fn kernel_dispatch_fields_come_from_the_hsa_layout() {
        let b = dispatch_bytes(2, [16, 4, 1], [64, 8, 1], 256, 0x4000);
        let Ok(Packet::KernelDispatch(k)) = Packet::parse(&b) else {
            panic!("not a kernel dispatch");
        };
        assert_eq!(k.geometry.dimensions, 2);
        assert_eq!(k.geometry.workgroup_size, [16, 4, 1]);
        assert_eq!(k.geometry.grid_size, [64, 8, 1]);
        assert_eq!(k.geometry.group_segment_size, 256);
        assert_eq!(k.private_segment_size, 16);
        assert_eq!(k.kernel_object, 0x4000);
        assert_eq!(k.kernarg_address, 0x5000);
        assert_eq!(k.completion_signal, 0x77);
    }

    #[test]
    fn malformed_kernel_dispatches_are_invalid_packet_format() {
        for (b, want) in [
            (
                dispatch_bytes(0, [1, 1, 1], [1, 1, 1], 0, 8),
                PacketError::Geometry(InvalidGeometry::Dimensions(0)),
            ),
            (
                dispatch_bytes(1, [0, 1, 1], [1, 1, 1], 0, 8),
                PacketError::Geometry(InvalidGeometry::ZeroSize {
                    workgroup: [0, 1, 1],
                    grid: [1, 1, 1],
                }),
            ),
            (
                dispatch_bytes(2, [64, 32, 1], [64, 32, 1], 0, 8),
                PacketError::Geometry(InvalidGeometry::WorkgroupTooLarge(2048)),
            ),
            (
                dispatch_bytes(1, [64, 1, 1], [64, 1, 1], 65537, 8),
                PacketError::Geometry(InvalidGeometry::GroupSegmentTooLarge(65537)),
            ),
            (
                dispatch_bytes(1, [64, 1, 1], [64, 1, 1], 0, 0),
                PacketError::NullKernelObject,
            ),
        ] {
            let e = Packet::parse(&b).unwrap_err();
            assert_eq!(e, want);
            assert_eq!(e.hsa_status(), HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
        }
    }

    #[test]
    fn barriers_and_other_types() {
        let mut b = [0u8; 64];
        b[0] = HSA_PACKET_TYPE_BARRIER_OR as u8;
        assert_eq!(Packet::parse(&b), Err(PacketError::EmptyBarrierOr));
        b[0] = HSA_PACKET_TYPE_BARRIER_AND as u8;
        b[24..32].copy_from_slice(&0x99u64.to_le_bytes());
        let Ok(Packet::BarrierAnd(bar)) = Packet::parse(&b) else {
            panic!("not a barrier-AND");
        };
        assert_eq!(bar.dependencies().collect::<Vec<_>>(), vec![(2, 0x99)]);
        b[0] = HSA_PACKET_TYPE_BARRIER_OR as u8;
        assert!(matches!(Packet::parse(&b), Ok(Packet::BarrierOr(_))));
        for t in [
            HSA_PACKET_TYPE_VENDOR_SPECIFIC,
            HSA_PACKET_TYPE_AGENT_DISPATCH,
            HSA_PACKET_TYPE_INVALID,
            9,
        ] {
            b[0] = t as u8;
            assert_eq!(Packet::parse(&b), Err(PacketError::UnsupportedType(t)));
        }
    }
}
