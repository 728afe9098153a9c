//! Sorting keys that already live in device memory: `CudaBackend::sort_device*` on `cust`
//! slices and a caller's stream, `OpenClBackend::sort_device*` on `opencl3` buffers and a
//! caller's queue; and the device buffers that sorts of host slices keep between calls.
//!
//! Trials, per target (`cuda0`, `opencl0`, ...; the CPU target `cpu0` gets only `workspace`):
//! - `device::keys::<key>::<asc|desc>`: every `WordKey` type (u32 i32 f32 u64 i64 f64) in
//!   both orders, at lengths 0 (CUDA only: OpenCL has no empty buffers), 1, 2, 3, 1000 and
//!   2^k - 1, 2^k, 2^k + 1 for k = 10, 13, 17 (2^17 takes several passes on every device).
//!   Up to 2^13 + 1 every input: random, sorted, reversed, all equal, three values, half
//!   edge values, edge values only (NaNs of both signs with payloads, ±0.0, ±infinity, MIN,
//!   MAX, subnormals) and distinct keys; at 2^17 +- 1 one input per length (edge values,
//!   then two that change from trial to trial). Checked bit for bit against `sort_unstable`
//!   / `sort_by(total_cmp)`, reversed for descending.
//! - `device::pairs::<key>_<value>`: `sort_device_by_key` with u32 and u64 values, both
//!   orders, lengths up to 2^17 + 1: keys sorted, the output pairs a permutation of the
//!   input pairs, with distinct keys every value exactly where its key went, and where keys
//!   repeat the result equal bit for bit (values too) to the same backend's sort of host
//!   slices (the same network runs in both).
//! - `device::rows::<key>::<order>`, `device::rows_by_key::<key>_<value>::<order>`: rows of
//!   1, 2, 3, 5 (20_000 rows), 1000, 8193 and 70_000 keys (longer than any tile); every row
//!   checked, and the key-value result equal to the host-slice `sort_rows_by_key`.
//! - `device::sub_range`: a sort of part of a larger allocation (a cust sub-slice, an OpenCL
//!   sub-buffer) touches nothing outside it.
//! - `device::queue_order`: the sort runs after an asynchronous upload enqueued on the same
//!   stream or queue, and a read enqueued after it sees the sorted data.
//! - `device::errors::shapes`: keys and values of different lengths (`LengthMismatch`), rows
//!   that do not divide the keys (`InvalidConfig`), values of 1 and 2 bytes
//!   (`UnsupportedValueSize`); each error leaves the buffers as they were.
//! - `device::errors::foreign`: OpenCL: a queue of a second context on the same device, key
//!   and value buffers of that context, a buffer of 7 bytes typed `u32` and one of 12 bytes
//!   typed `u64`; CUDA: a stream and memory of a non-primary context. All `ForeignBuffer`,
//!   the buffers unchanged.
//! - OpenCL only: `device::out_of_order_queue` (an out-of-order queue: a correct sort or an
//!   error, never a wrong result). CUDA only: `device::stream_ordered_alloc` (keys and
//!   values allocated with `cuMemAllocAsync` on the caller's stream).
//! - `workspace`: one new sorter sorts 1000, 100_000, 10 and 50_000 keys, then as many
//!   pairs: all correct; `cached_device_bytes()` is 0 on the CPU and on a GPU covers the
//!   largest sort, never shrinks, and is no larger than the largest key and value arrays so
//!   far; after `release_device_memory()` it is 0 and the next sort works and allocates
//!   again.
//!
//! Targets and gating are the suite's (`support/targets.rs`): a backend compiled in but
//! unavailable (CUDA without a GPU) has its trials listed as ignored with the reason;
//! `BITONIC_REQUIRE=cuda` makes that a failing `require::cuda`; `BITONIC_TEST_BACKENDS`,
//! `BITONIC_TEST_SEED` and `BITONIC_TEST_TIMES` work as for the suite.

#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use bitonic::{BackendKind, Sorter};
use libtest_mimic::{Arguments, Failed};
use support::{Pattern, check_keys, expected, input_seed, pair_multiset, rng_for};
use targets::{Slot, Target};

// ---------------------------------------------------------------------------------------
// The workspace of host-slice sorts, on every target.

/// What a sort of host slices may keep on the device, checked after each sort.
struct Workspace<'a> {
    sorter: &'a Sorter,
    label: &'a str,
    gpu: bool,
    /// The largest key array and the largest value array sorted so far, in bytes.
    max_keys: u64,
    max_values: u64,
    /// The largest single sort so far (keys plus values), in bytes.
    max_sort: u64,
    /// The last reading.
    last: u64,
}

