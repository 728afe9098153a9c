//! Range partitions of arrow columns: a sample of a column's ordered bits, and its rows grouped
//! by range, for an engine that sorts each range of rows on its own and lays the sorted ranges
//! end to end (the range sort of `bitonic-datafusion`). The splitters and ranges are
//! [`crate::partition`]'s; this adds what an arrow column brings: its types, its nulls and its
//! [`SortOptions`].

use arrow_array::{Array, UInt32Array};
use rayon::prelude::*;

use super::SortOptions;
use super::single::{nulls_of, order_of};
use super::types::{check_rows, for_key_type, primitive, unsupported};
use crate::error::Result;
use crate::keys::SortKey;
use crate::partition::{Splitters, sample_positions};

/// The ordered bits ([`crate::partition::ordered_bits`]) of the valid values of `values`, in
/// the order `options` gives, at up to `count` rows drawn from a generator seeded by `seed`,
/// sorted ascending; every valid value's bits when `count >= values.len()`. Null rows drawn
/// are left out: nulls go to the first or the last range ([`range_rows`]), not between
/// splitters. Samples of several arrays (the batches of a table) pooled and sorted choose
/// the splitters of the whole ([`Splitters::from_sorted_sample`]).
///
/// ```
/// use arrow_array::Int32Array;
/// use bitonic::arrow::{SortOptions, sample_bits};
///
/// let values = Int32Array::from(vec![Some(3), None, Some(-1)]);
/// let sample = sample_bits(&values, 8, SortOptions::default(), 0)?;
/// assert_eq!(sample.len(), 2);
/// assert!(sample[0] < sample[1]);
/// # Ok::<(), bitonic::Error>(())
/// ```
///
/// Errors: [`crate::Error::Unsupported`] for an array of a type not sorted here.
pub fn sample_bits(
    values: &dyn Array,
    count: usize,
    options: SortOptions,
    seed: u64,
) -> Result<Vec<u64>> {
    let descending = order_of(options).is_descending();
    for_key_type!(values.data_type(), T => {
        let typed = primitive::<T>(values)?;
        let keys = typed.values();
        let nulls = nulls_of(values);
        let mut bits: Vec<u64> = sample_positions(keys.len(), count, seed)
            .into_par_iter()
            .filter(|&row| nulls.is_none_or(|n| n.is_valid(row)))
            .map(|row| keys[row].ordered_bits(descending))
            .collect();
        bits.par_sort_unstable();
        Ok(bits)
    }, other => Err(unsupported(other)))
}

/// The rows of one array grouped by range: range `r`'s rows, in their input order, are
/// `indices()[offsets()[r]..offsets()[r + 1]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeRows {
    offsets: Vec<usize>,
    indices: UInt32Array,
}

impl RangeRows {
    /// Where each range's rows lie in [`RangeRows::indices`]: `ranges + 1` ascending offsets,
    /// the first 0 and the last the array's length.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// The rows of every range, range by range, each range's in their input order: the
    /// indices that `arrow_select::take` gathers the ranges with, one after another.
    pub fn indices(&self) -> &UInt32Array {
        &self.indices
    }

    /// Rows of range `r`; 0 past the last range.
    pub fn len_of(&self, r: usize) -> usize {
        match (self.offsets.get(r), self.offsets.get(r + 1)) {
            (Some(from), Some(to)) => to - from,
            _ => 0,
        }
    }
}

/// The range of every row of `values` under `splitters` (chosen in the order `options`
/// gives, [`sample_bits`]), its rows grouped by range: a valid row's range is
/// [`Splitters::range_of_bits`] of its ordered bits, and null rows go to the first range
/// (`nulls_first`) or the last, where the sort of that range puts them before or after its
/// values. So every row of range `r` comes before every row of range `r + 1` in the order
/// `options` gives, and the rows of equal values share a range.
///
/// ```
/// use arrow_array::{Int32Array, UInt32Array};
/// use bitonic::arrow::{SortOptions, range_rows};
/// use bitonic::partition::{Splitters, ordered_bits};
/// use bitonic::Order;
///
/// let values = Int32Array::from(vec![Some(9), None, Some(2), Some(5), Some(1)]);
/// // One splitter, 5: ranges below 5, equal to 5, above 5.
/// let splitters = Splitters::from_bits(vec![ordered_bits(5i32, Order::Ascending)])?;
/// let ranges = range_rows(&values, &splitters, SortOptions::default())?;
/// assert_eq!(ranges.offsets(), &[0, 3, 4, 5]);
/// assert_eq!(ranges.indices(), &UInt32Array::from(vec![1, 2, 4, 3, 0]));
/// # Ok::<(), bitonic::Error>(())
/// ```
///
/// Errors: [`crate::Error::Unsupported`] for an array of a type not sorted here or of more
/// than [`super::MAX_ROWS`] rows.
pub fn range_rows(
    values: &dyn Array,
    splitters: &Splitters,
    options: SortOptions,
) -> Result<RangeRows> {
    check_rows(values.len(), "a range partition")?;
    let descending = order_of(options).is_descending();
    let null_range = if options.nulls_first {
        0
    } else {
        splitters.ranges() - 1
    };
    let ranges: Vec<u32> = for_key_type!(values.data_type(), T => {
        let typed = primitive::<T>(values)?;
        let keys = typed.values();
        let nulls = nulls_of(values);
        (0..keys.len())
            .into_par_iter()
            .with_min_len(1 << 14)
            .map(|row| {
                let range = if nulls.is_some_and(|n| n.is_null(row)) {
                    null_range
                } else {
                    splitters.range_of_bits(keys[row].ordered_bits(descending))
                };
                range as u32
            })
            .collect()
    }, other => return Err(unsupported(other)));
    Ok(group_by_range(&ranges, splitters.ranges()))
}

