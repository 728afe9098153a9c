//! Stable argsort, stable key-value sorts and ragged segments, built from the library's sorts.
//!
//! Keys of at most 32 bits take one sort of 64-bit words: `ordered key << 32 | position` for
//! argsort (positions break ties, so the order is the stable one whatever the sort does with
//! equal words, which are equal), `segment << 32 | ordered key` for segments; one long row
//! on a device instead sorts its keys with their positions as values, by the stable radix
//! sort, which moves half the bytes. An argsort of
//! 8-byte keys on a device sorts the ordered keys with their positions as values, then puts
//! the positions of each run of equal keys in order on rayon's threads; on the host it sorts
//! the ordered key's leading bits with the position in the rest (as few bits as the
//! positions need), then puts each run of equal leading bits in order of (the key's other
//! bits, position): each the faster of the two where it runs.
//! An argsort's keys and labels are written by blocks of its input ([`LabelledBlock`]), each
//! into its own pieces of the sort's buffers on rayon's threads: blocks of a slice of keys,
//! or of the valid rows of an Arrow column, which find those rows in its null bitmap as
//! they write.
//! Segments of 8-byte keys take that argsort, then a sort of `segment << 32 | rank`. Every
//! sort runs on the sorter's device; positions are 32-bit, so one array (or row) holds at
//! most 2^32 elements here.

use crate::device::BackendKind;
use crate::error::{Error, Result};
use crate::keys::{
    KeyEncoding, KeyKind, Order, SortKey, Word, WordsMut, key_of_u32, u32_kind, u32_of_key,
    u64_of_key, word_kind,
};
use crate::schedule::radix::pairs_take_radix;
use crate::shape::{check_indexable, check_lengths, check_rows};
use crate::sorter::Sorter;
use rayon::prelude::*;

pub(crate) use blocks::LabelledBlock;
use blocks::{RowsBlock, fill_piece, for_each_block, map_blocks, with_pieces};

/// The order of unsigned words, ascending: the sorts here sort words already ordered.
const UNSIGNED: KeyEncoding = KeyEncoding {
    kind: KeyKind::Unsigned,
    descending: false,
};

/// Below this many elements the host loops here stay on the calling thread: waking rayon's
/// threads costs tens of microseconds, more than the loop.
const SEQUENTIAL_BELOW: usize = 1 << 14;

/// `(0..n).map(f)` collected, on rayon's threads from [`SEQUENTIAL_BELOW`] elements on.
fn map_indices<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if n < SEQUENTIAL_BELOW {
        (0..n).map(f).collect()
    } else {
        (0..n).into_par_iter().map(f).collect()
    }
}

/// Positions per block of the host loops here: a few thousand blocks at 2^26 positions.
const BLOCK: usize = 1 << 14;

/// `out[i] = f(i, position of i in its row)` for every index of `out`, in rows of `row_len`,
/// in blocks (one division per block, not per element), on rayon's threads from
/// [`SEQUENTIAL_BELOW`] elements on.
fn fill_rows<T: Send>(out: &mut [T], row_len: usize, f: impl Fn(usize, u32) -> T + Sync + Send) {
    let fill = |(p, piece): (usize, &mut [T])| {
        let start = p * BLOCK;
        let mut position = start % row_len.max(1);
        for (j, slot) in piece.iter_mut().enumerate() {
            *slot = f(start + j, position as u32);
            position += 1;
            if position == row_len {
                position = 0;
            }
        }
    };
    if out.len() < SEQUENTIAL_BELOW {
        out.chunks_mut(BLOCK).enumerate().for_each(fill);
    } else {
        out.par_chunks_mut(BLOCK).enumerate().for_each(fill);
    }
}

/// The result of a sort of this module's own copies: a failure while copying its result
/// back leaves the caller's slices untouched (they are written only after every sort
/// succeeded), so it is reported as the failure itself, not as a partial result.
fn of_copies(sorted: Result<()>) -> Result<()> {
    match sorted {
        Err(Error::PartialResult { cause }) => Err(*cause),
        other => other,
    }
}

/// Words per region of [`order_tied_prefixes`] at least: regions end at the first run
/// boundary from there on, so that each holds whole runs.
const TIE_REGION: usize = 1 << 16;

/// The starts of the regions after the first that [`order_tied_prefixes`] and
/// [`order_equal_keys`] split `0..n` into: the first position where a run opens
/// (`opens(i)`, never asked of 0) in each stretch of [`TIE_REGION`] after the first, so that
/// each region holds whole runs (a stretch inside one run has none, and its region goes on).
fn region_starts(n: usize, opens: impl Fn(usize) -> bool + Sync) -> Vec<usize> {
    (1..n.div_ceil(TIE_REGION))
        .into_par_iter()
        .filter_map(|r| (r * TIE_REGION..n.min((r + 1) * TIE_REGION)).find(|&i| opens(i)))
        .collect()
}

