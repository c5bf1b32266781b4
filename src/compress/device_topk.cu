// TopK on device buffers: input and output conversion, the radix select of
// the threshold, the compaction of the kept entries into (index, value)
// pairs in index order, error feedback and the scatter-add. Per element,
// the functions of compress_fn.h (shared with the host's selectTopK).
#include "src/compress/device_kernels.h"
#include "src/compress/device_launch.cuh"
#include "src/util/error.h"

namespace weft::compress::device {
namespace {

template <class Load>
__global__ void loadKernel(float* v, const void* x, const float* residual, size_t n, Load load) {
  for (size_t i = firstIndex(); i < n; i += gridStride()) {
    const float f = load(x, i);
    v[i] = residual ? withResidual(f, residual[i]) : f;
  }
}

struct LoadF32 {
  __device__ float operator()(const void* x, size_t i) const { return static_cast<const float*>(x)[i]; }
};
struct LoadF16 {
  __device__ float operator()(const void* x, size_t i) const {
    return kernels::halfToFloat(static_cast<const uint16_t*>(x)[i]);
  }
};
struct LoadBf16 {
  __device__ float operator()(const void* x, size_t i) const {
    return kernels::bf16ToFloat(static_cast<const uint16_t*>(x)[i]);
  }
};

__global__ void storeNarrowKernel(uint16_t* out, const float* v, size_t n, bool bf16) {
  for (size_t i = firstIndex(); i < n; i += gridStride())
    out[i] = bf16 ? kernels::floatToBf16(v[i]) : kernels::floatToHalf(v[i]);
}

// Per-block histograms of pass `pass`'s digit over the keys that match the
// digits chosen so far, added into hist (integer counts: the order of the
// atomic adds does not change the result).
__global__ void histogramKernel(const float* v, size_t n, int pass, const RadixState* state, uint32_t* hist) {
  __shared__ uint32_t local[kRadixBins];
  for (int d = threadIdx.x; d < kRadixBins; d += blockDim.x) local[d] = 0;
  __syncthreads();
  const uint32_t prefix = state->prefix;
  for (size_t i = firstIndex(); i < n; i += gridStride()) {
    const uint32_t key = magnitudeKey(v[i]);
    if (radixPrefixMatches(key, prefix, pass)) atomicAdd(&local[radixDigit(key, pass)], 1u);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < kRadixBins; d += blockDim.x)
    if (local[d]) atomicAdd(&hist[d], local[d]);
}

__global__ void radixInitKernel(RadixState* state, uint32_t k) { *state = RadixState{0, k}; }

__global__ void radixChooseKernel(const uint32_t* hist, int pass, RadixState* state) {
  if (threadIdx.x == 0 && blockIdx.x == 0) radixChoose(hist, pass, *state);
}

__global__ void runCountsKernel(const float* v, size_t n, size_t runLen, size_t runs, const RadixState* state,
                                TopKCounts* counts) {
  for (size_t r = firstIndex(); r < runs; r += gridStride()) {
    const size_t end = (r + 1) * runLen < n ? (r + 1) * runLen : n;
    counts[r] = topkRunCounts(v, r * runLen, end, state->prefix);
  }
}

// Exclusive scan of the runs' counts, in place, by one block: each thread
// owns a contiguous segment; the segments' totals are scanned by thread 0.
constexpr int kScanThreads = 1024;
__global__ void scanRunsKernel(TopKCounts* counts, size_t runs) {
  __shared__ TopKCounts totals[kScanThreads];
  const size_t seg = (runs + kScanThreads - 1) / kScanThreads;
  const size_t begin = threadIdx.x * seg, end = begin + seg < runs ? begin + seg : runs;
  TopKCounts t{0, 0};
  for (size_t r = begin; r < end; r++) {
    t.above += counts[r].above;
    t.ties += counts[r].ties;
  }
  totals[threadIdx.x] = t;
  __syncthreads();
  if (threadIdx.x == 0) {
    TopKCounts run{0, 0};
    for (int i = 0; i < kScanThreads; i++) {
      const TopKCounts x = totals[i];
      totals[i] = run;
      run.above += x.above;
      run.ties += x.ties;
    }
  }
  __syncthreads();
  TopKCounts before = totals[threadIdx.x];
  for (size_t r = begin; r < end; r++) {
    const TopKCounts x = counts[r];
    counts[r] = before;
    before.above += x.above;
    before.ties += x.ties;
  }
}

__global__ void packRunsKernel(const float* v, size_t n, size_t runLen, size_t runs, const RadixState* state,
                               const TopKCounts* before, TopKPair* pairs) {
  for (size_t r = firstIndex(); r < runs; r += gridStride()) {
    const size_t end = (r + 1) * runLen < n ? (r + 1) * runLen : n;
    topkPackRun(v, r * runLen, end, state->prefix, state->want, before[r], pairs);
  }
}

__global__ void zeroSentKernel(float* residual, const TopKPair* mine, size_t k, size_t n) {
  for (size_t j = firstIndex(); j < k; j += gridStride())
    if (mine[j].index < n) residual[mine[j].index] = 0.0f;
}

// One block of pairs: within a block the indices are distinct, so no two
// threads add to one entry.
__global__ void scatterAddKernel(float* out, size_t n, const TopKPair* pairs, size_t k, int* badIndex) {
  for (size_t j = firstIndex(); j < k; j += gridStride())
    if (!scatterAddPair(pairs[j], out, n)) atomicOr(badIndex, 1);
}

// Scratch layout: kRadixPasses histograms, the radix state, the run counts.
struct TopKScratch {
  uint32_t* hist;
  RadixState* state;
  TopKCounts* counts;
};
TopKScratch carve(void* scratch) {
  char* p = static_cast<char*>(scratch);
  TopKScratch s;
  s.hist = reinterpret_cast<uint32_t*>(p);
  s.state = reinterpret_cast<RadixState*>(p + kRadixPasses * kRadixBins * sizeof(uint32_t));
  s.counts = reinterpret_cast<TopKCounts*>(p + kRadixPasses * kRadixBins * sizeof(uint32_t) + 16);
  return s;
}

}  // namespace

void loadInput(float* v, const void* x, weftDataType_t type, const float* residual, size_t n, cudaStream_t s) {
  if (n == 0) return;
  if (type == weftFloat32) loadKernel<<<gridFor(n), kThreads, 0, s>>>(v, x, residual, n, LoadF32{});
  else if (type == weftFloat16) loadKernel<<<gridFor(n), kThreads, 0, s>>>(v, x, residual, n, LoadF16{});
  else if (type == weftBfloat16) loadKernel<<<gridFor(n), kThreads, 0, s>>>(v, x, residual, n, LoadBf16{});
  else raise(weftInternalError, "device compression: no input conversion from type %d", int(type));
  WEFT_KERNEL_CHECK();
}

void storeOutput(void* out, const float* v, weftDataType_t type, size_t n, cudaStream_t s) {
  if (n == 0) return;
  if (type == weftFloat32) {
    if (out != v) WEFT_CUDA_CHECK(cudaMemcpyAsync(out, v, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (type != weftFloat16 && type != weftBfloat16)
    raise(weftInternalError, "device compression: no output conversion to type %d", int(type));
  storeNarrowKernel<<<gridFor(n), kThreads, 0, s>>>(static_cast<uint16_t*>(out), v, n, type == weftBfloat16);
  WEFT_KERNEL_CHECK();
}

size_t topkScratchBytes(size_t n) {
  const size_t runs = (n + topkRunLength(n) - 1) / topkRunLength(n);
  return kRadixPasses * kRadixBins * sizeof(uint32_t) + 16 + (runs < 1 ? 1 : runs) * sizeof(TopKCounts);
}

void topkSelect(const float* v, size_t n, size_t k, void* scratch, TopKPair* pairs, cudaStream_t s) {
  if (n == 0 || k == 0) return;
  const TopKScratch sc = carve(scratch);
  WEFT_CUDA_CHECK(cudaMemsetAsync(sc.hist, 0, kRadixPasses * kRadixBins * sizeof(uint32_t), s));
  radixInitKernel<<<1, 1, 0, s>>>(sc.state, uint32_t(k));
  WEFT_KERNEL_CHECK();
  for (int pass = 0; pass < kRadixPasses; pass++) {
    uint32_t* hist = sc.hist + pass * kRadixBins;
    histogramKernel<<<gridFor(n), kThreads, 0, s>>>(v, n, pass, sc.state, hist);
    WEFT_KERNEL_CHECK();
    radixChooseKernel<<<1, 1, 0, s>>>(hist, pass, sc.state);
    WEFT_KERNEL_CHECK();
  }
  const size_t runLen = topkRunLength(n), runs = (n + runLen - 1) / runLen;
  runCountsKernel<<<gridFor(runs), kThreads, 0, s>>>(v, n, runLen, runs, sc.state, sc.counts);
  WEFT_KERNEL_CHECK();
  scanRunsKernel<<<1, kScanThreads, 0, s>>>(sc.counts, runs);
  WEFT_KERNEL_CHECK();
  packRunsKernel<<<gridFor(runs), kThreads, 0, s>>>(v, n, runLen, runs, sc.state, sc.counts, pairs);
  WEFT_KERNEL_CHECK();
}

void topkKeepUnsent(float* residual, const float* v, size_t n, const TopKPair* mine, size_t k, cudaStream_t s) {
  if (n == 0) return;
  if (residual != v) WEFT_CUDA_CHECK(cudaMemcpyAsync(residual, v, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
  if (k == 0) return;
  zeroSentKernel<<<gridFor(k), kThreads, 0, s>>>(residual, mine, k, n);
  WEFT_KERNEL_CHECK();
}

void topkScatterAdd(float* out, size_t n, const TopKPair* pairs, size_t k, int blocks, int* badIndex,
                    cudaStream_t s) {
  if (n == 0) return;
  WEFT_CUDA_CHECK(cudaMemsetAsync(out, 0, n * sizeof(float), s));
  for (int b = 0; b < blocks && k > 0; b++) {
    scatterAddKernel<<<gridFor(k), kThreads, 0, s>>>(out, n, pairs + size_t(b) * k, k, badIndex);
    WEFT_KERNEL_CHECK();
  }
}

void preloadCompressionKernels() {
  // With lazy loading a kernel loads at its first launch, and loading can
  // wait for the whole GPU: behind a peer's collective kernel that spins
  // until this rank's collective runs. Loading them all here, before any
  // collective, keeps that wait out of a step.
  const void* kernels[] = {
      reinterpret_cast<const void*>(&loadKernel<LoadF32>), reinterpret_cast<const void*>(&loadKernel<LoadF16>),
      reinterpret_cast<const void*>(&loadKernel<LoadBf16>), reinterpret_cast<const void*>(&storeNarrowKernel),
      reinterpret_cast<const void*>(&histogramKernel),      reinterpret_cast<const void*>(&radixInitKernel),
      reinterpret_cast<const void*>(&radixChooseKernel),    reinterpret_cast<const void*>(&runCountsKernel),
      reinterpret_cast<const void*>(&scanRunsKernel),       reinterpret_cast<const void*>(&packRunsKernel),
      reinterpret_cast<const void*>(&zeroSentKernel),       reinterpret_cast<const void*>(&scatterAddKernel)};
  for (const void* k : kernels) {
    cudaFuncAttributes a{};
    WEFT_CUDA_CHECK(cudaFuncGetAttributes(&a, k));
  }
  preloadSignKernels();
}

}  // namespace weft::compress::device
