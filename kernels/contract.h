// The contract between the host (src/kernel_contract.rs) and the kernels: the CUDA kernels
// (cuda/*.cu) and the OpenCL kernels (kernels/*.cl) include this header, and the tests of
// src/kernel_contract.rs read it and fail when the Rust side disagrees. Plain C
// preprocessor and C syntax only, so that nvcc and every OpenCL C compiler accept it.

#ifndef BITONIC_CONTRACT_H
#define BITONIC_CONTRACT_H

// The most levels a register round applies (each thread holds 2^MAX_LOG_E elements). The
// CUDA kernels always use it; OpenCL programs are built with LOG_E in 1..MAX_LOG_E.
#define MAX_LOG_E 4

// Pass modes (`mode`).
#define MODE_SORT 0u   // sort whole tiles (stages 1..log_tile)
#define MODE_MERGE 1u  // the half-cleaners inside tiles
#define MODE_GLOBAL 2u // levels whose strides are a tile or more

// Key transforms (`transform` bits): the first pass turns raw keys into ordered words as it
// loads them, the last turns them back as it stores them.
#define ENCODE_ON_LOAD 1u
#define DECODE_ON_STORE 2u

// Key encodings (`encoding`, KeyEncoding::code in src/keys.rs): bits 0-1 the kind, bit 2
// descending.
#define ENCODING_KIND_MASK 3u
#define KIND_UNSIGNED 0u
#define KIND_SIGNED 1u
#define KIND_FLOAT 2u
#define ENCODING_DESCENDING 4u

// The mapping itself (KeyEncoding::encode and decode in src/keys.rs) is written in each
// kernel language as a branch on the kind: encode_key and decode_key in cuda/words.cuh and
// kernels/words.clh.

// On-chip layout: one padding word after every 2^PAD_SHIFT, against bank conflicts.
#define PAD_SHIFT 5
#define PAD(x) ((x) + ((x) >> PAD_SHIFT))
// Words of one padded on-chip array of 2^bits elements, rounded up to a multiple of 4 so
// that an array of 8-byte words after it stays 16-byte aligned.
#define PADDED_WORDS(bits) ((PAD(1u << (bits)) + 3u) & ~3u)

// Warp sorts (cuda/warp_sort.cuh): one row of 4-byte keys sorted in registers by one block
// of at most 2^WARP_SORT_MAX_WARPS_LOG warps, 2^WARP_SORT_LOG keys a warp (32 in each of its
// 32 lanes); a block of more than one warp exchanges through 4 bytes of shared memory a key.
#define WARP_SORT_LOG 10
#define WARP_SORT_MAX_WARPS_LOG 3

// Merge passes (merge path above the tile, src/schedule/merge_path.rs): every work-group
// writes 2^tile_bits consecutive outputs of the stable merge of two sorted runs, each thread
// 2^MERGE_LOG_E of them for 4-byte elements and 2^(MERGE_LOG_E-1) for wider ones.
#define MERGE_LOG_E 4
// Threads of a merge block at most, and the blocks per multiprocessor its kernels are
// compiled for (__launch_bounds__: 48 registers a thread).
#define MERGE_THREADS 256
#define MERGE_BLOCKS_PER_SM 5
// Bytes after a merge buffer that a thread past the end of its parts may read but never
// uses (slot PAD(2^bits) of the keys).
#define MERGE_SLACK_BYTES 16u
// A CUDA merge block's dynamic shared memory: two buffers (the tile being merged and the
// next one arriving), each the padded keys, the padded values and its own slack, so that a
// read past one buffer's keys never meets the copies arriving in the other.
#define MERGE_BUFFER_BYTES(bits, key_bytes, value_bytes) (PADDED_WORDS(bits) * ((key_bytes) + (value_bytes)) + MERGE_SLACK_BYTES)
#define MERGE_SHARED_BYTES(bits, key_bytes, value_bytes) (2u * MERGE_BUFFER_BYTES(bits, key_bytes, value_bytes))
// An OpenCL merge work-group's __local keys (kernels/merge_path.clh): one buffer and the
// slack.
#define MERGE_LOCAL_KEY_BYTES(bits, key_bytes) (PADDED_WORDS(bits) * (key_bytes) + MERGE_SLACK_BYTES)

