// C API: the bucketed reducer (src/compress/reducer.h). Arguments are
// checked before anything changes: a bad one returns its code with a WARN
// line naming the problem.
#include <cstring>
#include <set>

#include "src/compress/compressor.h"
#include "src/compress/device_compress.h"
#include "src/compress/reducer.h"
#include "src/core/api_guard.h"
#include "src/core/comm.h"
#include "src/kernels/reduce.h"
#include "src/util/abi_enum.h"
#include "src/util/clock.h"

using namespace weft;

namespace {

std::mutex liveMutex;
std::set<const weftReducer*>& live() {
  static std::set<const weftReducer*> s;
  return s;
}

weftResult_t refuse(weftResult_t code, const char* fn, const std::string& what) {
  WEFT_WARN("%s: %s", fn, what.c_str());
  setLastError(std::string(fn) + ": " + what);
  return code;
}

weftResult_t checkReducer(weftReducer_t r, const char* fn) {
  if (!r) return refuse(weftInvalidArgument, fn, "reducer is NULL");
  std::lock_guard<std::mutex> lock(liveMutex);
  if (!live().count(r)) return refuse(weftInvalidUsage, fn, "reducer is not a live reducer (destroyed or never created)");
  return weftSuccess;
}

constexpr long long kDefaultBucketBytes = 25ll << 20;
constexpr long long kDefaultFirstBucketBytes = 1ll << 20;

// Defaults and checks of the configuration; fills r. Raises weftInvalidArgument.
void applyConfig(weftReducer* r, const weftReducerConfig* cfg, size_t* bucketBytes, size_t* firstBytes,
                 weftCompressConfig* cc) {
  weftReducerConfig d = WEFT_REDUCER_CONFIG_INITIALIZER;
  if (!cfg) cfg = &d;
  if (cfg->magic != WEFT_REDUCER_CONFIG_MAGIC || cfg->size != sizeof(weftReducerConfig))
    raise(weftInvalidArgument, "weftReducerCreate: config was not initialised with WEFT_REDUCER_CONFIG_INITIALIZER");
  const long long bb = cfg->bucketBytes == -1 ? kDefaultBucketBytes : cfg->bucketBytes;
  const long long fb = cfg->firstBucketBytes == -1 ? kDefaultFirstBucketBytes : cfg->firstBucketBytes;
  if (bb <= 0 || fb <= 0)
    raise(weftInvalidArgument, "weftReducerCreate: bucketBytes %lld and firstBucketBytes %lld must be positive", bb, fb);
  *bucketBytes = size_t(bb);
  *firstBytes = size_t(fb);
  const int avg = cfg->average == WEFT_CONFIG_UNDEF_INT ? 0 : cfg->average;
  if (avg != 0 && avg != 1) raise(weftInvalidArgument, "weftReducerCreate: average %d is neither 0 nor 1", avg);
  r->average = avg == 1;
  r->compress = cfg->compress;
  if (r->compress < weftCompressNone || r->compress > weftCompressSign)
    raise(weftInvalidArgument, "weftReducerCreate: compress %d is not a weftCompressKind_t", r->compress);
  *cc = WEFT_COMPRESS_CONFIG_INITIALIZER;
  cc->kind = r->compress;
  cc->ratio = cfg->ratio;
  cc->errorFeedback = cfg->errorFeedback;
}

// `rawType`: the datatype argument as the caller's integer (abiInt).
void checkBuffers(int n, void* const* buffers, const size_t* counts, int rawType) {
  if (n <= 0) raise(weftInvalidArgument, "weftReducerCreate: nbuffers %d must be positive", n);
  if (!buffers || !counts) raise(weftInvalidArgument, "weftReducerCreate: buffers or counts is NULL");
  if (const std::string why = notADataType(rawType); !why.empty())
    raise(weftInvalidArgument, "weftReducerCreate: %s", why.c_str());
  for (int i = 0; i < n; i++)
    if (counts[i] > 0 && !buffers[i]) raise(weftInvalidArgument, "weftReducerCreate: buffer %d is NULL with count %zu", i, counts[i]);
}

// Every rank must register the same layout, or their bucket AllReduces
// would not match: compared over the bootstrap, weftInvalidUsage on every
// rank when any differs.
void agreeOnLayout(const weftReducer* r, size_t bucketBytes, size_t firstBytes) {
  struct Layout {
    uint64_t nbuffers, elements, hash, bucketBytes, firstBytes;
    int32_t type, average, compress, pad;
  };
  Layout mine{};
  mine.nbuffers = r->counts.size();
  mine.hash = 1469598103934665603ull;  // FNV-1a over the counts
  for (size_t c : r->counts) {
    mine.elements += c;
    mine.hash = (mine.hash ^ c) * 1099511628211ull;
  }
  mine.bucketBytes = bucketBytes;
  mine.firstBytes = firstBytes;
  mine.type = r->type;
  mine.average = r->average;
  mine.compress = r->compress;
  std::vector<Layout> all(r->comm->nranks);
  all[r->comm->rank] = mine;
  {
    std::lock_guard<std::mutex> lock(r->comm->execMutex);  // shared with WEFT_CHECK
    r->comm->bootstrap->allGather(all.data(), sizeof(Layout));
  }
  for (int q = 0; q < r->comm->nranks; q++)
    if (memcmp(&all[q], &mine, sizeof(Layout)) != 0)
      raise(weftInvalidUsage,
            "weftReducerCreate: ranks registered different buffers or settings: rank %d has %lu buffers of %lu "
            "elements in all, rank %d has %lu of %lu (or their counts, type, bucket sizes, average or compression "
            "differ)",
            r->comm->rank, static_cast<unsigned long>(mine.nbuffers), static_cast<unsigned long>(mine.elements), q,
            static_cast<unsigned long>(all[q].nbuffers), static_cast<unsigned long>(all[q].elements));
}

// Buckets, their flat buffers and (optionally) one compressor each.
void buildBuckets(weftReducer* r, size_t bucketBytes, size_t firstBytes, const weftCompressConfig& cc) {
  std::vector<size_t> bytes(r->counts.size());
  for (size_t i = 0; i < bytes.size(); i++) bytes[i] = r->counts[i] * r->elemSize;
  const int nb = compress::assignBuckets(bytes, bucketBytes, firstBytes, r->bucketOf);
  r->buckets.resize(nb);
  for (size_t k = r->counts.size(); k-- > 0;) {
    weftReducer::Bucket& bk = r->buckets[r->bucketOf[k]];
    bk.members.push_back(int(k));
    bk.offsets.push_back(bk.count);
    bk.count += r->counts[k];
  }
  for (weftReducer::Bucket& bk : r->buckets) {
    if (!r->device) bk.flat.resize(bk.count * r->elemSize);
    bk.unmarked = int(bk.members.size());
    if (r->compress == weftCompressNone) continue;
    bk.compressor = compress::createCompressor(r->comm, bk.count, r->type, &cc);
    compress::registerCompressor(bk.compressor);
  }
}

void destroyReducer(weftReducer* r) {
  {
    std::lock_guard<std::mutex> lock(r->mutex);
    r->stop = true;
  }
  r->workCv.notify_all();
  if (r->worker.joinable()) r->worker.join();
  for (auto& bk : r->buckets)
    if (bk.compressor) weftCompressorDestroy(bk.compressor);
  delete r;
}

}  // namespace

