// The protocol registry: how a plan's pieces cross a FIFO (the wire format
// and its synchronisation). A call is run as (algorithm, protocol, channels,
// slice); the selector chooses the protocol with the algorithm. Two today:
// "simple" (a piece is published by a flag after its data, in FIFO slots;
// every algorithm, oneshot on 2 ranks: one_shot.h) and "ll" (low latency).
// On host buffers ll is one-shot only: each 64-byte line carries 56 bytes
// of data and the call's sequence number, in a shared memory region per
// communicator, on one host (src/exec/host/ll_protocol.h). On device
// buffers (ProtoInfo::onDevice) ll carries every FIFO algorithm's plan on
// one host: 8-byte lines of 4 data bytes and a flag in the FIFO slots,
// polled by the reader (src/exec/cuda/device_ll.cuh). A new protocol is one
// entry here plus its support in the executors.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "algorithms/cost_model.h"
#include "algorithms/plan.h"
#include "algorithms/selection_list.h"

namespace weft::algo {

enum class ProtoId : uint8_t {};
inline constexpr ProtoId kSimple{0};
inline constexpr ProtoId kLowLatency{1};  // "ll"
constexpr int kMaxProtos = 8;
constexpr int index(ProtoId p) { return static_cast<int>(p); }

struct ProtoInfo {
  std::string name;  // lower case, as WEFT_PROTO names it
  // Whether it can carry this algorithm's plans of this collective; no
  // function: every one.
  bool (*supports)(plan::Coll c, AlgoId a) = nullptr;
  // The algorithm's estimate under this protocol; no function: unchanged.
  double (*adjustUs)(plan::Coll c, AlgoId a, const CostInputs& in, double us) = nullptr;
  // Whether it can carry the call on this layout (the selector skips the
  // pair otherwise, even where WEFT_ALGO forces the algorithm); no
  // function: wherever `supports` says.
  bool (*carries)(plan::Coll c, AlgoId a, const CostInputs& in) = nullptr;
  // For calls on device buffers (CostInputs::deviceBuffers): whether it
  // carries the pair there, in place of supports and carries; no function:
  // as for host buffers.
  bool (*onDevice)(plan::Coll c, AlgoId a, const CostInputs& in) = nullptr;
};

int protoCount();
const ProtoInfo& protoInfo(ProtoId p);
const char* protoName(ProtoId p);
bool protoSupports(ProtoId p, plan::Coll c, AlgoId a);
// Whether p can carry `a` running `c` for this call (buffer kind, layout):
// what the selector asks.
bool protoCarries(ProtoId p, plan::Coll c, AlgoId a, const CostInputs& in);
std::optional<ProtoId> findProto(std::string_view name);
// Appends a protocol (same rules as registerAlgo); throws weftInvalidArgument.
ProtoId registerProto(ProtoInfo info);

// The estimate of `a` running `c` with protocol p (estimateUs, adjusted).
double protoEstimateUs(plan::Coll c, AlgoId a, ProtoId p, const CostInputs& in);

// WEFT_PROTO, parsed (selection_list.h syntax). NCCL's protocol names that
// this build does not have (ll128) are accepted and select nothing, so
// that "^ll128" means "simple,ll"; an unknown name, or a list that leaves some
// collective no protocol, is weftInvalidArgument naming it.
struct ProtoFilter {
  std::array<NameSet, plan::kNumColls> allowed;  // all set when WEFT_PROTO is unset
  ProtoFilter() {
    for (auto& s : allowed) s.set();
  }
  bool allows(plan::Coll c, ProtoId p) const { return allowed[static_cast<int>(c)].test(size_t(index(p))); }
};
ProtoFilter parseProtoFilter(const std::string& spec);

}  // namespace weft::algo
