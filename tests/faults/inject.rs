//! The fault loop: a case sorted once unarmed, then with each fault point armed in turn, in
//! both copy-back modes, with the checks each failed sort must pass (see `faults.rs`).

use std::collections::BTreeMap;

use bitonic::{BackendKind, Error, Sorter, fault};
use libtest_mimic::Failed;

use crate::cases::Case;
use crate::targets::Target;

/// Fewest different driver calls that must have failed in one trial.
pub const MIN_DISTINCT_CALLS: usize = 4;

/// Every driver call a backend's host-slice sort has a fault point before.
fn known_calls(backend: BackendKind) -> &'static [&'static str] {
    match backend {
        BackendKind::Cuda => &[
            "cuCtxSetCurrent",
            "cuMemAlloc",
            "cuMemAllocHost",
            "cuMemcpyHtoDAsync",
            "cuEventRecord",
            "cuStreamWaitEvent",
            "cuLaunchKernel",
            "cuEventSynchronize",
            "cuMemcpyDtoHAsync",
        ],
        BackendKind::OpenCl => &[
            "clCreateBuffer",
            "clEnqueueMapBuffer",
            "clEnqueueWriteBuffer",
            "clSetKernelArg",
            "clEnqueueNDRangeKernel",
            "clWaitForEvents",
            "clEnqueueReadBuffer",
            "clEnqueueMarkerWithWaitList",
            "clCreateSubBuffer",
            "clEnqueueBarrierWithWaitList",
        ],
        _ => &[],
    }
}

/// Disarms this thread's fault countdown when dropped, also when a trial panics (libtest-mimic
/// reuses its threads).
pub struct Disarm;

impl Drop for Disarm {
    fn drop(&mut self) {
        fault::disarm();
    }
}

/// The first index where `a` and `b` differ, or "none".
fn first_diff(a: &[u64], b: &[u64]) -> String {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .map_or_else(|| "none".to_string(), |i| format!("at element {i}"))
}

/// Checks an error from a sort whose fault point for `call` failed.
fn check_error(err: &Error, backend: BackendKind, call: &str) -> Result<(), String> {
    match err {
        Error::Driver {
            backend: b,
            call: c,
            code,
            message,
        } if *b == backend && c == call && *code == fault::CODE && message == "injected fault" => {
            let text = err.to_string();
            if text.contains(call) {
                Ok(())
            } else {
                Err(format!("the error's text does not name {call}: {text}"))
            }
        }
        other => Err(format!(
            "the fault at {call} should give Error::Driver {{ backend: {backend}, call: \
             {call:?}, code: {}, message: \"injected fault\" }}, got {other:?}",
            fault::CODE
        )),
    }
}

/// Held by every fault loop: trials of one target share its sorter, and a sort on another
/// thread would change which device buffers a sort finds kept, and so its number of points.
static ONE_LOOP_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Puts the sorter back to the default copy back when dropped.
struct DefaultCopyBack<'a>(&'a Sorter);

impl Drop for DefaultCopyBack<'_> {
    fn drop(&mut self) {
        self.0.backend().set_all_or_nothing(false);
    }
}

/// Runs the fault loop on one case, with each copy-back mode (see the file's comment).
pub fn inject<C: Case>(target: &Target, name: &str, input: C) -> Result<(), Failed> {
    inject_sampled(target, name, input, |_, _| true)
}

/// [`inject`], injecting only the faults `k` for which `sampled(points, k)` holds (the sort
/// that passes every point still ends the loop).
pub fn inject_sampled<C: Case>(
    target: &Target,
    name: &str,
    input: C,
    sampled: fn(usize, usize) -> bool,
) -> Result<(), Failed> {
    let _one = ONE_LOOP_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let _disarm = Disarm;
    let sorter = &*target.sorter;
    let _default = DefaultCopyBack(sorter);
    for all_or_nothing in [false, true] {
        sorter.backend().set_all_or_nothing(all_or_nothing);
        inject_mode(target, name, input.clone(), all_or_nothing, sampled)?;
    }
    Ok(())
}

