// Times the OpenCL radix sort (kernels/radix.clh) launch by launch, in one process and with
// no Rust build: for each log2 size given (default 20 24 28; at most 22 on a CPU device) it
// sorts u32 keys alone, u32 keys with u32 values and u64 keys alone, 3 warm-ups then 15 timed
// runs, and prints the median total (queue profiling: the first launch's start to the last
// one's end) and the median time of each kernel, summed over its launches of a sort. Every
// result must equal std::stable_sort of the input by key (values are the keys' positions, so
// a sort that is not stable shows). Built and run by bench/scripts/opencl-radix-tune.sh.
//
// The program is built as the crate builds it (src/opencl/kernels.rs): kernels/bitonic.cl
// with the files of SOURCE_FILES inlined where it includes them, and the same -D options.
// RADIX_CL_SOURCE_DIR (default kernels) names the folder the sources are read from; several
// folders, separated by ':', are timed one after the other on the same keys, each line
// with its ratio to the first folder's, so that a copy of kernels/ with a changed radix.clh
// is timed beside the original in one run. OPENCL_PLATFORM picks the first platform whose
// name contains it (default: the first platform with a GPU, else the first);
// RADIX_CL_PATTERN picks the keys (0 random, the default; 1 ascending; 2 sixteen distinct;
// 3 descending; 4 random below 2^24, which skips digits and leaves the keys in the scratch
// after an odd number of moves); RADIX_CL_CASES, a comma-separated subset of u32,u32+u32,u64,
// the cases. Each program's kernels' local and private (spilled) bytes are printed first;
// with RADIX_CL_BINARY_DIR set, the programs' binaries are written there as
// src<folder>-<case>.bin (PTX text on NVIDIA: `ptxas -arch=sm_90 -v` on a copy named .ptx
// gives the registers).
//
// The launches mirror OpenClBackend::enqueue_radix (src/opencl/radix.rs) with the work sizes
// of RadixLaunches (src/opencl/plan/radix.rs) and the state of RadixPlan
// (src/schedule/radix.rs): its header words, the table after them, state_bytes of state.
// Keep them in step.

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int status_ = (call);                                                                   \
        if (status_ != CL_SUCCESS) {                                                               \
            printf("OpenCL error %d at %s:%d: %s\n", status_, __FILE__, __LINE__, #call);          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

// kernels/contract.h.
constexpr uint64_t RADIX_THREADS = 256;
constexpr uint64_t RADIX_BINS = 256;
constexpr uint32_t RADIX_DIGIT_BITS = 8;
// src/opencl/plan/radix.rs.
constexpr uint64_t HISTOGRAM_KEYS_PER_ITEM = 16;
constexpr uint64_t GROUPS_PER_UNIT = 8;
// src/opencl/plan/mod.rs LOG_E (MAX_LOG_E), and 1 on CPU devices (OpenClBackend::round_log_e).
constexpr int GPU_LOG_E = 4;
// The timed runs and the warm-ups before them.
constexpr int RUNS = 15;
constexpr int WARMUPS = 3;

// src/opencl/kernels.rs SOURCE_FILES: the main file first, then the files it includes.
static const char *SOURCE_FILES[] = {"bitonic.cl",     "contract.h", "words.clh",
                                     "rounds.clh",     "tile_io.clh", "merge_path.clh",
                                     "top_k.clh",      "counting.clh", "radix.clh"};
constexpr size_t SOURCE_COUNT = sizeof(SOURCE_FILES) / sizeof(SOURCE_FILES[0]);

static const char *KERNEL_NAMES[] = {"radix_clear",  "radix_histogram", "radix_starts",
                                     "radix_upsweep", "radix_scan",     "radix_downsweep",
                                     "radix_copy_back"};
enum { CLEAR, HISTOGRAM, STARTS, UPSWEEP, SCAN, DOWNSWEEP, COPY_BACK, KERNELS };

static std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        printf("cannot read %s\n", path.c_str());
        exit(1);
    }
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// inline_includes of src/opencl/kernels.rs: each line `#include "name"` of a source file is
// replaced by that file, recursively (`depth` guards against a file that includes itself).
static void inline_includes(const std::map<std::string, std::string> &files, const std::string &text,
                            std::string &out, size_t depth) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        size_t a = line.find_first_not_of(" \t\n\v\f\r");
        size_t b = line.find_last_not_of(" \t\n\v\f\r");
        std::string trimmed = a == std::string::npos ? "" : line.substr(a, b - a + 1);
        const std::string prefix = "#include \"";
        auto found = files.end();
        if (trimmed.size() > prefix.size() && trimmed.compare(0, prefix.size(), prefix) == 0 && trimmed.back() == '"') {
            found = files.find(trimmed.substr(prefix.size(), trimmed.size() - prefix.size() - 1));
        }
        if (found != files.end() && depth < SOURCE_COUNT) {
            inline_includes(files, found->second, out, depth + 1);
        } else {
            out += line;
            out += '\n';
        }
    }
}

