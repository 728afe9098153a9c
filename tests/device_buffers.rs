//! Sorting keys that already live in device memory: `CudaBackend::sort_device*` on `cust`
//! slices and a caller's stream, `OpenClBackend::sort_device*` on `opencl3` buffers and a
//! caller's queue; and the device buffers that sorts of host slices keep between calls.
//!
//! Trials, per target (`cuda0`, `opencl0`, ...; the CPU target `cpu0` gets only `workspace`):
//! - `device::keys::<key>::<asc|desc>`: every `WordKey` type (u32 i32 f32 u64 i64 f64) in
//!   both orders, at lengths 0 (CUDA only: OpenCL has no empty buffers), 1, 2, 3, 1000 and
//!   2^k - 1, 2^k, 2^k + 1 for k = 10, 13, 17 (2^17 takes several passes on every device).
//!   Up to 2^13 + 1 every input: random, sorted, reversed, all equal, three values, half
//!   edge values, edge values only (NaNs of both signs with payloads, ±0.0, ±infinity, MIN,
//!   MAX, subnormals) and distinct keys; at 2^17 +- 1 one input per length (edge values,
//!   then two that change from trial to trial). Checked bit for bit against `sort_unstable`
//!   / `sort_by(total_cmp)`, reversed for descending.
//! - `device::pairs::<key>_<value>`: `sort_device_by_key` with u32 and u64 values, both
//!   orders, lengths up to 2^17 + 1: keys sorted, the output pairs a permutation of the
//!   input pairs, with distinct keys every value exactly where its key went, and where keys
//!   repeat the result equal bit for bit (values too) to the same backend's sort of host
//!   slices (the same network runs in both).
//! - `device::rows::<key>::<order>`, `device::rows_by_key::<key>_<value>::<order>`: rows of
//!   1, 2, 3, 5 (20_000 rows), 1000, 8193 and 70_000 keys (longer than any tile); every row
//!   checked, and the key-value result equal to the host-slice `sort_rows_by_key`.
//! - `device::top_k::<key>::<order>`: `top_k_device_rows` on rows of 1 to 70_001 keys
//!   (around the top-k tile of 2^12 words), k = 1, k = the row, k past the on-chip 2048,
//!   special, few-valued, edge (NaNs, ±0.0), random and all-equal keys; positions and
//!   values bit for bit against a CPU model (key order, then position), keys unchanged. On
//!   GPUs also 8 rows of 2^20 with k = 16384 (`f32` and `i64`, ascending). `device::top_k::errors`: bad shapes and output
//!   lengths are `InvalidConfig` and write nothing.
//! - `device::sixteen::<key>::*` (`u16`, `i16`; `f16`, `bf16` with `half`): 16-bit keys
//!   sorted in place: all 65,536 bit patterns bit for bit against `total_cmp` (one array,
//!   rows), lengths around tiles and merges, pairs, top-k, the counting sort
//!   (`device_buffers/device/sixteen.rs`; CUDA holds f16 and bf16 as bits).
//! - `device::sub_range`: a sort of part of a larger allocation (a cust sub-slice, an OpenCL
//!   sub-buffer), by key and then keys alone, touches nothing outside it.
//! - `device::queue_order`: the sort runs after an asynchronous upload enqueued on the same
//!   stream or queue, and a read enqueued after it sees the sorted data.
//! - `device::errors::shapes`: keys and values of different lengths (`LengthMismatch`), rows
//!   that do not divide the keys (`InvalidConfig`), values of 1 and 2 bytes
//!   (`UnsupportedValueSize`); each error leaves the buffers as they were.
//! - `device::errors::foreign`: OpenCL: a queue of a second context on the same device, key
//!   and value buffers of that context, a buffer of 7 bytes typed `u32` and one of 12 bytes
//!   typed `u64`; CUDA: a stream and memory of a non-primary context. All `ForeignBuffer`,
//!   the buffers unchanged.
//! - OpenCL only: `device::out_of_order_queue` (an out-of-order queue: a correct sort or an
//!   error, never a wrong result). CUDA only: `device::stream_ordered_alloc` (keys and
//!   values allocated with `cuMemAllocAsync` on the caller's stream).
//! - `workspace`: one new sorter sorts 1000, 100_000, 10 and 50_000 keys, then as many
//!   pairs: all correct; `cached_device_bytes()` is 0 on the CPU and on a GPU covers the
//!   largest sort, never shrinks, and is no larger than the largest key and value arrays so
//!   far plus a merge scratch of the keys; after `release_device_memory()` it is 0 and the next sort works and allocates
//!   again.
//!
//! Targets and gating are the suite's (`support/targets.rs`): a backend compiled in but
//! unavailable (CUDA without a GPU) has its trials listed as ignored with the reason;
//! `BITONIC_REQUIRE=cuda` makes that a failing `require::cuda`; `BITONIC_TEST_BACKENDS`,
//! `BITONIC_TEST_SEED` and `BITONIC_TEST_TIMES` work as for the suite.

