// weft-topo: prints the topology weft sees as a tree (per host: NUMA nodes
// with their cores, PCI switches, GPUs, NICs), the NIC each GPU would use and
// why, and the ring weft would build. --dump writes the topology file,
// --load reads one instead of detecting.
#include <cstdio>
#include <cstring>
#include <string>

#include "src/topology/detect.h"
#include "src/topology/paths.h"
#include "src/topology/rings.h"
#include "src/topology/topo_file.h"
#include "src/util/error.h"

namespace {

using namespace weft::topo;

void usage() {
  printf(
      "usage: weft-topo [--load FILE] [--dump FILE] [--channels N] [--no-gpus]\n"
      "  Prints the local topology (or FILE's) as a tree, each GPU's NIC and the\n"
      "  rings weft would build. --dump FILE writes it as JSON (docs/topology.md).\n");
}

std::string linkText(const Link& l) {
  char buf[96];
  if (l.kind == LinkKind::NvLink)
    snprintf(buf, sizeof buf, "NVLink x%d, %g GB/s", l.count, l.bw);
  else if (l.kind == LinkKind::Pci && l.pciGen)
    snprintf(buf, sizeof buf, "PCIe gen%d x%d, %g GB/s", l.pciGen, l.pciWidth, l.bw);
  else
    snprintf(buf, sizeof buf, "%s, %g GB/s", toString(l.kind), l.bw);
  return buf;
}

std::string nodeText(const Node& n) {
  std::string s = n.id;
  char buf[256];
  switch (n.kind) {
    case NodeKind::Cpu:
      snprintf(buf, sizeof buf, "  NUMA %d, package %d, %d cores", n.numa, n.package, n.cores);
      s += buf;
      break;
    case NodeKind::Gpu:
      snprintf(buf, sizeof buf, "  GPU %s sm%d cuda%d", n.busId.c_str(), n.sm, n.cudaDev);
      s += buf;
      break;
    case NodeKind::Nic: {
      char speed[32] = "speed unknown";
      if (n.speedGbps > 0) snprintf(speed, sizeof speed, "%g Gb/s", n.speedGbps);
      std::string verbs = n.ibDevice.empty() ? "" : " " + n.ibDevice + " port " + std::to_string(n.port);
      snprintf(buf, sizeof buf, "  NIC %s%s, %s, %s, %s", n.netdev.empty() ? "-" : n.netdev.c_str(), verbs.c_str(),
               n.linkLayer.c_str(), speed,
               n.up ? "up" : "down");
      s += buf;
      if (!n.busId.empty()) s += ", PCI " + n.busId;
      for (const auto& a : n.addresses) s += ", " + a;
      if (!n.gids.empty()) s += ", " + std::to_string(n.gids.size()) + " GIDs";
      break;
    }
    case NodeKind::PciSwitch: s += "  PCI switch " + n.busId; break;
    case NodeKind::NvSwitch: s += "  NVSwitch"; break;
    case NodeKind::NetSwitch: s += "  network switch"; break;
  }
  if (!n.name.empty()) s += "  [" + n.name + "]";
  return s;
}

// Prints the nodes below `node` (PCI tree edges, away from the CPU).
void printChildren(const System& sys, int node, int parent, int depth, std::vector<bool>& seen) {
  for (int li : sys.linksOf(node)) {
    const Link& l = sys.links[li];
    int child = l.a == node ? l.b : l.a;
    if (child == parent || seen[child] || sys.nodes[child].host != sys.nodes[node].host) continue;
    if (l.kind == LinkKind::Smp || l.kind == LinkKind::NvLink) continue;
    seen[child] = true;
    printf("%*s+- %s  (%s)\n", depth * 3, "", nodeText(sys.nodes[child]).c_str(), linkText(l).c_str());
    printChildren(sys, child, node, depth + 1, seen);
  }
}

void printHost(const System& sys, int host) {
  printf("host %s\n", sys.hosts[host].c_str());
  std::vector<bool> seen(sys.nodes.size(), false);
  for (int cpu : sys.nodesOf(NodeKind::Cpu, host)) {
    seen[cpu] = true;
    printf("  %s\n", nodeText(sys.nodes[cpu]).c_str());
    printChildren(sys, cpu, -1, 2, seen);
  }
  for (size_t i = 0; i < sys.nodes.size(); ++i)
    if (!seen[i] && sys.nodes[i].host == host) {
      seen[i] = true;
      printf("  %s\n", nodeText(sys.nodes[i]).c_str());
      printChildren(sys, static_cast<int>(i), -1, 2, seen);
    }
  for (const Link& l : sys.links)
    if (l.kind == LinkKind::Smp && sys.nodes[l.a].host == host)
      printf("  %s <-> %s  (%s)\n", sys.nodes[l.a].id.c_str(), sys.nodes[l.b].id.c_str(), linkText(l).c_str());
  for (const Link& l : sys.links)
    if (l.kind == LinkKind::NvLink && sys.nodes[l.a].host == host)
      printf("  %s <-> %s  (%s)\n", sys.nodes[l.a].id.c_str(), sys.nodes[l.b].id.c_str(), linkText(l).c_str());

  auto gpus = sys.nodesOf(NodeKind::Gpu, host);
  auto devices = gpus.empty() ? sys.nodesOf(NodeKind::Cpu, host) : gpus;
  auto choices = chooseNics(sys, devices);
  printf("  NIC per %s:\n", gpus.empty() ? "NUMA node (no GPU)" : "GPU");
  for (size_t i = 0; i < devices.size(); ++i)
    printf("    %s -> %s\n", sys.nodes[devices[i]].id.c_str(),
           choices[i].nic < 0 ? "none" : (sys.nodes[choices[i].nic].id + ": " + choices[i].reason).c_str());
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      Path p = findPath(sys, gpus[i], gpus[j]);
      printf("    %s-%s: %s, %g GB/s\n", sys.nodes[gpus[i]].id.c_str(), sys.nodes[gpus[j]].id.c_str(),
             toString(p.type), p.bw);
    }
}

