// weft-select: the selector's table for a topology. For each size from 8 B
// to 4 GB it prints every candidate algorithm's predicted time and bus
// bandwidth and the one the selector picks, so a user can see why a tree wins
// at 8 KB and the ring at 1 GB.
//
//   weft-select [--topo FILE] [--gpus | --ranks-per-host N] [--channels C]
//               [--coll allreduce|reducescatter|allgather|broadcast|reduce]
//               [--tune FILE]
// Without --topo it uses this machine (detected, or WEFT_TOPO_FILE).
// WEFT_ALGO filters the candidates as it does in communicators.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "algorithms/collectives.h"
#include "algorithms/selector.h"
#include "src/core/comm.h"
#include "src/core/tune_file.h"
#include "src/topology/cost_inputs.h"
#include "src/topology/detect.h"
#include "src/topology/rings.h"
#include "src/topology/topo_file.h"
#include "src/util/error.h"
#include "tools/weft-select/select_table.h"
#include "src/util/settings.h"

namespace {

using weft::plan::Coll;

[[noreturn]] void usage(int code) {
  fprintf(code ? stderr : stdout,
          "usage: weft-select [--topo FILE] [--gpus | --ranks-per-host N] [--channels C] [--coll NAME] "
          "[--tune FILE]\n");
  exit(code);
}

Coll collOption(const std::string& s) {
  std::optional<Coll> c = weft::plan::parseColl(s);
  // Only the collectives the selector chooses an algorithm for.
  if (!c || weft::plan::collInfo(*c).fixedPlan) usage(2);
  return *c;
}

}  // namespace

int main(int argc, char** argv) {
  std::string topoFile, tuneFile;
  bool gpus = false;
  int ranksPerHost = 0, channels = 2;
  Coll coll = Coll::AllReduce;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "--topo") topoFile = next();
    else if (a == "--gpus") gpus = true;
    else if (a == "--ranks-per-host") ranksPerHost = atoi(next().c_str());
    else if (a == "--channels") channels = atoi(next().c_str());
    else if (a == "--coll") coll = collOption(next());
    else if (a == "--tune") tuneFile = next();
    else if (a == "-h" || a == "--help") usage(0);
    else usage(2);
  }
  try {
    weft::topo::System sys = topoFile.empty() ? weft::topo::systemFromEnv() : weft::topo::loadFile(topoFile);
    auto places = weft::topo::defaultPlaces(sys, gpus, ranksPerHost);
    const int n = static_cast<int>(places.size());
    if (n < 1) {
      fprintf(stderr, "weft-select: the topology has no place for a rank\n");
      return 1;
    }
    weft::topo::TopoSummary sum = weft::topo::summarize(sys, places, channels);
    weft::algo::CostInputs in =
        weft::topo::costInputsFromTopology(sum, n, weft::defaultCostInputs(n, std::max(sum.nHosts, 1)));
    if (!tuneFile.empty()) weft::loadTuneFile(tuneFile, &in);
    in.maxChannels = channels;
    std::vector<int> hostOf;
    for (const auto& p : places) hostOf.push_back(p.host);
    weft::algo::setHostPlacement(in, hostOf);
    weft::algo::AlgoFilter filter = weft::algo::parseAlgoFilter(weft::settings::get(weft::settings::kAlgo).value_or(""));

    fputs(weft::tools::selectTable(coll, in, filter, channels).c_str(), stdout);
  } catch (const std::exception& e) {
    fprintf(stderr, "weft-select: %s\n", e.what());
    return 1;
  }
  return 0;
}
