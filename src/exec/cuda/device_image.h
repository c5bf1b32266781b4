// A plan's device image (channels, compact steps, FIFO table), built on the
// host from a plan and a way to resolve each (direction, peer, connection)
// to a DevFifo. Pure C++ with no CUDA calls: DeviceState builds the image it
// uploads with it, and the host-compiled interpreter's tests (tests/devemu)
// build theirs with it over in-memory FIFOs.
#pragma once

#include <functional>
#include <vector>

#include "algorithms/plan.h"
#include "src/exec/cuda/device_layout.h"

namespace weft::cuda {

struct DeviceImage {
  std::vector<DevChannel> channels;
  std::vector<DevStep> steps;
  std::vector<DevFifo> fifos;  // each (direction, peer, conn) once
};

// The DevFifo of this rank's end of the FIFO to (send) or from (!send)
// `peer` on connection `conn`.
using DevFifoResolver = std::function<DevFifo(bool send, int peer, int conn)>;

// Throws weft::Error for a plan the interpreter cannot run: a Direct or
// Barrier step, a narrow wire format (the kernel moves buffer-format
// elements only), or a FIFO step with no input.
DeviceImage buildDeviceImage(const plan::Plan& p, const DevFifoResolver& resolve);

}  // namespace weft::cuda
