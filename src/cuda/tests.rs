//! Tests of the cuda backend that need its internals: the launches of the network
//! (`launches.rs`) and of merge path (`merge_path.rs`), the scalar model of the tile kernels
//! that runs them (`kernel_model.rs`), the driver and the PTX (`device.rs`), and per-launch
//! timings (`profiles.rs`). The neutral plan's own tests are the schedule's.

use super::kernels::{CLUSTER_VALUE_NAMES, KEY_NAMES, VALUE_NAMES};
use super::plan::{MergePathPlan, PassKernel};
use super::*;
use crate::cpu::CpuBackend;
use crate::keys::KeyKind;
use cust::event::{Event, EventFlags};
use cust::memory::CopyDestination;

pub(super) mod step_timings;
pub(super) mod transfer_timings;

/// A large device of compute capability 9.0: 227 KiB of opt-in shared memory per block,
/// 132 multiprocessors, clusters.
const LARGE_GPU: DeviceLimits = DeviceLimits {
    shared_bytes_per_block: 232_448,
    max_grid_x: i32::MAX as u32,
    multiprocessors: 132,
    clusters: true,
    counting_from: plan::COUNTING_FROM,
    radix_from: None,
    radix_delay: 0,
};

/// A small deterministic generator.
pub(super) fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s ^ (s >> 29)
    }
}

/// The launches of the merge-path plan of one row of `n` elements of these widths on a
/// device of `limits`, where it has one.
fn one_row_merge_path(
    limits: &DeviceLimits,
    n: u64,
    widths: Widths,
    encoding: u32,
) -> Option<MergePathPlan> {
    let facts = plan::facts(limits, widths, None);
    crate::schedule::plan::merge_path_plan(&facts, n, widths)
        .map(|p| plan::merge_path_launches(limits, &p, widths, encoding))
}

#[cfg(feature = "cudarc")]
mod cudarc_buffers;
mod device;
mod device_argsort;
mod device_raw;
mod kernel_model;
mod launches;
mod merge_path;
mod profiles;
mod radix;
mod top_k;
