//! Argsort: stable index sorts of slices and of rows.

use super::*;

/// 0..=3 and 2^k - 1, 2^k, 2^k + 1 for k in 2..=top.
pub(super) fn pow_lengths(top: u32) -> Vec<usize> {
    let mut lengths: Vec<usize> = (0..=3).collect();
    for k in 2..=top {
        lengths.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
    }
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

/// About a million, for the trials that get one long input.
pub(super) const MILLION: usize = 1_000_003;

pub(super) fn index_diff<K: TestKey>(keys: &[K], got: &[u32], want: &[u32]) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) else {
        return Err(format!("got {} indices, want {}", got.len(), want.len()));
    };
    let show = |p: u32| {
        keys.get(p as usize)
            .map_or_else(|| "out of range".to_string(), |&k| show_key(k))
    };
    let lo = i.saturating_sub(2);
    let hi = (i + 3).min(got.len()).min(want.len());
    Err(format!(
        "wrong index at position {i}: got {} (key {}), want {} (key {}); got [{lo}..{hi}] = \
         {:?}, want {:?}",
        got[i],
        show(got[i]),
        want[i],
        show(want[i]),
        &got[lo..hi],
        &want[lo..hi]
    ))
}

pub(super) struct ArgCase {
    pub(super) id: String,
    pub(super) keys: Keys,
    pub(super) descending: bool,
    pub(super) lengths: Vec<usize>,
}

pub(super) fn run_argsort<K: DerivedKey>(t: &Target, case: &ArgCase) -> Result<(), Failed> {
    for &n in &case.lengths {
        let seed = input_seed(t.seed, &case.id, n);
        let keys: Vec<K> = case.keys.keys(n, &mut rng_for(seed));
        let shape = format!("n={n}");
        let got = if case.descending {
            t.sorter.argsort(&keys, bitonic::Order::Descending)
        } else {
            t.sorter.argsort(&keys, bitonic::Order::Ascending)
        }
        .map_err(|e| fail(t, &case.id, &shape, seed, format!("returned an error: {e}")))?;
        let want = rust_argsort(&keys, case.descending);
        index_diff(&keys, &got, &want).map_err(|m| fail(t, &case.id, &shape, seed, m))?;
    }
    Ok(())
}

pub(super) fn run_argsort_rows<K: DerivedKey>(t: &Target, case: &RowsCase) -> Result<(), Failed> {
    for &(rows, row_len) in &case.shapes {
        let seed = shape_seed(t.seed, &case.id, rows, row_len);
        let keys: Vec<K> = row_matrix(case.keys, rows, row_len, &mut rng_for(seed));
        let shape = shape_name(rows, row_len);
        let got = if case.descending {
            t.sorter
                .argsort_rows(&keys, row_len, bitonic::Order::Descending)
        } else {
            t.sorter
                .argsort_rows(&keys, row_len, bitonic::Order::Ascending)
        }
        .map_err(|e| fail(t, &case.id, &shape, seed, format!("returned an error: {e}")))?;
        let want: Vec<u32> = keys
            .chunks(row_len)
            .flat_map(|row| rust_argsort(row, case.descending))
            .collect();
        if got != want {
            let r = got
                .chunks(row_len)
                .zip(want.chunks(row_len))
                .position(|(g, w)| g != w)
                .unwrap_or(rows);
            let span = (r * row_len).min(keys.len())..((r + 1) * row_len).min(keys.len());
            let msg = match index_diff(
                &keys[span.clone()],
                got.get(span.clone()).unwrap_or(&[]),
                &want[span.clone()],
            ) {
                Err(m) => format!("row {r}: {m}"),
                Ok(()) => format!("got {} indices, want {}", got.len(), want.len()),
            };
            return Err(fail(t, &case.id, &shape, seed, msg));
        }
    }
    Ok(())
}

pub(super) fn add_argsort<K: DerivedKey>(
    suite: &mut Suite,
    slot: &Slot,
    cfg: &Config,
    plan: &[(Keys, u32)],
) {
    for &(keys, top) in plan {
        for descending in [false, true] {
            // The largest powers of two in one order; the other order stops at 2^13.
            let mut lengths = pow_lengths(if descending { top.min(13) } else { top });
            if (K::NAME, keys, descending) == ("u32", Keys::FEW, false) {
                lengths.push(MILLION);
            }
            let case = ArgCase {
                id: format!(
                    "argsort::{}::{}::{}",
                    K::NAME,
                    keys.name(),
                    order_name(descending)
                ),
                keys,
                descending,
                lengths: capped(lengths, cfg.max_n),
            };
            let cost = case.lengths.iter().map(|&n| n as u64 * 6).sum();
            let id = case.id.clone();
            suite.add(slot, &id, cost, move |t| run_argsort::<K>(t, &case));
        }
    }
}

pub(super) fn add_argsort_rows<K: DerivedKey>(
    suite: &mut Suite,
    slot: &Slot,
    cfg: &Config,
    keys: Keys,
) {
    for descending in [false, true] {
        let case = RowsCase {
            id: format!(
                "argsort_rows::{}::{}::{}",
                K::NAME,
                keys.name(),
                order_name(descending)
            ),
            keys,
            descending,
            shapes: row_shapes(
                &[1, 2, 3, 31, 1000, 1025, 5000],
                &ROW_COUNTS,
                &[(2, 8193)],
                cfg.max_n,
            ),
        };
        let (id, cost) = (case.id.clone(), case.cost(6));
        suite.add(slot, &id, cost, move |t| run_argsort_rows::<K>(t, &case));
    }
}
