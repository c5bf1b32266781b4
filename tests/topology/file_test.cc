#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "src/topology/detect.h"
#include "src/topology/topo_file.h"
#include "src/util/error.h"
#include "tests/topology/topo_test_util.h"

namespace weft::topo {
namespace {

using namespace testing;

TEST(TopoFile, EveryShippedFileRoundTrips) {
  auto files = shippedFiles();
  ASSERT_GE(files.size(), 4u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    System sys = loadFile(f);
    EXPECT_FALSE(sys.nodes.empty());
    System back = loadString(dumpString(sys));
    EXPECT_TRUE(back == sys);
    // A dump of the reloaded system is byte-identical: dumping is canonical.
    EXPECT_EQ(dumpString(back), dumpString(sys));
  }
}

TEST(TopoFile, DetectedSystemRoundTripsThroughAFile) {
  DetectOptions opts;
  opts.gpus = false;
  System sys = detectLocal(opts);
  std::string path = ::testing::TempDir() + "weft-topo-detected-" + std::to_string(getpid()) + ".json";
  dumpFile(sys, path);
  System back = loadFile(path);
  unlink(path.c_str());
  EXPECT_TRUE(back == sys);
}

TEST(TopoFile, EqualityNoticesEveryKindOfChange) {
  System base = loadFile(dataFile(kPcieBox));
  System bw = base;
  bw.links[0].bw += 1;
  EXPECT_FALSE(bw == base);
  System attr = base;
  attr.nodes[2].cudaDev = 7;
  EXPECT_FALSE(attr == base);
  System fewer = base;
  fewer.links.pop_back();
  EXPECT_FALSE(fewer == base);
  // Order of nodes and links does not matter.
  System shuffled = base;
  std::reverse(shuffled.links.begin(), shuffled.links.end());
  EXPECT_TRUE(shuffled == base);
}

TEST(TopoFile, BandwidthsFollowFromDevicesWhenLeftOut) {
  System dgx = loadFile(dataFile(kDgx));
  int gpu = node(dgx, "dgx0/gpu0");
  int nvs = node(dgx, "dgx0/nvswitch0");
  int sw = node(dgx, "dgx0/sw0");
  for (const Link& l : dgx.links) {
    if ((l.a == gpu && l.b == nvs) || (l.a == nvs && l.b == gpu)) {
      EXPECT_EQ(l.kind, LinkKind::NvLink);
      EXPECT_EQ(l.count, 12);
      EXPECT_DOUBLE_EQ(l.bw, 240.0);  // 12 links x 20 GB/s (sm80)
    }
    if (l.a == sw && l.b == gpu) EXPECT_DOUBLE_EQ(l.bw, 24.0);  // PCIe gen4 x16
  }
  System cluster = loadFile(dataFile(kCluster));
  int nic3 = node(cluster, "box3/nic0");
  int nic0 = node(cluster, "box0/nic0");
  for (const Link& l : cluster.links) {
    if (l.a == nic3) EXPECT_DOUBLE_EQ(l.bw, 5.0);   // 40 Gb/s
    if (l.a == nic0) EXPECT_DOUBLE_EQ(l.bw, 12.5);  // 100 Gb/s
  }
  EXPECT_EQ(cluster.hosts.size(), 4u);
  EXPECT_EQ(cluster.nodesOf(NodeKind::NetSwitch, -1).size(), 2u);
}

TEST(TopoFile, RejectsMistakes) {
  auto bad = [](const std::string& body) {
    return R"({"weft_topology": 1, "hosts": [{"name": "h", "nodes": [)"
           R"({"id": "cpu0", "kind": "cpu"}, {"id": "gpu0", "kind": "gpu", "sm": 90}], "links": [)" +
           body + "]}]}";
  };
  EXPECT_NO_THROW(loadString(bad(R"({"a": "cpu0", "b": "gpu0", "kind": "pci"})")));
  EXPECT_THROW(loadString(bad(R"({"a": "cpu0", "b": "gpu9", "kind": "pci"})")), Error);
  EXPECT_THROW(loadString(bad(R"({"a": "cpu0", "b": "gpu0", "kind": "wire"})")), Error);
  EXPECT_THROW(loadString(bad(R"({"a": "cpu0", "b": "gpu0", "kind": "pci", "bandwidth": 3})")), Error);
  EXPECT_THROW(loadString(bad(R"({"a": "cpu0", "b": "gpu0", "kind": "pci", "bw": -1})")), Error);
  EXPECT_THROW(loadString(bad(R"({"a": "cpu0", "b": "gpu0", "kind": "smp"})")), Error);  // no bw to imply
  EXPECT_THROW(loadString(R"({"hosts": []})"), Error);
  EXPECT_THROW(loadString(R"({"weft_topology": 2, "hosts": []})"), Error);
  EXPECT_THROW(loadString(R"({"weft_topology": 1, "hosts": [{"name": "a"}, {"name": "a"}]})"), Error);
  EXPECT_THROW(loadFile("/nonexistent/weft-topo.json"), Error);
}

// A malformed file is weftInvalidArgument naming the file and where the
// parser stopped; wrong types name the member.
TEST(TopoFile, SyntaxErrorsNameTheFileLineAndColumn) {
  const std::string path = ::testing::TempDir() + "weft-topo-bad-" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << "{\n  \"weft_topology\": 1,\n  \"hosts\" []\n}\n";
  try {
    loadFile(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), weftInvalidArgument);
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("line 3 column"), std::string::npos) << what;
  }
  unlink(path.c_str());
  for (const std::string text : {"[1, 2", "{} x", "\"abc", "", "{\"weft_topology\": 1, \"hosts\": [{\"name\": \"\xff\"}]}"}) {
    SCOPED_TRACE(text);
    try {
      loadString(text);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), weftInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("topology JSON: "), std::string::npos) << e.what();
    }
  }
}