impl Workspace<'_> {
    fn observe(&mut self, what: &str, key_bytes: u64, value_bytes: u64) -> Result<(), String> {
        let cached = self.sorter.cached_device_bytes();
        let at = format!("{}::workspace: after {what}", self.label);
        if !self.gpu {
            return match cached {
                0 => Ok(()),
                c => Err(format!(
                    "{at}: the CPU backend reports {c} cached device bytes"
                )),
            };
        }
        self.max_keys = self.max_keys.max(key_bytes);
        self.max_values = self.max_values.max(value_bytes);
        self.max_sort = self.max_sort.max(key_bytes + value_bytes);
        if cached < self.max_sort {
            return Err(format!(
                "{at}: cached_device_bytes() = {cached}, less than the largest sort so far \
                 ({} bytes of keys and values)",
                self.max_sort
            ));
        }
        if cached < self.last {
            return Err(format!(
                "{at}: cached_device_bytes() shrank from {} to {cached}",
                self.last
            ));
        }
        let bound = self.max_keys + self.max_values;
        if cached > bound {
            return Err(format!(
                "{at}: cached_device_bytes() = {cached}, more than the largest key array \
                 plus the largest value array so far ({} + {} bytes)",
                self.max_keys, self.max_values
            ));
        }
        self.last = cached;
        Ok(())
    }

    fn release(&mut self) -> Result<(), String> {
        self.sorter.release_device_memory();
        let cached = self.sorter.cached_device_bytes();
        if cached != 0 {
            return Err(format!(
                "{}::workspace: cached_device_bytes() = {cached} after release_device_memory()",
                self.label
            ));
        }
        (self.max_keys, self.max_values, self.max_sort, self.last) = (0, 0, 0, 0);
        Ok(())
    }
}

fn workspace_keys(ws: &mut Workspace<'_>, seed: u64, n: usize) -> Result<(), String> {
    let input: Vec<u32> = Pattern::Random.keys(n, &mut rng_for(input_seed(seed, "ws", n)));
    let mut got = input.clone();
    ws.sorter
        .sort(&mut got)
        .map_err(|e| format!("{}::workspace: sort of {n} u32 keys: {e}", ws.label))?;
    check_keys(&got, &expected(&input, false))
        .map_err(|e| format!("{}::workspace: sort of {n} u32 keys: {e}", ws.label))?;
    ws.observe(&format!("sorting {n} u32 keys"), n as u64 * 4, 0)
}

fn workspace_pairs(ws: &mut Workspace<'_>, seed: u64, n: usize) -> Result<(), String> {
    let keys_in: Vec<i64> = Pattern::Few.keys(n, &mut rng_for(input_seed(seed, "ws-pairs", n)));
    let values_in: Vec<u64> = (0..n as u64).collect();
    let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
    let what = format!("sorting {n} i64 keys with u64 values");
    let fail = |e: String| format!("{}::workspace: {what}: {e}", ws.label);
    ws.sorter
        .sort_by_key_descending(&mut keys, &mut values)
        .map_err(|e| fail(e.to_string()))?;
    check_keys(&keys, &expected(&keys_in, true)).map_err(fail)?;
    if pair_multiset(&keys, &values) != pair_multiset(&keys_in, &values_in) {
        return Err(fail(
            "the pairs are not a permutation of the input pairs".into(),
        ));
    }
    ws.observe(&what, n as u64 * 8, n as u64 * 8)
}

