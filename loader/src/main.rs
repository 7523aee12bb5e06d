//! `amdhsa-loader`: runs an AMDGPU image's own `main` the way LLVM 19's
//! `amdhsa-loader` does (`libc/utils/gpu/loader/`): load the code object,
//! copy `argv`/`envp` to the device, start the RPC server, launch `_begin`,
//! `_start`, `_end`, serve the device's requests meanwhile, and exit with
//! `main`'s return value (or the status the device passed to `exit`).
//!
//! Command line (LLVM 19 `Main.cpp`): options first, then the image and its
//! arguments (`argv[0]` of the device program is the image path):
//!
//! ```text
//! amdhsa-loader [--threads[-x] N] [--threads-y N] [--threads-z N]
//!               [--blocks[-x] N] [--blocks-y N] [--blocks-z N]
//!               [--print-resource-usage] IMAGE [ARGS...]
//! ```

mod cli;
mod launch;
mod memory;
mod resources;
mod test_opcodes;

use std::ffi::{c_void, CString};
use std::process::ExitCode;

use hsa::{Hsa, HsaError};
use hsa_sys::*;

/// Everything that ends the loader with an error message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An HSA call failed (the call and its status string).
    #[error(transparent)]
    Hsa(#[from] HsaError),
    /// The HSA runtime library could not be opened.
    #[error("cannot load the HSA runtime: {0}")]
    Load(#[from] hsa_sys::LoadError),
    /// The RPC server failed to start.
    #[error("RPC server: {0}")]
    Rpc(#[from] rpc::Error),
    /// The command line is wrong.
    #[error("{0}")]
    Usage(String),
    /// The image could not be read.
    #[error("Failed to open image file '{path}': {source}")]
    ReadImage {
        /// The path given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The image is not an AMDGPU code object, or its metadata is broken.
    #[error("bad image: {0}")]
    Image(#[from] code_object::Error),
    /// The image was built for a target the agent cannot run.
    #[error("the image was built for {image}, but the GPU agent is {agent}")]
    WrongTarget {
        /// The image's target ID.
        image: String,
        /// The agent's ISA name(s).
        agent: String,
    },
    /// Something the loader needs is missing (agent, pool, kernel).
    #[error("{0}")]
    Missing(String),
    /// The RPC service thread could not start.
    #[error("cannot start the RPC server thread: {0}")]
    Thread(#[from] std::io::Error),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let options = match cli::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&options) {
        Ok(code) => exit_with(code),
        Err(e) => {
            eprintln!("amdhsa-loader: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Ends the process with `code` after flushing the C library's streams
/// (the RPC server writes the device's output through them).
fn exit_with(code: i32) -> ! {
    // SAFETY: flushing every C stream; no Rust state is involved.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    std::process::exit(code)
}

fn run(options: &cli::Options) -> Result<i32, Error> {
    let image = std::fs::read(&options.image).map_err(|source| Error::ReadImage {
        path: options.image.clone(),
        source,
    })?;
    let hsa = Hsa::open()?;
    hsa.init()?;
    memory::install_fault_handler(&hsa)?;

    let gpu = *hsa
        .agents_of_type(HSA_DEVICE_TYPE_GPU)?
        .first()
        .ok_or_else(|| Error::Missing("no GPU agent with kernel dispatch".into()))?;
    let cpu = *hsa
        .agents_of_type(HSA_DEVICE_TYPE_CPU)?
        .first()
        .ok_or_else(|| Error::Missing("no CPU agent".into()))?;
    check_target(&hsa, gpu, &image)?;

    let code_object = hsa.code_object_deserialize(&image)?;
    let exe = hsa.executable_create()?;
    hsa.executable_load_code_object(exe, gpu, code_object)?;
    hsa.executable_freeze(exe)?;
    if hsa.executable_validate(exe)? != 0 {
        return Err(Error::Missing(
            "hsa_executable_validate reported the executable invalid".into(),
        ));
    }

    let pools = memory::Pools::find(&hsa, cpu, gpu)?;
    let fine = memory::Region::new(&hsa, pools.fine_grained, gpu);

    let argv = launch::copy_strings(&fine, &options.device_args())?;
    let envp = launch::copy_strings(&fine, &launch::environment())?;
    let ret = memory::Region::new(&hsa, pools.coarse_grained, gpu).allocate(4)?;
    // SAFETY: a fresh 4-byte block of the GPU's pool.
    unsafe { hsa.memory_fill(ret as *mut c_void, 0, 1)? };

    let wavefront: u32 = hsa.agent_info(gpu, HSA_AGENT_INFO_WAVEFRONT_SIZE)?;
    let service = launch::start_rpc(&hsa, &pools, exe, gpu, wavefront)?;
    launch::set_clock_frequency(&hsa, &fine, exe, gpu)?;

    // The loader has one dispatch in flight at a time (`_begin`, `_start`,
    // `_end`, each waited for), so the smallest queue the agent offers
    // serves it; the largest (131072 packets, 8 MiB, on the virtual device)
    // made every start clear 8 MiB of pages.
    let queue_size: u32 = hsa.agent_info(gpu, HSA_AGENT_INFO_QUEUE_MIN_SIZE)?;
    let queue = launch::Queue::create(&hsa, gpu, queue_size)?;
    let metadata = code_object::kernel_metadata(&image)?;
    let launcher = launch::Launcher {
        hsa: &hsa,
        exe,
        gpu,
        kernarg_pool: pools.kernarg,
        queue: &queue,
        service: service.as_ref(),
        metadata: &metadata,
        image: &image,
        print_resource_usage: options.print_resource_usage,
    };
    let argc = options.device_args().len() as i32;
    let one = cli::LaunchParameters::default();

    let mut begin = Vec::new();
    begin.extend_from_slice(&argc.to_le_bytes());
    begin.extend_from_slice(&[0; 4]);
    begin.extend_from_slice(&argv.to_le_bytes());
    begin.extend_from_slice(&envp.to_le_bytes());
    launcher.launch("_begin", &one, &begin)?;

    let mut start = begin.clone();
    start.extend_from_slice(&ret.to_le_bytes());
    launcher.launch("_start", &options.params, &start)?;

    let mut value = [0u8; 4];
    // SAFETY: `ret` is a live 4-byte block; `value` is 4 writable bytes of
    // host memory (the runtime copies through system memory).
    unsafe { hsa.memory_copy(value.as_mut_ptr() as *mut c_void, ret as *const c_void, 4)? };
    let code = i32::from_le_bytes(value);

    launcher.launch("_end", &one, &code.to_le_bytes())?;

    drop(service);
    drop(queue);
    hsa.pool_free(ret)?;
    hsa.pool_free(argv)?;
    hsa.pool_free(envp)?;
    hsa.executable_destroy(exe)?;
    hsa.code_object_destroy(code_object)?;
    Ok(code)
}

/// Checks the image's target ID against the agent's ISAs (the plugin's
/// compatibility rule, `code_object::target_ids_compatible`).
fn check_target(hsa: &Hsa, gpu: hsa_agent_t, image: &[u8]) -> Result<(), Error> {
    let target = code_object::elf_target_id(image)?.to_string();
    let mut names = Vec::new();
    for isa in hsa.agent_isas(gpu)? {
        let name = hsa.isa_name(isa)?;
        if code_object::target_ids_compatible(&target, &name) {
            return Ok(());
        }
        names.push(name);
    }
    Err(Error::WrongTarget {
        image: target,
        agent: names.join(", "),
    })
}

/// A C string from a Rust one (interior NULs end it).
pub(crate) fn c_string(s: &str) -> CString {
    let end = s.find('\0').unwrap_or(s.len());
    CString::new(&s[..end]).unwrap_or_default()
}
