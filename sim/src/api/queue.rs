//! AQL queues: creation, destruction, index operations and dispatch
//! profiling (`hsa_queue_*` in `hsa/hsa.h`, `hsa_amd_profiling_*` in
//! `hsa/hsa_ext_amd.h`).

use super::{boundary, check_signature, non_null, value_boundary};
use crate::agent::AgentKind;
use crate::error::SimError;
use crate::queue::{Queue, QueueCallback};
use crate::runtime::{runtime, TIMESTAMP_FREQUENCY};
use hsa_sys::*;
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

check_signature!(
    hsa_queue_create,
    hsa_queue_destroy,
    hsa_queue_inactivate,
    hsa_amd_profiling_set_profiler_enabled,
    hsa_amd_profiling_get_dispatch_time,
    hsa_amd_profiling_async_copy_enable,
);

/// The most scratch bytes per lane a queue may be created with (ROCr's
/// `GpuAgent::QueueCreate` refuses more with `HSA_STATUS_ERROR_OUT_OF_RESOURCES`).
const MAX_SCRATCH_PER_LANE: u32 = 262_128;

/// `hsa_queue_create`: an AQL queue of `size` packets (a power of two in
/// 64..=131072) on a GPU agent, with its packet processor running. The
/// private segment size is the scratch bytes per lane of each wave's slot
/// (UINT32_MAX: `HSA_SCRATCH_MEM`, else 2048, as ROCr's `GpuAgent::QueueCreate`),
/// grown by dispatches that ask for more; the group segment size hint is
/// ignored (every dispatch gets the LDS its packet asks for).
///
/// # Safety
/// `queue` must be writable; `callback` must be callable with `data` from another thread.
#[no_mangle]
pub unsafe extern "C" fn hsa_queue_create(
    agent: hsa_agent_t,
    size: u32,
    type_: hsa_queue_type32_t,
    callback: Option<QueueCallback>,
    data: *mut c_void,
    private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut hsa_queue_t,
) -> hsa_status_t {
    boundary("hsa_queue_create", || {
        let rt = runtime()?;
        non_null(queue, "queue")?;
        if size == 0 || !size.is_power_of_two() {
            return Err(SimError::arg(format!(
                "queue size {size} is not a power of two"
            )));
        }
        if type_ > HSA_QUEUE_TYPE_COOPERATIVE {
            return Err(SimError::arg(format!("unknown queue type {type_}")));
        }
        let a = rt.agent(agent.handle)?;
        if a.kind != AgentKind::Gpu {
            return Err(SimError::QueueOnNonKernelAgent(agent.handle));
        }
        if size > 131072 {
            return Err(SimError::OutOfResources(format!(
                "queue size {size} exceeds 131072 packets"
            )));
        }
        if private_segment_size != u32::MAX && private_segment_size > MAX_SCRATCH_PER_LANE {
            return Err(SimError::OutOfResources(format!(
                "private segment size {private_segment_size} exceeds {MAX_SCRATCH_PER_LANE} bytes per lane"
            )));
        }
        if size < 64 {
            return Err(SimError::arg(format!(
                "queue size {size} is below the minimum of 64 packets"
            )));
        }
        let q = rt.create_queue(a.index, size, callback, data as usize, private_segment_size)?;
        rt.queues.write().insert(q.address(), q.clone());
        // SAFETY: checked non-null; writable by the caller's contract.
        unsafe { *queue = q.address() as *mut hsa_queue_t };
        Ok(())
    })
}

/// `hsa_queue_destroy`: stops the processor and releases the ring.
///
/// # Safety
/// `queue` must be NULL or a pointer the caller got from `hsa_queue_create`.
#[no_mangle]
pub unsafe extern "C" fn hsa_queue_destroy(queue: *mut hsa_queue_t) -> hsa_status_t {
    boundary("hsa_queue_destroy", || {
        let rt = runtime()?;
        non_null(queue, "queue")?;
        let q = rt
            .queues
            .write()
            .remove(&(queue as u64))
            .ok_or(SimError::InvalidQueue(queue as u64))?;
        q.stop();
        if let Some(d) = rt.signals.remove(q.doorbell_handle) {
            d.mark_destroyed();
        }
        for base in q.allocations() {
            rt.memory.remove(base);
        }
        Ok(())
    })
}

/// `hsa_queue_inactivate`: the queue consumes no further packets.
///
/// # Safety
/// `queue` must be NULL or a pointer from `hsa_queue_create`.
#[no_mangle]
pub unsafe extern "C" fn hsa_queue_inactivate(queue: *mut hsa_queue_t) -> hsa_status_t {
    boundary("hsa_queue_inactivate", || {
        let rt = runtime()?;
        non_null(queue, "queue")?;
        rt.queue(queue as u64)?.inactivate();
        Ok(())
    })
}

fn with_queue<T: Copy>(
    name: &str,
    queue: *const hsa_queue_t,
    fallback: T,
    f: impl FnOnce(&Arc<Queue>) -> T,
) -> T {
    value_boundary(name, fallback, || {
        match runtime().and_then(|rt| rt.queue(queue as u64)) {
            Ok(q) => f(&q),
            Err(e) => {
                log::error!("{name}: {e}");
                fallback
            }
        }
    })
}

