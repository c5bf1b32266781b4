#include "benchmarks/common/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace weft::bench {
namespace {

// Indexed by weftDataType_t. Bounds: integers are capped well below overflow
// of the type; floats use 2^(mantissa+1), the end of the run of exact integers.
const TypeInfo kTypes[] = {
    {weftInt8, "int8", 1, false, 0, 127, 6},
    {weftUint8, "uint8", 1, false, 0, 255, 7},
    {weftInt32, "int32", 4, false, 0, 1 << 20, 30},
    {weftUint32, "uint32", 4, false, 0, 1 << 20, 31},
    {weftInt64, "int64", 8, false, 0, 1 << 20, 62},
    {weftUint64, "uint64", 8, false, 0, 1 << 20, 63},
    {weftFloat16, "half", 2, true, 10, 2048, 15},
    {weftFloat32, "float", 4, true, 23, 1 << 20, 100},
    {weftFloat64, "double", 8, true, 52, 1 << 20, 1000},
    {weftBfloat16, "bfloat16", 2, true, 7, 256, 100},
    {weftFloat8e4m3, "f8e4m3", 1, true, 3, 16, 8},
    {weftFloat8e5m2, "f8e5m2", 1, true, 2, 8, 15},
};

// A small IEEE-like binary format (half, fp8).
struct MiniFormat {
  int expBits;
  int manBits;
  int bias;
  bool hasInfinity;  // false: e4m3 "fn" variant, all-ones is the only NaN
  double maxFinite;
};
constexpr MiniFormat kHalf{5, 10, 15, true, 65504.0};
constexpr MiniFormat kE4M3{4, 3, 7, false, 448.0};
constexpr MiniFormat kE5M2{5, 2, 15, true, 57344.0};

double decodeMini(const MiniFormat& f, uint32_t bits) {
  const uint32_t expMask = (1u << f.expBits) - 1;
  const uint32_t manMask = (1u << f.manBits) - 1;
  const bool negative = (bits >> (f.expBits + f.manBits)) & 1;
  const uint32_t exp = (bits >> f.manBits) & expMask;
  const uint32_t man = bits & manMask;
  double value;
  if (f.hasInfinity && exp == expMask) {
    value = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.hasInfinity && exp == expMask && man == manMask) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    value = std::ldexp(static_cast<double>(man), 1 - f.bias - f.manBits);
  } else {
    value = std::ldexp(static_cast<double>(man | (1u << f.manBits)), static_cast<int>(exp) - f.bias - f.manBits);
  }
  return negative ? -value : value;
}

uint32_t encodeMini(const MiniFormat& f, double value) {
  const uint32_t expMask = (1u << f.expBits) - 1;
  const uint32_t manMask = (1u << f.manBits) - 1;
  const uint32_t signBit = 1u << (f.expBits + f.manBits);
  if (std::isnan(value)) return f.hasInfinity ? (expMask << f.manBits) | 1u : (expMask << f.manBits) | manMask;
  const uint32_t sign = std::signbit(value) ? signBit : 0;
  const double magnitude = std::fabs(value);
  // Infinity where the format has one; else saturate to the largest finite
  // value (all ones but the last mantissa bit, which would be NaN).
  const uint32_t overflow = f.hasInfinity ? (expMask << f.manBits) : (expMask << f.manBits) | (manMask - 1);
  if (std::isinf(magnitude)) return sign | overflow;
  if (magnitude == 0) return sign;
  int frexpExp;
  std::frexp(magnitude, &frexpExp);
  int unbiased = std::max(frexpExp - 1, 1 - f.bias);
  double rounded = std::nearbyint(std::ldexp(magnitude, f.manBits - unbiased));  // ties to even
  if (rounded >= std::ldexp(1.0, f.manBits + 1)) {
    rounded /= 2;
    unbiased += 1;
  }
  if (std::ldexp(rounded, unbiased - f.manBits) > f.maxFinite) return sign | overflow;
  const auto mantissa = static_cast<uint32_t>(rounded);
  if (mantissa < (1u << f.manBits)) return sign | mantissa;  // subnormal
  return sign | (static_cast<uint32_t>(unbiased + f.bias) << f.manBits) | (mantissa & manMask);
}

template <typename T>
T loadAs(const void* buffer, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(buffer) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void storeAs(void* buffer, size_t index, T value) {
  std::memcpy(static_cast<char*>(buffer) + index * sizeof(T), &value, sizeof(T));
}

}  // namespace

const TypeInfo& typeInfo(weftDataType_t type) { return kTypes[static_cast<int>(type)]; }

std::optional<std::vector<weftDataType_t>> parseTypes(const std::string& name) {
  std::vector<weftDataType_t> types;
  for (const TypeInfo& info : kTypes) {
    if (name == "all" || name == info.name) types.push_back(info.type);
  }
  // Accepted aliases, as nccl-tests and users spell them.
  if (types.empty()) {
    if (name == "float16" || name == "fp16") types.push_back(weftFloat16);
    if (name == "float32" || name == "fp32") types.push_back(weftFloat32);
    if (name == "float64" || name == "fp64") types.push_back(weftFloat64);
    if (name == "bf16") types.push_back(weftBfloat16);
    if (name == "char") types.push_back(weftInt8);
    if (name == "int") types.push_back(weftInt32);
  }
  if (types.empty()) return std::nullopt;
  return types;
}

