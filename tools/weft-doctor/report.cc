#include "tools/weft-doctor/report.h"

#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "tools/weft-doctor/compare.h"
#include "tools/weft-doctor/counters.h"

namespace weft::doctor {
namespace {

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string rankList(const std::vector<int>& ranks) {
  if (ranks.empty()) return "-";
  bool contiguous = true;
  for (size_t i = 1; i < ranks.size(); i++) contiguous &= ranks[i] == ranks[i - 1] + 1;
  if (contiguous) return ranks.size() == 1 ? std::to_string(ranks[0])
                                           : std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string s;
  for (int k : ranks) s += (s.empty() ? "" : ",") + std::to_string(k);
  return s;
}

std::string hostsPart(const Result& r) {
  std::string t = "hosts\n";
  for (size_t h = 0; h < r.hosts.size(); h++) {
    const HostInfo& host = r.hosts[h];
    std::string ifs;
    for (int k : host.ranks)
      if (ifs.find(r.ranks[size_t(k)].netIf) == std::string::npos && !r.ranks[size_t(k)].netIf.empty())
        ifs += (ifs.empty() ? "" : ",") + r.ranks[size_t(k)].netIf;
    t += "  " + pad(host.name, 12) + " hostname " + pad(host.hostname, 16) + " ranks " + pad(rankList(host.ranks), 8) +
         " socket interface " + (ifs.empty() ? "?" : ifs) + "\n";
  }
  return t;
}

std::string transportsPart(const Result& r) {
  // (host a, host b, transport, why) -> rank pairs
  std::map<std::tuple<int, int, std::string, std::string>, int> groups;
  for (const PairTransport& p : r.transports) {
    const int ha = r.ranks[size_t(p.a)].host, hb = r.ranks[size_t(p.b)].host;
    groups[{std::min(ha, hb), std::max(ha, hb), p.transport, p.why}]++;
  }
  // Many hosts that all agree make one line, not one per host pair.
  std::set<std::pair<std::string, std::string>> netKinds;
  int netGroups = 0, netRankPairs = 0;
  for (const auto& [key, n] : groups)
    if (std::get<0>(key) != std::get<1>(key)) netKinds.insert({std::get<2>(key), std::get<3>(key)}), netGroups++, netRankPairs += n;
  const bool oneLine = netKinds.size() == 1 && netGroups > 2;
  std::string t = "transports (rank pairs per host pair: transport, why)\n";
  if (oneLine)
    t += "  " + pad("all " + std::to_string(netGroups) + " host pairs", 24) + " " + pad(netKinds.begin()->first, 7) +
         " x" + pad(std::to_string(netRankPairs), 4) + " " + netKinds.begin()->second + "\n";
  for (const auto& [key, n] : groups) {
    const auto& [a, b, transport, why] = key;
    if (oneLine && a != b) continue;
    const std::string pair = a == b ? hostName(r, a) : hostName(r, a) + " <-> " + hostName(r, b);
    t += "  " + pad(pair, 24) + " " + pad(transport.empty() ? "none" : transport, 7) + " x" + pad(std::to_string(n), 4) +
         " " + why + "\n";
  }
  if (groups.empty()) t += "  (one rank: no pairs)\n";
  return t;
}

std::string matrix(const Result& r, const char* title, double Link::*field, const char* format) {
  const size_t n = r.hosts.size();
  std::vector<std::vector<std::string>> cells(n, std::vector<std::string>(n, "-"));
  for (const Link& l : r.links) cells[size_t(l.from)][size_t(l.to)] = fmt(format, l.*field);
  std::string t = std::string(title) + "\n  " + pad("from \\ to", 12);
  for (size_t c = 0; c < n; c++) t += " " + pad(r.hosts[c].name, 10);
  t += "\n";
  for (size_t row = 0; row < n; row++) {
    t += "  " + pad(r.hosts[row].name, 12);
    for (size_t c = 0; c < n; c++) t += " " + pad(cells[row][c], 10);
    t += "\n";
  }
  return t;
}

std::string sweepPart(const Result& r) {
  std::string t = "sweep (all ranks; time of the slowest rank)\n  collective       bytes     time us  busbw GB/s\n";
  for (const SweepPoint& s : r.sweep) {
    char line[128];
    snprintf(line, sizeof line, "  %-10s %11llu %11.1f %11.3f\n", s.coll.c_str(),
             static_cast<unsigned long long>(s.bytes), s.timeUs, s.busGbps);
    t += line;
  }
  return t;
}

std::string countersPart(const Result& r) {
  std::string t = "NICs and counters (moved during the run)\n";
  for (size_t h = 0; h < r.counters.size(); h++) {
    const HostCounters& c = r.counters[h];
    std::string nics;
    for (const Nic& n : c.nics) {
      if (n.name == "lo") continue;
      std::string what = n.driver.empty() ? "" : n.driver;
      if (!n.driverVersion.empty()) what += " " + n.driverVersion;
      if (!n.firmware.empty()) what += (what.empty() ? "fw " : ", fw ") + n.firmware;
      nics += (nics.empty() ? "" : "; ") + n.name + (what.empty() ? "" : " (" + what + ")");
    }
    t += "  " + pad(hostName(r, int(h)), 12) + " " + (c.problem.empty() ? nics : "not read: " + c.problem) + "\n";
    const auto moved = counterDeltas(c);
    std::string traffic;
    for (const auto& [name, d] : moved)
      if (name.size() > 9 && (name.ends_with("/tx_bytes") || name.ends_with("/rx_bytes") ||
                              name.ends_with("port_xmit_data") || name.ends_with("port_rcv_data")))
        traffic += (traffic.empty() ? "" : ", ") + name + " +" + std::to_string(d);
    if (!traffic.empty()) t += "  " + pad("", 12) + " traffic: " + traffic + "\n";
  }
  return t;
}

}  // namespace

std::string reportText(const Result& r) {
  std::string t = "weft-doctor: " + std::to_string(r.hosts.size()) + " host(s), " + std::to_string(r.nranks) +
                  " rank(s), weft " + versionText(r.weftVersion) + ", " + r.date + ", " + fmt("%.1f s", r.seconds) +
                  "\n\n";
  t += hostsPart(r) + "\n" + transportsPart(r) + "\n";
  t += matrix(r, "bandwidth GB/s, one direction (row: sender host, column: receiver; diagonal: two ranks of one host)",
              &Link::gbps, "%.3f") + "\n";
  t += matrix(r, "latency us (half a round trip of 8 bytes, lower quartile)", &Link::latUs, "%.1f") + "\n";
  t += sweepPart(r) + "\n" + countersPart(r) + "\n";
  t += "findings\n";
  for (const Finding& f : r.findings) t += "  - " + f.text + "\n";
  if (r.findings.empty()) t += "  none\n";
  return t;
}

}  // namespace weft::doctor
