//! Shared helpers of the virtual device's API tests: thin wrappers that call
//! the exported C functions exactly as a client would.
#![allow(dead_code, unused_imports, clippy::undocumented_unsafe_blocks)]

pub use hsa_runtime64::api::code::*;
pub use hsa_runtime64::api::memory::*;
pub use hsa_runtime64::api::queue::*;
pub use hsa_runtime64::api::signal::*;
pub use hsa_runtime64::api::system::*;
pub use hsa_sys::*;
use std::ffi::c_void;

/// Holds one `hsa_init` reference for the life of a test.
pub struct Session;
impl Session {
    pub fn open() -> Session {
        assert_eq!(hsa_init(), HSA_STATUS_SUCCESS);
        Session
    }
}
impl Drop for Session {
    fn drop(&mut self) {
        assert_eq!(hsa_shut_down(), HSA_STATUS_SUCCESS);
    }
}

unsafe extern "C" fn collect_agent(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
    let v = unsafe { &mut *(data as *mut Vec<hsa_agent_t>) };
    v.push(agent);
    HSA_STATUS_SUCCESS
}

pub fn agents() -> Vec<hsa_agent_t> {
    let mut v: Vec<hsa_agent_t> = Vec::new();
    let s = unsafe { hsa_iterate_agents(Some(collect_agent), &mut v as *mut _ as *mut c_void) };
    assert_eq!(s, HSA_STATUS_SUCCESS);
    v
}

pub fn device_type(a: hsa_agent_t) -> u32 {
    let mut t = 99u32;
    assert_eq!(
        unsafe { hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &mut t as *mut _ as *mut c_void) },
        0
    );
    t
}

pub fn gpus() -> Vec<hsa_agent_t> {
    agents()
        .into_iter()
        .filter(|a| device_type(*a) == HSA_DEVICE_TYPE_GPU)
        .collect()
}

pub fn cpu() -> hsa_agent_t {
    agents()
        .into_iter()
        .find(|a| device_type(*a) == HSA_DEVICE_TYPE_CPU)
        .expect("a CPU agent")
}

unsafe extern "C" fn collect_pool(p: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
    let v = unsafe { &mut *(data as *mut Vec<hsa_amd_memory_pool_t>) };
    v.push(p);
    HSA_STATUS_SUCCESS
}

pub fn pools(a: hsa_agent_t) -> Vec<hsa_amd_memory_pool_t> {
    let mut v: Vec<hsa_amd_memory_pool_t> = Vec::new();
    let s = unsafe {
        hsa_amd_agent_iterate_memory_pools(a, Some(collect_pool), &mut v as *mut _ as *mut c_void)
    };
    assert_eq!(s, HSA_STATUS_SUCCESS);
    v
}

pub fn pool_u32(p: hsa_amd_memory_pool_t, attr: u32) -> u32 {
    let mut v = 0u32;
    assert_eq!(
        unsafe { hsa_amd_memory_pool_get_info(p, attr, &mut v as *mut _ as *mut c_void) },
        0
    );
    v
}

/// The first pool of `a` with every bit of `flags` set (global segment).
pub fn pool_with(a: hsa_agent_t, flags: u32) -> hsa_amd_memory_pool_t {
    pools(a)
        .into_iter()
        .find(|p| {
            pool_u32(*p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT) == HSA_AMD_SEGMENT_GLOBAL
                && pool_u32(*p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS) & flags == flags
        })
        .expect("pool with the flags")
}

pub fn alloc(pool: hsa_amd_memory_pool_t, size: usize) -> *mut u8 {
    let mut p: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe { hsa_amd_memory_pool_allocate(pool, size, 0, &mut p) },
        HSA_STATUS_SUCCESS
    );
    assert!(!p.is_null());
    p as *mut u8
}

/// A kernarg segment holding `args` (8 bytes each, padded to 64 bytes) in the
/// CPU agent's kernarg pool, made accessible to `gpu`.
pub fn kernarg_segment(gpu: hsa_agent_t, args: &[u64]) -> *mut u8 {
    let kernarg = alloc(
        pool_with(cpu(), HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT),
        (8 * args.len()).max(64),
    );
    for (i, a) in args.iter().enumerate() {
        unsafe { std::ptr::write((kernarg as *mut u64).add(i), *a) };
    }
    assert_eq!(
        unsafe { hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), kernarg as *const c_void) },
        HSA_STATUS_SUCCESS
    );
    kernarg
}

pub fn signal(v: i64) -> hsa_signal_t {
    let mut s = hsa_signal_t { handle: 0 };
    assert_eq!(
        unsafe { hsa_signal_create(v, 0, std::ptr::null(), &mut s) },
        HSA_STATUS_SUCCESS
    );
    s
}

