// Tunes the CUDA radix sort's digit pass (cuda/radix.cuh) beside CUB's radix sort, in one
// process: each variant of keys a thread (KPT) and blocks a multiprocessor (MIN_BLOCKS) sorts
// the same keys as cub::DeviceRadixSort, median of 15 runs after 3 warm-ups, and its keys
// (and values: both sorts are stable) must equal CUB's. Built and run on the GPU machine by
// bench/scripts/radix-tune.sh; no Rust build is needed, so a kernel change is timed in a
// minute.
//
// The launches mirror CudaBackend::launch_radix (src/cuda/radix.rs) and the state's layout
// RadixPlan (src/schedule/radix.rs): the header and first look-back region cleared, the
// histogram, the starts, a pass per digit, the copy back. Keep them in step.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include <cub/device/device_radix_sort.cuh>

#include "radix.cuh"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t status_ = (call);                                                              \
        if (status_ != cudaSuccess) {                                                              \
            printf("%s at %s:%d\n", cudaGetErrorString(status_), __FILE__, __LINE__);             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

template <typename K, typename V, u32 KPT, u32 MIN_BLOCKS>
__global__ void __launch_bounds__(RADIX_THREADS, MIN_BLOCKS)
    tune_pass(K *keys, V *values, K *scratch_keys, V *scratch_values, u32 *state, RadixArgs a) {
    radix_pass<K, V, KPT>(keys, values, scratch_keys, scratch_values, state, a);
}

template <typename K, typename V>
__global__ void __launch_bounds__(RADIX_THREADS)
    tune_copy_back(K *keys, V *values, const K *scratch_keys, const V *scratch_values, const u32 *state, RadixArgs a) {
    radix_copy_back<K, V>(keys, values, scratch_keys, scratch_values, state, a);
}

// Keys of a pattern: 0 random, 1 ascending, 2 sixteen distinct, 3 descending, 4 random below
// 2^32 (for 64-bit keys: four digits skipped).
template <typename K> __global__ void fill_keys(K *k, u64 n, int pattern) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 x = (i + 1) * 0x9E3779B97F4A7C15ull;
        x ^= x >> 31;
        x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 29;
        const u64 keys[5] = {x, i, x & 15, n - i, x & 0xffffffffull};
        k[i] = (K)keys[pattern];
    }
}
template <typename V> __global__ void fill_positions(V *v, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        v[i] = (V)i;
    }
}

