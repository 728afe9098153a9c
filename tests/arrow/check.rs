//! Comparisons of `bitonic::arrow` with arrow-ord, the oracle.
//!
//! arrow-ord's kernels sort with `sort_unstable_by`, so the order they give rows of equal
//! keys is unspecified; `bitonic::arrow` gives them in input order. The indices expected from
//! bitonic are therefore arrow-ord's own result with every run of equal keys put in input
//! order ([`canonical`]): the same keys at every position, ties resolved stably. With a
//! limit, the expected indices are the first `limit` of that, and arrow-ord's limited result
//! must hold the same keys at every position. Sorted values must equal arrow-ord's bit for
//! bit.

use arrow_array::{Array, ArrayRef, UInt32Array};
use arrow_ord::sort::{SortColumn, SortOptions};
use bitonic::Sorter;

use crate::data::{Col, keys_of};

/// `indices` with each run of positions whose `key` is equal sorted ascending.
pub fn canonical<K: PartialEq>(indices: &[u32], key: impl Fn(u32) -> K) -> Vec<u32> {
    let mut out = indices.to_vec();
    let mut start = 0;
    while start < out.len() {
        let first = key(out[start]);
        let mut end = start + 1;
        while end < out.len() && key(out[end]) == first {
            end += 1;
        }
        out[start..end].sort_unstable();
        start = end;
    }
    out
}

/// The first position where `ours` and `want` differ, described.
fn first_diff<K: std::fmt::Debug>(ours: &[u32], want: &[u32], key: impl Fn(u32) -> K) -> String {
    if ours.len() != want.len() {
        return format!("{} indices, expected {}", ours.len(), want.len());
    }
    let at = ours.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
    let window = at.saturating_sub(2)..(at + 3).min(ours.len());
    format!(
        "index {at}: got row {} (key {:?}), expected row {} (key {:?}); got {:?}, expected {:?}",
        ours[at],
        key(ours[at]),
        want[at],
        key(want[at]),
        &ours[window.clone()],
        &want[window],
    )
}

fn indices_vec(a: &UInt32Array) -> Result<Vec<u32>, String> {
    if a.null_count() != 0 {
        return Err("the indices hold nulls".into());
    }
    Ok(a.values().to_vec())
}

/// Checks that two arrays are equal: data type, length, null rows, and the bits of every
/// valid value.
pub fn same_array(ours: &dyn Array, theirs: &dyn Array) -> Result<(), String> {
    if ours.data_type() != theirs.data_type() {
        return Err(format!(
            "data type {} instead of {}",
            ours.data_type(),
            theirs.data_type()
        ));
    }
    if ours.len() != theirs.len() {
        return Err(format!("{} rows instead of {}", ours.len(), theirs.len()));
    }
    let (a, b) = (keys_of(ours), keys_of(theirs));
    if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
        return Err(format!("row {i}: {:?} instead of {:?}", a[i], b[i]));
    }
    if ours != theirs {
        return Err("arrow's equality tells the arrays apart".into());
    }
    Ok(())
}

/// What one single-column check compares.
pub struct Single<'a> {
    /// The input.
    pub col: &'a Col,
    /// The options passed to both.
    pub options: Option<SortOptions>,
    /// The limits tried on `sort_to_indices` (`None` is always tried).
    pub limits: &'a [usize],
    /// Whether `sort` and `sort_limit` are compared too.
    pub values: bool,
}

