//! The host side of a sort over several GPUs, printed beside the `--gpus` rows: the public
//! partitioner timed alone on the measured keys.

use std::time::Instant;

use bitonic::Order;

use super::{ScalingKey, ScalingValue};
use crate::common::size_label;

/// The largest input whose host partition [`print`] times.
const PARTITION_PHASES_MAX: usize = 1 << 31;

/// Prints the phases of the host partition of `keys` (and `values`) as [`time_phases`] measures
/// them, or that they were not timed past [`PARTITION_PHASES_MAX`] keys.
pub(super) fn print<K: ScalingKey, V: ScalingValue>(keys: &[K], values: Option<&[V]>) {
    if keys.len() <= PARTITION_PHASES_MAX {
        time_phases(keys, values);
    } else {
        println!(
            "-- host partition of {}: not timed (past {}, six passes over the data take \
             longer than the sorts)",
            size_label(keys.len()),
            size_label(PARTITION_PHASES_MAX)
        );
    }
}

/// Prints the host side of a sort over several GPUs, timed on its own with the public
/// partitioner (16 ranges, the sorter's seed aside): the sample and splitters, the stable
/// scatter into a new buffer (whose pages are first touched by the scatter, as in a sort),
/// and the same scatter into a buffer already touched; each the median of three.
fn time_phases<K: ScalingKey, V: ScalingValue>(keys: &[K], values: Option<&[V]>) {
    use bitonic::partition::{self, Splitters};
    let ranges = 16;
    let time = |f: &mut dyn FnMut()| {
        let mut ms: Vec<f64> = (0..3)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        ms[1]
    };
    let mut splitters = None;
    let sample_ms = time(&mut || {
        let sample = partition::sample(keys, ranges * 1024, Order::Ascending, 7);
        splitters = Some(Splitters::from_sorted_sample(&sample, ranges));
    });
    let splitters = splitters.expect("timed at least once");
    let mut out_values: Option<Vec<V>> = values.map(|v| bytemuck::zeroed_vec(v.len()));
    let mut scatter = |out: &mut [K]| {
        let _ = partition::scatter(
            keys,
            values,
            &splitters,
            Order::Ascending,
            out,
            out_values.as_deref_mut(),
        );
    };
    // Zeroed pages from the allocator, first touched by the scatter, as in a sort.
    let fresh_ms = time(&mut || scatter(&mut bytemuck::zeroed_vec(keys.len())));
    let mut out: Vec<K> = keys.to_vec();
    let touched_ms = time(&mut || scatter(&mut out));
    println!(
        "-- host partition of {} keys ({} rayon threads): sample and splitters {sample_ms:.1} ms, \
         scatter into a new buffer {fresh_ms:.1} ms, into a touched buffer {touched_ms:.1} ms",
        size_label(keys.len()),
        rayon::current_num_threads()
    );
}
