// Group calls and dispatch of validated operations to the executor.
#pragma once

#include "src/core/op.h"
#include "weft/weft.h"

namespace weft {

// Outside a group: runs op now (NULL stream) or queues it on its host
// stream. Inside a group: holds it until the outermost weftGroupEnd.
weftResult_t submit(const OpDesc& op, weftStream_t stream);

weftResult_t groupStart();
weftResult_t groupEnd();

// Validates a stream argument for host buffers: NULL or a live host stream.
weftResult_t checkHostStream(weftStream_t stream);

}  // namespace weft
