// The C boundary: every API function runs its body through guarded(), which
// turns weft::Error (and anything else thrown) into a result code.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <system_error>

#include "src/core/comm.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

template <class F>
weftResult_t guarded(F&& body) noexcept {
  try {
    return body();
  } catch (const Error& e) {
    setLastError(e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    WEFT_WARN("out of memory");
    setLastError("out of memory");
    return weftSystemError;
  } catch (const std::system_error& e) {
    // Thread creation and the like: the system said no, with a reason.
    std::string msg = std::string(e.what()) + resourceHint(e.code().value(), "thread");
    WEFT_WARN("%s", msg.c_str());
    setLastError(msg);
    return weftSystemError;
  } catch (const std::exception& e) {
    WEFT_WARN("internal error: %s", e.what());
    return weftInternalError;
  } catch (...) {
    WEFT_WARN("internal error: unknown exception");
    return weftInternalError;
  }
}

// Checks a communicator handle: null -> weftInvalidArgument; not a live
// communicator (destroyed, garbage) -> weftInvalidUsage.
inline weftResult_t checkComm(const weftComm* comm, const char* fn) {
  if (!comm) {
    WEFT_WARN("%s: comm is NULL", fn);
    return weftInvalidArgument;
  }
  if (!isLiveComm(comm)) {
    WEFT_WARN("%s: comm %p is not a live communicator (destroyed or never created)", fn,
              static_cast<const void*>(comm));
    return weftInvalidUsage;
  }
  return weftSuccess;
}

}  // namespace weft
