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

use crate::exec::{BitonicSortExec, key_columns};

/// A physical optimizer rule: every `SortExec` whose sort expressions are all plain columns
/// of a type [`bitonic::arrow`] sorts, over a bounded input, becomes a [`BitonicSortExec`]
/// with the same expressions, `fetch` and `preserve_partitioning`. Every other `SortExec`
/// stays. Meant to run after DataFusion's own rules ([`crate::register`] adds it there).
///
/// With combined partitions (the default), a full sort of several partitions, planned as a
/// `SortPreservingMergeExec` over per-partition sorts, becomes one [`BitonicSortExec`] over a
/// `CoalescePartitionsExec`: the partitions are still read in parallel, then sorted in one
/// call instead of sorted apart and merged row by row on one thread. Top-k sorts (`fetch`)
/// stay per partition, where each keeps only `k` rows and the merge is small.
#[derive(Debug)]
pub struct BitonicSortRule {
    sorter: Arc<Sorter>,
    combine_partitions: bool,
}

impl BitonicSortRule {
    /// The rule that hands sorts to `sorter`, partitions combined.
    pub fn new(sorter: Arc<Sorter>) -> Self {
        Self {
            sorter,
            combine_partitions: true,
        }
    }

    /// Whether full sorts of several partitions become one sort of all rows (`true`, the
    /// default) or stay sorts per partition merged by DataFusion (`false`: in Ballista, that
    /// keeps each executor sorting its own partitions).
    pub fn with_combined_partitions(mut self, combine: bool) -> Self {
        self.combine_partitions = combine;
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
    }

    /// The replacement for `sort`, or `None` where it stays.
    fn replacement(&self, sort: &SortExec) -> Option<BitonicSortExec> {
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
            sort.fetch(),
            Arc::clone(&self.sorter),
        )
        .ok()
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
