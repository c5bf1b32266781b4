// WEFT_TRACE_FILE with ranks as separate processes: one valid trace-event
// JSON file per rank with the calls made and their steps; the ring's bound
// and its dropped count; an unwritable path (a WARN, correct results); a
// fatal signal still leaves a file; weft-trace-merge merges real files.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/process/process_ranks.h"

namespace weft::test {
namespace {

using nlohmann::json;

// A fresh directory per test, removed afterwards.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/weft-trace-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

ChildEnv traceEnv(const std::string& file, const char* maxEvents = "") {
  ChildEnv e;
  e.vars["WEFT_BUFFSIZE"] = "65536";
  e.vars["WEFT_TIMEOUT_MS"] = "30000";
  e.vars["WEFT_SOCKET_IFNAME"] = "lo";
  e.vars["WEFT_TRACE_FILE"] = file;
  e.vars["WEFT_TRACE_MAX_EVENTS"] = maxEvents;
  return e;
}

json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json();
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

constexpr size_t kCount = 20000;  // 80 KB of float32: several slots per step

// AllReduce (sum of rank+1 over ranks), AllGather, Broadcast and a ring
// send/recv; 0 when every result is right.
int runCalls(weftComm_t comm, int rank, int n) {
  std::vector<float> a(kCount, float(rank + 1)), b(kCount * n);
  if (weftAllReduce(a.data(), b.data(), kCount, weftFloat32, weftSum, comm, nullptr) != weftSuccess) return 10;
  for (size_t i = 0; i < kCount; i++)
    if (b[i] != float(n * (n + 1) / 2)) return 11;
  if (weftAllGather(a.data(), b.data(), kCount, weftFloat32, comm, nullptr) != weftSuccess) return 12;
  for (int r = 0; r < n; r++)
    if (b[r * kCount] != float(r + 1)) return 13;
  if (weftBroadcast(a.data(), b.data(), 1000, weftInt32, 0, comm, nullptr) != weftSuccess) return 14;
  std::vector<char> out(777, char(rank)), in(777);
  weftGroupStart();
  weftSend(out.data(), out.size(), weftUint8, (rank + 1) % n, comm, nullptr);
  weftRecv(in.data(), in.size(), weftUint8, (rank + n - 1) % n, comm, nullptr);
  if (weftGroupEnd() != weftSuccess) return 15;
  if (in[0] != char((rank + n - 1) % n)) return 16;
  return 0;
}

std::vector<json> eventsOf(const json& doc, const char* cat) {
  std::vector<json> out;
  for (const json& e : doc["traceEvents"])
    if (e.value("cat", "") == cat) out.push_back(e);
  return out;
}

TEST(Trace, OneFilePerRankWithCallsAndSteps) {
  constexpr int n = 3;
  TempDir dir;
  const std::string pattern = dir.path + "/t.%r.json";
  ProcessRunOptions opt;
  opt.env = [&](int) { return traceEnv(pattern); };
  ProcessRunResult r = runRankProcesses(n, [](int rank, const weftUniqueId& id) {
    weftComm_t comm;
    if (int e = initOrReport(&comm, n, id, rank)) return e;
    if (int e = runCalls(comm, rank, n)) return e;
    return weftCommDestroy(comm) == weftSuccess ? 0 : 4;
  }, opt);
  ASSERT_EQ(r.failures(), "");
  std::vector<std::string> files;
  for (int rank = 0; rank < n; rank++) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    files.push_back(dir.path + "/t." + std::to_string(rank) + ".json");
    json doc = readJson(files.back());
    ASSERT_TRUE(doc.is_object() && doc.contains("traceEvents")) << files.back() << " is not trace JSON";
    EXPECT_EQ(doc["otherData"]["dropped"], 0);
    ASSERT_EQ(doc["otherData"]["ranks"].size(), 1u);
    EXPECT_EQ(doc["otherData"]["ranks"][0]["rank"], rank);
    EXPECT_GT(doc["otherData"]["ranks"][0]["clock_sync_ns"].get<int64_t>(), 0);
    std::vector<json> calls = eventsOf(doc, "call");
    ASSERT_EQ(calls.size(), 4u);
    const char* names[] = {"AllReduce", "AllGather", "Broadcast", "SendRecv group"};
    const uint64_t bytes[] = {kCount * 4, kCount * 4 * n, 4000, 777 * 2};
    for (int i = 0; i < 4; i++) {
      EXPECT_EQ(calls[i]["name"], names[i]);
      EXPECT_EQ(calls[i]["ph"], "X");
      EXPECT_EQ(calls[i]["pid"], rank);
      EXPECT_EQ(calls[i]["args"]["bytes"], bytes[i]) << names[i];
      EXPECT_EQ(calls[i]["args"]["call"], i);
      EXPECT_FALSE(calls[i]["args"]["algorithm"].get<std::string>().empty());
      EXPECT_GE(calls[i]["dur"].get<double>(), 0.0);
      EXPECT_EQ(calls[i]["args"]["result"], "ok");
      EXPECT_EQ(calls[i]["args"]["comm"], doc["otherData"]["ranks"][0]["comm"]);
    }
    EXPECT_EQ(calls[0]["args"]["type"], "float");
    EXPECT_EQ(calls[0]["args"]["op"], "sum");
    EXPECT_EQ(calls[2]["args"]["root"], 0);
    // Steps: on channel threads, inside their call, with peers and times.
    std::vector<json> steps = eventsOf(doc, "step");
    ASSERT_GE(steps.size(), 4u);
    std::set<int> peers;
    for (const json& s : steps) {
      EXPECT_GE(s["tid"].get<int>(), 1);
      EXPECT_EQ(s["args"]["comm"], doc["otherData"]["ranks"][0]["comm"]);
      const double ts = s["ts"], end = ts + s["dur"].get<double>();
      bool inside = false;
      for (const json& c : calls)
        inside |= ts >= c["ts"].get<double>() && end <= c["ts"].get<double>() + c["dur"].get<double>() + 0.002;
      EXPECT_TRUE(inside) << s.dump();
      EXPECT_LE(s["args"]["wait_us"].get<double>() + s["args"]["move_us"].get<double>(),
                s["dur"].get<double>() + 0.002);
      EXPECT_EQ(s["args"]["recv_from"].size(), s["args"]["wait_recv_us"].size());
      for (const json& p : s["args"]["recv_from"]) peers.insert(p.get<int>());
      for (const json& p : s["args"]["send_to"]) peers.insert(p.get<int>());
    }
    EXPECT_EQ(peers.size(), size_t(n - 1)) << "steps name every other rank";
  }
  // weft-trace-merge: one timeline with every rank.
  const std::string merged = dir.path + "/merged.json";
  std::string cmd = "/usr/bin/python3 " WEFT_TRACE_MERGE_TOOL " -o " + merged;
  for (const std::string& f : files) cmd += " " + f;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  json doc = readJson(merged);
  ASSERT_TRUE(doc.is_object());
  std::map<int, int> callsPerRank;
  double last = -1e300;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["ts"].get<double>(), last) << "merged events in time order";
    last = e["ts"];
    if (e["cat"] == "call") callsPerRank[e["pid"]]++;
  }
  EXPECT_EQ(callsPerRank, (std::map<int, int>{{0, 4}, {1, 4}, {2, 4}}));
  EXPECT_EQ(doc["otherData"]["ranks"].size(), size_t(n));
}

