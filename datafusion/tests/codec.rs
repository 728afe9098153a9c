//! The codec: plans with [`BitonicSortExec`] survive a round trip through bytes (keys,
//! options, fetch, partitioning), other nodes go to the wrapped codec, and the decoded plan
//! returns the same rows.

mod support;

use std::sync::Arc;

use bitonic_datafusion::{BitonicCodec, BitonicSortExec};
use datafusion::arrow::array::{Float64Array, Int32Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use support::{context, context_with_rule, rows, sorter};

fn table() -> Arc<MemTable> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Float64, true),
    ]));
    let batch = |start: i32| {
        RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int32Array::from_iter(
                    (start..start + 100).map(|i| (i % 7 != 0).then_some(i % 5)),
                )),
                Arc::new(Float64Array::from_iter((start..start + 100).map(|i| {
                    (i % 11 != 0).then_some(if i % 13 == 0 {
                        f64::NAN
                    } else {
                        -(i as f64) * 0.5
                    })
                }))),
            ],
        )
        .expect("a batch")
    };
    Arc::new(
        MemTable::try_new(
            Arc::clone(&schema),
            vec![vec![batch(0)], vec![batch(100), batch(200)]],
        )
        .expect("a table"),
    )
}

fn bitonic_nodes(plan: &Arc<dyn ExecutionPlan>) -> usize {
    usize::from(plan.downcast_ref::<BitonicSortExec>().is_some())
        + plan
            .children()
            .into_iter()
            .map(bitonic_nodes)
            .sum::<usize>()
}

/// The options of every [`BitonicSortExec`] in `plan` that EXPLAIN does not show in full.
fn sort_options(plan: &Arc<dyn ExecutionPlan>) -> Vec<bitonic_datafusion::Ranges> {
    let own = plan
        .downcast_ref::<BitonicSortExec>()
        .map(BitonicSortExec::ranges);
    own.into_iter()
        .chain(plan.children().into_iter().flat_map(sort_options))
        .collect()
}

#[tokio::test]
async fn plans_round_trip_and_run_alike() {
    let ctx = context(2, true);
    ctx.register_table("t", table()).expect("registers");
    let codec = BitonicCodec::standalone(sorter());
    let mut plans = Vec::new();
    for sql in [
        "SELECT * FROM t ORDER BY a DESC NULLS LAST, b",
        "SELECT * FROM t ORDER BY b NULLS FIRST, a",
        "SELECT b FROM t WHERE a > 1 ORDER BY b DESC",
    ] {
        let plan = ctx
            .sql(sql)
            .await
            .expect("plans")
            .create_physical_plan()
            .await
            .expect("a plan");
        plans.push((sql.to_string(), plan));
    }
    // A sort with a fetch, set by hand (the rule leaves top-k sorts to DataFusion).
    let fetched = Arc::clone(&plans[1].1)
        .with_fetch(Some(17))
        .expect("the top node is ours and takes a fetch");
    plans.push(("the second plan with fetch 17".to_string(), fetched));
    // The rule's stable ties and ranges, which EXPLAIN shows.
    let stable = context_with_rule(
        2,
        bitonic_datafusion::BitonicSortRule::new(sorter())
            .with_stable_ties(true)
            .with_ranges(bitonic_datafusion::Ranges {
                count: Some(3),
                min_rows: 5,
            }),
    );
    stable.register_table("t", table()).expect("registers");
    let plan = stable
        .sql("SELECT * FROM t ORDER BY b")
        .await
        .expect("plans")
        .create_physical_plan()
        .await
        .expect("a plan");
    let shown = displayable(plan.as_ref()).indent(true).to_string();
    assert!(shown.contains("stable_ties=[true], ranges=[3]"), "{shown}");
    plans.push(("stable ties".to_string(), plan));
    for (sql, plan) in plans {
        assert!(bitonic_nodes(&plan) > 0, "{sql}: the rule did not fire");
        let bytes = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &codec)
            .expect("encodes");
        let decoded =
            physical_plan_from_bytes_with_extension_codec(&bytes, &ctx.task_ctx(), &codec)
                .expect("decodes");
        assert_eq!(sort_options(&plan), sort_options(&decoded), "{sql}");
        assert_eq!(
            displayable(plan.as_ref()).indent(true).to_string(),
            displayable(decoded.as_ref()).indent(true).to_string(),
            "{sql}"
        );
        let expected = collect(plan, ctx.task_ctx()).await.expect("runs");
        let actual = collect(decoded, ctx.task_ctx())
            .await
            .expect("the decoded plan runs");
        assert_eq!(rows(&expected), rows(&actual), "{sql}");
    }
}

#[test]
fn foreign_bytes_go_to_the_wrapped_codec() {
    use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
    let codec = BitonicCodec::standalone(sorter());
    let ctx = context(1, true);
    let error = codec
        .try_decode(
            b"\x0a\x02hi",
            &[],
            &ctx.task_ctx(),
            &DefaultPhysicalProtoConverter {},
        )
        .expect_err("the default codec decodes nothing");
    assert!(error.to_string().contains("not provided"), "{error}");
    let error = codec
        .try_decode(
            b"\0bitonic-sort\x01\xff",
            &[],
            &ctx.task_ctx(),
            &DefaultPhysicalProtoConverter {},
        )
        .expect_err("malformed");
    assert!(error.to_string().contains("BitonicSortExec"), "{error}");
}
