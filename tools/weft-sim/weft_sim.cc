// weft-sim: what each algorithm's real plans would take on a cluster we do
// not have. Builds every rank's plan with the registry's builders (the
// channels and slice the selector's pipeline model picks for it), runs them
// through the flow model (src/sim/flow_model.h) and prints nccl-tests-style
// lines per size and algorithm, marking the selector's choice.
//
//   weft-sim --topo cluster.json | --hosts 4 --ranks-per-host 8 | --layout 3,1,...
//            [--coll allreduce] [-b 8] [-e 1G] [-f 4] [--intra-gbs 100] [--intra-lat-us 1]
//            [--nic-gbs 12.5] [--net-lat-us 5] [--nics-per-host 1] [--step-us 0]
//            [--calibration weft-tune.conf] [--algos ring,tree,hier] [--write-tune FILE]
//            [--symmetry on|off] [--channels C]
//
// Exit status: 0 done, 2 bad usage or input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/double_tree.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "src/core/tune_file.h"
#include "src/sim/sim_call.h"
#include "src/sim/topo_cluster.h"
#include "src/topology/cost_inputs.h"
#include "src/util/error.h"

using namespace weft;

namespace {

// The most steps one simulated call may have in all (memory: kBytesPerStep each).
constexpr size_t kMaxSteps = size_t(16) << 20;

struct Options {
  std::string topoFile, calibration, writeTune;
  std::vector<int> layout;  // ranks per host
  plan::Coll coll = plan::Coll::AllReduce;
  uint64_t minBytes = 8, maxBytes = uint64_t(1) << 30, factor = 4;
  sim::SimpleCluster simple;  // the command line's cluster, and what the cost model sees
  bool stepGiven = false;
  bool symmetry = true;  // --symmetry off: every rank's every step, always
  int channels = 1;      // the communicator's channels (WEFT_NCHANNELS): the most a call may use
  sim::Cluster cluster;
  // Per channel, the communicator's ring order on a topology file's cluster
  // (empty: rank order, as a communicator without a topology has it).
  std::vector<std::vector<int>> channelOrders;
  // What the communicator's ring views say of a topology file's cluster
  // (empty: no topology, or ranks without places): the cost model's
  // bandwidths come from it as a communicator's do.
  std::optional<topo::TopoSummary> ringSummary;
  std::string algos;  // empty: every algorithm that implements the collective
};

int usage(const char* why) {
  std::fprintf(stderr,
               "weft-sim: %s\n"
               "usage: weft-sim --topo FILE | --hosts H --ranks-per-host L | --layout L0,L1,...\n"
               "       [--coll C] [-b MIN] [-e MAX] [-f F] [--intra-gbs G] [--intra-lat-us U] [--nic-gbs G]\n"
               "       [--net-lat-us U] [--nics-per-host K] [--step-us U] [--calibration TUNEFILE]\n"
               "       [--algos a,b] [--write-tune FILE] [--symmetry on|off] [--channels C]\n",
               why);
  return 2;
}

uint64_t parseSize(const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  const char u = end && *end ? char(std::toupper(*end)) : 0;
  if (u == 'K') x *= 1024;
  else if (u == 'M') x *= 1024.0 * 1024;
  else if (u == 'G') x *= 1024.0 * 1024 * 1024;
  return uint64_t(x);
}

std::vector<int> parseList(const std::string& v) {
  std::vector<int> out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::atoi(item.c_str()));
  return out;
}

