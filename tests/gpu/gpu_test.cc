// The device path on a real GPU: buffer classification, the device reduce
// against the host kernels (bit for bit), and collectives over device
// buffers against a float64 reference, N ranks (threads) on one GPU.
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include "src/exec/cuda/runtime.h"
#include "src/exec/cuda/reduce_kernel.h"
#include "src/kernels/functors.h"
#include "src/kernels/reduce.h"
#include "tests/gpu/gpu_util.h"

using namespace weft;

namespace {

TEST(GpuBufferKind, ClassifiesEveryKind) {
  SKIP_WITHOUT_GPU();
  void* dev = nullptr;
  void* pinned = nullptr;
  void* managed = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dev), 256));
  CUDA_OK(cudaHostAlloc(&pinned, 256, cudaHostAllocDefault));
  CUDA_OK(cudaMallocManaged(&managed, 256));
  std::vector<char> plain(256);
  EXPECT_EQ(cuda::classify(dev), cuda::BufferKind::Device);
  EXPECT_EQ(cuda::classify(static_cast<char*>(dev) + 100), cuda::BufferKind::Device);
  EXPECT_EQ(cuda::classify(pinned), cuda::BufferKind::Host);
  EXPECT_EQ(cuda::classify(managed), cuda::BufferKind::Managed);
  EXPECT_EQ(cuda::classify(plain.data()), cuda::BufferKind::Unregistered);
  EXPECT_EQ(cuda::classify(nullptr), cuda::BufferKind::Unregistered);
  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(managed));
}

// Random bytes that decode to ordinary values for every type (floats in a
// small range, so Prod neither overflows nor flushes everything to zero).
std::vector<unsigned char> randomElems(weftDataType_t t, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  const size_t es = kernels::typeSize(t);
  std::vector<unsigned char> out(n * es);
  for (size_t i = 0; i < n; i++) {
    double v = u(rng);
    unsigned char* p = out.data() + i * es;
    switch (t) {
      case weftFloat16: { uint16_t h = kernels::floatToHalf(float(v)); memcpy(p, &h, 2); break; }
      case weftBfloat16: { uint16_t h = kernels::floatToBf16(float(v)); memcpy(p, &h, 2); break; }
      case weftFloat8e4m3: *p = kernels::floatToE4m3(float(v)); break;
      case weftFloat8e5m2: *p = kernels::floatToE5m2(float(v)); break;
      case weftFloat32: { float f = float(v); memcpy(p, &f, 4); break; }
      case weftFloat64: memcpy(p, &v, 8); break;
      default: { uint64_t r = rng(); r = (r << 32) | rng(); memcpy(p, &r, es); break; }
    }
  }
  return out;
}

class GpuReduceKernel : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(GpuReduceKernel, MatchesHostKernelsBitForBit) {
  SKIP_WITHOUT_GPU();
  const auto type = static_cast<weftDataType_t>(std::get<0>(GetParam()));
  const auto kind = static_cast<kernels::OpKind>(std::get<1>(GetParam()));
  kernels::RedOp op;
  op.type = type;
  op.kind = kind;
  op.nranks = 3;
  if (kind == kernels::OpKind::PreMulSum) {
    auto s = randomElems(type, 1, 99);
    memcpy(op.scalar, s.data(), s.size());
  }
  const size_t es = kernels::typeSize(type);
  // Odd count (vector body + scalar tail), then a misaligned start (scalar path).
  for (size_t shift : {size_t(0), size_t(1)}) {
    const size_t n = 100003;
    auto a = randomElems(type, n + shift, 1), b = randomElems(type, n + shift, 2);
    std::vector<unsigned char> want(n * es), got(n * es, 0xee);
    kernels::reduce(want.data(), a.data() + shift * es, b.data() + shift * es, n, op,
                    kernels::kApplyPre | kernels::kApplyPost);
    char *da, *db, *dd;
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&da), (n + shift) * es));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&db), (n + shift) * es));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dd), (n + shift) * es));
    CUDA_OK(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dd, 0xee, (n + shift) * es));
    cuda::launchReduce(dd + shift * es, da + shift * es, db + shift * es, n, op, nullptr);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(got.data(), dd + shift * es, n * es, cudaMemcpyDeviceToHost));
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
      if (memcmp(got.data() + i * es, want.data() + i * es, es) != 0 && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << kernels::typeName(type) << " op " << int(kind) << " shift " << shift
                       << ": first mismatch at element " << first;
    CUDA_OK(cudaFree(da));
    CUDA_OK(cudaFree(db));
    CUDA_OK(cudaFree(dd));
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypesAllOps, GpuReduceKernel,
                         ::testing::Combine(::testing::Range(0, int(weftNumTypes)), ::testing::Range(0, 6)));

