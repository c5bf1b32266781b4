#include "src/util/trace_buffer.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "src/util/log.h"

namespace weft {
namespace {

// Formats JSON straight into a file descriptor through a small buffer, with
// nothing but write(2): safe inside a signal handler.
class FdOut {
 public:
  explicit FdOut(int fd) : fd_(fd) {}
  ~FdOut() { drain(); }
  void put(const char* s, size_t n) {
    while (n) {
      if (used_ == sizeof(buf_)) drain();
      size_t k = sizeof(buf_) - used_ < n ? sizeof(buf_) - used_ : n;
      memcpy(buf_ + used_, s, k);
      used_ += k;
      s += k;
      n -= k;
    }
  }
  FdOut& operator<<(const char* s) {
    put(s, strlen(s));
    return *this;
  }
  FdOut& operator<<(int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    do {
      tmp[n++] = char('0' + u % 10);
      u /= 10;
    } while (u);
    if (v < 0) tmp[n++] = '-';
    char out[24];
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    put(out, n);
    return *this;
  }
  // A JSON string: quotes, backslashes and control characters escaped.
  void quoted(const char* s) {
    put("\"", 1);
    for (; *s; s++) {
      unsigned char c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        char esc[2] = {'\\', char(c)};
        put(esc, 2);
      } else if (c < 0x20) {
        put("?", 1);
      } else {
        put(s, 1);
      }
    }
    put("\"", 1);
  }
  // Nanoseconds as microseconds with three decimals.
  void micros(int64_t ns) {
    if (ns < 0) {
      put("-", 1);
      ns = -ns;
    }
    *this << ns / 1000;
    char frac[4] = {'.', char('0' + ns / 100 % 10), char('0' + ns / 10 % 10), char('0' + ns % 10)};
    put(frac, 4);
  }

 private:
  void drain() {
    size_t off = 0;
    while (off < used_) {
      ssize_t w = write(fd_, buf_ + off, used_ - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;  // best effort: a full disk loses the tail
      off += size_t(w);
    }
    used_ = 0;
  }
  int fd_;
  char buf_[8192];
  size_t used_ = 0;
};

void writeMetadata(FdOut& o, const TraceRankInfo& r, int maxTid) {
  o << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << int64_t(r.rank) << ",\"tid\":0,\"args\":{\"name\":\"rank ";
  o << int64_t(r.rank) << "\"}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" << int64_t(r.rank);
  o << ",\"tid\":0,\"args\":{\"sort_index\":" << int64_t(r.rank) << "}},\n";
  for (int t = 0; t <= maxTid; t++) {
    o << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << int64_t(r.rank) << ",\"tid\":" << int64_t(t);
    o << ",\"args\":{\"name\":\"";
    if (t == 0) o << "calls";
    else o << "channel " << int64_t(t - 1);
    o << "\"}},\n";
  }
}

void writePeers(FdOut& o, const char* key, const TraceEvent& e, int first, int n) {
  o << ",\"" << key << "\":[";
  for (int i = 0; i < n; i++) o << (i ? "," : "") << int64_t(e.peer[first + i]);
  o << "]";
}

void writeWaits(FdOut& o, const char* key, const TraceEvent& e, int first, int n) {
  o << ",\"" << key << "\":[";
  for (int i = 0; i < n; i++) {
    if (i) o << ",";
    o.micros(e.waitNs[first + i]);
  }
  o << "]";
}

void writeEvent(FdOut& o, const TraceEvent& e, const TraceRankInfo* ranks, int nRanks) {
  o << "{\"name\":";
  o.quoted(e.name);
  o << ",\"cat\":\"" << (e.kind == TraceEvent::Call ? "call" : "step") << "\",\"ph\":\"X\",\"ts\":";
  o.micros(e.startNs);
  o << ",\"dur\":";
  o.micros(e.durNs);
  o << ",\"pid\":" << int64_t(e.pid) << ",\"tid\":" << int64_t(e.tid) << ",\"args\":{\"bytes\":" << int64_t(e.bytes);
  o << ",\"count\":" << int64_t(e.count);
  if (e.kind == TraceEvent::Call) {
    o << ",\"call\":" << int64_t(e.index) << ",\"type\":";
    o.quoted(e.type);
    o << ",\"op\":";
    o.quoted(e.op);
    o << ",\"algorithm\":";
    o.quoted(e.algo);
    o << ",\"protocol\":";
    o.quoted(e.proto);
    o << ",\"channels\":" << int64_t(e.channels) << ",\"root\":" << int64_t(e.root);
    o << ",\"steps\":" << int64_t(e.steps) << ",\"result\":";
    o.quoted(e.result);
  } else {
    int64_t wait = 0;
    for (int64_t w : e.waitNs) wait += w;
    o << ",\"step\":" << int64_t(e.index);
    writePeers(o, "recv_from", e, 0, e.nRecv);
    writeWaits(o, "wait_recv_us", e, 0, e.nRecv);
    writePeers(o, "send_to", e, 2, e.nSend);
    writeWaits(o, "wait_send_us", e, 2, e.nSend);
    o << ",\"wait_us\":";
    o.micros(wait);
    o << ",\"move_us\":";
    o.micros(e.moveNs);
  }
  if (e.commSlot >= 0 && e.commSlot < nRanks) {
    o << ",\"comm\":";
    o.quoted(ranks[e.commSlot].comm);
  }
  o << "}}";
}

void writeRankInfo(FdOut& o, const TraceRankInfo& r) {
  o << "{\"rank\":" << int64_t(r.rank) << ",\"pid\":" << int64_t(r.pid) << ",\"host\":";
  o.quoted(r.host);
  o << ",\"comm\":";
  o.quoted(r.comm);
  o << ",\"clock_sync_ns\":" << r.clockSyncNs << ",\"wall_sync_ns\":" << r.wallSyncNs << "}";
}

// Buffers that a fatal signal flushes. Plain atomics: the handler reads
// them without a lock.
constexpr int kMaxLive = 64;
std::atomic<TraceBuffer*> liveBuffers[kMaxLive];

constexpr int kFatalSignals[] = {SIGSEGV, SIGABRT, SIGBUS, SIGTERM};
struct sigaction previousAction[std::size(kFatalSignals)];

void onFatalSignal(int sig) {
  for (auto& slot : liveBuffers)
    if (TraceBuffer* b = slot.load(std::memory_order_acquire)) b->flushFromSignal();
  // Hand the signal to whoever had it before: restore, then raise again
  // (it is delivered when this handler returns).
  for (size_t i = 0; i < std::size(kFatalSignals); i++)
    if (kFatalSignals[i] == sig) sigaction(sig, &previousAction[i], nullptr);
  raise(sig);
}

void installSignalHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (size_t i = 0; i < std::size(kFatalSignals); i++) {
      struct sigaction sa;
      memset(&sa, 0, sizeof(sa));
      sa.sa_handler = onFatalSignal;
      sa.sa_flags = SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
      sigaction(kFatalSignals[i], &sa, &previousAction[i]);
    }
  });
}

}  // namespace

