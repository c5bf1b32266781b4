// GPU perf sweep and correctness pass, run by run_gpu_checks.sh:
// AllReduce / ReduceScatter / AllGather, 2 and 4 ranks (threads) sharing
// one GPU, sizes from 8 B to a maximum (1 GB by default). Every size is run
// once on poisoned outputs and every element of every rank is checked
// against a float64 host reference (integer-valued data, so float32 sums are
// exact); then timed. Finally the device reduce kernel alone is timed
// against cudaMemcpy device-to-device of the same bytes on the same GPU.
// Prints one line per point and a summary table; exits 1 on any mismatch or
// failed call.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/exec/cuda/reduce_kernel.h"
#include "weft/weft.h"

namespace {

int failures = 0;

#define CHECK_CUDA(call)                                                                                  \
  do {                                                                                                    \
    cudaError_t e_ = (call);                                                                              \
    if (e_ != cudaSuccess) {                                                                              \
      fprintf(stderr, "FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));          \
      exit(2);                                                                                            \
    }                                                                                                     \
  } while (0)
#define CHECK_WEFT(call)                                                                                  \
  do {                                                                                                    \
    weftResult_t r_ = (call);                                                                             \
    if (r_ != weftSuccess) {                                                                              \
      fprintf(stderr, "FAIL %s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, weftGetErrorString(r_),       \
              weftGetLastError(nullptr));                                                                 \
      exit(2);                                                                                            \
    }                                                                                                     \
  } while (0)

enum Coll { kAllReduce, kReduceScatter, kAllGather };
const char* kCollNames[] = {"AllReduce", "ReduceScatter", "AllGather"};

double nowSec() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Team {
  int n;
  std::vector<weftComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<float*> in, out;
  std::vector<std::vector<float>> hostIn;
};

void launch(Team& t, Coll c, size_t count) {
  CHECK_WEFT(weftGroupStart());
  for (int k = 0; k < t.n; k++) {
    if (c == kAllReduce)
      CHECK_WEFT(weftAllReduce(t.in[k], t.out[k], count, weftFloat32, weftSum, t.comms[k], t.streams[k]));
    else if (c == kReduceScatter)
      CHECK_WEFT(weftReduceScatter(t.in[k], t.out[k], count, weftFloat32, weftSum, t.comms[k], t.streams[k]));
    else
      CHECK_WEFT(weftAllGather(t.in[k], t.out[k], count, weftFloat32, t.comms[k], t.streams[k]));
  }
  CHECK_WEFT(weftGroupEnd());
}

void syncAll(Team& t) {
  for (int k = 0; k < t.n; k++) CHECK_CUDA(cudaStreamSynchronize(t.streams[k]));
  for (int k = 0; k < t.n; k++) {
    weftResult_t a = weftSuccess;
    CHECK_WEFT(weftCommGetAsyncError(t.comms[k], &a));
    if (a != weftSuccess) {
      fprintf(stderr, "FAIL rank %d async error: %s\n", k, weftGetErrorString(a));
      exit(2);
    }
  }
}

// Mismatching elements over all ranks.
size_t verify(Team& t, Coll c, size_t count) {
  const size_t outElems = c == kAllGather ? count * t.n : count;
  std::vector<float> got(outElems);
  size_t bad = 0;
  std::vector<double> ref(outElems);
  for (int k = 0; k < t.n; k++) {
    if (c == kAllGather) {
      for (size_t i = 0; i < outElems; i++) ref[i] = t.hostIn[i / count][i % count];
    } else if (k == 0 || c == kReduceScatter) {
      const size_t base = c == kReduceScatter ? k * count : 0;
      for (size_t i = 0; i < outElems; i++) {
        double s = 0;
        for (int q = 0; q < t.n; q++) s += t.hostIn[q][base + i];
        ref[i] = s;
      }
    }
    CHECK_CUDA(cudaMemcpy(got.data(), t.out[k], outElems * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < outElems; i++)
      if (double(got[i]) != ref[i]) bad++;
  }
  return bad;
}

struct Summary {
  double bestBusBw = 0;
  size_t bestAt = 0;
  size_t errors = 0;
  int points = 0;
};

}  // namespace

int main(int argc, char** argv) {
  size_t maxBytes = size_t(1) << 30;
  if (argc > 1) maxBytes = strtoull(argv[1], nullptr, 0);
  int nGpus = 0;
  if (cudaGetDeviceCount(&nGpus) != cudaSuccess || nGpus == 0) {
    printf("SKIP: no GPU visible\n");
    return 0;
  }
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  printf("# GPU 0: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::vector<size_t> sizes;
  for (size_t s = 8; s <= maxBytes; s = s < (1u << 20) ? s * 2 : s * 4) sizes.push_back(s);

  std::map<std::pair<int, int>, Summary> summary;
  printf("%-14s %5s %12s %12s %10s %10s %10s %8s\n", "coll", "ranks", "bytes", "count", "time_us", "algbw_GB/s",
         "busbw_GB/s", "errors");
  for (int n : {2, 4}) {
    Team t;
    t.n = n;
    t.comms.resize(n);
    t.streams.resize(n);
    t.in.resize(n);
    t.out.resize(n);
    t.hostIn.resize(n);
    std::vector<int> devs(n, 0);
    CHECK_WEFT(weftCommInitAll(t.comms.data(), n, devs.data()));
    const size_t maxElems = maxBytes / 4;
    std::mt19937 rng(1234 + n);
    std::uniform_int_distribution<int> dist(-1000, 1000);
    for (int k = 0; k < n; k++) {
      CHECK_CUDA(cudaStreamCreateWithFlags(&t.streams[k], cudaStreamNonBlocking));
      CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&t.in[k]), maxBytes));
      CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&t.out[k]), maxBytes));
      t.hostIn[k].resize(maxElems);
      for (auto& x : t.hostIn[k]) x = float(dist(rng));
      CHECK_CUDA(cudaMemcpy(t.in[k], t.hostIn[k].data(), maxBytes, cudaMemcpyHostToDevice));
    }
    for (int c = 0; c < 3; c++) {
      for (size_t bytes : sizes) {
        // nccl-tests convention: `bytes` is the larger of the two buffers.
        size_t count = bytes / 4;
        if (c != kAllReduce) count /= n;
        if (count == 0) continue;
        const size_t outBytes = (c == kAllGather ? count * n : count) * 4;
        for (int k = 0; k < n; k++) CHECK_CUDA(cudaMemset(t.out[k], 0xff, outBytes));  // NaN poison
        launch(t, Coll(c), count);
        syncAll(t);
        const size_t bad = verify(t, Coll(c), count);
        const int iters = int(std::clamp<size_t>((size_t(256) << 20) / bytes, 2, 20));
        launch(t, Coll(c), count);  // warm-up
        syncAll(t);
        const double t0 = nowSec();
        for (int i = 0; i < iters; i++) launch(t, Coll(c), count);
        syncAll(t);
        const double sec = (nowSec() - t0) / iters;
        const double algbw = double(count * 4 * (c == kAllReduce ? 1 : n)) / sec / 1e9;
        const double factor = c == kAllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
        const double busbw = algbw * factor;
        printf("%-14s %5d %12zu %12zu %10.1f %10.2f %10.2f %8zu\n", kCollNames[c], n, bytes, count, sec * 1e6, algbw,
               busbw, bad);
        fflush(stdout);
        Summary& s = summary[{c, n}];
        s.points++;
        s.errors += bad;
        if (busbw > s.bestBusBw) {
          s.bestBusBw = busbw;
          s.bestAt = bytes;
        }
        if (bad) failures++;
      }
    }
    for (int k = 0; k < n; k++) {
      CHECK_CUDA(cudaFree(t.in[k]));
      CHECK_CUDA(cudaFree(t.out[k]));
      CHECK_CUDA(cudaStreamDestroy(t.streams[k]));
      CHECK_WEFT(weftCommDestroy(t.comms[k]));
    }
  }

  // The reduce kernel alone vs a device-to-device copy of the same bytes.
  const size_t kBytes = std::min<size_t>(maxBytes, size_t(256) << 20);
  const size_t kCount = kBytes / 4;
  float *a, *b, *d;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&a), kBytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&b), kBytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&d), kBytes));
  CHECK_CUDA(cudaMemset(a, 0, kBytes));
  CHECK_CUDA(cudaMemset(b, 0, kBytes));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  weft::kernels::RedOp op;
  const int reps = 20;
  weft::cuda::launchReduce(d, a, b, kCount, op, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaEventRecord(e0));
  for (int i = 0; i < reps; i++) weft::cuda::launchReduce(d, a, b, kCount, op, nullptr);
  CHECK_CUDA(cudaEventRecord(e1));
  CHECK_CUDA(cudaEventSynchronize(e1));
  float msReduce = 0;
  CHECK_CUDA(cudaEventElapsedTime(&msReduce, e0, e1));
  CHECK_CUDA(cudaMemcpy(d, a, kBytes, cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaEventRecord(e0));
  for (int i = 0; i < reps; i++) CHECK_CUDA(cudaMemcpyAsync(d, a, kBytes, cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaEventRecord(e1));
  CHECK_CUDA(cudaEventSynchronize(e1));
  float msCopy = 0;
  CHECK_CUDA(cudaEventElapsedTime(&msCopy, e0, e1));
  // Bytes moved: reduce reads two and writes one buffer; a copy reads one, writes one.
  const double reduceGBs = 3.0 * kBytes * reps / (msReduce / 1e3) / 1e9;
  const double copyGBs = 2.0 * kBytes * reps / (msCopy / 1e3) / 1e9;

  printf("\n== summary ==\n");
  printf("%-14s %5s %8s %14s %12s %8s\n", "coll", "ranks", "points", "best_busbw", "at_bytes", "errors");
  for (auto& [key, s] : summary)
    printf("%-14s %5d %8d %11.2f GB/s %12zu %8zu\n", kCollNames[key.first], key.second, s.points, s.bestBusBw,
           s.bestAt, s.errors);
  printf("reduce kernel (float32 sum, %zu MiB): %.1f GB/s moved; cudaMemcpy DtoD: %.1f GB/s moved; ratio %.2f\n",
         kBytes >> 20, reduceGBs, copyGBs, reduceGBs / copyGBs);
  printf("RESULT: %s\n", failures ? "FAIL (mismatching elements above)" : "PASS");
  return failures ? 1 : 0;
}
