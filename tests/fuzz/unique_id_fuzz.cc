// The unique id: 128 bytes an application hands from rank to rank (often
// through a file, a store or MPI), read by weftCommInitRank.
#include <cstdio>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace weft;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weftUniqueId id;
  memset(&id, 0, sizeof(id));
  if (size) memcpy(id.internal, data, std::min(size, sizeof(id.internal)));
  bootstrap_wire::UniqueIdLayout l;
  memcpy(&l, id.internal, sizeof(l));
  const std::string bad = bootstrap_wire::uniqueIdProblem(l);
  if (bad.empty()) {
    // An accepted id names a usable address: printing it must work.
    WEFT_FUZZ_CHECK(!l.root.str().empty());
    WEFT_FUZZ_CHECK(l.root.length() > 0);
  }
  Secret s = uniqueIdSecret(id);
  WEFT_FUZZ_CHECK(memcmp(s.data(), l.secret, s.size()) == 0);
  return 0;
}
