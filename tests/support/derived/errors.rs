//! Errors of the derived calls: shapes that are not whole rows, bad offsets and lengths.

use super::*;

/// Shapes that are not whole rows: (length, row_len).
pub(super) const NOT_ROWS: [(usize, usize); 8] = [
    (10, 3),
    (1, 0),
    (5, 0),
    (1000, 7),
    (1025, 1024),
    (3, 4),
    (2, 3),
    (20_001, 20_000),
];

pub(super) fn check_rows_errors<K: DerivedKey>(t: &Target) -> Result<(), Failed> {
    for (n, row_len) in NOT_ROWS {
        let seed = input_seed(t.seed, "errors::rows", n * 31 + row_len);
        let input: Vec<K> = Keys::RANDOM.keys(n, &mut rng_for(seed));
        let values_in: Vec<u32> = (0..n as u32).collect();
        let what = format!("{} {} keys, row_len {row_len}", n, K::NAME);
        let label = &t.label;
        for descending in [false, true] {
            let suffix = if descending { "_descending" } else { "" };
            let mut data = input.clone();
            let result = if descending {
                t.sorter
                    .sort_rows(&mut data, row_len, bitonic::Order::Descending)
            } else {
                t.sorter
                    .sort_rows(&mut data, row_len, bitonic::Order::Ascending)
            };
            want_invalid(
                &format!("{label}: sort_rows{suffix} of {what}"),
                &result,
                &data,
                &input,
            )?;

            let (mut keys, mut values) = (input.clone(), values_in.clone());
            let result = rows_by_key(&t.sorter, &mut keys, &mut values, row_len, descending);
            let call = format!("{label}: sort_rows_by_key{suffix} of {what}");
            want_invalid(&call, &result, &keys, &input)?;
            if values != values_in {
                return Err(format!("{call}: the call failed but changed the values").into());
            }

            let result = if descending {
                t.sorter
                    .argsort_rows(&input, row_len, bitonic::Order::Descending)
            } else {
                t.sorter
                    .argsort_rows(&input, row_len, bitonic::Order::Ascending)
            };
            want_invalid(
                &format!("{label}: argsort_rows{suffix} of {what}"),
                &result,
                &input,
                &input,
            )?;
        }
    }
    // No data is zero rows of any length, row_len 0 included.
    for row_len in [0, 1, 5] {
        for descending in [false, true] {
            let suffix = if descending { "_descending" } else { "" };
            let mut empty: Vec<K> = Vec::new();
            let mut none: Vec<u32> = Vec::new();
            let results = [
                (
                    "sort_rows",
                    if descending {
                        t.sorter
                            .sort_rows(&mut empty, row_len, bitonic::Order::Descending)
                    } else {
                        t.sorter
                            .sort_rows(&mut empty, row_len, bitonic::Order::Ascending)
                    },
                ),
                (
                    "sort_rows_by_key",
                    rows_by_key(&t.sorter, &mut empty, &mut none, row_len, descending),
                ),
            ];
            for (call, result) in results {
                if result.is_err() {
                    return Err(format!(
                        "{}: {call}{suffix} of no {} keys, row_len {row_len}: want Ok, got {result:?}",
                        t.label,
                        K::NAME
                    )
                    .into());
                }
            }
            let result = if descending {
                t.sorter
                    .argsort_rows(&empty, row_len, bitonic::Order::Descending)
            } else {
                t.sorter
                    .argsort_rows(&empty, row_len, bitonic::Order::Ascending)
            };
            if !matches!(&result, Ok(v) if v.is_empty()) {
                return Err(format!(
                    "{}: argsort_rows{suffix} of no {} keys, row_len {row_len}: want Ok([]), got \
                     {result:?}",
                    t.label,
                    K::NAME
                )
                .into());
            }
        }
    }
    Ok(())
}

