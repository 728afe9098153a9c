//! `Sorter::top_k_rows` on every target against a model: each row's positions ordered by key
//! (total order, floats as `total_cmp`) and then by position, the first `k` kept. Values are
//! compared bit for bit, indices exactly.
//!
//! Trials, per target (`cpu0`, `opencl0`, `cuda0`, ... as in the suite):
//! - `top_k::shapes::<order>`: u32 random keys, one row of 1..3 keys with every `k`, one row
//!   of 2^e - 1 and 2^e + 1 keys for e in 10..=17 with k in {1, 7, 32, 100, 256, 1000}.
//! - `top_k::keys::<type>::<pattern>`: u32 i32 f32 u8 i16 u16, and bf16 f16 with `half`
//!   (which GPUs read at 16 bits), random, all equal, three values, sorted, reversed and edge
//!   values (floats: NaNs of both signs and other payloads, +-0.0, +-inf); both orders;
//!   shapes (1, 3, 1), (1, 1025, 7), (2, 4097, 100), (64, 5000, 50), (17, 1024, 1024),
//!   (100, 1000, 32) and `k` = the row length.
//! - `top_k::large`: (3, 70001, 2048) in u32 and f32 edge values, both orders (the largest
//!   `k` on chip with 2^12-word tiles).
//! - `top_k::sort_path`: `k` past every on-chip limit (4097 and the row), 64-bit keys, and
//!   rows of 131073 with k = 4097 and 3000 (filtered before the sort on CUDA).
//!
//! Targets and gating are the suite's (`support/targets.rs`): a backend compiled in but
//! unavailable has its trials listed as ignored with the reason, never passed.

#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::fmt::Debug;

use bitonic::{Order, SortKey};
use libtest_mimic::{Arguments, Failed};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use targets::Target;

/// A key type of the trials: its order as an unsigned word and its raw bits.
trait Key: SortKey + Debug + PartialEq + 'static {
    const NAME: &'static str;
    /// The key's place in the total order, as an unsigned number.
    fn rank(self) -> u64;
    /// The raw bits.
    fn bits(self) -> u64;
    /// The key of these low bits of a random word.
    fn of(word: u64) -> Self;
    /// Edge values of the type.
    fn edges() -> Vec<Self>;
}

macro_rules! int_key {
    ($t:ty, $u:ty) => {
        impl Key for $t {
            const NAME: &'static str = stringify!($t);
            fn rank(self) -> u64 {
                ((self as $u) ^ ((<$t>::MIN as $u) & (1 << (<$u>::BITS - 1)))) as u64
            }
            fn bits(self) -> u64 {
                self as $u as u64
            }
            fn of(word: u64) -> Self {
                word as $t
            }
            fn edges() -> Vec<Self> {
                vec![<$t>::MIN, <$t>::MAX, 0, 1, <$t>::MIN.wrapping_add(1)]
            }
        }
    };
}

int_key!(u32, u32);
int_key!(i32, u32);
int_key!(u8, u8);
int_key!(i16, u16);
int_key!(u64, u64);
int_key!(u16, u16);

/// 16-bit floats: the sign rule of `total_cmp` at 16 bits.
#[cfg(feature = "half")]
macro_rules! half_key {
    ($t:ty) => {
        impl Key for $t {
            const NAME: &'static str = stringify!($t);
            fn rank(self) -> u64 {
                let b = self.to_bits();
                u64::from(if b >> 15 == 1 { !b } else { b | 0x8000 })
            }
            fn bits(self) -> u64 {
                u64::from(self.to_bits())
            }
            fn of(word: u64) -> Self {
                <$t>::from_bits(word as u16)
            }
            fn edges() -> Vec<Self> {
                [
                    0x7fc0u16, 0xffc0, 0x7f81, 0xff82, 0x7e01, 0, 0x8000, 0x7c00, 0xfc00,
                ]
                .into_iter()
                .map(<$t>::from_bits)
                .chain([1.5, -1.5, 65504.0, -0.25].map(<$t>::from_f32))
                .collect()
            }
        }
    };
}
#[cfg(feature = "half")]
half_key!(half::bf16);
#[cfg(feature = "half")]
half_key!(half::f16);

