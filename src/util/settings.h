// The WEFT_* settings: declared once in settings_table.h, read through typed
// handles (settings::kNSlots), so a misspelt name does not compile.
//
// A value comes from, in rising precedence: the table's default,
// /etc/weft.conf, ~/.weft.conf, the file WEFT_CONF_FILE names, the
// environment. In a process that enabled NCCL names (libnccl.so.2 does),
// a row's NCCL name (NCCL_DEBUG for WEFT_DEBUG) is read too, each layer
// below its WEFT_ twin: /etc/nccl.conf and ~/.nccl.conf below the weft
// files, NCCL_X in the environment below WEFT_X in the environment. An empty value counts as unset. A malformed value is an
// error naming the variable (and the file and line it came from), raised
// when the value is read, never a silent default.
//
// A communicator takes a Config snapshot when it is created and reads its
// settings from it (tests change variables between communicators); code
// with no communicator reads the current value with settings::get.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::settings {

enum class Type { Int, Bool, String };
enum class Scope { Comm, Process, Launch };

struct Info {
  const char* name;
  Type type;
  const char* defaultValue;  // nullptr: unset
  Scope scope;
  const char* doc;
  const char* ncclName;  // the NCCL variable operators use for it, or nullptr
};

// A row without an NCCL name is a row with nullptr for it.
#define WEFT_SETTING(handle, name, type, def, scope, doc) WEFT_SETTING_NCCL(handle, name, nullptr, type, def, scope, doc)

enum class Id : int {
#define WEFT_SETTING_NCCL(handle, name, ncclName, type, def, scope, doc) handle,
#include "src/util/settings_table.h"
#undef WEFT_SETTING_NCCL
};

inline constexpr Info kTable[] = {
#define WEFT_SETTING_NCCL(handle, name, ncclName, type, def, scope, doc) \
  {name, Type::type, def, Scope::scope, doc, ncclName},
#include "src/util/settings_table.h"
#undef WEFT_SETTING_NCCL
};
inline constexpr int kCount = static_cast<int>(std::size(kTable));

template <Type T>
struct Handle {
  Id id;
};
using IntSetting = Handle<Type::Int>;
using BoolSetting = Handle<Type::Bool>;
using StringSetting = Handle<Type::String>;

#define WEFT_SETTING_NCCL(handle, name, ncclName, type, def, scope, doc) \
  inline constexpr Handle<Type::type> handle{Id::handle};
#include "src/util/settings_table.h"
#undef WEFT_SETTING_NCCL
#undef WEFT_SETTING

inline const Info& info(Id id) { return kTable[static_cast<int>(id)]; }
inline std::span<const Info> all() { return kTable; }
const Info* find(std::string_view name);
const Info* findNccl(std::string_view ncclName);  // the row whose NCCL name this is
const char* toString(Type type);
const char* toString(Scope scope);

// Where a value came from.
struct Source {
  enum Kind { Default, Environment, File } kind = Default;
  std::string file;  // Kind::File
  int line = 0;
  std::string ncclName;  // set when the value was read under the row's NCCL name
  std::string owner;     // Kind::Default: who replaced the table's default (overrideDefault)
  // "default", "environment", "/etc/weft.conf line 3", "libnccl.so.2's
  // default", and with an NCCL name: "NCCL_DEBUG in the environment",
  // "NCCL_ALGO in /etc/nccl.conf line 2"
  std::string describe() const;
};

struct Value {
  std::optional<std::string> text;  // nullopt: unset
  Source source;
};

class Config {
 public:
  // Every setting as it stands now (environment over files over defaults).
  // Re-reads the settings files; what they say is also what settings::get
  // sees from then on.
  static Config read();

  int64_t get(IntSetting h) const;
  bool get(BoolSetting h) const;
  std::optional<std::string> get(StringSetting h) const;
  const Value& value(Id id) const { return values_[static_cast<int>(id)]; }

  // "WEFT_NSLOTS=4 (environment)" for every setting not at the table's default.
  std::vector<std::string> sourceLines() const;
  // Problems in the settings files: unknown names, malformed lines.
  const std::vector<std::string>& fileWarnings() const { return warnings_; }
  // NCCL variables set (environment or nccl.conf) that weft has no twin
  // for; only with NCCL names enabled.
  const std::vector<std::string>& ignoredNcclNames() const { return ignored_; }

 private:
  std::array<Value, kCount> values_;
  std::vector<std::string> warnings_;
  std::vector<std::string> ignored_;
};

// WARN for each settings-file problem (once per process), INFO (subsystem
// ENV) for where each value that is not a default came from and for each
// NCCL variable that has no weft twin (once per process).
void logConfig(const Config& config);

// The current value, for code outside any communicator (cache it where the
// meaning is "once per process").
int64_t get(IntSetting h);
bool get(BoolSetting h);
std::optional<std::string> get(StringSetting h);

// Process-wide: read the table's NCCL names too (libnccl.so.2 calls this
// when it is loaded, before anything reads a setting). Off by default, so a
// program using weft's own API never sees NCCL_ variables meant for NCCL.
void enableNcclNames(bool on = true);
bool ncclNamesEnabled();

// Process-wide: a default other than the table's, for a process that
// behaves like something else (libnccl.so.2: NCCL's timeouts). Every file
// and environment value still wins; owner is named in INFO lines.
// nullptr restores the table's default.
void overrideDefault(Id id, const char* value, const char* owner);

// Replaces /etc/weft.conf and ~/.weft.conf (tests); nullopt restores them.
void setFilePathsForTesting(std::optional<std::vector<std::string>> paths);
// Replaces /etc/nccl.conf and ~/.nccl.conf (tests); nullopt restores them.
void setNcclFilePathsForTesting(std::optional<std::vector<std::string>> paths);

}  // namespace weft::settings
