//! Byte layout of the shared RPC buffer and of the device's client object,
//! as LLVM 19's `rpc::Process` computes them (`rpc.h`).
//!
//! Buffer, from its base (`N` ports, `L` lanes):
//!
//! | bytes | content |
//! | --- | --- |
//! | `[0, 4N)` | client inbox = server outbox, one `u32` per port |
//! | `[4N, 8N)` | client outbox = server inbox |
//! | `header_offset` = `align8(8N)`, `16N` bytes | per port `{ u64 lane mask; u16 opcode }` |
//! | `buffer_offset` = `align64(header_offset + 16N)`, `64·L·N` bytes | per port, per lane one 64-byte packet |

/// Size of one header (`rpc::Header`: `u64` mask, `u16` opcode, padded to 16).
pub const HEADER_BYTES: u64 = 16;

/// Size of the device's `rpc::Client` object (`Process<false>`): port count,
/// four pointers, and a 4096-bit lock array.
pub const CLIENT_OBJECT_SIZE: usize = 8 + 4 * 8 + (crate::MAX_PORT_COUNT as usize / 32) * 4;

/// Offsets of the shared buffer for a port count and lane size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Number of ports, 1 to [`crate::MAX_PORT_COUNT`].
    pub port_count: u32,
    /// Lanes per port: the wavefront size (32 or 64), or 1.
    pub lane_size: u32,
}

const fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

impl Layout {
    /// Bytes of one mailbox array (`4 * port_count`).
    pub const fn mailbox_bytes(&self) -> u64 {
        self.port_count as u64 * 4
    }
    /// Offset of the client's inbox (the server's outbox): 0.
    pub const fn client_inbox_offset(&self) -> u64 {
        0
    }
    /// Offset of the client's outbox (the server's inbox).
    pub const fn client_outbox_offset(&self) -> u64 {
        self.mailbox_bytes()
    }
    /// Offset of the header array.
    pub const fn header_offset(&self) -> u64 {
        align_up(2 * self.mailbox_bytes(), 8)
    }
    /// Offset of the packet array.
    pub const fn buffer_offset(&self) -> u64 {
        align_up(
            self.header_offset() + self.port_count as u64 * HEADER_BYTES,
            64,
        )
    }
    /// Offset of lane `lane`'s packet of port `port`.
    pub const fn packet_offset(&self, port: u32, lane: u32) -> u64 {
        self.buffer_offset() + (port as u64 * self.lane_size as u64 + lane as u64) * 64
    }
    /// Total bytes to allocate (LLVM's `Server::allocation_size`).
    pub const fn allocation_size(&self) -> u64 {
        self.buffer_offset() + self.port_count as u64 * self.lane_size as u64 * 64
    }
}

/// The bytes of the device's `rpc::Client` for a buffer at device address
/// `base`: what a loader writes to the object `__llvm_libc_rpc_client` points
/// to. Little-endian, 64-bit pointers, lock bits all clear.
pub fn client_object(layout: Layout, base: u64) -> [u8; CLIENT_OBJECT_SIZE] {
    let mut out = [0u8; CLIENT_OBJECT_SIZE];
    out[0..4].copy_from_slice(&layout.port_count.to_le_bytes());
    let fields = [
        base + layout.client_inbox_offset(),
        base + layout.client_outbox_offset(),
        base + layout.header_offset(),
        base + layout.buffer_offset(),
    ];
    for (i, f) in fields.iter().enumerate() {
        out[8 + 8 * i..16 + 8 * i].copy_from_slice(&f.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_llvm_formulas() {
        // 4096 ports, wave64: mailboxes 16 KiB each, headers 64 KiB.
        let l = Layout {
            port_count: 4096,
            lane_size: 64,
        };
        assert_eq!(l.header_offset(), 32768);
        assert_eq!(l.buffer_offset(), 32768 + 65536);
        assert_eq!(l.allocation_size(), 98304 + 4096 * 64 * 64);
        // 3 ports: 24 bytes of mailboxes, headers at 24, packets at 128.
        let l = Layout {
            port_count: 3,
            lane_size: 32,
        };
        assert_eq!(l.header_offset(), 24);
        assert_eq!(l.buffer_offset(), 128);
        assert_eq!(CLIENT_OBJECT_SIZE, 552);
    }
}
