//! Shared virtual memory: `hsa_amd_svm_attributes_set`, `hsa_amd_svm_attributes_get`
//! and `hsa_amd_svm_prefetch_async` (ROCm's `hsa_ext_amd.h`; the model is
//! [`crate::svm`]).

use super::{boundary, check_signature, non_null};
use crate::copy::CopyJob;
use crate::error::{SimError, SimResult};
use crate::memory::PAGE;
use crate::runtime::{runtime, Runtime};
use crate::svm::{Setting, DEFAULT_GRANULARITY};
use hsa_sys::*;
use std::ffi::c_void;

check_signature!(
    hsa_amd_svm_attributes_set,
    hsa_amd_svm_attributes_get,
    hsa_amd_svm_prefetch_async,
);

/// `[ptr, ptr + size)` widened to whole pages, as ROCr does; the range must be
/// mapped by the process.
///
/// Errors: `InvalidArgument` for a NULL pointer, a zero size or a range past the
/// address space; `InvalidAllocation` when part of the range is not mapped.
fn page_range(ptr: *mut c_void, size: usize) -> SimResult<(u64, u64)> {
    non_null(ptr, "ptr")?;
    if size == 0 {
        return Err(SimError::arg("size is 0"));
    }
    let start = ptr as u64 & !(PAGE - 1);
    let end = (ptr as u64)
        .checked_add(size as u64)
        .and_then(|e| e.checked_add(PAGE - 1))
        .map(|e| e & !(PAGE - 1))
        .ok_or_else(|| SimError::arg(format!("range {ptr:p}+{size:#x} wraps")))?;
    if !crate::host_memory::mapped(start, end) {
        return Err(SimError::InvalidAllocation(format!(
            "SVM range {start:#x}..{end:#x} is not wholly mapped by the process"
        )));
    }
    Ok((start, end))
}

/// The attribute list of a call, `count` pairs at `list`.
///
/// # Safety
/// `list` must be NULL or point to `count` pairs.
unsafe fn pairs<'a>(
    list: *mut hsa_amd_svm_attribute_pair_t,
    count: usize,
) -> SimResult<&'a mut [hsa_amd_svm_attribute_pair_t]> {
    if count == 0 {
        return Ok(&mut []);
    }
    non_null(list, "attribute_list")?;
    // SAFETY: per this function's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(list, count) })
}

/// A settable pair as a [`Setting`].
///
/// Errors: `InvalidArgument` for an attribute that cannot be set or a value out of
/// its range; `InvalidAgent` for an agent value that names no agent.
fn setting(rt: &Runtime, pair: &hsa_amd_svm_attribute_pair_t) -> SimResult<Setting> {
    let attribute = u32::try_from(pair.attribute)
        .map_err(|_| SimError::arg(format!("unknown SVM attribute {:#x}", pair.attribute)))?;
    let v = pair.value;
    let agent = |h: u64| rt.agent(h).map(|_| h);
    Ok(match attribute {
        HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG => match u32::try_from(v) {
            Ok(HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED | HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED) => {
                Setting::GlobalFlag(v)
            }
            _ => return Err(SimError::arg(format!("SVM global flag {v} cannot be set"))),
        },
        HSA_AMD_SVM_ATTRIB_READ_ONLY => Setting::ReadOnly(v != 0),
        HSA_AMD_SVM_ATTRIB_HIVE_LOCAL => Setting::HiveLocal(v != 0),
        HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY => {
            if v > 63 {
                return Err(SimError::arg(format!("migration granularity 2^{v} pages")));
            }
            Setting::Granularity(v)
        }
        HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION => {
            Setting::Preferred(if v == 0 { 0 } else { agent(v)? })
        }
        HSA_AMD_SVM_ATTRIB_READ_MOSTLY => Setting::ReadMostly(v != 0),
        HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE
        | HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE
        | HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS => Setting::Access(agent(v)?, attribute),
        HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION | HSA_AMD_SVM_ATTRIB_ACCESS_QUERY => {
            return Err(SimError::arg(format!(
                "SVM attribute {attribute:#x} can only be queried"
            )))
        }
        other => return Err(SimError::arg(format!("unknown SVM attribute {other:#x}"))),
    })
}

/// `hsa_amd_svm_attributes_set`: records the attributes for the pages of the range
/// (all or none: every pair is checked first).
///
/// # Safety
/// `attribute_list` must be NULL or point to `attribute_count` pairs.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_svm_attributes_set(
    ptr: *mut c_void,
    size: usize,
    attribute_list: *mut hsa_amd_svm_attribute_pair_t,
    attribute_count: usize,
) -> hsa_status_t {
    boundary("hsa_amd_svm_attributes_set", || {
        let rt = runtime()?;
        // SAFETY: per this function's contract.
        let list = unsafe { pairs(attribute_list, attribute_count)? };
        let (start, end) = page_range(ptr, size)?;
        let settings = list
            .iter()
            .map(|p| setting(&rt, p))
            .collect::<SimResult<Vec<_>>>()?;
        if settings.iter().any(|s| matches!(s, Setting::Access(..))) {
            // Kernels may now reach host memory with XNACK off: a hole under a
            // running kernel must be a fault there too.
            crate::host_guard::install();
        }
        rt.svm.set(start, end, &settings);
        Ok(())
    })
}

