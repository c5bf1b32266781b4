// Shared-memory transport: ranks on one host (shm_transport.cc).
#pragma once

#include <string>

#include "src/topology/comm_topo.h"

namespace weft {

// Whether shared memory joins a pair, and why (not): never with
// WEFT_SHM_DISABLE set (`disabled`), else exactly when both ranks are on
// one host. `kind`: what the topology says of the pair (GPUs that could use
// peer-to-peer still move host buffers through shared memory: the reason
// says so). Pure.
bool shmCanJoin(bool disabled, bool sameHost, topo::PeerTopoKind kind, std::string* why);

}  // namespace weft
