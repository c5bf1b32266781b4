// The unique id: where the root listens and the secret every rank proves.
//
// WEFT_COMM_ID="<ip>:<port>": every process may build its own id without
// handing one around, so such ids must agree. They carry the address, the
// kRootAtRank0 flag (no root is started here; rank 0's join starts it) and a
// secret derived from the address and WEFT_COMM_SECRET. That secret is only
// as strong as WEFT_COMM_SECRET: without it, it merely guards against
// accidental cross-talk. Ids made without WEFT_COMM_ID carry a random secret.
#include <cstring>
#include <string>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/root.h"
#include "src/bootstrap/wire.h"
#include "src/util/settings.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

using namespace bootstrap_wire;

// Two independent 64-bit mixes of the text make 16 bytes.
static Secret secretFromText(const std::string& text) {
  Secret s{};
  for (int half = 0; half < 2; ++half) {
    uint64_t h = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(half + 1);
    for (unsigned char c : text) {
      h ^= c;
      h *= 0x100000001B3ull;
      h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    memcpy(s.data() + 8 * half, &h, 8);
  }
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
    secret = secretFromText("weft-comm-id|" + l.root.str() + "|" + settings::get(settings::kCommSecret).value_or(""));
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
