#include "src/sim/flow_model.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>

#include "src/util/error.h"

namespace weft::sim {
namespace {

enum class Ev : uint8_t { Start, Drain, End };

struct Event {
  double t;
  uint64_t seq;  // creation order: ties at one time are handled in it
  int id;
  uint32_t version;
  Ev kind;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
};

// A flow's slot is reused once its step ended (the model holds the flows
// running, not every flow of the call); its links' slots in flowLinks_ too,
// when the new route fits them.
struct Flow {
  uint32_t linkBegin = 0;  // its links in flowLinks_ (orbit representatives) and flowWeights_
  uint32_t linkCount = 0;
  uint32_t linkRoom = 0;  // slots at linkBegin it may use
  int node = -1;
  double bytes = 0, remaining = 0;
  double rate = 0;      // bytes per us, under the current fair share
  double last = 0;      // when `remaining` was last brought up to date
  double latUs = 0;     // the route's latency
  double drainedAt = 0;
  double pushedAt = 0;  // the last byte left the sender
  uint32_t version = 0;
};

// What the model keeps of a plan step (the plans themselves are not read
// once the nodes are made: the full model of thousands of ranks holds one
// or the other).
struct Node {
  double bytes = 0, piece = 0;  // what each send moves, and its first piece (the slice)
  double readyAt = 0;           // latest of what waitStart waited for; when it started
  double inEnd = 0;             // when its inputs' last pieces arrived
  int32_t sendPeer[2] = {-1, -1};
  int32_t recvPeer[2] = {-1, -1};
  int rank = 0;
  int next = -1;               // the next step of the channel
  int receiver[2] = {-1, -1};  // node that takes send k
  int flow[2] = {-1, -1};
  uint8_t nSend = 0, nRecv = 0, conn = 0;
  uint8_t waitStart = 0;  // previous step + inputs' first pieces
  uint8_t waitEnd = 0;    // own start + own flows drained + inputs' last pieces
};

// The links a flow crosses as the model sees them: each link's orbit
// representative and how many copies of the flow cross each link of the
// orbit (without symmetry: the link itself, once).
struct LinkUse {
  int flow;
  int weight;
};

// Plan `index` of the call; the reference may be dropped at the next call.
using PlanAt = std::function<const plan::Plan&(int index)>;

class Model {
 public:
  // nPlans plans: one per class of `sym` (symmetry.h), each for its class's
  // representative rank (Plan::rank); the other ranks' plans are theirs
  // moved by the group. Each plan is read twice, one at a time (to size the
  // model, then to fill it); `counted` is told the steps of the plans sized
  // so far and may throw.
  Model(int nPlans, const PlanAt& planAt, const Cluster& c, const RankSymmetry& sym,
        const std::function<void(uint64_t)>& counted = {})
      : c_(c), sym_(sym), n_(int(c.hostOf.size())), nPlans_(nPlans) {
    validate(c);
    if (sym.nranks != n_ || sym.linkRep.size() != c.linkGBs.size() || sym.linkWeight.size() != c.linkGBs.size())
      raise(weftInvalidArgument, "sim: the symmetry's tables do not match the cluster");
    if (size_t(n_) != size_t(nPlans) * size_t(sym.copies()))
      raise(weftInvalidArgument, "sim: %d plans for %d ranks in classes of %d", nPlans, n_, sym.copies());
    active_.resize(c.linkGBs.size());
    remCap_.resize(c.linkGBs.size());
    unfrozen_.resize(c.linkGBs.size());
    linkStamp_.resize(c.linkGBs.size());
    buildNodes(planAt, counted);
  }

  // The plans are not read from here on.
  RunStats run() {
    pairTransfers();
    std::vector<uint32_t>().swap(appear_);  // only the pairing needs it
    for (int i = 0; i < int(nodes_.size()); i++)
      if (nodes_[size_t(i)].waitStart == 0) push(nodes_[size_t(i)].readyAt, i, 0, Ev::Start);
    while (!events_.empty()) {
      const double t = events_.top().t;
      while (!events_.empty() && events_.top().t == t) {
        const Event e = events_.top();
        events_.pop();
        handle(e);
      }
      if (!touched_.empty()) reshare(t);
    }
    if (ended_ != nodes_.size())
      raise(weftInvalidArgument, "sim: %zu of %zu steps never ran (plans wait on each other)", nodes_.size() - ended_,
            nodes_.size());
    stats_.simulatedSteps = ended_;
    stats_.steps = ended_ * uint64_t(sym_.copies());
    stats_.simulatedRanks = nPlans_;
    return stats_;
  }

