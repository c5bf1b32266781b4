// Where plan images live on the device: one block of device memory (and a
// pinned host mirror of it) made with the communicator's device state, at
// init or by weftCommWarmup, and carved into ranges for the images of new
// call shapes. Placing an image is then a host copy into the mirror and an
// asynchronous pinned-to-device copy: no allocation and no copy from
// pageable memory (which waits for its stream) in the call path.
//
// A range whose last owner let go (plan evicted from the plan cache, graph
// destroyed) may still be read by launches already queued, so it is not
// reusable at once: it "cools" until the communicator's launch sequence
// number it was retired with has completed. Pure C++, no CUDA: the
// bookkeeping is unit-tested without a GPU (tests/devhost).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

namespace weft::cuda {

class RangeArena {
 public:
  static constexpr size_t kAlign = 256;  // every range starts on a 256-byte boundary (the image's own alignment)

  explicit RangeArena(size_t bytes = 0) : bytes_(bytes / kAlign * kAlign) {
    if (bytes_) free_[0] = bytes_;
  }

  size_t capacity() const { return bytes_; }

  // The offset of a free range of at least `bytes` (first fit), or nothing
  // when no free range is big enough.
  std::optional<size_t> take(size_t bytes) {
    const size_t want = roundUp(bytes ? bytes : 1);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < want) continue;
      const size_t at = it->first, left = it->second - want;
      free_.erase(it);
      if (left) free_[at + want] = left;
      used_[at] = want;
      return at;
    }
    return std::nullopt;
  }

  // The range at `offset` (from take) is let go; reusable once launch
  // `ticket` completed (reclaim). False for an offset that is not in use.
  bool retire(size_t offset, uint64_t ticket) {
    auto it = used_.find(offset);
    if (it == used_.end()) return false;
    cooling_.push_back({offset, it->second, ticket});
    used_.erase(it);
    return true;
  }

  // Every cooling range whose ticket is at most `completed` becomes free
  // (merged with free neighbours). Returns how many ranges came back.
  size_t reclaim(uint64_t completed) {
    size_t n = 0;
    for (size_t i = 0; i < cooling_.size();) {
      if (cooling_[i].ticket > completed) {
        i++;
        continue;
      }
      addFree(cooling_[i].offset, cooling_[i].bytes);
      cooling_[i] = cooling_.back();
      cooling_.pop_back();
      n++;
    }
    return n;
  }

  size_t freeBytes() const { return sum(free_); }
  size_t usedBytes() const { return sum(used_); }
  size_t coolingRanges() const { return cooling_.size(); }

 private:
  struct Cooling {
    size_t offset, bytes;
    uint64_t ticket;
  };
  static size_t roundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
  static size_t sum(const std::map<size_t, size_t>& m) {
    size_t s = 0;
    for (const auto& [at, n] : m) s += n;
    return s;
  }
  void addFree(size_t at, size_t n) {
    auto next = free_.lower_bound(at);
    if (next != free_.end() && at + n == next->first) {
      n += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        prev->second += n;
        return;
      }
    }
    free_[at] = n;
  }

  size_t bytes_;
  std::map<size_t, size_t> free_;  // offset -> bytes
  std::map<size_t, size_t> used_;  // offset -> bytes
  std::vector<Cooling> cooling_;
};

}  // namespace weft::cuda
