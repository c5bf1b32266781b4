// Group calls and dispatch of validated operations to the executor.
#pragma once

#include <functional>

#include "src/core/op.h"
#include "weft/weft.h"

namespace weft {

// Outside a group: runs op now (NULL stream) or queues it on its host
// stream. Inside a group: holds it until the outermost weftGroupEnd.
weftResult_t submit(const OpDesc& op, weftStream_t stream);

// An operation built of several calls on comm (a compressed AllReduce): runs
// `task` now (NULL stream) or queues it on its host stream, where it runs
// in order with the stream's other work and its inner calls run inline on
// the worker. weftCommDestroy waits for it like for a queued collective.
// Not inside a group (weftInvalidUsage): its inner calls would be held.
weftResult_t submitTask(const char* fn, weftComm_t comm, weftStream_t stream, std::function<weftResult_t()> task);

// Whether this thread is between weftGroupStart and its weftGroupEnd.
bool inGroup();

weftResult_t groupStart();
weftResult_t groupEnd();

// Validates a stream argument for host buffers: NULL or a live host stream.
weftResult_t checkHostStream(weftStream_t stream);

}  // namespace weft
