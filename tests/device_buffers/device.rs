//! Device-resident sorts, the same trials for CUDA and OpenCL: keys, pairs, rows, rows by key
//! and their errors, through a `DeviceApi` that each backend's module implements.

use std::collections::HashMap;
use std::fmt::Debug;

use bitonic::{Error, Order, WordKey};
use libtest_mimic::{Failed, Trial};
use rand::Rng;

use crate::support::{
    Pattern, TestKey, TestValue, check_keys, expected, first_key_diff, input_seed, pair_multiset,
    rng_for, show_key, show_value, sort_pairs,
};
use crate::targets::{Slot, Target};

/// An element of a device buffer: plain data that `cust` may copy too.
#[cfg(feature = "cuda")]
pub trait Elem: bytemuck::Pod + cust::memory::DeviceCopy + Debug + Send + Sync {}
/// An element of a device buffer.
#[cfg(not(feature = "cuda"))]
pub trait Elem: bytemuck::Pod + Debug + Send + Sync {}

macro_rules! elem {
    ($($t:ty),*) => { $(impl Elem for $t {})* };
}

/// Checks that a call refused a queue, stream or buffer of another context.
pub fn foreign_result(call: &str, got: bitonic::Result<()>) -> Result<(), String> {
    match got {
        Err(Error::ForeignBuffer(_)) => Ok(()),
        other => Err(format!("{call}: want Err(ForeignBuffer), got {other:?}")),
    }
}
elem!(u8, u16, u32, i32, f32, u64, i64, f64);

/// A key type of the device-resident sorts, with what the checks need.
pub trait DevKey: TestKey + WordKey + Elem {}
impl<T: TestKey + WordKey + Elem> DevKey for T {}

/// A value type of the device-resident sorts.
pub trait DevValue: TestValue + Elem {}
impl<T: TestValue + Elem> DevValue for T {}

/// One backend's device-resident API, as the generic trials use it: buffers of the
/// caller's, filled and read on the caller's stream or queue.
pub trait DeviceApi: Sized {
    /// A device buffer of `T`.
    type Buf<T: Elem>;
    /// Whether a buffer may hold no elements (OpenCL: no).
    const EMPTY_BUFFERS: bool;
    /// The caller's side of the target: a stream or queue of the backend's context.
    fn open(t: &Target) -> Result<Self, String>;
    /// A new buffer holding `data`, its upload finished.
    fn upload<T: Elem>(&self, data: &[T]) -> Result<Self::Buf<T>, String>;
    /// The buffer's contents, after everything enqueued before.
    fn download<T: Elem>(&self, buf: &Self::Buf<T>) -> Result<Vec<T>, String>;
    fn sort<K: DevKey>(&self, keys: &mut Self::Buf<K>, order: Order) -> bitonic::Result<()>;
    fn sort_by_key<K: DevKey, V: Elem>(
        &self,
        keys: &mut Self::Buf<K>,
        values: &mut Self::Buf<V>,
        order: Order,
    ) -> bitonic::Result<()>;
    fn sort_rows<K: DevKey>(
        &self,
        keys: &mut Self::Buf<K>,
        row_len: usize,
        order: Order,
    ) -> bitonic::Result<()>;
    fn sort_rows_by_key<K: DevKey, V: Elem>(
        &self,
        keys: &mut Self::Buf<K>,
        values: &mut Self::Buf<V>,
        row_len: usize,
        order: Order,
    ) -> bitonic::Result<()>;
}

pub fn order_name(order: Order) -> &'static str {
    match order {
        Order::Ascending => "asc",
        Order::Descending => "desc",
    }
}

pub fn descending(order: Order) -> bool {
    order == Order::Descending
}

// -----------------------------------------------------------------------------------
// Inputs.

/// How the keys of one input are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// One of the suite's patterns.
    Pattern(Pattern),
    /// Edge values only: NaNs (both signs, payloads), ±0.0, ±infinity, MIN, MAX,
    /// ±MIN_POSITIVE, subnormals; MIN, MAX, 0, ±1 for integers.
    Edges,
    /// Every key different (distinct bits), in random order.
    Distinct,
}

