//! Blocks of an argsort's input: stretches of consecutive positions that write their keys
//! and labels themselves, each into its own pieces of the sort's buffers.

use rayon::prelude::*;

use crate::keys::SortKey;

/// A stretch of consecutive positions of an argsort's input that writes their keys and
/// labels itself: a source that is not a slice of keys (the valid rows of an Arrow column,
/// found in its null bitmap) then needs no list of positions first, and can write more of
/// its own as it goes. Each block fills its own pieces of the sort's buffers, on rayon's
/// threads, so that the threads that fill new pages touch them first.
pub(crate) trait LabelledBlock<K>: Send {
    /// How many positions the block fills.
    fn positions(&self) -> usize;
    /// Calls `emit(key, label)` for each of the block's positions in order, exactly
    /// [`LabelledBlock::positions`] times.
    fn fill(self, emit: impl FnMut(K, u32));
}

/// [`super::BLOCK`] keys of a slice in rows of `row_len`, each labelled by its position in
/// its row (`row_len` is at least 1: a slice of keys forms rows of at least one).
pub(super) struct RowsBlock<'a, K> {
    pub(super) keys: &'a [K],
    /// The index of the first key in the whole slice.
    pub(super) first: usize,
    pub(super) row_len: usize,
}

impl<K: SortKey> LabelledBlock<K> for RowsBlock<'_, K> {
    fn positions(&self) -> usize {
        self.keys.len()
    }

    fn fill(self, mut emit: impl FnMut(K, u32)) {
        let mut position = self.first % self.row_len;
        for &key in self.keys {
            emit(key, position as u32);
            position += 1;
            if position == self.row_len {
                position = 0;
            }
        }
    }
}

/// Each of `items` with the next `len(item)` elements of `data`, in order.
pub(super) fn with_pieces<X, T>(
    items: Vec<X>,
    len: impl Fn(&X) -> usize,
    mut data: &mut [T],
) -> Vec<(X, &mut [T])> {
    items
        .into_iter()
        .map(|item| {
            let (piece, rest) = std::mem::take(&mut data).split_at_mut(len(&item));
            data = rest;
            (item, piece)
        })
        .collect()
}

/// `each(item)` for every item: one on the calling thread (waking rayon's threads costs
/// more than a block's loop), several on rayon's threads.
pub(super) fn for_each_block<X: Send>(items: Vec<X>, each: impl Fn(X) + Sync + Send) {
    if items.len() < 2 {
        items.into_iter().for_each(each);
    } else {
        items.into_par_iter().for_each(each);
    }
}

/// `piece[j] = f(key, label)` of the `j`-th position of `block` (as many as `piece`).
pub(super) fn fill_piece<K, T>(
    block: impl LabelledBlock<K>,
    piece: &mut [T],
    f: impl Fn(K, u32) -> T,
) {
    debug_assert_eq!(block.positions(), piece.len());
    let mut slots = piece.iter_mut();
    block.fill(|key, label| {
        if let Some(slot) = slots.next() {
            *slot = f(key, label);
        }
    });
}

/// `f(key, label)` of every position of `blocks` (`n` in all), in order, in a new vector.
pub(super) fn map_blocks<K, B: LabelledBlock<K>, T>(
    blocks: Vec<B>,
    n: usize,
    f: impl Fn(K, u32) -> T + Sync + Send,
) -> Vec<T>
where
    T: Copy + Default + Send + Sync,
{
    // Zeroed pages from the allocator: the blocks' threads touch them first.
    let mut out = vec![T::default(); n];
    for_each_block(
        with_pieces(blocks, B::positions, &mut out),
        |(block, piece)| {
            fill_piece(block, piece, &f);
        },
    );
    out
}
