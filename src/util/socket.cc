#include "src/util/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "src/util/settings.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

// Longest single poll(): how quickly a blocked operation notices a stop flag.
static constexpr int kPollSliceMs = 20;

socklen_t SocketAddress::length() const {
  if (sa.sa_family == AF_INET) return sizeof(sockaddr_in);
  if (sa.sa_family == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

uint16_t SocketAddress::port() const {
  if (sa.sa_family == AF_INET) return ntohs(v4.sin_port);
  if (sa.sa_family == AF_INET6) return ntohs(v6.sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (sa.sa_family == AF_INET) v4.sin_port = htons(port);
  if (sa.sa_family == AF_INET6) v6.sin6_port = htons(port);
}

bool SocketAddress::isLoopback() const {
  if (sa.sa_family == AF_INET) return (ntohl(v4.sin_addr.s_addr) >> 24) == 127;
  if (sa.sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr);
  return false;
}

std::string SocketAddress::str() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &v4.sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(port());
  }
  if (sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &v6.sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(port());
  }
  return "<no address>";
}

SocketAddress SocketAddress::parse(const std::string& text, const char* what) {
  SocketAddress a;
  memset(&a, 0, sizeof(a));
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= text.size())
    raise(weftInvalidArgument, "%s=\"%s\" is not <ip>:<port>", what, text.c_str());
  std::string host = text.substr(0, colon);
  std::string portText = text.substr(colon + 1);
  char* end = nullptr;
  long port = strtol(portText.c_str(), &end, 10);
  if (*end || port <= 0 || port > 65535)
    raise(weftInvalidArgument, "%s=\"%s\": bad port \"%s\"", what, text.c_str(), portText.c_str());
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (inet_pton(AF_INET, host.c_str(), &a.v4.sin_addr) == 1) {
    a.v4.sin_family = AF_INET;
  } else if (inet_pton(AF_INET6, host.c_str(), &a.v6.sin6_addr) == 1) {
    a.v6.sin6_family = AF_INET6;
  } else {
    raise(weftInvalidArgument, "%s=\"%s\": \"%s\" is not a numeric IPv4 or IPv6 address", what, text.c_str(),
          host.c_str());
  }
  a.setPort(static_cast<uint16_t>(port));
  return a;
}

SocketAddress SocketAddress::fromSockaddr(const sockaddr* sa, socklen_t len) {
  SocketAddress a;
  memset(&a, 0, sizeof(a));
  if (sa && sa->sa_family == AF_INET && len >= sizeof(sockaddr_in)) memcpy(&a.v4, sa, sizeof(sockaddr_in));
  if (sa && sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) memcpy(&a.v6, sa, sizeof(sockaddr_in6));
  return a;
}

std::vector<NetInterface> listInterfaces() {
  std::vector<NetInterface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) raiseErrno("getifaddrs");
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    SocketAddress a = SocketAddress::fromSockaddr(i->ifa_addr, len);
    // Link-local IPv6 needs a scope id on every use; not worth the trouble.
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&a.v6.sin6_addr)) continue;
    a.setPort(0);
    int prefix = -1;
    if (i->ifa_netmask && i->ifa_netmask->sa_family == family) {
      const SocketAddress m = SocketAddress::fromSockaddr(i->ifa_netmask, len);
      const auto* bytes = family == AF_INET ? reinterpret_cast<const unsigned char*>(&m.v4.sin_addr)
                                            : reinterpret_cast<const unsigned char*>(&m.v6.sin6_addr);
      const int n = family == AF_INET ? 4 : 16;
      prefix = 0;
      for (int b = 0; b < n; b++) prefix += __builtin_popcount(bytes[b]);
    }
    out.push_back({i->ifa_name, a, prefix});
  }
  freeifaddrs(list);
  return out;
}

bool interfaceMatches(const std::string& filter, const std::string& name) {
  const char* f = filter.c_str();
  bool exclude = false, exact = false;
  if (*f == '^') exclude = true, ++f;
  if (*f == '=') exact = true, ++f;
  bool listed = false;
  std::string rest(f);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) {
      if (exact ? name == item : name.compare(0, item.size(), item) == 0) listed = true;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return exclude ? !listed : listed;
}

