//! The server driven by a Rust model of LLVM 19's device client (see
//! `common/`), lane by lane as a wave does. Expected text comes from the
//! host C library's own `snprintf` on the same values (the oracle for C's
//! printf rules) and from the files the C library wrote.

mod common;

use common::*;
use rpc::{opcode as op, DeviceHeap, Error, HostAllocator, Outcome, Server};
use std::collections::HashSet;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn server(lanes: u32, ports: u32) -> Server {
    Server::new(ports, lanes, Box::new(HostAllocator)).unwrap()
}

/// Runs `client` on its own thread while serving; returns every outcome.
fn serve<F>(server: &mut Server, lanes: u32, client: F) -> Vec<Result<Outcome, Error>>
where
    F: FnOnce(&Client) + Send + 'static,
{
    let c = Client::from_object(&server.client_object(), lanes);
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let t = std::thread::spawn(move || {
        client(&c);
        d.store(true, Ordering::Release);
    });
    let mut outcomes = Vec::new();
    loop {
        let finished = done.load(Ordering::Acquire);
        match server.handle_pending() {
            Ok(Outcome::Served(0)) => {}
            other => outcomes.push(other),
        }
        if finished {
            break;
        }
        std::thread::yield_now();
    }
    t.join().unwrap();
    outcomes
}

fn temp(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("rpc-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_string_lossy().into_owned()
}

/// OPEN_FILE from every lane of `mask` (same path), returns lane 0's handle.
fn open(c: &Client, mask: u64, path: &str, mode: &str) -> u64 {
    let mut port = c.open(op::OPEN_FILE, mask, 0);
    let p = cstr(path);
    port.send_n(&|_| p.clone());
    let m = cstr(mode);
    let mut handle = 0;
    port.send(|_, pk| {
        let mut b = [0u8; 64];
        b[..m.len()].copy_from_slice(&m);
        set(pk, &b);
    });
    port.recv(|lane, pk| {
        if lane == mask.trailing_zeros() {
            handle = pk[0]
        }
    });
    port.close();
    handle
}

fn simple(c: &Client, opcode: u16, mask: u64, fill: impl Fn(u32, &mut Packet)) -> Vec<u64> {
    let mut port = c.open(opcode, mask, 3);
    port.send(|l, p| fill(l, p));
    let mut out = vec![0u64; 64];
    port.recv(|l, p| out[l as usize] = p[0]);
    port.close();
    out
}

fn c_snprintf_line(lane: u32, x: f64, s: &CString, t: &CString) -> Vec<u8> {
    let fmt = CString::new("lane %2d: %8.3f [%s] [%-6.4s] %#x %lld %c\n").unwrap();
    let mut buf = vec![0u8; 512];
    // SAFETY: the format's conversions match the arguments' C types.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            fmt.as_ptr(),
            lane as libc::c_int,
            x,
            s.as_ptr(),
            t.as_ptr(),
            (lane * 17) as libc::c_uint,
            -(lane as i64) * 1_000_000_007,
            (b'A' + lane as u8 % 26) as libc::c_int,
        )
    };
    buf.truncate(n as usize);
    buf
}

fn lane_string(lane: u32) -> String {
    // Some lanes longer than one packet (56 / 64 bytes) to need several.
    "s".repeat((lane as usize * 7) % 150) + &lane.to_string()
}

