//! Key and value types, input patterns and result checks shared by the trials of `suite.rs`.

use std::fmt::Debug;

use bitonic::SortKey;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A key type the suite sorts, with what it needs to build inputs and expected results.
pub trait TestKey: SortKey + Debug + 'static {
    /// The type's name in trial names.
    const NAME: &'static str;
    /// The raw bits, for comparisons that see -0.0 vs 0.0 and NaN payloads.
    fn bits(self) -> u64;
    /// Any value of the type, every bit pattern possible (NaNs included for floats).
    fn random(rng: &mut StdRng) -> Self;
    /// A value from the edges of the type: MIN, MAX, zeros, NaNs, infinities, subnormals.
    fn special(rng: &mut StdRng) -> Self;
    /// What the sorter must produce ascending: `sort_unstable` for integers,
    /// `sort_by(total_cmp)` for floats.
    fn reference_sort(keys: &mut [Self]);
}

macro_rules! int_key {
    ($t:ty, $bits:ty) => {
        impl TestKey for $t {
            const NAME: &'static str = stringify!($t);

            fn bits(self) -> u64 {
                self as $bits as u64
            }

            fn random(rng: &mut StdRng) -> Self {
                rng.r#gen()
            }

            fn special(rng: &mut StdRng) -> Self {
                const EDGES: [$t; 7] = [
                    <$t>::MIN,
                    <$t>::MAX,
                    <$t>::MIN.wrapping_add(1),
                    <$t>::MAX.wrapping_sub(1),
                    0,
                    1,
                    (0 as $t).wrapping_sub(1),
                ];
                EDGES[rng.gen_range(0..EDGES.len())]
            }

            fn reference_sort(keys: &mut [Self]) {
                keys.sort_unstable();
            }
        }
    };
}

int_key!(u8, u8);
int_key!(i8, u8);
int_key!(u16, u16);
int_key!(i16, u16);
int_key!(u32, u32);
int_key!(i32, u32);
int_key!(u64, u64);
int_key!(i64, u64);

