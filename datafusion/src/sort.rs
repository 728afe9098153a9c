//! Sorting the rows of one output partition: collect the batches of its input partitions,
//! sort the rows by their key columns with the [`Sorter`], gather every column.
//!
//! Rows whose sort keys are all equal ("ties") leave SQL free to order them as it likes, and
//! DataFusion orders them by how its own operators happen to work: `SortExec` sorts each
//! partition with arrow's unstable `lexsort_to_indices` (per batch and merged, or all batches
//! at once, depending on their size), `SortPreservingMergeExec` interleaves equal rows of
//! different partitions round robin, and a top-k emits its heap. No stable sort reproduces
//! those orders. So a sort here is exact in two steps: the [`Sorter`] sorts, and where the
//! sorted rows have no two neighbours with equal keys the result is the only correct one and
//! therefore DataFusion's; where they do (and some column is not a key, so the order of equal
//! rows shows), the rows are sorted again by DataFusion's own plan for the same sort
//! (`SortExec`, with `SortPreservingMergeExec` over several input partitions) over the same
//! batches in the same order, which gives exactly DataFusion's result.

use std::sync::Arc;

use bitonic::Sorter;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::kernels::boolean::and;
use datafusion::arrow::compute::kernels::cmp::not_distinct;
use datafusion::arrow::compute::{
    SortColumn, SortOptions, concat, interleave_record_batch, take, take_record_batch,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::runtime::SpawnedTask;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::metrics::{Count, Time};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream, collect};
use futures::StreamExt;
use rayon::prelude::*;

/// One sort key: a column of the input schema and its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyColumn {
    /// The column's index in the input schema.
    pub index: usize,
    /// Its direction and where its nulls go.
    pub options: SortOptions,
}

/// Everything one output partition's sort needs.
pub(crate) struct PartitionSort {
    pub sorter: Arc<Sorter>,
    pub schema: SchemaRef,
    pub expr: LexOrdering,
    pub keys: Arc<[KeyColumn]>,
    pub fetch: Option<usize>,
    pub batch_size: usize,
    pub context: Arc<TaskContext>,
    pub reservation: MemoryReservation,
    /// Sorts the sorter failed, done by arrow's CPU sort instead.
    pub fallbacks: Count,
    /// Sorts whose rows had equal keys, ordered by DataFusion's own plan.
    pub ties_resorted: Count,
    /// Time spent sorting and gathering.
    pub sort_time: Time,
}

/// What the sorter's pass found.
enum Sorted {
    /// The sorted rows, in batches of at most `batch_size` rows.
    Unique(Vec<RecordBatch>),
    /// Neighbouring sorted rows with equal keys: DataFusion's own order is needed.
    Tied,
}

impl PartitionSort {
    /// Sorts all rows of `inputs` (the input partitions this output partition reads, in
    /// partition order); returns the sorted batches (at most `batch_size` rows each) and the
    /// reservation that accounts for them.
    pub async fn run(
        self,
        inputs: Vec<SendableRecordBatchStream>,
    ) -> Result<(Vec<RecordBatch>, MemoryReservation)> {
        // Each input partition's batches in their arrival order: DataFusion's sort of the
        // same rows sees them so, and the order of equal rows follows from it.
        let mut partitions: Vec<Vec<RecordBatch>> = vec![Vec::new(); inputs.len()];
        let mut tagged = futures::stream::select_all(
            inputs
                .into_iter()
                .enumerate()
                .map(|(partition, stream)| stream.map(move |batch| (partition, batch))),
        );
        let mut rows = 0usize;
        while let Some((partition, batch)) = tagged.next().await {
            let batch = batch?;
            // DataFusion's sort skips empty batches too.
            if batch.num_rows() == 0 {
                continue;
            }
            self.reservation.try_grow(batch.get_array_memory_size())?;
            rows += batch.num_rows();
            partitions[partition].push(batch);
        }
        if rows == 0 || self.fetch == Some(0) {
            self.reservation.free();
            return Ok((Vec::new(), self.reservation));
        }
        let batches: Vec<RecordBatch> = partitions.iter().flatten().cloned().collect();
        let (sorted, this) = self.blocking(move |this| this.sorted(&batches)).await?;
        match sorted {
            Sorted::Unique(sorted) => Ok((sorted, this.reservation)),
            Sorted::Tied => {
                this.ties_resorted.add(1);
                // DataFusion's sort reserves the batches itself.
                this.reservation.free();
                let sorted = {
                    let timer = this.sort_time.clone();
                    let _guard = timer.timer();
                    collect(this.datafusion_plan(partitions)?, Arc::clone(&this.context)).await?
                };
                let size = sorted.iter().map(RecordBatch::get_array_memory_size).sum();
                this.reservation.try_grow(size)?;
                Ok((sorted, this.reservation))
            }
        }
    }

    /// DataFusion's plan for this sort over `partitions`: `SortExec` (per partition, then
    /// `SortPreservingMergeExec`, where there are several), with this sort's keys and fetch.
    fn datafusion_plan(&self, partitions: Vec<Vec<RecordBatch>>) -> Result<Arc<dyn ExecutionPlan>> {
        let count = partitions.len();
        let source = MemorySourceConfig::try_new_exec(&partitions, Arc::clone(&self.schema), None)?;
        let sort = SortExec::new(self.expr.clone(), source)
            .with_preserve_partitioning(count > 1)
            .with_fetch(self.fetch);
        Ok(if count > 1 {
            Arc::new(
                SortPreservingMergeExec::new(self.expr.clone(), Arc::new(sort))
                    .with_fetch(self.fetch),
            )
        } else {
            Arc::new(sort)
        })
    }

