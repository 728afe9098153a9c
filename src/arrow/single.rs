//! One column: its sort indices, and its sorted values.
//!
//! The valid values are gathered once from the values buffer (no copy at all when the array
//! has no nulls) and sorted by one call of the sorter; the nulls, which arrow-ord keeps in
//! their input order whatever the direction, are placed before or after them on the host.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, ScalarBuffer};
use arrow_schema::SortOptions;

use super::types::for_key_type;
use super::types::{check_rows, primitive, unsupported};
use crate::error::Result;
use crate::keys::{Order, SortKey};
use crate::sorter::Sorter;

/// The sorter's order for arrow's `descending`.
pub(super) fn order_of(options: SortOptions) -> Order {
    if options.descending {
        Order::Descending
    } else {
        Order::Ascending
    }
}

/// The null buffer of `array` when it holds at least one null: a buffer of valid bits
/// alone is the same as none.
pub(super) fn nulls_of(array: &dyn Array) -> Option<&NullBuffer> {
    array.nulls().filter(|n| n.null_count() > 0)
}

/// The positions of the valid and of the null rows, each in input order.
pub(super) fn partition(nulls: &NullBuffer) -> (Vec<u32>, Vec<u32>) {
    let mut valid = Vec::with_capacity(nulls.len() - nulls.null_count());
    let mut null = Vec::with_capacity(nulls.null_count());
    for (i, is_valid) in nulls.iter().enumerate() {
        if is_valid {
            valid.push(i as u32);
        } else {
            null.push(i as u32);
        }
    }
    (valid, null)
}

/// The first `limit` entries of `first` followed by `second`, gathered through `map`.
fn concat_limited(
    first: impl ExactSizeIterator<Item = u32>,
    second: impl ExactSizeIterator<Item = u32>,
    limit: usize,
) -> Vec<u32> {
    let len = (first.len() + second.len()).min(limit);
    let mut out = Vec::with_capacity(len);
    out.extend(first.take(len));
    let rest = len - out.len();
    out.extend(second.take(rest));
    out
}

/// Places the nulls (in input order) before or after `sorted_valid`, keeping `limit` rows.
pub(super) fn place_nulls(
    sorted_valid: impl ExactSizeIterator<Item = u32>,
    nulls: &[u32],
    nulls_first: bool,
    limit: usize,
) -> Vec<u32> {
    if nulls_first {
        concat_limited(nulls.iter().copied(), sorted_valid, limit)
    } else {
        concat_limited(sorted_valid, nulls.iter().copied(), limit)
    }
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
    let keys: Vec<K> = valid.iter().map(|&i| values[i as usize]).collect();
    let by_key = sorter.argsort(&keys, order)?;
    let sorted = by_key.iter().map(|&p| valid[p as usize]);
    Ok(place_nulls(sorted, &null, options.nulls_first, limit))
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
        keys = nulls.valid_indices().map(|i| array.values()[i]).collect();
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
fn take_typed<T: ArrowPrimitiveType>(array: &PrimitiveArray<T>, indices: &[u32]) -> ArrayRef {
    let source = array.values();
    let values: Vec<T::Native> = indices.iter().map(|&i| source[i as usize]).collect();
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
