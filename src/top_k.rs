//! Top-k: the `k` best keys of a slice or of every row of a matrix, with their positions.
//!
//! The best keys come first: the smallest for [`Order::Ascending`], the largest for
//! [`Order::Descending`], in the crate's total order (floats as `total_cmp`, so NaNs and both
//! zeros have their places). Equal keys go to the lower position, so the result is a function
//! of the input alone, the same on every backend.
//!
//! On a GPU backend, keys of at most 32 bits (16-bit keys as they are, `u8` and `i8` as their
//! ordered words) are uploaded and selected by the backend's device-resident top-k (`top_k_device_rows`): the
//! bitonic top-k (`schedule::top_k`) where `k` fits the device's on-chip tile, a device
//! sort of `ordered key << 32 | position` words otherwise. Everything else (the CPU
//! backend, slices below the sorter's host threshold, 64-bit keys of host slices) takes the
//! first `k` entries of each row's stable argsort. Both give the same answer: the order is
//! total and ties go to the lower position.

use crate::backend::TopKKeys;
use crate::error::Result;
use crate::keys::{KeyEncoding, Order, SortKey, key_of_u32, u32_kind, u32_of_key};
use crate::shape::{check_k, check_rows};
use crate::sorter::Sorter;

/// Keys per piece of rayon work where narrow keys are widened to words.
const WIDEN_PIECE: usize = 1 << 16;

/// The result of [`Sorter::top_k`] and [`Sorter::top_k_rows`]: for each row, its `k` best
/// keys in order and their positions within the row, row after row.
#[derive(Clone, Debug, PartialEq)]
pub struct TopK<K> {
    /// The selected keys: `k` per row, best first.
    pub values: Vec<K>,
    /// The position within its row of each selected key.
    pub indices: Vec<u32>,
    /// Keys selected per row.
    pub k: usize,
}

impl<K> TopK<K> {
    /// Rows in the result.
    pub fn rows(&self) -> usize {
        self.values.len().checked_div(self.k).unwrap_or(0)
    }
}