static std::string program_source(const std::string &dir) {
    std::map<std::string, std::string> files;
    for (const char *name : SOURCE_FILES) files[name] = read_file(dir + "/" + name);
    std::string out;
    inline_includes(files, files[SOURCE_FILES[0]], out, 0);
    return out;
}

struct Device {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    bool cpu;
    cl_uint compute_units;
    std::string name;
};

static std::string platform_name(cl_platform_id p) {
    char name[512] = {0};
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof(name) - 1, name, nullptr);
    return name;
}

static Device open_device() {
    cl_uint count = 0;
    CHECK(clGetPlatformIDs(0, nullptr, &count));
    std::vector<cl_platform_id> platforms(count);
    CHECK(clGetPlatformIDs(count, platforms.data(), nullptr));
    const char *want = getenv("OPENCL_PLATFORM");
    auto lower = [](std::string s) {
        for (char &c : s) c = (char)tolower((unsigned char)c);
        return s;
    };
    cl_platform_id chosen = nullptr;
    for (cl_platform_id p : platforms) {
        cl_uint gpus = 0;
        if (want && *want) {
            if (lower(platform_name(p)).find(lower(want)) != std::string::npos) {
                chosen = p;
                break;
            }
        } else if (clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 0, nullptr, &gpus) == CL_SUCCESS && gpus > 0) {
            chosen = p;
            break;
        }
    }
    if (!chosen && !(want && *want) && !platforms.empty()) chosen = platforms[0];
    if (!chosen) {
        printf("no OpenCL platform%s%s; platforms:\n", want ? " matching " : "", want ? want : "");
        for (cl_platform_id p : platforms) printf("  %s\n", platform_name(p).c_str());
        exit(1);
    }
    Device d{};
    d.platform = chosen;
    if (clGetDeviceIDs(chosen, CL_DEVICE_TYPE_GPU, 1, &d.device, nullptr) != CL_SUCCESS) {
        CHECK(clGetDeviceIDs(chosen, CL_DEVICE_TYPE_ALL, 1, &d.device, nullptr));
    }
    cl_device_type type = 0;
    CHECK(clGetDeviceInfo(d.device, CL_DEVICE_TYPE, sizeof(type), &type, nullptr));
    d.cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    CHECK(clGetDeviceInfo(d.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(d.compute_units), &d.compute_units, nullptr));
    char name[512] = {0};
    CHECK(clGetDeviceInfo(d.device, CL_DEVICE_NAME, sizeof(name) - 1, name, nullptr));
    d.name = platform_name(chosen) + " / " + name;
    cl_int err = CL_SUCCESS;
    d.context = clCreateContext(nullptr, 1, &d.device, nullptr, nullptr, &err);
    CHECK(err);
    d.queue = clCreateCommandQueue(d.context, d.device, CL_QUEUE_PROFILING_ENABLE, &err);
    CHECK(err);
    return d;
}

// One case: the key word, the value word (0: keys alone) and RADIX_KPT
// (radix_keys_per_thread of src/opencl/kernels.rs).
struct Case {
    uint32_t key_bytes;
    uint32_t value_bytes;
    uint32_t kpt;
};

