// WEFT_SLICE_BYTES / WEFT_CALL_CHANNELS pin the per-call shape: calls run
// with pieces much smaller than the FIFO slot and stay exact; bad values are
// refused at init.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace weft::test {
namespace {

struct EnvGuard {
  std::vector<std::string> names;
  void set(const char* n, const char* v) {
    setenv(n, v, 1);
    names.push_back(n);
  }
  ~EnvGuard() {
    for (auto& n : names) unsetenv(n.c_str());
  }
};

TEST(CallShape, SmallSlicesAndSeveralChannelsStayExact) {
  EnvGuard env;
  env.set("WEFT_NCHANNELS", "4");
  env.set("WEFT_CALL_CHANNELS", "3");
  env.set("WEFT_SLICE_BYTES", "200");  // rounded down to 192: 48 floats per piece
  for (const char* algo : {"ring", "binarytree", "tree"}) {
    env.set("WEFT_ALGO", (std::string("allreduce:") + algo).c_str());
    const int n = 4;
    std::vector<weftComm_t> comms(n);
    ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess);
    const size_t count = 10007;
    std::vector<std::thread> threads;
    std::vector<long> wrong(n);
    for (int r = 0; r < n; r++)
      threads.emplace_back([&, r] {
        std::vector<int32_t> in(count), out(count, -1), bc(count);
        for (size_t i = 0; i < count; i++) in[i] = int32_t((i * 31 + r * 7) % 1000);
        ASSERT_EQ(weftAllReduce(in.data(), out.data(), count, weftInt32, weftSum, comms[r], nullptr), weftSuccess);
        for (size_t i = 0; i < count; i++) {
          int32_t expect = 0;
          for (int q = 0; q < n; q++) expect += int32_t((i * 31 + q * 7) % 1000);
          wrong[r] += out[i] != expect;
        }
        for (size_t i = 0; i < count; i++) bc[i] = r == 1 ? in[i] : -1;
        ASSERT_EQ(weftBroadcast(bc.data(), bc.data(), count, weftInt32, 1, comms[r], nullptr), weftSuccess);
        for (size_t i = 0; i < count; i++) wrong[r] += bc[i] != int32_t((i * 31 + 7) % 1000);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; r++) EXPECT_EQ(wrong[r], 0) << algo << " rank " << r;
    for (weftComm_t c : comms) weftCommDestroy(c);
  }
}

TEST(CallShape, BadValuesAreRefusedAtInit) {
  for (auto [name, value] : std::vector<std::pair<const char*, const char*>>{
           {"WEFT_SLICE_BYTES", "32"}, {"WEFT_SLICE_BYTES", "1073741824"}, {"WEFT_CALL_CHANNELS", "2"}}) {
    EnvGuard env;
    env.set(name, value);
    std::vector<weftComm_t> comms(2);
    EXPECT_EQ(weftCommInitAll(comms.data(), 2, nullptr), weftInvalidArgument) << name << "=" << value;
    EXPECT_NE(std::string(weftGetLastError(nullptr)).find(name), std::string::npos) << weftGetLastError(nullptr);
  }
}

}  // namespace
}  // namespace weft::test
