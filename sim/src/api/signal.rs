//! Signals: creation, every value operation, waits and async handlers
//! (`hsa_signal_*` in `hsa/hsa.h`, `hsa_amd_signal_*` in `hsa/hsa_ext_amd.h`).
//!
//! The value operations return no status, as in ROCr; unlike ROCr they look
//! the handle up, so a stale or forged handle is logged and ignored (loads
//! and waits answer 0, which clients read as "done") instead of touching
//! freed memory.

use super::{boundary, check_signature, non_null, value_boundary};
use crate::error::SimError;
use crate::runtime::runtime;
use crate::signal::{self, Condition, MemoryOrder, Signal};
use hsa_sys::*;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Duration;

fn lookup(handle: u64, op: &str) -> Option<Arc<Signal>> {
    match runtime().and_then(|rt| rt.signal(handle)) {
        Ok(s) => Some(s),
        Err(e) => {
            log::error!("{op}: {e}");
            None
        }
    }
}

/// Converts a timeout hint in system-timestamp ticks (ns) to a duration; `u64::MAX` is none.
pub fn timeout_from_hint(hint: u64) -> Option<Duration> {
    (hint != u64::MAX).then(|| Duration::from_nanos(hint))
}

fn create(
    initial: hsa_signal_value_t,
    num_consumers: u32,
    consumers: *const hsa_agent_t,
    out: *mut hsa_signal_t,
) -> hsa_status_t {
    boundary("hsa_signal_create", || {
        let rt = runtime()?;
        non_null(out, "signal")?;
        if num_consumers > 0 {
            non_null(consumers, "consumers")?;
            // SAFETY: the caller passes num_consumers agents at `consumers`.
            let list = unsafe { std::slice::from_raw_parts(consumers, num_consumers as usize) };
            for (i, a) in list.iter().enumerate() {
                rt.agent(a.handle)?;
                if list[..i].iter().any(|b| b.handle == a.handle) {
                    return Err(SimError::arg("consumers lists an agent twice"));
                }
            }
        }
        let handle = rt.signals.insert(Signal::new(initial));
        // SAFETY: checked non-null; the caller provides storage for one handle.
        unsafe { *out = hsa_signal_t { handle } };
        Ok(())
    })
}

/// `hsa_signal_create`.
///
/// # Safety
/// `consumers` must hold `num_consumers` agents; `signal` must be writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_signal_create(
    initial_value: hsa_signal_value_t,
    num_consumers: u32,
    consumers: *const hsa_agent_t,
    signal: *mut hsa_signal_t,
) -> hsa_status_t {
    create(initial_value, num_consumers, consumers, signal)
}

/// `hsa_amd_signal_create` (the attributes are accepted and need no work here).
///
/// # Safety
/// As [`hsa_signal_create`].
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_signal_create(
    initial_value: hsa_signal_value_t,
    num_consumers: u32,
    consumers: *const hsa_agent_t,
    _attributes: u64,
    signal: *mut hsa_signal_t,
) -> hsa_status_t {
    create(initial_value, num_consumers, consumers, signal)
}

/// `hsa_signal_destroy`: waiters wake and return 0; handler registrations go.
#[no_mangle]
pub extern "C" fn hsa_signal_destroy(signal: hsa_signal_t) -> hsa_status_t {
    boundary("hsa_signal_destroy", || {
        let rt = runtime()?;
        if signal.handle == 0 {
            return Err(SimError::arg("signal handle is 0"));
        }
        let s = rt
            .signals
            .remove(signal.handle)
            .ok_or(SimError::InvalidSignal(signal.handle))?;
        s.mark_destroyed();
        Ok(())
    })
}

macro_rules! load_fn {
    ($($name:ident => $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: the signal's value.")]
        #[no_mangle]
        pub extern "C" fn $name(signal: hsa_signal_t) -> hsa_signal_value_t {
            value_boundary(stringify!($name), 0, || {
                lookup(signal.handle, stringify!($name)).map_or(0, |s| s.load(MemoryOrder::$order))
            })
        }
        check_signature!($name);
    )*};
}

macro_rules! store_fn {
    ($($name:ident => $method:ident, $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: stores `value` (and wakes waiters).")]
        #[no_mangle]
        pub extern "C" fn $name(signal: hsa_signal_t, value: hsa_signal_value_t) {
            value_boundary(stringify!($name), (), || {
                if let Some(s) = lookup(signal.handle, stringify!($name)) {
                    s.$method(value, MemoryOrder::$order);
                }
            })
        }
        check_signature!($name);
    )*};
}

macro_rules! rmw_fn {
    ($($name:ident => $method:ident, $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: atomic read-modify-write of the value.")]
        #[no_mangle]
        pub extern "C" fn $name(signal: hsa_signal_t, value: hsa_signal_value_t) {
            value_boundary(stringify!($name), (), || {
                if let Some(s) = lookup(signal.handle, stringify!($name)) {
                    s.$method(value, MemoryOrder::$order);
                }
            })
        }
        check_signature!($name);
    )*};
}

