//! [DataFusion](https://datafusion.apache.org) and
//! [Ballista](https://datafusion.apache.org/ballista/) sorts run by [`bitonic`]'s [`Sorter`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use datafusion::execution::SessionStateBuilder;
//! use datafusion::prelude::SessionContext;
//!
//! # async fn run() -> datafusion::error::Result<()> {
//! let sorter = Arc::new(bitonic::Sorter::new().expect("a sorter"));
//! let state = bitonic_datafusion::register(SessionStateBuilder::new().with_default_features(), sorter).build();
//! let ctx = SessionContext::new_with_state(state);
//! ctx.sql("SELECT * FROM t ORDER BY price DESC NULLS LAST LIMIT 100").await?.show().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # What is replaced
//!
//! [`register`] adds [`BitonicSortRule`], a physical optimizer rule that runs after
//! DataFusion's own rules. It puts a [`BitonicSortExec`] in the place of every full `SortExec`
//! (one without `fetch`) whose sort expressions are all plain columns of a type
//! [`bitonic::arrow`] sorts (`Int8` .. `Int64`, `UInt8` .. `UInt64`, `Float16/32/64`,
//! `Date32/64`, `Time32/64`, `Timestamp`, `Duration`) and whose input is bounded. Everything
//! else keeps DataFusion's `SortExec`: an expression such as `ORDER BY a + 1` or
//! `ORDER BY lower(name)`, a string, boolean, decimal or nested key, an unbounded (streaming)
//! input, and every top-k (`ORDER BY ... LIMIT`, a `SortExec` with `fetch`), whose choice and
//! order among rows with equal keys only DataFusion's own top-k gives (see
//! [`BitonicSortRule`]). The replacement keeps the `SortExec`'s `preserve_partitioning` and
//! output properties, so the `SortPreservingMergeExec` above a per-partition sort still
//! merges the partitions (unless the rule combines them, see [`BitonicSortRule`]).
//!
//! # How a partition is sorted
//!
//! [`BitonicSortExec`] collects its input partition, sorts the rows by their key columns
//! (concatenated) with [`bitonic::arrow::lexsort_to_indices`] (one stable pass of the [`Sorter`] per
//! key column, nulls and `SortOptions` as DataFusion orders them) and gathers every column of
//! the schema in the sorted order from the concatenated batches, in batches of the
//! session's `batch_size`. A full sort of many rows runs as ranges of its first key (the
//! session's `target_partitions` of them, each of at least 2^20 rows): a sample of the first
//! key chooses splitters, each batch's rows are scattered into their ranges, and the ranges
//! are sorted and gathered in parallel, then laid end to end, which gives the same rows in the
//! same order as one sort of all of them, with no merge ([`Ranges`],
//! [`BitonicSortRule::with_ranges`]). Floats are
//! ordered as DataFusion orders them (IEEE `totalOrder`:
//! `-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < NaN`).
//!
//! Results equal DataFusion's row for row, rows with equal keys included: where two
//! neighbouring sorted rows have equal keys and some column is not a key, the order of those
//! rows is DataFusion's to choose (its sorts are unstable and its merge interleaves equal
//! rows of different partitions round robin), so the same batches are sorted again by
//! DataFusion's own `SortExec` and `SortPreservingMergeExec`, in the partition and arrival
//! order DataFusion's plan would have seen them. The operator's `ties_resorted` metric counts
//! those sorts; with distinct keys the sorter's result stands.
//!
//! # Memory and errors
//!
//! The collected batches, their copy (concatenated, or scattered into ranges) and the sorted
//! output are registered with the session's `MemoryPool` (one `MemoryConsumer` per
//! partition); the collected batches stay until the output is gathered, for DataFusion's sort
//! of equal keys. Where the pool refuses, the partition goes to DataFusion's own `SortExec`
//! (the batches read so far, then the rest of the input), which spills to disk as stock
//! DataFusion would, and the operator's `fallbacks` metric counts it. Results are never
//! wrong, and a query that finishes in a pool with stock DataFusion finishes with the rule.
//!
//! Where the [`Sorter`] returns an error (a device out of memory, a lost device), the
//! partition is sorted by arrow's CPU `lexsort_to_indices` instead, the same order DataFusion
//! would produce, and the operator's `fallbacks` metric counts it.
//!
//! # Ballista
//!
//! [`BitonicCodec`] is the `PhysicalExtensionCodec` that ships [`BitonicSortExec`] to
//! executors; it wraps the codec that handles every other node (Ballista's own). Register
//! it with `SessionConfig::with_ballista_physical_extension_codec` on the scheduler's and
//! the executors' sessions, and the rule on their session states (see `examples/ballista.rs`).

#![warn(missing_docs)]

mod codec;
mod exec;
mod rule;
mod sort;

use std::sync::Arc;

use datafusion::execution::SessionStateBuilder;

pub use bitonic::Sorter;
pub use codec::BitonicCodec;
pub use exec::{BitonicSortExec, Ranges};
pub use rule::BitonicSortRule;

/// Adds [`BitonicSortRule`] with `sorter` to `builder`'s physical optimizer rules, after
/// DataFusion's own: every sort the rule accepts is then run by `sorter`.
///
/// Call it after `with_default_features` (or whatever sets the default rules): a later
/// `with_physical_optimizer_rules` replaces the whole list, this rule included.
pub fn register(builder: SessionStateBuilder, sorter: Arc<Sorter>) -> SessionStateBuilder {
    builder.with_physical_optimizer_rule(Arc::new(BitonicSortRule::new(sorter)))
}
