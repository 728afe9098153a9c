//! Sorts of keys alone of every width, both ways, against `sort_unstable` (`total_cmp`
//! for floats), on the production tiles and on tiles lowered to exercise global passes.

use super::*;

fn run_keys<T: SortKey + std::fmt::Debug>(
    seed: u64,
    special: &[T],
    small: impl Fn(u64) -> T,
    any: impl Fn(u64) -> T,
    cmp: fn(&T, &T) -> Ordering,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    for n in lengths(15, true) {
        let keys = words(&mut rng, n, special, &small, &any);
        check_keys(&keys, cmp);
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_u32() {
    run_keys(
        1,
        &[0, 1, u32::MAX, u32::MAX - 1, 1 << 31],
        |x| x as u32,
        |x| x as u32,
        u32::cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_u64() {
    run_keys(
        2,
        &[0, 1, u64::MAX, u64::MAX - 1, 1 << 63, u64::from(u32::MAX)],
        |x| x,
        |x| x,
        u64::cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_i32() {
    run_keys(
        3,
        &[0, -1, 1, i32::MIN, i32::MAX],
        |x| x as i32 - 8,
        |x| x as i32,
        i32::cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_i64() {
    run_keys(
        4,
        &[0, -1, 1, i64::MIN, i64::MAX],
        |x| x as i64 - 8,
        |x| x as i64,
        i64::cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_f32() {
    let special = [
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xff80_0001),
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::MIN,
        f32::MAX,
        f32::MIN_POSITIVE,
        -1e-45,
    ];
    run_keys(
        5,
        &special,
        |x| x as f32 - 7.5,
        |x| f32::from_bits(x as u32),
        f32::total_cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_f64() {
    let special = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff8_0000_0000_1234),
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        f64::MIN,
        f64::MAX,
        f64::MIN_POSITIVE,
        -5e-324,
    ];
    run_keys(
        6,
        &special,
        |x| x as f64 - 7.5,
        f64::from_bits,
        f64::total_cmp,
    );
}
