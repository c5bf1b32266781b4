// The topology graph: one type for a single host and for a cluster of hosts
// behind network switches. Nodes are devices (NUMA/CPU, GPU, NIC, PCI
// switch, NVSwitch, network switch); links carry a bandwidth in GB/s per
// direction and a latency class, so a cost model can price any path.
// Detection (detect.h) and topology files (topo_file.h) both produce it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace weft::topo {

enum class NodeKind { Cpu, Gpu, Nic, PciSwitch, NvSwitch, NetSwitch };

// Links are full duplex: bw applies to each direction independently.
enum class LinkKind {
  NvLink,  // GPU-GPU or GPU-NVSwitch; bw = count x per-link bandwidth
  Pci,     // PCIe; bw from generation and width
  Smp,     // between NUMA nodes/sockets (UPI, Infinity Fabric, ...)
  Net,     // NIC to network switch, or switch to switch
  Loc,     // in-host attachment without a bus (loopback, virtual NICs)
};

// Nominal per-hop latency classes, cheapest first; latencyUs() gives the
// value the cost model uses for each.
enum class LatencyClass { Local, NvLink, Pcie, Smp, Network };

struct Gid {
  int index = 0;
  std::string gid;   // "fe80:0000:...:0001"
  std::string type;  // "IB/RoCE v1", "RoCE v2" or ""
  bool operator==(const Gid&) const = default;
};

struct Node {
  NodeKind kind = NodeKind::Cpu;
  std::string id;    // unique within its host (or among network switches)
  int host = 0;      // index into System::hosts; -1 for network switches
  std::string name;  // human label: CPU model, GPU model, netdev, ...
  int numa = -1;     // NUMA node the device is local to (CPU: its own id)

  // Cpu
  int package = -1;
  int cores = 0;
  // Gpu, Nic, PciSwitch
  std::string busId;  // "0000:18:00.0"
  // Gpu
  int cudaDev = -1;
  int sm = 0;  // compute capability x10 (90 = Hopper)
  std::vector<std::string> noP2p;  // ids of GPUs of this host it cannot reach by P2P
  // Nic
  std::string netdev;     // OS interface name, may be empty for an HCA without one
  std::string ibDevice;   // verbs device ("mlx5_0"), empty for plain Ethernet
  int port = 0;           // verbs port number
  std::string linkLayer;  // "Ethernet", "InfiniBand", "Loopback", "Other"
  double speedGbps = 0;   // link speed, Gb/s (0: unknown)
  bool up = false;
  std::vector<std::string> addresses;  // "inet 10.0.0.1", "inet6 fe80::1"
  std::vector<Gid> gids;

  bool operator==(const Node&) const = default;
};

struct Link {
  int a = -1, b = -1;  // node indices
  LinkKind kind = LinkKind::Pci;
  double bw = 0;  // GB/s, each direction
  LatencyClass latency = LatencyClass::Pcie;
  int count = 1;     // NVLink: number of links bundled; else 1
  int pciGen = 0;    // Pci: generation and lane width when known
  int pciWidth = 0;
};

// Nominal bandwidths (GB/s, one direction) used when the hardware does not
// report one. PCIe is ~75% of the raw lane rate, as seen in practice.
inline constexpr double kPcieGen3x16Bw = 12.0;
inline constexpr double kSmpBwSamePackage = 40.0;
inline constexpr double kSmpBwCrossPackage = 20.0;
// Bandwidth attributed to a path that stays on one device (two ranks on the
// same GPU or NUMA node): memory speed, never the bottleneck.
inline constexpr double kLocalBw = 5000.0;

double pcieBw(int gen, int width);           // 0.75 GB/s x 2^(gen-3) per lane
double nvlinkBwPerLink(int sm);              // by GPU generation
inline double netBw(double speedGbps) { return speedGbps / 8.0; }
double latencyUs(LatencyClass c);
LatencyClass defaultLatency(LinkKind k);

const char* toString(NodeKind k);
const char* toString(LinkKind k);
const char* toString(LatencyClass c);
// Parsers throw weftInvalidArgument on an unknown name.
NodeKind nodeKindFromString(std::string_view s);
LinkKind linkKindFromString(std::string_view s);
LatencyClass latencyFromString(std::string_view s);

class System {
 public:
  std::vector<std::string> hosts;
  std::vector<Node> nodes;
  std::vector<Link> links;

  int addHost(std::string name);
  // Adds a node; its (host, id) must be new.
  int addNode(Node n);
  // Adds a link with the kind's default latency class.
  int addLink(int a, int b, LinkKind kind, double bw, int count = 1);

  // Node index by host and id, or -1.
  int find(int host, std::string_view id) const;
  // "host/id" (network switches: "net/id"): unique across the system.
  std::string key(int node) const;
  // Indices of the links touching a node.
  std::vector<int> linksOf(int node) const;
  // Nodes of one kind on one host (host -1: network switches), in index order.
  std::vector<int> nodesOf(NodeKind kind, int host) const;

  // Appends all hosts, nodes and links of `other` (its network switches are
  // merged by id); returns the index of other's first host here.
  int merge(const System& other);

  // Same hosts, and the same nodes and links regardless of their order.
  friend bool operator==(const System& x, const System& y);
};

}  // namespace weft::topo
