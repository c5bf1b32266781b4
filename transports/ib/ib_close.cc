// The end of an IB connection. A sending end first finishes what its
// executor posted; then the end that leaves first tells the other, so that
// the other never sends into a QP already destroyed: a receiver's last
// credit write would otherwise fail (retry exceeded, ~30 s later) and
// become an error of a communicator that did nothing wrong.
#include <arpa/inet.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "src/util/clock.h"
#include "src/util/log.h"
#include "transports/ib/ib_connection_impl.h"

namespace weft::ib {

namespace {

constexpr int64_t kDrainStallMs = 2000;  // a receiver that takes nothing for this long is not draining
// The close notice needs only the peer's HCA to answer (microseconds); a
// peer that already left does not, and this bounds the wait for it.
constexpr int64_t kCloseWaitMs = 200;

}  // namespace

IbConnection::~IbConnection() {
  const bool running = progress_ && !end_.failed() && !(abortFlag_ && abortFlag_->load());
  bool drained = true;
  if (running && isSender_) drained = drainOnDestroy();
  if (running && drained) sayGoodbye();
  if (dev_ && dev_->events) dev_->events->unwatch(this);
  if (proxy_) proxy_->remove(this);  // the proxy no longer touches this connection
  const Verbs* v = dev_ ? dev_->v : nullptr;
  flushQp_.reset();
  for (ibv_qp* qp : qps_) v->destroyQp(qp);
  if (rankProgress_) {
    rankProgress_->cq->detach(&inbox_);
    rankProgress_->cq->unreserve(cqEntries_);
  }
  rankProgress_.reset();  // the last connection of the rank here stops its thread
  fifo_.reset();
  if (creditMr_.handle) dev_->hostMrs->release(creditMr_);
  std::free(creditMem_);
}

// A collective completes once its last slot is posted, so a communicator
// can be destroyed while that slot still waits for a credit or for its
// write to complete: let the proxy finish what was posted as long as the
// receiver keeps taking it (the peer's collective may still need it).
bool IbConnection::drainOnDestroy() {
  constexpr int64_t kStallMs = kDrainStallMs;
  const FifoHeader* hdr = end_.hdr;
  const uint32_t posted = hdr->posted.load(std::memory_order_acquire);
  uint32_t done = hdr->consumed.load(std::memory_order_acquire);
  Deadline stall = Deadline::after(kStallMs);
  while (done != posted && !end_.failed() && !(abortFlag_ && abortFlag_->load(std::memory_order_acquire))) {
    ring(proxy_->bell());
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    uint32_t now = hdr->consumed.load(std::memory_order_acquire);
    if (now != done) {
      done = now;
      stall = Deadline::after(kStallMs);
    } else if (stall.passed()) {
      WEFT_WARN("NET/IB: %s: destroyed with %u posted slot(s) the receiver did not take within %ld ms",
                where().c_str(), posted - done, static_cast<long>(kStallMs));
      return false;
    }
  }
  return done == posted;
}

bool IbConnection::peerLeft() const {
  if (!isSender_) return peerClosed_.load(std::memory_order_acquire);
  return std::atomic_ref<uint64_t>(creditMem_[kClosedWord]).load(std::memory_order_acquire) == kReceiverClosed;
}

void IbConnection::sayGoodbye() {
  if (peerLeft()) return;  // it closed first: nobody to tell
  closeRequested_.store(true, std::memory_order_release);
  ring(proxy_->bell());
  const Deadline d = Deadline::after(kCloseWaitMs);
  while (!closeDone_.load(std::memory_order_acquire) && !end_.failed() && !d.passed())
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

void IbConnection::postGoodbye() {
  ibv_sge sge{};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kCloseWrId;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (isSender_) {
    // After every data write on every QP (they all completed: drained),
    // so the receiver sees it last.
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.num_sge = 0;
    wr.imm_data = htonl(kCloseImm);
    wr.wr.rdma.remote_addr = remote_.fifoAddr;
    wr.wr.rdma.rkey = remote_.fifoRkey;
  } else {
    creditMem_[kCloseSourceWord] = kReceiverClosed;
    sge.addr = reinterpret_cast<uint64_t>(&creditMem_[kCloseSourceWord]);
    sge.length = sizeof(uint64_t);
    sge.lkey = creditMr_.lkey;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = remote_.creditAddr + kClosedWord * sizeof(uint64_t);
    wr.wr.rdma.rkey = remote_.creditRkey;
  }
  if (int rc = ibv_post_send(qps_[0], &wr, &bad)) {
    WEFT_INFO(kNet, "NET/IB: %s: cannot post the close notice: %s", where().c_str(), std::strerror(rc));
    closeDone_.store(true, std::memory_order_release);
  }
}

bool IbConnection::takeCloseCompletion(const ibv_wc& wc) {
  if (wc.wr_id != kCloseWrId) return false;
  if (wc.status != IBV_WC_SUCCESS)
    WEFT_INFO(kNet, "NET/IB: %s: close notice not delivered (%s): the peer left first", where().c_str(),
              dev_->v->wcStatusStr(wc.status));
  closeDone_.store(true, std::memory_order_release);
  return true;
}

void IbConnection::afterPeerClosed(const ibv_wc& wc) {
  if (quietNoted_) return;
  quietNoted_ = true;
  WEFT_INFO(kNet, "NET/IB: %s: %s (status %d) after the peer closed: not an error", where().c_str(),
            dev_->v->wcStatusStr(wc.status), static_cast<int>(wc.status));
}


}  // namespace weft::ib
