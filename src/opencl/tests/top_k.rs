//! The top-k's ways that only some shapes reach, against a model, on backends whose facts the
//! tests fix (compute units, the local memory the selects may take) so that each test knows
//! the way it runs and asserts it: long rows through the candidate filter (each way of its
//! candidates, samples of one and of several work-groups, rows it must rescue), short rows by
//! the work-group select, and the fallbacks of devices with less local memory. Keys of 16 and
//! 32 bits, as raw bits with every encoding.

use std::ptr;
use std::sync::OnceLock;

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::types::CL_BLOCKING;

use super::*;
use crate::opencl::top_k::TopKJob;
use crate::schedule::top_k::{TopKCandidates, TopKFilter, TopKRoute, TopKWay, sample_position};

/// Local bytes of the selects of [`nvidia_like`]: what NVIDIA's OpenCL gives a dynamic
/// `__local` argument (48 KiB reported, 48128 bytes accepted), less the margin.
const NVIDIA_SELECT_BYTES: u32 = 48 * 1024 - 1024;

/// A backend on the first GPU (the first device where there is none) with `compute_units`,
/// selects of at most `select_bytes` of local memory and, where given, a device local
/// memory of `local_mem` bytes. Panics without a device: these tests run only when asked for.
fn open_top_k(compute_units: u32, select_bytes: u32, local_mem: Option<u64>) -> OpenClBackend {
    let mut b = OpenClBackend::open(backends()[0].info.index).expect("open the OpenCL device");
    b.limits.compute_units = compute_units;
    b.top_k_select_bytes = Some(select_bytes);
    if let Some(bytes) = local_mem {
        b.limits.local_mem = b.limits.local_mem.min(bytes);
    }
    b
}

/// Four compute units and NVIDIA's local memory for the selects: one row samples over two
/// work-groups, four rows one each, and the candidates fit a select up to 4096 slots with K
/// of 1024.
fn nvidia_like() -> &'static OpenClBackend {
    static CELL: OnceLock<OpenClBackend> = OnceLock::new();
    CELL.get_or_init(|| open_top_k(4, NVIDIA_SELECT_BYTES, None))
}

/// As [`nvidia_like`] with no local memory for the selects: the filter's candidates go to the
/// tiles or the sort, short rows to the tiles.
fn no_select() -> &'static OpenClBackend {
    static CELL: OnceLock<OpenClBackend> = OnceLock::new();
    CELL.get_or_init(|| open_top_k(4, 0, None))
}

/// As [`nvidia_like`] on a device of 32 KiB of local memory (Mesa's llvmpipe): tiles of 2^11
/// words, samples of as many.
fn small_local() -> &'static OpenClBackend {
    static CELL: OnceLock<OpenClBackend> = OnceLock::new();
    CELL.get_or_init(|| open_top_k(4, u32::MAX, Some(32 * 1024)))
}

/// The ordered word of `bits` in `encoding` at `key_bits` (16 or 32): the model's own map,
/// written apart from the kernels' and `KeyEncoding::encode`.
fn ordered(bits: u32, encoding: KeyEncoding, key_bits: u32) -> u32 {
    let mask = if key_bits == 16 { 0xffff } else { u32::MAX };
    let sign = 1u32 << (key_bits - 1);
    let o = match encoding.kind {
        KeyKind::Unsigned => bits,
        KeyKind::Signed => bits ^ sign,
        KeyKind::Float if bits & sign != 0 => !bits & mask,
        KeyKind::Float => bits ^ sign,
    };
    if encoding.descending { !o & mask } else { o }
}

/// The model: per row, positions by (ordered word, position), the first `k`; their bits and
/// positions.
fn model(
    bits: &[u32],
    key_bits: u32,
    encoding: KeyEncoding,
    row_len: usize,
    k: usize,
) -> (Vec<u32>, Vec<u32>) {
    let (mut values, mut indices) = (Vec::new(), Vec::new());
    for row in bits.chunks(row_len) {
        let mut p: Vec<u32> = (0..row_len as u32).collect();
        p.sort_by_key(|&i| (ordered(row[i as usize], encoding, key_bits), i));
        for &i in &p[..k] {
            values.push(row[i as usize]);
            indices.push(i);
        }
    }
    (values, indices)
}

