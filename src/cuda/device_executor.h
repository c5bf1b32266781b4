// Launches the plan interpreter: one CTA per channel, on the caller's stream.
#pragma once

#include <cuda_runtime_api.h>

#include "src/cuda/device_plan.h"

namespace weft::cuda {

constexpr int kInterpreterThreads = 512;

// Queues the kernel; throws weft::Error for an invalid (type, op) or a
// failed launch. Completion is ordered on `stream`.
void launchInterpreter(const DevLaunch& launch, int nChannels, cudaStream_t stream);

}  // namespace weft::cuda
