#include "benchmarks/common/launch.h"

#include <cstdlib>

namespace weft::bench {
namespace {

bool parseNonNegative(const char* text, int* value) {
  if (!text || !*text) return false;
  char* end = nullptr;
  long parsed = std::strtol(text, &end, 10);
  if (*end != '\0' || parsed < 0 || parsed > 1 << 24) return false;
  *value = static_cast<int>(parsed);
  return true;
}

}  // namespace

LaunchInfo detectLaunch(const EnvLookup& env, bool mpiBuilt, std::string* error) {
  LaunchInfo info;
  static const char* const kPairs[][2] = {{"WEFT_RANK", "WEFT_NRANKS"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"},
                                          {"RANK", "WORLD_SIZE"}};
  for (const auto& pair : kPairs) {
    const char* rank = env(pair[0]);
    const char* size = env(pair[1]);
    if (!rank && !size) continue;
    if (!parseNonNegative(rank, &info.procRank) || !parseNonNegative(size, &info.nProcs) || info.nProcs < 1 ||
        info.procRank >= info.nProcs) {
      *error = std::string("invalid launch variables ") + pair[0] + "=" + (rank ? rank : "(unset)") + " " +
               pair[1] + "=" + (size ? size : "(unset)");
      return LaunchInfo{};
    }
    info.rankSource = pair[0];
    break;
  }
  const bool mpiLaunch = env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK");
  // WEFT_RANK wins over MPI: a user who sets it asked for the env path.
  info.mpi = mpiBuilt && mpiLaunch && info.rankSource != "WEFT_RANK";
  return info;
}

}  // namespace weft::bench
