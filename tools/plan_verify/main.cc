// weft-plan-verify: build every rank's plan of one call and run the symbolic
// verifier on it; prints the verdict (and, on request, one rank's plan).
//
//   weft-plan-verify --algo ring --coll allreduce --nranks 8 --count 1000003
//   (--algo: a registered algorithm (ring, binarytree, tree = the double
//   binary tree), or alltoall for AllToAll's fixed plan)
//                    [--channels 2] [--root 0] [--inplace] [--slot-bytes 65536]
//                    [--slots 8] [--elem-size 4] [--hosts 0,0,1,1,...] [--dump RANK]
//
// Exit status: 0 verified, 1 issues found, 2 bad usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "algorithms/collectives.h"
#include "algorithms/p2p.h"
#include "algorithms/registry.h"
#include "algorithms/verify.h"
#include "src/util/error.h"

using namespace weft;

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "weft-plan-verify: %s\n"
               "usage: weft-plan-verify --algo ALGORITHM|alltoall --coll "
               "allreduce|reducescatter|allgather|broadcast|reduce|alltoall --nranks N --count C\n"
               "       [--channels K] [--root R] [--inplace] [--slot-bytes B] [--slots S] [--elem-size E]\n"
               "       [--hosts h0,h1,...] [--dump RANK]\n",
               why);
  return 2;
}

// A registered algorithm's builder; "alltoall": AllToAll's fixed plan;
// "double_tree": the double binary tree's earlier name here.
plan::Plan (*builderNamed(const std::string& name))(const algo::CollArgs&) {
  if (name == "alltoall") return algo::buildAllToAll;
  std::optional<algo::AlgoId> a = algo::findAlgo(name == "double_tree" ? "tree" : name);
  return a ? algo::algoInfo(*a).build : nullptr;
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
      std::optional<plan::Coll> c = plan::parseColl(v);
      if (!c || *c == plan::Coll::SendRecv) return usage("unknown collective");
      a.coll = *c;
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

  auto build = builderNamed(algoName);
  if (!build) return usage("unknown algorithm");
  a.hostOf = hosts;

  try {
    std::vector<plan::Plan> plans;
    verify::Result r = verify::verifyBuilder(build, a, inPlace, &plans);
    size_t steps = 0;
    for (const plan::Plan& p : plans) steps += p.stepCount();
    if (dump >= 0 && dump < a.nranks) std::printf("%s", plan::describe(plans[dump]).c_str());
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
