//! Keys as ordered bits: the one place where key types meet the sorting network.
//!
//! Every key type maps to an unsigned word whose unsigned order is the wanted order; the
//! network sorts words and the mapping is undone afterwards. Integers flip the sign bit of
//! signed types. Floats flip every bit of a negative value and only the sign bit of a positive
//! one, which is exactly `total_cmp` order (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf <
//! +NaN) and reversible bit for bit. Descending order inverts the word.
//!
//! The GPU kernels apply the same mapping to 32- and 64-bit words on their first load and
//! last store (`encode_key` and `decode_key` in `cuda/words.cuh` and `kernels/words.clh`
//! mirror [`KeyEncoding::encode`] and [`KeyEncoding::decode`], with the codes of
//! `kernels/contract.h`). Narrower keys of host slices are widened to 32-bit ordered words on
//! the host; 16-bit keys in device memory ([`WordKey`]) are encoded at 16 bits by the OpenCL
//! kernels as they load them, the same rule as `ordered_half` for floats.

use crate::error::Result;
use crate::kernel_contract;

/// How the raw bits of a key word are turned into ordered bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// Unsigned integers: the bits are already ordered.
    Unsigned,
    /// Two's-complement integers: flip the sign bit.
    Signed,
    /// IEEE-754 floats in `total_cmp` order.
    Float,
}

impl KeyKind {
    /// A small integer the kernels receive for this kind (`KIND_*` in
    /// `kernels/contract.h`).
    pub fn code(self) -> u32 {
        match self {
            KeyKind::Unsigned => kernel_contract::KIND_UNSIGNED,
            KeyKind::Signed => kernel_contract::KIND_SIGNED,
            KeyKind::Float => kernel_contract::KIND_FLOAT,
        }
    }
}

/// The kind of the key words plus the wanted order: everything a kernel needs to produce
/// ordered bits from raw bits and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyEncoding {
    /// How raw words become ordered words.
    pub kind: KeyKind,
    /// Sort from largest to smallest (the words are inverted after the kind's mapping).
    pub descending: bool,
}

impl KeyEncoding {
    /// The encoding as one integer for kernel arguments: bits 0-1 the kind, bit 2 descending
    /// (`kernels/contract.h`).
    pub fn code(self) -> u32 {
        let descending = if self.descending {
            kernel_contract::ENCODING_DESCENDING
        } else {
            0
        };
        self.kind.code() | descending
    }

    /// Raw key word to ordered word.
    #[inline]
    pub fn encode<W: Word>(self, raw: W) -> W {
        let ordered = match self.kind {
            KeyKind::Unsigned => raw,
            KeyKind::Signed => raw ^ W::SIGN,
            KeyKind::Float => {
                if raw & W::SIGN != W::ZERO {
                    !raw
                } else {
                    raw ^ W::SIGN
                }
            }
        };
        if self.descending { !ordered } else { ordered }
    }

    /// The encoding of narrow keys once widened: their ordered `u32` words
    /// ([`NarrowKeys::widen`]) sort as unsigned words.
    pub fn narrow(descending: bool) -> KeyEncoding {
        KeyEncoding {
            kind: KeyKind::Unsigned,
            descending,
        }
    }

    /// The encoding of key type `K` in `order`.
    pub fn of<K: WordKey>(order: Order) -> KeyEncoding {
        KeyEncoding {
            kind: K::KIND,
            descending: order == Order::Descending,
        }
    }

    /// Ordered word back to the raw key word; the inverse of [`KeyEncoding::encode`].
    #[inline]
    pub fn decode<W: Word>(self, ordered: W) -> W {
        let ordered = if self.descending { !ordered } else { ordered };
        match self.kind {
            KeyKind::Unsigned => ordered,
            KeyKind::Signed => ordered ^ W::SIGN,
            KeyKind::Float => {
                if ordered & W::SIGN != W::ZERO {
                    ordered ^ W::SIGN
                } else {
                    !ordered
                }
            }
        }
    }
}

