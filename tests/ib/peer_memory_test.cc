// Finding the peer-memory kernel module in a (fake) /sys tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "transports/ib/peer_memory.h"

namespace fs = std::filesystem;

namespace {

struct FakeSys {
  fs::path root;
  FakeSys() {
    static int made = 0;
    root = fs::temp_directory_path() / ("weft-sys-" + std::to_string(::getpid()) + "-" + std::to_string(made++));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~FakeSys() { fs::remove_all(root); }
  void add(const std::string& rel, bool file) {
    fs::path p = root / rel;
    if (file) {
      fs::create_directories(p.parent_path());
      std::ofstream(p) << "1.0\n";
    } else {
      fs::create_directories(p);
    }
  }
};

}  // namespace

TEST(PeerMemory, NoneLoaded) {
  FakeSys sys;
  sys.add("module/nvidia", false);
  sys.add("module/mlx5_ib", false);
  EXPECT_EQ(weft::ib::findPeerMemoryModule(sys.root.string()), "");
}

TEST(PeerMemory, NvidiaPeermemModule) {
  FakeSys sys;
  sys.add("module/nvidia_peermem", false);
  EXPECT_EQ(weft::ib::findPeerMemoryModule(sys.root.string()), "nvidia-peermem");
}

TEST(PeerMemory, MemoryPeersClientOfMlnxOfed) {
  FakeSys sys;
  sys.add("kernel/mm/memory_peers/nv_mem/version", true);
  EXPECT_EQ(weft::ib::findPeerMemoryModule(sys.root.string()), "nv_peer_mem");
  FakeSys other;
  other.add("kernel/mm/memory_peers/nvidia-peermem/version", true);
  EXPECT_EQ(weft::ib::findPeerMemoryModule(other.root.string()), "nvidia-peermem");
}

TEST(PeerMemory, LegacyModule) {
  FakeSys sys;
  sys.add("module/nv_peer_mem", false);
  EXPECT_EQ(weft::ib::findPeerMemoryModule(sys.root.string()), "nv_peer_mem");
}
