#include "tools/weft-doctor/counters.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace weft::doctor {
namespace fs = std::filesystem;
namespace {

std::string readLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

bool readNumber(const fs::path& p, uint64_t* v) {
  const std::string text = readLine(p);
  if (text.empty()) return false;
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || *end) return false;
  *v = parsed;
  return true;
}

// The name of what a "driver" symlink points at ("mlx5_core"); "" when absent.
std::string driverOf(const fs::path& device) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(device / "driver", ec);
  return ec ? "" : target.filename().string();
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

void readCounterDir(const fs::path& dir, const std::string& prefix, std::map<std::string, uint64_t>* values) {
  for (const fs::path& f : entries(dir)) {
    uint64_t v;
    if (readNumber(f, &v)) (*values)[prefix + f.filename().string()] = v;
  }
}

Nic nicAt(const fs::path& root, const std::string& name, const std::string& kind, const fs::path& device) {
  Nic n;
  n.name = name;
  n.kind = kind;
  n.driver = driverOf(device);
  if (!n.driver.empty()) n.driverVersion = readLine(root / "module" / n.driver / "version");
  return n;
}

void readNet(const fs::path& root, SysfsSnapshot* s) {
  const fs::path net = root / "class" / "net";
  std::error_code ec;
  if (!fs::is_directory(net, ec)) {
    s->problem = "no " + net.string();
    return;
  }
  for (const fs::path& dev : entries(net)) {
    const std::string name = dev.filename().string();
    s->nics.push_back(nicAt(root, name, "net", dev / "device"));
    readCounterDir(dev / "statistics", "net/" + name + "/", &s->values);
    const std::string slaves = readLine(dev / "bonding" / "slaves");
    if (fs::exists(dev / "bonding" / "slaves", ec)) {
      std::vector<std::string> members;
      size_t at = 0;
      while (at < slaves.size()) {
        size_t end = slaves.find(' ', at);
        if (end == std::string::npos) end = slaves.size();
        if (end > at) members.push_back(slaves.substr(at, end - at));
        at = end + 1;
      }
      s->bonds[name] = members;
    }
  }
}

void readRdma(const fs::path& root, SysfsSnapshot* s) {
  for (const fs::path& dev : entries(root / "class" / "infiniband")) {
    const std::string name = dev.filename().string();
    Nic n = nicAt(root, name, "rdma", dev / "device");
    n.firmware = readLine(dev / "fw_ver");
    n.model = readLine(dev / "hca_type");
    if (n.model.empty()) n.model = readLine(dev / "board_id");
    s->nics.push_back(n);
    for (const fs::path& port : entries(dev / "ports")) {
      const std::string prefix = "rdma/" + name + "/" + port.filename().string() + "/";
      readCounterDir(port / "counters", prefix + "counters/", &s->values);
      readCounterDir(port / "hw_counters", prefix + "hw_counters/", &s->values);
    }
  }
}

}  // namespace

SysfsSnapshot readSysfs(const std::string& root) {
  SysfsSnapshot s;
  readNet(root, &s);
  readRdma(root, &s);
  return s;
}

HostCounters combineSnapshots(const SysfsSnapshot& before, const SysfsSnapshot& after) {
  HostCounters c;
  c.nics = after.nics;
  c.bonds = after.bonds;
  c.before = before.values;
  c.after = after.values;
  c.problem = !after.problem.empty() ? after.problem : before.problem;
  return c;
}

bool isTroubleCounter(const std::string& counterName) {
  const std::string leaf = counterName.substr(counterName.rfind('/') + 1);
  static const char* const kWords[] = {"ecn",     "cnp",      "pause",    "pfc",     "retrans", "retry",
                                       "sequence", "seq_err", "timeout",  "nak",     "xmit_wait",
                                       "discard", "error",    "errors",   "dropped", "drop",  "rnr"};
  // Counts of handled or sent CNPs are congestion signals too; "*_cnp_ignored" included.
  for (const char* w : kWords)
    if (leaf.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace weft::doctor
