//! Transfers of one device (LLVM's `dataSubmitImpl` / `dataRetrieveImpl`
//! / `dataExchangeImpl`): host → device, device → host and device → device
//! copies on the stream of an async info (in
//! LLVM 16's `plugins-nextgen/amdgpu/src/rtl.cpp`).
//!
//! [`Transfers`] owns the path policy, in ONE function ([`Transfers::copy`]
//! through `host_path`) for all three directions. A copy has two
//! [`Endpoint`]s; device memory (a [`DeviceRange`]) is reached by DMA as
//! it is. A host endpoint
//! (a [`HostSpan`], built once at the C ABI) takes, in this order:
//!
//! 1. **pinned**: the span lies in a locked range or a HOST / SHARED
//!    allocation: one DMA copy through the range's device-accessible alias;
//! 2. **locked for the transfer**: from `MAX_ASYNC_COPY_BYTES` on, the span
//!    is locked with `hsa_amd_memory_lock` and unlocked when the stream
//!    completes: again one DMA copy;
//! 3. **staged**: through a pinned staging block of the host's staging
//!    manager, with a host copy on the host side of it (see `stream.rs`).

use crate::abi::AsyncInfo;
use crate::error::Result;
use crate::host_device::HostDevice;
use crate::memory::HostBlock;
use crate::stream::{Held, Stream};
use crate::streams::StreamPool;
use hsa::{DeviceRange, HostSpan};
use std::sync::Arc;

/// One side of a copy.
#[derive(Debug, Clone, Copy)]
pub enum Endpoint {
    /// Device memory (or pinned host memory through its agent address),
    /// reached by DMA.
    Device(DeviceRange),
    /// Caller's host memory, of the span's length.
    Host(HostSpan),
}

/// How the host side of a copy is reached.
#[derive(Debug)]
enum HostPath {
    /// By DMA through this range, holding `Held` (a temporary lock) until
    /// the stream completes.
    Direct(DeviceRange, Vec<Held>),
    /// Through this staging block.
    Staged(HostBlock),
}

/// The transfers of one device.
#[derive(Debug)]
pub struct Transfers {
    host: Arc<HostDevice>,
    streams: Arc<StreamPool>,
    /// `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES`: from this size on, a
    /// pageable host range is locked for the transfer instead of staged.
    max_async_copy_bytes: usize,
}

impl Transfers {
    /// The transfers over `streams`, with the host's pinned table and
    /// staging manager, locking pageable ranges from `max_async_copy_bytes`.
    pub fn new(
        host: Arc<HostDevice>,
        streams: Arc<StreamPool>,
        max_async_copy_bytes: usize,
    ) -> Transfers {
        Transfers {
            host,
            streams,
            max_async_copy_bytes,
        }
    }

    /// Copies `size` bytes from `src` to `dst` on the stream of `info`
    /// (`size` is the host span's length when one side is host memory; a
    /// host span shorter than `size` is refused by the caller, `rtl.rs`,
    /// which builds spans of exactly `size` bytes).
    ///
    /// Errors: unknown stream; no staging memory; as the HSA calls.
    pub fn copy(
        &self,
        dst: Endpoint,
        src: Endpoint,
        size: usize,
        info: &mut AsyncInfo,
    ) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        self.streams
            .on_stream(info, |stream| self.copy_on(stream, dst, src, size))
    }

    /// [`Transfers::copy`], then waits for it (the synchronous entry points
    /// and the plugin's own copies).
    ///
    /// Errors: as [`Transfers::copy`]; the copy failed.
    pub fn copy_sync(&self, dst: Endpoint, src: Endpoint, size: usize) -> Result<()> {
        self.streams
            .run_sync(|info| self.copy(dst, src, size, info))
    }

    /// Writes `bytes` to the start of `dst` and waits: through a staging
    /// block, so no span of Rust memory is ever made.
    ///
    /// Errors: no staging memory; `bytes` longer than `dst`; the copy
    /// failed.
    pub fn write_sync(&self, dst: DeviceRange, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let block = HostBlock::allocate(&self.host.staging, bytes.len())?;
        block.span().write(bytes);
        self.copy_sync(
            Endpoint::Device(dst),
            Endpoint::Device(block.range()),
            bytes.len(),
        )
    }

    /// Reads `out.len()` bytes from the start of `src` and waits, through a
    /// staging block.
    ///
    /// Errors: no staging memory; `out` longer than `src`; the copy failed.
    pub fn read_sync(&self, src: DeviceRange, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let block = HostBlock::allocate(&self.host.staging, out.len())?;
        self.copy_sync(
            Endpoint::Device(block.range()),
            Endpoint::Device(src),
            out.len(),
        )?;
        block.span().read(out);
        Ok(())
    }

    /// The body of [`Transfers::copy`] on its stream.
    fn copy_on(&self, stream: &Stream, dst: Endpoint, src: Endpoint, size: usize) -> Result<()> {
        match (dst, src) {
            (Endpoint::Device(d), Endpoint::Device(s)) => stream.push_copy(d, s, size, Vec::new()),
            (Endpoint::Device(d), Endpoint::Host(h)) => match self.host_path(&h)? {
                HostPath::Direct(alias, held) => stream.push_copy(d, alias, size, held),
                HostPath::Staged(block) => stream.push_h2d_staged(d, h, block),
            },
            (Endpoint::Host(h), Endpoint::Device(s)) => match self.host_path(&h)? {
                HostPath::Direct(alias, held) => stream.push_copy(alias, s, size, held),
                HostPath::Staged(block) => stream.push_d2h_staged(h, s, block),
            },
            (Endpoint::Host(d), Endpoint::Host(s)) => stream.push_host_step(d, s, Vec::new()),
        }
    }

    /// The path policy (module docs): how the device reaches `span`.
    ///
    /// Errors: no staging memory.
    fn host_path(&self, span: &HostSpan) -> Result<HostPath> {
        let size = span.len();
        if let Some(alias) = self.host.pinned.translate(span.addr(), size) {
            return Ok(HostPath::Direct(alias, Vec::new()));
        }
        if size >= self.max_async_copy_bytes {
            match self.host.pinned.lock_temporarily(span) {
                Ok((alias, guard)) => {
                    return Ok(HostPath::Direct(alias, vec![Held::Other(Box::new(guard))]))
                }
                Err(e) => log::debug!(
                    "cannot lock {size} bytes at {:#x} ({e}); staging instead",
                    span.addr()
                ),
            }
        }
        Ok(HostPath::Staged(HostBlock::allocate(
            &self.host.staging,
            size,
        )?))
    }
}