macro_rules! exchange_fn {
    ($($name:ident => $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: stores `value`, returns the previous value.")]
        #[no_mangle]
        pub extern "C" fn $name(signal: hsa_signal_t, value: hsa_signal_value_t) -> hsa_signal_value_t {
            value_boundary(stringify!($name), 0, || {
                lookup(signal.handle, stringify!($name)).map_or(0, |s| s.exchange(value, MemoryOrder::$order))
            })
        }
        check_signature!($name);
    )*};
}

macro_rules! cas_fn {
    ($($name:ident => $order:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: compare-and-swap, returns the value observed.")]
        #[no_mangle]
        pub extern "C" fn $name(signal: hsa_signal_t, expected: hsa_signal_value_t, value: hsa_signal_value_t) -> hsa_signal_value_t {
            value_boundary(stringify!($name), 0, || {
                lookup(signal.handle, stringify!($name)).map_or(0, |s| s.cas(expected, value, MemoryOrder::$order))
            })
        }
        check_signature!($name);
    )*};
}

load_fn!(hsa_signal_load_scacquire => Acquire, hsa_signal_load_relaxed => Relaxed, hsa_signal_load_acquire => Acquire);
store_fn!(
    hsa_signal_store_relaxed => store, Relaxed,
    hsa_signal_store_screlease => store, Release,
    hsa_signal_store_release => store, Release,
    hsa_signal_silent_store_relaxed => silent_store, Relaxed,
    hsa_signal_silent_store_screlease => silent_store, Release,
);
exchange_fn!(
    hsa_signal_exchange_scacq_screl => AcqRel, hsa_signal_exchange_acq_rel => AcqRel,
    hsa_signal_exchange_scacquire => Acquire, hsa_signal_exchange_acquire => Acquire,
    hsa_signal_exchange_relaxed => Relaxed,
    hsa_signal_exchange_screlease => Release, hsa_signal_exchange_release => Release,
);
cas_fn!(
    hsa_signal_cas_scacq_screl => AcqRel, hsa_signal_cas_acq_rel => AcqRel,
    hsa_signal_cas_scacquire => Acquire, hsa_signal_cas_acquire => Acquire,
    hsa_signal_cas_relaxed => Relaxed,
    hsa_signal_cas_screlease => Release, hsa_signal_cas_release => Release,
);
rmw_fn!(
    hsa_signal_add_scacq_screl => add, AcqRel, hsa_signal_add_acq_rel => add, AcqRel,
    hsa_signal_add_scacquire => add, Acquire, hsa_signal_add_acquire => add, Acquire,
    hsa_signal_add_relaxed => add, Relaxed,
    hsa_signal_add_screlease => add, Release, hsa_signal_add_release => add, Release,
    hsa_signal_subtract_scacq_screl => subtract, AcqRel, hsa_signal_subtract_acq_rel => subtract, AcqRel,
    hsa_signal_subtract_scacquire => subtract, Acquire, hsa_signal_subtract_acquire => subtract, Acquire,
    hsa_signal_subtract_relaxed => subtract, Relaxed,
    hsa_signal_subtract_screlease => subtract, Release, hsa_signal_subtract_release => subtract, Release,
    hsa_signal_and_scacq_screl => and, AcqRel, hsa_signal_and_acq_rel => and, AcqRel,
    hsa_signal_and_scacquire => and, Acquire, hsa_signal_and_acquire => and, Acquire,
    hsa_signal_and_relaxed => and, Relaxed,
    hsa_signal_and_screlease => and, Release, hsa_signal_and_release => and, Release,
    hsa_signal_or_scacq_screl => or, AcqRel, hsa_signal_or_acq_rel => or, AcqRel,
    hsa_signal_or_scacquire => or, Acquire, hsa_signal_or_acquire => or, Acquire,
    hsa_signal_or_relaxed => or, Relaxed,
    hsa_signal_or_screlease => or, Release, hsa_signal_or_release => or, Release,
    hsa_signal_xor_scacq_screl => xor, AcqRel, hsa_signal_xor_acq_rel => xor, AcqRel,
    hsa_signal_xor_scacquire => xor, Acquire, hsa_signal_xor_acquire => xor, Acquire,
    hsa_signal_xor_relaxed => xor, Relaxed,
    hsa_signal_xor_screlease => xor, Release, hsa_signal_xor_release => xor, Release,
);

fn wait(
    name: &str,
    signal: hsa_signal_t,
    condition: hsa_signal_condition_t,
    compare_value: hsa_signal_value_t,
    timeout_hint: u64,
    wait_state_hint: hsa_wait_state_t,
) -> hsa_signal_value_t {
    value_boundary(name, 0, || {
        let Some(cond) = Condition::from_raw(condition) else {
            log::error!("{name}: unknown condition {condition}");
            return 0;
        };
        let Some(s) = lookup(signal.handle, name) else {
            return 0;
        };
        s.wait(
            cond,
            compare_value,
            timeout_from_hint(timeout_hint),
            wait_state_hint == HSA_WAIT_STATE_BLOCKED,
        )
    })
}

