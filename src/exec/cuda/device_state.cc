#include "src/exec/cuda/device_state.h"

#include <cstring>

#include "src/exec/cuda/device_plan.h"
#include "src/exec/cuda/runtime.h"
#include "src/util/error.h"
#include "src/util/settings.h"
#include "src/util/log.h"

namespace weft::cuda {
namespace {

// Images of uncached plans (grouped point-to-point) kept by content: a
// training step repeats the same few groups, and a captured group must find
// its image without uploading.
constexpr size_t kContentImages = 32;
constexpr size_t kMaxStepBindings = size_t(1) << 16;

std::string describeStop(const DevStatus& s, int rank) {
  std::string why = "rank " + std::to_string(rank) + ": device executor stopped in channel " +
                    std::to_string(s.channel) + " step " + std::to_string(s.step) + ": ";
  switch (s.code) {
    case weftTimeout: return why + "no progress within WEFT_TIMEOUT_MS";
    case weftRemoteError: return why + "aborted, or a connection failed";
    case weftInternalError:
      return why + "received " + std::to_string(s.detail) +
             " bytes where the plan expects another size (mismatched collective across ranks?)";
    default: return why + "error " + std::to_string(s.code);
  }
}

bool isLegacyStream(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }

}  // namespace

DeviceState::DeviceState(int device, const std::atomic<bool>* abortFlag, int rank, int ranksOnGpu,
                         size_t imageArenaBytes, size_t scratchBytes)
    : device_(device), rank_(rank), ranksOnGpu_(ranksOnGpu),
      exactArith_(settings::get(settings::kDeviceExactArith)), arena_(imageArenaBytes) {
  DeviceGuard guard(device);
  countDeviceSetup();
  preloadInterpreterKernels();  // set-up happens before the ranks' first launch
  void* p = nullptr;
  WEFT_CUDA_CHECK(cudaHostAlloc(&p, sizeof(DevStatus), cudaHostAllocMapped | cudaHostAllocPortable));
  statusHost_ = static_cast<DevStatus*>(p);
  memset(statusHost_, 0, sizeof(DevStatus));
  void* d = nullptr;
  WEFT_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0));
  statusDev_ = static_cast<DevStatus*>(d);
  static_assert(sizeof(std::atomic<bool>) == 1, "the kernel reads the abort flag as one byte");
  abortMapping_ = HostMapping(abortFlag, sizeof(*abortFlag));
  abortDev_ = static_cast<const volatile uint8_t*>(abortMapping_.device(abortFlag));
  stream_ = std::make_unique<CommStream>();
  if (arena_.capacity()) {
    void* dev = nullptr;
    void* host = nullptr;
    WEFT_CUDA_CHECK(cudaMallocAsync(&dev, arena_.capacity(), stream_->setup()));
    arenaDev_ = static_cast<char*>(dev);
    WEFT_CUDA_CHECK(cudaHostAlloc(&host, arena_.capacity(), cudaHostAllocPortable));
    arenaHost_ = static_cast<char*>(host);
  }
  calls_ = std::make_unique<CallMemory>(scratchBytes, [this](size_t n) { return allocate(n); }, rank_);
  ringer_.setBusyCheck([this] { return !stream_->idle(); });
}

DeviceState::~DeviceState() {
  int previous = -1;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_);
  ringer_.stop();  // its busy check queries the device stream
  {
    RelaxedCaptureMode relaxed;
    if (stream_) stream_->synchronize();
  }
  // Memory still held by live CUDA graphs stays theirs (it is queued for a
  // release nobody drains any more: a graph that outlives its communicator
  // cannot be replayed anyway).
  plans_.clear();
  byContent_.clear();
  capturedImage_ = {};
  if (calls_) calls_->reset();
  {
    // Stream-ordered: cudaFree could wait for the whole device, where
    // another rank's kernel may still run.
    RelaxedCaptureMode relaxed;
    cudaStream_t s = stream_ ? stream_->stream() : nullptr;
    if (s) releases_->drain([this, s](void* m) {
      if (!inArena(m)) (void)cudaFreeAsync(m, s);
    });
    if (s && arenaDev_) (void)cudaFreeAsync(arenaDev_, s);
  }
  stream_.reset();  // synchronises its streams
  if (statusHost_) (void)cudaFreeHost(statusHost_);
  if (arenaHost_) (void)cudaFreeHost(arenaHost_);
  (void)cudaGetLastError();
  if (previous >= 0) (void)cudaSetDevice(previous);
}