// Top-k (src/schedule/top_k.rs, kernels/top_k.clh, cuda/top_k.cuh): a work-group selects the
// best K of a tile of at most 2^TOP_K_MAX_LOG_TILE words of 8 bytes in on-chip memory (32 KiB
// with the padding words: every GPU's shared or local memory holds it without an opt-in), so
// K is at most half of that; a CUDA top-k block has at most TOP_K_THREADS threads.
#define TOP_K_MAX_LOG_TILE 12
#define TOP_K_THREADS 256
// Bytes of a row's keys that one block of the CUDA top-k filter reads at a time: 64 a thread
// (four 16-byte vectors), 16 keys of 32 bits or 32 of 16 bits.
#define TOP_K_FILTER_CHUNK_BYTES 16384
// A CUDA top-k tile of at least 2^TOP_K_REGISTER_LOG_TILE words is selected in registers by a
// block of one thread per 32 words (whole warps); OpenCL work-groups select in local memory.
#define TOP_K_REGISTER_LOG_TILE 10
// 32-bit words of shared (local) memory of a top-k radix select: 256 digit counts and the
// digit chosen, with its rank and count. An OpenCL top-k work-group has at most TOP_K_THREADS
// items too: each keeps one count there after the select (kernels/top_k_select.clh).
#define TOP_K_RADIX_WORDS 260
// Keys each work-item of the OpenCL top-k filter takes from a chunk of a row
// (kernels/top_k_filter.clh): a chunk is the work-group's size times as many.
#define TOP_K_FILTER_ITEM_KEYS 8

// The CUDA range scatter (cuda/ranges.cuh, src/cuda/device_ranges.rs): a block of
// RANGE_SCATTER_THREADS threads appends RANGE_SCATTER_KEYS consecutive keys to the regions
// of their ranges, of at most RANGE_MAX_SPLITTERS splitters (the splitters and a count and a
// base per range fit 16 KiB of shared memory).
#define RANGE_SCATTER_THREADS 256
#define RANGE_SCATTER_KEYS 4096
#define RANGE_MAX_SPLITTERS 511

// The counting sort of 16-bit keys alone (src/schedule/counting.rs, cuda/counting.cuh,
// kernels/counting.clh): 2^COUNT_KEY_BITS counters, one per ordered word; a thread of the count
// and fill launches takes COUNT_KEYS_PER_THREAD consecutive keys; the one block of the starts
// launch has COUNT_STARTS_THREADS threads, each scanning 2^COUNT_KEY_BITS / COUNT_STARTS_THREADS
// words.
#define COUNT_KEY_BITS 16
#define COUNT_KEYS_PER_THREAD 8
#define COUNT_STARTS_THREADS 256

// The LSD radix sort of ordered 32- and 64-bit words (src/schedule/radix.rs, cuda/radix.cuh,
// kernels/radix.clh): digits of RADIX_DIGIT_BITS bits, lowest first, RADIX_BINS bins a digit. A
// tile of a digit pass is RADIX_THREADS threads of `keys_per_thread` keys each, at most
// RADIX_MAX_KEYS_PER_THREAD. A tile's word of a bin in the look-back holds a count of keys in
// its low RADIX_COUNT_BITS bits and what the count covers in the two above: nothing yet (0),
// the tile alone (RADIX_FLAG_AGGREGATE) or every tile up to and including it
// (RADIX_FLAG_PREFIX); one 32-bit store publishes both, so no reader sees a flag without
// its count. Counts are below 2^RADIX_COUNT_BITS, so a sort takes at most
// 2^RADIX_COUNT_BITS - 1 keys.
#define RADIX_DIGIT_BITS 8
#define RADIX_BINS 256
#define RADIX_THREADS 256
#define RADIX_MAX_KEYS_PER_THREAD 32
#define RADIX_COUNT_BITS 30
#define RADIX_FLAG_AGGREGATE 1073741824u // 1 << RADIX_COUNT_BITS
#define RADIX_FLAG_PREFIX 2147483648u // 2 << RADIX_COUNT_BITS
// Keys a thread of a CUDA digit pass holds, by key and value width (cuda/radix.cuh compiles
// each pass for its number, the host plans tiles of RADIX_THREADS times as many), each the
// fastest of its width's candidates in bench/scripts/radix_tune.cu: larger tiles mean fewer
// look-back steps, but more registers a thread and so fewer blocks a multiprocessor.
#define RADIX_CUDA_KPT_U32_NONE 32
#define RADIX_CUDA_KPT_U32_U32 24
#define RADIX_CUDA_KPT_U32_U64 24
#define RADIX_CUDA_KPT_U64_NONE 24
#define RADIX_CUDA_KPT_U64_U32 20
#define RADIX_CUDA_KPT_U64_U64 16

