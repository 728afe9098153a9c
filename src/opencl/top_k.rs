//! Top-k on the OpenCL device: [`OpenClBackend::top_k_device_rows`] for keys in device
//! buffers, and the top-k of host slices as an upload, that same device top-k and a
//! download. The way is [`TopKWay`]'s, the same choice as CUDA's: short rows by a work-group's
//! radix select (`select.rs`), long rows of keys of at most 32 bits through the candidate
//! filter (`filter.rs`), the rest by its [`TopKRoute`]. The kernels are `kernels/top_k*.clh`'s,
//! built once per key width as a program of their own.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use opencl3::command_queue::CommandQueue;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem};
use opencl3::types::cl_mem;

use super::device_resident::DeviceWords;
use super::driver::driver;
use super::launch::Args;
use super::plan::{LOCAL_MEM_MARGIN, radix_facts};
use super::{CPU_DEVICE_RUNS, DeviceType, OpenClBackend, hold, lifecycle_lock};
use crate::error::{Error, Result};
use crate::kernel_contract::padded_words;
use crate::keys::{KeyEncoding, KeyKind, Order, WordKey};
use crate::rayon_lock::lock_shared_with_rayon;
use crate::schedule::top_k::{
    FilterDevice, TOP_K_MAX_LOG_TILE, TopKDevice, TopKRoute, TopKWay, sample_bytes,
};

mod filter;
mod host;
mod select;
mod tiles;

use tiles::tiles_bytes;

/// The program's main file: the contract, the key words and their encoding, the kernels.
const MAIN: &str = "#include \"contract.h\"\n#include \"words.clh\"\n#include \"top_k.clh\"\n\
                    #include \"top_k_select.clh\"\n#include \"top_k_filter.clh\"\n";

/// Work-items of a work-group at most: a top-k tile's each handle
/// `2^log_tile / 2 / items` comparators per level, and each item of a radix select keeps one
/// count in its `TOP_K_RADIX_WORDS` (`kernels/top_k_select.clh`).
const MAX_GROUP: usize = crate::kernel_contract::TOP_K_THREADS as usize;

/// Work-groups of an element-wise launch at most; each item loops over the elements past
/// the launch.
const MAX_ELEMENT_GROUPS: u64 = 1 << 16;

/// The key widths with a top-k program, the register word of each and how it is stored
/// (`kernels/words.clh`).
const KEY_TYPES: [(usize, &str, &str); 3] = [
    (2, "uint", "-D KEY_STORE_T=ushort -D KEY_STORE_BITS=16"),
    (4, "uint", ""),
    (8, "ulong", ""),
];

/// The kernels of the programs of keys of at most 32 bits.
struct NarrowKernels {
    /// `top_k_tiles`.
    tiles: Kernel,
    /// `top_k_compose`.
    compose: Kernel,
    /// `top_k_sample`, the candidate filter's thresholds.
    sample: Kernel,
    /// `top_k_sample_picks`, the thresholds of rows sampled by several work-groups.
    sample_picks: Kernel,
    /// `top_k_filter`, the pass that keeps the candidates.
    filter: Kernel,
    /// `top_k_exact`, the rows the filter could not serve.
    exact: Kernel,
    /// `top_k_candidates`, the candidates' select in local memory.
    candidates: Kernel,
    /// `top_k_select`, the short rows' select.
    select: Kernel,
}

impl NarrowKernels {
    /// Every kernel, for the limits of their work-groups.
    fn all(&self) -> [&Kernel; 8] {
        [
            &self.tiles,
            &self.compose,
            &self.sample,
            &self.sample_picks,
            &self.filter,
            &self.exact,
            &self.candidates,
            &self.select,
        ]
    }
}

/// The kernels of one key width's program. Their arguments are per-object state: a launch
/// holds the lock from its first argument to its enqueue.
struct TopKKernels {
    /// The kernels of keys of at most 32 bits.
    narrow: Option<NarrowKernels>,
    /// `top_k_rank` (wider keys).
    rank: Option<Kernel>,
    /// `top_k_positions`, which every program has: the copy with positions of the wide
    /// keys' route and of [`TopKRoute::SortPairs`].
    positions: Kernel,
    /// `top_k_take`.
    take: Kernel,
}

