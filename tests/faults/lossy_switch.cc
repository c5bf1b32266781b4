// A userspace Ethernet switch for kernels without the netem qdisc: it drops
// a given share of frames at random (tools/fault-campaign.sh, scenario loss)
// and/or holds every frame for a fixed one-way delay (tools/weft-sim/
// validate.sh with VALIDATE_DELAY_US). Run inside the switch namespace of
// tests/multihost/netns_hosts.sh after its ports left the bridge:
//
//   lossy_switch [--delay-us N] [--queue-mb M] [@]<drop percent> <port>...
//
// With "@" before the percentage, frames pass untouched until the switch gets
// SIGUSR1 (loss switched on mid-run).
//
// Forwarding: the switch learns which port each source MAC address sits
// behind; a frame to a learned unicast address goes out of that port only,
// every other frame (broadcast, multicast, unknown) out of every other port.
// Learning matters for rates: a flooded frame would pass the egress shaping
// (tbf) of every host's port, not only the receiver's.
//
// Delay: a frame is sent N us after the kernel received it (its SO_TIMESTAMPNS
// time, so the switch's own scheduling delay does not add to N unless it
// exceeds N). Each output port has a FIFO of timestamped frames, so order is
// kept per port; the wait in poll ends at the next frame due. A port whose
// socket buffer is full (EAGAIN) keeps its frames and waits for POLLOUT. A
// FIFO holds at most M MB (default 64); a frame that would overflow it is
// dropped and counted. The tc qdisc on the port (tbf in netns_hosts.sh)
// still applies after the switch: the frames go through it when sent.
//
// Frames keep their virtio-net header (PACKET_VNET_HDR), so checksum offload
// and segmentation survive the hop. Runs until killed; on SIGTERM/SIGINT
// prints one line and exits 0:
//   lossy_switch: F frames, D dropped; delay N us, Q dropped on a full queue,
//   E send errors, queue peak P bytes, cpu C s, late mean L max X us
// (C: the switch's own processor time, user and system; L, X: how long after
// its due time a frame was sent, the switch's own delay on top of N).
// (F, D: frames since the loss began and those the dice dropped).
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <random>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t gStop = 0;
volatile sig_atomic_t gArmed = 1;
void onSignal(int) { gStop = 1; }
void onArm(int) { gArmed = 1; }

constexpr size_t kVnetHdr = 10;  // struct virtio_net_hdr, before the Ethernet header
constexpr size_t kMaxFrame = 70000;
constexpr int kSocketBuffer = 16 << 20;  // bursts while the switch is descheduled

int64_t nowNs() {
  // CLOCK_REALTIME: the clock of the kernel's receive timestamps.
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

struct Frame {
  int64_t dueNs = 0;
  std::vector<char> bytes;
};

struct Port {
  int fd = -1;
  std::deque<Frame> queue;
  size_t queuedBytes = 0;
  bool blocked = false;  // socket buffer full: wait for POLLOUT
};

struct Options {
  int64_t delayNs = 0;
  size_t queueCap = size_t(64) << 20;
  double drop = 0;
  bool later = false;
  std::vector<const char*> ports;
};

struct Stats {
  unsigned long frames = 0, dropped = 0, queueFull = 0, sendErrors = 0, sent = 0;
  size_t peakBytes = 0;
  int64_t lateSumNs = 0, lateMaxNs = 0;  // how long after its due time a frame went out
};

int openPort(const char* name) {
  int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) return -1;
  int on = 1;
  if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof on) != 0) return -1;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) return -1;
  // Our own sends would otherwise come back on the port's socket (kernels
  // without this option: receiveFrom skips them by their packet type).
  setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &on, sizeof on);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &kSocketBuffer, sizeof kSocketBuffer);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &kSocketBuffer, sizeof kSocketBuffer);
  sockaddr_ll a{};
  a.sll_family = AF_PACKET;
  a.sll_protocol = htons(ETH_P_ALL);
  a.sll_ifindex = int(if_nametoindex(name));
  if (a.sll_ifindex == 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  return fd;
}

