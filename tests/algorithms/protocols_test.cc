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
  // ll carries the one-shot algorithm alone, simple every algorithm.
  const algo::AlgoId oneShot = *algo::oneShotId();
  EXPECT_TRUE(algo::protoSupports(algo::kLowLatency, Coll::AllReduce, oneShot));
  EXPECT_FALSE(algo::protoSupports(algo::kLowLatency, Coll::AllReduce, algo::kRing));
  EXPECT_TRUE(algo::protoSupports(algo::kSimple, Coll::AllReduce, oneShot));
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

// Device buffers: ll is the interpreter's LL and carries every FIFO
// algorithm (never the one-shot plan, which device calls do not use), on
// one host only; small calls choose it, large ones simple. Host buffers
// keep ll to the one-shot plan.
TEST(Protocols, DeviceLlCarriesFifoAlgorithmsOnOneHost) {
  const algo::AlgoFilter device = algo::withoutAlgo(algo::AlgoFilter{}, *algo::oneShotId());
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce})
    for (int n : {2, 4, 8}) {
      algo::CostInputs in = oneHost(n, 64);
      in.deviceBuffers = true;
      const algo::CallChoice small = algo::selectCall(c, in, device, {});
      EXPECT_EQ(small.proto, algo::kLowLatency) << plan::collName(c) << " " << n;
      EXPECT_FALSE(algo::isOneShot(small.algo));
      EXPECT_TRUE(algo::protoCarries(algo::kLowLatency, c, algo::kRing, in) || !algo::algoSupports(algo::kRing, c));
      EXPECT_FALSE(algo::protoCarries(algo::kLowLatency, c, algo::kRing, oneHost(n, 64)));  // host buffers
      in.bytes = uint64_t(256) << 20;
      EXPECT_EQ(algo::selectCall(c, in, device, {}).proto, algo::kSimple) << plan::collName(c) << " " << n;
      in.bytes = 64;
      EXPECT_EQ(algo::selectCall(c, in, device, {}, algo::parseProtoFilter("simple")).proto, algo::kSimple);
      in.nranks = 2 * n;
      in.nHosts = 2;
      EXPECT_EQ(algo::selectCall(c, in, device, {}).proto, algo::kSimple);
      EXPECT_FALSE(algo::protoCarries(algo::kLowLatency, c, algo::kRing, in));
    }
}

// Without ll (across hosts, or excluded), a small AllReduce of 2 ranks
// runs the one-shot plan on FIFO slots: one hop instead of the ring's two.
// Large calls and more ranks keep the other algorithms.
TEST(Protocols, OneShotOnFifosForSmallCallsWithoutLl) {
  const algo::AlgoId oneShot = *algo::oneShotId();
  algo::CostInputs two = oneHost(2, 64);
  two.nHosts = 2;
  EXPECT_EQ(algo::selectCall(Coll::AllReduce, two, algo::AlgoFilter{}, {}).algo, oneShot);
  EXPECT_EQ(algo::selectCall(Coll::AllReduce, two, algo::AlgoFilter{}, {}).proto, algo::kSimple);
  algo::CallChoice simple =
      algo::selectCall(Coll::AllReduce, oneHost(2, 64), algo::AlgoFilter{}, {}, algo::parseProtoFilter("simple"));
  EXPECT_EQ(simple.algo, oneShot);
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce})
    for (int n : {2, 4, 8}) {
      algo::CostInputs hosts = oneHost(n, 64 << 20);
      hosts.nHosts = 2;
      EXPECT_NE(algo::selectCall(c, hosts, algo::AlgoFilter{}, {}).algo, oneShot) << plan::collName(c) << " " << n;
      hosts.bytes = 8;
      if (n > 2) EXPECT_NE(algo::selectCall(c, hosts, algo::AlgoFilter{}, {}).algo, oneShot) << plan::collName(c);
      // Where ll can run, the FIFO hop never beats it, at any size.
      for (uint64_t bytes = 8; bytes <= (64u << 20); bytes *= 4) {
        algo::CallChoice one = algo::selectCall(c, oneHost(n, bytes), algo::AlgoFilter{}, {});
        EXPECT_FALSE(one.algo == oneShot && one.proto == algo::kSimple) << plan::collName(c) << " " << n << " " << bytes;
      }
    }
  // Device buffers select without it (src/core/comm.h, deviceAlgoFilter).
  const algo::AlgoFilter device = algo::withoutAlgo(algo::AlgoFilter{}, oneShot);
  EXPECT_FALSE(device.allows(Coll::AllReduce, oneShot));
  EXPECT_TRUE(device.allows(Coll::AllReduce, algo::kRing));
  EXPECT_NE(algo::selectCall(Coll::AllReduce, two, device, {}).algo, oneShot);
  // Forced on more than 2 ranks without ll: no protocol carries it.
  algo::CostInputs four = oneHost(4, 8);
  four.nHosts = 2;
  EXPECT_THROW(algo::selectCall(Coll::AllReduce, four, algo::parseAlgoFilter("allreduce:oneshot"), {},
                                algo::parseProtoFilter("^ll")),
               Error);
  EXPECT_EQ(algo::selectCall(Coll::AllReduce, two, algo::parseAlgoFilter("allreduce:oneshot"), {}).algo, oneShot);
  // A filter that names it alone keeps it.
  EXPECT_TRUE(algo::withoutAlgo(algo::parseAlgoFilter("allreduce:oneshot"), oneShot).allows(Coll::AllReduce, oneShot));
}

}  // namespace
}  // namespace weft::test
