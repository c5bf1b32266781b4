// Writes the valid seeds of tests/fuzz/corpus/ from the real serialisers and
// structs (run once when a format changes; the files are committed):
//   fuzz_seed_writer <corpus dir>
// Targets whose seeds are plain text (topologies, tune files) get theirs
// from their writers too; hand-written regression inputs sit beside them.
#include <arpa/inet.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/cost_model.h"
#include "src/bootstrap/handshake.h"
#include "src/bootstrap/wire.h"
#include "src/core/tune_file.h"
#include "src/topology/comm_topo.h"
#include "transports/transport.h"
#include "src/util/settings.h"
#include "transports/ib/conn_info.h"
#include "transports/ib/ib_facts.h"
#include "transports/p2p/p2p_wire.h"
#include "transports/shm/shm_wire.h"
#include "transports/socket/socket_wire.h"

using namespace weft;

namespace {

std::string gDir;

struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& text(const std::string& s) {
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
};

void write(const std::string& target, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string dir = gDir + "/" + target;
  mkdir(dir.c_str(), 0755);
  std::ofstream f(dir + "/" + name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

SocketAddress loopback(uint16_t port) { return SocketAddress::parse("127.0.0.1:" + std::to_string(port), "seed"); }

void bootstrapSeeds() {
  using namespace bootstrap_wire;
  UniqueIdLayout id{kIdMagic, kVersion, 0, loopback(4242), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
  write("unique_id", "random_secret", Bytes().put(id).b);
  id.flags = kRootAtRank0;
  id.root = SocketAddress::parse("[::1]:29500", "seed");
  write("unique_id", "comm_id_v6", Bytes().put(id).b);

  write("bootstrap_wire", "root_hello", Bytes().put(uint8_t(0)).put(RootHello{kRootHelloMagic, kVersion, 1, 4, loopback(5000)}).b);
  Bytes reply;
  reply.put(uint8_t(1)).put(uint8_t(3)).put(uint8_t(1)).put(RootReply{kRootReplyMagic, kRootOk, 4, 0});
  for (int r = 0; r < 4; ++r) reply.put(loopback(static_cast<uint16_t>(5000 + r)));
  write("bootstrap_wire", "root_reply_ok", reply.b);
  write("bootstrap_wire", "root_reply_timeout",
        Bytes().put(uint8_t(1)).put(uint8_t(3)).put(uint8_t(0)).put(RootReply{kRootReplyMagic, kRootTimedOut, 4, 0}).b);
  write("bootstrap_wire", "peer_hello",
        Bytes().put(uint8_t(2)).put(uint8_t(3)).put(uint8_t(0)).put(PeerHello{kPeerHelloMagic, kVersion, 2, 4}).b);
  write("bootstrap_wire", "frame", Bytes().put(uint8_t(3)).put(FrameHeader{7, 64, {}}).b);

  // root_reply: nranks-1, rank, how (1: the root's table length, 2: signed,
  // 4: cut at the next 16 bits, 16: extra bytes after), the reply, the table.
  Bytes signedOk;
  signedOk.put(uint8_t(3)).put(uint8_t(1)).put(uint8_t(3)).put(RootReply{kRootReplyMagic, kRootOk, 4, 77});
  for (int r = 0; r < 4; ++r) signedOk.put(loopback(static_cast<uint16_t>(5000 + r)));
  write("root_reply", "signed_ok", signedOk.b);
  write("root_reply", "signed_timeout",
        Bytes().put(uint8_t(3)).put(uint8_t(2)).put(uint8_t(3)).put(RootReply{kRootReplyMagic, kRootTimedOut, 4, 0}).b);
  Bytes cut = signedOk;
  cut.b[2] = 3 | 4;
  cut.put(uint16_t(40));
  write("root_reply", "signed_ok_cut", cut.b);
}

void handshakeSeeds() {
  using namespace handshake;
  const Secret secret{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
  Challenge c{kChallengeMagic, kVersion, static_cast<uint32_t>(Purpose::kPeer), 0, {1, 2, 3}};
  Proof p{};
  write("handshake", "acceptor", Bytes().put(secret).put(uint8_t(0)).put(uint8_t(1)).put(c).put(p).b);
  Response r{kResponseMagic, kVersion, {4, 5, 6}, {}};
  write("handshake", "connector", Bytes().put(secret).put(uint8_t(1)).put(uint8_t(0)).put(r).b);
  Bytes hello;
  hello.put(secret).put(uint8_t(3)).put(Digest256{}).put(uint8_t(15)).put(uint8_t(0));
  for (int i = 0; i < 32; ++i) hello.put(uint8_t(i));
  write("handshake", "signed_hello", hello.b);
  hello.b[sizeof(Secret)] = 2;
  write("handshake", "unsigned_hello", hello.b);
}

void conninfoSeeds() {
  ib::ConnInfo info;
  info.role = ib::ConnRole::Receiver;
  info.mtu = 5;
  info.srcRank = 1;
  info.dstRank = 0;
  info.nQps = 2;
  info.qpn[0] = 0x101;
  info.qpn[1] = 0x102;
  info.psn = 0x123456;
  info.lid = 7;
  info.fifoAddr = 0x7f0000001000;
  info.fifoRkey = 0x55;
  info.nSlots = 8;
  info.slotBytes = 512 << 10;
  info.pkey = 0xffff;
  std::vector<uint8_t> wire = ib::encodeConnInfo(info);
  write("conninfo_ib", "receiver", wire);
  wire.push_back(0);  // one byte longer: the harness fixes the checksum
  write("conninfo_ib", "receiver_fixed_crc", wire);
  info.usable = 0;
  write("conninfo_ib", "unusable", ib::encodeConnInfo(info));

  using namespace socket_wire;
  write("conninfo_socket", "connect_info", Bytes().put(uint8_t(0)).put(ConnectInfo{loopback(6000), 4, 0, 0, 99}).b);
  write("conninfo_socket", "hello",
        Bytes().put(uint8_t(1)).put(uint8_t(3)).put(uint64_t(5)).put(uint64_t(99)).put(uint8_t(3))
            .put(SocketHello{kHelloMagic, kVersion, 3, 2, 5, 99}).b);
  write("conninfo_socket", "slot_part",
        Bytes().put(uint8_t(2)).put(uint32_t(512 << 10)).put(uint64_t(300000)).put(uint8_t(3)).b);

  shm_wire::ShmOffer shm;
  shm.bytes = 4096 + 8 * 65536;
  snprintf(shm.name, sizeof(shm.name), "/weft-fifo-1234-1");
  write("conninfo_shm", "other_process", Bytes().put(uint8_t(0)).put(uint32_t(shm.bytes)).put(shm).b);
  shm.sameProcess = 1;
  shm.token = 17;
  write("conninfo_shm", "same_process", Bytes().put(uint8_t(1)).put(uint32_t(shm.bytes)).put(shm).b);

  p2p_wire::P2pOfferFields p2p;
  p2p.bytes = 4096 + 8 * 65536;
  p2p.dataOffset = 4096;
  p2p.device = 1;
  write("conninfo_p2p", "offer",
        Bytes().put(uint8_t(0)).put(uint8_t(2)).put(uint32_t(p2p.bytes)).put(uint32_t(4096)).put(p2p).b);
}

void textSeeds() {
  const std::string tunePath = gDir + "/tune_file/defaults";
  mkdir((gDir + "/tune_file").c_str(), 0755);
  algo::CostInputs in;
  saveTuneFile(tunePath, in, "seed: the cost model's defaults");
  write("tune_file", "measured",
        Bytes().text("measured.nranks 4\nmeasured.nhosts 1\nmeasured.ring 1024 12.5\nmeasured.ring 65536 40\n"
                     "net_bandwidth_gbs 12.5 # comment\n").b);

  auto setting = [](uint8_t way, const char* name, const std::string& value) {
    const settings::Info* row = settings::find(name);
    Bytes b;
    b.put(way).put(uint8_t(row - settings::kTable)).text(value);
    return b.b;
  };
  write("settings", "algo", setting(0, "WEFT_ALGO", "ring,tree;allreduce:^oneshot"));
  write("settings", "proto", setting(0, "WEFT_PROTO", "^ll"));
  write("settings", "nslots", setting(1, "WEFT_NSLOTS", "16"));
  write("settings", "buffsize", setting(0, "WEFT_BUFFSIZE", "4MiB"));
  write("settings", "comm_id", setting(0, "WEFT_COMM_ID", "[::1]:29500"));
  write("settings", "hca", setting(0, "WEFT_IB_HCA", "^=mlx5_0:1,mlx5_1"));
  write("settings", "ifname", setting(1, "WEFT_SOCKET_IFNAME", "^docker,lo"));
  write("settings", "bool", setting(1, "WEFT_SHM_DISABLE", "yes"));
  write("settings", "gdr", setting(0, "WEFT_NET_GDR_LEVEL", "PHB"));
  write("settings", "signal", setting(0, "WEFT_DIAGNOSE_SIGNAL", "SIGUSR2"));
  write("settings", "file", setting(2, "WEFT_NSLOTS", "WEFT_NSLOTS = 4 # four\nWEFT_ALGO=ring\nbogus line\n"));

  auto argv = [](std::initializer_list<const char*> words) {
    Bytes b;
    for (const char* w : words) b.text(w).put(uint8_t(0));
    return b.b;
  };
  write("bench_flags", "sweep_factor", argv({"-b", "8", "-e", "128M", "-f", "2", "-t", "2"}));
  write("bench_flags", "sweep_step", argv({"--minbytes", "1K", "--maxbytes", "64K", "--stepbytes", "4K"}));
  write("bench_flags", "types_ops", argv({"-d", "all", "-o", "all", "-r", "all", "-n", "5", "-w", "2", "-c", "1"}));
  write("bench_flags", "misc", argv({"-z", "1", "-y", "0", "-a", "3", "-T", "30", "-J", "/tmp/x.json", "-G", "1"}));
  write("bench_flags", "help", argv({"-h"}));
}

// The stateful harnesses' inputs are op codes (see each *_fuzz.cc).
void statefulSeeds() {
  // bootstrap_root: two ranks of a 2-rank job; one rank alone; garbage then a rank.
  // Per connection: mode, then (signed hellos) how, rank, nranks - 1.
  write("bootstrap_root", "two_ranks", {1, 0, 0, 0, 1, 0, 0, 1, 1});
  write("bootstrap_root", "one_rank", {0, 0, 0, 0, 0});
  write("bootstrap_root", "garbage_then_rank", {1, 6, 4, 'a', 'b', 'c', 'd', 0, 0, 0, 0});
  write("bootstrap_root", "bad_nranks", {0, 0, 2, 0, 0, 0xff, 0xff, 0xff, 0x7f});
  write("bootstrap_root", "duplicate_rank", {2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1});
  // bootstrap_reader: a 2-rank job, rank 1 sends frames with tags 1 and 42.
  write("bootstrap_reader", "frames", {0, 0, 0, 0, 0, 3, 'a', 'b', 'c', 0, 1, 2, 4, 'w', 'x', 'y', 'z'});
  write("bootstrap_reader", "three_ranks", {1, 0, 0, 0, 0, 1, 'q', 1, 1, 0, 2, 2, 'r', 's'});
  write("bootstrap_reader", "goodbye", {0, 0, 0, 0, 5, 0});
  write("bootstrap_reader", "huge_header", {0, 0, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x10});
  // Queries (tag byte 250: the number, then the request), between frames;
  // in a 3-rank job, one from each harness rank.
  write("bootstrap_reader", "query", {0, 0, 0, 0, 250, 7, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c', 0, 1, 1, 2,
                                      'x', 'y', 0, 2, 250, 8, 0, 0, 0, 0, 0, 0, 0, 0});
  write("bootstrap_reader", "query_three_ranks", {1, 0, 0, 0, 250, 1, 0, 0, 0, 0, 0, 0, 0, 1, 'q', 1, 0, 0, 250, 2, 0,
                                                  0, 0, 0, 0, 0, 0, 1, 'r'});
  // socket_pump: 4 slots of 256 bytes, 2 sockets, inline on; slots of 100, 0 and 256 bytes.
  Bytes pump;
  pump.put(uint8_t(3)).put(uint8_t(3)).put(uint8_t(1)).put(uint8_t(1));
  pump.put(uint8_t(0)).put(uint16_t(100));
  for (int i = 0; i < 100; ++i) pump.put(uint8_t(i));
  pump.put(uint8_t(1)).put(uint16_t(0));
  pump.put(uint8_t(2)).put(uint16_t(256));
  for (int i = 0; i < 256; ++i) pump.put(uint8_t(255 - i));
  write("socket_pump", "slots", pump.b);
  write("socket_pump", "close_marker", {0, 0, 0, 0, 6});
  write("socket_pump", "bad_header", {1, 1, 0, 1, 5, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0});
}

// peer_info (tests/fuzz/peer_info_fuzz.cc): ranks, channels, whether the
// host's ranks send their own views; then the PeerInfo records, each rank's
// topology node (the target's host: gpu0..3 are nodes 2, 3, 7, 8; cpu0 is
// 0, nic0 4) and the ring views.
std::vector<uint8_t> peerInfoSeed(int channels, bool ownViews, const std::vector<uint64_t>& hosts,
                                  const std::vector<int32_t>& devices, const std::vector<topo::HostRingView>& views,
                                  const algo::CostInputs& costs = algo::CostInputs{}) {
  Bytes b;
  b.put(uint8_t(hosts.size() - 1)).put(uint8_t(channels - 1)).put(uint8_t(ownViews));
  for (size_t r = 0; r < hosts.size(); ++r) {
    PeerInfo p;
    p.rank = int32_t(r);
    p.pid = 1000 + int32_t(r);
    p.hostHash = hosts[r];
    p.processHash = hosts[r] * 31 + r;
    p.cudaDev = int32_t(r % 4);
    snprintf(p.bellShmName, sizeof p.bellShmName, "/weft-bell-%016llx", 0x1234abcdULL + r);
    snprintf(p.hostname, sizeof p.hostname, "box%llu", static_cast<unsigned long long>(hosts[r]));
    p.transportFacts[0][0] = 1;  // IbFacts: usable, staged, RoCE
    p.transportFacts[0][8] = 2;
    b.put(p);
  }
  for (int32_t d : devices) b.put(d);
  for (size_t r = 0; r < hosts.size(); ++r) b.put(r < views.size() ? views[r] : topo::HostRingView{});
  b.put(uint32_t(1 << 20));
  b.put(costs);
  return b.b;
}

void peerInfoSeeds() {
  write("peer_info", "one_host", peerInfoSeed(2, true, {7, 7}, {2, 3}, {}));
  write("peer_info", "two_hosts", peerInfoSeed(4, true, {7, 7, 9, 9}, {2, 7, 2, 7}, {}));
  write("peer_info", "cpu_ranks", peerInfoSeed(1, true, {7, 7, 7}, {0, 0, 5}, {}));
  write("peer_info", "unknown_topology", peerInfoSeed(1, true, {7, 7}, {2, -1}, {}));
  // Values a peer could send that were used unchecked: a node past the
  // host's (read out of bounds by findPath), a NIC node, a path type past
  // toString's table.
  write("peer_info", "device_out_of_range", peerInfoSeed(2, true, {7, 7}, {2, 1 << 20}, {}));
  write("peer_info", "device_is_nic", peerInfoSeed(2, true, {7, 7}, {2, 4}, {}));
  // composeRings reads each host's first view: rank 1 is host 9's.
  std::vector<topo::HostRingView> views(2);
  views[0].bw[0] = views[1].bw[0] = 10.f;
  views[1].intraType = 100;
  write("peer_info", "path_type_out_of_range", peerInfoSeed(1, false, {7, 9}, {2, 3}, views));
  // Rank 0's cost inputs, which every rank adopts: a measured curve, and
  // one claiming more points than it holds (curveUs indexes by the count).
  algo::CostInputs costs;
  costs.measuredRanks = 2;
  costs.measuredHosts = 1;
  costs.calib[0].measured.add(1024, 10);
  costs.calib[0].measured.add(1 << 20, 200);
  write("peer_info", "measured_curve", peerInfoSeed(2, true, {7, 7}, {2, 3}, {}, costs));
  costs.calib[0].measured.nPoints = 1000;
  write("peer_info", "curve_points_out_of_range", peerInfoSeed(2, true, {7, 7}, {2, 3}, {}, costs));
  costs.calib[0].measured.nPoints = 2;
  costs.inter.bandwidthGBs = 0;
  write("peer_info", "zero_bandwidth", peerInfoSeed(2, true, {7, 7}, {2, 3}, {}, costs));
  // The ranks' hosts in rank order (CostInputs::hostRuns): a list of two
  // runs, and a count past the list's capacity.
  costs.inter.bandwidthGBs = 10;
  costs.nHostRuns = 2, costs.hostRuns[0] = 1, costs.hostRuns[1] = 1, costs.hostRunHost[1] = 1;
  write("peer_info", "host_runs", peerInfoSeed(2, true, {7, 9}, {2, 3}, {}, costs));
  costs.nHostRuns = algo::kMaxHostRuns + 1;
  write("peer_info", "host_runs_out_of_range", peerInfoSeed(2, true, {7, 9}, {2, 3}, {}, costs));
}

// ib_facts: the settings, the ports discovery found, two facts rows and two
// connection infos (ib_facts_fuzz.cc reads them in this order).
Bytes& shortText(Bytes& b, const std::string& s) { return b.put(uint8_t(s.size())).text(s); }

Bytes ibSettings(const std::string& hca, const std::string& family, const std::string& range, int forcedGid) {
  Bytes b;
  shortText(b, hca);
  shortText(b, family);
  shortText(b, range);
  b.put(uint8_t(0)).put(int16_t(forcedGid)).put(uint8_t(0));
  shortText(b, "PXB");
  return b;
}

void ibPort(Bytes& b, const std::string& dev, uint8_t linkCode, const std::vector<ib::Gid>& gids,
            const std::string& type) {
  shortText(b, dev);
  b.put(uint8_t(1)).put(uint8_t(4));  // port 1, IBV_PORT_ACTIVE
  shortText(b, "PORT_ACTIVE");
  b.put(linkCode).put(uint16_t(64)).put(uint8_t(2)).put(int16_t(16)).put(uint8_t(gids.size()));
  for (const ib::Gid& g : gids) {
    b.put(g);
    shortText(b, type);
  }
}

ib::ConnInfo ibEnd(ib::ConnRole role, int src, int dst, uint32_t qpn, uint8_t linkCode, const ib::Gid& gid) {
  ib::ConnInfo c;
  c.role = role;
  c.linkLayer = linkCode;
  c.mtu = 5;
  c.srcRank = src;
  c.dstRank = dst;
  c.nQps = 1;
  c.qpn[0] = qpn;
  c.gid = gid;
  c.gidType = 2;  // 1 + RoceV2
  c.subnetPrefix = ib::subnetPrefixOf(gid);
  c.pkey = 0xffff;
  c.nSlots = 8;
  c.slotBytes = 1 << 19;
  return c;
}

void ibFactsSeeds() {
  const ib::Gid v4{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  const ib::Gid v4b{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  const ib::Gid local{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  const ib::IbFacts usableRoce{1, 0, 2}, usableIb{1, 1, 1};
  for (uint8_t link : {uint8_t(1), uint8_t(2)}) {
    Bytes b = ibSettings(link == 2 ? "mlx5_0:1,mlx5_1" : "^mlx5_9", link == 2 ? "AF_INET" : "", link == 2 ? "10.0.0.0/8" : "", -1);
    b.put(uint8_t(1)).put(uint8_t(2));  // verbs loaded, two ports
    ibPort(b, "mlx5_0", link, {local, v4}, "RoCE v2");
    ibPort(b, "mlx5_1", link, {v4b}, "IB/RoCE v1\n");
    b.put(usableRoce).put(link == 2 ? usableRoce : usableIb).put(uint8_t(1));
    const ib::Gid& g = link == 2 ? v4 : local;
    const std::vector<uint8_t> mine = ib::encodeConnInfo(ibEnd(ib::ConnRole::Sender, 0, 1, 0x100, link, g));
    const std::vector<uint8_t> peer = ib::encodeConnInfo(ibEnd(ib::ConnRole::Receiver, 1, 0, 0x200, link,
                                                               link == 2 ? v4b : g));
    b.b.insert(b.b.end(), mine.begin(), mine.end());
    b.b.insert(b.b.end(), peer.begin(), peer.end());
    b.put(uint8_t(0));
    write("ib_facts", link == 2 ? "roce_pair" : "ib_pair", b.b);
  }
  Bytes forced = ibSettings("=mlx5_0", "ipv6", "fe80::/10", 1);
  forced.put(uint8_t(1)).put(uint8_t(1));
  ibPort(forced, "mlx5_0", 2, {local, v4}, "RoCE v2");
  write("ib_facts", "forced_gid_index", forced.b);
}

// ib_discovery: the settings, whether ibv_query_gid_ex exists, then each
// verbs call's answer in the order discovery asks (ib_discovery_fuzz.cc).
struct DiscoveryPort {
  uint8_t state;  // 4: IBV_PORT_ACTIVE
  uint8_t link;   // 1 InfiniBand, 2 Ethernet
  std::vector<std::pair<ib::Gid, uint32_t>> gids;  // GID and ibv_gid_entry's gid_type, by index
};

void discoveryDevice(Bytes& b, const std::string& name, const std::vector<DiscoveryPort>& ports, bool gidEx) {
  b.put(uint8_t(0));  // a name
  shortText(b, name);
  b.put(uint8_t(0)).put(uint8_t(0)).put(uint8_t(ports.size()));  // opened, queried, phys_port_cnt
  for (const DiscoveryPort& p : ports) {
    b.put(uint8_t(0)).put(p.state).put(p.link).put(uint8_t(64)).put(uint8_t(2)).put(int32_t(p.gids.size()));
    b.put(uint8_t(0));
    shortText(b, p.state == 4 ? "PORT_ACTIVE" : "PORT_DOWN");
    if (p.state != 4) continue;
    for (const auto& [gid, type] : p.gids) {
      b.put(uint8_t(0)).put(gid);
      if (gidEx && !ib::gidIsZero(gid)) b.put(uint8_t(0)).put(type);
    }
  }
}

void ibDiscoverySeeds() {
  const ib::Gid local{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  const ib::Gid v4{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  const ib::Gid zero{};
  auto twoDevices = [&](bool gidEx) {
    Bytes b = ibSettings(gidEx ? "mlx5_0,mlx5_1" : "", gidEx ? "AF_INET" : "", "", -1);
    b.put(uint8_t(gidEx)).put(uint8_t(2));  // two devices
    discoveryDevice(b, "mlx5_0", {{4, 2, {{local, 1}, {local, 2}, {v4, 1}, {v4, 2}}}}, gidEx);
    discoveryDevice(b, "mlx5_1", {{4, 1, {{local, 0}, {zero, 0}}}, {1, 2, {}}}, gidEx);
    return b;
  };
  for (bool gidEx : {true, false}) write("ib_discovery", gidEx ? "roce_and_ib_gid_ex" : "roce_and_ib_sysfs", twoDevices(gidEx).b);
  // Then the connection's query of the chosen port (queryOpenedPort):
  // ibv_query_pkey present, the port active with two partition keys
  // (WEFT_IB_PKEY index 1), lid 5, MTU 1024; key 0x8001, the GID.
  Bytes up = twoDevices(true);
  up.put(uint8_t(1)).put(uint8_t(1));
  up.put(uint8_t(0)).put(uint8_t(4)).put(uint16_t(2)).put(uint16_t(5)).put(uint8_t(3));
  up.put(uint8_t(0)).put(uint16_t(htons(0x8001)));
  up.put(uint8_t(0)).put(v4);
  write("ib_discovery", "port_active_at_connect", up.b);
  // The port went down since discovery, and the library has no text for
  // its state (null).
  Bytes down = twoDevices(true);
  down.put(uint8_t(0)).put(uint8_t(0));
  down.put(uint8_t(0)).put(uint8_t(1)).put(uint16_t(2)).put(uint16_t(5)).put(uint8_t(3));
  down.put(uint8_t(0xff));
  write("ib_discovery", "port_down_at_connect_no_state_text", down.b);
  // A library that lists more devices than it holds, a device without a
  // name, one that cannot be opened and one whose query fails.
  Bytes odd = ibSettings("", "", "", 3);
  odd.put(uint8_t(1)).put(uint8_t(0x40 | 3)).put(uint8_t(7));
  odd.put(uint8_t(0xff));                                                 // no name
  odd.put(uint8_t(0)).put(uint8_t(5)).text("mlx4_").put(uint8_t(1));      // cannot be opened
  odd.put(uint8_t(0)).put(uint8_t(6)).text("mlx5_9").put(uint8_t(0)).put(uint8_t(0xf5)).put(uint8_t(1));
  write("ib_discovery", "count_beyond_list", odd.b);
  Bytes none = ibSettings("", "", "", -1);
  none.put(uint8_t(1)).put(uint8_t(0xff));  // no device list
  write("ib_discovery", "no_device_list", none.b);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  gDir = argv[1];
  mkdir(gDir.c_str(), 0755);
  bootstrapSeeds();
  handshakeSeeds();
  conninfoSeeds();
  textSeeds();
  statefulSeeds();
  peerInfoSeeds();
  ibFactsSeeds();
  ibDiscoverySeeds();
  return 0;
}
