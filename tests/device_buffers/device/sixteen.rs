//! `device::sixteen::<key>::*`: 16-bit keys sorted in place in device memory (`u16`, `i16`,
//! and with the `half` feature `f16`, `bf16`), which the kernels load as 16 bits and order
//! in 32-bit registers. The same trials for both backends through `Dev16`: CUDA holds the
//! keys as bits and names the key type (`sort_device_bits*`: cust cannot copy half's
//! types), OpenCL holds the keys themselves (the generic calls).
//!
//! - `every_pattern::<order>`: all 65,536 bit patterns, shuffled, sorted bit for bit as
//!   `total_cmp` (integers numerically), in one array and in rows of 8192, 1024 and 7.
//! - `lengths`: lengths 0 (where buffers may be empty), 1-3, 1000 and 2^k - 1, 2^k,
//!   2^k + 1 for k = 10, 13, 15, 17, 20 (around tiles and merges), random bits, and at even
//!   lengths also few distinct values; both orders. Then `sort_device::<u16>`, the generic
//!   call, of 5000 keys.
//! - `pairs`: u32 positions as values move with their keys: lengths 3 to 2^20, random bits
//!   and many ties, both orders.
//! - `top_k`: `top_k_device_rows` against a model, on the on-chip route and the sort route,
//!   two inputs, both orders.
//! - `counting`: the counting sort of one row from 2^23 keys on. On CPU devices lengths
//!   2^23 - 1, 2^23, 2^23 + 7, one pattern each (random, few, one NaN repeated), both
//!   orders. On GPUs also 2^23 + 1, 3 * 2^23 + 5, 2^24 + 3, every pattern at every length,
//!   half of them (CUDA) in a view that starts 2 bytes into a buffer (its keys not 16-byte
//!   aligned), nothing outside the view touched.

use std::cmp::Ordering;

use bitonic::{Order, WordKey};
use libtest_mimic::{Failed, Trial};
use rand::Rng;
use rand::seq::SliceRandom;

use super::{DeviceApi, order_name};
use crate::support::{input_seed, rng_for};
use crate::targets::{Slot, Target};

/// A 16-bit key type, its name and its order on bits.
pub trait Key16: WordKey + bytemuck::Pod + std::fmt::Debug + Send + Sync + 'static {
    const NAME: &'static str;
    /// `total_cmp` for floats, numeric order for integers.
    fn order(a: u16, b: u16) -> Ordering;
}

macro_rules! key16 {
    ($($t:ty, $name:literal, |$a:ident, $b:ident| $cmp:expr;)*) => {$(
        impl Key16 for $t {
            const NAME: &'static str = $name;
            fn order($a: u16, $b: u16) -> Ordering {
                $cmp
            }
        }
    )*};
}

key16! {
    u16, "u16", |a, b| a.cmp(&b);
    i16, "i16", |a, b| (a as i16).cmp(&(b as i16));
}
#[cfg(feature = "half")]
key16! {
    half::f16, "f16", |a, b| half::f16::from_bits(a).total_cmp(&half::f16::from_bits(b));
    half::bf16, "bf16", |a, b| half::bf16::from_bits(a).total_cmp(&half::bf16::from_bits(b));
}

