//! ORDER BY over every key type the rule hands to the sorter (nulls, NaN, -0.0, extremes,
//! ties), in every direction and null placement, with several keys and with LIMIT: every
//! result equal to stock DataFusion's, and the plans showing which operator ran.

mod memory;
mod ranges;
#[path = "../support/mod.rs"]
mod support;
mod ties;

use std::sync::Arc;

use bitonic_datafusion::BitonicSortRule;
use datafusion::arrow::array::*;
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::memory_pool::GreedyMemoryPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use half::f16;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::{assert_same, context, context_with_rule, physical_plan};

/// Rows of the test table: fewer than a top-k collects before its first cut.
const ROWS: usize = 3001;

/// Rows of the table for top-k filtering: several cuts, most batches filtered.
const MANY_ROWS: usize = 60_001;

/// The key columns, one per type the rule accepts.
const KEYS: &[&str] = &[
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "f32",
    "f64",
    "date32",
    "date64",
    "time32s",
    "time32ms",
    "time64us",
    "time64ns",
    "ts_s",
    "ts_ms",
    "ts_us",
    "ts_ns_utc",
    "dur_s",
    "dur_ms",
    "dur_us",
    "dur_ns",
];

/// `rows` values, 10% null, the rest drawn from `pool` (few distinct values: many ties).
fn draw<T: Copy>(rng: &mut StdRng, rows: usize, pool: &[T]) -> Vec<Option<T>> {
    (0..rows)
        .map(|_| (!rng.gen_bool(0.1)).then(|| pool[rng.gen_range(0..pool.len())]))
        .collect()
}

macro_rules! int_pool {
    ($t:ty) => {
        [
            <$t>::MIN,
            <$t>::MAX,
            0 as $t,
            1 as $t,
            2 as $t,
            7 as $t,
            (<$t>::MAX / 2) as $t,
        ]
    };
}

/// A table with a column of every key type, a string column `s`, and a unique `id`,
/// dealt into `partitions` partitions.
fn table(partitions: usize) -> Arc<MemTable> {
    table_of(partitions, ROWS)
}

