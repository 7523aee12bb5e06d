//! The entry points called directly, as libomptarget would, with the
//! virtual device as HSA runtime (two GPUs of 64 MiB each): data paths,
//! streams, events, locks, and the failures bad arguments must produce.
//!
//! Expected values are the host's own bytes: what goes in must come back.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;

use omptarget_amdgpu::abi::*;
use omptarget_amdgpu::rtl::*;
use std::ffi::c_void;
use std::sync::Once;

const FAIL: i32 = OFFLOAD_FAIL;
const OK: i32 = OFFLOAD_SUCCESS;

/// Points the plugin at the virtual device and initialises both devices.
fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var("OMPTARGET_AMDGPU_HSA_LIBRARY", common::sim_library());
        std::env::set_var("HSA_SIM_GPUS", "2");
        std::env::set_var("HSA_SIM_DEVICE_MEMORY", "64M");
        assert_eq!(__tgt_rtl_init_plugin(), 0);
        assert_eq!(__tgt_rtl_number_of_devices(), 2);
        assert_eq!(__tgt_rtl_init_device(0), OK);
        assert_eq!(__tgt_rtl_init_device(1), OK);
    });
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[1] ^ seed)
        .collect()
}

fn alloc(dev: i32, n: usize, kind: i32) -> *mut c_void {
    let p = __tgt_rtl_data_alloc(dev, n as i64, std::ptr::null_mut(), kind);
    assert!(
        !p.is_null(),
        "allocation of {n} bytes (kind {kind}) on device {dev}"
    );
    p
}

#[test]
fn synchronous_round_trips_through_every_transfer_path() {
    setup();
    // 100 B and 64 KiB: staging buffer; 3 MiB: above MAX_ASYNC_COPY_BYTES,
    // the host buffer is locked for the transfer.
    for &n in &[1usize, 100, 65536, 3 << 20] {
        let src = pattern(n, n as u8);
        let d0 = alloc(0, n, TARGET_ALLOC_DEFAULT);
        let d1 = alloc(1, n, TARGET_ALLOC_DEVICE);
        unsafe {
            assert_eq!(
                __tgt_rtl_data_submit(0, d0, src.as_ptr() as *mut c_void, n as i64),
                OK
            );
            // Device 0 → device 1, then back to the host from device 1.
            assert_eq!(__tgt_rtl_is_data_exchangable(0, 1), 1);
            assert_eq!(__tgt_rtl_data_exchange(0, d0, 1, d1, n as i64), OK);
            let mut back = vec![0u8; n];
            assert_eq!(
                __tgt_rtl_data_retrieve(1, back.as_mut_ptr() as *mut c_void, d1, n as i64),
                OK
            );
            assert!(back == src, "{n} bytes came back different");
        }
        assert_eq!(__tgt_rtl_data_delete(0, d0, TARGET_ALLOC_DEFAULT), OK);
        assert_eq!(__tgt_rtl_data_delete(1, d1, TARGET_ALLOC_DEVICE), OK);
    }
}

/// Staging buffers handed out so far by the host's staging manager.
fn staging_allocations() -> u64 {
    let plugin = omptarget_amdgpu::plugin::Plugin::get().unwrap();
    plugin.rt().unwrap().host.staging.allocations()
}

/// Pinned (HOST-kind) and locked host ranges are copied by DMA straight
/// from and to the user's memory: no staging buffer is taken (counted in a
/// child process, where no other test shares the staging manager).
#[test]
fn pinned_host_memory_and_locked_ranges_are_copied_directly() {
    run_child("child_pinned_copies", &[]);
}

#[test]
#[ignore = "child process of pinned_host_memory_and_locked_ranges_are_copied_directly"]
fn child_pinned_copies() {
    setup();
    let n = 10_000;
    // HOST allocation: host-accessible, device-accessible.
    let h = alloc(0, n, TARGET_ALLOC_HOST) as *mut u8;
    let src = pattern(n, 7);
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), h, n) };
    let d = alloc(0, n, TARGET_ALLOC_DEFAULT);
    let mut locked_buf = vec![0u8; n];
    let mut alias: *mut c_void = std::ptr::null_mut();
    let staged_before = staging_allocations();
    unsafe {
        assert_eq!(__tgt_rtl_data_submit(0, d, h as *mut c_void, n as i64), OK);
        assert_eq!(
            __tgt_rtl_data_lock(
                0,
                locked_buf.as_mut_ptr() as *mut c_void,
                n as i64,
                &mut alias
            ),
            OK
        );
        assert!(!alias.is_null());
        assert_eq!(
            __tgt_rtl_data_retrieve(0, locked_buf.as_mut_ptr() as *mut c_void, d, n as i64),
            OK
        );
    }
    assert!(locked_buf == src);
    assert_eq!(
        staging_allocations(),
        staged_before,
        "a pinned or locked range went through a staging buffer"
    );
    // Control: the same copy from ordinary pageable memory is staged, so
    // the count above would have seen a staged copy.
    unsafe {
        assert_eq!(
            __tgt_rtl_data_submit(0, d, src.as_ptr() as *mut c_void, n as i64),
            OK
        );
    }
    assert_eq!(staging_allocations(), staged_before + 1);
    assert_eq!(
        __tgt_rtl_data_unlock(0, locked_buf.as_mut_ptr() as *mut c_void),
        OK
    );
    // A second unlock of the same range has nothing to release.
    assert_eq!(
        __tgt_rtl_data_unlock(0, locked_buf.as_mut_ptr() as *mut c_void),
        FAIL
    );
    // SHARED: fine-grained memory every device reaches.
    let s = alloc(1, 64, TARGET_ALLOC_SHARED);
    assert_eq!(__tgt_rtl_data_delete(1, s, TARGET_ALLOC_SHARED), OK);
    assert_eq!(
        __tgt_rtl_data_delete(0, h as *mut c_void, TARGET_ALLOC_HOST),
        OK
    );
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), OK);
}

