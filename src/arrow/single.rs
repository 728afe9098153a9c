//! One column: its sort indices, and its sorted values.
//!
//! The valid rows are argsorted by one call of the sorter, which reads their values where
//! they lie in the values buffer and labels them with their rows (no gathered copy, and no
//! mapping of positions back to rows); the sorted values are gathered once. The nulls,
//! which arrow-ord keeps in their input order whatever the direction, are placed before or
//! after the valid rows on the host.

use std::convert::Infallible;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, ScalarBuffer};
use arrow_schema::SortOptions;
use rayon::prelude::*;

use super::types::for_key_type;
use super::types::{check_rows, primitive, unsupported};
use crate::error::Result;
use crate::keys::{Order, SortKey};
use crate::sorter::Sorter;

/// The sorter's order for arrow's `descending`.
pub(super) fn order_of(options: SortOptions) -> Order {
    Order::from_descending(options.descending)
}

/// The null buffer of `array` when it holds at least one null: a buffer of valid bits
/// alone is the same as none.
pub(super) fn nulls_of(array: &dyn Array) -> Option<&NullBuffer> {
    array.nulls().filter(|n| n.null_count() > 0)
}

/// The positions of the valid and of the null rows, each in input order. Many rows are
/// split into blocks: each block's valid rows are counted, then each block writes its
/// positions into its own part of the two lists, on rayon's threads.
pub(super) fn partition(nulls: &NullBuffer) -> (Vec<u32>, Vec<u32>) {
    let bits = nulls.inner();
    let n = bits.len();
    if n < PARALLEL_FROM {
        let valid = bits.set_indices_u32().collect();
        let null = (!bits).set_indices_u32().collect();
        return (valid, null);
    }
    let block = |b: usize| {
        let start = b * PARTITION_BLOCK;
        (start, bits.slice(start, PARTITION_BLOCK.min(n - start)))
    };
    let blocks = n.div_ceil(PARTITION_BLOCK);
    let ones: Vec<usize> = (0..blocks)
        .into_par_iter()
        .map(|b| block(b).1.count_set_bits())
        .collect();
    let valid_len: usize = ones.iter().sum();
    let mut valid = vec![0u32; valid_len];
    let mut null = vec![0u32; n - valid_len];
    let (mut valid_rest, mut null_rest) = (&mut valid[..], &mut null[..]);
    let mut parts = Vec::with_capacity(blocks);
    for (b, &set) in ones.iter().enumerate() {
        let unset = block(b).1.len() - set;
        let (v, rest) = std::mem::take(&mut valid_rest).split_at_mut(set);
        valid_rest = rest;
        let (z, rest) = std::mem::take(&mut null_rest).split_at_mut(unset);
        null_rest = rest;
        parts.push((b, v, z));
    }
    parts.into_par_iter().for_each(|(b, v, z)| {
        let (start, bits) = block(b);
        for (out, i) in v.iter_mut().zip(bits.set_indices()) {
            *out = (start + i) as u32;
        }
        for (out, i) in z.iter_mut().zip((!&bits).set_indices()) {
            *out = (start + i) as u32;
        }
    });
    (valid, null)
}

/// Rows per block of [`partition`]: a few thousand blocks at 2^26 rows.
const PARTITION_BLOCK: usize = 1 << 15;

/// Below this many rows the gathers here stay on the calling thread: waking rayon's threads
/// costs more than the loop.
const PARALLEL_FROM: usize = 1 << 14;

/// `source[rows[0]], source[rows[1]], ...` into `out` (as long as `rows`), on rayon's
/// threads for many rows.
fn gather_into<T: Copy + Send + Sync>(out: &mut [T], source: &[T], rows: &[u32]) {
    let one = |(o, &row): (&mut T, &u32)| *o = source[row as usize];
    if rows.len() < PARALLEL_FROM {
        out.iter_mut().zip(rows).for_each(one);
    } else {
        out.par_iter_mut().zip(rows.par_iter()).for_each(one);
    }
}