// The program of a case, built from one source folder as OpenClBackend::build does, and its
// radix kernels.
struct Program {
    cl_program program = nullptr;
    cl_kernel k[KERNELS] = {};
};

static Program build(const Device &d, const std::string &source, const Case &c) {
    const char *word = c.key_bytes == 8 ? "ulong" : "uint";
    std::string values = c.value_bytes == 0
                             ? "-D HAS_VALUES=0"
                             : std::string("-D HAS_VALUES=1 -D VAL_T=") + (c.value_bytes == 8 ? "ulong" : "uint");
    // VariantKey::build_options.
    std::string options = std::string("-D KEY_T=") + word + " -D RADIX_KERNELS=1 -D RADIX_KPT=" +
                          std::to_string(c.kpt) + (d.cpu ? " -D RADIX_SCAN_KPT=4u " : " ") + values +
                          " -D LOG_E=" + std::to_string(d.cpu ? 1 : GPU_LOG_E);
    Program p;
    for (int attempt = 0; attempt < 2; ++attempt) {
        // A compiler without the C99 _Pragma operator gets the loops without the unroll hint.
        const std::string o = attempt == 0 ? options : options + " -D NO_UNROLL_PRAGMA";
        const char *text = source.c_str();
        const size_t length = source.size();
        cl_int err = CL_SUCCESS;
        p.program = clCreateProgramWithSource(d.context, 1, &text, &length, &err);
        CHECK(err);
        err = clBuildProgram(p.program, 1, &d.device, o.c_str(), nullptr, nullptr);
        if (err == CL_SUCCESS) break;
        size_t size = 0;
        clGetProgramBuildInfo(p.program, d.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
        std::string log(size, '\0');
        clGetProgramBuildInfo(p.program, d.device, CL_PROGRAM_BUILD_LOG, size, &log[0], nullptr);
        clReleaseProgram(p.program);
        if (attempt == 1 || err != CL_BUILD_PROGRAM_FAILURE) {
            printf("build failed (%d), options: %s\n%s\n", err, o.c_str(), log.c_str());
            exit(1);
        }
    }
    for (int i = 0; i < KERNELS; ++i) {
        cl_int err = CL_SUCCESS;
        p.k[i] = clCreateKernel(p.program, KERNEL_NAMES[i], &err);
        CHECK(err);
    }
    return p;
}

// RadixPlan (src/schedule/radix.rs).
struct Plan {
    uint64_t n;
    uint32_t digits;
    uint32_t kpt;
    uint64_t tile() const { return RADIX_THREADS * kpt; }
    uint64_t tiles() const { return std::max<uint64_t>(1, (n + tile() - 1) / tile()); }
    uint64_t skip_offset() const { return (uint64_t)digits * RADIX_BINS; }
    uint64_t tile_counter_offset() const { return skip_offset() + digits; }
    uint64_t header_words() const { return (tile_counter_offset() + digits + 3) & ~3ull; }
    uint64_t region_words() const { return tiles() * RADIX_BINS; }
    uint64_t state_bytes() const { return (header_words() + 2 * region_words()) * 4; }
};

template <typename T> static void set_arg(cl_kernel k, cl_uint &i, T value) {
    CHECK(clSetKernelArg(k, i++, sizeof(T), &value));
}
template <typename... A> static void set_args(cl_kernel k, A... args) {
    cl_uint i = 0;
    (set_arg(k, i, args), ...);
}

struct Buffers {
    cl_mem keys, scratch_keys, values, scratch_values, state;
};

// The launches of OpenClBackend::enqueue_radix for `plan`, each with its kernel's index
// and event appended to `launches`.
static void enqueue_radix(const Device &d, const Program &p, const Buffers &b, const Plan &plan, bool with_values,
                          std::vector<std::pair<int, cl_event>> &launches) {
    const cl_uint code = 0; // KeyEncoding::code of unsigned keys, ascending.
    const cl_ulong table = plan.header_words();
    const cl_ulong tiles = plan.tiles();
    const cl_ulong n = plan.n;
    // RadixLaunches::new.
    const uint64_t most = std::max<uint64_t>(1, (uint64_t)d.compute_units * GROUPS_PER_UNIT);
    const uint64_t histogram_groups =
        std::clamp<uint64_t>((n + RADIX_THREADS * HISTOGRAM_KEYS_PER_ITEM - 1) / (RADIX_THREADS * HISTOGRAM_KEYS_PER_ITEM), 1, most);
    const uint64_t copy_groups = std::clamp<uint64_t>((n + RADIX_THREADS - 1) / RADIX_THREADS, 1, most);
    auto run = [&](int kernel, uint64_t groups) {
        const size_t global = (size_t)(groups * RADIX_THREADS), local = RADIX_THREADS;
        cl_event e = nullptr;
        CHECK(clEnqueueNDRangeKernel(d.queue, p.k[kernel], 1, nullptr, &global, &local, 0, nullptr, &e));
        launches.push_back({kernel, e});
    };
    // The data and scratch buffers, keys then values, as every two-buffer kernel takes them.
    auto both = [&](cl_kernel k, cl_uint &i) {
        set_arg(k, i, b.keys);
        set_arg(k, i, b.scratch_keys);
        if (with_values) {
            set_arg(k, i, b.values);
            set_arg(k, i, b.scratch_values);
        }
    };
    set_args(p.k[CLEAR], b.state, (cl_uint)plan.header_words());
    run(CLEAR, 1);
    set_args(p.k[HISTOGRAM], b.keys, n, code, b.state);
    run(HISTOGRAM, histogram_groups);
    set_args(p.k[STARTS], b.state, n);
    run(STARTS, 1);
    for (cl_uint digit = 0; digit < plan.digits; ++digit) {
        set_args(p.k[UPSWEEP], b.keys, b.scratch_keys, n, tiles, digit, code, b.state, table);
        run(UPSWEEP, tiles);
        set_args(p.k[SCAN], tiles, digit, b.state, table);
        run(SCAN, RADIX_BINS);
        cl_uint i = 0;
        both(p.k[DOWNSWEEP], i);
        set_arg(p.k[DOWNSWEEP], i, n);
        set_arg(p.k[DOWNSWEEP], i, tiles);
        set_arg(p.k[DOWNSWEEP], i, digit);
        set_arg(p.k[DOWNSWEEP], i, code);
        set_arg(p.k[DOWNSWEEP], i, b.state);
        set_arg(p.k[DOWNSWEEP], i, table);
        run(DOWNSWEEP, tiles);
    }
    cl_uint i = 0;
    both(p.k[COPY_BACK], i);
    set_arg(p.k[COPY_BACK], i, n);
    set_arg(p.k[COPY_BACK], i, b.state);
    if (plan.digits > 0) run(COPY_BACK, copy_groups);
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static cl_mem device_buffer(const Device &d, size_t bytes) {
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d.context, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 16), nullptr, &err);
    CHECK(err);
    return m;
}

