// Enum arguments of the C API, read as the integers C callers pass.
//
// C lets a caller pass any int where weft.h says weftDataType_t or
// weftRedOp_t. In C++ an enum without a fixed underlying type holds only the
// values of its range (weftDataType_t: 0 to 15), so an argument outside it
// must never be read as the enum: not compared, switched on, copied or
// converted (all undefined, and UBSan stops on them). Each entry point reads
// such an argument's bytes as an int with abiInt, range-checks the int, and
// only then makes it the enum.
#pragma once

#include <cstring>
#include <string>
#include <type_traits>

#include "weft/weft.h"

namespace weft {

template <typename E>
int abiInt(const E& arg) {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int), "a C enum argument travels as an int");
  int value;
  std::memcpy(&value, &arg, sizeof value);
  return value;
}

// The range check of a datatype argument read with abiInt: empty when `raw`
// is a weftDataType_t, else the sentence saying it is not (each entry point
// puts its own name and result code around it).
inline std::string notADataType(int raw) {
  if (raw >= 0 && raw < weftNumTypes) return {};
  return "datatype " + std::to_string(raw) + " is not a weftDataType_t (0 to " + std::to_string(weftNumTypes - 1) +
         ")";
}

}  // namespace weft