// One call of `a` with `count` elements: every rank's plan from the
// registry's builder, run one rank per symmetry class where the cluster and
// the plans allow it (src/sim/symmetry.h), refused before its plans are all
// built when the model would need more than kMaxSteps steps. The memo keeps
// the symmetries checked at earlier sizes of the sweep, per algorithm and
// shape: a size whose representatives' plans are an earlier size's scaled
// builds no other rank's plan (sim::SymmetryMemo).
sim::RunStats simulateCall(const Options& o, algo::AlgoId a, uint64_t count, const algo::CallShape& shape,
                           sim::SymmetryMemo* memo) {
  algo::CollArgs args;
  args.coll = o.coll;
  args.nranks = int(o.cluster.hostOf.size());
  args.count = count;
  args.nChannels = shape.nChannels;
  args.geometry.slotBytes = shape.sliceBytes;
  args.hostOf = o.cluster.hostOf;
  if (!o.channelOrders.empty()) args.order = o.channelOrders[0];
  args.channelOrders = o.channelOrders;
  sim::CallOptions opts;
  opts.useSymmetry = o.symmetry;
  opts.memo = memo;
  opts.shape = std::string(algo::algoName(a)) + "/" + std::to_string(shape.nChannels) + "/" +
               std::to_string(shape.sliceBytes);
  opts.maxSteps = kMaxSteps;
  // Large calls are announced before they run (about 2 us of CPU per step
  // on the 2-core development machine, loaded).
  opts.largeSteps = uint64_t(2) << 20;
  opts.onLarge = [&](uint64_t steps, int ranks) {
    std::fprintf(stderr, "weft-sim: %s of %llu elements on %d ranks: the model runs %d ranks' plans, %llu steps, ~%llu s "
                 "and ~%llu MB\n", algo::algoName(a), (unsigned long long)count, args.nranks, ranks,
                 (unsigned long long)steps, (unsigned long long)(steps * 2 / 1000000),
                 (unsigned long long)(steps * sim::kBytesPerStep >> 20));
  };
  return sim::simulateCall([&](int rank) {
    algo::CollArgs mine = args;
    mine.rank = rank;
    return algo::algoInfo(a).build(mine);
  }, o.cluster, opts);
}

// What the model ran for one algorithm over the sweep.
struct ModelCost {
  int calls = 0, reduced = 0, fewestRanks = 1 << 30;
  uint64_t steps = 0, simulatedSteps = 0;
  void add(const sim::RunStats& st) {
    calls++;
    if (st.simulatedSteps < st.steps) reduced++;
    fewestRanks = std::min(fewestRanks, st.simulatedRanks);
    steps += st.steps;
    simulatedSteps += st.simulatedSteps;
  }
};

algo::CostInputs costInputs(const Options& o, uint64_t bytes) {
  algo::CostInputs in;
  in.nranks = int(o.cluster.hostOf.size());
  in.nHosts = int(o.layout.size());
  in.bytes = bytes;
  // A hop as the library measures it (weft-tune's latencies): the link's
  // latency and the step the receiving rank runs (the model's per-step
  // overhead), so deep chains of cheap hops are not priced at the link's alone.
  const double stepUs = o.cluster.stepOverheadUs;
  in.intra = {o.simple.intraLatUs + stepUs, o.simple.intraGBs};
  // As the communicator prices its channels (topo::costInputsFromTopology):
  // the network carries one NIC per channel (channels spread over a host's
  // NICs, as many as it has), one channel no more than its NIC. The rails
  // of hier count the NICs beyond those.
  const int K = std::max(o.simple.nicsPerHost, 1), used = std::min(o.channels, K);
  in.inter = {o.simple.netLatUs + stepUs, o.simple.nicGBs * used};
  in.maxChannels = o.channels;
  if (in.nHosts > 1) in.channelBwGBs = std::min(o.simple.nicGBs, o.simple.intraGBs);
  in.nicsPerHost = (K + used - 1) / used;
  // As the communicator gives it (topo::costInputsFromTopology): hosts in
  // ring order, each at its slowest NIC.
  in.treeNetScale = algo::doubleTreeNetScale(
      o.simple.hostNicGBs.empty() ? std::vector<double>(o.layout.size(), o.simple.nicGBs) : o.simple.hostNicGBs);
  algo::setHostPlacement(in, o.cluster.hostOf);
  // A topology file's cluster: the links' bandwidths as the communicator
  // takes them from its ring views (the command line's cluster has no graph).
  if (o.ringSummary) in = topo::costInputsFromTopology(*o.ringSummary, in.nranks, in);
  return in;
}

// The simulated AllReduce curves as a tune file: communicators of this shape
// then follow the simulator's ranking (the cost model reads measured curves
// where they match the communicator).
void writeTune(const Options& o, const std::map<int, algo::MeasuredCurve>& curves) {
  algo::CostInputs in = costInputs(o, 0);
  in.measuredRanks = in.nranks;
  in.measuredHosts = in.nHosts;
  for (const auto& [a, c] : curves) in.calibration(algo::AlgoId(a)).measured = c;
  std::ostringstream why;
  why << "written by weft-sim from simulated AllReduce times: " << in.nranks << " ranks on " << in.nHosts << " hosts"
      << (o.topoFile.empty() ? "" : ", topology " + o.topoFile);
  saveTuneFile(o.writeTune, in, why.str());
  std::printf("# wrote %s\n", o.writeTune.c_str());
}

