// The plan verifier: runs every rank's plan of one call together,
// symbolically, without transports, and proves it right or says what is wrong.
//
// Every element of every rank's Send buffer is a symbol (rank, bind, index).
// A value is the set of ranks whose symbols were reduced into it, all at one
// index, plus how often the pre- and post-operations were applied; memory and
// FIFO pieces hold runs of such values over element intervals, so the cost
// grows with the number of steps and pieces, not with the element count.
// FIFOs have the plan's capacity (nSlots pieces); ranks and channels take
// turns moving one piece at a time, any order a real run could take.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/p2p.h"
#include "algorithms/plan.h"

namespace weft::verify {

constexpr int kMaxRanks = 512;
using RankSet = std::bitset<kMaxRanks>;

enum class IssueKind : uint8_t {
  BadStep,        // malformed step: peer out of range or self, no input, bad bind
  OutOfBounds,    // a step's range leaves its buffer
  FifoShared,     // a directed (peer, conn) FIFO used by two channels of a rank
  SizeMismatch,   // a received piece is not the size the receiving step expects
  NoSender,       // a rank waits for data its peer never sends on that FIFO
  Deadlock,       // no rank can progress while some are unfinished
  Leftover,       // data left in a FIFO when every plan has finished
  Uninitialised,  // a step reads Recv/Scratch that nothing wrote
  WrongContent,   // an output element is not exactly what the collective means
};
const char* issueName(IssueKind k);

struct Issue {
  IssueKind kind;
  std::string text;
};

struct Result {
  bool ok = true;
  std::vector<Issue> issues;
  uint64_t piecesMoved = 0;

  bool has(IssueKind k) const;
  std::string text() const;  // one issue per line
};

// The user buffers of one (rank, bind). When aliased, Send and Recv are two
// windows of one allocation (an in-place call), at sendBase and recvBase.
struct BufferLayout {
  uint64_t sendElems = 0;
  uint64_t recvElems = 0;
  bool aliased = false;
  uint64_t sendBase = 0;
  uint64_t recvBase = 0;
};

// What Recv[recvOff, recvOff+count) of (rank, bind) must hold at the end:
// element recvOff+i is built from Send[recvOff+i+srcShift] of bind srcBind of
// every rank in `from`, each exactly once; when `reduced`, pre-processed once
// each and post-processed once, otherwise copied untouched.
struct Expect {
  int rank = 0;
  uint16_t bind = 0;
  uint64_t recvOff = 0;
  uint64_t count = 0;
  RankSet from;
  uint16_t srcBind = 0;
  int64_t srcShift = 0;
  bool reduced = false;
};

struct Problem {
  std::vector<plan::Plan> plans;                   // index = rank
  plan::FifoGeometry geometry;
  std::vector<std::vector<BufferLayout>> buffers;  // [rank][bind]
  std::vector<Expect> expect;
};

// Buffers and expectations of a collective (NCCL's count meaning, see
// CollArgs); `plans` is left for the caller to fill.
Problem collectiveProblem(plan::Coll coll, int nranks, uint64_t count, int root, bool inPlace,
                          const plan::FifoGeometry& g);

// Buffers and expectations of a grouped point-to-point batch, ops[rank] in
// user order; the k-th send from q to r feeds the k-th receive at r from q.
Problem p2pProblem(const std::vector<std::vector<algo::P2POp>>& ops, const plan::FifoGeometry& g);

Result verify(const Problem& p);

// Builds every rank's plan of the call `a` (a.rank is ignored) with `build`
// and verifies them: what weft-plan-verify and the registry tests run.
// The plans are left in *plans when given.
Result verifyBuilder(plan::Plan (*build)(const algo::CollArgs&), const algo::CollArgs& a, bool inPlace,
                     std::vector<plan::Plan>* plans = nullptr);

}  // namespace weft::verify
