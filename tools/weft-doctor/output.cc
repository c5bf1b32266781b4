#include "tools/weft-doctor/output.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include "tools/weft-doctor/analyze.h"
#include "tools/weft-doctor/compare.h"
#include "tools/weft-doctor/report.h"
#include "weft/weft.h"

namespace weft::doctor {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string utcNow(const char* format) {
  char buf[64];
  const time_t now = time(nullptr);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// The plot helper next to this binary, else on PATH.
std::string defaultPlotTool() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(self.parent_path() / "weft-doctor-plot")) return (self.parent_path() / "weft-doctor-plot").string();
  return "weft-doctor-plot";
}

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

json snapshotToJson(const SysfsSnapshot& s) {
  json nics = json::array();
  for (const Nic& n : s.nics) nics.push_back({n.name, n.kind, n.driver, n.driverVersion, n.firmware, n.model});
  return {{"nics", nics}, {"bonds", s.bonds}, {"values", s.values}, {"problem", s.problem}};
}

SysfsSnapshot snapshotFromJson(const json& j) {
  SysfsSnapshot s;
  for (const json& n : j.at("nics"))
    s.nics.push_back({n[0].get<std::string>(), n[1].get<std::string>(), n[2].get<std::string>(),
                      n[3].get<std::string>(), n[4].get<std::string>(), n[5].get<std::string>()});
  s.bonds = j.at("bonds").get<std::map<std::string, std::vector<std::string>>>();
  s.values = j.at("values").get<std::map<std::string, uint64_t>>();
  s.problem = j.at("problem").get<std::string>();
  return s;
}

int RankZero::start(const std::vector<std::string>& infos) {
  Result& r = result_;
  weftGetVersion(&r.weftVersion);
  r.date = utcNow("%Y-%m-%dT%H:%M:%SZ");
  r.nranks = nranks_;
  for (const std::string& text : infos) {
    const json j = json::parse(text);
    const int host = j.at("host").get<int>();
    if (host >= int(r.hosts.size())) r.hosts.resize(size_t(host) + 1);
    HostInfo& h = r.hosts[size_t(host)];
    if (h.ranks.empty()) h.name = j.at("label").get<std::string>(), h.hostname = j.at("hostname").get<std::string>();
    const int rank = j.at("rank").get<int>();
    h.ranks.push_back(rank);
    r.ranks.push_back({rank, host, j.at("net_if").get<std::string>(), j.at("pid").get<int>()});
    for (const json& t : j.at("transports")) {
      const int peer = t.at("peer").get<int>();
      if (peer < rank) continue;  // one row per pair, from the lower rank
      r.transports.push_back({rank, peer, t.at("transport").get<std::string>(), t.at("why").get<std::string>(),
                              t.at("same_host").get<bool>(), t.at("last_resort").get<bool>()});
    }
  }
  if (o_.baseline.empty()) return 0;
  std::string error;
  if (!readResultFile(o_.baseline, &baseline_, &error)) {
    fprintf(stderr, "weft-doctor: cannot use the baseline: %s\n", error.c_str());
    return kExitUsage;
  }
  const std::string why = incompatibility(baseline_, r);
  if (!why.empty()) {
    printf("verdict: NOT COMPARED: baseline %s refused: %s\n", o_.baseline.c_str(), why.c_str());
    fflush(stdout);
    return kExitRefused;
  }
  haveBaseline_ = true;
  return 0;
}

int RankZero::finish(const std::vector<std::string>& parts, double seconds) {
  Result& r = result_;
  r.seconds = seconds;
  r.counters.resize(r.hosts.size());
  for (const std::string& text : parts) {
    const json j = json::parse(text);
    for (const json& l : j.at("links"))
      r.links.push_back({l.at("from").get<int>(), l.at("to").get<int>(), l.at("gbps").get<double>(),
                         l.at("lat_us").get<double>()});
    if (r.sweep.empty())  // every rank has the same (the slowest rank's times)
      for (const json& s : j.at("sweep"))
        r.sweep.push_back({s.at("coll").get<std::string>(), s.at("bytes").get<uint64_t>(),
                           s.at("time_us").get<double>(), s.at("busbw_gbps").get<double>()});
    if (j.contains("counters")) {
      const json& c = j["counters"];
      r.counters[size_t(c.at("host").get<int>())] =
          combineSnapshots(snapshotFromJson(c.at("before")), snapshotFromJson(c.at("after")));
    }
  }
  std::sort(r.links.begin(), r.links.end(),
            [](const Link& a, const Link& b) { return std::pair(a.from, a.to) < std::pair(b.from, b.to); });
  r.findings = analyze(r);
  fputs(reportText(r).c_str(), stdout);
  fflush(stdout);
  int status = writeOutputs();
  if (haveBaseline_) status = std::max(status, compare());
  if (o_.strict && !r.findings.empty() && status == 0) {
    printf("strict: %zu finding(s): exit %d\n", r.findings.size(), kExitRegressed);
    status = kExitRegressed;
  }
  fflush(stdout);
  return status;
}

int RankZero::writeOutputs() {
  const std::string text = toJson(result_);
  std::string error;
  int status = 0;
  for (const std::string* path : {&o_.jsonPath, &o_.saveBaseline}) {
    if (path->empty()) continue;
    if (writeFile(*path, text, &error)) {
      printf("wrote %s%s\n", path->c_str(), path == &o_.saveBaseline ? " (baseline)" : "");
    } else {
      fprintf(stderr, "weft-doctor: %s\n", error.c_str());
      status = kExitUsage;
    }
  }
  if (!o_.historyDir.empty()) {
    error = keepHistory(result_, o_.historyDir, o_.plotTool.empty() ? defaultPlotTool() : o_.plotTool);
    if (!error.empty()) {
      fprintf(stderr, "weft-doctor: --history: %s\n", error.c_str());
      status = kExitUsage;
    }
  }
  return status;
}

int RankZero::compare() {
  CompareOptions co;
  co.tolerance = o_.tolerance;
  co.latFloorUs = o_.latencySlackUs;
  const Verdict v = compareWithBaseline(baseline_, result_, co);
  fputs(("\n" + verdictText(v, baseline_, o_.baseline, co)).c_str(), stdout);
  if (v.refused) return kExitRefused;
  return v.regressions.empty() ? 0 : kExitRegressed;
}

std::string keepHistory(const Result& r, const std::string& dir, const std::string& plotTool) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return "cannot create " + dir + ": " + ec.message();
  std::string stamp = r.date;
  for (char& c : stamp)
    if (c == ':') c = '-';
  const std::string path = (fs::path(dir) / ("weft-doctor-" + stamp + ".json")).string();
  std::string error;
  if (!writeFile(path, toJson(r), &error)) return error;
  printf("history: wrote %s\n", path.c_str());
  fflush(stdout);
  // The plot is a convenience: a missing python3 or matplotlib is said, not fatal.
  // Debian's interpreter first: python3-matplotlib is installed for it,
  // whatever python3 comes first on PATH (a virtualenv, pyenv).
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string cmd = python + " " + shellQuote(plotTool) + " " + shellQuote(dir);
  const int rc = std::system(cmd.c_str());
  if (rc != 0) printf("history: no trend plot (%s exited %d)\n", plotTool.c_str(), rc);
  return "";
}

}  // namespace weft::doctor
