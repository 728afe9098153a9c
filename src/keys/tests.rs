//! Tests of the keys' ordered bits: float, signed, narrow and half encodings against the
//! types' own orders, and the cut of words into pieces.

use super::*;

#[test]
fn cut_gives_consecutive_pieces_in_order() {
    let mut words: Vec<u64> = (0..10).collect();
    let pieces = WordsMut::U64(&mut words).cut(&[3, 0, 5]);
    let lens: Vec<usize> = pieces.iter().map(WordsMut::len).collect();
    assert_eq!(lens, [3, 0, 5]);
    let WordsMut::U64(last) = &pieces[2] else {
        panic!("a piece changed its width");
    };
    assert_eq!(**last, [3, 4, 5, 6, 7]);
}

fn check_f32(values: &[f32]) {
    for descending in [false, true] {
        let enc = KeyEncoding {
            kind: KeyKind::Float,
            descending,
        };
        for &a in values {
            assert_eq!(enc.decode(enc.encode(a.to_bits())), a.to_bits());
            for &b in values {
                let want = if descending {
                    b.total_cmp(&a)
                } else {
                    a.total_cmp(&b)
                };
                assert_eq!(
                    enc.encode(a.to_bits()).cmp(&enc.encode(b.to_bits())),
                    want,
                    "{a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn float_encoding_is_total_cmp() {
    check_f32(&[
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::MIN,
        f32::MAX,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-45,
        -1e-45,
    ]);
}

#[test]
fn signed_encoding_orders_numerically() {
    let enc = KeyEncoding {
        kind: KeyKind::Signed,
        descending: false,
    };
    let vals = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
    for w in vals.windows(2) {
        assert!(enc.encode(w[0] as u64) < enc.encode(w[1] as u64));
    }
    for v in vals {
        assert_eq!(enc.decode(enc.encode(v as u64)), v as u64);
    }
}

#[test]
fn narrow_keys_widen_in_order() {
    let vals = [i8::MIN, -1, 0, 1, i8::MAX];
    for w in vals.windows(2) {
        assert!(w[0].to_wide() < w[1].to_wide());
    }
    for v in vals {
        assert_eq!(i8::from_wide(v.to_wide()), v);
    }
    let vals = [i16::MIN, -300, 0, 300, i16::MAX];
    for w in vals.windows(2) {
        assert!(w[0].to_wide() < w[1].to_wide());
    }
    assert_eq!(u16::from_wide(u16::MAX.to_wide()), u16::MAX);
}

/// Every one of the 65536 bit patterns of a 16-bit float: the ordered words sort in
/// `total_cmp` order (NaNs of both signs and both zeros included) and map back bit for bit.
#[cfg(feature = "half")]
#[test]
fn half_floats_order_as_total_cmp() {
    fn check<K: SortKey + Copy>(from_bits: fn(u16) -> K, to_f32: fn(K) -> f32, bits: fn(K) -> u16) {
        let all: Vec<K> = (0..=u16::MAX).map(from_bits).collect();
        for &k in &all {
            assert_eq!(bits(K::from_wide(k.to_wide())), bits(k));
            assert!(k.to_wide() <= 0xFFFF);
        }
        let mut by_words = all.clone();
        by_words.sort_by_key(|k| k.to_wide());
        let mut by_total_cmp = all;
        // Widening to f32 is exact for numbers, but may quiet a NaN's payload: two NaNs
        // compare as total_cmp defines it, by their sign-adjusted bits.
        let total_key = |k: K| {
            let b = bits(k) as i16;
            b ^ (((b >> 15) as u16) >> 1) as i16
        };
        by_total_cmp.sort_by(|a, b| {
            let (x, y) = (to_f32(*a), to_f32(*b));
            if x.is_nan() && y.is_nan() {
                total_key(*a).cmp(&total_key(*b))
            } else {
                x.total_cmp(&y)
            }
        });
        let a: Vec<u16> = by_words.iter().map(|k| bits(*k)).collect();
        let b: Vec<u16> = by_total_cmp.iter().map(|k| bits(*k)).collect();
        assert_eq!(a, b);
    }
    check(half::f16::from_bits, half::f16::to_f32, half::f16::to_bits);
    check(
        half::bf16::from_bits,
        half::bf16::to_f32,
        half::bf16::to_bits,
    );
}
