// Ceiling for host collectives: memcpy bandwidth of N threads each copying
// its own 64 MB buffer (GB/s, reading+writing counted once, like algbw).
//   memcpy_bw [threads]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const size_t bytes = 64 << 20;
  const int reps = 10;
  std::vector<std::thread> pool;
  std::vector<double> seconds(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<char> src(bytes, 1), dst(bytes, 0);
      std::memcpy(dst.data(), src.data(), bytes);
      const auto start = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) std::memcpy(dst.data(), src.data(), bytes);
      seconds[static_cast<size_t>(t)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (dst[bytes - 1] != 1) std::abort();
    });
  }
  for (auto& th : pool) th.join();
  double total = 0;
  for (double s : seconds) total += bytes * reps / s / 1e9;
  std::printf("memcpy %d threads: %.2f GB/s total\n", threads, total);
  return 0;
}