pub fn queue(gpu: hsa_agent_t, size: u32) -> *mut hsa_queue_t {
    let mut q: *mut hsa_queue_t = std::ptr::null_mut();
    let s = unsafe {
        hsa_queue_create(
            gpu,
            size,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            u32::MAX,
            u32::MAX,
            &mut q,
        )
    };
    assert_eq!(s, HSA_STATUS_SUCCESS);
    q
}

/// Writes `packet` (64 bytes) into the next slot, header last, and rings the doorbell.
/// `header_word` is the first 32 bits (header | setup << 16).
pub fn submit(q: *mut hsa_queue_t, packet: [u64; 8], header_word: u32) -> u64 {
    unsafe {
        let index = hsa_queue_add_write_index_relaxed(q, 1);
        let size = u64::from((*q).size);
        while index - hsa_queue_load_read_index_scacquire(q) >= size {
            std::hint::spin_loop();
        }
        let slot = ((*q).base_address as *mut u64).add(((index % size) * 8) as usize);
        for (i, w) in packet.iter().enumerate().skip(1) {
            std::ptr::write_volatile(slot.add(i), *w);
        }
        let first = (packet[0] & !0xffff_ffff) | u64::from(header_word);
        // Publish the header with one atomic store after the body.
        let a = &*(slot as *const std::sync::atomic::AtomicU64);
        a.store(first, std::sync::atomic::Ordering::Release);
        hsa_signal_store_screlease((*q).doorbell_signal, index as i64);
        index
    }
}

/// Header word of a barrier-AND packet (acquire+release system scope, no barrier bit).
pub const BARRIER_AND_HEADER: u32 = 0x1403;
/// Header word of a barrier-OR packet.
pub const BARRIER_OR_HEADER: u32 = 0x1405;

pub fn barrier_packet(deps: &[hsa_signal_t], completion: hsa_signal_t) -> [u64; 8] {
    let mut p = [0u64; 8];
    for (i, d) in deps.iter().enumerate() {
        p[1 + i] = d.handle;
    }
    p[7] = completion.handle;
    p
}

pub fn wait_eq(s: hsa_signal_t, v: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while hsa_signal_wait_scacquire(
        s,
        HSA_SIGNAL_CONDITION_EQ,
        v,
        1_000_000_000,
        HSA_WAIT_STATE_BLOCKED,
    ) != v
    {
        assert!(
            std::time::Instant::now() < deadline,
            "signal never reached {v}"
        );
    }
}

