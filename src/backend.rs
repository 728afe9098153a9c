//! The executor interface that every backend implements.

pub(crate) use crate::device::{BackendDevices, BackendKind, DeviceInfo, DeviceType};
use crate::error::Result;
use crate::keys::{KeyEncoding, NarrowKeys, WordsMut};
use crate::pinned::PinnedMemory;

/// Host keys of a top-k ([`Backend::top_k_rows_words`]) as the kernels read them: the raw bits
/// of 16-bit keys of a kind the kernels encode at 16 bits (`u16`, `i16`, `f16`, `bf16`),
/// which cross the bus at their own width, or 32-bit words (raw 4-byte keys, or narrower keys'
/// ordered words).
#[derive(Clone, Copy, Debug)]
pub enum TopKKeys<'a> {
    /// The bits of 16-bit keys.
    U16(&'a [u16]),
    /// 32-bit key words.
    U32(&'a [u32]),
}

#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
impl<'a> TopKKeys<'a> {
    /// Keys.
    pub(crate) fn len(self) -> usize {
        match self {
            TopKKeys::U16(keys) => keys.len(),
            TopKKeys::U32(keys) => keys.len(),
        }
    }

    /// Bytes of a key: 2 or 4.
    pub(crate) fn key_bytes(self) -> usize {
        match self {
            TopKKeys::U16(_) => 2,
            TopKKeys::U32(_) => 4,
        }
    }

    /// The keys' bytes, as they are copied to the device.
    pub(crate) fn bytes(self) -> &'a [u8] {
        match self {
            TopKKeys::U16(keys) => bytemuck::cast_slice(keys),
            TopKKeys::U32(keys) => bytemuck::cast_slice(keys),
        }
    }
}

/// An executor of the sorting network on one device.
///
/// [`crate::Sorter`] turns typed keys into words and calls [`Backend::sort_rows_words`] (a
/// plain sort is one row); a backend computes the pass list with
/// [`crate::schedule::Schedule`] from its own tile parameters and runs it. All backends
/// produce bit-identical results, values included, because they run the same comparator
/// network.
pub trait Backend: Send + Sync {
    /// The device this backend sorts on.
    fn device(&self) -> &DeviceInfo;

