// Type names and sizes, SIMD level selection, and the dispatch from
// (type, op, apply) to one specialised loop.
#include "src/kernels/reduce.h"

#include <atomic>
#include <cstring>
#include <string>

#include "src/kernels/loop_table.h"
#include "src/util/settings.h"
#include "src/util/error.h"

namespace weft::kernels {

size_t typeSize(weftDataType_t type) {
  switch (type) {
    case weftInt8:
    case weftUint8:
    case weftFloat8e4m3:
    case weftFloat8e5m2:
      return 1;
    case weftFloat16:
    case weftBfloat16:
      return 2;
    case weftInt32:
    case weftUint32:
    case weftFloat32:
      return 4;
    case weftInt64:
    case weftUint64:
    case weftFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* typeName(weftDataType_t type) {
  // The names nccl-tests prints in its "type" column.
  static const char* const kNames[weftNumTypes] = {"int8",   "uint8",  "int32",  "uint32",   "int64",  "uint64",
                                                   "half",   "float",  "double", "bfloat16", "f8e4m3", "f8e5m2"};
  const unsigned index = static_cast<unsigned>(type);
  return index < weftNumTypes ? kNames[index] : "invalid";
}

const char* opName(OpKind kind) {
  switch (kind) {
    case OpKind::Sum: return "sum";
    case OpKind::Prod: return "prod";
    case OpKind::Max: return "max";
    case OpKind::Min: return "min";
    case OpKind::Avg: return "avg";
    case OpKind::PreMulSum: return "premulsum";
  }
  return "?";
}

namespace {

const LoopTable* tableOf(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar: return loopTableScalar();
    case SimdLevel::Sse2: return loopTableSse2();
    case SimdLevel::Avx2: return loopTableAvx2();
    case SimdLevel::Avx512: return loopTableAvx512();
  }
  return nullptr;
}

bool cpuSupports(SimdLevel level) {
#if defined(__x86_64__) || defined(__i386__)
  switch (level) {
    case SimdLevel::Scalar:
    case SimdLevel::Sse2:
      return true;
    case SimdLevel::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case SimdLevel::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("f16c");
  }
  return false;
#else
  return level == SimdLevel::Scalar || level == SimdLevel::Sse2;
#endif
}

struct Active {
  std::atomic<const LoopTable*> table{nullptr};
  std::atomic<SimdLevel> level{SimdLevel::Scalar};
};
Active gActive;

void activate(SimdLevel level) {
  gActive.level.store(level, std::memory_order_relaxed);
  gActive.table.store(tableOf(level), std::memory_order_release);
}

// Racing first calls all pick the same level, so a plain check-then-store
// is enough.
inline const LoopTable& activeTable() {
  const LoopTable* table = gActive.table.load(std::memory_order_acquire);
  if (__builtin_expect(table == nullptr, 0)) {
    activate(defaultSimdLevel());
    table = gActive.table.load(std::memory_order_acquire);
  }
  return *table;
}

void checkType(const RedOp& op) {
  if (static_cast<unsigned>(op.type) >= weftNumTypes) raise(weftInvalidArgument, "invalid data type %d", op.type);
}

}  // namespace

bool simdLevelAvailable(SimdLevel level) { return tableOf(level) != nullptr && cpuSupports(level); }

SimdLevel defaultSimdLevel() {
  static const SimdLevel kLevels[] = {SimdLevel::Scalar, SimdLevel::Sse2, SimdLevel::Avx2, SimdLevel::Avx512};
  static const char* const kNames[] = {"scalar", "sse2", "avx2", "avx512"};
  int cap = kNumSimdLevels - 1;
  if (auto requested = settings::get(settings::kSimd)) {
    cap = -1;
    for (int i = 0; i < kNumSimdLevels; ++i)
      if (*requested == kNames[i]) cap = i;
    if (cap < 0) raise(weftInvalidArgument, "WEFT_SIMD=%s: expected scalar, sse2, avx2 or avx512", requested->c_str());
  }
  for (int i = cap; i > 0; --i)
    if (simdLevelAvailable(kLevels[i])) return kLevels[i];
  return SimdLevel::Scalar;
}

void forceSimdLevel(SimdLevel level) {
  if (!simdLevelAvailable(level)) raise(weftInvalidUsage, "SIMD level %d is not available here", static_cast<int>(level));
  activate(level);
}

SimdLevel activeSimdLevel() {
  activeTable();
  return gActive.level.load(std::memory_order_relaxed);
}

const char* simdLevel() { return activeTable().name; }

void reduce(void* dst, const void* a, const void* b, size_t count, const RedOp& op, unsigned apply) {
  if (count == 0) return;
  checkType(op);
  int variant;
  switch (op.kind) {
    case OpKind::Sum: variant = kRedSum; break;
    case OpKind::Prod: variant = kRedProd; break;
    case OpKind::Max: variant = kRedMax; break;
    case OpKind::Min: variant = kRedMin; break;
    case OpKind::Avg: variant = (apply & kApplyPost) ? kRedSumPostDiv : kRedSum; break;
    case OpKind::PreMulSum: variant = (apply & kApplyPre) ? kRedPreMulSum : kRedSum; break;
    default: raise(weftInvalidArgument, "invalid reduction op %d", static_cast<int>(op.kind));
  }
  if (variant == kRedSumPostDiv && op.nranks < 1) raise(weftInvalidArgument, "Avg over %d ranks", op.nranks);
  activeTable().reduce[op.type][variant](dst, a, b, count, op);
}

void transform(void* dst, const void* src, size_t count, const RedOp& op, unsigned apply) {
  if (count == 0) return;
  checkType(op);
  if (op.kind == OpKind::Avg && (apply & kApplyPost)) {
    if (op.nranks < 1) raise(weftInvalidArgument, "Avg over %d ranks", op.nranks);
    activeTable().transform[op.type][kXformPostDiv](dst, src, count, op);
  } else if (op.kind == OpKind::PreMulSum && (apply & kApplyPre)) {
    activeTable().transform[op.type][kXformPreMul](dst, src, count, op);
  } else if (dst != src) {
    std::memcpy(dst, src, count * typeSize(op.type));
  }
}

}  // namespace weft::kernels
