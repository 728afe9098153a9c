//! Limits, on every GPU found; each test is ignored by default (the test run reports it as
//! ignored, not passed). Run them on the GPU machine with
//! `cargo test --release --all-features --test huge -- --ignored` (or `.device/huge
//! --ignored`); with no GPU they fail.
//!
//! - 2^32 + 3 keys: proves the 64-bit indexing of the kernels (about 17 GiB of device and
//!   17 GiB of host memory).
//! - More than device memory, keys alone and key-value: the sort returns
//!   `Error::OutOfMemory` (no crash, no driver error), the host slices are untouched, and the
//!   sorter still sorts afterwards. The inputs are just larger than the device's memory, so
//!   the host needs that much free memory too; a GPU whose memory exceeds what the host has
//!   available is skipped with the reason printed (an H200's 141 GB on a 128 GiB host).
//!
//! The tests hold one lock, so that two of them never hold their inputs at the same time.

use std::sync::{Mutex, MutexGuard};

use bitonic::{BackendKind, DeviceInfo, DeviceType, Error, Sorter};
use rayon::prelude::*;

/// Taken by every test: each needs most of the host's memory.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every GPU of every backend (CUDA devices and OpenCL GPUs); panics when there is none.
fn gpus() -> Vec<DeviceInfo> {
    let gpus: Vec<_> = bitonic::devices()
        .into_iter()
        .filter(|b| b.backend != BackendKind::Cpu)
        .flat_map(|b| b.devices)
        .filter(|d| d.device_type == DeviceType::Gpu)
        .collect();
    assert!(!gpus.is_empty(), "no GPU found: this test needs one");
    gpus
}

