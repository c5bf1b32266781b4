// The CUDA kernels of device-buffer compression, as host functions that
// queue them on a stream (device_topk.cu, device_sign.cu). Every element's
// arithmetic is a function of src/compress/compress_fn.h, shared with the
// host code, so the device keeps the same entries and computes the same
// values as the host (the Sign scale excepted: see signPack). Nothing here
// waits for the device or copies to the host: a call only queues work.
// Errors from the CUDA runtime throw weft::Error (WEFT_CUDA_CHECK).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "src/compress/compress_fn.h"
#include "weft/weft.h"

namespace weft::compress::device {

// v[i] = x[i] converted to float32 from `type` (float32, float16 or
// bfloat16), plus residual[i] when residual is not null.
void loadInput(float* v, const void* x, weftDataType_t type, const float* residual, size_t n, cudaStream_t s);

// out[i] = v[i] converted to `type` (float32: a copy unless out == v).
void storeOutput(void* out, const float* v, weftDataType_t type, size_t n, cudaStream_t s);

// Loads every compression kernel (TopK and Sign) into the current
// device's context now rather than at its first launch (see device_topk.cu).
void preloadCompressionKernels();
// The Sign kernels alone (device_sign.cu; preloadCompressionKernels calls it).
void preloadSignKernels();

// ---- TopK -----------------------------------------------------------------

// Device scratch the selection needs for n entries (histograms, the radix
// state, the per-run counts).
size_t topkScratchBytes(size_t n);

// The k entries of v[0, n) with the largest magnitude, as pairs in
// ascending index order: the same entries as the host's selectTopK (ties to
// the lower index, NaN the largest). k >= 1, n <= UINT32_MAX.
void topkSelect(const float* v, size_t n, size_t k, void* scratch, TopKPair* pairs, cudaStream_t s);

// Error feedback: residual = v with the entries of mine[0, k) zeroed.
void topkKeepUnsent(float* residual, const float* v, size_t n, const TopKPair* mine, size_t k, cudaStream_t s);

// out = 0, then out[p.index] += p.value for the k pairs of each of `blocks`
// consecutive blocks, block after block (the host's order, so the sums
// round alike). A pair with an index >= n is skipped and sets *badIndex.
void topkScatterAdd(float* out, size_t n, const TopKPair* pairs, size_t k, int blocks, int* badIndex,
                    cudaStream_t s);

// ---- Sign -----------------------------------------------------------------
// x[0, count) is split into chunks of chunkElems entries (chunk c starts at
// c * chunkElems; the last ones may be short or empty); chunk c's packed
// form (sign.h's layout: the scale, then the sign words) is at
// blocks + c * blockBytes.

// Device scratch signPack needs for `chunks` chunks.
size_t signScratchBytes(size_t chunkElems, int chunks);

// Packs `chunks` chunks. The scale is the mean magnitude summed in double
// by a fixed tree (deterministic run to run; it may differ from the host's
// sequential sum in the float's last bit).
void signPack(const float* x, size_t count, size_t chunkElems, int chunks, unsigned char* blocks, size_t blockBytes,
              void* scratch, cudaStream_t s);

// out[i] = decode(i) over the chunks of [0, count).
void signUnpack(float* out, size_t count, size_t chunkElems, const unsigned char* blocks, size_t blockBytes,
                cudaStream_t s);

// residual[i] = x[i] - decode(i) over the chunks of [0, count).
void signResidual(float* residual, const float* x, size_t count, size_t chunkElems, const unsigned char* blocks,
                  size_t blockBytes, cudaStream_t s);

// sum[i] = the decoded entry i of each of `blocks` blocks (one chunk each),
// added in block order, plus residual[i] when residual is not null.
void signSumBlocks(float* sum, size_t len, const unsigned char* blocks, size_t blockBytes, int nblocks,
                   const float* residual, cudaStream_t s);

}  // namespace weft::compress::device