/// [`gather_into`] a new vector.
pub(super) fn gather<T: bytemuck::Pod + Send + Sync>(source: &[T], rows: &[u32]) -> Vec<T> {
    // Zeroed pages from the allocator: the gather touches them first.
    let mut out = bytemuck::zeroed_vec(rows.len());
    gather_into(&mut out, source, rows);
    out
}

/// The result of `valid` valid rows and the null rows `nulls` (in the order given) before or
/// after them, the first `limit` rows kept: `fill_valid` writes the valid rows in sorted
/// order into the part of the result it is given (`valid` long; what lies past the limit
/// may be left), and the nulls are copied beside it. One list, filled in place, so that no
/// copy follows and its pages are first touched by the threads that fill them.
fn beside_nulls<E>(
    valid: usize,
    nulls: &[u32],
    nulls_first: bool,
    limit: usize,
    fill_valid: impl FnOnce(&mut [u32]) -> std::result::Result<(), E>,
) -> std::result::Result<Vec<u32>, E> {
    let mut out = vec![0u32; valid + nulls.len()];
    let (valid_at, nulls_at) = if nulls_first {
        let (nulls_at, valid_at) = out.split_at_mut(nulls.len());
        (valid_at, nulls_at)
    } else {
        out.split_at_mut(valid)
    };
    fill_valid(valid_at)?;
    // Only the nulls that land before the limit.
    let kept = if nulls_first {
        limit
    } else {
        limit.saturating_sub(valid)
    }
    .min(nulls.len());
    let (to, from) = (&mut nulls_at[..kept], &nulls[..kept]);
    if kept < PARALLEL_FROM {
        to.copy_from_slice(from);
    } else {
        to.par_chunks_mut(PARALLEL_FROM)
            .zip(from.par_chunks(PARALLEL_FROM))
            .for_each(|(to, from)| to.copy_from_slice(from));
    }
    out.truncate(limit);
    Ok(out)
}

/// The rows `valid[by_key[0]], valid[by_key[1]], ...` (the valid rows in sorted order) with
/// the null rows `nulls` (in the order given) before or after them, the first `limit` rows
/// kept ([`beside_nulls`], gathering only the valid rows that can be kept).
pub(super) fn place_nulls(
    valid: &[u32],
    by_key: &[u32],
    nulls: &[u32],
    nulls_first: bool,
    limit: usize,
) -> Vec<u32> {
    let room = if nulls_first {
        limit.saturating_sub(nulls.len())
    } else {
        limit
    };
    let kept = &by_key[..room.min(by_key.len())];
    let placed = beside_nulls(by_key.len(), nulls, nulls_first, limit, |valid_at| {
        gather_into(&mut valid_at[..kept.len()], valid, kept);
        Ok::<(), Infallible>(())
    });
    placed.unwrap_or_else(|never| match never {})
}

/// The sort indices of the keys `values` with validity `nulls`: one stable argsort of the
/// valid keys, nulls placed as `options` says, the first `limit` rows kept.
fn indices_of<K: SortKey>(
    sorter: &Sorter,
    values: &[K],
    nulls: Option<&NullBuffer>,
    options: SortOptions,
    limit: usize,
) -> Result<Vec<u32>> {
    let order = order_of(options);
    let Some(nulls) = nulls else {
        let mut indices = sorter.argsort(values, order)?;
        indices.truncate(limit);
        return Ok(indices);
    };
    let (valid, null) = partition(nulls);
    // With nulls first and at most as many rows kept as there are nulls, no valid row is.
    if options.nulls_first && limit <= null.len() {
        return Ok(null[..limit].to_vec());
    }
    // The valid rows increase, so ordering equal keys by row is the stable order. They are
    // sorted into their place in the result, beside the nulls, so that no copy follows.
    beside_nulls(valid.len(), &null, options.nulls_first, limit, |sorted| {
        sorter.argsort_of_rows_into(values, &valid, order, sorted)
    })
}

