// weft-plan-verify: build every rank's plan of one call and run the symbolic
// verifier on it; prints the verdict (and, on request, one rank's plan).
//
//   weft-plan-verify --algo ring --coll allreduce --nranks 8 --count 1000003
//                    [--channels 2] [--root 0] [--inplace] [--slot-bytes 65536]
//                    [--slots 8] [--elem-size 4] [--hosts 0,0,1,1,...] [--dump RANK]
//
// Exit status: 0 verified, 1 issues found, 2 bad usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>

#include "algorithms/double_tree.h"
#include "algorithms/p2p.h"
#include "algorithms/ring.h"
#include "algorithms/tree.h"
#include "algorithms/verify.h"
#include "src/util/error.h"

using namespace weft;

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "weft-plan-verify: %s\n"
               "usage: weft-plan-verify --algo ring|tree|double_tree|alltoall --coll "
               "allreduce|reducescatter|allgather|broadcast|reduce|alltoall --nranks N --count C\n"
               "       [--channels K] [--root R] [--inplace] [--slot-bytes B] [--slots S] [--elem-size E]\n"
               "       [--hosts h0,h1,...] [--dump RANK]\n",
               why);
  return 2;
}

bool parseColl(const std::string& s, plan::Coll* c) {
  const std::pair<const char*, plan::Coll> names[] = {
      {"allreduce", plan::Coll::AllReduce}, {"reducescatter", plan::Coll::ReduceScatter},
      {"allgather", plan::Coll::AllGather}, {"broadcast", plan::Coll::Broadcast},
      {"reduce", plan::Coll::Reduce},       {"alltoall", plan::Coll::AllToAll}};
  for (auto& [n, v] : names)
    if (s == n) {
      *c = v;
      return true;
    }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  algo::CollArgs a;
  std::string algoName = "ring";
  std::vector<int> hosts;
  bool inPlace = false;
  int dump = -1;
  for (int i = 1; i < argc; i++) {
    std::string k = argv[i];
    auto val = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (k == "--inplace") {
      inPlace = true;
      continue;
    }
    if (!(v = val())) return usage(("missing value for " + k).c_str());
    if (k == "--algo") algoName = v;
    else if (k == "--coll") {
      if (!parseColl(v, &a.coll)) return usage("unknown collective");
    } else if (k == "--nranks") a.nranks = std::atoi(v);
    else if (k == "--count") a.count = std::strtoull(v, nullptr, 10);
    else if (k == "--channels") a.nChannels = std::atoi(v);
    else if (k == "--root") a.root = std::atoi(v);
    else if (k == "--slot-bytes") a.geometry.slotBytes = std::strtoull(v, nullptr, 10);
    else if (k == "--slots") a.geometry.nSlots = uint32_t(std::atoi(v));
    else if (k == "--elem-size") a.elemSize = uint32_t(std::atoi(v));
    else if (k == "--dump") dump = std::atoi(v);
    else if (k == "--hosts") {
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) hosts.push_back(std::atoi(item.c_str()));
    } else return usage(("unknown option " + k).c_str());
  }

  std::function<plan::Plan(const algo::CollArgs&)> build;
  if (algoName == "ring") build = algo::buildRing;
  else if (algoName == "tree") build = [](const algo::CollArgs& x) { return algo::buildTree(x); };
  else if (algoName == "double_tree") build = [&](const algo::CollArgs& x) { return algo::buildDoubleTree(x, hosts); };
  else if (algoName == "alltoall") build = algo::buildAllToAll;
  else return usage("unknown algorithm");

  try {
    verify::Problem p = verify::collectiveProblem(a.coll, a.nranks, a.count, a.root, inPlace, a.geometry);
    size_t steps = 0;
    for (int r = 0; r < a.nranks; r++) {
      algo::CollArgs mine = a;
      mine.rank = r;
      p.plans.push_back(build(mine));
      p.plans.back().elemSize = a.elemSize;
      steps += p.plans.back().stepCount();
    }
    if (dump >= 0 && dump < a.nranks) std::printf("%s", plan::describe(p.plans[dump]).c_str());
    verify::Result r = verify::verify(p);
    std::printf("%s %s n=%d count=%llu channels=%d %s: %zu steps, %llu pieces: %s\n", algoName.c_str(),
                plan::collName(a.coll), a.nranks, (unsigned long long)a.count, a.nChannels,
                inPlace ? "in-place" : "out-of-place", steps, (unsigned long long)r.piecesMoved,
                r.ok ? "VERIFIED" : "ISSUES");
    if (!r.ok) std::printf("%s", r.text().c_str());
    return r.ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "weft-plan-verify: %s\n", e.what());
    return 2;
  }
}