/// A backend's device-resident calls on 16-bit keys of type `K`, given and returned as
/// their bits.
pub trait Dev16: DeviceApi {
    /// A device buffer of keys of type `K` (CUDA: their bits).
    type Keys16<K: Key16>;
    fn upload16<K: Key16>(&self, bits: &[u16]) -> Result<Self::Keys16<K>, String>;
    fn download16<K: Key16>(&self, keys: &Self::Keys16<K>) -> Result<Vec<u16>, String>;
    /// `sort_device` (CUDA: `sort_device_bits`).
    fn sort16<K: Key16>(&self, keys: &mut Self::Keys16<K>, order: Order) -> bitonic::Result<()>;
    fn sort16_rows<K: Key16>(
        &self,
        keys: &mut Self::Keys16<K>,
        row_len: usize,
        order: Order,
    ) -> bitonic::Result<()>;
    fn sort16_by_key<K: Key16>(
        &self,
        keys: &mut Self::Keys16<K>,
        values: &mut Self::Buf<u32>,
        order: Order,
    ) -> bitonic::Result<()>;
    fn top_k16_rows<K: Key16>(
        &self,
        keys: &Self::Keys16<K>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut Self::Keys16<K>,
        indices: &mut Self::Buf<u32>,
    ) -> bitonic::Result<()>;
    /// Sorts keys 1..=n of `padded` (n + 2 keys) as one row through a view that starts one
    /// key (2 bytes) into the buffer; `None` where the backend has no such views (OpenCL
    /// sub-buffers start at aligned offsets).
    fn sort16_unaligned<K: Key16>(
        &self,
        padded: &mut Self::Keys16<K>,
        n: usize,
        order: Order,
    ) -> Option<bitonic::Result<()>>;
}

/// The sorts of a `Dev16` impl, forwarded to the calls of `self.$backend()` named here
/// (generic over the key type first) on the caller's stream or queue.
macro_rules! forward_16_calls {
    ($backend:ident: $sort:ident, $rows:ident, $by_key:ident, $top_k:ident) => {
        fn sort16<K: $crate::device::sixteen::Key16>(
            &self,
            keys: &mut Self::Keys16<K>,
            order: bitonic::Order,
        ) -> bitonic::Result<()> {
            self.$backend().$sort::<K>(keys, order, self.queue())
        }

        fn sort16_rows<K: $crate::device::sixteen::Key16>(
            &self,
            keys: &mut Self::Keys16<K>,
            row_len: usize,
            order: bitonic::Order,
        ) -> bitonic::Result<()> {
            self.$backend()
                .$rows::<K>(keys, row_len, order, self.queue())
        }

        fn sort16_by_key<K: $crate::device::sixteen::Key16>(
            &self,
            keys: &mut Self::Keys16<K>,
            values: &mut Self::Buf<u32>,
            order: bitonic::Order,
        ) -> bitonic::Result<()> {
            self.$backend()
                .$by_key::<K, u32>(keys, values, order, self.queue())
        }

        fn top_k16_rows<K: $crate::device::sixteen::Key16>(
            &self,
            keys: &Self::Keys16<K>,
            row_len: usize,
            k: usize,
            order: bitonic::Order,
            values: &mut Self::Keys16<K>,
            indices: &mut Self::Buf<u32>,
        ) -> bitonic::Result<()> {
            let queue = self.queue();
            self.$backend()
                .$top_k::<K>(keys, row_len, k, order, values, indices, queue)
        }
    };
}
pub(crate) use forward_16_calls;

fn ordered<K: Key16>(a: u16, b: u16, order: Order) -> Ordering {
    match order {
        Order::Ascending => K::order(a, b),
        Order::Descending => K::order(b, a),
    }
}

fn check_rows<K: Key16>(
    got: &[u16],
    input: &[u16],
    row_len: usize,
    order: Order,
) -> Result<(), String> {
    if got.len() != input.len() {
        return Err("the length changed".into());
    }
    for (r, (g, i)) in got.chunks(row_len).zip(input.chunks(row_len)).enumerate() {
        let mut want = i.to_vec();
        want.sort_by(|&a, &b| ordered::<K>(a, b, order));
        if let Some(p) = g.iter().zip(&want).position(|(x, y)| x != y) {
            return Err(format!(
                "row {r} index {p}: {:#06x}, want {:#06x}",
                g[p], want[p]
            ));
        }
    }
    Ok(())
}

