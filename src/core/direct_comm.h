// Single-copy collectives on registered buffers (algorithms/direct.h): the
// per-communicator part. At set-up, ranks all on one host each create a
// small shared-memory region and map every peer's. A call that may run
// single-copy opens with a handshake through the regions: every rank
// publishes how peers reach its send and receive buffers (BufName,
// src/core/registration.h), then reads every peer's. The decision is a pure
// function of what all ranks published, so every rank makes the same one:
// single-copy only when every buffer the collective touches on every rank is
// reachable, else the FIFO path (an unregistered buffer anywhere is a
// fallback, never an error). The region also holds the barrier counter the
// plan's Barrier steps use.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "src/core/op.h"
#include "src/core/registration.h"
#include "src/exec/host/host_executor.h"
#include "transports/shm/shm_segment.h"

struct weftComm;

namespace weft {

struct DirectRegion;

class DirectComm final : public DirectAccess {
 public:
  DirectComm(weftComm* comm, uint64_t minBytes) : comm_(comm), minBytes_(minBytes) {}
  ~DirectComm();
  void barrier() override;

  // Whether op is a candidate at all (the same answer on every rank).
  bool candidate(const OpDesc& op) const;
  // The smallest call that is a candidate (nccl-tests bytes). A change
  // must be made alike on every rank (weft-tune forces it per communicator).
  uint64_t minBytes() const { return minBytes_; }
  void setMinBytes(uint64_t b) { minBytes_ = b; }
  // The handshake; on true, `buffers` holds every rank's buffers as mapped
  // here. Every rank returns the same.
  bool agree(const OpDesc& op, const PinnedBuffers& mine);
  // The call that agreed is over (returned or failed): drops what reach()
  // held of peers' allocations.
  void endCall() { held_.clear(); }

  uint64_t callsRun = 0;  // calls that agreed on single-copy (tests read it)
  ShmSegment own;
  std::vector<ShmSegment> peerRegions;
  std::vector<DirectRegion*> regions;  // index = rank
  // index = rank: the key (src/util/tsan_sync.h) under which a TSan build
  // is told of the orderings through that rank's region; null otherwise.
  std::vector<void*> syncKeys;

 private:
  char* reach(int rank, const BufName& n, uint64_t bytes);
  [[noreturn]] void failWait(int rank, bool timedOut, const char* what);
  weftComm* comm_;
  uint64_t minBytes_;
  uint64_t seq_ = 0;
  uint64_t barriers_ = 0;
  std::map<std::pair<int, uint64_t>, ShmSegment> mapped_;  // (rank, segment id)
  std::vector<std::shared_ptr<const void>> held_;          // this call's same-process peers' allocations
};

// createComm step: the regions, when every rank is on this host and
// WEFT_DIRECT is on everywhere (else comm->direct stays null).
void setUpDirect(weftComm* comm, int nHosts);

// Bytes of op's send and receive buffers.
uint64_t sendBytesOf(const OpDesc& op, int nranks);
uint64_t recvBytesOf(const OpDesc& op, int nranks);

}  // namespace weft
