// Translating torch's element types and reduce ops to weft's.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "weft/weft.h"

namespace weft::torch_backend {

// Throws (a Python ValueError/RuntimeError) for types weft has no kernel for.
weftDataType_t toWeftType(at::ScalarType type);

// Bool tensors travel as uint8, where SUM and PRODUCT become MAX and MIN
// (logical or / and), the meaning torch gives them. Bitwise ops and
// PREMUL_SUM are not supported and throw.
weftRedOp_t toWeftOp(const c10d::ReduceOp& op, at::ScalarType type);

}  // namespace weft::torch_backend
