//! Top-k on the CUDA device: [`CudaBackend::top_k_device_rows`] for keys in device memory,
//! and the top-k of host slices as an upload, that same device top-k and a download. The
//! routes are [`TopKRoute`]'s, with the candidate filter of long rows in front of the tiles
//! (`filter.rs`), short rows by a warp's radix select (`select.rs`) and the tiles'
//! launches in `tiles.rs`; the kernels are `cuda/top_k*.cuh`'s, in the module's PTX.

use std::sync::atomic::Ordering;

use cust::context::CurrentContext;
use cust::memory::{AsyncCopyDestination, DeviceCopy, DeviceSlice};
use cust::module::Module;
use cust::stream::Stream;
use cust::sys as cu;

use super::CudaBackend;
use super::device_resident::DeviceWords;
use super::driver::on;
use super::kernels::{Kernel, KernelParams, launch_kernel, load_kernel};
use super::plan::{Widths, radix_facts};
use super::stream_buffers::StreamBuffers;
use crate::backend::BackendKind;
use crate::backend::TopKKeys;
use crate::error::Result;
use crate::gpu::{HostTopK, host_top_k_sizes, value_words};
use crate::kernel_contract::{TOP_K_THREADS, padded_words};
use crate::keys::{KeyEncoding, KeyKind, Order, WordKey};
use crate::rayon_lock::lock_shared_with_rayon;
use crate::schedule::top_k::{
    FilterDevice, SELECT_BLOCK_BYTES, TOP_K_MAX_LOG_TILE, TopKCandidates, TopKDevice, TopKRoute,
    TopKWay,
};

/// Blocks of one launch at most; each block loops over the tiles (or elements) past the grid.
const MAX_GRID: u64 = 1 << 20;

pub(super) mod filter;
mod select;
mod tiles;
#[cfg(test)]
pub(super) use tiles::tile_block;

/// Whether the crate's unit tests set `BITONIC_TIMING_TOPK_TILES`, which sends short rows and
/// filtered candidates to the tiles so that a timing can compare; never in the product.
fn tiles_forced() -> bool {
    super::timing_override::<u32>("BITONIC_TIMING_TOPK_TILES").is_some()
}

impl CudaBackend {
    /// What the candidate filter's plan takes from the device: the largest tile, the
    /// shared memory [`TopKCandidates::Select`] may take (the device's opt-in limit per block,
    /// which the candidates' kernel is loaded to allow; none where the unit tests force the
    /// tiles) and the multiprocessors.
    pub(super) fn filter_device(&self) -> FilterDevice {
        FilterDevice {
            max_log_tile: TOP_K_MAX_LOG_TILE,
            select_bytes: if tiles_forced() {
                0
            } else {
                self.limits.shared_bytes_per_block
            },
            multiprocessors: self.limits.multiprocessors,
        }
    }
}

/// Threads of a block of the element-wise kernels (compose, positions, rank, take).
const ELEMENT_THREADS: u32 = 256;

/// The top-k kernels of the loaded module. The kernels of keys of at most 32 bits come in
/// two key widths, indexed by [`narrow`]: `u32`, and `u16` for 16-bit keys.
#[derive(Clone, Copy, Debug)]
pub(super) struct TopKKernels {
    /// `top_k_tiles_u32` and `top_k_tiles_u16`.
    tiles: [Kernel; 2],
    /// `top_k_sample_u32` and `top_k_sample_u16`.
    sample: [Kernel; 2],
    /// `top_k_filter_u32` and `top_k_filter_u16`.
    filter: [Kernel; 2],
    /// Blocks of each filter kernel that a multiprocessor keeps resident: its grid is as
    /// many as the device keeps resident, each block looping over chunks.
    filter_resident: [u32; 2],
    /// `top_k_exact_u32` and `top_k_exact_u16`.
    exact: [Kernel; 2],
    /// `top_k_select_u32` and `top_k_select_u16`.
    select: [Kernel; 2],
    /// `top_k_candidates_u32` and `top_k_candidates_u16`.
    candidates: [Kernel; 2],
    /// `top_k_compose_u32` and `top_k_compose_u16`.
    compose: [Kernel; 2],
    /// `top_k_rank_u64`.
    rank: Kernel,
    /// `top_k_positions_u32` and `top_k_positions_u64`: the copies with positions of the
    /// wide keys' route and of the whole row's.
    positions: [Kernel; 2],
    /// `top_k_take_u32`, `top_k_take_u64` and `top_k_take_u16`.
    take: [Kernel; 3],
}

