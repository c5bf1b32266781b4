// Shared helpers for the topology tests: the shipped files and lookups.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "src/topology/graph.h"
#include "src/topology/topo_file.h"

namespace weft::topo::testing {

inline std::string dataFile(const std::string& name) { return std::string(WEFT_TOPO_DATA_DIR) + "/" + name; }

inline std::vector<std::string> shippedFiles() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(WEFT_TOPO_DATA_DIR))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Node index by "host/id"; fails the test when absent.
inline int node(const System& sys, const std::string& key) {
  for (size_t i = 0; i < sys.nodes.size(); ++i)
    if (sys.key(static_cast<int>(i)) == key) return static_cast<int>(i);
  ADD_FAILURE() << "no node " << key;
  return -1;
}

inline const char* kDgx = "dgx-8gpu-nvswitch-8nic.json";
inline const char* kPcieBox = "pcie-2socket-4gpu-2nic.json";
inline const char* kCluster = "cluster-4x-pcie-2socket-100g-40g.json";
inline const char* kCpuOnly = "cpu-only-vm.json";

}  // namespace weft::topo::testing
