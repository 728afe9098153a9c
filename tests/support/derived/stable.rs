//! Stable key-value sorts, with values of any `Copy` type.

use super::*;

/// A value of a stable sort: any `Copy` type, distinct for distinct input positions.
pub trait StableValue: Copy + PartialEq + Debug + Send + 'static {
    /// The type's name in trial names.
    const NAME: &'static str;
    /// The value of input position `i`.
    fn make(i: usize, salt: u64) -> Self;
}

impl StableValue for u16 {
    const NAME: &'static str = "u16";
    fn make(i: usize, salt: u64) -> Self {
        // Distinct below 2^16 positions; the trials stay below that for u16 values.
        (i as u16).wrapping_mul(0x9E37) ^ salt as u16
    }
}

impl StableValue for [u8; 3] {
    const NAME: &'static str = "u8x3";
    fn make(i: usize, salt: u64) -> Self {
        let w = (i as u32).wrapping_mul(0x9E37_79B9) ^ salt as u32;
        let b = w.to_le_bytes();
        [b[0], b[1], b[2] ^ (i >> 24) as u8]
    }
}

impl StableValue for u128 {
    const NAME: &'static str = "u128";
    fn make(i: usize, salt: u64) -> Self {
        (u128::from(salt) << 64 | i as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)
    }
}

impl StableValue for (u32, u16) {
    const NAME: &'static str = "u32_u16";
    fn make(i: usize, salt: u64) -> Self {
        (i as u32 ^ salt as u32, (salt >> 32) as u16 ^ i as u16)
    }
}

pub(super) struct StableCase {
    pub(super) id: String,
    pub(super) keys: Keys,
    pub(super) descending: bool,
    pub(super) lengths: Vec<usize>,
}

pub(super) fn run_stable<K: DerivedKey, V: StableValue>(
    t: &Target,
    case: &StableCase,
) -> Result<(), Failed> {
    for &n in &case.lengths {
        let seed = input_seed(t.seed, &case.id, n);
        let mut rng = rng_for(seed);
        let keys_in: Vec<K> = case.keys.keys(n, &mut rng);
        let salt: u64 = rng.r#gen();
        let values_in: Vec<V> = (0..n).map(|i| V::make(i, salt)).collect();
        let shape = format!("n={n}");
        let fail = |msg: String| fail(t, &case.id, &shape, seed, msg);

        let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
        if case.descending {
            t.sorter
                .sort_by_key_stable(&mut keys, &mut values, bitonic::Order::Descending)
        } else {
            t.sorter
                .sort_by_key_stable(&mut keys, &mut values, bitonic::Order::Ascending)
        }
        .map_err(|e| fail(format!("returned an error: {e}")))?;

        let mut want: Vec<(K, V)> = keys_in
            .iter()
            .copied()
            .zip(values_in.iter().copied())
            .collect();
        if case.descending {
            want.sort_by(|a, b| K::total(&b.0, &a.0));
        } else {
            want.sort_by(|a, b| K::total(&a.0, &b.0));
        }
        let want_keys: Vec<K> = want.iter().map(|p| p.0).collect();
        key_diff(&keys, &want_keys, n).map_err(fail)?;
        if let Some(i) = (0..n).find(|&i| values[i] != want[i].1) {
            return Err(fail(format!(
                "wrong value at index {i} (key {}): got {:?}, want {:?} (Rust's stable sort_by)",
                show_key(keys[i]),
                values[i],
                want[i].1
            )));
        }
    }
    Ok(())
}

pub(super) fn add_stable<K: DerivedKey, V: StableValue>(
    suite: &mut Suite,
    slot: &Slot,
    cfg: &Config,
    keys: Keys,
    top: u32,
) {
    for descending in [false, true] {
        let case = StableCase {
            id: format!(
                "stable::{}::{}::{}::{}",
                K::NAME,
                keys.name(),
                order_name(descending),
                V::NAME
            ),
            keys,
            descending,
            lengths: capped(pow_lengths(top), cfg.max_n),
        };
        let cost = case.lengths.iter().map(|&n| n as u64 * 6).sum();
        let id = case.id.clone();
        suite.add(slot, &id, cost, move |t| run_stable::<K, V>(t, &case));
    }
}
