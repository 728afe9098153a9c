//! `bitonic::partition` against a straightforward CPU model: each key's range by counting
//! the splitters below it, and a stable filter per range.

use bitonic::Order;
use bitonic::partition::{Partition, Splitters, counts, ordered_bits, sample, scatter};
use libtest_mimic::{Failed, Trial};

use crate::support::{Pattern, TestKey, expected, input_seed, rng_for};

/// Lengths of every model trial: tiny ones, around the 2^16 keys of a scatter block, and one
/// of several blocks.
const LENGTHS: [usize; 12] = [
    0, 1, 2, 3, 17, 1000, 1025, 65_535, 65_536, 65_537, 131_073, 100_003,
];
/// Range counts asked for.
const RANGES: [usize; 5] = [1, 2, 3, 8, 64];
/// The most keys that the model runs with 64 ranges (its count is linear in the splitters).
const MANY_RANGES_UP_TO: usize = 70_000;

/// How the keys of a model trial are laid out: the suite's patterns, and one key nine times
/// in ten.
#[derive(Clone, Copy, Debug)]
enum Layout {
    Suite(Pattern),
    Skewed,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::Suite(p) => p.name(),
            Layout::Skewed => "skewed",
        }
    }

    fn keys<K: TestKey>(self, n: usize, seed: u64) -> Vec<K> {
        let mut rng = rng_for(seed);
        match self {
            Layout::Suite(p) => p.keys(n, &mut rng),
            Layout::Skewed => {
                let mut keys: Vec<K> = Pattern::Random.keys(n, &mut rng);
                for i in 0..n {
                    if i % 10 != 3 {
                        keys[i] = keys[0];
                    }
                }
                keys
            }
        }
    }
}

/// The model's range of a key: twice the splitters below it, plus one when it equals one.
fn model_range(splitters: &[u64], bits: u64) -> usize {
    let below = splitters.iter().filter(|&&s| s < bits).count();
    2 * below + usize::from(splitters.contains(&bits))
}

fn fail(what: String) -> Failed {
    what.into()
}

/// One input in one order with `ranges` ranges: everything the partitioner computes equals
/// the model, and every range that needs a sort stays within its bound.
fn check<K: TestKey>(keys: &[K], ranges: usize, order: Order, at: &str) -> Result<(), Failed> {
    let n = keys.len();
    let descending = order == Order::Descending;
    // Ordered bits follow the reference order, and equal bits mean equal keys.
    let want = expected(keys, descending);
    for w in want.windows(2) {
        let (a, b) = (ordered_bits(w[0], order), ordered_bits(w[1], order));
        if a > b || (a == b) != (w[0].bits() == w[1].bits()) {
            return Err(fail(format!(
                "{at}: ordered bits out of order at {:?} {:?}",
                w[0], w[1]
            )));
        }
    }
    let sample_len = (ranges * bitonic::partition::OVERSAMPLING).max(1024);
    let drawn = sample(keys, sample_len, order, 7);
    if !drawn.is_sorted() || drawn.len() != sample_len.min(n) {
        return Err(fail(format!(
            "{at}: the sample is unsorted or {} long",
            drawn.len()
        )));
    }
    let splitters = Splitters::choose(keys, ranges, order);
    let bits = splitters.bits();
    if bits.windows(2).any(|w| w[0] >= w[1]) || bits.len() + 1 > ranges.max(1) {
        return Err(fail(format!(
            "{at}: {} splitters, not strictly ascending or too many",
            bits.len()
        )));
    }
    if splitters.ranges() != 2 * bits.len() + 1 {
        return Err(fail(format!(
            "{at}: {} ranges of {} splitters",
            splitters.ranges(),
            bits.len()
        )));
    }
    let model: Vec<usize> = keys
        .iter()
        .map(|&k| model_range(bits, ordered_bits(k, order)))
        .collect();
    for (i, (&k, &r)) in keys.iter().zip(&model).enumerate() {
        if splitters.range_of(k, order) != r {
            return Err(fail(format!(
                "{at}: key {i} ({k:?}) in range {}, model {r}",
                splitters.range_of(k, order)
            )));
        }
    }
    let mut model_counts = vec![0usize; splitters.ranges()];
    for &r in &model {
        model_counts[r] += 1;
    }
    let got_counts = counts(keys, &splitters, order);
    if got_counts != model_counts {
        return Err(fail(format!(
            "{at}: counts {got_counts:?}, model {model_counts:?}"
        )));
    }
    // Bound: with every key sampled, ceil(n / p) keys lie strictly between two picks; with a
    // sample, twice that is exceeded with a probability below 1e-9.
    let share = n.div_ceil(ranges.max(1));
    let bound = if n <= sample_len { share } else { 2 * share };
    for (r, &c) in model_counts.iter().enumerate() {
        if !Splitters::is_single_key(r) && c > bound {
            return Err(fail(format!(
                "{at}: range {r} holds {c} keys, above its bound {bound}"
            )));
        }
    }
    // The scatter, keys and positions as values: range by range, in input order.
    let positions: Vec<u32> = (0..n as u32).collect();
    let (mut out_keys, mut out_positions) = (keys.to_vec(), vec![u32::MAX; n]);
    let partition = scatter(
        keys,
        Some(&positions),
        &splitters,
        order,
        &mut out_keys,
        Some(&mut out_positions),
    )?;
    if partition != Partition::from_counts(&model_counts) || partition.len() != n {
        return Err(fail(format!(
            "{at}: partition {partition:?} against counts {model_counts:?}"
        )));
    }
    let mut at_out = 0;
    for r in 0..splitters.ranges() {
        for i in (0..n).filter(|&i| model[i] == r) {
            if out_positions[at_out] as usize != i || out_keys[at_out].bits() != keys[i].bits() {
                return Err(fail(format!(
                    "{at}: output {at_out} holds input {} ({:?}), the model's is {i} ({:?})",
                    out_positions[at_out], out_keys[at_out], keys[i]
                )));
            }
            at_out += 1;
        }
    }
    // Keys alone give the same keys.
    let mut alone = vec![
        keys.first()
            .copied()
            .unwrap_or_else(|| bytemuck::Zeroable::zeroed());
        n
    ];
    scatter(keys, None::<&[u32]>, &splitters, order, &mut alone, None)?;
    if alone
        .iter()
        .zip(&out_keys)
        .any(|(a, b)| a.bits() != b.bits())
    {
        return Err(fail(format!(
            "{at}: the scatter of keys alone differs from that of pairs"
        )));
    }
    Ok(())
}