#[test]
fn printf_every_lane_different_arguments_wave64_packed_and_unpacked() {
    for (opcode, packed) in [
        (op::PRINTF_TO_STREAM_PACKED, true),
        (op::PRINTF_TO_STREAM, false),
    ] {
        let mut s = server(64, 64);
        let path = temp(&format!("printf-{packed}.txt"));
        let path2 = path.clone();
        let mask: u64 = 0xF0F0_FFFF_0000_FFF5;
        let results = Arc::new(std::sync::Mutex::new(Vec::new()));
        let r2 = results.clone();
        let outcomes = serve(&mut s, 64, move |c| {
            let f = open(c, 1, &path2, "w");
            assert_ne!(f, 0);
            let fmt = cstr("lane %2d: %8.3f [%s] [%-6.4s] %#x %lld %c\n");
            let ret = client_printf(
                c,
                opcode,
                mask,
                Some(f),
                &|_| fmt.clone(),
                &|lane| {
                    // int, double, char*, char*, unsigned, long long, int
                    let mut a = Vec::new();
                    let mut put = |bytes: &[u8], align: usize| {
                        if !packed {
                            while a.len() % align != 0 {
                                a.push(0);
                            }
                        }
                        a.extend_from_slice(bytes);
                    };
                    put(&(lane as i32).to_le_bytes(), 4);
                    put(&(lane as f64 * 1.25 - 3.0).to_le_bytes(), 8);
                    put(&(0x1000 + lane as u64).to_le_bytes(), 8);
                    put(&(0x2000 + lane as u64).to_le_bytes(), 8);
                    put(&(lane * 17).to_le_bytes(), 4);
                    put(&(-(lane as i64) * 1_000_000_007).to_le_bytes(), 8);
                    put(&((b'A' + lane as u8 % 26) as i32).to_le_bytes(), 4);
                    a
                },
                &|lane, addr| {
                    if addr == 0x1000 + lane as u64 {
                        cstr(&lane_string(lane))
                    } else {
                        cstr(&format!("t{lane}xyz"))
                    }
                },
            );
            r2.lock().unwrap().extend(ret);
            let closed = simple(c, op::CLOSE_FILE, 1, |_, p| p[0] = f);
            assert_eq!(closed[0], 0);
        });
        assert!(outcomes.iter().all(|o| o.is_ok()), "{outcomes:?}");
        let mut expected = Vec::new();
        let mut expected_ret = vec![0u32; 64];
        for lane in 0..64u32 {
            if mask & (1 << lane) != 0 {
                let line = c_snprintf_line(
                    lane,
                    lane as f64 * 1.25 - 3.0,
                    &CString::new(lane_string(lane)).unwrap(),
                    &CString::new(format!("t{lane}xyz")).unwrap(),
                );
                expected_ret[lane as usize] = line.len() as u32;
                expected.extend(line);
            }
        }
        let got = std::fs::read(&path).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected)
        );
        let ret = results.lock().unwrap().clone();
        for lane in 0..64 {
            if mask & (1 << lane) != 0 {
                assert_eq!(ret[lane], expected_ret[lane], "lane {lane}");
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn file_operations_wave32() {
    let mut s = server(32, 16);
    let path = temp("files.txt");
    let p2 = path.clone();
    let outcomes = serve(&mut s, 32, move |c| {
        let f = open(c, 1, &p2, "w+");
        assert_ne!(f, 0);
        // WRITE_TO_STREAM from lanes 0 and 5: two different strings.
        let mut port = c.open(op::WRITE_TO_STREAM, 0b100001, 0);
        port.send(|_, p| p[0] = f);
        port.send_n(&|lane| {
            if lane == 0 {
                b"first line\n".to_vec()
            } else {
                "x".repeat(100).into_bytes()
            }
        });
        let mut n = vec![0u64; 32];
        port.recv(|l, p| n[l as usize] = p[0]);
        port.close();
        assert_eq!((n[0], n[5]), (11, 100));
        let pos = simple(c, op::FTELL, 1, |_, p| p[0] = f);
        assert_eq!(pos[0], 111);
        let r = simple(c, op::FSEEK, 1, |_, p| {
            p[0] = f;
            p[1] = 0;
            p[2] = libc::SEEK_SET as u64;
        });
        assert_eq!(r[0], 0);
        // FGETS of 64 bytes: the first line with its NUL.
        let mut port = c.open(op::READ_FGETS, 1, 0);
        port.send(|_, p| {
            p[0] = 64;
            p[1] = f;
        });
        let line = port.recv_n();
        port.close();
        assert_eq!(line[0], b"first line\n\0");
        // READ_FROM_STREAM of 200 bytes: the 100 x's, then the count.
        let mut port = c.open(op::READ_FROM_STREAM, 1, 0);
        port.send(|_, p| {
            p[0] = 200;
            p[1] = f;
        });
        let data = port.recv_n();
        let mut count = 0;
        port.recv(|_, p| count = p[0]);
        port.close();
        assert_eq!(data[0], "x".repeat(100).into_bytes());
        assert_eq!(count, 100);
        assert_ne!(simple(c, op::FEOF, 1, |_, p| p[0] = f)[0], 0);
        simple(c, op::CLEARERR, 1, |_, p| p[0] = f);
        assert_eq!(simple(c, op::FEOF, 1, |_, p| p[0] = f)[0], 0);
        assert_eq!(simple(c, op::FERROR, 1, |_, p| p[0] = f)[0], 0);
        assert_eq!(simple(c, op::FFLUSH, 1, |_, p| p[0] = f)[0], 0);
        let u = simple(c, op::UNGETC, 1, |_, p| {
            p[0] = b'Q' as u64;
            p[1] = f;
        });
        assert_eq!(u[0], b'Q' as u64);
        assert_eq!(simple(c, op::CLOSE_FILE, 1, |_, p| p[0] = f)[0], 0);
        // REMOVE: 0, then -1 the second time.
        for expect in [0u64, u64::MAX] {
            let mut port = c.open(op::REMOVE, 1, 0);
            let pb = cstr(&p2);
            port.send_n(&|_| pb.clone());
            let mut r = 0;
            port.recv(|_, p| r = p[0]);
            port.close();
            assert_eq!(r, expect);
        }
    });
    assert!(outcomes.iter().all(|o| o.is_ok()), "{outcomes:?}");
    assert!(!std::path::Path::new(&path).exists());
}

struct TestHeap(HashSet<u64>, u64);
impl DeviceHeap for TestHeap {
    fn malloc(&mut self, size: u64) -> Result<u64, String> {
        self.1 += 0x1000 + size;
        self.0.insert(self.1);
        Ok(self.1)
    }
    fn free(&mut self, a: u64) -> Result<(), String> {
        if self.0.remove(&a) {
            Ok(())
        } else {
            Err(format!("{a:#x} was not allocated"))
        }
    }
}

#[test]
fn malloc_free_exit_and_callbacks() {
    let mut s = server(64, 8);
    s.set_device_heap(Box::new(TestHeap(HashSet::new(), 0)));
    s.register_callback(
        300,
        Box::new(|port| {
            port.recv_and_send(|lane, p| {
                p[0] = p[0] * 2 + lane as u64;
                Ok(())
            })
            .map_err(|e| e.to_string())
        }),
    );
    let outcomes = serve(&mut s, 64, |c| {
        let a = simple(c, op::MALLOC, 0b11, |_, p| p[0] = 64);
        assert_ne!(a[0], a[1]);
        simple(c, op::FREE, 0b11, |l, p| p[0] = a[l as usize]);
        let r = simple(c, 300, 1 << 40, |_, p| p[0] = 21);
        assert_eq!(r[40], 82);
        // EXIT: recv_and_send, then the status.
        let mut port = c.open(op::EXIT, 1, 0);
        port.send(|_, _| {});
        port.recv(|_, _| {});
        port.send(|_, p| p[0] = 42);
        port.close();
    });
    assert!(outcomes.iter().all(|o| o.is_ok()), "{outcomes:?}");
    let ends: Vec<_> = outcomes
        .iter()
        .filter(|o| !matches!(o, Ok(Outcome::Served(_))))
        .collect();
    assert_eq!(ends.len(), 1, "{outcomes:?}");
    assert!(matches!(ends[0], Ok(Outcome::Exit(42))));
}

#[test]
fn malformed_requests_are_named_errors() {
    let mut s = server(32, 4);
    let stop = s.stop_flag();
    stop.store(true, Ordering::Relaxed);
    let c = Client::from_object(&s.client_object(), 32);
    // Unhandled opcode.
    c.raw_request(0, 999, 1, &[]);
    assert!(matches!(
        s.handle_pending(),
        Err(Error::UnhandledOpcode {
            port: 0,
            opcode: 999
        })
    ));
    // Lane 40 does not exist in a wave32.
    c.raw_request(1, op::NOOP, 1 << 40, &[]);
    assert!(matches!(
        s.handle_pending(),
        Err(Error::BadLaneMask { port: 1, .. })
    ));
    // Empty lane mask.
    c.raw_request(2, op::NOOP, 0, &[]);
    assert!(matches!(
        s.handle_pending(),
        Err(Error::BadLaneMask { port: 2, .. })
    ));
    // A write of 2^62 bytes.
    c.raw_request(
        3,
        op::WRITE_TO_STDOUT,
        1,
        &[(0, [1 << 62, 0, 0, 0, 0, 0, 0, 0])],
    );
    assert!(matches!(
        s.handle_pending(),
        Err(Error::BadSize { port: 3, lane: 0, size, .. }) if size == 1 << 62
    ));
    // FEOF of a stream the server never opened.
    c.raw_request(0, op::FEOF, 1, &[(0, [0xdead_0000, 0, 0, 0, 0, 0, 0, 0])]);
    assert!(matches!(
        s.handle_pending(),
        Err(Error::UnknownStream {
            handle: 0xdead_0000,
            ..
        })
    ));
}

/// Mutation test: random bytes in every mailbox, header and packet, served
/// repeatedly; the server must return (errors allowed) without panicking.
/// Out-of-bounds access is excluded by construction (every buffer access is
/// at an index below the port count and lane size); the printf parser gets
/// its own random-input test in `printf.rs`.
#[test]
fn random_buffers_never_panic() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for lanes in [32u32, 64] {
        let mut s = server(lanes, 8);
        s.set_max_transfer(4096);
        s.stop_flag().store(true, Ordering::Relaxed);
        let base = s.buffer_address() as *mut u8;
        let size = s.layout().allocation_size() as usize;
        let hdr = s.layout().header_offset() as usize;
        for round in 0..3000 {
            // Mutate a few random bytes, or rewrite a header with a random
            // (mostly valid) opcode and mask.
            for _ in 0..(rand() % 16) {
                let at = (rand() as usize) % size;
                // SAFETY: `at < size`, inside the server's buffer.
                unsafe { *base.add(at) = rand() as u8 };
            }
            let port = (rand() % 8) as usize;
            // Only opcodes whose effects stay inside the process: random
            // handles may name stdin/stdout/stderr (tags 1-3), so no reads,
            // writes, seeks or closes of real streams, and no paths.
            const SAFE: [u16; 12] = [
                op::NOOP,
                op::EXIT,
                op::ABORT,
                op::MALLOC,
                op::FREE,
                op::HOST_CALL,
                op::FEOF,
                op::FERROR,
                op::CLEARERR,
                op::FTELL,
                op::FFLUSH,
                777,
            ];
            let opcode = SAFE[(rand() % SAFE.len() as u64) as usize];
            // SAFETY: the header of port `port < 8`, inside the buffer.
            unsafe {
                *(base.add(hdr + 16 * port + 8) as *mut u16) = opcode;
                *(base.add(hdr + 16 * port) as *mut u64) = if round % 3 == 0 {
                    rand()
                } else {
                    rand() % 4 + 1
                };
            }
            for _ in 0..2 {
                let _ = s.handle_pending();
            }
        }
    }
}

#[test]
fn service_sleeps_when_idle_and_serves_kernels() {
    let s = server(64, 16);
    let c = Client::from_object(&s.client_object(), 64);
    let (tx, rx) = std::sync::mpsc::channel();
    let service = rpc::Service::start(s, move |e| {
        let _ = tx.send(format!("{e:?}"));
    })
    .unwrap();
    let guard = service.kernel_started();
    let mut port = c.open(op::EXIT, 1, 0);
    port.send(|_, _| {});
    port.recv(|_, _| {});
    port.send(|_, p| p[0] = 7);
    port.close();
    assert_eq!(rx.recv().unwrap(), "Exit(7)");
    drop(guard);
    assert!(service.stop().is_some());
}
