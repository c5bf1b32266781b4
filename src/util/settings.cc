#include "src/util/settings.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>

#include "src/util/env.h"
#include "src/util/log.h"

extern char** environ;

namespace weft::settings {
namespace {

// What the settings files say, parsed once per Config::read. The nccl.conf
// files are parsed first, so a weft file's line for the same row wins.
struct FileLayer {
  std::array<Value, kCount> values;
  std::vector<std::string> warnings;
  std::vector<std::string> ignoredNccl;  // NCCL names in nccl.conf with no twin
  std::array<Value, kCount> defaults;    // overrideDefault's, else unset
};

// libnccl.so.2 calls enableNcclNames and overrideDefault from a load-time
// constructor, which may run before this file's dynamic initialisers:
// everything they touch is constant-initialised (constinit) or built on
// first use (processDefaults).
constinit std::atomic<bool> gNcclNames{false};
// NCCL's own name for a user's nccl.conf (read with the NCCL names on).
constexpr const char* kNcclConfFile = "NCCL_CONF_FILE";

constinit std::mutex gMutex;
constinit std::shared_ptr<const FileLayer> gFiles;                    // guarded by gMutex
constinit std::optional<std::vector<std::string>> gPathOverride;      // guarded by gMutex
constinit std::optional<std::vector<std::string>> gNcclPathOverride;  // guarded by gMutex

std::array<Value, kCount>& processDefaults() {  // guarded by gMutex
  static std::array<Value, kCount> defaults;
  return defaults;
}

std::string trim(const std::string& s) {
  const char* blank = " \t\r";
  size_t b = s.find_first_not_of(blank);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(blank) - b + 1);
}

// Drops a '#' comment: a whole line, or a '#' after a blank (a value may
// hold '#' elsewhere).
std::string stripComment(const std::string& line) {
  for (size_t i = 0; i < line.size(); i++)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return line.substr(0, i);
  return line;
}

// A weft.conf names WEFT_ variables; an nccl.conf names NCCL_ ones, and
// one weft has no twin for is normal there (NCCL has many more), so it is
// noted at INFO rather than warned about.
void parseLine(const std::string& path, int lineNo, const std::string& raw, bool ncclFile, FileLayer* layer) {
  const std::string line = trim(stripComment(raw));
  if (line.empty()) return;
  const std::string at = path + " line " + std::to_string(lineNo);
  const size_t eq = line.find('=');
  if (eq == std::string::npos || eq == 0) {
    layer->warnings.push_back(at + ": '" + line + "' is not NAME=value; ignored");
    return;
  }
  const std::string name = trim(line.substr(0, eq)), text = trim(line.substr(eq + 1));
  const Info* i = ncclFile ? findNccl(name) : find(name);
  if (!i && ncclFile) {
    layer->ignoredNccl.push_back(name + " (" + at + ")");
    return;
  }
  if (!i) {
    layer->warnings.push_back(at + ": " + name + " is not a weft setting; ignored");
    return;
  }
  if (i->scope == Scope::Launch) {
    layer->warnings.push_back(at + ": " + name + " is read from the environment only; ignored");
    return;
  }
  Value& v = layer->values[i - kTable];
  v.text = text.empty() ? std::nullopt : std::optional<std::string>(text);
  v.source = Source{Source::File, path, lineNo, ncclFile ? name : std::string(), {}};
}

// `namedBy`: the variable that named the file, for a file that must exist.
void parseFile(const std::string& path, const char* namedBy, bool ncclFile, FileLayer* layer) {
  std::ifstream in(path);
  if (!in) {
    if (namedBy) layer->warnings.push_back(path + " (" + namedBy + ") cannot be read; ignored");
    return;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); n++) parseLine(path, n, line, ncclFile, layer);
}

// /etc/<base> and ~/.<base>: "weft.conf", "nccl.conf".
std::vector<std::string> standardPaths(const std::string& base) {
  std::vector<std::string> paths{"/etc/" + base};
  if (const char* home = getenv("HOME"); home && *home) paths.push_back(std::string(home) + "/." + base);
  return paths;
}

