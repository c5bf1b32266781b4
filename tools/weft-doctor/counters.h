// The counters operators read by hand, from a sysfs tree: per-interface
// traffic (class/net/*/statistics, bonds' members), RDMA port counters and
// hw_counters (congestion: ECN marks, CNPs, pauses, retransmits,
// out-of-sequence), and NIC driver and firmware versions. The root is a
// parameter so that tests read recorded trees.
#pragma once

#include <string>
#include <vector>

#include "tools/weft-doctor/result.h"

namespace weft::doctor {

struct SysfsSnapshot {
  std::vector<Nic> nics;
  std::map<std::string, std::vector<std::string>> bonds;
  std::map<std::string, uint64_t> values;
  std::string problem;  // "" when the tree was readable
};

// `root` stands for /sys: class/net, class/infiniband, module. A missing
// class/infiniband is normal (no RDMA NIC); a missing class/net is a problem.
SysfsSnapshot readSysfs(const std::string& root);
// Before/after of one host (the NICs as they were after).
HostCounters combineSnapshots(const SysfsSnapshot& before, const SysfsSnapshot& after);

// Whether an RDMA or interface counter reports trouble when it moves:
// congestion (ECN, CNP, pause/PFC, xmit wait), loss and recovery
// (retransmits, out-of-sequence, timeouts, NAKs), errors and drops.
bool isTroubleCounter(const std::string& counterName);

// Findings from every host's counters: a bond whose traffic all landed on
// one member, trouble counters that moved, a host whose NIC firmware or
// driver differs from the others'.
std::vector<Finding> counterFindings(const Result& r);

}  // namespace weft::doctor
