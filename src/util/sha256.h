// SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104), for authenticating the
// bootstrap's and the socket transport's connections. Small inputs only: the
// wire protocols hash hellos and bootstrap frames, never collective payloads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace weft {

using Digest256 = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  Digest256 finish();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

// HMAC-SHA-256 keyed once, then applied to messages given in pieces.
class HmacSha256 {
 public:
  HmacSha256(const void* key, size_t keyBytes);
  HmacSha256& update(const void* data, size_t bytes) {
    inner_.update(data, bytes);
    return *this;
  }
  Digest256 finish();

 private:
  Sha256 inner_;
  std::array<uint8_t, 64> outerPad_{};
};

// Compares without an early exit, so the time taken says nothing about
// where two MACs first differ.
bool constantTimeEqual(const void* a, const void* b, size_t bytes);

}  // namespace weft