#[test]
fn async_chain_keeps_order_and_releases_the_queue() {
    setup();
    let n = 4096usize;
    let parts = 8;
    let src = pattern(n * parts, 3);
    let d = alloc(0, n * parts, TARGET_ALLOC_DEFAULT);
    let mut back = vec![0u8; n * parts];
    let mut info = AsyncInfo {
        queue: std::ptr::null_mut(),
    };
    unsafe {
        for i in 0..parts {
            let off = i * n;
            assert_eq!(
                __tgt_rtl_data_submit_async(
                    0,
                    (d as *mut u8).add(off) as *mut c_void,
                    src.as_ptr().add(off) as *mut c_void,
                    n as i64,
                    &mut info
                ),
                OK
            );
            assert!(!info.queue.is_null(), "the first operation binds a stream");
        }
        // Same stream: the retrieve is ordered after every submit.
        assert_eq!(
            __tgt_rtl_data_retrieve_async(
                0,
                back.as_mut_ptr() as *mut c_void,
                d,
                (n * parts) as i64,
                &mut info
            ),
            OK
        );
        // Poll like libomptarget does for nowait regions.
        let mut polls = 0;
        while !info.queue.is_null() {
            assert_eq!(__tgt_rtl_query_async(0, &mut info), OK);
            polls += 1;
            assert!(polls < 10_000_000, "query_async never completed");
            std::thread::yield_now();
        }
        // Synchronize without a queue is the caller's error.
        assert_eq!(__tgt_rtl_synchronize(0, &mut info), FAIL);
    }
    assert!(back == src);
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), OK);
}

/// Stream `b` waits, through an event, for work of stream `a` that itself
/// waits on a signal this test holds: `b`'s copy cannot run before the test
/// lets `a` go, so an event that orders nothing would show (`b` would
/// finish early and copy the buffer before `a`'s kernel wrote it). The
/// work of `a` is a kernel on an HSA queue, not a copy, because the virtual
/// copy engine runs copies in arrival order and would order them anyway.
#[test]
fn events_order_two_streams() {
    let (_img, kernel) = load_kernels();
    let out = alloc(0, 1024, TARGET_ALLOC_DEFAULT);
    let before = [-1i32; 256];
    let mut back = [0i32; 256];
    let plugin = omptarget_amdgpu::plugin::Plugin::get().unwrap();
    let rt = plugin.rt().unwrap();
    let dev = rt.device(0).unwrap();
    let pool = omptarget_amdgpu::signal::SignalPool::new(&rt.hsa, 1).unwrap();
    let hold = pool.get().unwrap();
    let mut a = new_info();
    let mut b = new_info();
    let mut ev: *mut c_void = std::ptr::null_mut();
    unsafe {
        assert_eq!(
            __tgt_rtl_data_submit(0, out, before.as_ptr() as *mut c_void, 1024),
            OK
        );
        assert_eq!(__tgt_rtl_create_event(0, &mut ev), OK);
        // Waiting on an event nobody recorded is an error.
        assert_eq!(__tgt_rtl_wait_event(0, ev, &mut b), FAIL);
        dev.stream_for(&mut a)
            .unwrap()
            .wait_for(hold.clone())
            .unwrap();
        assert_eq!(launch_fill(0, kernel, out, 0, &mut a), OK);
        assert_eq!(__tgt_rtl_record_event(0, ev, &mut a), OK);
        assert_eq!(__tgt_rtl_wait_event(0, ev, &mut b), OK);
        assert_eq!(
            __tgt_rtl_data_retrieve_async(0, back.as_mut_ptr() as *mut c_void, out, 1024, &mut b),
            OK
        );
        // Held: nothing of `b` can have finished.
        assert_eq!(__tgt_rtl_query_async(0, &mut b), OK);
        assert!(
            !b.queue.is_null(),
            "stream b finished before a was released"
        );
        hold.complete();
        assert_eq!(__tgt_rtl_synchronize(0, &mut b), OK);
        assert!(b.queue.is_null());
        assert_eq!(__tgt_rtl_synchronize(0, &mut a), OK);
        assert!(a.queue.is_null());
        assert_eq!(__tgt_rtl_sync_event(0, ev), OK);
        assert_eq!(__tgt_rtl_destroy_event(0, ev), OK);
        assert_eq!(__tgt_rtl_destroy_event(0, ev), FAIL);
    }
    // What the kernel computes (kernels.c with its `table` initializer).
    let table = [10, 20, 30, 40];
    for (i, v) in back.iter().enumerate() {
        assert_eq!(*v, 3 * i as i32 + table[i % 4], "element {i}");
    }
    assert_eq!(__tgt_rtl_data_delete(0, out, TARGET_ALLOC_DEFAULT), OK);
}