/// Every length, range count and order of one key type and layout.
fn model_trial<K: TestKey>(layout: Layout) -> Trial {
    let name = format!("partition::model::{}::{}", K::NAME, layout.name());
    Trial::test(name.clone(), move || {
        for n in LENGTHS {
            let keys: Vec<K> = layout.keys(n, input_seed(crate::support::DEFAULT_SEED, &name, n));
            for ranges in RANGES {
                if ranges > 8 && n > MANY_RANGES_UP_TO {
                    continue;
                }
                for order in [Order::Ascending, Order::Descending] {
                    check(
                        &keys,
                        ranges,
                        order,
                        &format!("n {n}, {ranges} ranges, {order:?}"),
                    )?;
                }
            }
        }
        Ok(())
    })
}

/// Malformed calls fail before anything is written.
fn errors() -> Result<(), Failed> {
    if Splitters::from_bits(vec![3, 3]).is_ok() || Splitters::from_bits(vec![4, 2]).is_ok() {
        return Err(fail("splitters out of order were accepted".to_string()));
    }
    let splitters = Splitters::from_bits(vec![5])?;
    let keys = [1u32, 9, 5];
    let mut short = [7u32; 2];
    if scatter(
        &keys,
        None::<&[u32]>,
        &splitters,
        Order::Ascending,
        &mut short,
        None,
    )
    .is_ok()
        || short != [7; 2]
    {
        return Err(fail(
            "a scatter into a short output was not refused untouched".to_string(),
        ));
    }
    let mut out = [7u32; 3];
    let mut out_values = [7u32; 2];
    let refused = scatter(
        &keys,
        Some(&[1u32, 2, 3][..]),
        &splitters,
        Order::Ascending,
        &mut out,
        Some(&mut out_values[..]),
    );
    if refused.is_ok() || out != [7; 3] {
        return Err(fail(
            "a scatter into a short value output was not refused untouched".to_string(),
        ));
    }
    let partition = scatter(
        &keys,
        None::<&[u32]>,
        &splitters,
        Order::Ascending,
        &mut out,
        None,
    )?;
    if out != [1, 5, 9] || partition.ranges() != 3 || partition.range(1) != (1..2) {
        return Err(fail(format!(
            "scatter of [1, 9, 5] around 5: {out:?}, {partition:?}"
        )));
    }
    Ok(())
}

/// Registers the model trials.
pub fn register(trials: &mut Vec<Trial>) {
    let layouts: Vec<Layout> = Pattern::ALL
        .into_iter()
        .map(Layout::Suite)
        .chain([Layout::Skewed])
        .collect();
    for &layout in &layouts {
        trials.push(model_trial::<u32>(layout));
        trials.push(model_trial::<i64>(layout));
        trials.push(model_trial::<f32>(layout));
        trials.push(model_trial::<f64>(layout));
        trials.push(model_trial::<u8>(layout));
        trials.push(model_trial::<i16>(layout));
    }
    trials.push(Trial::test("partition::errors", errors));
}
