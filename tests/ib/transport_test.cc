// The transport object's behaviour when IB cannot be used: the facts it
// publishes say so, canConnect says why (so the core can fall back and log
// it), connecting anyway is refused with that reason, and a malformed
// setting is named in the reason and is an error when connecting.
#include <gtest/gtest.h>

#include <cstdlib>

#include "src/util/error.h"
#include "transports/ib/ib_transport.h"

namespace {

struct TwoRanks {
  std::vector<weft::PeerInfo> peers = std::vector<weft::PeerInfo>(2);
  weft::ConnectContext ctx;
  TwoRanks() {
    peers[0].rank = 0;
    peers[1].rank = 1;
    std::snprintf(peers[1].hostname, sizeof peers[1].hostname, "host-b");
    ctx.rank = 0;
    ctx.nranks = 2;
    ctx.peers = &peers;
  }
};

}  // namespace

TEST(IbTransport, DisabledSaysWhyAndRefusesToConnect) {
  setenv("WEFT_IB_DISABLE", "1", 1);
  TwoRanks t;
  auto ib = weft::makeIbTransport();
  EXPECT_STREQ(ib->name(), "IB");
  ib->publishFacts(weft::TransportInit{0, -1, 2}, t.peers[0]);
  EXPECT_EQ(weft::readFacts<weft::ib::IbFacts>(t.peers[0], 2).usable, 0);
  EXPECT_EQ(weft::readFacts<weft::ib::IbFacts>(t.peers[0], 2).gdrMode, 0);
  std::string why;
  EXPECT_FALSE(ib->canConnect(t.ctx, 1, &why));
  EXPECT_NE(why.find("WEFT_IB_DISABLE"), std::string::npos) << why;
  EXPECT_NE(weft::ibUnusableReason().find("WEFT_IB_DISABLE"), std::string::npos);
  try {
    ib->connectSend(t.ctx, 1, 42);
    FAIL() << "connected without IB";
  } catch (const weft::Error& e) {
    EXPECT_EQ(e.code(), weftInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("WEFT_IB_DISABLE"), std::string::npos) << e.what();
  }
  unsetenv("WEFT_IB_DISABLE");
}

TEST(IbTransport, MalformedSettingIsNamedAndAnErrorWhenConnecting) {
  setenv("WEFT_IB_HCA", "mlx5_0:x", 1);
  TwoRanks t;
  auto ib = weft::makeIbTransport();
  ib->publishFacts(weft::TransportInit{0, -1, 0}, t.peers[0]);
  std::string why;
  EXPECT_FALSE(ib->canConnect(t.ctx, 1, &why));
  EXPECT_NE(why.find("WEFT_IB_HCA"), std::string::npos) << why;
  try {
    ib->connectSend(t.ctx, 1, 42);
    ADD_FAILURE() << "accepted WEFT_IB_HCA=mlx5_0:x";
  } catch (const weft::Error& e) {
    EXPECT_EQ(e.code(), weftInvalidArgument);
  }
  unsetenv("WEFT_IB_HCA");
  setenv("WEFT_IB_TIMEOUT", "0", 1);
  EXPECT_NE(weft::ibUnusableReason().find("WEFT_IB_TIMEOUT"), std::string::npos);
  unsetenv("WEFT_IB_TIMEOUT");
}

TEST(IbTransport, ReasonOnThisMachineIsNotEmptyWithoutAnActivePort) {
  // Here (CI, no HCA) the reason must name what is missing; on a machine
  // with an active port it is empty and the runtime test runs instead.
  std::string why = weft::ibUnusableReason();
  if (why.empty()) GTEST_SKIP() << "this machine has a usable IB/RoCE port";
  EXPECT_TRUE(why.find("no IB") != std::string::npos || why.find("port down") != std::string::npos ||
              why.find("GID not found") != std::string::npos || why.find("filtered") != std::string::npos)
      << why;
}
