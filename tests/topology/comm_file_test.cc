// Communicators (threads as ranks) built from a shipped single-host
// topology file still run every collective correctly, and
// WEFT_TOPO_DUMP_FILE writes a loadable file of what they used.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "collective_check.h"
#include "src/topology/topo_file.h"
#include "thread_ranks.h"

namespace weft::test {
namespace {

std::string dataFile(const char* name) { return std::string(WEFT_TOPO_DATA_DIR) + "/" + name; }

class TopoFileComm : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_TIMEOUT_MS", "60000", 1);
    setenv("WEFT_BUFFSIZE", "16384", 1);
    setenv("WEFT_NCHANNELS", "2", 1);
    dump_ = std::filesystem::temp_directory_path() / ("weft-topo-dump-" + std::to_string(getpid()) + ".json");
    setenv("WEFT_TOPO_DUMP_FILE", dump_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("WEFT_TOPO_FILE");
    unsetenv("WEFT_TOPO_DUMP_FILE");
    unsetenv("WEFT_NCHANNELS");
    std::filesystem::remove(dump_);
  }
  std::filesystem::path dump_;
};

void runEveryCollective(ThreadRanks& ranks) {
  const int n = ranks.size();
  uint64_t seed = 7;
  for (CollKind coll : {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::AllGather, CollKind::Broadcast,
                        CollKind::Reduce, CollKind::AllToAll, CollKind::SendRecv})
    for (size_t count : {size_t(1), size_t(3001), size_t(100003)}) {
      Scenario s;
      s.coll = coll;
      s.count = count;
      s.root = static_cast<int>(seed % n);
      s.seed = seed++;
      Inputs in = makeInputs(s, n);
      std::string err = ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); });
      ASSERT_EQ(err, "") << s.describe();
    }
}

TEST_F(TopoFileComm, SingleHostFilesRunCollectivesAndDump) {
  for (const char* name : {"pcie-2socket-4gpu-2nic.json", "dgx-8gpu-nvswitch-8nic.json", "cpu-only-vm.json"}) {
    SCOPED_TRACE(name);
    setenv("WEFT_TOPO_FILE", dataFile(name).c_str(), 1);
    std::filesystem::remove(dump_);
    {
      ThreadRanks ranks(4);
      ASSERT_EQ(ranks.status(), weftSuccess);
      runEveryCollective(ranks);
    }
    ASSERT_TRUE(std::filesystem::exists(dump_));
    topo::System used = topo::loadFile(dump_.string());
    EXPECT_TRUE(used == topo::loadFile(dataFile(name)));
    std::ifstream in(dump_);
    std::stringstream text;
    text << in.rdbuf();
    // The comment records the rings: 4 ranks, 2 channels, host-contiguous.
    EXPECT_NE(text.str().find("4 ranks on 1 host(s), 2 channel(s)"), std::string::npos) << text.str().substr(0, 400);
    EXPECT_NE(text.str().find("; ring 1: "), std::string::npos);
  }
}

TEST_F(TopoFileComm, BadFileFailsInitOnEveryRank) {
  setenv("WEFT_TOPO_FILE", "/nonexistent/weft-topology.json", 1);
  std::vector<weftComm_t> comms(2, nullptr);
  EXPECT_EQ(weftCommInitAll(comms.data(), 2, nullptr), weftInvalidArgument);
}

}  // namespace
}  // namespace weft::test
