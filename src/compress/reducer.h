// The bucketed reducer: gradient buffers grouped into buckets, in reverse
// registration order (the order backward produces gradients), each bucket
// reduced by the reducer's own thread as soon as all its buffers are marked
// ready, while the caller computes the rest. Results are written back into
// the buffers once every bucket of the step is reduced, so a step that is
// abandoned (Wait with buffers never marked) writes nothing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/compress/reducer_device.h"
#include "weft/weft.h"

namespace weft::compress {

// Which bucket each buffer goes to: buffers taken from the last to the
// first; a bucket closes once it holds at least its cap (firstBytes for
// the first bucket, bucketBytes after). Returns the bucket count.
int assignBuckets(const std::vector<size_t>& bytes, size_t bucketBytes, size_t firstBytes, std::vector<int>& bucketOf);

// Busy time inside [from, to] of a set of intervals (nanoseconds).
int64_t overlapNs(const std::vector<std::pair<int64_t, int64_t>>& busy, int64_t from, int64_t to);

}  // namespace weft::compress

struct weftReducer {
  struct Bucket {
    std::vector<int> members;    // buffer indices, in fill order
    std::vector<size_t> offsets; // each member's element offset in flat
    size_t count = 0;            // elements
    std::vector<unsigned char> flat;  // host buffers (device: DeviceBuckets::flat)
    weftCompressor_t compressor = nullptr;
    int unmarked = 0;            // members not yet marked this step
  };

  weftComm_t comm = nullptr;
  weftDataType_t type = weftFloat32;
  size_t elemSize = 4;
  bool average = false;
  int compress = weftCompressNone;
  std::vector<void*> buffers;
  std::vector<size_t> counts;
  std::vector<int> bucketOf;
  std::vector<Bucket> buckets;
  // Gradients in GPU memory: the buckets' device side; null for host buffers.
  std::unique_ptr<weft::compress::DeviceBuckets> device;

  // Step state, under mutex.
  std::mutex mutex;
  std::condition_variable workCv, doneCv;
  std::deque<int> queue;      // buckets ready to reduce
  std::vector<bool> marked;
  int started = 0;            // buckets queued this step
  int finished = 0;           // buckets reduced this step
  bool written = false;       // results written back (every bucket reduced)
  weftResult_t error = weftSuccess;
  bool stop = false;
  std::thread worker;

  // Measurements (nanoseconds on the monotonic clock).
  int64_t stepStart = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;  // this step's bucket work
  weftReducerStats stats{};

  void run();  // the worker's loop
  void reduceBucket(int b);
  void reduceDeviceBucket(int b);
  void writeBack();
  std::vector<weft::compress::BucketSlice> slicesOf(int b) const;
  // Wait's two halves; the lock is held.
  weftResult_t finishStep(std::unique_lock<std::mutex>& lock, int64_t waitEnter);
  std::string unmarkedList() const;
  void resetStep();
};
