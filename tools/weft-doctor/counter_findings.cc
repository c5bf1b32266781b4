// Findings from the counters of every host (counters.h).
#include <algorithm>
#include <cstdio>
#include <set>

#include "tools/weft-doctor/counters.h"

namespace weft::doctor {
namespace {

// Under this, a bond carried too little for its split to mean anything.
constexpr uint64_t kMinBondBytes = 1 << 20;
// One member carrying this share of a bond's traffic is "all on one member".
constexpr double kOneMemberShare = 0.9;

std::string bytesText(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(1ull << 30));
  else if (b >= (1u << 20)) snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(1u << 20));
  else snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

uint64_t moved(const std::map<std::string, uint64_t>& d, const std::string& name) {
  auto it = d.find(name);
  return it == d.end() ? 0 : it->second;
}

void bondFindings(const std::string& host, const HostCounters& c, std::vector<Finding>* out) {
  const auto d = counterDeltas(c);
  for (const auto& [bond, members] : c.bonds) {
    if (members.size() < 2) continue;
    uint64_t total = 0, top = 0;
    std::string topName;
    for (const std::string& m : members) {
      const uint64_t b = moved(d, "net/" + m + "/tx_bytes") + moved(d, "net/" + m + "/rx_bytes");
      total += b;
      if (b > top) top = b, topName = m;
    }
    if (total < kMinBondBytes || double(top) < kOneMemberShare * double(total)) continue;
    std::string list;
    for (const std::string& m : members) list += (list.empty() ? "" : ", ") + m;
    char pct[16];
    snprintf(pct, sizeof pct, "%.0f%%", 100.0 * double(top) / double(total));
    out->push_back({"bond", host,
                    host + ": bond " + bond + " carried " + bytesText(total) + ", " + pct + " of it on " + topName +
                        " (members " + list + "): traffic is not spread over the bond"});
  }
}

void troubleFindings(const std::string& host, const HostCounters& c, std::vector<Finding>* out) {
  // One line per NIC: "mlx5_0 port 1: np_ecn_marked_roce_packets +1200, np_cnp_sent +40".
  std::map<std::string, std::string> perNic;
  for (const auto& [name, delta] : counterDeltas(c)) {
    if (!isTroubleCounter(name)) continue;
    const size_t leafAt = name.rfind('/') + 1;
    std::string nic;
    if (name.rfind("rdma/", 0) == 0) {
      const size_t dev = name.find('/', 5), port = name.find('/', dev + 1);
      nic = name.substr(5, dev - 5) + " port " + name.substr(dev + 1, port - dev - 1);
    } else {
      nic = name.substr(4, name.find('/', 4) - 4);
    }
    std::string& line = perNic[nic];
    line += (line.empty() ? "" : ", ") + name.substr(leafAt) + " +" + std::to_string(delta);
  }
  for (const auto& [nic, line] : perNic)
    out->push_back({"rdma_counter", host, host + ": " + nic + " counters moved during the sweep: " + line});
}

// For each NIC name present on several hosts: hosts whose value differs
// from the most common one (the value of `field`).
void versionFindings(const Result& r, const char* kind, std::string Nic::*field, const char* what,
                     std::vector<Finding>* out) {
  std::map<std::string, std::map<std::string, std::vector<int>>> byNic;  // nic -> value -> hosts
  for (size_t h = 0; h < r.counters.size(); h++)
    for (const Nic& n : r.counters[h].nics)
      if (!(n.*field).empty()) byNic[n.name][n.*field].push_back(int(h));
  for (const auto& [nic, values] : byNic) {
    if (values.size() < 2) continue;
    auto common = values.begin();
    for (auto it = values.begin(); it != values.end(); ++it)
      if (it->second.size() > common->second.size()) common = it;
    for (const auto& [value, hosts] : values) {
      if (value == common->first) continue;
      for (int h : hosts) {
        const std::string name = hostName(r, h);
        out->push_back({kind, name,
                        name + ": " + nic + " " + what + " " + value + ", the other hosts have " + common->first +
                            " (" + std::to_string(common->second.size()) + " host(s))"});
      }
    }
  }
}

}  // namespace

std::vector<Finding> counterFindings(const Result& r) {
  std::vector<Finding> out;
  for (size_t h = 0; h < r.counters.size(); h++) {
    const std::string name = hostName(r, int(h));
    if (!r.counters[h].problem.empty())
      out.push_back({"counters", name, name + ": counters not read: " + r.counters[h].problem});
    bondFindings(name, r.counters[h], &out);
    troubleFindings(name, r.counters[h], &out);
  }
  versionFindings(r, "firmware", &Nic::firmware, "firmware", &out);
  versionFindings(r, "driver", &Nic::driver, "driver", &out);
  versionFindings(r, "driver", &Nic::driverVersion, "driver version", &out);
  return out;
}

}  // namespace weft::doctor
