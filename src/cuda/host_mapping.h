// Device-visible addresses for host memory the kernel must read or write
// (shm FIFOs, socket/ib staging slots, the communicator's abort flag).
// Ranges are page-locked and mapped once (cudaHostRegister, portable and
// mapped) and reference counted process-wide, since several communicators
// of one process can share a FIFO (threads as ranks) or a page: a new range
// registers only its pages that no earlier registration covers.
#pragma once

#include <cstddef>
#include <vector>

namespace weft::cuda {

class HostMapping {
 public:
  HostMapping() = default;
  HostMapping(const void* p, size_t bytes);  // throws weft::Error
  HostMapping(HostMapping&& o) noexcept { *this = static_cast<HostMapping&&>(o); }
  HostMapping& operator=(HostMapping&& o) noexcept;
  HostMapping(const HostMapping&) = delete;
  HostMapping& operator=(const HostMapping&) = delete;
  ~HostMapping();

  // The device address of host address p (inside the mapped range).
  void* device(const void* p) const;

 private:
  void release();
  char* base_ = nullptr;      // page-aligned start of the mapped range
  size_t bytes_ = 0;
  std::vector<char*> refs_;   // registry entries (registrations) this mapping holds a reference on
};

}  // namespace weft::cuda
