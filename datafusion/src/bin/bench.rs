//! Times DataFusion queries that sort, with DataFusion's own sort and with
//! `bitonic_datafusion`'s rule, on the same tables in the same run.
//!
//! ```text
//! bitonic-datafusion-bench [--rows-log2 24,25,26] [--partitions 1,16] [--runs 5] [--cases all]
//!                          [--ranges N]
//! ```
//!
//! `--ranges N` sets the rule's ranges of the first key (`Ranges::count`; 1 sorts all rows at
//! once); without it the rule's default (the session's `target_partitions`).
//!
//! Cases: `f64` (`ORDER BY key` over a Float64 key with 10% nulls and an Int64 payload),
//! `limit` (the same `ORDER BY key LIMIT 100`), `two-keys` (`ORDER BY a, b` over an Int32
//! and a Float64 key with an Int64 payload). Each query runs once to warm up, then `--runs`
//! times; the table shows the medians. Every run's sort keys are checked against the stock
//! result.

use std::sync::Arc;
use std::time::Instant;

use bitonic_datafusion::Sorter;
use datafusion::arrow::array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const BATCH_ROWS: usize = 8192;

struct Options {
    rows_log2: Vec<u32>,
    partitions: Vec<usize>,
    runs: usize,
    cases: Vec<String>,
    ranges: Option<usize>,
}

fn parse_list<T: std::str::FromStr>(text: &str, what: &str) -> Vec<T> {
    text.split(',')
        .map(|item| {
            item.trim()
                .parse()
                .unwrap_or_else(|_| usage(&format!("bad {what}: {item}")))
        })
        .collect()
}

fn usage(message: &str) -> ! {
    eprintln!("{message}");
    eprintln!(
        "usage: bitonic-datafusion-bench [--rows-log2 24,25,26] [--partitions 1,16] \
         [--runs 5] [--cases f64,limit,two-keys] [--ranges N]"
    );
    std::process::exit(2)
}

fn options() -> Options {
    let mut options = Options {
        rows_log2: vec![24, 25, 26],
        partitions: vec![1, 16],
        runs: 5,
        cases: vec!["f64".into(), "limit".into(), "two-keys".into()],
        ranges: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--rows-log2" => options.rows_log2 = parse_list(&value, "row count"),
            "--partitions" => options.partitions = parse_list(&value, "partition count"),
            "--runs" => options.runs = parse_list(&value, "run count")[0],
            "--cases" => options.cases = parse_list(&value, "case"),
            "--ranges" => options.ranges = Some(parse_list(&value, "range count")[0]),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    options.runs = options.runs.max(1);
    options
}

/// `rows` rows in batches of [`BATCH_ROWS`], dealt round robin into `partitions` partitions.
fn partitioned(batches: Vec<RecordBatch>, partitions: usize) -> Vec<Vec<RecordBatch>> {
    let mut out = vec![Vec::new(); partitions];
    for (i, batch) in batches.into_iter().enumerate() {
        out[i % partitions].push(batch);
    }
    out
}

/// Float64 `key` (10% null, a few NaN and -0.0) and Int64 `payload`.
fn float_table(rows: usize, rng: &mut StdRng) -> (Arc<Schema>, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Float64, true),
        Field::new("payload", DataType::Int64, false),
    ]));
    let batches = (0..rows)
        .step_by(BATCH_ROWS)
        .map(|start| {
            let len = BATCH_ROWS.min(rows - start);
            let key: Float64Array = (0..len)
                .map(|_| match rng.gen_range(0..1000) {
                    0..100 => None,
                    100 => Some(f64::NAN),
                    101 => Some(-0.0),
                    _ => Some(rng.r#gen::<f64>() * 2e6 - 1e6),
                })
                .collect();
            let payload = Int64Array::from_iter_values((start..start + len).map(|i| i as i64));
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(key) as ArrayRef, Arc::new(payload)],
            )
            .expect("columns match the schema")
        })
        .collect();
    (schema, batches)
}

/// Int32 `a` (1000 distinct values), Float64 `b`, Int64 `payload`.
fn two_key_table(rows: usize, rng: &mut StdRng) -> (Arc<Schema>, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, false),
        Field::new("b", DataType::Float64, false),
        Field::new("payload", DataType::Int64, false),
    ]));
    let batches = (0..rows)
        .step_by(BATCH_ROWS)
        .map(|start| {
            let len = BATCH_ROWS.min(rows - start);
            let a = Int32Array::from_iter_values((0..len).map(|_| rng.gen_range(0..1000)));
            let b = Float64Array::from_iter_values((0..len).map(|_| rng.r#gen::<f64>()));
            let payload = Int64Array::from_iter_values((start..start + len).map(|i| i as i64));
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(a) as ArrayRef, Arc::new(b), Arc::new(payload)],
            )
            .expect("columns match the schema")
        })
        .collect();
    (schema, batches)
}

