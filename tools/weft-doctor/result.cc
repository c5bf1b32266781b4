#include "tools/weft-doctor/result.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace weft::doctor {
namespace {

using nlohmann::json;

json nicJson(const Nic& n) {
  return {{"name", n.name}, {"kind", n.kind}, {"driver", n.driver}, {"driver_version", n.driverVersion},
          {"firmware", n.firmware}, {"model", n.model}};
}

Nic nicFrom(const json& j) {
  return {j.at("name").get<std::string>(), j.at("kind").get<std::string>(), j.value("driver", ""),
          j.value("driver_version", ""), j.value("firmware", ""), j.value("model", "")};
}

// Only what moved is kept: a file is compared, never re-diffed.
json countersJson(const HostCounters& c) {
  json nics = json::array();
  for (const Nic& n : c.nics) nics.push_back(nicJson(n));
  return {{"nics", nics}, {"bonds", c.bonds}, {"moved", counterDeltas(c)}, {"problem", c.problem}};
}

HostCounters countersFrom(const json& j) {
  HostCounters c;
  for (const json& n : j.at("nics")) c.nics.push_back(nicFrom(n));
  c.bonds = j.at("bonds").get<std::map<std::string, std::vector<std::string>>>();
  c.after = j.at("moved").get<std::map<std::string, uint64_t>>();
  c.problem = j.value("problem", "");
  return c;
}

json resultJson(const Result& r) {
  json j = {{"format", r.format}, {"weft_version", r.weftVersion}, {"date", r.date},
            {"nranks", r.nranks}, {"seconds", r.seconds}};
  json& hosts = j["hosts"] = json::array();
  for (size_t h = 0; h < r.hosts.size(); h++) {
    json host = {{"name", r.hosts[h].name}, {"hostname", r.hosts[h].hostname}, {"ranks", r.hosts[h].ranks}};
    if (h < r.counters.size()) host["counters"] = countersJson(r.counters[h]);
    hosts.push_back(host);
  }
  json& ranks = j["ranks"] = json::array();
  for (const RankInfo& k : r.ranks)
    ranks.push_back({{"rank", k.rank}, {"host", k.host}, {"net_if", k.netIf}, {"pid", k.pid}});
  json& tr = j["transports"] = json::array();
  for (const PairTransport& t : r.transports)
    tr.push_back({{"a", t.a}, {"b", t.b}, {"transport", t.transport}, {"why", t.why}, {"same_host", t.sameHost},
                  {"last_resort", t.lastResort}});
  json& links = j["links"] = json::array();
  for (const Link& l : r.links)
    links.push_back({{"from", l.from}, {"to", l.to}, {"gbps", l.gbps}, {"lat_us", l.latUs},
                     {"name", linkName(r, l)}});
  json& sweep = j["sweep"] = json::array();
  for (const SweepPoint& s : r.sweep)
    sweep.push_back({{"coll", s.coll}, {"bytes", s.bytes}, {"time_us", s.timeUs}, {"busbw_gbps", s.busGbps}});
  json& findings = j["findings"] = json::array();
  for (const Finding& f : r.findings)
    findings.push_back({{"kind", f.kind}, {"subject", f.subject}, {"text", f.text}});
  return j;
}

void parseInto(const json& j, Result* r) {
  r->format = j.at("format").get<std::string>();
  r->weftVersion = j.at("weft_version").get<int>();
  r->date = j.value("date", "");
  r->nranks = j.at("nranks").get<int>();
  r->seconds = j.value("seconds", 0.0);
  for (const json& h : j.at("hosts")) {
    r->hosts.push_back({h.at("name").get<std::string>(), h.value("hostname", ""),
                        h.at("ranks").get<std::vector<int>>()});
    r->counters.push_back(h.contains("counters") ? countersFrom(h["counters"]) : HostCounters{});
  }
  for (const json& k : j.at("ranks"))
    r->ranks.push_back({k.at("rank").get<int>(), k.at("host").get<int>(), k.value("net_if", ""), k.value("pid", 0)});
  for (const json& t : j.at("transports"))
    r->transports.push_back({t.at("a").get<int>(), t.at("b").get<int>(), t.at("transport").get<std::string>(),
                             t.value("why", ""), t.value("same_host", false), t.value("last_resort", false)});
  for (const json& l : j.at("links"))
    r->links.push_back({l.at("from").get<int>(), l.at("to").get<int>(), l.at("gbps").get<double>(),
                        l.at("lat_us").get<double>()});
  for (const json& s : j.at("sweep"))
    r->sweep.push_back({s.at("coll").get<std::string>(), s.at("bytes").get<uint64_t>(), s.at("time_us").get<double>(),
                        s.at("busbw_gbps").get<double>()});
  for (const json& f : j.value("findings", json::array()))
    r->findings.push_back({f.value("kind", ""), f.value("subject", ""), f.value("text", "")});
}

}  // namespace

std::string toJson(const Result& r) { return resultJson(r).dump(1) + "\n"; }

bool fromJson(const std::string& text, Result* r, std::string* error) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "not JSON";
    return false;
  }
  if (!j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>().rfind("weft-doctor-", 0) != 0) {
    *error = "not a weft-doctor result (no \"format\": \"weft-doctor-N\")";
    return false;
  }
  // A file of another format is read only as far as its identity: the
  // caller refuses it by name and version without trusting the rest.
  *r = Result{};
  r->format = j["format"].get<std::string>();
  r->weftVersion = j.value("weft_version", 0);
  if (r->format != kFormat) return true;
  try {
    parseInto(j, r);
  } catch (const std::exception& e) {
    *error = std::string("malformed weft-doctor result: ") + e.what();
    return false;
  }
  for (const Link& l : r->links)
    if (l.from < 0 || l.to < 0 || l.from >= int(r->hosts.size()) || l.to >= int(r->hosts.size())) {
      *error = "malformed weft-doctor result: a link names a host that is not listed";
      return false;
    }
  for (const RankInfo& k : r->ranks)
    if (k.host < 0 || k.host >= int(r->hosts.size())) {
      *error = "malformed weft-doctor result: a rank's host is not listed";
      return false;
    }
  return true;
}

bool readResultFile(const std::string& path, Result* r, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (fromJson(text.str(), r, error)) return true;
  *error = path + ": " + *error;
  return false;
}

bool writeFile(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (out) return true;
  *error = "cannot write " + path;
  return false;
}

std::string hostName(const Result& r, int host) {
  if (host >= 0 && host < int(r.hosts.size())) return r.hosts[size_t(host)].name;
  return "host#" + std::to_string(host);
}

std::string linkName(const Result& r, const Link& l) {
  if (l.from == l.to) return hostName(r, l.from) + " (within)";
  return hostName(r, l.from) + " -> " + hostName(r, l.to);
}

std::map<std::string, uint64_t> counterDeltas(const HostCounters& c) {
  std::map<std::string, uint64_t> moved;
  for (const auto& [name, after] : c.after) {
    auto it = c.before.find(name);
    const uint64_t before = it == c.before.end() ? 0 : it->second;
    const uint64_t delta = after >= before ? after - before : after;
    if (delta) moved[name] = delta;
  }
  return moved;
}

std::string fmt(const char* format, double a, double b, double c) {
  char buf[160];
  snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

}  // namespace weft::doctor