bool parseNumber(const char* s, double lo, double hi, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

int usage(const char* self, const char* why) {
  if (why) std::fprintf(stderr, "lossy_switch: %s\n", why);
  std::fprintf(stderr, "usage: %s [--delay-us N] [--queue-mb M] [@]<drop percent> <port> <port>...\n", self);
  return 2;
}

int parseOptions(int argc, char** argv, Options* o) {
  int i = 1;
  double v = 0;
  for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
    const std::string k = argv[i];
    if (k == "--delay-us" && parseNumber(argv[i + 1], 0, 10e6, &v)) o->delayNs = int64_t(v * 1000);
    else if (k == "--queue-mb" && parseNumber(argv[i + 1], 1, 4096, &v)) o->queueCap = size_t(v * (1 << 20));
    else return usage(argv[0], ("bad option or value: " + k + " " + argv[i + 1]).c_str());
  }
  if (argc - i < 3) return usage(argv[0], "needs a drop percentage and at least two ports");
  o->later = argv[i][0] == '@';
  if (!parseNumber(argv[i] + (o->later ? 1 : 0), 0, 100, &v))
    return usage(argv[0], ("bad drop percentage: " + std::string(argv[i])).c_str());
  o->drop = v / 100.0;
  for (i++; i < argc; i++) o->ports.push_back(argv[i]);
  return 0;
}

// Which port each source MAC address was last seen on (a handful of hosts:
// a linear table is enough).
class MacTable {
 public:
  void learn(const unsigned char* mac, int port) {
    for (auto& e : entries_)
      if (std::memcmp(e.mac, mac, 6) == 0) { e.port = port; return; }
    Entry e{};
    std::memcpy(e.mac, mac, 6);
    e.port = port;
    entries_.push_back(e);
  }
  int lookup(const unsigned char* mac) const {
    if (mac[0] & 1) return -1;  // broadcast and multicast: flood
    for (const auto& e : entries_)
      if (std::memcmp(e.mac, mac, 6) == 0) return e.port;
    return -1;
  }

 private:
  struct Entry {
    unsigned char mac[6];
    int port;
  };
  std::vector<Entry> entries_;
};

class Switch {
 public:
  Switch(const Options& o, std::vector<int> fds) : o_(o), rng_(std::random_device{}()) {
    for (int fd : fds) ports_.push_back(Port{fd, {}, 0, false});
  }
  void run();
  const Stats& stats() const { return st_; }

 private:
  void receiveFrom(int in);
  void enqueue(int out, const char* data, size_t n, int64_t due);
  void flush(int out, int64_t now);
  int64_t waitNs(int64_t now) const;  // until the next frame is due

  Options o_;
  std::vector<Port> ports_;
  std::vector<std::vector<char>> spare_;  // frame buffers to reuse
  MacTable macs_;
  Stats st_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> dice_{0.0, 1.0};
  char buf_[kMaxFrame];
};

void Switch::enqueue(int out, const char* data, size_t n, int64_t due) {
  Port& p = ports_[size_t(out)];
  if (p.queuedBytes + n > o_.queueCap) {
    st_.queueFull++;
    return;
  }
  Frame f;
  f.dueNs = due;
  if (!spare_.empty()) {
    f.bytes = std::move(spare_.back());
    spare_.pop_back();
  }
  f.bytes.assign(data, data + n);
  p.queuedBytes += n;
  if (p.queuedBytes > st_.peakBytes) st_.peakBytes = p.queuedBytes;
  p.queue.push_back(std::move(f));
}

void Switch::receiveFrom(int in) {
  // Drain what is there, bounded so that one busy port cannot starve the rest.
  for (int k = 0; k < 256; k++) {
    iovec iov{buf_, sizeof buf_};
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(timespec))];
    sockaddr_ll from{};
    msghdr m{};
    m.msg_name = &from;
    m.msg_namelen = sizeof from;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = sizeof ctrl;
    ssize_t n = recvmsg(ports_[size_t(in)].fd, &m, MSG_DONTWAIT);
    if (n <= 0) return;
    if (size_t(n) < kVnetHdr + ETH_HLEN || from.sll_pkttype == PACKET_OUTGOING) continue;
    int64_t arrived = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec t{};
        std::memcpy(&t, CMSG_DATA(c), sizeof t);
        arrived = int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
      }
    // No usable kernel timestamp: the time of reading it.
    if (const int64_t now = nowNs(); arrived == 0 || arrived > now || now - arrived > 1000000000) arrived = now;
    if (gArmed) st_.frames++;  // counted once the loss is on
    if (gArmed && o_.drop > 0 && dice_(rng_) < o_.drop) {
      st_.dropped++;
      continue;
    }
    const auto* eth = reinterpret_cast<const unsigned char*>(buf_ + kVnetHdr);
    macs_.learn(eth + 6, in);
    const int to = macs_.lookup(eth);
    for (int out = 0; out < int(ports_.size()); out++)
      if (out != in && (to < 0 || to == out)) enqueue(out, buf_, size_t(n), arrived + o_.delayNs);
  }
}

