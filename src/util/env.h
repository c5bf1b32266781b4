// Typed access to WEFT_* environment variables. Values are read when asked
// (tests change them between communicators); a malformed value is an error
// naming the variable, never a silent default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace weft {

std::optional<std::string> envString(const char* name);
// Integer with optional K/M/G suffix (powers of 1024). Throws weftInvalidArgument
// on garbage.
int64_t envInt(const char* name, int64_t defaultValue);
bool envBool(const char* name, bool defaultValue);

}  // namespace weft
