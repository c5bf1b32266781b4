// Shared set-up of the ibloop tests: the loopback verbs provider as
// weft's verbs library, IB as the transport between ranks of this host,
// and a fabric name of this test process (its shared segments are removed
// at exit).
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace weft::test {

inline std::string ibloopFabric() { return "lbv-test-" + std::to_string(getpid()); }

// Removes /dev/shm/<fabric>-* (left by processes that vanished on purpose).
inline void removeFabric(const std::string& fabric) {
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  while (dirent* e = readdir(d))
    if (std::strncmp(e->d_name, fabric.c_str(), fabric.size()) == 0)
      unlink(("/dev/shm/" + std::string(e->d_name)).c_str());
  closedir(d);
}

// Before any weft call of the process: the verbs library is chosen once.
struct IbloopProcessEnv {
  std::string fabric = ibloopFabric();
  IbloopProcessEnv() {
    setenv("WEFT_IB_VERBS_LIB", LOOPBACK_VERBS_LIB, 1);
    setenv("LOOPBACK_VERBS_FABRIC", fabric.c_str(), 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    // Same host: without shared memory the core takes the network, and
    // WEFT_NET makes that IB rather than sockets.
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_NET", "IB", 1);
    // A dead peer becomes an error in about a second, not 34 s.
    setenv("WEFT_IB_TIMEOUT", "14", 1);
    setenv("WEFT_IB_RETRY_CNT", "7", 1);
  }
  ~IbloopProcessEnv() { removeFabric(fabric); }
};

}  // namespace weft::test
