#include <gtest/gtest.h>

#include "algorithms/collectives.h"

namespace weft::test {
namespace {

using plan::Coll;

TEST(Collectives, TableRowsMatchTheirCollective) {
  for (int c = 0; c < plan::kNumColls; c++) EXPECT_EQ(int(plan::collInfo(Coll(c)).coll), c);
  EXPECT_STREQ(plan::collName(Coll::ReduceScatter), "ReduceScatter");
}

TEST(Collectives, ParsesKeysCaseInsensitively) {
  EXPECT_EQ(plan::parseColl("allreduce"), Coll::AllReduce);
  EXPECT_EQ(plan::parseColl("AllGather"), Coll::AllGather);
  EXPECT_EQ(plan::parseColl("ALLTOALL"), Coll::AllToAll);
  EXPECT_FALSE(plan::parseColl("allreduse"));
  EXPECT_FALSE(plan::parseColl(""));
}

TEST(Collectives, ReductionsRootsAndBuffers) {
  EXPECT_TRUE(plan::collInfo(Coll::Reduce).reduces && plan::collInfo(Coll::Reduce).rooted);
  EXPECT_FALSE(plan::collInfo(Coll::AllGather).reduces);
  EXPECT_TRUE(plan::collInfo(Coll::Broadcast).sendAtRootOnly);
  EXPECT_TRUE(plan::collInfo(Coll::Reduce).recvAtRootOnly);
  EXPECT_EQ(plan::sendElems(Coll::ReduceScatter, 10, 4), 40u);
  EXPECT_EQ(plan::recvElems(Coll::ReduceScatter, 10, 4), 10u);
  EXPECT_EQ(plan::recvElems(Coll::AllGather, 10, 4), 40u);
  EXPECT_EQ(plan::largestBufferElems(Coll::AllToAll, 10, 4), 40u);
  EXPECT_EQ(plan::largestBufferElems(Coll::AllReduce, 10, 4), 10u);
}

TEST(Collectives, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(plan::collInfo(Coll::AllReduce).busFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(plan::collInfo(Coll::AllGather).busFactor(4), 0.75);
  EXPECT_DOUBLE_EQ(plan::collInfo(Coll::AllToAll).busFactor(4), 0.75);
  EXPECT_DOUBLE_EQ(plan::collInfo(Coll::Broadcast).busFactor(4), 1.0);
  EXPECT_DOUBLE_EQ(plan::collInfo(Coll::SendRecv).busFactor(4), 1.0);
}

}  // namespace
}  // namespace weft::test
