//! The virtual device's gaps that LLVM 19's offload tests found (issue 33, item
//! 4), each as an HSA client sees it, with kernels from `tests/fixtures/device_gaps.s`
//! and `device_gaps_lib.s`:
//!
//! - code in another loaded code object, called through a pointer (LLVM's
//!   `offload/test/offloading/shared_lib_fp_mapping.c`), runs; a jump into data or
//!   into a code object that was destroyed is still a clean fault;
//! - scratch past the packet's private segment size but inside the wave's slot of
//!   the queue's scratch, as ROCr sizes that slot, is the wave's own (LLVM 19 at -O3
//!   on `thread_state_1.c` spills there); past the slot the dispatch fails as a
//!   private segment overflow naming the kernel, the lane and the offset;
//! - the waves of a workgroup start together: a flag that every wave reads early
//!   and the first wave sets some 60 instructions later is seen unset by all of
//!   them, as on a GPU (LLVM 19's `pushDST`,
//!   `offload/test/offloading/dynamic-schedule-non-spmd.cpp`), and one that the
//!   first wave clears after a barrier, behind a wait for memory, is seen set by
//!   all of them (its `popDST`).
// These tests are a C client of the HSA API: every `unsafe` is an FFI call
// with pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The records the runtime logged, kept by the logger this test binary installs
/// before its first `hsa_init` (the runtime then keeps it).
static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Keep;

impl log::Log for Keep {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            LOGGED.lock().unwrap().push(r.args().to_string());
        }
    }
    fn flush(&self) {}
}

fn open() -> Session {
    static LOGGER: OnceLock<()> = OnceLock::new();
    LOGGER.get_or_init(|| {
        // The start-phase holding of (c) is opt-in for its cost; the runtime reads
        // its knobs at the first hsa_init, which comes after this.
        std::env::set_var("HSA_SIM_WAVES_TOGETHER", "1");
        log::set_logger(&Keep).expect("no logger yet");
        log::set_max_level(log::LevelFilter::Warn);
    });
    Session::open()
}

/// Whether a logged line contains every one of `parts`.
fn logged(parts: &[&str]) -> bool {
    LOGGED
        .lock()
        .unwrap()
        .iter()
        .any(|l| parts.iter().all(|p| l.contains(p)))
}

fn main_image() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| assemble_fixture("device_gaps"))
}

fn lib_image() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| assemble_fixture("device_gaps_lib"))
}

struct Errors {
    status: AtomicU32,
    calls: AtomicUsize,
}

unsafe extern "C" fn on_queue_error(status: hsa_status_t, _q: *mut hsa_queue_t, data: *mut c_void) {
    let e = unsafe { &*(data as *const Errors) };
    e.status.store(status, Ordering::SeqCst);
    e.calls.fetch_add(1, Ordering::SeqCst);
}

/// Runs `k` over `grid` work-items in workgroups of `wg` with the kernarg words
/// `args` (the packet asking for `private` scratch bytes per lane), on a queue of
/// its own created with `queue_private` scratch bytes per lane; `Err(status)`
/// when the queue reported an error instead of completing. With `after`, a
/// second dispatch of it follows on the same queue once the first completed.
fn run(
    k: &KernelObject,
    (grid, wg): (u32, u16),
    args: &[u64],
    (private, queue_private): (u32, u32),
    after: Option<(&KernelObject, u32, &[u64])>,
) -> Result<(), u32> {
    let gpu = gpus()[0];
    let errors = Box::new(Errors {
        status: AtomicU32::new(0),
        calls: AtomicUsize::new(0),
    });
    let mut q: *mut hsa_queue_t = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            hsa_queue_create(
                gpu,
                64,
                HSA_QUEUE_TYPE_MULTI,
                Some(on_queue_error),
                &*errors as *const Errors as *mut c_void,
                queue_private,
                u32::MAX,
                &mut q,
            )
        },
        0
    );
    let mut outcome = Ok(());
    let mut dispatches = vec![(k, private, args)];
    dispatches.extend(after);
    for (k, private, args) in dispatches {
        let kernarg = kernarg_segment(gpu, args);
        let done = signal(1);
        let mut packet = dispatch_packet(k, wg, grid, kernarg, done);
        // Bytes 24..28 of the packet: private_segment_size.
        packet[3] = (packet[3] & !0xFFFF_FFFF) | u64::from(private);
        submit(q, packet, KERNEL_HEADER);
        let deadline = Instant::now() + Duration::from_secs(60);
        outcome = loop {
            if errors.calls.load(Ordering::SeqCst) > 0 {
                break Err(errors.status.load(Ordering::SeqCst));
            }
            if hsa_signal_load_scacquire(done) == 0 {
                break Ok(());
            }
            assert!(Instant::now() < deadline, "neither done nor failed");
            std::thread::sleep(Duration::from_micros(200));
        };
        assert_eq!(hsa_signal_destroy(done), 0);
        if outcome.is_err() {
            break;
        }
    }
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
    outcome
}