impl Input {
    pub const ALL: [Input; 8] = [
        Input::Pattern(Pattern::Random),
        Input::Pattern(Pattern::Sorted),
        Input::Pattern(Pattern::Reversed),
        Input::Pattern(Pattern::Equal),
        Input::Pattern(Pattern::Few),
        Input::Pattern(Pattern::Special),
        Input::Edges,
        Input::Distinct,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Input::Pattern(p) => p.name(),
            Input::Edges => "edges",
            Input::Distinct => "distinct",
        }
    }

    pub fn keys<K: DevKey>(self, n: usize, rng: &mut rand::rngs::StdRng) -> Vec<K> {
        match self {
            Input::Pattern(p) => p.keys(n, rng),
            Input::Edges => (0..n).map(|_| K::special(rng)).collect(),
            Input::Distinct => {
                let salt: u64 = rng.r#gen();
                (0..n).map(|i| distinct_key::<K>(i, salt)).collect()
            }
        }
    }
}

/// Key `i` of a distinct input: an odd multiplier is a bijection on words, so distinct
/// `i` give distinct bits, and distinct bits are distinct keys (floats in `total_cmp`).
fn distinct_key<K: DevKey>(i: usize, salt: u64) -> K {
    let bytes = if size_of::<K>() == 4 {
        u64::from((i as u32).wrapping_mul(0x9E37_79B9) ^ salt as u32).to_le_bytes()
    } else {
        ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt).to_le_bytes()
    };
    bytemuck::pod_read_unaligned(&bytes[..size_of::<K>()])
}

/// Lengths of the key trials: 0 (where buffers may be empty), 1, 2, 3, 1000 and
/// 2^k - 1, 2^k, 2^k + 1 for k = 10, 13, 17.
fn key_lengths(empty: bool) -> Vec<usize> {
    let mut lengths: Vec<usize> = if empty { vec![0] } else { vec![] };
    lengths.extend([1, 2, 3, 1000]);
    for k in [10, 13, 17] {
        lengths.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    lengths
}

/// The inputs sorted at length `n`: all of them up to 2^13 + 1. Above, to keep the
/// trials short, one per length: edge values at the first large length (`large` 0),
/// then two others that change from trial to trial (`trial` numbers the key trials), so
/// that the twelve key trials together sort every input at 2^17 +- 1.
fn inputs_at(n: usize, large: usize, trial: usize) -> Vec<Input> {
    if n <= (1 << 13) + 1 {
        Input::ALL.to_vec()
    } else if large == 0 {
        vec![[Input::Edges, Input::Pattern(Pattern::Special)][trial % 2]]
    } else {
        vec![Input::ALL[(2 * trial + large) % Input::ALL.len()]]
    }
}

fn context(t: &Target, id: &str, input: Input, n: usize, seed: u64) -> String {
    format!(
        "{}::{id}: {} input, n={n}, input seed {seed:#018x} (base seed {:#x})",
        t.label,
        input.name(),
        t.seed
    )
}

// -----------------------------------------------------------------------------------
// Keys.

/// The key types, in the order of the key trials.
const KEY_NAMES: [&str; 6] = ["u32", "i32", "f32", "u64", "i64", "f64"];

fn keys_trial<D: DeviceApi, K: DevKey>(t: &Target, order: Order) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let id = format!("device::keys::{}::{}", K::NAME, order_name(order));
    let trial = KEY_NAMES.iter().position(|&k| k == K::NAME).unwrap_or(0) * 2
        + usize::from(descending(order));
    let lengths = key_lengths(D::EMPTY_BUFFERS);
    let first_large = lengths.iter().position(|&n| n > (1 << 13) + 1).unwrap_or(0);
    for (i, n) in lengths.into_iter().enumerate() {
        for input in inputs_at(n, i.saturating_sub(first_large), trial) {
            let seed = input_seed(t.seed, &format!("{id}::{}", input.name()), n);
            let at = context(t, &id, input, n, seed);
            let keys_in: Vec<K> = input.keys(n, &mut rng_for(seed));
            let want = expected(&keys_in, descending(order));
            let mut keys = dev.upload(&keys_in).map_err(|e| format!("{at}: {e}"))?;
            dev.sort(&mut keys, order)
                .map_err(|e| format!("{at}: sort_device returned {e:?}"))?;
            let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
            check_keys(&got, &want).map_err(|e| format!("{at}: {e}"))?;
        }
    }
    Ok(())
}