impl TopKKernels {
    /// The kernels that only the programs of narrow keys have.
    fn narrow(&self) -> Result<&NarrowKernels> {
        self.narrow
            .as_ref()
            .ok_or_else(|| wrong_program("keys of at most 32 bits"))
    }

    /// `top_k_rank`, which only the program of 64-bit keys has.
    fn rank(&self) -> Result<&Kernel> {
        self.rank
            .as_ref()
            .ok_or_else(|| wrong_program("64-bit keys"))
    }
}

/// A route asked a program for kernels of another key width: a bug, reported as an error.
fn wrong_program(kernels_of: &str) -> Error {
    Error::Unsupported(format!(
        "the top-k route needs the kernels of {kernels_of}, which this key width's program lacks"
    ))
}

/// The built top-k program of one key width and the limits of its launches.
pub(super) struct TopKProgram {
    kernels: Mutex<TopKKernels>,
    /// Work-items of a work-group at most.
    group: usize,
    /// log2 of the largest tile whose padded words fit local memory.
    max_log_tile: u32,
    /// Local bytes a launch may ask for: the device's, less the margin some drivers need
    /// (`LOCAL_MEM_MARGIN`).
    local_bytes: u64,
}

/// A checked top-k of buffers.
pub(super) type TopKJob = crate::gpu::TopKJob<cl_mem>;

impl OpenClBackend {
    /// The top-k program of keys of `key_bytes`, built on first use.
    fn top_k_program(&self, key_bytes: usize) -> Result<Arc<TopKProgram>> {
        let Some(slot) = KEY_TYPES
            .iter()
            .position(|&(bytes, _, _)| bytes == key_bytes)
        else {
            return Err(Error::Unsupported(format!(
                "top-k of {key_bytes}-byte keys on the device"
            )));
        };
        let mut cached = lock_shared_with_rayon(&self.top_k);
        if let Some(p) = &cached[slot] {
            return Ok(Arc::clone(p));
        }
        let built = {
            let _lifecycle = lifecycle_lock();
            let mut source = String::new();
            super::kernels::inline_includes(MAIN, &mut source, 0);
            let (_, key_type, stored) = KEY_TYPES[slot];
            let options = format!("-D KEY_T={key_type} -D KEY_BYTES={key_bytes} {stored}");
            let program = self.compile(&source, &options)?;
            let kernel =
                |name: &str| Kernel::create(&program, name).map_err(driver("clCreateKernel"));
            let narrow = key_bytes <= 4;
            let narrow_kernels = if narrow {
                Some(NarrowKernels {
                    tiles: kernel("top_k_tiles")?,
                    compose: kernel("top_k_compose")?,
                    sample: kernel("top_k_sample")?,
                    sample_picks: kernel("top_k_sample_picks")?,
                    filter: kernel("top_k_filter")?,
                    exact: kernel("top_k_exact")?,
                    candidates: kernel("top_k_candidates")?,
                    select: kernel("top_k_select")?,
                })
            } else {
                None
            };
            let rank = if narrow {
                None
            } else {
                Some(kernel("top_k_rank")?)
            };
            let take = kernel("top_k_take")?;
            let positions = kernel("top_k_positions")?;
            let mut group = take
                .get_work_group_size(self.device.id())
                .map_err(driver("clGetKernelWorkGroupInfo"))?;
            let narrow_all = narrow_kernels.as_ref().map(NarrowKernels::all);
            for k in narrow_all
                .iter()
                .flatten()
                .copied()
                .chain(&rank)
                .chain([&positions])
            {
                group = group.min(
                    k.get_work_group_size(self.device.id())
                        .map_err(driver("clGetKernelWorkGroupInfo"))?,
                );
            }
            let group = group.min(self.limits.max_group).clamp(1, MAX_GROUP);
            let max_log_tile = (1..=TOP_K_MAX_LOG_TILE)
                .rev()
                .find(|&t| padded_words(t) * 8 <= self.limits.local_mem)
                .unwrap_or(0);
            Arc::new(TopKProgram {
                kernels: Mutex::new(TopKKernels {
                    narrow: narrow_kernels,
                    rank,
                    positions,
                    take,
                }),
                group,
                max_log_tile,
                local_bytes: self.limits.local_mem.saturating_sub(LOCAL_MEM_MARGIN),
            })
        };
        cached[slot] = Some(Arc::clone(&built));
        Ok(built)
    }