// ---- Collectives over device buffers, ranks as threads on GPU 0 ----------

struct Ranks {
  std::vector<weftComm_t> comms;
  std::vector<cudaStream_t> streams;
  explicit Ranks(int n) : comms(n), streams(n) {
    std::vector<int> devs(n, 0);
    EXPECT_EQ(weftCommInitAll(comms.data(), n, devs.data()), weftSuccess);
    for (auto& s : streams) EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  }
  ~Ranks() {
    for (auto& s : streams) (void)cudaStreamDestroy(s);
    for (auto c : comms) weftCommDestroy(c);
  }
};

enum class Coll { AllReduce, ReduceScatter, AllGather };

// Integer-valued floats: every partial sum is exact in float32, so the
// device result must equal the float64 reference exactly.
void runCollective(Coll coll, int nranks, size_t count) {
  Ranks r(nranks);
  const size_t inElems = coll == Coll::ReduceScatter ? count * nranks : count;
  const size_t outElems = coll == Coll::AllGather ? count * nranks : (coll == Coll::ReduceScatter ? count : count);
  std::vector<std::vector<float>> in(nranks, std::vector<float>(inElems));
  std::mt19937 rng(7 + nranks + count);
  std::uniform_int_distribution<int> d(-1000, 1000);
  for (auto& v : in)
    for (auto& x : v) x = float(d(rng));
  std::vector<float*> dIn(nranks), dOut(nranks);
  for (int k = 0; k < nranks; k++) {
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dIn[k]), std::max<size_t>(inElems, 1) * 4));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dOut[k]), std::max<size_t>(outElems, 1) * 4));
    CUDA_OK(cudaMemcpy(dIn[k], in[k].data(), inElems * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dOut[k], 0xff, std::max<size_t>(outElems, 1) * 4));  // poison: NaN
  }
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  for (int k = 0; k < nranks; k++) {
    weftResult_t res = weftSuccess;
    switch (coll) {
      case Coll::AllReduce:
        res = weftAllReduce(dIn[k], dOut[k], count, weftFloat32, weftSum, r.comms[k], r.streams[k]);
        break;
      case Coll::ReduceScatter:
        res = weftReduceScatter(dIn[k], dOut[k], count, weftFloat32, weftSum, r.comms[k], r.streams[k]);
        break;
      case Coll::AllGather:
        res = weftAllGather(dIn[k], dOut[k], count, weftFloat32, r.comms[k], r.streams[k]);
        break;
    }
    ASSERT_EQ(res, weftSuccess);
  }
  ASSERT_EQ(weftGroupEnd(), weftSuccess);
  for (int k = 0; k < nranks; k++) CUDA_OK(cudaStreamSynchronize(r.streams[k]));
  for (int k = 0; k < nranks; k++) {
    weftResult_t async = weftSuccess;
    ASSERT_EQ(weftCommGetAsyncError(r.comms[k], &async), weftSuccess);
    ASSERT_EQ(async, weftSuccess) << "rank " << k;
    std::vector<float> got(outElems);
    CUDA_OK(cudaMemcpy(got.data(), dOut[k], outElems * 4, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < outElems; i++) {
      double want = 0;
      if (coll == Coll::AllGather) {
        want = in[i / count][i % count];
      } else {
        const size_t at = coll == Coll::ReduceScatter ? k * count + i : i;
        for (int q = 0; q < nranks; q++) want += in[q][at];
      }
      if (double(got[i]) != want && bad++ < 5)
        ADD_FAILURE() << "rank " << k << " element " << i << ": got " << got[i] << " want " << want;
    }
    EXPECT_EQ(bad, 0u) << "rank " << k;
  }
  for (int k = 0; k < nranks; k++) {
    CUDA_OK(cudaFree(dIn[k]));
    CUDA_OK(cudaFree(dOut[k]));
  }
}

class GpuCollective : public ::testing::TestWithParam<std::tuple<int, int, size_t>> {};

TEST_P(GpuCollective, MatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  runCollective(static_cast<Coll>(std::get<0>(GetParam())), std::get<1>(GetParam()), std::get<2>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(OneGpu, GpuCollective,
                         ::testing::Combine(::testing::Range(0, 3), ::testing::Values(2, 4),
                                            ::testing::Values(size_t(0), size_t(1), size_t(7), size_t(1000003))));

TEST(GpuApi, MixedHostAndDeviceBuffersAreRejected) {
  SKIP_WITHOUT_GPU();
  Ranks r(1);
  float* dev = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dev), 64));
  std::vector<float> host(16);
  EXPECT_EQ(weftAllReduce(dev, host.data(), 16, weftFloat32, weftSum, r.comms[0], nullptr), weftInvalidArgument);
  EXPECT_EQ(weftAllReduce(host.data(), dev, 16, weftFloat32, weftSum, r.comms[0], nullptr), weftInvalidArgument);
  CUDA_OK(cudaFree(dev));
}

