// Messages that arrived from peers, waiting for recv(peer, tag).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "src/util/clock.h"

namespace weft {

class Mailbox {
 public:
  explicit Mailbox(int nranks) : gone_(nranks, PeerGone::No) {}

  enum class PeerGone { No, SaidGoodbye, Lost };

  void push(int peer, uint64_t tag, std::vector<char> payload);
  // The next message from (peer, tag). Throws weftTimeout at the deadline,
  // weftRemoteError after abort() or once the peer is gone with nothing queued.
  std::vector<char> pop(int peer, uint64_t tag, Deadline deadline);
  // The same wait without raising (and so without a WARN line): for waits
  // whose failure is an answer, such as a diagnosis query to a dead rank.
  enum class PopStatus { Ok, TimedOut, Gone, Aborted };
  PopStatus tryPop(int peer, uint64_t tag, Deadline deadline, std::vector<char>* msg);

  void markGone(int peer, PeerGone how);
  PeerGone gone(int peer);
  void abort();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, uint64_t>, std::deque<std::vector<char>>> queues_;
  std::vector<PeerGone> gone_;
  bool aborted_ = false;
};

}  // namespace weft
