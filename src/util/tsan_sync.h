// Happens-before that ThreadSanitizer cannot see by itself: an ordering
// through memory that threads of one process reach at different virtual
// addresses (one shared-memory segment mapped once per rank). TSan keys its
// synchronisation by address, so a release store through one mapping and an
// acquire load through another order nothing for it, and every access the
// pair orders is reported as a race. Both sides name the ordering by a
// string every mapping agrees on (a segment's name); keyFor turns it into
// one address per process, and release/acquire on that address tell TSan
// what the hardware already does. Compiled to nothing without TSan, so the
// data path is unchanged; with it, TSan still checks every access that is
// not ordered this way.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define WEFT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TSAN 1
#endif
#endif

#ifdef WEFT_TSAN
#include <sanitizer/tsan_interface.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#endif

namespace weft::tsan {

#ifdef WEFT_TSAN
// One address per name for the whole process (kept until exit: a few bytes
// per name, and only in TSan builds).
inline void* keyFor(const std::string& name) {
  static std::mutex mu;
  static auto* keys = new std::map<std::string, std::unique_ptr<char>>;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<char>& k = (*keys)[name];
  if (!k) k = std::make_unique<char>();
  return k.get();
}
// Call right before the release store that publishes, with the key of the
// memory it publishes in.
inline void release(void* key) { __tsan_release(key); }
// Call right after the acquire load that saw it.
inline void acquire(void* key) { __tsan_acquire(key); }
#else
inline void* keyFor(const std::string&) { return nullptr; }
inline void release(void*) {}
inline void acquire(void*) {}
#endif

}  // namespace weft::tsan
