// Shared by the stateful fuzz harnesses: loopback connections that run the
// real handshake (the harness holds the secret, as a hostile but
// authenticated peer would) and read the root's signed reply.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include <string>
#include <vector>

#include "src/bootstrap/handshake.h"
#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "src/util/socket.h"

namespace weft::fuzz {

// 127.0.0.1:port (0: any port, for listeners).
inline SocketAddress loopback(uint16_t port = 0) {
  SocketAddress a = SocketAddress::parse("127.0.0.1:1", "fuzz harness");
  a.setPort(port);
  return a;
}

// One connect, as the socket layer sets it up (no delay, non-blocking);
// invalid when refused. connectTo retries a refused connect with a backoff
// until its deadline, which a harness whose listener may have ended on
// purpose would wait out on every such input. A local port still held by
// an earlier connection (EADDRNOTAVAIL) is tried again: at a few hundred
// inputs per second loopback runs short of them for moments.
inline Socket connectOnce(const SocketAddress& to) {
  const Deadline d = Deadline::after(2000);
  for (;;) {
    Socket s(::socket(to.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid()) return Socket();
    const int one = 1;
    setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int e = ::connect(s.fd(), &to.sa, to.length()) == 0 ? 0 : errno;
    if (e == EINPROGRESS) {
      pollfd p{s.fd(), POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(d.remainingNs() / 1000000 + 1)) <= 0) return Socket();
      socklen_t len = sizeof(e);
      getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &e, &len);
    }
    if (e == 0) return s;
    if (e != EADDRNOTAVAIL || d.passed()) return Socket();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Closes with a reset instead of a FIN, for the harness's connections once
// an input's checks are done: the side that closes first keeps its port in
// TIME_WAIT for a minute, and hundreds of inputs per second would use up
// loopback's ports (connects then fail with EADDRNOTAVAIL).
inline void closeWithReset(Socket& s) {
  if (!s.valid()) return;
  const linger l{1, 0};
  setsockopt(s.fd(), SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  s.close();
}

// A connection that proved the secret, with its session keys.
struct AuthedConn {
  Socket sock;
  handshake::Session session;
};

inline AuthedConn connectAuthed(const SocketAddress& to, const Secret& secret, handshake::Purpose purpose,
                                int64_t ms = 2000) {
  const Deadline d = Deadline::after(ms);
  AuthedConn c;
  c.sock = connectOnce(to);
  if (!c.sock.valid()) raise(weftRemoteError, "fuzz harness: connect to %s refused", to.str().c_str());
  c.session = handshake::connectSide(c.sock.fd(), secret, purpose, d, StopFlags{}, "fuzz target");
  return c;
}

// Sends raw bytes; a peer that already closed is not the harness's failure.
inline void sendRaw(int fd, const void* data, size_t bytes) {
  (void)trySendAll(fd, data, bytes, Deadline::after(1000), StopFlags{});
}

// The root's reply as a rank reads it: false when the root closed the
// connection (it rejected the hello); aborts when a reply arrives whose MAC
// does not check out (the root signs every reply it sends).
struct RootAnswer {
  bootstrap_wire::RootReply reply{};
  std::vector<SocketAddress> table;
};
inline bool readRootAnswer(AuthedConn& c, int nranks, int64_t ms, RootAnswer* out) {
  using namespace bootstrap_wire;
  const Deadline d = Deadline::after(ms);
  if (tryRecvAll(c.sock.fd(), &out->reply, sizeof(out->reply), d, StopFlags{}) != IoStatus::Ok) return false;
  out->table.resize(rootReplyTableEntries(out->reply, nranks));
  uint8_t tag[handshake::kMacBytes];
  IoStatus st = tryRecvAll(c.sock.fd(), out->table.data(), out->table.size() * sizeof(SocketAddress), d, StopFlags{});
  if (st == IoStatus::Ok) st = tryRecvAll(c.sock.fd(), tag, sizeof(tag), d, StopFlags{});
  if (st != IoStatus::Ok) {
    fprintf(stderr, "the root's reply was cut short\n");
    abort();
  }
  if (!c.session.toConnector.verify(&out->reply, sizeof(out->reply), out->table.data(),
                                    out->table.size() * sizeof(SocketAddress), tag)) {
    fprintf(stderr, "the root's reply failed its MAC\n");
    abort();
  }
  return true;
}

// Threads of this process now (entries of /proc/self/task).
inline size_t threadCount() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// Whether the thread count fell back to `baseline` within ms. A detached
// thread (the bootstrap root's) still runs its thread-local destructors
// after it says it is done; the leak check that follows an input must not
// run before they did, or it reports their memory as lost.
inline bool threadsBackTo(size_t baseline, int64_t ms) {
  const Deadline d = Deadline::after(ms);
  while (threadCount() > baseline) {
    if (d.passed()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace weft::fuzz
