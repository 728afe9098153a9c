//! Inputs of `tests/arrow.rs`: arrow arrays of every supported type, built from value
//! patterns (random, sorted, reversed, ties, NaNs and signed zeros, extremes) and null
//! patterns (no null buffer, one without nulls, 10 % and 100 % nulls), possibly sliced.

use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};
use half::f16;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A native value type of the arrays tested, with what the patterns need.
pub trait Native: ArrowNativeTypeOp {
    /// Any value, every bit pattern possible (NaNs of every payload for floats).
    fn from_bits(bits: u64) -> Self;
    /// Edge values: MIN and MAX; for floats NaNs of both signs and several payloads, both
    /// zeros, both infinities, subnormals.
    fn specials() -> Vec<Self>;
    /// A value from a small range, `v` below 16: equal for equal `v`, both zeros among them
    /// for floats.
    fn small(v: u8) -> Self;
}

macro_rules! int_native {
    ($($t:ty),*) => {$(
        impl Native for $t {
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
            fn specials() -> Vec<Self> {
                vec![
                    <$t>::MIN,
                    <$t>::MAX,
                    <$t>::MIN.wrapping_add(1),
                    <$t>::MAX.wrapping_sub(1),
                    0,
                    1,
                    (0 as $t).wrapping_sub(1),
                ]
            }
            fn small(v: u8) -> Self {
                v as $t
            }
        }
    )*};
}
int_native!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_native {
    ($t:ty, $bits:ty) => {
        impl Native for $t {
            fn from_bits(bits: u64) -> Self {
                <$t>::from_bits(bits as $bits)
            }
            fn specials() -> Vec<Self> {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                let exp = <$t>::INFINITY.to_bits();
                let quiet = <$t>::NAN.to_bits();
                let bits = [
                    quiet,
                    quiet | SIGN,
                    quiet | 1,
                    quiet | 1 | SIGN,
                    exp | 1,
                    exp | 1 | SIGN,
                    exp | (quiet - exp - 1),
                    !0,
                ];
                let mut out: Vec<$t> = bits.iter().map(|&b| <$t>::from_bits(b)).collect();
                out.extend([
                    0.0,
                    -0.0,
                    <$t>::INFINITY,
                    <$t>::NEG_INFINITY,
                    <$t>::MIN,
                    <$t>::MAX,
                    <$t>::MIN_POSITIVE,
                    -<$t>::MIN_POSITIVE,
                    <$t>::from_bits(1),
                    <$t>::from_bits(1 | SIGN),
                    1.0,
                    -1.0,
                ]);
                out
            }
            fn small(v: u8) -> Self {
                match v {
                    0 => -0.0,
                    v => (v as $t - 8.0) / 2.0,
                }
            }
        }
    };
}
float_native!(f32, u32);
float_native!(f64, u64);

impl Native for f16 {
    fn from_bits(bits: u64) -> Self {
        f16::from_bits(bits as u16)
    }
    fn specials() -> Vec<Self> {
        let mut out: Vec<f16> = [
            0x7e00u16, 0xfe00, 0x7e01, 0xfe01, 0x7c01, 0xfc01, 0x7fff, 0xffff,
        ]
        .iter()
        .map(|&b| f16::from_bits(b))
        .collect();
        out.extend([
            f16::ZERO,
            f16::NEG_ZERO,
            f16::INFINITY,
            f16::NEG_INFINITY,
            f16::MIN,
            f16::MAX,
            f16::MIN_POSITIVE,
            -f16::MIN_POSITIVE,
            f16::from_bits(1),
            f16::from_bits(0x8001),
            f16::ONE,
            f16::NEG_ONE,
        ]);
        out
    }
    fn small(v: u8) -> Self {
        match v {
            0 => f16::NEG_ZERO,
            v => f16::from_f32((f32::from(v) - 8.0) / 2.0),
        }
    }
}