void printRings(const System& sys, int channels) {
  bool gpus = false;
  for (const Node& n : sys.nodes) gpus |= n.kind == NodeKind::Gpu;
  auto places = defaultPlaces(sys, gpus);
  if (places.empty()) return;
  RingSet rings = buildRings(sys, places, channels);
  printf("rings over %zu ranks (one per %s), %d channel(s), %g GB/s in total:\n", places.size(),
         gpus ? "GPU" : "NUMA node", channels, rings.totalBw());
  for (size_t c = 0; c < rings.channels.size(); ++c) {
    const RingChannel& ch = rings.channels[c];
    printf("  channel %zu: %g GB/s, intra %s, nic %s:", c, ch.bw, toString(ch.intraType), toString(ch.nicType));
    for (int r : ch.order) printf(" %s/%s", sys.hosts[places[r].host].c_str(), sys.nodes[places[r].device].id.c_str());
    for (size_t h = 0; h < ch.nics.size(); ++h)
      if (ch.nics[h] >= 0) printf("%s %s", h ? "," : "  via", sys.key(ch.nics[h]).c_str());
    printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string load, dump;
  int channels = 2;
  bool gpus = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--load" || a == "--dump" || a == "--channels") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--load") load = v;
      else if (a == "--dump") dump = v;
      else channels = atoi(v.c_str());
    } else if (a == "--no-gpus") {
      gpus = false;
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }
  if (channels < 1) {
    fprintf(stderr, "weft-topo: --channels must be >= 1\n");
    return 2;
  }
  try {
    System sys;
    if (!load.empty()) {
      sys = loadFile(load);
    } else {
      DetectOptions opts;
      opts.gpus = gpus;
      sys = detectLocal(opts);
    }
    for (size_t h = 0; h < sys.hosts.size(); ++h) printHost(sys, static_cast<int>(h));
    for (int sw : sys.nodesOf(NodeKind::NetSwitch, -1)) {
      printf("network switch %s\n", sys.nodes[sw].id.c_str());
      for (int li : sys.linksOf(sw)) {
        const Link& l = sys.links[li];
        printf("  <-> %s  (%s)\n", sys.key(l.a == sw ? l.b : l.a).c_str(), linkText(l).c_str());
      }
    }
    printRings(sys, channels);
    if (!dump.empty()) {
      dumpFile(sys, dump);
      printf("written to %s\n", dump.c_str());
    }
  } catch (const weft::Error& e) {
    fprintf(stderr, "weft-topo: %s\n", e.what());
    return 1;
  }
  return 0;
}
