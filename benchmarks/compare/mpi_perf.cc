// Open MPI's MPI_Allreduce / MPI_Reduce_scatter_block / MPI_Allgather timed
// like the weft perf binaries and printed in the same format, so run.sh and
// weft-plot compare them line by line. Float sums, out-of-place only.
//   mpirun -np 4 ./mpi_perf allreduce|reduce_scatter|allgather <minBytes> <maxBytes> <iters>
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "benchmarks/common/collective.h"
#include "benchmarks/common/format.h"
#include "benchmarks/common/options.h"

using namespace weft::bench;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc < 5) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_perf allreduce|reduce_scatter|allgather <min> <max> <iters>\n");
    MPI_Finalize();
    return 2;
  }
  const std::string which = argv[1];
  const CollKind kind = which == "allreduce" ? CollKind::AllReduce
                        : which == "reduce_scatter" ? CollKind::ReduceScatter : CollKind::AllGather;
  const size_t minBytes = parseSize(argv[2]).value_or(8), maxBytes = parseSize(argv[3]).value_or(1 << 20);
  const int iters = std::atoi(argv[4]) > 0 ? std::atoi(argv[4]) : 10;
  std::vector<float> send(maxBytes / 4 + 16, 1.0f), recv(maxBytes / 4 + 16);
  if (rank == 0) std::printf("# Collective test starting: mpi_%s\n%s", which.c_str(), resultHeader().c_str());
  double busSum = 0;
  int lines = 0;
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= 2) {
    const Shape shape = shapeFor(kind, bytes, 4, n);
    const int count = static_cast<int>(shape.paramCount);
    auto once = [&] {
      if (kind == CollKind::AllReduce) MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (kind == CollKind::ReduceScatter) MPI_Reduce_scatter_block(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else MPI_Allgather(send.data(), count, MPI_FLOAT, recv.data(), count, MPI_FLOAT, MPI_COMM_WORLD);
    };
    once();
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) once();
    double us = (MPI_Wtime() - start) * 1e6 / iters;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    us /= n;
    const double alg = us > 0 ? algBytes(kind, shape, 4, n) / 1e3 / us : 0;
    const double bus = alg * busFactor(kind, n);
    busSum += bus;
    ++lines;
    if (rank == 0) {
      std::printf("%s%s%s\n", resultPrefix(reportedBytes(kind, shape, 4), shape.paramCount, "float",
                                           usesOp(kind) ? "sum" : "none", -1).c_str(),
                  resultPart(us, alg, bus, -1).c_str(), resultPart(us, alg, bus, -1).c_str());
    }
    if (bytes == 0) break;
  }
  if (rank == 0) std::printf("%s", resultFooter(0, lines ? busSum / lines : 0).c_str());
  MPI_Finalize();
  return 0;
}
