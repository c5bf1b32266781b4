// The core's one door to the device path. Compiled with and without CUDA:
// without it (or without a GPU) no pointer is ever recognised as device
// memory, so every call keeps the host behaviour.
#pragma once

#include <memory>
#include <span>

#include "algorithms/plan.h"
#include "src/exec/host/host_executor.h"
#include "src/kernels/reduce.h"
#include "weft/weft.h"

struct weftComm;

namespace weft::cuda {

// API-time check of one call's buffers and stream. Device (or managed)
// buffers set *device and accept `stream` as a cudaStream_t (NULL: the
// legacy default stream); host buffers need NULL or a live weft host stream.
// Mixing host and device buffers in one call is weftInvalidArgument, with a
// log line naming both kinds. Never throws.
weftResult_t checkCallBuffers(const char* fn, const void* send, const void* recv, weftStream_t stream,
                              bool* device);

// Runs (queues) plan `p` on the device, on `stream`. `keep` is the plan
// cache's handle for cached plans, else null. Throws weft::Error.
void runDevicePlan(weftComm* comm, const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep,
                   std::span<const BufferBinding> bindings, const kernels::RedOp& op, weftStream_t stream);

// The CUDA device this thread uses, or -1 without CUDA or a GPU.
int currentDevice();

// How many interpreter CTAs `device` keeps resident at once (all (type, op)
// kernels), or 0 without CUDA, a GPU or an answer. Never throws.
int residentDeviceCtas(int device);

// The GPU a device call on buffer p runs on: the buffer's own, or the
// current device for managed memory (CUDA builds only).
int callDevice(const void* p);
// Makes `device` this thread's CUDA device (weftCommInitAll's devlist).
// Without a GPU (or CUDA) the number only labels the rank
// (weftCommCuDevice) and nothing changes.
void useDevice(int device);

// A device copy of `bytes` of `src` (in-place AllToAll sends from it),
// made by the next runDevicePlan on its launch stream, before the kernel.
// Throws weft::Error.
const void* deviceStageCopy(weftComm* comm, const void* src, size_t bytes, weftStream_t stream);

// Turns a failure the device path's kernels left in the communicator's
// status word (or a failed launch) into its async error. Never throws.
// Called by weftCommGetAsyncError, each device call and the abort path.
void pollDeviceStatus(weftComm* comm);

// Init-time set-up (WEFT_DEVICE_SETUP): when this rank has a GPU, makes the
// device stream, status word, abort-flag mapping and plan-image arena, and
// maps the device FIFOs of `rings` (the caller connected their device
// edges), so several ranks on one GPU meet no implicit device
// synchronisation in their first calls. Throws weft::Error.
void setUpDeviceAtInit(weftComm* comm, std::span<const plan::Plan> rings);

// weftCommWarmup's device half: with a GPU, makes the device state (and
// its plan-image arena) if init did not, and maps the device FIFOs of every plan (whose edges the caller
// connected). Nothing without a GPU. Throws weft::Error.
void warmUpDevice(weftComm* comm, std::span<const plan::Plan> plans);

}  // namespace weft::cuda
