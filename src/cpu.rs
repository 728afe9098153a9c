//! The CPU executor: rayon on the host, for machines without a GPU.
//!
//! Keys alone sort with `par_sort_unstable` on ordered words (a total order on bits, so the
//! result equals any correct sort's). Key-value pairs run the same comparator network as
//! the GPUs through [`schedule::emulate`], or, where the GPUs sort them by merge path
//! ([`pair_sort_tile`]), the same tile sort followed by a stable merge
//! ([`schedule::emulate_merge_path`]), so values of equal keys land exactly where a GPU puts
//! them.

use crate::backend::{Backend, BackendKind, DeviceInfo, DeviceType};
use crate::error::{Result, debug_assert_rows_words};
use crate::keys::{KeyEncoding, NarrowKeys, Word, WordsMut};
use crate::schedule::merge_path::pair_sort_tile;
use crate::schedule::{self, Schedule, TileParams};
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
pub struct CpuBackend {
    info: DeviceInfo,
    /// Whether key-value sorts run the network alone ([`Backend::set_oblivious`]), as the
    /// GPU backends then do.
    oblivious: AtomicBool,
}

impl CpuBackend {
    /// The host CPU, with all of rayon's threads.
    pub fn new() -> CpuBackend {
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
pub fn info() -> DeviceInfo {
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
/// tens of microseconds (about 50 us per parallel call on a 16-core host), more than sorting
/// a few thousand keys.
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
/// [`pair_sort_tile`]'s threshold), the network's otherwise.
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

/// Sorts `keys` (and `values`) in rows of `row_len`, rows in parallel. One row of pairs
/// takes merge path's order past [`pair_sort_tile`]'s threshold unless `oblivious`; rows
/// always take the network's, as on the GPUs.
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
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Network order of `keys` (ordered words) with `values`, from the whole network's
    /// schedule for their length.
    fn network(keys: &[u32], values: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let (mut k, mut v) = (keys.to_vec(), values.to_vec());
        let schedule = Schedule::new(k.len() as u64, CPU_TILE);
        schedule::emulate(&schedule, &mut k, Some(&mut v));
        (k, v)
    }

    /// Short pairs of `u32` keys and values: distinct keys through the packed radix sort
    /// (every encoding, lengths around its byte digits), ties through the network, both
    /// exactly as the network orders them.
    #[test]
    fn short_u32_pairs_match_the_network() {
        let mut rng = StdRng::seed_from_u64(7);
        let kinds = [
            (crate::keys::KeyKind::Unsigned, false),
            (crate::keys::KeyKind::Signed, true),
            (crate::keys::KeyKind::Float, false),
            (crate::keys::KeyKind::Float, true),
        ];
        for n in [0usize, 1, 2, 3, 255, 256, 257, 1000, 4096, (1 << 14) - 1] {
            for (i, &(kind, descending)) in kinds.iter().enumerate() {
                let enc = KeyEncoding { kind, descending };
                // Distinct keys spread over every byte, or a few repeated ones.
                let keys: Vec<u32> = if i % 2 == 0 {
                    let mut k: Vec<u32> = (0..n as u32)
                        .map(|j| j.wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995)
                        .collect();
                    k.sort_unstable();
                    k.dedup();
                    k.iter()
                        .map(|&x| x.rotate_left(rng.gen_range(0..32)) | 1)
                        .collect()
                } else {
                    (0..n).map(|_| rng.gen_range(0..9)).collect()
                };
                let n = keys.len();
                let values: Vec<u32> = (0..n as u32).map(|j| j ^ 0xffff).collect();
                let (mut k, mut v) = (keys.clone(), values.clone());
                sort_pairs(&mut k, &mut v, enc, None, false);
                let encoded: Vec<u32> = keys.iter().map(|&x| enc.encode(x)).collect();
                let (wk, wv) = network(&encoded, &values);
                let wk: Vec<u32> = wk.into_iter().map(|x| enc.decode(x)).collect();
                assert_eq!((k, v), (wk, wv), "n = {n}, {enc:?}");
            }
        }
    }

    /// The CPU backend's sort of 2^10 and 2^11 random `u32` keys with `u32` values (what a
    /// GPU sorter runs below `DEFAULT_HOST_THRESHOLD`) against rayon's `par_sort_unstable_by_key`
    /// of the same pairs, taking turns, medians of 3000; the result checked once. A timing:
    /// `cargo test --release --lib cpu_short_pairs_against_rayon -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check"]
    fn cpu_short_pairs_against_rayon() {
        use std::time::Instant;
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let cpu = CpuBackend::new();
        let enc = KeyEncoding {
            kind: crate::keys::KeyKind::Unsigned,
            descending: false,
        };
        let mut rng = StdRng::seed_from_u64(12345);
        for n in [1usize << 10, 1 << 11] {
            let keys: Vec<u32> = (0..n).map(|_| rng.r#gen()).collect();
            let values: Vec<u32> = (0..n as u32).collect();
            let pairs: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for round in 0..3000 {
                let (mut k, mut v) = (keys.clone(), values.clone());
                let start = Instant::now();
                cpu.sort_rows_words(WordsMut::U32(&mut k), Some(WordsMut::U32(&mut v)), enc, n)
                    .expect("sort");
                ours.push(start.elapsed().as_secs_f64() * 1e6);
                let mut p = pairs.clone();
                let start = Instant::now();
                p.par_sort_unstable_by_key(|p| p.0);
                theirs.push(start.elapsed().as_secs_f64() * 1e6);
                if round == 0 {
                    let want: (Vec<u32>, Vec<u32>) = p.into_iter().unzip();
                    assert_eq!((k, v), want, "n = {n}");
                }
            }
            eprintln!(
                "{n} u32 pairs: ours {:.2} us, rayon par_sort_unstable_by_key {:.2} us (medians of 3000, {} rayon threads)",
                median(ours),
                median(theirs),
                rayon::current_num_threads()
            );
        }
    }

    /// Past the threshold, one row of pairs comes out in merge path's order: sorted keys,
    /// and the pairs of each tile of `2^pair_sort_tile` inputs in the order the network
    /// gives that tile alone, tile after tile among equal keys. In the oblivious mode, and
    /// in rows, the whole network's order.
    #[test]
    fn long_pairs_take_merge_paths_order() {
        let n = (1usize << 20) + 4099;
        let log_tile = pair_sort_tile(n as u64, 8).expect("past the threshold");
        let mut rng = StdRng::seed_from_u64(41);
        let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..50)).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let cpu = CpuBackend::new();
        let enc = KeyEncoding {
            kind: crate::keys::KeyKind::Unsigned,
            descending: false,
        };
        let (mut k, mut v) = (keys.clone(), values.clone());
        cpu.sort_rows_words(WordsMut::U32(&mut k), Some(WordsMut::U32(&mut v)), enc, n)
            .expect("sort");
        assert!(k.windows(2).all(|w| w[0] <= w[1]), "keys out of order");
        let mut tiles: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n.div_ceil(1 << log_tile)];
        let mut last_tile = vec![0usize; 50];
        for (&key, &value) in k.iter().zip(&v) {
            assert_eq!(keys[value as usize], key, "a value left its key");
            let tile = (value >> log_tile) as usize;
            assert!(
                tile >= last_tile[key as usize],
                "key {key}: tile {tile} after a later one"
            );
            last_tile[key as usize] = tile;
            tiles[tile].push((key, value));
        }
        for (t, got) in tiles.iter().enumerate() {
            let range = (t << log_tile)..n.min((t + 1) << log_tile);
            let (wk, wv) = network(&keys[range.clone()], &values[range]);
            let want: Vec<(u32, u32)> = wk.into_iter().zip(wv).collect();
            // Stable merges keep a tile's pairs in its order: the tile's pairs by key, each
            // key's in the tile network's order.
            let mut by_key = want.clone();
            by_key.sort_by_key(|p| p.0);
            assert_eq!(got, &by_key, "tile {t}");
        }
        // Rows, and the oblivious mode: the whole network.
        let half = n / 2 - 1;
        let (mut k, mut v) = (keys[..2 * half].to_vec(), values[..2 * half].to_vec());
        cpu.sort_rows_words(
            WordsMut::U32(&mut k),
            Some(WordsMut::U32(&mut v)),
            enc,
            half,
        )
        .expect("rows");
        for r in 0..2 {
            let rows = r * half..(r + 1) * half;
            let (wk, wv) = network(&keys[rows.clone()], &values[rows.clone()]);
            assert!(k[rows.clone()] == wk[..] && v[rows] == wv[..], "row {r}");
        }
        cpu.set_oblivious(true);
        let (mut k, mut v) = (keys.clone(), values.clone());
        cpu.sort_rows_words(WordsMut::U32(&mut k), Some(WordsMut::U32(&mut v)), enc, n)
            .expect("oblivious");
        let (wk, wv) = network(&keys, &values);
        assert!(
            k == wk && v == wv,
            "the oblivious mode is the network's order"
        );
    }

