// Gloo's allreduce (ring, TCP device on 127.0.0.1) timed like the weft perf
// binaries and printed in the same format, so run.sh compares it line by
// line. Float sums, out-of-place. Ranks come from weft-run's variables and
// meet through a FileStore in <store dir> (one fresh directory per job).
//   weft-run -np 2 ./gloo_allreduce <store dir> <minBytes> <maxBytes> <iters>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "benchmarks/common/collective.h"
#include "benchmarks/common/format.h"
#include "benchmarks/common/options.h"

using namespace weft::bench;

namespace {

int envRank(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

void sumFloats(void* c, const void* a, const void* b, size_t n) { gloo::sum<float>(c, a, b, n); }

// Mean over ranks of a per-rank time, as the weft binaries report with -a 1.
double meanOverRanks(const std::shared_ptr<gloo::Context>& ctx, double value) {
  std::vector<double> in{value}, out(1);
  gloo::AllreduceOptions opts(ctx);
  opts.setInput(in.data(), 1);
  opts.setOutput(out.data(), 1);
  opts.setReduceFunction([](void* c, const void* a, const void* b, size_t n) { gloo::sum<double>(c, a, b, n); });
  opts.setTag(7);
  gloo::allreduce(opts);
  return out[0] / ctx->size;
}

}  // namespace

int main(int argc, char** argv) try {
  const int rank = envRank("WEFT_RANK"), n = envRank("WEFT_NRANKS");
  if (argc < 5 || rank < 0 || n < 1) {
    std::fprintf(stderr, "usage: weft-run -np N gloo_allreduce <store dir> <min> <max> <iters>\n");
    return 2;
  }
  const size_t minBytes = parseSize(argv[2]).value_or(8), maxBytes = parseSize(argv[3]).value_or(1 << 20);
  const int iters = std::atoi(argv[4]) > 0 ? std::atoi(argv[4]) : 10;

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";  // loopback only
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(argv[1]);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  ctx->setTimeout(std::chrono::seconds(300));
  ctx->connectFullMesh(store, device);

  std::vector<float> send(maxBytes / 4 + 16, 1.0f), recv(maxBytes / 4 + 16);
  if (rank == 0) std::printf("# Collective test starting: gloo_allreduce\n%s", resultHeader().c_str());
  double busSum = 0;
  int lines = 0;
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= 2) {
    const Shape shape = shapeFor(CollKind::AllReduce, bytes, 4, n);
    const size_t count = shape.paramCount;
    if (count == 0) {
      if (bytes == 0) break;
      continue;
    }
    // Options are built once per size (as a training loop would keep them),
    // so the timed loop measures the collective, not its set-up.
    gloo::AllreduceOptions opts(ctx);
    opts.setInput(send.data(), count);
    opts.setOutput(recv.data(), count);
    opts.setReduceFunction(sumFloats);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(1);
    gloo::allreduce(opts);  // warmup
    if (recv[0] != static_cast<float>(n) || recv[count - 1] != static_cast<float>(n)) {
      std::fprintf(stderr, "gloo_allreduce: wrong result %g at %zu bytes\n", recv[0], bytes);
      return 1;
    }
    gloo::BarrierOptions barrier(ctx);
    barrier.setTag(2);
    gloo::barrier(barrier);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) gloo::allreduce(opts);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iters;
    us = meanOverRanks(ctx, us);
    const double alg = us > 0 ? algBytes(CollKind::AllReduce, shape, 4, n) / 1e3 / us : 0;
    const double bus = alg * busFactor(CollKind::AllReduce, n);
    busSum += bus;
    ++lines;
    if (rank == 0) {
      std::printf("%s%s%s\n", resultPrefix(reportedBytes(CollKind::AllReduce, shape, 4), count, "float", "sum", -1).c_str(),
                  resultPart(us, alg, bus, -1).c_str(), resultPart(us, alg, bus, -1).c_str());
      std::fflush(stdout);
    }
  }
  if (rank == 0) std::printf("%s", resultFooter(0, lines ? busSum / lines : 0).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gloo_allreduce: %s\n", e.what());
  return 1;
}
