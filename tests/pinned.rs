//! Sorts of slices inside `PinnedBuffer`s, on every backend this build can reach.
//!
//! Per target:
//! - `<target>::pinned::keys_<type>`: sub-slices of a pinned buffer (the elements around them
//!   must stay as they were), every pattern of `support::Pattern`, both orders, lengths
//!   around every power of two the kernels' tiles use, checked against Rust's sorts;
//! - `<target>::pinned::pairs_rows_argsort`: keys and values pinned, keys pinned with
//!   ordinary values, rows, argsort and stable sorts of pinned data; key-value results must
//!   equal the CPU backend's bit for bit;
//! - `<target>::pinned::direct_path`: on the GPU backends, a pinned buffer's sort allocates
//!   no staging ring (so the bus read and wrote it directly), an all-or-nothing sorter's does;
//!   on the CPU, buffers are ordinary memory;
//! - `<target>::pinned::outlives_its_sorter`: a buffer stays usable after its sorter is
//!   dropped, and another sorter sorts it;
//! - `<target>::pinned::threads`: 8 threads share one sorter, each sorting its own pinned
//!   buffers several times.
//!
//! Targets and gating are the suite's (`support/targets.rs`): an unavailable backend's
//! trials are ignored with the reason; `BITONIC_REQUIRE`, `BITONIC_TEST_BACKENDS`,
//! `BITONIC_TEST_SEED` and `BITONIC_TEST_TIMES` work as for the suite.

#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::sync::{Arc, Barrier};

use bitonic::{BackendKind, PinnedBuffer, Sorter};
use libtest_mimic::{Arguments, Failed, Trial};
use support::{Pattern, TestKey, check_keys, expected, input_seed, rng_for, sort_keys};
use targets::{Slot, Target};

/// Elements before and after each sorted sub-slice, which must not change.
const GUARD: usize = 5;

/// Lengths around the tile and chunk boundaries, shorter on PoCL.
fn lengths(t: &Target) -> Vec<usize> {
    let mut out = vec![0, 1, 2, 3];
    let top = if t.is_opencl_cpu() { 14 } else { 20 };
    for log in [7, 10, 11, 12, 13, 14, 16, 17, 20] {
        if log <= top {
            let n = 1usize << log;
            out.extend([n - 1, n, n + 1]);
        }
    }
    out
}

/// A pinned buffer holding `keys` between guards of `fill`.
fn guarded<T: bytemuck::Pod>(
    sorter: &Sorter,
    keys: &[T],
    fill: T,
) -> bitonic::Result<PinnedBuffer<T>> {
    let mut buffer = sorter.pinned_buffer::<T>(keys.len() + 2 * GUARD)?;
    buffer.fill(fill);
    buffer[GUARD..GUARD + keys.len()].copy_from_slice(keys);
    Ok(buffer)
}

fn keys_of<K: TestKey>(t: &Target) -> Result<(), Failed> {
    for n in lengths(t) {
        for pattern in Pattern::ALL {
            for descending in [false, true] {
                let case = format!("pinned::keys_{}/{}/{descending}", K::NAME, pattern.name());
                let input: Vec<K> = pattern.keys(n, &mut rng_for(input_seed(t.seed, &case, n)));
                let guard = input
                    .first()
                    .copied()
                    .unwrap_or_else(|| K::random(&mut rng_for(1)));
                let mut buffer = guarded(&t.sorter, &input, guard)
                    .map_err(|e| format!("{case}, n = {n}: allocating: {e}"))?;
                sort_keys(&t.sorter, &mut buffer[GUARD..GUARD + n], descending)
                    .map_err(|e| format!("{case}, n = {n}: {e}"))?;
                check_keys(&buffer[GUARD..GUARD + n], &expected(&input, descending))
                    .map_err(|e| format!("{case}, n = {n}: {e}"))?;
                let outside = buffer[..GUARD].iter().chain(&buffer[GUARD + n..]);
                if outside.clone().any(|k| k.bits() != guard.bits()) {
                    return Err(format!("{case}, n = {n}: the sort wrote outside its slice").into());
                }
            }
        }
    }
    Ok(())
}

