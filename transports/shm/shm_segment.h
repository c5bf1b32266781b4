// A named POSIX shared-memory segment, mapped and pre-faulted.
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
  // Removes the name; the mappings stay valid.
  void unlink();

 private:
  void* addr_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool owner_ = false;
};

// Touches one byte per page so the pages exist before the data path runs.
void prefault(void* mem, size_t bytes);

}  // namespace weft
