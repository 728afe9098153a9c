//! The dispatch step of every sort of host slices, once per call: the shape checked and the
//! typed keys and values converted into what the backends sort, then handed to one device's
//! sort or a sort in ranges ([`crate::range_sort`]), each slice to the device or the host CPU
//! ([`crate::backends`]).

use crate::backends::{Backends, NarrowForm, WordForm};
use crate::error::Result;
use crate::keys::{KeyEncoding, KeyRepr, SortKey, WordsMut, with_value_words};
use crate::range_sort;
use crate::shape::{check_lengths, check_rows, check_value_bytes};

/// The dispatch step that a sorter owns.
pub(crate) struct Dispatch {
    /// The sorter's backends and settings.
    pub(crate) backends: Backends,
}

impl Dispatch {
    /// Sorts each row of `row_len` of `keys` (a plain sort is one row) with `values`, after
    /// checking their shape.
    pub(crate) fn sort_slices<K: SortKey, V: bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: Option<&mut [V]>,
        descending: bool,
        row_len: usize,
    ) -> Result<()> {
        check_lengths(keys.len(), values.as_ref().map(|v| v.len()))?;
        check_rows(keys.len(), row_len)?;
        if values.is_some() {
            check_value_bytes(std::mem::size_of::<V>())?;
        }
        if keys.len() <= 1 || row_len <= 1 {
            return Ok(());
        }
        let backends = &self.backends;
        with_value_words(values, |values| match K::repr(keys) {
            KeyRepr::Words(WordsMut::U32(words), kind) => {
                let form = WordForm(KeyEncoding { kind, descending });
                range_sort::sort_slices(backends, words, form, values, row_len)
            }
            KeyRepr::Words(WordsMut::U64(words), kind) => {
                let form = WordForm(KeyEncoding { kind, descending });
                range_sort::sort_slices(backends, words, form, values, row_len)
            }
            KeyRepr::Narrow => {
                range_sort::sort_slices(backends, keys, NarrowForm(descending), values, row_len)
            }
        })
    }
}
