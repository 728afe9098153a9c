// CUB peers for `bitonic bench --compare`: CUB's radix sort, merge sort and segmented sort,
// timed with CUDA events on device-resident data, so that the comparison with our kernels
// is made in the same process on the same GPU.
//
// This file is NOT part of the PTX that the library embeds: build.rs compiles it with nvcc
// to a host object (for the GPU's real architecture, sm_90 by default) that only the
// `bitonic` binary links, together with the static CUDA runtime. It uses the runtime API,
// which shares the device's primary context with the library's driver-API backend.
//
// Every function returns a cudaError_t code (0 = success); the Rust side turns a nonzero
// code into a message with bitonic_peer_cub_error_string.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/version.cuh>
#include <cuda_runtime.h>

namespace {

// Which CUB algorithm to time; the values are part of the C interface.
enum Algo : int { kRadix = 0, kMerge = 1, kSegmented = 2 };

// Returns from the enclosing function with the code of a failed runtime call.
#define PEER_CHECK(call)                                                                       \
    do {                                                                                       \
        cudaError_t peer_status_ = (call);                                                     \
        if (peer_status_ != cudaSuccess) return peer_status_;                                  \
    } while (0)

// Ascending order for cub::DeviceMergeSort (which takes a comparator, not bit ranges).
template <typename T>
struct Less {
    __host__ __device__ bool operator()(const T& a, const T& b) const { return a < b; }
};

// Device memory freed on every return path.
struct DeviceBuffer {
    void* ptr = nullptr;
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (ptr != nullptr) cudaFree(ptr);
    }
    cudaError_t alloc(size_t bytes) { return cudaMalloc(&ptr, bytes == 0 ? 1 : bytes); }
    template <typename T>
    T* as() const {
        return static_cast<T*>(ptr);
    }
};

// A stream and the two events that bracket each timed sort, destroyed on every return path.
struct Timing {
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    Timing() = default;
    Timing(const Timing&) = delete;
    Timing& operator=(const Timing&) = delete;
    ~Timing() {
        if (start != nullptr) cudaEventDestroy(start);
        if (stop != nullptr) cudaEventDestroy(stop);
        if (stream != nullptr) cudaStreamDestroy(stream);
    }
    cudaError_t create() {
        PEER_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        PEER_CHECK(cudaEventCreate(&start));
        return cudaEventCreate(&stop);
    }
};

// Holds the stream while the timed sort is queued behind it, as bench/src/device_timing/cuda.rs
// does for our sorts with the same kernel (nvbench's blocking-kernel method).
#include "hold.cu"

// The mapped flag of hold_stream (used when the caller asks for holding, as
// `bitonic bench --compare` does unless given --no-hold). Released, waited for and freed on every return path.
struct HeldStream {
    volatile uint32_t* host = nullptr;
    uint32_t* device = nullptr;
    cudaStream_t stream = nullptr;
    HeldStream() = default;
    HeldStream(const HeldStream&) = delete;
    HeldStream& operator=(const HeldStream&) = delete;
    ~HeldStream() {
        if (host != nullptr) {
            *host = 1u;
            cudaStreamSynchronize(stream);
            cudaFreeHost(const_cast<uint32_t*>(host));
        }
    }
    cudaError_t create(cudaStream_t s) {
        stream = s;
        void* p = nullptr;
        PEER_CHECK(cudaHostAlloc(&p, sizeof(uint32_t), cudaHostAllocMapped));
        host = static_cast<volatile uint32_t*>(p);
        *host = 1u;
        return cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), p, 0);
    }
    cudaError_t hold() {
        if (host == nullptr) return cudaSuccess;
        *host = 0u;
        hold_stream<<<1, 1, 0, stream>>>(device, 1000000000ull);
        return cudaGetLastError();
    }
    void release() {
        if (host != nullptr) *host = 1u;
    }
    bool timed_out() const { return host != nullptr && *host == 2u; }
};

// Everything one timing call needs, on the device.
template <typename K>
struct Problem {
    uint32_t n = 0;
    uint32_t segment_len = 0;  // kSegmented only
    uint32_t segments = 0;     // kSegmented only
    bool with_values = false;
    DeviceBuffer keys_in;      // pristine input, never written after the upload
    DeviceBuffer keys_out;     // the sorted result (and the work buffer of the merge sort)
    DeviceBuffer values_in;
    DeviceBuffer values_out;
    DeviceBuffer offsets;      // segments + 1 row starts, kSegmented only
    DeviceBuffer temp;
    size_t temp_bytes = 0;
};

