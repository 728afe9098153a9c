//! Device-resident sorts, the same trials for CUDA and OpenCL: keys, pairs, rows, rows by key,
//! top-k, 16-bit keys, parts of larger allocations and their errors, through a `DeviceApi`
//! (and, for 16-bit keys, a `Dev16`) that each backend's module implements.
//!
//! Layout: `device/inputs.rs` (what the inputs are), `device/keys.rs`, `device/pairs.rs`
//! (with the checks of key-value results), `device/rows.rs`, `device/top_k.rs`,
//! `device/sixteen.rs` (16-bit keys, the `Dev16` calls), `device/errors.rs` (shapes and
//! foreign buffers); this file holds the `DeviceApi` the backends implement, the macro that
//! forwards its calls to a backend, the trials of parts of allocations, and registers the
//! trials.

use std::fmt::Debug;
use std::ops::Range;

use bitonic::{Order, WordKey};
use libtest_mimic::{Failed, Trial};

use crate::support::{Pattern, TestKey, TestValue, input_seed, rng_for};
use crate::targets::{Slot, Target};

#[path = "device/errors.rs"]
mod errors;
#[path = "device/inputs.rs"]
mod inputs;
#[path = "device/keys.rs"]
mod keys;
#[path = "device/pairs.rs"]
mod pairs;
#[path = "device/rows.rs"]
mod rows;
#[path = "device/sixteen.rs"]
pub mod sixteen;
#[path = "device/top_k.rs"]
mod top_k;

pub use errors::foreign_calls;
#[cfg(feature = "opencl")]
pub use errors::foreign_result;
use errors::shape_errors;
use keys::keys_trial;
use pairs::{check_pairs, pairs_trial};
use rows::{rows_by_key_trial, rows_trial};
use top_k::{argsort_trial, top_k_errors, top_k_trial};

/// An element of a device buffer: plain data that `cust` may copy too.
#[cfg(feature = "cuda")]
pub trait Elem: bytemuck::Pod + cust::memory::DeviceCopy + Debug + Send + Sync {}
/// An element of a device buffer.
#[cfg(not(feature = "cuda"))]
pub trait Elem: bytemuck::Pod + Debug + Send + Sync {}

macro_rules! elem {
    ($($t:ty),*) => { $(impl Elem for $t {})* };
}
elem!(u8, u16, u32, i32, f32, u64, i64, f64);

/// A key type of the device-resident sorts, with what the checks need.
pub trait DevKey: TestKey + WordKey + Elem {}
impl<T: TestKey + WordKey + Elem> DevKey for T {}

/// A value type of the device-resident sorts.
pub trait DevValue: TestValue + Elem {}
impl<T: TestValue + Elem> DevValue for T {}

/// One backend's device-resident API, as the generic trials use it: buffers of the
/// caller's, filled and read on the caller's stream or queue. The sorts take the stream or
/// queue: `dev.queue()`, or (`foreign`) one of another context.
pub trait DeviceApi: Sized {
    /// A device buffer of `T`.
    type Buf<T: Elem>;
    /// A CUDA stream or an OpenCL command queue.
    type Queue;
    /// Whether a buffer may hold no elements (OpenCL: no).
    const EMPTY_BUFFERS: bool;
    /// What `device::sub_range` sorts: (elements before, elements sorted, elements after)
    /// in one allocation (OpenCL sub-buffers start at an aligned offset).
    const PART: (usize, usize, usize);
    /// "stream" or "queue", in messages.
    const QUEUE: &'static str;
    /// The caller's side of the target: a stream or queue of the backend's context.
    fn open(t: &Target) -> Result<Self, String>;
    /// The caller's stream or queue.
    fn queue(&self) -> &Self::Queue;
    /// A new buffer holding `data`, its upload finished.
    fn upload<T: Elem>(&self, data: &[T]) -> Result<Self::Buf<T>, String>;
    /// The buffer's contents, after everything enqueued before.
    fn download<T: Elem>(&self, buf: &Self::Buf<T>) -> Result<Vec<T>, String>;
    /// Sorts elements `range` of `keys` (and `values`, when given, by key) in place,
    /// through a view of that part of each allocation (a cust sub-slice, an OpenCL
    /// sub-buffer).
    fn sort_part(
        &self,
        keys: &mut Self::Buf<u64>,
        values: Option<&mut Self::Buf<u32>>,
        range: Range<usize>,
        order: Order,
    ) -> Result<(), String>;
    fn sort<K: DevKey>(
        &self,
        keys: &mut Self::Buf<K>,
        order: Order,
        queue: &Self::Queue,
    ) -> bitonic::Result<()>;
    fn sort_by_key<K: DevKey, V: Elem>(
        &self,
        keys: &mut Self::Buf<K>,
        values: &mut Self::Buf<V>,
        order: Order,
        queue: &Self::Queue,
    ) -> bitonic::Result<()>;
    fn sort_rows<K: DevKey>(
        &self,
        keys: &mut Self::Buf<K>,
        row_len: usize,
        order: Order,
        queue: &Self::Queue,
    ) -> bitonic::Result<()>;
    fn sort_rows_by_key<K: DevKey, V: Elem>(
        &self,
        keys: &mut Self::Buf<K>,
        values: &mut Self::Buf<V>,
        row_len: usize,
        order: Order,
        queue: &Self::Queue,
    ) -> bitonic::Result<()>;
    /// `top_k_device_rows`.
    #[allow(clippy::too_many_arguments)]
    fn top_k_rows<K: DevKey>(
        &self,
        keys: &Self::Buf<K>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut Self::Buf<K>,
        indices: &mut Self::Buf<u32>,
        queue: &Self::Queue,
    ) -> bitonic::Result<()>;
    /// `argsort_device_rows`.
    fn argsort_rows<K: DevKey>(
        &self,
        keys: &Self::Buf<K>,
        row_len: usize,
        order: Order,
        indices: &mut Self::Buf<u32>,
        queue: &Self::Queue,
    ) -> bitonic::Result<()>;
}

