#include "src/bootstrap/mailbox.h"

#include "src/util/error.h"

namespace weft {

void Mailbox::push(int peer, uint64_t tag, std::vector<char> payload) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queues_[{peer, tag}].push_back(std::move(payload));
  }
  cv_.notify_all();
}

std::vector<char> Mailbox::pop(int peer, uint64_t tag, Deadline deadline) {
  std::vector<char> msg;
  switch (tryPop(peer, tag, deadline, &msg)) {
    case PopStatus::Ok: return msg;
    case PopStatus::Aborted:
      raise(weftRemoteError, "bootstrap: aborted while waiting for rank %d (tag %#lx)", peer,
            static_cast<unsigned long>(tag));
    case PopStatus::Gone: {
      std::lock_guard<std::mutex> lock(mu_);
      raise(weftRemoteError, "bootstrap: rank %d %s while this rank waits for its message (tag %#lx)", peer,
            gone_[peer] == PeerGone::Lost ? "was lost (connection closed without goodbye)" : "has shut down",
            static_cast<unsigned long>(tag));
    }
    case PopStatus::TimedOut: break;
  }
  raise(weftTimeout, "bootstrap: timed out waiting for a message from rank %d (tag %#lx)", peer,
        static_cast<unsigned long>(tag));
}

Mailbox::PopStatus Mailbox::tryPop(int peer, uint64_t tag, Deadline deadline, std::vector<char>* msg) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (aborted_) return PopStatus::Aborted;
    auto it = queues_.find({peer, tag});
    if (it != queues_.end() && !it->second.empty()) {
      *msg = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) queues_.erase(it);
      return PopStatus::Ok;
    }
    if (gone_[peer] != PeerGone::No) return PopStatus::Gone;
    if (deadline.passed()) return PopStatus::TimedOut;
    cv_.wait_for(lock, std::chrono::nanoseconds(deadline.remainingNs()));
  }
}

void Mailbox::markGone(int peer, PeerGone how) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    gone_[peer] = how;
  }
  cv_.notify_all();
}

Mailbox::PeerGone Mailbox::gone(int peer) {
  std::lock_guard<std::mutex> lock(mu_);
  return gone_[peer];
}

void Mailbox::abort() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
  }
  cv_.notify_all();
}

}  // namespace weft
