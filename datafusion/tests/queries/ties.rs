//! Rows with equal sort keys: DataFusion's order by default, at every partition count and
//! under OFFSET and LIMIT; the sorter's input order with stable ties.

use super::*;

/// The `c2` column DataFusion 55.2 returns for the `window_2.csv` join at 4 partitions.
const EXPECTED_JOIN_C2: &[i32] = &[
    96, 87, 82, 79, 96, 87, 82, 79, 96, 87, 82, 79, 96, 87, 82, 79,
];

/// The same with `OFFSET 3 LIMIT 2` on the outer query.
const EXPECTED_FURTHER_C2: &[i32] = &[79, 96];

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

/// The `ties_resorted` metric of `sql`'s sort in `ctx`.
async fn ties_resorted(ctx: &SessionContext, sql: &str) -> String {
    metric(ctx, sql, "ties_resorted").await
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
