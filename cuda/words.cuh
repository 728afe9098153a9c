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

typedef unsigned short u16;

// The register word of a stored key: 16-bit keys sort as 32-bit words in registers and
// shared memory (the padding sentinel, all 32 bits set, stays above every key), wider keys
// as themselves.
template <typename S> struct RegisterWord {
    typedef S type;
};
template <> struct RegisterWord<u16> {
    typedef u32 type;
};

// Raw key to ordered key at the width of the stored key S, held in the register word K:
// mirror of KeyEncoding::encode (the codes are kernels/contract.h's). The ordered word of a
// 16-bit key is again a 16-bit word (the mask), so it survives the stores between passes.
// A branch on the kind, uniform across the launch: the same mapping as one chain of selects
// makes nvcc spill registers in every tile pass.
template <typename S, typename K> __device__ __forceinline__ K encode_as(K raw, u32 encoding) {
    constexpr K sign = K(1) << (sizeof(S) * 8 - 1);
    constexpr K mask = sizeof(S) == sizeof(K) ? ~K(0) : (K(1) << (sizeof(S) * 8)) - 1;
    K ordered = raw;
    switch (encoding & ENCODING_KIND_MASK) {
    case KIND_SIGNED:
        ordered = raw ^ sign;
        break;
    case KIND_FLOAT: // total_cmp order
        ordered = (raw & sign) ? (~raw & mask) : (raw ^ sign);
        break;
    default: // KIND_UNSIGNED
        break;
    }
    return (encoding & ENCODING_DESCENDING) ? (~ordered & mask) : ordered;
}

// Ordered key back to the raw key at the width of S: mirror of KeyEncoding::decode.
template <typename S, typename K> __device__ __forceinline__ K decode_as(K ordered, u32 encoding) {
    constexpr K sign = K(1) << (sizeof(S) * 8 - 1);
    constexpr K mask = sizeof(S) == sizeof(K) ? ~K(0) : (K(1) << (sizeof(S) * 8)) - 1;
    const K y = (encoding & ENCODING_DESCENDING) ? (~ordered & mask) : ordered;
    switch (encoding & ENCODING_KIND_MASK) {
    case KIND_SIGNED:
        return y ^ sign;
    case KIND_FLOAT:
        return (y & sign) ? (y ^ sign) : (~y & mask);
    default:
        return y;
    }
}

// The same at the width of the word itself.
template <typename K> __device__ __forceinline__ K encode_key(K raw, u32 encoding) {
    return encode_as<K, K>(raw, encoding);
}
template <typename K> __device__ __forceinline__ K decode_key(K ordered, u32 encoding) {
    return decode_as<K, K>(ordered, encoding);
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

// Four consecutive stored keys (4 x 16 bits from 8-byte aligned memory, or load4's words)
// into register words.
template <typename S, typename K> __device__ __forceinline__ void load_quad(const S *p, K (&w)[4]) {
    if constexpr (sizeof(S) == 2) {
        const uint2 u = *reinterpret_cast<const uint2 *>(p);
        w[0] = u.x & 0xffffu;
        w[1] = u.x >> 16;
        w[2] = u.y & 0xffffu;
        w[3] = u.y >> 16;
    } else {
        load4(p, w);
    }
}

// Four register words stored as keys of S (16-bit words keep their low halves).
template <typename S, typename K> __device__ __forceinline__ void store_quad(S *p, const K (&w)[4]) {
    if constexpr (sizeof(S) == 2) {
        *reinterpret_cast<uint2 *>(p) = make_uint2((w[0] & 0xffffu) | (w[1] << 16), (w[2] & 0xffffu) | (w[3] << 16));
    } else {
        store4(p, w);
    }
}

// Bytes of a quad of stored keys: whole-tile accesses need this alignment.
template <typename S> __device__ __forceinline__ constexpr unsigned long long quad_bytes() { return 4 * sizeof(S); }