bool inSubnet(const SocketAddress& iface, int prefixLen, const SocketAddress& target) {
  const int family = iface.sa.sa_family;
  if (prefixLen < 0 || family != target.sa.sa_family || (family != AF_INET && family != AF_INET6)) return false;
  const auto* a = family == AF_INET ? reinterpret_cast<const unsigned char*>(&iface.v4.sin_addr)
                                    : reinterpret_cast<const unsigned char*>(&iface.v6.sin6_addr);
  const auto* b = family == AF_INET ? reinterpret_cast<const unsigned char*>(&target.v4.sin_addr)
                                    : reinterpret_cast<const unsigned char*>(&target.v6.sin6_addr);
  const int bits = std::min(prefixLen, family == AF_INET ? 32 : 128);
  for (int i = 0; i < bits / 8; i++)
    if (a[i] != b[i]) return false;
  if (bits % 8) {
    const unsigned char mask = static_cast<unsigned char>(0xff00 >> (bits % 8));
    if ((a[bits / 8] & mask) != (b[bits / 8] & mask)) return false;
  }
  return true;
}

NetInterface pickInterface(const std::vector<NetInterface>& all, const std::string* filter,
                           const SocketAddress* root) {
  // With a filter, the filter alone decides. Without one, and with a known
  // root (WEFT_COMM_ID), the network every rank must reach is the root's: a
  // host whose first interface is a management network that the other hosts
  // cannot reach would otherwise advertise an address nobody can connect to
  // (and every rank would wait for its timeout). A 127.* root lands on lo.
  if (!filter && root && !root->empty()) {
    for (const auto& i : all)
      if (inSubnet(i.addr, i.prefixLen, *root)) return i;
    if (root->isLoopback()) {
      for (const auto& i : all)
        if (i.addr.isLoopback() && i.addr.sa.sa_family == root->sa.sa_family) return i;
    }
  }
  // Two passes: IPv4 first, so that a dual-stack interface gives its IPv4
  // address (what most clusters route).
  for (int family : {AF_INET, AF_INET6}) {
    for (const auto& i : all) {
      if (i.addr.sa.sa_family != family) continue;
      if (filter) {
        if (interfaceMatches(*filter, i.name)) return i;
      } else if (!i.addr.isLoopback() && i.name.compare(0, 6, "docker") != 0) {
        return i;
      }
    }
  }
  if (filter) raise(weftSystemError, "WEFT_SOCKET_IFNAME=%s matches no interface that is up", filter->c_str());
  for (const auto& i : all)
    if (i.addr.isLoopback() && i.addr.sa.sa_family == AF_INET) return i;
  for (const auto& i : all)
    if (i.addr.isLoopback()) return i;
  raise(weftSystemError, "no usable network interface (not even loopback is up)");
}

NetInterface chooseInterface() {
  auto filter = settings::get(settings::kSocketIfname);
  // The root's address, parsed quietly: a malformed WEFT_COMM_ID is
  // reported where the id is made; here it only gives no hint.
  SocketAddress root;
  memset(&root, 0, sizeof(root));
  if (auto id = settings::get(settings::kCommId)) {
    size_t end = id->rfind(':');
    if (end == std::string::npos) end = id->size();
    size_t begin = 0;
    if (end >= 2 && (*id)[0] == '[' && (*id)[end - 1] == ']') begin = 1, end -= 1;
    const std::string host(*id, begin, end - begin);
    if (inet_pton(AF_INET, host.c_str(), &root.v4.sin_addr) == 1) root.v4.sin_family = AF_INET;
    else if (inet_pton(AF_INET6, host.c_str(), &root.v6.sin6_addr) == 1) root.v6.sin6_family = AF_INET6;
  }
  return pickInterface(listInterfaces(), filter ? &*filter : nullptr, &root);
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdownBoth() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

int socketBufferBytes() {
  static const int bytes = static_cast<int>(settings::get(settings::kSocketBuffsize));
  return bytes;
}

static void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) raiseErrno("fcntl(O_NONBLOCK)");
}

static int deadPeerSeconds() {
  static const int s = static_cast<int>(settings::get(settings::kSocketDeadPeerS));
  return s;
}

// A host that vanishes (cable, switch port, kernel hang) sends no FIN or RST,
// so without this its connections look alive until WEFT_TIMEOUT_MS. Keepalive
// probes an idle connection; TCP_USER_TIMEOUT bounds how long sent data may
// stay unacknowledged. Either ends the connection with an error, which the
// bootstrap reader and the socket proxies turn into the communicator's
// async error.
static void setDeadPeerOptions(int fd) {
  const int s = deadPeerSeconds();
  if (s <= 0) return;
  int one = 1;
  const int idle = std::max(1, s / 3), count = 3, interval = std::max(1, (s - idle) / count);
  const unsigned userTimeoutMs = static_cast<unsigned>(s) * 1000u;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeoutMs, sizeof(userTimeoutMs));
}

