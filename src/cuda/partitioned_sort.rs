//! A device-resident sort through the range partition (`crate::partition`'s ranges, on the
//! device): the keys are split into ranges by splitters from a sorted sample, each range that
//! needs a sort becomes one row of a rows sort, and every range is then placed at its start
//! in the sorted whole. The rows are shorter than the slice, so the rows sort runs fewer merge
//! passes than a sort of the whole; the partition costs a count, a scatter and a placing pass.
//!
//! 1. `range_sample`: a stratified sample of `2^log_sample` ordered words, sorted on the
//!    device; `range_pick` takes `m` splitters at equal steps of it.
//! 2. The counts of the `2m + 1` ranges (range `2i` strictly between splitters `i - 1` and
//!    `i`, range `2i + 1` equal to splitter `i`): a range scatter into regions of no capacity,
//!    which writes nothing and counts everything. The host reads them (the one wait).
//! 3. The ranges that need a sort get one row each of `C` keys, `C` the largest such count,
//!    padded with the key whose ordered word is the largest; the single-key ranges get their
//!    exact room after the rows. The range scatter fills them.
//! 4. The rows are sorted as rows; `range_place` copies each range's keys to its start in
//!    the caller's buffer.
//!
//! Keys only: the scatter does not keep the order of equal keys, and padding keys are
//! indistinguishable from the largest real keys only because nothing travels with them.

use cust::stream::Stream;
use cust::sys as cu;

use super::CudaBackend;
use super::device_ranges::wide;
use super::device_slices::DeviceWords;
use super::driver::{check, on};
use super::kernels::{KernelParams, launch_kernel};
use super::stream_buffers::StreamBuffers;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernel_contract::{RANGE_MAX_SPLITTERS, RANGE_SCATTER_KEYS, RANGE_SCATTER_THREADS};
use crate::keys::{KeyEncoding, KeyKind};

/// Sampled keys per range: the largest of `m + 1` ranges' shares of the keys is then within
/// a few percent of the mean (a relative deviation of `1 / sqrt(2048)`, about 2.2%, per
/// range), which bounds the rows' padding.
const SAMPLE_PER_RANGE: u64 = 2048;

/// A partitioned sort declines where its largest range holds more than this many times the
/// mean share (an unlucky sample, or keys placed against it): the rows would be mostly
/// padding.
const MOST_PADDING: u64 = 2;

/// Threads of the element-wise launches (sample, pick, place).
const THREADS: u32 = 256;

impl CudaBackend {
    /// Sorts `keys` (32- or 64-bit words ordered by `encoding`) in place on `stream` through
    /// `splitters + 1` ranges (at most [`RANGE_MAX_SPLITTERS`]), as the module describes.
    /// Waits for `stream` once, to read the ranges' counts. `Ok(false)` where the ranges came
    /// out too unequal ([`MOST_PADDING`]): nothing was written, and the caller sorts the
    /// keys another way. Temporary buffers (about twice the keys) come from the device's
    /// stream-ordered memory pool.
    pub(super) fn sort_device_partitioned(
        &self,
        keys: DeviceWords,
        encoding: KeyEncoding,
        splitters: u32,
        stream: &Stream,
    ) -> Result<bool> {
        let mut buffers = StreamBuffers::new(stream);
        let sorted = self.partitioned(keys, encoding, splitters, &mut buffers, stream);
        // Freed in stream order after the launches that use them, whatever failed.
        let freed = buffers.free();
        let sorted = sorted?;
        freed?;
        Ok(sorted)
    }

