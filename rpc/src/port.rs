//! The shared buffer and one open port, with the server-side operations of
//! LLVM 19's `rpc::Port<true>` (`rpc.h`): who owns a port follows from the
//! two mailbox bits, and every operation after the first hands the packet
//! back to the device and waits for it to return.

use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};

use crate::backoff;
use crate::layout::Layout;
use crate::{Error, Result, PACKET_BYTES};

/// One lane's 64-byte packet (`rpc::Buffer`).
pub type Packet = [u64; 8];

/// The shared buffer: memory the device also reads and writes.
pub(crate) struct Shared {
    base: NonNull<u8>,
    pub(crate) layout: Layout,
}

// SAFETY: the buffer is plain shared memory; every access goes through
// atomics (mailboxes) or volatile copies (headers, packets) of in-bounds,
// aligned locations, and only the owner of a port touches its packets.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    /// # Safety
    /// `base` must point to `layout.allocation_size()` bytes, 64-byte
    /// aligned, valid for the life of the value.
    pub(crate) unsafe fn new(base: NonNull<u8>, layout: Layout) -> Shared {
        Shared { base, layout }
    }

    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    fn mailbox(&self, offset: u64, port: u32) -> &AtomicU32 {
        debug_assert!(port < self.layout.port_count);
        let off = offset + u64::from(port) * 4;
        // SAFETY: `port < port_count` (callers iterate 0..port_count), so
        // the word lies inside the mailbox array inside the allocation; the
        // base is 64-byte aligned and the offset a multiple of 4; the device
        // accesses it atomically too.
        unsafe { &*(self.base.as_ptr().add(off as usize) as *const AtomicU32) }
    }

    /// The server's inbox word of `port` (the client's outbox).
    pub(crate) fn inbox(&self, port: u32) -> &AtomicU32 {
        self.mailbox(self.layout.client_outbox_offset(), port)
    }

    /// The server's outbox word of `port` (the client's inbox).
    pub(crate) fn outbox(&self, port: u32) -> &AtomicU32 {
        self.mailbox(self.layout.client_inbox_offset(), port)
    }

    /// `(lane mask, opcode)` of `port`'s header.
    pub(crate) fn header(&self, port: u32) -> (u64, u16) {
        let off = self.layout.header_offset() + u64::from(port) * crate::layout::HEADER_BYTES;
        // SAFETY: in bounds (port < port_count) and 8-byte aligned; the
        // owner of the port reads it after the acquire fence of its mailbox
        // load, so the device's writes are visible.
        unsafe {
            let p = self.base.as_ptr().add(off as usize);
            let mask = std::ptr::read_volatile(p as *const u64);
            let opcode = std::ptr::read_volatile(p.add(8) as *const u16);
            (mask, opcode)
        }
    }

    fn packet_ptr(&self, port: u32, lane: u32) -> *mut u64 {
        debug_assert!(port < self.layout.port_count && lane < self.layout.lane_size);
        let off = self.layout.packet_offset(port, lane);
        // SAFETY: port and lane are in range (checked by the callers), so the
        // 64 bytes lie inside the packet array of the allocation.
        unsafe { self.base.as_ptr().add(off as usize) as *mut u64 }
    }

    pub(crate) fn read_packet(&self, port: u32, lane: u32) -> Packet {
        let p = self.packet_ptr(port, lane);
        let mut out = [0u64; 8];
        for (i, w) in out.iter_mut().enumerate() {
            // SAFETY: `p` addresses 8 aligned u64s we own (see `packet_ptr`).
            *w = unsafe { std::ptr::read_volatile(p.add(i)) };
        }
        out
    }

    pub(crate) fn write_packet(&self, port: u32, lane: u32, data: &Packet) {
        let p = self.packet_ptr(port, lane);
        for (i, w) in data.iter().enumerate() {
            // SAFETY: as in `read_packet`.
            unsafe { std::ptr::write_volatile(p.add(i), *w) };
        }
    }
}

/// A port the server has opened: the device has written a request and the
/// server owns the packet. Operations run for every lane in the header's
/// lane mask, in lane order.
pub struct Port<'a> {
    shared: &'a Shared,
    stop: &'a AtomicBool,
    index: u32,
    mask: u64,
    opcode: u16,
    out: u32,
    receive: bool,
    owns_buffer: bool,
    max_transfer: u64,
}