/// `data` cut at `starts` (increasing, inside it): each piece with the position of its
/// first element.
fn split_at_starts<'a, T>(mut data: &'a mut [T], starts: &[usize]) -> Vec<(usize, &'a mut [T])> {
    let mut pieces = Vec::with_capacity(starts.len() + 1);
    let mut at = 0;
    for &start in starts {
        let (piece, rest) = std::mem::take(&mut data).split_at_mut(start - at);
        pieces.push((at, piece));
        (data, at) = (rest, start);
    }
    pieces.push((at, data));
    pieces
}

/// Calls `each(first, end)` for every run `first..end` of more than one element in
/// `first..first + len` (whole runs), where a run opens at `i` if `opens(i)`.
fn for_each_run(
    first: usize,
    len: usize,
    opens: impl Fn(usize) -> bool,
    mut each: impl FnMut(usize, usize),
) {
    let mut start = first;
    while start < first + len {
        let mut end = start + 1;
        while end < first + len && !opens(end) {
            end += 1;
        }
        if end - start > 1 {
            each(start, end);
        }
        start = end;
    }
}

/// Sorts `v` on rayon's threads if it is long, else on this one.
fn sort_run<T: Ord + Send>(v: &mut [T]) {
    if v.len() > TIE_REGION {
        v.par_sort_unstable();
    } else {
        v.sort_unstable();
    }
}

/// Orders each run of words with equal bits above `label_bits`, within each row of
/// `row_len`, by `(low(row, label), label)`, where the label is a word's low `label_bits`
/// bits (at most 32), and keeps the bits above: after a sort of `prefix << label_bits |
/// label`, this gives the order of `(prefix, low, label)`. In regions of whole runs on
/// rayon's threads; a long run is sorted on rayon's threads itself.
fn order_tied_prefixes(
    words: &mut [u64],
    row_len: usize,
    label_bits: u32,
    low: impl Fn(usize, u32) -> u32 + Sync,
) {
    let labels = (1u64 << label_bits) - 1;
    // A run opens where a row starts or the prefix changes.
    let opens = |w: &[u64], i: usize, at: usize| {
        at.is_multiple_of(row_len) || (w[i] ^ w[i - 1]) & !labels != 0
    };
    let starts = region_starts(words.len(), |i| opens(words, i, i));
    split_at_starts(words, &starts)
        .into_par_iter()
        .for_each(|(first, region)| {
            let mut by_low: Vec<u64> = Vec::new();
            let region_opens = |at: usize| opens(region, at - first, at);
            let mut runs = Vec::new();
            for_each_run(first, region.len(), region_opens, |a, b| runs.push((a, b)));
            for (a, b) in runs {
                let row = a / row_len;
                let run = &mut region[a - first..b - first];
                let prefix = run[0] & !labels;
                by_low.clear();
                by_low.extend(run.iter().map(|&w| {
                    let label = (w & labels) as u32;
                    u64::from(low(row, label)) << 32 | u64::from(label)
                }));
                sort_run(&mut by_low);
                for (w, &b) in run.iter_mut().zip(&by_low) {
                    *w = prefix | u64::from(b as u32);
                }
            }
        });
}

/// Sorts the ordered keys that `blocks` write (`ordered` of each key) on `backend`, in rows
/// of `row_len`, with their labels as values into `out`, then puts each run of equal keys'
/// labels in order ([`order_equal_keys`]): the labels ordered by `(key, label)`.
fn sort_labelled_pairs<K: SortKey, B: LabelledBlock<K>, W: Word>(
    backend: &dyn crate::backend::Backend,
    blocks: Vec<B>,
    ordered: impl Fn(K) -> W + Sync,
    row_len: usize,
    out: &mut [u32],
) -> Result<()> {
    // Zeroed pages from the allocator: the blocks' threads touch them first.
    let mut keys = vec![W::ZERO; out.len()];
    let blocks = with_pieces(blocks, B::positions, &mut keys);
    let blocks = with_pieces(blocks, |(block, _)| block.positions(), out);
    for_each_block(blocks, |((block, keys), labels)| {
        let mut slots = keys.iter_mut().zip(labels.iter_mut());
        block.fill(|key, label| {
            if let Some((k, l)) = slots.next() {
                (*k, *l) = (ordered(key), label);
            }
        });
    });
    of_copies(backend.sort_rows_words(
        W::words_mut(&mut keys),
        Some(WordsMut::U32(out)),
        UNSIGNED,
        row_len,
    ))?;
    order_equal_keys(&keys, out, row_len);
    Ok(())
}

