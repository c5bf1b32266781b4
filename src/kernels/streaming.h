// Non-temporal ("streaming") writes for outputs that will not be read again
// soon: a large collective's result. An ordinary store first reads the line
// it writes into the cache (read for ownership), so a copy of N bytes into
// memory that is not cached moves 3N bytes through the memory bus; a
// non-temporal store skips that read and moves 2N. Collectives larger than
// the caches are bound by that bus (2 ranks on 2 cores: docs/benchmarks.md).
//
// Each function ends with a store fence: non-temporal stores are weakly
// ordered, and the caller publishes what it wrote with an ordinary release
// store (a FIFO post, a barrier counter) that must not overtake them.
// Results are bit-identical to reduce()/transform() (the same loops compute
// each block into a small buffer that stays in L1, then it is streamed out).
#pragma once

#include <cstddef>

#include "src/kernels/reduce.h"

namespace weft::kernels {

// Bytes one block of a streaming reduction computes before streaming it out.
inline constexpr size_t kStreamBlockBytes = 8 * 1024;

// memcpy(dst, src, bytes) with non-temporal stores (plain memcpy off x86).
void copyStreaming(void* dst, const void* src, size_t bytes);
// The same without the closing fence: several copies, then one streamFence().
void copyStreamingUnfenced(void* dst, const void* src, size_t bytes);
void streamFence();

// reduce() whose result goes to each of dsts[0..nDst) with streaming stores.
// A dst may alias a or b exactly (in place).
void reduceStreaming(void* const* dsts, int nDst, const void* a, const void* b, size_t count, const RedOp& op,
                     unsigned apply);
// transform() likewise.
void transformStreaming(void* const* dsts, int nDst, const void* src, size_t count, const RedOp& op, unsigned apply);

}  // namespace weft::kernels