static void setDataOptions(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setDeadPeerOptions(fd);
  int buf = socketBufferBytes();
  if (buf > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
  }
}

Socket listenOn(const SocketAddress& addr, SocketAddress* bound, int backlog) {
  Socket s(::socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) raiseErrno("socket");
  int one = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Accepted sockets inherit these; the receive window is fixed at SYN time,
  // so they must be set before listen().
  setDataOptions(s.fd());
  setNonBlocking(s.fd());
  if (::bind(s.fd(), &addr.sa, addr.length()) != 0) {
    int e = errno;
    raise(weftSystemError, "bind to %s failed: %s", addr.str().c_str(), strerror(e));
  }
  if (::listen(s.fd(), backlog) != 0) raiseErrno("listen");
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (getsockname(s.fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) raiseErrno("getsockname");
  if (bound) *bound = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  return s;
}

static bool retryableConnectError(int e) {
  return e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH || e == ECONNRESET ||
         e == EAGAIN || e == ECONNABORTED;
}

Socket connectTo(const SocketAddress& addr, Deadline deadline, StopFlags stop, bool dataSocket) {
  int backoffMs = 5;
  for (;;) {
    Socket s(::socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) raiseErrno("socket");
    if (dataSocket) {
      setDataOptions(s.fd());
    } else {
      // Bootstrap and handshake messages are small, and a connector often
      // sends two in a row with no answer between (the handshake's proof,
      // then the signed hello; a hello, then the first frame): with Nagle
      // the second waits for the ACK of the first, which the receiver
      // delays by up to 40 ms. Accepted sockets set it too (acceptWaiting).
      int one = 1;
      setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setDeadPeerOptions(s.fd());
    }
    setNonBlocking(s.fd());
    int rc = ::connect(s.fd(), &addr.sa, addr.length());
    int e = rc == 0 ? 0 : errno;
    if (e == EINPROGRESS) {
      // Wait for the handshake in slices; SO_ERROR tells how it ended.
      for (;;) {
        if (stop.raised()) raise(weftRemoteError, "connect to %s: aborted", addr.str().c_str());
        if (deadline.passed())
          raise(weftTimeout, "connect to %s: no answer before the deadline", addr.str().c_str());
        pollfd p{s.fd(), POLLOUT, 0};
        int n = poll(&p, 1, kPollSliceMs);
        if (n < 0 && errno != EINTR) raiseErrno("poll");
        if (n > 0) break;
      }
      socklen_t len = sizeof(e);
      getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &e, &len);
    }
    if (e == 0) return s;
    if (!retryableConnectError(e)) {
      raise(weftSystemError, "connect to %s failed: %s", addr.str().c_str(), strerror(e));
    }
    if (stop.raised()) raise(weftRemoteError, "connect to %s: aborted", addr.str().c_str());
    if (deadline.passed())
      raise(weftTimeout, "connect to %s: %s until the deadline", addr.str().c_str(), strerror(e));
    WEFT_TRACE(kNet | kBootstrap, "connect to %s: %s, retrying in %d ms", addr.str().c_str(), strerror(e), backoffMs);
    int64_t sleepMs = std::min<int64_t>(backoffMs, deadline.remainingNs() / 1000000 + 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
    backoffMs = std::min(backoffMs * 2, 100);
  }
}

Socket acceptFrom(const Socket& listener, Deadline deadline, StopFlags stop, SocketAddress* peer, int* limitErr) {
  for (;;) {
    if (stop.raised() || deadline.passed()) return Socket();
    pollfd p{listener.fd(), POLLIN, 0};
    int64_t sliceMs = std::min<int64_t>(kPollSliceMs, deadline.remainingNs() / 1000000 + 1);
    int n = poll(&p, 1, static_cast<int>(sliceMs));
    if (n < 0 && errno != EINTR) raiseErrno("poll");
    if (n <= 0) continue;
    int lim = 0;
    Socket s = acceptWaiting(listener, peer, &lim);
    if (lim) {
      if (limitErr) {
        *limitErr = lim;
        return Socket();
      }
      errno = lim;
      raiseErrno("accept");
    }
    if (s.valid()) return s;
  }
}

Socket acceptWaiting(const Socket& listener, SocketAddress* peer, int* limitErr) {
  for (;;) {
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = ::accept4(listener.fd(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Socket();
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        *limitErr = errno;
        return Socket();
      }
      raiseErrno("accept");
    }
    if (peer) *peer = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setDeadPeerOptions(fd);
    return Socket(fd);
  }
}

// Waits until fd is ready for `events`; returns Ok, Timeout or Stopped.
static IoStatus waitReady(int fd, short events, Deadline deadline, StopFlags stop) {
  for (;;) {
    if (stop.raised()) return IoStatus::Stopped;
    if (deadline.passed()) return IoStatus::Timeout;
    pollfd p{fd, events, 0};
    int64_t sliceMs = std::min<int64_t>(kPollSliceMs, deadline.remainingNs() / 1000000 + 1);
    int n = poll(&p, 1, static_cast<int>(sliceMs));
    if (n > 0) return IoStatus::Ok;  // readable, writable, or an error the next call reports
    if (n < 0 && errno != EINTR) return IoStatus::Error;
  }
}

static IoStatus classifyErrno(int e, int* err) {
  if (err) *err = e;
  if (e == ECONNRESET || e == EPIPE || e == ENOTCONN) return IoStatus::Eof;
  return IoStatus::Error;
}

IoStatus trySendTwo(int fd, const void* a, size_t aBytes, const void* b, size_t bBytes, Deadline deadline,
                    StopFlags stop, int* err) {
  iovec iov[2] = {{const_cast<void*>(a), aBytes}, {const_cast<void*>(b), bBytes}};
  int first = aBytes ? 0 : 1;
  while (first < 2) {
    msghdr msg{};
    msg.msg_iov = iov + first;
    msg.msg_iovlen = 2 - first;
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return classifyErrno(errno, err);
      IoStatus w = waitReady(fd, POLLOUT, deadline, stop);
      if (w != IoStatus::Ok) return w;
      continue;
    }
    size_t left = static_cast<size_t>(n);
    while (first < 2 && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < 2) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return IoStatus::Ok;
}

IoStatus trySendAll(int fd, const void* data, size_t bytes, Deadline deadline, StopFlags stop, int* err) {
  return trySendTwo(fd, nullptr, 0, data, bytes, deadline, stop, err);
}

IoStatus tryRecvAll(int fd, void* data, size_t bytes, Deadline deadline, StopFlags stop, int* err) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return IoStatus::Eof;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return classifyErrno(errno, err);
    IoStatus w = waitReady(fd, POLLIN, deadline, stop);
    if (w != IoStatus::Ok) return w;
  }
  return IoStatus::Ok;
}

