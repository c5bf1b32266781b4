#include "transports/ib/async_events.h"

#include <fcntl.h>
#include <poll.h>

#include "src/util/log.h"

namespace weft::ib {

namespace {

constexpr int kWaitSliceMs = 100;  // how soon a stop is noticed

bool isQpEvent(ibv_event_type t) {
  return t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR || t == IBV_EVENT_QP_ACCESS_ERR ||
         t == IBV_EVENT_PATH_MIG_ERR;
}

}  // namespace

const char* completionHint(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_RETRY_EXC_ERR:
      return "the peer is unreachable or the fabric drops packets (check the link, WEFT_IB_GID_INDEX, "
             "WEFT_IB_TC, and PFC/ECN on RoCE switches)";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "the peer stopped posting receives (its process hung or exited?)";
    case IBV_WC_REM_ACCESS_ERR: return "the peer's registered memory is gone (peer exited or aborted?)";
    case IBV_WC_WR_FLUSH_ERR: return "the queue pair was already in error";
    default: return "see the HCA vendor's documentation for this status";
  }
}

AsyncEventThread::AsyncEventThread(const Verbs* v, ibv_context* ctx, std::string devName)
    : v_(v), ctx_(ctx), dev_(std::move(devName)) {
  // Non-blocking, so that a read never outlasts a stop.
  int flags = fcntl(ctx_->async_fd, F_GETFL);
  if (flags >= 0) fcntl(ctx_->async_fd, F_SETFL, flags | O_NONBLOCK);
  thread_ = std::thread([this] { run(); });
}

AsyncEventThread::~AsyncEventThread() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

void AsyncEventThread::watchQp(const void* owner, uint32_t qpn, Failure fail) {
  std::lock_guard<std::mutex> lock(mu_);
  qps_[qpn] = Watch{owner, std::move(fail)};
}

void AsyncEventThread::watchCq(const void* owner, const ibv_cq* cq, Failure fail) {
  std::lock_guard<std::mutex> lock(mu_);
  cqs_[cq] = Watch{owner, std::move(fail)};
}

void AsyncEventThread::unwatch(const void* owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(qps_, [owner](const auto& kv) { return kv.second.owner == owner; });
  std::erase_if(cqs_, [owner](const auto& kv) { return kv.second.owner == owner; });
}

std::string AsyncEventThread::portNote(int port) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = portNotes_.find(port);
  return it == portNotes_.end() ? "" : it->second;
}

std::string AsyncEventThread::eventName(ibv_event_type t) const {
  const char* s = v_->eventTypeStr ? v_->eventTypeStr(t) : nullptr;
  return (s ? std::string(s) : "event") + " (" + std::to_string(static_cast<int>(t)) + ")";
}

void AsyncEventThread::handle(const ibv_async_event& ev) {
  const std::string name = eventName(ev.event_type);
  std::lock_guard<std::mutex> lock(mu_);
  if (isQpEvent(ev.event_type)) {
    const uint32_t qpn = ev.element.qp ? ev.element.qp->qp_num : 0;
    std::string msg = "NET/IB: " + dev_ + " reports " + name + " on QP " + std::to_string(qpn);
    auto it = qps_.find(qpn);
    if (it == qps_.end()) {
      WEFT_WARN("%s (a QP no connection owns any more)", msg.c_str());
      return;
    }
    it->second.fail(msg);
  } else if (ev.event_type == IBV_EVENT_CQ_ERR) {
    std::string msg = "NET/IB: " + dev_ + " reports " + name + " (completion queue overrun?)";
    auto it = cqs_.find(ev.element.cq);
    if (it == cqs_.end()) {
      WEFT_WARN("%s", msg.c_str());
      return;
    }
    it->second.fail(msg);
  } else if (ev.event_type == IBV_EVENT_PORT_ERR || ev.event_type == IBV_EVENT_PORT_ACTIVE ||
             ev.event_type == IBV_EVENT_LID_CHANGE || ev.event_type == IBV_EVENT_GID_CHANGE) {
    const int port = ev.element.port_num;
    portNotes_[port] = dev_ + ":" + std::to_string(port) + " reported " + name;
    // A port that comes back is good news; anything else may explain the
    // retry errors that follow.
    if (ev.event_type == IBV_EVENT_PORT_ACTIVE)
      WEFT_INFO(kNet, "NET/IB: %s:%d reports %s", dev_.c_str(), port, name.c_str());
    else
      WEFT_WARN("NET/IB: %s:%d reports %s: its connections fail once the transport gives up retrying", dev_.c_str(),
                port, name.c_str());
  } else if (ev.event_type == IBV_EVENT_DEVICE_FATAL) {
    std::string msg = "NET/IB: " + dev_ + " reports " + name + ": the HCA stopped working";
    WEFT_WARN("%s", msg.c_str());
    for (auto& [qpn, w] : qps_) w.fail(msg);
  } else {
    WEFT_INFO(kNet, "NET/IB: %s reports %s", dev_.c_str(), name.c_str());
  }
}

void AsyncEventThread::run() {
  while (!stop_.load(std::memory_order_acquire)) {
    pollfd p{ctx_->async_fd, POLLIN, 0};
    int n = ::poll(&p, 1, kWaitSliceMs);
    if (n <= 0 || !(p.revents & POLLIN)) continue;
    ibv_async_event ev{};
    if (v_->getAsyncEvent(ctx_, &ev) != 0) continue;
    try {
      handle(ev);
    } catch (const std::exception& e) {
      WEFT_WARN("NET/IB: handling an async event of %s failed: %s", dev_.c_str(), e.what());
    }
    v_->ackAsyncEvent(&ev);
  }
}

}  // namespace weft::ib