#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use bitonic::{BackendKind, Sorter};
use libtest_mimic::{Arguments, Failed};
use support::{Pattern, check_keys, expected, input_seed, pair_multiset, rng_for};
use targets::{Slot, Target};

// ---------------------------------------------------------------------------------------
// The workspace of host-slice sorts, on every target.

/// What a sort of host slices may keep on the device, checked after each sort.
struct Workspace<'a> {
    sorter: &'a Sorter,
    label: &'a str,
    gpu: bool,
    /// The largest key array and the largest value array sorted so far, in bytes.
    max_keys: u64,
    max_values: u64,
    /// The largest single sort so far (keys plus values), in bytes.
    max_sort: u64,
    /// The last reading.
    last: u64,
}

impl Workspace<'_> {
    fn observe(&mut self, what: &str, key_bytes: u64, value_bytes: u64) -> Result<(), String> {
        let cached = self.sorter.cached_device_bytes();
        let at = format!("{}::workspace: after {what}", self.label);
        if !self.gpu {
            return match cached {
                0 => Ok(()),
                c => Err(format!(
                    "{at}: the CPU backend reports {c} cached device bytes"
                )),
            };
        }
        self.max_keys = self.max_keys.max(key_bytes);
        self.max_values = self.max_values.max(value_bytes);
        self.max_sort = self.max_sort.max(key_bytes + value_bytes);
        if cached < self.max_sort {
            return Err(format!(
                "{at}: cached_device_bytes() = {cached}, less than the largest sort so far \
                 ({} bytes of keys and values)",
                self.max_sort
            ));
        }
        if cached < self.last {
            return Err(format!(
                "{at}: cached_device_bytes() shrank from {} to {cached}",
                self.last
            ));
        }
        // Merge-path sorts of keys alone also keep a scratch copy of the keys and one u64
        // splitter per output tile and one more (tiles of at least 2^9 keys, on a device of
        // 32 KiB of local memory: a 256th of the keys' bytes, and two splitters for the
        // partial tile and the last).
        let scratch = self.max_keys + self.max_keys / 256 + 16;
        let bound = self.max_keys + self.max_values + scratch;
        if cached > bound {
            return Err(format!(
                "{at}: cached_device_bytes() = {cached}, more than the largest key array \
                 plus the largest value array plus the merge scratch so far ({} + {} + {} \
                 bytes)",
                self.max_keys, self.max_values, scratch
            ));
        }
        self.last = cached;
        Ok(())
    }

    fn release(&mut self) -> Result<(), String> {
        self.sorter.release_device_memory();
        let cached = self.sorter.cached_device_bytes();
        if cached != 0 {
            return Err(format!(
                "{}::workspace: cached_device_bytes() = {cached} after release_device_memory()",
                self.label
            ));
        }
        (self.max_keys, self.max_values, self.max_sort, self.last) = (0, 0, 0, 0);
        Ok(())
    }
}

fn workspace_keys(ws: &mut Workspace<'_>, seed: u64, n: usize) -> Result<(), String> {
    let input: Vec<u32> = Pattern::Random.keys(n, &mut rng_for(input_seed(seed, "ws", n)));
    let mut got = input.clone();
    ws.sorter
        .sort(&mut got, bitonic::Order::Ascending)
        .map_err(|e| format!("{}::workspace: sort of {n} u32 keys: {e}", ws.label))?;
    check_keys(&got, &expected(&input, false))
        .map_err(|e| format!("{}::workspace: sort of {n} u32 keys: {e}", ws.label))?;
    ws.observe(&format!("sorting {n} u32 keys"), n as u64 * 4, 0)
}

