//! The user-facing `Sorter`: typed keys and values in, sorted slices out.

use crate::backend::{Backend, BackendKind, DeviceInfo};
use crate::cpu::CpuBackend;
use crate::error::{Error, Result, check_lengths};
use crate::keys::{KeyEncoding, KeyRepr, Order, SortKey, Word, WordsMut};
use crate::pinned::PinnedBuffer;

mod builder;
pub use builder::SorterBuilder;

/// Sorts slices on one device. Create it once and reuse it: device contexts and compiled
/// kernels are cached inside.
///
/// ```
/// use bitonic::{Order, Sorter};
/// let sorter = Sorter::new()?;
/// let mut keys = vec![3.5f32, -1.0, f32::NAN, 0.0, -0.0];
/// sorter.sort(&mut keys, Order::Ascending)?;
/// assert_eq!(keys[0], -1.0);
/// assert!(keys[4].is_nan());
/// # Ok::<(), bitonic::Error>(())
/// ```
pub struct Sorter {
    backend: Box<dyn Backend>,
    /// The devices after the first of [`SorterBuilder::devices`] or
    /// [`SorterBuilder::all_gpus`]: large host-slice sorts are spread over all of them.
    pub(crate) others: Vec<Box<dyn Backend>>,
    /// [`SorterBuilder::device_memory_limit`].
    pub(crate) memory_limit: Option<u64>,
    /// [`SorterBuilder::split_from`].
    pub(crate) split_from: usize,
    /// [`SorterBuilder::all_or_nothing`].
    pub(crate) all_or_nothing: bool,
    /// The host sort for short host slices (absent when `backend` is the CPU already).
    cpu: Option<CpuBackend>,
    /// Host-slice sorts of fewer elements than this run on `cpu`.
    host_threshold: usize,
    /// Whether every sort runs the network alone ([`SorterBuilder::oblivious`]): then no
    /// sort takes the host's data-dependent paths.
    oblivious: bool,
}

/// Host-slice sorts on a GPU of fewer elements than this run on the host CPU instead
/// ([`SorterBuilder::host_threshold`]). It trades the host sort's time, which grows with the
/// length, against a round trip over the bus, which costs tens of microseconds whatever the
/// length: `u32` keys cross over between 1024 and 2048 elements on a PCIe 5 machine.
pub const DEFAULT_HOST_THRESHOLD: usize = 1 << 11;

/// A GPU sorter's host-slice sorts of one row of pairs shorter than
/// [`SorterBuilder::host_threshold`] but at least that threshold divided by this (682 pairs
/// by default) go to the device when two keys are equal. The host sorts pairs with distinct
/// keys quickly, but gives equal keys' values the network's order only by emulating the
/// network, which costs about three times a plain host sort: from a third of the threshold
/// on, the device's round trip is the cheaper of the two.
pub const TIED_PAIRS_THRESHOLD_DIVISOR: usize = 3;

impl std::fmt::Debug for Sorter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sorter")
            .field("device", self.device())
            .field("other_devices", &self.others.len())
            .finish()
    }
}

/// Host-slice sorts of at least this many elements are spread over every device of a sorter
/// built with several ([`SorterBuilder::split_from`]); slices past the first device's memory
/// are spread whatever it says. By default only those. Through the host partition (pairs,
/// narrow keys, OpenCL) a second device costs more than it saves while one holds the whole
/// sort: 2^30 `u32` keys over two H100s that way took 1479 ms, against 281 ms on one. Keys
/// of 32 or 64 bits on CUDA take the devices' spread sort instead (216 ms on two, against
/// 345 ms on one in that run), but shorter slices were not measured on it, so the default
/// does not count on it.
pub const DEFAULT_SPLIT_FROM: usize = usize::MAX;

impl Sorter {
    /// The best device found, or the one `BITONIC_BACKEND` / `BITONIC_DEVICE` name.
    pub fn new() -> Result<Sorter> {
        Sorter::builder().build()
    }

    /// A builder to choose the device in code.
    pub fn builder() -> SorterBuilder {
        SorterBuilder::default()
    }

