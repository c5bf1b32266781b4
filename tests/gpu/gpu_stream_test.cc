// The device path's ordering and capture on a real GPU: CUDA graph capture
// and replay, two streams of one communicator, ranks sharing the GPU on the
// legacy default stream refused, a capture that would have to allocate
// refused cleanly, a new ring count captured with no eager call first,
// and a kernel failure reaching weftCommGetAsyncError through the status
// word. Every test skips, saying so, without a GPU.
#include <memory>
#include <string>
#include <thread>
#include <cstdlib>
#include <vector>

#include "src/exec/cuda/launch_policy.h"
#include "tests/gpu/gpu_util.h"

namespace {

struct DeviceFloats {
  float* p = nullptr;
  size_t n;
  explicit DeviceFloats(size_t count) : n(count) { EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), n * 4), cudaSuccess); }
  ~DeviceFloats() { (void)cudaFree(p); }
  void fill(float v, cudaStream_t s) {
    std::vector<float> h(n, v);
    EXPECT_EQ(cudaMemcpyAsync(p, h.data(), n * 4, cudaMemcpyHostToDevice, s), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  size_t countNot(float want) const {
    std::vector<float> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t bad = 0;
    for (float x : h) bad += x != want;
    return bad;
  }
};

void allReduceAll(SharedGpuRanks& r, std::vector<DeviceFloats*>& in, std::vector<DeviceFloats*>& out) {
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  for (size_t k = 0; k < r.comms.size(); k++)
    ASSERT_EQ(weftAllReduce(in[k]->p, out[k]->p, in[k]->n, weftFloat32, weftSum, r.comms[k], r.streams[k]), weftSuccess);
  ASSERT_EQ(weftGroupEnd(), weftSuccess);
}

class GpuGraph : public ::testing::TestWithParam<int> {};

// Captured once (after one eager call of the same shape), replayed 100
// times; every replay reads the input as it is at launch time.
TEST_P(GpuGraph, CaptureOnceReplayHundredTimes) {
  SKIP_WITHOUT_GPU();
  const int n = GetParam();
  const size_t count = 1 << 16;
  SharedGpuRanks r(n, 20000);
  std::vector<std::unique_ptr<DeviceFloats>> ins, outs;
  std::vector<DeviceFloats*> in, out;
  for (int k = 0; k < n; k++) {
    ins.push_back(std::make_unique<DeviceFloats>(count));
    outs.push_back(std::make_unique<DeviceFloats>(count));
    in.push_back(ins.back().get());
    out.push_back(outs.back().get());
    in[k]->fill(1.0f, r.streams[k]);
  }
  allReduceAll(r, in, out);  // the warm-up: plans, connections, scratch
  for (int k = 0; k < n; k++) CUDA_OK(cudaStreamSynchronize(r.streams[k]));
  std::vector<cudaGraph_t> graphs(n);
  std::vector<cudaGraphExec_t> execs(n);
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaStreamBeginCapture(r.streams[k], cudaStreamCaptureModeThreadLocal));
    ASSERT_EQ(weftAllReduce(in[k]->p, out[k]->p, count, weftFloat32, weftSum, r.comms[k], r.streams[k]), weftSuccess);
    CUDA_OK(cudaStreamEndCapture(r.streams[k], &graphs[k]));
    CUDA_OK(cudaGraphInstantiate(&execs[k], graphs[k], 0));
  }
  for (int it = 1; it <= 100; it++) {
    for (int k = 0; k < n; k++) in[k]->fill(float(it), r.streams[k]);
    for (int k = 0; k < n; k++) CUDA_OK(cudaGraphLaunch(execs[k], r.streams[k]));
    for (int k = 0; k < n; k++) CUDA_OK(cudaStreamSynchronize(r.streams[k]));
    for (int k = 0; k < n; k++) ASSERT_EQ(out[k]->countNot(float(it) * n), 0u) << "replay " << it << " rank " << k;
  }
  for (int k = 0; k < n; k++) {
    weftResult_t async = weftSuccess;
    ASSERT_EQ(weftCommGetAsyncError(r.comms[k], &async), weftSuccess);
    EXPECT_EQ(async, weftSuccess);
    CUDA_OK(cudaGraphExecDestroy(execs[k]));
    CUDA_OK(cudaGraphDestroy(graphs[k]));
  }
  // Eager calls still run after the graphs are gone (their memory released).
  for (int k = 0; k < n; k++) in[k]->fill(3.0f, r.streams[k]);
  allReduceAll(r, in, out);
  for (int k = 0; k < n; k++) CUDA_OK(cudaStreamSynchronize(r.streams[k]));
  for (int k = 0; k < n; k++) EXPECT_EQ(out[k]->countNot(3.0f * n), 0u);
}

