//! A Rust model of LLVM 19's device-side RPC client (`rpc::Client`,
//! `Port<false>` in `libc/src/__support/RPC/rpc.h`), driving the server
//! through the shared buffer exactly as the device does: a whole wave's
//! lanes run in one thread, each operation visiting the lanes of the mask.
//! The client finds the buffer only through the bytes of
//! `Server::client_object`, as the device does.
#![allow(dead_code)]

use std::sync::atomic::{fence, AtomicU32, Ordering};

pub type Packet = [u64; 8];

/// The device's view of the buffer, decoded from the client object bytes.
pub struct Client {
    port_count: u32,
    inbox: u64,
    outbox: u64,
    header: u64,
    packet: u64,
    lane_size: u32,
    lock: Vec<AtomicU32>,
}

// SAFETY: the addresses point into the server's live buffer, accessed
// with atomics and volatile copies only, as the device does.
unsafe impl Send for Client {}
// SAFETY: as above.
unsafe impl Sync for Client {}

fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

impl Client {
    pub fn from_object(bytes: &[u8], lane_size: u32) -> Client {
        let port_count = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
        Client {
            port_count,
            inbox: word(bytes, 8),
            outbox: word(bytes, 16),
            header: word(bytes, 24),
            packet: word(bytes, 32),
            lane_size,
            lock: (0..128).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    fn mailbox(&self, base: u64, i: u32) -> &AtomicU32 {
        // SAFETY: `i < port_count`; the mailbox word lies in the server's
        // buffer, 4-byte aligned, alive while the server is.
        unsafe { &*((base + 4 * i as u64) as *const AtomicU32) }
    }

    fn packet_ptr(&self, port: u32, lane: u32) -> *mut u64 {
        (self.packet + (port as u64 * self.lane_size as u64 + lane as u64) * 64) as *mut u64
    }

    /// Opens a port for `opcode` with lanes `mask`, starting the search at
    /// `start` (the device uses its cluster id).
    pub fn open(&self, opcode: u16, mask: u64, start: u32) -> ClientPort<'_> {
        let mut index = start % self.port_count;
        loop {
            let slot = (index / 32) as usize;
            let bit = 1u32 << (index % 32);
            let before = self.lock[slot].fetch_or(bit, Ordering::Relaxed) & bit;
            if before == 0 {
                fence(Ordering::Acquire);
                let i = self.mailbox(self.inbox, index).load(Ordering::Relaxed);
                let o = self.mailbox(self.outbox, index).load(Ordering::Relaxed);
                if i == o {
                    // SAFETY: the header of a port this client just locked.
                    unsafe {
                        let h = (self.header + 16 * index as u64) as *mut u8;
                        std::ptr::write_volatile(h.add(8) as *mut u16, opcode);
                        std::ptr::write_volatile(h as *mut u64, mask);
                    }
                    return ClientPort {
                        c: self,
                        index,
                        mask,
                        out: o,
                        receive: false,
                        owns: true,
                    };
                }
                fence(Ordering::Release);
                self.lock[slot].fetch_and(!bit, Ordering::Relaxed);
            }
            index = (index + 1) % self.port_count;
            std::thread::yield_now();
        }
    }

    /// Writes a raw header for a port without any protocol (malformed
    /// request tests): sets mask, opcode and flips the client outbox.
    pub fn raw_request(&self, index: u32, opcode: u16, mask: u64, packets: &[(u32, Packet)]) {
        // SAFETY: header and packets of an in-range port and lane of the
        // live buffer (the tests pass valid indices).
        unsafe {
            let h = (self.header + 16 * index as u64) as *mut u8;
            std::ptr::write_volatile(h.add(8) as *mut u16, opcode);
            std::ptr::write_volatile(h as *mut u64, mask);
            for (lane, p) in packets {
                let ptr = self.packet_ptr(index, *lane);
                for (k, w) in p.iter().enumerate() {
                    std::ptr::write_volatile(ptr.add(k), *w);
                }
            }
        }
        let ob = self.mailbox(self.outbox, index);
        fence(Ordering::Release);
        ob.store(ob.load(Ordering::Relaxed) ^ 1, Ordering::Relaxed);
    }
}

pub struct ClientPort<'a> {
    c: &'a Client,
    index: u32,
    mask: u64,
    out: u32,
    receive: bool,
    owns: bool,
}