/// The sorts of a `DeviceApi` impl, forwarded to the backend that `self.$backend()`
/// returns: both backends name their device-resident calls alike and take the stream or
/// queue last.
macro_rules! forward_device_calls {
    ($backend:ident) => {
        fn sort<K: $crate::device::DevKey>(
            &self,
            keys: &mut Self::Buf<K>,
            order: bitonic::Order,
            queue: &Self::Queue,
        ) -> bitonic::Result<()> {
            self.$backend().sort_device(keys, order, queue)
        }

        fn sort_by_key<K: $crate::device::DevKey, V: $crate::device::Elem>(
            &self,
            keys: &mut Self::Buf<K>,
            values: &mut Self::Buf<V>,
            order: bitonic::Order,
            queue: &Self::Queue,
        ) -> bitonic::Result<()> {
            self.$backend()
                .sort_device_by_key(keys, values, order, queue)
        }

        fn sort_rows<K: $crate::device::DevKey>(
            &self,
            keys: &mut Self::Buf<K>,
            row_len: usize,
            order: bitonic::Order,
            queue: &Self::Queue,
        ) -> bitonic::Result<()> {
            self.$backend()
                .sort_device_rows(keys, row_len, order, queue)
        }

        fn sort_rows_by_key<K: $crate::device::DevKey, V: $crate::device::Elem>(
            &self,
            keys: &mut Self::Buf<K>,
            values: &mut Self::Buf<V>,
            row_len: usize,
            order: bitonic::Order,
            queue: &Self::Queue,
        ) -> bitonic::Result<()> {
            self.$backend()
                .sort_device_rows_by_key(keys, values, row_len, order, queue)
        }

        fn top_k_rows<K: $crate::device::DevKey>(
            &self,
            keys: &Self::Buf<K>,
            row_len: usize,
            k: usize,
            order: bitonic::Order,
            values: &mut Self::Buf<K>,
            indices: &mut Self::Buf<u32>,
            queue: &Self::Queue,
        ) -> bitonic::Result<()> {
            self.$backend()
                .top_k_device_rows(keys, row_len, k, order, values, indices, queue)
        }

        fn argsort_rows<K: $crate::device::DevKey>(
            &self,
            keys: &Self::Buf<K>,
            row_len: usize,
            order: bitonic::Order,
            indices: &mut Self::Buf<u32>,
            queue: &Self::Queue,
        ) -> bitonic::Result<()> {
            self.$backend()
                .argsort_device_rows(keys, row_len, order, indices, queue)
        }
    };
}
pub(crate) use forward_device_calls;

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
// Registration.

fn keys_of<D: DeviceApi + 'static, K: DevKey>(slot: &Slot, trials: &mut Vec<Trial>, o: Order) {
    let name = format!("device::keys::{}::{}", K::NAME, order_name(o));
    trials.push(slot.trial(&name, move |t| keys_trial::<D, K>(t, o)));
}

fn pairs_of<D: DeviceApi + 'static, K: DevKey, V: DevValue>(slot: &Slot, trials: &mut Vec<Trial>) {
    let name = format!("device::pairs::{}_{}", K::NAME, V::NAME);
    trials.push(slot.trial(&name, pairs_trial::<D, K, V>));
}

fn rows_of<D: DeviceApi + 'static, K: DevKey>(slot: &Slot, trials: &mut Vec<Trial>, o: Order) {
    let name = format!("device::rows::{}::{}", K::NAME, order_name(o));
    trials.push(slot.trial(&name, move |t| rows_trial::<D, K>(t, o)));
}

fn rows_by_key_of<D: DeviceApi + 'static, K: DevKey, V: DevValue>(
    slot: &Slot,
    trials: &mut Vec<Trial>,
    o: Order,
) {
    let name = format!(
        "device::rows_by_key::{}_{}::{}",
        K::NAME,
        V::NAME,
        order_name(o)
    );
    trials.push(slot.trial(&name, move |t| rows_by_key_trial::<D, K, V>(t, o)));
}

