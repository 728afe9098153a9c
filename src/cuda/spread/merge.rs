//! Step 4 of a spread sort (see `super`): each device merges the runs it received, two by
//! two, into the caller's buffer.

use std::ffi::c_void;

use cust::memory::DeviceBuffer;
use cust::sys as cu;

use super::super::driver::{copy_device_async, on};
use super::super::kernels::launch_kernel;
use super::{MERGE_BLOCKS_PER_SM, MERGE_THREADS, SEARCH_THREADS, Side, merge_log_tile};
use crate::error::Result;
use crate::kernel_contract::padded_words;
use crate::keys::KeyEncoding;

/// Step 4 on one side: merges the received runs (lengths `runs`, back to back in the
/// buffer at `received`) two by two, level after level, alternating between the buffer and the
/// caller's keys so that the last level writes the keys; with an even number of levels the
/// runs are first copied to the keys. After an error, the last buffer that held every key
/// (as sorted runs) is copied to the caller's keys, unless they are that buffer.
pub(super) fn merge_received(
    side: &Side<'_>,
    received: cu::CUdeviceptr,
    runs: &[u64],
    encoding: KeyEncoding,
) -> Result<()> {
    side.make_current()?;
    let key_bytes = side.keys.word_bytes as u64;
    let context = side.context();
    let stream = side.stream.as_inner();
    let bytes = side.len() * key_bytes;
    let keys = side.keys.ptr;
    let mut runs: Vec<u64> = runs.iter().copied().filter(|&r| r > 0).collect();
    let mut levels = 0u32;
    while (1usize << levels) < runs.len() {
        levels += 1;
    }
    let copy = |dst, src| copy_device_async((dst, context), (src, context), bytes as usize, stream);
    // The buffer that holds all of the side's keys as sorted runs: after an error, its
    // keys are copied to the caller's (unless they are there).
    let mut complete = received;
    let merged = merge_levels(
        side,
        (received, keys),
        &mut runs,
        levels,
        encoding,
        &mut complete,
    );
    if merged.is_err() && complete != keys {
        let _ = copy(keys, complete);
    }
    merged
}

/// The levels of [`merge_received`]; `complete` follows the buffer that holds every key.
fn merge_levels(
    side: &Side<'_>,
    (received, keys): (cu::CUdeviceptr, cu::CUdeviceptr),
    runs: &mut Vec<u64>,
    levels: u32,
    encoding: KeyEncoding,
    complete: &mut cu::CUdeviceptr,
) -> Result<()> {
    let key_bytes = side.keys.word_bytes as u64;
    let context = side.context();
    let stream = side.stream.as_inner();
    let bytes = side.len() * key_bytes;
    if levels.is_multiple_of(2) {
        copy_device_async((keys, context), (received, context), bytes as usize, stream)?;
        *complete = keys;
    }
    if levels == 0 {
        return Ok(());
    }
    let (mut from, mut to) = if levels.is_multiple_of(2) {
        (keys, received)
    } else {
        (received, keys)
    };
    let log_tile = merge_log_tile(key_bytes as usize);
    let tiles = side.len().div_ceil(1 << log_tile) + 2;
    // SAFETY: each entry is written by a split launch before the merge launch after it
    // on the same stream reads it; freed in stream order below.
    let splits = unsafe { DeviceBuffer::<u64>::uninitialized_async(tiles as usize, side.stream) }
        .map_err(on("cuMemAllocAsync"))?;
    let mut merged = Ok(());
    while runs.len() > 1 {
        merged = merge_level(
            side,
            (from, to),
            runs,
            splits.as_device_ptr().as_raw(),
            encoding,
        );
        if merged.is_err() {
            break;
        }
        *complete = to;
        *runs = runs.chunks(2).map(|pair| pair.iter().sum()).collect();
        std::mem::swap(&mut from, &mut to);
    }
    let freed = splits.drop_async(side.stream).map_err(on("cuMemFreeAsync"));
    merged.and(freed)
}

