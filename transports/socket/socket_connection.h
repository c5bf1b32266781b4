// One direction of a socket-transport edge: a local staging FIFO and one
// proxy thread per TCP socket.
//
// Each slot is cut into contiguous parts, part i travelling on socket i, so
// the sockets (and the kernel's per-socket work) run in parallel. On the
// sending side the threads send posted slots and the last one to finish a
// slot frees it; on the receiving side they read into free slots and the
// last one to finish a slot posts it. Slots are freed/posted strictly in
// order, so the executor sees an ordinary FIFO.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transports/socket/socket_wire.h"
#include "transports/transport.h"

namespace weft {

// A page-aligned FIFO in anonymous memory, every page touched at creation so
// that the data path never page-faults.
class StagingFifo {
 public:
  StagingFifo(const plan::FifoGeometry& g);
  ~StagingFifo();
  StagingFifo(const StagingFifo&) = delete;
  StagingFifo& operator=(const StagingFifo&) = delete;
  FifoHeader* header() const { return hdr_; }
  char* slots() const { return reinterpret_cast<char*>(hdr_) + hdr_->dataOffset; }

 private:
  void* mem_ = nullptr;
  size_t bytes_ = 0;
  FifoHeader* hdr_ = nullptr;
};

class SocketConnection final : public Connection {
 public:
  enum class Side { Send, Recv };

  struct Params {
    Side side;
    int rank;
    int peer;
    uint64_t tag;
    std::string ifName;
    std::string peerName;  // "rank 3 at 10.0.0.2:4242" for messages
    plan::FifoGeometry geometry;
    Doorbell* localBell;
    const std::atomic<bool>* abortFlag;
    std::function<void(weftResult_t, const std::string&)> onAsyncError;
    uint32_t nSockets;
    // Receiving side: where the sockets arrive and how to recognise them.
    Secret secret;
    uint64_t nonce;
    int64_t acceptTimeoutMs;
  };

  // Send side: `sockets` are connected and have sent their hellos.
  // Recv side: `sockets` is empty and `listener` accepts them.
  SocketConnection(Params params, std::vector<Socket> sockets, Socket listener);
  ~SocketConnection() override;

  FifoEnd fifo() const override { return executorEnd_; }
  std::string describe() const override { return "NET/Socket/" + p_.ifName; }

 private:
  void sendWorker(uint32_t index);
  void recvWorker(uint32_t index);
  bool acceptAll();
  // Waits (spin, then sleep on the proxy bell in short slices) until pred()
  // holds; false once the connection halts, aborts or failed.
  template <class Pred>
  bool waitUntil(Pred pred);
  bool halted() const;
  // Records that worker `index` finished slots [0, count); frees (send side)
  // or posts (recv side) every slot all workers finished.
  void finishedUpTo(uint32_t index, uint32_t count);
  void failWith(const std::string& why);
  void run(uint32_t index);

  Params p_;
  StagingFifo staging_;
  Doorbell bell_;          // the proxy's own: rung by the executor
  FifoEnd executorEnd_;
  FifoEnd proxyEnd_;       // the same FIFO, seen from the proxy's side
  Socket listener_;
  std::vector<Socket> sockets_;

  std::atomic<bool> halt_{false};        // destruction or failure: workers leave
  std::atomic<bool> destroying_{false};  // halting on purpose: no error report
  std::atomic<bool> failed_{false};
  std::atomic<bool> socketsReady_{false};

  std::mutex progressMu_;
  std::vector<uint32_t> done_;  // per worker: slots finished
  uint32_t completed_ = 0;      // slots freed (send) or posted (recv)
  std::vector<uint64_t> recvSizes_;  // per slot index, written by worker 0

  std::vector<std::thread> workers_;
};

}  // namespace weft
