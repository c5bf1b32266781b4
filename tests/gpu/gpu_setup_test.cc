// Set-up out of the call path on a real GPU: after init and weftCommWarmup,
// device calls of every warmed shape, at counts never seen before, make no
// set-up action (no allocation, registration, FIFO mapping or copy from
// pageable memory: deviceSetupActions(), src/exec/cuda/launch_policy.h).
// Two ranks share GPU 0, as on a one-GPU machine. And groups of more
// point-to-point calls than a launch carries inline (65, 128, 257: their
// bindings go in a table in device memory), eager and captured. Skips
// without a GPU.
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "src/exec/cuda/launch_policy.h"
#include "tests/gpu/gpu_util.h"

namespace {

uint64_t setupActions() { return weft::cuda::deviceSetupActions().load(); }

// Every collective at several counts (each a plan the warm-up never saw),
// integer-valued floats so every sum is exact; checks AllReduce's result.
void callEveryShape(SharedGpuRanks& r, const std::vector<float*>& in, const std::vector<float*>& out, size_t count) {
  const int n = r.n;
  r.onAll([&](int k) {
    weftComm_t c = r.comms[k];
    cudaStream_t s = r.streams[k];
    EXPECT_EQ(weftAllReduce(in[k], out[k], count, weftFloat32, weftSum, c, s), weftSuccess);
  });
  for (int k = 0; k < n; k++) {
    std::vector<float> h(count);
    EXPECT_EQ(cudaMemcpy(h.data(), out[k], count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < count; i++) ASSERT_EQ(h[i], float(n * (n + 1) / 2)) << "count " << count << " at " << i;
  }
  r.onAll([&](int k) {
    weftComm_t c = r.comms[k];
    cudaStream_t s = r.streams[k];
    EXPECT_EQ(weftAllGather(in[k], out[k], count / n, weftFloat32, c, s), weftSuccess);
    EXPECT_EQ(weftReduceScatter(in[k], out[k], count / n, weftFloat32, weftSum, c, s), weftSuccess);
    EXPECT_EQ(weftBroadcast(in[k], out[k], count, weftFloat32, 0, c, s), weftSuccess);
    EXPECT_EQ(weftReduce(in[k], out[k], count, weftFloat32, weftSum, 1, c, s), weftSuccess);
    EXPECT_EQ(weftAlltoAll(in[k], out[k], count / n, weftFloat32, c, s), weftSuccess);
    EXPECT_EQ(weftGroupStart(), weftSuccess);
    const int peer = (k + 1) % n, from = (k + n - 1) % n;
    EXPECT_EQ(weftSend(in[k], count, weftFloat32, peer, c, s), weftSuccess);
    EXPECT_EQ(weftRecv(out[k], count, weftFloat32, from, c, s), weftSuccess);
    EXPECT_EQ(weftGroupEnd(), weftSuccess);
  });
}

void noSetupAfterWarmup(const char* proto) {
  const int n = 2;
  SharedGpuRanks r(n, 20000, proto);
  const size_t most = size_t(1) << 20;
  std::vector<float*> in(n), out(n);
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&in[k]), most * 4));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&out[k]), most * 4));
    std::vector<float> h(most, float(k + 1));
    CUDA_OK(cudaMemcpy(in[k], h.data(), most * 4, cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaDeviceSynchronize());  // the ranks' streams do not wait for the legacy stream
  r.onAll([&](int k) { EXPECT_EQ(weftCommWarmup(r.comms[k]), weftSuccess); });
  const uint64_t before = setupActions();
  for (size_t count : {size_t(64), size_t(1000), size_t(4096) * 3, size_t(1) << 18, most})
    callEveryShape(r, in, out, count);
  EXPECT_EQ(setupActions(), before) << "device calls after weftCommWarmup allocated, registered or mapped";
  r.expectNoAsyncError();
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaFree(in[k]));
    CUDA_OK(cudaFree(out[k]));
  }
}

TEST(GpuSetup, NoSetupActionAfterWarmup) {
  SKIP_WITHOUT_GPU();
  noSetupAfterWarmup(nullptr);
}

TEST(GpuSetup, NoSetupActionAfterWarmupWithLl) {
  SKIP_WITHOUT_GPU();
  noSetupAfterWarmup("ll");
}

