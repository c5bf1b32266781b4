// Every collective x type x op through the device interpreter, in place and
// out of place, at 16-byte-aligned and misaligned offsets, with two ranks
// sharing the GPU, compared byte for byte with the same calls on host
// buffers (the host executor). Inputs are 0, 1 or 2: with two ranks every
// result is exact in every type, whatever the order of the reduction.
// GPU_MATRIX_QUICK=1 (the gate's compute-sanitizer runs): a few types and
// ops on short buffers; GPU_MATRIX_RANKS=1: one rank (see below).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "src/kernels/functors.h"
#include "src/kernels/reduce.h"
#include "tests/gpu/gpu_util.h"

using namespace weft;

namespace {

enum class Coll { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AllToAll };
const char* collName(Coll c) {
  static const char* names[] = {"AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce", "AllToAll"};
  return names[static_cast<int>(c)];
}
bool reduces(Coll c) { return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce; }

bool quick() {
  const char* q = std::getenv("GPU_MATRIX_QUICK");
  return q && *q == '1';
}

void encode(weftDataType_t t, int v, unsigned char* p) {
  const float f = float(v);
  switch (t) {
    case weftFloat16: { uint16_t h = kernels::floatToHalf(f); memcpy(p, &h, 2); break; }
    case weftBfloat16: { uint16_t h = kernels::floatToBf16(f); memcpy(p, &h, 2); break; }
    case weftFloat8e4m3: *p = kernels::floatToE4m3(f); break;
    case weftFloat8e5m2: *p = kernels::floatToE5m2(f); break;
    case weftFloat32: memcpy(p, &f, 4); break;
    case weftFloat64: { double d = v; memcpy(p, &d, 8); break; }
    default: { uint64_t u = uint64_t(v); memcpy(p, &u, kernels::typeSize(t)); break; }  // little endian
  }
}

// GPU_MATRIX_RANKS=1 for compute-sanitizer, which runs kernels one at a
// time (two ranks' kernels wait for each other).
int ranksFromEnv() {
  const char* r = std::getenv("GPU_MATRIX_RANKS");
  return r && *r == '1' ? 1 : 2;
}
const int kRanks = ranksFromEnv();

struct Layout {
  size_t sendElems, recvElems;
};
Layout layoutOf(Coll c, size_t n) {
  switch (c) {
    case Coll::ReduceScatter: return {n * kRanks, n};
    case Coll::AllGather: return {n, n * kRanks};
    case Coll::AllToAll: return {n * kRanks, n * kRanks};
    default: return {n, n};
  }
}

// The pointers of rank k's call into its two buffers (send, recv).
std::pair<size_t, size_t> offsets(Coll c, int k, size_t n, bool inPlace, size_t mis, size_t bufElems) {
  const size_t recvAt = bufElems + mis;  // the receive buffer follows the send buffer
  if (!inPlace) return {mis, recvAt};
  if (c == Coll::ReduceScatter) return {recvAt, recvAt + k * n};
  if (c == Coll::AllGather) return {recvAt + k * n, recvAt};
  return {recvAt, recvAt};
}

weftResult_t call(Coll c, const void* s, void* r, size_t n, weftDataType_t t, weftRedOp_t op, weftComm_t comm,
                  weftStream_t st) {
  switch (c) {
    case Coll::AllReduce: return weftAllReduce(s, r, n, t, op, comm, st);
    case Coll::ReduceScatter: return weftReduceScatter(s, r, n, t, op, comm, st);
    case Coll::AllGather: return weftAllGather(s, r, n, t, comm, st);
    case Coll::Broadcast: return weftBroadcast(s, r, n, t, kRanks - 1, comm, st);
    case Coll::Reduce: return weftReduce(s, r, n, t, op, 0, comm, st);
    case Coll::AllToAll: return weftAlltoAll(s, r, n, t, comm, st);
  }
  return weftInternalError;
}

struct Fixture {
  std::vector<weftComm_t> comms = std::vector<weftComm_t>(kRanks);
  std::vector<cudaStream_t> streams = std::vector<cudaStream_t>(kRanks);
  std::vector<unsigned char*> dev = std::vector<unsigned char*>(kRanks);
  size_t bytes;
  explicit Fixture(size_t maxBytes) : bytes(maxBytes) {
    std::vector<int> devs(kRanks, 0);
    EXPECT_EQ(weftCommInitAll(comms.data(), kRanks, devs.data()), weftSuccess);
    for (int k = 0; k < kRanks; k++) {
      EXPECT_EQ(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking), cudaSuccess);
      EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev[k]), bytes), cudaSuccess);
    }
  }
  ~Fixture() {
    for (int k = 0; k < kRanks; k++) {
      (void)cudaFree(dev[k]);
      (void)cudaStreamDestroy(streams[k]);
      weftCommDestroy(comms[k]);
    }
  }
};

