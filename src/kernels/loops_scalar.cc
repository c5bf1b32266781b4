// The scalar level: the reference the vector levels must match bit for bit.
#define WEFT_SIMD_NS scalar
#define WEFT_SIMD_BYTES 0
#define WEFT_SIMD_NAME "scalar"
#define WEFT_SIMD_GETTER loopTableScalar
#include "src/kernels/simd_loops.h"