 private:
  // Nodes are laid out step by step across ranks (step j of every rank's
  // every channel, then step j + 1), not rank by rank: the ranks run step j
  // at about the same time, so the events of one moment touch neighbouring
  // nodes (rank by rank, 4096 ranks' nodes missed the cache at every event).
  // appear_ keeps each node's place in its plan's own order (channel by
  // channel) for the FIFO pairing.
  void buildNodes(const PlanAt& planAt, const std::function<void(uint64_t)>& counted) {
    std::vector<uint32_t> laneSteps;  // per channel of every plan, in plan order
    std::vector<uint64_t> lanesLonger;  // per step index j: lanes with more than j steps
    uint64_t total = 0;
    std::vector<bool> seen(size_t(n_), false);
    for (int i = 0; i < nPlans_; i++) {
      const plan::Plan& plan = planAt(i);
      const int r = plan.rank;
      if (r < 0 || r >= n_ || sym_.rep(r) != r || seen[size_t(r)])
        raise(weftInvalidArgument, "sim: plan %d is for rank %d, not a class's representative", i, r);
      seen[size_t(r)] = true;
      if (plan.nranks != n_) raise(weftInvalidArgument, "sim: rank %d's plan is for %d ranks", r, plan.nranks);
      for (const auto& ch : plan.channels) {
        laneSteps.push_back(uint32_t(ch.steps.size()));
        if (lanesLonger.size() < ch.steps.size()) lanesLonger.resize(ch.steps.size(), 0);
        for (size_t j = 0; j < ch.steps.size(); j++) lanesLonger[j]++;
        total += ch.steps.size();
      }
      if (total >= (uint64_t(1) << 30)) raise(weftInvalidArgument, "sim: %llu steps are more than the model holds",
                                               (unsigned long long)total);
      if (counted) counted(total);
    }
    // Step j of the k-th lane that has one sits at start[j] + k.
    std::vector<uint64_t> start(lanesLonger.size() + 1, 0), taken(lanesLonger.size(), 0);
    for (size_t j = 0; j < lanesLonger.size(); j++) start[j + 1] = start[j] + lanesLonger[j];
    nodes_.resize(size_t(total));
    appear_.resize(size_t(total));
    size_t lane = 0;
    for (int i = 0; i < nPlans_; i++) {
      const plan::Plan& plan = planAt(i);
      uint32_t base = 0;
      for (const auto& ch : plan.channels) {
        if (lane >= laneSteps.size() || laneSteps[lane++] != ch.steps.size())
          raise(weftInvalidArgument, "sim: rank %d's plan changed between two builds", plan.rank);
        int prev = -1;
        for (size_t j = 0; j < ch.steps.size(); j++) {
          const int at = int(start[j] + taken[j]++);
          nodes_[size_t(at)] = makeNode(plan, ch.steps[j], prev >= 0);
          appear_[size_t(at)] = base + uint32_t(j);
          if (prev >= 0) nodes_[size_t(prev)].next = at;
          prev = at;
        }
        base += uint32_t(ch.steps.size());
      }
    }
  }

  Node makeNode(const plan::Plan& p, const plan::Step& s, bool afterAnother) const {
    const int r = p.rank;
    for (int k = 0; k < s.nSend; k++)
      if (s.sendPeer[k] < 0 || s.sendPeer[k] >= n_ || s.sendPeer[k] == r)
        raise(weftInvalidArgument, "sim: rank %d sends to rank %d", r, s.sendPeer[k]);
    Node x;
    x.bytes = double(s.count) * p.elemSize;
    x.piece = p.sliceBytes ? std::min(x.bytes, double(p.sliceBytes)) : x.bytes;
    x.sendPeer[0] = s.sendPeer[0];
    x.sendPeer[1] = s.sendPeer[1];
    x.recvPeer[0] = s.recvPeer[0];
    x.recvPeer[1] = s.recvPeer[1];
    x.nSend = s.nSend;
    x.nRecv = s.nRecv;
    x.conn = s.conn;
    x.rank = r;
    x.waitStart = uint8_t((afterAnother ? 1 : 0) + s.nRecv);
    x.waitEnd = uint8_t(1 + s.nSend + s.nRecv);
    x.readyAt = c_.stepOverheadUs;
    return x;
  }

