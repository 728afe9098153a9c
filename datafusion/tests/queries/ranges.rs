//! Full sorts run as ranges of their first key: the same rows in the same order as stock
//! DataFusion (and as one sort of all rows), for every key type and order, with nulls, ties,
//! skewed and empty inputs.

use bitonic_datafusion::Ranges;

use super::*;

/// A rule-installed context whose full sorts of at least two rows split into up to `count`
/// ranges (no fewest rows per range), with stable ties where asked, over `table`.
fn ranged(
    partitions: usize,
    count: usize,
    stable_ties: bool,
    table: Arc<MemTable>,
) -> SessionContext {
    let rule = BitonicSortRule::new(support::sorter())
        .with_stable_ties(stable_ties)
        .with_ranges(Ranges {
            count: Some(count),
            min_rows: 1,
        });
    let ctx = context_with_rule(partitions, rule);
    ctx.register_table("t", table).expect("registers");
    ctx
}

/// The `ranges_sorted` metric of `sql`'s sort: how many ranges it sorted on their own.
async fn ranges_sorted(ctx: &SessionContext, sql: &str) -> usize {
    let value = metric(ctx, sql, "ranges_sorted").await;
    value["ranges_sorted=".len()..].parse().expect("a count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ranges_agree_with_stock_on_every_key_type_and_order() {
    for (partitions, count) in [(1, 2), (3, 5), (4, 16)] {
        let table = table(partitions);
        let stock = context(partitions, false);
        stock.register_table("t", table.clone()).expect("registers");
        let ours = ranged(partitions, count, false, table);
        for key in KEYS {
            for order in ORDERS {
                // `id` last makes the order total, so whole rows must agree.
                let sql = format!("SELECT {key}, id, s FROM t ORDER BY {key} {order}, id");
                assert_same(&stock, &ours, &sql).await;
            }
            // Equal keys with another column: DataFusion's order of them, by its own sort.
            let sql = format!("SELECT {key}, id FROM t ORDER BY {key} DESC NULLS FIRST");
            assert_same(&stock, &ours, &sql).await;
        }
        let sql = "SELECT * FROM t ORDER BY f64 DESC, i8, id";
        assert_same(&stock, &ours, sql).await;
        // The ranges ran: a splitter adds two ranges to the first.
        let ranges = ranges_sorted(&ours, sql).await;
        assert!(
            (3..2 * count).contains(&ranges),
            "{ranges} ranges of {count}"
        );
        assert!(
            physical_plan(&ours, sql)
                .await
                .contains(&format!("ranges=[{count}]"))
        );
    }
}

/// With stable ties, ranges give exactly the order of one sort of all rows: rows of equal
/// first keys share a range, and each range keeps its rows in their input order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stable_ties_in_ranges_equal_one_sort_of_all_rows() {
    for partitions in [1, 4] {
        let table = table_of(partitions, MANY_ROWS);
        let whole = ranged(partitions, 1, true, table.clone());
        let ours = ranged(partitions, 8, true, table);
        for sql in [
            "SELECT u8, id, s FROM t ORDER BY u8",
            "SELECT * FROM t ORDER BY i16 DESC NULLS FIRST, f32",
            "SELECT f64, id FROM t ORDER BY f64 DESC NULLS LAST",
            "SELECT ts_ns_utc, s, id FROM t ORDER BY ts_ns_utc DESC",
        ] {
            assert_same(&whole, &ours, sql).await;
            assert!(ranges_sorted(&ours, sql).await > 1, "{sql}");
        }
    }
}

/// Inputs that could unbalance or empty the ranges: every key equal, every key null, two
/// distinct keys, keys already sorted or reversed, one row, and no rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn skewed_sorted_and_empty_inputs_agree_with_stock() {
    for partitions in [1, 3] {
        let table = table_of(partitions, MANY_ROWS);
        let stock = context(partitions, false);
        stock.register_table("t", table.clone()).expect("registers");
        let ours = ranged(partitions, 6, false, table);
        for sql in [
            "SELECT id, s FROM t ORDER BY id % 1, id DESC",
            "SELECT id FROM t ORDER BY CAST(NULL AS BIGINT), id",
            "SELECT id, s FROM t ORDER BY id % 2 DESC, id",
            "SELECT id, f64 FROM t ORDER BY id",
            "SELECT id, f64 FROM t ORDER BY id DESC",
            "SELECT id, f64 FROM t WHERE id = 5 ORDER BY f64 DESC, id",
            "SELECT id, f64 FROM t WHERE id < 0 ORDER BY f64",
            "SELECT u8, id FROM t ORDER BY u8 NULLS LAST, id",
        ] {
            assert_same(&stock, &ours, sql).await;
        }
    }
}
