//! Device-resident sorts and top-k of 16-bit keys held as their bits in a
//! `DeviceSlice<u16>`. `cust` can copy `u16` and `i16` to the device, and those go through
//! the generic calls ([`CudaBackend::sort_device`] and the rest); `half::f16` and
//! `half::bf16` (half 2) are no `cust::memory::DeviceCopy` types, so a caller holds their bits
//! as `u16` and names the key type here. The kernels read the same 16 bits either way.

use cust::memory::{DeviceCopy, DeviceSlice};
use cust::stream::Stream;

use super::CudaBackend;
use super::device_resident::DeviceWords;
use crate::error::{Error, Result};
use crate::keys::{KeyEncoding, Order, WordKey};

/// The encoding of the 16-bit key type `K` in `order`, or an error for a wider key type.
fn bits_encoding<K: WordKey>(order: Order) -> Result<KeyEncoding> {
    if K::WORD_BYTES != 2 {
        return Err(Error::Unsupported(format!(
            "{}-byte keys ({}) as 16-bit words: the `*_bits` calls take 16-bit key types",
            K::WORD_BYTES,
            std::any::type_name::<K>()
        )));
    }
    Ok(KeyEncoding::of::<K>(order))
}

impl CudaBackend {
    /// Sorts `keys`, the bits of 16-bit keys of type `K` (`half::f16`, `half::bf16`, `u16` or
    /// `i16`), in place on `stream` in `K`'s order (`total_cmp` for floats). Otherwise as
    /// [`CudaBackend::sort_device`]; a key type that is not 16 bits wide is
    /// [`Error::Unsupported`].
    ///
    /// ```no_run
    /// # #[cfg(feature = "half")] {
    /// use cust::memory::{CopyDestination, DeviceBuffer};
    /// use cust::stream::{Stream, StreamFlags};
    /// use half::bf16;
    ///
    /// let sorter = bitonic::Sorter::builder().backend(bitonic::BackendKind::Cuda).build()?;
    /// let cuda = sorter.cuda().expect("a CUDA sorter");
    /// let stream = Stream::new(StreamFlags::DEFAULT, None).unwrap();
    /// let host = [bf16::from_f32(2.0), bf16::from_f32(-1.0)];
    /// let mut bits = DeviceBuffer::from_slice(&host.map(bf16::to_bits)).unwrap();
    /// cuda.sort_device_bits::<bf16>(&mut bits, bitonic::Order::Ascending, &stream)?;
    /// stream.synchronize().unwrap();
    /// let mut sorted = [0u16; 2];
    /// bits.copy_to(&mut sorted[..]).unwrap();
    /// assert_eq!(sorted.map(bf16::from_bits), [bf16::from_f32(-1.0), bf16::from_f32(2.0)]);
    /// # }
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_device_bits<K: WordKey>(
        &self,
        keys: &mut DeviceSlice<u16>,
        order: Order,
        stream: &Stream,
    ) -> Result<()> {
        let n = keys.len();
        self.sort_device_bits_rows::<K>(keys, n.max(1), order, stream)
    }

    /// [`CudaBackend::sort_device_bits`] with `values` (4- or 8-byte elements, as many as the
    /// keys) moving with the keys.
    pub fn sort_device_bits_by_key<K: WordKey, V: DeviceCopy>(
        &self,
        keys: &mut DeviceSlice<u16>,
        values: &mut DeviceSlice<V>,
        order: Order,
        stream: &Stream,
    ) -> Result<()> {
        let n = keys.len();
        self.sort_device_bits_rows_by_key::<K, V>(keys, values, n.max(1), order, stream)
    }

    /// Sorts each row of `row_len` 16-bit keys of type `K` (held as bits) on its own; see
    /// [`CudaBackend::sort_device_bits`] and [`CudaBackend::sort_device_rows`].
    pub fn sort_device_bits_rows<K: WordKey>(
        &self,
        keys: &mut DeviceSlice<u16>,
        row_len: usize,
        order: Order,
        stream: &Stream,
    ) -> Result<()> {
        let encoding = bits_encoding::<K>(order)?;
        let stream = stream.as_inner();
        self.sort_device_words(DeviceWords::of(keys), None, encoding, row_len, stream)
    }

    /// [`CudaBackend::sort_device_bits_rows`] with `values` (the same shape) moving with the
    /// keys.
    pub fn sort_device_bits_rows_by_key<K: WordKey, V: DeviceCopy>(
        &self,
        keys: &mut DeviceSlice<u16>,
        values: &mut DeviceSlice<V>,
        row_len: usize,
        order: Order,
        stream: &Stream,
    ) -> Result<()> {
        let encoding = bits_encoding::<K>(order)?;
        let values = Some(DeviceWords::of(values));
        let stream = stream.as_inner();
        self.sort_device_words(DeviceWords::of(keys), values, encoding, row_len, stream)
    }

    /// [`CudaBackend::top_k_device_rows`] of 16-bit keys of type `K` held as bits: `values`
    /// receives the bits of each row's best `k` keys in `K`'s order.
    #[allow(clippy::too_many_arguments)]
    pub fn top_k_device_bits_rows<K: WordKey>(
        &self,
        keys: &DeviceSlice<u16>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut DeviceSlice<u16>,
        indices: &mut DeviceSlice<u32>,
        stream: &Stream,
    ) -> Result<()> {
        let encoding = bits_encoding::<K>(order)?;
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

    /// [`CudaBackend::argsort_device_rows`] of 16-bit keys of type `K` held as bits.
    pub fn argsort_device_bits_rows<K: WordKey>(
        &self,
        keys: &DeviceSlice<u16>,
        row_len: usize,
        order: Order,
        indices: &mut DeviceSlice<u32>,
        stream: &Stream,
    ) -> Result<()> {
        let encoding = bits_encoding::<K>(order)?;
        let (keys, indices) = (DeviceWords::of(keys), DeviceWords::of(indices));
        self.argsort_device_words(keys, encoding, row_len, indices, stream.as_inner())
    }
}
