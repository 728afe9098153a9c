//! `device::rows::<key>::<order>` and `device::rows_by_key::<key>_<value>::<order>`:
//! device-resident sorts of rows, from one-key rows to rows longer than any tile.

use bitonic::Order;
use libtest_mimic::Failed;
use rand::Rng;

use super::inputs::{Input, context};
use super::pairs::same_as_host;
use super::{DevKey, DevValue, DeviceApi, descending, order_name};
use crate::support::{Pattern, check_keys, expected, input_seed, pair_multiset, rng_for};
use crate::targets::Target;

/// (row length, rows): one-key rows, tiny rows, many short rows, rows around and above
/// a tile, and two rows longer than any tile.
fn row_shapes(empty: bool) -> Vec<(usize, usize)> {
    let mut shapes = vec![
        (1, 1000),
        (2, 501),
        (3, 333),
        (5, 20_000),
        (1000, 7),
        (8193, 3),
        (70_000, 2),
    ];
    if empty {
        shapes.push((4, 0));
    }
    shapes
}

fn check_rows<K: DevKey>(
    got: &[K],
    input: &[K],
    row_len: usize,
    order: Order,
) -> Result<(), String> {
    for (r, (got_row, in_row)) in got.chunks(row_len).zip(input.chunks(row_len)).enumerate() {
        check_keys(got_row, &expected(in_row, descending(order)))
            .map_err(|e| format!("row {r}: {e}"))?;
    }
    Ok(())
}

pub fn rows_trial<D: DeviceApi, K: DevKey>(t: &Target, order: Order) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let id = format!("device::rows::{}::{}", K::NAME, order_name(order));
    for (turn, (row_len, rows)) in row_shapes(D::EMPTY_BUFFERS).into_iter().enumerate() {
        let n = row_len * rows;
        let input = [
            Input::Pattern(Pattern::Special),
            Input::Pattern(Pattern::Few),
        ][turn % 2];
        let seed = input_seed(t.seed, &id, n * 31 + row_len);
        let at = format!("{} (rows of {row_len})", context(t, &id, input, n, seed));
        let keys_in: Vec<K> = input.keys(n, &mut rng_for(seed));
        let mut keys = dev.upload(&keys_in).map_err(|e| format!("{at}: {e}"))?;
        dev.sort_rows(&mut keys, row_len, order, dev.queue())
            .map_err(|e| format!("{at}: sort_device_rows returned {e:?}"))?;
        let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
        check_rows(&got, &keys_in, row_len, order).map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(())
}

pub fn rows_by_key_trial<D: DeviceApi, K: DevKey, V: DevValue>(
    t: &Target,
    order: Order,
) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let id = format!(
        "device::rows_by_key::{}_{}::{}",
        K::NAME,
        V::NAME,
        order_name(order)
    );
    for (turn, (row_len, rows)) in row_shapes(D::EMPTY_BUFFERS).into_iter().enumerate() {
        let n = row_len * rows;
        let input = [
            Input::Pattern(Pattern::Few),
            Input::Pattern(Pattern::Special),
        ][turn % 2];
        let seed = input_seed(t.seed, &id, n * 31 + row_len);
        let at = format!("{} (rows of {row_len})", context(t, &id, input, n, seed));
        let fail = |e: String| format!("{at}: {e}");
        let mut rng = rng_for(seed);
        let keys_in: Vec<K> = input.keys(n, &mut rng);
        let salt: u64 = rng.r#gen();
        let values_in: Vec<V> = (0..n).map(|i| V::make(i, salt)).collect();
        let mut keys = dev.upload(&keys_in).map_err(fail)?;
        let mut values = dev.upload(&values_in).map_err(fail)?;
        dev.sort_rows_by_key(&mut keys, &mut values, row_len, order, dev.queue())
            .map_err(|e| fail(format!("sort_device_rows_by_key returned {e:?}")))?;
        let got_keys = dev.download(&keys).map_err(fail)?;
        let got_values = dev.download(&values).map_err(fail)?;
        check_rows(&got_keys, &keys_in, row_len, order).map_err(fail)?;
        for r in 0..rows {
            let span = r * row_len..(r + 1) * row_len;
            if pair_multiset(&got_keys[span.clone()], &got_values[span.clone()])
                != pair_multiset(&keys_in[span.clone()], &values_in[span])
            {
                return Err(fail(format!(
                    "row {r}: the pairs are not a permutation of the row's input pairs"
                ))
                .into());
            }
        }
        let (mut host_keys, mut host_values) = (keys_in.clone(), values_in.clone());
        let host = if descending(order) {
            t.sorter.sort_rows_by_key(
                &mut host_keys,
                &mut host_values,
                row_len,
                bitonic::Order::Descending,
            )
        } else {
            t.sorter.sort_rows_by_key(
                &mut host_keys,
                &mut host_values,
                row_len,
                bitonic::Order::Ascending,
            )
        };
        host.map_err(|e| fail(format!("the host-slice sort_rows_by_key returned {e:?}")))?;
        same_as_host(&got_keys, &got_values, &host_keys, &host_values).map_err(fail)?;
    }
    Ok(())
}
