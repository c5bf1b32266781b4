// 16-byte vectors: SSE2 on x86-64 (the baseline every x86-64 CPU has), the
// generic 128-bit vector unit elsewhere.
#define WEFT_SIMD_NS vec128
#define WEFT_SIMD_BYTES 16
#if defined(__x86_64__)
#define WEFT_SIMD_NAME "sse2"
#else
#define WEFT_SIMD_NAME "vec128"
#endif
#define WEFT_SIMD_GETTER loopTableSse2
#include "src/kernels/simd_loops.h"