/// How the values of an input are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Every bit pattern.
    Random,
    /// Random, sorted ascending.
    Sorted,
    /// Random, sorted descending.
    Reversed,
    /// One random value everywhere.
    AllEqual,
    /// Four random values.
    FewDistinct,
    /// Sixteen small values (many ties; both zeros for floats), sorted ascending.
    SortedTies,
    /// Sixteen small values.
    SmallRange,
    /// Edge values (NaNs, zeros, infinities, MIN, MAX).
    Specials,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: [Pattern; 8] = [
        Pattern::Random,
        Pattern::Sorted,
        Pattern::Reversed,
        Pattern::AllEqual,
        Pattern::FewDistinct,
        Pattern::SortedTies,
        Pattern::SmallRange,
        Pattern::Specials,
    ];

    /// `n` values of this pattern.
    pub fn values<N: Native>(self, n: usize, rng: &mut StdRng) -> Vec<N> {
        let draw = |rng: &mut StdRng| N::from_bits(rng.r#gen());
        match self {
            Pattern::Random => (0..n).map(|_| draw(rng)).collect(),
            Pattern::Sorted | Pattern::Reversed => {
                let mut v: Vec<N> = (0..n).map(|_| draw(rng)).collect();
                v.sort_by(|a, b| a.compare(*b));
                if self == Pattern::Reversed {
                    v.reverse();
                }
                v
            }
            Pattern::AllEqual => vec![draw(rng); n],
            Pattern::FewDistinct => {
                let few: Vec<N> = (0..4).map(|_| draw(rng)).collect();
                (0..n).map(|_| few[rng.gen_range(0..few.len())]).collect()
            }
            Pattern::SortedTies | Pattern::SmallRange => {
                let mut v: Vec<N> = (0..n).map(|_| N::small(rng.gen_range(0..16))).collect();
                if self == Pattern::SortedTies {
                    v.sort_by(|a, b| a.compare(*b));
                }
                v
            }
            Pattern::Specials => {
                let specials = N::specials();
                (0..n)
                    .map(|_| specials[rng.gen_range(0..specials.len())])
                    .collect()
            }
        }
    }
}

/// Which rows of an input are null.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nulls {
    /// No null buffer at all.
    Absent,
    /// A null buffer with every row valid.
    NoneNull,
    /// Each row null with probability 1/10.
    Tenth,
    /// Every row null.
    All,
}

impl Nulls {
    /// Every null pattern.
    pub const ALL: [Nulls; 4] = [Nulls::Absent, Nulls::NoneNull, Nulls::Tenth, Nulls::All];

    fn buffer(self, n: usize, rng: &mut StdRng) -> Option<NullBuffer> {
        match self {
            Nulls::Absent => None,
            Nulls::NoneNull => Some(NullBuffer::new_valid(n)),
            Nulls::Tenth => Some(NullBuffer::from_iter(
                (0..n).map(|_| rng.gen_range(0..10) != 0),
            )),
            Nulls::All => Some(NullBuffer::new_null(n)),
        }
    }
}

/// One input array, with the key of each row to compare results by.
pub struct Col {
    /// The array.
    pub array: ArrayRef,
    /// Per row: `None` for a null, else the value's bits.
    pub keys: Vec<Option<u64>>,
}

/// The key of every row of a primitive array: `None` for nulls, else the value's raw bits
/// (read from the values buffer, so any primitive type works).
pub fn keys_of(array: &dyn Array) -> Vec<Option<u64>> {
    let data = array.to_data();
    let width = array
        .data_type()
        .primitive_width()
        .expect("a primitive array");
    let bytes = &data.buffers()[0].as_slice()[data.offset() * width..];
    (0..array.len())
        .map(|i| {
            array.is_valid(i).then(|| {
                let mut word = [0u8; 8];
                word[..width].copy_from_slice(&bytes[i * width..(i + 1) * width]);
                u64::from_le_bytes(word)
            })
        })
        .collect()
}