/// One new sorter: keys, then pairs, of 1000, 100_000, 10 and 50_000 elements; then a
/// release and one more sort.
fn workspace(t: &Target) -> Result<(), Failed> {
    let sorter = t
        .open_another()
        .map_err(|e| format!("{}: opening a second sorter: {e}", t.label))?;
    let mut ws = Workspace {
        sorter: &sorter,
        label: &t.label,
        gpu: t.info.backend != BackendKind::Cpu,
        max_keys: 0,
        max_values: 0,
        max_sort: 0,
        last: 0,
    };
    ws.observe("opening the sorter", 0, 0)?;
    if ws.gpu && sorter.cached_device_bytes() != 0 {
        return Err(format!(
            "{}::workspace: a new sorter already caches device memory",
            t.label
        )
        .into());
    }
    const SIZES: [usize; 4] = [1000, 100_000, 10, 50_000];
    for n in SIZES {
        workspace_keys(&mut ws, t.seed, n)?;
    }
    for n in SIZES {
        workspace_pairs(&mut ws, t.seed, n)?;
    }
    ws.release()?;
    workspace_pairs(&mut ws, t.seed, 50_000)?;
    if ws.gpu && sorter.cached_device_bytes() == 0 {
        return Err(format!(
            "{}::workspace: the sort after release_device_memory() kept no device memory",
            t.label
        )
        .into());
    }
    workspace_keys(&mut ws, t.seed, 1000)?;
    ws.release()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Device-resident sorts, the same trials for CUDA and OpenCL.

#[cfg(any(feature = "cuda", feature = "opencl"))]
mod device {
    use std::collections::HashMap;
    use std::fmt::Debug;

    use bitonic::{Error, Order, WordKey};
    use libtest_mimic::{Failed, Trial};
    use rand::Rng;

    use crate::support::{
        Pattern, TestKey, TestValue, check_keys, expected, first_key_diff, input_seed,
        pair_multiset, rng_for, show_key, show_value, sort_pairs,
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
                t.sorter
                    .sort_rows_by_key_descending(&mut host_keys, &mut host_values, row_len)
            } else {
                t.sorter
                    .sort_rows_by_key(&mut host_keys, &mut host_values, row_len)
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
}

// ---------------------------------------------------------------------------------------
// OpenCL.

#[cfg(feature = "opencl")]
mod opencl {
    use std::ptr;
    use std::sync::Arc;

    use bitonic::opencl::OpenClBackend;
    use bitonic::{Order, Sorter};
    use libtest_mimic::{Failed, Trial};
    use opencl3::command_queue::{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CommandQueue};
    use opencl3::context::Context;
    use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
    use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};

    use crate::device::{
        DevKey, DeviceApi, Elem, check_sorted_pairs, foreign_result, random_pairs,
        register as register_device,
    };
    use crate::support::{check_keys, expected};
    use crate::targets::{Slot, Target};

    /// The caller's side: a queue of its own on the backend's context.
    pub struct ClDev {
        queue: CommandQueue,
        sorter: Arc<Sorter>,
    }

    impl ClDev {
        fn cl(&self) -> &OpenClBackend {
            self.sorter.opencl().expect("checked by open")
        }
    }

    /// A buffer of `context` holding `data` (blocking write on `queue`).
    fn buffer_in<T: Elem>(
        context: &Context,
        queue: &CommandQueue,
        data: &[T],
    ) -> Result<Buffer<T>, String> {
        if data.is_empty() {
            return Err("OpenCL buffers cannot be empty".to_string());
        }
        // SAFETY: no host pointer (null, with flags that use none); the size is nonzero.
        let mut buffer =
            unsafe { Buffer::<T>::create(context, CL_MEM_READ_WRITE, data.len(), ptr::null_mut()) }
                .map_err(|e| format!("clCreateBuffer: {e}"))?;
        // SAFETY: a blocking write of exactly the buffer's size from a live slice.
        unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, data, &[]) }
            .map_err(|e| format!("clEnqueueWriteBuffer: {e}"))?;
        Ok(buffer)
    }

    /// The whole buffer, read with a blocking read on `queue` (after what it holds before).
    fn read<T: Elem>(queue: &CommandQueue, buffer: &Buffer<T>) -> Result<Vec<T>, String> {
        let bytes = buffer
            .size()
            .map_err(|e| format!("clGetMemObjectInfo: {e}"))?;
        let mut data = vec![T::zeroed(); bytes / size_of::<T>()];
        // SAFETY: a blocking read of at most the buffer's bytes into a live slice.
        unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut data, &[]) }
            .map_err(|e| format!("clEnqueueReadBuffer: {e}"))?;
        Ok(data)
    }

    impl DeviceApi for ClDev {
        type Buf<T: Elem> = Buffer<T>;
        const EMPTY_BUFFERS: bool = false;

        fn open(t: &Target) -> Result<Self, String> {
            let cl = t
                .sorter
                .opencl()
                .ok_or_else(|| format!("{}: the sorter is not an OpenCL backend", t.label))?;
            let queue = CommandQueue::create_default(cl.context(), 0)
                .map_err(|e| format!("clCreateCommandQueue: {e}"))?;
            Ok(ClDev {
                queue,
                sorter: Arc::clone(&t.sorter),
            })
        }

        fn upload<T: Elem>(&self, data: &[T]) -> Result<Buffer<T>, String> {
            buffer_in(self.cl().context(), &self.queue, data)
        }

        fn download<T: Elem>(&self, buf: &Buffer<T>) -> Result<Vec<T>, String> {
            read(&self.queue, buf)
        }

        fn sort<K: DevKey>(&self, keys: &mut Buffer<K>, order: Order) -> bitonic::Result<()> {
            self.cl().sort_device(keys, order, &self.queue)
        }

        fn sort_by_key<K: DevKey, V: Elem>(
            &self,
            keys: &mut Buffer<K>,
            values: &mut Buffer<V>,
            order: Order,
        ) -> bitonic::Result<()> {
            self.cl()
                .sort_device_by_key(keys, values, order, &self.queue)
        }

        fn sort_rows<K: DevKey>(
            &self,
            keys: &mut Buffer<K>,
            row_len: usize,
            order: Order,
        ) -> bitonic::Result<()> {
            self.cl()
                .sort_device_rows(keys, row_len, order, &self.queue)
        }

        fn sort_rows_by_key<K: DevKey, V: Elem>(
            &self,
            keys: &mut Buffer<K>,
            values: &mut Buffer<V>,
            row_len: usize,
            order: Order,
        ) -> bitonic::Result<()> {
            self.cl()
                .sort_device_rows_by_key(keys, values, row_len, order, &self.queue)
        }
    }

    /// A queue and buffers of a second context on the same device; buffers whose size is
    /// not a whole number of elements.
    fn foreign(t: &Target) -> Result<(), Failed> {
        let dev = ClDev::open(t)?;
        let cl = dev.cl();
        let label = &t.label;
        let device = opencl3::device::Device::new(cl.device_id());
        let other = Context::from_device(&device).map_err(|e| format!("clCreateContext: {e}"))?;
        let other_queue = CommandQueue::create_default(&other, 0)
            .map_err(|e| format!("clCreateCommandQueue: {e}"))?;
        let n = 5000;
        let (keys_in, values_in) = random_pairs(t, "device::errors::foreign", n);
        let mut keys = dev.upload(&keys_in)?;
        let mut values = dev.upload(&values_in)?;
        let mut other_keys = buffer_in(&other, &other_queue, &keys_in)?;
        let mut other_values = buffer_in(&other, &other_queue, &values_in)?;
        let (q, oq) = (&dev.queue, &other_queue);
        for order in [Order::Ascending, Order::Descending] {
            let calls: [(&str, bitonic::Result<()>); 9] = [
                (
                    "sort_device: own keys, queue of another context",
                    cl.sort_device(&mut keys, order, oq),
                ),
                (
                    "sort_device_by_key: own buffers, queue of another context",
                    cl.sort_device_by_key(&mut keys, &mut values, order, oq),
                ),
                (
                    "sort_device_rows: own keys, queue of another context",
                    cl.sort_device_rows(&mut keys, 100, order, oq),
                ),
                (
                    "sort_device_rows_by_key: own buffers, queue of another context",
                    cl.sort_device_rows_by_key(&mut keys, &mut values, 100, order, oq),
                ),
                (
                    "sort_device: keys of another context, own queue",
                    cl.sort_device(&mut other_keys, order, q),
                ),
                (
                    "sort_device: keys and queue of another context",
                    cl.sort_device(&mut other_keys, order, oq),
                ),
                (
                    "sort_device_by_key: values of another context",
                    cl.sort_device_by_key(&mut keys, &mut other_values, order, q),
                ),
                (
                    "sort_device_by_key: keys of another context",
                    cl.sort_device_by_key(&mut other_keys, &mut values, order, q),
                ),
                (
                    "sort_device_rows_by_key: values of another context",
                    cl.sort_device_rows_by_key(&mut keys, &mut other_values, 1000, order, q),
                ),
            ];
            for (call, got) in calls {
                foreign_result(&format!("{label}: {call}"), got)?;
            }
        }
        let untouched = |what: &str, same: bool| -> Result<(), String> {
            match same {
                true => Ok(()),
                false => Err(format!("{label}: ForeignBuffer calls changed the {what}")),
            }
        };
        untouched("keys", read(q, &keys)? == keys_in)?;
        untouched("values", read(q, &values)? == values_in)?;
        untouched("other context's keys", read(oq, &other_keys)? == keys_in)?;
        untouched(
            "other context's values",
            read(oq, &other_values)? == values_in,
        )?;

        // Buffers whose byte size is not a whole number of elements: 7 bytes typed u32,
        // 12 bytes typed u64.
        let raw = |bytes: usize| -> Result<opencl3::types::cl_mem, String> {
            // SAFETY: a plain allocation of `bytes` bytes with no host pointer; the handle is
            // handed to a `Buffer` at once, which releases it.
            unsafe {
                opencl3::memory::create_buffer(
                    cl.context().get(),
                    CL_MEM_READ_WRITE,
                    bytes,
                    ptr::null_mut(),
                )
            }
            .map_err(|code| format!("clCreateBuffer({bytes}): {code}"))
        };
        let mut odd_keys = Buffer::<u32>::new(raw(7)?);
        let mut odd_values = Buffer::<u64>::new(raw(12)?);
        let mut two_keys = dev.upload(&[9u64, 3])?;
        let mut two_values = dev.upload(&[1u32, 2])?;
        let calls: [(&str, bitonic::Result<()>); 4] = [
            (
                "sort_device of a 7-byte buffer of u32",
                cl.sort_device(&mut odd_keys, Order::Ascending, q),
            ),
            (
                "sort_device_rows of a 7-byte buffer of u32",
                cl.sort_device_rows(&mut odd_keys, 1, Order::Ascending, q),
            ),
            (
                "sort_device_by_key with a 12-byte buffer of u64 values",
                cl.sort_device_by_key(&mut two_keys, &mut odd_values, Order::Ascending, q),
            ),
            (
                "sort_device_by_key with 7-byte u32 keys",
                cl.sort_device_by_key(&mut odd_keys, &mut two_values, Order::Ascending, q),
            ),
        ];
        for (call, got) in calls {
            foreign_result(&format!("{label}: {call}"), got)?;
        }
        untouched(
            "two keys beside a 12-byte value buffer",
            read(q, &two_keys)? == [9, 3],
        )?;
        Ok(())
    }

    /// A sub-buffer in the middle of a larger buffer: sorted, and nothing outside it moved.
    fn sub_range(t: &Target) -> Result<(), Failed> {
        let dev = ClDev::open(t)?;
        let cl = dev.cl();
        // The sub-buffers start 4 KiB (values) and 8 KiB (keys) in: a multiple of every
        // device's base address alignment.
        let (before, len, after) = (1024usize, 70_001usize, 1000usize);
        let total = before + len + after;
        let (keys_in, values_in) = random_pairs(t, "device::sub_range", total);
        let keys = dev.upload(&keys_in)?;
        let values = dev.upload(&values_in)?;
        // SAFETY: the region lies within the parent buffers, at an aligned offset.
        let (mut sub_keys, mut sub_values) = unsafe {
            (
                keys.create_sub_buffer(CL_MEM_READ_WRITE, before, len),
                values.create_sub_buffer(CL_MEM_READ_WRITE, before, len),
            )
        };
        let (sub_keys, sub_values) = match (&mut sub_keys, &mut sub_values) {
            (Ok(k), Ok(v)) => (k, v),
            (Err(e), _) | (_, Err(e)) => {
                return Err(format!("{}: clCreateSubBuffer: {e}", t.label).into());
            }
        };
        cl.sort_device_by_key(sub_keys, sub_values, Order::Descending, &dev.queue)
            .map_err(|e| format!("{}: sort_device_by_key of a sub-buffer: {e:?}", t.label))?;
        let got_keys = read(&dev.queue, &keys)?;
        let got_values = read(&dev.queue, &values)?;
        let inside = before..before + len;
        if got_keys[..before] != keys_in[..before]
            || got_keys[before + len..] != keys_in[before + len..]
            || got_values[..before] != values_in[..before]
            || got_values[before + len..] != values_in[before + len..]
        {
            return Err(format!(
                "{}: sorting a sub-buffer changed the parent outside it",
                t.label
            )
            .into());
        }
        check_sorted_pairs(
            t,
            &keys_in[inside.clone()],
            &values_in[inside.clone()],
            &got_keys[inside.clone()],
            &got_values[inside],
            Order::Descending,
        )
        .map_err(|e| format!("{}: the sorted sub-buffer: {e}", t.label))?;
        // The keys alone, ascending, on the sorted sub-buffer.
        cl.sort_device(sub_keys, Order::Ascending, &dev.queue)
            .map_err(|e| format!("{}: sort_device of a sub-buffer: {e:?}", t.label))?;
        let got = read(&dev.queue, sub_keys)?;
        check_keys(&got, &expected(&keys_in[before..before + len], false))
            .map_err(|e| format!("{}: the sub-buffer sorted again: {e}", t.label))?;
        Ok(())
    }

    /// A non-blocking upload, the sort, and a blocking read, all enqueued on the caller's
    /// queue without waiting in between.
    fn queue_order(t: &Target) -> Result<(), Failed> {
        let dev = ClDev::open(t)?;
        let cl = dev.cl();
        let n = 100_003;
        let (keys_in, values_in) = random_pairs(t, "device::queue_order", n);
        // SAFETY: no host pointer; nonzero sizes.
        let (mut keys, mut values) = unsafe {
            (
                Buffer::<u64>::create(cl.context(), CL_MEM_READ_WRITE, n, ptr::null_mut()),
                Buffer::<u32>::create(cl.context(), CL_MEM_READ_WRITE, n, ptr::null_mut()),
            )
        };
        let (Ok(keys), Ok(values)) = (&mut keys, &mut values) else {
            return Err(format!("{}: clCreateBuffer failed", t.label).into());
        };
        // SAFETY: the host slices outlive the writes: the blocking reads below wait for
        // everything enqueued before them on this in-order queue.
        unsafe {
            dev.queue
                .enqueue_write_buffer(keys, CL_NON_BLOCKING, 0, &keys_in, &[])
                .map_err(|e| format!("clEnqueueWriteBuffer: {e}"))?;
            dev.queue
                .enqueue_write_buffer(values, CL_NON_BLOCKING, 0, &values_in, &[])
                .map_err(|e| format!("clEnqueueWriteBuffer: {e}"))?;
        }
        cl.sort_device_by_key(keys, values, Order::Ascending, &dev.queue)
            .map_err(|e| format!("{}: sort_device_by_key: {e:?}", t.label))?;
        let got_keys = read(&dev.queue, keys)?;
        let got_values = read(&dev.queue, values)?;
        check_sorted_pairs(
            t,
            &keys_in,
            &values_in,
            &got_keys,
            &got_values,
            Order::Ascending,
        )
        .map_err(|e| format!("{}: {e}", t.label))?;
        Ok(())
    }

    /// An out-of-order queue: the launches depend on each other, so the sort must either
    /// order them itself or refuse the queue; a wrong result is a failure.
    fn out_of_order_queue(t: &Target) -> Result<(), Failed> {
        let dev = ClDev::open(t)?;
        let cl = dev.cl();
        let queue = match CommandQueue::create_default(
            cl.context(),
            CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
        ) {
            Ok(queue) => queue,
            // A device without out-of-order queues has nothing to test.
            Err(_) => return Ok(()),
        };
        let n = (1 << 17) + 1;
        let (keys_in, values_in) = random_pairs(t, "device::out_of_order_queue", n);
        let mut keys = dev.upload(&keys_in)?;
        let mut values = dev.upload(&values_in)?;
        match cl.sort_device_by_key(&mut keys, &mut values, Order::Descending, &queue) {
            Ok(()) => {
                queue.finish().map_err(|e| format!("clFinish: {e}"))?;
                let got_keys = dev.download(&keys)?;
                let got_values = dev.download(&values)?;
                check_sorted_pairs(
                    t,
                    &keys_in,
                    &values_in,
                    &got_keys,
                    &got_values,
                    Order::Descending,
                )
                .map_err(|e| {
                    format!(
                        "{}: sort_device_by_key on an out-of-order queue returned Ok, but \
                         the result is wrong (the passes must run one after the other: the \
                         call must order them itself or refuse the queue): {e}",
                        t.label
                    )
                })?;
            }
            Err(e) => {
                if !matches!(e, bitonic::Error::Unsupported(_)) {
                    return Err(format!(
                        "{}: an out-of-order queue should be refused as unsupported, got: {e}",
                        t.label
                    )
                    .into());
                }
                if dev.download(&keys)? != keys_in || dev.download(&values)? != values_in {
                    return Err(format!(
                        "{}: sort_device_by_key on an out-of-order queue failed but changed \
                         the buffers",
                        t.label
                    )
                    .into());
                }
            }
        }
        Ok(())
    }

    pub fn register(slot: &Slot, trials: &mut Vec<Trial>) {
        register_device::<ClDev>(slot, trials);
        trials.push(slot.trial("device::errors::foreign", foreign));
        trials.push(slot.trial("device::sub_range", sub_range));
        trials.push(slot.trial("device::queue_order", queue_order));
        trials.push(slot.trial("device::out_of_order_queue", out_of_order_queue));
    }
}

