// A hostile client of weft's listening ports, for tools/fault-campaign.sh.
//
//   fault_peer <ip:port> root|peer|data <mode> <count> [nranks] [hold ms]
//
// Modes without the secret:
//   garbage     <count> connections, each sending 1..512 random bytes
//   truncated   <count> connections, each sending 12 bytes of a challenge,
//               then shutting down its sending side
//   wrongsecret <count> full handshakes answered with a proof from a random
//               secret
//   replay      one real handshake (relayed, its bytes recorded), then
//               <count> connections replaying the recorded challenge and proof
//               (needs the secret for the recording: the bytes on the wire are
//               what an eavesdropper would have captured)
//   stall       <count> connections at once, each sending the 16-byte
//               header of a challenge and nothing more for <hold ms>
//   flood       <count> connections in a row, each closed at once
// Mode with the secret (WEFT_COMM_ID / WEFT_COMM_SECRET in the environment, as
// the job's ranks have them):
//   hostile     handshakes that succeed, then hellos with out-of-range values
//               for the port's purpose (ranks, nranks, socket indices, magic),
//               each <count> times
//
// Every connection must be closed by the listener (EOF or reset), after
// whatever reply it sends, within 8 s (weft's hello timeout is 5 s); the
// stall mode waits <hold ms> at most and reports when the listener gave up.
// Prints one line per mode: attempts, refused, connects that failed (port
// closed: the listener has finished, counted apart), left open, slowest
// refusal. Exit 0 when none was left open, 1 otherwise, 2 on usage errors.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/handshake.h"
#include "src/bootstrap/wire.h"
#include "src/util/socket.h"
#include "transports/socket/socket_wire.h"

namespace {

using namespace weft;
namespace hs = weft::handshake;

constexpr int64_t kRefuseBoundMs = 8000;

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Tally {
  long attempts = 0, refused = 0, connectFailed = 0, leftOpen = 0;
  int64_t slowestMs = 0;
};

std::mt19937_64 rng{std::random_device{}()};

int dial(const SocketAddress& addr) {
  int fd = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, &addr.sa, addr.length()) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool sendRaw(int fd, const void* p, size_t n) { return send(fd, p, n, MSG_NOSIGNAL) == ssize_t(n); }

// Reads and discards until the peer closes (true) or `boundMs` passes (false).
bool waitClosed(int fd, int64_t boundMs) {
  const int64_t end = nowMs() + boundMs;
  char buf[4096];
  while (nowMs() < end) {
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, int(std::max<int64_t>(1, end - nowMs())));
    if (r <= 0) continue;
    ssize_t got = recv(fd, buf, sizeof buf, 0);
    if (got <= 0) return true;  // EOF or reset: closed
  }
  return false;
}

// Runs one attempt: dial, let `act` send (false = it found the port closed
// or the connection gone before it could send), then wait for the close.
template <class Act>
void attempt(const SocketAddress& addr, Tally& t, Act act) {
  t.attempts++;
  int fd = dial(addr);
  if (fd < 0) {
    t.connectFailed++;
    return;
  }
  const int64_t start = nowMs();
  act(fd);
  if (waitClosed(fd, kRefuseBoundMs)) {
    t.refused++;
    t.slowestMs = std::max(t.slowestMs, nowMs() - start);
  } else {
    t.leftOpen++;
  }
  close(fd);
}

hs::Purpose purposeOf(const std::string& p) {
  return p == "root" ? hs::Purpose::kRoot : p == "peer" ? hs::Purpose::kPeer : hs::Purpose::kSocketData;
}

hs::Challenge challenge(hs::Purpose purpose) {
  hs::Challenge c{hs::kChallengeMagic, hs::kVersion, static_cast<uint32_t>(purpose), 0, {}};
  randomBytes(c.nonce, sizeof c.nonce);
  return c;
}

Secret jobSecret() {
  weftUniqueId id;
  if (weftGetUniqueId(&id) != weftSuccess) {
    std::fprintf(stderr, "fault_peer: weftGetUniqueId failed (set WEFT_COMM_ID as the job has it)\n");
    std::exit(2);
  }
  return uniqueIdSecret(id);
}