fn top_k_of<D: DeviceApi + 'static, K: DevKey>(slot: &Slot, trials: &mut Vec<Trial>, o: Order) {
    let name = format!("device::top_k::{}::{}", K::NAME, order_name(o));
    trials.push(slot.trial(&name, move |t| top_k_trial::<D, K>(t, o)));
}

fn argsort_of<D: DeviceApi + 'static, K: DevKey>(slot: &Slot, trials: &mut Vec<Trial>, o: Order) {
    let name = format!("device::argsort::{}::{}", K::NAME, order_name(o));
    trials.push(slot.trial(&name, move |t| argsort_trial::<D, K>(t, o)));
}

/// The trials every device-resident backend gets.
pub fn register<D: sixteen::Dev16 + 'static>(slot: &Slot, trials: &mut Vec<Trial>) {
    use Order::{Ascending, Descending};
    for o in [Ascending, Descending] {
        keys_of::<D, u32>(slot, trials, o);
        keys_of::<D, i32>(slot, trials, o);
        keys_of::<D, f32>(slot, trials, o);
        keys_of::<D, u64>(slot, trials, o);
        keys_of::<D, i64>(slot, trials, o);
        keys_of::<D, f64>(slot, trials, o);
    }
    pairs_of::<D, u32, u32>(slot, trials);
    pairs_of::<D, i32, u64>(slot, trials);
    pairs_of::<D, f32, u32>(slot, trials);
    pairs_of::<D, u64, u64>(slot, trials);
    pairs_of::<D, i64, u32>(slot, trials);
    pairs_of::<D, f64, u64>(slot, trials);

    rows_of::<D, u32>(slot, trials, Ascending);
    rows_of::<D, f64>(slot, trials, Descending);
    rows_of::<D, i32>(slot, trials, Descending);
    rows_by_key_of::<D, f32, u32>(slot, trials, Ascending);
    rows_by_key_of::<D, i64, u64>(slot, trials, Descending);
    rows_by_key_of::<D, u32, u64>(slot, trials, Descending);

    trials.push(slot.trial("device::errors::shapes", shape_errors::<D>));

    for o in [Ascending, Descending] {
        top_k_of::<D, u32>(slot, trials, o);
        top_k_of::<D, i32>(slot, trials, o);
        top_k_of::<D, f32>(slot, trials, o);
        top_k_of::<D, i64>(slot, trials, o);
        top_k_of::<D, f64>(slot, trials, o);
    }
    top_k_of::<D, u64>(slot, trials, Ascending);
    trials.push(slot.trial("device::top_k::errors", top_k_errors::<D>));
    argsort_of::<D, f32>(slot, trials, Ascending);
    argsort_of::<D, i64>(slot, trials, Descending);
    argsort_of::<D, u32>(slot, trials, Descending);

    sixteen::register::<D>(slot, trials);
    trials.push(slot.trial("device::sub_range", sub_range::<D>));
}

// -----------------------------------------------------------------------------------
// Parts of larger allocations.

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

/// A part in the middle of an allocation (`D::PART`), sorted by key descending: sorted,
/// nothing outside it moved; then its keys alone, ascending.
fn sub_range<D: DeviceApi>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let label = &t.label;
    let (before, len, after) = D::PART;
    let (keys_in, values_in) = random_pairs(t, "device::sub_range", before + len + after);
    let mut keys = dev.upload(&keys_in)?;
    let mut values = dev.upload(&values_in)?;
    let inside = before..before + len;
    dev.sort_part(
        &mut keys,
        Some(&mut values),
        inside.clone(),
        Order::Descending,
    )
    .map_err(|e| format!("{label}: sort_device_by_key of a part of an allocation: {e}"))?;
    let got_keys = dev.download(&keys)?;
    let got_values = dev.download(&values)?;
    let outside = |got: &[u64], input: &[u64]| {
        got[..before] != input[..before] || got[inside.end..] != input[inside.end..]
    };
    if outside(&got_keys, &keys_in)
        || got_values[..before] != values_in[..before]
        || got_values[inside.end..] != values_in[inside.end..]
    {
        return Err(format!("{label}: sorting a part changed memory outside it").into());
    }
    check_sorted_pairs(
        t,
        &keys_in[inside.clone()],
        &values_in[inside.clone()],
        &got_keys[inside.clone()],
        &got_values[inside.clone()],
        Order::Descending,
    )
    .map_err(|e| format!("{label}: the sorted part: {e}"))?;
    dev.sort_part(&mut keys, None, inside.clone(), Order::Ascending)
        .map_err(|e| format!("{label}: sort_device of a part of an allocation: {e}"))?;
    let got = dev.download(&keys)?;
    if outside(&got, &keys_in) {
        return Err(format!("{label}: sorting a part's keys changed memory outside it").into());
    }
    crate::support::check_keys(
        &got[inside.clone()],
        &crate::support::expected(&keys_in[inside], false),
    )
    .map_err(|e| format!("{label}: the part's keys sorted again: {e}").into())
}
