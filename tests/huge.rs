//! Lengths past 2^32 on every GPU found: proves the 64-bit indexing of the kernels.
//!
//! Needs about 17 GiB of device memory and 17 GiB of host memory, so it is ignored by default
//! (the test run reports it as ignored, not passed). Run it on a large GPU with
//! `cargo test --release --all-features --test huge -- --ignored`; with no GPU it fails.

use bitonic::{BackendKind, DeviceType, Sorter};
use rayon::prelude::*;

/// 2^32 + 3: past both the 2^31 and the 2^32 boundaries.
const N: usize = (1 << 32) + 3;

/// An order-independent fingerprint of a multiset of keys: a wrapping sum of a strong mix of
/// each key, so a lost, duplicated or altered key changes it with overwhelming probability.
fn fingerprint(keys: &[u32]) -> u64 {
    keys.par_iter()
        .map(|&k| {
            let mut z = u64::from(k).wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .reduce(|| 0, u64::wrapping_add)
}

/// Pseudo-random keys, generated in parallel from the index (cheap for 4 G keys).
fn keys() -> Vec<u32> {
    (0..N as u64)
        .into_par_iter()
        .map(|i| {
            let z = i.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (i >> 17);
            (z >> 24) as u32
        })
        .collect()
}

#[test]
#[ignore = "needs ~17 GiB of GPU and host memory: run with --ignored on a large GPU"]
fn sorts_2_pow_32_plus_3_u32_keys_on_every_gpu() {
    let gpus: Vec<_> = bitonic::devices()
        .into_iter()
        .filter(|b| b.backend != BackendKind::Cpu)
        .flat_map(|b| b.devices)
        .filter(|d| d.device_type == DeviceType::Gpu)
        .collect();
    assert!(!gpus.is_empty(), "no GPU found: this test needs one");
    for info in gpus {
        let sorter = Sorter::builder()
            .ignore_env()
            .backend(info.backend)
            .device_index(info.index)
            .build()
            .unwrap_or_else(|e| panic!("{info}: {e}"));
        let mut data = keys();
        let before = fingerprint(&data);
        let start = std::time::Instant::now();
        match sorter.sort(&mut data) {
            Ok(()) => {
                let secs = start.elapsed().as_secs_f64();
                let unsorted = data.par_windows(2).position_any(|w| w[0] > w[1]);
                assert_eq!(unsorted, None, "{info}: not sorted at that index");
                assert_eq!(fingerprint(&data), before, "{info}: keys lost or altered");
                eprintln!("{info}: sorted {N} u32 keys in {secs:.1} s (host round trip)");
            }
            // A device whose single allocations are too small (OpenCL) must say so cleanly.
            Err(e @ bitonic::Error::OutOfMemory { .. }) if info.backend == BackendKind::OpenCl => {
                assert_eq!(fingerprint(&data), before, "{info}: input changed on error");
                eprintln!("{info}: refused with a clean error: {e}");
            }
            Err(e) => panic!("{info}: {e}"),
        }
    }
}
