//! `device::top_k::<key>::<order>` and `device::top_k::errors`: `top_k_device_rows` against a
//! CPU model, and its refusals.

use std::collections::HashMap;

use bitonic::{Error, Order};
use libtest_mimic::Failed;

use super::inputs::{Input, context};
use super::{DevKey, DeviceApi, descending, order_name};
use crate::support::{Pattern, input_seed, rng_for, show_key};
use crate::targets::Target;

/// (rows, row length, k): one key; k = 1 and k = the row; rows around the top-k tile
/// (2^12 words) and its first pass's merges; k past the on-chip limit (2048), up to the
/// whole row; many short rows. `large` adds 8 rows of 2^20 with k = 16384; `whole_row` one
/// row past 2^20 keys with k = the row, which sorts (key, position) pairs by radix.
fn shapes(large: bool, whole_row: bool) -> Vec<(usize, usize, usize)> {
    let mut shapes = vec![
        (1, 1, 1),
        (3, 2, 2),
        (2, 3, 1),
        (2, 3, 3),
        (1, 1000, 1),
        (1, 1000, 1000),
        (1, 4095, 100),
        (2, 4096, 2048),
        (1, 4097, 7),
        (1, 8193, 2049),
        (1, 8193, 8193),
        (3, 5000, 4000),
        (1, 70_001, 33),
        (1, 70_001, 3000),
        (500, 17, 5),
        (64, 300, 300),
        (100, 1000, 32),
        (9, 4096, 256),
        (37, 33, 32),
    ];
    if large {
        shapes.push((8, 1 << 20, 16384));
    }
    if whole_row {
        let n = (1 << 20) + 5;
        shapes.push((1, n, n));
    }
    shapes
}

/// The inputs of the trials, one shape after another in turn.
const INPUTS: [Input; 5] = [
    Input::Pattern(Pattern::Special),
    Input::Pattern(Pattern::Few),
    Input::Edges,
    Input::Pattern(Pattern::Random),
    Input::Pattern(Pattern::Equal),
];

/// Whether the device's `keys` still hold `keys_in`, bit for bit.
fn keys_unchanged<D: DeviceApi, K: DevKey>(
    dev: &D,
    keys: &D::Buf<K>,
    keys_in: &[K],
) -> Result<(), String> {
    let now = dev.download(keys)?;
    if now.iter().zip(keys_in).any(|(a, b)| a.bits() != b.bits()) {
        return Err("the keys changed".to_string());
    }
    Ok(())
}

/// The model: per row, the positions ordered by key (total order, reversed for descending)
/// then by position; the first `k` of them.
fn model<K: DevKey>(keys: &[K], row_len: usize, k: usize, order: Order) -> Vec<u32> {
    // Equal keys have equal bits in the total order, so a key's rank in the sorted keys
    // is that of its bits.
    let mut sorted = keys.to_vec();
    K::reference_sort(&mut sorted);
    let mut rank = HashMap::new();
    for (i, key) in sorted.iter().enumerate() {
        rank.entry(key.bits()).or_insert(i);
    }
    let mut out = Vec::with_capacity(keys.len() / row_len * k);
    for row in keys.chunks(row_len) {
        let mut positions: Vec<u32> = (0..row_len as u32).collect();
        positions.sort_by_key(|&p| {
            let r = rank[&row[p as usize].bits()] as i64;
            (if descending(order) { -r } else { r }, p)
        });
        out.extend_from_slice(&positions[..k]);
    }
    out
}

pub fn top_k_trial<D: DeviceApi, K: DevKey>(t: &Target, order: Order) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let id = format!("device::top_k::{}::{}", K::NAME, order_name(order));
    // The large shape once per sort route (32-bit words, 64-bit ranks), and on GPUs only:
    // its model costs seconds, and the sort path over 2^23 words minutes on a CPU device.
    let large = t.info.device_type != bitonic::DeviceType::Cpu
        && order == Order::Ascending
        && matches!(K::NAME, "f32" | "i64");
    // The whole row's radix route on every device (a few tenths of a second on a CPU
    // device), for one 32-bit and one 64-bit key type, descending.
    let whole_row = order == Order::Descending && matches!(K::NAME, "f32" | "f64");
    for (turn, (rows, row_len, k)) in shapes(large, whole_row).into_iter().enumerate() {
        let n = rows * row_len;
        let input = INPUTS[turn % INPUTS.len()];
        let seed = input_seed(t.seed, &id, n * 31 + k);
        let at = format!(
            "{} ({rows} rows of {row_len}, k = {k})",
            context(t, &id, input, n, seed)
        );
        let fail = |e: String| format!("{at}: {e}");
        let keys_in: Vec<K> = input.keys(n, &mut rng_for(seed));
        let keys = dev.upload(&keys_in).map_err(fail)?;
        let mut values = dev.upload(&vec![K::zeroed(); rows * k]).map_err(fail)?;
        let mut indices = dev.upload(&vec![u32::MAX; rows * k]).map_err(fail)?;
        dev.top_k_rows(
            &keys,
            row_len,
            k,
            order,
            &mut values,
            &mut indices,
            dev.queue(),
        )
        .map_err(|e| fail(format!("top_k_device_rows returned {e:?}")))?;
        let got_values = dev.download(&values).map_err(fail)?;
        let got_indices = dev.download(&indices).map_err(fail)?;
        let want = model(&keys_in, row_len, k, order);
        if let Some(i) = (0..want.len()).find(|&i| got_indices[i] != want[i]) {
            return Err(fail(format!(
                "row {} entry {}: position {} (key {}), the model's {} (key {})",
                i / k,
                i % k,
                got_indices[i],
                keys_in
                    .get((i / k) * row_len + got_indices[i] as usize)
                    .map_or("out of the row".to_string(), |&x| show_key(x)),
                want[i],
                show_key(keys_in[(i / k) * row_len + want[i] as usize]),
            ))
            .into());
        }
        for (i, (&value, &position)) in got_values.iter().zip(&want).enumerate() {
            let key = keys_in[(i / k) * row_len + position as usize];
            if value.bits() != key.bits() {
                return Err(fail(format!(
                    "row {} entry {}: value {}, the key at its position is {}",
                    i / k,
                    i % k,
                    show_key(value),
                    show_key(key)
                ))
                .into());
            }
        }
        keys_unchanged(&dev, &keys, &keys_in).map_err(fail)?;
    }
    Ok(())
}