bool DeviceState::poll(const ErrorSink& sink) {
  DevStatus s;
  const volatile DevStatus* v = statusHost_;
  s.code = v->code;
  cudaError_t launchError = cudaSuccess;
  if (s.code == 0) {
    stream_->idle(&launchError);
    if (launchError == cudaSuccess) return false;
  }
  if (reported_.exchange(true)) return true;
  std::string why;
  weftResult_t code = weftSystemError;
  if (s.code != 0) {
    s.channel = v->channel;
    s.step = v->step;
    s.detail = v->detail;
    why = describeStop(s, rank_);
    code = static_cast<weftResult_t>(s.code);
  } else {
    why = "rank " + std::to_string(rank_) + ": a device launch failed: " + cudaGetErrorString(launchError) + " (" +
          cudaGetErrorName(launchError) + ")";
  }
  try {
    if (sink) sink(code, why);
  } catch (...) {
    // The report is best effort; the status word keeps the failure.
  }
  return true;
}

void DeviceState::refuseInCapture(const LaunchNeeds& needs) {
  const std::string why = captureRefusal(CaptureState::Active, needs);
  WEFT_WARN("rank %d: %s", rank_, why.c_str());
  raise(weftInvalidUsage, "%s", why.c_str());
}

bool DeviceState::inArena(const void* p) const {
  const char* c = static_cast<const char*>(p);
  return arenaDev_ && c >= arenaDev_ && c < arenaDev_ + arena_.capacity();
}

BlockRef DeviceState::allocate(size_t bytes) {
  countDeviceSetup();
  void* p = nullptr;
  // Stream-ordered pool memory: cudaMalloc/cudaFree may synchronise the
  // device, where another rank's kernel can be waiting for this rank.
  WEFT_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream_->setup()));
  return std::make_shared<DeviceBlock>(p, bytes, releases_);
}

// Frees what every owner let go of, behind the eager launches queued so far;
// forgets plans the plan cache evicted. An image range of the arena may be
// read by launches already queued, graph replays included: it is reusable
// once the next eager launch (which waits for those replays) completed.
// Never inside a capture.
void DeviceState::reclaim() {
  for (auto it = plans_.begin(); it != plans_.end();) {
    if (it->second.keep.expired()) it = plans_.erase(it);
    else ++it;
  }
  if (stream_->idle()) completedSeq_ = launchSeq_;
  arena_.reclaim(completedSeq_);
  cudaStream_t s = stream_->stream();
  releases_->drain([this, s](void* m) {
    if (inArena(m)) arena_.retire(static_cast<char*>(m) - arenaDev_, launchSeq_ + 1);
    else WEFT_CUDA_CHECK(cudaFreeAsync(m, s));
  });
}

// Within WEFT_DEVICE_SCRATCH the block reserved at init; beyond it a new
// block outside capture (the old one is released behind the launches that
// use it, or when the last graph using it goes), refused inside one.
void DeviceState::growScratch(size_t bytes, bool captured) { (void)calls_->scratch(bytes, captured); }

void* DeviceState::stage(const void* src, size_t bytes, cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  const bool captured = captureStateOf(stream, &graph) != CaptureState::None;
  DeviceGuard guard(device_);
  const BlockRef& block = calls_->stage(bytes, captured);
  pendingStage_ = {src, bytes};
  return block->ptr;
}

