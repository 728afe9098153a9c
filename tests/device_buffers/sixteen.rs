//! OpenCL only: 16-bit keys sorted in place in device buffers (`u16`, `i16`, and with the
//! `half` feature `f16`, `bf16`), which the kernels load as 16 bits and order in 32-bit
//! registers.
//!
//! - `device::sixteen::<key>::every_pattern::<order>`: all 65,536 bit patterns, shuffled,
//!   sorted bit for bit as `total_cmp` (integers numerically), in one array and in rows
//!   of 65,536 / 8 and of 1000 keys (the last row short is impossible: rows of 1024 then).
//! - `device::sixteen::<key>::lengths`: lengths 1, 2, 3, 1000 and 2^k - 1, 2^k, 2^k + 1
//!   for k = 10, 13, 17, random bits, both orders.
//! - `device::sixteen::<key>::pairs`: `sort_device_by_key` with u32 positions as values:
//!   keys sorted, every value the position its key came from.
//! - `device::sixteen::<key>::top_k`: `top_k_device_rows` against a model, on the on-chip
//!   route and the sort route.
//! - `device::sixteen::<key>::counting`: the counting sort of one row from 2^23 keys on,
//!   lengths around that threshold.

use std::cmp::Ordering;
use std::ptr;
use std::sync::Arc;

use bitonic::opencl::OpenClBackend;
use bitonic::{Order, Sorter, WordKey};
use libtest_mimic::{Failed, Trial};
use opencl3::command_queue::CommandQueue;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::CL_BLOCKING;
use rand::Rng;
use rand::seq::SliceRandom;

use crate::device::positions_follow_keys;
use crate::support::{input_seed, rng_for};
use crate::targets::{Slot, Target};

/// A 16-bit key type with its bits and the order the sorter promises.
pub trait Key16: WordKey + bytemuck::Pod + std::fmt::Debug {
    const NAME: &'static str;
    fn from_bits(bits: u16) -> Self;
    fn bits(self) -> u16;
    /// `total_cmp` for floats, numeric order for integers.
    fn order(a: Self, b: Self) -> Ordering;
}

impl Key16 for u16 {
    const NAME: &'static str = "u16";
    fn from_bits(bits: u16) -> Self {
        bits
    }
    fn bits(self) -> u16 {
        self
    }
    fn order(a: Self, b: Self) -> Ordering {
        a.cmp(&b)
    }
}

impl Key16 for i16 {
    const NAME: &'static str = "i16";
    fn from_bits(bits: u16) -> Self {
        bits as i16
    }
    fn bits(self) -> u16 {
        self as u16
    }
    fn order(a: Self, b: Self) -> Ordering {
        a.cmp(&b)
    }
}

#[cfg(feature = "half")]
impl Key16 for half::f16 {
    const NAME: &'static str = "f16";
    fn from_bits(bits: u16) -> Self {
        half::f16::from_bits(bits)
    }
    fn bits(self) -> u16 {
        self.to_bits()
    }
    fn order(a: Self, b: Self) -> Ordering {
        a.total_cmp(&b)
    }
}

#[cfg(feature = "half")]
impl Key16 for half::bf16 {
    const NAME: &'static str = "bf16";
    fn from_bits(bits: u16) -> Self {
        half::bf16::from_bits(bits)
    }
    fn bits(self) -> u16 {
        self.to_bits()
    }
    fn order(a: Self, b: Self) -> Ordering {
        a.total_cmp(&b)
    }
}

/// The caller's side: a queue of its own on the backend's context.
struct Dev {
    queue: CommandQueue,
    sorter: Arc<Sorter>,
}

impl Dev {
    fn open(t: &Target) -> Result<Dev, String> {
        let cl = t
            .sorter
            .opencl()
            .ok_or_else(|| format!("{}: the sorter is not an OpenCL backend", t.label))?;
        let queue = CommandQueue::create_default(cl.context(), 0)
            .map_err(|e| format!("clCreateCommandQueue: {e}"))?;
        Ok(Dev {
            queue,
            sorter: Arc::clone(&t.sorter),
        })
    }

    fn cl(&self) -> &OpenClBackend {
        self.sorter.opencl().expect("checked by open")
    }

    fn upload<T: bytemuck::Pod>(&self, data: &[T]) -> Result<Buffer<T>, String> {
        // SAFETY: no host pointer (null, with flags that use none); the size is nonzero.
        let mut buffer = unsafe {
            Buffer::<T>::create(
                self.cl().context(),
                CL_MEM_READ_WRITE,
                data.len().max(1),
                ptr::null_mut(),
            )
        }
        .map_err(|e| format!("clCreateBuffer: {e}"))?;
        // SAFETY: a blocking write of the slice into a buffer at least as large.
        unsafe {
            self.queue
                .enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, data, &[])
        }
        .map_err(|e| format!("clEnqueueWriteBuffer: {e}"))?;
        Ok(buffer)
    }

    fn download<T: bytemuck::Pod>(&self, buffer: &Buffer<T>) -> Result<Vec<T>, String> {
        let bytes = buffer
            .size()
            .map_err(|e| format!("clGetMemObjectInfo: {e}"))?;
        let mut data = vec![T::zeroed(); bytes / size_of::<T>()];
        // SAFETY: a blocking read of the buffer's bytes into a slice of that size.
        unsafe {
            self.queue
                .enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut data, &[])
        }
        .map_err(|e| format!("clEnqueueReadBuffer: {e}"))?;
        Ok(data)
    }
}

