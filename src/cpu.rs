//! The CPU executor: rayon on the host, for machines without a GPU.
//!
//! Keys alone sort with `par_sort_unstable` on ordered words (a total order on bits, so the
//! result equals any correct sort's). Key-value pairs run the same comparator network as
//! the GPUs through [`schedule::emulate`], so values of equal keys land exactly where a GPU
//! puts them.

use crate::backend::{Backend, BackendKind, DeviceInfo, DeviceType};
use crate::error::{Result, check_rows_words};
use crate::keys::{KeyEncoding, Word, WordsMut};
use crate::schedule::{self, Schedule, TileParams};
use rayon::prelude::*;

/// Tiles that stay in a core's L2 cache; the result does not depend on them.
const CPU_TILE: TileParams = TileParams {
    log_tile: 12,
    max_global_levels: 4,
    fuse_tails: true,
};

/// Sorts on the host with rayon.
#[derive(Debug)]
pub struct CpuBackend {
    info: DeviceInfo,
}

impl CpuBackend {
    /// The host CPU, with all of rayon's threads.
    pub fn new() -> CpuBackend {
        CpuBackend { info: info() }
    }
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

/// The host as a device.
pub fn info() -> DeviceInfo {
    DeviceInfo {
        backend: BackendKind::Cpu,
        index: 0,
        name: "host CPU (rayon)".to_string(),
        vendor: std::env::consts::ARCH.to_string(),
        device_type: DeviceType::Cpu,
        memory_bytes: host_memory_bytes(),
        compute_units: rayon::current_num_threads() as u32,
    }
}

fn host_memory_bytes() -> u64 {
    // /proc/meminfo where it exists; 0 (unknown) elsewhere.
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// Below this many keys a sort stays on the calling thread: waking rayon's threads costs
/// tens of microseconds (about 50 us per parallel call on a 16-core host), more than sorting
/// a few thousand keys.
const SEQUENTIAL_BELOW: usize = 1 << 14;

/// Applies `f` to every key: on the calling thread below [`SEQUENTIAL_BELOW`], else on
/// rayon's threads.
fn map_keys<W: Word>(keys: &mut [W], f: impl Fn(W) -> W + Sync) {
    if keys.len() < SEQUENTIAL_BELOW {
        keys.iter_mut().for_each(|k| *k = f(*k));
    } else {
        keys.par_iter_mut().for_each(|k| *k = f(*k));
    }
}

fn sort_keys<W: Word>(keys: &mut [W], enc: KeyEncoding) {
    map_keys(keys, |k| enc.encode(k));
    if keys.len() < SEQUENTIAL_BELOW {
        keys.sort_unstable();
    } else {
        keys.par_sort_unstable();
    }
    map_keys(keys, |k| enc.decode(k));
}

fn sort_pairs<W: Word, V: bytemuck::Pod + Send>(
    keys: &mut [W],
    values: &mut [V],
    enc: KeyEncoding,
) {
    if keys.len() < SEQUENTIAL_BELOW && sort_distinct_pairs(keys, values, enc) {
        return;
    }
    map_keys(keys, |k| enc.encode(k));
    let schedule = Schedule::new(keys.len() as u64, CPU_TILE);
    schedule::emulate(&schedule, keys, Some(values));
    map_keys(keys, |k| enc.decode(k));
}

/// Sorts short pairs whose keys are all distinct with the standard library: distinct keys
/// have one sorted order, which the network produces too, so only ties need the network
/// (and its scalar emulation costs several times more). Returns false, with `keys` and
/// `values` untouched, when two keys are equal.
fn sort_distinct_pairs<W: Word, V: bytemuck::Pod>(
    keys: &mut [W],
    values: &mut [V],
    enc: KeyEncoding,
) -> bool {
    let mut pairs: Vec<(W, V)> = keys
        .iter()
        .map(|&k| enc.encode(k))
        .zip(values.iter().copied())
        .collect();
    pairs.sort_unstable_by_key(|p| p.0);
    if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
        return false;
    }
    for ((k, v), (pk, pv)) in keys.iter_mut().zip(values.iter_mut()).zip(pairs) {
        *k = enc.decode(pk);
        *v = pv;
    }
    true
}

/// Sorts `keys` (and `values`) in rows of `row_len`, rows in parallel.
fn sort_rows<W: Word>(
    keys: &mut [W],
    values: Option<WordsMut<'_>>,
    enc: KeyEncoding,
    row_len: usize,
) {
    fn pairs<W: Word, V: bytemuck::Pod + Send>(
        keys: &mut [W],
        values: &mut [V],
        enc: KeyEncoding,
        row_len: usize,
    ) {
        keys.par_chunks_mut(row_len)
            .zip(values.par_chunks_mut(row_len))
            .for_each(|(k, v)| sort_pairs(k, v, enc));
    }
    match values {
        None => keys.par_chunks_mut(row_len).for_each(|k| sort_keys(k, enc)),
        Some(WordsMut::U32(v)) => pairs(keys, v, enc, row_len),
        Some(WordsMut::U64(v)) => pairs(keys, v, enc, row_len),
    }
}

impl Backend for CpuBackend {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn sort_rows_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()> {
        check_rows_words(keys.len(), values.as_ref().map(WordsMut::len), row_len)?;
        match keys {
            WordsMut::U32(k) => sort_rows(k, values, encoding, row_len),
            WordsMut::U64(k) => sort_rows(k, values, encoding, row_len),
        }
        Ok(())
    }
}
