use super::*;
use crate::BackendKind;
use rand::{Rng, SeedableRng};

/// The stable argsort of each row of `keys` by `total_cmp`-like order on ordered bits.
fn model(keys: &[f64], row_len: usize, descending: bool) -> Vec<u32> {
    keys.chunks(row_len)
        .flat_map(|row| {
            let mut p: Vec<u32> = (0..row.len() as u32).collect();
            p.sort_by(|&a, &b| {
                let o = row[a as usize].total_cmp(&row[b as usize]);
                if descending { o.reverse() } else { o }
            });
            p
        })
        .collect()
}

/// 8-byte keys whose leading bits tie in long and short runs (keys that differ only in
/// their lowest bits, few distinct prefixes, keys that differ in bits 20-25, and random
/// keys), in one row and in rows, both orders, at lengths around the tie regions, against
/// a stable sort; and the argsort of labelled rows against the argsort of the gathered
/// keys.
/// After a sort of keys with labels that left equal keys' labels in any order, each run
/// of equal keys in a row gets its labels in increasing order, and nothing else moves:
/// runs short and long (one key throughout), across region and row boundaries.
#[test]
fn equal_keys_get_their_labels_in_order() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    for n in [
        0usize,
        1,
        2,
        1000,
        TIE_REGION,
        TIE_REGION + 1,
        3 * TIE_REGION + 5,
    ] {
        for distinct in [1u64, 3, 1000, u64::MAX] {
            for row_len in [n.max(1), 7, 1000] {
                let n = n / row_len * row_len;
                let mut pairs: Vec<(u64, u32)> = (0..n)
                    .map(|i| (rng.r#gen::<u64>() % distinct, (i % row_len) as u32))
                    .collect();
                for row in pairs.chunks_mut(row_len) {
                    row.sort_unstable_by_key(|p| p.0);
                }
                // Labels scrambled among equal keys, as an unstable sort may leave them.
                let mut labels: Vec<u32> = pairs.iter().map(|p| p.1).collect();
                let keys: Vec<u64> = pairs.iter().map(|p| p.0).collect();
                let mut start = 0;
                while start < n {
                    let mut end = start + 1;
                    while end < n && end % row_len != 0 && keys[end] == keys[start] {
                        end += 1;
                    }
                    labels[start..end].reverse();
                    start = end;
                }
                order_equal_keys(&keys, &mut labels, row_len);
                for row in pairs.chunks_mut(row_len) {
                    row.sort_unstable();
                }
                let want: Vec<u32> = pairs.iter().map(|p| p.1).collect();
                assert!(
                    labels == want,
                    "n={n} distinct={distinct} rows of {row_len}"
                );
            }
        }
    }
}

/// The keys `keys[rows[0]], keys[rows[1]], ...`, labelled by their rows.
#[cfg(feature = "arrow")]
struct ListBlock<'a> {
    keys: &'a [f64],
    rows: &'a [u32],
}

#[cfg(feature = "arrow")]
impl LabelledBlock<f64> for ListBlock<'_> {
    fn positions(&self) -> usize {
        self.rows.len()
    }

    fn fill(self, mut emit: impl FnMut(f64, u32)) {
        for &row in self.rows {
            emit(self.keys[row as usize], row);
        }
    }
}

#[test]
fn eight_byte_keys_with_tied_prefixes() {
    let sorter = Sorter::builder()
        .backend(BackendKind::Cpu)
        .build()
        .expect("a CPU sorter");
    let mut rng = rand::rngs::StdRng::seed_from_u64(64);
    for n in [
        2usize,
        3,
        1000,
        TIE_REGION - 1,
        TIE_REGION + 1,
        3 * TIE_REGION + 5,
    ] {
        for shape in 0..4 {
            let keys: Vec<f64> = (0..n)
                .map(|_| {
                    let low = u64::from(rng.r#gen::<u32>() % 50);
                    let bits = match shape {
                        0 => 0x4000_0000_0000_0000 | low,
                        1 => (rng.gen_range(0..3u64) << 62 | 0x10 << 32) | low,
                        2 => rng.r#gen::<u64>(),
                        _ => 0xfff8_0000_0000_0000 | low << 20,
                    };
                    f64::from_bits(bits)
                })
                .collect();
            for descending in [false, true] {
                let order = Order::from_descending(descending);
                for row_len in [n, 1000.min(n), 7.min(n)] {
                    let n = n / row_len * row_len;
                    let got = sorter
                        .argsort_rows(&keys[..n], row_len, order)
                        .expect("an argsort");
                    assert!(
                        got == model(&keys[..n], row_len, descending),
                        "n={n} rows of {row_len} shape {shape} {order:?}"
                    );
                }
                #[cfg(feature = "arrow")]
                {
                    let rows: Vec<u32> = (0..n as u32).filter(|r| r % 3 != 1).collect();
                    let gathered: Vec<f64> = rows.iter().map(|&r| keys[r as usize]).collect();
                    let want: Vec<u32> = model(&gathered, gathered.len().max(1), descending)
                        .into_iter()
                        .map(|p| rows[p as usize])
                        .collect();
                    // Blocks of uneven lengths, an empty one among them.
                    let mut blocks = Vec::new();
                    let mut rest = &rows[..];
                    for len in [0, 1, 999].into_iter().cycle() {
                        if rest.is_empty() {
                            break;
                        }
                        let (block, tail) = rest.split_at(len.min(rest.len()));
                        blocks.push(ListBlock {
                            keys: &keys,
                            rows: block,
                        });
                        rest = tail;
                    }
                    let mut got = vec![0; rows.len()];
                    sorter
                        .argsort_blocks_into(blocks, &keys, order, &mut got)
                        .expect("labelled");
                    assert!(got == want, "labelled n={n} shape {shape} {order:?}");
                }
            }
        }
    }
}
