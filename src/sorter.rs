//! The user-facing `Sorter`: typed keys and values in, sorted slices out.

use crate::backend::{Backend, DeviceInfo};
use crate::dispatch::Dispatch;
use crate::error::{Error, Result};
use crate::keys::{Order, SortKey};
use crate::pinned::PinnedBuffer;

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
    /// The backends and the choice among them for each sort of host slices.
    pub(crate) dispatch: Dispatch,
}

impl std::fmt::Debug for Sorter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sorter")
            .field("device", self.device())
            .field(
                "other_devices",
                &(self.dispatch.backends.device_backends().count() - 1),
            )
            .finish()
    }
}

impl Sorter {
    /// A sorter over a backend constructed by hand, with the default settings: host-slice
    /// sorts shorter than [`crate::DEFAULT_HOST_THRESHOLD`] run on the host CPU when the
    /// backend is not the CPU already.
    #[cfg(test)]
    pub(crate) fn with_backend(backend: Box<dyn Backend>) -> Sorter {
        use crate::backends::Backends;
        Sorter {
            dispatch: Dispatch {
                backends: Backends::new(backend, Vec::new(), Default::default()),
            },
        }
    }

    /// The device this sorter runs on (the first of several, see
    /// [`crate::SorterBuilder::devices`]).
    pub fn device(&self) -> &DeviceInfo {
        self.dispatch.backends.first().device()
    }

    /// Every device this sorter runs on, [`Sorter::device`] first; a device opened twice is
    /// listed twice.
    pub fn devices(&self) -> Vec<&DeviceInfo> {
        self.dispatch
            .backends
            .device_backends()
            .map(|b| b.device())
            .collect()
    }

    /// The backend this sorter runs on, for backend-level calls such as
    /// [`Backend::sort_words`] (tests and the benchmark; shapes are not checked there).
    #[doc(hidden)]
    pub fn backend(&self) -> &dyn Backend {
        self.dispatch.backends.first()
    }

    /// The CUDA backend under this sorter, when it runs on one: its `sort_device*` calls sort
    /// keys already in device memory ([`crate::cuda::CudaBackend::sort_device`]).
    #[cfg(feature = "cuda")]
    pub fn cuda(&self) -> Option<&crate::cuda::CudaBackend> {
        self.dispatch.backends.first().as_any()?.downcast_ref()
    }

    /// The OpenCL backend under this sorter, when it runs on one: its `sort_device*` calls
    /// sort keys already in device memory ([`crate::opencl::OpenClBackend::sort_device`]).
    #[cfg(feature = "opencl")]
    pub fn opencl(&self) -> Option<&crate::opencl::OpenClBackend> {
        self.dispatch.backends.first().as_any()?.downcast_ref()
    }

    /// Bytes of device memory kept for the next sort, on all of the sorter's devices together.
    /// A sort of host slices needs device
    /// buffers as large as its keys plus values; the CUDA and OpenCL backends keep the
    /// largest they have needed so far, so sorting many arrays in a row allocates once.
    /// Nothing else is allocated on the device: the network sorts in place.
    pub fn cached_device_bytes(&self) -> u64 {
        self.dispatch
            .backends
            .device_backends()
            .map(|b| b.cached_bytes())
            .sum()
    }

    /// Bytes of pinned (page-locked) host memory kept for the next sort, for all of the
    /// sorter's devices together (a ring each). Sorts of host
    /// slices on a GPU stage the data through a small ring of pinned buffers (48 MiB), since
    /// the bus moves pinned memory several times faster than ordinary memory; the ring is
    /// allocated by the first such sort and kept.
    pub fn cached_pinned_bytes(&self) -> u64 {
        self.dispatch
            .backends
            .device_backends()
            .map(|b| b.cached_pinned_bytes())
            .sum()
    }

    /// Frees the device buffers and the pinned host memory kept between sorts
    /// ([`Sorter::cached_device_bytes`] and [`Sorter::cached_pinned_bytes`] become 0); the
    /// next sort allocates again. Dropping the sorter frees them too.
    pub fn release_device_memory(&self) {
        for b in self.dispatch.backends.device_backends() {
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
    /// one per sort. With [`crate::SorterBuilder::all_or_nothing`] the results still go through the
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
            self.dispatch.backends.first().alloc_pinned(bytes)?
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
        self.dispatch
            .sort_slices::<K, u32>(data, None, order.is_descending(), row_len)
    }

    /// Sorts each row of `keys` in `order` and moves `values` (the same shape) with them.
    pub fn sort_rows_by_key<K: SortKey, V: bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: &mut [V],
        row_len: usize,
        order: Order,
    ) -> Result<()> {
        self.dispatch
            .sort_slices(keys, Some(values), order.is_descending(), row_len)
    }

    fn run<K: SortKey, V: bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: Option<&mut [V]>,
        descending: bool,
    ) -> Result<()> {
        let n = keys.len();
        self.dispatch
            .sort_slices(keys, values, descending, n.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;

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