const char* ioStatusName(IoStatus s) {
  switch (s) {
    case IoStatus::Ok: return "ok";
    case IoStatus::Eof: return "connection closed by peer";
    case IoStatus::Timeout: return "deadline passed";
    case IoStatus::Stopped: return "aborted";
    case IoStatus::Error: return "socket error";
  }
  return "?";
}

static void throwIo(IoStatus s, int err, const char* op, const char* what) {
  switch (s) {
    case IoStatus::Ok: return;
    case IoStatus::Eof: raise(weftRemoteError, "%s %s: connection closed by peer", op, what);
    case IoStatus::Timeout: raise(weftTimeout, "%s %s: deadline passed", op, what);
    case IoStatus::Stopped: raise(weftRemoteError, "%s %s: aborted", op, what);
    case IoStatus::Error: raise(weftSystemError, "%s %s: %s (errno %d)", op, what, strerror(err), err);
  }
}

void sendAll(int fd, const void* data, size_t bytes, Deadline deadline, StopFlags stop, const char* what) {
  int err = 0;
  throwIo(trySendAll(fd, data, bytes, deadline, stop, &err), err, "send to", what);
}

void recvAll(int fd, void* data, size_t bytes, Deadline deadline, StopFlags stop, const char* what) {
  int err = 0;
  throwIo(tryRecvAll(fd, data, bytes, deadline, stop, &err), err, "receive from", what);
}

void randomBytes(void* buf, size_t bytes) {
  char* p = static_cast<char*>(buf);
  while (bytes > 0) {
    ssize_t n = getrandom(p, bytes, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      raiseErrno("getrandom");
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

}  // namespace weft
