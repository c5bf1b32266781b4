// How this process was launched: alone, by mpirun, or by a launcher that
// sets rank variables (weft-run, torchrun, Slurm, mpirun without MPI support).
#pragma once

#include <functional>
#include <string>

namespace weft::bench {

struct LaunchInfo {
  int procRank = 0;
  int nProcs = 1;
  bool mpi = false;         // launched by an MPI launcher and built with MPI: use MPI for the id and results
  std::string rankSource;   // which variables gave the rank ("WEFT_RANK", ...), empty when alone
};

using EnvLookup = std::function<const char*(const char*)>;

// Reads, in order: WEFT_RANK/WEFT_NRANKS, OMPI_COMM_WORLD_RANK/SIZE,
// PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS, RANK/WORLD_SIZE. mpiBuilt:
// whether this binary was built with MPI; then an Open MPI, PMI or PMIx
// launch selects MPI. error is set when a pair is incomplete or invalid.
LaunchInfo detectLaunch(const EnvLookup& env, bool mpiBuilt, std::string* error);

}  // namespace weft::bench
