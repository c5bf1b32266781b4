// The p2p transport (CUDA IPC / direct device pointers) under the device
// executor: two ranks as threads sharing GPU 0, a small in-memory bootstrap
// for the handshake, and a ring AllReduce plan run over the p2p FIFOs.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unistd.h>

#include "algorithms/ring.h"
#include "src/exec/cuda/device_state.h"
#include "src/util/error.h"
#include "tests/gpu/gpu_util.h"
#include "transports/p2p/p2p_transport.h"

using namespace weft;

namespace {

// Messages between ranks of one process: enough for transport handshakes.
struct Mailroom {
  std::mutex m;
  std::condition_variable cv;
  std::map<std::tuple<int, int, uint64_t>, std::deque<std::vector<char>>> boxes;  // (from, to, tag)
};

class MemoryBootstrap : public Bootstrap {
 public:
  MemoryBootstrap(Mailroom* room, int rank, int nranks) : room_(room), rank_(rank), nranks_(nranks) {}
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  const Secret& secret() const override { return secret_; }
  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    std::lock_guard<std::mutex> l(room_->m);
    const char* c = static_cast<const char*>(data);
    room_->boxes[{rank_, peer, tag}].emplace_back(c, c + bytes);
    room_->cv.notify_all();
  }
  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    std::unique_lock<std::mutex> l(room_->m);
    auto& box = room_->boxes[{peer, rank_, tag}];
    if (!room_->cv.wait_for(l, std::chrono::seconds(20), [&] { return !box.empty(); }))
      throw Error(weftTimeout, "memory bootstrap: no message");
    if (box.front().size() != bytes) throw Error(weftInternalError, "memory bootstrap: size mismatch");
    memcpy(data, box.front().data(), bytes);
    box.pop_front();
  }
  void allGather(void*, size_t) override { throw Error(weftInternalError, "unused"); }
  void barrier() override {}
  void abort() override {}
  void setPeerLostHandler(std::function<void(int)>) override {}
  void shutdown() override {}

 private:
  Mailroom* room_;
  int rank_, nranks_;
  Secret secret_{};
};

TEST(GpuP2p, RingAllReduceOverP2pFifosOnOneGpu) {
  SKIP_WITHOUT_GPU();
  constexpr int kRanks = 2;
  const size_t count = 3 * 1024 * 1024 + 5;
  Mailroom room;
  std::vector<PeerInfo> peers(kRanks);
  for (int r = 0; r < kRanks; r++) {
    peers[r].rank = r;
    peers[r].pid = getpid();
    peers[r].hostHash = 1;
    peers[r].processHash = 2;
    peers[r].cudaDev = 0;
  }
  std::vector<std::vector<float>> host(kRanks, std::vector<float>(count));
  for (int r = 0; r < kRanks; r++)
    for (size_t i = 0; i < count; i++) host[r][i] = float(int((i * 7 + r * 13) % 2001) - 1000);
  std::vector<std::string> failures(kRanks);
  std::vector<std::vector<float>> result(kRanks, std::vector<float>(count));
  auto rankMain = [&](int r) {
    try {
      MemoryBootstrap boot(&room, r, kRanks);
      ConnectContext ctx;
      ctx.bootstrap = &boot;
      ctx.rank = r;
      ctx.nranks = kRanks;
      ctx.peers = &peers;
      ctx.geometry.slotBytes = 128 * 1024;
      ctx.geometry.nSlots = 4;
      ctx.timeoutMs = 20000;
      auto t = makeP2pTransport();
      const int peer = 1 - r;
      std::string why;
      if (!t->canConnect(ctx, peer, &why)) throw Error(weftInternalError, "p2p cannot connect: " + why);
      // Edges in one global order: 0->1 first, then 1->0.
      std::unique_ptr<Connection> sendConn, recvConn;
      if (r == 0) {
        sendConn = t->connectSend(ctx, peer, 1);
        recvConn = t->connectRecv(ctx, peer, 2);
      } else {
        recvConn = t->connectRecv(ctx, peer, 1);
        sendConn = t->connectSend(ctx, peer, 2);
      }
      if (sendConn->describe() != "P2P/direct") throw Error(weftInternalError, "expected a direct mapping");
      algo::CollArgs a;
      a.coll = plan::Coll::AllReduce;
      a.nranks = kRanks;
      a.rank = r;
      a.count = count;
      a.elemSize = 4;
      a.geometry = ctx.geometry;
      plan::Plan p = algo::buildRing(a);
      std::atomic<bool> abortFlag{false};
      cuda::DeviceState state(0, &abortFlag, r, kRanks, size_t(1) << 20, size_t(1) << 20);
      FifoLookup fifos;
      fifos.send = [&](int, int) { return sendConn->fifo(); };
      fifos.recv = [&](int, int) { return recvConn->fifo(); };
      float *in, *out;
      cudaStream_t stream;
      if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
          cudaMalloc(reinterpret_cast<void**>(&in), count * 4) != cudaSuccess || cudaMalloc(reinterpret_cast<void**>(&out), count * 4) != cudaSuccess)
        throw Error(weftSystemError, "cuda setup failed");
      cudaMemcpy(in, host[r].data(), count * 4, cudaMemcpyHostToDevice);
      cudaMemset(out, 0xff, count * 4);
      BufferBinding b{in, out};
      kernels::RedOp op;
      std::string asyncWhy;
      state.run(p, nullptr, {&b, 1}, op, fifos, ctx.timeoutMs, stream);
      if (cudaStreamSynchronize(stream) != cudaSuccess) throw Error(weftSystemError, "kernel failed");
      state.poll([&](weftResult_t, const std::string& w) { asyncWhy = w; });
      if (!asyncWhy.empty()) throw Error(weftRemoteError, asyncWhy);
      cudaMemcpy(result[r].data(), out, count * 4, cudaMemcpyDeviceToHost);
      cudaFree(in);
      cudaFree(out);
      cudaStreamDestroy(stream);
    } catch (const std::exception& e) {
      failures[r] = e.what();
    }
  };
  std::thread t0(rankMain, 0), t1(rankMain, 1);
  t0.join();
  t1.join();
  for (int r = 0; r < kRanks; r++) ASSERT_EQ(failures[r], "") << "rank " << r;
  for (int r = 0; r < kRanks; r++) {
    size_t bad = 0;
    for (size_t i = 0; i < count; i++)
      if (double(result[r][i]) != double(host[0][i]) + double(host[1][i])) bad++;
    EXPECT_EQ(bad, 0u) << "rank " << r;
  }
}

}  // namespace