// -----------------------------------------------------------------------------------
// Pairs.

/// The checks of a key-value result: keys sorted; the pairs a permutation of the input
/// pairs; with distinct keys each value where its key went; and, where keys repeat, the
/// same keys and values, bit for bit, as the host-slice sort of the same backend.
fn check_pairs<K: DevKey, V: DevValue>(
    t: &Target,
    keys_in: &[K],
    values_in: &[V],
    keys: &[K],
    values: &[V],
    order: Order,
) -> Result<(), String> {
    let want = expected(keys_in, descending(order));
    check_keys(keys, &want)?;
    let before = pair_multiset(keys_in, values_in);
    if pair_multiset(keys, values) != before {
        let stray = keys
            .iter()
            .zip(values)
            .position(|(k, v)| before.binary_search(&(k.bits(), v.bits())).is_err());
        return Err(match stray {
            Some(i) => format!(
                "output pair {i} (key {}, value {}) is not a pair of the input",
                show_key(keys[i]),
                show_value(values[i])
            ),
            None => "an input pair is missing and another one is duplicated".to_string(),
        });
    }
    let keys_repeat = want.windows(2).any(|w| w[0].bits() == w[1].bits());
    if !keys_repeat {
        // Distinct keys: the value of every position is known.
        let of: HashMap<u64, u64> = keys_in
            .iter()
            .zip(values_in)
            .map(|(k, v)| (k.bits(), v.bits()))
            .collect();
        if let Some(i) = (0..keys.len()).find(|&i| of[&want[i].bits()] != values[i].bits()) {
            return Err(format!(
                "value {i} is {}, but key {} came with value bits {:#x}",
                show_value(values[i]),
                show_key(want[i]),
                of[&want[i].bits()]
            ));
        }
        return Ok(());
    }
    let (mut host_keys, mut host_values) = (keys_in.to_vec(), values_in.to_vec());
    sort_pairs(
        &t.sorter,
        &mut host_keys,
        &mut host_values,
        descending(order),
    )
    .map_err(|e| format!("the host-slice sort returned {e:?}"))?;
    same_as_host(keys, values, &host_keys, &host_values)
}

/// The device result equals the host-slice sort's, keys and values, bit for bit.
fn same_as_host<K: DevKey, V: DevValue>(
    keys: &[K],
    values: &[V],
    host_keys: &[K],
    host_values: &[V],
) -> Result<(), String> {
    let differs = (0..keys.len()).find(|&i| {
        keys[i].bits() != host_keys[i].bits() || values[i].bits() != host_values[i].bits()
    });
    match differs {
        None => Ok(()),
        Some(i) => Err(format!(
            "differs from the host-slice sort of the same backend at index {i}: key {} \
             value {}, the host-slice sort has key {} value {}",
            show_key(keys[i]),
            show_value(values[i]),
            show_key(host_keys[i]),
            show_value(host_values[i])
        )),
    }
}

/// Lengths of the pair trials: fewer than for keys.
fn pair_lengths(empty: bool) -> Vec<usize> {
    let mut lengths: Vec<usize> = if empty { vec![0] } else { vec![] };
    lengths.extend([1, 2, 3, 1000, 1023, 1024, 8193, (1 << 17) + 1]);
    lengths
}

