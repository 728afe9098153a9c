//! CUDA: 16-bit keys sorted in place in device memory, loaded as 16 bits and ordered in
//! 32-bit registers. `u16` and `i16` through the generic calls, and every 16-bit key type
//! (`f16`, `bf16` with `half`) as bits through the `*_bits` calls.
//!
//! - `device::sixteen::<key>::every_pattern`: all 65,536 bit patterns, shuffled, sorted bit
//!   for bit as `total_cmp` (integers numerically), both orders, in one array and in rows
//!   of 8192, 1024 and 7.
//! - `device::sixteen::<key>::lengths`: lengths 0-3, 1000 and 2^k - 1, 2^k, 2^k + 1 for
//!   k = 10, 13, 15, 17, 20 (around tiles and merges), random bits.
//! - `device::sixteen::<key>::pairs`: u32 positions as values move with their keys.
//! - `device::sixteen::<key>::top_k`: on-chip and sort routes against a model.
//! - `device::sixteen::<key>::counting`: the counting sort of one row from 2^23 keys on:
//!   lengths around that threshold, eight patterns, both orders, whole buffers and
//!   sub-slices whose keys are not 16-byte aligned.

use std::cmp::Ordering;

use bitonic::{Order, WordKey};
use libtest_mimic::{Failed, Trial};
use rand::Rng;
use rand::seq::SliceRandom;

use super::CuDev;
use crate::device::{DeviceApi, positions_follow_keys};
use crate::support::{input_seed, rng_for};
use crate::targets::{Slot, Target};

/// A 16-bit key type, its name and its order on bits.
trait Key16: WordKey {
    const NAME: &'static str;
    fn order(a: u16, b: u16) -> Ordering;
}

impl Key16 for u16 {
    const NAME: &'static str = "u16";
    fn order(a: u16, b: u16) -> Ordering {
        a.cmp(&b)
    }
}

impl Key16 for i16 {
    const NAME: &'static str = "i16";
    fn order(a: u16, b: u16) -> Ordering {
        (a as i16).cmp(&(b as i16))
    }
}

#[cfg(feature = "half")]
impl Key16 for half::f16 {
    const NAME: &'static str = "f16";
    fn order(a: u16, b: u16) -> Ordering {
        half::f16::from_bits(a).total_cmp(&half::f16::from_bits(b))
    }
}

#[cfg(feature = "half")]
impl Key16 for half::bf16 {
    const NAME: &'static str = "bf16";
    fn order(a: u16, b: u16) -> Ordering {
        half::bf16::from_bits(a).total_cmp(&half::bf16::from_bits(b))
    }
}

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

/// Sorts `bits` as rows of `row_len` keys of `K` on the device and returns them.
fn sort_rows<K: Key16>(
    dev: &CuDev,
    bits: &[u16],
    row_len: usize,
    order: Order,
) -> Result<Vec<u16>, String> {
    let mut keys = dev.upload(bits)?;
    dev.cuda()
        .sort_device_bits_rows::<K>(&mut keys, row_len, order, &dev.stream)
        .map_err(|e| format!("sort_device_bits_rows returned {e:?}"))?;
    dev.download(&keys)
}

fn every_pattern<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = CuDev::open(t)?;
    let at = format!("{}::device::sixteen::{}::every_pattern", t.label, K::NAME);
    let mut input: Vec<u16> = (0..=u16::MAX).collect();
    input.shuffle(&mut rng_for(input_seed(t.seed, &at, 65536)));
    for order in [Order::Ascending, Order::Descending] {
        let got =
            sort_rows::<K>(&dev, &input, input.len(), order).map_err(|e| format!("{at}: {e}"))?;
        check_rows::<K>(&got, &input, input.len(), order)
            .map_err(|e| format!("{at} {order:?}: {e}"))?;
        for row_len in [8192, 1024, 7] {
            let n = 65536 / row_len * row_len;
            let got = sort_rows::<K>(&dev, &input[..n], row_len, order)
                .map_err(|e| format!("{at}: {e}"))?;
            check_rows::<K>(&got, &input[..n], row_len, order)
                .map_err(|e| format!("{at} {order:?}, rows of {row_len}: {e}"))?;
        }
    }
    Ok(())
}