impl Key for f32 {
    const NAME: &'static str = "f32";
    fn rank(self) -> u64 {
        let b = self.to_bits();
        u64::from(if b >> 31 == 1 { !b } else { b | (1 << 31) })
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn of(word: u64) -> Self {
        f32::from_bits(word as u32)
    }
    fn edges() -> Vec<Self> {
        vec![
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7fc0_0001),
            f32::from_bits(0xffc0_0002),
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1.5,
            -1.5,
            f32::MIN_POSITIVE,
        ]
    }
}

#[derive(Clone, Copy, Debug)]
enum Pattern {
    Random,
    Equal,
    Few,
    Sorted,
    Reversed,
    Edges,
}

fn input<K: Key>(pattern: Pattern, n: usize, seed: u64) -> Vec<K> {
    let mut rng = StdRng::seed_from_u64(seed);
    let edges = K::edges();
    let mut keys: Vec<K> = (0..n)
        .map(|_| match pattern {
            Pattern::Equal => K::of(7),
            Pattern::Few => K::of(rng.gen_range(0..3u64).wrapping_sub(1)),
            Pattern::Edges => edges[rng.gen_range(0..edges.len())],
            _ => K::of(rng.r#gen()),
        })
        .collect();
    if matches!(pattern, Pattern::Sorted | Pattern::Reversed) {
        keys.sort_by_key(|k| k.rank());
        if matches!(pattern, Pattern::Reversed) {
            keys.reverse();
        }
    }
    keys
}

/// The model: per row, positions by (rank in `order`, position), the first `k`.
fn model<K: Key>(keys: &[K], row_len: usize, k: usize, order: Order) -> (Vec<u64>, Vec<u32>) {
    let mut bits = Vec::new();
    let mut indices = Vec::new();
    for row in keys.chunks(row_len) {
        let mut p: Vec<u32> = (0..row_len as u32).collect();
        p.sort_by_key(|&i| {
            let rank = row[i as usize].rank();
            (
                if order == Order::Descending {
                    !rank
                } else {
                    rank
                },
                i,
            )
        });
        for &i in &p[..k] {
            bits.push(row[i as usize].bits());
            indices.push(i);
        }
    }
    (bits, indices)
}

/// One top-k on the target against the model.
fn check<K: Key>(
    target: &Target,
    keys: &[K],
    row_len: usize,
    k: usize,
    order: Order,
) -> Result<(), Failed> {
    let what = || {
        format!(
            "{} rows of {row_len} {}, k {k}, {order:?}",
            keys.len() / row_len,
            K::NAME
        )
    };
    let top = target
        .sorter
        .top_k_rows(keys, row_len, k, order)
        .map_err(|e| format!("{}: {e}", what()))?;
    let (bits, indices) = model(keys, row_len, k, order);
    if top.indices != indices {
        let at = top.indices.iter().zip(&indices).position(|(a, b)| a != b);
        return Err(format!("{}: indices differ first at {at:?}", what()).into());
    }
    let got: Vec<u64> = top.values.iter().map(|v| v.bits()).collect();
    if got != bits {
        return Err(format!("{}: values differ", what()).into());
    }
    if top.k != k || top.rows() != keys.len() / row_len {
        return Err(format!("{}: k {} rows {}", what(), top.k, top.rows()).into());
    }
    Ok(())
}

const ORDERS: [Order; 2] = [Order::Ascending, Order::Descending];

fn shapes(target: &Target, order: Order) -> Result<(), Failed> {
    for n in 1..=3 {
        let keys = input::<u32>(Pattern::Random, n, target.seed + n as u64);
        for k in 1..=n {
            check(target, &keys, n, k, order)?;
        }
    }
    for e in 10..=17 {
        for n in [(1usize << e) - 1, (1 << e) + 1] {
            let keys = input::<u32>(Pattern::Random, n, target.seed ^ n as u64);
            for k in [1, 7, 32, 100, 256, 1000] {
                check(target, &keys, n, k, order)?;
            }
        }
    }
    Ok(())
}

fn keys_trial<K: Key>(target: &Target, pattern: Pattern) -> Result<(), Failed> {
    for (rows, row_len, k) in [
        (1, 3, 1),
        (1, 1025, 7),
        (2, 4097, 100),
        (64, 5000, 50),
        (17, 1024, 1024),
        (3, 300, 300),
        (100, 1000, 32),
    ] {
        let keys = input::<K>(
            pattern,
            rows * row_len,
            target.seed ^ (rows * row_len) as u64,
        );
        for order in ORDERS {
            check(target, &keys, row_len, k, order)?;
        }
    }
    Ok(())
}

fn large(target: &Target) -> Result<(), Failed> {
    let n = 3 * 70_001;
    let u = input::<u32>(Pattern::Random, n, target.seed);
    let f = input::<f32>(Pattern::Edges, n, target.seed + 1);
    for order in ORDERS {
        check(target, &u, 70_001, 2048, order)?;
        check(target, &f, 70_001, 2048, order)?;
    }
    Ok(())
}

fn sort_path(target: &Target) -> Result<(), Failed> {
    let u = input::<u32>(Pattern::Few, 2 * 5000, target.seed);
    let f = input::<f32>(Pattern::Edges, 5000, target.seed + 1);
    let w = input::<u64>(Pattern::Random, 3 * 1000, target.seed + 2);
    // Rows long enough for CUDA's candidate filter in front of the sort.
    let long_u = input::<u32>(Pattern::Few, 2 * 131_073, target.seed + 3);
    let long_f = input::<f32>(Pattern::Edges, 131_073, target.seed + 4);
    for order in ORDERS {
        check(target, &long_u, 131_073, 4097, order)?;
        check(target, &long_f, 131_073, 3000, order)?;
        check(target, &u, 5000, 4097, order)?;
        check(target, &u, 5000, 5000, order)?;
        check(target, &f, 5000, 4500, order)?;
        check(target, &w, 1000, 10, order)?;
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("top_k");
    let mut trials = found.failures;
    for slot in &found.slots {
        // The oblivious mode runs the same top-k: one mode per device is enough.
        if slot.label().ends_with("-oblivious") {
            continue;
        }
        for order in ORDERS {
            trials.push(slot.trial(&format!("top_k::shapes::{order:?}"), move |t| {
                shapes(t, order)
            }));
        }
        macro_rules! keys {
            ($t:ty, $patterns:expr) => {
                for pattern in $patterns {
                    let id = format!("top_k::keys::{}::{pattern:?}", <$t as Key>::NAME);
                    trials.push(slot.trial(&id, move |t| keys_trial::<$t>(t, pattern)));
                }
            };
        }
        use Pattern::*;
        keys!(u32, [Random, Equal, Few, Sorted, Reversed]);
        keys!(i32, [Random, Few, Reversed, Edges]);
        keys!(f32, [Random, Equal, Few, Sorted, Reversed, Edges]);
        keys!(u8, [Random, Few, Edges]);
        keys!(i16, [Random, Few, Sorted, Edges]);
        keys!(u16, [Random, Equal, Reversed]);
        #[cfg(feature = "half")]
        keys!(half::bf16, [Random, Few, Sorted, Edges]);
        #[cfg(feature = "half")]
        keys!(half::f16, [Random, Edges]);
        trials.push(slot.trial("top_k::large", large));
        trials.push(slot.trial("top_k::sort_path", sort_path));
    }
    libtest_mimic::run(&args, trials).exit()
}