void sweep(const Options& o) {
  const int n = int(o.cluster.hostOf.size());
  const plan::CollInfo& info = plan::collInfo(o.coll);
  algo::AlgoFilter filter = o.algos.empty() ? algo::AlgoFilter{} : algo::parseAlgoFilter(o.algos);
  plan::FifoGeometry g;  // the communicator's defaults
  std::printf("# weft-sim %s: %d ranks on %zu hosts, intra %.1f GB/s %.1f us, NIC %.2f GB/s %.1f us x %d per host, "
              "step %.2f us, %d channel(s)%s%s\n", info.name, n, o.layout.size(), o.simple.intraGBs, o.simple.intraLatUs,
              o.simple.nicGBs, o.simple.netLatUs, o.simple.nicsPerHost, o.cluster.stepOverheadUs, o.channels,
              o.topoFile.empty() ? "" : ", topology ", o.topoFile.c_str());
  std::printf("#%12s %12s %6s %12s %8s %8s %5s %10s  %s\n", "size(B)", "count", "type", "time(us)", "algbw", "busbw",
              "ch", "slice", "algorithm");
  std::map<int, algo::MeasuredCurve> curves;
  std::map<int, ModelCost> cost;
  sim::SymmetryMemo memo;
  for (uint64_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    const algo::CostInputs in = costInputs(o, bytes);
    const algo::CallChoice pick = algo::selectCall(o.coll, in, filter, g);
    const uint64_t elems = bytes / 4;
    const uint64_t count = o.coll == plan::Coll::ReduceScatter || o.coll == plan::Coll::AllGather ? elems / uint64_t(n)
                                                                                                   : elems;
    for (int i = 0; i < algo::algoCount(); i++) {
      const algo::AlgoId a = algo::AlgoId(i);
      if (!algo::algoSupports(a, o.coll) || !filter.allows(o.coll, a)) continue;
      // Infinite cost: the algorithm does not run on this layout (oneshot across hosts).
      if (!std::isfinite(algo::estimateUs(o.coll, a, in))) continue;
      const algo::CallShape shape = algo::shapeCall(o.coll, a, in, g);
      sim::RunStats st;
      try {
        st = simulateCall(o, a, count, shape, &memo);
      } catch (const Error& e) {  // too large to simulate: say so, and go on with the others
        std::printf("# %llu B %s: not simulated: %s\n", (unsigned long long)bytes, algo::algoName(a), e.what());
        if (!o.writeTune.empty()) throw;
        continue;
      }
      const double algbw = st.us > 0 ? double(bytes) / st.us / 1e3 : 0;
      std::printf(" %12llu %12llu %6s %12.2f %8.3f %8.3f %5d %10llu  %s%s\n", (unsigned long long)bytes,
                  (unsigned long long)count, "float", st.us, algbw, algbw * info.busFactor(n), shape.nChannels,
                  (unsigned long long)shape.sliceBytes, algo::algoName(a), a == pick.algo ? " (selector)" : "");
      std::fflush(stdout);
      cost[i].add(st);
      if (o.coll == plan::Coll::AllReduce && st.us > 0 && !curves[i].add(double(bytes), st.us))
        raise(weftInvalidArgument, "--write-tune: a tune file holds at most %d sizes per algorithm",
              algo::kMaxMeasuredPoints);
    }
    if (o.factor < 2) break;
  }
  for (const auto& [a, m] : cost)
    std::printf("# model: %s: %d of %d calls one rank per symmetry class (%d of %d ranks), %.3g of %.3g steps run\n",
                algo::algoName(algo::AlgoId(a)), m.reduced, m.calls, m.fewestRanks, n, double(m.simulatedSteps),
                double(m.steps));
  if (memo.reused)
    std::printf("# model: %llu calls kept the symmetry checked at a smaller size (their plans scale it)\n",
                (unsigned long long)memo.reused);
  if (!o.writeTune.empty()) {
    if (o.coll != plan::Coll::AllReduce) raise(weftInvalidArgument, "--write-tune: tune files hold AllReduce curves");
    writeTune(o, curves);
  }
}

