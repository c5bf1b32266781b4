#include "src/topology/detect.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <fstream>

#include "src/topology/detect_internal.h"
#include "src/topology/topo_file.h"
#include "src/util/env.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::topo {

namespace detail {

std::string readSysfs(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::string s;
  std::getline(in, s);
  if (in.bad()) return "";
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string pciBusIdOfLink(const std::string& devicePath) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(devicePath, ec);
  if (ec) return "";
  std::string name = target.filename().string();
  // A PCI function looks like dddd:bb:dd.f
  if (name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.') return name;
  return "";
}

std::string nextId(const System& sys, int host, const char* prefix) {
  for (int i = 0;; ++i) {
    std::string id = prefix + std::to_string(i);
    if (sys.find(host, id) < 0) return id;
  }
}

int cpuNodeForNuma(const System& sys, int host, int numa) {
  auto cpus = sys.nodesOf(NodeKind::Cpu, host);
  for (int c : cpus)
    if (sys.nodes[c].numa == numa) return c;
  return cpus.empty() ? -1 : cpus.front();
}

int attachToCpu(System& sys, int node, int numa, LinkKind kind, double bw) {
  int cpu = cpuNodeForNuma(sys, sys.nodes[node].host, numa);
  if (cpu < 0) return -1;
  return sys.addLink(cpu, node, kind, bw);
}

}  // namespace detail

System detectLocal(const DetectOptions& opts) {
  System sys;
  std::string name = opts.hostName;
  if (name.empty()) {
    char buf[HOST_NAME_MAX + 1] = {};
    if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) snprintf(buf, sizeof buf, "localhost");
    name = buf;
  }
  std::replace(name.begin(), name.end(), '/', '_');
  if (name == "net") name = "net-host";
  int host = sys.addHost(name);
  detail::detectHwloc(sys, host);
  detail::detectIbPorts(sys, host, opts.sysRoot);
  detail::detectNetInterfaces(sys, host, opts.sysRoot);
  if (opts.gpus && !detail::detectNvmlGpus(sys, host))
    WEFT_INFO(kGraph, "topology: NVML not available, GPUs known from PCI only");
  WEFT_INFO(kGraph, "topology: detected %zu nodes and %zu links on %s", sys.nodes.size(), sys.links.size(),
            name.c_str());
  return sys;
}

System systemFromEnv() {
  System sys;
  if (auto file = envString("WEFT_TOPO_FILE")) {
    sys = loadFile(*file);
    WEFT_INFO(kGraph, "topology: loaded %s (%zu hosts, %zu nodes)", file->c_str(), sys.hosts.size(),
              sys.nodes.size());
  } else {
    sys = detectLocal();
  }
  if (auto dump = envString("WEFT_TOPO_DUMP_FILE")) {
    dumpFile(sys, *dump);
    WEFT_INFO(kGraph, "topology: written to %s", dump->c_str());
  }
  return sys;
}

}  // namespace weft::topo
