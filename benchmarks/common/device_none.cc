// The perf binaries of a build without CUDA: no GPU, host buffers only.
// Nothing here is reached, since visibleGpus() is 0.
#include <cstdio>
#include <cstdlib>

#include "benchmarks/common/device.h"

namespace weft::bench::gpu {
namespace {

[[noreturn]] void unreachable() {
  std::fprintf(stderr, "weft-tests error: a device operation in a build without CUDA\n");
  std::_Exit(1);
}

}  // namespace

bool built() { return false; }

int visibleGpus(std::string* why) {
  if (why) *why = "this build has no CUDA (WEFT_ENABLE_CUDA)";
  return 0;
}

std::string deviceName(int) { return "host memory"; }
std::string busId(int) { return "host"; }
void setDevice(int) { unreachable(); }
void* alloc(size_t) { unreachable(); }
void release(void*) {}
void toDevice(void*, const void*, size_t) { unreachable(); }
void toHost(void*, const void*, size_t) { unreachable(); }
void* streamCreate() { unreachable(); }
void streamDestroy(void*) {}
void streamSync(void*) { unreachable(); }
Timer::Timer() {}
Timer::~Timer() {}
void Timer::start(void*) { unreachable(); }
void Timer::stop(void*) { unreachable(); }
double Timer::elapsedUs() { unreachable(); }
Graph::~Graph() {}
void Graph::begin(void*) { unreachable(); }
void Graph::end(void*) { unreachable(); }
void Graph::launch(void*) { unreachable(); }

}  // namespace weft::bench::gpu
