#include "src/sim/flow_model.h"

#include <algorithm>
#include <map>
#include <queue>
#include <unordered_map>

#include "src/util/error.h"

namespace weft::sim {
namespace {

struct Port {
  double freeAt = 0;
};

// One send of a step, once scheduled.
struct Transfer {
  double firstAt = 0;  // the first piece reached the receiver
  double endAt = 0;    // the last piece reached the receiver
  int receiver = -1;   // step that takes it
};

struct Node {
  const plan::Step* step = nullptr;
  int rank = 0;
  int next = -1;    // the next step of the channel
  int deps = 0;     // unresolved: previous step + inputs
  double start = 0; // previous step's end (plus overhead)
  int input[2] = {-1, -1};  // (sender node, send slot) packed as node * 2 + slot
  Transfer out[2];
  double end = -1;
};

class Model {
 public:
  Model(const std::vector<plan::Plan>& plans, const Cluster& c) : plans_(plans), c_(c) {
    const int n = int(plans.size());
    if (int(c.hostOf.size()) != n)
      raise(weftInvalidArgument, "sim: %zu host ids for %d ranks", c.hostOf.size(), n);
    std::map<int, int> perHost;
    for (int r = 0; r < n; r++) local_.push_back(perHost[c.hostOf[size_t(r)]]++);
    nHosts_ = perHost.empty() ? 0 : perHost.rbegin()->first + 1;
    shmOut_.resize(size_t(n));
    shmIn_.resize(size_t(n));
    nicOut_.resize(size_t(nHosts_) * size_t(std::max(c.nicsPerHost, 1)));
    nicIn_.resize(nicOut_.size());
    buildNodes();
    pairTransfers();
  }

  RunStats run() {
    using Item = std::pair<double, int>;  // (ready time, node); ties by node id: deterministic
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
    for (int i = 0; i < int(nodes_.size()); i++)
      if (nodes_[size_t(i)].deps == 0) ready.push({readyAt(i), i});
    RunStats st;
    size_t done = 0;
    while (!ready.empty()) {
      const int i = ready.top().second;
      ready.pop();
      schedule(i, st);
      done++;
      Node& x = nodes_[size_t(i)];
      st.us = std::max(st.us, x.end);
      auto release = [&](int j) {
        if (j >= 0 && --nodes_[size_t(j)].deps == 0) ready.push({readyAt(j), j});
      };
      if (x.next >= 0) {
        nodes_[size_t(x.next)].start = x.end + c_.stepOverheadUs;
        release(x.next);
      }
      for (int k = 0; k < x.step->nSend; k++) release(x.out[k].receiver);
    }
    if (done != nodes_.size())
      raise(weftInvalidArgument, "sim: %zu of %zu steps never became ready (plans wait on each other)",
            nodes_.size() - done, nodes_.size());
    st.steps = done;
    return st;
  }

 private:
  void buildNodes() {
    for (int r = 0; r < int(plans_.size()); r++) {
      if (plans_[size_t(r)].nranks != int(plans_.size()))
        raise(weftInvalidArgument, "sim: rank %d's plan is for %d ranks", r, plans_[size_t(r)].nranks);
      for (const auto& ch : plans_[size_t(r)].channels) {
        int prev = -1;
        for (const auto& s : ch.steps) {
          Node x;
          x.step = &s;
          x.rank = r;
          x.deps = (prev >= 0 ? 1 : 0) + s.nRecv;
          x.start = c_.stepOverheadUs;
          nodes_.push_back(x);
          if (prev >= 0) nodes_[size_t(prev)].next = int(nodes_.size()) - 1;
          prev = int(nodes_.size()) - 1;
        }
      }
    }
  }

