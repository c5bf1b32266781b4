// The WEFT_* values (src/util/settings.h): the first byte chooses a way in,
// the second a row of the settings table; the rest is the value.
//   way 0: the value through the row's own parser (integer, boolean, and
//          the string rows' readers: algorithm and protocol lists, the
//          root address, HCA and interface filters, GDR level, signal)
//   way 1: the value in the environment, read by a Config snapshot
//   way 2: the rest as a settings file (NAME=value lines)
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "algorithms/protocols.h"
#include "algorithms/selector.h"
#include "src/core/diagnose.h"
#include "src/util/env.h"
#include "src/util/error.h"
#include "src/util/settings.h"
#include "src/util/socket.h"
#include "tests/fuzz/fuzz_common.h"
#include "transports/ib/gdr_decision.h"
#include "transports/ib/ib_hca_filter.h"

using namespace weft;

namespace {

void parseAsRow(const settings::Info& row, const std::string& v) {
  switch (row.type) {
    case settings::Type::Int: (void)parseIntValue(row.name, v, ""); return;
    case settings::Type::Bool: (void)parseBoolValue(row.name, v, ""); return;
    case settings::Type::String: break;
  }
  const std::string name = row.name;
  if (name == "WEFT_ALGO") (void)algo::parseAlgoFilter(v);
  else if (name == "WEFT_PROTO") (void)algo::parseProtoFilter(v);
  else if (name == "WEFT_COMM_ID") (void)SocketAddress::parse(v, row.name).str();
  else if (name == "WEFT_IB_HCA") (void)ib::hcaFilterAccepts(ib::parseHcaFilter(v), "mlx5_0", 1);
  else if (name == "WEFT_NET_GDR_LEVEL") (void)ib::parseGdrLevel(v);
  else if (name == "WEFT_DIAGNOSE_SIGNAL") (void)parseDiagnoseSignal(v);
  else if (name == "WEFT_SOCKET_IFNAME") {
    (void)interfaceMatches(v, "eth0");
    (void)interfaceMatches(v, "lo");
  }
}

void readAll(const settings::Config& c) {
  for (int i = 0; i < settings::kCount; ++i) {
    const auto id = static_cast<settings::Id>(i);
    try {
      switch (settings::info(id).type) {
        case settings::Type::Int: (void)c.get(settings::IntSetting{id}); break;
        case settings::Type::Bool: (void)c.get(settings::BoolSetting{id}); break;
        case settings::Type::String: (void)c.get(settings::StringSetting{id}); break;
      }
    } catch (const Error&) {
    }
  }
  (void)c.sourceLines();
}

void viaEnvironment(const settings::Info& row, const std::string& v) {
  if (settings::Scope::Launch == row.scope) return;  // WEFT_CONF_FILE would name a file to read
  setenv(row.name, v.c_str(), 1);
  readAll(settings::Config::read());
  unsetenv(row.name);
}

// The settings file of way 2 lives in memory (/dev/shm) where there is one:
// on a disk file system, the truncate and close of every input started a
// write-back (perf: most kernel time went to block I/O from close).
std::string settingsFilePath() {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/weft-fuzz-settings-" + std::to_string(getpid()) + ".conf";
}

// The file is removed once read: a run (libFuzzer's or the CI replay's)
// leaves none behind, whichever way it ends, unless it ends in between.
void viaFile(const std::string& text) {
  static const std::string path = settingsFilePath();
  {
    std::ofstream f(path, std::ios::trunc);
    f << text;
  }
  settings::setFilePathsForTesting(std::vector<std::string>{path});
  const settings::Config c = settings::Config::read();
  unlink(path.c_str());
  (void)c.fileWarnings();
  readAll(c);
  settings::setFilePathsForTesting(std::vector<std::string>{});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const uint8_t way = in.byte();
  const settings::Info& row = settings::kTable[in.byte() % settings::kCount];
  std::string value = in.rest();
  try {
    switch (way % 3) {
      case 0: parseAsRow(row, value); break;
      case 1:
        value = value.substr(0, value.find('\0'));  // the environment cannot hold NUL
        viaEnvironment(row, value);
        break;
      default: viaFile(value); break;
    }
  } catch (const Error&) {
  }
  return 0;
}