// In a range of the arena: a host copy into its pinned mirror and an
// asynchronous copy from there (no allocation, no wait for a stream).
bool DeviceState::placeInArena(const HostImage& img, Uploaded& u) {
  const std::optional<size_t> at = arena_.take(img.bytes.size());
  if (!at) return false;
  memcpy(arenaHost_ + *at, img.bytes.data(), img.bytes.size());
  WEFT_CUDA_CHECK(cudaMemcpyAsync(arenaDev_ + *at, arenaHost_ + *at, img.bytes.size(), cudaMemcpyHostToDevice,
                                  stream_->setup()));
  u.blob = std::make_shared<DeviceBlock>(arenaDev_ + *at, img.bytes.size(), releases_);
  return true;
}

DeviceState::Uploaded DeviceState::place(const HostImage& img) {
  Uploaded u;
  if (!placeInArena(img, u)) {
    if (!arenaFullLogged_)
      WEFT_WARN("rank %d: plan image of %zu bytes does not fit the %zu free bytes of WEFT_DEVICE_IMAGE_ARENA=%zu: "
                "allocated in the call path (raise the setting to keep allocation out of calls)", rank_,
                img.bytes.size(), arena_.freeBytes(), arena_.capacity());
    arenaFullLogged_ = true;
    u.blob = allocate(img.bytes.size());
    WEFT_CUDA_CHECK(cudaMemcpyAsync(u.blob->ptr, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice,
                                    stream_->setup()));
  }
  // A pageable copy returns once the bytes are staged, so `img` may go; the
  // device stream waits for the setup stream (afterSetup()).
  Uploaded placed = pointInto(static_cast<char*>(u.blob->ptr), img);
  placed.blob = std::move(u.blob);
  return placed;
}

DeviceState::Uploaded DeviceState::pointInto(char* base, const HostImage& img) const {
  Uploaded u;
  u.channels = reinterpret_cast<const DevChannel*>(base);
  u.steps = reinterpret_cast<const DevStep*>(base + img.stepsAt);
  u.fifos = reinterpret_cast<const DevFifo*>(base + img.fifosAt);
  return u;
}

// A shape first seen inside a capture: its image goes into a range of the
// arena, copied from the pinned mirror by the graph itself (a copy node
// before the kernel, on the captured stream), and belongs to that graph
// only: eager calls never read it, since its bytes exist only once the
// graph ran. Needs the FIFOs mapped (init or weftCommWarmup) and room in
// the arena; refused otherwise. Allocates nothing. The graph owns the range
// from the copy on, so a refusal later in the same call leaves a copy node
// that writes only memory of its own graph.
const DeviceState::Uploaded& DeviceState::uploadInCapture(const plan::Plan& p, const FifoLookup& fifos,
                                                          cudaStream_t captured, cudaGraph_t graph) {
  const HostImage img = buildImage(p, fifos, true);
  const std::optional<size_t> at = arena_.take(img.bytes.size());
  if (!at) refuseInCapture({.planUploaded = false});
  memcpy(arenaHost_ + *at, img.bytes.data(), img.bytes.size());
  WEFT_CUDA_CHECK(
      cudaMemcpyAsync(arenaDev_ + *at, arenaHost_ + *at, img.bytes.size(), cudaMemcpyHostToDevice, captured));
  capturedImage_ = pointInto(arenaDev_ + *at, img);
  capturedImage_.blob = std::make_shared<DeviceBlock>(arenaDev_ + *at, img.bytes.size(), releases_);
  keepForGraph(graph, {capturedImage_.blob});
  return capturedImage_;
}

