//! Several columns: lexicographic sort indices by stable passes, least significant column
//! first.
//!
//! After the pass of column `j` the rows are in the order of columns `j..` (most significant
//! first), rows equal in all of them in input order: the pass orders the rows by column `j`
//! alone, stably, so rows equal in column `j` keep the order of the columns after it. The
//! first pass starts from the input order: it is the column's own sort indices. Each later
//! pass is one stable argsort of the column's valid keys, gathered in the current order,
//! with the column's nulls (equal to each other) placed before or after them in the current
//! order.

use arrow_array::Array;
use arrow_buffer::NullBuffer;
use arrow_schema::SortOptions;

use super::SortColumn;
use super::single::{gather, indices_of, nulls_of, order_of, place_nulls, sort_to_indices};
use super::types::for_key_type;
use super::types::{check_rows, check_supported, primitive, unsupported};
use crate::error::{Error, Result};
use crate::keys::SortKey;
use crate::sorter::Sorter;

/// One stable pass: the rows of `current` (or all rows in input order when it is `None`)
/// reordered by the column `values` with validity `nulls`.
fn pass<K: SortKey>(
    sorter: &Sorter,
    values: &[K],
    nulls: Option<&NullBuffer>,
    options: SortOptions,
    current: Option<&[u32]>,
) -> Result<Vec<u32>> {
    let order = order_of(options);
    match (nulls, current) {
        (None, None) => sorter.argsort(values, order),
        (None, Some(current)) => {
            let by_key = sorter.argsort(&gather(values, current), order)?;
            Ok(gather(current, &by_key))
        }
        // From the input order, the pass is the sort of the column alone.
        (Some(nulls), None) => indices_of(sorter, values, Some(nulls), options, values.len()),
        (Some(nulls), Some(current)) => {
            // The valid and the null rows, each in the current order.
            let (valid, null) = current
                .iter()
                .partition::<Vec<u32>, _>(|&&row| nulls.is_valid(row as usize));
            let by_key = sorter.argsort(&gather(values, &valid), order)?;
            Ok(place_nulls(
                &valid,
                &by_key,
                &null,
                options.nulls_first,
                values.len(),
            ))
        }
    }
}

/// [`pass`] for a column of any type sorted here.
fn column_pass(sorter: &Sorter, column: &SortColumn, current: Option<&[u32]>) -> Result<Vec<u32>> {
    let array = column.values.as_ref();
    let options = column.options.unwrap_or_default();
    for_key_type!(array.data_type(), T => {
        pass(sorter, primitive::<T>(array)?.values(), nulls_of(array), options, current)
    }, other => Err(unsupported(other)))
}

/// The lexicographic sort indices of `columns` (see [`super::lexsort_to_indices`]).
pub(super) fn lexsort_to_indices(
    sorter: &Sorter,
    columns: &[SortColumn],
    limit: Option<usize>,
) -> Result<Vec<u32>> {
    let Some(first) = columns.first() else {
        return Err(Error::InvalidConfig(
            "a lexicographic sort needs at least one column".to_string(),
        ));
    };
    for (i, column) in columns.iter().enumerate() {
        check_supported(column.values.data_type()).map_err(|e| match e {
            Error::Unsupported(what) => Error::Unsupported(format!("sort column {i}: {what}")),
            other => other,
        })?;
    }
    if columns.len() == 1 {
        let options = first.options.unwrap_or_default();
        return sort_to_indices(sorter, first.values.as_ref(), options, limit);
    }
    let rows = first.values.len();
    if let Some((i, column)) = columns
        .iter()
        .enumerate()
        .find(|(_, c)| c.values.len() != rows)
    {
        return Err(Error::InvalidConfig(format!(
            "the columns of a lexicographic sort must have as many rows each: column 0 has \
             {rows}, column {i} has {}",
            column.values.len()
        )));
    }
    check_rows(rows, "a lexicographic sort")?;
    let limit = limit.unwrap_or(usize::MAX).min(rows);
    if limit == 0 {
        return Ok(Vec::new());
    }
    let mut current: Option<Vec<u32>> = None;
    for column in columns.iter().rev() {
        current = Some(column_pass(sorter, column, current.as_deref())?);
    }
    let mut indices = current.unwrap_or_default();
    indices.truncate(limit);
    Ok(indices)
}
