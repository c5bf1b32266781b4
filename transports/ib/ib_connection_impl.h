// The IB connection's class, shared by its two source files:
// ib_connection.cc (setting up, the proxy's steps) and ib_close.cc (the
// end: draining what was posted, the close handshake, freeing).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transports/ib/conn_info.h"
#include "transports/ib/credits.h"
#include "transports/ib/fifo_memory.h"
#include "transports/ib/flush_schedule.h"
#include "transports/ib/gdr_decision.h"
#include "transports/ib/ib_connection.h"
#include "transports/ib/ib_device.h"
#include "transports/ib/ib_discovery.h"
#include "transports/ib/shared_cq.h"
#include "transports/proxy_service.h"

namespace weft::ib {


constexpr size_t kPage = 4096;
constexpr uint32_t kMaxCreditWrites = 4;  // unacknowledged credit writes per connection
constexpr uint32_t kReadyWord = 0x52454459;  // "REDY"
constexpr int kPollBatch = 16;
// Where in the credit page a GPU flush read lands (past the credit words).
constexpr size_t kFlushLandingWord = 64;

// The close handshake (ib_close.cc): the side that leaves first tells the
// other, the sender with a last write-with-immediate after all its data,
// the receiver by writing kReceiverClosed into the sender's credit page.
constexpr uint32_t kCloseImm = 0xffffffffu;  // slot 31 of kImmMaxBytes: refused as a geometry
constexpr uint64_t kCloseWrId = ~uint64_t(2);
constexpr uint64_t kReceiverClosed = 0x2145594221;  // "!BYE!"
constexpr size_t kClosedWord = 1;                   // sender's credit page: where the receiver says it left
constexpr size_t kCloseSourceWord = kMaxCreditWrites + 1;  // receiver's credit page: the source of that write

inline ibv_mtu minMtu(uint8_t a, uint8_t b) { return static_cast<ibv_mtu>(a < b ? a : b); }

class IbConnection : public Connection, private ProxyTask {
 public:
  IbConnection(ConnectContext& ctx, int peer, bool isSender, const IbPortChoice& choice, const IbConfig& cfg,
               const DevicePlacement* device)
      : rank_(ctx.rank),
        peer_(peer),
        peerHost_(ctx.peer(peer).hostname),
        isSender_(isSender),
        choice_(choice),
        cfg_(cfg),
        abortFlag_(ctx.abortFlag),
        onAsyncError_(ctx.onAsyncError) {
    if (device) device_ = *device;
  }

  // Drains what was posted, closes (handshake, ib_close.cc), frees.
  ~IbConnection() override;

  FifoEnd fifo() const override { return end_; }
  std::string describe() const override {
    return "NET/IB/" + choice_.port.dev + ":" + std::to_string(choice_.port.port) + "/" +
           linkLayerName(choice_.port.linkLayer) +
           (cfg_.qpsPerConnection > 1 ? "/" + std::to_string(qps_.size()) + "QPs" : "") + gdrSuffix();
  }

  void connect(ConnectContext& ctx, uint64_t tag);

 private:
  std::string where() const {
    return choice_.port.dev + ":" + std::to_string(choice_.port.port) + (isSender_ ? " to" : " from") + " rank " +
           std::to_string(peer_) + " (" + peerHost_ + ")";
  }
  std::string gdrSuffix() const {
    if (!fifo_) return "";
    if (fifo_->mode() == GdrMode::DmaBuf) return "/GDR-dmabuf";
    if (fifo_->mode() == GdrMode::PeerMem) return "/GDR-peermem";
    return "";
  }
  bool wantsGpuSlots() const { return device_ && device_->gdr.mode != GdrMode::Staged; }
  using PortState = OpenedPort;
  PortState openPort();
  ConnInfo localInfo(const PortState& port, const FifoGeometry& g) const;
  ConnInfo exchangeInfo(ConnectContext& ctx, uint64_t tag, const ConnInfo& mine);
  void createQueues(uint32_t nSlots);
  void placeSlots(uint32_t nSlots, uint64_t slotBytes, const LoopbackAddress& self);
  void postFlush(FlushSchedule& flush);
  void toReadyToSend(const ConnInfo& remote);
  void postRecv(size_t qpIndex);
  // The end (ib_close.cc).
  bool drainOnDestroy();  // whether everything posted went out
  bool peerLeft() const;  // the other end said it closed
  void sayGoodbye();      // the destructor's half: asks the proxy, waits (bounded)
  void postGoodbye();     // the proxy's half
  // The proxy: true when wc is the close notice's completion (handled).
  bool takeCloseCompletion(const ibv_wc& wc);
  // The proxy: a failed completion after the peer closed is no error of
  // the job; says so once.
  void afterPeerClosed(const ibv_wc& wc);
  // The rank's proxy thread (proxy_service.h) calls these.
  bool progress() override;
  void failed(const std::exception& e) noexcept override;
  bool senderStep();
  bool receiverStep();
  void completionError(const ibv_wc& wc);
  // This connection's completions from the shared queue (at most
  // kPollBatch); throws when the queue failed.
  int takeCompletions(ibv_wc* wcs);
  // Marks the FIFO failed (both executors stop waiting) and reports the
  // communicator's async error. `logged`: raise() already printed msg.
  void failAsync(const std::string& msg, bool logged);

  int rank_, peer_;
  std::string peerHost_;
  bool isSender_;
  IbPortChoice choice_;
  IbConfig cfg_;
  const std::atomic<bool>* abortFlag_;
  std::function<void(weftResult_t, const std::string&)> onAsyncError_;

  std::optional<DevicePlacement> device_;  // set for device-buffer traffic

  std::shared_ptr<IbDevice> dev_;
  // The rank's completion queue on dev_ and the thread that polls it; its
  // completions for this connection's QPs land in inbox_.
  std::shared_ptr<RankProgress> rankProgress_;
  CompletionInbox inbox_;
  int cqEntries_ = 0;  // reserved in the shared queue
  std::vector<ibv_qp*> qps_;
  uint32_t psn_ = 0;
  std::unique_ptr<IbFifoMemory> fifo_;
  std::unique_ptr<FlushQp> flushQp_;  // receiver with GPU slots, flush on
  // Sender: word 0 receives the peer's consumed counter. Receiver: a ring of
  // source words for the credit writes (each stays unchanged while its
  // write is in flight).
  uint64_t* creditMem_ = nullptr;
  MrKeys creditMr_;
  uint32_t creditWrites_ = 0;
  ConnInfo remote_;
  uint64_t localSubnet_ = 0;  // upper 64 bits of this end's GID: a peer on another subnet needs a GRH
  FifoEnd end_;
  // What the proxy keeps between passes (proxy only once attached).
  struct ProxyProgress {
    CreditWindow credits;   // sender
    CreditReturn returns;   // receiver
    InOrderWindow order;    // sender: completed writes; receiver: arrived slots
    FlushSchedule flush;    // receiver with GPU slots
    uint32_t sent = 0, received = 0;
    ProxyProgress(uint32_t nSlots, bool flushOn)
        : credits(nSlots), returns(kMaxCreditWrites), order(nSlots), flush(flushOn) {}
  };
  std::optional<ProxyProgress> progress_;
  ProxyService* proxy_ = nullptr;  // rankProgress_'s thread
  std::atomic<bool> closeRequested_{false};
  bool closePosted_ = false;  // proxy only
  std::atomic<bool> closeDone_{false};
  std::atomic<bool> peerClosed_{false};  // receiver: the sender's close notice arrived
  bool quietNoted_ = false;              // proxy only
};

}  // namespace weft::ib
