// One-rank AllReduce through any libnccl.so.2 (NVIDIA's, or weft's shim in
// bindings/nccl), timed with CUDA events on one stream, so the GPU gate can
// put the two side by side in one run on one GPU. Only the NCCL C ABI is
// used (NVIDIA's nccl.h from the CUDA Toolkit for the prototypes), loaded
// with dlopen from the path given.
// Usage: nccl_side_by_side <libnccl.so.2> [max-bytes] [graph 0|1]
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(call)                                                                   \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                     \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

struct Nccl {
  decltype(&ncclGetVersion) getVersion;
  decltype(&ncclCommInitAll) initAll;
  decltype(&ncclAllReduce) allReduce;
  decltype(&ncclCommDestroy) destroy;
  decltype(&ncclGetErrorString) errorString;
};

template <class F>
void bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (!*out) {
    std::fprintf(stderr, "missing symbol %s: %s\n", name, dlerror());
    std::exit(1);
  }
}

void check(const Nccl& n, ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  std::fprintf(stderr, "%s failed: %s\n", what, n.errorString(r));
  std::exit(1);
}

// Microseconds per call: `iters` calls queued back to back (or captured
// once as a graph and launched), between two events.
double timeCalls(const Nccl& n, ncclComm_t comm, float* a, float* b, size_t count, int iters, bool graph,
                 cudaStream_t s) {
  cudaEvent_t t0, t1;
  CHECK_CUDA(cudaEventCreate(&t0));
  CHECK_CUDA(cudaEventCreate(&t1));
  for (int w = 0; w < 3; w++) check(n, n.allReduce(a, b, count, ncclFloat32, ncclSum, comm, s), "warm-up");
  cudaGraphExec_t exec = nullptr;
  cudaGraph_t g = nullptr;
  if (graph) {
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < iters; i++) check(n, n.allReduce(a, b, count, ncclFloat32, ncclSum, comm, s), "captured");
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, s));  // first launch uploads the graph
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaEventRecord(t0, s));
  if (graph) CHECK_CUDA(cudaGraphLaunch(exec, s));
  else
    for (int i = 0; i < iters; i++) check(n, n.allReduce(a, b, count, ncclFloat32, ncclSum, comm, s), "timed");
  CHECK_CUDA(cudaEventRecord(t1, s));
  CHECK_CUDA(cudaEventSynchronize(t1));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
  if (exec) CHECK_CUDA(cudaGraphExecDestroy(exec));
  if (g) CHECK_CUDA(cudaGraphDestroy(g));
  CHECK_CUDA(cudaEventDestroy(t0));
  CHECK_CUDA(cudaEventDestroy(t1));
  return ms * 1000.0 / iters;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <libnccl.so.2> [max-bytes] [graph 0|1]\n", argv[0]);
    return 2;
  }
  const size_t maxBytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (size_t(1) << 30);
  const bool graph = argc > 3 && std::atoi(argv[3]) != 0;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  Nccl n{};
  bind(lib, "ncclGetVersion", &n.getVersion);
  bind(lib, "ncclCommInitAll", &n.initAll);
  bind(lib, "ncclAllReduce", &n.allReduce);
  bind(lib, "ncclCommDestroy", &n.destroy);
  bind(lib, "ncclGetErrorString", &n.errorString);
  int version = 0;
  check(n, n.getVersion(&version), "ncclGetVersion");
  CHECK_CUDA(cudaSetDevice(0));
  ncclComm_t comm = nullptr;
  int dev = 0;
  check(n, n.initAll(&comm, 1, &dev), "ncclCommInitAll");
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&a), maxBytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&b), maxBytes));
  CHECK_CUDA(cudaMemset(a, 0, maxBytes));
  std::printf("# %s (version %d), 1 rank, float sum, %s\n", argv[1], version, graph ? "CUDA graph" : "eager");
  std::printf("# %12s %12s %12s %12s\n", "bytes", "oop_us", "inplace_us", "algbw_GB/s");
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 4) {
    const size_t count = bytes / 4;
    const int iters = bytes <= (1 << 20) ? 200 : 20;
    const double oop = timeCalls(n, comm, a, b, count, iters, graph, s);
    const double inp = timeCalls(n, comm, a, a, count, iters, graph, s);
    std::printf("  %12zu %12.2f %12.2f %12.2f\n", bytes, oop, inp, bytes / oop / 1e3);
  }
  check(n, n.destroy(comm), "ncclCommDestroy");
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaStreamDestroy(s));
  return 0;
}
