//! The stream pool of one device and the async-info protocol over it
//! (LLVM's `AMDGPUStreamManagerTy` plus the async-info handling of
//! `GenericDeviceTy`).
//!
//! [`StreamPool`] owns every [`Stream`] the device created (they stay until
//! teardown), the idle ones, and the lent ones by their handle. A
//! `__tgt_async_info` names its stream by the handle in its `Queue` field:
//! a NULL `Queue` borrows a stream from the pool on first use (the handle is
//! stored there), synchronizing or a completed query gives the stream back
//! and sets `Queue` to NULL again. Handles are generation-counted (crate
//! `handles`): a stream gets a new handle each time it is lent, so the
//! handle of a returned stream, or one of another device, is refused with
//! [`Error::UnknownHandle`] instead of reaching a stream now lent to someone
//! else.
//!
//! The async-info structs themselves are libomptarget's (or, from
//! `__tgt_rtl_init_async_info`, the caller's): the pool never owns or frees
//! them, it only reads and writes their `Queue` field.

use crate::abi::AsyncInfo;
use crate::error::{Error, Result};
use crate::memory::HostPoolManager;
use crate::queue::QueueSet;
use crate::signal::SignalPool;
use crate::stream::Stream;
use handles::HandleTable;
use hsa::Hsa;
use hsa_sys::hsa_agent_t;
use parking_lot::{Mutex, RwLock};
use std::ffi::c_void;
use std::sync::Arc;

/// What a handle that does not resolve is called in errors.
const STREAM_HANDLE: &str = "stream (__tgt_async_info::Queue)";

/// The streams of one device and the async infos they are lent to.
#[derive(Debug)]
pub struct StreamPool {
    /// Plugin-local device id (messages).
    id: i32,
    hsa: Hsa,
    agent: hsa_agent_t,
    queues: Arc<QueueSet>,
    signals: SignalPool,
    kernargs: Arc<HostPoolManager>,
    /// Every stream the device created. Streams stay until teardown.
    all: RwLock<Vec<Arc<Stream>>>,
    /// The lent streams, by their `__tgt_async_info::Queue` handle.
    lent: HandleTable<Stream>,
    /// The streams not lent.
    idle: Mutex<Vec<Arc<Stream>>>,
}

