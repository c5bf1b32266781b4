#include "tools/weft-select/select_table.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "algorithms/collectives.h"
#include "algorithms/registry.h"

namespace weft::tools {
namespace {

void append(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void append(std::string& out, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  out += buf;
}

}  // namespace

std::string selectTable(plan::Coll coll, algo::CostInputs in, const algo::AlgoFilter& filter, int channels) {
  std::string out;
  const int n = in.nranks;
  append(out, "# %s, %d ranks on %d host(s), %d channel(s); links: intra %.2f us %.2f GB/s, inter %.2f us %.2f GB/s\n",
         plan::collName(coll), n, in.nHosts, channels, in.intra.latencyUs, in.intra.bandwidthGBs, in.inter.latencyUs,
         in.inter.bandwidthGBs);
  append(out, "%12s", "size(B)");
  for (int a = 0; a < algo::algoCount(); a++) append(out, " %11s(us) %9s", algo::algoName(algo::AlgoId(a)), "busbw");
  append(out, "  %s\n", "chosen (channels x slice bytes)");
  for (uint64_t bytes = 8; bytes <= (uint64_t(4) << 30); bytes *= 4) {
    in.bytes = bytes;
    append(out, "%12llu", static_cast<unsigned long long>(bytes));
    for (int a = 0; a < algo::algoCount(); a++) {
      double us = algo::estimateUs(coll, algo::AlgoId(a), in);
      if (std::isinf(us)) {
        append(out, " %15s %9s", "-", "-");
        continue;
      }
      double busbw = double(bytes) / (us * 1e3) * plan::collInfo(coll).busFactor(n);
      append(out, " %15.2f %9.3f", us, busbw);
    }
    algo::CallChoice c = algo::selectCall(coll, in, filter, plan::FifoGeometry{});
    append(out, "  %s (%d x %llu)\n", algo::algoName(c.algo), c.shape.nChannels,
           static_cast<unsigned long long>(c.shape.sliceBytes));
  }
  return out;
}

}  // namespace weft::tools
