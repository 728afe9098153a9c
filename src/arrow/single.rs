//! One column: its sort indices, and its sorted values.
//!
//! The valid rows are argsorted by one call of the sorter, whose keys and labels (the rows)
//! are written by one pass over the null bitmap, in blocks on rayon's threads, straight from
//! the values buffer (no list of valid rows, no gathered copy, no mapping of positions back
//! to rows). The same pass writes the null rows, which arrow-ord keeps in their input order
//! whatever the direction, into their places before or after the valid rows.

use std::convert::Infallible;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer, ScalarBuffer};
use arrow_schema::SortOptions;
use rayon::prelude::*;

use super::types::for_key_type;
use super::types::{check_rows, primitive, unsupported};
use crate::argsort::LabelledBlock;
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

/// Rows per block of the pass over a null bitmap: a few thousand blocks at 2^26 rows.
const BLOCK_ROWS: usize = 1 << 15;

/// The rows `start..start + bits.len()` of a column with validity `bits`. As a block of an
/// argsort it writes its valid rows' keys, labelled by their rows; as it does, it writes its
/// null rows into `nulls`, their places in the result: one pass over the bitmap finds both,
/// with no list of valid rows to read back.
struct RowsOf<'a, K> {
    /// The block's values.
    values: &'a [K],
    /// The block's first row.
    start: usize,
    bits: BooleanBuffer,
    valid: usize,
    nulls: &'a mut [u32],
}

impl<K: SortKey> LabelledBlock<K> for RowsOf<'_, K> {
    fn positions(&self) -> usize {
        self.valid
    }

    fn fill(self, mut emit: impl FnMut(K, u32)) {
        let mut nulls = self.nulls.iter_mut();
        let chunks = self.bits.bit_chunks();
        let words = chunks.iter().map(|word| (word, u64::MAX));
        let tail = (chunks.remainder_len() > 0).then(|| {
            (
                chunks.remainder_bits(),
                (1u64 << chunks.remainder_len()) - 1,
            )
        });
        for (w, (word, mask)) in words.chain(tail).enumerate() {
            let base = w * 64;
            let mut set = word & mask;
            while set != 0 {
                let at = base + set.trailing_zeros() as usize;
                emit(self.values[at], (self.start + at) as u32);
                set &= set - 1;
            }
            let mut unset = !word & mask;
            while unset != 0 {
                let at = base + unset.trailing_zeros() as usize;
                if let Some(slot) = nulls.next() {
                    *slot = (self.start + at) as u32;
                }
                unset &= unset - 1;
            }
        }
    }
}

