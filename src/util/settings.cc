#include "src/util/settings.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>

#include "src/util/env.h"
#include "src/util/log.h"

namespace weft::settings {
namespace {

// What the settings files say, parsed once per Config::read.
struct FileLayer {
  std::array<Value, kCount> values;
  std::vector<std::string> warnings;
};

std::mutex gMutex;
std::shared_ptr<const FileLayer> gFiles;                // guarded by gMutex
std::optional<std::vector<std::string>> gPathOverride;  // guarded by gMutex

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

void parseLine(const std::string& path, int lineNo, const std::string& raw, FileLayer* layer) {
  const std::string line = trim(stripComment(raw));
  if (line.empty()) return;
  const std::string at = path + " line " + std::to_string(lineNo);
  const size_t eq = line.find('=');
  if (eq == std::string::npos || eq == 0) {
    layer->warnings.push_back(at + ": '" + line + "' is not NAME=value; ignored");
    return;
  }
  const std::string name = trim(line.substr(0, eq)), text = trim(line.substr(eq + 1));
  const Info* i = find(name);
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
  v.source = Source{Source::File, path, lineNo};
}

void parseFile(const std::string& path, bool mustExist, FileLayer* layer) {
  std::ifstream in(path);
  if (!in) {
    if (mustExist) layer->warnings.push_back(path + " (WEFT_CONF_FILE) cannot be read; ignored");
    return;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); n++) parseLine(path, n, line, layer);
}

std::vector<std::string> standardPaths() {
  std::vector<std::string> paths{"/etc/weft.conf"};
  if (const char* home = getenv("HOME"); home && *home) paths.push_back(std::string(home) + "/.weft.conf");
  return paths;
}

std::shared_ptr<const FileLayer> loadFiles() {
  auto layer = std::make_shared<FileLayer>();
  std::vector<std::string> paths;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    paths = gPathOverride ? *gPathOverride : standardPaths();
  }
  for (const std::string& p : paths) parseFile(p, false, layer.get());
  if (auto extra = envString(info(Id::kConfFile).name)) parseFile(*extra, true, layer.get());
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
  if (auto env = envString(i.name)) return Value{env, Source{Source::Environment, "", 0}};
  const Value& fromFile = files.values[static_cast<int>(id)];
  if (fromFile.source.kind == Source::File && fromFile.text) return fromFile;
  Value v;
  if (i.defaultValue) v.text = i.defaultValue;
  return v;
}

std::string whereSuffix(const Source& s) {
  return s.kind == Source::File ? " (set in " + s.describe() + ")" : "";
}

int64_t asInt(Id id, const Value& v) {
  return v.text ? parseIntValue(info(id).name, *v.text, whereSuffix(v.source)) : 0;
}

bool asBool(Id id, const Value& v) {
  return v.text ? parseBoolValue(info(id).name, *v.text, whereSuffix(v.source)) : false;
}

}  // namespace

const Info* find(std::string_view name) {
  for (const Info& i : kTable)
    if (name == i.name) return &i;
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
    case Default: return "default";
    case Environment: return "environment";
    case File: return file + " line " + std::to_string(line);
  }
  return "?";
}

Config Config::read() {
  std::shared_ptr<const FileLayer> files = loadFiles();
  Config c;
  for (int i = 0; i < kCount; i++) c.values_[i] = current(static_cast<Id>(i), *files);
  c.warnings_ = files->warnings;
  return c;
}

int64_t Config::get(IntSetting h) const { return asInt(h.id, value(h.id)); }
bool Config::get(BoolSetting h) const { return asBool(h.id, value(h.id)); }
std::optional<std::string> Config::get(StringSetting h) const { return value(h.id).text; }

std::vector<std::string> Config::sourceLines() const {
  std::vector<std::string> lines;
  for (int i = 0; i < kCount; i++) {
    const Value& v = values_[i];
    if (v.source.kind == Source::Default) continue;
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
  for (const std::string& line : config.sourceLines()) WEFT_INFO(kEnv, "setting %s", line.c_str());
}

int64_t get(IntSetting h) { return asInt(h.id, current(h.id, *currentFiles())); }
bool get(BoolSetting h) { return asBool(h.id, current(h.id, *currentFiles())); }
std::optional<std::string> get(StringSetting h) { return current(h.id, *currentFiles()).text; }

void setFilePathsForTesting(std::optional<std::vector<std::string>> paths) {
  std::lock_guard<std::mutex> lock(gMutex);
  gPathOverride = std::move(paths);
  gFiles.reset();
}

}  // namespace weft::settings
