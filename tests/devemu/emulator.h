// The device interpreter compiled for the host (src/exec/cuda/interpreter.cuh
// through device_portable.cuh): each CTA's threads are CPU threads over
// ordinary memory, a CTA barrier is a std::barrier. What it cannot show:
// GPU memory ordering (the host's atomics are stronger than the kernel's
// volatile accesses and fences), warp scheduling and divergence, timing and
// performance (docs/cuda.md).
#pragma once

#include <cstdint>
#include <vector>

#include "src/exec/cuda/device_layout.h"

namespace weft::devemu {

struct EmuShape {
  int threadsPerCta = 3;                   // odd: strides that are not a warp's
  int maxCtas = cuda::kMaxDeviceCtas;      // as launchInterpreter caps the grid
};

// Runs one rank's launch to completion on min(nChannels, maxCtas) x
// threadsPerCta threads (blocking). Throws std::invalid_argument for a
// (type, op) without a kernel or channels a CTA cannot hold.
void runLaunch(const cuda::DevLaunch& launch, int nChannels, const EmuShape& shape);

// The CTAs runLaunch would use for nChannels.
int ctasFor(int nChannels, const EmuShape& shape);

}  // namespace weft::devemu