    /// A sorter over a backend constructed by hand (tests and the benchmark). Host-slice
    /// sorts shorter than [`DEFAULT_HOST_THRESHOLD`] run on the host CPU when the backend is
    /// not the CPU already.
    #[doc(hidden)]
    pub fn with_backend(backend: Box<dyn Backend>) -> Sorter {
        let cpu = (backend.device().backend != BackendKind::Cpu).then(CpuBackend::new);
        Sorter {
            backend,
            others: Vec::new(),
            memory_limit: None,
            split_from: DEFAULT_SPLIT_FROM,
            all_or_nothing: false,
            cpu,
            host_threshold: DEFAULT_HOST_THRESHOLD,
            oblivious: false,
        }
    }

    /// Whether a sort of `len` host elements runs on the host CPU: a GPU sorter's below
    /// [`SorterBuilder::host_threshold`], never in the oblivious mode.
    fn on_host(&self, len: usize) -> bool {
        self.cpu.is_some() && len < self.host_threshold && !self.oblivious
    }

    /// The backend that sorts `len` host elements: the host CPU where [`Sorter::on_host`],
    /// else the sorter's device.
    pub(crate) fn backend_for(&self, len: usize) -> &dyn Backend {
        match &self.cpu {
            Some(cpu) if self.on_host(len) => cpu,
            _ => self.backend.as_ref(),
        }
    }

    /// Whether a host-slice sort of one row of `n` pairs that would run on the host tries the
    /// host's sort of distinct keys and, where two keys are equal, goes to the device
    /// ([`TIED_PAIRS_THRESHOLD_DIVISOR`]).
    fn tied_pairs_go_to_device(&self, n: usize, row_len: usize) -> bool {
        self.on_host(n) && row_len == n && n >= self.host_threshold / TIED_PAIRS_THRESHOLD_DIVISOR
    }

    /// The device this sorter runs on (the first of several, see
    /// [`SorterBuilder::devices`]).
    pub fn device(&self) -> &DeviceInfo {
        self.backend.device()
    }

    /// Every device this sorter runs on, [`Sorter::device`] first; a device opened twice is
    /// listed twice.
    pub fn devices(&self) -> Vec<&DeviceInfo> {
        self.device_backends().map(|b| b.device()).collect()
    }

    /// The backends of every device, the first device's first.
    pub(crate) fn device_backends(&self) -> impl Iterator<Item = &dyn Backend> {
        std::iter::once(self.backend.as_ref()).chain(self.others.iter().map(|b| b.as_ref()))
    }

    /// Whether the sorter runs the network alone ([`SorterBuilder::oblivious`]).
    pub(crate) fn is_oblivious(&self) -> bool {
        self.oblivious
    }

    /// The backend this sorter runs on, for backend-level calls such as
    /// [`Backend::sort_words`] (tests and the benchmark; shapes are not checked there).
    #[doc(hidden)]
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// The CUDA backend under this sorter, when it runs on one: its `sort_device*` calls sort
    /// keys already in device memory ([`crate::cuda::CudaBackend::sort_device`]).
    #[cfg(feature = "cuda")]
    pub fn cuda(&self) -> Option<&crate::cuda::CudaBackend> {
        self.backend.as_any()?.downcast_ref()
    }

    /// The OpenCL backend under this sorter, when it runs on one: its `sort_device*` calls
    /// sort keys already in device memory ([`crate::opencl::OpenClBackend::sort_device`]).
    #[cfg(feature = "opencl")]
    pub fn opencl(&self) -> Option<&crate::opencl::OpenClBackend> {
        self.backend.as_any()?.downcast_ref()
    }

    /// Bytes of device memory kept for the next sort, on all of the sorter's devices together.
    /// A sort of host slices needs device
    /// buffers as large as its keys plus values; the CUDA and OpenCL backends keep the
    /// largest they have needed so far, so sorting many arrays in a row allocates once.
    /// Nothing else is allocated on the device: the network sorts in place.
    pub fn cached_device_bytes(&self) -> u64 {
        self.device_backends().map(|b| b.cached_bytes()).sum()
    }