static cl_mem upload(const Device &d, const void *data, size_t bytes) {
    cl_mem m = device_buffer(d, bytes);
    if (bytes) CHECK(clEnqueueWriteBuffer(d.queue, m, CL_TRUE, 0, bytes, data, 0, nullptr, nullptr));
    return m;
}

// Keys of a pattern (radix_tune.cu's, see the top of this file).
template <typename K> static std::vector<K> make_keys(uint64_t n, int pattern) {
    std::vector<K> k(n);
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull;
        x ^= x >> 31;
        x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 29;
        const uint64_t keys[5] = {x, i, x & 15, n - i, x & 0xffffffull};
        k[i] = (K)keys[pattern];
    }
    return k;
}

// The expected result: the keys stably sorted, and their positions (the values) with them.
template <typename K> struct Expected {
    std::vector<K> keys;
    std::vector<uint32_t> positions;
};
template <typename K> static Expected<K> stable_sorted(const std::vector<K> &keys) {
    std::vector<uint32_t> order(keys.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
    Expected<K> e;
    e.keys.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) e.keys[i] = keys[order[i]];
    e.positions = std::move(order);
    return e;
}

// Times the sort of `keys` (with their positions as u32 values when c.value_bytes) by each
// folder's program, checks each result against `expected` and prints a line and the
// per-kernel medians per folder.
template <typename K>
static void run_case(const Device &d, const std::vector<std::string> &dirs, std::vector<Program> &programs,
                     const Case &c, const std::vector<K> &keys, std::shared_future<Expected<K>> expected) {
    const uint64_t n = keys.size();
    const bool with_values = c.value_bytes != 0;
    const Plan plan{n, (uint32_t)(sizeof(K) * 8 / RADIX_DIGIT_BITS), c.kpt};
    std::vector<uint32_t> positions(with_values ? n : 0);
    std::iota(positions.begin(), positions.end(), 0u);
    cl_mem input = upload(d, keys.data(), n * sizeof(K));
    cl_mem input_values = upload(d, positions.data(), positions.size() * 4);
    Buffers b{device_buffer(d, n * sizeof(K)), device_buffer(d, n * sizeof(K)),
              device_buffer(d, with_values ? n * 4 : 0), device_buffer(d, with_values ? n * 4 : 0),
              device_buffer(d, plan.state_bytes())};
    double first_total = 0;
    for (size_t which = 0; which < dirs.size(); ++which) {
        std::vector<double> totals;
        std::vector<std::vector<double>> per_kernel(KERNELS);
        for (int r = 0; r < WARMUPS + RUNS; ++r) {
            if (n) CHECK(clEnqueueCopyBuffer(d.queue, input, b.keys, 0, 0, n * sizeof(K), 0, nullptr, nullptr));
            if (with_values && n) {
                CHECK(clEnqueueCopyBuffer(d.queue, input_values, b.values, 0, 0, n * 4, 0, nullptr, nullptr));
            }
            std::vector<std::pair<int, cl_event>> launches;
            enqueue_radix(d, programs[which], b, plan, with_values, launches);
            CHECK(clFinish(d.queue));
            std::vector<double> sums(KERNELS, 0.0);
            cl_ulong first = ~0ull, last = 0;
            for (auto &[kernel, e] : launches) {
                cl_ulong start = 0, end = 0;
                CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr));
                CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr));
                first = std::min(first, start);
                last = std::max(last, end);
                sums[kernel] += (end - start) * 1e-6;
                clReleaseEvent(e);
            }
            if (r >= WARMUPS) {
                totals.push_back((last - first) * 1e-6);
                for (int k = 0; k < KERNELS; ++k) per_kernel[k].push_back(sums[k]);
            }
        }
        std::vector<K> got(n);
        std::vector<uint32_t> got_values(with_values ? n : 0);
        if (n) CHECK(clEnqueueReadBuffer(d.queue, b.keys, CL_TRUE, 0, n * sizeof(K), got.data(), 0, nullptr, nullptr));
        if (with_values && n) {
            CHECK(clEnqueueReadBuffer(d.queue, b.values, CL_TRUE, 0, n * 4, got_values.data(), 0, nullptr, nullptr));
        }
        const Expected<K> &want = expected.get();
        bool same = got == want.keys && (!with_values || got_values == want.positions);
        const double total = median(totals);
        if (which == 0) first_total = total;
        printf("%u-byte keys, %u-byte values, kpt %2u, n %10llu, %s: total %9.3f ms, %7.3f Gkeys/s", c.key_bytes,
               c.value_bytes, c.kpt, (unsigned long long)n, dirs[which].c_str(), total, n / total * 1e-6);
        if (which > 0) printf(", ratio to the first %.3f", total / first_total);
        printf("%s\n ", same ? "" : "  MISMATCH");
        for (int k = 0; k < KERNELS; ++k) printf("  %s %.3f", KERNEL_NAMES[k] + 6, median(per_kernel[k]));
        printf(" ms\n");
        fflush(stdout);
    }
    for (cl_mem m : {input, input_values, b.keys, b.scratch_keys, b.values, b.scratch_values, b.state}) {
        clReleaseMemObject(m);
    }
}

