//! Kernels must not inherit the host program's floating-point mode: a client
//! built with fast-math runs with flush-to-zero and denormals-are-zero set in
//! MXCSR, and the runtime's threads inherit that from the client thread that
//! creates them. A kernel that keeps f32 denormals (MODE) must still get the
//! exact denormal result. A test binary of its own, because it changes the
//! main thread's FP mode before `hsa_init`.
// This test is a C client of the HSA API: every `unsafe` is an FFI call with
// pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;

#[cfg(target_arch = "x86_64")]
fn set_ftz_daz() {
    let mut mxcsr: u32 = 0;
    unsafe {
        std::arch::asm!("stmxcsr [{0}]", in(reg) &mut mxcsr, options(nostack));
        mxcsr |= (1 << 15) | (1 << 6); // FTZ | DAZ
        std::arch::asm!("ldmxcsr [{0}]", in(reg) &mxcsr, options(nostack, readonly));
    }
    // The host itself now flushes: the smallest denormal added to itself is 0.
    let d = std::hint::black_box(f32::from_bits(1));
    assert_eq!(
        (d + d).to_bits(),
        0,
        "FTZ/DAZ did not take effect on the host"
    );
}

#[test]
#[cfg(target_arch = "x86_64")]
fn kernels_keep_denormals_when_the_client_flushes_them() {
    set_ftz_daz();
    let _s = Session::open();
    let gpu = gpus()[0];
    let exe = load_executable(gpu, &assemble_fixture("fp_env"));
    let k = kernel_object(exe, gpu, "denorm");
    let out = alloc(
        pool_with(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED),
        4096,
    );
    let kernarg = kernarg_segment(gpu, &[out as u64]);
    let q = queue(gpu, 64);
    let done = signal(1);
    submit(q, dispatch_packet(&k, 64, 64, kernarg, done), KERNEL_HEADER);
    wait_eq(done, 0);
    let bits = unsafe { std::ptr::read(out as *const u32) };
    // 2^-149 + 2^-149 = 2^-148, exactly representable as the denormal 0x00000002.
    assert_eq!(
        bits, 2,
        "the kernel's f32 add was flushed by the host's FP mode"
    );
    assert_eq!(unsafe { hsa_queue_destroy(q) }, 0);
}