fn pairs_trial<D: DeviceApi, K: DevKey, V: DevValue>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    for order in [Order::Ascending, Order::Descending] {
        let id = format!(
            "device::pairs::{}_{}::{}",
            K::NAME,
            V::NAME,
            order_name(order)
        );
        for (turn, n) in pair_lengths(D::EMPTY_BUFFERS).into_iter().enumerate() {
            let inputs = if n <= 1024 {
                Input::ALL.to_vec()
            } else if n <= (1 << 13) + 1 {
                // Ties (checked against the host-slice sort), distinct keys (values
                // checked exactly), edge values.
                let third = [Input::Edges, Input::Pattern(Pattern::Special)][turn % 2];
                vec![Input::Pattern(Pattern::Few), Input::Distinct, third]
            } else if descending(order) {
                vec![Input::Distinct]
            } else {
                vec![Input::Pattern(Pattern::Few)]
            };
            for input in inputs {
                let seed = input_seed(t.seed, &format!("{id}::{}", input.name()), n);
                let at = context(t, &id, input, n, seed);
                let mut rng = rng_for(seed);
                let keys_in: Vec<K> = input.keys(n, &mut rng);
                let salt: u64 = rng.r#gen();
                let values_in: Vec<V> = (0..n).map(|i| V::make(i, salt)).collect();
                let fail = |e: String| format!("{at}: {e}");
                let mut keys = dev.upload(&keys_in).map_err(fail)?;
                let mut values = dev.upload(&values_in).map_err(fail)?;
                dev.sort_by_key(&mut keys, &mut values, order)
                    .map_err(|e| fail(format!("sort_device_by_key returned {e:?}")))?;
                let got_keys = dev.download(&keys).map_err(fail)?;
                let got_values = dev.download(&values).map_err(fail)?;
                check_pairs(t, &keys_in, &values_in, &got_keys, &got_values, order)
                    .map_err(fail)?;
            }
        }
    }
    Ok(())
}

// -----------------------------------------------------------------------------------
// Rows.

/// (row length, rows): one-key rows, tiny rows, many short rows, rows around and above
/// a tile, and two rows longer than any tile.
fn row_shapes(empty: bool) -> Vec<(usize, usize)> {
    let mut shapes = vec![
        (1, 1000),
        (2, 501),
        (3, 333),
        (5, 20_000),
        (1000, 7),
        (8193, 3),
        (70_000, 2),
    ];
    if empty {
        shapes.push((4, 0));
    }
    shapes
}

fn check_rows<K: DevKey>(
    got: &[K],
    input: &[K],
    row_len: usize,
    order: Order,
) -> Result<(), String> {
    for (r, (got_row, in_row)) in got.chunks(row_len).zip(input.chunks(row_len)).enumerate() {
        check_keys(got_row, &expected(in_row, descending(order)))
            .map_err(|e| format!("row {r}: {e}"))?;
    }
    Ok(())
}

fn rows_trial<D: DeviceApi, K: DevKey>(t: &Target, order: Order) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let id = format!("device::rows::{}::{}", K::NAME, order_name(order));
    for (turn, (row_len, rows)) in row_shapes(D::EMPTY_BUFFERS).into_iter().enumerate() {
        let n = row_len * rows;
        let input = [
            Input::Pattern(Pattern::Special),
            Input::Pattern(Pattern::Few),
        ][turn % 2];
        let seed = input_seed(t.seed, &id, n * 31 + row_len);
        let at = format!("{} (rows of {row_len})", context(t, &id, input, n, seed));
        let keys_in: Vec<K> = input.keys(n, &mut rng_for(seed));
        let mut keys = dev.upload(&keys_in).map_err(|e| format!("{at}: {e}"))?;
        dev.sort_rows(&mut keys, row_len, order)
            .map_err(|e| format!("{at}: sort_device_rows returned {e:?}"))?;
        let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
        check_rows(&got, &keys_in, row_len, order).map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(())
}