/// An input of `n` rows of arrow type `T` with data type `dt`. With `sliced`, the array is
/// a slice from offset 3 of a longer one (values and null buffer both offset).
pub fn make<T>(
    dt: &DataType,
    pattern: Pattern,
    nulls: Nulls,
    n: usize,
    sliced: bool,
    seed: u64,
) -> Col
where
    T: ArrowPrimitiveType,
    T::Native: Native,
{
    let mut rng = StdRng::seed_from_u64(seed);
    let extra = if sliced { 7 } else { 0 };
    let values = pattern.values::<T::Native>(n + extra, &mut rng);
    let buffer = nulls.buffer(n + extra, &mut rng);
    let array =
        PrimitiveArray::<T>::new(ScalarBuffer::from(values), buffer).with_data_type(dt.clone());
    let array: ArrayRef = if sliced {
        Arc::new(array.slice(3, n))
    } else {
        Arc::new(array)
    };
    let keys = keys_of(array.as_ref());
    Col { array, keys }
}

/// A function that builds an input of one arrow type.
pub type Maker = fn(&DataType, Pattern, Nulls, usize, bool, u64) -> Col;

/// Every supported arrow type: its name in trial names, its data type, and its builder.
pub fn types() -> Vec<(&'static str, DataType, Maker)> {
    use TimeUnit::*;
    let tz = Some(Arc::from("+02:00"));
    vec![
        ("int8", DataType::Int8, make::<Int8Type> as Maker),
        ("int16", DataType::Int16, make::<Int16Type>),
        ("int32", DataType::Int32, make::<Int32Type>),
        ("int64", DataType::Int64, make::<Int64Type>),
        ("uint8", DataType::UInt8, make::<UInt8Type>),
        ("uint16", DataType::UInt16, make::<UInt16Type>),
        ("uint32", DataType::UInt32, make::<UInt32Type>),
        ("uint64", DataType::UInt64, make::<UInt64Type>),
        ("float16", DataType::Float16, make::<Float16Type>),
        ("float32", DataType::Float32, make::<Float32Type>),
        ("float64", DataType::Float64, make::<Float64Type>),
        ("date32", DataType::Date32, make::<Date32Type>),
        ("date64", DataType::Date64, make::<Date64Type>),
        (
            "time32_s",
            DataType::Time32(Second),
            make::<Time32SecondType>,
        ),
        (
            "time32_ms",
            DataType::Time32(Millisecond),
            make::<Time32MillisecondType>,
        ),
        (
            "time64_us",
            DataType::Time64(Microsecond),
            make::<Time64MicrosecondType>,
        ),
        (
            "time64_ns",
            DataType::Time64(Nanosecond),
            make::<Time64NanosecondType>,
        ),
        (
            "timestamp_s",
            DataType::Timestamp(Second, None),
            make::<TimestampSecondType>,
        ),
        (
            "timestamp_ms_tz",
            DataType::Timestamp(Millisecond, tz.clone()),
            make::<TimestampMillisecondType>,
        ),
        (
            "timestamp_us",
            DataType::Timestamp(Microsecond, None),
            make::<TimestampMicrosecondType>,
        ),
        (
            "timestamp_ns_tz",
            DataType::Timestamp(Nanosecond, tz),
            make::<TimestampNanosecondType>,
        ),
        (
            "duration_s",
            DataType::Duration(Second),
            make::<DurationSecondType>,
        ),
        (
            "duration_ms",
            DataType::Duration(Millisecond),
            make::<DurationMillisecondType>,
        ),
        (
            "duration_us",
            DataType::Duration(Microsecond),
            make::<DurationMicrosecondType>,
        ),
        (
            "duration_ns",
            DataType::Duration(Nanosecond),
            make::<DurationNanosecondType>,
        ),
    ]
}

/// The builder of the type named `name` in [`types`].
pub fn maker(name: &str) -> (DataType, Maker) {
    let (_, dt, make) = types()
        .into_iter()
        .find(|(n, _, _)| *n == name)
        .unwrap_or_else(|| panic!("no type {name}"));
    (dt, make)
}
