//! Sorting one partition: collect the batches, concatenate them once, sort the rows with the
//! [`Sorter`], gather every column. A top-k (`fetch`) cuts the collected rows to the best
//! `k` whenever a chunk has arrived, so it holds `k` rows plus one chunk.

use std::sync::Arc;

use bitonic::Sorter;
use datafusion::arrow::array::{Array, RecordBatch, Scalar, UInt32Array};
use datafusion::arrow::compute::kernels::boolean::or_kleene;
use datafusion::arrow::compute::kernels::cmp::{gt_eq, lt_eq};
use datafusion::arrow::compute::{
    SortColumn, SortOptions, concat_batches, filter_record_batch, is_null, take_record_batch,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::runtime::SpawnedTask;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::metrics::{Count, Time};
use futures::StreamExt;
use rayon::prelude::*;

/// The most rows a top-k collects before cutting them to its best `k`: enough that one sort
/// call amortizes a device round trip, few enough that a top-k stays small in memory.
const TOP_K_CHUNK_ROWS: usize = 1 << 22;

/// Rows a top-k collects before its first cut (at least twice `k`): a cheap first sort that
/// gives the filter its threshold early.
const TOP_K_FIRST_CUT_ROWS: usize = 8192;

/// One sort key: a column of the input schema and its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyColumn {
    /// The column's index in the input schema.
    pub index: usize,
    /// Its direction and where its nulls go.
    pub options: SortOptions,
}

/// Everything one partition's sort needs.
pub(crate) struct PartitionSort {
    pub sorter: Arc<Sorter>,
    pub schema: SchemaRef,
    pub keys: Arc<[KeyColumn]>,
    pub fetch: Option<usize>,
    pub batch_size: usize,
    pub reservation: MemoryReservation,
    /// Sorts the sorter failed, done by arrow's CPU sort instead.
    pub fallbacks: Count,
    /// Time spent sorting and gathering.
    pub sort_time: Time,
}

impl PartitionSort {
    /// Sorts all of `input`; returns the sorted batches (at most `batch_size` rows each) and
    /// the reservation that accounts for them.
    pub async fn run(
        mut self,
        mut input: SendableRecordBatchStream,
    ) -> Result<(Vec<RecordBatch>, MemoryReservation)> {
        let mut batches = Vec::new();
        let mut rows = 0usize;
        let mut bytes = 0usize;
        // A top-k cuts its rows to the best `k` whenever `cut_at` rows are collected; the cut
        // point doubles from a small start (an early threshold lets the filter below drop
        // most rows) to `TOP_K_CHUNK_ROWS` (few, large sorts where the filter drops little).
        let mut cut_at = self
            .fetch
            .map(|k| k.saturating_mul(2).max(TOP_K_FIRST_CUT_ROWS));
        // After a cut: the worst of the best `k` rows, which a row must not follow to enter.
        let mut threshold: Option<RecordBatch> = None;
        while let Some(batch) = input.next().await {
            let mut batch = batch?;
            if let Some(worst) = &threshold {
                batch = self.could_enter(&batch, worst)?;
            }
            if batch.num_rows() == 0 {
                continue;
            }
            let size = batch.get_array_memory_size();
            self.reservation.try_grow(size)?;
            bytes += size;
            rows += batch.num_rows();
            batches.push(batch);
            if let (Some(k), Some(at)) = (self.fetch, cut_at)
                && rows >= at
            {
                let (kept, this) = self.blocking(move |this| this.best(batches, bytes)).await?;
                self = this;
                rows = kept.num_rows();
                bytes = kept.get_array_memory_size();
                if rows == k && k > 0 {
                    threshold = Some(kept.slice(k - 1, 1));
                }
                batches = vec![kept];
                cut_at = Some(
                    at.saturating_mul(2)
                        .min(TOP_K_CHUNK_ROWS.max(k.saturating_mul(2))),
                );
            }
        }
        if rows == 0 || self.fetch == Some(0) {
            self.reservation.free();
            return Ok((Vec::new(), self.reservation));
        }
        let (sorted, this) = self
            .blocking(move |this| this.sorted(batches, bytes))
            .await?;
        Ok((sorted, this.reservation))
    }