const char* opName(BenchOp op) {
  switch (op) {
    case BenchOp::Sum: return "sum";
    case BenchOp::Prod: return "prod";
    case BenchOp::Max: return "max";
    case BenchOp::Min: return "min";
    case BenchOp::Avg: return "avg";
    case BenchOp::MulSum: return "mulsum";
  }
  return "?";
}

std::optional<std::vector<BenchOp>> parseOps(const std::string& name) {
  const BenchOp all[] = {BenchOp::Sum, BenchOp::Prod, BenchOp::Max, BenchOp::Min, BenchOp::Avg, BenchOp::MulSum};
  std::vector<BenchOp> ops;
  for (BenchOp op : all) {
    if (name == "all" || name == opName(op)) ops.push_back(op);
  }
  if (ops.empty()) return std::nullopt;
  return ops;
}

weftRedOp_t builtinOp(BenchOp op) {
  switch (op) {
    case BenchOp::Sum: return weftSum;
    case BenchOp::Prod: return weftProd;
    case BenchOp::Max: return weftMax;
    case BenchOp::Min: return weftMin;
    case BenchOp::Avg: return weftAvg;
    case BenchOp::MulSum: return weftSum;
  }
  return weftSum;
}

uint16_t floatToHalfBits(double value) { return static_cast<uint16_t>(encodeMini(kHalf, value)); }
double halfBitsToDouble(uint16_t bits) { return decodeMini(kHalf, bits); }
uint8_t floatToFp8E4M3Bits(double value) { return static_cast<uint8_t>(encodeMini(kE4M3, value)); }
double fp8E4M3BitsToDouble(uint8_t bits) { return decodeMini(kE4M3, bits); }
uint8_t floatToFp8E5M2Bits(double value) { return static_cast<uint8_t>(encodeMini(kE5M2, value)); }
double fp8E5M2BitsToDouble(uint8_t bits) { return decodeMini(kE5M2, bits); }

uint16_t floatToBf16Bits(double value) {
  const auto single = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &single, sizeof bits);
  if (std::isnan(single)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even on the dropped half
  return static_cast<uint16_t>(bits >> 16);
}

double bf16BitsToDouble(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float single;
  std::memcpy(&single, &wide, sizeof single);
  return single;
}

double loadElement(weftDataType_t type, const void* buffer, size_t index) {
  switch (type) {
    case weftInt8: return loadAs<int8_t>(buffer, index);
    case weftUint8: return loadAs<uint8_t>(buffer, index);
    case weftInt32: return loadAs<int32_t>(buffer, index);
    case weftUint32: return loadAs<uint32_t>(buffer, index);
    case weftInt64: return static_cast<double>(loadAs<int64_t>(buffer, index));
    case weftUint64: return static_cast<double>(loadAs<uint64_t>(buffer, index));
    case weftFloat16: return halfBitsToDouble(loadAs<uint16_t>(buffer, index));
    case weftFloat32: return loadAs<float>(buffer, index);
    case weftFloat64: return loadAs<double>(buffer, index);
    case weftBfloat16: return bf16BitsToDouble(loadAs<uint16_t>(buffer, index));
    case weftFloat8e4m3: return fp8E4M3BitsToDouble(loadAs<uint8_t>(buffer, index));
    case weftFloat8e5m2: return fp8E5M2BitsToDouble(loadAs<uint8_t>(buffer, index));
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

void storeElement(weftDataType_t type, void* buffer, size_t index, double value) {
  switch (type) {
    case weftInt8: storeAs<int8_t>(buffer, index, static_cast<int8_t>(value)); break;
    case weftUint8: storeAs<uint8_t>(buffer, index, static_cast<uint8_t>(value)); break;
    case weftInt32: storeAs<int32_t>(buffer, index, static_cast<int32_t>(value)); break;
    case weftUint32: storeAs<uint32_t>(buffer, index, static_cast<uint32_t>(value)); break;
    case weftInt64: storeAs<int64_t>(buffer, index, static_cast<int64_t>(value)); break;
    case weftUint64: storeAs<uint64_t>(buffer, index, static_cast<uint64_t>(value)); break;
    case weftFloat16: storeAs<uint16_t>(buffer, index, floatToHalfBits(value)); break;
    case weftFloat32: storeAs<float>(buffer, index, static_cast<float>(value)); break;
    case weftFloat64: storeAs<double>(buffer, index, value); break;
    case weftBfloat16: storeAs<uint16_t>(buffer, index, floatToBf16Bits(value)); break;
    case weftFloat8e4m3: storeAs<uint8_t>(buffer, index, floatToFp8E4M3Bits(value)); break;
    case weftFloat8e5m2: storeAs<uint8_t>(buffer, index, floatToFp8E5M2Bits(value)); break;
    default: break;
  }
}

double ulpAt(weftDataType_t type, double value) {
  const TypeInfo& info = typeInfo(type);
  if (!info.isFloat) return 1.0;
  int minExp;  // exponent of the smallest normal number
  switch (type) {
    case weftFloat16: minExp = -14; break;
    case weftFloat32: case weftBfloat16: minExp = -126; break;
    case weftFloat64: minExp = -1022; break;
    case weftFloat8e4m3: minExp = -6; break;
    case weftFloat8e5m2: minExp = -14; break;
    default: minExp = 0; break;
  }
  int frexpExp;
  const double magnitude = std::fabs(value);
  if (magnitude == 0) return std::ldexp(1.0, minExp - info.mantissaBits);
  std::frexp(magnitude, &frexpExp);
  return std::ldexp(1.0, std::max(frexpExp - 1, minExp) - info.mantissaBits);
}

}  // namespace weft::bench