/// One level: runs `2i` and `2i + 1` of `from` merged into the same place of `to`, a last
/// run alone copied.
fn merge_level(
    side: &Side<'_>,
    (from, to): (cu::CUdeviceptr, cu::CUdeviceptr),
    runs: &[u64],
    splits: cu::CUdeviceptr,
    encoding: KeyEncoding,
) -> Result<()> {
    let key_bytes = side.keys.word_bytes as u64;
    let context = side.context();
    let stream = side.stream.as_inner();
    let wide = usize::from(key_bytes == 8);
    let kernels = side.backend.spread_kernels;
    let log_tile = merge_log_tile(key_bytes as usize);
    let shared = (padded_words(log_tile) * key_bytes) as u32;
    let resident = side.backend.limits.multiprocessors.max(1) * MERGE_BLOCKS_PER_SM;
    let mut at = 0u64;
    for pair in runs.chunks(2) {
        let offset = at * key_bytes;
        if let [alone] = pair {
            copy_device_async(
                (to + offset, context),
                (from + offset, context),
                (*alone * key_bytes) as usize,
                stream,
            )?;
            at += alone;
            continue;
        }
        let (len_a, len_b) = (pair[0], pair[1]);
        let total = len_a + len_b;
        let mut a = from + offset;
        let mut b = a + len_a * key_bytes;
        let mut dst = to + offset;
        let (mut len_a, mut len_b) = (len_a, len_b);
        let mut tile = 1u64 << log_tile;
        let mut tiles = total.div_ceil(tile);
        let mut code = encoding.code();
        let mut splits_ptr = splits;
        let mut split_params = [
            &mut a as *mut u64 as *mut c_void,
            &mut len_a as *mut u64 as *mut c_void,
            &mut b as *mut u64 as *mut c_void,
            &mut len_b as *mut u64 as *mut c_void,
            &mut tile as *mut u64 as *mut c_void,
            &mut tiles as *mut u64 as *mut c_void,
            &mut code as *mut u32 as *mut c_void,
            &mut splits_ptr as *mut u64 as *mut c_void,
        ];
        let split_grid = u32::try_from((tiles + 1).div_ceil(u64::from(SEARCH_THREADS)))
            .unwrap_or(u32::MAX)
            .min(side.backend.limits.max_grid_x.max(1));
        // SAFETY: the parameters match `spread_split_K(const K *a, u64 len_a, const K *b,
        // u64 len_b, u64 tile, u64 tiles, u32 encoding, u64 *splits)`; the runs hold
        // `len_a` and `len_b` words, `splits` at least `tiles + 1` entries (the side's
        // length in tiles, plus 2).
        unsafe {
            launch_kernel(
                kernels.split[wide],
                (split_grid, SEARCH_THREADS, 0),
                stream,
                &mut split_params,
            )?;
        }
        let mut merge_params = [
            &mut a as *mut u64 as *mut c_void,
            &mut len_a as *mut u64 as *mut c_void,
            &mut b as *mut u64 as *mut c_void,
            &mut len_b as *mut u64 as *mut c_void,
            &mut dst as *mut u64 as *mut c_void,
            &mut splits_ptr as *mut u64 as *mut c_void,
            &mut code as *mut u32 as *mut c_void,
        ];
        let grid = tiles.min(u64::from(resident)).max(1) as u32;
        // SAFETY: the parameters match `spread_merge_K(const K *a, u64 len_a, const K *b,
        // u64 len_b, K *dst, const u64 *splits, u32 encoding)`; `dst` holds `len_a +
        // len_b` words in the other buffer than the runs; the splits were written by the
        // launch before on this stream; `shared` is the padded tile the kernel was loaded
        // for.
        unsafe {
            launch_kernel(
                kernels.merge[wide],
                (grid, MERGE_THREADS, shared),
                stream,
                &mut merge_params,
            )?;
        }
        at += total;
    }
    Ok(())
}