/// A device buffer holding `data`, written on `queue`.
fn upload<T: bytemuck::Pod>(b: &OpenClBackend, queue: &CommandQueue, data: &[T]) -> Buffer<T> {
    // SAFETY: no host pointer (null, with flags that use none); the size is nonzero.
    let mut buffer = unsafe {
        Buffer::<T>::create(
            &b.context,
            CL_MEM_READ_WRITE,
            data.len().max(1),
            ptr::null_mut(),
        )
    }
    .expect("a buffer");
    // SAFETY: a blocking copy of a slice no larger than the buffer.
    unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, data, &[]) }.expect("write");
    buffer
}

/// `len` elements of `buffer`, read on `queue`.
fn download<T: bytemuck::Pod + Default>(
    queue: &CommandQueue,
    buffer: &Buffer<T>,
    len: usize,
) -> Vec<T> {
    let mut out = vec![T::default(); len];
    // SAFETY: a blocking copy of `len` elements, which the buffer holds.
    unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut out, &[]) }.expect("read");
    out
}

/// The top-k on `b` of `bits` (keys of `key_bits`, 16 or 32, in rows of `row_len`) in
/// `encoding`, through the device path, against [`model`]; panics with `label` on a
/// difference.
fn check(
    b: &OpenClBackend,
    bits: &[u32],
    key_bits: u32,
    encoding: KeyEncoding,
    (row_len, k): (usize, usize),
    label: &str,
) {
    let queue = &b.queue;
    let rows = bits.len() / row_len;
    let what = format!("{label}: {rows} x {row_len}, k {k}, {key_bits} bits, {encoding:?}");
    let (values, indices) = if key_bits == 16 {
        let keys: Vec<u16> = bits.iter().map(|&x| x as u16).collect();
        let input = upload(b, queue, &keys);
        let values = upload(b, queue, &vec![0u16; rows * k]);
        let indices = upload(b, queue, &vec![0u32; rows * k]);
        run(
            b,
            (input.get(), keys.len()),
            2,
            encoding,
            (row_len, k),
            (values.get(), indices.get()),
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let got: Vec<u16> = download(queue, &values, rows * k);
        (
            got.iter().map(|&x| u32::from(x)).collect(),
            download(queue, &indices, rows * k),
        )
    } else {
        let input = upload(b, queue, bits);
        let values = upload(b, queue, &vec![0u32; rows * k]);
        let indices = upload(b, queue, &vec![0u32; rows * k]);
        run(
            b,
            (input.get(), bits.len()),
            4,
            encoding,
            (row_len, k),
            (values.get(), indices.get()),
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        (
            download(queue, &values, rows * k),
            download(queue, &indices, rows * k),
        )
    };
    let (want_values, want_indices) = model(bits, key_bits, encoding, row_len, k);
    if indices != want_indices {
        let at = indices
            .iter()
            .zip(&want_indices)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let row = at / k;
        let shown = (row * k)..(row * k + k.min(16));
        panic!(
            "{what}: indices differ first at {at} (row {row}): got {:?}, want {:?}, keys {:x?}",
            &indices[shown.clone()],
            &want_indices[shown],
            &bits[row * row_len..row * row_len + row_len.min(16)]
        );
    }
    assert!(values == want_values, "{what}: values differ");
}

/// Enqueues the top-k of the keys at `keys` on the backend's queue and waits for it.
fn run(
    b: &OpenClBackend,
    keys: (opencl3::types::cl_mem, usize),
    key_bytes: usize,
    encoding: KeyEncoding,
    (row_len, k): (usize, usize),
    (values, indices): (opencl3::types::cl_mem, opencl3::types::cl_mem),
) -> crate::error::Result<()> {
    let out = keys.1 / row_len * k;
    let job = TopKJob::checked(
        keys,
        key_bytes,
        encoding,
        row_len,
        k,
        (values, out),
        (indices, out),
    )?;
    b.enqueue_top_k(&job, &b.queue)?;
    b.queue
        .finish()
        .map_err(super::super::driver::driver("clFinish"))?;
    Ok(())
}

/// Input patterns of the tests.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    Random,
    Equal,
    Few,
    Sorted,
    Reversed,
    /// NaNs of both signs, -0.0, 0.0, infinities and a few numbers (of the key width).
    Floats,
}

const PATTERNS: [Pattern; 6] = [
    Pattern::Random,
    Pattern::Equal,
    Pattern::Few,
    Pattern::Sorted,
    Pattern::Reversed,
    Pattern::Floats,
];

/// `rows * row_len` keys of `key_bits` in `pattern` (sorted and reversed per row, by raw bits).
fn keys(
    rng: &mut StdRng,
    pattern: Pattern,
    key_bits: u32,
    (rows, row_len): (usize, usize),
) -> Vec<u32> {
    let mask = if key_bits == 16 { 0xffff } else { u32::MAX };
    let floats: [u32; 8] = if key_bits == 16 {
        [0x7fc0, 0xffc1, 0x8000, 0, 0x7f80, 0xff80, 0x3f80, 0xbfc0]
    } else {
        [
            0x7fc0_0000,
            0xffc0_0001,
            0x8000_0000,
            0,
            0x7f80_0000,
            0xff80_0000,
            0x3f80_0000,
            0xbfc0_0000,
        ]
    };
    let mut out: Vec<u32> = (0..rows * row_len)
        .map(|_| match pattern {
            Pattern::Equal => 7,
            Pattern::Few => rng.gen_range(0..3u32).wrapping_sub(1) & mask,
            Pattern::Floats => floats[rng.gen_range(0..floats.len())],
            _ => rng.r#gen::<u32>() & mask,
        })
        .collect();
    if matches!(pattern, Pattern::Sorted | Pattern::Reversed) {
        for row in out.chunks_mut(row_len) {
            row.sort_unstable();
            if matches!(pattern, Pattern::Reversed) {
                row.reverse();
            }
        }
    }
    out
}

/// The encodings of the tests: unsigned both ways, signed, floats both ways.
const ENCODINGS: [KeyEncoding; 5] = [
    KeyEncoding {
        kind: KeyKind::Unsigned,
        descending: false,
    },
    KeyEncoding {
        kind: KeyKind::Unsigned,
        descending: true,
    },
    KeyEncoding {
        kind: KeyKind::Signed,
        descending: false,
    },
    KeyEncoding {
        kind: KeyKind::Float,
        descending: false,
    },
    KeyEncoding {
        kind: KeyKind::Float,
        descending: true,
    },
];

/// The filter `b` takes for the shape, asserting that it takes one.
fn filtered(
    b: &OpenClBackend,
    key_bytes: usize,
    (rows, row_len): (usize, usize),
    k: usize,
) -> TopKFilter {
    match b
        .top_k_way(key_bytes, (rows as u64, row_len as u64), k as u64)
        .expect("the way")
    {
        TopKWay::Filtered(filter) => filter,
        other => panic!("{rows} x {row_len}, k {k}: {other:?}, not the filter"),
    }
}

/// The way of the filter's candidates, as a name.
fn candidates_way(filter: &TopKFilter) -> &'static str {
    match filter.candidates {
        TopKCandidates::Select => "select",
        TopKCandidates::Tiles(_) => "tiles",
        TopKCandidates::Sort => "sort",
    }
}