/// The order of a sort. Every sort call takes it as its last argument, on host slices and on
/// device-resident buffers alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// Smallest first (floats in [`f32::total_cmp`] order).
    #[default]
    Ascending,
    /// Largest first: the exact reverse of ascending.
    Descending,
}

impl Order {
    /// [`Order::Descending`] where `descending`, else [`Order::Ascending`]. Arrow's sort
    /// options and the tests use it.
    #[cfg_attr(not(any(feature = "arrow", test)), allow(dead_code))]
    pub(crate) fn from_descending(descending: bool) -> Order {
        if descending {
            Order::Descending
        } else {
            Order::Ascending
        }
    }

    /// Whether this is [`Order::Descending`].
    pub fn is_descending(self) -> bool {
        self == Order::Descending
    }
}

/// An unsigned machine word that the network sorts: `u32` or `u64`.
pub trait Word:
    bytemuck::Pod
    + Ord
    + Send
    + Sync
    + std::ops::BitXor<Output = Self>
    + std::ops::BitAnd<Output = Self>
    + std::ops::Not<Output = Self>
    + std::fmt::Debug
    + Into<u64>
{
    /// Zero.
    const ZERO: Self;
    /// Only the top bit set.
    const SIGN: Self;
    /// All bits set: the value that padding beyond `n` behaves as.
    const MAX: Self;

    /// A slice of these words as the backend-facing [`WordsMut`].
    fn words_mut(words: &mut [Self]) -> WordsMut<'_>;
}

impl Word for u32 {
    const ZERO: Self = 0;
    const SIGN: Self = 1 << 31;
    const MAX: Self = u32::MAX;

    fn words_mut(words: &mut [Self]) -> WordsMut<'_> {
        WordsMut::U32(words)
    }
}

impl Word for u64 {
    const ZERO: Self = 0;
    const SIGN: Self = 1 << 63;
    const MAX: Self = u64::MAX;

    fn words_mut(words: &mut [Self]) -> WordsMut<'_> {
        WordsMut::U64(words)
    }
}

