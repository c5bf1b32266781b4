#include "src/kernels/convert.h"

#include <cstdint>

#include "src/kernels/functors.h"
#include "src/kernels/reduce.h"
#include "src/util/error.h"

namespace weft::kernels {

void floatToNarrow(void* dst, const float* src, size_t count, weftDataType_t narrow) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  if (narrow == weftBfloat16) {
    for (size_t i = 0; i < count; i++) out[i] = floatToBf16(src[i]);
  } else if (narrow == weftFloat16) {
    for (size_t i = 0; i < count; i++) out[i] = floatToHalf(src[i]);
  } else {
    raise(weftInternalError, "floatToNarrow: %s is not a narrow wire format", typeName(narrow));
  }
}

void narrowToFloat(float* dst, const void* src, size_t count, weftDataType_t narrow) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  if (narrow == weftBfloat16) {
    for (size_t i = 0; i < count; i++) dst[i] = bf16ToFloat(in[i]);
  } else if (narrow == weftFloat16) {
    for (size_t i = 0; i < count; i++) dst[i] = halfToFloat(in[i]);
  } else {
    raise(weftInternalError, "narrowToFloat: %s is not a narrow wire format", typeName(narrow));
  }
}

}  // namespace weft::kernels
