#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "src/util/error.h"
#include "transports/ib/credits.h"

using namespace weft::ib;

TEST(IbImm, RoundTripAndLimits) {
  for (uint32_t slot : {0u, 1u, 31u}) {
    for (uint64_t bytes : {uint64_t(0), uint64_t(1), uint64_t(512 * 1024), kImmMaxBytes}) {
      ImmData d = decodeImm(encodeImm(slot, bytes));
      EXPECT_EQ(d.slot, slot);
      EXPECT_EQ(d.bytes, bytes);
    }
  }
  EXPECT_THROW(encodeImm(32, 0), weft::Error);
  EXPECT_THROW(encodeImm(0, kImmMaxBytes + 1), weft::Error);
}

TEST(IbCredits, WindowFillsAndDrains) {
  CreditWindow w(4);
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(w.canWrite());
    EXPECT_EQ(w.nextSlot(), i);
    w.onWrite();
  }
  EXPECT_FALSE(w.canWrite());
  EXPECT_THROW(w.onWrite(), weft::Error);
  EXPECT_EQ(w.onCredit(0), 0u);  // a repeated credit frees nothing
  EXPECT_EQ(w.onCredit(1), 1u);
  EXPECT_TRUE(w.canWrite());
  EXPECT_EQ(w.nextSlot(), 0u);  // slot 0 again, now that its occupant was consumed
  w.onWrite();
  EXPECT_FALSE(w.canWrite());
  EXPECT_EQ(w.onCredit(5), 4u);
  EXPECT_EQ(w.inFlight(), 0u);
}

TEST(IbCredits, ImpossibleCreditRejected) {
  CreditWindow w(8);
  w.onWrite();
  w.onWrite();
  try {
    w.onCredit(3);  // consumed more than was written
    FAIL();
  } catch (const weft::Error& e) {
    EXPECT_EQ(e.code(), weftRemoteError);
  }
  EXPECT_EQ(w.onCredit(2), 2u);
  EXPECT_THROW(w.onCredit(1), weft::Error);  // going backwards
}

TEST(IbCredits, RandomRunAcrossTheWrapMatchesA64BitModel) {
  // Counters start 16 below 2^32 so that the run crosses the wrap; the
  // 64-bit model never wraps.
  const uint32_t start = 0xfffffff0u;
  CreditWindow w(8, start);
  std::mt19937 rng(7);
  uint64_t written64 = start, consumed64 = start;
  for (int i = 0; i < 20000; ++i) {
    if (w.canWrite() && rng() % 2) {
      ASSERT_EQ(w.nextSlot(), written64 % 8);
      w.onWrite();
      ++written64;
    } else if (consumed64 < written64) {
      uint64_t step = 1 + rng() % (written64 - consumed64);
      consumed64 += step;
      ASSERT_EQ(w.onCredit(static_cast<uint32_t>(consumed64)), step);
    }
    ASSERT_EQ(w.inFlight(), written64 - consumed64);
    ASSERT_LE(w.inFlight(), 8u);
    ASSERT_EQ(w.canWrite(), written64 - consumed64 < 8);
  }
  EXPECT_GT(written64, uint64_t(1) << 32) << "the run must cross the wrap";
}

TEST(IbCreditReturn, SendsEveryChangeWithinOutstandingLimit) {
  CreditReturn r(2);
  EXPECT_FALSE(r.due(0));
  ASSERT_TRUE(r.due(1));
  r.onSent(1);
  EXPECT_FALSE(r.due(1));
  ASSERT_EQ(r.due(3).value(), 3u);
  r.onSent(3);
  EXPECT_FALSE(r.due(4)) << "two writes unacknowledged: must wait";
  r.onSendCompleted();
  EXPECT_EQ(r.due(4).value(), 4u);
  EXPECT_EQ(r.outstanding(), 1u);
}

TEST(IbInOrder, ReordersCompletions) {
  InOrderWindow w(4);
  EXPECT_FALSE(w.take());
  w.mark(2, 20);
  w.mark(1, 10);
  EXPECT_FALSE(w.take()) << "seq 0 not done yet";
  w.mark(0, 5);
  EXPECT_EQ(w.take().value(), 5u);
  EXPECT_EQ(w.take().value(), 10u);
  EXPECT_EQ(w.take().value(), 20u);
  EXPECT_FALSE(w.take());
  EXPECT_EQ(w.next(), 3u);
  w.mark(3, 30);
  w.mark(0, 40);  // seq 4 reuses slot 0
  EXPECT_EQ(w.take().value(), 30u);
  EXPECT_EQ(w.take().value(), 40u);
}

TEST(IbInOrder, DuplicateAndOutOfRangeRejected) {
  InOrderWindow w(4);
  w.mark(1, 0);
  EXPECT_THROW(w.mark(1, 0), weft::Error);
  EXPECT_THROW(w.mark(4, 0), weft::Error);
}

TEST(IbInOrder, RandomPermutationsMatchSequence) {
  std::mt19937 rng(11);
  const uint32_t n = 8;
  InOrderWindow w(n);
  uint32_t seq = 0, delivered = 0;
  for (int round = 0; round < 500; ++round) {
    std::vector<uint32_t> batch;
    uint32_t k = 1 + rng() % n;
    for (uint32_t i = 0; i < k; ++i) batch.push_back(seq + i);
    std::shuffle(batch.begin(), batch.end(), rng);
    for (uint32_t s : batch) w.mark(s % n, s * 3);
    seq += k;
    while (auto b = w.take()) {
      ASSERT_EQ(*b, delivered * 3);
      ++delivered;
    }
    ASSERT_EQ(delivered, seq);
  }
}
