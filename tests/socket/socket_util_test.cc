#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "src/util/error.h"
#include "src/util/socket.h"
#include "transports/socket/socket_wire.h"

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

NetInterface iface(const char* name, const char* addr, int prefixLen) {
  NetInterface i;
  i.name = name;
  i.addr = SocketAddress::parse(std::string(addr).find(':') != std::string::npos && addr[0] != '['
                                    ? "[" + std::string(addr) + "]:1"
                                    : std::string(addr) + ":1",
                                "test");
  i.addr.setPort(0);
  i.prefixLen = prefixLen;
  return i;
}

TEST(SocketUtil, SubnetMatch) {
  SocketAddress root = SocketAddress::parse("10.77.0.1:29500", "test");
  EXPECT_TRUE(inSubnet(iface("a", "10.77.0.2", 24).addr, 24, root));
  EXPECT_FALSE(inSubnet(iface("a", "10.77.1.2", 24).addr, 24, root));
  EXPECT_TRUE(inSubnet(iface("a", "10.77.1.2", 16).addr, 16, root));
  EXPECT_TRUE(inSubnet(iface("a", "10.77.0.130", 25).addr, 25, SocketAddress::parse("10.77.0.200:1", "t")));
  EXPECT_FALSE(inSubnet(iface("a", "10.77.0.130", 25).addr, 25, root));
  EXPECT_FALSE(inSubnet(iface("a", "10.77.0.2", -1).addr, -1, root));  // netmask unknown
  EXPECT_TRUE(inSubnet(iface("a", "fd00:77::2", 64).addr, 64, SocketAddress::parse("[fd00:77::1]:1", "t")));
  EXPECT_FALSE(inSubnet(iface("a", "fd00:78::2", 64).addr, 64, SocketAddress::parse("[fd00:77::1]:1", "t")));
  EXPECT_FALSE(inSubnet(iface("a", "fd00:77::2", 64).addr, 64, root));  // other family
}

// A host whose first interface is a management network the other hosts
// cannot reach: with WEFT_COMM_ID the ranks must use the root's network, or
// they advertise addresses nobody can connect to (found with network
// namespaces, tests/multihost: init then hung until WEFT_TIMEOUT_MS).
TEST(SocketUtil, PrefersTheInterfaceOnTheRootsSubnet) {
  std::vector<NetInterface> all = {iface("lo", "127.0.0.1", 8), iface("mgmt0", "10.77.100.1", 24),
                                   iface("fabric0", "10.77.0.2", 24), iface("lo", "::1", 128)};
  SocketAddress root = SocketAddress::parse("10.77.0.1:29500", "test");
  EXPECT_EQ(pickInterface(all, nullptr, &root).name, "fabric0");
  // No root, or a root in no local subnet (routed): the first non-loopback.
  EXPECT_EQ(pickInterface(all, nullptr, nullptr).name, "mgmt0");
  SocketAddress far = SocketAddress::parse("192.0.2.1:1", "test");
  EXPECT_EQ(pickInterface(all, nullptr, &far).name, "mgmt0");
  // WEFT_SOCKET_IFNAME still decides when set.
  std::string filter = "mgmt";
  EXPECT_EQ(pickInterface(all, &filter, &root).name, "mgmt0");
  // A loopback root means loopback, as before.
  SocketAddress lo = SocketAddress::parse("127.0.0.1:5000", "test");
  EXPECT_EQ(pickInterface(all, nullptr, &lo).name, "lo");
  EXPECT_TRUE(pickInterface(all, nullptr, &lo).addr.isLoopback());
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

// Bootstrap connections (dataSocket false) carry small messages sent back to
// back (a handshake proof, then a signed hello): without TCP_NODELAY the
// second waited for the delayed ACK of the first, 40 ms per connection.
TEST(SocketUtil, EveryConnectedSocketHasNagleOff) {
  SocketAddress lo = SocketAddress::parse("127.0.0.1:1", "test");
  lo.setPort(0);
  SocketAddress bound;
  Socket listener = listenOn(lo, &bound);
  for (bool dataSocket : {false, true}) {
    Socket client = connectTo(bound, Deadline::after(2000), StopFlags{}, dataSocket);
    Socket server = acceptFrom(listener, Deadline::after(2000), StopFlags{}, nullptr);
    ASSERT_TRUE(server.valid());
    for (int fd : {client.fd(), server.fd()}) {
      int v = 0;
      socklen_t len = sizeof(v);
      ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
      EXPECT_NE(v, 0) << (fd == client.fd() ? "connected" : "accepted") << " socket, dataSocket=" << dataSocket;
    }
  }
}

// The connect message from a receiving rank: a shared socket 0
// (reverse) leaves the address out only when there is no other socket to
// connect; any other flag value or a missing address is refused.
TEST(SocketConnectInfo, ReverseNeedsAnAddressUnlessSocketZeroIsAll) {
  using socket_wire::ConnectInfo;
  using socket_wire::connectInfoProblem;
  const SocketAddress addr = SocketAddress::parse("127.0.0.1:6000", "test");
  EXPECT_EQ(connectInfoProblem(ConnectInfo{addr, 2, 0, 0, 1}), "");
  EXPECT_EQ(connectInfoProblem(ConnectInfo{addr, 2, 1, 0, 1}), "");
  EXPECT_EQ(connectInfoProblem(ConnectInfo{SocketAddress(), 1, 1, 0, 0}), "");
  EXPECT_EQ(connectInfoProblem(ConnectInfo{SocketAddress(), 2, 1, 0, 0}), "no address");
  EXPECT_EQ(connectInfoProblem(ConnectInfo{SocketAddress(), 1, 0, 0, 0}), "no address");
  EXPECT_EQ(connectInfoProblem(ConnectInfo{addr, 1, 2, 0, 0}), "bad reverse flag 2");
  EXPECT_NE(connectInfoProblem(ConnectInfo{addr, 0, 1, 0, 0}), "");
}

}  // namespace
}  // namespace weft