/// Whether `b`'s device has the local memory the tables of ways assume: NVIDIA's 48 KiB (the
/// tests cap the selects' below it), so that the tiles are 2^12 words and the selects take
/// what the tables say.
fn nvidia_local(b: &OpenClBackend) -> bool {
    b.limits.local_mem >= 48 * 1024
}

/// Every shape through the filter on `b`, its candidates' way and sample blocks asserted:
/// `(rows, row_len, k, candidates, sample blocks)`. Each shape runs in both widths, the
/// patterns and encodings taking turns across the shapes. On a device of less local memory
/// ([`nvidia_local`]: Mesa's llvmpipe), whose tiles, samples and selects are smaller, the
/// results are checked whatever way the device takes, and a line says the ways were not.
fn check_filtered(b: &OpenClBackend, shapes: &[(usize, usize, usize, &str, u32)], seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut turn = 0;
    let assert_ways = nvidia_local(b);
    if !assert_ways {
        eprintln!(
            "{} KiB of local memory: the filter's ways are not asserted, only the results",
            b.limits.local_mem / 1024
        );
    }
    for &(rows, row_len, k, way, log_blocks) in shapes {
        for key_bits in [32u32, 16] {
            if assert_ways {
                let filter = filtered(b, key_bits as usize / 8, (rows, row_len), k);
                assert_eq!(
                    (candidates_way(&filter), filter.log_sample_blocks),
                    (way, log_blocks),
                    "{rows} x {row_len}, k {k}, {key_bits} bits: {filter:?}"
                );
            }
            for _ in 0..2 {
                let pattern = PATTERNS[turn % PATTERNS.len()];
                let encoding = ENCODINGS[turn % ENCODINGS.len()];
                turn += 1;
                let bits = keys(&mut rng, pattern, key_bits, (rows, row_len));
                check(
                    b,
                    &bits,
                    key_bits,
                    encoding,
                    (row_len, k),
                    &format!("{pattern:?}"),
                );
            }
        }
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn the_filter_selects_candidates_in_local_memory() {
    // k of 1, small, powers of two and their neighbours up to the select's K of 1024 (4096
    // slots); rows fewer than the compute units sample over two work-groups.
    check_filtered(
        nvidia_like(),
        &[
            (1, 40_000, 1, "select", 1),
            (2, 40_000, 7, "select", 1),
            (4, 40_000, 100, "select", 0),
            (4, 40_000, 255, "select", 0),
            (1, 40_000, 256, "select", 1),
            (4, 40_000, 257, "select", 0),
            (1, 40_000, 1024, "select", 1),
        ],
        1,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn the_filter_hands_candidates_to_the_tiles_and_the_sort() {
    // Without local memory for the select: tiles below K of 1024, the sort from it; with it,
    // the sort where the slots pass the select's (K of 2048 over 4096 slots, K of 4096).
    check_filtered(
        no_select(),
        &[
            (1, 40_000, 1, "tiles", 1),
            (4, 40_000, 100, "tiles", 0),
            (1, 40_000, 511, "tiles", 1),
            (4, 40_000, 512, "tiles", 0),
            (1, 40_000, 513, "sort", 1),
        ],
        2,
    );
    check_filtered(
        nvidia_like(),
        &[(1, 40_000, 2048, "sort", 0), (1, 70_000, 4096, "sort", 0)],
        3,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn every_pattern_and_encoding_through_the_filter() {
    let b = nvidia_like();
    let mut rng = StdRng::seed_from_u64(4);
    for key_bits in [32u32, 16] {
        for (rows, k) in [(1usize, 100usize), (4, 33)] {
            filtered(b, key_bits as usize / 8, (rows, 40_000), k);
            for pattern in PATTERNS {
                let bits = keys(&mut rng, pattern, key_bits, (rows, 40_000));
                for encoding in [ENCODINGS[0], ENCODINGS[1], ENCODINGS[3], ENCODINGS[4]] {
                    check(
                        b,
                        &bits,
                        key_bits,
                        encoding,
                        (40_000, k),
                        &format!("{pattern:?}"),
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn rows_the_filter_cannot_serve_are_rescued() {
    // Row 0 as it comes; row 1 with the best keys at the sampled positions (its threshold is
    // then its rank-th best word, fewer than k candidates where rank < k), row 2 with the worst
    // there (the threshold is its worst word: every word a candidate, more than the slots).
    // Descending swaps which row has too few and which too many. Each way of the candidates
    // reads the rescued rows' k words.
    let mut rng = StdRng::seed_from_u64(5);
    for (b, k, way) in [
        (nvidia_like(), 300usize, "select"),
        (no_select(), 300, "tiles"),
        (no_select(), 1000, "sort"),
    ] {
        for key_bits in [32u32, 16] {
            let row_len = 40_000;
            let filter = filtered(b, key_bits as usize / 8, (3, row_len), k);
            assert_eq!(candidates_way(&filter), way);
            assert!(
                (filter.rank as usize) < k,
                "the best keys sampled leave too few"
            );
            let top = if key_bits == 16 { 0xffff } else { u32::MAX };
            let mut bits: Vec<u32> = (0..3 * row_len).map(|_| rng.gen_range(1..top)).collect();
            for (row, key) in [(1usize, 0u32), (2, top)] {
                for j in 0..1u64 << filter.log_sample {
                    let p = sample_position(row as u64, j, row_len as u64, filter.log_sample);
                    bits[row * row_len + p as usize] = key;
                }
            }
            for encoding in [ENCODINGS[0], ENCODINGS[1]] {
                check(b, &bits, key_bits, encoding, (row_len, k), way);
            }
        }
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn short_rows_take_the_work_group_select() {
    let b = nvidia_like();
    let mut rng = StdRng::seed_from_u64(6);
    let mut turn = 0;
    for key_bits in [32u32, 16] {
        for row_len in [1usize, 2, 3, 31, 32, 33, 255, 1024, 1025, 4096] {
            for k in [1usize, 2, 7, 32, 100, 255, 256] {
                if k > row_len {
                    continue;
                }
                let rows = if row_len < 100 { 5 } else { 2 };
                let way = b
                    .top_k_way(
                        key_bits as usize / 8,
                        (rows as u64, row_len as u64),
                        k as u64,
                    )
                    .expect("the way");
                assert!(
                    matches!(way, TopKWay::Select(_)),
                    "{rows} x {row_len}, k {k}: {way:?}"
                );
                let pattern = PATTERNS[turn % PATTERNS.len()];
                let encoding = ENCODINGS[turn % ENCODINGS.len()];
                turn += 1;
                let bits = keys(&mut rng, pattern, key_bits, (rows, row_len));
                check(
                    b,
                    &bits,
                    key_bits,
                    encoding,
                    (row_len, k),
                    &format!("{pattern:?}"),
                );
            }
        }
    }
    // Every pattern on one shape, both orders; and many rows, more than a launch's groups
    // take at once on some devices.
    for pattern in PATTERNS {
        let bits = keys(&mut rng, pattern, 32, (3, 1000));
        for encoding in [ENCODINGS[0], ENCODINGS[4]] {
            check(b, &bits, 32, encoding, (1000, 32), &format!("{pattern:?}"));
        }
    }
    let bits = keys(&mut rng, Pattern::Few, 16, (3000, 64));
    check(b, &bits, 16, ENCODINGS[2], (64, 10), "many rows");
    // Past the select's K and rows: not the select.
    for (row_len, k) in [(4096u64, 257u64), (4097, 7)] {
        let way = b.top_k_way(4, (1, row_len), k).expect("the way");
        assert!(!matches!(way, TopKWay::Select(_)), "{row_len} {k}: {way:?}");
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn devices_of_less_local_memory_fall_back() {
    let mut rng = StdRng::seed_from_u64(7);
    // No local memory for the selects: short rows take the tiles.
    let b = no_select();
    let way = b.top_k_way(4, (2, 1024), 32).expect("the way");
    assert!(
        matches!(way, TopKWay::Route(TopKRoute::Tiles(_))),
        "{way:?}"
    );
    let bits = keys(&mut rng, Pattern::Random, 32, (2, 1024));
    check(b, &bits, 32, ENCODINGS[0], (1024, 32), "tiles");
    // 32 KiB: tiles of 2^11 words, the filter's sample of as many, and candidates that do not
    // fit the local memory go to the tiles.
    let b = small_local();
    let filter = filtered(b, 4, (4, 40_000), 100);
    assert_eq!(filter.log_sample, 11, "{filter:?}");
    for (rows, k) in [(4usize, 100usize), (4, 1024), (1, 3)] {
        let filter = filtered(b, 4, (rows, 40_000), k);
        let way = candidates_way(&filter);
        for key_bits in [32u32, 16] {
            let bits = keys(&mut rng, Pattern::Few, key_bits, (rows, 40_000));
            check(b, &bits, key_bits, ENCODINGS[1], (40_000, k), way);
        }
    }
    // K = 1024 on tiles of 2^11 words is the tiles' largest; the tiles still serve it.
    let way = b.top_k_way(4, (2, 5000), 1024).expect("the way");
    assert!(
        matches!(way, TopKWay::Route(TopKRoute::Tiles(_))),
        "{way:?}"
    );
    let bits = keys(&mut rng, Pattern::Random, 32, (2, 5000));
    check(b, &bits, 32, ENCODINGS[3], (5000, 1024), "small tiles");
}
