//! What the candle tests share.

/// A generator of 64-bit draws: the same sequence for the same seed.
pub fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 11
    }
}
