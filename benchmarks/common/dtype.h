// Data types and reduction operations as the perf binaries name them on the
// command line and in their output, plus exact host-side conversions for the
// narrow floating types (half, bfloat16, fp8) used to fill and check buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::bench {

struct TypeInfo {
  weftDataType_t type;
  const char* name;       // as printed in the "type" column (nccl-tests spelling)
  size_t size;            // bytes per element
  bool isFloat;
  int mantissaBits;       // explicit fraction bits (floats only)
  // Largest integer B such that every integer in [0, B] is exact, capped so
  // test values stay modest; sums of generated inputs never exceed it.
  int64_t exactIntBound;
  // Largest k such that 2^k is exact and in range: products of generated
  // inputs never exceed 2^k.
  int maxPow2;
};

const TypeInfo& typeInfo(weftDataType_t type);
// Parses one name ("float", "half", "f8e4m3", ...) or "all" (every type).
std::optional<std::vector<weftDataType_t>> parseTypes(const std::string& name);

// Built-in ops plus the benchmark-only "mulsum" (a PreMulSum op created per
// rank: scalar 1 on even ranks, 2 on odd ranks).
enum class BenchOp { Sum, Prod, Max, Min, Avg, MulSum };
const char* opName(BenchOp op);
std::optional<std::vector<BenchOp>> parseOps(const std::string& name);
weftRedOp_t builtinOp(BenchOp op);  // MulSum has no built-in: returns weftSum

// Element access in a typed buffer through doubles. Values read back are
// exact for every type; stores round to nearest even (saturating for fp8).
double loadElement(weftDataType_t type, const void* buffer, size_t index);
void storeElement(weftDataType_t type, void* buffer, size_t index, double value);

// Bit-level conversions exposed for tests.
uint16_t floatToHalfBits(double value);
double halfBitsToDouble(uint16_t bits);
uint16_t floatToBf16Bits(double value);
double bf16BitsToDouble(uint16_t bits);
uint8_t floatToFp8E4M3Bits(double value);
double fp8E4M3BitsToDouble(uint8_t bits);
uint8_t floatToFp8E5M2Bits(double value);
double fp8E5M2BitsToDouble(uint8_t bits);

// The spacing between adjacent representable values at |value| for a
// floating type (1 for integer types).
double ulpAt(weftDataType_t type, double value);

}  // namespace weft::bench