fn workspace_pairs(ws: &mut Workspace<'_>, seed: u64, n: usize) -> Result<(), String> {
    let keys_in: Vec<i64> = Pattern::Few.keys(n, &mut rng_for(input_seed(seed, "ws-pairs", n)));
    let values_in: Vec<u64> = (0..n as u64).collect();
    let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
    let what = format!("sorting {n} i64 keys with u64 values");
    let fail = |e: String| format!("{}::workspace: {what}: {e}", ws.label);
    ws.sorter
        .sort_by_key(&mut keys, &mut values, bitonic::Order::Descending)
        .map_err(|e| fail(e.to_string()))?;
    check_keys(&keys, &expected(&keys_in, true)).map_err(fail)?;
    if pair_multiset(&keys, &values) != pair_multiset(&keys_in, &values_in) {
        return Err(fail(
            "the pairs are not a permutation of the input pairs".into(),
        ));
    }
    ws.observe(&what, n as u64 * 8, n as u64 * 8)
}

/// One new sorter: keys, then pairs, of 1000, 100_000, 10 and 50_000 elements; then a
/// release and one more sort.
fn workspace(t: &Target) -> Result<(), Failed> {
    let sorter = t
        .open_another()
        .map_err(|e| format!("{}: opening a second sorter: {e}", t.label))?;
    let mut ws = Workspace {
        sorter: &sorter,
        label: &t.label,
        gpu: t.info.backend != BackendKind::Cpu,
        max_keys: 0,
        max_values: 0,
        max_sort: 0,
        last: 0,
    };
    ws.observe("opening the sorter", 0, 0)?;
    if ws.gpu && sorter.cached_device_bytes() != 0 {
        return Err(format!(
            "{}::workspace: a new sorter already caches device memory",
            t.label
        )
        .into());
    }
    const SIZES: [usize; 4] = [1000, 100_000, 10, 50_000];
    for n in SIZES {
        workspace_keys(&mut ws, t.seed, n)?;
    }
    for n in SIZES {
        workspace_pairs(&mut ws, t.seed, n)?;
    }
    ws.release()?;
    workspace_pairs(&mut ws, t.seed, 50_000)?;
    if ws.gpu && sorter.cached_device_bytes() == 0 {
        return Err(format!(
            "{}::workspace: the sort after release_device_memory() kept no device memory",
            t.label
        )
        .into());
    }
    workspace_keys(&mut ws, t.seed, 1000)?;
    ws.release()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Device-resident sorts, the same trials for CUDA and OpenCL.

#[cfg(any(feature = "cuda", feature = "opencl"))]
#[path = "device_buffers/device.rs"]
mod device;

// ---------------------------------------------------------------------------------------
// OpenCL.

#[cfg(feature = "opencl")]
#[path = "device_buffers/opencl.rs"]
mod opencl;

#[cfg(not(feature = "opencl"))]
mod opencl {
    pub fn register(_: &crate::targets::Slot, _: &mut Vec<libtest_mimic::Trial>) {}
}

// ---------------------------------------------------------------------------------------
// CUDA.

#[cfg(feature = "cuda")]
#[path = "device_buffers/cuda.rs"]
mod cuda;

#[cfg(not(feature = "cuda"))]
mod cuda {
    pub fn register(_: &crate::targets::Slot, _: &mut Vec<libtest_mimic::Trial>) {}
}

// ---------------------------------------------------------------------------------------

/// The backend of a slot: a ready target's, or the one an unavailable slot is named after.
fn backend_of(slot: &Slot) -> Option<BackendKind> {
    match slot {
        Slot::Ready(t) => Some(t.info.backend),
        Slot::Unavailable { label, .. } => BackendKind::parse(label),
    }
}

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("device_buffers");
    let mut trials = found.failures;
    for slot in &found.slots {
        match backend_of(slot) {
            Some(BackendKind::OpenCl) => opencl::register(slot, &mut trials),
            Some(BackendKind::Cuda) => cuda::register(slot, &mut trials),
            Some(BackendKind::Cpu) | None => {}
        }
        trials.push(slot.trial("workspace", workspace));
    }
    libtest_mimic::run(&args, trials).exit()
}