#[test]
fn bad_arguments_fail_cleanly() {
    setup();
    let mut host = vec![0u8; 16];
    let hp = host.as_mut_ptr() as *mut c_void;
    // Allocation: zero bytes, more than the device has, a bad kind, a bad device.
    assert!(__tgt_rtl_data_alloc(0, 0, std::ptr::null_mut(), TARGET_ALLOC_DEFAULT).is_null());
    assert!(__tgt_rtl_data_alloc(0, 1 << 30, std::ptr::null_mut(), TARGET_ALLOC_DEFAULT).is_null());
    assert!(__tgt_rtl_data_alloc(0, 16, std::ptr::null_mut(), 42).is_null());
    assert!(__tgt_rtl_data_alloc(7, 16, std::ptr::null_mut(), TARGET_ALLOC_DEFAULT).is_null());
    // Free: NULL is fine, an unknown pointer and a double free are not.
    assert_eq!(
        __tgt_rtl_data_delete(0, std::ptr::null_mut(), TARGET_ALLOC_DEFAULT),
        OK
    );
    assert_eq!(
        __tgt_rtl_data_delete(0, 0x1234_5000 as *mut c_void, TARGET_ALLOC_DEFAULT),
        FAIL
    );
    let d = alloc(0, 16, TARGET_ALLOC_DEFAULT);
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), OK);
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), FAIL);
    unsafe {
        // Transfers with NULL or unknown device pointers.
        assert_eq!(__tgt_rtl_data_submit(0, std::ptr::null_mut(), hp, 16), FAIL);
        assert_eq!(
            __tgt_rtl_data_submit(0, 0x10 as *mut c_void, std::ptr::null_mut(), 16),
            FAIL
        );
        assert_eq!(
            __tgt_rtl_data_submit(0, 0x1234_5000 as *mut c_void, hp, 16),
            FAIL
        );
        assert_eq!(
            __tgt_rtl_data_retrieve(0, hp, 0x1234_5000 as *mut c_void, 16),
            FAIL
        );
        assert_eq!(__tgt_rtl_data_submit(0, 0x10 as *mut c_void, hp, -1), FAIL);
        // A forged async info queue.
        let mut forged = AsyncInfo {
            queue: 0x4000 as *mut c_void,
        };
        assert_eq!(__tgt_rtl_synchronize(0, &mut forged), FAIL);
        assert_eq!(__tgt_rtl_synchronize(0, std::ptr::null_mut()), FAIL);
        // Launch of a handle that is not one of our kernels.
        let mut kargs: KernelArgs = std::mem::zeroed();
        kargs.num_teams = [1, 0, 0];
        kargs.thread_limit = [1, 0, 0];
        assert_eq!(
            __tgt_rtl_launch_kernel(
                0,
                0x9999 as *mut c_void,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut kargs,
                std::ptr::null_mut()
            ),
            FAIL
        );
        // Images: garbage, and this test's own x86-64 executable.
        let mut garbage = vec![0x7fu8, b'E', b'L', b'F', 2, 1, 1, 0];
        garbage.extend(std::iter::repeat_n(0xAB, 120));
        let mut img = DeviceImage {
            image_start: garbage.as_mut_ptr() as *mut c_void,
            image_end: garbage.as_mut_ptr().add(garbage.len()) as *mut c_void,
            entries_begin: std::ptr::null_mut(),
            entries_end: std::ptr::null_mut(),
        };
        assert_eq!(__tgt_rtl_is_valid_binary(&mut img), 0);
        assert!(__tgt_rtl_load_binary(0, &mut img).is_null());
        let mut own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let mut img = DeviceImage {
            image_start: own.as_mut_ptr() as *mut c_void,
            image_end: own.as_mut_ptr().add(own.len()) as *mut c_void,
            entries_begin: std::ptr::null_mut(),
            entries_end: std::ptr::null_mut(),
        };
        assert_eq!(__tgt_rtl_is_valid_binary(&mut img), 0);
        assert_eq!(__tgt_rtl_is_valid_binary(std::ptr::null_mut()), 0);
        assert!(__tgt_rtl_load_binary(0, std::ptr::null_mut()).is_null());
    }
    // The device still works after all that.
    let d = alloc(0, 16, TARGET_ALLOC_DEFAULT);
    host.copy_from_slice(&pattern(16, 1));
    let mut back = vec![0u8; 16];
    unsafe {
        assert_eq!(__tgt_rtl_data_submit(0, d, hp, 16), OK);
        assert_eq!(
            __tgt_rtl_data_retrieve(0, back.as_mut_ptr() as *mut c_void, d, 16),
            OK
        );
    }
    assert_eq!(back, host);
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), OK);
}

#[test]
fn small_queries_answer_as_documented() {
    setup();
    assert_eq!(__tgt_rtl_supports_empty_images(), 0);
    assert_eq!(__tgt_rtl_init_requires(OMP_REQ_NONE), OMP_REQ_NONE);
    assert_eq!(__tgt_rtl_is_data_exchangable(0, 2), 0);
    assert_eq!(__tgt_rtl_deinit_plugin(), OK);
    assert_eq!(__tgt_rtl_deinit_plugin(), OK);
    // Still usable after deinit_plugin (other libraries may still run).
    assert_eq!(__tgt_rtl_number_of_devices(), 2);
    let mut out: *mut AsyncInfo = std::ptr::null_mut();
    unsafe {
        assert_eq!(__tgt_rtl_init_async_info(0, &mut out), OK);
        assert!(!out.is_null() && (*out).queue.is_null());
        drop(Box::from_raw(out));
        let mut di = DeviceInfo {
            context: std::ptr::dangling_mut::<c_void>(),
            device: std::ptr::null_mut(),
        };
        let mut err: *const std::ffi::c_char = std::ptr::null();
        assert_eq!(__tgt_rtl_init_device_info(1, &mut di, &mut err), OK);
        assert!(di.context.is_null() && !di.device.is_null() && !err.is_null());
        assert_eq!(__tgt_rtl_init_device(5), FAIL);
    }
}

/// The gfx90a code object embedded in a host executable built by clang-16
/// (found by its ELF header: machine 224, size from the section headers).
fn device_elf(exe: &std::path::Path) -> Vec<u8> {
    let bytes = std::fs::read(exe).unwrap();
    let mut at = 1;
    while let Some(pos) = bytes[at..].windows(4).position(|w| w == b"\x7fELF") {
        let start = at + pos;
        let h = &bytes[start..];
        let u16_at = |o: usize| u16::from_le_bytes([h[o], h[o + 1]]) as usize;
        if h.len() > 64 && u16_at(18) == 224 {
            let shoff = u64::from_le_bytes(h[40..48].try_into().unwrap()) as usize;
            let end = shoff + u16_at(58) * u16_at(60);
            return h[..end].to_vec();
        }
        at = start + 1;
    }
    panic!("no AMDGPU ELF inside {}", exe.display());
}

struct LoadedImage {
    bytes: Vec<u8>,
    _names: Vec<std::ffi::CString>,
    entries: Vec<OffloadEntry>,
    _host_globals: Box<[i32; 4]>,
}

/// `kernels.c`'s device image with a host entry table built from its
/// kernel metadata plus the `table` global.
fn kernels_image() -> LoadedImage {
    // Compiled once: tests run in parallel and must not rewrite the
    // executable while another reads it.
    static ELF: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let bytes = ELF
        .get_or_init(|| device_elf(&common::compile("kernels.c", false, &[])))
        .clone();
    let kernels = omptarget_amdgpu::image::kernel_metadata(&bytes).unwrap();
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    let mut host_globals = Box::new([0i32; 4]);
    let names = vec![
        std::ffi::CString::new(kernels[0].name.clone()).unwrap(),
        std::ffi::CString::new("table").unwrap(),
    ];
    let entries = vec![
        OffloadEntry {
            addr: std::ptr::dangling_mut::<c_void>(),
            name: names[0].as_ptr() as *mut _,
            size: 0,
            flags: 0,
            reserved: 0,
        },
        OffloadEntry {
            addr: host_globals.as_mut_ptr() as *mut c_void,
            name: names[1].as_ptr() as *mut _,
            size: 16,
            flags: 0,
            reserved: 0,
        },
    ];
    LoadedImage {
        bytes,
        _names: names,
        entries,
        _host_globals: host_globals,
    }
}

fn device_image(img: &mut LoadedImage) -> DeviceImage {
    let range = img.bytes.as_mut_ptr_range();
    let entries = img.entries.as_mut_ptr_range();
    DeviceImage {
        image_start: range.start as *mut c_void,
        image_end: range.end as *mut c_void,
        entries_begin: entries.start,
        entries_end: entries.end,
    }
}