extern "C" {

WEFT_API weftResult_t weftReducerCreate(weftComm_t comm, int nbuffers, void* const* buffers, const size_t* counts,
                                        weftDataType_t datatype, const weftReducerConfig* config,
                                        weftReducer_t* reducer) {
  const char* fn = "weftReducerCreate";
  if (weftResult_t rc = checkComm(comm, fn)) return rc;
  return guarded([&] {
    if (!reducer) return refuse(weftInvalidArgument, fn, "reducer (the output) is NULL");
    checkBuffers(nbuffers, buffers, counts, abiInt(datatype));
    const auto type = static_cast<weftDataType_t>(abiInt(datatype));
    auto r = std::unique_ptr<weftReducer, void (*)(weftReducer*)>(new weftReducer, destroyReducer);
    r->comm = comm;
    r->type = type;
    r->elemSize = kernels::typeSize(type);
    r->buffers.assign(buffers, buffers + nbuffers);
    r->counts.assign(counts, counts + nbuffers);
    r->marked.assign(nbuffers, false);
    size_t bucketBytes = 0, firstBytes = 0;
    weftCompressConfig cc;
    applyConfig(r.get(), config, &bucketBytes, &firstBytes, &cc);
    const int gpu = compress::buffersDevice(r->buffers, r->counts);
    agreeOnLayout(r.get(), bucketBytes, firstBytes);
    if (gpu >= 0) {
      // Made before the buckets' compressors, so buildBuckets knows the kind.
      std::vector<size_t> bytes(nbuffers);
      for (int i = 0; i < nbuffers; i++) bytes[size_t(i)] = r->counts[size_t(i)] * r->elemSize;
      std::vector<int> of;
      const int nb = compress::assignBuckets(bytes, bucketBytes, firstBytes, of);
      std::vector<size_t> flatBytes(size_t(nb), 0);
      for (int i = 0; i < nbuffers; i++) flatBytes[size_t(of[size_t(i)])] += bytes[size_t(i)];
      r->device = std::make_unique<compress::DeviceBuckets>(gpu, size_t(nbuffers), flatBytes);
    }
    buildBuckets(r.get(), bucketBytes, firstBytes, cc);
    if (gpu >= 0) {
      // Every rank's device memory is made before any rank's first bucket
      // launches: an allocation synchronises the GPU, and ranks sharing
      // one would otherwise wait on each other's spinning kernels.
      for (weftReducer::Bucket& bk : r->buckets)
        if (bk.compressor) compress::prepareCompressorOnDevice(bk.compressor, gpu);
      std::lock_guard<std::mutex> lock(r->comm->execMutex);
      r->comm->bootstrap->barrier();
    }
    r->worker = std::thread([p = r.get()] { p->run(); });
    WEFT_INFO(kColl, "%s: %d buffers in %zu buckets (first %zu B, then %zu B), %s, compression %s, %s", fn, nbuffers,
              r->buckets.size(), firstBytes, bucketBytes, r->average ? "average" : "sum",
              compress::kindName(r->compress), gpu >= 0 ? ("GPU " + std::to_string(gpu)).c_str() : "host buffers");
    {
      std::lock_guard<std::mutex> lock(liveMutex);
      live().insert(r.get());
    }
    *reducer = r.release();
    return weftSuccess;
  });
}

}  // extern "C"