fn lengths<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = CuDev::open(t)?;
    let mut lens = vec![0usize, 1, 2, 3, 1000];
    for k in [10, 13, 15, 17, 20] {
        lens.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
    }
    for n in lens {
        let at = format!("{}::device::sixteen::{}::lengths::{n}", t.label, K::NAME);
        let mut rng = rng_for(input_seed(t.seed, &at, n));
        let input: Vec<u16> = (0..n).map(|_| rng.r#gen()).collect();
        for order in [Order::Ascending, Order::Descending] {
            let got =
                sort_rows::<K>(&dev, &input, n.max(1), order).map_err(|e| format!("{at}: {e}"))?;
            check_rows::<K>(&got, &input, n.max(1), order)
                .map_err(|e| format!("{at} {order:?}: {e}"))?;
        }
    }
    // The generic call takes u16 directly.
    let input: Vec<u16> = (0..5000u16).rev().collect();
    let mut keys = dev.upload(&input)?;
    dev.cuda()
        .sort_device(&mut keys, Order::Ascending, &dev.stream)
        .map_err(|e| format!("{}: sort_device::<u16> returned {e:?}", t.label))?;
    if dev.download(&keys)? != (0..5000u16).collect::<Vec<_>>() {
        return Err(format!("{}: sort_device::<u16> did not sort", t.label).into());
    }
    Ok(())
}

fn pairs<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = CuDev::open(t)?;
    for n in [1000usize, (1 << 17) + 3, 1 << 20] {
        let at = format!("{}::device::sixteen::{}::pairs::{n}", t.label, K::NAME);
        let mut rng = rng_for(input_seed(t.seed, &at, n));
        // Few distinct keys: many ties.
        let input: Vec<u16> = (0..n).map(|_| rng.r#gen::<u16>() & 0x8ff0).collect();
        let positions: Vec<u32> = (0..n as u32).collect();
        for order in [Order::Ascending, Order::Descending] {
            let mut keys = dev.upload(&input)?;
            let mut values = dev.upload(&positions)?;
            dev.cuda()
                .sort_device_bits_by_key::<K, u32>(&mut keys, &mut values, order, &dev.stream)
                .map_err(|e| format!("{at}: sort_device_bits_by_key returned {e:?}"))?;
            let got = dev.download(&keys)?;
            let got_values = dev.download(&values)?;
            check_rows::<K>(&got, &input, n, order).map_err(|e| format!("{at} {order:?}: {e}"))?;
            positions_follow_keys(&got, &got_values, &input)
                .map_err(|e| format!("{at} {order:?}: {e}"))?;
        }
    }
    Ok(())
}

fn top_k<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = CuDev::open(t)?;
    for (row_len, rows, k) in [
        (1000usize, 3usize, 10usize),
        (1024, 40, 32),
        (4096, 9, 256),
        (5000, 2, 3000),
        (1 << 16, 1, 64),
    ] {
        let at = format!(
            "{}::device::sixteen::{}::top_k::{row_len}x{rows}k{k}",
            t.label,
            K::NAME
        );
        let mut rng = rng_for(input_seed(t.seed, &at, row_len * rows));
        let input: Vec<u16> = (0..row_len * rows)
            .map(|_| rng.r#gen::<u16>() & 0xfff3)
            .collect();
        for order in [Order::Ascending, Order::Descending] {
            let keys = dev.upload(&input)?;
            let mut values = dev.upload(&vec![0u16; rows * k])?;
            let mut indices = dev.upload(&vec![0u32; rows * k])?;
            dev.cuda()
                .top_k_device_bits_rows::<K>(
                    &keys,
                    row_len,
                    k,
                    order,
                    &mut values,
                    &mut indices,
                    &dev.stream,
                )
                .map_err(|e| format!("{at}: top_k_device_bits_rows returned {e:?}"))?;
            let (got_v, got_i) = (dev.download(&values)?, dev.download(&indices)?);
            for r in 0..rows {
                let row = &input[r * row_len..(r + 1) * row_len];
                let mut want: Vec<u32> = (0..row_len as u32).collect();
                want.sort_by(|&a, &b| {
                    ordered::<K>(row[a as usize], row[b as usize], order).then(a.cmp(&b))
                });
                want.truncate(k);
                let want_v: Vec<u16> = want.iter().map(|&i| row[i as usize]).collect();
                if got_i[r * k..(r + 1) * k] != want[..] || got_v[r * k..(r + 1) * k] != want_v[..]
                {
                    return Err(format!("{at} {order:?}: row {r} differs from the model").into());
                }
            }
        }
    }
    Ok(())
}

