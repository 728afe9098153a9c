//! Memory pools smaller than the table: our sort spills where stock's does, and fails only
//! where stock's fails.

use super::*;

/// A context with one partition whose memory pool holds `bytes`, with the rule when
/// `bitonic` is set, over a table of 2^16 rows. Sorts reserve 64 KiB for their merge where
/// they spill, so that a pool a fraction of the table's size still lets stock DataFusion's
/// sort finish.
fn pool_context(bytes: usize, bitonic: bool) -> SessionContext {
    let rule = bitonic.then(|| BitonicSortRule::new(support::sorter()));
    pool_context_with(bytes, rule)
}

/// [`pool_context`] with `rule` where given.
fn pool_context_with(bytes: usize, rule: Option<BitonicSortRule>) -> SessionContext {
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
    let state = match rule {
        Some(rule) => state.with_physical_optimizer_rule(Arc::new(rule)),
        None => state,
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

/// A pool that holds the table's batches but not their copy into ranges: the sort has read
/// every row and chosen ranges when the pool refuses, and DataFusion's own sort takes over
/// the rows it read, spilling, with stock's result.
#[tokio::test]
async fn a_pool_refusing_the_ranges_copy_spills_as_stock_does() {
    let table = pool_context(usize::MAX, false)
        .sql("SELECT * FROM t")
        .await
        .expect("plans")
        .collect()
        .await
        .expect("reads");
    let size: usize = table.iter().map(RecordBatch::get_array_memory_size).sum();
    let pool = size + size / 2;
    let rule = BitonicSortRule::new(support::sorter()).with_ranges(bitonic_datafusion::Ranges {
        count: Some(4),
        min_rows: 16,
    });
    let (stock, ours) = (
        pool_context(pool, false),
        pool_context_with(pool, Some(rule)),
    );
    for sql in [
        "SELECT * FROM t ORDER BY id DESC",
        "SELECT * FROM t ORDER BY f64, id",
    ] {
        assert_same(&stock, &ours, sql).await;
        assert_eq!(
            metric(&ours, sql, "fallbacks").await,
            "fallbacks=1",
            "{sql}"
        );
    }
}
