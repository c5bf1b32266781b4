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
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "algorithms/cost_model.h"
#include "algorithms/selector.h"
#include "src/core/comm.h"
#include "src/core/tune_file.h"
#include "src/topology/cost_inputs.h"
#include "src/topology/detect.h"
#include "src/topology/rings.h"
#include "src/topology/topo_file.h"
#include "src/util/env.h"
#include "src/util/error.h"

namespace {

using weft::algo::Algo;
using weft::plan::Coll;

[[noreturn]] void usage(int code) {
  fprintf(code ? stderr : stdout,
          "usage: weft-select [--topo FILE] [--gpus | --ranks-per-host N] [--channels C] [--coll NAME] "
          "[--tune FILE]\n");
  exit(code);
}

Coll parseColl(const std::string& s) {
  if (s == "allreduce") return Coll::AllReduce;
  if (s == "reducescatter") return Coll::ReduceScatter;
  if (s == "allgather") return Coll::AllGather;
  if (s == "broadcast") return Coll::Broadcast;
  if (s == "reduce") return Coll::Reduce;
  usage(2);
}

// nccl-tests' bus bandwidth factor.
double busFactor(Coll c, int n) {
  switch (c) {
    case Coll::AllReduce: return 2.0 * (n - 1) / n;
    case Coll::ReduceScatter:
    case Coll::AllGather: return double(n - 1) / n;
    default: return 1.0;
  }
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
    else if (a == "--coll") coll = parseColl(next());
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
    weft::algo::AlgoFilter filter = weft::algo::parseAlgoFilter(weft::envString("WEFT_ALGO").value_or(""));

    printf("# %s, %d ranks on %d host(s), %d channel(s); links: intra %.2f us %.2f GB/s, inter %.2f us %.2f GB/s\n",
           weft::plan::collName(coll), n, in.nHosts, channels, in.intra.latencyUs, in.intra.bandwidthGBs,
           in.inter.latencyUs, in.inter.bandwidthGBs);
    printf("%12s", "size(B)");
    for (int a = 0; a < weft::algo::kNumAlgos; a++)
      printf(" %11s(us) %9s", weft::algo::algoName(static_cast<Algo>(a)), "busbw");
    printf("  %s\n", "chosen (channels x slice bytes)");
    for (uint64_t bytes = 8; bytes <= (uint64_t(4) << 30); bytes *= 4) {
      in.bytes = bytes;
      printf("%12llu", static_cast<unsigned long long>(bytes));
      for (int a = 0; a < weft::algo::kNumAlgos; a++) {
        double us = weft::algo::estimateUs(coll, static_cast<Algo>(a), in);
        if (std::isinf(us)) {
          printf(" %15s %9s", "-", "-");
          continue;
        }
        double busbw = double(bytes) / (us * 1e3) * busFactor(coll, n);
        printf(" %15.2f %9.3f", us, busbw);
      }
      weft::algo::CallChoice c = weft::algo::selectCall(coll, in, filter, weft::plan::FifoGeometry{});
      printf("  %s (%d x %llu)\n", weft::algo::algoName(c.algo), c.shape.nChannels,
             static_cast<unsigned long long>(c.shape.sliceBytes));
    }
  } catch (const std::exception& e) {
    fprintf(stderr, "weft-select: %s\n", e.what());
    return 1;
  }
  return 0;
}