macro_rules! wait_fn {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: waits for the condition; returns the last value seen.")]
        #[no_mangle]
        pub extern "C" fn $name(
            signal: hsa_signal_t,
            condition: hsa_signal_condition_t,
            compare_value: hsa_signal_value_t,
            timeout_hint: u64,
            wait_state_hint: hsa_wait_state_t,
        ) -> hsa_signal_value_t {
            wait(stringify!($name), signal, condition, compare_value, timeout_hint, wait_state_hint)
        }
        check_signature!($name);
    )*};
}
wait_fn!(
    hsa_signal_wait_scacquire,
    hsa_signal_wait_relaxed,
    hsa_signal_wait_acquire
);

check_signature!(
    hsa_signal_create,
    hsa_amd_signal_create,
    hsa_signal_destroy,
    hsa_amd_signal_wait_any,
    hsa_amd_signal_async_handler,
    hsa_amd_async_function
);

/// `hsa_amd_signal_wait_any`: index of the first satisfied signal, or `u32::MAX`
/// on timeout or for an invalid signal or condition.
///
/// # Safety
/// `signals`, `conds` and `values` must each hold `signal_count` elements;
/// `satisfying_value` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_signal_wait_any(
    signal_count: u32,
    signals: *mut hsa_signal_t,
    conds: *mut hsa_signal_condition_t,
    values: *mut hsa_signal_value_t,
    timeout_hint: u64,
    wait_hint: hsa_wait_state_t,
    satisfying_value: *mut hsa_signal_value_t,
) -> u32 {
    value_boundary("hsa_amd_signal_wait_any", u32::MAX, || {
        if signal_count == 0 || signals.is_null() || conds.is_null() || values.is_null() {
            log::error!("hsa_amd_signal_wait_any: empty or NULL signal set");
            return u32::MAX;
        }
        let n = signal_count as usize;
        // SAFETY: the caller passes signal_count elements in each array.
        let (hs, cs, vs) = unsafe {
            (
                std::slice::from_raw_parts(signals, n),
                std::slice::from_raw_parts(conds, n),
                std::slice::from_raw_parts(values, n),
            )
        };
        let mut sigs = Vec::with_capacity(n);
        let mut cond = Vec::with_capacity(n);
        for i in 0..n {
            let (Some(s), Some(c)) = (
                lookup(hs[i].handle, "hsa_amd_signal_wait_any"),
                Condition::from_raw(cs[i]),
            ) else {
                return u32::MAX;
            };
            sigs.push(s);
            cond.push(c);
        }
        match signal::wait_any(
            &sigs,
            &cond,
            vs,
            timeout_from_hint(timeout_hint),
            wait_hint == HSA_WAIT_STATE_BLOCKED,
        ) {
            Some((i, v)) => {
                if !satisfying_value.is_null() {
                    // SAFETY: checked non-null; writable by the caller's contract.
                    unsafe { *satisfying_value = v };
                }
                i as u32
            }
            None => u32::MAX,
        }
    })
}

struct SendPtr(usize);

/// `hsa_amd_signal_async_handler`: calls `handler(value, arg)` on the runtime's
/// handler thread whenever `signal cond value` holds, until it returns false.
///
/// # Safety
/// `handler` must be callable with `arg` from another thread.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_signal_async_handler(
    signal: hsa_signal_t,
    cond: hsa_signal_condition_t,
    value: hsa_signal_value_t,
    handler: hsa_amd_signal_handler,
    arg: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_amd_signal_async_handler", || {
        let rt = runtime()?;
        let h = handler.ok_or_else(|| SimError::arg("handler is NULL"))?;
        let c = Condition::from_raw(cond)
            .ok_or_else(|| SimError::arg(format!("unknown condition {cond}")))?;
        let s = rt.signal(signal.handle)?;
        let a = SendPtr(arg as usize);
        rt.async_handlers.register(
            s,
            c,
            value,
            Box::new(move |v| {
                let a = &a;
                // SAFETY: the client's handler with its own argument, on the handler thread.
                unsafe { h(v, a.0 as *mut c_void) }
            }),
        );
        Ok(())
    })
}

/// `hsa_amd_async_function`: runs `callback(arg)` once on the handler thread.
///
/// # Safety
/// `callback` must be callable with `arg` from another thread.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_async_function(
    callback: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
) -> hsa_status_t {
    boundary("hsa_amd_async_function", || {
        let rt = runtime()?;
        let cb = callback.ok_or_else(|| SimError::arg("callback is NULL"))?;
        let a = SendPtr(arg as usize);
        rt.async_handlers.run_async(Box::new(move || {
            let a = &a;
            // SAFETY: the client's callback with its own argument, on the handler thread.
            unsafe { cb(a.0 as *mut c_void) }
        }));
        Ok(())
    })
}