fn reference<K: Key16>(keys: &[K], order: Order) -> Vec<u16> {
    let mut want = keys.to_vec();
    want.sort_by(|&a, &b| K::order(a, b));
    if order == Order::Descending {
        want.reverse();
    }
    want.into_iter().map(K::bits).collect()
}

fn check_sorted<K: Key16>(got: &[K], input: &[K], order: Order) -> Result<(), String> {
    let want = reference(input, order);
    match got.iter().zip(&want).position(|(g, w)| g.bits() != *w) {
        Some(i) => Err(format!(
            "index {i}: {:#06x}, want {:#06x}",
            got[i].bits(),
            want[i]
        )),
        None if got.len() != want.len() => Err("the length changed".to_string()),
        None => Ok(()),
    }
}

/// Every bit pattern, shuffled, as one array and as rows.
fn every_pattern<K: Key16>(t: &Target, order: Order) -> Result<(), Failed> {
    let dev = Dev::open(t)?;
    let at = format!(
        "{}::device::sixteen::{}::every_pattern::{order:?}",
        t.label,
        K::NAME
    );
    let mut input: Vec<K> = (0..=u16::MAX).map(K::from_bits).collect();
    input.shuffle(&mut rng_for(input_seed(t.seed, &at, 65536)));
    let mut keys = dev.upload(&input).map_err(|e| format!("{at}: {e}"))?;
    dev.cl()
        .sort_device(&mut keys, order, &dev.queue)
        .map_err(|e| format!("{at}: sort_device returned {e:?}"))?;
    let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
    check_sorted(&got, &input, order).map_err(|e| format!("{at}: {e}"))?;
    for row_len in [8192, 1024, 7] {
        let n = 65536 / row_len * row_len;
        let mut keys = dev.upload(&input[..n]).map_err(|e| format!("{at}: {e}"))?;
        dev.cl()
            .sort_device_rows(&mut keys, row_len, order, &dev.queue)
            .map_err(|e| format!("{at}: sort_device_rows returned {e:?}"))?;
        let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
        for (r, (g, i)) in got.chunks(row_len).zip(input.chunks(row_len)).enumerate() {
            check_sorted(g, i, order)
                .map_err(|e| format!("{at}: rows of {row_len}, row {r}: {e}"))?;
        }
    }
    Ok(())
}

fn lengths<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = Dev::open(t)?;
    let mut ns = vec![1usize, 2, 3, 1000];
    for e in [10, 13, 17] {
        ns.extend([(1 << e) - 1, 1 << e, (1 << e) + 1]);
    }
    for order in [Order::Ascending, Order::Descending] {
        for &n in &ns {
            let at = format!(
                "{}::device::sixteen::{}::lengths: n = {n}, {order:?}",
                t.label,
                K::NAME
            );
            let mut rng = rng_for(input_seed(t.seed, &at, n));
            // Random bits, or few distinct values.
            let few = n % 2 == 0;
            let input: Vec<K> = (0..n)
                .map(|_| {
                    K::from_bits(if few {
                        rng.gen_range(0..3) * 0x7001
                    } else {
                        rng.r#gen()
                    })
                })
                .collect();
            let mut keys = dev.upload(&input).map_err(|e| format!("{at}: {e}"))?;
            dev.cl()
                .sort_device(&mut keys, order, &dev.queue)
                .map_err(|e| format!("{at}: sort_device returned {e:?}"))?;
            let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
            check_sorted(&got, &input, order).map_err(|e| format!("{at}: {e}"))?;
        }
    }
    Ok(())
}

/// One row of at least 2^23 keys takes the counting sort:
/// lengths around that threshold, random bits, few distinct and one repeated key, both
/// orders.
fn counting<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = Dev::open(t)?;
    let from = 1usize << 23;
    // Three lengths: 2^23 keys take a few seconds on PoCL in a debug build.
    for (l, n) in [from - 1, from, from + 7].into_iter().enumerate() {
        let at = format!(
            "{}::device::sixteen::{}::counting: n = {n}",
            t.label,
            K::NAME
        );
        let mut rng = rng_for(input_seed(t.seed, &at, n));
        let input: Vec<K> = (0..n)
            .map(|_| {
                K::from_bits(match l % 3 {
                    0 => rng.r#gen(),
                    1 => rng.gen_range(0..3) * 0x7001,
                    _ => 0xfc01,
                })
            })
            .collect();
        for order in [Order::Ascending, Order::Descending] {
            let mut keys = dev.upload(&input).map_err(|e| format!("{at}: {e}"))?;
            dev.cl()
                .sort_device(&mut keys, order, &dev.queue)
                .map_err(|e| format!("{at}: sort_device returned {e:?}"))?;
            let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
            check_sorted(&got, &input, order).map_err(|e| format!("{at} {order:?}: {e}"))?;
        }
    }
    Ok(())
}

