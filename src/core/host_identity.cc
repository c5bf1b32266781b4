#include "src/core/host_identity.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <fstream>

#include "src/util/settings.h"
#include "transports/transport.h"

namespace weft {

uint64_t fnv1a(const void* data, size_t bytes, uint64_t seed) {
  uint64_t h = seed;
  auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

uint64_t hostHash() {
  if (auto id = settings::get(settings::kHostId)) return fnv1a(id->data(), id->size());
  std::string key = hostName();
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (boot >> bootId) key += ":" + bootId;
  return fnv1a(key.data(), key.size());
}

int ownCpuMask(uint64_t* mask) {
  for (int w = 0; w < kCpuMaskWords; w++) mask[w] = 0;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return 1;
  for (int c = 0; c < kCpuMaskWords * 64 && c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &cpus)) mask[c / 64] |= uint64_t(1) << (c % 64);
  return std::max(CPU_COUNT(&cpus), 1);
}

int cpuCount(const uint64_t* mask) {
  int n = 0;
  for (int w = 0; w < kCpuMaskWords; w++) n += std::popcount(mask[w]);
  return n;
}

int hostCpuCount(const std::vector<PeerInfo>& peers, uint64_t host) {
  uint64_t all[kCpuMaskWords] = {};
  for (const PeerInfo& p : peers)
    if (p.hostHash == host)
      for (int w = 0; w < kCpuMaskWords; w++) all[w] |= p.cpuMask[w];
  return cpuCount(all);
}

uint64_t processHash() {
  uint64_t h = hostHash();
  pid_t pid = getpid();
  return fnv1a(&pid, sizeof(pid), h);
}

}  // namespace weft