/// The sort indices of `array` (see [`super::sort_to_indices`]).
pub(super) fn sort_to_indices(
    sorter: &Sorter,
    array: &dyn Array,
    options: SortOptions,
    limit: Option<usize>,
) -> Result<Vec<u32>> {
    check_rows(array.len(), "a sort")?;
    let limit = limit.unwrap_or(usize::MAX).min(array.len());
    for_key_type!(array.data_type(), T => {
        let typed = primitive::<T>(array)?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        indices_of(sorter, typed.values(), nulls_of(array), options, limit)
    }, other => Err(unsupported(other)))
}

/// The first `limit` values of `array` in sorted order, as an array of its data type whose
/// null rows (zeros in the values buffer) come first or last as `options` says.
fn sorted_values<T>(
    sorter: &Sorter,
    array: &PrimitiveArray<T>,
    options: SortOptions,
    limit: usize,
) -> Result<ArrayRef>
where
    T: ArrowPrimitiveType,
    T::Native: SortKey,
{
    let order = order_of(options);
    let rebuild = |values: Vec<T::Native>, nulls: Option<NullBuffer>| -> ArrayRef {
        Arc::new(
            PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls)
                .with_data_type(array.data_type().clone()),
        )
    };
    if limit == 0 {
        return Ok(rebuild(Vec::new(), None));
    }
    let Some(nulls) = nulls_of(array) else {
        let mut keys = array.values().to_vec();
        sorter.sort(&mut keys, order)?;
        keys.truncate(limit);
        return Ok(rebuild(keys, None));
    };
    // Equal keys of a sort are equal bit for bit (floats compare by `total_cmp`), so sorting
    // the values themselves gives exactly what sorting their indices would.
    let null_count = nulls.null_count();
    let mut keys: Vec<T::Native> = Vec::new();
    // With nulls first and at most as many rows kept as there are nulls, no valid row is.
    if !options.nulls_first || limit > null_count {
        let valid: Vec<u32> = nulls.inner().set_indices_u32().collect();
        keys = gather(array.values(), &valid);
        sorter.sort(&mut keys, order)?;
    }
    let valid_count = keys.len();
    let zero = T::Native::default();
    let mut values = Vec::with_capacity(limit);
    let mut validity = BooleanBufferBuilder::new(limit);
    if options.nulls_first {
        let leading = null_count.min(limit);
        values.resize(leading, zero);
        validity.append_n(leading, false);
        let rest = (limit - leading).min(valid_count);
        values.extend_from_slice(&keys[..rest]);
        validity.append_n(rest, true);
    } else {
        let leading = valid_count.min(limit);
        values.extend_from_slice(&keys[..leading]);
        validity.append_n(leading, true);
        let rest = (limit - leading).min(null_count);
        values.resize(leading + rest, zero);
        validity.append_n(rest, false);
    }
    let nulls = NullBuffer::new(validity.finish());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    Ok(rebuild(values, nulls))
}

/// The sorted values of `array`, the first `limit` of them (see [`super::sort_limit`]).
pub(super) fn sort_limit(
    sorter: &Sorter,
    array: &dyn Array,
    options: SortOptions,
    limit: Option<usize>,
) -> Result<ArrayRef> {
    check_rows(array.len(), "a sort")?;
    let limit = limit.unwrap_or(usize::MAX).min(array.len());
    for_key_type!(array.data_type(), T => {
        sorted_values(sorter, primitive::<T>(array)?, options, limit)
    }, other => Err(unsupported(other)))
}

/// The rows `indices` of `array`, in that order, nulls included (arrow's `take` for the
/// types sorted here). The caller guarantees every index is in bounds.
fn take_typed<T>(array: &PrimitiveArray<T>, indices: &[u32]) -> ArrayRef
where
    T: ArrowPrimitiveType,
    T::Native: SortKey,
{
    let values = gather(array.values(), indices);
    let nulls = nulls_of(array)
        .map(|nulls| NullBuffer::from_iter(indices.iter().map(|&i| nulls.is_valid(i as usize))));
    let nulls = nulls.filter(|n| n.null_count() > 0);
    Arc::new(
        PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls)
            .with_data_type(array.data_type().clone()),
    )
}

