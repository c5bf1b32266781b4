// What every rank of a weft-doctor run does: say who it is and which
// transport joins it to each peer, time the links between hosts in rounds,
// sweep AllReduce and AllGather, read its host's counters around that (the
// lowest rank of each host), and send it all to rank 0, which writes the
// report, the files and the verdict (output.h).
#pragma once

#include <string>

#include "tools/weft-doctor/options.h"
#include "weft/weft.h"

namespace weft::doctor {

// Runs one rank on an initialised communicator; returns the run's exit
// status, the same on every rank. Throws std::runtime_error when a weft
// call fails (the caller ends the process: the other ranks then see a dead
// peer, as with the perf binaries).
int runRank(const Options& o, weftComm_t comm);

// What each rank of this process is doing now ("rank 3: link host1 -> host2
// (sample 2)"), one line each: said when the run is stopped for taking too long.
std::string currentPhases();

}  // namespace weft::doctor
