//! DataFusion's own sqllogictest files on sorting, limits, windows, aggregates and joins
//! (`tests/slt/`, see its README), run twice side by side: once against stock DataFusion,
//! once with `bitonic_datafusion::register`. Every statement must succeed or fail alike, and
//! every query must return the same rows in the same order (as a multiset where the file
//! asks for `rowsort` or `valuesort`), including rows with equal sort keys, whose order is
//! DataFusion's to choose. EXPLAIN queries are skipped: the plans differ by design. The
//! files' expected outputs are not consulted; stock DataFusion is the oracle.
//!
//! Each file runs at 1, 4 and 16 target partitions (the files may change the setting
//! themselves), on a multi-threaded runtime, so that partitions run concurrently. The ignored
//! tests (`cargo test -- --ignored`) run every file three times at each count: a result that
//! depended on which partition finished first would differ between the runs.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use sqllogictest::{Condition, Control, DefaultColumnType, QueryExpect, Record, SortMode};
use support::{context, physical_plan};

/// The target partition counts every file runs at: one partition, the count DataFusion's
/// own sqllogictest runner uses, and more partitions than most files have rows per key.
const TARGET_PARTITIONS: [usize; 3] = [1, 4, 16];

/// Distinguishes the scratch directories of runs in one process.
static RUNS: AtomicUsize = AtomicUsize::new(0);

/// What one file's run found.
#[derive(Debug, Default)]
struct Tally {
    statements: usize,
    /// Queries whose results both runs returned, and agreed on.
    queries_compared: usize,
    /// Queries both runs failed (tables whose data is not vendored, expected errors).
    queries_failed_alike: usize,
    /// Compared queries whose plan had our operator.
    queries_on_bitonic: usize,
    explains_skipped: usize,
}

/// One run of a file: a context and the directory its COPY statements write to.
struct Run {
    ctx: SessionContext,
    scratch: PathBuf,
}

impl Run {
    fn new(bitonic: bool, file: &str, partitions: usize) -> Self {
        let scratch = std::env::temp_dir().join(format!(
            "bitonic-slt-{}-{}-{file}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed),
            if bitonic { "bitonic" } else { "stock" }
        ));
        std::fs::create_dir_all(&scratch).expect("a scratch directory");
        Self {
            ctx: context(partitions, bitonic),
            scratch,
        }
    }

    /// `sql` with the files' relative data paths pointing at the vendored copies and the
    /// scratch directory at this run's own.
    fn localize(&self, sql: &str) -> String {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt/data");
        let data = data.display();
        sql.replace("'../../testing/data/csv/", &format!("'{data}/"))
            .replace("'../../parquet-testing/data/", &format!("'{data}/"))
            .replace("'../core/tests/data/", &format!("'{data}/"))
            .replace("'data/", &format!("'{data}/"))
            .replace(
                "'test_files/scratch/",
                &format!("'{}/", self.scratch.display()),
            )
    }

    async fn execute(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        self.ctx.sql(&self.localize(sql)).await?.collect().await
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// The rows of `batches` as strings, one per value.
fn rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|column| ArrayFormatter::try_new(column.as_ref(), &options).expect("formats"))
            .collect();
        for row in 0..batch.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .map(|f| f.value(row).to_string())
                    .collect(),
            );
        }
    }
    rows
}

fn skipped(conditions: &[Condition]) -> bool {
    conditions.iter().any(|condition| match condition {
        Condition::OnlyIf { label } => label != "DataFusion",
        Condition::SkipIf { label } => label == "DataFusion",
    })
}

