#include "algorithms/collectives.h"

#include <algorithm>
#include <cctype>

namespace weft::plan {
namespace {

double allReduceBus(int n) { return 2.0 * (n - 1) / n; }
double scatterGatherBus(int n) { return double(n - 1) / n; }
double unitBus(int) { return 1.0; }

// Indexed by plan::Coll's value. Columns: reduces, rooted; send x nranks,
// recv x nranks; send at root only, recv at root only; fixed plan.
constexpr CollInfo kColls[kNumColls] = {
    {Coll::AllReduce, "AllReduce", "allreduce", "all_reduce_perf",  //
     true, false, false, false, false, false, false, allReduceBus},
    {Coll::ReduceScatter, "ReduceScatter", "reducescatter", "reduce_scatter_perf",  //
     true, false, true, false, false, false, false, scatterGatherBus},
    {Coll::AllGather, "AllGather", "allgather", "all_gather_perf",  //
     false, false, false, true, false, false, false, scatterGatherBus},
    {Coll::Broadcast, "Broadcast", "broadcast", "broadcast_perf",  //
     false, true, false, false, true, false, false, unitBus},
    {Coll::Reduce, "Reduce", "reduce", "reduce_perf",  //
     true, true, false, false, false, true, false, unitBus},
    {Coll::SendRecv, "SendRecv", "sendrecv", "sendrecv_perf",  //
     false, false, false, false, false, false, true, unitBus},
    {Coll::AllToAll, "AllToAll", "alltoall", "alltoall_perf",  //
     false, false, true, true, false, false, true, scatterGatherBus},
};

}  // namespace

const CollInfo& collInfo(Coll c) { return kColls[static_cast<int>(c)]; }

const char* collName(Coll c) {
  const int i = static_cast<int>(c);
  return i >= 0 && i < kNumColls ? kColls[i].name : "?";
}

std::optional<Coll> parseColl(std::string_view name) {
  for (const CollInfo& c : kColls) {
    std::string_view key = c.key;
    if (key.size() == name.size() &&
        std::equal(key.begin(), key.end(), name.begin(),
                   [](char k, char n) { return k == std::tolower(static_cast<unsigned char>(n)); }))
      return c.coll;
  }
  return std::nullopt;
}

uint64_t sendElems(Coll c, uint64_t count, int nranks) {
  return collInfo(c).sendTimesRanks ? count * uint64_t(nranks) : count;
}

uint64_t recvElems(Coll c, uint64_t count, int nranks) {
  return collInfo(c).recvTimesRanks ? count * uint64_t(nranks) : count;
}

uint64_t largestBufferElems(Coll c, uint64_t count, int nranks) {
  return std::max(sendElems(c, count, nranks), recvElems(c, count, nranks));
}

}  // namespace weft::plan