  // The k-th send on a (sender, receiver, connection) FIFO feeds the k-th
  // receive on it: both sides sorted by (FIFO, order of appearance). Only
  // representatives have nodes: a send to rank q is seen from q's
  // representative (both ends moved back by the group element that carries
  // it to q), whose receive from the moved sender it feeds.
  void pairTransfers() {
    const uint64_t n = uint64_t(n_);
    struct Entry {  // (FIFO, place in the rank's plan order), node * 2 + slot
      uint64_t fifo;
      uint32_t order;
      int32_t slot;
      bool operator<(const Entry& o) const {
        return fifo != o.fifo ? fifo < o.fifo : order != o.order ? order < o.order : slot < o.slot;
      }
    };
    std::vector<Entry> sends, recvs;
    auto key = [&](uint64_t from, uint64_t to, int conn) { return (from * n + to) * 256 + uint64_t(conn); };
    for (int i = 0; i < int(nodes_.size()); i++) {
      const Node& s = nodes_[size_t(i)];
      const uint64_t me = uint64_t(s.rank);
      const uint32_t order = appear_[size_t(i)] * 2;
      for (int k = 0; k < s.nSend; k++) {
        const int to = s.sendPeer[k];
        sends.push_back({key(uint64_t(sym_.moveBackLike(to, int(me))), uint64_t(sym_.rep(to)), s.conn),
                         order + uint32_t(k), i * 2 + k});
      }
      for (int k = 0; k < s.nRecv; k++) {
        if (s.recvPeer[k] < 0 || s.recvPeer[k] >= n_)
          raise(weftInvalidArgument, "sim: rank %llu receives from rank %d", (unsigned long long)me, s.recvPeer[k]);
        recvs.push_back({key(uint64_t(s.recvPeer[k]), me, s.conn), order + uint32_t(k), i * 2 + k});
      }
    }
    std::sort(sends.begin(), sends.end());
    std::sort(recvs.begin(), recvs.end());
    if (sends.size() != recvs.size())
      raise(weftInvalidArgument, "sim: the plans carry %zu sends for %zu receives", sends.size(), recvs.size());
    for (size_t j = 0; j < sends.size(); j++) {
      if (sends[j].fifo != recvs[j].fifo)
        raise(weftInvalidArgument, "sim: a FIFO's sends and receives do not pair (rank %llu to rank %llu)",
              (unsigned long long)(sends[j].fifo / 256 / n), (unsigned long long)(sends[j].fifo / 256 % n));
      const int out = sends[j].slot, in = recvs[j].slot;
      nodes_[size_t(out / 2)].receiver[out % 2] = in / 2;
    }
  }

  void push(double t, int id, uint32_t version, Ev kind) { events_.push(Event{t, seq_++, id, version, kind}); }

  void handle(const Event& e) {
    if (e.kind == Ev::Start) return startNode(e.id, e.t);
    if (e.kind == Ev::End) return endNode(e.id, e.t);
    Flow& f = flows_[size_t(e.id)];
    if (e.version != f.version) return;  // its rate changed since: a later event stands for it
    f.remaining = 0;
    f.drainedAt = e.t;
    for (uint32_t j = 0; j < f.linkCount; j++) {
      const int l = flowLinks_[f.linkBegin + j];
      auto& on = active_[size_t(l)];
      auto it = std::find_if(on.begin(), on.end(), [&](const LinkUse& u) { return u.flow == e.id; });
      *it = on.back();
      on.pop_back();
      touch(l);
    }
    finishPart(f.node, e.t);
  }

  double pieceBytes(const Node& x) const { return x.piece; }

  // A free flow slot (its old version kept: events of its last use may
  // still be queued), or a new one.
  int newFlow(const Node& x, int k) {
    int id = int(flows_.size());
    if (!freeFlows_.empty()) {
      id = freeFlows_.back();
      freeFlows_.pop_back();
    } else {
      flows_.emplace_back();
    }
    Flow& f = flows_[size_t(id)];
    route_.clear();
    c_.route(x.rank, x.sendPeer[k], x.conn, &route_);
    if (route_.size() > f.linkRoom) {
      f.linkBegin = uint32_t(flowLinks_.size());
      f.linkRoom = uint32_t(route_.size());
      flowLinks_.resize(flowLinks_.size() + route_.size());
      flowWeights_.resize(flowLinks_.size());
    }
    f.linkCount = uint32_t(route_.size());
    f.rate = f.latUs = f.drainedAt = f.pushedAt = 0;
    return id;
  }

