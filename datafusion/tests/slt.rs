//! DataFusion's own sqllogictest files on sorting (`tests/slt/`, see its README), run twice:
//! once against stock DataFusion, once with `bitonic_datafusion::register`. Every statement
//! must succeed or fail alike, and every query must return the same rows in the same order
//! (as a multiset where the file asks for `rowsort` or `valuesort`). EXPLAIN queries are
//! skipped: the plans differ by design. The files' expected outputs are not consulted; stock
//! DataFusion is the oracle.

mod support;

use std::path::{Path, PathBuf};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use sqllogictest::{Condition, Control, DefaultColumnType, QueryExpect, Record, SortMode};
use support::{context, physical_plan};

/// The partition count DataFusion's own sqllogictest runner uses.
const TARGET_PARTITIONS: usize = 4;

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
    fn new(bitonic: bool, file: &str) -> Self {
        let scratch = std::env::temp_dir().join(format!(
            "bitonic-slt-{}-{file}-{}",
            std::process::id(),
            if bitonic { "bitonic" } else { "stock" }
        ));
        std::fs::create_dir_all(&scratch).expect("a scratch directory");
        Self {
            ctx: context(TARGET_PARTITIONS, bitonic),
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

async fn run_file(file: &str) -> Tally {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/slt")
        .join(file);
    let records = sqllogictest::parse_file::<DefaultColumnType>(&path).expect("parses");
    let (stock, ours) = (Run::new(false, file), Run::new(true, file));
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
                    "{loc}: {sql}\nstock: {expected:?}\nbitonic: {actual:?}"
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
                        assert_eq!(expected, actual, "{loc}: {sql}");
                        tally.queries_compared += 1;
                        let plan = physical_plan(&ours.ctx, &ours.localize(&sql)).await;
                        if plan.contains("BitonicSortExec") {
                            tally.queries_on_bitonic += 1;
                        }
                    }
                    (Err(_), Err(_)) => tally.queries_failed_alike += 1,
                    (expected, actual) => panic!(
                        "{loc}: {sql}\nstock: {:?}\nbitonic: {:?}",
                        expected.map(|batches| rows(&batches)),
                        actual.map(|batches| rows(&batches))
                    ),
                }
            }
            _ => {}
        }
    }
    println!("{file}: {tally:?}");
    tally
}

#[tokio::test]
async fn order_slt() {
    let tally = run_file("order.slt").await;
    assert!(tally.queries_compared >= 60, "{tally:?}");
    assert!(tally.queries_on_bitonic >= 20, "{tally:?}");
}

#[tokio::test]
async fn topk_slt() {
    let tally = run_file("topk.slt").await;
    assert!(tally.queries_compared >= 10, "{tally:?}");
    assert!(tally.queries_on_bitonic >= 4, "{tally:?}");
}
