// Topology files (WEFT_TOPO_FILE, JSON; src/topology/topo_file.h): a file
// from an operator or another machine. Whatever loads must dump and load
// back to the same text.
#include <cstdio>

#include "src/topology/topo_file.h"
#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace weft;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  topo::System sys;
  try {
    sys = topo::loadString(text);
  } catch (const Error&) {
    return 0;
  }
  const std::string dumped = topo::dumpString(sys);
  std::string again;
  try {
    again = topo::dumpString(topo::loadString(dumped));
  } catch (const Error& e) {
    fprintf(stderr, "a loaded topology does not load back: %s\n", e.what());
    abort();
  }
  WEFT_FUZZ_CHECK(again == dumped);
  return 0;
}