#[cfg(not(feature = "opencl"))]
mod opencl {
    pub fn register(_: &crate::targets::Slot, _: &mut Vec<libtest_mimic::Trial>) {}
}

// ---------------------------------------------------------------------------------------
// CUDA.

#[cfg(feature = "cuda")]
mod cuda {
    use std::sync::Arc;

    use bitonic::cuda::CudaBackend;
    use bitonic::{Order, Sorter};
    use cust::context::Context;
    use cust::context::legacy::{
        Context as LegacyContext, ContextFlags as LegacyFlags, ContextStack,
    };
    use cust::device::Device;
    use cust::memory::{AsyncCopyDestination, DeviceBuffer, LockedBuffer};
    use cust::stream::{Stream, StreamFlags};
    use libtest_mimic::{Failed, Trial};

    use crate::device::{
        DevKey, DeviceApi, Elem, check_sorted_pairs, foreign_result, random_pairs,
        register as register_device,
    };
    use crate::targets::{Slot, Target};

    /// The caller's side: the device's primary context current on this thread, and a
    /// stream of the caller's (non-blocking, so nothing orders it but the caller).
    pub struct CuDev {
        // Dropped in this order: the stream before the context it belongs to.
        stream: Stream,
        sorter: Arc<Sorter>,
        _context: Context,
    }