TEST(Trace, RingKeepsMaxEventsAndCountsDropped) {
  constexpr int n = 2, calls = 30, maxEvents = 8;
  TempDir dir;
  const std::string pattern = dir.path + "/t.%r.json";
  ProcessRunOptions opt;
  opt.env = [&](int) { return traceEnv(pattern, "8"); };
  ProcessRunResult r = runRankProcesses(n, [](int rank, const weftUniqueId& id) {
    weftComm_t comm;
    if (int e = initOrReport(&comm, n, id, rank)) return e;
    std::vector<float> a(64, 1.0f), b(64);
    for (int i = 0; i < calls; i++)
      if (weftAllReduce(a.data(), b.data(), 64, weftFloat32, weftSum, comm, nullptr) != weftSuccess) return 10;
    return weftCommDestroy(comm) == weftSuccess ? 0 : 4;
  }, opt);
  ASSERT_EQ(r.failures(), "");
  for (int rank = 0; rank < n; rank++) {
    json doc = readJson(dir.path + "/t." + std::to_string(rank) + ".json");
    ASSERT_TRUE(doc.is_object());
    int kept = 0, lastCall = -1;
    for (const json& e : doc["traceEvents"]) {
      if (e["ph"] != "X") continue;
      kept++;
      if (e["cat"] == "call") lastCall = e["args"]["call"];
    }
    EXPECT_EQ(kept, maxEvents);
    EXPECT_EQ(lastCall, calls - 1) << "the newest events are kept";
    const int64_t recorded = doc["otherData"]["recorded"];
    EXPECT_GE(recorded, calls);
    EXPECT_EQ(doc["otherData"]["dropped"].get<int64_t>(), recorded - maxEvents);
    EXPECT_EQ(doc["otherData"]["max_events"], maxEvents);
  }
}

TEST(Trace, UnwritablePathWarnsAndRunsOn) {
  constexpr int n = 2;
  const long logStart = logFileEnd();
  ProcessRunOptions opt;
  opt.env = [](int) { return traceEnv("/nonexistent-weft-dir/t.%r.json"); };
  ProcessRunResult r = runRankProcesses(n, [](int rank, const weftUniqueId& id) {
    weftComm_t comm;
    if (int e = initOrReport(&comm, n, id, rank)) return e;
    if (int e = runCalls(comm, rank, n)) return e;
    return weftCommDestroy(comm) == weftSuccess ? 0 : 4;
  }, opt);
  EXPECT_EQ(r.failures(), "");
  const std::string log = logTextSince(logStart);
  EXPECT_NE(log.find("WEFT_TRACE_FILE: cannot write /nonexistent-weft-dir/t.0.json"), std::string::npos) << log;
  EXPECT_NE(log.find("WEFT_TRACE_FILE: cannot write /nonexistent-weft-dir/t.1.json"), std::string::npos) << log;
}