  void startNode(int i, double t) {
    Node& x = nodes_[size_t(i)];
    for (int k = 0; k < x.nSend; k++) {
      const int id = newFlow(x, k);
      Flow& f = flows_[size_t(id)];
      f.node = i;
      f.bytes = f.remaining = x.bytes;
      f.last = t;
      for (uint32_t j = 0; j < f.linkCount; j++) {
        const int l = route_[j];
        f.latUs += c_.linkLatUs[size_t(l)];
        const int weight = sym_.linkWeight[size_t(l)], orbit = sym_.linkRep[size_t(l)];
        flowLinks_[f.linkBegin + j] = orbit;
        flowWeights_[f.linkBegin + j] = weight;
        active_[size_t(orbit)].push_back({id, weight});
        touch(orbit);
      }
      if (c_.hostOf[size_t(x.rank)] != c_.hostOf[size_t(x.sendPeer[k])])
        stats_.netBytes += uint64_t(f.bytes) * uint64_t(sym_.copies());
      x.flow[k] = id;
      fresh_.push_back(id);
    }
    finishPart(i, t);
  }

  // One of what a step's end waits for is done; once all are, its end is
  // known: no earlier than its own flows drained, nor than its last input
  // piece arrived plus one piece at the rate its flows last had.
  void finishPart(int i, double t) {
    Node& x = nodes_[size_t(i)];
    if (--x.waitEnd > 0) return;
    double end = std::max(x.readyAt, x.inEnd);
    const double piece = pieceBytes(x);
    for (int k = 0; k < x.nSend; k++) {
      Flow& f = flows_[size_t(x.flow[k])];
      f.pushedAt = std::max(f.drainedAt, x.nRecv && f.rate > 0 ? x.inEnd + piece / f.rate : 0.0);
      end = std::max(end, f.pushedAt);
    }
    push(std::max(end, t), i, 0, Ev::End);
  }

  void endNode(int i, double t) {
    Node& x = nodes_[size_t(i)];
    ended_++;
    stats_.us = std::max(stats_.us, t);
    for (int k = 0; k < x.nSend; k++) {
      const Flow& f = flows_[size_t(x.flow[k])];
      Node& r = nodes_[size_t(x.receiver[k])];
      r.inEnd = std::max(r.inEnd, f.pushedAt + f.latUs);
      freeFlows_.push_back(x.flow[k]);
      finishPart(x.receiver[k], t);
    }
    if (x.next >= 0) resolveStart(x.next, t + c_.stepOverheadUs);
  }

  void resolveStart(int i, double at) {
    Node& x = nodes_[size_t(i)];
    x.readyAt = std::max(x.readyAt, at);
    if (--x.waitStart == 0) push(x.readyAt, i, 0, Ev::Start);
  }

  void touch(int l) {
    if (linkStamp_[size_t(l)] != stamp_ + 1) {
      linkStamp_[size_t(l)] = stamp_ + 1;
      touched_.push_back(l);
    }
  }

  void collectComponent();
  void fillRates();
  void reshare(double t);

