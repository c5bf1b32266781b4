// The device executor's copy-only plans (src/exec/cuda/local_copies.h):
// every one-rank plan the algorithms build becomes plain copies that give
// the host executor's result, in place nothing at all, and any plan that
// talks to a peer or computes keeps the interpreter.
#include "src/exec/cuda/local_copies.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "algorithms/collectives.h"
#include "algorithms/p2p.h"
#include "algorithms/registry.h"

namespace weft::cuda {
namespace {

constexpr plan::Coll kColls[] = {plan::Coll::AllReduce, plan::Coll::ReduceScatter, plan::Coll::AllGather,
                                 plan::Coll::Broadcast, plan::Coll::Reduce};

algo::CollArgs oneRank(plan::Coll c, uint64_t count, int channels) {
  algo::CollArgs a;
  a.coll = c;
  a.count = count;
  a.elemSize = 4;
  a.alignBytes = 16;
  a.nChannels = channels;
  return a;
}

void applyCopies(const std::vector<LocalCopy>& copies) {
  for (const LocalCopy& c : copies) std::memmove(c.dst, c.src, c.bytes);
}

TEST(LocalCopies, EveryOneRankPlanIsOneCopyOutOfPlaceAndNothingInPlace) {
  std::mt19937 rng(7);
  kernels::RedOp sum;
  for (int i = 0; i < algo::algoCount(); i++)
    for (plan::Coll c : kColls) {
      if (!algo::algoSupports(algo::AlgoId(i), c)) continue;
      for (int channels : {1, 8})
        for (uint64_t count : {1ull, 1001ull, 65536ull}) {
          SCOPED_TRACE(std::string(algo::algoName(algo::AlgoId(i))) + " " + plan::collName(c) + " channels " +
                       std::to_string(channels) + " count " + std::to_string(count));
          const plan::Plan p = algo::algoInfo(algo::AlgoId(i)).build(oneRank(c, count, channels));
          std::vector<uint32_t> in(count), out(count, 0xdeadbeef);
          for (auto& x : in) x = rng();
          BufferBinding b{in.data(), out.data()};
          auto copies = localCopiesOf(p, {&b, 1}, sum);
          ASSERT_TRUE(copies.has_value()) << plan::describe(p);
          EXPECT_EQ(copies->size(), 1u) << "adjacent channel ranges merge";
          applyCopies(*copies);
          EXPECT_EQ(in, out);
          BufferBinding inPlace{out.data(), out.data()};
          auto none = localCopiesOf(p, {&inPlace, 1}, sum);
          ASSERT_TRUE(none.has_value());
          EXPECT_TRUE(none->empty()) << "a range onto itself is no copy";
        }
    }
}

TEST(LocalCopies, AvgOfOneRankCopiesButPreMulSumComputes) {
  kernels::RedOp avg, premul;
  avg.kind = kernels::OpKind::Avg;
  premul.kind = kernels::OpKind::PreMulSum;
  const float two = 2.0f;
  std::memcpy(premul.scalar, &two, sizeof two);
  std::vector<float> in(100, 1.0f), out(100);
  BufferBinding b{in.data(), out.data()};
  for (plan::Coll c : {plan::Coll::AllReduce, plan::Coll::ReduceScatter, plan::Coll::Reduce}) {
    SCOPED_TRACE(plan::collName(c));
    const plan::Plan p = algo::algoInfo(algo::AlgoId(0)).build(oneRank(c, 100, 1));
    EXPECT_TRUE(localCopiesOf(p, {&b, 1}, avg).has_value());
    EXPECT_FALSE(localCopiesOf(p, {&b, 1}, premul).has_value()) << "the scalar must still be applied";
    kernels::RedOp avgOfTwo = avg;
    avgOfTwo.nranks = 2;
    EXPECT_FALSE(localCopiesOf(p, {&b, 1}, avgOfTwo).has_value());
  }
}

TEST(LocalCopies, OneRankAllToAllAndSendsToSelfCopy) {
  std::vector<uint32_t> in(64), out(64, 0);
  for (size_t i = 0; i < in.size(); i++) in[i] = uint32_t(i * 2654435761u);
  algo::CollArgs a = oneRank(plan::Coll::AllToAll, 64, 1);
  BufferBinding b{in.data(), out.data()};
  auto copies = localCopiesOf(algo::buildAllToAll(a), {&b, 1}, kernels::RedOp{});
  ASSERT_TRUE(copies.has_value());
  applyCopies(*copies);
  EXPECT_EQ(in, out);

  std::vector<unsigned char> s(300, 0x5a), r(300, 0);
  std::vector<algo::P2POp> ops{{true, 0, 300, 0}, {false, 0, 300, 0}};
  const plan::Plan self = algo::buildP2P(1, 0, 1, ops);
  BufferBinding pair{s.data(), r.data()};
  auto selfCopies = localCopiesOf(self, {&pair, 1}, kernels::RedOp{});
  if (selfCopies) {  // a plan may also route a send to oneself through a FIFO
    applyCopies(*selfCopies);
    EXPECT_EQ(s, r);
  }
}

TEST(LocalCopies, PlansWithPeersOrScratchKeepTheInterpreter) {
  std::vector<float> in(4096), out(4096);
  BufferBinding b{in.data(), out.data()};
  for (int i = 0; i < algo::algoCount(); i++)
    for (plan::Coll c : kColls) {
      if (!algo::algoSupports(algo::AlgoId(i), c)) continue;
      algo::CollArgs a = oneRank(c, 1024, 2);
      a.nranks = 4;
      a.rank = 1;
      SCOPED_TRACE(std::string(algo::algoName(algo::AlgoId(i))) + " " + plan::collName(c));
      EXPECT_FALSE(localCopiesOf(algo::algoInfo(algo::AlgoId(i)).build(a), {&b, 1}, kernels::RedOp{}).has_value());
    }
  plan::Plan p = algo::algoInfo(algo::AlgoId(0)).build(oneRank(plan::Coll::AllReduce, 1024, 1));
  p.scratchElems = 16;
  EXPECT_FALSE(localCopiesOf(p, {&b, 1}, kernels::RedOp{}).has_value());
  p.scratchElems = 0;
  p.wire = plan::Wire::Bf16;
  EXPECT_FALSE(localCopiesOf(p, {&b, 1}, kernels::RedOp{}).has_value()) << "a narrow wire rounds";
}

}  // namespace
}  // namespace weft::cuda
