//! The radix sort of one row of 32- and 64-bit keys, with its threshold lowered to two keys
//! so that short rows reach every edge (a tile cut by the row's end, one and several tiles,
//! skipped digits, an odd number of moves): keys alone through the backend, bit for bit
//! against `sort_unstable_by` in the key type's total order; pairs through the launches
//! directly (the plan gives pairs the radix sort only past 8 MiB), against a stable sort by
//! ordered key. `long_pairs.rs` has the choice of the radix sort and the long pairs and
//! argsorts that take it through the backend.

use std::ptr;

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::types::CL_BLOCKING;

use super::*;
use crate::keys::Word;
use crate::schedule::radix::{RadixPlan, emulate};

/// The device of [`backends`] with the radix sort from two keys on.
pub(super) fn radix_backend() -> &'static OpenClBackend {
    static CELL: OnceLock<OpenClBackend> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut b = OpenClBackend::open(backends()[0].info.index).expect("open the device");
        b.radix_from = [2; 2];
        b
    })
}

/// 2..=40, and 2^k - 1, 2^k, 2^k + 1 around a tile of `tile` keys and a few tiles, up to
/// 2^18 + 1.
fn radix_lengths(tile: usize) -> Vec<usize> {
    let mut out: Vec<usize> = (2..=40).collect();
    for k in [8, 10, 11, 12, 13, 14, 18] {
        out.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    out.extend([tile - 1, tile, tile + 1, 3 * tile + 5, 7 * tile - 3]);
    out.sort_unstable();
    out.dedup();
    out
}

/// Patterns of `n` raw key bits: random (an eighth from `special`), ascending and
/// descending in `cmp`'s order, one key, four keys, keys that differ in their second byte
/// alone (one digit moves them: an odd number of moves), and for 64-bit keys keys below
/// 2^32 (four skipped digits).
fn patterns<T: Copy>(
    rng: &mut StdRng,
    n: usize,
    special: &[u64],
    of: fn(u64) -> T,
    cmp: fn(&T, &T) -> Ordering,
    wide: bool,
) -> Vec<(&'static str, Vec<T>)> {
    let random = |rng: &mut StdRng| {
        if rng.gen_range(0..8) == 0 {
            special[rng.gen_range(0..special.len())]
        } else {
            rng.r#gen::<u64>()
        }
    };
    let any: Vec<T> = (0..n).map(|_| of(random(rng))).collect();
    let mut ascending = any.clone();
    ascending.sort_by(cmp);
    let mut descending = ascending.clone();
    descending.reverse();
    let one = random(rng);
    let four: Vec<u64> = (0..4).map(|_| random(rng)).collect();
    let byte = random(rng);
    let mut out = vec![
        ("random", any),
        ("ascending", ascending),
        ("descending", descending),
        ("equal", vec![of(one); n]),
        (
            "few",
            (0..n).map(|_| of(four[rng.gen_range(0..4)])).collect(),
        ),
        (
            "second byte",
            (0..n)
                .map(|_| of(byte & !0xff00 | (rng.gen_range(0..256u64) << 8)))
                .collect(),
        ),
    ];
    if wide {
        out.push((
            "below 2^32",
            (0..n).map(|_| of(u64::from(rng.r#gen::<u32>()))).collect(),
        ));
    }
    out
}

/// Keys of one type through the backend's radix sort, both orders, every length and
/// pattern (one pattern a length past 2^14, to keep the test short).
fn run_keys<T: SortKey + std::fmt::Debug>(
    seed: u64,
    special: &[u64],
    of: fn(u64) -> T,
    cmp: fn(&T, &T) -> Ordering,
) {
    let b = radix_backend();
    let bytes = std::mem::size_of::<T>();
    let variant = b.variant_of_widths(bytes, None).expect("the program");
    let tile =
        (crate::kernel_contract::RADIX_THREADS * variant.limits.radix_keys_per_thread) as usize;
    let mut rng = StdRng::seed_from_u64(seed);
    for n in radix_lengths(tile) {
        match b.plan(&variant, plan::Shape::new(n as u64, 1), bytes as u64, 0) {
            SortPlan::Radix(r) => assert_eq!(r.plan.n, n as u64),
            other => panic!("n={n}: {other:?}, not the radix sort"),
        }
        let mut all = patterns(&mut rng, n, special, of, cmp, bytes == 8);
        if n > 1 << 14 {
            let i = n % all.len();
            all = vec![all.swap_remove(i)];
        }
        for (name, keys) in all {
            eprintln!("{} n={n} {name}", std::any::type_name::<T>());
            check_keys_on(std::iter::once(b), &keys, cmp);
        }
    }
}

/// NaNs of both signs with payloads, both zeros, both infinities, the extremes.
const F32_SPECIAL: [u64; 10] = [
    0x7fc0_0000,
    0xffc0_0000,
    0x7f80_0001,
    0xff80_1234,
    0x8000_0000,
    0,
    0x7f80_0000,
    0xff80_0000,
    0x0000_0001,
    0x8000_0001,
];
const F64_SPECIAL: [u64; 10] = [
    0x7ff8_0000_0000_0000,
    0xfff8_0000_0000_0000,
    0x7ff0_0000_0000_0001,
    0xfff0_0000_dead_beef,
    0x8000_0000_0000_0000,
    0,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    1,
    0x8000_0000_0000_0001,
];
const INT_SPECIAL: [u64; 6] = [
    0,
    1,
    u64::MAX,
    i64::MIN as u64,
    i64::MAX as u64,
    0x8000_0000,
];

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn radix_sort_of_u32_and_i32_keys() {
    run_keys::<u32>(31, &INT_SPECIAL, |x| x as u32, u32::cmp);
    run_keys::<i32>(32, &INT_SPECIAL, |x| x as u32 as i32, i32::cmp);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn radix_sort_of_f32_keys() {
    run_keys::<f32>(
        33,
        &F32_SPECIAL,
        |x| f32::from_bits(x as u32),
        f32::total_cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn radix_sort_of_u64_and_i64_keys() {
    run_keys::<u64>(34, &INT_SPECIAL, |x| x, u64::cmp);
    run_keys::<i64>(35, &INT_SPECIAL, |x| x as i64, i64::cmp);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn radix_sort_of_f64_keys() {
    run_keys::<f64>(36, &F64_SPECIAL, f64::from_bits, f64::total_cmp);
}

/// A device buffer holding `data` (one byte where it is empty).
fn upload<T: bytemuck::Pod>(b: &OpenClBackend, queue: &CommandQueue, data: &[T]) -> Buffer<u8> {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    // SAFETY: no host pointer (null, with flags that use none); the size is nonzero.
    let mut buffer = unsafe {
        Buffer::<u8>::create(
            &b.context,
            CL_MEM_READ_WRITE,
            bytes.len().max(1),
            ptr::null_mut(),
        )
    }
    .expect("a buffer");
    if !bytes.is_empty() {
        // SAFETY: a blocking write of the slice into a buffer as large.
        unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, bytes, &[]) }
            .expect("the upload");
    }
    buffer
}

/// `out.len()` words of `buffer`.
fn download<T: bytemuck::Pod>(queue: &CommandQueue, buffer: &Buffer<u8>, out: &mut [T]) {
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
    // SAFETY: a blocking read of as many bytes as the slice holds, which the buffer has.
    unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, bytes, &[]) }.expect("the download");
}

/// Keys with their positions as values through the radix launches, both orders, against a
/// stable sort by ordered key.
fn run_pairs<
    K: Word + Into<u64> + bytemuck::Pod + std::fmt::Debug,
    V: bytemuck::Pod + std::fmt::Debug,
>(
    seed: u64,
    kind: KeyKind,
    value: fn(usize) -> V,
) {
    let b = radix_backend();
    let key_bytes = std::mem::size_of::<K>();
    let value_bytes = std::mem::size_of::<V>();
    let variant = b
        .variant_of_widths(key_bytes, Some(value_bytes))
        .expect("the program");
    let kpt = variant.limits.radix_keys_per_thread;
    let tile = (crate::kernel_contract::RADIX_THREADS * kpt) as usize;
    let queue = CommandQueue::create_default(&b.context, 0).expect("a queue");
    let mut rng = StdRng::seed_from_u64(seed);
    let special: &[u64] = if kind == KeyKind::Float {
        if key_bytes == 4 {
            &F32_SPECIAL
        } else {
            &F64_SPECIAL
        }
    } else {
        &INT_SPECIAL
    };
    for n in radix_lengths(tile) {
        let mut all = patterns(&mut rng, n, special, |x| x, u64::cmp, key_bytes == 8);
        if n > 1 << 14 {
            let i = n % all.len();
            all = vec![all.swap_remove(i)];
        }
        for (name, bits) in all {
            let keys: Vec<K> = bits
                .iter()
                .map(|&x| bytemuck::pod_read_unaligned::<K>(&x.to_le_bytes()[..key_bytes]))
                .collect();
            let values: Vec<V> = (0..n).map(value).collect();
            for descending in [false, true] {
                let encoding = KeyEncoding { kind, descending };
                let mut want: Vec<(K, V)> = keys.iter().copied().zip(values.clone()).collect();
                want.sort_by_key(|&(k, _)| encoding.encode(k));
                let label = format!(
                    "{} keys, {} values, n={n}, {name}, descending={descending}",
                    std::any::type_name::<K>(),
                    std::any::type_name::<V>()
                );
                let data_keys = upload(b, &queue, &keys);
                let data_values = upload(b, &queue, &values);
                let scratch_keys = upload(b, &queue, &keys);
                let scratch_values = upload(b, &queue, &values);
                let plan = RadixPlan::new(n as u64, key_bytes as u64, kpt);
                let state = upload(b, &queue, &vec![0u8; plan.state_bytes() as usize]);
                let launches = plan::RadixLaunches::new(&variant.limits, plan);
                let operands = |k: &Buffer<u8>, v: &Buffer<u8>| Operands {
                    keys: k.get(),
                    values: Some(v.get()),
                    key_bytes: key_bytes as u64,
                    value_bytes: value_bytes as u64,
                };
                {
                    let kernels = variant.lock_kernels();
                    b.enqueue_radix(
                        &queue,
                        &kernels,
                        operands(&data_keys, &data_values),
                        (operands(&scratch_keys, &scratch_values), state.get()),
                        &launches,
                        encoding,
                        0,
                    )
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                }
                queue.finish().expect("the sort");
                let mut got_k = keys.clone();
                let mut got_v = values.clone();
                download(&queue, &data_keys, &mut got_k);
                download(&queue, &data_values, &mut got_v);
                let (want_k, want_v): (Vec<K>, Vec<V>) = want.into_iter().unzip();
                assert_same_pairs((&got_k, &got_v), (&want_k, &want_v), &label);
                // The digits the device skipped are the model's.
                let mut words = vec![0u32; plan.tile_counter_offset() as usize];
                download(&queue, &state, &mut words);
                let flags = &words[plan.skip_offset() as usize..];
                let moved = flags.iter().filter(|&&f| f == 0).count() as u32;
                let mut ordered: Vec<K> = keys.iter().map(|&k| encoding.encode(k)).collect();
                let modeled = emulate::<K, ()>(&plan, &mut ordered, None);
                assert_eq!(moved, modeled, "{label}: digits moved");
                if name == "second byte" && n > 1000 {
                    assert_eq!(moved, 1, "{label}");
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn radix_pairs_of_32_bit_keys() {
    run_pairs::<u32, u32>(41, KeyKind::Unsigned, |i| i as u32);
    run_pairs::<u32, u64>(42, KeyKind::Float, |i| (i as u64) << 32 | 7);
    run_pairs::<u32, u32>(43, KeyKind::Signed, |i| i as u32);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn radix_pairs_of_64_bit_keys() {
    run_pairs::<u64, u32>(44, KeyKind::Signed, |i| i as u32);
    run_pairs::<u64, u64>(45, KeyKind::Float, |i| !(i as u64));
    run_pairs::<u64, u64>(46, KeyKind::Unsigned, |i| i as u64);
}