/// Puts the labels of each run of equal `keys` within each row of `row_len` in increasing
/// order: after a sort of the keys with their labels as values, whatever it did with equal
/// keys, this gives the order of `(key, label)`. In regions of whole runs on rayon's
/// threads.
fn order_equal_keys<W: PartialEq + Sync>(keys: &[W], labels: &mut [u32], row_len: usize) {
    let opens = |i: usize| i.is_multiple_of(row_len) || keys[i] != keys[i - 1];
    let starts = region_starts(keys.len(), opens);
    split_at_starts(labels, &starts)
        .into_par_iter()
        .for_each(|(first, region)| {
            for_each_run(first, region.len(), opens, |a, b| {
                sort_run(&mut region[a - first..b - first]);
            });
        });
}

impl Sorter {
    /// The permutation that sorts `keys` in `order`, stably: ascending, `keys[p[0]] <=
    /// keys[p[1]] <= ...`, and equal keys keep their input order in either order (numpy's
    /// `argsort(kind="stable")`). Floats order as [`f32::total_cmp`]. At most 2^32 keys
    /// ([`Error::Unsupported`] beyond).
    ///
    /// ```
    /// use bitonic::Order;
    /// let sorter = bitonic::Sorter::new()?;
    /// assert_eq!(sorter.argsort(&[3.0f32, 1.0, 3.0, 2.0], Order::Ascending)?, [1, 3, 0, 2]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn argsort<K: SortKey>(&self, keys: &[K], order: Order) -> Result<Vec<u32>> {
        self.argsort_rows_impl(keys, keys.len().max(1), order.is_descending())
    }

    /// [`Sorter::argsort`] of every row of a row-major matrix: entry `r * row_len + i` is the
    /// position within row `r` of its `i`-th key in `order`.
    pub fn argsort_rows<K: SortKey>(
        &self,
        keys: &[K],
        row_len: usize,
        order: Order,
    ) -> Result<Vec<u32>> {
        self.argsort_rows_impl(keys, row_len, order.is_descending())
    }

    /// Sorts `keys` in `order` and moves `values` with them, stably: the result equals
    /// Rust's `sort_by` on the pairs by key (floats by `total_cmp`; descending compares the
    /// other way round), element for element. Values may be any `Copy` type.
    ///
    /// ```
    /// use bitonic::Order;
    /// let sorter = bitonic::Sorter::new()?;
    /// let mut keys = vec![2u8, 1, 2, 1];
    /// let mut names = vec!["a", "b", "c", "d"];
    /// sorter.sort_by_key_stable(&mut keys, &mut names, Order::Ascending)?;
    /// assert_eq!(names, ["b", "d", "a", "c"]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_by_key_stable<K: SortKey, V: Copy>(
        &self,
        keys: &mut [K],
        values: &mut [V],
        order: Order,
    ) -> Result<()> {
        self.stable_by_key(keys, values, order.is_descending())
    }

    /// Sorts every segment `data[offsets[i]..offsets[i + 1]]` in `order` on its own (the
    /// offsets CUB's segmented sort takes: non-decreasing, within `data`; elements before
    /// the first offset or after the last stay where they are). Empty segments are fine.
    ///
    /// ```
    /// use bitonic::Order;
    /// let sorter = bitonic::Sorter::new()?;
    /// let mut data = vec![5i32, 4, 9, 8, 7, 0];
    /// sorter.sort_segments(&mut data, &[0, 2, 2, 5, 6], Order::Ascending)?;
    /// assert_eq!(data, [4, 5, 7, 8, 9, 0]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_segments<K: SortKey>(
        &self,
        data: &mut [K],
        offsets: &[usize],
        order: Order,
    ) -> Result<()> {
        self.segments(data, offsets, order.is_descending())
    }

    /// Sorts 64-bit words ascending in rows of `row_len`, on the backend that sorts this many
    /// host elements; a failed copy back is reported as the failure itself ([`of_copies`]).
    fn sort_u64_rows(&self, words: &mut [u64], row_len: usize) -> Result<()> {
        of_copies(
            self.dispatch
                .backends
                .backend_for(words.len())
                .sort_rows_words(WordsMut::U64(words), None, UNSIGNED, row_len),
        )
    }

    fn stable_by_key<K: SortKey, V: Copy>(
        &self,
        keys: &mut [K],
        values: &mut [V],
        descending: bool,
    ) -> Result<()> {
        check_lengths(keys.len(), Some(values.len()))?;
        let order = self.argsort_rows_impl(keys, keys.len().max(1), descending)?;
        let sorted_keys: Vec<K> = order.iter().map(|&i| keys[i as usize]).collect();
        let sorted_values: Vec<V> = order.iter().map(|&i| values[i as usize]).collect();
        keys.copy_from_slice(&sorted_keys);
        values.copy_from_slice(&sorted_values);
        Ok(())
    }

    /// Stable argsort of rows: for keys of at most 32 bits one sort of `ordered key << 32 |
    /// position` within each row; for 8-byte keys see [`Sorter::argsort_labelled_into`].
    fn argsort_rows_impl<K: SortKey>(
        &self,
        keys: &[K],
        row_len: usize,
        descending: bool,
    ) -> Result<Vec<u32>> {
        check_rows(keys.len(), row_len)?;
        check_indexable(row_len, "an argsort row")?;
        let blocks = keys
            .chunks(BLOCK)
            .enumerate()
            .map(|(b, keys)| RowsBlock {
                keys,
                first: b * BLOCK,
                row_len,
            })
            .collect();
        // Zeroed pages from the allocator: the fill touches them first, on rayon's threads.
        let mut out = vec![0u32; keys.len()];
        self.argsort_labelled_into(
            blocks,
            |row, label| keys[row * row_len + label as usize],
            row_len,
            row_len.saturating_sub(1),
            descending,
            &mut out,
        )?;
        Ok(out)
    }

    /// Writes into `out` the labels that `blocks` write with their keys (as many as `out`),
    /// ordered stably by key: each label is the position in `keys` of the key written with
    /// it, and the labels increase from each position to the next, so that ordering equal
    /// keys by label keeps their input order. What [`Sorter::argsort`] of the keys written,
    /// mapped back through their labels, would give, with no list of the keys' positions
    /// (the blocks find them as they write); `out` may be part of a larger result. At most
    /// 2^32 positions.
    #[cfg(feature = "arrow")]
    pub(crate) fn argsort_blocks_into<K: SortKey, B: LabelledBlock<K>>(
        &self,
        blocks: Vec<B>,
        keys: &[K],
        order: Order,
        out: &mut [u32],
    ) -> Result<()> {
        check_indexable(out.len(), "an argsort")?;
        self.argsort_labelled_into(
            blocks,
            |_, label| keys[label as usize],
            out.len().max(1),
            keys.len().saturating_sub(1),
            order.is_descending(),
            out,
        )
    }

    /// The argsort of the `out.len()` keys that `blocks` write with their labels, in rows of
    /// `row_len`, into `out`: the labels in sorted order, equal keys of a row in label order.
    /// Every label is at most `largest_label`; `key_of_label(row, label)` is the key that
    /// carries `label` in row `row`.
    ///
    /// Keys of at most 32 bits take one sort of `ordered key << 32 | label`, except one row
    /// on a device that [`pairs_take_radix`] names: the ordered keys sort with their labels
    /// as values (a stable radix sort), and runs of equal keys are checked to be in label
    /// order on the host. 8-byte keys:
    /// - on a device, the ordered keys sort with their labels as values, and each run of
    ///   equal keys is then put in label order on the host: the device sorts pairs faster
    ///   than the host's route below, whose runs of equal prefixes look their keys up at
    ///   random in host memory;
    /// - on the host, one sort of `prefix of the ordered key << label_bits | label` (the label
    ///   in as few bits as the largest label needs), then each run of equal prefixes in a row
    ///   put in order of (the key's remaining bits, label): one pass of 64-bit words, where a
    ///   sort of the pairs would move twice the bytes (`docs/performance.md` has the figures).
    fn argsort_labelled_into<K: SortKey, B: LabelledBlock<K>>(
        &self,
        blocks: Vec<B>,
        key_of_label: impl Fn(usize, u32) -> K + Sync + Send,
        row_len: usize,
        largest_label: usize,
        descending: bool,
        out: &mut [u32],
    ) -> Result<()> {
        let n = out.len();
        debug_assert_eq!(blocks.iter().map(B::positions).sum::<usize>(), n);
        if n <= 1 || row_len <= 1 {
            for_each_block(with_pieces(blocks, B::positions, out), |(block, piece)| {
                fill_piece(block, piece, |_, label| label);
            });
            return Ok(());
        }
        let backend = self.dispatch.backends.backend_for(n);
        let on_device = backend.device().backend != BackendKind::Cpu;
        if let Some(kind) = u32_kind::<K>()
            && on_device
            && row_len == n
            && !self.dispatch.backends.settings.oblivious
            && pairs_take_radix(n as u64, 8)
        {
            // One row of (key, label) pairs that a device sorts by radix: half the bytes a
            // digit of the 64-bit words below moves and half their digits, and the labels
            // of equal keys come out in order already. The pass over the runs of equal keys
            // costs little and keeps the order exact where a part of the sort took the
            // network (a range of a sort spread over devices, say).
            let enc = KeyEncoding { kind, descending };
            let ordered = |key: K| enc.encode(u32_of_key(key));
            return sort_labelled_pairs(backend, blocks, ordered, row_len, out);
        }
        if let Some(kind) = u32_kind::<K>() {
            let enc = KeyEncoding { kind, descending };
            let mut composite = map_blocks(blocks, n, |key, label| {
                u64::from(enc.encode(u32_of_key(key))) << 32 | u64::from(label)
            });
            self.sort_u64_rows(&mut composite, row_len)?;
            fill_rows(out, row_len, |i, _| composite[i] as u32);
            return Ok(());
        }
        let (width, kind) = word_kind::<K>();
        if width != 8 {
            return Err(Error::Unsupported(format!(
                "argsort of {}-byte keys",
                std::mem::size_of::<K>()
            )));
        }
        let enc = KeyEncoding { kind, descending };
        let ordered = |key: K| enc.encode(u64_of_key(key));
        if on_device {
            return sort_labelled_pairs(backend, blocks, ordered, row_len, out);
        }
        let label_bits = (usize::BITS - largest_label.leading_zeros()).max(1);
        let rest = (1u64 << label_bits) - 1;
        let mut composite = map_blocks(blocks, n, |key, label| {
            ordered(key) & !rest | u64::from(label)
        });
        self.sort_u64_rows(&mut composite, row_len)?;
        order_tied_prefixes(&mut composite, row_len, label_bits, |row, label| {
            (ordered(key_of_label(row, label)) & rest) as u32
        });
        fill_rows(out, row_len, |i, _| (composite[i] & rest) as u32);
        Ok(())
    }

    fn segments<K: SortKey>(
        &self,
        data: &mut [K],
        offsets: &[usize],
        descending: bool,
    ) -> Result<()> {
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
            return Ok(());
        };
        if offsets.windows(2).any(|w| w[0] > w[1]) || last > data.len() {
            return Err(Error::InvalidConfig(format!(
                "segment offsets must be non-decreasing and at most the data length {}",
                data.len()
            )));
        }
        let span = &mut data[first..last];
        check_indexable(span.len(), "sort_segments")?;
        check_indexable(offsets.len(), "sort_segments' segment count")?;
        if span.len() <= 1 {
            return Ok(());
        }
        // Segment number of every position.
        let mut segment_of = vec![0u32; span.len()];
        for (s, w) in offsets.windows(2).enumerate() {
            segment_of[w[0] - first..w[1] - first].fill(s as u32);
        }
        if let Some(kind) = u32_kind::<K>() {
            // One sort of `segment << 32 | ordered key`: equal words are equal keys of one
            // segment, so no position is needed.
            let enc = KeyEncoding { kind, descending };
            let len = span.len();
            let mut composite = map_indices(len, |i| {
                u64::from(segment_of[i]) << 32 | u64::from(enc.encode(u32_of_key(span[i])))
            });
            self.sort_u64_rows(&mut composite, len)?;
            let sorted: Vec<K> = map_indices(len, |i| key_of_u32(enc.decode(composite[i] as u32)));
            span.copy_from_slice(&sorted);
            return Ok(());
        }
        // Key order of the whole span: the argsort, one sort of keys alone (its stability is
        // not needed: equal keys are equal).
        let by_key = self.argsort_rows_impl(span, span.len(), descending)?;
        // Segment-major order keeping key order.
        let mut composite: Vec<u64> = by_key
            .iter()
            .enumerate()
            .map(|(rank, &p)| u64::from(segment_of[p as usize]) << 32 | rank as u64)
            .collect();
        let len = composite.len();
        self.sort_u64_rows(&mut composite, len)?;
        let sorted: Vec<K> = composite
            .iter()
            .map(|&c| span[by_key[(c as u32) as usize] as usize])
            .collect();
        span.copy_from_slice(&sorted);
        Ok(())
    }
}

mod blocks;
#[cfg(test)]
mod tests;