/// The index of a key width in [`TopKKernels::tiles`] and [`TopKKernels::compose`]: 1 for
/// 16-bit keys, 0 for 32-bit ones.
fn narrow(key_bytes: usize) -> usize {
    usize::from(key_bytes == 2)
}

/// Looks up the top-k kernels; each may use the shared memory of its largest launch, and
/// the candidates' select all that a block of the device may use (`shared_bytes_per_block`,
/// its opt-in limit), which [`TopKCandidates::Select`] stays within.
pub(super) fn load_top_k_kernels(
    module: &Module,
    shared_bytes_per_block: u32,
) -> Result<TopKKernels> {
    let tiles =
        |name: &str| load_kernel(module, name, (padded_words(TOP_K_MAX_LOG_TILE) * 8) as u32);
    let sample_shared = crate::schedule::top_k::sample_bytes(TOP_K_MAX_LOG_TILE);
    let candidates_shared = shared_bytes_per_block;
    let filter = [
        load_kernel(module, "top_k_filter_u32", 0)?,
        load_kernel(module, "top_k_filter_u16", 0)?,
    ];
    Ok(TopKKernels {
        tiles: [tiles("top_k_tiles_u32")?, tiles("top_k_tiles_u16")?],
        sample: [
            load_kernel(module, "top_k_sample_u32", sample_shared)?,
            load_kernel(module, "top_k_sample_u16", sample_shared)?,
        ],
        filter,
        filter_resident: [
            filter[0].resident_blocks(TOP_K_THREADS, 0)?,
            filter[1].resident_blocks(TOP_K_THREADS, 0)?,
        ],
        exact: [
            load_kernel(module, "top_k_exact_u32", 0)?,
            load_kernel(module, "top_k_exact_u16", 0)?,
        ],
        select: [
            load_kernel(module, "top_k_select_u32", SELECT_BLOCK_BYTES)?,
            load_kernel(module, "top_k_select_u16", SELECT_BLOCK_BYTES)?,
        ],
        candidates: [
            load_kernel(module, "top_k_candidates_u32", candidates_shared)?,
            load_kernel(module, "top_k_candidates_u16", candidates_shared)?,
        ],
        compose: [
            load_kernel(module, "top_k_compose_u32", 0)?,
            load_kernel(module, "top_k_compose_u16", 0)?,
        ],
        rank: load_kernel(module, "top_k_rank_u64", 0)?,
        positions: [
            load_kernel(module, "top_k_positions_u32", 0)?,
            load_kernel(module, "top_k_positions_u64", 0)?,
        ],
        take: [
            load_kernel(module, "top_k_take_u32", 0)?,
            load_kernel(module, "top_k_take_u64", 0)?,
            load_kernel(module, "top_k_take_u16", 0)?,
        ],
    })
}

/// A checked top-k of device memory at CUDA addresses.
type TopKJob = crate::gpu::TopKJob<cu::CUdeviceptr>;

impl CudaBackend {
    /// The `k` best keys of each row of `row_len` keys in `keys` (the smallest for
    /// [`Order::Ascending`], the largest for [`Order::Descending`], floats in `total_cmp`
    /// order), best first, into `values`, and their positions within the row into `indices`;
    /// equal keys go to the lower position. `values` and `indices` hold `k` per row;
    /// `keys` is not changed.
    ///
    /// Any `k` from 1 to `row_len`: keys of at most 32 bits with a `k` that fits the on-chip
    /// tile take the bitonic top-k, every other case sorts `(key, position)` words of the
    /// rows on the device; long rows of keys of at most 32 bits are first filtered to a few
    /// candidates per `k`. Temporary buffers come from the device's stream-ordered memory
    /// pool. The work is enqueued on `stream`, as for [`CudaBackend::sort_device`]; a bad
    /// shape or a foreign slice or stream is an error before anything is enqueued.
    #[allow(clippy::too_many_arguments)]
    pub fn top_k_device_rows<K: WordKey + DeviceCopy>(
        &self,
        keys: &DeviceSlice<K>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut DeviceSlice<K>,
        indices: &mut DeviceSlice<u32>,
        stream: &Stream,
    ) -> Result<()> {
        let encoding = KeyEncoding::of::<K>(order);
        self.top_k_device_words(
            DeviceWords::of(keys),
            encoding,
            row_len,
            k,
            DeviceWords::of(values),
            DeviceWords::of(indices),
            stream.as_inner(),
        )
    }