fn rows_by_key_trial<D: DeviceApi, K: DevKey, V: DevValue>(
    t: &Target,
    order: Order,
) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let id = format!(
        "device::rows_by_key::{}_{}::{}",
        K::NAME,
        V::NAME,
        order_name(order)
    );
    for (turn, (row_len, rows)) in row_shapes(D::EMPTY_BUFFERS).into_iter().enumerate() {
        let n = row_len * rows;
        let input = [
            Input::Pattern(Pattern::Few),
            Input::Pattern(Pattern::Special),
        ][turn % 2];
        let seed = input_seed(t.seed, &id, n * 31 + row_len);
        let at = format!("{} (rows of {row_len})", context(t, &id, input, n, seed));
        let fail = |e: String| format!("{at}: {e}");
        let mut rng = rng_for(seed);
        let keys_in: Vec<K> = input.keys(n, &mut rng);
        let salt: u64 = rng.r#gen();
        let values_in: Vec<V> = (0..n).map(|i| V::make(i, salt)).collect();
        let mut keys = dev.upload(&keys_in).map_err(fail)?;
        let mut values = dev.upload(&values_in).map_err(fail)?;
        dev.sort_rows_by_key(&mut keys, &mut values, row_len, order)
            .map_err(|e| fail(format!("sort_device_rows_by_key returned {e:?}")))?;
        let got_keys = dev.download(&keys).map_err(fail)?;
        let got_values = dev.download(&values).map_err(fail)?;
        check_rows(&got_keys, &keys_in, row_len, order).map_err(fail)?;
        for r in 0..rows {
            let span = r * row_len..(r + 1) * row_len;
            if pair_multiset(&got_keys[span.clone()], &got_values[span.clone()])
                != pair_multiset(&keys_in[span.clone()], &values_in[span])
            {
                return Err(fail(format!(
                    "row {r}: the pairs are not a permutation of the row's input pairs"
                ))
                .into());
            }
        }
        let (mut host_keys, mut host_values) = (keys_in.clone(), values_in.clone());
        let host = if descending(order) {
            t.sorter.sort_rows_by_key(
                &mut host_keys,
                &mut host_values,
                row_len,
                bitonic::Order::Descending,
            )
        } else {
            t.sorter.sort_rows_by_key(
                &mut host_keys,
                &mut host_values,
                row_len,
                bitonic::Order::Ascending,
            )
        };
        host.map_err(|e| fail(format!("the host-slice sort_rows_by_key returned {e:?}")))?;
        same_as_host(&got_keys, &got_values, &host_keys, &host_values).map_err(fail)?;
    }
    Ok(())
}

// -----------------------------------------------------------------------------------
// Errors of shape: the error, and the buffers unchanged.

/// The buffers hold what they held before the failed call.
fn unchanged<D: DeviceApi, K: DevKey, V: Elem>(
    dev: &D,
    call: &str,
    keys: &D::Buf<K>,
    keys_in: &[K],
    values: Option<(&D::Buf<V>, &[V])>,
) -> Result<(), String> {
    let got = dev.download(keys).map_err(|e| format!("{call}: {e}"))?;
    if first_key_diff(&got, keys_in).is_some() {
        return Err(format!("{call}: the call failed but changed the keys"));
    }
    if let Some((buf, values_in)) = values {
        let got = dev.download(buf).map_err(|e| format!("{call}: {e}"))?;
        if bytemuck::cast_slice::<V, u8>(&got) != bytemuck::cast_slice::<V, u8>(values_in) {
            return Err(format!("{call}: the call failed but changed the values"));
        }
    }
    Ok(())
}

fn expect_error(call: &str, got: bitonic::Result<()>, want: &Error) -> Result<(), String> {
    match got {
        Err(e) if &e == want => Ok(()),
        other => Err(format!("{call}: want Err({want:?}), got {other:?}")),
    }
}

