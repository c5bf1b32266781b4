// When slots written into GPU memory may be posted: one flush read covers
// every slot that arrived before it, order is kept, empty slots need none.
#include <gtest/gtest.h>

#include <vector>

#include "src/util/error.h"
#include "transports/ib/flush_schedule.h"

using weft::ib::FlushSchedule;

namespace {

std::vector<uint32_t> drain(FlushSchedule& f) {
  std::vector<uint32_t> out;
  while (auto b = f.take()) out.push_back(*b);
  return out;
}

}  // namespace

TEST(FlushSchedule, OffPostsEverySlotAtOnce) {
  FlushSchedule f(false);
  f.arrived(0, 100);
  f.arrived(1, 0);
  f.arrived(2, 7);
  EXPECT_FALSE(f.readDue());
  EXPECT_EQ(drain(f), (std::vector<uint32_t>{100, 0, 7}));
  EXPECT_EQ(f.waiting(), 0u);
}

TEST(FlushSchedule, OneReadCoversABatchAndLaterSlotsWaitForTheNext) {
  FlushSchedule f(true);
  f.arrived(0, 10);
  f.arrived(1, 20);
  EXPECT_FALSE(f.take()) << "data is not visible before a read";
  ASSERT_TRUE(f.readDue());
  EXPECT_EQ(f.readSlot(), 1u) << "reads the newest slot with data";
  f.readPosted();
  EXPECT_TRUE(f.readInFlight());
  EXPECT_FALSE(f.readDue()) << "at most one read in flight";
  f.arrived(2, 30);  // after the read was issued: not covered by it
  EXPECT_FALSE(f.readDue());
  f.readDone();
  EXPECT_EQ(drain(f), (std::vector<uint32_t>{10, 20}));
  ASSERT_TRUE(f.readDue()) << "slot 2 needs a read of its own";
  EXPECT_EQ(f.readSlot(), 2u);
  f.readPosted();
  EXPECT_FALSE(f.take());
  f.readDone();
  EXPECT_EQ(drain(f), (std::vector<uint32_t>{30}));
  EXPECT_FALSE(f.readDue());
  EXPECT_EQ(f.waiting(), 0u);
}

TEST(FlushSchedule, EmptySlotsKeepTheirPlaceButNeedNoRead) {
  FlushSchedule f(true);
  f.arrived(0, 0);
  EXPECT_FALSE(f.readDue());
  EXPECT_EQ(drain(f), (std::vector<uint32_t>{0})) << "nothing ahead, no data: ready at once";
  f.arrived(1, 64);
  f.arrived(2, 0);  // behind a slot with data: waits for its read
  ASSERT_TRUE(f.readDue());
  EXPECT_EQ(f.readSlot(), 1u);
  f.readPosted();
  f.arrived(3, 0);  // behind the read in flight, no data of its own
  EXPECT_FALSE(f.take());
  f.readDone();
  EXPECT_FALSE(f.readDue()) << "the empty slot behind the read needs no second read";
  EXPECT_EQ(drain(f), (std::vector<uint32_t>{64, 0, 0}));
}

TEST(FlushSchedule, ProtocolErrorsAreReported) {
  FlushSchedule f(true);
  EXPECT_THROW(f.readDone(), weft::Error) << "no read in flight";
  EXPECT_THROW(f.readPosted(), weft::Error) << "nothing to flush";
  for (uint32_t i = 0; i < weft::kFifoMaxSlots; ++i) f.arrived(i, 1);
  EXPECT_THROW(f.arrived(0, 1), weft::Error) << "more slots than a FIFO has";
}

// Long run with wrap-around: slots come out in arrival order, each only
// after a read that was posted after it arrived (empty ones excepted).
TEST(FlushSchedule, ManySlotsInOrder) {
  FlushSchedule f(true);
  uint32_t next = 0, expect = 0;
  uint32_t arrivedCount = 0, coveredUpTo = 0, pendingCover = 0;
  for (int round = 0; round < 1000; ++round) {
    const int burst = round % 5;
    for (int i = 0; i < burst && f.waiting() < weft::kFifoMaxSlots; ++i) {
      const uint32_t bytes = (next % 7 == 3) ? 0 : next + 1;
      f.arrived(next % 8, bytes);
      ++next;
      ++arrivedCount;
    }
    if (f.readInFlight() && round % 2) {
      f.readDone();
      coveredUpTo = pendingCover;
    }
    if (f.readDue()) {
      f.readPosted();
      pendingCover = arrivedCount;
    }
    while (auto b = f.take()) {
      const uint32_t want = (expect % 7 == 3) ? 0 : expect + 1;
      ASSERT_EQ(*b, want) << "slot " << expect;
      if (want) ASSERT_LT(expect, coveredUpTo) << "slot " << expect << " taken before its read completed";
      ++expect;
    }
  }
  EXPECT_GT(expect, 1000u);
}

// Whether a receiver with GPU slots flushes at all: not on compute
// capability 9.0 and later, not when disabled, else yes (unknown: yes).
TEST(FlushDecision, SkippedFromComputeCapabilityNineOn) {
  using weft::ib::decideFlush;
  for (auto [major, minor] : {std::pair{9, 0}, std::pair{10, 0}, std::pair{12, 1}}) {
    auto d = decideFlush(false, 2, major, minor);
    EXPECT_FALSE(d.flush) << major;
    EXPECT_NE(d.reason.find("no flush: GPU 2 is compute capability " + std::to_string(major) + "." +
                            std::to_string(minor)),
              std::string::npos)
        << d.reason;
  }
  for (auto [major, minor] : {std::pair{8, 0}, std::pair{8, 9}, std::pair{7, 0}}) {
    auto d = decideFlush(false, 0, major, minor);
    EXPECT_TRUE(d.flush) << major << "." << minor;
    EXPECT_EQ(d.reason, "flush by RDMA read");
  }
  auto unknown = decideFlush(false, 1, -1, -1);
  EXPECT_TRUE(unknown.flush);
  EXPECT_NE(unknown.reason.find("compute capability unknown"), std::string::npos) << unknown.reason;
  for (int major : {-1, 8, 9}) {
    auto off = decideFlush(true, 0, major, 0);
    EXPECT_FALSE(off.flush);
    EXPECT_EQ(off.reason, "no flush: WEFT_GDR_FLUSH_DISABLE");
  }
}
