// Host memory that peers on the host can map (weftMemAlloc), and buffers
// registered with a communicator (weftCommRegister).
//
// weftMemAlloc gives each allocation a named POSIX shm segment; a
// process-wide table maps address ranges to segments, so a registered range
// inside one can be named to a peer process as (segment name, offset), and
// the peer maps it (src/core/direct_comm.h). Other memory can be registered
// too: peers that are threads of this process use its address as it is;
// peers in other processes cannot map it, so calls on it keep the FIFO path.
//
// A call on registered buffers pins their registrations for its duration: a
// deregistration meanwhile is weftInvalidUsage. weftMemFree of an allocation
// still registered with a communicator is weftInvalidUsage too, so no peer
// is ever told a name whose pages were given back. A call that failed on
// one rank (a timeout) can leave a slower peer inside it, still reading and
// writing that rank's buffers: a peer in another process through its own
// mapping, a peer that is a thread of this process through a reference to
// the allocation (holdAllocation), so weftMemFree's unmap waits for that
// peer's call to end. Registered ordinary memory cannot be held that way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

struct weftComm;

namespace weft {

// How a peer reaches one of this rank's buffers in one call.
enum class BufReach : uint8_t {
  None = 0,     // not registered with the communicator: FIFO path
  Segment = 1,  // inside a weftMemAlloc segment: map `name`, add `offset`
  Process = 2,  // registered ordinary memory: only threads of this process
};

// A buffer as named to peers (plain data: it crosses shared memory).
struct BufName {
  BufReach reach = BufReach::None;
  uint64_t addr = 0;      // the address in the owner's process
  uint64_t segId = 0;     // Segment: the allocation's id (unique per process run)
  uint64_t segBytes = 0;  // Segment: the whole segment's size
  uint64_t offset = 0;    // Segment: where the buffer starts in it
  char name[40] = {};     // Segment: the shm name ("/weft-mem-...")
};

inline constexpr const char* kMemSegmentPrefix = "/weft-mem-";

// weftMemAlloc / weftMemFree. Throw weft::Error.
void* memAlloc(size_t bytes);
void memFree(void* p);

// This process's weftMemAlloc allocation `segId` (a BufName's segId), if it
// is still allocated and holds [addr, addr+bytes) at the address it was
// named with: a reference that keeps it mapped. weftMemFree meanwhile takes
// the allocation out of the table and its name away, and the unmap happens
// when the last reference is dropped. Null when not found.
std::shared_ptr<const void> holdAllocation(uint64_t segId, uint64_t addr, uint64_t bytes);

// One communicator's registrations.
class Registrations {
 public:
  explicit Registrations(weftComm* comm);
  ~Registrations();  // releases every registration left (communicator destroyed)
  Registrations(const Registrations&) = delete;
  Registrations& operator=(const Registrations&) = delete;

  // weftCommRegister / weftCommDeregister. Throw weft::Error.
  void* add(void* buff, size_t bytes);
  void remove(void* handle);

  // How peers reach [p, p+bytes): None unless one registration holds all of
  // it. A found registration is pinned until unpin(name).
  BufName pinned(const void* p, size_t bytes);
  void unpin(const BufName& n);

  size_t count();

 private:
  struct Reg;
  Reg* holding(uintptr_t p, size_t bytes);  // under mu_
  weftComm* comm_;
  std::mutex mu_;
  std::map<uintptr_t, std::unique_ptr<Reg>> byBase_;
};

// Pins a call's buffers and unpins them when the call ends.
class PinnedBuffers {
 public:
  PinnedBuffers(Registrations& regs, const void* send, size_t sendBytes, const void* recv, size_t recvBytes);
  ~PinnedBuffers();
  PinnedBuffers(const PinnedBuffers&) = delete;
  PinnedBuffers& operator=(const PinnedBuffers&) = delete;
  const BufName& send() const { return send_; }
  const BufName& recv() const { return recv_; }

 private:
  Registrations& regs_;
  BufName send_, recv_;
};

}  // namespace weft
