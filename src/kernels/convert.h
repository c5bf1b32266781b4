// Conversions between float32 and the narrow wire formats (bfloat16,
// float16) of a compressed AllReduce's ring (plan::Wire). They round as the
// reduction loops do on store (functors.h: to nearest even; float16
// overflows to infinity, NaN stays NaN), so a value travels the wire
// exactly as a bf16/fp16 buffer would hold it.
#pragma once

#include <cstddef>

#include "weft/weft.h"

namespace weft::kernels {

// dst[i] = narrow(src[i]); narrow is weftBfloat16 or weftFloat16.
void floatToNarrow(void* dst, const float* src, size_t count, weftDataType_t narrow);
// dst[i] = float(src[i]).
void narrowToFloat(float* dst, const void* src, size_t count, weftDataType_t narrow);

}  // namespace weft::kernels
