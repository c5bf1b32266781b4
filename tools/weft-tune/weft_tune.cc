// weft-tune: measures the cost model's constants on this machine and writes
// them to a file that later runs load with WEFT_TUNE_FILE.
//
// Ranks are threads of this process (so no launcher is needed). For each
// algorithm it times AllReduce at a small and a large size, then fits:
//   ring:  per-hop latency and link bandwidth (the transport's constants);
//   trees: a fixed cost per call and a factor on the bytes term.
// With --transport socket the ranks talk over TCP on loopback
// (WEFT_SHM_DISABLE=1) and the fit goes to the network constants.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/cost_model.h"
#include "src/core/comm.h"
#include "src/core/tune_file.h"
#include "weft/weft.h"

namespace {

using weft::algo::Algo;
using weft::plan::Coll;

struct Options {
  int nranks = 8;
  bool socket = false;
  size_t small = 8, large = 16 << 20;
  int reps = 3;
  std::string out = "weft-tune.conf";
};

[[noreturn]] void usage(int code) {
  fprintf(code ? stderr : stdout,
          "usage: weft-tune [-t NRANKS] [--transport shm|socket] [--small BYTES] [--large BYTES] [-r REPS] "
          "[-o FILE]\n"
          "Times AllReduce per algorithm with NRANKS threads as ranks and writes the fitted cost-model\n"
          "constants to FILE (default weft-tune.conf); load them with WEFT_TUNE_FILE=FILE.\n");
  exit(code);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "-t") o.nranks = atoi(next());
    else if (a == "--transport") o.socket = std::string(next()) == "socket";
    else if (a == "--small") o.small = strtoull(next(), nullptr, 0);
    else if (a == "--large") o.large = strtoull(next(), nullptr, 0);
    else if (a == "-r") o.reps = atoi(next());
    else if (a == "-o") o.out = next();
    else if (a == "-h" || a == "--help") usage(0);
    else usage(2);
  }
  if (o.nranks < 2 || o.small < 4 || o.large <= o.small || o.reps < 1) usage(2);
  return o;
}

// Microseconds per AllReduce of `bytes` (float32) with the algorithm forced,
// best of `reps` runs of `iters` calls.
double timeAllReduce(const Options& o, Algo a, size_t bytes, int iters) {
  std::string algo = std::string("allreduce:") + weft::algo::algoName(a);
  setenv("WEFT_ALGO", algo.c_str(), 1);
  std::vector<weftComm_t> comms(o.nranks);
  if (weftCommInitAll(comms.data(), o.nranks, nullptr) != weftSuccess) {
    fprintf(stderr, "weft-tune: communicator creation failed: %s\n", weftGetLastError(nullptr));
    exit(1);
  }
  const size_t count = bytes / sizeof(float);
  double best = 1e300;
  for (int rep = 0; rep < o.reps; rep++) {
    std::vector<double> perRank(o.nranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < o.nranks; r++)
      threads.emplace_back([&, r] {
        std::vector<float> in(count, 1.0f + r), out(count);
        weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, comms[r], nullptr);  // warm-up
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; i++)
          if (weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, comms[r], nullptr) != weftSuccess) {
            fprintf(stderr, "weft-tune: AllReduce failed on rank %d\n", r);
            exit(1);
          }
        perRank[r] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
      });
    for (auto& t : threads) t.join();
    best = std::min(best, *std::max_element(perRank.begin(), perRank.end()));
  }
  for (weftComm_t c : comms) weftCommDestroy(c);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (!getenv("WEFT_SOCKET_IFNAME")) setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  if (o.socket) setenv("WEFT_SHM_DISABLE", "1", 1);
  unsetenv("WEFT_TUNE_FILE");

  const Algo algos[] = {Algo::Ring, Algo::Tree, Algo::DoubleTree};
  double tSmall[3], tLarge[3];
  for (Algo a : algos) {
    int i = static_cast<int>(a);
    tSmall[i] = timeAllReduce(o, a, o.small, 200);
    tLarge[i] = timeAllReduce(o, a, o.large, 5);
    printf("# measured %-10s %8zu B: %10.2f us   %10zu B: %10.2f us\n", weft::algo::algoName(a), o.small, tSmall[i],
           o.large, tLarge[i]);
  }

  // One host, n ranks: the model in algorithms/cost_model.cc. The ring fixes
  // the link constants (no fixed cost of its own); the trees get a fixed cost
  // and a bytes factor on top of those links.
  weft::algo::CostInputs in = weft::defaultCostInputs(o.nranks, o.socket ? 2 : 1);
  weft::algo::LinkParams& link = o.socket ? in.inter : in.intra;
  const int ring = static_cast<int>(Algo::Ring);
  auto probe = [&](size_t bytes) {
    weft::algo::CostInputs c = in;
    c.bytes = bytes;
    return c;
  };
  link.latencyUs = 1.0;
  link.bandwidthGBs = 1.0;
  if (o.socket) in.intra = link;  // only the network is in play
  double latPerUnit = weft::algo::latencyTermUs(Coll::AllReduce, Algo::Ring, probe(o.small));
  link.latencyUs = tSmall[ring] / latPerUnit;
  if (o.socket) in.intra.latencyUs = link.latencyUs;
  double bytesAt1 = weft::algo::bytesTermUs(Coll::AllReduce, Algo::Ring, probe(o.large));
  double ringBytesUs = std::max(tLarge[ring] - weft::algo::latencyTermUs(Coll::AllReduce, Algo::Ring, probe(o.large)),
                                1e-3);
  link.bandwidthGBs = bytesAt1 / ringBytesUs;
  if (o.socket) in.intra.bandwidthGBs = link.bandwidthGBs;
  for (Algo a : {Algo::Tree, Algo::DoubleTree}) {
    int i = static_cast<int>(a);
    double lat = weft::algo::latencyTermUs(Coll::AllReduce, a, probe(o.small));
    in.baseUs[i] = std::max(0.0, tSmall[i] - lat);
    double bytesUs = weft::algo::bytesTermUs(Coll::AllReduce, a, probe(o.large));
    double measured = tLarge[i] - in.baseUs[i] - weft::algo::latencyTermUs(Coll::AllReduce, a, probe(o.large));
    in.bwScale[i] = std::max(measured, 1e-3) / std::max(bytesUs, 1e-9);
  }

  printf("# fitted: %s latency %.3f us/hop, bandwidth %.3f GB/s\n", o.socket ? "network" : "shm", link.latencyUs,
         link.bandwidthGBs);
  printf("%12s", "size");
  for (Algo a : algos) printf(" %12s", weft::algo::algoName(a));
  printf("   (model after fit, us)\n");
  for (size_t b = 8; b <= (size_t(1) << 32); b *= 8) {
    printf("%12zu", b);
    for (Algo a : algos) printf(" %12.2f", weft::algo::estimateUs(Coll::AllReduce, a, probe(b)));
    printf("\n");
  }
  char comment[256];
  snprintf(comment, sizeof(comment), "measured by weft-tune with %d thread ranks over %s, sizes %zu and %zu bytes",
           o.nranks, o.socket ? "sockets" : "shared memory", o.small, o.large);
  try {
    weft::saveTuneFile(o.out, in, comment);
  } catch (const std::exception& e) {
    fprintf(stderr, "weft-tune: %s\n", e.what());
    return 1;
  }
  printf("# wrote %s\n", o.out.c_str());
  return 0;
}
