// The device LL protocol and weftCommWarmup on a real GPU: two ranks sharing
// GPU 0 with WEFT_PROTO=ll (small calls take the interpreter's LL lines),
// many calls so the flags advance far, every collective LL carries, and a
// warm-up followed by a captured graph replayed. Skips without a GPU.
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/gpu_util.h"

namespace {

std::vector<float> download(const float* p, size_t n) {
  std::vector<float> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), p, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// Small integer-valued floats: sums are exact whatever the order.
TEST(GpuLl, SmallCallsOfEveryCollectiveManyTimes) {
  SKIP_WITHOUT_GPU();
  const int n = 2;
  SharedGpuRanks r(n, 20000, "ll");
  for (size_t count : {size_t(1), size_t(7), size_t(100), size_t(3000)}) {
    std::vector<float*> in(n), out(n);
    for (int k = 0; k < n; k++) {
      CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&in[k]), count * n * 4));
      CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&out[k]), count * n * 4));
    }
    for (int it = 0; it < 200; it++) {
      for (int k = 0; k < n; k++) {
        std::vector<float> h(count * n, float(k + 1 + it % 5));
        CUDA_OK(cudaMemcpy(in[k], h.data(), h.size() * 4, cudaMemcpyHostToDevice));
      }
      const float sum = float(3 + 2 * (it % 5));
      r.onAll([&](int k) {
        const weftDataType_t f = weftFloat32;
        EXPECT_EQ(weftAllReduce(in[k], out[k], count, f, weftSum, r.comms[k], r.streams[k]), weftSuccess);
      });
      for (int k = 0; k < n; k++)
        for (float x : download(out[k], count)) ASSERT_EQ(x, sum) << "AllReduce count " << count << " call " << it;
      if (it % 50) continue;
      r.onAll([&](int k) {
        EXPECT_EQ(weftReduceScatter(in[k], out[k], count, weftFloat32, weftSum, r.comms[k], r.streams[k]), weftSuccess);
      });
      for (int k = 0; k < n; k++)
        for (float x : download(out[k], count)) ASSERT_EQ(x, sum) << "ReduceScatter count " << count;
      r.onAll([&](int k) {
        EXPECT_EQ(weftAllGather(in[k], out[k], count, weftFloat32, r.comms[k], r.streams[k]), weftSuccess);
      });
      for (int k = 0; k < n; k++) {
        const std::vector<float> h = download(out[k], count * n);
        for (size_t i = 0; i < h.size(); i++) ASSERT_EQ(h[i], float(i / count + 1 + it % 5)) << "AllGather";
      }
      r.onAll([&](int k) {
        EXPECT_EQ(weftBroadcast(in[k], out[k], count, weftFloat32, 1, r.comms[k], r.streams[k]), weftSuccess);
      });
      for (int k = 0; k < n; k++)
        for (float x : download(out[k], count)) ASSERT_EQ(x, float(2 + it % 5)) << "Broadcast";
    }
    r.expectNoAsyncError();
    for (int k = 0; k < n; k++) {
      CUDA_OK(cudaFree(in[k]));
      CUDA_OK(cudaFree(out[k]));
    }
  }
}

// weftCommWarmup on every rank, one eager call of the shape (its plan
// image), then the call captured once and replayed 100 times.
TEST(GpuLl, WarmupThenCaptureAndReplay) {
  SKIP_WITHOUT_GPU();
  const int n = 2;
  const size_t count = 64;
  SharedGpuRanks r(n, 20000, "ll");
  r.onAll([&](int k) { EXPECT_EQ(weftCommWarmup(r.comms[k]), weftSuccess); });
  std::vector<float*> in(n), out(n);
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&in[k]), count * 4));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&out[k]), count * 4));
  }
  auto fill = [&](float v) {
    std::vector<float> h(count, v);
    for (int k = 0; k < n; k++) EXPECT_EQ(cudaMemcpy(in[k], h.data(), count * 4, cudaMemcpyHostToDevice), cudaSuccess);
  };
  fill(1.0f);
  r.onAll([&](int k) {
    EXPECT_EQ(weftAllReduce(in[k], out[k], count, weftFloat32, weftSum, r.comms[k], r.streams[k]), weftSuccess);
  });
  std::vector<cudaGraph_t> graphs(n);
  std::vector<cudaGraphExec_t> execs(n);
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaStreamBeginCapture(r.streams[k], cudaStreamCaptureModeThreadLocal));
    ASSERT_EQ(weftAllReduce(in[k], out[k], count, weftFloat32, weftSum, r.comms[k], r.streams[k]), weftSuccess);
    CUDA_OK(cudaStreamEndCapture(r.streams[k], &graphs[k]));
    CUDA_OK(cudaGraphInstantiate(&execs[k], graphs[k], 0));
  }
  for (int it = 1; it <= 100; it++) {
    fill(float(it));
    for (int k = 0; k < n; k++) CUDA_OK(cudaGraphLaunch(execs[k], r.streams[k]));
    for (int k = 0; k < n; k++) CUDA_OK(cudaStreamSynchronize(r.streams[k]));
    for (int k = 0; k < n; k++)
      for (float x : download(out[k], count)) ASSERT_EQ(x, float(it * n)) << "replay " << it;
  }
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaGraphExecDestroy(execs[k]));
    CUDA_OK(cudaGraphDestroy(graphs[k]));
    CUDA_OK(cudaFree(in[k]));
    CUDA_OK(cudaFree(out[k]));
  }
}

}  // namespace
