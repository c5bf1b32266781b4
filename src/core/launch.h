// From validated calls to a plan run by the host executor.
#pragma once

#include <vector>

#include "src/core/op.h"

namespace weft {

// Runs a batch of operations of one communicator, in order: collectives one
// after the other, all point-to-point calls of the batch together as one plan
// (so sends and receives in a group cannot deadlock). Throws weft::Error.
void runBatch(weftComm_t comm, const std::vector<OpDesc>& ops);

// Init's part of the device path (WEFT_DEVICE_SETUP): with a GPU, the
// communicator's device stream and status word, and the device FIFOs of the
// AllReduce ring, connected and mapped. Collective over the ranks; nothing
// happens without a GPU. Throws weft::Error.
void setUpDevicePath(weftComm_t comm);

// weftCommWarmup: connects (and, with a GPU, maps) the device FIFOs of every
// shape of device call (deviceCallShapes in launch.cc) and makes the device
// stream and status word. Collective over the ranks. Throws weft::Error.
void warmUpDevicePath(weftComm_t comm);

}  // namespace weft
