//! `argsort`, `sort` and `top_k` against candle's CPU `arg_sort_last_dim` (rows with ties,
//! every dtype, row lengths past candle's CUDA limit of 8192) and against a stable
//! `total_cmp` model where candle's `partial_cmp` differs (NaN, -0.0); strided tensors, empty
//! ones, and the errors.

mod support;

use bitonic::{BackendKind, Order, Sorter};
use candle_core::{DType, Device, Tensor};
use support::lcg;

/// The sorters under test: the CPU path, and the default device where it is another.
fn sorters() -> Vec<Sorter> {
    let cpu = Sorter::builder()
        .ignore_env()
        .backend(BackendKind::Cpu)
        .build()
        .expect("the CPU sorter");
    let mut sorters = vec![cpu];
    if let Ok(default) = Sorter::new()
        && default
            .devices()
            .iter()
            .any(|d| d.backend != BackendKind::Cpu)
    {
        sorters.push(default);
    }
    sorters
}

/// `n` keys of few distinct values (many ties), as f64 in 0..=40.
fn tied(n: usize, seed: u64) -> Vec<f64> {
    let mut next = lcg(seed);
    (0..n).map(|_| (next() % 41) as f64).collect()
}

const SHAPES: [&[usize]; 6] = [
    &[1, 32000],
    &[3, 8193],
    &[2, 3, 100],
    &[5, 1],
    &[4, 2],
    &[7],
];

const DTYPES: [DType; 9] = [
    DType::U8,
    DType::U32,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
];

#[test]
fn argsort_matches_candles_cpu_sort_for_every_dtype() {
    for sorter in sorters() {
        for (s, shape) in SHAPES.into_iter().enumerate() {
            let n: usize = shape.iter().product();
            let base = Tensor::from_vec(tied(n, s as u64), shape, &Device::Cpu).unwrap();
            for dtype in DTYPES {
                let t = base.to_dtype(dtype).unwrap();
                for (order, asc) in [(Order::Ascending, true), (Order::Descending, false)] {
                    let ours = bitonic_candle::argsort(&sorter, &t, order).unwrap();
                    let candle = t.arg_sort_last_dim(asc).unwrap();
                    assert_eq!(ours.dims(), t.dims());
                    assert_eq!(ours.dtype(), DType::U32);
                    let (a, b) = (flat_u32(&ours), flat_u32(&candle));
                    assert!(a == b, "{dtype:?} {shape:?} {order:?}");
                }
            }
        }
    }
}

/// The elements of a `u32` tensor in order.
fn flat_u32(t: &Tensor) -> Vec<u32> {
    t.flatten_all().unwrap().to_vec1::<u32>().unwrap()
}

#[test]
fn sort_and_top_k_agree_with_the_argsort() {
    for sorter in sorters() {
        let t = Tensor::from_vec(tied(3 * 8193, 9), (3, 8193), &Device::Cpu)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap();
        for order in [Order::Ascending, Order::Descending] {
            let order_of = flat_u32(&bitonic_candle::argsort(&sorter, &t, order).unwrap());
            let (values, indices) = bitonic_candle::sort(&sorter, &t, order).unwrap();
            assert_eq!(flat_u32(&indices), order_of);
            let rows = t.to_vec2::<f32>().unwrap();
            let sorted = values.to_vec2::<f32>().unwrap();
            for (r, row) in rows.iter().enumerate() {
                let want: Vec<f32> = order_of[r * 8193..(r + 1) * 8193]
                    .iter()
                    .map(|&p| row[p as usize])
                    .collect();
                assert_eq!(sorted[r], want);
            }
            for k in [1usize, 50, 8193] {
                let (top, at) = bitonic_candle::top_k(&sorter, &t, k, order).unwrap();
                assert_eq!(top.dims(), [3, k]);
                let at = at.to_vec2::<u32>().unwrap();
                let top = top.to_vec2::<f32>().unwrap();
                for r in 0..3 {
                    assert_eq!(at[r], order_of[r * 8193..r * 8193 + k], "k {k}");
                    assert_eq!(top[r], sorted[r][..k], "k {k}");
                }
            }
        }
    }
}

