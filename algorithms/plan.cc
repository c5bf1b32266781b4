#include "plan.h"

#include <sstream>

namespace weft::plan {

uint32_t wireElemSize(Wire w, uint32_t elemSize) { return w == Wire::Native ? elemSize : 2; }

const char* wireName(Wire w) {
  switch (w) {
    case Wire::Bf16: return "bf16";
    case Wire::Fp16: return "fp16";
    case Wire::Native: break;
  }
  return "native";
}

Step send(int peer, Buf src, uint64_t srcOff, uint64_t count, uint8_t flags, uint8_t conn) {
  Step s;
  s.nSend = 1;
  s.sendPeer[0] = peer;
  s.src = src;
  s.srcOff = srcOff;
  s.count = count;
  s.flags = flags;
  s.conn = conn;
  return s;
}

Step recv(int peer, Buf dst, uint64_t dstOff, uint64_t count, uint8_t conn) {
  Step s;
  s.nRecv = 1;
  s.recvPeer[0] = peer;
  s.dst = dst;
  s.dstOff = dstOff;
  s.count = count;
  s.conn = conn;
  return s;
}

Step recvReduceSend(int prev, int next, Buf src, uint64_t srcOff, uint64_t count, uint8_t flags, uint8_t conn) {
  Step s = send(next, src, srcOff, count, flags, conn);
  s.nRecv = 1;
  s.recvPeer[0] = prev;
  return s;
}

Step recvReduceCopy(int prev, Buf src, uint64_t srcOff, Buf dst, uint64_t dstOff, uint64_t count, uint8_t flags,
                    uint8_t conn) {
  Step s = recv(prev, dst, dstOff, count, conn);
  s.src = src;
  s.srcOff = srcOff;
  s.flags = flags;
  return s;
}

Step recvReduceCopySend(int prev, int next, Buf src, uint64_t srcOff, Buf dst, uint64_t dstOff, uint64_t count,
                        uint8_t flags, uint8_t conn) {
  Step s = recvReduceCopy(prev, src, srcOff, dst, dstOff, count, flags, conn);
  s.nSend = 1;
  s.sendPeer[0] = next;
  return s;
}

Step recvCopySend(int prev, int next, Buf dst, uint64_t dstOff, uint64_t count, uint8_t conn) {
  Step s = recv(prev, dst, dstOff, count, conn);
  if (next >= 0) {
    s.nSend = 1;
    s.sendPeer[0] = next;
  }
  return s;
}

Step copy(Buf src, uint64_t srcOff, Buf dst, uint64_t dstOff, uint64_t count, uint8_t flags) {
  Step s;
  s.src = src;
  s.srcOff = srcOff;
  s.dst = dst;
  s.dstOff = dstOff;
  s.count = count;
  s.flags = flags;
  return s;
}

Step direct(int a, int b, Buf src, uint64_t srcOff, int dstRank, Buf dst, uint64_t dstOff, uint64_t count,
            uint8_t flags) {
  Step s = copy(src, srcOff, dst, dstOff, count, flags);
  s.kind = StepKind::Direct;
  s.srcRank[0] = a;
  s.srcRank[1] = b;
  s.dstRank = dstRank;
  return s;
}

Step barrier() {
  Step s;
  s.kind = StepKind::Barrier;
  return s;
}

size_t Plan::stepCount() const {
  size_t n = 0;
  for (const auto& c : channels) n += c.steps.size();
  return n;
}

static const char* bufName(Buf b) {
  switch (b) {
    case Buf::None: return "-";
    case Buf::Send: return "send";
    case Buf::Recv: return "recv";
    case Buf::Scratch: return "scratch";
  }
  return "?";
}

std::string describe(const Step& s) {
  std::ostringstream o;
  if (s.kind == StepKind::Barrier) return "barrier";
  if (s.kind == StepKind::Direct) {
    o << "direct " << bufName(s.dst) << "@" << s.dstRank << "+" << s.dstOff << " = ";
    if (s.srcRank[0] < 0) o << "itself";
    else o << bufName(s.src) << "@" << s.srcRank[0] << "+" << s.srcOff;
    if (s.srcRank[1] >= 0) o << " op " << bufName(s.src) << "@" << s.srcRank[1] << "+" << s.srcOff;
    o << " count=" << s.count;
    if (s.flags & kPreOp) o << " pre";
    if (s.flags & kPostOp) o << " post";
    return o.str();
  }
  o << "recv{";
  for (int i = 0; i < s.nRecv; i++) o << (i ? "," : "") << s.recvPeer[i];
  o << "} src=" << bufName(s.src) << "+" << s.srcOff << " -> dst=" << bufName(s.dst) << "+" << s.dstOff
    << " send{";
  for (int i = 0; i < s.nSend; i++) o << (i ? "," : "") << s.sendPeer[i];
  o << "} count=" << s.count << " conn=" << int(s.conn);
  if (s.flags & kPreOp) o << " pre";
  if (s.flags & kPostOp) o << " post";
  return o.str();
}

std::string describe(const Plan& p) {
  std::ostringstream o;
  o << collName(p.coll) << " rank " << p.rank << "/" << p.nranks << " elem " << p.elemSize << "B scratch "
    << p.scratchElems << "\n";
  for (size_t c = 0; c < p.channels.size(); c++) {
    o << " channel " << c << ":\n";
    for (const auto& s : p.channels[c].steps) o << "  " << describe(s) << "\n";
  }
  return o.str();
}

}  // namespace weft::plan
