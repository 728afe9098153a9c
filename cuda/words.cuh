// Words and their moves for the CUDA kernels (cuda/bitonic.cu): the value type of key-only
// sorts, key encoding (kernels/contract.h), shared-memory padding, compare-exchange and
// 16-byte global accesses.

#pragma once

#include "contract.h"

typedef unsigned int u32;
typedef unsigned long long u64;

// Elements per thread and round = 2^LOG_E.
#define LOG_E MAX_LOG_E

// The value type of key-only sorts.
struct NoValue {};

template <typename V> struct HasValues {
    static constexpr bool value = true;
};
template <> struct HasValues<NoValue> {
    static constexpr bool value = false;
};

template <typename K> __device__ __forceinline__ K sign_bit() {
    return K(1) << (sizeof(K) * 8 - 1);
}

// Raw key word to ordered word: mirror of KeyEncoding::encode (the codes are
// kernels/contract.h's). A branch on the kind, uniform across the launch: the same mapping as
// one chain of selects makes nvcc spill registers in every tile pass.
template <typename K> __device__ __forceinline__ K encode_key(K raw, u32 encoding) {
    const K sign = sign_bit<K>();
    K ordered = raw;
    switch (encoding & ENCODING_KIND_MASK) {
    case KIND_SIGNED:
        ordered = raw ^ sign;
        break;
    case KIND_FLOAT: // total_cmp order
        ordered = (raw & sign) ? ~raw : (raw ^ sign);
        break;
    default: // KIND_UNSIGNED
        break;
    }
    return (encoding & ENCODING_DESCENDING) ? ~ordered : ordered;
}

// Ordered word back to the raw key word: mirror of KeyEncoding::decode.
template <typename K> __device__ __forceinline__ K decode_key(K ordered, u32 encoding) {
    const K sign = sign_bit<K>();
    const K y = (encoding & ENCODING_DESCENDING) ? ~ordered : ordered;
    switch (encoding & ENCODING_KIND_MASK) {
    case KIND_SIGNED:
        return y ^ sign;
    case KIND_FLOAT:
        return (y & sign) ? (y ^ sign) : ~y;
    default:
        return y;
    }
}

// Shared-memory slot of tile element x: one padding word after every 32.
__device__ __forceinline__ u32 pad(u32 x) { return PAD(x); }

// Words of one padded shared array of 2^bits elements (the values' array follows the keys').
__device__ __forceinline__ u32 padded_words(u32 bits) { return PADDED_WORDS(bits); }

// Bytes of one of a merge block's two input buffers (kernels/contract.h).
__device__ __forceinline__ u32 merge_buffer_bytes(u32 bits, u32 key_bytes, u32 value_bytes) {
    return MERGE_BUFFER_BYTES(bits, key_bytes, value_bytes);
}

#if __CUDA_ARCH__ >= 800
// Starts an asynchronous copy of one word from global to shared memory (cp.async, sm_80+);
// `cp.async.wait_all` completes it.
template <typename T> __device__ __forceinline__ void copy_async(T *shared, const T *global) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async copies 4 or 8 bytes here");
    const u32 to = (u32)__cvta_generic_to_shared(shared);
    if constexpr (sizeof(T) == 4) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(to), "l"(global) : "memory");
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(to), "l"(global) : "memory");
    }
}
#endif

// Compare-exchange of registers: the smaller key to `a`, swapping only when a > b.
template <typename K, typename V> __device__ __forceinline__ void exchange(K &ka, K &kb, V &va, V &vb) {
    if constexpr (HasValues<V>::value) {
        const bool swap = ka > kb;
        const K k = ka;
        const V v = va;
        ka = swap ? kb : ka;
        kb = swap ? k : kb;
        va = swap ? vb : va;
        vb = swap ? v : vb;
    } else {
        const K lo = min(ka, kb);
        kb = max(ka, kb);
        ka = lo;
    }
}

// Four consecutive words from 16-byte aligned global memory.
template <typename T> __device__ __forceinline__ void load4(const T *p, T (&w)[4]) {
    if constexpr (sizeof(T) == 4) {
        const uint4 u = *reinterpret_cast<const uint4 *>(p);
        w[0] = u.x;
        w[1] = u.y;
        w[2] = u.z;
        w[3] = u.w;
    } else {
        const ulonglong2 lo = reinterpret_cast<const ulonglong2 *>(p)[0];
        const ulonglong2 hi = reinterpret_cast<const ulonglong2 *>(p)[1];
        w[0] = lo.x;
        w[1] = lo.y;
        w[2] = hi.x;
        w[3] = hi.y;
    }
}

template <typename T> __device__ __forceinline__ void store4(T *p, const T (&w)[4]) {
    if constexpr (sizeof(T) == 4) {
        *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
        reinterpret_cast<ulonglong2 *>(p)[0] = make_ulonglong2(w[0], w[1]);
        reinterpret_cast<ulonglong2 *>(p)[1] = make_ulonglong2(w[2], w[3]);
    }
}
