// Plans: an algorithm's output, the executor's input.
//
// An algorithm never moves bytes. For one rank it emits a Plan: a few
// independent "channels", each an ordered list of Steps over element ranges of
// the user buffers. The executor of each buffer kind (host, CUDA) runs any
// plan; the plan verifier (tests/, tools/) runs every rank's plan
// symbolically and proves it right. Plans are O(steps), never O(elements).
//
// One generic Step covers the whole vocabulary of the design:
//   inputs : the data received from 0..2 peers (one FIFO slot at a time) and,
//            if src != None, a range of a local buffer (optionally pre-scaled);
//   result : the inputs reduced in a fixed order,
//            ((recv[0] OP recv[1]) OP pre(local)), or the single input copied;
//            optionally post-processed (kPostOp, e.g. divide by nranks for Avg);
//   outputs: a range of a local buffer (dst != None) and/or the FIFOs to
//            0..2 peers.
// The named constructors below (send, recv, recvReduceSend, ...) build the
// usual shapes. A step streams its `count` elements through the FIFOs in
// pieces of at most one slot, so step k+1 on the next rank starts as soon as
// the first piece of step k arrives: that is the pipelining.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transports/fifo.h"

namespace weft::plan {

// The FIFO geometry plans are built for (transports/fifo.h).
using weft::FifoGeometry;
using weft::pieceElems;

enum class Coll : uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, SendRecv, AllToAll };
// Display name ("AllReduce"); the rest of a collective's facts are in
// algorithms/collectives.h.
const char* collName(Coll c);

// Which buffer a step reads or writes. Send/Recv are the user's buffers of
// the call (for grouped point-to-point, those bound to the step's channel).
enum class Buf : uint8_t { None, Send, Recv, Scratch };

// The element format in the FIFOs when it differs from the buffers'. A plan
// with a narrow wire format is built for float32 buffers: every step that
// receives decodes the pieces to float32, reduces in float32, and every step
// that sends rounds its result to the wire format once (to nearest even).
// A step that both keeps and sends its result keeps the rounded value, so
// every rank ends with the same bits. Offsets and counts stay in elements.
enum class Wire : uint8_t { Native, Bf16, Fp16 };
// Bytes of one element in the FIFOs (elemSize for Native).
uint32_t wireElemSize(Wire w, uint32_t elemSize);
const char* wireName(Wire w);

// What a step does. Fifo: the generic step above. The other two run only
// between ranks of one host whose buffers every rank can address
// (registered buffers, algorithms/direct.h), and use no FIFO:
//   Direct : the destination range of rank dstRank's `dst` buffer becomes
//            in0 OP in1, where in0 is rank srcRank[0]'s `src` range (pre-
//            scaled under kPreOp), or the destination range itself when
//            srcRank[0] < 0 (accumulate); in1 is rank srcRank[1]'s `src`
//            range (pre-scaled under kPreOp), or nothing (in0 copied) when
//            srcRank[1] < 0. srcOff/dstOff/count as for Fifo steps.
//   Barrier: waits until every rank has reached the same barrier of the
//            call (the n-th Barrier step of each plan), so that no rank reads
//            a peer's input before it is there, or returns (and reuses its
//            buffers) while a peer still reads or writes them.
enum class StepKind : uint8_t { Fifo, Direct, Barrier };

enum StepFlags : uint8_t {
  kPreOp = 1,   // apply the op's pre-scaling (PreMulSum) to the local input
  kPostOp = 2,  // apply the op's finalisation (Avg: divide by nranks) to the result
};

struct Step {
  uint8_t nRecv = 0;          // 0..2 peers received from
  uint8_t nSend = 0;          // 0..2 peers sent to
  uint8_t flags = 0;          // StepFlags
  uint8_t conn = 0;           // connection index used with every peer of this step
  uint16_t bind = 0;          // which (send, recv) buffer pair Buf::Send/Recv mean:
                              // 0 for collectives; grouped point-to-point binds
                              // one pair per user call
  int32_t recvPeer[2] = {-1, -1};  // communicator ranks
  int32_t sendPeer[2] = {-1, -1};
  Buf src = Buf::None;        // local input
  Buf dst = Buf::None;        // local output
  uint64_t srcOff = 0;        // in elements
  uint64_t dstOff = 0;
  uint64_t count = 0;         // elements moved by this step
  StepKind kind = StepKind::Fifo;
  int32_t srcRank[2] = {-1, -1};  // Direct only (see StepKind)
  int32_t dstRank = -1;           // Direct only

  bool operator==(const Step&) const = default;
};

// Named shapes (offsets and counts in elements).
Step send(int peer, Buf src, uint64_t srcOff, uint64_t count, uint8_t flags = 0, uint8_t conn = 0);
Step recv(int peer, Buf dst, uint64_t dstOff, uint64_t count, uint8_t conn = 0);
// out -> next: in(prev) OP local
Step recvReduceSend(int prev, int next, Buf src, uint64_t srcOff, uint64_t count, uint8_t flags = 0,
                    uint8_t conn = 0);
// dst = in(prev) OP local
Step recvReduceCopy(int prev, Buf src, uint64_t srcOff, Buf dst, uint64_t dstOff, uint64_t count,
                    uint8_t flags = 0, uint8_t conn = 0);
// dst = in(prev) OP local, and forwarded to next
Step recvReduceCopySend(int prev, int next, Buf src, uint64_t srcOff, Buf dst, uint64_t dstOff,
                        uint64_t count, uint8_t flags = 0, uint8_t conn = 0);
// dst = in(prev), and forwarded to next (next may be -1: plain receive)
Step recvCopySend(int prev, int next, Buf dst, uint64_t dstOff, uint64_t count, uint8_t conn = 0);
// dst = post(pre(src)) locally
Step copy(Buf src, uint64_t srcOff, Buf dst, uint64_t dstOff, uint64_t count, uint8_t flags = 0);
// Direct: dst@dstRank = in(a) OP in(b) (StepKind); a < 0 accumulates, b < 0 copies.
Step direct(int a, int b, Buf src, uint64_t srcOff, int dstRank, Buf dst, uint64_t dstOff, uint64_t count,
            uint8_t flags = 0);
Step barrier();

struct ChannelPlan {
  std::vector<Step> steps;
};

struct Plan {
  Coll coll = Coll::AllReduce;
  int nranks = 1;
  int rank = 0;
  uint32_t elemSize = 4;
  uint64_t scratchElems = 0;  // scratch the executor must provide
  // Bytes of one piece (the pipelining slice): the geometry's slot size the
  // plan was built for, which may be smaller than the FIFOs' real slots
  // (the selector picks it per call). 0: a whole FIFO slot.
  uint64_t sliceBytes = 0;
  // The FIFOs' element format (see Wire); elemSize stays the buffers'.
  Wire wire = Wire::Native;
  // Pieces cross the FIFOs as LL lines (device executor only: DevProto in
  // src/exec/cuda/device_layout.h); sliceBytes is then half a slot at most.
  bool deviceLl = false;
  std::vector<ChannelPlan> channels;

  size_t stepCount() const;
};

// Human-readable dump of a plan (tools and failing tests print it).
std::string describe(const Plan& p);
std::string describe(const Step& s);

}  // namespace weft::plan