TEST(TopoFile, WrongTypesAndDeepNestingAreRefused) {
  try {
    loadString(R"({"weft_topology": "1", "hosts": []})");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("weft_topology must be a number"), std::string::npos) << e.what();
  }
  EXPECT_THROW(loadString(R"({"weft_topology": 1.5, "hosts": []})"), Error);
  EXPECT_THROW(loadString(R"({"weft_topology": 1, "hosts": {}})"), Error);
  EXPECT_THROW(loadString(R"({"weft_topology": 1, "hosts": [{"name": 7}]})"), Error);
  EXPECT_THROW(loadString("[]"), Error);
  EXPECT_THROW(loadString(R"({"weft_topology": 1e999, "hosts": []})"), Error);  // out of range
  // A hostile file must not exhaust the stack, open or closed.
  EXPECT_THROW(loadString(std::string(100000, '[')), Error);
  EXPECT_THROW(loadString(std::string(100000, '[') + std::string(100000, ']')), Error);
}

TEST(TopoFile, BandwidthsRoundTripExactly) {
  System sys = loadFile(dataFile(kPcieBox));
  ASSERT_GE(sys.links.size(), 3u);
  sys.links[0].bw = 1.0 / 3;
  sys.links[1].bw = 20.6 * 18;
  sys.links[2].bw = 1e-300;
  System back = loadString(dumpString(sys));
  ASSERT_EQ(back.links.size(), sys.links.size());
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(back.links[i].bw, sys.links[i].bw);
}

TEST(TopoFile, EnvironmentLoadsAndDumps) {
  std::string dump = ::testing::TempDir() + "weft-topo-env-" + std::to_string(getpid()) + ".json";
  setenv("WEFT_TOPO_FILE", dataFile(kCluster).c_str(), 1);
  setenv("WEFT_TOPO_DUMP_FILE", dump.c_str(), 1);
  System sys = systemFromEnv();
  unsetenv("WEFT_TOPO_FILE");
  unsetenv("WEFT_TOPO_DUMP_FILE");
  EXPECT_TRUE(sys == loadFile(dataFile(kCluster)));
  EXPECT_TRUE(loadFile(dump) == sys);
  unlink(dump.c_str());
}

}  // namespace
}  // namespace weft::topo

namespace weft::topo {
namespace {

// Hosts detected separately join into one system; shared switches merge by id.
TEST(TopoFile, MergeBuildsAClusterFromHosts) {
  System cluster = loadFile(testing::dataFile(testing::kCluster));
  System rebuilt;
  for (size_t h = 0; h < cluster.hosts.size(); ++h) {
    System one;
    one.addHost(cluster.hosts[h]);
    std::vector<int> map(cluster.nodes.size(), -1);
    for (size_t i = 0; i < cluster.nodes.size(); ++i) {
      const Node& n = cluster.nodes[i];
      if (n.host != static_cast<int>(h) && n.host != -1) continue;
      Node copy = n;
      copy.host = n.host < 0 ? -1 : 0;
      map[i] = one.addNode(copy);
    }
    for (const Link& l : cluster.links) {
      if (map[l.a] < 0 || map[l.b] < 0) continue;
      if (cluster.nodes[l.a].host < 0 && cluster.nodes[l.b].host < 0 && h > 0) continue;  // uplink once
      Link copy = l;
      copy.a = map[l.a];
      copy.b = map[l.b];
      one.links.push_back(copy);
    }
    EXPECT_EQ(rebuilt.merge(one), static_cast<int>(h));
  }
  EXPECT_EQ(rebuilt.nodesOf(NodeKind::NetSwitch, -1).size(), 2u);
  EXPECT_TRUE(rebuilt == cluster);
}

}  // namespace
}  // namespace weft::topo