// One CUB call: with temp == nullptr it only computes p.temp_bytes, as CUB's two-phase
// interface does; otherwise it sorts on p's buffers in `stream`.
template <typename K>
cudaError_t cub_sort(int algo, Problem<K>& p, void* temp, cudaStream_t stream) {
    const int bits = static_cast<int>(sizeof(K) * 8);
    K* keys_in = p.keys_in.template as<K>();
    K* keys_out = p.keys_out.template as<K>();
    uint32_t* values_in = p.values_in.template as<uint32_t>();
    uint32_t* values_out = p.values_out.template as<uint32_t>();
    switch (algo) {
        case kRadix:
            if (p.with_values) {
                return cub::DeviceRadixSort::SortPairs(temp, p.temp_bytes, keys_in, keys_out,
                                                       values_in, values_out, p.n, 0, bits,
                                                       stream);
            }
            return cub::DeviceRadixSort::SortKeys(temp, p.temp_bytes, keys_in, keys_out, p.n,
                                                  0, bits, stream);
        case kMerge:
            // In place on keys_out (and values_out), which the caller refills before each run.
            if (p.with_values) {
                return cub::DeviceMergeSort::SortPairs(temp, p.temp_bytes, keys_out, values_out,
                                                       p.n, Less<K>(), stream);
            }
            return cub::DeviceMergeSort::SortKeys(temp, p.temp_bytes, keys_out, p.n, Less<K>(),
                                                  stream);
        case kSegmented: {
            const int64_t* offsets = p.offsets.template as<int64_t>();
            return cub::DeviceSegmentedSort::SortKeys(temp, p.temp_bytes, keys_in, keys_out,
                                                      static_cast<int64_t>(p.n),
                                                      static_cast<int64_t>(p.segments), offsets,
                                                      offsets + 1, stream);
        }
        default:
            return cudaErrorInvalidValue;
    }
}

template <typename K>
cudaError_t time_sort(int device, int algo, int with_values, const void* host_keys,
                      const uint32_t* host_values, size_t n, size_t segment_len, int warmup,
                      int runs, int hold, float* out_ms, void* host_keys_out, uint32_t* host_values_out) {
    if (host_keys == nullptr || host_keys_out == nullptr || out_ms == nullptr || runs < 1 ||
        warmup < 0 || n == 0 || n > UINT32_MAX) {
        return cudaErrorInvalidValue;
    }
    if (with_values && (host_values == nullptr || host_values_out == nullptr)) {
        return cudaErrorInvalidValue;
    }
    if (algo == kSegmented && (with_values || segment_len == 0 || n % segment_len != 0)) {
        return cudaErrorInvalidValue;
    }
    PEER_CHECK(cudaSetDevice(device));

    Problem<K> p;
    p.n = static_cast<uint32_t>(n);
    p.with_values = with_values != 0;
    const size_t key_bytes = n * sizeof(K);
    const size_t value_bytes = n * sizeof(uint32_t);
    PEER_CHECK(p.keys_in.alloc(key_bytes));
    PEER_CHECK(p.keys_out.alloc(key_bytes));
    PEER_CHECK(cudaMemcpy(p.keys_in.ptr, host_keys, key_bytes, cudaMemcpyHostToDevice));
    if (p.with_values) {
        PEER_CHECK(p.values_in.alloc(value_bytes));
        PEER_CHECK(p.values_out.alloc(value_bytes));
        PEER_CHECK(
            cudaMemcpy(p.values_in.ptr, host_values, value_bytes, cudaMemcpyHostToDevice));
    }
    if (algo == kSegmented) {
        p.segment_len = static_cast<uint32_t>(segment_len);
        p.segments = static_cast<uint32_t>(n / segment_len);
        // Row starts 0, len, 2 len, ..., n: row i is [offsets[i], offsets[i + 1]).
        int64_t* host_offsets = new (std::nothrow) int64_t[p.segments + 1];
        if (host_offsets == nullptr) return cudaErrorMemoryAllocation;
        for (uint32_t i = 0; i <= p.segments; ++i) {
            host_offsets[i] = static_cast<int64_t>(i) * static_cast<int64_t>(segment_len);
        }
        const size_t offset_bytes = (p.segments + 1) * sizeof(int64_t);
        cudaError_t status = p.offsets.alloc(offset_bytes);
        if (status == cudaSuccess) {
            status = cudaMemcpy(p.offsets.ptr, host_offsets, offset_bytes,
                                cudaMemcpyHostToDevice);
        }
        delete[] host_offsets;
        PEER_CHECK(status);
    }

    Timing t;
    PEER_CHECK(t.create());
    // Temporary storage is sized and allocated once, outside the timed region.
    PEER_CHECK(cub_sort<K>(algo, p, nullptr, t.stream));
    PEER_CHECK(p.temp.alloc(p.temp_bytes));

    HeldStream held;
    if (hold) PEER_CHECK(held.create(t.stream));

    for (int run = 0; run < warmup + runs; ++run) {
        if (algo == kMerge) {
            // The merge sort works in place: restore the unsorted input (untimed).
            PEER_CHECK(cudaMemcpyAsync(p.keys_out.ptr, p.keys_in.ptr, key_bytes,
                                       cudaMemcpyDeviceToDevice, t.stream));
            if (p.with_values) {
                PEER_CHECK(cudaMemcpyAsync(p.values_out.ptr, p.values_in.ptr, value_bytes,
                                           cudaMemcpyDeviceToDevice, t.stream));
            }
        }
        PEER_CHECK(held.hold());
        PEER_CHECK(cudaEventRecord(t.start, t.stream));
        PEER_CHECK(cub_sort<K>(algo, p, p.temp.ptr, t.stream));
        PEER_CHECK(cudaEventRecord(t.stop, t.stream));
        held.release();
        PEER_CHECK(cudaEventSynchronize(t.stop));
        // The sort was not queued within the hold kernel's wait: the timing is void.
        if (held.timed_out()) return cudaErrorLaunchTimeout;
        PEER_CHECK(cudaGetLastError());
        float ms = 0.0f;
        PEER_CHECK(cudaEventElapsedTime(&ms, t.start, t.stop));
        if (run >= warmup) out_ms[run - warmup] = ms;
    }

    // The last result, for the caller's check.
    PEER_CHECK(cudaMemcpy(host_keys_out, p.keys_out.ptr, key_bytes, cudaMemcpyDeviceToHost));
    if (p.with_values) {
        PEER_CHECK(
            cudaMemcpy(host_values_out, p.values_out.ptr, value_bytes, cudaMemcpyDeviceToHost));
    }
    return cudaSuccess;
}

}  // namespace