/// Checks the values of a key-value sort of `input` with its positions as values: every
/// position comes once, each beside the key it holds in `input` (keys compared as bits).
fn positions_follow_keys(got: &[u16], positions: &[u32], input: &[u16]) -> Result<(), String> {
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

/// Sorts `bits` as one array (`row_len` None) or as rows of keys of `K` and returns them.
fn sorted<D: Dev16, K: Key16>(
    dev: &D,
    bits: &[u16],
    row_len: Option<usize>,
    order: Order,
) -> Result<Vec<u16>, String> {
    let mut keys = dev.upload16::<K>(bits)?;
    match row_len {
        None => dev
            .sort16::<K>(&mut keys, order)
            .map_err(|e| format!("sort_device returned {e:?}"))?,
        Some(row_len) => dev
            .sort16_rows::<K>(&mut keys, row_len, order)
            .map_err(|e| format!("sort_device_rows returned {e:?}"))?,
    }
    dev.download16::<K>(&keys)
}

/// Every bit pattern, shuffled, as one array and as rows.
fn every_pattern<D: Dev16, K: Key16>(t: &Target, order: Order) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let at = format!(
        "{}::device::sixteen::{}::every_pattern::{}",
        t.label,
        K::NAME,
        order_name(order)
    );
    let mut input: Vec<u16> = (0..=u16::MAX).collect();
    input.shuffle(&mut rng_for(input_seed(t.seed, &at, 65536)));
    let got = sorted::<D, K>(&dev, &input, None, order).map_err(|e| format!("{at}: {e}"))?;
    check_rows::<K>(&got, &input, input.len(), order).map_err(|e| format!("{at}: {e}"))?;
    for row_len in [8192, 1024, 7] {
        let n = 65536 / row_len * row_len;
        let got = sorted::<D, K>(&dev, &input[..n], Some(row_len), order)
            .map_err(|e| format!("{at}: {e}"))?;
        check_rows::<K>(&got, &input[..n], row_len, order)
            .map_err(|e| format!("{at}, rows of {row_len}: {e}"))?;
    }
    Ok(())
}

fn lengths<D: Dev16, K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let mut lens: Vec<usize> = if D::EMPTY_BUFFERS { vec![0] } else { vec![] };
    lens.extend([1, 2, 3, 1000]);
    for k in [10, 13, 15, 17, 20] {
        lens.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
    }
    for n in lens {
        // Random bits; at even lengths also few distinct values.
        let few = n % 2 == 0;
        for input_name in ["random", "few"].into_iter().take(1 + usize::from(few)) {
            let at = format!(
                "{}::device::sixteen::{}::lengths::{n}::{input_name}",
                t.label,
                K::NAME
            );
            let mut rng = rng_for(input_seed(t.seed, &at, n));
            let input: Vec<u16> = match input_name {
                "random" => (0..n).map(|_| rng.r#gen()).collect(),
                _ => (0..n).map(|_| rng.gen_range(0..3) * 0x7001).collect(),
            };
            for order in [Order::Ascending, Order::Descending] {
                let got =
                    sorted::<D, K>(&dev, &input, None, order).map_err(|e| format!("{at}: {e}"))?;
                check_rows::<K>(&got, &input, n.max(1), order)
                    .map_err(|e| format!("{at} {order:?}: {e}"))?;
            }
        }
    }
    // The generic call takes u16 directly.
    let input: Vec<u16> = (0..5000u16).rev().collect();
    let mut keys = dev.upload(&input)?;
    dev.sort(&mut keys, Order::Ascending, dev.queue())
        .map_err(|e| format!("{}: sort_device::<u16> returned {e:?}", t.label))?;
    if dev.download(&keys)? != (0..5000u16).collect::<Vec<_>>() {
        return Err(format!("{}: sort_device::<u16> did not sort", t.label).into());
    }
    Ok(())
}

