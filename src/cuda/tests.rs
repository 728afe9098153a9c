//! Tests of the cuda backend that need its internals.

use super::*;
use crate::cpu::CpuBackend;
use crate::keys::KeyKind;

const LIMITS_48K: DeviceLimits = DeviceLimits {
    shared_bytes_per_block: 48 * 1024,
    max_threads_per_block: 1024,
    max_grid_x: i32::MAX as u32,
};

fn tile(limits: &DeviceLimits, key_bytes: usize, value_bytes: usize) -> (u32, u32) {
    let p = launch_params(limits, key_bytes, value_bytes);
    assert_eq!(p.tile.max_global_levels, MAX_GLOBAL_LEVELS);
    (p.tile.log_tile, p.local_threads)
}

#[test]
fn tiles_fill_48k_of_shared_memory() {
    assert_eq!(tile(&LIMITS_48K, 4, 0), (13, 512));
    assert_eq!(tile(&LIMITS_48K, 4, 4), (12, 512));
    assert_eq!(tile(&LIMITS_48K, 8, 0), (12, 512));
    assert_eq!(tile(&LIMITS_48K, 4, 8), (12, 512));
    assert_eq!(tile(&LIMITS_48K, 8, 4), (12, 512));
    assert_eq!(tile(&LIMITS_48K, 8, 8), (11, 512));
    for (k, v) in [(4, 0), (4, 4), (4, 8), (8, 0), (8, 4), (8, 8)] {
        let (log_tile, _) = tile(&LIMITS_48K, k, v);
        assert!((1usize << log_tile) * (k + v) <= 48 * 1024);
    }
}

#[test]
fn tiles_follow_small_limits() {
    let small = DeviceLimits {
        shared_bytes_per_block: 1024,
        max_threads_per_block: 256,
        max_grid_x: 65535,
    };
    assert_eq!(tile(&small, 8, 8), (6, 32));
    assert_eq!(tile(&small, 4, 0), (8, 128));
    let few_threads = DeviceLimits {
        max_threads_per_block: 64,
        ..LIMITS_48K
    };
    assert_eq!(tile(&few_threads, 4, 0), (13, 64));
    // Absurd limits still give a tile with one comparator.
    let tiny = DeviceLimits {
        shared_bytes_per_block: 3,
        max_threads_per_block: 1,
        max_grid_x: 1,
    };
    assert_eq!(tile(&tiny, 8, 8), (1, 1));
    // A larger shared memory stays at the cap for now.
    let big = DeviceLimits {
        shared_bytes_per_block: 227 * 1024,
        ..LIMITS_48K
    };
    assert_eq!(tile(&big, 8, 8), (MAX_LOG_TILE, 512));
}

#[test]
fn grids_are_clamped() {
    assert_eq!(grid_size(0, 100), 1);
    assert_eq!(grid_size(7, 100), 7);
    assert_eq!(grid_size(1 << 40, 65535), 65535);
    assert_eq!(grid_size(1 << 40, i32::MAX as u32), i32::MAX as u32);
}

#[test]
fn ptx_has_every_kernel() {
    let ptx = PTX;
    for key in KEY_NAMES {
        for value in VALUE_NAMES {
            for kernel in ["local_sort", "local_merge", "global_merge"] {
                let entry = format!(".entry {kernel}_{key}_{value}(");
                assert!(ptx.contains(&entry), "{entry} missing from the PTX");
            }
        }
    }
}

#[test]
fn backend_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CudaBackend>();
}

