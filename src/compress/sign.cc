#include "src/compress/sign.h"

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
inline float decoded(const uint64_t* w, size_t i, float scale) {
  return ((w[i / 64] >> (i % 64)) & 1u) ? scale : -scale;
}
}  // namespace

size_t signBlockBytes(size_t elems) { return kHeaderBytes + 8 * ((elems + 63) / 64); }

float packSigns(std::span<const float> x, void* block) {
  double sum = 0;
  for (float v : x) sum += std::fabs(v);
  const float scale = x.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(x.size()));
  char* b = static_cast<char*>(block);
  memset(b, 0, signBlockBytes(x.size()));
  memcpy(b, &scale, sizeof(scale));
  uint64_t* w = reinterpret_cast<uint64_t*>(b + kHeaderBytes);
  for (size_t i = 0; i < x.size(); i++)
    if (!std::signbit(x[i]) || x[i] == 0.0f) w[i / 64] |= uint64_t(1) << (i % 64);
  return scale;
}

void unpackSigns(const void* block, std::span<float> out) {
  const float s = scaleOf(block);
  const uint64_t* w = bits(block);
  for (size_t i = 0; i < out.size(); i++) out[i] = decoded(w, i, s);
}

void unpackSignsAdd(const void* block, std::span<float> out) {
  const float s = scaleOf(block);
  const uint64_t* w = bits(block);
  for (size_t i = 0; i < out.size(); i++) out[i] += decoded(w, i, s);
}

void signResidual(std::span<const float> x, const void* block, std::span<float> residual) {
  const float s = scaleOf(block);
  const uint64_t* w = bits(block);
  for (size_t i = 0; i < x.size(); i++) residual[i] = x[i] - decoded(w, i, s);
}

}  // namespace weft::compress