#[test]
fn load_binary_resolves_entries_and_a_kernel_runs() {
    setup();
    let mut img = kernels_image();
    let mut di = device_image(&mut img);
    unsafe {
        assert_eq!(__tgt_rtl_is_valid_binary(&mut di), 1);
        let gfx = c"gfx90a";
        let mut info = ImageInfo { arch: gfx.as_ptr() };
        assert_eq!(__tgt_rtl_is_valid_binary_info(&mut di, &mut info), 1);
        let other = c"gfx1030";
        let mut info = ImageInfo {
            arch: other.as_ptr(),
        };
        assert_eq!(__tgt_rtl_is_valid_binary_info(&mut di, &mut info), 0);

        let table = __tgt_rtl_load_binary(1, &mut di);
        assert!(!table.is_null());
        let t = &*table;
        let n = t.entries_end.offset_from(t.entries_begin);
        assert_eq!(n, 2, "one table entry per host entry");
        let kernel = *t.entries_begin;
        let global = *t.entries_begin.add(1);
        assert_eq!(kernel.name, img.entries[0].name);
        assert_eq!((kernel.size, global.size), (0, 16));
        assert!(!kernel.addr.is_null() && kernel.addr != img.entries[0].addr);
        // The global's device address holds the image's initializer.
        let mut init = [0i32; 4];
        assert_eq!(
            __tgt_rtl_data_retrieve(1, init.as_mut_ptr() as *mut c_void, global.addr, 16),
            OK
        );
        assert_eq!(init, [10, 20, 30, 40]);
        // Change the global on the device; the kernel must see it.
        let new_table = [1i32, 2, 3, 4];
        assert_eq!(
            __tgt_rtl_data_submit(1, global.addr, new_table.as_ptr() as *mut c_void, 16),
            OK
        );

        let out = alloc(1, 256 * 4, TARGET_ALLOC_DEFAULT);
        let mut args = [out];
        let mut offsets = [0isize];
        let mut kargs: KernelArgs = std::mem::zeroed();
        kargs.version = 2;
        kargs.num_args = 1;
        kargs.tripcount = 256;
        let before = kargs;
        let mut ai = AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        assert_eq!(
            __tgt_rtl_launch_kernel(
                1,
                kernel.addr,
                args.as_mut_ptr(),
                offsets.as_mut_ptr(),
                &mut kargs,
                &mut ai
            ),
            OK
        );
        // The caller's KernelArgs is never written.
        assert_eq!(format!("{before:?}"), format!("{kargs:?}"));
        let mut back = [0i32; 256];
        assert_eq!(
            __tgt_rtl_data_retrieve_async(1, back.as_mut_ptr() as *mut c_void, out, 1024, &mut ai),
            OK
        );
        assert_eq!(__tgt_rtl_synchronize(1, &mut ai), OK);
        for (i, v) in back.iter().enumerate() {
            assert_eq!(*v, 3 * i as i32 + new_table[i % 4], "element {i}");
        }
        assert_eq!(__tgt_rtl_data_delete(1, out, TARGET_ALLOC_DEFAULT), OK);
        // Too few kernarg bytes for the arguments passed: refused.
        kargs.num_args = 9;
        let mut nine = [out; 9];
        let mut nine_off = [0isize; 9];
        assert_eq!(
            __tgt_rtl_launch_kernel(
                1,
                kernel.addr,
                nine.as_mut_ptr(),
                nine_off.as_mut_ptr(),
                &mut kargs,
                std::ptr::null_mut()
            ),
            FAIL
        );
    }
}

#[test]
fn corrupt_and_foreign_code_objects_are_refused() {
    setup();
    let mut img = kernels_image();
    // Another GPU: e_flags machine field set to gfx1030 (0x036).
    let flags = u32::from_le_bytes(img.bytes[48..52].try_into().unwrap());
    let mut foreign = img.bytes.clone();
    foreign[48..52].copy_from_slice(&((flags & !0xff) | 0x36).to_le_bytes());
    // Corrupt: program headers pointing past the end of the file.
    let mut corrupt = img.bytes.clone();
    corrupt[32..40].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    for bytes in [foreign, corrupt] {
        img.bytes = bytes;
        let mut di = device_image(&mut img);
        unsafe {
            assert_eq!(__tgt_rtl_is_valid_binary(&mut di), 0);
            assert!(__tgt_rtl_load_binary(0, &mut di).is_null());
        }
    }
}

// ------------------------------------------------------------------
// Device errors must never hang. Each scenario runs in a child process
// (this test binary, running one `#[ignore]`d test): a hang there makes the
// parent's bounded wait (`common::run`) fail the test instead of blocking
// it. The child's exit runs the plugin's teardown, so "exits" is checked
// too.

