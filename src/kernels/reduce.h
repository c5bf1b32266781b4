// Reduction arithmetic for host buffers.
//
// RedOp is a resolved reduction: the op kind, the element type, and what
// PreMulSum and Avg need (the scalar, the rank count). Every function
// computes elementwise over `count` elements; dst may alias any input
// exactly (in place), never partially.
//
// float16 / bfloat16 / fp8 are reduced in float32 and rounded to nearest
// even once, on store (fp8 saturates to its largest finite value). Integer
// Sum/Prod wrap; integer Avg divides the wrapped sum by nranks (truncating
// toward zero); float Avg divides by nranks in the accumulation type (float32,
// or double for double). Float Max/Min propagate NaN.
// Loops are vectorised, with the SIMD width chosen once at run time
// (SSE2 / AVX2 / AVX-512 where the CPU has it; WEFT_SIMD caps it). The
// per-element arithmetic is in functors.h, shared with device code.
// Invalid types or ops, and Avg over < 1 rank, throw weft::Error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weft/weft.h"

namespace weft::kernels {

enum class OpKind : uint8_t { Sum, Prod, Max, Min, Avg, PreMulSum };

struct RedOp {
  OpKind kind = OpKind::Sum;
  weftDataType_t type = weftFloat32;
  int nranks = 1;
  // PreMulSum's scalar, stored as a value of `type` in the first bytes.
  alignas(8) unsigned char scalar[8] = {};
};

// Bytes of one element of type, or 0 for an invalid type.
size_t typeSize(weftDataType_t type);
const char* typeName(weftDataType_t type);
// "sum", "prod", ... as logs and traces name a reduction.
const char* opName(OpKind kind);

enum Apply : unsigned {
  kApplyPre = 1,   // multiply the local input by the PreMulSum scalar first
  kApplyPost = 2,  // finalise the result (Avg: divide by nranks)
};

// dst[i] = post( a[i] OP pre(b[i]) )   (pre/post per `apply`)
void reduce(void* dst, const void* a, const void* b, size_t count, const RedOp& op, unsigned apply);

// dst[i] = post( pre(src[i]) ); a plain copy when apply == 0 (or the op
// makes pre/post identities).
void transform(void* dst, const void* src, size_t count, const RedOp& op, unsigned apply);

// Name of the SIMD level picked at run time ("avx2", "sse2", ...), for logs.
const char* simdLevel();

}  // namespace weft::kernels
