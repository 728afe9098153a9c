//! Ballista in one process: a scheduler and three executors on the loopback interface, all
//! with the rule and the codec. ORDER BY ... LIMIT and a full ORDER BY over a table of
//! several files must return what stock DataFusion returns, and the executors must have
//! received our operator through the codec, its ranges of the first key included.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::config::BALLISTA_ADAPTIVE_PLANNER_ENABLED;
use ballista_core::serde::BallistaPhysicalExtensionCodec;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use bitonic_datafusion::{BitonicCodec, BitonicSortExec, BitonicSortRule, Ranges};
use datafusion::error::Result;
use datafusion::execution::{SessionStateBuilder, TaskContext};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use support::{assert_same, context, sorter};

/// The rule's ranges in this test.
const RANGES: Ranges = Ranges {
    count: Some(3),
    min_rows: 16,
};

/// [`BitonicCodec`], counting the sort nodes it decodes (the executors' side) with the
/// rule's ranges.
#[derive(Debug)]
struct CountingCodec {
    inner: BitonicCodec,
    sorts_decoded: Arc<AtomicUsize>,
}

impl PhysicalExtensionCodec for CountingCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let node = self.inner.try_decode(buf, inputs, ctx, proto_converter)?;
        if node
            .downcast_ref::<BitonicSortExec>()
            .is_some_and(|sort| sort.ranges() == RANGES)
        {
            self.sorts_decoded.fetch_add(1, Ordering::Relaxed);
        }
        Ok(node)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        self.inner.try_encode(node, buf, proto_converter)
    }
}

/// Writes a table of four Parquet files (10% null Float64 keys, ties, an Int32 and a unique
/// id) under `dir`.
async fn write_table(dir: &std::path::Path) -> Result<()> {
    let ctx = SessionContext::new();
    for part in 0..4 {
        let (from, to) = (part * 5000 + 1, part * 5000 + 5000);
        let sql = format!(
            "COPY (SELECT value AS id, \
                CASE WHEN value % 10 = 0 THEN NULL \
                     ELSE CAST((value * 7919) % 1009 AS DOUBLE) * 1.5 - 700.0 END AS key, \
                CAST(value % 13 AS INT) AS a \
             FROM generate_series({from}, {to})) \
             TO '{}/part-{part}.parquet' STORED AS PARQUET",
            dir.display()
        );
        ctx.sql(&sql).await?.collect().await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scheduler_and_three_executors_sort_as_datafusion_does() -> Result<()> {
    let sorts_decoded = Arc::new(AtomicUsize::new(0));
    let codec = Arc::new(CountingCodec {
        inner: BitonicCodec::new(
            sorter(),
            Arc::new(BallistaPhysicalExtensionCodec::default()),
        ),
        sorts_decoded: Arc::clone(&sorts_decoded),
    });
    // Ballista's adaptive planner re-plans stages with a fixed list of rules, which has no
    // place for ours; the static planner keeps the session's physical plan.
    let config = SessionConfig::new_with_ballista()
        .with_target_partitions(4)
        .with_ballista_physical_extension_codec(codec)
        .set_str(BALLISTA_ADAPTIVE_PLANNER_ENABLED, "false");
    // Ranges of a few rows, so that the executor's sort of the small table runs them too.
    let rule = BitonicSortRule::new(sorter()).with_ranges(RANGES);
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_physical_optimizer_rule(Arc::new(rule))
        .build();

    let scheduler = ballista_scheduler::standalone::new_standalone_scheduler_from_state(&state)
        .await
        .expect("a scheduler");
    let scheduler_url = format!("http://localhost:{}", scheduler.port());
    for _ in 0..3 {
        let client = loop {
            match SchedulerGrpcClient::connect(scheduler_url.clone()).await {
                Ok(client) => break client,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
            }
        };
        ballista_executor::new_standalone_executor_from_state(client, 2, &state)
            .await
            .expect("an executor");
    }
    let cluster =
        SessionContext::remote_with_state(&format!("df://localhost:{}", scheduler.port()), state)
            .await?;

    let dir = std::env::temp_dir().join(format!("bitonic-ballista-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a table directory");
    write_table(&dir).await?;
    let stock = context(4, false);
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION '{}/'",
        dir.display()
    );
    stock.sql(&create).await?.collect().await?;
    cluster.sql(&create).await?.collect().await?;

    for sql in [
        "SELECT id, key FROM t ORDER BY key DESC NULLS LAST, id LIMIT 100",
        "SELECT * FROM t ORDER BY key, id",
        "SELECT * FROM t ORDER BY a DESC, key NULLS FIRST, id",
    ] {
        assert_same(&stock, &cluster, sql).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        sorts_decoded.load(Ordering::Relaxed) > 0,
        "no executor received a BitonicSortExec with the rule's ranges"
    );
    Ok(())
}