fn open(info: &DeviceInfo) -> Sorter {
    Sorter::builder()
        .ignore_env()
        .backend(info.backend)
        .device_index(info.index)
        .host_threshold(0)
        .build()
        .unwrap_or_else(|e| panic!("{info}: {e}"))
}

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
    let _alone = one_at_a_time();
    for info in gpus() {
        let sorter = open(&info);
        let mut data = keys();
        let before = fingerprint(&data);
        let start = std::time::Instant::now();
        match sorter.sort(&mut data, bitonic::Order::Ascending) {
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

// ---------------------------------------------------------------------------------------
// More than device memory.

const GIB: f64 = (1u64 << 30) as f64;

/// The host memory the kernel says is available (MemAvailable), in bytes.
fn host_available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The GPUs whose over-sized inputs (`bytes_for(device memory)` bytes of host memory) fit in
/// the host's available memory with 4 GiB to spare; the others are named with the reason.
fn gpus_the_host_can_overfill(bytes_for: impl Fn(u64) -> u64) -> Vec<DeviceInfo> {
    let available = host_available_bytes();
    gpus()
        .into_iter()
        .filter(|info| {
            let needed = bytes_for(info.memory_bytes);
            let fits = available.is_some_and(|a| needed.saturating_add(4 << 30) <= a);
            if !fits {
                eprintln!(
                    "{info}: SKIPPED: an input larger than its {:.1} GiB needs {:.1} GiB of host \
                     memory (+4 GiB to spare), the host has {} available",
                    info.memory_bytes as f64 / GIB,
                    needed as f64 / GIB,
                    available.map_or("an unknown amount".to_string(), |a| format!(
                        "{:.1} GiB",
                        a as f64 / GIB
                    ))
                );
            }
            fits
        })
        .collect()
}

/// The input word at position `i`: distinct, cheap to recompute, so that "untouched" is
/// checked against the generator rather than against a copy (which would double the host
/// memory needed).
fn word_at(i: u64, salt: u64) -> u64 {
    let mut z = (i ^ salt).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const KEY_SALT: u64 = 0;
const VALUE_SALT: u64 = 0x5EED_5A17_0000_0001;

fn words(n: usize, salt: u64) -> Vec<u64> {
    (0..n as u64)
        .into_par_iter()
        .map(|i| word_at(i, salt))
        .collect()
}

/// The first position of `data` that no longer holds what [`words`] put there.
fn first_changed(data: &[u64], salt: u64) -> Option<usize> {
    data.par_iter()
        .enumerate()
        .position_first(|(i, &w)| w != word_at(i as u64, salt))
}

/// After a refused sort the sorter must still work.
fn still_sorts(info: &DeviceInfo, sorter: &Sorter) {
    let input: Vec<u64> = words(100_003, 77);
    let mut keys = input.clone();
    sorter
        .sort(&mut keys, bitonic::Order::Ascending)
        .unwrap_or_else(|e| panic!("{info}: a small sort after the refused one failed: {e}"));
    let mut want = input;
    want.sort_unstable();
    assert!(
        keys == want,
        "{info}: a small sort after the refused one is wrong"
    );
}

/// Checks that `result` is `OutOfMemory` asking for more than the device has.
fn expect_out_of_memory(info: &DeviceInfo, what: &str, result: bitonic::Result<()>, bytes: u64) {
    match result {
        Err(e @ Error::OutOfMemory { .. }) => eprintln!("{info}: {what}: refused cleanly: {e}"),
        Err(e) => panic!("{info}: {what} ({bytes} bytes): want Error::OutOfMemory, got {e:?}"),
        Ok(()) => panic!(
            "{info}: {what} ({bytes} bytes, more than the device's {} bytes) returned Ok",
            info.memory_bytes
        ),
    }
}

#[test]
#[ignore = "needs a GPU and as much free host memory as the GPU has: run with --ignored"]
fn more_keys_than_device_memory_is_out_of_memory_and_leaves_the_input_untouched() {
    let _alone = one_at_a_time();
    let n_for = |memory: u64| (memory / 8 + 1) as usize;
    let gpus = gpus_the_host_can_overfill(|memory| n_for(memory) as u64 * 8);
    let Some(largest) = gpus.iter().map(|g| n_for(g.memory_bytes)).max() else {
        eprintln!("no GPU could be tested: see the SKIPPED lines");
        return;
    };
    // One input for every GPU: a refused sort leaves it as it was, which is checked.
    let mut keys = words(largest, KEY_SALT);
    for info in gpus {
        let sorter = open(&info);
        let n = n_for(info.memory_bytes);
        let what = format!("{n} u64 keys");
        let start = std::time::Instant::now();
        let result = sorter.sort(&mut keys[..n], bitonic::Order::Ascending);
        eprintln!(
            "{info}: {what}: returned in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        expect_out_of_memory(&info, &what, result, n as u64 * 8);
        assert_eq!(
            first_changed(&keys, KEY_SALT),
            None,
            "{info}: {what}: input changed"
        );
        still_sorts(&info, &sorter);
    }
}

#[test]
#[ignore = "needs a GPU and as much free host memory as the GPU has: run with --ignored"]
fn more_pairs_than_device_memory_is_out_of_memory_and_leaves_the_input_untouched() {
    let _alone = one_at_a_time();
    // u64 keys with u64 values, 16 bytes a pair: refused before anything is allocated.
    let n_wide = |memory: u64| (memory / 16 + 1) as usize;
    // u32 keys with u32 values filling the device's memory to within 8 bytes: the size check
    // passes and the second allocation fails (the context itself holds device memory).
    let n_narrow = |memory: u64| ((memory - 8) / 8) as usize;
    let gpus = gpus_the_host_can_overfill(|memory| n_wide(memory) as u64 * 16);
    let Some(largest) = gpus.iter().map(|g| n_wide(g.memory_bytes)).max() else {
        eprintln!("no GPU could be tested: see the SKIPPED lines");
        return;
    };
    let mut keys = words(largest, KEY_SALT);
    let mut values = words(largest, VALUE_SALT);
    for info in gpus {
        let sorter = open(&info);

        let n = n_wide(info.memory_bytes);
        let what = format!("{n} u64 keys with u64 values");
        let result =
            sorter.sort_by_key(&mut keys[..n], &mut values[..n], bitonic::Order::Ascending);
        expect_out_of_memory(&info, &what, result, n as u64 * 16);
        assert_eq!(
            first_changed(&keys, KEY_SALT),
            None,
            "{info}: {what}: keys changed"
        );
        assert_eq!(
            first_changed(&values, VALUE_SALT),
            None,
            "{info}: {what}: values changed"
        );

        // The same host memory seen as u32 words (2 per u64, so there is room).
        let n = n_narrow(info.memory_bytes);
        let what = format!("{n} u32 keys with u32 values, 8 bytes short of device memory");
        let keys32: &mut [u32] = bytemuck::cast_slice_mut(&mut keys[..]);
        let values32: &mut [u32] = bytemuck::cast_slice_mut(&mut values[..]);
        let start = std::time::Instant::now();
        let result = sorter.sort_by_key(
            &mut keys32[..n],
            &mut values32[..n],
            bitonic::Order::Ascending,
        );
        eprintln!(
            "{info}: {what}: returned in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        if result.is_ok() {
            // A driver that lets one context fill the whole device: the sort must be right,
            // and the inputs are rebuilt for the next GPU.
            let unsorted = keys32[..n].par_windows(2).position_any(|w| w[0] > w[1]);
            assert_eq!(unsorted, None, "{info}: {what}: sorted, but wrongly");
            eprintln!("{info}: {what}: the device accepted it and sorted it correctly");
            keys = words(largest, KEY_SALT);
            values = words(largest, VALUE_SALT);
        } else {
            expect_out_of_memory(&info, &what, result, n as u64 * 8);
            assert_eq!(
                first_changed(&keys, KEY_SALT),
                None,
                "{info}: {what}: keys changed"
            );
            assert_eq!(
                first_changed(&values, VALUE_SALT),
                None,
                "{info}: {what}: values changed"
            );
        }
        still_sorts(&info, &sorter);
    }
}
