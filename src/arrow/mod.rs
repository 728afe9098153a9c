//! Sorting [arrow-rs](https://docs.rs/arrow) arrays (cargo feature `arrow`): arrow-ord's
//! sort kernels with a [`Sorter`] as their first argument.
//!
//! [`sort_to_indices`], [`sort`], [`sort_limit`], [`lexsort_to_indices`] and [`lexsort`] take
//! what the functions of the same name in `arrow_ord::sort` take, arrow's own
//! [`SortOptions`] and [`SortColumn`] included, plus the sorter, and return what they return:
//! switching is a change of where the function comes from.
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{ArrayRef, Float64Array, Int32Array, UInt32Array};
//! use bitonic::arrow::{SortColumn, SortOptions};
//!
//! let sorter = bitonic::Sorter::new()?;
//! let prices = Float64Array::from(vec![Some(2.5), None, Some(-1.0), Some(f64::NAN), Some(2.5)]);
//!
//! // Nulls first, then ascending in `total_cmp` order (NaN last); equal values keep their
//! // input order.
//! let indices = bitonic::arrow::sort_to_indices(&sorter, &prices, None, None)?;
//! assert_eq!(indices, UInt32Array::from(vec![1, 2, 0, 4, 3]));
//!
//! // The two largest, nulls last.
//! let options = SortOptions { descending: true, nulls_first: false };
//! let top = bitonic::arrow::sort_limit(&sorter, &prices, Some(options), Some(2))?;
//! assert!(top.as_any().downcast_ref::<Float64Array>().unwrap().value(0).is_nan());
//!
//! // By store, then by price descending.
//! let stores: ArrayRef = Arc::new(Int32Array::from(vec![7, 3, 7, 3, 3]));
//! let columns = [
//!     SortColumn { values: stores, options: None },
//!     SortColumn { values: Arc::new(prices), options: Some(options) },
//! ];
//! let order = bitonic::arrow::lexsort_to_indices(&sorter, &columns, None)?;
//! assert_eq!(order, UInt32Array::from(vec![3, 4, 1, 0, 2]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Types
//!
//! Arrays of every primitive type whose values are keys of this crate: `Int8` .. `Int64`,
//! `UInt8` .. `UInt64`, `Float16`, `Float32`, `Float64`, `Date32`, `Date64`, `Time32` and
//! `Time64` (every unit), `Timestamp` (every unit, with or without a time zone) and
//! `Duration` (every unit). Any other type (strings, booleans, decimals, dictionaries,
//! nested types, ...) is [`Error::Unsupported`], with the type named, whatever the array's
//! length. At most [`MAX_ROWS`] rows (the indices are `u32`), [`Error::Unsupported`] beyond.
//!
//! # What comes out, compared with arrow-ord
//!
//! - Valid values are ordered as arrow-ord orders them: integers by value, floats by IEEE
//!   754 `totalOrder` ([`f32::total_cmp`]: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf <
//!   +NaN, NaNs by payload); `descending` is the exact reverse.
//! - Null rows come first or last as `nulls_first` says (independently of `descending`), in
//!   their input order, as in arrow-ord.
//! - Rows of equal values keep their input order, in both directions: the sort is stable.
//!   arrow-ord's kernels are unstable (`sort_unstable_by`), leaving the order of equal values
//!   unspecified; the stable order is one of the orders they allow, and the one they produce
//!   wherever no two valid values are equal. The sorted values ([`sort`], [`sort_limit`],
//!   [`lexsort`]) equal arrow-ord's bit for bit, since equal keys are equal bit for bit.
//! - `limit` keeps the first `limit` rows of the full result: nulls and ties are chosen as
//!   the full sort orders them (among values tied at the cut, those first in the input).
//! - [`lexsort_to_indices`] orders by the first column, then the second, ..., each with its
//!   own options; nulls compare equal to each other; rows equal in every column keep their
//!   input order.
//!
//! # How it runs
//!
//! One column takes one stable argsort of its valid values (as [`Sorter::argsort`] sorts),
//! read where they lie in the values buffer by one pass over the null bitmap, which also
//! writes the null rows into their places in the result on the host. [`sort`] and
//! [`sort_limit`] sort the values themselves ([`Sorter::sort`]).
//! [`lexsort_to_indices`] runs one such stable pass per column, the last column first.
//! Errors of the sorter are returned as they are; with `?` in a function returning
//! [`ArrowError`] they convert to [`ArrowError::ExternalError`].

mod lex;
mod ranges;
mod single;
mod types;

use arrow_array::{Array, ArrayRef, UInt32Array};
use arrow_schema::ArrowError;

use crate::error::{Error, Result};
use crate::sorter::Sorter;

pub use arrow_ord::sort::SortColumn;
pub use arrow_schema::SortOptions;
pub use ranges::{RangeRows, range_rows, sample_bits};
pub use types::MAX_ROWS;

/// Whether arrays of `data_type` are sorted here (the types the module documentation lists):
/// an engine that hands sorts over checks this while planning, and keeps its own sort for
/// any other type.
///
/// ```
/// use bitonic::arrow::is_supported;
/// use arrow_schema::DataType;
///
/// assert!(is_supported(&DataType::Float64));
/// assert!(!is_supported(&DataType::Utf8));
/// ```
pub fn is_supported(data_type: &arrow_schema::DataType) -> bool {
    types::is_supported(data_type)
}