std::shared_ptr<const FileLayer> loadFiles() {
  auto layer = std::make_shared<FileLayer>();
  std::vector<std::string> paths, ncclPaths;
  bool ncclOverridden = false;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    paths = gPathOverride ? *gPathOverride : standardPaths("weft.conf");
    if (gNcclNames) ncclPaths = gNcclPathOverride ? *gNcclPathOverride : standardPaths("nccl.conf");
    ncclOverridden = gNcclPathOverride.has_value();
    layer->defaults = processDefaults();
  }
  // As NCCL does, NCCL_CONF_FILE takes the place of ~/.nccl.conf (above
  // /etc/nccl.conf); with a path override (tests) it is not looked at.
  std::optional<std::string> ncclUserFile;
  if (!ncclPaths.empty() && !ncclOverridden) ncclUserFile = envString(kNcclConfFile);
  if (ncclUserFile) ncclPaths.resize(1);  // /etc/nccl.conf only
  for (const std::string& p : ncclPaths) parseFile(p, nullptr, true, layer.get());
  if (ncclUserFile) parseFile(*ncclUserFile, kNcclConfFile, true, layer.get());
  for (const std::string& p : paths) parseFile(p, nullptr, false, layer.get());
  if (auto extra = envString(info(Id::kConfFile).name)) parseFile(*extra, info(Id::kConfFile).name, false, layer.get());
  std::lock_guard<std::mutex> lock(gMutex);
  gFiles = layer;
  return layer;
}

std::shared_ptr<const FileLayer> currentFiles() {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (gFiles) return gFiles;
  }
  return loadFiles();
}

Value current(Id id, const FileLayer& files) {
  const Info& i = info(id);
  if (auto env = envString(i.name)) return Value{env, Source{Source::Environment, "", 0, "", {}}};
  if (i.ncclName && gNcclNames)
    if (auto env = envString(i.ncclName)) return Value{env, Source{Source::Environment, "", 0, i.ncclName, {}}};
  const Value& fromFile = files.values[static_cast<int>(id)];
  if (fromFile.source.kind == Source::File && fromFile.text) return fromFile;
  if (files.defaults[static_cast<int>(id)].text) return files.defaults[static_cast<int>(id)];
  Value v;
  if (i.defaultValue) v.text = i.defaultValue;
  return v;
}

// A value read under its NCCL name is reported under that name, which is
// what the operator wrote, in the words its WEFT_ twin's error would use.
std::string whereSuffix(Id id, const Source& s) {
  std::string where;
  if (s.kind == Source::File) where = " (set in " + s.file + " line " + std::to_string(s.line);
  if (!s.ncclName.empty()) where += std::string(where.empty() ? " (" : "; ") + "read for " + info(id).name;
  return where.empty() ? "" : where + ")";
}

const char* nameRead(Id id, const Value& v) {
  return v.source.ncclName.empty() ? info(id).name : v.source.ncclName.c_str();
}

int64_t asInt(Id id, const Value& v) {
  return v.text ? parseIntValue(nameRead(id, v), *v.text, whereSuffix(id, v.source)) : 0;
}

bool asBool(Id id, const Value& v) {
  return v.text ? parseBoolValue(nameRead(id, v), *v.text, whereSuffix(id, v.source)) : false;
}

// NCCL_ variables in the environment that no row names: set for NCCL,
// which weft does not imitate; said once at INFO so nobody wonders.
std::vector<std::string> ignoredNcclEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; e++) {
    std::string_view entry(*e);
    if (entry.rfind("NCCL_", 0) != 0) continue;
    std::string name(entry.substr(0, entry.find('=')));
    if (!findNccl(name) && name != kNcclConfFile) out.push_back(name + " (environment)");
  }
  return out;
}

}  // namespace

const Info* find(std::string_view name) {
  for (const Info& i : kTable)
    if (name == i.name) return &i;
  return nullptr;
}