INSTANTIATE_TEST_SUITE_P(RanksOnOneGpu, GpuGraph, ::testing::Values(1, 2));

// A call inside capture that would have to upload its plan is refused with
// weftInvalidUsage, and the capture itself stays valid. Two ranks: a
// one-rank call is a plain copy, which needs no plan on the device.
// A call inside capture that would have to allocate is refused cleanly:
// a Send/Recv to self goes through scratch, and WEFT_DEVICE_SCRATCH=1024
// reserves less than its 4000 bytes. The capture stays valid; the same call
// outside capture then grows the scratch (allocation in the call path,
// logged) and is correct, after which a capture of it goes through.
TEST(GpuGraphRefusal, CaptureThatWouldAllocateIsRefusedCleanly) {
  SKIP_WITHOUT_GPU();
  setenv("WEFT_DEVICE_SCRATCH", "1024", 1);
  SharedGpuRanks r(2, 20000);
  unsetenv("WEFT_DEVICE_SCRATCH");
  std::vector<std::unique_ptr<DeviceFloats>> a, b;
  for (int k = 0; k < 2; k++) {
    a.push_back(std::make_unique<DeviceFloats>(1000));
    b.push_back(std::make_unique<DeviceFloats>(1000));
  }
  auto selfCopy = [&](int k) {
    EXPECT_EQ(weftGroupStart(), weftSuccess);
    EXPECT_EQ(weftSend(a[k]->p, 1000, weftFloat32, k, r.comms[k], r.streams[k]), weftSuccess);
    EXPECT_EQ(weftRecv(b[k]->p, 1000, weftFloat32, k, r.comms[k], r.streams[k]), weftSuccess);
    return weftGroupEnd();
  };
  for (int k = 0; k < 2; k++) {
    CUDA_OK(cudaStreamBeginCapture(r.streams[k], cudaStreamCaptureModeThreadLocal));
    EXPECT_EQ(selfCopy(k), weftInvalidUsage);
    cudaGraph_t g = nullptr;
    CUDA_OK(cudaStreamEndCapture(r.streams[k], &g));
    CUDA_OK(cudaGraphDestroy(g));
    a[k]->fill(2.0f + k, r.streams[k]);
  }
  r.onAll([&](int k) { EXPECT_EQ(selfCopy(k), weftSuccess); });
  for (int k = 0; k < 2; k++) EXPECT_EQ(b[k]->countNot(2.0f + k), 0u);
  for (int k = 0; k < 2; k++) {
    CUDA_OK(cudaMemsetAsync(b[k]->p, 0xff, 4000, r.streams[k]));
    CUDA_OK(cudaStreamBeginCapture(r.streams[k], cudaStreamCaptureModeThreadLocal));
    EXPECT_EQ(selfCopy(k), weftSuccess);
    cudaGraph_t g = nullptr;
    CUDA_OK(cudaStreamEndCapture(r.streams[k], &g));
    cudaGraphExec_t exec = nullptr;
    CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_OK(cudaGraphLaunch(exec, r.streams[k]));
    CUDA_OK(cudaStreamSynchronize(r.streams[k]));
    EXPECT_EQ(b[k]->countNot(2.0f + k), 0u);
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(g));
  }
  r.expectNoAsyncError();
}

