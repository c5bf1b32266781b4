#include "bindings/torch/type_map.h"

#include <c10/util/Exception.h>

namespace weft::torch_backend {

weftDataType_t toWeftType(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return weftFloat32;
    case at::kDouble: return weftFloat64;
    case at::kHalf: return weftFloat16;
    case at::kBFloat16: return weftBfloat16;
    case at::kChar: return weftInt8;
    case at::kByte: return weftUint8;
    case at::kBool: return weftUint8;
    case at::kInt: return weftInt32;
    case at::kLong: return weftInt64;
    default: break;
  }
  TORCH_CHECK(false, "weft backend: unsupported tensor type ", type);
}

weftRedOp_t toWeftOp(const c10d::ReduceOp& op, at::ScalarType type) {
  const bool isBool = type == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return isBool ? weftMax : weftSum;
    case c10d::ReduceOp::PRODUCT: return isBool ? weftMin : weftProd;
    case c10d::ReduceOp::MIN: return weftMin;
    case c10d::ReduceOp::MAX: return weftMax;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!isBool, "weft backend: AVG is not defined for bool tensors");
      return weftAvg;
    default: break;
  }
  TORCH_CHECK(false, "weft backend: reduce op ", static_cast<int>(op.op_),
              " is not supported (SUM, PRODUCT, MIN, MAX and AVG are)");
}

}  // namespace weft::torch_backend
