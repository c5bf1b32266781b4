// The out-of-band network every communicator starts with.
//
// weftGetUniqueId starts a root listener and writes its address plus a
// random 16-byte secret into the unique id. Each rank connects to the root,
// proves the secret, and learns every other rank's bootstrap address. After
// that, ranks exchange small messages directly (send/recv by (peer, tag)),
// all-gather and barrier over them. Used at set-up (peer info, transport
// handshakes, CommSplit) and never on the per-call data path.
//
// Every connection starts with a hello that proves the secret; one that does
// not (a port scanner, a stray client, garbage) is closed and logged at WARN,
// and the bootstrap carries on. Every wait is bounded by the timeout given at
// construction and ends early on abort().
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft {

using Secret = std::array<uint8_t, 16>;

// Fills *id with a fresh secret and the address of a root listener that this
// call starts (on WEFT_SOCKET_IFNAME's interface). The root serves one
// communicator and exits once all ranks have joined or the timeout passed.
// With WEFT_COMM_ID="<ip>:<port>" no root starts here: the id names that
// address, its secret is derived from the address and WEFT_COMM_SECRET (so
// ids made independently by each process agree), and join() of rank 0 starts
// the root there unless this process already serves it.
void createUniqueId(weftUniqueId* id, int64_t timeoutMs);

// The secret stored in an id (used to name shared-memory segments and to
// authenticate transport handshakes).
Secret uniqueIdSecret(const weftUniqueId& id);

class Bootstrap {
 public:
  // Joins the communicator described by id. Blocks until every rank has
  // joined, or throws weft::Error (weftTimeout, weftSystemError,
  // weftInvalidArgument for a malformed id).
  static std::unique_ptr<Bootstrap> join(const weftUniqueId& id, int rank, int nranks, int64_t timeoutMs);

  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  virtual const Secret& secret() const = 0;
  // The key of rank-to-rank bootstrap handshakes (bootstrap_wire::
  // derivePeerKey): known only to the processes the root admitted.
  virtual const Secret& peerKey() const { return secret(); }
  // Where rank `peer` accepts bootstrap connections, "ip:port" (for logs).
  virtual std::string peerAddress(int peer) const { return std::string(); }

  // Sends `bytes` bytes to peer under tag (tags from 0xFFFFFFFFFFFFFF00 up
  // are reserved for the bootstrap itself). Does not wait for the receiver to
  // call recv (messages are buffered on the receiving side).
  virtual void send(int peer, uint64_t tag, const void* data, size_t bytes) = 0;
  // Receives the next message from peer under tag; its size must be `bytes`
  // (else weftInternalError naming both sizes).
  virtual void recv(int peer, uint64_t tag, void* data, size_t bytes) = 0;
  // data holds nranks blocks of bytesPerRank; block `rank` is this rank's
  // contribution, the others are filled in.
  virtual void allGather(void* data, size_t bytesPerRank) = 0;
  virtual void barrier() = 0;

  // Connections into this rank at once, at most so far (for tests and
  // measurements; 0 where not counted).
  virtual size_t peakIncomingConnections() const { return 0; }

  // Unblocks every wait of this bootstrap (they throw weftRemoteError).
  virtual void abort() = 0;

  // Called (from the bootstrap's own thread) when a peer's connection closes
  // without the orderly goodbye sent by shutdown(): the peer process died.
  virtual void setPeerLostHandler(std::function<void(int peer)> handler) = 0;
  // Orderly end: tells peers this rank is leaving on purpose.
  virtual void shutdown() = 0;

  // Queries answered off the caller's path: a peer's query() is answered by
  // this rank's bootstrap query-answering thread, which calls `handler` (it must be
  // quick and must not wait on the application), so a rank answers while
  // its application threads are blocked (inside a collective). Without a
  // handler, queries go unanswered.
  using QueryHandler = std::function<std::vector<char>(int peer, const std::vector<char>& request)>;
  virtual void setQueryHandler(QueryHandler handler) {}
  // Sends `request` to each of `peers` and waits until `waitMs` has passed
  // for their answers, all together. answered[i] says whether peers[i]
  // answered (its reply is replies[i]); why[i] says why not (no answer in
  // time, gone, unreachable). Never throws for a peer that fails.
  struct QueryResult {
    std::vector<bool> answered;
    std::vector<std::vector<char>> replies;
    std::vector<std::string> why;
  };
  virtual QueryResult query(const std::vector<int>& peers, const std::vector<char>& request, int64_t waitMs) {
    return QueryResult{std::vector<bool>(peers.size(), false), std::vector<std::vector<char>>(peers.size()),
                       std::vector<std::string>(peers.size(), "this bootstrap answers no queries")};
  }
};

}  // namespace weft
