// weft-doctor without a cluster: counters read from recorded sysfs trees
// (sysfs/: a bond whose traffic all lands on one member, RoCE congestion
// counters that move, a host whose NIC firmware differs), the findings of
// one run, and the comparison with a baseline and its verdict.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tools/weft-doctor/analyze.h"
#include "tools/weft-doctor/compare.h"
#include "tools/weft-doctor/counters.h"
#include "tools/weft-doctor/options.h"
#include "tools/weft-doctor/result.h"

namespace weft::doctor {
namespace {

const std::string kTrees = WEFT_DOCTOR_TREES;

bool mentions(const std::vector<Finding>& fs, const std::string& kind, const std::string& text) {
  for (const Finding& f : fs)
    if (f.kind == kind && f.text.find(text) != std::string::npos) return true;
  return false;
}

std::string all(const std::vector<Finding>& fs) {
  std::string s;
  for (const Finding& f : fs) s += f.kind + ": " + f.text + "\n";
  return s;
}

// Three hosts of two ranks; transports, links and a sweep as a healthy run has them.
Result cluster() {
  Result r;
  r.weftVersion = 100;
  r.date = "2026-12-01T00:00:00Z";
  r.nranks = 6;
  for (int h = 0; h < 3; h++) r.hosts.push_back({"host" + std::to_string(h), "node", {2 * h, 2 * h + 1}});
  for (int k = 0; k < 6; k++) r.ranks.push_back({k, k / 2, "eth0", 100 + k});
  for (int a = 0; a < 6; a++)
    for (int b = a + 1; b < 6; b++) {
      const bool same = a / 2 == b / 2;
      r.transports.push_back({a, b, same ? "SHM" : "IB", same ? "same host" : "hosts differ, IB on both ends", same,
                              false});
    }
  for (int f = 0; f < 3; f++)
    for (int t = 0; t < 3; t++) r.links.push_back({f, t, f == t ? 20.0 : 10.0, f == t ? 1.0 : 5.0});
  r.sweep = {{"allreduce", 1 << 20, 300, 5.0}, {"allgather", 1 << 20, 200, 4.0}};
  r.counters.resize(3);
  return r;
}

Link& link(Result& r, int from, int to) {
  for (Link& l : r.links)
    if (l.from == from && l.to == to) return l;
  throw std::runtime_error("no link");
}

TEST(DoctorCounters, ReadsNetStatisticsBondsAndDrivers) {
  const SysfsSnapshot s = readSysfs(kTrees + "/bond/before");
  EXPECT_EQ(s.problem, "");
  EXPECT_EQ(s.values.at("net/eth0/rx_bytes"), 1000u);
  ASSERT_EQ(s.bonds.count("bond0"), 1u);
  EXPECT_EQ(s.bonds.at("bond0"), (std::vector<std::string>{"eth0", "eth1"}));
  bool sawEth0 = false;
  for (const Nic& n : s.nics)
    if (n.name == "eth0") {
      sawEth0 = true;
      EXPECT_EQ(n.driver, "ixgbe");
      EXPECT_EQ(n.driverVersion, "5.19.6");
    }
  EXPECT_TRUE(sawEth0);
}

TEST(DoctorCounters, MissingTreeIsAProblemNotACrash) {
  const SysfsSnapshot s = readSysfs(kTrees + "/no-such-tree");
  EXPECT_NE(s.problem, "");
  EXPECT_TRUE(s.values.empty());
}

TEST(DoctorCounters, NamesABondWhoseTrafficAllLandsOnOneMember) {
  Result r = cluster();
  r.counters[1] = combineSnapshots(readSysfs(kTrees + "/bond/before"), readSysfs(kTrees + "/bond/after"));
  const auto fs = counterFindings(r);
  EXPECT_TRUE(mentions(fs, "bond", "host1: bond bond0")) << all(fs);
  EXPECT_TRUE(mentions(fs, "bond", "on eth0")) << all(fs);
  // A bond that split its traffic is not named.
  r.counters[1].after["net/eth1/tx_bytes"] += 512u << 20;
  r.counters[1].after["net/eth1/rx_bytes"] += 512u << 20;
  EXPECT_FALSE(mentions(counterFindings(r), "bond", "bond0")) << all(counterFindings(r));
}

TEST(DoctorCounters, NamesRdmaCongestionCountersThatMoved) {
  const SysfsSnapshot before = readSysfs(kTrees + "/roce/before"), after = readSysfs(kTrees + "/roce/after");
  EXPECT_EQ(after.values.at("rdma/mlx5_0/1/hw_counters/np_ecn_marked_roce_packets"), 1205u);
  Result r = cluster();
  r.counters[2] = combineSnapshots(before, after);
  const auto fs = counterFindings(r);
  ASSERT_TRUE(mentions(fs, "rdma_counter", "host2: mlx5_0 port 1")) << all(fs);
  for (const char* moved : {"np_ecn_marked_roce_packets +1200", "np_cnp_sent +40", "rp_cnp_handled +40",
                            "out_of_sequence +7", "roce_adp_retrans_to +100"})
    EXPECT_TRUE(mentions(fs, "rdma_counter", moved)) << moved << "\n" << all(fs);
  // Counters that did not move, and traffic counters, are not trouble.
  EXPECT_FALSE(mentions(fs, "rdma_counter", "local_ack_timeout_err")) << all(fs);
  EXPECT_FALSE(mentions(fs, "rdma_counter", "port_xmit_data")) << all(fs);
  EXPECT_TRUE(isTroubleCounter("net/eth0/rx_dropped"));
  EXPECT_FALSE(isTroubleCounter("net/eth0/rx_bytes"));
}

TEST(DoctorCounters, NamesTheHostWhoseFirmwareDiffers) {
  Result r = cluster();
  for (int h = 0; h < 3; h++) {
    const SysfsSnapshot s = readSysfs(kTrees + "/fw/host" + std::to_string(h));
    r.counters[size_t(h)] = combineSnapshots(s, s);
  }
  const auto fs = counterFindings(r);
  EXPECT_TRUE(mentions(fs, "firmware", "host2: mlx5_0 firmware 22.36.1010, the other hosts have 22.39.1002")) << all(fs);
  EXPECT_FALSE(mentions(fs, "firmware", "host0")) << all(fs);
  EXPECT_FALSE(mentions(fs, "driver", "mlx5_0")) << all(fs);  // same driver and version everywhere
}

TEST(DoctorAnalysis, NamesSameHostPairsOffSharedMemoryAndTcpHosts) {
  Result r = cluster();
  EXPECT_TRUE(transportFindings(r).empty()) << all(transportFindings(r));
  for (PairTransport& t : r.transports) {
    if (t.a == 2 && t.b == 3) t = {2, 3, "Socket", "WEFT_SHM_DISABLE=1", true, true};
    if (!t.sameHost && (t.a / 2 == 2 || t.b / 2 == 2)) {
      t.transport = "Socket";
      t.lastResort = true;
      t.why = t.b / 2 == 2 ? "hosts differ, no usable IB on rank " + std::to_string(t.b) : "no usable IB on this rank";
    }
  }
  const auto fs = transportFindings(r);
  EXPECT_TRUE(mentions(fs, "transport", "host1: 1 same-host rank pair(s) use Socket, not shared memory")) << all(fs);
  EXPECT_TRUE(mentions(fs, "transport", "host2: falls back to TCP")) << all(fs);
  EXPECT_FALSE(mentions(fs, "transport", "host0")) << all(fs);
}

TEST(DoctorAnalysis, ACLusterWithoutRdmaIsOneLineNotEveryHost) {
  Result r = cluster();
  for (PairTransport& t : r.transports)
    if (!t.sameHost) t = {t.a, t.b, "Socket", "hosts differ, no usable IB on this rank: no IB device", false, true};
  const auto fs = transportFindings(r);
  ASSERT_EQ(fs.size(), 1u) << all(fs);
  EXPECT_TRUE(mentions(fs, "transport", "12 of 12 inter-host rank pairs use TCP (Socket), none RDMA")) << all(fs);
}

TEST(DoctorAnalysis, NamesSlowAndAsymmetricLinks) {
  Result r = cluster();
  EXPECT_TRUE(linkFindings(r).empty()) << all(linkFindings(r));
  link(r, 1, 2).gbps = 2;
  const auto fs = linkFindings(r);
  EXPECT_TRUE(mentions(fs, "slow_link", "link host1 -> host2: 2.000 GB/s")) << all(fs);
  EXPECT_TRUE(mentions(fs, "asymmetric_link", "slow way: host1 -> host2")) << all(fs);
  EXPECT_FALSE(mentions(fs, "slow_link", "host2 -> host1")) << all(fs);
}

TEST(DoctorRounds, EveryHostPairOnceNoHostTwiceInARound) {
  for (int n = 1; n <= 9; n++) {
    std::set<std::pair<int, int>> seen;
    const auto rounds = pairRounds(n);
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (auto [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second) << n << " hosts: a host twice in a round";
        EXPECT_TRUE(seen.insert({a, b}).second);
      }
    }
    EXPECT_EQ(int(seen.size()), n * (n - 1) / 2) << n << " hosts";
    EXPECT_LE(int(rounds.size()), n % 2 ? n : n - 1);
  }
}

TEST(DoctorBaseline, SameRunPassesAndJsonRoundTrips) {
  Result r = cluster();
  r.counters[0] = combineSnapshots(readSysfs(kTrees + "/roce/before"), readSysfs(kTrees + "/roce/after"));
  Result back;
  std::string error;
  ASSERT_TRUE(fromJson(toJson(r), &back, &error)) << error;
  EXPECT_EQ(back.links.size(), r.links.size());
  EXPECT_EQ(counterDeltas(back.counters[0]), counterDeltas(r.counters[0]));
  const Verdict v = compareWithBaseline(back, r, {});
  EXPECT_FALSE(v.refused) << v.refusal;
  EXPECT_TRUE(v.regressions.empty()) << all(v.regressions);
  EXPECT_GT(v.compared, 0);
  EXPECT_NE(verdictText(v, back, "b.json", {}).find("verdict: OK"), std::string::npos);
}

TEST(DoctorBaseline, VerdictNamesTheRegressedLinkHostAndSize) {
  const Result base = cluster();
  Result now = cluster();
  link(now, 1, 2).gbps = 3;            // -70%
  link(now, 0, 1).gbps = 9;            // -10%: within the tolerance
  link(now, 2, 0).latUs = 50;          // +45 us
  now.sweep[0].busGbps = 2.5;          // AllReduce 1 MiB -50%
  for (PairTransport& t : now.transports)
    if (t.a == 0 && t.b == 1) t = {0, 1, "Socket", "WEFT_SHM_DISABLE=1", true, true};
  const Verdict v = compareWithBaseline(base, now, {});
  ASSERT_FALSE(v.refused);
  EXPECT_TRUE(mentions(v.regressions, "link_bandwidth", "link host1 -> host2: 3.000 GB/s, baseline 10.000")) << all(v.regressions);
  EXPECT_FALSE(mentions(v.regressions, "link_bandwidth", "host0 -> host1")) << all(v.regressions);
  EXPECT_TRUE(mentions(v.regressions, "link_latency", "host2 -> host0")) << all(v.regressions);
  EXPECT_TRUE(mentions(v.regressions, "sweep", "AllReduce 1 MiB")) << all(v.regressions);
  EXPECT_TRUE(mentions(v.regressions, "transport", "host0: 1 rank pair(s) now use Socket, baseline SHM")) << all(v.regressions);
  EXPECT_EQ(v.regressions.size(), 4u) << all(v.regressions);
  const std::string text = verdictText(v, base, "b.json", {});
  EXPECT_NE(text.find("verdict: REGRESSED: 4 regression(s) beyond 20%"), std::string::npos) << text;
  // At 80% the bandwidth drops are within the tolerance; the transport
  // change and the 45 us of latency are not.
  CompareOptions loose;
  loose.tolerance = 0.8;
  EXPECT_EQ(compareWithBaseline(base, now, loose).regressions.size(), 2u);
}

TEST(DoctorBaseline, RefusesAnotherClusterLayoutVersionOrFormat) {
  const Result now = cluster();
  Result other = cluster();
  other.hosts[2].name = "host9";
  Verdict v = compareWithBaseline(other, now, {});
  EXPECT_TRUE(v.refused);
  EXPECT_NE(v.refusal.find("another cluster"), std::string::npos) << v.refusal;
  EXPECT_NE(v.refusal.find("host9"), std::string::npos) << v.refusal;
  other = cluster();
  other.hosts[0].ranks = {0};
  other.hosts[1].ranks = {1, 2, 3};
  EXPECT_TRUE(compareWithBaseline(other, now, {}).refused);
  other = cluster();
  other.weftVersion = 200;
  v = compareWithBaseline(other, now, {});
  EXPECT_TRUE(v.refused);
  EXPECT_NE(v.refusal.find("weft 0.2.0, this is weft 0.1.0"), std::string::npos) << v.refusal;
  Result future;
  std::string error;
  ASSERT_TRUE(fromJson(R"({"format": "weft-doctor-9", "weft_version": 100, "whatever": 1})", &future, &error)) << error;
  v = compareWithBaseline(future, now, {});
  EXPECT_TRUE(v.refused);
  EXPECT_NE(v.refusal.find("format weft-doctor-9"), std::string::npos) << v.refusal;
  EXPECT_NE(verdictText(v, future, "old.json", {}).find("NOT COMPARED: baseline old.json refused"), std::string::npos);
}

TEST(DoctorBaseline, MalformedFilesAreErrorsNotCrashes) {
  Result r;
  std::string error;
  EXPECT_FALSE(fromJson("{not json", &r, &error));
  EXPECT_FALSE(fromJson(R"({"format": "weft-tests-1"})", &r, &error));
  EXPECT_NE(error.find("not a weft-doctor result"), std::string::npos) << error;
  EXPECT_FALSE(fromJson(R"({"format": "weft-doctor-1", "weft_version": 100, "nranks": 1, "hosts": 3})", &r, &error));
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
  EXPECT_FALSE(readResultFile("/nonexistent/b.json", &r, &error));
}

TEST(DoctorOptions, ParsesAndRefuses) {
  const char* good[] = {"weft-doctor", "-t", "4", "--sizes", "64K,1M", "--tolerance", "0.3", "--strict"};
  ParsedOptions p = parseOptions(8, const_cast<char**>(good));
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.options.threads, 4);
  EXPECT_EQ(p.options.sizes, (std::vector<size_t>{64 << 10, 1 << 20}));
  EXPECT_DOUBLE_EQ(p.options.tolerance, 0.3);
  EXPECT_TRUE(p.options.strict);
  for (std::vector<const char*> bad : {std::vector<const char*>{"x", "--tolerance", "1.5"}, {"x", "--sizes", "1M,,2"},
                                       {"x", "-t", "0"}, {"x", "--bogus", "1"}, {"x", "--baseline"}}) {
    p = parseOptions(int(bad.size()), const_cast<char**>(bad.data()));
    EXPECT_NE(p.error, "") << bad[1];
  }
}

}  // namespace
}  // namespace weft::doctor
