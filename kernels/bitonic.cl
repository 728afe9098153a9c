// Bitonic sorting network kernels for the OpenCL backend (src/opencl.rs).
//
// These kernels execute exactly the comparator network of src/schedule.rs; read its module
// documentation first. The host builds one program per word variant with -D options:
//   KEY_T      the key word: uint or ulong
//   HAS_VALUES 1 when values move with the keys (absent or 0: keys only)
//   VAL_T      the value word when HAS_VALUES: uint or ulong
//
// Kernels:
//   bitonic_local  - Pass::LocalSort and Pass::LocalMerge: one work-group per tile.
//   bitonic_global - Pass::GlobalMerge: each work item holds 2^levels elements in registers.
//
// Padding (global index >= n) is never read nor written: it is the all-ones word, which a
// strict compare-exchange never moves, so skipping comparators with hi >= n (as the schedule
// does) and comparing against all-ones give the same result.

#ifndef KEY_T
#error "KEY_T must be defined (uint or ulong)"
#endif

#if defined(HAS_VALUES) && HAS_VALUES
#define WITH_VALUES 1
#ifndef VAL_T
#error "VAL_T must be defined when HAS_VALUES is set"
#endif
#define VALUES_ARG , __global VAL_T *restrict values
#define LOCAL_VALUES_ARG , __local VAL_T *restrict lvals
#else
#define WITH_VALUES 0
#define VALUES_ARG
#define LOCAL_VALUES_ARG
#endif

// Transform flags (the host passes them in `transform`).
#define ENCODE_ON_LOAD 1u
#define DECODE_ON_STORE 2u

#define KEY_SIGN ((KEY_T)1 << (sizeof(KEY_T) * 8 - 1))
#define KEY_SENTINEL (~(KEY_T)0)

// Raw key word to ordered word: mirror of KeyEncoding::encode in src/keys.rs.
// encoding bits 0-1: 0 unsigned, 1 signed, 2 float; bit 2: descending.
inline KEY_T encode_key(KEY_T raw, uint encoding) {
    const uint kind = encoding & 3u;
    KEY_T ordered = raw;
    if (kind == 1u) {
        ordered = raw ^ KEY_SIGN;
    } else if (kind == 2u) {
        ordered = (raw & KEY_SIGN) ? ~raw : (raw ^ KEY_SIGN);
    }
    return (encoding & 4u) ? ~ordered : ordered;
}

// Ordered word back to the raw key word: mirror of KeyEncoding::decode.
inline KEY_T decode_key(KEY_T ordered, uint encoding) {
    const uint kind = encoding & 3u;
    const KEY_T y = (encoding & 4u) ? ~ordered : ordered;
    if (kind == 1u) {
        return y ^ KEY_SIGN;
    } else if (kind == 2u) {
        return (y & KEY_SIGN) ? (y ^ KEY_SIGN) : ~y;
    }
    return y;
}

