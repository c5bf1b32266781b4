#include "collective_check.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "reference.h"

namespace weft::test {
namespace {

thread_local uint64_t tlsDigest = 0;

constexpr unsigned char kPoison = 0xA5;

void preMulScalar(weftDataType_t t, int rank, unsigned char out[8], double* asDouble, uint64_t* asBits) {
  bool two = rank % 2 == 0;
  memset(out, 0, 8);
  switch (t) {
    case weftFloat16: { uint16_t v = two ? 0x4000 : 0x3800; memcpy(out, &v, 2); break; }
    case weftBfloat16: { uint16_t v = two ? 0x4000 : 0x3F00; memcpy(out, &v, 2); break; }
    case weftFloat8e4m3: out[0] = two ? 0x40 : 0x30; break;
    case weftFloat8e5m2: out[0] = two ? 0x40 : 0x38; break;
    case weftFloat32: { float v = two ? 2.0f : 0.5f; memcpy(out, &v, 4); break; }
    case weftFloat64: { double v = two ? 2.0 : 0.5; memcpy(out, &v, 8); break; }
    default: { uint64_t v = two ? 3 : 5; memcpy(out, &v, typeBytes(t)); break; }
  }
  *asDouble = two ? 2.0 : 0.5;
  *asBits = two ? 3 : 5;
}

size_t sendElems(const Scenario& s, int n) {
  switch (s.coll) {
    case CollKind::ReduceScatter: case CollKind::AllToAll: return s.count * n;
    default: return s.count;
  }
}

size_t recvElems(const Scenario& s, int n) {
  switch (s.coll) {
    case CollKind::AllGather: case CollKind::AllToAll: return s.count * n;
    default: return s.count;
  }
}

std::vector<unsigned char> inputOf(const Scenario& s, int rank, int n) {
  SplitMix rng(s.seed * 1000003 + rank);
  std::vector<unsigned char> buf(sendElems(s, n) * typeBytes(s.type));
  // Products of n values must stay finite in the narrow types.
  if (s.op == weftProd) fillRandom(buf.data(), sendElems(s, n), s.type, rng, 0.5, 2.0);
  else fillRandom(buf.data(), sendElems(s, n), s.type, rng);
  return buf;
}


// A weftMemAlloc copy of a test buffer, registered with comm while it lives.
class RegisteredCopy {
 public:
  RegisteredCopy(weftComm_t comm, const std::vector<unsigned char>& from, bool on) : comm_(comm) {
    if (!on) return;
    bytes_ = std::max<size_t>(from.size(), 1);
    if (weftMemAlloc(&mem_, bytes_) != weftSuccess) return;
    if (!from.empty()) memcpy(mem_, from.data(), from.size());
    if (weftCommRegister(comm, mem_, bytes_, &handle_) != weftSuccess) handle_ = nullptr;
  }
  ~RegisteredCopy() {
    if (handle_) weftCommDeregister(comm_, handle_);
    if (mem_) weftMemFree(mem_);
  }
  RegisteredCopy(const RegisteredCopy&) = delete;
  RegisteredCopy& operator=(const RegisteredCopy&) = delete;
  bool ok() const { return handle_ != nullptr; }
  unsigned char* data() const { return static_cast<unsigned char*>(mem_); }
  void copyBack(std::vector<unsigned char>& to) const {
    if (mem_ && !to.empty()) memcpy(to.data(), mem_, to.size());
  }

