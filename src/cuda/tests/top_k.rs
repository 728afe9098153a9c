//! The CUDA top-k: its kernels in every PTX, and (ignored without a device) its results
//! against a model on the shapes of `tests/top_k.rs`.

use super::*;
use crate::backend::TopKKeys;
use crate::cuda::device_resident::DeviceWords;
use crate::gpu::HostTopK;
use crate::keys::KeyKind;

/// Tiles of a large `K` get one thread per 32 words (the kernel then selects in
/// registers), whole warps; others one thread per two words, at most a full block.
#[test]
fn register_tiles_get_a_thread_per_32_words() {
    use super::super::top_k::tile_block;
    let sms = 132;
    assert_eq!(tile_block(12, 11, 8, sms), 128);
    assert_eq!(tile_block(12, 10, 8, sms), 128);
    assert_eq!(tile_block(11, 10, 8, sms), 64);
    assert_eq!(tile_block(12, 9, 8, sms), 256);
    assert_eq!(tile_block(10, 5, 64, sms), 256);
    // Many tiles take registers whatever K: 16384 rows of 1024.
    assert_eq!(tile_block(10, 5, 16384, sms), 32);
    assert_eq!(tile_block(9, 5, 16384, sms), 256);
    assert_eq!(tile_block(7, 3, 8, sms), 64);
    assert_eq!(tile_block(1, 0, 1, sms), 1);
}

#[test]
fn ptx_has_the_top_k_kernels() {
    for ptx in [PTX, PTX_SM80, PTX_SM90] {
        for name in [
            "top_k_tiles_u32",
            "top_k_compose_u32",
            "top_k_positions_u32",
            "top_k_positions_u64",
            "top_k_rank_u64",
            "top_k_take_u32",
            "top_k_take_u64",
            "top_k_tiles_u16",
            "top_k_compose_u16",
            "top_k_take_u16",
            "top_k_sample_u32",
            "top_k_sample_u16",
            "top_k_exact_u32",
            "top_k_exact_u16",
            "top_k_filter_u32",
            "top_k_filter_u16",
            "top_k_select_u32",
            "top_k_select_u16",
            "top_k_candidates_u32",
            "top_k_candidates_u16",
        ] {
            assert!(ptx.contains(&format!(".entry {name}(")), "{name}");
        }
    }
}

