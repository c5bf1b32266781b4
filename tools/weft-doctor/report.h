// The readable report rank 0 prints.
#pragma once

#include <string>

#include "tools/weft-doctor/result.h"

namespace weft::doctor {

std::string reportText(const Result& r);

}  // namespace weft::doctor