impl StreamPool {
    /// An empty pool of device `id`'s streams over `queues`, with completion
    /// signals from `signals` and kernarg blocks from `kernargs`; its
    /// handles carry `tag` (see crate `handles`).
    pub fn new(
        id: i32,
        hsa: &Hsa,
        agent: hsa_agent_t,
        queues: Arc<QueueSet>,
        signals: SignalPool,
        kernargs: Arc<HostPoolManager>,
        tag: u16,
    ) -> StreamPool {
        StreamPool {
            id,
            hsa: hsa.clone(),
            agent,
            queues,
            signals,
            kernargs,
            all: RwLock::new(Vec::new()),
            lent: HandleTable::new(tag),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// The stream behind `info.queue`, lending one from the pool (and
    /// storing its handle in `info.queue`) when it is NULL.
    ///
    /// Errors: `info.queue` is not a stream this pool lent; a new stream's
    /// queue could not be (re)created.
    pub fn stream_for(&self, info: &mut AsyncInfo) -> Result<Arc<Stream>> {
        if info.queue.is_null() {
            return self.lend(info);
        }
        self.lent_stream(info.queue as usize)
    }

    /// Runs `f` on the stream of `info` (lent first when `info` has none).
    /// On the hot path (`info` already has a stream) the stream is borrowed
    /// under the handle table's read lock, without a reference count; `f`
    /// must not lend or return streams of this pool.
    ///
    /// Errors: as [`StreamPool::stream_for`].
    #[inline]
    pub fn with_stream<R>(&self, info: &mut AsyncInfo, f: impl FnOnce(&Stream) -> R) -> Result<R> {
        if info.queue.is_null() {
            let stream = self.lend(info)?;
            return Ok(f(&stream));
        }
        let key = info.queue as usize;
        match self.lent.with(key as u64, |s| f(s)) {
            Some(r) => Ok(r),
            None => Err(unknown_stream(key)),
        }
    }

    /// Runs `op` on the stream of `info`. When `op` fails, the stream is
    /// marked failed, so that synchronizing or querying `info` reports the
    /// failure at once (the operation's own signal, if it took one, was
    /// failed too) instead of succeeding or waiting for something that
    /// never comes.
    ///
    /// Errors: as [`StreamPool::stream_for`]; `op`'s error.
    #[inline]
    pub fn on_stream(
        &self,
        info: &mut AsyncInfo,
        op: impl FnOnce(&Stream) -> Result<()>,
    ) -> Result<()> {
        if info.queue.is_null() {
            let stream = self.lend(info)?;
            return run_marking_failure(&stream, op);
        }
        let key = info.queue as usize;
        match self.lent.with(key as u64, |s| run_marking_failure(s, op)) {
            Some(r) => r,
            None => Err(unknown_stream(key)),
        }
    }

    /// `synchronize`: waits for the stream of `info`, gives it back and
    /// sets `info.queue = NULL`. The stream is given back even when an
    /// operation failed (the failure is returned).
    ///
    /// Errors: `info.queue` NULL or unknown; a failed operation.
    #[inline]
    pub fn synchronize(&self, info: &mut AsyncInfo) -> Result<()> {
        if info.queue.is_null() {
            return Err(Error::InvalidArgument(
                "synchronize of an async info without a queue".into(),
            ));
        }
        let stream = self.lent_stream(info.queue as usize)?;
        let r = stream.synchronize();
        self.give_back(info);
        r
    }

    /// `query_async`: like [`StreamPool::synchronize`] when everything
    /// finished, else leaves `info` untouched.
    ///
    /// Errors: as [`StreamPool::synchronize`].
    pub fn query(&self, info: &mut AsyncInfo) -> Result<()> {
        if info.queue.is_null() {
            return Err(Error::InvalidArgument(
                "query_async of an async info without a queue".into(),
            ));
        }
        let stream = self.lent_stream(info.queue as usize)?;
        match stream.query() {
            Ok(true) => {
                self.give_back(info);
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => {
                self.give_back(info);
                Err(e)
            }
        }
    }

    /// Runs `op` on a private async info and synchronizes it (the
    /// synchronous entry points).
    ///
    /// Errors: `op`'s error, else the synchronization's.
    pub fn run_sync(&self, op: impl FnOnce(&mut AsyncInfo) -> Result<()>) -> Result<()> {
        let mut info = AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        let r = op(&mut info);
        if info.queue.is_null() {
            return r;
        }
        let s = self.synchronize(&mut info);
        r.and(s)
    }

    /// Waits for every lent stream until `deadline`, then drops every
    /// stream (process teardown). Returns `false`, leaving the streams as
    /// they are, when one still runs at the deadline.
    pub fn teardown(&self, deadline: std::time::Instant) -> bool {
        let streams = self.all.read().clone();
        for s in &streams {
            if !s.is_lent() {
                continue;
            }
            match s.synchronize_until(deadline) {
                Ok(true) => {}
                Ok(false) => {
                    log::error!(
                        "device {}: work still pending at teardown after the bounded wait; \
                         leaving the device and the HSA runtime as they are",
                        self.id
                    );
                    return false;
                }
                Err(e) => log::debug!("device {}: at teardown: {e}", self.id),
            }
            s.set_lent(false);
        }
        drop(streams);
        self.all.write().clear();
        self.lent.clear();
        self.idle.lock().clear();
        true
    }

    /// Lends an idle (or new) stream to `info`, whose `queue` is NULL.
    ///
    /// Errors: a new stream's queue could not be (re)created.
    fn lend(&self, info: &mut AsyncInfo) -> Result<Arc<Stream>> {
        let idle = self.idle.lock().pop();
        let stream = match idle {
            Some(s) => s,
            None => self.add_stream()?,
        };
        stream.set_lent(true);
        info.queue = self.lent.insert(stream.clone()) as usize as *mut c_void;
        Ok(stream)
    }

    /// Creates a stream (recorded for teardown, not yet lent) on the next
    /// queue slot, round robin.
    #[cold]
    fn add_stream(&self) -> Result<Arc<Stream>> {
        let stream = Arc::new(Stream::new(
            &self.hsa,
            self.agent,
            self.queues.clone(),
            self.queues.next_slot(),
            self.signals.clone(),
            self.kernargs.clone(),
        )?);
        self.all.write().push(stream.clone());
        Ok(stream)
    }

    /// The lent stream of handle `key`.
    ///
    /// Errors: `key` is not the live handle of a stream this pool lent
    /// (never lent, returned since, or another device's).
    #[inline]
    fn lent_stream(&self, key: usize) -> Result<Arc<Stream>> {
        // A `match`, not `ok_or`: the error is built only when needed.
        match self.lent.get(key as u64) {
            Some(f) => Ok(f),
            None => Err(unknown_stream(key)),
        }
    }

    /// Takes the stream of `info` back into the pool, once (its handle is
    /// stale from then on), and sets `info.queue = NULL`.
    #[inline]
    fn give_back(&self, info: &mut AsyncInfo) {
        if let Some(stream) = self.lent.remove(info.queue as usize as u64) {
            stream.set_lent(false);
            self.idle.lock().push(stream);
        }
        info.queue = std::ptr::null_mut();
    }
}

/// Runs `op` on `stream`; marks the stream failed when `op` fails.
#[inline(always)]
fn run_marking_failure(stream: &Stream, op: impl FnOnce(&Stream) -> Result<()>) -> Result<()> {
    let r = op(stream);
    if r.is_err() {
        stream.mark_failed();
    }
    r
}

/// The error of a stream handle that does not resolve.
#[cold]
fn unknown_stream(key: usize) -> Error {
    Error::UnknownHandle {
        what: STREAM_HANDLE,
        addr: key,
    }
}
