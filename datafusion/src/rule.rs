//! [`BitonicSortRule`]: puts [`BitonicSortExec`] in the place of the `SortExec`s it can run.

use std::sync::Arc;

use bitonic::Sorter;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

use crate::exec::{BitonicSortExec, Ranges, key_columns};

/// A physical optimizer rule: every full `SortExec` (one without `fetch`) whose sort
/// expressions are all plain columns of a type [`bitonic::arrow`] sorts, over a bounded input,
/// becomes a [`BitonicSortExec`] with the same expressions and `preserve_partitioning`. Every
/// other `SortExec` stays. Meant to run after DataFusion's own rules ([`crate::register`]
/// adds it there).
///
/// A top-k (`SortExec` with `fetch`, from `ORDER BY ... LIMIT`) stays DataFusion's: which of
/// several rows with equal keys it keeps, and in which order it emits them, follow from its
/// heap's history and from a threshold its partitions share as they run (and push into the
/// scan), so only DataFusion's own top-k returns its rows; it is also one pass over the
/// input at memory speed, which a device sort of the input does not beat.
///
/// With combined partitions (the default), a full sort of several partitions, planned as a
/// `SortPreservingMergeExec` over per-partition sorts, becomes one [`BitonicSortExec`] over a
/// `CoalescePartitionsExec`: the partitions are still read in parallel, then sorted in one
/// call instead of sorted apart and merged row by row on one thread. The sort reads the
/// partitions under the `CoalescePartitionsExec` itself, so that where equal keys call for
/// DataFusion's order it can sort and merge them as DataFusion would (see
/// [`BitonicSortExec`]).
#[derive(Debug)]
pub struct BitonicSortRule {
    sorter: Arc<Sorter>,
    combine_partitions: bool,
    stable_ties: bool,
    ranges: Ranges,
}

impl BitonicSortRule {
    /// The rule that hands sorts to `sorter`, partitions combined.
    pub fn new(sorter: Arc<Sorter>) -> Self {
        Self {
            sorter,
            combine_partitions: true,
            stable_ties: false,
            ranges: Ranges::default(),
        }
    }

    /// Whether full sorts of several partitions become one sort of all rows (`true`, the
    /// default) or stay sorts per partition merged by DataFusion (`false`: in Ballista, that
    /// keeps each executor sorting its own partitions).
    pub fn with_combined_partitions(mut self, combine: bool) -> Self {
        self.combine_partitions = combine;
        self
    }

    /// Whether rows of equal keys come in their input order (`true`: by input partition, then
    /// as each partition's rows arrived, at the sorter's speed) or in
    /// DataFusion's own order (`false`, the default: where equal keys show in the output,
    /// DataFusion's sort runs over the rows again, so such sorts cost stock DataFusion's time
    /// and more). SQL leaves the order of equal rows open; the default returns exactly what
    /// stock DataFusion returns.
    pub fn with_stable_ties(mut self, stable: bool) -> Self {
        self.stable_ties = stable;
        self
    }

    /// How the full sorts it plans split many rows into ranges of their first key, each
    /// sorted on its own ([`Ranges`]; by default the session's `target_partitions` ranges of
    /// at least 2^20 rows). `Ranges { count: Some(1), .. }` turns ranges off.
    pub fn with_ranges(mut self, ranges: Ranges) -> Self {
        self.ranges = ranges;
        self
    }

    /// One sort of all partitions in the place of `merge`, where it merges per-partition
    /// full sorts of ours by the same keys; `None` where it stays.
    fn combined(&self, merge: &SortPreservingMergeExec) -> Option<BitonicSortExec> {
        let sort = merge.input().downcast_ref::<BitonicSortExec>()?;
        if !self.combine_partitions
            || merge.fetch().is_some()
            || sort.fetch().is_some()
            || !sort.preserve_partitioning()
            || merge.expr() != sort.expr()
        {
            return None;
        }
        let input: Arc<dyn ExecutionPlan> =
            Arc::new(CoalescePartitionsExec::new(Arc::clone(sort.input())));
        BitonicSortExec::try_new(
            input,
            sort.expr().clone(),
            false,
            None,
            Arc::clone(&self.sorter),
        )
        .ok()
        .map(|exec| {
            exec.with_stable_ties(self.stable_ties)
                .with_ranges(self.ranges)
        })
    }

    /// The replacement for `sort`, or `None` where it stays.
    fn replacement(&self, sort: &SortExec) -> Option<BitonicSortExec> {
        // A top-k's result among equal keys is its heap's and its shared threshold's (see
        // the rule's documentation): only DataFusion's own operator returns it.
        if sort.fetch().is_some() {
            return None;
        }
        let input = sort.input();
        // A sort over a stream that never ends can only emit in order if its input already
        // is; that is SortExec's business.
        if input.boundedness().is_unbounded() {
            return None;
        }
        // A sort whose input already has the order passes the rows through (or cuts them):
        // nothing to sort.
        if input
            .equivalence_properties()
            .ordering_satisfy(sort.expr().clone())
            .unwrap_or(true)
        {
            return None;
        }
        key_columns(input, sort.expr()).ok()?;
        BitonicSortExec::try_new(
            Arc::clone(input),
            sort.expr().clone(),
            sort.preserve_partitioning(),
            None,
            Arc::clone(&self.sorter),
        )
        .ok()
        .map(|exec| {
            exec.with_stable_ties(self.stable_ties)
                .with_ranges(self.ranges)
        })
    }
}

impl PhysicalOptimizerRule for BitonicSortRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let replacement = match node.downcast_ref::<SortExec>() {
                Some(sort) => self.replacement(sort),
                None => node
                    .downcast_ref::<SortPreservingMergeExec>()
                    .and_then(|merge| self.combined(merge)),
            };
            Ok(match replacement {
                Some(exec) => Transformed::yes(Arc::new(exec) as Arc<dyn ExecutionPlan>),
                None => Transformed::no(node),
            })
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "bitonic_sort"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