    impl CuDev {
        fn cuda(&self) -> &CudaBackend {
            self.sorter.cuda().expect("checked by open")
        }
    }

    fn cu(call: &'static str) -> impl FnOnce(cust::error::CudaError) -> String {
        move |e| format!("{call}: {e}")
    }

    impl DeviceApi for CuDev {
        type Buf<T: Elem> = DeviceBuffer<T>;
        const EMPTY_BUFFERS: bool = true;

        fn open(t: &Target) -> Result<Self, String> {
            if t.sorter.cuda().is_none() {
                return Err(format!("{}: the sorter is not a CUDA backend", t.label));
            }
            let device = Device::get_device(t.info.index as u32).map_err(cu("cuDeviceGet"))?;
            // Retains the primary context and makes it current on this thread.
            let context = Context::new(device).map_err(cu("cuDevicePrimaryCtxRetain"))?;
            let stream =
                Stream::new(StreamFlags::NON_BLOCKING, None).map_err(cu("cuStreamCreate"))?;
            Ok(CuDev {
                stream,
                sorter: Arc::clone(&t.sorter),
                _context: context,
            })
        }

        fn upload<T: Elem>(&self, data: &[T]) -> Result<DeviceBuffer<T>, String> {
            // SAFETY: the buffer is written completely by the copy below before anything
            // reads it.
            let mut buffer = unsafe { DeviceBuffer::<T>::uninitialized(data.len()) }
                .map_err(cu("cuMemAlloc"))?;
            // SAFETY: `data` outlives the copy: the stream is synchronized before returning.
            unsafe { buffer.async_copy_from(data, &self.stream) }
                .map_err(cu("cuMemcpyHtoDAsync"))?;
            self.stream
                .synchronize()
                .map_err(cu("cuStreamSynchronize"))?;
            Ok(buffer)
        }