// A weft-tune file's per-hop latency of shared memory is what one step
// costs the executors on that machine: the per-step overhead.
void applyCalibration(Options& o) {
  algo::CostInputs in;
  in.intra.latencyUs = -1;
  loadTuneFile(o.calibration, &in);
  if (in.intra.latencyUs < 0)
    raise(weftInvalidArgument, "--calibration %s: no shm_latency_us to take the per-step overhead from",
          o.calibration.c_str());
  if (!o.stepGiven) o.cluster.stepOverheadUs = o.simple.stepOverheadUs = in.intra.latencyUs;
}

int parseArgs(int argc, char** argv, Options& o) {
  int hosts = 0, perHost = 0;
  for (int i = 1; i < argc; i++) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return usage(("missing value for " + k).c_str());
    const std::string v = argv[++i];
    if (k == "--hosts") hosts = std::atoi(v.c_str());
    else if (k == "--ranks-per-host") perHost = std::atoi(v.c_str());
    else if (k == "--layout") o.layout = parseList(v);
    else if (k == "--topo") o.topoFile = v;
    else if (k == "--coll") {
      std::optional<plan::Coll> c = plan::parseColl(v);
      if (!c || plan::collInfo(*c).fixedPlan) return usage("--coll: allreduce, reducescatter, allgather, broadcast, reduce");
      o.coll = *c;
    } else if (k == "-b") o.minBytes = parseSize(v);
    else if (k == "-e") o.maxBytes = parseSize(v);
    else if (k == "-f") o.factor = parseSize(v);
    else if (k == "--intra-gbs") o.simple.intraGBs = std::atof(v.c_str());
    else if (k == "--intra-lat-us") o.simple.intraLatUs = std::atof(v.c_str());
    else if (k == "--nic-gbs") o.simple.nicGBs = std::atof(v.c_str());
    else if (k == "--net-lat-us") o.simple.netLatUs = std::atof(v.c_str());
    else if (k == "--nics-per-host") o.simple.nicsPerHost = std::atoi(v.c_str());
    else if (k == "--step-us") o.simple.stepOverheadUs = std::atof(v.c_str()), o.stepGiven = true;
    else if (k == "--calibration") o.calibration = v;
    else if (k == "--algos") o.algos = v;
    else if (k == "--write-tune") o.writeTune = v;
    else if (k == "--symmetry" && (v == "on" || v == "off")) o.symmetry = v == "on";
    else if (k == "--channels") o.channels = std::atoi(v.c_str());
    else return usage(("unknown option " + k).c_str());
  }
  if (o.channels < 1 || o.channels > 16) return usage("--channels must be in 1..16 (a communicator's channels)");
  if (!o.topoFile.empty()) return 0;
  if (o.layout.empty() && hosts > 0 && perHost > 0) o.layout.assign(size_t(hosts), perHost);
  if (o.layout.empty()) return usage("give --topo, --hosts and --ranks-per-host, or --layout");
  for (size_t h = 0; h < o.layout.size(); h++)
    if (o.layout[h] < 1) return usage("every host needs at least one rank");
  o.simple.layout = o.layout;
  if (o.simple.nicsPerHost < 1) return usage("--nics-per-host must be at least 1");
  if (!(o.simple.intraGBs > 0)) return usage("--intra-gbs must be above 0");
  if (!(o.simple.nicGBs > 0)) return usage("--nic-gbs must be above 0");
  if (o.simple.intraLatUs < 0 || o.simple.netLatUs < 0 || o.simple.stepOverheadUs < 0)
    return usage("latencies and --step-us must not be negative");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parseArgs(argc, argv, o)) return rc;
  if (o.minBytes < 4 || o.factor < 1) return usage("sizes from 4 bytes, factor >= 1");
  try {
    if (!o.topoFile.empty()) {
      const double stepUs = o.simple.stepOverheadUs;  // the command line's wins over the file's
      sim::TopoCluster t = sim::loadTopoCluster(o.topoFile);
      topo::CommRings rings = sim::communicatorRings(t, o.channels);
      o.channelOrders = rings.orders;
      if (!rings.orders.empty()) o.ringSummary = rings.summary;
      o.cluster = std::move(t.cluster);
      o.simple = t.summary;
      o.layout = t.layout;
      if (o.stepGiven) o.cluster.stepOverheadUs = o.simple.stepOverheadUs = stepUs;
    } else {
      o.cluster = sim::buildCluster(o.simple);
    }
    if (!o.calibration.empty()) applyCalibration(o);
    sweep(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "weft-sim: %s\n", e.what());
    return 2;
  }
  return 0;
}
