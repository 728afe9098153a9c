//! What the tests share: the sorter, a stock and a rule-installed context, and result
//! comparison.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use bitonic_datafusion::Sorter;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

/// One sorter for every test of a binary (`BITONIC_BACKEND` picks its backend).
pub fn sorter() -> Arc<Sorter> {
    static SORTER: OnceLock<Arc<Sorter>> = OnceLock::new();
    Arc::clone(SORTER.get_or_init(|| Arc::new(Sorter::new().expect("a sorter"))))
}

/// A context with `target_partitions` partitions, with the rule when `bitonic` is set.
pub fn context(target_partitions: usize, bitonic: bool) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(target_partitions);
    let builder = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config);
    let builder = if bitonic {
        bitonic_datafusion::register(builder, sorter())
    } else {
        builder
    };
    SessionContext::new_with_state(builder.build())
}

/// A context with `target_partitions` partitions and `rule`.
pub fn context_with_rule(
    target_partitions: usize,
    rule: bitonic_datafusion::BitonicSortRule,
) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(target_partitions);
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_physical_optimizer_rule(Arc::new(rule))
        .build();
    SessionContext::new_with_state(state)
}

/// The physical plan of `sql` in `ctx`, as EXPLAIN prints it.
pub async fn physical_plan(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(&format!("EXPLAIN {sql}"))
        .await
        .expect("plans")
        .collect()
        .await
        .expect("explains");
    pretty_format_batches(&batches)
        .expect("formats")
        .to_string()
}

/// All rows of `batches` as one batch (none: `None`).
pub fn rows(batches: &[RecordBatch]) -> Option<RecordBatch> {
    let first = batches.first()?;
    Some(concat_batches(&first.schema(), batches).expect("one schema"))
}

/// Runs `sql` in both contexts and asserts the same rows in the same order, values equal
/// bit for bit (NaN equal to NaN, -0.0 unequal to +0.0).
pub async fn assert_same(stock: &SessionContext, ours: &SessionContext, sql: &str) {
    let expected = stock.sql(sql).await.expect("stock plans").collect().await;
    let actual = ours.sql(sql).await.expect("bitonic plans").collect().await;
    let expected = expected.unwrap_or_else(|error| panic!("stock DataFusion fails {sql}: {error}"));
    let actual = actual.unwrap_or_else(|error| panic!("with the rule, {sql} fails: {error}"));
    let (expected, actual) = (rows(&expected), rows(&actual));
    let count = |rows: &Option<RecordBatch>| rows.as_ref().map_or(0, RecordBatch::num_rows);
    assert_eq!(count(&expected), count(&actual), "row counts of {sql}");
    if let (Some(expected), Some(actual)) = (expected, actual) {
        assert_eq!(expected.columns(), actual.columns(), "rows of {sql}");
    }
}
