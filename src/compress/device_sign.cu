// Sign compression on device buffers: per-chunk scales (a deterministic
// tree reduction in double), sign words, decoding, error feedback and the
// owner's sum. Per element, the functions of compress_fn.h (shared with
// the host's sign.cc).
#include "src/compress/device_kernels.h"
#include "src/compress/device_launch.cuh"
#include "src/util/error.h"

namespace weft::compress::device {
namespace {

constexpr size_t kHeaderBytes = 8;  // sign.h's layout: the float scale, 4 zero bytes, then the words

__device__ inline size_t chunkLength(size_t count, size_t chunkElems, size_t c) {
  const size_t off = c * chunkElems;
  if (off >= count) return 0;
  return count - off < chunkElems ? count - off : chunkElems;
}

static_assert(kThreads == kSignScaleThreads, "the scale's tree is laid out for kSignScaleThreads threads");

// Blocks per chunk of the scale's first reduction step: a function of the
// chunk size alone, so the summation tree is the same on every call.
unsigned partialsFor(size_t chunkElems) { return signScaleParts(chunkElems); }

// Sums kThreads doubles of shared memory into sh[0], pairing halves: a
// fixed tree.
__device__ void treeSum(double* sh) {
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) sh[threadIdx.x] += sh[threadIdx.x + half];
    __syncthreads();
  }
}

// partial[c * gridDim.x + b] = the sum of |x| over block b's segment of
// chunk c (blockIdx.y).
__global__ void scalePartialKernel(const float* x, size_t count, size_t chunkElems, double* partial) {
  __shared__ double sh[kThreads];
  const size_t c = blockIdx.y, len = chunkLength(count, chunkElems, c);
  const size_t seg = signScaleSegment(chunkElems, gridDim.x);
  const size_t begin = blockIdx.x * seg, end = begin + seg < len ? begin + seg : len;
  sh[threadIdx.x] = signThreadSum(x + c * chunkElems, begin, end, threadIdx.x);
  treeSum(sh);
  if (threadIdx.x == 0) partial[c * gridDim.x + blockIdx.x] = sh[0];
}

// The scale of chunk blockIdx.x from its `parts` partial sums, written as
// the block's header.
__global__ void scaleFinishKernel(const double* partial, unsigned parts, size_t count, size_t chunkElems,
                                  unsigned char* blocks, size_t blockBytes) {
  __shared__ double sh[kThreads];
  const size_t c = blockIdx.x;
  sh[threadIdx.x] = threadIdx.x < parts ? partial[c * parts + threadIdx.x] : 0.0;
  treeSum(sh);
  if (threadIdx.x == 0) {
    const float scale = signScale(sh[0], chunkLength(count, chunkElems, c));
    *reinterpret_cast<uint64_t*>(blocks + c * blockBytes) = uint64_t(kernels::ScalarLanes::asBits(scale));
  }
}

__global__ void wordsKernel(const float* x, size_t count, size_t chunkElems, size_t chunks, unsigned char* blocks,
                            size_t blockBytes) {
  const size_t wordsPerChunk = (chunkElems + 63) / 64;
  for (size_t item = firstIndex(); item < chunks * wordsPerChunk; item += gridStride()) {
    const size_t c = item / wordsPerChunk, w = item % wordsPerChunk;
    const size_t len = chunkLength(count, chunkElems, c), first = 64 * w;
    uint64_t word = 0;
    if (first < len) word = signWord(x + c * chunkElems + first, len - first < 64 ? len - first : 64);
    reinterpret_cast<uint64_t*>(blocks + c * blockBytes + kHeaderBytes)[w] = word;
  }
}

// Entry j of a packed chunk.
__device__ inline float decodeAt(const unsigned char* block, size_t j) {
  const float scale = kernels::ScalarLanes::asFloat(uint32_t(*reinterpret_cast<const uint64_t*>(block)));
  const uint64_t word = reinterpret_cast<const uint64_t*>(block + kHeaderBytes)[j / 64];
  return signDecode(scale, word, unsigned(j % 64));
}