/// A mutable slice of words that a backend sorts in place.
#[derive(Debug)]
pub enum WordsMut<'a> {
    /// 32-bit words.
    U32(&'a mut [u32]),
    /// 64-bit words.
    U64(&'a mut [u64]),
}

impl<'a> WordsMut<'a> {
    /// The words cut into consecutive pieces of `lens` words, in order (the lengths add up
    /// to at most [`WordsMut::len`]; words past their sum are left out).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn cut(self, lens: &[usize]) -> Vec<WordsMut<'a>> {
        fn pieces<'w, T>(words: &'w mut [T], lens: &[usize]) -> Vec<&'w mut [T]> {
            let mut rest = words;
            lens.iter()
                .map(|&len| {
                    let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
                    rest = tail;
                    head
                })
                .collect()
        }
        match self {
            WordsMut::U32(w) => pieces(w, lens).into_iter().map(WordsMut::U32).collect(),
            WordsMut::U64(w) => pieces(w, lens).into_iter().map(WordsMut::U64).collect(),
        }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        match self {
            WordsMut::U32(w) => w.len(),
            WordsMut::U64(w) => w.len(),
        }
    }

    /// True when there are no words.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per word: 4 or 8.
    pub fn word_bytes(&self) -> usize {
        match self {
            WordsMut::U32(_) => 4,
            WordsMut::U64(_) => 8,
        }
    }

    /// The words as bytes (for uploads).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            WordsMut::U32(w) => bytemuck::cast_slice(w),
            WordsMut::U64(w) => bytemuck::cast_slice(w),
        }
    }

    /// The words as mutable bytes (for downloads).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            WordsMut::U32(w) => bytemuck::cast_slice_mut(w),
            WordsMut::U64(w) => bytemuck::cast_slice_mut(w),
        }
    }

    /// A shorter-lived view of the same words.
    pub fn reborrow(&mut self) -> WordsMut<'_> {
        match self {
            WordsMut::U32(w) => WordsMut::U32(w),
            WordsMut::U64(w) => WordsMut::U64(w),
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// How a key type reaches the network.
#[doc(hidden)]
pub enum KeyRepr<'a> {
    /// The keys are 32- or 64-bit words already; the device encodes them.
    Words(WordsMut<'a>, KeyKind),
    /// The keys are narrower; the host widens them to 32-bit ordered words.
    Narrow,
}

/// A key type the sorter accepts: `u8`, `i8`, `u16`, `i16`, `u32`, `i32`, `u64`, `i64`,
/// `f32`, `f64`. Integers sort numerically; floats sort in [`f32::total_cmp`] order.
///
/// The trait is sealed: its methods are how the crate maps keys to ordered bits.
pub trait SortKey: bytemuck::Pod + Send + Sync + sealed::Sealed {
    /// The keys as words the device can encode itself, or `Narrow` when they must be widened.
    #[doc(hidden)]
    fn repr(keys: &mut [Self]) -> KeyRepr<'_>;
    /// Ordered 32-bit word for a narrow key (ascending order); unused for wide keys.
    #[doc(hidden)]
    fn to_wide(self) -> u32;
    /// Inverse of `to_wide`.
    #[doc(hidden)]
    fn from_wide(word: u32) -> Self;
    /// The key's ordered bits: unsigned order is the sort order (`descending` inverts it).
    #[doc(hidden)]
    fn ordered_bits(self, descending: bool) -> u64;
    /// For 16-bit keys that the kernels read and encode at 16 bits (the 16-bit [`WordKey`]
    /// types), their kind; `None` for every other key.
    #[doc(hidden)]
    const WORD16_KIND: Option<KeyKind> = None;
}

/// Keys narrower than 32 bits (`u8 i8 u16 i16`) as a backend sees them: they travel as
/// ordered `u32` words (ascending order), widened and narrowed where they are copied, so that
/// no widened copy of the whole slice is needed.
pub trait NarrowKeys: Send + Sync {
    /// Number of keys.
    fn len(&self) -> usize;
    /// True when there are no keys.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Writes the ordered words of the keys from `first` on into `out` (one per word).
    fn widen(&self, first: usize, out: &mut [u32]);
    /// Stores ordered words as the keys from `first` on.
    fn narrow(&mut self, first: usize, words: &[u32]);
}

/// Keys per piece of work when narrow keys are widened or narrowed on rayon's threads.
const NARROW_PIECE: usize = 1 << 16;

impl<K: SortKey> NarrowKeys for &mut [K] {
    fn len(&self) -> usize {
        <[K]>::len(self)
    }

    fn widen(&self, first: usize, out: &mut [u32]) {
        let keys = &self[first..first + out.len()];
        crate::rayon_lock::for_pieces(out, keys, NARROW_PIECE, |o, k| {
            for (o, k) in o.iter_mut().zip(k) {
                *o = k.to_wide();
            }
        });
    }

    fn narrow(&mut self, first: usize, words: &[u32]) {
        let keys = &mut self[first..first + words.len()];
        crate::rayon_lock::for_pieces(keys, words, NARROW_PIECE, |k, w| {
            for (k, w) in k.iter_mut().zip(w) {
                *k = K::from_wide(*w);
            }
        });
    }
}

// The key codec: a key as the 32- or 64-bit word that argsort and top-k sort, and back.

/// A key type's words as the sorts of 32- and 64-bit words see them, from one probe of its representation:
/// their width in bytes (4 for narrow keys' ordered words) and kind (unsigned for those).
pub(crate) fn word_kind<K: SortKey>() -> (usize, KeyKind) {
    let mut probe = [K::zeroed()];
    match K::repr(&mut probe) {
        KeyRepr::Words(WordsMut::U32(_), kind) => (4, kind),
        KeyRepr::Words(WordsMut::U64(_), kind) => (8, kind),
        KeyRepr::Narrow => (4, KeyKind::Unsigned),
    }
}

/// The kind of a key type's 32-bit word (see [`u32_of_key`]); `None` for 8-byte keys.
pub(crate) fn u32_kind<K: SortKey>() -> Option<KeyKind> {
    let (width, kind) = word_kind::<K>();
    (width == 4).then_some(kind)
}

/// A key's 32-bit word: its raw bits for 4-byte keys, its ordered word for narrow ones (the
/// inverse of [`key_of_u32`]).
pub(crate) fn u32_of_key<K: SortKey>(key: K) -> u32 {
    if std::mem::size_of::<K>() == 4 {
        bytemuck::cast(key)
    } else {
        key.to_wide()
    }
}

/// The raw bits of an 8-byte key (the caller has checked its width).
pub(crate) fn u64_of_key<K: SortKey>(key: K) -> u64 {
    bytemuck::cast_slice::<K, u64>(std::slice::from_ref(&key))[0]
}

/// The key whose 32-bit word is `word` (the inverse of [`u32_of_key`]): its raw bits for
/// 4-byte keys, its ordered word for narrow ones.
pub(crate) fn key_of_u32<K: SortKey>(word: u32) -> K {
    if std::mem::size_of::<K>() == 4 {
        bytemuck::cast(word)
    } else {
        K::from_wide(word)
    }
}

/// A key type that the GPU kernels read directly from device memory: `u32`, `i32`, `f32`,
/// `u64`, `i64`, `f64` as one word, and the 16-bit keys `u16`, `i16` (and `half::f16`,
/// `half::bf16` with the `half` feature), which the OpenCL kernels load as 16 bits and turn
/// into ordered 32-bit words in registers. Device-resident sorts and top-k take these.
pub trait WordKey: SortKey {
    /// Bytes per key: 2, 4 or 8.
    const WORD_BYTES: usize;
    /// How the kernels turn its bits into ordered bits.
    const KIND: KeyKind;
}

macro_rules! wide_key {
    ($t:ty, $word:ident, $variant:ident, $kind:expr) => {
        impl WordKey for $t {
            const WORD_BYTES: usize = std::mem::size_of::<$t>();
            const KIND: KeyKind = $kind;
        }
        impl sealed::Sealed for $t {}
        impl SortKey for $t {
            fn repr(keys: &mut [Self]) -> KeyRepr<'_> {
                KeyRepr::Words(WordsMut::$variant(bytemuck::cast_slice_mut(keys)), $kind)
            }
            fn to_wide(self) -> u32 {
                unreachable!("wide keys are never widened")
            }
            fn from_wide(_: u32) -> Self {
                unreachable!("wide keys are never widened")
            }
            #[inline]
            fn ordered_bits(self, descending: bool) -> u64 {
                let encoding = KeyEncoding {
                    kind: $kind,
                    descending,
                };
                u64::from(encoding.encode(bytemuck::cast::<$t, $word>(self)))
            }
        }
    };
}

