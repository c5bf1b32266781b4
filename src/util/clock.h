// Monotonic time and deadlines for bounded waits.
#pragma once

#include <chrono>
#include <cstdint>

namespace weft {

using Clock = std::chrono::steady_clock;

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// A point in time after which a wait gives up. Deadline::after(ms).
struct Deadline {
  int64_t atNs;
  static Deadline after(int64_t ms) { return Deadline{nowNs() + ms * 1000000}; }
  bool passed() const { return nowNs() >= atNs; }
  int64_t remainingNs() const {
    int64_t r = atNs - nowNs();
    return r > 0 ? r : 0;
  }
};

}  // namespace weft
