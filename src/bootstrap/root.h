// The bootstrap root: a thread that gathers every rank's hello and answers
// each with the table of all ranks' listen addresses.
#pragma once

#include <cstdint>

#include "src/bootstrap/bootstrap.h"
#include "src/util/socket.h"

namespace weft {

// Starts a root listening on `addr` (port 0: ephemeral) and returns the bound
// address. The thread is detached: it ends once all ranks were answered or
// timeoutMs passed, whichever comes first. After a timeout it still answers
// ranks that connect within lateGraceMs with a signed "timed out" (a rank
// that came late then hears why instead of a refused connection).
inline constexpr int64_t kRootLateGraceMs = 1000;
SocketAddress startBootstrapRoot(const SocketAddress& addr, const Secret& secret, int64_t timeoutMs,
                                 int64_t lateGraceMs = kRootLateGraceMs);

// Whether a root started by this process is still serving `addr`.
bool bootstrapRootRunningAt(const SocketAddress& addr);

}  // namespace weft
