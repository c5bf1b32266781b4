// 64-byte vectors (AVX-512 F/BW/DQ/VL) with F16C. Built with the matching -m
// flags (see CMakeLists.txt); only called after the CPU was checked.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__F16C__)
#define WEFT_SIMD_NS avx512
#define WEFT_SIMD_BYTES 64
#define WEFT_SIMD_NAME "avx512"
#define WEFT_SIMD_GETTER loopTableAvx512
#include "src/kernels/simd_loops.h"
#else
#include "src/kernels/loop_table.h"
namespace weft::kernels {
const LoopTable* loopTableAvx512() { return nullptr; }
}  // namespace weft::kernels
#endif
