#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "src/util/error.h"
#include "src/util/socket.h"

namespace weft {
namespace {

TEST(SocketUtil, InterfaceFilterSyntax) {
  EXPECT_TRUE(interfaceMatches("eth", "eth0"));
  EXPECT_TRUE(interfaceMatches("ib,eth", "eth1"));
  EXPECT_FALSE(interfaceMatches("ib,eth", "lo"));
  EXPECT_FALSE(interfaceMatches("^docker,lo", "docker0"));
  EXPECT_FALSE(interfaceMatches("^docker,lo", "lo"));
  EXPECT_TRUE(interfaceMatches("^docker,lo", "eth0"));
  EXPECT_TRUE(interfaceMatches("=eth0", "eth0"));
  EXPECT_FALSE(interfaceMatches("=eth0", "eth01"));
  EXPECT_TRUE(interfaceMatches("^=eth0", "eth01"));
  EXPECT_FALSE(interfaceMatches("^=eth0", "eth0"));
}

TEST(SocketUtil, ChoosesLoopbackWhenAsked) {
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  NetInterface nic = chooseInterface();
  EXPECT_EQ(nic.name, "lo");
  EXPECT_TRUE(nic.addr.isLoopback());
  setenv("WEFT_SOCKET_IFNAME", "=no-such-interface", 1);
  EXPECT_THROW(chooseInterface(), Error);
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
}

TEST(SocketUtil, AddressParseAndPrint) {
  SocketAddress a = SocketAddress::parse("127.0.0.1:4242", "test");
  EXPECT_EQ(a.str(), "127.0.0.1:4242");
  EXPECT_EQ(a.port(), 4242);
  SocketAddress b = SocketAddress::parse("[::1]:80", "test");
  EXPECT_EQ(b.str(), "[::1]:80");
  EXPECT_TRUE(b.isLoopback());
  EXPECT_THROW(SocketAddress::parse("127.0.0.1", "test"), Error);
  EXPECT_THROW(SocketAddress::parse("127.0.0.1:99999", "test"), Error);
  EXPECT_THROW(SocketAddress::parse("host:80", "test"), Error);
}

struct Pair {
  Socket client, server;
};

Pair connectedPair() {
  SocketAddress lo = SocketAddress::parse("127.0.0.1:1", "test");
  lo.setPort(0);
  SocketAddress bound;
  Socket listener = listenOn(lo, &bound);
  Pair p;
  p.client = connectTo(bound, Deadline::after(2000), StopFlags{}, true);
  p.server = acceptFrom(listener, Deadline::after(2000), StopFlags{}, nullptr);
  EXPECT_TRUE(p.server.valid());
  return p;
}

TEST(SocketUtil, RecvHonoursDeadlineAbortAndEof) {
  Pair p = connectedPair();
  char buf[16];
  auto t0 = std::chrono::steady_clock::now();
  try {
    recvAll(p.server.fd(), buf, sizeof(buf), Deadline::after(100), StopFlags{}, "test peer");
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftTimeout);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));

  std::atomic<bool> abortFlag{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    abortFlag.store(true);
  });
  try {
    recvAll(p.server.fd(), buf, sizeof(buf), noDeadline(), StopFlags{&abortFlag, nullptr}, "test peer");
    ADD_FAILURE() << "abort ignored";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftRemoteError);
  }
  aborter.join();

  sendAll(p.client.fd(), "hello", 5, Deadline::after(1000), StopFlags{}, "test peer");
  p.client.close();
  char got[5];
  recvAll(p.server.fd(), got, 5, Deadline::after(1000), StopFlags{}, "test peer");
  EXPECT_EQ(std::string(got, 5), "hello");
  try {
    recvAll(p.server.fd(), buf, 1, Deadline::after(1000), StopFlags{}, "test peer");
    ADD_FAILURE() << "EOF not reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftRemoteError);
  }
}

TEST(SocketUtil, ConnectToClosedPortTimesOut) {
  SocketAddress lo = SocketAddress::parse("127.0.0.1:1", "test");
  lo.setPort(0);
  SocketAddress bound;
  { Socket l = listenOn(lo, &bound); }  // the port is now closed
  try {
    connectTo(bound, Deadline::after(150), StopFlags{}, false);
    ADD_FAILURE() << "connected to a closed port";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftTimeout);
  }
}

}  // namespace
}  // namespace weft
