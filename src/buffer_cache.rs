//! The device buffers that sorts of host slices keep for the next sort. The CUDA and OpenCL
//! backends each keep their own buffer type; how the buffers grow, and when kept buffers are
//! given up, is decided here once for both.

use crate::error::{Error, Result};

/// A backend's device buffer, as far as keeping it is concerned.
pub(crate) trait DeviceBytes {
    /// Its size in bytes.
    fn byte_len(&self) -> usize;
}

/// The key and value buffers kept from earlier sorts, and the merge passes' scratch; each is
/// as large as the largest sort so far needed, and a sort uses its first bytes.
pub(crate) struct BufferCache<B> {
    pub(crate) keys: Option<B>,
    pub(crate) values: Option<B>,
    /// The merge passes' second buffer for keys, values and the splitters of output tiles.
    pub(crate) scratch: Scratch<B>,
}

/// The buffers that merge passes write into and read from besides the data.
pub(crate) struct Scratch<B> {
    pub(crate) keys: Option<B>,
    pub(crate) values: Option<B>,
    pub(crate) splits: Option<B>,
}

impl<B> Default for Scratch<B> {
    fn default() -> Self {
        Scratch {
            keys: None,
            values: None,
            splits: None,
        }
    }
}

impl<B> Default for BufferCache<B> {
    fn default() -> Self {
        BufferCache {
            keys: None,
            values: None,
            scratch: Scratch::default(),
        }
    }
}

impl<B: DeviceBytes> BufferCache<B> {
    /// Bytes of device memory kept.
    pub(crate) fn bytes(&self) -> u64 {
        total_bytes([&self.keys, &self.values]) + self.scratch.bytes()
    }

    /// Runs `fill`, which grows and fills the buffers for one sort. When it runs out of
    /// device memory while buffers kept from earlier sorts exist, those may be what is in
    /// the way: all are freed and `fill` runs once more.
    pub(crate) fn fill<T>(&mut self, mut fill: impl FnMut(&mut Self) -> Result<T>) -> Result<T> {
        let first = fill(self);
        if matches!(first, Err(Error::OutOfMemory { .. })) && self.bytes() > 0 {
            *self = BufferCache::default();
            return fill(self);
        }
        first
    }
}

/// Bytes of the buffers present in `slots`.
fn total_bytes<'a, B: DeviceBytes + 'a>(slots: impl IntoIterator<Item = &'a Option<B>>) -> u64 {
    slots
        .into_iter()
        .flatten()
        .map(|b| b.byte_len() as u64)
        .sum()
}

/// The buffer in `slot`, replaced by a new one of `len` bytes from `alloc` when it is
/// missing or shorter; the old buffer is freed first, so the two never hold memory at once.
pub(crate) fn grow<B: DeviceBytes>(
    slot: &mut Option<B>,
    len: usize,
    alloc: impl FnOnce(usize) -> Result<B>,
) -> Result<&mut B> {
    if slot.as_ref().is_none_or(|b| b.byte_len() < len) {
        *slot = None;
        return Ok(slot.insert(alloc(len)?));
    }
    let Some(buffer) = slot.as_mut() else {
        unreachable!("a missing buffer was allocated above")
    };
    Ok(buffer)
}

// Only the GPU backends run merge passes.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
impl<B: DeviceBytes> Scratch<B> {
    /// Bytes of device memory held.
    pub(crate) fn bytes(&self) -> u64 {
        total_bytes([&self.keys, &self.values, &self.splits])
    }

    /// Grows the scratch to `keys`, `values` (0: none) and `splits` bytes. Out of device
    /// memory it frees what it holds and returns `false`: the network, which sorts in place,
    /// sorts instead.
    pub(crate) fn grow(
        &mut self,
        keys: usize,
        values: usize,
        splits: usize,
        mut alloc: impl FnMut(usize) -> Result<B>,
    ) -> Result<bool> {
        let mut grown = grow(&mut self.keys, keys, &mut alloc).map(|_| ());
        if grown.is_ok() && values > 0 {
            grown = grow(&mut self.values, values, &mut alloc).map(|_| ());
        }
        if grown.is_ok() {
            grown = grow(&mut self.splits, splits, &mut alloc).map(|_| ());
        }
        match grown {
            Ok(()) => Ok(true),
            Err(Error::OutOfMemory { .. }) => {
                *self = Scratch::default();
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}
