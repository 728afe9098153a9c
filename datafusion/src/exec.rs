//! [`BitonicSortExec`]: the execution plan node that sorts partitions with a [`Sorter`].

use std::fmt;
use std::sync::Arc;

use bitonic::Sorter;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{LexOrdering, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::CardinalityEffect;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties,
    PlanProperties, SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};

use crate::sort::{KeyColumn, PartitionSort, SortOutput};

/// Sorts its input with a [`Sorter`], returning exactly the rows, in exactly the order, of
/// the `SortExec` it replaces: by `expr`, each partition alone when `preserve_partitioning`
/// is set (else all rows together), the first `fetch` rows only when `fetch` is set. Every
/// sort expression is a column of a type [`bitonic::arrow`] sorts; [`BitonicSortExec::try_new`]
/// checks it.
///
/// Rows with equal keys may come in any order by SQL, and DataFusion orders them by how its
/// sorts and merges work, which no stable sort reproduces. So the sorter's result is kept
/// where no two neighbouring output rows have equal keys (then it is the only correct order,
/// so DataFusion's too), and otherwise, where some column is not a key, the same batches are
/// sorted again by DataFusion's own `SortExec` (with `SortPreservingMergeExec` over several
/// input partitions, in partition order), the plan this node stands for. The `ties_resorted`
/// metric counts those partitions; [`BitonicSortExec::with_stable_ties`] keeps the sorter's
/// stable order instead. Over several input partitions (directly or under a
/// `CoalescePartitionsExec`), each is read apart and its rows kept in their arrival order.
///
/// Where the session's memory pool refuses to hold a partition's rows, they go to
/// DataFusion's own sort (the batches read so far, then the rest of the input), which spills
/// to disk; the `fallbacks` metric counts it.
///
/// With `fetch`, the node collects and sorts its whole input, then keeps the first `fetch`
/// rows (checking the row past the cut for equal keys too): it holds the input, where
/// DataFusion's top-k holds `fetch` rows, which is why [`crate::BitonicSortRule`] leaves
/// top-k sorts to DataFusion and only plans built by hand (or decoded) carry one.
#[derive(Debug, Clone)]
pub struct BitonicSortExec {
    input: Arc<dyn ExecutionPlan>,
    expr: LexOrdering,
    keys: Arc<[KeyColumn]>,
    preserve_partitioning: bool,
    fetch: Option<usize>,
    stable_ties: bool,
    ranges: Ranges,
    sorter: Arc<Sorter>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl BitonicSortExec {
    /// The node that sorts `input` by `expr` with `sorter`. `preserve_partitioning` and
    /// `fetch` mean what they mean for `SortExec`.
    ///
    /// Without `preserve_partitioning` the node has one output partition; over an input of
    /// several (which DataFusion's planning never leaves, but a distributed planner may) it
    /// sorts them all together.
    ///
    /// Errors: a sort expression that is not a column of `input`'s schema, or a column of a
    /// type [`bitonic::arrow`] does not sort.
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        expr: LexOrdering,
        preserve_partitioning: bool,
        fetch: Option<usize>,
        sorter: Arc<Sorter>,
    ) -> Result<Self> {
        let keys = key_columns(&input, &expr)?;
        // SortExec computes the properties of exactly this sort (ordering, equivalences,
        // partitioning, emission, boundedness); reusing them keeps every rule that reads
        // them seeing the same plan.
        let sort = SortExec::new(expr.clone(), Arc::clone(&input))
            .with_preserve_partitioning(preserve_partitioning)
            .with_fetch(fetch);
        let properties = Arc::clone(sort.properties());
        Ok(Self {
            input,
            expr,
            keys: keys.into(),
            preserve_partitioning,
            fetch,
            stable_ties: false,
            ranges: Ranges::default(),
            sorter,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The same node with rows of equal keys in their input order (`true`): by input
    /// partition, then as each partition's rows arrived. The default
    /// (`false`) is DataFusion's own order of them, which takes DataFusion's sort of the
    /// rows again where equal keys show in the output.
    pub fn with_stable_ties(mut self, stable_ties: bool) -> Self {
        self.stable_ties = stable_ties;
        self
    }

    /// The same node with `ranges` for how a full sort of many rows splits into ranges of
    /// its first key ([`Ranges`]).
    pub fn with_ranges(mut self, ranges: Ranges) -> Self {
        self.ranges = ranges;
        self
    }

    /// How a full sort of many rows splits into ranges ([`BitonicSortExec::with_ranges`]).
    pub fn ranges(&self) -> Ranges {
        self.ranges
    }

    /// Whether rows of equal keys keep their input order ([`BitonicSortExec::with_stable_ties`]).
    pub fn stable_ties(&self) -> bool {
        self.stable_ties
    }

    /// The input plan.
    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }

    /// The sort expressions (columns), most significant first.
    pub fn expr(&self) -> &LexOrdering {
        &self.expr
    }

    /// Whether each partition is sorted alone (else the input has one partition).
    pub fn preserve_partitioning(&self) -> bool {
        self.preserve_partitioning
    }

    /// The sorter that runs the sorts.
    pub fn sorter(&self) -> &Arc<Sorter> {
        &self.sorter
    }
}

/// How a full sort (one without `fetch`) of many rows runs: as ranges of its first key, each
/// sorted on its own, in parallel, and laid end to end, instead of one sort of all rows.
/// The result is the same either way, rows of equal keys included: rows with equal first keys
/// share a range, and each range keeps its rows in their input order. The ranges come from a
/// sample of the first key (splitters of [`bitonic::partition`], each with a range of its own
/// for the rows equal to it, so that repeated keys do not unbalance the rest); nulls go to the
/// first or the last range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranges {
    /// The most ranges between splitters (each splitter adds a range of its own keys):
    /// `None` for the session's `target_partitions`; `Some(1)` sorts all rows at once.
    pub count: Option<usize>,
    /// The fewest rows a range between splitters should hold: a sort of fewer than
    /// `2 * min_rows` rows is one sort of all of them.
    pub min_rows: usize,
}

impl Default for Ranges {
    /// The session's `target_partitions` ranges, of at least 2^20 rows each.
    fn default() -> Self {
        Ranges {
            count: None,
            min_rows: 1 << 20,
        }
    }
}

/// The key columns of `expr` over `input`'s schema, or why `expr` is not sorted here.
pub(crate) fn key_columns(
    input: &Arc<dyn ExecutionPlan>,
    expr: &LexOrdering,
) -> Result<Vec<KeyColumn>> {
    let schema = input.schema();
    expr.iter()
        .map(|sort_expr| {
            let column = sort_expr.expr.downcast_ref::<Column>().ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "BitonicSortExec sorts by columns, not by {}",
                    sort_expr.expr
                ))
            })?;
            let field = schema.fields().get(column.index()).ok_or_else(|| {
                DataFusionError::Plan(format!("column {column} is not in the input schema"))
            })?;
            if field.name() != column.name() {
                return Err(DataFusionError::Plan(format!(
                    "column {column} does not match the input schema's {}",
                    field.name()
                )));
            }
            if !bitonic::arrow::is_supported(field.data_type()) {
                return Err(DataFusionError::Plan(format!(
                    "BitonicSortExec does not sort {} columns ({column})",
                    field.data_type()
                )));
            }
            Ok(KeyColumn {
                index: column.index(),
                options: sort_expr.options,
            })
        })
        .collect()
}

