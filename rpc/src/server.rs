//! The server: the shared buffer, the built-in opcode handlers and the user
//! callbacks (LLVM 19 `rpc_server.cpp`, `handle_server_impl`, plus the
//! MALLOC/FREE callbacks its loaders register).

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CString};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::layout::{client_object, Layout, CLIENT_OBJECT_SIZE};
use crate::port::{packet_bytes, Port, Shared};
use crate::printf::{self, ArgBytes, ArgCounter, Section};
use crate::streams::{c_stderr, c_stdout, Streams};
use crate::{opcode as op, Error, Result, MAX_PORT_COUNT};

/// Memory shared by host and device for the RPC buffer (in practice HSA
/// fine-grained system memory the GPU agent was given access to).
pub trait SharedAllocator: Send {
    /// `size` bytes at an address both sides use, 64-byte aligned (HSA pool
    /// blocks are page aligned). Errors: the allocator's reason.
    fn allocate(&mut self, size: usize) -> std::result::Result<NonNull<u8>, String>;
    /// Releases a block from [`SharedAllocator::allocate`].
    ///
    /// # Safety
    /// `ptr` must come from `allocate(size)` on this allocator and not be
    /// used afterwards.
    unsafe fn deallocate(&mut self, ptr: NonNull<u8>, size: usize);
}

/// Plain host memory, for tests and host-only clients.
#[derive(Debug, Default)]
pub struct HostAllocator;

impl SharedAllocator for HostAllocator {
    fn allocate(&mut self, size: usize) -> std::result::Result<NonNull<u8>, String> {
        let layout =
            std::alloc::Layout::from_size_align(size.max(1), 4096).map_err(|e| e.to_string())?;
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(p).ok_or_else(|| "out of memory".to_string())
    }
    unsafe fn deallocate(&mut self, ptr: NonNull<u8>, size: usize) {
        if let Ok(layout) = std::alloc::Layout::from_size_align(size.max(1), 4096) {
            // SAFETY: per the trait contract, allocated above with this layout.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }
}

/// Device-visible heap memory for MALLOC and FREE (the loader: the GPU's
/// coarse-grained pool, made accessible to the agent).
pub trait DeviceHeap: Send {
    /// A block of `size` bytes; its device address.
    fn malloc(&mut self, size: u64) -> std::result::Result<u64, String>;
    /// Releases a block from [`DeviceHeap::malloc`] (the heap must reject
    /// addresses it did not hand out).
    fn free(&mut self, address: u64) -> std::result::Result<(), String>;
}

/// A user handler for an opcode: runs the whole transaction on the port.
pub type Callback = Box<dyn FnMut(&mut Port<'_>) -> std::result::Result<(), String> + Send>;

/// What one pass over the ports ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `n` requests were served (0: nothing was pending).
    Served(usize),
    /// The device called `exit(status)`; the caller should end the process
    /// with it (LLVM's server calls `exit` itself).
    Exit(i32),
    /// The device called `abort()`.
    Abort,
}

/// The host side of one client's RPC buffer.
pub struct Server {
    shared: Shared,
    allocator: Box<dyn SharedAllocator>,
    size: usize,
    stop: Arc<AtomicBool>,
    callbacks: HashMap<u16, Callback>,
    heap: Option<Box<dyn DeviceHeap>>,
    streams: Streams,
    max_transfer: u64,
    next_port: u32,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("layout", &self.shared.layout)
            .field("buffer", &self.shared.base())
            .finish()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: the block came from this allocator with this size and the
        // server is the only user left on the host.
        unsafe { self.allocator.deallocate(self.shared.base(), self.size) };
    }
}

impl Server {
    /// Allocates the buffer for `port_count` ports of `lane_size` lanes
    /// (LLVM's `rpc_server_init`) and zeroes its mailboxes and headers
    /// (`Layout::buffer_offset` bytes: 96 KiB for 4096 ports). The packets
    /// (16 MiB for 4096 ports of 64 lanes) are left as the allocator gave
    /// them: the server reads a lane's packet only after the device wrote
    /// it, and touching them all made every start pay for their pages (a
    /// quarter of `amdhsa-loader`'s start-up on the virtual device).
    ///
    /// Errors: [`Error::InvalidLaneSize`], [`Error::InvalidPortCount`],
    /// [`Error::Allocation`] (also for a block that is not 64-byte aligned).
    pub fn new(
        port_count: u32,
        lane_size: u32,
        mut allocator: Box<dyn SharedAllocator>,
    ) -> Result<Server> {
        if !matches!(lane_size, 1 | 32 | 64) {
            return Err(Error::InvalidLaneSize(lane_size));
        }
        if port_count == 0 || port_count > MAX_PORT_COUNT {
            return Err(Error::InvalidPortCount(port_count));
        }
        let layout = Layout {
            port_count,
            lane_size,
        };
        let size = layout.allocation_size() as usize;
        let base = allocator
            .allocate(size)
            .map_err(|reason| Error::Allocation { size, reason })?;
        if !(base.as_ptr() as usize).is_multiple_of(64) {
            // SAFETY: just allocated with this size.
            unsafe { allocator.deallocate(base, size) };
            return Err(Error::Allocation {
                size,
                reason: "block is not 64-byte aligned".into(),
            });
        }
        let control = (layout.buffer_offset() as usize).min(size);
        // SAFETY: `control` ≤ `size` writable bytes at `base`, not yet shared.
        unsafe { std::ptr::write_bytes(base.as_ptr(), 0, control) };
        // SAFETY: `base` holds `allocation_size()` bytes, 64-byte aligned,
        // owned by the returned server until it drops.
        let shared = unsafe { Shared::new(base, layout) };
        Ok(Server {
            shared,
            allocator,
            size,
            stop: Arc::new(AtomicBool::new(false)),
            callbacks: HashMap::new(),
            heap: None,
            streams: Streams::default(),
            max_transfer: 1 << 30,
            next_port: 0,
        })
    }