/// [`table`] with `rows` rows.
fn table_of(partitions: usize, rows: usize) -> Arc<MemTable> {
    let mut rng = StdRng::seed_from_u64(7);
    let floats = [
        f64::NAN,
        -f64::NAN,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.5,
        -2.25,
        f64::MAX,
        f64::MIN_POSITIVE,
    ];
    // Times of day and timestamps stay in ranges every formatter and cast accepts.
    let seconds = [0i32, 1, 59, 3600, 86399];
    let millis = [0i32, 1, 999, 3_600_000, 86_399_999];
    let micros = [0i64, 1, 86_399_999_999, 43_200_000_000];
    let nanos = [0i64, 1, 86_399_999_999_999, 43_200_000_000_000];
    let days = [-719_162i32, -1, 0, 1, 19_000, 2_932_896];
    let instants = [-62_135_596_800i64, -1, 0, 1, 1_700_000_000, 253_402_300_799];
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "i8",
            Arc::new(Int8Array::from(draw(&mut rng, rows, &int_pool!(i8)))),
        ),
        (
            "i16",
            Arc::new(Int16Array::from(draw(&mut rng, rows, &int_pool!(i16)))),
        ),
        (
            "i32",
            Arc::new(Int32Array::from(draw(&mut rng, rows, &int_pool!(i32)))),
        ),
        (
            "i64",
            Arc::new(Int64Array::from(draw(&mut rng, rows, &int_pool!(i64)))),
        ),
        (
            "u8",
            Arc::new(UInt8Array::from(draw(&mut rng, rows, &int_pool!(u8)))),
        ),
        (
            "u16",
            Arc::new(UInt16Array::from(draw(&mut rng, rows, &int_pool!(u16)))),
        ),
        (
            "u32",
            Arc::new(UInt32Array::from(draw(&mut rng, rows, &int_pool!(u32)))),
        ),
        (
            "u64",
            Arc::new(UInt64Array::from(draw(&mut rng, rows, &int_pool!(u64)))),
        ),
        (
            "f16",
            Arc::new(Float16Array::from(
                draw(&mut rng, rows, &floats)
                    .into_iter()
                    .map(|v| v.map(f16::from_f64))
                    .collect::<Vec<_>>(),
            )),
        ),
        (
            "f32",
            Arc::new(Float32Array::from(
                draw(&mut rng, rows, &floats)
                    .into_iter()
                    .map(|v| v.map(|v| v as f32))
                    .collect::<Vec<_>>(),
            )),
        ),
        (
            "f64",
            Arc::new(Float64Array::from(draw(&mut rng, rows, &floats))),
        ),
        (
            "date32",
            Arc::new(Date32Array::from(draw(&mut rng, rows, &days))),
        ),
        (
            "date64",
            Arc::new(Date64Array::from(
                draw(&mut rng, rows, &days)
                    .into_iter()
                    .map(|v| v.map(|d| d as i64 * 86_400_000))
                    .collect::<Vec<_>>(),
            )),
        ),
        (
            "time32s",
            Arc::new(Time32SecondArray::from(draw(&mut rng, rows, &seconds))),
        ),
        (
            "time32ms",
            Arc::new(Time32MillisecondArray::from(draw(&mut rng, rows, &millis))),
        ),
        (
            "time64us",
            Arc::new(Time64MicrosecondArray::from(draw(&mut rng, rows, &micros))),
        ),
        (
            "time64ns",
            Arc::new(Time64NanosecondArray::from(draw(&mut rng, rows, &nanos))),
        ),
        (
            "ts_s",
            Arc::new(TimestampSecondArray::from(draw(&mut rng, rows, &instants))),
        ),
        (
            "ts_ms",
            Arc::new(TimestampMillisecondArray::from(
                draw(&mut rng, rows, &instants)
                    .into_iter()
                    .map(|v| v.map(|s| s * 1000 + 7))
                    .collect::<Vec<_>>(),
            )),
        ),
        (
            "ts_us",
            Arc::new(TimestampMicrosecondArray::from(
                draw(&mut rng, rows, &instants)
                    .into_iter()
                    .map(|v| v.map(|s| s * 1_000_000 - 3))
                    .collect::<Vec<_>>(),
            )),
        ),
        (
            "ts_ns_utc",
            Arc::new(
                TimestampNanosecondArray::from(draw(
                    &mut rng,
                    rows,
                    &[-1i64, 0, 1, i64::MAX, i64::MIN],
                ))
                .with_timezone("UTC"),
            ),
        ),
        (
            "dur_s",
            Arc::new(DurationSecondArray::from(draw(
                &mut rng,
                rows,
                &int_pool!(i64),
            ))),
        ),
        (
            "dur_ms",
            Arc::new(DurationMillisecondArray::from(draw(
                &mut rng,
                rows,
                &int_pool!(i64),
            ))),
        ),
        (
            "dur_us",
            Arc::new(DurationMicrosecondArray::from(draw(
                &mut rng,
                rows,
                &int_pool!(i64),
            ))),
        ),
        (
            "dur_ns",
            Arc::new(DurationNanosecondArray::from(draw(
                &mut rng,
                rows,
                &int_pool!(i64),
            ))),
        ),
        (
            "s",
            Arc::new(StringArray::from(draw(
                &mut rng,
                rows,
                &["b", "a", "", "zz"],
            ))),
        ),
        ("id", Arc::new(Int64Array::from_iter_values(0..rows as i64))),
    ];
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, array)| Field::new(*name, array.data_type().clone(), *name != "id"))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        columns.into_iter().map(|(_, array)| array).collect(),
    )
    .expect("columns match the schema");
    // Uneven slices, an empty one among them, dealt round robin.
    let mut parts = vec![Vec::new(); partitions];
    let mut start = 0;
    for (i, len) in [0usize, 1, 100, 700, 2048, 152]
        .into_iter()
        .cycle()
        .enumerate()
    {
        if start >= rows {
            break;
        }
        let len = len.min(rows - start);
        parts[i % partitions].push(batch.slice(start, len));
        start += len;
    }
    Arc::new(MemTable::try_new(schema, parts).expect("a table"))
}

