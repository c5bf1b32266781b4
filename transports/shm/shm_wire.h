// What the two ends of a shared-memory edge send each other over the
// bootstrap, and the sender's check of the receiver's offer (apart from the
// mapping, so it can be fuzzed on its own).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace weft::shm_wire {

constexpr uint32_t kShmMsgMagic = 0x53484d31;  // "SHM1"

// Receiver -> sender: where its FIFO is.
struct ShmOffer {
  uint32_t magic = kShmMsgMagic;
  uint32_t sameProcess = 0;
  uint64_t token = 0;  // same process: names the FIFO (local_handles)
  uint64_t bytes = 0;
  char name[64] = {};  // other process: the segment's name
};

// Sender -> receiver: the segment is mapped, its name may go.
struct ShmAck {
  uint32_t magic = kShmMsgMagic;
  uint32_t ok = 1;
};

// Empty when the offer fits a FIFO of `bytes` bytes between ends that are
// (or are not) in one process; else what does not fit. A name that fills
// its field without a terminating NUL is refused (it would be cut short).
inline std::string shmOfferProblem(const ShmOffer& o, uint64_t bytes, bool sameProcess) {
  if (o.magic != kShmMsgMagic) return "bad magic";
  if (o.bytes != bytes)
    return std::to_string(o.bytes) + " bytes, expected " + std::to_string(bytes);
  if (bool(o.sameProcess) != sameProcess)
    return sameProcess ? "a segment for another process" : "a heap FIFO of another process";
  if (!sameProcess && (o.name[0] == 0 || memchr(o.name, 0, sizeof(o.name)) == nullptr))
    return "no usable segment name";
  return std::string();
}

}  // namespace weft::shm_wire
