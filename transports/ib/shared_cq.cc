#include "transports/ib/shared_cq.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/ib_device.h"

namespace weft::ib {

namespace {

// Room for a few dozen connection ends at the default geometry (64 bytes an
// entry: 64 KiB); more are made by growing.
constexpr int kInitialEntries = 1024;
// Completions taken from the queue per poll.
constexpr int kPollBatch = 64;

}  // namespace

SharedCq::SharedCq(IbDevice& dev, int rank) : dev_(dev), rank_(rank) {
  ibv_device_attr attr{};
  maxCqe_ = dev.v->queryDevice(dev.ctx, &attr) == 0 && attr.max_cqe > 0 ? attr.max_cqe : kInitialEntries;
  capacity_ = std::min(kInitialEntries, maxCqe_);
  cq_ = dev.v->createCq(dev.ctx, capacity_, nullptr, nullptr, 0);
  if (!cq_)
    raise(weftSystemError, "NET/IB: ibv_create_cq(%d) for rank %d on %s failed: %s", capacity_, rank,
          dev.name.c_str(), std::strerror(errno));
  if (dev.events)
    dev.events->watchCq(this, cq_, [this](const std::string& m) {
      WEFT_WARN("%s", m.c_str());
      breakWith(m);
    });
}

SharedCq::~SharedCq() {
  if (dev_.events) dev_.events->unwatch(this);
  if (!routes_.empty())
    WEFT_WARN("NET/IB: completion queue of rank %d on %s freed with %zu QP(s) still routed", rank_,
              dev_.name.c_str(), routes_.size());
  if (cq_) dev_.v->destroyCq(cq_);
}

int SharedCq::capacity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return capacity_;
}

void SharedCq::reserve(int entries, const std::string& who) {
  std::lock_guard<std::mutex> lock(mu_);
  const int need = reserved_ + entries;
  if (need <= capacity_) {
    reserved_ = need;
    return;
  }
  if (need > maxCqe_)
    raise(weftSystemError,
          "NET/IB: %s: the completion queue of rank %d on %s would need %d entries (%d in use, %d for this "
          "connection), more than the HCA's limit of %d (max_cqe): lower WEFT_NSLOTS, WEFT_IB_QPS_PER_CONNECTION "
          "or the number of channels, or spread the ranks over more HCAs",
          who.c_str(), rank_, dev_.name.c_str(), need, reserved_, entries, maxCqe_);
  const int grown = std::min(maxCqe_, std::max(need, 2 * capacity_));
  if (!dev_.v->resizeCq)
    raise(weftSystemError,
          "NET/IB: %s: the completion queue of rank %d on %s needs %d entries and holds %d, and this libibverbs "
          "cannot resize it (no ibv_resize_cq): lower WEFT_NSLOTS, WEFT_IB_QPS_PER_CONNECTION or the number of "
          "channels",
          who.c_str(), rank_, dev_.name.c_str(), need, capacity_);
  // The lock keeps the progress thread out of the queue while it changes.
  if (int rc = dev_.v->resizeCq(cq_, grown))
    raise(weftSystemError, "NET/IB: %s: growing the completion queue of rank %d on %s from %d to %d entries failed: %s",
          who.c_str(), rank_, dev_.name.c_str(), capacity_, grown, std::strerror(rc));
  WEFT_INFO(kNet | kInit, "NET/IB: completion queue of rank %d on %s grown from %d to %d entries", rank_,
            dev_.name.c_str(), capacity_, grown);
  capacity_ = grown;
  reserved_ = need;
}

void SharedCq::unreserve(int entries) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ = std::max(0, reserved_ - entries);
}

void SharedCq::attach(uint32_t qpn, CompletionInbox* inbox) {
  std::lock_guard<std::mutex> lock(mu_);
  routes_[qpn] = inbox;
}

void SharedCq::detach(CompletionInbox* inbox) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(routes_, [inbox](const auto& kv) { return kv.second == inbox; });
  inbox->wcs.clear();
}

int SharedCq::take(CompletionInbox* inbox, ibv_wc* out, int max, std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  // What was routed before the queue failed still counts (an error
  // completion among it names the cause best).
  while (n < max && !inbox->wcs.empty()) {
    out[n++] = inbox->wcs.front();
    inbox->wcs.pop_front();
  }
  if (n == 0 && !error_.empty()) {
    if (why) *why = error_;
    return -1;
  }
  return n;
}

bool SharedCq::broken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !error_.empty();
}

void SharedCq::breakWith(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.empty()) error_ = why;
}

bool SharedCq::progress() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) return false;
  ibv_wc wcs[kPollBatch];
  const int n = ibv_poll_cq(cq_, kPollBatch, wcs);
  if (n < 0) {
    error_ = "the completion queue overran or the HCA failed";
    return true;  // the connections see it in this pass
  }
  for (int i = 0; i < n; ++i) {
    auto it = routes_.find(wcs[i].qp_num);
    if (it != routes_.end()) {
      it->second->wcs.push_back(wcs[i]);
    } else if (!strayNoted_) {
      // A QP destroyed after it posted (its connection is gone): nobody
      // waits for it.
      strayNoted_ = true;
      WEFT_INFO(kNet, "NET/IB: rank %d on %s: dropped a completion of QP %u, which no connection owns (status %d)",
                rank_, dev_.name.c_str(), wcs[i].qp_num, static_cast<int>(wcs[i].status));
    }
  }
  return n > 0;
}

void SharedCq::failed(const std::exception& e) noexcept {
  try {
    breakWith(e.what());
  } catch (...) {
  }
}

RankProgress::RankProgress(IbDevice& dev, int rank) : cq(std::make_unique<SharedCq>(dev, rank)) {
  // Completions and credits arrive without a ring, so an idle proxy naps in
  // 50 us slices: short enough to keep polling, long enough to leave the
  // core to ranks that need it.
  proxy = std::make_unique<ProxyService>("weft-ib-" + std::to_string(rank), 50 * 1000);
  proxy->add(cq.get());  // first: every pass polls before the connections look
}

RankProgress::~RankProgress() {
  proxy->remove(cq.get());
  proxy.reset();
}

}  // namespace weft::ib
