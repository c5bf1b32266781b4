#include "src/kernels/streaming.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define WEFT_HAVE_STREAM_STORES 1
#endif

namespace weft::kernels {
namespace {

// The L1-resident block a streaming reduction computes into.
unsigned char* blockBuffer() {
  alignas(64) static thread_local unsigned char block[kStreamBlockBytes];
  return block;
}

// The body of copyStreaming without the fence (several copies share one).
void streamBytes(unsigned char* dst, const unsigned char* src, size_t bytes) {
#if WEFT_HAVE_STREAM_STORES
  // Head and tail through the cache; 16-byte aligned stores in between.
  const size_t head = std::min(bytes, size_t((16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16));
  memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i v3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), v0);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), v1);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), v2);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), v3);
  }
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  memcpy(dst + i, src + i, bytes - i);
#else
  memcpy(dst, src, bytes);
#endif
}

void fence() {
#if WEFT_HAVE_STREAM_STORES
  _mm_sfence();
#endif
}

}  // namespace

void copyStreamingUnfenced(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  streamBytes(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), bytes);
}

void streamFence() { fence(); }

void copyStreaming(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  streamBytes(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), bytes);
  fence();
}

void reduceStreaming(void* const* dsts, int nDst, const void* a, const void* b, size_t count, const RedOp& op,
                     unsigned apply) {
  const size_t elem = typeSize(op.type);
  if (count == 0 || elem == 0) return reduce(dsts[0], a, b, count, op, apply);  // reduce() reports a bad type
  const size_t per = kStreamBlockBytes / elem;
  unsigned char* block = blockBuffer();
  for (size_t at = 0; at < count; at += per) {
    const size_t n = std::min(per, count - at), off = at * elem;
    reduce(block, static_cast<const unsigned char*>(a) + off, static_cast<const unsigned char*>(b) + off, n, op, apply);
    for (int d = 0; d < nDst; d++) streamBytes(static_cast<unsigned char*>(dsts[d]) + off, block, n * elem);
  }
  fence();
}

void transformStreaming(void* const* dsts, int nDst, const void* src, size_t count, const RedOp& op,
                        unsigned apply) {
  const size_t elem = typeSize(op.type);
  if (count == 0 || elem == 0) return transform(dsts[0], src, count, op, apply);
  const bool plainCopy = !(op.kind == OpKind::Avg && (apply & kApplyPost)) &&
                         !(op.kind == OpKind::PreMulSum && (apply & kApplyPre));
  if (plainCopy) {  // straight from src, no block in between
    for (int d = 0; d < nDst; d++)
      if (dsts[d] != src) streamBytes(static_cast<unsigned char*>(dsts[d]), static_cast<const unsigned char*>(src), count * elem);
    return fence();
  }
  const size_t per = kStreamBlockBytes / elem;
  unsigned char* block = blockBuffer();
  for (size_t at = 0; at < count; at += per) {
    const size_t n = std::min(per, count - at), off = at * elem;
    const unsigned char* from = static_cast<const unsigned char*>(src) + off;
    transform(block, from, n, op, apply);
    for (int d = 0; d < nDst; d++) streamBytes(static_cast<unsigned char*>(dsts[d]) + off, block, n * elem);
  }
  fence();
}

}  // namespace weft::kernels
