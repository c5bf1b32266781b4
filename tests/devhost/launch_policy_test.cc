#include "src/exec/cuda/launch_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace weft::cuda {
namespace {

TEST(CaptureRefusal, OutsideCaptureEverythingGoes) {
  EXPECT_EQ(captureRefusal(CaptureState::None, {}), "");
  LaunchNeeds nothingReady{false, false, false, false};
  EXPECT_EQ(captureRefusal(CaptureState::None, nothingReady), "") << "outside capture a call may set up";
}

TEST(CaptureRefusal, InsideCaptureReadyGoes) { EXPECT_EQ(captureRefusal(CaptureState::Active, {}), ""); }

TEST(CaptureRefusal, InsideCaptureNamesWhatIsMissingAndTheWarmUp) {
  LaunchNeeds n;
  n.planUploaded = false;
  n.scratchFits = false;
  const std::string why = captureRefusal(CaptureState::Active, n);
  EXPECT_NE(why.find("plan's device image"), std::string::npos) << why;
  EXPECT_NE(why.find("scratch"), std::string::npos) << why;
  EXPECT_EQ(why.find("connections"), std::string::npos) << why;
  EXPECT_NE(why.find("once outside capture"), std::string::npos) << why;
  n = {};
  n.fifosMapped = false;
  EXPECT_NE(captureRefusal(CaptureState::Active, n).find("connections"), std::string::npos);
  n = {};
  n.stateReady = false;
  EXPECT_NE(captureRefusal(CaptureState::Active, n).find("device state"), std::string::npos);
}

TEST(CaptureRefusal, InvalidatedCaptureIsRefused) {
  const std::string why = captureRefusal(CaptureState::Invalidated, {});
  EXPECT_NE(why.find("invalidated"), std::string::npos) << why;
}

TEST(LegacyStream, RefusedOnlyWhenRanksShareTheGpu) {
  EXPECT_FALSE(legacyStreamCannotProgress(true, 1));
  EXPECT_TRUE(legacyStreamCannotProgress(true, 2));
  EXPECT_TRUE(legacyStreamCannotProgress(true, 4));
  EXPECT_FALSE(legacyStreamCannotProgress(false, 4));
}

using Queue = ReleaseQueue<void*>;

void* addr(uintptr_t v) { return reinterpret_cast<void*>(v); }

TEST(DeviceBlocks, FreedOnlyWhenTheLastOwnerLetsGo) {
  auto q = std::make_shared<Queue>();
  BlockRef plan = std::make_shared<DeviceBlock>(addr(0x1000), 64, q);
  BlockRef graphCopy = plan;  // a captured graph holds it too
  plan.reset();               // the plan cache evicted the plan
  EXPECT_EQ(q->size(), 0u) << "a graph still uses it";
  graphCopy.reset();          // the graph was destroyed
  ASSERT_EQ(q->size(), 1u);
  std::vector<void*> freed;
  EXPECT_EQ(q->drain([&](void* m) { freed.push_back(m); }), 1u);
  EXPECT_EQ(freed, std::vector<void*>{addr(0x1000)});
  EXPECT_EQ(q->size(), 0u);
  EXPECT_EQ(q->drain([&](void*) { ADD_FAILURE() << "drained twice"; }), 0u);
}

TEST(DeviceBlocks, ScratchReplacedKeepsTheOldForItsGraph) {
  auto q = std::make_shared<Queue>();
  BlockRef scratch = std::make_shared<DeviceBlock>(addr(0x2000), 256, q);
  std::vector<BlockRef> heldByGraph{scratch};
  scratch = std::make_shared<DeviceBlock>(addr(0x3000), 1024, q);  // grown
  EXPECT_EQ(q->size(), 0u);
  heldByGraph.clear();
  std::vector<void*> freed;
  q->drain([&](void* m) { freed.push_back(m); });
  EXPECT_EQ(freed, std::vector<void*>{addr(0x2000)});
}

TEST(DeviceBlocks, QueueOutlivesItsOwnerAndTakesPushesFromOtherThreads) {
  std::vector<BlockRef> blocks;
  std::weak_ptr<Queue> weak;
  {
    auto q = std::make_shared<Queue>();
    weak = q;
    for (uintptr_t i = 1; i <= 64; i++) blocks.push_back(std::make_shared<DeviceBlock>(addr(i * 16), 16, q));
  }
  EXPECT_FALSE(weak.expired()) << "blocks keep the queue alive (graph destructors run after the communicator)";
  auto q = weak.lock();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&blocks, t] {
      for (size_t i = t; i < blocks.size(); i += 4) blocks[i].reset();
    });
  for (auto& th : threads) th.join();
  std::vector<void*> freed;
  q->drain([&](void* m) { freed.push_back(m); });
  ASSERT_EQ(freed.size(), 64u);
  std::sort(freed.begin(), freed.end());
  EXPECT_EQ(std::unique(freed.begin(), freed.end()), freed.end()) << "each block freed once";
}

TEST(DeviceBlocks, NullBlockIsNotQueued) {
  auto q = std::make_shared<Queue>();
  { DeviceBlock b(nullptr, 0, q); }
  EXPECT_EQ(q->size(), 0u);
}

}  // namespace
}  // namespace weft::cuda
