// The unique id: where the root listens and the secret every rank proves.
//
// WEFT_COMM_ID="<ip>:<port>": every process may build its own id without
// handing one around, so such ids must agree. They carry the address, the
// kRootAtRank0 flag (no root is started here; rank 0's join starts it) and a
// secret derived from the address and WEFT_COMM_SECRET. That secret is only
// as strong as WEFT_COMM_SECRET: without it, it merely guards against
// accidental cross-talk (and a warning says so). Ids made without
// WEFT_COMM_ID carry a random secret.
#include <cstring>
#include <mutex>
#include <string>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/root.h"
#include "src/bootstrap/wire.h"
#include "src/util/settings.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/sha256.h"

namespace weft {

using namespace bootstrap_wire;

// Keyed by WEFT_COMM_SECRET when set, so only holders of that value can
// compute it. Without it the secret follows from the (public) address.
static Secret secretForCommId(const SocketAddress& root) {
  const std::string key = settings::get(settings::kCommSecret).value_or("");
  if (key.empty()) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      WEFT_WARN("WEFT_COMM_ID is set without WEFT_COMM_SECRET: the communicator's secret follows from the root's "
                "address, so any process that can reach it can join or listen in; give every rank of the job the "
                "same random WEFT_COMM_SECRET");
    });
  }
  const std::string text = "weft-comm-id|" + root.str();
  HmacSha256 h(key.data(), key.size());
  Digest256 d = h.update(text.data(), text.size()).finish();
  Secret s{};
  memcpy(s.data(), d.data(), s.size());
  return s;
}

void createUniqueId(weftUniqueId* id, int64_t timeoutMs) {
  if (!id) raise(weftInvalidArgument, "weftGetUniqueId: uniqueId is NULL");
  UniqueIdLayout l;
  memset(&l, 0, sizeof(l));
  l.magic = kIdMagic;
  l.version = kVersion;
  Secret secret;
  if (auto commId = settings::get(settings::kCommId)) {
    l.root = SocketAddress::parse(*commId, "WEFT_COMM_ID");
    l.flags |= kRootAtRank0;
    secret = secretForCommId(l.root);
    WEFT_INFO(kBootstrap, "unique id for WEFT_COMM_ID=%s (rank 0 runs the root)", l.root.str().c_str());
  } else {
    randomBytes(secret.data(), secret.size());
    NetInterface nic = chooseInterface();
    l.root = startBootstrapRoot(nic.addr, secret, timeoutMs);
    WEFT_INFO(kBootstrap, "unique id: root on %s (%s)", l.root.str().c_str(), nic.name.c_str());
  }
  memcpy(l.secret, secret.data(), secret.size());
  memset(id->internal, 0, sizeof(id->internal));
  memcpy(id->internal, &l, sizeof(l));
}

Secret uniqueIdSecret(const weftUniqueId& id) {
  UniqueIdLayout l;
  memcpy(&l, id.internal, sizeof(l));
  Secret s;
  memcpy(s.data(), l.secret, s.size());
  return s;
}

}  // namespace weft