// The connector's half of a real handshake, relayed through a socket pair so
// that the bytes it sends are recorded.
std::string recordHandshake(const SocketAddress& addr, hs::Purpose purpose, const Secret& secret) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return {};
  int server = dial(addr);
  if (server < 0) {
    close(pair[0]);
    close(pair[1]);
    return {};
  }
  std::string sent;
  std::atomic<bool> done{false};
  std::thread relay([&] {
    char buf[512];
    while (!done.load()) {
      pollfd p[2] = {{pair[1], POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(p, 2, 50) <= 0) continue;
      if (p[0].revents & POLLIN) {
        ssize_t n = recv(pair[1], buf, sizeof buf, 0);
        if (n <= 0) break;
        sent.append(buf, size_t(n));
        sendRaw(server, buf, size_t(n));
      }
      if (p[1].revents & (POLLIN | POLLHUP)) {
        ssize_t n = recv(server, buf, sizeof buf, 0);
        if (n <= 0) break;
        sendRaw(pair[1], buf, size_t(n));
      }
    }
  });
  try {
    hs::connectSide(pair[0], secret, purpose, Deadline::after(5000), StopFlags{}, "recording");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_peer: the recorded handshake failed: %s\n", e.what());
  }
  usleep(100000);  // let the relay pass the proof on
  done.store(true);
  relay.join();
  close(pair[0]);
  close(pair[1]);
  close(server);
  return sent;
}

// Out-of-range hellos for each purpose, as raw structs.
std::vector<std::string> hostileHellos(hs::Purpose purpose, int nranks) {
  using namespace bootstrap_wire;
  std::vector<std::string> out;
  auto add = [&out](const auto& v) { out.emplace_back(reinterpret_cast<const char*>(&v), sizeof v); };
  if (purpose == hs::Purpose::kRoot) {
    SocketAddress listen = SocketAddress::parse("127.0.0.1:1", "listen");
    for (auto [rank, n] : std::vector<std::pair<int, int>>{
             {-1, nranks}, {nranks + 7, nranks}, {0, INT_MAX}, {0, 0}, {INT_MIN, -5}, {1, kMaxRanks + 1}})
      add(RootHello{kRootHelloMagic, kVersion, rank, n, listen});
    add(RootHello{kRootHelloMagic, kVersion, 1, nranks, SocketAddress{}});  // no listen address
    add(RootHello{0xdeadbeef, kVersion, 1, nranks, listen});
    add(RootHello{kRootHelloMagic, kVersion + 9, 1, nranks, listen});
  } else if (purpose == hs::Purpose::kPeer) {
    for (auto [from, n] : std::vector<std::pair<int, int>>{
             {-1, nranks}, {nranks + 3, nranks}, {INT_MAX, nranks}, {0, nranks + 1}, {0, INT_MIN}})
      add(PeerHello{kPeerHelloMagic, kVersion, from, n});
    add(PeerHello{0xdeadbeef, kVersion, 0, nranks});
  } else {
    using socket_wire::SocketHello;
    constexpr uint32_t m = socket_wire::kHelloMagic, v = socket_wire::kVersion;
    add(SocketHello{m, v, -5, 0, 0, 0});
    add(SocketHello{m, v, nranks + 1, 0, 0, 0});
    add(SocketHello{m, v, 0, 999999, 0, 0});
    add(SocketHello{m, v, 0, 0, ~0ull, uint64_t(rng())});
    add(SocketHello{0xdeadbeef, v, 0, 0, 0, 0});
  }
  return out;
}

void hostile(const SocketAddress& addr, hs::Purpose purpose, int nranks, long count, Tally& t) {
  const Secret secret = jobSecret();
  for (long i = 0; i < count; i++) {
    for (const std::string& hello : hostileHellos(purpose, nranks)) {
      attempt(addr, t, [&](int fd) {
        try {
          hs::Session s = hs::connectSide(fd, secret, purpose, Deadline::after(5000), StopFlags{}, "listener");
          hs::sendSigned(fd, s.toAcceptor, hello.data(), hello.size(), Deadline::after(5000), StopFlags{}, "hello");
        } catch (const std::exception& e) {
          // A listener that refuses before the hello (it has finished, or
          // turns away a handshake) is a refusal too: waitClosed sees it.
          // A rank listener proves a key bound to the job's set-up, which
          // the secret alone cannot check: the connector gives up as a
          // client would (its FIN), and the listener must then close at
          // once rather than at its handshake bound.
          ::shutdown(fd, SHUT_WR);
        }
      });
    }
  }
}

