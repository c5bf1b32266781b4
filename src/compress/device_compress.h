// Compressed AllReduce on device buffers: the kernels of device_kernels.h
// queued on the caller's CUDA stream, between the communicator's own
// AllGather / AlltoAll on device buffers, queued on the same stream through
// the public API. Nothing waits for the device: a call only queues work,
// like a device collective. Compiled with and without CUDA: without it,
// every function raises weftInvalidUsage (no pointer is ever a device
// pointer then, so they are not reached).
#pragma once

#include <cstddef>

#include "weft/weft.h"

struct weftCompressor;

namespace weft::compress {

// The device side of a compressor: its residual, scratch and an event
// marking its last call's end, in device memory of one GPU.
struct DeviceCompressor;

// Queues one compressed AllReduce of device buffers on `stream` (a
// cudaStream_t; NULL is the legacy default stream). The first call
// allocates the compressor's device memory on the buffers' GPU and moves the
// residual there. Throws weft::Error.
void runCompressedOnDevice(weftCompressor* c, const void* send, void* recv, weftStream_t stream);

// Allocates the compressor's device memory on `device` now, as its first
// call would (a no-op when it has). Allocating synchronises the GPU, so a
// rank doing it mid-step would wait for a peer's kernel that waits for
// this rank: ranks sharing a GPU must allocate before either launches.
// Throws weft::Error.
void prepareCompressorOnDevice(weftCompressor* c, int device);

// The device residual (null without error feedback or before the first
// call) and its length.
float* deviceResidual(weftCompressor* c, size_t* count);

// Zeroes the device residual once the compressor's queued calls are done,
// and returns when it is zero. Throws weft::Error.
void resetDeviceResidual(weftCompressor* c);

}  // namespace weft::compress
