#include "src/core/host_identity.h"

#include <unistd.h>

#include <fstream>

#include "src/util/settings.h"

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

uint64_t processHash() {
  uint64_t h = hostHash();
  pid_t pid = getpid();
  return fnv1a(&pid, sizeof(pid), h);
}

}  // namespace weft
