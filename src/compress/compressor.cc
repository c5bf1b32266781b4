#include "src/compress/compressor.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "src/compress/sign.h"
#include "src/core/comm.h"
#include "src/core/group.h"
#include "src/kernels/convert.h"
#include "src/kernels/reduce.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::compress {
namespace {

// The compressor kinds: each declared once, looked up by its enum value.
struct KindInfo {
  weftCompressKind_t kind;
  const char* name;
  bool narrowWire;  // a wire format of the ring: float32 buffers only, no error feedback
  void (*run)(weftCompressor*, const void*, void*);
};
const KindInfo* kindInfo(int kind);

std::mutex registryMutex;
std::set<const weftCompressor*>& registry() {
  static std::set<const weftCompressor*> live;
  return live;
}

// What every rank of the communicator must agree on.
struct Agreement {
  uint64_t count;
  int32_t type, kind;
  double ratio;
  int32_t errorFeedback, pad;
};

// Fills kind, ratio and error feedback from cfg, applying the documented
// defaults; raises weftInvalidArgument naming the problem.
void applyConfig(weftCompressor* c, const weftCompressConfig* cfg) {
  if (!cfg) raise(weftInvalidArgument, "weftCompressorCreate: config is NULL (kind is required)");
  if (cfg->magic != WEFT_COMPRESS_CONFIG_MAGIC || cfg->size != sizeof(weftCompressConfig))
    raise(weftInvalidArgument,
          "weftCompressorCreate: config was not initialised with WEFT_COMPRESS_CONFIG_INITIALIZER (magic %#x, size %zu)",
          cfg->magic, cfg->size);
  const int kind = cfg->kind;
  const KindInfo* info = kindInfo(kind);
  if (!info)
    raise(weftInvalidArgument, "weftCompressorCreate: config->kind %d is not a compressor kind (bf16 %d, fp16 %d, "
          "topk %d, sign %d)", kind, weftCompressBf16, weftCompressFp16, weftCompressTopK, weftCompressSign);
  c->kind = info->kind;
  const bool narrow = info->narrowWire;
  c->ratio = 1.0;
  if (kind == weftCompressTopK) {
    c->ratio = cfg->ratio == WEFT_COMPRESS_UNDEF_RATIO ? 0.01 : cfg->ratio;
    if (!(c->ratio > 0.0 && c->ratio <= 1.0))
      raise(weftInvalidArgument, "weftCompressorCreate: TopK ratio %g is outside (0, 1]", c->ratio);
  } else if (cfg->ratio != WEFT_COMPRESS_UNDEF_RATIO && cfg->ratio != 1.0) {
    raise(weftInvalidArgument, "weftCompressorCreate: ratio %g is for TopK only (kind %s)", cfg->ratio, kindName(kind));
  }
  const int ef = cfg->errorFeedback == WEFT_CONFIG_UNDEF_INT ? (narrow ? 0 : 1) : cfg->errorFeedback;
  if (ef != 0 && ef != 1)
    raise(weftInvalidArgument, "weftCompressorCreate: errorFeedback %d is neither 0 nor 1", ef);
  if (narrow && ef)
    raise(weftInvalidArgument,
          "weftCompressorCreate: %s has no error feedback (it rounds at every hop of the ring, not on this rank)",
          kindName(kind));
  c->errorFeedback = ef == 1;
}

void agreeAcrossRanks(weftCompressor* c) {
  Agreement mine{};
  mine.count = c->count;
  mine.type = c->type;
  mine.kind = c->kind;
  mine.ratio = c->ratio;
  mine.errorFeedback = c->errorFeedback;
  std::vector<Agreement> all(c->nranks);
  all[c->rank] = mine;
  {
    // The bootstrap's all-gather is shared with WEFT_CHECK, which runs
    // under the same lock.
    std::lock_guard<std::mutex> lock(c->comm->execMutex);
    c->comm->bootstrap->allGather(all.data(), sizeof(Agreement));
  }
  for (int r = 0; r < c->nranks; r++) {
    const Agreement& a = all[r];
    if (memcmp(&a, &mine, sizeof(a)) == 0) continue;
    raise(weftInvalidUsage,
          "weftCompressorCreate: ranks disagree: rank %d has count %zu type %s kind %s ratio %g errorFeedback %d, "
          "rank %d has count %lu type %s kind %s ratio %g errorFeedback %d",
          c->rank, c->count, kernels::typeName(c->type), kindName(c->kind), c->ratio, int(c->errorFeedback), r,
          static_cast<unsigned long>(a.count), kernels::typeName(weftDataType_t(a.type)), kindName(a.kind), a.ratio,
          a.errorFeedback);
  }
}

// Runs one collective of the communicator now, on this thread.
void collective(weftResult_t rc, const char* what) {
  if (rc != weftSuccess) raise(rc, "compressed AllReduce: %s failed: %s", what, weftGetErrorString(rc));
}

void runNarrow(weftCompressor* c, const void* send, void* recv) {
  OpDesc d;
  d.coll = plan::Coll::AllReduce;
  d.send = send;
  d.recv = recv;
  d.count = c->count;
  d.type = weftFloat32;
  d.op.type = weftFloat32;
  d.op.nranks = c->nranks;
  d.comm = c->comm;
  d.wire = c->kind == weftCompressBf16 ? plan::Wire::Bf16 : plan::Wire::Fp16;
  collective(submit(d, nullptr), "the ring AllReduce");
  // The ring sends 2 (n-1) blocks of count/n elements from every rank.
  c->bytesSent += 2 * (c->nranks - 1) * ((c->count + c->nranks - 1) / c->nranks) * 2;
}

// v = send (+ residual): the input the scheme compresses, in float32
// whatever the buffer's type (a bf16/fp16 value converts exactly).
std::span<float> compressInput(weftCompressor* c, const void* send) {
  c->work.resize(c->count);
  if (c->type == weftFloat32)
    memcpy(c->work.data(), send, c->count * sizeof(float));
  else
    kernels::narrowToFloat(c->work.data(), send, c->count, c->type);
  if (c->errorFeedback)
    for (size_t i = 0; i < c->count; i++) c->work[i] = withResidual(c->work[i], c->residual[i]);
  return {c->work.data(), c->count};
}

// Where the float32 result is formed: the user's buffer itself, or scratch
// that finishOutput rounds into it once.
float* floatOutput(weftCompressor* c, void* recv) {
  if (c->type == weftFloat32) return static_cast<float*>(recv);
  c->outScratch.resize(c->count);
  return c->outScratch.data();
}
void finishOutput(weftCompressor* c, void* recv) {
  if (c->type != weftFloat32) kernels::floatToNarrow(recv, c->outScratch.data(), c->count, c->type);
}

void runTopK(weftCompressor* c, const void* send, void* recv) {
  std::span<float> v = compressInput(c, send);
  const size_t k = topkCount(c->count, c->ratio);
  c->chosen.resize(k);
  selectTopK(v, k, c->mags, c->chosen);
  const size_t blockBytes = k * sizeof(TopKPair);
  c->sendBytes.resize(blockBytes);
  c->recvBytes.resize(blockBytes * c->nranks);
  std::span<TopKPair> mine(reinterpret_cast<TopKPair*>(c->sendBytes.data()), k);
  packPairs(v, c->chosen, mine);
  collective(weftAllGather(c->sendBytes.data(), c->recvBytes.data(), blockBytes, weftUint8, c->comm, nullptr),
             "the AllGather of (index, value) pairs");
  c->bytesSent += (c->nranks - 1) * blockBytes;
  // Only now, after the exchange succeeded, do the residual and the output change.
  if (c->errorFeedback) keepUnsent(v, c->chosen, {c->residual.data(), c->count});
  std::span<float> out(floatOutput(c, recv), c->count);
  std::fill(out.begin(), out.end(), 0.0f);
  std::span<const TopKPair> all(reinterpret_cast<const TopKPair*>(c->recvBytes.data()), k * c->nranks);
  if (!scatterAdd(all, out))
    raise(weftInternalError, "compressed AllReduce: a peer sent a TopK index beyond count %zu", c->count);
  finishOutput(c, recv);
}

// Where rank r's chunk starts, and its length (the last chunks may be
// short or empty).
size_t chunkOff(const weftCompressor* c, int r) { return std::min(c->count, size_t(r) * c->chunkElems); }
size_t chunkLen(const weftCompressor* c, int r) { return std::min(c->chunkElems, c->count - chunkOff(c, r)); }

void runSign(weftCompressor* c, const void* send, void* recv) {
  std::span<float> v = compressInput(c, send);
  const int n = c->nranks;
  const size_t block = signBlockBytes(c->chunkElems);
  c->sendBytes.resize(block * n);
  c->recvBytes.resize(block * n);
  // Phase 1: every chunk of v, packed, goes to its owner.
  for (int r = 0; r < n; r++) packSigns(v.subspan(chunkOff(c, r), chunkLen(c, r)), c->sendBytes.data() + r * block);
  collective(weftAlltoAll(c->sendBytes.data(), c->recvBytes.data(), block, weftUint8, c->comm, nullptr),
             "the AlltoAll of sign-packed chunks");
  c->bytesSent += (n - 1) * block;
  if (c->errorFeedback)
    for (int r = 0; r < n; r++)
      signResidual(v.subspan(chunkOff(c, r), chunkLen(c, r)), c->sendBytes.data() + r * block,
                   {c->residual.data() + chunkOff(c, r), chunkLen(c, r)});
  // The owner sums the decoded chunks from every rank, adds its own
  // residual and packs the sum again.
  const size_t mineLen = chunkLen(c, c->rank);
  std::vector<float>& sum = c->work;  // v is no longer needed
  sum.assign(mineLen, 0.0f);
  for (int r = 0; r < n; r++) unpackSignsAdd(c->recvBytes.data() + r * block, {sum.data(), mineLen});
  float* ownerResidual = c->residual.data() + c->count;
  if (c->errorFeedback)
    for (size_t i = 0; i < mineLen; i++) sum[i] = withResidual(sum[i], ownerResidual[i]);
  std::vector<unsigned char> packed(block);
  packSigns({sum.data(), mineLen}, packed.data());
  if (c->errorFeedback) signResidual({sum.data(), mineLen}, packed.data(), {ownerResidual, mineLen});
  // Phase 2: the packed sums go to every rank.
  collective(weftAllGather(packed.data(), c->recvBytes.data(), block, weftUint8, c->comm, nullptr),
             "the AllGather of packed chunk sums");
  c->bytesSent += (n - 1) * block;
  float* out = floatOutput(c, recv);
  for (int r = 0; r < n; r++) unpackSigns(c->recvBytes.data() + r * block, {out + chunkOff(c, r), chunkLen(c, r)});
  finishOutput(c, recv);
}

constexpr KindInfo kKinds[] = {
    {weftCompressBf16, "bf16", true, runNarrow},
    {weftCompressFp16, "fp16", true, runNarrow},
    {weftCompressTopK, "topk", false, runTopK},
    {weftCompressSign, "sign", false, runSign},
};

const KindInfo* kindInfo(int kind) {
  for (const KindInfo& k : kKinds)
    if (k.kind == kind) return &k;
  return nullptr;
}

}  // namespace