// Init alone (WEFT_DEVICE_SETUP, the default) sets up the ring and its ll
// connections: ring AllReduces of new counts, small ones on ll, need
// nothing more.
TEST(GpuSetup, RingCallsNeedNoSetupAfterInit) {
  SKIP_WITHOUT_GPU();
  const int n = 2;
  setenv("WEFT_ALGO", "ring", 1);
  SharedGpuRanks r(n);
  unsetenv("WEFT_ALGO");
  const size_t most = size_t(1) << 20;
  std::vector<float*> in(n), out(n);
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&in[k]), most * 4));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&out[k]), most * 4));
  }
  const uint64_t before = setupActions();
  for (size_t count : {size_t(16), size_t(5000), most})
    r.onAll([&](int k) {
      EXPECT_EQ(weftAllReduce(in[k], out[k], count, weftFloat32, weftSum, r.comms[k], r.streams[k]), weftSuccess);
    });
  EXPECT_EQ(setupActions(), before) << "ring AllReduces after init allocated, registered or mapped";
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaFree(in[k]));
    CUDA_OK(cudaFree(out[k]));
  }
}

// Scratch (Send/Recv to self) and in-place AllToAll staging come from the
// blocks reserved at init (WEFT_DEVICE_SCRATCH, 16 MiB by default): after
// weftCommWarmup, such calls of several sizes within the reserve make no
// set-up action, and their results are right.
TEST(GpuSetup, ScratchAndStagingWithinTheReserveNeedNoSetup) {
  SKIP_WITHOUT_GPU();
  const int n = 2;
  SharedGpuRanks r(n);
  const size_t most = size_t(1) << 20;  // 4 MiB of float32 per buffer
  std::vector<float*> in(n), out(n);
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&in[k]), most * 4));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&out[k]), most * 4));
  }
  r.onAll([&](int k) { EXPECT_EQ(weftCommWarmup(r.comms[k]), weftSuccess); });
  const uint64_t before = setupActions();
  for (size_t count : {size_t(100), size_t(4096) * 5 + 3, most}) {
    for (int k = 0; k < n; k++) {
      std::vector<float> h(count);
      for (size_t i = 0; i < count; i++) h[i] = float(k * 1000 + int(i % 997));
      CUDA_OK(cudaMemcpyAsync(in[k], h.data(), count * 4, cudaMemcpyHostToDevice, r.streams[k]));
      CUDA_OK(cudaStreamSynchronize(r.streams[k]));
    }
    r.onAll([&](int k) {
      EXPECT_EQ(weftGroupStart(), weftSuccess);
      EXPECT_EQ(weftSend(in[k], count, weftFloat32, k, r.comms[k], r.streams[k]), weftSuccess);
      EXPECT_EQ(weftRecv(out[k], count, weftFloat32, k, r.comms[k], r.streams[k]), weftSuccess);
      EXPECT_EQ(weftGroupEnd(), weftSuccess);
    });
    for (int k = 0; k < n; k++) {
      std::vector<float> h(count);
      CUDA_OK(cudaMemcpy(h.data(), out[k], count * 4, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < count; i++) ASSERT_EQ(h[i], float(k * 1000 + int(i % 997))) << "self copy at " << i;
    }
    // In place: block j of rank k's buffer goes to rank j's block k.
    const size_t block = count / n;
    r.onAll([&](int k) {
      EXPECT_EQ(weftAlltoAll(in[k], in[k], block, weftFloat32, r.comms[k], r.streams[k]), weftSuccess);
    });
    for (int k = 0; k < n; k++) {
      std::vector<float> h(block * n);
      CUDA_OK(cudaMemcpy(h.data(), in[k], block * n * 4, cudaMemcpyDeviceToHost));
      for (int j = 0; j < n; j++)
        for (size_t i = 0; i < block; i++)
          ASSERT_EQ(h[j * block + i], float(j * 1000 + int((k * block + i) % 997))) << "alltoall from " << j;
    }
  }
  EXPECT_EQ(setupActions(), before) << "scratch or staging within WEFT_DEVICE_SCRATCH was allocated in a call";
  r.expectNoAsyncError();
  for (int k = 0; k < n; k++) {
    CUDA_OK(cudaFree(in[k]));
    CUDA_OK(cudaFree(out[k]));
  }
}

// Rank k's calls alternate send and receive (rank 0 starts with a send,
// rank 1 with a receive), each call its own buffer of a different size;
// every receive must hold what the peer's matching send held.
struct LargeGroup {
  std::vector<char*> bufs;
  std::vector<size_t> counts;
  std::vector<bool> isSend;
};

size_t bytesOf(int rank, int k) { return 1 + size_t(k * 37 + rank * 11) % 3000; }

