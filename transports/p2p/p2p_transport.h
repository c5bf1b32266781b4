// p2p: slot FIFOs in the receiving GPU's memory, written by the sending GPU.
//
// The receiver allocates the FIFO (header + slots) with cudaMalloc and hands
// it to the sender over the bootstrap: as a plain device pointer when both
// ranks are threads of one process, else as a CUDA IPC handle the sender
// opens (cudaIpcOpenMemHandle). Used between GPUs of one host that can
// access each other, and between ranks sharing one GPU. Only the device
// executor uses these FIFOs (the host cannot touch them); no doorbells are
// rung, the kernels poll.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace weft {

std::unique_ptr<Transport> makeP2pTransport();

}  // namespace weft
