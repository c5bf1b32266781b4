// TCP helpers shared by the bootstrap and the socket transport.
//
// Addresses are a fixed-size POD so that they can travel inside the unique id
// and inside bootstrap messages unchanged. Every blocking operation polls in
// short slices so that it honours a Deadline and stop flags (an abort flag,
// a connection's own shutdown flag) and never hangs.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "src/util/clock.h"

namespace weft {

// An IPv4 or IPv6 address and port (sa_family AF_UNSPEC when empty).
struct SocketAddress {
  union {
    sockaddr sa;
    sockaddr_in v4;
    sockaddr_in6 v6;
  };

  bool empty() const { return sa.sa_family != AF_INET && sa.sa_family != AF_INET6; }
  socklen_t length() const;
  uint16_t port() const;
  void setPort(uint16_t port);
  bool isLoopback() const;
  // "127.0.0.1:5000" or "[::1]:5000".
  std::string str() const;
  // Parses "<ipv4>:<port>", "[<ipv6>]:<port>" or "<ipv6>:<port>" (last colon
  // separates the port). Throws weftInvalidArgument naming `what` on error.
  static SocketAddress parse(const std::string& text, const char* what);
  static SocketAddress fromSockaddr(const sockaddr* sa, socklen_t len);
};
static_assert(std::is_trivially_copyable_v<SocketAddress>);
static_assert(sizeof(SocketAddress) == 28);

// A network interface that is up and has an address.
struct NetInterface {
  std::string name;
  SocketAddress addr;  // port 0
  int prefixLen = -1;  // of the netmask (24 for 255.255.255.0); -1 when unknown
};

// All up interfaces with an IPv4 or IPv6 address (IPv6 link-local excluded).
std::vector<NetInterface> listInterfaces();

// Whether `target` lies in the subnet of interface address `iface` (same
// family, first prefixLen bits equal). False when prefixLen is unknown.
bool inSubnet(const SocketAddress& iface, int prefixLen, const SocketAddress& target);

// Whether interface `name` passes a WEFT_SOCKET_IFNAME-style filter: a comma
// list of name prefixes; a leading '^' turns it into an exclude list; a
// leading '=' (after any '^') makes the names exact instead of prefixes.
bool interfaceMatches(const std::string& filter, const std::string& name);

// The interface the bootstrap and the socket transport use: the first that
// matches WEFT_SOCKET_IFNAME when set (error if none does); otherwise, with
// WEFT_COMM_ID set, the first whose subnet holds the root's address (the
// network the ranks evidently share; loopback for a 127.* root); otherwise
// the first up interface that is neither loopback nor docker*, IPv4
// preferred, else loopback.
NetInterface chooseInterface();
// The same choice from a given list, filter and root address (`root` null or
// empty: none), without reading the environment. Throws as chooseInterface.
NetInterface pickInterface(const std::vector<NetInterface>& all, const std::string* filter,
                           const SocketAddress* root);

// Up to two flags that end a wait early when either becomes true (an abort
// flag and a connection's own shutdown flag). Null entries are ignored.
struct StopFlags {
  const std::atomic<bool>* a = nullptr;
  const std::atomic<bool>* b = nullptr;
  bool raised() const {
    return (a && a->load(std::memory_order_relaxed)) || (b && b->load(std::memory_order_relaxed));
  }
};

// A deadline that never passes, for data-path I/O bounded only by stop flags.
inline Deadline noDeadline() { return Deadline{INT64_MAX}; }

// Owns a file descriptor; closes it on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void close();
  // shutdown(2) both directions: wakes a peer (and local pollers) without
  // releasing the descriptor, so another thread may still be using it.
  void shutdownBoth();

 private:
  int fd_ = -1;
};

// Socket buffer size for data sockets (WEFT_SOCKET_BUFFSIZE, 0 = kernel
// autotuning).
int socketBufferBytes();

// Listens on addr (port 0: ephemeral) and returns the bound address.
Socket listenOn(const SocketAddress& addr, SocketAddress* bound, int backlog = 128);

// Connects, retrying refused/unreachable attempts until the deadline
// (weftTimeout) or a stop flag (weftRemoteError). Every socket gets
// TCP_NODELAY; dataSocket: the data buffer sizes too.
Socket connectTo(const SocketAddress& addr, Deadline deadline, StopFlags stop, bool dataSocket);

// Waits for one incoming connection. Returns an invalid Socket when the
// deadline passed or a stop flag was raised (callers decide what that means).
// With `limitErr`, running out of descriptors or buffers (EMFILE, ENFILE,
// ENOBUFS, ENOMEM) also returns an invalid Socket with *limitErr set,
// instead of throwing: a listener can wait for descriptors to come back.
Socket acceptFrom(const Socket& listener, Deadline deadline, StopFlags stop, SocketAddress* peer,
                  int* limitErr = nullptr);

// Takes one connection already waiting on the listener (its descriptor is
// non-blocking), or returns an invalid Socket at once when none waits. Out of
// descriptors or buffers: invalid, with *limitErr set (never null).
Socket acceptWaiting(const Socket& listener, SocketAddress* peer, int* limitErr);

enum class IoStatus { Ok, Eof, Timeout, Stopped, Error };

// Moves exactly `bytes` bytes or stops. Never throws; *err gets errno for
// IoStatus::Error (ECONNRESET/EPIPE are reported as Eof: the peer is gone).
IoStatus trySendAll(int fd, const void* data, size_t bytes, Deadline deadline, StopFlags stop, int* err = nullptr);
IoStatus tryRecvAll(int fd, void* data, size_t bytes, Deadline deadline, StopFlags stop, int* err = nullptr);
// Two buffers in one gather write (a small header followed by a payload).
IoStatus trySendTwo(int fd, const void* a, size_t aBytes, const void* b, size_t bBytes, Deadline deadline,
                    StopFlags stop, int* err = nullptr);

// Throwing forms: weftRemoteError on EOF/reset or a stop flag, weftTimeout on
// the deadline, weftSystemError otherwise. `what` names the peer in the message.
void sendAll(int fd, const void* data, size_t bytes, Deadline deadline, StopFlags stop, const char* what);
void recvAll(int fd, void* data, size_t bytes, Deadline deadline, StopFlags stop, const char* what);

// Text for an IoStatus (for log lines).
const char* ioStatusName(IoStatus s);

// Fills buf with bytes from getrandom(2).
void randomBytes(void* buf, size_t bytes);

}  // namespace weft