/// Stock and rule-installed contexts over the same table of `partitions` partitions.
fn contexts(partitions: usize) -> (SessionContext, SessionContext) {
    let (stock, ours) = (context(partitions, false), context(partitions, true));
    let table = table(partitions);
    stock.register_table("t", table.clone()).expect("registers");
    ours.register_table("t", table).expect("registers");
    (stock, ours)
}

/// The metric `name` of `sql`'s sort in `ctx`, from EXPLAIN ANALYZE, as `name=value`.
async fn metric(ctx: &SessionContext, sql: &str, name: &str) -> String {
    let plan = physical_plan(ctx, &format!("ANALYZE {sql}")).await;
    let line = plan
        .lines()
        .find(|line| line.contains("BitonicSortExec"))
        .unwrap_or_else(|| panic!("no BitonicSortExec in {plan}"));
    let start = line
        .find(&format!("{name}="))
        .unwrap_or_else(|| panic!("no {name} in {line}"));
    line[start..]
        .split([',', ']'])
        .next()
        .expect("a value")
        .trim()
        .to_string()
}

/// The batches of `sql` in `ctx`.
async fn run(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql)
        .await
        .expect("plans")
        .collect()
        .await
        .expect("runs")
}

const ORDERS: &[&str] = &[
    "ASC NULLS FIRST",
    "ASC NULLS LAST",
    "DESC NULLS FIRST",
    "DESC NULLS LAST",
    "",
    "DESC",
];

#[tokio::test]
async fn every_key_type_in_every_order() {
    for partitions in [1, 3] {
        let (stock, ours) = contexts(partitions);
        for key in KEYS {
            for order in ORDERS {
                // `id` last makes the order total, so whole rows must agree.
                let sql = format!("SELECT {key}, id, s FROM t ORDER BY {key} {order}, id");
                assert_same(&stock, &ours, &sql).await;
                let sql = format!("SELECT * FROM t ORDER BY {key} {order}, id DESC LIMIT 37");
                assert_same(&stock, &ours, &sql).await;
            }
            // Equal keys (few values, nulls) with another column: the neighbour check
            // compares this key type, and DataFusion orders the equal rows.
            let sql = format!("SELECT {key}, id FROM t ORDER BY {key} DESC");
            assert_same(&stock, &ours, &sql).await;
            // The key alone: ties may come in any order, the keys may not.
            let sql = format!("SELECT {key} FROM t ORDER BY {key} DESC NULLS LAST");
            assert_same(&stock, &ours, &sql).await;
        }
    }
}

/// A rule-installed context that sorts partitions apart, over the test table.
fn separate_partitions(partitions: usize) -> SessionContext {
    let ctx = context_with_rule(
        partitions,
        BitonicSortRule::new(support::sorter()).with_combined_partitions(false),
    );
    ctx.register_table("t", table(partitions))
        .expect("registers");
    ctx
}

/// Top-k queries (which the rule leaves to DataFusion) under the rule: the full sorts around
/// them are ours, the results still DataFusion's.
#[tokio::test]
async fn top_k_queries_agree() {
    for partitions in [1, 2] {
        let (stock, ours) = (context(partitions, false), context(partitions, true));
        let table = table_of(partitions, MANY_ROWS);
        stock.register_table("t", table.clone()).expect("registers");
        ours.register_table("t", table).expect("registers");
        for key in KEYS {
            for order in ORDERS {
                let sql = format!("SELECT {key}, id FROM t ORDER BY {key} {order}, id LIMIT 10");
                assert_same(&stock, &ours, &sql).await;
            }
        }
        // Ties on the first key beyond the cut: the second key decides.
        let sql = "SELECT * FROM t ORDER BY u8 DESC, f64, id DESC LIMIT 3000";
        assert_same(&stock, &ours, sql).await;
        // A full sort of ours over a top-k of DataFusion's, equal keys in both.
        let sql =
            "SELECT * FROM (SELECT * FROM t ORDER BY u8 DESC LIMIT 3000 OFFSET 7) ORDER BY i8";
        assert_same(&stock, &ours, sql).await;
        assert!(physical_plan(&ours, sql).await.contains("BitonicSortExec"));
    }
}

