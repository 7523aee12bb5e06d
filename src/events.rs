//! The event table of one device (LLVM's `AMDGPUEventManagerTy` with the
//! `*_event` operations of `GenericDeviceTy`).
//!
//! [`EventTable`] owns the live [`Event`]s by the handles
//! `__tgt_rtl_create_event` returned: generation-counted (crate `handles`),
//! so a destroyed event's handle, or another device's, is refused with
//! [`Error::UnknownHandle`] even when a new event took its slot. Recording
//! and waiting reach streams through the device's [`StreamPool`].

use crate::abi::AsyncInfo;
use crate::error::{Error, Result};
use crate::stream::Event;
use crate::streams::StreamPool;
use handles::HandleTable;
use std::sync::Arc;

/// The live events of one device.
#[derive(Debug)]
pub struct EventTable {
    events: HandleTable<Event>,
    streams: Arc<StreamPool>,
}

impl EventTable {
    /// An empty table whose handles carry `tag`, recording on and waiting
    /// with the streams of `streams`.
    pub fn new(tag: u16, streams: Arc<StreamPool>) -> EventTable {
        EventTable {
            events: HandleTable::new(tag),
            streams,
        }
    }

    /// `create_event`: a new event handle (never NULL).
    pub fn create(&self) -> usize {
        self.events.insert(Arc::new(Event::default())) as usize
    }

    /// The live event of handle `key`.
    ///
    /// Errors: `key` unknown, destroyed or another device's.
    fn event(&self, key: usize) -> Result<Arc<Event>> {
        self.events.get(key as u64).ok_or(Error::UnknownHandle {
            what: "event",
            addr: key,
        })
    }

    /// `record_event`: the current end of `info`'s stream.
    ///
    /// Errors: unknown event or stream.
    pub fn record(&self, key: usize, info: &mut AsyncInfo) -> Result<()> {
        let ev = self.event(key)?;
        self.streams.with_stream(info, |stream| ev.record(stream))
    }

    /// `wait_event`: `info`'s stream waits for the recorded point.
    ///
    /// Errors: unknown event or stream; the event was never recorded.
    pub fn wait(&self, key: usize, info: &mut AsyncInfo) -> Result<()> {
        let ev = self.event(key)?;
        if !ev.is_recorded() {
            // A caller's mistake, found before the stream is involved.
            return Err(Error::InvalidArgument(
                "wait on an event that was never recorded".into(),
            ));
        }
        self.streams.on_stream(info, |stream| ev.wait(stream))
    }

    /// `sync_event`: blocks until the recorded point is reached.
    ///
    /// Errors: unknown event; the operation failed.
    pub fn synchronize(&self, key: usize) -> Result<()> {
        self.event(key)?.synchronize()
    }

    /// `destroy_event`: the handle is stale from then on.
    ///
    /// Errors: unknown event.
    pub fn destroy(&self, key: usize) -> Result<()> {
        self.events
            .remove(key as u64)
            .map(|_| ())
            .ok_or(Error::UnknownHandle {
                what: "event",
                addr: key,
            })
    }

    /// Drops every event (process teardown).
    pub fn clear(&self) {
        self.events.clear();
    }
}