pub(super) fn check_segment_errors<K: DerivedKey>(t: &Target) -> Result<(), Failed> {
    for n in [0usize, 1, 10, 1000] {
        let seed = input_seed(t.seed, "errors::segments", n);
        let input: Vec<K> = Keys::RANDOM.keys(n, &mut rng_for(seed));
        let bad: Vec<Vec<usize>> = vec![
            vec![n + 1],
            vec![0, n + 1],
            vec![0, n / 2, n + 7],
            vec![n, n + 1],
            vec![n / 2 + 1, n / 2],
            vec![2, 1, n],
            vec![0, n / 2 + 1, n / 2, n],
            vec![1, 0],
        ];
        for offsets in bad {
            for descending in [false, true] {
                let suffix = if descending { "_descending" } else { "" };
                let mut data = input.clone();
                let result = if descending {
                    t.sorter
                        .sort_segments(&mut data, &offsets, bitonic::Order::Descending)
                } else {
                    t.sorter
                        .sort_segments(&mut data, &offsets, bitonic::Order::Ascending)
                };
                let call = format!(
                    "{}: sort_segments{suffix} of {n} {} keys with offsets {offsets:?}",
                    t.label,
                    K::NAME
                );
                want_invalid(&call, &result, &data, &input)?;
            }
        }
    }
    Ok(())
}

pub(super) fn check_length_errors(t: &Target) -> Result<(), Failed> {
    for (n_keys, n_values) in [(10, 9), (0, 1), (1, 0), (1000, 1001)] {
        for descending in [false, true] {
            let keys_in: Vec<u32> = (0..n_keys as u32).rev().collect();
            let values_in: Vec<(u32, u16)> = (0..n_values).map(|i| (i as u32, 7)).collect();
            let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
            let result = if descending {
                t.sorter
                    .sort_by_key_stable(&mut keys, &mut values, bitonic::Order::Descending)
            } else {
                t.sorter
                    .sort_by_key_stable(&mut keys, &mut values, bitonic::Order::Ascending)
            };
            let call = format!(
                "{}: sort_by_key_stable{} with {n_keys} keys and {n_values} values",
                t.label,
                if descending { "_descending" } else { "" }
            );
            if !matches!(result, Err(Error::LengthMismatch { keys, values }) if keys == n_keys && values == n_values)
            {
                return Err(format!("{call}: want Err(LengthMismatch), got {result:?}").into());
            }
            if keys != keys_in || values != values_in {
                return Err(format!("{call}: the call failed but changed the slices").into());
            }

            let (mut keys, mut values) = (keys_in.clone(), vec![0u32; n_values]);
            let result = rows_by_key(&t.sorter, &mut keys, &mut values, 1, descending);
            if !matches!(result, Err(Error::LengthMismatch { .. })) || keys != keys_in {
                return Err(format!(
                    "{}: sort_rows_by_key with {n_keys} keys and {n_values} values, row_len 1: \
                     want Err(LengthMismatch) and the slices unchanged, got {result:?}",
                    t.label
                )
                .into());
            }
        }
    }
    // Empty inputs: nothing to do, no error.
    let empty: [f32; 0] = [];
    for (call, result) in [
        (
            "argsort",
            t.sorter.argsort(&empty, bitonic::Order::Ascending),
        ),
        (
            "argsort_descending",
            t.sorter.argsort(&empty, bitonic::Order::Descending),
        ),
    ] {
        if !matches!(&result, Ok(v) if v.is_empty()) {
            return Err(format!(
                "{}: {call} of no keys: want Ok([]), got {result:?}",
                t.label
            )
            .into());
        }
    }
    Ok(())
}

pub(super) fn run_rows_errors(t: &Target) -> Result<(), Failed> {
    check_rows_errors::<u32>(t)?;
    check_rows_errors::<f32>(t)?;
    check_rows_errors::<i64>(t)?;
    check_rows_errors::<u8>(t)
}

pub(super) fn run_other_errors(t: &Target) -> Result<(), Failed> {
    check_segment_errors::<u32>(t)?;
    check_segment_errors::<f64>(t)?;
    check_segment_errors::<u8>(t)?;
    check_length_errors(t)
}
