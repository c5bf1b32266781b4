// Loading libibverbs: the dma-buf entry point is optional (an rdma-core
// older than v34 lacks it: GPUDirect then cannot use dma-buf, nothing
// crashes), the others are required. Uses stand-in libraries (fake_verbs.c).
#include <gtest/gtest.h>

#include "transports/ib/gdr_decision.h"
#include "transports/ib/ib_device.h"
#include "transports/ib/verbs_loader.h"

using namespace weft::ib;

TEST(VerbsLoader, CurrentLibraryHasDmaBuf) {
  VerbsLoad l = loadVerbsFrom(FAKE_VERBS_DMABUF);
  ASSERT_TRUE(l.ok) << l.why;
  EXPECT_NE(l.verbs.regDmabufMr, nullptr);
  EXPECT_NE(l.verbs.regMr, nullptr);
  int n = -1;
  EXPECT_EQ(l.verbs.getDeviceList(&n), nullptr);
  EXPECT_EQ(n, 0);
}

TEST(VerbsLoader, OldLibraryLoadsWithoutDmaBuf) {
  VerbsLoad l = loadVerbsFrom(FAKE_VERBS_OLD);
  ASSERT_TRUE(l.ok) << l.why;
  EXPECT_EQ(l.verbs.regDmabufMr, nullptr);
  EXPECT_NE(l.verbs.regMr, nullptr);

  // What the GPUDirect decision makes of it, on a GPU that would do dma-buf.
  GdrFacts f = probeGdr(&l.verbs, "mlx5_0", 1, -1, PciDistance::Pix);
  EXPECT_FALSE(f.verbsDmabuf);
  EXPECT_FALSE(f.hcaDmabuf) << "no entry point, no probe of the HCA";
  f.cudaDev = 0;
  f.gpuProblem.clear();
  f.gpuDmabuf = true;
  f.gpuRdma = true;
  f.peerMemModule.clear();
  GdrDecision d = decideGdr(GdrSettings{}, f);
  EXPECT_EQ(d.mode, GdrMode::Staged);
  EXPECT_NE(d.reason.find("libibverbs lacks ibv_reg_dmabuf_mr"), std::string::npos) << d.reason;
  f.peerMemModule = "nvidia-peermem";
  EXPECT_EQ(decideGdr(GdrSettings{}, f).mode, GdrMode::PeerMem);
}

TEST(VerbsLoader, MissingRequiredSymbolIsNamed) {
  VerbsLoad l = loadVerbsFrom(FAKE_VERBS_BROKEN);
  EXPECT_FALSE(l.ok);
  EXPECT_NE(l.why.find("lacks ibv_modify_qp"), std::string::npos) << l.why;
}

TEST(VerbsLoader, MissingLibraryIsAReasonNotACrash) {
  VerbsLoad l = loadVerbsFrom("libweft-no-such-verbs.so.1");
  EXPECT_FALSE(l.ok);
  EXPECT_FALSE(l.why.empty());
}

TEST(GdrProbe, NoVerbsAtAllMeansNoDmaBuf) {
  GdrFacts f = probeGdr(nullptr, "mlx5_0", 1, -1, std::nullopt);
  EXPECT_FALSE(f.verbsDmabuf);
  EXPECT_EQ(f.nic, "mlx5_0:1");
  EXPECT_EQ(decideGdr(GdrSettings{}, f).reason, "no CUDA device on this rank");
}

namespace fork_fakes {
ibv_fork_status status = IBV_FORK_DISABLED;
int initCalls = 0;
int initResult = 0;
ibv_fork_status isInitialized() { return status; }
int init() {
  ++initCalls;
  return initResult;
}
}  // namespace fork_fakes

// Fork support: asked first, turned on only where it is off and needed,
// and never against RDMAV_FORK_SAFE=0.
TEST(VerbsLoader, ForkSupportDecision) {
  using namespace fork_fakes;
  Verbs v;
  std::string line;
  EXPECT_EQ(prepareFork(v, nullptr, &line), ForkSupport::Unknown);
  v.isForkInitialized = isInitialized;
  v.forkInit = init;
  status = IBV_FORK_UNNEEDED;
  EXPECT_EQ(prepareFork(v, nullptr, &line), ForkSupport::Unneeded);
  status = IBV_FORK_ENABLED;
  EXPECT_EQ(prepareFork(v, "1", &line), ForkSupport::AlreadyOn);
  EXPECT_EQ(initCalls, 0);
  status = IBV_FORK_DISABLED;
  EXPECT_EQ(prepareFork(v, "0", &line), ForkSupport::Off);
  EXPECT_EQ(initCalls, 0);
  EXPECT_EQ(prepareFork(v, nullptr, &line), ForkSupport::Enabled);
  EXPECT_EQ(initCalls, 1);
  initResult = 12;  // ENOMEM
  EXPECT_EQ(prepareFork(v, nullptr, &line), ForkSupport::Failed);
  EXPECT_NE(line.find("ibv_fork_init failed"), std::string::npos) << line;
}

TEST(VerbsLoader, OptionalAsyncAndForkEntryPointsMayBeAbsent) {
  VerbsLoad l = loadVerbsFrom(FAKE_VERBS_DMABUF);
  ASSERT_TRUE(l.ok) << l.why;
  EXPECT_EQ(l.verbs.getAsyncEvent, nullptr);
  EXPECT_EQ(l.verbs.forkInit, nullptr);
}