// The plan's device image: from the cache when `keep` still owns it, or an
// identical uncached image uploaded before; else built and uploaded from the
// arena's mirror on the setup stream, or, inside a capture, by the graph
// (uploadInCapture).
const DeviceState::Uploaded& DeviceState::upload(const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep,
                                                 const FifoLookup& fifos, cudaStream_t captured,
                                                 cudaGraph_t graph) {
  if (keep) {
    auto it = plans_.find(&p);
    if (it != plans_.end() && it->second.keep.lock() == keep) return it->second;
    if (captured) return uploadInCapture(p, fifos, captured, graph);
    Uploaded u = place(buildImage(p, fifos, false));
    u.keep = keep;
    return plans_[&p] = std::move(u);  // replaces a stale entry at a reused address
  }
  HostImage img = buildImage(p, fifos, captured != nullptr);
  for (auto it = byContent_.rbegin(); it != byContent_.rend(); ++it)
    if (it->first == img.bytes) return it->second;
  if (captured) return uploadInCapture(p, fifos, captured, graph);
  Uploaded u = place(img);
  if (byContent_.size() >= kContentImages) byContent_.erase(byContent_.begin());
  byContent_.emplace_back(std::move(img.bytes), std::move(u));
  return byContent_.back().second;
}

void DeviceState::fillLaunch(DevLaunch& L, const Uploaded& u, const plan::Plan& p, std::span<const BufferBinding> b,
                             const kernels::RedOp& op, int64_t timeoutMs) const {
  L.channels = u.channels;
  L.steps = u.steps;
  L.fifos = u.fifos;
  const BlockRef& scratch = calls_->currentScratch();
  L.scratch = scratch ? scratch->ptr : nullptr;
  L.status = statusDev_;
  L.abortFlag = abortDev_;
  L.timeoutNs = timeoutMs > 0 ? static_cast<uint64_t>(timeoutMs) * 1000000ull : 0;
  L.elemSize = p.elemSize;
  L.sliceBytes = p.sliceBytes;
  L.nranks = op.nranks;
  L.type = op.type;
  L.opKind = static_cast<int32_t>(op.kind);
  memcpy(L.scalar, op.scalar, sizeof(L.scalar));
  L.arith = exactArith_ ? kArithExact : kArithNative;
  L.proto = p.deviceLl ? kProtoLl : kProtoSimple;
  L.nBindings = static_cast<int32_t>(b.size());
  if (b.size() <= static_cast<size_t>(kMaxDeviceBindings))
    for (size_t i = 0; i < b.size(); i++) L.bindings[i] = {b[i].send, b[i].recv};
}

// A group with more calls than DevLaunch carries inline: its bindings in a
// range of the arena, copied from the pinned mirror on `copyStream` (the
// setup stream, or the captured stream, so that every replay copies them
// again). Owned by the launch (and the graph); reusable once the next eager
// launch completed. Outside the arena: allocated (eager only).
BlockRef DeviceState::placeBindings(std::span<const BufferBinding> b, bool captured, cudaStream_t copyStream) {
  std::vector<DevBinding> table(b.size());
  for (size_t i = 0; i < b.size(); i++) table[i] = {b[i].send, b[i].recv};
  const size_t bytes = table.size() * sizeof(DevBinding);
  if (const std::optional<size_t> at = arena_.take(bytes)) {
    memcpy(arenaHost_ + *at, table.data(), bytes);
    WEFT_CUDA_CHECK(cudaMemcpyAsync(arenaDev_ + *at, arenaHost_ + *at, bytes, cudaMemcpyHostToDevice, copyStream));
    return std::make_shared<DeviceBlock>(arenaDev_ + *at, bytes, releases_);
  }
  if (captured) refuseInCapture({.tableFits = false});
  BlockRef m = allocate(bytes);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(m->ptr, table.data(), bytes, cudaMemcpyHostToDevice, copyStream));
  return m;
}

// A captured launch's memory stays alive as long as the graph: the graph
// owns a reference through a CUDA user object, whose destructor (no CUDA
// calls allowed there) only drops it.
void DeviceState::keepForGraph(cudaGraph_t graph, std::vector<BlockRef> refs) {
  auto* held = new std::vector<BlockRef>(std::move(refs));
  cudaUserObject_t obj = nullptr;
  cudaError_t err = cudaUserObjectCreate(
      &obj, held, [](void* h) { delete static_cast<std::vector<BlockRef>*>(h); }, 1, cudaUserObjectNoDestructorSync);
  if (err != cudaSuccess) {
    delete held;
    WEFT_CUDA_CHECK(err);
  }
  WEFT_CUDA_CHECK(cudaGraphRetainUserObject(graph, obj, 1, cudaGraphUserObjectMove));
}