    /// The `k` best keys of each row of `row_len` keys in `keys` (the smallest for
    /// [`Order::Ascending`], the largest for [`Order::Descending`], floats in `total_cmp`
    /// order), best first, into `values`, and their positions within the row into
    /// `indices`; equal keys go to the lower position. `values` and `indices` hold `k` per
    /// row; `keys` is not changed.
    ///
    /// Any `k` from 1 to `row_len`: short rows of keys of at most 32 bits (up to 4096 keys,
    /// `k` up to 256) are selected by one work-group each in local memory, long rows of such
    /// keys are first filtered to a few candidates per `k`, other keys of at most 32 bits
    /// with a `k` that fits the on-chip tile take the bitonic top-k, and every other case
    /// sorts `(key, position)` words of the rows on the device, in temporary buffers of the
    /// backend's context (the same ways as CUDA's, `TopKWay`). The work is
    /// enqueued on `queue`, as for [`OpenClBackend::sort_device`] (which also says what CPU
    /// devices do); a bad shape, a foreign buffer or queue is an error before anything is
    /// enqueued.
    #[allow(clippy::too_many_arguments)]
    pub fn top_k_device_rows<K: WordKey>(
        &self,
        keys: &Buffer<K>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut Buffer<K>,
        indices: &mut Buffer<u32>,
        queue: &CommandQueue,
    ) -> Result<()> {
        let buffers = [
            ("keys", DeviceWords::of("keys", keys)?),
            ("values", DeviceWords::of("values", values)?),
            ("indices", DeviceWords::of("indices", indices)?),
        ];
        let run = |i: usize| (buffers[i].1.mem, buffers[i].1.len);
        let encoding = KeyEncoding::of::<K>(order);
        let job = TopKJob::checked(run(0), K::WORD_BYTES, encoding, row_len, k, run(1), run(2))?;
        self.check_queue(queue)?;
        for (what, words) in buffers {
            self.check_buffer(what, words)?;
        }
        self.enqueue_top_k(&job, queue)
    }

    /// Whether this backend sorts one row (`rows`) of (key, `u32` position) pairs of
    /// `key_bytes` by its radix sort ([`TopKRoute::new`]): not oblivious, and the pairs'
    /// program has the radix kernels. Asked only of a whole row (`k` is `row_len`), whose
    /// pairs' program the sort builds anyway.
    fn radix_pairs(&self, key_bytes: usize, (rows, row_len): (u64, u64), k: u64) -> Result<bool> {
        if self.oblivious.load(Ordering::Relaxed)
            || rows != 1
            || k != row_len
            || !matches!(key_bytes, 4 | 8)
        {
            return Ok(false);
        }
        let pairs = self.variant_of_widths(key_bytes, Some(4))?;
        Ok(radix_facts(&pairs.limits, (key_bytes as u64, 4)).is_some())
    }

    /// What the top-k of `program` takes from the device ([`TopKDevice`]): its tiles, the
    /// local memory its selects may take (the device's less the margin, or less where the
    /// tests say: `top_k_select_bytes`), and the filter's facts where the largest sample
    /// block any filter takes (a tile of 2^`TOP_K_MAX_LOG_TILE` keys) fits the local memory:
    /// a device of less has no filter, rather than a sample that cannot launch.
    fn top_k_device(&self, program: &TopKProgram, radix_pairs: bool) -> TopKDevice {
        let local = u32::try_from(program.local_bytes).unwrap_or(u32::MAX);
        let select_bytes = self.top_k_select_bytes.map_or(local, |cap| cap.min(local));
        let sample_fits = u64::from(sample_bytes(TOP_K_MAX_LOG_TILE)) <= program.local_bytes;
        TopKDevice {
            max_log_tile: program.max_log_tile,
            radix_pairs,
            select_bytes,
            filter: sample_fits.then_some(FilterDevice {
                max_log_tile: program.max_log_tile,
                select_bytes,
                multiprocessors: self.limits.compute_units,
            }),
        }
    }

