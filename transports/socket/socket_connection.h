// One direction of a socket-transport edge: a local staging FIFO and a
// proxy task that drives all of the edge's TCP sockets, non-blocking. The
// task runs on one of its rank's two ProxyServices (transports/proxy_service.h,
// one for sending ends, one for receiving ends): a thread serves every
// socket connection end of a rank in its direction, whatever the peers and
// channels, and sleeps in poll() on all of their sockets at once.
//
// A slot of at least 2 x kMinPartBytes is cut into contiguous parts, part i
// travelling on socket i, so the kernel's per-socket work overlaps; a small
// slot travels whole on socket 0, so a tiny message costs one send, one
// receive and no hand-off between threads. Every part carries the slot's
// sequence number and size, so the receiving proxy places it without
// knowing what the other sockets carry. Slots are freed (send side) and
// posted (receive side) strictly in order, so the executor sees an ordinary
// FIFO.
//
// Two threads per rank instead of one per connection end (or per socket): on
// a machine where ranks outnumber cores, extra proxy threads only queue for
// the same cores, a per-slot rendezvous between them (a mutex, a wake-up)
// is what made small messages slow, and an AllToAll over 512 ranks would
// have started 1022 of them per rank.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/bootstrap/handshake.h"
#include "src/util/clock.h"
#include "transports/proxy_service.h"
#include "transports/socket/socket_wire.h"
#include "transports/transport.h"

namespace weft {

// A page-aligned FIFO in anonymous memory, every page touched at creation so
// that the data path never page-faults.
class StagingFifo {
 public:
  StagingFifo(const FifoGeometry& g);
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

class SocketConnection final : public Connection, private FifoProgress, private FifoUserMemory, private ProxyTask {
 public:
  enum class Side { Send, Recv };

  struct Params {
    Side side;
    int rank;
    int peer;
    uint64_t tag;
    std::string ifName;
    std::string peerName;  // "rank 3 at 10.0.0.2:4242" for messages
    FifoGeometry geometry;
    Doorbell* localBell;
    const std::atomic<bool>* abortFlag;
    bool oversubscribed = false;  // ranks outnumber cores: the receiving proxy sleeps without yielding
    bool ranksFillCores = false;  // under two cores per rank: the executor moves every piece itself
    std::function<void(weftResult_t, const std::string&)> onAsyncError;
    uint32_t nSockets;
    // Receiving side: where the sockets arrive and how to recognise them.
    Secret secret;
    uint64_t nonce;
    int64_t acceptTimeoutMs;
    // The rank's shared proxy (SocketTransport makes one per rank; null:
    // the connection makes one of its own).
    std::shared_ptr<ProxyService> service;
    // Called first thing on destruction (the transport forgets the end).
    std::function<void()> onDestroy;
  };

  // Send side: `sockets` are connected and have sent their hellos.
  // Recv side: `listener` accepts them; `sockets` is empty, or holds socket
  // 0 of this rank's sending end to the same peer (duplicated), whose other
  // direction carries this end's socket-0 parts (then the listener accepts
  // sockets 1 and up, if any).
  SocketConnection(Params params, std::vector<Socket> sockets, Socket listener);
  ~SocketConnection() override;

  // A duplicate of this end's socket 0, for the end of the other direction
  // to the same peer; waits (until `deadline`) for a receiving end to
  // accept all of its sockets. Invalid, with *why set, when it cannot.
  Socket duplicateFirstSocket(Deadline deadline, std::string* why);
  uint32_t socketCount() const { return p_.nSockets; }

  FifoEnd fifo() const override { return executorEnd_; }
  std::string describe() const override { return "NET/Socket/" + p_.ifName; }

 private:
  // Where one socket is in its current part.
  struct SendCursor {
    uint32_t seq = 0;        // next slot this socket looks at
    uint64_t sent = 0;       // bytes of header + part already written
    bool blocked = false;    // the kernel buffer was full
  };
  struct RecvCursor {
    bool inPart = false;     // header complete, reading the payload
    socket_wire::SlotHeader header{};
    uint64_t headerGot = 0;
    uint64_t offset = 0, length = 0, got = 0;
    uint64_t wire = 0;       // bytes of the part on the wire (length, or padded)
    uint64_t preread = 0;    // payload bytes read with the header
    uint32_t lastSeq = ~0u;  // parts on one socket come in increasing order
    bool waitsForSlot = false;
    bool placed = false;     // this part's payload target is known (and its preread moved there)
    bool closed = false;     // the sender ended this socket in order
  };
  // Per FIFO slot on the receiving side: bytes expected and arrived, and
  // where its payload goes (decided before its first payload byte).
  struct RecvSlot {
    bool known = false;
    bool placed = false;       // landAt decided
    char* landAt = nullptr;    // the caller's memory (FifoUserMemory), else the slot
    uint64_t bytes = 0;
    uint64_t got = 0;
  };