/// `argsort_device_rows` against the model's whole rows, with the keys untouched: one key,
/// short and long rows, one row past the radix sort of pairs' threshold, every input
/// pattern; and a shape whose indices do not match the keys refused.
pub fn argsort_trial<D: DeviceApi, K: DevKey>(t: &Target, order: Order) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let id = format!("device::argsort::{}::{}", K::NAME, order_name(order));
    let shapes = [
        (1usize, 1usize),
        (3, 2),
        (1, 1000),
        (64, 300),
        (2, 8193),
        (1, (1 << 20) + 5),
    ];
    for (turn, (rows, row_len)) in shapes.into_iter().enumerate() {
        let n = rows * row_len;
        let input = INPUTS[turn % INPUTS.len()];
        let seed = input_seed(t.seed, &id, n);
        let at = format!(
            "{} ({rows} rows of {row_len})",
            context(t, &id, input, n, seed)
        );
        let fail = |e: String| format!("{at}: {e}");
        let keys_in: Vec<K> = input.keys(n, &mut rng_for(seed));
        let keys = dev.upload(&keys_in).map_err(fail)?;
        let mut indices = dev.upload(&vec![u32::MAX; n]).map_err(fail)?;
        dev.argsort_rows(&keys, row_len, order, &mut indices, dev.queue())
            .map_err(|e| fail(format!("argsort_device_rows returned {e:?}")))?;
        let got = dev.download(&indices).map_err(fail)?;
        let want = model(&keys_in, row_len, row_len, order);
        if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
            return Err(fail(format!(
                "row {} entry {}: position {}, the model's {}",
                i / row_len,
                i % row_len,
                got[i],
                want[i]
            ))
            .into());
        }
        keys_unchanged(&dev, &keys, &keys_in).map_err(fail)?;
    }
    let keys = dev.upload(&[K::zeroed(); 6]).map_err(|e| e.to_string())?;
    let mut short = dev.upload(&[0u32; 5]).map_err(|e| e.to_string())?;
    match dev.argsort_rows(&keys, 3, order, &mut short, dev.queue()) {
        Err(Error::InvalidConfig(_)) => Ok(()),
        other => Err(format!("{id}: 5 indices for 6 keys gave {other:?}").into()),
    }
}

/// Bad shapes are refused with `InvalidConfig` and leave the outputs as they were.
pub fn top_k_errors<D: DeviceApi>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let at = format!("{}::device::top_k::errors", t.label);
    let keys_in: Vec<u32> = (0..12).rev().collect();
    let keys = dev.upload(&keys_in).map_err(|e| format!("{at}: {e}"))?;
    // (row length, k, values, indices): rows that do not divide the keys, k = 0, k past the
    // row, outputs one too short or too long.
    for (row_len, k, values_len, indices_len) in [
        (5, 1, 2, 2),
        (4, 0, 3, 3),
        (4, 5, 15, 15),
        (4, 2, 5, 6),
        (4, 2, 6, 7),
        (4, 2, 7, 6),
    ] {
        let case =
            format!("{at}: rows of {row_len}, k = {k}, outputs {values_len} and {indices_len}");
        let mut values = dev
            .upload(&vec![7u32; values_len])
            .map_err(|e| format!("{case}: {e}"))?;
        let mut indices = dev
            .upload(&vec![9u32; indices_len])
            .map_err(|e| format!("{case}: {e}"))?;
        match dev.top_k_rows(
            &keys,
            row_len,
            k,
            Order::Ascending,
            &mut values,
            &mut indices,
            dev.queue(),
        ) {
            Err(Error::InvalidConfig(_)) => {}
            other => return Err(format!("{case}: {other:?}, not InvalidConfig").into()),
        }
        let values = dev.download(&values).map_err(|e| format!("{case}: {e}"))?;
        let indices = dev.download(&indices).map_err(|e| format!("{case}: {e}"))?;
        if values.iter().any(|&v| v != 7) || indices.iter().any(|&i| i != 9) {
            return Err(format!("{case}: a refused call wrote its outputs").into());
        }
    }
    Ok(())
}
