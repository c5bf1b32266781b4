#include "src/util/env.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "src/util/error.h"

namespace weft {

int64_t parseIntValue(const char* name, const std::string& text, const std::string& where) {
  const char* s = text.c_str();
  const char* w = where.c_str();
  char* end = nullptr;
  errno = 0;
  long long x = strtoll(s, &end, 0);
  if (end == s || errno) raise(weftInvalidArgument, "%s=%s is not an integer%s", name, s, w);
  int64_t mult = 1;
  if (*end) {
    switch (*end) {
      case 'k': case 'K': mult = 1ll << 10; break;
      case 'm': case 'M': mult = 1ll << 20; break;
      case 'g': case 'G': mult = 1ll << 30; break;
      default: raise(weftInvalidArgument, "%s=%s has an unknown suffix%s", name, s, w);
    }
    if (end[1] && strcasecmp(end + 1, "B") != 0 && strcasecmp(end + 1, "iB") != 0)
      raise(weftInvalidArgument, "%s=%s has trailing characters%s", name, s, w);
  }
  int64_t value = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(x), mult, &value))
    raise(weftInvalidArgument, "%s=%s is out of range%s", name, s, w);
  return value;
}

bool parseBoolValue(const char* name, const std::string& text, const std::string& where) {
  const char* s = text.c_str();
  if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on")) return true;
  if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off")) return false;
  raise(weftInvalidArgument, "%s=%s is not a boolean (use 0 or 1)%s", name, s, where.c_str());
}

std::optional<std::string> envString(const char* name) {
  const char* v = getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int64_t envInt(const char* name, int64_t defaultValue) {
  auto v = envString(name);
  return v ? parseIntValue(name, *v, "") : defaultValue;
}

bool envBool(const char* name, bool defaultValue) {
  auto v = envString(name);
  return v ? parseBoolValue(name, *v, "") : defaultValue;
}

}  // namespace weft
