#include "src/util/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "src/util/settings.h"

namespace weft {
namespace {

struct LogConfig {
  LogLevel level = LogLevel::None;
  uint32_t subsys = kAll;
  FILE* out = stderr;
};

uint32_t parseSubsys(const char* s) {
  static const struct {
    const char* name;
    uint32_t bit;
  } names[] = {{"INIT", kInit}, {"BOOTSTRAP", kBootstrap}, {"NET", kNet},   {"SHM", kShm},
               {"COLL", kColl}, {"P2P", kP2p},             {"TUNE", kTune}, {"TUNING", kTune},
               {"GRAPH", kGraph}, {"ENV", kEnv},           {"PROXY", kProxy}, {"ALL", kAll}};
  bool exclude = s[0] == '^';
  if (exclude) s++;
  uint32_t mask = 0;
  std::string list(s);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    for (auto& n : names)
      if (strcasecmp(item.c_str(), n.name) == 0) mask |= n.bit;
    pos = comma + 1;
  }
  return exclude ? ~mask : mask;
}

// WEFT_DEBUG_FILE: %h -> hostname, %p -> pid.
FILE* openLogFile(const char* pattern) {
  std::string path;
  for (const char* p = pattern; *p; p++) {
    if (p[0] == '%' && p[1] == 'h') {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      path += host;
      p++;
    } else if (p[0] == '%' && p[1] == 'p') {
      path += std::to_string(getpid());
      p++;
    } else {
      path += *p;
    }
  }
  FILE* f = fopen(path.c_str(), "a");
  if (f) setvbuf(f, nullptr, _IOLBF, 0);
  return f ? f : stderr;
}

LogConfig& config() {
  static LogConfig cfg = [] {
    LogConfig c;
    // settings::get does not log, so reading settings here cannot recurse.
    if (auto level = settings::get(settings::kDebug)) {
      const char* lvl = level->c_str();
      if (!strcasecmp(lvl, "WARN")) c.level = LogLevel::Warn;
      else if (!strcasecmp(lvl, "INFO")) c.level = LogLevel::Info;
      else if (!strcasecmp(lvl, "TRACE")) c.level = LogLevel::Trace;
      else if (!strcasecmp(lvl, "VERSION")) c.level = LogLevel::Warn;
    }
    if (auto sub = settings::get(settings::kDebugSubsys)) c.subsys = parseSubsys(sub->c_str());
    if (auto file = settings::get(settings::kDebugFile)) c.out = openLogFile(file->c_str());
    return c;
  }();
  return cfg;
}

thread_local int tlsRank = -1;
thread_local std::string tlsLastError;
std::mutex logMutex;

}  // namespace

bool logEnabled(LogLevel level, uint32_t subsys) {
  const LogConfig& c = config();
  return static_cast<int>(level) <= static_cast<int>(c.level) && (level == LogLevel::Warn || (c.subsys & subsys));
}

void logMessage(LogLevel level, uint32_t subsys, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (level == LogLevel::Warn) tlsLastError = msg;
  if (!logEnabled(level, subsys)) return;
  static char host[64] = {};
  if (!host[0]) {
    gethostname(host, sizeof(host) - 1);
    if (char* dot = strchr(host, '.')) *dot = 0;
  }
  const char* lvl = level == LogLevel::Warn ? "WARN" : level == LogLevel::Info ? "INFO" : "TRACE";
  char rank[16] = "";
  if (tlsRank >= 0) snprintf(rank, sizeof(rank), " [%d]", tlsRank);
  std::lock_guard<std::mutex> lock(logMutex);
  fprintf(config().out, "%s:%d:%ld%s weft %s %s\n", host, getpid(), static_cast<long>(syscall(SYS_gettid)), rank, lvl,
          msg);
  fflush(config().out);
}

void setLogRank(int rank) { tlsRank = rank; }

const std::string& lastError() { return tlsLastError; }
void setLastError(const std::string& msg) { tlsLastError = msg; }

}  // namespace weft
