// The provider's settings and process-wide plumbing: the environment
// (devices, faults), shared segments, doorbells.
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

#include "lbv_internal.h"

namespace lbv {

Process& proc() {
  static Process* p = new Process;  // never destroyed: the progress thread may outlive static destructors
  return *p;
}

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

int statusByName(const std::string& v) {
  if (v == "retry") return IBV_WC_RETRY_EXC_ERR;
  if (v == "rnr") return IBV_WC_RNR_RETRY_EXC_ERR;
  if (v == "access") return IBV_WC_REM_ACCESS_ERR;
  if (v == "flush") return IBV_WC_WR_FLUSH_ERR;
  return std::atoi(v.c_str());
}

}  // namespace

// "lbv0:2:IB,lbv1:1:RoCE-down,lbv2:1:IB/1,lbv3:1:RoCEv1": name, port count,
// link layer of each port (optionally DOWN; IB/<n>: on subnet n; RoCEv1:
// RoCE v1 GIDs).
std::vector<DevConf> parseDevices(const char* spec) {
  std::vector<DevConf> devs;
  for (const std::string& d : split(spec ? spec : "lbv0:1:IB", ',')) {
    std::vector<std::string> f = split(d, ':');
    DevConf dc;
    dc.name = f.empty() ? "lbv0" : f[0];
    const int nPorts = std::clamp(f.size() > 1 ? std::atoi(f[1].c_str()) : 1, 1, kMaxPorts);
    std::string ll = f.size() > 2 ? f[2] : "IB";
    for (int i = 0; i < nPorts; ++i) {
      PortConf pc;
      pc.linkLayer = ll.rfind("RoCE", 0) == 0 ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
      pc.down = ll.find("-down") != std::string::npos;
      pc.roceV1 = ll.rfind("RoCEv1", 0) == 0;
      if (size_t slash = ll.find('/'); slash != std::string::npos) pc.subnet = std::atoi(ll.c_str() + slash + 1) & 0xff;
      dc.ports.push_back(pc);
    }
    devs.push_back(dc);
  }
  return devs;
}

// "wc_status=retry,wc_after=40,delay_us=200,reorder=1,..."
Faults parseFaults(const char* spec) {
  Faults f;
  for (const std::string& kv : split(spec ? spec : "", ',')) {
    size_t eq = kv.find('=');
    std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "1" : kv.substr(eq + 1);
    long n = std::atol(v.c_str());
    if (k == "wc_status") f.wcStatus = statusByName(v);
    else if (k == "wc_after") f.wcAfter = n;
    else if (k == "qp_error_after") f.qpErrorAfter = n;
    else if (k == "exit_after") f.exitAfter = n;
    else if (k == "port_down_after_ms") f.portDownAfterMs = n;
    else if (k == "port_down_port") f.portDownPort = static_cast<int>(n);
    else if (k == "delay_us") f.delayUs = n;
    else if (k == "reorder") f.reorder = n != 0;
    else if (k == "retry_ms") f.retryMs = n;
    else if (k == "cq_cap") f.cqCap = n;
    else if (k == "max_cqe") f.maxCqe = n;
    else if (k == "wc_qp") f.wcQp = n;
    else if (k == "fork") f.forkStatus = v == "unneeded" ? IBV_FORK_UNNEEDED : IBV_FORK_DISABLED;
    else if (k == "seed") f.seed = static_cast<uint64_t>(n);
  }
  if (f.wcStatus >= 0 && f.wcAfter < 0) f.wcAfter = 1;
  return f;
}

// "pkey_index=1,grh=1,hop_limit=255,tclass=96,sl=3,timeout=13,retry_cnt=5"
Expect parseExpect(const char* spec) {
  Expect e;
  for (const std::string& kv : split(spec ? spec : "", ',')) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq);
    const int v = std::atoi(kv.c_str() + eq + 1);
    if (k == "pkey_index") e.pkeyIndex = v;
    else if (k == "grh") e.grh = v;
    else if (k == "hop_limit") e.hopLimit = v;
    else if (k == "tclass") e.trafficClass = v;
    else if (k == "sl") e.sl = v;
    else if (k == "timeout") e.timeout = v;
    else if (k == "retry_cnt") e.retryCnt = v;
  }
  return e;
}

