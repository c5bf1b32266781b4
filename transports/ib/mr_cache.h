// Memory registration cache. Registering memory with the HCA pins pages and
// costs tens of microseconds per MiB; buffers are reused across connections
// and calls, so a registration covering an address range is kept and shared
// (reference counted) until its last user lets go. Pure apart from the two
// callbacks, which the verbs code fills with ibv_reg_mr / ibv_dereg_mr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace weft::ib {

struct MrKeys {
  void* handle = nullptr;  // struct ibv_mr* for the verbs code
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

class MrCache {
 public:
  using RegisterFn = std::function<MrKeys(uintptr_t base, size_t bytes)>;  // throws on failure
  using DeregisterFn = std::function<void(const MrKeys&)>;

  MrCache(RegisterFn reg, DeregisterFn dereg, size_t pageBytes = 4096)
      : reg_(std::move(reg)), dereg_(std::move(dereg)), page_(pageBytes) {}
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // Keys of a registration covering [p, p + bytes): an existing one when a
  // cached region contains the range, else a new page-aligned one.
  MrKeys acquire(const void* p, size_t bytes);
  // Drops one reference taken by acquire (by its handle); the region is
  // deregistered with its last reference.
  void release(const MrKeys& keys);

  size_t regions() const;
  size_t registrations() const { return registrations_; }  // calls to reg so far

 private:
  struct Region {
    uintptr_t base;
    size_t bytes;
    MrKeys keys;
    int refs;
  };
  RegisterFn reg_;
  DeregisterFn dereg_;
  size_t page_;
  mutable std::mutex mu_;
  std::vector<Region> regions_;
  size_t registrations_ = 0;
};

}  // namespace weft::ib
