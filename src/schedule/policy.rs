//! The tuned numbers that every backend's plan shares: how the network's tile is chosen,
//! how large merge path's tile sort is, where key-value pairs take merge path, and when a
//! sort of host slices sorts while it uploads. The backends' own tuned numbers are in
//! their `plan` modules (`CudaPolicy`, `OpenClPolicy`).

/// Tuned numbers of the schedule, shared by every backend (see [`POLICY`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SchedulePolicy {
    /// The network's tiles are at least `2^min_log_tile` elements unless the whole row is
    /// smaller. Tiles shrink so that every compute unit gets one, but each halving adds a
    /// stage above the tile, and with it passes over memory, while a smaller tile gives its
    /// block less work to hide its loads behind.
    pub min_log_tile: u32,
    /// The largest single row that the network sorts as one tile (one block, one launch).
    /// A longer row sorts faster as several smaller tiles and a few merge launches, though
    /// it fits one tile: one block sorting the whole row leaves the rest of the device idle,
    /// and a row of twice this size sorts a fifth slower as one tile than as several.
    pub max_log_single_tile: u32,
    /// The largest tile sort of a merge-path sort, as log2 of its elements. Each doubling of
    /// the tile adds `log_tile + 1` network levels on chip and saves one merge pass over
    /// memory. At this size the tile sort costs a quarter more per key than a tile of a
    /// quarter of it, more than one saved pass but less than two, so a tile this large is
    /// taken only where the next smaller one would leave an odd number of passes.
    pub max_log_sort_tile: u32,
    /// The smallest tile sort of a merge-path sort, as log2 of its elements: a device
    /// whose tiles are no larger keeps the network, since merge path from so small a tile
    /// makes one pass over memory per doubling of the runs, where the network's global
    /// passes each apply several levels.
    pub min_log_sort_tile: u32,
    /// Key-value sorts leave the network where keys and values together fill more than
    /// `2^(pair_min_log_merge_bytes - 1)` bytes (`ceil(log2(bytes)) >= this`: from 2^20 + 1
    /// `u32` pairs), on every backend alike, the CPU's included: for the radix sort
    /// (`schedule::radix::pairs_take_radix`), or merge path past its length. Those put
    /// values of equal keys in another order than the network does, and every backend must
    /// put them in the same one, so this threshold depends on nothing about the device. It lies
    /// where merge path overtakes the network for keys on the backend whose launches cost
    /// the most (NVIDIA's OpenCL) when every merge pass launches its splitter, so that no
    /// backend loses by it.
    pub pair_min_log_merge_bytes: u32,
    /// log2 of the bytes of keys and values in the tile sort of a key-value merge-path
    /// sort: the least local memory of an OpenCL device of the full profile, so that every
    /// GPU backend can sort the same tiles and so put equal keys' values in the same order.
    pub pair_log_tile_bytes: u32,
    /// Host-slice sorts of at least this many bytes (keys and values) sort while they
    /// upload; shorter ones upload first and sort after. Sorting while uploading hands
    /// every chunk between two streams and merges the chunks' runs after the upload: at
    /// half this size that costs about a tenth more than the upload it hides, from twice it
    /// on it saves about a tenth. This size, where long columns start to go through the pipeline of
    /// pieces, lies between.
    pub min_sort_while_uploading_bytes: u64,
    /// log2 of the bytes of the largest chunk sorted while the rest uploads. A larger chunk
    /// leaves fewer merge passes for after the upload, but its last chunk's sort, which
    /// nothing hides, is longer.
    pub log_max_upload_chunk_bytes: u32,
}

/// The schedule's tuned numbers.
pub(crate) const POLICY: SchedulePolicy = SchedulePolicy {
    min_log_tile: 11,
    max_log_single_tile: 13,
    max_log_sort_tile: 15,
    min_log_sort_tile: 10,
    pair_min_log_merge_bytes: 24,
    pair_log_tile_bytes: 15,
    min_sort_while_uploading_bytes: 32 << 20,
    log_max_upload_chunk_bytes: 26,
};