/// The rows `0..ranges.len()` grouped by their range (`ranges[row]`, below `count`),
/// stably: a counting sort.
fn group_by_range(ranges: &[u32], count: usize) -> RangeRows {
    let mut offsets = vec![0usize; count + 1];
    for &r in ranges {
        offsets[r as usize + 1] += 1;
    }
    for r in 0..count {
        offsets[r + 1] += offsets[r];
    }
    let mut next = offsets.clone();
    let mut indices = vec![0u32; ranges.len()];
    for (row, &r) in ranges.iter().enumerate() {
        indices[next[r as usize]] = row as u32;
        next[r as usize] += 1;
    }
    RangeRows {
        offsets,
        indices: UInt32Array::from(indices),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, Int64Array, UInt8Array};

    use super::*;
    use crate::Order;
    use crate::partition::ordered_bits;

    /// Every row of range `r` sorts before every row of range `r + 1` (nulls where the
    /// options put them), no row is lost, and each range keeps its rows' input order.
    fn check(values: &ArrayRef, ranges: &RangeRows, options: SortOptions) {
        let sorted = crate::arrow::sort_to_indices(
            &crate::Sorter::builder()
                .backend(crate::BackendKind::Cpu)
                .build()
                .unwrap(),
            values.as_ref(),
            Some(options),
            None,
        )
        .unwrap();
        // A row's place in the sorted order, with equal values sharing the first place.
        let mut place = vec![0usize; values.len()];
        for (at, &row) in sorted.values().iter().enumerate() {
            place[row as usize] = at;
        }
        let mut all: Vec<u32> = ranges.indices().values().to_vec();
        all.sort_unstable();
        assert_eq!(all, (0..values.len() as u32).collect::<Vec<_>>());
        let offsets = ranges.offsets();
        for r in 0..offsets.len() - 1 {
            let rows = &ranges.indices().values()[offsets[r]..offsets[r + 1]];
            assert!(
                rows.windows(2).all(|w| w[0] < w[1]),
                "range {r} out of input order"
            );
            for next in r + 1..offsets.len() - 1 {
                let later = &ranges.indices().values()[offsets[next]..offsets[next + 1]];
                for &a in rows {
                    for &b in later {
                        // An equal pair would share a range; a later range sorts later.
                        assert!(
                            place[a as usize] < place[b as usize],
                            "row {a} of range {r} sorts after row {b} of range {next}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn ranges_of_nulls_nans_and_ties_sort_in_range_order() {
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(f64::NAN),
            None,
            Some(-0.0),
            Some(0.0),
            Some(2.5),
            Some(f64::NEG_INFINITY),
            Some(2.5),
            None,
            Some(-f64::NAN),
            Some(1.0),
            Some(2.5),
        ]));
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(i64::MIN),
            Some(3),
            None,
            Some(3),
            Some(i64::MAX),
            Some(-1),
            Some(3),
        ]));
        let bytes: ArrayRef = Arc::new(UInt8Array::from(vec![7u8; 40]));
        for values in [floats, ints, bytes] {
            for descending in [false, true] {
                for nulls_first in [false, true] {
                    let options = SortOptions {
                        descending,
                        nulls_first,
                    };
                    for ranges in [1, 2, 3, 5] {
                        let sample = sample_bits(values.as_ref(), 64, options, 7).unwrap();
                        assert_eq!(sample.len(), values.len() - values.null_count());
                        let splitters = Splitters::from_sorted_sample(&sample, ranges);
                        let grouped = range_rows(values.as_ref(), &splitters, options).unwrap();
                        assert_eq!(grouped.offsets().len(), splitters.ranges() + 1);
                        check(&values, &grouped, options);
                    }
                }
            }
        }
    }

    #[test]
    fn a_sample_of_fewer_rows_draws_only_valid_ones_and_unsupported_types_are_refused() {
        let values = Int64Array::from(
            (0..1000)
                .map(|i| (i % 3 != 0).then_some(i))
                .collect::<Vec<_>>(),
        );
        let options = SortOptions::default();
        let sample = sample_bits(&values, 100, options, 1).unwrap();
        assert!(!sample.is_empty() && sample.len() <= 100);
        assert!(sample.is_sorted());
        let valid: Vec<u64> = (0..1000i64)
            .filter(|i| i % 3 != 0)
            .map(|i| ordered_bits(i, Order::Ascending))
            .collect();
        assert!(sample.iter().all(|b| valid.binary_search(b).is_ok()));
        let strings = arrow_array::StringArray::from(vec!["a"]);
        assert!(sample_bits(&strings, 4, options, 0).is_err());
        assert!(range_rows(&strings, &Splitters::from_bits(vec![]).unwrap(), options).is_err());
    }
}
