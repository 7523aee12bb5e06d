//! One kernel dispatch as the dispatcher takes it: [`DispatchRequest`], read from
//! an AQL kernel-dispatch packet.

use crate::aql::{Geometry, KernelDispatch};

/// One kernel dispatch, from an AQL kernel-dispatch packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchRequest {
    /// Workgroup size in work-items per dimension (unused dimensions 1).
    pub workgroup_size: [u32; 3],
    /// Grid size in work-items per dimension (unused dimensions 1).
    pub grid_size: [u32; 3],
    /// Number of dimensions (1..=3).
    pub dimensions: u32,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// Scratch bytes per work-item that the queue's scratch slot of each wave
    /// holds ([`crate::queue::Queue::scratch_slot`]: at least the packet's, as
    /// ROCr sizes it); 0 gives each wave just the packet's
    /// ([`super::wave_setup::ScratchLayout`]).
    pub queue_scratch_per_lane: u32,
    /// LDS bytes per workgroup (static + dynamic).
    pub group_segment_size: u32,
    /// Device address of the kernel descriptor.
    pub kernel_object: u64,
    /// Device address of the kernarg segment.
    pub kernarg_address: u64,
    /// Address of the AQL packet in the queue ring (Dispatch Ptr).
    pub packet_address: u64,
    /// Address of the queue's amd_queue_t (Queue Ptr).
    pub queue_address: u64,
    /// Dispatch id (the packet's queue index).
    pub dispatch_id: u64,
}

impl DispatchRequest {
    /// The request of kernel-dispatch `packet`, which sits at `packet_address`
    /// in the ring of the queue at `queue_address` with index `dispatch_id`
    /// (with no queue scratch slot: the queue sets `queue_scratch_per_lane`).
    pub fn from_packet(
        packet: &KernelDispatch,
        packet_address: u64,
        queue_address: u64,
        dispatch_id: u64,
    ) -> DispatchRequest {
        let g = &packet.geometry;
        DispatchRequest {
            workgroup_size: g.workgroup_size,
            grid_size: g.grid_size,
            dimensions: g.dimensions,
            private_segment_size: packet.private_segment_size,
            queue_scratch_per_lane: 0,
            group_segment_size: g.group_segment_size,
            kernel_object: packet.kernel_object,
            kernarg_address: packet.kernarg_address,
            packet_address,
            queue_address,
            dispatch_id,
        }
    }

    /// The launch shape, for [`Geometry::check`].
    pub fn geometry(&self) -> Geometry {
        Geometry {
            dimensions: self.dimensions,
            workgroup_size: self.workgroup_size,
            grid_size: self.grid_size,
            group_segment_size: self.group_segment_size,
        }
    }
}
