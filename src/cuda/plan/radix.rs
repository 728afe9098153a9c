//! The radix sort's launches (`cuda/radix.cuh`) from the neutral plan
//! (`crate::schedule::radix`), and what the device offers it: how many keys a thread holds
//! and from which length keys alone take it.

use super::{DeviceLimits, POLICY, Widths};
use crate::kernel_contract::{RADIX_CUDA_KEYS_PER_THREAD, RADIX_DIGIT_BITS, RADIX_THREADS};
use crate::schedule::plan::RadixFacts;
use crate::schedule::radix::RadixPlan;

/// The radix sort's launches: the state's header and first look-back region cleared,
/// `radix_histogram_<key>` (`histogram_blocks` blocks), `radix_starts` (a block per digit),
/// `radix_pass_<key>_<value>` per digit (a block per tile, with [`Self::pass_shared_bytes`]
/// of dynamic shared memory) and `radix_copy_back_<key>_<value>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RadixLaunches {
    /// The neutral plan.
    pub plan: RadixPlan,
    /// `ENCODING_*` bits.
    pub encoding: u32,
    /// Bytes of a value: 0, 4 or 8.
    pub value_bytes: u64,
    /// Blocks of the histogram and of the copy back.
    pub histogram_blocks: u32,
    /// Tests only: [`DeviceLimits::radix_delay`].
    pub delay: u32,
}

impl RadixLaunches {
    /// The launches of `plan` on a device with these limits.
    pub(super) fn new(
        limits: &DeviceLimits,
        plan: RadixPlan,
        value_bytes: u64,
        encoding: u32,
    ) -> Self {
        RadixLaunches {
            plan,
            encoding,
            value_bytes,
            histogram_blocks: Self::histogram_blocks_for(limits, plan.n),
            delay: limits.radix_delay,
        }
    }

    /// Blocks of the histogram of `n` keys: the policy's number per multiprocessor, fewer
    /// where the keys do not give each thread a load.
    pub(in crate::cuda) fn histogram_blocks_for(limits: &DeviceLimits, n: u64) -> u32 {
        let reads = n.div_ceil(u64::from(RADIX_THREADS) * 8).max(1);
        let most = u64::from(limits.multiprocessors * POLICY.radix_histogram_blocks_per_sm);
        reads.min(most).max(1) as u32
    }

    /// The index of the value width among the kernels' (`none`, `u32`, `u64`).
    pub(crate) fn value_index(&self) -> usize {
        match self.value_bytes {
            0 => 0,
            4 => 1,
            _ => 2,
        }
    }

    /// The widths of the keys and values sorted.
    pub(crate) fn widths(&self) -> Widths {
        Widths {
            key: u64::from(self.plan.digits * RADIX_DIGIT_BITS / 8),
            value: self.value_bytes,
        }
    }

    /// Dynamic shared memory of a digit pass: its tile's keys, which its values take in
    /// turn once the keys have left.
    pub(crate) fn pass_shared_bytes(&self) -> u32 {
        (self.plan.tile() * tile_word_bytes(self.widths())) as u32
    }
}

/// Bytes a key of a digit pass's tile takes in shared memory: the wider of a key and a
/// value, since the values take the keys' place once the keys have left.
fn tile_word_bytes(widths: Widths) -> u64 {
    widths.key.max(widths.value)
}

/// Shared memory of a radix digit pass beyond its tile: the warps' places of each bin, the
/// bins' bases and a few words, rounded up.
const RADIX_STATIC_SHARED_BYTES: u64 = 12 * 1024;

/// The keys a thread of the digit pass for these widths holds (the pass is compiled for
/// it), or `None` for widths without a pass.
pub(in crate::cuda) fn radix_keys_per_thread(widths: Widths) -> Option<u32> {
    let key = match widths.key {
        4 => 0,
        8 => 1,
        _ => return None,
    };
    let value = match widths.value {
        0 => 0,
        4 => 1,
        8 => 2,
        _ => return None,
    };
    Some(RADIX_CUDA_KEYS_PER_THREAD[key][value])
}

/// How this device runs the radix sort for these widths: `u32` and `u64` keys, alone or
/// with values of 4 or 8 bytes, where the shared memory of a block holds the pass's tile.
pub(in crate::cuda) fn radix_facts(limits: &DeviceLimits, widths: Widths) -> Option<RadixFacts> {
    let keys_per_thread = radix_keys_per_thread(widths)?;
    let tile_bytes = u64::from(RADIX_THREADS * keys_per_thread) * tile_word_bytes(widths);
    (tile_bytes + RADIX_STATIC_SHARED_BYTES <= u64::from(limits.shared_bytes_per_block)).then(
        || RadixFacts {
            keys_per_thread,
            from: limits
                .radix_from
                .unwrap_or(POLICY.radix_from[usize::from(widths.key == 8)]),
        },
    )
}
