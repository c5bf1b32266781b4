// The bootstrap root: a thread that gathers every rank's hello and answers
// each with the table of all ranks' listen addresses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/handshake.h"
#include "src/util/clock.h"
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

// Ends the current wait of the root this process serves at `addr` now
// rather than at its deadline: the first call the wait for ranks (the ranks
// that joined hear it timed out), the next the late grace. For a caller that
// knows no further rank will come (a test harness); nothing when no root
// serves `addr`.
void endBootstrapRootWait(const SocketAddress& addr);

// A rank's side: the root's answer on `fd`, the address table when every
// rank joined (and the set-up's nonce in *jobNonce); else throws naming why.
std::vector<SocketAddress> readRootReply(int fd, handshake::StreamMac& mac, int rank, int nranks, Deadline deadline,
                                         int64_t timeoutMs, const std::string& rootName, int32_t* jobNonce);

}  // namespace weft
