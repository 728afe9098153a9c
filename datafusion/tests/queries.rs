//! ORDER BY over every key type the rule hands to the sorter (nulls, NaN, -0.0, extremes,
//! ties), in every direction and null placement, with several keys and with LIMIT: every
//! result equal to stock DataFusion's, and the plans showing which operator ran.

mod support;

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

/// The `c2` column DataFusion 55.2 returns for the `window_2.csv` join at 4 partitions.
const EXPECTED_JOIN_C2: &[i32] = &[
    96, 87, 82, 79, 96, 87, 82, 79, 96, 87, 82, 79, 96, 87, 82, 79,
];

/// The same with `OFFSET 3 LIMIT 2` on the outer query.
const EXPECTED_FURTHER_C2: &[i32] = &[79, 96];

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

/// Rows with equal sort keys and different other columns come in DataFusion's order, at
/// every partition count, partitions combined or apart, under OFFSET and LIMIT: the sort
/// finds the equal neighbours and sorts those rows again by DataFusion's plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn equal_keys_come_in_datafusion_order() {
    for partitions in [1, 4, 16] {
        for combined in [true, false] {
            let (stock, ours) = contexts(partitions);
            let ours = if combined {
                ours
            } else {
                separate_partitions(partitions)
            };
            // Seven values and nulls over 3001 rows: long runs of equal keys.
            for (sql, on_ours) in [
                ("SELECT u8, id, s FROM t ORDER BY u8", true),
                ("SELECT * FROM t ORDER BY i16 DESC NULLS FIRST, f32", true),
                ("SELECT f64, id FROM t ORDER BY f64 DESC", true),
                ("SELECT u8, id FROM t ORDER BY u8 OFFSET 400", true),
                // A top-k here (`ORDER BY u8 ... LIMIT`) is left out: it stays DataFusion's, whose
                // choice among equal keys at 16 partitions varies from run to run.
                // Row numbers over equal keys follow the sort's order of them.
                (
                    "SELECT u8, id, row_number() OVER (ORDER BY u8) AS n FROM t",
                    true,
                ),
            ] {
                for _ in 0..3 {
                    assert_same(&stock, &ours, sql).await;
                }
                let plan = physical_plan(&ours, sql).await;
                assert_eq!(plan.contains("BitonicSortExec"), on_ours, "{sql}: {plan}");
            }
        }
    }
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

/// The `ties_resorted` metric of `sql`'s sort in `ctx`.
async fn ties_resorted(ctx: &SessionContext, sql: &str) -> String {
    metric(ctx, sql, "ties_resorted").await
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

/// With stable ties, equal keys keep their input order without DataFusion's sort again: one
/// partition gives stock's `ORDER BY key, id` (`id` counts the rows in input order), and
/// several give the same rows on every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stable_ties_keep_the_input_order() {
    let stable = |partitions: usize| {
        let ctx = context_with_rule(
            partitions,
            BitonicSortRule::new(support::sorter()).with_stable_ties(true),
        );
        ctx.register_table("t", table(partitions))
            .expect("registers");
        ctx
    };
    let (stock, ours) = (context(1, false), stable(1));
    stock.register_table("t", table(1)).expect("registers");
    for (sql, by_id) in [
        (
            "SELECT u8, id FROM t ORDER BY u8",
            "SELECT u8, id FROM t ORDER BY u8, id",
        ),
        (
            "SELECT f64, s, id FROM t ORDER BY f64 DESC NULLS LAST",
            "SELECT f64, s, id FROM t ORDER BY f64 DESC NULLS LAST, id",
        ),
    ] {
        assert_eq!(ties_resorted(&ours, sql).await, "ties_resorted=0", "{sql}");
        let expected = support::rows(&run(&stock, by_id).await);
        let actual = support::rows(&run(&ours, sql).await);
        assert_eq!(
            expected.map(|b| b.columns().to_vec()),
            actual.map(|b| b.columns().to_vec()),
            "{sql}"
        );
    }
    let ours = stable(4);
    let sql = "SELECT u8, id FROM t ORDER BY u8";
    let first = run(&ours, sql).await;
    for _ in 0..3 {
        let again = run(&ours, sql).await;
        assert_eq!(
            support::rows(&first),
            support::rows(&again),
            "{sql} changed between runs"
        );
    }
}

/// Distinct keys keep the sorter's result; equal keys in a column that shows them are
/// sorted again; equal keys where every column is a key are not (the order cannot show).
#[tokio::test]
async fn only_visible_ties_are_sorted_again() {
    let (_, ours) = contexts(1);
    assert_eq!(
        ties_resorted(&ours, "SELECT u8, id FROM t ORDER BY id").await,
        "ties_resorted=0"
    );
    assert_eq!(
        ties_resorted(&ours, "SELECT u8, id FROM t ORDER BY u8").await,
        "ties_resorted=1"
    );
    assert_eq!(
        ties_resorted(&ours, "SELECT u8 FROM t ORDER BY u8").await,
        "ties_resorted=0"
    );
}

