#include "src/util/error.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "src/util/log.h"

namespace weft {

void raise(weftResult_t code, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  logMessage(LogLevel::Warn, kAll, "%s", msg);
  throw Error(code, msg);
}

void raiseErrno(const char* what) {
  int e = errno;
  raise(weftSystemError, "%s failed: %s (errno %d)", what, strerror(e), e);
}

}  // namespace weft
