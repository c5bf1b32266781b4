#include "algorithms/verify.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace weft::verify {

using plan::Buf;
using plan::Plan;
using plan::Step;

namespace {

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

Sym shifted(Sym s, int64_t by) {
  s.delta += by;
  return s;
}

std::string describeSym(const Sym& s) {
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

Sym combine(const Sym& a, const Sym& b) {
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

Runs combine(const Runs& a, const Runs& b) {
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

struct Piece {
  uint64_t len;
  Runs runs;
};

struct FifoKey {
  int src, dst, conn;
  bool operator==(const FifoKey&) const = default;
};
struct FifoKeyHash {
  size_t operator()(const FifoKey& k) const {
    return (size_t(k.src) * 1000003u + size_t(k.dst)) * 257u + size_t(k.conn);
  }
};

// A window of a Region: a user buffer as the plan sees it.
struct View {
  Region* region = nullptr;
  uint64_t base = 0;
  uint64_t size = 0;
};

class Simulator {
 public:
  explicit Simulator(const Problem& p) : p_(p), n_(int(p.plans.size())), pieceElems_(1) {}

  Result run() {
    if (!checkShape()) return finish();
    setUpMemory();
    if (!checkSteps()) return finish();
    checkTotals();
    simulate();
    if (!fatal_) {
      checkLeftovers();
      checkContent();
    }
    return finish();
  }

 private:
  void issue(IssueKind k, const std::string& text) {
    res_.ok = false;
    int& shown = shownPerKind_[int(k)];
    if (shown < 8) res_.issues.push_back({k, text});
    else if (shown == 8) res_.issues.push_back({k, "(more of this kind suppressed)"});
    shown++;
  }

  Result finish() { return res_; }

  static std::string where(int rank, size_t ch, size_t step, const Step& s) {
    std::ostringstream o;
    o << "rank " << rank << " channel " << ch << " step " << step << " [" << plan::describe(s) << "]";
    return o.str();
  }

  bool checkShape() {
    if (n_ < 1 || n_ > kMaxRanks) {
      issue(IssueKind::BadStep, "rank count " + std::to_string(n_) + " outside 1.." + std::to_string(kMaxRanks));
      return false;
    }
    if (int(p_.buffers.size()) != n_) {
      issue(IssueKind::BadStep, "buffer layouts for " + std::to_string(p_.buffers.size()) + " ranks, plans for " +
                                    std::to_string(n_));
      return false;
    }
    for (int r = 0; r < n_; r++) {
      if (p_.plans[r].rank != r || p_.plans[r].nranks != n_) {
        issue(IssueKind::BadStep, "plan " + std::to_string(r) + " claims rank " + std::to_string(p_.plans[r].rank) +
                                      "/" + std::to_string(p_.plans[r].nranks));
        return false;
      }
    }
    pieceElems_ = plan::pieceElems(p_.geometry, p_.plans[0].elemSize);
    return true;
  }

  void setUpMemory() {
    views_.resize(n_);
    scratch_.resize(n_);
    for (int r = 0; r < n_; r++) {
      scratch_[r] = std::make_unique<Region>(p_.plans[r].scratchElems);
      for (size_t b = 0; b < p_.buffers[r].size(); b++) {
        const BufferLayout& L = p_.buffers[r][b];
        Sym input;
        input.init = true;
        input.bind = uint16_t(b);
        input.ranks.set(r);
        BindViews v;
        if (L.aliased) {
          uint64_t size = std::max(L.sendBase + L.sendElems, L.recvBase + L.recvElems);
          regions_.push_back(std::make_unique<Region>(size));
          Region* reg = regions_.back().get();
          reg->fill(L.sendBase, L.sendElems, shifted(input, -int64_t(L.sendBase)));
          v.send = {reg, L.sendBase, L.sendElems};
          v.recv = {reg, L.recvBase, L.recvElems};
        } else {
          regions_.push_back(std::make_unique<Region>(L.sendElems));
          Region* s = regions_.back().get();
          s->fill(0, L.sendElems, input);
          regions_.push_back(std::make_unique<Region>(L.recvElems));
          v.send = {s, 0, L.sendElems};
          v.recv = {regions_.back().get(), 0, L.recvElems};
        }
        views_[r].push_back(v);
      }
    }
  }

  const View* view(int rank, Buf b, uint16_t bind) {
    if (b == Buf::Scratch) {
      scratchView_ = {scratch_[rank].get(), 0, scratch_[rank]->size()};
      return &scratchView_;
    }
    if (bind >= views_[rank].size()) return nullptr;
    return b == Buf::Send ? &views_[rank][bind].send : &views_[rank][bind].recv;
  }

  // Static checks: peers, bounds, FIFO ownership; also totals per FIFO so a
  // stuck receive can be told apart from a receive nobody serves.
  bool checkSteps() {
    bool good = true;
    for (int r = 0; r < n_; r++) {
      std::map<std::tuple<int, int, int>, size_t> owner;  // (dir, peer, conn) -> channel
      const Plan& pl = p_.plans[r];
      for (size_t c = 0; c < pl.channels.size(); c++) {
        const auto& steps = pl.channels[c].steps;
        for (size_t i = 0; i < steps.size(); i++) {
          const Step& s = steps[i];
          auto bad = [&](IssueKind k, const std::string& why) {
            issue(k, where(r, c, i, s) + ": " + why);
            good = false;
          };
          if (s.nRecv > 2 || s.nSend > 2) {
            bad(IssueKind::BadStep, "more than two peers");
            continue;
          }
          if (s.nRecv == 0 && s.src == Buf::None && s.count) bad(IssueKind::BadStep, "no input");
          if (s.nSend == 0 && s.dst == Buf::None && s.count) bad(IssueKind::BadStep, "no output");
          for (int d = 0; d < 2; d++) {
            int np = d == 0 ? s.nRecv : s.nSend;
            for (int k = 0; k < np; k++) {
              int peer = d == 0 ? s.recvPeer[k] : s.sendPeer[k];
              if (peer < 0 || peer >= n_ || peer == r) {
                bad(IssueKind::BadStep, "peer " + std::to_string(peer) + " invalid");
                continue;
              }
              auto key = std::make_tuple(d, peer, int(s.conn));
              auto [it, fresh] = owner.emplace(key, c);
              if (!fresh && it->second != c)
                bad(IssueKind::FifoShared, std::string(d == 0 ? "receive from " : "send to ") + std::to_string(peer) +
                                               " conn " + std::to_string(s.conn) + " also used by channel " +
                                               std::to_string(it->second));
              FifoKey f = d == 0 ? FifoKey{peer, r, s.conn} : FifoKey{r, peer, s.conn};
              (d == 0 ? recvTotal_ : sendTotal_)[f] += s.count;
            }
          }
          for (int io = 0; io < 2; io++) {
            Buf b = io == 0 ? s.src : s.dst;
            uint64_t off = io == 0 ? s.srcOff : s.dstOff;
            if (b == Buf::None) continue;
            const View* v = view(r, b, s.bind);
            if (!v) {
              bad(IssueKind::BadStep, "bind " + std::to_string(s.bind) + " has no buffers");
              continue;
            }
            if (off > v->size || s.count > v->size - off)
              bad(IssueKind::OutOfBounds, std::string(io == 0 ? "source" : "destination") + " range ends at " +
                                              std::to_string(off + s.count) + ", buffer holds " +
                                              std::to_string(v->size));
          }
        }
      }
    }
    return good;
  }

  // Every FIFO must carry as many elements as its receiver takes out; a
  // shortfall is a receive nobody serves, whatever the order of steps.
  void checkTotals() {
    auto fifoName = [](const FifoKey& k) {
      return "rank " + std::to_string(k.src) + " -> rank " + std::to_string(k.dst) + " conn " + std::to_string(k.conn);
    };
    std::vector<FifoKey> keys;
    for (auto& [k, v] : sendTotal_) keys.push_back(k);
    for (auto& [k, v] : recvTotal_)
      if (!sendTotal_.count(k)) keys.push_back(k);
    std::sort(keys.begin(), keys.end(), [](const FifoKey& a, const FifoKey& b) {
      return std::tie(a.src, a.dst, a.conn) < std::tie(b.src, b.dst, b.conn);
    });
    for (const FifoKey& k : keys) {
      uint64_t sent = sendTotal_[k], got = recvTotal_[k];
      if (sent < got)
        issue(IssueKind::NoSender, fifoName(k) + ": receiver takes " + std::to_string(got) + " elements, sender sends " +
                                       std::to_string(sent));
      else if (sent > got)
        issue(IssueKind::Leftover, fifoName(k) + ": sender sends " + std::to_string(sent) + " elements, receiver takes " +
                                       std::to_string(got));
    }
  }

  struct Cursor {
    size_t step = 0;
    uint64_t piece = 0;
  };

  std::deque<Piece>& fifo(const FifoKey& k) { return fifos_[k]; }

  // What blocks (rank, channel) now, or "" when it can move a piece.
  std::string blocker(int r, size_t c, FifoKey* waitedFifo) {
    const Step& s = p_.plans[r].channels[c].steps[cur_[r][c].step];
    for (int k = 0; k < s.nRecv; k++) {
      FifoKey f{s.recvPeer[k], r, s.conn};
      if (fifo(f).empty()) {
        if (waitedFifo) *waitedFifo = f;
        return "waits for data from rank " + std::to_string(f.src) + " conn " + std::to_string(f.conn);
      }
    }
    for (int k = 0; k < s.nSend; k++) {
      FifoKey f{r, s.sendPeer[k], s.conn};
      if (fifo(f).size() >= p_.geometry.nSlots)
        return "FIFO to rank " + std::to_string(f.dst) + " conn " + std::to_string(f.conn) + " is full";
    }
    return "";
  }

  // Moves one piece of (rank, channel) if it can; false when blocked or done.
  bool advance(int r, size_t c) {
    const auto& steps = p_.plans[r].channels[c].steps;
    Cursor& cu = cur_[r][c];
    if (cu.step >= steps.size()) return false;
    const Step& s = steps[cu.step];
    if (s.count == 0) {
      cu.step++;
      return true;
    }
    if (!blocker(r, c, nullptr).empty()) return false;
    const uint64_t at = cu.piece * pieceElems_;
    const uint64_t len = std::min(pieceElems_, s.count - at);

    Runs acc;
    bool have = false;
    for (int k = 0; k < s.nRecv; k++) {
      Piece& in = fifo({s.recvPeer[k], r, s.conn}).front();
      if (in.len != len) {
        issue(IssueKind::SizeMismatch, where(r, c, cu.step, s) + ": piece " + std::to_string(cu.piece) + " from rank " +
                                           std::to_string(s.recvPeer[k]) + " holds " + std::to_string(in.len) +
                                           " elements, step expects " + std::to_string(len));
        fatal_ = true;
        return false;
      }
      acc = have ? combine(acc, in.runs) : in.runs;
      have = true;
    }
    if (s.src != Buf::None) {
      const View* v = view(r, s.src, s.bind);
      Runs local = v->region->read(v->base + s.srcOff + at, len);
      for (auto& run : local) {
        if (!run.sym.init) {
          issue(IssueKind::Uninitialised, where(r, c, cu.step, s) + ": reads " +
                                              std::string(s.src == Buf::Scratch ? "scratch" : "a buffer") +
                                              " nothing wrote");
          break;
        }
      }
      if (s.flags & plan::kPreOp)
        for (auto& run : local) {
          if (run.sym.pre.any()) run.sym.bad |= kPreTwice;
          run.sym.pre = run.sym.ranks;
        }
      acc = have ? combine(acc, local) : local;
      have = true;
    }
    if (s.flags & plan::kPostOp)
      for (auto& run : acc) {
        if (run.sym.post) run.sym.bad |= kPostTwice;
        run.sym.post = 1;
      }
    if (s.dst != Buf::None) {
      const View* v = view(r, s.dst, s.bind);
      v->region->write(v->base + s.dstOff + at, acc);
    }
    for (int k = 0; k < s.nRecv; k++) fifo({s.recvPeer[k], r, s.conn}).pop_front();
    for (int k = 0; k < s.nSend; k++) fifo({r, s.sendPeer[k], s.conn}).push_back({len, acc});
    res_.piecesMoved++;
    if (at + len >= s.count) {
      cu.step++;
      cu.piece = 0;
    } else {
      cu.piece++;
    }
    return true;
  }

  void simulate() {
    cur_.resize(n_);
    for (int r = 0; r < n_; r++) cur_[r].resize(p_.plans[r].channels.size());
    for (;;) {
      bool progress = false, unfinished = false;
      for (int r = 0; r < n_ && !fatal_; r++)
        for (size_t c = 0; c < cur_[r].size() && !fatal_; c++) {
          while (advance(r, c)) progress = true;
          if (cur_[r][c].step < p_.plans[r].channels[c].steps.size()) unfinished = true;
        }
      if (fatal_ || !unfinished) return;
      if (!progress) {
        reportStuck();
        fatal_ = true;
        return;
      }
    }
  }

  void reportStuck() {
    std::ostringstream o;
    int listed = 0;
    bool anyDeadlock = false;
    for (int r = 0; r < n_; r++)
      for (size_t c = 0; c < cur_[r].size(); c++) {
        const auto& steps = p_.plans[r].channels[c].steps;
        if (cur_[r][c].step >= steps.size()) continue;
        const Step& s = steps[cur_[r][c].step];
        FifoKey waited{-1, -1, -1};
        std::string why = blocker(r, c, &waited);
        if (waited.src >= 0 && sendTotal_[waited] < recvTotal_[waited]) {
          issue(IssueKind::NoSender, where(r, c, cur_[r][c].step, s) + ": " + why + ", but rank " +
                                         std::to_string(waited.src) + " sends " + std::to_string(sendTotal_[waited]) +
                                         " elements on that FIFO and " + std::to_string(recvTotal_[waited]) +
                                         " are received");
          continue;
        }
        anyDeadlock = true;
        if (listed++ < 8) o << "\n  " << where(r, c, cur_[r][c].step, s) << " piece " << cur_[r][c].piece << ": " << why;
      }
    if (anyDeadlock) issue(IssueKind::Deadlock, "no rank can progress:" + o.str());
  }

  void checkLeftovers() {
    for (auto& [k, q] : fifos_) {
      if (q.empty()) continue;
      uint64_t elems = 0;
      for (auto& pc : q) elems += pc.len;
      issue(IssueKind::Leftover, std::to_string(q.size()) + " pieces (" + std::to_string(elems) +
                                     " elements) left in FIFO rank " + std::to_string(k.src) + " -> rank " +
                                     std::to_string(k.dst) + " conn " + std::to_string(k.conn));
    }
  }

  void checkContent() {
    for (const Expect& e : p_.expect) {
      if (e.rank < 0 || e.rank >= n_ || e.bind >= views_[e.rank].size()) {
        issue(IssueKind::BadStep, "expectation names a buffer that does not exist");
        continue;
      }
      const View& v = views_[e.rank][e.bind].recv;
      if (e.recvOff + e.count > v.size) {
        issue(IssueKind::OutOfBounds, "expectation beyond the receive buffer");
        continue;
      }
      Sym want;
      want.init = true;
      want.bind = e.srcBind;
      want.ranks = e.from;
      if (e.reduced) {
        want.pre = e.from;
        want.post = 1;
      }
      // Region position x holds Send[x - base + srcShift].
      want.delta = e.srcShift - int64_t(v.base);
      v.region->forEach(v.base + e.recvOff, e.count, [&](uint64_t a, uint64_t b, const Sym& got) {
        if (got == want) return;
        issue(IssueKind::WrongContent, "rank " + std::to_string(e.rank) + " recv[" + std::to_string(a - v.base) + ".." +
                                           std::to_string(b - v.base) + ") bind " + std::to_string(e.bind) +
                                           ": got " + describeSym(got) + ", want " + describeSym(want));
      });
    }
  }

  struct BindViews {
    View send, recv;
  };

  const Problem& p_;
  int n_;
  uint64_t pieceElems_;
  Result res_;
  bool fatal_ = false;
  int shownPerKind_[16] = {};
  std::vector<std::unique_ptr<Region>> regions_;
  std::vector<std::unique_ptr<Region>> scratch_;
  std::vector<std::vector<BindViews>> views_;
  View scratchView_;
  std::vector<std::vector<Cursor>> cur_;
  std::unordered_map<FifoKey, std::deque<Piece>, FifoKeyHash> fifos_;
  std::unordered_map<FifoKey, uint64_t, FifoKeyHash> sendTotal_, recvTotal_;
};

}  // namespace

Result verify(const Problem& p) { return Simulator(p).run(); }

}  // namespace weft::verify
