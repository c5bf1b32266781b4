// Every connection into one rank's bootstrap, served by one thread.
//
// The thread polls the listener, the connections still in their handshake
// (each a non-blocking handshake::Acceptor with its own bound) and the
// authenticated ones, whose frames it assembles without ever blocking: a
// silent stray, a slow peer or a peer stopped mid-frame delays nobody, and a
// rank has one reader thread whatever its number of peers. Complete frames
// go to the Sink; a connection the sender retires (a close frame) or ends
// with a goodbye is closed at once, so descriptors do not pile up.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
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
  };

  Inbox(int rank, int nranks, const Secret& secret, Socket listener, Sink* sink);
  ~Inbox();
  // Ends the thread (idempotent); no Sink call follows its return.
  void stop();
  // Authenticated connections open now (for tests and measurements).
  size_t openConnections() const { return open_.load(); }

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

  const int rank_;
  const int nranks_;
  const Secret secret_;
  Socket listener_;
  Sink* const sink_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};
  bool starved_ = false;          // out of descriptors: the listener rests a slice
  bool warnedStarved_ = false;
  std::list<Pending> pending_;    // in their handshake
  std::list<Link> links_;         // authenticated
  std::vector<uint8_t> linkedFrom_;  // a live connection from that rank exists
  std::thread thread_;
};

}  // namespace weft