const char* kindName(int kind) {
  if (kind == weftCompressNone) return "none";
  const KindInfo* k = kindInfo(kind);
  return k ? k->name : "unknown";
}

weftCompressor* createCompressor(weftComm_t comm, size_t count, weftDataType_t type, const weftCompressConfig* cfg) {
  auto c = std::make_unique<weftCompressor>();
  c->comm = comm;
  c->count = count;
  c->type = type;
  c->nranks = comm->nranks;
  c->rank = comm->rank;
  applyConfig(c.get(), cfg);
  // Sparse and sign schemes compute in float32 and round the result once
  // into a 16-bit buffer; a narrow wire format is only a saving for float32.
  const bool narrowWire = kindInfo(c->kind)->narrowWire;
  if (type != weftFloat32 && (narrowWire || (type != weftFloat16 && type != weftBfloat16)))
    raise(weftInvalidArgument, "weftCompressorCreate: %s compression takes %s buffers, not %s", kindName(c->kind),
          narrowWire ? "weftFloat32" : "weftFloat32, weftFloat16 or weftBfloat16",
          kernels::typeName(type));
  if (c->kind == weftCompressTopK && count > UINT32_MAX)
    raise(weftInvalidArgument, "weftCompressorCreate: TopK indexes entries with 32 bits; count %zu is too large", count);
  if (count > (SIZE_MAX / sizeof(float)) / 4)
    raise(weftInvalidArgument, "weftCompressorCreate: count %zu is too large", count);
  agreeAcrossRanks(c.get());
  if (c->kind == weftCompressSign) c->chunkElems = (count + c->nranks - 1) / c->nranks;
  if (c->errorFeedback) c->residual.assign(count + c->chunkElems, 0.0f);
  return c.release();
}

void runCompressed(weftCompressor* c, const void* send, void* recv) {
  std::lock_guard<std::mutex> lock(c->mutex);
  if (c->count == 0) return;
  const KindInfo* info = kindInfo(c->kind);
  if (!info) raise(weftInternalError, "compressed AllReduce: compressor kind %d", int(c->kind));
  info->run(c, send, recv);
}

void registerCompressor(weftCompressor* c) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(c);
}
bool unregisterCompressor(weftCompressor* c) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry().erase(c) > 0;
}
bool isLiveCompressor(const weftCompressor* c) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry().count(c) > 0;
}

}  // namespace weft::compress
