//! Where short sorts run: below the host threshold no driver call is made, except for pairs
//! whose keys repeat and for an oblivious sorter.

use bitonic::{Sorter, fault};
use libtest_mimic::Failed;
use rand::seq::SliceRandom;

use crate::inject::Disarm;
use crate::support::{Pattern, check_keys, expected, input_seed, pair_multiset, rng_for};
use crate::targets::Target;

/// Sorts shorter than `host_threshold` call no driver at all, keys or pairs, except pairs whose
/// keys repeat from `host_threshold / TIED_PAIRS_THRESHOLD_DIVISOR` on; one of that length does;
/// in the oblivious mode every sort goes to the device.
pub fn check_host_threshold(target: &Target) -> Result<(), Failed> {
    let _disarm = Disarm;
    let sorter = |oblivious: bool| {
        Sorter::builder()
            .ignore_env()
            .backend(target.info.backend)
            .device_index(target.info.index)
            .oblivious(oblivious)
            .build()
            .map_err(|e| format!("a sorter with the default host_threshold: {e}"))
    };
    let (default, oblivious) = (sorter(false)?, sorter(true)?);
    let below = bitonic::DEFAULT_HOST_THRESHOLD;
    let mut rng = rng_for(input_seed(target.seed, "host_threshold", 0));
    // (what, sorter, n, distinct keys, keys alone, runs on the host)
    let tied = below / bitonic::internals::TIED_PAIRS_THRESHOLD_DIVISOR;
    let equal = "pairs with equal keys";
    let cases = [
        ("keys", &default, below - 1, false, true, true),
        ("keys", &default, below, false, true, false),
        ("distinct pairs", &default, below - 1, true, false, true),
        (equal, &default, tied - 1, false, false, true),
        (equal, &default, tied, false, false, false),
        (equal, &default, below, false, false, false),
        ("keys, oblivious", &oblivious, below - 1, false, true, false),
        (
            "pairs, oblivious",
            &oblivious,
            below - 1,
            true,
            false,
            false,
        ),
    ];
    for (what, sorter, n, distinct, alone, on_host) in cases {
        // Distinct keys: a shuffled permutation; equal ones: few distinct values.
        let mut keys: Vec<u32> = if distinct {
            let mut k: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
            k.shuffle(&mut rng);
            k
        } else if alone {
            Pattern::Random.keys::<u32>(n, &mut rng)
        } else {
            Pattern::Few.keys::<u32>(n, &mut rng)
        };
        let want = expected(&keys, false);
        let mut values: Vec<u32> = (0..n as u32).collect();
        let input = pair_multiset(&keys, &values);
        fault::arm(usize::MAX);
        let result = if alone {
            sorter.sort(&mut keys, bitonic::Order::Ascending)
        } else {
            sorter.sort_by_key(&mut keys, &mut values, bitonic::Order::Ascending)
        };
        let points = fault::points_seen();
        fault::disarm();
        result.map_err(|e| format!("{what}, n = {n}: {e}"))?;
        check_keys(&keys, &want).map_err(|e| format!("{what}, n = {n}: {e}"))?;
        if !alone && pair_multiset(&keys, &values) != input {
            return Err(format!("{what}, n = {n}: the pairs are not the input's").into());
        }
        if on_host != (points == 0) {
            return Err(format!(
                "{what}, n = {n} (host_threshold {below}): {points} driver calls; expected the sort \
                 to run on the {}",
                if on_host { "host" } else { "device" }
            )
            .into());
        }
    }
    Ok(())
}
