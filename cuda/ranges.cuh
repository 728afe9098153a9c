// The range scatter of host slices sorted in ranges in device memory (src/cuda/device_ranges.rs):
// each chunk of keys that arrives from the host is appended to the regions of its ranges, the
// ranges of `crate::partition::Splitters` (range 2i: strictly between splitters i-1 and i;
// range 2i+1: equal to splitter i). The keys stay as the caller wrote them: the range is
// found from their ordered words (`encode_key`), so each region can then be sorted like any
// device-resident slice.

#pragma once

#include "words.cuh"

// One block scatters RANGE_SCATTER_KEYS consecutive keys with RANGE_SCATTER_THREADS threads;
// at most RANGE_MAX_SPLITTERS splitters (2 * RANGE_MAX_SPLITTERS + 1 ranges).
#define RANGE_SCATTER_E (RANGE_SCATTER_KEYS / RANGE_SCATTER_THREADS)
#define RANGE_MAX_RANGES (2u * RANGE_MAX_SPLITTERS + 1u)

// Appends keys[0 .. n) to their ranges' regions: region r starts at regions + offsets[r]
// and holds capacities[r] keys, of which fills[r] are taken. A block counts its keys per
// range in shared memory, takes room for them with one atomic per range, and writes each
// key at its place in that room. A range whose room would pass its capacity gets nothing
// written, but its fill still grows by the block's count: the host sees fills[r] >
// capacities[r] and knows the regions are unusable. The order of keys inside a region is
// not defined (the region is sorted afterwards).
template <typename K>
__device__ __forceinline__ void range_scatter(const K *__restrict__ keys, u64 n, const u64 *__restrict__ splitters,
                                              u32 m, u32 encoding, const u64 *__restrict__ offsets,
                                              const u64 *__restrict__ capacities, u64 *__restrict__ fills,
                                              K *__restrict__ regions) {
    __shared__ u64 split[RANGE_MAX_SPLITTERS];
    __shared__ u32 count[RANGE_MAX_RANGES];
    __shared__ u64 base[RANGE_MAX_RANGES];
    const u32 ranges = 2u * m + 1u;
    for (u32 i = threadIdx.x; i < m; i += blockDim.x) {
        split[i] = splitters[i];
    }
    for (u32 r = threadIdx.x; r < ranges; r += blockDim.x) {
        count[r] = 0;
    }
    __syncthreads();
    const u64 first = (u64)blockIdx.x * RANGE_SCATTER_KEYS;
    K key[RANGE_SCATTER_E];
    u32 range[RANGE_SCATTER_E];
    u32 rank[RANGE_SCATTER_E];
#pragma unroll
    for (u32 e = 0; e < RANGE_SCATTER_E; ++e) {
        const u64 i = first + (u64)e * blockDim.x + threadIdx.x;
        range[e] = ranges; // no key
        if (i < n) {
            key[e] = keys[i];
            const u64 bits = (u64)encode_key<K>(key[e], encoding);
            u32 lo = 0;
            u32 hi = m;
            while (lo < hi) {
                const u32 mid = (lo + hi) >> 1;
                if (split[mid] < bits) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            range[e] = 2u * lo + ((lo < m && split[lo] == bits) ? 1u : 0u);
            rank[e] = atomicAdd(&count[range[e]], 1u);
        }
    }
    __syncthreads();
    for (u32 r = threadIdx.x; r < ranges; r += blockDim.x) {
        const u32 c = count[r];
        u64 at = ~0ull;
        if (c > 0) {
            const u64 taken = atomicAdd(&fills[r], (u64)c);
            if (taken + c <= capacities[r]) {
                at = offsets[r] + taken;
            }
        }
        base[r] = at;
    }
    __syncthreads();
#pragma unroll
    for (u32 e = 0; e < RANGE_SCATTER_E; ++e) {
        if (range[e] < ranges) {
            const u64 at = base[range[e]];
            if (at != ~0ull) {
                regions[at + rank[e]] = key[e];
            }
        }
    }
}

#define RANGE_KERNELS(KNAME, K)                                                                   \
    extern "C" __global__ void __launch_bounds__(RANGE_SCATTER_THREADS)                          \
        range_scatter_##KNAME(const K *keys, u64 n, const u64 *splitters, u32 m, u32 encoding,   \
                              const u64 *offsets, const u64 *capacities, u64 *fills, K *regions) { \
        range_scatter<K>(keys, n, splitters, m, encoding, offsets, capacities, fills, regions);  \
    }

RANGE_KERNELS(u32, u32)
RANGE_KERNELS(u64, u64)