fn pairs<D: Dev16, K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    for n in [3usize, 1000, 4097, 70_001, (1 << 17) + 3, 1 << 20] {
        // Random bits, and few distinct keys: many ties.
        for (input_name, mask) in [("random", 0xffffu16), ("ties", 0x8ff0)] {
            let at = format!(
                "{}::device::sixteen::{}::pairs::{n}::{input_name}",
                t.label,
                K::NAME
            );
            let mut rng = rng_for(input_seed(t.seed, &at, n));
            let input: Vec<u16> = (0..n).map(|_| rng.r#gen::<u16>() & mask).collect();
            let positions: Vec<u32> = (0..n as u32).collect();
            for order in [Order::Ascending, Order::Descending] {
                let mut keys = dev.upload16::<K>(&input)?;
                let mut values = dev.upload(&positions)?;
                dev.sort16_by_key::<K>(&mut keys, &mut values, order)
                    .map_err(|e| format!("{at}: sort_device_by_key returned {e:?}"))?;
                let got = dev.download16::<K>(&keys)?;
                let got_values = dev.download(&values)?;
                check_rows::<K>(&got, &input, n, order)
                    .map_err(|e| format!("{at} {order:?}: {e}"))?;
                positions_follow_keys(&got, &got_values, &input)
                    .map_err(|e| format!("{at} {order:?}: {e}"))?;
            }
        }
    }
    Ok(())
}

fn top_k<D: Dev16, K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    for (rows, row_len, k) in [
        (1usize, 1usize, 1usize),
        (3, 1000, 10),
        (40, 1024, 32),
        (9, 4096, 256),
        (3, 5000, 100),
        (2, 5000, 3000),
        (2, 9000, 3000),
        (1, 1 << 16, 64),
        (1, 70_001, 2048),
    ] {
        // Thirty distinct keys, or random bits with two bits cleared.
        for input_name in ["few", "masked"] {
            let at = format!(
                "{}::device::sixteen::{}::top_k: {rows} rows of {row_len}, k = {k}, {input_name}",
                t.label,
                K::NAME
            );
            let mut rng = rng_for(input_seed(t.seed, &at, row_len * rows));
            let input: Vec<u16> = match input_name {
                "few" => (0..rows * row_len)
                    .map(|_| rng.gen_range(0..30) * 0x0811)
                    .collect(),
                _ => (0..rows * row_len)
                    .map(|_| rng.r#gen::<u16>() & 0xfff3)
                    .collect(),
            };
            for order in [Order::Ascending, Order::Descending] {
                let keys = dev.upload16::<K>(&input)?;
                let mut values = dev.upload16::<K>(&vec![0u16; rows * k])?;
                let mut indices = dev.upload(&vec![0u32; rows * k])?;
                dev.top_k16_rows::<K>(&keys, row_len, k, order, &mut values, &mut indices)
                    .map_err(|e| format!("{at}: top_k_device_rows returned {e:?}"))?;
                let (got_v, got_i) = (dev.download16::<K>(&values)?, dev.download(&indices)?);
                for (r, row) in input.chunks(row_len).enumerate() {
                    let mut want: Vec<u32> = (0..row_len as u32).collect();
                    want.sort_by(|&a, &b| {
                        ordered::<K>(row[a as usize], row[b as usize], order).then(a.cmp(&b))
                    });
                    want.truncate(k);
                    if got_i[r * k..(r + 1) * k] != want[..] {
                        return Err(format!(
                            "{at} {order:?}: row {r}: positions differ from the model"
                        )
                        .into());
                    }
                    let want_v: Vec<u16> = want.iter().map(|&i| row[i as usize]).collect();
                    if got_v[r * k..(r + 1) * k] != want_v[..] {
                        return Err(format!("{at} {order:?}: row {r}: wrong values").into());
                    }
                }
            }
        }
    }
    Ok(())
}

