//! The CPU executor: rayon on the host, for machines without a GPU.
//!
//! Keys alone sort with `par_sort_unstable` on ordered words (a total order on bits, so the
//! result equals any correct sort's). Key-value pairs run the same comparator network as
//! the GPUs through [`schedule::emulate`]; where the GPUs sort them by radix
//! ([`pairs_take_radix`]), a stable sort; where by merge path ([`pair_sort_tile`], past the
//! radix sort's length), the same tile sort followed by a stable merge
//! ([`schedule::emulate_merge_path`]). So values of equal keys land exactly where a GPU puts
//! them.

use crate::backend::{Backend, BackendKind, DeviceInfo, DeviceType};
use crate::error::Result;
use crate::keys::{KeyEncoding, NarrowKeys, Word, WordsMut};
use crate::schedule::merge_path::pair_sort_tile;
use crate::schedule::radix::pairs_take_radix;
use crate::schedule::{self, Schedule, TileParams};
use crate::shape::debug_assert_rows_words;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Tiles that stay in a core's L2 cache; the result does not depend on them.
const CPU_TILE: TileParams = TileParams {
    log_tile: 12,
    max_global_levels: 4,
    fuse_tails: true,
};

/// Sorts on the host with rayon.
#[derive(Debug)]
pub(crate) struct CpuBackend {
    info: DeviceInfo,
    /// Whether key-value sorts run the network alone ([`Backend::set_oblivious`]), as the
    /// GPU backends then do.
    oblivious: AtomicBool,
}

