//! Ballista in one process with bitonic sorts: a scheduler and two executors on the
//! loopback interface, each with the rule and the codec, then an ORDER BY ... LIMIT and a
//! full ORDER BY over a table of four Parquet files, checked against stock DataFusion.
//!
//! ```text
//! cargo run -p bitonic-datafusion --example ballista
//! ```

use std::sync::Arc;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::config::BALLISTA_ADAPTIVE_PLANNER_ENABLED;
use ballista_core::serde::BallistaPhysicalExtensionCodec;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use bitonic_datafusion::{BitonicCodec, Sorter};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

#[tokio::main]
async fn main() -> Result<()> {
    let sorter = Arc::new(Sorter::new().map_err(|e| DataFusionError::External(Box::new(e)))?);
    println!(
        "sorter: {} ({:?})",
        sorter.device().name,
        sorter.device().backend
    );

    // One session state for the scheduler (which plans, so it needs the rule) and the
    // executors (which decode plans, so they need the codec).
    let codec = BitonicCodec::new(
        Arc::clone(&sorter),
        Arc::new(BallistaPhysicalExtensionCodec::default()),
    );
    // Ballista's adaptive planner re-plans stages with a fixed list of rules, which has no
    // place for ours; the static planner keeps the session's physical plan.
    let config = SessionConfig::new_with_ballista()
        .with_target_partitions(4)
        .with_ballista_physical_extension_codec(Arc::new(codec))
        .set_str(BALLISTA_ADAPTIVE_PLANNER_ENABLED, "false");
    let builder = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config);
    let state = bitonic_datafusion::register(builder, Arc::clone(&sorter)).build();

    let scheduler = ballista_scheduler::standalone::new_standalone_scheduler_from_state(&state)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let scheduler_url = format!("http://localhost:{}", scheduler.port());
    println!("scheduler at {scheduler_url}");
    for executor in 0..2 {
        let client = loop {
            match SchedulerGrpcClient::connect(scheduler_url.clone()).await {
                Ok(client) => break client,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
            }
        };
        ballista_executor::new_standalone_executor_from_state(client, 2, &state)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        println!("executor {executor} registered");
    }
    let cluster =
        SessionContext::remote_with_state(&format!("df://localhost:{}", scheduler.port()), state)
            .await?;

    let dir = std::env::temp_dir().join(format!("bitonic-ballista-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let local = SessionContext::new();
    for part in 0..4 {
        let (from, to) = (part * 250_000 + 1, part * 250_000 + 250_000);
        local
            .sql(&format!(
                "COPY (SELECT value AS id, \
                    CASE WHEN value % 10 = 0 THEN NULL ELSE random() * 1e6 END AS key \
                 FROM generate_series({from}, {to})) \
                 TO '{}/part-{part}.parquet' STORED AS PARQUET",
                dir.display()
            ))
            .await?
            .collect()
            .await?;
    }
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION '{}/'",
        dir.display()
    );
    local.sql(&create).await?.collect().await?;
    cluster.sql(&create).await?.collect().await?;

    for sql in [
        "SELECT id, key FROM t ORDER BY key DESC NULLS LAST, id LIMIT 5",
        "SELECT id, key FROM t ORDER BY key, id",
    ] {
        let start = std::time::Instant::now();
        let ours = cluster.sql(sql).await?.collect().await?;
        let elapsed = start.elapsed();
        let stock = local.sql(sql).await?.collect().await?;
        let rows: usize = ours.iter().map(|b| b.num_rows()).sum();
        let same = datafusion::arrow::compute::concat_batches(&ours[0].schema(), &ours)?
            == datafusion::arrow::compute::concat_batches(&stock[0].schema(), &stock)?;
        println!(
            "{sql}\n  {rows} rows in {elapsed:.2?} on the cluster; same as stock DataFusion: {same}"
        );
        if rows <= 5 {
            datafusion::arrow::util::pretty::print_batches(&ours)?;
        }
        if !same {
            return Err(DataFusionError::Execution(format!("{sql}: results differ")));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
