// The plan as the device executor reads it: a flat array of compact steps
// (O(steps), uploaded once per cached plan) with the FIFOs each step uses
// resolved to device-visible addresses, and the launch that hands it over.
// Plain data with no CUDA dependency: the host side builds it, the kernel
// interprets it, and the host-compiled interpreter (tests/devemu) runs it
// over ordinary memory.
#pragma once

#include <stdint.h>

namespace weft::cuda {

// Where plans for device buffers split a buffer (CollArgs::alignBytes): the
// interpreter moves a piece in 16-byte vectors only when every pointer of it
// is 16-byte aligned, and element by element otherwise.
constexpr uint32_t kDeviceSplitAlignBytes = 16;
constexpr int kMaxDeviceBindings = 64;  // (send, recv) pairs carried inline in DevLaunch
// Channels of one launch. A launch has at most kMaxDeviceCtas CTAs; a CTA
// serves channels cta, cta + nCtas, ... (at most kMaxChannelsPerCta),
// taking whichever of its channels has a piece ready, so no channel of a
// CTA waits behind another (AllToAll over n ranks has 2n-1 channels).
constexpr int kMaxDeviceCtas = 64;
constexpr int kMaxChannelsPerCta = 16;
constexpr int kMaxDeviceChannels = kMaxDeviceCtas * kMaxChannelsPerCta;

// One FIFO end, as the device sees it. The counters are a FifoHeader's (in
// the consumer GPU's memory for p2p, in pinned mapped host memory for
// shm/socket/ib); the slots are next to them, except for ib with GPUDirect
// RDMA, where they are in this GPU's memory.
//
// `credit`, when set (p2p), is a word in the producer's memory that the
// consumer keeps equal to `consumed`: the consumer stores both, the
// producer reads only `credit`, so each end polls its own memory (the
// consumer `posted`, the producer `credit`). Null: the producer reads
// `consumed` (host-memory FIFOs, where both ends are equally far).
struct DevFifo {
  uint32_t* posted;    // &hdr->posted
  uint32_t* consumed;  // &hdr->consumed
  uint32_t* failed;    // &hdr->failed
  uint64_t* sizes;     // hdr->sizes
  char* data;          // slot 0
  uint64_t slotBytes;
  uint32_t nSlots;
  uint32_t pad;
  uint32_t* credit;    // the consumer's count in the producer's memory, or null
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

// DevLaunch::arith: how float16/bfloat16 reduce on the device.
enum DevArith : uint32_t {
  kArithExact = 0,   // round where the host executor rounds: results equal the host's bit for bit
  kArithNative = 1,  // half2/bfloat162 instructions where that rounds the same for finite values
};

// DevLaunch::proto: how pieces cross the FIFOs.
enum DevProto : uint32_t {
  // Slot data, then sizes, one system fence, the posted counter; the
  // consumer polls posted.
  kProtoSimple = 0,
  // Low latency (NCCL's LL): every 8-byte line of a slot carries 4 bytes of
  // data and a 4-byte flag (the piece's FIFO counter + 1), stored together;
  // the consumer polls the lines themselves (its own memory), so no fence
  // and no counter read stand between the data and its reader. A slot
  // holds half its bytes of data. The FIFO's counters still carry credits
  // (consumed) and the count of posted pieces; an LL FIFO must start with
  // zeroed slots and counters at 0 (flag 0 then belongs to counter
  // 2^32 - 1, the "piece before" the slot's first), and must not carry
  // simple pieces too (their bytes could look like flags).
  kProtoLl = 1,
};
constexpr uint64_t kLlLineBytes = 8;  // one line: 4 data bytes + 4 flag bytes

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
  uint32_t arith;              // DevArith (0, the zeroed default: exact)
  uint32_t proto;              // DevProto (0, the zeroed default: simple)
  uint32_t pad;
  uint64_t sliceBytes;         // piece bytes (plan::Plan::sliceBytes); 0: the FIFO slot
  int32_t nranks;
  int32_t type;                // weftDataType_t
  int32_t opKind;              // kernels::OpKind
  alignas(8) unsigned char scalar[8];
  int32_t nBindings;
  DevBinding bindings[kMaxDeviceBindings];
  // Set by launchInterpreter from its nChannels argument.
  int32_t nChannels;
  // Bindings in device memory, for launches with more than
  // kMaxDeviceBindings of them; null: `bindings` above.
  const DevBinding* bindingTable;
};

}  // namespace weft::cuda
