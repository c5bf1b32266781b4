// WEFT_CHECK: mismatched collectives fail on every rank with a message that
// names the ranks and their calls; matching ones run as usual.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "src/core/call_check.h"
#include "weft/weft.h"

namespace weft::test {
namespace {

TEST(CallCheck, ComparesAndDescribesSignatures) {
  OpDesc a;
  a.coll = plan::Coll::AllReduce;
  a.count = 1000;
  a.type = weftFloat32;
  OpDesc b = a;
  std::vector<CallSignature> all = {signatureOf(a, 5), signatureOf(b, 5), signatureOf(b, 5)};
  EXPECT_EQ(compareSignatures(all.data(), 3), "");
  // The root of an unrooted collective and the scalar of PreMulSum do not matter.
  b.root = 2;
  all[1] = signatureOf(b, 5);
  EXPECT_EQ(compareSignatures(all.data(), 3), "");

  OpDesc c = a;
  c.coll = plan::Coll::Broadcast;
  c.root = 1;
  all[2] = signatureOf(c, 5);
  std::string why = compareSignatures(all.data(), 3);
  EXPECT_NE(why.find("collective #5 differs"), std::string::npos) << why;
  EXPECT_NE(why.find("rank 0 calls AllReduce count 1000 float sum (host buffers)"), std::string::npos) << why;
  EXPECT_NE(why.find("rank 2 (its collective #5) calls Broadcast count 1000 float root 1"), std::string::npos)
      << why;
  EXPECT_EQ(why.find("rank 1"), std::string::npos) << why;

  for (auto change : std::vector<std::function<void(OpDesc&)>>{
           [](OpDesc& o) { o.count = 999; }, [](OpDesc& o) { o.type = weftFloat16; },
           [](OpDesc& o) { o.op.kind = kernels::OpKind::Max; }, [](OpDesc& o) { o.device = true; }}) {
    OpDesc d = a;
    change(d);
    all = {signatureOf(a, 0), signatureOf(d, 0)};
    EXPECT_NE(compareSignatures(all.data(), 2), "") << describeSignature(all[1]);
  }
  // A rank that skipped a call is one collective behind.
  all = {signatureOf(a, 7), signatureOf(a, 6)};
  EXPECT_NE(compareSignatures(all.data(), 2).find("its collective #6"), std::string::npos);
}

// Runs fn(rank, comm) on n thread ranks of a WEFT_CHECK communicator.
void onRanks(int n, const std::function<void(int, weftComm_t)>& fn) {
  setenv("WEFT_CHECK", "1", 1);
  std::vector<weftComm_t> comms(n);
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess);
  unsetenv("WEFT_CHECK");
  std::vector<std::thread> threads;
  for (int r = 0; r < n; r++) threads.emplace_back([&, r] { fn(r, comms[r]); });
  for (auto& t : threads) t.join();
  for (weftComm_t c : comms) weftCommDestroy(c);
}

TEST(CallCheck, MismatchedCollectivesFailOnEveryRank) {
  const int n = 3;
  std::vector<weftResult_t> result(n);
  std::vector<std::string> error(n);
  onRanks(n, [&](int r, weftComm_t comm) {
    std::vector<float> in(64, 1.0f + r), out(64, -1.0f);
    // A matching call first: it runs and is right.
    ASSERT_EQ(weftAllReduce(in.data(), out.data(), 64, weftFloat32, weftSum, comm, nullptr), weftSuccess);
    EXPECT_EQ(out[0], 6.0f);
    // Then rank 2 passes a different count.
    std::fill(out.begin(), out.end(), -1.0f);
    result[r] = weftAllReduce(in.data(), out.data(), r == 2 ? 63 : 64, weftFloat32, weftSum, comm, nullptr);
    error[r] = weftGetLastError(comm);
    EXPECT_EQ(out[0], -1.0f);  // nothing ran
  });
  for (int r = 0; r < n; r++) {
    EXPECT_EQ(result[r], weftInvalidUsage) << r;
    EXPECT_NE(error[r].find("rank 2 (its collective #1) calls AllReduce count 63"), std::string::npos) << error[r];
  }
}

}  // namespace
}  // namespace weft::test
