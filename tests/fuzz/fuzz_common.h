// Shared by the fuzz targets: a reader that takes typed values off the
// fuzz input (zeros once it runs out), and quiet logs.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace weft::fuzz {

// Every rejected input logs a WARN line; they go to /dev/null unless
// WEFT_DEBUG_FILE names somewhere else (the lines are still formatted, so
// their formatting is fuzzed too).
inline const bool kQuietLogs = [] {
  setenv("WEFT_DEBUG_FILE", "/dev/null", 0);
  return true;
}();

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), left_(size) {}

  size_t left() const { return left_; }

  // A trivially copyable value from the next bytes (zero-padded at the end).
  template <class T>
  T take() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memset(&v, 0, sizeof(v));
    const size_t n = sizeof(T) < left_ ? sizeof(T) : left_;
    if (n) std::memcpy(&v, p_, n);
    p_ += n;
    left_ -= n;
    return v;
  }
  uint8_t byte() { return take<uint8_t>(); }
  // Up to max bytes.
  std::vector<uint8_t> bytes(size_t max) {
    const size_t n = max < left_ ? max : left_;
    std::vector<uint8_t> out(p_, p_ + n);
    p_ += n;
    left_ -= n;
    return out;
  }
  // The rest, as a string.
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(p_), left_);
    p_ += left_;
    left_ = 0;
    return s;
  }
  // A length-prefixed string (one length byte).
  std::string shortString() {
    const size_t n = byte();
    auto b = bytes(n);
    return std::string(b.begin(), b.end());
  }

 private:
  const uint8_t* p_;
  size_t left_;
};

// Fails the run (an abort is what both libFuzzer and the replay driver
// report as a crash) when an invariant of the code under test is broken.
#define WEFT_FUZZ_CHECK(cond)                                                       \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                       \
    }                                                                                \
  } while (0)

}  // namespace weft::fuzz