fn mismatch<D: DeviceApi, K: DevKey, V: DevValue>(
    t: &Target,
    dev: &D,
    n_keys: usize,
    n_values: usize,
) -> Result<(), String> {
    let seed = input_seed(t.seed, "device::errors::mismatch", n_keys * 7919 + n_values);
    let keys_in: Vec<K> = Pattern::Random.keys(n_keys, &mut rng_for(seed));
    let values_in: Vec<V> = (0..n_values).map(|i| V::make(i, seed)).collect();
    let mut keys = dev.upload(&keys_in)?;
    let mut values = dev.upload(&values_in)?;
    let want = Error::LengthMismatch {
        keys: n_keys,
        values: n_values,
    };
    for order in [Order::Ascending, Order::Descending] {
        let call = format!(
            "{}: sort_device_by_key of {n_keys} {} keys and {n_values} {} values, {}",
            t.label,
            K::NAME,
            V::NAME,
            order_name(order)
        );
        let got = dev.sort_by_key(&mut keys, &mut values, order);
        expect_error(&call, got, &want)?;
        unchanged(dev, &call, &keys, &keys_in, Some((&values, &values_in[..])))?;
    }
    let call = format!(
        "{}: sort_device_rows_by_key of {n_keys} {} keys and {n_values} {} values, rows of 1",
        t.label,
        K::NAME,
        V::NAME
    );
    let got = dev.sort_rows_by_key(&mut keys, &mut values, 1, Order::Ascending);
    expect_error(&call, got, &want)?;
    unchanged(dev, &call, &keys, &keys_in, Some((&values, &values_in[..])))
}

fn bad_rows<D: DeviceApi>(t: &Target, dev: &D) -> Result<(), String> {
    let n = 1000;
    let seed = input_seed(t.seed, "device::errors::rows", n);
    let keys_in: Vec<f32> = Pattern::Special.keys(n, &mut rng_for(seed));
    let values_in: Vec<u64> = (0..n).map(|i| u64::make(i, seed)).collect();
    let mut keys = dev.upload(&keys_in)?;
    let mut values = dev.upload(&values_in)?;
    for row_len in [0, 3, 7, 999, 1001, 2000] {
        for order in [Order::Ascending, Order::Descending] {
            let call = format!(
                "{}: sort_device_rows of {n} keys in rows of {row_len}, {}",
                t.label,
                order_name(order)
            );
            match dev.sort_rows(&mut keys, row_len, order) {
                Err(Error::InvalidConfig(_)) => {}
                other => return Err(format!("{call}: want Err(InvalidConfig), got {other:?}")),
            }
            unchanged::<D, f32, u64>(dev, &call, &keys, &keys_in, None)?;
            let call = format!("{call} (with values)");
            match dev.sort_rows_by_key(&mut keys, &mut values, row_len, order) {
                Err(Error::InvalidConfig(_)) => {}
                other => return Err(format!("{call}: want Err(InvalidConfig), got {other:?}")),
            }
            unchanged(dev, &call, &keys, &keys_in, Some((&values, &values_in[..])))?;
        }
    }
    Ok(())
}

fn value_size<D: DeviceApi, V: Elem + Default>(t: &Target, dev: &D) -> Result<(), String> {
    let bytes = size_of::<V>();
    for n in [1usize, 2, 1000] {
        let seed = input_seed(t.seed, "device::errors::value_size", n * 16 + bytes);
        let keys_in: Vec<u64> = Pattern::Random.keys(n, &mut rng_for(seed));
        let values_in = vec![V::default(); n];
        let mut keys = dev.upload(&keys_in)?;
        let mut values = dev.upload(&values_in)?;
        let want = Error::UnsupportedValueSize { bytes };
        for order in [Order::Ascending, Order::Descending] {
            let call = format!(
                "{}: sort_device_by_key of {n} u64 keys with {bytes}-byte values, {}",
                t.label,
                order_name(order)
            );
            let got = dev.sort_by_key(&mut keys, &mut values, order);
            expect_error(&call, got, &want)?;
            unchanged(dev, &call, &keys, &keys_in, Some((&values, &values_in[..])))?;
            let call = format!("{call} (rows of 1)");
            let got = dev.sort_rows_by_key(&mut keys, &mut values, 1, order);
            expect_error(&call, got, &want)?;
            unchanged(dev, &call, &keys, &keys_in, Some((&values, &values_in[..])))?;
        }
    }
    Ok(())
}

