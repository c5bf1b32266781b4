// The interface between the core and the transports.
//
// A transport knows how to build a slot FIFO between two ranks (fifo.h) and
// how to keep bytes flowing through it; it knows nothing of algorithms. Both
// ends of an edge (sender -> receiver, on connection index `conn`) call their
// half of the handshake with the same tag; the halves talk over the
// bootstrap, which buffers messages, so neither side blocks the other.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/bootstrap/bootstrap.h"
#include "transports/fifo.h"

namespace weft {

// What every rank tells every other at init (exchanged by all-gather).
struct PeerInfo {
  int32_t rank = -1;
  int32_t pid = 0;
  uint64_t hostHash = 0;    // WEFT_HOSTID or the hostname + boot id
  uint64_t processHash = 0; // distinguishes processes across hosts
  int32_t cudaDev = -1;
  int32_t ibUsable = 0;     // 1 when this process has a usable IB/RoCE port
  // ib::GdrMode (0 = staged) this rank's device-buffer traffic over IB would
  // use: when either end of an edge can do GPUDirect RDMA, the pair's device
  // traffic gets IB connections of its own.
  int32_t gdrMode = 0;
  int32_t pad = 0;          // no undefined bytes in what is all-gathered
  uint64_t bellAddr = 0;    // address of this rank's executor doorbell in its own process
  char bellShmName[64] = {};  // POSIX shm segment holding that doorbell
  char hostname[64] = {};
};

// What a transport needs to build a connection. Owned by the communicator.
struct ConnectContext {
  Bootstrap* bootstrap = nullptr;
  int rank = 0;
  int nranks = 1;
  const std::vector<PeerInfo>* peers = nullptr;  // indexed by rank
  FifoGeometry geometry;
  Doorbell* localBell = nullptr;  // this rank's executor doorbell
  // Every same-host rank's executor doorbell, mapped at init (nullptr for
  // ranks on other hosts).
  const std::vector<Doorbell*>* peerBells = nullptr;
  Secret secret{};
  int64_t timeoutMs = 0;
  // More ranks on this host than cores: a waiting executor is often off its
  // core, so a proxy thread the kernel wakes on arrival beats the executor
  // moving bytes itself.
  bool oversubscribed = false;
  const std::atomic<bool>* abortFlag = nullptr;
  // Reports an asynchronous failure of a connection (a proxy thread lost its
  // socket): the communicator records it as its async error.
  std::function<void(weftResult_t, const std::string&)> onAsyncError;

  const PeerInfo& self() const { return (*peers)[rank]; }
  const PeerInfo& peer(int r) const { return (*peers)[r]; }
};

// An established connection in one direction. Owns its resources (mappings,
// sockets, proxy threads); destroying it releases them.
class Connection {
 public:
  virtual ~Connection() = default;
  // The end of the FIFO this rank's executor uses (producer end on the
  // sending side, consumer end on the receiving side).
  virtual FifoEnd fifo() const = 0;
  // "SHM", "NET/Socket/lo", ... for logs.
  virtual std::string describe() const = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Whether this transport can join self and peer; if not, *why says why.
  virtual bool canConnect(const ConnectContext& ctx, int peer, std::string* why) const = 0;
  virtual std::unique_ptr<Connection> connectSend(ConnectContext& ctx, int peer, uint64_t tag) = 0;
  virtual std::unique_ptr<Connection> connectRecv(ConnectContext& ctx, int peer, uint64_t tag) = 0;
};

std::unique_ptr<Transport> makeShmTransport();
std::unique_ptr<Transport> makeSocketTransport();
std::unique_ptr<Transport> makeIbTransport();

}  // namespace weft
