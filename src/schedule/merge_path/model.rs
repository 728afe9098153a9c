//! The scalar model of merge path: the exact splitters of an output rank ([`split`]) and a
//! sort that merges tile by tile through them ([`emulate`]), the reference that the
//! kernels of this design are tested against.

use super::MergePlan;

/// How many keys of each run come first in the `rank` smallest of all `runs` (each sorted
/// ascending): the splitters of output rank `rank`. Equal keys count as smaller in a lower
/// run, and earlier in the same run, so merging the runs' prefixes and suffixes at these
/// splitters is stable. `rank` beyond the total is the total.
///
/// The search bisects the key's bits as a kernel would (one binary search per run and step),
/// then hands the remaining ties to the runs in order.
pub(crate) fn split(runs: &[&[u64]], rank: u64) -> Vec<u64> {
    let below = |v: u64| -> u64 {
        runs.iter()
            .map(|r| r.partition_point(|&k| k < v) as u64)
            .sum()
    };
    let at_most = |v: u64| -> u64 {
        runs.iter()
            .map(|r| r.partition_point(|&k| k <= v) as u64)
            .sum()
    };
    let total: u64 = runs.iter().map(|r| r.len() as u64).sum();
    if rank >= total {
        return runs.iter().map(|r| r.len() as u64).collect();
    }
    // The smallest key v with more than `rank` keys at or below it: the key at `rank`.
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if at_most(mid) > rank {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let mut left = rank - below(lo);
    runs.iter()
        .map(|r| {
            let start = r.partition_point(|&k| k < lo);
            let equal = r[start..].partition_point(|&k| k <= lo) as u64;
            let take = left.min(equal);
            left -= take;
            start as u64 + take
        })
        .collect()
}

/// Sorts `keys` (and moves `values` with them) as the merge-path design does: every tile
/// sorted on its own (stably), then each pass of `plan` merging its groups of runs output
/// tile by output tile, each tile taking the parts of the runs between its two ranks'
/// [`split`]s. The result equals a stable sort by key.
pub(crate) fn emulate<V: Copy>(keys: &mut [u64], values: &mut [V], plan: MergePlan) {
    assert_eq!(keys.len(), values.len(), "keys and values differ in length");
    let n = keys.len();
    let tile = 1usize << plan.log_tile;
    let mut pairs: Vec<(u64, V)> = keys.iter().copied().zip(values.iter().copied()).collect();
    for t in pairs.chunks_mut(tile) {
        t.sort_by_key(|p| p.0);
    }
    for pass in plan.passes() {
        let run = 1usize << pass.log_run;
        let group = run << pass.log_ways;
        let mut out = Vec::with_capacity(n);
        for g in (0..n).step_by(group) {
            let members: Vec<&[(u64, V)]> = (g..(g + group).min(n))
                .step_by(run)
                .map(|r| &pairs[r..(r + run).min(n)])
                .collect();
            let run_keys: Vec<Vec<u64>> = members
                .iter()
                .map(|m| m.iter().map(|p| p.0).collect())
                .collect();
            let run_refs: Vec<&[u64]> = run_keys.iter().map(Vec::as_slice).collect();
            let len = group.min(n - g) as u64;
            let mut from = split(&run_refs, 0);
            for end in (tile as u64..=len)
                .step_by(tile)
                .chain((!len.is_multiple_of(tile as u64)).then_some(len))
            {
                let to = split(&run_refs, end);
                merge_parts(&members, &from, &to, &mut out);
                from = to;
            }
        }
        pairs = out;
    }
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        keys[i] = k;
        values[i] = v;
    }
}

/// Appends the stable merge of `members[j][from[j]..to[j]]` to `out`.
fn merge_parts<V: Copy>(
    members: &[&[(u64, V)]],
    from: &[u64],
    to: &[u64],
    out: &mut Vec<(u64, V)>,
) {
    let mut at: Vec<usize> = from.iter().map(|&f| f as usize).collect();
    loop {
        // The lowest run whose next key is smallest.
        let next = (0..members.len())
            .filter(|&j| at[j] < to[j] as usize)
            .min_by_key(|&j| (members[j][at[j]].0, j));
        let Some(j) = next else { break };
        out.push(members[j][at[j]]);
        at[j] += 1;
    }
}
