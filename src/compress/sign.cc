#include "src/compress/sign.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "src/compress/compress_fn.h"

namespace weft::compress {

namespace {
constexpr size_t kHeaderBytes = 8;

const uint64_t* bits(const void* block) {
  return reinterpret_cast<const uint64_t*>(static_cast<const char*>(block) + kHeaderBytes);
}
float scaleOf(const void* block) {
  float s;
  memcpy(&s, block, sizeof(s));
  return s;
}
}  // namespace

size_t signBlockBytes(size_t elems) { return kHeaderBytes + 8 * ((elems + 63) / 64); }

float packSigns(std::span<const float> x, void* block) {
  double sum = 0;
  for (float v : x) sum += std::fabs(v);
  const float scale = signScale(sum, x.size());
  char* b = static_cast<char*>(block);
  memset(b, 0, kHeaderBytes);
  memcpy(b, &scale, sizeof(scale));
  uint64_t* w = reinterpret_cast<uint64_t*>(b + kHeaderBytes);
  // A word at a time, built in a register.
  for (size_t base = 0; base < x.size(); base += 64)
    w[base / 64] = signWord(x.data() + base, std::min<size_t>(64, x.size() - base));
  return scale;
}

namespace {
// +1 or -1 for each bit of a byte, so decoding is a multiply per entry
// (the compiler vectorises the 8 entries of a byte) instead of a shift and
// a branch.
struct SignTable {
  float v[256][8];
  SignTable() {
    for (int b = 0; b < 256; b++)
      for (int i = 0; i < 8; i++) v[b][i] = signFactor(((b >> i) & 1) != 0);
  }
};
const SignTable& signTable() {
  static const SignTable t;
  return t;
}

// f(i, +scale or -scale) for every entry, a byte of bits at a time (the
// bits are little-endian 64-bit words, so byte k holds entries 8k..8k+7).
template <class F>
void forEachDecoded(const void* block, size_t count, F&& f) {
  const float s = scaleOf(block);
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(bits(block));
  const SignTable& t = signTable();
  size_t base = 0;
  for (; base + 8 <= count; base += 8) {
    const float* sign = t.v[bytes[base / 8]];
    for (size_t i = 0; i < 8; i++) f(base + i, s * sign[i]);
  }
  for (; base < count; base++) f(base, s * t.v[bytes[base / 8]][base % 8]);
}
}  // namespace

void unpackSigns(const void* block, std::span<float> out) {
  forEachDecoded(block, out.size(), [&](size_t i, float d) { out[i] = d; });
}

void unpackSignsAdd(const void* block, std::span<float> out) {
  forEachDecoded(block, out.size(), [&](size_t i, float d) { out[i] += d; });
}

void signResidual(std::span<const float> x, const void* block, std::span<float> residual) {
  forEachDecoded(block, x.size(), [&](size_t i, float d) { residual[i] = signResidualOf(x[i], d); });
}

}  // namespace weft::compress