    fn partitioned(
        &self,
        keys: DeviceWords,
        encoding: KeyEncoding,
        splitters: u32,
        buffers: &mut StreamBuffers<'_>,
        stream: &Stream,
    ) -> Result<bool> {
        let n = keys.len as u64;
        let word_bytes = keys.word_bytes as u64;
        let m = splitters.min(RANGE_MAX_SPLITTERS);
        if n < 2 || m == 0 {
            self.sort_words_in(keys, encoding, n.max(1), stream)?;
            return Ok(true);
        }
        let ranges = 2 * m as usize + 1;
        let width = wide(word_bytes);
        let kernels = self.range_kernels;
        // 1. The sample and the splitters.
        let wanted = SAMPLE_PER_RANGE * (u64::from(m) + 1);
        let log_sample = wanted.next_power_of_two().min(1 << n.ilog2()).ilog2();
        let count = 1u64 << log_sample;
        let sample = buffers.alloc(self, count * 8)?;
        let mut params = (keys.ptr, n, sample, log_sample, encoding.code());
        // SAFETY: `range_sample_<word>(const K *keys, u64 n, u64 *sample, u32 log_sample, u32
        // encoding)` reads keys below `n` and writes `2^log_sample <= n` words, which the
        // sample holds.
        unsafe { self.launch_flat(kernels.sample[width], count, &mut params, stream) }?;
        let unsigned = KeyEncoding {
            kind: KeyKind::Unsigned,
            descending: false,
        };
        self.sort_words_in(
            DeviceWords {
                ptr: sample,
                len: count as usize,
                word_bytes: 8,
            },
            unsigned,
            count,
            stream,
        )?;
        // One more word: an address for the kernels even where they read none.
        let split = buffers.alloc(self, (u64::from(m) + 1) * 8)?;
        let mut params = (sample, count, split, m);
        // SAFETY: `range_pick(const u64 *sorted, u64 count, u64 *splitters, u32 m)` reads
        // below `count` and writes `m` words, which the splitters hold.
        unsafe { self.launch_flat(kernels.pick, u64::from(m), &mut params, stream) }?;
        // 2. The counts: regions of no capacity, so nothing is written.
        let tables = buffers.alloc(self, 3 * ranges as u64 * 8)?;
        let (offsets, capacities, fills) = (
            tables,
            tables + ranges as u64 * 8,
            tables + 2 * ranges as u64 * 8,
        );
        self.memset_words(tables, 0, 3 * ranges as u64 * 2, stream)?;
        self.scatter(
            keys,
            (split, m),
            encoding,
            [offsets, capacities, fills],
            0,
            stream,
        )?;
        stream.synchronize().map_err(on("cuStreamSynchronize"))?;
        let mut counts = vec![0u64; ranges];
        self.read_words(fills, &mut counts)?;
        // 3. The rows and the single-key ranges' room.
        let row = (0..ranges).step_by(2).map(|r| counts[r]).max().unwrap_or(0);
        let rows = u64::from(m) + 1;
        if row > MOST_PADDING * n.div_ceil(rows) {
            return Ok(false);
        }
        let mut at = vec![0u64; ranges];
        let mut room = vec![0u64; ranges];
        let mut after_rows = rows * row;
        for r in 0..ranges {
            if r % 2 == 0 {
                at[r] = (r as u64 / 2) * row;
                room[r] = row;
            } else {
                at[r] = after_rows;
                room[r] = counts[r];
                after_rows += counts[r];
            }
        }
        let mut starts = vec![0u64; ranges];
        for r in 1..ranges {
            starts[r] = starts[r - 1] + counts[r - 1];
        }
        let regions = buffers.alloc(self, after_rows.max(1) * word_bytes)?;
        let table: Vec<u64> = at.iter().chain(&room).chain(&starts).copied().collect();
        let uploaded = buffers.alloc(self, table.len() as u64 * 8)?;
        self.write_words(uploaded, &table, stream)?;
        let (at_d, room_d, starts_d) = (
            uploaded,
            uploaded + ranges as u64 * 8,
            uploaded + 2 * ranges as u64 * 8,
        );
        // The padding: the key whose ordered word is all ones, so that it sorts last.
        let pad = if word_bytes == 4 {
            u64::from(encoding.decode(u32::MAX))
        } else {
            encoding.decode(u64::MAX)
        };
        let halves = [pad as u32, (pad >> 32) as u32];
        if word_bytes == 4 {
            self.memset_words(regions, halves[0], rows * row, stream)?;
        } else {
            for (half, value) in halves.into_iter().enumerate() {
                self.memset_strided(regions + 4 * half as u64, value, rows * row, stream)?;
            }
        }
        self.memset_words(fills, 0, ranges as u64 * 2, stream)?;
        self.scatter(
            keys,
            (split, m),
            encoding,
            [at_d, room_d, fills],
            regions,
            stream,
        )?;
        // 4. The rows sorted, then every range at its start.
        if row > 1 {
            self.sort_words_in(
                DeviceWords {
                    ptr: regions,
                    len: (rows * row) as usize,
                    word_bytes: keys.word_bytes,
                },
                encoding,
                row,
                stream,
            )?;
        }
        let mut params = (regions, keys.ptr, n, at_d, starts_d, ranges as u32);
        // SAFETY: `range_place_<word>(const K *from, K *to, u64 n, const u64 *from_at, const
        // u64 *to_at, u32 ranges)` writes the `n` keys and reads each range's keys inside its
        // region (its count, at most its room); the tables hold `ranges <= RANGE_MAX_RANGES`
        // entries.
        unsafe { self.launch_flat(kernels.place[width], n, &mut params, stream) }?;
        Ok(true)
    }

    /// The device-resident sort of `keys` in rows of `row_len`, on `stream`.
    fn sort_words_in(
        &self,
        keys: DeviceWords,
        encoding: KeyEncoding,
        row_len: u64,
        stream: &Stream,
    ) -> Result<()> {
        self.enqueue_sort_words(keys, None, encoding, row_len as usize, stream)
    }