fn pairs_rows_argsort(t: &Target) -> Result<(), Failed> {
    let reference = t.reference.as_deref().unwrap_or(&t.sorter);
    let top = if t.is_opencl_cpu() { 1 << 14 } else { 1 << 20 };
    for n in [3usize, 1000, 4097, top + 1] {
        let case = "pinned::pairs";
        let keys: Vec<u32> = Pattern::Few.keys(n, &mut rng_for(input_seed(t.seed, case, n)));
        let values: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
        // Keys and values pinned.
        let mut pk = guarded(&t.sorter, &keys, 7u32)?;
        let mut pv = guarded(&t.sorter, &values, 9u64)?;
        t.sorter.sort_by_key(
            &mut pk[GUARD..GUARD + n],
            &mut pv[GUARD..GUARD + n],
            bitonic::Order::Ascending,
        )?;
        let (mut wk, mut wv) = (keys.clone(), values.clone());
        reference.sort_by_key(&mut wk, &mut wv, bitonic::Order::Ascending)?;
        if pk[GUARD..GUARD + n] != wk[..] || pv[GUARD..GUARD + n] != wv[..] {
            return Err(format!("{case}, n = {n}: pinned pairs differ from the CPU's").into());
        }
        // Pinned keys, ordinary values, descending.
        let mut pk = guarded(&t.sorter, &keys, 7u32)?;
        let mut ov = values.clone();
        t.sorter.sort_by_key(
            &mut pk[GUARD..GUARD + n],
            &mut ov,
            bitonic::Order::Descending,
        )?;
        let (mut wk, mut wv) = (keys.clone(), values.clone());
        reference.sort_by_key(&mut wk, &mut wv, bitonic::Order::Descending)?;
        if pk[GUARD..GUARD + n] != wk[..] || ov != wv {
            return Err(format!("{case}, n = {n}: pinned keys with ordinary values differ").into());
        }
        // Stable pairs and argsort of pinned keys: Rust's stable sort is the reference.
        let mut pk = guarded(&t.sorter, &keys, 7u32)?;
        let mut sv: Vec<u32> = (0..n as u32).collect();
        t.sorter.sort_by_key_stable(
            &mut pk[GUARD..GUARD + n],
            &mut sv,
            bitonic::Order::Ascending,
        )?;
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&i| keys[i as usize]);
        if sv != order {
            return Err(format!("{case}, n = {n}: stable sort of pinned keys is wrong").into());
        }
        let pk = guarded(&t.sorter, &keys, 7u32)?;
        if t.sorter
            .argsort(&pk[GUARD..GUARD + n], bitonic::Order::Ascending)?
            != order
        {
            return Err(format!("{case}, n = {n}: argsort of pinned keys is wrong").into());
        }
    }
    // Rows of f32 keys in a pinned buffer, every row checked.
    let (rows, row_len) = if t.is_opencl_cpu() {
        (16, 1000)
    } else {
        (64, 5000)
    };
    let case = "pinned::rows";
    let input: Vec<f32> = Pattern::Special.keys(
        rows * row_len,
        &mut rng_for(input_seed(t.seed, case, row_len)),
    );
    let mut buffer = guarded(&t.sorter, &input, 0.5f32)?;
    t.sorter.sort_rows(
        &mut buffer[GUARD..GUARD + rows * row_len],
        row_len,
        bitonic::Order::Ascending,
    )?;
    for (r, row) in input.chunks(row_len).enumerate() {
        let at = GUARD + r * row_len;
        check_keys(&buffer[at..at + row_len], &expected(row, false))
            .map_err(|e| format!("{case}: row {r}: {e}"))?;
    }
    Ok(())
}