/// A context of `partitions` partitions, with the rule over `sorter` where given, its ranges
/// set by `ranges` where given.
fn context(
    partitions: usize,
    sorter: Option<&Arc<Sorter>>,
    ranges: Option<usize>,
) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(partitions);
    let builder = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config);
    let builder = match sorter {
        Some(sorter) => {
            let defaults = bitonic_datafusion::Ranges::default();
            let rule = bitonic_datafusion::BitonicSortRule::new(Arc::clone(sorter)).with_ranges(
                bitonic_datafusion::Ranges {
                    count: ranges.or(defaults.count),
                    ..defaults
                },
            );
            builder.with_physical_optimizer_rule(Arc::new(rule))
        }
        None => builder,
    };
    SessionContext::new_with_state(builder.build())
}

/// The sort key columns of a result, concatenated, for comparing two runs' orders.
fn keys_of(batches: &[RecordBatch], columns: &[&str]) -> Vec<ArrayRef> {
    columns
        .iter()
        .map(|name| {
            let parts: Vec<ArrayRef> = batches
                .iter()
                .map(|batch| Arc::clone(batch.column_by_name(name).expect("key column")))
                .collect();
            let refs: Vec<&dyn Array> = parts.iter().map(|part| part.as_ref()).collect();
            datafusion::arrow::compute::concat(&refs).expect("same types")
        })
        .collect()
}

/// Whether two arrays hold the same values, floats compared bit for bit (NaN equals NaN).
fn same_values(a: &dyn Array, b: &dyn Array) -> bool {
    match (
        a.as_any().downcast_ref::<Float64Array>(),
        b.as_any().downcast_ref::<Float64Array>(),
    ) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|(x, y)| x.map(f64::to_bits) == y.map(f64::to_bits))
        }
        _ => a.to_data() == b.to_data(),
    }
}

async fn time_query(
    ctx: &SessionContext,
    sql: &str,
    runs: usize,
) -> Result<(f64, Vec<RecordBatch>)> {
    let mut result = ctx.sql(sql).await?.collect().await?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        drop(result);
        let start = Instant::now();
        result = ctx.sql(sql).await?.collect().await?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], result))
}

#[tokio::main]
async fn main() -> Result<()> {
    let options = options();
    let sorter = Arc::new(
        Sorter::new()
            .map_err(|error| datafusion::error::DataFusionError::External(Box::new(error)))?,
    );
    let device = sorter.device();
    println!(
        "sorter: {:?} {} ({}); host threads: {}",
        device.backend,
        device.name,
        device.vendor,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    println!("| case | rows | partitions | stock ms | bitonic ms | speedup | operator in plan |");
    println!("|---|---|---|---|---|---|---|");
    let mut rng = StdRng::seed_from_u64(0x5eed);
    for &log2 in &options.rows_log2 {
        let rows = 1usize << log2;
        for case in &options.cases {
            let (schema, batches, sql, key_names): (_, _, &str, &[&str]) = match case.as_str() {
                "f64" => {
                    let (schema, batches) = float_table(rows, &mut rng);
                    (
                        schema,
                        batches,
                        "SELECT key, payload FROM t ORDER BY key",
                        &["key"],
                    )
                }
                "limit" => {
                    let (schema, batches) = float_table(rows, &mut rng);
                    let sql = "SELECT key, payload FROM t ORDER BY key DESC NULLS LAST LIMIT 100";
                    (schema, batches, sql, &["key"])
                }
                "two-keys" => {
                    let (schema, batches) = two_key_table(rows, &mut rng);
                    (
                        schema,
                        batches,
                        "SELECT a, b, payload FROM t ORDER BY a, b",
                        &["a", "b"],
                    )
                }
                other => usage(&format!("unknown case {other}")),
            };
            for &partitions in &options.partitions {
                let table = Arc::new(MemTable::try_new(
                    Arc::clone(&schema),
                    partitioned(batches.clone(), partitions),
                )?);
                let stock = context(partitions, None, None);
                let ours = context(partitions, Some(&sorter), options.ranges);
                stock.register_table("t", table.clone())?;
                ours.register_table("t", table)?;
                let plan = ours.sql(&format!("EXPLAIN {sql}")).await?.collect().await?;
                let plan =
                    datafusion::arrow::util::pretty::pretty_format_batches(&plan)?.to_string();
                let fired = plan.contains("BitonicSortExec");
                let (stock_ms, stock_rows) = time_query(&stock, sql, options.runs).await?;
                let (our_ms, our_rows) = time_query(&ours, sql, options.runs).await?;
                let same = keys_of(&stock_rows, key_names)
                    .iter()
                    .zip(&keys_of(&our_rows, key_names))
                    .all(|(stock, ours)| same_values(stock.as_ref(), ours.as_ref()));
                if !same {
                    eprintln!(
                        "MISMATCH: {case} 2^{log2} rows, {partitions} partitions: sort keys differ from stock DataFusion's"
                    );
                    std::process::exit(1);
                }
                println!(
                    "| {case} | 2^{log2} | {partitions} | {stock_ms:.1} | {our_ms:.1} | {:.2}x | {} |",
                    stock_ms / our_ms,
                    if fired {
                        "BitonicSortExec"
                    } else {
                        "SortExec (rule did not fire)"
                    }
                );
            }
        }
    }
    Ok(())
}