    /// The buffer's layout.
    pub fn layout(&self) -> Layout {
        self.shared.layout
    }

    /// Address of the shared buffer (the same for host and device).
    pub fn buffer_address(&self) -> u64 {
        self.shared.base().as_ptr() as u64
    }

    /// The bytes of the device's `rpc::Client` for this buffer: write them
    /// to the object `__llvm_libc_rpc_client` points to.
    pub fn client_object(&self) -> [u8; CLIENT_OBJECT_SIZE] {
        client_object(self.shared.layout, self.buffer_address())
    }

    /// A flag that, once set, makes a server waiting for the device inside
    /// a transaction give up with [`Error::Stopped`] (e.g. the kernel died).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Largest single transfer accepted from the device (default 1 GiB).
    pub fn set_max_transfer(&mut self, bytes: u64) {
        self.max_transfer = bytes;
    }

    /// Serves MALLOC and FREE from `heap`.
    pub fn set_device_heap(&mut self, heap: Box<dyn DeviceHeap>) {
        self.heap = Some(heap);
    }

    /// Serves `opcode` with `callback` (opcodes the server handles itself
    /// are not overridden, as in LLVM's server; MALLOC/FREE only when no
    /// device heap is set).
    pub fn register_callback(&mut self, opcode: u16, callback: Callback) {
        self.callbacks.insert(opcode, callback);
    }

    /// Serves every port with a pending request once, in index order
    /// (LLVM's `rpc_handle_server`). Stops early at EXIT or ABORT.
    ///
    /// Errors: a malformed request (bad lane mask, unhandled opcode, size
    /// that does not fit, unknown stream) or a failing heap or callback; the
    /// port is handed back to the device first.
    pub fn handle_pending(&mut self) -> Result<Outcome> {
        let mut served = 0;
        let count = self.shared.layout.port_count;
        let start = self.next_port % count;
        // Two straight runs, from where the last pass stopped to the end
        // and then from 0, rather than one run with a wrapping index: the
        // scan is most of what an idle poll costs (4096 ports).
        for run in [start..count, 0..start] {
            for i in run {
                let inbox = self.shared.inbox(i).load(Ordering::Relaxed);
                let out = self.shared.outbox(i).load(Ordering::Relaxed);
                if inbox == out {
                    continue;
                }
                std::sync::atomic::fence(Ordering::Acquire);
                served += 1;
                self.next_port = i + 1;
                match self.serve(i, out)? {
                    Outcome::Served(_) => {}
                    other => return Ok(other),
                }
            }
        }
        Ok(Outcome::Served(served))
    }