    /// Bytes of pinned (page-locked) host memory kept for the next sort, for all of the
    /// sorter's devices together (a ring each). Sorts of host
    /// slices on a GPU stage the data through a small ring of pinned buffers (48 MiB), since
    /// the bus moves pinned memory several times faster than ordinary memory; the ring is
    /// allocated by the first such sort and kept.
    pub fn cached_pinned_bytes(&self) -> u64 {
        self.device_backends()
            .map(|b| b.cached_pinned_bytes())
            .sum()
    }

    /// Frees the device buffers and the pinned host memory kept between sorts
    /// ([`Sorter::cached_device_bytes`] and [`Sorter::cached_pinned_bytes`] become 0); the
    /// next sort allocates again. Dropping the sorter frees them too.
    pub fn release_device_memory(&self) {
        for b in self.device_backends() {
            b.release_cached()
        }
    }

    /// A buffer of `len` zeros in pinned host memory of this sorter's device. Sorts of slices
    /// inside it skip the staging copy through [`Sorter::cached_pinned_bytes`]: the bus reads
    /// and writes the caller's memory directly, which on the GPU backends takes the host
    /// round trip to the bus speed. Any sort of a slice in it works (keys, values, rows,
    /// argsort, stable sorts), also on the CPU backend, whose buffers are ordinary memory.
    ///
    /// ```
    /// let sorter = bitonic::Sorter::new()?;
    /// let mut keys = sorter.pinned_buffer::<u32>(1 << 16)?;
    /// for (i, k) in keys.iter_mut().enumerate() {
    ///     *k = (i as u32).wrapping_mul(2_654_435_761);
    /// }
    /// sorter.sort(&mut keys, bitonic::Order::Ascending)?;
    /// assert!(keys.windows(2).all(|w| w[0] <= w[1]));
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    ///
    /// Pinned memory is taken out of the operating system's pageable memory; allocating it
    /// costs about as much as writing it once, so keep buffers for reuse rather than making
    /// one per sort. With [`SorterBuilder::all_or_nothing`] the results still go through the
    /// staging ring, which keeps that promise. Errors: [`Error::OutOfMemory`] when the
    /// driver cannot pin that much, [`Error::Driver`] for other driver failures.
    pub fn pinned_buffer<T: bytemuck::Pod>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        let bytes =
            len.checked_mul(std::mem::size_of::<T>())
                .ok_or_else(|| Error::OutOfMemory {
                    device: "pinned host memory".to_string(),
                    requested: u64::MAX,
                    available: 0,
                })?;
        let memory = if bytes == 0 {
            None
        } else {
            self.backend.alloc_pinned(bytes)?
        };
        PinnedBuffer::new(memory, len)
    }

    /// Sorts `keys` in `order` (floats in [`f32::total_cmp`] order; descending is its exact
    /// reverse).
    pub fn sort<K: SortKey>(&self, keys: &mut [K], order: Order) -> Result<()> {
        self.run::<K, u32>(keys, None, order.is_descending())
    }

    /// Sorts `keys` in `order` and moves each value with its key. Values are any plain-data
    /// type of 4 or 8 bytes. The order of values whose keys are equal is fixed by the
    /// network (the same on every backend) but is not their input order; see
    /// [`Sorter::sort_by_key_stable`] for that.
    pub fn sort_by_key<K: SortKey, V: bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: &mut [V],
        order: Order,
    ) -> Result<()> {
        self.run(keys, Some(values), order.is_descending())
    }

    /// Sorts each row of a row-major matrix in `order`: `data` holds `data.len() / row_len`
    /// rows of `row_len` keys (any length, also longer than a tile), each sorted on its own,
    /// all rows in the same launches.
    ///
    /// ```
    /// use bitonic::Order;
    /// let sorter = bitonic::Sorter::new()?;
    /// let mut m = vec![3u32, 1, 2, 9, 8, 7];
    /// sorter.sort_rows(&mut m, 3, Order::Ascending)?;
    /// assert_eq!(m, [1, 2, 3, 7, 8, 9]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_rows<K: SortKey>(
        &self,
        data: &mut [K],
        row_len: usize,
        order: Order,
    ) -> Result<()> {
        self.run_rows::<K, u32>(data, None, order.is_descending(), row_len)
    }

    /// Sorts each row of `keys` in `order` and moves `values` (the same shape) with them.
    pub fn sort_rows_by_key<K: SortKey, V: bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: &mut [V],
        row_len: usize,
        order: Order,
    ) -> Result<()> {
        self.run_rows(keys, Some(values), order.is_descending(), row_len)
    }

    fn run<K: SortKey, V: bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: Option<&mut [V]>,
        descending: bool,
    ) -> Result<()> {
        let n = keys.len();
        self.run_rows(keys, values, descending, n.max(1))
    }

    /// Every keyed sort: rows of `row_len` (the whole slice for a plain sort).
    pub(crate) fn run_rows<K: SortKey, V: bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: Option<&mut [V]>,
        descending: bool,
        row_len: usize,
    ) -> Result<()> {
        check_lengths(keys.len(), values.as_ref().map(|v| v.len()))?;
        check_rows(keys.len(), row_len)?;
        if values.is_some() {
            let bytes = std::mem::size_of::<V>();
            if bytes != 4 && bytes != 8 {
                return Err(Error::UnsupportedValueSize { bytes });
            }
        }
        if keys.len() <= 1 || row_len <= 1 {
            return Ok(());
        }
        if row_len == keys.len() {
            let element_bytes = std::mem::size_of::<K>().max(4) as u64
                + values
                    .as_ref()
                    .map_or(0, |_| std::mem::size_of::<V>() as u64);
            let n = keys.len();
            if let Some(plan) = crate::range_sort::plan(self, n, element_bytes) {
                return self.sort_in_ranges(&plan, keys, values, descending);
            }
            let mut values = values;
            let sorted = self.sort_on(
                self.backend.as_ref(),
                keys,
                values.as_deref_mut(),
                descending,
                row_len,
            );
            // Less free device memory than the device has: the slices are as they were (a
            // sort allocates before anything is copied back), so sort them in ranges.
            if let Err(Error::OutOfMemory { .. }) = &sorted
                && let Some(plan) = crate::range_sort::after_out_of_memory(self, n)
            {
                return self.sort_in_ranges(&plan, keys, values, descending);
            }
            return sorted;
        }
        self.sort_on(self.backend.as_ref(), keys, values, descending, row_len)
    }

    /// A sort of one row in ranges ([`crate::range_sort`]); values travel as words of their
    /// size, which threads may share.
    fn sort_in_ranges<K: SortKey, V: bytemuck::Pod>(
        &self,
        plan: &crate::range_sort::Plan,
        keys: &mut [K],
        values: Option<&mut [V]>,
        descending: bool,
    ) -> Result<()> {
        use crate::range_sort::sort;
        with_value_words(values, |words| match words {
            None => sort::<K, u32>(self, plan, keys, None, descending),
            Some(WordsMut::U32(v)) => sort(self, plan, keys, Some(v), descending),
            Some(WordsMut::U64(v)) => sort(self, plan, keys, Some(v), descending),
        })
    }

    /// Sorts one row of `keys` (with `values`) into `out_keys` (and `out_values`) on `device`,
    /// or on the host CPU where [`Sorter::on_host`] ([`Backend::sort_words_into`]: on error
    /// the inputs are as they were, the outputs maybe partly written). Keys narrower than 32
    /// bits are sorted in place and copied.
    pub(crate) fn sort_on_into<K: SortKey, V: Word>(
        &self,
        device: &dyn Backend,
        keys: &mut [K],
        values: Option<&mut [V]>,
        out_keys: &mut [K],
        out_values: Option<&mut [V]>,
        descending: bool,
    ) -> Result<()> {
        let n = keys.len();
        let backend = match &self.cpu {
            Some(cpu) if self.on_host(n) => cpu,
            _ => device,
        };
        let mut values = values;
        match (K::repr(keys), K::repr(out_keys)) {
            (KeyRepr::Words(words, kind), KeyRepr::Words(out_words, _)) => backend.sort_words_into(
                words,
                values.map(|v| V::words_mut(v)),
                out_words,
                out_values.map(|v| V::words_mut(v)),
                KeyEncoding { kind, descending },
            ),
            _ => {
                self.sort_on(device, keys, values.as_deref_mut(), descending, n.max(1))?;
                out_keys.copy_from_slice(keys);
                if let (Some(out), Some(values)) = (out_values, values) {
                    out.copy_from_slice(values);
                }
                Ok(())
            }
        }
    }

    /// A keyed sort of checked shape on `device` (one of the sorter's), or on the host CPU
    /// where a GPU sorter sorts so short a slice there ([`Sorter::on_host`]).
    pub(crate) fn sort_on<K: SortKey, V: bytemuck::Pod>(
        &self,
        device: &dyn Backend,
        keys: &mut [K],
        values: Option<&mut [V]>,
        descending: bool,
        row_len: usize,
    ) -> Result<()> {
        let n = keys.len();
        if n <= 1 || row_len <= 1 {
            return Ok(());
        }
        let backend = match &self.cpu {
            Some(cpu) if self.on_host(n) => cpu,
            _ => device,
        };
        with_value_words(values, |mut value_words| match K::repr(keys) {
            KeyRepr::Words(mut words, kind) => {
                let encoding = KeyEncoding { kind, descending };
                let backend = match value_words.as_mut() {
                    Some(values) if self.tied_pairs_go_to_device(n, row_len) => {
                        if crate::cpu::sort_distinct_words(&mut words, values, encoding) {
                            return Ok(());
                        }
                        device
                    }
                    _ => backend,
                };
                backend.sort_rows_words(words, value_words, encoding, row_len)
            }
            // Narrow keys travel as 32-bit ordered words, widened where they are copied.
            KeyRepr::Narrow => {
                let mut narrow: &mut [K] = keys;
                backend.sort_rows_narrow(&mut narrow, value_words, descending, row_len)
            }
        })
    }
}

