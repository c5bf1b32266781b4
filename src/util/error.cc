#include "src/util/error.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include <sys/resource.h>

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
  raise(weftSystemError, "%s failed: %s (errno %d)%s", what, strerror(e), e, resourceHint(e).c_str());
}

namespace {
std::string limitText(int resource) {
  rlimit r{};
  if (getrlimit(resource, &r) != 0) return "unknown";
  return r.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(r.rlim_cur);
}
}  // namespace

std::string resourceHint(int err, const char* context) {
  const std::string what = context ? context : "";
  if (err == EMFILE)
    return "; this process has reached its open-file limit (ulimit -n is " + limitText(RLIMIT_NOFILE) +
           "): raise it, e.g. ulimit -n 65536";
  if (err == ENFILE) return "; the system's open-file limit is reached (/proc/sys/fs/file-max)";
  if (err == EAGAIN && what == "thread")
    return "; no more threads (ulimit -u is " + limitText(RLIMIT_NPROC) +
           ", see also /proc/sys/kernel/threads-max and the container's pids limit)";
  if ((err == ENOMEM || err == EAGAIN || err == EPERM) && what == "pin")
    return "; locked memory is limited (ulimit -l is " + limitText(RLIMIT_MEMLOCK) + "): raise it, e.g. ulimit -l unlimited";
  if ((err == ENOSPC || err == ENOMEM) && what == "shm")
    return "; /dev/shm is full or too small (df -h /dev/shm; in a container, --shm-size)";
  return std::string();
}

}  // namespace weft
