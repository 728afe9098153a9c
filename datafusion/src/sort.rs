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
//! batches in the same order, which gives exactly DataFusion's result. With stable ties the
//! sorter's order stands: equal keys in their input order (the sorter's argsort is stable),
//! by input partition, then as each partition's rows arrived.
//!
//! Where the memory pool refuses to hold the rows, the same plan takes them over from where
//! the reading stopped, so that it spills to disk as DataFusion's sort does.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bitonic::Sorter;
use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::kernels::boolean::and;
use datafusion::arrow::compute::kernels::cmp::not_distinct;
use datafusion::arrow::compute::{SortColumn, SortOptions, concat_batches, take_record_batch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::runtime::SpawnedTask;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::metrics::{Count, Time};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use futures::{Stream, StreamExt};
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
    /// Rows of equal keys keep their input order rather than DataFusion's.
    pub stable_ties: bool,
    pub batch_size: usize,
    /// The most ranges of the first key a full sort splits into (1: none).
    pub ranges: usize,
    /// The fewest rows a range should hold: fewer ranges where there are fewer rows.
    pub min_range_rows: usize,
    pub context: Arc<TaskContext>,
    pub reservation: MemoryReservation,
    /// Sorts the sorter failed (done by arrow's CPU sort instead), and sorts the memory pool
    /// refused to hold (done by DataFusion's own sort, which spills).
    pub fallbacks: Count,
    /// Sorts whose rows had equal keys, ordered by DataFusion's own plan.
    pub ties_resorted: Count,
    /// Ranges of the first key sorted on their own (none where all rows were sorted at once).
    pub ranges_sorted: Count,
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
    /// partition order); returns the sorted rows, as batches of at most `batch_size` rows
    /// held under the reservation, or as DataFusion's own sort where the memory pool refused
    /// to hold them.
    pub async fn run(self, inputs: Vec<SendableRecordBatchStream>) -> Result<SortOutput> {
        // Each input partition's batches in their arrival order: DataFusion's sort of the
        // same rows sees them so, and the order of equal rows follows from it.
        let mut partitions: Vec<Vec<RecordBatch>> = vec![Vec::new(); inputs.len()];
        let mut tagged = futures::stream::select_all(
            inputs
                .into_iter()
                .enumerate()
                .map(|(partition, stream)| Tagged { partition, stream }),
        );
        let mut rows = 0usize;
        while let Some((partition, batch)) = tagged.next().await {
            let batch = batch?;
            // DataFusion's sort skips empty batches too.
            if batch.num_rows() == 0 {
                continue;
            }
            let refused = self.reservation.try_grow(batch.get_array_memory_size());
            rows += batch.num_rows();
            partitions[partition].push(batch);
            if let Err(error) = refused {
                if !is_refusal(&error) {
                    return Err(error);
                }
                let mut rest: Vec<Option<SendableRecordBatchStream>> =
                    partitions.iter().map(|_| None).collect();
                for unread in tagged {
                    rest[unread.partition] = Some(unread.stream);
                }
                return self.spilling(partitions, rest);
            }
        }
        if rows == 0 || self.fetch == Some(0) {
            self.reservation.free();
            return Ok(SortOutput::Held(Vec::new(), self.reservation));
        }
        let batches: Vec<RecordBatch> = partitions.iter().flatten().cloned().collect();
        let (sorted, this) = self.blocking(move |this| this.sorted(&batches)).await?;
        match sorted {
            Ok(Sorted::Unique(sorted)) => Ok(SortOutput::Held(sorted, this.reservation)),
            Ok(Sorted::Tied) => {
                this.ties_resorted.add(1);
                this.datafusion_sort(partitions, Vec::new())
            }
            Err(error) if is_refusal(&error) => this.spilling(partitions, Vec::new()),
            Err(error) => Err(error),
        }
    }

    /// Where the memory pool refused to hold the rows: DataFusion's own sort of them (the
    /// batches read so far, then the rest of each input), which spills to disk under the
    /// same pool. Counted in the `fallbacks` metric.
    fn spilling(
        self,
        partitions: Vec<Vec<RecordBatch>>,
        rest: Vec<Option<SendableRecordBatchStream>>,
    ) -> Result<SortOutput> {
        self.fallbacks.add(1);
        self.datafusion_sort(partitions, rest)
    }

    /// DataFusion's own sort of `partitions` (each partition's batches, then the rest of its
    /// input where `rest` has it; missing entries have none), streamed. It reserves the
    /// batches itself, spilling where the pool refuses, so this node's reservation is freed.
    fn datafusion_sort(
        self,
        partitions: Vec<Vec<RecordBatch>>,
        mut rest: Vec<Option<SendableRecordBatchStream>>,
    ) -> Result<SortOutput> {
        self.reservation.free();
        rest.resize_with(partitions.len(), || None);
        let plan = self.datafusion_plan(partitions, rest)?;
        Ok(SortOutput::Streamed(
            plan.execute(0, Arc::clone(&self.context))?,
        ))
    }

    /// DataFusion's plan for this sort over `partitions` (each partition's batches, then
    /// the rest of its input where given): `SortExec` (per partition, then
    /// `SortPreservingMergeExec`, where there are several), with this sort's keys and fetch.
    fn datafusion_plan(
        &self,
        partitions: Vec<Vec<RecordBatch>>,
        rest: Vec<Option<SendableRecordBatchStream>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let count = partitions.len();
        let streams: Vec<Arc<dyn PartitionStream>> = partitions
            .into_iter()
            .zip(rest)
            .map(|(read, rest)| {
                Arc::new(ReadAndRest {
                    schema: Arc::clone(&self.schema),
                    parts: Mutex::new(Some((read, rest))),
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        let source = Arc::new(StreamingTableExec::try_new(
            Arc::clone(&self.schema),
            streams,
            None,
            [],
            false,
            None,
        )?);
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
    /// the async runtime's workers. Its result comes back beside `self`, also where it
    /// failed.
    async fn blocking<T: Send + 'static>(
        self,
        work: impl FnOnce(&mut PartitionSort) -> Result<T> + Send + 'static,
    ) -> Result<(Result<T>, PartitionSort)> {
        let task = SpawnedTask::spawn_blocking(move || {
            let mut this = self;
            let timer = this.sort_time.clone();
            let _guard = timer.timer();
            (work(&mut this), this)
        });
        task.join_unwind()
            .await
            .map_err(|error| DataFusionError::ExecutionJoin(Box::new(error)))
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

    /// Whether two neighbouring rows of `sorted` (the output batches, in order) have equal
    /// keys, where that shows in the output: some column of the schema is not a key (rows
    /// equal in every column look alike in any order), and DataFusion's order of them is
    /// asked for (not [`PartitionSort::stable_ties`]). Equal means not distinct: nulls equal
    /// nulls, floats compare by IEEE totalOrder (bit patterns), as DataFusion's sort compares
    /// them. The batches are compared in parallel, each with the last row of the one before.
    fn has_visible_ties(&self, sorted: &[RecordBatch]) -> Result<bool> {
        let every_column_a_key = (0..self.schema.fields().len())
            .all(|column| self.keys.iter().any(|key| key.index == column));
        if every_column_a_key || self.stable_ties {
            return Ok(false);
        }
        let ties = (0..sorted.len())
            .into_par_iter()
            .map(|at| {
                let batch = &sorted[at];
                let mut pairs = vec![(batch.slice(0, batch.num_rows().saturating_sub(1)), {
                    let rows = batch.num_rows();
                    batch.slice(1.min(rows), rows.saturating_sub(1))
                })];
                if at > 0 && batch.num_rows() > 0 {
                    let before = &sorted[at - 1];
                    if before.num_rows() > 0 {
                        pairs.push((before.slice(before.num_rows() - 1, 1), batch.slice(0, 1)));
                    }
                }
                for (left, right) in pairs {
                    if left.num_rows() > 0 && self.equal_keys(&left, &right)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            })
            .collect::<Result<Vec<bool>>>()?;
        Ok(ties.into_iter().any(|tie| tie))
    }

    /// Whether some row of `left` has the keys of the same row of `right` (equal lengths).
    fn equal_keys(&self, left: &RecordBatch, right: &RecordBatch) -> Result<bool> {
        let mut equal: Option<BooleanArray> = None;
        for key in self.keys.iter() {
            let same = not_distinct(left.column(key.index), right.column(key.index))?;
            let both = match equal {
                None => same,
                Some(equal) => and(&equal, &same)?,
            };
            // Every pair already differs in an earlier key.
            if !both.has_true() {
                return Ok(false);
            }
            equal = Some(both);
        }
        Ok(equal.is_some_and(|equal| equal.has_true()))
    }

    /// All rows of `batches` in sorted order (the first `fetch` with a top-k), in batches of
    /// at most `batch_size` rows gathered in parallel; or [`Sorted::Tied`] where equal keys
    /// among the output rows (or at the `fetch` cut) make DataFusion's own order needed.
    fn sorted(&mut self, batches: &[RecordBatch]) -> Result<Sorted> {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let input_size: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        // With a fetch, one row past the cut shows whether the cut falls between equal rows.
        let limit = self.fetch.map(|k| k.saturating_add(1));
        let kept = limit.map_or(rows, |limit| limit.min(rows));
        // The output is about the input's size times the share of rows kept.
        let output_size = (input_size as f64 * kept as f64 / rows.max(1) as f64) as usize;
        let ranges = self.range_count(rows);
        // The rows copied once before the sort: concatenated into one batch, or scattered
        // into their ranges. One batch alone is sorted where it lies.
        let copied = if ranges > 1 || batches.len() > 1 {
            input_size
        } else {
            0
        };
        self.reservation.try_grow(copied)?;
        self.reservation.try_grow(output_size)?;
        let mut sorted = if ranges > 1 {
            self.sorted_in_ranges(batches, ranges)?
        } else {
            self.sorted_rows(batches, limit)?
        };
        self.reservation
            .resize(self.reservation.size().saturating_sub(copied));
        if self.has_visible_ties(&sorted)? {
            self.reservation
                .resize(self.reservation.size().saturating_sub(output_size));
            return Ok(Sorted::Tied);
        }
        // The row past the cut only served the check above.
        if let Some(k) = self.fetch
            && kept > k
            && let Some(last) = sorted.pop()
            && last.num_rows() > 1
        {
            sorted.push(last.slice(0, last.num_rows() - 1));
        }
        let sorted_size: usize = sorted.iter().map(RecordBatch::get_array_memory_size).sum();
        // The input batches are dropped by the caller; the output stays.
        self.reservation.resize(sorted_size);
        Ok(Sorted::Unique(sorted))
    }

    /// How many ranges of the first key a sort of `rows` rows takes: the configured count,
    /// fewer where ranges would hold under `min_range_rows` rows each, and one (no ranges)
    /// for a top-k, which keeps only its first rows.
    fn range_count(&self, rows: usize) -> usize {
        if self.fetch.is_some() {
            return 1;
        }
        self.ranges.min(rows / self.min_range_rows.max(1)).max(1)
    }

    /// The rows of `batches` (concatenated in their order) sorted, the first `limit` only
    /// with `Some`, in batches of at most `batch_size` rows gathered in parallel.
    fn sorted_rows(
        &self,
        batches: &[RecordBatch],
        limit: Option<usize>,
    ) -> Result<Vec<RecordBatch>> {
        // One batch to sort and gather from: arrow's `take` from one batch is several times
        // faster than interleaving rows of many. The input batches stay (until the caller
        // drops them) for DataFusion's sort, should the caller's check need it.
        let input = match batches {
            [] => return Ok(Vec::new()),
            [batch] => batch.clone(),
            _ => concat_batches(&self.schema, batches)?,
        };
        let keys: Vec<ArrayRef> = self
            .keys
            .iter()
            .map(|key| Arc::clone(input.column(key.index)))
            .collect();
        let indices = self.indices(&keys, limit)?;
        drop(keys);
        indices
            .values()
            .par_chunks(self.batch_size.max(1))
            .map(|chunk| {
                let chunk = UInt32Array::from(chunk.to_vec());
                take_record_batch(&input, &chunk).map_err(DataFusionError::from)
            })
            .collect()
    }

    /// The rows of `batches` sorted as up to `ranges` ranges of the first key, each sorted on
    /// its own (in parallel) and laid end to end: the same rows in the same order as
    /// [`PartitionSort::sorted_rows`] of all of them, since rows of equal first keys share
    /// a range and each range keeps its rows in their input order. The splitters come from a
    /// sample of every batch's first key; nulls go to the first or the last range.
    fn sorted_in_ranges(&self, batches: &[RecordBatch], ranges: usize) -> Result<Vec<RecordBatch>> {
        let first = self.keys[0];
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let sample_size = ranges.saturating_mul(bitonic::partition::OVERSAMPLING);
        let mut sample: Vec<u64> = batches
            .par_iter()
            .enumerate()
            .map(|(at, batch)| {
                // Each batch gives its share of the sample, at least one key.
                let count = (sample_size * batch.num_rows()).div_ceil(rows.max(1));
                bitonic::arrow::sample_bits(
                    batch.column(first.index),
                    count,
                    first.options,
                    at as u64,
                )
                .map_err(|error| DataFusionError::External(Box::new(error)))
            })
            .collect::<Result<Vec<_>>>()?
            .concat();
        sample.par_sort_unstable();
        let splitters = bitonic::partition::Splitters::from_sorted_sample(&sample, ranges);
        self.ranges_sorted.add(splitters.ranges());
        // Each batch's rows, range by range: the pieces of range r of every batch, in the
        // batches' order, are that range's rows in their input order.
        let pieces: Vec<Vec<RecordBatch>> = batches
            .par_iter()
            .map(|batch| {
                let grouped = bitonic::arrow::range_rows(
                    batch.column(first.index),
                    &splitters,
                    first.options,
                )
                .map_err(|error| DataFusionError::External(Box::new(error)))?;
                let moved = take_record_batch(batch, grouped.indices())?;
                Ok(grouped
                    .offsets()
                    .windows(2)
                    .map(|w| moved.slice(w[0], w[1] - w[0]))
                    .collect())
            })
            .collect::<Result<_>>()?;
        let sorted: Vec<Vec<RecordBatch>> = (0..splitters.ranges())
            .into_par_iter()
            .map(|range| {
                let rows: Vec<RecordBatch> = pieces
                    .iter()
                    .map(|of_batch| of_batch[range].clone())
                    .filter(|piece| piece.num_rows() > 0)
                    .collect();
                self.sorted_rows(&rows, None)
            })
            .collect::<Result<_>>()?;
        Ok(sorted.into_iter().flatten().collect())
    }
}

/// The sorted rows of one output partition.
pub(crate) enum SortOutput {
    /// In memory, in batches of at most `batch_size` rows, under the reservation.
    Held(Vec<RecordBatch>, MemoryReservation),
    /// From DataFusion's own sort, which spills where the pool refuses.
    Streamed(SendableRecordBatchStream),
}

/// Whether `error` is the memory pool's refusal of a reservation.
fn is_refusal(error: &DataFusionError) -> bool {
    matches!(error.find_root(), DataFusionError::ResourcesExhausted(_))
}

/// One input partition's stream, its batches tagged with the partition.
struct Tagged {
    partition: usize,
    stream: SendableRecordBatchStream,
}

impl Stream for Tagged {
    type Item = (usize, Result<RecordBatch>);

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let partition = self.partition;
        self.stream
            .poll_next_unpin(cx)
            .map(|batch| batch.map(|batch| (partition, batch)))
    }
}

/// One input partition for DataFusion's own sort: the batches read already, then the rest of
/// the input. It can be executed once, since the input's stream is read once.
struct ReadAndRest {
    schema: SchemaRef,
    parts: Mutex<Option<(Vec<RecordBatch>, Option<SendableRecordBatchStream>)>>,
}

impl std::fmt::Debug for ReadAndRest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadAndRest").finish_non_exhaustive()
    }
}

impl PartitionStream for ReadAndRest {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _: Arc<TaskContext>) -> SendableRecordBatchStream {
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner()).take();
        let stream = match parts {
            Some((read, rest)) => futures::stream::iter(read.into_iter().map(Ok))
                .chain(futures::stream::iter(rest).flatten())
                .boxed(),
            None => futures::stream::once(async {
                Err(DataFusionError::Internal(
                    "an input partition of the sort was executed twice".to_string(),
                ))
            })
            .boxed(),
        };
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        ))
    }
}