void stall(const SocketAddress& addr, hs::Purpose purpose, long count, int64_t holdMs, Tally& t) {
  std::vector<int> fds;
  const int64_t start = nowMs();
  for (long i = 0; i < count; i++) {
    t.attempts++;
    int fd = dial(addr);
    if (fd < 0) {
      t.connectFailed++;
      continue;
    }
    hs::Challenge c = challenge(purpose);
    sendRaw(fd, &c, 16);  // magic, version, purpose, pad: the nonce never comes
    fds.push_back(fd);
  }
  // Each stalled connection counts as refused when the listener closes it
  // within the hold; one the listener still holds at the end is "left open"
  // only when the hold exceeded the refusal bound.
  std::vector<bool> closed(fds.size(), false);
  size_t nClosed = 0;
  while (nClosed < fds.size() && nowMs() - start < holdMs) {
    for (size_t i = 0; i < fds.size(); i++) {
      if (closed[i]) continue;
      pollfd p{fds[i], POLLIN, 0};
      char b;
      if (poll(&p, 1, 0) > 0 && recv(fds[i], &b, 1, MSG_DONTWAIT) <= 0) {
        closed[i] = true;
        nClosed++;
        t.refused++;
        t.slowestMs = std::max(t.slowestMs, nowMs() - start);
      }
    }
    usleep(10000);
  }
  if (holdMs > kRefuseBoundMs) t.leftOpen += long(fds.size() - nClosed);
  for (int fd : fds) close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s <ip:port> root|peer|data <mode> <count> [nranks] [hold ms]\n", argv[0]);
    return 2;
  }
  SocketAddress addr;
  try {
    addr = SocketAddress::parse(argv[1], "address");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_peer: %s\n", e.what());
    return 2;
  }
  const std::string purposeName = argv[2], mode = argv[3];
  const hs::Purpose purpose = purposeOf(purposeName);
  const long count = std::atol(argv[4]);
  const int nranks = argc > 5 ? std::atoi(argv[5]) : 2;
  const int64_t holdMs = argc > 6 ? std::atoll(argv[6]) : 10000;
  Tally t;
  if (mode == "garbage") {
    for (long i = 0; i < count; i++)
      attempt(addr, t, [](int fd) {
        std::string junk(1 + rng() % 512, '\0');
        for (char& c : junk) c = char(rng());
        sendRaw(fd, junk.data(), junk.size());
      });
  } else if (mode == "truncated") {
    for (long i = 0; i < count; i++)
      attempt(addr, t, [purpose](int fd) {
        hs::Challenge c = challenge(purpose);
        sendRaw(fd, &c, 12);
        shutdown(fd, SHUT_WR);
      });
  } else if (mode == "wrongsecret") {
    for (long i = 0; i < count; i++)
      attempt(addr, t, [purpose](int fd) {
        hs::Challenge c = challenge(purpose);
        hs::Response r;
        hs::Proof p;
        randomBytes(p.mac, sizeof p.mac);
        if (sendRaw(fd, &c, sizeof c) && recv(fd, &r, sizeof r, MSG_WAITALL) == ssize_t(sizeof r))
          sendRaw(fd, &p, sizeof p);
      });
  } else if (mode == "replay") {
    const std::string rec = recordHandshake(addr, purpose, jobSecret());
    if (rec.size() < sizeof(hs::Challenge) + sizeof(hs::Proof)) {
      // The listener closed before the recording could finish: nothing to replay to.
      t.attempts = t.connectFailed = count;
    } else {
      for (long i = 0; i < count; i++)
        attempt(addr, t, [&rec](int fd) {
          hs::Response r;
          if (sendRaw(fd, rec.data(), sizeof(hs::Challenge)) &&
              recv(fd, &r, sizeof r, MSG_WAITALL) == ssize_t(sizeof r))
            sendRaw(fd, rec.data() + sizeof(hs::Challenge), rec.size() - sizeof(hs::Challenge));
        });
    }
  } else if (mode == "stall") {
    stall(addr, purpose, count, holdMs, t);
  } else if (mode == "flood") {
    for (long i = 0; i < count; i++) {
      t.attempts++;
      int fd = dial(addr);
      if (fd < 0) t.connectFailed++;
      else {
        t.refused++;  // closed by us at once: the listener must just cope
        close(fd);
      }
    }
  } else if (mode == "hostile") {
    hostile(addr, purpose, nranks, count, t);
  } else {
    std::fprintf(stderr, "fault_peer: unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::printf("fault_peer %s %s %s: %ld attempts, %ld refused, %ld connects failed (port closed), %ld left open, "
              "slowest refusal %ld ms\n",
              mode.c_str(), purposeName.c_str(), argv[1], t.attempts, t.refused, t.connectFailed, t.leftOpen,
              long(t.slowestMs));
  return t.leftOpen ? 1 : 0;
}
