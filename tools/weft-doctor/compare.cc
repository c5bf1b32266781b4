#include "tools/weft-doctor/compare.h"

#include <cstdio>
#include <map>
#include <set>

namespace weft::doctor {
namespace {

std::string hostList(const Result& r) {
  std::string s;
  for (const HostInfo& h : r.hosts) s += (s.empty() ? "" : ", ") + h.name + " (" + std::to_string(h.ranks.size()) + ")";
  return s + "; " + std::to_string(r.nranks) + " ranks";
}

// Lower is faster: the order of the host transport list.
int transportRank(const std::string& t) {
  if (t == "SHM") return 0;
  if (t == "IB") return 1;
  if (t == "Socket") return 2;
  return 3;
}

std::string sizeText(uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

std::string collName(const std::string& key) {
  if (key == "allreduce") return "AllReduce";
  if (key == "allgather") return "AllGather";
  return key;
}

std::string pairSubject(const Result& r, const PairTransport& t) {
  const int ha = r.ranks[size_t(t.a)].host, hb = r.ranks[size_t(t.b)].host;
  if (ha == hb) return hostName(r, ha);
  return hostName(r, std::min(ha, hb)) + " <-> " + hostName(r, std::max(ha, hb));
}

void compareTransports(const Result& base, const Result& cur, Verdict* v) {
  std::map<std::pair<int, int>, const PairTransport*> old;
  for (const PairTransport& t : base.transports) old[{t.a, t.b}] = &t;
  // One finding per host pair and change: (subject, from, to) -> (count, example).
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<int, const PairTransport*>> changes;
  for (const PairTransport& t : cur.transports) {
    auto it = old.find({t.a, t.b});
    if (it == old.end()) continue;
    v->compared++;
    if (it->second->transport == t.transport) continue;
    auto& e = changes[{pairSubject(cur, t), it->second->transport, t.transport}];
    if (!e.second) e.second = &t;
    e.first++;
  }
  for (const auto& [key, e] : changes) {
    const auto& [subject, from, to] = key;
    const std::string text = subject + ": " + std::to_string(e.first) + " rank pair(s) now use " +
                             (to.empty() ? "no transport" : to) + ", baseline " + from + " (ranks " +
                             std::to_string(e.second->a) + " and " + std::to_string(e.second->b) + ": " +
                             e.second->why + ")";
    (transportRank(to) > transportRank(from) ? v->regressions : v->improvements).push_back({"transport", subject, text});
  }
}

void compareLinks(const Result& base, const Result& cur, const CompareOptions& o, Verdict* v) {
  std::map<std::string, const Link*> old;
  for (const Link& l : base.links) old[linkName(base, l)] = &l;
  for (const Link& l : cur.links) {
    const std::string name = linkName(cur, l);
    auto it = old.find(name);
    if (it == old.end()) continue;
    v->compared++;
    const Link& b = *it->second;
    if (b.gbps > 0 && l.gbps < (1 - o.tolerance) * b.gbps)
      v->regressions.push_back({"link_bandwidth", name,
                                "link " + name + ": " + fmt("%.3f GB/s, baseline %.3f GB/s (%+.0f%%)", l.gbps, b.gbps,
                                                            100 * (l.gbps / b.gbps - 1))});
    else if (b.gbps > 0 && l.gbps > (1 + o.tolerance) * b.gbps)
      v->improvements.push_back({"link_bandwidth", name,
                                 "link " + name + ": " + fmt("%.3f GB/s, baseline %.3f GB/s", l.gbps, b.gbps)});
    if (l.latUs > (1 + o.tolerance) * b.latUs && l.latUs - b.latUs > o.latFloorUs)
      v->regressions.push_back({"link_latency", name,
                                "link " + name + ": latency " + fmt("%.1f us, baseline %.1f us", l.latUs, b.latUs)});
  }
}

void compareSweep(const Result& base, const Result& cur, const CompareOptions& o, Verdict* v) {
  std::map<std::pair<std::string, uint64_t>, const SweepPoint*> old;
  for (const SweepPoint& s : base.sweep) old[{s.coll, s.bytes}] = &s;
  for (const SweepPoint& s : cur.sweep) {
    auto it = old.find({s.coll, s.bytes});
    if (it == old.end()) continue;
    v->compared++;
    const SweepPoint& b = *it->second;
    const std::string name = collName(s.coll) + " " + sizeText(s.bytes);
    if (b.busGbps > 0 && s.busGbps < (1 - o.tolerance) * b.busGbps)
      v->regressions.push_back({"sweep", name,
                                name + ": bus bandwidth " + fmt("%.3f GB/s, baseline %.3f GB/s (%+.0f%%)", s.busGbps,
                                                                b.busGbps, 100 * (s.busGbps / b.busGbps - 1))});
  }
}

}  // namespace

std::string versionText(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

std::string incompatibility(const Result& baseline, const Result& current) {
  if (baseline.format != current.format)
    return "it is in format " + baseline.format + ", this weft-doctor writes and reads " + current.format +
           ": save a new baseline with --save-baseline";
  if (baseline.weftVersion != current.weftVersion)
    return "it was measured with weft " + versionText(baseline.weftVersion) + ", this is weft " +
           versionText(current.weftVersion) + ": save a new baseline with --save-baseline";
  bool same = baseline.nranks == current.nranks && baseline.hosts.size() == current.hosts.size();
  for (size_t h = 0; same && h < current.hosts.size(); h++)
    same = baseline.hosts[h].name == current.hosts[h].name && baseline.hosts[h].ranks == current.hosts[h].ranks;
  if (!same)
    return "it is from another cluster or layout: its hosts (ranks) are " + hostList(baseline) + "; this run's are " +
           hostList(current);
  return "";
}

Verdict compareWithBaseline(const Result& baseline, const Result& current, const CompareOptions& o) {
  Verdict v;
  v.refusal = incompatibility(baseline, current);
  if (!v.refusal.empty()) {
    v.refused = true;
    return v;
  }
  compareTransports(baseline, current, &v);
  compareLinks(baseline, current, o, &v);
  compareSweep(baseline, current, o, &v);
  return v;
}

std::string verdictText(const Verdict& v, const Result& baseline, const std::string& what, const CompareOptions& o) {
  const std::string tol = fmt("%.0f%%", 100 * o.tolerance);
  if (v.refused) return "verdict: NOT COMPARED: baseline " + what + " refused: " + v.refusal + "\n";
  std::string text;
  if (v.regressions.empty()) {
    text = "verdict: OK: nothing regressed beyond " + tol + " against baseline " + what + " (" + baseline.date +
           ", " + std::to_string(v.compared) + " links, sweep points and rank pairs compared)\n";
  } else {
    text = "verdict: REGRESSED: " + std::to_string(v.regressions.size()) + " regression(s) beyond " + tol +
           " against baseline " + what + " (" + baseline.date + ")\n";
    for (const Finding& f : v.regressions) text += "  REGRESSED " + f.text + "\n";
  }
  for (const Finding& f : v.improvements) text += "  better    " + f.text + "\n";
  if (v.compared == 0) text += "  (nothing in common to compare: other sweep sizes or links?)\n";
  return text;
}

}  // namespace weft::doctor