/// Runs clang-16 (with the LLVM 16 tools first on PATH); panics with its stderr on failure.
pub fn clang(args: &[&str]) {
    let path = format!(
        "/usr/lib/llvm-16/bin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("clang-16")
        .args(args)
        .env("PATH", path)
        .output()
        .expect("clang-16 runs");
    assert!(
        out.status.success(),
        "clang-16 {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A scratch directory under the target dir for files a test builds.
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Loads `image` for `gpu` through a code object reader into a fresh
/// executable and returns `hsa_executable_load_agent_code_object`'s status
/// (the executable and reader are destroyed again).
pub fn load_status(gpu: hsa_agent_t, image: &[u8]) -> hsa_status_t {
    let mut r = hsa_code_object_reader_t { handle: 0 };
    let mut exe = hsa_executable_t { handle: 0 };
    unsafe {
        assert_eq!(
            hsa_code_object_reader_create_from_memory(
                image.as_ptr() as *const c_void,
                image.len(),
                &mut r
            ),
            0
        );
        assert_eq!(
            hsa_executable_create_alt(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut exe),
            0
        );
        let s = hsa_executable_load_agent_code_object(
            exe,
            gpu,
            r,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        assert_eq!(hsa_code_object_reader_destroy(r), 0);
        assert_eq!(hsa_executable_destroy(exe), 0);
        s
    }
}

/// Loads `image` for `gpu` through a code object reader and freezes the executable.
pub fn load_executable(gpu: hsa_agent_t, image: &[u8]) -> hsa_executable_t {
    let mut r = hsa_code_object_reader_t { handle: 0 };
    let mut exe = hsa_executable_t { handle: 0 };
    unsafe {
        assert_eq!(
            hsa_code_object_reader_create_from_memory(
                image.as_ptr() as *const c_void,
                image.len(),
                &mut r
            ),
            0
        );
        assert_eq!(
            hsa_executable_create_alt(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut exe),
            0
        );
        assert_eq!(
            hsa_executable_load_agent_code_object(
                exe,
                gpu,
                r,
                std::ptr::null(),
                std::ptr::null_mut()
            ),
            0
        );
        assert_eq!(hsa_executable_freeze(exe, std::ptr::null()), 0);
        assert_eq!(hsa_code_object_reader_destroy(r), 0);
    }
    exe
}

/// A kernel's symbol properties.
pub struct KernelObject {
    /// Device address of the kernel descriptor.
    pub object: u64,
    /// Kernarg segment bytes.
    pub kernarg_size: u32,
    /// Static LDS bytes.
    pub group: u32,
    /// Scratch bytes per work-item.
    pub private: u32,
    /// The kernel uses a dynamically sized call stack.
    pub dynamic_stack: bool,
}

/// The kernel `name` (without `.kd`) of `exe`.
pub fn kernel_object(exe: hsa_executable_t, gpu: hsa_agent_t, name: &str) -> KernelObject {
    let n = std::ffi::CString::new(format!("{name}.kd")).unwrap();
    let mut sym = hsa_executable_symbol_t { handle: 0 };
    let mut k = KernelObject {
        object: 0,
        kernarg_size: 0,
        group: 0,
        private: 0,
        dynamic_stack: false,
    };
    unsafe {
        assert_eq!(
            hsa_executable_get_symbol_by_name(exe, n.as_ptr(), &gpu, &mut sym),
            0,
            "{name}"
        );
        let get = |attr: u32, out: *mut c_void| {
            assert_eq!(hsa_executable_symbol_get_info(sym, attr, out), 0)
        };
        get(
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
            &mut k.object as *mut _ as *mut c_void,
        );
        get(
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
            &mut k.kernarg_size as *mut _ as *mut c_void,
        );
        get(
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
            &mut k.group as *mut _ as *mut c_void,
        );
        get(
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
            &mut k.private as *mut _ as *mut c_void,
        );
        get(
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK,
            &mut k.dynamic_stack as *mut _ as *mut c_void,
        );
    }
    k
}

/// Kernel packet header word: KERNEL_DISPATCH, system acquire/release, 1 dimension.
pub const KERNEL_HEADER: u32 = 0x0001_1402;

/// The body of a 1-D kernel dispatch packet (the header word is written by [`submit`]).
pub fn dispatch_packet(
    k: &KernelObject,
    workgroup: u16,
    grid: u32,
    kernarg: *mut u8,
    completion: hsa_signal_t,
) -> [u64; 8] {
    let mut b = [0u8; 64];
    b[4..6].copy_from_slice(&workgroup.to_le_bytes());
    b[6..8].copy_from_slice(&1u16.to_le_bytes());
    b[8..10].copy_from_slice(&1u16.to_le_bytes());
    b[12..16].copy_from_slice(&grid.to_le_bytes());
    b[16..20].copy_from_slice(&1u32.to_le_bytes());
    b[20..24].copy_from_slice(&1u32.to_le_bytes());
    b[24..28].copy_from_slice(&k.private.to_le_bytes());
    b[28..32].copy_from_slice(&k.group.to_le_bytes());
    b[32..40].copy_from_slice(&k.object.to_le_bytes());
    b[40..48].copy_from_slice(&(kernarg as u64).to_le_bytes());
    b[56..64].copy_from_slice(&completion.handle.to_le_bytes());
    let mut p = [0u64; 8];
    for (i, w) in p.iter_mut().enumerate() {
        *w = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    }
    p
}

/// Assembles `tests/fixtures/<name>.s` for gfx90a and links it with
/// ld.lld-16 into a shared code object; returns its bytes.
pub fn assemble_fixture(name: &str) -> Vec<u8> {
    assemble_fixture_with(name, &[])
}

/// [`assemble_fixture`] with `extra` assembler flags (e.g.
/// `-mcode-object-version=5`).
pub fn assemble_fixture_with(name: &str, extra: &[&str]) -> Vec<u8> {
    assemble_fixture_as(name, name, extra)
}

/// [`assemble_fixture_with`], the outputs named `out` (so that builds of one
/// source with other flags, in test binaries running at once, do not collide).
pub fn assemble_fixture_as(name: &str, out: &str, extra: &[&str]) -> Vec<u8> {
    let dir = scratch_dir("fixtures");
    let src = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/{name}.s"));
    let (obj, so) = (dir.join(format!("{out}.o")), dir.join(format!("{out}.so")));
    let mut args = vec!["--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        "-c",
        "-x",
        "assembler",
        src.to_str().unwrap(),
        "-o",
        obj.to_str().unwrap(),
    ]);
    clang(&args);
    let st = std::process::Command::new("ld.lld-16")
        .arg("-shared")
        .arg(&obj)
        .arg("-o")
        .arg(&so)
        .status()
        .expect("ld.lld-16 runs");
    assert!(st.success(), "ld.lld-16 failed on {name}");
    std::fs::read(so).expect("linked code object")
}
