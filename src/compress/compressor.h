// The compressed AllReduce: one compressor per gradient buffer (or bucket)
// holds its scheme, its error-feedback residual and its scratch. The
// schemes run on the communicator's own collectives:
//   bf16/fp16 : the ring AllReduce with a narrow wire format (plan::Wire);
//   TopK      : local selection, AllGather of (index, value) pairs,
//               scatter-add (src/compress/topk.h);
//   Sign      : AlltoAll of sign-packed chunks, each owner sums its chunk,
//               adds its own residual, repacks; AllGather of the packed
//               sums (src/compress/sign.h).
// See docs/compression.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "src/compress/topk.h"
#include "weft/weft.h"

namespace weft::compress {
struct DeviceCompressor;  // src/compress/device_compress.h

// The buffers a compressor serves: fixed by its first call (its residual
// and scratch live in that memory), so one compressor never mixes them.
enum class BufferMemory : int { Unbound, Host, Device };
}  // namespace weft::compress

struct weftCompressor {
  weftComm_t comm = nullptr;
  size_t count = 0;
  weftDataType_t type = weftFloat32;
  weftCompressKind_t kind = weftCompressBf16;
  double ratio = 1.0;       // TopK
  bool errorFeedback = false;
  int nranks = 1, rank = 0;
  std::atomic<weft::compress::BufferMemory> memory{weft::compress::BufferMemory::Unbound};
  // Error feedback: count entries of this rank's unsent input, then (Sign)
  // chunkElems entries of the unsent part of the chunk this rank owns. In
  // host memory until a first call with device buffers moves it into
  // `device`.
  std::vector<float> residual;
  // Device buffers: the residual and scratch in device memory.
  std::shared_ptr<weft::compress::DeviceCompressor> device;
  size_t chunkElems = 0;  // Sign: elements of one rank's chunk (the last may be short)
  std::atomic<uint64_t> bytesSent{0};
  // Calls queued on a host stream and not yet finished: Destroy refuses
  // while there are any.
  std::atomic<int> queued{0};
  // One call at a time (a host stream and the caller may both hold it).
  std::mutex mutex;
  // Scratch, kept between calls so a training loop allocates once.
  std::vector<float> work;
  std::vector<float> outScratch;  // the float32 result of a 16-bit buffer's call
  std::vector<float> mags;
  std::vector<uint32_t> chosen;
  std::vector<unsigned char> sendBytes, recvBytes;
};

namespace weft::compress {

// Checks the arguments (a clear weftInvalidArgument for each problem), then
// agrees with every rank on them over the bootstrap (weftInvalidUsage on
// every rank when any differ). Throws weft::Error.
weftCompressor* createCompressor(weftComm_t comm, size_t count, weftDataType_t type, const weftCompressConfig* cfg);

// Runs one compressed AllReduce now, on this thread. Throws weft::Error.
void runCompressed(weftCompressor* c, const void* send, void* recv);

// Live compressor handles, so a destroyed or stray one is refused.
void registerCompressor(weftCompressor* c);
bool unregisterCompressor(weftCompressor* c);
bool isLiveCompressor(const weftCompressor* c);

const char* kindName(int kind);

}  // namespace weft::compress
