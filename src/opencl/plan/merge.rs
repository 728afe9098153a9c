//! How a merge-path plan becomes launches on OpenCL: the tile sort is a `bitonic_tile`
//! launch of the network's local sort; each merge pass is `merge_split` and `merge_pass`,
//! or one `merge_pass_own_splits` whose work-groups find their tiles' parts themselves;
//! rows use the `merge_rows_*` kernels.

use super::{
    DECODE_ON_STORE, ENCODE_ON_LOAD, Launch, Limits, MAX_GLOBAL_GROUP, MAX_TILE_GROUPS, Shape,
    facts, floor_pow2, merge_local_key_bytes, merge_log_e, merge_log_tile, padded_words,
    pass_launch,
};
use crate::schedule::Pass;
use crate::schedule::plan as neutral;

/// One merge pass: `merge_split` finds where every output tile's part of its two input runs
/// starts, then `merge_pass` merges the parts from one buffer into the other; or, for a pass
/// of few tiles, `merge_pass_own_splits` does both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MergeLaunch {
    /// log2 of the input runs.
    pub log_run: u32,
    /// log2 of the outputs of one work-group's tile.
    pub tile_bits: u32,
    /// `DECODE_ON_STORE` on the last pass, else 0.
    pub transform: u32,
    /// Output tiles of every row (entries of the splitter buffer this pass fills).
    pub tiles: u64,
    /// Work-groups of `merge_split` (their items loop over the tiles).
    pub split_groups: usize,
    /// Work items per work-group of `merge_split`.
    pub split_local: usize,
    /// Work-groups of `merge_pass` (they loop over the tiles).
    pub groups: usize,
    /// Work items per work-group of `merge_pass`.
    pub local: usize,
    /// Bytes of `merge_pass`'s `__local` keys.
    pub local_bytes: u64,
    /// Bytes of `merge_pass`'s `__local` values (0 for keys alone).
    pub local_value_bytes: u64,
    /// Whether the merge work-groups find their tiles' parts themselves
    /// (`merge_pass_own_splits`, no splitter launch): passes of at most
    /// [`Limits::own_split_max_tiles`] tiles.
    pub own_splits: bool,
}

/// A merge-path sort of one row, or of rows each on its own: the network's local sort of
/// every tile in place (encoding keys), then merge passes that alternate from the data to a
/// scratch buffer and back (an even number, so that the result ends in the data; the last
/// decodes keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MergePathPlan {
    /// The tile sort.
    pub tile_sort: Launch,
    /// The rows the tile sort runs on (each at least one tile long); the merges merge each
    /// of its rows on its own.
    pub shape: Shape,
    /// The merge passes in order.
    pub merges: Vec<MergeLaunch>,
    /// Entries of the splitter buffer (`u64`): the most output tiles of any pass.
    pub splits: u64,
}

/// The launches that sort one chunk of `m` elements of a merge-path sort on its own while
/// the rest of the data uploads ([`neutral::chunk_plan`]): the tile sort of its tiles of
/// `2^sort_tile`, then the whole sort's merge passes up to runs of `2^log_chunk`, none
/// decoding. Its tile sort runs on rows at least one tile long
/// ([`neutral::MergePathPlan::tile_sort_log_row`]).
pub(crate) fn chunk_plan(
    limits: &Limits,
    m: u64,
    widths: (u64, u64),
    sort_tile: u32,
    log_chunk: u32,
) -> MergePathPlan {
    let plan = neutral::chunk_plan(&facts(limits, widths), m, sort_tile, log_chunk);
    merge_path_launches(limits, &plan, widths)
}

/// The launches of a merge-path plan: the tile sort, then each merge pass over each row,
/// with the splitter entries the largest pass needs.
pub(crate) fn merge_path_launches(
    limits: &Limits,
    plan: &neutral::MergePathPlan,
    (key_bytes, value_bytes): (u64, u64),
) -> MergePathPlan {
    let element_bytes = key_bytes + value_bytes;
    let merge_tile = merge_log_tile(limits, key_bytes, value_bytes);
    let log_e = merge_log_e(element_bytes);
    let shape = Shape {
        row_len: plan.row_len,
        rows: plan.rows,
        log_row: plan.tile_sort_log_row(),
    };
    let sort = Pass::LocalSort {
        log_tile: plan.sort_tile,
    };
    let tile_sort = pass_launch(
        limits,
        shape,
        element_bytes,
        (sort, plan.sort_tile),
        ENCODE_ON_LOAD,
    );
    let split_group = floor_pow2(limits.merge_group.clamp(1, MAX_GLOBAL_GROUP));
    let merges = plan
        .passes
        .iter()
        .map(|pass| {
            let tiles = pass.tiles * plan.rows;
            let split_local = if limits.uniform_groups {
                split_group
            } else {
                split_group.min(floor_pow2(tiles as usize))
            };
            // A CPU device gets one size for every pass (see `Limits::uniform_groups`):
            // work items past a smaller tile's end idle.
            let local = 1usize
                << (if limits.uniform_groups {
                    merge_tile
                } else {
                    pass.tile_bits
                } - log_e);
            MergeLaunch {
                log_run: pass.log_run,
                tile_bits: pass.tile_bits,
                transform: if pass.last { DECODE_ON_STORE } else { 0 },
                tiles,
                split_groups: tiles.div_ceil(split_local as u64).clamp(1, MAX_TILE_GROUPS) as usize,
                split_local,
                groups: tiles.clamp(1, MAX_TILE_GROUPS) as usize,
                local,
                local_bytes: merge_local_key_bytes(pass.tile_bits, key_bytes),
                local_value_bytes: padded_words(pass.tile_bits) * value_bytes,
                // `group_splits` searches with two halves of the group.
                own_splits: tiles <= limits.own_split_max_tiles && local >= 2,
            }
        })
        .collect();
    MergePathPlan {
        tile_sort,
        shape,
        merges,
        splits: plan.splits(),
    }
}