/// A zero-filled buffer of `n` dwords in the CPU's fine-grained pool, which `gpu`
/// may access.
fn buffer(gpu: hsa_agent_t, n: usize) -> *mut u32 {
    let p = alloc(
        pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED),
        4 * n,
    );
    assert_eq!(
        unsafe { hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), p as *const c_void) },
        0
    );
    unsafe { std::ptr::write_bytes(p, 0, 4 * n) };
    p as *mut u32
}

fn words(p: *mut u32, n: usize) -> Vec<u32> {
    unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
}

/// The value of the 8-byte variable `name` of `exe`, read through `hsa_memory_copy`.
fn variable_u64(exe: hsa_executable_t, gpu: hsa_agent_t, name: &str) -> u64 {
    let n = std::ffi::CString::new(name).unwrap();
    let mut sym = hsa_executable_symbol_t { handle: 0 };
    let mut addr = 0u64;
    let mut value = 0u64;
    unsafe {
        assert_eq!(
            hsa_executable_get_symbol_by_name(exe, n.as_ptr(), &gpu, &mut sym),
            0
        );
        assert_eq!(
            hsa_executable_symbol_get_info(
                sym,
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
                &mut addr as *mut u64 as *mut c_void
            ),
            0
        );
        assert_eq!(
            hsa_memory_copy(
                &mut value as *mut u64 as *mut c_void,
                addr as *const c_void,
                8
            ),
            0
        );
    }
    value
}

/// (a) A kernel calls a function of another executable through a pointer: the
/// function runs (out[i] = 42 + i, as `lib_value` in device_gaps_lib.s computes).
/// A pointer into a data buffer, and the same function pointer once its
/// executable is destroyed, are bad PCs: the queue reports an illegal
/// instruction and the process carries on.
#[test]
fn code_of_another_loaded_code_object_runs() {
    let _s = open();
    let gpu = gpus()[0];
    let main = load_executable(gpu, main_image());
    let lib = load_executable(gpu, lib_image());
    let k = kernel_object(main, gpu, "call_through");
    let f = variable_u64(lib, gpu, "lib_value_ptr");
    let out = buffer(gpu, 128);
    assert_eq!(
        run(&k, (128, 128), &[f, out as u64], (0, u32::MAX), None),
        Ok(())
    );
    let want: Vec<u32> = (0..128).map(|i| 42 + i).collect();
    assert_eq!(words(out, 128), want);
    // Data is no code object.
    let data = buffer(gpu, 64);
    assert_eq!(
        run(
            &k,
            (64, 64),
            &[data as u64, out as u64],
            (0, u32::MAX),
            None
        ),
        Err(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION)
    );
    assert!(logged(&[
        "wave 0: program counter",
        "is outside the code object"
    ]));
    // Nor is a code object that was destroyed.
    assert_eq!(hsa_executable_destroy(lib), 0);
    assert_eq!(
        run(&k, (64, 64), &[f, out as u64], (0, u32::MAX), None),
        Err(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION)
    );
    assert_eq!(hsa_executable_destroy(main), 0);
}

