// The GPUDirect RDMA decision: every input that changes the outcome, the
// reason each outcome prints, and the settings parser.
#include <gtest/gtest.h>

#include <cstdlib>

#include "src/util/error.h"
#include "transports/ib/gdr_decision.h"

using namespace weft::ib;

namespace {

// A machine where everything works: H100-class GPU behind the same PCIe
// switch as the HCA, dma-buf everywhere, nvidia-peermem loaded.
GdrFacts everything() {
  GdrFacts f;
  f.cudaDev = 0;
  f.gpuDmabuf = true;
  f.gpuRdma = true;
  f.nic = "mlx5_0:1";
  f.verbsDmabuf = true;
  f.hcaDmabuf = true;
  f.peerMemModule = "nvidia-peermem";
  f.distance = PciDistance::Pix;
  return f;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(GdrDecision, DmaBufWhenEverythingSupportsIt) {
  GdrDecision d = decideGdr(GdrSettings{}, everything());
  EXPECT_EQ(d.mode, GdrMode::DmaBuf);
  EXPECT_EQ(d.reason, "GPU 0 to mlx5_0:1 PIX");
  EXPECT_STREQ(gdrModeName(d.mode), "dma-buf");
}

TEST(GdrDecision, DisabledWinsOverEverything) {
  GdrSettings s;
  s.disabled = true;
  GdrDecision d = decideGdr(s, everything());
  EXPECT_EQ(d.mode, GdrMode::Staged);
  EXPECT_EQ(d.reason, "GPU Direct RDMA disabled by WEFT_GDR_DISABLE");
}

TEST(GdrDecision, NoGpuOrUnanswerableGpu) {
  GdrFacts f = everything();
  f.cudaDev = -1;
  EXPECT_EQ(decideGdr({}, f).reason, "no CUDA device on this rank");
  f = everything();
  f.gpuProblem = "CUDA driver entry points not available: cuMemGetHandleForAddressRange";
  GdrDecision d = decideGdr({}, f);
  EXPECT_EQ(d.mode, GdrMode::Staged);
  EXPECT_EQ(d.reason, "cannot query GPU 0: CUDA driver entry points not available: cuMemGetHandleForAddressRange");
}

TEST(GdrDecision, DistanceAgainstLevel) {
  GdrFacts f = everything();
  f.distance = PciDistance::Pxb;
  EXPECT_EQ(decideGdr({}, f).mode, GdrMode::DmaBuf) << "PXB is within the default level";
  f.distance = PciDistance::Phb;
  GdrDecision d = decideGdr({}, f);
  EXPECT_EQ(d.mode, GdrMode::Staged);
  EXPECT_EQ(d.reason, "GPU 0 and mlx5_0:1 are PHB apart, farther than WEFT_NET_GDR_LEVEL=PXB");
  f.distance = PciDistance::Sys;
  EXPECT_TRUE(has(decideGdr({}, f).reason, "are SYS apart")) << decideGdr({}, f).reason;

  GdrSettings s;
  s.levelSet = true;
  s.maxDistance = PciDistance::Sys;
  d = decideGdr(s, f);
  EXPECT_EQ(d.mode, GdrMode::DmaBuf);
  EXPECT_EQ(d.reason, "GPU 0 to mlx5_0:1 SYS");
  s.maxDistance = PciDistance::Loc;
  f.distance = PciDistance::Pix;
  EXPECT_EQ(decideGdr(s, f).reason, "GPU 0 and mlx5_0:1 are PIX apart, farther than WEFT_NET_GDR_LEVEL=LOC");
  f.distance = PciDistance::Loc;
  EXPECT_EQ(decideGdr(s, f).mode, GdrMode::DmaBuf);
}

TEST(GdrDecision, UnknownDistanceNeedsTheLevelSet) {
  GdrFacts f = everything();
  f.distance.reset();
  GdrDecision d = decideGdr({}, f);
  EXPECT_EQ(d.mode, GdrMode::Staged);
  EXPECT_TRUE(has(d.reason, "topology does not tell how far GPU 0 is from mlx5_0:1")) << d.reason;
  EXPECT_TRUE(has(d.reason, "WEFT_NET_GDR_LEVEL")) << d.reason;
  GdrSettings s;
  s.levelSet = true;
  d = decideGdr(s, f);
  EXPECT_EQ(d.mode, GdrMode::DmaBuf);
  EXPECT_EQ(d.reason, "GPU 0 to mlx5_0:1 distance unknown");
}

TEST(GdrDecision, PeerMemoryWhenDmaBufIsMissingAnyPiece) {
  struct Case {
    const char* name;
    void (*knock)(GdrSettings&, GdrFacts&);
    const char* dmabufWhy;
  };
  const Case cases[] = {
      {"setting", [](GdrSettings& s, GdrFacts&) { s.dmabufEnabled = false; }, "disabled by WEFT_DMABUF_ENABLE=0"},
      {"gpu", [](GdrSettings&, GdrFacts& f) { f.gpuDmabuf = false; }, "GPU 0 does not support dma-buf"},
      {"verbs", [](GdrSettings&, GdrFacts& f) { f.verbsDmabuf = false; }, "libibverbs lacks ibv_reg_dmabuf_mr"},
      {"hca", [](GdrSettings&, GdrFacts& f) { f.hcaDmabuf = false; },
       "the kernel driver of mlx5_0:1 refuses dma-buf registrations"},
  };
  for (const Case& c : cases) {
    GdrSettings s;
    GdrFacts f = everything();
    c.knock(s, f);
    GdrDecision d = decideGdr(s, f);
    EXPECT_EQ(d.mode, GdrMode::PeerMem) << c.name;
    EXPECT_EQ(d.reason, "nvidia-peermem, GPU 0 to mlx5_0:1 PIX") << c.name;

    // Without the module as well: staged, naming both missing pieces.
    f.peerMemModule.clear();
    d = decideGdr(s, f);
    EXPECT_EQ(d.mode, GdrMode::Staged) << c.name;
    EXPECT_TRUE(has(d.reason, std::string("no dma-buf (") + c.dmabufWhy)) << c.name << ": " << d.reason;
    EXPECT_TRUE(has(d.reason, "no peer memory (no nvidia-peermem (or nv_peer_mem) kernel module loaded)"))
        << c.name << ": " << d.reason;

    // Module loaded but the GPU does not do GPUDirect RDMA.
    f.peerMemModule = "nv_peer_mem";
    f.gpuRdma = false;
    d = decideGdr(s, f);
    EXPECT_EQ(d.mode, GdrMode::Staged) << c.name;
    EXPECT_TRUE(has(d.reason, "no peer memory (GPU 0 does not support GPU Direct RDMA)")) << d.reason;
  }
}

TEST(GdrDecision, DmaBufDoesNotNeedThePeerMemoryModule) {
  GdrFacts f = everything();
  f.peerMemModule.clear();
  f.gpuRdma = false;
  EXPECT_EQ(decideGdr({}, f).mode, GdrMode::DmaBuf);
}

// Every combination of the boolean facts and settings: the outcome follows
// the documented rules, and a staged outcome always says why.
TEST(GdrDecision, ExhaustiveRules) {
  for (int bits = 0; bits < (1 << 8); ++bits) {
    auto bit = [&](int i) { return (bits >> i & 1) != 0; };
    GdrSettings s;
    s.disabled = bit(0);
    s.dmabufEnabled = bit(1);
    GdrFacts f = everything();
    f.gpuDmabuf = bit(2);
    f.gpuRdma = bit(3);
    f.verbsDmabuf = bit(4);
    f.hcaDmabuf = bit(5);
    f.peerMemModule = bit(6) ? "nvidia-peermem" : "";
    f.distance = bit(7) ? PciDistance::Pix : PciDistance::Sys;
    const bool allowed = !s.disabled && bit(7);
    const bool dmabuf = s.dmabufEnabled && f.gpuDmabuf && f.verbsDmabuf && f.hcaDmabuf;
    const bool peer = !f.peerMemModule.empty() && f.gpuRdma;
    GdrMode want = !allowed ? GdrMode::Staged : dmabuf ? GdrMode::DmaBuf : peer ? GdrMode::PeerMem : GdrMode::Staged;
    GdrDecision d = decideGdr(s, f);
    EXPECT_EQ(d.mode, want) << "bits " << bits;
    EXPECT_FALSE(d.reason.empty()) << "bits " << bits;
  }
}

TEST(GdrDecision, LevelNames) {
  EXPECT_EQ(parseGdrLevel("LOC"), PciDistance::Loc);
  EXPECT_EQ(parseGdrLevel("pix"), PciDistance::Pix);
  EXPECT_EQ(parseGdrLevel("Pxb"), PciDistance::Pxb);
  EXPECT_EQ(parseGdrLevel("PHB"), PciDistance::Phb);
  EXPECT_EQ(parseGdrLevel("sys"), PciDistance::Sys);
  for (const char* bad : {"", "NVL", "3", "PXB "}) {
    try {
      parseGdrLevel(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const weft::Error& e) {
      EXPECT_EQ(e.code(), weftInvalidArgument);
      EXPECT_TRUE(has(e.what(), "WEFT_NET_GDR_LEVEL")) << e.what();
    }
  }
  EXPECT_STREQ(pciDistanceName(PciDistance::Phb), "PHB");
}

TEST(GdrConfig, ReadsEveryVariableAndRejectsGarbage) {
  GdrSettings s = readGdrSettings();
  EXPECT_FALSE(s.disabled);
  EXPECT_TRUE(s.dmabufEnabled);
  EXPECT_FALSE(s.flushDisabled);
  EXPECT_FALSE(s.levelSet);
  EXPECT_EQ(s.maxDistance, PciDistance::Pxb);
  setenv("WEFT_GDR_DISABLE", "1", 1);
  setenv("WEFT_DMABUF_ENABLE", "0", 1);
  setenv("WEFT_GDR_FLUSH_DISABLE", "yes", 1);
  setenv("WEFT_NET_GDR_LEVEL", "SYS", 1);
  s = readGdrSettings();
  EXPECT_TRUE(s.disabled);
  EXPECT_FALSE(s.dmabufEnabled);
  EXPECT_TRUE(s.flushDisabled);
  EXPECT_TRUE(s.levelSet);
  EXPECT_EQ(s.maxDistance, PciDistance::Sys);
  setenv("WEFT_NET_GDR_LEVEL", "far", 1);
  EXPECT_THROW(readGdrSettings(), weft::Error);
  setenv("WEFT_NET_GDR_LEVEL", "PIX", 1);
  setenv("WEFT_GDR_DISABLE", "maybe", 1);
  EXPECT_THROW(readGdrSettings(), weft::Error);
  for (const char* v : {"WEFT_GDR_DISABLE", "WEFT_DMABUF_ENABLE", "WEFT_GDR_FLUSH_DISABLE", "WEFT_NET_GDR_LEVEL"})
    unsetenv(v);
}
