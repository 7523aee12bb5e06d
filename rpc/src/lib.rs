//! The host side of LLVM 19 libc's GPU RPC protocol (`libc/src/__support/RPC/
//! rpc.h`, served there by `libc/utils/gpu/server/rpc_server.cpp`).
//!
//! A device program built against LLVM's GPU libc (or the project's
//! `device/` client) reaches the host through one shared buffer: per port an
//! inbox and an outbox word, a header (lane mask and opcode) and one 64-byte
//! packet per lane. The device opens a port, writes its request, flips its
//! outbox; the host sees inbox != outbox, owns the port, answers, flips back.
//!
//! - [`layout`]: byte offsets of that buffer and the bytes of the device's
//!   `rpc::Client` object (what a loader writes to `__llvm_libc_rpc_client`).
//! - [`Port`]: one open port, with `recv`/`send`/`recv_n`/`send_n` exactly as
//!   LLVM's server-side `rpc::Port<true>` sequences them.
//! - [`Server`]: the buffer, the opcode handlers for everything in
//!   `llvmlibc_rpc_opcodes.h` a host can do, user callbacks.
//! - [`Service`]: a thread running a [`Server`] that sleeps while no kernel
//!   that may call the host is in flight and polls while one is.
//!
//! The server reads nothing but its own shared buffer: the device's data
//! (strings, printf arguments, paths) arrives through the protocol, device
//! heap memory is handed out by a caller-supplied [`DeviceHeap`] (usually a
//! [`CheckedHeap`], which reports bad frees and never lets a block alias a
//! live one), and `FILE`
//! handles from the device are checked against the ones the server opened.

mod backoff;
mod heap;
pub mod layout;
mod port;
mod printf;
mod server;
mod service;
mod streams;

pub use heap::{BlockSource, CheckedHeap, QUARANTINE_BLOCKS, QUARANTINE_BYTES};
pub use layout::{client_object, Layout, CLIENT_OBJECT_SIZE};
pub use port::{Packet, Port};
pub use server::{Callback, DeviceHeap, HostAllocator, Outcome, Server, SharedAllocator};
pub use service::{Event, KernelGuard, Service};

/// Most ports a client may have (LLVM's `RPC_MAXIMUM_PORT_COUNT`).
pub const MAX_PORT_COUNT: u32 = 4096;

/// Name of the device variable holding the address of the device's
/// `rpc::Client` object (LLVM's `rpc_client_symbol_name`).
pub const CLIENT_SYMBOL: &str = "__llvm_libc_rpc_client";

/// Bytes of one lane's packet (`rpc::Buffer`: eight `u64`).
pub const PACKET_BYTES: usize = 64;

/// The project's extension of the PRINTF_TO_* reply, for `%n`: LLVM 19's
/// server ends a printf with one packet per lane holding the result in word
/// 0 and a NULL string pointer in word 1, and leaves words 2 to 7 alone.
/// This server also writes word 2: 0, or this value when the lane's format
/// had `%n` conversions with non-NULL pointers; then words 3 to 7 hold one
/// store each, in format order, up to the first 0 word (at most
/// [`PRINTF_MAX_COUNT_STORES`]): bits 0-31 the count (bytes written before
/// the `%n`), 32-47 the byte offset of the pointer in the argument block
/// the device sent, 48-55 the size of the integer to store (1, 2, 4 or 8). The device library stores
/// them (`device/src/rpc.c`, `gpu_printf_store_counts`); LLVM's own client
/// ignores the words. The value has zero bytes, which no stale string
/// bytes in the packet can match.
pub const PRINTF_COUNT_STORES: u64 = 0x7374_6f72_0000_6e25;

/// Most `%n` stores one printf reply carries (see [`PRINTF_COUNT_STORES`]);
/// later ones in the same format store nothing.
pub const PRINTF_MAX_COUNT_STORES: usize = 5;