/// The model: per row, positions by (ordered word in `encoding`, position), the first `k`.
fn model(keys: &[u32], encoding: KeyEncoding, row_len: usize, k: usize) -> (Vec<u32>, Vec<u32>) {
    let mut values = Vec::new();
    let mut indices = Vec::new();
    for row in keys.chunks(row_len) {
        let mut p: Vec<u32> = (0..row_len as u32).collect();
        p.sort_by_key(|&i| (encoding.encode(row[i as usize]), i));
        for &i in &p[..k] {
            values.push(row[i as usize]);
            indices.push(i);
        }
    }
    (values, indices)
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn top_k_matches_the_model() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    let mut next = lcg(7);
    let mut shapes: Vec<(usize, usize, usize)> = vec![(1, 1, 1), (1, 2, 2), (1, 3, 2), (1, 3, 3)];
    for e in 10..=17 {
        for n in [(1usize << e) - 1, (1 << e) + 1] {
            for k in [1, 7, 32, 100, 256, 1000] {
                shapes.push((1, n, k));
            }
        }
    }
    shapes.extend([
        (64, 5000, 50),
        (3, 70_001, 2048),
        (17, 1024, 1024),
        (3, 300, 300),
        (100, 1000, 32),
        (2, 65_537, 1000),
    ]);
    let specials = [
        0x7fc0_0000u32,
        0xffc0_0001,
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x3f80_0000,
    ];
    for (rows, row_len, k) in shapes {
        for pattern in 0..4 {
            let keys: Vec<u32> = (0..rows * row_len)
                .map(|i| match pattern {
                    0 => next() as u32,
                    1 => 5,
                    2 => (next() % 3) as u32,
                    _ => specials[(next() as usize + i) % specials.len()],
                })
                .collect();
            for kind in [KeyKind::Unsigned, KeyKind::Signed, KeyKind::Float] {
                for descending in [false, true] {
                    let encoding = KeyEncoding { kind, descending };
                    let got = gpu
                        .top_k_host(TopKKeys::U32(&keys), encoding, row_len, k)
                        .expect("top-k")
                        .expect("every k on the device");
                    assert_eq!(
                        got,
                        model(&keys, encoding, row_len, k),
                        "{rows} x {row_len}, k {k}, pattern {pattern}, {encoding:?}"
                    );
                }
            }
        }
    }
    // Past the on-chip limit: the device sort path, with ties.
    let keys: Vec<u32> = (0..2 * 5000).map(|_| (next() % 100) as u32).collect();
    for descending in [false, true] {
        let encoding = KeyEncoding {
            kind: KeyKind::Signed,
            descending,
        };
        let got = gpu
            .top_k_host(TopKKeys::U32(&keys), encoding, 5000, 2049)
            .expect("top-k")
            .expect("every k on the device");
        assert_eq!(got, model(&keys, encoding, 5000, 2049), "{encoding:?}");
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn rows_the_filter_cannot_serve_are_rescued() {
    use crate::schedule::top_k::{TopKFilter, sample_position};
    let gpu = CudaBackend::open(0).expect("open device 0");
    let mut next = lcg(11);
    // A rescued row selects its k exactly on the device (`top_k_exact`), and the candidates'
    // step reads those: the select in shared memory (up to 8192 slots with K = 2048, and the
    // 16384 slots of 2^24 with k = 100, with an opt-in of 227 KiB; the tiles there with
    // `BITONIC_TIMING_TOPK_TILES`) or the sort (K = 4096). Three rows spread their samples
    // over several blocks.
    for (row_len, k) in [
        (65_537usize, 300usize),
        (131_072, 1024),
        (1 << 20, 100),
        (200_000, 2048),
        (131_072, 4096),
        (1 << 24, 100),
    ] {
        let filter = TopKFilter::new(3, row_len as u64, k as u64, gpu.filter_device())
            .expect("a filtered shape");
        // Row 0 as it comes; row 1 with the best keys at the sampled positions (too few
        // candidates); row 2 with the worst there (too many).
        let mut keys: Vec<u32> = (0..3 * row_len)
            .map(|_| (next() % u64::from(u32::MAX - 2)) as u32 + 1)
            .collect();
        for (row, key) in [(1usize, 0u32), (2, u32::MAX)] {
            for j in 0..1u64 << filter.log_sample {
                let p = sample_position(row as u64, j, row_len as u64, filter.log_sample);
                keys[row * row_len + p as usize] = key;
            }
        }
        for descending in [false, true] {
            let encoding = KeyEncoding {
                kind: KeyKind::Unsigned,
                descending,
            };
            let got = gpu
                .top_k_host(TopKKeys::U32(&keys), encoding, row_len, k)
                .expect("top-k")
                .expect("every k on the device");
            assert_eq!(
                got,
                model(&keys, encoding, row_len, k),
                "{row_len}, k {k}, {encoding:?}"
            );
        }
    }
}

/// Device time of the top-k of random keys (`f32` in [0, 1), then `bf16` of the same
/// values), largest first, on the shape `BITONIC_TOPK_SHAPE` (`ROWSxCOLS:K`, default
/// `2048x131072:1024`): the median of `BITONIC_TOPK_RUNS` calls (default 9) after one, with
/// CUDA events around each; the last result is checked against the model. Under Nsight
/// Compute with `BITONIC_TOPK_RUNS=1`, each launch of one call is timed on its own:
/// `ncu --clock-control none --metrics gpu__time_duration.sum unit --ignored
/// cuda_top_k_profile`.
#[test]
#[ignore = "needs a CUDA device; a timing, not a check"]
fn cuda_top_k_profile() {
    let shape = std::env::var("BITONIC_TOPK_SHAPE").unwrap_or_else(|_| "2048x131072:1024".into());
    let parse = |s: &str| s.parse::<usize>().expect("BITONIC_TOPK_SHAPE: ROWSxCOLS:K");
    let (rows_cols, k) = shape
        .split_once(':')
        .expect("BITONIC_TOPK_SHAPE: ROWSxCOLS:K");
    let (rows, cols) = rows_cols
        .split_once('x')
        .expect("BITONIC_TOPK_SHAPE: ROWSxCOLS:K");
    let (rows, row_len, k) = (parse(rows), parse(cols), parse(k));
    let runs: usize = std::env::var("BITONIC_TOPK_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9);
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    let mut next = lcg(23);
    let floats: Vec<f32> = (0..rows * row_len)
        .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32)
        .collect();
    let bits32: Vec<u32> = floats.iter().map(|f| f.to_bits()).collect();
    // bf16 rounded to nearest, ties to even (the keys are finite).
    let bits16: Vec<u16> = bits32
        .iter()
        .map(|&b| ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16)
        .collect();
    let encoding = KeyEncoding {
        kind: KeyKind::Float,
        descending: true,
    };
    fn time<T: cust::memory::DeviceCopy + Default + Copy + Into<u64>>(
        gpu: &CudaBackend,
        keys: &[T],
        (row_len, k, runs): (usize, usize, usize),
        encoding: KeyEncoding,
    ) -> (f64, Vec<T>, Vec<u32>) {
        let rows = keys.len() / row_len;
        let input = DeviceBuffer::from_slice(keys).expect("upload");
        let values = DeviceBuffer::from_slice(&vec![T::default(); rows * k]).expect("values");
        let indices = DeviceBuffer::from_slice(&vec![0u32; rows * k]).expect("indices");
        let (start, stop) = (
            Event::new(EventFlags::DEFAULT).expect("event"),
            Event::new(EventFlags::DEFAULT).expect("event"),
        );
        let mut times = Vec::new();
        for run in 0..=runs {
            start.record(&gpu.stream).expect("record");
            gpu.top_k_device_words(
                DeviceWords::of(&input),
                encoding,
                row_len,
                k,
                DeviceWords::of(&values),
                DeviceWords::of(&indices),
                gpu.stream.as_inner(),
            )
            .expect("top-k");
            stop.record(&gpu.stream).expect("record");
            stop.synchronize().expect("sync");
            if run > 0 {
                times.push(f64::from(stop.elapsed_time_f32(&start).expect("elapsed")));
            }
        }
        times.sort_by(f64::total_cmp);
        let mut got_values = vec![T::default(); rows * k];
        let mut got_indices = vec![0u32; rows * k];
        values.copy_to(&mut got_values[..]).expect("download");
        indices.copy_to(&mut got_indices[..]).expect("download");
        (times[times.len() / 2], got_values, got_indices)
    }
    let (ms, _, got) = time(&gpu, &bits32, (row_len, k, runs), encoding);
    eprintln!("top-k f32 {rows} x {row_len}, k {k}: {ms:.4} ms (median of {runs})");
    // The first rows against the model (the model of every row would take minutes).
    let checked = rows.min(64);
    let want = |keys: &[u32]| model(&keys[..checked * row_len], encoding, row_len, k).1;
    assert_eq!(got[..checked * k], want(&bits32), "f32 indices");
    let (ms, _, got) = time(&gpu, &bits16, (row_len, k, runs), encoding);
    eprintln!("top-k bf16 {rows} x {row_len}, k {k}: {ms:.4} ms (median of {runs})");
    let widened: Vec<u32> = bits16[..checked * row_len]
        .iter()
        .map(|&b| u32::from(b) << 16)
        .collect();
    assert_eq!(got[..checked * k], want(&widened), "bf16 indices");
}
