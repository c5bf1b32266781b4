#include "src/topology/local_system.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "src/topology/detect.h"
#include "src/topology/topo_file.h"
#include "src/util/env.h"
#include "src/util/log.h"

namespace weft::topo {

int hostNamed(const System& sys, const std::string& hostName) {
  for (size_t h = 0; h < sys.hosts.size(); ++h)
    if (sys.hosts[h] == hostName) return static_cast<int>(h);
  return 0;
}

LocalTopology localTopology() {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const System>> cache;  // "" = detected
  const std::string file = envString("WEFT_TOPO_FILE").value_or("");
  std::shared_ptr<const System> sys;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(file);
    if (it == cache.end()) {
      System s = file.empty() ? detectLocal() : loadFile(file);
      if (!file.empty())
        WEFT_INFO(kGraph, "topology: loaded %s (%zu hosts, %zu nodes)", file.c_str(), s.hosts.size(), s.nodes.size());
      it = cache.emplace(file, std::make_shared<const System>(std::move(s))).first;
    }
    sys = it->second;
  }
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) name[0] = 0;
  return {sys, hostNamed(*sys, name), file.empty() ? "detected" : file};
}

int currentNumaNode() {
  const int cpu = sched_getcpu();
  if (cpu < 0) return -1;
  const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  int numa = -1;
  while (dirent* e = readdir(d))
    if (strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9') {
      numa = atoi(e->d_name + 4);
      break;
    }
  closedir(d);
  return numa;
}

}  // namespace weft::topo