  // FifoProgress: the executor moves bytes itself when the proxy is not
  // (WEFT_SOCKET_INLINE, default on). pumpMu_ makes one of them do it.
  bool tryProgress(uint64_t pieceBytes) override;
  void posted() override;
  void released(uint64_t bytes) override;
  void idle() override;
  // FifoUserMemory (WEFT_SOCKET_DIRECT).
  void abandonUserMemory() override;
  // Where slot `seq` of `bytes` bytes lands: an offered address or the slot.
  void placeSlot(RecvSlot& slot, uint32_t seq, uint64_t bytes);
  // Places the part socket i is reading (once its slot is free); false
  // when it disagrees with its slot's size.
  bool placePart(uint32_t i);
  // Where part i's payload goes (offset 0 of the part), once placed.
  char* partTarget(uint32_t i);
  // Where the bytes of slot seq are on the sending side.
  const char* sendBase(uint32_t seq) const;
  // One pass of the send side under pumpMu_ (held by the caller); true when
  // every posted slot is wholly in the kernel.
  bool sendPass(bool* moved, bool* failed, std::vector<int>* fullFds);
  // One pass of the receive side under pumpMu_: reads the first nRead open
  // sockets and posts the completed slots. *readFds: sockets to poll; *open:
  // sockets not yet ended in order; *slotWait: some part waits for a free slot.
  // onePart: each socket stops after one whole part (the executor, which
  // needs one slot, then spares the read that would find nothing more).
  bool recvPass(bool* failed, std::vector<int>* readFds, uint32_t* open, bool* slotWait,
                uint32_t nRead = socket_wire::kMaxSockets, bool onePart = false);
  // The executor moved bytes within the last yield window: the proxy then
  // sleeps instead of spinning for the same cores.
  bool executorActive() const;
  // Whether socket i has bytes (or an error) to read, without locking it.
  bool socketReadable(uint32_t i) const;

  // ProxyTask: one non-blocking pass of this end on the rank's service.
  bool progress() override;
  void failed(const std::exception& e) noexcept override;
  int64_t idleWait(std::vector<pollfd>* fds) override;
  bool standsBack() const override;
  bool sendStep();
  bool recvStep();
  // Writes what the sockets take of slots [0, posted) and frees the slots
  // every socket is past; *fullFds gets the sockets whose buffer is full.
  bool pumpAllSockets(uint32_t posted, std::vector<int>* fullFds, bool* failed);
  // On destruction: sends the slots already posted while the peer takes them.
  void drainOnDestroy();
  // Then tells the receiver, when all of it went out whole, that this is an
  // orderly end.
  void closeOnDestroy();
  // A connection accepted by the receiving side, in its handshake.
  struct PendingAccept {
    Socket sock;
    SocketAddress from;
    handshake::Acceptor handshake;
  };
  enum class AcceptOutcome { Pending, Joined, Rejected };
  // One non-blocking step of accepting this edge's sockets; true when it
  // moved. ready_ is set once every socket has arrived.
  bool acceptStep();
  bool acceptPending(Deadline deadline);
  AcceptOutcome finishAccept(PendingAccept& a);
  AcceptOutcome reject(PendingAccept& a, const std::string& why);
  // Writes as much of socket i's pending parts as the kernel takes.
  bool pumpSend(uint32_t i, uint32_t posted, bool* failed);
  // Reads as much from socket i as there is (onePart: up to the end of one
  // part); false when nothing moved.
  bool pumpRecv(uint32_t i, bool* failed, bool onePart = false);
  // Reads (more of) socket i's next slot header; on socket 0, when the next
  // slot is free, with the start of its payload (kHeadPayload). Bytes read,
  // 0 when none, -1 with *why set.
  ssize_t readHeader(uint32_t i, std::string* why);
  bool halted() const;
  void failWith(const std::string& why);
  void leaveOnStop();

  Params p_;
  StagingFifo staging_;
  std::shared_ptr<ProxyService> service_;
  Doorbell* bell_;         // the service's: rung by the executor
  FifoEnd executorEnd_;
  FifoEnd proxyEnd_;       // the same FIFO, seen from the proxy's side
  Socket listener_;
  std::vector<Socket> sockets_;

  std::atomic<bool> halt_{false};        // destruction or failure: the proxy leaves
  std::atomic<bool> destroying_{false};  // halting on purpose: no error report
  std::atomic<bool> failed_{false};
  std::atomic<bool> ready_{false};        // sockets connected: the executor may pump
  std::atomic<int64_t> inlineAtNs_{0};    // when the executor last pumped
  uint64_t inlineMaxBytes_ = 0;           // largest piece the executor moves (0: none)

  // The cursors below belong to whoever holds pumpMu_: the proxy thread, or
  // the executor inside tryProgress() / posted().
  std::mutex pumpMu_;
  std::vector<int> inlineFds_;
  bool inlineReadMissed_ = false;  // the executor's last read of socket 0 found nothing
  std::vector<SendCursor> sendCursors_;
  std::vector<RecvCursor> recvCursors_;
  std::vector<RecvSlot> recvSlots_;
  uint32_t completed_ = 0;  // slots freed (send) or posted (recv)

  // The proxy task's own state, touched only by the service thread (and by
  // the destructor once the task is removed).
  bool done_ = false;            // halted, failed or ended in order: nothing more to do
  bool lockMissed_ = false;      // the executor held pumpMu_ at the last pass
  bool slotWait_ = false;        // a received part waits for a free slot
  std::vector<int> proxyFds_;    // sockets the last pass found full (send) or readable (recv)
  Deadline acceptDeadline_{0};
  std::list<PendingAccept> pending_;
  uint32_t arrived_ = 0;
  bool starved_ = false;         // descriptors ran out: the listener rests one slice
};

// Pieces up to this size the executor moves itself by default
// (WEFT_SOCKET_INLINE): at that size a thread hand-off costs more than the
// copy; larger ones stay with the proxy, which moves them while the executor
// computes, where it has a core to do so on. Where ranks fill the cores
// (fewer than two per rank) the proxy computes nothing in parallel, only
// adds hand-offs, and the executor moves every piece: 2 and 4 processes on
// 2 cores over loopback TCP, AllReduce 128 KB-1 MB took half the time and
// 16-64 MB 20-75% more busbw (docs/benchmarks.md).
inline constexpr uint64_t kDefaultInlineMaxBytes = 32 * 1024;
inline constexpr uint64_t kInlineEveryPiece = ~uint64_t(0);

// How long a sleeping proxy waits before re-checking its halt flags.
inline constexpr int64_t kProxySleepSliceNs = 10 * 1000 * 1000;

}  // namespace weft
