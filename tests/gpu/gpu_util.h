// Helpers shared by the GPU tests and the sweep: checked CUDA calls, a skip
// when no GPU is visible, and N ranks of one process on one GPU.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorName(e_) << " " << cudaGetErrorString(e_); \
  } while (0)

inline int visibleGpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

#define SKIP_WITHOUT_GPU()                                                                       \
  do {                                                                                           \
    if (visibleGpus() == 0) GTEST_SKIP() << "no GPU visible (cudaGetDeviceCount == 0 or no driver)"; \
  } while (0)

// n ranks of this process on GPU 0, as on a one-GPU machine: threads join the
// communicator at once, each rank with a non-blocking stream of its own.
// proto, when given, is WEFT_PROTO while the ranks initialise.
struct SharedGpuRanks {
  int n;
  std::vector<weftComm_t> comms;
  std::vector<cudaStream_t> streams;
  explicit SharedGpuRanks(int count, int timeoutMs = 20000, const char* proto = nullptr)
      : n(count), comms(count), streams(count) {
    // The CUDA context first: its creation (up to a second) must not eat
    // into a short init timeout.
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
    if (proto) setenv("WEFT_PROTO", proto, 1);
    weftUniqueId id;
    EXPECT_EQ(weftGetUniqueId(&id), weftSuccess);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; r++)
      threads.emplace_back([&, r] {
        (void)cudaSetDevice(0);
        weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
        cfg.timeoutMs = timeoutMs;
        EXPECT_EQ(weftCommInitRankConfig(&comms[r], n, id, r, &cfg), weftSuccess);
      });
    for (auto& t : threads) t.join();
    if (proto) unsetenv("WEFT_PROTO");
    for (auto& s : streams) EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  }
  ~SharedGpuRanks() {
    for (auto& s : streams) (void)cudaStreamDestroy(s);
    for (auto c : comms)
      if (c) weftCommDestroy(c);
  }
  SharedGpuRanks(const SharedGpuRanks&) = delete;
  SharedGpuRanks& operator=(const SharedGpuRanks&) = delete;
  // Every rank's communicator reports no asynchronous (kernel) error.
  void expectNoAsyncError() {
    for (auto c : comms) {
      weftResult_t async = weftSuccess;
      EXPECT_EQ(weftCommGetAsyncError(c, &async), weftSuccess);
      EXPECT_EQ(async, weftSuccess);
    }
  }
  // fn(rank) on one thread per rank (collectives of ranks sharing a GPU are
  // issued together), then every stream synchronised.
  void onAll(const std::function<void(int)>& fn) {
    std::vector<std::thread> t;
    for (int r = 0; r < n; r++) t.emplace_back([&, r] {
      (void)cudaSetDevice(0);
      fn(r);
    });
    for (auto& th : t) th.join();
    for (auto s : streams) EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
};
