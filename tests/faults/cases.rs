//! The sorts the fault loop runs: their host data, the call under test, and the exact
//! result a correct sort gives.

use std::sync::Arc;

use bitonic::{PinnedBuffer, Sorter};

use crate::support::{TestKey, TestValue, check_keys, expected, pair_multiset, sort_pairs};
use crate::targets::Target;

/// One kind of sort: its host data, how it is sorted, and the exact result expected.
pub trait Case: Clone {
    /// Sorts the data in place (the call under test).
    fn sort(&mut self, sorter: &Sorter) -> bitonic::Result<()>;
    /// Every element's bits, keys then values: equal bits, equal data.
    fn bits(&self) -> Vec<u64>;
    /// The exact result of a correct sort of this input on `target`.
    fn want(&self, target: &Target) -> Result<Self, String>;
}

/// Keys alone, whole or in rows.
#[derive(Clone)]
pub struct Keys<K> {
    pub keys: Vec<K>,
    pub descending: bool,
    /// `Some(row_len)`: `sort_rows` with rows of this length.
    pub row_len: Option<usize>,
}

impl<K: TestKey> Case for Keys<K> {
    fn sort(&mut self, sorter: &Sorter) -> bitonic::Result<()> {
        match (self.row_len, self.descending) {
            (None, false) => sorter.sort(&mut self.keys, bitonic::Order::Ascending),
            (None, true) => sorter.sort(&mut self.keys, bitonic::Order::Descending),
            (Some(r), false) => sorter.sort_rows(&mut self.keys, r, bitonic::Order::Ascending),
            (Some(r), true) => sorter.sort_rows(&mut self.keys, r, bitonic::Order::Descending),
        }
    }

    fn bits(&self) -> Vec<u64> {
        self.keys.iter().map(|&k| k.bits()).collect()
    }

    fn want(&self, _: &Target) -> Result<Self, String> {
        let row_len = self.row_len.unwrap_or(self.keys.len()).max(1);
        let keys = self
            .keys
            .chunks(row_len)
            .flat_map(|row| expected(row, self.descending))
            .collect();
        Ok(Keys {
            keys,
            ..self.clone()
        })
    }
}

/// Keys with values: `sort_by_key` (unstable, its result fixed by the network) or
/// `sort_by_key_stable`.
#[derive(Clone)]
pub struct Pairs<K, V> {
    pub keys: Vec<K>,
    pub values: Vec<V>,
    pub stable: bool,
}

impl<K: TestKey + Ord, V: TestValue> Case for Pairs<K, V> {
    fn sort(&mut self, sorter: &Sorter) -> bitonic::Result<()> {
        if self.stable {
            sorter.sort_by_key_stable(&mut self.keys, &mut self.values, bitonic::Order::Ascending)
        } else {
            sort_pairs(sorter, &mut self.keys, &mut self.values, false)
        }
    }

    fn bits(&self) -> Vec<u64> {
        let keys = self.keys.iter().map(|&k| k.bits());
        keys.chain(self.values.iter().map(|&v| v.bits())).collect()
    }

    fn want(&self, target: &Target) -> Result<Self, String> {
        if self.stable {
            // Rust's stable sort of the pairs by key.
            let mut pairs: Vec<(K, V)> =
                self.keys.iter().copied().zip(self.values.clone()).collect();
            pairs.sort_by_key(|p| p.0);
            let (keys, values) = pairs.into_iter().unzip();
            return Ok(Pairs {
                keys,
                values,
                stable: true,
            });
        }
        // The CPU backend's result: every backend runs the same network, so the order of
        // equal keys' values is fixed too. Checked against Rust's sort first.
        let cpu = target
            .reference
            .as_deref()
            .ok_or("no CPU reference sorter")?;
        let mut want = self.clone();
        want.sort(cpu)
            .map_err(|e| format!("the CPU backend returned an error: {e}"))?;
        check_keys(&want.keys, &expected(&self.keys, false))
            .map_err(|e| format!("the CPU backend's keys: {e}"))?;
        if pair_multiset(&want.keys, &want.values) != pair_multiset(&self.keys, &self.values) {
            return Err("the CPU backend's pairs are not a permutation of the input's".into());
        }
        Ok(want)
    }
}

/// `u32` keys, and `u64` values when given, in pinned buffers of the target's sorter: the
/// copies go directly between them and the device, past the staging ring (except the copy
/// back of an all-or-nothing sort).
pub struct Pinned {
    sorter: Arc<Sorter>,
    keys: PinnedBuffer<u32>,
    values: Option<PinnedBuffer<u64>>,
}

impl Pinned {
    pub fn new(sorter: &Arc<Sorter>, keys: &[u32], values: Option<&[u64]>) -> Pinned {
        fn copy<T: bytemuck::Pod>(sorter: &Sorter, data: &[T]) -> PinnedBuffer<T> {
            let mut buffer = sorter
                .pinned_buffer(data.len())
                .unwrap_or_else(|e| panic!("allocating a pinned buffer: {e}"));
            buffer.copy_from_slice(data);
            buffer
        }
        Pinned {
            sorter: Arc::clone(sorter),
            keys: copy(sorter, keys),
            values: values.map(|v| copy(sorter, v)),
        }
    }
}

impl Clone for Pinned {
    fn clone(&self) -> Self {
        Pinned::new(&self.sorter, &self.keys, self.values.as_deref())
    }
}

impl Case for Pinned {
    fn sort(&mut self, sorter: &Sorter) -> bitonic::Result<()> {
        match &mut self.values {
            Some(values) => sorter.sort_by_key(&mut self.keys, values, bitonic::Order::Ascending),
            None => sorter.sort(&mut self.keys, bitonic::Order::Ascending),
        }
    }

    fn bits(&self) -> Vec<u64> {
        let keys = self.keys.iter().map(|&k| TestKey::bits(k));
        let values = self
            .values
            .iter()
            .flat_map(|v| v.iter().map(|&v| TestValue::bits(v)));
        keys.chain(values).collect()
    }

    fn want(&self, target: &Target) -> Result<Self, String> {
        // As for the same data in ordinary memory.
        let (keys, values) = match &self.values {
            Some(values) => {
                let pairs = Pairs {
                    keys: self.keys.to_vec(),
                    values: values.to_vec(),
                    stable: false,
                };
                let want = pairs.want(target)?;
                (want.keys, Some(want.values))
            }
            None => (expected(&self.keys, false), None),
        };
        Ok(Pinned::new(&self.sorter, &keys, values.as_deref()))
    }
}
