// MPI glue, compiled in only when CMake found MPI (WEFT_BENCH_MPI).
#include "benchmarks/common/team.h"

#ifdef WEFT_BENCH_MPI
// The C API only: Open MPI would otherwise pull in its C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace weft::bench {

#ifdef WEFT_BENCH_MPI
namespace {

class MpiCrossProcess final : public CrossProcess {
 public:
  void allReduce(double* values, int n, Combine how) override {
    MPI_Op op = how == Combine::Sum ? MPI_SUM : how == Combine::Min ? MPI_MIN : MPI_MAX;
    MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, op, MPI_COMM_WORLD);
  }
  void allGather(const void* mine, size_t bytes, void* all) override {
    MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD);
  }
};

}  // namespace

bool mpiAvailable() { return true; }
std::unique_ptr<CrossProcess> makeMpiCrossProcess() { return std::make_unique<MpiCrossProcess>(); }
void mpiInit(int* argc, char*** argv) {
  int provided;
  // Only one thread per process (the team leader) calls MPI, one call at a time.
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
}
void mpiFinalize() { MPI_Finalize(); }
void mpiBroadcastBytes(void* data, size_t bytes, int root) {
  MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
}
#else
bool mpiAvailable() { return false; }
std::unique_ptr<CrossProcess> makeMpiCrossProcess() { return nullptr; }
void mpiInit(int*, char***) {}
void mpiFinalize() {}
void mpiBroadcastBytes(void*, size_t, int) {}
#endif

}  // namespace weft::bench
