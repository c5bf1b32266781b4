// The cost model's constants as a file: written by tools/weft-tune after it
// measured them on this machine, read at communicator init from
// WEFT_TUNE_FILE. Lines are "key value"; '#' starts a comment.
#pragma once

#include <istream>
#include <string>

#include "algorithms/cost_model.h"

namespace weft {

// Overwrites the fields of *in that the file names. Throws weftInvalidArgument
// naming the file and line for an unknown key or a bad number.
void loadTuneFile(const std::string& path, algo::CostInputs* in);
// The parser behind loadTuneFile: `path` only names the text in errors.
void readTune(std::istream& text, const std::string& path, algo::CostInputs* in);
void saveTuneFile(const std::string& path, const algo::CostInputs& in, const std::string& comment);

}  // namespace weft
