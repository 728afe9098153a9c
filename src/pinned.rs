//! Host buffers in page-locked (pinned) memory, for callers whose data can live there.
//!
//! A sort of ordinary host slices stages every byte through the sorter's pinned ring
//! (`crate::host_transfer`): one host copy each way, which on a machine whose host copies run
//! near the bus speed doubles the time the data spends in transit. Data already in pinned
//! memory of the sorter's device needs no staging: the bus reads and writes it directly, and
//! the host copies nothing. [`crate::Sorter::pinned_buffer`] hands out such memory as a
//! [`PinnedBuffer`], which dereferences to a slice; any sort of a slice inside it (keys,
//! values, rows, argsort, stable sorts) takes the direct path.
//!
//! The engine recognizes such slices by address: every live pinned buffer is listed here with
//! the driver context it belongs to, and a backend copies directly only from and to buffers
//! of its own context. Any other slice, pinned elsewhere or not, is staged as before.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::error::{Error, Result};

/// Page-locked host memory that a GPU backend allocated for a caller's buffer. Its contents
/// need not be initialized: [`PinnedBuffer`] writes zeros over all of it before any read.
/// A backend outside this crate has none to give (the default of
/// `Backend::alloc_pinned`); its buffers are ordinary memory.
pub trait PinnedMemory: Send + Sync {
    /// The memory's bytes.
    fn bytes(&self) -> &[u8];
    /// The memory's bytes, mutable.
    fn bytes_mut(&mut self) -> &mut [u8];
    /// The driver context whose copies reach this memory at bus speed, as a number that no
    /// other live context has (its handle).
    fn owner(&self) -> u64;
}

/// Every live pinned buffer: (first byte's address, bytes, owner).
static LIVE: Mutex<Vec<(usize, usize, u64)>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<(usize, usize, u64)>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether all of `bytes` lies in one live pinned buffer of context `owner`.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) fn is_pinned_for(owner: u64, bytes: &[u8]) -> bool {
    if bytes.is_empty() {
        return false;
    }
    let start = bytes.as_ptr() as usize;
    let end = start + bytes.len();
    live()
        .iter()
        .any(|&(at, len, o)| o == owner && at <= start && end <= at + len)
}

/// Pinned memory listed in [`LIVE`] for as long as it exists: the entry goes before the
/// memory is freed (fields drop after `Drop::drop`).
struct Listed(Box<dyn PinnedMemory>);

impl Listed {
    fn new(memory: Box<dyn PinnedMemory>) -> Listed {
        let bytes = memory.bytes();
        live().push((bytes.as_ptr() as usize, bytes.len(), memory.owner()));
        Listed(memory)
    }
}

impl Drop for Listed {
    fn drop(&mut self) {
        let at = self.0.bytes().as_ptr() as usize;
        live().retain(|&(a, _, _)| a != at);
    }
}

/// Where a buffer's elements live.
enum Storage<T> {
    /// Ordinary memory: the sorter's backend has no pinned memory (the CPU), or the buffer
    /// is empty.
    Heap(Vec<T>),
    /// Pinned memory holding exactly `len` elements, aligned for `T` (checked when made).
    Pinned {
        memory: Listed,
        len: usize,
        elements: PhantomData<T>,
    },
}

/// A fixed-length buffer of `T` in pinned host memory of a sorter's device, zero-filled when
/// made; it dereferences to `[T]`. Sorting a slice inside it with the sorter that made it
/// (or another sorter on the same CUDA device) moves the data over the bus with no host
/// copy: see [`crate::Sorter::pinned_buffer`]. The memory stays valid when the sorter is
/// dropped first.
pub struct PinnedBuffer<T: bytemuck::Pod> {
    storage: Storage<T>,
}