    /// The rows of `batch` that could still enter a top-k whose worst row is `worst`: those
    /// not after it in the first key's order (ties on the first key stay, later keys decide
    /// them). A cheap vectorized comparison, where sorting the rows would not be.
    fn could_enter(&self, batch: &RecordBatch, worst: &RecordBatch) -> Result<RecordBatch> {
        let key = self.keys[0];
        let column = batch.column(key.index);
        let bound = worst.column(key.index);
        let mask = if bound.is_null(0) {
            if !key.options.nulls_first {
                // Every row is at least as good as a null placed last.
                return Ok(batch.clone());
            }
            // Nulls placed first and the worst kept row null: only nulls can tie with it.
            is_null(column)?
        } else {
            let bound = Scalar::new(Arc::clone(bound));
            // Float comparisons here follow IEEE totalOrder, as the sort does.
            let not_after = if key.options.descending {
                gt_eq(column, &bound)?
            } else {
                lt_eq(column, &bound)?
            };
            if key.options.nulls_first {
                or_kleene(&not_after, &is_null(column)?)?
            } else {
                not_after
            }
        };
        // Null mask entries (null keys placed last) drop the row.
        Ok(filter_record_batch(batch, &mask)?)
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

    /// `batches` (of `bytes` bytes, already reserved) as one batch; the concatenation is
    /// reserved before it is made and the batches' reservation released after.
    fn concatenate(&self, batches: Vec<RecordBatch>, bytes: usize) -> Result<RecordBatch> {
        if batches.len() == 1 {
            return Ok(batches.into_iter().next().expect("one batch"));
        }
        self.reservation.try_grow(bytes)?;
        let batch = concat_batches(&self.schema, &batches)?;
        drop(batches);
        let size = batch.get_array_memory_size();
        self.reservation
            .resize(self.reservation.size().saturating_sub(2 * bytes) + size);
        Ok(batch)
    }

    /// The sort permutation of `batch`'s rows, the first `limit` only with `Some`.
    fn indices(&self, batch: &RecordBatch, limit: Option<usize>) -> Result<UInt32Array> {
        let columns: Vec<SortColumn> = self
            .keys
            .iter()
            .map(|key| SortColumn {
                values: Arc::clone(batch.column(key.index)),
                options: Some(key.options),
            })
            .collect();
        match bitonic::arrow::lexsort_to_indices(&self.sorter, &columns, limit) {
            Ok(indices) => Ok(indices),
            // A device that fails (out of memory, lost) must not fail the query: arrow's CPU
            // sort orders the rows as DataFusion's own sort would.
            Err(_) => {
                self.fallbacks.add(1);
                Ok(datafusion::arrow::compute::lexsort_to_indices(
                    &columns, limit,
                )?)
            }
        }
    }

    /// The best `fetch` rows of `batches` in sorted order, as one batch. The rows kept
    /// earlier come first in `batches`, so among equal keys the earlier input row stays
    /// first.
    fn best(&mut self, batches: Vec<RecordBatch>, bytes: usize) -> Result<RecordBatch> {
        let batch = self.concatenate(batches, bytes)?;
        let indices = self.indices(&batch, self.fetch)?;
        let kept = take_record_batch(&batch, &indices)?;
        let size = kept.get_array_memory_size();
        self.reservation.resize(
            self.reservation
                .size()
                .saturating_sub(batch.get_array_memory_size())
                + size,
        );
        Ok(kept)
    }

    /// All rows of `batches` in sorted order (the first `fetch` with a top-k), in batches of
    /// at most `batch_size` rows gathered in parallel.
    fn sorted(&mut self, batches: Vec<RecordBatch>, bytes: usize) -> Result<Vec<RecordBatch>> {
        let batch = self.concatenate(batches, bytes)?;
        let indices = self.indices(&batch, self.fetch)?;
        let input_size = batch.get_array_memory_size();
        // The output is about the input's size times the share of rows kept.
        let output_size =
            (input_size as f64 * indices.len() as f64 / batch.num_rows().max(1) as f64) as usize;
        self.reservation.try_grow(output_size)?;
        let sorted = indices
            .values()
            .par_chunks(self.batch_size.max(1))
            .map(|chunk| {
                let chunk = UInt32Array::from(chunk.to_vec());
                take_record_batch(&batch, &chunk).map_err(DataFusionError::from)
            })
            .collect::<Result<Vec<_>>>()?;
        drop(batch);
        self.reservation
            .resize(self.reservation.size().saturating_sub(input_size));
        Ok(sorted)
    }
}