/// Checks that `len` elements form whole rows of `row_len` (no rows at all is fine).
pub(crate) fn check_rows(len: usize, row_len: usize) -> Result<()> {
    if len == 0 || (row_len > 0 && len.is_multiple_of(row_len)) {
        Ok(())
    } else {
        Err(Error::InvalidConfig(format!(
            "{len} elements do not form rows of {row_len}"
        )))
    }
}

/// Presents values as 32- or 64-bit words.
fn with_value_words<V: bytemuck::Pod>(
    values: Option<&mut [V]>,
    f: impl FnOnce(Option<WordsMut<'_>>) -> Result<()>,
) -> Result<()> {
    match values {
        None => f(None),
        Some(values) if std::mem::size_of::<V>() == 4 => as_words::<V, u32>(values, f),
        Some(values) => as_words::<V, u64>(values, f),
    }
}

/// Views `values` as words of their own size in place, or, for a type aligned below its
/// size (such as `[u8; 4]`), copies them to aligned words and back after `f`.
fn as_words<V: bytemuck::Pod, W: Word>(
    values: &mut [V],
    f: impl FnOnce(Option<WordsMut<'_>>) -> Result<()>,
) -> Result<()> {
    if let Ok(words) = bytemuck::try_cast_slice_mut::<V, W>(values) {
        return f(Some(W::words_mut(words)));
    }
    let mut words: Vec<W> = values
        .iter()
        .map(|v| bytemuck::pod_read_unaligned(bytemuck::bytes_of(v)))
        .collect();
    f(Some(W::words_mut(&mut words)))?;
    for (v, w) in values.iter_mut().zip(&words) {
        *v = bytemuck::pod_read_unaligned(bytemuck::bytes_of(w));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorter_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Sorter>();
    }

    #[test]
    fn unaligned_values_are_copied_and_written_back() {
        let sorter = Sorter::builder()
            .ignore_env()
            .backend(BackendKind::Cpu)
            .build()
            .unwrap();
        let mut keys = vec![3u32, 1, 2];
        let mut values = [[3u8; 4], [1u8; 4], [2u8; 4]];
        sorter
            .sort_by_key(&mut keys, &mut values, Order::Ascending)
            .unwrap();
        assert_eq!(keys, [1, 2, 3]);
        assert_eq!(values, [[1u8; 4], [2u8; 4], [3u8; 4]]);
    }
}
