//! `device::errors::shapes`: calls whose shapes are wrong return the error and leave the
//! buffers as they were; and the check of a refused foreign queue, stream or buffer.

use bitonic::{Error, Order};
use libtest_mimic::Failed;

use super::{DevKey, DevValue, DeviceApi, Elem, order_name};
use crate::support::{Pattern, TestValue, first_key_diff, input_seed, rng_for};
use crate::targets::Target;

/// Checks that a call refused a queue, stream or buffer of another context.
pub fn foreign_result(call: &str, got: bitonic::Result<()>) -> Result<(), String> {
    match got {
        Err(Error::ForeignBuffer(_)) => Ok(()),
        other => Err(format!("{call}: want Err(ForeignBuffer), got {other:?}")),
    }
}

/// The calls of `device::errors::foreign` that both backends refuse, in both orders: own
/// buffers on a stream or queue of another context, buffers of another context on the
/// caller's or on the other one, keys and values of different contexts. Every call runs
/// (the caller cleans up after); the first that is not `ForeignBuffer` is the error.
#[allow(clippy::too_many_arguments)]
pub fn foreign_calls<D: DeviceApi>(
    dev: &D,
    label: &str,
    keys: &mut D::Buf<u64>,
    values: &mut D::Buf<u32>,
    other_keys: &mut D::Buf<u64>,
    other_values: &mut D::Buf<u32>,
    other_queue: &D::Queue,
) -> Result<(), String> {
    let (q, oq, queue) = (dev.queue(), other_queue, D::QUEUE);
    let mut outcome = Ok(());
    for order in [Order::Ascending, Order::Descending] {
        let calls: [(String, bitonic::Result<()>); 9] = [
            (
                format!("sort_device: own keys, {queue} of another context"),
                dev.sort(keys, order, oq),
            ),
            (
                format!("sort_device_by_key: own buffers, {queue} of another context"),
                dev.sort_by_key(keys, values, order, oq),
            ),
            (
                format!("sort_device_rows: own keys, {queue} of another context"),
                dev.sort_rows(keys, 100, order, oq),
            ),
            (
                format!("sort_device_rows_by_key: own buffers, {queue} of another context"),
                dev.sort_rows_by_key(keys, values, 100, order, oq),
            ),
            (
                format!("sort_device: keys of another context, own {queue}"),
                dev.sort(other_keys, order, q),
            ),
            (
                format!("sort_device: keys and {queue} of another context"),
                dev.sort(other_keys, order, oq),
            ),
            (
                "sort_device_by_key: values of another context".into(),
                dev.sort_by_key(keys, other_values, order, q),
            ),
            (
                "sort_device_by_key: keys of another context".into(),
                dev.sort_by_key(other_keys, values, order, q),
            ),
            (
                "sort_device_rows_by_key: values of another context".into(),
                dev.sort_rows_by_key(keys, other_values, 1000, order, q),
            ),
        ];
        for (call, got) in calls {
            if outcome.is_ok() {
                outcome = foreign_result(&format!("{label}: {call} ({order:?})"), got);
            }
        }
    }
    outcome
}

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
        let got = dev.sort_by_key(&mut keys, &mut values, order, dev.queue());
        expect_error(&call, got, &want)?;
        unchanged(dev, &call, &keys, &keys_in, Some((&values, &values_in[..])))?;
    }
    let call = format!(
        "{}: sort_device_rows_by_key of {n_keys} {} keys and {n_values} {} values, rows of 1",
        t.label,
        K::NAME,
        V::NAME
    );
    let got = dev.sort_rows_by_key(&mut keys, &mut values, 1, Order::Ascending, dev.queue());
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
            match dev.sort_rows(&mut keys, row_len, order, dev.queue()) {
                Err(Error::InvalidConfig(_)) => {}
                other => return Err(format!("{call}: want Err(InvalidConfig), got {other:?}")),
            }
            unchanged::<D, f32, u64>(dev, &call, &keys, &keys_in, None)?;
            let call = format!("{call} (with values)");
            match dev.sort_rows_by_key(&mut keys, &mut values, row_len, order, dev.queue()) {
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
            let got = dev.sort_by_key(&mut keys, &mut values, order, dev.queue());
            expect_error(&call, got, &want)?;
            unchanged(dev, &call, &keys, &keys_in, Some((&values, &values_in[..])))?;
            let call = format!("{call} (rows of 1)");
            let got = dev.sort_rows_by_key(&mut keys, &mut values, 1, order, dev.queue());
            expect_error(&call, got, &want)?;
            unchanged(dev, &call, &keys, &keys_in, Some((&values, &values_in[..])))?;
        }
    }
    Ok(())
}

pub fn shape_errors<D: DeviceApi>(t: &Target) -> Result<(), Failed> {
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