// A ring AllReduce at a count never called before, captured with no eager
// call first: init mapped the ring's FIFOs, the plan image goes into the
// arena by a copy node of the graph, scratch is not needed. No set-up
// action during the capture; 20 replays of new inputs are correct.
TEST(GpuGraphCapture, NewRingCountCapturesWithoutAnEagerCall) {
  SKIP_WITHOUT_GPU();
  setenv("WEFT_ALGO", "ring", 1);
  SharedGpuRanks r(2, 20000);
  unsetenv("WEFT_ALGO");
  const size_t count = 12345;
  std::vector<std::unique_ptr<DeviceFloats>> a, b;
  for (int k = 0; k < 2; k++) {
    a.push_back(std::make_unique<DeviceFloats>(count));
    b.push_back(std::make_unique<DeviceFloats>(count));
  }
  std::vector<cudaGraphExec_t> exec(2, nullptr);
  std::vector<cudaGraph_t> graphs(2, nullptr);
  const uint64_t before = weft::cuda::deviceSetupActions().load();
  for (int k = 0; k < 2; k++) {
    CUDA_OK(cudaStreamBeginCapture(r.streams[k], cudaStreamCaptureModeThreadLocal));
    EXPECT_EQ(weftAllReduce(a[k]->p, b[k]->p, count, weftFloat32, weftSum, r.comms[k], r.streams[k]), weftSuccess);
    CUDA_OK(cudaStreamEndCapture(r.streams[k], &graphs[k]));
    CUDA_OK(cudaGraphInstantiate(&exec[k], graphs[k], 0));
  }
  EXPECT_EQ(weft::cuda::deviceSetupActions().load(), before) << "the capture allocated, mapped or uploaded";
  for (int it = 1; it <= 20; it++) {
    for (int k = 0; k < 2; k++) {
      a[k]->fill(float(it * (k + 1)), r.streams[k]);
      CUDA_OK(cudaMemsetAsync(b[k]->p, 0xff, count * 4, r.streams[k]));
    }
    r.onAll([&](int k) { CUDA_OK(cudaGraphLaunch(exec[k], r.streams[k])); });
    for (int k = 0; k < 2; k++) ASSERT_EQ(b[k]->countNot(float(it * 3)), 0u) << "replay " << it;
  }
  for (int k = 0; k < 2; k++) {
    CUDA_OK(cudaGraphExecDestroy(exec[k]));
    CUDA_OK(cudaGraphDestroy(graphs[k]));
  }
  r.expectNoAsyncError();
}

// One rank: every collective is a copy on the caller's stream (nothing in
// place), so it can be captured with no warm-up and replays correctly.
TEST(GpuOneRank, CollectivesAreCopiesThatCaptureWithoutWarmUp) {
  SKIP_WITHOUT_GPU();
  SharedGpuRanks r(1, 20000);
  DeviceFloats a(4099), b(4099);
  cudaStream_t s = r.streams[0];
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  EXPECT_EQ(weftAllReduce(a.p, b.p, 4099, weftFloat32, weftSum, r.comms[0], s), weftSuccess);
  EXPECT_EQ(weftAllReduce(b.p, b.p, 4099, weftFloat32, weftAvg, r.comms[0], s), weftSuccess);
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  for (int it = 1; it <= 3; it++) {
    a.fill(float(it), s);
    CUDA_OK(cudaMemsetAsync(b.p, 0xff, 4099 * 4, s));  // poison: NaN
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(b.countNot(float(it)), 0u) << "replay " << it;
  }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  // Eager, every collective: out of place a copy, in place untouched.
  a.fill(5.0f, s);
  CUDA_OK(cudaMemsetAsync(b.p, 0xff, 4099 * 4, s));
  EXPECT_EQ(weftBroadcast(a.p, b.p, 4099, weftFloat32, 0, r.comms[0], s), weftSuccess);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(b.countNot(5.0f), 0u);
  CUDA_OK(cudaMemsetAsync(b.p, 0xff, 4099 * 4, s));
  EXPECT_EQ(weftAllGather(a.p, b.p, 4099, weftFloat32, r.comms[0], s), weftSuccess);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(b.countNot(5.0f), 0u);
  EXPECT_EQ(weftReduceScatter(a.p, a.p, 4099, weftFloat32, weftMax, r.comms[0], s), weftSuccess);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(a.countNot(5.0f), 0u);
  r.expectNoAsyncError();
}