impl<'a> Port<'a> {
    pub(crate) fn new(
        shared: &'a Shared,
        stop: &'a AtomicBool,
        index: u32,
        out: u32,
        max_transfer: u64,
    ) -> Result<Port<'a>> {
        let (mask, opcode) = shared.header(index);
        let lane_size = shared.layout.lane_size;
        let valid = if lane_size >= 64 {
            u64::MAX
        } else {
            (1u64 << lane_size) - 1
        };
        let port = Port {
            shared,
            stop,
            index,
            mask,
            opcode,
            out,
            receive: false,
            owns_buffer: true,
            max_transfer,
        };
        if mask == 0 || mask & !valid != 0 {
            return Err(Error::BadLaneMask {
                port: index,
                mask,
                lane_size,
            });
        }
        Ok(port)
    }

    /// The opcode the device opened the port with.
    pub fn opcode(&self) -> u16 {
        self.opcode
    }

    /// The port's index in the buffer.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The lanes taking part (bit `i` = lane `i`).
    pub fn lane_mask(&self) -> u64 {
        self.mask
    }

    /// Lanes of the port (the server's lane size).
    pub fn lane_size(&self) -> u32 {
        self.shared.layout.lane_size
    }

    /// The active lanes, ascending.
    pub fn lanes(&self) -> impl Iterator<Item = u32> {
        let mask = self.mask;
        (0..self.shared.layout.lane_size).filter(move |l| mask & (1u64 << l) != 0)
    }

    /// Largest single transfer (`recv_n`) the server accepts, in bytes.
    pub fn max_transfer(&self) -> u64 {
        self.max_transfer
    }

    fn invert_outbox(&mut self) {
        let inverted = u32::from(self.out == 0);
        fence(Ordering::Release);
        self.shared
            .outbox(self.index)
            .store(inverted, Ordering::Relaxed);
        self.out = inverted;
    }

    /// Waits until the device has handed the packet back (inbox != outbox).
    ///
    /// Spins (with the CPU's pause hint) for up to [`backoff::SPIN_FOR`]
    /// first: the device answers a packet in microseconds. After that it
    /// naps between polls (see `backoff` for why it never yields), and
    /// after [`backoff::NAP_FOR`] it sleeps longer between them (the device
    /// is computing, e.g. the length of a long `%s` string).
    fn wait_for_ownership(&self) -> Result<()> {
        let inbox = self.shared.inbox(self.index);
        if inbox.load(Ordering::Relaxed) != self.out {
            fence(Ordering::Acquire);
            return Ok(());
        }
        let start = std::time::Instant::now();
        loop {
            for _ in 0..backoff::SPINS_PER_CHECK {
                if inbox.load(Ordering::Relaxed) != self.out {
                    fence(Ordering::Acquire);
                    return Ok(());
                }
                std::hint::spin_loop();
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(Error::Stopped(self.index));
            }
            let waited = start.elapsed();
            if waited >= backoff::SPIN_FOR {
                backoff::pause(waited);
            }
        }
    }

    fn each_lane<F>(&mut self, mut f: F) -> Result<()>
    where
        F: FnMut(u32, &mut Packet) -> Result<()>,
    {
        let mut first_err = None;
        let mut mask = self.mask;
        while mask != 0 {
            let lane = mask.trailing_zeros();
            mask &= mask - 1;
            let before = self.shared.read_packet(self.index, lane);
            let mut p = before;
            if let Err(e) = f(lane, &mut p) {
                first_err.get_or_insert(e);
            }
            // Only what the handler changed goes back to shared memory.
            if p != before {
                self.shared.write_packet(self.index, lane, &p);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Receives one packet per active lane and gives each to `use_fn`
    /// (which may also write the packet, for `recv_and_send`). The first
    /// error of `use_fn` is returned after every lane has run.
    pub fn recv<F>(&mut self, use_fn: F) -> Result<()>
    where
        F: FnMut(u32, &mut Packet) -> Result<()>,
    {
        if self.receive {
            self.invert_outbox();
            self.owns_buffer = false;
        }
        if !self.owns_buffer {
            self.wait_for_ownership()?;
        }
        let r = self.each_lane(use_fn);
        self.receive = true;
        self.owns_buffer = true;
        r
    }

    /// Fills one packet per active lane with `fill` and hands them to the
    /// device.
    pub fn send<F>(&mut self, fill: F) -> Result<()>
    where
        F: FnMut(u32, &mut Packet) -> Result<()>,
    {
        if !self.owns_buffer {
            self.wait_for_ownership()?;
        }
        let r = self.each_lane(fill);
        self.invert_outbox();
        self.owns_buffer = false;
        self.receive = false;
        r
    }

    /// `recv(work)` then an empty `send`: the reply is what `work` wrote.
    pub fn recv_and_send<F>(&mut self, work: F) -> Result<()>
    where
        F: FnMut(u32, &mut Packet) -> Result<()>,
    {
        let r = self.recv(work);
        let s = self.send(|_, _| Ok(()));
        r.and(s)
    }

    /// Receives a variable-length byte string per active lane (LLVM's
    /// `recv_n`): the first packet holds the size then 56 bytes, each
    /// further packet 64 bytes, until the longest lane is complete. Returns
    /// one entry per lane of the lane size (`None` for inactive lanes).
    ///
    /// Errors: [`Error::BadSize`] when a lane announces more than
    /// [`Port::max_transfer`] bytes (nothing is allocated for it, and the
    /// transfer is abandoned after its first packet).
    pub fn recv_n(&mut self, what: &'static str) -> Result<Vec<Option<Vec<u8>>>> {
        let lane_size = self.lane_size() as usize;
        let mut sizes = vec![0u64; lane_size];
        let mut data: Vec<Option<Vec<u8>>> = vec![None; lane_size];
        let limit = self.max_transfer;
        let port = self.index;
        let mut err = None;
        self.recv(|lane, p| {
            let size = p[0];
            sizes[lane as usize] = size;
            if size > limit {
                err.get_or_insert(Error::BadSize {
                    port,
                    lane,
                    what,
                    size,
                    limit,
                });
                data[lane as usize] = Some(Vec::new());
                return Ok(());
            }
            let mut v = Vec::with_capacity(size as usize);
            let first = size.min(56) as usize;
            v.extend_from_slice(&packet_bytes(p)[8..8 + first]);
            data[lane as usize] = Some(v);
            Ok(())
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        let rounds_to = sizes.iter().copied().max().unwrap_or(0);
        let mut idx: u64 = 56;
        while idx < rounds_to {
            self.recv(|lane, p| {
                let size = sizes[lane as usize];
                if idx < size {
                    let len = (size - idx).min(64) as usize;
                    if let Some(v) = data[lane as usize].as_mut() {
                        v.extend_from_slice(&packet_bytes(p)[..len]);
                    }
                }
                Ok(())
            })?;
            idx += 64;
        }
        Ok(data)
    }

    /// Sends a variable-length byte string per lane (LLVM's `send_n`):
    /// `data[lane]` for each active lane (`None` or a missing entry sends
    /// 0 bytes).
    pub fn send_n(&mut self, data: &[Option<&[u8]>]) -> Result<()> {
        let get =
            |lane: u32| -> &[u8] { data.get(lane as usize).copied().flatten().unwrap_or(&[]) };
        let mut longest = 0u64;
        self.send(|lane, p| {
            let d = get(lane);
            longest = longest.max(d.len() as u64);
            p[0] = d.len() as u64;
            let n = d.len().min(56);
            let mut bytes = [0u8; PACKET_BYTES];
            bytes[..8].copy_from_slice(&p[0].to_le_bytes());
            bytes[8..8 + n].copy_from_slice(&d[..n]);
            set_packet_bytes(p, &bytes, 0, 8 + n);
            Ok(())
        })?;
        let mut idx = 56usize;
        while (idx as u64) < longest {
            self.send(|lane, p| {
                let d = get(lane);
                if idx < d.len() {
                    let len = (d.len() - idx).min(64);
                    let mut bytes = [0u8; PACKET_BYTES];
                    bytes[..len].copy_from_slice(&d[idx..idx + len]);
                    set_packet_bytes(p, &bytes, 0, len);
                }
                Ok(())
            })?;
            idx += 64;
        }
        Ok(())
    }

    /// Ends the transaction: hands the packet back if the server still owns
    /// it (LLVM's `close`). Called by the server after each handler.
    pub(crate) fn close(mut self) {
        if self.owns_buffer {
            self.invert_outbox();
        }
    }
}

/// A packet's bytes, little-endian.
pub(crate) fn packet_bytes(p: &Packet) -> [u8; PACKET_BYTES] {
    let mut out = [0u8; PACKET_BYTES];
    for (i, w) in p.iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// Writes `bytes[from..to]` into the packet, keeping the other bytes.
fn set_packet_bytes(p: &mut Packet, bytes: &[u8; PACKET_BYTES], from: usize, to: usize) {
    let mut cur = packet_bytes(p);
    cur[from..to].copy_from_slice(&bytes[from..to]);
    for (i, w) in p.iter_mut().enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(&cur[i * 8..i * 8 + 8]);
        *w = u64::from_le_bytes(b);
    }
}