    fn serve(&mut self, index: u32, out: u32) -> Result<Outcome> {
        let shared = &self.shared;
        let stop = &*self.stop;
        let mut port = match Port::new(shared, stop, index, out, self.max_transfer) {
            Ok(p) => p,
            Err(e) => {
                // Hand the port back so the device is not blocked forever.
                let inverted = u32::from(out == 0);
                shared.outbox(index).store(inverted, Ordering::Release);
                return Err(e);
            }
        };
        let r = handle(
            &mut port,
            &mut self.streams,
            &mut self.heap,
            &mut self.callbacks,
        );
        port.close();
        r
    }
}

fn sext(v: i64) -> u64 {
    v as u64
}

fn handle(
    port: &mut Port<'_>,
    streams: &mut Streams,
    heap: &mut Option<Box<dyn DeviceHeap>>,
    callbacks: &mut HashMap<u16, Callback>,
) -> Result<Outcome> {
    let opcode = port.opcode();
    let pi = port.index();
    let lane_size = port.lane_size() as usize;
    match opcode {
        op::WRITE_TO_STREAM
        | op::WRITE_TO_STDERR
        | op::WRITE_TO_STDOUT
        | op::WRITE_TO_STDOUT_NEWLINE => {
            let mut files = vec![std::ptr::null_mut::<libc::FILE>(); lane_size];
            match opcode {
                op::WRITE_TO_STREAM => port.recv(|lane, p| {
                    files[lane as usize] = streams.resolve(p[0], pi, lane)?;
                    Ok(())
                })?,
                op::WRITE_TO_STDERR => files.fill(c_stderr()),
                _ => files.fill(c_stdout()),
            }
            let data = port.recv_n("write")?;
            port.send(|lane, p| {
                let file = files[lane as usize];
                let bytes = data[lane as usize].as_deref().unwrap_or(&[]);
                let mut n = c_write(file, bytes);
                if opcode == op::WRITE_TO_STDOUT_NEWLINE && n == bytes.len() as u64 {
                    n += c_write(file, b"\n");
                }
                p[0] = n;
                Ok(())
            })?;
        }
        op::READ_FROM_STREAM => {
            let mut data: Vec<Option<Vec<u8>>> = vec![None; lane_size];
            let limit = port.max_transfer();
            port.recv(|lane, p| {
                let size = p[0];
                if size > limit {
                    return Err(Error::BadSize {
                        port: pi,
                        lane,
                        what: "fread",
                        size,
                        limit,
                    });
                }
                let file = streams.resolve(p[1], pi, lane)?;
                let mut buf = vec![0u8; size as usize];
                // SAFETY: `buf` has `size` writable bytes; `file` is a live
                // stream (standard or opened by this server).
                let got =
                    unsafe { libc::fread(buf.as_mut_ptr() as *mut c_void, 1, buf.len(), file) };
                buf.truncate(got);
                data[lane as usize] = Some(buf);
                Ok(())
            })?;
            let views: Vec<Option<&[u8]>> = data.iter().map(|d| d.as_deref()).collect();
            port.send_n(&views)?;
            port.send(|lane, p| {
                p[0] = data[lane as usize].as_ref().map_or(0, |d| d.len() as u64);
                Ok(())
            })?;
        }
        op::READ_FGETS => {
            let mut data: Vec<Option<Vec<u8>>> = vec![None; lane_size];
            port.recv(|lane, p| {
                let size = p[0];
                let limit = i32::MAX as u64;
                if size > limit {
                    return Err(Error::BadSize {
                        port: pi,
                        lane,
                        what: "fgets",
                        size,
                        limit,
                    });
                }
                let file = streams.resolve(p[1], pi, lane)?;
                let mut buf = vec![0u8; size as usize];
                let got = if size == 0 {
                    std::ptr::null_mut()
                } else {
                    // SAFETY: `buf` has `size` bytes (≤ INT_MAX); live stream.
                    unsafe { libc::fgets(buf.as_mut_ptr() as *mut c_char, size as i32, file) }
                };
                data[lane as usize] = Some(if got.is_null() {
                    Vec::new()
                } else {
                    let len = printf::c_string(&buf).len();
                    buf.truncate(len + 1);
                    buf
                });
                Ok(())
            })?;
            let views: Vec<Option<&[u8]>> = data.iter().map(|d| d.as_deref()).collect();
            port.send_n(&views)?;
        }
        op::OPEN_FILE => {
            let paths = port.recv_n("path")?;
            port.recv_and_send(|lane, p| {
                let path = c_string_of(paths[lane as usize].as_deref().unwrap_or(&[]));
                let mode_bytes = packet_bytes(p);
                let mode = c_string_of(&mode_bytes);
                // SAFETY: both are NUL-terminated C strings.
                let file = unsafe { libc::fopen(path.as_ptr(), mode.as_ptr()) };
                streams.insert(file);
                p[0] = file as usize as u64;
                Ok(())
            })?;
        }
        op::CLOSE_FILE => {
            port.recv_and_send(|lane, p| {
                let file = streams.resolve(p[0], pi, lane)?;
                streams.remove(file);
                // SAFETY: a live stream, forgotten above so never used again.
                p[0] = sext(i64::from(unsafe { libc::fclose(file) }));
                Ok(())
            })?;
        }
        op::EXIT => {
            port.recv_and_send(|_, _| Ok(()))?;
            let mut status = 0i32;
            port.recv(|_, p| {
                status = p[0] as u32 as i32;
                Ok(())
            })?;
            return Ok(Outcome::Exit(status));
        }
        op::ABORT => {
            port.recv_and_send(|_, _| Ok(()))?;
            port.recv(|_, _| Ok(()))?;
            return Ok(Outcome::Abort);
        }
        op::FEOF | op::FERROR | op::CLEARERR | op::FSEEK | op::FTELL | op::FFLUSH | op::UNGETC => {
            port.recv_and_send(|lane, p| {
                let stream_word = if opcode == op::UNGETC { p[1] } else { p[0] };
                let file = streams.resolve(stream_word, pi, lane)?;
                // SAFETY: `file` is a live stream; the other arguments are
                // plain values.
                p[0] = unsafe {
                    match opcode {
                        op::FEOF => sext(i64::from(libc::feof(file))),
                        op::FERROR => sext(i64::from(libc::ferror(file))),
                        op::CLEARERR => {
                            libc::clearerr(file);
                            p[0]
                        }
                        op::FSEEK => sext(i64::from(libc::fseek(file, p[1] as i64, p[2] as i32))),
                        op::FTELL => sext(libc::ftell(file)),
                        op::FFLUSH => sext(i64::from(libc::fflush(file))),
                        _ => sext(i64::from(libc::ungetc(p[0] as i32, file))),
                    }
                };
                Ok(())
            })?;
        }
        op::PRINTF_TO_STDOUT
        | op::PRINTF_TO_STDERR
        | op::PRINTF_TO_STREAM
        | op::PRINTF_TO_STDOUT_PACKED
        | op::PRINTF_TO_STDERR_PACKED
        | op::PRINTF_TO_STREAM_PACKED => handle_printf(port, streams)?,
        op::REMOVE => {
            let paths = port.recv_n("path")?;
            port.send(|lane, p| {
                let path = c_string_of(paths[lane as usize].as_deref().unwrap_or(&[]));
                // SAFETY: NUL-terminated path.
                p[0] = sext(i64::from(unsafe { libc::remove(path.as_ptr()) }));
                Ok(())
            })?;
        }
        op::NOOP => port.recv(|_, _| Ok(()))?,
        op::MALLOC | op::FREE if heap.is_some() => {
            let Some(heap) = heap.as_mut() else {
                return Err(Error::UnhandledOpcode { port: pi, opcode });
            };
            port.recv_and_send(|lane, p| {
                let r = if opcode == op::MALLOC {
                    heap.malloc(p[0]).map(|a| p[0] = a)
                } else {
                    heap.free(p[0])
                };
                r.map_err(|reason| Error::DeviceHeap {
                    port: pi,
                    lane,
                    reason,
                })
            })?;
        }
        _ => {
            let Some(cb) = callbacks.get_mut(&opcode) else {
                return Err(Error::UnhandledOpcode { port: pi, opcode });
            };
            cb(port).map_err(|reason| Error::Callback {
                port: pi,
                opcode,
                reason,
            })?;
        }
    }
    Ok(Outcome::Served(1))
}

/// Bytes up to the first NUL as a C string (a string without NUL ends at
/// its last byte).
fn c_string_of(bytes: &[u8]) -> CString {
    CString::new(printf::c_string(bytes)).unwrap_or_default()
}

/// `fwrite(bytes, 1, len, file)` under the stream's lock; bytes written.
fn c_write(file: *mut libc::FILE, bytes: &[u8]) -> u64 {
    if bytes.is_empty() {
        return 0;
    }
    // SAFETY: `file` is a live stream; `bytes` is a readable slice.
    unsafe { libc::fwrite(bytes.as_ptr() as *const c_void, 1, bytes.len(), file) as u64 }
}

/// The PRINTF_TO_* transaction (LLVM 19 `handle_printf`): stream, format,
/// argument size reply, arguments, then one round per `%s` string still
/// missing in any lane (the device sends the string behind a pointer the
/// host names), then the result per lane.
fn handle_printf(port: &mut Port<'_>, streams: &mut Streams) -> Result<()> {
    use crate::opcode as op;
    let opcode = port.opcode();
    let pi = port.index();
    let lane_size = port.lane_size() as usize;
    let packed = matches!(
        opcode,
        op::PRINTF_TO_STDOUT_PACKED | op::PRINTF_TO_STDERR_PACKED | op::PRINTF_TO_STREAM_PACKED
    );
    let mut files = vec![std::ptr::null_mut::<libc::FILE>(); lane_size];
    match opcode {
        op::PRINTF_TO_STREAM | op::PRINTF_TO_STREAM_PACKED => port.recv(|lane, p| {
            files[lane as usize] = streams.resolve(p[0], pi, lane)?;
            Ok(())
        })?,
        op::PRINTF_TO_STDOUT | op::PRINTF_TO_STDOUT_PACKED => files.fill(c_stdout()),
        _ => files.fill(c_stderr()),
    }
    let formats = port.recv_n("format")?;
    let mut arg_sizes = vec![0u64; lane_size];
    for (lane, f) in formats.iter().enumerate() {
        if let Some(f) = f {
            let mut counter = ArgCounter { packed, count: 0 };
            printf::parse(printf::c_string(f), &mut counter);
            arg_sizes[lane] = counter.count;
        }
    }
    port.send(|lane, p| {
        p[0] = arg_sizes[lane as usize];
        Ok(())
    })?;
    let args = port.recv_n("printf arguments")?;

    // Parse each lane once with its arguments; collect `%s` addresses.
    let mut sections: Vec<Vec<Section<'_>>> = Vec::with_capacity(lane_size);
    let mut to_fetch: Vec<Vec<u64>> = vec![Vec::new(); lane_size];
    for lane in 0..lane_size {
        let (Some(f), a) = (&formats[lane], &args[lane]) else {
            sections.push(Vec::new());
            continue;
        };
        let mut src = ArgBytes {
            bytes: a.as_deref().unwrap_or(&[]),
            pos: 0,
            packed,
        };
        let secs = printf::parse(printf::c_string(f), &mut src);
        for s in &secs {
            if let Section::Conv(c) = s {
                if let Some(addr) = c.string_address() {
                    to_fetch[lane].push(addr);
                }
            }
        }
        sections.push(secs);
    }

    // Fetch strings, last `%s` first, one per lane per round.
    let mut fetched: Vec<Vec<Vec<u8>>> = vec![Vec::new(); lane_size];
    while to_fetch.iter().any(|v| !v.is_empty()) {
        port.send(|lane, p| {
            p[1] = to_fetch[lane as usize].pop().unwrap_or(0);
            Ok(())
        })?;
        let strs = port.recv_n("printf string")?;
        for (lane, s) in strs.into_iter().enumerate() {
            if let Some(s) = s.filter(|s| !s.is_empty()) {
                fetched[lane].push(s);
            }
        }
    }

    let limit = port.max_transfer();
    let mut results = vec![0i64; lane_size];
    // Per lane, the `%n` stores for the device (see PRINTF_COUNT_STORES).
    let mut stores: Vec<Vec<u64>> = vec![Vec::new(); lane_size];
    for lane in 0..lane_size {
        if formats[lane].is_none() {
            continue;
        }
        let mut text = Vec::new();
        let mut failed = false;
        for s in &sections[lane] {
            match s {
                Section::Raw(r) => text.extend_from_slice(r),
                Section::Conv(c) => {
                    if let Some((offset, size)) = c.count_store() {
                        if offset <= 0xffff && stores[lane].len() < crate::PRINTF_MAX_COUNT_STORES {
                            let count = text.len().min(i32::MAX as usize) as u64;
                            stores[lane].push(count | offset << 32 | u64::from(size) << 48);
                        }
                    }
                    // Each `%s` takes the next fetched string, whatever its
                    // own pointer was (LLVM 19 pairs them this way).
                    let string = if c.conv == b's' {
                        fetched[lane].pop()
                    } else {
                        None
                    };
                    if printf::render(c, string.as_deref(), limit, &mut text).is_none() {
                        failed = true;
                        break;
                    }
                }
            }
        }
        let n = c_write(files[lane], &text);
        results[lane] = if failed || n != text.len() as u64 {
            -1
        } else {
            n as i64
        };
    }
    port.send(|lane, p| {
        p[0] = results[lane as usize] as u64;
        p[1] = 0;
        let lane_stores = &stores[lane as usize];
        if lane_stores.is_empty() {
            p[2] = 0;
        } else {
            p[2] = crate::PRINTF_COUNT_STORES;
            for (i, slot) in p[3..].iter_mut().enumerate() {
                *slot = lane_stores.get(i).copied().unwrap_or(0);
            }
        }
        Ok(())
    })?;
    Ok(())
}
