#include "src/exec/cuda/launch_policy.h"
#include "src/exec/cuda/image_arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
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
  EXPECT_NE(captureRefusal(CaptureState::Active, n).find("weftCommWarmup"), std::string::npos);
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

namespace weft::cuda {
namespace {

TEST(ImageArena, RangesAreAlignedAndDisjointUntilFull) {
  RangeArena a(4096);
  ASSERT_EQ(a.capacity(), 4096u);
  std::vector<size_t> at;
  for (size_t bytes : {1, 255, 256, 257}) {
    std::optional<size_t> r = a.take(bytes);
    ASSERT_TRUE(r.has_value()) << bytes;
    EXPECT_EQ(*r % RangeArena::kAlign, 0u);
    at.push_back(*r);
  }
  EXPECT_EQ(at, (std::vector<size_t>{0, 256, 512, 768})) << "first fit, rounded to 256 bytes";
  EXPECT_EQ(a.usedBytes(), 1280u);
  EXPECT_EQ(a.freeBytes(), 4096u - 1280u);
  EXPECT_FALSE(a.take(4096 - 1280 + 1).has_value()) << "no range that big is free";
  ASSERT_TRUE(a.take(4096 - 1280).has_value());
  EXPECT_EQ(a.freeBytes(), 0u);
  EXPECT_FALSE(a.take(1).has_value());
}

TEST(ImageArena, LetGoRangesCoolUntilTheirLaunchCompleted) {
  RangeArena a(1024);
  const size_t x = *a.take(512), y = *a.take(512);
  EXPECT_FALSE(a.take(256).has_value());
  EXPECT_TRUE(a.retire(x, /*ticket=*/5));
  EXPECT_FALSE(a.retire(x, 5)) << "a range is let go once";
  EXPECT_FALSE(a.retire(12345, 5)) << "not a range of the arena";
  EXPECT_EQ(a.coolingRanges(), 1u);
  EXPECT_FALSE(a.take(256).has_value()) << "launches up to 5 may still read it";
  EXPECT_EQ(a.reclaim(4), 0u);
  EXPECT_FALSE(a.take(256).has_value());
  EXPECT_EQ(a.reclaim(5), 1u);
  EXPECT_EQ(a.coolingRanges(), 0u);
  EXPECT_EQ(a.freeBytes(), 512u);
  // Freed neighbours merge back into one range.
  EXPECT_TRUE(a.retire(y, 6));
  EXPECT_EQ(a.reclaim(100), 1u);
  EXPECT_EQ(a.freeBytes(), 1024u);
  std::optional<size_t> whole = a.take(1024);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(*whole, 0u);
}

TEST(ImageArena, ChurnKeepsTheBookkeepingWhole) {
  RangeArena a(64 * 1024);
  std::vector<std::pair<size_t, size_t>> live;  // offset, bytes
  uint64_t seq = 0;
  unsigned rnd = 12345;
  for (int i = 0; i < 2000; i++) {
    rnd = rnd * 1103515245u + 12345u;
    const size_t bytes = 1 + (rnd >> 8) % 3000;
    if (std::optional<size_t> at = a.take(bytes)) {
      for (const auto& [o, n] : live)
        ASSERT_TRUE(*at + bytes <= o || o + n <= *at) << "overlapping ranges";
      live.push_back({*at, bytes});
    }
    if (live.size() > 8 || (rnd & 1)) {
      if (!live.empty()) {
        const size_t k = (rnd >> 4) % live.size();
        ASSERT_TRUE(a.retire(live[k].first, seq + 1));
        live.erase(live.begin() + static_cast<long>(k));
      }
    }
    seq++;
    a.reclaim(seq >= 3 ? seq - 3 : 0);  // launches complete a few behind
  }
  for (const auto& [o, n] : live) ASSERT_TRUE(a.retire(o, seq));
  a.reclaim(seq);
  EXPECT_EQ(a.freeBytes(), a.capacity());
  EXPECT_EQ(a.usedBytes(), 0u);
}

TEST(SetupActions, CountedProcessWide) {
  const uint64_t before = deviceSetupActions().load();
  std::thread t([] { countDeviceSetup(); });
  t.join();
  countDeviceSetup();
  EXPECT_EQ(deviceSetupActions().load(), before + 2);
}

}  // namespace
}  // namespace weft::cuda
