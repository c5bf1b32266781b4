// weft::peerTransports: the transport the registry chooses per peer, asked
// without connecting; what weft-doctor reports instead of parsing logs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "src/core/transport_query.h"
#include "weft/weft.h"

namespace weft {
namespace {

// Two thread ranks; `check` runs on each with its communicator.
template <class Check>
void withTwoRanks(Check check) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<std::vector<PeerTransport>> rows(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; r++)
    threads.emplace_back([&, r] {
      weftComm_t comm = nullptr;
      if (weftCommInitRank(&comm, 2, id, r) != weftSuccess) return;
      rows[size_t(r)] = peerTransports(comm);
      weftCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
  check(rows);
}

TEST(TransportQuery, SameHostPairIsSharedMemoryWithItsReason) {
  unsetenv("WEFT_SHM_DISABLE");
  withTwoRanks([](const std::vector<std::vector<PeerTransport>>& rows) {
    for (int r = 0; r < 2; r++) {
      ASSERT_EQ(rows[size_t(r)].size(), 1u) << "rank " << r;
      const PeerTransport& p = rows[size_t(r)][0];
      EXPECT_EQ(p.peer, 1 - r);
      EXPECT_EQ(p.transport, "SHM");
      EXPECT_EQ(p.why, "same host");
      EXPECT_TRUE(p.sameHost);
      EXPECT_FALSE(p.lastResort);
    }
  });
}

TEST(TransportQuery, SharedMemoryDisabledIsTheLastResortAndSaysWhy) {
  setenv("WEFT_SHM_DISABLE", "1", 1);
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  withTwoRanks([](const std::vector<std::vector<PeerTransport>>& rows) {
    ASSERT_EQ(rows[0].size(), 1u);
    const PeerTransport& p = rows[0][0];
    EXPECT_EQ(p.transport, "Socket");
    EXPECT_TRUE(p.lastResort);
    EXPECT_TRUE(p.sameHost);
    EXPECT_NE(p.why.find("WEFT_SHM_DISABLE=1"), std::string::npos) << p.why;
  });
  unsetenv("WEFT_SHM_DISABLE");
}

TEST(TransportQuery, NoCommunicatorIsAnError) { EXPECT_ANY_THROW(peerTransports(nullptr)); }

}  // namespace
}  // namespace weft
