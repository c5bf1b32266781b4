// Who am I, as far as transport choice is concerned: a host hash (two ranks
// with the same hash may use shared memory) and a process hash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft {

struct PeerInfo;

// WEFT_HOSTID when set (so tests can pretend processes of one machine are on
// different hosts), else the hostname plus the kernel's boot id.
uint64_t hostHash();
uint64_t processHash();
std::string hostName();

// The calling thread's affinity into `mask` (kCpuMaskWords words, CPUs
// 0..1023); returns how many CPUs it holds (at least 1).
int ownCpuMask(uint64_t* mask);
// CPUs set in one kCpuMaskWords-word mask.
int cpuCount(const uint64_t* mask);
// CPUs in the union of the masks of the ranks on host `host`: what the
// host's ranks may run on together. 0 when none of them sent a mask.
int hostCpuCount(const std::vector<PeerInfo>& peers, uint64_t host);

uint64_t fnv1a(const void* data, size_t bytes, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace weft