/// The fault loop in one copy-back mode.
fn inject_mode<C: Case>(
    target: &Target,
    name: &str,
    input: C,
    all_or_nothing: bool,
    sampled: fn(usize, usize) -> bool,
) -> Result<(), Failed> {
    let backend = target.info.backend;
    let sorter = &*target.sorter;
    let want = input.want(target)?;
    let (input_bits, want_bits) = (input.bits(), want.bits());

    // Every sort starts without the device buffers that sorts keep for reuse, so that the
    // allocations are among the points (a sort that reuses them passes the same points less
    // the allocations).
    let fresh = || sorter.release_device_memory();

    // Unarmed (armed past any reachable point): the exact result, and the number of points.
    let mut first = input.clone();
    fresh();
    fault::arm(usize::MAX);
    let result = first.sort(sorter);
    let points = fault::points_seen();
    fault::disarm();
    result.map_err(|e| format!("the unarmed sort failed: {e}"))?;
    if first.bits() != want_bits {
        return Err(format!(
            "the unarmed sort is wrong: differs from the expected result {}",
            first_diff(&first.bits(), &want_bits)
        )
        .into());
    }

    // Per failed call: (faults injected, left untouched, left sorted, partly written).
    let mut outcomes: BTreeMap<&'static str, (usize, usize, usize, usize)> = BTreeMap::new();
    let mut k = 0;
    loop {
        if k > points {
            return Err(format!(
                "fault {k} still failed, but the unarmed sort passed only {points} points"
            )
            .into());
        }
        if k < points && !sampled(points, k) {
            k += 1;
            continue;
        }
        let mut data = input.clone();
        fresh();
        fault::arm(k);
        let result = data.sort(sorter);
        let tripped = fault::tripped();
        fault::disarm();
        let Some(call) = tripped else {
            // No point failed: the sort must have succeeded, exactly, after every point.
            result.map_err(|e| format!("fault {k} was not injected, yet the sort failed: {e}"))?;
            if data.bits() != want_bits {
                return Err(format!(
                    "the sort that passed every point is wrong: differs {}",
                    first_diff(&data.bits(), &want_bits)
                )
                .into());
            }
            if k != points {
                return Err(format!(
                    "the sort passed every point at fault {k}, the unarmed sort passed {points}"
                )
                .into());
            }
            break;
        };
        let at = format!("fault {k} (at {call})");
        let err = match result {
            Err(err) => err,
            Ok(()) => return Err(format!("{at}: the sort returned Ok").into()),
        };
        let (cause, partial) = match &err {
            Error::PartialResult { cause } if !all_or_nothing => (cause.as_ref(), true),
            Error::PartialResult { .. } => {
                return Err(format!("{at}: all_or_nothing, yet the result is partial").into());
            }
            other => (other, false),
        };
        check_error(cause, backend, call).map_err(|e| format!("{at}: {e}"))?;
        let bits = data.bits();
        let entry = outcomes.entry(call).or_default();
        entry.0 += 1;
        if partial {
            // Each element is its input or its sorted value; at least one was written.
            let mixed = bits
                .iter()
                .zip(&input_bits)
                .zip(&want_bits)
                .all(|((b, i), w)| b == i || b == w);
            if !mixed || bits == input_bits {
                return Err(format!(
                    "{at}: Error::PartialResult, but the slices do not hold part of the result \
                     and part of the input (differ from the input {})",
                    first_diff(&bits, &input_bits)
                )
                .into());
            }
            entry.3 += 1;
        } else if bits == input_bits {
            entry.1 += 1;
        } else if bits == want_bits {
            entry.2 += 1;
        } else {
            return Err(format!(
                "{at}: the slices are half written: they differ from the input {} and from \
                 the sorted result {}",
                first_diff(&bits, &input_bits),
                first_diff(&bits, &want_bits)
            )
            .into());
        }
        // The sorter still works.
        let mut again = input.clone();
        again
            .sort(sorter)
            .map_err(|e| format!("{at}: the next, unarmed sort failed: {e}"))?;
        if again.bits() != want_bits {
            return Err(format!(
                "{at}: the next, unarmed sort is wrong: differs {}",
                first_diff(&again.bits(), &want_bits)
            )
            .into());
        }
        k += 1;
    }

    let known = known_calls(backend);
    if let Some(call) = outcomes.keys().find(|c| !known.contains(c)) {
        return Err(format!("fault point {call} is not one of {backend}'s calls {known:?}").into());
    }
    if outcomes.len() < MIN_DISTINCT_CALLS {
        return Err(format!(
            "only {} different calls failed ({:?}) in {points} points; want at least \
             {MIN_DISTINCT_CALLS}",
            outcomes.len(),
            outcomes.keys().collect::<Vec<_>>()
        )
        .into());
    }
    let summary: Vec<String> = outcomes
        .iter()
        .map(|(call, (n, untouched, sorted, partial))| {
            format!("{call} x{n} ({untouched} untouched, {sorted} sorted, {partial} partial)")
        })
        .collect();
    let mode = if all_or_nothing {
        "all or nothing"
    } else {
        "direct"
    };
    eprintln!(
        "{}::{name} ({mode}): {points} points: {}",
        target.label,
        summary.join(", ")
    );
    Ok(())
}