/// `hsa_amd_svm_attributes_get`: each pair's value for the range (for
/// `HSA_AMD_SVM_ATTRIB_ACCESS_QUERY`, the value names the agent and the attribute
/// field receives its access).
///
/// # Safety
/// `attribute_list` must be NULL or point to `attribute_count` writable pairs.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_svm_attributes_get(
    ptr: *mut c_void,
    size: usize,
    attribute_list: *mut hsa_amd_svm_attribute_pair_t,
    attribute_count: usize,
) -> hsa_status_t {
    boundary("hsa_amd_svm_attributes_get", || {
        let rt = runtime()?;
        // SAFETY: per this function's contract.
        let list = unsafe { pairs(attribute_list, attribute_count)? };
        let (start, end) = page_range(ptr, size)?;
        let mut answers = Vec::with_capacity(list.len());
        for p in list.iter() {
            answers.push(query(&rt, start, end, p)?);
        }
        for (p, (attribute, value)) in list.iter_mut().zip(answers) {
            p.attribute = attribute;
            p.value = value;
        }
        Ok(())
    })
}

/// The `(attribute, value)` a get call writes back for `pair` over `[start, end)`.
fn query(
    rt: &Runtime,
    start: u64,
    end: u64,
    pair: &hsa_amd_svm_attribute_pair_t,
) -> SimResult<(u64, u64)> {
    let attribute = u32::try_from(pair.attribute)
        .map_err(|_| SimError::arg(format!("unknown SVM attribute {:#x}", pair.attribute)))?;
    let svm = &rt.svm;
    // The uniform value of an attribute: its setting's value, `default` when never
    // set, `mixed` when the pages disagree.
    let value = |like: Setting, default: u64, mixed: u64, get: fn(Setting) -> u64| match svm
        .uniform(start, end, &like)
    {
        Some(Some(s)) => get(s),
        Some(None) => default,
        None => mixed,
    };
    let flag = |s: Setting| match s {
        Setting::ReadOnly(b) | Setting::HiveLocal(b) | Setting::ReadMostly(b) => u64::from(b),
        _ => 0,
    };
    let number = |s: Setting| match s {
        Setting::GlobalFlag(v)
        | Setting::Granularity(v)
        | Setting::Preferred(v)
        | Setting::Prefetched(v) => v,
        _ => 0,
    };
    let v = match attribute {
        HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG => value(
            Setting::GlobalFlag(0),
            u64::from(HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED),
            u64::from(HSA_AMD_SVM_GLOBAL_FLAG_INDETERMINATE),
            number,
        ),
        HSA_AMD_SVM_ATTRIB_READ_ONLY => value(Setting::ReadOnly(false), 0, 0, flag),
        HSA_AMD_SVM_ATTRIB_HIVE_LOCAL => value(Setting::HiveLocal(false), 0, 0, flag),
        HSA_AMD_SVM_ATTRIB_READ_MOSTLY => value(Setting::ReadMostly(false), 0, 0, flag),
        HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY => value(
            Setting::Granularity(0),
            DEFAULT_GRANULARITY,
            DEFAULT_GRANULARITY,
            number,
        ),
        HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION => value(Setting::Preferred(0), 0, 0, number),
        HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION => value(Setting::Prefetched(0), 0, 0, number),
        HSA_AMD_SVM_ATTRIB_ACCESS_QUERY => {
            let agent = pair.value;
            rt.agent(agent)?;
            let access = match svm.uniform(start, end, &Setting::Access(agent, 0)) {
                Some(Some(Setting::Access(_, kind))) => kind,
                Some(_) if rt.config.xnack => HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE,
                Some(_) => HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS,
                // Pages that disagree: the weakest access among them.
                None => HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS,
            };
            return Ok((u64::from(access), agent));
        }
        other => {
            return Err(SimError::arg(format!(
                "SVM attribute {other:#x} cannot be queried"
            )))
        }
    };
    Ok((pair.attribute, v))
}

/// `hsa_amd_svm_prefetch_async`: host memory stays where it is on the virtual
/// device, so the prefetch only records the agent as the range's prefetch
/// location and, once the dependencies are at 0, decrements the completion signal
/// (in order with the agent's copies, on its copy engine).
///
/// # Safety
/// `dep_signals` must be NULL or point to `num_dep_signals` handles.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_svm_prefetch_async(
    ptr: *mut c_void,
    size: usize,
    agent: hsa_agent_t,
    num_dep_signals: u32,
    dep_signals: *const hsa_signal_t,
    completion_signal: hsa_signal_t,
) -> hsa_status_t {
    boundary("hsa_amd_svm_prefetch_async", || {
        let rt = runtime()?;
        let target = rt.agent(agent.handle)?;
        if (num_dep_signals == 0) != dep_signals.is_null() {
            return Err(SimError::arg("num_dep_signals and dep_signals disagree"));
        }
        let (start, end) = page_range(ptr, size)?;
        let deps = if num_dep_signals > 0 {
            // SAFETY: the caller passes num_dep_signals handles.
            let list = unsafe { std::slice::from_raw_parts(dep_signals, num_dep_signals as usize) };
            list.iter()
                .map(|s| rt.signal(s.handle))
                .collect::<SimResult<Vec<_>>>()?
        } else {
            Vec::new()
        };
        // A null completion signal is allowed: nothing to decrement.
        let completion = if completion_signal.handle == 0 {
            None
        } else {
            Some(rt.signal(completion_signal.handle)?)
        };
        rt.svm.set(start, end, &[Setting::Prefetched(agent.handle)]);
        let Some(completion) = completion else {
            return Ok(());
        };
        let engine = rt
            .copy_engines
            .get(target.index)
            .and_then(|e| e.as_ref())
            .or_else(|| rt.copy_engines.iter().flatten().next())
            .ok_or(SimError::NoCopyEngine)?;
        engine.submit(CopyJob {
            dst: start,
            src: start,
            size: 0,
            regions: Vec::new(),
            deps,
            completion,
        });
        Ok(())
    })
}