wide_key!(u32, u32, U32, KeyKind::Unsigned);
wide_key!(i32, u32, U32, KeyKind::Signed);
wide_key!(f32, u32, U32, KeyKind::Float);
wide_key!(u64, u64, U64, KeyKind::Unsigned);
wide_key!(i64, u64, U64, KeyKind::Signed);
wide_key!(f64, u64, U64, KeyKind::Float);

macro_rules! narrow_key {
    ($t:ty, $to:expr, $from:expr) => {
        narrow_key!($t, $to, $from, None);
    };
    ($t:ty, $to:expr, $from:expr, $word16:expr) => {
        impl sealed::Sealed for $t {}
        impl SortKey for $t {
            const WORD16_KIND: Option<KeyKind> = $word16;
            fn repr(_: &mut [Self]) -> KeyRepr<'_> {
                KeyRepr::Narrow
            }
            fn to_wide(self) -> u32 {
                $to(self)
            }
            fn from_wide(word: u32) -> Self {
                $from(word)
            }
            #[inline]
            fn ordered_bits(self, descending: bool) -> u64 {
                let word: u32 = $to(self);
                u64::from(if descending { !word } else { word })
            }
        }
    };
}

narrow_key!(u8, |k: u8| u32::from(k), |w: u32| w as u8);
narrow_key!(
    u16,
    |k: u16| u32::from(k),
    |w: u32| w as u16,
    Some(KeyKind::Unsigned)
);
// Signed narrow keys: offset so that MIN maps to 0, keeping numeric order.
narrow_key!(
    i8,
    |k: i8| (k as u8 ^ 0x80) as u32,
    |w: u32| (w as u8 ^ 0x80) as i8
);
narrow_key!(
    i16,
    |k: i16| (k as u16 ^ 0x8000) as u32,
    |w: u32| (w as u16 ^ 0x8000) as i16,
    Some(KeyKind::Signed)
);