/// Runs every record of `file` against both contexts at `partitions` target partitions.
async fn run_file(file: &str, partitions: usize) -> Tally {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/slt")
        .join(file);
    let records = sqllogictest::parse_file::<DefaultColumnType>(&path).expect("parses");
    let (stock, ours) = (
        Run::new(false, file, partitions),
        Run::new(true, file, partitions),
    );
    let mut tally = Tally::default();
    let mut default_sort = SortMode::NoSort;
    for record in records {
        match record {
            Record::Control(Control::SortMode(mode)) => default_sort = mode,
            Record::Halt { .. } => break,
            Record::Statement {
                loc,
                conditions,
                sql,
                ..
            } => {
                if skipped(&conditions) {
                    continue;
                }
                let (expected, actual) = (stock.execute(&sql).await, ours.execute(&sql).await);
                assert_eq!(
                    expected.is_ok(),
                    actual.is_ok(),
                    "{loc} ({partitions} partitions): {sql}\nstock: {expected:?}\nbitonic: {actual:?}"
                );
                tally.statements += 1;
            }
            Record::Query {
                loc,
                conditions,
                sql,
                expected,
                ..
            } => {
                if skipped(&conditions) {
                    continue;
                }
                if sql.trim_start().to_lowercase().starts_with("explain") {
                    tally.explains_skipped += 1;
                    continue;
                }
                let sort = match &expected {
                    QueryExpect::Results { sort_mode, .. } => sort_mode.unwrap_or(default_sort),
                    QueryExpect::Error(_) => SortMode::NoSort,
                };
                let (stock_result, our_result) =
                    (stock.execute(&sql).await, ours.execute(&sql).await);
                match (stock_result, our_result) {
                    (Ok(expected), Ok(actual)) => {
                        let (mut expected, mut actual) = (rows(&expected), rows(&actual));
                        match sort {
                            SortMode::NoSort => {}
                            SortMode::RowSort => {
                                expected.sort();
                                actual.sort();
                            }
                            SortMode::ValueSort => {
                                expected = vec![expected.concat()];
                                actual = vec![actual.concat()];
                                expected[0].sort();
                                actual[0].sort();
                            }
                        }
                        assert_eq!(expected, actual, "{loc} ({partitions} partitions): {sql}");
                        tally.queries_compared += 1;
                        let plan = physical_plan(&ours.ctx, &ours.localize(&sql)).await;
                        if plan.contains("BitonicSortExec") {
                            tally.queries_on_bitonic += 1;
                        }
                    }
                    (Err(_), Err(_)) => tally.queries_failed_alike += 1,
                    (expected, actual) => panic!(
                        "{loc} ({partitions} partitions): {sql}\nstock: {:?}\nbitonic: {:?}",
                        expected.map(|batches| rows(&batches)),
                        actual.map(|batches| rows(&batches))
                    ),
                }
            }
            _ => {}
        }
    }
    println!(
        "{file} at {partitions} partitions: {} queries compared, {} on BitonicSortExec, {} \
         failed alike, 0 differences ({} statements, {} EXPLAINs skipped)",
        tally.queries_compared,
        tally.queries_on_bitonic,
        tally.queries_failed_alike,
        tally.statements,
        tally.explains_skipped
    );
    tally
}

/// Runs `file` `times` times at each of [`TARGET_PARTITIONS`] (every run compares every
/// result, and panics at the first difference), then checks that each count compared at
/// least `compared` queries, `on_bitonic` of them on our operator: a file whose tables failed
/// to load would compare nothing and prove nothing.
async fn check(file: &str, times: usize, compared: usize, on_bitonic: usize) {
    for partitions in TARGET_PARTITIONS {
        let mut tallies = Vec::new();
        for _ in 0..times {
            tallies.push(run_file(file, partitions).await);
        }
        for tally in &tallies {
            assert!(
                tally.queries_compared >= compared,
                "{file} at {partitions} partitions: {tally:?}"
            );
            assert!(
                tally.queries_on_bitonic >= on_bitonic,
                "{file} at {partitions} partitions: {tally:?}"
            );
        }
        // Every run of a file does the same: the same queries compare and fail alike.
        let counts = |tally: &Tally| (tally.queries_compared, tally.queries_failed_alike);
        assert!(
            tallies
                .windows(2)
                .all(|runs| counts(&runs[0]) == counts(&runs[1])),
            "{file} at {partitions} partitions: {tallies:?}"
        );
    }
}

/// One test per vendored file, once (default) and three times (ignored) at each partition
/// count, with the least counts each must compare and run on our operator.
macro_rules! slt_tests {
    ($($once:ident, $thrice:ident: $file:literal, $compared:literal, $on_bitonic:literal;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $once() {
                check($file, 1, $compared, $on_bitonic).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            #[ignore = "extended: every file three times at each partition count"]
            async fn $thrice() {
                check($file, 3, $compared, $on_bitonic).await;
            }
        )*
    };
}

slt_tests! {
    order_slt, order_slt_thrice: "order.slt", 60, 20;
    topk_slt, topk_slt_thrice: "topk.slt", 10, 1;
    limit_slt, limit_slt_thrice: "limit.slt", 50, 4;
    window_slt, window_slt_thrice: "window.slt", 250, 120;
    aggregate_slt, aggregate_slt_thrice: "aggregate.slt", 750, 90;
    group_by_slt, group_by_slt_thrice: "group_by.slt", 400, 45;
    sort_pushdown_slt, sort_pushdown_slt_thrice: "sort_pushdown.slt", 120, 50;
    joins_slt, joins_slt_thrice: "joins.slt", 170, 20;
}