// Device kernels keep every connection they use, so a device AllToAll or
// group past WEFT_ALLTOALL_MAX_PEERS is refused before it connects anything
// (each rank alone: nothing waits for the others).
TEST(GpuApi, DeviceCallsPastThePeerBoundAreRefused) {
  SKIP_WITHOUT_GPU();
  setenv("WEFT_ALLTOALL_MAX_PEERS", "1", 1);
  Ranks r(3);
  unsetenv("WEFT_ALLTOALL_MAX_PEERS");
  float *in = nullptr, *out = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&in), 3 * sizeof(float)));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&out), 3 * sizeof(float)));
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(weftAlltoAll(in, out, 1, weftFloat32, r.comms[k], r.streams[k]), weftInvalidUsage);
    EXPECT_NE(std::string(weftGetLastError(r.comms[k])).find("WEFT_ALLTOALL_MAX_PEERS"), std::string::npos);
    weftGroupStart();
    weftSend(in, 1, weftFloat32, (k + 1) % 3, r.comms[k], r.streams[k]);
    weftSend(in + 1, 1, weftFloat32, (k + 2) % 3, r.comms[k], r.streams[k]);
    EXPECT_EQ(weftGroupEnd(), weftInvalidUsage);
  }
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
}

TEST(GpuApi, SingleRankAllReduceOnTheDefaultStream) {
  SKIP_WITHOUT_GPU();
  Ranks r(1);
  std::vector<float> h(1000);
  for (size_t i = 0; i < h.size(); i++) h[i] = float(i);
  float *a, *b;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&a), 4000));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&b), 4000));
  CUDA_OK(cudaMemcpy(a, h.data(), 4000, cudaMemcpyHostToDevice));
  ASSERT_EQ(weftAllReduce(a, b, 1000, weftFloat32, weftAvg, r.comms[0], nullptr), weftSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> got(1000);
  CUDA_OK(cudaMemcpy(got.data(), b, 4000, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, h);
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
}

}  // namespace

// ---- Checks that need no GPU: what a CUDA build does on a machine without one.

#include "src/exec/cuda/device_plan.h"
#include "transports/p2p/p2p_transport.h"

namespace {

TEST(CudaBuildWithoutGpu, HostPointersStayHostAndHostCallsWork) {
  if (visibleGpus() > 0) GTEST_SKIP() << "a GPU is visible: covered by the GPU tests";
  std::vector<float> a(64, 1.0f), b(64, 0.0f);
  EXPECT_EQ(cuda::classify(a.data()), cuda::BufferKind::Unregistered);
  weftComm_t comm = nullptr;
  int dev = 0;
  ASSERT_EQ(weftCommInitAll(&comm, 1, &dev), weftSuccess);
  EXPECT_EQ(weftAllReduce(a.data(), b.data(), 64, weftFloat32, weftSum, comm, nullptr), weftSuccess);
  EXPECT_EQ(b, a);
  // A pointer CUDA cannot recognise is treated as host memory; a stream that
  // is not a weft host stream is then refused, as before CUDA existed.
  int fakeStream = 0;
  EXPECT_EQ(weftAllReduce(a.data(), b.data(), 64, weftFloat32, weftSum, comm, &fakeStream), weftInvalidArgument);
  EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
}

TEST(CudaBuildWithoutGpu, P2pRefusesRanksWithoutDevices) {
  std::vector<PeerInfo> peers(2);
  for (int r = 0; r < 2; r++) {
    peers[r].rank = r;
    peers[r].hostHash = 1;
    peers[r].cudaDev = -1;
  }
  ConnectContext ctx;
  ctx.rank = 0;
  ctx.nranks = 2;
  ctx.peers = &peers;
  auto t = makeP2pTransport();
  std::string why;
  EXPECT_FALSE(t->canConnect(ctx, 1, &why));
  EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
  peers[1].hostHash = 2;
  EXPECT_FALSE(t->canConnect(ctx, 1, &why));
  EXPECT_EQ(why, "hosts differ");
}

// The kernel reads these as plain data uploaded from the host.
static_assert(sizeof(cuda::DevStep) % 8 == 0, "DevStep is an array element on the device");
static_assert(sizeof(cuda::DevLaunch) <= 4096, "DevLaunch is a kernel parameter");

}  // namespace