void Switch::flush(int out, int64_t now) {
  Port& p = ports_[size_t(out)];
  while (!p.queue.empty() && p.queue.front().dueNs <= now) {
    Frame& f = p.queue.front();
    if (send(p.fd, f.bytes.data(), f.bytes.size(), MSG_DONTWAIT) < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        p.blocked = true;
        return;
      }
      st_.sendErrors++;  // e.g. ENOBUFS: the port's qdisc dropped it
    } else {
      const int64_t late = nowNs() - f.dueNs;
      st_.sent++;
      st_.lateSumNs += late;
      if (late > st_.lateMaxNs) st_.lateMaxNs = late;
    }
    p.queuedBytes -= f.bytes.size();
    spare_.push_back(std::move(f.bytes));
    if (spare_.size() > 1024) spare_.pop_back();
    p.queue.pop_front();
  }
  p.blocked = false;
}

int64_t Switch::waitNs(int64_t now) const {
  int64_t next = -1;
  for (const Port& p : ports_)
    if (!p.blocked && !p.queue.empty() && (next < 0 || p.queue.front().dueNs < next)) next = p.queue.front().dueNs;
  if (next < 0) return 200000000;  // nothing queued: wake now and then for signals
  return next > now ? next - now : 0;
}

void Switch::run() {
  std::vector<pollfd> pfd(ports_.size());
  while (!gStop) {
    int64_t now = nowNs();
    for (size_t i = 0; i < ports_.size(); i++)
      pfd[i] = {ports_[i].fd, short(POLLIN | (ports_[i].blocked ? POLLOUT : 0)), 0};
    const int64_t wait = waitNs(now);
    const timespec ts{time_t(wait / 1000000000), long(wait % 1000000000)};
    if (ppoll(pfd.data(), pfd.size(), &ts, nullptr) < 0 && errno != EINTR) break;
    for (size_t i = 0; i < ports_.size(); i++)
      if (pfd[i].revents & POLLIN) receiveFrom(int(i));
    now = nowNs();
    for (size_t i = 0; i < ports_.size(); i++)
      if (!ports_[i].blocked || (pfd[i].revents & POLLOUT)) flush(int(i), now);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parseOptions(argc, argv, &o); rc != 0) return rc;
  if (o.later) gArmed = 0;
  std::vector<int> fds;
  for (const char* name : o.ports) {
    int fd = openPort(name);
    if (fd < 0) {
      std::fprintf(stderr, "lossy_switch: cannot open %s: %s\n", name, std::strerror(errno));
      return 1;
    }
    fds.push_back(fd);
  }
  std::signal(SIGTERM, onSignal);
  std::signal(SIGINT, onSignal);
  std::signal(SIGUSR1, onArm);
  // Wake-ups within 1 us of the frame's due time, not the default 50 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  static Switch sw(o, fds);  // static: its receive buffer is large
  sw.run();
  const Stats& s = sw.stats();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  std::printf("lossy_switch: %lu frames, %lu dropped; delay %lld us, %lu dropped on a full queue, %lu send errors, "
              "queue peak %zu bytes, cpu %.2f s, late mean %.0f max %.0f us\n",
              s.frames, s.dropped, (long long)(o.delayNs / 1000), s.queueFull, s.sendErrors, s.peakBytes, cpu,
              s.sent ? double(s.lateSumNs) / double(s.sent) / 1000 : 0.0, double(s.lateMaxNs) / 1000);
  return 0;
}