/// Runs the ignored test `name` of this binary in a child process with
/// `env` added; fails if it does not end within 120 s. Returns its output.
fn run_child(name: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["--ignored", "--exact", name, "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = common::run(&mut cmd, 120);
    let (stdout, stderr) = common::texts(&out);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child {name} failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    out
}

/// Launches `kernels.c`'s kernel on `dev` writing 256 ints at `out`, on
/// `info` (NULL: synchronous), with `dyn_lds` bytes of dynamic LDS.
fn launch_fill(
    dev: i32,
    kernel: *mut c_void,
    out: *mut c_void,
    dyn_lds: u32,
    info: *mut AsyncInfo,
) -> i32 {
    let mut args = [out];
    let mut offsets = [0isize];
    unsafe {
        let mut kargs: KernelArgs = std::mem::zeroed();
        kargs.version = 2;
        kargs.num_args = 1;
        kargs.tripcount = 256;
        kargs.dyn_cgroup_mem = dyn_lds;
        __tgt_rtl_launch_kernel(
            dev,
            kernel,
            args.as_mut_ptr(),
            offsets.as_mut_ptr(),
            &mut kargs,
            info,
        )
    }
}

/// Loads `kernels.c`'s image on device 0; returns the image (to keep its
/// names alive) and the kernel handle.
fn load_kernels() -> (LoadedImage, *mut c_void) {
    setup();
    let mut img = kernels_image();
    let mut di = device_image(&mut img);
    let table = unsafe { __tgt_rtl_load_binary(0, &mut di) };
    assert!(!table.is_null());
    let kernel = unsafe { (*(*table).entries_begin).addr };
    (img, kernel)
}

/// Fetches 256 ints from `out` and checks them against what the kernel
/// computes with the image's `table` initializer.
fn check_filled(out: *mut c_void) {
    let mut back = [0i32; 256];
    unsafe {
        assert_eq!(
            __tgt_rtl_data_retrieve(0, back.as_mut_ptr() as *mut c_void, out, 1024),
            OK
        );
    }
    let table = [10, 20, 30, 40];
    for (i, v) in back.iter().enumerate() {
        assert_eq!(*v, 3 * i as i32 + table[i % 4], "element {i}");
    }
}

/// An address no allocation covers: the kernel's stores fault there.
const UNMAPPED: *mut c_void = 0x7ead_0000_0000 as *mut c_void;

fn new_info() -> AsyncInfo {
    AsyncInfo {
        queue: std::ptr::null_mut(),
    }
}

#[test]
#[ignore = "child process of fault_then_launch_then_synchronize_never_hangs"]
fn child_fault_then_launch_then_synchronize() {
    let (_img, kernel) = load_kernels();
    let out = alloc(0, 1024, TARGET_ALLOC_DEFAULT);
    unsafe {
        // A faulting kernel with a good one queued behind it on the same
        // stream: both fail, and synchronize says so.
        let mut a = new_info();
        assert_eq!(launch_fill(0, kernel, UNMAPPED, 0, &mut a), OK);
        // Refused at once (FAIL) when the fault already happened, else
        // queued (OK) and failed with the queue: either is right.
        let second = launch_fill(0, kernel, out, 0, &mut a);
        assert!(second == OK || second == FAIL);
        assert_eq!(__tgt_rtl_synchronize(0, &mut a), FAIL);
        assert!(a.queue.is_null());
        // The (only) HSA queue stopped on the fault. The next launch lands
        // on its slot: it must run on a replacement queue, and give the
        // right values.
        let mut b = new_info();
        assert_eq!(launch_fill(0, kernel, out, 0, &mut b), OK);
        assert_eq!(__tgt_rtl_synchronize(0, &mut b), OK);
        check_filled(out);
        // The same through query_async: it ends with a failure.
        let mut c = new_info();
        assert_eq!(launch_fill(0, kernel, UNMAPPED, 0, &mut c), OK);
        let mut last = OK;
        while !c.queue.is_null() {
            last = __tgt_rtl_query_async(0, &mut c);
            std::thread::yield_now();
        }
        assert_eq!(last, FAIL);
        // A synchronous launch after that works too.
        assert_eq!(launch_fill(0, kernel, out, 0, std::ptr::null_mut()), OK);
        check_filled(out);
    }
    assert_eq!(__tgt_rtl_data_delete(0, out, TARGET_ALLOC_DEFAULT), OK);
}

#[test]
fn fault_then_launch_then_synchronize_never_hangs() {
    let out = run_child(
        "child_fault_then_launch_then_synchronize",
        &[("LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "1")],
    );
    let (_, stderr) = common::texts(&out);
    // The fault's address and its decoded reason (a write to an address no
    // page backs).
    assert!(
        stderr
            .contains("memory access fault on the GPU at address 0x7ead00000000: PAGE_NOT_PRESENT"),
        "{stderr}"
    );
}

#[test]
#[ignore = "child process of fault_then_exit_never_hangs"]
fn child_fault_then_exit() {
    let (_img, kernel) = load_kernels();
    let out = alloc(0, 1024, TARGET_ALLOC_DEFAULT);
    // Faulting work, good work behind it and on another stream: none of it
    // synchronized. The process then exits through the plugin's teardown.
    let mut a = new_info();
    let mut b = new_info();
    assert_eq!(launch_fill(0, kernel, UNMAPPED, 0, &mut a), OK);
    // OK or FAIL, depending on whether the fault came first (see above);
    // the launch on `b` may land on the stopped queue or a new one.
    let _ = launch_fill(0, kernel, out, 0, &mut a);
    let _ = launch_fill(0, kernel, out, 0, &mut b);
    std::mem::forget(_img);
}

#[test]
fn fault_then_exit_never_hangs() {
    run_child(
        "child_fault_then_exit",
        &[("LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "1")],
    );
}

#[test]
#[ignore = "child process of oversized_launches_are_refused_and_exit_never_hangs"]
fn child_oversized_launches() {
    let (_img, kernel) = load_kernels();
    let out = alloc(0, 1024, TARGET_ALLOC_DEFAULT);
    unsafe {
        // 4 GiB of dynamic LDS: refused by launch_kernel itself; the async
        // info then reports the failure at once, through both calls.
        let mut a = new_info();
        assert_eq!(launch_fill(0, kernel, out, u32::MAX, &mut a), FAIL);
        assert!(!a.queue.is_null());
        assert_eq!(__tgt_rtl_query_async(0, &mut a), FAIL);
        assert!(a.queue.is_null());
        let mut b = new_info();
        assert_eq!(launch_fill(0, kernel, out, u32::MAX, &mut b), FAIL);
        assert_eq!(__tgt_rtl_synchronize(0, &mut b), FAIL);
        // One byte more than the 64 KiB of LDS a gfx90a workgroup has.
        assert_eq!(
            launch_fill(0, kernel, out, 65537, std::ptr::null_mut()),
            FAIL
        );
        // The device still works, then the process exits with a refused
        // launch left unsynchronized.
        assert_eq!(launch_fill(0, kernel, out, 0, std::ptr::null_mut()), OK);
        check_filled(out);
        let mut c = new_info();
        assert_eq!(launch_fill(0, kernel, out, u32::MAX, &mut c), FAIL);
    }
    std::mem::forget(_img);
}

#[test]
fn oversized_launches_are_refused_and_exit_never_hangs() {
    let out = run_child("child_oversized_launches", &[]);
    let (_, stderr) = common::texts(&out);
    // The message names the limit and the request.
    assert!(
        stderr.contains("bytes of LDS") && stderr.contains("65536 bytes"),
        "{stderr}"
    );
}

#[test]
#[ignore = "child process of a_forked_child_exits_without_touching_the_device"]
fn child_fork_after_use() {
    let (_img, kernel) = load_kernels();
    let out = alloc(0, 1024, TARGET_ALLOC_DEFAULT);
    assert_eq!(launch_fill(0, kernel, out, 0, std::ptr::null_mut()), OK);
    // SAFETY (test): the child only calls `exit`, which runs the plugin's
    // exit handler in a process where the HSA runtime's threads are gone.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        unsafe { libc::exit(7) };
    }
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7);
    // The parent's device still works.
    assert_eq!(launch_fill(0, kernel, out, 0, std::ptr::null_mut()), OK);
    check_filled(out);
    std::mem::forget(_img);
}

#[test]
fn a_forked_child_exits_without_touching_the_device() {
    run_child("child_fork_after_use", &[]);
}

// ------------------------------------------------------------------
// Bad inputs beyond the hangs.

/// Section headers of a 64-bit ELF: (file offset of the entry, sh_type,
/// sh_offset, sh_size, name).
fn section_headers(bytes: &[u8]) -> Vec<(usize, u32, u64, u64, String)> {
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let shoff = u64_at(40) as usize;
    let (entsize, num, strndx) = (u16_at(58), u16_at(60), u16_at(62));
    let str_off = u64_at(shoff + strndx * entsize + 24) as usize;
    (0..num)
        .map(|i| {
            let e = shoff + i * entsize;
            let name_at = str_off + u32_at(e) as usize;
            let len = bytes[name_at..].iter().position(|&b| b == 0).unwrap();
            let name = String::from_utf8_lossy(&bytes[name_at..name_at + len]).into_owned();
            (e, u32_at(e + 4), u64_at(e + 24), u64_at(e + 32), name)
        })
        .collect()
}

/// Loads `img` on device 0, launches its kernel and checks the values.
fn load_and_run(img: &mut LoadedImage) {
    let mut di = device_image(img);
    unsafe {
        assert_eq!(__tgt_rtl_is_valid_binary(&mut di), 1);
        let table = __tgt_rtl_load_binary(0, &mut di);
        assert!(!table.is_null());
        let kernel = (*(*table).entries_begin).addr;
        let out = alloc(0, 1024, TARGET_ALLOC_DEFAULT);
        assert_eq!(launch_fill(0, kernel, out, 0, std::ptr::null_mut()), OK);
        check_filled(out);
        assert_eq!(__tgt_rtl_data_delete(0, out, TARGET_ALLOC_DEFAULT), OK);
    }
}

/// `image_end` is not trusted: the extent comes from the ELF headers. An
/// end 1 TiB too far is harmless (nothing past the headers' extent is
/// read); an end that cuts the image short is refused.
#[test]
fn images_are_read_as_far_as_their_headers_say() {
    setup();
    let mut img = kernels_image();
    let len = img.bytes.len();
    let range = img.bytes.as_mut_ptr_range();
    let entries = img.entries.as_mut_ptr_range();
    let mut far = DeviceImage {
        image_start: range.start as *mut c_void,
        image_end: range.start.wrapping_add(1 << 40) as *mut c_void,
        entries_begin: entries.start,
        entries_end: entries.end,
    };
    let mut short = DeviceImage {
        image_end: range.start.wrapping_add(len - 64) as *mut c_void,
        ..far
    };
    unsafe {
        assert_eq!(__tgt_rtl_is_valid_binary(&mut far), 1);
        let table = __tgt_rtl_load_binary(0, &mut far);
        assert!(!table.is_null());
        assert_eq!(__tgt_rtl_is_valid_binary(&mut short), 0);
        assert!(__tgt_rtl_load_binary(0, &mut short).is_null());
    }
}

/// Damage outside what loading needs, which ROCm's loader and LLVM's
/// plugin accept: a `.symtab` whose offset points past the end of the
/// file, and random bytes over `.symtab` and `.comment` (neither is in a
/// loaded segment; symbols are looked up through `.dynsym` and the hash
/// table). Each image loads and its kernel computes the right values.
#[test]
fn damage_outside_what_the_load_needs_is_tolerated() {
    setup();
    let base = kernels_image();
    let sections = section_headers(&base.bytes);
    let find = |name: &str| sections.iter().find(|s| s.4 == name).unwrap().clone();
    let symtab = find(".symtab");
    let comment = find(".comment");
    let mut mutants = Vec::new();
    let mut m = base.bytes.clone();
    m[symtab.0 + 24..symtab.0 + 32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    mutants.push(m);
    for (_, _, off, size, _) in [&symtab, &comment] {
        let mut m = base.bytes.clone();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for b in &mut m[*off as usize..(*off + *size) as usize] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        mutants.push(m);
    }
    for bytes in mutants {
        let mut img = kernels_image();
        img.bytes = bytes;
        load_and_run(&mut img);
    }
}

#[test]
#[ignore = "child process of bad_inputs_get_messages_that_say_what_is_wrong"]
fn child_bad_inputs() {
    setup();
    unsafe {
        // An entry naming a kernel, then a global, the image lacks.
        for (name, size) in [("no_such_kernel", 0usize), ("no_such_global", 4)] {
            let mut img = kernels_image();
            let c = std::ffi::CString::new(name).unwrap();
            img.entries[0].name = c.as_ptr() as *mut _;
            img.entries[0].size = size;
            let mut di = device_image(&mut img);
            assert!(__tgt_rtl_load_binary(0, &mut di).is_null());
        }
        // An AMDGPU ELF with a broken section header entry size.
        let mut img = kernels_image();
        img.bytes[58..60].copy_from_slice(&7u16.to_le_bytes());
        let mut di = device_image(&mut img);
        assert_eq!(__tgt_rtl_is_valid_binary(&mut di), 0);
        assert!(__tgt_rtl_load_binary(0, &mut di).is_null());
    }
    // 1 GiB on a 64 MiB device.
    assert!(__tgt_rtl_data_alloc(0, 1 << 30, std::ptr::null_mut(), TARGET_ALLOC_DEFAULT).is_null());
    // A runaway wave: the kernel needs more than 50 instructions per wave.
    let (_img, kernel) = load_kernels();
    let out = alloc(0, 1024, TARGET_ALLOC_DEFAULT);
    assert_eq!(launch_fill(0, kernel, out, 0, std::ptr::null_mut()), FAIL);
    std::mem::forget(_img);
}

#[test]
fn bad_inputs_get_messages_that_say_what_is_wrong() {
    let out = run_child(
        "child_bad_inputs",
        &[("HSA_SIM_MAX_WAVE_INSTRUCTIONS", "50")],
    );
    let (_, stderr) = common::texts(&out);
    for want in [
        "no kernel no_such_kernel.kd",
        "no global no_such_global",
        "corrupt AMDGPU ELF",
        "allocation of 1073741824 bytes of device memory failed: the pool has",
        "HSA_SIM_MAX_WAVE_INSTRUCTIONS",
    ] {
        assert!(stderr.contains(want), "no {want:?} in:\n{stderr}");
    }
}

/// Kinds at free, as LLVM 16's plugin: HOST on a DEFAULT allocation fails
/// (and here frees nothing), DEFAULT on a HOST allocation frees it.
#[test]
fn a_host_free_of_another_kind_fails() {
    setup();
    let d = alloc(0, 64, TARGET_ALLOC_DEFAULT);
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_HOST), FAIL);
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), OK);
    let s = alloc(0, 64, TARGET_ALLOC_SHARED);
    assert_eq!(__tgt_rtl_data_delete(0, s, TARGET_ALLOC_HOST), FAIL);
    assert_eq!(__tgt_rtl_data_delete(0, s, TARGET_ALLOC_SHARED), OK);
    let h = alloc(0, 64, TARGET_ALLOC_HOST);
    assert_eq!(__tgt_rtl_data_delete(0, h, TARGET_ALLOC_DEFAULT), OK);
    assert_eq!(__tgt_rtl_data_delete(0, h, TARGET_ALLOC_HOST), FAIL);
}

