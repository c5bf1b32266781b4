#include "tools/weft-doctor/probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/core/comm.h"
#include "src/core/transport_query.h"
#include "src/util/settings.h"
#include "src/util/socket.h"
#include "tools/weft-doctor/analyze.h"
#include "tools/weft-doctor/counters.h"
#include "tools/weft-doctor/output.h"

namespace weft::doctor {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Bandwidth samples per direction of a host pair.
constexpr int kLinkSamples = 2;

std::mutex phaseMutex;
std::map<int, std::string> phases;  // rank -> what it is doing

void notePhase(int rank, const std::string& what) {
  std::lock_guard<std::mutex> lock(phaseMutex);
  phases[rank] = what;
}

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

class Buffer {
 public:
  explicit Buffer(size_t bytes) : bytes_(std::max<size_t>(bytes, 64)) {
    data_ = static_cast<char*>(std::aligned_alloc(4096, (bytes_ + 4095) / 4096 * 4096));
    if (!data_) throw std::runtime_error("out of memory for " + std::to_string(bytes_) + " bytes");
    std::memset(data_, 1, bytes_);
  }
  ~Buffer() { std::free(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() { return data_; }

 private:
  size_t bytes_;
  char* data_;
};

class Probe {
 public:
  Probe(const Options& o, weftComm_t comm) : o_(o), comm_(comm), rank_(comm->rank), nranks_(comm->nranks) {}

  int run();

 private:
  void check(weftResult_t result, const char* what) {
    if (result == weftSuccess) return;
    const char* detail = weftGetLastError(comm_);
    throw std::runtime_error(std::string(what) + " failed: " + weftGetErrorString(result) +
                             (detail && *detail ? std::string(": ") + detail : ""));
  }
  std::vector<std::string> gather(const std::string& mine);
  void barrier() {
    notePhase(rank_, "barrier");
    float word = 0;
    check(weftAllReduce(&word, &word, 1, weftFloat32, weftSum, comm_, nullptr), "barrier (AllReduce)");
  }
  int broadcastInt(int value) {
    int32_t v = value;
    check(weftBroadcast(&v, &v, 1, weftInt32, 0, comm_, nullptr), "Broadcast");
    return v;
  }
  std::string selfInfo();
  json readCounters();
  void timeLink(int peer, int fromHost, int toHost, bool latency);
  void serveLink(int peer, bool latency);
  void timeLinks();
  void sweep();
  double sweepPoint(const std::string& coll, size_t count, Buffer& send, Buffer& recv);

  const Options& o_;
  weftComm_t comm_;
  int rank_, nranks_;
  std::vector<int> leader_, second_;  // per host: its lowest and second-lowest rank (-1 none)
  std::string label_;                 // this rank's host name
  json links_ = json::array();        // {from, to, gbps, lat_us} this rank timed
  std::map<std::pair<int, int>, json> best_;  // (from, to) -> the best of its samples
  json sweep_ = json::array();
};

std::vector<std::string> Probe::gather(const std::string& mine) {
  uint64_t len = mine.size();
  std::vector<uint64_t> lens(static_cast<size_t>(nranks_));
  check(weftAllGather(&len, lens.data(), 1, weftUint64, comm_, nullptr), "AllGather (lengths)");
  const uint64_t most = std::max<uint64_t>(8, *std::max_element(lens.begin(), lens.end()));
  std::vector<char> padded(most, 0), all(most * static_cast<size_t>(nranks_));
  std::memcpy(padded.data(), mine.data(), mine.size());
  check(weftAllGather(padded.data(), all.data(), most, weftUint8, comm_, nullptr), "AllGather (results)");
  std::vector<std::string> out;
  for (int r = 0; r < nranks_; r++) out.emplace_back(all.data() + most * size_t(r), lens[size_t(r)]);
  return out;
}

std::string Probe::selfInfo() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const auto hostId = settings::get(settings::kHostId);
  label_ = hostId ? *hostId : host;
  std::string netIf;
  try {
    netIf = chooseInterface().name;
  } catch (const std::exception&) {
    netIf = "";
  }
  json transports = json::array();
  for (const PeerTransport& p : peerTransports(comm_))
    transports.push_back({{"peer", p.peer}, {"transport", p.transport}, {"why", p.why}, {"same_host", p.sameHost},
                          {"last_resort", p.lastResort}});
  return json{{"rank", rank_}, {"host", comm_->hostOf[size_t(rank_)]}, {"hostname", host}, {"label", label_},
              {"net_if", netIf}, {"pid", int(getpid())}, {"transports", transports}}
      .dump();
}

json Probe::readCounters() {
  const int h = comm_->hostOf[size_t(rank_)];
  if (leader_[size_t(h)] != rank_) return nullptr;
  return snapshotToJson(readSysfs(replaceAll(o_.sysfsRoot, "%h", label_)));
}

// One direction of a host pair, timed by its sender: ping-pongs of 8 bytes
// (their lower quartile: a busy CPU delays some of them, the link none),
// then pairIters messages and a one-byte acknowledgement. The first
// exchanges also connect the pair. Each sample keeps the best seen.
void Probe::timeLink(int peer, int fromHost, int toHost, bool latency) {
  notePhase(rank_, "timing the link host#" + std::to_string(fromHost) + " -> host#" + std::to_string(toHost) +
                       " with rank " + std::to_string(peer) + (latency ? " (latency, then bandwidth)" : " (bandwidth)"));
  Buffer buf(o_.pairBytes);
  char word[8] = {};
  json& best = best_[{fromHost, toHost}];
  if (latency) {
    std::vector<double> rtt;
    for (int i = 0; i < o_.latIters + 2; i++) {
      const auto t = Clock::now();
      check(weftSend(word, sizeof word, weftUint8, peer, comm_, nullptr), "Send (ping)");
      check(weftRecv(word, sizeof word, weftUint8, peer, comm_, nullptr), "Recv (pong)");
      if (i >= 2) rtt.push_back(secondsSince(t));
    }
    std::sort(rtt.begin(), rtt.end());
    best["lat_us"] = rtt[rtt.size() / 4] / 2 * 1e6;
  }
  check(weftSend(buf.data(), o_.pairBytes, weftUint8, peer, comm_, nullptr), "Send (warm-up)");
  check(weftRecv(word, 1, weftUint8, peer, comm_, nullptr), "Recv (ack)");
  const auto t = Clock::now();
  for (int i = 0; i < o_.pairIters; i++)
    check(weftSend(buf.data(), o_.pairBytes, weftUint8, peer, comm_, nullptr), "Send (bandwidth)");
  check(weftRecv(word, 1, weftUint8, peer, comm_, nullptr), "Recv (ack)");
  const double gbps = double(o_.pairBytes) * o_.pairIters / secondsSince(t) / 1e9;
  best["from"] = fromHost;
  best["to"] = toHost;
  if (!best.contains("gbps") || best["gbps"].get<double>() < gbps) best["gbps"] = gbps;
}

// The other end of timeLink.
void Probe::serveLink(int peer, bool latency) {
  notePhase(rank_, "answering rank " + std::to_string(peer) + "'s link test" + (latency ? " (latency, then bandwidth)" : " (bandwidth)"));
  Buffer buf(o_.pairBytes);
  char word[8] = {};
  for (int i = 0; latency && i < o_.latIters + 2; i++) {
    check(weftRecv(word, sizeof word, weftUint8, peer, comm_, nullptr), "Recv (ping)");
    check(weftSend(word, sizeof word, weftUint8, peer, comm_, nullptr), "Send (pong)");
  }
  for (int i = 0; i < o_.pairIters + 1; i++) {
    check(weftRecv(buf.data(), o_.pairBytes, weftUint8, peer, comm_, nullptr), "Recv (bandwidth)");
    if (i == 0 || i == o_.pairIters) check(weftSend(word, 1, weftUint8, peer, comm_, nullptr), "Send (ack)");
  }
}

// Host pairs in rounds (pairRounds): the pairs of a round at once, the two
// directions taking turns, kLinkSamples times each (the best counts: noise
// only ever slows a sample down); then two ranks within each host. A
// barrier between rounds keeps one round's traffic out of the next's.
void Probe::timeLinks() {
  const int nHosts = int(leader_.size());
  for (const auto& round : pairRounds(nHosts)) {
    for (const auto& [a, b] : round) {
      const int ra = leader_[size_t(a)], rb = leader_[size_t(b)];
      for (int s = 0; s < kLinkSamples; s++) {
        if (rank_ == ra) timeLink(rb, a, b, s == 0), serveLink(rb, s == 0);
        if (rank_ == rb) serveLink(ra, s == 0), timeLink(ra, b, a, s == 0);
      }
    }
    barrier();
  }
  for (int h = 0; h < nHosts; h++) {
    if (second_[size_t(h)] < 0) continue;
    for (int s = 0; s < kLinkSamples; s++) {
      if (rank_ == leader_[size_t(h)]) timeLink(second_[size_t(h)], h, h, s == 0);
      if (rank_ == second_[size_t(h)]) serveLink(leader_[size_t(h)], s == 0);
    }
  }
  barrier();
  for (const auto& [key, link] : best_) links_.push_back(link);
}

// Microseconds per call of the slowest rank (one warm-up call first).
double Probe::sweepPoint(const std::string& coll, size_t count, Buffer& send, Buffer& recv) {
  notePhase(rank_, coll + " of " + std::to_string(count) + " elements");
  auto call = [&] {
    if (coll == "allreduce")
      check(weftAllReduce(send.data(), recv.data(), count, weftFloat32, weftSum, comm_, nullptr), "AllReduce");
    else
      check(weftAllGather(send.data(), recv.data(), count, weftUint8, comm_, nullptr), "AllGather");
  };
  call();
  barrier();
  const auto t = Clock::now();
  for (int i = 0; i < o_.iters; i++) call();
  double us = secondsSince(t) * 1e6 / o_.iters;
  check(weftAllReduce(&us, &us, 1, weftFloat64, weftMax, comm_, nullptr), "AllReduce (times)");
  return us;
}

void Probe::sweep() {
  const size_t most = *std::max_element(o_.sizes.begin(), o_.sizes.end());
  Buffer send(most), recv(most);
  const double n = nranks_;
  for (const char* coll : {"allreduce", "allgather"}) {
    for (size_t bytes : o_.sizes) {
      // AllReduce: float32 elements; AllGather: `bytes` is the whole output.
      const bool reduce = std::string(coll) == "allreduce";
      const size_t count = reduce ? std::max<size_t>(bytes / 4, 1) : std::max<size_t>(bytes / size_t(nranks_), 1);
      const size_t actual = reduce ? count * 4 : count * size_t(nranks_);
      if (actual > most) continue;
      const double us = sweepPoint(coll, count, send, recv);
      const double algbw = double(actual) / us / 1e3;
      const double busbw = algbw * (reduce ? 2 * (n - 1) / n : (n - 1) / n);
      sweep_.push_back({{"coll", coll}, {"bytes", actual}, {"time_us", us}, {"busbw_gbps", nranks_ > 1 ? busbw : algbw}});
    }
  }
}


int Probe::run() {
  const auto t0 = Clock::now();
  std::vector<std::string> infos = gather(selfInfo());
  const int nHosts = 1 + *std::max_element(comm_->hostOf.begin(), comm_->hostOf.end());
  leader_.assign(size_t(nHosts), -1);
  second_.assign(size_t(nHosts), -1);
  for (int r = 0; r < nranks_; r++) {
    const size_t h = size_t(comm_->hostOf[size_t(r)]);
    if (leader_[h] < 0) leader_[h] = r;
    else if (second_[h] < 0) second_[h] = r;
  }
  RankZero zero(o_, nranks_);
  int status = 0;
  if (rank_ == 0) status = zero.start(infos);
  status = broadcastInt(status);
  if (status) return status;
  const json before = readCounters();
  barrier();
  timeLinks();
  sweep();
  barrier();
  const json after = readCounters();
  json mine = {{"links", links_}, {"sweep", sweep_}};
  if (!before.is_null()) mine["counters"] = {{"host", comm_->hostOf[size_t(rank_)]}, {"before", before}, {"after", after}};
  std::vector<std::string> parts = gather(mine.dump());
  if (rank_ == 0) status = zero.finish(parts, secondsSince(t0));
  return broadcastInt(status);
}

}  // namespace

int runRank(const Options& o, weftComm_t comm) { return Probe(o, comm).run(); }

std::string currentPhases() {
  std::lock_guard<std::mutex> lock(phaseMutex);
  std::string text;
  for (const auto& [rank, what] : phases) text += "  rank " + std::to_string(rank) + ": " + what + "\n";
  return text;
}

}  // namespace weft::doctor
