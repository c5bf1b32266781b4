// The bucketed reducer's device side. For gradients in GPU memory a bucket
// is packed, reduced and unpacked on the reducer's own CUDA stream, each
// bucket after the work that produced its gradients: MarkReady records an
// event on the producer's stream, the bucket's stream waits on the events of
// its members. The reducer's thread then waits (bounded) for the bucket's
// device work, so its timing, the overlap figures and the write-back at
// Wait stay those of the host reducer.
//
// Without CUDA in the build there are no device buffers: buffersDevice
// answers -1 and DeviceBuckets cannot be made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "weft/weft.h"

namespace weft::compress {

// The GPU every buffer is on, or -1 when all are host memory. Buffers on
// several GPUs, or host and device buffers mixed: weftInvalidArgument
// naming two of them.
int buffersDevice(const std::vector<void*>& buffers, const std::vector<size_t>& counts);

// One copy between a user buffer and its place in a bucket's flat buffer.
struct BucketSlice {
  int buffer;
  size_t offsetBytes;  // in the flat buffer
  size_t bytes;
};

class DeviceBuckets {
 public:
  // A flat device buffer per bucket (flatBytes[b]) and a ready event per
  // user buffer, on `device`.
  DeviceBuckets(int device, size_t nbuffers, const std::vector<size_t>& flatBytes);
  ~DeviceBuckets();  // waits (bounded) for the stream, then frees
  DeviceBuckets(const DeviceBuckets&) = delete;
  DeviceBuckets& operator=(const DeviceBuckets&) = delete;

  // Buffer `index` is final once the work queued on `producer` so far has
  // run (a null stream: the legacy default stream).
  void markReady(int index, weftStream_t producer);
  // Queues: wait for the slices' ready events, copy them into the flat buffer.
  void pack(int bucket, const std::vector<BucketSlice>& slices, void* const* buffers);
  // Queues: copy the flat buffer back into the user buffers.
  void unpack(int bucket, const std::vector<BucketSlice>& slices, void* const* buffers);
  // Queues Avg's last step (divide by nranks) over the bucket.
  void average(int bucket, size_t count, weftDataType_t type, int nranks);
  void* flat(int bucket) const;
  weftStream_t stream() const;
  // Blocks until everything queued so far has run: weftTimeout after
  // timeoutMs (0: no bound), or the CUDA error the stream hit.
  void finish(int64_t timeoutMs, const char* what);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::compress