        fn download<T: Elem>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>, String> {
            self.stream
                .synchronize()
                .map_err(cu("cuStreamSynchronize"))?;
            let mut data = vec![T::zeroed(); buf.len()];
            // On the caller's stream (a copy on the legacy default stream would disturb a
            // graph capture under way on another thread).
            // SAFETY: `data` outlives the copy: the stream is synchronized before returning.
            unsafe { buf.async_copy_to(&mut data[..], &self.stream) }
                .map_err(cu("cuMemcpyDtoHAsync"))?;
            self.stream
                .synchronize()
                .map_err(cu("cuStreamSynchronize"))?;
            Ok(data)
        }

        fn sort<K: DevKey>(&self, keys: &mut DeviceBuffer<K>, order: Order) -> bitonic::Result<()> {
            self.cuda().sort_device(keys, order, &self.stream)
        }

        fn sort_by_key<K: DevKey, V: Elem>(
            &self,
            keys: &mut DeviceBuffer<K>,
            values: &mut DeviceBuffer<V>,
            order: Order,
        ) -> bitonic::Result<()> {
            self.cuda()
                .sort_device_by_key(keys, values, order, &self.stream)
        }

        fn sort_rows<K: DevKey>(
            &self,
            keys: &mut DeviceBuffer<K>,
            row_len: usize,
            order: Order,
        ) -> bitonic::Result<()> {
            self.cuda()
                .sort_device_rows(keys, row_len, order, &self.stream)
        }

        fn sort_rows_by_key<K: DevKey, V: Elem>(
            &self,
            keys: &mut DeviceBuffer<K>,
            values: &mut DeviceBuffer<V>,
            row_len: usize,
            order: Order,
        ) -> bitonic::Result<()> {
            self.cuda()
                .sort_device_rows_by_key(keys, values, row_len, order, &self.stream)
        }
    }

