//! Sorts of rows, each on its own, against the CPU backend's sort of each row.

use super::*;

/// Sorts `rows` rows of `row_len` through `sort_rows_words` on `b` and checks every row
/// against the CPU backend's network run on that row alone (keys and values bit for bit).
fn check_rows(b: &OpenClBackend, rng: &mut StdRng, row_len: usize, rows: usize, ties: bool) {
    let n = row_len * rows;
    let range = if ties { 5 } else { u64::MAX };
    let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..range) as u32).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    let cpu = CpuBackend::new();
    for descending in [false, true] {
        let encoding = KeyEncoding {
            kind: KeyKind::Signed,
            descending,
        };
        let (mut want_k, mut want_v) = (keys.clone(), values.clone());
        for (k, v) in want_k.chunks_mut(row_len).zip(want_v.chunks_mut(row_len)) {
            cpu.sort_words(WordsMut::U32(k), Some(WordsMut::U32(v)), encoding)
                .expect("cpu sort");
        }
        let label = format!(
            "{rows} rows of {row_len} descending={descending} tile<=2^{} rounds of 2^{}",
            b.max_log_tile, b.log_e
        );
        // Keys alone.
        let mut got_k = keys.clone();
        b.sort_rows_words(WordsMut::U32(&mut got_k), None, encoding, row_len)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(got_k == want_k, "keys differ: {label}");
        // Key-value pairs.
        let (mut got_k, mut got_v) = (keys.clone(), values.clone());
        b.sort_rows_words(
            WordsMut::U32(&mut got_k),
            Some(WordsMut::U32(&mut got_v)),
            encoding,
            row_len,
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(got_k == want_k, "keys differ (pairs): {label}");
        assert!(got_v == want_v, "values differ: {label}");
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_rows_independently() {
    let mut rng = StdRng::seed_from_u64(21);
    for b in backends() {
        for row_len in [1, 2, 3, 1000, 1024, 1025, 5000] {
            for rows in [1, 2, 3, 7, 16] {
                check_rows(b, &mut rng, row_len, rows, rows % 2 == 0);
            }
        }
    }
    // Many short rows packed into each tile, and long rows that need global passes.
    let b = &backends()[0];
    check_rows(b, &mut rng, 17, 999, true);
    check_rows(b, &mut rng, 70_001, 3, false);
}