impl ClientPort<'_> {
    fn lanes(&self) -> Vec<u32> {
        (0..self.c.lane_size)
            .filter(|l| self.mask & (1 << l) != 0)
            .collect()
    }

    fn invert(&mut self) {
        self.out ^= 1;
        fence(Ordering::Release);
        self.c
            .mailbox(self.c.outbox, self.index)
            .store(self.out, Ordering::Relaxed);
    }

    fn wait(&self) {
        while self
            .c
            .mailbox(self.c.inbox, self.index)
            .load(Ordering::Relaxed)
            != self.out
        {
            std::thread::yield_now();
        }
        fence(Ordering::Acquire);
    }

    fn visit(&mut self, mut f: impl FnMut(u32, &mut Packet)) {
        for lane in self.lanes() {
            let ptr = self.c.packet_ptr(self.index, lane);
            let mut p = [0u64; 8];
            for (k, w) in p.iter_mut().enumerate() {
                // SAFETY: a lane packet of the locked port, 8 aligned words.
                *w = unsafe { std::ptr::read_volatile(ptr.add(k)) };
            }
            f(lane, &mut p);
            for (k, w) in p.iter().enumerate() {
                // SAFETY: as above.
                unsafe { std::ptr::write_volatile(ptr.add(k), *w) };
            }
        }
    }

    pub fn send(&mut self, f: impl FnMut(u32, &mut Packet)) {
        if !self.owns {
            self.wait();
        }
        self.visit(f);
        self.invert();
        self.owns = false;
        self.receive = false;
    }

    pub fn recv(&mut self, f: impl FnMut(u32, &mut Packet)) {
        if self.receive {
            self.invert();
            self.owns = false;
        }
        if !self.owns {
            self.wait();
        }
        self.visit(f);
        self.receive = true;
        self.owns = true;
    }

    pub fn send_n(&mut self, data: &dyn Fn(u32) -> Vec<u8>) {
        let mut longest = 0usize;
        self.send(|lane, p| {
            let d = data(lane);
            longest = longest.max(d.len());
            let mut bytes = [0u8; 64];
            bytes[..8].copy_from_slice(&(d.len() as u64).to_le_bytes());
            let n = d.len().min(56);
            bytes[8..8 + n].copy_from_slice(&d[..n]);
            set(p, &bytes);
        });
        let mut idx = 56;
        while idx < longest {
            self.send(|lane, p| {
                let d = data(lane);
                if idx < d.len() {
                    let n = (d.len() - idx).min(64);
                    let mut bytes = get(p);
                    bytes[..n].copy_from_slice(&d[idx..idx + n]);
                    set(p, &bytes);
                }
            });
            idx += 64;
        }
    }

    pub fn recv_n(&mut self) -> Vec<Vec<u8>> {
        let n = self.c.lane_size as usize;
        let mut out = vec![Vec::new(); n];
        let mut sizes = vec![0usize; n];
        self.recv(|lane, p| {
            let size = p[0] as usize;
            sizes[lane as usize] = size;
            out[lane as usize].extend_from_slice(&get(p)[8..8 + size.min(56)]);
        });
        let longest = sizes.iter().copied().max().unwrap_or(0);
        let mut idx = 56;
        while idx < longest {
            self.recv(|lane, p| {
                let size = sizes[lane as usize];
                if idx < size {
                    let m = (size - idx).min(64);
                    out[lane as usize].extend_from_slice(&get(p)[..m]);
                }
            });
            idx += 64;
        }
        out
    }

    pub fn close(self) {
        fence(Ordering::Release);
        let slot = (self.index / 32) as usize;
        self.c.lock[slot].fetch_and(!(1u32 << (self.index % 32)), Ordering::Relaxed);
    }
}

pub fn get(p: &Packet) -> [u8; 64] {
    let mut b = [0u8; 64];
    for (i, w) in p.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    b
}

pub fn set(p: &mut Packet, b: &[u8; 64]) {
    for (i, w) in p.iter_mut().enumerate() {
        *w = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    }
}

/// Bytes of a NUL-terminated C string.
pub fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// The device's printf transaction (LLVM 19 `vfprintf_impl`) for one wave:
/// `args(lane)` is the argument block, `strings(lane, addr)` the text behind
/// a `%s` address. Returns each lane's result.
pub fn client_printf(
    c: &Client,
    opcode: u16,
    mask: u64,
    stream: Option<u64>,
    format: &dyn Fn(u32) -> Vec<u8>,
    args: &dyn Fn(u32) -> Vec<u8>,
    strings: &dyn Fn(u32, u64) -> Vec<u8>,
) -> Vec<u32> {
    let mut port = c.open(opcode, mask, 0);
    if let Some(s) = stream {
        port.send(|_, p| p[0] = s);
    }
    port.send_n(format);
    let n = c.lane_size as usize;
    let mut sizes = vec![0usize; n];
    port.recv(|lane, p| sizes[lane as usize] = p[0] as usize);
    port.send_n(&|lane| {
        let mut a = args(lane);
        a.resize(sizes[lane as usize], 0);
        a
    });
    let mut ret = vec![0u32; n];
    loop {
        let mut addrs = vec![0u64; n];
        port.recv(|lane, p| {
            ret[lane as usize] = p[0] as u32;
            addrs[lane as usize] = p[1];
        });
        if addrs.iter().all(|&a| a == 0) {
            break;
        }
        port.send_n(&|lane| {
            let a = addrs[lane as usize];
            if a == 0 {
                Vec::new()
            } else {
                strings(lane, a)
            }
        });
    }
    port.close();
    ret
}