    /// Every device-resident top-k: keys of `keys.word_bytes` (16-bit keys as their bits)
    /// ordered by `encoding`, values of the same width. Checks the shapes and that the
    /// memory and the stream are this backend's, then enqueues the route's launches on
    /// `stream`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn top_k_device_words(
        &self,
        keys: DeviceWords,
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
        values: DeviceWords,
        indices: DeviceWords,
        stream: cu::CUstream,
    ) -> Result<()> {
        let slices = [("keys", keys), ("values", values), ("indices", indices)];
        let run = |i: usize| (slices[i].1.ptr, slices[i].1.len);
        let key_bytes = keys.word_bytes;
        let job = TopKJob::checked(run(0), key_bytes, encoding, row_len, k, run(1), run(2))?;
        self.check_stream(stream)?;
        for (what, words) in slices {
            if words.len > 0 {
                self.check_owner(what, words.ptr)?;
            }
        }
        self.enqueue_top_k(&job, stream)
    }

    /// Enqueues a checked top-k on `stream` by its [`TopKWay`].
    pub(super) fn enqueue_top_k(&self, job: &TopKJob, stream: cu::CUstream) -> Result<()> {
        if job.rows == 0 {
            return Ok(());
        }
        let widths = Widths {
            key: job.key_bytes as u64,
            value: 4,
        };
        let radix_pairs =
            !self.oblivious.load(Ordering::Relaxed) && radix_facts(&self.limits, widths).is_some();
        let device = TopKDevice {
            max_log_tile: TOP_K_MAX_LOG_TILE,
            radix_pairs,
            select_bytes: if tiles_forced() {
                0
            } else {
                SELECT_BLOCK_BYTES
            },
            filter: Some(self.filter_device()),
        };
        let way = TopKWay::new(job.key_bytes, (job.rows, job.row_len), job.k, &device);
        if let TopKWay::Select(select) = &way {
            return self.enqueue_select(job, select, stream);
        }
        let mut scratch = StreamBuffers::new(stream);
        let enqueued = self.enqueue_way(job, &way, &mut scratch, stream);
        // The buffers are freed in stream order after the launches that use them, whatever
        // failed; the first error is the one to report.
        let freed = scratch.free();
        enqueued?;
        freed
    }

    fn enqueue_way(
        &self,
        job: &TopKJob,
        way: &TopKWay,
        scratch: &mut StreamBuffers,
        stream: cu::CUstream,
    ) -> Result<()> {
        let n = job.n();
        let sorted_words = |scratch: &mut StreamBuffers| scratch.alloc(self, n * 8);
        let unsigned = KeyEncoding {
            kind: KeyKind::Unsigned,
            descending: false,
        };
        let (words, stride) = match way {
            TopKWay::Select(select) => return self.enqueue_select(job, select, stream),
            TopKWay::Filtered(filter) => match &filter.candidates {
                TopKCandidates::Select => {
                    return self.enqueue_filtered_select(job, filter, scratch, stream);
                }
                TopKCandidates::Tiles(candidates) => (
                    self.enqueue_filtered_tiles(job, filter, candidates, scratch, stream)?,
                    candidates.run(),
                ),
                TopKCandidates::Sort => (
                    self.enqueue_filtered_sort(job, filter, scratch, stream)?,
                    filter.capacity,
                ),
            },
            TopKWay::Route(TopKRoute::Tiles(plan)) => (
                self.enqueue_tiles(job, plan, None, scratch, stream)?,
                plan.run(),
            ),
            TopKWay::Route(TopKRoute::SortWords) => {
                let words = sorted_words(scratch)?;
                let mut params = (job.keys, words, n, job.row_len, job.encoding.code());
                let compose = self.top_k_kernels.compose[narrow(job.key_bytes)];
                // SAFETY: `top_k_compose_<key>(const K *keys, u64 *words, u64 n, u64
                // row_len, u32 encoding)`, K of `key_bytes`, reads the `n` keys and writes `n`
                // words, which the buffer holds.
                unsafe { self.launch_elements(compose, n, &mut params, stream) }?;
                self.sort_words(words, 8, None, unsigned, job.row_len, n, stream)?;
                (words, job.row_len)
            }
            TopKWay::Route(TopKRoute::SortPairs) => return self.enqueue_sorted_pairs(job, stream),
            TopKWay::Route(TopKRoute::SortRanked) => {
                let copy = scratch.alloc(self, n * 8)?;
                let positions = scratch.alloc(self, n * 4)?;
                let words = sorted_words(scratch)?;
                let mut params = (job.keys, copy, positions, n, job.row_len);
                // SAFETY: `top_k_positions_u64(const u64 *keys, u64 *copy, u32 *positions,
                // u64 n, u64 row_len)` reads `n` keys and writes `n` of each output, which the
                // buffers hold.
                unsafe {
                    self.launch_elements(self.top_k_kernels.positions[1], n, &mut params, stream)
                }?;
                self.sort_words(
                    copy,
                    8,
                    Some(positions),
                    job.encoding,
                    job.row_len,
                    n,
                    stream,
                )?;
                let mut params = (copy, positions, words, n, job.row_len, job.encoding.code());
                // SAFETY: `top_k_rank_u64(const u64 *sorted, const u32 *positions, u64 *words,
                // u64 n, u64 row_len, u32 encoding)` reads `n` of each input and writes `n`
                // words, within each row.
                unsafe { self.launch_elements(self.top_k_kernels.rank, n, &mut params, stream) }?;
                self.sort_words(words, 8, None, unsigned, job.row_len, n, stream)?;
                (words, job.row_len)
            }
        };
        let take = self.top_k_kernels.take[match job.key_bytes {
            8 => 1,
            2 => 2,
            _ => 0,
        }];
        let mut params = (
            words,
            job.keys,
            job.values,
            job.indices,
            job.rows,
            stride,
            job.row_len,
            job.k as u32,
        );
        // SAFETY: `top_k_take_<key>(const u64 *words, const K *keys, K *values, u32 *indices,
        // u64 rows, u64 stride, u64 row_len, u32 k)`: each row's first `k` words lie within
        // its `stride` words of `words`, their positions within its `row_len` keys, and the
        // outputs hold `rows * k` elements (checked).
        unsafe { self.launch_elements(take, job.rows * job.k, &mut params, stream) }
    }

    /// [`TopKRoute::SortPairs`]: the keys copied to the values and their positions to the
    /// indices, then the pairs sorted there (stably, by radix) in the job's order.
    fn enqueue_sorted_pairs(&self, job: &TopKJob, stream: cu::CUstream) -> Result<()> {
        let n = job.n();
        let positions = self.top_k_kernels.positions[usize::from(job.key_bytes == 8)];
        let mut params = (job.keys, job.values, job.indices, n, job.row_len);
        // SAFETY: `top_k_positions_<key>(const K *keys, K *copy, u32 *positions, u64 n, u64
        // row_len)`, K of `key_bytes`, reads the `n` keys and writes `n` of each output: the
        // route is a full sort of one row, so the outputs hold `k = n`.
        unsafe { self.launch_elements(positions, n, &mut params, stream) }?;
        self.sort_words(
            job.values,
            job.key_bytes,
            Some(job.indices),
            job.encoding,
            job.row_len,
            n,
            stream,
        )
    }

    /// Sorts `n` device words at `keys` (with `values`) in rows of `row_len` on `stream`.
    #[allow(clippy::too_many_arguments)]
    fn sort_words(
        &self,
        keys: cu::CUdeviceptr,
        word_bytes: usize,
        values: Option<cu::CUdeviceptr>,
        encoding: KeyEncoding,
        row_len: u64,
        n: u64,
        stream: cu::CUstream,
    ) -> Result<()> {
        let len = n as usize;
        self.enqueue_sort_words(
            DeviceWords {
                ptr: keys,
                len,
                word_bytes,
            },
            values.map(|ptr| DeviceWords {
                ptr,
                len,
                word_bytes: 4,
            }),
            encoding,
            row_len as usize,
            stream,
        )
    }

    /// The grid of a launch that wants `blocks` blocks: at most [`MAX_GRID`] and the
    /// device's limit, the kernels looping over the rest.
    fn grid(&self, blocks: u64) -> u32 {
        blocks.min(MAX_GRID).min(u64::from(self.limits.max_grid_x)) as u32
    }

    /// Launches an element-wise kernel over `n` elements on `stream`; nothing for none.
    ///
    /// # Safety
    /// `params` must be the kernel's parameters, in order and of its types, and keep its
    /// accesses of `n` elements inside the buffers they name.
    unsafe fn launch_elements<P: KernelParams>(
        &self,
        kernel: Kernel,
        n: u64,
        params: &mut P,
        stream: cu::CUstream,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let grid = self.grid(n.div_ceil(u64::from(ELEMENT_THREADS)));
        let mut pointers = params.pointers();
        // SAFETY: the caller vouches for the parameters and their extents.
        unsafe { launch_kernel(kernel, (grid, ELEMENT_THREADS, 0), stream, &mut pointers) }
    }
}

