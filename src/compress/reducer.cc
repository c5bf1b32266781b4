#include "src/compress/reducer.h"

#include <algorithm>
#include <cstring>

#include "src/core/comm.h"
#include "src/kernels/reduce.h"
#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::compress {

int assignBuckets(const std::vector<size_t>& bytes, size_t bucketBytes, size_t firstBytes, std::vector<int>& bucketOf) {
  bucketOf.assign(bytes.size(), 0);
  int bucket = 0;
  size_t filled = 0;
  bool open = false;
  for (size_t k = bytes.size(); k-- > 0;) {
    bucketOf[k] = bucket;
    filled += bytes[k];
    open = true;
    if (filled >= (bucket == 0 ? firstBytes : bucketBytes)) {
      bucket++;
      filled = 0;
      open = false;
    }
  }
  return bucket + (open ? 1 : 0);
}

int64_t overlapNs(const std::vector<std::pair<int64_t, int64_t>>& busy, int64_t from, int64_t to) {
  int64_t sum = 0;
  for (const auto& [a, b] : busy) {
    const int64_t lo = std::max(a, from), hi = std::min(b, to);
    if (hi > lo) sum += hi - lo;
  }
  return sum;
}

}  // namespace weft::compress

using namespace weft;

void weftReducer::run() {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    workCv.wait(lock, [this] { return stop || !queue.empty(); });
    if (queue.empty()) return;  // stop, nothing left
    const int b = queue.front();
    queue.pop_front();
    const bool failed = error != weftSuccess;
    lock.unlock();
    const int64_t t0 = nowNs();
    weftResult_t r = weftSuccess;
    // After a failure the rest of the step is skipped: the communicator
    // has an error, every rank's Wait returns it.
    if (!failed) {
      try {
        reduceBucket(b);
      } catch (const Error& e) {
        r = e.code();
      } catch (const std::exception& e) {
        WEFT_WARN("weftReducer: bucket %d: %s", b, e.what());
        r = weftInternalError;
      }
    }
    lock.lock();
    if (r != weftSuccess && error == weftSuccess) error = r;
    // The last bucket of a complete step writes every result back before
    // it counts as finished, so Wait never returns while buffers are written.
    if (finished + 1 == int(buckets.size()) && error == weftSuccess) {
      lock.unlock();
      weftResult_t w = weftSuccess;
      try {
        writeBack();
      } catch (const Error& e) {  // device buffers: a CUDA error or the timeout
        w = e.code();
      }
      lock.lock();
      if (w == weftSuccess)
        written = true;
      else if (error == weftSuccess)
        error = w;
    }
    finished++;
    busy.emplace_back(t0, nowNs());
    doneCv.notify_all();
  }
}

std::vector<compress::BucketSlice> weftReducer::slicesOf(int b) const {
  const Bucket& bk = buckets[b];
  std::vector<compress::BucketSlice> out;
  for (size_t j = 0; j < bk.members.size(); j++) {
    const int i = bk.members[j];
    out.push_back({i, bk.offsets[j] * elemSize, counts[i] * elemSize});
  }
  return out;
}

// Device buckets: packed, reduced and averaged on the reducer's stream after
// the producers' ready events; this thread waits for them (bounded), so a
// bucket counts as finished when its device work has run.
void weftReducer::reduceDeviceBucket(int b) {
  Bucket& bk = buckets[b];
  device->pack(b, slicesOf(b), buffers.data());
  void* flat = device->flat(b);
  weftResult_t r;
  if (bk.compressor) {
    r = weftCompressedAllReduce(flat, flat, bk.compressor, device->stream());
    if (r == weftSuccess && average) device->average(b, bk.count, type, comm->nranks);
  } else {
    r = weftAllReduce(flat, flat, bk.count, type, average ? weftAvg : weftSum, comm, device->stream());
  }
  if (r != weftSuccess) raise(r, "weftReducer: AllReduce of bucket %d failed: %s", b, weftGetErrorString(r));
  device->finish(comm->timeoutMs, "a bucket's AllReduce");
}

