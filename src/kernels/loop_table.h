// The host loops, one table per SIMD level. reduce()/transform() pick an
// entry by (type, variant) and call it: one indirect call per piece, and the
// loop itself has no switch inside.
#pragma once

#include <cstddef>

#include "src/kernels/reduce.h"

namespace weft::kernels {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count, const RedOp& op);
using TransformFn = void (*)(void* dst, const void* src, size_t count, const RedOp& op);

// What a (kind, apply) pair reduces to. Avg without kApplyPost is a Sum;
// PreMulSum without kApplyPre is a Sum.
enum ReduceVariant { kRedSum, kRedProd, kRedMax, kRedMin, kRedSumPostDiv, kRedPreMulSum, kNumReduceVariants };
// transform() variants that are not a copy.
enum TransformVariant { kXformPostDiv, kXformPreMul, kNumTransformVariants };

struct LoopTable {
  const char* name;
  ReduceFn reduce[weftNumTypes][kNumReduceVariants];
  TransformFn transform[weftNumTypes][kNumTransformVariants];
};

enum class SimdLevel { Scalar, Sse2, Avx2, Avx512 };
inline constexpr int kNumSimdLevels = 4;

// The table for a level, or nullptr when that level was not compiled in
// (non-x86 builds). Whether the CPU can run it is a separate question.
const LoopTable* loopTableScalar();
const LoopTable* loopTableSse2();
const LoopTable* loopTableAvx2();
const LoopTable* loopTableAvx512();

// Compiled in and supported by this CPU and OS.
bool simdLevelAvailable(SimdLevel level);
// The best available level, capped by WEFT_SIMD (scalar|sse2|avx2|avx512) if set.
SimdLevel defaultSimdLevel();
// Test hook: make every later call use `level` (must be available).
void forceSimdLevel(SimdLevel level);
SimdLevel activeSimdLevel();

}  // namespace weft::kernels