 private:
  weftComm_t comm_;
  void* mem_ = nullptr;
  void* handle_ = nullptr;
  size_t bytes_ = 0;
};

// p (inside sendBuf or recvBuf) as the same place in the registered copies.
const void* rebase(const void* p, const std::vector<unsigned char>& sendBuf, const RegisteredCopy& regSend,
                   const std::vector<unsigned char>& recvBuf, const RegisteredCopy& regRecv) {
  const auto* c = static_cast<const unsigned char*>(p);
  if (!recvBuf.empty() && c >= recvBuf.data() && c <= recvBuf.data() + recvBuf.size())
    return regRecv.data() + (c - recvBuf.data());
  if (!sendBuf.empty() && c >= sendBuf.data() && c <= sendBuf.data() + sendBuf.size())
    return regSend.data() + (c - sendBuf.data());
  return p;
}

weftResult_t callCollective(weftComm_t comm, int rank, int n, const Scenario& s, const void* send, void* recv,
                            weftRedOp_t op);
std::string checkOutput(const Scenario& s, int rank, int n, const Inputs& inputs,
                        const std::vector<unsigned char>& recvBuf, const void* recv, const std::vector<double>& scaleD,
                        const std::vector<uint64_t>& scaleB);

}  // namespace

Inputs makeInputs(const Scenario& s, int n) {
  Inputs in(n);
  for (int r = 0; r < n; r++) in[r] = inputOf(s, r, n);
  return in;
}

const char* collKindName(CollKind c) {
  switch (c) {
    case CollKind::AllReduce: return "AllReduce";
    case CollKind::ReduceScatter: return "ReduceScatter";
    case CollKind::AllGather: return "AllGather";
    case CollKind::Broadcast: return "Broadcast";
    case CollKind::Reduce: return "Reduce";
    case CollKind::AllToAll: return "AllToAll";
    case CollKind::SendRecv: return "SendRecv";
  }
  return "?";
}

std::string Scenario::describe() const {
  std::ostringstream o;
  o << collKindName(coll) << " type " << int(type) << " op " << (op == kPreMulSum ? std::string("premulsum")
                                                                                   : std::to_string(int(op)))
    << (inPlace ? " in-place" : " out-of-place") << " count " << count << " root " << root << " seed " << seed;
  return o.str();
}

uint64_t lastOutputDigest() { return tlsDigest; }

std::string runAndCheck(weftComm_t comm, int rank, int n, const Scenario& s, const Inputs* shared) {
  const size_t es = typeBytes(s.type);
  Inputs own;
  if (!shared) own = makeInputs(s, n);
  const Inputs& inputs = shared ? *shared : own;

  // Buffers: out-of-place uses separate send/recv; in-place puts the input
  // where the API expects it inside the receive buffer. std::copy, not
  // memcpy: with count 0 the input is empty and its data() may be null.
  std::vector<unsigned char> sendBuf = inputs[rank];
  std::vector<unsigned char> recvBuf(recvElems(s, n) * es + 64, kPoison);
  const void* send = sendBuf.data();
  void* recv = recvBuf.data();
  if (s.inPlace) {
    switch (s.coll) {
      case CollKind::ReduceScatter:
        recvBuf.assign(sendBuf.size() + 64, kPoison);
        std::copy(sendBuf.begin(), sendBuf.end(), recvBuf.begin());
        send = recvBuf.data();
        recv = recvBuf.data() + size_t(rank) * s.count * es;
        break;
      case CollKind::AllGather:
        std::copy(sendBuf.begin(), sendBuf.end(), recvBuf.begin() + std::ptrdiff_t(size_t(rank) * s.count * es));
        recv = recvBuf.data();
        send = recvBuf.data() + size_t(rank) * s.count * es;
        break;
      default:
        std::copy(sendBuf.begin(), sendBuf.end(), recvBuf.begin());
        send = recvBuf.data();
        recv = recvBuf.data();
        break;
    }
  }

  // Registered: the call runs on weftMemAlloc copies of the same buffers,
  // and the receive buffer is copied back for the checks below.
  RegisteredCopy regSend(comm, sendBuf, s.registered), regRecv(comm, recvBuf, s.registered);
  const void* callSend = s.registered ? rebase(send, sendBuf, regSend, recvBuf, regRecv) : send;
  void* callRecv = s.registered ? const_cast<void*>(rebase(recv, sendBuf, regSend, recvBuf, regRecv)) : recv;
  if (s.registered && (!regSend.ok() || !regRecv.ok())) return s.describe() + ": weftMemAlloc/weftCommRegister failed";

  weftRedOp_t op = s.op;
  unsigned char scalar[8];
  std::vector<double> scaleD(n);
  std::vector<uint64_t> scaleB(n);
  for (int r = 0; r < n; r++) preMulScalar(s.type, r, scalar, &scaleD[r], &scaleB[r]);
  if (s.op == kPreMulSum) {
    preMulScalar(s.type, rank, scalar, &scaleD[rank], &scaleB[rank]);
    weftResult_t rc = weftRedOpCreatePreMulSum(&op, scalar, s.type, weftScalarHostImmediate, comm);
    if (rc != weftSuccess) return std::string("weftRedOpCreatePreMulSum: ") + weftGetErrorString(rc);
  }

  weftResult_t rc = callCollective(comm, rank, n, s, callSend, callRecv, op);
  if (rc == weftSuccess && s.stream) rc = weftHostStreamSynchronize(s.stream);
  if (s.registered) regRecv.copyBack(recvBuf);
  if (s.op == kPreMulSum) weftRedOpDestroy(op, comm);
  if (rc != weftSuccess)
    return s.describe() + ": returned " + weftGetErrorString(rc) + " (" + weftGetLastError(comm) + ")";
  return checkOutput(s, rank, n, inputs, recvBuf, recv, scaleD, scaleB);
}

namespace {

weftResult_t callCollective(weftComm_t comm, int rank, int n, const Scenario& s, const void* send, void* recv,
                            weftRedOp_t op) {
  weftResult_t rc = weftSuccess;
  switch (s.coll) {
    case CollKind::AllReduce: rc = weftAllReduce(send, recv, s.count, s.type, op, comm, s.stream); break;
    case CollKind::ReduceScatter: rc = weftReduceScatter(send, recv, s.count, s.type, op, comm, s.stream); break;
    case CollKind::AllGather: rc = weftAllGather(send, recv, s.count, s.type, comm, s.stream); break;
    case CollKind::Broadcast: rc = weftBroadcast(send, recv, s.count, s.type, s.root, comm, s.stream); break;
    case CollKind::Reduce: rc = weftReduce(send, recv, s.count, s.type, op, s.root, comm, s.stream); break;
    case CollKind::AllToAll: rc = weftAlltoAll(send, recv, s.count, s.type, comm, s.stream); break;
    case CollKind::SendRecv:
      weftGroupStart();
      weftSend(send, s.count, s.type, (rank + 1) % n, comm, s.stream);
      weftRecv(recv, s.count, s.type, (rank + n - 1) % n, comm, s.stream);
      rc = weftGroupEnd();
      break;
  }
  return rc;
}

std::string checkOutput(const Scenario& s, int rank, int n, const Inputs& inputs,
                        const std::vector<unsigned char>& recvBuf, const void* recv, const std::vector<double>& scaleD,
                        const std::vector<uint64_t>& scaleB) {
  const size_t es = typeBytes(s.type);

  // Expected output of this rank: for each output element, which input
  // elements (rank, index) it reduces or copies.
  std::ostringstream errors;
  int nErrors = 0;
  const unsigned char* out = static_cast<const unsigned char*>(recv);
  uint64_t digest = 1469598103934665603ull;
  auto check = [&](size_t i, const std::vector<std::pair<int, size_t>>& from, bool reduce) {
    const unsigned char* got = out + i * es;
    for (size_t b = 0; b < es; b++) digest = (digest ^ got[b]) * 1099511628211ull;
    if (!reduce) {
      if (memcmp(got, inputs[from[0].first].data() + from[0].second * es, es) != 0 && nErrors++ < 5)
        errors << "  element " << i << ": want a copy of rank " << from[0].first << "[" << from[0].second << "]\n";
    } else if (isFloat(s.type)) {
      thread_local std::vector<double> x;
      x.clear();
      for (auto [r, k] : from) x.push_back(valueAt(inputs[r].data(), k, s.type));
      FloatRef ref = reduceFloat(x, scaleD, s.op, s.type);
      double v = valueAt(out, i, s.type);
      if (!(std::fabs(v - ref.value) <= ref.tol) && nErrors++ < 5)
        errors << "  element " << i << ": want " << ref.value << " +- " << ref.tol << ", got " << v << "\n";
    } else {
      thread_local std::vector<uint64_t> x;
      x.clear();
      for (auto [r, k] : from) x.push_back(bitsAt(inputs[r].data(), k, es));
      uint64_t ref = reduceBits(x, scaleB, s.op, s.type);
      uint64_t v = bitsAt(out, i, es);
      if (v != ref && nErrors++ < 5) errors << "  element " << i << ": want " << ref << ", got " << v << "\n";
    }
  };
  std::vector<std::pair<int, size_t>> from;
  switch (s.coll) {
    case CollKind::AllReduce:
      for (size_t i = 0; i < s.count; i++) {
        from.clear();
        for (int r = 0; r < n; r++) from.push_back({r, i});
        check(i, from, true);
      }
      break;
    case CollKind::Reduce:
      if (rank == s.root) {
        for (size_t i = 0; i < s.count; i++) {
          from.clear();
          for (int r = 0; r < n; r++) from.push_back({r, i});
          check(i, from, true);
        }
      } else if (!s.inPlace) {
        for (size_t b = 0; b < s.count * es; b++)
          if (out[b] != kPoison && nErrors++ < 5) errors << "  non-root recv byte " << b << " was written\n";
      }
      break;
    case CollKind::ReduceScatter:
      for (size_t i = 0; i < s.count; i++) {
        from.clear();
        for (int r = 0; r < n; r++) from.push_back({r, rank * s.count + i});
        check(i, from, true);
      }
      break;
    case CollKind::AllGather:
      for (int r = 0; r < n; r++)
        for (size_t i = 0; i < s.count; i++) { from.assign(1, {r, i}); check(r * s.count + i, from, false); }
      break;
    case CollKind::Broadcast:
      for (size_t i = 0; i < s.count; i++) { from.assign(1, {s.root, i}); check(i, from, false); }
      break;
    case CollKind::AllToAll:
      for (int r = 0; r < n; r++)
        for (size_t i = 0; i < s.count; i++) { from.assign(1, {r, rank * s.count + i}); check(r * s.count + i, from, false); }
      break;
    case CollKind::SendRecv:
      for (size_t i = 0; i < s.count; i++) { from.assign(1, {(rank + n - 1) % n, i}); check(i, from, false); }
      break;
  }
  // Nothing past the output may be touched.
  size_t outBytes = recvElems(s, n) * es;
  if (!s.inPlace)
    for (size_t b = outBytes; b < outBytes + 64; b++)
      if (recvBuf[b] != kPoison && nErrors++ < 5) errors << "  byte " << b << " past the output was written\n";
  tlsDigest = digest;
  if (nErrors == 0) return "";
  return s.describe() + " rank " + std::to_string(rank) + "/" + std::to_string(n) + ": " +
         std::to_string(nErrors) + " wrong\n" + errors.str();
}

}  // namespace
}  // namespace weft::test
