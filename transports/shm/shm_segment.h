// A named POSIX shared-memory segment, mapped and pre-faulted.
//
// While its name exists, the creating process holds a shared flock on it
// (a descriptor kept open until unlink()): the kernel drops the lock when
// the process dies, however it dies, so a name whose lock anyone can take
// belongs to a dead process. sweepOrphanedSegments() removes those; each
// process runs it before the first segment it creates.
#pragma once

#include <cstddef>
#include <string>

namespace weft {

class ShmSegment {
 public:
  ShmSegment() = default;
  // Creates a new segment of `bytes` bytes with a random name under
  // `prefix`, maps it and touches every page (so no page faults happen later,
  // on the data path).
  static ShmSegment create(const std::string& prefix, size_t bytes);
  // Maps an existing segment created by another process.
  static ShmSegment open(const std::string& name, size_t bytes);

  ShmSegment(ShmSegment&& o) noexcept { *this = std::move(o); }
  ShmSegment& operator=(ShmSegment&& o) noexcept;
  ~ShmSegment();

  void* data() const { return addr_; }
  size_t size() const { return bytes_; }
  const std::string& name() const { return name_; }
  // Removes the name (and releases the creator's lock); the mappings stay
  // valid.
  void unlink();

 private:
  void* addr_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool owner_ = false;
  int lockFd_ = -1;  // the creator's descriptor holding the flock
};

// Removes this user's segments under /dev/shm whose names ShmSegment::create
// made ("weft-<kind>-<16 hex digits>-lk": the ending says the creator holds
// the lock, so segments of older builds, which hold none, are never taken)
// and whose creator is gone: no process holds the lock, and the segment has
// its size (the creator locks before it sizes, so a segment being created
// is never taken for an orphan). Returns how many it removed. `dir` is for
// tests.
int sweepOrphanedSegments(const char* dir = "/dev/shm");

// Touches one byte per page so the pages exist before the data path runs.
void prefault(void* mem, size_t bytes);

}  // namespace weft