/// Locking host memory that is not all mapped fails (ROCm cannot pin
/// missing pages); the mapped part alone locks.
#[test]
fn locking_unmapped_host_memory_fails() {
    setup();
    let page = 4096usize;
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            2 * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(
            libc::munmap((p as *mut u8).add(page) as *mut c_void, page),
            0
        );
        let mut alias: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            __tgt_rtl_data_lock(0, p, (2 * page) as i64, &mut alias),
            FAIL
        );
        assert_eq!(__tgt_rtl_data_lock(0, p, page as i64, &mut alias), OK);
        assert_eq!(__tgt_rtl_data_unlock(0, p), OK);
        libc::munmap(p, page);
    }
}

#[test]
#[ignore = "child process of exit_with_work_that_never_ends_is_bounded"]
fn child_exit_with_work_that_never_ends() {
    let (_img, kernel) = load_kernels();
    let out = alloc(0, 1024, TARGET_ALLOC_DEFAULT);
    let plugin = omptarget_amdgpu::plugin::Plugin::get().unwrap();
    let rt = plugin.rt().unwrap();
    let dev = rt.device(0).unwrap();
    let pool = omptarget_amdgpu::signal::SignalPool::new(&rt.hsa, 1).unwrap();
    // A kernel behind a barrier on a signal nobody will ever complete.
    let hold = pool.get().unwrap();
    let mut a = new_info();
    dev.stream_for(&mut a)
        .unwrap()
        .wait_for(hold.clone())
        .unwrap();
    assert_eq!(launch_fill(0, kernel, out, 0, &mut a), OK);
    std::mem::forget((hold, pool, _img));
}