fn shape_errors<D: DeviceApi>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    for (n_keys, n_values) in [(100, 99), (99, 100), (1, 2), (2, 1), (5000, 4999)] {
        mismatch::<D, u32, u32>(t, &dev, n_keys, n_values)?;
        mismatch::<D, f64, u64>(t, &dev, n_keys, n_values)?;
        mismatch::<D, i64, u32>(t, &dev, n_keys, n_values)?;
    }
    if D::EMPTY_BUFFERS {
        mismatch::<D, u32, u32>(t, &dev, 0, 1)?;
        mismatch::<D, u32, u32>(t, &dev, 1, 0)?;
    }
    bad_rows(t, &dev)?;
    value_size::<D, u16>(t, &dev)?;
    value_size::<D, u8>(t, &dev)?;
    Ok(())
}

// -----------------------------------------------------------------------------------
// Registration.

/// The trials every device-resident backend gets.
pub fn register<D: DeviceApi + 'static>(slot: &Slot, trials: &mut Vec<Trial>) {
    for order in [Order::Ascending, Order::Descending] {
        let o = order_name(order);
        trials.push(slot.trial(&format!("device::keys::u32::{o}"), move |t| {
            keys_trial::<D, u32>(t, order)
        }));
        trials.push(slot.trial(&format!("device::keys::i32::{o}"), move |t| {
            keys_trial::<D, i32>(t, order)
        }));
        trials.push(slot.trial(&format!("device::keys::f32::{o}"), move |t| {
            keys_trial::<D, f32>(t, order)
        }));
        trials.push(slot.trial(&format!("device::keys::u64::{o}"), move |t| {
            keys_trial::<D, u64>(t, order)
        }));
        trials.push(slot.trial(&format!("device::keys::i64::{o}"), move |t| {
            keys_trial::<D, i64>(t, order)
        }));
        trials.push(slot.trial(&format!("device::keys::f64::{o}"), move |t| {
            keys_trial::<D, f64>(t, order)
        }));
    }
    trials.push(slot.trial("device::pairs::u32_u32", pairs_trial::<D, u32, u32>));
    trials.push(slot.trial("device::pairs::i32_u64", pairs_trial::<D, i32, u64>));
    trials.push(slot.trial("device::pairs::f32_u32", pairs_trial::<D, f32, u32>));
    trials.push(slot.trial("device::pairs::u64_u64", pairs_trial::<D, u64, u64>));
    trials.push(slot.trial("device::pairs::i64_u32", pairs_trial::<D, i64, u32>));
    trials.push(slot.trial("device::pairs::f64_u64", pairs_trial::<D, f64, u64>));

    trials.push(slot.trial("device::rows::u32::asc", |t| {
        rows_trial::<D, u32>(t, Order::Ascending)
    }));
    trials.push(slot.trial("device::rows::f64::desc", |t| {
        rows_trial::<D, f64>(t, Order::Descending)
    }));
    trials.push(slot.trial("device::rows::i32::desc", |t| {
        rows_trial::<D, i32>(t, Order::Descending)
    }));
    trials.push(slot.trial("device::rows_by_key::f32_u32::asc", |t| {
        rows_by_key_trial::<D, f32, u32>(t, Order::Ascending)
    }));
    trials.push(slot.trial("device::rows_by_key::i64_u64::desc", |t| {
        rows_by_key_trial::<D, i64, u64>(t, Order::Descending)
    }));
    trials.push(slot.trial("device::rows_by_key::u32_u64::desc", |t| {
        rows_by_key_trial::<D, u32, u64>(t, Order::Descending)
    }));

    trials.push(slot.trial("device::errors::shapes", shape_errors::<D>));
}

/// Random keys and distinct values for the backend-specific trials.
pub fn random_pairs(t: &Target, what: &str, n: usize) -> (Vec<u64>, Vec<u32>) {
    let seed = input_seed(t.seed, what, n);
    let mut rng = rng_for(seed);
    let keys = Pattern::Special.keys(n, &mut rng);
    let values = (0..n).map(|i| u32::make(i, seed)).collect();
    (keys, values)
}

/// Checks a sorted (u64, u32) result against its input.
pub fn check_sorted_pairs(
    t: &Target,
    keys_in: &[u64],
    values_in: &[u32],
    keys: &[u64],
    values: &[u32],
    order: Order,
) -> Result<(), String> {
    check_pairs(t, keys_in, values_in, keys, values, order)
}