macro_rules! float_key {
    ($t:ident, $bits:ty) => {
        impl TestKey for $t {
            const NAME: &'static str = stringify!($t);

            fn bits(self) -> u64 {
                self.to_bits() as u64
            }

            fn random(rng: &mut StdRng) -> Self {
                $t::from_bits(rng.r#gen())
            }

            fn special(rng: &mut StdRng) -> Self {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                const EXP: $bits = $t::INFINITY.to_bits();
                const MANT: $bits = !(SIGN | EXP);
                let sign = if rng.r#gen() { SIGN } else { 0 };
                let mantissa = (rng.r#gen::<$bits>() & MANT).max(1);
                match rng.gen_range(0..16) {
                    0 => $t::NAN,
                    1 => -$t::NAN,
                    // NaNs with payloads, quiet or signalling, of either sign.
                    2 | 3 => $t::from_bits(sign | EXP | mantissa),
                    4 => 0.0,
                    5 => -0.0,
                    6 => $t::INFINITY,
                    7 => $t::NEG_INFINITY,
                    8 => $t::MIN,
                    9 => $t::MAX,
                    10 => $t::MIN_POSITIVE,
                    11 => -$t::MIN_POSITIVE,
                    // Subnormals, the smallest of either sign among them.
                    12 | 13 => $t::from_bits(sign | mantissa),
                    14 => $t::from_bits(sign | 1),
                    _ => $t::from_bits(sign | ($t::MIN_POSITIVE.to_bits() - 1)),
                }
            }

            fn reference_sort(keys: &mut [Self]) {
                keys.sort_by($t::total_cmp);
            }
        }
    };
}

float_key!(f32, u32);
float_key!(f64, u64);

/// A value type moved with the keys: plain data of 4 or 8 bytes.
pub trait TestValue: bytemuck::Pod + Debug + Send + 'static {
    /// The type's name in trial names.
    const NAME: &'static str;
    /// The value for input position `i`: distinct for distinct `i`, scrambled by `salt`.
    fn make(i: usize, salt: u64) -> Self;
    /// The raw bits.
    fn bits(self) -> u64;
}

fn scramble32(i: usize, salt: u64) -> u32 {
    // An odd multiplier is a bijection on u32, so values of distinct positions stay distinct.
    (i as u32).wrapping_mul(0x9E37_79B9) ^ salt as u32
}

impl TestValue for u32 {
    const NAME: &'static str = "u32";
    fn make(i: usize, salt: u64) -> Self {
        scramble32(i, salt)
    }
    fn bits(self) -> u64 {
        u64::from(self)
    }
}

impl TestValue for u64 {
    const NAME: &'static str = "u64";
    fn make(i: usize, salt: u64) -> Self {
        (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt
    }
    fn bits(self) -> u64 {
        self
    }
}

/// Float values cover every bit pattern, NaNs (signalling ones too) included: they must
/// travel as plain bits.
impl TestValue for f32 {
    const NAME: &'static str = "f32";
    fn make(i: usize, salt: u64) -> Self {
        f32::from_bits(scramble32(i, salt))
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

/// Four bytes aligned to one: the sorter cannot view these as words in place.
impl TestValue for [u8; 4] {
    const NAME: &'static str = "u8x4";
    fn make(i: usize, salt: u64) -> Self {
        scramble32(i, salt).to_le_bytes()
    }
    fn bits(self) -> u64 {
        u64::from(u32::from_le_bytes(self))
    }
}

/// How the keys of an input are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Every bit pattern of the type, uniformly.
    Random,
    /// Random keys already in ascending order.
    Sorted,
    /// Random keys in descending order.
    Reversed,
    /// One value repeated.
    Equal,
    /// Three distinct values.
    Few,
    /// Half edge values (MIN, MAX, NaNs, zeros, infinities, subnormals), half random.
    Special,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: [Pattern; 6] = [
        Pattern::Random,
        Pattern::Sorted,
        Pattern::Reversed,
        Pattern::Equal,
        Pattern::Few,
        Pattern::Special,
    ];

    /// The pattern's name in trial names.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Sorted => "sorted",
            Pattern::Reversed => "reversed",
            Pattern::Equal => "equal",
            Pattern::Few => "few3",
            Pattern::Special => "special",
        }
    }

    /// `n` keys of this pattern.
    pub fn keys<K: TestKey>(self, n: usize, rng: &mut StdRng) -> Vec<K> {
        match self {
            Pattern::Random => (0..n).map(|_| K::random(rng)).collect(),
            Pattern::Sorted | Pattern::Reversed => {
                let mut keys: Vec<K> = (0..n).map(|_| K::random(rng)).collect();
                K::reference_sort(&mut keys);
                if self == Pattern::Reversed {
                    keys.reverse();
                }
                keys
            }
            Pattern::Equal => vec![K::random(rng); n],
            Pattern::Few => {
                let pool = [K::random(rng), K::random(rng), K::random(rng)];
                (0..n).map(|_| pool[rng.gen_range(0..3)]).collect()
            }
            Pattern::Special => (0..n)
                .map(|_| {
                    if rng.r#gen() {
                        K::special(rng)
                    } else {
                        K::random(rng)
                    }
                })
                .collect(),
        }
    }
}