    /// A stream and memory of a second, non-primary context on the same device.
    fn foreign(t: &Target) -> Result<(), Failed> {
        let dev = CuDev::open(t)?;
        let cuda = dev.cuda();
        let label = &t.label;
        let n = 5000;
        let (keys_in, values_in) = random_pairs(t, "device::errors::foreign", n);
        let mut keys = dev.upload(&keys_in)?;
        let mut values = dev.upload(&values_in)?;

        let device = Device::get_device(t.info.index as u32).map_err(cu("cuDeviceGet"))?;
        // `cuCtxCreate`: a new context, pushed on this thread's stack (now current).
        let other = LegacyContext::create_and_push(LegacyFlags::SCHED_AUTO, device)
            .map_err(cu("cuCtxCreate"))?;
        let made = (|| -> Result<_, String> {
            let stream =
                Stream::new(StreamFlags::NON_BLOCKING, None).map_err(cu("cuStreamCreate"))?;
            let keys = DeviceBuffer::from_slice(&keys_in).map_err(cu("cuMemAlloc"))?;
            let values = DeviceBuffer::from_slice(&values_in).map_err(cu("cuMemAlloc"))?;
            Ok((stream, keys, values))
        })();
        // Back to the primary context.
        ContextStack::pop().map_err(cu("cuCtxPopCurrent"))?;
        let (other_stream, mut other_keys, mut other_values) = made?;

        let (s, os) = (&dev.stream, &other_stream);
        let mut outcome = Ok(());
        for order in [Order::Ascending, Order::Descending] {
            let calls: [(&str, bitonic::Result<()>); 9] = [
                (
                    "sort_device: own keys, stream of another context",
                    cuda.sort_device(&mut keys, order, os),
                ),
                (
                    "sort_device_by_key: own buffers, stream of another context",
                    cuda.sort_device_by_key(&mut keys, &mut values, order, os),
                ),
                (
                    "sort_device_rows: own keys, stream of another context",
                    cuda.sort_device_rows(&mut keys, 100, order, os),
                ),
                (
                    "sort_device_rows_by_key: own buffers, stream of another context",
                    cuda.sort_device_rows_by_key(&mut keys, &mut values, 100, order, os),
                ),
                (
                    "sort_device: keys of another context, own stream",
                    cuda.sort_device(&mut other_keys, order, s),
                ),
                (
                    "sort_device: keys and stream of another context",
                    cuda.sort_device(&mut other_keys, order, os),
                ),
                (
                    "sort_device_by_key: values of another context",
                    cuda.sort_device_by_key(&mut keys, &mut other_values, order, s),
                ),
                (
                    "sort_device_by_key: keys of another context",
                    cuda.sort_device_by_key(&mut other_keys, &mut values, order, s),
                ),
                (
                    "sort_device_rows_by_key: values of another context",
                    cuda.sort_device_rows_by_key(&mut keys, &mut other_values, 1000, order, s),
                ),
            ];
            for (call, got) in calls {
                if outcome.is_ok() {
                    outcome = foreign_result(&format!("{label}: {call}"), got);
                }
            }
        }
        let own_same = dev.download(&keys)? == keys_in && dev.download(&values)? == values_in;
        // The other context's memory is read, and freed, with that context current.
        ContextStack::push(&other).map_err(cu("cuCtxPushCurrent"))?;
        let other_same = other_keys.as_host_vec().map_err(cu("cuMemcpyDtoH"))? == keys_in
            && other_values.as_host_vec().map_err(cu("cuMemcpyDtoH"))? == values_in;
        drop((other_keys, other_values, other_stream));
        ContextStack::pop().map_err(cu("cuCtxPopCurrent"))?;
        drop(other);
        outcome?;
        if !own_same || !other_same {
            return Err(format!("{label}: ForeignBuffer calls changed the buffers").into());
        }
        Ok(())
    }

    /// A sub-slice in the middle of an allocation: sorted, nothing outside it moved.
    fn sub_range(t: &Target) -> Result<(), Failed> {
        let dev = CuDev::open(t)?;
        let (before, len, after) = (1000usize, 70_001usize, 999usize);
        let total = before + len + after;
        let (keys_in, values_in) = random_pairs(t, "device::sub_range", total);
        let keys = dev.upload(&keys_in)?;
        let values = dev.upload(&values_in)?;
        // Views of the middle of both allocations (cust 0.3's `DeviceSlice::index`).
        let mut mid_keys = keys.index(before..before + len);
        let mut mid_values = values.index(before..before + len);
        dev.cuda()
            .sort_device_by_key(
                &mut mid_keys,
                &mut mid_values,
                Order::Descending,
                &dev.stream,
            )
            .map_err(|e| format!("{}: sort_device_by_key of a sub-slice: {e:?}", t.label))?;
        let got_keys = dev.download(&keys)?;
        let got_values = dev.download(&values)?;
        let inside = before..before + len;
        if got_keys[..before] != keys_in[..before]
            || got_keys[before + len..] != keys_in[before + len..]
            || got_values[..before] != values_in[..before]
            || got_values[before + len..] != values_in[before + len..]
        {
            return Err(
                format!("{}: sorting a sub-slice changed memory outside it", t.label).into(),
            );
        }
        check_sorted_pairs(
            t,
            &keys_in[inside.clone()],
            &values_in[inside.clone()],
            &got_keys[inside.clone()],
            &got_values[inside],
            Order::Descending,
        )
        .map_err(|e| format!("{}: the sorted sub-slice: {e}", t.label).into())
    }