impl Sorter {
    /// The `k` best keys of `keys` (the smallest for [`Order::Ascending`], the largest for
    /// [`Order::Descending`]), best first, with their positions. Equal keys go to the lower
    /// position. `k` must be between 1 and `keys.len()`.
    ///
    /// ```
    /// use bitonic::Order;
    /// let sorter = bitonic::Sorter::new()?;
    /// let logits = [0.5f32, 2.0, -1.0, 2.0, 0.0];
    /// let top = sorter.top_k(&logits, 2, Order::Descending)?;
    /// assert_eq!(top.values, [2.0, 2.0]);
    /// assert_eq!(top.indices, [1, 3]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn top_k<K: SortKey>(&self, keys: &[K], k: usize, order: Order) -> Result<TopK<K>> {
        self.top_k_rows(keys, keys.len(), k, order)
    }

    /// [`Sorter::top_k`] of every row of a row-major matrix: `keys` holds
    /// `keys.len() / row_len` rows of `row_len` keys, and the result holds `k` keys and
    /// positions per row, row after row.
    ///
    /// ```
    /// use bitonic::Order;
    /// let sorter = bitonic::Sorter::new()?;
    /// let m = [3u32, 9, 1, 7, /* row 2 */ 4, 4, 8, 0];
    /// let top = sorter.top_k_rows(&m, 4, 2, Order::Ascending)?;
    /// assert_eq!(top.values, [1, 3, 0, 4]);
    /// assert_eq!(top.indices, [2, 0, 3, 0]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn top_k_rows<K: SortKey>(
        &self,
        keys: &[K],
        row_len: usize,
        k: usize,
        order: Order,
    ) -> Result<TopK<K>> {
        check_rows(keys.len(), row_len)?;
        check_k(k, row_len)?;
        if let Some(top) = self.top_k_on_device(keys, row_len, k, order)? {
            return Ok(top);
        }
        let order_in_rows = self.argsort_rows(keys, row_len, order)?;
        let rows = keys.len() / row_len;
        let mut values = Vec::with_capacity(rows * k);
        let mut indices = Vec::with_capacity(rows * k);
        for (r, row) in order_in_rows.chunks_exact(row_len).enumerate() {
            let base = r * row_len;
            for &position in &row[..k] {
                indices.push(position);
                values.push(keys[base + position as usize]);
            }
        }
        Ok(TopK { values, indices, k })
    }

    /// The bitonic top-k on the backend that takes slices of this length, where it has one
    /// for these keys and this `k`; `None` otherwise.
    fn top_k_on_device<K: SortKey>(
        &self,
        keys: &[K],
        row_len: usize,
        k: usize,
        order: Order,
    ) -> Result<Option<TopK<K>>> {
        if row_len as u64 > u64::from(u32::MAX) + 1 {
            return Ok(None);
        }
        // 16-bit keys that the kernels encode at 16 bits cross the bus as they are: half the
        // bytes of words, and no host pass over the keys. Other narrow keys go as their
        // ordered words.
        let widened: Vec<u32>;
        let (kind, words) = if let Some(kind) = K::WORD16_KIND {
            (kind, TopKKeys::U16(bytemuck::cast_slice(keys)))
        } else {
            let Some(kind) = u32_kind::<K>() else {
                return Ok(None);
            };
            if std::mem::size_of::<K>() == 4 {
                (kind, TopKKeys::U32(bytemuck::cast_slice(keys)))
            } else {
                // On rayon's threads: on one thread this pass over every key costs the host
                // more than the device's whole selection.
                let mut words = vec![0u32; keys.len()];
                crate::rayon_lock::for_pieces(&mut words, keys, WIDEN_PIECE, |words, keys| {
                    for (word, &key) in words.iter_mut().zip(keys) {
                        *word = u32_of_key(key);
                    }
                });
                widened = words;
                (kind, TopKKeys::U32(&widened))
            }
        };
        let encoding = KeyEncoding {
            kind,
            descending: order.is_descending(),
        };
        let backend = self.dispatch.backends.backend_for(keys.len());
        let Some((values, indices)) = backend.top_k_rows_words(words, encoding, row_len, k)? else {
            return Ok(None);
        };
        // The values are the words the device was given: 16-bit keys' own bits, or the
        // 32-bit words above.
        let values = values
            .into_iter()
            .map(|word| match words {
                TopKKeys::U16(_) => bytemuck::cast(word as u16),
                TopKKeys::U32(_) => key_of_u32(word),
            })
            .collect();
        Ok(Some(TopK { values, indices, k }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::BackendKind;
    use crate::error::Error;

    fn cpu() -> Sorter {
        Sorter::builder()
            .ignore_env()
            .backend(BackendKind::Cpu)
            .build()
            .unwrap()
    }

    /// The model: every position of the row, ordered by key (total order) then position.
    fn model(row: &[f32], k: usize, order: Order) -> Vec<u32> {
        let mut p: Vec<u32> = (0..row.len() as u32).collect();
        p.sort_by(|&a, &b| {
            let (x, y) = (row[a as usize], row[b as usize]);
            let by_key = match order {
                Order::Ascending => x.total_cmp(&y),
                Order::Descending => y.total_cmp(&x),
            };
            by_key.then(a.cmp(&b))
        });
        p.truncate(k);
        p
    }

    #[test]
    fn top_k_matches_the_model_with_ties_nan_and_zeros() {
        let sorter = cpu();
        let specials = [
            f32::NAN,
            -f32::NAN,
            0.0,
            -0.0,
            1.0,
            1.0,
            f32::INFINITY,
            -3.5,
        ];
        let row: Vec<f32> = (0..300).map(|i| specials[(i * 7 + i / 5) % 8]).collect();
        for order in [Order::Ascending, Order::Descending] {
            for k in [1, 2, 7, 150, 299, 300] {
                let top = sorter.top_k(&row, k, order).unwrap();
                let want = model(&row, k, order);
                assert_eq!(top.indices, want, "k {k} {order:?}");
                let bits: Vec<u32> = top.values.iter().map(|v| v.to_bits()).collect();
                let want_bits: Vec<u32> = want.iter().map(|&p| row[p as usize].to_bits()).collect();
                assert_eq!(bits, want_bits);
            }
        }
    }

    #[test]
    fn bad_k_and_shapes_are_refused() {
        let sorter = cpu();
        let keys = [1u32, 2, 3, 4, 5, 6];
        assert!(matches!(
            sorter.top_k(&keys, 0, Order::Ascending),
            Err(Error::InvalidConfig(_))
        ));
        assert!(matches!(
            sorter.top_k(&keys, 7, Order::Ascending),
            Err(Error::InvalidConfig(_))
        ));
        assert!(matches!(
            sorter.top_k_rows(&keys, 4, 1, Order::Ascending),
            Err(Error::InvalidConfig(_))
        ));
        assert!(matches!(
            sorter.top_k_rows(&keys, 3, 4, Order::Ascending),
            Err(Error::InvalidConfig(_))
        ));
        let empty: [u32; 0] = [];
        assert!(sorter.top_k(&empty, 1, Order::Ascending).is_err());
    }

    #[test]
    fn rows_select_within_each_row() {
        let sorter = cpu();
        let m: Vec<i64> = (0..5 * 33).map(|i| (i * 37 % 11) - 5).collect();
        let top = sorter.top_k_rows(&m, 33, 4, Order::Descending).unwrap();
        assert_eq!(top.rows(), 5);
        for r in 0..5 {
            let row = &m[r * 33..(r + 1) * 33];
            let mut p: Vec<u32> = (0..33).collect();
            p.sort_by(|&a, &b| row[b as usize].cmp(&row[a as usize]).then(a.cmp(&b)));
            assert_eq!(&top.indices[r * 4..(r + 1) * 4], &p[..4]);
        }
    }
}
