// Argument validation at the C API: every bad argument gets its documented
// result code, a message in weftGetLastError, and leaves user buffers alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/api/c_enum_calls.h"
#include "tests/collectives/thread_ranks.h"
#include "weft/weft.h"

namespace weft::test {
namespace {

constexpr unsigned char kPoison = 0xA5;
constexpr size_t kElems = 64;

class ApiArgs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A call that validation wrongly lets through waits for the other rank:
    // a short timeout turns that into a failure instead of a hang.
    setenv("WEFT_TIMEOUT_MS", "5000", 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
  void SetUp() override {
    ranks_ = std::make_unique<ThreadRanks>(2);
    ASSERT_EQ(ranks_->status(), weftSuccess);
    comm_ = ranks_->comm(0);
    send_.assign(kElems * 8 * 2, kPoison);
    recv_.assign(kElems * 8 * 2, kPoison);
  }
  void TearDown() override { ranks_.reset(); }

  // Runs a call that must fail with `want`, and checks that neither buffer
  // was written and that the failure left a message.
  void expectRejected(const char* what, weftResult_t want, const std::function<weftResult_t()>& call) {
    setLastErrorMarker();
    weftResult_t got = call();
    EXPECT_EQ(got, want) << what << ": got " << weftGetErrorString(got);
    EXPECT_TRUE(untouched(send_)) << what << ": send buffer written";
    EXPECT_TRUE(untouched(recv_)) << what << ": recv buffer written";
    EXPECT_STRNE(weftGetLastError(nullptr), "") << what;
    EXPECT_STRNE(weftGetLastError(nullptr), marker_.c_str()) << what << ": the failure left no message of its own";
  }
  static bool untouched(const std::vector<unsigned char>& b) {
    for (unsigned char c : b)
      if (c != kPoison) return false;
    return true;
  }
  // Leaves a known message as this thread's last error, so that the next
  // failure can be seen to replace it.
  void setLastErrorMarker() {
    EXPECT_EQ(weftGetVersion(nullptr), weftInvalidArgument);
    marker_ = weftGetLastError(nullptr);
  }

  void* s() { return send_.data(); }
  void* r() { return recv_.data(); }

  std::unique_ptr<ThreadRanks> ranks_;
  weftComm_t comm_ = nullptr;
  std::vector<unsigned char> send_, recv_;
  std::string marker_;
};

// Every entry point that takes a communicator, with `comm` substituted.
std::vector<std::pair<const char*, std::function<weftResult_t(weftComm_t)>>> callsOn(void* s, void* r) {
  return {
      {"AllReduce", [=](weftComm_t c) { return weftAllReduce(s, r, kElems, weftFloat32, weftSum, c, nullptr); }},
      {"ReduceScatter", [=](weftComm_t c) { return weftReduceScatter(s, r, kElems / 2, weftFloat32, weftSum, c, nullptr); }},
      {"AllGather", [=](weftComm_t c) { return weftAllGather(s, r, kElems / 2, weftFloat32, c, nullptr); }},
      {"Broadcast", [=](weftComm_t c) { return weftBroadcast(s, r, kElems, weftFloat32, 0, c, nullptr); }},
      {"Bcast", [=](weftComm_t c) { return weftBcast(r, kElems, weftFloat32, 0, c, nullptr); }},
      {"Reduce", [=](weftComm_t c) { return weftReduce(s, r, kElems, weftFloat32, weftSum, 0, c, nullptr); }},
      {"AlltoAll", [=](weftComm_t c) { return weftAlltoAll(s, r, kElems / 2, weftFloat32, c, nullptr); }},
      {"Send", [=](weftComm_t c) { return weftSend(s, kElems, weftFloat32, 1, c, nullptr); }},
      {"Recv", [=](weftComm_t c) { return weftRecv(r, kElems, weftFloat32, 1, c, nullptr); }},
  };
}

TEST_F(ApiArgs, NullCommIsInvalidArgument) {
  for (auto& [name, call] : callsOn(s(), r())) expectRejected(name, weftInvalidArgument, [&] { return call(nullptr); });
  int x = 0;
  EXPECT_EQ(weftCommCount(nullptr, &x), weftInvalidArgument);
  EXPECT_EQ(weftCommUserRank(nullptr, &x), weftInvalidArgument);
  char report[64];
  EXPECT_EQ(weftCommDiagnose(nullptr, report, sizeof(report)), weftInvalidArgument);
  EXPECT_EQ(weftCommCuDevice(nullptr, &x), weftInvalidArgument);
  EXPECT_EQ(weftCommFinalize(nullptr), weftInvalidArgument);
  EXPECT_EQ(weftCommDestroy(nullptr), weftInvalidArgument);
  EXPECT_EQ(weftCommAbort(nullptr), weftInvalidArgument);
  weftResult_t async;
  EXPECT_EQ(weftCommGetAsyncError(nullptr, &async), weftInvalidArgument);
}

TEST_F(ApiArgs, DestroyedCommIsInvalidUsage) {
  weftComm_t dead = nullptr;
  ASSERT_EQ(weftCommInitAll(&dead, 1, nullptr), weftSuccess);
  ASSERT_EQ(weftCommDestroy(dead), weftSuccess);
  for (auto& [name, call] : callsOn(s(), r())) expectRejected(name, weftInvalidUsage, [&] { return call(dead); });
  int x = 0;
  EXPECT_EQ(weftCommCount(dead, &x), weftInvalidUsage);
  EXPECT_EQ(weftCommUserRank(dead, &x), weftInvalidUsage);
  char report[64];
  EXPECT_EQ(weftCommDiagnose(dead, report, sizeof(report)), weftInvalidUsage);
  EXPECT_EQ(weftCommCuDevice(dead, &x), weftInvalidUsage);
  EXPECT_EQ(weftCommFinalize(dead), weftInvalidUsage);
  EXPECT_EQ(weftCommDestroy(dead), weftInvalidUsage) << "double destroy";
  EXPECT_EQ(weftCommAbort(dead), weftInvalidUsage);
  weftRedOp_t op;
  float scalar = 2;
  EXPECT_EQ(weftRedOpCreatePreMulSum(&op, &scalar, weftFloat32, weftScalarHostImmediate, dead), weftInvalidUsage);
}

TEST_F(ApiArgs, NullBuffersWithCountAreInvalidArgument) {
  const size_t n = kElems;
  expectRejected("AllReduce null send", weftInvalidArgument,
                 [&] { return weftAllReduce(nullptr, r(), n, weftFloat32, weftSum, comm_, nullptr); });
  expectRejected("AllReduce null recv", weftInvalidArgument,
                 [&] { return weftAllReduce(s(), nullptr, n, weftFloat32, weftSum, comm_, nullptr); });
  expectRejected("ReduceScatter null recv", weftInvalidArgument,
                 [&] { return weftReduceScatter(s(), nullptr, n, weftFloat32, weftSum, comm_, nullptr); });
  expectRejected("AllGather null send", weftInvalidArgument,
                 [&] { return weftAllGather(nullptr, r(), n, weftFloat32, comm_, nullptr); });
  expectRejected("AlltoAll null recv", weftInvalidArgument,
                 [&] { return weftAlltoAll(s(), nullptr, n, weftFloat32, comm_, nullptr); });
  // Rank 0 is the root: it needs the send buffer of a Broadcast and the
  // receive buffer of a Reduce.
  expectRejected("Broadcast root null send", weftInvalidArgument,
                 [&] { return weftBroadcast(nullptr, r(), n, weftFloat32, 0, comm_, nullptr); });
  expectRejected("Broadcast null recv", weftInvalidArgument,
                 [&] { return weftBroadcast(s(), nullptr, n, weftFloat32, 0, comm_, nullptr); });
  expectRejected("Bcast null", weftInvalidArgument, [&] { return weftBcast(nullptr, n, weftFloat32, 0, comm_, nullptr); });
  expectRejected("Reduce root null recv", weftInvalidArgument,
                 [&] { return weftReduce(s(), nullptr, n, weftFloat32, weftSum, 0, comm_, nullptr); });
  expectRejected("Reduce null send", weftInvalidArgument,
                 [&] { return weftReduce(nullptr, r(), n, weftFloat32, weftSum, 0, comm_, nullptr); });
  expectRejected("Send null", weftInvalidArgument, [&] { return weftSend(nullptr, n, weftFloat32, 1, comm_, nullptr); });
  expectRejected("Recv null", weftInvalidArgument, [&] { return weftRecv(nullptr, n, weftFloat32, 1, comm_, nullptr); });
}

// Count 0 with NULL buffers is a valid no-op (both ranks call it).
TEST_F(ApiArgs, CountZeroWithNullBuffersSucceeds) {
  std::string err = ranks_->run([&](int rank) {
    weftComm_t c = ranks_->comm(rank);
    std::string e;
    auto expectOk = [&](const char* what, weftResult_t rc) {
      if (rc != weftSuccess) e += std::string(what) + " returned " + weftGetErrorString(rc) + "; ";
    };
    expectOk("AllReduce", weftAllReduce(nullptr, nullptr, 0, weftFloat32, weftSum, c, nullptr));
    expectOk("ReduceScatter", weftReduceScatter(nullptr, nullptr, 0, weftFloat32, weftSum, c, nullptr));
    expectOk("AllGather", weftAllGather(nullptr, nullptr, 0, weftFloat32, c, nullptr));
    expectOk("Broadcast", weftBroadcast(nullptr, nullptr, 0, weftFloat32, 1, c, nullptr));
    expectOk("Reduce", weftReduce(nullptr, nullptr, 0, weftFloat32, weftMax, 1, c, nullptr));
    expectOk("AlltoAll", weftAlltoAll(nullptr, nullptr, 0, weftFloat32, c, nullptr));
    weftGroupStart();
    weftSend(nullptr, 0, weftFloat32, 1 - rank, c, nullptr);
    weftRecv(nullptr, 0, weftFloat32, 1 - rank, c, nullptr);
    expectOk("Send/Recv group", weftGroupEnd());
    return e;
  });
  EXPECT_EQ(err, "");
}

// Out-of-range enum values come from C (c_enum_calls.c): in C++ an int
// outside an enum's range cannot even be made into the enum. Values past the
// enum's range (-1, 42, 99, INT_MIN) as well as the first value past the
// enumerators, at every entry point that takes a weftDataType_t, a
// weftRedOp_t or a weftScalarResidence_t.
TEST_F(ApiArgs, UnknownDataTypeAndOpAreInvalidArgument) {
  const size_t n = kElems;
  for (int bad : {42, -1, 99, int(weftNumTypes), INT32_MIN}) {
    std::string tag = "type " + std::to_string(bad);
    for (auto& [name, call] : std::vector<std::pair<const char*, std::function<weftResult_t()>>>{
             {"AllReduce", [&] { return cAllReduce(s(), r(), n, bad, weftSum, comm_); }},
             {"ReduceScatter", [&] { return cReduceScatter(s(), r(), 4, bad, weftSum, comm_); }},
             {"Reduce", [&] { return cReduce(s(), r(), n, bad, weftSum, 0, comm_); }},
             {"AllGather", [&] { return cAllGather(s(), r(), 4, bad, comm_); }},
             {"Broadcast", [&] { return cBroadcast(s(), r(), n, bad, 0, comm_); }},
             {"Bcast", [&] { return cBcast(r(), n, bad, 0, comm_); }},
             {"AlltoAll", [&] { return cAlltoAll(s(), r(), 4, bad, comm_); }},
             {"Send", [&] { return cSend(s(), n, bad, 1, comm_); }},
             {"Recv", [&] { return cRecv(r(), n, bad, 1, comm_); }},
             {"CompressorCreate", [&] { return cCompressorCreate(comm_, n, bad); }},
             {"ReducerCreate", [&] { return cReducerCreate(comm_, r(), n, bad); }}}) {
      expectRejected((tag + " " + name).c_str(), weftInvalidArgument, call);
      const std::string said = weftGetLastError(nullptr);
      EXPECT_NE(said.find("datatype " + std::to_string(bad)), std::string::npos) << tag << " " << name << ": " << said;
    }
  }
  for (int bad : {int(weftNumOps), 99, -3, -1, INT32_MIN, int(weftMaxRedOp)}) {
    std::string tag = "op " + std::to_string(bad);
    expectRejected((tag + " AllReduce").c_str(), weftInvalidArgument,
                   [&] { return cAllReduce(s(), r(), n, weftFloat32, bad, comm_); });
    expectRejected((tag + " ReduceScatter").c_str(), weftInvalidArgument,
                   [&] { return cReduceScatter(s(), r(), 4, weftFloat32, bad, comm_); });
    expectRejected((tag + " Reduce").c_str(), weftInvalidArgument,
                   [&] { return cReduce(s(), r(), n, weftFloat32, bad, 0, comm_); });
    EXPECT_NE(std::string(weftGetLastError(nullptr)).find("op " + std::to_string(bad)), std::string::npos)
        << weftGetLastError(nullptr);
    EXPECT_EQ(cRedOpDestroy(bad, comm_), weftInvalidArgument) << tag;
  }
  float scalar = 2.0f;
  int op = -7;
  for (int bad : {42, -1, int(weftNumTypes)})
    EXPECT_EQ(cRedOpCreatePreMulSum(&op, &scalar, bad, weftScalarHostImmediate, comm_), weftInvalidArgument) << bad;
  for (int bad : {2, -1, 99, int(weftScalarDevice)}) {
    EXPECT_EQ(cRedOpCreatePreMulSum(&op, &scalar, weftFloat32, bad, comm_), weftInvalidArgument) << bad;
    EXPECT_NE(std::string(weftGetLastError(nullptr)).find("residence " + std::to_string(bad)), std::string::npos)
        << weftGetLastError(nullptr);
  }
  EXPECT_EQ(op, -7) << "a refused PreMulSum wrote its op";
}

TEST_F(ApiArgs, RootAndPeerOutOfRangeAreInvalidArgument) {
  for (int root : {-1, 2, 1000}) {
    std::string tag = "root " + std::to_string(root);
    expectRejected((tag + " Broadcast").c_str(), weftInvalidArgument,
                   [&] { return weftBroadcast(s(), r(), kElems, weftFloat32, root, comm_, nullptr); });
    expectRejected((tag + " Bcast").c_str(), weftInvalidArgument,
                   [&] { return weftBcast(r(), kElems, weftFloat32, root, comm_, nullptr); });
    expectRejected((tag + " Reduce").c_str(), weftInvalidArgument,
                   [&] { return weftReduce(s(), r(), kElems, weftFloat32, weftSum, root, comm_, nullptr); });
    expectRejected((tag + " Send").c_str(), weftInvalidArgument,
                   [&] { return weftSend(s(), kElems, weftFloat32, root, comm_, nullptr); });
    expectRejected((tag + " Recv").c_str(), weftInvalidArgument,
                   [&] { return weftRecv(r(), kElems, weftFloat32, root, comm_, nullptr); });
  }
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("out of range"), std::string::npos)
      << weftGetLastError(nullptr);
}

TEST_F(ApiArgs, ByteCountOverflowIsInvalidArgument) {
  const size_t huge = SIZE_MAX / 2;
  expectRejected("AllReduce", weftInvalidArgument,
                 [&] { return weftAllReduce(s(), r(), huge, weftFloat32, weftSum, comm_, nullptr); });
  expectRejected("Broadcast", weftInvalidArgument,
                 [&] { return weftBroadcast(s(), r(), huge, weftFloat64, 0, comm_, nullptr); });
  expectRejected("Send", weftInvalidArgument, [&] { return weftSend(s(), huge, weftInt32, 1, comm_, nullptr); });
  expectRejected("Recv", weftInvalidArgument, [&] { return weftRecv(r(), huge, weftInt32, 1, comm_, nullptr); });
  // Fits in bytes for one rank, overflows once multiplied by nranks.
  const size_t perRank = SIZE_MAX / 4 / 2 + 1;
  expectRejected("AllGather x nranks", weftInvalidArgument,
                 [&] { return weftAllGather(s(), r(), perRank, weftFloat32, comm_, nullptr); });
  expectRejected("ReduceScatter x nranks", weftInvalidArgument,
                 [&] { return weftReduceScatter(s(), r(), perRank, weftFloat32, weftSum, comm_, nullptr); });
  expectRejected("AlltoAll x nranks", weftInvalidArgument,
                 [&] { return weftAlltoAll(s(), r(), perRank, weftFloat32, comm_, nullptr); });
}

TEST_F(ApiArgs, BadStreamIsInvalidArgument) {
  int notAStream = 0;
  expectRejected("AllReduce on a garbage stream", weftInvalidArgument,
                 [&] { return weftAllReduce(s(), r(), kElems, weftFloat32, weftSum, comm_, &notAStream); });
  weftStream_t gone;
  ASSERT_EQ(weftHostStreamCreate(&gone), weftSuccess);
  ASSERT_EQ(weftHostStreamDestroy(gone), weftSuccess);
  expectRejected("AllReduce on a destroyed stream", weftInvalidArgument,
                 [&] { return weftAllReduce(s(), r(), kElems, weftFloat32, weftSum, comm_, gone); });
  EXPECT_EQ(weftHostStreamQuery(gone), weftInvalidArgument);
  EXPECT_EQ(weftHostStreamSynchronize(gone), weftInvalidArgument);
  EXPECT_EQ(weftHostStreamDestroy(gone), weftInvalidArgument);
  EXPECT_EQ(weftHostStreamCreate(nullptr), weftInvalidArgument);
}

TEST_F(ApiArgs, PreMulSumMisuseIsInvalidArgument) {
  float scalar = 3.0f;
  weftRedOp_t op;
  ASSERT_EQ(weftRedOpCreatePreMulSum(&op, &scalar, weftFloat32, weftScalarHostImmediate, comm_), weftSuccess);
  EXPECT_GE(static_cast<int>(op), static_cast<int>(weftNumOps));
  expectRejected("PreMulSum(float32) used with float64", weftInvalidArgument,
                 [&] { return weftAllReduce(s(), r(), kElems, weftFloat64, op, comm_, nullptr); });
  expectRejected("PreMulSum(float32) used with int32", weftInvalidArgument,
                 [&] { return weftReduce(s(), r(), kElems, weftInt32, op, 0, comm_, nullptr); });
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("created for"), std::string::npos) << weftGetLastError(nullptr);
  // Ops belong to their communicator: rank 1's comm never created one.
  expectRejected("PreMulSum of another comm", weftInvalidArgument,
                 [&] { return weftAllReduce(s(), r(), kElems, weftFloat32, op, ranks_->comm(1), nullptr); });
  ASSERT_EQ(weftRedOpDestroy(op, comm_), weftSuccess);
  expectRejected("destroyed PreMulSum", weftInvalidArgument,
                 [&] { return weftAllReduce(s(), r(), kElems, weftFloat32, op, comm_, nullptr); });
  EXPECT_EQ(weftRedOpDestroy(op, comm_), weftInvalidArgument) << "double destroy";
  EXPECT_EQ(weftRedOpDestroy(weftSum, comm_), weftInvalidArgument) << "built-in op";
  // Creation arguments.
  EXPECT_EQ(weftRedOpCreatePreMulSum(nullptr, &scalar, weftFloat32, weftScalarHostImmediate, comm_),
            weftInvalidArgument);
  EXPECT_EQ(weftRedOpCreatePreMulSum(&op, nullptr, weftFloat32, weftScalarHostImmediate, comm_), weftInvalidArgument);
  EXPECT_EQ(weftRedOpCreatePreMulSum(&op, &scalar, weftFloat32, weftScalarHostImmediate, nullptr),
            weftInvalidArgument);
}

