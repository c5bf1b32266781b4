// A fake algorithm registered by this test binary alone ("fakering": the
// ring's plans at a tenth of its cost) reaches the selector, WEFT_ALGO,
// weft-select's table, weft-tune's calibration and tune files, and the plan
// verifier through its registry entry, with no other edit. Its own binary,
// so that the other selector tests keep the built-ins alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <unistd.h>

#include "algorithms/collectives.h"
#include "algorithms/protocols.h"
#include "algorithms/registry.h"
#include "algorithms/ring.h"
#include "algorithms/selector.h"
#include "algorithms/verify.h"
#include "src/core/tune_file.h"
#include "src/util/error.h"
#include "tools/weft-select/select_table.h"
#include "tools/weft-tune/fit.h"

namespace weft::test {
namespace {

using algo::AlgoId;
using plan::Coll;

algo::CostTerms cheapRing(Coll c, const algo::CostInputs& in, double bytes) {
  algo::CostTerms ring = algo::algoInfo(algo::kRing).cost(c, in, bytes);
  return {ring.latUs / 10, ring.bytesUs / 10};
}

algo::AlgoInfo fakeRing() {
  algo::AlgoInfo info = algo::algoInfo(algo::kRing);
  info.name = "fakering";
  info.cost = cheapRing;
  return info;
}

const AlgoId kFake = algo::registerAlgo(fakeRing());

algo::CostInputs inputs(int n, uint64_t bytes) {
  algo::CostInputs in;
  in.nranks = n;
  in.nHosts = 1;
  in.bytes = bytes;
  return in;
}

TEST(AlgorithmRegistry, BuiltinsComeFirstAndFakeAfter) {
  const int builtins = int(algo::builtinAlgos().size());
  EXPECT_EQ(algo::algoCount(), builtins + 1);
  EXPECT_STREQ(algo::algoName(algo::kRing), "ring");
  EXPECT_STREQ(algo::algoName(algo::kBinaryTree), "binarytree");
  EXPECT_STREQ(algo::algoName(algo::kDoubleTree), "tree");
  EXPECT_EQ(algo::index(kFake), builtins);
  EXPECT_EQ(algo::findAlgo("FakeRing"), kFake);
  EXPECT_THROW(algo::registerAlgo(fakeRing()), Error);  // the name is taken
}

TEST(AlgorithmRegistry, SelectorPicksTheFake) {
  for (uint64_t bytes : {uint64_t(8), uint64_t(1) << 20, uint64_t(1) << 30}) {
    // The one-shot algorithm (one host) beats even the fake at small sizes.
    EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, inputs(8, bytes), algo::parseAlgoFilter("^oneshot")), kFake) << bytes;
    algo::CallChoice c = algo::selectCall(Coll::AllGather, inputs(8, bytes), algo::parseAlgoFilter("^oneshot"), {});
    EXPECT_EQ(c.algo, kFake);
    EXPECT_EQ(c.proto, algo::kSimple);
  }
  // A calibration slot nobody filled is neutral: no zero bytes term.
  const algo::CostInputs in = inputs(8, uint64_t(1) << 30);
  EXPECT_EQ(in.calibration(kFake).bwScale, 1.0);
  EXPECT_GT(algo::estimateUs(Coll::AllReduce, kFake, in), algo::latencyTermUs(Coll::AllReduce, kFake, in));
}

TEST(AlgorithmRegistry, WeftAlgoNamesTheFake) {
  const algo::CostInputs in = inputs(8, 1 << 20);
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, in, algo::parseAlgoFilter("^fakering")),
            algo::selectAlgo(Coll::AllReduce, in, algo::parseAlgoFilter("ring,binarytree,tree")));
  EXPECT_NE(algo::selectAlgo(Coll::AllReduce, in, algo::parseAlgoFilter("^fakering")), kFake);
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, in, algo::parseAlgoFilter("ring,fakering")), kFake);
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, in, algo::parseAlgoFilter("fakering;allreduce:ring")), algo::kRing);
  EXPECT_EQ(algo::selectAlgo(Coll::Broadcast, in, algo::parseAlgoFilter("allreduce:ring")), kFake);
}

TEST(AlgorithmRegistry, WeftSelectTableShowsTheFake) {
  algo::CostInputs in = inputs(8, 0);
  const std::string table = tools::selectTable(Coll::AllReduce, in, algo::AlgoFilter{}, 1);
  EXPECT_NE(table.find("fakering(us)"), std::string::npos) << table;
  EXPECT_NE(table.find("  fakering ("), std::string::npos) << table;
}

TEST(AlgorithmRegistry, CalibrationAndTuneFileHaveASlotForTheFake) {
  const std::vector<AlgoId> timed = tune::calibratedAlgos();
  // Every built-in implements AllReduce, and so does the fake.
  ASSERT_EQ(timed.size(), algo::builtinAlgos().size() + 1);
  EXPECT_EQ(timed.back(), kFake);
  std::vector<tune::SweepPoint> points;
  for (size_t bytes : {size_t(8), size_t(4096), size_t(1) << 20}) {
    tune::SweepPoint p;
    p.bytes = bytes;
    p.medianUs = {100.0 + bytes / 100.0, 90 + bytes / 90.0, 80 + bytes / 80.0};
    // Built-ins after the first three, then the fake (the last one timed).
    while (p.medianUs.size() + 1 < timed.size()) p.medianUs.push_back(95 + bytes / 95.0);
    p.medianUs.push_back(50 + bytes / 200.0);
    points.push_back(p);
  }
  algo::CostInputs fitted = tune::fitCostInputs(inputs(8, 0), points, false);
  ASSERT_EQ(fitted.calibration(kFake).measured.nPoints, 3);
  EXPECT_NE(fitted.calibration(kFake).bwScale, 1.0);

  char path[] = "/tmp/weft_registry_tuneXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  saveTuneFile(path, fitted, "fake algorithm");
  algo::CostInputs back;
  loadTuneFile(path, &back);
  std::remove(path);
  EXPECT_DOUBLE_EQ(back.calibration(kFake).baseUs, fitted.calibration(kFake).baseUs);
  EXPECT_DOUBLE_EQ(back.calibration(kFake).bwScale, fitted.calibration(kFake).bwScale);
  ASSERT_EQ(back.calibration(kFake).measured.nPoints, 3);
  EXPECT_DOUBLE_EQ(back.calibration(kFake).measured.us[2], fitted.calibration(kFake).measured.us[2]);
}

TEST(AlgorithmRegistry, VerifierVerifiesTheFakesPlans) {
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce}) {
    ASSERT_TRUE(algo::algoSupports(kFake, c));
    algo::CollArgs a;
    a.coll = c;
    a.nranks = 5;
    a.count = 1009;
    a.nChannels = 2;
    a.root = 3;
    a.geometry.slotBytes = 256;
    a.geometry.nSlots = 4;
    verify::Result r = verify::verifyBuilder(algo::algoInfo(kFake).build, a, false);
    EXPECT_TRUE(r.ok) << plan::collName(c) << "\n" << r.text();
  }
}

}  // namespace
}  // namespace weft::test