fn pairs<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = Dev::open(t)?;
    for n in [3usize, 4097, 70_001] {
        let at = format!("{}::device::sixteen::{}::pairs: n = {n}", t.label, K::NAME);
        let mut rng = rng_for(input_seed(t.seed, &at, n));
        let input: Vec<K> = (0..n).map(|_| K::from_bits(rng.r#gen())).collect();
        let positions: Vec<u32> = (0..n as u32).collect();
        let mut keys = dev.upload(&input).map_err(|e| format!("{at}: {e}"))?;
        let mut values = dev.upload(&positions).map_err(|e| format!("{at}: {e}"))?;
        dev.cl()
            .sort_device_by_key(&mut keys, &mut values, Order::Descending, &dev.queue)
            .map_err(|e| format!("{at}: sort_device_by_key returned {e:?}"))?;
        let got = dev.download(&keys).map_err(|e| format!("{at}: {e}"))?;
        let got_values = dev.download(&values).map_err(|e| format!("{at}: {e}"))?;
        check_sorted(&got, &input, Order::Descending).map_err(|e| format!("{at}: {e}"))?;
        let bits = |keys: &[K]| keys.iter().map(|k| k.bits()).collect::<Vec<u16>>();
        positions_follow_keys(&bits(&got), &got_values, &bits(&input))
            .map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(())
}

fn top_k<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = Dev::open(t)?;
    for (rows, row_len, k) in [
        (1usize, 1usize, 1usize),
        (3, 5000, 100),
        (2, 9000, 3000),
        (1, 70_001, 2048),
    ] {
        for order in [Order::Ascending, Order::Descending] {
            let at = format!(
                "{}::device::sixteen::{}::top_k: {rows} rows of {row_len}, k = {k}, {order:?}",
                t.label,
                K::NAME
            );
            let mut rng = rng_for(input_seed(t.seed, &at, row_len));
            let input: Vec<K> = (0..rows * row_len)
                .map(|_| K::from_bits(rng.gen_range(0..30) * 0x0811))
                .collect();
            let keys = dev.upload(&input).map_err(|e| format!("{at}: {e}"))?;
            let mut values = dev
                .upload(&vec![K::zeroed(); rows * k])
                .map_err(|e| format!("{at}: {e}"))?;
            let mut indices = dev
                .upload(&vec![0u32; rows * k])
                .map_err(|e| format!("{at}: {e}"))?;
            dev.cl()
                .top_k_device_rows(
                    &keys,
                    row_len,
                    k,
                    order,
                    &mut values,
                    &mut indices,
                    &dev.queue,
                )
                .map_err(|e| format!("{at}: top_k_device_rows returned {e:?}"))?;
            let got_values = dev.download(&values).map_err(|e| format!("{at}: {e}"))?;
            let got_indices = dev.download(&indices).map_err(|e| format!("{at}: {e}"))?;
            for (r, row) in input.chunks(row_len).enumerate() {
                let mut p: Vec<u32> = (0..row_len as u32).collect();
                p.sort_by(|&a, &b| {
                    let by_key = K::order(row[a as usize], row[b as usize]);
                    let by_key = if order == Order::Descending {
                        by_key.reverse()
                    } else {
                        by_key
                    };
                    by_key.then(a.cmp(&b))
                });
                let got = &got_indices[r * k..(r + 1) * k];
                if got != &p[..k] {
                    return Err(format!("{at}: row {r}: positions differ from the model").into());
                }
                for (j, &position) in got.iter().enumerate() {
                    if got_values[r * k + j].bits() != row[position as usize].bits() {
                        return Err(format!("{at}: row {r} entry {j}: wrong value").into());
                    }
                }
            }
        }
    }
    Ok(())
}

fn register_key<K: Key16>(slot: &Slot, trials: &mut Vec<Trial>) {
    let name = K::NAME;
    trials.push(slot.trial(
        &format!("device::sixteen::{name}::every_pattern::asc"),
        |t| every_pattern::<K>(t, Order::Ascending),
    ));
    trials.push(slot.trial(
        &format!("device::sixteen::{name}::every_pattern::desc"),
        |t| every_pattern::<K>(t, Order::Descending),
    ));
    trials.push(slot.trial(&format!("device::sixteen::{name}::lengths"), lengths::<K>));
    trials.push(slot.trial(&format!("device::sixteen::{name}::pairs"), pairs::<K>));
    trials.push(slot.trial(&format!("device::sixteen::{name}::top_k"), top_k::<K>));
    trials.push(slot.trial(&format!("device::sixteen::{name}::counting"), counting::<K>));
}

pub fn register(slot: &Slot, trials: &mut Vec<Trial>) {
    register_key::<u16>(slot, trials);
    register_key::<i16>(slot, trials);
    #[cfg(feature = "half")]
    register_key::<half::f16>(slot, trials);
    #[cfg(feature = "half")]
    register_key::<half::bf16>(slot, trials);
}