// One case on both executors; returns a description of the first
// difference, or "" when they agree.
std::string runCase(Fixture& f, Coll c, weftDataType_t t, weftRedOp_t op, bool inPlace, size_t mis, size_t n) {
  const size_t es = kernels::typeSize(t);
  const Layout L = layoutOf(c, n);
  const size_t bufElems = n * kRanks + 16;
  const size_t total = 2 * bufElems * es;
  std::vector<std::vector<unsigned char>> host(kRanks, std::vector<unsigned char>(total, 0xEE)), image;
  for (int k = 0; k < kRanks; k++) {
    auto [s, r] = offsets(c, k, n, inPlace, mis, bufElems);
    for (size_t i = 0; i < L.sendElems; i++) encode(t, int((i * 7 + k * 3) % 3), &host[k][(s + i) * es]);
    (void)r;
  }
  image = host;
  for (int k = 0; k < kRanks; k++)
    if (cudaMemcpy(f.dev[k], image[k].data(), total, cudaMemcpyHostToDevice) != cudaSuccess) return "upload failed";
  std::vector<weftResult_t> devRes(kRanks), hostRes(kRanks);
  weftGroupStart();
  for (int k = 0; k < kRanks; k++) {
    auto [s, r] = offsets(c, k, n, inPlace, mis, bufElems);
    devRes[k] = call(c, f.dev[k] + s * es, f.dev[k] + r * es, n, t, op, f.comms[k], f.streams[k]);
  }
  weftGroupEnd();
  weftGroupStart();
  for (int k = 0; k < kRanks; k++) {
    auto [s, r] = offsets(c, k, n, inPlace, mis, bufElems);
    hostRes[k] = call(c, host[k].data() + s * es, host[k].data() + r * es, n, t, op, f.comms[k], nullptr);
  }
  weftGroupEnd();
  for (int k = 0; k < kRanks; k++) {
    if (cudaStreamSynchronize(f.streams[k]) != cudaSuccess) return "stream failed";
    if (devRes[k] != hostRes[k])
      return "rank " + std::to_string(k) + ": device " + weftGetErrorString(devRes[k]) + ", host " +
             weftGetErrorString(hostRes[k]);
    if (devRes[k] != weftSuccess) return "refused";  // by both: counted, not compared
    if (cudaMemcpy(image[k].data(), f.dev[k], total, cudaMemcpyDeviceToHost) != cudaSuccess) return "download failed";
    if (c == Coll::Reduce && k != 0) continue;  // no result outside the root
    auto [s, r] = offsets(c, k, n, inPlace, mis, bufElems);
    for (size_t i = 0; i < L.recvElems * es; i++)
      if (image[k][r * es + i] != host[k][r * es + i])
        return "rank " + std::to_string(k) + " byte " + std::to_string(i) + " of the result: device " +
               std::to_string(image[k][r * es + i]) + " host " + std::to_string(host[k][r * es + i]);
    (void)s;
  }
  return "";
}

class GpuMatrix : public ::testing::TestWithParam<int> {};

TEST_P(GpuMatrix, DeviceMatchesHostExecutor) {
  SKIP_WITHOUT_GPU();
  const Coll c = static_cast<Coll>(GetParam());
  const size_t n = quick() ? 37 : 1031;
  Fixture f(2 * (n * kRanks + 16) * 8);
  std::vector<weftDataType_t> types;
  for (int t = 0; t < weftNumTypes; t++) types.push_back(weftDataType_t(t));
  std::vector<weftRedOp_t> ops{weftSum, weftProd, weftMax, weftMin, weftAvg};
  if (quick()) {
    types = {weftFloat32, weftFloat16, weftInt8};
    ops = {weftSum, weftMax};
  }
  if (!reduces(c)) ops = {weftSum};
  int cases = 0, failed = 0, refused = 0;
  for (weftDataType_t t : types)
    for (weftRedOp_t op : ops)
      for (bool inPlace : {false, true})
        for (size_t mis : {size_t(0), size_t(1)}) {
          cases++;
          const std::string diff = runCase(f, c, t, op, inPlace, mis, n);
          if (diff == "refused") {
            refused++;
            continue;
          }
          if (!diff.empty() && failed++ < 10)
            ADD_FAILURE() << collName(c) << " " << kernels::typeName(t) << " op " << op
                          << (inPlace ? " in place" : " out of place") << " offset " << mis << ": " << diff;
        }
  EXPECT_EQ(failed, 0) << failed << " of " << cases << " cases differ";
  // Combinations both executors refuse (the same error) are legal answers,
  // but the log says how many, so a silently empty matrix shows.
  std::printf("%s: %d cases, %d refused by both executors\n", collName(c), cases, refused);
  EXPECT_LT(refused, cases);
}

INSTANTIATE_TEST_SUITE_P(EveryCollective, GpuMatrix, ::testing::Range(0, 6),
                         [](const ::testing::TestParamInfo<int>& i) { return collName(static_cast<Coll>(i.param)); });

}  // namespace
