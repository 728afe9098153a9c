//! `device::keys::<key>::<order>`: device-resident sorts of keys alone.

use bitonic::Order;
use libtest_mimic::Failed;

use super::inputs::{Input, context};
use super::{DevKey, DeviceApi, descending, order_name};
use crate::support::{Pattern, check_keys, expected, input_seed, rng_for};
use crate::targets::Target;

/// Lengths of the key trials: 0 (where buffers may be empty), 1, 2, 3, 1000 and
/// 2^k - 1, 2^k, 2^k + 1 for k = 10, 13, 17.
fn key_lengths(empty: bool) -> Vec<usize> {
    let mut lengths: Vec<usize> = if empty { vec![0] } else { vec![] };
    lengths.extend([1, 2, 3, 1000]);
    for k in [10, 13, 17] {
        lengths.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    lengths
}

/// The inputs sorted at length `n`: all of them up to 2^13 + 1. Above, to keep the
/// trials short, one per length: edge values at the first large length (`large` 0),
/// then two others that change from trial to trial (`trial` numbers the key trials), so
/// that the twelve key trials together sort every input at 2^17 +- 1.
fn inputs_at(n: usize, large: usize, trial: usize) -> Vec<Input> {
    if n <= (1 << 13) + 1 {
        Input::ALL.to_vec()
    } else if large == 0 {
        vec![[Input::Edges, Input::Pattern(Pattern::Special)][trial % 2]]
    } else {
        vec![Input::ALL[(2 * trial + large) % Input::ALL.len()]]
    }
}

/// The key types, in the order of the key trials.
const KEY_NAMES: [&str; 6] = ["u32", "i32", "f32", "u64", "i64", "f64"];

pub fn keys_trial<D: DeviceApi, K: DevKey>(t: &Target, order: Order) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let id = format!("device::keys::{}::{}", K::NAME, order_name(order));
    let trial = KEY_NAMES.iter().position(|&k| k == K::NAME).unwrap_or(0) * 2
        + usize::from(descending(order));
    let lengths = key_lengths(D::EMPTY_BUFFERS);
    let first_large = lengths.iter().position(|&n| n > (1 << 13) + 1).unwrap_or(0);
    for (i, n) in lengths.into_iter().enumerate() {
        for input in inputs_at(n, i.saturating_sub(first_large), trial) {
            let seed = input_seed(t.seed, &format!("{id}::{}", input.name()), n);
            let at = context(t, &id, input, n, seed);
            let keys_in: Vec<K> = input.keys(n, &mut rng_for(seed));
            let want = expected(&keys_in, descending(order));
            let mut keys = dev.upload(&keys_in).map_err(|e| format!("{at}: {e}"))?;
            dev.sort(&mut keys, order, dev.queue())
                .map_err(|e| format!("{at}: sort_device returned {e:?}"))?;
            let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
            check_keys(&got, &want).map_err(|e| format!("{at}: {e}"))?;
        }
    }
    Ok(())
}
