// Logging controlled by WEFT_DEBUG (WARN|INFO|TRACE), WEFT_DEBUG_SUBSYS (comma
// list, ^ to exclude: INIT,BOOTSTRAP,NET,SHM,COLL,P2P,TUNE,GRAPH,ENV,PROXY,ALL)
// and WEFT_DEBUG_FILE (%h host, %p pid). Lines look like
//   host:pid:tid [rank] weft INFO <message>
#pragma once

#include <cstdint>
#include <string>

namespace weft {

enum class LogLevel : int { None = 0, Warn = 1, Info = 2, Trace = 3 };

enum LogSubsys : uint32_t {
  kInit = 1u << 0,
  kBootstrap = 1u << 1,
  kNet = 1u << 2,
  kShm = 1u << 3,
  kColl = 1u << 4,
  kP2p = 1u << 5,
  kTune = 1u << 6,
  kGraph = 1u << 7,
  kEnv = 1u << 8,
  kProxy = 1u << 9,
  kAll = ~0u,
};

bool logEnabled(LogLevel level, uint32_t subsys);
void logMessage(LogLevel level, uint32_t subsys, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

// The rank printed in this thread's log lines (-1: none).
void setLogRank(int rank);

// Last error text of this thread, and the setter the C API uses.
const std::string& lastError();
void setLastError(const std::string& msg);

}  // namespace weft

#define WEFT_WARN(...) ::weft::logMessage(::weft::LogLevel::Warn, ::weft::kAll, __VA_ARGS__)
#define WEFT_INFO(subsys, ...)                                                           \
  do {                                                                                 \
    if (::weft::logEnabled(::weft::LogLevel::Info, subsys))                              \
      ::weft::logMessage(::weft::LogLevel::Info, subsys, __VA_ARGS__);                  \
  } while (0)
#define WEFT_TRACE(subsys, ...)                                                          \
  do {                                                                                 \
    if (::weft::logEnabled(::weft::LogLevel::Trace, subsys))                             \
      ::weft::logMessage(::weft::LogLevel::Trace, subsys, __VA_ARGS__);                 \
  } while (0)
