// Checks of the bootstrap's messages (wire.h), apart from the I/O.
#include <cstring>
#include <string>
#include <vector>

#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "src/util/sha256.h"

namespace weft::bootstrap_wire {

std::string uniqueIdProblem(const UniqueIdLayout& l) {
  if (l.magic != kIdMagic) return "bad magic";
  if (l.version != kVersion) return "version " + std::to_string(l.version) + ", expected " + std::to_string(kVersion);
  if (l.root.empty()) return "no root address";
  return std::string();
}

std::string rootHelloProblem(const RootHello& h) {
  if (h.magic != kRootHelloMagic) return "bad magic (not a weft bootstrap hello)";
  if (h.version != kVersion) return "version " + std::to_string(h.version) + ", expected " + std::to_string(kVersion);
  if (h.nranks <= 0 || h.nranks > kMaxRanks || h.rank < 0 || h.rank >= h.nranks || h.listen.empty())
    return "claims rank " + std::to_string(h.rank) + " of " + std::to_string(h.nranks);
  return std::string();
}

std::string peerHelloProblem(const PeerHello& h, int self, int nranks) {
  if (h.magic != kPeerHelloMagic) return "bad magic (not a weft bootstrap hello)";
  if (h.version != kVersion) return "version " + std::to_string(h.version);
  if (h.nranks != nranks || h.fromRank < 0 || h.fromRank >= nranks || h.fromRank == self)
    return "claims rank " + std::to_string(h.fromRank) + " of " + std::to_string(h.nranks);
  return std::string();
}

std::string frameHeaderProblem(const FrameHeader& h) {
  if (h.bytes > kMaxFrameBytes)
    return "a " + std::to_string(h.bytes) + "-byte frame (limit " + std::to_string(kMaxFrameBytes) + ")";
  return std::string();
}

size_t rootReplyTableEntries(const RootReply& r, int nranks) {
  return r.status == kRootOk && r.nranks == nranks ? static_cast<size_t>(nranks) : 0;
}

Secret derivePeerKey(const Secret& secret, int32_t jobNonce, const std::vector<SocketAddress>& table) {
  static const char kLabel[] = "weft bootstrap peer key v1";
  HmacSha256 mac(secret.data(), secret.size());
  mac.update(kLabel, sizeof kLabel).update(&jobNonce, sizeof jobNonce);
  mac.update(table.data(), table.size() * sizeof(SocketAddress));
  const Digest256 d = mac.finish();
  Secret key;
  std::memcpy(key.data(), d.data(), key.size());
  return key;
}

namespace {

const char* rootStatusText(int32_t status) {
  switch (status) {
    case kRootNranksMismatch: return "nranks differs from the other ranks'";
    case kRootDuplicateRank:
      return "two processes claimed the same rank (a duplicate launch, or a process holding the secret that "
             "impersonates a rank; the root's log names the rank and both addresses), so the root stopped the set-up";
    case kRootTimedOut: return "the root timed out before every rank joined";
    case kRootOutOfResources:
      return "the root's process ran out of descriptors or threads while the ranks joined (raise ulimit -n / "
             "ulimit -u where rank 0 runs; its log names the limit and its value)";
  }
  return "unknown status";
}

}  // namespace

void checkRootReply(const RootReply& r, int rank, int nranks, const std::string& rootName) {
  if (r.magic != kRootReplyMagic) raise(weftRemoteError, "bootstrap rank %d: %s sent garbage", rank, rootName.c_str());
  if (r.status != kRootOk)
    raise(r.status == kRootTimedOut         ? weftTimeout
          : r.status == kRootOutOfResources ? weftSystemError
                                            : weftInvalidArgument,
          "bootstrap rank %d of %d: %s: %s", rank, nranks, rootName.c_str(), rootStatusText(r.status));
  if (r.nranks != nranks)
    raise(weftInternalError, "bootstrap rank %d: root answered for %d ranks, expected %d", rank, r.nranks, nranks);
}

}  // namespace weft::bootstrap_wire
