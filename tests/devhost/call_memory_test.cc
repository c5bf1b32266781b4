// Scratch and staging of device calls (src/exec/cuda/call_memory.h) with a
// counting allocator in place of the stream-ordered pool: after init, calls
// within the reserve allocate nothing; beyond it they allocate outside
// capture and are refused inside one, without allocating.
#include "src/exec/cuda/call_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace weft::cuda {
namespace {

// Hands out real host memory (so the blocks are distinct and writable) and
// counts every allocation and every release.
struct CountingAllocator {
  std::shared_ptr<ReleaseQueue<void*>> queue = std::make_shared<ReleaseQueue<void*>>();
  int allocations = 0;
  std::vector<size_t> sizes;
  CallMemory::Allocate fn() {
    return [this](size_t n) {
      allocations++;
      sizes.push_back(n);
      return std::make_shared<DeviceBlock>(std::malloc(n), n, queue);
    };
  }
  ~CountingAllocator() {
    queue->drain([](void* p) { std::free(p); });
  }
};

constexpr size_t kReserve = 1 << 16;

TEST(CallMemory, ReservesScratchAndStagingAtInit) {
  CountingAllocator a;
  CallMemory m(kReserve, a.fn(), 0);
  EXPECT_EQ(a.allocations, 2);
  EXPECT_EQ(a.sizes, (std::vector<size_t>{kReserve, kReserve}));
  ASSERT_TRUE(m.currentScratch() && m.currentStage());
  EXPECT_NE(m.currentScratch()->ptr, m.currentStage()->ptr);
}

// The call path after init: every size up to the reserve, eager and
// captured, scratch and staging, in any order: no allocation.
TEST(CallMemory, CallsWithinTheReserveAllocateNothing) {
  CountingAllocator a;
  CallMemory m(kReserve, a.fn(), 0);
  const int afterInit = a.allocations;
  for (bool captured : {false, true, false})
    for (size_t bytes : {size_t(0), size_t(1), size_t(4000), kReserve / 2, kReserve, size_t(17)}) {
      const BlockRef& s = m.scratch(bytes, captured);
      if (bytes) {
        ASSERT_TRUE(s);
        EXPECT_GE(s->bytes, bytes);
      }
      const BlockRef& t = m.stage(bytes, captured);
      if (bytes) {
        ASSERT_TRUE(t);
        EXPECT_GE(t->bytes, bytes);
      }
    }
  EXPECT_EQ(a.allocations, afterInit);
  EXPECT_EQ(m.grownInCallPath(), 0u);
}

// Beyond the reserve inside a capture: weftInvalidUsage naming the setting
// and the size, nothing allocated, the reserved block still in place.
TEST(CallMemory, BeyondTheReserveInsideCaptureIsRefusedWithoutAllocating) {
  CountingAllocator a;
  CallMemory m(kReserve, a.fn(), 3);
  void* reserved = m.currentScratch()->ptr;
  try {
    (void)m.scratch(kReserve + 1, true);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidUsage);
    const std::string what = e.what();
    EXPECT_NE(what.find("WEFT_DEVICE_SCRATCH"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(kReserve + 1)), std::string::npos) << what;
    EXPECT_NE(what.find("capture"), std::string::npos) << what;
  }
  EXPECT_THROW((void)m.stage(kReserve * 4, true), Error);
  EXPECT_EQ(a.allocations, 2);
  EXPECT_EQ(m.currentScratch()->ptr, reserved);
}

// Beyond the reserve outside capture: one allocation, counted; the bigger
// block then serves every later call, captured ones included; the old
// block is released only when its last holder (a graph) lets go.
TEST(CallMemory, BeyondTheReserveOutsideCaptureGrowsOnce) {
  CountingAllocator a;
  CallMemory m(kReserve, a.fn(), 0);
  BlockRef heldByGraph = m.currentScratch();
  const BlockRef& grown = m.scratch(kReserve * 3, false);
  EXPECT_GE(grown->bytes, kReserve * 3);
  EXPECT_EQ(a.allocations, 3);
  EXPECT_EQ(m.grownInCallPath(), 1u);
  EXPECT_EQ(a.queue->size(), 0u);  // the graph still holds the reserved block
  heldByGraph.reset();
  EXPECT_EQ(a.queue->size(), 1u);
  for (size_t bytes : {size_t(8), kReserve * 3})
    EXPECT_EQ(m.scratch(bytes, true)->ptr, grown->ptr);
  EXPECT_EQ(a.allocations, 3);
}

// WEFT_DEVICE_SCRATCH=0: nothing reserved; the first call that needs
// scratch allocates (outside capture) or is refused (inside).
TEST(CallMemory, NoReserveMeansFirstUseAllocates) {
  CountingAllocator a;
  CallMemory m(0, a.fn(), 0);
  EXPECT_EQ(a.allocations, 0);
  EXPECT_FALSE(m.scratch(0, true));
  EXPECT_THROW((void)m.stage(64, true), Error);
  EXPECT_EQ(a.allocations, 0);
  EXPECT_TRUE(m.stage(64, false));
  EXPECT_EQ(a.allocations, 1);
}

}  // namespace
}  // namespace weft::cuda
