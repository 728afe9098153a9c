//! Fuzzes the public API on the CPU backend: the input's bytes choose a key type, an order,
//! a value type (none, 4 or 8 bytes, unaligned, or an unsupported size) and a value count
//! (sometimes wrong); the rest of the bytes are the keys, bit for bit (NaNs, -0.0,
//! infinities and subnormals included). The result must equal Rust's sort (`sort_unstable`,
//! floats `sort_by(total_cmp)`, descending its reverse) with every (key, value) pair kept,
//! and a bad call must return its error and leave both slices untouched.

#![no_main]

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use bitonic::{BackendKind, Error, Sorter};
use libfuzzer_sys::fuzz_target;

fn sorter() -> &'static Sorter {
    static SORTER: OnceLock<Sorter> = OnceLock::new();
    SORTER.get_or_init(|| {
        Sorter::builder()
            .ignore_env()
            .backend(BackendKind::Cpu)
            .build()
            .expect("the CPU backend always builds")
    })
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum KeyType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Values {
    None,
    U32,
    U64,
    /// Four bytes aligned to one: copied to words and back.
    Bytes4,
    /// Eight bytes aligned to one.
    Bytes8,
    /// Two bytes: `UnsupportedValueSize`.
    U16,
}

#[derive(Arbitrary, Debug)]
struct Header {
    key: KeyType,
    descending: bool,
    values: Values,
    /// Nonzero: the values slice is this much longer or shorter than the keys.
    length_error: i8,
    /// Repeats the keys (up to 64 times) so that long inputs come from short fuzz inputs.
    repeat: u8,
}

/// A key type with its reference order and raw bits.
trait Key: bitonic::SortKey + std::fmt::Debug {
    fn bits(self) -> u64;
    fn reference_sort(keys: &mut [Self]);
}

macro_rules! int_key {
    ($($t:ty => $u:ty),*) => {$(
        impl Key for $t {
            fn bits(self) -> u64 {
                self as $u as u64
            }
            fn reference_sort(keys: &mut [Self]) {
                keys.sort_unstable();
            }
        }
    )*};
}
int_key!(u8 => u8, i8 => u8, u16 => u16, i16 => u16, u32 => u32, i32 => u32, u64 => u64, i64 => u64);

impl Key for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn reference_sort(keys: &mut [Self]) {
        keys.sort_by(f32::total_cmp);
    }
}

impl Key for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn reference_sort(keys: &mut [Self]) {
        keys.sort_by(f64::total_cmp);
    }
}

/// Distinct values (the input position, scrambled), of any plain type of 2, 4 or 8 bytes.
fn make_values<V: bytemuck::Pod>(n: usize) -> Vec<V> {
    (0..n)
        .map(|i| {
            let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555;
            let bytes = x.to_le_bytes();
            bytemuck::pod_read_unaligned(&bytes[..std::mem::size_of::<V>()])
        })
        .collect()
}

fn value_bits<V: bytemuck::Pod>(v: &V) -> u64 {
    let mut bytes = [0u8; 8];
    let raw = bytemuck::bytes_of(v);
    bytes[..raw.len()].copy_from_slice(raw);
    u64::from_le_bytes(bytes)
}

fn run<K: Key>(h: &Header, raw: &[u8]) {
    let size = std::mem::size_of::<K>();
    let base: Vec<K> = raw
        .chunks_exact(size)
        .map(bytemuck::pod_read_unaligned)
        .collect();
    let repeat = usize::from(h.repeat % 64) + 1;
    let keys: Vec<K> = base
        .iter()
        .copied()
        .cycle()
        .take(base.len() * repeat)
        .collect();
    let mut want = keys.clone();
    K::reference_sort(&mut want);
    if h.descending {
        want.reverse();
    }
    let want_bits: Vec<u64> = want.iter().map(|k| k.bits()).collect();
    match h.values {
        Values::None => {
            let mut got = keys.clone();
            let result = if h.descending {
                sorter().sort(&mut got, bitonic::Order::Descending)
            } else {
                sorter().sort(&mut got, bitonic::Order::Ascending)
            };
            assert_eq!(result, Ok(()));
            let got_bits: Vec<u64> = got.iter().map(|k| k.bits()).collect();
            assert_eq!(got_bits, want_bits, "keys differ from Rust's sort");
        }
        Values::U32 => run_pairs::<K, u32>(h, &keys, &want_bits),
        Values::U64 => run_pairs::<K, u64>(h, &keys, &want_bits),
        Values::Bytes4 => run_pairs::<K, [u8; 4]>(h, &keys, &want_bits),
        Values::Bytes8 => run_pairs::<K, [u8; 8]>(h, &keys, &want_bits),
        Values::U16 => run_pairs::<K, u16>(h, &keys, &want_bits),
    }
}

fn run_pairs<K: Key, V: bytemuck::Pod + std::fmt::Debug>(
    h: &Header,
    keys_in: &[K],
    want_bits: &[u64],
) {
    let n = keys_in.len();
    let n_values = if h.length_error == 0 {
        n
    } else {
        n.saturating_add_signed(isize::from(h.length_error))
    };
    let values_in: Vec<V> = make_values(n_values);
    let (mut keys, mut values) = (keys_in.to_vec(), values_in.clone());
    let result = if h.descending {
        sorter().sort_by_key(&mut keys, &mut values, bitonic::Order::Descending)
    } else {
        sorter().sort_by_key(&mut keys, &mut values, bitonic::Order::Ascending)
    };
    let bytes = std::mem::size_of::<V>();
    let expected_error = if n_values != n {
        Some(Error::LengthMismatch {
            keys: n,
            values: n_values,
        })
    } else if bytes != 4 && bytes != 8 {
        Some(Error::UnsupportedValueSize { bytes })
    } else {
        None
    };
    if let Some(error) = expected_error {
        assert_eq!(result, Err(error));
        let untouched = keys.iter().zip(keys_in).all(|(a, b)| a.bits() == b.bits())
            && bytemuck::cast_slice::<V, u8>(&values) == bytemuck::cast_slice::<V, u8>(&values_in);
        assert!(untouched, "a failed call changed the slices");
        return;
    }
    assert_eq!(result, Ok(()));
    let got_bits: Vec<u64> = keys.iter().map(|k| k.bits()).collect();
    assert_eq!(got_bits, want_bits, "keys differ from Rust's sort");
    let pairs = |k: &[K], v: &[V]| {
        let mut p: Vec<(u64, u64)> = k
            .iter()
            .zip(v)
            .map(|(k, v)| (k.bits(), value_bits(v)))
            .collect();
        p.sort_unstable();
        p
    };
    assert_eq!(
        pairs(&keys, &values),
        pairs(keys_in, &values_in),
        "the (key, value) pairs are not those of the input"
    );
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(header) = Header::arbitrary(&mut u) else {
        return;
    };
    let raw = u.take_rest();
    match header.key {
        KeyType::U8 => run::<u8>(&header, raw),
        KeyType::I8 => run::<i8>(&header, raw),
        KeyType::U16 => run::<u16>(&header, raw),
        KeyType::I16 => run::<i16>(&header, raw),
        KeyType::U32 => run::<u32>(&header, raw),
        KeyType::I32 => run::<i32>(&header, raw),
        KeyType::U64 => run::<u64>(&header, raw),
        KeyType::I64 => run::<i64>(&header, raw),
        KeyType::F32 => run::<f32>(&header, raw),
        KeyType::F64 => run::<f64>(&header, raw),
    }
});