LargeGroup makeLargeGroup(int rank, int nCalls) {
  LargeGroup g;
  int sends = 0, recvs = 0;
  for (int i = 0; i < nCalls; i++) {
    const bool send = (i + rank) % 2 == 0;
    const size_t bytes = send ? bytesOf(rank, sends++) : bytesOf(1 - rank, recvs++);
    char* p = nullptr;
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), bytes), cudaSuccess);
    std::vector<char> h(bytes, char(0x11 * (i % 7)));
    if (send)
      for (size_t j = 0; j < bytes; j++) h[j] = char(rank * 101 + j * 7 + i);
    EXPECT_EQ(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    g.bufs.push_back(p);
    g.counts.push_back(bytes);
    g.isSend.push_back(send);
  }
  // The copies above went on the legacy stream, which the ranks' streams
  // (non-blocking) do not wait for.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return g;
}

void issueGroup(const LargeGroup& g, int rank, weftComm_t c, cudaStream_t s) {
  EXPECT_EQ(weftGroupStart(), weftSuccess);
  for (size_t i = 0; i < g.bufs.size(); i++) {
    if (g.isSend[i]) EXPECT_EQ(weftSend(g.bufs[i], g.counts[i], weftUint8, 1 - rank, c, s), weftSuccess);
    else EXPECT_EQ(weftRecv(g.bufs[i], g.counts[i], weftUint8, 1 - rank, c, s), weftSuccess);
  }
  EXPECT_EQ(weftGroupEnd(), weftSuccess);
}

// Every receive of `g` (rank `rank`) against the peer's sends.
std::string checkReceived(const LargeGroup& g, int rank) {
  int recvs = 0;
  for (size_t i = 0; i < g.bufs.size(); i++) {
    if (g.isSend[i]) continue;
    const int k = recvs++;
    std::vector<char> h(g.counts[i]);
    if (cudaMemcpy(h.data(), g.bufs[i], h.size(), cudaMemcpyDeviceToHost) != cudaSuccess) return "copy failed";
    // The peer's k-th send is its call 2k (rank 0 sends first) or 2k + 1.
    const int peer = 1 - rank, call = 2 * k + (peer == 0 ? 0 : 1);
    for (size_t j = 0; j < h.size(); j++)
      if (h[j] != char(peer * 101 + j * 7 + call))
        return "rank " + std::to_string(rank) + " receive " + std::to_string(k) + " byte " + std::to_string(j);
  }
  return {};
}

TEST(GpuLargeGroup, BindingsPastTheLaunchArgumentsEagerAndCaptured) {
  SKIP_WITHOUT_GPU();
  SharedGpuRanks r(2);
  for (int nCalls : {65, 128, 257}) {
    std::vector<LargeGroup> g{makeLargeGroup(0, nCalls), makeLargeGroup(1, nCalls)};
    r.onAll([&](int k) { issueGroup(g[k], k, r.comms[k], r.streams[k]); });
    for (int k = 0; k < 2; k++) EXPECT_EQ(checkReceived(g[k], k), "") << nCalls << " calls, eager";
    // The same group captured (its image was made by the eager call) and
    // replayed: the table's copy is part of the graph.
    std::vector<cudaGraph_t> graphs(2);
    std::vector<cudaGraphExec_t> execs(2);
    for (int k = 0; k < 2; k++) {
      CUDA_OK(cudaStreamBeginCapture(r.streams[k], cudaStreamCaptureModeThreadLocal));
      issueGroup(g[k], k, r.comms[k], r.streams[k]);
      CUDA_OK(cudaStreamEndCapture(r.streams[k], &graphs[k]));
      CUDA_OK(cudaGraphInstantiate(&execs[k], graphs[k], 0));
    }
    for (int rep = 0; rep < 3; rep++) {
      for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < g[k].bufs.size(); i++)
          if (!g[k].isSend[i]) CUDA_OK(cudaMemsetAsync(g[k].bufs[i], 0, g[k].counts[i], r.streams[k]));
      for (int k = 0; k < 2; k++) CUDA_OK(cudaGraphLaunch(execs[k], r.streams[k]));
      for (int k = 0; k < 2; k++) CUDA_OK(cudaStreamSynchronize(r.streams[k]));
      for (int k = 0; k < 2; k++) EXPECT_EQ(checkReceived(g[k], k), "") << nCalls << " calls, replay " << rep;
    }
    for (int k = 0; k < 2; k++) {
      CUDA_OK(cudaGraphExecDestroy(execs[k]));
      CUDA_OK(cudaGraphDestroy(graphs[k]));
      for (char* p : g[k].bufs) CUDA_OK(cudaFree(p));
    }
  }
}

}  // namespace
