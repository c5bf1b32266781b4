// The plan as the device executor reads it: a flat array of compact steps
// (O(steps), uploaded once per cached plan) with the FIFOs each step uses
// resolved to device-visible addresses. Shared by host code (which builds
// it) and the kernel (which interprets it): plain data, and the launch that
// hands it over.
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

namespace weft::cuda {

constexpr int kMaxDeviceBindings = 64;  // (send, recv) pairs per launch
constexpr int kMaxDeviceChannels = 64;  // CTAs per launch

// One FIFO end, as the device sees it. The counters are a FifoHeader's (in
// the peer GPU's memory for p2p, in pinned mapped host memory for
// shm/socket/ib); the slots are next to them, except for ib with GPUDirect
// RDMA, where they are in this GPU's memory.
struct DevFifo {
  uint32_t* posted;    // &hdr->posted
  uint32_t* consumed;  // &hdr->consumed
  uint32_t* failed;    // &hdr->failed
  uint64_t* sizes;     // hdr->sizes
  char* data;          // slot 0
  uint64_t slotBytes;
  uint32_t nSlots;
  uint32_t pad;
};

// plan::Step with buffers and FIFOs resolved.
struct DevStep {
  uint8_t nRecv, nSend, flags, src, dst;  // src/dst: plan::Buf values
  uint8_t pad[1];
  uint16_t bind;
  int32_t in[2];   // indices into the FIFO table, -1 when unused
  int32_t out[2];
  int32_t peerIn0;  // for error reports
  int32_t pad2;
  uint64_t srcOff, dstOff, count;
};

struct DevChannel {
  uint32_t firstStep;
  uint32_t nSteps;
};

// Written by the kernel when it stops early; read on the host afterwards.
struct DevStatus {
  uint32_t code;     // 0 ok, else a weftResult_t
  int32_t channel;
  int32_t step;
  int32_t detail;    // peer, or received byte count
};

struct DevBinding {
  const void* send;
  void* recv;
};

// Everything one launch needs besides the uploaded plan.
struct DevLaunch {
  const DevChannel* channels;  // device memory
  const DevStep* steps;        // device memory
  const DevFifo* fifos;        // device memory
  void* scratch;
  DevStatus* status;           // mapped host memory
  const volatile uint8_t* abortFlag;   // the communicator's abort flag, mapped
  uint64_t timeoutNs;          // 0: none
  uint32_t elemSize;
  uint32_t pad0;
  uint64_t sliceBytes;         // piece bytes (plan::Plan::sliceBytes); 0: the FIFO slot
  int32_t nranks;
  int32_t type;                // weftDataType_t
  int32_t opKind;              // kernels::OpKind
  alignas(8) unsigned char scalar[8];
  int32_t nBindings;
  DevBinding bindings[kMaxDeviceBindings];
};

// The plan interpreter runs one CTA per channel, on the caller's stream.
constexpr int kInterpreterThreads = 512;

// Queues the kernel; throws weft::Error for an invalid (type, op) or a
// failed launch. Completion is ordered on `stream`.
void launchInterpreter(const DevLaunch& launch, int nChannels, cudaStream_t stream);

}  // namespace weft::cuda
