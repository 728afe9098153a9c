//! What the two GPU backends do alike, written once: the [`Backend`] calls over their sorts of
//! host slices through the transfer engine ([`GpuBackend`]), and the checked description of a
//! device-resident top-k ([`TopKJob`]).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{Backend, DeviceInfo, TopKKeys};
use crate::error::Result;
use crate::host_transfer::{CacheStats, Column};
use crate::keys::{KeyEncoding, NarrowKeys, WordsMut};
use crate::pinned::PinnedMemory;
use crate::shape::check_top_k_device;

/// A GPU backend's sort of host columns through the transfer engine, which every
/// [`Backend`] sort of host slices is.
pub(crate) trait HostSort {
    /// Sorts host columns in rows of `row_len`: `keys` (with `values`) in place, or into
    /// `out` where given ([`Backend::sort_words_into`]).
    fn sort_host<'a>(
        &self,
        keys: Column<'a>,
        values: Option<Column<'a>>,
        out: Option<(Column<'a>, Option<Column<'a>>)>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()>;
}

/// A GPU backend's top-k of host keys: [`Backend::top_k_rows_words`] as an upload, the
/// device top-k and a download.
pub(crate) trait HostTopK {
    /// [`Backend::top_k_rows_words`] on the device.
    fn top_k_host(
        &self,
        keys: TopKKeys<'_>,
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
    ) -> Result<Option<(Vec<u32>, Vec<u32>)>>;
}

/// A GPU backend's own calls, from which it is a [`Backend`]: every sort of host slices is
/// one [`HostSort::sort_host`] of columns, and the settings live in the same fields on both.
pub(crate) trait GpuBackend: HostSort + HostTopK + Send + Sync + 'static {
    /// The device.
    fn info(&self) -> &DeviceInfo;

    /// [`Backend::sort_host_in_device_memory`]; none by default.
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

    /// Whether every sort runs the network alone ([`Backend::set_oblivious`]).
    fn oblivious(&self) -> &AtomicBool;

    /// What the host-slice sorts keep, readable without their lock.
    fn cache_stats(&self) -> &CacheStats;

    /// Bytes the device-resident sorts keep as scratch.
    fn device_scratch_bytes(&self) -> u64;

    /// Pinned host memory of `bytes` for a caller's buffer ([`Backend::alloc_pinned`]).
    fn alloc_caller_pinned(&self, bytes: usize) -> Result<Box<dyn PinnedMemory>>;

    /// Frees what the host-slice and device-resident sorts keep ([`Backend::release_cached`]).
    fn release_kept(&self);
}

impl<G: GpuBackend> Backend for G {
    fn device(&self) -> &DeviceInfo {
        self.info()
    }

    fn sort_rows_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()> {
        let values = values.map(Column::Words);
        self.sort_host(Column::Words(keys), values, None, encoding, row_len)
    }

    fn sort_words_into(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        out_keys: WordsMut<'_>,
        out_values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
    ) -> Result<()> {
        let n = keys.len();
        let out = Some((Column::Words(out_keys), out_values.map(Column::Words)));
        let values = values.map(Column::Words);
        self.sort_host(Column::Words(keys), values, out, encoding, n.max(1))
    }

    fn sort_rows_narrow(
        &self,
        keys: &mut dyn NarrowKeys,
        values: Option<WordsMut<'_>>,
        descending: bool,
        row_len: usize,
    ) -> Result<()> {
        let values = values.map(Column::Words);
        let encoding = KeyEncoding::narrow(descending);
        self.sort_host(Column::Narrow(keys), values, None, encoding, row_len)
    }

    fn top_k_rows_words(
        &self,
        keys: TopKKeys<'_>,
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
    ) -> Result<Option<(Vec<u32>, Vec<u32>)>> {
        self.top_k_host(keys, encoding, row_len, k)
    }

    fn sort_host_in_device_memory(
        &self,
        devices: &[&dyn Backend],
        memory: &[u64],
        keys: WordsMut<'_>,
        encoding: KeyEncoding,
    ) -> Result<bool> {
        GpuBackend::sort_host_in_device_memory(self, devices, memory, keys, encoding)
    }

    fn set_all_or_nothing(&self, all_or_nothing: bool) {
        self.cache_stats().set_all_or_nothing(all_or_nothing);
    }

    fn set_oblivious(&self, oblivious: bool) {
        self.oblivious().store(oblivious, Ordering::Relaxed);
    }

    fn cached_pinned_bytes(&self) -> u64 {
        self.cache_stats().pinned()
    }

    fn alloc_pinned(&self, bytes: usize) -> Result<Option<Box<dyn PinnedMemory>>> {
        self.alloc_caller_pinned(bytes).map(Some)
    }

    fn cached_bytes(&self) -> u64 {
        self.cache_stats().device() + self.device_scratch_bytes()
    }

    fn release_cached(&self) {
        self.release_kept();
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// A checked top-k of device memory: `rows` rows of `row_len` keys of `key_bytes` at `keys`,
/// ordered by `encoding`, and `k` values (of the keys' width) and `k` positions per row to
/// write at `values` and `indices`. `M` is the backend's device address.
#[derive(Clone, Copy)]
pub(crate) struct TopKJob<M> {
    pub(crate) keys: M,
    pub(crate) key_bytes: usize,
    pub(crate) encoding: KeyEncoding,
    pub(crate) row_len: u64,
    pub(crate) rows: u64,
    pub(crate) k: u64,
    pub(crate) values: M,
    pub(crate) indices: M,
}

/// Device memory of `len` elements at an address of the backend's kind.
pub(crate) type DeviceRun<M> = (M, usize);

impl<M: Copy> TopKJob<M> {
    /// The job after its shape checks ([`check_top_k_device`]), before anything is enqueued.
    pub(crate) fn checked(
        (keys, keys_len): DeviceRun<M>,
        key_bytes: usize,
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
        (values, values_len): DeviceRun<M>,
        (indices, indices_len): DeviceRun<M>,
    ) -> Result<TopKJob<M>> {
        let rows = check_top_k_device(keys_len, row_len, k, values_len, indices_len)?;
        Ok(TopKJob {
            keys,
            key_bytes,
            encoding,
            row_len: row_len as u64,
            rows: rows as u64,
            k: k as u64,
            values,
            indices,
        })
    }

    /// The keys of the job.
    #[cfg(feature = "cuda")]
    pub(crate) fn n(&self) -> u64 {
        self.rows * self.row_len
    }
}

/// The outputs of a top-k of `keys` in rows of `row_len` (a shape the caller checked), and
/// the device bytes it takes: the keys, and `rows * k` values (of the keys' width) and
/// positions.
pub(crate) fn host_top_k_sizes(keys: TopKKeys<'_>, row_len: usize, k: usize) -> (usize, u64) {
    let out = keys.len() / row_len * k;
    let key_bytes = keys.key_bytes();
    (out, (keys.len() * key_bytes + out * (key_bytes + 4)) as u64)
}

/// The values of a host top-k as [`Backend::top_k_rows_words`] returns them: the `bytes` the
/// device wrote, keys of `key_bytes` each, as 32-bit words (16-bit ones zero-extended).
pub(crate) fn value_words(bytes: &[u8], key_bytes: usize) -> Vec<u32> {
    match key_bytes {
        2 => bytes
            .chunks_exact(2)
            .map(|b| u32::from(u16::from_ne_bytes([b[0], b[1]])))
            .collect(),
        _ => bytemuck::pod_collect_to_vec(bytes),
    }
}