TraceBuffer::TraceBuffer(std::string path, int fd, uint64_t capacity)
    : path_(std::move(path)), fd_(fd), capacity_(capacity) {
  // calloc'd pages are touched only as the ring fills.
  events_ = static_cast<TraceEvent*>(calloc(capacity_, sizeof(TraceEvent)));
  if (!events_) throw std::bad_alloc();
  for (uint64_t i = 0; i < capacity_; i++) new (&events_[i]) TraceEvent();
  for (auto& slot : liveBuffers) {
    TraceBuffer* empty = nullptr;
    if (slot.compare_exchange_strong(empty, this)) break;
  }
}

TraceBuffer::~TraceBuffer() {
  for (auto& slot : liveBuffers) {
    TraceBuffer* self = this;
    slot.compare_exchange_strong(self, nullptr);
  }
  close(fd_);
  free(events_);
}

int TraceBuffer::addRank(const TraceRankInfo& info) {
  std::lock_guard<std::mutex> lock(mutex_);
  int i = nRanks_.load();
  if (i >= kMaxRanks) return -1;  // the events still name their rank
  ranks_[i] = info;
  nRanks_.store(i + 1, std::memory_order_release);
  return i;
}

void TraceBuffer::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  flushFromSignal();
}

void TraceBuffer::flushFromSignal() {
  bool idle = false;
  if (!flushing_.compare_exchange_strong(idle, true)) return;  // a signal arrived mid-flush
  const uint64_t n = next_.load(std::memory_order_acquire);
  const uint64_t first = n > capacity_ ? n - capacity_ : 0;
  int maxTid = 0;
  for (uint64_t i = first; i < n; i++)
    if (events_[i % capacity_].tid > maxTid) maxTid = events_[i % capacity_].tid;
  if (lseek(fd_, 0, SEEK_SET) == 0 && ftruncate(fd_, 0) == 0) {
    FdOut o(fd_);
    o << "{\"traceEvents\":[\n";
    const int nRanks = nRanks_.load(std::memory_order_acquire);
    for (int r = 0; r < nRanks; r++) writeMetadata(o, ranks_[r], maxTid);
    uint64_t written = 0;
    for (uint64_t i = first; i < n; i++) {
      const TraceEvent& e = events_[i % capacity_];
      if (e.seq.load(std::memory_order_acquire) != i + 1) continue;  // being overwritten
      o << (written++ ? ",\n" : "");
      writeEvent(o, e, ranks_, nRanks);
    }
    if (!written) o << "{\"name\":\"no events\",\"ph\":\"i\",\"ts\":0,\"pid\":0,\"tid\":0,\"s\":\"g\"}";
    o << "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"weft_trace_version\":1,\"max_events\":";
    o << int64_t(capacity_) << ",\"recorded\":" << int64_t(n) << ",\"dropped\":" << int64_t(n - written);
    o << ",\"ranks\":[";
    for (int r = 0; r < nRanks; r++) {
      if (r) o << ",";
      writeRankInfo(o, ranks_[r]);
    }
    o << "]}}\n";
  }
  flushing_.store(false);
}

std::shared_ptr<TraceBuffer> acquireTraceBuffer(const std::string& path, uint64_t capacity) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<TraceBuffer>> open;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto b = open[path].lock()) return b;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (warned.insert(path).second)
      WEFT_WARN("WEFT_TRACE_FILE: cannot write %s (%s); running without a trace", path.c_str(), strerror(errno));
    return nullptr;
  }
  auto b = std::make_shared<TraceBuffer>(path, fd, capacity);
  open[path] = b;
  installSignalHandlers();
  return b;
}

std::string expandTracePath(const std::string& pattern, int rank) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); i++) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 'r') {
      out += std::to_string(rank);
    } else if (c == 'p') {
      out += std::to_string(getpid());
    } else if (c == 'h') {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      out += host;
    } else {
      out += '%';
      if (c != '%') out += c;
    }
  }
  return out;
}

}  // namespace weft