#[test]
fn driver_errors_name_the_call() {
    let e = driver_error("cuMemAlloc", CudaError::OutOfMemory);
    match &e {
        Error::Driver {
            backend,
            call,
            code,
            ..
        } => {
            assert_eq!(*backend, BackendKind::Cuda);
            assert_eq!(call, "cuMemAlloc");
            assert_eq!(*code, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(e.to_string().contains("cuMemAlloc"), "{e}");
}

/// Without a usable driver (the link-only stub, or no GPU) listing devices fails with an
/// error that names the call, and the crate's device list says why CUDA is unavailable.
#[test]
fn devices_report_a_missing_driver() {
    match devices() {
        Ok(list) => {
            for (i, d) in list.iter().enumerate() {
                assert_eq!(d.index, i);
                assert_eq!(d.backend, BackendKind::Cuda);
            }
        }
        Err(e) => {
            eprintln!("cuda::devices(): {e}");
            let Error::Driver { call, message, .. } = &e else {
                panic!("expected a driver error, got {e:?}");
            };
            assert!(e.to_string().contains(call.as_str()));
            if message.contains("stub") {
                assert_eq!(call, "cuInit");
            }
            let all = crate::devices();
            let cuda = all
                .iter()
                .find(|b| b.backend == BackendKind::Cuda)
                .expect("CUDA is listed");
            assert!(cuda.devices.is_empty());
            let why = cuda.unavailable.as_deref().expect("a reason");
            assert!(why.contains(call.as_str()), "{why}");
            assert!(CudaBackend::open(0).is_err());
        }
    }
}

/// A small deterministic generator.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s ^ (s >> 29)
    }
}

fn compare_with_cpu(gpu: &CudaBackend, n: usize, encoding: KeyEncoding, seed: u64) {
    let mut next = lcg(seed);
    // Few distinct keys in half the cases, so that ties (and the values' order) matter.
    let modulo = if seed.is_multiple_of(2) { u64::MAX } else { 7 };
    let keys64: Vec<u64> = (0..n).map(|_| next() % modulo).collect();
    let keys32: Vec<u32> = keys64
        .iter()
        .map(|&k| k as u32 ^ (k >> 32) as u32)
        .collect();
    let values32: Vec<u32> = (0..n as u32).collect();
    let values64: Vec<u64> = (0..n as u64).map(|i| i << 32 | i).collect();
    let cpu = CpuBackend::new();
    macro_rules! case {
        ($keys:expr, $values:expr, $kv:ident, $vv:ident) => {{
            let (mut gk, mut ck) = ($keys.clone(), $keys.clone());
            let (mut gv, mut cv) = ($values.clone(), $values.clone());
            gpu.sort_words(
                WordsMut::$kv(&mut gk),
                Some(WordsMut::$vv(&mut gv)),
                encoding,
            )
            .expect("GPU sort");
            cpu.sort_words(
                WordsMut::$kv(&mut ck),
                Some(WordsMut::$vv(&mut cv)),
                encoding,
            )
            .expect("CPU sort");
            assert_eq!(gk, ck, "keys n={n} {encoding:?}");
            assert_eq!(gv, cv, "values n={n} {encoding:?}");
        }};
    }
    case!(keys32, values32, U32, U32);
    case!(keys32, values64, U32, U64);
    case!(keys64, values32, U64, U32);
    case!(keys64, values64, U64, U64);
    let (mut gk, mut ck) = (keys32.clone(), keys32.clone());
    gpu.sort_words(WordsMut::U32(&mut gk), None, encoding)
        .expect("GPU sort");
    cpu.sort_words(WordsMut::U32(&mut ck), None, encoding)
        .expect("CPU sort");
    assert_eq!(gk, ck, "keys only n={n} {encoding:?}");
    let (mut gk, mut ck) = (keys64.clone(), keys64.clone());
    gpu.sort_words(WordsMut::U64(&mut gk), None, encoding)
        .expect("GPU sort");
    cpu.sort_words(WordsMut::U64(&mut ck), None, encoding)
        .expect("CPU sort");
    assert_eq!(gk, ck, "keys only n={n} {encoding:?}");
}

/// Bit-identical results to the CPU backend (which runs the same network), values
/// included. Ignored by default, so that a machine without CUDA reports it as not run;
/// `scripts/gpu-check.sh` runs it.
#[test]
#[ignore = "needs a CUDA device: scripts/gpu-check.sh runs it with --ignored"]
fn gpu_matches_cpu() {
    let list = devices().unwrap_or_else(|e| panic!("no CUDA driver: {e}"));
    assert!(!list.is_empty(), "no CUDA device");
    let gpu = CudaBackend::open(0).expect("open device 0");
    let encodings = [
        (KeyKind::Unsigned, false),
        (KeyKind::Signed, false),
        (KeyKind::Float, false),
        (KeyKind::Unsigned, true),
        (KeyKind::Float, true),
    ];
    let mut seed = 1;
    let lengths = [
        0, 1, 2, 3, 5, 31, 64, 100, 1000, 2047, 2048, 2049, 4097, 8191, 8192, 8193,
    ]
    .into_iter()
    .chain([12345, 65536, 100_000, 1 << 17, (1 << 18) + 3, 1_000_003]);
    for n in lengths {
        for (kind, descending) in encodings {
            compare_with_cpu(&gpu, n, KeyEncoding { kind, descending }, seed);
            seed += 1;
        }
    }
    // A length mismatch is refused without touching anything.
    let mut k = vec![3u32, 1, 2];
    let mut v = vec![0u32; 2];
    let e = gpu.sort_words(
        WordsMut::U32(&mut k),
        Some(WordsMut::U32(&mut v)),
        KeyEncoding {
            kind: KeyKind::Unsigned,
            descending: false,
        },
    );
    assert!(matches!(e, Err(Error::LengthMismatch { .. })));
    assert_eq!(k, [3, 1, 2]);
}

/// Rough throughput on a real device: `cargo test --release --features cuda --lib
/// cuda_throughput -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, not a check"]
fn cuda_throughput() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    let encoding = KeyEncoding {
        kind: KeyKind::Unsigned,
        descending: false,
    };
    for log_n in [20, 24, 26] {
        let n = 1usize << log_n;
        let mut next = lcg(log_n);
        let keys: Vec<u32> = (0..n).map(|_| next() as u32).collect();
        for with_values in [false, true] {
            let mut k = keys.clone();
            let mut v: Vec<u32> = (0..n as u32).collect();
            let start = std::time::Instant::now();
            let values = with_values.then(|| WordsMut::U32(&mut v));
            gpu.sort_words(WordsMut::U32(&mut k), values, encoding)
                .expect("GPU sort");
            let secs = start.elapsed().as_secs_f64();
            assert!(k.windows(2).all(|w| w[0] <= w[1]));
            eprintln!(
                "2^{log_n} u32 keys{}: {:.1} ms incl. transfers, {:.0} Mkeys/s",
                if with_values { " + u32 values" } else { "" },
                secs * 1e3,
                n as f64 / secs / 1e6
            );
        }
    }
}
