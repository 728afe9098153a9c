//! Device-resident sorts, the same trials for CUDA and OpenCL: keys, pairs, rows, rows by key
//! and their errors, through a `DeviceApi` that each backend's module implements.
//!
//! Layout: `device/inputs.rs` (what the inputs are), `device/keys.rs`, `device/pairs.rs`
//! (with the checks of key-value results), `device/rows.rs`, `device/errors.rs`; this file
//! holds the `DeviceApi` the backends implement and registers the trials.

use std::fmt::Debug;

use bitonic::{Order, WordKey};
use libtest_mimic::Trial;

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
#[path = "device/top_k.rs"]
mod top_k;

pub use errors::foreign_result;
use errors::shape_errors;
use keys::keys_trial;
use pairs::{check_pairs, pairs_trial};
use rows::{rows_by_key_trial, rows_trial};
use top_k::{top_k_errors, top_k_trial};

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
    /// `top_k_device_rows`.
    fn top_k_rows<K: DevKey>(
        &self,
        keys: &Self::Buf<K>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut Self::Buf<K>,
        indices: &mut Self::Buf<u32>,
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

    for order in [Order::Ascending, Order::Descending] {
        let o = order_name(order);
        trials.push(slot.trial(&format!("device::top_k::u32::{o}"), move |t| {
            top_k_trial::<D, u32>(t, order)
        }));
        trials.push(slot.trial(&format!("device::top_k::i32::{o}"), move |t| {
            top_k_trial::<D, i32>(t, order)
        }));
        trials.push(slot.trial(&format!("device::top_k::f32::{o}"), move |t| {
            top_k_trial::<D, f32>(t, order)
        }));
        trials.push(slot.trial(&format!("device::top_k::i64::{o}"), move |t| {
            top_k_trial::<D, i64>(t, order)
        }));
        trials.push(slot.trial(&format!("device::top_k::f64::{o}"), move |t| {
            top_k_trial::<D, f64>(t, order)
        }));
    }
    trials.push(slot.trial("device::top_k::u64::asc", |t| {
        top_k_trial::<D, u64>(t, Order::Ascending)
    }));
    trials.push(slot.trial("device::top_k::errors", top_k_errors::<D>));
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

/// Checks the values of a key-value sort of `input` with its positions as values: every
/// position comes once, each beside the key it holds in `input` (keys compared as bits).
pub fn positions_follow_keys(got: &[u16], positions: &[u32], input: &[u16]) -> Result<(), String> {
    let n = input.len();
    let mut seen = vec![false; n];
    for (i, (&key, &p)) in got.iter().zip(positions).enumerate() {
        let p = p as usize;
        if p >= n || seen[p] || input[p] != key {
            return Err(format!(
                "entry {i}: value {p} does not belong to its key {key:#06x}"
            ));
        }
        seen[p] = true;
    }
    Ok(())
}