/// Exit with work that can never finish: the plugin's teardown waits a
/// bounded time, says so, and the process ends.
#[test]
fn exit_with_work_that_never_ends_is_bounded() {
    let out = run_child("child_exit_with_work_that_never_ends", &[]);
    let (_, stderr) = common::texts(&out);
    assert!(stderr.contains("work still pending"), "{stderr}");
}

/// A copy the runtime refuses leaves its async info failed: synchronize
/// and query_async say so at once (and release the stream).
#[test]
fn a_refused_copy_fails_its_async_info() {
    setup();
    let mut host = pattern(64, 5);
    let hp = host.as_mut_ptr() as *mut c_void;
    let bogus = 0x1234_5000 as *mut c_void;
    unsafe {
        let mut a = new_info();
        assert_eq!(__tgt_rtl_data_submit_async(0, bogus, hp, 64, &mut a), FAIL);
        assert!(!a.queue.is_null());
        assert_eq!(__tgt_rtl_synchronize(0, &mut a), FAIL);
        assert!(a.queue.is_null());
        let mut b = new_info();
        assert_eq!(
            __tgt_rtl_data_retrieve_async(0, hp, bogus, 64, &mut b),
            FAIL
        );
        assert_eq!(__tgt_rtl_query_async(0, &mut b), FAIL);
        assert!(b.queue.is_null());
        // The stream is clean for its next user.
        let d = alloc(0, 64, TARGET_ALLOC_DEFAULT);
        let mut c = new_info();
        let want = host.clone();
        assert_eq!(__tgt_rtl_data_submit_async(0, d, hp, 64, &mut c), OK);
        let mut back = vec![0u8; 64];
        assert_eq!(
            __tgt_rtl_data_retrieve_async(0, back.as_mut_ptr() as *mut c_void, d, 64, &mut c),
            OK
        );
        assert_eq!(__tgt_rtl_synchronize(0, &mut c), OK);
        assert_eq!(back, want);
        assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), OK);
    }
}