/// The seed of one input: a hash of the base seed, the trial's name without its target
/// (so that every target sorts the same inputs) and the length.
pub fn input_seed(base: u64, case: &str, n: usize) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ base;
    for b in case.bytes().chain((n as u64).to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A generator for one input.
pub fn rng_for(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// The first position where the two slices differ in bits (or the shorter one's length).
pub fn first_key_diff<K: TestKey>(got: &[K], want: &[K]) -> Option<usize> {
    got.iter()
        .zip(want)
        .position(|(a, b)| a.bits() != b.bits())
        .or((got.len() != want.len()).then(|| got.len().min(want.len())))
}

/// A key for a message: its value and its bits.
pub fn show_key<K: TestKey>(k: K) -> String {
    format!("{k:?} (bits {:#x})", k.bits())
}

/// A value for a message: its value and its bits.
pub fn show_value<V: TestValue>(v: V) -> String {
    format!("{v:?} (bits {:#x})", v.bits())
}

/// A short view of `keys` around position `i`, for failure messages.
pub fn around<K: TestKey>(keys: &[K], i: usize) -> String {
    let lo = i.saturating_sub(2);
    let hi = (i + 3).min(keys.len());
    let shown: Vec<String> = keys[lo..hi].iter().map(|k| format!("{k:?}")).collect();
    format!("[{lo}..{hi}] = [{}]", shown.join(", "))
}

/// (key bits, value bits) of every pair, sorted: the multiset of pairs.
pub fn pair_multiset<K: TestKey, V: TestValue>(keys: &[K], values: &[V]) -> Vec<(u64, u64)> {
    let mut pairs: Vec<(u64, u64)> = keys
        .iter()
        .zip(values)
        .map(|(k, v)| (k.bits(), v.bits()))
        .collect();
    pairs.sort_unstable();
    pairs
}

// ---------------------------------------------------------------------------------------
// Settings from the environment, read the same way by every test binary.

/// The base seed of every input unless `BITONIC_TEST_SEED` says otherwise.
pub const DEFAULT_SEED: u64 = 0xB170_71C5_0127_5EED;

/// A trimmed, non-empty environment variable; none when unset or blank.
pub fn env_string(var: &str) -> Result<Option<String>, String> {
    match std::env::var(var) {
        Ok(s) if s.trim().is_empty() => Ok(None),
        Ok(s) => Ok(Some(s.trim().to_string())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => Err(format!("{var}: {e}")),
    }
}

/// A comma-separated list of backends (`cuda,opencl,cpu`); none when unset.
pub fn env_backends(var: &str) -> Result<Option<Vec<bitonic::BackendKind>>, String> {
    let Some(s) = env_string(var)? else {
        return Ok(None);
    };
    s.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            bitonic::BackendKind::parse(part)
                .ok_or_else(|| format!("{var}={s:?}: {part:?} is not one of cuda, opencl, cpu"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A number from the environment (decimal with `_`, or `0x` hex); none when unset.
pub fn env_number(var: &str) -> Result<Option<u64>, String> {
    let Some(s) = env_string(var)? else {
        return Ok(None);
    };
    let digits = s.replace('_', "");
    let parsed = match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse(),
    };
    parsed
        .map(Some)
        .map_err(|e| format!("{var}={s:?} is not a number: {e}"))
}

// ---------------------------------------------------------------------------------------
// Sorting through the public API and checking against the reference, for every test binary.

/// Sorts `keys` with `sorter`, descending when asked.
pub fn sort_keys<K: TestKey>(
    sorter: &bitonic::Sorter,
    keys: &mut [K],
    descending: bool,
) -> bitonic::Result<()> {
    if descending {
        sorter.sort(keys, bitonic::Order::Descending)
    } else {
        sorter.sort(keys, bitonic::Order::Ascending)
    }
}

/// Sorts `keys` with their `values`, descending when asked.
pub fn sort_pairs<K: TestKey, V: bytemuck::Pod>(
    sorter: &bitonic::Sorter,
    keys: &mut [K],
    values: &mut [V],
    descending: bool,
) -> bitonic::Result<()> {
    if descending {
        sorter.sort_by_key(keys, values, bitonic::Order::Descending)
    } else {
        sorter.sort_by_key(keys, values, bitonic::Order::Ascending)
    }
}

/// The expected keys: the reference sort, reversed for descending.
pub fn expected<K: TestKey>(input: &[K], descending: bool) -> Vec<K> {
    let mut want = input.to_vec();
    K::reference_sort(&mut want);
    if descending {
        want.reverse();
    }
    want
}

/// `got` equals `want`, or where and how they first differ.
pub fn check_keys<K: TestKey>(got: &[K], want: &[K]) -> Result<(), String> {
    match first_key_diff(got, want) {
        None => Ok(()),
        Some(i) => Err(format!(
            "wrong key at index {i} of {}: got {}, want {}; got {}, want {}",
            want.len(),
            show_key(got[i]),
            show_key(want[i]),
            around(got, i),
            around(want, i)
        )),
    }
}