/// The permutation that sorts `values`: `values[indices[0]]`, `values[indices[1]]`, ... are
/// in the order `options` asks for (`None`: ascending, nulls first), as
/// `arrow_ord::sort::sort_to_indices` computes it. With `Some(limit)`, only the first `limit`
/// indices of that permutation. Equal values keep their input order. The module
/// documentation says which types are sorted and how the result compares with arrow-ord's.
///
/// ```
/// use arrow_array::{Int64Array, UInt32Array};
/// use bitonic::arrow::SortOptions;
///
/// let sorter = bitonic::Sorter::new()?;
/// let values = Int64Array::from(vec![Some(3), None, Some(1), Some(3)]);
/// let options = SortOptions { descending: true, nulls_first: false };
/// let indices = bitonic::arrow::sort_to_indices(&sorter, &values, Some(options), None)?;
/// assert_eq!(indices, UInt32Array::from(vec![0, 3, 2, 1]));
/// # Ok::<(), bitonic::Error>(())
/// ```
///
/// Errors: [`Error::Unsupported`] for an array of a type not sorted here or of more than
/// [`MAX_ROWS`] rows; the sorter's errors.
pub fn sort_to_indices(
    sorter: &Sorter,
    values: &dyn Array,
    options: Option<SortOptions>,
    limit: Option<usize>,
) -> Result<UInt32Array> {
    let options = options.unwrap_or_default();
    single::sort_to_indices(sorter, values, options, limit).map(UInt32Array::from)
}

/// `values` sorted as `options` says (`None`: ascending, nulls first): an array of the same
/// data type (a timestamp's time zone included), equal to what `arrow_ord::sort::sort`
/// returns, its null rows grouped first or last.
///
/// ```
/// use arrow_array::{Array, Float32Array};
///
/// let sorter = bitonic::Sorter::new()?;
/// let values = Float32Array::from(vec![Some(0.0), Some(-0.0), None, Some(f32::NEG_INFINITY)]);
/// let sorted = bitonic::arrow::sort(&sorter, &values, None)?;
/// let sorted = sorted.as_any().downcast_ref::<Float32Array>().unwrap();
/// assert!(sorted.is_null(0));
/// assert_eq!(sorted.value(1), f32::NEG_INFINITY);
/// assert!(sorted.value(2).is_sign_negative() && sorted.value(3) == 0.0);
/// # Ok::<(), bitonic::Error>(())
/// ```
///
/// Errors: as [`sort_to_indices`].
pub fn sort(sorter: &Sorter, values: &dyn Array, options: Option<SortOptions>) -> Result<ArrayRef> {
    sort_limit(sorter, values, options, None)
}

/// The first `limit` values of [`sort`]'s result (all of them for `None`), as
/// `arrow_ord::sort::sort_limit` returns them: the `limit` smallest values, or the largest
/// when descending, after or before the nulls as `nulls_first` says.
///
/// Errors: as [`sort_to_indices`].
pub fn sort_limit(
    sorter: &Sorter,
    values: &dyn Array,
    options: Option<SortOptions>,
    limit: Option<usize>,
) -> Result<ArrayRef> {
    let options = options.unwrap_or_default();
    single::sort_limit(sorter, values, options, limit)
}

/// The permutation that sorts the rows of `columns` lexicographically, as
/// `arrow_ord::sort::lexsort_to_indices` computes it: by the first column in its options'
/// order, rows equal there by the second, and so on; rows equal in every column keep their
/// input order. With `Some(limit)`, the first `limit` indices only. One column is sorted as
/// [`sort_to_indices`] sorts it.
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{Int8Array, UInt16Array, UInt32Array};
/// use bitonic::arrow::{SortColumn, SortOptions};
///
/// let sorter = bitonic::Sorter::new()?;
/// let columns = [
///     SortColumn { values: Arc::new(Int8Array::from(vec![1, 0, 1, 0])), options: None },
///     SortColumn {
///         values: Arc::new(UInt16Array::from(vec![Some(5), Some(6), None, Some(6)])),
///         options: Some(SortOptions { descending: true, nulls_first: false }),
///     },
/// ];
/// let indices = bitonic::arrow::lexsort_to_indices(&sorter, &columns, None)?;
/// assert_eq!(indices, UInt32Array::from(vec![1, 3, 0, 2]));
/// # Ok::<(), bitonic::Error>(())
/// ```
///
/// Errors: [`Error::InvalidConfig`] for no columns or columns of different lengths;
/// [`Error::Unsupported`] for a column of a type not sorted here (the message names the
/// column and its type) or more than [`MAX_ROWS`] rows; the sorter's errors.
pub fn lexsort_to_indices(
    sorter: &Sorter,
    columns: &[SortColumn],
    limit: Option<usize>,
) -> Result<UInt32Array> {
    lex::lexsort_to_indices(sorter, columns, limit).map(UInt32Array::from)
}

/// Every column of `columns` reordered by [`lexsort_to_indices`], as
/// `arrow_ord::sort::lexsort` returns them (the first `limit` rows with `Some(limit)`).
///
/// Errors: as [`lexsort_to_indices`].
pub fn lexsort(
    sorter: &Sorter,
    columns: &[SortColumn],
    limit: Option<usize>,
) -> Result<Vec<ArrayRef>> {
    let indices = lex::lexsort_to_indices(sorter, columns, limit)?;
    columns
        .iter()
        .map(|column| single::take(column.values.as_ref(), &indices))
        .collect()
}

/// Errors of this crate inside arrow code: `?` in a function that returns [`ArrowError`]
/// wraps them in [`ArrowError::ExternalError`].
impl From<Error> for ArrowError {
    fn from(error: Error) -> ArrowError {
        ArrowError::ExternalError(Box::new(error))
    }
}
