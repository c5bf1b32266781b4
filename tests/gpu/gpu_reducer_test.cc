// The bucketed reducer on GPU buffers: ranks as threads on GPU 0, gradients
// "produced" by a copy on each rank's own stream right before they are
// marked (so a bucket that did not wait for its producer would read stale
// data), buckets reduced on the reducer's stream, results written back at
// Wait and checked exactly against the sum (integer values). Also: host and
// device buffers mixed, and a stream given for host buffers.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/gpu_util.h"

namespace {

struct ThreadComms {
  std::vector<weftComm_t> comms;
  explicit ThreadComms(int n) : comms(n) {
    std::vector<int> devs(n, 0);
    EXPECT_EQ(weftCommInitAll(comms.data(), n, devs.data()), weftSuccess);
  }
  ~ThreadComms() {
    for (auto c : comms) weftCommDestroy(c);
  }
};

// Runs `steps` reducer steps on `n` ranks with three buffers (three
// buckets: 4 KiB buckets) and checks every element after each Wait.
std::string runReducer(int n, int average, int compress, int steps) {
  ThreadComms tc(n);
  const size_t counts[3] = {1000, 17, 3000};
  std::vector<std::string> problems(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; r++)
    threads.emplace_back([&, r] {
      std::string& p = problems[r];
      cudaStream_t producer;
      if (cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking) != cudaSuccess) return void(p = "stream");
      std::vector<float*> dev(3), staging(3);
      for (int b = 0; b < 3; b++) {
        cudaMalloc(reinterpret_cast<void**>(&dev[b]), counts[b] * 4);
        cudaMalloc(reinterpret_cast<void**>(&staging[b]), counts[b] * 4);
      }
      weftReducerConfig cfg = WEFT_REDUCER_CONFIG_INITIALIZER;
      cfg.bucketBytes = 4096;
      cfg.firstBucketBytes = 4096;
      cfg.average = average;
      cfg.compress = compress;
      if (compress == weftCompressTopK) cfg.ratio = 1.0;  // exact
      void* bufs[3] = {dev[0], dev[1], dev[2]};
      weftReducer_t red = nullptr;
      if (weftReducerCreate(tc.comms[r], 3, bufs, counts, weftFloat32, &cfg, &red) != weftSuccess)
        return void(p = "create: " + std::string(weftGetLastError(nullptr)));
      for (int t = 0; t < steps && p.empty(); t++) {
        for (int b = 2; b >= 0; b--) {
          std::vector<float> host(counts[b]);
          for (size_t i = 0; i < counts[b]; i++) host[i] = float(int((r * 5 + i * 3 + b + t) % 13) - 6);
          cudaMemcpy(staging[b], host.data(), counts[b] * 4, cudaMemcpyHostToDevice);
          // The gradient lands in dev[b] through the producer stream, queued
          // just before the mark: the bucket must wait for it.
          cudaMemcpyAsync(dev[b], staging[b], counts[b] * 4, cudaMemcpyDeviceToDevice, producer);
          if (weftReducerMarkReadyOnStream(red, b, producer) != weftSuccess) return void(p = "mark");
        }
        if (weftReducerWait(red) != weftSuccess) return void(p = "wait: " + std::string(weftGetLastError(nullptr)));
        for (int b = 0; b < 3 && p.empty(); b++) {
          std::vector<float> got(counts[b]);
          cudaMemcpy(got.data(), dev[b], counts[b] * 4, cudaMemcpyDeviceToHost);
          for (size_t i = 0; i < counts[b]; i++) {
            float sum = 0;
            for (int q = 0; q < n; q++) sum += float(int((q * 5 + i * 3 + b + t) % 13) - 6);
            const float want = average ? sum / float(n) : sum;
            if (got[i] != want) {
              p = "rank " + std::to_string(r) + " step " + std::to_string(t) + " buffer " + std::to_string(b) +
                  " element " + std::to_string(i) + ": " + std::to_string(got[i]) + ", want " + std::to_string(want);
              break;
            }
          }
        }
      }
      weftReducerDestroy(red);
      for (int b = 0; b < 3; b++) {
        cudaFree(dev[b]);
        cudaFree(staging[b]);
      }
      cudaStreamDestroy(producer);
    });
  for (auto& t : threads) t.join();
  std::string all;
  for (auto& p : problems) all += p.empty() ? "" : p + "\n";
  return all;
}

TEST(GpuReducer, SumsDeviceBucketsAfterTheirProducers) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(runReducer(2, 0, weftCompressNone, 3), "");
  EXPECT_EQ(runReducer(3, 1, weftCompressNone, 2), "");
}

TEST(GpuReducer, CompressedDeviceBucketsAveraged) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(runReducer(2, 1, weftCompressTopK, 2), "");
}

TEST(GpuReducer, MixedBuffersAndHostStreamsAreRefused) {
  SKIP_WITHOUT_GPU();
  ThreadComms tc(1);
  float* d = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d), 64));
  std::vector<float> h(16, 1.0f);
  void* mixed[2] = {d, h.data()};
  const size_t counts[2] = {16, 16};
  weftReducer_t red = nullptr;
  EXPECT_EQ(weftReducerCreate(tc.comms[0], 2, mixed, counts, weftFloat32, nullptr, &red), weftInvalidArgument);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("must all be host memory or all on one GPU"), std::string::npos)
      << weftGetLastError(nullptr);
  void* host[1] = {h.data()};
  ASSERT_EQ(weftReducerCreate(tc.comms[0], 1, host, counts, weftFloat32, nullptr, &red), weftSuccess);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  EXPECT_EQ(weftReducerMarkReadyOnStream(red, 0, s), weftInvalidUsage);
  EXPECT_EQ(weftReducerMarkReady(red, 0), weftSuccess);
  EXPECT_EQ(weftReducerWait(red), weftSuccess);
  EXPECT_EQ(weftReducerDestroy(red), weftSuccess);
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(d));
}

}  // namespace
