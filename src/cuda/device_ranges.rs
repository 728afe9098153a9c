//! Host slices sorted in ranges in one device's memory ([`CudaBackend::sort_host_in_ranges`]):
//! keys that fit the device but not beside a whole sort's scratch cross the bus once each way,
//! as `crate::schedule::device_ranges` plans. The host partition that such a slice would
//! otherwise take reads and writes the whole slice in host memory and first touches a buffer
//! of its size, which costs several times the bus (see `docs/scaling.md`).

use cust::event::Event;
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::module::Module;
use cust::sys as cu;

use super::driver::on;
use super::kernels::{Kernel, KernelParams, launch_kernel, load_kernel};
use super::link::{CudaLink, hand_over, record, wait_for};
use super::plan::Widths;
use super::{CudaBackend, Job};
use crate::backend::BackendKind;
use crate::buffer_cache::{BufferCache, grow};
use crate::error::{Error, Result};
use crate::host_transfer::Column;
use crate::kernel_contract::{RANGE_SCATTER_KEYS, RANGE_SCATTER_THREADS};
use crate::keys::{KeyEncoding, WordsMut};
use crate::partition::Splitters;
use crate::schedule::device_ranges::DeviceRanges;

/// `range_scatter_u32` and `range_scatter_u64` (`cuda/ranges.cuh`).
pub(super) fn load_range_kernels(module: &Module) -> Result<[Kernel; 2]> {
    Ok([
        load_kernel(module, "range_scatter_u32", 0)?,
        load_kernel(module, "range_scatter_u64", 0)?,
    ])
}

/// `words[range]`, as words of the same width.
fn part<'w>(words: &'w mut WordsMut<'_>, range: std::ops::Range<usize>) -> WordsMut<'w> {
    match words {
        WordsMut::U32(w) => WordsMut::U32(&mut w[range]),
        WordsMut::U64(w) => WordsMut::U64(&mut w[range]),
    }
}

impl CudaBackend {
    /// Sorts `keys` (32- or 64-bit words ordered by `encoding`) in the ranges of
    /// `splitters`, laid out in device memory as `layout` says. `Ok(false)` when a range
    /// outgrew its region: nothing was written to `keys`, which another path must sort.
    /// An error before the downloads leaves `keys` untouched; a download that fails after
    /// the first range was written returns [`Error::PartialResult`], as one device's
    /// host-slice sort does. The buffers stay with the backend for the next host-slice sort.
    pub(crate) fn sort_host_in_ranges(
        &self,
        mut keys: WordsMut<'_>,
        encoding: KeyEncoding,
        splitters: &Splitters,
        layout: &DeviceRanges,
    ) -> Result<bool> {
        let word_bytes = keys.word_bytes() as u64;
        let requested = layout.device_bytes(word_bytes);
        let mut host = self.lock_host(requested)?;
        let host = &mut *host;
        // The regions take nearly all of the device: buffers kept from other sorts give way.
        host.buffers = BufferCache::default();
        let widths = Widths {
            key: word_bytes,
            value: 0,
        };
        let allocated = host.buffers.fill(|buffers| {
            let bytes = (layout.buffer_keys() * word_bytes) as usize;
            let regions = grow(&mut buffers.keys, bytes, |len| self.alloc(len, requested))?;
            let regions = regions.as_device_ptr().as_raw();
            // The scratch of the largest range's sort, grown once here.
            self.plan_with_scratch(
                &mut buffers.scratch,
                layout.largest_sorted.max(2),
                1,
                widths,
                encoding.code(),
            )?;
            Ok(regions)
        });
        self.cache_stats.keep(host);
        let regions = allocated?;
        let link = CudaLink {
            stream: &self.stream,
            context: self.context.as_raw(),
        };
        let sorted = (|| {
            let fills =
                self.scatter(host, &link, &mut keys, regions, encoding, splitters, layout)?;
            if fills.iter().zip(&layout.capacities).any(|(f, c)| f > c) {
                return Ok(false);
            }
            let at = |r: usize| regions + layout.offsets[r] * word_bytes;
            // Each range's sort on the sort stream, the downloads on the copy stream, each
            // after its range's sort.
            let mut done: Vec<Option<Event>> = Vec::with_capacity(fills.len());
            for (r, &fill) in fills.iter().enumerate() {
                if Splitters::is_single_key(r) || fill < 2 {
                    done.push(None);
                    continue;
                }
                crate::fault::point(BackendKind::Cuda, "range sort")?;
                let (plan, scratch) = self.plan_with_scratch(
                    &mut host.buffers.scratch,
                    fill,
                    1,
                    widths,
                    encoding.code(),
                )?;
                let job = Job {
                    keys: at(r),
                    values: 0,
                    kernels: self.kernels(word_bytes as usize, 0),
                    widths,
                    plan,
                    scratch,
                };
                self.enqueue(&job, self.sort_stream.as_inner())?;
                done.push(Some(record(&self.sort_stream)?));
            }
            let mut first = 0usize;
            for (r, &fill) in fills.iter().enumerate() {
                let fill = fill as usize;
                if fill == 0 {
                    continue;
                }
                let mut column = Column::Words(part(&mut keys, first..first + fill));
                let downloaded = done[r]
                    .take()
                    .map_or(Ok(()), |event| wait_for(&self.stream, event))
                    .and_then(|()| {
                        let copy_back = self.cache_stats.copy_back();
                        host.download(&link, (&mut column, at(r)), None, copy_back)
                    });
                // Once a range has been written, any failure leaves the slice a mix.
                match downloaded {
                    Err(e) if first > 0 && !matches!(e, Error::PartialResult { .. }) => {
                        return Err(Error::PartialResult { cause: Box::new(e) });
                    }
                    result => result?,
                }
                first += fill;
            }
            Ok(true)
        })();
        if sorted.is_err() {
            // The copies and sorts already queued finish before the buffers are reused or
            // freed; the first error is the one to report.
            let _ = self.sort_stream.synchronize();
            let _ = self.stream.synchronize();
        }
        let sorted = match sorted {
            Ok(sorted) => Ok(sorted),
            Err(e) => host.after_sort(Err(e)).map(|()| false),
        };
        self.cache_stats.keep(host);
        sorted
    }

