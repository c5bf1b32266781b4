// The CUDA runtime as the perf binaries use it: device buffers, streams,
// event timing and graph capture. Built against CUDA when the library is
// (WEFT_HAVE_CUDA); otherwise every query says why there is no GPU and the
// binaries keep host buffers. Failures end the process (fatal), as a failed
// library call does.
#pragma once

#include <cstddef>
#include <string>

namespace weft::bench::gpu {

// Whether this binary was built with CUDA.
bool built();
// Visible GPUs; 0 with the reason in *why (no CUDA in this build, no
// driver, no device).
int visibleGpus(std::string* why);
// The device's name and PCI bus id, for the "Using devices" lines.
std::string deviceName(int device);
std::string busId(int device);

void setDevice(int device);
void* alloc(size_t bytes);
void release(void* p);
void toDevice(void* dst, const void* src, size_t bytes);
void toHost(void* dst, const void* src, size_t bytes);

// A non-blocking stream of the current device (a cudaStream_t as void*).
void* streamCreate();
void streamDestroy(void* stream);
void streamSync(void* stream);

// Two events around work on one stream; elapsedUs() waits for the second.
class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start(void* stream);
  void stop(void* stream);
  double elapsedUs();

 private:
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

// What is queued on `stream` between begin and end becomes a graph, launched
// (replayed) on the same stream by launch().
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void begin(void* stream);
  void end(void* stream);
  void launch(void* stream);

 private:
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};

}  // namespace weft::bench::gpu