// A call that fails is traced too, with its error: rank 1 stays out of the
// second AllReduce, so rank 0's times out.
TEST(Trace, AFailedCallIsTracedWithItsError) {
  constexpr int n = 2;
  TempDir dir;
  const std::string pattern = dir.path + "/t.%r.json";
  ProcessRunOptions opt;
  opt.env = [&](int) {
    ChildEnv e = traceEnv(pattern);
    e.vars["WEFT_TIMEOUT_MS"] = "1000";
    return e;
  };
  ProcessRunResult r = runRankProcesses(n, [](int rank, const weftUniqueId& id) {
    weftComm_t comm;
    if (int e = initOrReport(&comm, n, id, rank)) return e;
    std::vector<float> a(1000, 1.0f), b(1000);
    if (weftAllReduce(a.data(), b.data(), 1000, weftFloat32, weftSum, comm, nullptr) != weftSuccess) return 10;
    if (rank == 1) {  // stays reachable while rank 0 times out and diagnoses
      std::this_thread::sleep_for(std::chrono::milliseconds(4500));
      weftCommAbort(comm);
      return 0;
    }
    const weftResult_t rc = weftAllReduce(a.data(), b.data(), 1000, weftFloat32, weftSum, comm, nullptr);
    weftCommAbort(comm);
    return rc == weftTimeout ? 0 : 11;
  }, opt);
  ASSERT_EQ(r.failures(), "");
  json doc = readJson(dir.path + "/t.0.json");
  ASSERT_TRUE(doc.is_object());
  std::vector<json> calls = eventsOf(doc, "call");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["args"]["result"], "ok");
  EXPECT_EQ(calls[1]["name"], "AllReduce");
  EXPECT_EQ(calls[1]["args"]["result"], "timeout");
  EXPECT_GE(calls[1]["dur"].get<double>(), 900e3);  // microseconds: the 1 s timeout
}

TEST(Trace, FatalSignalStillWritesTheFile) {
  constexpr int n = 2;
  TempDir dir;
  const std::string pattern = dir.path + "/t.%r.json";
  ProcessRunOptions opt;
  opt.env = [&](int) { return traceEnv(pattern); };
  ProcessRunResult r = runRankProcesses(n, [](int rank, const weftUniqueId& id) {
    weftComm_t comm;
    if (int e = initOrReport(&comm, n, id, rank)) return e;
    if (int e = runCalls(comm, rank, n)) return e;
    raise(SIGTERM);  // no destroy: the handler writes the file, then the default action ends the process
    return 5;
  }, opt);
  ASSERT_FALSE(r.timedOut);
  for (int rank = 0; rank < n; rank++) {
    EXPECT_TRUE(r.children[rank].signaled && r.children[rank].signal == SIGTERM) << "rank " << rank;
    json doc = readJson(dir.path + "/t." + std::to_string(rank) + ".json");
    ASSERT_TRUE(doc.is_object()) << "rank " << rank;
    EXPECT_EQ(eventsOf(doc, "call").size(), 4u);
  }
}

// Threads as ranks of one process, a path without %r: both communicators
// share one file and one ring, each event naming its rank.
TEST(Trace, RanksOfOneProcessShareAFileWithoutRankInThePath) {
  TempDir dir;
  const std::string path = dir.path + "/shared.json";
  setenv("WEFT_TRACE_FILE", path.c_str(), 1);
  weftComm_t comms[2];
  const weftResult_t init = weftCommInitAll(comms, 2, nullptr);
  unsetenv("WEFT_TRACE_FILE");
  ASSERT_EQ(init, weftSuccess);
  std::vector<std::thread> ranks;
  int results[2] = {-1, -1};
  for (int r = 0; r < 2; r++)
    ranks.emplace_back([&, r] {
      std::vector<float> a(1000, 1.0f), b(1000);
      results[r] = weftAllReduce(a.data(), b.data(), 1000, weftFloat32, weftSum, comms[r], nullptr);
    });
  for (auto& t : ranks) t.join();
  EXPECT_EQ(results[0], weftSuccess);
  EXPECT_EQ(results[1], weftSuccess);
  EXPECT_EQ(weftCommDestroy(comms[0]), weftSuccess);
  EXPECT_EQ(weftCommDestroy(comms[1]), weftSuccess);
  json doc = readJson(path);
  ASSERT_TRUE(doc.is_object());
  std::map<int, int> callsPerRank;
  for (const json& e : eventsOf(doc, "call")) callsPerRank[e["pid"]]++;
  EXPECT_EQ(callsPerRank, (std::map<int, int>{{0, 1}, {1, 1}}));
  for (const json& e : eventsOf(doc, "call")) EXPECT_FALSE(e["args"]["comm"].get<std::string>().empty());
  EXPECT_EQ(doc["otherData"]["ranks"].size(), 2u);
}

}  // namespace
}  // namespace weft::test