  const Cluster& c_;
  const RankSymmetry& sym_;
  const int n_;
  const int nPlans_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> appear_;  // per node: its place in its rank's plan (channel by channel)
  std::vector<Flow> flows_;
  std::vector<int> flowLinks_, flowWeights_;
  std::vector<int> freeFlows_, route_;
  std::vector<std::vector<LinkUse>> active_;  // per link: the flows crossing it now
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  uint64_t seq_ = 0;
  size_t ended_ = 0;
  RunStats stats_;
  // Fair-share scratch: links touched since the last reshare, the component
  // they reach, per-link capacity left and flows not yet at their share.
  std::vector<int> touched_, fresh_, compLinks_, compFlows_;
  std::vector<uint32_t> linkStamp_, flowStamp_;
  uint32_t stamp_ = 0;
  std::vector<double> remCap_, newRate_;
  std::vector<double> unfrozen_;  // flows (with their copies) not yet at their share
};

// The links and flows connected to the touched links through shared flows:
// only their shares can change.
void Model::collectComponent() {
  stamp_ += 2;  // touched links carry stamp_ - 1 now; component members get stamp_
  flowStamp_.resize(flows_.size(), 0);
  newRate_.resize(flows_.size(), 0);
  compLinks_.clear();
  compFlows_.clear();
  for (int l : touched_) {
    linkStamp_[size_t(l)] = stamp_;
    compLinks_.push_back(l);
  }
  touched_.clear();
  for (size_t q = 0; q < compLinks_.size(); q++) {
    for (const LinkUse& u : active_[size_t(compLinks_[q])]) {
      const int f = u.flow;
      if (flowStamp_[size_t(f)] == stamp_) continue;
      flowStamp_[size_t(f)] = stamp_;
      compFlows_.push_back(f);
      const Flow& fl = flows_[size_t(f)];
      for (uint32_t j = 0; j < fl.linkCount; j++) {
        const int l = flowLinks_[fl.linkBegin + j];
        if (linkStamp_[size_t(l)] != stamp_) {
          linkStamp_[size_t(l)] = stamp_;
          compLinks_.push_back(l);
        }
      }
    }
  }
}

// Max-min fair rates by progressive filling: the link offering the smallest
// equal share fixes its flows' rates at that share, which leaves the other
// links they cross with less capacity and fewer flows; repeat. A flow
// counts on a link as often as its copies cross the link (its weight there):
// 1 in the full model.
void Model::fillRates() {
  using Key = std::pair<double, int>;  // (share, link): ties by link index
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
  for (int l : compLinks_) {
    remCap_[size_t(l)] = c_.linkGBs[size_t(l)] * 1e3;
    double load = 0;
    for (const LinkUse& u : active_[size_t(l)]) load += u.weight;
    unfrozen_[size_t(l)] = load;
    if (load > 0) heap.push({remCap_[size_t(l)] / load, l});
  }
  const uint32_t frozen = stamp_ + 1;
  while (!heap.empty()) {
    const auto [share, l] = heap.top();
    heap.pop();
    if (unfrozen_[size_t(l)] <= 0 || share != remCap_[size_t(l)] / unfrozen_[size_t(l)]) continue;  // stale
    for (const LinkUse& u : active_[size_t(l)]) {
      const int f = u.flow;
      if (flowStamp_[size_t(f)] == frozen) continue;
      flowStamp_[size_t(f)] = frozen;
      newRate_[size_t(f)] = std::max(share, c_.linkGBs[size_t(l)] * 1e-6);
      const Flow& fl = flows_[size_t(f)];
      for (uint32_t j = 0; j < fl.linkCount; j++) {
        const int m = flowLinks_[fl.linkBegin + j];
        const double w = flowWeights_[fl.linkBegin + j];
        remCap_[size_t(m)] = std::max(remCap_[size_t(m)] - (w == 1 ? share : w * share), 0.0);
        unfrozen_[size_t(m)] -= w;
        if (unfrozen_[size_t(m)] > 0 && m != l) heap.push({remCap_[size_t(m)] / unfrozen_[size_t(m)], m});
      }
    }
  }
}

void Model::reshare(double t) {
  collectComponent();
  stats_.rateUpdates++;
  fillRates();
  for (int id : compFlows_) {
    Flow& f = flows_[size_t(id)];
    if (f.rate > 0) f.remaining = std::max(f.remaining - f.rate * (t - f.last), 0.0);
    f.last = t;
    const double r = newRate_[size_t(id)];
    if (r == f.rate) continue;
    f.rate = r;
    push(t + f.remaining / r, id, ++f.version, Ev::Drain);
  }
  // A flow that started now: its first piece arrives one piece at its share
  // plus the route's latency from now.
  for (int id : fresh_) {
    const Flow& f = flows_[size_t(id)];
    const Node& x = nodes_[size_t(f.node)];
    const int k = x.flow[0] == id ? 0 : 1;
    resolveStart(x.receiver[k], t + std::min(pieceBytes(x), f.bytes) / f.rate + f.latUs);
  }
  fresh_.clear();
}

}  // namespace

namespace {

void checkEveryRank(const std::vector<plan::Plan>& plans, const Cluster& c) {
  if (c.hostOf.size() != plans.size())
    raise(weftInvalidArgument, "sim: %zu host ids for %zu ranks", c.hostOf.size(), plans.size());
  for (size_t r = 0; r < plans.size(); r++)
    if (plans[r].rank != int(r)) raise(weftInvalidArgument, "sim: plan %zu is rank %d's", r, plans[r].rank);
}

}  // namespace

RunStats simulate(const std::vector<plan::Plan>& plans, const Cluster& c) {
  checkEveryRank(plans, c);
  const RankSymmetry full = noSymmetry(c);
  Model m(int(plans.size()), [&](int i) -> const plan::Plan& { return plans[size_t(i)]; }, c, full);
  return m.run();
}

RunStats simulateStreamed(const std::function<plan::Plan(int rank)>& plans, const Cluster& c,
                          const std::function<void(uint64_t steps)>& counted) {
  const RankSymmetry full = noSymmetry(c);
  plan::Plan held;
  Model m(int(c.hostOf.size()), [&](int r) -> const plan::Plan& {
    held = plans(r);
    if (held.rank != r) raise(weftInvalidArgument, "sim: plan %d is rank %d's", r, held.rank);
    return held;
  }, c, full, counted);
  held = plan::Plan{};
  return m.run();
}

RunStats simulateSymmetric(const std::vector<plan::Plan>& representatives, const Cluster& c, const RankSymmetry& sym) {
  Model m(int(representatives.size()), [&](int i) -> const plan::Plan& { return representatives[size_t(i)]; }, c,
          sym);
  return m.run();
}

}  // namespace weft::sim