    /// One row of narrow keys alone from [`COUNT_NARROW_FROM`] keys on is counted: every
    /// 16-bit pattern several times over, and lengths around the pieces, in both orders,
    /// equal to a sort of the ordered words.
    #[test]
    fn counted_narrow_keys_match_a_sort() {
        let mut rng = StdRng::seed_from_u64(8);
        let every: Vec<i16> = (0..3).flat_map(|_| i16::MIN..=i16::MAX).collect();
        let mut cases = vec![every];
        for n in [
            COUNT_NARROW_FROM,
            COUNT_NARROW_FROM + 1,
            COUNT_PIECE - 1,
            COUNT_PIECE + 1,
            5 * COUNT_PIECE + 3,
        ] {
            cases.push((0..n).map(|_| rng.r#gen()).collect());
            cases.push((0..n).map(|_| rng.gen_range(-2..2i16) * 7000).collect());
            cases.push(vec![-5; n]);
        }
        let b = CpuBackend::new();
        for keys in cases {
            for descending in [false, true] {
                let mut got = keys.clone();
                let mut narrow: &mut [i16] = &mut got;
                b.sort_rows_narrow(&mut narrow, None, descending, keys.len())
                    .expect("a sort");
                let mut want = keys.clone();
                want.sort_unstable();
                if descending {
                    want.reverse();
                }
                assert!(got == want, "n={} descending={descending}", keys.len());
            }
        }
    }

    /// Times the counting sort of narrow keys against the widened sort it replaces and
    /// rayon's `par_sort_unstable` of the keys themselves (best of 5, random `u16`):
    /// `cargo test --release --lib cpu_counting_against_rayon -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check: run it by name"]
    fn cpu_counting_against_rayon() {
        let mut rng = StdRng::seed_from_u64(1);
        let b = CpuBackend::new();
        for log in [18u32, 20, 24] {
            let n = 1usize << log;
            let keys: Vec<u16> = (0..n).map(|_| rng.r#gen()).collect();
            let mut best = [f64::MAX; 3];
            let time = |best: &mut f64, f: &mut dyn FnMut()| {
                let t = std::time::Instant::now();
                f();
                *best = best.min(t.elapsed().as_secs_f64() * 1e3);
            };
            for _ in 0..5 {
                let (mut a, mut c, mut d) = (keys.clone(), keys.clone(), keys.clone());
                time(&mut best[0], &mut || {
                    let mut narrow: &mut [u16] = &mut a;
                    count_narrow(&mut narrow, false);
                });
                time(&mut best[1], &mut || {
                    let mut narrow: &mut [u16] = &mut c;
                    crate::backend::sort_narrow_as_words(&b, &mut narrow, None, false, n)
                        .expect("a sort");
                });
                time(&mut best[2], &mut || d.par_sort_unstable());
                assert!(a == c && a == d, "2^{log}");
            }
            eprintln!(
                "2^{log} u16: counted {:.2} ms, widened and sorted {:.2} ms, rayon \
                 par_sort_unstable {:.2} ms",
                best[0], best[1], best[2]
            );
        }
    }
}