/// Patterns of `n` 16-bit words for the counting sort: random bits, every pattern repeated
/// and shuffled, few distinct, one repeated, ascending, descending, a saw, an organ pipe,
/// three distinct and one NaN (f16 and bf16) repeated.
fn counting_patterns(rng: &mut impl Rng, n: usize) -> Vec<(&'static str, Vec<u16>)> {
    let mut every: Vec<u16> = (0..n).map(|i| i as u16).collect();
    every.shuffle(rng);
    vec![
        ("random", (0..n).map(|_| rng.r#gen()).collect()),
        ("every", every),
        (
            "few",
            (0..n).map(|_| rng.gen_range(0..4u16) * 0x5555).collect(),
        ),
        ("equal", vec![0x7e00; n]),
        ("ascending", (0..n).map(|i| i as u16).collect()),
        ("descending", (0..n).map(|i| (n - i) as u16).collect()),
        ("saw", (0..n).map(|i| (i % 37) as u16).collect()),
        ("organ", (0..n).map(|i| i.min(n - 1 - i) as u16).collect()),
        (
            "three",
            (0..n).map(|_| rng.gen_range(0..3u16) * 0x7001).collect(),
        ),
        ("nan", vec![0xfc01; n]),
    ]
}

/// One row of at least 2^23 keys takes the counting sort: lengths around that threshold and
/// its blocks' edges, both orders; see the module's documentation for which patterns where.
fn counting<D: Dev16, K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = D::open(t)?;
    let from = 1usize << 23;
    let gpu = t.info.device_type != bitonic::DeviceType::Cpu;
    // 2^23 keys take a few seconds on PoCL in a debug build: three sorts per order there.
    let lens = if gpu {
        vec![
            from - 1,
            from,
            from + 1,
            from + 7,
            3 * from + 5,
            (1 << 24) + 3,
        ]
    } else {
        vec![from - 1, from, from + 7]
    };
    for (l, &n) in lens.iter().enumerate() {
        let at = format!("{}::device::sixteen::{}::counting::{n}", t.label, K::NAME);
        let mut rng = rng_for(input_seed(t.seed, &at, n));
        let mut patterns = counting_patterns(&mut rng, n);
        if !gpu {
            let keep = ["random", "three", "nan"][l % 3];
            patterns.retain(|(name, _)| *name == keep);
        }
        for (p, (name, input)) in patterns.into_iter().enumerate() {
            for order in [Order::Ascending, Order::Descending] {
                let at = format!("{at} {name} {order:?}");
                if (l + p) % 2 == 1 {
                    let mut padded = vec![0xabcdu16];
                    padded.extend(&input);
                    padded.push(0x1234);
                    let mut buffer = dev.upload16::<K>(&padded)?;
                    if let Some(sorted) = dev.sort16_unaligned::<K>(&mut buffer, n, order) {
                        sorted.map_err(|e| format!("{at}: a view 2 bytes in: {e:?}"))?;
                        let got = dev.download16::<K>(&buffer)?;
                        if got[0] != 0xabcd || got[n + 1] != 0x1234 {
                            return Err(format!("{at}: a key outside the view moved").into());
                        }
                        check_rows::<K>(&got[1..=n], &input, n, order)
                            .map_err(|e| format!("{at}, a view 2 bytes in: {e}"))?;
                        continue;
                    }
                }
                let got =
                    sorted::<D, K>(&dev, &input, None, order).map_err(|e| format!("{at}: {e}"))?;
                check_rows::<K>(&got, &input, n, order).map_err(|e| format!("{at}: {e}"))?;
            }
        }
    }
    Ok(())
}

fn register_key<D: Dev16 + 'static, K: Key16>(slot: &Slot, trials: &mut Vec<Trial>) {
    let name = |what: &str| format!("device::sixteen::{}::{what}", K::NAME);
    for order in [Order::Ascending, Order::Descending] {
        let o = order_name(order);
        trials.push(slot.trial(&name(&format!("every_pattern::{o}")), move |t| {
            every_pattern::<D, K>(t, order)
        }));
    }
    trials.push(slot.trial(&name("lengths"), lengths::<D, K>));
    trials.push(slot.trial(&name("pairs"), pairs::<D, K>));
    trials.push(slot.trial(&name("top_k"), top_k::<D, K>));
    trials.push(slot.trial(&name("counting"), counting::<D, K>));
}

pub fn register<D: Dev16 + 'static>(slot: &Slot, trials: &mut Vec<Trial>) {
    register_key::<D, u16>(slot, trials);
    register_key::<D, i16>(slot, trials);
    #[cfg(feature = "half")]
    register_key::<D, half::f16>(slot, trials);
    #[cfg(feature = "half")]
    register_key::<D, half::bf16>(slot, trials);
}