// Gathers the bucket's buffers into its flat buffer and reduces it there.
void weftReducer::reduceBucket(int b) {
  if (device) return reduceDeviceBucket(b);
  Bucket& bk = buckets[b];
  unsigned char* flat = bk.flat.data();
  for (size_t j = 0; j < bk.members.size(); j++) {
    const int i = bk.members[j];
    memcpy(flat + bk.offsets[j] * elemSize, buffers[i], counts[i] * elemSize);
  }
  weftResult_t r;
  if (bk.compressor) {
    r = weftCompressedAllReduce(flat, flat, bk.compressor, nullptr);
    // The compressors sum; the average is Avg's last step, in the bucket's
    // own type (a 16-bit bucket is divided in float32 and rounded once).
    if (r == weftSuccess && average) {
      kernels::RedOp avg;
      avg.kind = kernels::OpKind::Avg;
      avg.type = type;
      avg.nranks = comm->nranks;
      kernels::transform(flat, flat, bk.count, avg, kernels::kApplyPost);
    }
  } else {
    r = weftAllReduce(flat, flat, bk.count, type, average ? weftAvg : weftSum, comm, nullptr);
  }
  if (r != weftSuccess) raise(r, "weftReducer: AllReduce of bucket %d failed: %s", b, weftGetErrorString(r));
}

void weftReducer::writeBack() {
  if (device) {
    for (size_t b = 0; b < buckets.size(); b++) device->unpack(int(b), slicesOf(int(b)), buffers.data());
    device->finish(comm->timeoutMs, "writing the results back");
    return;
  }
  for (Bucket& bk : buckets)
    for (size_t j = 0; j < bk.members.size(); j++) {
      const int i = bk.members[j];
      memcpy(buffers[i], bk.flat.data() + bk.offsets[j] * elemSize, counts[i] * elemSize);
    }
}

std::string weftReducer::unmarkedList() const {
  std::string s;
  int listed = 0, missing = 0;
  for (size_t i = 0; i < marked.size(); i++) {
    if (marked[i]) continue;
    missing++;
    if (listed++ < 8) s += (s.empty() ? "" : ", ") + std::to_string(i) + " (bucket " + std::to_string(bucketOf[i]) + ")";
  }
  if (missing > listed) s += ", ...";
  return std::to_string(missing) + " buffer(s) never marked ready: " + s;
}

void weftReducer::resetStep() {
  std::fill(marked.begin(), marked.end(), false);
  for (Bucket& bk : buckets) bk.unmarked = int(bk.members.size());
  started = finished = 0;
  written = false;
  error = weftSuccess;
  busy.clear();
}

weftResult_t weftReducer::finishStep(std::unique_lock<std::mutex>& lock, int64_t waitEnter) {
  const bool complete = std::all_of(marked.begin(), marked.end(), [](bool m) { return m; });
  std::string missing;
  if (!complete) {
    missing = unmarkedList();
    WEFT_WARN("weftReducerWait: %s; no buffer is written and the step starts over", missing.c_str());
    setLastError("weftReducerWait: " + missing);
  }
  // The buckets already started must end before the step can start over;
  // each AllReduce is bounded by the communicator's timeout.
  doneCv.wait(lock, [this] { return finished == started; });
  const int64_t end = nowNs();
  weftResult_t r = complete ? error : weftInvalidUsage;
  if (r == weftSuccess && !written) {
    WEFT_WARN("weftReducerWait: every bucket finished but the results were not written back");
    r = weftInternalError;
  }
  if (complete && r == weftSuccess) {
    if (!stepStart) stepStart = waitEnter;
    int64_t comm = 0;
    for (const auto& [a, b] : busy) comm += b - a;
    const double ms = 1e-6;
    stats.steps++;
    stats.stepMs = double(end - stepStart) * ms;
    stats.commMs = double(comm) * ms;
    stats.hiddenMs = double(compress::overlapNs(busy, stepStart, waitEnter)) * ms;
    stats.waitMs = double(end - waitEnter) * ms;
    stats.exposedFraction = stats.stepMs > 0 ? stats.waitMs / stats.stepMs : 0;
    stats.totalStepMs += stats.stepMs;
    stats.totalCommMs += stats.commMs;
    stats.totalHiddenMs += stats.hiddenMs;
    stats.totalWaitMs += stats.waitMs;
  }
  resetStep();
  stepStart = end;
  return r;
}