    /// The way ([`TopKWay`]) of a top-k of `k` of `rows` rows of `row_len` keys of
    /// `key_bytes` on this device.
    pub(super) fn top_k_way(
        &self,
        key_bytes: usize,
        (rows, row_len): (u64, u64),
        k: u64,
    ) -> Result<TopKWay> {
        let program = self.top_k_program(key_bytes)?;
        let radix_pairs = self.radix_pairs(key_bytes, (rows, row_len), k)?;
        let device = self.top_k_device(&program, radix_pairs);
        Ok(TopKWay::new(key_bytes, (rows, row_len), k, &device))
    }

    /// Enqueues a checked top-k on `queue` by its [`TopKWay`].
    pub(super) fn enqueue_top_k(&self, job: &TopKJob, queue: &CommandQueue) -> Result<()> {
        if job.rows == 0 {
            return Ok(());
        }
        let program = self.top_k_program(job.key_bytes)?;
        match self.top_k_way(job.key_bytes, (job.rows, job.row_len), job.k)? {
            TopKWay::Select(select) => self.enqueue_select(&program, job, &select, queue),
            TopKWay::Filtered(filter) => self.enqueue_filtered(&program, job, &filter, queue),
            TopKWay::Route(route) => self.enqueue_route(&program, job, &route, queue),
        }
    }

    /// Enqueues a checked top-k on `queue` by `route`.
    fn enqueue_route(
        &self,
        program: &TopKProgram,
        job: &TopKJob,
        route: &TopKRoute,
        queue: &CommandQueue,
    ) -> Result<()> {
        let n = job.rows * job.row_len;
        let requested = match route {
            TopKRoute::Tiles(plan) => tiles_bytes(plan, job.rows),
            TopKRoute::SortWords => n * 8,
            TopKRoute::SortRanked => n * 20,
            TopKRoute::SortPairs => 0,
        };
        self.check_memory(requested)?;
        let alloc = |bytes: u64| self.alloc(bytes.max(1) as usize, requested);
        let unsigned = KeyEncoding {
            kind: KeyKind::Unsigned,
            descending: false,
        };
        // The temporary buffers are released when this returns: OpenCL keeps a memory
        // object alive until the commands enqueued on it have finished.
        let mut temporaries: Vec<Buffer<u8>> = Vec::new();
        let (words, stride) = match route {
            TopKRoute::SortPairs => {
                self.launch_elements(program, queue, n, requested, |kernels, args| {
                    args.kernel = &kernels.positions;
                    args.buffer(job.keys)?;
                    args.buffer(job.values)?;
                    args.buffer(job.indices)?;
                    args.u64(n)?;
                    args.u64(job.row_len)
                })?;
                let (keys, key_bytes) = (job.values, job.key_bytes);
                return self.sort_words(
                    keys,
                    key_bytes,
                    Some(job.indices),
                    job.encoding,
                    job.row_len,
                    n,
                    queue,
                );
            }
            TopKRoute::Tiles(plan) => {
                let scratch = self.tiles_scratch(plan, job.rows, requested, &mut temporaries)?;
                let last =
                    self.enqueue_tiles(program, plan, job, None, scratch, queue, requested)?;
                (scratch[last], plan.run())
            }
            TopKRoute::SortWords => {
                temporaries.push(alloc(n * 8)?);
                let words = temporaries[0].get();
                self.launch_elements(program, queue, n, requested, |kernels, args| {
                    args.kernel = &kernels.narrow()?.compose;
                    args.buffer(job.keys)?;
                    args.buffer(words)?;
                    args.u64(n)?;
                    args.u64(job.row_len)?;
                    args.u32(job.encoding.code())
                })?;
                self.sort_words(words, 8, None, unsigned, job.row_len, n, queue)?;
                (words, job.row_len)
            }
            TopKRoute::SortRanked => {
                for bytes in [n * 8, n * 4, n * 8] {
                    temporaries.push(alloc(bytes)?);
                }
                let [copy, positions, words] = [0, 1, 2].map(|i| temporaries[i].get());
                self.launch_elements(program, queue, n, requested, |kernels, args| {
                    args.kernel = &kernels.positions;
                    args.buffer(job.keys)?;
                    args.buffer(copy)?;
                    args.buffer(positions)?;
                    args.u64(n)?;
                    args.u64(job.row_len)
                })?;
                self.sort_words(
                    copy,
                    8,
                    Some(positions),
                    job.encoding,
                    job.row_len,
                    n,
                    queue,
                )?;
                self.launch_elements(program, queue, n, requested, |kernels, args| {
                    args.kernel = kernels.rank()?;
                    args.buffer(copy)?;
                    args.buffer(positions)?;
                    args.buffer(words)?;
                    args.u64(n)?;
                    args.u64(job.row_len)?;
                    args.u32(job.encoding.code())
                })?;
                self.sort_words(words, 8, None, unsigned, job.row_len, n, queue)?;
                (words, job.row_len)
            }
        };
        self.enqueue_take(program, job, (words, stride), queue, requested)
    }

