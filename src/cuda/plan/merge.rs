//! How a merge-path plan becomes launches on CUDA: the tile sort is a `tile_pass` launch of
//! the network's local sort; each merge pass is `merge_split_<K>` (a warp or a thread per
//! output tile) and `merge_pass_<K>_<V>`, or one `merge_search_pass_<K>_<V>` whose blocks
//! find their tiles' parts themselves; rows use the `merge_rows_*` kernels.

use super::{
    DECODE_ON_STORE, DeviceLimits, Launch, MERGE_BLOCKS_PER_SM, MERGE_THREADS, MergeArgs, POLICY,
    Shape, Widths, facts, launch, merge_log_e, merge_shared_bytes,
};
use crate::schedule::plan as neutral;
use crate::schedule::{Pass, Transform};

/// Threads of a block of the merge splitter.
const SPLIT_BLOCK: u32 = 256;

/// One merge pass: `merge_split_<K>` finds where every output tile's part of its two input
/// runs starts, then `merge_pass_<K>_<V>` merges the parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MergeLaunch {
    /// Both kernels' parameters.
    pub args: MergeArgs,
    /// Whether the merge kernel finds its tiles' parts itself (`merge_search_pass_<key>_<value>`;
    /// one row, at most `POLICY.search_max_rounds` tiles per resident block), with no
    /// splitter launch; the splitter's shape below is then unused.
    pub search: bool,
    /// Blocks of the splitter kernel.
    pub split_grid: u32,
    /// Threads per block of the splitter kernel.
    pub split_block: u32,
    /// Blocks of the merge kernel.
    pub grid: u32,
    /// Threads per block of the merge kernel.
    pub block: u32,
    /// Dynamic shared memory of the merge kernel in bytes.
    pub shared_bytes: u32,
}

/// A merge-path sort of one row or of rows each on its own: the tile sort in place, then
/// merge passes that alternate from the data to the scratch buffer and back (an even number,
/// so the result ends in the data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MergePathPlan {
    /// The network's local sort of every tile, encoding keys on load.
    pub tile_sort: Launch,
    /// The merge passes in order; the last decodes keys on store.
    pub merges: Vec<MergeLaunch>,
    /// Entries of the splitter buffer (`u64`): the most output tiles of any pass.
    pub splits: u64,
}

/// The launches that sort one chunk of `m` elements of a merge-path sort on its own while
/// the rest of the data uploads (`schedule::plan::chunk_plan`): the tile sort of its tiles of
/// `2^sort_tile`, then the whole sort's merge passes up to runs of `2^log_chunk`, none
/// decoding. Its `splits` are the chunk's, no more than the whole sort's.
pub(crate) fn chunk_plan(
    limits: &DeviceLimits,
    m: u64,
    sort_tile: u32,
    log_chunk: u32,
    widths: Widths,
    encoding: u32,
) -> MergePathPlan {
    let facts = facts(limits, widths, None);
    let plan = neutral::chunk_plan(&facts, m, sort_tile, log_chunk);
    merge_path_launches(limits, &plan, widths.on_chip(), encoding)
}

/// The launches of a merge-path plan: the tile sort, then each merge pass over each row,
/// with the splitter entries the largest pass needs.
pub(crate) fn merge_path_launches(
    limits: &DeviceLimits,
    plan: &neutral::MergePathPlan,
    widths: Widths,
    encoding: u32,
) -> MergePathPlan {
    MergePathPlan {
        tile_sort: tile_sort_launch(limits, plan, widths, encoding),
        merges: merge_launches(limits, plan, widths, encoding),
        splits: plan.splits(),
    }
}

/// The tile sort of a merge-path plan: every tile of `2^sort_tile` sorted on chip, keys
/// encoded as they are loaded.
fn tile_sort_launch(
    limits: &DeviceLimits,
    plan: &neutral::MergePathPlan,
    widths: Widths,
    encoding: u32,
) -> Launch {
    let shape = Shape {
        row_len: plan.row_len,
        rows: plan.rows,
        log_row: plan.tile_sort_log_row(),
        encoding,
        schedule_tile: plan.sort_tile,
        element_bytes: widths.element(),
        cluster: false,
    };
    let pass = Pass::LocalSort {
        log_tile: plan.sort_tile,
    };
    let step = Transform {
        encode_on_load: true,
        decode_on_store: false,
    };
    launch(limits, &shape, pass, step)
}

/// The launches of a merge-path plan's two-way merge passes over its rows.
fn merge_launches(
    limits: &DeviceLimits,
    plan: &neutral::MergePathPlan,
    widths: Widths,
    encoding: u32,
) -> Vec<MergeLaunch> {
    let (n, rows) = (plan.row_len, plan.rows);
    let log_e = merge_log_e(widths.element());
    let grid_of = |items: u64| items.clamp(1, u64::from(limits.max_grid_x.max(1))) as u32;
    // Merge blocks loop over their tiles, loading the next while merging the current one:
    // as many blocks as are resident at once (MERGE_BLOCKS_PER_SM of MERGE_THREADS threads
    // per multiprocessor, as the kernels are compiled for, or more of fewer threads).
    let resident = |block: u32| {
        u64::from(limits.multiprocessors.max(1))
            * u64::from(MERGE_BLOCKS_PER_SM * MERGE_THREADS / block.max(1))
    };
    plan.passes
        .iter()
        .map(|pass| {
            let (tiles, block) = (pass.tiles * rows, 1u32 << (pass.tile_bits - log_e));
            // The splitter searches with a warp per tile when it has 32 threads per tile.
            let split_threads = if tiles <= POLICY.warp_split_max_tiles {
                32
            } else {
                1
            };
            MergeLaunch {
                search: rows == 1 && tiles <= resident(block) * POLICY.search_max_rounds,
                args: MergeArgs {
                    n,
                    rows,
                    log_run: pass.log_run,
                    tile_bits: pass.tile_bits,
                    encoding,
                    transform: if pass.last { DECODE_ON_STORE } else { 0 },
                },
                split_grid: grid_of((tiles * split_threads).div_ceil(u64::from(SPLIT_BLOCK))),
                split_block: SPLIT_BLOCK,
                grid: grid_of(tiles.min(resident(block))),
                block,
                shared_bytes: merge_shared_bytes(pass.tile_bits, widths.element()) as u32,
            }
        })
        .collect()
}
