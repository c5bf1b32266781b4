// The device executor's entry point. The kernel-facing layout (DevLaunch,
// DevStep, DevFifo, ...) is in device_layout.h, which needs no CUDA headers.
#pragma once

#include <cuda_runtime_api.h>

#include "src/exec/cuda/device_layout.h"

namespace weft::cuda {

// Threads of one CTA of the plan interpreter (16 warps).
constexpr int kInterpreterThreads = 512;

// Queues the kernel: min(nChannels, kMaxDeviceCtas) CTAs serve the
// launch's nChannels channels (1..kMaxDeviceChannels). Throws weft::Error
// for an invalid (type, op), too many channels or a failed launch.
// Completion is ordered on `stream`.
void launchInterpreter(const DevLaunch& launch, int nChannels, cudaStream_t stream);

}  // namespace weft::cuda
