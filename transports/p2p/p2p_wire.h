// The receiver's offer of a GPU FIFO over the bootstrap, and the sender's
// check of it (apart from CUDA, so it can be fuzzed on its own). The CUDA IPC
// handle travels after these fields (p2p_transport.cc).
#pragma once

#include <cstdint>
#include <string>

#include "weft/weft.h"

namespace weft::p2p_wire {

constexpr uint32_t kP2pMsgMagic = 0x50325031;  // "P2P1"

struct P2pOfferFields {
  uint32_t magic = kP2pMsgMagic;
  uint32_t sameProcess = 0;
  uint64_t token = 0;       // same process: names the FIFO (local_handles)
  uint64_t bytes = 0;
  uint64_t dataOffset = 0;
  int32_t device = -1;      // the receiver's GPU
  int32_t pad = 0;
};

// The sender's answer: a word of its GPU memory where the receiver's kernel
// writes the FIFO's consumed count, so that the sender's kernel reads its
// credit from its own memory. Same fields as an offer: `bytes` is the block
// the word is in (kP2pCreditBlockBytes, the granularity CUDA IPC maps),
// `dataOffset` the word's place in it, on its own kP2pCreditStride bytes.
constexpr uint64_t kP2pCreditBlockBytes = uint64_t(2) << 20;
constexpr uint64_t kP2pCreditStride = 128;

// Empty when an answer names a credit word this receiver can use; else what
// is wrong, with *code the error class to raise.
inline std::string p2pCreditProblem(const P2pOfferFields& o, bool sameProcess, int devices, weftResult_t* code) {
  *code = weftInternalError;
  if (o.magic != kP2pMsgMagic || o.bytes != kP2pCreditBlockBytes || bool(o.sameProcess) != sameProcess)
    return "a credit word this rank cannot use (a block of " + std::to_string(o.bytes) + " bytes)";
  *code = weftRemoteError;
  if (o.device < 0 || o.device >= devices)
    return "a credit word on GPU " + std::to_string(o.device) + ", which this process does not have";
  if (o.dataOffset % kP2pCreditStride != 0 || o.dataOffset + kP2pCreditStride > kP2pCreditBlockBytes)
    return "a credit word at offset " + std::to_string(o.dataOffset) + " of its block";
  return std::string();
}

// Empty when the offer fits this sender: a FIFO of `bytes` bytes with its
// slots at `slotsAt`, ends in one process or not, `devices` GPUs visible;
// else what is wrong, with *code the error class to raise.
inline std::string p2pOfferProblem(const P2pOfferFields& o, uint64_t bytes, uint64_t slotsAt, bool sameProcess,
                                   int devices, weftResult_t* code) {
  *code = weftInternalError;
  if (o.magic != kP2pMsgMagic || o.bytes != bytes || bool(o.sameProcess) != sameProcess)
    return "a FIFO this rank cannot use (" + std::to_string(o.bytes) + " bytes, expected " + std::to_string(bytes) + ")";
  *code = weftRemoteError;
  if (o.device < 0 || o.device >= devices)
    return "a FIFO on GPU " + std::to_string(o.device) + ", which this process does not have";
  if (o.dataOffset != slotsAt)
    return "a FIFO whose layout differs from this rank's (slots at " + std::to_string(o.dataOffset) +
           ", expected " + std::to_string(slotsAt) + ")";
  return std::string();
}

}  // namespace weft::p2p_wire