#[test]
fn nan_and_signed_zeros_follow_the_total_order() {
    let specials = [
        f32::NAN,
        -0.0,
        0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        -f32::NAN,
        0.0,
    ];
    let row: Vec<f32> = (0..1000).map(|i| specials[(i * 5 + i / 7) % 8]).collect();
    let t = Tensor::from_vec(row.clone(), (2, 500), &Device::Cpu).unwrap();
    for sorter in sorters() {
        for order in [Order::Ascending, Order::Descending] {
            let got = flat_u32(&bitonic_candle::argsort(&sorter, &t, order).unwrap());
            for (r, keys) in row.chunks(500).enumerate() {
                let mut want: Vec<u32> = (0..500).collect();
                want.sort_by(|&a, &b| {
                    let (x, y) = (keys[a as usize], keys[b as usize]);
                    match order {
                        Order::Ascending => x.total_cmp(&y),
                        Order::Descending => y.total_cmp(&x),
                    }
                });
                assert_eq!(got[r * 500..(r + 1) * 500], want[..], "{order:?}");
            }
        }
    }
}

#[test]
fn strided_and_offset_tensors_sort_as_their_contiguous_copies() {
    let sorter = &sorters()[0];
    let base = Tensor::from_vec(tied(40 * 30, 4), (40, 30), &Device::Cpu).unwrap();
    let transposed = base.t().unwrap();
    let narrowed = base.narrow(1, 3, 20).unwrap();
    for t in [transposed, narrowed] {
        assert!(!t.is_contiguous());
        let ours = bitonic_candle::argsort(sorter, &t, Order::Ascending).unwrap();
        let candle = t.contiguous().unwrap().arg_sort_last_dim(true).unwrap();
        assert_eq!(flat_u32(&ours), flat_u32(&candle));
    }
}

#[test]
fn empty_tensors_and_bad_calls() {
    let sorter = &sorters()[0];
    for shape in [&[0usize, 5][..], &[3, 0]] {
        let t = Tensor::zeros(shape, DType::F32, &Device::Cpu).unwrap();
        let order = bitonic_candle::argsort(sorter, &t, Order::Ascending).unwrap();
        assert_eq!((order.dims(), order.dtype()), (shape, DType::U32));
    }
    let (values, indices) = bitonic_candle::top_k(
        sorter,
        &Tensor::zeros((0, 5), DType::F32, &Device::Cpu).unwrap(),
        2,
        Order::Ascending,
    )
    .unwrap();
    assert_eq!((values.dims(), indices.dims()), (&[0, 2][..], &[0, 2][..]));
    let scalar = Tensor::new(1.0f32, &Device::Cpu).unwrap();
    assert!(bitonic_candle::argsort(sorter, &scalar, Order::Ascending).is_err());
    let t = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    assert!(bitonic_candle::top_k(sorter, &t, 4, Order::Ascending).is_err());
}

/// The figures of candle's own `asort` test (`candle-core/tests/tensor_tests.rs`): a 2 x 5
/// matrix, its argsort and sort both ways, on our calls.
#[test]
fn candles_own_asort_figures_hold() {
    let data = [[3f32, 1., 4., 1.1, 5.], [2.1, 1., 7., 8., 2.]];
    let ascending_indices = [[1u32, 3, 0, 2, 4], [1, 4, 0, 2, 3]];
    let descending_indices = [[4u32, 2, 0, 3, 1], [3, 2, 0, 4, 1]];
    let ascending = [[1.0f32, 1.1, 3.0, 4.0, 5.0], [1.0, 2.0, 2.1, 7.0, 8.0]];
    let descending = [[5.0f32, 4.0, 3.0, 1.1, 1.0], [8.0, 7.0, 2.1, 2.0, 1.0]];
    let t = Tensor::new(&data, &Device::Cpu).unwrap();
    for sorter in sorters() {
        for (order, indices, sorted) in [
            (Order::Ascending, ascending_indices, ascending),
            (Order::Descending, descending_indices, descending),
        ] {
            let got = bitonic_candle::argsort(&sorter, &t, order).unwrap();
            assert_eq!(got.to_vec2::<u32>().unwrap(), indices, "{order:?}");
            let (values, got) = bitonic_candle::sort(&sorter, &t, order).unwrap();
            assert_eq!(got.to_vec2::<u32>().unwrap(), indices, "{order:?}");
            assert_eq!(values.to_vec2::<f32>().unwrap(), sorted, "{order:?}");
        }
    }
}
