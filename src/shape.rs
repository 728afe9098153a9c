//! The shape checks of every call: lengths, rows, `k`, value widths and 32-bit positions.
//!
//! Shapes are validated once, where a call enters the crate (the sorter's calls and the
//! device-resident calls of each GPU backend); the backends behind that boundary only assert
//! them ([`debug_assert_rows_words`]). Every entry point uses these functions, so the host and
//! the device calls accept and reject the same shapes: no elements form no rows, whatever the
//! row length.

use crate::error::{Error, Result};

/// The most elements whose positions fit the 32-bit indices of argsort and top-k.
pub(crate) const MAX_INDEXED: u64 = 1 << 32;

/// Checks that values, when given, are as many as the keys: every entry point that takes
/// both calls this before touching either slice.
pub(crate) fn check_lengths(keys: usize, values: Option<usize>) -> Result<()> {
    match values {
        Some(values) if values != keys => Err(Error::LengthMismatch { keys, values }),
        _ => Ok(()),
    }
}

/// Checks that `len` elements form whole rows of `row_len`: a nonzero `row_len` that divides
/// `len`, or no elements at all (no rows, whatever the row length).
pub(crate) fn check_rows(len: usize, row_len: usize) -> Result<()> {
    if len == 0 || (row_len > 0 && len.is_multiple_of(row_len)) {
        Ok(())
    } else {
        Err(Error::InvalidConfig(format!(
            "{len} elements do not form rows of {row_len}"
        )))
    }
}

/// Checks the shape of a call on rows of words: values (when given) as many as keys, in whole
/// rows ([`check_rows`]).
pub(crate) fn check_rows_words(keys: usize, values: Option<usize>, row_len: usize) -> Result<()> {
    check_lengths(keys, values)?;
    check_rows(keys, row_len)
}

/// In debug builds, asserts the shape that [`check_rows_words`] checks, for the backends
/// behind the entry points that checked it.
pub(crate) fn debug_assert_rows_words(keys: usize, values: Option<usize>, row_len: usize) {
    debug_assert!(
        check_rows_words(keys, values, row_len).is_ok(),
        "a shape the caller should have rejected: {keys} keys, {values:?} values, rows of {row_len}"
    );
}

/// Checks that values are 4 or 8 bytes wide: the widths the kernels move.
pub(crate) fn check_value_bytes(bytes: usize) -> Result<()> {
    if bytes == 4 || bytes == 8 {
        Ok(())
    } else {
        Err(Error::UnsupportedValueSize { bytes })
    }
}

/// Checks that `len` elements have positions that fit 32 bits (at most 2^32 of them).
pub(crate) fn check_indexable(len: usize, what: &str) -> Result<()> {
    if len as u64 > MAX_INDEXED {
        return Err(Error::Unsupported(format!(
            "{what} of {len} elements: positions are 32-bit, at most 2^32 elements"
        )));
    }
    Ok(())
}

/// Checks `k` against a row of `row_len`: at least 1 and at most the row.
pub(crate) fn check_k(k: usize, row_len: usize) -> Result<()> {
    if k == 0 || k > row_len {
        return Err(Error::InvalidConfig(format!(
            "top-k needs 1 <= k <= the row length; k = {k}, rows of {row_len}"
        )));
    }
    Ok(())
}

/// Checks a top-k of device-resident keys before anything is enqueued: `keys_len` keys in
/// whole rows of `row_len`, `1 <= k <= row_len`, positions that fit 32 bits, and outputs of
/// exactly `k` per row. Returns the number of rows.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) fn check_top_k_device(
    keys_len: usize,
    row_len: usize,
    k: usize,
    values_len: usize,
    indices_len: usize,
) -> Result<usize> {
    check_rows(keys_len, row_len)?;
    check_k(k, row_len)?;
    check_indexable(row_len, "a top-k row")?;
    let rows = keys_len / row_len;
    let want = rows * k;
    if values_len != want || indices_len != want {
        return Err(Error::InvalidConfig(format!(
            "top-k of {rows} rows with k = {k} writes {want} values and {want} indices; \
             the outputs hold {values_len} and {indices_len}"
        )));
    }
    Ok(rows)
}

/// A device-resident argsort of `keys_len` keys in rows of `row_len` into `indices_len`
/// positions: the rows must divide the keys, the positions be as many as the keys, and a row
/// be indexable by `u32` positions.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) fn check_argsort_device(
    keys_len: usize,
    row_len: usize,
    indices_len: usize,
) -> Result<()> {
    check_rows(keys_len, row_len)?;
    if indices_len != keys_len {
        return Err(Error::InvalidConfig(format!(
            "an argsort of {keys_len} keys writes as many indices; the output holds \
             {indices_len}"
        )));
    }
    check_indexable(row_len, "an argsort row")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_device_shapes_agree() {
        // No elements form no rows, whatever the row length, on every entry point.
        assert!(check_rows(0, 0).is_ok());
        assert!(check_rows_words(0, None, 0).is_ok());
        assert!(check_rows_words(0, Some(0), 7).is_ok());
        assert!(check_rows(6, 0).is_err());
        assert!(check_rows_words(6, None, 0).is_err());
        assert!(check_rows(6, 4).is_err());
        assert!(check_rows_words(6, Some(6), 3).is_ok());
        assert!(matches!(
            check_rows_words(6, Some(5), 3),
            Err(Error::LengthMismatch { keys: 6, values: 5 })
        ));
    }

    #[test]
    fn top_k_shapes() {
        assert_eq!(check_top_k_device(12, 4, 2, 6, 6).unwrap(), 3);
        assert_eq!(check_top_k_device(0, 4, 2, 0, 0).unwrap(), 0);
        // k outside 1..=row_len, a row length of 0, outputs of the wrong size.
        assert!(check_top_k_device(12, 4, 0, 0, 0).is_err());
        assert!(check_top_k_device(12, 4, 5, 15, 15).is_err());
        assert!(check_top_k_device(0, 0, 1, 0, 0).is_err());
        assert!(check_top_k_device(12, 4, 2, 6, 5).is_err());
        assert!(check_top_k_device(12, 5, 2, 6, 6).is_err());
    }

    #[test]
    fn device_shapes_are_checked() {
        assert_eq!(check_top_k_device(12, 4, 2, 6, 6).unwrap(), 3);
        assert_eq!(check_top_k_device(0, 4, 2, 0, 0).unwrap(), 0);
        for (keys, row_len, k, values, indices) in [
            (12, 0, 1, 0, 0),
            (12, 5, 1, 2, 2),
            (12, 4, 0, 0, 0),
            (12, 4, 5, 15, 15),
            (12, 4, 2, 5, 6),
            (12, 4, 2, 6, 7),
        ] {
            assert!(
                matches!(
                    check_top_k_device(keys, row_len, k, values, indices),
                    Err(Error::InvalidConfig(_))
                ),
                "{keys} {row_len} {k} {values} {indices}"
            );
        }
    }

    #[test]
    fn value_widths_and_positions() {
        assert!(check_value_bytes(4).is_ok() && check_value_bytes(8).is_ok());
        assert!(matches!(
            check_value_bytes(2),
            Err(Error::UnsupportedValueSize { bytes: 2 })
        ));
        assert!(check_indexable(1 << 32, "x").is_ok());
        assert!(check_indexable((1 << 32) + 1, "x").is_err());
    }
}