    /// The range scatter of `keys` by `splitters` (their address and number) into `regions`
    /// with the tables `[offsets, capacities, fills]` (one entry per range).
    fn scatter(
        &self,
        keys: DeviceWords,
        splitters: (cu::CUdeviceptr, u32),
        encoding: KeyEncoding,
        tables: [cu::CUdeviceptr; 3],
        regions: cu::CUdeviceptr,
        stream: &Stream,
    ) -> Result<()> {
        let n = keys.len as u64;
        let mut params = (
            keys.ptr,
            n,
            splitters.0,
            splitters.1,
            encoding.code(),
            tables[0],
            tables[1],
            tables[2],
            regions,
        );
        crate::fault::point(BackendKind::Cuda, "range scatter")?;
        let grid = n.div_ceil(u64::from(RANGE_SCATTER_KEYS)) as u32;
        // SAFETY: `range_scatter_<word>(const K *keys, u64 n, const u64 *splitters, u32 m, u32
        // encoding, const u64 *offsets, const u64 *capacities, u64 *fills, K *regions)` reads
        // the `n` keys and `m` splitters and a table entry per range (`2m + 1`), and writes a
        // key only where its range's capacity holds it: inside the regions, or nowhere where
        // every capacity is 0.
        unsafe {
            launch_kernel(
                self.range_kernels.scatter[wide(keys.word_bytes as u64)],
                (grid.max(1), RANGE_SCATTER_THREADS, 0),
                stream.as_inner(),
                &mut params.pointers(),
            )
        }
    }

    /// Launches an element-wise kernel over `n` elements on `stream`, the grid looping over
    /// the rest.
    ///
    /// # Safety
    /// `params` must be the kernel's parameters, in order and of its types, and keep its
    /// accesses of `n` elements inside the buffers they name.
    unsafe fn launch_flat<P: KernelParams>(
        &self,
        kernel: super::kernels::Kernel,
        n: u64,
        params: &mut P,
        stream: &Stream,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let grid = n
            .div_ceil(u64::from(THREADS))
            .min(u64::from(self.limits.max_grid_x))
            .min(1 << 20) as u32;
        // SAFETY: the caller vouches for the parameters and their extents.
        unsafe {
            launch_kernel(
                kernel,
                (grid, THREADS, 0),
                stream.as_inner(),
                &mut params.pointers(),
            )
        }
    }

    /// Sets `words` 32-bit words at `at` to `value`, in `stream`'s order.
    fn memset_words(
        &self,
        at: cu::CUdeviceptr,
        value: u32,
        words: u64,
        stream: &Stream,
    ) -> Result<()> {
        crate::fault::point(BackendKind::Cuda, "cuMemsetD32Async")?;
        // SAFETY: callers pass a buffer of at least `words` 32-bit words.
        check("cuMemsetD32Async", unsafe {
            cu::cuMemsetD32Async(at, value, words as usize, stream.as_inner())
        })
    }

    /// Sets every other 32-bit word from `at` (`count` of them, 8 bytes apart) to `value`.
    fn memset_strided(
        &self,
        at: cu::CUdeviceptr,
        value: u32,
        count: u64,
        stream: &Stream,
    ) -> Result<()> {
        crate::fault::point(BackendKind::Cuda, "cuMemsetD2D32Async")?;
        // SAFETY: callers pass a buffer of at least `count` 8-byte words from `at - 4` or
        // `at`; each of `count` rows of pitch 8 bytes gets one 32-bit word.
        check("cuMemsetD2D32Async", unsafe {
            cu::cuMemsetD2D32Async(at, 8, value, 1, count as usize, stream.as_inner())
        })
    }

    /// Copies `words` to the device at `at`, in `stream`'s order (the host words are
    /// staged by the driver before the call returns).
    fn write_words(&self, at: cu::CUdeviceptr, words: &[u64], stream: &Stream) -> Result<()> {
        crate::fault::point(BackendKind::Cuda, "cuMemcpyHtoDAsync")?;
        // SAFETY: the buffer at `at` holds `words.len()` words; pageable host memory is
        // copied out before the call returns.
        check("cuMemcpyHtoDAsync", unsafe {
            cu::cuMemcpyHtoDAsync_v2(
                at,
                words.as_ptr().cast(),
                std::mem::size_of_val(words),
                stream.as_inner(),
            )
        })
    }

    /// Reads `out.len()` words from `at` once the work before has finished.
    fn read_words(&self, at: cu::CUdeviceptr, out: &mut [u64]) -> Result<()> {
        crate::fault::point(BackendKind::Cuda, "cuMemcpyDtoH")?;
        // SAFETY: the buffer at `at` holds `out.len()` words, written by work the caller
        // has waited for.
        check("cuMemcpyDtoH", unsafe {
            cu::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), at, std::mem::size_of_val(out))
        })
    }
}