extern "C" {

// CUB's version as CUB_VERSION encodes it (major * 100000 + minor * 100 + patch).
int bitonic_peer_cub_version(void) { return CUB_VERSION; }

// The runtime's description of a code returned by the functions below.
const char* bitonic_peer_cub_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}

// Writes the name (NUL-terminated, truncated to name_len) and the global memory in bytes of
// CUDA device `device`. Fails (e.g. cudaErrorNoDevice, cudaErrorInsufficientDriver) where no
// usable GPU and driver exist.
int bitonic_peer_cub_device(int device, char* name, size_t name_len, size_t* total_bytes) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        cudaGetLastError();  // clear it, so that later calls do not report it again
        return status;
    }
    if (device < 0 || device >= count) return cudaErrorInvalidDevice;
    cudaDeviceProp prop;
    status = cudaGetDeviceProperties(&prop, device);
    if (status != cudaSuccess) {
        cudaGetLastError();
        return status;
    }
    if (name != nullptr && name_len > 0) {
        std::strncpy(name, prop.name, name_len - 1);
        name[name_len - 1] = '\0';
    }
    if (total_bytes != nullptr) *total_bytes = prop.totalGlobalMem;
    return cudaSuccess;
}

// Times one CUB sort of n keys (key_bits 32 or 64, unsigned, ascending), with u32 values
// moving along when with_values is nonzero, on device `device`:
//   algo 0: cub::DeviceRadixSort (SortKeys / SortPairs, keys_in -> keys_out),
//   algo 1: cub::DeviceMergeSort (SortKeys / SortPairs in place, input restored before each
//           run outside the timed region),
//   algo 2: cub::DeviceSegmentedSort::SortKeys on rows of segment_len keys (keys only).
// Uploads once, allocates CUB's temporary storage once, then runs warmup + runs sorts, each
// between two CUDA events (with the stream held while each is queued when `hold` is
// nonzero); out_ms receives the `runs` timed milliseconds. The last sorted
// result is written to host_keys_out (and host_values_out). n must be 1 to 2^32 - 1.
int bitonic_peer_cub_time(int device, int algo, int key_bits, int with_values,
                          const void* host_keys, const uint32_t* host_values, size_t n,
                          size_t segment_len, int warmup, int runs, int hold, float* out_ms,
                          void* host_keys_out, uint32_t* host_values_out) {
    cudaError_t status;
    if (key_bits == 32) {
        status = time_sort<uint32_t>(device, algo, with_values, host_keys, host_values, n,
                                     segment_len, warmup, runs, hold, out_ms, host_keys_out,
                                     host_values_out);
    } else if (key_bits == 64) {
        status = time_sort<uint64_t>(device, algo, with_values, host_keys, host_values, n,
                                     segment_len, warmup, runs, hold, out_ms, host_keys_out,
                                     host_values_out);
    } else {
        status = cudaErrorInvalidValue;
    }
    if (status != cudaSuccess) {
        // Clear a non-sticky error (such as a failed allocation) so that the next call starts
        // clean; a sticky one (a fault in a kernel) stays and is reported again.
        cudaGetLastError();
    }
    return status;
}

}  // extern "C"