/// (b) `spill_past` declares 96 bytes per lane and uses byte 120. On a queue
/// created as LLVM's plugins create theirs (UINT32_MAX: 2048 bytes per lane, ROCr's
/// default), that byte lies in the wave's slot: each lane reads back what it
/// stored (1000 + id). On a queue of 96 bytes per lane it does not: the dispatch
/// fails as a memory fault, logged as a private segment overflow naming the
/// kernel, the size declared, the offset and the slot. Past 2048 it fails on the
/// default queue too. A queue grown by a dispatch that asked for 200 bytes per
/// lane (rounded to 208) keeps its slots: byte 120 then fits.
#[test]
fn scratch_past_the_declared_size_is_the_waves_own_inside_its_slot() {
    let _s = open();
    let gpu = gpus()[0];
    let main = load_executable(gpu, main_image());
    let k = kernel_object(main, gpu, "spill_past");
    assert_eq!(
        k.private, 96,
        "the fixture's .amdhsa_private_segment_fixed_size"
    );
    let out = buffer(gpu, 128);
    assert_eq!(
        run(&k, (128, 128), &[out as u64, 120], (96, u32::MAX), None),
        Ok(())
    );
    let want: Vec<u32> = (0..128).map(|i| 1000 + i).collect();
    assert_eq!(words(out, 128), want);

    assert_eq!(
        run(&k, (128, 128), &[out as u64, 120], (96, 96), None),
        Err(HSA_STATUS_ERROR_MEMORY_FAULT)
    );
    assert!(logged(&[
        "kernel `spill_past`: workgroup (0, 0, 0) wave 0: private segment overflow: 96 bytes per lane declared, lane ",
        " accessed offset 120 (the wave's scratch slot holds 96 bytes per lane",
    ]));

    assert_eq!(
        run(&k, (128, 128), &[out as u64, 4096], (96, u32::MAX), None),
        Err(HSA_STATUS_ERROR_MEMORY_FAULT)
    );
    assert!(logged(&[
        "kernel `spill_past`: workgroup (0, 0, 0) wave 0: private segment overflow: 96 bytes per lane declared, lane ",
        " accessed offset 4096 (the wave's scratch slot holds 2048 bytes per lane",
    ]));

    let out2 = buffer(gpu, 128);
    assert_eq!(
        run(
            &k,
            (128, 128),
            &[out as u64, 200],
            (200, 96),
            Some((&k, 96, &[out2 as u64, 120]))
        ),
        Ok(())
    );
    assert_eq!(words(out2, 128), want);
    assert_eq!(hsa_executable_destroy(main), 0);
}

/// (c) Every wave of a workgroup of four sees the flag unset that the first wave
/// sets some 60 instructions after reading it: they start together, as on a GPU,
/// rather than one after another until a barrier. Two workgroups count 8.
#[test]
fn the_waves_of_a_workgroup_start_together() {
    let _s = open();
    let gpu = gpus()[0];
    let main = load_executable(gpu, main_image());
    let k = kernel_object(main, gpu, "start_together");
    let count = buffer(gpu, 1);
    assert_eq!(
        run(&k, (256, 256), &[count as u64], (0, u32::MAX), None),
        Ok(())
    );
    assert_eq!(words(count, 1), [4]);
    let count = buffer(gpu, 1);
    assert_eq!(
        run(&k, (512, 256), &[count as u64], (0, u32::MAX), None),
        Ok(())
    );
    assert_eq!(words(count, 1), [8]);
    assert_eq!(hsa_executable_destroy(main), 0);
}

/// (c) After a barrier, every wave of a workgroup of four reads a flag the first
/// wave set before it, although the first wave clears it a dozen instructions
/// after the barrier: a wave ahead of the others stores to shared memory only
/// once they caught up, as the waves of a GPU's workgroup, issuing together,
/// all read before that store lands.
#[test]
fn a_wave_ahead_stores_to_shared_memory_after_the_others_caught_up() {
    let _s = open();
    let gpu = gpus()[0];
    let main = load_executable(gpu, main_image());
    let k = kernel_object(main, gpu, "clear_after_wait");
    let count = buffer(gpu, 1);
    assert_eq!(
        run(&k, (256, 256), &[count as u64], (0, u32::MAX), None),
        Ok(())
    );
    assert_eq!(words(count, 1), [4]);
    assert_eq!(hsa_executable_destroy(main), 0);
}
