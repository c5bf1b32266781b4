#include <gtest/gtest.h>

#include "algorithms/protocols.h"
#include "algorithms/selector.h"
#include "src/util/error.h"

namespace weft::test {
namespace {

using plan::Coll;

TEST(Protocols, SimpleIsRegistered) {
  EXPECT_EQ(algo::protoCount(), 1);
  EXPECT_STREQ(algo::protoName(algo::kSimple), "simple");
  EXPECT_EQ(algo::findProto("SIMPLE"), algo::kSimple);
  EXPECT_FALSE(algo::findProto("ll"));
}

TEST(Protocols, WeftProtoParsesNcclLists) {
  for (const char* spec : {"", "simple", "Simple", "^ll", "^ll,ll128", "simple;allreduce:^ll128", "ll,simple"})
    EXPECT_TRUE(algo::parseProtoFilter(spec).allows(Coll::AllReduce, algo::kSimple)) << spec;
  // Unknown names and lists that leave no protocol are errors.
  EXPECT_THROW(algo::parseProtoFilter("fast"), Error);
  EXPECT_THROW(algo::parseProtoFilter("ll"), Error);
  EXPECT_THROW(algo::parseProtoFilter("^simple"), Error);
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

}  // namespace
}  // namespace weft::test