macro_rules! load_index {
    ($($name:ident => $which:ident, $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// `queue` must be a pointer from `hsa_queue_create` (others are logged and answer 0).
        #[no_mangle]
        pub unsafe extern "C" fn $name(queue: *const hsa_queue_t) -> u64 {
            with_queue(stringify!($name), queue, 0, |q| q.$which().load(Ordering::$order))
        }
        check_signature!($name);
    )*};
}

macro_rules! store_index {
    ($($name:ident => $which:ident, $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// `queue` must be a pointer from `hsa_queue_create` (others are logged and ignored).
        #[no_mangle]
        pub unsafe extern "C" fn $name(queue: *const hsa_queue_t, value: u64) {
            with_queue(stringify!($name), queue, (), |q| q.$which().store(value, Ordering::$order))
        }
        check_signature!($name);
    )*};
}

macro_rules! add_index {
    ($($name:ident => $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: returns the previous write index.")]
        ///
        /// # Safety
        /// `queue` must be a pointer from `hsa_queue_create` (others are logged and answer 0).
        #[no_mangle]
        pub unsafe extern "C" fn $name(queue: *const hsa_queue_t, value: u64) -> u64 {
            with_queue(stringify!($name), queue, 0, |q| q.write_index().fetch_add(value, Ordering::$order))
        }
        check_signature!($name);
    )*};
}

macro_rules! cas_index {
    ($($name:ident => $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: returns the write index observed.")]
        ///
        /// # Safety
        /// `queue` must be a pointer from `hsa_queue_create` (others are logged and answer 0).
        #[no_mangle]
        pub unsafe extern "C" fn $name(queue: *const hsa_queue_t, expected: u64, value: u64) -> u64 {
            with_queue(stringify!($name), queue, 0, |q| {
                match q.write_index().compare_exchange(expected, value, Ordering::$order, Ordering::Acquire) {
                    Ok(v) | Err(v) => v,
                }
            })
        }
        check_signature!($name);
    )*};
}

load_index!(
    hsa_queue_load_read_index_scacquire => read_index, Acquire,
    hsa_queue_load_read_index_acquire => read_index, Acquire,
    hsa_queue_load_read_index_relaxed => read_index, Relaxed,
    hsa_queue_load_write_index_scacquire => write_index, Acquire,
    hsa_queue_load_write_index_acquire => write_index, Acquire,
    hsa_queue_load_write_index_relaxed => write_index, Relaxed,
);
store_index!(
    hsa_queue_store_write_index_relaxed => write_index, Relaxed,
    hsa_queue_store_write_index_screlease => write_index, Release,
    hsa_queue_store_write_index_release => write_index, Release,
    hsa_queue_store_read_index_relaxed => read_index, Relaxed,
    hsa_queue_store_read_index_screlease => read_index, Release,
    hsa_queue_store_read_index_release => read_index, Release,
);
add_index!(
    hsa_queue_add_write_index_scacq_screl => AcqRel,
    hsa_queue_add_write_index_acq_rel => AcqRel,
    hsa_queue_add_write_index_scacquire => Acquire,
    hsa_queue_add_write_index_acquire => Acquire,
    hsa_queue_add_write_index_relaxed => Relaxed,
    hsa_queue_add_write_index_screlease => Release,
    hsa_queue_add_write_index_release => Release,
);
cas_index!(
    hsa_queue_cas_write_index_scacq_screl => AcqRel,
    hsa_queue_cas_write_index_acq_rel => AcqRel,
    hsa_queue_cas_write_index_scacquire => Acquire,
    hsa_queue_cas_write_index_acquire => Acquire,
    hsa_queue_cas_write_index_relaxed => Relaxed,
    hsa_queue_cas_write_index_screlease => Release,
    hsa_queue_cas_write_index_release => Release,
);

/// `hsa_amd_profiling_set_profiler_enabled`: dispatch timestamps on (1) or off (0).
///
/// # Safety
/// `queue` must be NULL or a pointer from `hsa_queue_create`.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_profiling_set_profiler_enabled(
    queue: *mut hsa_queue_t,
    enable: std::ffi::c_int,
) -> hsa_status_t {
    boundary("hsa_amd_profiling_set_profiler_enabled", || {
        let rt = runtime()?;
        non_null(queue, "queue")?;
        rt.queue(queue as u64)?.set_profiling(enable != 0);
        Ok(())
    })
}

/// `hsa_amd_profiling_async_copy_enable`: accepted (copies are not timed).
#[no_mangle]
pub extern "C" fn hsa_amd_profiling_async_copy_enable(_enable: bool) -> hsa_status_t {
    boundary("hsa_amd_profiling_async_copy_enable", || {
        runtime().map(|_| ())
    })
}

/// `hsa_amd_profiling_get_dispatch_time`: start and end, in system timestamp
/// ticks, of the last profiled dispatch that completed `signal`.
///
/// # Safety
/// `time` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_profiling_get_dispatch_time(
    agent: hsa_agent_t,
    signal: hsa_signal_t,
    time: *mut hsa_amd_profiling_dispatch_time_t,
) -> hsa_status_t {
    boundary("hsa_amd_profiling_get_dispatch_time", || {
        let rt = runtime()?;
        non_null(time, "time")?;
        rt.gpu_agent(agent.handle)?;
        let s = rt.signal(signal.handle)?;
        let (start, end) = s.dispatch_times();
        debug_assert_eq!(TIMESTAMP_FREQUENCY, 1_000_000_000);
        // SAFETY: checked non-null; writable by the caller's contract.
        unsafe { *time = hsa_amd_profiling_dispatch_time_t { start, end } };
        Ok(())
    })
}
