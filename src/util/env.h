// Parsing of WEFT_* values, and the direct environment reads that predate
// src/util/settings.h. New code reads settings through settings.h; these
// readers stay only until the last callers (listed in
// tests/settings/settings_reads_test.cc) move over.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace weft {

// Integer with optional K/M/G suffix (powers of 1024), optionally followed
// by B or iB. where is appended to error messages (e.g. " (set in FILE line
// N)"). Throws weftInvalidArgument naming the variable on garbage.
int64_t parseIntValue(const char* name, const std::string& text, const std::string& where);
// 1/true/yes/on or 0/false/no/off, any case.
bool parseBoolValue(const char* name, const std::string& text, const std::string& where);

// The environment only (no settings files); empty counts as unset.
std::optional<std::string> envString(const char* name);
int64_t envInt(const char* name, int64_t defaultValue);
bool envBool(const char* name, bool defaultValue);

}  // namespace weft
