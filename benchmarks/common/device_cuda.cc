#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "benchmarks/common/device.h"

namespace weft::bench::gpu {
namespace {

void check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  std::fflush(stdout);
  std::fprintf(stderr, "weft-tests error: %s failed: %s (%s)\n", call, cudaGetErrorString(e), cudaGetErrorName(e));
  std::fflush(stderr);
  std::_Exit(1);
}
#define WEFT_BENCH_CUDA(call) check((call), #call)

cudaStream_t s(void* stream) { return static_cast<cudaStream_t>(stream); }
cudaEvent_t ev(void* e) { return static_cast<cudaEvent_t>(e); }

}  // namespace

bool built() { return true; }

int visibleGpus(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("no usable GPU: ") + cudaGetErrorString(e);
    (void)cudaGetLastError();
    return 0;
  }
  if (n == 0 && why) *why = "no GPU visible";
  return n;
}

std::string deviceName(int device) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return "?";
  return p.name;
}

std::string busId(int device) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) return "?";
  return id;
}

void setDevice(int device) { WEFT_BENCH_CUDA(cudaSetDevice(device)); }

void* alloc(size_t bytes) {
  void* p = nullptr;
  WEFT_BENCH_CUDA(cudaMalloc(&p, bytes < 64 ? 64 : bytes));
  WEFT_BENCH_CUDA(cudaMemset(p, 0, bytes < 64 ? 64 : bytes));
  return p;
}

void release(void* p) {
  if (p) (void)cudaFree(p);
}

void toDevice(void* dst, const void* src, size_t bytes) {
  WEFT_BENCH_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void toHost(void* dst, const void* src, size_t bytes) {
  WEFT_BENCH_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void* streamCreate() {
  cudaStream_t st = nullptr;
  WEFT_BENCH_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  return st;
}

void streamDestroy(void* stream) {
  if (stream) (void)cudaStreamDestroy(s(stream));
}

void streamSync(void* stream) { WEFT_BENCH_CUDA(cudaStreamSynchronize(s(stream))); }

Timer::Timer() {
  cudaEvent_t a = nullptr, b = nullptr;
  WEFT_BENCH_CUDA(cudaEventCreate(&a));
  WEFT_BENCH_CUDA(cudaEventCreate(&b));
  begin_ = a;
  end_ = b;
}

Timer::~Timer() {
  (void)cudaEventDestroy(ev(begin_));
  (void)cudaEventDestroy(ev(end_));
}

void Timer::start(void* stream) { WEFT_BENCH_CUDA(cudaEventRecord(ev(begin_), s(stream))); }
void Timer::stop(void* stream) { WEFT_BENCH_CUDA(cudaEventRecord(ev(end_), s(stream))); }

double Timer::elapsedUs() {
  WEFT_BENCH_CUDA(cudaEventSynchronize(ev(end_)));
  float ms = 0;
  WEFT_BENCH_CUDA(cudaEventElapsedTime(&ms, ev(begin_), ev(end_)));
  return ms * 1000.0;
}

Graph::~Graph() {
  if (exec_) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) (void)cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

void Graph::begin(void* stream) {
  WEFT_BENCH_CUDA(cudaStreamBeginCapture(s(stream), cudaStreamCaptureModeThreadLocal));
}

void Graph::end(void* stream) {
  cudaGraph_t g = nullptr;
  WEFT_BENCH_CUDA(cudaStreamEndCapture(s(stream), &g));
  graph_ = g;
  cudaGraphExec_t e = nullptr;
  WEFT_BENCH_CUDA(cudaGraphInstantiate(&e, g, 0));
  exec_ = e;
}

void Graph::launch(void* stream) {
  WEFT_BENCH_CUDA(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), s(stream)));
}

}  // namespace weft::bench::gpu