impl<T: bytemuck::Pod> PinnedBuffer<T> {
    /// `len` zeros in `memory` (`None`: in ordinary memory), or why `memory` cannot hold
    /// them.
    pub(crate) fn new(memory: Option<Box<dyn PinnedMemory>>, len: usize) -> Result<Self> {
        let Some(mut memory) = memory else {
            return Ok(PinnedBuffer {
                storage: Storage::Heap(vec![T::zeroed(); len]),
            });
        };
        // On rayon's threads: pinned buffers can be GiBs.
        memory
            .bytes_mut()
            .par_chunks_mut(4 << 20)
            .for_each(|piece| piece.fill(0));
        let bytes = memory.bytes();
        if bytemuck::try_cast_slice::<u8, T>(bytes).map(<[T]>::len) != Ok(len) {
            return Err(Error::Unsupported(format!(
                "pinned memory at {:p} of {} bytes cannot hold {len} elements of {} bytes \
                 aligned to {}",
                bytes.as_ptr(),
                bytes.len(),
                std::mem::size_of::<T>(),
                std::mem::align_of::<T>()
            )));
        }
        Ok(PinnedBuffer {
            storage: Storage::Pinned {
                memory: Listed::new(memory),
                len,
                elements: PhantomData,
            },
        })
    }

    /// Whether the elements are in pinned memory (false on the CPU backend, and for empty
    /// buffers).
    pub fn is_pinned(&self) -> bool {
        matches!(self.storage, Storage::Pinned { .. })
    }
}

impl<T: bytemuck::Pod> Deref for PinnedBuffer<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.storage {
            Storage::Heap(v) => v,
            // The cast cannot fail: `new` checked size and alignment.
            Storage::Pinned { memory, len, .. } => &bytemuck::cast_slice(memory.0.bytes())[..*len],
        }
    }
}

impl<T: bytemuck::Pod> DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.storage {
            Storage::Heap(v) => v,
            Storage::Pinned { memory, len, .. } => {
                &mut bytemuck::cast_slice_mut(memory.0.bytes_mut())[..*len]
            }
        }
    }
}

impl<T: bytemuck::Pod + fmt::Debug> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("pinned", &self.is_pinned())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// `words` zeroed 8-byte words of heap memory posing as pinned memory of context `owner`.
#[cfg(test)]
pub(crate) fn fake_memory(words: usize, owner: u64) -> Box<dyn PinnedMemory> {
    Box::new(tests::FakePinned {
        words: vec![0; words],
        owner,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Heap bytes posing as pinned memory of context `owner`.
    pub(super) struct FakePinned {
        pub(super) words: Vec<u64>,
        pub(super) owner: u64,
    }

    impl PinnedMemory for FakePinned {
        fn bytes(&self) -> &[u8] {
            bytemuck::cast_slice(&self.words)
        }
        fn bytes_mut(&mut self) -> &mut [u8] {
            bytemuck::cast_slice_mut(&mut self.words)
        }
        fn owner(&self) -> u64 {
            self.owner
        }
    }

    fn fake(words: usize, owner: u64) -> Box<dyn PinnedMemory> {
        fake_memory(words, owner)
    }

    #[test]
    fn listed_while_alive_for_its_owner_only() {
        let mut buffer = PinnedBuffer::<u32>::new(Some(fake(8, 7001)), 16).unwrap();
        assert!(buffer.is_pinned());
        assert_eq!(&buffer[..], &[0u32; 16]);
        buffer[3] = 9;
        let bytes: &[u8] = bytemuck::cast_slice(&buffer[2..10]);
        assert!(is_pinned_for(7001, bytes));
        assert!(!is_pinned_for(7002, bytes));
        assert!(!is_pinned_for(7001, &[]));
        let outside = vec![0u8; 64];
        assert!(!is_pinned_for(7001, &outside));
        let whole: &[u8] = bytemuck::cast_slice(&buffer[..]);
        let (at, len) = (whole.as_ptr() as usize, whole.len());
        drop(buffer);
        assert!(!live().iter().any(|&(a, l, _)| a == at && l == len));
    }

    #[test]
    fn size_and_alignment_are_checked() {
        assert!(PinnedBuffer::<u32>::new(Some(fake(8, 7003)), 15).is_err());
        assert!(PinnedBuffer::<u64>::new(Some(fake(8, 7003)), 8).is_ok());
        let heap = PinnedBuffer::<u16>::new(None, 5).unwrap();
        assert!(!heap.is_pinned());
        assert_eq!(&heap[..], &[0u16; 5]);
    }
}
