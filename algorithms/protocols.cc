#include "algorithms/protocols.h"

#include <cctype>
#include <vector>

#include "algorithms/one_shot.h"
#include "src/util/error.h"

namespace weft::algo {
namespace {

// Every algorithm's plan runs on FIFO slots, the one-shot one too (its
// estimate there is its own: one_shot.h); ll carries the one-shot
// algorithm alone.
bool lowLatencyCarries(plan::Coll, AlgoId a) { return isOneShot(a); }
double simpleAdjustUs(plan::Coll c, AlgoId a, const CostInputs& in, double us) {
  return isOneShot(a) ? oneShotFifoUs(c, in, us) : us;
}
bool simpleCarries(plan::Coll, AlgoId a, const CostInputs& in) {
  return !isOneShot(a) || in.nranks <= kOneShotFifoMaxRanks;
}

// On device buffers ll is the interpreter's LL (src/exec/cuda/device_ll.cuh):
// every algorithm's FIFO plan, on one host only, where FIFOs are GPU
// memory or mapped host memory that the GPU polls itself (no proxy thread
// that would have to wait for a posted counter).
bool lowLatencyOnDevice(plan::Coll, AlgoId a, const CostInputs& in) { return !isOneShot(a) && in.nHosts == 1; }
// Device LL against simple: a hop no longer waits for a fence and a
// counter (half of the hop latency, assumed), but a line carries 4 data
// bytes in 8, so the bytes cost twice. Not measured on a GPU.
double lowLatencyAdjustUs(plan::Coll c, AlgoId a, const CostInputs& in, double us) {
  if (!in.deviceBuffers) return us;
  return us + bytesTermUs(c, a, in) - 0.5 * latencyTermUs(c, a, in);
}

std::vector<ProtoInfo>& table() {
  static std::vector<ProtoInfo> t = [] {
    std::vector<ProtoInfo> v;
    v.reserve(kMaxProtos);
    v.push_back(ProtoInfo{"simple", nullptr, simpleAdjustUs, simpleCarries});
    v.push_back(ProtoInfo{"ll", lowLatencyCarries, lowLatencyAdjustUs, nullptr, lowLatencyOnDevice});
    return v;
  }();
  return t;
}

// Protocols NCCL users name in NCCL_PROTO that weft does not have.
bool knownElsewhere(const std::string& name) { return name == "ll128"; }

}  // namespace

int protoCount() { return static_cast<int>(table().size()); }

const ProtoInfo& protoInfo(ProtoId p) { return table().at(size_t(index(p))); }

const char* protoName(ProtoId p) { return index(p) < protoCount() ? protoInfo(p).name.c_str() : "?"; }

bool protoSupports(ProtoId p, plan::Coll c, AlgoId a) {
  if (index(p) >= protoCount()) return false;
  const ProtoInfo& info = protoInfo(p);
  return !info.supports || info.supports(c, a);
}

bool protoCarries(ProtoId p, plan::Coll c, AlgoId a, const CostInputs& in) {
  if (index(p) >= protoCount()) return false;
  const ProtoInfo& info = protoInfo(p);
  if (in.deviceBuffers && info.onDevice) return info.onDevice(c, a, in);
  return protoSupports(p, c, a) && (!info.carries || info.carries(c, a, in));
}

std::optional<ProtoId> findProto(std::string_view name) {
  for (int i = 0; i < protoCount(); i++) {
    const std::string& n = table()[size_t(i)].name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t k = 0; k < n.size(); k++)
      same &= n[k] == std::tolower(static_cast<unsigned char>(name[k]));
    if (same) return ProtoId(i);
  }
  return std::nullopt;
}

ProtoId registerProto(ProtoInfo info) {
  if (info.name.empty()) raise(weftInvalidArgument, "registerProto: a protocol needs a name");
  if (findProto(info.name)) raise(weftInvalidArgument, "registerProto: '%s' is registered already", info.name.c_str());
  std::vector<ProtoInfo>& t = table();
  if (t.size() >= size_t(kMaxProtos))
    raise(weftInvalidArgument, "registerProto: '%s': at most %d protocols", info.name.c_str(), kMaxProtos);
  t.push_back(std::move(info));
  return ProtoId(t.size() - 1);
}

double protoEstimateUs(plan::Coll c, AlgoId a, ProtoId p, const CostInputs& in) {
  const double us = estimateUs(c, a, in);
  const ProtoInfo& info = protoInfo(p);
  return info.adjustUs ? info.adjustUs(c, a, in, us) : us;
}

ProtoFilter parseProtoFilter(const std::string& spec) {
  auto lookup = [](const std::string& name) {
    if (auto p = findProto(name)) return index(*p);
    return knownElsewhere(name) ? kNameNotHere : kUnknownName;
  };
  SelectionList list = parseSelectionList(spec, "WEFT_PROTO", "protocol", protoCount(), lookup);
  ProtoFilter f;
  for (int c = 0; c < plan::kNumColls; c++) {
    if (list.allowed[c].none()) {
      std::string have;
      for (int p = 0; p < protoCount(); p++) have += (p ? ", " : "") + protoInfo(ProtoId(p)).name;
      raise(weftInvalidArgument, "WEFT_PROTO=%s leaves %s no protocol (this build has: %s)", spec.c_str(),
            plan::collName(plan::Coll(c)), have.c_str());
    }
    f.allowed[c] = list.allowed[c];
  }
  return f;
}

}  // namespace weft::algo