const Info* findNccl(std::string_view ncclName) {
  for (const Info& i : kTable)
    if (i.ncclName && ncclName == i.ncclName) return &i;
  return nullptr;
}

const char* toString(Type type) {
  switch (type) {
    case Type::Int: return "int";
    case Type::Bool: return "bool";
    case Type::String: return "string";
  }
  return "?";
}

const char* toString(Scope scope) {
  switch (scope) {
    case Scope::Comm: return "per comm";
    case Scope::Process: return "process";
    case Scope::Launch: return "launch";
  }
  return "?";
}

std::string Source::describe() const {
  switch (kind) {
    case Default: return owner.empty() ? "default" : owner + "'s default";
    case Environment: return ncclName.empty() ? "environment" : ncclName + " in the environment";
    case File: return (ncclName.empty() ? "" : ncclName + " in ") + file + " line " + std::to_string(line);
  }
  return "?";
}

Config Config::read() {
  std::shared_ptr<const FileLayer> files = loadFiles();
  Config c;
  for (int i = 0; i < kCount; i++) c.values_[i] = current(static_cast<Id>(i), *files);
  c.warnings_ = files->warnings;
  if (gNcclNames) {
    c.ignored_ = ignoredNcclEnvironment();
    c.ignored_.insert(c.ignored_.end(), files->ignoredNccl.begin(), files->ignoredNccl.end());
  }
  return c;
}

int64_t Config::get(IntSetting h) const { return asInt(h.id, value(h.id)); }
bool Config::get(BoolSetting h) const { return asBool(h.id, value(h.id)); }
std::optional<std::string> Config::get(StringSetting h) const { return value(h.id).text; }

std::vector<std::string> Config::sourceLines() const {
  std::vector<std::string> lines;
  for (int i = 0; i < kCount; i++) {
    const Value& v = values_[i];
    if (v.source.kind == Source::Default && v.source.owner.empty()) continue;
    lines.push_back(std::string(kTable[i].name) + "=" + v.text.value_or("") + " (" + v.source.describe() + ")");
  }
  return lines;
}

void logConfig(const Config& config) {
  // A bad file would otherwise repeat its warnings for every communicator.
  static std::mutex mutex;
  static std::set<std::string> warned;
  for (const std::string& w : config.fileWarnings()) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!warned.insert(w).second) continue;
    lock.unlock();
    WEFT_WARN("settings: %s", w.c_str());
  }
  for (const std::string& name : config.ignoredNcclNames()) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!warned.insert(name).second) continue;
    lock.unlock();
    WEFT_INFO(kEnv, "settings: %s has no weft equivalent; ignored", name.c_str());
  }
  for (const std::string& line : config.sourceLines()) WEFT_INFO(kEnv, "setting %s", line.c_str());
}

int64_t get(IntSetting h) { return asInt(h.id, current(h.id, *currentFiles())); }
bool get(BoolSetting h) { return asBool(h.id, current(h.id, *currentFiles())); }
std::optional<std::string> get(StringSetting h) { return current(h.id, *currentFiles()).text; }

void enableNcclNames(bool on) {
  gNcclNames = on;
  std::lock_guard<std::mutex> lock(gMutex);
  gFiles.reset();  // the next read takes the nccl.conf files in (or out)
}

bool ncclNamesEnabled() { return gNcclNames; }

void overrideDefault(Id id, const char* value, const char* owner) {
  Value v;
  if (value) v.text = value;
  if (value && owner) v.source.owner = owner;
  std::lock_guard<std::mutex> lock(gMutex);
  processDefaults()[static_cast<int>(id)] = v;
  gFiles.reset();  // the next read takes it in
}

void setNcclFilePathsForTesting(std::optional<std::vector<std::string>> paths) {
  std::lock_guard<std::mutex> lock(gMutex);
  gNcclPathOverride = std::move(paths);
  gFiles.reset();
}

void setFilePathsForTesting(std::optional<std::vector<std::string>> paths) {
  std::lock_guard<std::mutex> lock(gMutex);
  gPathOverride = std::move(paths);
  gFiles.reset();
}

}  // namespace weft::settings
