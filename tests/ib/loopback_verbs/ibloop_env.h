// Shared set-up of the ibloop tests: the loopback verbs provider as
// weft's verbs library, IB as the transport between ranks of this host,
// and a fabric name of this test process. Its shared segments
// (/dev/shm/<fabric>-*) are removed at exit; a process killed before that
// (a ctest timeout, a signal) leaves them, and the next ibloop process
// removes every fabric whose processes are all gone.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace weft::test {

constexpr const char* kIbloopFabricPrefix = "lbv-test-";

inline std::string ibloopFabric(pid_t pid = getpid()) { return kIbloopFabricPrefix + std::to_string(pid); }

// Removes /dev/shm/<fabric>-* (left by processes that vanished on purpose).
inline void removeFabric(const std::string& fabric) {
  const std::string prefix = fabric + "-";
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  while (dirent* e = readdir(d))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
      unlink(("/dev/shm/" + std::string(e->d_name)).c_str());
  closedir(d);
}

// The segments of this process's fabric, or of another test process's.
inline std::vector<std::string> fabricSegments(const std::string& fabric) {
  std::vector<std::string> out;
  const std::string prefix = fabric + "-";
  DIR* d = opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) out.emplace_back(e->d_name);
  closedir(d);
  return out;
}

inline bool processAlive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// Reads "<digits>" at s; -1 when s does not start with a positive number
// that ends at `end` (or at the end of s).
inline long leadingNumber(const char* s, char end) {
  char* stop = nullptr;
  errno = 0;
  const long v = std::strtol(s, &stop, 10);
  if (stop == s || errno != 0 || v <= 0 || *stop != end) return -1;
  return v;
}

// Removes the segments of every ibloop fabric ("lbv-test-<pid>-...") whose
// processes are all gone: the test process that named it and each process
// with a doorbell in it ("-p<pid>": the ranks it forked, which may outlive
// a killed parent for a while). A live fabric, another engineer's run or
// this process's own, is left alone. Returns how many segments it removed.
inline int sweepStaleFabrics() {
  const size_t prefixLen = std::strlen(kIbloopFabricPrefix);
  std::map<long, std::vector<std::string>> byOwner;
  std::map<long, bool> anyAlive;
  DIR* d = opendir("/dev/shm");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, kIbloopFabricPrefix, prefixLen) != 0) continue;
    const char* rest = e->d_name + prefixLen;
    const long owner = leadingNumber(rest, '-');
    if (owner < 0) continue;
    const char* part = std::strchr(rest, '-') + 1;
    byOwner[owner].emplace_back(e->d_name);
    bool& alive = anyAlive[owner];
    if (!alive) alive = processAlive(static_cast<pid_t>(owner));
    if (!alive && part[0] == 'p') alive = processAlive(static_cast<pid_t>(leadingNumber(part + 1, '\0')));
  }
  closedir(d);
  int removed = 0;
  for (const auto& [owner, names] : byOwner) {
    if (anyAlive[owner]) continue;
    for (const std::string& n : names) removed += unlink(("/dev/shm/" + n).c_str()) == 0;
  }
  return removed;
}

// Before any weft call of the process: the verbs library is chosen once.
struct IbloopProcessEnv {
  std::string fabric = ibloopFabric();
  IbloopProcessEnv() {
    sweepStaleFabrics();
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
