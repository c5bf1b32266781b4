#include "src/core/call_check.h"

#include <vector>

#include "algorithms/collectives.h"
#include "src/core/comm.h"
#include "src/util/error.h"

namespace weft {
namespace {

bool same(const CallSignature& a, const CallSignature& b) {
  return a.seq == b.seq && a.count == b.count && a.coll == b.coll && a.type == b.type && a.opKind == b.opKind &&
         a.root == b.root && a.device == b.device;
}

}  // namespace

CallSignature signatureOf(const OpDesc& op, uint64_t seq) {
  CallSignature s;
  s.seq = seq;
  s.count = op.count;
  s.coll = static_cast<int32_t>(op.coll);
  s.type = static_cast<int32_t>(op.type);
  // A user-defined PreMulSum has a per-rank scalar but the same kind.
  const plan::CollInfo& info = plan::collInfo(op.coll);
  if (info.reduces) s.opKind = static_cast<int32_t>(op.op.kind);
  if (info.rooted) s.root = op.root;
  s.device = op.device ? 1 : 0;
  return s;
}

std::string describeSignature(const CallSignature& s) {
  std::string t = std::string(plan::collName(static_cast<plan::Coll>(s.coll))) + " count " +
                  std::to_string(s.count) + " " + kernels::typeName(static_cast<weftDataType_t>(s.type));
  if (s.opKind >= 0) t += std::string(" ") + kernels::opName(static_cast<kernels::OpKind>(s.opKind));
  if (s.root >= 0) t += " root " + std::to_string(s.root);
  t += s.device ? " (device buffers)" : " (host buffers)";
  return t;
}

std::string compareSignatures(const CallSignature* all, int nranks) {
  std::string differ;
  int shown = 0, count = 0;
  for (int r = 1; r < nranks; r++) {
    if (same(all[r], all[0])) continue;
    count++;
    if (shown < 4) {
      differ += "; rank " + std::to_string(r) + " (its collective #" + std::to_string(all[r].seq) +
                ") calls " + describeSignature(all[r]);
      shown++;
    }
  }
  if (!count) return "";
  std::string text = "WEFT_CHECK: collective #" + std::to_string(all[0].seq) + " differs across ranks: rank 0 calls " +
                     describeSignature(all[0]) + differ;
  if (count > shown) text += "; and " + std::to_string(count - shown) + " more rank(s)";
  return text;
}

void checkCallAcrossRanks(weftComm* comm, const OpDesc& op) {
  std::vector<CallSignature> all(comm->nranks);
  all[comm->rank] = signatureOf(op, comm->checkedCalls++);
  comm->bootstrap->allGather(all.data(), sizeof(CallSignature));
  std::string why = compareSignatures(all.data(), comm->nranks);
  if (!why.empty()) raise(weftInvalidUsage, "%s", why.c_str());
}

}  // namespace weft