/// The ordered bits of a 16-bit float: the sign rule of [`KeyEncoding`] at 16 bits, so that
/// `f16` and `bf16` keys sort in `total_cmp` order with every NaN and both zeros placed by
/// their bits.
#[cfg(feature = "half")]
fn ordered_half(bits: u16) -> u32 {
    let ordered = if bits & 0x8000 != 0 {
        !bits
    } else {
        bits ^ 0x8000
    };
    u32::from(ordered)
}

/// The inverse of [`ordered_half`].
#[cfg(feature = "half")]
fn half_bits(word: u32) -> u16 {
    let ordered = word as u16;
    if ordered & 0x8000 != 0 {
        ordered ^ 0x8000
    } else {
        !ordered
    }
}

/// 16-bit keys that device-resident calls read in place: the kernels encode them at 16 bits
/// with the same rules as wider words, of the kind their [`SortKey::WORD16_KIND`] names.
macro_rules! half_word_key {
    ($t:ty) => {
        impl WordKey for $t {
            const WORD_BYTES: usize = 2;
            const KIND: KeyKind = match <$t as SortKey>::WORD16_KIND {
                Some(kind) => kind,
                None => panic!("a 16-bit word key names its kind"),
            };
        }
    };
}

half_word_key!(u16);
half_word_key!(i16);
#[cfg(feature = "half")]
half_word_key!(half::f16);
#[cfg(feature = "half")]
half_word_key!(half::bf16);

#[cfg(feature = "half")]
narrow_key!(
    half::f16,
    |k: half::f16| ordered_half(k.to_bits()),
    |w: u32| half::f16::from_bits(half_bits(w)),
    Some(KeyKind::Float)
);
#[cfg(feature = "half")]
narrow_key!(
    half::bf16,
    |k: half::bf16| ordered_half(k.to_bits()),
    |w: u32| half::bf16::from_bits(half_bits(w)),
    Some(KeyKind::Float)
);

/// Presents values as 32- or 64-bit words.
pub(crate) fn with_value_words<V: bytemuck::Pod>(
    values: Option<&mut [V]>,
    f: impl FnOnce(Option<WordsMut<'_>>) -> Result<()>,
) -> Result<()> {
    match values {
        None => f(None),
        Some(values) if std::mem::size_of::<V>() == 4 => as_words::<V, u32>(values, f),
        Some(values) => as_words::<V, u64>(values, f),
    }
}

/// Views `values` as words of their own size in place, or, for a type aligned below its
/// size (such as `[u8; 4]`), copies them to aligned words and back after `f`.
fn as_words<V: bytemuck::Pod, W: Word>(
    values: &mut [V],
    f: impl FnOnce(Option<WordsMut<'_>>) -> Result<()>,
) -> Result<()> {
    if let Ok(words) = bytemuck::try_cast_slice_mut::<V, W>(values) {
        return f(Some(W::words_mut(words)));
    }
    let mut words: Vec<W> = values
        .iter()
        .map(|v| bytemuck::pod_read_unaligned(bytemuck::bytes_of(v)))
        .collect();
    f(Some(W::words_mut(&mut words)))?;
    for (v, w) in values.iter_mut().zip(&words) {
        *v = bytemuck::pod_read_unaligned(bytemuck::bytes_of(w));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
