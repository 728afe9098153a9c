// The counting sort of one row of 16-bit keys alone (src/schedule/counting.rs): four launches,
// count -> totals -> starts -> fill. Equal ordered words are equal keys bit for bit, so the
// sorted row is each word's key repeated as often as it occurs.

#pragma once

#include "words.cuh"

#define COUNT_WORDS (1u << COUNT_KEY_BITS)
#define COUNT_E COUNT_KEYS_PER_THREAD
// Threads of a count, totals or fill block (src/cuda/plan/counting.rs: COUNT_THREADS).
#define COUNT_THREADS 512

// The ordered words of keys[first ..) below `end`, at most COUNT_E of them, into w; returns
// how many. One 16-byte load where the eight keys lie whole and aligned.
__device__ __forceinline__ u32 load_ordered16(const u16 *__restrict__ keys, u64 end, u64 first, u32 encoding,
                                              u32 w[COUNT_E]) {
    u32 m = 0;
    if (first + COUNT_E <= end && (reinterpret_cast<size_t>(keys + first) & 15) == 0) {
        const uint4 v = *reinterpret_cast<const uint4 *>(keys + first);
        const u32 halves[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (u32 i = 0; i < 4; ++i) {
            w[2 * i] = halves[i] & 0xffffu;
            w[2 * i + 1] = halves[i] >> 16;
        }
        m = COUNT_E;
    } else {
#pragma unroll
        for (u32 e = 0; e < COUNT_E; ++e) {
            if (first + e < end) {
                w[e] = keys[first + e];
                m = e + 1;
            }
        }
    }
#pragma unroll
    for (u32 e = 0; e < COUNT_E; ++e) {
        w[e] = e < m ? encode_as<u16, u32>(w[e], encoding) : 0u;
    }
    return m;
}

// Block b counts the ordered words of keys[b * keys_per_block ..) (keys_per_block of them, a
// multiple of COUNT_E, fewer in the last block), one window of 2^window_log words per sweep,
// and writes counts[b * 2^16 + word]. A thread adds each run of equal words among its COUNT_E
// keys with one shared-memory atomic.
extern "C" __global__ void __launch_bounds__(COUNT_THREADS)
    count_keys_u16(const u16 *__restrict__ keys, u64 n, u64 keys_per_block, u32 encoding, u32 window_log,
                   u32 *__restrict__ counts) {
    extern __shared__ u32 on_chip[];
    const u32 window = 1u << window_log;
    const u64 begin = (u64)blockIdx.x * keys_per_block;
    const u64 end = min(n, begin + keys_per_block);
    for (u32 sweep = 0; sweep < (COUNT_WORDS >> window_log); ++sweep) {
        for (u32 i = threadIdx.x; i < window; i += blockDim.x) {
            on_chip[i] = 0;
        }
        __syncthreads();
        for (u64 first = begin + (u64)threadIdx.x * COUNT_E; first < end; first += (u64)blockDim.x * COUNT_E) {
            u32 w[COUNT_E];
            const u32 m = load_ordered16(keys, end, first, encoding, w);
            u32 run = 1;
#pragma unroll
            for (u32 e = 0; e < COUNT_E; ++e) {
                if (e < m) {
                    const bool closes = e + 1 == m || (e + 1 < COUNT_E && w[e + 1] != w[e]);
                    if (closes) {
                        if ((w[e] >> window_log) == sweep) {
                            atomicAdd(&on_chip[w[e] & (window - 1)], run);
                        }
                        run = 1;
                    } else {
                        ++run;
                    }
                }
            }
        }
        __syncthreads();
        u32 *out = counts + (u64)blockIdx.x * COUNT_WORDS + (u64)sweep * window;
        for (u32 i = threadIdx.x; i < window; i += blockDim.x) {
            out[i] = on_chip[i];
        }
        __syncthreads();
    }
}

// starts[word] = the sum of counts[b * 2^16 + word] over the blocks b: a thread per word.
extern "C" __global__ void __launch_bounds__(COUNT_THREADS)
    count_totals(const u32 *__restrict__ counts, u64 blocks, u64 *__restrict__ starts) {
    const u32 word = blockIdx.x * blockDim.x + threadIdx.x;
    if (word >= COUNT_WORDS) {
        return;
    }
    u64 total = 0;
    for (u64 b = 0; b < blocks; ++b) {
        total += counts[b * COUNT_WORDS + word];
    }
    starts[word] = total;
}

// The totals in starts[0 .. 2^16) become each word's first position, and starts[2^16] the
// number of keys: one block, each thread scanning 2^16 / COUNT_STARTS_THREADS words.
extern "C" __global__ void __launch_bounds__(COUNT_STARTS_THREADS) count_starts(u64 *__restrict__ starts) {
    __shared__ u64 sums[COUNT_STARTS_THREADS];
    const u32 per = COUNT_WORDS / COUNT_STARTS_THREADS;
    u64 *mine = starts + (u64)threadIdx.x * per;
    u64 sum = 0;
    for (u32 i = 0; i < per; ++i) {
        sum += mine[i];
    }
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (u32 d = 1; d < COUNT_STARTS_THREADS; d <<= 1) {
        const u64 add = threadIdx.x >= d ? sums[threadIdx.x - d] : 0;
        __syncthreads();
        sums[threadIdx.x] += add;
        __syncthreads();
    }
    u64 at = sums[threadIdx.x] - sum;
    for (u32 i = 0; i < per; ++i) {
        const u64 c = mine[i];
        mine[i] = at;
        at += c;
    }
    if (threadIdx.x == COUNT_STARTS_THREADS - 1) {
        starts[COUNT_WORDS] = at;
    }
}

// The last word w >= lo whose start is at or before p (starts[lo] <= p < starts[2^16]):
// the word of the key at position p, empty words before it skipped.
__device__ __forceinline__ u32 word_at(const u64 *__restrict__ starts, u32 lo, u64 p) {
    u32 hi = COUNT_WORDS;
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (starts[mid] <= p) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Writes positions [COUNT_E t, COUNT_E (t + 1)) below n of thread t with the keys of their
// words. One 16-byte store where the eight positions lie whole and aligned.
extern "C" __global__ void __launch_bounds__(COUNT_THREADS)
    fill_keys_u16(u16 *__restrict__ keys, u64 n, const u64 *__restrict__ starts, u32 encoding) {
    const u64 first = ((u64)blockIdx.x * blockDim.x + threadIdx.x) * COUNT_E;
    if (first >= n) {
        return;
    }
    u32 word = word_at(starts, 0, first);
    u64 next = starts[word + 1];
    u32 out[COUNT_E];
#pragma unroll
    for (u32 e = 0; e < COUNT_E; ++e) {
        const u64 p = first + e;
        if (p < n && next <= p) {
            word = word_at(starts, word + 1, p);
            next = starts[word + 1];
        }
        out[e] = decode_as<u16, u32>(word, encoding);
    }
    if (first + COUNT_E <= n && (reinterpret_cast<size_t>(keys + first) & 15) == 0) {
        uint4 v;
        v.x = out[0] | (out[1] << 16);
        v.y = out[2] | (out[3] << 16);
        v.z = out[4] | (out[5] << 16);
        v.w = out[6] | (out[7] << 16);
        *reinterpret_cast<uint4 *>(keys + first) = v;
    } else {
#pragma unroll
        for (u32 e = 0; e < COUNT_E; ++e) {
            if (first + e < n) {
                keys[first + e] = (u16)out[e];
            }
        }
    }
}
