//! `device::pairs::<key>_<value>`: device-resident key-value sorts, and the checks of a
//! key-value result that the rows and the backend-specific trials share.

use std::collections::HashMap;

use bitonic::Order;
use libtest_mimic::Failed;
use rand::Rng;

use super::inputs::{Input, context};
use super::{DevKey, DevValue, DeviceApi, descending, order_name};
use crate::support::{
    Pattern, check_keys, expected, input_seed, pair_multiset, rng_for, show_key, show_value,
    sort_pairs,
};
use crate::targets::Target;

/// The checks of a key-value result: keys sorted; the pairs a permutation of the input
/// pairs; with distinct keys each value where its key went; and, where keys repeat, the
/// same keys and values, bit for bit, as the host-slice sort of the same backend.
pub fn check_pairs<K: DevKey, V: DevValue>(
    t: &Target,
    keys_in: &[K],
    values_in: &[V],
    keys: &[K],
    values: &[V],
    order: Order,
) -> Result<(), String> {
    let want = expected(keys_in, descending(order));
    check_keys(keys, &want)?;
    let before = pair_multiset(keys_in, values_in);
    if pair_multiset(keys, values) != before {
        let stray = keys
            .iter()
            .zip(values)
            .position(|(k, v)| before.binary_search(&(k.bits(), v.bits())).is_err());
        return Err(match stray {
            Some(i) => format!(
                "output pair {i} (key {}, value {}) is not a pair of the input",
                show_key(keys[i]),
                show_value(values[i])
            ),
            None => "an input pair is missing and another one is duplicated".to_string(),
        });
    }
    let keys_repeat = want.windows(2).any(|w| w[0].bits() == w[1].bits());
    if !keys_repeat {
        // Distinct keys: the value of every position is known.
        let of: HashMap<u64, u64> = keys_in
            .iter()
            .zip(values_in)
            .map(|(k, v)| (k.bits(), v.bits()))
            .collect();
        if let Some(i) = (0..keys.len()).find(|&i| of[&want[i].bits()] != values[i].bits()) {
            return Err(format!(
                "value {i} is {}, but key {} came with value bits {:#x}",
                show_value(values[i]),
                show_key(want[i]),
                of[&want[i].bits()]
            ));
        }
        return Ok(());
    }
    let (mut host_keys, mut host_values) = (keys_in.to_vec(), values_in.to_vec());
    sort_pairs(
        &t.sorter,
        &mut host_keys,
        &mut host_values,
        descending(order),
    )
    .map_err(|e| format!("the host-slice sort returned {e:?}"))?;
    same_as_host(keys, values, &host_keys, &host_values)
}

/// The device result equals the host-slice sort's, keys and values, bit for bit.
pub fn same_as_host<K: DevKey, V: DevValue>(
    keys: &[K],
    values: &[V],
    host_keys: &[K],
    host_values: &[V],
) -> Result<(), String> {
    let differs = (0..keys.len()).find(|&i| {
        keys[i].bits() != host_keys[i].bits() || values[i].bits() != host_values[i].bits()
    });
    match differs {
        None => Ok(()),
        Some(i) => Err(format!(
            "differs from the host-slice sort of the same backend at index {i}: key {} \
             value {}, the host-slice sort has key {} value {}",
            show_key(keys[i]),
            show_value(values[i]),
            show_key(host_keys[i]),
            show_value(host_values[i])
        )),
    }
}

/// Lengths of the pair trials: fewer than for keys.
fn pair_lengths(empty: bool) -> Vec<usize> {
    let mut lengths: Vec<usize> = if empty { vec![0] } else { vec![] };
    lengths.extend([1, 2, 3, 1000, 1023, 1024, 8193, (1 << 17) + 1]);
    lengths
}

pub fn pairs_trial<D: DeviceApi, K: DevKey, V: DevValue>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    for order in [Order::Ascending, Order::Descending] {
        let id = format!(
            "device::pairs::{}_{}::{}",
            K::NAME,
            V::NAME,
            order_name(order)
        );
        for (turn, n) in pair_lengths(D::EMPTY_BUFFERS).into_iter().enumerate() {
            let inputs = if n <= 1024 {
                Input::ALL.to_vec()
            } else if n <= (1 << 13) + 1 {
                // Ties (checked against the host-slice sort), distinct keys (values
                // checked exactly), edge values.
                let third = [Input::Edges, Input::Pattern(Pattern::Special)][turn % 2];
                vec![Input::Pattern(Pattern::Few), Input::Distinct, third]
            } else if descending(order) {
                vec![Input::Distinct]
            } else {
                vec![Input::Pattern(Pattern::Few)]
            };
            for input in inputs {
                let seed = input_seed(t.seed, &format!("{id}::{}", input.name()), n);
                let at = context(t, &id, input, n, seed);
                let mut rng = rng_for(seed);
                let keys_in: Vec<K> = input.keys(n, &mut rng);
                let salt: u64 = rng.r#gen();
                let values_in: Vec<V> = (0..n).map(|i| V::make(i, salt)).collect();
                let fail = |e: String| format!("{at}: {e}");
                let mut keys = dev.upload(&keys_in).map_err(fail)?;
                let mut values = dev.upload(&values_in).map_err(fail)?;
                dev.sort_by_key(&mut keys, &mut values, order, dev.queue())
                    .map_err(|e| fail(format!("sort_device_by_key returned {e:?}")))?;
                let got_keys = dev.download(&keys).map_err(fail)?;
                let got_values = dev.download(&values).map_err(fail)?;
                check_pairs(t, &keys_in, &values_in, &got_keys, &got_values, order)
                    .map_err(fail)?;
            }
        }
    }
    Ok(())
}
