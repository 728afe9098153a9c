//! Sorts past one device: the range partitioner (`bitonic::partition`) against a plain CPU
//! model, and host-slice sorts in ranges on every device this build can reach.
//!
//! - `partition::...`: splitters, each key's range, counts and the stable scatter of every
//!   key type equal the model's (a linear count over the splitters, a stable filter per
//!   range), on random and adversarial keys (sorted, all equal, three distinct, edge
//!   values, skewed), lengths 0-3 and around block sizes; no range that needs a sort holds
//!   more than its bound, however often keys repeat.
//! - `<target>::ranges::...`: sorts larger than a small `device_memory_limit`, so that they
//!   go through the partitioned path at small sizes (on the CPU backend too), and sorts on a
//!   sorter that names its device twice (`SorterBuilder::devices`), spread over both: keys
//!   exactly as the reference sort, pairs as the same multiset.
//! - `every_gpu::...` (machines with two CUDA devices or more; ignored elsewhere): host-slice
//!   sorts over every GPU through the spread sort and, under a memory limit, through the
//!   ranges in every GPU's memory, against the reference sort.
//! - `measure::...` (ignored; run with `--ignored` on a machine with GPUs): a host slice of
//!   `BITONIC_SCALING_LOG2` (default 30) `u32` keys on one GPU and on every GPU, timed, under
//!   a device memory limit of `BITONIC_SCALING_LIMIT` bytes where that is set.
//!
//! Targets and gating are the suite's (`support/targets.rs`).

#[path = "scaling/model.rs"]
mod model;
#[path = "scaling/ranges.rs"]
mod ranges;
#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use libtest_mimic::{Arguments, Trial};

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("scaling");
    let mut trials = found.failures;
    model::register(&mut trials);
    for slot in &found.slots {
        ranges::register(slot, &mut trials);
    }
    trials.push(Trial::test("measure::host_u32", ranges::measure).with_ignored_flag(true));
    // Runs where the machine has two CUDA devices or more; ignored (not passed) elsewhere.
    let gpus = targets::cuda_devices();
    trials.push(Trial::test("every_gpu::spread", ranges::every_gpu).with_ignored_flag(gpus < 2));
    trials.push(
        Trial::test(
            "every_gpu::in_device_memory",
            ranges::every_gpu_in_device_memory,
        )
        .with_ignored_flag(gpus < 2),
    );
    libtest_mimic::run(&args, trials).exit()
}