    /// Runs `work` on a blocking thread: sorts and gathers of millions of rows would stall
    /// the async runtime's workers.
    async fn blocking<T: Send + 'static>(
        self,
        work: impl FnOnce(&mut PartitionSort) -> Result<T> + Send + 'static,
    ) -> Result<(T, PartitionSort)> {
        let task = SpawnedTask::spawn_blocking(move || {
            let mut this = self;
            let timer = this.sort_time.clone();
            let _guard = timer.timer();
            work(&mut this).map(|value| (value, this))
        });
        task.join_unwind()
            .await
            .map_err(|error| DataFusionError::ExecutionJoin(Box::new(error)))?
    }

    /// The key columns of `batches`, each concatenated into one array (reserved).
    fn key_arrays(&self, batches: &[RecordBatch]) -> Result<Vec<ArrayRef>> {
        let arrays = self
            .keys
            .iter()
            .map(|key| {
                let parts: Vec<&dyn Array> = batches
                    .iter()
                    .map(|batch| batch.column(key.index).as_ref())
                    .collect();
                let array = concat(&parts)?;
                self.reservation.try_grow(array.get_array_memory_size())?;
                Ok(array)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(arrays)
    }

    /// The sort permutation of the rows of `keys`, the first `limit` only with `Some`.
    fn indices(&self, keys: &[ArrayRef], limit: Option<usize>) -> Result<UInt32Array> {
        let columns: Vec<SortColumn> = self
            .keys
            .iter()
            .zip(keys)
            .map(|(key, values)| SortColumn {
                values: Arc::clone(values),
                options: Some(key.options),
            })
            .collect();
        match bitonic::arrow::lexsort_to_indices(&self.sorter, &columns, limit) {
            Ok(indices) => Ok(indices),
            // A device that fails (out of memory, lost) must not fail the query: arrow's CPU
            // sort orders the rows by the same keys.
            Err(_) => {
                self.fallbacks.add(1);
                Ok(datafusion::arrow::compute::lexsort_to_indices(
                    &columns, limit,
                )?)
            }
        }
    }

    /// Whether two neighbours of the rows `indices` picks from `keys` have equal keys, where
    /// that shows in the output: some column of the schema is not a key (rows equal in
    /// every column look alike in any order). Equal means not distinct: nulls equal nulls,
    /// floats compare by IEEE totalOrder (bit patterns), as DataFusion's sort compares them.
    fn has_visible_ties(&self, keys: &[ArrayRef], indices: &UInt32Array) -> Result<bool> {
        let every_column_a_key = (0..self.schema.fields().len())
            .all(|column| self.keys.iter().any(|key| key.index == column));
        if every_column_a_key || indices.len() < 2 {
            return Ok(false);
        }
        let pairs = indices.len() - 1;
        let mut equal: Option<BooleanArray> = None;
        for values in keys {
            let sorted = take(values.as_ref(), indices, None)?;
            let same = not_distinct(&sorted.slice(0, pairs), &sorted.slice(1, pairs))?;
            equal = Some(match equal {
                None => same,
                Some(equal) => and(&equal, &same)?,
            });
            // Every pair already differs in an earlier key.
            if equal.as_ref().is_some_and(|equal| !equal.has_true()) {
                return Ok(false);
            }
        }
        Ok(equal.is_some_and(|equal| equal.has_true()))
    }

    /// All rows of `batches` in sorted order (the first `fetch` with a top-k), in batches of
    /// at most `batch_size` rows gathered in parallel; or [`Sorted::Tied`] where equal keys
    /// among the output rows (or at the `fetch` cut) make DataFusion's own order needed.
    fn sorted(&mut self, batches: &[RecordBatch]) -> Result<Sorted> {
        let keys = self.key_arrays(batches)?;
        let keys_size: usize = keys.iter().map(|key| key.get_array_memory_size()).sum();
        // With a fetch, one row past the cut shows whether the cut falls between equal rows.
        let indices = self.indices(&keys, self.fetch.map(|k| k.saturating_add(1)))?;
        if self.has_visible_ties(&keys, &indices)? {
            self.reservation
                .resize(self.reservation.size().saturating_sub(keys_size));
            return Ok(Sorted::Tied);
        }
        drop(keys);
        let indices = match self.fetch {
            Some(k) if indices.len() > k => indices.slice(0, k),
            _ => indices,
        };
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let input_size: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        // The output is about the input's size times the share of rows kept.
        let output_size = (input_size as f64 * indices.len() as f64 / rows.max(1) as f64) as usize;
        self.reservation.try_grow(output_size)?;
        // Where each batch starts among all rows: a row's batch and its place in it.
        let starts: Vec<usize> = batches
            .iter()
            .scan(0usize, |start, batch| {
                let this = *start;
                *start += batch.num_rows();
                Some(this)
            })
            .collect();
        let sorted = indices
            .values()
            .par_chunks(self.batch_size.max(1))
            .map(|chunk| {
                if batches.len() == 1 {
                    let chunk = UInt32Array::from(chunk.to_vec());
                    return take_record_batch(&batches[0], &chunk).map_err(DataFusionError::from);
                }
                let places: Vec<(usize, usize)> = chunk
                    .iter()
                    .map(|&row| {
                        let row = row as usize;
                        let batch = starts.partition_point(|&start| start <= row) - 1;
                        (batch, row - starts[batch])
                    })
                    .collect();
                let sources: Vec<&RecordBatch> = batches.iter().collect();
                interleave_record_batch(&sources, &places).map_err(DataFusionError::from)
            })
            .collect::<Result<Vec<_>>>()?;
        let sorted_size: usize = sorted.iter().map(RecordBatch::get_array_memory_size).sum();
        // The input batches and the keys are dropped by the caller; the output stays.
        self.reservation.resize(sorted_size);
        Ok(Sorted::Unique(sorted))
    }
}
