// Internal error type. Code inside weft throws weft::Error; every C API entry
// point catches it and turns it into a weftResult_t (no exception crosses the
// C ABI). The message is also recorded as the "last error".
#pragma once

#include <stdexcept>
#include <string>

#include "weft/weft.h"

namespace weft {

class Error : public std::runtime_error {
 public:
  Error(weftResult_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  weftResult_t code() const { return code_; }

 private:
  weftResult_t code_;
};

// Builds the message with printf-style formatting, logs it at WARN and throws.
[[noreturn]] void raise(weftResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Throws a weftSystemError naming the failed call and errno's text (and,
// where errno says a limit was hit, resourceHint's advice).
[[noreturn]] void raiseErrno(const char* what);

// For an errno that means a process or system limit was reached (EMFILE,
// ENFILE, EAGAIN from thread creation, ENOMEM from locking memory, ENOSPC in
// /dev/shm): "; " + which limit, its current value and how to raise it.
// Empty for other errors. `context` says what failed ("thread", "shm",
// "pin", or anything else for descriptors).
std::string resourceHint(int err, const char* context = "");

}  // namespace weft