namespace {

weftResult_t markReady(weftReducer_t r, int index, weftStream_t producer, bool streamGiven, const char* fn) {
  if (weftResult_t rc = checkReducer(r, fn)) return rc;
  if (streamGiven && producer && !r->device)
    return refuse(weftInvalidUsage, fn, "a stream was given for host buffers (host gradients are final when marked)");
  std::lock_guard<std::mutex> lock(r->mutex);
  if (index < 0 || index >= int(r->marked.size()))
    return refuse(weftInvalidArgument, fn,
                  "index " + std::to_string(index) + " is not a registered buffer (0.." +
                      std::to_string(r->marked.size() - 1) + ")");
  if (r->marked[index])
    return refuse(weftInvalidUsage, fn,
                  "buffer " + std::to_string(index) + " was already marked ready in this step (call Wait first)");
  if (r->device) {
    if (weftResult_t rc = guarded([&] {
          r->device->markReady(index, producer);
          return weftSuccess;
        }))
      return rc;
  }
  if (!r->stepStart) r->stepStart = nowNs();
  r->marked[index] = true;
  const int b = r->bucketOf[index];
  if (--r->buckets[b].unmarked == 0) {
    r->queue.push_back(b);
    r->started++;
    r->workCv.notify_one();
  }
  return weftSuccess;
}

}  // namespace

extern "C" {

WEFT_API weftResult_t weftReducerMarkReady(weftReducer_t r, int index) {
  return markReady(r, index, nullptr, false, "weftReducerMarkReady");
}

WEFT_API weftResult_t weftReducerMarkReadyOnStream(weftReducer_t r, int index, weftStream_t stream) {
  return markReady(r, index, stream, true, "weftReducerMarkReadyOnStream");
}

WEFT_API weftResult_t weftReducerWait(weftReducer_t r) {
  const char* fn = "weftReducerWait";
  if (weftResult_t rc = checkReducer(r, fn)) return rc;
  return guarded([&] {
    const int64_t enter = nowNs();
    std::unique_lock<std::mutex> lock(r->mutex);
    return r->finishStep(lock, enter);
  });
}

WEFT_API weftResult_t weftReducerGetStats(weftReducer_t r, weftReducerStats* stats) {
  const char* fn = "weftReducerGetStats";
  if (weftResult_t rc = checkReducer(r, fn)) return rc;
  if (!stats) return refuse(weftInvalidArgument, fn, "stats is NULL");
  std::lock_guard<std::mutex> lock(r->mutex);
  *stats = r->stats;
  return weftSuccess;
}

WEFT_API weftResult_t weftReducerBuckets(weftReducer_t r, int* buckets, int* nbuckets) {
  const char* fn = "weftReducerBuckets";
  if (weftResult_t rc = checkReducer(r, fn)) return rc;
  if (!nbuckets) return refuse(weftInvalidArgument, fn, "nbuckets is NULL");
  *nbuckets = int(r->buckets.size());
  if (buckets) std::copy(r->bucketOf.begin(), r->bucketOf.end(), buckets);
  return weftSuccess;
}

WEFT_API weftResult_t weftReducerDestroy(weftReducer_t r) {
  const char* fn = "weftReducerDestroy";
  if (weftResult_t rc = checkReducer(r, fn)) return rc;
  {
    std::lock_guard<std::mutex> lock(liveMutex);
    live().erase(r);
  }
  {
    // Buckets still in flight finish first (each bounded by the timeout).
    std::unique_lock<std::mutex> lock(r->mutex);
    r->doneCv.wait(lock, [r] { return r->finished == r->started; });
  }
  destroyReducer(r);
  return weftSuccess;
}

}  // extern "C"