/// The query over `window_2.csv` whose inner top-ks cut between rows with equal keys: the
/// rows and their order are stock DataFusion's (written out below, as DataFusion 55.2 returns
/// them at 4 target partitions), at every partition count.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offsets_between_equal_keys_return_datafusion_rows() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/slt/data/window_2.csv");
    let create = format!(
        "CREATE EXTERNAL TABLE ordered_table (a0 INT, a INT, b INT, c INT, d INT) \
         STORED AS CSV WITH ORDER (c ASC) LOCATION '{path}' OPTIONS ('format.has_header' 'true')"
    );
    let join = "SELECT t1.b, c, c2 FROM ( \
          SELECT b, c FROM ordered_table ORDER BY b DESC, c DESC OFFSET 1 LIMIT 4 \
        ) AS t1 INNER JOIN ( \
          SELECT b, c AS c2 FROM ordered_table ORDER BY b DESC, d DESC OFFSET 1 LIMIT 4 \
        ) AS t2 ON t1.b = t2.b ORDER BY t1.b DESC, c DESC, c2 DESC";
    let further = format!("{join} OFFSET 3 LIMIT 2");
    let probe = "SELECT b, c AS c2, d FROM ordered_table ORDER BY b DESC, d DESC OFFSET 1 LIMIT 4";
    for partitions in [1, 4, 16] {
        let (stock, ours) = (context(partitions, false), context(partitions, true));
        for ctx in [&stock, &ours] {
            ctx.sql(&create)
                .await
                .expect("creates")
                .collect()
                .await
                .expect("creates");
        }
        for sql in [join, further.as_str(), probe] {
            assert_same(&stock, &ours, sql).await;
        }
        assert!(physical_plan(&ours, join).await.contains("BitonicSortExec"));
        if partitions == 4 {
            let column = |batches: Vec<RecordBatch>, index: usize| -> Vec<i32> {
                batches
                    .iter()
                    .flat_map(|batch| {
                        batch
                            .column(index)
                            .as_primitive::<datafusion::arrow::datatypes::Int32Type>()
                            .values()
                            .to_vec()
                    })
                    .collect()
            };
            let run = |sql: String| {
                let ours = &ours;
                async move {
                    ours.sql(&sql)
                        .await
                        .expect("plans")
                        .collect()
                        .await
                        .expect("runs")
                }
            };
            assert_eq!(
                column(run(join.to_string()).await, 2),
                EXPECTED_JOIN_C2,
                "{join}"
            );
            assert_eq!(
                column(run(further.clone()).await, 2),
                EXPECTED_FURTHER_C2,
                "{further}"
            );
            assert_eq!(
                column(run(probe.to_string()).await, 1),
                vec![82, 87, 79, 96],
                "{probe}"
            );
        }
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

/// A context with one partition whose memory pool holds `bytes`, with the rule when
/// `bitonic` is set, over a table of 2^16 rows. Sorts reserve 64 KiB for their merge where
/// they spill, so that a pool a fraction of the table's size still lets stock DataFusion's
/// sort finish.
fn pool_context(bytes: usize, bitonic: bool) -> SessionContext {
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(GreedyMemoryPool::new(bytes)))
        .build_arc()
        .expect("a runtime");
    let mut config = SessionConfig::new().with_target_partitions(1);
    config.options_mut().execution.sort_spill_reservation_bytes = 64 << 10;
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_runtime_env(runtime);
    let state = if bitonic {
        bitonic_datafusion::register(state, support::sorter())
    } else {
        state
    };
    let ctx = SessionContext::new_with_state(state.build());
    ctx.register_table("t", table_of(1, 1 << 16))
        .expect("registers");
    ctx
}

/// A pool of 16 MiB, far below what the table's batches take: stock DataFusion's sort spills
/// to disk and finishes, and so does ours (DataFusion's own sort takes over where the pool
/// refuses, counted in `fallbacks`), with the same rows in the same order; ties included,
/// since both runs are then DataFusion's external sort over the same batches.
#[tokio::test]
async fn a_pool_too_small_for_the_table_spills_as_stock_does() {
    let pool = 16 << 20;
    let (stock, ours) = (pool_context(pool, false), pool_context(pool, true));
    for sql in [
        "SELECT * FROM t ORDER BY id DESC",
        "SELECT * FROM t ORDER BY f64, id",
        "SELECT * FROM t ORDER BY u8",
    ] {
        let stock_plan = physical_plan(&stock, &format!("ANALYZE {sql}")).await;
        assert!(
            stock_plan.contains("SortExec") && !stock_plan.contains("spill_count=0"),
            "stock did not spill: {stock_plan}"
        );
        assert_same(&stock, &ours, sql).await;
        assert_eq!(
            metric(&ours, sql, "fallbacks").await,
            "fallbacks=1",
            "{sql}"
        );
    }
}

/// A pool too small for even DataFusion's own sort: the query fails with the pool's error,
/// as stock's does.
#[tokio::test]
async fn a_pool_too_small_for_any_sort_gives_resources_exhausted() {
    for bitonic in [false, true] {
        let ctx = pool_context(4096, bitonic);
        let error = ctx
            .sql("SELECT * FROM t ORDER BY f64")
            .await
            .expect("plans")
            .collect()
            .await
            .expect_err("4 KiB cannot hold the sort's merge");
        assert!(error.to_string().contains("Resources exhausted"), "{error}");
    }
}
