//! `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK` answers the kernel
//! descriptor's USES_DYNAMIC_STACK bit. Loaders (LLVM 19's `amdhsa-loader`,
//! ours) give a dispatch of such a kernel a larger private segment than the
//! fixed size; answering false left clang-19 programs, whose call stack
//! outgrows the fixed size, with too little scratch.
// This test is a C client of the HSA API: every `unsafe` is an FFI call with
// pointers to live locals, so they are not annotated one by one.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;
use common::*;

#[test]
fn dynamic_callstack_follows_the_descriptor_bit() {
    let _s = Session::open();
    let gpu = gpus()[0];
    let image = assemble_fixture_with("dynamic_stack", &["-mcode-object-version=5"]);
    let exe = load_executable(gpu, &image);
    // Expected values: the .amdhsa_* directives of tests/fixtures/dynamic_stack.s.
    let grows = kernel_object(exe, gpu, "grows");
    assert!(grows.dynamic_stack);
    assert_eq!(grows.private, 48);
    let fixed = kernel_object(exe, gpu, "fixed");
    assert!(!fixed.dynamic_stack);
    assert_eq!(fixed.private, 32);
    assert_eq!(hsa_executable_destroy(exe), 0);
}