/// Opcode numbers of `llvmlibc_rpc_opcodes.h` (LLVM 19's `rpc_opcode_t`).
pub mod opcode {
    /// No operation: the server receives once and closes.
    pub const NOOP: u16 = 0;
    /// `exit(status)` from the device.
    pub const EXIT: u16 = 1;
    /// Write bytes to the host's stdout.
    pub const WRITE_TO_STDOUT: u16 = 2;
    /// Write bytes to the host's stderr.
    pub const WRITE_TO_STDERR: u16 = 3;
    /// Write bytes to a `FILE *`.
    pub const WRITE_TO_STREAM: u16 = 4;
    /// Write bytes and a newline to stdout (`puts`).
    pub const WRITE_TO_STDOUT_NEWLINE: u16 = 5;
    /// `fread` from a `FILE *`.
    pub const READ_FROM_STREAM: u16 = 6;
    /// `fgets` from a `FILE *`.
    pub const READ_FGETS: u16 = 7;
    /// `fopen(path, mode)`.
    pub const OPEN_FILE: u16 = 8;
    /// `fclose`.
    pub const CLOSE_FILE: u16 = 9;
    /// Allocate device-visible heap memory.
    pub const MALLOC: u16 = 10;
    /// Free memory from [`MALLOC`].
    pub const FREE: u16 = 11;
    /// Call a host function pointer (not served: a device cannot name host
    /// code safely; register a callback to serve it).
    pub const HOST_CALL: u16 = 12;
    /// `abort()` from the device.
    pub const ABORT: u16 = 13;
    /// `feof`.
    pub const FEOF: u16 = 14;
    /// `ferror`.
    pub const FERROR: u16 = 15;
    /// `clearerr`.
    pub const CLEARERR: u16 = 16;
    /// `fseek`.
    pub const FSEEK: u16 = 17;
    /// `ftell`.
    pub const FTELL: u16 = 18;
    /// `fflush`.
    pub const FFLUSH: u16 = 19;
    /// `ungetc`.
    pub const UNGETC: u16 = 20;
    /// `printf` to stdout, arguments aligned as in a C struct.
    pub const PRINTF_TO_STDOUT: u16 = 21;
    /// `fprintf(stderr)`, aligned arguments.
    pub const PRINTF_TO_STDERR: u16 = 22;
    /// `fprintf(FILE *)`, aligned arguments.
    pub const PRINTF_TO_STREAM: u16 = 23;
    /// `printf` to stdout, arguments packed without padding (AMDGPU).
    pub const PRINTF_TO_STDOUT_PACKED: u16 = 24;
    /// `fprintf(stderr)`, packed arguments.
    pub const PRINTF_TO_STDERR_PACKED: u16 = 25;
    /// `fprintf(FILE *)`, packed arguments.
    pub const PRINTF_TO_STREAM_PACKED: u16 = 26;
    /// `remove(path)`.
    pub const REMOVE: u16 = 27;
}

/// Everything that can go wrong while serving the device.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A lane size other than 32 or 64 (1 is LLVM's host-only testing mode,
    /// also accepted).
    #[error("lane size {0} is not supported (expected 1, 32 or 64)")]
    InvalidLaneSize(u32),
    /// A port count of 0 or above [`MAX_PORT_COUNT`].
    #[error("port count {0} is not supported (expected 1 to 4096)")]
    InvalidPortCount(u32),
    /// The caller's allocator failed or returned unusable memory.
    #[error("shared buffer allocation of {size} bytes failed: {reason}")]
    Allocation {
        /// Bytes requested.
        size: usize,
        /// What the allocator said, or what was wrong with its memory.
        reason: String,
    },
    /// A device opened a port with an opcode nothing handles.
    #[error("port {port}: unhandled opcode {opcode}")]
    UnhandledOpcode {
        /// The port index.
        port: u32,
        /// The opcode in its header.
        opcode: u16,
    },
    /// A header lane mask that is empty or names lanes beyond the lane size.
    #[error("port {port}: bad lane mask {mask:#x} for lane size {lane_size}")]
    BadLaneMask {
        /// The port index.
        port: u32,
        /// The mask in its header.
        mask: u64,
        /// The server's lane size.
        lane_size: u32,
    },
    /// A size sent by the device that the server will not allocate or that
    /// does not fit the C type it is passed as.
    #[error("port {port}, lane {lane}: {what} size {size} does not fit (limit {limit})")]
    BadSize {
        /// The port index.
        port: u32,
        /// The lane that sent it.
        lane: u32,
        /// What the size is of.
        what: &'static str,
        /// The size sent.
        size: u64,
        /// The largest accepted.
        limit: u64,
    },
    /// A `FILE *` the device passed that is neither a standard stream nor one
    /// the server opened for it.
    #[error("port {port}, lane {lane}: unknown stream handle {handle:#x}")]
    UnknownStream {
        /// The port index.
        port: u32,
        /// The lane that sent it.
        lane: u32,
        /// The value sent.
        handle: u64,
    },
    /// The caller's device heap failed a MALLOC or FREE.
    #[error("port {port}, lane {lane}: device heap: {reason}")]
    DeviceHeap {
        /// The port index.
        port: u32,
        /// The lane that asked.
        lane: u32,
        /// What the heap said.
        reason: String,
    },
    /// A user callback failed.
    #[error("port {port}: callback for opcode {opcode}: {reason}")]
    Callback {
        /// The port index.
        port: u32,
        /// Its opcode.
        opcode: u16,
        /// What the callback said.
        reason: String,
    },
    /// Waiting for the device was cancelled ([`Server::stop_flag`]).
    #[error("port {0}: stopped while waiting for the device")]
    Stopped(u32),
}

/// Result type of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