// One tile-local pass (LocalSort when merge_only == 0, LocalMerge when merge_only == 1) over
// tiles of 2^log_tile elements; the work-group loops over tiles by the number of groups.
// lkeys (and lvals) are __local buffers of 2^log_tile words sized by the host.
__kernel void bitonic_local(__global KEY_T *restrict keys VALUES_ARG,
                            const ulong n,
                            const uint log_tile,
                            const uint merge_only,
                            const uint encoding,
                            const uint transform,
                            __local KEY_T *restrict lkeys LOCAL_VALUES_ARG) {
    const uint tile = 1u << log_tile;
    const uint comparators = tile >> 1;
    const uint lid = (uint)get_local_id(0);
    const uint lsize = (uint)get_local_size(0);
    const ulong tiles = (n + (ulong)tile - 1) >> log_tile;
    const uint first_stage = merge_only ? log_tile : 1u;

    for (ulong t = get_group_id(0); t < tiles; t += get_num_groups(0)) {
        const ulong base = t << log_tile;

        // Load; padding becomes the all-ones sentinel (its value slot stays unset: it is
        // never moved nor stored).
        for (uint i = lid; i < tile; i += lsize) {
            const ulong g = base + i;
            if (g < n) {
                KEY_T k = keys[g];
                if (transform & ENCODE_ON_LOAD) {
                    k = encode_key(k, encoding);
                }
                lkeys[i] = k;
#if WITH_VALUES
                lvals[i] = values[g];
#endif
            } else {
                lkeys[i] = KEY_SENTINEL;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        for (uint stage = first_stage; stage <= log_tile; ++stage) {
            for (uint level = 0; level < stage; ++level) {
                const uint bit = stage - 1u - level;
                // A local merge runs only half-cleaners: its stage's flip was global.
                const bool flip = (merge_only == 0u) && (level == 0u);
                const uint low_mask = (1u << bit) - 1u;
                for (uint c = lid; c < comparators; c += lsize) {
                    const uint lo = ((c >> bit) << (bit + 1u)) | (c & low_mask);
                    const uint hi = flip ? (lo ^ ((2u << bit) - 1u)) : (lo | (1u << bit));
                    const KEY_T a = lkeys[lo];
                    const KEY_T b = lkeys[hi];
                    if (a > b) {
                        lkeys[lo] = b;
                        lkeys[hi] = a;
#if WITH_VALUES
                        const VAL_T va = lvals[lo];
                        lvals[lo] = lvals[hi];
                        lvals[hi] = va;
#endif
                    }
                }
                barrier(CLK_LOCAL_MEM_FENCE);
            }
        }

        for (uint i = lid; i < tile; i += lsize) {
            const ulong g = base + i;
            if (g < n) {
                KEY_T k = lkeys[i];
                if (transform & DECODE_ON_STORE) {
                    k = decode_key(k, encoding);
                }
                keys[g] = k;
#if WITH_VALUES
                values[g] = lvals[i];
#endif
            }
        }
        // The next tile's load must not overwrite words another item still stores.
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// Compare-exchange of registers lo < hi (by index): the smaller key goes to lo.
#if WITH_VALUES
#define REG_CMPX(lo, hi)                                                                       \
    do {                                                                                       \
        if (k[lo] > k[hi]) {                                                                   \
            const KEY_T tk = k[lo];                                                            \
            k[lo] = k[hi];                                                                     \
            k[hi] = tk;                                                                        \
            const VAL_T tv = v[lo];                                                            \
            v[lo] = v[hi];                                                                     \
            v[hi] = tv;                                                                        \
        }                                                                                      \
    } while (0)
#else
#define REG_CMPX(lo, hi)                                                                       \
    do {                                                                                       \
        if (k[lo] > k[hi]) {                                                                   \
            const KEY_T tk = k[lo];                                                            \
            k[lo] = k[hi];                                                                     \
            k[hi] = tk;                                                                        \
        }                                                                                      \
    } while (0)
#endif

// One register group of a global pass with LEVELS a compile-time constant (1..4), so that
// the register loops unroll. Mirrors schedule::global_index and schedule::register_network.
#define GLOBAL_GROUP_FN(LEVELS)                                                                \
    inline void global_group_##LEVELS(__global KEY_T *restrict keys VALUES_ARG,               \
                                      const ulong n, const ulong group, const uint stage,      \
                                      const uint first_level, const uint encoding,             \
                                      const uint transform) {                                  \
        const uint size = 1u << LEVELS;                                                        \
        const uint upper = size >> 1;                                                          \
        const uint hi_bit = stage - 1u - first_level;                                          \
        const uint lo_bit = hi_bit + 1u - LEVELS;                                              \
        const ulong low_mask = ((ulong)1 << lo_bit) - 1ul;                                     \
        const ulong block = (group >> lo_bit) << (hi_bit + 1u);                                \
        const ulong r = group & low_mask;                                                      \
        const bool flip = first_level == 0u;                                                   \
        ulong idx[1 << LEVELS];                                                                \
        KEY_T k[1 << LEVELS];                                                                  \
        VALUE_REGS(LEVELS)                                                                     \
        for (uint reg = 0; reg < size; ++reg) {                                                \
            if (flip && reg >= upper) {                                                        \
                idx[reg] = block + ((ulong)1 << hi_bit) + ((ulong)(reg - upper) << lo_bit) +   \
                           (low_mask - r);                                                     \
            } else {                                                                           \
                idx[reg] = block + ((ulong)reg << lo_bit) + r;                                 \
            }                                                                                  \
        }                                                                                      \
        if (idx[0] >= n) {                                                                     \
            return;                                                                            \
        }                                                                                      \
        for (uint reg = 0; reg < size; ++reg) {                                                \
            const ulong g = idx[reg];                                                          \
            if (g < n) {                                                                       \
                KEY_T key = keys[g];                                                           \
                if (transform & ENCODE_ON_LOAD) {                                              \
                    key = encode_key(key, encoding);                                           \
                }                                                                              \
                k[reg] = key;                                                                  \
                LOAD_VALUE(reg, g);                                                            \
            } else {                                                                           \
                k[reg] = KEY_SENTINEL;                                                         \
            }                                                                                  \
        }                                                                                      \
        for (uint s = 0; s < LEVELS; ++s) {                                                    \
            const uint d = size >> (s + 1u);                                                   \
            for (uint a = 0; a < size; ++a) {                                                  \
                if (a & d) {                                                                   \
                    continue;                                                                  \
                }                                                                              \
                const uint b = (flip && s == 0u) ? (size - 1u - a) : (a + d);                  \
                REG_CMPX(a, b);                                                                \
            }                                                                                  \
        }                                                                                      \
        for (uint reg = 0; reg < size; ++reg) {                                                \
            const ulong g = idx[reg];                                                          \
            if (g < n) {                                                                       \
                KEY_T key = k[reg];                                                            \
                if (transform & DECODE_ON_STORE) {                                             \
                    key = decode_key(key, encoding);                                           \
                }                                                                              \
                keys[g] = key;                                                                 \
                STORE_VALUE(reg, g);                                                           \
            }                                                                                  \
        }                                                                                      \
    }

#if WITH_VALUES
#define VALUE_REGS(LEVELS) VAL_T v[1 << LEVELS];
#define LOAD_VALUE(reg, g) v[reg] = values[g]
#define STORE_VALUE(reg, g) values[g] = v[reg]
#define PASS_VALUES , values
#else
#define VALUE_REGS(LEVELS)
#define LOAD_VALUE(reg, g) (void)0
#define STORE_VALUE(reg, g) (void)0
#define PASS_VALUES
#endif

GLOBAL_GROUP_FN(1)
GLOBAL_GROUP_FN(2)
GLOBAL_GROUP_FN(3)
GLOBAL_GROUP_FN(4)

// Levels first_level .. first_level + levels of stage `stage` (Pass::GlobalMerge) over the
// groups 0 .. groups (= 2^ceil(log2 n) >> levels); work items loop by the global size.
__kernel void bitonic_global(__global KEY_T *restrict keys VALUES_ARG,
                             const ulong n,
                             const ulong groups,
                             const uint stage,
                             const uint first_level,
                             const uint levels,
                             const uint encoding,
                             const uint transform) {
    const ulong step = get_global_size(0);
    for (ulong group = get_global_id(0); group < groups; group += step) {
        switch (levels) {
        case 1:
            global_group_1(keys PASS_VALUES, n, group, stage, first_level, encoding, transform);
            break;
        case 2:
            global_group_2(keys PASS_VALUES, n, group, stage, first_level, encoding, transform);
            break;
        case 3:
            global_group_3(keys PASS_VALUES, n, group, stage, first_level, encoding, transform);
            break;
        default:
            global_group_4(keys PASS_VALUES, n, group, stage, first_level, encoding, transform);
            break;
        }
    }
}