/// Event and stream handles carry a generation: once destroyed (an event)
/// or returned by `synchronize` (a stream), a handle fails every entry
/// point, even after its slot was given to a new event or stream, and a
/// handle of one device fails on the other.
#[test]
fn stale_event_and_stream_handles_fail() {
    setup();
    let src = pattern(256, 9);
    let d = alloc(0, 256, TARGET_ALLOC_DEFAULT);
    let submit = |info: &mut AsyncInfo| unsafe {
        __tgt_rtl_data_submit_async(0, d, src.as_ptr() as *mut c_void, 256, info)
    };
    unsafe {
        // Events.
        let mut old: *mut c_void = std::ptr::null_mut();
        assert_eq!(__tgt_rtl_create_event(0, &mut old), OK);
        assert!(!old.is_null());
        assert_eq!(__tgt_rtl_destroy_event(0, old), OK);
        let mut ev: *mut c_void = std::ptr::null_mut();
        assert_eq!(__tgt_rtl_create_event(0, &mut ev), OK);
        assert_ne!(
            ev, old,
            "a new event must not get the destroyed one's handle"
        );
        let mut a = new_info();
        assert_eq!(submit(&mut a), OK);
        assert_eq!(__tgt_rtl_record_event(0, old, &mut a), FAIL);
        assert_eq!(__tgt_rtl_wait_event(0, old, &mut a), FAIL);
        assert_eq!(__tgt_rtl_sync_event(0, old), FAIL);
        assert_eq!(__tgt_rtl_destroy_event(0, old), FAIL);
        // The live event still works, on its own device only.
        assert_eq!(__tgt_rtl_record_event(0, ev, &mut a), OK);
        assert_eq!(__tgt_rtl_sync_event(1, ev), FAIL);
        assert_eq!(__tgt_rtl_sync_event(0, ev), OK);
        assert_eq!(__tgt_rtl_destroy_event(0, ev), OK);

        // Streams (`__tgt_async_info::Queue`).
        assert_eq!(__tgt_rtl_synchronize(0, &mut a), OK);
        assert!(a.queue.is_null());
        // `a`'s first stream handle, kept after `synchronize` returned it.
        let mut first = new_info();
        assert_eq!(submit(&mut first), OK);
        let stale = first.queue;
        assert_eq!(__tgt_rtl_synchronize(0, &mut first), OK);
        // A new async info takes a stream from the pool (the returned one
        // unless another test holds it): its handle must differ.
        let mut b = new_info();
        assert_eq!(submit(&mut b), OK);
        assert_ne!(b.queue, stale);
        let mut s = AsyncInfo { queue: stale };
        assert_eq!(submit(&mut s), FAIL);
        assert_eq!(__tgt_rtl_query_async(0, &mut s), FAIL);
        assert_eq!(__tgt_rtl_synchronize(0, &mut s), FAIL);
        assert_eq!(__tgt_rtl_release_async_info(0, &mut s), FAIL);
        // `b`'s live handle is not another device's.
        let mut other = AsyncInfo { queue: b.queue };
        assert_eq!(__tgt_rtl_synchronize(1, &mut other), FAIL);
        assert_eq!(__tgt_rtl_synchronize(0, &mut b), OK);
        assert!(b.queue.is_null());
    }
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), OK);
}

/// The functions LLVM 16's plugins resolve but ours never calls.
const UNCALLED_HSA_FUNCTIONS: &[&str] = &[
    "hsa_amd_pointer_info",
    "hsa_amd_memory_fill",
    "hsa_memory_copy",
    "hsa_executable_iterate_symbols",
    "hsa_signal_create",
];

/// Builds (with clang-16) an HSA runtime that forwards every function of
/// the header to the virtual device except `missing`, which it does not
/// export. Each forwarder is a bare `jmp` through a pointer resolved when
/// the shim is loaded, so arguments and results pass untouched whatever the
/// prototype. Returns the library's path.
fn forwarding_runtime_without(missing: &[&str]) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hsa_shim");
    std::fs::create_dir_all(&dir).unwrap();
    let forwarded: Vec<&str> = omptarget_amdgpu::hsa_sys::HSA_FUNCTION_NAMES
        .iter()
        .copied()
        .filter(|n| !missing.contains(n))
        .collect();
    let mut c = String::from("#include <dlfcn.h>\n#include <stdlib.h>\n");
    for n in &forwarded {
        c += &format!(
            "__attribute__((used)) static void *to_{n};\n\
             __attribute__((naked)) void {n}(void) {{ __asm__(\"jmp *to_{n}(%rip)\"); }}\n"
        );
    }
    c += "__attribute__((constructor)) static void resolve(void) {\n\
          void *h = dlopen(getenv(\"HSA_SHIM_TARGET\"), RTLD_NOW | RTLD_LOCAL);\n\
          if (!h) abort();\n";
    for n in &forwarded {
        c += &format!("  to_{n} = dlsym(h, \"{n}\");\n");
    }
    c += "}\n";
    let src = dir.join(format!("shim{}.c", std::process::id()));
    let lib = dir.join(format!("libhsa_shim{}.so", std::process::id()));
    std::fs::write(&src, c).unwrap();
    let status = std::process::Command::new("clang-16")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src)
        .arg("-ldl")
        .status()
        .expect("clang-16 must be installed (cargo xtask setup)");
    assert!(status.success(), "clang-16 failed on {}", src.display());
    lib
}

#[test]
#[ignore = "child process of a_runtime_without_uncalled_functions_serves_the_plugin"]
fn child_runtime_without_uncalled_functions() {
    let shim = std::env::var("HSA_SHIM").unwrap();
    // The runtime really lacks them (hsa-sys resolves by name with dlsym).
    // SAFETY: the shim forwards to the virtual device, whose initialisers
    // need nothing; nothing is called here.
    let api = unsafe { omptarget_amdgpu::hsa_sys::HsaApi::load_from(&[shim.as_str()]) }.unwrap();
    let f = api.functions();
    assert!(f.hsa_amd_pointer_info.is_none());
    assert!(f.hsa_amd_memory_fill.is_none());
    assert!(f.hsa_memory_copy.is_none());
    assert!(f.hsa_executable_iterate_symbols.is_none());
    assert!(f.hsa_signal_create.is_none());
    drop(api);
    std::env::set_var("OMPTARGET_AMDGPU_HSA_LIBRARY", &shim);
    std::env::set_var("HSA_SIM_GPUS", "2");
    std::env::set_var("HSA_SIM_DEVICE_MEMORY", "64M");
    assert_eq!(__tgt_rtl_init_plugin(), 0);
    assert_eq!(__tgt_rtl_number_of_devices(), 2);
    assert_eq!(__tgt_rtl_init_device(0), OK);
    // A round trip through device memory works over the shim.
    let src = pattern(4096, 5);
    let mut back = vec![0u8; 4096];
    let d = alloc(0, 4096, TARGET_ALLOC_DEFAULT);
    unsafe {
        assert_eq!(
            __tgt_rtl_data_submit(0, d, src.as_ptr() as *mut c_void, 4096),
            OK
        );
        assert_eq!(
            __tgt_rtl_data_retrieve(0, back.as_mut_ptr() as *mut c_void, d, 4096),
            OK
        );
    }
    assert!(back == src);
    assert_eq!(__tgt_rtl_data_delete(0, d, TARGET_ALLOC_DEFAULT), OK);
}

/// Our plugin needs only the HSA functions it calls: over a runtime that
/// lacks the ones LLVM's plugins resolve but ours never calls, it still
/// reports the devices and moves data.
#[test]
fn a_runtime_without_uncalled_functions_serves_the_plugin() {
    let shim = forwarding_runtime_without(UNCALLED_HSA_FUNCTIONS);
    let sim = common::sim_library();
    run_child(
        "child_runtime_without_uncalled_functions",
        &[
            ("HSA_SHIM", shim.to_str().unwrap()),
            ("HSA_SHIM_TARGET", sim.to_str().unwrap()),
        ],
    );
}