  // The k-th send on a (sender, receiver, connection) FIFO feeds the k-th
  // receive on it.
  void pairTransfers() {
    const uint64_t n = plans_.size();
    std::unordered_map<uint64_t, std::vector<int>> sends, recvs;  // FIFO -> node*2+slot, in order
    auto key = [&](int from, int to, int conn) { return (uint64_t(from) * n + uint64_t(to)) * 256 + uint64_t(conn); };
    for (int i = 0; i < int(nodes_.size()); i++) {
      const plan::Step& s = *nodes_[size_t(i)].step;
      for (int k = 0; k < s.nSend; k++) sends[key(nodes_[size_t(i)].rank, s.sendPeer[k], s.conn)].push_back(i * 2 + k);
      for (int k = 0; k < s.nRecv; k++) recvs[key(s.recvPeer[k], nodes_[size_t(i)].rank, s.conn)].push_back(i * 2 + k);
    }
    for (auto& [fifo, in] : recvs) {
      const auto& out = sends[fifo];
      if (out.size() != in.size())
        raise(weftInvalidArgument, "sim: a FIFO carries %zu sends for %zu receives", out.size(), in.size());
      for (size_t j = 0; j < in.size(); j++) {
        nodes_[size_t(in[j] / 2)].input[in[j] % 2] = out[j];
        nodes_[size_t(out[j] / 2)].out[out[j] % 2].receiver = in[j] / 2;
      }
    }
    for (auto& [fifo, out] : sends)
      if (!recvs.count(fifo)) raise(weftInvalidArgument, "sim: %zu sends nobody receives", out.size());
  }

  const Transfer& inputOf(const Node& x, int k) const {
    const int packed = x.input[k];
    return nodes_[size_t(packed / 2)].out[packed % 2];
  }

  double readyAt(int i) const {
    const Node& x = nodes_[size_t(i)];
    double t = x.start;
    for (int k = 0; k < x.step->nRecv; k++) t = std::max(t, inputOf(x, k).firstAt);
    return t;
  }

  void schedule(int i, RunStats& st) {
    Node& x = nodes_[size_t(i)];
    const plan::Step& s = *x.step;
    const double bytes = double(s.count) * plans_[size_t(x.rank)].elemSize;
    const double slice = plans_[size_t(x.rank)].sliceBytes ? double(plans_[size_t(x.rank)].sliceBytes) : bytes;
    const double piece = std::min(bytes, slice);
    double inEnd = x.start;
    for (int k = 0; k < s.nRecv; k++) inEnd = std::max(inEnd, inputOf(x, k).endAt);
    double end = inEnd;
    const double ready = readyAt(i);
    for (int k = 0; k < s.nSend; k++) {
      const int to = s.sendPeer[k];
      const bool net = c_.hostOf[size_t(to)] != c_.hostOf[size_t(x.rank)];
      Port& a = net ? nicOut_[nic(x.rank)] : shmOut_[size_t(x.rank)];
      Port& b = net ? nicIn_[nic(to)] : shmIn_[size_t(to)];
      const double bytesPerUs = 1e3 * (net ? c_.nicGBs : c_.intraGBs);
      const double lat = net ? c_.netLatUs : c_.intraLatUs;
      const double t0 = std::max({ready, a.freeAt, b.freeAt});
      const double pushed = std::max(t0 + bytes / bytesPerUs, inEnd + piece / bytesPerUs);
      a.freeAt = b.freeAt = pushed;
      x.out[k].firstAt = t0 + piece / bytesPerUs + lat;
      x.out[k].endAt = pushed + lat;
      end = std::max(end, pushed);
      if (net) st.netBytes += uint64_t(bytes);
    }
    x.end = end;
  }

  size_t nic(int rank) const {
    const int nics = std::max(c_.nicsPerHost, 1);
    return size_t(c_.hostOf[size_t(rank)]) * size_t(nics) + size_t(local_[size_t(rank)] % nics);
  }

  const std::vector<plan::Plan>& plans_;
  const Cluster& c_;
  std::vector<int> local_;
  int nHosts_ = 0;
  std::vector<Port> shmOut_, shmIn_, nicOut_, nicIn_;
  std::vector<Node> nodes_;
};

}  // namespace

RunStats simulate(const std::vector<plan::Plan>& plans, const Cluster& c) {
  for (int h : c.hostOf)
    if (h < 0) raise(weftInvalidArgument, "sim: host index %d", h);
  if (c.intraGBs <= 0 || c.nicGBs <= 0) raise(weftInvalidArgument, "sim: a link of zero bandwidth");
  Model m(plans, c);
  return m.run();
}

}  // namespace weft::sim