    /// The answer from rows of sorted words, `stride` apart in `words`: each row's first
    /// `k` positions into the indices and the keys there into the values (`top_k_take`).
    fn enqueue_take(
        &self,
        program: &TopKProgram,
        job: &TopKJob,
        (words, stride): (cl_mem, u64),
        queue: &CommandQueue,
        requested: u64,
    ) -> Result<()> {
        // `top_k_take(words, keys, values, indices, rows, stride, row_len, k)`: each row's
        // first `k` words lie within its `stride` words, their positions within its
        // `row_len` keys, and the outputs hold `rows * k` (checked).
        self.launch_elements(
            program,
            queue,
            job.rows * job.k,
            requested,
            |kernels, args| {
                args.kernel = &kernels.take;
                args.buffer(words)?;
                args.buffer(job.keys)?;
                args.buffer(job.values)?;
                args.buffer(job.indices)?;
                args.u64(job.rows)?;
                args.u64(stride)?;
                args.u64(job.row_len)?;
                args.u32(job.k as u32)
            },
        )
    }

    /// Sorts `n` words of a temporary buffer (with `values` of 4 bytes) in rows of
    /// `row_len` on `queue`.
    #[allow(clippy::too_many_arguments)]
    fn sort_words(
        &self,
        keys: cl_mem,
        word_bytes: usize,
        values: Option<cl_mem>,
        encoding: KeyEncoding,
        row_len: u64,
        n: u64,
        queue: &CommandQueue,
    ) -> Result<()> {
        let len = n as usize;
        self.sort_device_words(
            DeviceWords {
                mem: keys,
                len,
                word_bytes,
            },
            values.map(|mem| DeviceWords {
                mem,
                len,
                word_bytes: 4,
            }),
            encoding,
            row_len as usize,
            queue,
        )
    }

    /// Sets one element-wise kernel's arguments with `set` (which picks the kernel) and
    /// enqueues it over `n` elements; nothing for none.
    fn launch_elements(
        &self,
        program: &TopKProgram,
        queue: &CommandQueue,
        n: u64,
        requested: u64,
        set: impl for<'k> FnOnce(&'k TopKKernels, &mut Args<'k>) -> Result<()>,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let local = program.group;
        let groups = n.div_ceil(local as u64);
        self.launch_groups(program, queue, (groups, local), requested, set)
    }

    /// Sets one kernel's arguments with `set` (which picks the kernel) and enqueues it over
    /// `groups` work-groups (at most [`MAX_ELEMENT_GROUPS`]; every kernel loops over the
    /// rest) of `local` items. On a CPU device it runs alone and is waited for, as the sorts
    /// do (see `CPU_DEVICE_RUNS`).
    fn launch_groups(
        &self,
        program: &TopKProgram,
        queue: &CommandQueue,
        (groups, local): (u64, usize),
        requested: u64,
        set: impl for<'k> FnOnce(&'k TopKKernels, &mut Args<'k>) -> Result<()>,
    ) -> Result<()> {
        let on_cpu = self.info.device_type == DeviceType::Cpu;
        let _one_at_a_time = on_cpu.then(|| hold(&CPU_DEVICE_RUNS));
        let kernels = program
            .kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut args = Args {
            kernel: &kernels.take,
            index: 0,
        };
        set(&kernels, &mut args)?;
        let groups = groups.clamp(1, MAX_ELEMENT_GROUPS) as usize;
        // SAFETY: `set` set every argument of the kernel it chose, with the types it declares
        // and buffers that hold the elements it visits (each caller's comment on its kernel);
        // every kernel of the program loops over the work past the launch's groups.
        unsafe { self.enqueue_kernel(queue, args.kernel, groups, local, requested) }?;
        if on_cpu {
            queue.finish().map_err(driver("clFinish"))?;
        }
        Ok(())
    }
}
