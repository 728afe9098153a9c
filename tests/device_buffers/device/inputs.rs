//! The inputs of the device-resident trials: the suite's patterns, edge values only, and
//! distinct keys.

use rand::Rng;

use super::DevKey;
use crate::support::Pattern;
use crate::targets::Target;

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

pub fn context(t: &Target, id: &str, input: Input, n: usize, seed: u64) -> String {
    format!(
        "{}::{id}: {} input, n={n}, input seed {seed:#018x} (base seed {:#x})",
        t.label,
        input.name(),
        t.seed
    )
}