    /// Sorts `keys` in place: on entry they are raw key words of `encoding.kind`, on return
    /// the same words in the order `encoding` asks for. `values`, when given, has the same
    /// length and moves with the keys. On error the slices are left as they were. This is
    /// [`Backend::sort_rows_words`] with one row.
    fn sort_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
    ) -> Result<()> {
        let n = keys.len();
        self.sort_rows_words(keys, values, encoding, n.max(1))
    }

    /// Sorts each row of `row_len` words independently, every row in the same launches, as
    /// [`Backend::sort_words`] sorts one. The caller has checked the shape: `keys.len()` is a
    /// multiple of a nonzero `row_len`, and `values` are as many as `keys`. On error the
    /// slices are left as they were.
    fn sort_rows_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()>;

    /// Sorts `keys` (raw key words of `encoding.kind`, one row) with `values` into `out_keys`
    /// and `out_values`, of the same lengths and widths. On success the outputs hold the
    /// sorted result, and `keys` and `values` are the caller's scratch. On error `keys` and
    /// `values` hold their input (the GPU backends only read them) or, after a sort in place
    /// that failed half-way (this default's [`Error::PartialResult`](crate::Error::PartialResult)),
    /// part of the result; the outputs may be partly written. The default sorts `keys` in
    /// place and copies the result; the GPU backends upload from `keys` and download straight
    /// into `out_keys`, saving that copy.
    fn sort_words_into(
        &self,
        mut keys: WordsMut<'_>,
        mut values: Option<WordsMut<'_>>,
        mut out_keys: WordsMut<'_>,
        out_values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
    ) -> Result<()> {
        self.sort_words(
            keys.reborrow(),
            values.as_mut().map(WordsMut::reborrow),
            encoding,
        )?;
        out_keys.as_bytes_mut().copy_from_slice(keys.as_bytes());
        if let (Some(mut out), Some(values)) = (out_values, values) {
            out.as_bytes_mut().copy_from_slice(values.as_bytes());
        }
        Ok(())
    }

    /// Sorts keys narrower than 32 bits, which travel as ordered `u32` words (ascending
    /// order; `descending` inverts it), in rows of `row_len` as [`Backend::sort_rows_words`]
    /// does. The GPU backends widen and narrow the keys as they copy them; this default
    /// widens them into a new vector.
    fn sort_rows_narrow(
        &self,
        keys: &mut dyn NarrowKeys,
        values: Option<WordsMut<'_>>,
        descending: bool,
        row_len: usize,
    ) -> Result<()> {
        sort_narrow_as_words(self, keys, values, descending, row_len)
    }

    /// The `k` best keys of each row of `row_len` raw key words of `encoding.kind` (the
    /// smallest in `encoding`'s order), best first, equal keys to the lower position: `k` raw
    /// key words (16-bit ones zero-extended) and `k` positions per row. `None` where this
    /// backend has no top-k of this shape, for the caller to take the sort path; the default.
    /// The caller has checked the shape and `1 <= k <= row_len`.
    fn top_k_rows_words(
        &self,
        keys: TopKKeys<'_>,
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
    ) -> Result<Option<(Vec<u32>, Vec<u32>)>> {
        let _ = (keys, encoding, row_len, k);
        Ok(None)
    }

    /// Sorts one host slice of 32- or 64-bit key words of `encoding.kind`, without values, in
    /// the memory of `devices` (this backend's device first; `memory[i]` bytes may be taken
    /// on `devices[i]`) without the host partition, where this backend has such a path and
    /// the slice suits it. `Ok(true)`: the slice is sorted. `Ok(false)`: the path does not
    /// apply, or it failed before anything was written to the slice, which the caller then
    /// sorts through the host partition; the default. A failure after part of the slice was
    /// written is [`Error::PartialResult`](crate::Error::PartialResult). The caller calls it
    /// only outside [`crate::SorterBuilder::all_or_nothing`].
    fn sort_host_in_device_memory(
        &self,
        devices: &[&dyn Backend],
        memory: &[u64],
        keys: WordsMut<'_>,
        encoding: KeyEncoding,
    ) -> Result<bool> {
        let _ = (devices, memory, keys, encoding);
        Ok(false)
    }

    /// Chooses what a failed sort of host slices leaves in them (see
    /// [`crate::SorterBuilder::all_or_nothing`]): `true`, the slices as they were or fully
    /// sorted; `false` (the default of the GPU backends), the result is copied back chunk by
    /// chunk as it arrives, and a failure after the first chunk is an
    /// [`Error::PartialResult`](crate::Error::PartialResult). Backends that never fail half-way ignore it.
    fn set_all_or_nothing(&self, all_or_nothing: bool) {
        let _ = all_or_nothing;
    }

    /// Whether every sort runs the sorting network alone, whose memory accesses depend only
    /// on the shape of the input (see [`crate::SorterBuilder::oblivious`]). Backends that
    /// run nothing else ignore it.
    fn set_oblivious(&self, oblivious: bool) {
        let _ = oblivious;
    }

    /// Bytes of pinned (page-locked) host memory this backend keeps between sorts to stage
    /// host slices (see [`crate::Sorter::cached_pinned_bytes`]); 0 for backends that keep
    /// none.
    fn cached_pinned_bytes(&self) -> u64 {
        0
    }

    /// `bytes` (more than 0) of pinned host memory for a caller's buffer (see
    /// [`crate::Sorter::pinned_buffer`]), which this backend's sorts of host slices copy
    /// directly; `None` for backends without such memory (their buffers are ordinary memory).
    fn alloc_pinned(&self, bytes: usize) -> Result<Option<Box<dyn PinnedMemory>>> {
        let _ = bytes;
        Ok(None)
    }

    /// Bytes of device memory this backend keeps between sorts (see
    /// [`crate::Sorter::cached_device_bytes`]); 0 for backends that keep none.
    fn cached_bytes(&self) -> u64 {
        0
    }

    /// Frees the device memory and pinned host memory kept between sorts (see
    /// [`crate::Sorter::release_device_memory`]).
    fn release_cached(&self) {}

    /// The backend as [`std::any::Any`], so that [`crate::Sorter`] can hand out the concrete
    /// CUDA or OpenCL backend for its device-resident calls. Backends outside this crate
    /// need not override it.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// Narrow keys sorted as [`Backend::sort_rows_words`] sorts their ordered 32-bit words,
/// widened into a new vector and narrowed back.
pub(crate) fn sort_narrow_as_words<B: Backend + ?Sized>(
    backend: &B,
    keys: &mut dyn NarrowKeys,
    values: Option<WordsMut<'_>>,
    descending: bool,
    row_len: usize,
) -> Result<()> {
    let mut wide = vec![0u32; keys.len()];
    keys.widen(0, &mut wide);
    backend.sort_rows_words(
        WordsMut::U32(&mut wide),
        values,
        KeyEncoding::narrow(descending),
        row_len,
    )?;
    keys.narrow(0, &wide);
    Ok(())
}
