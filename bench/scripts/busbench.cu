// What the bus and the host can do, measured apart from the crate: the floors under a host
// round trip of `Sorter::sort` on CUDA (docs/performance.md, "Host slices").
//
// For copies of 4 MiB, 64 MiB and 1 GiB (median of 15 runs, 5 for 1 GiB, after one
// untimed) it prints:
//   - memcpy from ordinary into pinned memory on one thread and on 16 threads, and back on
//     16 threads;
//   - cudaMemcpyAsync from and to pinned memory (the bus at full speed) and from and to
//     ordinary (pageable) memory;
//   - the cost of cudaHostRegister and cudaHostUnregister of the caller's memory, and of a
//     copy each way through the registered memory;
//   - a staged transfer through a ring of three pinned slots (host copy on 8 threads, then
//     the bus), for chunks of 1, 4 and 16 MiB, up and down;
// and then register + unregister of 4 KiB to 1 MiB.
//
// Needs a CUDA toolkit and one GPU with 1 GiB free, and 3 GiB of host memory:
//   nvcc -O2 -o busbench bench/scripts/busbench.cu && ./busbench
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <thread>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("ERR %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
using clk = std::chrono::steady_clock;
static double ms_since(clk::time_point t) { return std::chrono::duration<double, std::milli>(clk::now() - t).count(); }
static void par_copy(char* dst, const char* src, size_t n, int threads) {
  if (threads <= 1) { memcpy(dst, src, n); return; }
  std::vector<std::thread> ts; size_t per = (n + threads - 1) / threads;
  for (int t = 0; t < threads; t++) { size_t a = t * per, b = std::min(n, a + per); if (a >= b) break;
    ts.emplace_back([=]{ memcpy(dst + a, src + a, b - a); }); }
  for (auto& t : ts) t.join();
}
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size()/2]; }
int main() {
  size_t sizes[] = {4ull<<20, 64ull<<20, 1ull<<30};
  char *dev; CK(cudaMalloc(&dev, 1ull<<30));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* pin; CK(cudaHostAlloc(&pin, 1ull<<30, 0));
  char* page = (char*)malloc(1ull<<30); char* page2 = (char*)malloc(1ull<<30);
  for (size_t i = 0; i < (1ull<<30); i++) { page[i] = (char)(i * 7); page2[i] = 0; pin[i] = 1; }
  for (size_t n : sizes) {
    int reps = n >= (1ull<<30) ? 5 : 15;
    std::vector<double> a, b, c, d, e, f, g, h, r, u, st;
    for (int k = 0; k < reps + 1; k++) {
      auto t = clk::now(); memcpy(pin, page, n); double t1 = ms_since(t);
      t = clk::now(); par_copy(pin, page, n, 16); double t16 = ms_since(t);
      t = clk::now(); par_copy(page2, pin, n, 16); double t16b = ms_since(t);
      t = clk::now(); CK(cudaMemcpyAsync(dev, pin, n, cudaMemcpyHostToDevice, s)); CK(cudaStreamSynchronize(s)); double h2d = ms_since(t);
      t = clk::now(); CK(cudaMemcpyAsync(pin, dev, n, cudaMemcpyDeviceToHost, s)); CK(cudaStreamSynchronize(s)); double d2h = ms_since(t);
      t = clk::now(); CK(cudaMemcpyAsync(dev, page, n, cudaMemcpyHostToDevice, s)); CK(cudaStreamSynchronize(s)); double h2dp = ms_since(t);
      t = clk::now(); CK(cudaMemcpyAsync(page2, dev, n, cudaMemcpyDeviceToHost, s)); CK(cudaStreamSynchronize(s)); double d2hp = ms_since(t);
      t = clk::now(); CK(cudaHostRegister(page, n, 0)); double reg = ms_since(t);
      t = clk::now(); CK(cudaMemcpyAsync(dev, page, n, cudaMemcpyHostToDevice, s)); CK(cudaMemcpyAsync(page, dev, n, cudaMemcpyDeviceToHost, s)); CK(cudaStreamSynchronize(s)); double regcopy = ms_since(t);
      t = clk::now(); CK(cudaHostUnregister(page)); double unreg = ms_since(t);
      if (k == 0) continue;
      a.push_back(t1); b.push_back(t16); c.push_back(t16b); d.push_back(h2d); e.push_back(d2h); f.push_back(h2dp); g.push_back(d2hp); r.push_back(reg); h.push_back(regcopy); u.push_back(unreg);
    }
    double mib = n / 1048576.0, gib = n / 1073741824.0;
    printf("n=%.0f MiB: memcpy1 %.3f ms (%.1f GiB/s) | par16 to pinned %.3f (%.1f) | par16 from pinned %.3f (%.1f)\n", mib, median(a), gib/median(a)*1e3, median(b), gib/median(b)*1e3, median(c), gib/median(c)*1e3);
    printf("   pinned H2D %.3f (%.1f) D2H %.3f (%.1f) | pageable H2D %.3f (%.1f) D2H %.3f (%.1f)\n", median(d), gib/median(d)*1e3, median(e), gib/median(e)*1e3, median(f), gib/median(f)*1e3, median(g), gib/median(g)*1e3);
    printf("   register %.3f ms, registered H2D+D2H %.3f ms, unregister %.3f ms\n", median(r), median(h), median(u));
    // staged pipeline: ring of R slots of C bytes: host copy (16 thr) then H2D; and D2H then host copy out
    for (size_t chunk : {1ull<<20, 4ull<<20, 16ull<<20}) {
      if (chunk > n) continue;
      const int R = 3; cudaEvent_t ev[R]; for (int i = 0; i < R; i++) CK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
      std::vector<double> up, down;
      for (int k = 0; k < reps + 1; k++) {
        auto t = clk::now();
        size_t chunks = (n + chunk - 1) / chunk;
        for (size_t i = 0; i < chunks; i++) { int sl = i % R; size_t off = i * chunk, len = std::min(chunk, n - off);
          if (i >= R) CK(cudaEventSynchronize(ev[sl]));
          par_copy(pin + sl * chunk, page + off, len, 8);
          CK(cudaMemcpyAsync(dev + off, pin + sl * chunk, len, cudaMemcpyHostToDevice, s)); CK(cudaEventRecord(ev[sl], s)); }
        CK(cudaStreamSynchronize(s)); double tu = ms_since(t);
        t = clk::now();
        for (size_t i = 0; i < std::min(chunks, (size_t)R); i++) { size_t off = i * chunk, len = std::min(chunk, n - off);
          CK(cudaMemcpyAsync(pin + (i % R) * chunk, dev + off, len, cudaMemcpyDeviceToHost, s)); CK(cudaEventRecord(ev[i % R], s)); }
        for (size_t i = 0; i < chunks; i++) { int sl = i % R; size_t off = i * chunk, len = std::min(chunk, n - off);
          CK(cudaEventSynchronize(ev[sl])); par_copy(page2 + off, pin + sl * chunk, len, 8);
          size_t j = i + R; if (j < chunks) { size_t o2 = j * chunk, l2 = std::min(chunk, n - o2);
            CK(cudaMemcpyAsync(pin + sl * chunk, dev + o2, l2, cudaMemcpyDeviceToHost, s)); CK(cudaEventRecord(ev[sl], s)); } }
        double td = ms_since(t);
        if (k) { up.push_back(tu); down.push_back(td); }
      }
      printf("   staged chunk %zu KiB ring %d: up %.3f ms (%.1f GiB/s) down %.3f ms (%.1f GiB/s)\n", chunk >> 10, R, median(up), gib/median(up)*1e3, median(down), gib/median(down)*1e3);
    }
  }
  // small sizes: register cost
  for (size_t n : {4096ull, 65536ull, 1ull<<20}) {
    std::vector<double> r;
    for (int k = 0; k < 20; k++) { auto t = clk::now(); CK(cudaHostRegister(page, n, 0)); CK(cudaHostUnregister(page)); r.push_back(ms_since(t)); }
    printf("register+unregister %zu B: %.4f ms\n", n, median(r));
  }
  printf("threads available: %u\n", std::thread::hardware_concurrency());
  return 0;
}