/// [`take_typed`] for any array of a type sorted here.
pub(super) fn take(array: &dyn Array, indices: &[u32]) -> Result<ArrayRef> {
    for_key_type!(array.data_type(), T => {
        Ok(take_typed(primitive::<T>(array)?, indices))
    }, other => Err(unsupported(other)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_buffer::BooleanBuffer;

    /// The positions of the set and the unset bits, one by one.
    fn model(bits: &[bool]) -> (Vec<u32>, Vec<u32>) {
        let pick = |want: bool| {
            (0..bits.len() as u32)
                .filter(|&i| bits[i as usize] == want)
                .collect()
        };
        (pick(true), pick(false))
    }

    #[test]
    fn partition_in_blocks_equals_the_model() {
        // Lengths on both sides of the parallel switch and of the blocks' edges; validity
        // random, all valid, all null, and one null at a block's last row.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in [
            PARALLEL_FROM - 1,
            PARALLEL_FROM,
            PARTITION_BLOCK - 1,
            PARTITION_BLOCK,
            PARTITION_BLOCK + 1,
            3 * PARTITION_BLOCK + 7,
        ] {
            for shape in 0..4 {
                let bits: Vec<bool> = (0..n)
                    .map(|i| match shape {
                        0 => {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            !x.is_multiple_of(3)
                        }
                        1 => true,
                        2 => false,
                        _ => i != PARTITION_BLOCK - 1,
                    })
                    .collect();
                let nulls = NullBuffer::new(BooleanBuffer::from(bits.clone()));
                assert_eq!(partition(&nulls), model(&bits), "n {n}, shape {shape}");
            }
        }
    }

    #[test]
    fn place_nulls_puts_them_first_or_last_and_cuts_at_the_limit() {
        let valid = [10u32, 11, 12];
        let by_key = [2u32, 0, 1];
        let nulls = [5u32, 7];
        assert_eq!(
            place_nulls(&valid, &by_key, &nulls, true, 9),
            [5, 7, 12, 10, 11]
        );
        assert_eq!(
            place_nulls(&valid, &by_key, &nulls, false, 9),
            [12, 10, 11, 5, 7]
        );
        assert_eq!(place_nulls(&valid, &by_key, &nulls, true, 3), [5, 7, 12]);
        assert_eq!(place_nulls(&valid, &by_key, &nulls, false, 1), [12]);
        assert!(place_nulls(&valid, &by_key, &nulls, true, 0).is_empty());
    }

    /// [`beside_nulls`] of the valid rows `sorted`, written whole.
    fn around_nulls(sorted: Vec<u32>, nulls: &[u32], nulls_first: bool, limit: usize) -> Vec<u32> {
        beside_nulls(sorted.len(), nulls, nulls_first, limit, |valid_at| {
            valid_at.copy_from_slice(&sorted);
            Ok::<(), Infallible>(())
        })
        .unwrap_or_else(|never| match never {})
    }

    #[test]
    fn around_nulls_puts_them_first_or_last_and_cuts_at_the_limit() {
        let sorted = vec![12u32, 10, 11];
        let nulls = [5u32, 7];
        assert_eq!(
            around_nulls(sorted.clone(), &nulls, true, 9),
            [5, 7, 12, 10, 11]
        );
        assert_eq!(
            around_nulls(sorted.clone(), &nulls, false, 9),
            [12, 10, 11, 5, 7]
        );
        assert_eq!(around_nulls(sorted.clone(), &nulls, true, 3), [5, 7, 12]);
        assert_eq!(
            around_nulls(sorted.clone(), &nulls, false, 4),
            [12, 10, 11, 5]
        );
        assert_eq!(around_nulls(sorted.clone(), &nulls, false, 1), [12]);
        assert!(around_nulls(sorted, &nulls, true, 0).is_empty());
    }
}
