// Who am I, as far as transport choice is concerned: a host hash (two ranks
// with the same hash may use shared memory) and a process hash.
#pragma once

#include <cstdint>
#include <string>

namespace weft {

// WEFT_HOSTID when set (so tests can pretend processes of one machine are on
// different hosts), else the hostname plus the kernel's boot id.
uint64_t hostHash();
uint64_t processHash();
std::string hostName();

uint64_t fnv1a(const void* data, size_t bytes, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace weft