std::vector<uint16_t> parsePkeys(const char* spec) {
  std::vector<uint16_t> keys;
  std::string s = spec && *spec ? spec : "ffff,8001";
  size_t at = 0;
  while (at <= s.size() && keys.size() < 64) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    keys.push_back(static_cast<uint16_t>(std::strtoul(s.substr(at, end - at).c_str(), nullptr, 16)));
    at = end + 1;
  }
  return keys;
}

void loadSettings(Process& p) {
  const char* fabric = std::getenv("LOOPBACK_VERBS_FABRIC");
  p.fabric = fabric && *fabric ? fabric : "lbv-" + std::to_string(getuid());
  p.faults = parseFaults(std::getenv("LOOPBACK_VERBS_FAULTS"));
  p.expect = parseExpect(std::getenv("LOOPBACK_VERBS_EXPECT"));
  p.pkeys = parsePkeys(std::getenv("LOOPBACK_VERBS_PKEYS"));
  p.rng = p.faults.seed * 2654435761u + static_cast<uint64_t>(getpid());
  p.completions.store(0);
  p.portDown.store(false);
  p.startNs = nowNs();
  const char* spec = std::getenv("LOOPBACK_VERBS_DEVICES");
  const std::string specText = spec ? spec : "";
  if (p.contexts.empty() && (p.devList.empty() || specText != p.devSpec)) {
    // No context points at the devices: they may change (tests, and a
    // child after fork()). Their storage stays where it is.
    p.devSpec = specText;
    p.devList.clear();
    p.ibdevs.reserve(64);
    p.devs = parseDevices(std::getenv("LOOPBACK_VERBS_DEVICES"));
    if (p.devs.size() > 64) p.devs.resize(64);
    p.ibdevs.resize(p.devs.size());
    for (size_t i = 0; i < p.devs.size(); ++i) {
      ibv_device& d = p.ibdevs[i];
      std::memset(&d, 0, sizeof d);
      d.node_type = IBV_NODE_CA;
      d.transport_type = IBV_TRANSPORT_IB;
      std::snprintf(d.name, sizeof d.name, "%s", p.devs[i].name.c_str());
      std::snprintf(d.dev_name, sizeof d.dev_name, "uverbs%zu", i);
      p.devList.push_back(&d);
    }
  } else {
    // Port states may change between runs of one process (tests).
    std::vector<DevConf> again = parseDevices(std::getenv("LOOPBACK_VERBS_DEVICES"));
    for (size_t i = 0; i < p.devs.size() && i < again.size(); ++i)
      for (size_t k = 0; k < p.devs[i].ports.size() && k < again[i].ports.size(); ++k)
        p.devs[i].ports[k].down = again[i].ports[k].down;
  }
}

void* mapShared(const std::string& name, size_t bytes, bool create) {
  std::string path = "/" + name;
  int fd = shm_open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
  if (fd < 0) return nullptr;
  struct stat st;
  if (fstat(fd, &st) != 0 || (static_cast<size_t>(st.st_size) < bytes && (!create || ftruncate(fd, static_cast<off_t>(bytes)) != 0))) {
    close(fd);
    return nullptr;
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return m == MAP_FAILED ? nullptr : m;
}

std::string bellName(const Process& p, int32_t pid) { return p.fabric + "-p" + std::to_string(pid); }

// Only a process makes its own bell (at its first ibv_open_device, before
// it has a QP a peer could find): a peer's bell that is not there belongs
// to a process that is gone, and making it would leave a segment nobody
// removes. A missing bell is not remembered: nothing rings it.
std::atomic<uint32_t>* bellOf(Process& p, int32_t pid) {
  auto it = p.peerBells.find(pid);
  if (it != p.peerBells.end()) return it->second;
  auto* b = static_cast<std::atomic<uint32_t>*>(mapShared(bellName(p, pid), 4096, pid == getpid()));
  if (b) p.peerBells[pid] = b;
  return b;
}

void ring(std::atomic<uint32_t>* bell) {
  if (!bell) return;
  bell->fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(bell), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace lbv