impl HostTopK for CudaBackend {
    /// [`crate::backend::Backend::top_k_rows_words`] on this device: uploads the keys on the
    /// backend's stream, runs [`CudaBackend::top_k_device_rows`]'s launches there and reads
    /// the values and positions back.
    fn top_k_host(
        &self,
        keys: TopKKeys<'_>,
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
    ) -> Result<Option<(Vec<u32>, Vec<u32>)>> {
        let (out, requested) = host_top_k_sizes(keys, row_len, k);
        let (word_bytes, key_bytes) = (keys.key_bytes(), keys.bytes().len());
        if requested > self.info.memory_bytes {
            return Err(self.out_of_memory(requested));
        }
        // The stream is the host-slice sorts': one at a time.
        let _host = lock_shared_with_rayon(&self.busy);
        crate::fault::point(BackendKind::Cuda, "cuCtxSetCurrent")?;
        CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))?;
        let device_keys = self.alloc(key_bytes, requested)?;
        let device_values = self.alloc(out * word_bytes, requested)?;
        let device_indices = self.alloc(out * 4, requested)?;
        let address = |b: &cust::memory::DeviceBuffer<u8>| b.as_device_ptr().as_raw();
        let job = TopKJob::checked(
            (address(&device_keys), keys.len()),
            word_bytes,
            encoding,
            row_len,
            k,
            (address(&device_values), out),
            (address(&device_indices), out),
        )?;
        let mut values = vec![0u8; out * word_bytes];
        let mut indices = vec![0u32; out];
        let done = (|| -> Result<()> {
            // SAFETY: the buffer holds exactly the keys' bytes; the host slice outlives the
            // stream synchronization below.
            unsafe {
                device_keys
                    .index(..key_bytes)
                    .async_copy_from(keys.bytes(), &self.stream)
            }
            .map_err(on("cuMemcpyHtoDAsync"))?;
            self.enqueue_top_k(&job, self.stream.as_inner())?;
            let indices_bytes: &mut [u8] = bytemuck::cast_slice_mut(indices.as_mut_slice());
            for (from, to) in [
                (&device_values, &mut values[..]),
                (&device_indices, indices_bytes),
            ] {
                // SAFETY: `to` is `rows * k` words, the front of the buffer; it outlives the
                // synchronization below.
                unsafe { from.index(..to.len()).async_copy_to(to, &self.stream) }
                    .map_err(on("cuMemcpyDtoHAsync"))?;
            }
            Ok(())
        })();
        // Whatever was enqueued finishes before the buffers are freed; the first error is
        // the one to report.
        let synced = self.stream.synchronize().map_err(on("cuStreamSynchronize"));
        done?;
        synced?;
        Ok(Some((value_words(&values, word_bytes), indices)))
    }
}