/// The blocks of the column `values` with validity `nulls` ([`RowsOf`]), the null rows'
/// places in the result being `nulls_at` (as many as the nulls, in input order). The
/// blocks' valid rows are counted on rayon's threads when there are several blocks.
fn blocks_of<'a, K: SortKey>(
    values: &'a [K],
    nulls: &NullBuffer,
    mut nulls_at: &'a mut [u32],
) -> Vec<RowsOf<'a, K>> {
    let n = values.len();
    let block = |b: usize| {
        let start = b * BLOCK_ROWS;
        let len = BLOCK_ROWS.min(n - start);
        let bits = nulls.inner().slice(start, len);
        let valid = bits.count_set_bits();
        (start, len, bits, valid)
    };
    let blocks = n.div_ceil(BLOCK_ROWS);
    let counted: Vec<_> = if blocks < 2 {
        (0..blocks).map(block).collect()
    } else {
        (0..blocks).into_par_iter().map(block).collect()
    };
    counted
        .into_iter()
        .map(|(start, len, bits, valid)| {
            let (here, rest) = std::mem::take(&mut nulls_at).split_at_mut(len - valid);
            nulls_at = rest;
            RowsOf {
                values: &values[start..start + len],
                start,
                bits,
                valid,
                nulls: here,
            }
        })
        .collect()
}

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
pub(super) fn indices_of<K: SortKey>(
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
    debug_assert_eq!(nulls.len(), values.len(), "one validity bit a row");
    let null_count = nulls.null_count();
    // With nulls first and at most as many rows kept as there are nulls, no valid row is.
    if options.nulls_first && limit <= null_count {
        return Ok((!nulls.inner()).set_indices_u32().take(limit).collect());
    }
    let valid = values.len() - null_count;
    // Zeroed pages from the allocator: the blocks' threads touch them first.
    let mut out = vec![0u32; values.len()];
    let (valid_at, nulls_at) = if options.nulls_first {
        let (nulls_at, valid_at) = out.split_at_mut(null_count);
        (valid_at, nulls_at)
    } else {
        out.split_at_mut(valid)
    };
    // The labels are the rows, increasing, so ordering equal keys by label is the stable
    // order. The valid rows are sorted into their place in the result and the nulls written
    // into theirs as the blocks are filled, so that no copy follows.
    let blocks = blocks_of(values, nulls, nulls_at);
    sorter.argsort_blocks_into(blocks, values, order, valid_at)?;
    out.truncate(limit);
    Ok(out)
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

    /// The sort indices of `keys` (`None` for a null) as arrow-ord orders them, ties by row:
    /// a stable sort of the valid rows, the nulls in input order before or after them.
    fn model<K: Copy>(
        keys: &[Option<K>],
        cmp: impl Fn(&K, &K) -> std::cmp::Ordering,
        options: SortOptions,
        limit: usize,
    ) -> Vec<u32> {
        let rows = |valid: bool| {
            (0..keys.len() as u32).filter(move |&r| keys[r as usize].is_some() == valid)
        };
        let mut valid: Vec<u32> = rows(true).collect();
        valid.sort_by(|&a, &b| {
            let o = cmp(&keys[a as usize].unwrap(), &keys[b as usize].unwrap());
            if options.descending { o.reverse() } else { o }
        });
        let null = rows(false);
        let mut all: Vec<u32> = if options.nulls_first {
            null.chain(valid).collect()
        } else {
            valid.into_iter().chain(null).collect()
        };
        all.truncate(limit);
        all
    }

    /// Validity of `n` rows in one of several shapes: random (one row in ten null), all
    /// valid, all null, nulls only at both ends, nulls at the rows either side of each
    /// block's edge.
    fn validity(n: usize, shape: usize, x: &mut u64) -> Vec<bool> {
        (0..n)
            .map(|i| match shape {
                0 => {
                    *x ^= *x << 13;
                    *x ^= *x >> 7;
                    *x ^= *x << 17;
                    !x.is_multiple_of(10)
                }
                1 => true,
                2 => false,
                3 => i != 0 && i + 1 != n,
                _ => !matches!(i % BLOCK_ROWS, 0 | 1) && (i + 1) % BLOCK_ROWS != 0,
            })
            .collect()
    }

    /// Asserts that [`indices_of`] equals [`model`] for the keys `values` with validity
    /// `nulls`.
    fn check<K: SortKey>(
        sorter: &Sorter,
        values: &[K],
        nulls: &NullBuffer,
        cmp: impl Fn(&K, &K) -> std::cmp::Ordering,
        options: SortOptions,
        limit: usize,
        case: &str,
    ) {
        let keys: Vec<Option<K>> = (0..values.len())
            .map(|i| nulls.is_valid(i).then_some(values[i]))
            .collect();
        let got = indices_of(sorter, values, Some(nulls), options, limit).expect(case);
        assert!(got == model(&keys, cmp, options, limit), "{case}");
    }

    #[test]
    fn indices_equal_the_model_across_blocks() {
        // Lengths on both sides of one block, two and several; a bitmap sliced at a bit
        // offset or not; keys of 8 bytes (on the host the route of tied prefixes, on a
        // device the pairs sort) and of 4 (one sort of key and label), few distinct so that
        // ties are many; both directions and null placements; on the host, limits inside the
        // nulls, at the cut between nulls and valid rows, and whole.
        let cpu = Sorter::builder()
            .backend(crate::BackendKind::Cpu)
            .build()
            .expect("a CPU sorter");
        // An OpenCL device where one is found (PoCL on the host), every sort on it.
        #[cfg(feature = "opencl")]
        let device = Sorter::builder()
            .backend(crate::BackendKind::OpenCl)
            .host_threshold(0)
            .build()
            .ok();
        #[cfg(not(feature = "opencl"))]
        let device: Option<Sorter> = None;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in [
            1,
            2,
            BLOCK_ROWS - 1,
            BLOCK_ROWS,
            BLOCK_ROWS + 1,
            2 * BLOCK_ROWS + 1,
            3 * BLOCK_ROWS + 7,
        ] {
            for offset in [0, 3] {
                let len = n + offset;
                let wide: Vec<f64> = (0..len).map(|i| ((i * 7919) % 97) as f64 - 48.5).collect();
                let narrow: Vec<i32> = (0..len).map(|i| ((i * 7919) % 89) as i32 - 44).collect();
                let (wide, narrow) = (&wide[offset..], &narrow[offset..]);
                for shape in 0..5 {
                    let mut bits = vec![true; offset];
                    bits.extend(validity(n, shape, &mut x));
                    let nulls = NullBuffer::new(BooleanBuffer::from(bits)).slice(offset, n);
                    let null_count = nulls.null_count();
                    for descending in [false, true] {
                        for nulls_first in [false, true] {
                            let options = SortOptions {
                                descending,
                                nulls_first,
                            };
                            for limit in [1, null_count.max(1), null_count + 1, n] {
                                let limit = limit.min(n);
                                let case = format!(
                                    "n {n} offset {offset} shape {shape} {options:?} limit {limit}"
                                );
                                check(&cpu, wide, &nulls, f64::total_cmp, options, limit, &case);
                                check(&cpu, narrow, &nulls, i32::cmp, options, limit, &case);
                            }
                            if let Some(device) = &device {
                                let case = format!("device n {n} offset {offset} shape {shape}");
                                check(device, wide, &nulls, f64::total_cmp, options, n, &case);
                            }
                        }
                    }
                }
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
