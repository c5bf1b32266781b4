#include "src/exec/host/step_trace.h"

#include <vector>

#include "src/util/trace_buffer.h"

namespace weft {
namespace {

// The step's shape in the words of plan.h's named constructors.
const char* stepName(const plan::Step& st) {
  const bool local = st.src != plan::Buf::None;
  const bool dst = st.dst != plan::Buf::None;
  if (!st.nRecv) return st.nSend ? "send" : "copy";
  if (!st.nSend) return local ? "recvReduceCopy" : "recv";
  if (!local) return dst ? "recvCopySend" : "recvSend";
  return dst ? "recvReduceCopySend" : "recvReduceSend";
}

}  // namespace

std::span<StepClock> stepClocks(size_t n) {
  thread_local std::vector<StepClock> pool;
  if (pool.size() < n) pool.resize(n);
  for (size_t i = 0; i < n; i++) pool[i] = StepClock{};
  return {pool.data(), n};
}

void traceStep(TraceBuffer& trace, int rank, int commSlot, int channel, uint32_t index, const plan::Step& st,
               uint32_t elemSize, const StepClock& clock, int64_t endNs) {
  trace.record([&](TraceEvent& e) {
    e.kind = TraceEvent::Step;
    e.commSlot = int8_t(commSlot);
    e.pid = rank;
    e.tid = 1 + channel;
    e.index = index;
    e.startNs = clock.startNs;
    e.durNs = endNs - clock.startNs;
    e.name = stepName(st);
    e.count = st.count;
    e.bytes = st.count * elemSize;
    e.nRecv = st.nRecv;
    e.nSend = st.nSend;
    for (int i = 0; i < 2; i++) {
      e.peer[i] = int16_t(st.recvPeer[i]);
      e.peer[2 + i] = int16_t(st.sendPeer[i]);
    }
    for (int i = 0; i < 4; i++) e.waitNs[i] = clock.waitNs[i];
    e.moveNs = clock.moveNs;
  });
}

}  // namespace weft