// Two calls of each rank on two streams, on different buffers: the
// communicator orders them, and each stream sees its own result.
TEST(GpuStreams, TwoStreamsOfOneCommunicator) {
  SKIP_WITHOUT_GPU();
  const int n = 2;
  const size_t count = 1 << 20;
  SharedGpuRanks r(n, 20000);
  std::vector<cudaStream_t> second(n);
  for (auto& s : second) CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<std::unique_ptr<DeviceFloats>> a, b, c, d;
  for (int k = 0; k < n; k++) {
    a.push_back(std::make_unique<DeviceFloats>(count));
    b.push_back(std::make_unique<DeviceFloats>(count));
    c.push_back(std::make_unique<DeviceFloats>(count));
    d.push_back(std::make_unique<DeviceFloats>(count));
    a[k]->fill(1.0f + k, r.streams[k]);
    c[k]->fill(10.0f * (k + 1), second[k]);
  }
  for (int round = 0; round < 20; round++) {
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    for (int k = 0; k < n; k++) {
      ASSERT_EQ(weftAllReduce(a[k]->p, b[k]->p, count, weftFloat32, weftSum, r.comms[k], r.streams[k]), weftSuccess);
      ASSERT_EQ(weftAllReduce(c[k]->p, d[k]->p, count, weftFloat32, weftSum, r.comms[k], second[k]), weftSuccess);
    }
    ASSERT_EQ(weftGroupEnd(), weftSuccess);
  }
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaStreamSynchronize(r.streams[k]));
    CUDA_OK(cudaStreamSynchronize(second[k]));
    EXPECT_EQ(b[k]->countNot(3.0f), 0u);
    EXPECT_EQ(d[k]->countNot(30.0f), 0u);
  }
  for (auto s : second) CUDA_OK(cudaStreamDestroy(s));
}

TEST(GpuStreams, LegacyDefaultStreamRefusedForRanksSharingTheGpu) {
  SKIP_WITHOUT_GPU();
  SharedGpuRanks r(2, 20000);
  DeviceFloats a(64), b(64);
  EXPECT_EQ(weftAllReduce(a.p, b.p, 64, weftFloat32, weftSum, r.comms[0], nullptr), weftInvalidUsage);
  EXPECT_EQ(weftAllReduce(a.p, b.p, 64, weftFloat32, weftSum, r.comms[0], cudaStreamLegacy), weftInvalidUsage);
  EXPECT_NE(std::string(weftGetLastError(r.comms[0])).find("legacy default stream"), std::string::npos)
      << weftGetLastError(r.comms[0]);
}

TEST(GpuStreams, CallerDeviceIsRestored) {
  SKIP_WITHOUT_GPU();
  if (visibleGpus() < 2) GTEST_SKIP() << "needs two GPUs to tell the devices apart";
  SharedGpuRanks r(1, 20000);  // on GPU 0
  DeviceFloats a(64), b(64);
  CUDA_OK(cudaSetDevice(1));
  ASSERT_EQ(weftAllReduce(a.p, b.p, 64, weftFloat32, weftSum, r.comms[0], r.streams[0]), weftSuccess);
  int now = -1;
  CUDA_OK(cudaGetDevice(&now));
  EXPECT_EQ(now, 1);
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaStreamSynchronize(r.streams[0]));
}

// Rank 0 calls, rank 1 never does: rank 0's kernel stops at the timeout
// and says so in the status word, which weftCommGetAsyncError reads.
TEST(GpuAsyncError, KernelTimeoutReachesGetAsyncError) {
  SKIP_WITHOUT_GPU();
  SharedGpuRanks r(2, 1500);
  DeviceFloats a(1 << 16), b(1 << 16);
  ASSERT_EQ(weftAllReduce(a.p, b.p, 1 << 16, weftFloat32, weftSum, r.comms[0], r.streams[0]), weftSuccess);
  CUDA_OK(cudaStreamSynchronize(r.streams[0]));  // the kernel ends itself at the timeout
  weftResult_t async = weftSuccess;
  ASSERT_EQ(weftCommGetAsyncError(r.comms[0], &async), weftSuccess);
  EXPECT_EQ(async, weftTimeout);
  EXPECT_NE(std::string(weftGetLastError(r.comms[0])).find("device executor stopped"), std::string::npos)
      << weftGetLastError(r.comms[0]);
  // The next call is refused with the same error.
  EXPECT_NE(weftAllReduce(a.p, b.p, 64, weftFloat32, weftSum, r.comms[0], r.streams[0]), weftSuccess);
  EXPECT_EQ(weftCommAbort(r.comms[0]), weftSuccess);
  r.comms[0] = nullptr;
}

}  // namespace
