// One validated user call, ready to run.
#pragma once

#include <cstddef>

#include "algorithms/plan.h"
#include "src/kernels/reduce.h"
#include "weft/weft.h"

namespace weft {

struct OpDesc {
  plan::Coll coll = plan::Coll::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  weftDataType_t type = weftFloat32;
  kernels::RedOp op;
  int root = 0;
  int peer = -1;        // Send/Recv only
  // Device buffers (src/exec/cuda/device_route.h): the call runs on the device,
  // queued on `stream` (a cudaStream_t).
  bool device = false;
  weftStream_t stream = nullptr;
  bool isSend = false;  // Send/Recv only
  // AllReduce of float32 host buffers only: the ring with this narrow FIFO
  // format (the compressed AllReduce's bf16/fp16 kinds, src/compress).
  plan::Wire wire = plan::Wire::Native;
  weftComm_t comm = nullptr;
};

}  // namespace weft