    /// An asynchronous upload from page-locked memory, the sort and an asynchronous
    /// download, all enqueued on the caller's stream before one synchronization.
    fn queue_order(t: &Target) -> Result<(), Failed> {
        let dev = CuDev::open(t)?;
        let n = 100_003;
        let (keys_in, values_in) = random_pairs(t, "device::queue_order", n);
        let host_keys = LockedBuffer::from_slice(&keys_in).map_err(cu("cuMemAllocHost"))?;
        let host_values = LockedBuffer::from_slice(&values_in).map_err(cu("cuMemAllocHost"))?;
        let mut out_keys = LockedBuffer::new(&0u64, n).map_err(cu("cuMemAllocHost"))?;
        let mut out_values = LockedBuffer::new(&0u32, n).map_err(cu("cuMemAllocHost"))?;
        // SAFETY: written completely by the copies below, enqueued before the sort.
        let (mut keys, mut values) = unsafe {
            (
                DeviceBuffer::<u64>::uninitialized(n).map_err(cu("cuMemAlloc"))?,
                DeviceBuffer::<u32>::uninitialized(n).map_err(cu("cuMemAlloc"))?,
            )
        };
        // SAFETY: every host buffer outlives the copies: the stream is synchronized below,
        // before any of them is read or dropped.
        unsafe {
            keys.async_copy_from(&*host_keys, &dev.stream)
                .map_err(cu("cuMemcpyHtoDAsync"))?;
            values
                .async_copy_from(&*host_values, &dev.stream)
                .map_err(cu("cuMemcpyHtoDAsync"))?;
        }
        dev.cuda()
            .sort_device_by_key(&mut keys, &mut values, Order::Descending, &dev.stream)
            .map_err(|e| format!("{}: sort_device_by_key: {e:?}", t.label))?;
        // SAFETY: as above.
        unsafe {
            keys.async_copy_to(&mut *out_keys, &dev.stream)
                .map_err(cu("cuMemcpyDtoHAsync"))?;
            values
                .async_copy_to(&mut *out_values, &dev.stream)
                .map_err(cu("cuMemcpyDtoHAsync"))?;
        }
        dev.stream
            .synchronize()
            .map_err(cu("cuStreamSynchronize"))?;
        check_sorted_pairs(
            t,
            &keys_in,
            &values_in,
            &out_keys,
            &out_values,
            Order::Descending,
        )
        .map_err(|e| format!("{}: {e}", t.label).into())
    }

    /// Keys and values allocated on the caller's stream (`cuMemAllocAsync`, from the
    /// device's memory pool): memory of the device that the primary context uses.
    fn stream_ordered_alloc(t: &Target) -> Result<(), Failed> {
        let dev = CuDev::open(t)?;
        let n = 50_001;
        let (keys_in, values_in) = random_pairs(t, "device::stream_ordered_alloc", n);
        // SAFETY: the memory is used only by work enqueued after the allocation on the same
        // stream, and written completely (the copies) before it is read.
        let (mut keys, mut values) = unsafe {
            (
                DeviceBuffer::<u64>::uninitialized_async(n, &dev.stream)
                    .map_err(cu("cuMemAllocAsync"))?,
                DeviceBuffer::<u32>::uninitialized_async(n, &dev.stream)
                    .map_err(cu("cuMemAllocAsync"))?,
            )
        };
        // SAFETY: the host vectors outlive the copies (synchronized below).
        unsafe {
            keys.async_copy_from(&keys_in[..], &dev.stream)
                .map_err(cu("cuMemcpyHtoDAsync"))?;
            values
                .async_copy_from(&values_in[..], &dev.stream)
                .map_err(cu("cuMemcpyHtoDAsync"))?;
        }
        let sorted =
            dev.cuda()
                .sort_device_by_key(&mut keys, &mut values, Order::Ascending, &dev.stream);
        let got_keys = dev.download(&keys);
        let got_values = dev.download(&values);
        keys.drop_async(&dev.stream).map_err(cu("cuMemFreeAsync"))?;
        values
            .drop_async(&dev.stream)
            .map_err(cu("cuMemFreeAsync"))?;
        dev.stream
            .synchronize()
            .map_err(cu("cuStreamSynchronize"))?;
        sorted.map_err(|e| {
            format!(
                "{}: sort_device_by_key of memory from cuMemAllocAsync: {e:?}",
                t.label
            )
        })?;
        check_sorted_pairs(
            t,
            &keys_in,
            &values_in,
            &got_keys?,
            &got_values?,
            Order::Ascending,
        )
        .map_err(|e| format!("{}: {e}", t.label).into())
    }

    pub fn register(slot: &Slot, trials: &mut Vec<Trial>) {
        register_device::<CuDev>(slot, trials);
        trials.push(slot.trial("device::errors::foreign", foreign));
        trials.push(slot.trial("device::sub_range", sub_range));
        trials.push(slot.trial("device::queue_order", queue_order));
        trials.push(slot.trial("device::stream_ordered_alloc", stream_ordered_alloc));
    }
}

#[cfg(not(feature = "cuda"))]
mod cuda {
    pub fn register(_: &crate::targets::Slot, _: &mut Vec<libtest_mimic::Trial>) {}
}

// ---------------------------------------------------------------------------------------

/// The backend of a slot: a ready target's, or the one an unavailable slot is named after.
fn backend_of(slot: &Slot) -> Option<BackendKind> {
    match slot {
        Slot::Ready(t) => Some(t.info.backend),
        Slot::Unavailable { label, .. } => BackendKind::parse(label),
    }
}

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("device_buffers");
    let mut trials = found.failures;
    for slot in &found.slots {
        match backend_of(slot) {
            Some(BackendKind::OpenCl) => opencl::register(slot, &mut trials),
            Some(BackendKind::Cuda) => cuda::register(slot, &mut trials),
            Some(BackendKind::Cpu) | None => {}
        }
        trials.push(slot.trial("workspace", workspace));
    }
    libtest_mimic::run(&args, trials).exit()
}