// Calls the kernel cannot run, or that could never progress.
void DeviceState::refuseUnrunnable(const plan::Plan& p, size_t nBindings, cudaStream_t stream) {
  if (p.channels.size() > static_cast<size_t>(kMaxDeviceChannels))
    raise(weftInvalidUsage, "device executor: %zu channels, at most %d", p.channels.size(), kMaxDeviceChannels);
  if (nBindings > kMaxStepBindings)  // plan::Step::bind is 16 bits
    raise(weftInvalidUsage, "device executor: %zu grouped calls in one group, at most %zu", nBindings,
          kMaxStepBindings);
  if (legacyStreamCannotProgress(isLegacyStream(stream), ranksOnGpu_)) {
    WEFT_WARN("rank %d: %d ranks of this process share GPU %d: their calls need streams of their own "
              "(not the legacy default stream 0 / cudaStreamLegacy), or one rank's kernel waits behind the other's",
              rank_, ranksOnGpu_, device_);
    raise(weftInvalidUsage, "several ranks on GPU %d use the legacy default stream", device_);
  }
}

void DeviceState::run(const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep,
                      std::span<const BufferBinding> b, const kernels::RedOp& op, const FifoLookup& fifos,
                      int64_t timeoutMs, cudaStream_t stream) {
  DeviceGuard guard(device_);
  PendingStage staged = pendingStage_;
  pendingStage_ = {};
  const int nChannels = static_cast<int>(p.channels.size());
  if (nChannels == 0) return;
  refuseUnrunnable(p, b.size(), stream);
  cudaGraph_t graph = nullptr;
  const CaptureState cs = captureStateOf(stream, &graph);
  if (cs == CaptureState::Invalidated) {
    WEFT_WARN("rank %d: %s", rank_, captureRefusal(cs, {}).c_str());
    raise(weftInvalidUsage, "%s", captureRefusal(cs, {}).c_str());
  }
  const bool captured = cs == CaptureState::Active;
  if (!captured) reclaim();
  // Refusals first: a capture refused after the image's copy node would
  // leave that node in the user's graph (harmless, but wasted).
  growScratch(p.scratchElems * p.elemSize, captured);
  const Uploaded& u = upload(p, keep, fifos, captured ? stream : nullptr, graph);
  DevLaunch L{};
  fillLaunch(L, u, p, b, op, timeoutMs);
  std::vector<BlockRef> refs{u.blob, calls_->currentScratch()};
  if (b.size() > static_cast<size_t>(kMaxDeviceBindings)) {
    // Captured: the copy is part of the graph, on the captured stream.
    refs.push_back(placeBindings(b, captured, captured ? stream : stream_->setup()));
    L.bindingTable = static_cast<const DevBinding*>(refs.back()->ptr);
  }
  if (!captured) stream_->afterSetup();
  cudaStream_t s = stream_->begin(stream, captured);
  bool stagedUsed = false;
  const BlockRef& stage = calls_->currentStage();
  for (const auto& x : b) stagedUsed |= stage && x.send == stage->ptr;
  if (staged.src && stagedUsed) {
    WEFT_CUDA_CHECK(cudaMemcpyAsync(stage->ptr, staged.src, staged.bytes, cudaMemcpyDeviceToDevice, s));
    refs.push_back(stage);
  }
  launchInterpreter(L, nChannels, s);
  stream_->end(stream, captured);
  if (!captured) launchSeq_++;
  if (captured) {
    capturedImage_.blob.reset();  // its graph holds it (uploadInCapture)
    keepForGraph(graph, std::move(refs));
    ringer_.keepRinging();  // replays are invisible to the host
  } else {
    ringer_.workStarted();
  }
}

}  // namespace weft::cuda
