//! Which arrow data types are sorted here, and the checks every entry point makes first.

use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray, cast::AsArray};
use arrow_schema::DataType;

use crate::error::{Error, Result};

/// Runs `$body` with the type alias `$t` bound to the arrow primitive type of the data type
/// `$dt` when that type's native values are keys of this crate ([`crate::SortKey`]), else
/// `$other` with `$name` bound to the data type. Every supported type is listed here and
/// nowhere else.
macro_rules! for_key_type {
    ($dt:expr, $t:ident => $body:expr, $name:ident => $other:expr) => {{
        use arrow_array::types::*;
        use arrow_schema::{DataType as D, TimeUnit as U};
        match $dt {
            D::Int8 => {
                type $t = Int8Type;
                $body
            }
            D::Int16 => {
                type $t = Int16Type;
                $body
            }
            D::Int32 => {
                type $t = Int32Type;
                $body
            }
            D::Int64 => {
                type $t = Int64Type;
                $body
            }
            D::UInt8 => {
                type $t = UInt8Type;
                $body
            }
            D::UInt16 => {
                type $t = UInt16Type;
                $body
            }
            D::UInt32 => {
                type $t = UInt32Type;
                $body
            }
            D::UInt64 => {
                type $t = UInt64Type;
                $body
            }
            D::Float16 => {
                type $t = Float16Type;
                $body
            }
            D::Float32 => {
                type $t = Float32Type;
                $body
            }
            D::Float64 => {
                type $t = Float64Type;
                $body
            }
            D::Date32 => {
                type $t = Date32Type;
                $body
            }
            D::Date64 => {
                type $t = Date64Type;
                $body
            }
            D::Time32(U::Second) => {
                type $t = Time32SecondType;
                $body
            }
            D::Time32(U::Millisecond) => {
                type $t = Time32MillisecondType;
                $body
            }
            D::Time64(U::Microsecond) => {
                type $t = Time64MicrosecondType;
                $body
            }
            D::Time64(U::Nanosecond) => {
                type $t = Time64NanosecondType;
                $body
            }
            D::Timestamp(U::Second, _) => {
                type $t = TimestampSecondType;
                $body
            }
            D::Timestamp(U::Millisecond, _) => {
                type $t = TimestampMillisecondType;
                $body
            }
            D::Timestamp(U::Microsecond, _) => {
                type $t = TimestampMicrosecondType;
                $body
            }
            D::Timestamp(U::Nanosecond, _) => {
                type $t = TimestampNanosecondType;
                $body
            }
            D::Duration(U::Second) => {
                type $t = DurationSecondType;
                $body
            }
            D::Duration(U::Millisecond) => {
                type $t = DurationMillisecondType;
                $body
            }
            D::Duration(U::Microsecond) => {
                type $t = DurationMicrosecondType;
                $body
            }
            D::Duration(U::Nanosecond) => {
                type $t = DurationNanosecondType;
                $body
            }
            $name => $other,
        }
    }};
}
pub(super) use for_key_type;

/// Whether [`for_key_type`] runs its body for `data_type`.
pub(super) fn is_supported(data_type: &DataType) -> bool {
    for_key_type!(data_type, T => { let _ = std::marker::PhantomData::<T>; true }, _other => false)
}

/// The error for an array whose type is not sorted here.
pub(super) fn unsupported(data_type: &DataType) -> Error {
    Error::Unsupported(format!(
        "bitonic::arrow sorts arrays of the integer, floating point, date, time, timestamp \
         and duration types; {data_type} is not one of them"
    ))
}

/// [`unsupported`] unless `data_type` is sorted here.
pub(super) fn check_supported(data_type: &DataType) -> Result<()> {
    if is_supported(data_type) {
        Ok(())
    } else {
        Err(unsupported(data_type))
    }
}

/// The most rows an array may have here: its sort indices are `u32`, as arrow-ord's are.
pub const MAX_ROWS: usize = u32::MAX as usize;

/// Checks that `rows` rows can be indexed by `u32`.
pub(super) fn check_rows(rows: usize, what: &str) -> Result<()> {
    if rows > MAX_ROWS {
        return Err(Error::Unsupported(format!(
            "{what} of {rows} rows: sort indices are u32, so at most {MAX_ROWS} rows"
        )));
    }
    Ok(())
}

/// `array` as the primitive array of `T`: the caller has matched its data type to `T`, so
/// this fails only on an array whose data type disagrees with its own Rust type.
pub(super) fn primitive<T: ArrowPrimitiveType>(array: &dyn Array) -> Result<&PrimitiveArray<T>> {
    array
        .as_primitive_opt::<T>()
        .ok_or_else(|| unsupported(array.data_type()))
}
