// Every connection into one rank's bootstrap, served by one thread.
//
// The thread polls the listener, the connections still in their handshake
// (each a non-blocking handshake::Acceptor with its own bound) and the
// authenticated ones, whose frames it assembles without ever blocking: a
// silent stray, a slow peer or a peer stopped mid-frame delays nobody, and a
// rank has one reader thread whatever its number of peers. Complete frames
// go to the Sink; a connection the sender retires (a close frame) or ends
// with a goodbye is closed at once, so descriptors do not pile up.
//
// A rank holds at most `maxIncoming` connections into it (handshaking or
// authenticated): at that bound the listener rests (new connections wait in
// the kernel's backlog, holding no descriptor here) and the thread asks the
// senders of idle connections to retire them (kRetireRequest). The same
// thread watches this rank's own outgoing connections for such requests
// (Sink::watchOutgoing), so a rank answers them even while its application
// thread is blocked, on another rank's full listener say: no cycle of full
// ranks can wait on each other.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "src/bootstrap/handshake.h"
#include "src/bootstrap/wire.h"

namespace weft {

class Inbox {
 public:
  // Called on the inbox thread; must not wait on the application.
  struct Sink {
    virtual ~Sink() = default;
    virtual void onFrame(int peer, uint64_t tag, std::vector<char> payload) = 0;
    // A connection from `peer` ended without a goodbye or a close frame.
    virtual void onLost(int peer, const char* why) = 0;
    // This rank's outgoing connections to watch: (descriptor, peer).
    virtual void watchOutgoing(std::vector<std::pair<int, int>>* fds) = 0;
    // The outgoing connection to `peer` (descriptor fd when listed) is
    // readable: a retire request, or the receiver's close after one. Returns
    // false when it could not look now (a send on it is under way).
    virtual bool onOutgoingReadable(int peer, int fd) = 0;
  };

  Inbox(int rank, int nranks, const Secret& secret, Socket listener, Sink* sink, size_t maxIncoming);
  ~Inbox();
  // Ends the thread (idempotent); no Sink call follows its return.
  void stop();
  // Authenticated connections open now (for tests and measurements).
  size_t openConnections() const { return open_.load(); }
  // Connections into this rank (handshaking or authenticated), at most so far.
  size_t peakConnections() const { return peak_.load(); }
  // Has the thread look at the outgoing connections again (one just opened).
  void wake();

 private:
  struct Pending;
  struct Link;
  enum class ReadResult { More, Closed, Retired, Broken };

  void run();
  void loop();
  int pollTimeoutMs() const;
  void acceptWaitingConnections();
  void advanceHandshake(std::list<Pending>::iterator it);
  bool admit(Pending& p, int* peer, std::string* why);
  ReadResult readFrames(Link& l);
  ReadResult onCompleteFrame(Link& l);
  void reject(const std::string& from, const std::string& why);
  bool full() const { return links_.size() + pending_.size() >= maxIncoming_; }
  void askToRetire();
  void serveOutgoing(const std::vector<pollfd>& pfds, size_t first);

  const int rank_;
  const int nranks_;
  const Secret secret_;
  Socket listener_;
  Sink* const sink_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};
  std::atomic<size_t> peak_{0};
  const size_t maxIncoming_;
  Socket wake_;                   // an eventfd: wake()
  std::vector<std::pair<int, int>> watched_;  // (fd, peer) polled this pass
  std::vector<int64_t> deferredUntilNs_;      // per peer: its outgoing connection was busy
  uint64_t activity_ = 0;         // orders links by their last frame
  bool starved_ = false;          // out of descriptors: the listener rests a slice
  bool warnedStarved_ = false;
  std::list<Pending> pending_;    // in their handshake
  std::list<Link> links_;         // authenticated
  std::vector<uint8_t> linkedFrom_;  // a live connection from that rank exists
  std::thread thread_;
};

}  // namespace weft
