// weft-doctor's result: what one run measured and found, as written to its
// JSON file and read back as a baseline. Plain data; JSON in result.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace weft::doctor {

// Bumped when a field changes meaning: a baseline of another format is refused.
inline constexpr const char* kFormat = "weft-doctor-1";

struct RankInfo {
  int rank = 0;
  int host = 0;          // index into Result::hosts
  std::string netIf;     // the interface the socket transport would use ("" unknown)
  int pid = 0;
};

struct HostInfo {
  std::string name;      // WEFT_HOSTID when set, else the hostname
  std::string hostname;
  std::vector<int> ranks;
};

// The host transport chosen between two ranks (a < b), and why.
struct PairTransport {
  int a = 0, b = 0;
  std::string transport;  // "SHM", "IB", "Socket"; "" none
  std::string why;
  bool sameHost = false;
  bool lastResort = false;  // TCP
};

// Between two hosts (from == to: two ranks of one host), timed by their
// lowest ranks. bandwidth: one direction, from -> to.
struct Link {
  int from = 0, to = 0;
  double gbps = 0;   // GB/s (1e9 bytes per second)
  double latUs = 0;  // half a round trip of a small message, lower quartile
};

struct SweepPoint {
  std::string coll;  // "allreduce", "allgather"
  uint64_t bytes = 0;
  double timeUs = 0;
  double busGbps = 0;
};

// A NIC as sysfs shows it: network interfaces (class/net) and RDMA devices
// (class/infiniband).
struct Nic {
  std::string name;           // "eth0", "mlx5_0"
  std::string kind;           // "net", "rdma"
  std::string driver;         // the device/driver link's name ("" virtual)
  std::string driverVersion;  // module/<driver>/version, when exposed
  std::string firmware;       // fw_ver (RDMA devices)
  std::string model;          // hca_type / board_id (RDMA), "" net
};

// One host's counters read before and after the sweep. Counter names:
// "net/<if>/<stat>", "rdma/<dev>/<port>/<counters|hw_counters>/<name>".
struct HostCounters {
  std::vector<Nic> nics;
  std::map<std::string, std::vector<std::string>> bonds;  // bond -> member interfaces
  std::map<std::string, uint64_t> before, after;
  std::string problem;  // why the tree could not be read ("" fine)
};

struct Finding {
  std::string kind;     // transport, slow_link, asymmetric_link, slow_latency, bond, rdma_counter, firmware, driver
  std::string subject;  // the host or link it names ("host2", "host1 -> host2")
  std::string text;     // one readable line
};

struct Result {
  std::string format = kFormat;
  int weftVersion = 0;
  std::string date;  // UTC, ISO 8601
  int nranks = 0;
  double seconds = 0;  // how long the run took
  std::vector<HostInfo> hosts;
  std::vector<RankInfo> ranks;
  std::vector<PairTransport> transports;
  std::vector<Link> links;
  std::vector<SweepPoint> sweep;
  std::vector<HostCounters> counters;  // per host, same order as hosts
  std::vector<Finding> findings;
};

std::string toJson(const Result& r);
// Parses a result file's text; false with *error set when it is not one.
bool fromJson(const std::string& text, Result* r, std::string* error);
bool readResultFile(const std::string& path, Result* r, std::string* error);
bool writeFile(const std::string& path, const std::string& text, std::string* error);

// "host1", "host1 -> host2", "host1 (within)".
std::string linkName(const Result& r, const Link& l);
std::string hostName(const Result& r, int host);
// Counter deltas (after - before) that are not zero; a counter that went
// backwards (reset, wrapped) counts from zero.
std::map<std::string, uint64_t> counterDeltas(const HostCounters& c);

// printf-style text of up to three numbers, for report and verdict lines.
std::string fmt(const char* format, double a, double b = 0, double c = 0);

}  // namespace weft::doctor