/// Patterns of `n` 16-bit words for the counting sort: random bits, every pattern repeated
/// and shuffled, few distinct, one repeated, ascending, descending, a saw and an organ pipe.
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
    ]
}

/// One row of at least 2^23 keys takes the counting sort: lengths
/// around that threshold and its blocks' edges, every pattern, both orders, in a buffer of
/// its own and in a sub-slice that starts 2 bytes into one (its keys not 16-byte aligned),
/// nothing outside the sub-slice touched.
fn counting<K: Key16>(t: &Target) -> Result<(), Failed> {
    let dev = CuDev::open(t)?;
    let from = 1usize << 23;
    let lens = [
        from - 1,
        from,
        from + 1,
        from + 7,
        3 * from + 5,
        (1 << 24) + 3,
    ];
    for (l, &n) in lens.iter().enumerate() {
        let at = format!("{}::device::sixteen::{}::counting::{n}", t.label, K::NAME);
        let mut rng = rng_for(input_seed(t.seed, &at, n));
        for (p, (name, input)) in counting_patterns(&mut rng, n).into_iter().enumerate() {
            for order in [Order::Ascending, Order::Descending] {
                if (l + p) % 2 == 0 {
                    let got =
                        sort_rows::<K>(&dev, &input, n, order).map_err(|e| format!("{at}: {e}"))?;
                    check_rows::<K>(&got, &input, n, order)
                        .map_err(|e| format!("{at} {name} {order:?}: {e}"))?;
                    continue;
                }
                let mut padded = vec![0xabcdu16];
                padded.extend(&input);
                padded.push(0x1234);
                let buffer = dev.upload(&padded)?;
                let mut inside = buffer.index(1..1 + n);
                dev.cuda()
                    .sort_device_bits_rows::<K>(&mut inside, n, order, &dev.stream)
                    .map_err(|e| format!("{at}: a sub-slice: {e:?}"))?;
                let got = dev.download(&buffer)?;
                if got[0] != 0xabcd || got[n + 1] != 0x1234 {
                    return Err(format!("{at} {name} {order:?}: a key outside moved").into());
                }
                check_rows::<K>(&got[1..=n], &input, n, order)
                    .map_err(|e| format!("{at} {name} {order:?}, a sub-slice: {e}"))?;
            }
        }
    }
    Ok(())
}

fn register_key<K: Key16>(slot: &Slot, trials: &mut Vec<Trial>) {
    let name = |what: &str| format!("device::sixteen::{}::{what}", K::NAME);
    trials.push(slot.trial(&name("every_pattern"), every_pattern::<K>));
    trials.push(slot.trial(&name("lengths"), lengths::<K>));
    trials.push(slot.trial(&name("pairs"), pairs::<K>));
    trials.push(slot.trial(&name("top_k"), top_k::<K>));
    trials.push(slot.trial(&name("counting"), counting::<K>));
}

pub fn register(slot: &Slot, trials: &mut Vec<Trial>) {
    register_key::<u16>(slot, trials);
    register_key::<i16>(slot, trials);
    #[cfg(feature = "half")]
    register_key::<half::f16>(slot, trials);
    #[cfg(feature = "half")]
    register_key::<half::bf16>(slot, trials);
}
