#include "algorithms/verify.h"
#include "algorithms/verify_region.h"

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

using namespace detail;

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
          const int srcR = directRank(s, r, true), dstR = directRank(s, r, false);
          if (srcR < 0 || srcR >= n_ || dstR < 0 || dstR >= n_) {
            bad(IssueKind::BadStep, "direct step names no valid rank");
            continue;
          }
          for (int io = 0; io < 2; io++) {
            Buf b = io == 0 ? s.src : s.dst;
            uint64_t off = io == 0 ? s.srcOff : s.dstOff;
            if (b == Buf::None) continue;
            const View* v = view(io == 0 ? srcR : dstR, b, s.bind);
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
    if (s.kind == plan::StepKind::Barrier && !barrierOpen(r)) return "waits at barrier " + std::to_string(passed_[r]);
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

  // The rank whose source (or destination) buffer a step uses: r itself
  // for FIFO steps; a Direct step names it (-1 when it names none).
  static int directRank(const Step& s, int r, bool source) {
    if (s.kind != plan::StepKind::Direct) return r;
    if (!source) return s.dstRank;
    return s.srcRank[0] >= 0 ? s.srcRank[0] : s.srcRank[1];
  }

  // Rank r, at its next barrier, may pass once every rank has reached it.
  bool barrierOpen(int r) {
    const uint64_t b = passed_[r];
    if (arrived_.size() <= b) arrived_.resize(b + 1);
    if (!at_[r]) {
      at_[r] = true;
      arrived_[b]++;
    }
    return arrived_[b] >= uint64_t(n_);
  }

  Runs readDirect(int rank, Buf b, uint16_t bind, uint64_t off, uint64_t len, bool pre, const std::string& at) {
    const View* v = view(rank, b, bind);
    Runs runs = v->region->read(v->base + off, len);
    for (auto& run : runs) {
      if (!run.sym.init) {
        issue(IssueKind::Uninitialised, at + ": reads a buffer of rank " + std::to_string(rank) + " nothing wrote");
        break;
      }
      if (!pre) continue;
      if (run.sym.pre.any()) run.sym.bad |= kPreTwice;
      run.sym.pre = run.sym.ranks;
    }
    return runs;
  }

  // A Direct step moves its whole range at once: it reads peers' buffers
  // as they stand, which the plan's barriers make safe.
  void runDirect(int r, size_t c, const Step& s) {
    const std::string at = where(r, c, cur_[r][c].step, s);
    const bool pre = s.flags & plan::kPreOp;
    Runs acc = s.srcRank[0] >= 0 ? readDirect(s.srcRank[0], s.src, s.bind, s.srcOff, s.count, pre, at)
                                 : readDirect(s.dstRank, s.dst, s.bind, s.dstOff, s.count, false, at);
    if (s.srcRank[1] >= 0) acc = combine(acc, readDirect(s.srcRank[1], s.src, s.bind, s.srcOff, s.count, pre, at));
    if (s.flags & plan::kPostOp)
      for (auto& run : acc) {
        if (run.sym.post) run.sym.bad |= kPostTwice;
        run.sym.post = 1;
      }
    const View* v = view(s.dstRank, s.dst, s.bind);
    v->region->write(v->base + s.dstOff, acc);
    res_.piecesMoved++;
  }

  // Moves one piece of (rank, channel) if it can; false when blocked or done.
  bool advance(int r, size_t c) {
    const auto& steps = p_.plans[r].channels[c].steps;
    Cursor& cu = cur_[r][c];
    if (cu.step >= steps.size()) return false;
    const Step& s = steps[cu.step];
    if (s.kind == plan::StepKind::Barrier) {
      if (!barrierOpen(r)) return false;
      at_[r] = false;
      passed_[r]++;
      cu.step++;
      return true;
    }
    if (s.count == 0) {
      cu.step++;
      return true;
    }
    if (s.kind == plan::StepKind::Direct) {
      runDirect(r, c, s);
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
    passed_.assign(size_t(n_), 0);
    at_.assign(size_t(n_), false);
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
  std::vector<uint64_t> passed_, arrived_;  // barriers: passed per rank, arrivals per barrier
  std::vector<bool> at_;                    // rank counted at its next barrier
  std::unordered_map<FifoKey, std::deque<Piece>, FifoKeyHash> fifos_;
  std::unordered_map<FifoKey, uint64_t, FifoKeyHash> sendTotal_, recvTotal_;
};

}  // namespace

Result verify(const Problem& p) { return Simulator(p).run(); }

}  // namespace weft::verify
