#include "src/compress/sign.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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
  const float scale = x.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(x.size()));
  char* b = static_cast<char*>(block);
  memset(b, 0, kHeaderBytes);
  memcpy(b, &scale, sizeof(scale));
  uint64_t* w = reinterpret_cast<uint64_t*>(b + kHeaderBytes);
  // A word at a time, built in a register.
  for (size_t base = 0; base < x.size(); base += 64) {
    const size_t n = std::min<size_t>(64, x.size() - base);
    uint64_t word = 0;
    for (size_t i = 0; i < n; i++) word |= uint64_t(!(x[base + i] < 0.0f)) << i;
    w[base / 64] = word;
  }
  return scale;
}

namespace {
// f(i, +scale or -scale) for every entry, a word at a time.
template <class F>
void forEachDecoded(const void* block, size_t count, F&& f) {
  const float s = scaleOf(block);
  const uint64_t* w = bits(block);
  for (size_t base = 0; base < count; base += 64) {
    const size_t n = std::min<size_t>(64, count - base);
    const uint64_t word = w[base / 64];
    for (size_t i = 0; i < n; i++) f(base + i, ((word >> i) & 1u) ? s : -s);
  }
}
}  // namespace

void unpackSigns(const void* block, std::span<float> out) {
  forEachDecoded(block, out.size(), [&](size_t i, float d) { out[i] = d; });
}

void unpackSignsAdd(const void* block, std::span<float> out) {
  forEachDecoded(block, out.size(), [&](size_t i, float d) { out[i] += d; });
}

void signResidual(std::span<const float> x, const void* block, std::span<float> residual) {
  forEachDecoded(block, x.size(), [&](size_t i, float d) { residual[i] = x[i] - d; });
}

}  // namespace weft::compress