    /// Uploads `keys` chunk by chunk into the staging after the regions and appends each
    /// chunk to its ranges' regions on the sort stream while the next one travels; returns
    /// each range's fill (past its capacity where the range outgrew its region).
    #[allow(clippy::too_many_arguments)]
    fn scatter(
        &self,
        host: &mut super::HostState,
        link: &CudaLink<'_>,
        keys: &mut WordsMut<'_>,
        regions: cu::CUdeviceptr,
        encoding: KeyEncoding,
        splitters: &Splitters,
        layout: &DeviceRanges,
    ) -> Result<Vec<u64>> {
        let word_bytes = keys.word_bytes() as u64;
        let ranges = layout.capacities.len();
        crate::fault::point(BackendKind::Cuda, "cuMemAlloc")?;
        let table = |words: &[u64]| DeviceBuffer::from_slice(words).map_err(on("cuMemcpyHtoD"));
        // An empty table still needs an address.
        let split_words: Vec<u64> = splitters.bits().iter().copied().chain([0]).collect();
        let split = table(&split_words)?;
        let offsets = table(&layout.offsets)?;
        let capacities = table(&layout.capacities)?;
        let fills = table(&vec![0u64; ranges])?;
        let staging = regions + layout.total() * word_bytes;
        let kernel = self.range_kernels[usize::from(word_bytes == 8)];
        let n = keys.len();
        let mut scattered: [Option<Event>; 2] = [None, None];
        for (i, first) in (0..n).step_by(layout.chunk.max(1)).enumerate() {
            let len = layout.chunk.min(n - first);
            let slot = i % 2;
            let stage = staging + (slot * layout.chunk) as u64 * word_bytes;
            // The staging slot is free once the scatter of two chunks ago has read it.
            if let Some(event) = scattered[slot].take() {
                wait_for(&self.stream, event)?;
            }
            let column = Column::Words(part(keys, first..first + len));
            host.upload(link, (&column, stage), None, &mut |_| Ok(()))?;
            hand_over(&self.stream, &self.sort_stream)?;
            let mut params = (
                stage,
                len as u64,
                split.as_device_ptr().as_raw(),
                splitters.bits().len() as u32,
                encoding.code(),
                offsets.as_device_ptr().as_raw(),
                capacities.as_device_ptr().as_raw(),
                fills.as_device_ptr().as_raw(),
                regions,
            );
            crate::fault::point(BackendKind::Cuda, "range scatter")?;
            let grid = len.div_ceil(RANGE_SCATTER_KEYS as usize) as u32;
            // SAFETY: `range_scatter_<key>(const K *keys, u64 n, const u64 *splitters, u32 m,
            // u32 encoding, const u64 *offsets, const u64 *capacities, u64 *fills, K
            // *regions)` reads the chunk's `len` staged keys, the `m` splitters (at most the
            // kernel's limit, `ranges_wanted`) and a table entry per range, and writes a key
            // only inside its range's region (it checks the capacity before writing): the
            // tables hold `2m + 1` entries and the regions `offsets[r] + capacities[r]` keys.
            unsafe {
                launch_kernel(
                    kernel,
                    (grid.max(1), RANGE_SCATTER_THREADS, 0),
                    self.sort_stream.as_inner(),
                    &mut params.pointers(),
                )
            }?;
            scattered[slot] = Some(record(&self.sort_stream)?);
        }
        self.sort_stream
            .synchronize()
            .map_err(on("cuStreamSynchronize"))?;
        let mut got = vec![0u64; ranges];
        fills.copy_to(&mut got[..]).map_err(on("cuMemcpyDtoH"))?;
        Ok(got)
    }
}