impl DisplayAs for BitonicSortExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(f, "BitonicSortExec: ")?;
                if let Some(fetch) = self.fetch {
                    write!(f, "TopK(fetch={fetch}), ")?;
                }
                write!(
                    f,
                    "expr=[{}], preserve_partitioning=[{}]",
                    self.expr, self.preserve_partitioning
                )?;
                if self.stable_ties {
                    write!(f, ", stable_ties=[true]")?;
                }
                if let Some(count) = self.ranges.count {
                    write!(f, ", ranges=[{count}]")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "{}", self.expr)?;
                if let Some(fetch) = self.fetch {
                    writeln!(f, "limit={fetch}")?;
                }
                Ok(())
            }
        }
    }
}

impl ExecutionPlan for BitonicSortExec {
    fn name(&self) -> &str {
        "BitonicSortExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        if self.preserve_partitioning {
            vec![Distribution::UnspecifiedDistribution]
        } else {
            vec![Distribution::SinglePartition]
        }
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        let mut recursion = TreeNodeRecursion::Continue;
        for sort_expr in self.expr.iter() {
            recursion = f(&sort_expr.expr)?;
            if recursion == TreeNodeRecursion::Stop {
                break;
            }
        }
        Ok(recursion)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(format!(
                "BitonicSortExec has one child, not {}",
                children.len()
            )));
        }
        Ok(Arc::new(
            Self::try_new(
                children.swap_remove(0),
                self.expr.clone(),
                self.preserve_partitioning,
                self.fetch,
                Arc::clone(&self.sorter),
            )?
            .with_stable_ties(self.stable_ties)
            .with_ranges(self.ranges),
        ))
    }

    fn fetch(&self) -> Option<usize> {
        self.fetch
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        Self::try_new(
            Arc::clone(&self.input),
            self.expr.clone(),
            self.preserve_partitioning,
            limit,
            Arc::clone(&self.sorter),
        )
        .ok()
        .map(|exec| {
            Arc::new(
                exec.with_stable_ties(self.stable_ties)
                    .with_ranges(self.ranges),
            ) as Arc<dyn ExecutionPlan>
        })
    }

    fn cardinality_effect(&self) -> CardinalityEffect {
        if self.fetch.is_some() {
            CardinalityEffect::LowerEqual
        } else {
            CardinalityEffect::Equal
        }
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let inputs = if self.preserve_partitioning {
            vec![self.input.execute(partition, Arc::clone(&context))?]
        } else {
            // The partitions under a `CoalescePartitionsExec` are read here, each apart, so
            // that the rows keep their partition: where equal keys make DataFusion's order
            // needed, that order depends on it (see `crate::sort`).
            let source = match self.input.downcast_ref::<CoalescePartitionsExec>() {
                Some(coalesce) if coalesce.fetch().is_none() => coalesce.input(),
                _ => &self.input,
            };
            (0..source.output_partitioning().partition_count())
                .map(|part| source.execute(part, Arc::clone(&context)))
                .collect::<Result<Vec<_>>>()?
        };
        let reservation = MemoryConsumer::new(format!("BitonicSortExec[{partition}]"))
            .register(context.memory_pool());
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let sort = PartitionSort {
            sorter: Arc::clone(&self.sorter),
            schema: self.schema(),
            expr: self.expr.clone(),
            keys: Arc::clone(&self.keys),
            fetch: self.fetch,
            stable_ties: self.stable_ties,
            batch_size: context.session_config().batch_size(),
            ranges: self
                .ranges
                .count
                .unwrap_or_else(|| context.session_config().target_partitions()),
            min_range_rows: self.ranges.min_rows,
            context,
            reservation,
            fallbacks: MetricBuilder::new(&self.metrics).counter("fallbacks", partition),
            ties_resorted: MetricBuilder::new(&self.metrics).counter("ties_resorted", partition),
            ranges_sorted: MetricBuilder::new(&self.metrics).counter("ranges_sorted", partition),
            sort_time: MetricBuilder::new(&self.metrics).subset_time("sort_time", partition),
        };
        let sorted = futures::stream::once(async move {
            let stream = match sort.run(inputs).await? {
                // Each batch's share of the reservation is released as it leaves.
                SortOutput::Held(batches, reservation) => futures::stream::iter(batches)
                    .map(move |batch| {
                        let size = batch.get_array_memory_size();
                        reservation.resize(reservation.size().saturating_sub(size));
                        Ok(batch)
                    })
                    .boxed(),
                SortOutput::Streamed(stream) => stream.boxed(),
            };
            let counted = stream.inspect_ok(move |batch| baseline.record_output(batch.num_rows()));
            Ok::<_, DataFusionError>(counted)
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            sorted,
        )))
    }
}