#ifdef __CUDACC__
// The parameter block of every CUDA merge pass and its splitter pass (`MergeArgs` in
// src/kernel_contract.rs). The OpenCL merge kernels take the same quantities as separate
// arguments (src/opencl/launch.rs).
struct MergeArgs {
    unsigned long long n;     // elements of one row (the whole array for a plain sort)
    unsigned long long rows;  // rows, one after another, each merged on its own (1 for a plain sort)
    unsigned int log_run;     // the input runs hold 2^log_run elements (the last of a row may be shorter)
    unsigned int tile_bits;   // log2 of the outputs of one block
    unsigned int encoding;    // ENCODING_* bits
    unsigned int transform;   // DECODE_ON_STORE on the last pass
};

// The parameter block of every CUDA pass (`PassArgs` in src/kernel_contract.rs). The OpenCL
// kernels take the same quantities as separate arguments (src/opencl/launch.rs).
struct PassArgs {
    unsigned long long row_len; // elements per row (n for a plain sort)
    unsigned long long rows;    // number of rows (1 for a plain sort)
    unsigned int log_row;       // P = 2^log_row >= row_len: the virtual row length
    unsigned int mode;          // MODE_*
    unsigned int tile_bits;     // log2 of the virtual tile
    unsigned int stage;         // GLOBAL: the merge stage (blocks of 2^stage)
    unsigned int first_level;   // GLOBAL: the first level applied (0 = the flip)
    unsigned int levels;        // GLOBAL: how many levels
    unsigned int log_cols;      // GLOBAL: log2 of the consecutive columns in a tile
    unsigned int encoding;      // ENCODING_* bits
    unsigned int transform;     // ENCODE_ON_LOAD | DECODE_ON_STORE bits
    unsigned int tail_bits;     // GLOBAL: the previous stage's half-cleaners on column bits
                                // tail_bits-1..0 run first
};
// The parameter block of every CUDA radix launch (`RadixArgs` in src/kernel_contract.rs).
struct RadixArgs {
    unsigned long long n;          // keys
    unsigned long long tiles;      // tiles of a digit pass: n / (RADIX_THREADS * keys_per_thread), rounded up
    unsigned int encoding;         // ENCODING_* bits
    unsigned int digits;           // digits of a key: its bits / RADIX_DIGIT_BITS
    unsigned int digit;            // the digit a pass sorts by, 0 the lowest
    unsigned int keys_per_thread;  // keys a thread of a digit pass holds: the pass's RADIX_CUDA_KPT_*
    unsigned int delay;            // tests only: nonzero makes some tiles wait before they publish
};
// The parameter block of every CUDA top-k launch (`TopKArgs` in src/kernel_contract.rs). The
// OpenCL top-k kernel takes the same quantities as separate arguments (src/opencl/top_k.rs).
struct TopKArgs {
    unsigned long long len;   // elements of one row that the launch reads
    unsigned long long rows;  // rows
    unsigned long long tiles; // tiles per row, each writing one run of K
    unsigned int log_tile;    // log2 of a tile's elements
    unsigned int log_k;       // log2 of K
    unsigned int encoding;    // ENCODING_* bits
    unsigned int from_keys;   // nonzero: read raw 32-bit keys and encode them; zero: read words
};
#endif

#endif