// out[i] = decode(i), or x[i] - decode(i) when x is not null.
__global__ void decodeKernel(float* out, const float* x, size_t count, size_t chunkElems,
                             const unsigned char* blocks, size_t blockBytes) {
  for (size_t i = firstIndex(); i < count; i += gridStride()) {
    const size_t c = i / chunkElems;
    const float d = decodeAt(blocks + c * blockBytes, i - c * chunkElems);
    out[i] = x ? signResidualOf(x[i], d) : d;
  }
}

__global__ void sumBlocksKernel(float* sum, size_t len, const unsigned char* blocks, size_t blockBytes, int nblocks,
                                const float* residual) {
  for (size_t i = firstIndex(); i < len; i += gridStride()) {
    float s = 0.0f;
    for (int b = 0; b < nblocks; b++) s += decodeAt(blocks + size_t(b) * blockBytes, i);
    sum[i] = residual ? withResidual(s, residual[i]) : s;
  }
}

}  // namespace

size_t signScratchBytes(size_t chunkElems, int chunks) {
  return size_t(partialsFor(chunkElems)) * size_t(chunks < 1 ? 1 : chunks) * sizeof(double);
}

void signPack(const float* x, size_t count, size_t chunkElems, int chunks, unsigned char* blocks, size_t blockBytes,
              void* scratch, cudaStream_t s) {
  if (chunks <= 0 || chunkElems == 0) return;
  const unsigned parts = partialsFor(chunkElems);
  double* partial = static_cast<double*>(scratch);
  scalePartialKernel<<<dim3(parts, unsigned(chunks)), kThreads, 0, s>>>(x, count, chunkElems, partial);
  WEFT_KERNEL_CHECK();
  scaleFinishKernel<<<unsigned(chunks), kThreads, 0, s>>>(partial, parts, count, chunkElems, blocks, blockBytes);
  WEFT_KERNEL_CHECK();
  const size_t words = size_t(chunks) * ((chunkElems + 63) / 64);
  wordsKernel<<<gridFor(words), kThreads, 0, s>>>(x, count, chunkElems, size_t(chunks), blocks, blockBytes);
  WEFT_KERNEL_CHECK();
}

void signUnpack(float* out, size_t count, size_t chunkElems, const unsigned char* blocks, size_t blockBytes,
                cudaStream_t s) {
  if (count == 0) return;
  decodeKernel<<<gridFor(count), kThreads, 0, s>>>(out, nullptr, count, chunkElems, blocks, blockBytes);
  WEFT_KERNEL_CHECK();
}

void signResidual(float* residual, const float* x, size_t count, size_t chunkElems, const unsigned char* blocks,
                  size_t blockBytes, cudaStream_t s) {
  if (count == 0) return;
  decodeKernel<<<gridFor(count), kThreads, 0, s>>>(residual, x, count, chunkElems, blocks, blockBytes);
  WEFT_KERNEL_CHECK();
}

void signSumBlocks(float* sum, size_t len, const unsigned char* blocks, size_t blockBytes, int nblocks,
                   const float* residual, cudaStream_t s) {
  if (len == 0) return;
  sumBlocksKernel<<<gridFor(len), kThreads, 0, s>>>(sum, len, blocks, blockBytes, nblocks, residual);
  WEFT_KERNEL_CHECK();
}

void preloadSignKernels() {
  const void* kernels[] = {
      reinterpret_cast<const void*>(&scalePartialKernel), reinterpret_cast<const void*>(&scaleFinishKernel),
      reinterpret_cast<const void*>(&wordsKernel), reinterpret_cast<const void*>(&decodeKernel),
      reinterpret_cast<const void*>(&sumBlocksKernel)};
  for (const void* k : kernels) {
    cudaFuncAttributes a{};
    WEFT_CUDA_CHECK(cudaFuncGetAttributes(&a, k));
  }
}

}  // namespace weft::compress::device