fn direct_path(t: &Target) -> Result<(), Failed> {
    let n = 1 << 16;
    let input: Vec<u32> =
        Pattern::Random.keys(n, &mut rng_for(input_seed(t.seed, "pinned::direct", n)));
    let sorter = t.open_another()?;
    let mut buffer = guarded(&sorter, &input, 0u32)?;
    let gpu = t.info.backend != BackendKind::Cpu;
    if buffer.is_pinned() != gpu {
        return Err(format!("is_pinned() = {} on {}", buffer.is_pinned(), t.info).into());
    }
    sorter.sort(&mut buffer[GUARD..GUARD + n], bitonic::Order::Ascending)?;
    check_keys(&buffer[GUARD..GUARD + n], &expected(&input, false))?;
    if sorter.cached_pinned_bytes() != 0 {
        return Err(format!(
            "a pinned buffer's sort allocated {} bytes of staging",
            sorter.cached_pinned_bytes()
        )
        .into());
    }
    // All or nothing: the copy back goes through the ring, which keeps that promise.
    let careful = Sorter::builder()
        .ignore_env()
        .backend(t.info.backend)
        .device_index(t.info.index)
        .host_threshold(0)
        .all_or_nothing(true)
        .build()?;
    let mut buffer = guarded(&careful, &input, 0u32)?;
    careful.sort(&mut buffer[GUARD..GUARD + n], bitonic::Order::Ascending)?;
    check_keys(&buffer[GUARD..GUARD + n], &expected(&input, false))?;
    if gpu && careful.cached_pinned_bytes() == 0 {
        return Err("an all-or-nothing sort of a pinned buffer kept no staging ring".into());
    }
    Ok(())
}

fn outlives_its_sorter(t: &Target) -> Result<(), Failed> {
    let n = 5000;
    let input: Vec<u64> =
        Pattern::Random.keys(n, &mut rng_for(input_seed(t.seed, "pinned::outlives", n)));
    let sorter = t.open_another()?;
    let mut buffer = sorter.pinned_buffer::<u64>(n)?;
    if buffer.iter().any(|&k| k != 0) {
        return Err("a new pinned buffer is not zero-filled".into());
    }
    drop(sorter);
    buffer.copy_from_slice(&input);
    t.sorter.sort(&mut buffer, bitonic::Order::Descending)?;
    check_keys(&buffer, &expected(&input, true))?;
    drop(buffer);
    // Empty buffers need no memory at all.
    let empty = t.sorter.pinned_buffer::<u32>(0)?;
    if !empty.is_empty() || empty.is_pinned() {
        return Err("an empty pinned buffer is not empty ordinary memory".into());
    }
    Ok(())
}

fn threads(t: &Target) -> Result<(), Failed> {
    const THREADS: usize = 8;
    let barrier = Arc::new(Barrier::new(THREADS));
    let n = if t.is_opencl_cpu() { 20_000 } else { 300_000 };
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let sorter = Arc::clone(&t.sorter);
            let barrier = Arc::clone(&barrier);
            let seed = input_seed(t.seed, "pinned::threads", i);
            std::thread::spawn(move || -> Result<(), String> {
                let mut buffer = sorter.pinned_buffer::<f32>(n).map_err(|e| e.to_string())?;
                barrier.wait();
                for round in 0..3u64 {
                    let input: Vec<f32> = Pattern::Special.keys(n, &mut rng_for(seed + round));
                    buffer.copy_from_slice(&input);
                    sorter
                        .sort(&mut buffer, bitonic::Order::Ascending)
                        .map_err(|e| e.to_string())?;
                    check_keys(&buffer, &expected(&input, false))
                        .map_err(|e| format!("thread {i}, round {round}: {e}"))?;
                }
                Ok(())
            })
        })
        .collect();
    let failures: Vec<String> = handles
        .into_iter()
        .filter_map(|h| match h.join() {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some("a thread panicked".to_string()),
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; ").into())
    }
}

fn register(slot: &Slot, trials: &mut Vec<Trial>) {
    trials.push(slot.trial("pinned::keys_u32", keys_of::<u32>));
    trials.push(slot.trial("pinned::keys_f32", keys_of::<f32>));
    trials.push(slot.trial("pinned::keys_i64", keys_of::<i64>));
    trials.push(slot.trial("pinned::keys_f64", keys_of::<f64>));
    trials.push(slot.trial("pinned::keys_i16", keys_of::<i16>));
    trials.push(slot.trial("pinned::pairs_rows_argsort", pairs_rows_argsort));
    trials.push(slot.trial("pinned::direct_path", direct_path));
    trials.push(slot.trial("pinned::outlives_its_sorter", outlives_its_sorter));
    trials.push(slot.trial("pinned::threads", threads));
}

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("pinned");
    let mut trials = found.failures;
    for slot in &found.slots {
        register(slot, &mut trials);
    }
    libtest_mimic::run(&args, trials).exit()
}
