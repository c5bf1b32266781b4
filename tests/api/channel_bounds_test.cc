// The channel count: WEFT_NCHANNELS, raised to WEFT_MIN_NCHANNELS and capped
// at WEFT_MAX_NCHANNELS (NCCL's NCCL_MIN/MAX_NCHANNELS), where the config's
// minCTAs/maxCTAs, when set, take the variables' place.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "src/core/comm.h"
#include "src/util/settings.h"
#include "weft/weft.h"

namespace weft::test {
namespace {

struct Case {
  const char* nchannels;  // nullptr: unset
  const char* minVar;
  const char* maxVar;
  int minCTAs;  // WEFT_CONFIG_UNDEF_INT: unset
  int maxCTAs;
  int want;  // 0: init fails with weftInvalidArgument
};

constexpr int kUnset = WEFT_CONFIG_UNDEF_INT;
constexpr const char* kNames[] = {"WEFT_NCHANNELS", "WEFT_MIN_NCHANNELS", "WEFT_MAX_NCHANNELS"};

void setOrUnset(const char* name, const char* value) {
  if (value) setenv(name, value, 1);
  else unsetenv(name);
}

// One rank is enough: the count is chosen before any peer is contacted.
int channelsOf(const Case& c, weftResult_t* result) {
  setOrUnset(kNames[0], c.nchannels);
  setOrUnset(kNames[1], c.minVar);
  setOrUnset(kNames[2], c.maxVar);
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.minCTAs = c.minCTAs;
  config.maxCTAs = c.maxCTAs;
  weftUniqueId id;
  weftComm_t comm = nullptr;
  *result = weftGetUniqueId(&id);
  if (*result == weftSuccess) *result = weftCommInitRankConfig(&comm, 1, id, 0, &config);
  for (const char* n : kNames) unsetenv(n);
  int n = comm ? comm->nChannels : 0;
  if (comm) weftCommDestroy(comm);
  return n;
}

TEST(ChannelBounds, VariablesBoundTheCountAndTheConfigTakesTheirPlace) {
  const std::vector<Case> cases = {
      {nullptr, nullptr, nullptr, kUnset, kUnset, 1},  // the default
      {nullptr, "3", nullptr, kUnset, kUnset, 3},      // raised to the minimum
      {"6", nullptr, "4", kUnset, kUnset, 4},          // capped at the maximum
      {"2", "1", "8", kUnset, kUnset, 2},              // inside the bounds: unchanged
      {nullptr, "3", nullptr, 2, kUnset, 2},           // config minCTAs replaces the variable
      {"6", nullptr, "4", kUnset, 5, 5},               // config maxCTAs replaces the variable
      {nullptr, "20", nullptr, kUnset, kUnset, 0},     // beyond 16
      {nullptr, nullptr, "0", kUnset, kUnset, 0},      // below 1
  };
  for (const Case& c : cases) {
    weftResult_t r = weftSuccess;
    const int n = channelsOf(c, &r);
    const std::string what = std::string("NCHANNELS=") + (c.nchannels ? c.nchannels : "-") + " MIN=" +
                             (c.minVar ? c.minVar : "-") + " MAX=" + (c.maxVar ? c.maxVar : "-") +
                             " minCTAs=" + std::to_string(c.minCTAs) + " maxCTAs=" + std::to_string(c.maxCTAs);
    if (c.want == 0) {
      EXPECT_EQ(r, weftInvalidArgument) << what;
      EXPECT_NE(std::string(weftGetLastError(nullptr)).find("channel count"), std::string::npos)
          << weftGetLastError(nullptr);
    } else {
      EXPECT_EQ(r, weftSuccess) << what;
      EXPECT_EQ(n, c.want) << what;
    }
  }
}

}  // namespace
}  // namespace weft::test