/// Compares `sort_to_indices` (and with `values`, `sort` and `sort_limit`) with arrow-ord.
pub fn single(sorter: &Sorter, case: &Single<'_>) -> Result<(), String> {
    let col = case.col;
    let array = col.array.as_ref();
    let n = array.len();
    let key = |i: u32| col.keys[i as usize];
    let theirs = arrow_ord::sort::sort_to_indices(array, case.options, None)
        .map_err(|e| format!("arrow-ord failed: {e}"))?;
    let want = canonical(&indices_vec(&theirs)?, key);
    let limits = std::iter::once(None).chain(case.limits.iter().map(|&l| Some(l)));
    for limit in limits {
        let what = format!("sort_to_indices, limit {limit:?}");
        let ours = bitonic::arrow::sort_to_indices(sorter, array, case.options, limit)
            .map_err(|e| format!("{what}: {e}"))?;
        let ours = indices_vec(&ours).map_err(|e| format!("{what}: {e}"))?;
        let k = limit.unwrap_or(n).min(n);
        if ours != want[..k] {
            return Err(format!("{what}: {}", first_diff(&ours, &want[..k], key)));
        }
        if limit.is_some() {
            let theirs = arrow_ord::sort::sort_to_indices(array, case.options, limit)
                .map_err(|e| format!("arrow-ord failed: {e}"))?;
            let theirs = indices_vec(&theirs)?;
            let (a, b): (Vec<_>, Vec<_>) = (
                ours.iter().map(|&i| key(i)).collect(),
                theirs.iter().map(|&i| key(i)).collect(),
            );
            if a != b {
                return Err(format!(
                    "{what}: other keys than arrow-ord's limited result ({} vs {} rows)",
                    a.len(),
                    b.len()
                ));
            }
        }
    }
    if case.values {
        let ours =
            bitonic::arrow::sort(sorter, array, case.options).map_err(|e| format!("sort: {e}"))?;
        let theirs = arrow_ord::sort::sort(array, case.options)
            .map_err(|e| format!("arrow-ord sort failed: {e}"))?;
        same_array(ours.as_ref(), theirs.as_ref()).map_err(|e| format!("sort: {e}"))?;
        for &limit in case.limits {
            let ours = bitonic::arrow::sort_limit(sorter, array, case.options, Some(limit))
                .map_err(|e| format!("sort_limit {limit}: {e}"))?;
            let theirs = arrow_ord::sort::sort_limit(array, case.options, Some(limit))
                .map_err(|e| format!("arrow-ord sort_limit failed: {e}"))?;
            same_array(ours.as_ref(), theirs.as_ref())
                .map_err(|e| format!("sort_limit {limit}: {e}"))?;
        }
    }
    Ok(())
}

/// Compares `lexsort_to_indices` and `lexsort` on `cols` (with `options[i]` for column `i`)
/// with arrow-ord, for no limit and each of `limits`.
pub fn lex(
    sorter: &Sorter,
    cols: &[Col],
    options: &[Option<SortOptions>],
    limits: &[usize],
) -> Result<(), String> {
    let columns: Vec<SortColumn> = cols
        .iter()
        .zip(options)
        .map(|(c, &options)| SortColumn {
            values: ArrayRef::clone(&c.array),
            options,
        })
        .collect();
    let n = cols[0].array.len();
    let key = |i: u32| -> Vec<Option<u64>> { cols.iter().map(|c| c.keys[i as usize]).collect() };
    let theirs = arrow_ord::sort::lexsort_to_indices(&columns, None)
        .map_err(|e| format!("arrow-ord failed: {e}"))?;
    let want = canonical(&indices_vec(&theirs)?, key);
    let limits = std::iter::once(None).chain(limits.iter().map(|&l| Some(l)));
    for limit in limits {
        let what = format!("lexsort_to_indices, limit {limit:?}");
        let ours = bitonic::arrow::lexsort_to_indices(sorter, &columns, limit)
            .map_err(|e| format!("{what}: {e}"))?;
        let ours = indices_vec(&ours).map_err(|e| format!("{what}: {e}"))?;
        let k = limit.unwrap_or(n).min(n);
        if ours != want[..k] {
            return Err(format!("{what}: {}", first_diff(&ours, &want[..k], key)));
        }
        let theirs = arrow_ord::sort::lexsort_to_indices(&columns, limit)
            .map_err(|e| format!("arrow-ord failed: {e}"))?;
        let theirs = indices_vec(&theirs)?;
        let a: Vec<_> = ours.iter().map(|&i| key(i)).collect();
        let b: Vec<_> = theirs.iter().map(|&i| key(i)).collect();
        if a != b {
            return Err(format!("{what}: other keys than arrow-ord's result"));
        }
        let ours = bitonic::arrow::lexsort(sorter, &columns, limit)
            .map_err(|e| format!("lexsort, limit {limit:?}: {e}"))?;
        let theirs = arrow_ord::sort::lexsort(&columns, limit)
            .map_err(|e| format!("arrow-ord lexsort failed: {e}"))?;
        if ours.len() != theirs.len() {
            return Err(format!(
                "lexsort: {} columns instead of {}",
                ours.len(),
                theirs.len()
            ));
        }
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            same_array(a.as_ref(), b.as_ref())
                .map_err(|e| format!("lexsort, limit {limit:?}, column {i}: {e}"))?;
        }
    }
    Ok(())
}
