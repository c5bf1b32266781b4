#include <gtest/gtest.h>

#include "algorithms/one_shot.h"
#include "algorithms/protocols.h"
#include "algorithms/selector.h"
#include "src/util/error.h"

namespace weft::test {
namespace {

using plan::Coll;

TEST(Protocols, SimpleAndLlAreRegistered) {
  EXPECT_EQ(algo::protoCount(), 2);
  EXPECT_STREQ(algo::protoName(algo::kSimple), "simple");
  EXPECT_STREQ(algo::protoName(algo::kLowLatency), "ll");
  EXPECT_EQ(algo::findProto("SIMPLE"), algo::kSimple);
  EXPECT_EQ(algo::findProto("LL"), algo::kLowLatency);
  EXPECT_FALSE(algo::findProto("ll128"));
  // ll carries the one-shot algorithm alone, simple everything else.
  const algo::AlgoId oneShot = *algo::oneShotId();
  EXPECT_TRUE(algo::protoSupports(algo::kLowLatency, Coll::AllReduce, oneShot));
  EXPECT_FALSE(algo::protoSupports(algo::kLowLatency, Coll::AllReduce, algo::kRing));
  EXPECT_FALSE(algo::protoSupports(algo::kSimple, Coll::AllReduce, oneShot));
  EXPECT_TRUE(algo::protoSupports(algo::kSimple, Coll::AllReduce, algo::kRing));
}

TEST(Protocols, WeftProtoParsesNcclLists) {
  for (const char* spec : {"", "simple", "Simple", "^ll", "^ll,ll128", "simple;allreduce:^ll128", "ll,simple"})
    EXPECT_TRUE(algo::parseProtoFilter(spec).allows(Coll::AllReduce, algo::kSimple)) << spec;
  // Unknown names and lists that leave no protocol are errors.
  EXPECT_THROW(algo::parseProtoFilter("fast"), Error);
  EXPECT_TRUE(algo::parseProtoFilter("ll").allows(Coll::AllReduce, algo::kLowLatency));
  EXPECT_FALSE(algo::parseProtoFilter("ll").allows(Coll::AllReduce, algo::kSimple));
  EXPECT_FALSE(algo::parseProtoFilter("^ll").allows(Coll::Broadcast, algo::kLowLatency));
  EXPECT_THROW(algo::parseProtoFilter("^simple,ll"), Error);
  EXPECT_THROW(algo::parseProtoFilter("allgather:ll128"), Error);
  EXPECT_THROW(algo::parseProtoFilter("allgathr:simple"), Error);
}

TEST(Protocols, SelectorReturnsTheProtocol) {
  algo::CostInputs in;
  in.nranks = 4;
  in.bytes = 1 << 20;
  algo::CallChoice c = algo::selectCall(Coll::AllReduce, in, algo::AlgoFilter{}, {}, algo::parseProtoFilter("^ll"));
  EXPECT_EQ(c.proto, algo::kSimple);
  EXPECT_EQ(c.algo, algo::selectAlgo(Coll::AllReduce, in, algo::AlgoFilter{}));
}

algo::CostInputs oneHost(int n, uint64_t bytes) {
  algo::CostInputs in;
  in.nranks = n;
  in.nHosts = 1;
  in.bytes = bytes;
  return in;
}

TEST(Protocols, LlWinsSmallCallsOnOneHostOnly) {
  const algo::AlgoId oneShot = *algo::oneShotId();
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce})
    for (int n : {2, 4, 8}) {
      algo::CallChoice small = algo::selectCall(c, oneHost(n, 64), algo::AlgoFilter{}, {});
      EXPECT_EQ(small.proto, algo::kLowLatency) << plan::collName(c) << " " << n;
      EXPECT_EQ(small.algo, oneShot);
      algo::CallChoice large = algo::selectCall(c, oneHost(n, 64 << 20), algo::AlgoFilter{}, {});
      EXPECT_EQ(large.proto, algo::kSimple) << plan::collName(c) << " " << n;
      // Excluded by WEFT_PROTO, and never across hosts.
      EXPECT_EQ(algo::selectCall(c, oneHost(n, 64), algo::AlgoFilter{}, {}, algo::parseProtoFilter("^ll")).proto,
                algo::kSimple);
      algo::CostInputs two = oneHost(2 * n, 64);
      two.nHosts = 2;
      EXPECT_EQ(algo::selectCall(c, two, algo::AlgoFilter{}, {}).proto, algo::kSimple);
      // Forced: every size.
      EXPECT_EQ(algo::selectCall(c, oneHost(n, 64 << 20), algo::AlgoFilter{}, {}, algo::parseProtoFilter("ll")).proto,
                algo::kLowLatency);
    }
  // WEFT_ALGO=ring leaves ll nothing to carry: simple.
  EXPECT_EQ(algo::selectCall(Coll::AllReduce, oneHost(2, 8), algo::parseAlgoFilter("ring"), {}).proto, algo::kSimple);
}

}  // namespace
}  // namespace weft::test