TEST_F(ApiArgs, GroupEndWithoutStartIsInvalidUsage) { EXPECT_EQ(weftGroupEnd(), weftInvalidUsage); }

TEST(ApiBasics, ErrorStringsVersionAndQueries) {
  for (int code = 0; code <= weftNumResults; code++) {
    const char* s = weftGetErrorString(static_cast<weftResult_t>(code));
    ASSERT_NE(s, nullptr) << code;
    EXPECT_GT(strlen(s), 0u) << code;
  }
  // Codes past the enum's range, as C may pass them (c_enum_calls.c).
  for (int code : {12345, -1, INT32_MIN, int(weftNumResults)})
    EXPECT_STREQ(cGetErrorString(code), "unknown result code") << code;
  // Codes a caller tells apart have texts that differ.
  EXPECT_STRNE(weftGetErrorString(weftInvalidArgument), weftGetErrorString(weftInvalidUsage));
  EXPECT_STRNE(weftGetErrorString(weftRemoteError), weftGetErrorString(weftTimeout));

  int version = 0;
  ASSERT_EQ(weftGetVersion(&version), weftSuccess);
  EXPECT_EQ(version, WEFT_VERSION_CODE);
  EXPECT_EQ(version, WEFT_MAJOR * 10000 + WEFT_MINOR * 100 + WEFT_PATCH);
  EXPECT_EQ(weftGetVersion(nullptr), weftInvalidArgument);

  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.status(), weftSuccess);
  for (int r = 0; r < 3; r++) {
    int count = -1, rank = -1, dev = 7;
    EXPECT_EQ(weftCommCount(ranks.comm(r), &count), weftSuccess);
    EXPECT_EQ(weftCommUserRank(ranks.comm(r), &rank), weftSuccess);
    EXPECT_EQ(weftCommCuDevice(ranks.comm(r), &dev), weftSuccess);
    EXPECT_EQ(count, 3);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(dev, -1) << "host communicator (devlist NULL) has no CUDA device";
    EXPECT_EQ(weftCommCount(ranks.comm(r), nullptr), weftInvalidArgument);
    EXPECT_EQ(weftCommUserRank(ranks.comm(r), nullptr), weftInvalidArgument);
    EXPECT_EQ(weftCommCuDevice(ranks.comm(r), nullptr), weftInvalidArgument);
    weftResult_t async = weftInternalError;
    EXPECT_EQ(weftCommGetAsyncError(ranks.comm(r), &async), weftSuccess);
    EXPECT_EQ(async, weftSuccess);
    EXPECT_EQ(weftCommGetAsyncError(ranks.comm(r), nullptr), weftInvalidArgument);
  }
}

TEST(ApiBasics, InitRankArgumentErrors) {
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  EXPECT_EQ(weftGetUniqueId(nullptr), weftInvalidArgument);
  weftComm_t comm = reinterpret_cast<weftComm_t>(0x1);
  EXPECT_EQ(weftCommInitRank(&comm, 0, id, 0), weftInvalidArgument);
  EXPECT_EQ(comm, nullptr) << "a failed init leaves *comm NULL";
  EXPECT_EQ(weftCommInitRank(&comm, 2, id, 2), weftInvalidArgument);
  EXPECT_EQ(weftCommInitRank(&comm, 2, id, -1), weftInvalidArgument);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("rank"), std::string::npos) << weftGetLastError(nullptr);
  EXPECT_EQ(weftCommInitRank(nullptr, 1, id, 0), weftInvalidArgument);
  weftConfig_t bad = WEFT_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(weftCommInitRankConfig(&comm, 1, id, 0, &bad), weftInvalidArgument);
  EXPECT_EQ(weftCommInitAll(nullptr, 2, nullptr), weftInvalidArgument);
  weftComm_t one;
  EXPECT_EQ(weftCommInitAll(&one, 0, nullptr), weftInvalidArgument);
}

}  // namespace
}  // namespace weft::test