impl CpuBackend {
    /// The host CPU, with all of rayon's threads.
    pub(crate) fn new() -> CpuBackend {
        CpuBackend {
            info: info(),
            oblivious: AtomicBool::new(false),
        }
    }
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

/// The host as a device.
pub(crate) fn info() -> DeviceInfo {
    DeviceInfo {
        backend: BackendKind::Cpu,
        index: 0,
        name: "host CPU (rayon)".to_string(),
        vendor: std::env::consts::ARCH.to_string(),
        device_type: DeviceType::Cpu,
        memory_bytes: host_memory_bytes(),
        compute_units: rayon::current_num_threads() as u32,
    }
}

fn host_memory_bytes() -> u64 {
    // /proc/meminfo where it exists; 0 (unknown) elsewhere.
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// Below this many keys a sort stays on the calling thread: waking rayon's threads costs
/// tens of microseconds per parallel call, more than sorting a few thousand keys.
const SEQUENTIAL_BELOW: usize = 1 << 14;

/// Applies `f` to every key: on the calling thread below [`SEQUENTIAL_BELOW`], else on
/// rayon's threads.
fn map_keys<W: Word>(keys: &mut [W], f: impl Fn(W) -> W + Sync) {
    if keys.len() < SEQUENTIAL_BELOW {
        keys.iter_mut().for_each(|k| *k = f(*k));
    } else {
        keys.par_iter_mut().for_each(|k| *k = f(*k));
    }
}

fn sort_keys<W: Word>(keys: &mut [W], enc: KeyEncoding) {
    map_keys(keys, |k| enc.encode(k));
    if keys.len() < SEQUENTIAL_BELOW {
        keys.sort_unstable();
    } else {
        keys.par_sort_unstable();
    }
    map_keys(keys, |k| enc.decode(k));
}

/// Sorts pairs as the GPUs do: merge path's order where `merge_tile` is given (one row past
/// [`pair_sort_tile`]'s threshold that [`pairs_take_radix`] leaves to merge path), the
/// network's otherwise.
fn sort_pairs<W: Word, V: bytemuck::Pod + Send + Sync>(
    keys: &mut [W],
    values: &mut [V],
    enc: KeyEncoding,
    merge_tile: Option<u32>,
    oblivious: bool,
) {
    // The oblivious mode runs the network whatever the keys.
    if !oblivious && keys.len() < SEQUENTIAL_BELOW && sort_distinct_pairs(keys, values, enc) {
        return;
    }
    map_keys(keys, |k| enc.encode(k));
    match merge_tile {
        Some(log_tile) => schedule::emulate_merge_path(log_tile, keys, values),
        None => {
            let schedule = Schedule::new(keys.len() as u64, CPU_TILE);
            schedule::emulate(&schedule, keys, Some(values));
        }
    }
    map_keys(keys, |k| enc.decode(k));
}

/// Sorts short pairs whose keys are all distinct without the network (`u32` keys with `u32`
/// values by [`sort_distinct_packed`], others with the standard library's sort): distinct
/// keys have one sorted order, which the network produces too, so only ties need the network
/// (and its scalar emulation costs several times more). Returns false, with `keys` and
/// `values` untouched, when two keys are equal.
fn sort_distinct_pairs<W: Word, V: bytemuck::Pod>(
    keys: &mut [W],
    values: &mut [V],
    enc: KeyEncoding,
) -> bool {
    if std::mem::size_of::<W>() == 4
        && std::mem::size_of::<V>() == 4
        && let (Ok(k), Ok(v)) = (
            bytemuck::try_cast_slice_mut::<W, u32>(keys),
            bytemuck::try_cast_slice_mut::<V, u32>(values),
        )
    {
        return sort_distinct_packed(k, v, enc);
    }
    let mut pairs: Vec<(W, V)> = keys
        .iter()
        .map(|&k| enc.encode(k))
        .zip(values.iter().copied())
        .collect();
    pairs.sort_unstable_by_key(|p| p.0);
    if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
        return false;
    }
    for ((k, v), (pk, pv)) in keys.iter_mut().zip(values.iter_mut()).zip(pairs) {
        *k = enc.decode(pk);
        *v = pv;
    }
    true
}

/// [`sort_distinct_pairs`] on words, for a GPU sorter's short pairs (`Sorter`), which go to
/// its device rather than through the network's emulation when two keys are equal. Returns
/// false, with both untouched, then.
pub(crate) fn sort_distinct_words(
    keys: &mut WordsMut<'_>,
    values: &mut WordsMut<'_>,
    enc: KeyEncoding,
) -> bool {
    match (keys, values) {
        (WordsMut::U32(k), WordsMut::U32(v)) => sort_distinct_pairs(k, v, enc),
        (WordsMut::U32(k), WordsMut::U64(v)) => sort_distinct_pairs(k, v, enc),
        (WordsMut::U64(k), WordsMut::U32(v)) => sort_distinct_pairs(k, v, enc),
        (WordsMut::U64(k), WordsMut::U64(v)) => sort_distinct_pairs(k, v, enc),
    }
}

/// [`sort_distinct_pairs`] for `u32` keys with `u32` values: each pair packed into one
/// `u64` (ordered key above, value below) and the packed words sorted by their keys with a
/// radix sort: on 1024 pairs about 1.7 times as fast as a sort of pairs by key, and faster
/// than rayon's `par_sort_unstable_by_key` (`cpu_short_pairs_against_rayon` times the three).
fn sort_distinct_packed(keys: &mut [u32], values: &mut [u32], enc: KeyEncoding) -> bool {
    let mut packed: Vec<u64> = keys
        .iter()
        .zip(values.iter())
        .map(|(&k, &v)| u64::from(enc.encode(k)) << 32 | u64::from(v))
        .collect();
    radix_sort_by_high_half(&mut packed);
    if packed.windows(2).any(|w| w[0] >> 32 == w[1] >> 32) {
        return false;
    }
    for ((k, v), p) in keys.iter_mut().zip(values.iter_mut()).zip(packed) {
        *k = enc.decode((p >> 32) as u32);
        *v = p as u32;
    }
    true
}

/// Sorts `words` by their upper 32 bits, stably: four passes of a least-significant-digit
/// radix sort on bytes 4..7, through a scratch vector (an even number of passes, so the
/// result ends in `words`).
fn radix_sort_by_high_half(words: &mut [u64]) {
    let mut counts = [[0usize; 256]; 4];
    for &w in words.iter() {
        for (digit, count) in counts.iter_mut().enumerate() {
            count[(w >> (32 + 8 * digit)) as usize & 255] += 1;
        }
    }
    let mut scratch = vec![0u64; words.len()];
    let (mut from, mut to) = (&mut *words, &mut scratch[..]);
    for (digit, count) in counts.iter_mut().enumerate() {
        let mut start = 0;
        for c in count.iter_mut() {
            (*c, start) = (start, start + *c);
        }
        for &w in from.iter() {
            let bucket = (w >> (32 + 8 * digit)) as usize & 255;
            to[count[bucket]] = w;
            count[bucket] += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
}

/// Sorts pairs by key, the values of equal keys in their input order: the radix sort's
/// order, which the GPUs give the pairs that [`pairs_take_radix`] names.
fn sort_pairs_stable<W: Word, V: bytemuck::Pod + Send + Sync>(
    keys: &mut [W],
    values: &mut [V],
    enc: KeyEncoding,
) {
    map_keys(keys, |k| enc.encode(k));
    schedule::sort_pairs_stably(keys, values);
    map_keys(keys, |k| enc.decode(k));
}

/// Sorts `keys` (and `values`) in rows of `row_len`, rows in parallel. One row of pairs
/// takes the radix sort's order (stable) where [`pairs_take_radix`] says so (narrow keys
/// too: the GPUs widen them to 32-bit words on the way in, and sort those by radix), else
/// merge path's order past [`pair_sort_tile`]'s threshold, unless `oblivious`; rows always
/// take the network's, as on the GPUs.
fn sort_rows<W: Word>(
    keys: &mut [W],
    values: Option<WordsMut<'_>>,
    enc: KeyEncoding,
    row_len: usize,
    oblivious: bool,
) {
    fn pairs<W: Word, V: bytemuck::Pod + Send + Sync>(
        keys: &mut [W],
        values: &mut [V],
        enc: KeyEncoding,
        row_len: usize,
        oblivious: bool,
    ) {
        let element_bytes = (std::mem::size_of::<W>() + std::mem::size_of::<V>()) as u64;
        if row_len == keys.len() && !oblivious {
            if pairs_take_radix(row_len as u64, element_bytes) {
                return sort_pairs_stable(keys, values, enc);
            }
            let tile = pair_sort_tile(row_len as u64, element_bytes);
            return sort_pairs(keys, values, enc, tile, false);
        }
        keys.par_chunks_mut(row_len)
            .zip(values.par_chunks_mut(row_len))
            .for_each(|(k, v)| sort_pairs(k, v, enc, None, oblivious));
    }
    match values {
        None => keys.par_chunks_mut(row_len).for_each(|k| sort_keys(k, enc)),
        Some(WordsMut::U32(v)) => pairs(keys, v, enc, row_len, oblivious),
        Some(WordsMut::U64(v)) => pairs(keys, v, enc, row_len, oblivious),
    }
}

impl Backend for CpuBackend {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn sort_rows_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()> {
        debug_assert_rows_words(keys.len(), values.as_ref().map(WordsMut::len), row_len);
        let oblivious = self.oblivious.load(Ordering::Relaxed);
        match keys {
            WordsMut::U32(k) => sort_rows(k, values, encoding, row_len, oblivious),
            WordsMut::U64(k) => sort_rows(k, values, encoding, row_len, oblivious),
        }
        Ok(())
    }

    fn sort_rows_narrow(
        &self,
        keys: &mut dyn NarrowKeys,
        values: Option<WordsMut<'_>>,
        descending: bool,
        row_len: usize,
    ) -> Result<()> {
        if values.is_none() && row_len == keys.len() && row_len >= COUNT_NARROW_FROM {
            count_narrow(keys, descending);
            return Ok(());
        }
        // Widened to 32-bit words as the GPUs' host-slice sorts widen them, so that their
        // pairs take the same order (the radix sort's where the words' pairs take it).
        crate::backend::sort_narrow_as_words(self, keys, values, descending, row_len)
    }

    fn set_oblivious(&self, oblivious: bool) {
        self.oblivious.store(oblivious, Ordering::Relaxed);
    }
}

/// One row of narrow keys alone (at most 16 bits) from this many keys on is counted, not
/// sorted: 2^16 counters cost about as much to clear, add up and walk as a sort of this
/// many keys.
const COUNT_NARROW_FROM: usize = 1 << 18;

/// Keys each piece of the counting reads or writes at a time.
const COUNT_PIECE: usize = 1 << 16;

/// Sorts one row of narrow keys alone by counting their ordered words (each below 2^16):
/// equal words are equal keys, so the sorted row is each word's key as often as it occurs.
/// The counts are taken in pieces on rayon's threads, each thread with counters of its own;
/// the sorted words are written in pieces from the words' starts.
fn count_narrow(keys: &mut dyn NarrowKeys, descending: bool) {
    const WORDS: usize = 1 << 16;
    let n = keys.len();
    let shared: &dyn NarrowKeys = keys;
    let counts = (0..n.div_ceil(COUNT_PIECE))
        .into_par_iter()
        .fold(
            || (vec![0u64; WORDS], vec![0u32; COUNT_PIECE]),
            |(mut counts, mut buffer), piece| {
                let first = piece * COUNT_PIECE;
                let words = &mut buffer[..COUNT_PIECE.min(n - first)];
                shared.widen(first, words);
                for &w in words.iter() {
                    counts[w as usize] += 1;
                }
                (counts, buffer)
            },
        )
        .map(|(counts, _)| counts)
        .reduce(
            || vec![0u64; WORDS],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
                a
            },
        );
    // starts[w]: the first position of word w in ascending order; starts[WORDS] = n.
    let mut starts = Vec::with_capacity(WORDS + 1);
    let mut at = 0u64;
    starts.push(0);
    for c in &counts {
        at += c;
        starts.push(at);
    }
    let word_at = |p: u64| (starts.partition_point(|&s| s <= p) - 1) as u32;
    let mut sorted = vec![0u32; n];
    sorted
        .par_chunks_mut(COUNT_PIECE)
        .enumerate()
        .for_each(|(piece, out)| {
            let first = (piece * COUNT_PIECE) as u64;
            // Ascending positions p hold the word at p; descending ones the word at n-1-p.
            let position = |j: usize| {
                let p = first + j as u64;
                if descending { n as u64 - 1 - p } else { p }
            };
            let mut word = word_at(position(0));
            for (j, slot) in out.iter_mut().enumerate() {
                let p = position(j);
                if p < starts[word as usize] || p >= starts[word as usize + 1] {
                    word = word_at(p);
                }
                *slot = word;
            }
        });
    keys.narrow(0, &sorted);
}

#[cfg(test)]
mod tests;
