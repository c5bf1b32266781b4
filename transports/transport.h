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
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "src/bootstrap/bootstrap.h"
#include "src/topology/comm_topo.h"
#include "transports/fifo.h"

namespace weft {

// Room in PeerInfo for the facts transports publish about a rank.
constexpr int kMaxTransportFacts = 8;        // rows: one per transport of the lists
constexpr size_t kTransportFactsBytes = 16;  // bytes of one row
// Words of PeerInfo::cpuMask: CPUs 0..1023, as glibc's cpu_set_t.
constexpr int kCpuMaskWords = 16;

// What every rank tells every other at init (exchanged by all-gather): the
// facts every transport may use, and a row of each transport's own.
struct PeerInfo {
  int32_t rank = -1;
  int32_t pid = 0;
  uint64_t hostHash = 0;    // WEFT_HOSTID or the hostname + boot id
  uint64_t processHash = 0; // distinguishes processes across hosts
  int32_t cudaDev = -1;     // the rank's GPU, -1: none
  int32_t pad = 0;          // no undefined bytes in what is all-gathered
  char bellShmName[64] = {};  // POSIX shm segment holding this rank's executor doorbell
  char hostname[64] = {};
  // The CPUs the rank's process may run on (its affinity; bit c of word
  // c / 64). A launcher that binds ranks (mpirun does by default) leaves
  // each process one core: the host's ranks then have as many cores as
  // the union of their masks, not as one process sees.
  uint64_t cpuMask[kCpuMaskWords] = {};
  // Each transport's facts about this rank (Transport::publishFacts), in
  // the row its communicator gave it; zeros where it published nothing.
  unsigned char transportFacts[kMaxTransportFacts][kTransportFactsBytes] = {};
};
static_assert(std::has_unique_object_representations_v<PeerInfo>, "PeerInfo must have no padding bytes");

// A transport's facts: plain data with no padding (so no undefined bytes
// go over the wire) that fits one row.
template <class Facts>
concept TransportFacts = std::is_trivially_copyable_v<Facts> && std::has_unique_object_representations_v<Facts> &&
                         sizeof(Facts) <= kTransportFactsBytes;

// The facts in `row` of p (value-initialised ones when row < 0: the
// transport was never given a row, as in unit tests).
template <TransportFacts Facts>
Facts readFacts(const PeerInfo& p, int row) {
  Facts f{};
  if (row >= 0 && row < kMaxTransportFacts) std::memcpy(&f, p.transportFacts[row], sizeof f);
  return f;
}

template <TransportFacts Facts>
void writeFacts(PeerInfo& p, int row, const Facts& f) {
  if (row >= 0 && row < kMaxTransportFacts) std::memcpy(p.transportFacts[row], &f, sizeof f);
}

// The connection index (the channel) a connect tag carries in its bits
// 44..51 (the core builds tags in src/core/connections.cc): a transport with
// several NICs spreads channels over them by it.
inline int connectTagConn(uint64_t tag) { return static_cast<int>((tag >> 44) & 0xff); }

// What a transport knows of its rank when the communicator is made, before
// the ranks exchange their PeerInfo.
struct TransportInit {
  int rank = 0;
  int cudaDev = -1;   // -1: no GPU
  int factsRow = -1;  // this transport's row of PeerInfo::transportFacts
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
  // Fewer than two cores per rank on this host: a proxy thread has no core
  // of its own to move bytes on while its executor computes.
  bool ranksFillCores = false;
  const std::atomic<bool>* abortFlag = nullptr;
  // Reports an asynchronous failure of a connection (a proxy thread lost its
  // socket): the communicator records it as its async error.
  std::function<void(weftResult_t, const std::string&)> onAsyncError;

  // What the topology says each pair of this rank and a peer could use
  // (Unknown for every peer when the communicator has no topology).
  const std::vector<topo::PeerTopoKind>* peerTopoKind = nullptr;

  const PeerInfo& self() const { return (*peers)[rank]; }
  topo::PeerTopoKind topoKind(int r) const {
    return peerTopoKind && r < static_cast<int>(peerTopoKind->size()) ? (*peerTopoKind)[r]
                                                                      : topo::PeerTopoKind::Unknown;
  }
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

// A way to join two ranks. The communicator asks the transports of its
// lists (transports/registry.h), most preferred first, whether they can
// join a pair; both ends must reach the same answer, so canConnect looks
// only at what both know: the two PeerInfos (with every transport's
// published facts), the topology and the environment.
class Transport {
 public:
  virtual ~Transport() = default;
  // "SHM", "Socket", "IB", "P2P": logs, and the names WEFT_NET takes.
  virtual const char* name() const = 0;
  // Once per communicator, before the all-gather: writes what peers need
  // to know of this rank into its row of self (writeFacts). Nothing by
  // default.
  virtual void publishFacts(const TransportInit& init, PeerInfo& self) {
    (void)init;
    (void)self;
  }
  // Whether this transport can join self and peer; *why says why (or why
  // not), for the connection's log line.
  virtual bool canConnect(const ConnectContext& ctx, int peer, std::string* why) const = 0;
  virtual std::unique_ptr<Connection> connectSend(ConnectContext& ctx, int peer, uint64_t tag) = 0;
  virtual std::unique_ptr<Connection> connectRecv(ConnectContext& ctx, int peer, uint64_t tag) = 0;

  // A network transport that can also move device buffers over connections
  // of its own (IB with GPUDirect RDMA) returns the transport for those:
  // device edges of a pair this transport joins use it when its canConnect
  // agrees. Null: they use this transport's host FIFO, mapped for the GPU.
  virtual Transport* deviceTransport() const { return nullptr; }
  // Device traffic with `peer` goes through this transport's host FIFO
  // although it has a device transport: say so (once per edge end; the
  // caller sees to that).
  virtual void noteDeviceTrafficStaged(const ConnectContext& ctx, int peer, bool sending) const {
    (void)ctx;
    (void)peer;
    (void)sending;
  }
};

std::unique_ptr<Transport> makeShmTransport();
std::unique_ptr<Transport> makeSocketTransport();
std::unique_ptr<Transport> makeIbTransport();

}  // namespace weft
