// weft-select's table, apart from its command line so that tests can print
// it: for each size from 8 B to 4 GB, every registered algorithm's predicted
// time and bus bandwidth, and the selector's choice.
#pragma once

#include <string>

#include "algorithms/selector.h"

namespace weft::tools {

// `in` holds the communicator's inputs (in.bytes is set per row).
std::string selectTable(plan::Coll coll, algo::CostInputs in, const algo::AlgoFilter& filter, int channels);

}  // namespace weft::tools