int main(int argc, char **argv) {
    const Device d = open_device();
    std::vector<std::string> dirs;
    {
        const char *env = getenv("RADIX_CL_SOURCE_DIR");
        std::stringstream s(env && *env ? env : "kernels");
        std::string dir;
        while (std::getline(s, dir, ':')) {
            if (!dir.empty()) dirs.push_back(dir);
        }
    }
    const char *pattern_env = getenv("RADIX_CL_PATTERN");
    const int pattern = pattern_env ? std::clamp(atoi(pattern_env), 0, 4) : 0;
    std::vector<int> logs;
    for (int i = 1; i < argc; ++i) logs.push_back(atoi(argv[i]));
    if (logs.empty()) logs = {20, 24, 28};
    printf("device: %s (%u compute units), pattern %d\n", d.name.c_str(), d.compute_units, pattern);
    // radix_keys_per_thread: 16 keys of 4 bytes, 8 of 8 bytes.
    const Case cases[3] = {{4, 0, 16}, {4, 4, 16}, {8, 0, 8}};
    const char *case_names[3] = {"u32", "u32+u32", "u64"};
    bool wanted[3] = {true, true, true};
    if (const char *env = getenv("RADIX_CL_CASES"); env && *env) {
        std::string list = std::string(",") + env + ",";
        for (int c = 0; c < 3; ++c) wanted[c] = list.find(std::string(",") + case_names[c] + ",") != std::string::npos;
    }
    const char *binary_dir = getenv("RADIX_CL_BINARY_DIR");
    std::vector<std::vector<Program>> programs(3);
    for (size_t which = 0; which < dirs.size(); ++which) {
        const std::string source = program_source(dirs[which]);
        for (int c = 0; c < 3; ++c) {
            if (!wanted[c]) continue;
            programs[c].push_back(build(d, source, cases[c]));
            const Program &p = programs[c].back();
            printf("%s %s: local/private bytes", dirs[which].c_str(), case_names[c]);
            for (int k = 0; k < KERNELS; ++k) {
                cl_ulong local = 0, priv = 0;
                CHECK(clGetKernelWorkGroupInfo(p.k[k], d.device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(local), &local, nullptr));
                CHECK(clGetKernelWorkGroupInfo(p.k[k], d.device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof(priv), &priv, nullptr));
                printf(" %s %llu/%llu", KERNEL_NAMES[k] + 6, (unsigned long long)local, (unsigned long long)priv);
            }
            printf("\n");
            if (binary_dir && *binary_dir) {
                size_t size = 0;
                CHECK(clGetProgramInfo(p.program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr));
                std::vector<unsigned char> binary(size);
                unsigned char *ptr = binary.data();
                CHECK(clGetProgramInfo(p.program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr));
                const std::string path = std::string(binary_dir) + "/src" + std::to_string(which) + "-" + case_names[c] + ".bin";
                // NVIDIA's PTX text ends in a NUL, which ptxas rejects.
                while (size > 0 && binary[size - 1] == 0) --size;
                std::ofstream(path, std::ios::binary).write((const char *)binary.data(), (std::streamsize)size);
            }
        }
    }
    for (int log : logs) {
        if (d.cpu && log > 22) {
            printf("2^%d keys: skipped, a CPU device takes at most 2^22\n", log);
            continue;
        }
        const uint64_t n = 1ull << log;
        const bool narrow = wanted[0] || wanted[1];
        const std::vector<uint32_t> keys32 = make_keys<uint32_t>(narrow ? n : 0, pattern);
        const std::vector<uint64_t> keys64 = make_keys<uint64_t>(wanted[2] ? n : 0, pattern);
        // The host's sorts run while the device is timed.
        std::shared_future<Expected<uint32_t>> want32 =
            std::async(std::launch::async, [&] { return stable_sorted(keys32); }).share();
        std::shared_future<Expected<uint64_t>> want64 =
            std::async(std::launch::async, [&] { return stable_sorted(keys64); }).share();
        if (wanted[0]) run_case<uint32_t>(d, dirs, programs[0], cases[0], keys32, want32);
        if (wanted[1]) run_case<uint32_t>(d, dirs, programs[1], cases[1], keys32, want32);
        if (wanted[2]) run_case<uint64_t>(d, dirs, programs[2], cases[2], keys64, want64);
    }
    return 0;
}
