// 32-byte vectors with F16C. Built with -mavx2 -mf16c (see CMakeLists.txt);
// only called after the CPU was checked for both.
#if defined(__AVX2__) && defined(__F16C__)
#define WEFT_SIMD_NS avx2
#define WEFT_SIMD_BYTES 32
#define WEFT_SIMD_NAME "avx2"
#define WEFT_SIMD_GETTER loopTableAvx2
#include "src/kernels/simd_loops.h"
#else
#include "src/kernels/loop_table.h"
namespace weft::kernels {
const LoopTable* loopTableAvx2() { return nullptr; }
}  // namespace weft::kernels
#endif
