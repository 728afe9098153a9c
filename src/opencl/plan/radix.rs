//! The radix sort's launches on OpenCL (`kernels/radix.clh`): pure functions from the
//! neutral [`RadixPlan`] and the program's limits.

use super::Limits;
use crate::kernel_contract::RADIX_THREADS;
use crate::schedule::plan::RadixFacts;
use crate::schedule::radix::RadixPlan;

/// Work items of every radix work-group: one per bin (`reqd_work_group_size` of the kernels).
pub(in crate::opencl) const RADIX_GROUP: usize = RADIX_THREADS as usize;

/// Keys a histogram work item reads at a time (`RADIX_HIST_E` of `kernels/radix.clh`).
const HISTOGRAM_KEYS_PER_ITEM: u64 = 16;

/// Work-groups of the histogram and of the copy back per compute unit: enough to fill a
/// unit, few enough that the histogram's global atomics (a word per bin and digit per
/// work-group) stay few.
const GROUPS_PER_UNIT: u64 = 8;

/// How the radix sort runs for keys of `key_bytes` and values of `value_bytes` with these
/// limits: keys of 4 or 8 bytes, alone or with values, where the program has the radix
/// kernels and they may run work-groups of [`RADIX_GROUP`]. (Pairs take it where the neutral
/// plan says, the same on every backend.)
pub(in crate::opencl) fn radix_facts(
    limits: &Limits,
    (key_bytes, value_bytes): (u64, u64),
) -> Option<RadixFacts> {
    (matches!(key_bytes, 4 | 8)
        && matches!(value_bytes, 0 | 4 | 8)
        && limits.radix_keys_per_thread != 0
        && limits.radix_group >= RADIX_GROUP)
        .then_some(RadixFacts {
            keys_per_thread: limits.radix_keys_per_thread,
            from: limits.radix_from[usize::from(key_bytes == 8)],
        })
}

/// The radix sort's launches: `radix_clear` (one work-group), `radix_histogram`
/// (`histogram_groups`), `radix_starts` (one), then per digit `radix_upsweep` (a work-group
/// per tile), `radix_scan` (one per bin) and `radix_downsweep` (one per tile), and
/// `radix_copy_back` (`copy_groups`); every work-group of [`RADIX_GROUP`] items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::opencl) struct RadixLaunches {
    /// The neutral plan; its `keys_per_thread` is the program's `RADIX_KPT`.
    pub plan: RadixPlan,
    /// Work-groups of the histogram.
    pub histogram_groups: usize,
    /// Work-groups of the copy back.
    pub copy_groups: usize,
}

impl RadixLaunches {
    /// The launches of `plan` with these limits.
    pub(in crate::opencl) fn new(limits: &Limits, plan: RadixPlan) -> RadixLaunches {
        let most = (u64::from(limits.compute_units) * GROUPS_PER_UNIT).max(1);
        let histogram = plan
            .n
            .div_ceil(RADIX_GROUP as u64 * HISTOGRAM_KEYS_PER_ITEM)
            .clamp(1, most);
        let copy = plan.n.div_ceil(RADIX_GROUP as u64).clamp(1, most);
        RadixLaunches {
            plan,
            histogram_groups: histogram as usize,
            copy_groups: copy as usize,
        }
    }
}
