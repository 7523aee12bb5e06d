//! RPC server benchmarks (prints, asserts nothing): round trips per second
//! of a one-packet request, printf lines per second for a wave of 64 lanes
//! to /dev/null, and the CPU time the service thread uses while idle.
//! The client is the Rust model of LLVM 19's device client from the tests.
//!
//! `cargo bench -p rpc --bench rpc`

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use rpc::{opcode as op, HostAllocator, Server, Service};
use std::time::{Duration, Instant};

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; the process CPU clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn main() {
    // Round trips: opcode 1000 answered by a callback, wave of 1 lane.
    let mut server = Server::new(64, 64, Box::new(HostAllocator)).unwrap();
    server.register_callback(
        1000,
        Box::new(|port| {
            port.recv_and_send(|_, p| {
                p[0] += 1;
                Ok(())
            })
            .map_err(|e| e.to_string())
        }),
    );
    let client = Client::from_object(&server.client_object(), 64);
    let service = Service::start(server, |e| eprintln!("event: {e:?}")).unwrap();
    let guard = service.kernel_started();
    let n = 20_000u64;
    let t = Instant::now();
    for i in 0..n {
        let mut port = client.open(1000, 1, 0);
        port.send(|_, p| p[0] = i);
        let mut r = 0;
        port.recv(|_, p| r = p[0]);
        port.close();
        assert_eq!(r, i + 1);
    }
    let dt = t.elapsed();
    println!(
        "rpc round trip (1 lane): {:.2} us, {:.0} per second",
        dt.as_secs_f64() * 1e6 / n as f64,
        n as f64 / dt.as_secs_f64()
    );

    // printf lines to /dev/null from a full wave.
    let mut open = client.open(op::OPEN_FILE, 1, 0);
    let path = cstr("/dev/null");
    open.send_n(&|_| path.clone());
    open.send(|_, p| {
        let mut b = [0u8; 64];
        b[0] = b'w';
        set(p, &b);
    });
    let mut file = 0;
    open.recv(|_, p| file = p[0]);
    open.close();
    let fmt = cstr("lane %d of %d: value %f, %s\n");
    let waves = 500u64;
    let t = Instant::now();
    for _ in 0..waves {
        client_printf(
            &client,
            op::PRINTF_TO_STREAM_PACKED,
            u64::MAX,
            Some(file),
            &|_| fmt.clone(),
            &|lane| {
                let mut a = Vec::new();
                a.extend_from_slice(&(lane as i32).to_le_bytes());
                a.extend_from_slice(&64i32.to_le_bytes());
                a.extend_from_slice(&(lane as f64 / 3.0).to_le_bytes());
                a.extend_from_slice(&0x1000u64.to_le_bytes());
                a
            },
            &|_, _| cstr("a string argument"),
        );
    }
    let dt = t.elapsed();
    println!(
        "printf (wave64, %d %d %f %s): {:.0} lines per second",
        (waves * 64) as f64 / dt.as_secs_f64()
    );
    drop(guard);

    // Idle: no kernel in flight, the service thread must sleep.
    std::thread::sleep(Duration::from_millis(50));
    let before = thread_cpu_time();
    std::thread::sleep(Duration::from_secs(1));
    let used = thread_cpu_time() - before;
    println!(
        "idle server: {:.3} ms CPU over 1 s of wall time (whole process)",
        used.as_secs_f64() * 1e3
    );
    service.stop();
}