#[tokio::test]
async fn several_keys_and_limits() {
    for (partitions, combined) in [(1, true), (4, true), (4, false)] {
        let (stock, ours) = contexts(partitions);
        let ours = if combined {
            ours
        } else {
            separate_partitions(partitions)
        };
        for sql in [
            "SELECT * FROM t ORDER BY i8 DESC, f64 ASC NULLS FIRST, ts_s, id",
            "SELECT u16, f32, id FROM t ORDER BY u16, f32 DESC NULLS LAST, id LIMIT 50",
            "SELECT f16, date32, dur_ns, id FROM t ORDER BY f16 NULLS LAST, date32 DESC, dur_ns, id",
            "SELECT * FROM t ORDER BY u64 DESC, i64, time64ns DESC, ts_ns_utc, id LIMIT 1",
            "SELECT id FROM t ORDER BY id DESC LIMIT 0",
            "SELECT id, f64 FROM t ORDER BY f64, id LIMIT 5000",
            "SELECT id, f64 FROM t WHERE id < 0 ORDER BY f64",
            "SELECT id, f64 FROM t WHERE id = 5 ORDER BY f64 DESC, id",
            "SELECT * FROM (SELECT * FROM t ORDER BY f32 DESC, id LIMIT 100) ORDER BY i16, id",
            "SELECT i32, count(*) AS n FROM t GROUP BY i32 ORDER BY n DESC, i32",
        ] {
            assert_same(&stock, &ours, sql).await;
        }
    }
}

#[tokio::test]
async fn rule_fires_only_on_plain_columns_of_sorted_types() {
    let (_, ours) = contexts(4);
    let sql = "SELECT * FROM t ORDER BY f64 DESC, i32, id";
    let plan = physical_plan(&ours, sql).await;
    let expr = "expr=[f64@10 DESC, i32@2 ASC NULLS LAST, id@26 ASC NULLS LAST]";
    // Partitions combined: one sort over all of them, no merge.
    assert!(
        plan.contains(&format!(
            "BitonicSortExec: {expr}, preserve_partitioning=[false]"
        )),
        "{plan}"
    );
    assert!(plan.contains("CoalescePartitionsExec"), "{plan}");
    assert!(
        !plan.contains("SortPreservingMergeExec") && !plan.contains(" SortExec: "),
        "{plan}"
    );
    // Partitions apart: a sort per partition, merged.
    let apart = separate_partitions(4);
    let plan = physical_plan(&apart, sql).await;
    assert!(
        plan.contains(&format!(
            "BitonicSortExec: {expr}, preserve_partitioning=[true]"
        )),
        "{plan}"
    );
    assert!(
        plan.contains("SortPreservingMergeExec") && !plan.contains(" SortExec: "),
        "{plan}"
    );
    // A top-k stays DataFusion's.
    let plan = physical_plan(&ours, "SELECT * FROM t ORDER BY u8 LIMIT 10").await;
    assert!(
        plan.contains("SortExec: TopK(fetch=10)") && !plan.contains("BitonicSortExec"),
        "{plan}"
    );
    let (_, single) = contexts(1);
    let plan = physical_plan(&single, "SELECT * FROM t ORDER BY ts_us").await;
    assert!(
        plan.contains("preserve_partitioning=[false]") && plan.contains("BitonicSortExec"),
        "{plan}"
    );
    for sql in [
        "SELECT * FROM t ORDER BY s",
        "SELECT * FROM t ORDER BY f64, s",
        "SELECT * FROM t ORDER BY i32 + 1",
        "SELECT * FROM t ORDER BY abs(f64) LIMIT 3",
    ] {
        let plan = physical_plan(&ours, sql).await;
        assert!(
            plan.contains("SortExec") && !plan.contains("BitonicSortExec"),
            "{sql}: {plan}"
        );
    }
}

#[tokio::test]
async fn sorts_the_rule_leaves_still_agree() {
    let (stock, ours) = contexts(2);
    for sql in [
        "SELECT s, id FROM t ORDER BY s, id",
        "SELECT i32 + 1 AS x, id FROM t ORDER BY x DESC, id",
        "SELECT f64, s, id FROM t ORDER BY f64, s, id LIMIT 20",
    ] {
        assert_same(&stock, &ours, sql).await;
    }
}
