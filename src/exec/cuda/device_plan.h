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

// Loads every (type, op) kernel of the interpreter into the current
// device's context. With lazy loading a kernel loads at its first launch,
// and loading can wait for the whole GPU: behind a peer rank's kernel that
// spins until this rank's runs. Throws weft::Error.
void preloadInterpreterKernels();

// CTAs of the interpreter that `device` keeps resident at once, for the
// (type, op) kernel that keeps fewest: ranks sharing one GPU spin on each
// other's CTAs, so all of theirs must fit together. Throws weft::Error.
int residentInterpreterCtas(int device);

}  // namespace weft::cuda
