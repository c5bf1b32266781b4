// Ceilings for host collectives on this machine, N threads each working on
// its own 64 MB buffers (GB/s of output, like algbw):
//   copy: memcpy(dst, src)             — the limit for moving a slot
//   add:  dst[i] = a[i] + b[i] (float) — the limit for a reduction step,
//         which reads two streams and writes one
//   memcpy_bw [threads]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBytes = 64 << 20;
constexpr int kReps = 10;

// Plain loop the compiler vectorises (-O2 -ftree-vectorize via -O3 below):
// what a well-written host reduction kernel can reach.
__attribute__((optimize("O3"))) void addFloats(float* __restrict dst, const float* __restrict a,
                                               const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

template <class Work>
double runThreads(int threads, Work work) {
  std::vector<std::thread> pool;
  std::vector<double> rate(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<float> a(kBytes / 4, 1.0f), b(kBytes / 4, 2.0f), dst(kBytes / 4, 0.0f);
      work(dst.data(), a.data(), b.data());  // first touch outside the timing
      const auto start = std::chrono::steady_clock::now();
      for (int r = 0; r < kReps; ++r) work(dst.data(), a.data(), b.data());
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (dst[kBytes / 4 - 1] == 0.0f) std::abort();
      rate[static_cast<size_t>(t)] = kBytes * static_cast<double>(kReps) / s / 1e9;
    });
  }
  for (auto& th : pool) th.join();
  double total = 0;
  for (double r : rate) total += r;
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  double copy = runThreads(threads, [](float* d, const float* a, const float*) { std::memcpy(d, a, kBytes); });
  double add = runThreads(threads, [](float* d, const float* a, const float* b) { addFloats(d, a, b, kBytes / 4); });
  std::printf("memcpy %d threads: %.2f GB/s total\n", threads, copy);
  std::printf("streaming add %d threads: %.2f GB/s total (output bytes)\n", threads, add);
  return 0;
}
