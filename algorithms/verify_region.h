// The plan verifier's symbolic values and buffers (algorithms/verify.cc):
// internal to the verifier.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/verify.h"

namespace weft::verify::detail {
// Defects a value picked up on its way; any of them makes it wrong.
enum BadBits : uint8_t {
  kDup = 1,         // a rank's symbol reduced in twice
  kMixed = 2,       // symbols of different indices or binds reduced together
  kPreTwice = 4,    // pre-processing applied again to pre-processed data
  kAfterPost = 8,   // post-processed data reduced further
  kPostTwice = 16,  // post-processing applied twice
};

// The symbolic value of one element at position x: the reduction over
// `ranks` of Send[x + delta] of binding `bind`.
struct Sym {
  bool init = false;
  uint8_t post = 0;
  uint8_t bad = 0;
  uint16_t bind = 0;
  int64_t delta = 0;
  RankSet ranks, pre;
  bool operator==(const Sym&) const = default;
};

inline Sym shifted(Sym s, int64_t by) {
  s.delta += by;
  return s;
}

inline std::string describeSym(const Sym& s) {
  if (!s.init) return "uninitialised";
  std::ostringstream o;
  o << "{";
  int shown = 0, total = int(s.ranks.count());
  for (int r = 0; r < kMaxRanks && shown < 6; r++)
    if (s.ranks[r]) o << (shown++ ? "," : "") << r;
  if (total > shown) o << ",...(" << total << " ranks)";
  o << "} bind " << s.bind << " at +" << s.delta << " pre " << s.pre.count() << " post " << int(s.post);
  if (s.bad & kDup) o << " DUPLICATE";
  if (s.bad & kMixed) o << " MIXED-INDEX";
  if (s.bad & kPreTwice) o << " PRE-TWICE";
  if (s.bad & kAfterPost) o << " REDUCED-AFTER-POST";
  if (s.bad & kPostTwice) o << " POST-TWICE";
  return o.str();
}

// A run of `len` elements; in a Run list the delta is relative to the
// element's index in the list.
struct Run {
  uint64_t len;
  Sym sym;
};
using Runs = std::vector<Run>;

inline Sym combine(const Sym& a, const Sym& b) {
  Sym r;
  r.init = a.init && b.init;
  if (!r.init) return r;
  r.bad = a.bad | b.bad;
  if ((a.ranks & b.ranks).any()) r.bad |= kDup;
  if (a.delta != b.delta || a.bind != b.bind) r.bad |= kMixed;
  if (a.post || b.post) r.bad |= kAfterPost;
  r.bind = a.bind;
  r.delta = a.delta;
  r.ranks = a.ranks | b.ranks;
  r.pre = a.pre | b.pre;
  return r;
}

inline Runs combine(const Runs& a, const Runs& b) {
  Runs out;
  size_t i = 0, j = 0;
  uint64_t ui = 0, uj = 0;  // elements of a[i], b[j] already used
  // Both lists start at the same element, so their deltas compare directly.
  while (i < a.size() && j < b.size()) {
    uint64_t len = std::min(a[i].len - ui, b[j].len - uj);
    out.push_back({len, combine(a[i].sym, b[j].sym)});
    ui += len;
    uj += len;
    if (ui == a[i].len) i++, ui = 0;
    if (uj == b[j].len) j++, uj = 0;
  }
  return out;
}

// One buffer as an interval map from start position to (end, value); the
// intervals always tile [0, size).
class Region {
 public:
  explicit Region(uint64_t size) : size_(size) {
    if (size) segs_[0] = {size, Sym{}};
  }
  uint64_t size() const { return size_; }

  void fill(uint64_t off, uint64_t len, const Sym& s) { write(off, Runs{{len, shifted(s, int64_t(off))}}); }

  // Values of [off, off+len) with deltas relative to off.
  Runs read(uint64_t off, uint64_t len) const {
    Runs out;
    if (len == 0) return out;
    auto it = std::prev(segs_.upper_bound(off));
    uint64_t pos = off, end = off + len;
    while (pos < end) {
      uint64_t segEnd = std::min(it->second.end, end);
      out.push_back({segEnd - pos, shifted(it->second.sym, int64_t(off))});
      pos = segEnd;
      ++it;
    }
    return out;
  }

  // Writes runs (deltas relative to off) to [off, off+total).
  void write(uint64_t off, const Runs& runs) {
    uint64_t len = 0;
    for (const auto& r : runs) len += r.len;
    if (len == 0) return;
    split(off);
    split(off + len);
    segs_.erase(segs_.lower_bound(off), segs_.lower_bound(off + len));
    uint64_t pos = off;
    for (const auto& r : runs) {
      segs_[pos] = {pos + r.len, shifted(r.sym, -int64_t(off))};
      pos += r.len;
    }
    mergeFrom(off, off + len);
  }

  template <typename F>
  void forEach(uint64_t off, uint64_t len, F f) const {
    if (len == 0) return;
    auto it = std::prev(segs_.upper_bound(off));
    uint64_t pos = off, end = off + len;
    while (pos < end) {
      uint64_t segEnd = std::min(it->second.end, end);
      f(pos, segEnd, it->second.sym);
      pos = segEnd;
      ++it;
    }
  }

 private:
  struct Seg {
    uint64_t end;
    Sym sym;
  };

  void split(uint64_t x) {
    if (x == 0 || x >= size_) return;
    auto it = std::prev(segs_.upper_bound(x));
    if (it->first == x) return;
    Seg tail = {it->second.end, it->second.sym};
    it->second.end = x;
    segs_[x] = tail;
  }

  // Joins equal neighbours around the written range, so that a buffer filled
  // piece by piece stays one interval.
  void mergeFrom(uint64_t from, uint64_t to) {
    auto it = segs_.upper_bound(from);
    if (it != segs_.begin()) --it;
    if (it != segs_.begin()) --it;
    while (it != segs_.end() && it->first <= to) {
      auto next = std::next(it);
      if (next == segs_.end()) break;
      if (it->second.end == next->first && it->second.sym == next->second.sym) {
        it->second.end = next->second.end;
        segs_.erase(next);
      } else {
        it = next;
      }
    }
  }

  uint64_t size_;
  std::map<uint64_t, Seg> segs_;
};

}  // namespace weft::verify::detail
