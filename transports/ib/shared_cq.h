// One completion queue for every connection of a rank on one HCA, polled
// once per pass of that rank's progress thread (proxy_service.h), which
// hands each completion to its connection by QP number (wc.qp_num). With a
// queue per connection direction, a rank talking to 32 peers on 2 channels
// polled 128 mostly empty queues per pass; now it polls one.
//
// The queue grows (ibv_resize_cq) as connections join, so that it always
// holds every completion they can have outstanding; past the HCA's
// max_cqe a connection is refused with an error naming the limit.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/proxy_service.h"

namespace weft::ib {

struct IbDevice;

// A connection's share of the queue: the completions routed to it and not
// yet taken. Only the SharedCq touches it, under its lock.
struct CompletionInbox {
  std::deque<ibv_wc> wcs;
};

class SharedCq final : public ProxyTask {
 public:
  // Creates the queue on `dev`. Throws weftSystemError.
  SharedCq(IbDevice& dev, int rank);
  ~SharedCq() override;  // every QP on it must be destroyed before
  SharedCq(const SharedCq&) = delete;
  SharedCq& operator=(const SharedCq&) = delete;

  ibv_cq* cq() const { return cq_; }
  int capacity() const;

  // Room for `entries` more outstanding completions, for `who` (a
  // connection, for the error); grows the queue when needed. Throws
  // weftSystemError naming the HCA's limit when it cannot.
  void reserve(int entries, const std::string& who);
  void unreserve(int entries);

  // Completions of QP `qpn` go to `inbox` from now on.
  void attach(uint32_t qpn, CompletionInbox* inbox);
  // No completion reaches `inbox` once this returns; call it after its QPs
  // were destroyed (whatever of theirs is still queued is dropped).
  void detach(CompletionInbox* inbox);

  // Moves up to `max` of inbox's completions into `out`, oldest first.
  // -1 when the queue itself failed; *why then says how.
  int take(CompletionInbox* inbox, ibv_wc* out, int max, std::string* why);

  // Whether the queue failed (overrun, HCA error): it serves no new
  // connection.
  bool broken() const;

  // The progress thread's pass: one poll, completions routed.
  bool progress() override;
  void failed(const std::exception& e) noexcept override;

 private:
  void breakWith(const std::string& why);

  IbDevice& dev_;
  int rank_;
  ibv_cq* cq_ = nullptr;
  int maxCqe_ = 0;
  mutable std::mutex mu_;
  int capacity_ = 0;
  int reserved_ = 0;
  std::map<uint32_t, CompletionInbox*> routes_;
  std::string error_;  // non-empty once broken
  bool strayNoted_ = false;
};

// What a rank's connections on one device share: the completion queue and
// the progress thread that polls it (and serves them).
struct RankProgress {
  std::unique_ptr<SharedCq> cq;
  std::unique_ptr<ProxyService> proxy;
  RankProgress(IbDevice& dev, int rank);
  ~RankProgress();  // stops the thread before the queue goes
};

}  // namespace weft::ib