template <typename T> T *device_array(u64 n) {
    T *p = nullptr;
    CHECK(cudaMalloc(&p, std::max<u64>(n, 1) * sizeof(T)));
    return p;
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static int multiprocessors = 0;

// Our launches of one sort of `n` keys in place.
template <typename K, typename V, u32 KPT, u32 MIN_BLOCKS>
void our_sort(K *keys, V *values, K *scratch_keys, V *scratch_values, u32 *state, u64 n, u32 encoding = 0) {
    constexpr u32 DIGITS = sizeof(K);
    const u64 tile = (u64)RADIX_THREADS * KPT;
    const u64 tiles = std::max<u64>(1, (n + tile - 1) / tile);
    const u64 header = ((u64)DIGITS * RADIX_BINS + 2 * DIGITS + 3) & ~3ull;
    RadixArgs a{n, tiles, encoding, DIGITS, 0, KPT, 0};
    CHECK(cudaMemsetAsync(state, 0, (header + tiles * RADIX_BINS) * 4));
    const u32 blocks = (u32)std::min<u64>(std::max<u64>(1, n / (RADIX_THREADS * 8)), (u64)multiprocessors * 4);
    if constexpr (sizeof(K) == 4) {
        radix_histogram_u32<<<blocks, RADIX_THREADS>>>(keys, state, a);
    } else {
        radix_histogram_u64<<<blocks, RADIX_THREADS>>>(keys, state, a);
    }
    radix_starts<<<DIGITS, RADIX_THREADS>>>(state, a);
    // Keys, then values, take the tile's shared memory (RadixLaunches::pass_shared_bytes).
    constexpr size_t value_bytes = HasValues<V>::value ? sizeof(V) : 0;
    const size_t shared = tile * std::max(sizeof(K), value_bytes);
    CHECK(cudaFuncSetAttribute(tune_pass<K, V, KPT, MIN_BLOCKS>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    for (u32 d = 0; d < DIGITS; ++d) {
        a.digit = d;
        tune_pass<K, V, KPT, MIN_BLOCKS><<<(u32)tiles, RADIX_THREADS, shared>>>(keys, values, scratch_keys, scratch_values, state, a);
    }
    tune_copy_back<K, V><<<blocks, RADIX_THREADS>>>(keys, values, scratch_keys, scratch_values, state, a);
}

// Times one variant against CUB on `n` keys of `pattern` (with values where V has them) and
// checks it; prints one line.
template <typename K, typename V, u32 KPT, u32 MIN_BLOCKS> void run(u64 n, int pattern) {
    constexpr bool PAIRS = HasValues<V>::value;
    using W = typename std::conditional<PAIRS, V, u32>::type;
    K *in = device_array<K>(n), *work = device_array<K>(n), *scratch = device_array<K>(n), *cub_out = device_array<K>(n);
    W *values = device_array<W>(n), *work_values = device_array<W>(n), *scratch_values = device_array<W>(n),
      *cub_values = device_array<W>(n);
    fill_keys<<<1024, 256>>>(in, n, pattern);
    fill_positions<<<1024, 256>>>(values, n);
    const u64 tile = (u64)RADIX_THREADS * KPT;
    u32 *state = device_array<u32>(16 * RADIX_BINS + 2 * ((n + tile - 1) / tile + 1) * RADIX_BINS);
    size_t temp_bytes = 0;
    void *temp = nullptr;
    auto cub_sort = [&] {
        if constexpr (PAIRS) {
            CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, in, cub_out, values, cub_values, (int)n));
        } else {
            CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, in, cub_out, (int)n));
        }
    };
    cub_sort();
    CHECK(cudaMalloc(&temp, temp_bytes));
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<float> ours, cub;
    for (int r = 0; r < 18; ++r) {
        CHECK(cudaMemcpy(work, in, n * sizeof(K), cudaMemcpyDeviceToDevice));
        CHECK(cudaMemcpy(work_values, values, n * sizeof(W), cudaMemcpyDeviceToDevice));
        cudaEventRecord(start);
        our_sort<K, V, KPT, MIN_BLOCKS>(work, (V *)work_values, scratch, (V *)scratch_values, state, n);
        cudaEventRecord(stop);
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        if (r >= 3) ours.push_back(ms);
        cudaEventRecord(start);
        cub_sort();
        cudaEventRecord(stop);
        CHECK(cudaEventSynchronize(stop));
        cudaEventElapsedTime(&ms, start, stop);
        if (r >= 3) cub.push_back(ms);
    }
    std::vector<K> a(n), b(n);
    CHECK(cudaMemcpy(a.data(), work, n * sizeof(K), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b.data(), cub_out, n * sizeof(K), cudaMemcpyDeviceToHost));
    bool same = a == b;
    if (PAIRS) {
        std::vector<W> c(n), d(n);
        CHECK(cudaMemcpy(c.data(), work_values, n * sizeof(W), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(d.data(), cub_values, n * sizeof(W), cudaMemcpyDeviceToHost));
        same = same && c == d;
    }
    const float o = median(ours), c = median(cub);
    printf("%2zu-byte keys, %zu-byte values, kpt %2u, min blocks %u, n %11llu, pattern %d: ours %8.3f ms, CUB %8.3f ms, "
           "ratio %.3f%s\n",
           sizeof(K), PAIRS ? sizeof(W) : 0, KPT, MIN_BLOCKS, (unsigned long long)n, pattern, o, c, o / c,
           same ? "" : "  MISMATCH");
    fflush(stdout);
    for (void *p : {(void *)in, (void *)work, (void *)scratch, (void *)cub_out, (void *)values, (void *)work_values,
                    (void *)scratch_values, (void *)cub_values, (void *)state, temp}) {
        cudaFree(p);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

// The ordered bits of a raw key under `encoding` (encode_key, for the host's check).
template <typename K> K host_ordered(K raw, u32 encoding) {
    const K top = K(1) << (sizeof(K) * 8 - 1);
    const u32 kind = encoding & ENCODING_KIND_MASK;
    K w = raw;
    if (kind == KIND_SIGNED) w ^= top;
    if (kind == KIND_FLOAT) w = (raw & top) ? ~raw : raw ^ top;
    return (encoding & ENCODING_DESCENDING) ? ~w : w;
}

// Keys alone of random bits (floats among them include NaNs of both signs and both zeros'
// neighbours) under each encoding, against the same bits sorted as unsigned: a key's
// encoding costs a few logic operations, so every ratio should be near 1. Each result is
// checked to be in order under its encoding.
template <typename K, u32 KPT, u32 MIN_BLOCKS> void run_encodings(u64 n) {
    K *in = device_array<K>(n), *work = device_array<K>(n), *scratch = device_array<K>(n);
    const u64 tile = (u64)RADIX_THREADS * KPT;
    u32 *state = device_array<u32>(16 * RADIX_BINS + 2 * ((n + tile - 1) / tile + 1) * RADIX_BINS);
    fill_keys<<<1024, 256>>>(in, n, 0);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    float unsigned_ms = 0;
    const u32 encodings[5] = {0, ENCODING_DESCENDING, KIND_SIGNED, KIND_FLOAT, KIND_FLOAT | ENCODING_DESCENDING};
    const char *names[5] = {"unsigned", "unsigned descending", "signed", "float", "float descending"};
    for (int e = 0; e < 5; ++e) {
        std::vector<float> ms;
        for (int r = 0; r < 18; ++r) {
            CHECK(cudaMemcpy(work, in, n * sizeof(K), cudaMemcpyDeviceToDevice));
            cudaEventRecord(start);
            our_sort<K, NoValue, KPT, MIN_BLOCKS>(work, nullptr, scratch, nullptr, state, n, encodings[e]);
            cudaEventRecord(stop);
            CHECK(cudaEventSynchronize(stop));
            float t = 0;
            cudaEventElapsedTime(&t, start, stop);
            if (r >= 3) ms.push_back(t);
        }
        std::vector<K> got(n);
        CHECK(cudaMemcpy(got.data(), work, n * sizeof(K), cudaMemcpyDeviceToHost));
        bool sorted = true;
        for (u64 i = 1; i < n && sorted; ++i) {
            sorted = host_ordered(got[i - 1], encodings[e]) <= host_ordered(got[i], encodings[e]);
        }
        const float m = median(ms);
        if (e == 0) unsigned_ms = m;
        printf("%2zu-byte keys, kpt %2u, n %11llu, %-19s: ours %8.3f ms, / unsigned %.3f%s\n", sizeof(K), KPT,
               (unsigned long long)n, names[e], m, m / unsigned_ms, sorted ? "" : "  NOT SORTED");
        fflush(stdout);
    }
    for (void *p : {(void *)in, (void *)work, (void *)scratch, (void *)state}) {
        cudaFree(p);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

// Every shipped variant (kernels/contract.h's RADIX_CUDA_KPT_* and radix.cuh's minimum
// blocks) at the sizes given as log2 arguments (default 24 and 28), random keys, then the
// patterns at the largest size. With RADIX_TUNE_EXPLORE set, a few other variants of each
// width follow the shipped one. Add variants here to try them.
int main(int argc, char **argv) {
    CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, 0));
    const bool explore = getenv("RADIX_TUNE_EXPLORE") != nullptr;
    std::vector<int> logs;
    for (int i = 1; i < argc; ++i) logs.push_back(atoi(argv[i]));
    if (logs.empty()) logs = {24, 28};
    for (int log : logs) {
        const u64 n = 1ull << log;
        run<u32, NoValue, RADIX_CUDA_KPT_U32_NONE, 4>(n, 0);
        run<u32, u32, RADIX_CUDA_KPT_U32_U32, 4>(n, 0);
        if (explore) {
            run<u32, u32, 32, 3>(n, 0);
            run<u32, u32, 20, 4>(n, 0);
        }
        run<u32, u64, RADIX_CUDA_KPT_U32_U64, 3>(n, 0);
        if (explore) {
            run<u32, u64, 20, 3>(n, 0);
        }
        run<u64, NoValue, RADIX_CUDA_KPT_U64_NONE, 3>(n / 4, 0);
        if (explore) {
            run<u64, NoValue, 32, 2>(n / 4, 0);
        }
        run<u64, u32, RADIX_CUDA_KPT_U64_U32, 3>(n / 4, 0);
        if (explore) {
            run<u64, u32, 16, 4>(n / 4, 0);
        }
        run<u64, u64, RADIX_CUDA_KPT_U64_U64, 3>(n / 4, 0);
    }
    const u64 n = 1ull << logs.back();
    for (int pattern = 1; pattern < 5; ++pattern) {
        run<u32, NoValue, RADIX_CUDA_KPT_U32_NONE, 4>(n, pattern);
    }
    run<u32, u32, RADIX_CUDA_KPT_U32_U32, 4>(n, 1);
    run<u32, u32, RADIX_CUDA_KPT_U32_U32, 4>(n, 3);
    run<u64, NoValue, RADIX_CUDA_KPT_U64_NONE, 3>(n / 4, 4);
    run_encodings<u32, RADIX_CUDA_KPT_U32_NONE, 4>(n);
    run_encodings<u64, RADIX_CUDA_KPT_U64_NONE, 3>(n / 4);
    return 0;
}
